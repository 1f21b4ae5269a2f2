package dev.kstate.streams;

/**
 * What kstate's bytes-store suppliers share, whatever the store kind: the options, the store
 * name and the metrics scope.
 */
abstract class KstateBytesStoreSupplier {
    final KstateStoreOptions options;
    /** What the kind adds to the metrics scope: "", "-window" or "-session", as Kafka's scopes. */
    private final String scopeSuffix;

    KstateBytesStoreSupplier(KstateStoreOptions options, String scopeSuffix) {
        this.options = options;
        this.scopeSuffix = scopeSuffix;
    }

    /** @return the options of the stores this supplies */
    public KstateStoreOptions options() {
        return options;
    }

    /** @return the name of the stores this supplies */
    public String name() {
        return options.name;
    }

    /** @return the metrics scope of the stores this supplies ({@code kstate-rocksdb...} or {@code kstate-memory...}) */
    public String metricsScope() {
        return (options.engine == KstateStoreOptions.Engine.ROCKSDB ? "kstate-rocksdb" : "kstate-memory") + scopeSuffix;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + options + details() + "}";
    }

    /** @return what {@link #toString()} says after the options */
    String details() {
        return "";
    }
}
