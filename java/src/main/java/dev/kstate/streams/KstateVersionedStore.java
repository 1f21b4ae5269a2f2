package dev.kstate.streams;

import dev.kstate.internal.KstateNative;
import dev.kstate.internal.NativeStore;
import dev.kstate.internal.NativeVersionedStore;
import java.io.File;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.query.MultiVersionedKeyQuery;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.ResultOrder;
import org.apache.kafka.streams.query.VersionedKeyQuery;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.VersionedBytesStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.VersionedRecordIterator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A kstate versioned key-value store (KIP-889) as Kafka Streams' {@link VersionedBytesStore}: the
 * store {@code Stores.versionedKeyValueStoreBuilder} and versioned {@code KTable}s wrap (Kafka's
 * metered and change-logging layers; versioned stores have no cache). Semantics are Kafka's
 * {@code RocksDBVersionedStore}'s (see {@link NativeVersionedStore}), with two differences: the
 * observed stream time is committed with the data, so a restarted store refuses the writes it
 * refused before and keeps its history readable; and {@code MultiVersionedKeyQuery} returns every
 * version valid in the range, wherever its validity ends.
 *
 * <p>Writes form a transaction committed with the changelog offsets and the position, as every
 * kstate store's. The byte results of {@link #get(Bytes)}, {@link #get(Bytes, long)} and
 * {@link #delete(Bytes, long)} are Kafka's {@code ValueAndTimestamp} layout (8-byte timestamp,
 * then the value), as Kafka's adapter returns them; the plain key-value operations Kafka's
 * versioned stores refuse throw {@link UnsupportedOperationException} here too.
 */
public class KstateVersionedStore extends KstateStateStore<NativeVersionedStore> implements VersionedBytesStore {
    private final long historyRetentionMs;
    /** 0: Kafka's default for the retention (chosen by the native store when it is created). */
    private final long segmentIntervalMs;
    private static final Logger LOG = LoggerFactory.getLogger(KstateVersionedStore.class);
    /** Kafka's task-level {@code dropped-records} sensor, which counts refused writes; null when unavailable. */
    private volatile Sensor droppedRecords;
    /** Set by {@link #locate}: the directory is Kafka's own versioned store's (adopted in place by the open). */
    private volatile boolean inKafkaDirectory;

    KstateVersionedStore(KstateStoreOptions options, long historyRetentionMs, long segmentIntervalMs) {
        super(options);
        this.historyRetentionMs = historyRetentionMs;
        this.segmentIntervalMs = segmentIntervalMs;
        recordAdoptionPlan();
    }

    /** @return how long older versions stay readable, also the grace period of writes */
    public long historyRetentionMs() {
        return historyRetentionMs;
    }

    @Override
    TaskAdoption.Plan adoptionPlan() {
        return new TaskAdoption.Plan(name(), TaskAdoption.VERSIONED, KstateNative.FORMAT_PLAIN, historyRetentionMs,
            segmentIntervalMs);
    }

    @Override
    NativeVersionedStore openNative(String path, int engine, long maxUncommittedBytes, boolean syncOnCommit,
                                    NativeStore.RocksTuning tuning) {
        return NativeVersionedStore.open(name(), path, engine, maxUncommittedBytes, syncOnCommit, tuning,
            historyRetentionMs, segmentIntervalMs);
    }

    @Override
    List<Object> shape() {
        return Arrays.asList("versioned", historyRetentionMs, segmentIntervalMs);
    }

    @Override
    String label() {
        return "versioned store " + name();
    }

    @Override
    String openedDetails() {
        return "history retention " + historyRetentionMs + " ms" + (inKafkaDirectory
            ? ", in Kafka Streams' RocksDBVersionedStore directory (adopted in place when it held Kafka's layout)" : "");
    }

    /**
     * Kafka keeps its {@code RocksDBVersionedStore} where it keeps its key-value stores
     * ({@code <task>/rocksdb/<name>}): the native open adopts it in place, never beside it empty.
     */
    @Override
    Location locate(File stateDir) {
        File kafka = KstateKeyValueStore.kafkaDirToAdopt(stateDir, name());
        inKafkaDirectory = kafka != null;
        if (kafka != null) {
            return new Location(kafka, true, false, "Kafka Streams' RocksDBVersionedStore directory, opened in place (adopted)");
        }
        return new Location(new File(stateDir, name()), false, true, null);
    }

    /** Kafka hands a versioned store whole records (its timestamps are the versions'): never called. */
    @Override
    void putAllStoreKeys(NativeVersionedStore s, byte[] packed) {
        throw new UnsupportedOperationException("versioned store " + name() + " restores changelog records with their "
            + "timestamps");
    }

    @Override
    void restoreCommitted(NativeVersionedStore s, byte[] packed, Map<TopicPartition, Long> offsets, byte[] metadata) {
        throw new UnsupportedOperationException("versioned store " + name() + " restores changelog records with their "
            + "timestamps");
    }

    /** Each record is a put at its record timestamp (a null value a tombstone), as Kafka's restore. */
    @Override
    void restoreCommittedRecords(NativeVersionedStore s, Collection<ConsumerRecord<byte[], byte[]>> records,
                                 List<KeyValue<byte[], byte[]>> entries, Map<TopicPartition, Long> offsets,
                                 byte[] metadata) {
        s.restoreBatch(records, offsets, metadata);
    }

    // ----- VersionedBytesStore ------------------------------------------------------------

    @Override
    public long put(Bytes key, byte[] value, long timestamp) {
        byte[] k = key(key);
        NativeVersionedStore s = open();
        written();
        long validTo = s.put(k, value, timestamp);
        if (validTo == org.apache.kafka.streams.state.VersionedKeyValueStore.PUT_RETURN_CODE_NOT_PUT) {
            dropped("put");
        }
        // Kafka 4.0-4.4 move the position for a put older than the grace period too
        updatePosition();
        return validTo;
    }

    @Override
    public byte[] get(Bytes key) {
        return valueAndTimestamp(open().get(key(key), false));
    }

    @Override
    public byte[] get(Bytes key, long asOfTimestamp) {
        return valueAndTimestamp(open().get(key(key), asOfTimestamp, false));
    }

    @Override
    public byte[] delete(Bytes key, long timestamp) {
        byte[] k = key(key);
        NativeVersionedStore s = open();
        written();
        NativeVersionedStore.Deleted deleted = s.delete(k, timestamp);
        if (deleted.dropped()) {
            // Kafka 4.0-4.4 leave the position as it was for an expired delete
            dropped("delete");
            return null;
        }
        updatePosition();
        return valueAndTimestamp(deleted.record());
    }

    @Override
    void registeredMetrics(StateStoreContext context) {
        droppedRecords = KstateMetrics.droppedRecordsSensor(context);
    }

    /**
     * A write older than the history retention (its grace period), refused: counted in the
     * task's {@code dropped-records} metric and logged, as Kafka's versioned store does.
     */
    private void dropped(String what) {
        Sensor sensor = droppedRecords;
        if (sensor != null) {
            sensor.record();
        }
        LOG.warn("Skipping record for expired {} (kstate versioned store {}).", what, name());
    }

    /**
     * @param committed the committed stream time (else the writer's)
     * @return the largest timestamp of a write the store accepted, -1 before any
     */
    public long streamTime(boolean committed) {
        return open().streamTime(committed);
    }

    private static byte[] valueAndTimestamp(VersionedRecord<byte[]> record) {
        if (record == null) {
            return null;
        }
        byte[] value = record.value();
        return ByteBuffer.allocate(8 + value.length).putLong(record.timestamp()).put(value).array();
    }

    // ----- what Kafka's versioned stores refuse ----------------------------------------------

    @Override
    public void put(Bytes key, byte[] value) {
        throw new UnsupportedOperationException("Versioned key-value stores should use put(key, value, timestamp) instead");
    }

    @Override
    public byte[] putIfAbsent(Bytes key, byte[] value) {
        throw new UnsupportedOperationException("Versioned key-value stores do not support putIfAbsent(key, value)");
    }

    @Override
    public void putAll(List<KeyValue<Bytes, byte[]>> entries) {
        throw new UnsupportedOperationException("Versioned key-value stores do not support putAll(entries)");
    }

    @Override
    public byte[] delete(Bytes key) {
        throw new UnsupportedOperationException(
            "Versioned key-value stores do not support delete(key). Use delete(key, timestamp) instead.");
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
        throw new UnsupportedOperationException("Versioned key-value stores do not support range(from, to)");
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
        throw new UnsupportedOperationException("Versioned key-value stores do not support reverseRange(from, to)");
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> all() {
        throw new UnsupportedOperationException("Versioned key-value stores do not support all()");
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseAll() {
        throw new UnsupportedOperationException("Versioned key-value stores do not support reverseAll()");
    }

    @Override
    public <PS extends Serializer<P>, P> KeyValueIterator<Bytes, byte[]> prefixScan(P prefix, PS prefixKeySerializer) {
        throw new UnsupportedOperationException(
            "Versioned key-value stores do not support prefixScan(prefix, prefixKeySerializer)");
    }

    @Override
    public long approximateNumEntries() {
        throw new UnsupportedOperationException("Versioned key-value stores do not support approximateNumEntries()");
    }

    // ----- IQv2 ---------------------------------------------------------------------------

    /**
     * {@code VersionedKeyQuery} (latest, or as of a time) and {@code MultiVersionedKeyQuery}
     * ({@code ResultOrder.ANY} is newest first, as Kafka answers it), in raw bytes: Kafka's metered
     * store serialises the key and deserialises the values.
     */
    @Override
    @SuppressWarnings("unchecked")
    <R> QueryResult<R> answer(Query<R> query, boolean committed) {
        if (query instanceof VersionedKeyQuery) {
            VersionedKeyQuery<Bytes, byte[]> q = (VersionedKeyQuery<Bytes, byte[]>) query;
            byte[] k = key(q.key());
            Optional<Instant> asOf = q.asOfTimestamp();
            VersionedRecord<byte[]> record = asOf.isPresent() ? open().get(k, asOf.get().toEpochMilli(), committed)
                : open().get(k, committed);
            return (QueryResult<R>) QueryResult.forResult(record);
        } else if (query instanceof MultiVersionedKeyQuery) {
            MultiVersionedKeyQuery<Bytes, byte[]> q = (MultiVersionedKeyQuery<Bytes, byte[]>) query;
            byte[] k = key(q.key());
            long from = q.fromTime().map(Instant::toEpochMilli).orElse(Long.MIN_VALUE);
            long to = q.toTime().map(Instant::toEpochMilli).orElse(Long.MAX_VALUE);
            boolean ascending = q.resultOrder() == ResultOrder.ASCENDING;
            List<VersionedRecord<byte[]>> versions = open().versions(k, from, to, ascending, committed);
            return (QueryResult<R>) QueryResult.forResult(new ListIterator(versions.iterator()));
        } else {
            return QueryResult.forUnknownQueryType(query, this);
        }
    }

    /** The versions of a multi-version query, read from one view when the query ran. */
    private static final class ListIterator implements VersionedRecordIterator<byte[]> {
        private final Iterator<VersionedRecord<byte[]>> versions;

        ListIterator(Iterator<VersionedRecord<byte[]>> versions) {
            this.versions = versions;
        }

        @Override
        public boolean hasNext() {
            return versions.hasNext();
        }

        @Override
        public VersionedRecord<byte[]> next() {
            return versions.next();
        }

        @Override
        public void close() {
            // materialised: nothing native is held
        }
    }
}
