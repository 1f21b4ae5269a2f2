package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.WindowStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The kstate CLI over a state directory written by Kafka Streams 4.4's own window (plain and
 * timestamped) and session stores, one RocksDB per segment: {@code upgrade} (with and without
 * {@code --dry-run}, to timestamped and to headers), {@code inspect} and {@code verify} leave
 * every file byte for byte as it was and add none, and Kafka's own stores then reopen the
 * directory with every entry.
 */
public class CliForeignStoresTest {
    private static final String APP = "cli";
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("cli-foreign");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** Plain window, timestamped window and session counts, on Kafka's own RocksDB stores. */
    private static StreamsBuilder topology() {
        StreamsBuilder builder = new StreamsBuilder();
        KGroupedStream<String, String> grouped =
            builder.stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey();
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(60), Duration.ofSeconds(30)))
            .count(Materialized.<String, Long>as(
                    Stores.persistentWindowStore("plainwin", Duration.ofMinutes(10), Duration.ofSeconds(60), false))
                .withKeySerde(Serdes.String()).withCachingDisabled());
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(60), Duration.ofSeconds(30)))
            .count(Materialized.<String, Long, WindowStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("tswin")
                .withKeySerde(Serdes.String()).withCachingDisabled().withRetention(Duration.ofMinutes(10)));
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(10)))
            .count(Materialized.<String, Long, SessionStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("sess")
                .withKeySerde(Serdes.String()).withCachingDisabled().withRetention(Duration.ofMinutes(10)));
        return builder;
    }

    /** Every entry of the three stores, as text. */
    private static List<String> contents(TopologyTestDriver driver) {
        List<String> out = new ArrayList<>();
        for (String name : new String[] {"plainwin", "tswin"}) {
            try (KeyValueIterator<Windowed<String>, Long> it =
                     driver.<String, Long>getWindowStore(name).all()) {
                it.forEachRemaining(kv -> out.add(name + " " + kv.key + "=" + kv.value));
            }
        }
        SessionStore<String, Long> sessions = driver.getSessionStore("sess");
        try (KeyValueIterator<Windowed<String>, Long> it = sessions.findSessions(null, null, 0, Long.MAX_VALUE)) {
            it.forEachRemaining(kv -> out.add("sess " + kv.key + "=" + kv.value));
        }
        return out;
    }

    /** Every file (relative path -> bytes) and directory (-> "dir") under {@code root}. */
    private static Map<String, String> snapshot(File root) throws Exception {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> paths = Files.walk(root.toPath())) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                String rel = root.toPath().relativize(p).toString();
                out.put(rel, Files.isDirectory(p) ? "dir" : Arrays.toString(Files.readAllBytes(p)));
            }
        }
        return out;
    }

    @Test
    public void kafkasWindowAndSessionStoresAreLeftAloneByteForByteAndReopen() throws Exception {
        File stateDir = new File(dir, "state");
        List<String> before;
        TopologyTestDriver driver = new TopologyTestDriver(topology().build(), TestSupport.props(APP, stateDir));
        try {
            TestInputTopic<String, String> in =
                driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
            for (int i = 0; i < 600; i++) {
                in.pipeInput("k" + (i % 7), "v" + i, 1_000_000L + i * 1_000L);
            }
            before = contents(driver);
            MigrationTest.closeTaskKeepingState(driver);
            MigrationTest.copyTree(new File(stateDir, APP).toPath(), new File(dir, "copy/" + APP).toPath());
            MigrationTest.copyTree(new File(stateDir, APP).toPath(), new File(dir, "pristine/" + APP).toPath());
        } finally {
            driver.close();
        }
        assertTrue("the stores hold data", before.size() > 100);
        File app = new File(dir, "copy/" + APP);
        File task = new File(app, "0_0");
        for (String store : new String[] {"plainwin", "tswin", "sess"}) {
            String[] segments = new File(task, store).list();
            assertTrue(store + " has segments: " + Arrays.toString(segments), segments != null && segments.length >= 2);
        }
        Map<String, String> original = snapshot(app);

        for (String to : new String[] {"timestamped", "headers"}) {
            String out = TestSupport.runCli(0, "upgrade", app.getPath(), "--to", to, "--dry-run");
            assertTrue(out, out.contains("0 failed"));
            out = TestSupport.runCli(0, "upgrade", app.getPath(), "--to", to);
            assertTrue(out, out.contains("0 store(s) upgraded, 3 left alone, 0 failed"));
            for (String store : new String[] {"plainwin", "tswin", "sess"}) {
                assertTrue(out, out.contains("left alone  " + new File(task, store).getPath()
                    + " (a Kafka Streams window or session store"));
            }
        }
        String[] kinds = {"plainwin", "window store", "tswin", "timestamped window store", "sess", "session store"};
        for (int i = 0; i < kinds.length; i += 2) {
            String store = new File(task, kinds[i]).getPath();
            String out = TestSupport.runCli(0, "inspect", store);
            assertTrue(out, out.contains("kind (guessed):   " + kinds[i + 1] + "\n"));
            assertTrue(out, out.contains("segment " + kinds[i] + "."));
            out = TestSupport.runCli(0, "verify", store);
            assertTrue(out, out.contains(" 0 problems"));
        }
        assertEquals("the CLI changed no byte and added no file", original, snapshot(app));

        // Kafka's own stores reopen the directory and read exactly what they read from an
        // untouched copy (a superset of what the first run showed: a fresh stream time
        // shows windows the first run had already expired).
        List<String> reread = reopen(app, "reopened");
        assertTrue("every entry is still there", reread.containsAll(before));
        assertEquals(reopen(new File(dir, "pristine/" + APP), "reopened-pristine"), reread);
    }

    /**
     * A Kafka Streams versioned key-value store ({@code RocksDBVersionedStore}: one RocksDB
     * whose keys carry an 8-byte logical segment prefix) looks like a plain key-value store
     * from its column families alone: {@code upgrade} must recognise it and leave it alone
     * byte for byte, and Kafka must read every version afterwards.
     */
    @Test
    public void kafkasVersionedStoreIsLeftAloneByteForByte() throws Exception {
        File stateDir = new File(dir, "vstate");
        Map<String, String> seen = new TreeMap<>();
        TopologyTestDriver driver = new TopologyTestDriver(versioned().build(), TestSupport.props(APP, stateDir));
        try {
            TestInputTopic<String, String> in =
                driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
            for (int i = 0; i < 400; i++) {
                in.pipeInput("k" + (i % 9), "v" + i, 1_000_000L + i * 1_000L);
            }
            seen.putAll(versions(driver));
            MigrationTest.closeTaskKeepingState(driver);
            MigrationTest.copyTree(new File(stateDir, APP).toPath(), new File(dir, "vcopy/" + APP).toPath());
            MigrationTest.copyTree(new File(stateDir, APP).toPath(), new File(dir, "vpristine/" + APP).toPath());
        } finally {
            driver.close();
        }
        assertTrue("the store holds versions: " + seen, seen.size() >= 9 * 3);
        File app = new File(dir, "vcopy/" + APP);
        File store = new File(app, "0_0/rocksdb/ver");
        assertTrue(store.getPath(), new File(store, "CURRENT").isFile());
        Map<String, String> original = snapshot(app);
        for (String to : new String[] {"timestamped", "headers"}) {
            String out = TestSupport.runCli(0, "upgrade", app.getPath(), "--to", to, "--dry-run");
            assertTrue(out, out.contains("left alone  " + store.getPath() + " (a Kafka Streams versioned"));
            out = TestSupport.runCli(0, "upgrade", app.getPath(), "--to", to);
            assertTrue(out, out.contains("0 store(s) upgraded, 1 left alone, 0 failed"));
        }
        String out = TestSupport.runCli(0, "inspect", store.getPath());
        assertTrue(out, out.contains("versioned key-value store"));
        assertEquals("the CLI changed no byte and added no file", original, snapshot(app));

        // Kafka reads exactly what it reads from an untouched copy, the latest versions
        // included.
        Map<String, String> reread = reopenVersioned(app, "vagain");
        assertEquals(reopenVersioned(new File(dir, "vpristine/" + APP), "vagain-pristine"), reread);
        for (int k = 0; k < 9; k++) {
            String latest = "k" + k + "@" + (1_000_000L + (391 + k) * 1_000L);
            assertEquals(latest, seen.get(latest), reread.get(latest));
        }
    }

    /** Every version Kafka's own versioned store reads from a copy of {@code app}. */
    private Map<String, String> reopenVersioned(File app, String copy) throws Exception {
        File stateDir = new File(dir, copy);
        MigrationTest.copyTree(app.toPath(), new File(stateDir, APP).toPath());
        try (TopologyTestDriver again = new TopologyTestDriver(versioned().build(), TestSupport.props(APP, stateDir))) {
            return versions(again);
        }
    }

    /** A table materialized in a Kafka versioned store with 20 minutes of history. */
    private static StreamsBuilder versioned() {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> table = builder.table("in", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("ver", Duration.ofMinutes(20)))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        table.toStream().to("out");
        return builder;
    }

    /** Every version of the nine keys the test writes, read at every second of its input. */
    private static Map<String, String> versions(TopologyTestDriver driver) {
        VersionedKeyValueStore<String, String> store = driver.getVersionedKeyValueStore("ver");
        Map<String, String> out = new TreeMap<>();
        for (int k = 0; k < 9; k++) {
            for (long t = 1_000_000L; t < 1_000_000L + 400_000L; t += 1_000L) {
                VersionedRecord<String> r = store.get("k" + k, t);
                if (r != null) {
                    out.put("k" + k + "@" + r.timestamp(), r.value());
                }
            }
        }
        return out;
    }

    /** What Kafka's own stores read from a copy of the application directory {@code app}. */
    private List<String> reopen(File app, String copy) throws Exception {
        File stateDir = new File(dir, copy);
        MigrationTest.copyTree(app.toPath(), new File(stateDir, APP).toPath());
        try (TopologyTestDriver again = new TopologyTestDriver(topology().build(), TestSupport.props(APP, stateDir))) {
            return contents(again);
        }
    }
}
