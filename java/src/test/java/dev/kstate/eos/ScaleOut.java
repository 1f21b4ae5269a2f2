package dev.kstate.eos;

import dev.kstate.broker.KafkaBroker;
import dev.kstate.eos.EosRig.App;
import dev.kstate.eos.EosRig.Input;
import dev.kstate.streams.TestSupport;
import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.TopicPartition;

/**
 * The scale-out benchmark (not a test): a second instance with an empty state directory joins an
 * {@code exactly_once_v2} counting application (key-value stores {@code counts} and {@code sums},
 * 4 partitions) holding {@code keys} keys, and takes half of its tasks. Measured from the second
 * instance's process start: the time until it runs its active tasks, the changelog records it
 * restored and the bytes it downloaded from checkpoints.
 *
 * <p>Variants: {@code kstate-ckpt} (kstate with {@code kstate.checkpoint.uri}, a {@code file://}
 * target, published every 10 s), {@code kstate} (kstate without checkpoints), {@code rocksdb}
 * (Kafka's RocksDB stores) and {@code rocksdb-standby} (Kafka's RocksDB stores with
 * {@code num.standby.replicas=1} and Kafka's default {@code acceptable.recovery.lag}: the joining
 * instance first warms up standby replicas and is given active tasks by a probing rebalance, every
 * 60 s, once caught up). The other variants set {@code acceptable.recovery.lag} to its maximum so
 * that the tasks move at the first rebalance. Before the second instance starts, a tail of
 * {@code tail} records (10,000) is produced: the changelog written after the last checkpoint.
 *
 * <p>{@code gradle -p java scaleOut -Pkeys=1000000,10000000 -Pvariants=kstate-ckpt,kstate,rocksdb,rocksdb-standby}
 */
public final class ScaleOut {
    private ScaleOut() {
    }

    static void log(String s) {
        System.out.println(s);
        System.out.flush();
    }

    /** What one run measured. */
    static final class Result {
        final String variant;
        final int keys;
        long loadMs;
        long runningMs = -1;
        int activeTasks;
        long restored;
        long downloaded;
        int fromCheckpoints;

        Result(String variant, int keys) {
            this.variant = variant;
            this.keys = keys;
        }

        String row() {
            return String.format("| %s | %,d | %,d | %d | %,d | %,d (%d stores) | %,d |", variant, keys, runningMs, activeTasks,
                restored, downloaded, fromCheckpoints, loadMs);
        }
    }

    public static void main(String[] args) throws Exception {
        List<String> variants = Arrays.asList(System.getProperty("variants", "kstate-ckpt,kstate,rocksdb,rocksdb-standby")
            .split(","));
        List<Integer> sizes = new ArrayList<>();
        for (String k : System.getProperty("keys", "1000000").split(",")) {
            sizes.add(Integer.parseInt(k.trim()));
        }
        int tail = Integer.getInteger("tail", 10_000);
        File base = new File(System.getProperty("kstate.race.dir", "build"), "scale-out-" + System.nanoTime());
        Files.createDirectories(base.toPath());
        List<Result> results = new ArrayList<>();
        try (KafkaBroker broker = KafkaBroker.start(new File(base, "broker"))) {
            for (int keys : sizes) {
                for (String variant : variants) {
                    Result r = run(broker, base, variant.trim(), keys, tail);
                    results.add(r);
                    log(r.row());
                }
            }
        } finally {
            if (!Boolean.getBoolean("kstate.race.keep")) {
                TestSupport.deleteTree(base);
            }
        }
        log("");
        log("| variant | keys | second instance: ms to RUNNING its tasks | active tasks | records restored | bytes "
            + "downloaded (stores from checkpoints) | load ms |");
        log("|---|---|---|---|---|---|---|");
        results.forEach(r -> log(r.row()));
    }

    static Result run(KafkaBroker broker, File base, String variant, int keys, int tail) throws Exception {
        Result res = new Result(variant, keys);
        String appId = "scale-" + variant + "-" + keys + "-" + System.nanoTime();
        String topics = appId + ".";
        File logs = new File(base, appId + "-logs");
        Files.createDirectories(logs.toPath());
        CheckpointTarget target = new CheckpointTarget(new File(base, appId + "-target"));
        EosRig.createTopics(broker, topics, 4);
        List<String> common = new ArrayList<>(Arrays.asList("topics=" + topics,
            "variant=" + (variant.startsWith("kstate") ? "kstate" : "rocksdb"), "commit.ms=1000"));
        if (variant.equals("rocksdb-standby")) {
            common.add("standbys=1");
            common.add("probing.ms=60000");
        } else {
            common.add("acceptable.lag=" + Long.MAX_VALUE);
        }
        if (variant.equals("kstate-ckpt")) {
            common.add("kstate.checkpoint.uri=" + target.uri());
            common.add("kstate.checkpoint.interval.ms=10000");
        }
        App a = null;
        App b = null;
        try (Input in = new Input(broker, topics, keys, 7)) {
            long t0 = System.nanoTime();
            in.produceEveryKey();
            a = EosRig.start(variant + "-a", broker, appId, new File(base, appId + "-a"), logs,
                common.toArray(new String[0]));
            EosRig.check(a.awaitRunning(600_000), variant + " A RUNNING: " + a.tail());
            EosRig.awaitProcessed(broker, topics, appId, 3_600_000);
            res.loadMs = (System.nanoTime() - t0) / 1_000_000;
            log(String.format("%s %,d keys: loaded in %,d ms", variant, keys, res.loadMs));
            if (variant.equals("kstate-ckpt")) {
                awaitCheckpointsAtEnd(broker, target, appId, 1_800_000);
                log(String.format("%s %,d keys: checkpoints published (%,d ms since the load)", variant, keys,
                    (System.nanoTime() - t0) / 1_000_000 - res.loadMs));
            }
            in.produce(tail);
            EosRig.awaitProcessed(broker, topics, appId, 600_000);

            b = EosRig.start(variant + "-b", broker, appId, new File(base, appId + "-b"), logs,
                common.toArray(new String[0]));
            // the second instance runs its share of the tasks: RUNNING with active tasks, every restore ended
            EosRig.check(b.await(x -> firstActive(x) != null && x.restores.stream().allMatch(r -> r.restored >= 0),
                3_600_000), variant + " B never ran active tasks: " + b.tail());
            long[] active = firstActive(b);
            res.runningMs = active[0];
            res.activeTasks = (int) active[1];
            res.restored = b.restoredByStore().values().stream().mapToLong(Long::longValue).sum();
            for (RealBrokerCheckpointTest.FromCheckpoint f : RealBrokerCheckpointTest.fromCheckpoints(b)) {
                res.downloaded += f.bytes;
                res.fromCheckpoints++;
            }
            b.stop(120_000);
            a.stop(120_000);
        } finally {
            for (App x : new App[] {a, b}) {
                if (x != null) {
                    x.process.destroyForcibly();
                    x.process.waitFor(30, TimeUnit.SECONDS);
                }
            }
            if (!Boolean.getBoolean("kstate.race.keep")) {
                TestSupport.deleteTree(new File(base, appId + "-a"));
                TestSupport.deleteTree(new File(base, appId + "-b"));
                TestSupport.deleteTree(target.root);
            }
        }
        return res;
    }

    /**
     * The first {@code ACTIVE} line with active tasks: {ms since its JVM started, tasks}, or
     * null before.
     */
    static long[] firstActive(App app) {
        synchronized (app.lines) {
            for (String line : app.lines) {
                String[] f = line.split(" ");
                if (f[0].equals("ACTIVE") && Integer.parseInt(f[1]) > 0) {
                    return new long[] {Long.parseLong(f[2]), Integer.parseInt(f[1])};
                }
            }
        }
        return null;
    }

    /**
     * Waits until every store partition's newest checkpoint is within a few offsets (transaction
     * markers) of its changelog's end: the whole loaded state is published.
     */
    static void awaitCheckpointsAtEnd(KafkaBroker broker, CheckpointTarget target, String appId, long timeoutMs)
        throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        try (Admin admin = broker.admin()) {
            while (true) {
                Map<String, Long> newest = target.newestOffsets(appId);
                boolean all = true;
                for (String store : new String[] {"counts", "sums"}) {
                    Map<TopicPartition, Long> ends = EosRig.endOffsets(admin, appId + "-" + store + "-changelog");
                    for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                        Long at = newest.get("0_" + e.getKey().partition() + "/" + store);
                        all &= at != null && at >= e.getValue() - 16;
                    }
                }
                if (all) {
                    return;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new AssertionError("checkpoints did not reach the changelog ends within " + timeoutMs + " ms: "
                        + newest);
                }
                Thread.sleep(500);
            }
        }
    }
}
