package dev.kstate.streams;

import dev.kstate.internal.AbstractNativeStore;
import dev.kstate.internal.NativeRemote;
import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.internals.InternalProcessorContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checkpoints of RocksDB stores in an object store ({@code kstate.checkpoint.*}, see
 * {@link CheckpointSettings}): the restore of a store without local state from the newest
 * usable checkpoint, before Kafka Streams' changelog restore ({@link #restore}), and the
 * publication of each open store's committed state, in the background every interval and at
 * close ({@link Publisher}).
 *
 * <p>A checkpoint never makes state wrong: one is used only when its changelog partition is
 * the store's, its offset lies within the changelog ({@code logStart - 1 <= offset <= end}) and
 * it is younger than the changelog's {@code delete.retention.ms} (an older one could resurrect
 * keys whose tombstones compaction removed since). Any doubt or error falls back to Kafka's
 * normal restore of an empty store, with the reason logged.
 */
final class RemoteCheckpoints {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteCheckpoints.class);
    /** How long the Admin requests of a restore decision may take each. */
    static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(15);
    /** Test hook: the changelog facts to use instead of an Admin client (null: Admin). */
    static volatile ChangelogFacts factsOverride;

    /** The process's open targets, shared by every store with the same settings, by {@link CheckpointSettings#targetKey}. */
    private static final Map<String, Shared> TARGETS = new HashMap<>();
    /**
     * The restores' Admin clients, by their configs: created by the first restore of an
     * application and closed when the process's last target closes, so that the restores of
     * a rebalance do not each pay for a client's start and close.
     */
    private static final Map<Map<String, Object>, Admin> ADMINS = new HashMap<>();
    /** The one publisher thread of the process; created with the first store that publishes. */
    private static ScheduledThreadPoolExecutor scheduler;

    private RemoteCheckpoints() {
    }

    private static final class Shared {
        final NativeRemote remote;
        int users;

        Shared(NativeRemote remote) {
            this.remote = remote;
        }
    }

    /**
     * Checks that libkstate can publish checkpoints when a uri is set.
     *
     * @throws ConfigException when the library was built without the cargo feature {@code remote}
     */
    static void checkSupported(CheckpointSettings settings) {
        if (settings.enabled() && !NativeRemote.isSupported()) {
            throw new ConfigException(CheckpointSettings.URI_CONFIG, settings.uri, "this libkstate was built without "
                + "the cargo feature 'remote', so checkpoints in an object store are not available; use a libkstate "
                + "built with --features remote (the jar's own is) or unset " + CheckpointSettings.URI_CONFIG);
        }
    }

    /** Opens (or shares) the target of {@code settings}; release it with {@link #release}. */
    static synchronized NativeRemote acquire(CheckpointSettings settings) {
        Shared shared = TARGETS.get(settings.targetKey());
        if (shared == null || !shared.remote.isOpen()) {
            shared = new Shared(NativeRemote.open(settings.uri, settings.s3Options, settings.maxBytesPerSec,
                settings.maxRestoreBytesPerSec, settings.gcGraceMs, null));
            TARGETS.put(settings.targetKey(), shared);
        }
        shared.users++;
        return shared.remote;
    }

    /** Gives back a target of {@link #acquire}; the last user closes it. */
    static synchronized void release(CheckpointSettings settings, NativeRemote remote) {
        Shared shared = TARGETS.get(settings.targetKey());
        if (shared == null || shared.remote != remote) {
            remote.close();
            return;
        }
        if (--shared.users == 0) {
            TARGETS.remove(settings.targetKey());
            remote.close();
            if (TARGETS.isEmpty()) {
                // no store of the process uses a target, so no restore runs
                ADMINS.values().forEach(a -> a.close(Duration.ZERO));
                ADMINS.clear();
            }
        }
    }

    /** The shared Admin client for an application's configs; only while the caller holds a target. */
    private static synchronized Admin admin(Map<String, Object> appConfigs) {
        return ADMINS.computeIfAbsent(ChangelogFacts.adminConfigs(appConfigs), Admin::create);
    }

    private static synchronized ScheduledThreadPoolExecutor scheduler() {
        if (scheduler == null) {
            scheduler = new ScheduledThreadPoolExecutor(1, r -> {
                Thread t = new Thread(r, "kstate-checkpoint-publisher");
                t.setDaemon(true);
                return t;
            });
            scheduler.setRemoveOnCancelPolicy(true);
        }
        return scheduler;
    }

    /**
     * The store's changelog partition, or null when the store is not logged (no remote
     * restore then). Kafka's internal context knows the topic (prefix and source-topic
     * changelogs included); another context (a test's) gets Kafka's naming rule.
     */
    static TopicPartition changelogOf(StateStoreContext context, String storeName) {
        String topic;
        if (context instanceof InternalProcessorContext) {
            topic = ((InternalProcessorContext<?, ?>) context).changelogFor(storeName);
        } else {
            topic = context.applicationId() + "-" + storeName + "-changelog";
        }
        return topic == null ? null : new TopicPartition(topic, context.taskId().partition());
    }

    /** What a remote restore brought. */
    static final class Restored {
        final String key;
        final long sequence;
        final long bytes;
        final int files;
        final long offset;

        Restored(String key, long sequence, long bytes, int files, long offset) {
            this.key = key;
            this.sequence = sequence;
            this.bytes = bytes;
            this.files = files;
            this.offset = offset;
        }
    }

    /**
     * Restores the newest usable checkpoint of the store into {@code dir}, which holds no
     * files (an empty directory is removed first). Never throws: any failure is logged and
     * null returned, leaving {@code dir} without files for Kafka's restore.
     *
     * @param label how the log names the store ("kstate store NAME (task T)")
     * @return what was restored, or null when nothing was
     */
    static Restored restore(CheckpointSettings settings, StateStoreContext context, String storeName, File dir,
                            String label) {
        TopicPartition changelog;
        try {
            changelog = changelogOf(context, storeName);
        } catch (RuntimeException e) {
            LOG.warn("{}: no remote restore: its changelog is unknown ({}); Kafka Streams restores it from the "
                + "changelog", label, e.toString());
            return null;
        }
        if (changelog == null) {
            LOG.info("{}: no remote restore: the store is not logged", label);
            return null;
        }
        NativeRemote remote;
        try {
            remote = acquire(settings);
        } catch (RuntimeException e) {
            LOG.warn("{}: no remote restore: cannot open {}: {}; Kafka Streams restores it from the changelog", label,
                settings.uri, e.toString(), e);
            return null;
        }
        try {
            return restoreFrom(remote, settings, context, storeName, changelog, dir, label);
        } catch (RuntimeException e) {
            LOG.warn("{}: no remote restore from {}: {}; Kafka Streams restores it from the changelog", label,
                settings.uri, e.toString(), e);
            return null;
        } finally {
            release(settings, remote);
        }
    }

    private static Restored restoreFrom(NativeRemote remote, CheckpointSettings settings, StateStoreContext context,
                                        String storeName, TopicPartition changelog, File dir, String label) {
        String app = context.applicationId();
        String task = context.taskId().toString();
        List<NativeRemote.ManifestSummary> all = remote.list(app, task, storeName);
        if (all.isEmpty()) {
            LOG.info("{}: no checkpoint in {}; Kafka Streams restores it from the changelog", label, settings.uri);
            return null;
        }
        List<NativeRemote.ManifestSummary> candidates = new ArrayList<>();
        for (NativeRemote.ManifestSummary m : all) {
            String why = staticRefusal(m, changelog);
            if (why != null) {
                LOG.warn("{}: refusing checkpoint {}: {}", label, m.key, why);
            } else {
                candidates.add(m);
            }
        }
        if (candidates.isEmpty()) {
            LOG.warn("{}: no usable checkpoint among {} in {}; Kafka Streams restores it from the changelog", label,
                all.size(), settings.uri);
            return null;
        }
        // The newest by changelog offset first: a zombie's later sequence never outranks the
        // new owner's further offset.
        candidates.sort(Comparator.<NativeRemote.ManifestSummary>comparingLong(m -> m.offsets.get(changelog))
            .thenComparingLong(m -> m.sequence).thenComparingLong(m -> m.publishedAtMs).reversed());
        ChangelogFacts source = factsOverride;
        if (source == null) {
            source = ChangelogFacts.admin(admin(context.appConfigs()), ADMIN_TIMEOUT);
        }
        ChangelogFacts.Facts facts;
        try {
            facts = source.facts(changelog);
        } catch (Exception e) {
            LOG.warn("{}: no remote restore: cannot read the facts of changelog {}: {}; Kafka Streams restores it from "
                + "the changelog", label, changelog, e.toString());
            return null;
        }
        long now = System.currentTimeMillis();
        for (NativeRemote.ManifestSummary m : candidates) {
            long offset = m.offsets.get(changelog);
            String why = changelogRefusal(m, offset, facts, now);
            if (why != null) {
                LOG.warn("{}: refusing checkpoint {}: {}", label, m.key, why);
                continue;
            }
            if (dir.isDirectory() && !dir.delete()) {
                LOG.warn("{}: no remote restore: cannot remove the empty directory {}", label, dir);
                return null;
            }
            LOG.info("{}: downloading checkpoint {} at changelog offset {} from {}", label, m.key, offset, settings.uri);
            NativeRemote.RestoreReport r;
            try {
                r = remote.restore(context.applicationId(), task, storeName, m.key, dir.toPath());
            } catch (RuntimeException e) {
                LOG.warn("{}: refusing checkpoint {}: its restore failed: {}", label, m.key, e.toString());
                continue;
            }
            LOG.info("{}: restored checkpoint {} ({} files, {} bytes) at changelog offset {}", label, r.key, r.files,
                r.bytes, offset);
            return new Restored(r.key, r.sequence, r.bytes, r.files, offset);
        }
        LOG.warn("{}: no usable checkpoint among {} in {}; Kafka Streams restores it from the changelog", label,
            all.size(), settings.uri);
        return null;
    }

    /** Why a checkpoint cannot be used whatever the changelog holds, or null. */
    static String staticRefusal(NativeRemote.ManifestSummary m, TopicPartition changelog) {
        if (!m.readable()) {
            return "unreadable: " + m.unreadable;
        }
        if (!m.offsets.containsKey(changelog)) {
            return "its changelog offsets " + m.offsets + " are not of this store's changelog partition " + changelog;
        }
        if (m.offsets.size() != 1) {
            return "it has offsets of other partitions than this store's changelog " + changelog + ": " + m.offsets;
        }
        return null;
    }

    /** Why a checkpoint at changelog offset {@code offset} cannot be used with these facts, or null. */
    static String changelogRefusal(NativeRemote.ManifestSummary m, long offset, ChangelogFacts.Facts facts, long now) {
        if (offset > facts.endOffset) {
            return "its changelog offset " + offset + " is beyond the changelog's end offset " + facts.endOffset
                + " (state the changelog does not hold)";
        }
        if (offset < facts.logStartOffset - 1) {
            return "its changelog offset " + offset + " is below the changelog's log-start offset "
                + facts.logStartOffset + " - 1 (the records after it are gone)";
        }
        long age = now - m.publishedAtMs;
        if (age >= facts.deleteRetentionMs) {
            return "it is " + age + " ms old, not younger than the changelog's delete.retention.ms "
                + facts.deleteRetentionMs + " (tombstones compacted away since could resurrect deleted keys)";
        }
        return null;
    }

    /**
     * Publishes one open store's committed state: in the background every interval (on the
     * process's one publisher thread) when it committed since the last publication, and once
     * more at close. Upload failures never reach the stream thread: logged and counted.
     */
    static final class Publisher implements AutoCloseable {
        private final CheckpointSettings settings;
        private final NativeRemote remote;
        private final Supplier<? extends AbstractNativeStore> store;
        private final String app;
        private final String task;
        private final String storeName;
        private final Path scratch;
        private final String label;
        /** Held for a publication; close takes it, the background only tries it. */
        private final ReentrantLock lock = new ReentrantLock();
        private final AtomicLong commits = new AtomicLong();
        private volatile boolean closing;
        private ScheduledFuture<?> scheduled;
        /** {@link #commits} at the last publication (or check), -1 before any. */
        private long publishedCommits = -1;
        /** Commit sequence of the newest checkpoint this store published or restored, -1 before any. */
        private long lastSequence;

        // metrics
        volatile long newestTakenAtMs = -1;
        final AtomicLong bytesUploaded = new AtomicLong();
        final AtomicLong filesUploaded = new AtomicLong();
        final AtomicLong filesReused = new AtomicLong();
        final AtomicLong failures = new AtomicLong();
        final AtomicLong publications = new AtomicLong();
        /** 1 when the store was restored from a checkpoint, else 0. */
        final int restoreSource;
        final long restoredBytes;

        private Publisher(CheckpointSettings settings, NativeRemote remote, Supplier<? extends AbstractNativeStore> store,
                          StateStoreContext context, String storeName, Restored restored, String label) {
            this.settings = settings;
            this.remote = remote;
            this.store = store;
            this.app = context.applicationId();
            this.task = context.taskId().toString();
            this.storeName = storeName;
            this.scratch = context.stateDir().toPath().resolve(".kstate-checkpoint-" + storeName);
            this.label = label;
            this.lastSequence = restored == null ? -1 : restored.sequence;
            this.restoreSource = restored == null ? 0 : 1;
            this.restoredBytes = restored == null ? 0 : restored.bytes;
        }

        /**
         * Starts publishing a store; never throws (a target that cannot be opened is logged and
         * the store runs without publications).
         *
         * @return the publisher, or null when the target cannot be opened
         */
        static Publisher start(CheckpointSettings settings, StateStoreContext context, String storeName,
                               Supplier<? extends AbstractNativeStore> store, Restored restored, String label) {
            NativeRemote remote;
            try {
                remote = acquire(settings);
            } catch (RuntimeException e) {
                LOG.warn("{}: publishes no checkpoints: cannot open {}: {}", label, settings.uri, e.toString(), e);
                return null;
            }
            Publisher p = new Publisher(settings, remote, store, context, storeName, restored, label);
            p.scheduled = scheduler().scheduleWithFixedDelay(p::publishScheduled, settings.intervalMs,
                settings.intervalMs, TimeUnit.MILLISECONDS);
            return p;
        }

        /** Called after each commit of the store (processing, restore batches, flush). */
        void committed() {
            commits.incrementAndGet();
        }

        private void publishScheduled() {
            // Skipped when closing: the close publishes itself, and a store must never be
            // published after its close began.
            if (closing || !lock.tryLock()) {
                return;
            }
            try {
                if (!closing) {
                    publish("interval");
                }
            } finally {
                lock.unlock();
            }
        }

        /**
         * Publishes now unless nothing was committed since the last publication (tests; the
         * background publication's work on the calling thread).
         *
         * @return true when it ran (the store was open and not closing)
         */
        boolean publishNow() {
            lock.lock();
            try {
                if (closing) {
                    return false;
                }
                return publish("request");
            } finally {
                lock.unlock();
            }
        }

        /** Publishes one last time if the store committed since, then stops; before the store's native close. */
        @Override
        public void close() {
            closing = true;
            ScheduledFuture<?> f = scheduled;
            if (f != null) {
                f.cancel(false);
            }
            lock.lock();
            try {
                publish("close");
            } finally {
                lock.unlock();
                release(settings, remote);
            }
        }

        /** One publication under the lock; false when the store is not open. */
        private boolean publish(String why) {
            AbstractNativeStore s = store.get();
            if (s == null || !s.isOpen()) {
                return false;
            }
            long commitsNow = commits.get();
            if (commitsNow == publishedCommits) {
                return true;
            }
            long takenAt = System.currentTimeMillis();
            NativeRemote.PublishReport r;
            try {
                r = remote.publishStore(s, scratch, app, task, storeName, lastSequence);
            } catch (RuntimeException e) {
                failures.incrementAndGet();
                LOG.warn("{}: publishing a checkpoint to {} ({}) failed; processing goes on: {}", label, settings.uri,
                    why, e.toString(), e);
                return true;
            }
            publishedCommits = commitsNow;
            if (r.manifest == null) {
                if (r.sequence == lastSequence) {
                    newestTakenAtMs = takenAt; // the published checkpoint is still the committed state
                }
                return true;
            }
            lastSequence = r.sequence;
            newestTakenAtMs = takenAt;
            publications.incrementAndGet();
            bytesUploaded.addAndGet(r.bytesUploaded);
            filesUploaded.addAndGet(r.filesUploaded);
            filesReused.addAndGet(r.filesReused);
            LOG.info("{}: published checkpoint {} ({}): {} files ({} bytes) uploaded, {} files ({} bytes) reused", label,
                r.manifest, why, r.filesUploaded, r.bytesUploaded, r.filesReused, r.bytesReused);
            try {
                NativeRemote.GcReport g = remote.gc(app, task, storeName, settings.keep);
                if (g.manifestsDeleted > 0 || g.filesDeleted > 0) {
                    LOG.debug("{}: garbage collection deleted {} checkpoints and {} files", label, g.manifestsDeleted,
                        g.filesDeleted);
                }
            } catch (RuntimeException e) {
                failures.incrementAndGet();
                LOG.warn("{}: garbage collection of old checkpoints in {} failed: {}", label, settings.uri, e.toString(),
                    e);
            }
            return true;
        }

        /** @return ms since the newest published checkpoint matching the committed state was taken, -1 before any */
        long ageMs() {
            long t = newestTakenAtMs;
            return t < 0 ? -1 : Math.max(0, System.currentTimeMillis() - t);
        }
    }
}
