package dev.kstate.eos;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;

import dev.kstate.streams.KstateStores;
import java.io.File;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.query.FailureReason;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.StateQueryRequest;
import org.apache.kafka.streams.query.StateQueryResult;
import org.apache.kafka.streams.query.WindowKeyQuery;
import org.apache.kafka.streams.query.WindowRangeQuery;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreType;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlySessionStore;
import org.apache.kafka.streams.state.ReadOnlyWindowStore;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;
import org.junit.Test;

/**
 * Interactive queries on window and session stores of RUNNING applications on a real Kafka 4.4
 * broker: two {@link KafkaStreams} instances in this JVM (their own application ids and state
 * directories, {@code exactly_once_v2}, {@code enable.transactional.statestores=true}) run the
 * same topology over the same input, one on kstate's stores, the other on Kafka's own RocksDB
 * stores. Every {@code ReadOnlyWindowStore} / {@code ReadOnlySessionStore} method through
 * {@code KafkaStreams#store} and IQv2 {@code WindowKeyQuery} / {@code WindowRangeQuery} through
 * {@code KafkaStreams#query}, at the default isolation level and at both explicit levels, must
 * answer identically on both applications, and the counts, values, timestamps and positions
 * must equal a model computed from the input topic: the committed model for
 * {@code READ_COMMITTED}, everything processed for {@code READ_UNCOMMITTED}.
 *
 * <p>Commits are made deterministic so that both applications commit at the same input
 * offsets: the commit interval is longer than the test, and a {@code COMMIT} record in the input
 * makes the topology call {@code ProcessorContext#commit()}. A {@code GATE} record blocks the
 * stream thread inside {@code process()}, so the queries then run while records processed after
 * the last commit are in the stores, uncommitted.
 */
public class RealBrokerWindowQueryTest extends BrokerSuite {
    static final int PARTITIONS = 4;
    static final int KEYS = 40;
    static final int RECORDS = Integer.getInteger("kstate.eos.iq.records", 3_000);
    static final int GATED_RECORDS = 400;
    static final int QUERY_SETS = Integer.getInteger("kstate.eos.iq.sets", 8);
    /**
     * Where the input's event times start: the previous full hour. Not a fixed date: the broker
     * deletes records older than its retention (7 days) by their timestamps, input included.
     */
    static final long T0 = System.currentTimeMillis() / 3_600_000 * 3_600_000 - 3_600_000;
    static final long HOP_SIZE = 60_000;
    static final long HOP_ADVANCE = 20_000;
    static final long HOP_GRACE = 30_000;
    static final long PLAIN_SIZE = 30_000;
    static final long GAP = 5_000;
    static final long SESSION_GRACE = 20_000;
    static final Duration RETENTION = Duration.ofHours(1);
    static final String TOPIC = "wiq.input";
    static final String COMMIT = "COMMIT";
    static final String GATE = "GATE";
    /** Level {@code null}: the composite store as returned, or an IQv2 request without a level. */
    static final IsolationLevel[] LEVELS = {null, IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED};


    // ----- the application ----------------------------------------------------------------------

    /** Blocks the stream thread on a {@code GATE} record until released. */
    static final class Gate {
        final CountDownLatch arrived = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        /** Set when the test never opened the gate (the stream thread went on after 120 s). */
        volatile boolean timedOut;
    }

    /** Swallows the control records: {@code COMMIT} requests a commit, {@code GATE} blocks. */
    static final class ControlProcessor implements FixedKeyProcessor<String, String, String> {
        private final Gate gate;
        private FixedKeyProcessorContext<String, String> context;

        ControlProcessor(Gate gate) {
            this.gate = gate;
        }

        @Override
        public void init(FixedKeyProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<String, String> record) {
            if (COMMIT.equals(record.value())) {
                context.commit();
            } else if (GATE.equals(record.value())) {
                gate.arrived.countDown();
                try {
                    if (!gate.release.await(120, TimeUnit.SECONDS)) {
                        gate.timedOut = true;
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            } else {
                context.forward(record);
            }
        }
    }

    /** Puts every value into the plain window store (duplicates kept) at its 30 s window. */
    static final class PlainWriter implements Processor<String, String, Void, Void> {
        private WindowStore<String, Long> store;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            store = context.getStateStore("plain");
        }

        @Override
        public void process(Record<String, String> record) {
            long t = record.timestamp();
            store.put(record.key(), Long.parseLong(record.value()), t - t % PLAIN_SIZE);
        }
    }

    /** One running application: kstate's stores or Kafka's. */
    static final class App implements AutoCloseable {
        final String name;
        final String appId;
        final Gate gate = new Gate();
        final List<String> errors = Collections.synchronizedList(new ArrayList<>());
        final KafkaStreams streams;

        App(String name, boolean kstate) {
            this.name = name;
            this.appId = "wiq-" + name;
            Topology topology = topology(kstate, gate);
            assertEquals("one sub-topology (no repartition): " + topology.describe(), 1,
                topology.describe().subtopologies().size());
            Properties p = new Properties();
            p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
            p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
            p.put(StreamsConfig.STATE_DIR_CONFIG, new File(base, name + "-state").getAbsolutePath());
            p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
            p.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, true);
            // commits only when a COMMIT record asks: the interval is longer than the test (the
            // transaction timeout must not be shorter, and the broker allows at most 15 minutes)
            p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 600_000);
            p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 900_000);
            p.put(StreamsConfig.DEFAULT_INTERACTIVE_QUERY_ISOLATION_LEVEL_CONFIG, "READ_COMMITTED");
            // no record cache: writes go to the stores (WindowQueryDifferentialTest covers Kafka's
            // caching layers over kstate's stores; with event times near now, Kafka's caching session
            // store walks the cache segment by segment from time 0 for fetch(key), about a million
            // lookups per call)
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
            p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG), 300_000);
            streams = new KafkaStreams(topology, p);
            streams.setUncaughtExceptionHandler(e -> {
                errors.add(e.toString());
                e.printStackTrace();
                return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            streams.start();
        }

        void awaitRunning(long timeoutMs) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (streams.state() != KafkaStreams.State.RUNNING) {
                assertTrue(name + " RUNNING within " + timeoutMs + " ms (state " + streams.state() + ", errors "
                    + errors + ")", System.currentTimeMillis() < deadline && errors.isEmpty());
                Thread.sleep(50);
            }
        }

        <T> T store(String store, QueryableStoreType<T> type) {
            return streams.store(StoreQueryParameters.fromNameAndType(store, type));
        }

        <T> T store(String store, QueryableStoreType<T> type, int partition) {
            return streams.store(StoreQueryParameters.fromNameAndType(store, type).withPartition(partition));
        }

        @Override
        public void close() {
            gate.release.countDown();
            streams.close(Duration.ofSeconds(60));
        }
    }

    static Topology topology(boolean kstate, Gate gate) {
        WindowBytesStoreSupplier hop = kstate
            ? KstateStores.persistentTimestampedWindowStore("hop", RETENTION, Duration.ofMillis(HOP_SIZE), false)
            : Stores.persistentTimestampedWindowStore("hop", RETENTION, Duration.ofMillis(HOP_SIZE), false);
        WindowBytesStoreSupplier plain = kstate
            ? KstateStores.persistentWindowStore("plain", RETENTION, Duration.ofMillis(PLAIN_SIZE), true)
            : Stores.persistentWindowStore("plain", RETENTION, Duration.ofMillis(PLAIN_SIZE), true);
        SessionBytesStoreSupplier sessions = kstate
            ? KstateStores.persistentSessionStore("sessions", RETENTION)
            : Stores.persistentSessionStore("sessions", RETENTION);
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(Stores.windowStoreBuilder(plain, Serdes.String(), Serdes.Long()).withCachingDisabled());
        KStream<String, String> in = b.stream(TOPIC, Consumed.with(Serdes.String(), Serdes.String()))
            .processValues(() -> new ControlProcessor(gate));
        KGroupedStream<String, String> grouped = in.groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(HOP_SIZE), Duration.ofMillis(HOP_GRACE))
                .advanceBy(Duration.ofMillis(HOP_ADVANCE)))
            .count(Materialized.<String, Long>as(hop).withKeySerde(Serdes.String()).withValueSerde(Serdes.Long())
                .withCachingDisabled());
        grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(GAP), Duration.ofMillis(SESSION_GRACE)))
            .count(Materialized.<String, Long>as(sessions).withKeySerde(Serdes.String()).withValueSerde(Serdes.Long())
                .withCachingDisabled());
        in.process(PlainWriter::new, "plain");
        return b.build();
    }

    // ----- the input ----------------------------------------------------------------------------

    static String key(int i) {
        return String.format("k%03d", i);
    }

    /** Key i lives on partition i % 4 (the producer names the partition). */
    static int partitionOf(String key) {
        return Integer.parseInt(key.substring(1)) % PARTITIONS;
    }

    /** Sends records as one producer transaction, aborted and sent again if a send fails. */
    static void produce(List<ProducerRecord<String, String>> records) {
        for (int attempt = 1; ; attempt++) {
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "wiq-input");
            p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
                producer.initTransactions();
                producer.beginTransaction();
                for (ProducerRecord<String, String> r : records) {
                    producer.send(r);
                }
                producer.commitTransaction();
                return;
            } catch (org.apache.kafka.common.KafkaException e) {
                if (attempt == 3) {
                    throw new IllegalStateException("could not produce the input", e);
                }
                System.out.println("input transaction failed, producing it again: " + e);
            }
        }
    }

    static ProducerRecord<String, String> record(String key, long ts, String value) {
        return new ProducerRecord<>(TOPIC, partitionOf(key), ts, key, value);
    }

    static ProducerRecord<String, String> control(int partition, long ts, String what) {
        return new ProducerRecord<>(TOPIC, partition, ts, "control", what);
    }

    // ----- the model ----------------------------------------------------------------------------

    /**
     * What the three stores hold after the given input records, computed as Kafka's windowed and
     * session aggregations compute it: per partition (task) in offset order, each with its own
     * observed stream time, late records dropped past the grace period, sessions merged.
     */
    static final class Model {
        /** key -> window start -> {count, max timestamp} */
        final Map<String, TreeMap<Long, long[]>> hop = new TreeMap<>();
        /** key -> window start -> values in put order */
        final Map<String, TreeMap<Long, List<Long>>> plain = new TreeMap<>();
        /** key -> session start -> {end, count} */
        final Map<String, TreeMap<Long, long[]>> sessions = new TreeMap<>();
        /** store -> partition -> offset of the last record that wrote to it */
        final Map<String, Map<Integer, Long>> positions = new TreeMap<>();
        /** partition -> offset after its last input record (control records included) */
        final Map<Integer, Long> ends = new TreeMap<>();
        final long[] hopTime = new long[PARTITIONS];
        final long[] sessionTime = new long[PARTITIONS];
        long hopDropped;
        long sessionDropped;
        long sessionMerges;

        Model(List<ConsumerRecord<byte[], byte[]>> input, Map<Integer, Long> limits) {
            java.util.Arrays.fill(hopTime, -1);
            java.util.Arrays.fill(sessionTime, -1);
            for (ConsumerRecord<byte[], byte[]> r : input) {
                ends.merge(r.partition(), r.offset() + 1, Math::max);
                String value = EosRig.str(r.value());
                if (value.equals(COMMIT) || value.equals(GATE) || r.offset() >= limits.getOrDefault(r.partition(), Long.MAX_VALUE)) {
                    continue;
                }
                apply(r.partition(), r.offset(), EosRig.str(r.key()), Long.parseLong(value), r.timestamp());
            }
        }

        private void apply(int p, long offset, String key, long value, long ts) {
            // hopping count (KStreamWindowAggregate)
            hopTime[p] = Math.max(hopTime[p], ts);
            long close = hopTime[p] - HOP_GRACE;
            boolean put = false;
            for (long start = Math.max(0, ts - HOP_SIZE + HOP_ADVANCE) / HOP_ADVANCE * HOP_ADVANCE; start <= ts; start += HOP_ADVANCE) {
                if (start + HOP_SIZE > close) {
                    long[] cell = hop.computeIfAbsent(key, k -> new TreeMap<>()).get(start);
                    hop.get(key).put(start, cell == null ? new long[] {1, ts} : new long[] {cell[0] + 1, Math.max(ts, cell[1])});
                    put = true;
                } else {
                    hopDropped++;
                }
            }
            if (put) {
                position("hop", p, offset);
            }
            // the plain store (PlainWriter)
            plain.computeIfAbsent(key, k -> new TreeMap<>()).computeIfAbsent(ts - ts % PLAIN_SIZE, s -> new ArrayList<>()).add(value);
            position("plain", p, offset);
            // session count (KStreamSessionWindowAggregate)
            sessionTime[p] = Math.max(sessionTime[p], ts);
            long sessionClose = sessionTime[p] - SESSION_GRACE - GAP;
            TreeMap<Long, long[]> mine = sessions.computeIfAbsent(key, k -> new TreeMap<>());
            long start = ts;
            long end = ts;
            long count = 0;
            List<Long> merged = new ArrayList<>();
            for (Map.Entry<Long, long[]> s : mine.entrySet()) {
                if (s.getValue()[0] >= ts - GAP && s.getKey() <= ts + GAP) {
                    merged.add(s.getKey());
                    start = Math.min(start, s.getKey());
                    end = Math.max(end, s.getValue()[0]);
                    count += s.getValue()[1];
                }
            }
            if (end < sessionClose) {
                sessionDropped++;
                return;
            }
            if (merged.size() > 1 || (merged.size() == 1 && (start != ts || end != ts))) {
                sessionMerges++;
            }
            merged.forEach(mine::remove);
            mine.put(start, new long[] {end, count + 1});
            position("sessions", p, offset);
        }

        private void position(String store, int p, long offset) {
            positions.computeIfAbsent(store, s -> new TreeMap<>()).put(p, offset);
        }

        /** {@code key@start -> count@timestamp} (or {@code count} without timestamps) */
        Map<String, String> hopContents(boolean timestamps) {
            Map<String, String> m = new TreeMap<>();
            hop.forEach((k, w) -> w.forEach((s, c) -> m.put(k + "@" + s, c[0] + (timestamps ? "@" + c[1] : ""))));
            return m;
        }

        Map<String, String> plainContents() {
            Map<String, String> m = new TreeMap<>();
            plain.forEach((k, w) -> w.forEach((s, v) -> m.put(k + "@" + s, join(v))));
            return m;
        }

        Map<String, String> sessionContents() {
            Map<String, String> m = new TreeMap<>();
            sessions.forEach((k, w) -> w.forEach((s, c) -> m.put(k + "@" + s + "-" + c[0], Long.toString(c[1]))));
            return m;
        }

        /** hop.fetch(key, from, to): windows in start order. */
        String hopFetch(String key, long from, long to) {
            List<String> out = new ArrayList<>();
            hop.getOrDefault(key, new TreeMap<>()).subMap(from, true, Math.max(from, to), true)
                .forEach((s, c) -> {
                    if (to >= from) {
                        out.add(s + "=" + c[0] + "@" + c[1]);
                    }
                });
            return out.toString();
        }

        /** plain.fetch(key, from, to): windows in start order, duplicates in put order. */
        String plainFetch(String key, long from, long to) {
            List<String> out = new ArrayList<>();
            if (to >= from) {
                plain.getOrDefault(key, new TreeMap<>()).subMap(from, true, to, true)
                    .forEach((s, v) -> v.forEach(x -> out.add(s + "=" + x)));
            }
            return out.toString();
        }

        /** sessions.findSessions(key, earliestEnd, latestStart), as a sorted set. */
        String findSessions(String key, long earliestEnd, long latestStart) {
            Map<String, String> m = new TreeMap<>();
            sessions.getOrDefault(key, new TreeMap<>()).forEach((s, c) -> {
                if (c[0] >= earliestEnd && s <= latestStart) {
                    m.put(key + "@" + s + "-" + c[0], Long.toString(c[1]));
                }
            });
            return m.toString();
        }

        Position position(String store, int partition) {
            Long off = positions.getOrDefault(store, Map.of()).get(partition);
            return off == null ? Position.emptyPosition() : Position.emptyPosition().withComponent(TOPIC, partition, off);
        }
    }

    static String join(List<Long> values) {
        StringBuilder sb = new StringBuilder();
        for (Long v : values) {
            sb.append(sb.length() == 0 ? "" : ",").append(v);
        }
        return sb.toString();
    }

    // ----- rendering answers --------------------------------------------------------------------

    static String attempt(Supplier<String> s) {
        try {
            return s.get();
        } catch (RuntimeException e) {
            return "THROWS " + e.getClass().getName();
        }
    }

    static String show(Object value) {
        if (value instanceof ValueAndTimestamp) {
            ValueAndTimestamp<?> vt = (ValueAndTimestamp<?>) value;
            return vt.value() + "@" + vt.timestamp();
        }
        if (value instanceof Windowed) {
            Windowed<?> w = (Windowed<?>) value;
            return w.key() + "@" + w.window().start() + "-" + w.window().end();
        }
        return String.valueOf(value);
    }

    static String drain(KeyValueIterator<?, ?> it) {
        List<String> entries = new ArrayList<>();
        try (KeyValueIterator<?, ?> i = it) {
            while (i.hasNext()) {
                KeyValue<?, ?> kv = i.next();
                entries.add(show(kv.key) + "=" + show(kv.value));
            }
        }
        return entries.toString();
    }

    /**
     * An iterator of Kafka's composite stores ({@code KafkaStreams#store} without a partition):
     * the per-task iterators one after the other, in the order the stream thread lists its
     * tasks, which differs between two applications. The entries are put back in partition
     * order (a stable sort: each partition's own order is kept and compared).
     */
    static String drainComposite(KeyValueIterator<? extends Windowed<String>, ?> it) {
        List<KeyValue<Integer, String>> entries = new ArrayList<>();
        try (KeyValueIterator<? extends Windowed<String>, ?> i = it) {
            while (i.hasNext()) {
                KeyValue<? extends Windowed<String>, ?> kv = i.next();
                entries.add(KeyValue.pair(partitionOf(kv.key.key()), show(kv.key) + "=" + show(kv.value)));
            }
        }
        List<String> out = new ArrayList<>();
        entries.stream().sorted(java.util.Comparator.comparing(kv -> kv.key)).forEach(kv -> out.add(kv.value));
        return out.toString();
    }

    /**
     * Windowed entries as {@code key@start -> value} ({@code key@start-end} for sessions),
     * duplicates joined in iteration order.
     */
    static Map<String, String> contents(KeyValueIterator<Windowed<String>, ?> it, boolean sessions) {
        Map<String, String> m = new TreeMap<>();
        try (KeyValueIterator<Windowed<String>, ?> i = it) {
            while (i.hasNext()) {
                KeyValue<Windowed<String>, ?> kv = i.next();
                String k = kv.key.key() + "@" + kv.key.window().start() + (sessions ? "-" + kv.key.window().end() : "");
                m.merge(k, show(kv.value), (a, b) -> a + "," + b);
            }
        }
        return m;
    }

    static String level(IsolationLevel level) {
        return level == null ? "default" : level.name();
    }

    static <V> ReadOnlyWindowStore<String, V> view(ReadOnlyWindowStore<String, V> store, IsolationLevel level) {
        return level == null ? store : store.readOnly(level);
    }

    static <V> ReadOnlySessionStore<String, V> view(ReadOnlySessionStore<String, V> store, IsolationLevel level) {
        return level == null ? store : store.readOnly(level);
    }

    /** IQv2 over every partition of the application: partition -> result (or failure) and position. */
    static <R> Map<Integer, QueryResult<R>> v2(App app, String store, Query<R> query, IsolationLevel level) {
        return v2(app, store, query, level, PositionBound.unbounded());
    }

    static <R> Map<Integer, QueryResult<R>> v2(App app, String store, Query<R> query, IsolationLevel level,
                                               PositionBound bound) {
        StateQueryRequest<R> request = StateQueryRequest.inStore(store).withQuery(query).withPositionBound(bound);
        if (level != null) {
            request = request.withIsolationLevel(level);
        }
        StateQueryResult<R> result = app.streams.query(request);
        return new TreeMap<>(result.getPartitionResults());
    }

    static <R> String showV2(Map<Integer, QueryResult<R>> results) {
        StringBuilder sb = new StringBuilder();
        results.forEach((p, r) -> {
            sb.append(" p").append(p).append(':');
            if (!r.isSuccess()) {
                sb.append("FAILED ").append(r.getFailureReason());
            } else {
                Object v = r.getResult();
                sb.append(v instanceof KeyValueIterator ? drain((KeyValueIterator<?, ?>) v) : show(v));
            }
            sb.append(" at ").append(r.getPosition());
        });
        return sb.toString();
    }

    // ----- the queries --------------------------------------------------------------------------

    /** One random set of query arguments. */
    static final class Args {
        final String k;
        final String kf;
        final String kt;
        final long from;
        final long to;
        final long hopTime;
        final long plainTime;
        /** a session of the key (when it has any) */
        final long sessionStart;
        final long sessionEnd;

        Args(Random rnd, Model full, long span) {
            k = key(rnd.nextInt(KEYS + 2)); // two keys without data
            kf = rnd.nextInt(6) == 0 ? null : key(rnd.nextInt(KEYS));
            kt = rnd.nextInt(6) == 0 ? null : key(rnd.nextInt(KEYS));
            from = T0 - 60_000 + (long) (rnd.nextDouble() * (span + 120_000));
            to = rnd.nextInt(8) == 0 ? from - 1 - rnd.nextInt(60_000) : from + rnd.nextInt(240_000);
            hopTime = pick(rnd, full.hop.get(k), HOP_ADVANCE);
            plainTime = pick(rnd, full.plain.get(k), PLAIN_SIZE);
            TreeMap<Long, long[]> sessions = full.sessions.get(k);
            if (sessions != null && !sessions.isEmpty()) {
                List<Long> starts = new ArrayList<>(sessions.keySet());
                sessionStart = starts.get(rnd.nextInt(starts.size()));
                sessionEnd = sessions.get(sessionStart)[0];
            } else {
                sessionStart = from;
                sessionEnd = from + GAP;
            }
        }

        /** A window start the key has (mostly), else a random aligned time. */
        private long pick(Random rnd, TreeMap<Long, ?> windows, long align) {
            if (windows != null && !windows.isEmpty() && rnd.nextInt(5) != 0) {
                List<Long> starts = new ArrayList<>(windows.keySet());
                return starts.get(rnd.nextInt(starts.size()));
            }
            long t = from - from % align;
            return t;
        }

        Instant fi() {
            return Instant.ofEpochMilli(from);
        }

        Instant ti() {
            return Instant.ofEpochMilli(to);
        }

        @Override
        public String toString() {
            return "(" + k + "," + kf + "," + kt + "," + from + "," + to + "," + hopTime + "," + plainTime + "," + sessionStart
                + "," + sessionEnd + ") ";
        }
    }

    static <V> void windowQueries(Map<String, String> out, String q, ReadOnlyWindowStore<String, V> s, Args a, long t) {
        out.put(q + "fetch(k,t)", attempt(() -> show(s.fetch(a.k, t))));
        out.put(q + "fetch(k,from,to)", attempt(() -> drain(s.fetch(a.k, a.fi(), a.ti()))));
        out.put(q + "backwardFetch(k,from,to)", attempt(() -> drain(s.backwardFetch(a.k, a.fi(), a.ti()))));
        out.put(q + "fetch(kf,kt,from,to)", attempt(() -> drainComposite(s.fetch(a.kf, a.kt, a.fi(), a.ti()))));
        out.put(q + "backwardFetch(kf,kt,from,to)", attempt(() -> drainComposite(s.backwardFetch(a.kf, a.kt, a.fi(), a.ti()))));
        out.put(q + "fetchAll(from,to)", attempt(() -> drainComposite(s.fetchAll(a.fi(), a.ti()))));
        out.put(q + "backwardFetchAll(from,to)", attempt(() -> drainComposite(s.backwardFetchAll(a.fi(), a.ti()))));
    }

    /** The window store methods without arguments: once per level, not per query set. */
    static <V> void windowScans(Map<String, String> out, String q, ReadOnlyWindowStore<String, V> s) {
        out.put(q + "all", attempt(() -> drainComposite(s.all())));
        out.put(q + "backwardAll", attempt(() -> drainComposite(s.backwardAll())));
    }

    /**
     * The session store methods whose answer Kafka's composite store takes from the FIRST task
     * store in the stream thread's task order (not from every store): {@code findSessions} and
     * {@code backwardFindSessions} over a key range return the first non-empty store's sessions,
     * and {@code fetchSession} the first store's answer even when that is null. The task order
     * differs between two applications, so these are compared per partition
     * ({@code StoreQueryParameters#withPartition}), and on the composite store checked to be
     * one of its own partitions' answers.
     */
    static <V> Map<String, String> firstStoreSessionQueries(ReadOnlySessionStore<String, V> s, Args a) {
        long e = a.from;
        long l = a.to;
        Map<String, String> out = new LinkedHashMap<>();
        out.put("findSessions(kf,kt,e,l)", attempt(() -> drain(s.findSessions(a.kf, a.kt, e, l))));
        out.put("findSessions(kf,kt,Instant,Instant)", attempt(() -> drain(s.findSessions(a.kf, a.kt, a.fi(), a.ti()))));
        out.put("backwardFindSessions(kf,kt,e,l)", attempt(() -> drain(s.backwardFindSessions(a.kf, a.kt, e, l))));
        out.put("backwardFindSessions(kf,kt,Instant,Instant)",
            attempt(() -> drain(s.backwardFindSessions(a.kf, a.kt, a.fi(), a.ti()))));
        // fetchSession on one of the key's sessions (both signatures), one millisecond off it,
        // and on the query's bounds
        out.put("fetchSession(k,start,end)", attempt(() -> show(s.fetchSession(a.k, a.sessionStart, a.sessionEnd))));
        out.put("fetchSession(k,Instant,Instant)", attempt(() -> show(s.fetchSession(a.k,
            Instant.ofEpochMilli(a.sessionStart), Instant.ofEpochMilli(a.sessionEnd)))));
        out.put("fetchSession(k,start+1,end)", attempt(() -> show(s.fetchSession(a.k, a.sessionStart + 1, a.sessionEnd))));
        out.put("fetchSession(k,e,l)", attempt(() -> show(s.fetchSession(a.k, e, l))));
        return out;
    }

    static <V> void sessionQueries(Map<String, String> out, String q, ReadOnlySessionStore<String, V> s, Args a) {
        long e = a.from;
        long l = a.to;
        out.put(q + "findSessions(k,e,l)", attempt(() -> drain(s.findSessions(a.k, e, l))));
        out.put(q + "findSessions(k,Instant,Instant)", attempt(() -> drain(s.findSessions(a.k, a.fi(), a.ti()))));
        out.put(q + "backwardFindSessions(k,e,l)", attempt(() -> drain(s.backwardFindSessions(a.k, e, l))));
        out.put(q + "backwardFindSessions(k,Instant,Instant)", attempt(() -> drain(s.backwardFindSessions(a.k, a.fi(), a.ti()))));
        out.put(q + "fetch(k)", attempt(() -> drain(s.fetch(a.k))));
        out.put(q + "backwardFetch(k)", attempt(() -> drain(s.backwardFetch(a.k))));
        out.put(q + "fetch(kf,kt)", attempt(() -> drainComposite(s.fetch(a.kf, a.kt))));
        out.put(q + "backwardFetch(kf,kt)", attempt(() -> drainComposite(s.backwardFetch(a.kf, a.kt))));
    }

    /** Every query of every set, through KafkaStreams#store and KafkaStreams#query. */
    static Map<String, String> answers(App app, List<Args> sets) {
        ReadOnlyWindowStore<String, ValueAndTimestamp<Long>> hopTs = app.store("hop", QueryableStoreTypes.timestampedWindowStore());
        ReadOnlyWindowStore<String, Long> hopPlain = app.store("hop", QueryableStoreTypes.windowStore());
        ReadOnlyWindowStore<String, Long> plain = app.store("plain", QueryableStoreTypes.windowStore());
        ReadOnlySessionStore<String, Long> sessions = app.store("sessions", QueryableStoreTypes.sessionStore());
        List<ReadOnlySessionStore<String, Long>> sessionsOf = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            sessionsOf.add(app.store("sessions", QueryableStoreTypes.sessionStore(), p));
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (IsolationLevel level : LEVELS) {
            windowScans(out, level(level) + " hop(timestampedWindowStore) ", view(hopTs, level));
            windowScans(out, level(level) + " hop(windowStore) ", view(hopPlain, level));
            windowScans(out, level(level) + " plain(windowStore) ", view(plain, level));
        }
        for (int i = 0; i < sets.size(); i++) {
            Args a = sets.get(i);
            for (IsolationLevel level : LEVELS) {
                String q = "#" + i + " " + a + level(level) + " ";
                windowQueries(out, q + "hop(timestampedWindowStore) ", view(hopTs, level), a, a.hopTime);
                windowQueries(out, q + "hop(windowStore) ", view(hopPlain, level), a, a.hopTime);
                windowQueries(out, q + "plain(windowStore) ", view(plain, level), a, a.plainTime);
                sessionQueries(out, q + "sessions(sessionStore) ", view(sessions, level), a);
                Map<String, List<String>> byPartition = new LinkedHashMap<>();
                for (int p = 0; p < PARTITIONS; p++) {
                    for (Map.Entry<String, String> e : firstStoreSessionQueries(view(sessionsOf.get(p), level), a).entrySet()) {
                        out.put(q + "sessions(sessionStore, partition " + p + ") " + e.getKey(), e.getValue());
                        byPartition.computeIfAbsent(e.getKey(), x -> new ArrayList<>()).add(e.getValue());
                    }
                }
                for (Map.Entry<String, String> e : firstStoreSessionQueries(view(sessions, level), a).entrySet()) {
                    // fetchSession: the first store's answer; findSessions: the first non-empty one
                    List<String> candidates = byPartition.get(e.getKey());
                    boolean ok = e.getKey().startsWith("fetchSession") || !e.getValue().equals("[]")
                        ? candidates.contains(e.getValue()) : candidates.stream().allMatch("[]"::equals);
                    out.put(q + "sessions(sessionStore) " + e.getKey() + " is one partition's answer",
                        ok ? "yes" : e.getValue() + " not in " + candidates);
                }
                out.put(q + "v2 hop WindowKeyQuery", attempt(() -> showV2(v2(app, "hop",
                    WindowKeyQuery.withKeyAndWindowStartRange(a.k, a.fi(), a.ti()), level))));
                out.put(q + "v2 hop WindowRangeQuery.withWindowStartRange", attempt(() -> showV2(v2(app, "hop",
                    WindowRangeQuery.withWindowStartRange(a.fi(), a.ti()), level))));
                out.put(q + "v2 hop WindowRangeQuery.withKey", attempt(() -> showV2(v2(app, "hop",
                    WindowRangeQuery.withKey(a.k), level))));
                out.put(q + "v2 plain WindowKeyQuery", attempt(() -> showV2(v2(app, "plain",
                    WindowKeyQuery.withKeyAndWindowStartRange(a.k, a.fi(), a.ti()), level))));
                out.put(q + "v2 plain WindowRangeQuery.withWindowStartRange", attempt(() -> showV2(v2(app, "plain",
                    WindowRangeQuery.withWindowStartRange(a.fi(), a.ti()), level))));
                out.put(q + "v2 sessions WindowRangeQuery.withKey", attempt(() -> showV2(v2(app, "sessions",
                    WindowRangeQuery.withKey(a.k), level))));
                out.put(q + "v2 sessions WindowRangeQuery.withWindowStartRange", attempt(() -> showV2(v2(app, "sessions",
                    WindowRangeQuery.withWindowStartRange(a.fi(), a.ti()), level))));
            }
        }
        return out;
    }

    static void assertSameAnswers(Map<String, String> expected, Map<String, String> actual, String what) {
        assertEquals(what + ": same queries", expected.keySet(), actual.keySet());
        List<String> diffs = new ArrayList<>();
        for (String q : expected.keySet()) {
            if (!expected.get(q).equals(actual.get(q))) {
                diffs.add(q + ":\n  Kafka  " + excerpt(expected.get(q), actual.get(q)) + "\n  kstate "
                    + excerpt(actual.get(q), expected.get(q)));
            }
        }
        if (!diffs.isEmpty()) {
            diffs.forEach(d -> System.out.println("differs: " + d.substring(0, d.indexOf('\n'))));
        }
        assertTrue(what + ": kstate differs from Kafka in " + diffs.size() + " of " + expected.size() + " queries:\n"
            + String.join("\n", diffs.subList(0, Math.min(15, diffs.size()))), diffs.isEmpty());
    }

    /** Up to 300 characters of {@code s} from a little before where it first differs from {@code other}. */
    static String excerpt(String s, String other) {
        int i = 0;
        while (i < s.length() && i < other.length() && s.charAt(i) == other.charAt(i)) {
            i++;
        }
        int from = Math.max(0, i - 60);
        return (from > 0 ? "..." : "") + s.substring(from, Math.min(s.length(), from + 300))
            + (from + 300 < s.length() ? "..." : "") + " (" + s.length() + " chars)";
    }

    static void assertMap(Map<String, String> expected, Map<String, String> actual, String what) {
        if (expected.equals(actual)) {
            return;
        }
        List<String> diff = new ArrayList<>();
        java.util.Set<String> keys = new java.util.TreeSet<>(expected.keySet());
        keys.addAll(actual.keySet());
        for (String k : keys) {
            if (!Objects.equals(expected.get(k), actual.get(k)) && diff.size() < 10) {
                diff.add(k + ": expected " + expected.get(k) + ", got " + actual.get(k));
            }
        }
        throw new AssertionError(what + " differs from the model (" + expected.size() + " entries expected, "
            + actual.size() + " got): " + diff);
    }

    /**
     * Checks one application's answers against the models: {@code committed} for
     * {@code READ_COMMITTED} and the default level (the applications set
     * {@code default.interactive.query.isolation.level=READ_COMMITTED}), {@code full} for
     * {@code READ_UNCOMMITTED}. {@code QueryableStoreTypes.windowStore()} on the timestamped
     * store goes through Kafka's {@code GenericReadOnlyWindowStoreFacade}, which does not forward
     * {@code readOnly(level)}: it reads the writer's view at every level, on Kafka's stores too.
     *
     * @return the number of model checks made
     */
    static int checkModel(App app, Model committed, Model full, List<Args> sets) {
        ReadOnlyWindowStore<String, ValueAndTimestamp<Long>> hopTs = app.store("hop", QueryableStoreTypes.timestampedWindowStore());
        ReadOnlyWindowStore<String, Long> hopPlain = app.store("hop", QueryableStoreTypes.windowStore());
        ReadOnlyWindowStore<String, Long> plain = app.store("plain", QueryableStoreTypes.windowStore());
        ReadOnlySessionStore<String, Long> sessions = app.store("sessions", QueryableStoreTypes.sessionStore());
        int checks = 0;
        for (IsolationLevel level : LEVELS) {
            Model m = level == IsolationLevel.READ_UNCOMMITTED ? full : committed;
            String what = app.name + " " + level(level) + " ";
            assertMap(m.hopContents(true), contents(view(hopTs, level).all(), false), what + "hop all()");
            assertMap(m.hopContents(true), contents(view(hopTs, level).backwardAll(), false), what + "hop backwardAll()");
            assertMap(full.hopContents(false), contents(view(hopPlain, level).all(), false), what + "hop windowStore() all()");
            assertMap(m.plainContents(), contents(view(plain, level).all(), false), what + "plain all()");
            assertMap(m.sessionContents(), contents(view(sessions, level).fetch(null, null), true), what + "sessions fetch(null,null)");
            assertMap(m.hopContents(true), v2Contents(v2(app, "hop", WindowRangeQuery.withWindowStartRange(Instant.EPOCH,
                Instant.ofEpochMilli(T0 + 3_600_000)), level), false), what + "v2 hop WindowRangeQuery");
            assertMap(m.plainContents(), v2Contents(v2(app, "plain", WindowRangeQuery.withWindowStartRange(Instant.EPOCH,
                Instant.ofEpochMilli(T0 + 3_600_000)), level), false), what + "v2 plain WindowRangeQuery");
            checks += 7;
            // positions: each partition's store at the offset of the last record it took; a
            // position bound at everything processed is met where that position reaches it
            Position everything = Position.emptyPosition();
            for (int p = 0; p < PARTITIONS; p++) {
                everything = everything.merge(full.position("plain", p));
            }
            for (String store : new String[] {"hop", "plain", "sessions"}) {
                Query<?> q = store.equals("sessions") ? WindowRangeQuery.withKey(key(0))
                    : WindowRangeQuery.withWindowStartRange(Instant.EPOCH, Instant.EPOCH);
                Map<Integer, ? extends QueryResult<?>> results = v2(app, store, q, level);
                assertEquals(what + store + " partitions answering", PARTITIONS, results.size());
                results.forEach((p, r) -> {
                    assertTrue(what + store + " p" + p + " succeeds: " + r, r.isSuccess());
                    closeResult(r.getResult());
                    assertEquals(what + store + " IQv2 position of partition " + p, m.position(store, p), r.getPosition());
                });
                Map<Integer, ? extends QueryResult<?>> bounded = v2(app, store, q, level, PositionBound.at(everything));
                for (int p = 0; p < PARTITIONS; p++) {
                    QueryResult<?> r = bounded.get(p);
                    boolean reached = Objects.equals(m.positions.getOrDefault(store, Map.of()).get(p),
                        full.positions.getOrDefault("plain", Map.of()).get(p));
                    assertEquals(what + store + " p" + p + " bound at everything processed: " + r, reached, r.isSuccess());
                    if (r.isSuccess()) {
                        closeResult(r.getResult());
                    } else {
                        assertEquals(what + store + " p" + p, FailureReason.NOT_UP_TO_BOUND, r.getFailureReason());
                    }
                }
                checks += 2 * PARTITIONS;
            }
            for (Args a : sets) {
                String q = what + a;
                assertEquals(q + "hop fetch(k,from,to)", m.hopFetch(a.k, a.from, a.to),
                    attempt(() -> drain(view(hopTs, level).fetch(a.k, a.fi(), a.ti()))));
                assertEquals(q + "plain fetch(k,from,to)", m.plainFetch(a.k, a.from, a.to),
                    attempt(() -> drain(view(plain, level).fetch(a.k, a.fi(), a.ti()))));
                assertEquals(q + "sessions findSessions(k,e,l)", m.findSessions(a.k, a.from, a.to),
                    contents(view(sessions, level).findSessions(a.k, a.from, a.to), true).toString());
                assertEquals(q + "v2 sessions WindowRangeQuery.withKey", m.findSessions(a.k, Long.MIN_VALUE, Long.MAX_VALUE),
                    v2Contents(v2(app, "sessions", WindowRangeQuery.withKey(a.k), level), true).toString());
                long[] session = m.sessions.getOrDefault(a.k, new TreeMap<>()).get(a.sessionStart);
                assertEquals(q + "sessions fetchSession(k,start,end) on the key's partition",
                    session != null && session[0] == a.sessionEnd ? Long.valueOf(session[1]) : null,
                    view(app.store("sessions", QueryableStoreTypes.<String, Long>sessionStore(), partitionOf(a.k)), level)
                        .fetchSession(a.k, a.sessionStart, a.sessionEnd));
                checks += 5;
            }
        }
        return checks;
    }

    static void closeResult(Object result) {
        if (result instanceof KeyValueIterator) {
            ((KeyValueIterator<?, ?>) result).close();
        }
    }

    @SuppressWarnings("unchecked")
    static <R> Map<String, String> v2Contents(Map<Integer, QueryResult<R>> results, boolean sessions) {
        Map<String, String> m = new TreeMap<>();
        results.forEach((p, r) -> {
            assertTrue("IQv2 p" + p + " succeeds: " + r, r.isSuccess());
            m.putAll(contents((KeyValueIterator<Windowed<String>, ?>) r.getResult(), sessions));
        });
        return m;
    }

    /**
     * Checks both applications against the models, then their answers against each other; a
     * failure reports every part that failed (which application is wrong, and where they differ).
     */
    static int checkBoth(App kafka, App kstate, Model committed, Model full, List<Args> sets, Map<String, String> kafkaAnswers,
                         Map<String, String> kstateAnswers, String what) {
        List<String> failures = new ArrayList<>();
        int checks = 0;
        for (App app : new App[] {kafka, kstate}) {
            try {
                checks += checkModel(app, committed, full, sets);
            } catch (AssertionError e) {
                failures.add(what + ": " + app.name + " differs from the model: " + e.getMessage());
            }
        }
        try {
            assertSameAnswers(kafkaAnswers, kstateAnswers, what);
        } catch (AssertionError e) {
            failures.add(e.getMessage());
        }
        assertTrue(String.join("\n", failures), failures.isEmpty());
        return checks;
    }

    /** CPU time of this JVM (the test and both applications), or -1 where the JVM does not say. */
    static double processCpuSeconds() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean
            ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() / 1e9 : -1;
    }

    static void progress(long t0, String what) {
        System.out.printf("%.1f s: %s%n", (System.nanoTime() - t0) / 1e9, what);
    }

    // ----- waiting ------------------------------------------------------------------------------

    /** The application's committed input offsets, by partition. */
    static Map<Integer, Long> committedOffsets(App app) throws Exception {
        try (Admin admin = broker.admin()) {
            Map<TopicPartition, OffsetAndMetadata> m = admin.listConsumerGroupOffsets(app.appId)
                .partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
            Map<Integer, Long> out = new TreeMap<>();
            m.forEach((tp, o) -> {
                if (tp.topic().equals(TOPIC) && o != null) {
                    out.put(tp.partition(), o.offset());
                }
            });
            return out;
        }
    }

    /**
     * Waits until the application committed the whole input, and its stores' committed
     * positions (IQv2 at READ_COMMITTED) reached the model's: Kafka commits the stores right
     * after the transaction that commits the input offsets.
     */
    static void awaitCommitted(App app, Model model, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Map<Integer, Long> ends = model.ends;
        while (true) {
            assertTrue(app.name + " errors: " + app.errors, app.errors.isEmpty());
            Map<Integer, Long> done = committedOffsets(app);
            // the committed offset is past the last record, or also past the input transaction's marker
            boolean all = ends.entrySet().stream().allMatch(e -> done.getOrDefault(e.getKey(), -1L) >= e.getValue());
            if (all) {
                for (String store : new String[] {"hop", "plain", "sessions"}) {
                    Query<?> q = store.equals("sessions") ? WindowRangeQuery.withKey(key(0))
                        : WindowRangeQuery.withWindowStartRange(Instant.EPOCH, Instant.EPOCH);
                    for (Map.Entry<Integer, ? extends QueryResult<?>> e
                        : v2(app, store, q, IsolationLevel.READ_COMMITTED).entrySet()) {
                        closeResult(e.getValue().isSuccess() ? e.getValue().getResult() : null);
                        all &= model.position(store, e.getKey()).equals(e.getValue().getPosition());
                    }
                }
            }
            if (all) {
                return;
            }
            assertTrue(app.name + ": input committed within " + timeoutMs + " ms: committed " + done + ", ends " + ends
                + ", " + app.streams.metadataForLocalThreads(), System.currentTimeMillis() < deadline);
            Thread.sleep(100);
        }
    }

    // ----- the test -----------------------------------------------------------------------------

    /**
     * Phase 1: {@link #RECORDS} records (random keys, out-of-order timestamps over about ten
     * minutes, one in six late by up to 90 s) over 4 partitions and a COMMIT on each; both
     * applications commit all of it; every query at every level equals across the applications
     * and the model. Phase 2: {@link #GATED_RECORDS} more records on partition 0, then a GATE:
     * both stream threads block with those records processed and uncommitted; every query again
     * equals across the applications, READ_COMMITTED (and the default level) equals the phase 1
     * model, READ_UNCOMMITTED the model of everything. Phase 3: the gates open, a COMMIT on
     * partition 0 commits phase 2, and every level reads the full model.
     */
    @Test
    public void windowAndSessionQueriesOnRunningAppsMatchKafkaAndTheModel() throws Exception {
        long t0 = System.nanoTime();
        long seed = Long.getLong("kstate.eos.seed", System.nanoTime());
        System.out.println("window IQ seed " + seed + " (rerun with -Dkstate.eos.seed=" + seed + "), event times from " + T0);
        Random rnd = new Random(seed);
        broker.createTopics(Map.of(TOPIC, PARTITIONS));

        // phase 1 input
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        long t = T0;
        for (int i = 0; i < RECORDS; i++) {
            t += rnd.nextInt(400);
            long ts = rnd.nextInt(6) == 0 ? t - rnd.nextInt(90_000) : t;
            records.add(record(key(rnd.nextInt(KEYS)), ts, Integer.toString(1 + rnd.nextInt(9))));
        }
        for (int p = 0; p < PARTITIONS; p++) {
            records.add(control(p, t, COMMIT));
        }
        produce(records);
        long span = t - T0;

        try (App kafka = new App("kafka", false); App kstate = new App("kstate", true)) {
            kafka.awaitRunning(90_000);
            kstate.awaitRunning(90_000);
            List<ConsumerRecord<byte[], byte[]>> input = EosRig.readCommitted(broker, TOPIC);
            Model phase1 = new Model(input, Map.of());
            progress(t0, "both RUNNING");
            awaitCommitted(kafka, phase1, 60_000);
            awaitCommitted(kstate, phase1, 60_000);
            long settled = System.nanoTime();
            progress(t0, "phase 1 committed");
            assertTrue("late records dropped from hopping windows (" + phase1.hopDropped + ") and sessions ("
                + phase1.sessionDropped + "), sessions merged (" + phase1.sessionMerges + ")",
                phase1.hopDropped > 0 && phase1.sessionDropped > 0 && phase1.sessionMerges > 0);

            List<Args> sets = new ArrayList<>();
            for (int i = 0; i < QUERY_SETS; i++) {
                sets.add(new Args(rnd, phase1, span));
            }
            long q0 = System.nanoTime();
            Map<String, String> kafka1 = answers(kafka, sets);
            long q1 = System.nanoTime();
            Map<String, String> kstate1 = answers(kstate, sets);
            long q2 = System.nanoTime();
            int checks = checkBoth(kafka, kstate, phase1, phase1, sets, kafka1, kstate1, "phase 1 (all committed)");
            long q3 = System.nanoTime();
            progress(t0, "phase 1 checked");
            long empty = kafka1.values().stream().filter(v -> v.equals("[]")).count();
            assertTrue("most queries find data (" + empty + " empty of " + kafka1.size() + ")", empty < kafka1.size() / 3);

            // phase 2: uncommitted records on partition 0, then the gate
            List<ProducerRecord<String, String>> gated = new ArrayList<>();
            for (int i = 0; i < GATED_RECORDS; i++) {
                t += rnd.nextInt(400);
                long ts = rnd.nextInt(6) == 0 ? t - rnd.nextInt(90_000) : t;
                gated.add(record(key(PARTITIONS * rnd.nextInt(KEYS / PARTITIONS)), ts, Integer.toString(1 + rnd.nextInt(9))));
            }
            gated.add(control(0, t, GATE));
            produce(gated);
            for (App app : new App[] {kafka, kstate}) {
                assertTrue(app.name + " reaches the gate: " + app.errors, app.gate.arrived.await(60, TimeUnit.SECONDS));
            }
            progress(t0, "both at the gate");
            input = EosRig.readCommitted(broker, TOPIC);
            Model full = new Model(input, Map.of());
            for (App app : new App[] {kafka, kstate}) {
                // everything of phase 1 committed, nothing of phase 2 (the first offset of partition 0 past phase1.ends)
                Map<Integer, Long> done = committedOffsets(app);
                for (int p = 0; p < PARTITIONS; p++) {
                    long c = done.getOrDefault(p, -1L);
                    assertTrue(app.name + " committed partition " + p + " at " + c + ", phase 1 ends at " + phase1.ends,
                        c >= phase1.ends.get(p) && (p != 0 || c <= phase1.ends.get(p) + 1));
                }
            }
            Model committed = new Model(input, phase1.ends);
            assertNotEquals("phase 2 changed the hopping windows", committed.hopContents(true), full.hopContents(true));
            assertNotEquals("phase 2 changed the sessions", committed.sessionContents(), full.sessionContents());

            List<Args> sets2 = new ArrayList<>();
            for (int i = 0; i < QUERY_SETS; i++) {
                sets2.add(new Args(rnd, full, t - T0));
            }
            Map<String, String> kafka2 = answers(kafka, sets2);
            Map<String, String> kstate2 = answers(kstate, sets2);
            progress(t0, "phase 2 queried");
            try {
                checks += checkBoth(kafka, kstate, committed, full, sets2, kafka2, kstate2, "phase 2 (uncommitted writes pending)");
            } catch (AssertionError e) {
                if (kafka.gate.timedOut || kstate.gate.timedOut) {
                    throw new AssertionError("a gate opened by itself after 120 s, the queries of phase 2 saw later commits: "
                        + e.getMessage(), e);
                }
                throw e;
            }
            assertTrue("the gates held while phase 2 was checked", !kafka.gate.timedOut && !kstate.gate.timedOut);
            long differing = kstate2.keySet().stream().filter(q -> q.contains(" READ_COMMITTED ")
                && !kstate2.get(q).equals(kstate2.get(q.replace(" READ_COMMITTED ", " READ_UNCOMMITTED ")))).count();
            // not vacuous: phase 2 changed what READ_UNCOMMITTED sees (every IQv2 answer's position of partition 0 at least)
            assertTrue("READ_COMMITTED and READ_UNCOMMITTED differ in many queries (" + differing + ")",
                differing >= 3L * QUERY_SETS);

            // phase 3: the gates open, a COMMIT commits phase 2
            kafka.gate.release.countDown();
            kstate.gate.release.countDown();
            produce(List.of(control(0, t, COMMIT)));
            input = EosRig.readCommitted(broker, TOPIC);
            Model phase3 = new Model(input, Map.of());
            awaitCommitted(kafka, phase3, 60_000);
            awaitCommitted(kstate, phase3, 60_000);
            progress(t0, "phase 2 committed");
            checks += checkModel(kafka, phase3, phase3, sets2) + checkModel(kstate, phase3, phase3, sets2);
            assertTrue("no stream errors: " + kafka.errors + kstate.errors, kafka.errors.isEmpty() && kstate.errors.isEmpty());
            assertEquals(KafkaStreams.State.RUNNING, kstate.streams.state());
            System.out.printf("window IQ on running apps: %d + %d input records (%d keys, %d late hopping windows and %d late "
                    + "session records dropped, %d session merges), %d + %d queries answered identically by kstate and Kafka "
                    + "(%d of phase 2 differ between READ_COMMITTED and READ_UNCOMMITTED), "
                    + "%d model checks; %.1f s in all (%.1f s to both apps committed, phase 1 queries %.1f s on Kafka, %.1f s "
                    + "on kstate, checks %.1f s), test JVM CPU %.1f s%n",
                RECORDS, GATED_RECORDS, KEYS, full.hopDropped, full.sessionDropped, full.sessionMerges, kafka1.size(),
                kafka2.size(), differing, checks, (System.nanoTime() - t0) / 1e9, (settled - t0) / 1e9, (q1 - q0) / 1e9, (q2 - q1) / 1e9,
                (q3 - q2) / 1e9, processCpuSeconds());
        }
    }
}
