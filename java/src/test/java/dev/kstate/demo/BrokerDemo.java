package dev.kstate.demo;

import dev.kstate.broker.KafkaBroker;
import dev.kstate.eos.RestartRace;
import dev.kstate.streams.TestSupport;
import java.io.File;
import java.nio.file.Files;

/**
 * The main job on a real broker: a single-node Kafka 4.4 broker (KRaft, 127.0.0.1) and a Kafka
 * Streams application (a count and a sum per key, with timestamps, exactly_once_v2) run twice:
 * on kstate stores and on Kafka's own RocksDB stores. Each run loads its keys, is SIGKILLed while
 * it processes, and restarts on the same state directory; the demo prints what each store did on
 * restart, interactive queries at both isolation levels made from another thread while records
 * are processed, and the exactly-once check of the outputs against a model of the input.
 */
public final class BrokerDemo {
    private BrokerDemo() {
    }

    /** Kills per variant: the table shows medians, since one start-up time on a busy machine is noise. */
    private static final int KILLS = 3;

    /**
     * The interactive queries the kstate run answered while processing a chunk, one row per
     * store and key: IQv1 ({@code readOnly(level)}) and IQv2 ({@code withIsolationLevel}) at
     * both isolation levels.
     */
    static void printQueries(java.util.List<String> queries) {
        java.util.Map<String, java.util.Map<String, String>> rows = new java.util.TreeMap<>();
        for (String q : queries) { // IQ v1|v2 LEVEL store key value [timestamp]
            String[] f = q.split(" ");
            String col = "v" + f[1].substring(1) + (f[2].startsWith("READ_COMMITTED") ? " RC" : " RU");
            rows.computeIfAbsent(f[3] + " " + f[4], x -> new java.util.TreeMap<>()).put(col, f[5]);
        }
        System.out.println("  interactive queries from another thread while a chunk is processed");
        System.out.println("  (RC = READ_COMMITTED, RU = READ_UNCOMMITTED; IQv1 returns only the first entries per store):");
        System.out.printf("    %-18s %6s %6s %6s %6s%n", "store key", "v1 RC", "v1 RU", "v2 RC", "v2 RU");
        for (java.util.Map.Entry<String, java.util.Map<String, String>> e : rows.entrySet()) {
            java.util.Map<String, String> c = e.getValue();
            System.out.printf("    %-18s %6s %6s %6s %6s%n", e.getKey(), c.getOrDefault("v1 RC", "-"), c.getOrDefault("v1 RU", "-"),
                c.getOrDefault("v2 RC", "-"), c.getOrDefault("v2 RU", "-"));
        }
    }

    public static void main(String[] args) throws Exception {
        int keys = Integer.parseInt(System.getProperty("kstate.demo.keys", "30000"));
        File base = new File(System.getProperty("kstate.demo.dir", "build/demo"), "broker");
        TestSupport.deleteTree(base);
        Files.createDirectories(base.toPath());
        System.out.println("== kstate on a real Kafka broker ==");
        System.out.println("Starting a single-node Kafka 4.4 broker (KRaft combined mode, 127.0.0.1, a child JVM) ...");
        try (KafkaBroker broker = KafkaBroker.start(new File(base, "kafka"))) {
            System.out.printf("broker up at %s after %,d ms%n%n", broker.bootstrap(), broker.startMillis());
            System.out.println("The application (a child JVM): input (4 partitions) -> groupByKey -> count() into store");
            System.out.println("'counts' and aggregate(sum) into store 'sums' -> output topics; exactly_once_v2,");
            System.out.println("commit.interval.ms=100, enable.transactional.statestores=true for kstate.");
            System.out.printf("Each run: %,d keys loaded, then %d times: a chunk of input, kill -9 mid-processing, restart.%n%n",
                keys, KILLS);

            System.out.println("-- run 1: kstate stores (Materialized.as(KstateStores...) and dsl.store.suppliers.class) --");
            RestartRace.Result k = RestartRace.race(broker, base, "kstate", keys, KILLS, 7, l -> System.out.println("  " + l), true);
            printQueries(k.queries);
            System.out.println();
            System.out.println("-- run 2: Kafka's own RocksDB stores, exactly_once_v2 as shipped (no transactional stores) --");
            RestartRace.Result r = RestartRace.race(broker, base, "rocksdb", keys, KILLS, 7, l -> System.out.println("  " + l));
            System.out.println();
            System.out.println("-- run 3: the same application without state (Kafka Streams' own start-up cost) --");
            RestartRace.Result n = RestartRace.race(broker, base, "stateless", 1_000, KILLS, 7, l -> System.out.println("  " + l));
            System.out.println();
            System.out.printf("-- on restart after kill -9 (median of %d) --%n", KILLS);
            System.out.printf("%-38s %14s %14s %14s%n", "", "kstate", "Kafka RocksDB", "no state");
            System.out.printf("%-38s %,14d %,14d %14s%n", "records restored from changelogs", RestartRace.Result.median(k.restored),
                RestartRace.Result.median(r.restored), "-");
            System.out.printf("%-38s %,14d %,14d %,14d%n", "ms from process start to RUNNING", RestartRace.Result.median(k.runningMs),
                RestartRace.Result.median(r.runningMs), RestartRace.Result.median(n.runningMs));
            System.out.printf("%-38s %14s %14s %14s%n", "exactly-once outputs (read_committed)", k.eos, r.eos, "-");
            System.out.println();
            System.out.println("kstate commits its stores with the changelog offsets at every commit, so a kill costs at most");
            System.out.println("one commit interval of replay, however large the state. Kafka's RocksDB store under");
            System.out.println("exactly_once_v2 is wiped after a kill and rebuilt from its changelog (both stores: count and");
            System.out.println("sum): its restart time grows with the state. \"no state\" is the floor: the same input");
            System.out.println("mapped to an output, no stores, no changelogs.");
            System.out.println("The restart race at larger sizes: gradle -p java restartRace -Pkeys=1000000 (see docs/exactly-once.md).");
        }
        System.out.println("broker stopped.");
        TestSupport.deleteTree(base);
        System.exit(0);
    }
}
