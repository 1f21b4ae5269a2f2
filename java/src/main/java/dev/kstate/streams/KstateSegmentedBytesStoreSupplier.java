package dev.kstate.streams;

/**
 * What the window and session store suppliers add to {@link KstateBytesStoreSupplier}:
 * retention, Kafka's segment interval and the time-ordered variant.
 */
abstract class KstateSegmentedBytesStoreSupplier extends KstateBytesStoreSupplier {
    final long retentionPeriod;
    final long segmentInterval;
    /** Kafka's time-ordered store (emit on window close). */
    final boolean timeOrdered;

    KstateSegmentedBytesStoreSupplier(KstateStoreOptions options, String kind, long retentionPeriod,
                                      boolean timeOrdered) {
        super(options, "-" + kind);
        this.retentionPeriod = retentionPeriod;
        this.timeOrdered = timeOrdered;
        // Kafka's RocksDB window and session stores: the caching layer orders its entries by this
        // interval, so the store's own segments must use the same one.
        this.segmentInterval = Math.max(retentionPeriod / 2, 60_000L);
    }

    /**
     * @return {@code max(retention / 2, 60 s)}, as Kafka's RocksDB window and session stores (fixed
     *     when a store is created)
     */
    public long segmentIntervalMs() {
        return segmentInterval;
    }

    /** @return the retention period (ms) */
    public long retentionPeriod() {
        return retentionPeriod;
    }

    /**
     * Refuses a time-ordered store in the headers format where kstate does not serve it: session
     * stores (Kafka 4.4 keeps the aggregates of {@code onWindowClose()} session stores without headers,
     * under its {@code SessionToHeadersStoreAdapter}; {@link KstateDslStoreSuppliers} does the same).
     */
    final void refuseTimeOrderedHeaders(String kind) {
        if (timeOrdered) {
            throw new IllegalStateException("kstate does not serve time-ordered " + kind + " stores in the headers format");
        }
    }

    @Override
    String details() {
        return ", retentionPeriod=" + retentionPeriod + kindDetails() + ", segmentInterval=" + segmentInterval
            + (timeOrdered ? ", timeOrdered" : "");
    }

    /** @return what {@link #toString()} says of the kind between retention and segment interval */
    String kindDetails() {
        return "";
    }
}
