package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Kafka's documented bounded-memory setter keeps its block cache and write-buffer manager in
 * static fields, so loading the class creates RocksJava objects. In an application whose
 * stores are all kstate's, nothing has loaded RocksJava's native library when kstate first
 * instantiates the setter: kstate must load it first, or the class fails to initialise
 * ({@code UnsatisfiedLinkError}). Runs in a child JVM, where no Kafka store has loaded it, with
 * {@link LoggingAndConfigTest.BoundedMemorySetter}, which keeps its cache in static fields.
 */
public class StaticSetterFirstStoreTest {
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("static-setter");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** In the child JVM: the first store of the process is a kstate store under that setter. */
    public static void main(String[] args) {
        File dir = new File(args[0]);
        Properties props = TestSupport.props("static-setter", dir);
        // As Kafka's documentation configures it: the class itself, which StreamsConfig does not
        // initialise (a class name would be initialised by StreamsConfig's parsing, for Kafka's
        // stores as for kstate's).
        props.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, LoggingAndConfigTest.BoundedMemorySetter.class);
        try {
            KeyValueStore<Bytes, byte[]> store = KstateStores.persistentKeyValueStore("s").get();
            store.init(new TestSupport.CapturingContext(props, dir), store);
            store.put(Bytes.wrap(new byte[] {1}), new byte[] {2});
            byte[] back = store.get(Bytes.wrap(new byte[] {1}));
            store.close();
            System.out.println("opened, read " + back[0]);
        } catch (Throwable t) {
            System.out.println("failed: " + t);
            t.printStackTrace(System.out);
        }
    }

    @Test
    public void aSetterWithStaticRocksJavaObjectsWorksOnTheFirstStore() throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(System.getProperty("java.home") + "/bin/java");
        cmd.add("-Xcheck:jni");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(StaticSetterFirstStoreTest.class.getName());
        cmd.add(dir.getAbsolutePath());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue("child did not exit", p.waitFor(2, TimeUnit.MINUTES));
        assertEquals(out, 0, p.exitValue());
        assertTrue(out, out.contains("opened, read 2"));
    }
}
