package dev.kstate.streams;

import dev.kstate.internal.ParkedStores;
import dev.kstate.internal.PositionCodec;
import java.io.File;
import java.io.FileNotFoundException;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.Callable;
import java.util.function.Function;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.streams.StreamsMetrics;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;
import org.apache.kafka.streams.query.Position;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
    private static final Logger LOG = LoggerFactory.getLogger(StartupParking.class);
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
     * A store the start-up path initialised without opening it: the hint it answers from, and
     * how it opens once something needs more than the hint.
     */
    static final class Deferred {
        /** The committed offsets the store answers with. */
        final OffsetsHint hint;
        /** The hint's committed position. */
        final Position position;
        private final File dir;
        private final Object options;
        private final Callable<? extends AutoCloseable> open;
        private final String description;

        private Deferred(OffsetsHint hint, Position position, File dir, Object options, Callable<? extends AutoCloseable> open,
                         String description) {
            this.hint = hint;
            this.position = position;
            this.dir = dir;
            this.options = options;
            this.open = open;
            this.description = description;
        }

        /**
         * The store, open: the one opened in the background if it is parked (waiting for an
         * open under way), else opened here.
         *
         * @return the native store, owned by the caller
         * @throws KstateProcessorStateException (or another runtime exception of the open) when it cannot be opened
         */
        AutoCloseable open() {
            ParkedStores.Parked parked = ParkedStores.adopt(dir, options, description);
            if (parked != null) {
                return parked.store();
            }
            try {
                return open.call();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new KstateProcessorStateException("store " + description + ": cannot open " + dir + ": " + e,
                    KstateException.IO);
            }
        }
    }

    /**
     * Defers the open of the existing store at {@code dir}, initialised by the start-up path:
     * unless {@value KstateStoreOptions#STARTUP_DEFER_OPEN_CONFIG} is off (or parking is, {@code
     * parkMs} 0), when the store has a readable {@link OffsetsHint}, schedules its open on the background
     * openers (parked for the task's initialisation to adopt, as {@link #openAhead} does) and
     * returns what the store answers the path with meanwhile.
     *
     * @param context the start-up path's context
     * @param dir the store's directory (its own: kstate's, holding a database)
     * @param options the open options
     * @param open opens the store at {@code dir}
     * @param parkMs the park deadline
     * @param description the store, for messages
     * @return the deferred store, or null when deferral is off or there is no usable hint (open it now)
     */
    static Deferred deferOpen(StateStoreContext context, File dir, Object options,
                              Callable<? extends AutoCloseable> open, long parkMs, String description) {
        if (parkMs <= 0 || !KstateStoreOptions.resolvedStartupDeferOpen(context.appConfigs())) {
            return null;
        }
        OffsetsHint hint = OffsetsHint.read(dir);
        if (hint == null) {
            return null;
        }
        Position position;
        try {
            position = PositionCodec.decode(hint.metadata());
        } catch (RuntimeException e) {
            LOG.info("kstate store {}: ignoring the offsets hint in {}: unreadable position ({}); the store is opened to "
                + "answer", description, dir, e.getMessage());
            return null;
        }
        ParkedStores.preOpen(dir, options, existing(dir, open), owner(context), parkMs, description);
        return new Deferred(hint, position, dir, options, open, description);
    }

    /**
     * An open for the background that refuses to create a store: if the directory lost its
     * database before the open ran (Kafka wiping the task), the open fails, and the task's
     * initialisation opens the directory itself, as a new store.
     */
    private static Callable<AutoCloseable> existing(File dir, Callable<? extends AutoCloseable> open) {
        return () -> {
            if (!new File(dir, "CURRENT").isFile()) {
                throw new FileNotFoundException(dir + " holds no store any more");
            }
            return open.call();
        };
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
                         Function<File, Callable<AutoCloseable>> open,
                         long deadlineMs) {
        if (!KstateStoreOptions.resolvedStartupOpenAhead(context.appConfigs())) {
            return 0;
        }
        File taskDir = context.stateDir();
        File parent = taskDir == null ? null : taskDir.getParentFile();
        String[] tasks = parent == null ? null : parent.list();
        if (tasks == null) {
            return 0;
        }
        Arrays.sort(tasks);
        String prefix = context.taskId().subtopology() + "_";
        Object owner = null;
        int n = 0;
        for (String task : tasks) {
            if (!task.startsWith(prefix) || task.equals(taskDir.getName()) || !task.substring(prefix.length()).matches("\\d+")) {
                continue;
            }
            File dir = new File(new File(parent, task), name);
            if (!new File(dir, "CURRENT").isFile()) {
                continue;
            }
            if (owner == null) {
                owner = owner(context);
            }
            if (ParkedStores.preOpen(dir, options, existing(dir, open.apply(dir)), owner, deadlineMs,
                name + " (task " + task + ")")) {
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
