package dev.kstate.bench;

import dev.kstate.streams.TestSupport;
import java.io.File;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.state.KeyValueIterator;
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
 * Steady-state operations on a session store, retention 2 hours (Kafka's segment interval: 1
 * hour), loaded with {@link #SESSIONS} sessions per key (one every 5 minutes for 2 hours, each 2
 * minutes long) of {@code -Pkeys / 100} keys (default 10,000 keys, 240,000 sessions) of
 * 100-byte values, in time order (a commit every 1,000 puts), then left to settle
 * ({@link BenchStore#settle}):
 * <ul>
 *   <li>{@code sessionFind}: {@code findSessions(key, earliestSessionEndTime,
 *   latestSessionStartTime)} over 30 minutes (6 sessions) at a random key and time, every entry
 *   read;</li>
 *   <li>{@code sessionFindMerge}: {@code findSessions(key, t - 1 minute, t + 1 minute)} at a random
 *   key and minute {@code t}: what a session aggregation with a 1-minute inactivity gap reads for
 *   each record (here 0 or 1 session, the sessions covering 2 of every 5 minutes), every entry
 *   read;</li>
 *   <li>{@code sessionFetch}: {@code fetchSession(key, start, end)} of one existing session;</li>
 *   <li>{@code sessionFetchKey}: {@code fetch(key)}, the key's 24 sessions, every entry read;</li>
 *   <li>{@code sessionRemovePut}: {@code remove} of one of the last hour's sessions, then its put
 *   back (two writes; a commit every 1,000 writes);</li>
 *   <li>{@code sessionPutCommit}: a put of one of the last hour's sessions of a random key (the
 *   update of a session aggregate), every 1,000th put also commits.</li>
 * </ul>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx4g"})
public class SessionBench {
    /** The step between the sessions of a key. */
    static final long GAP = 5 * WindowBench.MINUTE;
    /** The length of a session (end - start). */
    static final long LENGTH = 2 * WindowBench.MINUTE;
    /** Sessions loaded per key: 2 hours. */
    static final int SESSIONS = 24;

    @Param({"kstate-rocksdb", "kstate-memory", "kafka-rocksdb", "kafka-rocksdb-txn", "kafka-memory"})
    public String variant;

    private File dir;
    private SessionSubject subject;
    private Bytes[] keys;
    private byte[][] values;
    private int n;
    private long offset;
    private final BenchStore.Picker picker = new BenchStore.Picker();

    @Setup(Level.Trial)
    public void load() throws Exception {
        n = WindowBench.windowKeyCount();
        keys = Subject.keys(n);
        values = BenchStore.values(1024, 13);
        dir = BenchStore.freshDir("session-" + variant);
        subject = SessionSubject.open(variant, dir, Duration.ofHours(2));
        for (int s = 0; s < SESSIONS; s++) {
            for (int i = 0; i < n; i++) {
                put(i, s);
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

    /** @return the start of key {@code i}'s session {@code s} (keys start at different seconds) */
    private static long start(int i, int s) {
        return s * GAP + (i % 60) * 1000L;
    }

    /** Puts key {@code i}'s session {@code s}; every 1,000th put commits. */
    private void put(int i, int s) {
        long start = start(i, s);
        subject.store.put(new Windowed<>(keys[i], new SessionWindow(start, start + LENGTH)), values[(int) (offset & 1023)]);
        if (++offset % 1000 == 0) {
            subject.commit(offset);
        }
    }

    /** {@code findSessions(key, t, t + 30 min)}: the 6 sessions of 30 minutes, every entry read. */
    @Benchmark
    public void sessionFind(Blackhole bh) {
        long earliestEnd = picker.pick(SESSIONS * (int) (GAP / WindowBench.MINUTE) - 30) * WindowBench.MINUTE;
        try (KeyValueIterator<Windowed<Bytes>, byte[]> it =
                 subject.store.findSessions(keys[picker.pick(n)], earliestEnd, earliestEnd + 30 * WindowBench.MINUTE)) {
            while (it.hasNext()) {
                bh.consume(it.next());
            }
        }
    }

    /** {@code findSessions} as a session aggregation calls it for each record: 0 or 1 session. */
    @Benchmark
    public void sessionFindMerge(Blackhole bh) {
        long t = picker.pick(SESSIONS * (int) (GAP / WindowBench.MINUTE)) * WindowBench.MINUTE;
        try (KeyValueIterator<Windowed<Bytes>, byte[]> it =
                 subject.store.findSessions(keys[picker.pick(n)], t - WindowBench.MINUTE, t + WindowBench.MINUTE)) {
            while (it.hasNext()) {
                bh.consume(it.next());
            }
        }
    }

    /** {@code fetchSession(key, start, end)}: one session of a random key, found (a point read). */
    @Benchmark
    public byte[] sessionFetch() {
        int i = picker.pick(n);
        long start = start(i, picker.pick(SESSIONS));
        return subject.store.fetchSession(keys[i], start, start + LENGTH);
    }

    /** {@code fetch(key)}: every session of a random key (24), every entry read. */
    @Benchmark
    public void sessionFetchKey(Blackhole bh) {
        try (KeyValueIterator<Windowed<Bytes>, byte[]> it = subject.store.fetch(keys[picker.pick(n)])) {
            while (it.hasNext()) {
                bh.consume(it.next());
            }
        }
    }

    /**
     * {@code remove} of one of the last hour's sessions of a random key, then its put back (so
     * the store keeps its size): two writes; every 1,000th write commits.
     */
    @Benchmark
    public void sessionRemovePut() {
        int i = picker.pick(n);
        int s = SESSIONS / 2 + picker.pick(SESSIONS / 2);
        long start = start(i, s);
        subject.store.remove(new Windowed<>(keys[i], new SessionWindow(start, start + LENGTH)));
        if (++offset % 1000 == 0) {
            subject.commit(offset);
        }
        put(i, s);
    }

    /** A put of one of the last hour's sessions of a random key; every 1,000th put also commits. */
    @Benchmark
    public void sessionPutCommit() {
        put(picker.pick(n), SESSIONS / 2 + picker.pick(SESSIONS / 2));
    }
}
