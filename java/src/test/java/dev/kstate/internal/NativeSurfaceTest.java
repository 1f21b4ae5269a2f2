package dev.kstate.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.kstate.streams.KstateException;
import dev.kstate.streams.KstateInvalidStateStoreException;
import dev.kstate.streams.KstateProcessorStateException;
import org.junit.Test;

/** The raw natives reject bad handles and arguments with typed exceptions, never a crash. */
public class NativeSurfaceTest {
    /** The open native with default tuning (bloom filters on), as a key-value store. */
    static long open(String path, int engine, int valueFormat) {
        NativeStore.RocksTuning tuning = new NativeStore.RocksTuning(0, 0, 0, true, false, 0, 0);
        return KstateNative.open(path,
            KstateNative.openOptions(engine, valueFormat, 0, false, tuning, 0, 0, false, 0, false, false, false));
    }

    @Test
    public void openOptionsOfAnotherLengthAreRejected() {
        KstateNative.ensureLoaded();
        for (long[] options : new long[][] {new long[0], new long[18], new long[20], null}) {
            try {
                KstateNative.windowOpen(null, options);
                fail("options " + (options == null ? "null" : options.length));
            } catch (KstateProcessorStateException e) {
                assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
            }
        }
    }

    @Test
    public void forgedStaleAndNullHandlesAreRejected() {
        KstateNative.ensureLoaded();
        long[] bogus = {0L, 1L, -1L, 0x4B53000000000001L + 1_000_000L};
        for (long h : bogus) {
            try {
                KstateNative.get(h, new byte[] {1}, false);
                fail("expected an exception for handle " + h);
            } catch (KstateInvalidStateStoreException e) {
                assertEquals(KstateException.INVALID_HANDLE, e.errorCode());
            }
            try {
                KstateNative.next(h, 10, 100);
                fail("expected an exception for iterator handle " + h);
            } catch (KstateInvalidStateStoreException e) {
                assertEquals(KstateException.INVALID_HANDLE, e.errorCode());
            }
        }
        long store = open(null, KstateNative.ENGINE_MEMORY, KstateNative.FORMAT_PLAIN);
        KstateNative.put(store, new byte[] {1}, new byte[] {2});
        KstateNative.close(store);
        // Closed handles get the closed code, as in C (KSTATE_ERR_STORE_CLOSED).
        expectCode(KstateException.STORE_CLOSED, () -> KstateNative.close(store));
        expectCode(KstateException.STORE_CLOSED, () -> KstateNative.get(store, new byte[] {1}, false));
    }

    /**
     * Keys, values and metadata cross intact at every size around the 256 bytes the natives
     * copy onto the stack (larger arrays go to the heap): empty, 1, 255, 256, 257 bytes, 4 KiB
     * and 1 MiB, each byte distinct from its neighbours so that a shifted or truncated copy
     * shows.
     */
    @Test
    public void arraysOfEverySizeCrossIntact() {
        long store = open(null, KstateNative.ENGINE_MEMORY, KstateNative.FORMAT_PLAIN);
        try {
            int[] sizes = {0, 1, 255, 256, 257, 4096, 1 << 20};
            for (int keySize : sizes) {
                for (int valueSize : sizes) {
                    byte[] key = pattern(keySize, 7 * valueSize + 1);
                    byte[] value = pattern(valueSize, keySize + 3);
                    KstateNative.put(store, key, value);
                    org.junit.Assert.assertArrayEquals(keySize + "/" + valueSize, value, KstateNative.get(store, key, false));
                    byte[] other = pattern(valueSize, keySize + 5);
                    org.junit.Assert.assertArrayEquals(value, KstateNative.putIfAbsent(store, key, other));
                    org.junit.Assert.assertArrayEquals(value, KstateNative.delete(store, key));
                    org.junit.Assert.assertNull(KstateNative.get(store, key, false));
                }
                byte[] metadata = pattern(keySize, 11);
                KstateNative.commit(store, new String[] {"t"}, new int[] {0}, new long[] {keySize}, metadata);
                org.junit.Assert.assertArrayEquals(metadata, KstateNative.committedMetadata(store));
            }
        } finally {
            KstateNative.close(store);
        }
    }

    private static byte[] pattern(int size, int seed) {
        byte[] out = new byte[size];
        for (int i = 0; i < size; i++) {
            out[i] = (byte) (seed + i * 31 + (i >> 8));
        }
        return out;
    }

    /** Runs {@code call}, which must throw a kstate exception carrying {@code code}. */
    private static void expectCode(int code, Runnable call) {
        try {
            call.run();
            fail("expected native error code " + code);
        } catch (KstateInvalidStateStoreException | KstateProcessorStateException e) {
            assertEquals(e.getMessage(), code, ((KstateException) e).errorCode());
        }
    }

    /**
     * One handle table for C and JNI, tagged by kind: an iterator handle is no store handle
     * (nothing is read, written or closed through it) and a store handle is no iterator
     * handle, live or closed, exactly as the C API answers (INVALID_HANDLE).
     */
    @Test
    public void handlesOfOneKindAreInvalidAsTheOther() {
        long store = open(null, KstateNative.ENGINE_MEMORY, KstateNative.FORMAT_PLAIN);
        KstateNative.put(store, new byte[] {1}, new byte[] {2});
        long it = KstateNative.scan(store, null, null, false, false, false);
        int invalid = KstateException.INVALID_HANDLE;
        expectCode(invalid, () -> KstateNative.get(it, new byte[] {1}, false));
        expectCode(invalid, () -> KstateNative.get(it, new byte[] {1}, true));
        expectCode(invalid, () -> KstateNative.put(it, new byte[] {1}, new byte[] {3}));
        expectCode(invalid, () -> KstateNative.putIfAbsent(it, new byte[] {1}, new byte[] {3}));
        expectCode(invalid, () -> KstateNative.delete(it, new byte[] {1}));
        expectCode(invalid, () -> KstateNative.putAll(it, new byte[0]));
        expectCode(invalid, () -> KstateNative.scan(it, null, null, false, false, false));
        expectCode(invalid, () -> KstateNative.commit(it, new String[0], new int[0], new long[0], null));
        expectCode(invalid, () -> KstateNative.flush(it, null));
        expectCode(invalid, () -> KstateNative.committedOffset(it, "t", 0));
        expectCode(invalid, () -> KstateNative.committedMetadata(it));
        expectCode(invalid, () -> KstateNative.rollback(it));
        expectCode(invalid, () -> KstateNative.approximateNumEntries(it, false));
        expectCode(invalid, () -> KstateNative.approximateNumUncommittedBytes(it));
        expectCode(invalid, () -> KstateNative.close(it));
        expectCode(invalid, () -> KstateNative.next(store, 10, 100));
        expectCode(invalid, () -> KstateNative.closeIterator(store));
        // Neither was touched by the misuse.
        org.junit.Assert.assertArrayEquals(new byte[] {2}, KstateNative.get(store, new byte[] {1}, false));
        assertTrue(KstateNative.next(it, 10, 100) != null);
        KstateNative.closeIterator(it);
        expectCode(KstateException.ITERATOR_CLOSED, () -> KstateNative.next(it, 10, 100));
        expectCode(KstateException.ITERATOR_CLOSED, () -> KstateNative.closeIterator(it));
        expectCode(invalid, () -> KstateNative.close(it));
        KstateNative.close(store);
        expectCode(invalid, () -> KstateNative.next(store, 10, 100));
    }

    @Test
    public void emptyPathsAreInvalidArguments() {
        expectCode(KstateException.INVALID_ARGUMENT,
                () -> open("", KstateNative.ENGINE_ROCKSDB, KstateNative.FORMAT_TIMESTAMPED));
        expectCode(KstateException.INVALID_ARGUMENT,
                () -> open("", KstateNative.ENGINE_MEMORY, KstateNative.FORMAT_TIMESTAMPED));
        expectCode(KstateException.INVALID_ARGUMENT,
                () -> open(null, KstateNative.ENGINE_ROCKSDB, KstateNative.FORMAT_TIMESTAMPED));
        // A path that is not valid Unicode (an unpaired surrogate) is refused, not mangled.
        expectCode(KstateException.INVALID_ARGUMENT,
                () -> open("store-\uD800", KstateNative.ENGINE_MEMORY, KstateNative.FORMAT_TIMESTAMPED));
    }

    @Test
    public void malformedBatchesAndNullsAreRejected() {
        long store = open(null, KstateNative.ENGINE_MEMORY, KstateNative.FORMAT_PLAIN);
        try {
            KstateNative.putAll(store, new byte[] {0, 0, 0, 5, 1});
            fail("truncated batch");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        try {
            KstateNative.get(store, null, false);
            fail("null key");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        try {
            open(null, 7, KstateNative.FORMAT_PLAIN);
            fail("bad engine");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        try {
            KstateNative.commit(store, new String[] {"t"}, new int[] {0, 1}, new long[] {1}, null);
            fail("mismatched arrays");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        KstateNative.close(store);
    }

    @Test
    public void commitsWithManyPartitions() {
        long store = open(null, KstateNative.ENGINE_MEMORY, KstateNative.FORMAT_TIMESTAMPED);
        int n = 200;
        String[] topics = new String[n];
        int[] partitions = new int[n];
        long[] offsets = new long[n];
        for (int i = 0; i < n; i++) {
            topics[i] = "topic-" + (i % 7);
            partitions[i] = i;
            offsets[i] = i * 10L;
        }
        KstateNative.commit(store, topics, partitions, offsets, new byte[] {1, 2, 3});
        for (int i = 0; i < n; i++) {
            assertEquals(i * 10L, KstateNative.committedOffset(store, "topic-" + (i % 7), i));
        }
        assertEquals(KstateNative.NO_OFFSET, KstateNative.committedOffset(store, "other", 0));
        org.junit.Assert.assertArrayEquals(new byte[] {1, 2, 3}, KstateNative.committedMetadata(store));
        KstateNative.close(store);
    }

    @Test
    public void testsRunUnderXcheckJni() {
        assertTrue(java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().contains("-Xcheck:jni"));
    }
}
