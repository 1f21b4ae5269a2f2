package dev.kstate.streams;

import dev.kstate.internal.NativeIterator;
import dev.kstate.internal.NativeStore;
import dev.kstate.internal.Packing;
import java.io.File;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.query.KeyQuery;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.RangeQuery;
import org.apache.kafka.streams.query.ResultOrder;
import org.apache.kafka.streams.query.TimestampedKeyQuery;
import org.apache.kafka.streams.query.TimestampedRangeQuery;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A kstate key-value store speaking Kafka Streams 4.4's {@link StateStore} contract.
 *
 * <p>Writes form a transaction: {@link #commit(Map)} makes them durable together with the
 * changelog offsets and the store's {@link Position} in one atomic native step
 * ({@link #managesOffsets()} is true).
 *
 * <p>Isolation follows Kafka's transactional stores: the plain read methods ({@link #get},
 * {@link #range}, {@link #all}, {@link #prefixScan}, ...) are the writer's view (uncommitted
 * writes included), whatever thread calls them. Committed-only reads are asked for explicitly,
 * the way Kafka asks: {@link #readOnly(IsolationLevel)} (IQv1, with Kafka's
 * {@code default.interactive.query.isolation.level}) and the {@link QueryConfig} of an IQv2
 * query. Values are stored as handed over (for the timestamped subclass: Kafka's 8-byte
 * timestamp + value layout).
 */
public class KstateKeyValueStore extends KstateStateStore<NativeStore> implements KeyValueStore<Bytes, byte[]> {
    private static final Logger LOG = LoggerFactory.getLogger(KstateKeyValueStore.class);
    /** Kafka's directory for its own RocksDB key-value stores, under the task directory. */
    static final String KAFKA_ROCKSDB_DIR = "rocksdb";

    /** The writer's view, which the plain read methods answer. */
    private final ReadOnlyView writer;

    KstateKeyValueStore(KstateStoreOptions options) {
        super(options);
        writer = new ReadOnlyView(IsolationLevel.READ_UNCOMMITTED);
        recordAdoptionPlan();
    }

    /** @return what this store adopts Kafka's key-value store directory as */
    @Override
    TaskAdoption.Plan adoptionPlan() {
        return new TaskAdoption.Plan(options.name, TaskAdoption.KEY_VALUE, options.valueFormat.nativeNumber, 0, 0);
    }

    @Override
    NativeStore openNative(String path, int engine, long maxUncommittedBytes, boolean syncOnCommit,
                           NativeStore.RocksTuning tuning) {
        return NativeStore.open(name(), path, engine, options.valueFormat.nativeNumber, maxUncommittedBytes, syncOnCommit,
            tuning);
    }

    @Override
    List<Object> shape() {
        return Arrays.asList("key-value", options.valueFormat);
    }

    @Override
    String label() {
        return "store " + name();
    }

    @Override
    String openedDetails() {
        return options.valueFormat.name().toLowerCase(Locale.ROOT) + " values";
    }

    /**
     * Kafka Streams' own RocksDB store of the same name (a migration to kstate, or a store
     * kstate adopted earlier) is opened in place, never beside it empty.
     */
    @Override
    Location locate(File stateDir) {
        File kafka = kafkaDirToAdopt(stateDir, name());
        if (kafka != null) {
            return new Location(kafka, true, false, "Kafka Streams' RocksDB store directory, opened in place (adopted)");
        }
        return new Location(new File(stateDir, name()), false, true, null);
    }

    /**
     * @return Kafka's RocksDB store {@code name} in {@code taskDir} when this kind opens it in
     *     place (kstate's own directory of that name is empty), or null; the task's adoption
     *     check asks the same
     */
    static File kafkaDirToAdopt(File taskDir, String name) {
        File kafka = new File(new File(taskDir, KAFKA_ROCKSDB_DIR), name);
        return !hasFiles(new File(taskDir, name)) && hasFiles(kafka) ? kafka : null;
    }

    @Override
    void putAllStoreKeys(NativeStore s, byte[] packed) {
        s.putAllPacked(packed);
    }

    /**
     * One native call that skips the transaction buffer and the write-ahead log (the native side
     * gathers consecutive batches and ingests large restores as one sorted file, before the
     * store's next operation); it refuses a transaction with uncommitted writes.
     */
    @Override
    void restoreCommitted(NativeStore s, byte[] packed, Map<TopicPartition, Long> offsets, byte[] metadata) {
        s.restoreBatch(packed, offsets, metadata);
    }

    /**
     * @return true while the store runs in upgrade mode (KIP-258 / KIP-1271): it was opened
     *     in a later value format than the values it holds (a plain store, kstate's or Kafka's
     *     {@code RocksDBStore}, opened timestamped), reads old values converted and migrates
     *     them key by key as they are written; false after {@link #upgradeBySwap}
     * @throws KstateInvalidStateStoreException when the store is closed
     */
    public boolean isUpgrading() {
        return open().isUpgrading();
    }

    /**
     * Finishes an upgrade in one go, by <b>prepare and swap</b>: builds a store of the new
     * format in the side directory {@code .<name>.kstate-swap} from the last committed
     * snapshot, carries over the keys written meanwhile, commits it with this store's committed
     * offsets and position, swaps the two directories atomically and continues on the new store,
     * in regular mode, in this same object. A kill at any point leaves the old store or the new
     * one live and complete (no changelog restore either way). Does nothing and returns 0 when
     * the store is not in upgrade mode.
     *
     * <p><b>When to call it.</b> It runs on the calling thread and blocks it for the length of
     * the copy, so call it from the stream thread that owns the task (a Processor API user
     * holding this store from {@code ProcessorContext#getStateStore}) <i>between commits</i>:
     * the store must have no uncommitted writes when it starts ({@link
     * #approximateNumUncommittedBytes()} is 0: right after {@code init} and restoration, or
     * right after a commit), otherwise it throws {@code KstateProcessorStateException} with code
     * {@code INVALID_ARGUMENT} and changes nothing. Open iterators of the store are closed by
     * the swap.
     *
     * <p>{@code progress} runs on the calling thread. It may read or write this store (writes
     * are carried over, uncommitted); calling {@code upgradeBySwap} again from it is refused
     * ({@code INVALID_ARGUMENT}); an exception it throws stops the swap, leaves the store as it
     * was (still in upgrade mode, side directory removed) and propagates to the caller.
     *
     * @param progress told after each batch copied (entries done, estimated total; the last
     *     call has {@code done == total}), or null
     * @return the entries copied into the new store
     * @throws KstateInvalidStateStoreException when the store is closed (also when
     *     {@code progress} closed it)
     * @throws KstateProcessorStateException on the refusals above (code {@code
     *     INVALID_ARGUMENT}, also for the in-memory engine) and storage errors, after which the
     *     store is unchanged
     */
    public long upgradeBySwap(UpgradeProgress progress) {
        NativeStore s = open();
        long copied = s.upgradeBySwap(progress);
        OffsetsHint.Writer hints = hintWriter;
        if (copied > 0 && hints != null) {
            hints.close(); // its file went with the old directory; the swapped-in one has no hint yet
            hintWriter = new OffsetsHint.Writer(directory, name());
        }
        if (copied > 0) {
            LOG.info("kstate store {} upgraded by swap: {} entries copied, now in regular mode", name(), copied);
        }
        return copied;
    }

    // ----- KeyValueStore ------------------------------------------------------------------

    @Override
    public void put(Bytes key, byte[] value) {
        byte[] k = key(key);
        NativeStore s = open();
        written();
        s.put(k, value);
        updatePosition();
    }

    @Override
    public byte[] putIfAbsent(Bytes key, byte[] value) {
        byte[] k = key(key);
        NativeStore s = open();
        if (value == null) {
            // Kafka: putIfAbsent(k, null) writes nothing and returns the current value
            return s.get(k, false);
        }
        byte[] existing = s.putIfAbsent(k, value);
        if (existing == null) {
            written();
            updatePosition();
        }
        return existing;
    }

    @Override
    public void putAll(List<KeyValue<Bytes, byte[]>> entries) {
        for (KeyValue<Bytes, byte[]> e : entries) {
            key(e.key);
        }
        NativeStore s = open();
        written();
        if (!entries.isEmpty()) {
            s.putAllPacked(Packing.packBytes(entries));
            updatePosition();
        }
    }

    @Override
    public byte[] delete(Bytes key) {
        byte[] k = key(key);
        NativeStore s = open();
        written();
        byte[] old = s.delete(k);
        updatePosition();
        return old;
    }

    @Override
    public byte[] get(Bytes key) {
        return writer.get(key);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
        return writer.range(from, to);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
        return writer.reverseRange(from, to);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> all() {
        return writer.all();
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseAll() {
        return writer.reverseAll();
    }

    @Override
    public <PS extends Serializer<P>, P> KeyValueIterator<Bytes, byte[]> prefixScan(P prefix, PS prefixKeySerializer) {
        return writer.prefixScan(prefix, prefixKeySerializer);
    }

    @Override
    public long approximateNumEntries() {
        return writer.approximateNumEntries();
    }

    private byte[] get(Bytes key, boolean committed) {
        return open().get(key(key), committed);
    }

    private NativeIterator<Bytes> scan(Bytes from, Bytes to, boolean reverse, boolean committed) {
        return open().scan(bound(from), bound(to), false, reverse, committed);
    }

    /**
     * A read-only view at an isolation level: READ_COMMITTED reads the last completed commit
     * (a pinned snapshot, never waiting for the writer), READ_UNCOMMITTED the writer's view.
     * Kafka's IQv1 ({@code KafkaStreams#store}) calls this on every store with
     * {@code default.interactive.query.isolation.level} (or the level of
     * {@code ReadOnlyKeyValueStore#readOnly} on the composite store it returns).
     *
     * @param isolationLevel the level
     * @return the view; every read method, {@code prefixScan} included, is supported
     */
    @Override
    public ReadOnlyKeyValueStore<Bytes, byte[]> readOnly(IsolationLevel isolationLevel) {
        return new ReadOnlyView(isolationLevel);
    }

    /** See {@link #readOnly(IsolationLevel)}; the store's own reads are its READ_UNCOMMITTED view. */
    private final class ReadOnlyView extends ReadView<ReadOnlyKeyValueStore<Bytes, byte[]>>
        implements ReadOnlyKeyValueStore<Bytes, byte[]> {
        ReadOnlyView(IsolationLevel level) {
            super(name(), level, KstateKeyValueStore.this::readOnly);
        }

        @Override
        public byte[] get(Bytes key) {
            return KstateKeyValueStore.this.get(key, committed);
        }

        @Override
        public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
            return scan(from, to, false, committed);
        }

        @Override
        public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
            return scan(from, to, true, committed);
        }

        @Override
        public KeyValueIterator<Bytes, byte[]> all() {
            return scan(null, null, false, committed);
        }

        @Override
        public KeyValueIterator<Bytes, byte[]> reverseAll() {
            return scan(null, null, true, committed);
        }

        @Override
        public <PS extends Serializer<P>, P> KeyValueIterator<Bytes, byte[]> prefixScan(P prefix, PS prefixKeySerializer) {
            Objects.requireNonNull(prefix, "prefix cannot be null");
            Objects.requireNonNull(prefixKeySerializer, "prefixKeySerializer cannot be null");
            byte[] bytes = prefixKeySerializer.serialize(null, prefix);
            return open().scan(bytes, null, true, false, committed);
        }

        @Override
        public long approximateNumEntries() {
            return open().approximateNumEntries(committed);
        }
    }

    // ----- IQv2 ---------------------------------------------------------------------------

    @Override
    @SuppressWarnings("unchecked")
    <R> QueryResult<R> answer(Query<R> query, boolean committed) {
        if (query instanceof KeyQuery) {
            KeyQuery<Bytes, byte[]> q = (KeyQuery<Bytes, byte[]>) query;
            return (QueryResult<R>) QueryResult.forResult(get(q.getKey(), committed));
        } else if (query instanceof RangeQuery) {
            RangeQuery<Bytes, byte[]> q = (RangeQuery<Bytes, byte[]>) query;
            boolean reverse = q.resultOrder() == ResultOrder.DESCENDING;
            return (QueryResult<R>) QueryResult.forResult(
                scan(q.getLowerBound().orElse(null), q.getUpperBound().orElse(null), reverse, committed));
        } else if (query instanceof TimestampedKeyQuery && timestampedValues()) {
            TimestampedKeyQuery<Bytes, byte[]> q = (TimestampedKeyQuery<Bytes, byte[]>) query;
            return (QueryResult<R>) QueryResult.forResult(decode(get(q.key(), committed)));
        } else if (query instanceof TimestampedRangeQuery && timestampedValues()) {
            TimestampedRangeQuery<Bytes, byte[]> q = (TimestampedRangeQuery<Bytes, byte[]>) query;
            boolean reverse = q.resultOrder() == ResultOrder.DESCENDING;
            NativeIterator<Bytes> raw = scan(q.lowerBound().orElse(null), q.upperBound().orElse(null), reverse, committed);
            return (QueryResult<R>) QueryResult.forResult(new MappedIterator<>(raw, k -> k, KstateKeyValueStore::decode));
        } else {
            return QueryResult.forUnknownQueryType(query, this);
        }
    }

    /** @return true when values carry Kafka's 8-byte timestamp prefix */
    protected boolean timestampedValues() {
        return false;
    }

    static ValueAndTimestamp<byte[]> decode(byte[] raw) {
        if (raw == null) {
            return null;
        }
        ByteBuffer buf = ByteBuffer.wrap(raw);
        long timestamp = buf.getLong();
        byte[] value = new byte[raw.length - 8];
        buf.get(value);
        return ValueAndTimestamp.make(value, timestamp);
    }
}
