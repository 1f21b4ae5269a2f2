package dev.kstate.streams;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.query.MultiVersionedKeyQuery;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.VersionedKeyQuery;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedBytesStoreSupplier;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.VersionedRecordIterator;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The versioned adapter ({@link KstateVersionedStore}) inside Kafka Streams' runtime
 * (TopologyTestDriver: Kafka's metered and change-logging layers, commits after every record), run
 * side by side with the same topology on Kafka's {@code RocksDBVersionedStore}: a versioned table
 * joined with a stream (the join looks the table up as of each stream record's timestamp), and the
 * Processor API on {@code Stores.versionedKeyValueStoreBuilder}, out-of-order records and records
 * older than the history retention included; outputs and IQv2 answers must be equal.
 */
public class VersionedStoreTest {
    private static final Duration RETENTION = Duration.ofMillis(1_000);
    static final String STORE = "vt";
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("versioned-adapter");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    // ----- (a) a versioned table joined with a stream -------------------------------------------

    private static Topology joinTopology(VersionedBytesStoreSupplier supplier) {
        StreamsBuilder b = new StreamsBuilder();
        Consumed<String, String> strings = Consumed.with(Serdes.String(), Serdes.String());
        b.table("table", strings, Materialized.<String, String>as(supplier)
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
            .toStream().to("table-changes", Produced.with(Serdes.String(), Serdes.String()));
        b.stream("stream", strings)
            .leftJoin(b.table("table2", strings, Materialized.<String, String>as(suppliedTwin(supplier))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())), (s, t) -> s + "|" + t)
            .to("joined", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    /** A second versioned store of the same kind, for the joined table (its own changelog). */
    private static VersionedBytesStoreSupplier suppliedTwin(VersionedBytesStoreSupplier supplier) {
        if (supplier instanceof KstateVersionedBytesStoreSupplier) {
            KstateVersionedBytesStoreSupplier k = (KstateVersionedBytesStoreSupplier) supplier;
            return k.options().engine == KstateStoreOptions.Engine.ROCKSDB
                ? KstateStores.persistentVersionedKeyValueStore(STORE + "2", RETENTION)
                : KstateStores.inMemoryVersionedKeyValueStore(STORE + "2", RETENTION);
        }
        return Stores.persistentVersionedKeyValueStore(STORE + "2", RETENTION);
    }

    /** Pipes the same random table and stream records into the driver; returns every output record. */
    private static List<String> runJoin(TopologyTestDriver driver, long seed) {
        Random rnd = new Random(seed);
        TestInputTopic<String, String> table = driver.createInputTopic("table", new StringSerializer(),
            new StringSerializer());
        TestInputTopic<String, String> table2 = driver.createInputTopic("table2", new StringSerializer(),
            new StringSerializer());
        TestInputTopic<String, String> stream = driver.createInputTopic("stream", new StringSerializer(),
            new StringSerializer());
        TestOutputTopic<String, String> joined = driver.createOutputTopic("joined", new StringDeserializer(),
            new StringDeserializer());
        TestOutputTopic<String, String> changes = driver.createOutputTopic("table-changes", new StringDeserializer(),
            new StringDeserializer());
        List<String> out = new ArrayList<>();
        long time = 10_000;
        for (int i = 0; i < 3_000; i++) {
            time += rnd.nextInt(40);
            String key = "k" + rnd.nextInt(12);
            // out of order, some beyond the history retention
            long ts = rnd.nextInt(4) == 0 ? time - rnd.nextInt(1_500) : time;
            int what = rnd.nextInt(10);
            if (what < 3) {
                table.pipeInput(key, rnd.nextInt(8) == 0 ? null : "t" + i, ts);
            } else if (what < 5) {
                table2.pipeInput(key, rnd.nextInt(8) == 0 ? null : "u" + i, ts);
            } else {
                stream.pipeInput(key, "s" + i, ts);
            }
            for (org.apache.kafka.streams.test.TestRecord<String, String> r : joined.readRecordsToList()) {
                out.add("joined " + r.key() + "=" + r.value() + "@" + r.timestamp());
            }
            for (org.apache.kafka.streams.test.TestRecord<String, String> r : changes.readRecordsToList()) {
                out.add("table " + r.key() + "=" + r.value() + "@" + r.timestamp());
            }
        }
        return out;
    }

    private void joinEqualsKafka(VersionedBytesStoreSupplier kstate) {
        List<String> expected;
        try (TopologyTestDriver kafka = new TopologyTestDriver(
            joinTopology(Stores.persistentVersionedKeyValueStore(STORE, RETENTION)),
            TestSupport.props("vjoin", new File(dir, "kafka")))) {
            expected = runJoin(kafka, 7);
        }
        try (TopologyTestDriver driver = new TopologyTestDriver(joinTopology(kstate),
            TestSupport.props("vjoin", new File(dir, "kstate-" + kstate.metricsScope())))) {
            assertTrue(inner(driver, STORE) instanceof KstateVersionedStore);
            assertTrue(inner(driver, STORE + "2") instanceof KstateVersionedStore);
            List<String> actual = runJoin(driver, 7);
            assertEquals(expected.size(), actual.size());
            assertEquals(expected, actual);
            long nulls = actual.stream().filter(s -> s.startsWith("joined") && s.contains("|null@")).count();
            long found = actual.stream().filter(s -> s.startsWith("joined") && !s.contains("|null@")).count();
            System.out.println("versioned join (" + kstate.metricsScope() + "): " + actual.size() + " output records, "
                + found + " joined with a table version, " + nulls + " without");
            assertTrue("both join outcomes are reached", nulls > 50 && found > 50);
        }
    }

    @Test
    public void aVersionedTableJoinedWithAStreamOutputsAsKafkasPersistent() {
        joinEqualsKafka(KstateStores.persistentVersionedKeyValueStore(STORE, RETENTION));
    }

    @Test
    public void aVersionedTableJoinedWithAStreamOutputsAsKafkasInMemory() {
        joinEqualsKafka(KstateStores.inMemoryVersionedKeyValueStore(STORE, RETENTION));
    }

    // ----- (b) the Processor API, and (d) IQv2 --------------------------------------------------

    /** Interprets "put:V", "del", "get", "getAt:T" against the versioned store; forwards what each returned. */
    private static final class Ops implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private VersionedKeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore(STORE);
        }

        @Override
        public void process(Record<String, String> r) {
            String op = r.value();
            String result;
            if (op.startsWith("put:")) {
                String v = op.substring(4);
                result = Long.toString(store.put(r.key(), v.equals("null") ? null : v, r.timestamp()));
            } else if (op.equals("del")) {
                result = show(store.delete(r.key(), r.timestamp()));
            } else if (op.equals("get")) {
                result = show(store.get(r.key()));
            } else {
                result = show(store.get(r.key(), Long.parseLong(op.substring(6))));
            }
            context.forward(r.withValue(op + " -> " + result));
        }
    }

    static String show(VersionedRecord<String> r) {
        return r == null ? "null" : r.value() + "@" + r.timestamp() + "-" + r.validTo().orElse(null);
    }

    static Topology processorTopology(VersionedBytesStoreSupplier supplier) {
        Topology t = new Topology();
        t.addSource("in", new StringDeserializer(), new StringDeserializer(), "ops");
        t.addProcessor("ops", Ops::new, "in");
        t.addStateStore(Stores.versionedKeyValueStoreBuilder(supplier, Serdes.String(), Serdes.String()), "ops");
        t.addSink("out", "results", new StringSerializer(), new StringSerializer(), "ops");
        return t;
    }

    private static final int KEYS = 6;

    private static List<String> runOps(TopologyTestDriver driver, long seed) {
        Random rnd = new Random(seed);
        TestInputTopic<String, String> in = driver.createInputTopic("ops", new StringSerializer(), new StringSerializer());
        TestOutputTopic<String, String> results = driver.createOutputTopic("results", new StringDeserializer(),
            new StringDeserializer());
        long time = 5_000;
        for (int i = 0; i < 4_000; i++) {
            time += rnd.nextInt(30);
            long ts = rnd.nextInt(3) == 0 ? time - rnd.nextInt(1_400) : time;
            int what = rnd.nextInt(10);
            String op = what < 5 ? "put:" + (rnd.nextInt(10) == 0 ? "null" : rnd.nextInt(10) == 0 ? "" : "v" + i)
                : what < 7 ? "del" : what < 8 ? "get" : "getAt:" + (time - rnd.nextInt(1_600));
            in.pipeInput("k" + rnd.nextInt(KEYS), op, ts);
        }
        List<String> out = new ArrayList<>();
        for (org.apache.kafka.streams.test.TestRecord<String, String> r : results.readRecordsToList()) {
            out.add(r.key() + " " + r.value() + " @" + r.timestamp());
        }
        return out;
    }

    /** The store's latest stream time, read from the driver's last record (the largest timestamp accepted). */
    private static long streamTime(List<String> outputs) {
        long max = Long.MIN_VALUE;
        for (String s : outputs) {
            max = Math.max(max, Long.parseLong(s.substring(s.lastIndexOf('@') + 1)));
        }
        return max;
    }

    private void processorApiEqualsKafka(VersionedBytesStoreSupplier kstate) {
        try (TopologyTestDriver kafka = new TopologyTestDriver(
                processorTopology(Stores.persistentVersionedKeyValueStore(STORE, RETENTION)),
                TestSupport.props("vops", new File(dir, "kafka")));
             TopologyTestDriver driver = new TopologyTestDriver(processorTopology(kstate),
                TestSupport.props("vops", new File(dir, "kstate-" + kstate.metricsScope())))) {
            assertTrue(inner(driver, STORE) instanceof KstateVersionedStore);
            List<String> expected = runOps(kafka, 11);
            List<String> actual = runOps(driver, 11);
            assertEquals(expected, actual);
            long notPut = actual.stream().filter(s -> s.contains(" -> " + Long.MIN_VALUE + " ")).count();
            // Kafka's metered store hands a versioned record over without its validTo (the
            // ValueAndTimestamp layout): IQv2 below compares validTo
            long found = actual.stream().filter(s -> s.contains("getAt") && !s.contains("-> null @")).count();
            long deleted = actual.stream().filter(s -> s.contains("del ->") && !s.contains("-> null @")).count();
            long history = iqv2EqualsKafka(kafka, driver, streamTime(actual));
            System.out.println("versioned processor API (" + kstate.metricsScope() + "): " + actual.size()
                + " operations equal to Kafka's, " + notPut + " puts not put, " + found + " as-of reads found a "
                + "version, " + deleted + " deletes returned one; IQv2: " + history + " reads of history");
            assertTrue(notPut > 20 && found > 20 && deleted > 20 && history > 50);
            // refused puts and deletes count in the task's dropped-records, as in Kafka
            double dropped = droppedRecordsTotal(driver);
            assertEquals(droppedRecordsTotal(kafka), dropped, 0);
            assertTrue("refused puts and deletes were counted: " + dropped, dropped > notPut);
        }
    }

    /** The task's {@code dropped-records-total} ({@code stream-task-metrics}), or NaN when absent. */
    private static double droppedRecordsTotal(TopologyTestDriver driver) {
        for (java.util.Map.Entry<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> m
            : driver.metrics().entrySet()) {
            org.apache.kafka.common.MetricName n = m.getKey();
            if (n.name().equals("dropped-records-total") && n.group().equals("stream-task-metrics")
                && "0_0".equals(n.tags().get("task-id"))) {
                return ((Number) m.getValue().metricValue()).doubleValue();
            }
        }
        return Double.NaN;
    }

    /**
     * IQv2 through Kafka's metered store (it serialises the key and deserialises the results):
     * {@code VersionedKeyQuery} latest and as of many times equal to Kafka's answers; the
     * multi-version query equal to the versions Kafka's as-of reads show over the range (Kafka's
     * own multi-version query misses versions: see VersionedDifferentialTest), in both orders.
     */
    static long iqv2EqualsKafka(TopologyTestDriver kafka, TopologyTestDriver kstate, long streamTime) {
        StateStore kafkaStore = kafka.getVersionedKeyValueStore(STORE);
        StateStore kstateStore = kstate.getVersionedKeyValueStore(STORE);
        Random rnd = new Random(3);
        int multi = 0;
        long history = 0;
        for (IsolationLevel level : IsolationLevel.values()) {
            QueryConfig config = new QueryConfig(false, level);
            for (int k = 0; k < KEYS; k++) {
                String key = "k" + k;
                VersionedKeyQuery<String, String> latest = VersionedKeyQuery.withKey(key);
                assertEquals(show(versioned(kafkaStore, latest, config)), show(versioned(kstateStore, latest, config)));
                for (int i = 0; i < 200; i++) {
                    long t = streamTime - rnd.nextInt(2_500);
                    VersionedKeyQuery<String, String> asOf = VersionedKeyQuery.<String, String>withKey(key)
                        .asOf(Instant.ofEpochMilli(t));
                    VersionedRecord<String> expected = versioned(kafkaStore, asOf, config);
                    assertEquals(key + " as of " + t, show(expected), show(versioned(kstateStore, asOf, config)));
                    if (expected != null && expected.validTo().isPresent()) {
                        history++;
                    }
                }
                for (int i = 0; i < 10; i++) {
                    // inside the history retention: Kafka's as-of reads show every version there
                    long from = streamTime - rnd.nextInt((int) RETENTION.toMillis());
                    long to = Math.min(streamTime, from + rnd.nextInt(600));
                    Set<String> shown = new LinkedHashSet<>();
                    for (long t = from; t <= to; t++) {
                        VersionedRecord<String> r = versioned(kafkaStore, VersionedKeyQuery.<String, String>withKey(key)
                            .asOf(Instant.ofEpochMilli(t)), config);
                        if (r != null) {
                            shown.add(show(r));
                        }
                    }
                    List<String> ascending = new ArrayList<>(shown);
                    MultiVersionedKeyQuery<String, String> q = MultiVersionedKeyQuery.<String, String>withKey(key)
                        .fromTime(Instant.ofEpochMilli(from)).toTime(Instant.ofEpochMilli(to));
                    assertEquals(ascending, versions(kstateStore, q.withAscendingTimestamps(), config));
                    List<String> descending = new ArrayList<>(ascending);
                    java.util.Collections.reverse(descending);
                    assertEquals(descending, versions(kstateStore, q.withDescendingTimestamps(), config));
                    assertEquals("ANY is newest first", descending, versions(kstateStore, q, config));
                    multi += ascending.size();
                }
            }
        }
        assertTrue("the multi-version queries returned versions", multi > 50);
        return history;
    }

    @SuppressWarnings("unchecked")
    private static VersionedRecord<String> versioned(StateStore store, VersionedKeyQuery<String, String> q,
                                                     QueryConfig config) {
        QueryResult<VersionedRecord<String>> r = store.query(q, PositionBound.unbounded(), config);
        assertTrue(String.valueOf(r), r.isSuccess());
        return r.getResult();
    }

    private static List<String> versions(StateStore store, MultiVersionedKeyQuery<String, String> q,
                                         QueryConfig config) {
        QueryResult<VersionedRecordIterator<String>> r = store.query(q, PositionBound.unbounded(), config);
        assertTrue(String.valueOf(r), r.isSuccess());
        assertTrue("the position is attached", r.getPosition() != null);
        List<String> out = new ArrayList<>();
        try (VersionedRecordIterator<String> it = r.getResult()) {
            it.forEachRemaining(v -> out.add(show(v)));
        }
        return out;
    }

    @Test
    public void theProcessorApiAndIqv2AnswerAsKafkasPersistent() {
        processorApiEqualsKafka(KstateStores.persistentVersionedKeyValueStore(STORE, RETENTION));
    }

    @Test
    public void theProcessorApiAndIqv2AnswerAsKafkasInMemory() {
        processorApiEqualsKafka(KstateStores.inMemoryVersionedKeyValueStore(STORE, RETENTION));
    }

    static StateStore inner(TopologyTestDriver driver, String name) {
        StateStore s = driver.getAllStateStores().get(name);
        while (s instanceof WrappedStateStore) {
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        return s;
    }

    // ----- the adapter alone --------------------------------------------------------------------

    @Test
    public void kafkasArgumentChecksAndTheRefusedKeyValueOperations() {
        assertEquals(1_000L, KstateStores.persistentVersionedKeyValueStore("a", RETENTION).historyRetentionMs());
        assertEquals(300L, KstateStores.persistentVersionedKeyValueStore("a", RETENTION, Duration.ofMillis(300))
            .segmentIntervalMs());
        expectIae(() -> KstateStores.persistentVersionedKeyValueStore("a", Duration.ofMillis(-1)),
            "historyRetention cannot be negative");
        expectIae(() -> KstateStores.persistentVersionedKeyValueStore("a", RETENTION, Duration.ZERO),
            "segmentInterval cannot be zero or negative");
        expectIae(() -> KstateStores.inMemoryVersionedKeyValueStore("a", Duration.ofMillis(-5)),
            "historyRetention cannot be negative");
        KeyValueBytesStoreSupplier s = KstateStores.inMemoryVersionedKeyValueStore("a", RETENTION);
        KstateVersionedStore store = (KstateVersionedStore) s.get();
        Bytes k = Bytes.wrap(new byte[] {1});
        Runnable[] refused = {
            () -> store.put(k, new byte[0]), () -> store.putIfAbsent(k, new byte[0]),
            () -> store.putAll(new ArrayList<>()), () -> store.delete(k), () -> store.range(k, k),
            () -> store.reverseRange(k, k), () -> store.all(), () -> store.reverseAll(),
            () -> store.prefixScan("p", new StringSerializer()), store::approximateNumEntries,
        };
        for (Runnable r : refused) {
            try {
                r.run();
                fail("expected UnsupportedOperationException");
            } catch (UnsupportedOperationException expected) {
                assertTrue(expected.getMessage().startsWith("Versioned key-value stores"));
            }
        }
    }

    private static void expectIae(Supplier<?> call, String message) {
        try {
            call.get();
            fail("expected IllegalArgumentException: " + message);
        } catch (IllegalArgumentException e) {
            assertEquals(message, e.getMessage());
        }
    }

    /**
     * The byte results are Kafka's ValueAndTimestamp layout; IQv2 at READ_COMMITTED sees only
     * what was committed, READ_UNCOMMITTED the writer's versions, each with the position.
     */
    @Test
    public void bytesResultsAndIsolationLevels() {
        Properties props = TestSupport.props("vbytes", dir);
        KstateVersionedStore store = (KstateVersionedStore) KstateStores.persistentVersionedKeyValueStore(STORE,
            RETENTION).get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props, dir);
        store.init(ctx, store);
        try {
            Bytes k = Bytes.wrap("k".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            ctx.setRecordMetadata("in", 0, 4);
            assertEquals(-1L, store.put(k, "a".getBytes(java.nio.charset.StandardCharsets.UTF_8), 100));
            store.commit(java.util.Collections.singletonMap(new org.apache.kafka.common.TopicPartition("c", 0), 0L));
            ctx.setRecordMetadata("in", 0, 5);
            assertEquals(-1L, store.put(k, "b".getBytes(java.nio.charset.StandardCharsets.UTF_8), 200));
            assertArrayEquals(RestoreTest.timestamped(200, "b".getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                store.get(k));
            assertArrayEquals(RestoreTest.timestamped(100, "a".getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                store.get(k, 150));
            assertNull(store.get(k, 99));
            VersionedKeyQuery<Bytes, byte[]> latest = VersionedKeyQuery.withKey(k);
            QueryResult<VersionedRecord<byte[]>> committed = store.query(latest, PositionBound.unbounded(),
                new QueryConfig(false, IsolationLevel.READ_COMMITTED));
            assertEquals(100L, committed.getResult().timestamp());
            assertEquals(Long.valueOf(4), committed.getPosition().getPartitionPositions("in").get(0));
            QueryResult<VersionedRecord<byte[]>> uncommitted = store.query(latest, PositionBound.unbounded(),
                new QueryConfig(false, IsolationLevel.READ_UNCOMMITTED));
            assertEquals(200L, uncommitted.getResult().timestamp());
            assertEquals(Long.valueOf(5), uncommitted.getPosition().getPartitionPositions("in").get(0));
            QueryResult<VersionedRecordIterator<byte[]>> all = store.query(MultiVersionedKeyQuery.<Bytes, byte[]>withKey(k),
                PositionBound.unbounded(), new QueryConfig(false, IsolationLevel.READ_COMMITTED));
            List<Long> times = new ArrayList<>();
            all.getResult().forEachRemaining(v -> times.add(v.timestamp()));
            assertEquals(java.util.Collections.singletonList(100L), times);
            assertArrayEquals(RestoreTest.timestamped(200, "b".getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                store.delete(k, 300));
            assertNull(store.get(k));
            assertEquals(300L, store.streamTime(false));
            assertEquals(100L, store.streamTime(true));
        } finally {
            store.close();
        }
    }
}
