package dev.kstate.streams;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Supplies kstate key-value stores; each {@link #get()} returns a new, uninitialised store
 * (a {@code TimestampedBytesStore} when the options say timestamped, a {@code HeadersBytesStore}
 * in the headers format).
 */
public class KstateKeyValueBytesStoreSupplier implements KeyValueBytesStoreSupplier {
    private final KstateStoreOptions options;

    KstateKeyValueBytesStoreSupplier(KstateStoreOptions options) {
        this.options = options;
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
    public KeyValueStore<Bytes, byte[]> get() {
        switch (options.valueFormat) {
            case HEADERS:
                return new KstateHeadersKeyValueStore(options);
            case TIMESTAMPED:
                return new KstateTimestampedKeyValueStore(options);
            default:
                return new KstateKeyValueStore(options);
        }
    }

    @Override
    public String metricsScope() {
        return options.engine == KstateStoreOptions.Engine.ROCKSDB ? "kstate-rocksdb" : "kstate-memory";
    }

    @Override
    public String toString() {
        return "KstateKeyValueBytesStoreSupplier{" + options + "}";
    }
}
