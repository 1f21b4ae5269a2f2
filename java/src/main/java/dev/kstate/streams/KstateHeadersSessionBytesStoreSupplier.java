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

    private KstateHeadersSessionBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod, boolean timeOrdered) {
        super(options, retentionPeriod, timeOrdered);
    }

    /**
     * The supplier of the time-ordered session stores of {@code EmitStrategy.onWindowClose()} in the
     * headers store format, as Kafka 4.4's {@code RocksDbTimeOrderedSessionHeadersBytesStoreSupplier}:
     * a {@link HeadersBytesStoreSupplier}, so that the DSL builds the store with
     * {@code Stores.sessionStoreWithHeadersBuilder}, whose stores are time-ordered session stores that
     * are not {@code HeadersBytesStore}s (so that builder wraps them in its
     * {@code SessionToHeadersStoreAdapter}, which stores the aggregates without headers).
     *
     * @param options options in a format other than HEADERS
     */
    static KstateSessionBytesStoreSupplier createTimeOrdered(KstateStoreOptions options, long retentionPeriod) {
        if (options.valueFormat == KstateStoreOptions.ValueFormat.HEADERS) {
            throw new IllegalArgumentException("the stores of a time-ordered headers session supplier hold no headers");
        }
        return new KstateHeadersSessionBytesStoreSupplier(options, retentionPeriod, true);
    }

    @Override
    boolean kafkaHeadersLayout() {
        return true;
    }

    /** A headers supplier, typed as its superclass (see {@link KstateHeadersKeyValueBytesStoreSupplier#create}). */
    static KstateSessionBytesStoreSupplier create(KstateStoreOptions options, long retentionPeriod) {
        return new KstateHeadersSessionBytesStoreSupplier(options, retentionPeriod);
    }
}
