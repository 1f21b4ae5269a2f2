package dev.kstate.streams;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.query.KeyQuery;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.RangeQuery;
import org.apache.kafka.streams.query.TimestampedKeyQuery;
import org.apache.kafka.streams.query.TimestampedRangeQuery;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.TimestampedBytesStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** The Kafka Streams 4.4 StateStore contract, store by store. */
public class StoreContractTest {
    private static final TopicPartition CHANGELOG = new TopicPartition("app-store-changelog", 0);
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("contract");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    static Bytes b(String s) {
        return Bytes.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    static byte[] ts(long timestamp, String value) {
        byte[] v = value.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[8 + v.length];
        for (int i = 0; i < 8; i++) {
            out[i] = (byte) (timestamp >>> (56 - 8 * i));
        }
        System.arraycopy(v, 0, out, 8, v.length);
        return out;
    }

    private static Map<String, Object> toMap(Properties props) {
        Map<String, Object> m = new HashMap<>();
        for (String k : props.stringPropertyNames()) {
            m.put(k, props.getProperty(k));
        }
        return m;
    }

    private KeyValueStore<Bytes, byte[]> open(KstateKeyValueBytesStoreSupplier supplier, Properties props) {
        KeyValueStore<Bytes, byte[]> store = supplier.get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props, dir);
        store.init(ctx, store);
        return store;
    }

    private KeyValueStore<Bytes, byte[]> open(KstateKeyValueBytesStoreSupplier supplier) {
        return open(supplier, TestSupport.props("app", dir));
    }

    @Test
    public void suppliersBuildTheRightKinds() {
        assertTrue(KstateStores.persistentTimestampedKeyValueStore("a").get() instanceof TimestampedBytesStore);
        assertTrue(KstateStores.inMemoryTimestampedKeyValueStore("a").get() instanceof TimestampedBytesStore);
        assertFalse(KstateStores.persistentKeyValueStore("a").get() instanceof TimestampedBytesStore);
        assertFalse(KstateStores.inMemoryKeyValueStore("a").get() instanceof TimestampedBytesStore);
        assertTrue(KstateStores.persistentKeyValueStore("a").get().persistent());
        assertFalse(KstateStores.inMemoryKeyValueStore("a").get().persistent());
        assertEquals("a", KstateStores.persistentKeyValueStore("a").name());
    }

    @Test
    @SuppressWarnings("deprecation")
    public void writesCommitsAndReopens() {
        KeyValueStore<Bytes, byte[]> store = open(KstateStores.persistentTimestampedKeyValueStore("kv"));
        assertTrue(new File(dir, "kv").isDirectory());
        assertTrue(store.managesOffsets());
        assertTrue(store.isOpen());
        assertNull(store.committedOffset(CHANGELOG));
        store.put(b("a"), ts(10, "1"));
        store.put(b("b"), ts(20, "2"));
        store.putAll(Arrays.asList(KeyValue.pair(b("c"), ts(30, "3")), KeyValue.pair(b("d"), ts(40, "4")),
            KeyValue.pair(b("b"), null)));
        assertNull(store.get(b("b")));
        assertArrayEquals(ts(30, "3"), store.get(b("c")));
        assertArrayEquals(ts(10, "1"), store.putIfAbsent(b("a"), ts(99, "x")));
        assertNull(store.putIfAbsent(b("e"), ts(50, "5")));
        assertArrayEquals(ts(50, "5"), store.delete(b("e")));
        assertTrue(store.approximateNumUncommittedBytes() > 0);
        store.commit(Collections.singletonMap(CHANGELOG, 41L));
        assertEquals(Long.valueOf(41L), store.committedOffset(CHANGELOG));
        store.put(b("z"), ts(1, "uncommitted"));
        store.close();
        store.close(); // idempotent
        assertFalse(store.isOpen());

        KeyValueStore<Bytes, byte[]> again = open(KstateStores.persistentTimestampedKeyValueStore("kv"));
        assertEquals(Long.valueOf(41L), again.committedOffset(CHANGELOG));
        assertNull("uncommitted write was discarded", again.get(b("z")));
        List<KeyValue<Bytes, byte[]>> all = TestSupport.drain(again.all());
        assertEquals(3, all.size());
        assertEquals(b("a"), all.get(0).key);
        assertEquals(b("c"), all.get(1).key);
        assertEquals(b("d"), all.get(2).key);
        assertArrayEquals(ts(40, "4"), all.get(2).value);
        List<KeyValue<Bytes, byte[]>> rev = TestSupport.drain(again.reverseRange(b("a"), b("c")));
        assertEquals(2, rev.size());
        assertEquals(b("c"), rev.get(0).key);
        // Kafka semantics of commit(Map): null removes, empty map removes all
        Map<TopicPartition, Long> removal = new HashMap<>();
        removal.put(CHANGELOG, null);
        again.commit(removal);
        assertNull(again.committedOffset(CHANGELOG));
        again.commit(Collections.singletonMap(CHANGELOG, -4L));
        assertEquals(Long.valueOf(-4L), again.committedOffset(CHANGELOG));
        again.commit(Collections.emptyMap());
        assertNull(again.committedOffset(CHANGELOG));
        again.close();
    }

    @Test
    public void largeRangeScansBatchAndPrefixScanWorks() {
        KeyValueStore<Bytes, byte[]> store = open(KstateStores.persistentKeyValueStore("plain"));
        for (int i = 0; i < 5000; i++) {
            store.put(b(String.format("key-%05d", i)), ("v" + i).getBytes(StandardCharsets.UTF_8));
        }
        store.put(b("other"), new byte[0]);
        assertEquals(5001, TestSupport.drain(store.all()).size());
        List<KeyValue<Bytes, byte[]>> desc = TestSupport.drain(store.reverseAll());
        assertEquals(b("other"), desc.get(0).key);
        assertEquals(b("key-00000"), desc.get(5000).key);
        assertEquals(1000, TestSupport.drain(store.prefixScan("key-01", new StringSerializer())).size());
        assertEquals(0, TestSupport.drain(store.range(b("z"), b("a"))).size());
        assertEquals(11, TestSupport.drain(store.range(b("key-00100"), b("key-00110"))).size());
        assertEquals(5001, TestSupport.drain(store.range(null, null)).size());
        try (KeyValueIterator<Bytes, byte[]> it = store.all()) {
            assertEquals(b("key-00000"), it.peekNextKey());
            assertEquals(b("key-00000"), it.next().key);
        }
        assertEquals(0, ((KstateKeyValueStore) store).openIterators());
        assertArrayEquals(new byte[0], store.get(b("other")));
        store.close();
    }

    @Test
    public void inMemoryStoresHaveTheSameSemantics() {
        KeyValueStore<Bytes, byte[]> store = open(KstateStores.inMemoryTimestampedKeyValueStore("mem"));
        assertFalse(new File(dir, "mem").exists());
        store.put(b("a"), ts(1, "x"));
        store.commit(Collections.singletonMap(CHANGELOG, 7L));
        assertEquals(Long.valueOf(7L), store.committedOffset(CHANGELOG));
        assertArrayEquals(ts(1, "x"), store.get(b("a")));
        store.close();
    }

    @Test
    public void positionIsCommittedAtomicallyWithTheData() {
        KstateKeyValueBytesStoreSupplier supplier = KstateStores.persistentTimestampedKeyValueStore("pos");
        KeyValueStore<Bytes, byte[]> store = supplier.get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(TestSupport.props("app", dir), dir);
        store.init(ctx, store);
        ctx.setRecordMetadata("input", 0, 5);
        store.put(b("a"), ts(1, "x"));
        store.commit(Collections.singletonMap(CHANGELOG, 1L));
        ctx.setRecordMetadata("input", 0, 9);
        store.put(b("b"), ts(2, "y"));
        assertEquals(Long.valueOf(9L), store.getPosition().getPartitionPositions("input").get(0));
        store.close(); // the write at offset 9 was never committed
        KeyValueStore<Bytes, byte[]> again = supplier.get();
        again.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), again);
        assertEquals(Long.valueOf(5L), again.getPosition().getPartitionPositions("input").get(0));
        again.close();
    }

    @Test
    @SuppressWarnings("unchecked")
    public void interactiveQueriesHonourIsolationAndPositionBounds() throws Exception {
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(TestSupport.props("app", dir), dir);
        KeyValueStore<Bytes, byte[]> store = KstateStores.persistentTimestampedKeyValueStore("iq").get();
        store.init(ctx, store);
        ctx.setRecordMetadata("input", 0, 3);
        store.put(b("a"), ts(100, "committed"));
        store.commit(Collections.singletonMap(CHANGELOG, 1L));
        ctx.setRecordMetadata("input", 0, 4);
        store.put(b("a"), ts(200, "pending"));
        store.put(b("b"), ts(300, "pending"));

        // Plain reads are the writer's view, from any thread (as in Kafka's transactional stores).
        assertArrayEquals(ts(200, "pending"), store.get(b("a")));
        final KeyValueStore<Bytes, byte[]> s = store;
        AtomicReference<byte[]> seen = new AtomicReference<>();
        AtomicReference<Integer> count = new AtomicReference<>();
        AtomicReference<byte[]> seenCommitted = new AtomicReference<>();
        AtomicReference<Integer> countCommitted = new AtomicReference<>();
        Thread reader = new Thread(() -> {
            seen.set(s.get(b("a")));
            count.set(TestSupport.drain(s.all()).size());
            seenCommitted.set(s.readOnly(IsolationLevel.READ_COMMITTED).get(b("a")));
            countCommitted.set(TestSupport.drain(s.readOnly(IsolationLevel.READ_COMMITTED).all()).size());
        });
        reader.start();
        reader.join();
        assertArrayEquals(ts(200, "pending"), seen.get());
        assertEquals(Integer.valueOf(2), count.get());
        // Committed data only when asked for, through readOnly(READ_COMMITTED).
        assertArrayEquals(ts(100, "committed"), seenCommitted.get());
        assertEquals(Integer.valueOf(1), countCommitted.get());
        assertArrayEquals(ts(100, "committed"), store.readOnly(IsolationLevel.READ_COMMITTED).get(b("a")));
        assertArrayEquals(ts(200, "pending"), store.readOnly(IsolationLevel.READ_UNCOMMITTED).get(b("a")));
        // a view's own readOnly is the store's view at that level (Kafka's default would return the view itself)
        assertArrayEquals(ts(100, "committed"),
            store.readOnly(IsolationLevel.READ_UNCOMMITTED).readOnly(IsolationLevel.READ_COMMITTED).get(b("a")));
        assertArrayEquals(ts(200, "pending"),
            store.readOnly(IsolationLevel.READ_COMMITTED).readOnly(IsolationLevel.READ_UNCOMMITTED).get(b("a")));

        // IQv2
        QueryConfig committed = new QueryConfig(true, IsolationLevel.READ_COMMITTED);
        QueryConfig uncommitted = new QueryConfig(false, IsolationLevel.READ_UNCOMMITTED);
        QueryResult<byte[]> r = store.query(KeyQuery.<Bytes, byte[]>withKey(b("a")), PositionBound.unbounded(), committed);
        assertTrue(r.isSuccess());
        assertArrayEquals(ts(100, "committed"), r.getResult());
        assertFalse(r.getExecutionInfo().isEmpty());
        assertEquals(Long.valueOf(3L), r.getPosition().getPartitionPositions("input").get(0));
        r = store.query(KeyQuery.<Bytes, byte[]>withKey(b("a")), PositionBound.unbounded(), uncommitted);
        assertArrayEquals(ts(200, "pending"), r.getResult());
        QueryResult<ValueAndTimestamp<byte[]>> t = store.query(TimestampedKeyQuery.<Bytes, byte[]>withKey(b("a")),
            PositionBound.unbounded(), committed);
        assertEquals(100L, t.getResult().timestamp());
        assertArrayEquals("committed".getBytes(StandardCharsets.UTF_8), t.getResult().value());
        QueryResult<KeyValueIterator<Bytes, byte[]>> range = store.query(RangeQuery.<Bytes, byte[]>withNoBounds(),
            PositionBound.unbounded(), uncommitted);
        assertEquals(2, TestSupport.drain(range.getResult()).size());
        QueryResult<KeyValueIterator<Bytes, ValueAndTimestamp<byte[]>>> trange = store.query(
            TimestampedRangeQuery.<Bytes, byte[]>withNoBounds().withDescendingKeys(), PositionBound.unbounded(), uncommitted);
        try (KeyValueIterator<Bytes, ValueAndTimestamp<byte[]>> it = trange.getResult()) {
            KeyValue<Bytes, ValueAndTimestamp<byte[]>> first = it.next();
            assertEquals(b("b"), first.key);
            assertEquals(300L, first.value.timestamp());
        }
        // Position bounds: offset 4 is seen by the uncommitted view, not yet by the committed one.
        PositionBound at4 = PositionBound.at(Position.emptyPosition().withComponent("input", 0, 4L));
        assertTrue(store.query(KeyQuery.<Bytes, byte[]>withKey(b("a")), at4, uncommitted).isSuccess());
        QueryResult<byte[]> behind = store.query(KeyQuery.<Bytes, byte[]>withKey(b("a")), at4, committed);
        assertTrue(behind.isFailure());
        store.close();
    }

    @Test
    public void appWideOptionsAreRead() {
        Properties props = TestSupport.props("app", dir);
        props.put(KstateStoreOptions.MAX_UNCOMMITTED_BYTES_CONFIG, "4096");
        props.put(KstateStoreOptions.SYNC_ON_COMMIT_CONFIG, "true");
        props.put(KstateStoreOptions.BLOCK_CACHE_BYTES_CONFIG, String.valueOf(8 << 20));
        props.put(KstateStoreOptions.WRITE_BUFFER_BYTES_CONFIG, String.valueOf(4 << 20));
        KeyValueStore<Bytes, byte[]> store = open(KstateStores.persistentTimestampedKeyValueStore("opts"), props);
        // Far past 4 KiB uncommitted: the buffer spills, nothing is lost or committed early.
        for (int i = 0; i < 2000; i++) {
            store.put(b("k" + i), ts(i, "value-" + i));
        }
        assertNull(store.committedOffset(CHANGELOG));
        assertEquals(2000, TestSupport.drain(store.all()).size());
        store.commit(Collections.singletonMap(CHANGELOG, 1L));
        store.close();
        KeyValueStore<Bytes, byte[]> again = open(KstateStores.builder("opts").maxUncommittedBytes(1 << 20)
            .syncOnCommit(false).blockCacheBytes(1 << 20).writeBufferBytes(1 << 20).build());
        assertEquals(2000, TestSupport.drain(again.all()).size());
        again.close();
    }
}
