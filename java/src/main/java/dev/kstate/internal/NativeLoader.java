package dev.kstate.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads {@code libkstate}: a copy on {@code java.library.path} wins; otherwise the platform's
 * library is extracted from the jar ({@code native/<platform>/libkstate.so}) to a temp file
 * private to this process, loaded, and deleted (Linux keeps the mapping; a
 * {@code deleteOnExit} backs this up).
 */
public final class NativeLoader {
    /** Platforms whose library the jar carries. */
    public static final String[] SUPPORTED_PLATFORMS = {"linux-x86_64"};

    private static final Logger LOG = LoggerFactory.getLogger(NativeLoader.class);

    private static volatile String loadedFrom;
    /**
     * The first failure, kept so that every later call fails with the same clear message
     * (instead of the JVM's "NoClassDefFoundError: Could not initialize class" once a static
     * initialiser has failed).
     */
    private static volatile UnsatisfiedLinkError failure;

    private NativeLoader() {
    }

    /**
     * Loads the library once per class loader. A failure is remembered: every later call throws
     * a new {@link UnsatisfiedLinkError} with the same message and the first failure as its
     * cause.
     *
     * @throws UnsatisfiedLinkError if no library for this platform can be found or loaded; the
     *     message names the platform and the supported ones
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
            loadOnce();
            LOG.info("kstate: loaded libkstate from {}", loadedFrom);
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            UnsatisfiedLinkError error = e instanceof UnsatisfiedLinkError ? (UnsatisfiedLinkError) e
                : (UnsatisfiedLinkError) new UnsatisfiedLinkError("kstate: cannot load libkstate: " + e).initCause(e);
            failure = error;
            LOG.error("kstate: cannot load libkstate: {}", error.getMessage());
            throw error;
        }
    }

    private static void loadOnce() {
        UnsatisfiedLinkError fromPath;
        try {
            System.loadLibrary("kstate");
            loadedFrom = "java.library.path";
            return;
        } catch (UnsatisfiedLinkError e) {
            fromPath = e;
        }
        String platform = platform(System.getProperty("os.name"), System.getProperty("os.arch"));
        String resource = "/native/" + platform + "/libkstate.so";
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                UnsatisfiedLinkError e = new UnsatisfiedLinkError("kstate: the jar has no " + resource
                    + " and java.library.path has no libkstate (" + fromPath.getMessage() + ")");
                throw e;
            }
            Path tmp = Files.createTempFile("libkstate-" + ProcessHandle.current().pid() + "-", ".so");
            tmp.toFile().deleteOnExit();
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            System.load(tmp.toAbsolutePath().toString());
            Files.deleteIfExists(tmp);
            loadedFrom = "jar resource " + resource;
        } catch (IOException e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("kstate: cannot extract " + resource + ": " + e);
            error.initCause(e);
            throw error;
        }
    }

    /** @return where the library was loaded from, or null before {@link #load()} */
    public static String loadedFrom() {
        return loadedFrom;
    }

    /**
     * The platform directory for an {@code os.name}/{@code os.arch} pair.
     *
     * @param osName the {@code os.name} property
     * @param osArch the {@code os.arch} property
     * @return e.g. {@code linux-x86_64}
     * @throws UnsatisfiedLinkError naming the platform and the supported ones when unsupported
     */
    public static String platform(String osName, String osArch) {
        String os = osName == null ? "unknown" : osName.toLowerCase(Locale.ROOT);
        String arch = osArch == null ? "unknown" : osArch.toLowerCase(Locale.ROOT);
        if (os.startsWith("linux") && (arch.equals("amd64") || arch.equals("x86_64"))) {
            return "linux-x86_64";
        }
        throw new UnsatisfiedLinkError("kstate has no native library for platform " + osName + "/" + osArch
            + "; supported platforms: " + String.join(", ", SUPPORTED_PLATFORMS)
            + " (or put a libkstate built for this platform on java.library.path)");
    }
}
