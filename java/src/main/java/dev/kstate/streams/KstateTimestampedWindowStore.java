package dev.kstate.streams;

import org.apache.kafka.streams.state.TimestampedBytesStore;

/**
 * A kstate window store whose values are in Kafka's timestamped layout (8-byte big-endian
 * timestamp, then the value). Being a {@link TimestampedBytesStore}, Kafka Streams'
 * {@code TimestampedWindowStoreBuilder} hands it timestamped values directly (no
 * {@code WindowToTimestampedWindowByteStoreAdapter}) and converts plain changelog records to
 * this layout before restoring them.
 */
public class KstateTimestampedWindowStore extends KstateWindowStore implements TimestampedBytesStore {
    KstateTimestampedWindowStore(KstateStoreOptions options, long retentionPeriod, long windowSize,
                                 boolean retainDuplicates, long segmentInterval, boolean timeOrdered, boolean keyIndex) {
        super(options, retentionPeriod, windowSize, retainDuplicates, segmentInterval, timeOrdered, keyIndex);
    }
}
