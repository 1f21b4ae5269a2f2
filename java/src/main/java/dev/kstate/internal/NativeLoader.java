package dev.kstate.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads {@code libkstate}: a copy on {@code java.library.path} wins; otherwise the platform's
 * library is extracted from the jar ({@code native/<platform>/libkstate.so}) to a temp file
 * private to this process, loaded, and deleted (Linux keeps the mapping; a
 * {@code deleteOnExit} backs this up).
 */
public final class NativeLoader {
    /** Platforms whose library the jar carries. */
    public static final String[] SUPPORTED_PLATFORMS = {"linux-x86_64"};

    private static volatile String loadedFrom;

    private NativeLoader() {
    }

    /**
     * Loads the library once per class loader.
     *
     * @throws UnsatisfiedLinkError if no library for this platform can be found or loaded; the
     *     message names the platform and the supported ones
     */
    public static synchronized void load() {
        if (loadedFrom != null) {
            return;
        }
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
