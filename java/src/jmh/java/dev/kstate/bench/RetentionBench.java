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
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Retention as stream time advances: into an empty store of retention 20 minutes (Kafka's
 * segment interval: 10 minutes, so about 3 live segments), {@link #KEYS} keys write a 1-minute
 * window (or a 30-second session) every minute for {@link #SEGMENTS} segment intervals (1,000
 * minutes: 100,000 puts, a commit every 1,000), so that the store creates 100 segments and
 * expires all but the last few. One operation = the whole run; what it measures beyond the puts
 * themselves is the cost of creating and expiring segments (Kafka: a RocksDB instance per
 * segment, opened and destroyed; kstate: one range deletion in the commit that follows).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 5)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx2g"})
public class RetentionBench {
    /** Segment intervals stream time crosses. */
    static final int SEGMENTS = 100;
    /** Keys writing every minute. */
    static final int KEYS = 100;
    /** The retention period: 20 minutes, a segment interval of 10 minutes. */
    static final Duration RETENTION = Duration.ofMinutes(20);
    /** Minutes of stream time: 10 per segment. */
    static final int MINUTES = SEGMENTS * 10;

    @Param({"kstate-rocksdb", "kstate-memory", "kafka-rocksdb", "kafka-rocksdb-txn", "kafka-memory"})
    public String variant;

    private Bytes[] keys;
    private byte[][] values;
    private File dir;
    private WindowSubject window;
    private SessionSubject session;

    @Setup(Level.Trial)
    public void data() {
        keys = Subject.keys(KEYS);
        values = BenchStore.values(1024, 17);
    }

    /** An empty store of the benchmark's kind (not measured). */
    @Setup(Level.Iteration)
    public void emptyStore(BenchmarkParams params) throws Exception {
        dir = BenchStore.freshDir("retention-" + variant);
        if (params.getBenchmark().endsWith("sessionRetention100Segments")) {
            session = SessionSubject.open(variant, dir, RETENTION);
        } else {
            window = WindowSubject.open(variant, dir, RETENTION, Duration.ofMinutes(1));
        }
        System.gc();
    }

    @TearDown(Level.Iteration)
    public void drop() {
        if (window != null) {
            window.close();
            window = null;
        }
        if (session != null) {
            session.close();
            session = null;
        }
        TestSupport.deleteTree(dir);
    }

    /** 1,000 minutes of 1-minute windows of 100 keys: 100,000 puts over 100 segments, a commit every 1,000. */
    @Benchmark
    public void windowRetention100Segments() {
        Cpu.Span cpu = Cpu.start();
        long offset = 0;
        for (int m = 0; m < MINUTES; m++) {
            long start = m * WindowBench.MINUTE;
            for (int i = 0; i < KEYS; i++) {
                window.store.put(keys[i], ValueAndTimestamp.make(values[(int) (offset & 1023)], start), start);
                if (++offset % 1000 == 0) {
                    window.commit(offset);
                }
            }
        }
        window.commit(offset);
        cpu.stop();
    }

    /** 1,000 minutes of 30-second sessions of 100 keys: 100,000 puts over 100 segments, a commit every 1,000. */
    @Benchmark
    public void sessionRetention100Segments() {
        Cpu.Span cpu = Cpu.start();
        long offset = 0;
        for (int m = 0; m < MINUTES; m++) {
            long start = m * WindowBench.MINUTE;
            for (int i = 0; i < KEYS; i++) {
                session.store.put(new Windowed<>(keys[i], new SessionWindow(start, start + 30_000L)),
                    values[(int) (offset & 1023)]);
                if (++offset % 1000 == 0) {
                    session.commit(offset);
                }
            }
        }
        session.commit(offset);
        cpu.stop();
    }
}
