package dev.kstate.bench;

import dev.kstate.streams.TestSupport;
import java.io.File;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.state.ValueAndTimestamp;
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
 * Puts as a windowed aggregation makes them, stream time advancing while they run: a put of
 * a random key's window (or session) at the current minute, a commit every 1,000 puts, and
 * stream time one minute further after each 1,000 puts. Retention 1 hour, so the segment
 * interval is Kafka's default 30 minutes and a segment expires every 30,000 puts while the
 * benchmark runs (unlike {@link WindowBench} and {@link SessionBench}, whose puts stay inside
 * a loaded store's live segments). Each store starts with one hour of such puts (60,000),
 * so it is measured in its steady state. {@code -Pkeys / 100} keys (default 10,000),
 * 100-byte values:
 * <ul>
 *   <li>{@code windowPutExpiring}: 1-minute windows, {@code put(key, value, minute)};</li>
 *   <li>{@code sessionPutExpiring}: sessions of one minute starting at the current minute.</li>
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx4g"})
public class ExpiryBench {
    /** Retention of both stores. */
    static final Duration RETENTION = Duration.ofHours(1);
    /** Puts per minute of stream time, and per commit. */
    static final int PER_MINUTE = 1000;
    /** Puts before the measurement: one retention period. */
    static final int PRELOAD = 60 * PER_MINUTE;

    /** What both stores' states share: keys, values, the put counter and its picker. */
    abstract static class Pacing {
        File dir;
        Bytes[] keys;
        byte[][] values;
        long offset;
        final BenchStore.Picker picker = new BenchStore.Picker();

        void prepare(String name) throws java.io.IOException {
            keys = Subject.keys(WindowBench.windowKeyCount());
            values = BenchStore.values(1024, 17);
            dir = BenchStore.freshDir(name);
        }

        /** @return the current minute of stream time, in ms */
        long minute() {
            return offset / PER_MINUTE * WindowBench.MINUTE;
        }

        /** One put of the kind's record at the current minute, counted. */
        abstract void put();

        /** Puts one retention period (the steady state), then waits for background work. */
        void preload() throws InterruptedException {
            for (int i = 0; i < PRELOAD; i++) {
                put();
            }
            BenchStore.settle();
        }

        /** Closes the store and deletes its directory. */
        void release(BenchStore subject) {
            subject.close();
            TestSupport.deleteTree(dir);
        }

        /** Counts a put; every 1,000th commits (which moves stream time on a minute). */
        void counted(BenchStore store) {
            if (++offset % PER_MINUTE == 0) {
                store.commit(offset);
            }
        }
    }

    /** A window store of 1-minute windows. */
    @State(Scope.Benchmark)
    public static class Windows extends Pacing {
        @Param({"kstate-rocksdb", "kstate-memory", "kafka-rocksdb", "kafka-rocksdb-txn", "kafka-memory"})
        public String variant;

        WindowSubject subject;

        @Setup(Level.Trial)
        public void open() throws Exception {
            prepare("expiry-window-" + variant);
            subject = WindowSubject.open(variant, dir, RETENTION, Duration.ofMinutes(1));
            preload();
        }

        @Override
        void put() {
            int k = picker.pick(keys.length);
            long start = minute();
            subject.store.put(keys[k], ValueAndTimestamp.make(values[(int) (offset & 1023)], start + 1), start);
            counted(subject);
        }

        @TearDown(Level.Trial)
        public void close() {
            release(subject);
        }
    }

    /** A session store. */
    @State(Scope.Benchmark)
    public static class Sessions extends Pacing {
        @Param({"kstate-rocksdb", "kstate-memory", "kafka-rocksdb", "kafka-rocksdb-txn", "kafka-memory"})
        public String variant;

        SessionSubject subject;

        @Setup(Level.Trial)
        public void open() throws Exception {
            prepare("expiry-session-" + variant);
            subject = SessionSubject.open(variant, dir, RETENTION);
            preload();
        }

        @Override
        void put() {
            int k = picker.pick(keys.length);
            long start = minute();
            subject.store.put(new Windowed<>(keys[k], new SessionWindow(start, start + WindowBench.MINUTE)),
                values[(int) (offset & 1023)]);
            counted(subject);
        }

        @TearDown(Level.Trial)
        public void close() {
            release(subject);
        }
    }

    /** A put of a random key's window at the current minute; every 1,000th also commits. */
    @Benchmark
    public void windowPutExpiring(Windows s) {
        s.put();
    }

    /** A put of a random key's session at the current minute; every 1,000th also commits. */
    @Benchmark
    public void sessionPutExpiring(Sessions s) {
        s.put();
    }
}
