package dev.kstate.bench;

import dev.kstate.streams.LoggingAndConfigTest.BoundedMemorySetter;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.utils.Bytes;

/**
 * Many persistent stores in one JVM, as an instance with many tasks holds them: {@code stores}
 * key-value stores (by default 1,000, as 250 tasks of 4 stores), each in its own task directory
 * and loaded with {@code entries} entries (10,000), then closed and opened again as after a
 * restart. For each variant, in a fresh child JVM, it reports the time to open the stores, to
 * load them, to close them, to open them again with their data, and, with every store open
 * and loaded, the process's resident memory (and the Java heap in use after a GC), open file
 * descriptors and threads (from {@code /proc/self}), and the disk space the stores took (allocated blocks, so RocksDB's
 * preallocated write-ahead logs count).
 *
 * <p>Variants are those of {@link BenchStore} ({@code kstate-rocksdb}, {@code kafka-rocksdb},
 * ...), and each with {@code -bounded}: the application sets {@code rocksdb.config.setter} to
 * {@link BoundedMemorySetter}, Kafka's documented bounded-memory setter (one 256 MiB block cache
 * for every store, 64 MiB of it for memtables through a write-buffer manager), which kstate turns
 * into its shared budget of the same size.
 *
 * <p>Run: {@code gradle -p java manyStores} ({@code -Pvariants=kstate-rocksdb,kafka-rocksdb},
 * {@code -Pstores=1000}, {@code -Pentries=10000}, {@code -Prounds=1}). Not part of the test
 * suite.
 */
public final class ManyStores {
    private ManyStores() {
    }

    /**
     * With arguments {@code variant stores entries dir}: measures one variant in this JVM and
     * prints one result line. With {@code race variants stores entries dir [rounds]}: runs each
     * variant in a child JVM in turn, {@code rounds} times, and prints every result and, after
     * more than one round, each variant's medians.
     */
    public static void main(String[] args) throws Exception {
        if (args[0].equals("race")) {
            int rounds = args.length > 5 ? Integer.parseInt(args[5]) : 1;
            race(args[1].split(","), Integer.parseInt(args[2]), Integer.parseInt(args[3]), new File(args[4]), rounds);
        } else {
            System.out.println(measure(args[0], Integer.parseInt(args[1]), Integer.parseInt(args[2]), new File(args[3])));
        }
    }

    /**
     * Runs the variants in turn, reversing their order every other round: a variant's times
     * depend on what ran just before it (the file system still reclaims the inodes the
     * previous variant's stores deleted), so no variant may always run first.
     */
    private static void race(String[] variants, int stores, int entries, File dir, int rounds) throws Exception {
        System.out.printf("%d stores of %,d entries (%d-byte values) in one JVM, each variant in its own JVM, "
            + "%d round(s), the order reversed every other round%n", stores, entries, BenchStore.VALUE_BYTES, rounds);
        System.out.println(Result.HEADER);
        Map<String, List<double[]>> results = new LinkedHashMap<>();
        for (String variant : variants) {
            results.put(variant, new ArrayList<>());
        }
        for (int round = 0; round < rounds; round++) {
            for (int i = 0; i < variants.length; i++) {
                String variant = variants[round % 2 == 0 ? i : variants.length - 1 - i];
                String line = runChild(variant, stores, entries, dir);
                System.out.println(line);
                results.get(variant).add(columns(line));
            }
        }
        if (rounds > 1) {
            System.out.printf("median of %d rounds%n", rounds);
            System.out.println(Result.HEADER);
            for (Map.Entry<String, List<double[]>> e : results.entrySet()) {
                System.out.println(Result.median(e.getKey(), e.getValue()));
            }
        }
    }

    /** The numbers of a result line, after its variant. */
    private static double[] columns(String line) {
        String[] words = line.trim().split("\\s+");
        double[] out = new double[words.length - 1];
        for (int i = 1; i < words.length; i++) {
            out[i - 1] = Double.parseDouble(words[i]);
        }
        return out;
    }

    /** Measures {@code variant} in a child JVM and returns its result line. */
    private static String runChild(String variant, int stores, int entries, File dir) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx2g");
        // A libkstate the run was pointed at (-PjvmArgs=-Djava.library.path=DIR) is the
        // children's too, so that two builds of it can be compared.
        cmd.add("-Djava.library.path=" + System.getProperty("java.library.path"));
        // The bounded variants' setter: a 256 MiB cache, 64 MiB of it for memtables.
        cmd.add("-Dkstate.test.bounded.cache.bytes=" + (256L << 20));
        cmd.add("-Dkstate.test.bounded.memtable.bytes=" + (64L << 20));
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(ManyStores.class.getName());
        cmd.add(variant);
        cmd.add(Integer.toString(stores));
        cmd.add(Integer.toString(entries));
        cmd.add(new File(dir, variant).getAbsolutePath());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(2, TimeUnit.HOURS) || p.exitValue() != 0) {
            throw new IllegalStateException(variant + " failed:\n" + out);
        }
        String[] lines = out.trim().split("\n");
        return lines[lines.length - 1];
    }

    private static Result measure(String variant, int stores, int entries, File dir) throws Exception {
        deleteTree(dir.toPath());
        String base = variant.replace("-bounded", "");
        boolean bounded = variant.endsWith("-bounded");
        Bytes[] keys = Subject.keys(entries);
        byte[][] values = BenchStore.values(1000, 42);
        Result r = new Result(variant);

        long t = System.nanoTime();
        List<Subject> open = openAll(base, bounded, stores, dir);
        r.openEmptyS = seconds(t);
        t = System.nanoTime();
        for (Subject s : open) {
            s.load(keys, values);
        }
        r.loadS = seconds(t);
        BenchStore.settle();
        r.sample();
        t = System.nanoTime();
        closeAll(open, entries);
        r.closeS = seconds(t);

        t = System.nanoTime();
        open = openAll(base, bounded, stores, dir);
        r.reopenS = seconds(t);
        BenchStore.settle();
        r.sampleReopened();
        closeAll(open, entries);
        r.diskMiB = allocatedKiB(dir) / 1024;
        // 1,000 stores hold gigabytes of preallocated write-ahead logs: free them before the
        // next variant runs.
        deleteTree(dir.toPath());
        return r;
    }

    private static List<Subject> openAll(String variant, boolean bounded, int stores, File dir) {
        List<Subject> open = new ArrayList<>(stores);
        for (int i = 0; i < stores; i++) {
            // 4 stores per task: task i/4, store i%4, as Kafka lays out a task's stores.
            File task = new File(dir, String.format("0_%d/s%d", i / 4, i % 4));
            open.add(Subject.open(variant, task, bounded ? BoundedMemorySetter.class : null));
        }
        return open;
    }

    /** Closes every store as a task's clean close does: commit (Kafka flushes), then close. */
    private static void closeAll(List<Subject> open, int entries) {
        for (Subject s : open) {
            s.commit(entries - 1);
            s.close();
        }
    }

    /** Disk blocks allocated under {@code dir} (preallocated log space included), by du. */
    private static long allocatedKiB(File dir) throws IOException, InterruptedException {
        Process du = new ProcessBuilder("du", "-sk", dir.getAbsolutePath()).start();
        String out = new String(du.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        du.waitFor();
        return Long.parseLong(out.trim().split("\\s+")[0]);
    }

    private static double seconds(long since) {
        return (System.nanoTime() - since) / 1e9;
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (java.util.stream.Stream<Path> walk = Files.walk(root)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** One variant's figures. */
    static final class Result {
        static final String HEADER = String.format("%-24s %9s %9s %9s %9s %10s %9s %7s %8s %10s %7s %9s",
            "variant", "open s", "load s", "close s", "reopen s", "RSS MiB", "heap MiB", "fds", "threads",
            "RSS2 MiB", "fds2", "disk MiB");
        final String variant;
        double openEmptyS;
        double loadS;
        double closeS;
        double reopenS;
        long rssMiB;
        long heapMiB;
        long fds;
        long threads;
        long rssReopenedMiB;
        long fdsReopened;
        long diskMiB;

        Result(String variant) {
            this.variant = variant;
        }

        void sample() throws IOException {
            System.gc();
            rssMiB = status("VmRSS:") / 1024;
            heapMiB = (Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory()) >> 20;
            threads = status("Threads:");
            fds = openFds();
        }

        void sampleReopened() throws IOException {
            System.gc();
            rssReopenedMiB = status("VmRSS:") / 1024;
            fdsReopened = openFds();
        }

        private static long status(String field) throws IOException {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
                if (line.startsWith(field)) {
                    return Long.parseLong(line.substring(field.length()).trim().split("\\s+")[0]);
                }
            }
            throw new IllegalStateException(field + " not in /proc/self/status");
        }

        private static long openFds() throws IOException {
            try (java.util.stream.Stream<Path> fds = Files.list(Paths.get("/proc/self/fd"))) {
                return fds.count();
            }
        }

        /** The median of each column of {@code rounds} (rows of {@link #columns}) of {@code variant}. */
        static Result median(String variant, List<double[]> rounds) {
            double[] m = new double[rounds.get(0).length];
            for (int c = 0; c < m.length; c++) {
                double[] col = new double[rounds.size()];
                for (int r = 0; r < col.length; r++) {
                    col[r] = rounds.get(r)[c];
                }
                Arrays.sort(col);
                int n = col.length;
                m[c] = n % 2 == 1 ? col[n / 2] : (col[n / 2 - 1] + col[n / 2]) / 2;
            }
            Result r = new Result(variant);
            r.openEmptyS = m[0];
            r.loadS = m[1];
            r.closeS = m[2];
            r.reopenS = m[3];
            r.rssMiB = Math.round(m[4]);
            r.heapMiB = Math.round(m[5]);
            r.fds = Math.round(m[6]);
            r.threads = Math.round(m[7]);
            r.rssReopenedMiB = Math.round(m[8]);
            r.fdsReopened = Math.round(m[9]);
            r.diskMiB = Math.round(m[10]);
            return r;
        }

        /**
         * One line of the table. {@link ManyStores#columns} reads it back, so its numbers never
         * follow the locale.
         */
        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%-24s %9.1f %9.1f %9.1f %9.1f %10d %9d %7d %8d %10d %7d %9d",
                variant, openEmptyS, loadS, closeS, reopenS, rssMiB, heapMiB, fds, threads, rssReopenedMiB,
                fdsReopened, diskMiB);
        }
    }
}
