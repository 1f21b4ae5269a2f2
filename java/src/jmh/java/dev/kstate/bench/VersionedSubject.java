package dev.kstate.bench;

import dev.kstate.streams.KstateStores;
import java.io.File;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedBytesStoreSupplier;
import org.apache.kafka.streams.state.VersionedKeyValueStore;

/**
 * One versioned key-value store under test, built as a Kafka Streams user builds it:
 * {@code Stores.versionedKeyValueStoreBuilder(supplier, Bytes, byte[]).withLoggingDisabled()}
 * (versioned stores have no cache), initialised as {@link BenchStore} says. Kafka's variants are
 * its {@code RocksDBVersionedStore} ({@code Stores.persistentVersionedKeyValueStore}); Kafka has
 * no in-memory versioned store. Every variant's segment interval is Kafka's default for the
 * history retention.
 */
public final class VersionedSubject extends BenchStore {
    /** The variants: Kafka has no in-memory versioned store. */
    static final String[] VARIANTS = {"kstate-rocksdb", "kstate-memory", "kafka-rocksdb", "kafka-rocksdb-txn"};

    /** The store, as the processor sees it. */
    public final VersionedKeyValueStore<Bytes, byte[]> store;

    private VersionedSubject(String variant, File stateDir, VersionedKeyValueStore<Bytes, byte[]> store) {
        super(variant, stateDir, store);
        this.store = store;
    }

    /**
     * Opens (creating if absent) the variant's versioned store under {@code stateDir}.
     *
     * @param historyRetention the history retention
     */
    public static VersionedSubject open(String variant, File stateDir, Duration historyRetention) {
        return new VersionedSubject(variant, stateDir,
            Stores.versionedKeyValueStoreBuilder(supplier(variant, historyRetention), Serdes.Bytes(), Serdes.ByteArray())
                .withLoggingDisabled()
                .build());
    }

    private static VersionedBytesStoreSupplier supplier(String variant, Duration historyRetention) {
        switch (variant) {
            case "kstate-rocksdb":
                return KstateStores.persistentVersionedKeyValueStore(NAME, historyRetention);
            case "kstate-memory":
                return KstateStores.inMemoryVersionedKeyValueStore(NAME, historyRetention);
            case "kafka-rocksdb":
            case "kafka-rocksdb-txn":
                return Stores.persistentVersionedKeyValueStore(NAME, historyRetention);
            default:
                throw unknownVariant(variant);
        }
    }
}
