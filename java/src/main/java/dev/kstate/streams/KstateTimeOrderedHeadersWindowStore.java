package dev.kstate.streams;

import java.time.Duration;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.HeadersBytesStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier;

/**
 * The time-ordered window store of {@code EmitStrategy.onWindowClose()} in the headers store
 * format ({@code dsl.store.format=headers}): a {@link KstateHeadersWindowStore} opened time-ordered
 * with Kafka's key index, in place of Kafka 4.4's {@code RocksDBTimeOrderedWindowStoreWithHeaders}.
 *
 * <p>Why it looks as it does: Kafka's {@code TimestampedWindowStoreWithHeadersBuilder} hands
 * headers-format values unchanged only to a {@link HeadersBytesStore} (any other store is wrapped in
 * {@code TimestampedToHeadersWindowStoreAdapter}, which drops the headers), and builds its
 * time-ordered cache only over a store that is, or wraps, a {@code RocksDBTimeOrderedWindowStore}.
 * So this class is a {@link HeadersBytesStore} whose {@link #wrapped()} is the store Kafka's own
 * supplier makes (never initialised: only its {@code hasIndex()} is read). Kafka's headers variant
 * always keeps the key index (tumbling and hopping windows too), so key and key-range fetches go by
 * key, as here. Needs Kafka Streams 4.4 (loaded only when the headers format is asked for).
 */
public final class KstateTimeOrderedHeadersWindowStore extends KstateTimeOrderedWindowStore implements HeadersBytesStore {
    private KstateTimeOrderedHeadersWindowStore(KstateHeadersWindowStore store, long retentionPeriod, long windowSize,
                                                boolean retainDuplicates) {
        super(store, RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier.create(store.name(),
            Duration.ofMillis(retentionPeriod), Duration.ofMillis(windowSize), retainDuplicates, true).get());
    }

    /**
     * A new store over a new time-ordered, key-indexed {@link KstateHeadersWindowStore}; typed as
     * Kafka's interface so that callers on older Kafka Streams never load this class.
     */
    static WindowStore<Bytes, byte[]> create(KstateStoreOptions options, long retentionPeriod, long windowSize,
                                             boolean retainDuplicates, long segmentInterval) {
        return new KstateTimeOrderedHeadersWindowStore(new KstateHeadersWindowStore(options, retentionPeriod, windowSize,
            retainDuplicates, segmentInterval, true, true), retentionPeriod, windowSize, retainDuplicates);
    }
}
