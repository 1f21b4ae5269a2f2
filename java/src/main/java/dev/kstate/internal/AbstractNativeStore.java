package dev.kstate.internal;

import dev.kstate.streams.KstateException;
import dev.kstate.streams.KstateInvalidStateStoreException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import java.util.function.LongFunction;
import java.util.function.LongUnaryOperator;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;

/**
 * What every open native store shares, whatever its kind ({@link NativeStore},
 * {@link NativeWindowStore}, {@link NativeSessionStore}): one native handle closed exactly once
 * (a CAS on the handle, which doubles as the owning flag), the {@link NativeIterator}s closed
 * with the store, and the transaction calls (commit with offsets and metadata, flush, committed
 * offsets and metadata, rollback, uncommitted bytes, properties). A kind differs only in which
 * natives of {@link KstateNative} it calls: its {@link Natives}. Thread-safe; a call racing with
 * {@link #close()} fails cleanly with {@code KstateInvalidStateStoreException} (the native
 * handle table rejects dead handles).
 */
public abstract class AbstractNativeStore implements AutoCloseable, NativePropertySource {
    private final String name;
    private final AtomicLong handle;
    private final Natives natives;
    private final Set<NativeIterator<?>> iterators = ConcurrentHashMap.newKeySet();

    AbstractNativeStore(String name, long handle, Natives natives) {
        this.name = name;
        this.handle = new AtomicLong(handle);
        this.natives = natives;
    }

    /**
     * The natives of one store kind: the Rust side keeps a handle table per kind, so each kind
     * has its own entry points for the same operations.
     */
    static final class Natives {
        final LongConsumer close;
        final Next next;
        final LongConsumer closeIterator;
        final Commit commit;
        final Flush flush;
        final CommittedOffset committedOffset;
        final LongFunction<byte[]> committedMetadata;
        final LongConsumer rollback;
        final LongUnaryOperator uncommittedBytes;
        final Property property;
        final Checkpoint checkpoint;
        /**
         * Whether iterators closed with the store read as exhausted afterwards (Kafka's segmented
         * window and session store iterators) rather than throw (its key-value iterators).
         */
        final boolean exhaustedWhenStoreCloses;

        Natives(LongConsumer close, Next next, LongConsumer closeIterator, Commit commit, Flush flush,
                CommittedOffset committedOffset, LongFunction<byte[]> committedMetadata, LongConsumer rollback,
                LongUnaryOperator uncommittedBytes, Property property, Checkpoint checkpoint,
                boolean exhaustedWhenStoreCloses) {
            this.close = close;
            this.next = next;
            this.closeIterator = closeIterator;
            this.commit = commit;
            this.flush = flush;
            this.committedOffset = committedOffset;
            this.committedMetadata = committedMetadata;
            this.rollback = rollback;
            this.uncommittedBytes = uncommittedBytes;
            this.property = property;
            this.checkpoint = checkpoint;
            this.exhaustedWhenStoreCloses = exhaustedWhenStoreCloses;
        }

        /** {@code next(iterator, maxEntries, maxBytes)}: the next packed batch, or null at the end. */
        interface Next {
            byte[] next(long iterator, int maxEntries, int maxBytes);
        }

        /** {@code commit(store, topics, partitions, offsets, metadata)}. */
        interface Commit {
            void commit(long store, String[] topics, int[] partitions, long[] offsets, byte[] metadata);
        }

        /** {@code flush(store, metadata)}. */
        interface Flush {
            void flush(long store, byte[] metadata);
        }

        /** {@code committedOffset(store, topic, partition)}. */
        interface CommittedOffset {
            long committedOffset(long store, String topic, int partition);
        }

        /** {@code property(store, name)}. */
        interface Property {
            long property(long store, String name);
        }

        /** {@code checkpoint(store, dir)}: what the checkpoint holds, packed. */
        interface Checkpoint {
            byte[] checkpoint(long store, String dir);
        }
    }

    /**
     * Writes a checkpoint of the store's last commit to the new directory {@code dir}: a
     * consistent copy (table files hard-linked) that opens as a store of the same kind and
     * options with that commit's data, offsets and metadata. Writers and commits on other
     * threads go on meanwhile. RocksDB stores only.
     *
     * @param dir the directory to create; it must not exist (its parent is created if missing)
     * @return what the checkpoint holds
     * @throws dev.kstate.streams.KstateProcessorStateException if {@code dir} exists
     *     ({@code INVALID_ARGUMENT}), for a memory store ({@code UNSUPPORTED}), or when the copy
     *     fails (nothing is left at {@code dir})
     * @throws KstateInvalidStateStoreException if the store is closed
     */
    public dev.kstate.streams.KstateCheckpoint checkpoint(java.nio.file.Path dir) {
        java.util.Objects.requireNonNull(dir, "dir");
        return dev.kstate.streams.KstateCheckpoint.decode(dir, natives.checkpoint.checkpoint(handle(), dir.toString()));
    }

    /** @return true until closed */
    @Override
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

    /** Wraps a native iterator handle just opened on this store; the iterator closes with the store. */
    NativeIterator<Bytes> register(long it) {
        return register(it, NativeIterator.STORE_KEY);
    }

    /**
     * As {@link #register(long)}, its keys read by {@code keys}.
     *
     * @param <K> the key type
     */
    <K> NativeIterator<K> register(long it, NativeIterator.KeyReader<K> keys) {
        return register(new NativeIterator<>(this, it, keys));
    }

    /**
     * Wraps a query's answer (a native iterator's handle and first batch, see
     * {@link NativeIterator#FIRST_BATCH}); the iterator closes with the store.
     *
     * @param <K> the key type
     */
    <K> NativeIterator<K> registerAnswer(byte[] answer, NativeIterator.KeyReader<K> keys) {
        return register(new NativeIterator<>(this, answer, keys));
    }

    private <K> NativeIterator<K> register(NativeIterator<K> iterator) {
        iterators.add(iterator);
        if (!isOpen()) {
            // lost a race with close(): the iterator must not outlive the store
            iterator.closeWithStore(natives.exhaustedWhenStoreCloses);
        }
        return iterator;
    }

    void forget(NativeIterator<?> iterator) {
        iterators.remove(iterator);
    }

    byte[] nativeNext(long iterator, int maxEntries, int maxBytes) {
        return natives.next.next(iterator, maxEntries, maxBytes);
    }

    void nativeCloseIterator(long iterator) {
        natives.closeIterator.accept(iterator);
    }

    /** @return number of iterators not yet closed */
    public int openIterators() {
        return iterators.size();
    }

    /**
     * Commits the transaction with offsets and metadata atomically (for window and session
     * stores also the observed stream time and the deletion of the segments it expired).
     * Kafka's semantics: an empty map removes all offsets, a null value removes that
     * partition's.
     *
     * @param offsets changelog offsets
     * @param metadata opaque blob stored with the commit, or null to keep the previous one
     */
    public void commit(Map<TopicPartition, Long> offsets, byte[] metadata) {
        Offsets o = new Offsets(offsets);
        natives.commit.commit(handle(), o.topics, o.partitions, o.values, metadata);
    }

    /** A map of offsets as the three arrays the natives take. */
    static final class Offsets {
        final String[] topics;
        final int[] partitions;
        final long[] values;

        Offsets(Map<TopicPartition, Long> offsets) {
            int n = offsets.size();
            topics = new String[n];
            partitions = new int[n];
            values = new long[n];
            int i = 0;
            for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
                topics[i] = e.getKey().topic();
                partitions[i] = e.getKey().partition();
                values[i] = e.getValue() == null ? KstateNative.NO_OFFSET : e.getValue();
                i++;
            }
        }
    }

    /**
     * Commits the uncommitted writes, keeping the committed offsets (Kafka 4.0-4.2 flush).
     *
     * @param metadata blob stored with the commit, or null to keep the previous one
     */
    public void flush(byte[] metadata) {
        natives.flush.flush(handle(), metadata);
    }

    /**
     * @param tp changelog partition
     * @return the committed offset, or null
     */
    public Long committedOffset(TopicPartition tp) {
        long offset = natives.committedOffset.committedOffset(handle(), tp.topic(), tp.partition());
        return offset == KstateNative.NO_OFFSET ? null : offset;
    }

    /** @return the metadata of the last commit carrying one, or null */
    public byte[] committedMetadata() {
        return natives.committedMetadata.apply(handle());
    }

    /** Discards the uncommitted writes (window and session stores: the stream time returns to the committed one). */
    public void rollback() {
        natives.rollback.accept(handle());
    }

    /** @return approximate bytes of uncommitted writes */
    public long approximateNumUncommittedBytes() {
        return natives.uncommittedBytes.applyAsLong(handle());
    }

    /**
     * @param name a RocksDB integer property ({@code rocksdb.cur-size-all-mem-tables}), a
     *     statistics ticker ({@code rocksdb.bytes.written}) or a kstate counter
     *     ({@code kstate.commits-in-doubt})
     * @return its value, or -1 when the store has none (memory engine, statistics off)
     */
    @Override
    public long property(String name) {
        return natives.property.property(handle(), name);
    }

    /**
     * Closes the open iterators and keeps the store open (before it is parked).
     *
     * @return the number of iterators closed
     */
    public int closeIterators() {
        List<NativeIterator<?>> open = new ArrayList<>(iterators);
        for (NativeIterator<?> it : open) {
            it.closeWithStore(natives.exhaustedWhenStoreCloses);
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
        natives.close.accept(h);
    }
}
