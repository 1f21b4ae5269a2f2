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
public class KstateWindowBytesStoreSupplier implements WindowBytesStoreSupplier {
    private final KstateStoreOptions options;
    private final long retentionPeriod;
    private final long windowSize;
    private final boolean retainDuplicates;
    private final long segmentInterval;
    /** Kafka's time-ordered store (emit on window close), and its {@code hasIndex}. */
    private final boolean timeOrdered;
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
     * {@code hasIndex} (sliding windows).
     */
    KstateWindowBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod, long windowSize,
                                   boolean retainDuplicates, boolean timeOrdered, boolean keyIndex) {
        this.timeOrdered = timeOrdered;
        this.keyIndex = keyIndex;
        this.options = options;
        this.retentionPeriod = retentionPeriod;
        this.windowSize = windowSize;
        this.retainDuplicates = retainDuplicates;
        // Kafka's RocksDB window stores: the caching layer orders its entries by this interval,
        // so the store's own segments must use the same one.
        this.segmentInterval = Math.max(retentionPeriod / 2, 60_000L);
    }

    /** @return the options of the stores this supplies */
    public KstateStoreOptions options() {
        return options;
    }

    @Override
    public String name() {
        return options.name;
    }

    @Override
    public WindowStore<Bytes, byte[]> get() {
        if (options.valueFormat == KstateStoreOptions.ValueFormat.HEADERS) {
            if (timeOrdered) {
                throw new IllegalStateException("kstate does not serve time-ordered window stores in the headers format");
            }
            return KstateHeadersWindowStore.create(options, retentionPeriod, windowSize, retainDuplicates,
                segmentInterval);
        }
        if (timeOrdered) {
            return new KstateTimeOrderedWindowStore(new KstateTimestampedWindowStore(options, retentionPeriod, windowSize,
                retainDuplicates, segmentInterval, true, keyIndex), retentionPeriod, windowSize, retainDuplicates, keyIndex);
        }
        return options.timestamped
            ? new KstateTimestampedWindowStore(options, retentionPeriod, windowSize, retainDuplicates, segmentInterval)
            : new KstateWindowStore(options, retentionPeriod, windowSize, retainDuplicates, segmentInterval);
    }

    @Override
    public String metricsScope() {
        return options.engine == KstateStoreOptions.Engine.ROCKSDB ? "kstate-rocksdb-window" : "kstate-memory-window";
    }

    /** @return {@code max(retention / 2, 60 s)}, as Kafka's RocksDB window stores (fixed when a store is created) */
    @Override
    public long segmentIntervalMs() {
        return segmentInterval;
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
    public long retentionPeriod() {
        return retentionPeriod;
    }

    @Override
    public String toString() {
        return "KstateWindowBytesStoreSupplier{" + options + ", retentionPeriod=" + retentionPeriod + ", windowSize="
            + windowSize + ", retainDuplicates=" + retainDuplicates + ", segmentInterval=" + segmentInterval
            + (timeOrdered ? ", timeOrdered, keyIndex=" + keyIndex : "") + "}";
    }
}
