package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.WindowKeyQuery;
import org.apache.kafka.streams.query.WindowRangeQuery;
import org.apache.kafka.streams.state.AggregationWithHeaders;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ReadOnlySessionStore;
import org.apache.kafka.streams.state.ReadOnlyWindowStore;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.SessionStoreWithHeaders;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedWindowStoreWithHeaders;
import org.apache.kafka.streams.state.ValueTimestampHeaders;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Window and session stores in the headers format (KIP-1271, {@code dsl.store.format=headers}),
 * differentially against Kafka 4.4's own {@code RocksDBTimestampedWindowStoreWithHeaders} and
 * {@code RocksDBSessionStoreWithHeaders}: the same DSL windowed, session, sliding and join
 * topologies over records carrying headers give identical outputs (values, timestamps, headers)
 * and byte-identical store contents, with kstate's stores under Kafka's layers and no adapter;
 * the same Processor API operations give identical answers to every query (both isolation
 * levels, IQv2); the changelog, converted as Kafka's state manager converts it, restores them
 * byte for byte; and Kafka's headers-format segment directories, written and closed by a real
 * task, are adopted in place by kstate and handed back by {@code kstate export --to kafka}.
 */
public class HeadersWindowSessionTest {
    private static final String APP = "hws";
    private static final int RECORDS = 3_000;
    /** Records per DSL input topic (each run commits after every record: the slow part). */
    private static final int DSL_RECORDS = 1_500;
    private static final int KEYS = 20;
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("headers-ws");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private static Headers headersFor(Random rnd) {
        RecordHeaders h = new RecordHeaders();
        switch (rnd.nextInt(4)) {
            case 0:
                break;
            case 1:
                h.add("trace", Integer.toString(rnd.nextInt(100)).getBytes(StandardCharsets.UTF_8));
                break;
            case 2:
                h.add("null-valued", null);
                h.add("dup", new byte[] {1});
                h.add("dup", new byte[0]);
                break;
            default:
                h.add("ünïcode", new byte[] {(byte) rnd.nextInt(256)});
        }
        return h;
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x));
        }
        return s.toString();
    }

    static String headers(Headers hs) {
        StringBuilder s = new StringBuilder("[");
        for (Header h : hs) {
            s.append(h.key()).append(':').append(h.value() == null ? "null" : hex(h.value())).append(' ');
        }
        return s.append(']').toString();
    }

    // ----- the DSL ------------------------------------------------------------------------------

    private static final String[] DSL_OUTPUTS = {"wcount-out", "ssum-out", "slide-out", "join-out"};

    /** Tumbling-window count, session aggregate, sliding-window count and a stream-stream join. */
    static Topology dslTopology() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> events = b.stream("events", Consumed.with(Serdes.String(), Serdes.String()));
        KStream<String, String> items = b.stream("items", Consumed.with(Serdes.String(), Serdes.String()));
        KGroupedStream<String, String> g = events.groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        g.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("wcount"))
            .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
            .to("wcount-out", Produced.with(Serdes.String(), Serdes.Long()));
        g.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(300), Duration.ofSeconds(2)))
            .aggregate(() -> 0L, (k, v, agg) -> agg + v.length(), (k, a, c) -> a + c,
                Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("ssum").withValueSerde(Serdes.Long()))
            .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "-" + wk.window().end())
            .to("ssum-out", Produced.with(Serdes.String(), Serdes.Long()));
        g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(3), Duration.ofSeconds(5)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("slide"))
            .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
            .to("slide-out", Produced.with(Serdes.String(), Serdes.Long()));
        events.join(items, (a, c) -> a + "+" + c,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofSeconds(2)),
                StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()))
            .to("join-out", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    /** Events and items on the same keys, with headers, out-of-order and late timestamps. */
    private static List<List<TestRecord<String, String>>> dslInput(long seed) {
        Random rnd = new Random(seed);
        List<TestRecord<String, String>> events = new ArrayList<>();
        List<TestRecord<String, String>> items = new ArrayList<>();
        Instant base = Instant.ofEpochMilli(1_700_000_000_000L);
        for (int i = 0; i < DSL_RECORDS; i++) {
            Instant ts = base.plusMillis(i * 10L + rnd.nextInt(400) - 200 - (rnd.nextInt(20) == 0 ? 6_000 : 0));
            events.add(new TestRecord<>("user-" + rnd.nextInt(KEYS), "e" + rnd.nextInt(1000), headersFor(rnd), ts));
            items.add(new TestRecord<>("user-" + rnd.nextInt(KEYS), "i" + rnd.nextInt(100), headersFor(rnd),
                ts.plusMillis(rnd.nextInt(300))));
        }
        return Arrays.asList(events, items);
    }

    /** Outputs (with headers), raw contents and layers of every store, of one run. */
    static final class DslResult {
        final Map<String, List<String>> outputs = new LinkedHashMap<>();
        final Map<String, List<String>> stores = new TreeMap<>();
        final Map<String, List<String>> layers = new TreeMap<>();
    }

    private static boolean bytesStore(StateStore s) {
        return s instanceof WindowStore || s instanceof SessionStore || s instanceof KeyValueStore;
    }

    /**
     * The innermost store that still speaks the window, session or key-value interface (Kafka's
     * RocksDB window and session stores wrap a segmented bytes store, which does not), recording
     * that layer and every layer above it.
     */
    private static StateStore innermost(StateStore store, List<String> layers) {
        StateStore s = store;
        layers.add(s.getClass().getSimpleName());
        while (s instanceof WrappedStateStore && bytesStore(((WrappedStateStore<?, ?, ?>) s).wrapped())) {
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
            layers.add(s.getClass().getSimpleName());
        }
        return s;
    }

    @SuppressWarnings("unchecked")
    private static List<String> rawContents(StateStore s) {
        List<String> out = new ArrayList<>();
        if (s instanceof WindowStore) {
            try (KeyValueIterator<Windowed<Bytes>, byte[]> it = ((WindowStore<Bytes, byte[]>) s).all()) {
                while (it.hasNext()) {
                    KeyValue<Windowed<Bytes>, byte[]> kv = it.next();
                    out.add(hex(kv.key.key().get()) + "@" + kv.key.window().start() + "=" + hex(kv.value));
                }
            }
        } else if (s instanceof SessionStore) {
            try (KeyValueIterator<Windowed<Bytes>, byte[]> it =
                     ((SessionStore<Bytes, byte[]>) s).findSessions(null, null, 0, Long.MAX_VALUE)) {
                while (it.hasNext()) {
                    KeyValue<Windowed<Bytes>, byte[]> kv = it.next();
                    out.add(hex(kv.key.key().get()) + "@" + kv.key.window().start() + "-" + kv.key.window().end() + "="
                        + hex(kv.value));
                }
            }
        } else if (s instanceof KeyValueStore) {
            try (KeyValueIterator<Bytes, byte[]> it = ((KeyValueStore<Bytes, byte[]>) s).all()) {
                while (it.hasNext()) {
                    KeyValue<Bytes, byte[]> kv = it.next();
                    out.add(hex(kv.key.get()) + "=" + hex(kv.value));
                }
            }
        }
        return out;
    }

    private Properties dslConfig(String run, boolean kstate) {
        Properties p = TestSupport.props("hws-" + run, new File(dir, run));
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.DSL_STORE_FORMAT_CONFIG, StreamsConfig.DSL_STORE_FORMAT_HEADERS);
        if (kstate) {
            p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class.getName());
        }
        return p;
    }

    private static DslResult runDsl(Properties props, List<List<TestRecord<String, String>>> input) {
        DslResult r = new DslResult();
        try (TopologyTestDriver driver = new TopologyTestDriver(dslTopology(), props)) {
            TestInputTopic<String, String> events = driver.createInputTopic("events",
                Serdes.String().serializer(), Serdes.String().serializer());
            TestInputTopic<String, String> items = driver.createInputTopic("items",
                Serdes.String().serializer(), Serdes.String().serializer());
            for (int i = 0; i < input.get(0).size(); i++) {
                events.pipeInput(input.get(0).get(i));
                items.pipeInput(input.get(1).get(i));
            }
            for (String out : DSL_OUTPUTS) {
                List<String> records = new ArrayList<>();
                for (TestRecord<String, byte[]> rec : driver.createOutputTopic(out, Serdes.String().deserializer(),
                        Serdes.ByteArray().deserializer()).readRecordsToList()) {
                    records.add(rec.key() + "=" + (rec.value() == null ? "null" : hex(rec.value())) + "@"
                        + rec.timestamp() + headers(rec.headers()));
                }
                r.outputs.put(out, records);
            }
            for (Map.Entry<String, StateStore> e : driver.getAllStateStores().entrySet()) {
                List<String> layers = new ArrayList<>();
                r.stores.put(e.getKey(), rawContents(innermost(e.getValue(), layers)));
                r.layers.put(e.getKey(), layers);
            }
        }
        return r;
    }

    @Test
    public void dslWindowSessionSlidingAndJoinStoresInTheHeadersFormatMatchKafka() {
        CapturedLogs.clear();
        List<List<TestRecord<String, String>>> in = dslInput(42);
        DslResult kafka = runDsl(dslConfig("kafka", false), in);
        DslResult kstate = runDsl(dslConfig("kstate", true), in);
        for (String out : DSL_OUTPUTS) {
            assertFalse(out + " is empty", kafka.outputs.get(out).isEmpty());
            assertEquals("output " + out, kafka.outputs.get(out), kstate.outputs.get(out));
        }
        assertEquals("the same stores", kafka.stores.keySet(), kstate.stores.keySet());
        int headersStores = 0;
        for (String store : kafka.stores.keySet()) {
            List<String> kafkaLayers = kafka.layers.get(store);
            List<String> layers = kstate.layers.get(store);
            String kafkaInner = kafkaLayers.get(kafkaLayers.size() - 1);
            String inner = layers.get(layers.size() - 1);
            assertEquals("store " + store + " (raw bytes; Kafka's " + kafkaLayers + ", kstate's " + layers + ")",
                kafka.stores.get(store), kstate.stores.get(store));
            assertTrue(store + " is a kstate store: " + layers, inner.startsWith("Kstate"));
            for (String layer : layers) {
                assertFalse(store + ": no adapter in " + layers, layer.contains("Adapter"));
            }
            if (kafkaInner.equals("RocksDBTimestampedWindowStoreWithHeaders")) {
                assertEquals(store, "KstateHeadersWindowStore", inner);
                headersStores++;
            } else if (kafkaInner.equals("RocksDBSessionStoreWithHeaders")) {
                assertEquals(store, "KstateHeadersSessionStore", inner);
                headersStores++;
            }
        }
        // wcount, slide (window), ssum (session) and the join's two window stores
        assertTrue("headers-format stores: " + kafka.layers, headersStores >= 5);
        for (String store : new String[] {"wcount", "slide", "ssum"}) {
            assertFalse(store + " holds data", kafka.stores.get(store).isEmpty());
        }
        // Kafka 4.4's aggregations store no headers (an empty section); the join's stores keep
        // the records' headers
        assertTrue("some store holds values with headers", kstate.stores.values().stream()
            .anyMatch(entries -> entries.stream().anyMatch(e -> !e.split("=")[1].startsWith("00"))));
        assertEquals("no store is delegated to Kafka's", 0,
            CapturedLogs.count(org.slf4j.event.Level.WARN, "kstate does not serve yet"));
    }

    // ----- the Processor API: every query --------------------------------------------------------

    /** Applies op records ({@code kind|a|b|value}) to a headers window store and a headers session store. */
    private static final class Applier implements Processor<String, String, Void, Void> {
        private TimestampedWindowStoreWithHeaders<String, String> w;
        private SessionStoreWithHeaders<String, String> s;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            w = context.getStateStore("hw");
            s = context.getStateStore("hs");
        }

        @Override
        public void process(Record<String, String> r) {
            String[] f = r.value().split("\\|", -1);
            long a = Long.parseLong(f[1]);
            long b = Long.parseLong(f[2]);
            switch (f[0]) {
                case "w":
                    w.put(r.key(), ValueTimestampHeaders.make(f[3], r.timestamp(), r.headers()), a);
                    break;
                case "wd":
                    w.put(r.key(), null, a);
                    break;
                case "s":
                    s.put(new Windowed<>(r.key(), new SessionWindow(a, b)), AggregationWithHeaders.make(f[3], r.headers()));
                    break;
                case "sr":
                    s.remove(new Windowed<>(r.key(), new SessionWindow(a, b)));
                    break;
                default:
                    throw new IllegalArgumentException(r.value());
            }
        }
    }

    private static Topology papiTopology(WindowBytesStoreSupplier w, SessionBytesStoreSupplier s) {
        Topology t = new Topology();
        t.addSource("src", Serdes.String().deserializer(), Serdes.String().deserializer(), "ops");
        t.addProcessor("apply", Applier::new, "src");
        t.addStateStore(Stores.timestampedWindowStoreWithHeadersBuilder(w, Serdes.String(), Serdes.String())
            .withCachingDisabled(), "apply");
        t.addStateStore(Stores.sessionStoreWithHeadersBuilder(s, Serdes.String(), Serdes.String()).withCachingEnabled(),
            "apply");
        return t;
    }

    private static final Duration RETENTION = Duration.ofMinutes(10);
    private static final Duration WINDOW = Duration.ofMinutes(1);

    /** Op records over an hour of stream time (many segments expire), one in six late, with headers. */
    private static List<TestRecord<String, String>> ops(long seed) {
        Random rnd = new Random(seed);
        List<TestRecord<String, String>> out = new ArrayList<>();
        long base = 600_000;
        for (int i = 0; i < RECORDS; i++) {
            base += rnd.nextInt(2_400);
            long t = rnd.nextInt(6) == 0 ? Math.max(0, base - rnd.nextInt(900_000)) : base;
            long start = t / 60_000 * 60_000;
            String op;
            int kind = rnd.nextInt(10);
            if (kind < 5) {
                op = "w|" + start + "|0|v" + i;
            } else if (kind == 5) {
                op = "wd|" + start + "|0|";
            } else if (kind < 9) {
                op = "s|" + t + "|" + (t + rnd.nextInt(120_000)) + "|a" + i;
            } else {
                long st = t / 10_000 * 10_000;
                op = "sr|" + st + "|" + (st + 10_000) + "|";
            }
            out.add(new TestRecord<>("k" + rnd.nextInt(12), op, headersFor(rnd), Instant.ofEpochMilli(t)));
        }
        return out;
    }

    private Map<String, String> papiScenario(WindowBytesStoreSupplier w, SessionBytesStoreSupplier s, long seed)
        throws Exception {
        File stateDir = TestSupport.tempDir("hws-papi");
        Properties props = TestSupport.props("hws-papi", stateDir);
        props.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, "true");
        try (TopologyTestDriver driver = new TopologyTestDriver(papiTopology(w, s), props)) {
            TestInputTopic<String, String> in = driver.createInputTopic("ops", new StringSerializer(), new StringSerializer());
            long streamTime = 0;
            for (TestRecord<String, String> r : ops(seed)) {
                in.pipeInput(r);
                streamTime = Math.max(streamTime, r.timestamp());
            }
            @SuppressWarnings("unchecked")
            TimestampedWindowStoreWithHeaders<String, String> ws =
                (TimestampedWindowStoreWithHeaders<String, String>) driver.getAllStateStores().get("hw");
            @SuppressWarnings("unchecked")
            SessionStoreWithHeaders<String, String> ss =
                (SessionStoreWithHeaders<String, String>) driver.getAllStateStores().get("hs");
            // uncommitted writes, made outside processing: READ_COMMITTED must not see them
            long lastWindow = streamTime / 60_000 * 60_000;
            RecordHeaders pending = new RecordHeaders();
            pending.add("pending", new byte[] {7});
            ws.put("k1", ValueTimestampHeaders.make("pending", streamTime, pending), lastWindow);
            ws.put("k2", null, lastWindow);
            ss.put(new Windowed<>("k3", new SessionWindow(streamTime - 5_000, streamTime)),
                AggregationWithHeaders.make("pending-session", pending));
            long time = streamTime;
            AtomicReference<Map<String, String>> results = new AtomicReference<>();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread iq = new Thread(() -> {
                try {
                    results.set(queries(ws, ss, time, seed));
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "interactive-query");
            iq.start();
            iq.join();
            if (failure.get() != null) {
                throw new AssertionError("queries failed", failure.get());
            }
            return results.get();
        } finally {
            TestSupport.deleteTree(stateDir);
        }
    }

    private static Map<String, String> queries(TimestampedWindowStoreWithHeaders<String, String> ws,
                                               SessionStoreWithHeaders<String, String> ss, long streamTime, long seed) {
        Map<String, String> out = new LinkedHashMap<>();
        out.put("w position", ((StateStore) ws).getPosition().toString());
        out.put("s position", ((StateStore) ss).getPosition().toString());
        Random rnd = new Random(seed * 31);
        for (int i = 0; i < 25; i++) {
            String k = "k" + rnd.nextInt(13);
            String kf = rnd.nextInt(5) == 0 ? null : "k" + rnd.nextInt(13);
            String kt = rnd.nextInt(5) == 0 ? null : "k" + rnd.nextInt(13);
            long from = streamTime - rnd.nextInt(1_500_000);
            long to = rnd.nextInt(8) == 0 ? from - 60_000 : from + rnd.nextInt(1_500_000);
            long t = from / 60_000 * 60_000;
            Instant fi = Instant.ofEpochMilli(Math.max(0, from));
            Instant ti = Instant.ofEpochMilli(Math.max(0, to));
            String q = "#" + i + " (" + k + "," + kf + "," + kt + "," + from + "," + to + ") ";
            windowQueries(out, q + "w ", ws, k, kf, kt, t, fi, ti);
            out.put(q + "w fetch(k,long,long)", attempt(() -> drain(ws.fetch(k, from, to))));
            out.put(q + "w fetch(kf,kt,long,long)", attempt(() -> drain(ws.fetch(kf, kt, from, to))));
            out.put(q + "w backwardFetchAll(long,long)", attempt(() -> drain(ws.backwardFetchAll(from, to))));
            sessionQueries(out, q + "s ", ss, k, kf, kt, from, to);
            for (IsolationLevel level : IsolationLevel.values()) {
                String lv = q + level.name() + " ";
                windowQueries(out, lv + "w ", ws.readOnly(level), k, kf, kt, t, fi, ti);
                sessionQueries(out, lv + "s ", ss.readOnly(level), k, kf, kt, from, to);
                QueryConfig config = new QueryConfig(false, level);
                iqv2(out, lv + "w WindowKeyQuery", (StateStore) ws, WindowKeyQuery.withKeyAndWindowStartRange(k, fi, ti), config);
                iqv2(out, lv + "w WindowRangeQuery", (StateStore) ws, WindowRangeQuery.withWindowStartRange(fi, ti), config);
                iqv2(out, lv + "s WindowRangeQuery.withKey", (StateStore) ss, WindowRangeQuery.withKey(k), config);
            }
        }
        return out;
    }

    private static <V> void windowQueries(Map<String, String> out, String q, ReadOnlyWindowStore<String, V> store, String k,
                                          String kf, String kt, long t, Instant fi, Instant ti) {
        out.put(q + "fetch(k,t)", attempt(() -> show(store.fetch(k, t))));
        out.put(q + "fetch(k,from,to)", attempt(() -> drain(store.fetch(k, fi, ti))));
        out.put(q + "backwardFetch(k,from,to)", attempt(() -> drain(store.backwardFetch(k, fi, ti))));
        out.put(q + "fetch(kf,kt,from,to)", attempt(() -> drain(store.fetch(kf, kt, fi, ti))));
        out.put(q + "backwardFetch(kf,kt,from,to)", attempt(() -> drain(store.backwardFetch(kf, kt, fi, ti))));
        out.put(q + "fetchAll(from,to)", attempt(() -> drain(store.fetchAll(fi, ti))));
        out.put(q + "all", attempt(() -> drain(store.all())));
        out.put(q + "backwardAll", attempt(() -> drain(store.backwardAll())));
    }

    private static <V> void sessionQueries(Map<String, String> out, String q, ReadOnlySessionStore<String, V> store, String k,
                                           String kf, String kt, long earliestEnd, long latestStart) {
        out.put(q + "findSessions(k,e,l)", attempt(() -> drain(store.findSessions(k, earliestEnd, latestStart))));
        out.put(q + "backwardFindSessions(k,e,l)", attempt(() -> drain(store.backwardFindSessions(k, earliestEnd, latestStart))));
        out.put(q + "findSessions(kf,kt,e,l)", attempt(() -> drain(store.findSessions(kf, kt, earliestEnd, latestStart))));
        out.put(q + "fetch(k)", attempt(() -> drain(store.fetch(k))));
        out.put(q + "backwardFetch(k)", attempt(() -> drain(store.backwardFetch(k))));
        out.put(q + "fetch(kf,kt)", attempt(() -> drain(store.fetch(kf, kt))));
        out.put(q + "fetchSession", attempt(() -> {
            try (KeyValueIterator<Windowed<String>, V> it = store.fetch(k)) {
                if (!it.hasNext()) {
                    return "none";
                }
                Windowed<String> w = it.next().key;
                return show(store.fetchSession(k, w.window().start(), w.window().end())) + " / "
                    + show(store.fetchSession(k, w.window().start() + 1, w.window().end()));
            }
        }));
    }

    private static <R> void iqv2(Map<String, String> out, String name, StateStore store, Query<R> query, QueryConfig config) {
        out.put(name, attempt(() -> show(store.query(query, PositionBound.unbounded(), config))));
    }

    private static String show(QueryResult<?> r) {
        if (!r.isSuccess()) {
            return "FAILED " + r.getFailureReason() + " at " + r.getPosition();
        }
        Object result = r.getResult();
        String body = result instanceof KeyValueIterator ? drain((KeyValueIterator<?, ?>) result) : show(result);
        return body + " at " + r.getPosition();
    }

    private static String attempt(Supplier<String> s) {
        try {
            return s.get();
        } catch (RuntimeException e) {
            return "THROWS " + e.getClass().getName();
        }
    }

    static String drain(KeyValueIterator<?, ?> it) {
        List<String> entries = new ArrayList<>();
        try (KeyValueIterator<?, ?> i = it) {
            while (i.hasNext()) {
                KeyValue<?, ?> kv = i.next();
                entries.add(kv.key + "=" + show(kv.value));
            }
        }
        return entries.toString();
    }

    static String show(Object value) {
        if (value instanceof ValueTimestampHeaders) {
            ValueTimestampHeaders<?> v = (ValueTimestampHeaders<?>) value;
            return v.value() + "@" + v.timestamp() + headers(v.headers());
        }
        if (value instanceof AggregationWithHeaders) {
            AggregationWithHeaders<?> v = (AggregationWithHeaders<?>) value;
            return v.aggregation() + headers(v.headers());
        }
        return String.valueOf(value);
    }

    @Test
    public void everyQueryOfTheHeadersStoresAnswersAsKafkas() throws Exception {
        long seed = 11;
        Map<String, String> kafka = papiScenario(
            Stores.persistentTimestampedWindowStoreWithHeaders("hw", RETENTION, WINDOW, false),
            Stores.persistentSessionStoreWithHeaders("hs", RETENTION), seed);
        Map<String, String> kstate = papiScenario(
            KstateStores.persistentTimestampedWindowStoreWithHeaders("hw", RETENTION, WINDOW, false),
            KstateStores.persistentSessionStoreWithHeaders("hs", RETENTION), seed);
        WindowQueryDifferentialTest.assertSameAnswers("kstate headers stores, seed " + seed, kafka, kstate);
        long empty = kafka.values().stream().filter(v -> v.equals("[]")).count();
        assertTrue("most range queries find data (" + empty + " empty of " + kafka.size() + ")", empty < kafka.size() / 2);
        assertTrue("headers reach the answers", kafka.values().stream().anyMatch(v -> v.contains("[trace:")));
        assertTrue("uncommitted writes are hidden from READ_COMMITTED", kafka.keySet().stream().anyMatch(q ->
            q.contains("READ_COMMITTED") && q.endsWith("w all")
                && !kafka.get(q).equals(kafka.get(q.replace("READ_COMMITTED", "READ_UNCOMMITTED")))));
        Map<String, String> memory = papiScenario(
            KstateStores.builder("hw").engine(KstateStoreOptions.Engine.MEMORY)
                .valueFormat(KstateStoreOptions.ValueFormat.HEADERS).buildWindowStore(RETENTION, WINDOW, false),
            KstateStores.builder("hs").engine(KstateStoreOptions.Engine.MEMORY)
                .valueFormat(KstateStoreOptions.ValueFormat.HEADERS).buildSessionStore(RETENTION), seed);
        // an in-memory session store takes another path through Kafka's caching layer
        // (WindowQueryDifferentialTest#theMemoryEngineAnswersAsTheRocksDbEngine): windows only
        Map<String, String> rocksWindows = new LinkedHashMap<>();
        Map<String, String> memoryWindows = new LinkedHashMap<>();
        for (String q : kstate.keySet()) {
            if (q.contains(" w ") || q.startsWith("w ")) {
                rocksWindows.put(q, kstate.get(q));
                memoryWindows.put(q, memory.get(q));
            }
        }
        // the memory engine answers queries over several keys in Kafka's in-memory order
        int reordered = WindowQueryDifferentialTest.inMemoryWindowOrder(rocksWindows, memoryWindows, q -> true);
        assertTrue("reordered answers: " + reordered, reordered > 20);
        WindowQueryDifferentialTest.assertSameAnswers("kstate memory engine, headers windows", rocksWindows, memoryWindows);
    }

    // ----- Kafka's own headers-format segments: adoption and export ------------------------------

    /** Writes every record into the headers window and session stores, with the record's headers. */
    private static final class Writer implements Processor<String, String, Void, Void> {
        private TimestampedWindowStoreWithHeaders<String, String> w;
        private SessionStoreWithHeaders<String, String> s;
        private int n;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            w = context.getStateStore("hw");
            s = context.getStateStore("hs");
        }

        @Override
        public void process(Record<String, String> r) {
            long ts = r.timestamp();
            long start = ts - ts % WINDOW.toMillis();
            w.put(r.key(), ValueTimestampHeaders.make(r.value(), ts, r.headers()), start);
            s.put(new Windowed<>(r.key(), new SessionWindow(ts - 400L * (n % 4), ts)),
                AggregationWithHeaders.make(r.value(), r.headers()));
            if (++n % 7 == 0) {
                w.put(r.key(), null, start - 3 * WINDOW.toMillis());
            }
        }
    }

    private static Topology segmentTopology(boolean kstate) {
        WindowBytesStoreSupplier w = kstate
            ? KstateStores.persistentTimestampedWindowStoreWithHeaders("hw", RETENTION, WINDOW, false)
            : Stores.persistentTimestampedWindowStoreWithHeaders("hw", RETENTION, WINDOW, false);
        SessionBytesStoreSupplier s = kstate ? KstateStores.persistentSessionStoreWithHeaders("hs", RETENTION)
            : Stores.persistentSessionStoreWithHeaders("hs", RETENTION);
        Topology t = new Topology();
        t.addSource("src", Serdes.String().deserializer(), Serdes.String().deserializer(), "in");
        t.addProcessor("p", Writer::new, "src");
        t.addStateStore(Stores.timestampedWindowStoreWithHeadersBuilder(w, Serdes.String(), Serdes.String())
            .withCachingDisabled(), "p");
        t.addStateStore(Stores.sessionStoreWithHeadersBuilder(s, Serdes.String(), Serdes.String()).withCachingDisabled(),
            "p");
        return t;
    }

    private static List<TestRecord<String, String>> segmentInput(int from, int to) {
        Random rnd = new Random(26);
        List<TestRecord<String, String>> out = new ArrayList<>();
        long base = 1_000_000;
        for (int i = 0; i < to; i++) {
            base += rnd.nextInt(2_000);
            long ts = rnd.nextInt(6) == 0 ? Math.max(0, base - rnd.nextInt(120_000)) : base;
            TestRecord<String, String> r = new TestRecord<>(SegmentAdoptionTest.key(rnd.nextInt(SegmentAdoptionTest.KEYS)),
                "v" + i, headersFor(rnd), Instant.ofEpochMilli(ts));
            if (i >= from) {
                out.add(r);
            }
        }
        return out;
    }

    private static long pipe(TopologyTestDriver driver, List<TestRecord<String, String>> records) {
        TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
        long streamTime = 0;
        for (TestRecord<String, String> r : records) {
            in.pipeInput(r);
            streamTime = Math.max(streamTime, r.timestamp());
        }
        return streamTime;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, List<String>> segmentAnswers(TopologyTestDriver driver, long streamTime) {
        TimestampedWindowStoreWithHeaders<String, String> w =
            (TimestampedWindowStoreWithHeaders<String, String>) driver.getAllStateStores().get("hw");
        SessionStoreWithHeaders<String, String> s =
            (SessionStoreWithHeaders<String, String>) driver.getAllStateStores().get("hs");
        Map<String, List<String>> out = new LinkedHashMap<>();
        long[][] ranges = {{0, Long.MAX_VALUE}, {streamTime - RETENTION.toMillis(), streamTime},
            {streamTime - 4 * WINDOW.toMillis(), streamTime - WINDOW.toMillis()}};
        List<String> a = new ArrayList<>();
        a.add("all " + drain(w.all()));
        a.add("backwardAll " + drain(w.backwardAll()));
        for (long[] r : ranges) {
            a.add("fetchAll " + drain(w.fetchAll(r[0], r[1])));
            a.add("fetch k03..k17 " + drain(w.fetch("k03", "k17", r[0], r[1])));
            for (int k = 0; k < SegmentAdoptionTest.KEYS; k += 3) {
                a.add("fetch k" + k + " " + drain(w.fetch(SegmentAdoptionTest.key(k), r[0], r[1])));
                a.add("backwardFetch k" + k + " " + drain(w.backwardFetch(SegmentAdoptionTest.key(k), r[0], r[1])));
            }
        }
        long start = streamTime - streamTime % WINDOW.toMillis();
        for (int k = 0; k < SegmentAdoptionTest.KEYS; k++) {
            a.add("fetch(key, time) k" + k + "=" + show(w.fetch(SegmentAdoptionTest.key(k), start)));
        }
        out.put("hw", a);
        List<String> b = new ArrayList<>();
        b.add("findSessions all " + drain(s.findSessions(null, null, 0, Long.MAX_VALUE)));
        for (long[] r : ranges) {
            for (int k = 0; k < SegmentAdoptionTest.KEYS; k += 3) {
                b.add("findSessions k" + k + " " + drain(s.findSessions(SegmentAdoptionTest.key(k), r[0], r[1])));
            }
        }
        for (int k = 0; k < SegmentAdoptionTest.KEYS; k++) {
            b.add("fetch k" + k + " " + drain(s.fetch(SegmentAdoptionTest.key(k))));
        }
        out.put("hs", b);
        return out;
    }

    private static TopicPartition changelog(String store) {
        return new TopicPartition(APP + "-" + store + "-changelog", 0);
    }

    private static Map<String, Long> offsets(TopologyTestDriver driver) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (String s : new String[] {"hw", "hs"}) {
            Long o = driver.getAllStateStores().get(s).committedOffset(changelog(s));
            assertNotNull("committed offset of " + s, o);
            out.put(s, o);
        }
        return out;
    }

    private static void closeCleanlyInto(TopologyTestDriver driver, File stateDir, File into) throws Exception {
        try {
            MigrationTest.closeTaskKeepingState(driver);
            SegmentAdoptionTest.copyTree(new File(stateDir, APP).toPath(), new File(into, APP).toPath());
        } finally {
            driver.close();
        }
    }

    private static void assertSegments(File taskDir, String store, List<String> families) throws Exception {
        String[] segments = new File(taskDir, store).list();
        assertTrue(store + " holds Kafka's segments", segments != null && segments.length >= 2);
        for (String segment : segments) {
            assertTrue(segment, segment.startsWith(store + "."));
            assertEquals(store + "/" + segment, families, MigrationTest.columnFamilies(new File(taskDir, store + "/" + segment)));
        }
    }

    private static final List<String> WINDOW_FAMILIES = Arrays.asList("default", "keyValueWithTimestampAndHeaders", "offsets");
    private static final List<String> SESSION_FAMILIES = Arrays.asList("default", "offsets", "sessionKeyValueWithHeaders");

    /**
     * Kafka 4.4's headers-format window and session stores, written by a real task and closed
     * cleanly: kstate converts their segments in place (every answer and committed offset kept,
     * nothing restored); then {@code kstate export --to kafka} hands them back in Kafka's
     * headers-format layout, which Kafka's own stores open with the same answers and offsets.
     */
    @Test
    public void kafkasHeadersSegmentsAreAdoptedAndExportedBack() throws Exception {
        List<TestRecord<String, String>> input = segmentInput(0, 2_000);
        File kafkaRun = new File(dir, "kafka-run");
        File adopted = new File(dir, "adopted");
        File restarted = new File(dir, "kafka-restarted");
        TopologyTestDriver onKafka = new TopologyTestDriver(segmentTopology(false), TestSupport.props(APP, kafkaRun));
        long streamTime;
        Map<String, List<String>> kafkaAnswers;
        Map<String, Long> kafkaOffsets;
        try {
            streamTime = pipe(onKafka, input);
            kafkaAnswers = segmentAnswers(onKafka, streamTime);
            kafkaOffsets = offsets(onKafka);
            MigrationTest.closeTaskKeepingState(onKafka);
            SegmentAdoptionTest.copyTree(new File(kafkaRun, APP).toPath(), new File(adopted, APP).toPath());
            SegmentAdoptionTest.copyTree(new File(kafkaRun, APP).toPath(), new File(restarted, APP).toPath());
        } finally {
            onKafka.close();
        }
        File taskDir = new File(adopted, APP + "/0_0");
        assertSegments(taskDir, "hw", WINDOW_FAMILIES);
        assertSegments(taskDir, "hs", SESSION_FAMILIES);
        for (List<String> answers : kafkaAnswers.values()) {
            assertTrue("answers carry headers", answers.toString().contains("[trace:"));
        }
        // Kafka's own store restarted: what an exported store must answer (a restarted segmented
        // store does not know its stream time until the next put; see SegmentExportTest)
        Map<String, List<String>> kafkaRestarted;
        try (TopologyTestDriver again = new TopologyTestDriver(segmentTopology(false), TestSupport.props(APP, restarted))) {
            kafkaRestarted = segmentAnswers(again, streamTime);
        }

        // adoption in place
        File exported = new File(dir, "exported");
        TopologyTestDriver onKstate = new TopologyTestDriver(segmentTopology(true), TestSupport.props(APP, adopted));
        try {
            Map<TopicPartition, Long> starts = SegmentAdoptionTest.changelogStarts(onKstate);
            for (String s : new String[] {"hw", "hs"}) {
                assertTrue(s + " is a kstate store now", new File(taskDir, s + "/CURRENT").isFile());
                assertEquals("committed offset of " + s, kafkaOffsets.get(s),
                    onKstate.getAllStateStores().get(s).committedOffset(changelog(s)));
                assertEquals("nothing restored for " + s, Long.valueOf(kafkaOffsets.get(s) + 1), starts.get(changelog(s)));
            }
            Map<String, List<String>> answers = segmentAnswers(onKstate, streamTime);
            for (String s : kafkaAnswers.keySet()) {
                assertEquals("every answer of the adopted " + s, kafkaAnswers.get(s), answers.get(s));
            }
        } catch (RuntimeException | AssertionError e) {
            onKstate.close();
            throw e;
        }
        closeCleanlyInto(onKstate, adopted, exported);

        // and back: kstate export --to kafka
        String app = new File(exported, APP).getPath();
        String dry = TestSupport.runCli(0, "export", "--to", "kafka", app, "--dry-run");
        assertTrue(dry, dry.contains("opens as Kafka's RocksDBTimestampedWindowStoreWithHeaders"));
        assertTrue(dry, dry.contains("opens as Kafka's RocksDBSessionStoreWithHeaders"));
        String out = TestSupport.runCli(0, "export", "--to", "kafka", app);
        assertTrue(out, out.contains("2 store(s) exported to Kafka's stores, 0 not exported"));
        File exportedTask = new File(exported, APP + "/0_0");
        assertSegments(exportedTask, "hw", WINDOW_FAMILIES);
        assertSegments(exportedTask, "hs", SESSION_FAMILIES);
        try (TopologyTestDriver back = new TopologyTestDriver(segmentTopology(false), TestSupport.props(APP, exported))) {
            Map<TopicPartition, Long> starts = SegmentAdoptionTest.changelogStarts(back);
            for (String s : new String[] {"hw", "hs"}) {
                assertEquals("Kafka reports kstate's committed offset for " + s, kafkaOffsets.get(s),
                    back.getAllStateStores().get(s).committedOffset(changelog(s)));
                assertEquals("nothing restored for " + s, Long.valueOf(kafkaOffsets.get(s) + 1), starts.get(changelog(s)));
            }
            Map<String, List<String>> answers = segmentAnswers(back, streamTime);
            for (String s : kafkaRestarted.keySet()) {
                assertEquals("every answer of " + s + " read by Kafka's own store", kafkaRestarted.get(s), answers.get(s));
            }
        }
    }

    // ----- restore: Kafka's changelog records, converted by Kafka, into kstate's stores ------------

    /** Kafka's converter for {@code store}'s changelog records (what its state manager applies). */
    private static org.apache.kafka.streams.state.internals.RecordConverter converterFor(StateStore store)
        throws ReflectiveOperationException {
        java.lang.reflect.Method m = Class.forName("org.apache.kafka.streams.processor.internals.StateManagerUtil")
            .getDeclaredMethod("converterForStore", StateStore.class);
        m.setAccessible(true);
        return (org.apache.kafka.streams.state.internals.RecordConverter) m.invoke(null, store);
    }

    /**
     * The changelog a task on kstate's headers stores wrote (values without headers, the headers
     * in the record, as Kafka's change-logging layers write them), converted by the converter
     * Kafka's state manager picks for kstate's stores and restored through their batching
     * callback into fresh stores: the restored stores hold exactly what the live ones held.
     */
    @Test
    public void theChangelogRestoresTheHeadersStoresAsTheyWere() throws Exception {
        File live = new File(dir, "live");
        Map<String, List<String>> liveContents = new LinkedHashMap<>();
        Map<String, List<TestRecord<byte[], byte[]>>> changelogs = new LinkedHashMap<>();
        try (TopologyTestDriver driver = new TopologyTestDriver(segmentTopology(true), TestSupport.props(APP, live))) {
            pipe(driver, segmentInput(0, 2_000));
            for (String s : new String[] {"hw", "hs"}) {
                List<String> layers = new ArrayList<>();
                liveContents.put(s, rawContents(innermost(driver.getAllStateStores().get(s), layers)));
                changelogs.put(s, driver.createOutputTopic(changelog(s).topic(), Serdes.ByteArray().deserializer(),
                    Serdes.ByteArray().deserializer()).readRecordsToList());
            }
        }
        File restoredDir = new File(dir, "restored");
        StateStore[] fresh = {
            KstateStores.persistentTimestampedWindowStoreWithHeaders("hw", RETENTION, WINDOW, false).get(),
            KstateStores.persistentSessionStoreWithHeaders("hs", RETENTION).get()};
        for (StateStore store : fresh) {
            String s = store.name();
            List<TestRecord<byte[], byte[]>> records = changelogs.get(s);
            assertTrue(s + "'s changelog has records", records.size() > 1_000);
            assertTrue(s + "'s changelog records carry headers",
                records.stream().anyMatch(r -> r.headers().toArray().length > 0));
            TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(TestSupport.props(APP, restoredDir),
                restoredDir);
            store.init(ctx, store);
            org.apache.kafka.streams.state.internals.RecordConverter converter = converterFor(store);
            assertEquals("Kafka rebuilds the headers layout for " + s, s.equals("hw")
                ? org.apache.kafka.streams.state.internals.RecordConverters.rawValueToHeadersValue()
                : org.apache.kafka.streams.state.internals.RecordConverters.rawValueToSessionHeadersValue(), converter);
            List<org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
            for (int i = 0; i < records.size(); i++) {
                TestRecord<byte[], byte[]> r = records.get(i);
                byte[] value = r.value();
                batch.add(converter.convert(new org.apache.kafka.clients.consumer.ConsumerRecord<>(changelog(s).topic(), 0,
                    i, r.timestamp(), org.apache.kafka.common.record.TimestampType.CREATE_TIME, r.key().length,
                    value == null ? -1 : value.length, r.key(), value, r.headers(), java.util.Optional.empty())));
            }
            for (int from = 0; from < batch.size(); from += 500) {
                ((org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback) ctx.restoreCallback)
                    .restoreBatch(batch.subList(from, Math.min(batch.size(), from + 500)));
            }
            assertEquals(s + " restored, byte for byte", liveContents.get(s), rawContents(store));
            assertEquals(Long.valueOf(records.size() - 1), store.committedOffset(changelog(s)));
            store.close();
        }
    }
}
