package dev.kstate.streams;

import org.apache.kafka.streams.state.HeadersBytesStore;

/**
 * A kstate key-value store whose values are in Kafka 4.3+'s headers layout (KIP-1271:
 * {@code [varint headersSize][headers][8-byte timestamp][value]}), byte-compatible with
 * {@code RocksDBTimestampedStoreWithHeaders}. Being a {@link HeadersBytesStore}, Kafka Streams
 * hands it headers-format values directly (no {@code TimestampedToHeadersStoreAdapter}) and
 * rebuilds that layout from changelog records (value, timestamp and record headers) before
 * restoring them. Opening it over a timestamped or plain kstate store, or over Kafka's
 * timestamped or plain RocksDB store, upgrades that store lazily.
 *
 * <p>Needs Kafka Streams 4.3+ (the interface does not exist before).
 */
public class KstateHeadersKeyValueStore extends KstateKeyValueStore implements HeadersBytesStore {
    KstateHeadersKeyValueStore(KstateStoreOptions options) {
        super(options);
    }
}
