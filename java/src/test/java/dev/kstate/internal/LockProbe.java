package dev.kstate.internal;

import dev.kstate.streams.KstateException;
import java.io.File;

/**
 * Opens a store directory with the raw native call, bypassing {@link ParkedStores} (which
 * every {@link NativeStore#open} consults first and which would close a store parked there):
 * tells whether something in this process still holds the directory's lock.
 */
public final class LockProbe {
    private LockProbe() {
    }

    /**
     * @param dir a key-value store directory
     * @return true when the directory could be opened (then closed at once): nothing holds its
     *     lock; false when kstate reported it locked (after its short wait)
     */
    public static boolean canOpen(File dir) {
        KstateNative.ensureLoaded();
        long h;
        try {
            h = NativeSurfaceTest.open(dir.getAbsolutePath(), KstateNative.ENGINE_ROCKSDB,
                KstateNative.FORMAT_TIMESTAMPED);
        } catch (RuntimeException e) {
            if (e instanceof KstateException && ((KstateException) e).errorCode() == KstateException.LOCKED) {
                return false;
            }
            throw e;
        }
        KstateNative.close(h);
        return true;
    }
}
