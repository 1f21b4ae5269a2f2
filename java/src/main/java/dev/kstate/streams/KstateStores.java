package dev.kstate.streams;

/**
 * Factory of kstate stores, mirroring Kafka's {@code Stores}. The suppliers plug into
 * {@code Materialized.as(supplier)}, {@code Stores.timestampedKeyValueStoreBuilder(supplier,
 * ...)} and {@code Stores.keyValueStoreBuilder(supplier, ...)}; for every DSL store at once
 * see {@link KstateDslStoreSuppliers}.
 */
public final class KstateStores {
    private KstateStores() {
    }

    /**
     * @param name store name (also its directory under the task's state directory)
     * @return a supplier of persistent (RocksDB), timestamped, transactional stores
     */
    public static KstateKeyValueBytesStoreSupplier persistentTimestampedKeyValueStore(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).timestamped(true).build();
    }

    /**
     * @param name store name
     * @return a supplier of in-memory, timestamped, transactional stores
     */
    public static KstateKeyValueBytesStoreSupplier inMemoryTimestampedKeyValueStore(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.MEMORY).timestamped(true).build();
    }

    /**
     * @param name store name (also its directory under the task's state directory)
     * @return a supplier of persistent (RocksDB), transactional stores in Kafka 4.3+'s headers
     *     format (KIP-1271, a {@code HeadersBytesStore}) for
     *     {@code Stores.timestampedKeyValueStoreBuilderWithHeaders}; byte-compatible with
     *     {@code RocksDBTimestampedStoreWithHeaders}, and upgrades a timestamped or plain store in place
     */
    public static KstateKeyValueBytesStoreSupplier persistentTimestampedKeyValueStoreWithHeaders(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB)
            .valueFormat(KstateStoreOptions.ValueFormat.HEADERS).build();
    }

    /**
     * @param name store name
     * @return a supplier of in-memory, transactional stores in the headers format
     */
    public static KstateKeyValueBytesStoreSupplier inMemoryTimestampedKeyValueStoreWithHeaders(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.MEMORY)
            .valueFormat(KstateStoreOptions.ValueFormat.HEADERS).build();
    }

    /**
     * @param name store name
     * @return a supplier of persistent (RocksDB) stores without timestamps
     */
    public static KstateKeyValueBytesStoreSupplier persistentKeyValueStore(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.ROCKSDB).timestamped(false).build();
    }

    /**
     * @param name store name
     * @return a supplier of in-memory stores without timestamps
     */
    public static KstateKeyValueBytesStoreSupplier inMemoryKeyValueStore(String name) {
        return builder(name).engine(KstateStoreOptions.Engine.MEMORY).timestamped(false).build();
    }

    /**
     * A builder for per-store options (engine, timestamps, max uncommitted bytes, sync on
     * commit, RocksDB block cache and write buffer); end with {@code build()}.
     *
     * @param name store name
     * @return the builder (defaults: RocksDB, timestamped)
     */
    public static KstateStoreOptions.Builder builder(String name) {
        return new KstateStoreOptions.Builder(name);
    }
}
