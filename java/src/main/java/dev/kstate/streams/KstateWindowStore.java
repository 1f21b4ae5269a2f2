package dev.kstate.streams;

import dev.kstate.internal.NativeIterator;
import dev.kstate.internal.NativeStore;
import dev.kstate.internal.NativeWindowStore;
import java.time.Instant;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.TimeWindow;
import org.apache.kafka.streams.query.FailureReason;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.WindowKeyQuery;
import org.apache.kafka.streams.query.WindowRangeQuery;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.ReadOnlyWindowStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;

/**
 * A kstate window store speaking Kafka Streams 4.4's {@link WindowStore} and
 * {@link org.apache.kafka.streams.processor.StateStore} contracts, with the semantics of
 * Kafka's {@code RocksDBWindowStore}: {@code retainDuplicates} seqnums, retention by segments
 * of {@code segmentIntervalMs}, and results in Kafka's order (segment by segment, then by the
 * bytes of the Kafka store key), so that Kafka's caching layer merges with it correctly.
 *
 * <p>The plain read methods are the writer's view; {@link #readOnly(IsolationLevel)} and the
 * {@link QueryConfig} of IQv2 queries ({@link WindowKeyQuery}, {@link WindowRangeQuery}) choose
 * committed or uncommitted data. Values are stored as handed over (for the timestamped
 * subclass: Kafka's 8-byte timestamp + value layout).
 */
public class KstateWindowStore extends KstateSegmentedStateStore<NativeWindowStore> implements WindowStore<Bytes, byte[]> {
    private final long windowSize;
    /** Reads the store keys of this store's range queries as windowed keys of its window size. */
    private final NativeIterator.KeyReader<Windowed<Bytes>> windowedKeys;
    private final boolean retainDuplicates;
    /** Kafka's time-ordered store (emit on window close), and its {@code hasIndex}. */
    private final boolean timeOrdered;
    private final boolean keyIndex;
    /** The writer's view, which the plain read methods answer where Kafka's signatures allow. */
    private final ReadOnlyView writer;

    KstateWindowStore(KstateStoreOptions options, long retentionPeriod, long windowSize, boolean retainDuplicates,
                      long segmentInterval, boolean timeOrdered, boolean keyIndex) {
        super(options, retentionPeriod, segmentInterval, timeOrdered);
        writer = new ReadOnlyView(IsolationLevel.READ_UNCOMMITTED);
        this.windowSize = windowSize;
        this.windowedKeys = windowedKeyReader(windowSize);
        this.retainDuplicates = retainDuplicates;
        this.timeOrdered = timeOrdered;
        this.keyIndex = keyIndex;
    }

    /** @return whether this is Kafka's time-ordered window store (fetchAll and all by window start) */
    public boolean timeOrdered() {
        return timeOrdered;
    }

    @Override
    NativeWindowStore openNative(String path, int engine, long maxUncommittedBytes, boolean syncOnCommit,
                                 NativeStore.RocksTuning tuning) {
        return NativeWindowStore.open(name(), path, engine, options.valueFormat.nativeNumber, maxUncommittedBytes,
            syncOnCommit, tuning, retentionPeriod, windowSize, retainDuplicates, segmentInterval, timeOrdered, keyIndex);
    }

    @Override
    java.util.List<Object> shape() {
        return java.util.Arrays.asList("window", options.valueFormat, retentionPeriod, windowSize, retainDuplicates,
            segmentInterval, timeOrdered, keyIndex);
    }

    @Override
    String kind() {
        return "window";
    }

    /** @return the window size (ms) */
    public long windowSize() {
        return windowSize;
    }

    /** @return whether the store keeps duplicates (seqnums) */
    public boolean retainDuplicates() {
        return retainDuplicates;
    }

    // ----- writes ---------------------------------------------------------------------------------

    @Override
    public void put(Bytes key, byte[] value, long windowStartTimestamp) {
        byte[] k = key(key);
        NativeWindowStore s = open();
        if (value == null && retainDuplicates) {
            // Kafka's RocksDBWindowStore: a delete is a no-op with duplicates (nor does it move the position)
            return;
        }
        write(true, () -> s.put(k, value, windowStartTimestamp));
    }

    // ----- reads (the writer's view) --------------------------------------------------------------

    @Override
    public byte[] fetch(Bytes key, long time) {
        return writer.fetch(key, time);
    }

    @Override
    public WindowStoreIterator<byte[]> fetch(Bytes key, long timeFrom, long timeTo) {
        return fetchKey(key, timeFrom, timeTo, false, false);
    }

    @Override
    public WindowStoreIterator<byte[]> backwardFetch(Bytes key, long timeFrom, long timeTo) {
        return fetchKey(key, timeFrom, timeTo, true, false);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> fetch(Bytes keyFrom, Bytes keyTo, long timeFrom, long timeTo) {
        return fetchRange(keyFrom, keyTo, timeFrom, timeTo, false, false);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetch(Bytes keyFrom, Bytes keyTo, long timeFrom, long timeTo) {
        return fetchRange(keyFrom, keyTo, timeFrom, timeTo, true, false);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> fetchAll(long timeFrom, long timeTo) {
        return fetchTimes(timeFrom, timeTo, false, false);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetchAll(long timeFrom, long timeTo) {
        return fetchTimes(timeFrom, timeTo, true, false);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> all() {
        return writer.all();
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> backwardAll() {
        return writer.backwardAll();
    }

    private WindowStoreIterator<byte[]> fetchKey(Bytes key, long timeFrom, long timeTo, boolean reverse, boolean committed) {
        byte[] k = key(key);
        return new StartTimeIterator(open().query(NativeWindowStore.QUERY_KEY, k, null, timeFrom, timeTo, reverse, committed,
            NativeWindowStore.WINDOW_START));
    }

    private KeyValueIterator<Windowed<Bytes>, byte[]> fetchTimes(long timeFrom, long timeTo, boolean reverse,
                                                               boolean committed) {
        return open().query(NativeWindowStore.QUERY_TIME, null, null, timeFrom, timeTo, reverse, committed, windowedKeys);
    }

    private KeyValueIterator<Windowed<Bytes>, byte[]> fetchRange(Bytes keyFrom, Bytes keyTo, long timeFrom, long timeTo,
                                                               boolean reverse, boolean committed) {
        return open().query(NativeWindowStore.QUERY_KEY_RANGE, bound(keyFrom), bound(keyTo), timeFrom, timeTo,
            reverse, committed, windowedKeys);
    }

    /**
     * Reads a Kafka window store key in a batch as its windowed key, as Kafka's
     * {@code WindowKeySchema#fromStoreKey} with {@code timeWindowForSize}: the window
     * {@code [start, start + size)}, its end clamped to {@code Long.MAX_VALUE} on overflow.
     */
    private static NativeIterator.KeyReader<Windowed<Bytes>> windowedKeyReader(long windowSize) {
        return (batch, length) -> {
            byte[] key = new byte[length - 12];
            batch.get(key);
            long start = batch.getLong();
            batch.getInt();
            long end = start + windowSize;
            if (end < 0) {
                end = Long.MAX_VALUE;
            }
            return new Windowed<>(Bytes.wrap(key), new TimeWindow(start, end));
        };
    }

    // ----- isolation ---------------------------------------------------------------------------

    /**
     * A read-only view at an isolation level: READ_COMMITTED reads the last completed commit,
     * READ_UNCOMMITTED the writer's view. Kafka's IQv1 ({@code KafkaStreams#store}) and its
     * wrappers (metered, caching, change-logging) call this with
     * {@code default.interactive.query.isolation.level} or the level of a view's own
     * {@code readOnly}.
     *
     * @param isolationLevel the level
     * @return the view; every read method is supported
     */
    @Override
    public ReadOnlyWindowStore<Bytes, byte[]> readOnly(IsolationLevel isolationLevel) {
        return new ReadOnlyView(isolationLevel);
    }

    /** See {@link #readOnly(IsolationLevel)}; the store's own reads are its READ_UNCOMMITTED view. */
    private final class ReadOnlyView extends ReadView<ReadOnlyWindowStore<Bytes, byte[]>>
        implements ReadOnlyWindowStore<Bytes, byte[]> {
        ReadOnlyView(IsolationLevel level) {
            super(name(), level, KstateWindowStore.this::readOnly);
        }

        @Override
        public byte[] fetch(Bytes key, long time) {
            return open().fetch(key(key), time, committed);
        }

        @Override
        public WindowStoreIterator<byte[]> fetch(Bytes key, Instant timeFrom, Instant timeTo) {
            return fetchKey(key, millis(timeFrom, "timeFrom"), millis(timeTo, "timeTo"), false, committed);
        }

        @Override
        public WindowStoreIterator<byte[]> backwardFetch(Bytes key, Instant timeFrom, Instant timeTo) {
            return fetchKey(key, millis(timeFrom, "timeFrom"), millis(timeTo, "timeTo"), true, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> fetch(Bytes keyFrom, Bytes keyTo, Instant timeFrom, Instant timeTo) {
            return fetchRange(keyFrom, keyTo, millis(timeFrom, "timeFrom"), millis(timeTo, "timeTo"), false, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetch(Bytes keyFrom, Bytes keyTo, Instant timeFrom,
                                                                      Instant timeTo) {
            return fetchRange(keyFrom, keyTo, millis(timeFrom, "timeFrom"), millis(timeTo, "timeTo"), true, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> all() {
            return open().query(NativeWindowStore.QUERY_ALL, null, null, 0, Long.MAX_VALUE, false, committed, windowedKeys);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> backwardAll() {
            return open().query(NativeWindowStore.QUERY_ALL, null, null, 0, Long.MAX_VALUE, true, committed, windowedKeys);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> fetchAll(Instant timeFrom, Instant timeTo) {
            return fetchTimes(millis(timeFrom, "timeFrom"), millis(timeTo, "timeTo"), false, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetchAll(Instant timeFrom, Instant timeTo) {
            return fetchTimes(millis(timeFrom, "timeFrom"), millis(timeTo, "timeTo"), true, committed);
        }
    }

    // ----- IQv2 ---------------------------------------------------------------------------------

    /**
     * Answers {@link WindowKeyQuery} ({@code fetch(key, timeFrom, timeTo)}) and
     * {@link WindowRangeQuery} with a window start range ({@code fetchAll(timeFrom, timeTo)}),
     * at the query's isolation level, as Kafka's window stores do; open time ranges fail with
     * {@code UNKNOWN_QUERY_TYPE} there too.
     */
    @Override
    @SuppressWarnings("unchecked")
    <T> QueryResult<T> answer(Query<T> q, boolean committed) {
        if (q instanceof WindowKeyQuery) {
            WindowKeyQuery<Bytes, byte[]> wq = (WindowKeyQuery<Bytes, byte[]>) q;
            if (wq.getTimeFrom().isPresent() && wq.getTimeTo().isPresent()) {
                return (QueryResult<T>) QueryResult.forResult(fetchKey(wq.getKey(),
                    wq.getTimeFrom().get().toEpochMilli(), wq.getTimeTo().get().toEpochMilli(), false, committed));
            }
            return QueryResult.forFailure(FailureReason.UNKNOWN_QUERY_TYPE, "This store (" + getClass()
                + ") doesn't know how to execute the given query (" + q + ") because it only supports closed-range"
                + " queries.");
        } else if (q instanceof WindowRangeQuery) {
            WindowRangeQuery<Bytes, byte[]> wq = (WindowRangeQuery<Bytes, byte[]>) q;
            if (wq.getTimeFrom().isPresent() && wq.getTimeTo().isPresent()) {
                return (QueryResult<T>) QueryResult.forResult(fetchTimes(wq.getTimeFrom().get().toEpochMilli(),
                    wq.getTimeTo().get().toEpochMilli(), false, committed));
            }
            return QueryResult.forFailure(FailureReason.UNKNOWN_QUERY_TYPE, "This store (" + getClass()
                + ") doesn't know how to execute the given query (" + q + ") because WindowStores only supports"
                + " WindowRangeQuery.withWindowStartRange.");
        }
        return QueryResult.forUnknownQueryType(q, KstateWindowStore.this);
    }

    /** {@code fetch(key, from, to)}: window start -> raw value, as Kafka's WrappedWindowStoreIterator. */
    private static final class StartTimeIterator extends MappedIterator<Long, Long, byte[]>
        implements WindowStoreIterator<byte[]> {
        StartTimeIterator(NativeIterator<Long> inner) {
            super(inner, start -> start, value -> value);
        }
    }
}
