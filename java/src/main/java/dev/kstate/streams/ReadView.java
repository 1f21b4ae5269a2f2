package dev.kstate.streams;

import java.time.Instant;
import java.util.Objects;
import java.util.function.Function;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.streams.internals.ApiUtils;

/**
 * What every kind's read-only view at an isolation level ({@code readOnly(IsolationLevel)})
 * shares: READ_COMMITTED reads the last completed commit, READ_UNCOMMITTED the writer's view,
 * which is also what a store's own read methods answer (they delegate to such a view).
 */
abstract class ReadView<V> {
    final IsolationLevel level;
    /** Read committed data only. */
    final boolean committed;
    private final String storeName;
    /** The store's {@code readOnly}: a view answers Kafka's {@code readOnly} on it with the store's view. */
    private final Function<IsolationLevel, V> storeView;

    /**
     * @param storeView the store's own {@code readOnly(IsolationLevel)}
     */
    ReadView(String storeName, IsolationLevel level, Function<IsolationLevel, V> storeView) {
        this.storeName = storeName;
        this.level = Objects.requireNonNull(level, "isolationLevel cannot be null");
        this.committed = level == IsolationLevel.READ_COMMITTED;
        this.storeView = storeView;
    }

    /**
     * Kafka's {@code ReadOnly*Store#readOnly} on a view (its wrappers ask the view they hold):
     * the store's view at that level, not this one (Kafka's default returns {@code this}).
     *
     * @param isolationLevel the level
     * @return the store's view at that level
     */
    public V readOnly(IsolationLevel isolationLevel) {
        return storeView.apply(isolationLevel);
    }

    /** Kafka's {@code ApiUtils#validateMillisecondInstant}, with its messages: what the views' {@link Instant} reads take. */
    static long millis(Instant instant, String name) {
        return ApiUtils.validateMillisecondInstant(instant, ApiUtils.prepareMillisCheckFailMsgPrefix(instant, name));
    }

    @Override
    public String toString() {
        return "ReadOnlyView{" + storeName + ", " + level + "}";
    }
}
