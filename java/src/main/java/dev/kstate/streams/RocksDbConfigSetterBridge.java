package dev.kstate.streams;

import java.io.File;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.Cache;
import org.rocksdb.CompactionStyle;
import org.rocksdb.CompressionType;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.TableFormatConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka's {@code rocksdb.config.setter} for kstate's RocksDB stores. kstate's RocksDB options
 * live in Rust, so the user's {@link RocksDBConfigSetter} runs against a RocksJava
 * {@link Options} holding Kafka's defaults (rocksdbjni is on every Kafka Streams classpath);
 * what it changed is read back by comparing every getter with a second, untouched
 * {@code Options}, and the part kstate has an option for becomes the matching
 * {@code kstate.rocksdb.*} value: write buffer size and count, the block cache (its size, or
 * the capacity of a cache the setter installed, read from a probe database opened with the
 * setter's options), the bloom filter (on, or off when the setter removed the filter policy)
 * and statistics. Everything else it changed is named in ONE WARN per setter class. The
 * setter's {@code close} is called and the RocksJava objects are freed before {@code init}
 * goes on.
 *
 * <p>Precedence: a store's builder options, then the application's {@code kstate.rocksdb.*}
 * keys, then what the setter set, then kstate's defaults. Only loaded (with RocksJava) when the
 * key is set.
 */
final class RocksDbConfigSetterBridge {
    private static final Logger LOG = LoggerFactory.getLogger(RocksDbConfigSetterBridge.class);
    private static final String SETTER_CONFIG = KstateStoreOptions.ROCKSDB_CONFIG_SETTER;
    /** Setter classes already reported (the one WARN). */
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();
    /** Capacities of the caches setters handed out, by cache object (weakly: see {@link #capacityOf}). */
    private static final Map<Cache, Long> CAPACITIES = Collections.synchronizedMap(new WeakHashMap<>());
    /** Kafka's RocksDBStore defaults, the baseline a setter starts from. */
    private static final long KAFKA_BLOCK_CACHE_BYTES = 50L << 20;
    private static final long KAFKA_BLOCK_SIZE = 4096L;
    private static final long KAFKA_WRITE_BUFFER_BYTES = 16L << 20;
    private static final int KAFKA_WRITE_BUFFER_COUNT = 3;
    /** Getters whose value is not an option (handles, factories, object identities kstate never compares). */
    private static final Set<String> NOT_OPTIONS = new java.util.HashSet<>(java.util.Arrays.asList("getNativeHandle",
        "isOwningHandle", "hashCode", "toString", "getClass", "newTableFactoryHandle", "getEnv", "tableFactoryName",
        "memTableFactoryName", "tableFormatConfig"));

    private RocksDbConfigSetterBridge() {
    }

    /**
     * The application's configs with the {@code kstate.rocksdb.*} values the setter implies
     * added where the application does not set them itself; the configs unchanged when no setter
     * is configured.
     *
     * @param storeName the store, passed to the setter (setters often tune stores by name)
     * @param configs the application's configs
     * @return the configs kstate resolves the store's options from
     * @throws ConfigException when the setter class cannot be loaded or instantiated, or its
     *     {@code setConfig} throws
     */
    static Map<String, Object> withSetterOptions(String storeName, Map<String, Object> configs) {
        Object setterConfig = configs == null ? null : configs.get(SETTER_CONFIG);
        if (setterConfig == null) {
            return configs;
        }
        // Before the setter's class is loaded: Kafka's documented bounded-memory setter builds
        // its cache in static fields, which need RocksJava's native library, and in an
        // application whose stores are all kstate's nothing else has loaded it.
        RocksDB.loadLibrary();
        RocksDBConfigSetter setter = instantiate(setterConfig);
        String setterName = setter.getClass().getName();
        Map<String, Object> implied = new LinkedHashMap<>();
        List<String> unsupported = new ArrayList<>();
        List<AutoCloseable> owned = new ArrayList<>();
        try {
            Options untouched = kafkaDefaults(owned);
            Options options = kafkaDefaults(owned);
            RecordingTableConfig ourTable = (RecordingTableConfig) options.tableFormatConfig();
            Map<String, Object> before = getters(untouched);
            try {
                setter.setConfig(storeName, options, configs);
            } catch (RuntimeException e) {
                throw new ConfigException(SETTER_CONFIG, setterName, "its setConfig failed for store " + storeName
                    + ": " + e);
            }
            try {
                Map<String, Object> after = getters(options);
                for (Map.Entry<String, Object> e : after.entrySet()) {
                    Object was = before.get(e.getKey());
                    if (Objects.equals(was, e.getValue())) {
                        continue;
                    }
                    String name = e.getKey();
                    if (name.equals("writeBufferSize")) {
                        implied.put(KstateStoreOptions.WRITE_BUFFER_BYTES_CONFIG, e.getValue());
                    } else if (name.equals("maxWriteBufferNumber") && (Integer) e.getValue() >= 1
                        && (Integer) e.getValue() <= 1000) {
                        implied.put(KstateStoreOptions.WRITE_BUFFER_COUNT_CONFIG, e.getValue());
                    } else if (name.equals("statistics")) {
                        implied.put(KstateStoreOptions.STATISTICS_CONFIG, e.getValue() != null);
                    } else if (!name.equals("writeBufferManager")) {
                        unsupported.add(name + "=" + describe(e.getValue()));
                    }
                }
                readTable(options, untouched, ourTable, implied, unsupported);
            } finally {
                setter.close(storeName, options);
            }
        } finally {
            for (int i = owned.size() - 1; i >= 0; i--) {
                try {
                    owned.get(i).close();
                } catch (Exception ignored) {
                    // RocksJava objects only free native memory on close
                }
            }
        }
        Map<String, Object> merged = new HashMap<>(configs);
        Map<String, Object> applied = new TreeMap<>();
        for (Map.Entry<String, Object> e : implied.entrySet()) {
            if (!configs.containsKey(e.getKey())) {
                merged.put(e.getKey(), e.getValue());
                applied.put(e.getKey(), e.getValue());
            }
        }
        if (WARNED.add(setterName)) {
            LOG.warn("{}={} runs against RocksJava Options for kstate's RocksDB stores (store {}): applied as {}; could not "
                + "apply {} (kstate has no such option; tune kstate with the kstate.rocksdb.* keys)", SETTER_CONFIG,
                setterName, storeName, applied, unsupported.isEmpty() ? "nothing else" : unsupported);
        }
        return merged;
    }

    private static RocksDBConfigSetter instantiate(Object setterConfig) {
        try {
            if (setterConfig instanceof Class) {
                return Utils.newInstance((Class<?>) setterConfig, RocksDBConfigSetter.class);
            }
            return Utils.newInstance(String.valueOf(setterConfig).trim(), RocksDBConfigSetter.class);
        } catch (ClassNotFoundException | RuntimeException e) {
            throw new ConfigException(SETTER_CONFIG, setterConfig, "cannot instantiate the RocksDBConfigSetter: " + e);
        }
    }

    /** Options holding what Kafka's RocksDBStore sets before it calls the setter. */
    private static Options kafkaDefaults(List<AutoCloseable> owned) {
        Options o = new Options();
        owned.add(o);
        RecordingTableConfig table = new RecordingTableConfig();
        Cache cache = new LRUCache(KAFKA_BLOCK_CACHE_BYTES);
        owned.add(cache);
        BloomFilter filter = new BloomFilter();
        owned.add(filter);
        table.setBlockCache(cache);
        table.cacheSet = false;
        table.setBlockSize(KAFKA_BLOCK_SIZE);
        table.setFilterPolicy(filter);
        o.setTableFormatConfig(table);
        o.setWriteBufferSize(KAFKA_WRITE_BUFFER_BYTES);
        o.setMaxWriteBufferNumber(KAFKA_WRITE_BUFFER_COUNT);
        o.setCompressionType(CompressionType.NO_COMPRESSION);
        o.setCompactionStyle(CompactionStyle.UNIVERSAL);
        o.setCreateIfMissing(true);
        return o;
    }

    /**
     * The table options: the bloom filter and the block cache are kstate's; any other change
     * (block size, index and filter caching, a table format other than block-based) is not.
     */
    private static void readTable(Options options, Options untouched, RecordingTableConfig ourTable,
                                  Map<String, Object> implied, List<String> unsupported) {
        TableFormatConfig t = options.tableFormatConfig();
        if (!(t instanceof BlockBasedTableConfig)) {
            unsupported.add("tableFormatConfig=" + describe(t));
            return;
        }
        BlockBasedTableConfig table = (BlockBasedTableConfig) t;
        Map<String, Object> before = getters(untouched.tableFormatConfig());
        Map<String, Object> after = getters(table);
        boolean cacheChanged = table != ourTable || ourTable.cacheSet;
        for (Map.Entry<String, Object> e : after.entrySet()) {
            String name = e.getKey();
            Object was = before.get(name);
            if (name.equals("filterPolicy")) {
                if ((was == null) != (e.getValue() == null)) {
                    implied.put(KstateStoreOptions.BLOOM_FILTER_CONFIG, e.getValue() != null);
                }
            } else if (name.equals("blockCacheSize")) {
                cacheChanged |= !Objects.equals(was, e.getValue());
            } else if (!Objects.equals(was, e.getValue())) {
                unsupported.add("tableFormatConfig." + name + "=" + describe(e.getValue()));
            }
        }
        boolean writeBufferManager = options.writeBufferManager() != null;
        if (!cacheChanged && !writeBufferManager) {
            return;
        }
        // RocksJava has no getter for a cache's capacity: a probe database reports it, once per
        // cache object the setter hands to kstate's table config
        Cache known = table == ourTable && ourTable.cacheSet ? ourTable.cache : null;
        long capacity = known == null ? probeBlockCacheCapacity(options) : capacityOf(known, options);
        if (capacity <= 0) {
            unsupported.add("tableFormatConfig.blockCache (its capacity could not be read)");
        } else if (writeBufferManager) {
            // Kafka's bounded-memory pattern: one cache charged with the memtables, kstate's budget
            implied.put(KstateStoreOptions.BOUNDED_MEMORY_BYTES_CONFIG, capacity);
            unsupported.add("writeBufferManager's memtable limit (kstate's is the budget times "
                + KstateStoreOptions.BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG + ")");
        } else if (capacity != KAFKA_BLOCK_CACHE_BYTES) {
            implied.put(KstateStoreOptions.BLOCK_CACHE_BYTES_CONFIG, capacity);
        }
    }

    /**
     * The capacity of {@code cache}, which {@code options} use: probed once per cache object
     * (Kafka's bounded-memory setter hands the same static cache to every store), since the
     * probe opens a database, about 6-10 ms per store open (800 stores: 5-8 s of opening them).
     * A RocksJava cache's capacity cannot change.
     */
    private static long capacityOf(Cache cache, Options options) {
        Long known = CAPACITIES.get(cache);
        if (known != null) {
            return known;
        }
        long capacity = probeBlockCacheCapacity(options);
        if (capacity > 0) {
            CAPACITIES.put(cache, capacity);
        }
        return capacity;
    }

    /** @return the block cache capacity a database opened with these options reports, or -1 */
    private static long probeBlockCacheCapacity(Options options) {
        File dir = null;
        try {
            dir = Files.createTempDirectory("kstate-setter-probe").toFile();
            try (RocksDB db = RocksDB.open(options, dir.getAbsolutePath())) {
                return db.getLongProperty("rocksdb.block-cache-capacity");
            }
        } catch (Exception e) {
            LOG.debug("kstate: probing the block cache of the RocksDB config setter failed: {}", e.toString());
            return -1;
        } finally {
            if (dir != null) {
                File[] files = dir.listFiles();
                for (File f : files == null ? new File[0] : files) {
                    if (!f.delete()) {
                        LOG.debug("kstate: could not delete {}", f);
                    }
                }
                if (!dir.delete()) {
                    LOG.debug("kstate: could not delete {}", dir);
                }
            }
        }
    }

    /**
     * Every option getter of a RocksJava options object: public, no arguments, returning a
     * value (not the object itself, as the no-argument mutators such as
     * {@code optimizeForSmallDb()} do).
     */
    private static Map<String, Object> getters(Object options) {
        Map<String, Object> values = new TreeMap<>();
        for (Method m : options.getClass().getMethods()) {
            if (m.getParameterCount() != 0 || Modifier.isStatic(m.getModifiers()) || NOT_OPTIONS.contains(m.getName())
                || m.getReturnType() == void.class || m.getReturnType().isInstance(options)
                || m.getReturnType().isAssignableFrom(options.getClass())) {
                continue;
            }
            try {
                values.put(m.getName(), comparable(m.invoke(options)));
            } catch (ReflectiveOperationException | RuntimeException notReadable) {
                // an option RocksJava cannot read back (e.g. an unset object): never compared
            }
        }
        return values;
    }

    /**
     * Values compared by value; a RocksJava object (statistics, a write buffer manager, a row
     * cache...) by its class only, since the untouched options hold other instances or none, and
     * some getters wrap a fresh object on every call: setting one where there was none shows,
     * changing the insides of one does not.
     */
    private static Object comparable(Object v) {
        if (v == null || v instanceof Number || v instanceof Boolean || v instanceof String || v instanceof Enum) {
            return v;
        }
        if (v instanceof List) {
            List<Object> items = new ArrayList<>();
            for (Object item : (List<?>) v) {
                items.add(comparable(item));
            }
            return items;
        }
        return "a " + v.getClass().getSimpleName();
    }

    private static String describe(Object v) {
        return v == null ? "none" : v instanceof TableFormatConfig ? v.getClass().getSimpleName() : String.valueOf(v);
    }

    /** Kafka's table config as a setter receives it, noting whether the setter installed a block cache. */
    private static final class RecordingTableConfig extends BlockBasedTableConfig {
        private boolean cacheSet;
        /** The cache last given to {@link #setBlockCache}. */
        private Cache cache;

        @Override
        public BlockBasedTableConfig setBlockCache(Cache cache) {
            cacheSet = true;
            this.cache = cache;
            return super.setBlockCache(cache);
        }
    }
}
