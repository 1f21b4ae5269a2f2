package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.StreamTask;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * A task is never left half switched. A task written by Kafka Streams 4.4's own stores (a
 * timestamped key-value store, which kstate inits first, and a timestamped window store) is
 * restarted on kstate's stores while one of the window store's segments holds a column family
 * kstate does not adopt: the task's init fails naming the window store and why, and both of
 * Kafka's store directories are byte-identical afterwards (every file, {@code LOG} included).
 * Once the blocker is gone, the next start adopts both with Kafka's contents and committed
 * offsets. A third store, on Kafka's own supplier, is left to Kafka: kstate neither checks nor
 * adopts it. Run for a Processor API topology ({@link KstateStores}) and for the windowed
 * DSL application ({@code dsl.store.suppliers.class=KstateDslStoreSuppliers}).
 */
public class AllOrNothingAdoptionTest {
    private static final String APP = "halfswitch";
    private static final String KV = "hs-kv";
    private static final String WIN = "hs-win";
    private static final String KAFKA_ONLY = "hs-kafka";
    private static final Duration RETENTION = Duration.ofMinutes(10);
    private static final Duration WINDOW = Duration.ofMinutes(1);
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("halfswitch");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private static final class Writer implements Processor<String, String, Void, Void> {
        private TimestampedKeyValueStore<String, String> kv;
        private TimestampedWindowStore<String, String> win;
        private KeyValueStore<String, String> kafkaOnly;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            kv = context.getStateStore(KV);
            win = context.getStateStore(WIN);
            kafkaOnly = context.getStateStore(KAFKA_ONLY);
        }

        @Override
        public void process(Record<String, String> r) {
            long ts = r.timestamp();
            kv.put(r.key(), ValueAndTimestamp.make(r.value(), ts));
            win.put(r.key(), ValueAndTimestamp.make(r.value(), ts), ts - ts % WINDOW.toMillis());
            kafkaOnly.put(r.key(), r.value());
        }
    }

    /** The key-value store first: Kafka inits it, and (before this rule) adopted it, before the window store. */
    private static Topology topology(boolean kstate) {
        Topology t = new Topology();
        t.addSource("src", new StringDeserializer(), new StringDeserializer(), "in");
        t.addProcessor("p", Writer::new, "src");
        t.addStateStore(Stores.timestampedKeyValueStoreBuilder(kstate ? KstateStores.persistentTimestampedKeyValueStore(KV)
            : Stores.persistentTimestampedKeyValueStore(KV), Serdes.String(), Serdes.String()).withCachingDisabled(), "p");
        t.addStateStore(Stores.timestampedWindowStoreBuilder(kstate
            ? KstateStores.persistentTimestampedWindowStore(WIN, RETENTION, WINDOW, false)
            : Stores.persistentTimestampedWindowStore(WIN, RETENTION, WINDOW, false), Serdes.String(), Serdes.String())
            .withCachingDisabled(), "p");
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(KAFKA_ONLY), Serdes.String(),
            Serdes.String()).withCachingDisabled(), "p");
        return t;
    }

    /**
     * The case: a windowed DSL application, its stores from {@code dsl.store.suppliers.class}
     * (Kafka's default, then {@link KstateDslStoreSuppliers}), the key-value count first; a third
     * store given Kafka's own supplier explicitly stays on Kafka's implementation.
     */
    private static Topology dslTopology() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> in = b.stream("in", Consumed.with(Serdes.String(), Serdes.String()));
        in.groupByKey().count(Materialized.as(KV));
        in.groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(WINDOW))
            .count(Materialized.<String, Long, org.apache.kafka.streams.state.WindowStore<Bytes, byte[]>>as(WIN)
                .withRetention(RETENTION));
        in.groupByKey().reduce((x, y) -> y, Materialized.<String, String>as(Stores.persistentKeyValueStore(KAFKA_ONLY))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        return b.build();
    }

    private static Properties props(File stateDir, boolean dsl, boolean kstate) {
        Properties p = TestSupport.props(APP, stateDir);
        // no record cache: the stores' own contents are compared (Kafka's cache keeps windows its store expired)
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        if (dsl && kstate) {
            p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class.getName());
        }
        return p;
    }

    private static Topology topology(boolean dsl, boolean kstate) {
        return dsl ? dslTopology() : topology(kstate);
    }

    /** Every entry of both stores, as the driver's typed stores answer them. */
    private static List<String> contents(TopologyTestDriver driver) {
        List<String> out = new ArrayList<>();
        try (KeyValueIterator<String, ValueAndTimestamp<String>> it = driver.<String, String>getTimestampedKeyValueStore(KV)
            .all()) {
            while (it.hasNext()) {
                KeyValue<String, ValueAndTimestamp<String>> e = it.next();
                out.add("kv " + e.key + "=" + e.value);
            }
        }
        try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<String>> it = driver.<String, String>getTimestampedWindowStore(
            WIN).all()) {
            while (it.hasNext()) {
                KeyValue<Windowed<String>, ValueAndTimestamp<String>> e = it.next();
                out.add("win " + e.key + "=" + e.value);
            }
        }
        return out;
    }

    /** The committed changelog offset of each of the two stores. */
    private static Map<String, Long> offsets(TopologyTestDriver driver) {
        Map<String, Long> out = new TreeMap<>();
        out.put(KV, ((StateStore) driver.getTimestampedKeyValueStore(KV)).committedOffset(changelog(KV)));
        out.put(WIN, ((StateStore) driver.getTimestampedWindowStore(WIN)).committedOffset(changelog(WIN)));
        return out;
    }

    private static TopicPartition changelog(String store) {
        return new TopicPartition(APP + "-" + store + "-changelog", 0);
    }

    /** Every file under {@code root} (relative path to bytes) and every directory (to null). */
    private static Map<String, byte[]> snapshot(File root) throws Exception {
        Map<String, byte[]> out = new TreeMap<>();
        try (Stream<Path> paths = Files.walk(root.toPath())) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                String rel = root.toPath().relativize(p).toString();
                out.put(rel, Files.isDirectory(p) ? null : Files.readAllBytes(p));
            }
        }
        return out;
    }

    private static void assertSame(String what, Map<String, byte[]> before, Map<String, byte[]> after) {
        assertEquals(what + ": the same files", before.keySet(), after.keySet());
        for (Map.Entry<String, byte[]> e : before.entrySet()) {
            assertTrue(what + ": " + e.getKey() + " unchanged", Arrays.equals(e.getValue(), after.get(e.getKey())));
        }
    }

    /** Adds (or drops) a column family in one of Kafka's segment databases, with Kafka's own RocksDB. */
    private static void bogusFamily(File segment, boolean add) throws Exception {
        org.rocksdb.RocksDB.loadLibrary();
        List<org.rocksdb.ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        try (org.rocksdb.Options options = new org.rocksdb.Options()) {
            for (byte[] name : org.rocksdb.RocksDB.listColumnFamilies(options, segment.getPath())) {
                descriptors.add(new org.rocksdb.ColumnFamilyDescriptor(name));
            }
        }
        List<org.rocksdb.ColumnFamilyHandle> handles = new ArrayList<>();
        try (org.rocksdb.DBOptions options = new org.rocksdb.DBOptions();
             org.rocksdb.RocksDB db = org.rocksdb.RocksDB.open(options, segment.getPath(), descriptors, handles)) {
            if (add) {
                handles.add(db.createColumnFamily(new org.rocksdb.ColumnFamilyDescriptor("bogus".getBytes(
                    StandardCharsets.UTF_8))));
            } else {
                for (org.rocksdb.ColumnFamilyHandle h : handles) {
                    if (new String(h.getName(), StandardCharsets.UTF_8).equals("bogus")) {
                        db.dropColumnFamily(h);
                    }
                }
            }
            for (org.rocksdb.ColumnFamilyHandle h : handles) {
                h.close();
            }
        }
    }

    @Test
    public void aProcessorApiTaskIsAdoptedAllTogetherOrNotAtAll() throws Exception {
        allOrNothing(false);
    }

    @Test
    public void aWindowedDslTaskIsAdoptedAllTogetherOrNotAtAll() throws Exception {
        allOrNothing(true);
    }

    /** What Kafka's own stores answer when its task closes cleanly: every entry and the committed offsets. */
    private static final class KafkaRun {
        List<String> model;
        Map<String, Long> offsets;
    }

    /** Runs the task on Kafka's own stores, closes it cleanly and copies the state directory to {@code kafkaState}. */
    private KafkaRun kafkaRun(boolean dsl, File kafkaState) throws Exception {
        File kafkaRun = new File(dir, "kafka");
        KafkaRun run = new KafkaRun();
        TopologyTestDriver driver = new TopologyTestDriver(topology(dsl, false), props(kafkaRun, dsl, false));
        try {
            TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
            Random rnd = new Random(26);
            long ts = 1_000_000;
            for (int i = 0; i < 1500; i++) {
                ts += rnd.nextInt(1_500);
                in.pipeInput("k" + rnd.nextInt(40), "v" + i, ts);
            }
            run.model = contents(driver);
            run.offsets = offsets(driver);
            assertNotNull(run.offsets.get(KV));
            assertNotNull(run.offsets.get(WIN));
            Field f = TopologyTestDriver.class.getDeclaredField("task");
            f.setAccessible(true);
            StreamTask task = (StreamTask) f.get(driver);
            task.suspend();
            task.prepareCommit(true);
            task.postCommit(true);
            task.closeClean();
            f.set(driver, null);
            // the task is closed cleanly; the driver's close deletes the state directory
            SegmentAdoptionTest.copyTree(new File(kafkaRun, APP).toPath(), new File(kafkaState, APP).toPath());
        } finally {
            driver.close();
        }
        return run;
    }

    private void allOrNothing(boolean dsl) throws Exception {
        // Kafka's run: the model is what Kafka's stores answer when the task closes.
        File kafkaState = new File(dir, "state");
        KafkaRun run = kafkaRun(dsl, kafkaState);
        List<String> model = run.model;
        Map<String, Long> kafkaOffsets = run.offsets;
        File taskDir = new File(kafkaState, APP + "/0_0");
        File kvDir = new File(taskDir, "rocksdb/" + KV);
        File winDir = new File(taskDir, WIN);
        assertTrue(new File(kvDir, "CURRENT").isFile());
        File[] segments = winDir.listFiles();
        assertNotNull(segments);
        assertTrue("several segments", segments.length >= 2);
        Arrays.sort(segments);
        File blocked = segments[segments.length - 1];
        bogusFamily(blocked, true);
        Map<String, byte[]> kvBefore = snapshot(kvDir);
        Map<String, byte[]> winBefore = snapshot(winDir);
        assertTrue("Kafka's store has its files: " + kvBefore.keySet(), kvBefore.containsKey("CURRENT"));

        KstateProcessorStateException refused = null;
        try (TopologyTestDriver kstate = new TopologyTestDriver(topology(dsl, true), props(kafkaState, dsl, true))) {
            fail("the task must not start while one of its Kafka stores cannot be adopted");
        } catch (RuntimeException e) {
            for (Throwable c = e; c != null && refused == null; c = c.getCause()) {
                if (c instanceof KstateProcessorStateException) {
                    refused = (KstateProcessorStateException) c;
                }
            }
            assertNotNull("kstate's refusal, in " + e, refused);
        }
        // Not half switched: both of Kafka's directories as they were, file for file.
        assertSame(KV, kvBefore, snapshot(kvDir));
        assertSame(WIN, winBefore, snapshot(winDir));
        assertEquals(KstateException.FORMAT_MISMATCH, refused.errorCode());
        String m = refused.getMessage();
        assertTrue(m, m.contains("all together or not at all") && m.contains("1 of them"));
        assertTrue(m, m.contains("store " + WIN + " at ") && m.contains(blocked.getName()) && m.contains("'bogus'"));
        assertFalse(m, m.contains("store " + KV + " at "));

        // The blocker removed, the next start adopts both, with what Kafka's stores held.
        bogusFamily(blocked, false);
        try (TopologyTestDriver kstate = new TopologyTestDriver(topology(dsl, true), props(kafkaState, dsl, true))) {
            assertEquals(model, contents(kstate));
            assertTrue(WIN + " is a kstate store now", new File(winDir, "CURRENT").isFile());
            assertEquals("Kafka's committed offsets carried over", kafkaOffsets, offsets(kstate));
            // (the driver's close deletes the task directory)
            assertFalse("kstate never locked the store left to Kafka",
                new File(taskDir, "rocksdb/." + KAFKA_ONLY + ".kstate-lock").exists());
            assertTrue("kstate's lock of the adopted key-value store", new File(taskDir, "rocksdb/." + KV + ".kstate-lock")
                .exists());
        }
    }

    /**
     * The newest segment of Kafka's window store says it was left open (its application was
     * killed): as Kafka 4.4's own stores do, under {@code exactly_once_v2} the task is reported
     * corrupted ({@code TaskCorruptedException}: Kafka wipes and restores it) with neither of
     * Kafka's directories changed, and under at-least-once both stores are adopted with Kafka's
     * contents and committed offsets.
     */
    @Test
    public void aWindowSegmentLeftOpenCorruptsTheTaskUnderExactlyOnceAndIsAdoptedUnderAtLeastOnce() throws Exception {
        File kafkaState = new File(dir, "state");
        KafkaRun run = kafkaRun(false, kafkaState);
        File taskDir = new File(kafkaState, APP + "/0_0");
        File kvDir = new File(taskDir, "rocksdb/" + KV);
        File winDir = new File(taskDir, WIN);
        File[] segments = winDir.listFiles();
        assertNotNull(segments);
        Arrays.sort(segments);
        MigrationTest.markLeftOpen(segments[segments.length - 1]);
        Map<String, byte[]> kvBefore = snapshot(kvDir);
        Map<String, byte[]> winBefore = snapshot(winDir);

        Properties eos = props(kafkaState, false, true);
        eos.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        org.apache.kafka.streams.errors.TaskCorruptedException corrupted = null;
        try (TopologyTestDriver kstate = new TopologyTestDriver(topology(false, true), eos)) {
            fail("a segment left open must corrupt the task under exactly_once_v2");
        } catch (RuntimeException e) {
            for (Throwable c = e; c != null && corrupted == null; c = c.getCause()) {
                if (c instanceof org.apache.kafka.streams.errors.TaskCorruptedException) {
                    corrupted = (org.apache.kafka.streams.errors.TaskCorruptedException) c;
                }
            }
            assertNotNull("TaskCorruptedException, in " + e, corrupted);
        }
        assertEquals(java.util.Collections.singleton(new org.apache.kafka.streams.processor.TaskId(0, 0)),
            corrupted.corruptedTasks());
        assertSame(KV, kvBefore, snapshot(kvDir));
        assertSame(WIN, winBefore, snapshot(winDir));

        try (TopologyTestDriver kstate = new TopologyTestDriver(topology(false, true), props(kafkaState, false, true))) {
            assertEquals(run.model, contents(kstate));
            assertTrue(WIN + " is a kstate store now", new File(winDir, "CURRENT").isFile());
            assertEquals("Kafka's committed offsets carried over", run.offsets, offsets(kstate));
        }
    }
}
