package dev.kstate.bench;

import java.lang.management.ThreadInfo;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * CPU time per operation next to JMH's wall time (shared machines are noisy; CPU time much
 * less so), in the benchmark's own time unit:
 * <ul>
 *   <li>{@code cpu.process}: every thread of the forked JVM (RocksDB's background flushes and
 *   compactions, GC and JIT included), divided by the operations of the iteration;</li>
 *   <li>{@code cpu.thread}: the benchmark's worker threads only.</li>
 * </ul>
 * Single-shot benchmarks that bracket their measured work with {@link Cpu.Span}s are charged
 * those spans only (not their per-iteration setup and teardown).
 */
public final class CpuProfiler implements InternalProfiler {
    private long processStart;
    private final Map<Long, Long> workerStart = new HashMap<>();

    @Override
    public String getDescription() {
        return "CPU time per operation: the whole process and the benchmark threads";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        Cpu.resetSpans();
        workerStart.clear();
        for (long id : workers()) {
            workerStart.put(id, Cpu.threadNs(id));
        }
        processStart = Cpu.processNs();
    }

    @Override
    public Collection<? extends Result> afterIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams,
                                                       IterationResult result) {
        long processNs = Cpu.processNs() - processStart;
        long threadNs = 0;
        for (long id : workers()) {
            long now = Cpu.threadNs(id);
            if (now >= 0) {
                // a worker started during the iteration began at zero
                threadNs += now - workerStart.getOrDefault(id, 0L);
            }
        }
        long[] spans = Cpu.spans();
        if (spans[2] > 0) {
            processNs = spans[0];
            threadNs = spans[1];
        }
        long ops = Math.max(1, result.getMetadata().getAllOps());
        TimeUnit unit = benchmarkParams.getTimeUnit();
        double perUnit = unit.toNanos(1);
        String label = shortUnit(unit) + "/op";
        List<Result> out = new ArrayList<>();
        out.add(new ScalarResult("cpu.process", processNs / perUnit / ops, label, AggregationPolicy.AVG));
        out.add(new ScalarResult("cpu.thread", threadNs / perUnit / ops, label, AggregationPolicy.AVG));
        return out;
    }

    /** JMH names its benchmark threads {@code <benchmark>-jmh-worker-<n>}. */
    private static List<Long> workers() {
        List<Long> ids = new ArrayList<>();
        for (ThreadInfo info : Cpu.threads().getThreadInfo(Cpu.threads().getAllThreadIds())) {
            if (info != null && info.getThreadName().contains("jmh-worker")) {
                ids.add(info.getThreadId());
            }
        }
        return ids;
    }

    private static String shortUnit(TimeUnit unit) {
        switch (unit) {
            case NANOSECONDS:
                return "ns";
            case MICROSECONDS:
                return "us";
            case MILLISECONDS:
                return "ms";
            case SECONDS:
                return "s";
            default:
                return unit.toString();
        }
    }
}
