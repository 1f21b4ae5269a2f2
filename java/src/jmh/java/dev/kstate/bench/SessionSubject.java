package dev.kstate.bench;

import dev.kstate.streams.KstateStores;
import java.io.File;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;

/**
 * One session store under test, built as a Kafka Streams user builds it:
 * {@code Stores.sessionStoreBuilder(supplier, Bytes, byte[]).withLoggingDisabled()
 * .withCachingDisabled()}, initialised as {@link BenchStore} says. Kafka's RocksDB variants are
 * its {@code RocksDBSessionStore} ({@code Stores.persistentSessionStore}); {@code kafka-memory}
 * is its in-memory session store. Every variant's segment interval is Kafka's default,
 * {@code max(retention / 2, 60 s)}.
 */
public final class SessionSubject extends BenchStore {
    /** The store, as the processor sees it. */
    public final SessionStore<Bytes, byte[]> store;

    private SessionSubject(String variant, File stateDir, SessionStore<Bytes, byte[]> store) {
        super(variant, stateDir, store);
        this.store = store;
    }

    /**
     * Opens (creating if absent) the variant's session store under {@code stateDir}.
     *
     * @param retention the retention period
     */
    public static SessionSubject open(String variant, File stateDir, Duration retention) {
        return new SessionSubject(variant, stateDir,
            Stores.sessionStoreBuilder(supplier(variant, retention), Serdes.Bytes(), Serdes.ByteArray())
                .withLoggingDisabled()
                .withCachingDisabled()
                .build());
    }

    private static SessionBytesStoreSupplier supplier(String variant, Duration retention) {
        switch (variant) {
            case "kstate-rocksdb":
                return KstateStores.persistentSessionStore(NAME, retention);
            case "kstate-memory":
                return KstateStores.inMemorySessionStore(NAME, retention);
            case "kafka-rocksdb":
            case "kafka-rocksdb-txn":
                return Stores.persistentSessionStore(NAME, retention);
            case "kafka-memory":
                return Stores.inMemorySessionStore(NAME, retention);
            default:
                throw unknownVariant(variant);
        }
    }
}
