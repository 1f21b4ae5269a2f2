package dev.kstate.streams;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Supplies kstate window stores; each {@link #get()} returns a new, uninitialised store (a
 * {@code TimestampedBytesStore} when the options say timestamped, also a {@code HeadersBytesStore}
 * in the headers format). Build with
 * {@link KstateStores#persistentTimestampedWindowStore}, {@link KstateStores#persistentWindowStore},
 * {@link KstateStores#inMemoryWindowStore} or {@link KstateStoreOptions.Builder#buildWindowStore}.
 */
public class KstateWindowBytesStoreSupplier extends KstateSegmentedBytesStoreSupplier implements WindowBytesStoreSupplier {
    private final long windowSize;
    private final boolean retainDuplicates;
    /** With {@code timeOrdered}: Kafka's {@code hasIndex}. */
    private final boolean keyIndex;

    KstateWindowBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod, long windowSize,
                                   boolean retainDuplicates) {
        this(options, retentionPeriod, windowSize, retainDuplicates, false, false);
    }

    /**
     * A supplier of time-ordered stores ({@code timeOrdered}): the window stores of
     * {@code EmitStrategy.onWindowClose()}, timestamped, answering {@code fetchAll} and {@code all}
     * (and, without {@code keyIndex}, key-range fetches) by window start as Kafka's
     * {@code RocksDbIndexedTimeOrderedWindowBytesStoreSupplier}; {@code keyIndex} is its
     * {@code hasIndex} (sliding windows). In the headers format, the store of Kafka's
     * {@code RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier}, always key-indexed
     * ({@link KstateTimeOrderedHeadersWindowStore}).
     */
    KstateWindowBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod, long windowSize,
                                   boolean retainDuplicates, boolean timeOrdered, boolean keyIndex) {
        super(options, "window", retentionPeriod, timeOrdered);
        this.windowSize = windowSize;
        this.retainDuplicates = retainDuplicates;
        this.keyIndex = keyIndex;
    }

    @Override
    public WindowStore<Bytes, byte[]> get() {
        if (options.valueFormat == KstateStoreOptions.ValueFormat.HEADERS) {
            if (timeOrdered) {
                // always key-indexed, as Kafka's RocksDBTimeOrderedWindowStoreWithHeaders
                return KstateTimeOrderedHeadersWindowStore.create(options, retentionPeriod, windowSize, retainDuplicates,
                    segmentInterval);
            }
            return KstateHeadersWindowStore.create(options, retentionPeriod, windowSize, retainDuplicates,
                segmentInterval);
        }
        if (timeOrdered) {
            return new KstateTimeOrderedWindowStore(new KstateTimestampedWindowStore(options, retentionPeriod, windowSize,
                retainDuplicates, segmentInterval, true, keyIndex), retentionPeriod, windowSize, retainDuplicates, keyIndex);
        }
        return options.timestamped
            ? new KstateTimestampedWindowStore(options, retentionPeriod, windowSize, retainDuplicates, segmentInterval,
                false, false)
            : new KstateWindowStore(options, retentionPeriod, windowSize, retainDuplicates, segmentInterval, false, false);
    }

    /**
     * @return the interval by which Kafka's caching layer orders this store's cached windows:
     *     {@code max(retention / 2, 60 s)} as Kafka's RocksDB window stores, and 1 ms for a store on the
     *     memory engine (not time-ordered), as Kafka's in-memory window store: such a store answers
     *     key-range fetches, {@code fetchAll} and {@code all} by window start, then key, the order
     *     the caching layer merges its entries in at that interval (the store keeps its own
     *     segments of {@code max(retention / 2, 60 s)} for expiry)
     */
    @Override
    public long segmentIntervalMs() {
        return options.engine == KstateStoreOptions.Engine.MEMORY && !timeOrdered ? 1L : segmentInterval;
    }

    @Override
    public long windowSize() {
        return windowSize;
    }

    @Override
    public boolean retainDuplicates() {
        return retainDuplicates;
    }

    @Override
    String kindDetails() {
        return ", windowSize=" + windowSize + ", retainDuplicates=" + retainDuplicates;
    }

    @Override
    String details() {
        boolean indexed = keyIndex || options.valueFormat == KstateStoreOptions.ValueFormat.HEADERS;
        return super.details() + (timeOrdered ? ", keyIndex=" + indexed : "");
    }
}
