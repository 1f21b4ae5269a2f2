package dev.kstate.streams;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.HeadersBytesStore;
import org.apache.kafka.streams.state.SessionStore;

/**
 * A kstate session store whose aggregates are in Kafka 4.3+'s headers layout (KIP-1271,
 * {@code AggregationWithHeaders}: {@code [varint headersSize][headers][aggregation]}, no
 * timestamp), as Kafka's {@code RocksDBSessionStoreWithHeaders} keeps them. Being a
 * {@link HeadersBytesStore}, Kafka Streams' {@code SessionStoreWithHeadersBuilder} hands it
 * headers-format aggregates directly (no {@code SessionToHeadersStoreAdapter}) and rebuilds that
 * layout from changelog records (aggregate and record headers) before restoring them. A store
 * opens only in the format it was created with. Needs Kafka Streams 4.3+.
 */
public class KstateHeadersSessionStore extends KstateSessionStore implements HeadersBytesStore {
    KstateHeadersSessionStore(KstateStoreOptions options, long retentionPeriod, long segmentInterval) {
        super(options, retentionPeriod, segmentInterval);
    }

    /** A new store, typed as Kafka's interface (see {@link KstateHeadersWindowStore#create}). */
    static SessionStore<Bytes, byte[]> create(KstateStoreOptions options, long retentionPeriod, long segmentInterval) {
        return new KstateHeadersSessionStore(options, retentionPeriod, segmentInterval);
    }
}
