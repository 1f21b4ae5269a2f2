package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.internals.StreamTask;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.event.Level;

/**
 * Moving an application from Kafka's own RocksDB stores to kstate loses nothing: kstate opens
 * (adopts) the task directory Kafka's store left ({@code <taskDir>/rocksdb/<name>}) and accepts
 * the offsets of a legacy {@code .checkpoint} for it; a store kstate creates empty never accepts
 * offsets for data it does not hold. The Kafka side is written by Kafka's own
 * {@code RocksDBTimestampedStore} through TopologyTestDriver; the kstate side runs Kafka 4.4's
 * real init and legacy-checkpoint migration (ProcessorStateManager, LegacyCheckpointingStateStore).
 */
public class MigrationTest {
    static final String APP = "mig";
    static final TopicPartition CHANGELOG = new TopicPartition(APP + "-s-changelog", 0);
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("migration");
        CapturedLogs.clear();
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    static StreamsBuilder table(KeyValueBytesStoreSupplier supplier) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.table("in", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String>as(supplier).withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
                .withCachingDisabled());
        return builder;
    }

    private static List<String> contents(TopologyTestDriver driver) {
        List<String> out = new ArrayList<>();
        KeyValueStore<String, ValueAndTimestamp<String>> store = driver.getTimestampedKeyValueStore("s");
        try (KeyValueIterator<String, ValueAndTimestamp<String>> it = store.all()) {
            while (it.hasNext()) {
                KeyValue<String, ValueAndTimestamp<String>> kv = it.next();
                out.add(kv.key + "=" + kv.value.value() + "@" + kv.value.timestamp());
            }
        }
        return out;
    }

    private static void writeLegacyCheckpoint(File taskDir, long offset) throws IOException {
        taskDir.mkdirs();
        Files.write(new File(taskDir, ".checkpoint").toPath(),
            ("0\n1\n" + CHANGELOG.topic() + " " + CHANGELOG.partition() + " " + offset + "\n").getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Closes the driver's task cleanly (what TopologyTestDriver#close does, minus the state
     * directory clean-up); the driver's own close then leaves it alone.
     */
    static void closeTaskKeepingState(TopologyTestDriver driver) throws Exception {
        StreamTask task = task(driver);
        task.suspend();
        task.prepareCommit(true);
        task.postCommit(true);
        task.closeClean();
        Field f = TopologyTestDriver.class.getDeclaredField("task");
        f.setAccessible(true);
        f.set(driver, null); // closed above; the driver's own close must not touch it again
    }

    static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> paths = Files.walk(from)) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(p, target);
                }
            }
        }
    }

    /**
     * Runs a topology on Kafka's own persistent timestamped store, closes its task cleanly
     * (what TopologyTestDriver#close does, minus the state directory clean-up) and copies the
     * application's state directory to {@code into}.
     *
     * @return the store's final contents
     */
    private List<String> kafkaWrites(File into, int records) throws Exception {
        return kafkaWrites(into, records, Stores.persistentTimestampedKeyValueStore("s"));
    }

    private List<String> kafkaWrites(File into, int records, KeyValueBytesStoreSupplier supplier) throws Exception {
        return kafkaWrites(into, records, supplier, false);
    }

    /** Kafka 4.4's headers DSL format: {@code dsl.store.format=HEADERS}. */
    static Properties props(File stateDir, boolean headers) {
        Properties p = TestSupport.props(APP, stateDir);
        if (headers) {
            p.put(org.apache.kafka.streams.StreamsConfig.DSL_STORE_FORMAT_CONFIG,
                org.apache.kafka.streams.StreamsConfig.DSL_STORE_FORMAT_HEADERS);
        }
        return p;
    }

    /** Pipes {@code records} records into "in": key-(i % 150), value-i, a header "n" on every third. */
    static void pipeWithHeaders(TopologyTestDriver driver, int records) {
        TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
        for (int i = 0; i < records; i++) {
            org.apache.kafka.common.header.internals.RecordHeaders h =
                new org.apache.kafka.common.header.internals.RecordHeaders();
            if (i % 3 == 0) {
                h.add("n", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
            }
            in.pipeInput(new org.apache.kafka.streams.test.TestRecord<>("key-" + (i % 150), "value-" + i, h,
                1000L + i));
        }
    }

    /** Every entry of the headers-format store "s": value, timestamp and headers. */
    static List<String> headersContents(TopologyTestDriver driver) {
        List<String> out = new ArrayList<>();
        KeyValueStore<String, org.apache.kafka.streams.state.ValueTimestampHeaders<String>> store =
            driver.getTimestampedKeyValueStoreWithHeaders("s");
        try (KeyValueIterator<String, org.apache.kafka.streams.state.ValueTimestampHeaders<String>> it = store.all()) {
            while (it.hasNext()) {
                KeyValue<String, org.apache.kafka.streams.state.ValueTimestampHeaders<String>> kv = it.next();
                out.add(kv.key + "=" + kv.value.value() + "@" + kv.value.timestamp() + kv.value.headers());
            }
        }
        return out;
    }

    private List<String> kafkaWrites(File into, int records, KeyValueBytesStoreSupplier supplier, boolean headers)
        throws Exception {
        File stateDir = new File(dir, "kafka-" + supplier.metricsScope() + "-" + into.getName());
        TopologyTestDriver driver = new TopologyTestDriver(table(supplier).build(), props(stateDir, headers));
        List<String> contents;
        try {
            pipeWithHeaders(driver, records);
            contents = headers ? headersContents(driver) : contents(driver);
            closeTaskKeepingState(driver);
            copyTree(new File(stateDir, APP).toPath(), new File(into, APP).toPath());
        } finally {
            driver.close();
        }
        assertTrue("Kafka's store lives in <taskDir>/rocksdb/s", new File(into, APP + "/0_0/rocksdb/s/CURRENT").isFile());
        return contents;
    }

    /**
     * A task directory left by Kafka's own RocksDB store, plus a legacy .checkpoint (as Kafka
     * Streams 4.2 and older keep offsets), reopened with a kstate store of the same name: kstate
     * opens Kafka's directory in place, holds every entry with its timestamp, and accepts the
     * migrated offset.
     */
    @Test
    public void kstateAdoptsKafkasStoreAndItsLegacyCheckpoint() throws Exception {
        File stateDir = new File(dir, "kstate");
        List<String> kafkaContents = kafkaWrites(stateDir, 400);
        assertEquals(150, kafkaContents.size());
        File taskDir = new File(stateDir, APP + "/0_0");
        writeLegacyCheckpoint(taskDir, 399);
        try (TopologyTestDriver driver = new TopologyTestDriver(
            table(KstateStores.persistentTimestampedKeyValueStore("s")).build(), TestSupport.props(APP, stateDir))) {
            assertEquals("every entry of Kafka's store, values and timestamps", kafkaContents, contents(driver));
            StateStore store = (StateStore) driver.getTimestampedKeyValueStore("s");
            assertEquals("the legacy checkpoint's offset was accepted", Long.valueOf(399L), store.committedOffset(CHANGELOG));
            assertFalse("Kafka deleted the migrated .checkpoint", new File(taskDir, ".checkpoint").exists());
            assertFalse("no empty kstate store beside Kafka's", new File(taskDir, "s").exists());
            assertTrue(CapturedLogs.count(Level.INFO, "adopted") > 0);
            // and it keeps working there
            driver.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("key-0", "after", 5000L);
            assertTrue(contents(driver).contains("key-0=after@5000"));
        }
    }

    /**
     * A legacy .checkpoint but no store data (the data lived elsewhere, or was lost): the kstate
     * store created empty by this init ignores the offsets Kafka migrates to it, so Kafka
     * restores from the changelog instead of trusting an offset for data nobody holds. Once
     * the store holds data, commits carry offsets again.
     */
    @Test
    public void anEmptyNewStoreIgnoresMigratedOffsets() throws Exception {
        File stateDir = new File(dir, "fresh");
        File taskDir = new File(stateDir, APP + "/0_0");
        writeLegacyCheckpoint(taskDir, 399);
        try (TopologyTestDriver driver = new TopologyTestDriver(
            table(KstateStores.persistentTimestampedKeyValueStore("s")).build(), TestSupport.props(APP, stateDir))) {
            StateStore store = (StateStore) driver.getTimestampedKeyValueStore("s");
            assertEquals(0, contents(driver).size());
            assertNull("no offset for data the store does not hold", store.committedOffset(CHANGELOG));
            assertFalse(new File(taskDir, ".checkpoint").exists());
            assertEquals(1, CapturedLogs.count(Level.INFO, "ignoring committed offsets {" + CHANGELOG + "=399}"));
            driver.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("k", "v", 1L);
            assertEquals(1, contents(driver).size());
            assertEquals("the first write's changelog offset", Long.valueOf(0L), store.committedOffset(CHANGELOG));
        }
    }

    /**
     * Kafka 4.4's own timestamped store, cleanly closed, with no legacy checkpoint: its
     * {@code offsets} column family is imported, so kstate reports Kafka's committed offset
     * and holds every entry.
     */
    @Test
    public void kafkasOffsetsColumnFamilyIsImported() throws Exception {
        File stateDir = new File(dir, "offsets");
        List<String> kafkaContents = kafkaWrites(stateDir, 400);
        try (TopologyTestDriver driver = new TopologyTestDriver(
            table(KstateStores.persistentTimestampedKeyValueStore("s")).build(), TestSupport.props(APP, stateDir))) {
            assertEquals(kafkaContents, contents(driver));
            StateStore store = (StateStore) driver.getTimestampedKeyValueStore("s");
            assertEquals("Kafka's committed offset, from its offsets family", Long.valueOf(399L),
                store.committedOffset(CHANGELOG));
        }
    }

    /**
     * Kafka's plain {@code RocksDBStore} reopened by a timestamped kstate store: adopted in
     * upgrade mode, every value readable with timestamp -1 (as Kafka's own adapter shows it).
     */
    @Test
    public void aPlainKafkaStoreIsUpgradedInPlace() throws Exception {
        File stateDir = new File(dir, "plain");
        List<String> kafkaContents = kafkaWrites(stateDir, 300, Stores.persistentKeyValueStore("s"));
        assertEquals(150, kafkaContents.size());
        try (TopologyTestDriver driver = new TopologyTestDriver(
            table(KstateStores.persistentTimestampedKeyValueStore("s")).build(), TestSupport.props(APP, stateDir))) {
            List<String> upgraded = contents(driver);
            assertEquals(kafkaContents.size(), upgraded.size());
            for (int i = 0; i < upgraded.size(); i++) {
                String kafka = kafkaContents.get(i);
                assertEquals(kafka.substring(0, kafka.lastIndexOf('@')) + "@-1", upgraded.get(i));
            }
            driver.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("key-1", "new", 7L);
            assertTrue(contents(driver).contains("key-1=new@7"));
        }
    }

    static List<String> columnFamilies(File db) throws Exception {
        List<String> out = new ArrayList<>();
        for (byte[] name : org.rocksdb.RocksDB.listColumnFamilies(new org.rocksdb.Options(), db.getPath())) {
            out.add(new String(name, StandardCharsets.UTF_8));
        }
        java.util.Collections.sort(out);
        return out;
    }

    private void assertRefused(File stateDir, String says) throws Exception {
        File kafkaDb = new File(stateDir, APP + "/0_0/rocksdb/s");
        List<String> before = columnFamilies(kafkaDb);
        try (TopologyTestDriver driver = new TopologyTestDriver(
            table(KstateStores.persistentTimestampedKeyValueStore("s")).build(), TestSupport.props(APP, stateDir))) {
            org.junit.Assert.fail("kstate must refuse this directory");
        } catch (RuntimeException e) {
            Throwable t = e;
            while (t != null && !(t instanceof KstateException)) {
                t = t.getCause();
            }
            assertTrue("a kstate error: " + e, t != null);
            assertTrue(t.getMessage(), t.getMessage().contains(says));
        }
        assertEquals("refusing changed nothing", before, columnFamilies(kafkaDb));
        assertFalse(new File(kafkaDb.getParentFile().getParentFile(), "s").exists());
    }

    /**
     * Kafka 4.4's headers-format store (KIP-1271, written under {@code dsl.store.format=HEADERS})
     * is refused untouched by a timestamped kstate store (it cannot hold headers), and adopted
     * in place by kstate's headers store: every entry with its timestamp and headers, and
     * Kafka's committed offset, no restore.
     */
    @Test
    public void aHeadersFormatKafkaStoreIsAdoptedByTheHeadersStore() throws Exception {
        File stateDir = new File(dir, "headers");
        List<String> kafkaContents = kafkaWrites(stateDir, 400, Stores.persistentTimestampedKeyValueStoreWithHeaders("s"),
            true);
        assertEquals(150, kafkaContents.size());
        assertTrue(columnFamilies(new File(stateDir, APP + "/0_0/rocksdb/s")).contains("keyValueWithTimestampAndHeaders"));
        assertRefused(stateDir, "cannot be opened timestamped");
        try (TopologyTestDriver driver = new TopologyTestDriver(
            table(KstateStores.persistentTimestampedKeyValueStoreWithHeaders("s")).build(), props(stateDir, true))) {
            assertEquals("every entry with timestamp and headers", kafkaContents, headersContents(driver));
            StateStore store = driver.getAllStateStores().get("s");
            assertEquals("Kafka's committed offset, from its offsets family", Long.valueOf(399L),
                store.committedOffset(CHANGELOG));
            assertFalse("no kstate store beside Kafka's", new File(stateDir, APP + "/0_0/s").exists());
            driver.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("key-0", "after", 5000L);
            assertTrue(headersContents(driver).stream().anyMatch(e -> e.startsWith("key-0=after@5000")));
        }
    }

    /** Sets {@code status} = 1 (left open) in the {@code offsets} family of Kafka's store {@code kafkaDb}. */
    static void markLeftOpen(File kafkaDb) throws Exception {
        List<org.rocksdb.ColumnFamilyDescriptor> cfs = new ArrayList<>();
        for (String name : columnFamilies(kafkaDb)) {
            cfs.add(new org.rocksdb.ColumnFamilyDescriptor(name.getBytes(StandardCharsets.UTF_8)));
        }
        List<org.rocksdb.ColumnFamilyHandle> handles = new ArrayList<>();
        try (org.rocksdb.DBOptions options = new org.rocksdb.DBOptions();
             org.rocksdb.RocksDB db = org.rocksdb.RocksDB.open(options, kafkaDb.getPath(), cfs, handles)) {
            int offsets = columnFamilies(kafkaDb).indexOf("offsets");
            db.put(handles.get(offsets), "status".getBytes(StandardCharsets.UTF_8),
                java.nio.ByteBuffer.allocate(8).putLong(1L).array());
            for (org.rocksdb.ColumnFamilyHandle h : handles) {
                h.close();
            }
        }
    }

    /** Every file under {@code root} with its bytes' hash, to show a refusal changed nothing. */
    static java.util.Map<String, Integer> snapshot(File root) throws IOException {
        java.util.Map<String, Integer> out = new java.util.TreeMap<>();
        try (Stream<Path> paths = Files.walk(root.toPath())) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                if (Files.isRegularFile(p)) {
                    out.put(root.toPath().relativize(p).toString(), java.util.Arrays.hashCode(Files.readAllBytes(p)));
                }
            }
        }
        return out;
    }

    /** Properties of the application under {@code exactly_once_v2}. */
    static Properties eosProps(File stateDir) {
        Properties p = props(stateDir, false);
        p.put(org.apache.kafka.streams.StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
            org.apache.kafka.streams.StreamsConfig.EXACTLY_ONCE_V2);
        return p;
    }

    /**
     * A Kafka store whose {@code status} says it was left open (its process died) is treated as
     * Kafka 4.4 treats its own RocksDB store, which runs here on a copy of the same directory:
     * under at-least-once (the default) both open it with its data and committed offset; under
     * {@code exactly_once_v2} both report the task corrupted ({@code TaskCorruptedException}, which
     * makes Kafka Streams wipe the task and restore it), and kstate changes nothing.
     */
    @Test
    public void aKafkaStoreLeftOpenIsAdoptedUnderAtLeastOnceAndCorruptsTheTaskUnderExactlyOnce() throws Exception {
        File stateDir = new File(dir, "open");
        List<String> kafkaContents = kafkaWrites(stateDir, 50);
        markLeftOpen(new File(stateDir, APP + "/0_0/rocksdb/s"));
        List<KeyValueBytesStoreSupplier> suppliers = java.util.Arrays.asList(
            Stores.persistentTimestampedKeyValueStore("s"), KstateStores.persistentTimestampedKeyValueStore("s"));
        for (KeyValueBytesStoreSupplier supplier : suppliers) {
            String who = supplier.getClass().getSimpleName();
            File eos = new File(dir, "eos-" + who);
            copyTree(new File(stateDir, APP).toPath(), new File(eos, APP).toPath());
            java.util.Map<String, Integer> before = snapshot(eos);
            try (TopologyTestDriver driver = new TopologyTestDriver(table(supplier).build(), eosProps(eos))) {
                org.junit.Assert.fail(who + ": a store left open must corrupt the task under exactly_once_v2");
            } catch (RuntimeException e) {
                Throwable t = e;
                while (t != null && !(t instanceof org.apache.kafka.streams.errors.TaskCorruptedException)) {
                    t = t.getCause();
                }
                assertTrue(who + ": TaskCorruptedException, not " + e, t != null);
                assertEquals(who, java.util.Collections.singleton(new org.apache.kafka.streams.processor.TaskId(0, 0)),
                    ((org.apache.kafka.streams.errors.TaskCorruptedException) t).corruptedTasks());
            }
            if (supplier instanceof KstateKeyValueBytesStoreSupplier) {
                assertEquals("kstate changed nothing", before, snapshot(eos));
            }
        }
        // At-least-once: Kafka's own store on a copy, kstate on the original.
        File alos = new File(dir, "alos-kafka");
        copyTree(new File(stateDir, APP).toPath(), new File(alos, APP).toPath());
        try (TopologyTestDriver driver = new TopologyTestDriver(table(suppliers.get(0)).build(), props(alos, false))) {
            assertEquals(kafkaContents, contents(driver));
            assertEquals(Long.valueOf(49L), driver.getAllStateStores().get("s").committedOffset(CHANGELOG));
        }
        try (TopologyTestDriver driver = new TopologyTestDriver(table(suppliers.get(1)).build(), props(stateDir, false))) {
            assertEquals("Kafka's data", kafkaContents, contents(driver));
            assertEquals("Kafka's committed offset", Long.valueOf(49L),
                driver.getAllStateStores().get("s").committedOffset(CHANGELOG));
            assertTrue(kstateStore(driver).directory().getPath().endsWith("rocksdb" + File.separator + "s"));
            assertFalse("no kstate store beside Kafka's", new File(stateDir, APP + "/0_0/s").exists());
            assertEquals(1, CapturedLogs.count(Level.INFO, "a store left open (its process killed) is adopted"));
        }
    }

    /** Counts per key of "in" in store "s" (no cache), each new count to "out". */
    static StreamsBuilder counts(KeyValueBytesStoreSupplier supplier) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .count(Materialized.<String, Long>as(supplier).withKeySerde(Serdes.String()).withValueSerde(Serdes.Long())
                .withCachingDisabled())
            .toStream()
            .to("out", org.apache.kafka.streams.kstream.Produced.with(Serdes.String(), Serdes.Long()));
        return builder;
    }

    /** Pipes records {@code from..to-1} (key-(i % keys), increasing timestamps) and returns the outputs they caused. */
    static List<String> pipe(TopologyTestDriver driver, int from, int to, int keys) {
        TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
        org.apache.kafka.streams.TestOutputTopic<String, Long> out = driver.createOutputTopic("out",
            new org.apache.kafka.common.serialization.StringDeserializer(),
            new org.apache.kafka.common.serialization.LongDeserializer());
        out.readRecordsToList(); // only this call's outputs
        for (int i = from; i < to; i++) {
            in.pipeInput("key-" + (i % keys), "v" + i, 10_000L + i);
        }
        List<String> outputs = new ArrayList<>();
        for (org.apache.kafka.streams.test.TestRecord<String, Long> r : out.readRecordsToList()) {
            outputs.add(r.key() + "=" + r.value() + "@" + r.timestamp());
        }
        return outputs;
    }

    static List<String> counts(TopologyTestDriver driver) {
        List<String> out = new ArrayList<>();
        KeyValueStore<String, Long> store = driver.getKeyValueStore("s");
        try (KeyValueIterator<String, Long> it = store.all()) {
            it.forEachRemaining(kv -> out.add(kv.key + "=" + kv.value));
        }
        return out;
    }

    /**
     * Suspends, commits and closes the driver's task cleanly (what TopologyTestDriver#close
     * does, minus the state directory clean-up), copies the application's state directory
     * {@code stateDir} into {@code into}, and closes the driver.
     */
    static void closeCleanlyInto(TopologyTestDriver driver, File stateDir, File into) throws Exception {
        try {
            closeTaskKeepingState(driver);
            copyTree(new File(stateDir, APP).toPath(), new File(into, APP).toPath());
        } finally {
            driver.close();
        }
    }

    static StreamTask task(TopologyTestDriver driver) throws ReflectiveOperationException {
        Field f = TopologyTestDriver.class.getDeclaredField("task");
        f.setAccessible(true);
        return (StreamTask) f.get(driver);
    }

    /** Where Kafka's changelog reader would start restoring "s" from (its next offset to fetch). */
    static Long restoreStart(TopologyTestDriver driver) throws ReflectiveOperationException {
        Field f = org.apache.kafka.streams.processor.internals.AbstractTask.class.getDeclaredField("stateMgr");
        f.setAccessible(true);
        org.apache.kafka.streams.processor.internals.ProcessorStateManager stateMgr =
            (org.apache.kafka.streams.processor.internals.ProcessorStateManager) f.get(task(driver));
        return stateMgr.changelogOffsets().get(CHANGELOG);
    }

    private static KstateKeyValueStore kstateStore(TopologyTestDriver driver) {
        StateStore s = driver.getAllStateStores().get("s");
        while (s instanceof org.apache.kafka.streams.state.internals.WrappedStateStore) {
            s = ((org.apache.kafka.streams.state.internals.WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        assertTrue("a kstate store: " + s, s instanceof KstateKeyValueStore);
        return (KstateKeyValueStore) s;
    }

    /**
     * Issue #10 item 4: an application runs on Kafka's built-in plain {@code RocksDBStore} over a
     * state directory, is closed cleanly, and restarts with a kstate timestamped store on the same
     * directory. Every entry and the committed offset survive; Kafka's own state manager finds
     * the store at the changelog's end, so its changelog reader has nothing to restore; the store
     * runs in upgrade mode in Kafka's directory (no second store beside it); processing continues
     * with outputs (key, count, timestamp) equal to a run that never switched. Then the store is
     * upgraded by swap between two commits (Processor API style, on the stream thread) and
     * processing goes on, still equal to that run.
     */
    @Test
    public void anAppOnKafkasPlainStoreRestartsOnKstateWithoutRestoreAndTheSameOutputs() throws Exception {
        final int keys = 60;
        final int phase1 = 300;
        final int phase2 = 500;
        final int phase3 = 620;
        // The run that never switches: Kafka's plain store throughout.
        List<String> refOut1;
        List<String> refOut2;
        List<String> refOut3;
        List<String> refAfter2;
        List<String> refAfter3;
        File refDir = new File(dir, "never-switched");
        try (TopologyTestDriver ref = new TopologyTestDriver(counts(Stores.persistentKeyValueStore("s")).build(),
            TestSupport.props(APP, refDir))) {
            refOut1 = pipe(ref, 0, phase1, keys);
            refOut2 = pipe(ref, phase1, phase2, keys);
            refAfter2 = counts(ref);
            refOut3 = pipe(ref, phase2, phase3, keys);
            refAfter3 = counts(ref);
        }
        assertEquals(phase1, refOut1.size());
        assertEquals(keys, refAfter2.size());

        // The same application on Kafka's plain store, phase 1, closed cleanly.
        File kafkaDir = new File(dir, "kafka-plain-app");
        File stateDir = new File(dir, "switched");
        List<String> kafkaCounts;
        TopologyTestDriver kafka = new TopologyTestDriver(counts(Stores.persistentKeyValueStore("s")).build(),
            TestSupport.props(APP, kafkaDir));
        try {
            assertEquals(refOut1, pipe(kafka, 0, phase1, keys));
            kafkaCounts = counts(kafka);
        } finally {
            closeCleanlyInto(kafka, kafkaDir, stateDir);
        }
        File kafkaDb = new File(stateDir, APP + "/0_0/rocksdb/s");
        assertEquals("Kafka's plain RocksDBStore: default and offsets only",
            java.util.Arrays.asList("default", "offsets"), columnFamilies(kafkaDb));

        // Restart with kstate timestamped stores on the same directory.
        try (TopologyTestDriver driver = new TopologyTestDriver(
            counts(KstateStores.persistentTimestampedKeyValueStore("s")).build(), TestSupport.props(APP, stateDir))) {
            KstateKeyValueStore store = kstateStore(driver);
            assertTrue("Kafka's directory adopted in upgrade mode", store.isUpgrading());
            assertEquals(kafkaDb.getCanonicalFile(), store.directory().getCanonicalFile());
            assertFalse("no kstate store beside Kafka's", new File(stateDir, APP + "/0_0/s").exists());
            assertEquals("every entry survives", kafkaCounts, counts(driver));
            assertEquals("the committed offset survives", Long.valueOf(phase1 - 1L), store.committedOffset(CHANGELOG));
            assertEquals("Kafka's state manager starts the changelog at its end: nothing to restore",
                Long.valueOf(phase1), restoreStart(driver));

            assertEquals("outputs equal to the run that never switched", refOut2, pipe(driver, phase1, phase2, keys));
            assertEquals(refAfter2, counts(driver));
            // Commits go on (TopologyTestDriver's producer numbers a new driver's changelog
            // records from 0 again: this is the offset of the 200th record written after the restart).
            long committed = phase2 - phase1 - 1L;
            assertEquals(Long.valueOf(committed), store.committedOffset(CHANGELOG));

            // Between commits (TopologyTestDriver commits after each record): finish the upgrade by swap.
            assertEquals(0L, store.approximateNumUncommittedBytes());
            assertTrue(store.isUpgrading());
            List<long[]> calls = new ArrayList<>();
            long copied = store.upgradeBySwap((done, total) -> calls.add(new long[] {done, total}));
            assertEquals("every key copied", keys, copied);
            assertFalse(calls.isEmpty());
            long[] last = calls.get(calls.size() - 1);
            assertEquals(copied, last[0]);
            assertEquals(last[0], last[1]);
            assertFalse("regular mode after the swap", store.isUpgrading());
            assertEquals("the offset survives the swap", Long.valueOf(committed), store.committedOffset(CHANGELOG));
            assertEquals(refAfter2, counts(driver));
            assertEquals("a pure timestamped store in Kafka's directory (its default family empty)",
                java.util.Arrays.asList("default", "keyValueWithTimestamp", "kstate_meta", "kstate_spill"),
                columnFamilies(kafkaDb));

            assertEquals("outputs still equal after the swap", refOut3, pipe(driver, phase2, phase3, keys));
            assertEquals(refAfter3, counts(driver));
        }
    }
}
