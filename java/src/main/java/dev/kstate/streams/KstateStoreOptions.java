package dev.kstate.streams;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import dev.kstate.internal.NativeLoader;
import dev.kstate.internal.NativeStore;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Options of one kstate store. Unset options fall back to the application-wide
 * {@code kstate.*} keys of the Streams config (read in {@code init}), then to kstate's
 * defaults. Immutable; build with {@link KstateStores#builder(String)}.
 *
 * <table>
 * <caption>Application-wide keys</caption>
 * <tr><th>key</th><th>meaning</th><th>default</th></tr>
 * <tr><td>{@value #MAX_UNCOMMITTED_BYTES_CONFIG}</td><td>uncommitted bytes kept in memory before spilling to disk</td><td>64 MiB</td></tr>
 * <tr><td>{@value #SYNC_ON_COMMIT_CONFIG}</td><td>fsync the WAL on every commit</td><td>false</td></tr>
 * <tr><td>{@value #BLOCK_CACHE_BYTES_CONFIG}</td><td>RocksDB block cache per store (window and session stores: per live segment, at most 3, as Kafka's per-segment caches)</td><td>50 MiB</td></tr>
 * <tr><td>{@value #WRITE_BUFFER_BYTES_CONFIG}</td><td>RocksDB memtable size (the data of window and session stores: per live segment, at most 3)</td><td>16 MiB</td></tr>
 * <tr><td>{@value #WRITE_BUFFER_COUNT_CONFIG}</td><td>RocksDB memtables per column family before writes stall</td><td>3</td></tr>
 * <tr><td>{@value #BLOOM_FILTER_CONFIG}</td><td>bloom filters (10 bits per key) in RocksDB SST files</td><td>true</td></tr>
 * <tr><td>{@value #STATISTICS_CONFIG}</td><td>RocksDB statistics (the bytes-written/read-total metrics)</td><td>true when metrics.recording.level is DEBUG or TRACE</td></tr>
 * <tr><td>{@value #BOUNDED_MEMORY_BYTES_CONFIG}</td><td>one block cache of this size, charged with every memtable, shared by all kstate stores of the process with the same budget</td><td>unset: a cache per store</td></tr>
 * <tr><td>{@value #BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG}</td><td>part of the shared budget memtables may use before they are flushed</td><td>0.5</td></tr>
 * <tr><td>{@value #ENGINE_CONFIG}</td><td>engine of DSL stores made by {@link KstateDslStoreSuppliers}</td><td>rocksdb</td></tr>
 * <tr><td>{@value #STARTUP_PARK_MS_CONFIG}</td><td>how long a store opened by Kafka Streams' start-up path stays open
 * (parked) for the task's own initialisation to adopt it; 0 closes it as Kafka asks</td><td>60000</td></tr>
 * <tr><td>{@value #STARTUP_OPEN_AHEAD_CONFIG}</td><td>open the same store of the other local tasks in the background
 * while the start-up path opens one</td><td>true</td></tr>
 * <tr><td>{@value #STARTUP_DEFER_OPEN_CONFIG}</td><td>answer the start-up path from the store's offsets hint and open
 * the store in the background instead of on {@code KafkaStreams#start()}</td><td>true</td></tr>
 * <tr><td>{@value #CHECKPOINT_URI_CONFIG}</td><td>object store the RocksDB stores publish checkpoints to and restore
 * from ({@code file:///path}, {@code s3://bucket/prefix})</td><td>unset: off</td></tr>
 * <tr><td>{@value #CHECKPOINT_INTERVAL_MS_CONFIG}</td><td>ms between two publications of a store</td><td>300000</td></tr>
 * <tr><td>{@value #CHECKPOINT_KEEP_CONFIG}</td><td>checkpoints kept per store</td><td>2</td></tr>
 * <tr><td>{@value #CHECKPOINT_MAX_BYTES_PER_SEC_CONFIG}</td><td>upload bandwidth bound</td><td>unbounded</td></tr>
 * <tr><td>{@value #CHECKPOINT_MAX_RESTORE_BYTES_PER_SEC_CONFIG}</td><td>download bandwidth bound of the restores</td>
 * <td>unbounded</td></tr>
 * <tr><td>{@value #CHECKPOINT_GC_GRACE_MS_CONFIG}</td><td>age under which garbage collection keeps any file</td>
 * <td>3600000</td></tr>
 * <tr><td>{@value #CHECKPOINT_RESTORE_CONFIG}</td><td>restore a store without local state from the newest usable
 * checkpoint</td><td>true</td></tr>
 * <tr><td>{@value #CHECKPOINT_S3_PREFIX}{@code <name>}</td><td>S3 option {@code <name>} of object_store</td>
 * <td>the {@code AWS_*} environment</td></tr>
 * </table>
 */
public final class KstateStoreOptions {
    private static final Logger LOG = LoggerFactory.getLogger(KstateStoreOptions.class);
    /** Application-wide default of {@link Builder#maxUncommittedBytes}. */
    public static final String MAX_UNCOMMITTED_BYTES_CONFIG = "kstate.max.uncommitted.bytes";
    /** Application-wide default of {@link Builder#syncOnCommit}. */
    public static final String SYNC_ON_COMMIT_CONFIG = "kstate.sync.on.commit";
    /** Application-wide default of {@link Builder#blockCacheBytes}. */
    public static final String BLOCK_CACHE_BYTES_CONFIG = "kstate.rocksdb.block.cache.bytes";
    /** Application-wide default of {@link Builder#writeBufferBytes}. */
    public static final String WRITE_BUFFER_BYTES_CONFIG = "kstate.rocksdb.write.buffer.bytes";
    /** Application-wide default of {@link Builder#writeBufferCount}. */
    public static final String WRITE_BUFFER_COUNT_CONFIG = "kstate.rocksdb.write.buffer.count";
    /** Application-wide default of {@link Builder#bloomFilter}. */
    public static final String BLOOM_FILTER_CONFIG = "kstate.rocksdb.bloom.filter";
    /** Application-wide default of {@link Builder#statistics}. */
    public static final String STATISTICS_CONFIG = "kstate.rocksdb.statistics";
    /** Application-wide default of {@link Builder#boundedMemoryBytes}. */
    public static final String BOUNDED_MEMORY_BYTES_CONFIG = "kstate.rocksdb.bounded.memory.bytes";
    /** Application-wide default of {@link Builder#boundedMemoryMemtableRatio}. */
    public static final String BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG = "kstate.rocksdb.bounded.memory.memtable.ratio";
    /** Default of {@link #BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG}. */
    public static final double DEFAULT_BOUNDED_MEMORY_MEMTABLE_RATIO = 0.5;
    /** Kafka's key for the RocksDB config setter of its stores; see {@link #withRocksDbConfigSetter}. */
    static final String ROCKSDB_CONFIG_SETTER = "rocksdb.config.setter";
    /** Engine of the DSL stores made by {@link KstateDslStoreSuppliers}: rocksdb or memory. */
    public static final String ENGINE_CONFIG = "kstate.engine";
    /**
     * Milliseconds a RocksDB store opened by Kafka Streams' start-up path (Kafka 4.3+
     * {@code KafkaStreams#start()}, which opens and closes every store of the local task
     * directories) stays open, parked, for the task's next initialisation to adopt instead of
     * opening it again; 0 disables parking.
     */
    public static final String STARTUP_PARK_MS_CONFIG = "kstate.startup.park.ms";
    /** Default of {@link #STARTUP_PARK_MS_CONFIG}. */
    public static final long DEFAULT_STARTUP_PARK_MS = 60_000;
    /**
     * While Kafka Streams' start-up path opens a store, open the same store of the other local
     * tasks of its sub-topology in two background threads, parked for the path to adopt, so
     * that their write-ahead-log replays overlap (with parking only).
     */
    public static final String STARTUP_OPEN_AHEAD_CONFIG = "kstate.startup.open.ahead";
    /**
     * Answer Kafka Streams' start-up path from the offsets hint a RocksDB store writes after
     * each commit, and open the store in the background meanwhile (parked for the task's
     * initialisation to adopt), instead of opening it on the thread that runs
     * {@code KafkaStreams#start()} (with parking only).
     */
    public static final String STARTUP_DEFER_OPEN_CONFIG = "kstate.startup.defer.open";
    /**
     * Where RocksDB stores publish checkpoints of their committed state: {@code file:///path}
     * (a shared file system) or {@code s3://bucket/prefix}; unset (the default) turns
     * checkpoints in an object store off. A store without local state restores from the newest
     * usable one before Kafka Streams' changelog restore (see {@link #CHECKPOINT_RESTORE_CONFIG}).
     */
    public static final String CHECKPOINT_URI_CONFIG = CheckpointSettings.URI_CONFIG;
    /** Milliseconds between two background publications of a store (default 300000). */
    public static final String CHECKPOINT_INTERVAL_MS_CONFIG = CheckpointSettings.INTERVAL_MS_CONFIG;
    /** Checkpoints garbage collection keeps per store (default 2, at least 1). */
    public static final String CHECKPOINT_KEEP_CONFIG = CheckpointSettings.KEEP_CONFIG;
    /** Upload bandwidth bound of the process's target in bytes per second (default unbounded). */
    public static final String CHECKPOINT_MAX_BYTES_PER_SEC_CONFIG = CheckpointSettings.MAX_BYTES_PER_SEC_CONFIG;
    /** Download bandwidth bound of the process's restores from a target in bytes per second (default unbounded). */
    public static final String CHECKPOINT_MAX_RESTORE_BYTES_PER_SEC_CONFIG =
        CheckpointSettings.MAX_RESTORE_BYTES_PER_SEC_CONFIG;
    /** Garbage collection never deletes a file object younger than this many milliseconds (default 3600000). */
    public static final String CHECKPOINT_GC_GRACE_MS_CONFIG = CheckpointSettings.GC_GRACE_MS_CONFIG;
    /** Whether a store without local state restores from the newest usable checkpoint (default true). */
    public static final String CHECKPOINT_RESTORE_CONFIG = CheckpointSettings.RESTORE_CONFIG;
    /**
     * Prefix of the S3 options passed to object_store: {@code kstate.checkpoint.s3.<name>} is
     * the option {@code <name>} ({@code endpoint}, {@code region}, {@code access_key_id},
     * {@code secret_access_key}, {@code allow_http}...), applied after the {@code AWS_*}
     * environment.
     */
    public static final String CHECKPOINT_S3_PREFIX = CheckpointSettings.S3_PREFIX;

    /**
     * How values are laid out. A store opens with its own format or a later one (PLAIN &lt;
     * TIMESTAMPED &lt; HEADERS); a later one upgrades it in place, lazily (KIP-258, KIP-1271).
     */
    public enum ValueFormat {
        /** Values as handed over (Kafka's {@code RocksDBStore}). */
        PLAIN(dev.kstate.internal.KstateNative.FORMAT_PLAIN),
        /** Kafka's {@code ValueAndTimestamp} layout: a {@code TimestampedBytesStore}. */
        TIMESTAMPED(dev.kstate.internal.KstateNative.FORMAT_TIMESTAMPED),
        /**
         * Kafka 4.3+'s {@code ValueTimestampHeaders} layout (KIP-1271): a {@code HeadersBytesStore},
         * byte-compatible with {@code RocksDBTimestampedStoreWithHeaders}. Needs Kafka Streams 4.3+.
         */
        HEADERS(dev.kstate.internal.KstateNative.FORMAT_HEADERS);

        final int nativeNumber;

        ValueFormat(int nativeNumber) {
            this.nativeNumber = nativeNumber;
        }
    }

    /** Storage engine. */
    public enum Engine {
        /** RocksDB under {@code stateDir()/<name>/}: persistent. */
        ROCKSDB,
        /** Process memory, same transactional semantics: not persistent. */
        MEMORY;

        static Engine parse(Object value) {
            String s = String.valueOf(value).trim().toUpperCase(Locale.ROOT);
            if (s.equals("ROCKSDB") || s.equals("ROCKS_DB")) {
                return ROCKSDB;
            }
            if (s.equals("MEMORY") || s.equals("IN_MEMORY") || s.equals("IN-MEMORY")) {
                return MEMORY;
            }
            throw new ConfigException(ENGINE_CONFIG, value, "accepted values: rocksdb, memory");
        }
    }

    final String name;
    final Engine engine;
    final boolean timestamped;
    final ValueFormat valueFormat;
    final Long maxUncommittedBytes;
    final Boolean syncOnCommit;
    final Long blockCacheBytes;
    final Long writeBufferBytes;
    final Integer writeBufferCount;
    final Boolean bloomFilter;
    final Boolean statistics;
    final Long boundedMemoryBytes;
    final Double boundedMemoryMemtableRatio;

    private KstateStoreOptions(Builder b) {
        // A store is about to be declared: have libkstate ready by the time it opens.
        NativeLoader.preload();
        this.name = b.name;
        this.engine = b.engine;
        this.valueFormat = b.valueFormat;
        this.timestamped = b.valueFormat != ValueFormat.PLAIN;
        this.maxUncommittedBytes = b.maxUncommittedBytes;
        this.syncOnCommit = b.syncOnCommit;
        this.blockCacheBytes = b.blockCacheBytes;
        this.writeBufferBytes = b.writeBufferBytes;
        this.writeBufferCount = b.writeBufferCount;
        this.bloomFilter = b.bloomFilter;
        this.statistics = b.statistics;
        this.boundedMemoryBytes = b.boundedMemoryBytes;
        this.boundedMemoryMemtableRatio = b.boundedMemoryMemtableRatio;
    }

    /** @return the store name */
    public String name() {
        return name;
    }

    /** @return the engine */
    public Engine engine() {
        return engine;
    }

    /** @return whether values carry timestamps (timestamped or headers format) */
    public boolean timestamped() {
        return timestamped;
    }

    /** @return the value format */
    public ValueFormat valueFormat() {
        return valueFormat;
    }

    long resolvedMaxUncommittedBytes(Map<String, Object> appConfigs) {
        return maxUncommittedBytes != null ? maxUncommittedBytes : longConfig(appConfigs, MAX_UNCOMMITTED_BYTES_CONFIG, 0);
    }

    boolean resolvedSyncOnCommit(Map<String, Object> appConfigs) {
        if (syncOnCommit != null) {
            return syncOnCommit;
        }
        return booleanConfig(appConfigs, SYNC_ON_COMMIT_CONFIG, false);
    }

    /**
     * A boolean {@code kstate.*} key: a Boolean, or the string true/false (any case).
     *
     * @throws ConfigException naming the key and the accepted values for anything else
     */
    static boolean booleanConfig(Map<String, ?> configs, String key, boolean fallback) {
        Object v = configs == null ? null : configs.get(key);
        if (v == null) {
            return fallback;
        }
        if (v instanceof Boolean) {
            return (Boolean) v;
        }
        String s = String.valueOf(v).trim();
        if (s.equalsIgnoreCase("true")) {
            return true;
        }
        if (s.equalsIgnoreCase("false")) {
            return false;
        }
        throw new ConfigException(key, v, "accepted values: true, false");
    }

    /** Every application-wide key kstate reads. */
    static final List<String> KNOWN_KEYS = Collections.unmodifiableList(Arrays.asList(MAX_UNCOMMITTED_BYTES_CONFIG,
        SYNC_ON_COMMIT_CONFIG, BLOCK_CACHE_BYTES_CONFIG, WRITE_BUFFER_BYTES_CONFIG, WRITE_BUFFER_COUNT_CONFIG,
        BLOOM_FILTER_CONFIG, STATISTICS_CONFIG, BOUNDED_MEMORY_BYTES_CONFIG, BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG,
        ENGINE_CONFIG, STARTUP_PARK_MS_CONFIG, STARTUP_OPEN_AHEAD_CONFIG, STARTUP_DEFER_OPEN_CONFIG,
        CHECKPOINT_URI_CONFIG, CHECKPOINT_INTERVAL_MS_CONFIG, CHECKPOINT_KEEP_CONFIG, CHECKPOINT_MAX_BYTES_PER_SEC_CONFIG,
        CHECKPOINT_MAX_RESTORE_BYTES_PER_SEC_CONFIG, CHECKPOINT_GC_GRACE_MS_CONFIG, CHECKPOINT_RESTORE_CONFIG));
    private static final Set<String> WARNED_KEYS = ConcurrentHashMap.newKeySet();

    /**
     * Warns once per key about {@code kstate.*} keys kstate does not know (a typo, or the
     * removed {@code kstate.interactive.query.isolation.level}), which would otherwise be
     * silently ignored.
     */
    static void warnAboutUnknownKeys(Map<String, ?> configs) {
        if (configs == null) {
            return;
        }
        for (String key : configs.keySet()) {
            if (key.startsWith("kstate.") && !KNOWN_KEYS.contains(key) && !key.startsWith(CHECKPOINT_S3_PREFIX)
                && WARNED_KEYS.add(key)) {
                LOG.warn("Unknown kstate config {} is ignored; kstate's keys are {}{}", key, KNOWN_KEYS,
                    key.equals("kstate.interactive.query.isolation.level")
                        ? " (the IQ isolation level now comes from Kafka Streams' default.interactive.query.isolation.level "
                        + "and from each IQv2 query)" : "");
            }
        }
    }

    /**
     * The configs a RocksDB store resolves its options from: with Kafka's
     * {@code rocksdb.config.setter} set, the application's configs plus the
     * {@code kstate.rocksdb.*} values the setter implies (see {@link RocksDbConfigSetterBridge},
     * which RocksJava is loaded for only then); else the configs as they are.
     *
     * @param storeName the store, passed to the setter
     * @param configs the application's configs
     * @return the configs to resolve from
     */
    static Map<String, Object> withRocksDbConfigSetter(String storeName, Map<String, Object> configs) {
        if (configs == null || configs.get(ROCKSDB_CONFIG_SETTER) == null) {
            return configs;
        }
        return RocksDbConfigSetterBridge.withSetterOptions(storeName, configs);
    }

    long resolvedBlockCacheBytes(Map<String, Object> appConfigs) {
        return blockCacheBytes != null ? blockCacheBytes : longConfig(appConfigs, BLOCK_CACHE_BYTES_CONFIG, 0);
    }

    long resolvedWriteBufferBytes(Map<String, Object> appConfigs) {
        return writeBufferBytes != null ? writeBufferBytes : longConfig(appConfigs, WRITE_BUFFER_BYTES_CONFIG, 0);
    }

    int resolvedWriteBufferCount(Map<String, Object> appConfigs) {
        return writeBufferCount != null ? writeBufferCount : writeBufferCountConfig(appConfigs);
    }

    /** {@link #WRITE_BUFFER_COUNT_CONFIG}: an integer from 1 to 1000, or 0 (kstate's default) when absent. */
    private static int writeBufferCountConfig(Map<String, ?> configs) {
        long n = longConfig(configs, WRITE_BUFFER_COUNT_CONFIG, 0, "accepted values: an integer from 1 to 1000");
        if (n > 1000) {
            throw new ConfigException(WRITE_BUFFER_COUNT_CONFIG, configs.get(WRITE_BUFFER_COUNT_CONFIG),
                "accepted values: an integer from 1 to 1000");
        }
        return (int) n;
    }

    boolean resolvedBloomFilter(Map<String, Object> appConfigs) {
        return bloomFilter != null ? bloomFilter : booleanConfig(appConfigs, BLOOM_FILTER_CONFIG, true);
    }

    /** Statistics default to on when Kafka's metrics.recording.level is DEBUG or TRACE, as Kafka's stores. */
    boolean resolvedStatistics(Map<String, Object> appConfigs) {
        if (statistics != null) {
            return statistics;
        }
        Object level = appConfigs == null ? null : appConfigs.get(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG);
        String l = level == null ? "" : String.valueOf(level).trim();
        boolean debug = l.equalsIgnoreCase("DEBUG") || l.equalsIgnoreCase("TRACE");
        return booleanConfig(appConfigs, STATISTICS_CONFIG, debug);
    }

    long resolvedBoundedMemoryBytes(Map<String, Object> appConfigs) {
        return boundedMemoryBytes != null ? boundedMemoryBytes : longConfig(appConfigs, BOUNDED_MEMORY_BYTES_CONFIG, 0);
    }

    double resolvedBoundedMemoryMemtableRatio(Map<String, Object> appConfigs) {
        return boundedMemoryMemtableRatio != null ? boundedMemoryMemtableRatio : memtableRatioConfig(appConfigs);
    }

    /** {@link #BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG}: strictly between 0 and 1, its default when absent. */
    private static double memtableRatioConfig(Map<String, ?> appConfigs) {
        Object v = appConfigs == null ? null : appConfigs.get(BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG);
        if (v == null) {
            return DEFAULT_BOUNDED_MEMORY_MEMTABLE_RATIO;
        }
        double parsed;
        try {
            parsed = v instanceof Number ? ((Number) v).doubleValue() : Double.parseDouble(String.valueOf(v).trim());
        } catch (NumberFormatException e) {
            throw new ConfigException(BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG, v, RATIO_ACCEPTED);
        }
        if (!validRatio(parsed)) {
            throw new ConfigException(BOUNDED_MEMORY_MEMTABLE_RATIO_CONFIG, v, RATIO_ACCEPTED);
        }
        return parsed;
    }

    private static final String RATIO_ACCEPTED = "accepted values: a number strictly between 0 and 1, such as 0.5";

    private static boolean validRatio(double r) {
        return r > 0 && r < 1;
    }

    /**
     * The RocksDB tuning this store opens with: its own options, else the app's keys, else kstate's
     * defaults; plus whether a Kafka store left open is adopted, which follows the processing
     * guarantee as in Kafka ({@link KafkaStoreCommits#opensLeftOpen}).
     */
    NativeStore.RocksTuning resolvedRocksTuning(Map<String, Object> appConfigs) {
        long bounded = resolvedBoundedMemoryBytes(appConfigs);
        long memtables = bounded > 0 ? memtableBytes(bounded, resolvedBoundedMemoryMemtableRatio(appConfigs)) : 0;
        return new NativeStore.RocksTuning(resolvedBlockCacheBytes(appConfigs), resolvedWriteBufferBytes(appConfigs),
            resolvedWriteBufferCount(appConfigs), resolvedBloomFilter(appConfigs), resolvedStatistics(appConfigs),
            bounded, memtables).withAdoptLeftOpen(KafkaStoreCommits.opensLeftOpen(appConfigs));
    }

    /**
     * The memtables' share of a bounded memory budget.
     *
     * @throws ConfigException when it would leave no room for the block cache
     */
    private static long memtableBytes(long bounded, double ratio) {
        long memtables = Math.max(1, (long) (bounded * ratio));
        if (memtables >= bounded) {
            throw new ConfigException(BOUNDED_MEMORY_BYTES_CONFIG, bounded,
                "accepted values: a number of bytes large enough for the memtable ratio " + ratio + " to leave room"
                    + " for the block cache (at least 2)");
        }
        return memtables;
    }

    /**
     * Checks every {@code kstate.*} key of an application's config at once, where kstate first
     * reads it ({@code init} of any kstate store, {@link KstateDslStoreSuppliers#configure}),
     * whether or not this store or this start-up uses the key: a value that only the start-up
     * path or a bounded budget would read fails here too, not on some later restart. Unknown
     * {@code kstate.*} keys are reported (WARN, once per key), not refused: a key of a newer
     * kstate must not stop an application that downgraded.
     *
     * @param configs the application's configs
     * @throws ConfigException naming the first bad key, its value and the accepted values
     */
    static void validate(Map<String, ?> configs) {
        if (configs == null) {
            return;
        }
        longConfig(configs, MAX_UNCOMMITTED_BYTES_CONFIG, 0);
        booleanConfig(configs, SYNC_ON_COMMIT_CONFIG, false);
        longConfig(configs, BLOCK_CACHE_BYTES_CONFIG, 0);
        longConfig(configs, WRITE_BUFFER_BYTES_CONFIG, 0);
        writeBufferCountConfig(configs);
        booleanConfig(configs, BLOOM_FILTER_CONFIG, true);
        booleanConfig(configs, STATISTICS_CONFIG, false);
        double ratio = memtableRatioConfig(configs);
        long bounded = longConfig(configs, BOUNDED_MEMORY_BYTES_CONFIG, 0);
        if (bounded > 0) {
            memtableBytes(bounded, ratio);
        }
        if (configs.get(ENGINE_CONFIG) != null) {
            Engine.parse(configs.get(ENGINE_CONFIG));
        }
        resolvedStartupParkMs(configs);
        resolvedStartupOpenAhead(configs);
        resolvedStartupDeferOpen(configs);
        CheckpointSettings.of(configs);
        warnAboutUnknownKeys(configs);
    }

    /**
     * {@link #STARTUP_PARK_MS_CONFIG}: a number of milliseconds, 0 or more.
     *
     * @throws ConfigException naming the key and the accepted values for anything else
     */
    static long resolvedStartupParkMs(Map<String, ?> configs) {
        return longAtLeast(configs, STARTUP_PARK_MS_CONFIG, DEFAULT_STARTUP_PARK_MS, 0,
            "accepted values: a number of milliseconds, 0 or more (0 disables parking)");
    }

    /** {@link #STARTUP_OPEN_AHEAD_CONFIG}: true unless set to false. */
    static boolean resolvedStartupOpenAhead(Map<String, ?> configs) {
        return booleanConfig(configs, STARTUP_OPEN_AHEAD_CONFIG, true);
    }

    /** {@link #STARTUP_DEFER_OPEN_CONFIG}: true unless set to false. */
    static boolean resolvedStartupDeferOpen(Map<String, ?> configs) {
        return booleanConfig(configs, STARTUP_DEFER_OPEN_CONFIG, true);
    }

    static long longConfig(Map<String, ?> configs, String key, long fallback) {
        return longConfig(configs, key, fallback, "accepted values: a positive number of bytes");
    }

    static long longConfig(Map<String, ?> configs, String key, long fallback, String accepted) {
        return longAtLeast(configs, key, fallback, 1, accepted);
    }

    /**
     * A whole number of at least {@code min} under {@code key} (a number or its text), or
     * {@code fallback} when the key is absent.
     *
     * @throws ConfigException naming the key, the value and {@code accepted} for anything else
     */
    static long longAtLeast(Map<String, ?> configs, String key, long fallback, long min, String accepted) {
        Object v = configs == null ? null : configs.get(key);
        if (v == null) {
            return fallback;
        }
        long parsed;
        if (v instanceof Number) {
            parsed = ((Number) v).longValue();
        } else {
            try {
                parsed = Long.parseLong(String.valueOf(v).trim());
            } catch (NumberFormatException e) {
                throw new ConfigException(key, v, accepted);
            }
        }
        if (parsed < min) {
            throw new ConfigException(key, v, accepted);
        }
        return parsed;
    }

    @Override
    public String toString() {
        return "KstateStoreOptions{name=" + name + ", engine=" + engine + ", valueFormat=" + valueFormat
            + ", maxUncommittedBytes=" + maxUncommittedBytes + ", syncOnCommit=" + syncOnCommit
            + ", blockCacheBytes=" + blockCacheBytes + ", writeBufferBytes=" + writeBufferBytes
            + ", writeBufferCount=" + writeBufferCount + ", bloomFilter=" + bloomFilter + ", statistics=" + statistics
            + ", boundedMemoryBytes=" + boundedMemoryBytes + ", boundedMemoryMemtableRatio=" + boundedMemoryMemtableRatio
            + "}";
    }

    /** Builder of per-store options; see {@link KstateStores#builder(String)}. */
    public static final class Builder {
        private final String name;
        private Engine engine = Engine.ROCKSDB;
        private ValueFormat valueFormat = ValueFormat.TIMESTAMPED;
        private Long maxUncommittedBytes;
        private Boolean syncOnCommit;
        private Long blockCacheBytes;
        private Long writeBufferBytes;
        private Integer writeBufferCount;
        private Boolean bloomFilter;
        private Boolean statistics;
        private Long boundedMemoryBytes;
        private Double boundedMemoryMemtableRatio;

        Builder(String name) {
            if (name == null) {
                throw new NullPointerException("name cannot be null");
            }
            this.name = name;
        }

        /**
         * @param engine RocksDB (default) or memory
         * @return this
         */
        public Builder engine(Engine engine) {
            if (engine == null) {
                throw new NullPointerException("engine cannot be null");
            }
            this.engine = engine;
            return this;
        }

        /**
         * @param timestamped true (default) for a {@code TimestampedBytesStore}
         * @return this
         */
        public Builder timestamped(boolean timestamped) {
            this.valueFormat = timestamped ? ValueFormat.TIMESTAMPED : ValueFormat.PLAIN;
            return this;
        }

        /**
         * @param format the value format (default TIMESTAMPED); HEADERS makes a
         *     {@code HeadersBytesStore} for {@code Stores.timestampedKeyValueStoreBuilderWithHeaders}
         * @return this
         */
        public Builder valueFormat(ValueFormat format) {
            if (format == null) {
                throw new NullPointerException("format cannot be null");
            }
            this.valueFormat = format;
            return this;
        }

        /**
         * @param bytes uncommitted bytes held in memory before spilling to disk (positive)
         * @return this
         */
        public Builder maxUncommittedBytes(long bytes) {
            this.maxUncommittedBytes = checked("maxUncommittedBytes", bytes, 1, Long.MAX_VALUE, "positive");
            return this;
        }

        /**
         * @param sync fsync the RocksDB WAL on every commit
         * @return this
         */
        public Builder syncOnCommit(boolean sync) {
            this.syncOnCommit = sync;
            return this;
        }

        /**
         * @param bytes RocksDB block cache size (positive); a window or session store's cache
         *     holds this per segment live at its retention (at most 3), as Kafka's stores have
         *     a cache per segment
         * @return this
         */
        public Builder blockCacheBytes(long bytes) {
            this.blockCacheBytes = checked("blockCacheBytes", bytes, 1, Long.MAX_VALUE, "positive");
            return this;
        }

        /**
         * @param bytes RocksDB write buffer (memtable) size (positive); a window or session
         *     store's data memtable holds this per segment live at its retention (at most 3),
         *     as Kafka's stores have memtables per segment
         * @return this
         */
        public Builder writeBufferBytes(long bytes) {
            this.writeBufferBytes = checked("writeBufferBytes", bytes, 1, Long.MAX_VALUE, "positive");
            return this;
        }

        /**
         * @param count RocksDB memtables per column family before writes stall (1 to 1000)
         * @return this
         */
        public Builder writeBufferCount(int count) {
            this.writeBufferCount = (int) checked("writeBufferCount", count, 1, 1000, "from 1 to 1000");
            return this;
        }

        /**
         * @param enabled bloom filters (10 bits per key) in RocksDB SST files (default true)
         * @return this
         */
        public Builder bloomFilter(boolean enabled) {
            this.bloomFilter = enabled;
            return this;
        }

        /**
         * @param enabled RocksDB statistics, which the bytes-written-total / bytes-read-total metrics need
         * @return this
         */
        public Builder statistics(boolean enabled) {
            this.statistics = enabled;
            return this;
        }

        /**
         * @param bytes total of the process-wide memory budget this store shares with every kstate store
         *     opened with the same budget: one block cache, charged with the memtables (positive)
         * @return this
         */
        public Builder boundedMemoryBytes(long bytes) {
            this.boundedMemoryBytes = checked("boundedMemoryBytes", bytes, 2, Long.MAX_VALUE, "at least 2");
            return this;
        }

        /**
         * @param ratio part of the shared budget memtables may use before they are flushed (strictly between 0 and 1)
         * @return this
         */
        public Builder boundedMemoryMemtableRatio(double ratio) {
            if (!validRatio(ratio)) {
                throw new IllegalArgumentException("boundedMemoryMemtableRatio must be strictly between 0 and 1: " + ratio);
            }
            this.boundedMemoryMemtableRatio = ratio;
            return this;
        }

        /** The setters' bounds check, with one message form: "{@code <option> must be <rule>: <value>}". */
        private static long checked(String option, long value, long min, long max, String rule) {
            if (value < min || value > max) {
                throw new IllegalArgumentException(option + " must be " + rule + ": " + value);
            }
            return value;
        }

        /** @return the options */
        public KstateStoreOptions options() {
            return new KstateStoreOptions(this);
        }

        /** @return a supplier of stores with these options */
        public KstateKeyValueBytesStoreSupplier build() {
            KstateStoreOptions options = options();
            // The DSL picks the headers store builder by the supplier's marker interface
            // (HeadersBytesStoreSupplier, Kafka 4.3+), which only that subclass references;
            // create() keeps the class unloaded (and this method verifiable) on Kafka 4.0-4.2.
            return options.valueFormat == ValueFormat.HEADERS
                ? KstateHeadersKeyValueBytesStoreSupplier.create(options)
                : new KstateKeyValueBytesStoreSupplier(options);
        }

        /**
         * A supplier of window stores with these options, validated as Kafka's
         * {@code Stores.persistentWindowStore} validates its arguments.
         *
         * @param retentionPeriod how long windows are kept (not negative, at least {@code windowSize})
         * @param windowSize the window size (not negative)
         * @param retainDuplicates keep every put (stream-stream joins), as Kafka's {@code retainDuplicates}
         * @return the supplier
         * @throws IllegalArgumentException as Kafka's {@code Stores}, with its messages
         */
        public KstateWindowBytesStoreSupplier buildWindowStore(java.time.Duration retentionPeriod,
                                                               java.time.Duration windowSize, boolean retainDuplicates) {
            long retentionMs = KstateStores.millis(retentionPeriod, "retentionPeriod");
            long windowSizeMs = KstateStores.millis(windowSize, "windowSize");
            if (retentionMs < 0L) {
                throw new IllegalArgumentException("retentionPeriod cannot be negative");
            }
            if (windowSizeMs < 0L) {
                throw new IllegalArgumentException("windowSize cannot be negative");
            }
            if (windowSizeMs > retentionMs) {
                throw new IllegalArgumentException("The retention period of the window store " + name
                    + " must be no smaller than its window size. Got size=[" + windowSize + "], retention=["
                    + retentionPeriod + "]");
            }
            // HeadersBytesStoreSupplier (Kafka 4.3+) is referenced only by that subclass, as in build()
            return valueFormat == ValueFormat.HEADERS
                ? KstateHeadersWindowBytesStoreSupplier.create(options(), retentionMs, windowSizeMs, retainDuplicates)
                : new KstateWindowBytesStoreSupplier(options(), retentionMs, windowSizeMs, retainDuplicates);
        }

        /**
         * A supplier of versioned key-value stores (KIP-889) with these options (the timestamped
         * flag and value format do not apply: a version carries its timestamp), validated as
         * Kafka's {@code Stores.persistentVersionedKeyValueStore} validates its arguments.
         *
         * @param historyRetention how long older versions stay readable (not negative), also the grace period of
         *     writes
         * @param segmentInterval granularity at which expired history is dropped (positive), or null for Kafka's
         *     default for the retention; fixed when the store is created
         * @return the supplier
         * @throws IllegalArgumentException as Kafka's {@code Stores}, with its messages
         */
        public KstateVersionedBytesStoreSupplier buildVersionedStore(java.time.Duration historyRetention,
                                                                     java.time.Duration segmentInterval) {
            long historyRetentionMs = KstateStores.millis(historyRetention, "historyRetention");
            if (historyRetentionMs < 0L) {
                throw new IllegalArgumentException("historyRetention cannot be negative");
            }
            long segmentIntervalMs = 0;
            if (segmentInterval != null) {
                segmentIntervalMs = KstateStores.millis(segmentInterval, "segmentInterval");
                if (segmentIntervalMs < 1L) {
                    throw new IllegalArgumentException("segmentInterval cannot be zero or negative");
                }
            }
            return new KstateVersionedBytesStoreSupplier(options(), historyRetentionMs, segmentIntervalMs);
        }

        /**
         * A supplier of session stores with these options (the timestamped flag does not apply:
         * session aggregates carry no timestamp, as in Kafka; the {@code HEADERS} value format
         * gives Kafka 4.3+'s {@code AggregationWithHeaders} layout and a {@code HeadersBytesStoreSupplier}).
         *
         * @param retentionPeriod how long sessions are kept (not negative)
         * @return the supplier
         * @throws IllegalArgumentException as Kafka's {@code Stores.persistentSessionStore}, with its messages
         */
        public KstateSessionBytesStoreSupplier buildSessionStore(java.time.Duration retentionPeriod) {
            long retentionMs = KstateStores.millis(retentionPeriod, "retentionPeriod");
            if (retentionMs < 0L) {
                throw new IllegalArgumentException("retentionPeriod cannot be negative");
            }
            return valueFormat == ValueFormat.HEADERS
                ? KstateHeadersSessionBytesStoreSupplier.create(options(), retentionMs)
                : new KstateSessionBytesStoreSupplier(options(), retentionMs);
        }
    }
}
