package dev.kstate.eos;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import dev.kstate.eos.EosRig.App;
import dev.kstate.eos.EosRig.Input;
import java.io.File;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.Test;

/**
 * Under {@code exactly_once_v2} without {@code enable.transactional.statestores}, Kafka Streams
 * 4.4 commits a running task's stores only when forced, and commits early whenever the sum of
 * its stores' {@code approximateNumUncommittedBytes()} passes
 * {@code statestore.uncommitted.max.bytes}. A store whose reported bytes only grow there makes
 * every iteration of the stream thread commit: 40,000 records once took 358 s and 30,597
 * commits at 256 KiB, against 3.4 s and 16 commits with the flag. On a real broker, the same
 * input with and without the flag: both runs commit at the pace of {@code commit.interval.ms},
 * not per record, and both stay exactly-once.
 */
public class RealBrokerCommitRateTest extends BrokerSuite {
    private static final int PARTITIONS = 4;
    private static final int RECORDS = 20_000;
    private static final long COMMIT_MS = 100;

    @Test
    public void exactlyOnceWithoutTransactionalStoresCommitsAtTheCommitInterval() throws Exception {
        Map<String, String> runs = new LinkedHashMap<>();
        for (boolean flag : new boolean[] {true, false}) {
            String appId = "rate-" + (flag ? "txn" : "plain");
            File state = new File(base, appId + "-state");
            File logs = new File(base, appId + "-logs");
            logs.mkdirs();
            EosRig.createTopics(broker, appId + ".", PARTITIONS);
            try (Input in = new Input(broker, appId + ".", 2_000, 17)) {
                in.produce(RECORDS);
                App a = EosRig.start(appId, broker, appId, state, logs, "topics=" + appId + ".", "variant=kstate",
                    "txn.stores=" + flag, "uncommitted.max=262144", "commit.ms=" + COMMIT_MS);
                long processingMs;
                long commits;
                try {
                    assertTrue("RUNNING: " + a.tail(), a.awaitRunning(90_000));
                    long commitsAtRunning = a.commitsDone;
                    long t0 = System.nanoTime();
                    // the storm took minutes for this input: give a bounded application 40 s
                    EosRig.awaitProcessed(broker, appId + ".", appId, 40_000);
                    processingMs = (System.nanoTime() - t0) / 1_000_000;
                    commits = a.commitsDone - commitsAtRunning;
                    assertEquals("clean exit", 0, a.stop(90_000));
                } finally {
                    a.process.destroyForcibly();
                }
                runs.put(appId, commits + " commits in " + processingMs + " ms");
                assertTrue("errors: " + a.errors, a.errors.isEmpty());
                // a commit per commit interval, and a few more (assignment, first records, close)
                assertTrue(appId + ": " + runs, commits <= processingMs / COMMIT_MS + 10);
                long warnings = a.logs.stream().filter(l -> l.startsWith("WARN")
                    && l.contains("exactly_once_v2 without enable.transactional.statestores=true")).count();
                assertEquals(appId + ": the WARN, once, without the flag only", flag ? 0 : 1, warnings);
                EosRig.checkOutputs(broker, in);
            }
        }
        System.out.println("commit rate on a real broker, " + RECORDS + " records: " + runs);
    }
}
