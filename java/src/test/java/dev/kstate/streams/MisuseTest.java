package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.kstate.internal.KstateNative;
import dev.kstate.internal.NativeStore;
import dev.kstate.internal.NativeVersionedStore;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.errors.ProcessorStateException;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** Misuse gives Kafka's expected exceptions with native error codes, never a JVM crash. */
public class MisuseTest {
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("misuse");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private KeyValueStore<Bytes, byte[]> open(String name) {
        KeyValueStore<Bytes, byte[]> store = KstateStores.persistentKeyValueStore(name).get();
        store.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), store);
        return store;
    }

    private static Bytes b(String s) {
        return Bytes.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    private static void expectClosed(Runnable r) {
        try {
            r.run();
            fail("expected InvalidStateStoreException");
        } catch (InvalidStateStoreException e) {
            assertTrue(e instanceof KstateException);
            int code = ((KstateException) e).errorCode();
            assertTrue("code " + code, code == KstateException.STORE_CLOSED || code == KstateException.ITERATOR_CLOSED
                || code == KstateException.INVALID_HANDLE);
        }
    }

    @Test
    public void useAfterCloseThrowsInvalidStateStoreException() {
        KeyValueStore<Bytes, byte[]> store = open("closed");
        store.put(b("a"), new byte[] {1});
        store.close();
        expectClosed(() -> store.get(b("a")));
        expectClosed(() -> store.put(b("a"), new byte[] {2}));
        expectClosed(() -> store.delete(b("a")));
        expectClosed(() -> store.putAll(Collections.singletonList(KeyValue.pair(b("a"), new byte[0]))));
        expectClosed(store::all);
        expectClosed(() -> store.range(b("a"), b("b")));
        expectClosed(() -> store.commit(Collections.emptyMap()));
        expectClosed(() -> store.committedOffset(new TopicPartition("t", 0)));
        expectClosed(store::approximateNumEntries);
        assertEquals(0L, store.approximateNumUncommittedBytes());
        org.apache.kafka.streams.query.QueryResult<byte[]> r = store.query(
            org.apache.kafka.streams.query.KeyQuery.<Bytes, byte[]>withKey(b("a")),
            org.apache.kafka.streams.query.PositionBound.unbounded(), new org.apache.kafka.streams.query.QueryConfig(false));
        assertTrue(r.isFailure());
        assertEquals(org.apache.kafka.streams.query.FailureReason.STORE_EXCEPTION, r.getFailureReason());
        store.close();
    }

    @Test
    public void closedIteratorsThrowAndAreClosedWithTheStore() {
        KeyValueStore<Bytes, byte[]> store = open("iters");
        for (int i = 0; i < 100; i++) {
            store.put(b("k" + i), new byte[] {(byte) i});
        }
        KeyValueIterator<Bytes, byte[]> closedExplicitly = store.all();
        closedExplicitly.next();
        closedExplicitly.close();
        closedExplicitly.close(); // idempotent
        expectClosed(closedExplicitly::hasNext);
        expectClosed(closedExplicitly::next);
        expectClosed(closedExplicitly::peekNextKey);

        KeyValueIterator<Bytes, byte[]> open1 = store.all();
        KeyValueIterator<Bytes, byte[]> open2 = store.reverseAll();
        open1.next();
        assertEquals(2, ((KstateKeyValueStore) store).openIterators());
        store.close();
        assertEquals(0, ((KstateKeyValueStore) store).openIterators());
        expectClosed(open1::hasNext);
        expectClosed(open2::next);
        open1.close();
    }

    @Test
    public void nullKeysThrowNullPointerException() {
        KeyValueStore<Bytes, byte[]> store = open("nulls");
        Runnable[] calls = {
            () -> store.put(null, new byte[0]),
            () -> store.get(null),
            () -> store.delete(null),
            () -> store.putIfAbsent(null, new byte[0]),
            () -> store.putAll(Arrays.asList(KeyValue.pair(b("ok"), new byte[0]), KeyValue.pair(null, new byte[0]))),
        };
        for (Runnable call : calls) {
            try {
                call.run();
                fail("expected NullPointerException");
            } catch (NullPointerException expected) {
                // Kafka's behaviour
            }
        }
        assertEquals("a rejected putAll writes nothing", 0, TestSupport.drain(store.all()).size());
        store.close();
    }

    @Test
    public void secondInstanceOnTheSameDirectoryIsRejected() {
        KeyValueStore<Bytes, byte[]> first = open("locked");
        try {
            open("locked");
            fail("expected ProcessorStateException");
        } catch (ProcessorStateException e) {
            assertEquals(KstateException.LOCKED, ((KstateException) e).errorCode());
            assertTrue(e.getMessage(), e.getMessage().contains("LOCKED"));
        }
        first.put(b("still"), new byte[] {1});
        first.close();
        KeyValueStore<Bytes, byte[]> second = open("locked");
        second.close();
    }

    @Test
    public void aTimestampedStoreCannotBeOpenedPlain() {
        KeyValueStore<Bytes, byte[]> ts = KstateStores.persistentTimestampedKeyValueStore("fmt").get();
        ts.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), ts);
        ts.close();
        KeyValueStore<Bytes, byte[]> plain = KstateStores.persistentKeyValueStore("fmt").get();
        try {
            plain.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), plain);
            fail("expected ProcessorStateException");
        } catch (ProcessorStateException e) {
            assertEquals(KstateException.FORMAT_MISMATCH, ((KstateException) e).errorCode());
        }
        assertFalse(plain.isOpen());
    }

    /** A plain store opened timestamped is upgraded lazily (KIP-258): old values read with timestamp -1. */
    @Test
    public void aPlainStoreOpenedTimestampedIsUpgraded() {
        KeyValueStore<Bytes, byte[]> plain = open("upgrade");
        plain.put(b("k"), new byte[] {7});
        plain.commit(java.util.Collections.emptyMap());
        plain.close();
        KeyValueStore<Bytes, byte[]> ts = KstateStores.persistentTimestampedKeyValueStore("upgrade").get();
        ts.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), ts);
        byte[] raw = ts.get(b("k"));
        assertEquals(java.nio.ByteBuffer.wrap(raw).getLong(), -1L);
        assertEquals(7, raw[8]);
        assertEquals(9, raw.length);
        ts.close();
    }

    @Test
    public void malformedTimestampedValuesAreRejected() {
        KeyValueStore<Bytes, byte[]> store = KstateStores.persistentTimestampedKeyValueStore("short").get();
        store.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), store);
        try {
            store.put(b("a"), new byte[] {1, 2, 3});
            fail("expected ProcessorStateException");
        } catch (ProcessorStateException e) {
            assertEquals(KstateException.INVALID_VALUE, ((KstateException) e).errorCode());
        }
        store.close();
    }

    private NativeVersionedStore openVersioned(String name) {
        return NativeVersionedStore.open(name, new File(dir, name).getPath(), KstateNative.ENGINE_ROCKSDB, 0, false,
            new NativeStore.RocksTuning(0, 0, 0, true, false, 0, 0), 1_000, 0);
    }

    private static void expectInvalid(int code, Runnable r) {
        try {
            r.run();
            fail("expected ProcessorStateException");
        } catch (ProcessorStateException e) {
            assertEquals(e.getMessage(), code, ((KstateException) e).errorCode());
        }
    }

    /** The versioned natives: closed, locked, wrong-kind and invalid calls are typed exceptions with their codes. */
    @Test
    public void versionedStoreMisuse() {
        NativeVersionedStore store = openVersioned("versioned");
        byte[] k = {'k'};
        assertEquals(-1L, store.put(k, new byte[] {1}, 10));
        expectInvalid(KstateException.INVALID_ARGUMENT, () -> store.put(null, new byte[] {1}, 10));
        expectInvalid(KstateException.INVALID_ARGUMENT, () -> store.get(null, 10, false));
        expectInvalid(KstateException.INVALID_ARGUMENT, () -> store.versions(k, 5, 4, true, false));
        expectInvalid(KstateException.INVALID_ARGUMENT, () -> store.restoreBatch(Collections.emptyList(),
            Collections.emptyMap(), null));
        expectInvalid(KstateException.LOCKED, () -> openVersioned("versioned"));
        store.close();
        store.close(); // exactly once
        TopicPartition tp = new TopicPartition("t", 0);
        Runnable[] calls = {
            () -> store.put(k, new byte[] {2}, 11), () -> store.delete(k, 11), () -> store.get(k, false),
            () -> store.get(k, 10, true), () -> store.versions(k, 0, 100, false, false), () -> store.streamTime(false),
            () -> store.restoreBatch(Collections.emptyList(), Collections.emptyMap(), null),
            () -> store.commit(Collections.emptyMap(), null), () -> store.committedOffset(tp), store::rollback,
            store::committedMetadata, store::approximateNumUncommittedBytes, () -> store.property("rocksdb.size"),
        };
        for (Runnable call : calls) {
            expectClosed(call);
        }
        // a key-value store's directory is no versioned store, and back
        open("kv").close();
        expectInvalid(KstateException.FORMAT_MISMATCH, () -> openVersioned("kv"));
        NativeVersionedStore again = openVersioned("versioned");
        assertEquals("the uncommitted put is gone", null, again.get(k, false));
        again.close();
        KeyValueStore<Bytes, byte[]> kv = KstateStores.persistentKeyValueStore("versioned").get();
        try {
            kv.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), kv);
            fail("expected ProcessorStateException");
        } catch (ProcessorStateException e) {
            assertEquals(KstateException.FORMAT_MISMATCH, ((KstateException) e).errorCode());
        }
    }
}
