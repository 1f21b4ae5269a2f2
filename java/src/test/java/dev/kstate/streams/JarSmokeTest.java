package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import dev.kstate.internal.NativeLoader;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.Assume;
import org.junit.Test;

/**
 * The built jar works on its own: a child JVM whose classpath has the jar instead of
 * build/classes/java/main and build/resources/main loads libkstate from the jar resource,
 * deletes the extracted temp file, and runs a store. The jar's manifest names its module.
 */
public class JarSmokeTest {
    /** Runs in the child JVM. */
    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        KeyValueBytesStoreSupplier supplier = KstateStores.persistentKeyValueStore("smoke");
        // Declaring a store starts loading the library in the background (NativeLoader.preload):
        // it is there before anything opens a store.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (NativeLoader.loadedFrom() == null && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        System.out.println("loadedBeforeInit=" + (NativeLoader.loadedFrom() != null));
        KeyValueStore<Bytes, byte[]> store = supplier.get();
        store.init(new TestSupport.CapturingContext(TestSupport.props("smoke", dir), dir), store);
        store.put(Bytes.wrap("k".getBytes(StandardCharsets.UTF_8)), "v".getBytes(StandardCharsets.UTF_8));
        TopicPartition tp = new TopicPartition("smoke-changelog", 0);
        store.commit(Collections.singletonMap(tp, 1L));
        System.out.println("committed=" + store.committedOffset(tp));
        store.close();
        System.out.println("loadedFrom=" + NativeLoader.loadedFrom());
        System.out.println("codeSource=" + KstateStores.class.getProtectionDomain().getCodeSource().getLocation().getPath());
        // this JVM's own java.io.tmpdir: the private copy (and its temporary name) must be gone
        String[] left = new File(System.getProperty("java.io.tmpdir")).list((d, name) -> name.contains("libkstate"));
        System.out.println("tempFilesLeft=" + (left == null ? 0 : left.length));
    }

    @Test
    public void theJarLoadsItsOwnNativeLibrary() throws Exception {
        String jar = System.getProperty("kstate.jar");
        Assume.assumeTrue("kstate.jar not set (run through gradle)", jar != null && new File(jar).isFile());
        List<String> cp = new ArrayList<>();
        cp.add(jar);
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String norm = entry.replace('\\', '/');
            if (!norm.contains("build/classes/java/main") && !norm.contains("build/resources/main")) {
                cp.add(entry);
            }
        }
        File dir = TestSupport.tempDir("smoke");
        try {
            List<String> cmd = new ArrayList<>();
            cmd.add(System.getProperty("java.home") + "/bin/java");
            cmd.add("-Xcheck:jni");
            File tmp = new File(dir, "tmp");
            assertTrue(tmp.mkdirs());
            cmd.add("-Djava.io.tmpdir=" + tmp.getAbsolutePath());
            cmd.add("-cp");
            cmd.add(String.join(File.pathSeparator, cp));
            cmd.add(JarSmokeTest.class.getName());
            cmd.add(dir.getAbsolutePath());
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertEquals(out, 0, p.exitValue());
            assertTrue(out, out.contains("loadedBeforeInit=true"));
            assertTrue(out, out.contains("committed=1"));
            assertTrue(out, out.contains("loadedFrom=jar resource /native/linux-x86_64/libkstate.so"));
            assertTrue(out, out.contains("codeSource=" + new File(jar).getAbsolutePath()));
            assertTrue(out, out.contains("tempFilesLeft=0"));
            try (java.util.jar.JarFile jf = new java.util.jar.JarFile(jar)) {
                java.util.jar.Attributes main = jf.getManifest().getMainAttributes();
                assertEquals("dev.kstate.streams", main.getValue("Automatic-Module-Name"));
                assertEquals(System.getProperty("kstate.version"), main.getValue("Implementation-Version"));
                assertTrue(jf.getEntry("native/index.txt") != null);
                // stored, so that extracting it at start-up costs no inflation
                assertEquals(java.util.zip.ZipEntry.STORED, jf.getEntry("native/linux-x86_64/libkstate.so").getMethod());
                assertTrue(jf.getEntry("dev/kstate/internal/kstate.properties") != null);
            }
            assertTrue("no -Xcheck:jni warnings: " + out, !out.contains("WARNING"));
        } catch (IOException e) {
            throw e;
        } finally {
            TestSupport.deleteTree(dir);
        }
    }
}
