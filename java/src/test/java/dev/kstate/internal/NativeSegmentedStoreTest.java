package dev.kstate.internal;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.kstate.streams.KstateException;
import dev.kstate.streams.KstateInvalidStateStoreException;
import dev.kstate.streams.KstateProcessorStateException;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.junit.Test;

/** The window and session natives through their low-level Java bindings. */
public class NativeSegmentedStoreTest {
    private static final NativeStore.RocksTuning DEFAULTS = new NativeStore.RocksTuning(0, 0, 0, true, false, 0, 0);
    private static final int TIMESTAMPED = KstateNative.FORMAT_TIMESTAMPED;
    private static final TopicPartition TP = new TopicPartition("w-changelog", 0);

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] ts(long timestamp, String value) {
        return ByteBuffer.allocate(8 + value.length()).putLong(timestamp).put(b(value)).array();
    }

    /** "key@start#seq=value" for every entry, in iteration order; closes the iterator. */
    private static List<String> windows(NativeIterator<Bytes> it) {
        List<String> out = new ArrayList<>();
        try (NativeIterator<Bytes> i = it) {
            while (i.hasNext()) {
                KeyValue<Bytes, byte[]> kv = i.next();
                NativeWindowStore.Window w = NativeWindowStore.window(kv.key.get());
                String value = new String(kv.value, 8, kv.value.length - 8, StandardCharsets.UTF_8);
                out.add(new String(w.key, StandardCharsets.UTF_8) + "@" + w.start + "#" + w.seqnum + "=" + value);
            }
        }
        return out;
    }

    private static List<String> sessions(NativeIterator<Bytes> it) {
        List<String> out = new ArrayList<>();
        try (NativeIterator<Bytes> i = it) {
            while (i.hasNext()) {
                KeyValue<Bytes, byte[]> kv = i.next();
                NativeSessionStore.Session s = NativeSessionStore.session(kv.key.get());
                out.add(new String(s.key, StandardCharsets.UTF_8) + "[" + s.start + "," + s.end + "]="
                    + new String(kv.value, StandardCharsets.UTF_8));
            }
        }
        return out;
    }

    private static void expectCode(int code, Runnable call) {
        try {
            call.run();
            fail("expected native error code " + code);
        } catch (KstateInvalidStateStoreException | KstateProcessorStateException e) {
            assertEquals(e.getMessage(), code, ((KstateException) e).errorCode());
        }
    }

    @Test
    public void windowStoreFetchesInKafkaOrderCommitsAndExpires() throws Exception {
        File dir = Files.createTempDirectory("kstate-window").toFile();
        String path = new File(dir, "w").getPath();
        // Retention 10 s, 1 s windows, 5 s segments.
        NativeWindowStore store = NativeWindowStore.open("w", path, KstateNative.ENGINE_ROCKSDB, TIMESTAMPED, 0,
            false, DEFAULTS, 10_000, 1_000, false, 5_000, false, false);
        store.put(b("b"), ts(1, "b0"), 0);
        store.put(b("a"), ts(2, "a6"), 6_000);
        store.put(b("a"), ts(3, "a0"), 0);
        store.put(b("a"), ts(4, "a1"), 1_000);
        assertArrayEquals(ts(3, "a0"), store.fetch(b("a"), 0, false));
        assertNull("not committed yet", store.fetch(b("a"), 0, true));
        // Segment by segment, then key bytes, then start.
        assertEquals(List.of("a@0#0=a0", "a@1000#0=a1", "b@0#0=b0", "a@6000#0=a6"),
            windows(store.query(NativeWindowStore.QUERY_ALL, null, null, 0, Long.MAX_VALUE, false, false)));
        assertEquals(List.of("a@6000#0=a6", "a@1000#0=a1", "a@0#0=a0"),
            windows(store.query(NativeWindowStore.QUERY_KEY, b("a"), null, 0, 10_000, true, false)));
        // Key range from "a", open above, backward: within the segment by key bytes, reversed.
        assertEquals(List.of("b@0#0=b0", "a@1000#0=a1", "a@0#0=a0"),
            windows(store.query(NativeWindowStore.QUERY_KEY_RANGE, b("a"), null, 0, 4_000, true, false)));
        store.commit(Collections.singletonMap(TP, 41L), b("position"));
        assertEquals(Long.valueOf(41), store.committedOffset(TP));
        assertArrayEquals(b("position"), store.committedMetadata());
        assertEquals(6_000, store.streamTime(true));
        // A put at 20 s expires everything before 10 s + 1 for the writer at once; committed
        // readers keep the last commit until the next one.
        store.put(b("c"), ts(5, "c20"), 20_000);
        assertEquals(List.of("c@20000#0=c20"),
            windows(store.query(NativeWindowStore.QUERY_TIME, null, null, 0, Long.MAX_VALUE, false, false)));
        assertEquals(4, windows(store.query(NativeWindowStore.QUERY_ALL, null, null, 0, 0, false, true)).size());
        store.rollback();
        assertEquals(6_000, store.streamTime(false));
        assertEquals(4, windows(store.query(NativeWindowStore.QUERY_ALL, null, null, 0, 0, false, false)).size());
        store.put(b("c"), ts(5, "c20"), 20_000);
        store.commit(Collections.singletonMap(TP, 42L), null);
        assertEquals(List.of("c@20000#0=c20"),
            windows(store.query(NativeWindowStore.QUERY_ALL, null, null, 0, 0, false, true)));
        // Iterators close with the store; the store closes once.
        NativeIterator<Bytes> open = store.query(NativeWindowStore.QUERY_ALL, null, null, 0, 0, false, false);
        assertEquals(1, store.openIterators());
        store.close();
        store.close();
        assertFalse(store.isOpen());
        assertEquals(0, store.openIterators());
        // An iterator closed with its store reads as exhausted, as Kafka's window iterators do
        assertFalse(open.hasNext());
        try {
            open.next();
            fail("next() on an iterator closed with its store");
        } catch (java.util.NoSuchElementException expected) {
            // as Kafka's
        }
        expectCode(KstateException.STORE_CLOSED, () -> store.fetch(b("c"), 20_000, false));
        // Reopened: offsets, metadata and stream time of the last commit.
        try (NativeWindowStore again = NativeWindowStore.open("w", path, KstateNative.ENGINE_ROCKSDB, TIMESTAMPED, 0,
            false, DEFAULTS, 10_000, 1_000, false, 0, false, false)) {
            assertEquals(Long.valueOf(42), again.committedOffset(TP));
            assertArrayEquals(b("position"), again.committedMetadata());
            assertEquals(20_000, again.streamTime(false));
            assertArrayEquals(ts(5, "c20"), again.fetch(b("c"), 20_000, true));
        }
    }

    /**
     * A query answers with its first batch: an answer that fits is read without another native
     * call and leaves nothing native to release, yet the iterator keeps the usual contract
     * (registered until closed, one close callback, closed means closed); a longer one goes on
     * in further batches.
     */
    @Test
    public void queriesAnswerWithTheirFirstBatch() {
        try (NativeWindowStore store = NativeWindowStore.open("f", null, KstateNative.ENGINE_MEMORY, TIMESTAMPED, 0,
                false, DEFAULTS, 3_600_000, 1_000, false, 0, false, false);
             NativeSessionStore sessions = NativeSessionStore.open("s", null, KstateNative.ENGINE_MEMORY, false, 0,
                 false, DEFAULTS, 3_600_000, 0, false, false)) {
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                store.put(b("k"), ts(i, "v" + i), i * 1_000L);
                expected.add("k@" + (i * 1_000) + "#0=v" + i);
            }
            // 100 windows: the first batch of 16, then batches of 64 and more
            assertEquals(expected,
                windows(store.query(NativeWindowStore.QUERY_KEY, b("k"), null, 0, Long.MAX_VALUE, false, false)));
            store.put(b("one"), ts(1, "x"), 5_000);
            NativeIterator<Bytes> it = store.query(NativeWindowStore.QUERY_KEY, b("one"), null, 0, 10_000, false, false);
            int[] callbacks = {0};
            it.onClose(() -> callbacks[0]++);
            assertEquals(1, store.openIterators());
            // a snapshot: a later write is not in the answer
            store.put(b("one"), ts(2, "y"), 6_000);
            assertTrue(it.hasNext());
            assertEquals(5_000, NativeWindowStore.window(it.next().key.get()).start);
            assertFalse(it.hasNext());
            it.close();
            it.close();
            assertEquals("one close callback", 1, callbacks[0]);
            assertEquals(0, store.openIterators());
            expectCode(KstateException.ITERATOR_CLOSED, it::hasNext);
            // findSessions of a key without sessions, the common case of a session aggregation
            sessions.put(b("a"), 10, 20, b("agg"));
            assertEquals(List.of(), sessions(sessions.query(NativeSessionStore.QUERY_KEY, b("b"), null, 0, 100, false,
                false)));
            assertEquals(List.of("a[10,20]=agg"), sessions(sessions.query(NativeSessionStore.QUERY_KEY, b("a"), null, 0,
                100, false, false)));
            assertEquals(0, sessions.openIterators());
        }
    }

    @Test
    public void duplicatesTakeSeqnumsAndIgnoreNulls() {
        try (NativeWindowStore store = NativeWindowStore.open("d", null, KstateNative.ENGINE_MEMORY, TIMESTAMPED, 0,
            false, DEFAULTS, 60_000, 1_000, true, 0, false, false)) {
            store.put(b("k"), ts(1, "x"), 500);
            store.put(b("k"), ts(2, "y"), 500);
            store.put(b("k"), null, 500);
            assertEquals(List.of("k@500#1=x", "k@500#2=y"),
                windows(store.query(NativeWindowStore.QUERY_KEY, b("k"), null, 0, 1_000, false, false)));
            // Kafka's fetch(key, time) reads the current seqnum.
            assertArrayEquals(ts(2, "y"), store.fetch(b("k"), 500, false));
        }
    }

    @Test
    public void sessionStoreFindsRemovesAndRejectsOtherHandles() {
        try (NativeSessionStore store = NativeSessionStore.open("s", null, KstateNative.ENGINE_MEMORY, false, 0, false,
            DEFAULTS, 60_000, 0, false, false)) {
            store.put(b("a"), 0, 100, b("1"));
            store.put(b("a"), 200, 300, b("2"));
            store.put(b("b"), 50, 150, b("3"));
            assertEquals(List.of("a[0,100]=1", "a[200,300]=2"),
                sessions(store.query(NativeSessionStore.QUERY_KEY, b("a"), null, 0, Long.MAX_VALUE, false, false)));
            // Sessions ending at or after 120 and starting at or before 250.
            assertEquals(List.of("b[50,150]=3", "a[200,300]=2"),
                sessions(store.query(NativeSessionStore.QUERY_KEY_RANGE, null, null, 120, 250, true, false)));
            assertArrayEquals(b("2"), store.fetchSession(b("a"), 200, 300, false));
            store.remove(b("a"), 200, 300);
            assertNull(store.fetchSession(b("a"), 200, 300, false));
            store.commit(Collections.emptyMap(), null);
            assertEquals(2, sessions(store.query(NativeSessionStore.QUERY_ALL, null, null, 0, 0, false, true)).size());
            assertEquals(300, store.streamTime(true));
            // The handle table knows kinds: a session store is neither a window nor a key-value store.
            long h = store.handle();
            expectCode(KstateException.INVALID_HANDLE, () -> KstateNative.windowPut(h, b("k"), null, 0));
            expectCode(KstateException.INVALID_HANDLE, () -> KstateNative.get(h, b("k"), false));
            expectCode(KstateException.INVALID_ARGUMENT,
                () -> KstateNative.sessionQuery(h, 9, null, null, 0, 0, false, false, 16, 1 << 20));
            expectCode(KstateException.INVALID_ARGUMENT, () -> KstateNative.sessionPut(h, null, 0, 0, null));
        }
    }
}
