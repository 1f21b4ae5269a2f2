package dev.kstate.eos;

import dev.kstate.broker.KafkaBroker;
import dev.kstate.streams.CapturedLogs;
import dev.kstate.streams.TestSupport;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The parent side of the real-broker runs: starts {@link EosApp} child JVMs and reads their
 * events, produces the input while keeping the model, and checks outputs, changelogs, interactive
 * queries, restores and store directories against the model.
 */
public final class EosRig {
    private EosRig() {
    }

    // ----- a child application ------------------------------------------------------------------

    /** One restore of one store partition, as the child's restore listener reported it. */
    public static final class Restore {
        public final String store;
        public final TopicPartition tp;
        public final long start;
        public final long end;
        public volatile long restored = -1;
        public volatile long ms = -1;

        Restore(String store, TopicPartition tp, long start, long end) {
            this.store = store;
            this.tp = tp;
            this.start = start;
            this.end = end;
        }

        @Override
        public String toString() {
            return store + "@" + tp + "[" + start + "," + end + ") restored=" + restored;
        }
    }

    /** A running {@link EosApp} child JVM and what it reported. */
    public static final class App {
        public final String name;
        public final Process process;
        public final File ctl;
        public final List<String> lines = Collections.synchronizedList(new ArrayList<>());
        public final List<Restore> restores = Collections.synchronizedList(new ArrayList<>());
        public final List<String> errors = Collections.synchronizedList(new ArrayList<>());
        public final List<String> iq = Collections.synchronizedList(new ArrayList<>());
        /** {@code LOG} lines: kstate's log events (INFO and up), as {@code level thread message}. */
        public final List<String> logs = Collections.synchronizedList(new ArrayList<>());
        /** {@code STANDBY_START} lines: a standby task of this instance began updating a store. */
        public final List<String> standbyStarts = Collections.synchronizedList(new ArrayList<>());
        public volatile long runningMs = -1;
        public volatile long commitsBegun;
        public volatile long commitsDone;
        public volatile boolean iqDone;
        public final long startedNanos = System.nanoTime();

        App(String name, Process process, File ctl) {
            this.name = name;
            this.process = process;
            this.ctl = ctl;
            Thread t = new Thread(this::read, "child-" + name);
            t.setDaemon(true);
            t.start();
        }

        private void read() {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    lines.add(line);
                    String[] f = line.split(" ");
                    switch (f[0]) {
                        case "RUNNING":
                            if (runningMs < 0) {
                                runningMs = Long.parseLong(f[1]);
                            }
                            break;
                        case "COMMIT_BEGIN":
                            commitsBegun = Long.parseLong(f[1]);
                            break;
                        case "COMMIT_DONE":
                            commitsDone = Long.parseLong(f[1]);
                            break;
                        case "RESTORE_START":
                            restores.add(new Restore(f[1], new TopicPartition(f[2], Integer.parseInt(f[3])),
                                Long.parseLong(f[4]), Long.parseLong(f[5])));
                            break;
                        case "RESTORE_END":
                            synchronized (restores) {
                                for (int i = restores.size() - 1; i >= 0; i--) {
                                    Restore x = restores.get(i);
                                    if (x.store.equals(f[1]) && x.tp.topic().equals(f[2])
                                        && x.tp.partition() == Integer.parseInt(f[3]) && x.restored < 0) {
                                        x.restored = Long.parseLong(f[4]);
                                        x.ms = Long.parseLong(f[5]);
                                        break;
                                    }
                                }
                            }
                            break;
                        case "STANDBY_START":
                            standbyStarts.add(line);
                            break;
                        case "LOG":
                            logs.add(line.substring(4));
                            break;
                        case "IQ":
                            iq.add(line);
                            break;
                        case "IQ_DONE":
                            iqDone = true;
                            break;
                        case "ERROR":
                            errors.add(line);
                            break;
                        default:
                            break;
                    }
                }
            } catch (IOException e) {
                // the child died
            }
        }

        /** Waits until {@code cond} holds, the child dies, or the timeout passes. */
        public boolean await(Predicate<App> cond, long timeoutMs) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (!cond.test(this) && System.currentTimeMillis() < deadline) {
                if (!process.isAlive()) {
                    return cond.test(this);
                }
                Thread.sleep(5);
            }
            return cond.test(this);
        }

        public boolean awaitRunning(long timeoutMs) throws InterruptedException {
            return await(a -> a.runningMs >= 0, timeoutMs);
        }

        /** SIGKILL. */
        public void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }

        /** SIGSTOP: the process stays alive but silent, as a zombie does (a long GC pause, a frozen VM). */
        public void pause() throws Exception {
            signal("STOP");
        }

        /** SIGCONT after {@link #pause()}. */
        public void resume() throws Exception {
            signal("CONT");
        }

        private void signal(String name) throws Exception {
            Process p = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
            if (p.waitFor() != 0) {
                throw new AssertionError("kill -" + name + " " + process.pid() + " failed");
            }
        }

        /** Asks for a clean close ({@code KafkaStreams#close}) and waits for the exit. */
        public int stop(long timeoutMs) throws Exception {
            Files.createDirectories(ctl.toPath());
            new File(ctl, "stop").createNewFile();
            if (!process.waitFor(timeoutMs, TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new AssertionError(name + " did not close within " + timeoutMs + " ms");
            }
            return process.exitValue();
        }

        /** Asks for the interactive queries and waits for their answers. */
        public List<String> query(long timeoutMs) throws Exception {
            new File(ctl, "query").createNewFile();
            if (!await(a -> a.iqDone, timeoutMs)) {
                throw new AssertionError(name + " answered no queries; errors " + errors + "\n" + tail());
            }
            return new ArrayList<>(iq);
        }

        /** Total records restored, by store. */
        public Map<String, Long> restoredByStore() {
            Map<String, Long> m = new TreeMap<>();
            synchronized (restores) {
                for (Restore r : restores) {
                    m.merge(r.store, Math.max(0, r.restored), Long::sum);
                }
            }
            return m;
        }

        public String tail() {
            synchronized (lines) {
                return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
            }
        }
    }

    /**
     * Starts an {@link EosApp} child JVM (this JVM's classpath, -Xcheck:jni unless {@link TestSupport#BENCHMARK_CHILDREN}).
     *
     * @param args {@code key=value} arguments besides bootstrap, app, state, ctl
     */
    public static App start(String name, KafkaBroker broker, String appId, File stateDir, File logDir, String... args)
        throws IOException {
        File ctl = new File(logDir, "ctl-" + name + "-" + System.nanoTime());
        Files.createDirectories(ctl.toPath());
        List<String> cmd = TestSupport.childJvm("-Xms64m",
            "-Xmx" + System.getProperty("kstate.eos.child.heap", "384m"),
            Boolean.getBoolean(TestSupport.BENCHMARK_CHILDREN) ? "-XX:+UseG1GC" : "-XX:+UseSerialGC",
            "-D" + CapturedLogs.STDERR + "=" + Boolean.getBoolean(CapturedLogs.STDERR));
        cmd.add(EosApp.class.getName());
        cmd.add("bootstrap=" + broker.bootstrap());
        cmd.add("app=" + appId);
        cmd.add("state=" + stateDir.getAbsolutePath());
        cmd.add("ctl=" + ctl.getAbsolutePath());
        Collections.addAll(cmd, args);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectError(ProcessBuilder.Redirect.appendTo(new File(logDir, name + ".stderr.log")));
        return new App(name, pb.start(), ctl);
    }

    // ----- input and model ----------------------------------------------------------------------

    /**
     * The input and its model. Each {@link #produce} is one producer transaction, aborted and
     * sent again when a send fails, so the input holds exactly the records asked for (an
     * idempotent producer without transactions lost sends under load here: an
     * {@code OutOfOrderSequenceException} on one partition, then batches expiring on it, which
     * {@code flush()} does not report). The model is still read back from the input topic
     * itself: exactly-once is a promise about the records in the topic.
     */
    public static final class Input implements AutoCloseable {
        private final KafkaBroker broker;
        /** One transactional id for every producer of this input: a new one fences the last. */
        private final String transactionalId;
        private KafkaProducer<String, String> producer;
        private final Random rnd;
        private final int keys;
        private Map<String, List<Long>> values;
        private Map<String, List<Long>> timestamps;
        /** Records in the input topic. */
        public long produced;
        /** Input transactions aborted and sent again. */
        public long retries;

        public final String topics;

        public Input(KafkaBroker broker, String topics, int keys, long seed) {
            this.broker = broker;
            this.topics = topics;
            this.rnd = new Random(seed);
            this.keys = keys;
            this.transactionalId = "input-" + topics + System.nanoTime();
            this.producer = newProducer();
        }

        private KafkaProducer<String, String> newProducer() {
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
            p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 30_000);
            p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
            p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000);
            KafkaProducer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
            pr.initTransactions();
            return pr;
        }

        public static String key(int i) {
            return String.format("k%07d", i);
        }

        /** Produces {@code n} records on random keys (values 1..9) in one transaction. */
        public void produce(int n) {
            List<String[]> records = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                records.add(new String[] {key(rnd.nextInt(keys)), Integer.toString(1 + rnd.nextInt(9))});
            }
            send(records);
        }

        /** Produces one record for every key in [0, keys) (for loading a large state), 100,000 a transaction. */
        public void produceEveryKey() {
            for (int from = 0; from < keys; from += 100_000) {
                List<String[]> records = new ArrayList<>();
                for (int i = from; i < Math.min(keys, from + 100_000); i++) {
                    records.add(new String[] {key(i), "1"});
                }
                send(records);
            }
        }

        private void send(List<String[]> records) {
            for (int attempt = 1; ; attempt++) {
                try {
                    producer.beginTransaction();
                    for (String[] r : records) {
                        producer.send(new ProducerRecord<>(topics + EosApp.INPUT, r[0], r[1]));
                    }
                    producer.commitTransaction();
                    produced += records.size();
                    values = null;
                    return;
                } catch (org.apache.kafka.common.KafkaException e) {
                    if (attempt == 5) {
                        throw new IllegalStateException("could not produce the input after 5 attempts", e);
                    }
                    System.out.println("input transaction failed, producing it again: " + e);
                    retries++;
                    // a new producer with the same transactional id aborts the failed transaction
                    producer.close(java.time.Duration.ZERO);
                    producer = newProducer();
                }
            }
        }

        /** The values of each key in the input topic, in offset order: the model. */
        public Map<String, List<Long>> values() {
            if (values == null) {
                Map<String, List<Long>> m = new TreeMap<>();
                Map<String, List<Long>> ts = new TreeMap<>();
                for (ConsumerRecord<byte[], byte[]> r : readCommitted(broker, topics + EosApp.INPUT)) {
                    m.computeIfAbsent(str(r.key()), k -> new ArrayList<>()).add(Long.parseLong(str(r.value())));
                    ts.computeIfAbsent(str(r.key()), k -> new ArrayList<>()).add(r.timestamp());
                }
                values = m;
                timestamps = ts;
            }
            return values;
        }

        /** The timestamps of each key's input records, in offset order (the windowed aggregations' model). */
        public Map<String, List<Long>> timestamps() {
            values();
            return timestamps;
        }

        public Map<String, Long> counts() {
            Map<String, Long> m = new TreeMap<>();
            values().forEach((k, v) -> m.put(k, (long) v.size()));
            return m;
        }

        public Map<String, Long> sums() {
            Map<String, Long> m = new TreeMap<>();
            values().forEach((k, v) -> m.put(k, v.stream().mapToLong(Long::longValue).sum()));
            return m;
        }

        @Override
        public void close() {
            producer.close();
        }
    }

    /** Creates the input (and output) topics with {@code partitions} partitions each. */
    public static void createTopics(KafkaBroker broker, String prefix, int partitions) throws Exception {
        Map<String, Integer> t = new HashMap<>();
        t.put(prefix + EosApp.INPUT, partitions);
        t.put(prefix + EosApp.COUNTS_OUT, partitions);
        t.put(prefix + EosApp.SUMS_OUT, partitions);
        broker.createTopics(t);
    }

    /** As {@link #createTopics(KafkaBroker, String, int)}, plus the outputs of {@code windowed=true}. */
    public static void createWindowedTopics(KafkaBroker broker, String prefix, int partitions) throws Exception {
        createTopics(broker, prefix, partitions);
        Map<String, Integer> t = new HashMap<>();
        t.put(prefix + EosApp.WCOUNTS_OUT, partitions);
        t.put(prefix + EosApp.SCOUNTS_OUT, partitions);
        broker.createTopics(t);
    }

    /**
     * Waits until the application's committed input offsets reach the end of the input. A
     * partition whose committed offset stops short of the end only by transaction markers
     * counts as processed: Kafka Streams commits the offset after the last record it
     * processed, and an application restarted after that commit has nothing to process, so it
     * never commits past the input transaction's final marker.
     */
    public static void awaitProcessed(KafkaBroker broker, String prefix, String appId, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        KafkaConsumer<byte[], byte[]> reader = null;
        try (Admin admin = broker.admin()) {
            while (true) {
                Map<TopicPartition, Long> ends = endOffsets(admin, prefix + EosApp.INPUT);
                Map<TopicPartition, OffsetAndMetadata> done = admin.listConsumerGroupOffsets(appId)
                    .partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
                boolean all = true;
                for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                    OffsetAndMetadata o = done.get(e.getKey());
                    if (e.getValue() == 0 || (o != null && o.offset() >= e.getValue())) {
                        continue;
                    }
                    if (o != null && e.getValue() - o.offset() <= MARKER_SLACK) {
                        if (reader == null) {
                            reader = readCommittedConsumer(broker);
                        }
                        if (onlyMarkersBetween(reader, e.getKey(), o.offset(), e.getValue())) {
                            continue;
                        }
                    }
                    all = false;
                }
                if (all) {
                    return;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new AssertionError("input not processed within " + timeoutMs + " ms: committed " + done
                        + " ends " + ends);
                }
                Thread.sleep(100);
            }
        } finally {
            if (reader != null) {
                reader.close();
            }
        }
    }

    /** How far short of the end a committed offset is checked for markers only. */
    private static final long MARKER_SLACK = 8;

    /** A {@code read_committed} byte-array consumer of the broker, without a group or auto-commit. */
    private static KafkaConsumer<byte[], byte[]> readCommittedConsumer(KafkaBroker broker) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Whether {@code tp} holds no committed record in [{@code from}, {@code end}): markers or aborted records only. */
    private static boolean onlyMarkersBetween(KafkaConsumer<byte[], byte[]> reader, TopicPartition tp, long from, long end) {
        reader.assign(List.of(tp));
        reader.seek(tp, from);
        long until = System.currentTimeMillis() + 2_000;
        while (System.currentTimeMillis() < until) {
            for (ConsumerRecord<byte[], byte[]> r : reader.poll(java.time.Duration.ofMillis(100)).records(tp)) {
                if (r.offset() < end) {
                    return false;
                }
            }
            if (reader.position(tp) >= end) {
                return true;
            }
        }
        return false;
    }

    static Map<TopicPartition, Long> endOffsets(Admin admin, String topic) throws Exception {
        int n = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic).partitions().size();
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        for (int i = 0; i < n; i++) {
            req.put(new TopicPartition(topic, i), OffsetSpec.latest());
        }
        Map<TopicPartition, Long> out = new TreeMap<>((x, y) -> Integer.compare(x.partition(), y.partition()));
        admin.listOffsets(req).all().get(10, TimeUnit.SECONDS).forEach((tp, info) -> out.put(tp, info.offset()));
        return out;
    }

    // ----- reading topics -----------------------------------------------------------------------

    /** Every committed record of a topic ({@code read_committed}), in offset order per partition. */
    public static List<ConsumerRecord<byte[], byte[]>> readCommitted(KafkaBroker broker, String topic) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = readCommittedConsumer(broker)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(topic)) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps); // the last stable offsets
            long deadline = System.currentTimeMillis() + 120_000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new AssertionError("could not read " + topic + " to its end " + end);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(java.time.Duration.ofMillis(200))) {
                    out.add(r);
                }
            }
        }
        return out;
    }

    static String str(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    static long longOf(byte[] b) {
        return ByteBuffer.wrap(b).getLong();
    }

    // ----- checks -------------------------------------------------------------------------------

    /**
     * Checks the {@code read_committed} outputs: for every key, {@code counts-out} holds exactly
     * 1..n and {@code sums-out} exactly the prefix sums of its input values, in order.
     */
    public static void checkOutputs(KafkaBroker broker, Input input) {
        Map<String, List<Long>> counts = new TreeMap<>();
        for (ConsumerRecord<byte[], byte[]> r : readCommitted(broker, input.topics + EosApp.COUNTS_OUT)) {
            counts.computeIfAbsent(str(r.key()), k -> new ArrayList<>()).add(longOf(r.value()));
        }
        Map<String, List<Long>> sums = new TreeMap<>();
        for (ConsumerRecord<byte[], byte[]> r : readCommitted(broker, input.topics + EosApp.SUMS_OUT)) {
            sums.computeIfAbsent(str(r.key()), k -> new ArrayList<>()).add(longOf(r.value()));
        }
        Map<String, List<Long>> in = input.values();
        check(counts.keySet().equals(in.keySet()), "output keys = input keys: " + counts.size() + " vs " + in.size());
        Map<String, List<Long>> expCounts = countUpdates(input);
        Map<String, List<Long>> expSums = sumUpdates(input);
        for (String k : in.keySet()) {
            check(expCounts.get(k).equals(counts.get(k)), "counts of " + k + ": expected 1.." + expCounts.get(k).size()
                + ", got " + counts.get(k));
            check(expSums.get(k).equals(sums.get(k)), "sums of " + k + ": expected " + expSums.get(k) + ", got "
                + sums.get(k));
        }
    }

    /** The model of the count's updates, by key: 1..n. */
    static Map<String, List<Long>> countUpdates(Input input) {
        Map<String, List<Long>> expected = new HashMap<>();
        input.values().forEach((k, vs) -> {
            List<Long> l = new ArrayList<>();
            for (int i = 0; i < vs.size(); i++) {
                l.add((long) i + 1);
            }
            expected.put(k, l);
        });
        return expected;
    }

    /** The model of the sum's updates, by key: the prefix sums of its input values. */
    static Map<String, List<Long>> sumUpdates(Input input) {
        Map<String, List<Long>> expected = new HashMap<>();
        input.values().forEach((k, vs) -> {
            List<Long> l = new ArrayList<>();
            long sum = 0;
            for (long v : vs) {
                sum += v;
                l.add(sum);
            }
            expected.put(k, l);
        });
        return expected;
    }

    /** Every committed update of an output topic, by key, in order; a tombstone is {@code null}. */
    static Map<String, List<Long>> updatesByKey(KafkaBroker broker, String topic) {
        Map<String, List<Long>> m = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : readCommitted(broker, topic)) {
            m.computeIfAbsent(str(r.key()), k -> new ArrayList<>()).add(r.value() == null ? null : longOf(r.value()));
        }
        return m;
    }

    /** Compares the updates of each output key with the model's, naming a few differences. */
    static void checkUpdates(Map<String, List<Long>> expected, Map<String, List<Long>> got, String what) {
        if (expected.equals(got)) {
            return;
        }
        List<String> diff = new ArrayList<>();
        Set<String> keys = new java.util.TreeSet<>(expected.keySet());
        keys.addAll(got.keySet());
        int n = 0;
        for (String k : keys) {
            if (!java.util.Objects.equals(expected.get(k), got.get(k))) {
                n++;
                if (diff.size() < 10) {
                    diff.add(k + ": expected " + expected.get(k) + ", got " + got.get(k));
                }
            }
        }
        throw new AssertionError(what + ": " + n + " of " + keys.size() + " output keys differ from the model: " + diff);
    }

    /**
     * Checks the {@code read_committed} output of the tumbling-window count ({@code windowed=true}):
     * for every key and window, exactly the counts 1..n of the key's input records in that window,
     * in order. Each update reads the window's count from the window store, so a lost, doubled or
     * stale store write shows here.
     */
    public static void checkWindowOutputs(KafkaBroker broker, Input input, long windowMs) {
        checkUpdates(windowUpdates(input, windowMs), updatesByKey(broker, input.topics + EosApp.WCOUNTS_OUT), "window counts");
    }

    /** The model of the tumbling-window count's updates, by output key ({@code key@windowStart}). */
    static Map<String, List<Long>> windowUpdates(Input input, long windowMs) {
        Map<String, List<Long>> expected = new HashMap<>();
        input.timestamps().forEach((k, ts) -> {
            for (long t : ts) {
                List<Long> l = expected.computeIfAbsent(k + "@" + (t - t % windowMs), x -> new ArrayList<>());
                l.add((long) l.size() + 1);
            }
        });
        return expected;
    }

    /**
     * Checks the {@code read_committed} output of the session count ({@code windowed=true}): every
     * update, as the session aggregation emits it with the record cache off. Input timestamps rise
     * per key, so a record extends the key's last session when it comes within the inactivity gap
     * of its end (a tombstone for the old session unless both are the one instant [t, t], then the
     * merged one's count) and starts a new session of count 1 otherwise. Each update reads the
     * session store.
     */
    public static void checkSessionOutputs(KafkaBroker broker, Input input, long gapMs) {
        checkUpdates(sessionUpdates(input, gapMs), updatesByKey(broker, input.topics + EosApp.SCOUNTS_OUT), "session counts");
    }

    /** The model of the session count's updates, by output key ({@code key@start@end}; a tombstone is {@code null}). */
    static Map<String, List<Long>> sessionUpdates(Input input, long gapMs) {
        Map<String, List<Long>> expected = new HashMap<>();
        input.timestamps().forEach((k, ts) -> {
            long start = -1;
            long end = -1;
            long count = 0;
            for (long t : ts) {
                if (count > 0 && t - end <= gapMs) {
                    // the old session is removed (a tombstone) unless the merged window is the record's own
                    // [t, t]: Kafka's KStreamSessionWindowAggregate then just updates it in place
                    if (start != t) {
                        expected.computeIfAbsent(k + "@" + start + "@" + end, x -> new ArrayList<>()).add(null);
                    }
                    end = Math.max(end, t);
                    count++;
                } else {
                    start = t;
                    end = t;
                    count = 1;
                }
                expected.computeIfAbsent(k + "@" + start + "@" + end, x -> new ArrayList<>()).add(count);
            }
        });
        return expected;
    }

    /**
     * Checks the {@code read_committed} outputs of {@code windowed=true} with the DSL's record
     * cache on, which forwards only the latest update of a key at each flush: for every output
     * key (counts, sums, window counts, session counts), the last committed update is the
     * model's last, and no key is there that the model lacks. A session the model merged away
     * may be absent (created and removed within one flush, it never reached the output) or end
     * with its tombstone. Each of these values was read from a store, so a lost, doubled or
     * stale store write, or a restore from the wrong offset, shows here.
     */
    public static void checkLatestOutputs(KafkaBroker broker, Input input, long windowMs, long gapMs) {
        checkLatest(countUpdates(input), updatesByKey(broker, input.topics + EosApp.COUNTS_OUT), "counts");
        checkLatest(sumUpdates(input), updatesByKey(broker, input.topics + EosApp.SUMS_OUT), "sums");
        checkLatest(windowUpdates(input, windowMs), updatesByKey(broker, input.topics + EosApp.WCOUNTS_OUT), "window counts");
        checkLatest(sessionUpdates(input, gapMs), updatesByKey(broker, input.topics + EosApp.SCOUNTS_OUT), "session counts");
    }

    /** Compares the last update of each output key with the model's last (see {@link #checkLatestOutputs}). */
    static void checkLatest(Map<String, List<Long>> expected, Map<String, List<Long>> got, String what) {
        List<String> diff = new ArrayList<>();
        int n = 0;
        Set<String> keys = new java.util.TreeSet<>(expected.keySet());
        keys.addAll(got.keySet());
        for (String k : keys) {
            List<Long> e = expected.get(k);
            List<Long> g = got.get(k);
            Long want = e == null ? null : e.get(e.size() - 1);
            Long last = g == null ? null : g.get(g.size() - 1);
            boolean ok;
            if (e == null) {
                ok = false; // a key the model lacks
            } else if (want != null) {
                ok = want.equals(last);
            } else {
                ok = g == null || last == null;
            }
            if (!ok) {
                n++;
                if (diff.size() < 10) {
                    diff.add(k + ": expected last " + (e == null ? "no key" : want) + ", got " + g);
                }
            }
        }
        if (n > 0) {
            throw new AssertionError(what + ": " + n + " of " + keys.size() + " output keys end unlike the model: " + diff);
        }
        check(expected.values().stream().anyMatch(l -> l.size() > 1), what + ": the model has keys of several updates");
    }

    /** The committed changelog of a store, by partition. */
    public static Map<Integer, List<ConsumerRecord<byte[], byte[]>>> changelog(KafkaBroker broker, String appId, String store) {
        return readCommitted(broker, appId + "-" + store + "-changelog").stream()
            .collect(Collectors.groupingBy(ConsumerRecord::partition, TreeMap::new, Collectors.toList()));
    }

    /** Checks that the changelog's last value per key is the model's. */
    public static void checkChangelog(Map<Integer, List<ConsumerRecord<byte[], byte[]>>> log, Map<String, Long> model,
        String what) {
        Map<String, Long> last = new TreeMap<>();
        log.values().forEach(l -> l.forEach(r -> last.put(str(r.key()), r.value() == null ? null : longOf(r.value()))));
        checkMap(model, last, what + " changelog");
    }

    /**
     * The restore bound: what a restore replays of a kstate store (the committed changelog records
     * in [start, end)) must belong to ONE producer transaction, that is one commit interval.
     * Records of one transaction on one partition have consecutive offsets; two transactions are
     * separated by at least the commit marker's offset. kstate commits its stores right after each
     * transaction, so after a kill it lags by at most the transaction whose store commit the kill
     * interrupted.
     *
     * @return the largest number of records one restore replayed
     */
    public static long checkRestoreBound(Map<Integer, List<ConsumerRecord<byte[], byte[]>>> log, List<Restore> restores,
        String store) {
        long max = 0;
        for (Restore r : restores) {
            if (!r.store.equals(store)) {
                continue;
            }
            List<ConsumerRecord<byte[], byte[]>> part = log.getOrDefault(r.tp.partition(), List.of());
            long prev = -1;
            long n = 0;
            for (ConsumerRecord<byte[], byte[]> rec : part) {
                if (rec.offset() < r.start || rec.offset() >= r.end) {
                    continue;
                }
                check(prev < 0 || rec.offset() == prev + 1, "restore " + r + " replays more than one transaction: offset "
                    + prev + " then " + rec.offset());
                prev = rec.offset();
                n++;
            }
            max = Math.max(max, n);
        }
        return max;
    }

    /** Checks the interactive-query answers: every api x level x store equals its model. */
    public static void checkQueries(List<String> iq, Map<String, Long> counts, Map<String, Long> sums) {
        Map<String, Map<String, Long>> got = new TreeMap<>();
        for (String line : iq) {
            String[] f = line.split(" ");
            got.computeIfAbsent(f[1] + " " + f[2] + " " + f[3], x -> new TreeMap<>()).put(f[4], Long.parseLong(f[5]));
        }
        List<String> failures = new ArrayList<>();
        for (String api : new String[] {"v1", "v2"}) {
            for (String level : new String[] {"READ_COMMITTED", "READ_UNCOMMITTED"}) {
                try {
                    checkMap(counts, got.get(api + " " + level + " counts"), "IQ " + api + " " + level + " counts");
                    checkMap(sums, got.get(api + " " + level + " sums"), "IQ " + api + " " + level + " sums");
                } catch (AssertionError e) {
                    failures.add(e.getMessage());
                }
            }
        }
        check(failures.isEmpty(), String.join("\n", failures));
    }

    /** Runs {@code kstate verify} on every kstate store directory under the application's state. */
    public static List<File> kstateVerifyAll(File stateDir, String appId) throws Exception {
        String cli = System.getProperty("kstate.cli", "../target/release/kstate");
        List<File> stores = new ArrayList<>();
        File appDir = new File(stateDir, appId);
        File[] tasks = appDir.listFiles(f -> f.isDirectory() && f.getName().matches("\\d+_\\d+"));
        for (File task : tasks == null ? new File[0] : tasks) {
            File[] subs = task.listFiles(f -> f.isDirectory() && !f.getName().startsWith(".") && !f.getName().equals("rocksdb"));
            for (File s : subs == null ? new File[0] : subs) {
                Process p = new ProcessBuilder(cli, "verify", s.getAbsolutePath()).redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                check(p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0, "kstate verify " + s + ":\n" + out);
                stores.add(s);
            }
        }
        return stores;
    }

    /** Task directories (sub_partition) currently under the application's state directory. */
    public static Set<String> taskDirs(File stateDir, String appId) {
        File[] tasks = new File(stateDir, appId).listFiles(f -> f.isDirectory() && f.getName().matches("\\d+_\\d+"));
        return tasks == null ? Set.of() : java.util.Arrays.stream(tasks).map(File::getName).collect(Collectors.toSet());
    }

    /** Checks two maps are equal, naming a few differences if not. */
    public static void checkMap(Map<String, Long> expected, Map<String, Long> actual, String what) {
        if (expected.equals(actual)) {
            return;
        }
        if (actual == null) {
            throw new AssertionError(what + ": no answer");
        }
        List<String> diff = new ArrayList<>();
        Set<String> keys = new java.util.TreeSet<>(expected.keySet());
        keys.addAll(actual.keySet());
        for (String k : keys) {
            if (!java.util.Objects.equals(expected.get(k), actual.get(k)) && diff.size() < 10) {
                diff.add(k + ": expected " + expected.get(k) + ", got " + actual.get(k));
            }
        }
        throw new AssertionError(what + " differs from the model (" + expected.size() + " keys expected, "
            + actual.size() + " got): " + diff);
    }

    public static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }
}
