package dev.kstate.internal;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;

/**
 * An open native versioned key-value store (KIP-889, Kafka's {@code RocksDBVersionedStore}
 * semantics: the history retention is also the grace period of writes, tombstones are versions,
 * out-of-order writes go into the history), transactional like {@link NativeStore}: uncommitted
 * versions are the writer's only, and a commit makes the latest values, the history, the observed
 * stream time and the changelog offsets durable together. Unlike Kafka's store, the stream time is
 * committed, so a reopened store refuses the same late writes and keeps its history readable.
 * Keys and values are raw bytes. Thread-safe; closes exactly once.
 */
public final class NativeVersionedStore extends AbstractNativeStore {
    private static final Natives NATIVES = new Natives(KstateNative::versionedClose, KstateNative::versionedNext,
        KstateNative::versionedCloseIterator, KstateNative::versionedCommit, KstateNative::versionedFlush,
        KstateNative::versionedCommittedOffset, KstateNative::versionedCommittedMetadata,
        KstateNative::versionedRollback, KstateNative::versionedApproximateNumUncommittedBytes,
        KstateNative::versionedProperty, KstateNative::versionedCheckpoint, false);
    /** The validTo a latest version crosses with ({@code src/jni/versioned.rs}). */
    private static final long NO_VALID_TO = Long.MIN_VALUE;
    private static final int MAX_VERSIONS_PER_BATCH = 1024;
    private static final int MAX_BATCH_BYTES = 1 << 20;

    private NativeVersionedStore(String name, long handle) {
        super(name, handle, NATIVES);
    }

    /**
     * Opens (creating if absent) a versioned store.
     *
     * @param name the store name, for messages
     * @param path directory for RocksDB; may be null for the memory engine
     * @param engine {@link KstateNative#ENGINE_ROCKSDB} or {@link KstateNative#ENGINE_MEMORY}
     * @param maxUncommittedBytes bound before spilling, 0 = default
     * @param syncOnCommit fsync the WAL on commit
     * @param rocksdb RocksDB tuning (ignored by the memory engine)
     * @param historyRetentionMs how long older versions stay readable (>= 0), also the grace period of writes
     * @param segmentIntervalMs granularity at which expired history is dropped (> 0), 0 = Kafka's default for the
     *     retention; fixed when the store is created
     * @return the open store
     */
    public static NativeVersionedStore open(String name, String path, int engine, long maxUncommittedBytes,
                                            boolean syncOnCommit, NativeStore.RocksTuning rocksdb,
                                            long historyRetentionMs, long segmentIntervalMs) {
        long[] options = KstateNative.openOptions(engine, KstateNative.FORMAT_PLAIN, maxUncommittedBytes,
            syncOnCommit, rocksdb, historyRetentionMs, 0, false, segmentIntervalMs, false, false, false);
        return new NativeVersionedStore(name, KstateNative.openStore(KstateNative::versionedOpen, path, options));
    }

    /**
     * Kafka's {@code put(key, value, timestamp)}.
     *
     * @param key the key
     * @param value the value; null writes a tombstone
     * @param timestamp when the version becomes valid
     * @return the new version's validTo, {@link VersionedKeyValueStore#PUT_RETURN_CODE_VALID_TO_UNDEFINED} when
     *     it is the latest, {@link VersionedKeyValueStore#PUT_RETURN_CODE_NOT_PUT} when {@code timestamp} is older
     *     than the history retention allows (nothing written; counted in {@code kstate.dropped-records})
     */
    public long put(byte[] key, byte[] value, long timestamp) {
        return KstateNative.versionedPut(handle(), key, value, timestamp);
    }

    /**
     * Kafka's {@code delete(key, timestamp)}: a tombstone at {@code timestamp}.
     *
     * @param key the key
     * @param timestamp the tombstone's timestamp
     * @return what the delete did: the version valid at {@code timestamp} before it, or that it was dropped as
     *     older than the history retention
     */
    public Deleted delete(byte[] key, long timestamp) {
        byte[] encoded = KstateNative.versionedDelete(handle(), key, timestamp);
        // an empty array is the native side's word for a dropped delete (a version has 16 bytes of times)
        return encoded != null && encoded.length == 0 ? Deleted.DROPPED : new Deleted(record(encoded), false);
    }

    /**
     * What {@link #delete} did. Kafka's delete answers null both for a dropped delete and for a key without a
     * version at the time; the store says which, so that a caller counts {@code dropped-records} without
     * guessing the stream time.
     */
    public static final class Deleted {
        static final Deleted DROPPED = new Deleted(null, true);
        private final VersionedRecord<byte[]> record;
        private final boolean dropped;

        Deleted(VersionedRecord<byte[]> record, boolean dropped) {
            this.record = record;
            this.dropped = dropped;
        }

        /**
         * @return Kafka's return value: the version valid at the delete's timestamp before it (with its validTo
         *     when it was not the latest), or null (none, or the delete was dropped)
         */
        public VersionedRecord<byte[]> record() {
            return record;
        }

        /**
         * @return true when the delete was older than the history retention allows and was dropped (nothing
         *     written, stream time unchanged, counted in {@code kstate.dropped-records}), as a put returning
         *     {@link VersionedKeyValueStore#PUT_RETURN_CODE_NOT_PUT}
         */
        public boolean dropped() {
            return dropped;
        }
    }

    /**
     * Kafka's {@code get(key)}.
     *
     * @param key the key
     * @param committed committed data only (else the writer's view)
     * @return the latest version (no validTo), or null
     */
    public VersionedRecord<byte[]> get(byte[] key, boolean committed) {
        return record(KstateNative.versionedGet(handle(), key, true, 0, committed));
    }

    /**
     * Kafka's {@code get(key, asOfTimestamp)}; as of a time older than the history retention only the latest
     * version is considered.
     *
     * @param key the key
     * @param asOf the time
     * @param committed committed data only (else the writer's view)
     * @return the version valid at {@code asOf} (with its validTo unless it is the latest), or null
     */
    public VersionedRecord<byte[]> get(byte[] key, long asOf, boolean committed) {
        return record(KstateNative.versionedGet(handle(), key, false, asOf, committed));
    }

    /**
     * Kafka's {@code MultiVersionedKeyQuery}: every version with a value valid at some time in
     * {@code [fromTime, toTime]}, within the history retention (the latest version always counts). Unlike Kafka
     * 4.4, a version is found wherever its validity ends.
     *
     * @param key the key
     * @param fromTime earliest time, {@code Long.MIN_VALUE} for unbounded
     * @param toTime latest time, {@code Long.MAX_VALUE} for unbounded
     * @param ascending oldest first (else newest first, Kafka's order for {@code ResultOrder.ANY})
     * @param committed committed data only (else the writer's view)
     * @return the versions, read from one view
     * @throws dev.kstate.streams.KstateProcessorStateException when {@code fromTime > toTime}
     */
    public List<VersionedRecord<byte[]>> versions(byte[] key, long fromTime, long toTime, boolean ascending,
                                                  boolean committed) {
        List<VersionedRecord<byte[]>> out = new ArrayList<>();
        try (NativeIterator<Bytes> it = register(KstateNative.versionedQuery(handle(), key, fromTime, toTime, ascending,
            committed))) {
            while (it.hasNext()) {
                KeyValue<org.apache.kafka.common.utils.Bytes, byte[]> next = it.next();
                ByteBuffer times = ByteBuffer.wrap(next.key.get());
                out.add(record(next.value, times.getLong(), times.getLong()));
            }
        }
        return out;
    }

    @Override
    byte[] nativeNext(long iterator, int maxEntries, int maxBytes) {
        // the versions were materialised when the query ran: take them in few crossings
        return super.nativeNext(iterator, MAX_VERSIONS_PER_BATCH, MAX_BATCH_BYTES);
    }

    /**
     * Applies changelog records as Kafka's restore does (each a put at its record timestamp, a null value a
     * tombstone, records older than the history retention at their turn skipped) and commits them with the
     * offsets and metadata, all or none.
     *
     * @param records the changelog records (raw key, raw value)
     * @param offsets changelog offsets, as {@link #commit}
     * @param metadata blob stored with the commit, or null to keep the previous one
     * @throws dev.kstate.streams.KstateProcessorStateException when the store has uncommitted writes
     */
    public void restoreBatch(Collection<ConsumerRecord<byte[], byte[]>> records, Map<TopicPartition, Long> offsets,
                             byte[] metadata) {
        List<KeyValue<byte[], byte[]>> entries = new ArrayList<>(records.size());
        long[] timestamps = new long[records.size()];
        int i = 0;
        for (ConsumerRecord<byte[], byte[]> r : records) {
            entries.add(KeyValue.pair(r.key(), r.value()));
            timestamps[i++] = r.timestamp();
        }
        Offsets o = new Offsets(offsets);
        KstateNative.versionedRestoreBatch(handle(), Packing.packRaw(entries), timestamps, o.topics, o.partitions,
            o.values, metadata);
    }

    /**
     * @param committed the committed stream time (else the writer's)
     * @return the observed stream time: the largest timestamp of an accepted write, -1 before any
     */
    public long streamTime(boolean committed) {
        return KstateNative.versionedStreamTime(handle(), committed);
    }

    private static VersionedRecord<byte[]> record(byte[] encoded) {
        if (encoded == null) {
            return null;
        }
        ByteBuffer b = ByteBuffer.wrap(encoded);
        return record(Arrays.copyOfRange(encoded, 16, encoded.length), b.getLong(0), b.getLong(8));
    }

    private static VersionedRecord<byte[]> record(byte[] value, long timestamp, long validTo) {
        return validTo == NO_VALID_TO ? new VersionedRecord<>(value, timestamp)
            : new VersionedRecord<>(value, timestamp, validTo);
    }
}
