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
public class KstateSessionBytesStoreSupplier implements SessionBytesStoreSupplier {
    private final KstateStoreOptions options;
    private final long retentionPeriod;
    private final long segmentInterval;
    /** Kafka's time-ordered session store (emit on window close). */
    private final boolean timeOrdered;

    KstateSessionBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod) {
        this(options, retentionPeriod, false);
    }

    /**
     * A supplier of time-ordered session stores ({@code timeOrdered}), the session stores of
     * {@code EmitStrategy.onWindowClose()}: they also answer {@code findSessions(earliestSessionEndTime,
     * latestSessionEndTime)} as Kafka's {@code RocksDbTimeOrderedSessionBytesStoreSupplier}.
     */
    KstateSessionBytesStoreSupplier(KstateStoreOptions options, long retentionPeriod, boolean timeOrdered) {
        this.timeOrdered = timeOrdered;
        this.options = options;
        this.retentionPeriod = retentionPeriod;
        this.segmentInterval = Math.max(retentionPeriod / 2, 60_000L);
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
    public SessionStore<Bytes, byte[]> get() {
        if (options.valueFormat == KstateStoreOptions.ValueFormat.HEADERS) {
            if (timeOrdered) {
                throw new IllegalStateException("kstate does not serve time-ordered session stores in the headers format");
            }
            return KstateHeadersSessionStore.create(options, retentionPeriod, segmentInterval);
        }
        return new KstateSessionStore(options, retentionPeriod, segmentInterval, timeOrdered);
    }

    @Override
    public String metricsScope() {
        return options.engine == KstateStoreOptions.Engine.ROCKSDB ? "kstate-rocksdb-session" : "kstate-memory-session";
    }

    /** @return {@code max(retention / 2, 60 s)}, as Kafka's RocksDB session stores (fixed when a store is created) */
    @Override
    public long segmentIntervalMs() {
        return segmentInterval;
    }

    @Override
    public long retentionPeriod() {
        return retentionPeriod;
    }

    @Override
    public String toString() {
        return "KstateSessionBytesStoreSupplier{" + options + ", retentionPeriod=" + retentionPeriod + ", segmentInterval="
            + segmentInterval + (timeOrdered ? ", timeOrdered" : "") + "}";
    }
}
