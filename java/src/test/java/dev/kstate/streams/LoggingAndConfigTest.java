package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.slf4j.event.Level;

/** kstate's log events and its config errors. */
public class LoggingAndConfigTest {
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("logging");
        CapturedLogs.clear();
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private KeyValueStore<Bytes, byte[]> open(String name, Properties props) {
        KeyValueStore<Bytes, byte[]> store = KstateStores.persistentKeyValueStore(name).get();
        store.init(new TestSupport.CapturingContext(props, dir), store);
        return store;
    }

    private static Bytes b(String s) {
        return Bytes.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    /** One INFO line per open saying what was opened; a WARN naming the leaked iterators at close. */
    @Test
    public void openAndLeakedIteratorsAreLogged() {
        KeyValueStore<Bytes, byte[]> store = open("logged", TestSupport.props("app", dir));
        assertEquals(CapturedLogs.messages(Level.INFO).toString(), 1, CapturedLogs.count(Level.INFO, "kstate store logged"));
        assertTrue(CapturedLogs.count(Level.INFO, "opened new store at") == 1);
        store.put(b("a"), "1".getBytes(StandardCharsets.UTF_8));
        store.commit(Collections.emptyMap());
        KeyValueIterator<Bytes, byte[]> leaked = store.all();
        KeyValueIterator<Bytes, byte[]> closed = store.all();
        closed.close();
        store.close();
        assertEquals(CapturedLogs.messages(Level.WARN).toString(), 1,
            CapturedLogs.count(Level.WARN, "Closing 1 open iterators for store logged"));
        store.close(); // idempotent, no second warning
        assertEquals(1, CapturedLogs.count(Level.WARN, "open iterators"));
        leaked.close();
        KeyValueStore<Bytes, byte[]> again = open("logged", TestSupport.props("app", dir));
        assertEquals(1, CapturedLogs.count(Level.INFO, "opened existing store at"));
        again.close();
    }

    private void assertRejected(String key, Object value, String accepted) {
        Properties props = TestSupport.props("app", dir);
        props.put(key, value);
        try {
            open("bad", props).close();
            fail("accepted " + key + "=" + value);
        } catch (ConfigException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(key));
            assertTrue(e.getMessage(), e.getMessage().contains(String.valueOf(value)));
            assertTrue(e.getMessage(), e.getMessage().contains(accepted));
        }
    }

    /** A bad value names the key, the value and the accepted values. */
    @Test
    public void badConfigValuesNameTheKeyAndTheAcceptedValues() {
        assertRejected(KstateStoreOptions.SYNC_ON_COMMIT_CONFIG, "yes", "true, false");
        assertRejected(KstateStoreOptions.MAX_UNCOMMITTED_BYTES_CONFIG, "64MB", "positive number of bytes");
        assertRejected(KstateStoreOptions.BLOCK_CACHE_BYTES_CONFIG, "-1", "positive number of bytes");
        assertRejected(KstateStoreOptions.WRITE_BUFFER_BYTES_CONFIG, "0", "positive number of bytes");
        assertRejected(KstateStoreOptions.WRITE_BUFFER_COUNT_CONFIG, "0", "an integer from 1 to 1000");
        assertRejected(KstateStoreOptions.WRITE_BUFFER_COUNT_CONFIG, "5000", "an integer from 1 to 1000");
        assertRejected(KstateStoreOptions.BLOOM_FILTER_CONFIG, "maybe", "true, false");
        assertRejected(KstateStoreOptions.STATISTICS_CONFIG, "on", "true, false");
        assertRejected(KstateStoreOptions.BOUNDED_MEMORY_BYTES_CONFIG, "1GB", "positive number of bytes");
        assertRejected(KstateStoreOptions.BOUNDED_MEMORY_BYTES_CONFIG, "1", "large enough");
        Properties bounded = TestSupport.props("app", dir);
        bounded.put(KstateStoreOptions.BOUNDED_MEMORY_BYTES_CONFIG, "1048576");
        for (String ratio : new String[] {"1", "0", "-0.5", "half"}) {
            bounded.put(KstateStoreOptions.BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG, ratio);
            try {
                open("bad", bounded).close();
                fail("accepted ratio " + ratio);
            } catch (ConfigException e) {
                assertTrue(e.getMessage(), e.getMessage().contains(KstateStoreOptions.BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG)
                    && e.getMessage().contains(ratio) && e.getMessage().contains("strictly between 0 and 1"));
            }
        }
        Map<String, Object> configs = new HashMap<>();
        configs.put(KstateStoreOptions.ENGINE_CONFIG, "lmdb");
        try {
            new KstateDslStoreSuppliers().configure(configs);
            fail("accepted kstate.engine=lmdb");
        } catch (ConfigException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("kstate.engine") && e.getMessage().contains("lmdb")
                && e.getMessage().contains("rocksdb, memory"));
        }
    }

    /**
     * Every kstate.* key is checked at the first place kstate reads the config, whether or not
     * that store uses it: the first init of any kind of store (not a later restart's start-up
     * path), and KstateDslStoreSuppliers#configure.
     */
    @Test
    public void everyKstateKeyIsCheckedAtTheFirstInit() {
        String[][] bad = {
            {KstateStoreOptions.BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG, "1.0", "strictly between 0 and 1"},
            {KstateStoreOptions.STARTUP_PARK_MS_CONFIG, "-1", "0 or more"},
            {KstateStoreOptions.STARTUP_OPEN_AHEAD_CONFIG, "sometimes", "true, false"},
            {KstateStoreOptions.STARTUP_DEFER_OPEN_CONFIG, "later", "true, false"},
            {KstateStoreOptions.ENGINE_CONFIG, "lmdb", "rocksdb, memory"},
        };
        List<java.util.function.Supplier<org.apache.kafka.streams.processor.StateStore>> kinds = java.util.Arrays.asList(
            () -> KstateStores.persistentKeyValueStore("kv").get(),
            () -> KstateStores.inMemoryKeyValueStore("mkv").get(),
            () -> KstateStores.persistentWindowStore("w", Duration.ofMinutes(2), Duration.ofSeconds(10), false).get(),
            () -> KstateStores.persistentSessionStore("s", Duration.ofMinutes(2)).get());
        for (String[] b : bad) {
            for (java.util.function.Supplier<org.apache.kafka.streams.processor.StateStore> kind : kinds) {
                Properties props = TestSupport.props("app", dir);
                props.put(b[0], b[1]);
                org.apache.kafka.streams.processor.StateStore store = kind.get();
                try {
                    store.init(new TestSupport.CapturingContext(props, dir), store);
                    store.close();
                    fail(store.name() + " accepted " + b[0] + "=" + b[1]);
                } catch (ConfigException e) {
                    assertTrue(e.getMessage(), e.getMessage().startsWith("Invalid value " + b[1] + " for configuration "
                        + b[0] + ": accepted values: ") && e.getMessage().contains(b[2]));
                }
                assertFalse(store.isOpen());
            }
            Map<String, Object> configs = new HashMap<>();
            configs.put(b[0], b[1]);
            try {
                new KstateDslStoreSuppliers().configure(configs);
                fail("configure accepted " + b[0] + "=" + b[1]);
            } catch (ConfigException e) {
                assertTrue(e.getMessage(), e.getMessage().contains(b[0]) && e.getMessage().contains(b[2]));
            }
        }
    }

    /** The start-up parking settings: milliseconds of 0 or more, and a boolean. */
    @Test
    public void startupParkingSettingsAreValidated() {
        Map<String, Object> configs = new HashMap<>();
        assertEquals(KstateStoreOptions.DEFAULT_STARTUP_PARK_MS, KstateStoreOptions.resolvedStartupParkMs(configs));
        assertTrue(KstateStoreOptions.resolvedStartupOpenAhead(configs));
        configs.put(KstateStoreOptions.STARTUP_PARK_MS_CONFIG, "0");
        assertEquals(0, KstateStoreOptions.resolvedStartupParkMs(configs));
        configs.put(KstateStoreOptions.STARTUP_PARK_MS_CONFIG, 2500);
        assertEquals(2500, KstateStoreOptions.resolvedStartupParkMs(configs));
        for (String bad : new String[] {"-1", "soon", "1.5"}) {
            configs.put(KstateStoreOptions.STARTUP_PARK_MS_CONFIG, bad);
            try {
                KstateStoreOptions.resolvedStartupParkMs(configs);
                fail("accepted " + KstateStoreOptions.STARTUP_PARK_MS_CONFIG + "=" + bad);
            } catch (ConfigException e) {
                assertTrue(e.getMessage(), e.getMessage().contains(KstateStoreOptions.STARTUP_PARK_MS_CONFIG)
                    && e.getMessage().contains(bad) && e.getMessage().contains("0 or more"));
            }
        }
        configs.put(KstateStoreOptions.STARTUP_OPEN_AHEAD_CONFIG, "false");
        assertFalse(KstateStoreOptions.resolvedStartupOpenAhead(configs));
        configs.put(KstateStoreOptions.STARTUP_OPEN_AHEAD_CONFIG, "maybe");
        try {
            KstateStoreOptions.resolvedStartupOpenAhead(configs);
            fail("accepted " + KstateStoreOptions.STARTUP_OPEN_AHEAD_CONFIG + "=maybe");
        } catch (ConfigException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(KstateStoreOptions.STARTUP_OPEN_AHEAD_CONFIG)
                && e.getMessage().contains("true, false"));
        }
    }

    /** The removed kstate.interactive.query.isolation.level (or any unknown kstate.* key) is reported, once. */
    @Test
    public void unknownKstateKeysAreReported() {
        Properties props = TestSupport.props("app", dir);
        props.put("kstate.interactive.query.isolation.level", "READ_COMMITTED");
        open("one", props).close();
        open("two", props).close();
        assertEquals(1, CapturedLogs.count(Level.WARN, "Unknown kstate config kstate.interactive.query.isolation.level"));
    }

    /** A config setter as users write them for Kafka's own RocksDB stores: some options kstate has, some it has not. */
    public static final class MixedSetter implements org.apache.kafka.streams.state.RocksDBConfigSetter {
        static final java.util.List<String> CLOSED = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        private org.rocksdb.Cache cache;
        private org.rocksdb.Statistics statistics;

        @Override
        public void setConfig(String storeName, org.rocksdb.Options options, Map<String, Object> configs) {
            org.rocksdb.BlockBasedTableConfig table = (org.rocksdb.BlockBasedTableConfig) options.tableFormatConfig();
            cache = new org.rocksdb.LRUCache(7L << 20);
            table.setBlockCache(cache);
            table.setFilterPolicy(null);
            table.setBlockSize(16 * 1024);
            options.setTableFormatConfig(table);
            options.setWriteBufferSize(8L << 20);
            options.setMaxWriteBufferNumber(5);
            statistics = new org.rocksdb.Statistics();
            options.setStatistics(statistics);
            options.setCompressionType(org.rocksdb.CompressionType.LZ4_COMPRESSION);
            options.setCompactionStyle(org.rocksdb.CompactionStyle.LEVEL);
        }

        @Override
        public void close(String storeName, org.rocksdb.Options options) {
            cache.close();
            statistics.close();
            CLOSED.add(storeName);
        }
    }

    /**
     * Kafka's BoundedMemoryRocksDBConfig example: one cache for every store, charged with the memtables,
     * built in static fields as Kafka documents it. Sizes: 20 MiB and 10 MiB of it for memtables, or the
     * system properties {@code kstate.test.bounded.cache.bytes} and {@code kstate.test.bounded.memtable.bytes}.
     */
    public static final class BoundedMemorySetter implements org.apache.kafka.streams.state.RocksDBConfigSetter {
        private static final org.rocksdb.Cache CACHE =
            new org.rocksdb.LRUCache(Long.getLong("kstate.test.bounded.cache.bytes", 20L << 20), -1, false, 0.1);
        private static final org.rocksdb.WriteBufferManager WBM =
            new org.rocksdb.WriteBufferManager(Long.getLong("kstate.test.bounded.memtable.bytes", 10L << 20), CACHE);

        @Override
        public void setConfig(String storeName, org.rocksdb.Options options, Map<String, Object> configs) {
            org.rocksdb.BlockBasedTableConfig table = (org.rocksdb.BlockBasedTableConfig) options.tableFormatConfig();
            table.setBlockCache(CACHE);
            table.setCacheIndexAndFilterBlocks(true);
            options.setWriteBufferManager(WBM);
            options.setTableFormatConfig(table);
        }

        @Override
        public void close(String storeName, org.rocksdb.Options options) {
        }
    }

    /** Kafka's bounded-memory setter becomes kstate's shared budget of the cache's capacity. */
    @Test
    public void kafkasBoundedMemorySetterBecomesKstatesBudget() {
        Properties props = TestSupport.props("app", dir);
        props.put("rocksdb.config.setter", BoundedMemorySetter.class);
        Map<String, Object> configs = new TestSupport.CapturingContext(props, dir).appConfigs();
        assertEquals(new dev.kstate.internal.NativeStore.RocksTuning(0, 0, 0, true, false, 20L << 20, 10L << 20).withAdoptLeftOpen(true),
            KstateStores.builder("b").options().resolvedRocksTuning(KstateStoreOptions.withRocksDbConfigSetter("b", configs)));
        String warn = CapturedLogs.messages(Level.WARN).stream().filter(w -> w.contains("rocksdb.config.setter"))
            .findFirst().get();
        assertTrue(warn, warn.contains("kstate.rocksdb.bounded.memory.bytes=" + (20L << 20))
            && warn.contains("writeBufferManager's memtable limit") && warn.contains("cacheIndexAndFilterBlocks=true"));
    }

    /** As {@link BoundedMemorySetter}, with a cache of its own: 12 MiB, 6 MiB of it for memtables. */
    public static final class TwelveMiBSetter implements org.apache.kafka.streams.state.RocksDBConfigSetter {
        private static final org.rocksdb.Cache CACHE = new org.rocksdb.LRUCache(12L << 20, -1, false, 0.1);
        private static final org.rocksdb.WriteBufferManager WBM = new org.rocksdb.WriteBufferManager(6L << 20, CACHE);

        @Override
        public void setConfig(String storeName, org.rocksdb.Options options, Map<String, Object> configs) {
            setShared(options, CACHE, WBM);
        }

        @Override
        public void close(String storeName, org.rocksdb.Options options) {
        }
    }

    /** As {@link TwelveMiBSetter}: 8 MiB, 4 MiB of it for memtables. */
    public static final class EightMiBSetter implements org.apache.kafka.streams.state.RocksDBConfigSetter {
        private static final org.rocksdb.Cache CACHE = new org.rocksdb.LRUCache(8L << 20, -1, false, 0.1);
        private static final org.rocksdb.WriteBufferManager WBM = new org.rocksdb.WriteBufferManager(4L << 20, CACHE);

        @Override
        public void setConfig(String storeName, org.rocksdb.Options options, Map<String, Object> configs) {
            setShared(options, CACHE, WBM);
        }

        @Override
        public void close(String storeName, org.rocksdb.Options options) {
        }
    }

    private static void setShared(org.rocksdb.Options options, org.rocksdb.Cache cache, org.rocksdb.WriteBufferManager wbm) {
        org.rocksdb.BlockBasedTableConfig table = (org.rocksdb.BlockBasedTableConfig) options.tableFormatConfig();
        table.setBlockCache(cache);
        options.setWriteBufferManager(wbm);
        options.setTableFormatConfig(table);
    }

    /**
     * The capacity of a setter's cache is probed once per cache object (a probe opens a database):
     * stores alternating between two setters' shared caches each get their own cache's capacity.
     */
    @Test
    public void eachSharedCacheKeepsItsOwnCapacity() {
        for (int round = 0; round < 2; round++) {
            for (Class<?> setter : java.util.Arrays.asList(TwelveMiBSetter.class, EightMiBSetter.class)) {
                Properties props = TestSupport.props("app", dir);
                props.put("rocksdb.config.setter", setter);
                Map<String, Object> configs = new TestSupport.CapturingContext(props, dir).appConfigs();
                long capacity = setter == TwelveMiBSetter.class ? 12L << 20 : 8L << 20;
                String store = "s" + round;
                assertEquals(setter.getSimpleName() + " round " + round,
                    new dev.kstate.internal.NativeStore.RocksTuning(0, 0, 0, true, false, capacity, capacity / 2)
                        .withAdoptLeftOpen(true),
                    KstateStores.builder(store).options()
                        .resolvedRocksTuning(KstateStoreOptions.withRocksDbConfigSetter(store, configs)));
            }
        }
    }

    /**
     * Kafka's rocksdb.config.setter runs against RocksJava Options: what kstate has an option for
     * (block cache, write buffer size and count, bloom filter, statistics) is applied, the rest
     * named in one WARN, the setter closed; an explicit kstate.rocksdb.* key wins over it.
     */
    @Test
    public void aRocksDbConfigSetterIsAppliedWhereKstateHasTheOption() {
        Properties props = TestSupport.props("app", dir);
        props.put("rocksdb.config.setter", MixedSetter.class.getName());
        MixedSetter.CLOSED.clear();
        Map<String, Object> configs = new TestSupport.CapturingContext(props, dir).appConfigs();
        KstateStoreOptions options = KstateStores.builder("one").options();
        assertEquals(new dev.kstate.internal.NativeStore.RocksTuning(7L << 20, 8L << 20, 5, false, true, 0, 0).withAdoptLeftOpen(true),
            options.resolvedRocksTuning(KstateStoreOptions.withRocksDbConfigSetter("one", configs)));
        assertEquals(java.util.Arrays.asList("one"), MixedSetter.CLOSED);
        // a kstate key the application sets wins over the setter
        props.put(KstateStoreOptions.WRITE_BUFFER_BYTES_CONFIG, String.valueOf(4L << 20));
        Map<String, Object> withKey = new TestSupport.CapturingContext(props, dir).appConfigs();
        assertEquals(new dev.kstate.internal.NativeStore.RocksTuning(7L << 20, 4L << 20, 5, false, true, 0, 0).withAdoptLeftOpen(true),
            options.resolvedRocksTuning(KstateStoreOptions.withRocksDbConfigSetter("one", withKey)));
        props.remove(KstateStoreOptions.WRITE_BUFFER_BYTES_CONFIG);
        // end to end: the store opens with the setter's cache and statistics
        KstateKeyValueStore store = (KstateKeyValueStore) KstateStores.persistentKeyValueStore("two").get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props, dir);
        store.init(ctx, store);
        Map<String, Double> metrics = new HashMap<>();
        for (org.apache.kafka.common.MetricName n : store.metricNames()) {
            metrics.put(n.name(), ((Number) ctx.metrics().metrics().get(n).metricValue()).doubleValue());
        }
        store.close();
        assertEquals(7L << 20, metrics.get("block-cache-capacity"), 0);
        assertTrue("statistics on: " + metrics.keySet(), metrics.containsKey("bytes-written-total"));
        assertEquals(java.util.Arrays.asList("one", "one", "two"), MixedSetter.CLOSED);
        List<String> warns = CapturedLogs.messages(Level.WARN);
        assertEquals(warns.toString(), 1, CapturedLogs.count(Level.WARN, "rocksdb.config.setter"));
        String warn = warns.stream().filter(w -> w.contains("rocksdb.config.setter")).findFirst().get();
        for (String named : new String[] {"compressionType=LZ4_COMPRESSION", "compactionStyle=LEVEL",
            "tableFormatConfig.blockSize=16384", MixedSetter.class.getName()}) {
            assertTrue(named + " in " + warn, warn.contains(named));
        }
        for (String notNamed : new String[] {"writeBufferSize", "maxWriteBufferNumber", "statistics=a Statistics", "filterPolicy"}) {
            assertFalse(notNamed + " in " + warn, warn.contains(notNamed));
        }
    }
}
