package dev.kstate.streams;

import org.apache.kafka.streams.state.HeadersBytesStoreSupplier;

/**
 * Supplies kstate session stores in the headers format (KIP-1271). Kafka Streams 4.3+ recognises
 * a headers supplier by {@link HeadersBytesStoreSupplier}: the DSL then builds the store with
 * {@code Stores.sessionStoreWithHeadersBuilder}. Needs Kafka Streams 4.3+.
 */
public final class KstateHeadersSessionBytesStoreSupplier extends KstateSessionBytesStoreSupplier
    implements HeadersBytesStoreSupplier {
    KstateHeadersSessionBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod) {
        super(options, retentionPeriod);
    }

    /** A headers supplier, typed as its superclass (see {@link KstateHeadersKeyValueBytesStoreSupplier#create}). */
    static KstateSessionBytesStoreSupplier create(KstateStoreOptions options, long retentionPeriod) {
        return new KstateHeadersSessionBytesStoreSupplier(options, retentionPeriod);
    }
}
