package dev.kstate.eos;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import dev.kstate.eos.EosRig.App;
import dev.kstate.eos.EosRig.Restore;
import dev.kstate.streams.CapturedLogs;
import dev.kstate.streams.TestSupport;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.Test;

/**
 * Issue #26's round trip with Kafka Streams 4.4 itself on a real broker: {@link RoundTripApp}
 * (a key-value, a timestamped window, a session and a plain window store) runs on Kafka's own
 * RocksDB stores while input arrives (a clean close, then a run SIGKILLed late in a commit
 * interval), restarts on kstate's stores over the same state directory (kstate adopts Kafka's
 * directories in place), runs there, closes cleanly (the export needs the stores unlocked), is
 * exported with {@code kstate export --to kafka} and restarts on Kafka's stores again. The
 * outputs of the whole run are checked against a model of the input topic: equal under
 * {@code exactly_once_v2} with {@code enable.transactional.statestores=true}, no loss and
 * bounded duplicates under at-least-once ({@link #checkAtLeastOnce}). What each restart
 * restored is checked against what the store directories held: Kafka 4.4's stores write
 * without the WAL and do not flush on commit, so after the kill they hold the clean close's
 * state and offsets, and kstate resumes there; after the export Kafka restores nothing.
 */
public class RealBrokerRoundTripTest extends BrokerSuite {
    static final int PARTITIONS = 2;
    static final int KEYS = 40;
    /** Event time between two consecutive input records (all partitions): 10 s of event time per second of input. */
    static final long STEP_MS = 25;
    /**
     * The first event time: now, less 5 minutes, on a minute. Not a fixed date: the window and
     * session changelogs (and the input and outputs) delete records by time retention, and
     * records from long ago would be deleted by the broker during the run.
     */
    static final long T0 = (System.currentTimeMillis() - 300_000) / 60_000 * 60_000;

    @Test
    public void exactlyOnceWithTransactionalStores() throws Exception {
        roundTrip(true);
    }

    @Test
    public void atLeastOnce() throws Exception {
        roundTrip(false);
    }

    // ----- the input ----------------------------------------------------------------------------

    /**
     * Input with event times {@code T0 + i * STEP_MS} for the i-th record (increasing on every
     * partition, so no window or session drops a record as late), produced by a background
     * thread in small transactions (a failed one is aborted and produced again, as {@link
     * EosRig.Input} does); the model is read back from the topic.
     */
    static final class TimedInput implements AutoCloseable {
        private final String topic;
        private final String transactionalId;
        private final KafkaProducer<String, String> producer;
        private final Random rnd;
        private long seq;
        private volatile boolean running;
        private Thread thread;
        private volatile Throwable failed;

        TimedInput(String topic, long seed) {
            this.topic = topic;
            this.rnd = new Random(seed);
            this.transactionalId = "roundtrip-input-" + topic + System.nanoTime();
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
            p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
            producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
            producer.initTransactions();
        }

        synchronized void produce(int n) {
            producer.beginTransaction();
            for (int i = 0; i < n; i++) {
                String key = String.format("k%02d", rnd.nextInt(KEYS));
                String value = Integer.toString(1 + rnd.nextInt(9));
                producer.send(new ProducerRecord<>(topic, null, T0 + (seq + i) * STEP_MS, key, value));
            }
            producer.commitTransaction();
            seq += n;
        }

        synchronized long produced() {
            return seq;
        }

        /** Produces {@code n} records every {@code everyMs} in the background until {@link #pause}. */
        void flow(int n, long everyMs) {
            running = true;
            thread = new Thread(() -> {
                try {
                    while (running) {
                        produce(n);
                        Thread.sleep(everyMs);
                    }
                } catch (Throwable e) {
                    failed = e;
                }
            }, "input");
            thread.start();
        }

        void pause() throws InterruptedException {
            running = false;
            if (thread != null) {
                thread.join(30_000);
            }
            if (failed != null) {
                throw new AssertionError("producing the input failed", failed);
            }
        }

        @Override
        public void close() throws InterruptedException {
            pause();
            producer.close();
        }
    }

    // ----- the model ----------------------------------------------------------------------------

    /** Per output topic, per output key, the values in order (null: a tombstone). */
    static Map<String, Map<String, List<Long>>> model(List<ConsumerRecord<byte[], byte[]>> input) {
        Map<String, Map<String, List<Long>>> m = new TreeMap<>();
        for (String o : RoundTripApp.OUTPUTS) {
            m.put(o, new TreeMap<>());
        }
        Map<String, Long> counts = new HashMap<>();
        Map<String, Long> sums = new HashMap<>();
        Map<String, Long> windowCounts = new HashMap<>();
        Map<String, long[]> session = new HashMap<>(); // key -> {start, end, count} of its latest session
        for (ConsumerRecord<byte[], byte[]> r : input) {
            String k = EosRig.str(r.key());
            long v = Long.parseLong(EosRig.str(r.value()));
            long ts = r.timestamp();
            long start = ts - ts % RoundTripApp.WINDOW.toMillis();
            emit(m, "kv-out", k, counts.merge(k, 1L, Long::sum));
            emit(m, "tw-out", k + "@" + start, sums.merge(k + "@" + start, v, Long::sum));
            emit(m, "pw-out", k + "@" + start, windowCounts.merge(k + "@" + start, 1L, Long::sum));
            long[] s = session.get(k);
            if (s != null && ts - s[1] <= RoundTripApp.GAP.toMillis()) {
                emit(m, "ss-out", k + "@" + s[0] + "-" + s[1], null); // merged away
                s = new long[] {s[0], Math.max(s[1], ts), s[2] + 1};
            } else {
                s = new long[] {ts, ts, 1};
            }
            session.put(k, s);
            emit(m, "ss-out", k + "@" + s[0] + "-" + s[1], s[2]);
        }
        return m;
    }

    private static void emit(Map<String, Map<String, List<Long>>> m, String out, String key, Long value) {
        m.get(out).computeIfAbsent(key, x -> new ArrayList<>()).add(value);
    }

    /** What the application wrote, in the model's shape ({@code read_committed}). */
    static Map<String, Map<String, List<Long>>> outputs(String prefix) {
        Map<String, Map<String, List<Long>>> m = new TreeMap<>();
        for (String o : RoundTripApp.OUTPUTS) {
            Map<String, List<Long>> byKey = new TreeMap<>();
            for (ConsumerRecord<byte[], byte[]> r : EosRig.readCommitted(broker, prefix + o)) {
                byKey.computeIfAbsent(EosRig.str(r.key()), x -> new ArrayList<>())
                    .add(r.value() == null ? null : EosRig.longOf(r.value()));
            }
            m.put(o, byKey);
        }
        return m;
    }

    // ----- the children -------------------------------------------------------------------------

    private static App start(String name, String appId, File state, File logs, String stores, boolean eos)
        throws Exception {
        File ctl = new File(logs, "ctl-" + name);
        Files.createDirectories(ctl.toPath());
        List<String> cmd = TestSupport.childJvm("-Xms64m", "-Xmx256m", "-XX:+UseSerialGC",
            "-D" + CapturedLogs.STDERR + "=" + Boolean.getBoolean(CapturedLogs.STDERR));
        Collections.addAll(cmd, RoundTripApp.class.getName(), "bootstrap=" + broker.bootstrap(), "app=" + appId,
            "state=" + state.getAbsolutePath(), "ctl=" + ctl.getAbsolutePath(), "topics=" + appId + ".",
            "stores=" + stores, "guarantee=" + (eos ? "eos" : "alos"), "commit.ms=200");
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectError(ProcessBuilder.Redirect.appendTo(new File(logs, name + ".stderr.log")));
        return new App(name, pb.start(), ctl);
    }

    /** Keeps a child's event lines beside its standard error, for diagnosis. */
    private static void keepLines(App app, File logs) throws Exception {
        synchronized (app.lines) {
            Files.write(new File(logs, app.name + ".out").toPath(), app.lines);
        }
    }

    private static void awaitOrFail(App app, java.util.function.Predicate<App> cond, String what) throws Exception {
        if (!app.await(cond, 120_000)) {
            throw new AssertionError(what + " (not within 120 s); errors " + app.errors + "\n" + app.tail());
        }
    }

    /** Runs the kstate CLI; returns its output, failing unless it exits with {@code exit}. */
    static String cli(int exit, String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(System.getProperty("kstate.cli", "../target/release/kstate"));
        Collections.addAll(cmd, args);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue("kstate " + String.join(" ", args) + " finished", p.waitFor(120, TimeUnit.SECONDS));
        assertEquals("kstate " + String.join(" ", args) + " exit status; output:\n" + out, exit, p.exitValue());
        return out;
    }

    /** Each store directory of the application: {@code task/store} -> its directory, as Kafka lays them out. */
    static Map<String, File> kafkaStoreDirs(File state, String appId) {
        Map<String, File> m = new TreeMap<>();
        for (String task : EosRig.taskDirs(state, appId)) {
            File t = new File(new File(state, appId), task);
            m.put(task + "/kv", new File(new File(t, "rocksdb"), "kv"));
            for (String s : new String[] {"tw", "ss", "pw"}) {
                m.put(task + "/" + s, new File(t, s));
            }
        }
        return m;
    }

    /** The restores of an instance, once every one has ended, by {@code task/store}. */
    static Map<String, Restore> restores(App app) throws Exception {
        // Kafka reports a restore only for a changelog with records past the store's offset
        awaitOrFail(app, x -> x.runningMs >= 0 && x.restores.stream().allMatch(r -> r.restored >= 0),
            "every store's restore ended: " + app.restores);
        Map<String, Restore> m = new TreeMap<>();
        synchronized (app.restores) {
            for (Restore r : app.restores) {
                String store = r.store;
                m.put("0_" + r.tp.partition() + "/" + store, r);
            }
        }
        return m;
    }

    // ----- the round trip -----------------------------------------------------------------------

    /** The end offset of every store changelog partition, by {@code 0_<partition>/<store>}. */
    static Map<String, Long> changelogEnds(String appId) throws Exception {
        Map<String, Long> m = new TreeMap<>();
        try (Admin admin = broker.admin()) {
            for (String store : RoundTripApp.STORES) {
                EosRig.endOffsets(admin, appId + "-" + store + "-changelog")
                    .forEach((tp, end) -> m.put("0_" + tp.partition() + "/" + store, end));
            }
        }
        return m;
    }

    /**
     * The segment directories of each segmented store ({@code <store>.<start>}), by
     * {@code 0_<partition>/<store>}; the key-value store as one segment, {@code rocksdb/kv}.
     */
    static Map<String, java.util.Set<String>> segments(File state, String appId) {
        Map<String, java.util.Set<String>> m = new TreeMap<>();
        for (Map.Entry<String, File> e : kafkaStoreDirs(state, appId).entrySet()) {
            java.util.Set<String> names = new java.util.TreeSet<>();
            if (e.getKey().endsWith("/kv")) {
                if (e.getValue().isDirectory()) {
                    names.add("rocksdb/kv");
                }
            } else {
                String store = e.getValue().getName();
                File[] subs = e.getValue().listFiles(f -> f.isDirectory() && f.getName().startsWith(store + "."));
                for (File f : subs == null ? new File[0] : subs) {
                    names.add(f.getName());
                }
            }
            m.put(e.getKey(), names);
        }
        return m;
    }

    /** Checks that each kstate store of the instance was adopted from Kafka's directory in place. */
    static void checkAdopted(App app) {
        Pattern p = Pattern.compile("INFO \\S+ kstate (?:window |session )?store (\\S+) \\(task (\\S+)\\): opened Kafka Streams' .*"
            + "\\(adopted\\).*");
        java.util.Set<String> adopted = new java.util.TreeSet<>();
        synchronized (app.logs) {
            for (String l : app.logs) {
                Matcher x = p.matcher(l);
                if (x.matches()) {
                    adopted.add(x.group(2) + "/" + x.group(1));
                }
            }
        }
        assertEquals("every store of every task adopted from Kafka's directory: " + adopted,
            RoundTripApp.STORES.length * PARTITIONS, adopted.size());
    }

    void roundTrip(boolean eos) throws Exception {
        String mode = eos ? "eos" : "alos";
        String appId = "roundtrip-" + mode;
        String prefix = appId + ".";
        File state = new File(base, mode + "-state");
        File logs = new File(base, mode + "-logs");
        Files.createDirectories(logs.toPath());
        Map<String, Integer> topics = new HashMap<>();
        topics.put(prefix + EosApp.INPUT, PARTITIONS);
        for (String o : RoundTripApp.OUTPUTS) {
            topics.put(prefix + o, PARTITIONS);
        }
        broker.createTopics(topics);
        long begin = System.nanoTime();
        try (TimedInput in = new TimedInput(prefix + EosApp.INPUT, eos ? 26 : 62)) {
            // 1a. Kafka's own stores, input flowing, a clean close: Kafka flushes its stores
            App kafkaA = start(mode + "-kafkaA", appId, state, logs, "kafka", eos);
            try {
                awaitOrFail(kafkaA, x -> x.runningMs >= 0, "phase 1a RUNNING");
                in.flow(20, 50);
                awaitOrFail(kafkaA, x -> x.commitsDone >= 3 && in.produced() >= 800, "phase 1a: 3 commits");
                assertEquals("phase 1a clean exit", 0, kafkaA.stop(90_000));
            } finally {
                kafkaA.process.destroyForcibly();
                keepLines(kafkaA, logs);
            }
            assertTrue("phase 1a errors: " + kafkaA.errors, kafkaA.errors.isEmpty());
            Map<String, Long> endsAtClose = changelogEnds(appId);
            Map<String, java.util.Set<String>> segmentsAtClose = segments(state, appId);

            // 1b. Kafka's stores again, SIGKILLed after a few commits
            App kafkaB = start(mode + "-kafkaB", appId, state, logs, "kafka", eos);
            Map<TopicPartition, Long> endAtKill;
            Map<TopicPartition, OffsetAndMetadata> committedAtKill;
            try {
                awaitOrFail(kafkaB, x -> x.runningMs >= 0, "phase 1b RUNNING");
                long p0 = in.produced();
                awaitOrFail(kafkaB, x -> x.commitsDone >= 5 && in.produced() >= p0 + 800, "phase 1b: 5 commits");
                Thread.sleep(170); // late in the commit interval (200 ms): records processed, not committed
            } finally {
                kafkaB.kill();
                keepLines(kafkaB, logs);
            }
            try (Admin admin = broker.admin()) {
                endAtKill = EosRig.endOffsets(admin, prefix + EosApp.INPUT);
                committedAtKill = admin.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
            }
            assertTrue("phase 1b errors: " + kafkaB.errors, kafkaB.errors.isEmpty());
            Map<String, Long> endsAtKill = changelogEnds(appId);
            Map<String, java.util.Set<String>> segmentsAtKill = segments(state, appId);
            long producedAtKill = in.produced();

            // 2. kstate adopts every store in place and restores what Kafka's stores lack
            App ks = start(mode + "-kstate", appId, state, logs, "kstate", eos);
            Map<String, Restore> restored2;
            try {
                awaitOrFail(ks, x -> x.runningMs >= 0, "phase 2 RUNNING");
                restored2 = restores(ks);
                long commits = ks.commitsDone;
                awaitOrFail(ks, x -> x.commitsDone >= commits + 5 && in.produced() >= producedAtKill + 800,
                    "phase 2: 5 commits");
                assertEquals("phase 2 clean exit", 0, ks.stop(90_000));
            } finally {
                ks.process.destroyForcibly();
                keepLines(ks, logs);
            }
            assertTrue("phase 2 errors: " + ks.errors, ks.errors.isEmpty());
            checkAdopted(ks);
            // Kafka 4.4's stores write without the WAL and commit() does not flush them: after the
            // SIGKILL their directories hold what the clean close of 1a flushed, with its offsets,
            // and nothing of 1b. A segmented store's offset is its newest segment's that has one
            // (Kafka's AbstractSegments#committedOffset, kstate's adoption alike): 1a's if a
            // segment flushed at 1a's close is still there, none if 1b dropped them all as expired
            // (the segments 1b created hold nothing on disk). kstate adopts exactly that: a store
            // resumes at 1a's offsets, or restores its changelog from the start (as Kafka's own
            // stores would from the same directory); never beyond.
            long restoredTotal2 = 0;
            int resumed = 0;
            assertEquals("a restore for every store: " + restored2.keySet(), endsAtClose.keySet(), restored2.keySet());
            for (Map.Entry<String, Restore> e : restored2.entrySet()) {
                Restore r = e.getValue();
                long closeEnd = endsAtClose.get(e.getKey());
                java.util.Set<String> kept = new java.util.TreeSet<>(segmentsAtClose.get(e.getKey()));
                kept.retainAll(segmentsAtKill.get(e.getKey()));
                String what = "phase 2: " + e.getKey() + " (segments at 1a's close " + segmentsAtClose.get(e.getKey())
                    + ", at the kill " + segmentsAtKill.get(e.getKey()) + "; changelog end at 1a's close " + closeEnd
                    + "): " + r;
                if (kept.isEmpty()) {
                    assertEquals(what + " restores from the start: no segment holds an offset", 0, r.start);
                } else {
                    // the committed offset is the last changelog record's; under exactly-once a commit marker follows it
                    assertTrue(what + " resumes at 1a's offset", r.start > 0 && r.start <= closeEnd
                        && r.start >= closeEnd - (eos ? 1 : 0));
                    resumed++;
                }
                // under exactly-once the restarted producer aborts the killed one's transaction: one marker more
                long killEnd = endsAtKill.get(e.getKey());
                assertTrue(what + " restores to the changelog's end at the kill, " + killEnd,
                    r.end >= killEnd && r.end <= killEnd + (eos ? 1 : 0));
                assertTrue(what + ": at most the records past the store's offset", r.restored <= r.end - r.start);
                restoredTotal2 += r.restored;
            }
            assertTrue("both key-value stores resumed at 1a's offsets", resumed >= PARTITIONS);

            // 3. back to Kafka's stores
            String exported = cli(0, "export", "--to", "kafka", new File(state, appId).getAbsolutePath());
            assertTrue("every store exported: " + exported, exported.contains((RoundTripApp.STORES.length * PARTITIONS)
                + " store(s) exported to Kafka's stores, 0 not exported"));
            Map<String, Long> endsAtExport = changelogEnds(appId);
            App kafkaC = start(mode + "-kafkaC", appId, state, logs, "kafka", eos);
            Map<String, Restore> restored3;
            try {
                awaitOrFail(kafkaC, x -> x.runningMs >= 0, "phase 3 RUNNING");
                restored3 = restores(kafkaC);
                long commits = kafkaC.commitsDone;
                long p0 = in.produced();
                awaitOrFail(kafkaC, x -> x.commitsDone >= commits + 3 && in.produced() >= p0 + 400, "phase 3: 3 commits");
                in.pause();
                EosRig.awaitProcessed(broker, prefix, appId, 120_000);
                assertEquals("phase 3 clean exit", 0, kafkaC.stop(90_000));
            } finally {
                kafkaC.process.destroyForcibly();
                keepLines(kafkaC, logs);
            }
            assertTrue("phase 3 errors: " + kafkaC.errors, kafkaC.errors.isEmpty());
            // Kafka opened every exported store and found kstate's last commit in its offsets
            // family: a restore, if Kafka reports one, starts at the changelog's end and replays nothing
            long restoredTotal3 = 0;
            for (Map.Entry<String, Restore> e : restored3.entrySet()) {
                Restore r = e.getValue();
                assertTrue("phase 3: " + e.getKey() + " resumes at kstate's last commit (changelog end "
                    + endsAtExport.get(e.getKey()) + "), nothing restored: " + r, r.restored == 0
                    && r.start >= endsAtExport.get(e.getKey()) - (eos ? 1 : 0));
                restoredTotal3 += r.restored;
            }
            for (Map.Entry<String, File> e : kafkaStoreDirs(state, appId).entrySet()) {
                assertTrue("Kafka's layout for " + e.getKey() + ": " + e.getValue(), e.getValue().isDirectory());
            }

            // 4. the outputs of the whole run against the model of the input topic
            List<ConsumerRecord<byte[], byte[]>> input = EosRig.readCommitted(broker, prefix + EosApp.INPUT);
            Map<String, Map<String, List<Long>>> expected = model(input);
            Map<String, Map<String, List<Long>>> got = outputs(prefix);
            long duplicates = 0;
            for (String o : RoundTripApp.OUTPUTS) {
                if (eos) {
                    checkEqual(expected.get(o), got.get(o), o);
                } else {
                    duplicates += checkAtLeastOnce(expected.get(o), got.get(o),
                        extra(input, committedAtKill, endAtKill).get(o), o);
                }
            }
            System.out.printf("%s round trip: %d input records (%d keys), %d output records (the model: %d); phase 2 (kstate, after "
                    + "the kill) restored %d records in %d store partitions, %d resuming at Kafka's offsets of "
                    + "the clean close; phase 3 (Kafka, after the export) restored %d in %d reported restores; %d at-least-once duplicates in the last "
                    + "output values; %.1f s%n", mode, input.size(), expected.get("kv-out").size(),
                got.values().stream().flatMap(x -> x.values().stream()).mapToLong(List::size).sum(),
                expected.values().stream().flatMap(x -> x.values().stream()).mapToLong(List::size).sum(), restoredTotal2,
                restored2.size(), resumed, restoredTotal3, restored3.size(), duplicates, (System.nanoTime() - begin) / 1e9);
        }
    }

    /**
     * Under at-least-once, what records processed twice can add to each output key's last value:
     * the input records after the committed offset at the kill, up to the input's end then
     * (the killed instance processed no record past that end), counted as the model counts them.
     */
    static Map<String, Map<String, Long>> extra(List<ConsumerRecord<byte[], byte[]>> input,
                                                Map<TopicPartition, OffsetAndMetadata> committed,
                                                Map<TopicPartition, Long> end) {
        Map<String, Map<String, List<Long>>> all = model(input);
        // the model's final sessions, by key: {start, end}
        Map<String, List<long[]>> sessions = new HashMap<>();
        all.get("ss-out").forEach((k, l) -> {
            if (l.get(l.size() - 1) != null) {
                String[] se = k.substring(k.indexOf('@') + 1).split("-");
                sessions.computeIfAbsent(k.substring(0, k.indexOf('@')), x -> new ArrayList<>())
                    .add(new long[] {Long.parseLong(se[0]), Long.parseLong(se[1])});
            }
        });
        Map<String, Map<String, Long>> extra = new TreeMap<>();
        for (String o : RoundTripApp.OUTPUTS) {
            Map<String, Long> m = new TreeMap<>();
            all.get(o).keySet().forEach(k -> m.put(k, 0L));
            extra.put(o, m);
        }
        for (ConsumerRecord<byte[], byte[]> r : input) {
            TopicPartition tp = new TopicPartition(r.topic(), r.partition());
            OffsetAndMetadata c = committed.get(tp);
            if (r.offset() < (c == null ? 0 : c.offset()) || r.offset() >= end.get(tp)) {
                continue;
            }
            String k = EosRig.str(r.key());
            long v = Long.parseLong(EosRig.str(r.value()));
            long ts = r.timestamp();
            long start = ts - ts % RoundTripApp.WINDOW.toMillis();
            extra.get("kv-out").merge(k, 1L, Long::sum);
            extra.get("tw-out").merge(k + "@" + start, v, Long::sum);
            extra.get("pw-out").merge(k + "@" + start, 1L, Long::sum);
            for (long[] se : sessions.get(k)) {
                if (se[0] <= ts && ts <= se[1]) {
                    extra.get("ss-out").merge(k + "@" + se[0] + "-" + se[1], 1L, Long::sum);
                }
            }
        }
        return extra;
    }

    /**
     * The at-least-once rule, per output key: the same output keys as the model (no window or
     * session lost or invented); the last value is a tombstone exactly when the model's is; a
     * non-null last value is at least the model's (no record lost) and at most the model's plus
     * what the records replayable after the kill add ({@code extra}: a record applied twice);
     * the non-null values never decrease (a replay repeats or skips values, it never goes back).
     *
     * @return how much the last values exceed the model's, summed
     */
    static long checkAtLeastOnce(Map<String, List<Long>> expected, Map<String, List<Long>> got, Map<String, Long> extra,
                                 String what) {
        assertEquals(what + ": output keys", expected.keySet(), got.keySet());
        long over = 0;
        for (Map.Entry<String, List<Long>> e : expected.entrySet()) {
            List<Long> g = got.get(e.getKey());
            Long want = e.getValue().get(e.getValue().size() - 1);
            Long last = g.get(g.size() - 1);
            String where = what + " " + e.getKey() + ": model " + e.getValue() + ", got " + g;
            assertEquals(where + ": tombstone last", want == null, last == null);
            if (want != null) {
                assertTrue(where + ": no loss", last >= want);
                assertTrue(where + ": at most " + extra.get(e.getKey()) + " over", last - want <= extra.get(e.getKey()));
                over += last - want;
            }
            Long prev = null;
            for (Long v : g) {
                if (v != null) {
                    assertTrue(where + ": values never decrease", prev == null || v >= prev);
                    prev = v;
                }
            }
        }
        return over;
    }

    static void checkEqual(Map<String, List<Long>> expected, Map<String, List<Long>> got, String what) {
        if (expected.equals(got)) {
            return;
        }
        List<String> diff = new ArrayList<>();
        java.util.Set<String> keys = new java.util.TreeSet<>(expected.keySet());
        keys.addAll(got.keySet());
        for (String k : keys) {
            List<Long> e = expected.getOrDefault(k, List.of());
            List<Long> g = got.getOrDefault(k, List.of());
            if (!e.equals(g) && diff.size() < 8) {
                int i = 0;
                while (i < e.size() && i < g.size() && Objects.equals(e.get(i), g.get(i))) {
                    i++;
                }
                diff.add(k + ": " + e.size() + " values expected, " + g.size() + " got, first difference at " + i
                    + ": expected " + e.subList(i, Math.min(e.size(), i + 4)) + ", got " + g.subList(i, Math.min(g.size(), i + 4)));
            }
        }
        throw new AssertionError(what + " differs from the model (" + expected.size() + " keys expected, " + got.size()
            + " got): " + diff);
    }
}
