package dev.kstate.internal;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.kstate.streams.KstateException;
import dev.kstate.streams.KstateInvalidStateStoreException;
import dev.kstate.streams.KstateProcessorStateException;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.apache.kafka.common.TopicPartition;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link NativeRemote} on a {@code file://} target: key-value, window and session stores are
 * published, listed, restored into new directories that reopen with the same committed state,
 * and garbage-collected down to {@code keep}; misuse gives typed exceptions with their codes.
 */
public class NativeRemoteTest {
    private static final NativeStore.RocksTuning DEFAULTS = new NativeStore.RocksTuning(0, 0, 0, true, false, 0, 0);
    private static final String APP = "remote-app";
    private File dir;
    private NativeRemote remote;

    @Before
    public void setUp() throws Exception {
        dir = Files.createTempDirectory("kstate-remote").toFile();
        remote = NativeRemote.open("file://" + new File(dir, "target").getAbsolutePath(), Collections.emptyMap(), 0,
            0, "writer-a");
    }

    @After
    public void tearDown() throws Exception {
        remote.close();
        try (Stream<Path> paths = Files.walk(dir.toPath())) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** A timestamped value. */
    private static byte[] ts(long t, String v) {
        byte[] raw = b(v);
        return java.nio.ByteBuffer.allocate(8 + raw.length).putLong(t).put(raw).array();
    }

    private String path(String name) {
        return new File(dir, name).getPath();
    }

    @Test
    public void keyValueStoreRoundTripAndGc() {
        TopicPartition tp = new TopicPartition(APP + "-kv-changelog", 3);
        Path scratch = dir.toPath().resolve("task").resolve(".scratch");
        try (NativeStore store = NativeStore.open("kv", path("kv"), KstateNative.ENGINE_ROCKSDB, true, 0, false, DEFAULTS)) {
            // Nothing committed: nothing published.
            NativeRemote.PublishReport none = remote.publishStore(store, scratch, APP, "0_3", "kv", -1);
            assertNull(none.manifest);
            assertFalse(Files.exists(scratch));
            assertTrue(remote.list(APP, "0_3", "kv").isEmpty());
            long lastSequence = -1;
            for (int round = 1; round <= 4; round++) {
                for (int i = 0; i < 50; i++) {
                    store.put(b("k" + round + "-" + i), ts(round, "v" + i));
                }
                store.commit(Collections.singletonMap(tp, 100L * round), b("pos" + round));
                NativeRemote.PublishReport r = remote.publishStore(store, scratch, APP, "0_3", "kv", lastSequence);
                assertNotNull(r.manifest);
                assertTrue(r.manifestCreated);
                assertTrue(r.sequence > lastSequence);
                assertTrue(r.filesUploaded > 0 && r.bytesUploaded > 0);
                assertFalse("the scratch copy is removed", Files.exists(scratch));
                // Unchanged since: nothing is published again.
                NativeRemote.PublishReport same = remote.publishStore(store, scratch, APP, "0_3", "kv", r.sequence);
                assertNull(same.manifest);
                assertEquals(r.sequence, same.sequence);
                lastSequence = r.sequence;
            }
            List<NativeRemote.ManifestSummary> listed = remote.list(APP, "0_3", "kv");
            assertEquals(4, listed.size());
            NativeRemote.ManifestSummary newest = listed.get(0);
            assertTrue(newest.readable());
            assertEquals(lastSequence, newest.sequence);
            assertEquals(Collections.singletonMap(tp, 400L), newest.offsets);
            assertEquals("writer-a", newest.writer);
            assertTrue(newest.publishedAtMs > 0);

            Path dest = dir.toPath().resolve("restored-kv");
            NativeRemote.RestoreReport r = remote.restore(APP, "0_3", "kv", newest.key, dest);
            assertEquals(newest.key, r.key);
            // The restore bound reaches the native target: a third of the bytes per second
            // holds the same restore back for more than a second (one second's worth goes at once).
            long rate = r.bytes / 3 + 1;
            try (NativeRemote bounded = NativeRemote.open("file://" + new File(dir, "target").getAbsolutePath(),
                Collections.emptyMap(), 0, rate, 0, "writer-b")) {
                long start = System.nanoTime();
                NativeRemote.RestoreReport again = bounded.restore(APP, "0_3", "kv", newest.key,
                    dir.toPath().resolve("restored-kv-bounded"));
                double took = (System.nanoTime() - start) / 1e9;
                assertEquals(r.bytes, again.bytes);
                double floor = (double) (r.bytes - rate) / rate;
                assertTrue(took + " s < " + floor + " s", took >= floor * 0.95);
            }
            assertEquals(lastSequence, r.sequence);
            assertEquals(Collections.singletonMap(tp, 400L), r.offsets);
            assertTrue(r.files > 0 && r.bytes > 0);
            try (NativeStore copy = NativeStore.open("copy", dest.toString(), KstateNative.ENGINE_ROCKSDB, true, 0, false,
                DEFAULTS)) {
                assertEquals(Long.valueOf(400), copy.committedOffset(tp));
                assertArrayEquals(b("pos4"), copy.committedMetadata());
                assertEquals(store.approximateNumEntries(true), copy.approximateNumEntries(true));
                for (int round = 1; round <= 4; round++) {
                    for (int i = 0; i < 50; i += 7) {
                        assertArrayEquals(ts(round, "v" + i), copy.get(b("k" + round + "-" + i), true));
                    }
                }
            }
            // Restoring over an existing directory is refused.
            try {
                remote.restore(APP, "0_3", "kv", newest.key, dest);
                fail("restored over an existing directory");
            } catch (KstateProcessorStateException e) {
                assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
            }

            NativeRemote.GcReport gc = remote.gc(APP, "0_3", "kv", 2);
            assertEquals(2, gc.manifestsDeleted);
            List<NativeRemote.ManifestSummary> kept = remote.list(APP, "0_3", "kv");
            assertEquals(2, kept.size());
            assertEquals(newest.key, kept.get(0).key);
            assertEquals(listed.get(1).key, kept.get(1).key);
        }
    }

    @Test
    public void windowAndSessionStoresRoundTrip() {
        TopicPartition wtp = new TopicPartition(APP + "-w-changelog", 0);
        TopicPartition stp = new TopicPartition(APP + "-s-changelog", 0);
        Path scratch = dir.toPath().resolve(".scratch");
        try (NativeWindowStore w = NativeWindowStore.open("w", path("w"), KstateNative.ENGINE_ROCKSDB,
                KstateNative.FORMAT_TIMESTAMPED, 0, false, DEFAULTS, 100_000, 1_000, false, 0, false, false);
             NativeSessionStore s = NativeSessionStore.open("s", path("s"), KstateNative.ENGINE_ROCKSDB, false, 0,
                 false, DEFAULTS, 100_000, 0, false, false)) {
            for (int i = 0; i < 20; i++) {
                w.put(b("w" + i), ts(i, "wv" + i), 1_000L * i);
                s.put(b("s" + i), 10L * i, 10L * i + 5, b("agg" + i));
            }
            w.commit(Collections.singletonMap(wtp, 19L), b("wpos"));
            s.commit(Collections.singletonMap(stp, 39L), b("spos"));
            NativeRemote.PublishReport wr = remote.publishStore(w, scratch, APP, "1_0", "w", -1);
            NativeRemote.PublishReport sr = remote.publishStore(s, scratch, APP, "1_0", "s", -1);
            assertNotNull(wr.manifest);
            assertNotNull(sr.manifest);

            Path wdest = dir.toPath().resolve("w-restored");
            Path sdest = dir.toPath().resolve("s-restored");
            assertEquals(Collections.singletonMap(wtp, 19L), remote.restore(APP, "1_0", "w", wr.manifest, wdest).offsets);
            assertEquals(Collections.singletonMap(stp, 39L), remote.restore(APP, "1_0", "s", sr.manifest, sdest).offsets);
            try (NativeWindowStore wc = NativeWindowStore.open("wc", wdest.toString(), KstateNative.ENGINE_ROCKSDB,
                    KstateNative.FORMAT_TIMESTAMPED, 0, false, DEFAULTS, 100_000, 1_000, false, 0, false, false);
                 NativeSessionStore sc = NativeSessionStore.open("sc", sdest.toString(), KstateNative.ENGINE_ROCKSDB,
                     false, 0, false, DEFAULTS, 100_000, 0, false, false)) {
                assertEquals(Long.valueOf(19), wc.committedOffset(wtp));
                assertEquals(Long.valueOf(39), sc.committedOffset(stp));
                assertArrayEquals(b("wpos"), wc.committedMetadata());
                for (int i = 0; i < 20; i++) {
                    assertArrayEquals(w.fetch(b("w" + i), 1_000L * i, true), wc.fetch(b("w" + i), 1_000L * i, true));
                    assertArrayEquals(ts(i, "wv" + i), wc.fetch(b("w" + i), 1_000L * i, true));
                    assertArrayEquals(b("agg" + i), sc.fetchSession(b("s" + i), 10L * i, 10L * i + 5, true));
                }
                assertEquals(w.streamTime(true), wc.streamTime(true));
            }
        }
    }

    @Test
    public void misuseIsTyped() {
        // Bad uri scheme.
        try {
            NativeRemote.open("ftp://nowhere/x", Collections.emptyMap(), 0, 0, null).close();
            fail("opened an ftp target");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        // file:// takes no S3 option.
        try {
            NativeRemote.open("file://" + path("t2"), Collections.singletonMap("region", "x"), 0, 0, null).close();
            fail("a file target took an S3 option");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        // A bad writer id.
        try {
            NativeRemote.open("file://" + path("t3"), Collections.emptyMap(), 0, 0, "a/b").close();
            fail("a writer id with a slash");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        // A scope part that is not one path segment.
        try {
            remote.list(APP, "../0_1", "kv");
            fail("listed a scope with ..");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        // Null arguments.
        try {
            remote.list(null, "0_1", "kv");
            fail("listed a null app");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        try {
            remote.restore(APP, "0_1", "kv", null, dir.toPath().resolve("x"));
            fail("restored a null key");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        // gc keeps at least one.
        try {
            remote.gc(APP, "0_1", "kv", 0);
            fail("gc keeping none");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
        }
        // A missing manifest is an error, and nothing is left at the destination.
        Path dest = dir.toPath().resolve("nothing");
        try {
            remote.restore(APP, "0_1", "kv", "manifests/00000000000000000001-x.json", dest);
            fail("restored a missing manifest");
        } catch (KstateProcessorStateException e) {
            assertTrue(e.getMessage(), e.errorCode() == KstateException.IO || e.errorCode() == KstateException.CORRUPTION);
        }
        assertFalse(Files.exists(dest));
        // A closed store cannot be published.
        NativeStore closedStore = NativeStore.open("c", path("c"), KstateNative.ENGINE_ROCKSDB, true, 0, false, DEFAULTS);
        closedStore.close();
        try {
            remote.publishStore(closedStore, dir.toPath().resolve(".s"), APP, "0_1", "c", -1);
            fail("published a closed store");
        } catch (KstateInvalidStateStoreException e) {
            assertEquals(KstateException.STORE_CLOSED, e.errorCode());
        }
        // A memory store has no checkpoint.
        try (NativeStore memory = NativeStore.open("m", null, KstateNative.ENGINE_MEMORY, true, 0, false, DEFAULTS)) {
            memory.commit(Collections.singletonMap(new TopicPartition("t", 0), 1L), null);
            remote.publishStore(memory, dir.toPath().resolve(".m"), APP, "0_1", "m", -1);
            fail("published a memory store");
        } catch (KstateProcessorStateException e) {
            assertEquals(KstateException.UNSUPPORTED, e.errorCode());
        }
        // A closed target: exactly-once close, then typed refusals.
        remote.close();
        remote.close();
        assertFalse(remote.isOpen());
        try {
            remote.list(APP, "0_1", "kv");
            fail("listed on a closed target");
        } catch (KstateInvalidStateStoreException e) {
            assertEquals(KstateException.STORE_CLOSED, e.errorCode());
        }
        // A forged handle reaches the native table's checks.
        try {
            KstateNative.remoteList(0x4B01_0000_0000_0001L, APP, "0_1", "kv");
            fail("a store handle used as a target");
        } catch (KstateInvalidStateStoreException e) {
            assertEquals(KstateException.INVALID_HANDLE, e.errorCode());
        }
    }
}
