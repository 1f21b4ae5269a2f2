package dev.kstate.streams;

import org.apache.kafka.streams.state.HeadersBytesStoreSupplier;

/**
 * Supplies kstate window stores in the headers format (KIP-1271). Kafka Streams 4.3+ recognises
 * a headers supplier by {@link HeadersBytesStoreSupplier}: the DSL then builds the store with
 * {@code Stores.timestampedWindowStoreWithHeadersBuilder}. Needs Kafka Streams 4.3+.
 */
public final class KstateHeadersWindowBytesStoreSupplier extends KstateWindowBytesStoreSupplier
    implements HeadersBytesStoreSupplier {
    KstateHeadersWindowBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod, long windowSize,
                                          boolean retainDuplicates) {
        super(options, retentionPeriod, windowSize, retainDuplicates);
    }

    private KstateHeadersWindowBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod, long windowSize,
                                                  boolean retainDuplicates, boolean keyIndex) {
        super(options, retentionPeriod, windowSize, retainDuplicates, true, keyIndex);
    }

    /**
     * A headers supplier of time-ordered stores ({@code EmitStrategy.onWindowClose()}), a
     * {@link HeadersBytesStoreSupplier} as Kafka's
     * {@code RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier}; its stores are always
     * key-indexed, whatever {@code keyIndex} says (kept for {@link #toString()} only).
     */
    static KstateWindowBytesStoreSupplier createTimeOrdered(KstateStoreOptions options, long retentionPeriod,
                                                            long windowSize, boolean retainDuplicates, boolean keyIndex) {
        return new KstateHeadersWindowBytesStoreSupplier(options, retentionPeriod, windowSize, retainDuplicates, keyIndex);
    }

    /** A headers supplier, typed as its superclass (see {@link KstateHeadersKeyValueBytesStoreSupplier#create}). */
    static KstateWindowBytesStoreSupplier create(KstateStoreOptions options, long retentionPeriod, long windowSize,
                                                 boolean retainDuplicates) {
        return new KstateHeadersWindowBytesStoreSupplier(options, retentionPeriod, windowSize, retainDuplicates);
    }
}
