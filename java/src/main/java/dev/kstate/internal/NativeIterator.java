package dev.kstate.internal;

import dev.kstate.streams.KstateException;
import dev.kstate.streams.KstateInvalidStateStoreException;
import java.nio.ByteBuffer;
import java.util.NoSuchElementException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.internals.ManagedKeyValueIterator;

/**
 * A native iterator of any store kind, fetched in packed batches (one JNI crossing per batch,
 * batches growing from 16 to 1024 entries, at most 1 MiB). A window or session query returns its
 * first batch with its answer, and when that batch holds the whole answer nothing native is kept:
 * a {@code findSessions} or {@code fetch(key, from, to)} of a few entries costs one crossing.
 * A key-value iterator returns the
 * store's keys; a window or session iterator returns Kafka's store keys ({@code key ‖ windowStart
 * ‖ seqnum} for windows, {@code key ‖ end ‖ start} for sessions) with their raw values, in Kafka's
 * segmented-store order: exactly what Kafka's {@code WindowStoreIteratorWrapper} and
 * {@code WrappedSessionStoreIterator} take (decode them with {@link NativeWindowStore#window} /
 * {@link NativeSessionStore#session}).
 *
 * <p>Keeps its store reachable; closed exactly once, explicitly or when the store closes.
 * Closed explicitly, every call throws {@code InvalidStateStoreException}. Closed with a
 * key-value store, too; closed with a window or session store, it is exhausted:
 * {@code hasNext()} is false (then {@code next()} and {@code peekNextKey()} throw
 * {@code NoSuchElementException}), as Kafka's segmented window and session store iterators
 * answer once their store closed.
 *
 * <p>Implements Kafka's {@link ManagedKeyValueIterator} (an internal interface present in Kafka
 * Streams 4.0 to 4.4) because Kafka's own wrappers cast IQv2 range results to it: for instance
 * {@code KeyValueToTimestampedKeyValueByteStoreAdapter}, which Kafka puts around a plain store
 * behind a timestamped store builder.
 *
 * @param <K> the key type: the store key ({@link #STORE_KEY}) or a kind's decoded key
 */
public final class NativeIterator<K> implements ManagedKeyValueIterator<K, byte[]> {
    /**
     * Reads an entry's key out of a batch, so that a kind's decoded key (a windowed key, a window
     * start) is built from the batch itself, without an intermediate copy of the store key.
     *
     * @param <K> the key type
     */
    @FunctionalInterface
    public interface KeyReader<K> {
        /**
         * Reads one key.
         *
         * @param batch the batch, positioned at the key's first byte; must be left just past it
         * @param length the key's length in bytes
         * @return the key
         */
        K read(ByteBuffer batch, int length);
    }

    /** The store key itself, as {@link Bytes}. */
    public static final KeyReader<Bytes> STORE_KEY = (batch, length) -> {
        byte[] key = new byte[length];
        batch.get(key);
        return Bytes.wrap(key);
    };

    /** Entries of the first batch (also a query's first batch, read with its answer). */
    static final int FIRST_BATCH = 16;
    private static final int MAX_BATCH = 1024;
    /** Bytes of keys and values after which a batch stops. */
    static final int MAX_BATCH_BYTES = 1 << 20;

    private final AbstractNativeStore store;
    private final KeyReader<K> keys;
    /** The native iterator; 0 once released, or from the start when the query's first batch held every entry. */
    private final AtomicLong handle;
    private final AtomicBoolean closed = new AtomicBoolean();
    private ByteBuffer batch;
    private int batchSize = FIRST_BATCH;
    private boolean exhausted;
    private KeyValue<K, byte[]> next;
    private volatile Runnable closeCallback;
    /** Set before the handle is released when a store that exhausts its iterators closes this one. */
    private volatile boolean exhaustedWithStore;

    NativeIterator(AbstractNativeStore store, long handle, KeyReader<K> keys) {
        this.store = store;
        this.keys = keys;
        this.handle = new AtomicLong(handle);
    }

    /**
     * Wraps a query's answer: the native iterator's handle (8 bytes, big-endian; 0 when the
     * first batch held every entry, and nothing native is left to read or release), then the
     * first batch of {@link #FIRST_BATCH} entries at most.
     */
    NativeIterator(AbstractNativeStore store, byte[] answer, KeyReader<K> keys) {
        this.store = store;
        this.keys = keys;
        ByteBuffer b = ByteBuffer.wrap(answer);
        this.handle = new AtomicLong(b.getLong());
        this.batch = b;
        this.batchSize = grown(FIRST_BATCH);
    }

    /** @return the size of the batch after one of {@code size} entries */
    private static int grown(int size) {
        return Math.min(size * 4, MAX_BATCH);
    }

    private boolean fill() {
        if (next != null) {
            return true;
        }
        if (closed.get()) {
            if (exhaustedWithStore) {
                return false;
            }
            throw new KstateInvalidStateStoreException("kstate iterator is closed", KstateException.ITERATOR_CLOSED);
        }
        if (exhausted) {
            return false;
        }
        if (batch == null || !batch.hasRemaining()) {
            long h = handle.get();
            if (h == 0) {
                // the query's first batch was the whole answer
                exhausted = true;
                batch = null;
                return false;
            }
            byte[] packed = store.nativeNext(h, batchSize, MAX_BATCH_BYTES);
            batchSize = grown(batchSize);
            if (packed == null) {
                exhausted = true;
                batch = null;
                return false;
            }
            batch = ByteBuffer.wrap(packed);
        }
        K key = keys.read(batch, batch.getInt());
        byte[] value = new byte[batch.getInt()];
        batch.get(value);
        next = KeyValue.pair(key, value);
        return true;
    }

    @Override
    public boolean hasNext() {
        return fill();
    }

    @Override
    public KeyValue<K, byte[]> next() {
        if (!fill()) {
            throw new NoSuchElementException();
        }
        KeyValue<K, byte[]> result = next;
        next = null;
        return result;
    }

    @Override
    public K peekNextKey() {
        if (!fill()) {
            throw new NoSuchElementException();
        }
        return next.key;
    }

    /**
     * Registers a callback run once when this iterator closes (Kafka's
     * {@link ManagedKeyValueIterator} contract; Kafka's stores use it to forget open iterators).
     *
     * @param closeCallback the callback
     */
    @Override
    public void onClose(Runnable closeCallback) {
        this.closeCallback = closeCallback;
    }

    /**
     * Closes the iterator as its store closes.
     *
     * @param exhausted it then reads as exhausted rather than closed (see the class comment)
     */
    void closeWithStore(boolean exhausted) {
        exhaustedWithStore = exhausted;
        close();
    }

    /** Closes the iterator, then runs the {@link #onClose} callback if any. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        store.forget(this);
        batch = null;
        next = null;
        long h = handle.getAndSet(0);
        try {
            if (h != 0) {
                store.nativeCloseIterator(h);
            }
        } catch (KstateInvalidStateStoreException alreadyGone) {
            // cannot happen for a handle we owned; nothing to release either way
        } finally {
            Runnable callback = closeCallback;
            if (callback != null) {
                callback.run();
            }
        }
    }
}
