package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.function.Consumer;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.Test;

/**
 * The time-ordered stores of {@code EmitStrategy.onWindowClose()} in the headers store format
 * ({@code dsl.store.format=headers}): kstate's ({@link KstateTimeOrderedHeadersWindowStore}; for
 * sessions a plain time-ordered {@link KstateSessionStore} under Kafka's
 * {@code SessionToHeadersStoreAdapter}) against Kafka 4.4's own
 * ({@code RocksDBTimeOrderedWindowStoreWithHeaders}; {@code RocksDBTimeOrderedSessionStore} under the
 * same adapter). The same DSL topologies (tumbling count with and without caching, hopping aggregate,
 * sliding aggregate, session count) over random records with random headers and late ones beyond the
 * grace period, through TopologyTestDriver, on Kafka's stores and on kstate's (RocksDB and memory
 * engines): Kafka's layers above the store, output records (key, value, timestamp, headers, order),
 * changelog records (headers included), final contents and interactive queries (key, key-range,
 * all and backward fetches; session fetches by key and key range) identical. And Kafka's own
 * directory of the combination, adopted in place mid-stream.
 */
public class TimeOrderedHeadersStoresTest extends TimeOrderedHarness {
    private static final int RECORDS = 3_000;

    private static Properties props(Stores3 stores, File stateDir) {
        Properties props = props("toh", stores, stateDir);
        props.put(StreamsConfig.DSL_STORE_FORMAT_CONFIG, StreamsConfig.DSL_STORE_FORMAT_HEADERS);
        return props;
    }

    /** Random records with random headers: one in six late by up to 100 s (beyond every grace). */
    private static List<TestRecord<String, String>> records(long seed) {
        return records(seed, RECORDS, (rnd, ts) -> {
            RecordHeaders h = new RecordHeaders();
            if (rnd.nextBoolean()) {
                h.add("h" + rnd.nextInt(3), Integer.toString(rnd.nextInt(100)).getBytes(StandardCharsets.UTF_8));
            }
            return new TestRecord<>("k" + rnd.nextInt(30), "v" + rnd.nextInt(1000), h, ts);
        });
    }

    /** What one run produced. */
    private static final class Run {
        final List<String> output = new ArrayList<>();
        final List<String> changelog = new ArrayList<>();
        final List<String> queries = new ArrayList<>();
        String store;
        String layers;
        /** Every record of Kafka's segments at the switch (see {@link #segmentRecords}). */
        String handedOver;
        /** What {@code kstate export --to kafka} printed at the switch, if it ran. */
        String export;
    }

    private Run run(Stores3 stores, Consumer<StreamsBuilder> topology, List<TestRecord<String, String>> input,
                    String storeName, boolean session) throws Exception {
        return run(stores, topology, input, storeName, session, tempDir("toh-" + stores), d -> { });
    }

    /** Runs the input on a new driver on {@code stateDir}, after {@code onOpen}. */
    private Run run(Stores3 stores, Consumer<StreamsBuilder> topology, List<TestRecord<String, String>> input,
                    String storeName, boolean session, File stateDir, Consumer<TopologyTestDriver> onOpen)
        throws Exception {
        Run run = new Run();
        StreamsBuilder builder = new StreamsBuilder();
        topology.accept(builder);
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(stores, stateDir))) {
            onOpen.accept(driver);
            TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
            for (TestRecord<String, String> r : input) {
                in.pipeInput(r);
            }
            collect(driver, run, storeName);
            query(driver, run, input, storeName, session);
        }
        return run;
    }

    /** The output and changelog records so far, headers included. */
    private static void collect(TopologyTestDriver driver, Run run, String storeName) {
        collect(driver, "toh-" + storeName + "-changelog", true, run.output, run.changelog);
    }

    /** The store's class and layers, and the answers of the queries. */
    private static void query(TopologyTestDriver driver, Run run, List<TestRecord<String, String>> input,
                              String storeName, boolean session) throws Exception {
        StateStore outer = driver.getAllStateStores().get(storeName);
        run.store = innermost(outer);
        run.layers = layers(outer);
        long now = input.stream().mapToLong(TestRecord::timestamp).max().orElse(0);
        if (session) {
            @SuppressWarnings("unchecked")
            SessionStore<String, Object> s = (SessionStore<String, Object>) outer;
            query(run, "findSessions(all)", s.findSessions(null, null, 0, Long.MAX_VALUE));
            for (int k = 0; k < 30; k += 7) {
                query(run, "fetch k" + k, s.fetch("k" + k));
                query(run, "backwardFetch k" + k, s.backwardFetch("k" + k));
                query(run, "findSessions k" + k, s.findSessions("k" + k, now - 200_000, now));
            }
            query(run, "fetch k1..k3", s.fetch("k1", "k3"));
            query(run, "backwardFindSessions k1..k3", s.backwardFindSessions("k1", "k3", 0, now));
        } else {
            @SuppressWarnings("unchecked")
            WindowStore<String, Object> w = (WindowStore<String, Object>) outer;
            query(run, "all", w.all());
            query(run, "backwardAll", w.backwardAll());
            query(run, "fetchAll", w.fetchAll(now - 200_000, now));
            query(run, "backwardFetchAll", w.backwardFetchAll(now - 200_000, now));
            query(run, "fetch k1..k3", w.fetch("k1", "k3", 0, now));
            query(run, "backwardFetch k1..k3", w.backwardFetch("k1", "k3", 0, now));
            query(run, "fetch null..k2", w.fetch(null, "k2", 0, now));
            for (int k = 0; k < 30; k += 7) {
                try (WindowStoreIterator<Object> it = w.fetch("k" + k, 0, now)) {
                    run.queries.add("--- fetch k" + k);
                    it.forEachRemaining(kv -> run.queries.add(kv.key + "=" + HeadersWindowSessionTest.show(kv.value)));
                }
            }
        }
    }

    private static void query(Run run, String what, KeyValueIterator<Windowed<String>, Object> it) {
        run.queries.add("--- " + what);
        try (KeyValueIterator<Windowed<String>, Object> i = it) {
            i.forEachRemaining(kv -> run.queries.add(kv.key.key() + "@" + kv.key.window().start() + "/"
                + kv.key.window().end() + "=" + HeadersWindowSessionTest.show(kv.value)));
        }
    }

    private void assertSame(String what, Consumer<StreamsBuilder> topology, String storeName, boolean session,
                            String kafkaClass, String kstateClass, long seed) throws Exception {
        List<TestRecord<String, String>> input = records(seed);
        Run kafka = run(Stores3.KAFKA, topology, input, storeName, session);
        assertTrue(what + ": the topology emits final results", kafka.output.size() > 100);
        assertEquals(what + ": Kafka's own time-ordered headers store", kafkaClass, kafka.store);
        // Kafka 4.4's aggregations keep no headers of their own: an empty headers section in each value
        assertTrue(what + ": values in the headers format", kafka.queries.stream().anyMatch(q -> q.endsWith("[]")));
        for (Stores3 s : new Stores3[] {Stores3.KSTATE_ROCKSDB, Stores3.KSTATE_MEMORY}) {
            Run kstate = run(s, topology, input, storeName, session);
            assertEquals(what + " on " + s + ": a kstate store", kstateClass, kstate.store);
            // a memory-engine session store is persistent to Kafka 4.4 (KstateSessionStore#persistent),
            // so it gets the same layers, the adapter of the headers format included
            assertEquals(what + " on " + s + ": Kafka's layers above the store", kafka.layers, kstate.layers);
            assertSameList(what + " on " + s + ": output", kafka.output, kstate.output);
            assertSameList(what + " on " + s + ": changelog", kafka.changelog, kstate.changelog);
            assertSameList(what + " on " + s + ": queries", kafka.queries, kstate.queries);
        }
    }

    /**
     * Kafka's own directory of the combination (time-ordered segments whose records are in
     * {@code windowKeyValueWithHeaders} / {@code sessionKeyValueWithHeaders}), its task closed with
     * its offsets mid-stream, then opened by the application on kstate's stores: kstate adopts it in
     * place (a kstate RocksDB store at the store's directory afterwards, Kafka's committed offset
     * kept, nothing restored) and the rest of the input gives the same output, changelog and
     * queries as a run that stayed on Kafka's stores, closed and reopened at the same record.
     */
    @Test
    public void kafkasOwnDirectoryOfTheCombinationIsAdoptedMidStream() throws Exception {
        assertAdoptedMidStream("tumbling count", tumblingCount(false), "counts", false, WINDOWS_KAFKA, WINDOWS_KSTATE, 31);
        assertAdoptedMidStream("session count", sessionCount(), "sessions", true, "RocksDBTimeOrderedSessionStore",
            "KstateSessionStore", 32);
    }

    private void assertAdoptedMidStream(String what, Consumer<StreamsBuilder> topology, String storeName, boolean session,
                                        String kafkaClass, String kstateClass, long seed) throws Exception {
        List<TestRecord<String, String>> input = recordsWithSwitch(seed);
        Run kafka = runInTwo(Stores3.KAFKA, Stores3.KAFKA, topology, input, SWITCH, storeName, session);
        assertTrue(what + ": the topology emits final results", kafka.output.size() > 100);
        assertEquals(what + ": Kafka's own store", kafkaClass, kafka.store);
        Run adopted = runInTwo(Stores3.KAFKA, Stores3.KSTATE_ROCKSDB, topology, input, SWITCH, storeName, session);
        assertEquals(what + ": a kstate store after the switch", kstateClass, adopted.store);
        assertSameRun(what, kafka, adopted);
    }

    /** Where a run in two parts switches stores. */
    private static final int SWITCH = RECORDS / 2;

    /**
     * Random records and, at {@link #SWITCH}, one at the stream time: Kafka's reopened segments have
     * no stream time until a write reaches them, kstate's adopted store the largest time held.
     */
    private static List<TestRecord<String, String>> recordsWithSwitch(long seed) {
        List<TestRecord<String, String>> input = records(seed);
        long streamTime = input.subList(0, SWITCH).stream().mapToLong(TestRecord::timestamp).max().orElse(0);
        input.add(SWITCH, new TestRecord<>("k0", "restart", new RecordHeaders(), streamTime));
        return input;
    }

    /** The same layers above the store, output, changelog and queries. */
    private static void assertSameRun(String what, Run expected, Run actual) {
        assertEquals(what + ": Kafka's layers above the store", expected.layers, actual.layers);
        assertSameList(what + ": output", expected.output, actual.output);
        assertSameList(what + ": changelog", expected.changelog, actual.changelog);
        assertSameList(what + ": queries", expected.queries, actual.queries);
    }

    /**
     * The way back (issue #26): the application runs on kstate's stores of the combination, its task
     * is closed mid-stream, {@code kstate export --to kafka} (the CLI) hands the store back, and the
     * rest runs on Kafka 4.4's own store: the same output, changelog and queries as a run that never
     * left Kafka's stores, closed and reopened at the same record; Kafka's store opens with the
     * committed offset kstate had (nothing restored), and the exported segments hold exactly
     * Kafka's own records at that point (every column family byte for byte: the records and key
     * index in {@code windowKeyValueWithHeaders}, {@code default} empty, the offsets and status in
     * {@code offsets}; the position record is compared by the Rust tests, as kstate writes Kafka's
     * {@code PositionSerde} without the buffer's zero padding). Sessions likewise, their records in
     * {@code sessionKeyValueWithHeaders} (kstate's store records that its supplier was the DSL's
     * headers one).
     */
    @Test
    public void kstatesStoresOfTheCombinationAreExportedToKafkasMidStream() throws Exception {
        assertExportedMidStream("tumbling count", tumblingCount(false), "counts", false, 33);
        assertExportedMidStream("sliding aggregate", slidingAggregate(true), "slides", false, 34);
        assertExportedMidStream("session count", sessionCount(), "sessions", true, 35);
    }

    private void assertExportedMidStream(String what, Consumer<StreamsBuilder> topology, String storeName,
                                         boolean session, long seed) throws Exception {
        String kafkaClass = session ? "RocksDBTimeOrderedSessionStore" : WINDOWS_KAFKA;
        String family = session ? "sessionKeyValueWithHeaders" : "windowKeyValueWithHeaders";
        List<TestRecord<String, String>> input = recordsWithSwitch(seed);
        Run kafka = runInTwo(Stores3.KAFKA, Stores3.KAFKA, topology, input, SWITCH, storeName, session);
        assertTrue(what + ": the topology emits final results", kafka.output.size() > 100);
        assertEquals(what + ": Kafka's own store", kafkaClass, kafka.store);
        Run exported = runInTwo(Stores3.KSTATE_ROCKSDB, Stores3.KAFKA, topology, input, SWITCH, storeName, session);
        assertTrue(exported.export, exported.export.contains("1 store(s) exported"));
        assertTrue(exported.export, exported.export.contains(kafkaClass) && exported.export.contains("headers store format"));
        assertEquals(what + ": Kafka's own store after the export", kafkaClass, exported.store);
        assertTrue(what + ": Kafka's segments hold records in " + family + ", with the index: " + kafka.handedOver,
            kafka.handedOver.length() > 1000 && kafka.handedOver.contains("/" + family + "/\\x01")
            && kafka.handedOver.contains("/" + family + "/\\x00"));
        assertEquals(what + ": the exported segments hold Kafka's own records, byte for byte", kafka.handedOver,
            exported.handedOver);
        assertSameRun(what, kafka, exported);
    }

    /**
     * Every record of every column family of Kafka's segments of the store ({@code segment/family/hex
     * key=hex value}), the {@code position} record of {@code offsets} left out (see
     * {@link #kstatesStoresOfTheCombinationAreExportedToKafkasMidStream}).
     */
    private static String segmentRecords(File store) throws Exception {
        java.util.TreeMap<String, String> out = new java.util.TreeMap<>();
        String[] segments = store.list();
        assertTrue(store + ": Kafka's segments", segments != null && !new File(store, "CURRENT").exists());
        for (String segment : segments) {
            readFamilies(new File(store, segment), (family, it) -> {
                out.put(segment + "/" + family, "family");
                for (it.seekToFirst(); it.isValid(); it.next()) {
                    if (family.equals("offsets") && new String(it.key(), StandardCharsets.UTF_8).equals("position")) {
                        continue;
                    }
                    out.put(segment + "/" + family + "/" + Bytes.wrap(it.key()), Bytes.wrap(it.value()).toString());
                }
            });
        }
        return out.toString();
    }

    /**
     * The input up to {@code cut} on {@code before}'s stores, the task closed as Kafka closes it
     * (segments flushed with their offsets), the state directory kept (the driver deletes it when it
     * closes, so it is copied aside and back), after kstate's stores handed back with
     * {@code kstate export --to kafka} when {@code after} is Kafka's, then the rest on {@code after}'s
     * stores: the output and changelog of both parts, the store and queries of the second.
     */
    private Run runInTwo(Stores3 before, Stores3 after, Consumer<StreamsBuilder> topology,
                         List<TestRecord<String, String>> input, int cut, String storeName, boolean session)
        throws Exception {
        File stateDir = tempDir("toh-two");
        File saved = tempDir("toh-saved");
        StreamsBuilder builder = new StreamsBuilder();
        topology.accept(builder);
        Run first = new Run();
        Long closedAt;
        org.apache.kafka.common.TopicPartition changelog =
            new org.apache.kafka.common.TopicPartition("toh-" + storeName + "-changelog", 0);
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(before, stateDir))) {
            TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
            input.subList(0, cut).forEach(in::pipeInput);
            collect(driver, first, storeName);
            StateStore outer = driver.getAllStateStores().get(storeName);
            closedAt = outer.committedOffset(changelog);
            assertTrue(storeName + ": the task committed an offset", closedAt != null);
            MigrationTest.closeTaskKeepingState(driver);
            copyTree(stateDir.toPath(), saved.toPath());
        }
        TestSupport.deleteTree(stateDir);
        copyTree(saved.toPath(), stateDir.toPath());
        File storeDir = new File(stateDir, "toh/0_0/" + storeName);
        if (before != Stores3.KAFKA && after == Stores3.KAFKA) {
            assertTrue(storeName + ": kstate's store", new File(storeDir, "CURRENT").exists());
            first.export = TestSupport.runCli(0, "export", "--to", "kafka", new File(stateDir, "toh").getPath());
        }
        assertTrue(storeName + ": Kafka's segments", !new File(storeDir, "CURRENT").exists());
        first.handedOver = segmentRecords(storeDir);
        Run second = run(after, topology, input.subList(cut, input.size()), storeName, session, stateDir,
            d -> {
                assertEquals(storeName + ": the committed offset after the switch to " + after, closedAt,
                    d.getAllStateStores().get(storeName).committedOffset(changelog));
                assertEquals(storeName + ": a kstate RocksDB store now (the driver deletes it when it closes)",
                    after == Stores3.KSTATE_ROCKSDB, new File(storeDir, "CURRENT").exists());
            });
        first.output.addAll(second.output);
        first.changelog.addAll(second.changelog);
        first.queries.addAll(second.queries);
        first.store = second.store;
        first.layers = second.layers;
        return first;
    }

    private static final String WINDOWS_KAFKA = "RocksDBTimeOrderedWindowStoreWithHeaders";
    private static final String WINDOWS_KSTATE = "KstateTimeOrderedHeadersWindowStore";

    /** Kafka's time-ordered cache over the kstate store, as over its own. */
    @Test
    public void tumblingCountWithAndWithoutCaching() throws Exception {
        assertSame("tumbling count, cached", tumblingCount(true), "counts", false, WINDOWS_KAFKA, WINDOWS_KSTATE, 21);
        assertSame("tumbling count", tumblingCount(false), "counts", false, WINDOWS_KAFKA, WINDOWS_KSTATE, 22);
    }

    @Test
    public void hoppingAggregateWithCaching() throws Exception {
        assertSame("hopping aggregate", hoppingAggregate(true), "hops", false, WINDOWS_KAFKA, WINDOWS_KSTATE, 23);
    }

    @Test
    public void slidingAggregate() throws Exception {
        assertSame("sliding aggregate", slidingAggregate(true), "slides", false, WINDOWS_KAFKA, WINDOWS_KSTATE, 24);
    }

    /** Aggregates stored without headers, under Kafka's SessionToHeadersStoreAdapter, as Kafka's. */
    @Test
    public void sessionCountByEnd() throws Exception {
        assertSame("session count", sessionCount(), "sessions", true, "RocksDBTimeOrderedSessionStore", "KstateSessionStore", 25);
    }
}
