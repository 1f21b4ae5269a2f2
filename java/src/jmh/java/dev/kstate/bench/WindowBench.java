package dev.kstate.bench;

import dev.kstate.streams.TestSupport;
import java.io.File;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStoreIterator;
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
 * Steady-state operations on a timestamped window store of 1-minute windows, retention 2 hours
 * (Kafka's segment interval: 1 hour), loaded with {@link #WINDOWS} windows (2 hours) of each of
 * {@code -Pkeys / 100} keys (default 10,000 keys, 1.2M windows) of 100-byte values, in time
 * order as a windowed aggregation writes them (a commit every 1,000 puts), then left to settle
 * ({@link BenchStore#settle}: the flushes and compactions of the load are not measured):
 * <ul>
 *   <li>{@code windowPutCommit}: a put into one of the last hour's windows of a random key
 *   (the update of an aggregate), every 1,000th put also commits;</li>
 *   <li>{@code windowFetchHour}: {@code fetch(key, from, to)} over one hour (60 windows, every
 *   entry read) at a random key and time;</li>
 *   <li>{@code windowFetchAll}: {@code fetchAll(from, to)} over one minute (every key's window of
 *   that minute, every entry read);</li>
 *   <li>{@code windowBackwardFetchHour}, {@code windowBackwardFetchAll}: the same with
 *   {@code backwardFetch} and {@code backwardFetchAll}.</li>
 * </ul>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx4g"})
public class WindowBench {
    /** One minute, the window size and the step between windows. */
    static final long MINUTE = 60_000L;
    /** Windows loaded per key: 2 hours of 1-minute windows. */
    static final int WINDOWS = 120;
    /** Windows of one {@code fetch(key, from, to)}: one hour. */
    static final int HOUR = 60;

    @Param({"kstate-rocksdb", "kstate-memory", "kafka-rocksdb", "kafka-rocksdb-txn", "kafka-memory"})
    public String variant;

    private File dir;
    private WindowSubject subject;
    private Bytes[] keys;
    private byte[][] values;
    private int n;
    private long offset;
    private final BenchStore.Picker picker = new BenchStore.Picker();

    /** @return the keys of the loaded window and session stores: {@code -Pkeys / 100}, at least 100 */
    static int windowKeyCount() {
        return Math.max(100, BenchStore.keyCount() / 100);
    }

    @Setup(Level.Trial)
    public void load() throws Exception {
        n = windowKeyCount();
        keys = Subject.keys(n);
        values = BenchStore.values(1024, 7);
        dir = BenchStore.freshDir("window-" + variant);
        subject = WindowSubject.open(variant, dir, Duration.ofHours(2), Duration.ofMinutes(1));
        for (int w = 0; w < WINDOWS; w++) {
            long start = w * MINUTE;
            for (int i = 0; i < n; i++) {
                put(i, start);
            }
        }
        subject.commit(offset);
        BenchStore.settle();
    }

    @TearDown(Level.Trial)
    public void close() {
        subject.close();
        TestSupport.deleteTree(dir);
    }

    /** Puts key {@code i}'s window at {@code start}; every 1,000th put commits. */
    private void put(int i, long start) {
        subject.store.put(keys[i], ValueAndTimestamp.make(values[(int) (offset & 1023)], start + 1), start);
        if (++offset % 1000 == 0) {
            subject.commit(offset);
        }
    }

    /** A put into one of the last hour's windows of a random key; every 1,000th put also commits. */
    @Benchmark
    public void windowPutCommit() {
        put(picker.pick(n), (WINDOWS - HOUR + picker.pick(HOUR)) * MINUTE);
    }

    /** {@code fetch(key, from, from + 59 min)}: 60 windows, every entry read. */
    @Benchmark
    public void windowFetchHour(Blackhole bh) {
        long from = picker.pick(WINDOWS - HOUR + 1) * MINUTE;
        try (WindowStoreIterator<ValueAndTimestamp<byte[]>> it =
                 subject.store.fetch(keys[picker.pick(n)], from, from + (HOUR - 1) * MINUTE)) {
            while (it.hasNext()) {
                bh.consume(it.next());
            }
        }
    }

    /** {@code backwardFetch(key, from, from + 59 min)}: 60 windows, every entry read. */
    @Benchmark
    public void windowBackwardFetchHour(Blackhole bh) {
        long from = picker.pick(WINDOWS - HOUR + 1) * MINUTE;
        try (WindowStoreIterator<ValueAndTimestamp<byte[]>> it =
                 subject.store.backwardFetch(keys[picker.pick(n)], from, from + (HOUR - 1) * MINUTE)) {
            while (it.hasNext()) {
                bh.consume(it.next());
            }
        }
    }

    /** {@code fetchAll(t, t)}: the window of minute {@code t} of every key, every entry read. */
    @Benchmark
    public void windowFetchAll(Blackhole bh) {
        long t = picker.pick(WINDOWS) * MINUTE;
        try (KeyValueIterator<Windowed<Bytes>, ValueAndTimestamp<byte[]>> it = subject.store.fetchAll(t, t)) {
            while (it.hasNext()) {
                KeyValue<Windowed<Bytes>, ValueAndTimestamp<byte[]>> kv = it.next();
                bh.consume(kv);
            }
        }
    }

    /** {@code backwardFetchAll(t, t)}: as {@link #windowFetchAll}, last key first. */
    @Benchmark
    public void windowBackwardFetchAll(Blackhole bh) {
        long t = picker.pick(WINDOWS) * MINUTE;
        try (KeyValueIterator<Windowed<Bytes>, ValueAndTimestamp<byte[]>> it =
                 subject.store.backwardFetchAll(t, t)) {
            while (it.hasNext()) {
                bh.consume(it.next());
            }
        }
    }
}
