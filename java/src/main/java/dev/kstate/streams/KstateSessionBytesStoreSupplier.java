package dev.kstate.streams;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;

/**
 * Supplies kstate session stores; each {@link #get()} returns a new, uninitialised store (a
 * {@code HeadersBytesStore} in the headers format). Build
 * with {@link KstateStores#persistentSessionStore}, {@link KstateStores#inMemorySessionStore} or
 * {@link KstateStoreOptions.Builder#buildSessionStore}.
 */
public class KstateSessionBytesStoreSupplier extends KstateSegmentedBytesStoreSupplier implements SessionBytesStoreSupplier {
    KstateSessionBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod) {
        this(options, retentionPeriod, false);
    }

    /**
     * A supplier of time-ordered session stores ({@code timeOrdered}), the session stores of
     * {@code EmitStrategy.onWindowClose()}: they also answer {@code findSessions(earliestSessionEndTime,
     * latestSessionEndTime)} as Kafka's {@code RocksDbTimeOrderedSessionBytesStoreSupplier}.
     */
    KstateSessionBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod, boolean timeOrdered) {
        super(options, "session", retentionPeriod, timeOrdered);
    }

    @Override
    public SessionStore<Bytes, byte[]> get() {
        if (options.valueFormat == KstateStoreOptions.ValueFormat.HEADERS) {
            refuseTimeOrderedHeaders("session");
            return KstateHeadersSessionStore.create(options, retentionPeriod, segmentInterval);
        }
        // the time-ordered supplier of the DSL's headers store format records Kafka's layout for the export
        return new KstateSessionStore(options, retentionPeriod, segmentInterval, timeOrdered, kafkaHeadersLayout());
    }

    /**
     * Whether Kafka's DSL builds this supplier's stores with its headers builder (a
     * {@code HeadersBytesStoreSupplier}, Kafka Streams 4.3+). A virtual call rather than an
     * {@code instanceof}, which would load the headers supplier class, and with it Kafka's 4.3+
     * interface, on every runtime.
     */
    boolean kafkaHeadersLayout() {
        return false;
    }
}
