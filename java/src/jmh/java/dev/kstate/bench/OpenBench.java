package dev.kstate.bench;

import dev.kstate.streams.TestSupport;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Opening a store of {@code -Pkeys} keys (default 1M): after a clean close, and after a kill (a
 * child JVM loads and commits the store, then is SIGKILLed). One operation = init (open and
 * recovery) plus one read. Each iteration opens a fresh copy of the same closed or killed
 * directory. RocksDB variants only: an in-memory store has nothing to open.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 5)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx2g"})
public class OpenBench {
    @Param({"kstate-rocksdb", "kafka-rocksdb", "kafka-rocksdb-txn"})
    public String variant;

    private File closed;
    private File killed;
    private File copy;
    private Subject subject;

    @Setup(Level.Trial)
    public void build() throws Exception {
        if (!Subject.persistent(variant)) {
            throw new IllegalArgumentException(variant + " keeps nothing to open: use a RocksDB variant");
        }
        int n = Subject.keyCount();
        closed = Subject.freshDir("closed-" + variant);
        try (Subject s = Subject.open(variant, closed)) {
            s.load(Subject.keys(n), Subject.values(1024, 3));
        }
        killed = Subject.freshDir("killed-" + variant);
        List<String> cmd = TestSupport.childJvm("-Xmx2g");
        // the benchmark measures the store, not JNI checks
        cmd.remove("-Xcheck:jni");
        cmd.add("-Dkstate.bench.keys=" + n);
        cmd.add(KillChild.class.getName());
        cmd.add(variant);
        cmd.add(killed.getAbsolutePath());
        Process child = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = out.readLine()) != null && !line.equals(KillChild.READY)) {
                System.out.println("child: " + line);
            }
            if (line == null) {
                throw new IllegalStateException("the child exited before committing: " + child.waitFor());
            }
            child.destroyForcibly(); // SIGKILL on Linux
            child.waitFor();
        }
        // What survived the kill, for the report (not measured).
        File probe = Subject.freshDir("probe-" + variant);
        Subject.copyTree(killed, probe);
        try (Subject s = Subject.open(variant, probe)) {
            System.out.println(variant + " after the kill: approximately " + s.store.approximateNumEntries() + " of " + n
                + " keys, committed offset " + ((org.apache.kafka.streams.processor.StateStore) s.store)
                .committedOffset(Subject.CHANGELOG));
        }
        TestSupport.deleteTree(probe);
    }

    @TearDown(Level.Trial)
    public void clean() {
        TestSupport.deleteTree(closed);
        TestSupport.deleteTree(killed);
    }


    @TearDown(Level.Iteration)
    public void closeCopy() {
        if (subject != null) {
            subject.close();
            subject = null;
        }
        TestSupport.deleteTree(copy);
    }

    /** A fresh copy of the closed or killed store, by benchmark (not measured). */
    @Setup(Level.Iteration)
    public void copyOf(BenchmarkParams params) throws Exception {
        copy = Subject.freshDir("open-" + variant);
        Subject.copyTree(params.getBenchmark().endsWith("openAfterKill") ? killed : closed, copy);
    }

    private Object measure() {
        Cpu.Span cpu = Cpu.start();
        subject = Subject.open(variant, copy);
        Object v = subject.store.get(Subject.key(0));
        cpu.stop();
        return v;
    }

    @Benchmark
    public Object openAfterClose() {
        return measure();
    }

    @Benchmark
    public Object openAfterKill() {
        return measure();
    }
}
