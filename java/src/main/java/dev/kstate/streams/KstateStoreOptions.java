package dev.kstate.streams;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.config.ConfigException;
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
 * <tr><td>{@value #BLOCK_CACHE_BYTES_CONFIG}</td><td>RocksDB block cache per store</td><td>50 MiB</td></tr>
 * <tr><td>{@value #WRITE_BUFFER_BYTES_CONFIG}</td><td>RocksDB memtable size</td><td>16 MiB</td></tr>
 * <tr><td>{@value #ENGINE_CONFIG}</td><td>engine of DSL stores made by {@link KstateDslStoreSuppliers}</td><td>rocksdb</td></tr>
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
    /** Engine of the DSL stores made by {@link KstateDslStoreSuppliers}: rocksdb or memory. */
    public static final String ENGINE_CONFIG = "kstate.engine";

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
    final Long maxUncommittedBytes;
    final Boolean syncOnCommit;
    final Long blockCacheBytes;
    final Long writeBufferBytes;

    private KstateStoreOptions(Builder b) {
        this.name = b.name;
        this.engine = b.engine;
        this.timestamped = b.timestamped;
        this.maxUncommittedBytes = b.maxUncommittedBytes;
        this.syncOnCommit = b.syncOnCommit;
        this.blockCacheBytes = b.blockCacheBytes;
        this.writeBufferBytes = b.writeBufferBytes;
    }

    /** @return the store name */
    public String name() {
        return name;
    }

    /** @return the engine */
    public Engine engine() {
        return engine;
    }

    /** @return whether values carry timestamps (a {@code TimestampedBytesStore}) */
    public boolean timestamped() {
        return timestamped;
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
        SYNC_ON_COMMIT_CONFIG, BLOCK_CACHE_BYTES_CONFIG, WRITE_BUFFER_BYTES_CONFIG, ENGINE_CONFIG));
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
            if (key.startsWith("kstate.") && !KNOWN_KEYS.contains(key) && WARNED_KEYS.add(key)) {
                LOG.warn("Unknown kstate config {} is ignored; kstate's keys are {}{}", key, KNOWN_KEYS,
                    key.equals("kstate.interactive.query.isolation.level")
                        ? " (the IQ isolation level now comes from Kafka Streams' default.interactive.query.isolation.level "
                        + "and from each IQv2 query)" : "");
            }
        }
    }

    long resolvedBlockCacheBytes(Map<String, Object> appConfigs) {
        return blockCacheBytes != null ? blockCacheBytes : longConfig(appConfigs, BLOCK_CACHE_BYTES_CONFIG, 0);
    }

    long resolvedWriteBufferBytes(Map<String, Object> appConfigs) {
        return writeBufferBytes != null ? writeBufferBytes : longConfig(appConfigs, WRITE_BUFFER_BYTES_CONFIG, 0);
    }

    static long longConfig(Map<String, ?> configs, String key, long fallback) {
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
                throw new ConfigException(key, v, "accepted values: a positive number of bytes");
            }
        }
        if (parsed <= 0) {
            throw new ConfigException(key, v, "accepted values: a positive number of bytes");
        }
        return parsed;
    }

    @Override
    public String toString() {
        return "KstateStoreOptions{name=" + name + ", engine=" + engine + ", timestamped=" + timestamped
            + ", maxUncommittedBytes=" + maxUncommittedBytes + ", syncOnCommit=" + syncOnCommit
            + ", blockCacheBytes=" + blockCacheBytes + ", writeBufferBytes=" + writeBufferBytes + "}";
    }

    /** Builder of per-store options; see {@link KstateStores#builder(String)}. */
    public static final class Builder {
        private final String name;
        private Engine engine = Engine.ROCKSDB;
        private boolean timestamped = true;
        private Long maxUncommittedBytes;
        private Boolean syncOnCommit;
        private Long blockCacheBytes;
        private Long writeBufferBytes;

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
            this.timestamped = timestamped;
            return this;
        }

        /**
         * @param bytes uncommitted bytes held in memory before spilling to disk (positive)
         * @return this
         */
        public Builder maxUncommittedBytes(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("maxUncommittedBytes must be positive: " + bytes);
            }
            this.maxUncommittedBytes = bytes;
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
         * @param bytes RocksDB block cache size (positive)
         * @return this
         */
        public Builder blockCacheBytes(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("blockCacheBytes must be positive: " + bytes);
            }
            this.blockCacheBytes = bytes;
            return this;
        }

        /**
         * @param bytes RocksDB write buffer (memtable) size (positive)
         * @return this
         */
        public Builder writeBufferBytes(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("writeBufferBytes must be positive: " + bytes);
            }
            this.writeBufferBytes = bytes;
            return this;
        }

        /** @return the options */
        public KstateStoreOptions options() {
            return new KstateStoreOptions(this);
        }

        /** @return a supplier of stores with these options */
        public KstateKeyValueBytesStoreSupplier build() {
            return new KstateKeyValueBytesStoreSupplier(options());
        }
    }
}
