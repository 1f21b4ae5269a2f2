package dev.kstate.streams;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * SIGKILL crash test: a child JVM writes and commits through the adapter and is killed
 * (Process.destroyForcibly) at random points; after each kill the parent reopens the store
 * through the adapter and checks the committed offset and the contents against the model.
 */
public class CrashTest {
    static final int KILLS = Integer.getInteger("kstate.crash.kills", 50);
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("crash");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** Starts the child JVM with this JVM's classpath (and -Xcheck:jni). */
    public static Process startChild(File stateDir, long maxBatches) throws IOException {
        List<String> cmd = TestSupport.childJvm("-Xmx256m");
        cmd.add(CrashChild.class.getName());
        cmd.add(stateDir.getAbsolutePath());
        cmd.add(Long.toString(maxBatches));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        return pb.start();
    }

    /** Reads the child's stdout on a thread, tracking the last reported commit. */
    public static final class ChildWatcher extends Thread {
        private final Process process;
        public final AtomicLong lastCommitted = new AtomicLong(-1);
        public final AtomicLong opened = new AtomicLong(-1);
        /** Lines that are neither progress nor SLF4J chatter, e.g. -Xcheck:jni warnings. */
        public final List<String> unexpected = java.util.Collections.synchronizedList(new ArrayList<>());

        public ChildWatcher(Process process) {
            this.process = process;
            setDaemon(true);
        }

        @Override
        public void run() {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.startsWith("COMMITTED ")) {
                        lastCommitted.set(Long.parseLong(line.substring(10).trim()));
                    } else if (line.startsWith("OPENED ")) {
                        opened.set(Long.parseLong(line.substring(7).trim()));
                    } else if (!line.startsWith("SLF4J")) {
                        unexpected.add(line);
                    }
                }
            } catch (IOException e) {
                // the child died: expected
            }
        }

        /** Waits until the child opened the store (or died). */
        public boolean awaitOpened(long timeoutMs) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (opened.get() < 0 && process.isAlive() && System.currentTimeMillis() < deadline) {
                Thread.sleep(5);
            }
            return opened.get() >= 0;
        }
    }

    /**
     * Reopens the store through the adapter and checks it against the model.
     *
     * @return the committed offset found
     */
    public static long verify(File stateDir, long atLeast, long atMost) {
        KeyValueStore<Bytes, byte[]> store = CrashChild.supplier().get();
        store.init(new TestSupport.CapturingContext(TestSupport.props("crash-app", stateDir), stateDir), store);
        try {
            Long committed = store.committedOffset(CrashChild.CHANGELOG);
            long n = committed == null ? 0 : committed;
            assertTrue("committed " + n + " >= last reported " + atLeast, n >= atLeast);
            assertTrue("committed " + n + " <= last reported + 1 = " + atMost, n <= atMost);
            TreeMap<Bytes, byte[]> expected = CrashChild.expected(n);
            List<KeyValue<Bytes, byte[]>> actual = TestSupport.drain(store.all());
            assertEquals("entries at offset " + n, expected.size(), actual.size());
            int i = 0;
            for (Map.Entry<Bytes, byte[]> e : expected.entrySet()) {
                KeyValue<Bytes, byte[]> kv = actual.get(i++);
                assertEquals(e.getKey(), kv.key);
                assertArrayEquals("value+timestamp of " + e.getKey() + " at offset " + n, e.getValue(), kv.value);
            }
            return n;
        } finally {
            store.close();
        }
    }

    @Test
    public void sigkilledWritersLeaveExactlyACompletedCommit() throws Exception {
        Random rnd = new Random(Long.getLong("kstate.crash.seed", System.nanoTime()));
        File stateDir = new File(dir, "state");
        long previous = 0;
        int midCommitKills = 0;
        long start = System.nanoTime();
        for (int kill = 0; kill < KILLS; kill++) {
            Process child = startChild(stateDir, Long.MAX_VALUE);
            ChildWatcher watcher = new ChildWatcher(child);
            watcher.start();
            assertTrue("child opened the store", watcher.awaitOpened(60_000));
            assertEquals("child resumed from the committed offset", previous, watcher.opened.get());
            Thread.sleep(rnd.nextInt(250));
            child.destroyForcibly(); // SIGKILL
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            watcher.join(10_000);
            assertEquals("killed by SIGKILL", 137, child.exitValue());
            assertTrue("child printed (e.g. -Xcheck:jni warnings): " + watcher.unexpected, watcher.unexpected.isEmpty());
            long reported = CrashChild.lastReported(stateDir);
            assertTrue("stdout never runs ahead of the progress file", watcher.lastCommitted.get() <= reported);
            long found = verify(stateDir, reported, reported + 1);
            if (found == reported + 1) {
                midCommitKills++; // killed after the commit was durable, before it was reported
            }
            previous = found;
        }
        System.out.println(KILLS + " SIGKILLs in " + (System.nanoTime() - start) / 1_000_000 + " ms; last committed "
            + previous + "; " + midCommitKills + " kills between a durable commit and its report");
        assertTrue("the children made progress", previous > KILLS);
    }
}
