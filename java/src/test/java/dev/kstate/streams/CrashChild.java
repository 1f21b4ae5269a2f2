package dev.kstate.streams;

import java.io.File;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The child JVM of the crash tests and the demo: reopens the store through the adapter,
 * continues after its committed offset and writes + commits batches forever (until killed),
 * printing {@code COMMITTED <n>} after each commit returns and recording n in the
 * {@code progress} file of the state directory (one 8-byte write, which survives SIGKILL;
 * the stdout pipe may lose its last lines when the JVM reaps a killed child).
 *
 * <p>Batch n is a pure function of n ({@link #apply}), so the parent can rebuild the
 * expected contents for any committed offset.
 */
public final class CrashChild {
    public static final TopicPartition CHANGELOG = new TopicPartition("crash-app-store-changelog", 0);
    public static final String STORE = "crash-store";
    static final int KEYS = 300;
    static final int OPS_PER_BATCH = 24;

    private CrashChild() {
    }

    /** Applies batch {@code n} to a model (key to timestamped raw value). */
    public static void apply(long n, Map<Bytes, byte[]> model) {
        for (int j = 0; j < OPS_PER_BATCH; j++) {
            long mix = (n * 7919 + j * 104729) ^ (n << 7);
            Bytes key = Bytes.wrap(("key-" + Math.floorMod(mix, KEYS)).getBytes(StandardCharsets.UTF_8));
            if (Math.floorMod(mix, 9) == 0) {
                model.put(key, null);
            } else {
                // Every third batch carries a few KiB per value so the 16 KiB buffer spills.
                int size = n % 3 == 0 ? 2048 + j : 16;
                byte[] value = new byte[size];
                for (int i = 0; i < size; i++) {
                    value[i] = (byte) (n + j + i);
                }
                model.put(key, ByteBuffer.allocate(8 + size).putLong(n * 1000 + j).put(value).array());
            }
        }
    }

    /** @return the store supplier used by the child and the parent (tiny buffer: spills) */
    public static KstateKeyValueBytesStoreSupplier supplier() {
        return KstateStores.builder(STORE).maxUncommittedBytes(16 * 1024).build();
    }

    /** @return the expected contents after committing batches 1..n */
    public static TreeMap<Bytes, byte[]> expected(long n) {
        TreeMap<Bytes, byte[]> model = new TreeMap<>();
        for (long b = 1; b <= n; b++) {
            apply(b, model);
        }
        model.values().removeIf(v -> v == null);
        return model;
    }

    public static void main(String[] args) throws Exception {
        File stateDir = new File(args[0]);
        long maxBatches = args.length > 1 ? Long.parseLong(args[1]) : Long.MAX_VALUE;
        PrintStream out = System.out;
        KeyValueStore<Bytes, byte[]> store = supplier().get();
        store.init(new TestSupport.CapturingContext(TestSupport.props("crash-app", stateDir), stateDir), store);
        Long committed = store.committedOffset(CHANGELOG);
        long n = committed == null ? 0 : committed;
        out.println("OPENED " + n);
        out.flush();
        long written = 0;
        RandomAccessFile progress = new RandomAccessFile(progressFile(stateDir), "rw");
        ByteBuffer word = ByteBuffer.allocate(8);
        // The commit resumed from is durable and seen: record it before the first commit, so
        // that a kill right after that commit (durable, not yet recorded) finds at most one
        // commit past the record. Without it the record still held the killed predecessor's
        // last report, which a kill in the middle of its commit leaves one behind.
        progress.write(word.putLong(0, n).array(), 0, 8);
        while (written < maxBatches) {
            n++;
            Map<Bytes, byte[]> batch = new TreeMap<>();
            apply(n, batch);
            for (Map.Entry<Bytes, byte[]> e : batch.entrySet()) {
                store.put(e.getKey(), e.getValue());
            }
            store.commit(Collections.singletonMap(CHANGELOG, n));
            word.clear();
            word.putLong(n);
            progress.seek(0);
            progress.write(word.array(), 0, 8); // one write(2): all or nothing under SIGKILL
            out.println("COMMITTED " + n);
            out.flush();
            written++;
        }
        store.close();
        progress.close();
    }

    /** @return the file recording the last commit the child saw return */
    public static File progressFile(File stateDir) {
        return new File(stateDir, "progress");
    }

    /** @return the last commit the child reported durable, or 0 */
    public static long lastReported(File stateDir) throws java.io.IOException {
        File f = progressFile(stateDir);
        if (!f.exists() || f.length() < 8) {
            return 0;
        }
        try (RandomAccessFile r = new RandomAccessFile(f, "r")) {
            return r.readLong();
        }
    }
}
