package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.lang.reflect.Field;
import java.util.Properties;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.internals.StreamTask;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.event.Level;

/**
 * The commit sequence a Kafka Streams 4.4 stream thread runs for a periodic commit
 * ({@code TaskExecutor}: {@code task.prepareCommit(true)}, then {@code task.postCommit(false)}),
 * driven on the real {@link StreamTask} and {@code ProcessorStateManager} that
 * {@link TopologyTestDriver} builds (TopologyTestDriver itself only ever forces commits, so the
 * test takes its task and drives it). After each commit: the changelog offset kstate committed
 * and {@code approximateNumUncommittedBytes()} (directly and through Kafka's
 * {@code uncommitted-bytes} store metric), under at-least-once and under exactly_once_v2 with
 * and without {@code enable.transactional.statestores}.
 */
public class CommitSequenceTest {
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("commit-seq");
        CapturedLogs.clear();
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** What one configuration showed. */
    private static final class Outcome {
        long committedBefore;
        long uncommittedBefore;
        Long committedAfterPeriodic;
        long uncommittedAfterPeriodic;
        Long committedAfterForced;
        long uncommittedAfterForced;
        double uncommittedGaugeBefore;
        double uncommittedGaugeAfterPeriodic;
    }

    /**
     * Kafka 4.4's own store-level metric of this name for store s (its metered layer registers
     * {@code uncommitted-bytes}, {@code commit-rate} and {@code commit-latency-*} for every
     * store, kstate's included).
     */
    private static double kafkaStoreMetric(TopologyTestDriver driver, String name) {
        for (java.util.Map.Entry<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> e
            : driver.metrics().entrySet()) {
            org.apache.kafka.common.MetricName n = e.getKey();
            if (n.group().equals("stream-state-metrics") && n.name().equals(name)
                && "s".equals(n.tags().get("kstate-rocksdb-state-id"))) {
                return ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        throw new AssertionError("no store metric " + name + " in " + driver.metrics().keySet());
    }

    private Outcome run(String appId, String guarantee, Boolean transactional) throws Exception {
        StreamsBuilder builder = new StreamsBuilder();
        builder.table("in", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String>as(KstateStores.persistentTimestampedKeyValueStore("s"))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()).withCachingDisabled());
        Properties props = TestSupport.props(appId, new File(dir, appId));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        if (transactional != null) {
            props.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, transactional.toString());
        }
        TopicPartition changelog = new TopicPartition(appId + "-s-changelog", 0);
        Outcome o = new Outcome();
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props)) {
            TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
            in.pipeInput("a", "1", 1L);
            in.pipeInput("b", "2", 2L);
            in.pipeInput("c", "3", 3L);
            KeyValueStore<String, ValueAndTimestamp<String>> store = driver.getTimestampedKeyValueStore("s");
            StateStore s = (StateStore) store;
            o.committedBefore = s.committedOffset(changelog); // TopologyTestDriver forced a commit per record
            store.put("d", ValueAndTimestamp.make("4", 4L)); // written by the stream thread, not committed yet
            o.uncommittedBefore = s.approximateNumUncommittedBytes();
            o.uncommittedGaugeBefore = kafkaStoreMetric(driver, "uncommitted-bytes");

            StreamTask task = task(driver);
            task.prepareCommit(true);  // TaskExecutor#commitTasksAndMaybeUpdateCommittableOffsets
            task.postCommit(false);    // ... then the periodic, unforced post-commit
            o.committedAfterPeriodic = s.committedOffset(changelog);
            o.uncommittedAfterPeriodic = s.approximateNumUncommittedBytes();
            o.uncommittedGaugeAfterPeriodic = kafkaStoreMetric(driver, "uncommitted-bytes");

            task.prepareCommit(true);
            task.postCommit(true);     // a forced commit (revocation, close)
            o.committedAfterForced = s.committedOffset(changelog);
            o.uncommittedAfterForced = s.approximateNumUncommittedBytes();
        }
        return o;
    }

    private static StreamTask task(TopologyTestDriver driver) throws ReflectiveOperationException {
        Field f = TopologyTestDriver.class.getDeclaredField("task");
        f.setAccessible(true);
        StreamTask task = (StreamTask) f.get(driver);
        assertNotNull(task);
        return task;
    }

    private static void assertCommittedByPeriodicCommit(Outcome o) {
        assertEquals(2L, o.committedBefore);
        assertTrue("the put is uncommitted", o.uncommittedBefore > 0);
        assertEquals("the periodic commit committed the put's changelog offset", Long.valueOf(3L), o.committedAfterPeriodic);
        assertEquals(0L, o.uncommittedAfterPeriodic);
        assertEquals(Long.valueOf(3L), o.committedAfterForced);
        assertEquals(0L, o.uncommittedAfterForced);
        // Kafka's uncommitted-bytes gauge (what its early commit watches) follows kstate's buffer
        assertEquals(o.uncommittedBefore, o.uncommittedGaugeBefore, 0.0);
        assertEquals(0.0, o.uncommittedGaugeAfterPeriodic, 0.0);
    }

    /** At-least-once: every commit commits the store. No warning. */
    @Test
    public void atLeastOnceCommitsOnEveryCommit() throws Exception {
        assertCommittedByPeriodicCommit(run("alos-app", StreamsConfig.AT_LEAST_ONCE, null));
        assertEquals(0, CapturedLogs.count(Level.WARN, "exactly_once_v2"));
    }

    /** exactly_once_v2 with enable.transactional.statestores=true: every commit commits the store. No warning. */
    @Test
    public void exactlyOnceWithTransactionalStoresCommitsOnEveryCommit() throws Exception {
        assertCommittedByPeriodicCommit(run("eos-tx-app", StreamsConfig.EXACTLY_ONCE_V2, true));
        assertEquals(0, CapturedLogs.count(Level.WARN, "exactly_once_v2"));
    }

    /**
     * exactly_once_v2 without the flag: the periodic commit leaves kstate's writes uncommitted
     * (Kafka's StreamTask#postCommit skips the stores); only the forced commit commits them.
     * kstate warns once at init and reports no uncommitted bytes.
     */
    @Test
    public void exactlyOnceWithoutTheFlagCommitsOnlyOnForcedCommits() throws Exception {
        Outcome o = run("eos-app", StreamsConfig.EXACTLY_ONCE_V2, false);
        assertEquals(2L, o.committedBefore);
        // Kafka commits the store only when forced here, so kstate reports no uncommitted bytes,
        // as Kafka's non-transactional stores do: a growing figure Kafka never commits away
        // would make StreamThread commit early again and again (a commit storm)
        assertEquals("uncommitted bytes reported as Kafka's own stores report them", 0L, o.uncommittedBefore);
        assertEquals(0.0, o.uncommittedGaugeBefore, 0.0);
        assertEquals("the periodic commit did not commit the store", Long.valueOf(2L), o.committedAfterPeriodic);
        assertEquals(0L, o.uncommittedAfterPeriodic);
        assertEquals(Long.valueOf(3L), o.committedAfterForced);
        assertEquals(0L, o.uncommittedAfterForced);
        assertEquals(0.0, o.uncommittedGaugeAfterPeriodic, 0.0);
        assertEquals("one WARN at init: " + CapturedLogs.messages(Level.WARN), 1,
            CapturedLogs.count(Level.WARN, "exactly_once_v2 without enable.transactional.statestores=true"));
    }
}
