package dev.kstate.internal;

import java.nio.ByteBuffer;
import java.util.Arrays;
import org.apache.kafka.common.utils.Bytes;

/**
 * An open native window store (Kafka's {@code RocksDBTimestampedWindowStore} /
 * {@code RocksDBWindowStore} semantics: seqnums with {@code retainDuplicates}, observed stream
 * time, retention, Kafka's result order), transactional like {@link NativeStore}. Values are
 * raw: {@code [8-byte timestamp][value]} for a timestamped store, as Kafka passes them.
 * Thread-safe; closes exactly once; its iterators close with it.
 */
public final class NativeWindowStore extends NativeSegmentedStore {
    // query kinds: QUERY_KEY is Kafka's fetch(key, timeFrom, timeTo), QUERY_KEY_RANGE its
    // fetch(keyFrom, keyTo, timeFrom, timeTo) (NativeSegmentedStore)
    /** {@link #query} kind: {@code fetchAll(timeFrom, timeTo)}. */
    public static final int QUERY_TIME = 2;
    /** {@link #query} kind: {@code all()}. */
    public static final int QUERY_ALL = 3;

    private NativeWindowStore(String name, long handle) {
        super(name, handle, WINDOW, KstateNative::windowStreamTime);
    }

    /**
     * Opens (creating if absent) a window store in the given value format, optionally as Kafka's
     * time-ordered window store (what {@code EmitStrategy.onWindowClose()} uses): {@link #QUERY_TIME},
     * {@link #QUERY_ALL} and (without {@code keyIndex}) {@link #QUERY_KEY_RANGE} then return windows by start
     * time, then key, then seqnum, as Kafka's {@code RocksDBTimeOrderedWindowStore}. Format and order are fixed
     * when the store is created.
     *
     * @param name the store name, for messages
     * @param path directory for RocksDB; may be null for the memory engine
     * @param engine {@link KstateNative#ENGINE_ROCKSDB} or {@link KstateNative#ENGINE_MEMORY}
     * @param valueFormat {@link KstateNative#FORMAT_TIMESTAMPED}, {@link KstateNative#FORMAT_PLAIN} or
     *     {@link KstateNative#FORMAT_HEADERS} (Kafka's {@code ValueTimestampHeaders} layout); a store
     *     opens only in the format it was created with
     * @param maxUncommittedBytes bound before spilling, 0 = default
     * @param syncOnCommit fsync the WAL on commit
     * @param rocksdb RocksDB tuning (ignored by the memory engine)
     * @param retentionMs retention period (>= windowSizeMs)
     * @param windowSizeMs window size
     * @param retainDuplicates Kafka's retainDuplicates
     * @param segmentIntervalMs segment interval of a new store, 0 = Kafka's default
     * @param timeOrdered Kafka's time-ordered store
     * @param keyIndex with {@code timeOrdered}: Kafka's {@code hasIndex} (sliding windows)
     * @return the open store
     */
    public static NativeWindowStore open(String name, String path, int engine, int valueFormat,
                                         long maxUncommittedBytes, boolean syncOnCommit,
                                         NativeStore.RocksTuning rocksdb, long retentionMs, long windowSizeMs,
                                         boolean retainDuplicates, long segmentIntervalMs, boolean timeOrdered,
                                         boolean keyIndex) {
        long[] options = KstateNative.openOptions(engine, valueFormat, maxUncommittedBytes, syncOnCommit, rocksdb,
            retentionMs, windowSizeMs, retainDuplicates, segmentIntervalMs, timeOrdered, keyIndex, false);
        return new NativeWindowStore(name, KstateNative.openStore(KstateNative::windowOpen, path, options));
    }

    /**
     * Kafka's {@code put(key, value, windowStart)}: with duplicates a null value is ignored and
     * every other put takes the next seqnum; dropped when the window's segment has expired.
     *
     * @param key the record key
     * @param rawValue the raw value; null deletes
     * @param windowStart window start (ms)
     * @return false when the write was dropped because its segment has expired (Kafka's
     *     {@code dropped-records}), else true (a delete ignored with duplicates included)
     */
    public boolean put(byte[] key, byte[] rawValue, long windowStart) {
        return KstateNative.windowPut(handle(), key, rawValue, windowStart);
    }

    /**
     * Writes a packed batch ({@link Packing}) keyed by Kafka window store keys, as restored from the
     * changelog; all or nothing.
     *
     * @param packed the batch
     */
    @Override
    public void putAllStoreKeys(byte[] packed) {
        KstateNative.windowPutAll(handle(), packed);
    }

    /**
     * Kafka's {@code fetch(key, windowStart)}.
     *
     * @param key the record key
     * @param windowStart window start
     * @param committed committed data only (else the writer's view)
     * @return the raw value or null (also once expired)
     */
    public byte[] fetch(byte[] key, long windowStart, boolean committed) {
        return KstateNative.windowFetch(handle(), key, windowStart, committed);
    }

    /**
     * Opens an iterator over Kafka window store keys and raw values, in Kafka's order.
     *
     * @param kind {@link #QUERY_KEY}, {@link #QUERY_KEY_RANGE}, {@link #QUERY_TIME} or {@link #QUERY_ALL}
     * @param keyFrom the key ({@link #QUERY_KEY}) or lowest key (null = open)
     * @param keyTo highest key (null = open), {@link #QUERY_KEY_RANGE} only
     * @param timeFrom earliest window start (inclusive)
     * @param timeTo latest window start (inclusive)
     * @param reverse Kafka's backward variant
     * @param committed committed data only
     * @return the iterator; close it
     */
    public NativeIterator<Bytes> query(int kind, byte[] keyFrom, byte[] keyTo, long timeFrom, long timeTo,
                               boolean reverse, boolean committed) {
        return query(kind, keyFrom, keyTo, timeFrom, timeTo, reverse, committed, NativeIterator.STORE_KEY);
    }

    /**
     * As {@link #query(int, byte[], byte[], long, long, boolean, boolean)}, each Kafka window store
     * key read by {@code keys} straight from the batch (a windowed key or a window start, without
     * a copy of the store key).
     *
     * @param <K> the key type
     * @param kind the query kind
     * @param keyFrom the key or lowest key (null = open)
     * @param keyTo highest key (null = open)
     * @param timeFrom earliest window start (inclusive)
     * @param timeTo latest window start (inclusive)
     * @param reverse Kafka's backward variant
     * @param committed committed data only
     * @param keys reads one store key
     * @return the iterator; close it
     */
    public <K> NativeIterator<K> query(int kind, byte[] keyFrom, byte[] keyTo, long timeFrom, long timeTo,
                                       boolean reverse, boolean committed, NativeIterator.KeyReader<K> keys) {
        return registerAnswer(KstateNative.windowQuery(handle(), kind, keyFrom, keyTo, timeFrom, timeTo, reverse,
            committed, NativeIterator.FIRST_BATCH, NativeIterator.MAX_BATCH_BYTES), keys);
    }

    /**
     * Reads the window start of a Kafka window store key in a batch, passing over its record key
     * and seqnum (what a {@code fetch(key, from, to)} iterator returns).
     */
    public static final NativeIterator.KeyReader<Long> WINDOW_START = (batch, length) -> {
        batch.position(batch.position() + length - 12);
        long start = batch.getLong();
        batch.getInt();
        return start;
    };

    /** A decoded Kafka window store key. */
    public static final class Window {
        /** The record key. */
        public final byte[] key;
        /** Window start (ms). */
        public final long start;
        /** Kafka's seqnum (0 without duplicates). */
        public final int seqnum;

        Window(byte[] key, long start, int seqnum) {
            this.key = key;
            this.start = start;
            this.seqnum = seqnum;
        }
    }

    /**
     * @param storeKey a Kafka window store key ({@code key ‖ BE long start ‖ BE int seqnum})
     * @return its parts
     */
    public static Window window(byte[] storeKey) {
        int n = storeKey.length - 12;
        ByteBuffer b = ByteBuffer.wrap(storeKey);
        return new Window(Arrays.copyOf(storeKey, n), b.getLong(n), b.getInt(n + 8));
    }
}
