package dev.kstate.bench;

import dev.kstate.streams.TestSupport;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
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
 *
 * <p>After a kill, stores differ in what they come back with: a store whose last commits were
 * not durable reports an earlier committed offset, and Kafka Streams restores the records after
 * it from the changelog before the task runs. {@link #openAfterKillToCommitted} counts that
 * catch-up too: open, then restore (through the store's batching restore callback, batches of
 * 1,000, records taken from memory, so no broker fetch is counted) every record of the load
 * after the offset the store reports as committed, then the commit that follows a restore.
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
    private int keys;
    /** The load's values (the child's and the closed store's), for the changelog of the catch-up. */
    private final byte[][] values = Subject.values(1024, 3);
    /** The load as changelog records (record i = key i), built only for the catch-up benchmark. */
    private List<ConsumerRecord<byte[], byte[]>> changelog;

    @Setup(Level.Trial)
    public void build(BenchmarkParams params) throws Exception {
        if (!Subject.persistent(variant)) {
            throw new IllegalArgumentException(variant + " keeps nothing to open: use a RocksDB variant");
        }
        int n = Subject.keyCount();
        keys = n;
        if (params.getBenchmark().endsWith("ToCommitted")) {
            changelog = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                changelog.add(Subject.loadRecord(i, values));
            }
        }
        closed = Subject.freshDir("closed-" + variant);
        try (Subject s = Subject.open(variant, closed)) {
            s.load(Subject.keys(n), values);
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
                + " keys, committed offset " + ((StateStore) s.store).committedOffset(Subject.CHANGELOG));
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
        Subject.copyTree(params.getBenchmark().endsWith("openAfterClose") ? closed : killed, copy);
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

    /** Open after a kill, then restore what the store lost of its committed records. */
    @Benchmark
    public Object openAfterKillToCommitted() {
        Cpu.Span cpu = Cpu.start();
        subject = Subject.open(variant, copy);
        Long committed = ((StateStore) subject.store).committedOffset(Subject.CHANGELOG);
        int from = committed == null ? 0 : (int) (committed + 1);
        if (from < keys) {
            RecordBatchingStateRestoreCallback restorer = subject.restorer();
            for (int at = from; at < keys; at += 1000) {
                restorer.restoreBatch(changelog.subList(at, Math.min(at + 1000, keys)));
            }
            subject.commit(keys - 1);
        }
        Object v = subject.store.get(Subject.key(keys - 1));
        cpu.stop();
        if (v == null) {
            throw new IllegalStateException(variant + " lacks the last committed key after the catch-up");
        }
        return v;
    }
}
