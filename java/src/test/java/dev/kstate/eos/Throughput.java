package dev.kstate.eos;

import dev.kstate.broker.KafkaBroker;
import dev.kstate.eos.EosRig.App;
import dev.kstate.eos.EosRig.Input;
import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;

/**
 * Application throughput (a benchmark, not a test): the counting application of
 * {@link EosApp} ({@code count()} and {@code aggregate()}, with {@code windowed=true} also a
 * tumbling-window count and a session count) under {@code exactly_once_v2} on a real broker,
 * one stream thread, 4 partitions, over an input produced before it starts. For each variant
 * and cache setting the application runs on its own application id over the same input, and
 * the figure is records processed per second between RUNNING and the last input offset
 * committed: kstate ({@code kstate}: RocksDB engine; {@code kstate-memory}: every store on the
 * memory engine), Kafka's RocksDB stores ({@code rocksdb}, and {@code rocksdb-txn} with
 * {@code enable.transactional.statestores}), Kafka's in-memory stores ({@code memory}).
 *
 * <p>{@code gradle -p java throughput -Precords=10000000 -Pkeys=10000000 -Pcache=off,on
 * -Pwindowed=true -Pvariants=kstate,rocksdb,rocksdb-txn,memory,kstate-memory}
 */
public final class Throughput {
    private Throughput() {
    }

    /** One run's figures. */
    static final class Run {
        final String variant;
        final boolean cache;
        long ms;
        long runningMs;

        Run(String variant, boolean cache) {
            this.variant = variant;
            this.cache = cache;
        }

        double perSecond(long records) {
            return records * 1000.0 / Math.max(1, ms);
        }
    }

    public static void main(String[] args) throws Exception {
        long records = Long.parseLong(System.getProperty("records", "1000000"));
        int keys = Integer.parseInt(System.getProperty("keys", "1000000"));
        boolean windowed = Boolean.parseBoolean(System.getProperty("windowed", "true"));
        String[] variants = System.getProperty("variants", "kstate,rocksdb,rocksdb-txn,memory").split(",");
        String[] caches = System.getProperty("cache", "off,on").split(",");
        File base = Files.createTempDirectory(new File(System.getProperty("kstate.race.dir", "build")).toPath(),
            "throughput").toFile();
        List<Run> runs = new ArrayList<>();
        long t0 = System.nanoTime();
        try (KafkaBroker broker = KafkaBroker.start(new File(base, "broker"))) {
            String topics = "tp.";
            EosRig.createWindowedTopics(broker, topics, 4);
            long produceStart = System.nanoTime();
            try (Input in = new Input(broker, topics, keys, 42)) {
                while (in.produced < records) {
                    in.produce((int) Math.min(100_000, records - in.produced));
                }
            }
            System.out.printf("%,d records on %,d keys produced in %,d ms%n", records, keys,
                (System.nanoTime() - produceStart) / 1_000_000);
            for (String cache : caches) {
                for (String variant : variants) {
                    Run run = new Run(variant, cache.equals("on"));
                    String appId = "tp-" + variant + "-" + cache;
                    File state = new File(base, appId + "-state");
                    File logs = new File(base, appId + "-logs");
                    Files.createDirectories(logs.toPath());
                    App app = EosRig.start(appId, broker, appId, state, logs, RestartRace.args("topics=" + topics,
                        "variant=" + variant, "cache=" + run.cache, "windowed=" + windowed, "commit.ms=100"));
                    try {
                        RestartRace.check(app.awaitRunning(600_000), variant + " RUNNING: " + app.errors + app.tail());
                        long start = System.nanoTime();
                        EosRig.awaitProcessed(broker, topics, appId, 7_200_000);
                        run.ms = (System.nanoTime() - start) / 1_000_000;
                        run.runningMs = app.runningMs;
                        RestartRace.check(app.errors.isEmpty(), variant + " errors: " + app.errors);
                        RestartRace.check(app.stop(120_000) == 0, variant + " clean exit");
                    } finally {
                        app.process.destroyForcibly();
                        dev.kstate.streams.TestSupport.deleteTree(state);
                    }
                    runs.add(run);
                    System.out.printf("%s, cache %s: %,d records in %,d ms: %,.0f records/s%n", variant, cache, records,
                        run.ms, run.perSecond(records));
                }
            }
        } finally {
            dev.kstate.streams.TestSupport.deleteTree(base);
        }
        System.out.printf("%nThroughput: %,d records on %,d keys, 4 partitions, 1 stream thread, exactly_once_v2, "
                + "commit.interval.ms=100, %s (%,d s in all)%n%n", records, keys,
            windowed ? "count + sum + windowed count + session count" : "count + sum",
            (System.nanoTime() - t0) / 1_000_000_000L);
        System.out.println("| variant | cache | ms | records/s | vs rocksdb, same cache |");
        System.out.println("|---|---|---|---|---|");
        for (Run r : runs) {
            Run peer = runs.stream().filter(x -> x.variant.equals("rocksdb") && x.cache == r.cache).findFirst().orElse(null);
            String ratio = peer == null ? "n/a" : String.format("%.2fx", r.perSecond(records) / peer.perSecond(records));
            System.out.printf("| %s | %s | %,d | %,.0f | %s |%n", r.variant, r.cache ? "on" : "off", r.ms,
                r.perSecond(records), ratio);
        }
        System.exit(0);
    }
}
