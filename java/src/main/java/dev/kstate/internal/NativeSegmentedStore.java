package dev.kstate.internal;

/**
 * What {@link NativeWindowStore} and {@link NativeSessionStore} add to
 * {@link AbstractNativeStore}: Kafka's observed stream time, and iterators that read as
 * exhausted once the store closed (as Kafka's segmented store iterators).
 */
public abstract class NativeSegmentedStore extends AbstractNativeStore {
    /** {@code query} kind of both: one key ({@code keyFrom}) between the two times. */
    public static final int QUERY_KEY = 0;
    /** {@code query} kind of both: keys from {@code keyFrom} to {@code keyTo} (null = open end). */
    public static final int QUERY_KEY_RANGE = 1;

    static final Natives WINDOW = new Natives(KstateNative::windowClose, KstateNative::windowNext,
        KstateNative::windowCloseIterator, KstateNative::windowCommit, KstateNative::windowFlush,
        KstateNative::windowCommittedOffset, KstateNative::windowCommittedMetadata, KstateNative::windowRollback,
        KstateNative::windowApproximateNumUncommittedBytes, KstateNative::windowProperty, KstateNative::windowCheckpoint, true);
    static final Natives SESSION = new Natives(KstateNative::sessionClose, KstateNative::sessionNext,
        KstateNative::sessionCloseIterator, KstateNative::sessionCommit, KstateNative::sessionFlush,
        KstateNative::sessionCommittedOffset, KstateNative::sessionCommittedMetadata, KstateNative::sessionRollback,
        KstateNative::sessionApproximateNumUncommittedBytes, KstateNative::sessionProperty, KstateNative::sessionCheckpoint, true);

    private final StreamTime streamTime;

    NativeSegmentedStore(String name, long handle, Natives natives, StreamTime streamTime) {
        super(name, handle, natives);
        this.streamTime = streamTime;
    }

    /** {@code streamTime(store, committed)} of a kind. */
    interface StreamTime {
        long streamTime(long store, boolean committed);
    }

    /**
     * Writes a packed batch ({@link Packing}) keyed by Kafka's store keys of this kind, as
     * restored from the changelog; all or nothing.
     *
     * @param packed the batch
     */
    public abstract void putAllStoreKeys(byte[] packed);

    /**
     * @param committed the committed stream time (else the writer's)
     * @return Kafka's observed stream time: the largest window start or session end written, -1 before any
     */
    public long streamTime(boolean committed) {
        return streamTime.streamTime(handle(), committed);
    }
}
