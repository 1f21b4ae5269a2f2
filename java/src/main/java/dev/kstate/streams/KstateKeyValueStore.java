package dev.kstate.streams;

import dev.kstate.internal.KstateNative;
import dev.kstate.internal.NativeIterator;
import dev.kstate.internal.NativeStore;
import dev.kstate.internal.Packing;
import dev.kstate.internal.PositionCodec;
import java.io.File;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.BatchingStateRestoreCallback;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.query.FailureReason;
import org.apache.kafka.streams.query.KeyQuery;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
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

/**
 * A kstate key-value store speaking Kafka Streams 4.4's {@link StateStore} contract.
 *
 * <p>Writes form a transaction: {@link #commit(Map)} makes them durable together with the
 * changelog offsets and the store's {@link Position} in one atomic native step
 * ({@link #managesOffsets()} is true). The threads that initialise, write to or restore the
 * store read their own uncommitted writes; any other thread (interactive queries) reads
 * committed data, or uncommitted data when {@code default.interactive.query.isolation.level}
 * is {@code READ_UNCOMMITTED}. Values are stored as handed over (for the timestamped
 * subclass: Kafka's 8-byte timestamp + value layout).
 */
public class KstateKeyValueStore implements KeyValueStore<Bytes, byte[]> {
    private final KstateStoreOptions options;
    private final Set<Long> writerThreads = ConcurrentHashMap.newKeySet();
    private volatile NativeStore store;
    private volatile StateStoreContext context;
    private volatile IsolationLevel iqIsolation = IsolationLevel.READ_COMMITTED;
    private volatile Position position = Position.emptyPosition();
    private volatile Position committedPosition = Position.emptyPosition();
    private volatile File directory;

    KstateKeyValueStore(KstateStoreOptions options) {
        this.options = options;
    }

    // ----- life cycle ---------------------------------------------------------------------

    @Override
    public String name() {
        return options.name;
    }

    @Override
    public void init(StateStoreContext context, StateStore root) {
        if (store != null && store.isOpen()) {
            throw new IllegalStateException("store " + name() + " is already initialised");
        }
        Map<String, Object> configs = context.appConfigs();
        String path = null;
        int engine = KstateNative.ENGINE_MEMORY;
        if (options.engine == KstateStoreOptions.Engine.ROCKSDB) {
            File dir = new File(context.stateDir(), name());
            if (!dir.isDirectory() && !dir.mkdirs()) {
                throw new KstateProcessorStateException("cannot create the directory " + dir + " of store " + name(),
                    KstateException.IO);
            }
            directory = dir;
            path = dir.getAbsolutePath();
            engine = KstateNative.ENGINE_ROCKSDB;
        }
        NativeStore opened = NativeStore.open(name(), path, engine, options.timestamped,
            options.resolvedMaxUncommittedBytes(configs), options.resolvedSyncOnCommit(configs),
            options.resolvedBlockCacheBytes(configs), options.resolvedWriteBufferBytes(configs));
        try {
            Position recovered = PositionCodec.decode(opened.committedMetadata());
            position = recovered;
            committedPosition = recovered.copy();
        } catch (RuntimeException e) {
            opened.close();
            throw new KstateProcessorStateException("store " + name() + ": unreadable position metadata: " + e.getMessage(),
                KstateException.CORRUPTION);
        }
        this.iqIsolation = isolationFrom(configs);
        this.context = context;
        this.store = opened;
        markWriter();
        context.register(root, new RestoreCallback());
    }

    /**
     * The isolation level of IQv1 reads from threads other than the writers: {@value
     * KstateStoreOptions#IQ_ISOLATION_LEVEL_CONFIG} if set; else Kafka's {@code
     * default.interactive.query.isolation.level} when it says READ_COMMITTED, or when {@code
     * enable.transactional.statestores=true} (Kafka documents the setting as meaningful only
     * then; its default is READ_UNCOMMITTED); else READ_COMMITTED, kstate's own default.
     */
    static IsolationLevel isolationFrom(Map<String, Object> configs) {
        if (configs == null) {
            return IsolationLevel.READ_COMMITTED;
        }
        Object own = configs.get(KstateStoreOptions.IQ_ISOLATION_LEVEL_CONFIG);
        if (own != null) {
            return parseIsolation(own);
        }
        Object kafka = configs.get(StreamsConfig.DEFAULT_INTERACTIVE_QUERY_ISOLATION_LEVEL_CONFIG);
        if (kafka == null) {
            return IsolationLevel.READ_COMMITTED;
        }
        IsolationLevel level = parseIsolation(kafka);
        Object transactional = configs.get(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG);
        if (level == IsolationLevel.READ_COMMITTED
            || (transactional != null && Boolean.parseBoolean(String.valueOf(transactional).trim()))) {
            return level;
        }
        return IsolationLevel.READ_COMMITTED;
    }

    private static IsolationLevel parseIsolation(Object v) {
        if (v instanceof IsolationLevel) {
            return (IsolationLevel) v;
        }
        return IsolationLevel.valueOf(String.valueOf(v).trim().toUpperCase(Locale.ROOT));
    }

    /** Writes each changelog batch with one native call. */
    private final class RestoreCallback implements BatchingStateRestoreCallback {
        @Override
        public void restoreAll(Collection<KeyValue<byte[], byte[]>> records) {
            NativeStore s = open();
            markWriter();
            if (!records.isEmpty()) {
                s.putAllPacked(Packing.packRaw(records));
            }
        }
    }

    @Override
    @SuppressWarnings("deprecation") // kept for Kafka Streams 4.0-4.2 runtimes
    public void flush() {
        // Kafka Streams 4.0-4.2 call flush() to make writes durable and keep offsets in their
        // own checkpoint file; 4.4 calls commit(Map) instead and never flush().
        markWriter();
        open().flush(PositionCodec.encode(position));
        committedPosition = position.copy();
    }

    @Override
    public void commit(Map<TopicPartition, Long> changelogOffsets) {
        NativeStore s = open();
        markWriter();
        Position snapshot = position.copy();
        s.commit(changelogOffsets == null ? Collections.emptyMap() : changelogOffsets, PositionCodec.encode(snapshot));
        committedPosition = snapshot;
    }

    @Override
    public Long committedOffset(TopicPartition partition) {
        return open().committedOffset(Objects.requireNonNull(partition, "partition cannot be null"));
    }

    @Override
    @SuppressWarnings("deprecation") // deprecated in 4.4 (every store will manage offsets); still consulted
    public boolean managesOffsets() {
        return true;
    }

    @Override
    public long approximateNumUncommittedBytes() {
        NativeStore s = store;
        if (s == null || !s.isOpen()) {
            return 0;
        }
        return s.approximateNumUncommittedBytes();
    }

    /** Closes the store and its open iterators; uncommitted writes are discarded. Idempotent. */
    @Override
    public void close() {
        NativeStore s = store;
        if (s != null) {
            s.close();
        }
    }

    @Override
    public boolean persistent() {
        return options.engine == KstateStoreOptions.Engine.ROCKSDB;
    }

    @Override
    public boolean isOpen() {
        NativeStore s = store;
        return s != null && s.isOpen();
    }

    @Override
    public Position getPosition() {
        return position;
    }

    /** @return the options this store was built with */
    public KstateStoreOptions options() {
        return options;
    }

    /** @return the store's directory (RocksDB engine, after init), or null */
    public File directory() {
        return directory;
    }

    /** @return number of iterators currently open on this store */
    public int openIterators() {
        NativeStore s = store;
        return s == null ? 0 : s.openIterators();
    }

    // ----- helpers -------------------------------------------------------------------------

    private NativeStore open() {
        NativeStore s = store;
        if (s == null || !s.isOpen()) {
            throw new KstateInvalidStateStoreException("Store " + name() + " is currently closed.", KstateException.STORE_CLOSED);
        }
        return s;
    }

    private void markWriter() {
        writerThreads.add(Thread.currentThread().getId());
    }

    /** Reads by a writer thread see its writes; other threads read at the IQ isolation level. */
    private boolean readCommitted() {
        return !writerThreads.contains(Thread.currentThread().getId()) && iqIsolation == IsolationLevel.READ_COMMITTED;
    }

    private void updatePosition() {
        StateStoreContext ctx = context;
        if (ctx == null) {
            return;
        }
        Optional<RecordMetadata> meta = ctx.recordMetadata();
        if (meta.isPresent() && meta.get().topic() != null) {
            RecordMetadata m = meta.get();
            position = position.withComponent(m.topic(), m.partition(), m.offset());
        }
    }

    private static byte[] key(Bytes key) {
        return Objects.requireNonNull(key, "key cannot be null").get();
    }

    // ----- KeyValueStore ------------------------------------------------------------------

    @Override
    public void put(Bytes key, byte[] value) {
        byte[] k = key(key);
        NativeStore s = open();
        markWriter();
        s.put(k, value);
        updatePosition();
    }

    @Override
    public byte[] putIfAbsent(Bytes key, byte[] value) {
        byte[] k = key(key);
        NativeStore s = open();
        markWriter();
        if (value == null) {
            // Kafka: putIfAbsent(k, null) writes nothing and returns the current value
            return s.get(k, false);
        }
        byte[] existing = s.putIfAbsent(k, value);
        if (existing == null) {
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
        markWriter();
        if (!entries.isEmpty()) {
            s.putAllPacked(Packing.packBytes(entries));
            updatePosition();
        }
    }

    @Override
    public byte[] delete(Bytes key) {
        byte[] k = key(key);
        NativeStore s = open();
        markWriter();
        byte[] old = s.delete(k);
        updatePosition();
        return old;
    }

    @Override
    public byte[] get(Bytes key) {
        return get(key, readCommitted());
    }

    private byte[] get(Bytes key, boolean committed) {
        return open().get(key(key), committed);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
        return scan(from, to, false, readCommitted());
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
        return scan(from, to, true, readCommitted());
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> all() {
        return scan(null, null, false, readCommitted());
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseAll() {
        return scan(null, null, true, readCommitted());
    }

    @Override
    public <PS extends Serializer<P>, P> KeyValueIterator<Bytes, byte[]> prefixScan(P prefix, PS prefixKeySerializer) {
        Objects.requireNonNull(prefix, "prefix cannot be null");
        Objects.requireNonNull(prefixKeySerializer, "prefixKeySerializer cannot be null");
        byte[] bytes = prefixKeySerializer.serialize(null, prefix);
        return open().scan(bytes, null, true, false, readCommitted());
    }

    private KeyValueIterator<Bytes, byte[]> scan(Bytes from, Bytes to, boolean reverse, boolean committed) {
        NativeIterator it = open().scan(from == null ? null : from.get(), to == null ? null : to.get(), false, reverse, committed);
        return it;
    }

    @Override
    public long approximateNumEntries() {
        return open().approximateNumEntries(readCommitted());
    }

    @Override
    public ReadOnlyKeyValueStore<Bytes, byte[]> readOnly(IsolationLevel isolationLevel) {
        final boolean committed = isolationLevel == IsolationLevel.READ_COMMITTED;
        final KstateKeyValueStore self = this;
        return new ReadOnlyKeyValueStore<Bytes, byte[]>() {
            @Override
            public byte[] get(Bytes key) {
                return self.get(key, committed);
            }

            @Override
            public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
                return self.scan(from, to, false, committed);
            }

            @Override
            public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
                return self.scan(from, to, true, committed);
            }

            @Override
            public KeyValueIterator<Bytes, byte[]> all() {
                return self.scan(null, null, false, committed);
            }

            @Override
            public KeyValueIterator<Bytes, byte[]> reverseAll() {
                return self.scan(null, null, true, committed);
            }

            @Override
            public long approximateNumEntries() {
                return self.open().approximateNumEntries(committed);
            }
        };
    }

    // ----- IQv2 ---------------------------------------------------------------------------

    @Override
    @SuppressWarnings("unchecked")
    public <R> QueryResult<R> query(Query<R> query, PositionBound positionBound, QueryConfig config) {
        long start = System.nanoTime();
        boolean committed = config.getIsolationLevel() == IsolationLevel.READ_COMMITTED;
        Position current = committed ? committedPosition : position;
        StateStoreContext ctx = context;
        int partition = ctx == null ? 0 : ctx.taskId().partition();
        QueryResult<R> result;
        try {
            result = answer(query, positionBound, committed, current, partition);
        } catch (RuntimeException e) {
            // As Kafka's own stores do: a failing store yields a failed result, not a throw.
            result = QueryResult.forFailure(FailureReason.STORE_EXCEPTION,
                "kstate store " + name() + " failed to answer " + query + ": " + e);
        }
        if (config.isCollectExecutionInfo()) {
            result.addExecutionInfo("Handled in " + getClass() + " (" + (committed ? "read committed" : "read uncommitted")
                + ") in " + (System.nanoTime() - start) + "ns");
        }
        result.setPosition(current.copy());
        return result;
    }

    @SuppressWarnings("unchecked")
    private <R> QueryResult<R> answer(Query<R> query, PositionBound positionBound, boolean committed, Position current,
                                      int partition) {
        if (!isPermitted(current, positionBound, partition)) {
            return QueryResult.notUpToBound(current, positionBound, partition);
        } else if (query instanceof KeyQuery) {
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
            KeyValueIterator<Bytes, byte[]> raw = scan(q.lowerBound().orElse(null), q.upperBound().orElse(null), reverse, committed);
            return (QueryResult<R>) QueryResult.forResult(new DecodingIterator(raw));
        } else {
            return QueryResult.forUnknownQueryType(query, this);
        }
    }

    /** @return true when values carry Kafka's 8-byte timestamp prefix */
    protected boolean timestampedValues() {
        return false;
    }

    /**
     * Kafka's rule: permitted when the bound is unbounded, or when for every topic in the
     * bound this store has seen at least the bound's offset of its partition.
     */
    static boolean isPermitted(Position current, PositionBound bound, int partition) {
        if (bound == null || bound.isUnbounded()) {
            return true;
        }
        Position required = bound.position();
        for (String topic : required.getTopics()) {
            Map<Integer, Long> need = required.getPartitionPositions(topic);
            Long needed = need.get(partition);
            if (needed == null) {
                continue;
            }
            Map<Integer, Long> have = current.getTopics().contains(topic)
                ? current.getPartitionPositions(topic) : Collections.emptyMap();
            Long seen = have.get(partition);
            if (seen == null || seen < needed) {
                return false;
            }
        }
        return true;
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

    /** A range result decoded to values and timestamps. */
    private static final class DecodingIterator implements KeyValueIterator<Bytes, ValueAndTimestamp<byte[]>> {
        private final KeyValueIterator<Bytes, byte[]> inner;

        DecodingIterator(KeyValueIterator<Bytes, byte[]> inner) {
            this.inner = inner;
        }

        @Override
        public boolean hasNext() {
            return inner.hasNext();
        }

        @Override
        public KeyValue<Bytes, ValueAndTimestamp<byte[]>> next() {
            KeyValue<Bytes, byte[]> kv = inner.next();
            return KeyValue.pair(kv.key, decode(kv.value));
        }

        @Override
        public Bytes peekNextKey() {
            return inner.peekNextKey();
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + name() + ", " + options.engine + ", open=" + isOpen() + "}";
    }
}
