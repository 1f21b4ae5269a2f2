package dev.kstate.eos;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import dev.kstate.eos.EosRig.App;
import dev.kstate.eos.EosRig.Input;
import dev.kstate.eos.EosRig.Restore;
import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.Test;

/**
 * Exactly-once on a real Kafka 4.4 broker (single node, KRaft, 127.0.0.1): a counting
 * application on kstate stores in child JVMs, SIGKILLed, restarted, migrated and closed, checked
 * against a model of its input. One broker serves every test of the class; each test has its
 * own application id and topics.
 */
public class RealBrokerEosTest extends BrokerSuite {
    static final int KILLS = Integer.getInteger("kstate.eos.kills", 24);
    static final int PARTITIONS = 4;

    /** Each test has its own topics (prefix {@code appId.}) and model. */
    private static Input input(String appId, long seed, int keys) throws Exception {
        EosRig.createTopics(broker, appId + ".", PARTITIONS);
        return new Input(broker, appId + ".", keys, seed);
    }

    private static App start(String name, String appId, File state, File logs, String... args) throws Exception {
        String[] all = new String[args.length + 1];
        all[0] = "topics=" + appId + ".";
        System.arraycopy(args, 0, all, 1, args.length);
        return EosRig.start(name, broker, appId, state, logs, all);
    }

    /**
     * The kill loop: input arrives in chunks over 4 partitions while the application is
     * SIGKILLed at least {@link #KILLS} times (before RUNNING, while processing, right at a
     * transaction commit; every third round with a 1 KiB {@code kstate.max.uncommitted.bytes},
     * so commits spill), and restarted on the same state directory; then a final run answers
     * the interactive queries and closes cleanly.
     */
    @Test
    public void sigkillLoopStaysExactlyOnce() throws Exception {
        String appId = "eos-kill";
        long seed = Long.getLong("kstate.eos.seed", System.nanoTime());
        Random rnd = new Random(seed);
        File state = new File(base, "kill-state");
        File logs = new File(base, "kill-logs");
        logs.mkdirs();
        int total = Integer.getInteger("kstate.eos.records", 40_000);
        try (Input in = input(appId, seed, 2_000)) {
            // the first three rounds take each mode once, then at random
            KillRounds k = killRounds(in, appId, state, logs, "kill", KILLS, total, rnd,
                round -> round < 3 ? round : rnd.nextInt(3), "variant=kstate", "instance=i1");
            List<Restore> restores = k.restores;
            // whatever is left, then a final run: no kill, interactive queries, clean close
            in.produce((int) Math.max(0, total - in.produced));
            System.out.println("kill loop seed " + seed + " (rerun with -Dkstate.eos.seed=" + seed + ")");
            App last = start("final", appId, state, logs, "variant=kstate", "instance=i1");
            try {
                assertTrue("final RUNNING", last.awaitRunning(90_000));
                EosRig.awaitProcessed(broker, appId + ".", appId, 180_000);
                EosRig.checkQueries(last.query(60_000), in.counts(), in.sums());
                assertEquals("clean exit", 0, last.stop(90_000));
            } finally {
                last.process.destroyForcibly();
            }
            assertTrue("no errors in the final run: " + last.errors, last.errors.isEmpty());
            restores.addAll(last.restores);

            EosRig.checkOutputs(broker, in);
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> counts = EosRig.changelog(broker, appId, "counts");
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> sums = EosRig.changelog(broker, appId, "sums");
            EosRig.checkChangelog(counts, in.counts(), "counts");
            EosRig.checkChangelog(sums, in.sums(), "sums");
            long maxCounts = EosRig.checkRestoreBound(counts, restores, "counts");
            long maxSums = EosRig.checkRestoreBound(sums, restores, "sums");
            List<File> verified = EosRig.kstateVerifyAll(state, appId);
            assertEquals("kstate verify ran on both stores of every task: " + verified, 2 * PARTITIONS, verified.size());
            System.out.printf("eos kill loop: %d kills (%d start-up, %d processing, %d at a commit; %d before RUNNING, "
                    + "%d inside a commit), %d records, %d keys, %d restores, at most %d/%d records replayed per "
                    + "restore (counts/sums), %d input transactions retried, seed %d%n", KILLS, k.modes[0], k.modes[1],
                k.modes[2], k.killedBeforeRunning, k.killedAtCommit, in.produced, in.values().size(), restores.size(), maxCounts, maxSums, in.retries, seed);
        }
    }

    /**
     * A versioned table in a stream-table join under the kill loop: the application adds the
     * versioned join ({@link EosApp#addVersioned}: out-of-order versions, some older than the
     * history retention, looked up as of earlier times, in the history and before it) on kstate's
     * versioned store, and is SIGKILLed at least 20 times (every third round with commits that
     * spill). Every committed join output equals what the same topology on Kafka 4.4's own
     * versioned store outputs for the same records in the same order without any kill, and no
     * restore replays more than one commit interval.
     */
    @Test
    public void versionedTableJoinSigkillLoopStaysExactlyOnce() throws Exception {
        String appId = "eos-versioned";
        long seed = Long.getLong("kstate.eos.seed", System.nanoTime());
        Random rnd = new Random(seed);
        File state = new File(base, "versioned-state");
        File logs = new File(base, "versioned-logs");
        logs.mkdirs();
        int kills = Math.max(20, KILLS);
        int total = Integer.getInteger("kstate.eos.versioned.records", 20_000);
        broker.createTopics(java.util.Collections.singletonMap(appId + "." + EosApp.VPROBE_OUT, PARTITIONS));
        try (Input in = input(appId, seed, 300)) {
            // start-up and processing kills by turns
            List<Restore> restores = killRounds(in, appId, state, logs, "v", kills, total, rnd, round -> round % 2,
                "variant=kstate", "instance=i1", "versioned=true").restores;
            in.produce((int) Math.max(0, total - in.produced));
            System.out.println("versioned kill loop seed " + seed + " (rerun with -Dkstate.eos.seed=" + seed + ")");
            App last = start("vfinal", appId, state, logs, "variant=kstate", "instance=i1", "versioned=true");
            try {
                assertTrue("final RUNNING", last.awaitRunning(90_000));
                EosRig.awaitProcessed(broker, appId + ".", appId, 180_000);
                assertEquals("clean exit", 0, last.stop(90_000));
            } finally {
                last.process.destroyForcibly();
            }
            assertTrue("no errors in the final run: " + last.errors, last.errors.isEmpty());
            restores.addAll(last.restores);

            Map<Integer, List<String>> expected = versionedModel(EosRig.readCommitted(broker, appId + "." + EosApp.INPUT),
                appId + ".", new File(base, "versioned-model"));
            Map<Integer, List<String>> got = new java.util.TreeMap<>();
            for (ConsumerRecord<byte[], byte[]> r : EosRig.readCommitted(broker, appId + "." + EosApp.VPROBE_OUT)) {
                got.computeIfAbsent(r.partition(), x -> new ArrayList<>())
                    .add(EosRig.str(r.key()) + " " + EosRig.str(r.value()));
            }
            long outputs = got.values().stream().mapToLong(List::size).sum();
            assertEquals("one output per input record", in.produced, outputs);
            for (Map.Entry<Integer, List<String>> e : expected.entrySet()) {
                List<String> g = got.getOrDefault(e.getKey(), List.of());
                for (int i = 0; i < e.getValue().size(); i++) {
                    assertEquals("partition " + e.getKey() + " output " + i + " (seed " + seed + ")", e.getValue().get(i),
                        i < g.size() ? g.get(i) : null);
                }
            }
            // v|v'@ts': the lookup at ts - 0.7 v s found the version put for the record of ts'; v|-: none
            long found = got.values().stream().flatMap(List::stream).filter(l -> !l.endsWith("|-")).count();
            long maxReplayed = EosRig.checkRestoreBound(EosRig.changelog(broker, appId, EosApp.VPROBE), restores,
                EosApp.VPROBE);
            assertTrue("some lookups found a version, some none", found > 0 && found < outputs);
            System.out.printf("eos versioned join kill loop: %d kills, %d records, %d join outputs equal to Kafka's "
                    + "versioned store's (%d found a table version), %d restores, at most %d records replayed per restore, "
                    + "seed %d%n", kills, in.produced, outputs, found, restores.size(), maxReplayed, seed);
        }
    }

    /** What {@link #killRounds} did: kills per mode, where they landed, and the restores the children reported. */
    static final class KillRounds {
        /** Rounds per mode (0 start-up, 1 processing, 2 at a commit). */
        final int[] modes = new int[3];
        /** Kills that came before the application was RUNNING. */
        int killedBeforeRunning;
        /** Kills that came between a transaction commit's start and its end. */
        int killedAtCommit;
        /** The restores every round's child reported. */
        final List<Restore> restores = new ArrayList<>();
    }

    /**
     * The kill rounds of the kill-loop tests: before each round the next chunk of input (the total spread over
     * two thirds of the rounds), then the application started on {@code state} with {@code args} (every third
     * round also with a 1 KiB {@code kstate.max.uncommitted.bytes} and 500 ms commits, so commits spill), run as
     * the round's mode says and SIGKILLed; the child must be alive up to the kill and log no error.
     *
     * @param modeOf the round's mode: 0 during start-up and restore (killed after 0.3 to 3.3 s, mostly before
     *     RUNNING), 1 while processing (RUNNING, then up to 1.5 s), 2 right as a producer transaction commits
     *     (kstate then commits its stores)
     */
    private static KillRounds killRounds(Input in, String appId, File state, File logs, String name, int kills,
                                         int total, Random rnd, java.util.function.IntUnaryOperator modeOf,
                                         String... args) throws Exception {
        int chunk = Math.max(1, total / (kills * 2 / 3));
        String[] spilling = Arrays.copyOf(args, args.length + 2);
        spilling[args.length] = "max.uncommitted=1024";
        spilling[args.length + 1] = "commit.ms=500";
        KillRounds k = new KillRounds();
        for (int round = 0; round < kills; round++) {
            if (in.produced < total) {
                in.produce((int) Math.min(chunk, total - in.produced));
            }
            App app = start(name + round, appId, state, logs, round % 3 == 2 ? spilling : args);
            int mode = modeOf.applyAsInt(round);
            k.modes[mode]++;
            try {
                if (mode == 0) {
                    Thread.sleep(300 + rnd.nextInt(3000));
                } else if (mode == 1) {
                    assertTrue("RUNNING in round " + round + ": " + app.errors + "\n" + app.tail(),
                        app.awaitRunning(90_000));
                    Thread.sleep(rnd.nextInt(1500));
                } else {
                    assertTrue("RUNNING in round " + round, app.awaitRunning(90_000));
                    long target = app.commitsBegun + 1 + rnd.nextInt(6);
                    app.await(a -> a.commitsBegun >= target, 10_000);
                    if (rnd.nextBoolean()) {
                        Thread.sleep(rnd.nextInt(5));
                    }
                }
                if (app.runningMs < 0) {
                    k.killedBeforeRunning++;
                }
                if (app.commitsBegun > app.commitsDone) {
                    k.killedAtCommit++;
                }
                assertTrue("child alive before the kill in round " + round + ": " + app.errors + "\n" + app.tail(),
                    app.process.isAlive());
            } finally {
                app.kill();
            }
            assertTrue("no errors in round " + round + ": " + app.errors, app.errors.isEmpty());
            k.restores.addAll(app.restores);
        }
        return k;
    }

    /**
     * What the versioned join sends for each input record: the same topology on Kafka 4.4's own
     * versioned store, in {@code TopologyTestDriver}, one driver per partition (as tasks have
     * their own store and stream time), fed the partition's records in order.
     */
    static Map<Integer, List<String>> versionedModel(List<ConsumerRecord<byte[], byte[]>> input, String prefix, File dir)
        throws Exception {
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> byPartition = new java.util.TreeMap<>();
        for (ConsumerRecord<byte[], byte[]> r : input) {
            byPartition.computeIfAbsent(r.partition(), x -> new ArrayList<>()).add(r);
        }
        Map<Integer, List<String>> out = new java.util.TreeMap<>();
        for (Map.Entry<Integer, List<ConsumerRecord<byte[], byte[]>>> e : byPartition.entrySet()) {
            org.apache.kafka.streams.StreamsBuilder builder = new org.apache.kafka.streams.StreamsBuilder();
            EosApp.addVersioned(builder, prefix, false);
            File stateDir = new File(dir, "p" + e.getKey());
            try (org.apache.kafka.streams.TopologyTestDriver driver = new org.apache.kafka.streams.TopologyTestDriver(
                builder.build(), dev.kstate.streams.TestSupport.props("versioned-model", stateDir))) {
                org.apache.kafka.streams.TestInputTopic<String, String> in = driver.createInputTopic(
                    EosApp.topic(prefix, EosApp.INPUT), new org.apache.kafka.common.serialization.StringSerializer(),
                    new org.apache.kafka.common.serialization.StringSerializer());
                org.apache.kafka.streams.TestOutputTopic<String, String> results = driver.createOutputTopic(
                    EosApp.topic(prefix, EosApp.VPROBE_OUT), new org.apache.kafka.common.serialization.StringDeserializer(),
                    new org.apache.kafka.common.serialization.StringDeserializer());
                List<String> lines = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> r : e.getValue()) {
                    in.pipeInput(EosRig.str(r.key()), EosRig.str(r.value()), r.timestamp());
                    for (org.apache.kafka.streams.test.TestRecord<String, String> o : results.readRecordsToList()) {
                        lines.add(o.key() + " " + o.value());
                    }
                }
                out.put(e.getKey(), lines);
            }
            dev.kstate.streams.TestSupport.deleteTree(stateDir);
        }
        return out;
    }

    /** Identity (inode) of each store directory of the application, to see wipes. */
    static Map<String, Object> storeInodes(File state, String appId) throws Exception {
        Map<String, Object> m = new java.util.TreeMap<>();
        for (String task : EosRig.taskDirs(state, appId)) {
            for (String store : new String[] {"counts", "sums"}) {
                File d = new File(new File(new File(state, appId), task), store);
                if (d.isDirectory()) {
                    m.put(task + "/" + store, java.nio.file.Files.readAttributes(d.toPath(),
                        java.nio.file.attribute.BasicFileAttributes.class).fileKey());
                }
            }
        }
        return m;
    }

    static void checkAll(Input in, String appId, File state) throws Exception {
        EosRig.checkOutputs(broker, in);
        EosRig.checkChangelog(EosRig.changelog(broker, appId, "counts"), in.counts(), "counts");
        EosRig.checkChangelog(EosRig.changelog(broker, appId, "sums"), in.sums(), "sums");
        EosRig.kstateVerifyAll(state, appId);
    }

    /** A clean close, then a restart on the same state: nothing is restored, nothing wiped. */
    @Test
    public void cleanShutdownThenRestartRestoresNothing() throws Exception {
        String appId = "eos-clean";
        File state = new File(base, "clean-state");
        File logs = new File(base, "clean-logs");
        logs.mkdirs();
        try (Input in = input(appId, 7, 500)) {
            in.produce(3000);
            App a = start("clean-a", appId, state, logs, "variant=kstate");
            processAllAndStop(a, appId, "RUNNING");
            Map<String, Object> before = storeInodes(state, appId);
            assertEquals("both stores of every task on disk", 2 * PARTITIONS, before.size());
            App b = start("clean-b", appId, state, logs, "variant=kstate");
            try {
                assertTrue("RUNNING after the restart", b.awaitRunning(90_000));
                checkOpenedOnceAndAdopted(b);
                in.produce(1000);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                EosRig.checkQueries(b.query(60_000), in.counts(), in.sums());
                assertEquals("clean exit", 0, b.stop(90_000));
            } finally {
                b.process.destroyForcibly();
            }
            assertTrue("errors: " + a.errors + b.errors, a.errors.isEmpty() && b.errors.isEmpty());
            for (Restore r : b.restores) {
                assertTrue("nothing to restore after a clean close: " + r, r.restored <= 0 && r.start >= r.end - 1);
            }
            assertEquals("no store directory wiped or recreated", before, storeInodes(state, appId));
            checkAll(in, appId, state);
        }
    }

    /**
     * A session store on the memory engine beside RocksDB stores, behind the DSL's record cache,
     * where it is persistent to Kafka ({@code KstateSessionStore#persistent}): SIGKILLed while
     * processing, restarted, closed cleanly and restarted again, under {@code exactly_once_v2}
     * without {@code enable.transactional.statestores} (where Kafka declares a task corrupted
     * when a persistent store of a non-empty task directory has no offset). Every start
     * restores the memory store in full, from its changelog's start; the clean restart
     * restores nothing of the RocksDB stores and wipes none of them (no task is declared
     * corrupted for the memory store that opens without an offset); the latest committed
     * output of every key (counts, sums, window and session counts) is the model's.
     */
    @Test
    public void memorySessionStoreBehindTheCacheBesideRocksDbStores() throws Exception {
        String appId = "eos-memsession";
        long seed = Long.getLong("kstate.eos.seed", System.nanoTime());
        File state = new File(base, "memsession-state");
        File logs = new File(base, "memsession-logs");
        logs.mkdirs();
        String[] args = {"variant=kstate", "windowed=true", "session.engine=memory", "cache=true", "window.ms=10000",
            "session.gap.ms=10000", "instance=i1", "txn.stores=false"};
        EosRig.createWindowedTopics(broker, appId + ".", PARTITIONS);
        try (Input in = new Input(broker, appId + ".", 300, seed)) {
            in.produce(4000);
            App a = start("memsession-a", appId, state, logs, args);
            try {
                assertTrue("RUNNING", a.awaitRunning(90_000));
                assertTrue("commits before the kill", a.await(x -> x.commitsDone >= 3, 90_000));
                in.produce(2000);
            } finally {
                a.process.destroyForcibly();
                a.process.waitFor();
            }
            App b = start("memsession-b", appId, state, logs, args);
            processAllAndStop(b, appId, "RUNNING after the kill");
            Map<String, Object> before = storeInodes(state, appId);
            assertEquals("both RocksDB key-value stores of every task on disk", 2 * PARTITIONS, before.size());
            App c = start("memsession-c", appId, state, logs, args);
            try {
                assertTrue("RUNNING after the clean restart", c.awaitRunning(90_000));
                in.produce(2000);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                assertEquals("clean exit", 0, c.stop(90_000));
            } finally {
                c.process.destroyForcibly();
            }
            assertTrue("errors: " + a.errors + b.errors + c.errors, a.errors.isEmpty() && b.errors.isEmpty()
                && c.errors.isEmpty());
            for (App app : new App[] {b, c}) {
                List<Restore> memory = new ArrayList<>();
                for (Restore r : app.restores) {
                    if (r.store.equals("scounts")) {
                        memory.add(r);
                        assertEquals(app.name + ": the memory store restores from the changelog's start: " + r, 0, r.start);
                        // by the clean restart every partition has sessions (the kill may come first)
                        assertTrue(app.name + ": and replays it: " + r, app == b || r.restored > 0);
                    } else if (app == c) {
                        assertTrue("nothing to restore after a clean close: " + r, r.restored <= 0 && r.start >= r.end - 1);
                    }
                }
                assertEquals(app.name + ": a restore of the memory store per task", PARTITIONS, memory.size());
                assertTrue(app.name + ": sessions replayed", memory.stream().mapToLong(r -> r.restored).sum() > 0);
            }
            assertEquals("no store directory wiped or recreated", before, storeInodes(state, appId));
            EosRig.checkLatestOutputs(broker, in, 10_000, 10_000);
        }
    }

    /** Waits until {@code app} runs, has processed the whole input and has closed cleanly; kills it otherwise. */
    private static void processAllAndStop(App app, String appId, String running) throws Exception {
        try {
            assertTrue(running, app.awaitRunning(90_000));
            EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
            assertEquals("clean exit", 0, app.stop(90_000));
        } finally {
            app.process.destroyForcibly();
        }
    }

    /** A store's open and adoption events in a child's kstate log: {@code store@task -> [verb thread, ...]}. */
    static Map<String, List<String>> opensByStore(App app) {
        java.util.regex.Pattern p = java.util.regex.Pattern.compile(
            "INFO (\\S+) kstate store (\\S+) \\(task (\\S+)\\): (opened|pre-opened|adopted|deferred|closed by Kafka Streams' "
                + "start-up path)[ ;].*");
        Map<String, List<String>> m = new java.util.TreeMap<>();
        synchronized (app.logs) {
            for (String l : app.logs) {
                java.util.regex.Matcher x = p.matcher(l);
                if (x.matches()) {
                    String verb = x.group(4).startsWith("closed") ? "parked" : x.group(4);
                    m.computeIfAbsent(x.group(2) + "@" + x.group(3), k -> new ArrayList<>()).add(verb + " " + x.group(1));
                }
            }
        }
        return m;
    }

    /**
     * Checks that each store of each task was opened once and adopted by the stream thread
     * instead of opening it a second time: opened by Kafka's start-up path (on the main thread,
     * inside {@code KafkaStreams#start()}) and parked, or, with the default
     * {@code kstate.startup.defer.open}, answered from its offsets hint on that path (nothing
     * opened there) and opened in the background.
     */
    static void checkOpenedOnceAndAdopted(App app) {
        Map<String, List<String>> opens = opensByStore(app);
        assertEquals("both stores of every task were initialised: " + opens, 2 * PARTITIONS, opens.size());
        for (Map.Entry<String, List<String>> e : opens.entrySet()) {
            // opened by the start-up path (or ahead of it in the background, then adopted by it),
            // parked when the path closes it, adopted by the stream thread
            List<String> events = new ArrayList<>(e.getValue());
            String what = e.getKey() + ": opened once, parked by the start-up path, adopted by the stream thread: " + events;
            if (events.contains("deferred main")) {
                // deferred: the open runs in the background (or on the adopting stream thread)
                // whenever it gets to it, so only its count is fixed
                assertEquals(what, 1, events.stream().filter(x -> x.startsWith("pre-opened ")).count());
                events.removeIf(x -> x.startsWith("pre-opened "));
                assertEquals(what, Arrays.asList("deferred main", "parked main"), events.subList(0, 2));
                assertEquals(what, 3, events.size());
                assertTrue(what, events.get(2).startsWith("adopted ") && events.get(2).contains("StreamThread"));
                continue;
            }
            if (events.size() == 4 && events.get(0).startsWith("pre-opened ") && events.get(1).equals("adopted main")) {
                events.remove(0);
                events.set(0, "opened main");
            }
            assertEquals(what, 3, events.size());
            assertEquals(what, "opened main", events.get(0));
            assertEquals(what, "parked main", events.get(1));
            assertTrue(what, events.get(2).startsWith("adopted ") && events.get(2).contains("StreamThread"));
        }
        synchronized (app.logs) {
            for (String l : app.logs) {
                assertTrue("no parked store was closed instead of adopted: " + l, !l.contains("closed the parked store"));
            }
        }
    }

    /**
     * A SIGKILL while idle (every input record processed and committed, the writes since the
     * last flush only in the stores' write-ahead logs), then a restart on the same state: Kafka's
     * start-up path opens each kstate store once (replaying its log) and the stream thread
     * adopts it instead of opening it again; nothing is restored, nothing wiped, and outputs,
     * changelogs, queries and the stores stay exactly-once.
     */
    @Test
    public void restartAfterKillOpensEachStoreOnce() throws Exception {
        String appId = "eos-adopt";
        File state = new File(base, "adopt-state");
        File logs = new File(base, "adopt-logs");
        logs.mkdirs();
        try (Input in = input(appId, 19, 500)) {
            in.produce(3000);
            App a = start("adopt-a", appId, state, logs, "variant=kstate", "instance=i1");
            try {
                assertTrue("RUNNING", a.awaitRunning(90_000));
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                Thread.sleep(1_000); // the stores commit right after the producer's transaction
                assertTrue("first run: nothing parked on a fresh state directory: " + opensByStore(a),
                    opensByStore(a).values().stream().allMatch(l -> l.size() == 1 && l.get(0).startsWith("opened ")));
            } finally {
                a.kill();
            }
            assertTrue("errors: " + a.errors, a.errors.isEmpty());
            Map<String, Object> before = storeInodes(state, appId);
            assertEquals("both stores of every task on disk", 2 * PARTITIONS, before.size());

            App b = start("adopt-b", appId, state, logs, "variant=kstate", "instance=i1");
            try {
                assertTrue("RUNNING after the kill: " + b.errors + "\n" + b.tail(), b.awaitRunning(90_000));
                b.await(x -> x.restores.stream().allMatch(r -> r.restored >= 0), 10_000);
                checkOpenedOnceAndAdopted(b);
                for (Restore r : b.restores) {
                    assertTrue("nothing to restore after a kill while idle: " + r, r.restored <= 0);
                }
                in.produce(1000);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                EosRig.checkQueries(b.query(60_000), in.counts(), in.sums());
                assertEquals("clean exit", 0, b.stop(90_000));
            } finally {
                b.process.destroyForcibly();
            }
            assertTrue("errors: " + b.errors, b.errors.isEmpty());
            assertEquals("no store directory wiped or recreated", before, storeInodes(state, appId));
            checkAll(in, appId, state);
            System.out.printf("adoption after a kill: %s%n", opensByStore(b));
        }
    }

    /**
     * A second instance joins (tasks move to it), then leaves (they come back): outputs and state
     * stay exactly-once, and the first instance's kstate directories survive the round trip (the
     * tasks come back restoring only what the second instance wrote).
     */
    @Test
    public void taskMigratesToASecondInstanceAndBack() throws Exception {
        String appId = "eos-move";
        File stateA = new File(base, "move-a");
        File stateB = new File(base, "move-b");
        File logs = new File(base, "move-logs");
        logs.mkdirs();
        try (Input in = input(appId, 11, 500)) {
            in.produce(3000);
            App a = start("move-a", appId, stateA, logs, "variant=kstate");
            App b = null;
            try {
                assertTrue("A RUNNING", a.awaitRunning(90_000));
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                Map<String, Object> before = storeInodes(stateA, appId);
                assertEquals("A holds every task", 2 * PARTITIONS, before.size());
                int restoresBefore = a.restores.size();

                b = start("move-b", appId, stateB, logs, "variant=kstate");
                App bb = b;
                assertTrue("B got tasks (and restored them): " + b.tail(), b.await(x -> !bb.restores.isEmpty() && x.runningMs >= 0,
                    120_000));
                in.produce(2000);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                assertEquals("B leaves cleanly", 0, b.stop(90_000));
                int moved = (int) b.restores.stream().map(r -> r.tp).distinct().count();

                // A takes the tasks back: restores what B wrote, from A's own committed offsets
                assertTrue("A restores the returning tasks", a.await(x -> x.restores.size() > restoresBefore
                    && x.restores.stream().skip(restoresBefore).allMatch(r -> r.restored >= 0), 120_000));
                in.produce(1000);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                assertTrue("A RUNNING again", a.await(x -> "RUNNING".equals(lastState(x)), 60_000));
                EosRig.checkQueries(a.query(60_000), in.counts(), in.sums());
                assertEquals("clean exit", 0, a.stop(90_000));
                assertTrue("errors: " + a.errors + b.errors, a.errors.isEmpty() && b.errors.isEmpty());
                List<Restore> back = new ArrayList<>(a.restores.subList(restoresBefore, a.restores.size()));
                for (Restore r : back) {
                    assertTrue("a returning task resumes from A's committed offset, not from scratch: " + r, r.start > 0);
                }
                assertTrue("tasks moved to B and back (" + moved + " partitions)", moved > 0 && !back.isEmpty());
                assertEquals("A's store directories were not wiped", before, storeInodes(stateA, appId));
                System.out.printf("migration: %d store partitions moved to B and back; A replayed %s%n", moved, back);
            } finally {
                a.process.destroyForcibly();
                if (b != null) {
                    b.process.destroyForcibly();
                }
            }
            checkAll(in, appId, stateA);
        }
    }

    /**
     * Two instances with one standby replica each: every task is active on one instance and
     * standby on the other. A is SIGKILLed; B promotes its standbys. A promoted task restores only
     * the tail B's standby had not applied yet, never the changelog from scratch; B's standby
     * directories are promoted in place (not wiped); outputs and state stay exactly-once.
     */
    @Test
    public void standbyIsPromotedWhenTheActiveIsKilled() throws Exception {
        String appId = "eos-standby";
        File stateA = new File(base, "standby-a");
        File stateB = new File(base, "standby-b");
        File logs = new File(base, "standby-logs");
        logs.mkdirs();
        try (Input in = input(appId, 13, 500)) {
            in.produce(3000);
            App a = start("standby-a", appId, stateA, logs, "variant=kstate", "standbys=1");
            App b = null;
            try {
                awaitOrFail(a, x -> x.runningMs >= 0, "A RUNNING");
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                b = start("standby-b", appId, stateB, logs, "variant=kstate", "standbys=1");
                awaitOrFail(b, x -> x.runningMs >= 0 && !x.standbyStarts.isEmpty(), "B RUNNING with a standby task");
                in.produce(2000);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                Thread.sleep(2_000); // B's standbys apply the last changelog records and commit them
                Set<String> standbys = new TreeSet<>();
                synchronized (b.standbyStarts) {
                    for (String l : b.standbyStarts) { // STANDBY_START store topic partition offset
                        String[] f = l.split(" ");
                        standbys.add(f[2] + "-" + f[3]);
                    }
                }
                Map<String, Object> dirsB = storeInodes(stateB, appId);
                long changelogRecords = EosRig.changelog(broker, appId, "counts").values().stream()
                    .mapToLong(List::size).sum();
                int restoresBefore = b.restores.size();

                a.kill();
                in.produce(1000);
                EosRig.awaitProcessed(broker, appId + ".", appId, 180_000); // only B is left to do it
                EosRig.checkQueries(b.query(60_000), in.counts(), in.sums());
                assertEquals("clean exit", 0, b.stop(90_000));
                assertTrue("errors: " + a.errors + b.errors, a.errors.isEmpty() && b.errors.isEmpty());
                long restored = 0;
                List<Restore> promoted = new ArrayList<>();
                for (Restore r : b.restores.subList(restoresBefore, b.restores.size())) {
                    if (standbys.contains(r.tp.topic() + "-" + r.tp.partition())) {
                        promoted.add(r);
                        assertTrue("a promoted standby resumes from its own offset, not from scratch: " + r, r.start > 0);
                        restored += Math.max(0, r.restored);
                    }
                }
                assertTrue("promotion restored " + restored + " records; the counts changelog has " + changelogRecords,
                    restored < changelogRecords / 4);
                for (Map.Entry<String, Object> e : dirsB.entrySet()) {
                    assertEquals("B's store directory " + e.getKey() + " was kept, not wiped", e.getValue(),
                        storeInodes(stateB, appId).get(e.getKey()));
                }
                System.out.printf("standby promotion: standbys %s promoted; restores after the kill %s%n", standbys,
                    promoted);
            } finally {
                a.process.destroyForcibly();
                if (b != null) {
                    b.process.destroyForcibly();
                }
            }
            checkAll(in, appId, stateB);
        }
    }

    /** Waits for {@code cond}; fails with the child's last lines when it does not come. */
    private static void awaitOrFail(App app, java.util.function.Predicate<App> cond, String what) throws Exception {
        if (!app.await(cond, 120_000)) {
            throw new AssertionError(what + " (not within 120 s); errors " + app.errors + "\n" + app.tail());
        }
    }

    /**
     * A zombie: A is frozen (SIGSTOP) with its producer transaction open; the group evicts it and
     * B takes its tasks; then A wakes up (SIGCONT), believing it still owns them. Kafka fences
     * it: its producer or its offsets are refused, its tasks are closed dirty and it rejoins. Its
     * uncommitted writes never reach its kstate stores (nor the outputs), its store directories are
     * not wiped (the transactional-store flag is on), and outputs and state stay exactly-once.
     */
    @Test
    public void zombieIsFencedAndLeavesNoTrace() throws Exception {
        String appId = "eos-zombie";
        File stateA = new File(base, "zombie-a");
        File stateB = new File(base, "zombie-b");
        File logs = new File(base, "zombie-logs");
        logs.mkdirs();
        try (Input in = input(appId, 17, 500)) {
            in.produce(3000);
            App a = start("zombie-a", appId, stateA, logs, "variant=kstate", "commit.ms=2000");
            App b = null;
            try {
                assertTrue("A RUNNING", a.awaitRunning(90_000));
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                Map<String, Object> dirsA = storeInodes(stateA, appId);
                // freeze A in the middle of a transaction: records processed, not yet committed
                long commits = a.commitsDone;
                in.produce(1000);
                assertTrue("A commits again", a.await(x -> x.commitsDone > commits, 30_000));
                in.produce(1000);
                Thread.sleep(300);
                a.pause();
                b = start("zombie-b", appId, stateB, logs, "variant=kstate", "commit.ms=2000");
                App bb = b;
                assertTrue("B takes A's tasks after A's session times out", b.await(x -> x.runningMs >= 0
                    && !bb.restores.isEmpty(), 120_000));
                in.produce(1000);
                EosRig.awaitProcessed(broker, appId + ".", appId, 180_000);

                long linesBefore = a.lines.size();
                a.resume();
                assertTrue("the zombie notices and rejoins: " + a.tail(), a.await(x -> x.lines.stream().skip(linesBefore)
                    .anyMatch(l -> l.startsWith("STATE REBALANCING") || l.startsWith("FENCED")), 60_000));
                in.produce(1000);
                EosRig.awaitProcessed(broker, appId + ".", appId, 180_000);
                assertEquals("B leaves cleanly", 0, b.stop(90_000));
                in.produce(500);
                EosRig.awaitProcessed(broker, appId + ".", appId, 180_000);
                assertTrue("A RUNNING with every task", a.await(x -> "RUNNING".equals(lastState(x)), 60_000));
                EosRig.checkQueries(a.query(60_000), in.counts(), in.sums());
                assertEquals("clean exit", 0, a.stop(90_000));
                assertTrue("errors: " + a.errors + b.errors, a.errors.isEmpty() && b.errors.isEmpty());
                assertEquals("the zombie's store directories were not wiped", dirsA, storeInodes(stateA, appId));
                List<String> fenced = new ArrayList<>();
                synchronized (a.lines) {
                    a.lines.stream().filter(l -> l.startsWith("FENCED")).forEach(fenced::add);
                }
                System.out.printf("zombie: fenced calls %s; A replayed %s%n", fenced, a.restores);
            } finally {
                a.process.destroyForcibly();
                if (b != null) {
                    b.process.destroyForcibly();
                }
            }
            checkAll(in, appId, stateA);
        }
    }

    static String lastState(App a) {
        synchronized (a.lines) {
            for (int i = a.lines.size() - 1; i >= 0; i--) {
                if (a.lines.get(i).startsWith("STATE ")) {
                    return a.lines.get(i).split(" ")[1];
                }
            }
        }
        return null;
    }
}
