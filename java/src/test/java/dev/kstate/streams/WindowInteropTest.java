package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.function.Consumer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Windowed DSL topologies (tumbling and hopping counts and aggregations, sliding-window
 * aggregation, session windows with merges, stream-stream joins on window stores with
 * duplicates) over 10,000 random records with out-of-order timestamps and grace periods, run
 * through TopologyTestDriver on Kafka's own RocksDB window and session stores and on kstate's
 * (RocksDB and memory engines): outputs, changelogs and final store contents must be equal.
 */
public class WindowInteropTest {
    private static final int RECORDS = 10_000;
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("window-interop");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** Which stores a run uses. */
    private enum Stores3 { KAFKA, KSTATE_ROCKSDB, KSTATE_MEMORY }

    /** One input record. */
    private static final class In {
        final String topic;
        final String key;
        final String value;
        final long ts;

        In(String topic, String key, String value, long ts) {
            this.topic = topic;
            this.key = key;
            this.value = value;
            this.ts = ts;
        }
    }

    /** Random records: a stream time that moves on, one record in eight late by up to 40 s. */
    private static List<In> records(long seed, String... topics) {
        Random rnd = new Random(seed);
        List<In> out = new ArrayList<>();
        long base = 1_000_000;
        for (int i = 0; i < RECORDS; i++) {
            base += rnd.nextInt(1_500);
            long ts = rnd.nextInt(8) == 0 ? Math.max(0, base - rnd.nextInt(40_000)) : base;
            out.add(new In(topics[rnd.nextInt(topics.length)], "k" + rnd.nextInt(40), "v" + rnd.nextInt(1000), ts));
        }
        return out;
    }

    /** What a run produced: output records, changelog records, final store contents. */
    private static final class Run {
        final List<String> output = new ArrayList<>();
        final List<String> changelog = new ArrayList<>();
        final List<String> contents = new ArrayList<>();
        final List<String> storeClasses = new ArrayList<>();
    }

    private Run run(Stores3 stores, Consumer<StreamsBuilder> topology, List<In> input, String storeName,
                    boolean session, String... changelogs) throws Exception {
        File stateDir = TestSupport.tempDir("wi-" + stores);
        Properties props = TestSupport.props("wi", stateDir);
        if (stores != Stores3.KAFKA) {
            props.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class.getName());
            props.put(KstateStoreOptions.ENGINE_CONFIG, stores == Stores3.KSTATE_MEMORY ? "memory" : "rocksdb");
        }
        StreamsBuilder builder = new StreamsBuilder();
        topology.accept(builder);
        Run run = new Run();
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props)) {
            java.util.Map<String, TestInputTopic<String, String>> byName = new java.util.HashMap<>();
            for (In r : input) {
                byName.computeIfAbsent(r.topic, t -> driver.createInputTopic(t, new StringSerializer(), new StringSerializer()))
                    .pipeInput(r.key, r.value, r.ts);
            }
            TestOutputTopic<String, String> out = driver.createOutputTopic("out", new StringDeserializer(), new StringDeserializer());
            for (TestRecord<String, String> r : out.readRecordsToList()) {
                run.output.add(r.key() + "=" + r.value() + "@" + r.timestamp());
            }
            for (String changelog : changelogs) {
                TestOutputTopic<byte[], byte[]> c = driver.createOutputTopic("wi-" + changelog + "-changelog",
                    Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer());
                for (TestRecord<byte[], byte[]> r : c.readRecordsToList()) {
                    run.changelog.add(changelog + " " + Bytes.wrap(r.key()) + "=" + (r.value() == null ? "null" : Bytes.wrap(r.value()))
                        + "@" + r.timestamp());
                }
            }
            if (storeName != null) {
                if (session) {
                    SessionStore<String, Object> s = driver.getSessionStore(storeName);
                    try (KeyValueIterator<Windowed<String>, Object> it = s.findSessions(null, null, 0, Long.MAX_VALUE)) {
                        it.forEachRemaining(kv -> run.contents.add(kv.key + "=" + kv.value));
                    }
                    run.storeClasses.add(innermost((StateStore) s));
                } else {
                    WindowStore<String, ValueAndTimestamp<Object>> w = driver.getTimestampedWindowStore(storeName);
                    try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<Object>> it = w.all()) {
                        it.forEachRemaining(kv -> run.contents.add(kv.key + "=" + kv.value));
                    }
                    run.storeClasses.add(innermost((StateStore) w));
                }
            }
        } finally {
            TestSupport.deleteTree(stateDir);
        }
        return run;
    }

    private static String innermost(StateStore store) {
        StateStore s = store;
        while (s instanceof WrappedStateStore) {
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        return s.getClass().getSimpleName();
    }

    private void assertSameOnAllStores(String what, Consumer<StreamsBuilder> topology, List<In> input, String storeName,
                                       boolean session, String kstateClass, String... changelogs) throws Exception {
        Run kafka = run(Stores3.KAFKA, topology, input, storeName, session, changelogs);
        assertTrue(what + ": the topology produces output", kafka.output.size() > 100);
        for (Stores3 s : new Stores3[] {Stores3.KSTATE_ROCKSDB, Stores3.KSTATE_MEMORY}) {
            Run kstate = run(s, topology, input, storeName, session, changelogs);
            if (storeName != null) {
                assertEquals(what + " on " + s + ": a kstate store", kstateClass, kstate.storeClasses.get(0));
                if (s == Stores3.KSTATE_MEMORY && !session) {
                    // the memory engine's all() lists windows by start, then key (Kafka's in-memory order)
                    List<String> want = new ArrayList<>(kafka.contents);
                    List<String> got = new ArrayList<>(kstate.contents);
                    Collections.sort(want);
                    Collections.sort(got);
                    assertEquals(what + " on " + s + ": final store contents", want, got);
                } else {
                    assertEquals(what + " on " + s + ": final store contents", kafka.contents, kstate.contents);
                }
            }
            assertEquals(what + " on " + s + ": output", kafka.output, kstate.output);
            assertEquals(what + " on " + s + ": changelog", kafka.changelog, kstate.changelog);
        }
    }

    private static String window(Windowed<String> w) {
        return w.key() + "@" + w.window().start() + "/" + w.window().end();
    }

    @Test
    public void tumblingCount() throws Exception {
        assertSameOnAllStores("tumbling count", b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(60), Duration.ofSeconds(30)))
                .count(Materialized.as("counts"))
                .toStream((w, v) -> window(w)).mapValues(String::valueOf)
                .to("out", Produced.with(Serdes.String(), Serdes.String())),
            records(1, "in"), "counts", false, "KstateTimestampedWindowStore", "counts");
    }

    @Test
    public void hoppingAggregate() throws Exception {
        assertSameOnAllStores("hopping aggregate", b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(60), Duration.ofSeconds(20)).advanceBy(Duration.ofSeconds(15)))
                .aggregate(() -> "", (k, v, agg) -> agg.length() > 40 ? v : agg + "," + v,
                    Materialized.<String, String, WindowStore<Bytes, byte[]>>as("hops")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .toStream((w, v) -> window(w))
                .to("out", Produced.with(Serdes.String(), Serdes.String())),
            records(2, "in"), "hops", false, "KstateTimestampedWindowStore", "hops");
    }

    @Test
    public void slidingAggregate() throws Exception {
        assertSameOnAllStores("sliding aggregate", b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey()
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(20), Duration.ofSeconds(30)))
                .aggregate(() -> 0L, (k, v, agg) -> agg + v.length(),
                    Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("slides")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream((w, v) -> window(w)).mapValues(String::valueOf)
                .to("out", Produced.with(Serdes.String(), Serdes.String())),
            records(3, "in"), "slides", false, "KstateTimestampedWindowStore", "slides");
    }

    @Test
    public void sessionAggregateWithMerges() throws Exception {
        assertSameOnAllStores("session aggregate", b -> {
            KTable<Windowed<String>, String> t = b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(30), Duration.ofSeconds(20)))
                .aggregate(() -> "", (k, v, agg) -> agg.length() > 30 ? v : agg + "+" + v,
                    (k, a, bb) -> (a + "|" + bb).length() > 60 ? "merged" : a + "|" + bb,
                    Materialized.<String, String, SessionStore<Bytes, byte[]>>as("sessions")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
            t.toStream((w, v) -> window(w)).mapValues(v -> v == null ? "<removed>" : v)
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
        }, records(4, "in"), "sessions", true, "KstateSessionStore", "sessions");
    }

    @Test
    public void streamStreamJoinsOnWindowStoresWithDuplicates() throws Exception {
        Consumer<StreamsBuilder> topology = b -> {
            KStream<String, String> left = b.stream("left", Consumed.with(Serdes.String(), Serdes.String()));
            KStream<String, String> right = b.stream("right", Consumed.with(Serdes.String(), Serdes.String()));
            left.join(right, (l, r) -> l + "&" + r,
                    JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(30)),
                    StreamJoined.<String, String, String>with(Serdes.String(), Serdes.String(), Serdes.String())
                        .withStoreName("j"))
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
        };
        assertSameOnAllStores("inner join", topology, records(5, "left", "right"), null, false, null,
            "j-this-join-store", "j-other-join-store");
        // the join's stores really are kstate's: a kstate RocksDB store directory (CURRENT at
        // <taskDir>/<name>/), not Kafka's segment directories (<taskDir>/<name>/<name>.<segment>)
        File stateDir = TestSupport.tempDir("wi-join");
        Properties props = TestSupport.props("wi", stateDir);
        props.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class.getName());
        StreamsBuilder builder = new StreamsBuilder();
        topology.accept(builder);
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props)) {
            driver.createInputTopic("left", new StringSerializer(), new StringSerializer()).pipeInput("k", "v", 1_000L);
            for (String store : new String[] {"j-this-join-store", "j-other-join-store"}) {
                File[] found = new File(stateDir, "wi").listFiles((d, n) -> new File(new File(d, n), store + "/CURRENT").exists());
                assertTrue(store + " is a kstate RocksDB store", found != null && found.length == 1);
            }
        } finally {
            TestSupport.deleteTree(stateDir);
        }
    }

    /** A supplier passed to Materialized.as directly (no DSL suppliers config) on both store kinds. */
    @Test
    public void materializedAsKstateSuppliers() throws Exception {
        List<In> input = records(6, "in");
        Consumer<StreamsBuilder> kstate = b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(60), Duration.ofSeconds(30)))
            .count(Materialized.<String, Long>as(KstateStores.persistentTimestampedWindowStore("counts",
                Duration.ofMinutes(3), Duration.ofSeconds(60), false)))
            .toStream((w, v) -> window(w)).mapValues(String::valueOf)
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
        Consumer<StreamsBuilder> kafka = b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(60), Duration.ofSeconds(30)))
            .count(Materialized.<String, Long>as(Stores.persistentTimestampedWindowStore("counts",
                Duration.ofMinutes(3), Duration.ofSeconds(60), false)))
            .toStream((w, v) -> window(w)).mapValues(String::valueOf)
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
        Run a = run(Stores3.KAFKA, kafka, input, "counts", false, "counts");
        Run b = run(Stores3.KAFKA, kstate, input, "counts", false, "counts");
        assertEquals("KstateTimestampedWindowStore", b.storeClasses.get(0));
        assertEquals(a.output, b.output);
        assertEquals(a.changelog, b.changelog);
        assertEquals(a.contents, b.contents);

        Consumer<StreamsBuilder> kstateSessions = sessionTopology(KstateStores.persistentSessionStore("s", Duration.ofMinutes(2)));
        Consumer<StreamsBuilder> kafkaSessions = sessionTopology(Stores.persistentSessionStore("s", Duration.ofMinutes(2)));
        Run c = run(Stores3.KAFKA, kafkaSessions, input, "s", true, "s");
        Run d = run(Stores3.KAFKA, kstateSessions, input, "s", true, "s");
        assertEquals("KstateSessionStore", d.storeClasses.get(0));
        assertEquals(c.output, d.output);
        assertEquals(c.changelog, d.changelog);
        assertEquals(c.contents, d.contents);
    }

    private static Consumer<StreamsBuilder> sessionTopology(org.apache.kafka.streams.state.SessionBytesStoreSupplier supplier) {
        return b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(30), Duration.ofSeconds(20)))
            .count(Materialized.<String, Long>as(supplier))
            .toStream((w, v) -> window(w)).mapValues(v -> String.valueOf(v))
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
    }
}
