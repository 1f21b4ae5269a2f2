package dev.kstate.streams;

import java.time.Duration;
import org.apache.kafka.streams.internals.ApiUtils;

/**
 * Factory of kstate stores, mirroring Kafka's {@code Stores}. The suppliers plug into
 * {@code Materialized.as(supplier)}, {@code Stores.timestampedKeyValueStoreBuilder(supplier,
 * ...)} and {@code Stores.keyValueStoreBuilder(supplier, ...)}; for every DSL store at once
 * see {@link KstateDslStoreSuppliers}.
 */
public final class KstateStores {
    private KstateStores() {
    }

    /**
     * @param name store name (also its directory under the task's state directory)
     * @return a supplier of persistent (RocksDB), timestamped, transactional stores
     */
    public static KstateKeyValueBytesStoreSupplier persistentTimestampedKeyValueStore(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).timestamped(true).build();
    }

    /**
     * @param name store name
     * @return a supplier of in-memory, timestamped, transactional stores
     */
    public static KstateKeyValueBytesStoreSupplier inMemoryTimestampedKeyValueStore(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.MEMORY).timestamped(true).build();
    }

    /**
     * @param name store name (also its directory under the task's state directory)
     * @return a supplier of persistent (RocksDB), transactional stores in Kafka 4.3+'s headers
     *     format (KIP-1271, a {@code HeadersBytesStore}) for
     *     {@code Stores.timestampedKeyValueStoreBuilderWithHeaders}; byte-compatible with
     *     {@code RocksDBTimestampedStoreWithHeaders}, and upgrades a timestamped or plain store in place
     */
    public static KstateKeyValueBytesStoreSupplier persistentTimestampedKeyValueStoreWithHeaders(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB)
            .valueFormat(KstateStoreOptions.ValueFormat.HEADERS).build();
    }

    /**
     * @param name store name
     * @return a supplier of in-memory, transactional stores in the headers format
     */
    public static KstateKeyValueBytesStoreSupplier inMemoryTimestampedKeyValueStoreWithHeaders(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.MEMORY)
            .valueFormat(KstateStoreOptions.ValueFormat.HEADERS).build();
    }

    /**
     * @param name store name
     * @return a supplier of persistent (RocksDB) stores without timestamps
     */
    public static KstateKeyValueBytesStoreSupplier persistentKeyValueStore(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).timestamped(false).build();
    }

    /**
     * @param name store name
     * @return a supplier of in-memory stores without timestamps
     */
    public static KstateKeyValueBytesStoreSupplier inMemoryKeyValueStore(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.MEMORY).timestamped(false).build();
    }

    /**
     * A persistent (RocksDB) timestamped window store, as Kafka's
     * {@code Stores.persistentTimestampedWindowStore}: the store is a {@code TimestampedBytesStore}.
     *
     * @param name store name (also its directory under the task's state directory)
     * @param retentionPeriod how long windows are kept (not negative, at least {@code windowSize})
     * @param windowSize the window size (not negative)
     * @param retainDuplicates keep every put under its own seqnum (stream-stream joins)
     * @return the supplier
     * @throws IllegalArgumentException for the arguments Kafka's {@code Stores} refuses, with its messages
     */
    public static KstateWindowBytesStoreSupplier persistentTimestampedWindowStore(String name, Duration retentionPeriod,
                                                                                  Duration windowSize,
                                                                                  boolean retainDuplicates) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).timestamped(true)
            .buildWindowStore(retentionPeriod, windowSize, retainDuplicates);
    }

    /**
     * A persistent (RocksDB) window store without timestamps, as Kafka's
     * {@code Stores.persistentWindowStore} (for Processor API users who want no timestamps).
     *
     * @param name store name
     * @param retentionPeriod how long windows are kept (not negative, at least {@code windowSize})
     * @param windowSize the window size (not negative)
     * @param retainDuplicates keep every put under its own seqnum
     * @return the supplier
     * @throws IllegalArgumentException for the arguments Kafka's {@code Stores} refuses, with its messages
     */
    public static KstateWindowBytesStoreSupplier persistentWindowStore(String name, Duration retentionPeriod,
                                                                       Duration windowSize, boolean retainDuplicates) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).timestamped(false)
            .buildWindowStore(retentionPeriod, windowSize, retainDuplicates);
    }

    /**
     * An in-memory timestamped window store: the memory engine, with exactly the semantics (and
     * result order) of {@link #persistentTimestampedWindowStore}.
     *
     * @param name store name
     * @param retentionPeriod how long windows are kept (not negative, at least {@code windowSize})
     * @param windowSize the window size (not negative)
     * @param retainDuplicates keep every put under its own seqnum
     * @return the supplier
     * @throws IllegalArgumentException for the arguments Kafka's {@code Stores} refuses, with its messages
     */
    public static KstateWindowBytesStoreSupplier inMemoryWindowStore(String name, Duration retentionPeriod,
                                                                     Duration windowSize, boolean retainDuplicates) {
        return builder(name).engine(KstateStoreOptions.Engine.MEMORY).timestamped(true)
            .buildWindowStore(retentionPeriod, windowSize, retainDuplicates);
    }

    /**
     * A persistent (RocksDB) session store, as Kafka's {@code Stores.persistentSessionStore}.
     *
     * @param name store name (also its directory under the task's state directory)
     * @param retentionPeriod how long sessions are kept (not negative; at least the inactivity gap plus grace)
     * @return the supplier
     * @throws IllegalArgumentException for the arguments Kafka's {@code Stores} refuses, with its messages
     */
    public static KstateSessionBytesStoreSupplier persistentSessionStore(String name, Duration retentionPeriod) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).timestamped(false).buildSessionStore(retentionPeriod);
    }

    /**
     * An in-memory session store: the memory engine, with the semantics of {@link #persistentSessionStore}.
     *
     * @param name store name
     * @param retentionPeriod how long sessions are kept (not negative)
     * @return the supplier
     * @throws IllegalArgumentException for the arguments Kafka's {@code Stores} refuses, with its messages
     */
    public static KstateSessionBytesStoreSupplier inMemorySessionStore(String name, Duration retentionPeriod) {
        return builder(name).engine(KstateStoreOptions.Engine.MEMORY).timestamped(false).buildSessionStore(retentionPeriod);
    }

    /**
     * A persistent (RocksDB) window store in the headers format (KIP-1271), as Kafka 4.3+'s
     * {@code Stores.persistentTimestampedWindowStoreWithHeaders}: a {@code HeadersBytesStore} for
     * {@code Stores.timestampedWindowStoreWithHeadersBuilder}. Needs Kafka Streams 4.3+.
     *
     * @param name store name (also its directory under the task's state directory)
     * @param retentionPeriod how long windows are kept (not negative, at least {@code windowSize})
     * @param windowSize the window size (not negative)
     * @param retainDuplicates keep every put under its own seqnum (stream-stream joins)
     * @return the supplier (a {@code HeadersBytesStoreSupplier})
     * @throws IllegalArgumentException for the arguments Kafka's {@code Stores} refuses, with its messages
     */
    public static KstateWindowBytesStoreSupplier persistentTimestampedWindowStoreWithHeaders(
        String name, Duration retentionPeriod, Duration windowSize, boolean retainDuplicates) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).valueFormat(KstateStoreOptions.ValueFormat.HEADERS)
            .buildWindowStore(retentionPeriod, windowSize, retainDuplicates);
    }

    /**
     * A persistent (RocksDB) session store in the headers format (KIP-1271), as Kafka 4.3+'s
     * {@code Stores.persistentSessionStoreWithHeaders}: a {@code HeadersBytesStore} for
     * {@code Stores.sessionStoreWithHeadersBuilder}. Needs Kafka Streams 4.3+.
     *
     * @param name store name (also its directory under the task's state directory)
     * @param retentionPeriod how long sessions are kept (not negative)
     * @return the supplier (a {@code HeadersBytesStoreSupplier})
     * @throws IllegalArgumentException for the arguments Kafka's {@code Stores} refuses, with its messages
     */
    public static KstateSessionBytesStoreSupplier persistentSessionStoreWithHeaders(String name,
                                                                                    Duration retentionPeriod) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).valueFormat(KstateStoreOptions.ValueFormat.HEADERS)
            .buildSessionStore(retentionPeriod);
    }

    /**
     * A persistent (RocksDB) versioned key-value store (KIP-889), as Kafka's
     * {@code Stores.persistentVersionedKeyValueStore}: for {@code Materialized.as(supplier)} (a
     * versioned {@code KTable}) or {@code Stores.versionedKeyValueStoreBuilder}. Kafka's own
     * versioned store of the same name in the task directory is adopted in place.
     *
     * @param name store name
     * @param historyRetention how long older versions stay readable (not negative), also the grace period of writes
     * @return the supplier (segment interval: Kafka's default for the retention)
     * @throws IllegalArgumentException for the arguments Kafka's {@code Stores} refuses, with its messages
     */
    public static KstateVersionedBytesStoreSupplier persistentVersionedKeyValueStore(String name,
                                                                                     Duration historyRetention) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).buildVersionedStore(historyRetention, null);
    }

    /**
     * A persistent (RocksDB) versioned key-value store with its segment interval, as Kafka's
     * {@code Stores.persistentVersionedKeyValueStore(name, historyRetention, segmentInterval)}.
     *
     * @param name store name
     * @param historyRetention how long older versions stay readable (not negative)
     * @param segmentInterval granularity at which expired history is dropped (positive); fixed when the store is
     *     created
     * @return the supplier
     * @throws IllegalArgumentException for the arguments Kafka's {@code Stores} refuses, with its messages
     */
    public static KstateVersionedBytesStoreSupplier persistentVersionedKeyValueStore(String name,
                                                                                     Duration historyRetention,
                                                                                     Duration segmentInterval) {
        java.util.Objects.requireNonNull(segmentInterval, "segmentInterval cannot be null");
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).buildVersionedStore(historyRetention,
            segmentInterval);
    }

    /**
     * An in-memory versioned key-value store: the memory engine, with the semantics of
     * {@link #persistentVersionedKeyValueStore} (Kafka has no in-memory versioned store).
     *
     * @param name store name
     * @param historyRetention how long older versions stay readable (not negative)
     * @return the supplier
     * @throws IllegalArgumentException for the arguments Kafka's {@code Stores} refuses, with its messages
     */
    public static KstateVersionedBytesStoreSupplier inMemoryVersionedKeyValueStore(String name,
                                                                                   Duration historyRetention) {
        return builder(name).engine(KstateStoreOptions.Engine.MEMORY).buildVersionedStore(historyRetention, null);
    }

    /** Kafka's {@code ApiUtils#validateMillisecondDuration}, with its messages. */
    static long millis(Duration duration, String parameter) {
        return ApiUtils.validateMillisecondDuration(duration, ApiUtils.prepareMillisCheckFailMsgPrefix(duration, parameter));
    }

    /**
     * A builder for per-store options (engine, timestamps, max uncommitted bytes, sync on
     * commit, RocksDB block cache and write buffer); end with {@code build()}.
     *
     * @param name store name
     * @return the builder (defaults: RocksDB, timestamped)
     */
    public static KstateStoreOptions.Builder builder(String name) {
        return new KstateStoreOptions.Builder(name);
    }

    /**
     * Writes a checkpoint of a kstate store's last commit to the new directory {@code dir} (see
     * {@link KstateStateStore#checkpoint(java.nio.file.Path)}), given the store as Kafka Streams
     * hands it out: {@code context.getStateStore(name)} in a processor, or
     * {@code TopologyTestDriver.getStateStore(name)}, whose layers (metering, caching, logging)
     * wrap the kstate store.
     *
     * @param store a kstate store, or Kafka's layers around one
     * @param dir the directory to create; it must not exist
     * @return what the checkpoint holds
     * @throws IllegalArgumentException if no kstate store is found under {@code store}
     * @throws KstateProcessorStateException as {@link KstateStateStore#checkpoint(java.nio.file.Path)}
     */
    public static KstateCheckpoint checkpoint(org.apache.kafka.streams.processor.StateStore store,
                                              java.nio.file.Path dir) {
        org.apache.kafka.streams.processor.StateStore s = store;
        while (!(s instanceof KstateStateStore)
            && s instanceof org.apache.kafka.streams.state.internals.WrappedStateStore) {
            s = ((org.apache.kafka.streams.state.internals.WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        if (!(s instanceof KstateStateStore)) {
            throw new IllegalArgumentException("store " + (store == null ? null : store.name())
                + " is not a kstate store (found " + (s == null ? null : s.getClass().getName()) + ")");
        }
        return ((KstateStateStore<?>) s).checkpoint(dir);
    }
}
