package dev.kstate.streams;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.StreamsMetrics;
import org.apache.kafka.streams.processor.CommitCallback;
import org.apache.kafka.streams.processor.StateRestoreCallback;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.processor.internals.InternalProcessorContext;
import org.apache.kafka.streams.state.KeyValueIterator;

/** Helpers shared by the tests and the crash child. */
public final class TestSupport {
    /** The kstate CLI the tests run: {@code -Dkstate.cli}, or the release build's. */
    static String kstateCli() {
        return System.getProperty("kstate.cli", "../target/release/kstate");
    }

    /**
     * The process the kill tests SIGKILL (crash-worker): {@code -Dkstate.test.worker}, or the
     * release build's {@code kstate-test-worker} (tests/support/worker.rs, not shipped).
     */
    static String kstateTestWorker() {
        return System.getProperty("kstate.test.worker", "../target/release/kstate-test-worker");
    }

    /**
     * Runs the kstate CLI with {@code args} and returns what it printed (standard output and
     * error), asserting that it finishes within two minutes with {@code expectedExit}.
     */
    static String runCli(int expectedExit, String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(kstateCli());
        cmd.addAll(java.util.Arrays.asList(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        org.junit.Assert.assertTrue("kstate " + String.join(" ", args) + " finishes",
            p.waitFor(120, java.util.concurrent.TimeUnit.SECONDS));
        org.junit.Assert.assertEquals("kstate " + String.join(" ", args) + ":\n" + out, expectedExit, p.exitValue());
        return out;
    }

    private TestSupport() {
    }

    private static final org.apache.kafka.common.header.Headers NO_HEADERS =
        new org.apache.kafka.common.header.internals.RecordHeaders();

    /**
     * The context as Kafka's metered store layer needs it: Kafka's metered stores cast their
     * context to the internal {@code InternalProcessorContext}, which only Kafka's runtime
     * implements. This facade answers every {@link StateStoreContext} method from the
     * MockProcessorContext's state store context (restore-callback registration included) and
     * refuses the rest, which a store built without logging and caching never calls.
     */
    public static StateStoreContext internalContext(StateStoreContext context) {
        InvocationHandler handler = (proxy, method, args) -> {
            if (method.getDeclaringClass() == Object.class) {
                switch (method.getName()) {
                    case "equals":
                        return proxy == args[0];
                    case "hashCode":
                        return System.identityHashCode(proxy);
                    default:
                        return "test context over " + context;
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
                throw new UnsupportedOperationException("the test context does not support " + method);
            }
            try {
                return target.invoke(context, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        return (StateStoreContext) Proxy.newProxyInstance(TestSupport.class.getClassLoader(),
            new Class<?>[] {InternalProcessorContext.class}, handler);
    }

    /** @return a fresh temp directory under build/test-tmp (or the system temp dir) */
    public static File tempDir(String prefix) throws IOException {
        String base = System.getProperty("kstate.test.tmp");
        if (base != null) {
            File b = new File(base);
            b.mkdirs();
            return Files.createTempDirectory(b.toPath(), prefix).toFile();
        }
        return Files.createTempDirectory(prefix).toFile();
    }

    /**
     * Deletes a directory tree, best effort: a file that vanishes during the walk (an open
     * store's RocksDB background thread deleting an obsolete table file) ends this attempt
     * quietly, and callers that need the tree gone call again until it is.
     */
    public static void deleteTree(File dir) {
        if (dir == null || !dir.exists()) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir.toPath())) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // best effort
        }
    }

    /**
     * The command line of a child JVM running this JVM's classpath and native library path
     * under {@code -Xcheck:jni}; the caller appends the main class and its arguments.
     *
     * @param jvmOptions further JVM options (heap, GC)
     * @return the command, ready for more arguments
     */
    /**
     * System property: {@code true} starts child JVMs as production JVMs (no {@code -Xcheck:jni},
     * full JIT, the default collector), for benchmarks measuring them.
     */
    public static final String BENCHMARK_CHILDREN = "kstate.child.benchmark";

    public static List<String> childJvm(String... jvmOptions) {
        List<String> cmd = new ArrayList<>();
        cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        // a benchmark's children run as production JVMs do: no JNI checks, both JIT tiers
        boolean benchmark = Boolean.getBoolean(BENCHMARK_CHILDREN);
        if (!benchmark) {
            cmd.add("-Xcheck:jni");
        }
        cmd.addAll(java.util.Arrays.asList(jvmOptions));
        if (!benchmark) {
            cmd.add("-XX:TieredStopAtLevel=1");
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        String libPath = System.getProperty("java.library.path");
        if (libPath != null) {
            cmd.add("-Djava.library.path=" + libPath);
        }
        return cmd;
    }

    /**
     * Runs {@code mainClass} with {@code args} in a child JVM ({@link #childJvm}, 256 MB heap) that prints
     * {@code PIPED <n>} lines as it goes, kills it with SIGKILL mid-stream once it reported {@code atLeast} (or
     * after 120 s), and checks that it died of the SIGKILL having reported that many: the kill tests' child harness.
     *
     * @param mainClass the child's main class
     * @param atLeast the count to wait for
     * @param args the child's arguments
     * @return the last count the child reported
     * @throws Exception when the child cannot be started or waited for
     */
    public static long killAfterPiped(Class<?> mainClass, long atLeast, String... args) throws Exception {
        List<String> cmd = childJvm("-Xmx256m");
        cmd.add(mainClass.getName());
        cmd.addAll(java.util.Arrays.asList(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        Process child = pb.start();
        long piped = 0;
        try (java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(
                child.getInputStream(), java.nio.charset.StandardCharsets.UTF_8))) {
            String line;
            long deadline = System.currentTimeMillis() + 120_000;
            while (piped < atLeast && System.currentTimeMillis() < deadline && (line = r.readLine()) != null) {
                if (line.startsWith("PIPED ")) {
                    piped = Long.parseLong(line.substring(6).trim());
                }
            }
            child.destroyForcibly(); // SIGKILL, mid-stream
            org.junit.Assert.assertTrue("the child died", child.waitFor(30, java.util.concurrent.TimeUnit.SECONDS));
        }
        org.junit.Assert.assertEquals("killed by SIGKILL", 137, child.exitValue());
        org.junit.Assert.assertTrue("the child piped " + piped, piped >= atLeast);
        return piped;
    }

    /** Streams properties for a test application. */
    public static Properties props(String appId, File stateDir) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.getAbsolutePath());
        return p;
    }

    /** Every entry of an iterator, closing it. */
    public static List<KeyValue<Bytes, byte[]>> drain(KeyValueIterator<Bytes, byte[]> it) {
        List<KeyValue<Bytes, byte[]>> out = new ArrayList<>();
        try (KeyValueIterator<Bytes, byte[]> i = it) {
            while (i.hasNext()) {
                out.add(i.next());
            }
        }
        return out;
    }

    /**
     * A StateStoreContext over a MockProcessorContext that captures the registered restore
     * callback and lets the test set record metadata.
     */
    public static final class CapturingContext implements StateStoreContext {
        public final MockProcessorContext<Object, Object> mock;
        private final StateStoreContext inner;
        public volatile StateRestoreCallback restoreCallback;

        public CapturingContext(Properties props, File stateDir) {
            this.mock = new MockProcessorContext<>(props, new TaskId(0, 0), stateDir);
            this.inner = mock.getStateStoreContext();
        }

        public void setRecordMetadata(String topic, int partition, long offset) {
            mock.setRecordMetadata(topic, partition, offset);
        }

        @Override
        public String applicationId() {
            return inner.applicationId();
        }

        @Override
        public TaskId taskId() {
            return inner.taskId();
        }

        @Override
        public Optional<RecordMetadata> recordMetadata() {
            return mock.recordMetadata();
        }

        @Override
        public Serde<?> keySerde() {
            return inner.keySerde();
        }

        @Override
        public Serde<?> valueSerde() {
            return inner.valueSerde();
        }

        @Override
        public File stateDir() {
            return inner.stateDir();
        }

        @Override
        public StreamsMetrics metrics() {
            return inner.metrics();
        }

        @Override
        public void register(StateStore store, StateRestoreCallback callback) {
            this.restoreCallback = callback;
        }

        @Override
        public void register(StateStore store, StateRestoreCallback callback, CommitCallback commitCallback) {
            this.restoreCallback = callback;
        }

        @Override
        public Map<String, Object> appConfigs() {
            return inner.appConfigs();
        }

        @Override
        public Map<String, Object> appConfigsWithPrefix(String prefix) {
            return inner.appConfigsWithPrefix(prefix);
        }
    }
}
