package dev.kstate.streams;

import dev.kstate.internal.NativePropertySource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.MeasurableStat;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.streams.StreamsMetrics;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;
import org.apache.kafka.streams.processor.internals.metrics.TaskMetrics;

/**
 * The metrics of one kstate store, registered through the public {@link StreamsMetrics} API
 * only: one sensor per store, holding one gauge-like metric per value (a
 * {@link MeasurableStat} that reads the native store when the metric is read and ignores
 * {@code record}). Removed, sensor and metrics, by {@link #close()}.
 *
 * <p>RocksDB stores report Kafka's RocksDB gauges under Kafka's names, group
 * {@value #GROUP} and tags {@code thread-id}, {@code task-id}, {@code rocksdb-state-id}, so
 * dashboards built for Kafka's RocksDB stores read them. Values are doubles (Kafka's own are
 * {@code BigInteger}s); NaN while the store is closed or when RocksDB has no value.
 */
final class KstateMetrics implements AutoCloseable {
    /** Kafka's group of store-level metrics. */
    static final String GROUP = "stream-state-metrics";
    /** Tag naming the store for RocksDB stores, as Kafka's RocksDB key-value stores. */
    static final String ROCKSDB_STATE_ID_TAG = "rocksdb-state-id";
    /** Tag naming the store for in-memory kstate stores (the scope of their metered wrapper). */
    static final String MEMORY_STATE_ID_TAG = "kstate-memory-state-id";

    /** RocksDB integer properties reported as gauges: metric name = property name without {@code rocksdb.}. */
    static final List<String> ROCKSDB_PROPERTIES = Collections.unmodifiableList(Arrays.asList(
        "num-entries-active-mem-table", "num-deletes-active-mem-table", "num-entries-imm-mem-tables",
        "num-deletes-imm-mem-tables", "num-immutable-mem-table", "cur-size-active-mem-table", "cur-size-all-mem-tables",
        "size-all-mem-tables", "mem-table-flush-pending", "num-running-flushes", "compaction-pending",
        "num-running-compactions", "estimate-pending-compaction-bytes", "total-sst-files-size", "live-sst-files-size",
        "num-live-versions", "estimate-num-keys", "estimate-table-readers-mem", "background-errors",
        "block-cache-capacity", "block-cache-usage", "block-cache-pinned-usage"));

    /** RocksDB statistics tickers (with statistics on): metric name, ticker name. */
    static final Map<String, String> TICKERS = ordered(
        "bytes-written-total", "rocksdb.bytes.written",
        "bytes-read-total", "rocksdb.bytes.read");

    /** kstate's own values, on both engines: metric name, native name. */
    static final Map<String, String> KSTATE_COUNTERS = ordered(
        "commits-in-doubt-total", "kstate.commits-in-doubt",
        "recovery-rolled-forward", "kstate.recovery-rolled-forward",
        "spills-total", "kstate.spills",
        "roll-forwards-total", "kstate.roll-forwards");

    /** The descriptions of {@link #KSTATE_COUNTERS}, by metric name. */
    private static final Map<String, String> KSTATE_COUNTER_DESCRIPTIONS = ordered(
        "commits-in-doubt-total", "kstate commits that returned COMMIT_IN_DOUBT since the store was opened",
        "recovery-rolled-forward", "1 when opening the store completed a spilled commit interrupted by a crash, else 0",
        "spills-total", "times the uncommitted writes outgrew kstate.max.uncommitted.bytes and were moved to disk, since "
            + "the store was opened",
        "roll-forwards-total", "spilled commits completed (applied from the spill area) since the store was opened");

    private final StreamsMetrics metrics;
    private final Sensor sensor;
    private final List<MetricName> names;
    private final Map<String, String> tags;

    private KstateMetrics(StreamsMetrics metrics, Sensor sensor, List<MetricName> names, Map<String, String> tags) {
        this.metrics = metrics;
        this.sensor = sensor;
        this.names = names;
        this.tags = tags;
    }

    /**
     * Registers the metrics of a store.
     *
     * @param metrics the task's metrics ({@code context.metrics()})
     * @param taskId the task id
     * @param storeName the store name
     * @param rocksdb true for the RocksDB engine (RocksDB gauges and {@code rocksdb-state-id})
     * @param statistics true when RocksDB statistics are on (the ticker totals)
     * @param store the store's current native store; read when a metric is read
     * @return the registration, to close with the store
     */
    static KstateMetrics register(StreamsMetrics metrics, String taskId, String storeName, boolean rocksdb,
                                  boolean statistics, Supplier<? extends NativePropertySource> store) {
        return register(metrics, taskId, storeName, rocksdb ? ROCKSDB_STATE_ID_TAG : MEMORY_STATE_ID_TAG, rocksdb,
            statistics, store);
    }

    /**
     * Registers the metrics of a store under an explicit store tag (window and session stores
     * use Kafka's {@code rocksdb-window-state-id} / {@code rocksdb-session-state-id}).
     *
     * @param metrics the task's metrics ({@code context.metrics()})
     * @param taskId the task id
     * @param storeName the store name
     * @param stateIdTag the tag naming the store
     * @param rocksdb true for the RocksDB engine (RocksDB gauges)
     * @param statistics true when RocksDB statistics are on (the ticker totals)
     * @param store the store's current native store; read when a metric is read
     * @return the registration, to close with the store
     */
    static KstateMetrics register(StreamsMetrics metrics, String taskId, String storeName, String stateIdTag,
                                  boolean rocksdb, boolean statistics, Supplier<? extends NativePropertySource> store) {
        String threadId = Thread.currentThread().getName();
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put("thread-id", threadId);
        tags.put("task-id", taskId);
        tags.put(stateIdTag, storeName);
        Sensor sensor = metrics.addSensor("kstate." + threadId + "." + taskId + "." + storeName, Sensor.RecordingLevel.INFO);
        List<MetricName> names = new ArrayList<>();
        if (rocksdb) {
            for (String p : ROCKSDB_PROPERTIES) {
                add(sensor, names, new MetricName(p, GROUP, "RocksDB property rocksdb." + p + " of the store", tags),
                    new NativeValue(store, "rocksdb." + p));
            }
            if (statistics) {
                for (Map.Entry<String, String> t : TICKERS.entrySet()) {
                    add(sensor, names, new MetricName(t.getKey(), GROUP, "RocksDB statistics ticker " + t.getValue()
                        + " of the store, since it was opened", tags), new NativeValue(store, t.getValue()));
                }
            }
        }
        for (Map.Entry<String, String> c : KSTATE_COUNTERS.entrySet()) {
            add(sensor, names, new MetricName(c.getKey(), GROUP, KSTATE_COUNTER_DESCRIPTIONS.get(c.getKey()), tags),
                new NativeValue(store, c.getValue()));
        }
        return new KstateMetrics(metrics, sensor, new java.util.concurrent.CopyOnWriteArrayList<>(names), tags);
    }

    /**
     * Adds the metrics of a store's checkpoints in an object store to its sensor (same group
     * and tags): the age of the newest checkpoint matching its committed state, what the
     * publications uploaded and reused, their failures, and whether and how much the store
     * restored from a checkpoint when it was opened.
     *
     * @param p the store's publisher
     */
    void addCheckpointMetrics(RemoteCheckpoints.Publisher p) {
        addValue("checkpoint-age-ms", "ms since the newest checkpoint published of the store's committed state was "
            + "taken; -1 before any", p::ageMs);
        addValue("checkpoint-bytes-uploaded-total", "bytes of checkpoint files uploaded since the store was opened",
            p.bytesUploaded::get);
        addValue("checkpoint-files-uploaded-total", "checkpoint files uploaded since the store was opened",
            p.filesUploaded::get);
        addValue("checkpoint-files-reused-total", "checkpoint files the object store already held (not uploaded again) "
            + "since the store was opened", p.filesReused::get);
        addValue("checkpoint-failures-total", "failed checkpoint publications and garbage collections since the store "
            + "was opened", p.failures::get);
        addValue("checkpoint-restore-source", "1 when the store was restored from a checkpoint in the object store "
            + "when it was opened, else 0", () -> p.restoreSource);
        addValue("checkpoint-restored-bytes", "bytes downloaded from the object store when the store was opened",
            () -> p.restoredBytes);
    }

    private void addValue(String name, String description, java.util.function.LongSupplier value) {
        add(sensor, names, new MetricName(name, GROUP, description, tags), new MeasurableStat() {
            @Override
            public double measure(MetricConfig config, long now) {
                return value.getAsLong();
            }

            @Override
            public void record(MetricConfig config, double v, long timeMs) {
                // a gauge: nothing to record
            }
        });
    }

    /**
     * Kafka's task-level {@code dropped-records} sensor (group {@code stream-task-metrics}, tags
     * {@code thread-id} = the calling thread, {@code task-id}), obtained the way Kafka's own
     * segmented stores obtain it in their {@code init} ({@code TaskMetrics#droppedRecordsSensor},
     * an internal API present in Kafka Streams 4.0 to 4.4): the sensor is the task's, shared with
     * Kafka's processors, so kstate's expired writes add to the same {@code dropped-records-total}.
     *
     * @param context the store's context
     * @return the sensor, or null when the context's metrics are not Kafka's own implementation or
     *     the Kafka Streams at hand lacks that internal method
     */
    static Sensor droppedRecordsSensor(StateStoreContext context) {
        StreamsMetrics m = context.metrics();
        if (!(m instanceof StreamsMetricsImpl)) {
            return null;
        }
        try {
            return TaskMetrics.droppedRecordsSensor(Thread.currentThread().getName(), context.taskId().toString(),
                (StreamsMetricsImpl) m);
        } catch (LinkageError otherKafkaStreams) {
            // an internal API: a Kafka Streams without it only loses the count
            return null;
        }
    }

    private static void add(Sensor sensor, List<MetricName> names, MetricName name, MeasurableStat stat) {
        sensor.add(name, stat);
        names.add(name);
    }

    /** @return the names of the registered metrics */
    List<MetricName> names() {
        return Collections.unmodifiableList(names);
    }

    /** Removes the sensor and its metrics. Idempotent. */
    @Override
    public void close() {
        metrics.removeSensor(sensor);
    }

    private static Map<String, String> ordered(String... pairs) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            m.put(pairs[i], pairs[i + 1]);
        }
        return Collections.unmodifiableMap(m);
    }

    /** A value read from the native store when the metric is read; never recorded. */
    private abstract static class Gauge implements MeasurableStat {
        private final Supplier<? extends NativePropertySource> store;

        Gauge(Supplier<? extends NativePropertySource> store) {
            this.store = store;
        }

        abstract long read(NativePropertySource s);

        @Override
        public double measure(MetricConfig config, long now) {
            NativePropertySource s = store.get();
            if (s == null || !s.isOpen()) {
                return Double.NaN;
            }
            try {
                long v = read(s);
                return v < 0 ? Double.NaN : (double) v;
            } catch (RuntimeException closedMeanwhile) {
                return Double.NaN;
            }
        }

        @Override
        public void record(MetricConfig config, double value, long timeMs) {
            // a gauge: nothing to record
        }
    }

    private static final class NativeValue extends Gauge {
        private final String property;

        NativeValue(Supplier<? extends NativePropertySource> store, String property) {
            super(store);
            this.property = property;
        }

        @Override
        long read(NativePropertySource s) {
            return s.property(property);
        }
    }
}
