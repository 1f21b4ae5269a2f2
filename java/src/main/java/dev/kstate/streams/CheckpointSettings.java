package dev.kstate.streams;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigException;

/**
 * The {@code kstate.checkpoint.*} keys of an application's config: where and how often the
 * RocksDB stores publish checkpoints to an object store, and whether a store without local
 * state restores from one (see {@link RemoteCheckpoints}).
 */
final class CheckpointSettings {
    /** The target, {@code file:///path} or {@code s3://bucket/prefix}; unset: no checkpoints. */
    static final String URI_CONFIG = "kstate.checkpoint.uri";
    /** Milliseconds between two publications of a store. */
    static final String INTERVAL_MS_CONFIG = "kstate.checkpoint.interval.ms";
    /** Checkpoints kept per store by garbage collection (at least 1). */
    static final String KEEP_CONFIG = "kstate.checkpoint.keep";
    /** Upload bandwidth bound in bytes per second, per process target; unset: unbounded. */
    static final String MAX_BYTES_PER_SEC_CONFIG = "kstate.checkpoint.max.bytes.per.sec";
    /** Download bandwidth bound of the restores in bytes per second, per process target; unset: unbounded. */
    static final String MAX_RESTORE_BYTES_PER_SEC_CONFIG = "kstate.checkpoint.max.restore.bytes.per.sec";
    /** Garbage collection never deletes a file object younger than this (ms). */
    static final String GC_GRACE_MS_CONFIG = "kstate.checkpoint.gc.grace.ms";
    /** Whether a store without local state restores from the newest usable checkpoint. */
    static final String RESTORE_CONFIG = "kstate.checkpoint.restore";
    /** {@code kstate.checkpoint.s3.<name>}: the S3 option {@code <name>} of object_store. */
    static final String S3_PREFIX = "kstate.checkpoint.s3.";

    static final long DEFAULT_INTERVAL_MS = 300_000;
    static final int DEFAULT_KEEP = 2;
    static final long DEFAULT_GC_GRACE_MS = 3_600_000;

    /** The target, null when checkpoints are off. */
    final String uri;
    final long intervalMs;
    final int keep;
    /** 0: unbounded. */
    final long maxBytesPerSec;
    /** 0: unbounded. */
    final long maxRestoreBytesPerSec;
    final long gcGraceMs;
    final boolean restore;
    /** The S3 options by object_store name, sorted (part of the target's identity). */
    final Map<String, String> s3Options;

    private CheckpointSettings(String uri, long intervalMs, int keep, long maxBytesPerSec, long maxRestoreBytesPerSec,
                               long gcGraceMs, boolean restore, Map<String, String> s3Options) {
        this.uri = uri;
        this.intervalMs = intervalMs;
        this.keep = keep;
        this.maxBytesPerSec = maxBytesPerSec;
        this.maxRestoreBytesPerSec = maxRestoreBytesPerSec;
        this.gcGraceMs = gcGraceMs;
        this.restore = restore;
        this.s3Options = s3Options;
    }

    /**
     * Reads and checks the keys.
     *
     * @param configs the application's configs
     * @return the settings ({@link #enabled()} false without a uri)
     * @throws ConfigException naming the first bad key, its value and the accepted values
     */
    static CheckpointSettings of(Map<String, ?> configs) {
        Object rawUri = configs == null ? null : configs.get(URI_CONFIG);
        String uri = rawUri == null ? null : String.valueOf(rawUri).trim();
        if (uri != null && uri.isEmpty()) {
            uri = null;
        }
        if (uri != null && !uri.startsWith("file:///") && !uri.startsWith("s3://")) {
            throw new ConfigException(URI_CONFIG, rawUri, "accepted values: file:///absolute/path or s3://bucket[/prefix]");
        }
        long interval = KstateStoreOptions.longAtLeast(configs, INTERVAL_MS_CONFIG, DEFAULT_INTERVAL_MS, 1,
            "accepted values: a positive number of milliseconds");
        long keep = KstateStoreOptions.longAtLeast(configs, KEEP_CONFIG, DEFAULT_KEEP, 1,
            "accepted values: a number of checkpoints from 1 to 1000");
        if (keep > 1000) {
            throw new ConfigException(KEEP_CONFIG, configs.get(KEEP_CONFIG),
                "accepted values: a number of checkpoints from 1 to 1000");
        }
        long maxBps = KstateStoreOptions.longAtLeast(configs, MAX_BYTES_PER_SEC_CONFIG, 0, 1,
            "accepted values: a positive number of bytes per second (unset: unbounded)");
        long maxRestoreBps = KstateStoreOptions.longAtLeast(configs, MAX_RESTORE_BYTES_PER_SEC_CONFIG, 0, 1,
            "accepted values: a positive number of bytes per second (unset: unbounded)");
        long grace = KstateStoreOptions.longAtLeast(configs, GC_GRACE_MS_CONFIG, DEFAULT_GC_GRACE_MS, 0,
            "accepted values: a number of milliseconds, 0 or more");
        boolean restore = KstateStoreOptions.booleanConfig(configs, RESTORE_CONFIG, true);
        Map<String, String> s3 = new TreeMap<>();
        if (configs != null) {
            for (Map.Entry<String, ?> e : configs.entrySet()) {
                if (e.getKey().startsWith(S3_PREFIX)) {
                    String name = e.getKey().substring(S3_PREFIX.length());
                    if (name.isEmpty() || e.getValue() == null) {
                        throw new ConfigException(e.getKey(), e.getValue(),
                            "accepted: kstate.checkpoint.s3.<object_store S3 option>=<value>");
                    }
                    s3.put(name, String.valueOf(e.getValue()));
                }
            }
        }
        return new CheckpointSettings(uri, interval, (int) keep, maxBps, maxRestoreBps, grace, restore,
            Collections.unmodifiableMap(s3));
    }

    /** @return true when a uri is set */
    boolean enabled() {
        return uri != null;
    }

    /** @return what identifies the native target these settings open (one per process is shared) */
    String targetKey() {
        return uri + " " + s3Options + " " + maxBytesPerSec + " " + maxRestoreBytesPerSec + " " + gcGraceMs;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof CheckpointSettings)) {
            return false;
        }
        CheckpointSettings c = (CheckpointSettings) o;
        return Objects.equals(uri, c.uri) && intervalMs == c.intervalMs && keep == c.keep
            && maxBytesPerSec == c.maxBytesPerSec && maxRestoreBytesPerSec == c.maxRestoreBytesPerSec
            && gcGraceMs == c.gcGraceMs && restore == c.restore
            && s3Options.equals(c.s3Options);
    }

    @Override
    public int hashCode() {
        return Objects.hash(uri, intervalMs, keep, maxBytesPerSec, maxRestoreBytesPerSec, gcGraceMs, restore, s3Options);
    }

    @Override
    public String toString() {
        // The S3 options may hold a secret: only their names.
        return "CheckpointSettings{" + uri + ", interval " + intervalMs + " ms, keep " + keep + ", max " + maxBytesPerSec
            + " B/s, restores max " + maxRestoreBytesPerSec + " B/s, gc grace " + gcGraceMs + " ms, restore " + restore
            + ", s3 options " + s3Options.keySet() + "}";
    }
}
