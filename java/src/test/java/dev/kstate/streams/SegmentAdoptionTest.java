package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.StreamTask;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.event.Level;

/**
 * Kafka Streams 4.4's own RocksDB window and session stores ({@code persistentTimestampedWindowStore},
 * {@code persistentWindowStore}, {@code persistentSessionStore}), written by a real task through
 * TopologyTestDriver over several segments (expired ones dropped by Kafka as stream time moves),
 * committed and closed cleanly; then the same topology on kstate's suppliers opens the same task
 * directory: each store is converted in place, every query answers exactly what Kafka's store
 * answered, and the committed changelog offsets carried over (from the segments' {@code offsets}
 * families, or from the task's legacy {@code .checkpoint} for the older runtimes' segments).
 */
public class SegmentAdoptionTest {
    static final String APP = "segadopt";
    static final Duration RETENTION = Duration.ofMinutes(10);
    static final Duration WINDOW = Duration.ofMinutes(1);
    private static final int RECORDS = 3000;
    static final int KEYS = 30;
    static final String[] STORES = {"tw", "pw", "ss"};
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("segadopt");
        CapturedLogs.clear();
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** Writes every record into the three stores, deleting an older window and session now and then. */
    private static final class Writer implements Processor<String, String, Void, Void> {
        private org.apache.kafka.streams.state.TimestampedWindowStore<String, String> tw;
        private WindowStore<String, String> pw;
        private SessionStore<String, String> ss;
        private final ArrayDeque<Windowed<String>> sessions = new ArrayDeque<>();
        private int n;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            tw = context.getStateStore("tw");
            pw = context.getStateStore("pw");
            ss = context.getStateStore("ss");
        }

        @Override
        public void process(Record<String, String> r) {
            long ts = r.timestamp();
            long start = ts - ts % WINDOW.toMillis();
            tw.put(r.key(), ValueAndTimestamp.make(r.value(), ts), start);
            pw.put(r.key(), r.value(), start);
            Windowed<String> session = new Windowed<>(r.key(), new SessionWindow(ts - 400L * (n % 4), ts));
            ss.put(session, r.value());
            sessions.add(session);
            if (++n % 7 == 0) {
                // older data only: the stream time stays the largest time held
                pw.put(r.key(), null, start - 2 * WINDOW.toMillis());
                tw.put(r.key(), null, start - 3 * WINDOW.toMillis());
                ss.remove(sessions.peekFirst());
            }
            if (sessions.size() > 5) {
                sessions.removeFirst();
            }
        }
    }

    static Topology topology(boolean kstate) {
        WindowBytesStoreSupplier tw = kstate ? KstateStores.persistentTimestampedWindowStore("tw", RETENTION, WINDOW, false)
            : Stores.persistentTimestampedWindowStore("tw", RETENTION, WINDOW, false);
        WindowBytesStoreSupplier pw = kstate ? KstateStores.persistentWindowStore("pw", RETENTION, WINDOW, false)
            : Stores.persistentWindowStore("pw", RETENTION, WINDOW, false);
        SessionBytesStoreSupplier ss = kstate ? KstateStores.persistentSessionStore("ss", RETENTION)
            : Stores.persistentSessionStore("ss", RETENTION);
        Topology t = new Topology();
        t.addSource("src", new StringDeserializer(), new StringDeserializer(), "in");
        t.addProcessor("p", Writer::new, "src");
        t.addStateStore(Stores.timestampedWindowStoreBuilder(tw, Serdes.String(), Serdes.String()).withCachingDisabled(), "p");
        t.addStateStore(Stores.windowStoreBuilder(pw, Serdes.String(), Serdes.String()).withCachingDisabled(), "p");
        t.addStateStore(Stores.sessionStoreBuilder(ss, Serdes.String(), Serdes.String()).withCachingDisabled(), "p");
        return t;
    }

    private static <K, V> void drain(List<String> out, String tag, KeyValueIterator<K, V> it) {
        try (KeyValueIterator<K, V> i = it) {
            while (i.hasNext()) {
                KeyValue<K, V> kv = i.next();
                out.add(tag + " " + kv.key + "=" + kv.value);
            }
        }
    }

    private static <V> void drainWindows(List<String> out, String tag, WindowStoreIterator<V> it) {
        try (WindowStoreIterator<V> i = it) {
            while (i.hasNext()) {
                KeyValue<Long, V> kv = i.next();
                out.add(tag + " " + kv.key + "=" + kv.value);
            }
        }
    }

    /** Every query kind of the three stores, in the order the stores answer. */
    static Map<String, List<String>> answers(TopologyTestDriver driver, long streamTime) {
        WindowStore<String, ValueAndTimestamp<String>> tw = driver.getTimestampedWindowStore("tw");
        WindowStore<String, String> pw = driver.getWindowStore("pw");
        SessionStore<String, String> ss = driver.getSessionStore("ss");
        Map<String, List<String>> out = new LinkedHashMap<>();
        long[][] ranges = {{0, Long.MAX_VALUE}, {streamTime - RETENTION.toMillis(), streamTime},
            {streamTime - 4 * WINDOW.toMillis(), streamTime - WINDOW.toMillis()}};
        for (String store : new String[] {"tw", "pw"}) {
            WindowStore<String, ?> w = store.equals("tw") ? tw : pw;
            List<String> a = new ArrayList<>();
            drain(a, "all", w.all());
            drain(a, "backwardAll", w.backwardAll());
            for (long[] r : ranges) {
                drain(a, "fetchAll", w.fetchAll(r[0], r[1]));
                drain(a, "backwardFetchAll", w.backwardFetchAll(r[0], r[1]));
                drain(a, "fetch k03..k17", w.fetch("k03", "k17", r[0], r[1]));
                drain(a, "backwardFetch ..k05", w.backwardFetch(null, "k05", r[0], r[1]));
                for (int k = 0; k < KEYS; k++) {
                    drainWindows(a, "fetch k" + k, w.fetch(key(k), r[0], r[1]));
                    drainWindows(a, "backwardFetch k" + k, w.backwardFetch(key(k), r[0], r[1]));
                }
            }
            for (int k = 0; k < KEYS; k++) {
                long start = streamTime - streamTime % WINDOW.toMillis();
                a.add("fetch(key, time) k" + k + "=" + w.fetch(key(k), start) + "," + w.fetch(key(k), start - WINDOW.toMillis()));
            }
            out.put(store, a);
        }
        List<String> a = new ArrayList<>();
        drain(a, "findSessions all", ss.findSessions(null, null, 0, Long.MAX_VALUE));
        for (long[] r : ranges) {
            drain(a, "findSessions k03..", ss.findSessions("k03", null, r[0], r[1]));
            for (int k = 0; k < KEYS; k++) {
                drain(a, "findSessions k" + k, ss.findSessions(key(k), r[0], r[1]));
                drain(a, "backwardFindSessions k" + k, ss.backwardFindSessions(key(k), r[0], r[1]));
            }
        }
        for (int k = 0; k < KEYS; k++) {
            drain(a, "fetch k" + k, ss.fetch(key(k)));
            drain(a, "backwardFetch k" + k, ss.backwardFetch(key(k)));
        }
        out.put("ss", a);
        return out;
    }

    static String key(int k) {
        return String.format("k%02d", k);
    }

    /** The store {@code name} as a {@link StateStore} (the driver refuses the untyped getter for built-in kinds). */
    static StateStore stateStore(TopologyTestDriver driver, String name) {
        Object store = name.equals("tw") ? driver.getTimestampedWindowStore(name)
            : name.equals("pw") ? driver.getWindowStore(name) : driver.getSessionStore(name);
        return (StateStore) store;
    }

    /** Where Kafka's state manager starts reading each changelog (one past the store's committed offset). */
    static Map<TopicPartition, Long> changelogStarts(TopologyTestDriver driver) throws ReflectiveOperationException {
        Field task = TopologyTestDriver.class.getDeclaredField("task");
        task.setAccessible(true);
        Field stateMgr = org.apache.kafka.streams.processor.internals.AbstractTask.class.getDeclaredField("stateMgr");
        stateMgr.setAccessible(true);
        return ((org.apache.kafka.streams.processor.internals.ProcessorStateManager) stateMgr.get(task.get(driver)))
            .changelogOffsets();
    }

    static TopicPartition changelog(String store) {
        return new TopicPartition(APP + "-" + store + "-changelog", 0);
    }

    static void copyTree(Path from, Path to) throws IOException {
        Files.walkFileTree(from, new SimpleFileVisitor<Path>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes attrs) throws IOException {
                Files.createDirectories(to.resolve(from.relativize(d).toString()));
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) throws IOException {
                Files.copy(f, to.resolve(from.relativize(f).toString()));
                return FileVisitResult.CONTINUE;
            }
        });
    }

    /** What Kafka's own stores held and committed when their task closed. */
    private static final class KafkaRun {
        final Map<String, List<String>> answers;
        final Map<String, Long> offsets;
        final long streamTime;
        final File taskDir;

        KafkaRun(Map<String, List<String>> answers, Map<String, Long> offsets, long streamTime, File taskDir) {
            this.answers = answers;
            this.offsets = offsets;
            this.streamTime = streamTime;
            this.taskDir = taskDir;
        }
    }

    /**
     * Runs the topology on Kafka's own stores, records every query answer and committed offset,
     * closes the task cleanly (what TopologyTestDriver#close does, minus deleting the state) and
     * copies the application's state directory into {@code into}.
     */
    private KafkaRun kafkaRun(File into) throws Exception {
        File kafkaState = new File(dir, "kafka-" + into.getName());
        Random rnd = new Random(26);
        long streamTime = 0;
        Map<String, List<String>> answers;
        Map<String, Long> offsets = new LinkedHashMap<>();
        TopologyTestDriver driver = new TopologyTestDriver(topology(false), TestSupport.props(APP, kafkaState));
        try {
            TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
            long base = 1_000_000;
            for (int i = 0; i < RECORDS; i++) {
                base += rnd.nextInt(2_000);
                long ts = rnd.nextInt(6) == 0 ? Math.max(0, base - rnd.nextInt(120_000)) : base;
                streamTime = Math.max(streamTime, ts);
                in.pipeInput(key(rnd.nextInt(KEYS)), "v" + i, ts);
            }
            answers = answers(driver, streamTime);
            for (String s : STORES) {
                Long o = stateStore(driver, s).committedOffset(changelog(s));
                assertNotNull("Kafka committed an offset for " + s, o);
                offsets.put(s, o);
            }
            Field f = TopologyTestDriver.class.getDeclaredField("task");
            f.setAccessible(true);
            StreamTask task = (StreamTask) f.get(driver);
            task.suspend();
            task.prepareCommit(true);
            task.postCommit(true);
            task.closeClean();
            f.set(driver, null);
            copyTree(new File(kafkaState, APP).toPath(), new File(into, APP).toPath());
        } finally {
            driver.close();
        }
        File taskDir = new File(into, APP + "/0_0");
        for (String s : STORES) {
            String[] segments = new File(taskDir, s).list();
            assertTrue(s + " holds Kafka's segments", segments != null && segments.length >= 2);
            assertFalse(new File(taskDir, s + "/CURRENT").exists());
        }
        for (Map.Entry<String, List<String>> e : answers.entrySet()) {
            assertTrue(e.getKey() + " answered " + e.getValue().size(), e.getValue().size() > 1000);
        }
        return new KafkaRun(answers, offsets, streamTime, taskDir);
    }

    /**
     * Reopens the task directory on kstate's stores: equal answers, the expected offsets, and
     * Kafka's state manager restores from nowhere before them.
     */
    private static void assertAdopted(KafkaRun kafka, File stateDir, Map<String, Long> offsets) throws Exception {
        try (TopologyTestDriver kstate = new TopologyTestDriver(topology(true), TestSupport.props(APP, stateDir))) {
            for (String s : STORES) {
                StateStore store = stateStore(kstate, s);
                assertEquals("committed offset of " + s, offsets.get(s), store.committedOffset(changelog(s)));
                assertEquals("Kafka's state manager starts " + s + "'s changelog right after that offset",
                    Long.valueOf(offsets.get(s) + 1), changelogStarts(kstate).get(changelog(s)));
                assertTrue(s + " is a kstate store now", new File(kafka.taskDir, s + "/CURRENT").isFile());
            }
            Map<String, List<String>> adopted = answers(kstate, kafka.streamTime);
            for (String s : STORES) {
                assertEquals("every answer of " + s, kafka.answers.get(s), adopted.get(s));
            }
            assertEquals(3, CapturedLogs.count(Level.INFO, "converted in place"));
            // and they keep working
            long t = kafka.streamTime + 1;
            kstate.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("k00", "after", t);
            WindowStore<String, String> pw = kstate.getWindowStore("pw");
            assertEquals("after", pw.fetch("k00", t - t % WINDOW.toMillis()));
        }
    }

    @Test
    public void kafkasWindowAndSessionStoresComeUpOnKstateWithTheirStateAndOffsets() throws Exception {
        File stateDir = new File(dir, "kstate");
        KafkaRun kafka = kafkaRun(stateDir);
        assertAdopted(kafka, stateDir, kafka.offsets);
    }

    /**
     * The older runtimes' layout (Kafka 4.2 and older): segments without an {@code offsets}
     * family (dropped here from Kafka 4.4's), the task's offsets in a legacy {@code .checkpoint}.
     * kstate adopts the segments without offsets, Kafka Streams migrates the checkpoint into the
     * adopted stores after {@code init}, and nothing is restored.
     */
    @Test
    public void olderRuntimesSegmentsComeUpWithTheTasksLegacyCheckpoint() throws Exception {
        File stateDir = new File(dir, "legacy");
        KafkaRun kafka = kafkaRun(stateDir);
        org.rocksdb.RocksDB.loadLibrary();
        StringBuilder checkpoint = new StringBuilder("0\n" + STORES.length + "\n");
        Map<String, Long> legacy = new LinkedHashMap<>();
        for (String s : STORES) {
            for (File segment : new File(kafka.taskDir, s).listFiles()) {
                dropOffsetsFamily(segment);
            }
            long offset = kafka.offsets.get(s) - 7; // not Kafka's last offset: it must come from the checkpoint
            legacy.put(s, offset);
            checkpoint.append(changelog(s).topic()).append(" 0 ").append(offset).append("\n");
        }
        Files.write(new File(kafka.taskDir, ".checkpoint").toPath(),
            checkpoint.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        assertAdopted(kafka, stateDir, legacy);
        assertFalse("Kafka migrated the legacy checkpoint", new File(kafka.taskDir, ".checkpoint").exists());
    }

    /** Drops the {@code offsets} family from one of Kafka's segment databases (with Kafka's own RocksDB). */
    private static void dropOffsetsFamily(File segment) throws Exception {
        List<org.rocksdb.ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        try (org.rocksdb.Options options = new org.rocksdb.Options()) {
            for (byte[] name : org.rocksdb.RocksDB.listColumnFamilies(options, segment.getPath())) {
                descriptors.add(new org.rocksdb.ColumnFamilyDescriptor(name));
            }
        }
        List<org.rocksdb.ColumnFamilyHandle> handles = new ArrayList<>();
        try (org.rocksdb.DBOptions options = new org.rocksdb.DBOptions();
             org.rocksdb.RocksDB db = org.rocksdb.RocksDB.open(options, segment.getPath(), descriptors, handles)) {
            boolean dropped = false;
            for (org.rocksdb.ColumnFamilyHandle h : handles) {
                if (new String(h.getName(), java.nio.charset.StandardCharsets.UTF_8).equals("offsets")) {
                    db.dropColumnFamily(h);
                    dropped = true;
                }
            }
            assertTrue("Kafka 4.4's segment " + segment + " had an offsets family", dropped);
            for (org.rocksdb.ColumnFamilyHandle h : handles) {
                h.close();
            }
        }
    }
}
