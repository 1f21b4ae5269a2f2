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
            System.out.printf("Each run: %,d keys loaded, then a chunk of input, kill -9 mid-processing, restart.%n%n", keys);

            System.out.println("-- run 1: kstate stores (Materialized.as(KstateStores...) and dsl.store.suppliers.class) --");
            RestartRace.Result k = RestartRace.race(broker, base, "kstate", keys, 1, 7, l -> System.out.println("  " + l), true);
            System.out.println("  interactive queries from the query thread while a chunk is processed (2 entries per query):");
            for (String q : k.queries) {
                String[] f = q.split(" ");
                System.out.printf("    IQ%s %-16s %-6s %s = %s%s%n", f[1], f[2], f[3], f[4], f[5],
                    f.length > 6 ? "  (timestamp " + java.time.Instant.ofEpochMilli(Long.parseLong(f[6])) + ")" : "");
            }
            System.out.println();
            System.out.println("-- run 2: Kafka's own RocksDB stores, exactly_once_v2 as shipped (no transactional stores) --");
            RestartRace.Result r = RestartRace.race(broker, base, "rocksdb", keys, 1, 7, l -> System.out.println("  " + l));
            System.out.println();
            System.out.println("-- on restart after kill -9 --");
            System.out.printf("%-34s %18s %18s%n", "", "kstate", "Kafka RocksDB");
            System.out.printf("%-34s %,18d %,18d%n", "records restored from changelogs", k.restored.get(0), r.restored.get(0));
            System.out.printf("%-34s %,18d %,18d%n", "ms from process start to RUNNING", k.runningMs.get(0), r.runningMs.get(0));
            System.out.printf("%-34s %18s %18s%n", "exactly-once outputs (read_committed)", k.eos, r.eos);
            System.out.println();
            System.out.println("kstate commits its stores with the changelog offsets at every commit, so a kill costs at most");
            System.out.println("one commit interval of replay; Kafka's RocksDB store under exactly_once_v2 is wiped after a");
            System.out.println("kill and rebuilt from its changelog (both stores: count and sum).");
            System.out.println("The restart race at larger sizes: gradle -p java restartRace -Pkeys=1000000 (see README).");
        }
        System.out.println("broker stopped.");
        TestSupport.deleteTree(base);
        System.exit(0);
    }
}
