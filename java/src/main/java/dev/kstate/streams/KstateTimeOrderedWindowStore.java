package dev.kstate.streams;

import java.time.Duration;
import java.util.Map;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.ReadOnlyWindowStore;
import org.apache.kafka.streams.state.TimestampedBytesStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;
import org.apache.kafka.streams.state.internals.CacheFlushListener;
import org.apache.kafka.streams.state.internals.RocksDbIndexedTimeOrderedWindowBytesStoreSupplier;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

/**
 * The store a time-ordered kstate window supplier hands to Kafka Streams: a kstate
 * {@link KstateTimestampedWindowStore} opened time-ordered, which does all the work, seen by Kafka's
 * store builder as its own time-ordered store.
 *
 * <p>Why: with caching on (the DSL's default for time windows, emit-on-window-close included),
 * Kafka's {@code TimestampedWindowStoreBuilder} picks its {@code TimeOrderedCachingWindowStore},
 * whose merge of cache and store assumes time order, only when the store it wraps is (or wraps) a
 * {@code RocksDBTimeOrderedWindowStore}, and that cache refuses any other store. Every other store
 * gets the key-ordered {@code CachingWindowStore}, and the emitted windows would come out in
 * another order than with Kafka's own stores. So this class is a {@link WrappedStateStore} whose
 * {@link #wrapped()} is such a store, created by Kafka's own supplier and never initialised (it
 * opens nothing and writes nothing): Kafka only reads its {@code hasIndex()} from it. Every
 * operation goes to the kstate store.
 */
public class KstateTimeOrderedWindowStore extends WrappedStateStore<WindowStore<Bytes, byte[]>, Object, Object>
    implements WindowStore<Bytes, byte[]>, TimestampedBytesStore {
    private final KstateTimestampedWindowStore store;

    KstateTimeOrderedWindowStore(KstateTimestampedWindowStore store, long retentionPeriod, long windowSize,
                                 boolean retainDuplicates, boolean keyIndex) {
        this(store, RocksDbIndexedTimeOrderedWindowBytesStoreSupplier.create(store.name(), Duration.ofMillis(retentionPeriod),
            Duration.ofMillis(windowSize), retainDuplicates, keyIndex).get());
    }

    /**
     * @param kafkaStore the Kafka time-ordered store Kafka's store builder looks for under
     *     {@link #wrapped()}: created, never initialised
     */
    KstateTimeOrderedWindowStore(KstateTimestampedWindowStore store, WindowStore<Bytes, byte[]> kafkaStore) {
        super(kafkaStore);
        this.store = store;
    }

    /** @return the kstate store doing the work */
    public KstateTimestampedWindowStore kstateStore() {
        return store;
    }

    // ----- StateStore: all to the kstate store ----------------------------------------------------

    @Override
    public void init(StateStoreContext context, StateStore root) {
        store.init(context, root);
    }

    @Override
    public String name() {
        return store.name();
    }

    @Override
    public boolean persistent() {
        return store.persistent();
    }

    @Override
    public boolean isOpen() {
        return store.isOpen();
    }

    @Override
    @SuppressWarnings("deprecation") // kept so that the jar also works on Kafka Streams 4.0-4.2
    public void flush() {
        store.flush();
    }

    @Override
    public void commit(Map<TopicPartition, Long> changelogOffsets) {
        store.commit(changelogOffsets);
    }

    @Override
    public boolean managesOffsets() {
        return store.managesOffsets();
    }

    @Override
    public Long committedOffset(TopicPartition partition) {
        return store.committedOffset(partition);
    }

    @Override
    public long approximateNumUncommittedBytes() {
        return store.approximateNumUncommittedBytes();
    }

    @Override
    public void close() {
        store.close();
    }

    @Override
    public <R> QueryResult<R> query(Query<R> query, PositionBound positionBound, QueryConfig config) {
        return store.query(query, positionBound, config);
    }

    @Override
    public Position getPosition() {
        return store.getPosition();
    }

    /** No cache here: Kafka's caching layer sits above this store. */
    @Override
    public boolean setFlushListener(CacheFlushListener<Object, Object> listener, boolean sendOldValues) {
        return false;
    }

    @Override
    public void flushCache() {
    }

    @Override
    public void clearCache() {
    }

    // ----- WindowStore: all to the kstate store ---------------------------------------------------

    @Override
    public void put(Bytes key, byte[] value, long windowStartTimestamp) {
        store.put(key, value, windowStartTimestamp);
    }

    @Override
    public byte[] fetch(Bytes key, long time) {
        return store.fetch(key, time);
    }

    @Override
    public WindowStoreIterator<byte[]> fetch(Bytes key, long timeFrom, long timeTo) {
        return store.fetch(key, timeFrom, timeTo);
    }

    @Override
    public WindowStoreIterator<byte[]> backwardFetch(Bytes key, long timeFrom, long timeTo) {
        return store.backwardFetch(key, timeFrom, timeTo);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> fetch(Bytes keyFrom, Bytes keyTo, long timeFrom, long timeTo) {
        return store.fetch(keyFrom, keyTo, timeFrom, timeTo);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetch(Bytes keyFrom, Bytes keyTo, long timeFrom,
                                                                   long timeTo) {
        return store.backwardFetch(keyFrom, keyTo, timeFrom, timeTo);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> fetchAll(long timeFrom, long timeTo) {
        return store.fetchAll(timeFrom, timeTo);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetchAll(long timeFrom, long timeTo) {
        return store.backwardFetchAll(timeFrom, timeTo);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> all() {
        return store.all();
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> backwardAll() {
        return store.backwardAll();
    }

    @Override
    public ReadOnlyWindowStore<Bytes, byte[]> readOnly(IsolationLevel isolationLevel) {
        return store.readOnly(isolationLevel);
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + store + "}";
    }
}
