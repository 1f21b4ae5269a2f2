package dev.kstate.streams;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeFalse;
import static org.junit.Assume.assumeTrue;

import dev.kstate.internal.LockProbe;
import dev.kstate.internal.ParkedStores;
import java.io.File;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.StateStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.slf4j.event.Level;

/**
 * Kafka Streams' start-up path, for real: {@code KafkaStreams#start()} (Kafka 4.4) opens the
 * stores of every non-empty task directory with its {@code StartupContext}, commits and closes
 * them. The application here points at a port nothing listens on, so its tasks are never
 * assigned: what the start-up path did is all that happens, and the test plays the part of the
 * later initialisation (or of nobody, for the deadline).
 *
 * <p>Each task directory {@code 0_0} is prepared with a key-value, a window and a session store
 * holding a few committed records, as a previous run would have left them.
 *
 * <p>Every test runs twice: with {@code kstate.startup.defer.open} (the default: the path is
 * answered from each store's offsets hint and the stores open in the background) and without
 * it (the path opens each store itself).
 */
@RunWith(Parameterized.class)
public class StartupParkingTest {
    /** @return the two start-up modes */
    @Parameterized.Parameters(name = "defer={0}")
    public static Collection<Object[]> modes() {
        return Arrays.asList(new Object[] {true}, new Object[] {false});
    }

    /** Whether the start-up path defers the opens (kstate.startup.defer.open). */
    @Parameterized.Parameter
    public boolean defer;

    private static final String APP = "park-app";
    private static final long COMMITTED = 41L;
    private File stateDir;
    private File taskDir;
    private KafkaStreams streams;

    /** Kafka Streams 4.3+ opens the stores of local task directories in {@code KafkaStreams#start()}; older ones do not. */
    private static final boolean STARTUP_PATH = hasStartupPath();

    private static boolean hasStartupPath() {
        try {
            Class.forName(StartupParking.STARTUP_CONTEXT);
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    @Before
    public void setUp() throws Exception {
        ParkedStores.closeAll("test set-up");
        stateDir = TestSupport.tempDir("park");
        taskDir = new File(new File(stateDir, APP), "0_0");
        assertTrue(taskDir.mkdirs());
        prepare();
        CapturedLogs.clear();
    }

    @After
    public void tearDown() {
        if (streams != null) {
            streams.close(Duration.ofSeconds(30));
        }
        ParkedStores.closeAll("test tear-down");
        TestSupport.deleteTree(stateDir);
    }

    // ----- the application and its stores --------------------------------------------------

    // Concrete types: commit(Map) and committedOffset are not on Kafka 4.0-4.2's interfaces.
    private static KstateKeyValueStore kvStore(KstateStoreOptions.Builder b) {
        return (KstateKeyValueStore) b.build().get();
    }

    private static KstateKeyValueStore kvStore() {
        return (KstateKeyValueStore) KstateStores.persistentTimestampedKeyValueStore("kv").get();
    }

    private static KstateWindowStore windowStore() {
        return (KstateWindowStore) KstateStores.persistentTimestampedWindowStore("win", Duration.ofHours(1),
            Duration.ofMinutes(1), false).get();
    }

    private static KstateSessionStore sessionStore() {
        return (KstateSessionStore) KstateStores.persistentSessionStore("ses", Duration.ofHours(1)).get();
    }

    private static TopicPartition changelog(String store) {
        return changelog(store, 0);
    }

    private static TopicPartition changelog(String store, int partition) {
        return new TopicPartition(APP + "-" + store + "-changelog", partition);
    }

    private static byte[] ts(long timestamp, long value) {
        return ByteBuffer.allocate(16).putLong(timestamp).putLong(value).array();
    }

    private static Bytes key(int i) {
        return Bytes.wrap(("k" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    private Properties props(long parkMs) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1"); // nothing listens: no task is ever assigned
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.getAbsolutePath());
        p.put(StreamsConfig.STATE_CLEANUP_DELAY_MS_CONFIG, 600_000L);
        p.put(KstateStoreOptions.STARTUP_PARK_MS_CONFIG, parkMs);
        p.put(KstateStoreOptions.STARTUP_DEFER_OPEN_CONFIG, defer);
        p.put(StreamsConfig.METRIC_REPORTER_CLASSES_CONFIG, AddedMetrics.class.getName());
        return p;
    }

    /** Records the name of every metric added to the instance's registry. */
    public static final class AddedMetrics implements org.apache.kafka.common.metrics.MetricsReporter {
        static final List<String> NAMES = new java.util.concurrent.CopyOnWriteArrayList<>();

        @Override
        public void configure(Map<String, ?> configs) {
        }

        @Override
        public void init(List<org.apache.kafka.common.metrics.KafkaMetric> metrics) {
            metrics.forEach(this::metricChange);
        }

        @Override
        public void metricChange(org.apache.kafka.common.metrics.KafkaMetric metric) {
            NAMES.add(metric.metricName().name());
        }

        @Override
        public void metricRemoval(org.apache.kafka.common.metrics.KafkaMetric metric) {
        }

        @Override
        public void close() {
        }
    }

    /** The topology whose sub-topology 0 holds the three kstate stores (and an in-memory one). */
    private static StreamsBuilder topology() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> g = b.stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey();
        g.count(Materialized.<String, Long>as(KstateStores.persistentTimestampedKeyValueStore("kv"))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()));
        g.windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
            .count(Materialized.<String, Long>as(KstateStores.persistentTimestampedWindowStore("win", Duration.ofHours(1),
                Duration.ofMinutes(1), false)).withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()));
        g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMinutes(5)))
            .count(Materialized.<String, Long>as(KstateStores.persistentSessionStore("ses", Duration.ofHours(1)))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()));
        g.reduce((x, y) -> y, Materialized.<String, String>as(KstateStores.inMemoryTimestampedKeyValueStore("mem"))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        return b;
    }

    /** What a previous run left: three stores with committed records and changelog offsets. */
    private void prepare() {
        Properties p = props(60_000);
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(p, taskDir);
        KstateKeyValueStore kv = kvStore();
        kv.init(ctx, kv);
        KstateWindowStore win = windowStore();
        win.init(ctx, win);
        KstateSessionStore ses = sessionStore();
        ses.init(ctx, ses);
        for (int i = 0; i < 20; i++) {
            kv.put(key(i), ts(1000 + i, i));
            win.put(key(i), ts(1000 + i, 10 + i), 60_000L * (i % 3));
            ses.put(new Windowed<>(key(i), new SessionWindow(1000 + i, 2000 + i)), ts(0, 100 + i));
        }
        int partition = Integer.parseInt(taskDir.getName().substring(taskDir.getName().indexOf('_') + 1));
        kv.commit(Collections.singletonMap(changelog("kv", partition), COMMITTED));
        win.commit(Collections.singletonMap(changelog("win", partition), COMMITTED));
        ses.commit(Collections.singletonMap(changelog("ses", partition), COMMITTED));
        kv.close();
        win.close();
        ses.close();
    }

    private File dir(String store) {
        return new File(taskDir, store);
    }

    private List<String> parked() {
        List<String> l = new ArrayList<>(ParkedStores.parkedDirectories());
        Collections.sort(l);
        return l;
    }

    private List<String> parkedAll() {
        List<String> l = new ArrayList<>();
        for (String s : new String[] {"kv", "ses", "win"}) {
            l.add(ParkedStores.canonical(dir(s)));
        }
        return l;
    }

    private void start(long parkMs) {
        streams = new KafkaStreams(topology().build(), props(parkMs));
        streams.start();
    }

    /** Checks a store holds exactly what {@link #prepare} committed. */
    private void checkPrepared(KstateKeyValueStore kv, KstateWindowStore win, KstateSessionStore ses) {
        Map<Bytes, byte[]> model = new TreeMap<>();
        for (int i = 0; i < 20; i++) {
            model.put(key(i), ts(1000 + i, i));
        }
        List<KeyValue<Bytes, byte[]>> all = TestSupport.drain(kv.all());
        assertEquals(model.size(), all.size());
        for (KeyValue<Bytes, byte[]> e : all) {
            assertArrayEquals(e.key.toString(), model.get(e.key), e.value);
        }
        for (int i = 0; i < 20; i++) {
            assertArrayEquals(ts(1000 + i, 10 + i), win.fetch(key(i), 60_000L * (i % 3)));
            assertArrayEquals(ts(0, 100 + i), ses.fetchSession(key(i), 1000 + i, 2000 + i));
        }
        assertEquals(Long.valueOf(COMMITTED), kv.committedOffset(changelog("kv")));
        assertEquals(Long.valueOf(COMMITTED), win.committedOffset(changelog("win")));
        assertEquals(Long.valueOf(COMMITTED), ses.committedOffset(changelog("ses")));
    }

    /**
     * @return the key-value, window and session stores of task 0_0, initialised as the task
     *     would (the captured log cleared first)
     */
    private StateStore[] initAll() {
        CapturedLogs.clear();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props(60_000), taskDir);
        StateStore[] stores = {kvStore(), windowStore(), sessionStore()};
        for (StateStore s : stores) {
            s.init(ctx, s);
        }
        return stores;
    }

    /**
     * Initialises the three stores of task 0_0 as the task would, checks that each logged a
     * line containing {@code fragment} (how it got its store), checks what they hold, and
     * closes them.
     */
    private void initCheckAndClose(String fragment) {
        StateStore[] stores = initAll();
        KstateKeyValueStore kv = (KstateKeyValueStore) stores[0];
        KstateWindowStore win = (KstateWindowStore) stores[1];
        KstateSessionStore ses = (KstateSessionStore) stores[2];
        try {
            assertEquals(CapturedLogs.messages(Level.INFO).toString(), 3, logs(fragment));
            checkPrepared(kv, win, ses);
        } finally {
            kv.close();
            win.close();
            ses.close();
        }
    }

    private long logs(String fragment) {
        return CapturedLogs.count(Level.INFO, fragment);
    }

    /** Waits until {@code n} stores were opened in the background (pre-opened), and checks no more were. */
    private void awaitBackgroundOpens(int n) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 20_000;
        while (logs("): pre-opened at ") < n && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(CapturedLogs.messages(Level.INFO).toString(), n, logs("): pre-opened at "));
    }

    /**
     * Checks what {@code start()} did to the three stores of task 0_0: deferred their opens to
     * the background (defer) or opened them on its own thread; in both cases parked them.
     */
    private void checkStartUpPath(int stores) throws InterruptedException {
        if (defer) {
            assertEquals(CapturedLogs.messages(Level.INFO).toString(), stores,
                logs("): deferred the open of the existing store at "));
            assertEquals("the path opened nothing itself", 0, logs("): opened existing store"));
            assertEquals(stores, logs("closed by Kafka Streams' start-up path without being opened; its background open is "
                + "kept (parked)"));
            awaitBackgroundOpens(stores);
        } else {
            assertEquals(0, logs("deferred the open"));
            assertEquals(stores, logs("closed by Kafka Streams' start-up path; kept open (parked)"));
        }
        assertEquals("the path read the committed offsets: " + CapturedLogs.stateManagerMessages(Level.INFO), stores,
            CapturedLogs.stateManagerMessages(Level.INFO).stream().filter(m -> m.contains("initialized from checkpoint with "
                + "offset " + COMMITTED + " at changelog")).count());
    }

    // ----- the tests ------------------------------------------------------------------------

    /** Kafka Streams 4.0-4.2 open no store in {@code start()}: nothing is parked, every store stays closed. */
    @Test
    public void olderRuntimesParkNothing() {
        assumeFalse("Kafka Streams before 4.3", STARTUP_PATH);
        start(60_000);
        assertEquals(Collections.emptyList(), parked());
        assertEquals(0, logs("kstate store"));
        assertTrue(LockProbe.canOpen(dir("kv")));
    }

    /**
     * The start-up path opens each persistent store once and parks it; the next init of each
     * directory adopts it (no second open) with its committed data, offsets and stream time; the
     * in-memory store is not parked.
     */
    @Test
    public void storesOpenedByStartUpAreAdoptedByTheNextInit() throws InterruptedException {
        assumeTrue("Kafka Streams 4.3+", STARTUP_PATH);
        AddedMetrics.NAMES.clear();
        start(60_000);
        assertFalse("the start-up path's stores register no metrics: " + AddedMetrics.NAMES,
            AddedMetrics.NAMES.contains("commits-in-doubt-total"));
        assertTrue("the reporter sees the instance's metrics", AddedMetrics.NAMES.size() > 10);
        checkStartUpPath(3);
        assertEquals("the three kstate stores of task 0_0 are parked", parkedAll(), parked());
        assertFalse("a parked store keeps its lock", LockProbe.canOpen(dir("kv")));
        assertEquals("the in-memory store is not parked", 0, CapturedLogs.messages(Level.INFO).stream()
            .filter(m -> m.contains("store mem") && m.contains("parked")).count());

        StateStore[] stores = initAll();
        KstateKeyValueStore kv = (KstateKeyValueStore) stores[0];
        KstateWindowStore win = (KstateWindowStore) stores[1];
        KstateSessionStore ses = (KstateSessionStore) stores[2];
        try {
            assertEquals("three adoptions, no open: " + CapturedLogs.messages(Level.INFO), 3, logs(defer
                ? "): adopted the store opened ahead in the background" : "): adopted the store parked by Kafka Streams' "
                + "start-up path"));
            assertEquals(0, logs("): opened "));
            assertEquals("nothing left parked", Collections.emptyList(), parked());
            checkPrepared(kv, win, ses);
            // the adopted stores work as any: write, commit, read committed
            kv.put(key(99), ts(5, 5));
            win.put(key(99), ts(5, 6), 120_000L);
            kv.commit(Collections.singletonMap(changelog("kv"), COMMITTED + 10));
            win.commit(Collections.singletonMap(changelog("win"), COMMITTED + 10));
            assertArrayEquals(ts(5, 5), kv.get(key(99)));
            assertEquals(Long.valueOf(COMMITTED + 10), kv.committedOffset(changelog("kv")));
            assertArrayEquals(ts(5, 6), win.fetch(key(99), 120_000L));
            assertTrue(kv.isOpen() && win.isOpen() && ses.isOpen());
        } finally {
            kv.close();
            win.close();
            ses.close();
        }
        assertTrue("closed for real now", LockProbe.canOpen(dir("kv")));
        assertEquals("a store closed by a task is never parked", Collections.emptyList(), parked());
    }

    /**
     * Two local tasks: while the start-up path opens the stores of the first, the second's are
     * opened ahead in the background, and the path adopts them; every store is opened once and
     * every one ends up parked. With {@code kstate.startup.open.ahead=false} the path opens all
     * six itself.
     */
    @Test
    public void theOtherTasksStoresAreOpenedAhead() throws Exception {
        assumeTrue("Kafka Streams 4.3+", STARTUP_PATH);
        File second = new File(new File(stateDir, APP), "0_1");
        assertTrue(second.mkdirs());
        File first = taskDir;
        taskDir = second;
        prepare();
        taskDir = first;
        for (boolean ahead : new boolean[] {true, false}) {
            CapturedLogs.clear();
            Properties p = props(60_000);
            p.put(KstateStoreOptions.STARTUP_OPEN_AHEAD_CONFIG, ahead);
            streams = new KafkaStreams(topology().build(), p);
            streams.start();
            if (defer) {
                // every store opens in the background, its own init scheduling it if opening
                // ahead did not: the path opens and adopts none
                checkStartUpPath(6);
                assertEquals("six stores parked", 6, parked().size());
                assertEquals(0, CapturedLogs.count(Level.INFO, "): adopted"));
                streams.close(Duration.ofSeconds(30));
                streams = null;
                assertEquals(Collections.emptyList(), parked());
                continue;
            }
            assertEquals("six stores parked", 6, parked().size());
            long opened = CapturedLogs.count(Level.INFO, "): opened existing store");
            long ahead0 = CapturedLogs.count(Level.INFO, "): pre-opened at ");
            long adoptedAhead = CapturedLogs.count(Level.INFO, "): adopted the store opened ahead in the background");
            assertEquals(CapturedLogs.messages(Level.INFO).toString(), 6, opened + ahead0);
            assertEquals("the path adopts what was opened ahead", ahead0, adoptedAhead);
            if (ahead) {
                assertEquals("the three stores of one task are opened ahead", 3, ahead0);
            } else {
                assertEquals(0, ahead0);
            }
            assertEquals(6, logs("closed by Kafka Streams' start-up path; kept open (parked)"));
            streams.close(Duration.ofSeconds(30));
            streams = null;
            assertEquals(Collections.emptyList(), parked());
        }
    }

    /**
     * A task that is never assigned here (it went to another instance): its parked stores are
     * closed by the deadline, releasing their directories, with their data intact.
     */
    @Test
    public void storesNeverAdoptedAreClosedByTheDeadline() throws Exception {
        assumeTrue("Kafka Streams 4.3+", STARTUP_PATH);
        start(1_500);
        assertEquals(parkedAll(), parked());
        long deadline = System.currentTimeMillis() + 20_000;
        while (!parked().isEmpty() && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        assertEquals("closed by the deadline", Collections.emptyList(), parked());
        assertEquals(3, logs("not adopted within 1500 ms"));
        assertTrue("the directory's lock is released", LockProbe.canOpen(dir("kv")));
        streams.close(Duration.ofSeconds(30));
        streams = null;
        // closed cleanly: a normal open finds the committed data (and no log to replay)
        initCheckAndClose("): opened existing store");
    }

    /** {@code KafkaStreams#close()} before any adoption closes the parked stores; {@code cleanUp()} then deletes them. */
    @Test
    public void closingTheApplicationClosesItsParkedStores() {
        assumeTrue("Kafka Streams 4.3+", STARTUP_PATH);
        start(60_000);
        assertEquals(parkedAll(), parked());
        streams.close(Duration.ofSeconds(30));
        assertEquals("closed with the application, not 60 s later", Collections.emptyList(), parked());
        assertEquals(3, logs("the KafkaStreams instance closed before adopting it"));
        assertTrue(LockProbe.canOpen(dir("kv")));
        streams.cleanUp();
        streams = null;
        assertFalse("cleanUp deleted the task directory", taskDir.exists());
    }

    /** {@code kstate.startup.park.ms=0}: the start-up path closes the stores as Kafka asks, as before. */
    @Test
    public void parkingDisabledClosesTheStores() {
        assumeTrue("Kafka Streams 4.3+", STARTUP_PATH);
        start(0);
        assertEquals(Collections.emptyList(), parked());
        assertEquals(0, logs("parked"));
        assertEquals("the start-up path opened the three stores", 3, logs("): opened existing store"));
        assertTrue("closed: the lock is free", LockProbe.canOpen(dir("kv")));
        CapturedLogs.clear();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props(0), taskDir);
        KstateKeyValueStore kv = kvStore();
        kv.init(ctx, kv);
        try {
            assertEquals(1, logs("): opened existing store"));
            assertEquals(Long.valueOf(COMMITTED), kv.committedOffset(changelog("kv")));
        } finally {
            kv.close();
        }
    }

    /**
     * An init with other options (another memtable size) does not adopt: the parked store is
     * closed and the directory opened normally; the other parked stores stay parked.
     */
    @Test
    public void otherOptionsCloseTheParkedStoreAndOpen() {
        assumeTrue("Kafka Streams 4.3+", STARTUP_PATH);
        start(60_000);
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props(60_000), taskDir);
        KstateKeyValueStore kv = kvStore(KstateStores.builder("kv").writeBufferBytes(8 << 20));
        CapturedLogs.clear();
        kv.init(ctx, kv);
        try {
            assertEquals(1, logs("opens the directory with other options"));
            assertEquals(1, logs("): opened existing store"));
            assertEquals(0, logs("): adopted"));
            assertEquals(Long.valueOf(COMMITTED), kv.committedOffset(changelog("kv")));
            assertEquals(20, TestSupport.drain(kv.all()).size());
            List<String> left = parkedAll();
            left.remove(ParkedStores.canonical(dir("kv")));
            assertEquals(left, parked());
        } finally {
            kv.close();
        }
    }

    /**
     * Kafka wipes the task (deletes its directory) while the stores are parked, and the task is
     * initialised again: the parked stores belong to deleted files, so they are closed, not
     * adopted, and the stores start empty in the new directory.
     */
    @Test
    public void aDeletedDirectoryIsNotAdopted() throws InterruptedException {
        assumeTrue("Kafka Streams 4.3+", STARTUP_PATH);
        start(60_000);
        checkStartUpPath(3); // with defer, the background opens are done: Kafka deletes no directory under an open
        // The parked stores are open, and their RocksDB background threads may write a file
        // while the tree is being deleted, which leaves the directory in place (seen once, in a
        // CI run under load: mkdirs below found the directory still there). The wipe is what is
        // simulated here, so delete until the directory is gone.
        for (int attempt = 0; taskDir.exists() && attempt < 100; attempt++) {
            TestSupport.deleteTree(taskDir);
            if (taskDir.exists()) {
                Thread.sleep(10);
            }
        }
        assertFalse("the task directory could not be deleted", taskDir.exists());
        assertTrue(taskDir.mkdirs());
        CapturedLogs.clear();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props(60_000), taskDir);
        KstateKeyValueStore kv = kvStore();
        KstateSessionStore ses = sessionStore();
        kv.init(ctx, kv);
        ses.init(ctx, ses);
        try {
            assertEquals(CapturedLogs.messages(Level.INFO).toString(), 2,
                logs("the directory was deleted or replaced while the store was parked"));
            assertEquals("no warning: " + CapturedLogs.messages(Level.WARN), 0, CapturedLogs.messages(Level.WARN).size());
            assertEquals(2, logs("): opened new store"));
            assertEquals(0, logs("): adopted"));
            assertEquals(0, TestSupport.drain(kv.all()).size());
            assertNull(kv.committedOffset(changelog("kv")));
            assertNull(ses.fetchSession(key(1), 1001, 2001));
            kv.put(key(1), ts(1, 1));
            kv.commit(Collections.singletonMap(changelog("kv"), 1L));
            assertEquals(1, TestSupport.drain(kv.all()).size());
        } finally {
            kv.close();
            ses.close();
        }
        assertEquals("the window store is still parked", Collections.singletonList(ParkedStores.canonical(dir("win"))),
            parked());
    }
    /**
     * A store whose offsets hint is missing (kv) or damaged (win) is opened by the path, as
     * without deferral, and its commit there writes the hint again; the store with a good hint
     * (ses) is deferred. All three end up parked and adopted with their data.
     */
    @Test
    public void aMissingOrDamagedHintOpensTheStoreOnThePath() throws Exception {
        assumeTrue("Kafka Streams 4.3+", STARTUP_PATH);
        assumeTrue("deferral on", defer);
        File kvHint = new File(dir("kv"), OffsetsHint.FILE);
        File winHint = new File(dir("win"), OffsetsHint.FILE);
        assertTrue("a commit wrote the hints", kvHint.isFile() && winHint.isFile()
            && new File(dir("ses"), OffsetsHint.FILE).isFile());
        assertTrue(kvHint.delete());
        byte[] damaged = java.nio.file.Files.readAllBytes(winHint.toPath());
        damaged[damaged.length / 2] ^= 0x10;
        java.nio.file.Files.write(winHint.toPath(), damaged);
        start(60_000);
        assertEquals(1, logs("ignoring the offsets hint"));
        assertEquals("kv and win opened by the path", 2, logs("): opened existing store"));
        assertEquals(1, logs("): deferred the open of the existing store at "));
        awaitBackgroundOpens(1);
        assertEquals(parkedAll(), parked());
        assertTrue("the path's commit wrote the missing hint", kvHint.isFile());
        assertEquals(Long.valueOf(COMMITTED), OffsetsHint.read(dir("win")).offset(changelog("win")));
        initCheckAndClose("): adopted the store ");
    }

    /**
     * Kafka migrates a legacy {@code .checkpoint} file by committing its offsets right after
     * init: a deferred store whose hint says otherwise opens (adopting its background open) and
     * commits them for real, so both modes end with the migrated offset.
     */
    @Test
    public void aLegacyCheckpointIsMigratedIntoADeferredStore() throws Exception {
        assumeTrue("Kafka Streams 4.3+", STARTUP_PATH);
        File checkpoint = new File(taskDir, ".checkpoint");
        new org.apache.kafka.streams.state.internals.OffsetCheckpoint(checkpoint).write(
            Collections.singletonMap(changelog("kv"), 77L));
        start(60_000);
        assertFalse("Kafka migrated the checkpoint", checkpoint.exists());
        if (defer) {
            awaitBackgroundOpens(3);
            assertEquals(CapturedLogs.messages(Level.INFO).toString(), 1,
                logs("kv (task 0_0): opened the deferred store at "));
        }
        assertEquals(parkedAll(), parked());
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props(60_000), taskDir);
        KstateKeyValueStore kv = kvStore();
        kv.init(ctx, kv);
        try {
            assertEquals(Long.valueOf(77L), kv.committedOffset(changelog("kv")));
            assertEquals(20, TestSupport.drain(kv.all()).size());
        } finally {
            kv.close();
        }
        assertEquals("the hint follows the migrated commit", Long.valueOf(77L),
            OffsetsHint.read(dir("kv")).offset(changelog("kv")));
    }
}
