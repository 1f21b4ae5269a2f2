package dev.kstate.internal;

/**
 * The JNI natives of {@code src/jni} (all static, addressed by {@code long} handles).
 * Failures throw {@code KstateInvalidStateStoreException} (closed store or iterator, stale
 * handle) or {@code KstateProcessorStateException} (everything else), both carrying the
 * native error code. Use {@link NativeStore} rather than calling these directly.
 */
public final class KstateNative {
    static {
        // Never let the static initialiser fail: a failed one turns every later use of the
        // class into "NoClassDefFoundError: Could not initialize class". The loader remembers
        // the failure and ensureLoaded() (called before every open) rethrows it clearly.
        try {
            NativeLoader.load();
        } catch (UnsatisfiedLinkError remembered) {
            // rethrown by ensureLoaded()
        }
    }

    /** Returned by {@link #committedOffset} when no offset is committed. */
    public static final long NO_OFFSET = Long.MIN_VALUE;
    /** Value format number of timestamped values (C's {@code KSTATE_FORMAT_TIMESTAMPED}). */
    public static final int FORMAT_TIMESTAMPED = 0;
    /** Value format number of plain values (C's {@code KSTATE_FORMAT_PLAIN}). */
    public static final int FORMAT_PLAIN = 1;
    /** Value format number of KIP-1271 headers-format values (C's {@code KSTATE_FORMAT_HEADERS}). */
    public static final int FORMAT_HEADERS = 2;
    /** Engine number of RocksDB. */
    public static final int ENGINE_ROCKSDB = 0;
    /** Engine number of the in-memory engine. */
    public static final int ENGINE_MEMORY = 1;

    private KstateNative() {
    }

    /**
     * Makes sure the library is loaded.
     *
     * @throws UnsatisfiedLinkError with the loader's message, on every call, if it cannot be
     */
    public static void ensureLoaded() {
        NativeLoader.load();
    }

    /**
     * Checks, reading only, whether opening a store at {@code path} adopts a Kafka Streams
     * store there ({@code kstate::store::PlannedStore::check}).
     *
     * @param path the store directory
     * @param kind 0 key-value, 1 window, 2 session, 3 time-ordered window, 4 time-ordered session, 5 versioned
     * @param valueFormat {@link #FORMAT_TIMESTAMPED}, {@link #FORMAT_PLAIN} or {@link #FORMAT_HEADERS}
     * @param retentionMs retention of a window or session store, history retention of a versioned store
     * @param segmentIntervalMs segment interval of a window, session or versioned store, 0 = Kafka's default
     * @param adoptLeftOpen as the store's open has it ({@link NativeStore.RocksTuning#withAdoptLeftOpen})
     * @return true when the open adopts a Kafka Streams store, false when there is none to adopt
     */
    public static native boolean adoptionCheck(String path, int kind, int valueFormat, long retentionMs,
                                               long segmentIntervalMs, boolean adoptLeftOpen);

    /**
     * A native that opens a store of one kind: {@link #open}, {@link #windowOpen}, {@link #sessionOpen} or
     * {@link #versionedOpen}.
     */
    interface Open {
        long open(String path, long[] options);
    }

    /**
     * Opens a store: loads the library, closes a store parked at {@code path} (it holds the
     * directory's lock), then calls {@code open}.
     *
     * @param open the kind's open native
     * @param path directory for RocksDB; may be null for the memory engine
     * @param options packed by {@link #openOptions}
     * @return the new handle
     */
    static long openStore(Open open, String path, long[] options) {
        ensureLoaded();
        ParkedStores.release(path);
        return open.open(path, options);
    }

    /**
     * The options of the four open natives packed into one {@code long[]}, in the order the
     * native side reads them ({@code OpenArgs} in {@code src/jni/natives.rs}, same list): engine,
     * valueFormat, maxUncommittedBytes, syncOnCommit, blockCacheBytes, writeBufferBytes,
     * maxWriteBuffers, bloomFilter, statistics, boundedMemoryBytes, boundedMemtableBytes,
     * adoptLeftOpen (the last eight from {@code rocksdb}), then, read by window and session stores
     * only, retentionMs, windowSizeMs, retainDuplicates, segmentIntervalMs, timeOrdered, keyIndex,
     * kafkaHeaders (a versioned store reads retentionMs as its history retention, and segmentIntervalMs).
     * Booleans are 0 or 1; 0 for a size, count or segment interval keeps the default.
     *
     * @return the packed options
     */
    static long[] openOptions(int engine, int valueFormat, long maxUncommittedBytes, boolean syncOnCommit,
                              NativeStore.RocksTuning rocksdb, long retentionMs, long windowSizeMs,
                              boolean retainDuplicates, long segmentIntervalMs, boolean timeOrdered, boolean keyIndex,
                              boolean kafkaHeaders) {
        return new long[] {engine, valueFormat, maxUncommittedBytes, flag(syncOnCommit), rocksdb.blockCacheBytes,
            rocksdb.writeBufferBytes, rocksdb.maxWriteBuffers, flag(rocksdb.bloomFilter), flag(rocksdb.statistics),
            rocksdb.boundedMemoryBytes, rocksdb.boundedMemtableBytes, flag(rocksdb.adoptLeftOpen), retentionMs,
            windowSizeMs, flag(retainDuplicates), segmentIntervalMs, flag(timeOrdered), flag(keyIndex),
            flag(kafkaHeaders)};
    }

    private static long flag(boolean b) {
        return b ? 1 : 0;
    }

    // ----- natives, one row per operation: the key-value store's, then the window, session and
    // versioned stores' (see NativeStore, NativeWindowStore, NativeSessionStore,
    // NativeVersionedStore; src/jni declares each operation once for every kind)

    static native long open(String path, long[] options);

    static native long windowOpen(String path, long[] options);

    static native long sessionOpen(String path, long[] options);

    static native long versionedOpen(String path, long[] options);

    static native void close(long store);

    static native void windowClose(long store);

    static native void sessionClose(long store);

    static native void versionedClose(long store);

    static native byte[] get(long store, byte[] key, boolean committed);

    static native byte[] windowFetch(long store, byte[] key, long windowStart, boolean committed);

    static native byte[] sessionFetch(long store, byte[] key, long start, long end, boolean committed);

    /** @return the version ({@code [long timestamp][long validTo][value]}) or null */
    static native byte[] versionedGet(long store, byte[] key, boolean latest, long asOf, boolean committed);

    static native void put(long store, byte[] key, byte[] rawValue);

    static native boolean windowPut(long store, byte[] key, byte[] rawValue, long windowStart);

    static native boolean sessionPut(long store, byte[] key, long start, long end, byte[] aggregate);

    static native long versionedPut(long store, byte[] key, byte[] value, long timestamp);

    static native byte[] putIfAbsent(long store, byte[] key, byte[] rawValue);

    static native byte[] delete(long store, byte[] key);

    /** @return the version as {@link #versionedGet}, null for none, an empty array for a dropped delete */
    static native byte[] versionedDelete(long store, byte[] key, long timestamp);

    static native void putAll(long store, byte[] packed);

    static native void windowPutAll(long store, byte[] packed);

    static native void sessionPutAll(long store, byte[] packed);

    static native long scan(long store, byte[] from, byte[] to, boolean prefix, boolean reverse, boolean committed);

    static native byte[] windowQuery(long store, int kind, byte[] keyFrom, byte[] keyTo, long from, long to,
                                     boolean reverse, boolean committed, int maxEntries, int maxBytes);

    static native byte[] sessionQuery(long store, int kind, byte[] keyFrom, byte[] keyTo, long earliestEnd,
                                      long latestStart, boolean reverse, boolean committed, int maxEntries, int maxBytes);

    static native long versionedQuery(long store, byte[] key, long fromTime, long toTime, boolean ascending,
                                      boolean committed);

    static native byte[] next(long iterator, int maxEntries, int maxBytes);

    static native byte[] windowNext(long iterator, int maxEntries, int maxBytes);

    static native byte[] sessionNext(long iterator, int maxEntries, int maxBytes);

    static native byte[] versionedNext(long iterator, int maxEntries, int maxBytes);

    static native void closeIterator(long iterator);

    static native void windowCloseIterator(long iterator);

    static native void sessionCloseIterator(long iterator);

    static native void versionedCloseIterator(long iterator);

    static native long windowStreamTime(long store, boolean committed);

    static native long sessionStreamTime(long store, boolean committed);

    static native long versionedStreamTime(long store, boolean committed);

    static native void commit(long store, String[] topics, int[] partitions, long[] offsets, byte[] metadata);

    static native void windowCommit(long store, String[] topics, int[] partitions, long[] offsets, byte[] metadata);

    static native void sessionCommit(long store, String[] topics, int[] partitions, long[] offsets, byte[] metadata);

    static native void versionedCommit(long store, String[] topics, int[] partitions, long[] offsets,
                                       byte[] metadata);

    static native void restoreBatch(long store, byte[] packed, String[] topics, int[] partitions, long[] offsets,
                                    byte[] metadata);

    static native void versionedRestoreBatch(long store, byte[] packed, long[] timestamps, String[] topics,
                                             int[] partitions, long[] offsets, byte[] metadata);

    static native void flush(long store, byte[] metadata);

    static native void windowFlush(long store, byte[] metadata);

    static native void sessionFlush(long store, byte[] metadata);

    static native void versionedFlush(long store, byte[] metadata);

    /** Writes a checkpoint of the last commit to the new directory {@code dir}; see {@code KstateCheckpoint}. */
    static native byte[] checkpoint(long store, String dir);

    static native byte[] windowCheckpoint(long store, String dir);

    static native byte[] sessionCheckpoint(long store, String dir);

    static native byte[] versionedCheckpoint(long store, String dir);

    static native long committedOffset(long store, String topic, int partition);

    static native long windowCommittedOffset(long store, String topic, int partition);

    static native long sessionCommittedOffset(long store, String topic, int partition);

    static native long versionedCommittedOffset(long store, String topic, int partition);

    static native byte[] committedMetadata(long store);

    static native byte[] windowCommittedMetadata(long store);

    static native byte[] sessionCommittedMetadata(long store);

    static native byte[] versionedCommittedMetadata(long store);

    static native void rollback(long store);

    static native void windowRollback(long store);

    static native void sessionRollback(long store);

    static native void versionedRollback(long store);

    static native long approximateNumEntries(long store, boolean committed);

    static native long approximateNumUncommittedBytes(long store);

    static native long windowApproximateNumUncommittedBytes(long store);

    static native long sessionApproximateNumUncommittedBytes(long store);

    static native long versionedApproximateNumUncommittedBytes(long store);

    /** @return an integer RocksDB property or ticker by RocksDB name, or -1 when there is none */
    static native long property(long store, String name);

    static native long windowProperty(long store, String name);

    static native long sessionProperty(long store, String name);

    static native long versionedProperty(long store, String name);

    /** @return true while the store runs in upgrade mode (old-format values left) */
    static native boolean isUpgrading(long store);

    /**
     * Upgrades a store in upgrade mode by prepare and swap; {@code progress} (may be null) is
     * called on this thread after each batch, and an exception it throws stops the swap and
     * propagates.
     *
     * @return entries copied, 0 when the store was not in upgrade mode
     */
    static native long upgradeBySwap(long store, dev.kstate.streams.UpgradeProgress progress);

    // ----- checkpoints in an object store (src/jni/remote.rs; see NativeRemote) ---------------

    /** @return whether this library was built with the cargo feature {@code remote} (the other remote natives) */
    static native boolean remoteSupported();

    /** A new checkpoint target; see {@link NativeRemote#open}. */
    static native long remoteOpen(String uri, String[] optionNames, String[] optionValues, long maxBytesPerSec,
                                  long maxRestoreBytesPerSec, long gcGraceMs, String writerId);

    /** Releases a checkpoint target. */
    static native void remoteClose(long remote);

    /** Checkpoints a store into {@code scratchDir}, publishes it unless its sequence is {@code lastSequence}, removes the copy. */
    static native byte[] remotePublishStore(long remote, long store, String scratchDir, String app, String task,
                                            String storeName, long lastSequence);

    /** The manifests of a store, newest first. */
    static native byte[] remoteList(long remote, String app, String task, String storeName);

    /** Downloads checkpoint {@code key} into the new directory {@code destDir}. */
    static native byte[] remoteRestore(long remote, String app, String task, String storeName, String key,
                                       String destDir);

    /** Deletes all but the newest {@code keep} checkpoints and the files nothing names. */
    static native byte[] remoteGc(long remote, String app, String task, String storeName, int keep);
}
