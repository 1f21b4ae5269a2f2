package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import dev.kstate.internal.NativeLoader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.After;
import org.junit.Assume;
import org.junit.Before;
import org.junit.Test;

/**
 * How the loader finds, extracts, checks and fails to load libkstate, each case in a child JVM
 * (a JVM loads the library once): a classpath without the library, a platform the jar lacks,
 * a chosen extraction directory, a library of another version, a noexec directory.
 */
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

    /** Runs in a child JVM: two opens, each printing its outcome, then where the library came from. */
    public static void main(String[] args) {
        File dir = new File(args[0]);
        for (int attempt = 1; attempt <= 2; attempt++) {
            try {
                KeyValueStore<Bytes, byte[]> store = KstateStores.inMemoryKeyValueStore("nolib").get();
                store.init(new TestSupport.CapturingContext(TestSupport.props("nolib", dir), dir), store);
                store.put(Bytes.wrap(new byte[] {1}), new byte[] {2});
                store.close();
                System.out.println("attempt " + attempt + ": opened");
            } catch (Throwable t) {
                System.out.println("attempt " + attempt + ": " + t.getClass().getName() + ": " + t.getMessage());
            }
        }
        System.out.println("loadedFrom=" + NativeLoader.loadedFrom());
    }

    /** The test JVM's classpath without the entries {@code drop} matches. */
    private static List<String> classpath(Predicate<String> drop) {
        List<String> cp = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!drop.test(entry.replace('\\', '/'))) {
                cp.add(entry);
            }
        }
        return cp;
    }

    /** Runs {@link #main} in a child JVM; returns its output, after checking it exited normally. */
    private String runChild(List<String> prefix, List<String> jvmArgs, List<String> cp) throws Exception {
        List<String> cmd = new ArrayList<>(prefix);
        cmd.add(System.getProperty("java.home") + "/bin/java");
        cmd.add("-Xcheck:jni");
        cmd.addAll(jvmArgs);
        cmd.add("-cp");
        cmd.add(String.join(File.pathSeparator, cp));
        cmd.add(NativeLoadFailureTest.class.getName());
        cmd.add(new File(dir, "state").getAbsolutePath());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(out, p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(out, 0, p.exitValue());
        assertFalse(out, out.contains("NoClassDefFoundError"));
        return out;
    }

    private String runChild(List<String> jvmArgs) throws Exception {
        return runChild(Collections.emptyList(), jvmArgs, classpath(e -> false));
    }

    /** Both attempts failed with an UnsatisfiedLinkError containing {@code expected}. */
    private static void assertFailsTwice(String out, String expected) {
        for (int attempt = 1; attempt <= 2; attempt++) {
            assertTrue(out, out.contains("attempt " + attempt + ": java.lang.UnsatisfiedLinkError: " + expected));
        }
    }

    /**
     * A library that cannot be loaded stays a clear UnsatisfiedLinkError on every later call,
     * not "NoClassDefFoundError: Could not initialize class" from the second call on.
     */
    @Test
    public void aMissingNativeLibraryIsAClearErrorOnEveryCall() throws Exception {
        // classes and dependencies, without the resources (the library, its index, the version)
        List<String> cp = classpath(e -> e.contains("build/resources/main"));
        String out = runChild(Collections.emptyList(),
            Collections.singletonList("-Djava.library.path=" + dir.getAbsolutePath()), cp);
        assertFailsTwice(out, "kstate: this kstate-streams jar has no native library for platform linux-x86_64");
        assertTrue(out, out.contains("it has: none"));
        assertTrue(out, out.contains("java.library.path has none either"));
    }

    /** On a platform the jar lacks, the error names the platform and the ones the jar has. */
    @Test
    public void aPlatformTheJarLacksIsNamedWithTheOnesItHas() throws Exception {
        assertEquals(Collections.singletonList("linux-x86_64"), NativeLoader.availablePlatforms());
        String out = runChild(Arrays.asList("-Dos.arch=aarch64"));
        assertFailsTwice(out, "kstate: this kstate-streams jar has no native library for platform linux-aarch64"
            + " (os.name Linux, os.arch aarch64); it has: linux-x86_64.");
        out = runChild(Arrays.asList("-Dos.name=Mac OS X", "-Dos.arch=aarch64"));
        assertFailsTwice(out, "kstate: this kstate-streams jar has no native library for platform macos-aarch64");
        assertTrue(out, out.contains("it has: linux-x86_64"));
    }

    /**
     * A damaged library in the jar (here a truncated copy listed with the whole file's
     * checksums) fails its CRC-32 check with a message saying so, on every call, and leaves no
     * temporary file; an index of an older jar, without the CRC-32 column, still loads its
     * library, checked with the SHA-256 (and refuses a damaged one the same way).
     */
    @Test
    public void aDamagedLibraryFailsItsChecksumAndAnOlderIndexStillLoads() throws Exception {
        byte[] lib;
        try (InputStream in = NativeLoadFailureTest.class.getResourceAsStream("/native/linux-x86_64/libkstate.so")) {
            lib = in.readAllBytes();
        }
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(lib);
        String crc32 = String.format("%08x", crc.getValue());
        String sha = resourceSha256();
        Path tmp = dir.toPath().resolve("tmp");
        Files.createDirectories(tmp);
        List<String> jvm = Collections.singletonList("-Djava.io.tmpdir=" + tmp);
        String[][] cases = {
            // index line, library bytes, expected outcome
            {"linux-x86_64 libkstate.so " + sha + " " + crc32, "truncated", "has CRC-32 "},
            {"linux-x86_64 libkstate.so " + sha, "truncated", "has SHA-256 "},
            {"linux-x86_64 libkstate.so " + sha, "whole", null},
            {"linux-x86_64 libkstate.so " + sha + " " + crc32, "whole", null},
        };
        int n = 0;
        for (String[] c : cases) {
            // resources of a jar built otherwise: the index, the library and the version file
            Path res = dir.toPath().resolve("res" + n++);
            Files.createDirectories(res.resolve("native/linux-x86_64"));
            Files.createDirectories(res.resolve("dev/kstate/internal"));
            Files.write(res.resolve("native/index.txt"), ("# platform file sha256 crc32\n" + c[0] + "\n")
                .getBytes(StandardCharsets.UTF_8));
            Files.write(res.resolve("native/linux-x86_64/libkstate.so"), c[1].equals("whole") ? lib
                : Arrays.copyOf(lib, lib.length / 2));
            try (InputStream in = getClass().getResourceAsStream("/dev/kstate/internal/kstate.properties")) {
                Files.write(res.resolve("dev/kstate/internal/kstate.properties"), in.readAllBytes());
            }
            List<String> cp = new ArrayList<>();
            cp.add(res.toString());
            cp.addAll(classpath(e -> e.contains("build/resources/main")));
            String out = runChild(Collections.emptyList(), jvm, cp);
            if (c[2] == null) {
                assertTrue(c[0] + ": " + out, out.contains("attempt 1: opened"));
                assertTrue(out, out.contains("loadedFrom=jar resource /native/linux-x86_64/libkstate.so\n"));
            } else {
                assertFailsTwice(out, "kstate: cannot extract /native/linux-x86_64/libkstate.so to " + tmp);
                assertTrue(out, out.contains(c[2]) && out.contains("(a damaged jar?)"));
            }
            assertEquals("no file left in java.io.tmpdir", 0, tmp.toFile().list().length);
        }
    }

    /** The SHA-256 of the jar's library, from the classpath resource. */
    private static String resourceSha256() throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        try (InputStream in = NativeLoadFailureTest.class.getResourceAsStream("/native/linux-x86_64/libkstate.so")) {
            md.update(in.readAllBytes());
        }
        StringBuilder sb = new StringBuilder();
        for (byte b : md.digest()) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    private static Object fileKey(Path p) throws IOException {
        return Files.readAttributes(p, BasicFileAttributes.class).fileKey();
    }

    /**
     * -Dkstate.native.dir: the library is extracted there once, named by version and contents,
     * reused by the next process, and replaced (a new file renamed into place, never rewritten
     * in place) when it no longer matches the jar. No temporary file is left behind.
     */
    @Test
    public void theExtractionDirectoryIsChosenReusedAndRepaired() throws Exception {
        Path native1 = dir.toPath().resolve("native dir");
        String sha = resourceSha256();
        List<String> args = Collections.singletonList("-D" + NativeLoader.DIR_PROPERTY + "=" + native1);
        String out = runChild(args);
        assertTrue(out, out.contains("attempt 1: opened"));
        assertTrue(out, out.contains("attempt 2: opened"));
        String[] names = native1.toFile().list();
        assertEquals(Arrays.toString(names), 1, names.length);
        String name = names[0];
        assertTrue(name, name.matches("libkstate-[0-9][^-]*-" + sha.substring(0, 16) + "\\.so"));
        Path lib = native1.resolve(name);
        assertTrue(out, out.contains("loadedFrom=jar resource /native/linux-x86_64/libkstate.so, extracted to " + lib));
        assertEquals(sha, sha256(lib));
        Object first = fileKey(lib);

        // The next process reuses the file: same inode.
        out = runChild(args);
        assertTrue(out, out.contains("attempt 1: opened"));
        assertEquals(first, fileKey(lib));

        // A damaged copy is replaced by a fresh file renamed over it (another inode).
        Files.write(lib, "not a library".getBytes(StandardCharsets.UTF_8));
        out = runChild(args);
        assertTrue(out, out.contains("attempt 1: opened"));
        assertEquals(sha, sha256(lib));
        assertNotEquals(first, fileKey(lib));
        assertEquals(Arrays.toString(native1.toFile().list()), 1, native1.toFile().list().length);
    }

    /**
     * When the shared name cannot be taken over (here a directory sits there), the library is
     * still loaded, from a private copy that is deleted afterwards.
     */
    @Test
    public void anUnreplaceableSharedNameFallsBackToAPrivateCopy() throws Exception {
        Path native1 = dir.toPath().resolve("blocked");
        java.util.Properties p = new java.util.Properties();
        try (InputStream in = getClass().getResourceAsStream("/dev/kstate/internal/kstate.properties")) {
            p.load(in);
        }
        Path blocker = native1.resolve("libkstate-" + p.getProperty("version") + "-" + resourceSha256().substring(0, 16) + ".so");
        Files.createDirectories(blocker);
        Files.write(blocker.resolve("occupied"), new byte[] {1});
        String out = runChild(Collections.singletonList("-D" + NativeLoader.DIR_PROPERTY + "=" + native1));
        assertTrue(out, out.contains("attempt 1: opened"));
        assertTrue(out, out.contains("loadedFrom=jar resource /native/linux-x86_64/libkstate.so\n"));
        assertEquals(Collections.singletonList(blocker.getFileName().toString()), Arrays.asList(native1.toFile().list()));
    }

    private static String sha256(Path file) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        md.update(Files.readAllBytes(file));
        StringBuilder sb = new StringBuilder();
        for (byte b : md.digest()) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    /**
     * A libkstate of another release is refused with both versions named, whether it comes from
     * the jar or from java.library.path. (Simulated from the Java side: a classpath entry ahead
     * of the build's resources says the classes are version 9.9.9.)
     */
    @Test
    public void aLibraryOfAnotherVersionIsRefused() throws Exception {
        Path fake = dir.toPath().resolve("fake-version");
        Files.createDirectories(fake.resolve("dev/kstate/internal"));
        Files.write(fake.resolve("dev/kstate/internal/kstate.properties"), "version=9.9.9\n".getBytes(StandardCharsets.UTF_8));
        List<String> cp = new ArrayList<>();
        cp.add(fake.toString());
        cp.addAll(classpath(e -> false));
        String out = runChild(Collections.emptyList(), Collections.emptyList(), cp);
        assertFailsTwice(out, "kstate: version mismatch: the libkstate from the jar resource "
            + "/native/linux-x86_64/libkstate.so is version ");
        assertTrue(out, out.contains("but the kstate-streams classes are version 9.9.9"));
        assertTrue(out, out.contains("loadedFrom=null"));

        // The same library on java.library.path: found first, refused the same way.
        Path libPath = dir.toPath().resolve("libpath");
        Files.createDirectories(libPath);
        try (InputStream in = getClass().getResourceAsStream("/native/linux-x86_64/libkstate.so")) {
            Files.copy(in, libPath.resolve("libkstate.so"));
        }
        out = runChild(Collections.emptyList(),
            Collections.singletonList("-Djava.library.path=" + libPath), cp);
        assertFailsTwice(out, "kstate: version mismatch: the libkstate from java.library.path (" + libPath + ")");
        // and without the fake version, that copy is used
        out = runChild(Collections.singletonList("-Djava.library.path=" + libPath));
        assertTrue(out, out.contains("attempt 1: opened"));
        assertTrue(out, out.contains("loadedFrom=java.library.path"));
    }

    /**
     * A directory on a noexec mount cannot hold a loadable library: the error says so and what
     * to do. Needs a private mount namespace (unshare, as root); skipped where there is none.
     */
    @Test
    public void aNoexecDirectoryIsExplained() throws Exception {
        Path mount = dir.toPath().resolve("noexec");
        Files.createDirectories(mount);
        List<String> prefix = Arrays.asList("unshare", "--mount", "--propagation", "private", "sh", "-c",
            "mount -t tmpfs -o noexec,size=64m kstate-noexec \"$0\" && exec \"$@\"", mount.toString());
        Assume.assumeTrue("needs unshare and mount (root)", canMount(prefix));
        String out = runChild(prefix, Collections.singletonList("-D" + NativeLoader.DIR_PROPERTY + "=" + mount),
            classpath(e -> false));
        assertFailsTwice(out, "kstate: cannot load " + mount + "/libkstate-");
        assertTrue(out, out.contains(mount + " is on a file system mounted noexec (mount point " + mount + ", tmpfs, "));
        assertTrue(out, out.contains("-Dkstate.native.dir=DIR"));
        // the default location, java.io.tmpdir, on the same mount
        out = runChild(prefix, Collections.singletonList("-Djava.io.tmpdir=" + mount), classpath(e -> false));
        assertFailsTwice(out, "kstate: cannot load " + mount + "/.libkstate-");
        assertTrue(out, out.contains("mounted noexec"));
    }

    private static boolean canMount(List<String> prefix) {
        try {
            List<String> cmd = new ArrayList<>(prefix);
            cmd.add("true");
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }
}
