package dev.kstate.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.TreeSet;
import org.junit.Test;

/** The loader's pure parts: platform names, its messages, the mount table (the rest: NativeLoadFailureTest). */
public class NativeLoaderTest {
    @Test
    public void platformNames() {
        assertEquals("linux-x86_64", NativeLoader.platform("Linux", "amd64"));
        assertEquals("linux-x86_64", NativeLoader.platform("Linux", "x86_64"));
        assertEquals("linux-aarch64", NativeLoader.platform("Linux", "aarch64"));
        assertEquals("macos-aarch64", NativeLoader.platform("Mac OS X", "aarch64"));
        assertEquals("macos-x86_64", NativeLoader.platform("Mac OS X", "x86_64"));
        assertEquals("windows-x86_64", NativeLoader.platform("Windows 11", "amd64"));
        assertEquals("freebsd-riscv64", NativeLoader.platform("FreeBSD", "riscv64"));
        assertEquals("unknown-unknown", NativeLoader.platform(null, null));
    }

    @Test
    public void theJarsPlatformsAndTheMissingPlatformMessage() {
        assertEquals(Collections.singletonList("linux-x86_64"), NativeLoader.availablePlatforms());
        String m = NativeLoader.missingPlatform("macos-aarch64",
            new TreeSet<>(Arrays.asList("linux-x86_64", "linux-aarch64")));
        assertTrue(m, m.contains("no native library for platform macos-aarch64"));
        assertTrue(m, m.contains("it has: linux-aarch64, linux-x86_64."));
        KstateNative.ensureLoaded();
        assertTrue(NativeLoader.loadedFrom(), NativeLoader.loadedFrom().startsWith("jar resource /native/linux-x86_64/"));
    }

    /** The mount table is read right: the longest (latest) mount point wins, escapes are decoded. */
    @Test
    public void noexecMountsAreFoundInTheMountTable() {
        List<String> table = Arrays.asList(
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw",
            "30 22 0:27 / /tmp rw,nosuid,nodev,noexec shared:5 - tmpfs tmpfs rw",
            "31 30 0:28 / /tmp/exec\\040ok rw,nosuid - tmpfs tmpfs rw",
            "32 22 0:29 / /data rw,noexec - xfs /dev/vdb rw",
            "33 22 0:30 / /data rw - xfs /dev/vdc rw");
        assertEquals("mount point /tmp, tmpfs, rw,nosuid,nodev,noexec",
            NativeLoader.noexecMount(Paths.get("/tmp/kstate"), table));
        assertNull(NativeLoader.noexecMount(Paths.get("/tmp/exec ok/lib"), table));
        assertNull(NativeLoader.noexecMount(Paths.get("/home/u"), table));
        assertNull(NativeLoader.noexecMount(Paths.get("/data/x"), table)); // remounted exec over it
        assertNull(NativeLoader.noexecMount(Paths.get("/tmpx"), table));
    }
}
