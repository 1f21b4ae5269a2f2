package dev.kstate.bench;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import dev.kstate.streams.TestSupport;
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
import org.openjdk.jmh.infra.Blackhole;

/**
 * Steady-state operations on a store loaded with {@code -Pkeys} keys (default 1M) of 100-byte
 * values: put with a commit every 1,000, putAll of 1,000 (plus its commit), get hit, get miss,
 * range of 100. Time per operation (for putAll: per batch of 1,000).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx4g"})
public class KvBench {
    @Param({"kstate-rocksdb", "kstate-memory", "kafka-rocksdb", "kafka-rocksdb-txn", "kafka-memory"})
    public String variant;

    private File dir;
    private Subject subject;
    private Bytes[] keys;
    private Bytes[] absent;
    private byte[][] values;
    private int n;
    private final BenchStore.Picker picker = new BenchStore.Picker();
    private long offset;
    private final List<KeyValue<Bytes, ValueAndTimestamp<byte[]>>> batch = new ArrayList<>(1000);

    @Setup(Level.Trial)
    public void load() throws Exception {
        n = Subject.keyCount();
        keys = Subject.keys(n);
        absent = new Bytes[n];
        for (int i = 0; i < n; i++) {
            absent[i] = Subject.absentKey(i);
        }
        values = Subject.values(1024, 7);
        dir = Subject.freshDir("kv-" + variant);
        subject = Subject.open(variant, dir);
        subject.load(keys, values);
        offset = n;
    }

    @TearDown(Level.Trial)
    public void close() {
        subject.close();
        TestSupport.deleteTree(dir);
    }

    /** A pseudo-random key index in [0, n). */
    private int pick() {
        return picker.pick(n);
    }

    /** One put of an existing key; every 1,000th put also commits (as a commit interval would). */
    @Benchmark
    public void putCommit() {
        int i = pick();
        subject.store.put(keys[i], ValueAndTimestamp.make(values[i & 1023], offset));
        if (++offset % 1000 == 0) {
            subject.commit(offset);
        }
    }

    /** putAll of 1,000 existing keys, then a commit. */
    @Benchmark
    public void putAll1000() {
        batch.clear();
        for (int j = 0; j < 1000; j++) {
            int i = pick();
            batch.add(KeyValue.pair(keys[i], ValueAndTimestamp.make(values[i & 1023], offset)));
        }
        subject.store.putAll(batch);
        subject.commit(offset++);
    }

    @Benchmark
    public ValueAndTimestamp<byte[]> getHit() {
        return subject.store.get(keys[pick()]);
    }

    @Benchmark
    public ValueAndTimestamp<byte[]> getMiss() {
        return subject.store.get(absent[pick()]);
    }

    /** range(from, to) over 100 consecutive keys, every entry read. */
    @Benchmark
    public void range100(Blackhole bh) {
        int i = pick() % Math.max(1, n - 100);
        try (KeyValueIterator<Bytes, ValueAndTimestamp<byte[]>> it = subject.store.range(keys[i], keys[i + 99])) {
            while (it.hasNext()) {
                bh.consume(it.next());
            }
        }
    }
}
