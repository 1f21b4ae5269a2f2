package dev.kstate.streams;

import static dev.kstate.streams.MigrationTest.APP;
import static dev.kstate.streams.MigrationTest.CHANGELOG;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.Stores;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The way back (issue #26): an application runs on kstate stores, is closed cleanly,
 * {@code kstate export --to kafka} hands its state directory to Kafka Streams' own stores, and
 * the same application restarts on Kafka 4.4's {@code RocksDBTimestampedStore} (or plain
 * {@code RocksDBStore}): every entry is there, Kafka reports kstate's committed offset and its
 * changelog reader has nothing to restore, and processing goes on with the outputs of a run
 * that never switched. Then the door is used the other way again: kstate adopts the store
 * Kafka just wrote, and processing still matches.
 */
public class ExportToKafkaTest {
    private static final int KEYS = 60;
    private static final int PHASE1 = 300;
    private static final int PHASE2 = 450;
    private static final int PHASE3 = 560;

    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("export");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    @Test
    public void timestampedStoresGoBackToKafkasRocksDBTimestampedStoreAndReturn() throws Exception {
        roundTrip(KstateStores.persistentTimestampedKeyValueStore("s"), Stores.persistentTimestampedKeyValueStore("s"),
            Arrays.asList("default", "keyValueWithTimestamp", "offsets"));
    }

    @Test
    public void plainStoresGoBackToKafkasRocksDBStoreAndReturn() throws Exception {
        roundTrip(KstateStores.persistentKeyValueStore("s"), Stores.persistentKeyValueStore("s"),
            Arrays.asList("default", "offsets"));
    }

    /**
     * kstate's own files, unexported, are readable by Kafka 4.4's RocksDB too: a kstate store
     * whose writer was killed mid-work (a write-ahead log to replay, tables kstate wrote) opens
     * read-write in rocksdbjni with all its column families, and its committed entries are there.
     */
    @Test
    public void kafkasRocksDbOpensAKstateStoreKilledMidWrite() throws Exception {
        String worker = TestSupport.kstateTestWorker();
        File store = new File(dir, "killed");
        // Restores on small memtables: table files (flushed and ingested) as well as a log.
        Process p = new ProcessBuilder(worker, "crash-worker", "--dir", store.getPath(), "--seed", "7",
            "--restore-percent", "50").redirectErrorStream(true).start();
        java.io.BufferedReader out = new java.io.BufferedReader(
            new java.io.InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        assertTrue(out.readLine().startsWith("ready"));
        Thread.sleep(400);
        p.destroyForcibly().waitFor();
        String[] tables = store.list((d, n) -> n.endsWith(".sst"));
        assertTrue("kstate wrote table files", tables != null && tables.length > 0);
        List<byte[]> names = org.rocksdb.RocksDB.listColumnFamilies(new org.rocksdb.Options(), store.getPath());
        List<org.rocksdb.ColumnFamilyDescriptor> descriptors = new java.util.ArrayList<>();
        for (byte[] n : names) {
            descriptors.add(new org.rocksdb.ColumnFamilyDescriptor(n));
        }
        List<org.rocksdb.ColumnFamilyHandle> handles = new java.util.ArrayList<>();
        long entries = 0;
        try (org.rocksdb.DBOptions options = new org.rocksdb.DBOptions();
             org.rocksdb.RocksDB db = org.rocksdb.RocksDB.open(options, store.getPath(), descriptors, handles)) {
            for (int i = 0; i < names.size(); i++) {
                if (new String(names.get(i), StandardCharsets.UTF_8).equals("keyValueWithTimestamp")) {
                    try (org.rocksdb.RocksIterator it = db.newIterator(handles.get(i))) {
                        for (it.seekToFirst(); it.isValid(); it.next()) {
                            entries++;
                        }
                    }
                }
            }
            handles.forEach(org.rocksdb.ColumnFamilyHandle::close);
        }
        assertTrue("Kafka's RocksDB " + org.rocksdb.RocksDB.rocksdbVersion() + " read kstate's entries", entries > 0);
    }

    /**
     * A headers-format kstate store (records with and without headers) exported and opened by
     * Kafka 4.4's own {@code RocksDBTimestampedStoreWithHeaders} ({@code dsl.store.format=headers}):
     * every value with its timestamp and headers, Kafka's committed offset, and writes go on.
     */
    @Test
    public void headersStoresGoBackToKafkasHeadersStore() throws Exception {
        File run1 = new File(dir, "headers-kstate");
        File exported = new File(dir, "headers-exported");
        TopologyTestDriver onKstate = new TopologyTestDriver(
            MigrationTest.table(KstateStores.persistentTimestampedKeyValueStoreWithHeaders("s")).build(),
            MigrationTest.props(run1, true));
        List<String> contents;
        try {
            MigrationTest.pipeWithHeaders(onKstate, 400);
            contents = MigrationTest.headersContents(onKstate);
            assertEquals(Long.valueOf(399L), onKstate.getAllStateStores().get("s").committedOffset(CHANGELOG));
        } catch (RuntimeException e) {
            onKstate.close();
            throw e;
        }
        MigrationTest.closeCleanlyInto(onKstate, run1, exported);
        export(exported);
        assertEquals(Arrays.asList("default", "keyValueWithTimestampAndHeaders", "offsets"),
            MigrationTest.columnFamilies(new File(exported, APP + "/0_0/rocksdb/s")));
        try (TopologyTestDriver onKafka = new TopologyTestDriver(
            MigrationTest.table(Stores.persistentTimestampedKeyValueStoreWithHeaders("s")).build(),
            MigrationTest.props(exported, true))) {
            assertEquals("every value, timestamp and headers, read by Kafka's headers store", contents,
                MigrationTest.headersContents(onKafka));
            assertEquals("Kafka reports kstate's committed offset", Long.valueOf(399L),
                onKafka.getAllStateStores().get("s").committedOffset(CHANGELOG));
            onKafka.createInputTopic("in", new org.apache.kafka.common.serialization.StringSerializer(),
                new org.apache.kafka.common.serialization.StringSerializer()).pipeInput("key-0", "after", 5000L);
            assertTrue(MigrationTest.headersContents(onKafka).stream().anyMatch(e -> e.startsWith("key-0=after@5000")));
        }
    }

    private static Long committed(TopologyTestDriver driver) {
        return ((StateStore) driver.getKeyValueStore("s")).committedOffset(CHANGELOG);
    }

    private static String export(File stateDir) throws Exception {
        return TestSupport.runCli(0, "export", "--to", "kafka", new File(stateDir, APP).getPath());
    }

    private void roundTrip(KeyValueBytesStoreSupplier kstate, KeyValueBytesStoreSupplier kafka, List<String> families)
        throws Exception {
        // The run that never switches: Kafka's own store throughout.
        List<String> refOut1;
        List<String> refOut2;
        List<String> refOut3;
        List<String> refAfter1;
        List<String> refAfter2;
        try (TopologyTestDriver ref = new TopologyTestDriver(MigrationTest.counts(kafka).build(),
            TestSupport.props(APP, new File(dir, "never-switched")))) {
            refOut1 = MigrationTest.pipe(ref, 0, PHASE1, KEYS);
            refAfter1 = MigrationTest.counts(ref);
            refOut2 = MigrationTest.pipe(ref, PHASE1, PHASE2, KEYS);
            refAfter2 = MigrationTest.counts(ref);
            refOut3 = MigrationTest.pipe(ref, PHASE2, PHASE3, KEYS);
        }

        // Phase 1 on kstate, closed cleanly.
        File run1 = new File(dir, "run1");
        File exported = new File(dir, "exported");
        TopologyTestDriver onKstate = new TopologyTestDriver(MigrationTest.counts(kstate).build(),
            TestSupport.props(APP, run1));
        assertEquals(refOut1, MigrationTest.pipe(onKstate, 0, PHASE1, KEYS));
        assertEquals(Long.valueOf(PHASE1 - 1L), committed(onKstate));
        MigrationTest.closeCleanlyInto(onKstate, run1, exported);
        File taskDir = new File(exported, APP + "/0_0");
        assertTrue("kstate's own store directory", new File(taskDir, "s/CURRENT").isFile());

        // The way back, by the CLI.
        String out = export(exported);
        assertTrue(out, out.contains("1 store(s) exported to Kafka's stores, 0 not exported"));
        File kafkaDb = new File(taskDir, "rocksdb/s");
        assertEquals("only Kafka's column families", families, MigrationTest.columnFamilies(kafkaDb));
        try (Stream<Path> paths = Files.walk(taskDir.toPath())) {
            List<String> kstateFiles = paths.map(p -> p.getFileName().toString())
                .filter(n -> n.contains("kstate")).collect(Collectors.toList());
            assertEquals("no kstate file left", Arrays.asList(), kstateFiles);
        }
        assertFalse("kstate's directory is gone", new File(taskDir, "s").exists());

        // Phase 2 on Kafka 4.4's own store, in the exported directory.
        File back = new File(dir, "back");
        TopologyTestDriver onKafka = new TopologyTestDriver(MigrationTest.counts(kafka).build(),
            TestSupport.props(APP, exported));
        assertEquals("every entry, read by Kafka's own store", refAfter1, MigrationTest.counts(onKafka));
        assertEquals("Kafka reports kstate's committed offset", Long.valueOf(PHASE1 - 1L), committed(onKafka));
        assertEquals("Kafka's changelog reader starts at the end: nothing to restore", Long.valueOf(PHASE1),
            MigrationTest.restoreStart(onKafka));
        assertEquals("outputs equal to the run that never switched", refOut2,
            MigrationTest.pipe(onKafka, PHASE1, PHASE2, KEYS));
        assertEquals(refAfter2, MigrationTest.counts(onKafka));
        // TopologyTestDriver numbers a new driver's changelog records from 0 again.
        long committedByKafka = PHASE2 - PHASE1 - 1L;
        assertEquals(Long.valueOf(committedByKafka), committed(onKafka));
        MigrationTest.closeCleanlyInto(onKafka, exported, back);

        // And the first direction again: kstate adopts the store Kafka wrote.
        try (TopologyTestDriver again = new TopologyTestDriver(MigrationTest.counts(kstate).build(),
            TestSupport.props(APP, back))) {
            assertEquals(refAfter2, MigrationTest.counts(again));
            assertEquals(Long.valueOf(committedByKafka), committed(again));
            assertEquals(refOut3, MigrationTest.pipe(again, PHASE2, PHASE3, KEYS));
            assertFalse("kstate adopted Kafka's directory", new File(back, APP + "/0_0/s").exists());
        }
    }
}
