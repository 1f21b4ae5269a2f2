package dev.kstate.eos;

import dev.kstate.broker.BrokerMain;
import dev.kstate.streams.KstateDslStoreSuppliers;
import dev.kstate.streams.KstateStores;
import java.io.File;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaClientSupplier;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The application of {@link RealBrokerRoundTripTest}, in a child JVM: one store of each kind,
 * on Kafka Streams' own RocksDB stores ({@code stores=kafka}, the defaults) or on kstate's
 * ({@code stores=kstate}: {@code dsl.store.suppliers.class=KstateDslStoreSuppliers} and
 * {@link KstateStores#persistentWindowStore} for the Processor API store). Every update reaches
 * its output topic (caching off), keyed so that each output key's records are ordered:
 * <ul>
 * <li>{@code kv}: {@code count()} per key (timestamped key-value store) to {@code kv-out};
 * <li>{@code tw}: the sum of the values per key and 60 s tumbling window, 60 s grace
 *     (timestamped window store), to {@code tw-out} keyed {@code key@windowStart};
 * <li>{@code ss}: {@code count()} per key and session (1 s inactivity gap, 60 s grace; a merged
 *     session's old window gets a tombstone), to {@code ss-out} keyed {@code key@start-end};
 * <li>{@code pw}: a Processor API plain window store counting records per key and 60 s window
 *     ({@code fetch} then {@code put}), to {@code pw-out} keyed {@code key@windowStart}.
 * </ul>
 *
 * <p>Arguments {@code key=value}: {@code bootstrap}, {@code app}, {@code state}, {@code ctl},
 * {@code topics} (topic prefix), {@code stores} ({@code kafka} or {@code kstate}),
 * {@code guarantee} ({@code eos}: {@code exactly_once_v2} with
 * {@code enable.transactional.statestores=true}; {@code alos}: {@code at_least_once}, flag
 * off), {@code commit.ms}. Events on standard output as {@link EosApp}'s ({@code RUNNING},
 * {@code STATE}, {@code RESTORE_START}/{@code RESTORE_END}, {@code COMMIT_DONE n} after each
 * producer transaction commit under exactly-once or consumer offset commit under
 * at-least-once, {@code LOG}, {@code ERROR}, {@code CLOSED}); the file {@code stop} in
 * {@code ctl} asks for a clean close.
 */
public final class RoundTripApp {
    static final Duration WINDOW = Duration.ofSeconds(60);
    static final Duration GRACE = Duration.ofSeconds(60);
    static final Duration GAP = Duration.ofSeconds(1);
    static final Duration PW_RETENTION = Duration.ofSeconds(120);
    static final String[] OUTPUTS = {"kv-out", "tw-out", "ss-out", "pw-out"};
    static final String[] STORES = {"kv", "tw", "ss", "pw"};

    private RoundTripApp() {
    }

    public static void main(String[] args) throws Exception {
        BrokerMain.haltWhenParentDies();
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        dev.kstate.streams.CapturedLogs.forward(l -> {
            if (!l.startsWith("DEBUG") && !l.startsWith("TRACE")) {
                EosApp.out("LOG " + l.replace('\n', ' '));
            }
        });
        String t = a.get("topics");
        boolean kstate = a.get("stores").equals("kstate");
        boolean eos = a.get("guarantee").equals("eos");
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, a.get("app"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, a.get("state"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, eos ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE);
        if (eos) {
            p.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, true);
        }
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, a.getOrDefault("commit.ms", "200"));
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 3000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 500);
        // static membership: the restarted instance takes its tasks back without a session timeout
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), "i1");
        if (kstate) {
            p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class);
        }

        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> in = b.stream(t + EosApp.INPUT, Consumed.with(Serdes.String(), Serdes.String()));
        KGroupedStream<String, String> g = in.groupByKey();
        g.count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("kv")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream().to(t + "kv-out", Produced.with(Serdes.String(), Serdes.Long()));
        g.windowedBy(TimeWindows.ofSizeAndGrace(WINDOW, GRACE))
            .aggregate(() -> 0L, (k, v, agg) -> agg + Long.parseLong(v),
                Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("tw")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
            .to(t + "tw-out", Produced.with(Serdes.String(), Serdes.Long()));
        g.windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP, GRACE))
            .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("ss")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "-" + wk.window().end())
            .to(t + "ss-out", Produced.with(Serdes.String(), Serdes.Long()));
        WindowBytesStoreSupplier pw = kstate
            ? KstateStores.persistentWindowStore("pw", PW_RETENTION, WINDOW, false)
            : Stores.persistentWindowStore("pw", PW_RETENTION, WINDOW, false);
        b.addStateStore(Stores.windowStoreBuilder(pw, Serdes.String(), Serdes.Long()).withCachingDisabled());
        in.process(WindowCounter::new, "pw").to(t + "pw-out", Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(b.build(), p, new Clients());
        streams.setStateListener((n, o) -> {
            EosApp.out("STATE " + n + " " + o + " " + EosApp.sinceStart());
            if (n == KafkaStreams.State.RUNNING) {
                EosApp.out("RUNNING " + EosApp.sinceStart());
            }
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                EosApp.out("RESTORE_START " + store + " " + tp.topic() + " " + tp.partition() + " " + start + " " + end);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long restored) {
                EosApp.out("RESTORE_END " + store + " " + tp.topic() + " " + tp.partition() + " " + restored + " 0");
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            EosApp.out("ERROR " + e.toString().replace('\n', ' '));
            e.printStackTrace();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        File stop = new File(a.get("ctl"), "stop");
        while (!stop.exists()) {
            if (streams.state() == KafkaStreams.State.ERROR || streams.state() == KafkaStreams.State.NOT_RUNNING) {
                EosApp.out("ERROR streams went " + streams.state());
                System.exit(2);
            }
            Thread.sleep(50);
        }
        streams.close(Duration.ofSeconds(60));
        EosApp.out("CLOSED " + EosApp.sinceStart());
        System.exit(0);
    }

    /** Counts records per key and window in the plain window store {@code pw}: fetch, then put. */
    static final class WindowCounter implements Processor<String, String, String, Long> {
        private ProcessorContext<String, Long> context;
        private WindowStore<String, Long> store;

        @Override
        public void init(ProcessorContext<String, Long> context) {
            this.context = context;
            this.store = context.getStateStore("pw");
        }

        @Override
        public void process(Record<String, String> r) {
            long start = r.timestamp() - r.timestamp() % WINDOW.toMillis();
            Long prev = store.fetch(r.key(), start);
            long n = (prev == null ? 0 : prev) + 1;
            store.put(r.key(), n, start);
            context.forward(r.withKey(r.key() + "@" + start).withValue(n));
        }
    }

    /**
     * Kafka's clients; a commit is reported as {@code COMMIT_DONE n} once it is done: the
     * producer's transaction commit (exactly-once) or the main consumer's offset commit
     * (at-least-once).
     */
    static final class Clients implements KafkaClientSupplier {
        private final AtomicLong commits = new AtomicLong();

        @Override
        public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
            return new KafkaProducer<byte[], byte[]>(config, new ByteArraySerializer(), new ByteArraySerializer()) {
                @Override
                public void commitTransaction() {
                    super.commitTransaction();
                    EosApp.out("COMMIT_DONE " + commits.incrementAndGet());
                }
            };
        }

        @Override
        public org.apache.kafka.clients.admin.Admin getAdmin(Map<String, Object> config) {
            return org.apache.kafka.clients.admin.Admin.create(config);
        }

        @Override
        public Consumer<byte[], byte[]> getConsumer(Map<String, Object> config) {
            return new KafkaConsumer<byte[], byte[]>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer()) {
                @Override
                public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
                    super.commitSync(offsets);
                    EosApp.out("COMMIT_DONE " + commits.incrementAndGet());
                }

                @Override
                public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
                    super.commitSync(offsets, timeout);
                    EosApp.out("COMMIT_DONE " + commits.incrementAndGet());
                }
            };
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
