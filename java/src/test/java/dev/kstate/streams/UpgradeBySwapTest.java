package dev.kstate.streams;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link KstateKeyValueStore#upgradeBySwap(UpgradeProgress)} through JNI: a kstate plain store
 * reopened timestamped (upgrade mode) is upgraded by prepare and swap, checked against a model
 * of every entry, with its progress calls, its committed offset and {@code isUpgrading}, and
 * after reopening; a progress callback that throws, or calls back into the store, and the
 * refusals. (A Kafka {@code RocksDBStore} directory upgraded by swap inside a running topology:
 * {@code MigrationTest}.)
 */
public class UpgradeBySwapTest {
    private static final TopicPartition TP = new TopicPartition("swap-changelog", 0);
    private static final int ENTRIES = 4000;
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("swap");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private static Bytes key(int i) {
        return Bytes.wrap(String.format("key-%06d", i).getBytes(StandardCharsets.UTF_8));
    }

    /** 1000..3047 bytes, varied: the copy takes several 4 MiB batches. */
    private static byte[] plainValue(int i) {
        byte[] v = new byte[1000 + (i * 37) % 2048];
        for (int j = 0; j < v.length; j++) {
            v[j] = (byte) ('a' + (i + j) % 26);
        }
        return v;
    }

    private static byte[] timestamped(long ts, byte[] value) {
        return ByteBuffer.allocate(8 + value.length).putLong(ts).put(value).array();
    }

    private KstateKeyValueStore open(KstateKeyValueBytesStoreSupplier supplier) {
        KstateKeyValueStore store = (KstateKeyValueStore) supplier.get();
        store.init(new TestSupport.CapturingContext(TestSupport.props("swap-app", dir), dir), store);
        return store;
    }

    /** A kstate plain store of ENTRIES values committed at offset 41; its model as a timestamped store reads it. */
    private Map<Bytes, byte[]> plainStore() {
        Map<Bytes, byte[]> model = new TreeMap<>();
        KstateKeyValueStore plain = open(KstateStores.persistentKeyValueStore("s"));
        try {
            for (int i = 0; i < ENTRIES; i++) {
                plain.put(key(i), plainValue(i));
                model.put(key(i), timestamped(-1, plainValue(i)));
            }
            plain.commit(Collections.singletonMap(TP, 41L));
        } finally {
            plain.close();
        }
        return model;
    }

    private static void assertContents(Map<Bytes, byte[]> model, KstateKeyValueStore store) {
        List<KeyValue<Bytes, byte[]>> seen = new ArrayList<>();
        try (KeyValueIterator<Bytes, byte[]> it = store.all()) {
            it.forEachRemaining(seen::add);
        }
        assertEquals(model.size(), seen.size());
        int i = 0;
        for (Map.Entry<Bytes, byte[]> e : model.entrySet()) {
            KeyValue<Bytes, byte[]> kv = seen.get(i++);
            assertEquals(e.getKey(), kv.key);
            assertArrayEquals("value of " + e.getKey(), e.getValue(), kv.value);
        }
    }

    private static int code(RuntimeException e) {
        assertTrue("a kstate exception: " + e, e instanceof KstateException);
        return ((KstateException) e).errorCode();
    }

    @Test
    public void aPlainStoreOpenedTimestampedIsUpgradedBySwapAgainstAModel() {
        Map<Bytes, byte[]> model = plainStore();
        KstateKeyValueStore store = open(KstateStores.persistentTimestampedKeyValueStore("s"));
        try {
            assertTrue(store.isUpgrading());
            assertContents(model, store);
            // Lazily migrated and deleted keys before the swap, committed.
            store.put(key(1), timestamped(11, "early".getBytes(StandardCharsets.UTF_8)));
            model.put(key(1), timestamped(11, "early".getBytes(StandardCharsets.UTF_8)));
            store.delete(key(2));
            model.remove(key(2));
            // Refused with uncommitted writes: nothing changes.
            try {
                store.upgradeBySwap((d, t) -> fail("no progress when refused"));
                fail("refused with uncommitted writes");
            } catch (KstateProcessorStateException e) {
                assertEquals(KstateException.INVALID_ARGUMENT, code(e));
            }
            assertTrue(store.isUpgrading());
            store.commit(Collections.singletonMap(TP, 42L));
            assertEquals(0L, store.approximateNumUncommittedBytes());

            List<long[]> calls = new ArrayList<>();
            List<Integer> nested = new ArrayList<>();
            byte[] fromCallback = timestamped(77, "cb".getBytes(StandardCharsets.UTF_8));
            long copied = store.upgradeBySwap((done, total) -> {
                calls.add(new long[] {done, total});
                if (calls.size() == 1) {
                    // Into the same store from the callback: a write works, a nested swap is refused.
                    store.put(key(ENTRIES + 1), fromCallback);
                    try {
                        store.upgradeBySwap(null);
                    } catch (KstateProcessorStateException e) {
                        nested.add(code(e));
                    }
                }
            });
            assertEquals(ENTRIES - 1, copied);
            assertTrue("progress in batches: " + calls.size(), calls.size() > 1);
            for (int i = 0; i < calls.size(); i++) {
                long[] c = calls.get(i);
                assertTrue(c[0] <= c[1]);
                if (i > 0) {
                    assertTrue("done increases", calls.get(i - 1)[0] < c[0]);
                }
            }
            long[] last = calls.get(calls.size() - 1);
            assertEquals(copied, last[0]);
            assertEquals("the last call has done == total", last[0], last[1]);
            assertEquals(Collections.singletonList(KstateException.INVALID_ARGUMENT), nested);
            assertFalse("regular mode after the swap, same store object", store.isUpgrading());
            assertEquals(Long.valueOf(42L), store.committedOffset(TP));
            assertTrue("the callback's write is carried over, uncommitted", store.approximateNumUncommittedBytes() > 0);
            model.put(key(ENTRIES + 1), fromCallback);
            assertContents(model, store);
            store.commit(Collections.singletonMap(TP, 43L));
        } finally {
            store.close();
        }
        assertFalse("side directory removed", new File(dir, ".s.kstate-swap").exists());
        KstateKeyValueStore reopened = open(KstateStores.persistentTimestampedKeyValueStore("s"));
        try {
            assertFalse(reopened.isUpgrading());
            assertContents(model, reopened);
            assertEquals(Long.valueOf(43L), reopened.committedOffset(TP));
            assertEquals("nothing left to upgrade", 0L, reopened.upgradeBySwap((d, t) -> fail("not called")));
        } finally {
            reopened.close();
        }
    }

    @Test
    public void anExceptionFromProgressStopsTheSwapAndPropagates() {
        Map<Bytes, byte[]> model = plainStore();
        KstateKeyValueStore store = open(KstateStores.persistentTimestampedKeyValueStore("s"));
        try {
            IllegalStateException thrown = new IllegalStateException("stop");
            int[] calls = {0};
            try {
                store.upgradeBySwap((done, total) -> {
                    calls[0]++;
                    throw thrown;
                });
                fail("the callback's exception propagates");
            } catch (IllegalStateException e) {
                assertSame(thrown, e);
            }
            assertEquals(1, calls[0]);
            assertTrue("unchanged: still in upgrade mode", store.isUpgrading());
            assertFalse(new File(dir, ".s.kstate-swap").exists());
            assertContents(model, store);
            assertEquals(Long.valueOf(41L), store.committedOffset(TP));
            // Closing the store from the callback: the swap fails as on a closed store.
            try {
                store.upgradeBySwap((done, total) -> store.close());
                fail("closed during the swap");
            } catch (KstateInvalidStateStoreException e) {
                assertEquals(KstateException.STORE_CLOSED, code(e));
            }
        } finally {
            store.close();
        }
        KstateKeyValueStore reopened = open(KstateStores.persistentTimestampedKeyValueStore("s"));
        try {
            assertTrue("the old store is live and whole", reopened.isUpgrading());
            assertContents(model, reopened);
            assertFalse(new File(dir, ".s.kstate-swap").exists());
        } finally {
            reopened.close();
        }
        try {
            reopened.isUpgrading();
            fail("closed");
        } catch (KstateInvalidStateStoreException e) {
            assertEquals(KstateException.STORE_CLOSED, code(e));
        }
    }

    @Test
    public void theInMemoryEngineAndRegularModeStores() {
        KstateKeyValueStore memory = open(KstateStores.inMemoryTimestampedKeyValueStore("m"));
        try {
            assertFalse(memory.isUpgrading());
            try {
                memory.upgradeBySwap(null);
                fail("no swap on the memory engine");
            } catch (KstateProcessorStateException e) {
                assertEquals(KstateException.INVALID_ARGUMENT, code(e));
            }
        } finally {
            memory.close();
        }
        KstateKeyValueStore regular = open(KstateStores.persistentTimestampedKeyValueStore("r"));
        try {
            assertFalse(regular.isUpgrading());
            assertEquals(0L, regular.upgradeBySwap((d, t) -> fail("not called")));
        } finally {
            regular.close();
        }
    }
}
