package dev.kstate.eos;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import dev.kstate.broker.KafkaBroker;
import dev.kstate.eos.EosRig.App;
import dev.kstate.eos.EosRig.Input;
import dev.kstate.eos.EosRig.Restore;
import dev.kstate.streams.TestSupport;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Exactly-once on a real Kafka 4.4 broker (single node, KRaft, 127.0.0.1): a counting
 * application on kstate stores in child JVMs, SIGKILLed, restarted, migrated and closed, checked
 * against a model of its input. One broker serves every test of the class; each test has its
 * own application id and topics.
 */
public class RealBrokerEosTest {
    static final int KILLS = Integer.getInteger("kstate.eos.kills", 24);
    static final int PARTITIONS = 4;
    private static KafkaBroker broker;
    private static File base;

    @BeforeClass
    public static void startBroker() throws Exception {
        base = TestSupport.tempDir("eos");
        broker = KafkaBroker.start(new File(base, "broker"));
    }

    @AfterClass
    public static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
        if (!Boolean.getBoolean("kstate.eos.keep")) {
            TestSupport.deleteTree(base);
        }
    }

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
        int chunk = total / (KILLS * 2 / 3);
        List<Restore> restores = new ArrayList<>();
        int[] modes = new int[3];
        int killedBeforeRunning = 0;
        int killedAtCommit = 0;
        try (Input in = input(appId, seed, 2_000)) {
            for (int round = 0; round < KILLS; round++) {
                if (in.produced < total) {
                    in.produce((int) Math.min(chunk, total - in.produced));
                }
                boolean spill = round % 3 == 2;
                App app = spill
                    ? start("kill" + round, appId, state, logs, "variant=kstate", "instance=i1",
                        "max.uncommitted=1024", "commit.ms=500")
                    : start("kill" + round, appId, state, logs, "variant=kstate", "instance=i1");
                int mode = round < 3 ? round : rnd.nextInt(3);
                modes[mode]++;
                try {
                    if (mode == 0) { // during start-up and restore: mostly before RUNNING
                        Thread.sleep(300 + rnd.nextInt(3000));
                    } else if (mode == 1) { // while processing the chunk
                        assertTrue("RUNNING in round " + round + ": " + app.errors + "\n" + app.tail(), app.awaitRunning(90_000));
                        Thread.sleep(rnd.nextInt(1500));
                    } else { // right as a producer transaction commits (then kstate commits its stores)
                        assertTrue("RUNNING in round " + round, app.awaitRunning(90_000));
                        long target = app.commitsBegun + 1 + rnd.nextInt(6);
                        app.await(a -> a.commitsBegun >= target, 10_000);
                        if (rnd.nextBoolean()) {
                            Thread.sleep(rnd.nextInt(5));
                        }
                    }
                    if (app.runningMs < 0) {
                        killedBeforeRunning++;
                    }
                    if (app.commitsBegun > app.commitsDone) {
                        killedAtCommit++;
                    }
                    assertTrue("child alive before the kill in round " + round + ": " + app.errors + "\n" + app.tail(),
                        app.process.isAlive());
                } finally {
                    app.kill();
                }
                assertTrue("no errors in round " + round + ": " + app.errors, app.errors.isEmpty());
                restores.addAll(app.restores);
            }
            // whatever is left, then a final run: no kill, interactive queries, clean close
            in.produce((int) Math.max(0, total - in.produced));
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
                    + "restore (counts/sums), seed %d%n", KILLS, modes[0], modes[1], modes[2], killedBeforeRunning,
                killedAtCommit, in.produced, in.values.size(), restores.size(), maxCounts, maxSums, seed);
        }
    }
}
