package dev.kstate.streams;

import java.time.Instant;
import java.util.Objects;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.streams.internals.ApiUtils;

/**
 * What every kind's read-only view at an isolation level ({@code readOnly(IsolationLevel)})
 * shares: READ_COMMITTED reads the last completed commit, READ_UNCOMMITTED the writer's view,
 * which is also what a store's own read methods answer (they delegate to such a view).
 */
abstract class ReadView {
    final IsolationLevel level;
    /** Read committed data only. */
    final boolean committed;
    private final String storeName;

    ReadView(String storeName, IsolationLevel level) {
        this.storeName = storeName;
        this.level = Objects.requireNonNull(level, "isolationLevel cannot be null");
        this.committed = level == IsolationLevel.READ_COMMITTED;
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
