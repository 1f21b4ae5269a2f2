package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.internals.AbstractTask;
import org.apache.kafka.streams.processor.internals.ProcessorStateManager;
import org.apache.kafka.streams.processor.internals.StateRestoreCallbackAdapter;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedBytesStore;
import org.apache.kafka.streams.state.VersionedBytesStoreSupplier;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * A versioned store restarted inside Kafka Streams' runtime (TopologyTestDriver's real
 * StreamTask and ProcessorStateManager, which commits after every record; a state directory
 * reused across runs): after a clean close, after a SIGKILL of the child JVM running it, and over
 * the directory Kafka's own {@code RocksDBVersionedStore} wrote (adopted in place). Each time the
 * changelog reader starts right after the store's committed offset (nothing committed is
 * replayed), and the store answers, and goes on processing, as a Kafka store that never stopped.
 */
public class VersionedRestartTest {
    private static final String APP = "vrestart";
    private static final TopicPartition CHANGELOG = new TopicPartition(APP + "-" + VersionedStoreTest.STORE
        + "-changelog", 0);
    private static final Duration RETENTION = Duration.ofMillis(1_000);
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("versioned-restart");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private static VersionedBytesStoreSupplier kstate() {
        return KstateStores.persistentVersionedKeyValueStore(VersionedStoreTest.STORE, RETENTION);
    }

    private static VersionedBytesStoreSupplier kafka() {
        return Stores.persistentVersionedKeyValueStore(VersionedStoreTest.STORE, RETENTION);
    }

    private static TopologyTestDriver driver(VersionedBytesStoreSupplier supplier, File stateDir) {
        return new TopologyTestDriver(VersionedStoreTest.processorTopology(supplier), TestSupport.props(APP, stateDir));
    }

    /** Operation {@code i} of the sequence every run shares (the same whichever process pipes it). */
    private static String op(int i) {
        Random r = new Random(i * 31L + 17);
        int what = r.nextInt(10);
        return what < 5 ? "put:" + (r.nextInt(10) == 0 ? "null" : "v" + i) : what < 7 ? "del" : what < 8 ? "get"
            : "getAt:" + (time(i) - r.nextInt(1_600));
    }

    private static long time(int i) {
        return 5_000 + 15L * i;
    }

    private static long timestamp(int i) {
        Random r = new Random(i * 31L + 17);
        r.nextInt(10);
        r.nextInt(10);
        return r.nextInt(3) == 0 ? time(i) - r.nextInt(1_400) : time(i);
    }

    private static boolean writes(int i) {
        return op(i).startsWith("put:") || op(i).equals("del");
    }

    /** Pipes operations {@code [from, to)}; returns the results. */
    private static List<String> pipe(TopologyTestDriver driver, int from, int to) {
        TestInputTopic<String, String> in = driver.createInputTopic("ops", new StringSerializer(), new StringSerializer());
        TestOutputTopic<String, String> results = driver.createOutputTopic("results", new StringDeserializer(),
            new StringDeserializer());
        for (int i = from; i < to; i++) {
            in.pipeInput("k" + new Random(i).nextInt(6), op(i), timestamp(i));
        }
        List<String> out = new ArrayList<>();
        for (org.apache.kafka.streams.test.TestRecord<String, String> r : results.readRecordsToList()) {
            out.add(r.key() + " " + r.value() + " @" + r.timestamp());
        }
        return out;
    }

    /** Where Kafka's changelog reader starts restoring the store from (its next offset to fetch). */
    private static Long restoreStart(TopologyTestDriver driver) throws ReflectiveOperationException {
        Field f = AbstractTask.class.getDeclaredField("stateMgr");
        f.setAccessible(true);
        return ((ProcessorStateManager) f.get(MigrationTest.task(driver))).changelogOffsets().get(CHANGELOG);
    }

    private static KstateVersionedStore store(TopologyTestDriver driver) {
        return (KstateVersionedStore) VersionedStoreTest.inner(driver, VersionedStoreTest.STORE);
    }

    /** Closes the driver's task cleanly and keeps a copy of its state directory in {@code into}. */
    private static void closeCleanlyInto(TopologyTestDriver driver, File stateDir, File into) throws Exception {
        try {
            MigrationTest.closeTaskKeepingState(driver);
            MigrationTest.copyTree(new File(stateDir, APP).toPath(), new File(into, APP).toPath());
        } finally {
            driver.close();
        }
    }

    private static long writesBefore(int n) {
        long w = 0;
        for (int i = 0; i < n; i++) {
            w += writes(i) ? 1 : 0;
        }
        return w;
    }

    /**
     * The restarted store answers as a Kafka store fed operations {@code [0, done)} without a
     * stop, then processes operations {@code [done, done + more)} with the same results.
     */
    private static void answersAsANeverStoppedKafkaStore(TopologyTestDriver restarted, int done, int more, File refDir) {
        try (TopologyTestDriver reference = driver(kafka(), refDir)) {
            pipe(reference, 0, done);
            long streamTime = time(done - 1);
            VersionedStoreTest.iqv2EqualsKafka(reference, restarted, streamTime);
            assertEquals("processing goes on as on a store that never stopped", pipe(reference, done, done + more),
                pipe(restarted, done, done + more));
        }
    }

    @Test
    public void aCleanlyClosedStoreRestartsAtItsCommittedOffsetAndAnswersAsBefore() throws Exception {
        int n = 1_500;
        File first = new File(dir, "first");
        File again = new File(dir, "again");
        TopologyTestDriver driver = driver(kstate(), first);
        pipe(driver, 0, n);
        long committed = writesBefore(n) - 1;
        assertEquals(Long.valueOf(committed), store(driver).committedOffset(CHANGELOG));
        closeCleanlyInto(driver, first, again);
        try (TopologyTestDriver restarted = driver(kstate(), again)) {
            assertEquals(Long.valueOf(committed), store(restarted).committedOffset(CHANGELOG));
            assertEquals("nothing committed is replayed", Long.valueOf(committed + 1), restoreStart(restarted));
            assertEquals("the stream time was committed", timestamps(n), store(restarted).streamTime(true));
            answersAsANeverStoppedKafkaStore(restarted, n, 500, new File(dir, "reference"));
        }
    }

    /** The largest timestamp of a write among operations {@code [0, n)}: the store's stream time. */
    private static long timestamps(int n) {
        long max = -1;
        for (int i = 0; i < n; i++) {
            if (writes(i)) {
                max = Math.max(max, timestamp(i));
            }
        }
        return max;
    }

    /**
     * The child: a TopologyTestDriver on the kstate versioned store, piping the shared
     * operations until it is killed, printing {@code PIPED <n>} every 100.
     *
     * @param args the state directory
     */
    public static void main(String[] args) {
        TopologyTestDriver driver = driver(kstate(), new File(args[0]));
        for (int i = 0; ; i += 100) {
            pipe(driver, i, i + 100);
            System.out.println("PIPED " + (i + 100));
            System.out.flush();
        }
    }

    @Test
    public void aKilledStoreRestartsAtItsLastCommitAndAnswersAsKafka() throws Exception {
        File stateDir = new File(dir, "killed");
        long piped = TestSupport.killAfterPiped(VersionedRestartTest.class, 2_000, stateDir.getAbsolutePath());
        try (TopologyTestDriver restarted = driver(kstate(), stateDir)) {
            Long committed = store(restarted).committedOffset(CHANGELOG);
            assertTrue("every reported record was committed: " + committed, committed >= writesBefore((int) piped) - 1);
            assertEquals("nothing committed is replayed", Long.valueOf(committed + 1), restoreStart(restarted));
            int done = 0;
            while (writesBefore(done) < committed + 1) {
                done++;
            }
            System.out.println("versioned store killed after " + piped + " reported operations: restarted at "
                + "changelog offset " + committed + " (" + done + " operations), nothing replayed");
            answersAsANeverStoppedKafkaStore(restarted, done, 500, new File(dir, "reference"));
        }
    }

    /**
     * An application on Kafka's own versioned store, closed cleanly, restarts on kstate's: the
     * directory {@code <task>/rocksdb/<name>} is adopted in place with Kafka's committed offset
     * (nothing replayed) and answers as Kafka's store that never stopped.
     */
    @Test
    public void kafkasVersionedStoreDirectoryIsAdoptedInPlace() throws Exception {
        int n = 1_500;
        File kafkaRun = new File(dir, "kafka-run");
        File stateDir = new File(dir, "adopted");
        TopologyTestDriver kafka = driver(kafka(), kafkaRun);
        pipe(kafka, 0, n);
        closeCleanlyInto(kafka, kafkaRun, stateDir);
        File kafkaDb = new File(stateDir, APP + "/0_0/rocksdb/" + VersionedStoreTest.STORE);
        assertTrue(new File(kafkaDb, "CURRENT").exists());
        try (TopologyTestDriver restarted = driver(kstate(), stateDir)) {
            KstateVersionedStore store = store(restarted);
            assertEquals(kafkaDb.getCanonicalFile(), store.directory().getCanonicalFile());
            assertFalse("no kstate store beside Kafka's",
                new File(stateDir, APP + "/0_0/" + VersionedStoreTest.STORE).exists());
            long committed = writesBefore(n) - 1;
            assertEquals("Kafka's committed offset is kept", Long.valueOf(committed), store.committedOffset(CHANGELOG));
            assertEquals("nothing committed is replayed", Long.valueOf(committed + 1), restoreStart(restarted));
            assertEquals("the stream time is the newest version's", timestamps(n), store.streamTime(true));
            answersAsANeverStoppedKafkaStore(restarted, n, 500, new File(dir, "reference"));
        }
    }

    /**
     * The way back: a kstate versioned store closed cleanly, {@code kstate export --to kafka}
     * on its state directory, and Kafka 4.4's own {@code RocksDBVersionedStore} opens the result
     * at {@code <task>/rocksdb/<name>}: every latest value, kstate's committed offset (nothing to
     * restore). Kafka 4.4 reads no history of a reopened versioned store (its segment list is not
     * rebuilt on open), so the history is checked the other way round: kstate adopts the exported
     * directory again and answers every as-of read as before the export.
     */
    @Test
    public void aKstateStoreExportedToKafkaOpensInKafkasVersionedStoreAndComesBack() throws Exception {
        int n = 1_500;
        File run = new File(dir, "kstate-run");
        File exported = new File(dir, "exported");
        TopologyTestDriver onKstate = driver(kstate(), run);
        pipe(onKstate, 0, n);
        KstateVersionedStore before = store(onKstate);
        List<String> latest = new ArrayList<>();
        List<String> history = new ArrayList<>();
        for (int k = 0; k < 6; k++) {
            Bytes key = Bytes.wrap(("k" + k).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            latest.add(text(before.get(key)));
            for (long t = time(n - 1) - 1_000; t <= time(n - 1); t += 50) {
                history.add(text(before.get(key, t)));
            }
        }
        long committed = writesBefore(n) - 1;
        assertEquals(Long.valueOf(committed), before.committedOffset(CHANGELOG));
        closeCleanlyInto(onKstate, run, exported);
        String out = TestSupport.runCli(0, "export", "--to", "kafka", new File(exported, APP).getPath());
        assertTrue(out, out.contains("1 store(s) exported"));
        File kafkaDb = new File(exported, APP + "/0_0/rocksdb/" + VersionedStoreTest.STORE);
        assertEquals(java.util.Arrays.asList("default", "offsets"), MigrationTest.columnFamilies(kafkaDb));
        assertFalse(new File(exported, APP + "/0_0/" + VersionedStoreTest.STORE).exists());

        File taskDir = new File(exported, APP + "/0_0");
        VersionedBytesStore kafka = (VersionedBytesStore) kafka().get();
        kafka.init(TestSupport.internalContext(new TestSupport.CapturingContext(TestSupport.props(APP, taskDir), taskDir)),
            kafka);
        try {
            assertEquals("Kafka's store reports kstate's committed offset", Long.valueOf(committed),
                kafka.committedOffset(CHANGELOG));
            List<String> kafkaLatest = new ArrayList<>();
            for (int k = 0; k < 6; k++) {
                kafkaLatest.add(text(kafka.get(Bytes.wrap(("k" + k).getBytes(java.nio.charset.StandardCharsets.UTF_8)))));
            }
            assertEquals("every latest value, read by Kafka's RocksDBVersionedStore", latest, kafkaLatest);
        } finally {
            kafka.close();
        }

        try (TopologyTestDriver back = driver(kstate(), exported)) {
            KstateVersionedStore again = store(back);
            assertEquals(Long.valueOf(committed), again.committedOffset(CHANGELOG));
            assertEquals("nothing committed is replayed", Long.valueOf(committed + 1), restoreStart(back));
            List<String> againHistory = new ArrayList<>();
            for (int k = 0; k < 6; k++) {
                Bytes key = Bytes.wrap(("k" + k).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                for (long t = time(n - 1) - 1_000; t <= time(n - 1); t += 50) {
                    againHistory.add(text(again.get(key, t)));
                }
            }
            assertEquals("every as-of read after the round trip", history, againHistory);
        }
    }

    /**
     * The restore callback Kafka's state manager calls: each changelog record is a put at its
     * record timestamp (null a tombstone), the batch committed with its last offset.
     */
    @Test
    public void restoredChangelogRecordsAreVersionsCommittedWithTheirOffset() {
        KstateVersionedStore store = (KstateVersionedStore) kstate().get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(TestSupport.props(APP, dir), dir);
        store.init(ctx, store);
        try {
            List<ConsumerRecord<byte[], byte[]>> batch = Arrays.asList(record(0, "a", 100), record(1, "b", 300),
                record(2, "c", 200), record(3, null, 400), record(4, "old", -2_000));
            StateRestoreCallbackAdapter.adapt(ctx.restoreCallback).restoreBatch(batch);
            assertEquals(Long.valueOf(4), store.committedOffset(CHANGELOG));
            assertEquals(0L, store.approximateNumUncommittedBytes());
            assertEquals(400L, store.streamTime(true));
            Bytes k = Bytes.wrap("k".getBytes(StandardCharsets.UTF_8));
            assertNull(store.get(k));
            assertEquals("c@200", text(store.get(k, 250)));
            assertEquals("a@100", text(store.get(k, 150)));
            assertEquals("b@300", text(store.get(k, 399)));
            assertNull("older than the retention at its turn: skipped", store.get(k, -1_500));
        } finally {
            store.close();
        }
    }

    private static String text(byte[] valueAndTimestamp) {
        if (valueAndTimestamp == null) {
            return "-";
        }
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(valueAndTimestamp);
        long ts = b.getLong();
        return new String(valueAndTimestamp, 8, valueAndTimestamp.length - 8, StandardCharsets.UTF_8) + "@" + ts;
    }

    private static ConsumerRecord<byte[], byte[]> record(long offset, String value, long timestamp) {
        return new ConsumerRecord<>(CHANGELOG.topic(), 0, offset, timestamp, TimestampType.CREATE_TIME, -1, -1,
            "k".getBytes(StandardCharsets.UTF_8), value == null ? null : value.getBytes(StandardCharsets.UTF_8),
            new RecordHeaders(), Optional.empty());
    }
}
