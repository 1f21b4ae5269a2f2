package dev.kstate.internal;

import java.nio.ByteBuffer;
import java.util.Arrays;
import org.apache.kafka.common.utils.Bytes;

/**
 * An open native session store (Kafka's {@code RocksDBSessionStore} semantics: sessions keyed
 * {@code key ‖ end ‖ start}, segmented by end, observed stream time, retention, Kafka's result
 * order), transactional like {@link NativeStore}. Aggregates are stored as given. Thread-safe;
 * closes exactly once; its iterators close with it.
 */
public final class NativeSessionStore extends NativeSegmentedStore {
    // query kinds: QUERY_KEY is Kafka's findSessions(key, earliestSessionEndTime,
    // latestSessionStartTime), QUERY_KEY_RANGE its findSessions(keyFrom, keyTo, ...)
    // (NativeSegmentedStore)
    /** {@link #query} kind: every live session. */
    public static final int QUERY_ALL = 2;
    /**
     * {@link #query} kind of a time-ordered store: Kafka's {@code findSessions(earliestSessionEndTime,
     * latestSessionEndTime)}, the two times passed as {@code earliestSessionEndTime} and
     * {@code latestSessionStartTime}; sessions by end, then start, then key.
     */
    public static final int QUERY_BY_END = 3;

    private NativeSessionStore(String name, long handle) {
        super(name, handle, SESSION, KstateNative::sessionStreamTime);
    }

    /**
     * Opens (creating if absent) a session store whose aggregates are plain or, with
     * {@code headers}, in Kafka 4.3+'s {@code AggregationWithHeaders} layout (KIP-1271:
     * {@code [varint headersSize][headers][aggregation]}), optionally as Kafka's time-ordered session
     * store (what {@code EmitStrategy.onWindowClose()} uses), which also answers {@link #QUERY_BY_END}.
     * Format and order are fixed when the store is created.
     *
     * @param name the store name, for messages
     * @param path directory for RocksDB; may be null for the memory engine
     * @param engine {@link KstateNative#ENGINE_ROCKSDB} or {@link KstateNative#ENGINE_MEMORY}
     * @param headers aggregates in the headers layout
     * @param maxUncommittedBytes bound before spilling, 0 = default
     * @param syncOnCommit fsync the WAL on commit
     * @param rocksdb RocksDB tuning (ignored by the memory engine)
     * @param retentionMs retention period
     * @param segmentIntervalMs segment interval of a new store, 0 = Kafka's default
     * @param timeOrdered Kafka's time-ordered store
     * @param kafkaHeaders with {@code timeOrdered}: Kafka's own store of the application is the DSL's
     *     headers store format, which the store records for {@code kstate export --to kafka}
     * @return the open store
     */
    public static NativeSessionStore open(String name, String path, int engine, boolean headers,
                                          long maxUncommittedBytes, boolean syncOnCommit,
                                          NativeStore.RocksTuning rocksdb, long retentionMs, long segmentIntervalMs,
                                          boolean timeOrdered, boolean kafkaHeaders) {
        int format = headers ? KstateNative.FORMAT_HEADERS : KstateNative.FORMAT_PLAIN;
        long h = KstateNative.openStore(KstateNative::sessionOpen, path, KstateNative.openOptions(engine, format,
            maxUncommittedBytes, syncOnCommit, rocksdb, retentionMs, 0, false, segmentIntervalMs, timeOrdered, false,
            kafkaHeaders));
        return new NativeSessionStore(name, h);
    }

    /**
     * Kafka's {@code put(Windowed(key, SessionWindow(start, end)), aggregate)}.
     *
     * @param key the record key
     * @param start session start
     * @param end session end
     * @param aggregate the aggregate; null removes the session
     * @return false when the write was dropped because its segment has expired (Kafka's
     *     {@code dropped-records}), else true
     */
    public boolean put(byte[] key, long start, long end, byte[] aggregate) {
        return KstateNative.sessionPut(handle(), key, start, end, aggregate);
    }

    /**
     * Kafka's {@code remove(Windowed(key, SessionWindow(start, end)))}.
     *
     * @param key the record key
     * @param start session start
     * @param end session end
     */
    public void remove(byte[] key, long start, long end) {
        KstateNative.sessionPut(handle(), key, start, end, null);
    }

    /**
     * Writes a packed batch ({@link Packing}) keyed by Kafka session store keys (changelog restore).
     *
     * @param packed the batch
     */
    @Override
    public void putAllStoreKeys(byte[] packed) {
        KstateNative.sessionPutAll(handle(), packed);
    }

    /**
     * Kafka's {@code fetchSession(key, start, end)}.
     *
     * @param key the record key
     * @param start session start
     * @param end session end
     * @param committed committed data only
     * @return the aggregate or null (also once expired)
     */
    public byte[] fetchSession(byte[] key, long start, long end, boolean committed) {
        return KstateNative.sessionFetch(handle(), key, start, end, committed);
    }

    /**
     * Opens an iterator over Kafka session store keys and aggregates, in Kafka's order.
     *
     * @param kind {@link #QUERY_KEY}, {@link #QUERY_KEY_RANGE} or {@link #QUERY_ALL}
     * @param keyFrom the key ({@link #QUERY_KEY}) or lowest key (null = open)
     * @param keyTo highest key (null = open)
     * @param earliestSessionEndTime sessions ending at or after
     * @param latestSessionStartTime sessions starting at or before
     * @param reverse Kafka's backward variant
     * @param committed committed data only
     * @return the iterator; close it
     */
    public NativeIterator<Bytes> query(int kind, byte[] keyFrom, byte[] keyTo, long earliestSessionEndTime,
                               long latestSessionStartTime, boolean reverse, boolean committed) {
        return registerAnswer(KstateNative.sessionQuery(handle(), kind, keyFrom, keyTo, earliestSessionEndTime,
            latestSessionStartTime, reverse, committed, NativeIterator.FIRST_BATCH, NativeIterator.MAX_BATCH_BYTES),
            NativeIterator.STORE_KEY);
    }

    /** A decoded Kafka session store key. */
    public static final class Session {
        /** The record key. */
        public final byte[] key;
        /** Session start (ms). */
        public final long start;
        /** Session end (ms). */
        public final long end;

        Session(byte[] key, long start, long end) {
            this.key = key;
            this.start = start;
            this.end = end;
        }
    }

    /**
     * @param storeKey a Kafka session store key ({@code key ‖ BE long end ‖ BE long start})
     * @return its parts
     */
    public static Session session(byte[] storeKey) {
        int n = storeKey.length - 16;
        ByteBuffer b = ByteBuffer.wrap(storeKey);
        return new Session(Arrays.copyOf(storeKey, n), b.getLong(n + 8), b.getLong(n));
    }
}
