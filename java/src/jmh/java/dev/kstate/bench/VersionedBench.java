package dev.kstate.bench;

import dev.kstate.streams.TestSupport;
import java.io.File;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.utils.Bytes;
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

/**
 * Steady-state operations on a versioned key-value store, history retention 1 hour (Kafka's
 * default segment interval for it: 5 minutes), loaded with {@link #VERSIONS} versions per key
 * (one every 10 minutes, the last one the latest) of {@code -Pkeys / 10} keys (default 100,000
 * keys, 600,000 versions) of 100-byte values, in time order (a commit every 1,000 puts), then
 * left to settle ({@link BenchStore#settle}):
 * <ul>
 *   <li>{@code versionedPutCommit}: a new latest version of a random key, stream time advancing
 *   10 ms per put (so that history expires while the benchmark runs); every 1,000th put also
 *   commits;</li>
 *   <li>{@code versionedGetLatest}: {@code get(key)} of a random key;</li>
 *   <li>{@code versionedGetAsOf}: {@code get(key, asOf)} of a random key at a random time of
 *   the loaded history (a history read, not the latest value).</li>
 * </ul>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx4g"})
public class VersionedBench {
    /** The step between the versions of a key. */
    static final long STEP = 10 * WindowBench.MINUTE;
    /** Versions loaded per key: 1 hour. */
    static final int VERSIONS = 6;

    @Param({"kstate-rocksdb", "kstate-memory", "kafka-rocksdb", "kafka-rocksdb-txn"})
    public String variant;

    private File dir;
    private VersionedSubject subject;
    private Bytes[] keys;
    private byte[][] values;
    private int n;
    private long offset;
    private long clock;
    private final BenchStore.Picker picker = new BenchStore.Picker();

    @Setup(Level.Trial)
    public void load() throws Exception {
        n = Math.max(100, BenchStore.keyCount() / 10);
        keys = Subject.keys(n);
        values = BenchStore.values(1024, 17);
        dir = BenchStore.freshDir("versioned-" + variant);
        subject = VersionedSubject.open(variant, dir, Duration.ofHours(1));
        for (int v = 0; v < VERSIONS; v++) {
            for (int i = 0; i < n; i++) {
                put(i, v * STEP + (i % 60) * 1000L);
            }
        }
        clock = VERSIONS * STEP;
        subject.commit(offset);
        BenchStore.settle();
    }

    @TearDown(Level.Trial)
    public void close() {
        subject.close();
        TestSupport.deleteTree(dir);
    }

    /** Puts a version of key {@code i} at {@code time}; every 1,000th put commits. */
    private void put(int i, long time) {
        subject.store.put(keys[i], values[(int) (offset & 1023)], time);
        if (++offset % 1000 == 0) {
            subject.commit(offset);
        }
    }

    /** A new latest version of a random key, stream time advancing 10 ms per put. */
    @Benchmark
    public void versionedPutCommit() {
        clock += 10;
        put(picker.pick(n), clock);
    }

    /** {@code get(key)} of a random key. */
    @Benchmark
    public Object versionedGetLatest() {
        return subject.store.get(keys[picker.pick(n)]);
    }

    /** {@code get(key, asOf)} at a random time of the loaded history, before the latest version. */
    @Benchmark
    public Object versionedGetAsOf() {
        int i = picker.pick(n);
        long asOf = (VERSIONS - 1) * STEP - 1 - picker.pick((int) (STEP * 3 / 1000)) * 1000L;
        return subject.store.get(keys[i], asOf);
    }
}
