package dev.kstate.internal;

import dev.kstate.streams.KstateException;
import dev.kstate.streams.KstateInvalidStateStoreException;
import dev.kstate.streams.KstateProcessorStateException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicPartition;

/**
 * A checkpoint target in an object store ({@code file:///path} or {@code s3://bucket/prefix};
 * {@code kstate::remote::Remote}): publishes checkpoints of open stores, lists, restores and
 * garbage-collects them, per (application id, task, store). One native handle, closed exactly
 * once (a CAS on it); a call on a closed target throws {@link KstateInvalidStateStoreException}.
 * Thread-safe: calls may run concurrently (each holds the native target for its duration).
 * Failures are the typed exceptions of every native, with their stable codes.
 */
public final class NativeRemote implements AutoCloseable {
    private final String uri;
    private final AtomicLong handle;

    private NativeRemote(String uri, long handle) {
        this.uri = uri;
        this.handle = new AtomicLong(handle);
    }

    /**
     * @return whether the loaded libkstate was built with the cargo feature {@code remote}
     * @throws UnsatisfiedLinkError when libkstate cannot be loaded at all
     */
    public static boolean isSupported() {
        KstateNative.ensureLoaded();
        return KstateNative.remoteSupported();
    }

    /**
     * Opens a checkpoint target without a download bound; see
     * {@link #open(String, Map, long, long, long, String)}.
     *
     * @param uri the target
     * @param options S3 settings
     * @param maxBytesPerSec upload bandwidth bound, 0 or less for none
     * @param gcGraceMs garbage collection never deletes a file object younger than this
     * @param writerId this publisher's name in manifest keys, null for a default
     * @return the target
     */
    public static NativeRemote open(String uri, Map<String, String> options, long maxBytesPerSec, long gcGraceMs,
                                    String writerId) {
        return open(uri, options, maxBytesPerSec, 0, gcGraceMs, writerId);
    }

    /**
     * Opens a checkpoint target; makes no request.
     *
     * @param uri {@code file:///absolute/path} (created if missing) or {@code s3://bucket[/prefix]}
     * @param options S3 settings by their object_store names ({@code endpoint}, {@code region},
     *     {@code access_key_id}, {@code secret_access_key}, {@code allow_http}...), applied after
     *     the {@code AWS_*} environment; {@code file://} refuses any
     * @param maxBytesPerSec upload bandwidth bound, 0 or less for none
     * @param maxRestoreBytesPerSec download bandwidth bound of all the restores through this
     *     target together, 0 or less for none
     * @param gcGraceMs garbage collection never deletes a file object younger than this
     * @param writerId this publisher's name in manifest keys ({@code [A-Za-z0-9._-]}), null for
     *     a default built from the host name, process id and clock
     * @return the target
     * @throws KstateProcessorStateException with {@code INVALID_ARGUMENT} for another scheme or a
     *     bad option, {@code UNSUPPORTED} when libkstate was built without the feature
     */
    public static NativeRemote open(String uri, Map<String, String> options, long maxBytesPerSec,
                                    long maxRestoreBytesPerSec, long gcGraceMs, String writerId) {
        Objects.requireNonNull(uri, "uri");
        if (!isSupported()) {
            throw new KstateProcessorStateException("kstate: this libkstate was built without the cargo feature "
                + "'remote': checkpoints in an object store are not available", KstateException.UNSUPPORTED);
        }
        Map<String, String> opts = options == null ? Collections.emptyMap() : options;
        String[] names = new String[opts.size()];
        String[] values = new String[opts.size()];
        int i = 0;
        for (Map.Entry<String, String> e : opts.entrySet()) {
            names[i] = e.getKey();
            values[i] = e.getValue();
            i++;
        }
        return new NativeRemote(uri, KstateNative.remoteOpen(uri, names, values, maxBytesPerSec,
            maxRestoreBytesPerSec, gcGraceMs, writerId));
    }

    /** @return the target's URI */
    public String uri() {
        return uri;
    }

    /** @return true until closed */
    public boolean isOpen() {
        return handle.get() != 0;
    }

    private long handle() {
        long h = handle.get();
        if (h == 0) {
            throw new KstateInvalidStateStoreException("checkpoint target " + uri + " is closed", KstateException.STORE_CLOSED);
        }
        return h;
    }

    /** Releases the target. Idempotent; a call in flight on another thread finishes first. */
    @Override
    public void close() {
        long h = handle.getAndSet(0);
        if (h != 0) {
            KstateNative.remoteClose(h);
        }
    }

    /**
     * Writes a checkpoint of {@code store}'s last commit to {@code scratchDir} (hard links: on the
     * store's file system), publishes it under (app, task, storeName) unless its commit sequence
     * is {@code lastSequence} or it has no changelog offsets, and removes {@code scratchDir}
     * whatever happened.
     *
     * @param store an open RocksDB store of any kind
     * @param scratchDir a directory the call owns (removed first if it exists)
     * @param app the application id
     * @param task the task id
     * @param storeName the store name
     * @param lastSequence the sequence published last, -1 for none
     * @return what was published
     */
    public PublishReport publishStore(AbstractNativeStore store, Path scratchDir, String app, String task,
                                      String storeName, long lastSequence) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(scratchDir, "scratchDir");
        ByteBuffer b = ByteBuffer.wrap(KstateNative.remotePublishStore(handle(), store.handle(), scratchDir.toString(),
            app, task, storeName, lastSequence));
        return new PublishReport(string(b), b.getLong(), b.getLong(), b.getLong(), b.getInt(), b.getInt(), b.getInt() != 0);
    }

    /**
     * @param app the application id
     * @param task the task id
     * @param storeName the store name
     * @return the store's published checkpoints, newest first (the target's order)
     */
    public List<ManifestSummary> list(String app, String task, String storeName) {
        ByteBuffer b = ByteBuffer.wrap(KstateNative.remoteList(handle(), app, task, storeName));
        int n = b.getInt();
        List<ManifestSummary> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String key = string(b);
            String unusable = string(b);
            long sequence = b.getLong();
            long publishedAt = b.getLong();
            int storeFormat = b.getInt();
            String writer = string(b);
            out.add(new ManifestSummary(key, unusable, sequence, publishedAt, storeFormat, writer, offsets(b)));
        }
        return Collections.unmodifiableList(out);
    }

    /**
     * Downloads checkpoint {@code key} into the new directory {@code destDir} (checked against
     * the manifest's sizes and hashes; nothing is left there on failure).
     *
     * @param app the application id
     * @param task the task id
     * @param storeName the store name
     * @param key the manifest key, as {@link #list} gives it
     * @param destDir a directory that must not exist
     * @return what was restored
     */
    public RestoreReport restore(String app, String task, String storeName, String key, Path destDir) {
        Objects.requireNonNull(destDir, "destDir");
        ByteBuffer b = ByteBuffer.wrap(KstateNative.remoteRestore(handle(), app, task, storeName, key,
            destDir.toString()));
        return new RestoreReport(string(b), b.getInt(), b.getLong(), b.getLong(), b.getLong(), offsets(b));
    }

    /**
     * Deletes the store's checkpoints beyond the newest {@code keep} and every file object no
     * remaining manifest names (past the grace period).
     *
     * @param app the application id
     * @param task the task id
     * @param storeName the store name
     * @param keep how many to keep, at least 1
     * @return what was deleted
     */
    public GcReport gc(String app, String task, String storeName, int keep) {
        ByteBuffer b = ByteBuffer.wrap(KstateNative.remoteGc(handle(), app, task, storeName, keep));
        return new GcReport(b.getInt(), b.getInt(), b.getInt());
    }

    private static String string(ByteBuffer b) {
        int len = b.getInt();
        if (len < 0) {
            return null;
        }
        byte[] bytes = new byte[len];
        b.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static Map<TopicPartition, Long> offsets(ByteBuffer b) {
        int n = b.getInt();
        Map<TopicPartition, Long> out = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            String topic = string(b);
            int partition = b.getInt();
            out.put(new TopicPartition(topic, partition), b.getLong());
        }
        return Collections.unmodifiableMap(out);
    }

    @Override
    public String toString() {
        return "NativeRemote{" + uri + (isOpen() ? "" : ", closed") + "}";
    }

    /** What {@link #publishStore} did. */
    public static final class PublishReport {
        /** The manifest's key, null when nothing was published (sequence unchanged, or no offsets). */
        public final String manifest;
        /** The commit sequence of the checkpoint taken. */
        public final long sequence;
        /** Bytes uploaded. */
        public final long bytesUploaded;
        /** Bytes the target already held. */
        public final long bytesReused;
        /** Files uploaded. */
        public final int filesUploaded;
        /** Files the target already held. */
        public final int filesReused;
        /** False when this writer had published this sequence before (nothing overwritten). */
        public final boolean manifestCreated;

        PublishReport(String manifest, long sequence, long bytesUploaded, long bytesReused, int filesUploaded,
                      int filesReused, boolean manifestCreated) {
            this.manifest = manifest;
            this.sequence = sequence;
            this.bytesUploaded = bytesUploaded;
            this.bytesReused = bytesReused;
            this.filesUploaded = filesUploaded;
            this.filesReused = filesReused;
            this.manifestCreated = manifestCreated;
        }

        @Override
        public String toString() {
            return "PublishReport{" + manifest + ", sequence " + sequence + ", uploaded " + filesUploaded + " files ("
                + bytesUploaded + " bytes), reused " + filesReused + " files (" + bytesReused + " bytes)}";
        }
    }

    /** One published checkpoint, as {@link #list} shows it. */
    public static final class ManifestSummary {
        /** The manifest's key. */
        public final String key;
        /** Why it cannot be used (unreadable manifest, newer format), null when readable. */
        public final String unreadable;
        /** Commit sequence, -1 when unreadable. */
        public final long sequence;
        /** Publication time by the writer's clock (ms since the epoch), 0 when unreadable. */
        public final long publishedAtMs;
        /** Store format version of the writer, 0 when unreadable. */
        public final int storeFormat;
        /** The publisher's writer id, null when unreadable. */
        public final String writer;
        /** The committed changelog offsets, empty when unreadable. */
        public final Map<TopicPartition, Long> offsets;

        ManifestSummary(String key, String unreadable, long sequence, long publishedAtMs, int storeFormat,
                        String writer, Map<TopicPartition, Long> offsets) {
            this.key = key;
            this.unreadable = unreadable;
            this.sequence = sequence;
            this.publishedAtMs = publishedAtMs;
            this.storeFormat = storeFormat;
            this.writer = writer;
            this.offsets = offsets;
        }

        /** @return true when the manifest is readable by this build */
        public boolean readable() {
            return unreadable == null;
        }

        @Override
        public String toString() {
            return "ManifestSummary{" + key + (readable() ? "" : ", unreadable: " + unreadable) + ", sequence " + sequence
                + ", offsets " + offsets + ", published at " + publishedAtMs + "}";
        }
    }

    /** What {@link #restore} did. */
    public static final class RestoreReport {
        /** The manifest's key. */
        public final String key;
        /** Files written. */
        public final int files;
        /** Bytes downloaded. */
        public final long bytes;
        /** Commit sequence of the state restored. */
        public final long sequence;
        /** Publication time of the checkpoint (ms since the epoch). */
        public final long publishedAtMs;
        /** The committed changelog offsets of the state restored. */
        public final Map<TopicPartition, Long> offsets;

        RestoreReport(String key, int files, long bytes, long sequence, long publishedAtMs,
                      Map<TopicPartition, Long> offsets) {
            this.key = key;
            this.files = files;
            this.bytes = bytes;
            this.sequence = sequence;
            this.publishedAtMs = publishedAtMs;
            this.offsets = offsets;
        }
    }

    /** What {@link #gc} deleted. */
    public static final class GcReport {
        /** Manifests deleted. */
        public final int manifestsDeleted;
        /** File objects deleted. */
        public final int filesDeleted;
        /** Unreferenced file objects kept because they are younger than the grace period. */
        public final int filesInGrace;

        GcReport(int manifestsDeleted, int filesDeleted, int filesInGrace) {
            this.manifestsDeleted = manifestsDeleted;
            this.filesDeleted = filesDeleted;
            this.filesInGrace = filesInGrace;
        }
    }
}
