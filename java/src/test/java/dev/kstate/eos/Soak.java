package dev.kstate.eos;

import dev.kstate.broker.KafkaBroker;
import dev.kstate.eos.EosRig.App;
import dev.kstate.eos.EosRig.Input;
import dev.kstate.streams.TestSupport;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The soak (issue #27; a documented command, not part of the tests): a real broker, the
 * {@link EosApp} counting application with {@code windowed=true} (key-value, window and session
 * stores, all on kstate, {@code exactly_once_v2} with {@code enable.transactional.statestores}),
 * two instances in child JVMs over {@code kstate.soak.partitions} input partitions, a steady
 * transactional producer, and for {@code kstate.soak.minutes}: SIGKILLs, SIGSTOPs (some long enough
 * to outlive the 3 s session timeout, so the group evicts the instance and fences it when it
 * wakes), clean restarts, and periods when the instances' state filesystem (a size-limited tmpfs
 * this JVM mounts) is filled with a ballast file to a few MiB or nothing free. Then the producer
 * stops, the instances drain, one leaves cleanly, and the rig's checks run against the model:
 * outputs of all four aggregations, the key-value changelogs, interactive queries and
 * {@code kstate verify} on every store directory. The last line is the summary; the exit code is 1
 * when the data differ from the model (an inconsistency), 3 when they do not but the application
 * stalled, failed to close or died outside a disk-full period, 2 when the soak itself broke.
 *
 * <p>{@code gradle -p java soak -Dkstate.soak.minutes=60 -Dkstate.soak.seed=1} or {@code scripts/soak.sh}.
 */
public final class Soak {
    private Soak() {
    }

    static final String APP = "soak";
    static final String PREFIX = "soak.";

    static long prop(String name, long dflt) {
        return Long.getLong("kstate.soak." + name, dflt);
    }

    private final long minutes = prop("minutes", 60);
    private final long seed = prop("seed", System.nanoTime());
    private final int rate = (int) prop("rate", 100);
    private final int keys = (int) prop("keys", 1000);
    private final int partitions = (int) prop("partitions", 6);
    private final long fsMb = prop("fs.mb", 3072);
    private final long windowMs = prop("window.ms", 10_000);
    private final long gapMs = prop("session.gap.ms", 10_000);
    private final File dir = new File(System.getProperty("kstate.soak.dir", "build/soak"));
    private final Random rnd = new Random(seed);
    private final long t0 = System.currentTimeMillis();

    private KafkaBroker broker;
    private File fs;
    private boolean mounted;
    private File logs;

    // ----- the two instances ----------------------------------------------------------------------

    /** One instance slot: its state directory and its current incarnation. */
    final class Slot {
        final String name;
        final File state;
        App app;
        /** When a down instance is started again; 0 when it is up (or being waited for). */
        long restartAt;
        /** When a SIGSTOPped instance gets SIGCONT; 0 when it runs. */
        long resumeAt;
        /** When a clean close was asked for; 0 when none. */
        long stopAskedAt;
        boolean killedByUs;
        int incarnation;

        Slot(String name) {
            this.name = name;
            this.state = new File(fs, name);
        }

        boolean up() {
            return app != null && app.process.isAlive() && resumeAt == 0 && stopAskedAt == 0;
        }

        void start() throws IOException {
            incarnation++;
            app = EosRig.start(name, broker, APP, state, logs, "topics=" + PREFIX, "variant=kstate", "windowed=true",
                "window.ms=" + windowMs, "session.gap.ms=" + gapMs);
            restartAt = 0;
            killedByUs = false;
            stopAskedAt = 0;
            starts++;
        }

        /** Books what the ended incarnation reported, and keeps its event lines in {@code <name>.stdout.log}. */
        void ended() throws IOException {
            List<String> lines;
            synchronized (app.lines) {
                lines = new ArrayList<>(app.lines);
            }
            for (String l : lines) {
                if (l.startsWith("STATE REBALANCING")) {
                    rebalances++;
                } else if (l.startsWith("FENCED")) {
                    fenced++;
                }
            }
            synchronized (app.restores) {
                for (EosRig.Restore r : app.restores) {
                    restored += Math.max(0, r.restored);
                    restoresCount++;
                }
            }
            StringBuilder b = new StringBuilder();
            b.append("=== ").append(name).append(" incarnation ").append(incarnation).append(" pid ")
                .append(app.process.pid()).append(" exit ").append(app.process.exitValue()).append('\n');
            for (String l : lines) {
                if (!l.startsWith("COMMIT_")) {
                    b.append(l).append('\n');
                }
            }
            Files.write(new File(logs, name + ".stdout.log").toPath(), b.toString().getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }
    }

    private Slot[] slots;

    // ----- figures --------------------------------------------------------------------------------

    int starts;
    int sigkills;
    int sigstops;
    int longStops;
    int cleanRestarts;
    int closeTimeouts;
    int rebalances;
    long restored;
    int restoresCount;
    int diskFullPeriods;
    int deathsInDiskFull;
    /** Deaths in disk-full periods whose error is kstate's, naming the full device. */
    int deathsKstateEnospc;
    /** Producer calls of a zombie instance refused by the broker ({@code FENCED} lines). */
    int fenced;
    int deathsOther;
    final List<String> deathErrors = new ArrayList<>();
    int checks;
    /** Failed checks of the data against the model: the inconsistencies. */
    final List<String> inconsistencies = new ArrayList<>();
    /** Failed checks of liveness (drain, clean close, rebalance): reported, but not inconsistencies. */
    final List<String> liveness = new ArrayList<>();
    final List<String> diskFullErrors = new ArrayList<>();

    private PrintStream out = System.out;

    void log(String s) {
        out.printf("[%s +%ds] %s%n", Instant.now().toString().substring(11, 19), (System.currentTimeMillis() - t0) / 1000, s);
        out.flush();
    }

    // ----- the small filesystem -------------------------------------------------------------------

    private File ballast;
    private long diskFullUntil;
    private long nextDiskFullAt;
    /** Deaths up to this long after a disk-full period are booked to it (an instance may die while it releases). */
    static final long DISK_FULL_AFTERMATH_MS = 15_000;
    private long lastDiskFullEnd = -1;

    void mountFs() throws Exception {
        fs = new File(dir, "state-fs");
        Files.createDirectories(fs.toPath());
        run("umount", fs.getAbsolutePath()); // a mount left behind by a killed run
        int rc = run("mount", "-t", "tmpfs", "-o", "size=" + fsMb + "m", "kstate-soak", fs.getAbsolutePath());
        mounted = rc == 0;
        if (mounted) {
            log("state directories on a " + fsMb + " MiB tmpfs at " + fs);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> run("umount", "-l", fs.getAbsolutePath())));
        } else {
            log("NOTE: cannot mount a tmpfs at " + fs + " (not root, or no CAP_SYS_ADMIN): the state directories are on "
                + "the ordinary disk and the soak runs WITHOUT disk-full periods");
        }
    }

    static int run(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
            return p.waitFor();
        } catch (Exception e) {
            return -1;
        }
    }

    /** Writes the ballast until at most {@code leave} bytes are usable on the state filesystem. */
    long fill(long leave) throws IOException {
        ballast = new File(fs, "ballast");
        byte[] buf = new byte[1 << 20];
        long written = 0;
        try (FileOutputStream o = new FileOutputStream(ballast, true)) {
            while (true) {
                long free = Files.getFileStore(fs.toPath()).getUsableSpace();
                if (free <= leave) {
                    break;
                }
                int n = (int) Math.min(buf.length, Math.max(4096, free - leave));
                try {
                    o.write(buf, 0, n);
                } catch (IOException full) {
                    break; // nothing left at all
                }
                written += n;
            }
            o.getFD().sync();
        } catch (IOException e) {
            // the file system filled before the stream closed: it is as full as it gets
        }
        return written;
    }

    void release() {
        if (ballast != null) {
            ballast.delete();
            ballast = null;
        }
    }

    // ----- the run ----------------------------------------------------------------------------------

    int runSoak() throws Exception {
        Files.createDirectories(dir.toPath());
        dir.mkdirs();
        logs = new File(dir, "logs");
        TestSupport.deleteTree(logs);
        logs.mkdirs();
        log(String.format("soak: %d min, seed %d (rerun with -Dkstate.soak.seed=%d), %d records/s over %d keys, "
            + "%d partitions, windows %d ms, session gap %d ms, logs in %s", minutes, seed, seed, rate, keys, partitions,
            windowMs, gapMs, logs.getAbsolutePath()));
        mountFs();
        TestSupport.deleteTree(new File(dir, "broker"));
        broker = KafkaBroker.start(new File(dir, "broker"));
        log("broker at " + broker.bootstrap() + " (started in " + broker.startMillis() + " ms)");
        EosRig.createWindowedTopics(broker, PREFIX, partitions);
        slots = new Slot[] {new Slot("a"), new Slot("b")};
        for (Slot s : slots) {
            TestSupport.deleteTree(s.state);
            s.start();
        }
        try (Input in = new Input(broker, PREFIX, keys, seed)) {
            AtomicBoolean producing = new AtomicBoolean(true);
            long[] producerFailures = {0};
            Thread producer = new Thread(() -> {
                int batch = Math.max(1, rate / 5);
                long next = System.currentTimeMillis();
                while (producing.get()) {
                    try {
                        in.produce(batch);
                    } catch (RuntimeException e) {
                        producerFailures[0]++;
                        log("input transaction given up (the model reads the topic, so no record is lost to it): " + e);
                    }
                    next += 200;
                    long wait = next - System.currentTimeMillis();
                    if (wait > 0) {
                        try {
                            Thread.sleep(wait);
                        } catch (InterruptedException e) {
                            return;
                        }
                    } else {
                        next = System.currentTimeMillis();
                    }
                }
            }, "soak-producer");
            producer.start();

            long end = t0 + minutes * 60_000;
            long nextAction = System.currentTimeMillis() + 20_000 + rnd.nextInt(10_000);
            nextDiskFullAt = System.currentTimeMillis() + 30_000 + rnd.nextInt(60_000);
            long nextStatus = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < end) {
                long now = System.currentTimeMillis();
                tend(now);
                if (mounted) {
                    diskFull(now);
                }
                if (now >= nextAction) {
                    chaos(now);
                    nextAction = now + 8_000 + rnd.nextInt(22_000);
                }
                if (now >= nextStatus) {
                    log(String.format("status: %d records, %d SIGKILLs, %d SIGSTOPs (%d long), %d clean restarts, "
                            + "%d disk-full periods, %d deaths (%d in disk-full), up: %s %s", in.produced, sigkills, sigstops,
                        longStops, cleanRestarts, diskFullPeriods, deathsInDiskFull + deathsOther, deathsInDiskFull,
                        slots[0].up(), slots[1].up()));
                    nextStatus = now + 60_000;
                }
                Thread.sleep(100);
            }

            // ----- drain and verify ---------------------------------------------------------------
            log("chaos over: releasing the ballast, resuming and restarting the instances, stopping the producer");
            release();
            diskFullUntil = 0;
            producing.set(false);
            producer.join();
            long settle = System.currentTimeMillis() + 120_000;
            while (System.currentTimeMillis() < settle) {
                long now = System.currentTimeMillis();
                for (Slot s : slots) {
                    if (s.resumeAt != 0) {
                        s.resumeAt = now;
                    }
                    if (s.restartAt != 0) {
                        s.restartAt = now;
                    }
                }
                tend(now);
                if (slots[0].up() && slots[1].up()) {
                    break;
                }
                Thread.sleep(100);
            }
            in.produce(100); // a last transaction, so that both instances are seen to process after the chaos
            long drained = System.currentTimeMillis();
            boolean processed = live("every input record processed (drain)", () ->
                EosRig.awaitProcessed(broker, PREFIX, APP, 15 * 60_000));
            log("drained in " + (System.currentTimeMillis() - drained) + " ms");
            Slot a = slots[0];
            Slot b = slots[1];
            // B leaves cleanly; A takes every task, so that its interactive queries see the whole state
            int before = a.app.lines.size();
            live("B closes cleanly", () -> EosRig.check(b.app.stop(120_000) == 0, "B's exit code"));
            b.ended();
            live("A rebalances and runs every task", () -> {
                EosRig.check(a.app.await(x -> {
                    synchronized (x.lines) {
                        return x.lines.subList(before, x.lines.size()).stream().anyMatch(l -> l.startsWith("STATE REBALANCING"))
                            && "RUNNING".equals(RealBrokerEosTest.lastState(x));
                    }
                }, 180_000), "A RUNNING after B left: " + a.app.tail());
                in.produce(100);
                EosRig.awaitProcessed(broker, PREFIX, APP, 300_000);
                EosRig.check(a.app.await(x -> "RUNNING".equals(RealBrokerEosTest.lastState(x)), 120_000), "A RUNNING");
            });
            long records = in.produced;
            check("interactive queries (counts, sums; IQv1 and IQv2; both isolation levels) = model",
                () -> EosRig.checkQueries(a.app.query(120_000), in.counts(), in.sums()));
            live("A closes cleanly", () -> EosRig.check(a.app.stop(120_000) == 0, "A's exit code"));
            a.ended();
            check("counts-out and sums-out = model (exactly once)", () -> EosRig.checkOutputs(broker, in));
            check("wcounts-out = model (window store, exactly once)", () -> EosRig.checkWindowOutputs(broker, in, windowMs));
            check("scounts-out = model (session store, exactly once)", () -> EosRig.checkSessionOutputs(broker, in, gapMs));
            check("counts changelog = model", () -> EosRig.checkChangelog(EosRig.changelog(broker, APP, "counts"), in.counts(),
                "counts"));
            check("sums changelog = model", () -> EosRig.checkChangelog(EosRig.changelog(broker, APP, "sums"), in.sums(),
                "sums"));
            int[] verified = {0};
            for (Slot s : slots) {
                check("kstate verify on every store directory of " + s.name, () -> {
                    verified[0] += EosRig.kstateVerifyAll(s.state, APP).size();
                });
            }
            long keysSeen = in.values().size();
            log(String.format("verified: %d records over %d keys, %d store directories verified, %d input transactions "
                + "retried, %d given up, drained: %s", records, keysSeen, verified[0], in.retries, producerFailures[0],
                processed));
            for (String d : deathErrors) {
                log("death outside a disk-full period: " + d);
            }
            for (String d : diskFullErrors) {
                log("death in a disk-full period: " + d);
            }
            for (String l : liveness) {
                log("LIVENESS: " + l);
            }
            for (String i : inconsistencies) {
                log("INCONSISTENCY: " + i);
            }
            String summary = String.format("soak: %d min, %,d records, %d SIGKILLs, %d SIGSTOPs (%d past the session timeout), "
                    + "%d clean restarts, %d rebalances, %d fenced zombie calls, %d disk-full periods (%d instance deaths in "
                    + "them, %d of them a kstate error naming the full device; %d deaths outside), "
                    + "%d restores (%,d records restored), %d instance starts, %d/%d checks failed, %d inconsistencies, seed %d",
                minutes, records, sigkills, sigstops, longStops, cleanRestarts, rebalances, fenced, diskFullPeriods,
                deathsInDiskFull, deathsKstateEnospc, deathsOther, restoresCount, restored, starts,
                inconsistencies.size() + liveness.size(), checks,
                inconsistencies.size(), seed);
            log(summary);
            System.out.println(summary);
            // 1: the data differ from the model; 3: it stayed consistent, but stalled or crashed unexpectedly
            return !inconsistencies.isEmpty() ? 1 : !liveness.isEmpty() || deathsOther > 0 ? 3 : 0;
        } finally {
            for (Slot s : slots) {
                if (s.app != null) {
                    if (s.resumeAt != 0) {
                        s.app.resume();
                    }
                    s.app.process.destroyForcibly();
                }
            }
            release();
            broker.close();
            if (mounted) {
                run("umount", fs.getAbsolutePath());
            }
        }
    }

    interface Check {
        void run() throws Exception;
    }

    /** A check of the data against the model: a failure is an inconsistency. */
    boolean check(String what, Check c) {
        return check(what, c, inconsistencies);
    }

    /** A check that the application goes on working: a failure is reported apart from the inconsistencies. */
    boolean live(String what, Check c) {
        return check(what, c, liveness);
    }

    private boolean check(String what, Check c, List<String> failures) {
        checks++;
        try {
            c.run();
            log("ok: " + what);
            return true;
        } catch (Throwable e) {
            failures.add(what + ": " + e.getMessage());
            log("FAILED: " + what + ": " + e);
            return false;
        }
    }

    /** Resumes, reaps and restarts the instances as their times come. */
    void tend(long now) throws Exception {
        for (Slot s : slots) {
            if (s.app == null) {
                continue;
            }
            if (s.resumeAt != 0 && now >= s.resumeAt) {
                s.app.resume();
                s.resumeAt = 0;
                log("SIGCONT " + s.name);
            }
            if (s.stopAskedAt != 0 && s.app.process.isAlive() && now - s.stopAskedAt > 120_000) {
                closeTimeouts++;
                log("clean close of " + s.name + " took over 120 s: SIGKILL");
                s.killedByUs = true;
                s.app.kill();
            }
            if (s.restartAt == 0 && s.resumeAt == 0 && !s.app.process.isAlive()) {
                s.app.process.waitFor();
                s.ended();
                if (!s.killedByUs && s.stopAskedAt == 0) {
                    boolean inDiskFull = diskFullUntil != 0 || (lastDiskFullEnd > 0 && now - lastDiskFullEnd < DISK_FULL_AFTERMATH_MS);
                    String err;
                    synchronized (s.app.errors) {
                        err = s.app.errors.isEmpty() ? "exit " + s.app.process.exitValue() : String.join(" | ", s.app.errors);
                    }
                    if (inDiskFull) {
                        deathsInDiskFull++;
                        if (err.contains("Kstate") && err.contains("No space left on device")) {
                            deathsKstateEnospc++;
                        }
                        diskFullErrors.add(s.name + "#" + s.incarnation + ": " + err.substring(0, Math.min(400, err.length())));
                    } else {
                        deathsOther++;
                        deathErrors.add(s.name + "#" + s.incarnation + ": " + err);
                    }
                    log((inDiskFull ? "died in a disk-full period: " : "DIED outside a disk-full period: ") + s.name + ": "
                        + err.substring(0, Math.min(300, err.length())));
                }
                s.restartAt = now + (s.stopAskedAt != 0 ? 500 : 1_000 + rnd.nextInt(4_000));
            }
            if (s.restartAt != 0 && now >= s.restartAt) {
                s.start();
                log("started " + s.name + " #" + s.incarnation + " pid " + s.app.process.pid());
            }
        }
    }

    /** One random action on a running instance. */
    void chaos(long now) throws Exception {
        List<Slot> up = new ArrayList<>();
        for (Slot s : slots) {
            if (s.up()) {
                up.add(s);
            }
        }
        if (up.isEmpty()) {
            return;
        }
        Slot s = up.get(rnd.nextInt(up.size()));
        int dice = rnd.nextInt(100);
        if (dice < 40) {
            sigkills++;
            s.killedByUs = true;
            s.app.kill();
            log("SIGKILL " + s.name + " (" + (s.app.runningMs < 0 ? "before RUNNING" : "running") + ")");
        } else if (dice < 75) {
            sigstops++;
            boolean longStop = rnd.nextBoolean();
            long ms = longStop ? 4_000 + rnd.nextInt(16_000) : 300 + rnd.nextInt(2_200);
            if (longStop) {
                longStops++;
            }
            s.app.pause();
            s.resumeAt = now + ms;
            log("SIGSTOP " + s.name + " for " + ms + " ms");
        } else {
            cleanRestarts++;
            s.stopAskedAt = now;
            Files.createDirectories(s.app.ctl.toPath());
            new File(s.app.ctl, "stop").createNewFile();
            log("clean close of " + s.name + " (then a restart)");
        }
    }

    /** Starts and ends the disk-full periods. */
    void diskFull(long now) throws IOException {
        if (diskFullUntil == 0 && now >= nextDiskFullAt) {
            long leave = rnd.nextInt(4) == 0 ? 0 : (256 << 10) + rnd.nextInt(4 << 20);
            long written = fill(leave);
            long hold = 15_000 + rnd.nextInt(45_000);
            diskFullUntil = now + hold;
            diskFullPeriods++;
            log(String.format("disk full: %d MiB of ballast, %d KiB left free, for %d s", written >> 20,
                Files.getFileStore(fs.toPath()).getUsableSpace() >> 10, hold / 1000));
        } else if (diskFullUntil != 0 && now >= diskFullUntil) {
            release();
            diskFullUntil = 0;
            lastDiskFullEnd = now;
            nextDiskFullAt = now + 60_000 + rnd.nextInt(120_000);
            log("disk released: " + (Files.getFileStore(fs.toPath()).getUsableSpace() >> 20) + " MiB free");
        }
    }

    /**
     * Runs the soak.
     *
     * @param args unused: the settings are system properties {@code kstate.soak.*}
     */
    public static void main(String[] args) throws Exception {
        int rc;
        try {
            rc = new Soak().runSoak();
        } catch (Throwable e) {
            e.printStackTrace();
            System.out.println("soak: ABORTED: " + e);
            rc = 2;
        }
        System.out.flush();
        System.exit(rc);
    }
}
