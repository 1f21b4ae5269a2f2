package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.lang.reflect.Field;
import java.util.Collections;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.internals.StreamTask;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The wipe rules of docs/exactly-once.md's "Exactly-once, kills and dirty closes", one test per row, on
 * Kafka Streams 4.4's own task code ({@code ProcessorStateManager#initializeStoreOffsets},
 * {@code StateManagerUtil#closeStateManager}) as TopologyTestDriver runs it.
 */
public class WipeRulesTest {
    private static final String APP = "wipe";
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("wipe");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private static StreamsBuilder table() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.table("in", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String>as(KstateStores.persistentTimestampedKeyValueStore("s"))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()).withCachingDisabled());
        return builder;
    }

    private Properties props(File stateDir, boolean transactional) {
        Properties props = TestSupport.props(APP, stateDir);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, Boolean.toString(transactional));
        return props;
    }

    private static File taskDir(File stateDir) {
        return new File(stateDir, APP + "/0_0");
    }

    /**
     * A kstate store with data but no committed offset in the task directory, as a killed first
     * run can leave it (written and committed without offsets).
     */
    private void storeWithoutOffsets(File stateDir) {
        File task = taskDir(stateDir);
        task.mkdirs();
        KeyValueStore<Bytes, byte[]> store = KstateStores.persistentTimestampedKeyValueStore("s").get();
        store.init(new TestSupport.CapturingContext(TestSupport.props(APP, stateDir), task), store);
        store.put(Bytes.wrap("k".getBytes()), new byte[] {0, 0, 0, 0, 0, 0, 0, 1, 'v'});
        store.commit(Collections.emptyMap());
        store.close();
    }

    private static Throwable rootOf(Throwable t, Class<?> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return c;
            }
        }
        return null;
    }

    /** After a kill: no committed offset, a non-empty task directory, exactly-once, no flag: corrupted. */
    @Test
    public void noCommittedOffsetInANonEmptyDirectoryIsCorruptedUnderEosWithoutTheFlag() {
        File stateDir = new File(dir, "corrupt");
        storeWithoutOffsets(stateDir);
        try (TopologyTestDriver driver = new TopologyTestDriver(table().build(), props(stateDir, false))) {
            fail("Kafka must declare the task corrupted");
        } catch (RuntimeException e) {
            assertTrue("TaskCorruptedException: " + e, rootOf(e, TaskCorruptedException.class) != null);
        }
    }

    /** The same directory with the flag: no corruption; Kafka restores over the existing data. */
    @Test
    public void noCommittedOffsetWithTheFlagIsRestoredOverTheData() {
        File stateDir = new File(dir, "flag");
        storeWithoutOffsets(stateDir);
        try (TopologyTestDriver driver = new TopologyTestDriver(table().build(), props(stateDir, true))) {
            KeyValueStore<String, ValueAndTimestamp<String>> s = driver.getTimestampedKeyValueStore("s");
            assertEquals("v", s.get("k").value());
        }
    }

    /** After a kill: a store that reports a committed offset is not wiped, with or without the flag. */
    @Test
    public void aCommittedOffsetMeansNoWipe() throws Exception {
        for (boolean transactional : new boolean[] {false, true}) {
            File stateDir = new File(dir, "offset-" + transactional);
            File afterKill = new File(dir, "after-kill-" + transactional);
            try (TopologyTestDriver driver = new TopologyTestDriver(table().build(), props(stateDir, transactional))) {
                driver.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("a", "1", 1L);
                // TopologyTestDriver forces a commit per record: the store now has its offset.
                // The kill, as Kafka sees it: the task is never suspended, checkpointed or
                // closed. The store is released (kstate's crash recovery is tested elsewhere) and
                // the directory copied before the driver's own clean-up deletes it.
                StreamTask task = task(driver);
                detach(driver);
                ((KeyValueStore<?, ?>) task.store("s")).close();
                copyTree(new File(stateDir, APP).toPath(), new File(afterKill, APP).toPath());
            }
            try (TopologyTestDriver driver = new TopologyTestDriver(table().build(), props(afterKill, transactional))) {
                KeyValueStore<String, ValueAndTimestamp<String>> s = driver.getTimestampedKeyValueStore("s");
                assertEquals("kept (transactional=" + transactional + ")", "1", s.get("a").value());
            }
        }
    }

    /** A dirty close (migration, fencing) under exactly-once deletes the task directory unless the flag is set. */
    @Test
    public void aDirtyCloseWipesWithoutTheFlagOnly() throws Exception {
        for (boolean transactional : new boolean[] {false, true}) {
            File stateDir = new File(dir, "dirty-" + transactional);
            try (TopologyTestDriver driver = new TopologyTestDriver(table().build(), props(stateDir, transactional))) {
                driver.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("a", "1", 1L);
                StreamTask task = task(driver);
                task.suspend();
                task.closeDirty();
                detach(driver);
                // checked before the driver's own close, which deletes the state directory
                boolean kept = new File(taskDir(stateDir), "s").exists();
                if (transactional) {
                    assertTrue("with the flag, the store survives a dirty close", kept);
                } else {
                    assertFalse("without the flag, Kafka deletes the task directory", kept);
                }
            }
        }
    }

    /**
     * A session store on the memory engine is persistent to Kafka 4.4 (so that Kafka's record
     * cache walks it segment by segment, {@link KstateSessionStore#persistent()}) and opens
     * empty: beside a RocksDB store in the task directory, after a kill, under exactly-once
     * without the flag, it must not make Kafka declare the task corrupted (which would wipe the
     * RocksDB store): it answers Kafka's "no offset", and Kafka restores it from the
     * changelog's start while the RocksDB store keeps its data.
     */
    @Test
    public void aMemorySessionStoreBesideARocksDbStoreWipesNothing() throws Exception {
        StreamsBuilder builder = new StreamsBuilder();
        org.apache.kafka.streams.kstream.KGroupedStream<String, String> grouped = builder
            .stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey();
        grouped.count(Materialized.<String, Long>as(KstateStores.persistentTimestampedKeyValueStore("s"))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()));
        grouped.windowedBy(org.apache.kafka.streams.kstream.SessionWindows.ofInactivityGapWithNoGrace(
                java.time.Duration.ofMinutes(1)))
            .count(Materialized.<String, Long>as(KstateStores.inMemorySessionStore("m", java.time.Duration.ofHours(1)))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()));
        org.apache.kafka.streams.Topology topology = builder.build();
        File stateDir = new File(dir, "memory-session");
        File afterKill = new File(dir, "memory-session-after-kill");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(stateDir, false))) {
            driver.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("a", "1", 1L);
            StreamTask task = task(driver);
            org.apache.kafka.streams.processor.StateStore m = task.store("m");
            assertTrue("the memory session store is persistent to Kafka 4.4", m.persistent());
            detach(driver);
            ((KeyValueStore<?, ?>) task.store("s")).close();
            m.close();
            copyTree(new File(stateDir, APP).toPath(), new File(afterKill, APP).toPath());
        }
        assertTrue("the RocksDB store's directory is in the task directory", new File(taskDir(afterKill), "s").isDirectory());
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(afterKill, false))) {
            KeyValueStore<String, ValueAndTimestamp<Long>> s = driver.getTimestampedKeyValueStore("s");
            assertEquals("the RocksDB store kept its count", Long.valueOf(1), s.get("a").value());
            assertEquals("the memory store reports Kafka's no-offset", Long.valueOf(KstateStateStore.KAFKA_NO_OFFSET),
                ((org.apache.kafka.streams.processor.StateStore) task(driver).store("m")).committedOffset(
                    new org.apache.kafka.common.TopicPartition(APP + "-m-changelog", 0)));
            driver.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("a", "2", 2L);
            assertEquals("counted on", Long.valueOf(2), s.get("a").value());
        }
    }

    private static void copyTree(java.nio.file.Path from, java.nio.file.Path to) throws java.io.IOException {
        try (java.util.stream.Stream<java.nio.file.Path> paths = java.nio.file.Files.walk(from)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) paths::iterator) {
                java.nio.file.Path target = to.resolve(from.relativize(p).toString());
                if (java.nio.file.Files.isDirectory(p)) {
                    java.nio.file.Files.createDirectories(target);
                } else {
                    java.nio.file.Files.copy(p, target);
                }
            }
        }
    }

    private static StreamTask task(TopologyTestDriver driver) throws ReflectiveOperationException {
        Field f = TopologyTestDriver.class.getDeclaredField("task");
        f.setAccessible(true);
        return (StreamTask) f.get(driver);
    }

    /** Takes the task away from the driver, so that its own close leaves it alone. */
    private static void detach(TopologyTestDriver driver) throws ReflectiveOperationException {
        Field f = TopologyTestDriver.class.getDeclaredField("task");
        f.setAccessible(true);
        f.set(driver, null);
    }
}
