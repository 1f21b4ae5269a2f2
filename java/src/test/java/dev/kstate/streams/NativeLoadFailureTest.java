package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** A native library that cannot be loaded, seen from a child JVM without libkstate. */
public class NativeLoadFailureTest {
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("noload");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** Runs in a child JVM whose classpath has no libkstate: two opens, two clear errors. */
    public static void main(String[] args) {
        File dir = new File(args[0]);
        for (int attempt = 1; attempt <= 2; attempt++) {
            try {
                KeyValueStore<Bytes, byte[]> store = KstateStores.inMemoryKeyValueStore("nolib").get();
                store.init(new TestSupport.CapturingContext(TestSupport.props("nolib", dir), dir), store);
                System.out.println("attempt " + attempt + ": opened?!");
            } catch (Throwable t) {
                System.out.println("attempt " + attempt + ": " + t.getClass().getName() + ": " + t.getMessage());
            }
        }
    }

    /**
     * A library that cannot be loaded stays a clear UnsatisfiedLinkError on every later call,
     * not "NoClassDefFoundError: Could not initialize class" from the second call on.
     */
    @Test
    public void aMissingNativeLibraryIsAClearErrorOnEveryCall() throws Exception {
        List<String> cp = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String norm = entry.replace('\\', '/');
            if (!norm.contains("build/resources/main")) {
                cp.add(entry); // classes and dependencies, without the native resource
            }
        }
        List<String> cmd = new ArrayList<>();
        cmd.add(System.getProperty("java.home") + "/bin/java");
        cmd.add("-Djava.library.path=" + dir.getAbsolutePath());
        cmd.add("-cp");
        cmd.add(String.join(File.pathSeparator, cp));
        cmd.add(NativeLoadFailureTest.class.getName());
        cmd.add(dir.getAbsolutePath());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(out, 0, p.exitValue());
        for (int attempt = 1; attempt <= 2; attempt++) {
            String expected = "attempt " + attempt + ": java.lang.UnsatisfiedLinkError: kstate: the jar has no "
                + "/native/linux-x86_64/libkstate.so and java.library.path has no libkstate";
            assertTrue(out, out.contains(expected));
        }
        assertTrue(out, !out.contains("NoClassDefFoundError"));
    }
}
