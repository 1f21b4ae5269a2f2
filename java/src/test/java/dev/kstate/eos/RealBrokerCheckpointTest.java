package dev.kstate.eos;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import dev.kstate.eos.EosRig.App;
import dev.kstate.eos.EosRig.Input;
import dev.kstate.eos.EosRig.Restore;
import dev.kstate.streams.TestSupport;
import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.Test;

/**
 * Checkpoints in an object store on a real Kafka 4.4 broker: an {@code exactly_once_v2}
 * application with key-value, window and session stores on kstate publishes checkpoints to a
 * {@code file://} target; instances with empty state directories join and take tasks over,
 * restoring from the checkpoints and replaying only the changelog written after them; SIGKILLs
 * during uploads, downloads and garbage collections, and a zombie that keeps publishing, never
 * break the exactly-once outputs nor leave a manifest naming a missing file.
 */
public class RealBrokerCheckpointTest extends BrokerSuite {
    static final int PARTITIONS = 4;
    /** The stores of {@code windowed=true}: key-value (counts, sums), window, session. */
    static final List<String> STORES = Arrays.asList("counts", "sums", "wcounts", "scounts");
    static final int KILLS = Integer.getInteger("kstate.eos.checkpoint.kills", 30);
    static final long WINDOW_MS = 10_000;
    static final long GAP_MS = 10_000;
    /** {@code kstate store NAME (task T): restored checkpoint KEY (N files, B bytes) at changelog offset O}. */
    static final Pattern RESTORED = Pattern.compile(
        "kstate store (\\S+) \\(task (\\S+)\\): restored checkpoint (\\S+) \\((\\d+) files, (\\d+) bytes\\) at changelog offset (-?\\d+)");

    private static Input input(String appId, long seed, int keys) throws Exception {
        EosRig.createWindowedTopics(broker, appId + ".", PARTITIONS);
        return new Input(broker, appId + ".", keys, seed);
    }

    /** An instance of the application with checkpoints to {@code target}. */
    private static App start(String name, String appId, File state, File logs, CheckpointTarget target, String... args)
        throws Exception {
        List<String> all = new ArrayList<>(Arrays.asList("topics=" + appId + ".", "variant=kstate", "windowed=true",
            "window.ms=" + WINDOW_MS, "session.gap.ms=" + GAP_MS,
            // a client without state gets its tasks at once (no warm-up replicas): the move under test
            "acceptable.lag=" + Long.MAX_VALUE,
            "kstate.checkpoint.uri=" + target.uri(), "kstate.checkpoint.interval.ms=300"));
        all.addAll(Arrays.asList(args));
        return EosRig.start(name, broker, appId, state, logs, all.toArray(new String[0]));
    }

    /** A restore from a checkpoint, as the instance logged it. */
    static final class FromCheckpoint {
        final String store;
        final int partition;
        final String manifest;
        final long bytes;
        final long offset;

        FromCheckpoint(Matcher m) {
            store = m.group(1);
            partition = Integer.parseInt(m.group(2).substring(m.group(2).indexOf('_') + 1));
            manifest = m.group(3);
            bytes = Long.parseLong(m.group(5));
            offset = Long.parseLong(m.group(6));
        }
    }

    /** {@code kstate store NAME (task T): downloading checkpoint KEY ...}, logged before a restore's download. */
    static final Pattern DOWNLOADING = Pattern.compile("kstate store (\\S+) \\(task (\\S+)\\): downloading checkpoint ");
    /** Ends a download: restored, or refused after a failed restore. */
    static final Pattern DOWNLOAD_ENDED = Pattern.compile(
        "kstate store (\\S+) \\(task (\\S+)\\): (restored checkpoint |refusing checkpoint \\S+: its restore failed)");

    /** Whether the instance's log shows a checkpoint download begun and not ended (a kill now lands inside it). */
    static boolean downloading(App app) {
        java.util.Set<String> open = new java.util.HashSet<>();
        synchronized (app.logs) {
            for (String line : app.logs) {
                Matcher d = DOWNLOADING.matcher(line);
                if (d.find()) {
                    open.add(d.group(1) + " " + d.group(2));
                    continue;
                }
                Matcher e = DOWNLOAD_ENDED.matcher(line);
                if (e.find()) {
                    open.remove(e.group(1) + " " + e.group(2));
                }
            }
        }
        return !open.isEmpty();
    }

    static List<FromCheckpoint> fromCheckpoints(App app) {
        List<FromCheckpoint> out = new ArrayList<>();
        synchronized (app.logs) {
            for (String line : app.logs) {
                Matcher m = RESTORED.matcher(line);
                if (m.find()) {
                    out.add(new FromCheckpoint(m));
                }
            }
        }
        return out;
    }

    static void checkOutputs(Input in) {
        EosRig.checkOutputs(broker, in);
        EosRig.checkWindowOutputs(broker, in, WINDOW_MS);
        EosRig.checkSessionOutputs(broker, in, GAP_MS);
    }

    /** Waits until every store of every task has a checkpoint at or past {@code minOffsets} (-1: any). */
    static void awaitCheckpoints(CheckpointTarget target, String appId, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (target.newestOffsets(appId).size() < STORES.size() * PARTITIONS) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("not every store published a checkpoint within " + timeoutMs + " ms: "
                    + target.newestOffsets(appId));
            }
            Thread.sleep(100);
        }
    }

    /**
     * A second instance with an empty state directory joins; the tasks it takes restore from
     * their newest checkpoints and replay only the changelog written after them (here: what A
     * wrote after the checkpoints were taken); the outputs stay exactly-once; every manifest
     * names present files.
     */
    @Test
    public void movedTasksRestoreOnlyTheChangelogAfterTheirCheckpoint() throws Exception {
        String appId = "ckpt-move";
        File stateA = new File(base, "move-a");
        File stateB = new File(base, "move-b");
        File logs = new File(base, "move-logs");
        logs.mkdirs();
        CheckpointTarget target = new CheckpointTarget(new File(base, "move-target"));
        try (Input in = input(appId, 31, 400)) {
            in.produce(3000);
            App a = start("move-a", appId, stateA, logs, target);
            App b = null;
            try {
                assertTrue("A RUNNING: " + a.tail(), a.awaitRunning(90_000));
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                awaitCheckpoints(target, appId, 60_000);
                in.produce(500); // the tail the moved tasks must replay, at most

                b = start("move-b", appId, stateB, logs, target);
                App bb = b;
                assertTrue("B got tasks and restored them: " + b.tail(), b.await(x -> x.runningMs >= 0
                    && !x.restores.isEmpty() && x.restores.stream().allMatch(r -> r.restored >= 0), 120_000));
                List<FromCheckpoint> used = fromCheckpoints(b);
                List<Restore> restores = new ArrayList<>(b.restores);
                assertTrue("B restored its tasks from checkpoints: " + b.logs, !used.isEmpty());
                long replayed = 0;
                long whole = 0;
                for (Restore r : restores) {
                    FromCheckpoint c = used.stream().filter(x -> x.store.equals(r.store) && x.partition == r.tp.partition())
                        .findFirst().orElseThrow(() -> new AssertionError("B restored " + r + " without a checkpoint: "
                            + bb.logs));
                    assertTrue("the restore of " + r + " starts at its checkpoint's offset " + c.offset + " or later",
                        r.start >= c.offset);
                    assertTrue("the restore of " + r + " replays at most the changelog after the checkpoint",
                        r.restored <= r.end - c.offset);
                    replayed += r.restored;
                    whole += r.end;
                }
                assertTrue("the moved tasks replayed less than their changelogs (" + replayed + " of " + whole + ")",
                    replayed < whole);

                in.produce(1000);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                assertEquals("B leaves cleanly", 0, b.stop(90_000));
                assertTrue("A RUNNING with every task again", a.await(x -> "RUNNING".equals(RealBrokerEosTest.lastState(x))
                    && x.restores.stream().allMatch(r -> r.restored >= 0), 120_000));
                in.produce(300);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                EosRig.checkQueries(a.query(60_000), in.counts(), in.sums());
                assertEquals("A leaves cleanly", 0, a.stop(90_000));
                assertTrue("errors: " + a.errors + b.errors, a.errors.isEmpty() && b.errors.isEmpty());
                System.out.printf("checkpoint move: B restored %d store partitions from checkpoints (%d bytes), replayed %d "
                    + "changelog records of %d%n", used.size(), used.stream().mapToLong(x -> x.bytes).sum(), replayed, whole);
            } finally {
                a.process.destroyForcibly();
                if (b != null) {
                    b.process.destroyForcibly();
                }
            }
            checkOutputs(in);
            assertEquals("every manifest names present files", List.of(), target.broken(appId));
        }
    }

    /**
     * Two instances publishing slowly (uploads throttled, so that they last), garbage-collecting
     * often, are SIGKILLed at random {@link #KILLS} times; a killed instance restarts on an empty
     * state directory every other time, so its tasks download their checkpoints (and some kills
     * land in those downloads). Then the outputs are exactly-once and no manifest names a missing
     * file.
     */
    @Test
    public void killsDuringUploadDownloadAndGcStayExactlyOnce() throws Exception {
        String appId = "ckpt-kill";
        File logs = new File(base, "kill-logs");
        logs.mkdirs();
        CheckpointTarget target = new CheckpointTarget(new File(base, "kill-target"));
        long seed = Long.getLong("kstate.eos.seed", System.nanoTime());
        Random rnd = new Random(seed);
        System.out.println("checkpoint kill loop: seed " + seed + " (-Dkstate.eos.seed=" + seed + ")");
        // uploads and downloads throttled, so that kills land inside them
        String[] slow = {"kstate.checkpoint.max.bytes.per.sec=65536", "kstate.checkpoint.max.restore.bytes.per.sec=65536",
            "kstate.checkpoint.keep=1", "kstate.checkpoint.gc.grace.ms=500"};
        File[] states = {new File(base, "kill-a"), new File(base, "kill-b")};
        App[] apps = new App[2];
        int kills = 0;
        int wipedRestarts = 0;
        int beforeRunning = 0;
        int restoringFromCheckpoint = 0;
        int insideDownload = 0;
        try (Input in = input(appId, 37, 2000)) {
            in.produce(4000);
            try {
                apps[0] = start("kill-a0", appId, states[0], logs, target, slow);
                assertTrue("A RUNNING", apps[0].awaitRunning(90_000));
                apps[1] = start("kill-b0", appId, states[1], logs, target, slow);
                for (int round = 1; kills < KILLS; round++) {
                    in.produce(200 + rnd.nextInt(400));
                    int v = rnd.nextInt(2);
                    Thread.sleep(rnd.nextInt(3000));
                    App victim = apps[v];
                    boolean running = victim.runningMs >= 0;
                    boolean downloading = !fromCheckpoints(victim).isEmpty() && !running;
                    boolean inside = downloading(victim);
                    victim.kill();
                    insideDownload += inside ? 1 : 0;
                    kills++;
                    beforeRunning += running ? 0 : 1;
                    restoringFromCheckpoint += downloading ? 1 : 0;
                    boolean wipe = rnd.nextBoolean();
                    if (wipe) {
                        TestSupport.deleteTree(states[v]);
                        wipedRestarts++;
                    }
                    apps[v] = start("kill-" + (v == 0 ? "a" : "b") + round, appId, states[v], logs, target, slow);
                    // some rounds let the restarted instance come up (and download) before the next kill
                    if (rnd.nextInt(3) == 0) {
                        apps[v].awaitRunning(60_000);
                    }
                }
                in.produce(300);
                for (App app : apps) {
                    assertTrue(app.name + " RUNNING after the kills: " + app.tail(), app.awaitRunning(120_000));
                }
                EosRig.awaitProcessed(broker, appId + ".", appId, 240_000);
                assertEquals("B leaves cleanly", 0, apps[1].stop(90_000));
                App a = apps[0];
                // (restores begun before a rebalance may have been suspended, never ended: only the state counts)
                assertTrue("A RUNNING with every task: " + a.tail(), a.await(x -> "RUNNING".equals(RealBrokerEosTest.lastState(x)),
                    120_000));
                in.produce(100);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                EosRig.checkQueries(a.query(60_000), in.counts(), in.sums());
                assertEquals("A leaves cleanly", 0, a.stop(90_000));
                assertTrue("errors: " + a.errors, a.errors.isEmpty());
            } finally {
                for (App app : apps) {
                    if (app != null) {
                        app.process.destroyForcibly();
                    }
                }
            }
            checkOutputs(in);
            assertEquals("every manifest names present files", List.of(), target.broken(appId));
            System.out.printf("checkpoint kill loop: %d SIGKILLs (%d before RUNNING, %d while restoring from a checkpoint, "
                + "%d inside a checkpoint download), %d restarts on an empty state directory, %d records, %d manifests "
                + "left%n", kills, beforeRunning, restoringFromCheckpoint, insideDownload, wipedRestarts, in.produced, target.manifests(appId).size());
        }
    }

    /**
     * A zombie: A is frozen (SIGSTOP) while B, with an empty state directory, takes its tasks
     * over from A's checkpoints and goes on; A is thawed and may publish its stale state before
     * it learns it lost the tasks. C, with an empty directory, then replaces B: it must restore
     * B's lineage (the highest changelog offsets), never the zombie's, and the outputs stay
     * exactly-once.
     */
    @Test
    public void zombiePublisherNeverOutranksTheNewOwner() throws Exception {
        String appId = "ckpt-zombie";
        File logs = new File(base, "zombie-logs");
        logs.mkdirs();
        CheckpointTarget target = new CheckpointTarget(new File(base, "zombie-target"));
        try (Input in = input(appId, 41, 300)) {
            in.produce(2000);
            App a = start("zombie-a", appId, new File(base, "zombie-a"), logs, target);
            App b = null;
            App c = null;
            try {
                assertTrue("A RUNNING", a.awaitRunning(90_000));
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                awaitCheckpoints(target, appId, 60_000);
                a.pause();
                in.produce(500);
                b = start("zombie-b", appId, new File(base, "zombie-b"), logs, target);
                assertTrue("B takes every task from the frozen A: " + b.tail(), b.await(x -> x.runningMs >= 0
                    && x.restores.stream().map(r -> r.tp).distinct().count() == (long) STORES.size() * PARTITIONS
                    && x.restores.stream().allMatch(r -> r.restored >= 0), 120_000));
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                in.produce(500);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                Thread.sleep(1500); // B publishes its lineage
                Map<String, Long> bLineage = target.newestOffsets(appId);
                a.resume(); // the zombie wakes up with its tasks' stores still open
                Thread.sleep(3000);
                assertEquals("B leaves cleanly", 0, b.stop(90_000));
                Map<String, Long> atClose = target.newestOffsets(appId);
                if (a.process.isAlive()) {
                    a.kill();
                }
                c = start("zombie-c", appId, new File(base, "zombie-c"), logs, target);
                assertTrue("C takes every task: " + c.tail(), c.await(x -> x.runningMs >= 0
                    && x.restores.stream().map(r -> r.tp).distinct().count() == (long) STORES.size() * PARTITIONS
                    && x.restores.stream().allMatch(r -> r.restored >= 0), 120_000));
                for (FromCheckpoint f : fromCheckpoints(c)) {
                    // the newest at B's close, or newer (A, thawed, may have rejoined as a legitimate owner)
                    long newest = atClose.getOrDefault("0_" + f.partition + "/" + f.store, -1L);
                    assertTrue("C restores the newest lineage of " + f.store + " " + f.partition + ": offset " + f.offset
                        + ", newest at B's close " + newest + " (B's lineage before the zombie woke: " + bLineage + ")",
                        f.offset >= newest);
                }
                assertTrue("C restored from checkpoints: " + c.logs, !fromCheckpoints(c).isEmpty());
                in.produce(300);
                EosRig.awaitProcessed(broker, appId + ".", appId, 120_000);
                EosRig.checkQueries(c.query(60_000), in.counts(), in.sums());
                assertEquals("C leaves cleanly", 0, c.stop(90_000));
                assertTrue("errors: " + b.errors + c.errors, b.errors.isEmpty() && c.errors.isEmpty());
            } finally {
                for (App x : new App[] {a, b, c}) {
                    if (x != null) {
                        x.process.destroyForcibly();
                    }
                }
            }
            checkOutputs(in);
            assertEquals("every manifest names present files", List.of(), target.broken(appId));
        }
    }
}
