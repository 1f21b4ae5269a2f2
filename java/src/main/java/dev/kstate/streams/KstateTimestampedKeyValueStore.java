package dev.kstate.streams;

import org.apache.kafka.streams.state.TimestampedBytesStore;

/**
 * A kstate key-value store whose values are in Kafka's timestamped layout (8-byte big-endian
 * timestamp, then the value). Being a {@link TimestampedBytesStore}, Kafka Streams hands it
 * timestamped values directly (no adapter stripping timestamps) and converts plain changelog
 * records to this layout before restoring them.
 */
public class KstateTimestampedKeyValueStore extends KstateKeyValueStore implements TimestampedBytesStore {
    KstateTimestampedKeyValueStore(KstateStoreOptions options) {
        super(options);
    }

    @Override
    protected boolean timestampedValues() {
        return true;
    }
}
