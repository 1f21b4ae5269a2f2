package dev.kstate.streams;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.VersionedBytesStoreSupplier;

/**
 * Supplies kstate versioned key-value stores (KIP-889); each {@link #get()} returns a new,
 * uninitialised {@link KstateVersionedStore}. Use it with {@code Materialized.as(supplier)} for a
 * versioned {@code KTable}, or with {@code Stores.versionedKeyValueStoreBuilder(supplier, ...)} in
 * the Processor API. Build with {@link KstateStores#persistentVersionedKeyValueStore} or
 * {@link KstateStores#inMemoryVersionedKeyValueStore}.
 */
public class KstateVersionedBytesStoreSupplier extends KstateBytesStoreSupplier implements VersionedBytesStoreSupplier {
    private final long historyRetentionMs;
    private final long segmentIntervalMs;

    KstateVersionedBytesStoreSupplier(KstateStoreOptions options, long historyRetentionMs, long segmentIntervalMs) {
        super(options, "");
        this.historyRetentionMs = historyRetentionMs;
        this.segmentIntervalMs = segmentIntervalMs;
    }

    @Override
    public KeyValueStore<Bytes, byte[]> get() {
        return new KstateVersionedStore(options, historyRetentionMs, segmentIntervalMs);
    }

    @Override
    public long historyRetentionMs() {
        return historyRetentionMs;
    }

    /** @return the segment interval asked for, 0 when Kafka's default for the retention applies */
    public long segmentIntervalMs() {
        return segmentIntervalMs;
    }

    @Override
    String details() {
        return ", historyRetentionMs=" + historyRetentionMs + ", segmentIntervalMs=" + segmentIntervalMs;
    }
}
