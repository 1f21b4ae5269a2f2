package dev.kstate.bench;

import dev.kstate.streams.TestSupport;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collections;
import java.util.Properties;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.apache.kafka.streams.processor.internals.StateRestoreCallbackAdapter;

/**
 * What every store under test shares, whatever its kind (key-value {@link Subject}, window
 * {@link WindowSubject}, session {@link SessionSubject}): the variant's configuration, the
 * {@code StateStoreContext} it is initialised with (a {@code MockProcessorContext}'s, behind
 * the {@code InternalProcessorContext} facade Kafka's metered layers need, capturing the restore
 * callback the store registers), commits through {@link StateStore#commit} as
 * ProcessorStateManager makes them, and the data and directory helpers of the suite.
 *
 * <p>Variants: {@code kstate-rocksdb}, {@code kstate-memory} (kstate's suppliers),
 * {@code kafka-rocksdb} and {@code kafka-rocksdb-txn} (Kafka 4.4's RocksDB stores,
 * {@code enable.transactional.statestores} off and on), {@code kafka-memory} (Kafka's in-memory
 * stores).
 */
public abstract class BenchStore implements AutoCloseable {
    /** The changelog partition of the stores (restore offsets, commits). */
    public static final TopicPartition CHANGELOG = new TopicPartition("bench-store-changelog", 0);
    /** The store's name (and directory name). */
    public static final String NAME = "store";
    /** Bytes per value, before Kafka's 8-byte timestamp. */
    public static final int VALUE_BYTES = 100;
    /** Every variant, for the messages of {@link #unknownVariant}. */
    static final String VARIANTS = "kstate-rocksdb, kstate-memory, kafka-rocksdb, kafka-rocksdb-txn, kafka-memory";

    /** The variant name. */
    public final String variant;
    /** The task directory the store lives under. */
    public final File stateDir;
    private final StateStore root;
    private final TestSupport.CapturingContext context;

    /**
     * Initialises {@code root} (the outermost layer of a built store) as a task would.
     *
     * @param variant the variant ({@code kafka-rocksdb-txn} turns transactional state stores on)
     * @param stateDir the task directory
     * @param root the built, uninitialised store
     */
    protected BenchStore(String variant, File stateDir, StateStore root) {
        this(variant, stateDir, root, null);
    }

    /**
     * Initialises {@code root} as a task of an application whose {@code rocksdb.config.setter}
     * is {@code configSetter} ({@code null}: none).
     *
     * @param variant the variant ({@code kafka-rocksdb-txn} turns transactional state stores on)
     * @param stateDir the task directory
     * @param root the built, uninitialised store
     * @param configSetter the application's {@code RocksDBConfigSetter} class, or {@code null}
     */
    protected BenchStore(String variant, File stateDir, StateStore root, Class<?> configSetter) {
        this.variant = variant;
        this.stateDir = stateDir;
        this.root = root;
        Properties props = TestSupport.props("bench", stateDir);
        if (variant.equals("kafka-rocksdb-txn")) {
            props.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, "true");
        }
        if (configSetter != null) {
            props.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, configSetter);
        }
        this.context = new TestSupport.CapturingContext(props, stateDir);
        root.init(TestSupport.internalContext(context), root);
    }

    /** @return the exception for a variant no store kind knows */
    static IllegalArgumentException unknownVariant(String variant) {
        return new IllegalArgumentException("unknown variant " + variant + " (" + VARIANTS + ")");
    }

    /** @return true for the variants that keep their data on disk */
    public static boolean persistent(String variant) {
        return variant.endsWith("rocksdb") || variant.endsWith("rocksdb-txn");
    }

    /** Commits the store with {@code offset} as the changelog offset, as ProcessorStateManager does. */
    public void commit(long offset) {
        root.commit(Collections.singletonMap(CHANGELOG, offset));
    }

    /** @return the batching restore callback the store registered in init, as Kafka hands batches to it */
    public RecordBatchingStateRestoreCallback restorer() {
        return StateRestoreCallbackAdapter.adapt(context.restoreCallback);
    }

    @Override
    public void close() {
        root.close();
    }

    // ----- data --------------------------------------------------------------------------------

    /** @return {@code n} pseudo-random values of {@link #VALUE_BYTES} bytes */
    public static byte[][] values(int n, long seed) {
        Random rnd = new Random(seed);
        byte[][] out = new byte[n][VALUE_BYTES];
        for (byte[] v : out) {
            rnd.nextBytes(v);
        }
        return out;
    }

    /** @return the number of keys of the loaded stores ({@code -Pkeys}, default 1,000,000) */
    public static int keyCount() {
        return Integer.getInteger("kstate.bench.keys", 1_000_000);
    }

    /**
     * Waits until the process is nearly idle (under 10% of a core over half a second, at
     * most 60 s): after a load, RocksDB's flushes and compactions would otherwise run during
     * the first measured operations and be charged to them (process CPU time counts every
     * thread), by however far each store happens to be behind.
     */
    public static void settle() throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        long before = Cpu.processNs();
        while (System.nanoTime() < deadline) {
            Thread.sleep(500);
            long now = Cpu.processNs();
            if (now - before < 50_000_000L) {
                return;
            }
            before = now;
        }
    }

    /**
     * A cheap pseudo-random sequence (an LCG), so that choosing keys and times costs next to
     * nothing next to the operation measured.
     */
    public static final class Picker {
        private long next;

        /** @return a pseudo-random index in [0, n) */
        public int pick(int n) {
            next = next * 6364136223846793005L + 1442695040888963407L;
            return (int) ((next >>> 33) % n);
        }
    }

    // ----- directories -------------------------------------------------------------------------

    /** @return a fresh directory under the benchmark directory */
    public static File freshDir(String prefix) throws IOException {
        File base = new File(System.getProperty("kstate.bench.dir", System.getProperty("java.io.tmpdir")));
        Files.createDirectories(base.toPath());
        return Files.createTempDirectory(base.toPath(), prefix).toFile();
    }

    /** Copies a directory tree (a closed or killed store) to {@code to}. */
    public static void copyTree(File from, File to) throws IOException {
        Path src = from.toPath();
        try (Stream<Path> paths = Files.walk(src)) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                Path target = to.toPath().resolve(src.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else if (!p.getFileName().toString().equals("LOCK") && !p.getFileName().toString().endsWith(".lock")) {
                    Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }
}
