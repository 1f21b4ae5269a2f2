package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.kstate.internal.KstateNative;
import dev.kstate.internal.NativeRemote;
import dev.kstate.internal.NativeStore;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.event.Level;

/**
 * The adapter's checkpoints in an object store ({@code kstate.checkpoint.*}) on a
 * {@code file://} target: store A (application X, task 0_0) publishes its committed state at
 * its clean close; store B of the same application and task with an empty state directory
 * restores it before Kafka's restore and reports its committed offset. Every refusal (offset
 * beyond the changelog's end or below its start, older than {@code delete.retention.ms}, another
 * partition, an unreadable manifest, the target down) leaves B empty, with the reason logged.
 * The changelog facts are injected ({@link RemoteCheckpoints#factsOverride}): no broker.
 */
public class RemoteCheckpointTest {
    private static final long DAY = 86_400_000L;
    private File dir;
    private File target;
    /** The target's uri: {@code file://} unless a test sets another. */
    private String uri;
    /** More configs of the drivers (S3 options). */
    private final Map<String, String> extra = new java.util.HashMap<>();

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("remote-ckpt");
        target = new File(dir, "target");
        uri = "file://" + target.getAbsolutePath();
        CapturedLogs.clear();
        facts(1_000_000, 0, DAY);
    }

    @After
    public void tearDown() {
        RemoteCheckpoints.factsOverride = null;
        TestSupport.deleteTree(dir);
    }

    private static void facts(long end, long logStart, long deleteRetentionMs) {
        RemoteCheckpoints.factsOverride = tp -> new ChangelogFacts.Facts(end, logStart, deleteRetentionMs);
    }

    private String uri() {
        return uri;
    }

    private TopologyTestDriver driver(String app, String stateDir) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.table("in", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String>as(KstateStores.persistentTimestampedKeyValueStore("s"))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()).withCachingDisabled());
        Properties props = TestSupport.props(app, new File(dir, stateDir));
        props.put(KstateStoreOptions.CHECKPOINT_URI_CONFIG, uri());
        // the background publication would come after the test: only the close publishes
        props.put(KstateStoreOptions.CHECKPOINT_INTERVAL_MS_CONFIG, "3600000");
        props.putAll(extra);
        return new TopologyTestDriver(builder.build(), props);
    }

    private static KstateStateStore<?> kstate(TopologyTestDriver driver) {
        StateStore s = (StateStore) driver.getTimestampedKeyValueStore("s");
        while (!(s instanceof KstateStateStore) && s instanceof WrappedStateStore) {
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        return (KstateStateStore<?>) s;
    }

    private static TopicPartition changelog(String app) {
        return new TopicPartition(app + "-s-changelog", 0);
    }

    /** Store A: writes, commits (TopologyTestDriver commits after each record), publishes at close. */
    private long publishFromA(String app) {
        long offset;
        try (TopologyTestDriver a = driver(app, "a")) {
            TestInputTopic<String, String> in = a.createInputTopic("in", new StringSerializer(), new StringSerializer());
            in.pipeInput("a", "1", 10L);
            in.pipeInput("b", "2", 20L);
            in.pipeInput("a", "3", 30L);
            in.pipeInput("c", "4", 40L);
            in.pipeInput("c", null, 50L);
            offset = kstate(a).committedOffset(changelog(app));
            assertNotNull(kstate(a).checkpointPublisher());
        }
        if (uri.startsWith("file:")) {
            assertEquals("the close published one checkpoint", 1, manifests(app).size());
        }
        return offset;
    }

    private List<Path> manifests(String app) {
        Path m = target.toPath().resolve(app).resolve("0_0").resolve("s").resolve("manifests");
        if (!Files.isDirectory(m)) {
            return Collections.emptyList();
        }
        try (Stream<Path> files = Files.list(m)) {
            return files.collect(Collectors.toList());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static Object metric(TopologyTestDriver d, String name) {
        for (Map.Entry<MetricName, ? extends Metric> e : d.metrics().entrySet()) {
            if (e.getKey().name().equals(name)) {
                return e.getValue().metricValue();
            }
        }
        throw new AssertionError("no metric " + name);
    }

    private static String value(TopologyTestDriver d, String key) {
        KeyValueStore<String, ValueAndTimestamp<String>> s = d.getTimestampedKeyValueStore("s");
        ValueAndTimestamp<String> v = s.get(key);
        return v == null ? null : v.value();
    }

    @Test
    public void anEmptyStoreRestoresTheNewestCheckpointAndReportsItsOffset() {
        String app = "x-restore";
        long offset = publishFromA(app);
        assertTrue(offset >= 0);
        try (TopologyTestDriver b = driver(app, "b")) {
            assertEquals("3", value(b, "a"));
            assertEquals("2", value(b, "b"));
            assertNull("a deleted key stays deleted", value(b, "c"));
            assertEquals(Long.valueOf(offset), kstate(b).committedOffset(changelog(app)));
            assertEquals(1.0, metric(b, "checkpoint-restore-source"));
            assertTrue((Double) metric(b, "checkpoint-restored-bytes") > 0);
            assertEquals(1L, CapturedLogs.messages(Level.INFO).stream().filter(m -> m.startsWith(
                "kstate store s (task 0_0): restored checkpoint manifests/") && m.endsWith(
                " bytes) at changelog offset " + offset)).count());
            assertEquals(1L, CapturedLogs.messages(Level.INFO).stream().filter(m -> m.startsWith(
                "kstate store s (task 0_0): downloading checkpoint manifests/") && m.endsWith(
                " at changelog offset " + offset + " from " + uri())).count());
            // B goes on from the restored state
            b.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("d", "5", 60L);
            assertEquals("5", value(b, "d"));
        }
        // B's close published its own newer commit beside A's
        assertEquals(2, manifests(app).size());
    }

    @Test
    public void aStoreThatPublishesCountsItsUploads() {
        String app = "x-metrics";
        try (TopologyTestDriver a = driver(app, "a")) {
            TestInputTopic<String, String> in = a.createInputTopic("in", new StringSerializer(), new StringSerializer());
            assertEquals(-1.0, metric(a, "checkpoint-age-ms"));
            assertEquals(0.0, metric(a, "checkpoint-restore-source"));
            RemoteCheckpoints.Publisher p = kstate(a).checkpointPublisher();
            assertTrue("nothing committed: nothing published", p.publishNow());
            assertTrue(manifests(app).isEmpty());
            in.pipeInput("a", "1", 10L);
            assertTrue(p.publishNow());
            assertEquals(1, manifests(app).size());
            double files = (Double) metric(a, "checkpoint-files-uploaded-total");
            assertTrue(files > 0);
            assertTrue((Double) metric(a, "checkpoint-bytes-uploaded-total") > 0);
            assertTrue((Double) metric(a, "checkpoint-age-ms") >= 0);
            assertEquals(0.0, metric(a, "checkpoint-failures-total"));
            // no commit since: nothing new
            assertTrue(p.publishNow());
            assertEquals(1, manifests(app).size());
            in.pipeInput("b", "2", 20L);
            assertTrue(p.publishNow());
            assertEquals(2, manifests(app).size());
            in.pipeInput("c", "3", 30L);
            assertTrue(p.publishNow());
            // keep = 2: the oldest was collected
            assertEquals(2, manifests(app).size());
            // the target goes down: counted, processing goes on
            TestSupport.deleteTree(target);
            Files.write(target.toPath(), new byte[] {1});
            in.pipeInput("d", "4", 40L);
            assertTrue(p.publishNow());
            assertEquals(1.0, metric(a, "checkpoint-failures-total"));
            assertEquals("4", value(a, "d"));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        assertTrue(CapturedLogs.count(Level.WARN, "publishing a checkpoint to " + uri()) >= 1);
    }

    @Test
    public void theBackgroundPublisherPublishesEachIntervalAndNeverAfterClose() throws Exception {
        String app = "x-background";
        extra.put(KstateStoreOptions.CHECKPOINT_INTERVAL_MS_CONFIG, "20");
        try (TopologyTestDriver a = driver(app, "a")) {
            TestInputTopic<String, String> in = a.createInputTopic("in", new StringSerializer(), new StringSerializer());
            for (int round = 1; round <= 3; round++) {
                long before = CapturedLogs.count(Level.INFO, "(interval)");
                // the stream thread writes and commits while the publisher checkpoints
                for (int i = 0; i < 20; i++) {
                    in.pipeInput("k" + i, "v" + round, 10L * round + i);
                }
                long deadline = System.currentTimeMillis() + 10_000;
                while (CapturedLogs.count(Level.INFO, "(interval)") == before) {
                    assertTrue("a background publication within 10 s", System.currentTimeMillis() < deadline);
                    Thread.sleep(10);
                }
            }
            assertEquals(0.0, metric(a, "checkpoint-failures-total"));
        }
        long published = CapturedLogs.count(Level.INFO, "published checkpoint");
        Thread.sleep(200);
        assertEquals("nothing is published after the close", published,
            CapturedLogs.count(Level.INFO, "published checkpoint"));
        assertTrue(manifests(app).size() <= 2);
        // the newest holds the last round
        try (TopologyTestDriver b = driver(app, "b")) {
            assertEquals("v3", value(b, "k19"));
            assertEquals("v3", value(b, "k0"));
        }
    }

    /** B of {@code app} restores nothing: empty, no committed offset, and a log line containing {@code why}. */
    private void refused(String app, Level level, String why) {
        try (TopologyTestDriver b = driver(app, "b")) {
            assertNull(value(b, "a"));
            assertNull(value(b, "b"));
            assertNull(kstate(b).committedOffset(changelog(app)));
            if (kstate(b).checkpointPublisher() != null) {
                assertEquals(0.0, metric(b, "checkpoint-restore-source"));
            }
        }
        List<String> logged = CapturedLogs.messages(level);
        assertTrue(why + " in " + logged, logged.stream().anyMatch(m -> m.contains(why)));
        assertEquals(0, CapturedLogs.count(Level.INFO, "restored checkpoint"));
    }

    @Test
    public void anOffsetBeyondTheChangelogEndIsRefused() {
        long offset = publishFromA("x-end");
        facts(offset - 1, 0, DAY);
        refused("x-end", Level.WARN, "beyond the changelog's end offset " + (offset - 1));
    }

    @Test
    public void anOffsetBelowTheLogStartIsRefused() {
        long offset = publishFromA("x-start");
        facts(1_000_000, offset + 2, DAY);
        refused("x-start", Level.WARN, "below the changelog's log-start offset " + (offset + 2));
    }

    @Test
    public void aCheckpointOlderThanDeleteRetentionIsRefused() throws Exception {
        publishFromA("x-old");
        Thread.sleep(5);
        facts(1_000_000, 0, 1);
        refused("x-old", Level.WARN, "not younger than the changelog's delete.retention.ms 1");
    }

    @Test
    public void aCheckpointOfAnotherPartitionIsRefused() {
        String app = "x-partition";
        TopicPartition other = new TopicPartition(app + "-s-changelog", 1);
        try (NativeRemote remote = NativeRemote.open(uri(), Collections.emptyMap(), 0, 0, "crafted");
             NativeStore store = NativeStore.open("s", new File(dir, "crafted").getPath(), KstateNative.ENGINE_ROCKSDB,
                 true, 0, false, 0, 0)) {
            byte[] key = Serdes.String().serializer().serialize("in", "a");
            byte[] raw = "1".getBytes(StandardCharsets.UTF_8);
            store.put(key, java.nio.ByteBuffer.allocate(8 + raw.length).putLong(10).put(raw).array());
            store.commit(Collections.singletonMap(other, 5L), null);
            assertNotNull(remote.publishStore(store, dir.toPath().resolve(".scratch"), app, "0_0", "s", -1).manifest);
        }
        refused(app, Level.WARN, "are not of this store's changelog partition " + changelog(app));
    }

    @Test
    public void anUnreadableManifestIsRefused() throws Exception {
        publishFromA("x-corrupt");
        for (Path m : manifests("x-corrupt")) {
            byte[] bytes = Files.readAllBytes(m);
            bytes[bytes.length / 2] ^= 0x20;
            Files.write(m, bytes);
        }
        refused("x-corrupt", Level.WARN, "unreadable");
    }

    @Test
    public void aTargetThatIsDownFallsBackToTheChangelog() throws Exception {
        publishFromA("x-down");
        TestSupport.deleteTree(target);
        Files.write(target.toPath(), new byte[] {1});
        refused("x-down", Level.WARN, "no remote restore");
    }

    @Test
    public void changelogFactsThatCannotBeReadFallBack() {
        publishFromA("x-facts");
        RemoteCheckpoints.factsOverride = tp -> {
            throw new java.util.concurrent.TimeoutException("admin timed out");
        };
        refused("x-facts", Level.WARN, "cannot read the facts of changelog");
    }

    @Test
    public void badCheckpointKeysAreRefusedAtInit() {
        Map<String, Object> bad = new java.util.HashMap<>();
        bad.put(KstateStoreOptions.CHECKPOINT_URI_CONFIG, "http://x");
        expectConfigError(bad, KstateStoreOptions.CHECKPOINT_URI_CONFIG);
        bad.clear();
        bad.put(KstateStoreOptions.CHECKPOINT_KEEP_CONFIG, "0");
        expectConfigError(bad, KstateStoreOptions.CHECKPOINT_KEEP_CONFIG);
        bad.clear();
        bad.put(KstateStoreOptions.CHECKPOINT_INTERVAL_MS_CONFIG, "soon");
        expectConfigError(bad, KstateStoreOptions.CHECKPOINT_INTERVAL_MS_CONFIG);
        bad.clear();
        bad.put(KstateStoreOptions.CHECKPOINT_RESTORE_CONFIG, "maybe");
        expectConfigError(bad, KstateStoreOptions.CHECKPOINT_RESTORE_CONFIG);
        bad.clear();
        bad.put(KstateStoreOptions.CHECKPOINT_MAX_BYTES_PER_SEC_CONFIG, "-1");
        expectConfigError(bad, KstateStoreOptions.CHECKPOINT_MAX_BYTES_PER_SEC_CONFIG);
        bad.clear();
        bad.put(KstateStoreOptions.CHECKPOINT_MAX_RESTORE_BYTES_PER_SEC_CONFIG, "0");
        expectConfigError(bad, KstateStoreOptions.CHECKPOINT_MAX_RESTORE_BYTES_PER_SEC_CONFIG);
        Map<String, Object> good = new java.util.HashMap<>();
        good.put(KstateStoreOptions.CHECKPOINT_URI_CONFIG, "s3://bucket/prefix");
        good.put(KstateStoreOptions.CHECKPOINT_S3_PREFIX + "region", "eu-west-1");
        good.put(KstateStoreOptions.CHECKPOINT_KEEP_CONFIG, 3);
        good.put(KstateStoreOptions.CHECKPOINT_MAX_RESTORE_BYTES_PER_SEC_CONFIG, "1048576");
        CheckpointSettings s = CheckpointSettings.of(good);
        assertEquals(3, s.keep);
        assertEquals(1_048_576L, s.maxRestoreBytesPerSec);
        assertEquals(0L, s.maxBytesPerSec);
        assertEquals(Collections.singletonMap("region", "eu-west-1"), s.s3Options);
        assertEquals(CheckpointSettings.DEFAULT_INTERVAL_MS, s.intervalMs);
        assertTrue(s.restore);
        KstateStoreOptions.validate(good);
        assertEquals("an s3 option is not an unknown key", 0,
            CapturedLogs.count(Level.WARN, "Unknown kstate config " + KstateStoreOptions.CHECKPOINT_S3_PREFIX));
    }

    /**
     * The S3 options path from Java: {@code kstate.checkpoint.s3.*} reach object_store, against
     * moto's S3 server on 127.0.0.1 (scripts/install-moto.sh; {@code KSTATE_SKIP_S3=1} skips).
     */
    @Test
    public void anS3TargetPublishesAndRestores() throws Exception {
        String venv = System.getenv("KSTATE_MOTO_VENV") != null ? System.getenv("KSTATE_MOTO_VENV")
            : "../target/moto-venv";
        File motoServer = new File(venv, "bin/moto_server");
        if (!motoServer.canExecute()) {
            org.junit.Assume.assumeFalse("KSTATE_SKIP_S3=1: the S3 test is skipped",
                "1".equals(System.getenv("KSTATE_SKIP_S3")));
            fail("moto_server not found in " + venv + ": run scripts/install-moto.sh (or set KSTATE_SKIP_S3=1)");
        }
        int port;
        try (java.net.ServerSocket free = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        Process moto = new ProcessBuilder(motoServer.getPath(), "-H", "127.0.0.1", "-p", String.valueOf(port))
            .redirectErrorStream(true).redirectOutput(new File(dir, "moto.log")).start();
        try {
            long deadline = System.currentTimeMillis() + 30_000;
            while (true) {
                try {
                    java.net.HttpURLConnection c = (java.net.HttpURLConnection)
                        new java.net.URL("http://127.0.0.1:" + port + "/kstate-java").openConnection();
                    c.setRequestMethod("PUT");
                    if (c.getResponseCode() == 200) {
                        break;
                    }
                } catch (java.io.IOException notYet) {
                    // not listening yet
                }
                assertTrue("moto answers on port " + port, System.currentTimeMillis() < deadline);
                Thread.sleep(100);
            }
            uri = "s3://kstate-java/some/prefix";
            extra.put(KstateStoreOptions.CHECKPOINT_S3_PREFIX + "endpoint", "http://127.0.0.1:" + port);
            extra.put(KstateStoreOptions.CHECKPOINT_S3_PREFIX + "allow_http", "true");
            extra.put(KstateStoreOptions.CHECKPOINT_S3_PREFIX + "region", "us-east-1");
            extra.put(KstateStoreOptions.CHECKPOINT_S3_PREFIX + "access_key_id", "test");
            extra.put(KstateStoreOptions.CHECKPOINT_S3_PREFIX + "secret_access_key", "test");
            String app = "x-s3";
            long offset = publishFromA(app);
            try (TopologyTestDriver b = driver(app, "b")) {
                assertEquals("3", value(b, "a"));
                assertEquals("2", value(b, "b"));
                assertNull(value(b, "c"));
                assertEquals(Long.valueOf(offset), kstate(b).committedOffset(changelog(app)));
                assertEquals(1.0, metric(b, "checkpoint-restore-source"));
            }
            assertEquals(0, CapturedLogs.count(Level.WARN, "failed"));
        } finally {
            moto.destroy();
            moto.waitFor();
        }
    }

    private static void expectConfigError(Map<String, Object> configs, String key) {
        try {
            KstateStoreOptions.validate(configs);
            fail("accepted " + configs);
        } catch (ConfigException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(key));
        }
    }
}
