package dev.kstate.streams;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.DslStoreFormat;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.state.DslKeyValueParams;
import org.apache.kafka.streams.state.DslSessionParams;
import org.apache.kafka.streams.state.DslWindowParams;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.TimestampedBytesStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** Interactive queries racing the writer, flush() for 4.0-4.2, and the DSL suppliers. */
public class ConcurrencyAndSuppliersTest {
    private static final TopicPartition CHANGELOG = new TopicPartition("app-conc-changelog", 0);
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("conc");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private KeyValueStore<Bytes, byte[]> open(KstateKeyValueBytesStoreSupplier supplier) {
        KeyValueStore<Bytes, byte[]> store = supplier.get();
        store.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), store);
        return store;
    }

    private static Bytes key(int i) {
        return Bytes.wrap(String.format("key-%03d", i).getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] value(long batch) {
        return ByteBuffer.allocate(16).putLong(batch).putLong(batch).array();
    }

    /**
     * The writer rewrites every key with its batch number, committing each batch; readers on
     * other threads must always see one whole committed batch, never a mix or an uncommitted one.
     */
    @Test
    public void interactiveQueriesSeeWholeCommitsWhileTheWriterWrites() throws Exception {
        KeyValueStore<Bytes, byte[]> store = open(KstateStores.persistentTimestampedKeyValueStore("race"));
        final int keys = 200;
        for (int i = 0; i < keys; i++) {
            store.put(key(i), value(0));
        }
        store.commit(Collections.singletonMap(CHANGELOG, 0L));
        // Interactive queries ask for committed data explicitly, as Kafka's IQv1 does.
        ReadOnlyKeyValueStore<Bytes, byte[]> committed = store.readOnly(IsolationLevel.READ_COMMITTED);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<String> problem = new AtomicReference<>();
        AtomicInteger snapshots = new AtomicInteger();
        AtomicInteger committedBatch = new AtomicInteger();
        Thread[] readers = new Thread[2];
        for (int r = 0; r < readers.length; r++) {
            readers[r] = new Thread(() -> {
                while (!stop.get() && problem.get() == null) {
                    int floor = committedBatch.get();
                    List<KeyValue<Bytes, byte[]>> all = TestSupport.drain(committed.all());
                    if (all.size() != keys) {
                        problem.set("snapshot of " + all.size() + " entries");
                        return;
                    }
                    long batch = ByteBuffer.wrap(all.get(0).value).getLong();
                    for (KeyValue<Bytes, byte[]> kv : all) {
                        if (ByteBuffer.wrap(kv.value).getLong() != batch) {
                            problem.set("mixed snapshot: batches " + batch + " and " + ByteBuffer.wrap(kv.value).getLong());
                            return;
                        }
                    }
                    if (batch < floor) {
                        problem.set("read batch " + batch + " after batch " + floor + " was committed");
                        return;
                    }
                    byte[] one = committed.get(key(7));
                    if (ByteBuffer.wrap(one).getLong() < batch) {
                        problem.set("point read went back in time");
                        return;
                    }
                    snapshots.incrementAndGet();
                }
            });
            readers[r].start();
        }
        long deadline = System.currentTimeMillis() + 3000;
        int batch = 0;
        while (System.currentTimeMillis() < deadline && problem.get() == null) {
            batch++;
            for (int i = 0; i < keys; i++) {
                store.put(key(i), value(batch));
                if (i == keys / 2) {
                    Thread.yield(); // let readers look at a half-written (uncommitted) batch
                }
            }
            assertArrayEquals("the writer reads its own writes", value(batch), store.get(key(keys - 1)));
            store.commit(Collections.singletonMap(CHANGELOG, (long) batch));
            committedBatch.set(batch);
        }
        stop.set(true);
        for (Thread t : readers) {
            t.join();
        }
        assertNull(problem.get(), problem.get());
        System.out.println(batch + " commits raced by " + snapshots.get() + " consistent read-committed snapshots");
        assertTrue(snapshots.get() > 10);
        store.close();
    }

    @Test
    @SuppressWarnings("deprecation")
    public void flushCommitsDataAndKeepsOffsets() {
        KstateKeyValueBytesStoreSupplier supplier = KstateStores.persistentKeyValueStore("flush");
        KeyValueStore<Bytes, byte[]> store = open(supplier);
        store.put(key(1), new byte[] {1});
        store.commit(Collections.singletonMap(CHANGELOG, 10L));
        store.put(key(2), new byte[] {2});
        assertTrue(store.approximateNumUncommittedBytes() > 0);
        store.flush();
        assertEquals(0L, store.approximateNumUncommittedBytes());
        assertEquals(Long.valueOf(10L), store.committedOffset(CHANGELOG));
        store.close();
        KeyValueStore<Bytes, byte[]> again = open(supplier);
        assertArrayEquals(new byte[] {2}, again.get(key(2)));
        assertEquals(Long.valueOf(10L), again.committedOffset(CHANGELOG));
        again.close();
    }

    @Test
    public void dslSuppliersMakeKstateStoresAndDelegateHeadersOnWindowClose() {
        KstateDslStoreSuppliers suppliers = new KstateDslStoreSuppliers();
        Map<String, Object> config = new HashMap<>();
        config.put(KstateStoreOptions.ENGINE_CONFIG, "memory");
        suppliers.configure(config);
        KeyValueBytesStoreSupplier ts = suppliers.keyValueStore(new DslKeyValueParams("a", DslStoreFormat.TIMESTAMPED));
        assertTrue(ts instanceof KstateKeyValueBytesStoreSupplier);
        assertTrue(ts.get() instanceof TimestampedBytesStore);
        assertFalse("memory engine from kstate.engine", ts.get().persistent());
        KeyValueBytesStoreSupplier plain = suppliers.keyValueStore(new DslKeyValueParams("b", DslStoreFormat.PLAIN));
        assertTrue(plain instanceof KstateKeyValueBytesStoreSupplier);
        assertFalse(plain.get() instanceof TimestampedBytesStore);
        KeyValueBytesStoreSupplier headers = suppliers.keyValueStore(new DslKeyValueParams("c", DslStoreFormat.HEADERS));
        assertTrue("HEADERS format is a kstate store", headers instanceof KstateKeyValueBytesStoreSupplier);
        assertTrue("the DSL builds headers stores for this marker",
            headers instanceof org.apache.kafka.streams.state.HeadersBytesStoreSupplier);
        assertTrue(headers.get() instanceof org.apache.kafka.streams.state.HeadersBytesStore);
        assertFalse("not a TimestampedBytesStore, as Kafka's headers store", headers.get() instanceof TimestampedBytesStore);
        // window and session stores: kstate's, timestamped or plain as asked, on the configured engine
        WindowBytesStoreSupplier w = suppliers.windowStore(new DslWindowParams("w", Duration.ofHours(1), Duration.ofMinutes(1),
            false, EmitStrategy.onWindowUpdate(), false, DslStoreFormat.TIMESTAMPED));
        assertTrue(w instanceof KstateWindowBytesStoreSupplier);
        assertTrue(w.get() instanceof TimestampedBytesStore);
        assertFalse(w.get().persistent());
        assertEquals(Duration.ofHours(1).toMillis(), w.retentionPeriod());
        assertEquals(Duration.ofMinutes(1).toMillis(), w.windowSize());
        WindowBytesStoreSupplier join = suppliers.windowStore(new DslWindowParams("j", Duration.ofHours(1),
            Duration.ofMinutes(1), true, EmitStrategy.onWindowUpdate(), false, DslStoreFormat.PLAIN));
        assertTrue(join instanceof KstateWindowBytesStoreSupplier);
        assertFalse(join.get() instanceof TimestampedBytesStore);
        assertTrue(join.retainDuplicates());
        SessionBytesStoreSupplier s = suppliers.sessionStore(new DslSessionParams("s", Duration.ofHours(1),
            EmitStrategy.onWindowUpdate(), DslStoreFormat.TIMESTAMPED));
        assertTrue(s instanceof KstateSessionBytesStoreSupplier);
        assertEquals(Duration.ofHours(1).toMillis(), s.retentionPeriod());
        // the headers format: kstate's headers stores, behind the marker the DSL builds headers stores for
        CapturedLogs.clear();
        WindowBytesStoreSupplier hw = suppliers.windowStore(new DslWindowParams("hw", Duration.ofHours(1),
            Duration.ofMinutes(1), false, EmitStrategy.onWindowUpdate(), false, DslStoreFormat.HEADERS));
        assertTrue(hw instanceof KstateWindowBytesStoreSupplier);
        assertTrue(hw instanceof org.apache.kafka.streams.state.HeadersBytesStoreSupplier);
        assertTrue(hw.get() instanceof org.apache.kafka.streams.state.HeadersBytesStore);
        assertTrue("as Kafka's RocksDBTimestampedWindowStoreWithHeaders", hw.get() instanceof TimestampedBytesStore);
        SessionBytesStoreSupplier hs = suppliers.sessionStore(new DslSessionParams("hs", Duration.ofHours(1),
            EmitStrategy.onWindowUpdate(), DslStoreFormat.HEADERS));
        assertTrue(hs instanceof KstateSessionBytesStoreSupplier);
        assertTrue(hs instanceof org.apache.kafka.streams.state.HeadersBytesStoreSupplier);
        assertTrue(hs.get() instanceof org.apache.kafka.streams.state.HeadersBytesStore);
        assertFalse(s instanceof org.apache.kafka.streams.state.HeadersBytesStoreSupplier);
        assertFalse(s.get() instanceof org.apache.kafka.streams.state.HeadersBytesStore);
        // the time-ordered stores of emit-on-window-close are kstate's
        WindowBytesStoreSupplier timeOrdered = suppliers.windowStore(new DslWindowParams("w", Duration.ofHours(1),
            Duration.ofMinutes(1), false, EmitStrategy.onWindowClose(), false, DslStoreFormat.TIMESTAMPED));
        assertTrue(timeOrdered instanceof KstateWindowBytesStoreSupplier);
        assertTrue(timeOrdered.get() instanceof KstateTimeOrderedWindowStore);
        SessionBytesStoreSupplier timeOrderedSessions = suppliers.sessionStore(new DslSessionParams("s",
            Duration.ofHours(1), EmitStrategy.onWindowClose(), DslStoreFormat.TIMESTAMPED));
        assertTrue(timeOrderedSessions instanceof KstateSessionBytesStoreSupplier);
        assertTrue(((KstateSessionStore) timeOrderedSessions.get()).timeOrdered());
        // emit-on-window-close in the headers format, as Kafka 4.4 serves it: windows a HeadersBytesStore
        // (time-ordered, key-indexed) over Kafka's RocksDBTimeOrderedWindowStoreWithHeaders's marker,
        // sessions a plain time-ordered store (Kafka's builder adapts it with SessionToHeadersStoreAdapter)
        WindowBytesStoreSupplier hw2 = suppliers.windowStore(new DslWindowParams("hw2", Duration.ofHours(1),
            Duration.ofMinutes(1), false, EmitStrategy.onWindowClose(), false, DslStoreFormat.HEADERS));
        assertTrue(hw2 instanceof KstateWindowBytesStoreSupplier);
        assertTrue(hw2 instanceof org.apache.kafka.streams.state.HeadersBytesStoreSupplier);
        assertTrue(hw2.toString(), hw2.toString().contains("keyIndex=true"));
        org.apache.kafka.streams.processor.StateStore hw2Store = hw2.get();
        assertTrue(hw2Store instanceof KstateTimeOrderedHeadersWindowStore);
        assertTrue(hw2Store instanceof org.apache.kafka.streams.state.HeadersBytesStore);
        assertTrue(hw2Store instanceof TimestampedBytesStore);
        assertEquals("RocksDBTimeOrderedWindowStoreWithHeaders",
            ((KstateTimeOrderedWindowStore) hw2Store).wrapped().getClass().getSimpleName());
        assertTrue(((KstateTimeOrderedWindowStore) hw2Store).kstateStore().timeOrdered());
        SessionBytesStoreSupplier hs2 = suppliers.sessionStore(new DslSessionParams("hs2", Duration.ofHours(1),
            EmitStrategy.onWindowClose(), DslStoreFormat.HEADERS));
        assertTrue(hs2 instanceof KstateSessionBytesStoreSupplier);
        assertTrue("the DSL then uses the headers builder", hs2 instanceof org.apache.kafka.streams.state.HeadersBytesStoreSupplier);
        assertFalse(hs2.get() instanceof org.apache.kafka.streams.state.HeadersBytesStore);
        assertTrue(((KstateSessionStore) hs2.get()).timeOrdered());
        List<String> warns = CapturedLogs.messages(org.slf4j.event.Level.WARN);
        assertEquals(warns.toString(), 0, CapturedLogs.count(org.slf4j.event.Level.WARN, "which kstate does not serve"));
        assertEquals("no WARN for the stores kstate serves", 0,
            CapturedLogs.count(org.slf4j.event.Level.WARN, "The window store j "));
    }
}
