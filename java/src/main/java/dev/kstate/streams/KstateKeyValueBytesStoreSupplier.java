package dev.kstate.streams;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Supplies kstate key-value stores; each {@link #get()} returns a new, uninitialised store
 * (a {@code TimestampedBytesStore} when the options say timestamped, a {@code HeadersBytesStore}
 * in the headers format).
 */
public class KstateKeyValueBytesStoreSupplier extends KstateBytesStoreSupplier implements KeyValueBytesStoreSupplier {
    KstateKeyValueBytesStoreSupplier(KstateStoreOptions options) {
        super(options, "");
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
}
