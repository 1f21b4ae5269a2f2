package dev.kstate.streams;

import dev.kstate.internal.ParkedStores;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.streams.StreamsMetrics;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;

/**
 * What parking needs to know about Kafka Streams (see {@link ParkedStores}).
 *
 * <p>Kafka Streams 4.3 and 4.4 open the stores of every non-empty local task directory on
 * {@code KafkaStreams#start()} ({@code StateDirectory#initializeStartupStores}): a temporary
 * state manager inits every store with a {@code StateDirectory$StartupContext}, commits them and
 * closes them; the stream thread then inits the same stores again when the tasks are assigned.
 * The context's class is the only mark of that path (it is a private class of an internal
 * package), so it is recognised by name: on runtimes without it nothing is parked.
 */
final class StartupParking {
    /** The class of the context Kafka's start-up path hands to {@code StateStore#init}. */
    static final String STARTUP_CONTEXT = "org.apache.kafka.streams.processor.internals.StateDirectory$StartupContext";
    /** Metrics registries that already carry a {@link CloseWithStreams} reporter. */
    private static final Map<Metrics, Boolean> WATCHED = new WeakHashMap<>();

    private StartupParking() {
    }

    /** @return true when {@code context} is the one of Kafka Streams' start-up path */
    static boolean isStartupPath(StateStoreContext context) {
        return context != null && STARTUP_CONTEXT.equals(context.getClass().getName());
    }

    /**
     * Whether a store initialised with {@code context} registers its metrics: not on the
     * start-up path, which only reads the committed offsets and closes the store again. There
     * they would be registered (with JMX among others: 1-9 ms a store, measured) and removed
     * unread, one store after another on the thread that runs {@code KafkaStreams#start()}.
     *
     * @param context the context of {@code init}
     * @return true when the context has metrics and is not the start-up path's
     */
    static boolean registersMetrics(StateStoreContext context) {
        return context.metrics() != null && !isStartupPath(context);
    }

    /**
     * How long a store initialised with {@code context} is parked when it is closed.
     *
     * @param context the context of {@code init}
     * @param persistent the store has a directory (RocksDB engine)
     * @return the deadline in milliseconds, or 0 when the store must be closed as usual
     */
    static long parkMillis(StateStoreContext context, boolean persistent) {
        if (!persistent || !isStartupPath(context)) {
            return 0;
        }
        return KstateStoreOptions.resolvedStartupParkMs(context.appConfigs());
    }

    /**
     * Opens, in the background, the store {@code name} of the other task directories of the
     * same sub-topology next to {@code context}'s, so that Kafka's start-up path, which inits
     * the tasks one after another, adopts them open: their write-ahead-log replays overlap.
     * Same store name in the same sub-topology means the same supplier, hence the same open
     * options. Only directories that hold a kstate RocksDB store already ({@code CURRENT}) are
     * opened; whatever is not adopted is closed by the park deadline.
     *
     * @param context the start-up path's context of the store being initialised
     * @param name the store's name
     * @param options the open options (the registry's key)
     * @param open opens the store at a directory
     * @param deadlineMs the park deadline
     * @return the number of opens scheduled
     */
    static int openAhead(StateStoreContext context, String name, Object options,
                         java.util.function.Function<java.io.File, java.util.concurrent.Callable<AutoCloseable>> open,
                         long deadlineMs) {
        if (!KstateStoreOptions.resolvedStartupOpenAhead(context.appConfigs())) {
            return 0;
        }
        java.io.File taskDir = context.stateDir();
        java.io.File parent = taskDir == null ? null : taskDir.getParentFile();
        String[] tasks = parent == null ? null : parent.list();
        if (tasks == null) {
            return 0;
        }
        java.util.Arrays.sort(tasks);
        String prefix = context.taskId().subtopology() + "_";
        Object owner = null;
        int n = 0;
        for (String task : tasks) {
            if (!task.startsWith(prefix) || task.equals(taskDir.getName()) || !task.substring(prefix.length()).matches("\\d+")) {
                continue;
            }
            java.io.File dir = new java.io.File(new java.io.File(parent, task), name);
            if (!new java.io.File(dir, "CURRENT").isFile()) {
                continue;
            }
            if (owner == null) {
                owner = owner(context);
            }
            if (ParkedStores.preOpen(dir, options, open.apply(dir), owner, deadlineMs, name + " (task " + task + ")")) {
                n++;
            }
        }
        return n;
    }

    /**
     * The owner of stores parked from {@code context}: the {@code KafkaStreams} instance's
     * metrics registry, which {@code KafkaStreams#close()} closes last, closing its reporters.
     * A reporter added to it here closes the stores still parked then, so that a closed
     * application leaves no store open (and {@code KafkaStreams#cleanUp()} can delete them).
     *
     * @return the registry, or null when the runtime does not expose it (the deadline still applies)
     */
    static Object owner(StateStoreContext context) {
        StreamsMetrics m = context.metrics();
        if (!(m instanceof StreamsMetricsImpl)) {
            return null;
        }
        try {
            Metrics registry = ((StreamsMetricsImpl) m).metricsRegistry();
            if (registry == null) {
                return null;
            }
            synchronized (WATCHED) {
                if (!WATCHED.containsKey(registry)) {
                    registry.addReporter(new CloseWithStreams(registry));
                    WATCHED.put(registry, Boolean.TRUE);
                }
            }
            return registry;
        } catch (LinkageError | RuntimeException e) {
            return null;
        }
    }

    /** Closes the stores a {@code KafkaStreams} instance parked when it closes its metrics. */
    static final class CloseWithStreams implements MetricsReporter {
        private final Metrics registry;

        CloseWithStreams(Metrics registry) {
            this.registry = registry;
        }

        @Override
        public void configure(Map<String, ?> configs) {
        }

        @Override
        public void init(List<KafkaMetric> metrics) {
        }

        @Override
        public void metricChange(KafkaMetric metric) {
        }

        @Override
        public void metricRemoval(KafkaMetric metric) {
        }

        @Override
        public void close() {
            synchronized (WATCHED) {
                WATCHED.remove(registry);
            }
            ParkedStores.closeOwnedBy(registry, "the KafkaStreams instance closed before adopting it");
        }
    }
}
