package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.WindowKeyQuery;
import org.apache.kafka.streams.query.WindowRangeQuery;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.ReadOnlySessionStore;
import org.apache.kafka.streams.state.ReadOnlyWindowStore;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The same random operations (window puts and deletes, duplicates, session puts and removes,
 * late writes, expiry across many segments) on Kafka's own transactional RocksDB window and
 * session stores and on kstate's, then every query through the stores Kafka Streams wraps
 * (metered, change-logging, caching): every {@code fetch}/{@code backwardFetch}/{@code fetchAll}/
 * {@code all} and {@code findSessions}/{@code fetchSession}/{@code fetch} variant, the
 * {@code readOnly(READ_COMMITTED)} and {@code readOnly(READ_UNCOMMITTED)} views (IQv1), and IQv2
 * {@code WindowKeyQuery} / {@code WindowRangeQuery} at both levels with their positions, with
 * uncommitted writes pending. Results, order included, must be identical.
 */
public class WindowQueryDifferentialTest {
    private static final int OPS = 3_000;
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("window-iq");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** Applies each op record ({@code kind|key|a|b|value}) to the stores. */
    private static final class Applier implements Processor<String, String, Void, Void> {
        private TimestampedWindowStore<String, String> w;
        private WindowStore<String, String> p;
        private SessionStore<String, String> s;
        private long now;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            w = context.getStateStore("w");
            p = context.getStateStore("p");
            s = context.getStateStore("s");
        }

        @Override
        public void process(Record<String, String> record) {
            String[] f = record.value().split("\\|", -1);
            long a = Long.parseLong(f[1]);
            long b = Long.parseLong(f[2]);
            now = record.timestamp();
            switch (f[0]) {
                case "w":
                    w.put(record.key(), ValueAndTimestamp.make(f[3], now), a);
                    break;
                case "wd":
                    w.put(record.key(), null, a);
                    break;
                case "p":
                    p.put(record.key(), f[3], a);
                    break;
                case "pd":
                    p.put(record.key(), null, a);
                    break;
                case "s":
                    s.put(new Windowed<>(record.key(), new SessionWindow(a, b)), f[3]);
                    break;
                case "sr":
                    s.remove(new Windowed<>(record.key(), new SessionWindow(a, b)));
                    break;
                default:
                    throw new IllegalArgumentException(record.value());
            }
        }
    }

    private static Topology topology(WindowBytesStoreSupplier w, WindowBytesStoreSupplier p, SessionBytesStoreSupplier s,
                                     boolean cacheW) {
        Topology t = new Topology();
        t.addSource("src", Serdes.String().deserializer(), Serdes.String().deserializer(), "ops");
        t.addProcessor("apply", Applier::new, "src");
        StoreBuilder<TimestampedWindowStore<String, String>> wb = Stores.timestampedWindowStoreBuilder(w, Serdes.String(),
            Serdes.String());
        t.addStateStore(cacheW ? wb.withCachingEnabled() : wb.withCachingDisabled(), "apply");
        t.addStateStore(Stores.windowStoreBuilder(p, Serdes.String(), Serdes.String()), "apply");
        t.addStateStore(Stores.sessionStoreBuilder(s, Serdes.String(), Serdes.String()).withCachingEnabled(), "apply");
        return t;
    }

    /** The op records: times drift over an hour (many segments expire), one in six is late. */
    private static List<KeyValue<String, String>> ops(long seed, List<Long> timestamps) {
        Random rnd = new Random(seed);
        List<KeyValue<String, String>> out = new ArrayList<>();
        long base = 600_000;
        for (int i = 0; i < OPS; i++) {
            base += rnd.nextInt(2_400);
            long t = rnd.nextInt(6) == 0 ? Math.max(0, base - rnd.nextInt(900_000)) : base;
            String key = "k" + rnd.nextInt(12);
            long start = t / 60_000 * 60_000;
            String op;
            int kind = rnd.nextInt(10);
            if (kind < 4) {
                op = "w|" + start + "|0|v" + i;
            } else if (kind == 4) {
                op = "wd|" + start + "|0|";
            } else if (kind < 7) {
                op = "p|" + (t / 30_000 * 30_000) + "|0|d" + i;
            } else if (kind == 7) {
                op = "pd|" + (t / 30_000 * 30_000) + "|0|";
            } else if (kind == 8) {
                op = "s|" + t + "|" + (t + rnd.nextInt(120_000)) + "|a" + i;
            } else {
                long st = t / 10_000 * 10_000;
                op = "sr|" + st + "|" + (st + 10_000) + "|";
            }
            out.add(KeyValue.pair(key, op));
            timestamps.add(t);
        }
        return out;
    }

    private Map<String, String> scenario(WindowBytesStoreSupplier w, WindowBytesStoreSupplier p, SessionBytesStoreSupplier s,
                                         long seed) throws Exception {
        return scenario(w, p, s, seed, false);
    }

    private Map<String, String> scenario(WindowBytesStoreSupplier w, WindowBytesStoreSupplier p, SessionBytesStoreSupplier s,
                                         long seed, boolean cacheW) throws Exception {
        File stateDir = TestSupport.tempDir("wq");
        Properties props = TestSupport.props("wq", stateDir);
        props.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, "true");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology(w, p, s, cacheW), props)) {
            TestInputTopic<String, String> in = driver.createInputTopic("ops", new StringSerializer(), new StringSerializer());
            List<Long> timestamps = new ArrayList<>();
            List<KeyValue<String, String>> ops = ops(seed, timestamps);
            for (int i = 0; i < ops.size(); i++) {
                in.pipeInput(ops.get(i).key, ops.get(i).value, timestamps.get(i));
            }
            long streamTime = timestamps.stream().mapToLong(Long::longValue).max().orElse(0);
            WindowStore<String, ValueAndTimestamp<String>> ws = driver.getTimestampedWindowStore("w");
            WindowStore<String, String> ps = driver.getWindowStore("p");
            SessionStore<String, String> ss = driver.getSessionStore("s");
            // uncommitted writes, made outside processing: READ_COMMITTED must not see them
            long lastWindow = streamTime / 60_000 * 60_000;
            ws.put("k1", ValueAndTimestamp.make("pending", streamTime), lastWindow);
            ws.put("k2", null, lastWindow);
            ws.put("k99", ValueAndTimestamp.make("new", streamTime), lastWindow - 60_000);
            ps.put("k1", "dup-pending", streamTime / 30_000 * 30_000);
            ss.put(new Windowed<>("k3", new SessionWindow(streamTime - 5_000, streamTime)), "pending-session");
            AtomicReference<Map<String, String>> results = new AtomicReference<>();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread iq = new Thread(() -> {
                try {
                    results.set(queries(ws, ps, ss, streamTime, seed));
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

    private static Map<String, String> queries(WindowStore<String, ValueAndTimestamp<String>> ws, WindowStore<String, String> ps,
                                               SessionStore<String, String> ss, long streamTime, long seed) {
        Map<String, String> out = new LinkedHashMap<>();
        out.put("w position", ((StateStore) ws).getPosition().toString());
        out.put("s position", ((StateStore) ss).getPosition().toString());
        Random rnd = new Random(seed * 31);
        for (int i = 0; i < 30; i++) {
            String k = "k" + rnd.nextInt(13);
            String kf = rnd.nextInt(5) == 0 ? null : "k" + rnd.nextInt(13);
            String kt = rnd.nextInt(5) == 0 ? null : "k" + rnd.nextInt(13);
            long from = streamTime - rnd.nextInt(1_500_000);
            long to = rnd.nextInt(8) == 0 ? from - 60_000 : from + rnd.nextInt(1_500_000);
            long t = from / 60_000 * 60_000;
            Instant fi = Instant.ofEpochMilli(Math.max(0, from));
            Instant ti = Instant.ofEpochMilli(Math.max(0, to));
            String q = "#" + i + " (" + k + "," + kf + "," + kt + "," + from + "," + to + ") ";
            // the writer's view, through the stores as the processor sees them
            windowQueries(out, q + "w ", ws, k, kf, kt, t, fi, ti);
            out.put(q + "w fetch(k,long,long)", attempt(() -> drain(ws.fetch(k, from, to))));
            out.put(q + "w backwardFetch(k,long,long)", attempt(() -> drain(ws.backwardFetch(k, from, to))));
            out.put(q + "w fetch(kf,kt,long,long)", attempt(() -> drain(ws.fetch(kf, kt, from, to))));
            out.put(q + "w fetchAll(long,long)", attempt(() -> drain(ws.fetchAll(from, to))));
            out.put(q + "w backwardFetchAll(long,long)", attempt(() -> drain(ws.backwardFetchAll(from, to))));
            windowQueries(out, q + "p ", ps, k, kf, kt, t - 30_000, fi, ti);
            sessionQueries(out, q + "s ", ss, k, kf, kt, from, to);
            for (IsolationLevel level : IsolationLevel.values()) {
                String lv = q + level.name() + " ";
                windowQueries(out, lv + "w ", ws.readOnly(level), k, kf, kt, t, fi, ti);
                windowQueries(out, lv + "p ", ps.readOnly(level), k, kf, kt, t - 30_000, fi, ti);
                sessionQueries(out, lv + "s ", ss.readOnly(level), k, kf, kt, from, to);
                QueryConfig config = new QueryConfig(false, level);
                iqv2(out, lv + "w WindowKeyQuery", (StateStore) ws, WindowKeyQuery.withKeyAndWindowStartRange(k, fi, ti), config);
                iqv2(out, lv + "w WindowRangeQuery", (StateStore) ws, WindowRangeQuery.withWindowStartRange(fi, ti), config);
                iqv2(out, lv + "w WindowRangeQuery.withKey", (StateStore) ws, WindowRangeQuery.withKey(k), config);
                iqv2(out, lv + "p WindowKeyQuery", (StateStore) ps, WindowKeyQuery.withKeyAndWindowStartRange(k, fi, ti), config);
                iqv2(out, lv + "s WindowRangeQuery.withKey", (StateStore) ss, WindowRangeQuery.withKey(k), config);
                iqv2(out, lv + "s WindowRangeQuery.withWindowStartRange", (StateStore) ss,
                    WindowRangeQuery.withWindowStartRange(fi, ti), config);
            }
        }
        for (IsolationLevel level : IsolationLevel.values()) {
            QueryConfig config = new QueryConfig(false, level);
            PositionBound ahead = PositionBound.at(Position.emptyPosition().withComponent("ops", 0, 1_000_000L));
            out.put(level + " w bound ahead", attempt(() -> show(((StateStore) ws).query(
                WindowRangeQuery.withWindowStartRange(Instant.EPOCH, Instant.ofEpochMilli(streamTime)), ahead, config))));
            PositionBound behind = PositionBound.at(Position.emptyPosition().withComponent("ops", 0, 10L));
            out.put(level + " s bound behind", attempt(() -> show(((StateStore) ss).query(
                WindowRangeQuery.withKey("k1"), behind, config))));
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
        out.put(q + "backwardFetchAll(from,to)", attempt(() -> drain(store.backwardFetchAll(fi, ti))));
        out.put(q + "all", attempt(() -> drain(store.all())));
        out.put(q + "backwardAll", attempt(() -> drain(store.backwardAll())));
    }

    private static <V> void sessionQueries(Map<String, String> out, String q, ReadOnlySessionStore<String, V> store, String k,
                                           String kf, String kt, long earliestEnd, long latestStart) {
        out.put(q + "findSessions(k,e,l)", attempt(() -> drain(store.findSessions(k, earliestEnd, latestStart))));
        out.put(q + "backwardFindSessions(k,e,l)", attempt(() -> drain(store.backwardFindSessions(k, earliestEnd, latestStart))));
        out.put(q + "findSessions(kf,kt,e,l)", attempt(() -> drain(store.findSessions(kf, kt, earliestEnd, latestStart))));
        out.put(q + "backwardFindSessions(kf,kt,e,l)",
            attempt(() -> drain(store.backwardFindSessions(kf, kt, earliestEnd, latestStart))));
        out.put(q + "findSessions(k,Instant,Instant)", attempt(() -> drain(store.findSessions(k,
            Instant.ofEpochMilli(Math.max(0, earliestEnd)), Instant.ofEpochMilli(Math.max(0, latestStart))))));
        out.put(q + "fetch(k)", attempt(() -> drain(store.fetch(k))));
        out.put(q + "backwardFetch(k)", attempt(() -> drain(store.backwardFetch(k))));
        out.put(q + "fetch(kf,kt)", attempt(() -> drain(store.fetch(kf, kt))));
        out.put(q + "backwardFetch(kf,kt)", attempt(() -> drain(store.backwardFetch(kf, kt))));
        // fetchSession on a session that exists (the first found), and on one that does not
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

    private static String drain(KeyValueIterator<?, ?> it) {
        List<String> entries = new ArrayList<>();
        try (KeyValueIterator<?, ?> i = it) {
            while (i.hasNext()) {
                KeyValue<?, ?> kv = i.next();
                entries.add(kv.key + "=" + show(kv.value));
            }
        }
        return entries.toString();
    }

    private static String show(Object value) {
        if (value instanceof ValueAndTimestamp) {
            ValueAndTimestamp<?> vt = (ValueAndTimestamp<?>) value;
            return vt.value() + "@" + vt.timestamp();
        }
        return String.valueOf(value);
    }

    static void assertSameAnswers(String what, Map<String, String> expected, Map<String, String> actual) {
        assertEquals(what + ": same queries", expected.keySet(), actual.keySet());
        List<String> diffs = new ArrayList<>();
        for (String q : expected.keySet()) {
            if (!expected.get(q).equals(actual.get(q))) {
                diffs.add(q + ":\n  expected " + expected.get(q) + "\n  but was  " + actual.get(q));
            }
        }
        assertTrue(what + " differs in " + diffs.size() + " of " + expected.size() + " queries:\n"
            + String.join("\n", diffs.subList(0, Math.min(20, diffs.size()))), diffs.isEmpty());
    }

    private static final Duration W_RETENTION = Duration.ofMinutes(10);
    private static final Duration P_RETENTION = Duration.ofMinutes(5);
    private static final Duration S_RETENTION = Duration.ofMinutes(10);

    private Map<String, String> kafka(long seed) throws Exception {
        return scenario(Stores.persistentTimestampedWindowStore("w", W_RETENTION, Duration.ofMinutes(1), false),
            Stores.persistentWindowStore("p", P_RETENTION, Duration.ofSeconds(30), true),
            Stores.persistentSessionStore("s", S_RETENTION), seed);
    }

    private Map<String, String> kstate(long seed) throws Exception {
        return scenario(KstateStores.persistentTimestampedWindowStore("w", W_RETENTION, Duration.ofMinutes(1), false),
            KstateStores.persistentWindowStore("p", P_RETENTION, Duration.ofSeconds(30), true),
            KstateStores.persistentSessionStore("s", S_RETENTION), seed);
    }

    private Map<String, String> kstateMemory(long seed) throws Exception {
        return scenario(KstateStores.inMemoryWindowStore("w", W_RETENTION, Duration.ofMinutes(1), false),
            KstateStores.builder("p").engine(KstateStoreOptions.Engine.MEMORY).timestamped(false)
                .buildWindowStore(P_RETENTION, Duration.ofSeconds(30), true),
            KstateStores.inMemorySessionStore("s", S_RETENTION), seed);
    }

    @Test
    public void everyQueryAnswersAsKafkasTransactionalRocksDbStores() throws Exception {
        for (long seed : new long[] {7, 8}) {
            Map<String, String> kafka = kafka(seed);
            Map<String, String> kstate = kstate(seed);
            assertSameAnswers("kstate RocksDB engine, seed " + seed, kafka, kstate);
            // not vacuous: the run committed and expired data, and the isolation levels differ
            long empty = kafka.values().stream().filter(v -> v.equals("[]")).count();
            assertTrue("most range queries find data (" + empty + " empty of " + kafka.size() + ")", empty < kafka.size() / 2);
            assertTrue(kafka.keySet().stream().anyMatch(q -> q.contains("READ_COMMITTED") && q.endsWith("w all")
                && !kafka.get(q).equals(kafka.get(q.replace("READ_COMMITTED", "READ_UNCOMMITTED")))));
        }
    }

    /**
     * The memory engine answers as the RocksDB engine, behind Kafka's caching layer too: its
     * session store is persistent to Kafka 4.4 ({@link KstateSessionStore#persistent()}), so
     * Kafka's CachingSessionStore walks the cache segment by segment over both engines, down to
     * the IllegalStateException ("segment interval has changed") Kafka 4.4 throws from a cached
     * persistent session store's backwardFindSessions(key, ...) in some ranges (Kafka's RocksDB
     * store and kstate's alike, checked above). Except in the order of a window query over
     * several keys (key-range fetches, fetchAll, all, IQv2's WindowRangeQuery over a time range)
     * on the store without duplicates ("w"): the memory engine returns Kafka's in-memory order,
     * by window start, then key (descending for the backward variants), where the RocksDB engine
     * returns Kafka's RocksDB order (segment, key, start). Those answers must hold the same
     * windows, and the memory engine's must be in its order.
     */
    @Test
    public void theMemoryEngineAnswersAsTheRocksDbEngine() throws Exception {
        Map<String, String> rocksdb = kstate(9);
        Map<String, String> memory = kstateMemory(9);
        // not vacuous: the cached session store took Kafka's persistent path (its throw included)
        long cachingPath = memory.entrySet().stream().filter(e -> e.getKey().endsWith("s backwardFindSessions(k,e,l)")
            && e.getValue().equals("THROWS java.lang.IllegalStateException")).count();
        assertTrue("answers of the persistent caching path: " + cachingPath, cachingPath > 0);
        int reordered = inMemoryWindowOrder(rocksdb, memory, q -> q.contains(" w ") || q.endsWith("w bound ahead"));
        // not vacuous: the orders differ on many answers
        assertTrue("reordered answers: " + reordered, reordered > 50);
        assertSameAnswers("kstate memory engine", rocksdb, memory);
    }

    /**
     * For every window query over several keys of a store without duplicates ({@code windowStore}
     * tells its queries): checks that the memory engine's answer is in Kafka's in-memory order (by
     * window start, then key; reversed for the backward variants), then sorts the entries of both
     * answers, so that {@link #assertSameAnswers} compares which windows they hold.
     *
     * @return how many of those answers differ in order only
     */
    static int inMemoryWindowOrder(Map<String, String> rocksdb, Map<String, String> memory, Predicate<String> windowStore) {
        int reordered = 0;
        for (String q : rocksdb.keySet()) {
            if (windowStore.test(q) && overSeveralKeys(q) && memory.containsKey(q)) {
                assertInStartThenKeyOrder(q, memory.get(q), q.contains("backward"));
                if (!rocksdb.get(q).equals(memory.get(q))) {
                    reordered++;
                }
                rocksdb.put(q, sortedEntries(rocksdb.get(q)));
                memory.put(q, sortedEntries(memory.get(q)));
            }
        }
        return reordered;
    }

    /**
     * Behind Kafka's caching layer (writes made outside processing stay in the cache, so every
     * query merges cached and stored windows), a window store on the memory engine answers as
     * Kafka's in-memory window store, order included: both report a segment interval of 1 ms, at
     * which the cache orders its windows by start, then key, the stores' own order.
     */
    @Test
    public void aCachedMemoryWindowStoreAnswersAsKafkasInMemoryStore() throws Exception {
        Map<String, String> kafka = scenario(Stores.inMemoryWindowStore("w", W_RETENTION, Duration.ofMinutes(1), false),
            Stores.inMemoryWindowStore("p", P_RETENTION, Duration.ofSeconds(30), true),
            Stores.inMemorySessionStore("s", S_RETENTION), 10, true);
        Map<String, String> kstate = scenario(KstateStores.inMemoryWindowStore("w", W_RETENTION, Duration.ofMinutes(1), false),
            KstateStores.builder("p").engine(KstateStoreOptions.Engine.MEMORY).timestamped(false)
                .buildWindowStore(P_RETENTION, Duration.ofSeconds(30), true),
            KstateStores.inMemorySessionStore("s", S_RETENTION), 10, true);
        // the writer's view of "w" through the stores Kafka Streams wraps (caching included)
        Map<String, String> want = new LinkedHashMap<>();
        Map<String, String> got = new LinkedHashMap<>();
        for (String q : kafka.keySet()) {
            if (q.contains(") w ")) {
                want.put(q, kafka.get(q));
                got.put(q, kstate.get(q));
            }
        }
        assertTrue(want.size() > 300);
        assertTrue("cached pending writes reach the answers", want.values().stream().anyMatch(v -> v.contains("pending@")));
        long several = want.entrySet().stream().filter(e -> overSeveralKeys(e.getKey()) && e.getValue().contains(", [")).count();
        assertTrue("answers over several keys: " + several, several > 50);
        assertSameAnswers("kstate memory engine behind the cache", want, got);
    }

    /** @return whether {@code q} is a window query over several keys */
    private static boolean overSeveralKeys(String q) {
        return q.contains("(kf,kt") || q.contains("etchAll(") || q.endsWith(" all") || q.endsWith(" backwardAll")
            || q.endsWith("w WindowRangeQuery") || q.endsWith("w bound ahead");
    }

    private static final Pattern ENTRY = Pattern.compile("\\[(k\\d+)@(\\d+)/\\d+\\]=");

    /** Checks that the windows of {@code answer} are ordered by start, then key (reversed for {@code backward}). */
    private static void assertInStartThenKeyOrder(String q, String answer, boolean backward) {
        Matcher m = ENTRY.matcher(answer);
        long lastStart = backward ? Long.MAX_VALUE : Long.MIN_VALUE;
        String lastKey = backward ? "\uffff" : "";
        while (m.find()) {
            long start = Long.parseLong(m.group(2));
            String key = m.group(1);
            int byStart = Long.compare(start, lastStart);
            int order = byStart != 0 ? byStart : key.compareTo(lastKey);
            assertTrue(q + ": " + key + "@" + start + " after " + lastKey + "@" + lastStart + " in " + answer,
                backward ? order <= 0 : order >= 0);
            lastStart = start;
            lastKey = key;
        }
    }

    /** @return {@code answer} with its entries sorted (an IQv2 answer keeps its position suffix) */
    private static String sortedEntries(String answer) {
        if (!answer.startsWith("[")) {
            return answer;
        }
        int end = answer.lastIndexOf(']');
        String body = answer.substring(1, end);
        List<String> entries = body.isEmpty() ? new ArrayList<>() : new ArrayList<>(Arrays.asList(body.split(", (?=\\[)")));
        Collections.sort(entries);
        return entries + answer.substring(end + 1);
    }
}
