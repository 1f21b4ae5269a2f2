package dev.kstate.internal;

import dev.kstate.streams.KstateException;
import dev.kstate.streams.KstateInvalidStateStoreException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicPartition;

/**
 * What {@link NativeWindowStore} and {@link NativeSessionStore} share: one native handle
 * closed exactly once (a CAS on the handle, which doubles as the owning flag), iterators
 * closed with the store, and the transaction calls, which are the same natives for every
 * store kind on the Rust side.
 */
public abstract class NativeSegmentedStore implements AutoCloseable, NativePropertySource {
    private final String name;
    private final AtomicLong handle;
    private final Set<NativeSegmentIterator> iterators = ConcurrentHashMap.newKeySet();

    NativeSegmentedStore(String name, long handle) {
        this.name = name;
        this.handle = new AtomicLong(handle);
    }

    abstract void nativeClose(long h);

    abstract byte[] nativeNext(long iterator, int maxEntries, int maxBytes);

    abstract void nativeCloseIterator(long iterator);

    abstract void nativeCommit(long h, String[] topics, int[] partitions, long[] offsets, byte[] metadata);

    abstract long nativeCommittedOffset(long h, String topic, int partition);

    abstract byte[] nativeCommittedMetadata(long h);

    abstract void nativeRollback(long h);

    abstract void nativeFlush(long h, byte[] metadata);

    abstract long nativeUncommittedBytes(long h);

    abstract long nativeProperty(long h, String name);

    abstract long nativeStreamTime(long h, boolean committed);

    /** @return true until closed */
    public boolean isOpen() {
        return handle.get() != 0;
    }

    long handle() {
        long h = handle.get();
        if (h == 0) {
            throw new KstateInvalidStateStoreException("Store " + name + " is currently closed", KstateException.STORE_CLOSED);
        }
        return h;
    }

    NativeSegmentIterator register(long it) {
        NativeSegmentIterator iterator = new NativeSegmentIterator(this, it);
        iterators.add(iterator);
        if (!isOpen()) {
            // lost a race with close(): the iterator must not outlive the store
            iterator.closeWithStore();
        }
        return iterator;
    }

    void forget(NativeSegmentIterator iterator) {
        iterators.remove(iterator);
    }

    /** @return number of iterators not yet closed */
    public int openIterators() {
        return iterators.size();
    }

    /**
     * Commits the transaction with offsets, metadata, the observed stream time and the
     * deletion of the segments it expired, atomically. Kafka's semantics: an empty map
     * removes all offsets, a null value removes that partition's.
     *
     * @param offsets changelog offsets
     * @param metadata opaque blob stored with the commit, or null to keep the previous one
     */
    public void commit(Map<TopicPartition, Long> offsets, byte[] metadata) {
        int n = offsets.size();
        String[] topics = new String[n];
        int[] partitions = new int[n];
        long[] values = new long[n];
        int i = 0;
        for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
            topics[i] = e.getKey().topic();
            partitions[i] = e.getKey().partition();
            values[i] = e.getValue() == null ? KstateNative.NO_OFFSET : e.getValue();
            i++;
        }
        nativeCommit(handle(), topics, partitions, values, metadata);
    }

    /**
     * Commits the uncommitted writes, keeping the committed offsets (Kafka 4.0-4.2 flush).
     *
     * @param metadata blob stored with the commit, or null to keep the previous one
     */
    public void flush(byte[] metadata) {
        nativeFlush(handle(), metadata);
    }

    /**
     * @param tp changelog partition
     * @return the committed offset, or null
     */
    public Long committedOffset(TopicPartition tp) {
        long offset = nativeCommittedOffset(handle(), tp.topic(), tp.partition());
        return offset == KstateNative.NO_OFFSET ? null : offset;
    }

    /** @return the metadata of the last commit carrying one, or null */
    public byte[] committedMetadata() {
        return nativeCommittedMetadata(handle());
    }

    /** Discards the uncommitted writes; the stream time returns to the committed one. */
    public void rollback() {
        nativeRollback(handle());
    }

    /** @return approximate bytes of uncommitted writes */
    public long approximateNumUncommittedBytes() {
        return nativeUncommittedBytes(handle());
    }

    /**
     * @param name a RocksDB integer property, ticker or kstate counter
     * @return its value, or -1 when the store has none
     */
    public long property(String name) {
        return nativeProperty(handle(), name);
    }

    /**
     * @param committed the committed stream time (else the writer's)
     * @return Kafka's observed stream time: the largest window start or session end written, -1 before any
     */
    public long streamTime(boolean committed) {
        return nativeStreamTime(handle(), committed);
    }

    /**
     * Closes the open iterators and keeps the store open (before it is parked).
     *
     * @return the number of iterators closed
     */
    public int closeIterators() {
        List<NativeSegmentIterator> open = new ArrayList<>(iterators);
        for (NativeSegmentIterator it : open) {
            it.closeWithStore();
        }
        return open.size();
    }

    /** Closes the open iterators, then the store (uncommitted writes are discarded). Idempotent. */
    @Override
    public void close() {
        long h = handle.getAndSet(0);
        if (h == 0) {
            return;
        }
        closeIterators();
        nativeClose(h);
    }
}
