package dev.kstate.internal;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.zip.CRC32;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads {@code libkstate} and checks that it belongs to the same release as these classes.
 *
 * <p>Where from, in order:
 * <ol>
 * <li>a {@code libkstate} on {@code java.library.path} (a copy the user installed wins);</li>
 * <li>the jar's resource for this platform, {@code native/<os>-<arch>/libkstate.so} (or
 * {@code .dylib}), listed with its SHA-256 and CRC-32 in {@code native/index.txt}. It is
 * extracted under a temporary name, checked against the CRC-32 (a damaged jar or copy) and
 * renamed into place, so no process ever loads a half-written file:
 *   <ul>
 *   <li>by default into {@code java.io.tmpdir}, as a copy private to this process that is
 *   deleted once loaded (Linux keeps the mapping);</li>
 *   <li>with {@code -Dkstate.native.dir=DIR}, into {@code DIR} as
 *   {@code libkstate-<version>-<sha256 prefix>.so}, kept and reused by later processes while
 *   its contents still match (useful when {@code java.io.tmpdir} is mounted {@code noexec},
 *   or to extract once per machine).</li>
 *   </ul></li>
 * </ol>
 * The loaded library must report the version of these classes ({@code nativeVersion()});
 * a library of another release is refused, since its natives need not match the Java
 * declarations. A failure is an {@link UnsatisfiedLinkError} saying what was tried and what
 * to do, remembered and thrown again on every later call.
 */
public final class NativeLoader {
    /** System property naming the directory the library is extracted to. */
    public static final String DIR_PROPERTY = "kstate.native.dir";
    /**
     * The jar's list of platforms: lines of {@code <platform> <file> <sha256> <crc32>} (hex).
     * The SHA-256 names a shared extraction; the CRC-32 checks a copy: it costs 10-15 ms for the
     * 10.7 MB library in a fresh JVM, against 70 ms for SHA-256 (215 ms with
     * {@code -XX:TieredStopAtLevel=1}, where SHA-256 has no intrinsic), measured. An index
     * without the CRC-32 (an older jar's) has its copies checked with SHA-256.
     */
    static final String INDEX_RESOURCE = "/native/index.txt";
    /** The version these classes were built as ({@code version=...}), written by the build. */
    static final String VERSION_RESOURCE = "/dev/kstate/internal/kstate.properties";

    private static final Logger LOG = LoggerFactory.getLogger(NativeLoader.class);

    private static volatile String loadedFrom;
    /**
     * The first failure, kept so that every later call fails with the same clear message
     * (instead of the JVM's "NoClassDefFoundError: Could not initialize class" once a static
     * initialiser has failed).
     */
    private static volatile UnsatisfiedLinkError failure;

    /** Set by the first {@link #preload()}: its thread is started once per class loader. */
    private static final AtomicBoolean PRELOAD_STARTED = new AtomicBoolean();

    private NativeLoader() {
    }

    /**
     * Starts {@link #load()} on a daemon thread, once, and returns at once. Extracting the
     * library from the jar takes a few hundred milliseconds in a JVM that has just started;
     * begun when the application builds its topology (each kstate store's options are built
     * then), it overlaps with the creation of the {@code KafkaStreams} instance instead of
     * delaying the first store's open on {@code start()}. The first open waits for it (the
     * load is synchronized). A failure is what {@link #load()} makes of it: logged, remembered,
     * and thrown by the first open.
     */
    public static void preload() {
        if (loadedFrom != null || failure != null || !PRELOAD_STARTED.compareAndSet(false, true)) {
            return;
        }
        try {
            Thread t = new Thread(() -> {
                try {
                    load();
                } catch (UnsatisfiedLinkError | RuntimeException remembered) {
                    // remembered by load(); the first open throws it
                }
            }, "kstate-native-loader");
            t.setDaemon(true);
            t.start();
        } catch (RuntimeException | OutOfMemoryError noThread) {
            // no thread to spare: the first open loads the library itself
        }
    }

    /** The version of the loaded library (the crate version it was built from). */
    private static native String nativeVersion();

    /**
     * Loads the library once per class loader. A failure is remembered: every later call throws
     * a new {@link UnsatisfiedLinkError} with the same message and the first failure as its
     * cause.
     *
     * @throws UnsatisfiedLinkError if no library for this platform can be found, extracted or
     *     loaded, or the library is of another kstate version; the message says which and
     *     what to do
     */
    public static synchronized void load() {
        if (loadedFrom != null) {
            return;
        }
        if (failure != null) {
            UnsatisfiedLinkError again = new UnsatisfiedLinkError(failure.getMessage());
            again.initCause(failure);
            throw again;
        }
        try {
            String from = loadOnce();
            loadedFrom = from;
            LOG.info("kstate: loaded libkstate {} from {}", expectedVersion(), from);
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            UnsatisfiedLinkError error = e instanceof UnsatisfiedLinkError ? (UnsatisfiedLinkError) e
                : (UnsatisfiedLinkError) new UnsatisfiedLinkError("kstate: cannot load libkstate: " + e).initCause(e);
            failure = error;
            LOG.error("kstate: cannot load libkstate: {}", error.getMessage());
            throw error;
        }
    }

    /** @return a description of where the library came from */
    private static String loadOnce() {
        UnsatisfiedLinkError fromPath;
        try {
            System.loadLibrary("kstate");
            fromPath = null;
        } catch (UnsatisfiedLinkError e) {
            fromPath = e;
        }
        if (fromPath == null) {
            // Loaded: its natives are bound now, so a wrong version cannot fall back to the jar's.
            checkVersion(expectedVersion(), "java.library.path (" + System.getProperty("java.library.path") + ")");
            return "java.library.path";
        }
        String platform = platform(System.getProperty("os.name"), System.getProperty("os.arch"));
        Map<String, IndexEntry> index = readIndex();
        IndexEntry entry = index.get(platform);
        if (entry == null) {
            throw new UnsatisfiedLinkError(missingPlatform(platform, index.keySet())
                + " (java.library.path has none either: " + fromPath.getMessage() + ")");
        }
        String resource = "/native/" + platform + "/" + entry.file;
        String dirSetting = System.getProperty(DIR_PROPERTY);
        boolean shared = dirSetting != null && !dirSetting.trim().isEmpty();
        Path dir = Paths.get(shared ? dirSetting.trim() : System.getProperty("java.io.tmpdir")).toAbsolutePath();
        String expected = expectedVersion();
        Extracted extracted;
        try {
            extracted = shared ? extractShared(dir, resource, entry, expected) : extractPrivate(dir, resource, entry);
        } catch (IOException e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("kstate: cannot extract " + resource + " to " + dir
                + ": " + e + (shared ? "" : "; choose another directory with -D" + DIR_PROPERTY + "=DIR"));
            error.initCause(e);
            throw error;
        }
        Path file = extracted.file;
        try {
            loadFile(file);
        } finally {
            if (!extracted.keep) {
                deleteQuietly(file);
            }
        }
        checkVersion(expected, "the jar resource " + resource);
        return "jar resource " + resource + (extracted.keep ? ", extracted to " + file : "");
    }

    /** An extracted library, and whether it stays for later processes (else it is deleted once loaded). */
    private static final class Extracted {
        final Path file;
        final boolean keep;

        Extracted(Path file, boolean keep) {
            this.file = file;
            this.keep = keep;
        }
    }

    /** Loads an extracted file, explaining a directory that cannot hold executable code. */
    private static void loadFile(Path file) {
        try {
            System.load(file.toString());
        } catch (UnsatisfiedLinkError e) {
            String mount = noexecMount(file.getParent());
            String message = mount != null
                ? "kstate: cannot load " + file + ": " + file.getParent() + " is on a file system mounted noexec ("
                    + mount + "), where no shared library can be loaded. Choose a directory on an executable file "
                    + "system with -D" + DIR_PROPERTY + "=DIR (or -Djava.io.tmpdir=DIR), or put libkstate on "
                    + "java.library.path. (" + e.getMessage() + ")"
                : "kstate: cannot load " + file + ": " + e.getMessage();
            UnsatisfiedLinkError error = new UnsatisfiedLinkError(message);
            error.initCause(e);
            throw error;
        }
    }

    // ----- the version check -------------------------------------------------------------------

    private static final String MISMATCH = "kstate: version mismatch: ";

    /**
     * Refuses a loaded library of another release. The library stays mapped (a JVM cannot
     * unload it), but every use of kstate in this class loader fails with this error.
     */
    static void checkVersion(String expected, String where) {
        String actual;
        try {
            actual = nativeVersion();
        } catch (UnsatisfiedLinkError e) {
            // a library older than the version check has no nativeVersion()
            actual = "older than 0.1.0 (it has no version function)";
        }
        if (!expected.equals(actual)) {
            throw new UnsatisfiedLinkError(MISMATCH + "the libkstate from " + where + " is version " + actual
                + ", but the kstate-streams classes are version " + expected
                + ": use the libkstate of the same release (remove or update the other copy)");
        }
    }

    /** @return the version these classes were built as */
    static String expectedVersion() {
        try (InputStream in = NativeLoader.class.getResourceAsStream(VERSION_RESOURCE)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("kstate: the classpath has no " + VERSION_RESOURCE
                    + " (kstate-streams classes not built by its Gradle build?), so libkstate's version cannot be checked");
            }
            Properties p = new Properties();
            p.load(new InputStreamReader(in, StandardCharsets.UTF_8));
            String v = p.getProperty("version");
            if (v == null || v.trim().isEmpty()) {
                throw new UnsatisfiedLinkError("kstate: " + VERSION_RESOURCE + " has no version");
            }
            return v.trim();
        } catch (IOException e) {
            throw (UnsatisfiedLinkError) new UnsatisfiedLinkError("kstate: cannot read " + VERSION_RESOURCE + ": " + e)
                .initCause(e);
        }
    }

    // ----- platforms -----------------------------------------------------------------------------

    /** One line of {@code native/index.txt}. */
    static final class IndexEntry {
        final String file;
        final String sha256;
        /** The CRC-32 as 8 hex digits, or null when the index has none. */
        final String crc32;

        IndexEntry(String file, String sha256, String crc32) {
            this.file = file;
            this.sha256 = sha256;
            this.crc32 = crc32;
        }

        /** @return what a copy is checked with: "CRC-32" or "SHA-256" */
        String checkName() {
            return crc32 != null ? "CRC-32" : "SHA-256";
        }

        /** @return the expected value of {@link #checkName()}, in lower-case hex */
        String expected() {
            return crc32 != null ? crc32 : sha256;
        }

        /** @return a fresh checksum of the kind {@link #checkName()} names */
        Checksum checksum() {
            return crc32 != null ? new Crc32Sum() : new Sha256Sum();
        }
    }

    /** A running checksum of a copy, printed in lower-case hex. */
    interface Checksum {
        void update(byte[] buf, int off, int len);

        String hex();
    }

    private static final class Crc32Sum implements Checksum {
        private final CRC32 crc = new CRC32();

        @Override
        public void update(byte[] buf, int off, int len) {
            crc.update(buf, off, len);
        }

        @Override
        public String hex() {
            return String.format("%08x", crc.getValue());
        }
    }

    private static final class Sha256Sum implements Checksum {
        private final MessageDigest digest = sha256();

        @Override
        public void update(byte[] buf, int off, int len) {
            digest.update(buf, off, len);
        }

        @Override
        public String hex() {
            return NativeLoader.hex(digest.digest());
        }
    }

    /** @return the jar's platforms, by name; empty when the jar carries no native library */
    static Map<String, IndexEntry> readIndex() {
        Map<String, IndexEntry> index = new TreeMap<>();
        try (InputStream in = NativeLoader.class.getResourceAsStream(INDEX_RESOURCE)) {
            if (in == null) {
                return index;
            }
            BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                String[] f = line.trim().split("\\s+");
                if ((f.length == 3 || f.length == 4) && !f[0].startsWith("#")) {
                    index.put(f[0], new IndexEntry(f[1], f[2].toLowerCase(Locale.ROOT),
                        f.length == 4 ? f[3].toLowerCase(Locale.ROOT) : null));
                }
            }
        } catch (IOException e) {
            throw (UnsatisfiedLinkError) new UnsatisfiedLinkError("kstate: cannot read " + INDEX_RESOURCE + ": " + e)
                .initCause(e);
        }
        return index;
    }

    /** @return the platforms whose library this jar carries, sorted */
    public static List<String> availablePlatforms() {
        return Collections.unmodifiableList(new ArrayList<>(readIndex().keySet()));
    }

    /**
     * The error message for a platform the jar lacks.
     *
     * @param platform this machine's platform, e.g. {@code macos-aarch64}
     * @param available the jar's platforms
     * @return a message naming both and what to do
     */
    static String missingPlatform(String platform, Set<String> available) {
        return "kstate: this kstate-streams jar has no native library for platform " + platform
            + " (os.name " + System.getProperty("os.name") + ", os.arch " + System.getProperty("os.arch")
            + "); it has: " + (available.isEmpty() ? "none" : String.join(", ", available))
            + ". Use a jar built with this platform's library, or put a libkstate built for it on java.library.path";
    }

    /**
     * The platform directory for an {@code os.name}/{@code os.arch} pair: {@code <os>-<arch>}
     * with os one of {@code linux}, {@code macos}, {@code windows} (else the lower-cased name
     * without spaces) and arch {@code x86_64} or {@code aarch64} (else the lower-cased
     * {@code os.arch}).
     *
     * @param osName the {@code os.name} property
     * @param osArch the {@code os.arch} property
     * @return e.g. {@code linux-x86_64}
     */
    public static String platform(String osName, String osArch) {
        String os = osName == null ? "unknown" : osName.toLowerCase(Locale.ROOT).replaceAll("\\s+", "");
        if (os.startsWith("linux")) {
            os = "linux";
        } else if (os.startsWith("macosx") || os.startsWith("darwin") || os.startsWith("mac")) {
            os = "macos";
        } else if (os.startsWith("windows")) {
            os = "windows";
        }
        String arch = osArch == null ? "unknown" : osArch.toLowerCase(Locale.ROOT);
        if (arch.equals("amd64") || arch.equals("x86_64") || arch.equals("x64")) {
            arch = "x86_64";
        } else if (arch.equals("aarch64") || arch.equals("arm64")) {
            arch = "aarch64";
        }
        return os + "-" + arch;
    }

    // ----- extraction ------------------------------------------------------------------------------

    /** A copy private to this process (random name, owner-only), deleted by the caller once loaded. */
    private static Extracted extractPrivate(Path dir, String resource, IndexEntry entry) throws IOException {
        Files.createDirectories(dir);
        Path tmp = createTemp(dir);
        try {
            copyVerified(resource, entry, tmp);
            Path target = dir.resolve(tmp.getFileName().toString().replace(".tmp", suffix(entry.file)));
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
            return new Extracted(target, false);
        } catch (IOException | RuntimeException e) {
            deleteQuietly(tmp);
            throw e;
        }
    }

    /**
     * A copy kept in a chosen directory, named by version and contents: reused while it is
     * this user's and matches the jar, else written under a temporary name and renamed over
     * it (an atomic replace: a concurrent process loads the old or the new file, never a
     * partial one). When the rename is impossible (no atomic rename on this file system, or
     * another user's file in a sticky directory), the temporary file is loaded as a private copy.
     */
    private static Extracted extractShared(Path dir, String resource, IndexEntry entry, String version)
        throws IOException {
        Files.createDirectories(dir);
        String base = entry.file.substring(0, entry.file.length() - suffix(entry.file).length());
        Path target = dir.resolve(base + "-" + version + "-" + entry.sha256.substring(0, 16) + suffix(entry.file));
        if (trustworthy(target) && entry.expected().equals(checksum(target, entry))) {
            return new Extracted(target, true);
        }
        Path tmp = createTemp(dir);
        try {
            copyVerified(resource, entry, tmp);
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                return new Extracted(target, true);
            } catch (FileSystemException e) { // AtomicMoveNotSupportedException among them
                LOG.warn("kstate: cannot rename the library into place as {} ({}); loading a private copy", target,
                    e.toString());
                return new Extracted(tmp, false);
            }
        } catch (IOException | RuntimeException e) {
            deleteQuietly(tmp);
            throw e;
        }
    }

    /** An owner-only temporary file in {@code dir} with a random name. */
    private static Path createTemp(Path dir) throws IOException {
        if (Files.getFileStore(dir).supportsFileAttributeView("posix")) {
            return Files.createTempFile(dir, ".libkstate-", ".tmp",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        }
        return Files.createTempFile(dir, ".libkstate-", ".tmp");
    }

    /** Copies the resource to {@code to}, checking it against the index (a truncated jar). */
    private static void copyVerified(String resource, IndexEntry entry, Path to) throws IOException {
        Checksum digest = entry.checksum();
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException("the jar lists " + resource + " in " + INDEX_RESOURCE + " but has no such resource");
            }
            try (OutputStream out = Files.newOutputStream(to)) {
                byte[] buf = new byte[1 << 16];
                for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                    digest.update(buf, 0, n);
                    out.write(buf, 0, n);
                }
            }
        }
        String actual = digest.hex();
        if (!actual.equals(entry.expected())) {
            throw new IOException(resource + " has " + entry.checkName() + " " + actual + ", the jar's index says "
                + entry.expected() + " (a damaged jar?)");
        }
    }

    /** A file this user owns and nobody else may write (so it cannot change after its check). */
    private static boolean trustworthy(Path file) {
        try {
            if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
                return false;
            }
            if (!Files.getFileStore(file).supportsFileAttributeView("posix")) {
                return true;
            }
            PosixFileAttributes a = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            String me = System.getProperty("user.name");
            Set<PosixFilePermission> p = a.permissions();
            return a.owner().getName().equals(me)
                && !p.contains(PosixFilePermission.GROUP_WRITE) && !p.contains(PosixFilePermission.OTHERS_WRITE);
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    /** @return the checksum {@code entry} is checked with of {@code file}, or "" when it cannot be read */
    private static String checksum(Path file, IndexEntry entry) {
        Checksum digest = entry.checksum();
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buf = new byte[1 << 16];
            for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                digest.update(buf, 0, n);
            }
        } catch (IOException e) {
            return "";
        }
        return digest.hex();
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }

    private static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            sb.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
        }
        return sb.toString();
    }

    private static String suffix(String file) {
        int dot = file.lastIndexOf('.');
        return dot < 0 ? "" : file.substring(dot);
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            file.toFile().deleteOnExit();
        }
    }

    // ----- noexec ----------------------------------------------------------------------------------

    /**
     * The mount holding {@code dir}, described, when it is mounted {@code noexec} (Linux,
     * from {@code /proc/self/mountinfo}); null when it is not, or cannot be told.
     */
    static String noexecMount(Path dir) {
        Path mountinfo = Paths.get("/proc/self/mountinfo");
        if (dir == null || !Files.isReadable(mountinfo)) {
            return null;
        }
        try {
            return noexecMount(dir.toRealPath(), Files.readAllLines(mountinfo, StandardCharsets.UTF_8));
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * The longest mount point of {@code mountinfo} containing {@code dir}, described when its
     * mount options include {@code noexec}.
     *
     * @param dir a real (symlink-free) absolute path
     * @param mountinfo the lines of {@code /proc/self/mountinfo}
     * @return e.g. {@code "/tmp, tmpfs, rw,nosuid,noexec"}, or null
     */
    static String noexecMount(Path dir, List<String> mountinfo) {
        String best = null;
        String options = null;
        String type = null;
        for (String line : mountinfo) {
            // id parent major:minor root mount-point options [optional...] - type source super-options
            String[] f = line.split(" ");
            if (f.length < 6) {
                continue;
            }
            String point = unescape(f[4]);
            if (!dir.startsWith(Paths.get(point))) {
                continue;
            }
            // a later line for the same mount point is mounted over the earlier one
            if (best == null || point.length() >= best.length()) {
                best = point;
                options = f[5];
                int dash = line.indexOf(" - ");
                type = dash < 0 ? "?" : line.substring(dash + 3).split(" ")[0];
            }
        }
        if (best == null || !("," + options + ",").contains(",noexec,")) {
            return null;
        }
        return "mount point " + best + ", " + type + ", " + options;
    }

    /** Mount points escape space, tab, newline and backslash as octal ({@code \040}). */
    private static String unescape(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 3 < s.length()) {
                try {
                    sb.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
                    i += 3;
                    continue;
                } catch (NumberFormatException | StringIndexOutOfBoundsException e) {
                    // not an escape: keep the backslash
                }
            }
            sb.append(c);
        }
        return sb.toString();
    }

    /** @return where the library was loaded from, or null before {@link #load()} */
    public static String loadedFrom() {
        return loadedFrom;
    }
}
