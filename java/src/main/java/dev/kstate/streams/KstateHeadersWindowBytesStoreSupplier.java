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

    /** A headers supplier, typed as its superclass (see {@link KstateHeadersKeyValueBytesStoreSupplier#create}). */
    static KstateWindowBytesStoreSupplier create(KstateStoreOptions options, long retentionPeriod, long windowSize,
                                                 boolean retainDuplicates) {
        return new KstateHeadersWindowBytesStoreSupplier(options, retentionPeriod, windowSize, retainDuplicates);
    }
}
