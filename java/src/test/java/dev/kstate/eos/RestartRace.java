package dev.kstate.eos;

import dev.kstate.broker.KafkaBroker;
import dev.kstate.eos.EosRig.App;
import dev.kstate.eos.EosRig.Input;
import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The restart race (a benchmark, not a test): how long a kill -9 costs on restart with kstate,
 * with Kafka's RocksDB store (exactly-once's default setup) and with Kafka's RocksDB store plus
 * {@code enable.transactional.statestores=true}, and the start-up time of a stateless application
 * as the floor. For each variant: load {@code keys} keys (one record each) into the counting
 * application, then {@code kills} times: produce a chunk, SIGKILL the application while it
 * processes, restart it on the same state directory and measure the records restored and the
 * time from process start to RUNNING.
 *
 * <p>{@code gradle -p java restartRace -Pkeys=1000000 -Pkills=5} (also {@code -Pvariants=kstate,rocksdb}).
 */
public final class RestartRace {
    private RestartRace() {
    }

    /** What one variant measured. */
    public static final class Result {
        public final String variant;
        public final List<Long> restored = new ArrayList<>();
        public final List<Long> runningMs = new ArrayList<>();
        public long loadMs;
        public String eos = "not checked";
        public List<String> queries = new ArrayList<>();

        Result(String variant) {
            this.variant = variant;
        }

        /** The median of {@code l}, or -1 when it is empty. */
        public static long median(List<Long> l) {
            List<Long> s = new ArrayList<>(l);
            Collections.sort(s);
            return s.isEmpty() ? -1 : s.get(s.size() / 2);
        }

        static long max(List<Long> l) {
            return l.stream().mapToLong(Long::longValue).max().orElse(-1);
        }

        public String row() {
            return String.format("| %s | %d | %,d | %,d | %,d | %,d | %,d | %s |", variant, runningMs.size(), median(restored),
                max(restored), median(runningMs), max(runningMs), loadMs, eos);
        }
    }

    /**
     * Runs one variant on its own application id and topics.
     *
     * @param log receives progress lines
     */
    public static Result race(KafkaBroker broker, File base, String variant, int keys, int kills, long seed,
        java.util.function.Consumer<String> log) throws Exception {
        return race(broker, base, variant, keys, kills, seed, log, false);
    }

    /** As above; with {@code query}, a few interactive queries at the end while a chunk is processed. */
    public static Result race(KafkaBroker broker, File base, String variant, int keys, int kills, long seed,
        java.util.function.Consumer<String> log, boolean query) throws Exception {
        try (Lane lane = new Lane(broker, base, variant, keys, seed, log)) {
            lane.load();
            for (int k = 0; k < kills; k++) {
                lane.killAndRestart(k);
            }
            lane.finish(query);
            return lane.res;
        }
    }

    /**
     * One variant's run, in steps: {@link #load}, {@link #killAndRestart} as often as wanted,
     * {@link #finish}. The variant's application runs between the steps (idle once its input
     * is processed), on its own application id, topics and state directory.
     */
    static final class Lane implements AutoCloseable {
        private final KafkaBroker broker;
        private final String variant;
        private final int keys;
        private final java.util.function.Consumer<String> log;
        private final String appId;
        private final String topics;
        private final File state;
        private final File logs;
        private final Random rnd;
        private final Input in;
        final Result res;
        private App app;

        Lane(KafkaBroker broker, File base, String variant, int keys, long seed, java.util.function.Consumer<String> log)
            throws Exception {
            this.broker = broker;
            this.variant = variant;
            this.keys = keys;
            this.log = log;
            this.appId = "race-" + variant + "-" + System.nanoTime();
            this.topics = appId + ".";
            this.state = new File(base, appId + "-state");
            this.logs = new File(base, appId + "-logs");
            Files.createDirectories(logs.toPath());
            EosRig.createTopics(broker, topics, 4);
            this.res = new Result(variant);
            this.rnd = new Random(seed);
            this.in = new Input(broker, topics, keys, seed);
        }

        /** Produces one record per key and runs the application until it has processed them. */
        void load() throws Exception {
            long t0 = System.nanoTime();
            in.produceEveryKey();
            app = EosRig.start(variant + "-load", broker, appId, state, logs, args("topics=" + topics, "variant=" + variant,
                "instance=race"));
            check(app.awaitRunning(300_000), variant + " RUNNING: " + app.errors + app.tail());
            EosRig.awaitProcessed(broker, topics, appId, 3_600_000);
            res.loadMs = (System.nanoTime() - t0) / 1_000_000;
            log.accept(String.format("%s: %,d keys loaded in %,d ms", variant, keys, res.loadMs));
        }

        /**
         * Produces a chunk, SIGKILLs the application while it processes it, restarts it on the
         * same state directory and records the records restored and the time to RUNNING.
         */
        void killAndRestart(int k) throws Exception {
            in.produce(2_000);
            Thread.sleep(200 + rnd.nextInt(800));
            app.kill();
            check(app.errors.isEmpty(), variant + " errors: " + app.errors);
            app = EosRig.start(variant + "-" + k, broker, appId, state, logs, args("topics=" + topics,
                "variant=" + variant, "instance=race", "iq.limit=2"));
            check(app.awaitRunning(3_600_000), variant + " RUNNING after kill " + k + ": " + app.errors + app.tail());
            // every restore has ended once RUNNING is reached; wait for the listener's lines
            app.await(x -> x.restores.stream().allMatch(r -> r.restored >= 0), 10_000);
            long restored = app.restoredByStore().values().stream().mapToLong(Long::longValue).sum();
            res.restored.add(restored);
            res.runningMs.add(app.runningMs);
            log.accept(String.format("%s: kill %d -> restored %,d records, RUNNING %,d ms after process start",
                variant, k + 1, restored, app.runningMs));
            EosRig.awaitProcessed(broker, topics, appId, 3_600_000);
        }

        /**
         * Optionally queries the stores while a last chunk is processed, stops the application
         * cleanly and checks the outputs exactly-once (stateful variants, up to 1,000,000 keys).
         */
        void finish(boolean query) throws Exception {
            if (query) {
                in.produce(5_000);
                res.queries.addAll(app.query(60_000));
                EosRig.awaitProcessed(broker, topics, appId, 3_600_000);
            }
            check(app.stop(120_000) == 0, variant + " clean exit");
            if (!variant.equals("stateless") && keys <= 1_000_000) {
                try {
                    EosRig.checkOutputs(broker, in);
                    res.eos = "ok";
                } catch (AssertionError e) {
                    String m = String.valueOf(e.getMessage());
                    res.eos = "FAILED: " + m.substring(0, Math.min(80, m.length()));
                }
                log.accept(variant + ": read_committed outputs against the model: " + res.eos);
            }
        }

        /** Kills the application if it still runs, closes the input and deletes the state (unless kept). */
        @Override
        public void close() {
            if (app != null) {
                app.process.destroyForcibly();
            }
            in.close();
            if (!Boolean.getBoolean("kstate.race.keep")) {
                dev.kstate.streams.TestSupport.deleteTree(state);
            }
        }
    }

    /** {@code base} and the application arguments of {@code -PraceArgs=k=v,k=v} (e.g. {@code open.ahead=false}). */
    static String[] args(String... base) {
        List<String> all = new ArrayList<>(java.util.Arrays.asList(base));
        String extra = System.getProperty("kstate.race.args", "");
        for (String a : extra.split(",")) {
            if (!a.trim().isEmpty()) {
                all.add(a.trim());
            }
        }
        return all.toArray(new String[0]);
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static String header() {
        return "| variant | restarts | records restored, median | max | ms to RUNNING, median | max | load ms | exactly-once outputs |\n|---|---|---|---|---|---|---|---|";
    }

    public static void main(String[] args) throws Exception {
        int keys = Integer.parseInt(System.getProperty("keys", "100000"));
        int kills = Integer.parseInt(System.getProperty("kills", "5"));
        String[] variants = System.getProperty("variants", "kstate,rocksdb,rocksdb-txn,stateless").split(",");
        File base = Files.createTempDirectory(new File(System.getProperty("kstate.race.dir", "build")).toPath(), "race").toFile();
        Map<String, Result> results = new LinkedHashMap<>();
        long t0 = System.nanoTime();
        try (KafkaBroker broker = KafkaBroker.start(new File(base, "broker"))) {
            System.out.printf("broker up at %s in %,d ms%n", broker.bootstrap(), broker.startMillis());
            // Every variant loads first; then the kills go round the variants, so that each
            // round's restarts share the machine's conditions (a shared VM's CPU steal, the
            // broker's background work) instead of one variant getting a quiet hour and the
            // next a busy one.
            List<Lane> lanes = new ArrayList<>();
            try {
                for (String v : variants) {
                    Lane lane = new Lane(broker, base, v, keys, 42, System.out::println);
                    lanes.add(lane);
                    lane.load();
                }
                for (int k = 0; k < kills; k++) {
                    for (Lane lane : lanes) {
                        lane.killAndRestart(k);
                    }
                }
                for (Lane lane : lanes) {
                    lane.finish(false);
                    results.put(lane.variant, lane.res);
                }
            } finally {
                lanes.forEach(Lane::close);
            }
        } finally {
            if (Boolean.getBoolean("kstate.race.keep")) {
                System.out.println("kept (logs of every run): " + base);
            } else {
                dev.kstate.streams.TestSupport.deleteTree(base);
            }
        }
        System.out.printf("%nRestart race: %,d keys, %d kills per variant, 4 partitions, exactly_once_v2, commit.interval.ms=100 "
            + "(%,d s in all)%n%n", keys, kills, (System.nanoTime() - t0) / 1_000_000_000L);
        System.out.println(header());
        results.values().forEach(r -> System.out.println(r.row()));
        System.exit(0);
    }
}
