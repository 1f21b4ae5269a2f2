package dev.kstate.streams;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.WindowKeyQuery;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedBytesStore;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * kstate's window and session stores under Kafka Streams 4.4's StateStore contract: factory
 * validation and supplier properties as Kafka's {@code Stores}, commits with offsets and
 * position, read-committed views, restore committing each batch with its changelog offset,
 * reopen, closed-store and closed-iterator exceptions.
 */
public class WindowStoreContractTest {
    private static final TopicPartition CHANGELOG = new TopicPartition("app-w-changelog", 0);
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("window-contract");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private static Bytes b(String s) {
        return Bytes.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] ts(long timestamp, String value) {
        byte[] v = value.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + v.length).putLong(timestamp).put(v).array();
    }

    private static String outcome(Callable<?> call) {
        try {
            Object r = call.call();
            return "ok " + r.getClass().getSimpleName().replaceAll("^Kstate|^RocksDb|^InMemory", "");
        } catch (Exception e) {
            return e.getClass().getName() + ": " + e.getMessage();
        }
    }

    /** The factories refuse exactly what Kafka's Stores refuses, with the same exceptions and messages. */
    @Test
    public void factoriesValidateAsKafkasStores() {
        Duration[][] cases = {
            {Duration.ofMinutes(1), Duration.ofSeconds(10)},
            {Duration.ofMinutes(-1), Duration.ofSeconds(10)},
            {Duration.ofMinutes(1), Duration.ofSeconds(-10)},
            {Duration.ofSeconds(5), Duration.ofSeconds(10)},
            {Duration.ofSeconds(10), Duration.ofSeconds(10)},
            {null, Duration.ofSeconds(10)},
            {Duration.ofMinutes(1), null},
            {Duration.ofSeconds(Long.MAX_VALUE), Duration.ofSeconds(1)},
        };
        for (Duration[] c : cases) {
            for (boolean dups : new boolean[] {false, true}) {
                String what = c[0] + "/" + c[1] + "/" + dups;
                assertEquals(what, outcome(() -> Stores.persistentTimestampedWindowStore("w", c[0], c[1], dups)),
                    outcome(() -> KstateStores.persistentTimestampedWindowStore("w", c[0], c[1], dups)));
                assertEquals(what, outcome(() -> Stores.persistentWindowStore("w", c[0], c[1], dups)),
                    outcome(() -> KstateStores.persistentWindowStore("w", c[0], c[1], dups)));
                assertEquals(what, outcome(() -> Stores.inMemoryWindowStore("w", c[0], c[1], dups)),
                    outcome(() -> KstateStores.inMemoryWindowStore("w", c[0], c[1], dups)));
            }
            assertEquals(outcome(() -> Stores.persistentSessionStore("s", c[0])),
                outcome(() -> KstateStores.persistentSessionStore("s", c[0])));
            assertEquals(outcome(() -> Stores.inMemorySessionStore("s", c[0])),
                outcome(() -> KstateStores.inMemorySessionStore("s", c[0])));
        }
        assertEquals(outcome(() -> Stores.persistentSessionStore(null, Duration.ZERO)),
            outcome(() -> KstateStores.persistentSessionStore(null, Duration.ZERO)));
        assertEquals(outcome(() -> Stores.persistentTimestampedWindowStore(null, Duration.ZERO, Duration.ZERO, false)),
            outcome(() -> KstateStores.persistentTimestampedWindowStore(null, Duration.ZERO, Duration.ZERO, false)));
    }

    /** Supplier properties as Kafka's RocksDB suppliers (the caching layer depends on the segment interval). */
    @Test
    public void suppliersReportKafkasSegmentIntervalAndTheirScope() {
        for (long minutes : new long[] {0, 1, 2, 3, 10, 60 * 24}) {
            Duration retention = Duration.ofMinutes(minutes);
            WindowBytesStoreSupplier kafka = Stores.persistentTimestampedWindowStore("w", retention, Duration.ZERO, true);
            WindowBytesStoreSupplier kstate = KstateStores.persistentTimestampedWindowStore("w", retention, Duration.ZERO, true);
            assertEquals(kafka.segmentIntervalMs(), kstate.segmentIntervalMs());
            assertEquals(kafka.retentionPeriod(), kstate.retentionPeriod());
            assertEquals(kafka.windowSize(), kstate.windowSize());
            assertEquals(kafka.retainDuplicates(), kstate.retainDuplicates());
            SessionBytesStoreSupplier ks = Stores.persistentSessionStore("s", retention);
            SessionBytesStoreSupplier ss = KstateStores.persistentSessionStore("s", retention);
            assertEquals(ks.segmentIntervalMs(), ss.segmentIntervalMs());
            assertEquals(ks.retentionPeriod(), ss.retentionPeriod());
        }
        WindowBytesStoreSupplier ts = KstateStores.persistentTimestampedWindowStore("w", Duration.ofHours(1), Duration.ofMinutes(1), false);
        assertEquals("kstate-rocksdb-window", ts.metricsScope());
        assertTrue(ts.get() instanceof TimestampedBytesStore);
        assertTrue(ts.get().persistent());
        assertFalse(KstateStores.persistentWindowStore("w", Duration.ofHours(1), Duration.ofMinutes(1), false).get()
            instanceof TimestampedBytesStore);
        WindowBytesStoreSupplier mem = KstateStores.inMemoryWindowStore("w", Duration.ofHours(1), Duration.ofMinutes(1), false);
        assertEquals("kstate-memory-window", mem.metricsScope());
        // the memory engine answers in Kafka's in-memory order, which the caching layer merges at 1 ms
        assertEquals(Stores.inMemoryWindowStore("w", Duration.ofHours(1), Duration.ofMinutes(1), false).segmentIntervalMs(),
            mem.segmentIntervalMs());
        assertFalse(mem.get().persistent());
        assertEquals("kstate-rocksdb-session", KstateStores.persistentSessionStore("s", Duration.ofHours(1)).metricsScope());
        assertEquals("kstate-memory-session", KstateStores.inMemorySessionStore("s", Duration.ofHours(1)).metricsScope());
        // persistent to Kafka 4.4, which then walks its record cache segment by segment (KstateSessionStore#persistent)
        assertTrue(KstateStores.inMemorySessionStore("s", Duration.ofHours(1)).get().persistent());
    }

    private static List<String> windows(KeyValueIterator<Windowed<Bytes>, byte[]> it) {
        List<String> out = new ArrayList<>();
        try (KeyValueIterator<Windowed<Bytes>, byte[]> i = it) {
            while (i.hasNext()) {
                KeyValue<Windowed<Bytes>, byte[]> kv = i.next();
                out.add(new String(kv.key.key().get(), StandardCharsets.UTF_8) + "@" + kv.key.window().start() + "="
                    + new String(kv.value, 8, kv.value.length - 8, StandardCharsets.UTF_8));
            }
        }
        return out;
    }

    /**
     * Writes are a transaction: read-committed views see the last commit only, commit(Map)
     * stores offsets and position atomically, uncommitted bytes drop after a commit, close
     * without commit discards, a reopened store reports the committed offset and position.
     */
    @Test
    @SuppressWarnings("deprecation") // managesOffsets() is deprecated in 4.4 and still consulted
    public void commitSequenceWithOffsetsPositionAndIsolation() {
        WindowBytesStoreSupplier supplier = KstateStores.persistentTimestampedWindowStore("w", Duration.ofHours(1),
            Duration.ofMinutes(1), false);
        WindowStore<Bytes, byte[]> store = supplier.get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(TestSupport.props("app", dir), dir);
        store.init(ctx, store);
        assertTrue(((org.apache.kafka.streams.processor.StateStore) store).managesOffsets());
        assertNull(store.committedOffset(CHANGELOG));
        ctx.setRecordMetadata("in", 0, 41);
        store.put(b("a"), ts(5, "one"), 60_000);
        store.put(b("b"), ts(6, "two"), 120_000);
        assertTrue(store.approximateNumUncommittedBytes() > 0);
        assertEquals("[]", windows(store.readOnly(IsolationLevel.READ_COMMITTED).fetchAll(java.time.Instant.EPOCH,
            java.time.Instant.ofEpochMilli(Long.MAX_VALUE))).toString());
        assertEquals("[a@60000=one, b@120000=two]", windows(store.readOnly(IsolationLevel.READ_UNCOMMITTED).all()).toString());
        store.commit(Collections.singletonMap(CHANGELOG, 7L));
        assertEquals(0, store.approximateNumUncommittedBytes());
        assertEquals(Long.valueOf(7), store.committedOffset(CHANGELOG));
        ctx.setRecordMetadata("in", 0, 42);
        store.put(b("a"), ts(9, "uncommitted"), 60_000);
        assertArrayEquals(ts(5, "one"), store.readOnly(IsolationLevel.READ_COMMITTED).fetch(b("a"), 60_000));
        assertArrayEquals(ts(9, "uncommitted"), store.fetch(b("a"), 60_000));
        // IQv2 positions: the committed position for READ_COMMITTED, the current one otherwise
        QueryResult<WindowStoreIterator<byte[]>> rc = store.query(WindowKeyQuery.withKeyAndWindowStartRange(b("a"),
            java.time.Instant.EPOCH, java.time.Instant.ofEpochMilli(600_000)), PositionBound.unbounded(),
            new QueryConfig(false, IsolationLevel.READ_COMMITTED));
        assertEquals(Long.valueOf(41), rc.getPosition().getPartitionPositions("in").get(0));
        try (WindowStoreIterator<byte[]> it = rc.getResult()) {
            assertArrayEquals(ts(5, "one"), it.next().value);
            assertFalse(it.hasNext());
        }
        QueryResult<WindowStoreIterator<byte[]>> ru = store.query(WindowKeyQuery.withKeyAndWindowStartRange(b("a"),
            java.time.Instant.EPOCH, java.time.Instant.ofEpochMilli(600_000)), PositionBound.unbounded(),
            new QueryConfig(false, IsolationLevel.READ_UNCOMMITTED));
        assertEquals(Long.valueOf(42), ru.getPosition().getPartitionPositions("in").get(0));
        ru.getResult().close();
        store.close();
        store.close(); // idempotent

        WindowStore<Bytes, byte[]> reopened = supplier.get();
        reopened.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), reopened);
        assertEquals(Long.valueOf(7), reopened.committedOffset(CHANGELOG));
        assertEquals("[a@60000=one, b@120000=two]", windows(reopened.all()).toString());
        assertEquals(Long.valueOf(41), reopened.getPosition().getPartitionPositions("in").get(0));
        // an empty map removes every committed offset, as Kafka's contract says
        reopened.commit(Collections.emptyMap());
        assertNull(reopened.committedOffset(CHANGELOG));
        reopened.close();
    }

    /**
     * Restore: changelog records keyed by Kafka's store keys, in batches, each batch committed
     * with its own changelog offset; retention applies to restored data as to live writes.
     */
    @Test
    public void restoreCommitsEachBatchWithItsChangelogOffset() {
        WindowBytesStoreSupplier supplier = KstateStores.persistentTimestampedWindowStore("w", Duration.ofMinutes(10),
            Duration.ofMinutes(1), true);
        WindowStore<Bytes, byte[]> source = KstateStores.inMemoryWindowStore("src", Duration.ofMinutes(10),
            Duration.ofMinutes(1), true).get();
        source.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), source);
        WindowStore<Bytes, byte[]> store = supplier.get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(TestSupport.props("app", dir), dir);
        store.init(ctx, store);
        RecordBatchingStateRestoreCallback callback = (RecordBatchingStateRestoreCallback) ctx.restoreCallback;
        Random rnd = new Random(11);
        List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
        int seq = 0;
        long time = 0;
        for (int offset = 0; offset < 20_000; offset++) {
            time += rnd.nextInt(400);
            long start = Math.max(0, time - rnd.nextInt(120_000)) / 60_000 * 60_000;
            String key = "k" + rnd.nextInt(50);
            byte[] value = ts(time, "v" + offset);
            source.put(b(key), value, start); // the same writes on a live store: the model
            seq = (seq + 1) & 0x7FFFFFFF;
            byte[] storeKey = ByteBuffer.allocate(key.length() + 12).put(key.getBytes(StandardCharsets.UTF_8))
                .putLong(start).putInt(seq).array();
            batch.add(new ConsumerRecord<>(CHANGELOG.topic(), CHANGELOG.partition(), offset, storeKey, value));
            if (batch.size() == 1000) {
                callback.restoreBatch(batch);
                batch = new ArrayList<>();
                assertEquals(Long.valueOf(offset), store.committedOffset(CHANGELOG));
                assertEquals(0, store.approximateNumUncommittedBytes());
            }
        }
        callback.restoreBatch(batch);
        assertEquals(Long.valueOf(19_999), store.committedOffset(CHANGELOG));
        List<String> expected = windows(source.all());
        assertTrue(expected.size() > 1000);
        assertEquals(expected, windows(store.readOnly(IsolationLevel.READ_COMMITTED).all()));
        store.close();
        WindowStore<Bytes, byte[]> reopened = supplier.get();
        reopened.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), reopened);
        assertEquals(expected, windows(reopened.all()));
        reopened.close();
        source.close();
    }

    private static void expectClosed(String what, Runnable call) {
        try {
            call.run();
            fail(what + " on a closed store");
        } catch (InvalidStateStoreException e) {
            assertTrue(what + ": " + e, e instanceof KstateException);
        }
    }

    /**
     * A view's own {@code readOnly(level)} (what Kafka's wrappers call on the view they hold) is
     * the store's view at that level, for window and session stores: committed data through a
     * READ_UNCOMMITTED view's READ_COMMITTED one, and the other way round.
     */
    @Test
    public void viewsAnswerReadOnlyWithTheStoresViewAtThatLevel() {
        WindowStore<Bytes, byte[]> w = KstateStores.persistentTimestampedWindowStore("w", Duration.ofHours(1),
            Duration.ofMinutes(1), false).get();
        w.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), w);
        SessionStore<Bytes, byte[]> s = KstateStores.persistentSessionStore("s", Duration.ofHours(1)).get();
        s.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), s);
        Windowed<Bytes> session = new Windowed<>(b("a"), new SessionWindow(0, 10));
        w.put(b("a"), ts(1, "committed"), 60_000);
        s.put(session, new byte[] {1});
        w.commit(Collections.singletonMap(CHANGELOG, 1L));
        s.commit(Collections.emptyMap());
        w.put(b("a"), ts(2, "pending"), 60_000);
        s.put(session, new byte[] {2});
        IsolationLevel rc = IsolationLevel.READ_COMMITTED;
        IsolationLevel ru = IsolationLevel.READ_UNCOMMITTED;
        assertArrayEquals(ts(1, "committed"), w.readOnly(ru).readOnly(rc).fetch(b("a"), 60_000));
        assertArrayEquals(ts(2, "pending"), w.readOnly(rc).readOnly(ru).fetch(b("a"), 60_000));
        assertArrayEquals(new byte[] {1}, s.readOnly(ru).readOnly(rc).fetchSession(b("a"), 0, 10));
        assertArrayEquals(new byte[] {2}, s.readOnly(rc).readOnly(ru).fetchSession(b("a"), 0, 10));
        w.close();
        s.close();
    }

    /** Every operation of a closed store and of a closed iterator throws InvalidStateStoreException. */
    @Test
    public void closedStoresAndIteratorsThrowInvalidStateStoreException() {
        WindowStore<Bytes, byte[]> w = KstateStores.persistentTimestampedWindowStore("w", Duration.ofHours(1),
            Duration.ofMinutes(1), false).get();
        w.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), w);
        w.put(b("a"), ts(1, "x"), 0);
        KeyValueIterator<Windowed<Bytes>, byte[]> open = w.all();
        SessionStore<Bytes, byte[]> s = KstateStores.persistentSessionStore("s", Duration.ofHours(1)).get();
        s.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), s);
        s.put(new Windowed<>(b("a"), new SessionWindow(0, 10)), new byte[] {1});
        KeyValueIterator<Windowed<Bytes>, byte[]> openSessions = s.fetch(b("a"));
        w.close();
        s.close();
        assertFalse(w.isOpen());
        // closed with their store: exhausted, as Kafka's window and session iterators (StoreParityTest)
        assertFalse("iterator", open.hasNext());
        assertFalse("session iterator", openSessions.hasNext());
        open.close();
        assertFalse("iterator closed again by its caller", open.hasNext());
        expectClosed("put", () -> w.put(b("a"), ts(1, "x"), 0));
        expectClosed("fetch", () -> w.fetch(b("a"), 0));
        expectClosed("fetch range", () -> w.fetch(b("a"), 0L, 10L));
        expectClosed("fetchAll", () -> w.fetchAll(0L, 10L));
        expectClosed("readOnly", () -> w.readOnly(IsolationLevel.READ_COMMITTED).fetch(b("a"), 0));
        expectClosed("commit", () -> w.commit(Collections.emptyMap()));
        expectClosed("committedOffset", () -> w.committedOffset(CHANGELOG));
        expectClosed("session put", () -> s.put(new Windowed<>(b("a"), new SessionWindow(0, 10)), new byte[] {1}));
        expectClosed("findSessions", () -> s.findSessions(b("a"), 0, 10));
        expectClosed("fetchSession", () -> s.fetchSession(b("a"), 0, 10));
        expectClosed("session remove", () -> s.remove(new Windowed<>(b("a"), new SessionWindow(0, 10))));
        assertEquals(0, w.approximateNumUncommittedBytes());
        w.close();
        s.close();
    }
}
