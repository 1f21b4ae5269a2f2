package dev.kstate.internal;

import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;

/**
 * An open native kstate key-value store ({@link AbstractNativeStore} holds the handle, the
 * iterators and the transaction calls). Thread-safe; its iterators throw once it closed.
 */
public final class NativeStore extends AbstractNativeStore {
    private static final Natives NATIVES = new Natives(KstateNative::close, KstateNative::next,
        KstateNative::closeIterator, KstateNative::commit, KstateNative::flush, KstateNative::committedOffset,
        KstateNative::committedMetadata, KstateNative::rollback, KstateNative::approximateNumUncommittedBytes,
        KstateNative::property, KstateNative::checkpoint, false);

    private NativeStore(String name, long handle) {
        super(name, handle, NATIVES);
    }

    /**
     * Opens (creating if absent) a store.
     *
     * @param name the store name, for messages
     * @param path directory for RocksDB; may be null for the memory engine
     * @param engine {@link KstateNative#ENGINE_ROCKSDB} or {@link KstateNative#ENGINE_MEMORY}
     * @param timestamped values in Kafka's timestamped layout, or plain
     * @param maxUncommittedBytes bound before spilling, 0 = default
     * @param syncOnCommit fsync the WAL on commit
     * @param blockCacheBytes RocksDB block cache, 0 = default
     * @param writeBufferBytes RocksDB write buffer, 0 = default
     * @return the open store
     */
    public static NativeStore open(String name, String path, int engine, boolean timestamped,
                                   long maxUncommittedBytes, boolean syncOnCommit,
                                   long blockCacheBytes, long writeBufferBytes) {
        return open(name, path, engine, timestamped, maxUncommittedBytes, syncOnCommit,
            new RocksTuning(blockCacheBytes, writeBufferBytes, 0, true, false, 0, 0));
    }

    /**
     * Opens (creating if absent) a store with full RocksDB tuning.
     *
     * @param name the store name, for messages
     * @param path directory for RocksDB; may be null for the memory engine
     * @param engine {@link KstateNative#ENGINE_ROCKSDB} or {@link KstateNative#ENGINE_MEMORY}
     * @param timestamped values in Kafka's timestamped layout, or plain
     * @param maxUncommittedBytes bound before spilling, 0 = default
     * @param syncOnCommit fsync the WAL on commit
     * @param rocksdb RocksDB tuning (ignored by the memory engine)
     * @return the open store
     */
    public static NativeStore open(String name, String path, int engine, boolean timestamped,
                                   long maxUncommittedBytes, boolean syncOnCommit, RocksTuning rocksdb) {
        return open(name, path, engine, timestamped ? KstateNative.FORMAT_TIMESTAMPED : KstateNative.FORMAT_PLAIN,
            maxUncommittedBytes, syncOnCommit, rocksdb);
    }

    /**
     * Opens (creating if absent) a store in a given value format with full RocksDB tuning.
     *
     * @param name the store name, for messages
     * @param path directory for RocksDB; may be null for the memory engine
     * @param engine {@link KstateNative#ENGINE_ROCKSDB} or {@link KstateNative#ENGINE_MEMORY}
     * @param valueFormat {@link KstateNative#FORMAT_TIMESTAMPED}, {@link KstateNative#FORMAT_PLAIN} or
     *     {@link KstateNative#FORMAT_HEADERS}; a store of an older format is upgraded (lazily) to it
     * @param maxUncommittedBytes bound before spilling, 0 = default
     * @param syncOnCommit fsync the WAL on commit
     * @param rocksdb RocksDB tuning (ignored by the memory engine)
     * @return the open store
     */
    public static NativeStore open(String name, String path, int engine, int valueFormat,
                                   long maxUncommittedBytes, boolean syncOnCommit, RocksTuning rocksdb) {
        return new NativeStore(name, KstateNative.openStore(KstateNative::open, path, KstateNative.openOptions(engine,
            valueFormat, maxUncommittedBytes, syncOnCommit, rocksdb, 0, 0, false, 0, false, false, false)));
    }

    /** RocksDB tuning of {@link #open(String, String, int, boolean, long, boolean, RocksTuning)}. */
    public static final class RocksTuning {
        final long blockCacheBytes;
        final long writeBufferBytes;
        final int maxWriteBuffers;
        final boolean bloomFilter;
        final boolean statistics;
        final long boundedMemoryBytes;
        final long boundedMemtableBytes;
        /** See {@link #withAdoptLeftOpen}. */
        final boolean adoptLeftOpen;

        /**
         * @param blockCacheBytes block cache per store, 0 = default (ignored with a shared budget)
         * @param writeBufferBytes memtable size, 0 = default
         * @param maxWriteBuffers memtables per column family, 0 = default
         * @param bloomFilter bloom filters in SST files
         * @param statistics RocksDB statistics (tickers)
         * @param boundedMemoryBytes total of the process-wide shared budget, 0 = none
         * @param boundedMemtableBytes memtable part of that budget (with a budget only)
         */
        public RocksTuning(long blockCacheBytes, long writeBufferBytes, int maxWriteBuffers, boolean bloomFilter,
                           boolean statistics, long boundedMemoryBytes, long boundedMemtableBytes) {
            this(blockCacheBytes, writeBufferBytes, maxWriteBuffers, bloomFilter, statistics, boundedMemoryBytes,
                boundedMemtableBytes, false);
        }

        private RocksTuning(long blockCacheBytes, long writeBufferBytes, int maxWriteBuffers, boolean bloomFilter,
                            boolean statistics, long boundedMemoryBytes, long boundedMemtableBytes,
                            boolean adoptLeftOpen) {
            this.blockCacheBytes = blockCacheBytes;
            this.writeBufferBytes = writeBufferBytes;
            this.maxWriteBuffers = maxWriteBuffers;
            this.bloomFilter = bloomFilter;
            this.statistics = statistics;
            this.boundedMemoryBytes = boundedMemoryBytes;
            this.boundedMemtableBytes = boundedMemtableBytes;
            this.adoptLeftOpen = adoptLeftOpen;
        }

        /**
         * Not a tuning knob, but carried with them to every RocksDB open: whether a Kafka Streams
         * 4.3+ store whose {@code offsets} family says it was left open ({@code status} 1, its
         * process killed) is adopted with the offsets and position it holds, its data possibly
         * ahead of them, as Kafka 4.4's {@code RocksDBStore} opens it under at-least-once; off, it
         * is refused with {@code CORRUPTION} (Kafka under {@code exactly_once_v2}:
         * {@code TaskCorruptedException}). Core option {@code StoreOptions::adopt_left_open}.
         *
         * @param allow adopt such a store
         * @return a copy with that setting
         */
        public RocksTuning withAdoptLeftOpen(boolean allow) {
            return new RocksTuning(blockCacheBytes, writeBufferBytes, maxWriteBuffers, bloomFilter, statistics,
                boundedMemoryBytes, boundedMemtableBytes, allow);
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof RocksTuning)) {
                return false;
            }
            RocksTuning t = (RocksTuning) o;
            return blockCacheBytes == t.blockCacheBytes && writeBufferBytes == t.writeBufferBytes
                && maxWriteBuffers == t.maxWriteBuffers && bloomFilter == t.bloomFilter && statistics == t.statistics
                && boundedMemoryBytes == t.boundedMemoryBytes && boundedMemtableBytes == t.boundedMemtableBytes
                && adoptLeftOpen == t.adoptLeftOpen;
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(blockCacheBytes, writeBufferBytes, maxWriteBuffers, bloomFilter, statistics,
                boundedMemoryBytes, boundedMemtableBytes, adoptLeftOpen);
        }

        @Override
        public String toString() {
            return "RocksTuning{blockCache=" + blockCacheBytes + ", writeBuffer=" + writeBufferBytes + ", maxWriteBuffers="
                + maxWriteBuffers + ", bloom=" + bloomFilter + ", statistics=" + statistics + ", boundedMemory="
                + boundedMemoryBytes + ", boundedMemtable=" + boundedMemtableBytes + ", adoptLeftOpen=" + adoptLeftOpen
                + "}";
        }
    }

    /**
     * @param key the key
     * @param committed read committed data only (else the writer's view)
     * @return the raw value or null
     */
    public byte[] get(byte[] key, boolean committed) {
        return KstateNative.get(handle(), key, committed);
    }

    /**
     * @param key the key
     * @param rawValue the raw value; null deletes
     */
    public void put(byte[] key, byte[] rawValue) {
        KstateNative.put(handle(), key, rawValue);
    }

    /**
     * @param key the key
     * @param rawValue the raw value
     * @return the existing value, or null if this one was written
     */
    public byte[] putIfAbsent(byte[] key, byte[] rawValue) {
        return KstateNative.putIfAbsent(handle(), key, rawValue);
    }

    /**
     * @param key the key
     * @return the deleted value or null
     */
    public byte[] delete(byte[] key) {
        return KstateNative.delete(handle(), key);
    }

    /**
     * Writes a packed batch (see {@link Packing}) in one native call; all or nothing.
     *
     * @param packed the batch
     */
    public void putAllPacked(byte[] packed) {
        KstateNative.putAll(handle(), packed);
    }

    /**
     * Opens an iterator.
     *
     * @param from lower bound (inclusive, null = open), or the prefix when {@code prefix}
     * @param to upper bound (inclusive, null = open)
     * @param prefix scan keys starting with {@code from}
     * @param reverse descending
     * @param committed committed data only
     * @return the iterator; close it
     */
    public NativeIterator<Bytes> scan(byte[] from, byte[] to, boolean prefix, boolean reverse, boolean committed) {
        return register(KstateNative.scan(handle(), from, to, prefix, reverse, committed));
    }

    /**
     * Restores a packed batch of changelog records (see {@link Packing}) straight to the
     * engine and commits it with the offsets and metadata, in one native call: no transaction
     * buffer, no write-ahead log; durable with its offsets at the store's next flush (its next
     * commit or close at the latest). Refused while the transaction has uncommitted writes.
     *
     * @param packed the records, in changelog order
     * @param offsets changelog offsets, as for {@link #commit}
     * @param metadata opaque blob stored with the commit, or null to keep the previous one
     */
    public void restoreBatch(byte[] packed, Map<TopicPartition, Long> offsets, byte[] metadata) {
        Offsets o = new Offsets(offsets);
        KstateNative.restoreBatch(handle(), packed, o.topics, o.partitions, o.values, metadata);
    }

    /**
     * @param committed committed data only
     * @return approximate entry count
     */
    public long approximateNumEntries(boolean committed) {
        return KstateNative.approximateNumEntries(handle(), committed);
    }

    /** @return true while the store runs in upgrade mode: it still holds old-format values, read converted */
    public boolean isUpgrading() {
        return KstateNative.isUpgrading(handle());
    }

    /**
     * Upgrades a store in upgrade mode by prepare and swap (see
     * {@code KstateKeyValueStore#upgradeBySwap}); open iterators are closed by the swap.
     *
     * @param progress called on this thread after each batch copied, or null
     * @return entries copied, 0 when the store was not in upgrade mode (nothing done)
     */
    public long upgradeBySwap(dev.kstate.streams.UpgradeProgress progress) {
        return KstateNative.upgradeBySwap(handle(), progress);
    }
}
