package dev.kstate.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * CPU clocks for the benchmarks: the whole process (every thread, RocksDB's background
 * flushes and compactions included) and the calling thread.
 *
 * <p>Single-shot benchmarks (restore, open) bracket exactly the measured work with a
 * {@link Span}, so that what their per-iteration setup and teardown cost (building or
 * copying a store, closing it) is not charged to them; {@link CpuProfiler} reports the spans
 * of an iteration when there are any, and the whole iteration otherwise.
 */
public final class Cpu {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final com.sun.management.OperatingSystemMXBean OS =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private static long spanProcessNs;
    private static long spanThreadNs;
    private static int spans;

    private Cpu() {
    }

    /** @return CPU time of the whole process so far, in nanoseconds */
    public static long processNs() {
        return OS.getProcessCpuTime();
    }

    /** @return CPU time of thread {@code id} so far in nanoseconds, -1 when it is gone */
    static long threadNs(long id) {
        return THREADS.getThreadCpuTime(id);
    }

    /** @return the thread MX bean */
    static ThreadMXBean threads() {
        return THREADS;
    }

    /** Opens a span on the calling thread. */
    public static Span start() {
        return new Span();
    }

    /** Clears the spans recorded so far (at the start of an iteration). */
    static synchronized void resetSpans() {
        spanProcessNs = 0;
        spanThreadNs = 0;
        spans = 0;
    }

    /** @return {process ns, thread ns, spans} recorded since the last reset */
    static synchronized long[] spans() {
        return new long[] {spanProcessNs, spanThreadNs, spans};
    }

    private static synchronized void record(long processNs, long threadNs) {
        spanProcessNs += processNs;
        spanThreadNs += threadNs;
        spans++;
    }

    /** The CPU spent between {@link Cpu#start()} and {@link #stop()}. */
    public static final class Span {
        private final long process = processNs();
        private final long thread = THREADS.getCurrentThreadCpuTime();

        private Span() {
        }

        /** Records the span. */
        public void stop() {
            record(processNs() - process, THREADS.getCurrentThreadCpuTime() - thread);
        }
    }
}
