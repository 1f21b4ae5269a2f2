package dev.kstate.streams;

/**
 * Progress of {@link KstateKeyValueStore#upgradeBySwap(UpgradeProgress)}: called on the
 * upgrading thread after each batch of entries copied into the new store.
 */
@FunctionalInterface
public interface UpgradeProgress {
    /**
     * @param done entries copied so far; increases from call to call
     * @param total estimated number of entries to copy, at least {@code done}; the last call
     *     has {@code done == total}
     */
    void onProgress(long done, long total);
}
