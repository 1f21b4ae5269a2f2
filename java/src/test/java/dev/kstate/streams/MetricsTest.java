package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * kstate's store metrics as Kafka Streams shows them: RocksDB property gauges, statistics
 * tickers and kstate's own counters in {@code stream-state-metrics}, tagged like Kafka's
 * RocksDB metrics, with plausible values; gone once the store closes. And the shared memory
 * budget, seen through the same metrics.
 */
public class MetricsTest {
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("metrics");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** The kstate metrics of store {@code name} (tag {@code tag}), by metric name. */
    private static Map<String, Metric> storeMetrics(Map<MetricName, ? extends Metric> all, String tag, String name) {
        Map<String, Metric> found = new HashMap<>();
        for (Map.Entry<MetricName, ? extends Metric> e : all.entrySet()) {
            MetricName n = e.getKey();
            if (n.group().equals(KstateMetrics.GROUP) && name.equals(n.tags().get(tag))) {
                assertEquals(n.toString(), 3, n.tags().size());
                assertEquals(n.toString(), "0_0", n.tags().get("task-id"));
                assertTrue(n.toString(), n.tags().containsKey("thread-id"));
                found.put(n.name(), e.getValue());
            }
        }
        return found;
    }

    private static double value(Map<String, Metric> metrics, String name) {
        Metric m = metrics.get(name);
        if (m == null) {
            throw new AssertionError("no metric " + name + " in " + metrics.keySet());
        }
        return ((Number) m.metricValue()).doubleValue();
    }

    private static TopologyTestDriver driver(Properties props, KeyValueBytesStoreSupplier... stores) {
        StreamsBuilder builder = new StreamsBuilder();
        int i = 0;
        for (KeyValueBytesStoreSupplier s : stores) {
            builder.table("in" + i++, Consumed.with(Serdes.String(), Serdes.String()),
                Materialized.<String, String>as(s).withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
                    .withCachingDisabled());
        }
        return new TopologyTestDriver(builder.build(), props);
    }

    @Test
    public void rocksDbStoresReportKafkasGaugesAndKstatesCountersUntilClosed() {
        Properties props = TestSupport.props("metrics-app", new File(dir, "app"));
        props.put(KstateStoreOptions.STATISTICS_CONFIG, "true");
        props.put(KstateStoreOptions.BLOCK_CACHE_BYTES_CONFIG, String.valueOf(7L << 20));
        Map<MetricName, ? extends Metric> live;
        try (TopologyTestDriver driver = driver(props, KstateStores.persistentTimestampedKeyValueStore("s"))) {
            live = driver.metrics(); // a live view of the registry
            TestInputTopic<String, String> in = driver.createInputTopic("in0", new StringSerializer(), new StringSerializer());
            for (int i = 0; i < 100; i++) {
                in.pipeInput("k" + i, "value-" + i, i);
            }
            KeyValueStore<String, ValueAndTimestamp<String>> kv = driver.getTimestampedKeyValueStore("s");
            assertEquals("value-1", kv.get("k1").value());
            StateStore store = (StateStore) kv;
            Map<String, Metric> m = storeMetrics(driver.metrics(), KstateMetrics.ROCKSDB_STATE_ID_TAG, "s");
            for (String p : KstateMetrics.ROCKSDB_PROPERTIES) {
                double v = value(m, p);
                assertTrue(p + " = " + v, v >= 0);
            }
            assertEquals(7L << 20, value(m, "block-cache-capacity"), 0);
            assertTrue(value(m, "estimate-num-keys") >= 100);
            assertTrue(value(m, "num-entries-active-mem-table") >= 100);
            assertTrue(value(m, "cur-size-all-mem-tables") > 100 * 10);
            assertEquals(0, value(m, "background-errors"), 0);
            assertTrue(value(m, "bytes-written-total") > 100 * 10);
            assertTrue(value(m, "bytes-read-total") >= 0);
            assertEquals(0, value(m, "commits-in-doubt-total"), 0);
            assertEquals(0, value(m, "recovery-rolled-forward"), 0);
            assertEquals(0, value(m, "spills-total"), 0);
            assertEquals(0, value(m, "roll-forwards-total"), 0);
            assertEquals(m.keySet().toString(), KstateMetrics.ROCKSDB_PROPERTIES.size() + 6, m.size());
            assertTrue(store.isOpen());
            assertEquals(m.size(), storeMetrics(live, KstateMetrics.ROCKSDB_STATE_ID_TAG, "s").size());
        }
        // Closing the driver closed the store, which removed its metrics from the registry.
        assertTrue(storeMetrics(live, KstateMetrics.ROCKSDB_STATE_ID_TAG, "s").isEmpty());
    }

    @Test
    public void withoutStatisticsThereAreNoTickerMetrics_andMemoryStoresReportOnlyKstatesCounters() {
        Properties props = TestSupport.props("metrics-app2", new File(dir, "app2"));
        try (TopologyTestDriver driver = driver(props, KstateStores.persistentTimestampedKeyValueStore("s"),
            KstateStores.inMemoryTimestampedKeyValueStore("m"))) {
            Map<String, Metric> rocks = storeMetrics(driver.metrics(), KstateMetrics.ROCKSDB_STATE_ID_TAG, "s");
            assertFalse(rocks.containsKey("bytes-written-total"));
            assertEquals(50L << 20, value(rocks, "block-cache-capacity"), 0);
            // The memory store's tags are those of its metered wrapper (scope kstate-memory): kstate's
            // counters sit beside Kafka's own metrics of the store, with no RocksDB gauge.
            Map<String, Metric> memory = storeMetrics(driver.metrics(), KstateMetrics.MEMORY_STATE_ID_TAG, "m");
            assertEquals(0, value(memory, "commits-in-doubt-total"), 0);
            assertEquals(0, value(memory, "recovery-rolled-forward"), 0);
            for (String p : KstateMetrics.ROCKSDB_PROPERTIES) {
                assertFalse(p, memory.containsKey(p));
            }
        }
    }

    @Test
    public void storesWithOneBoundedBudgetShareOneCache() {
        Properties props = TestSupport.props("metrics-app3", new File(dir, "app3"));
        long budget = (12L << 20) + 12288; // a budget no other test uses
        props.put(KstateStoreOptions.BOUNDED_MEMORY_BYTES_CONFIG, String.valueOf(budget));
        props.put(KstateStoreOptions.BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG, "0.25");
        try (TopologyTestDriver driver = driver(props, KstateStores.persistentTimestampedKeyValueStore("a"),
            KstateStores.persistentTimestampedKeyValueStore("b"),
            KstateStores.builder("c").blockCacheBytes(3L << 20).boundedMemoryBytes(6L << 20).build())) {
            TestInputTopic<String, String> in = driver.createInputTopic("in0", new StringSerializer(), new StringSerializer());
            StringBuilder big = new StringBuilder();
            for (int i = 0; i < 1000; i++) {
                big.append('x');
            }
            for (int i = 0; i < 2000; i++) {
                in.pipeInput("k" + i, big.toString(), i);
            }
            Map<String, Metric> a = storeMetrics(driver.metrics(), KstateMetrics.ROCKSDB_STATE_ID_TAG, "a");
            Map<String, Metric> b = storeMetrics(driver.metrics(), KstateMetrics.ROCKSDB_STATE_ID_TAG, "b");
            Map<String, Metric> c = storeMetrics(driver.metrics(), KstateMetrics.ROCKSDB_STATE_ID_TAG, "c");
            assertEquals(budget, value(a, "block-cache-capacity"), 0);
            assertEquals(budget, value(b, "block-cache-capacity"), 0);
            // Its own builder option wins over the application-wide budget: another budget.
            assertEquals(6L << 20, value(c, "block-cache-capacity"), 0);
            // a's memtables (2 MB written) are charged to the cache b reports too.
            double usageA = value(a, "block-cache-usage");
            assertEquals(usageA, value(b, "block-cache-usage"), 0);
            assertTrue("usage " + usageA, usageA >= value(a, "cur-size-all-mem-tables") / 2);
            assertTrue("usage " + usageA, usageA <= budget * 1.25);
        }
    }

    /** The names the store registered are the ones the registry holds, and none remain after close. */
    @Test
    public void aStoreInitialisedByHandRemovesItsMetricsOnClose() {
        Properties props = TestSupport.props("app", dir);
        KstateKeyValueStore store = (KstateKeyValueStore) KstateStores.persistentKeyValueStore("hand").get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props, dir);
        store.init(ctx, store);
        List<MetricName> names = store.metricNames();
        assertEquals(KstateMetrics.ROCKSDB_PROPERTIES.size() + 4, names.size());
        for (MetricName n : names) {
            assertTrue(n.toString(), ctx.metrics().metrics().containsKey(n));
        }
        store.close();
        store.close();
        for (MetricName n : names) {
            assertFalse(n.toString(), ctx.metrics().metrics().containsKey(n));
        }
        assertTrue(store.metricNames().isEmpty());
    }

    /**
     * spills-total and roll-forwards-total count what the README says: a transaction's buffer
     * is moved to disk each time it outgrows kstate.max.uncommitted.bytes, and its commit is
     * one roll-forward from the spill area.
     */
    @Test
    public void spillsAndRollForwardsAreCounted() {
        Properties props = TestSupport.props("app", dir);
        props.put(KstateStoreOptions.MAX_UNCOMMITTED_BYTES_CONFIG, "4096");
        for (KstateStoreOptions.Engine engine : KstateStoreOptions.Engine.values()) {
            KstateKeyValueStore store = (KstateKeyValueStore) KstateStores.builder("spilling-" + engine).engine(engine)
                .build().get();
            TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props, dir);
            store.init(ctx, store);
            Map<String, Metric> m = new java.util.HashMap<>();
            for (MetricName n : store.metricNames()) {
                m.put(n.name(), ctx.metrics().metrics().get(n));
            }
            assertEquals(0, value(m, "spills-total"), 0);
            for (int i = 0; i < 100; i++) {
                store.put(org.apache.kafka.common.utils.Bytes.wrap(("k" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                    new byte[8 + 100]);
            }
            // 100 writes of more than 110 bytes (11,000+) through a 4,096-byte buffer: moved to disk
            // each time it outgrows the bound, so at least twice
            double spills = value(m, "spills-total");
            assertTrue(engine + ": " + spills + " spills", spills >= 2);
            assertEquals(engine.toString(), 0, value(m, "roll-forwards-total"), 0);
            store.commit(java.util.Collections.emptyMap());
            assertEquals(engine.toString(), 1, value(m, "roll-forwards-total"), 0);
            // the commit of a spilled transaction first moves the rest of its buffer to disk
            assertEquals(engine.toString(), spills + 1, value(m, "spills-total"), 0);
            store.close();
        }
    }
}
