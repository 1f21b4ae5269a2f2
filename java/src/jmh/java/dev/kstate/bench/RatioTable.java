package dev.kstate.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Prints the kstate/Kafka ratio table of a JMH run (its CSV results, with {@link CpuProfiler}'s
 * secondary results): per operation, wall time and process CPU time of each kstate engine
 * divided by those of the Kafka store it replaces (kstate RocksDB against Kafka's RocksDB store
 * without and with transactional state stores; kstate memory against Kafka's in-memory store),
 * for every benchmark of the run (key-value, window, session, restore, open, retention).
 * Below 1.0 kstate is faster.
 */
public final class RatioTable {
    private RatioTable() {
    }

    public static void main(String[] args) throws IOException {
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        if (lines.isEmpty()) {
            System.out.println("no results in " + args[0]);
            return;
        }
        List<String> header = split(lines.get(0));
        int benchCol = header.indexOf("Benchmark");
        int scoreCol = header.indexOf("Score");
        int unitCol = header.indexOf("Unit");
        int variantCol = header.indexOf("Param: variant");
        // op -> metric ("wall", "cpu.process", "cpu.thread") -> variant -> score
        Map<String, Map<String, Map<String, Double>>> scores = new LinkedHashMap<>();
        Map<String, String> units = new LinkedHashMap<>();
        for (String line : lines.subList(1, lines.size())) {
            List<String> f = split(line);
            if (f.size() <= variantCol || variantCol < 0) {
                continue;
            }
            String bench = f.get(benchCol);
            String metric = "wall";
            int colon = bench.indexOf(':');
            if (colon >= 0) {
                metric = bench.substring(colon + 1);
                bench = bench.substring(0, colon);
            }
            // rows are per benchmark (class and method), so that two classes' methods of one name never merge
            String op = bench;
            double score = Double.parseDouble(f.get(scoreCol));
            scores.computeIfAbsent(op, k -> new LinkedHashMap<>()).computeIfAbsent(metric, k -> new LinkedHashMap<>())
                .put(f.get(variantCol), score);
            if (metric.equals("wall")) {
                units.put(op, f.get(unitCol));
            }
        }
        String[][] pairs = {
            {"kstate-rocksdb", "kafka-rocksdb"},
            {"kstate-rocksdb", "kafka-rocksdb-txn"},
            {"kstate-memory", "kafka-memory"},
        };
        System.out.println();
        System.out.println("| operation | kstate | Kafka | kstate wall | Kafka wall | wall ratio | kstate CPU | Kafka CPU | CPU ratio |");
        System.out.println("|---|---|---|---|---|---|---|---|---|");
        Map<String, String> labels = labels(scores.keySet());
        for (Map.Entry<String, Map<String, Map<String, Double>>> e : scores.entrySet()) {
            Map<String, Double> wall = e.getValue().getOrDefault("wall", new LinkedHashMap<>());
            Map<String, Double> cpu = e.getValue().getOrDefault("cpu.process", new LinkedHashMap<>());
            String unit = units.getOrDefault(e.getKey(), "");
            for (String[] pair : pairs) {
                if (!wall.containsKey(pair[0]) || !wall.containsKey(pair[1])) {
                    continue;
                }
                System.out.println(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | **%.2f** | %s | %s | **%s** |",
                    labels.get(e.getKey()), pair[0], pair[1], fmt(wall.get(pair[0]), unit), fmt(wall.get(pair[1]), unit),
                    wall.get(pair[0]) / wall.get(pair[1]),
                    fmt(cpu.get(pair[0]), unit), fmt(cpu.get(pair[1]), unit),
                    cpu.containsKey(pair[0]) && cpu.containsKey(pair[1])
                        ? String.format(Locale.ROOT, "%.2f", cpu.get(pair[0]) / cpu.get(pair[1])) : "n/a"));
            }
        }
        System.out.println();
        System.out.println("Ratios are kstate / Kafka (below 1.0 kstate is faster). CPU = process CPU time per operation "
            + "(every thread: RocksDB background work, GC and JIT included).");
    }

    /**
     * @param benchmarks fully qualified benchmark methods
     * @return each one's row label: the method name, or {@code Class.method} when two classes
     *     have a method of that name
     */
    static Map<String, String> labels(Iterable<String> benchmarks) {
        Map<String, Integer> uses = new LinkedHashMap<>();
        for (String b : benchmarks) {
            uses.merge(method(b), 1, Integer::sum);
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (String b : benchmarks) {
            String m = method(b);
            if (uses.get(m) > 1) {
                String cls = b.substring(0, b.lastIndexOf('.'));
                m = cls.substring(cls.lastIndexOf('.') + 1) + "." + m;
            }
            out.put(b, m);
        }
        return out;
    }

    private static String method(String benchmark) {
        return benchmark.substring(benchmark.lastIndexOf('.') + 1);
    }

    private static String fmt(Double v, String unit) {
        if (v == null) {
            return "n/a";
        }
        return String.format(Locale.ROOT, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, unit);
    }

    /** Splits one CSV line of JMH's output (quoted fields, no embedded quotes). */
    static List<String> split(String line) {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        boolean quoted = false;
        for (char c : line.toCharArray()) {
            if (c == '"') {
                quoted = !quoted;
            } else if (c == ',' && !quoted) {
                out.add(cur.toString());
                cur.setLength(0);
            } else {
                cur.append(c);
            }
        }
        out.add(cur.toString());
        return out;
    }
}
