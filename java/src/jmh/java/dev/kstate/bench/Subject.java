package dev.kstate.bench;

import dev.kstate.streams.KstateStores;
import dev.kstate.streams.TestSupport;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.internals.InternalProcessorContext;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.apache.kafka.streams.processor.internals.StateRestoreCallbackAdapter;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * One store under test, built as a Kafka Streams user builds it:
 * {@code Stores.timestampedKeyValueStoreBuilder(supplier, Bytes, byte[]).withLoggingDisabled()
 * .withCachingDisabled()}, initialised by a real {@code StateStoreContext} (a
 * {@code MockProcessorContext}'s, which also captures the restore callback the store registers).
 *
 * <p>Variants: {@code kstate-rocksdb}, {@code kstate-memory} (kstate's suppliers),
 * {@code kafka-rocksdb} and {@code kafka-rocksdb-txn} (Kafka 4.4's RocksDB timestamped store,
 * {@code enable.transactional.statestores} off and on), {@code kafka-memory} (Kafka's in-memory
 * store).
 */
public final class Subject implements AutoCloseable {
    /** The changelog partition of the stores (restore offsets, commits). */
    public static final TopicPartition CHANGELOG = new TopicPartition("bench-store-changelog", 0);
    /** The store's name (and directory name). */
    public static final String NAME = "store";
    /** Bytes per value, before Kafka's 8-byte timestamp. */
    public static final int VALUE_BYTES = 100;

    /** The variant name. */
    public final String variant;
    /** The task directory the store lives under. */
    public final File stateDir;
    /** The store, as the processor sees it. */
    public final TimestampedKeyValueStore<Bytes, byte[]> store;
    private final TestSupport.CapturingContext context;

    private Subject(String variant, File stateDir) {
        this.variant = variant;
        this.stateDir = stateDir;
        Properties props = TestSupport.props("bench", stateDir);
        if (variant.equals("kafka-rocksdb-txn")) {
            props.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, "true");
        }
        this.store = Stores.timestampedKeyValueStoreBuilder(supplier(variant), Serdes.Bytes(), Serdes.ByteArray())
            .withLoggingDisabled()
            .withCachingDisabled()
            .build();
        this.context = new TestSupport.CapturingContext(props, stateDir);
        store.init(internal(context), store);
    }

    /**
     * The context as Kafka's metered store layer needs it: Kafka's {@code MeteredKeyValueStore}
     * casts its context to the internal {@code InternalProcessorContext}, which only Kafka's
     * runtime implements. This facade answers every {@link StateStoreContext} method from the
     * MockProcessorContext's state store context (restore-callback registration included) and
     * refuses the rest, which a store built without logging and caching never calls.
     */
    private static final org.apache.kafka.common.header.Headers NO_HEADERS =
        new org.apache.kafka.common.header.internals.RecordHeaders();

    private static StateStoreContext internal(StateStoreContext context) {
        InvocationHandler handler = (proxy, method, args) -> {
            if (method.getDeclaringClass() == Object.class) {
                switch (method.getName()) {
                    case "equals":
                        return proxy == args[0];
                    case "hashCode":
                        return System.identityHashCode(proxy);
                    default:
                        return "benchmark context over " + context;
                }
            }
            if (method.getName().equals("headers") && method.getParameterCount() == 0) {
                // the current record's headers, handed to the serdes: no record is being processed
                return NO_HEADERS;
            }
            if (method.getName().equals("changelogFor")) {
                // the topic Kafka would name the store's changelog (its serdes get it as their topic)
                return context.applicationId() + "-" + args[0] + "-changelog";
            }
            Method target;
            try {
                target = StateStoreContext.class.getMethod(method.getName(), method.getParameterTypes());
            } catch (NoSuchMethodException e) {
                throw new UnsupportedOperationException("the benchmark's context does not support " + method);
            }
            try {
                return target.invoke(context, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        return (StateStoreContext) Proxy.newProxyInstance(Subject.class.getClassLoader(),
            new Class<?>[] {InternalProcessorContext.class}, handler);
    }

    /** Opens (creating if absent) the variant's store under {@code stateDir}. */
    public static Subject open(String variant, File stateDir) {
        return new Subject(variant, stateDir);
    }

    private static KeyValueBytesStoreSupplier supplier(String variant) {
        switch (variant) {
            case "kstate-rocksdb":
                return KstateStores.persistentTimestampedKeyValueStore(NAME);
            case "kstate-memory":
                return KstateStores.inMemoryTimestampedKeyValueStore(NAME);
            case "kafka-rocksdb":
            case "kafka-rocksdb-txn":
                return Stores.persistentTimestampedKeyValueStore(NAME);
            case "kafka-memory":
                return Stores.inMemoryKeyValueStore(NAME);
            default:
                throw new IllegalArgumentException("unknown variant " + variant
                    + " (kstate-rocksdb, kstate-memory, kafka-rocksdb, kafka-rocksdb-txn, kafka-memory)");
        }
    }

    /** @return true for the variants that keep their data on disk */
    public static boolean persistent(String variant) {
        return variant.endsWith("rocksdb") || variant.endsWith("rocksdb-txn");
    }

    /** Commits the store with {@code offset} as the changelog offset, as ProcessorStateManager does. */
    public void commit(long offset) {
        ((StateStore) store).commit(Collections.singletonMap(CHANGELOG, offset));
    }

    /** @return the batching restore callback the store registered in init, as Kafka hands batches to it */
    public RecordBatchingStateRestoreCallback restorer() {
        return StateRestoreCallbackAdapter.adapt(context.restoreCallback);
    }

    @Override
    public void close() {
        store.close();
    }

    // ----- data --------------------------------------------------------------------------------

    /** @return key {@code i}: 12 bytes, ordered as {@code i} */
    public static Bytes key(int i) {
        return Bytes.wrap(String.format("k%011d", i).getBytes(StandardCharsets.US_ASCII));
    }

    /** @return a key that sorts among the keys but is none of them */
    public static Bytes absentKey(int i) {
        return Bytes.wrap(String.format("k%011dx", i).getBytes(StandardCharsets.US_ASCII));
    }

    /** @return {@code n} pseudo-random values of {@link #VALUE_BYTES} bytes */
    public static byte[][] values(int n, long seed) {
        Random rnd = new Random(seed);
        byte[][] out = new byte[n][VALUE_BYTES];
        for (byte[] v : out) {
            rnd.nextBytes(v);
        }
        return out;
    }

    /** Writes keys 0..n-1 in batches of 1,000 (putAll + commit), as a loaded store. */
    public void load(Bytes[] keys, byte[][] values) {
        List<KeyValue<Bytes, ValueAndTimestamp<byte[]>>> batch = new ArrayList<>(1000);
        long offset = 0;
        for (int i = 0; i < keys.length; i++) {
            batch.add(KeyValue.pair(keys[i], ValueAndTimestamp.make(values[i % values.length], i)));
            if (batch.size() == 1000 || i == keys.length - 1) {
                store.putAll(batch);
                commit(offset++);
                batch.clear();
            }
        }
    }

    /** @return {@code n} changelog records (keys 0..n-1 in a shuffled order) in batches of 1,000 */
    public static List<List<ConsumerRecord<byte[], byte[]>>> changelog(int n, long seed) {
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Random rnd = new Random(seed);
        for (int i = n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        byte[][] values = values(1024, seed);
        List<List<ConsumerRecord<byte[], byte[]>>> batches = new ArrayList<>();
        List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>(1000);
        for (int offset = 0; offset < n; offset++) {
            byte[] raw = ByteBuffer.allocate(8 + VALUE_BYTES).putLong(offset).put(values[offset % values.length]).array();
            batch.add(new ConsumerRecord<>(CHANGELOG.topic(), CHANGELOG.partition(), offset, key(order[offset]).get(), raw));
            if (batch.size() == 1000) {
                batches.add(batch);
                batch = new ArrayList<>(1000);
            }
        }
        if (!batch.isEmpty()) {
            batches.add(batch);
        }
        return batches;
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

    /** @return the keys 0..n-1 */
    public static Bytes[] keys(int n) {
        Bytes[] keys = new Bytes[n];
        for (int i = 0; i < n; i++) {
            keys[i] = key(i);
        }
        return keys;
    }

    /** @return the number of keys of the loaded stores ({@code -Pkeys}, default 1,000,000) */
    public static int keyCount() {
        return Integer.getInteger("kstate.bench.keys", 1_000_000);
    }
}
