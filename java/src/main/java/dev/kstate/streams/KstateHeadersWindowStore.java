package dev.kstate.streams;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.HeadersBytesStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * A kstate window store whose values are in Kafka 4.3+'s headers layout (KIP-1271,
 * {@code ValueTimestampHeaders}: {@code [varint headersSize][headers][8-byte timestamp][value]}),
 * as Kafka's {@code RocksDBTimestampedWindowStoreWithHeaders} keeps them. Being a
 * {@link HeadersBytesStore}, Kafka Streams' {@code TimestampedWindowStoreWithHeadersBuilder}
 * hands it headers-format values directly (no {@code TimestampedToHeadersWindowStoreAdapter},
 * which would drop the headers) and rebuilds that layout from changelog records (value,
 * timestamp and record headers) before restoring them. A store opens only in the format it was
 * created with. Needs Kafka Streams 4.3+.
 */
public class KstateHeadersWindowStore extends KstateTimestampedWindowStore implements HeadersBytesStore {
    /** A time-ordered store when {@code timeOrdered}, with Kafka's key index when {@code keyIndex}. */
    KstateHeadersWindowStore(KstateStoreOptions options, long retentionPeriod, long windowSize,
                             boolean retainDuplicates, long segmentInterval, boolean timeOrdered, boolean keyIndex) {
        super(options, retentionPeriod, windowSize, retainDuplicates, segmentInterval, timeOrdered, keyIndex);
    }

    /**
     * A new store, typed as Kafka's interface so that callers on Kafka 4.0-4.2 never load this
     * class (nor {@link HeadersBytesStore}, which they lack) unless they ask for the headers format.
     */
    static WindowStore<Bytes, byte[]> create(KstateStoreOptions options, long retentionPeriod, long windowSize,
                                             boolean retainDuplicates, long segmentInterval) {
        return new KstateHeadersWindowStore(options, retentionPeriod, windowSize, retainDuplicates, segmentInterval, false,
            false);
    }
}
