package dev.kstate.streams;

import org.apache.kafka.streams.state.HeadersBytesStoreSupplier;

/**
 * Supplies kstate stores in the headers format (KIP-1271). Kafka Streams 4.3+ recognises a
 * headers supplier by {@link HeadersBytesStoreSupplier}: the DSL then builds the store with
 * {@code Stores.timestampedKeyValueStoreWithHeadersBuilder}, whose layers pass headers-format
 * values through unchanged. Needs Kafka Streams 4.3+.
 */
public final class KstateHeadersKeyValueBytesStoreSupplier extends KstateKeyValueBytesStoreSupplier
    implements HeadersBytesStoreSupplier {
    KstateHeadersKeyValueBytesStoreSupplier(KstateStoreOptions options) {
        super(options);
    }

    /**
     * A headers supplier, typed as its superclass. Callers on every Kafka version use this
     * instead of the constructor: a method that returns this class's instances as a
     * {@link KstateKeyValueBytesStoreSupplier} makes the JVM's verifier load this class (to check
     * the assignment) and so {@link HeadersBytesStoreSupplier}, which Kafka Streams 4.0-4.2 lack.
     */
    static KstateKeyValueBytesStoreSupplier create(KstateStoreOptions options) {
        return new KstateHeadersKeyValueBytesStoreSupplier(options);
    }
}
