package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.apache.kafka.common.IsolationLevel;
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
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.query.KeyQuery;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.RangeQuery;
import org.apache.kafka.streams.query.TimestampedKeyQuery;
import org.apache.kafka.streams.query.TimestampedRangeQuery;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreType;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.internals.GenericReadOnlyKeyValueStoreFacade;
import org.apache.kafka.streams.state.internals.StateStoreProvider;
import org.apache.kafka.streams.state.internals.ValueConverters;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Interactive queries through the wrappers Kafka Streams 4.4 really puts around a store
 * (metered, change-logging, and for a plain store behind a timestamped builder Kafka's
 * {@code KeyValueToTimestampedKeyValueByteStoreAdapter}), compared against Kafka's own
 * transactional RocksDB stores ({@code enable.transactional.statestores=true}) in the same
 * position, and against a model of committed and uncommitted data.
 *
 * <p>IQv1 is built the way {@code KafkaStreams#store} builds it: {@code
 * QueryableStoreType#create} over a provider that casts the task's store like Kafka's
 * StreamThreadStateStoreProvider (a {@link GenericReadOnlyKeyValueStoreFacade} for a timestamped
 * store queried as a plain key-value store) and hands out
 * {@code default.interactive.query.isolation.level}. IQv2 calls {@code StateStore#query} on the
 * task's outermost store, as {@code KafkaStreams#query} does. Queries run on a thread other than
 * the one that wrote, as real interactive queries do.
 */
public class InteractiveQueryTest {
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("iq");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** How a store variant is wired into a topology. */
    private enum Wiring { DSL_TIMESTAMPED_BUILDER, PAPI_PLAIN_BUILDER }

    /** Writes every input record into the store of a plain-builder topology. */
    private static final class Writer implements Processor<String, String, Void, Void> {
        private KeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            store = context.getStateStore("s");
        }

        @Override
        public void process(Record<String, String> record) {
            store.put(record.key(), record.value());
        }
    }

    private Topology topology(Wiring wiring, KeyValueBytesStoreSupplier supplier, boolean cached) {
        if (wiring == Wiring.DSL_TIMESTAMPED_BUILDER) {
            StreamsBuilder builder = new StreamsBuilder();
            Materialized<String, String, KeyValueStore<Bytes, byte[]>> m = Materialized.<String, String>as(supplier)
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
            builder.table("in", Consumed.with(Serdes.String(), Serdes.String()),
                cached ? m.withCachingEnabled() : m.withCachingDisabled());
            return builder.build();
        }
        Topology t = new Topology();
        t.addSource("src", Serdes.String().deserializer(), Serdes.String().deserializer(), "in");
        t.addProcessor("p", Writer::new, "src");
        StoreBuilder<KeyValueStore<String, String>> b = Stores.keyValueStoreBuilder(supplier, Serdes.String(), Serdes.String());
        t.addStateStore(cached ? b.withCachingEnabled() : b.withCachingDisabled(), "p");
        return t;
    }

    /**
     * Runs the scenario on one store: three committed records, then uncommitted writes made on
     * the stream thread (an update, an insert, a delete), then every query from another thread.
     *
     * @return query description -> result, in a stable order
     */
    private Map<String, String> scenario(Wiring wiring, KeyValueBytesStoreSupplier supplier) throws Exception {
        return scenario(wiring, supplier, false);
    }

    private Map<String, String> scenario(Wiring wiring, KeyValueBytesStoreSupplier supplier, boolean cached) throws Exception {
        File stateDir = TestSupport.tempDir("iq-" + supplier.getClass().getSimpleName());
        Properties props = TestSupport.props("iq-app", stateDir);
        props.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, "true");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology(wiring, supplier, cached), props)) {
            TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
            in.pipeInput("a1", "v1", 10L);
            in.pipeInput("a2", "v2", 20L);
            in.pipeInput("b1", "v3", 30L);
            StateStore top;
            if (wiring == Wiring.DSL_TIMESTAMPED_BUILDER) {
                KeyValueStore<String, ValueAndTimestamp<String>> s = driver.getTimestampedKeyValueStore("s");
                s.put("a1", ValueAndTimestamp.make("pending", 40L));
                s.put("a3", ValueAndTimestamp.make("new", 50L));
                s.delete("b1");
                top = (StateStore) s;
            } else {
                KeyValueStore<String, String> s = driver.getKeyValueStore("s");
                s.put("a1", "pending");
                s.put("a3", "new");
                s.delete("b1");
                top = (StateStore) s;
            }
            AtomicReference<Map<String, String>> results = new AtomicReference<>();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread iq = new Thread(() -> {
                try {
                    results.set(queries(top));
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

    /** Kafka's StreamThreadStateStoreProvider#validateAndCastStores for key-value stores. */
    private static StateStoreProvider provider(StateStore top, IsolationLevel defaultLevel) {
        return new StateStoreProvider() {
            @Override
            @SuppressWarnings({"unchecked", "rawtypes"})
            public <T> List<T> stores(String storeName, QueryableStoreType<T> type) {
                if (!type.accepts(top)) {
                    return Collections.emptyList();
                }
                if (top instanceof TimestampedKeyValueStore && type instanceof QueryableStoreTypes.KeyValueStoreType) {
                    return Collections.singletonList((T) new GenericReadOnlyKeyValueStoreFacade(
                        (TimestampedKeyValueStore) top, ValueConverters.extractValue()));
                }
                return Collections.singletonList((T) top);
            }

            @Override
            public IsolationLevel defaultIsolationLevel() {
                return defaultLevel;
            }
        };
    }

    private static Map<String, String> queries(StateStore top) {
        Map<String, String> out = new LinkedHashMap<>();
        for (IsolationLevel isolation : IsolationLevel.values()) {
            final IsolationLevel level = isolation;
            final String lv = isolation.name(); // IsolationLevel#toString() is lower case
            // IQv1, isolation from default.interactive.query.isolation.level
            StateStoreProvider provider = provider(top, level);
            ReadOnlyKeyValueStore<String, String> kv = QueryableStoreTypes.<String, String>keyValueStore().create(provider, "s");
            iqv1(out, "v1 " + lv + " keyValueStore", kv);
            // ... and overridden per view with readOnly(level) on the composite store
            ReadOnlyKeyValueStore<String, String> overridden = QueryableStoreTypes.<String, String>keyValueStore()
                .create(provider(top, other(level)), "s").readOnly(level);
            iqv1(out, "v1 " + lv + " keyValueStore.readOnly", overridden);
            if (top instanceof TimestampedKeyValueStore) {
                ReadOnlyKeyValueStore<String, ValueAndTimestamp<String>> tkv =
                    QueryableStoreTypes.<String, String>timestampedKeyValueStore().create(provider, "s");
                iqv1(out, "v1 " + lv + " timestampedKeyValueStore", tkv);
            }
            // IQv2 at this level
            QueryConfig config = new QueryConfig(false, level);
            iqv2(out, "v2 " + lv + " KeyQuery", top, KeyQuery.<String, String>withKey("a1"), config);
            iqv2(out, "v2 " + lv + " KeyQuery missing", top, KeyQuery.<String, String>withKey("b1"), config);
            iqv2(out, "v2 " + lv + " RangeQuery all", top, RangeQuery.<String, String>withNoBounds(), config);
            iqv2(out, "v2 " + lv + " RangeQuery a1..a3 desc", top,
                RangeQuery.<String, String>withRange("a1", "a3").withDescendingKeys(), config);
            iqv2(out, "v2 " + lv + " TimestampedKeyQuery", top, TimestampedKeyQuery.<String, String>withKey("a1"), config);
            iqv2(out, "v2 " + lv + " TimestampedRangeQuery all", top,
                TimestampedRangeQuery.<String, String>withNoBounds(), config);
        }
        return out;
    }

    private static IsolationLevel other(IsolationLevel level) {
        return level == IsolationLevel.READ_COMMITTED ? IsolationLevel.READ_UNCOMMITTED : IsolationLevel.READ_COMMITTED;
    }

    private static <V> void iqv1(Map<String, String> out, String prefix, ReadOnlyKeyValueStore<String, V> store) {
        out.put(prefix + " get(a1)", attempt(() -> show(store.get("a1"))));
        out.put(prefix + " get(b1)", attempt(() -> show(store.get("b1"))));
        out.put(prefix + " all", attempt(() -> drain(store.all())));
        out.put(prefix + " reverseAll", attempt(() -> drain(store.reverseAll())));
        out.put(prefix + " range(a1,a9)", attempt(() -> drain(store.range("a1", "a9"))));
        out.put(prefix + " prefixScan(a)", attempt(() -> drain(store.prefixScan("a", new StringSerializer()))));
    }

    private static <R> void iqv2(Map<String, String> out, String name, StateStore store, Query<R> query, QueryConfig config) {
        out.put(name, attempt(() -> {
            QueryResult<R> r = store.query(query, PositionBound.unbounded(), config);
            if (!r.isSuccess()) {
                return "FAILED " + r.getFailureReason();
            }
            Object result = r.getResult();
            if (result instanceof KeyValueIterator) {
                @SuppressWarnings("unchecked")
                KeyValueIterator<Object, Object> it = (KeyValueIterator<Object, Object>) result;
                return drain(it);
            }
            return show(result);
        }));
    }

    private static String attempt(Supplier<String> s) {
        try {
            return s.get();
        } catch (RuntimeException e) {
            return "THROWS " + e.getClass().getName();
        }
    }

    private static <K, V> String drain(KeyValueIterator<K, V> it) {
        List<String> entries = new ArrayList<>();
        try (KeyValueIterator<K, V> i = it) {
            while (i.hasNext()) {
                KeyValue<K, V> kv = i.next();
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

    private static void assertSameAnswers(String what, Map<String, String> expected, Map<String, String> actual) {
        assertEquals(what + ": same queries", expected.keySet(), actual.keySet());
        List<String> diffs = new ArrayList<>();
        for (String q : expected.keySet()) {
            if (!expected.get(q).equals(actual.get(q))) {
                diffs.add(q + ": expected " + expected.get(q) + " but was " + actual.get(q));
            }
        }
        assertTrue(what + " differs:\n" + String.join("\n", diffs), diffs.isEmpty());
    }

    /**
     * A timestamped store answers every IQv1 and IQv2 query, at both isolation levels, exactly
     * as Kafka's own transactional timestamped store in the same position.
     */
    @Test
    public void timestampedStoreAnswersAsKafkasTransactionalStore() throws Exception {
        Map<String, String> kstate = scenario(Wiring.DSL_TIMESTAMPED_BUILDER, KstateStores.persistentTimestampedKeyValueStore("s"));
        Map<String, String> kafka = scenario(Wiring.DSL_TIMESTAMPED_BUILDER, Stores.persistentTimestampedKeyValueStore("s"));
        assertSameAnswers("timestamped store", kafka, kstate);
    }

    /**
     * A plain store behind the timestamped builder ({@code Materialized.as(plain supplier)},
     * wrapped in Kafka's KeyValueToTimestampedKeyValueByteStoreAdapter) answers as Kafka's own
     * transactional plain store there, range queries included.
     */
    @Test
    public void plainStoreBehindTheTimestampedBuilderAnswersAsKafkasTransactionalStore() throws Exception {
        Map<String, String> kstate = scenario(Wiring.DSL_TIMESTAMPED_BUILDER, KstateStores.persistentKeyValueStore("s"));
        Map<String, String> kafka = scenario(Wiring.DSL_TIMESTAMPED_BUILDER, Stores.persistentKeyValueStore("s"));
        assertSameAnswers("plain store behind the timestamped builder", kafka, kstate);
    }

    /**
     * With the record cache on (where a DSL store answers IQv2 key lookups from the cache
     * first), every query still answers as Kafka's own transactional store, on both builders.
     */
    @Test
    public void cachedStoresAnswerAsKafkasCachedTransactionalStores() throws Exception {
        assertSameAnswers("cached timestamped store",
            scenario(Wiring.DSL_TIMESTAMPED_BUILDER, Stores.persistentTimestampedKeyValueStore("s"), true),
            scenario(Wiring.DSL_TIMESTAMPED_BUILDER, KstateStores.persistentTimestampedKeyValueStore("s"), true));
        assertSameAnswers("cached plain store",
            scenario(Wiring.PAPI_PLAIN_BUILDER, Stores.persistentKeyValueStore("s"), true),
            scenario(Wiring.PAPI_PLAIN_BUILDER, KstateStores.persistentKeyValueStore("s"), true));
    }

    /**
     * The in-memory engine answers every query exactly as kstate's RocksDB engine does (the
     * same transactional semantics), cached and uncached, on both builders.
     */
    @Test
    public void inMemoryStoresAnswerAsTheRocksDbEngine() throws Exception {
        for (boolean cached : new boolean[] {false, true}) {
            assertSameAnswers("in-memory timestamped store, cached=" + cached,
                scenario(Wiring.DSL_TIMESTAMPED_BUILDER, KstateStores.persistentTimestampedKeyValueStore("s"), cached),
                scenario(Wiring.DSL_TIMESTAMPED_BUILDER, KstateStores.inMemoryTimestampedKeyValueStore("s"), cached));
            assertSameAnswers("in-memory plain store, cached=" + cached,
                scenario(Wiring.PAPI_PLAIN_BUILDER, KstateStores.persistentKeyValueStore("s"), cached),
                scenario(Wiring.PAPI_PLAIN_BUILDER, KstateStores.inMemoryKeyValueStore("s"), cached));
        }
    }

    /** A plain store behind the plain builder answers as Kafka's own transactional plain store. */
    @Test
    public void plainStoreBehindThePlainBuilderAnswersAsKafkasTransactionalStore() throws Exception {
        Map<String, String> kstate = scenario(Wiring.PAPI_PLAIN_BUILDER, KstateStores.persistentKeyValueStore("s"));
        Map<String, String> kafka = scenario(Wiring.PAPI_PLAIN_BUILDER, Stores.persistentKeyValueStore("s"));
        assertSameAnswers("plain store behind the plain builder", kafka, kstate);
    }

    /**
     * Against the model: committed = {a1=v1, a2=v2, b1=v3}; the writer's view = {a1=pending,
     * a2=v2, a3=new}. Where Kafka carries the isolation level down to the store (IQv1 through
     * the timestamped or plain store type, {@code readOnly(level)}, IQv2) kstate answers at that
     * level, and the timestamped and plain store types agree.
     */
    @Test
    public void eachIsolationLevelReadsItsModelOnTimestampedAndPlainStores() throws Exception {
        Map<String, String> ts = scenario(Wiring.DSL_TIMESTAMPED_BUILDER, KstateStores.persistentTimestampedKeyValueStore("s"));
        Map<String, String> plain = scenario(Wiring.PAPI_PLAIN_BUILDER, KstateStores.persistentKeyValueStore("s"));
        Map<String, String> adapted = scenario(Wiring.DSL_TIMESTAMPED_BUILDER, KstateStores.persistentKeyValueStore("s"));
        String rc = "READ_COMMITTED";
        String ru = "READ_UNCOMMITTED";
        // IQv1 with the level carried down
        assertEquals("v1@10", ts.get("v1 " + rc + " timestampedKeyValueStore get(a1)"));
        assertEquals("pending@40", ts.get("v1 " + ru + " timestampedKeyValueStore get(a1)"));
        assertEquals("[a1=v1@10, a2=v2@20]", ts.get("v1 " + rc + " timestampedKeyValueStore prefixScan(a)"));
        assertEquals("[a1=pending@40, a2=v2@20, a3=new@50]", ts.get("v1 " + ru + " timestampedKeyValueStore prefixScan(a)"));
        for (String view : new String[] {"keyValueStore", "keyValueStore.readOnly"}) {
            assertEquals("v1", plain.get("v1 " + rc + " " + view + " get(a1)"));
            assertEquals("v3", plain.get("v1 " + rc + " " + view + " get(b1)"));
            assertEquals("[a1=v1, a2=v2, b1=v3]", plain.get("v1 " + rc + " " + view + " all"));
            assertEquals("[a1=v1, a2=v2]", plain.get("v1 " + rc + " " + view + " prefixScan(a)"));
            assertEquals("pending", plain.get("v1 " + ru + " " + view + " get(a1)"));
            assertEquals("null", plain.get("v1 " + ru + " " + view + " get(b1)"));
            assertEquals("[a1=pending, a2=v2, a3=new]", plain.get("v1 " + ru + " " + view + " all"));
            assertEquals("[a3=new, a2=v2, a1=pending]", plain.get("v1 " + ru + " " + view + " reverseAll"));
            assertEquals("[a1=pending, a2=v2, a3=new]", plain.get("v1 " + ru + " " + view + " prefixScan(a)"));
        }
        // IQv1 on the timestamped store through the timestamped type and on the plain store agree on values
        for (String level : new String[] {rc, ru}) {
            for (String q : new String[] {"get(a1)", "get(b1)", "all", "reverseAll", "range(a1,a9)", "prefixScan(a)"}) {
                assertEquals(level + " " + q, plain.get("v1 " + level + " keyValueStore " + q),
                    ts.get("v1 " + level + " timestampedKeyValueStore " + q).replaceAll("@-?\\d+", ""));
            }
        }
        // IQv2 at each level: the three wirings agree on values, and match the model
        for (String level : new String[] {rc, ru}) {
            for (String q : new String[] {"KeyQuery", "KeyQuery missing", "RangeQuery all", "RangeQuery a1..a3 desc"}) {
                String key = "v2 " + level + " " + q;
                assertEquals(key, plain.get(key), ts.get(key));
                assertEquals(key, plain.get(key), adapted.get(key));
            }
            for (String q : new String[] {"TimestampedKeyQuery", "TimestampedRangeQuery all"}) {
                String key = "v2 " + level + " " + q;
                assertFalse(key + ": " + adapted.get(key), adapted.get(key).startsWith("THROWS"));
                assertEquals(key, ts.get(key).replaceAll("@-?\\d+", ""), adapted.get(key).replaceAll("@-?\\d+", ""));
            }
        }
        assertEquals("v1", plain.get("v2 " + rc + " KeyQuery"));
        assertEquals("pending", plain.get("v2 " + ru + " KeyQuery"));
        assertEquals("[a1=v1, a2=v2, b1=v3]", adapted.get("v2 " + rc + " RangeQuery all"));
        assertEquals("[a1=pending, a2=v2, a3=new]", adapted.get("v2 " + ru + " RangeQuery all"));
        assertEquals("[a2=v2, a1=v1]", adapted.get("v2 " + rc + " RangeQuery a1..a3 desc"));
        assertEquals("[a1=v1@10, a2=v2@20, b1=v3@30]", ts.get("v2 " + rc + " TimestampedRangeQuery all"));
    }
}
