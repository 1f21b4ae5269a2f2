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
 * without and with transactional state stores; kstate memory against Kafka's in-memory store).
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
            String op = bench.substring(bench.lastIndexOf('.') + 1);
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
        for (Map.Entry<String, Map<String, Map<String, Double>>> e : scores.entrySet()) {
            Map<String, Double> wall = e.getValue().getOrDefault("wall", new LinkedHashMap<>());
            Map<String, Double> cpu = e.getValue().getOrDefault("cpu.process", new LinkedHashMap<>());
            String unit = units.getOrDefault(e.getKey(), "");
            for (String[] pair : pairs) {
                if (!wall.containsKey(pair[0]) || !wall.containsKey(pair[1])) {
                    continue;
                }
                System.out.println(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | **%.2f** | %s | %s | **%s** |",
                    e.getKey(), pair[0], pair[1], fmt(wall.get(pair[0]), unit), fmt(wall.get(pair[1]), unit),
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
