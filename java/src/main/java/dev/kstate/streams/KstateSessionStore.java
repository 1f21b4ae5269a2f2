package dev.kstate.streams;

import dev.kstate.internal.NativeIterator;
import dev.kstate.internal.NativeSessionStore;
import dev.kstate.internal.NativeStore;
import java.time.Instant;
import java.util.Objects;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.query.FailureReason;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.WindowRangeQuery;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.ReadOnlySessionStore;
import org.apache.kafka.streams.state.SessionStore;

/**
 * A kstate session store speaking Kafka Streams 4.4's {@link SessionStore} and
 * {@link org.apache.kafka.streams.processor.StateStore} contracts, with the semantics of
 * Kafka's {@code RocksDBSessionStore}: sessions keyed {@code key ‖ end ‖ start}, retention by
 * segments of session end, results in Kafka's order.
 *
 * <p>The plain read methods are the writer's view; {@link #readOnly(IsolationLevel)} and the
 * {@link QueryConfig} of IQv2 queries ({@link WindowRangeQuery#withKey}) choose committed or
 * uncommitted data. Aggregates are stored as handed over.
 */
public class KstateSessionStore extends KstateSegmentedStateStore<NativeSessionStore> implements SessionStore<Bytes, byte[]> {
    /** Kafka's time-ordered session store (emit on window close). */
    private final boolean timeOrdered;
    /** Kafka's store of the application is the DSL's headers store format (recorded for the export). */
    private final boolean kafkaHeaders;
    /** The writer's view, which the plain read methods answer. */
    private final ReadOnlyView writer;

    KstateSessionStore(KstateStoreOptions options, long retentionPeriod, long segmentInterval) {
        this(options, retentionPeriod, segmentInterval, false);
    }

    KstateSessionStore(KstateStoreOptions options, long retentionPeriod, long segmentInterval, boolean timeOrdered) {
        this(options, retentionPeriod, segmentInterval, timeOrdered, false);
    }

    /**
     * {@code kafkaHeaders}: the time-ordered store of {@code EmitStrategy.onWindowClose()} in the DSL's
     * headers store format, where Kafka's own store keeps its records in
     * {@code sessionKeyValueWithHeaders}, which {@code kstate export --to kafka} then writes.
     */
    KstateSessionStore(KstateStoreOptions options, long retentionPeriod, long segmentInterval, boolean timeOrdered,
                       boolean kafkaHeaders) {
        super(options, retentionPeriod, segmentInterval, timeOrdered);
        writer = new ReadOnlyView(IsolationLevel.READ_UNCOMMITTED);
        this.timeOrdered = timeOrdered;
        this.kafkaHeaders = timeOrdered && kafkaHeaders;
    }

    /**
     * True on the RocksDB engine, and on the memory engine too where Kafka Streams reads a
     * persistent store's restore offset from the store itself (4.3+; see
     * {@link KafkaRuntime#RESTORE_OFFSETS_FROM_STORES}).
     *
     * <p>Kafka's record cache ({@code CachingSessionStore}) walks its cache segment by segment
     * only over a persistent store; over any other it answers each {@code findSessions} with
     * one cache range from the query's lowest segment to its highest, filtered, which over a
     * large cache is most of it (a session aggregation on the memory engine then ran at about
     * 100 records per second over 1M keys). Both engines keep sessions in the same
     * segment-by-segment order, so the memory engine can take the persistent path, and then
     * answers behind the cache exactly as the RocksDB engine (and Kafka's RocksDB session store).
     * What else "persistent" means to Kafka 4.3+ holds for it: Kafka asks the store for its
     * restore offset ({@link #committedOffset}: none after an open, so Kafka restores it from
     * the changelog's start, as before) and commits the changelog offset with it. Kafka 4.0 to
     * 4.2 would instead restore a persistent store from the offset in the task's
     * {@code .checkpoint} file, which a memory store does not outlive, so there it stays not
     * persistent.
     */
    @Override
    public boolean persistent() {
        return super.persistent() || KafkaRuntime.RESTORE_OFFSETS_FROM_STORES;
    }

    /** @return whether this is Kafka's time-ordered session store (answers {@link #findSessions(long, long)}) */
    public boolean timeOrdered() {
        return timeOrdered;
    }

    @Override
    NativeSessionStore openNative(String path, int engine, long maxUncommittedBytes, boolean syncOnCommit,
                                  NativeStore.RocksTuning tuning) {
        return NativeSessionStore.open(name(), path, engine, options.valueFormat == KstateStoreOptions.ValueFormat.HEADERS,
            maxUncommittedBytes, syncOnCommit, tuning, retentionPeriod, segmentInterval, timeOrdered, kafkaHeaders);
    }

    @Override
    java.util.List<Object> shape() {
        return java.util.Arrays.asList("session", options.valueFormat == KstateStoreOptions.ValueFormat.HEADERS,
            retentionPeriod, segmentInterval, timeOrdered, kafkaHeaders);
    }

    @Override
    String kind() {
        return "session";
    }

    // ----- writes ---------------------------------------------------------------------------------

    @Override
    public void put(Windowed<Bytes> sessionKey, byte[] aggregate) {
        Objects.requireNonNull(sessionKey, "sessionKey cannot be null");
        byte[] k = key(sessionKey.key());
        long start = sessionKey.window().start();
        long end = sessionKey.window().end();
        NativeSessionStore s = open();
        write(true, () -> s.put(k, start, end, aggregate));
    }

    @Override
    public void remove(Windowed<Bytes> sessionKey) {
        Objects.requireNonNull(sessionKey, "sessionKey cannot be null");
        byte[] k = key(sessionKey.key());
        long start = sessionKey.window().start();
        long end = sessionKey.window().end();
        NativeSessionStore s = open();
        // Kafka's AbstractRocksDBSegmentedBytesStore#remove moves the stream time, not the position
        write(false, () -> {
            s.remove(k, start, end);
            return true;
        });
    }

    // ----- reads (the writer's view) --------------------------------------------------------------

    /**
     * KIP-825's {@code findSessions(earliestSessionEndTime, latestSessionEndTime)}, what
     * {@code EmitStrategy.onWindowClose()} reads: on a time-ordered store, every session of the live
     * segments whose end is in the range, by end, then start, then key, as Kafka's
     * {@code RocksDBTimeOrderedSessionStore}; other stores do not support it (as Kafka's own).
     */
    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> findSessions(long earliestSessionEndTime,
                                                                  long latestSessionEndTime) {
        if (!timeOrdered) {
            throw new UnsupportedOperationException("findSessions(earliestSessionEndTime, latestSessionEndTime) "
                + "needs a time-ordered session store (EmitStrategy.onWindowClose())");
        }
        return sessions(open().query(NativeSessionStore.QUERY_BY_END, null, null, earliestSessionEndTime,
            latestSessionEndTime, false, false));
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> findSessions(Bytes key, long earliestSessionEndTime,
                                                                  long latestSessionStartTime) {
        return writer.findSessions(key, earliestSessionEndTime, latestSessionStartTime);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFindSessions(Bytes key, long earliestSessionEndTime,
                                                                          long latestSessionStartTime) {
        return writer.backwardFindSessions(key, earliestSessionEndTime, latestSessionStartTime);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> findSessions(Bytes keyFrom, Bytes keyTo, long earliestSessionEndTime,
                                                                  long latestSessionStartTime) {
        return writer.findSessions(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFindSessions(Bytes keyFrom, Bytes keyTo,
                                                                          long earliestSessionEndTime,
                                                                          long latestSessionStartTime) {
        return writer.backwardFindSessions(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime);
    }

    @Override
    public byte[] fetchSession(Bytes key, long sessionStartTime, long sessionEndTime) {
        return writer.fetchSession(key, sessionStartTime, sessionEndTime);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> fetch(Bytes key) {
        return writer.fetch(key);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetch(Bytes key) {
        return writer.backwardFetch(key);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> fetch(Bytes keyFrom, Bytes keyTo) {
        return writer.fetch(keyFrom, keyTo);
    }

    @Override
    public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetch(Bytes keyFrom, Bytes keyTo) {
        return writer.backwardFetch(keyFrom, keyTo);
    }

    private KeyValueIterator<Windowed<Bytes>, byte[]> find(Bytes key, long earliestEnd, long latestStart, boolean reverse,
                                                         boolean committed) {
        byte[] k = key(key);
        return sessions(open().query(NativeSessionStore.QUERY_KEY, k, null, earliestEnd, latestStart, reverse,
            committed));
    }

    private KeyValueIterator<Windowed<Bytes>, byte[]> findRange(Bytes keyFrom, Bytes keyTo, long earliestEnd,
                                                              long latestStart, boolean reverse, boolean committed) {
        return sessions(open().query(NativeSessionStore.QUERY_KEY_RANGE, bound(keyFrom), bound(keyTo),
            earliestEnd, latestStart, reverse, committed));
    }

    /** Session keys -> aggregates, as Kafka's WrappedSessionStoreIterator. */
    private static KeyValueIterator<Windowed<Bytes>, byte[]> sessions(NativeIterator<Bytes> raw) {
        return MappedIterator.keys(raw, k -> sessionKey(k.get()));
    }

    static Windowed<Bytes> sessionKey(byte[] storeKey) {
        NativeSessionStore.Session s = NativeSessionStore.session(storeKey);
        return new Windowed<>(Bytes.wrap(s.key), new SessionWindow(s.start, s.end));
    }

    // ----- isolation ---------------------------------------------------------------------------

    /**
     * A read-only view at an isolation level: READ_COMMITTED reads the last completed commit,
     * READ_UNCOMMITTED the writer's view (see {@link KstateWindowStore#readOnly}).
     *
     * @param isolationLevel the level
     * @return the view; every read method is supported
     */
    @Override
    public ReadOnlySessionStore<Bytes, byte[]> readOnly(IsolationLevel isolationLevel) {
        return new ReadOnlyView(isolationLevel);
    }

    /** See {@link #readOnly(IsolationLevel)}; the store's own reads are its READ_UNCOMMITTED view. */
    private final class ReadOnlyView extends ReadView<ReadOnlySessionStore<Bytes, byte[]>>
        implements ReadOnlySessionStore<Bytes, byte[]> {
        ReadOnlyView(IsolationLevel level) {
            super(name(), level, KstateSessionStore.this::readOnly);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> findSessions(Bytes key, long earliestSessionEndTime,
                                                                      long latestSessionStartTime) {
            return find(key, earliestSessionEndTime, latestSessionStartTime, false, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFindSessions(Bytes key, long earliestSessionEndTime,
                                                                              long latestSessionStartTime) {
            return find(key, earliestSessionEndTime, latestSessionStartTime, true, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> findSessions(Bytes key, Instant earliestSessionEndTime,
                                                                      Instant latestSessionStartTime) {
            return findAt(key, earliestSessionEndTime, latestSessionStartTime, false);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFindSessions(Bytes key, Instant earliestSessionEndTime,
                                                                              Instant latestSessionStartTime) {
            return findAt(key, earliestSessionEndTime, latestSessionStartTime, true);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> findSessions(Bytes keyFrom, Bytes keyTo, long earliestSessionEndTime,
                                                                      long latestSessionStartTime) {
            return findRange(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime, false, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFindSessions(Bytes keyFrom, Bytes keyTo,
                                                                              long earliestSessionEndTime,
                                                                              long latestSessionStartTime) {
            return findRange(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime, true, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> findSessions(Bytes keyFrom, Bytes keyTo,
                                                                      Instant earliestSessionEndTime,
                                                                      Instant latestSessionStartTime) {
            return findAt(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime, false);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFindSessions(Bytes keyFrom, Bytes keyTo,
                                                                              Instant earliestSessionEndTime,
                                                                              Instant latestSessionStartTime) {
            return findAt(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime, true);
        }

        @Override
        public byte[] fetchSession(Bytes key, long sessionStartTime, long sessionEndTime) {
            return open().fetchSession(key(key), sessionStartTime, sessionEndTime, committed);
        }

        @Override
        public byte[] fetchSession(Bytes key, Instant sessionStartTime, Instant sessionEndTime) {
            return fetchSession(key, millis(sessionStartTime, "sessionStartTime"), millis(sessionEndTime, "sessionEndTime"));
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> fetch(Bytes key) {
            return find(key, 0, Long.MAX_VALUE, false, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetch(Bytes key) {
            return find(key, 0, Long.MAX_VALUE, true, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> fetch(Bytes keyFrom, Bytes keyTo) {
            return findRange(keyFrom, keyTo, 0, Long.MAX_VALUE, false, committed);
        }

        @Override
        public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetch(Bytes keyFrom, Bytes keyTo) {
            return findRange(keyFrom, keyTo, 0, Long.MAX_VALUE, true, committed);
        }

        /** The {@link Instant} reads of one key, forward or backward, after Kafka's checks of the instants. */
        private KeyValueIterator<Windowed<Bytes>, byte[]> findAt(Bytes key, Instant earliestSessionEndTime,
                                                               Instant latestSessionStartTime, boolean reverse) {
            return find(key, millis(earliestSessionEndTime, "earliestSessionEndTime"),
                millis(latestSessionStartTime, "latestSessionStartTime"), reverse, committed);
        }

        /** The {@link Instant} reads of a key range. */
        private KeyValueIterator<Windowed<Bytes>, byte[]> findAt(Bytes keyFrom, Bytes keyTo, Instant earliestSessionEndTime,
                                                               Instant latestSessionStartTime, boolean reverse) {
            return findRange(keyFrom, keyTo, millis(earliestSessionEndTime, "earliestSessionEndTime"),
                millis(latestSessionStartTime, "latestSessionStartTime"), reverse, committed);
        }
    }

    // ----- IQv2 ---------------------------------------------------------------------------------

    /**
     * Answers {@link WindowRangeQuery#withKey} ({@code fetch(key)}) at the query's isolation
     * level, as Kafka's session stores do; other window range queries fail with
     * {@code UNKNOWN_QUERY_TYPE} there too.
     */
    @Override
    @SuppressWarnings("unchecked")
    <T> QueryResult<T> answer(Query<T> q, boolean committed) {
        if (q instanceof WindowRangeQuery) {
            WindowRangeQuery<Bytes, byte[]> wq = (WindowRangeQuery<Bytes, byte[]>) q;
            if (wq.getKey().isPresent()) {
                return (QueryResult<T>) QueryResult.forResult(find(wq.getKey().get(), 0, Long.MAX_VALUE, false,
                    committed));
            }
            return QueryResult.forFailure(FailureReason.UNKNOWN_QUERY_TYPE, "This store (" + getClass()
                + ") doesn't know how to execute the given query (" + q + ") because SessionStores only support"
                + " WindowRangeQuery.withKey.");
        }
        return QueryResult.forUnknownQueryType(q, KstateSessionStore.this);
    }
}
