package dev.kstate.bench;

import dev.kstate.streams.KstateStores;
import java.io.File;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;

/**
 * One window store under test, built as a Kafka Streams user builds it:
 * {@code Stores.timestampedWindowStoreBuilder(supplier, Bytes, byte[]).withLoggingDisabled()
 * .withCachingDisabled()} (no duplicates), initialised as {@link BenchStore} says. Kafka's
 * RocksDB variants are its {@code RocksDBTimestampedWindowStore}
 * ({@code Stores.persistentTimestampedWindowStore}); {@code kafka-memory} is its in-memory window
 * store ({@code Stores.inMemoryWindowStore}, which the builder marks timestamped). Every
 * variant's segment interval is Kafka's default, {@code max(retention / 2, 60 s)}.
 */
public final class WindowSubject extends BenchStore {
    /** The store, as the processor sees it. */
    public final TimestampedWindowStore<Bytes, byte[]> store;

    private WindowSubject(String variant, File stateDir, TimestampedWindowStore<Bytes, byte[]> store) {
        super(variant, stateDir, store);
        this.store = store;
    }

    /**
     * Opens (creating if absent) the variant's window store under {@code stateDir}.
     *
     * @param retention the retention period
     * @param windowSize the window size
     */
    public static WindowSubject open(String variant, File stateDir, Duration retention, Duration windowSize) {
        return new WindowSubject(variant, stateDir,
            Stores.timestampedWindowStoreBuilder(supplier(variant, retention, windowSize), Serdes.Bytes(), Serdes.ByteArray())
                .withLoggingDisabled()
                .withCachingDisabled()
                .build());
    }

    private static WindowBytesStoreSupplier supplier(String variant, Duration retention, Duration windowSize) {
        switch (variant) {
            case "kstate-rocksdb":
                return KstateStores.persistentTimestampedWindowStore(NAME, retention, windowSize, false);
            case "kstate-memory":
                return KstateStores.inMemoryWindowStore(NAME, retention, windowSize, false);
            case "kafka-rocksdb":
            case "kafka-rocksdb-txn":
                return Stores.persistentTimestampedWindowStore(NAME, retention, windowSize, false);
            case "kafka-memory":
                return Stores.inMemoryWindowStore(NAME, retention, windowSize, false);
            default:
                throw unknownVariant(variant);
        }
    }
}
