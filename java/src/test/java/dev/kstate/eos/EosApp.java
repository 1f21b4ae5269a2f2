package dev.kstate.eos;

import dev.kstate.broker.BrokerMain;
import dev.kstate.streams.KstateDslStoreSuppliers;
import dev.kstate.streams.KstateStoreOptions;
import dev.kstate.streams.KstateStores;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaClientSupplier;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.RangeQuery;
import org.apache.kafka.streams.query.StateQueryRequest;
import org.apache.kafka.streams.query.StateQueryResult;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The Kafka Streams application of the real-broker tests, the restart race and the demo, run in
 * a child JVM (through {@link BrokerMain}, so it dies with its parent) that the parent SIGKILLs.
 *
 * <p>Topology: {@code input} (String key, numeric String value) grouped by key into
 * {@code counts} (a {@code count()}, materialized through {@code Materialized.as(supplier)}) and
 * {@code sums} (an {@code aggregate()} summing the values, materialized by name only, so its
 * store comes from {@code dsl.store.suppliers.class}); both tables go to output topics. The
 * variant picks the stores: {@code kstate} (kstate for both, with
 * {@code enable.transactional.statestores=true}), {@code rocksdb} (Kafka's RocksDB stores, flag
 * off: the default exactly-once setup), {@code rocksdb-txn} (Kafka's RocksDB stores with the flag)
 * {@code memory} (Kafka's in-memory stores) and {@code stateless} (no stores: {@code input} mapped to
 * {@code counts-out}).
 *
 * <p>Arguments are {@code key=value}: {@code bootstrap}, {@code app}, {@code state}, {@code variant},
 * {@code topics} (a prefix of the topic names), {@code ctl} (a control directory: the file {@code query} asks for the interactive queries,
 * {@code stop} for a clean close), optional {@code instance} (static membership),
 * {@code commit.ms}, {@code max.uncommitted} ({@code kstate.max.uncommitted.bytes}),
 * {@code standbys}, {@code iq.limit} (entries printed per query and partition), {@code park.ms}
 * ({@code kstate.startup.park.ms}), {@code open.ahead} ({@code kstate.startup.open.ahead}),
 * {@code defer.open} ({@code kstate.startup.defer.open}), {@code txn.stores} ({@code false} runs the
 * kstate and rocksdb-txn variants without {@code enable.transactional.statestores}),
 * {@code uncommitted.max} ({@code statestore.uncommitted.max.bytes}), {@code cache} ({@code true}: the
 * DSL's record cache as shipped, 10 MB, instead of none), {@code windowed} ({@code true} adds a
 * tumbling-window count {@code wcounts} of {@code window.ms} and a session count {@code scounts} of
 * inactivity gap {@code session.gap.ms}, on kstate's window and session stores in the kstate variant,
 * written to {@code wcounts-out} and {@code scounts-out}; the soak's topology; {@code session.engine=memory}
 * puts the kstate variant's session store on the memory engine, beside its RocksDB stores), {@code versioned}
 * ({@code true} adds the versioned join of {@link #addVersioned}, on kstate's versioned store in the
 * kstate variant: a versioned table in a stream-table join), {@code acceptable.lag}
 * ({@code acceptable.recovery.lag}), {@code probing.ms} ({@code probing.rebalance.interval.ms}),
 * and any {@code kstate.*} key, passed on as a configuration (e.g. {@code kstate.checkpoint.uri}).
 *
 * <p>It reports on standard output, one event a line: {@code STATE new old ms}, {@code RUNNING ms}
 * (ms since the JVM started), {@code ACTIVE n ms} (right after each RUNNING: the active tasks it
 * runs), {@code RESTORE_START store topic partition start end},
 * {@code RESTORE_END store topic partition restored ms}, {@code COMMIT_BEGIN n} /
 * {@code COMMIT_DONE n} around each producer transaction commit, {@code STANDBY_START store topic
 * partition offset}, {@code STANDBY_BATCH store topic partition batchEnd size} and
 * {@code STANDBY_SUSPENDED store topic partition offset reason} for standby tasks,
 * {@code FENCED method exception} when the producer is refused (a zombie's transaction),
 * {@code IQ api level store key value}, {@code IQ_DONE}, {@code ERROR ...}, {@code CLOSED}, and
 * {@code LOG level thread message} for each INFO-or-higher event of kstate's loggers.
 */
public final class EosApp {
    public static final String INPUT = "input";
    public static final String COUNTS_OUT = "counts-out";
    public static final String SUMS_OUT = "sums-out";
    /** With {@code windowed=true}: each update of the tumbling-window count, keyed {@code key@windowStart}. */
    public static final String WCOUNTS_OUT = "wcounts-out";
    /** With {@code windowed=true}: each update of the session count, keyed {@code key@start@end} (null: merged away). */
    public static final String SCOUNTS_OUT = "scounts-out";
    /** How long the window and session stores keep their windows (the soak outlives it, so segments expire). */
    static final Duration WINDOWED_RETENTION = Duration.ofMinutes(30);
    /** Grace of the windowed aggregations: input timestamps rise per partition, so no record is ever late. */
    static final Duration WINDOWED_GRACE = Duration.ofMinutes(1);

    /** The topic {@code name} of the run with topic prefix {@code prefix}. */
    public static String topic(String prefix, String name) {
        return prefix + name;
    }

    private static final long JVM_START = ManagementFactory.getRuntimeMXBean().getStartTime();

    private EosApp() {
    }

    static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static long sinceStart() {
        return System.currentTimeMillis() - JVM_START;
    }

    /**
     * Logs a start-up milestone to standard error, in the log's format, with the ms since the
     * JVM started and the CPU ms the process and the main thread had used, so
     * {@code scripts/race-phases.py} can split the time before {@code KafkaStreams#start()}.
     */
    static void milestone(String name) {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        long processCpu = os instanceof com.sun.management.OperatingSystemMXBean
            ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() / 1_000_000 : -1;
        long threadCpu = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() / 1_000_000;
        System.err.println(java.time.LocalTime.now().format(java.time.format.DateTimeFormatter.ofPattern("HH:mm:ss.SSS"))
            + " INFO main EosApp milestone " + name + " at=" + sinceStart() + " cpu=" + processCpu + " mainCpu=" + threadCpu);
    }

    public static void main(String[] args) throws Exception {
        milestone("main");
        if (System.getProperty("kstate.no.watchdog") == null) {
            BrokerMain.haltWhenParentDies();
        }
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        // kstate's log events, INFO and up, reach the parent as LOG lines (which store was opened, adopted...)
        dev.kstate.streams.CapturedLogs.forward(l -> {
            if (!l.startsWith("DEBUG") && !l.startsWith("TRACE")) {
                out("LOG " + l.replace('\n', ' '));
            }
        });
        String variant = a.getOrDefault("variant", "kstate");
        String t = a.getOrDefault("topics", "");
        File ctl = new File(a.get("ctl"));
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, a.get("app"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, a.get("state"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, a.getOrDefault("commit.ms", "100"));
        if (!Boolean.parseBoolean(a.getOrDefault("cache", "false"))) {
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0); // every update reaches the output
        }
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, Integer.parseInt(a.getOrDefault("standbys", "0")));
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 3000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 500);
        if (a.containsKey("instance")) {
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), a.get("instance"));
        }
        if (!variant.equals("rocksdb") && !variant.equals("memory")
            && Boolean.parseBoolean(a.getOrDefault("txn.stores", "true"))) {
            p.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, true);
        }
        if (a.containsKey("uncommitted.max")) {
            p.put("statestore.uncommitted.max.bytes", a.get("uncommitted.max"));
        }
        if (variant.equals("memory")) {
            p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG,
                org.apache.kafka.streams.state.BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers.class);
        }
        if (variant.equals("kstate") || variant.equals("kstate-memory")) {
            p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class);
        }
        if (variant.equals("kstate-memory")) {
            // Every DSL store on kstate's memory engine (the count's own supplier below too).
            p.put(KstateStoreOptions.ENGINE_CONFIG, "memory");
        }
        if (a.containsKey("park.ms")) {
            p.put(KstateStoreOptions.STARTUP_PARK_MS_CONFIG, a.get("park.ms"));
        }
        if (a.containsKey("open.ahead")) {
            p.put(KstateStoreOptions.STARTUP_OPEN_AHEAD_CONFIG, a.get("open.ahead"));
        }
        if (a.containsKey("defer.open")) {
            p.put(KstateStoreOptions.STARTUP_DEFER_OPEN_CONFIG, a.get("defer.open"));
        }
        if (a.containsKey("max.uncommitted")) {
            p.put(KstateStoreOptions.MAX_UNCOMMITTED_BYTES_CONFIG, a.get("max.uncommitted"));
        }
        if (a.containsKey("probing.ms")) {
            p.put(StreamsConfig.PROBING_REBALANCE_INTERVAL_MS_CONFIG, a.get("probing.ms"));
        }
        if (a.containsKey("acceptable.lag")) {
            // how far behind a client may be and still be given a stateful task at once (Kafka's default, 10000,
            // gives a client without state warm-up replicas first and moves the task after a probing rebalance)
            p.put(StreamsConfig.ACCEPTABLE_RECOVERY_LAG_CONFIG, a.get("acceptable.lag"));
        }
        // every kstate.* argument is passed on as it is (kstate.checkpoint.uri, kstate.checkpoint.interval.ms...)
        a.forEach((k, v) -> {
            if (k.startsWith("kstate.")) {
                p.put(k, v);
            }
        });
        if (a.containsKey("restore.wait.ms")) {
            // how long the state updater's restore consumer long-polls a caught-up changelog
            p.put(StreamsConfig.restoreConsumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG), a.get("restore.wait.ms"));
        }

        StreamsBuilder builder = new StreamsBuilder();
        if (variant.equals("stateless")) {
            builder.stream(topic(t, INPUT), Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> Long.parseLong(v))
                .to(topic(t, COUNTS_OUT), Produced.with(Serdes.String(), Serdes.Long()));
        } else {
            KeyValueBytesStoreSupplier counts = variant.equals("kstate")
                ? KstateStores.persistentTimestampedKeyValueStore("counts")
                : variant.equals("kstate-memory") ? KstateStores.inMemoryTimestampedKeyValueStore("counts")
                : variant.equals("memory") ? Stores.inMemoryKeyValueStore("counts")
                : Stores.persistentTimestampedKeyValueStore("counts");
            KGroupedStream<String, String> grouped = builder.stream(topic(t, INPUT), Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey();
            grouped.count(Materialized.<String, Long>as(counts).withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream().to(topic(t, COUNTS_OUT), Produced.with(Serdes.String(), Serdes.Long()));
            grouped.aggregate(() -> 0L, (k, v, agg) -> agg + Long.parseLong(v),
                Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("sums")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream().to(topic(t, SUMS_OUT), Produced.with(Serdes.String(), Serdes.Long()));
            if (Boolean.parseBoolean(a.getOrDefault("versioned", "false"))) {
                addVersioned(builder, t, variant.equals("kstate"));
            }
            if (Boolean.parseBoolean(a.getOrDefault("windowed", "false"))) {
                addWindowed(grouped, t, variant.equals("kstate"), Duration.ofMillis(Long.parseLong(a.getOrDefault("window.ms",
                    "10000"))), Duration.ofMillis(Long.parseLong(a.getOrDefault("session.gap.ms", "10000"))),
                    a.getOrDefault("session.engine", "rocksdb").equals("memory"));
            }
        }

        org.apache.kafka.streams.Topology topology = builder.build();
        milestone("built");
        KafkaStreams streams = new KafkaStreams(topology, p, new SignallingClients());
        milestone("constructed");
        AtomicLong lastRunning = new AtomicLong(-1);
        streams.setStateListener((n, o) -> {
            out("STATE " + n + " " + o + " " + sinceStart());
            if (n == KafkaStreams.State.RUNNING) {
                if (lastRunning.get() < 0) {
                    milestone("running");
                }
                lastRunning.set(sinceStart());
                out("RUNNING " + sinceStart());
                // the active tasks this instance runs now (a scale-out waits for its share)
                int active = streams.metadataForLocalThreads().stream().mapToInt(m -> m.activeTasks().size()).sum();
                out("ACTIVE " + active + " " + sinceStart());
            }
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            private final Map<String, Long> started = new HashMap<>();

            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                started.put(store + tp, System.nanoTime());
                out("RESTORE_START " + store + " " + tp.topic() + " " + tp.partition() + " " + start + " " + end);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long restored) {
                Long t = started.remove(store + tp);
                long ms = t == null ? -1 : (System.nanoTime() - t) / 1_000_000;
                out("RESTORE_END " + store + " " + tp.topic() + " " + tp.partition() + " " + restored + " " + ms);
            }

            @Override
            public void onRestoreSuspended(TopicPartition tp, String store, long restored) {
                out("RESTORE_SUSPENDED " + store + " " + tp.topic() + " " + tp.partition() + " " + restored);
            }
        });
        streams.setStandbyUpdateListener(new StandbyUpdateListener() {
            @Override
            public void onUpdateStart(TopicPartition tp, String store, long startingOffset) {
                out("STANDBY_START " + store + " " + tp.topic() + " " + tp.partition() + " " + startingOffset);
            }

            @Override
            public void onBatchLoaded(TopicPartition tp, String store, TaskId task, long batchEnd, long size, long end) {
                out("STANDBY_BATCH " + store + " " + tp.topic() + " " + tp.partition() + " " + batchEnd + " " + size);
            }

            @Override
            public void onUpdateSuspended(TopicPartition tp, String store, long storeOffset, long end,
                                          SuspendReason reason) {
                out("STANDBY_SUSPENDED " + store + " " + tp.topic() + " " + tp.partition() + " " + storeOffset + " "
                    + reason);
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            out("ERROR " + e.toString().replace('\n', ' '));
            e.printStackTrace();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        out("START " + sinceStart());
        streams.start();
        milestone("started");

        File query = new File(ctl, "query");
        File stop = new File(ctl, "stop");
        boolean queried = false;
        while (!stop.exists()) {
            if (!queried && query.exists() && streams.state() == KafkaStreams.State.RUNNING) {
                queryAll(streams, variant, Integer.parseInt(a.getOrDefault("iq.limit", "2147483647")));
                queried = true;
            }
            if (streams.state() == KafkaStreams.State.ERROR || streams.state() == KafkaStreams.State.NOT_RUNNING) {
                out("ERROR streams went " + streams.state());
                System.exit(2);
            }
            Thread.sleep(50);
        }
        streams.close(Duration.ofSeconds(60));
        out("CLOSED " + sinceStart());
        System.exit(0);
    }

    /**
     * The versioned join ({@code versioned=true}): a versioned table and a stream-table join
     * over {@code input}. The table side re-times each record {@code (key, v, ts)} to
     * {@code ts - v s} (out of order, some older than the history retention
     * {@link #VERSIONED_RETENTION}: not put) with the value {@code v@ts}, into a table
     * materialized as the versioned store {@code vprobe}; the stream side re-times the same
     * record to {@code ts - 0.7 v s} and left-joins it with the table (the version as of that
     * time: in the history, or older than the retention: the latest only), sending
     * {@code v|tableValue} (or {@code v|-}) to {@code vprobe-out}. The table side is built
     * first, so each record's version is put before its lookup; each output is then a function
     * of the partition's records up to it, which the parent computes with Kafka's own versioned
     * store.
     */
    public static void addVersioned(StreamsBuilder builder, String t, boolean kstate) {
        org.apache.kafka.streams.state.VersionedBytesStoreSupplier supplier = kstate
            ? KstateStores.persistentVersionedKeyValueStore(VPROBE, VERSIONED_RETENTION)
            : Stores.persistentVersionedKeyValueStore(VPROBE, VERSIONED_RETENTION);
        org.apache.kafka.streams.kstream.KStream<String, String> in =
            builder.stream(topic(t, INPUT), Consumed.with(Serdes.String(), Serdes.String()));
        org.apache.kafka.streams.kstream.KTable<String, String> table = in
            .processValues(() -> new Retime(1000, true))
            .toTable(Materialized.<String, String>as(supplier).withKeySerde(Serdes.String())
                .withValueSerde(Serdes.String()));
        in.processValues(() -> new Retime(700, false))
            .leftJoin(table, (v, found) -> v + "|" + (found == null ? "-" : found))
            .to(topic(t, VPROBE_OUT), Produced.with(Serdes.String(), Serdes.String()));
    }

    /** The store of the versioned join's table. */
    public static final String VPROBE = "vprobe";
    /** With {@code versioned=true}: one line per input record, see {@link #addVersioned}. */
    public static final String VPROBE_OUT = "vprobe-out";
    /** History retention of the versioned join's table. */
    public static final Duration VERSIONED_RETENTION = Duration.ofSeconds(5);

    /**
     * Moves a record {@code v} ms per unit of its value back in time; with {@code stamp} its
     * value also records its original timestamp ({@code v@ts}).
     */
    static final class Retime implements org.apache.kafka.streams.processor.api.FixedKeyProcessor<String, String, String> {
        private final long msPerUnit;
        private final boolean stamp;
        private org.apache.kafka.streams.processor.api.FixedKeyProcessorContext<String, String> context;

        Retime(long msPerUnit, boolean stamp) {
            this.msPerUnit = msPerUnit;
            this.stamp = stamp;
        }

        @Override
        public void init(org.apache.kafka.streams.processor.api.FixedKeyProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(org.apache.kafka.streams.processor.api.FixedKeyRecord<String, String> r) {
            long back = Long.parseLong(r.value()) * msPerUnit;
            context.forward(r.withTimestamp(r.timestamp() - back)
                .withValue(stamp ? r.value() + "@" + r.timestamp() : r.value()));
        }
    }

    /**
     * The window and session counts of the soak: on kstate's stores ({@code kstate}) or on the
     * DSL's default ones. Their outputs carry the window in the key, so that the parent can
     * compare every update with the one its model of the input predicts.
     */
    static void addWindowed(KGroupedStream<String, String> grouped, String t, boolean kstate, Duration size, Duration gap,
                            boolean memorySessions) {
        Materialized<String, Long, WindowStore<Bytes, byte[]>> wm = kstate
            ? Materialized.<String, Long>as(KstateStores.persistentTimestampedWindowStore("wcounts", WINDOWED_RETENTION, size,
                false))
            : Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("wcounts");
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(size, WINDOWED_GRACE))
            .count(wm.withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
            .to(topic(t, WCOUNTS_OUT), Produced.with(Serdes.String(), Serdes.Long()));
        Materialized<String, Long, SessionStore<Bytes, byte[]>> sm = kstate
            ? Materialized.<String, Long>as(memorySessions ? KstateStores.inMemorySessionStore("scounts", WINDOWED_RETENTION)
                : KstateStores.persistentSessionStore("scounts", WINDOWED_RETENTION))
            : Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("scounts");
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, WINDOWED_GRACE))
            .count(sm.withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "@" + wk.window().end())
            .to(topic(t, SCOUNTS_OUT), Produced.with(Serdes.String(), Serdes.Long()));
    }

    /** IQv1 and IQv2 over both stores at both isolation levels. */
    static void queryAll(KafkaStreams streams, String variant, int limit) {
        if (variant.equals("stateless")) {
            out("IQ_DONE");
            return;
        }
        for (String store : new String[] {"counts", "sums"}) {
            for (IsolationLevel level : IsolationLevel.values()) {
                // IQv1: the timestamped store type forwards readOnly(level) to each task's store
                ReadOnlyKeyValueStore<String, ValueAndTimestamp<Long>> v1 = streams.store(
                    StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.<String, Long>timestampedKeyValueStore()));
                try (KeyValueIterator<String, ValueAndTimestamp<Long>> it = v1.readOnly(level).all()) {
                    for (int n = 0; n < limit && it.hasNext(); n++) {
                        KeyValue<String, ValueAndTimestamp<Long>> kv = it.next();
                        out("IQ v1 " + level.name() + " " + store + " " + kv.key + " " + kv.value.value() + " "
                            + kv.value.timestamp());
                    }
                }
                // IQv2: a range query over every partition, the isolation level in the request
                StateQueryRequest<KeyValueIterator<String, Long>> request = StateQueryRequest.inStore(store)
                    .withQuery(RangeQuery.<String, Long>withNoBounds()).withIsolationLevel(level);
                StateQueryResult<KeyValueIterator<String, Long>> result = streams.query(request);
                for (Map.Entry<Integer, QueryResult<KeyValueIterator<String, Long>>> e
                    : new TreeMap<>(result.getPartitionResults()).entrySet()) {
                    QueryResult<KeyValueIterator<String, Long>> r = e.getValue();
                    if (!r.isSuccess()) {
                        out("ERROR IQv2 partition " + e.getKey() + ": " + r.getFailureReason() + " " + r.getFailureMessage());
                        continue;
                    }
                    try (KeyValueIterator<String, Long> it = r.getResult()) {
                        for (int n = 0; n < limit && it.hasNext(); n++) {
                            KeyValue<String, Long> kv = it.next();
                            out("IQ v2 " + level.name() + " " + store + " " + kv.key + " " + kv.value);
                        }
                    }
                }
            }
        }
        out("IQ_DONE");
    }

    /** Kafka's clients, with the producer reporting each transaction commit on standard output. */
    static final class SignallingClients implements KafkaClientSupplier {
        private final AtomicLong commits = new AtomicLong();

        @Override
        public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
            return new KafkaProducer<byte[], byte[]>(config, new ByteArraySerializer(), new ByteArraySerializer()) {
                @Override
                public void sendOffsetsToTransaction(Map<TopicPartition, OffsetAndMetadata> offsets,
                                                     ConsumerGroupMetadata group) {
                    try {
                        super.sendOffsetsToTransaction(offsets, group);
                    } catch (RuntimeException e) {
                        out("FENCED sendOffsetsToTransaction " + e.getClass().getSimpleName());
                        throw e;
                    }
                }

                @Override
                public void commitTransaction() {
                    long n = commits.incrementAndGet();
                    out("COMMIT_BEGIN " + n);
                    try {
                        super.commitTransaction();
                    } catch (RuntimeException e) {
                        out("FENCED commitTransaction " + e.getClass().getSimpleName());
                        throw e;
                    }
                    out("COMMIT_DONE " + n);
                }
            };
        }

        @Override
        public org.apache.kafka.clients.admin.Admin getAdmin(Map<String, Object> config) {
            return org.apache.kafka.clients.admin.Admin.create(config);
        }

        @Override
        public Consumer<byte[], byte[]> getConsumer(Map<String, Object> config) {
            return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }

        @Override
        public Consumer<byte[], byte[]> getRestoreConsumer(Map<String, Object> config) {
            return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }

        @Override
        public Consumer<byte[], byte[]> getGlobalConsumer(Map<String, Object> config) {
            return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }
    }
}
