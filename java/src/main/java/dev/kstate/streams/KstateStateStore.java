package dev.kstate.streams;

import dev.kstate.internal.AbstractNativeStore;
import dev.kstate.internal.KstateNative;
import dev.kstate.internal.NativeStore;
import dev.kstate.internal.Packing;
import dev.kstate.internal.ParkedStores;
import dev.kstate.internal.PositionCodec;
import java.io.File;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.apache.kafka.streams.query.FailureReason;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka Streams 4.4's {@link StateStore} contract, once for every kstate store kind (key-value,
 * window, session): init under {@code stateDir()/<name>/} (or in place over Kafka's own store,
 * adopted), {@code commit(Map)} of the writes with the changelog offsets and the
 * {@link Position} in one native step, {@code committedOffset}, {@code managesOffsets},
 * uncommitted bytes, restore batches committed at once with their changelog offset, idempotent
 * close, metrics, the start-up path's parking and deferred open, position tracking and IQv2's
 * isolation and position bound. A kind says how to open its native store, what it is opened
 * with, how it restores and which queries it answers.
 *
 * @param <S> the native store kind
 */
abstract class KstateStateStore<S extends AbstractNativeStore> implements StateStore {
    private static final Logger LOG = LoggerFactory.getLogger(KstateStateStore.class);
    /** Kafka's internal config that turns on the IQ consistency vector in changelog headers. */
    static final String IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED = "__iq.consistency.offset.vector.enabled__";
    /** {@code QueryConfig#getIsolationLevel()}, absent before Kafka Streams 4.4. */
    private static final Method QUERY_ISOLATION = queryIsolationMethod();

    final KstateStoreOptions options;
    volatile S store;
    volatile StateStoreContext context;
    volatile Position position = Position.emptyPosition();
    volatile Position committedPosition = Position.emptyPosition();
    volatile File directory;
    private volatile boolean consistencyEnabled;
    /** The store's metrics while it is open. */
    private volatile KstateMetrics metrics;
    /** Park the native store on close for this long (ms): initialised by Kafka's start-up path; else 0. */
    private volatile long parkMillis;
    /** What the native store was opened with: an adopter must open with equal options. */
    private volatile List<Object> openOptions;
    /**
     * True while the store was created empty by this init and nothing has been written,
     * restored or adopted since: a committed offset would claim data the store does not hold.
     */
    private volatile boolean emptySinceCreation;
    /**
     * Set while the store, initialised by Kafka Streams' start-up path, answers from its
     * offsets hint and has not opened its native store (see {@link StartupParking#deferOpen}).
     */
    private volatile StartupParking.Deferred deferred;
    /** Writes the offsets hint after each commit (a RocksDB store in kstate's own directory); else null. */
    volatile OffsetsHint.Writer hintWriter;
    /** False when Kafka commits this store only on forced commits: see {@link #approximateNumUncommittedBytes()}. */
    private volatile boolean reportsUncommittedBytes = true;
    /** Publishes the store's checkpoints to an object store ({@code kstate.checkpoint.uri}); else null. */
    private volatile RemoteCheckpoints.Publisher publisher;

    KstateStateStore(KstateStoreOptions options) {
        this.options = options;
    }

    // ----- what a store kind says ----------------------------------------------------------------

    /** @return what this store adopts a directory of Kafka's as (recorded for the task's all-or-nothing check) */
    abstract TaskAdoption.Plan adoptionPlan();

    /** Opens the native store at {@code path} (null for the memory engine). */
    abstract S openNative(String path, int engine, long maxUncommittedBytes, boolean syncOnCommit,
                          NativeStore.RocksTuning tuning);

    /** @return what, besides the common options, a native store of this kind is opened with (kind, format...) */
    abstract List<Object> shape();

    /**
     * @return Kafka's metrics tag naming the store: the key-value stores' by default
     *     ({@code rocksdb-state-id}, {@code in-memory-state-id}); segmented kinds name theirs
     */
    String stateIdTag() {
        return options.engine == KstateStoreOptions.Engine.ROCKSDB ? KstateMetrics.ROCKSDB_STATE_ID_TAG
            : KstateMetrics.MEMORY_STATE_ID_TAG;
    }

    /** @return the store for messages: "store NAME", "window store NAME"... */
    abstract String label();

    /** @return what the open's log line says of the store besides its origin (format, retention...) */
    abstract String openedDetails();

    /**
     * Where a RocksDB store's files are. Kafka's own store of the same name is opened in place
     * (adopted): the kind says where Kafka keeps it.
     *
     * @param stateDir the task directory
     * @return the directory to open
     */
    abstract Location locate(File stateDir);

    /** Writes a restored changelog batch (Kafka store keys) into the transaction. */
    abstract void putAllStoreKeys(S s, byte[] packed);

    /** Writes a restored changelog batch and commits it with its changelog offset and the position, at once. */
    abstract void restoreCommitted(S s, byte[] packed, Map<TopicPartition, Long> offsets, byte[] metadata);

    /**
     * Writes a restored changelog batch and commits it with its changelog offset and the
     * position, at once: the key and value of each record, unless the kind's changelog records
     * carry more (a versioned store's record timestamp is the version's).
     *
     * @param records the batch as Kafka hands it over
     * @param entries their keys and values
     */
    void restoreCommittedRecords(S s, Collection<ConsumerRecord<byte[], byte[]>> records,
                                 List<KeyValue<byte[], byte[]>> entries, Map<TopicPartition, Long> offsets,
                                 byte[] metadata) {
        restoreCommitted(s, Packing.packRaw(entries), offsets, metadata);
    }

    /**
     * Answers an IQv2 query (position bound and failures are handled by {@link #query}).
     *
     * @param query the query
     * @param committed read committed data only
     * @param <R> the result type
     * @return the result, or {@code QueryResult.forUnknownQueryType}
     */
    abstract <R> QueryResult<R> answer(Query<R> query, boolean committed);

    /** Where a RocksDB store's files are, and what they are. */
    static final class Location {
        final File dir;
        /** Nothing is there yet: a new store. */
        final boolean fresh;
        /** A Kafka store to adopt: the task's all-or-nothing check runs first. */
        final boolean adoptsKafka;
        /** kstate's own directory: the start-up path may park and defer it, and it keeps an offsets hint. */
        final boolean ownDirectory;
        /** For the open's log line. */
        final String origin;

        /**
         * @param adoptedOrigin how the log names a Kafka store that is adopted; every kind's new
         *     and existing stores are named alike
         */
        Location(File dir, boolean adoptsKafka, boolean ownDirectory, String adoptedOrigin) {
            this.dir = dir;
            this.adoptsKafka = adoptsKafka;
            this.fresh = !hasFiles(dir);
            this.origin = fresh ? "new store" : adoptsKafka ? adoptedOrigin : "existing store";
            this.ownDirectory = ownDirectory;
        }
    }

    /**
     * Records this store's adoption plan for the task (RocksDB engine); a kind's constructor
     * calls it once the fields the plan reads are set.
     */
    final void recordAdoptionPlan() {
        if (options.engine == KstateStoreOptions.Engine.ROCKSDB) {
            TaskAdoption.record(adoptionPlan());
        }
    }

    // ----- life cycle ----------------------------------------------------------------------------

    @Override
    public String name() {
        return options.name;
    }

    @Override
    @SuppressWarnings("unchecked") // a parked store adopted with equal options has this kind (the shape says so)
    public void init(StateStoreContext context, StateStore root) {
        if (deferred != null || (store != null && store.isOpen())) {
            throw new IllegalStateException("store " + name() + " is already initialised");
        }
        Map<String, Object> configs = context.appConfigs();
        KstateStoreOptions.validate(configs);
        CheckpointSettings checkpoints = CheckpointSettings.of(configs);
        if (options.engine == KstateStoreOptions.Engine.ROCKSDB) {
            RemoteCheckpoints.checkSupported(checkpoints);
        }
        RemoteCheckpoints.Restored restored = null;
        String remoteLabel = "kstate store " + name() + " (task " + context.taskId() + ")";
        reportsUncommittedBytes = !KafkaStoreCommits.onlyForced(configs);
        if (options.engine == KstateStoreOptions.Engine.ROCKSDB) {
            configs = KstateStoreOptions.withRocksDbConfigSetter(name(), configs);
        }
        String path = null;
        int engine = KstateNative.ENGINE_MEMORY;
        String origin = "new in-memory store";
        boolean fresh = true;
        File dir = null;
        boolean ownDirectory = false;
        if (options.engine == KstateStoreOptions.Engine.ROCKSDB) {
            Location where = locate(context.stateDir());
            dir = where.dir;
            fresh = where.fresh;
            origin = where.origin;
            ownDirectory = where.ownDirectory;
            path = dir.getAbsolutePath();
            engine = KstateNative.ENGINE_ROCKSDB;
            if (where.adoptsKafka) {
                // before anything of the task is adopted: all of its Kafka stores, or none
                TaskAdoption.check(context.stateDir(), adoptionPlan(), dir, name() + " (task " + context.taskId() + ")",
                    context.taskId(), KafkaStoreCommits.opensLeftOpen(configs));
            }
            if (checkpoints.enabled() && checkpoints.restore && fresh && ownDirectory && !where.adoptsKafka) {
                // Before anything is opened: the store then opens the checkpoint as an existing
                // store, reports its committed offset, and Kafka restores only the changelog after it.
                restored = RemoteCheckpoints.restore(checkpoints, context, name(), dir, remoteLabel);
                if (restored != null) {
                    fresh = false;
                    origin = "checkpoint " + restored.key + " restored from " + checkpoints.uri;
                }
            }
        }
        NativeStore.RocksTuning tuning = options.resolvedRocksTuning(configs);
        boolean statistics = options.resolvedStatistics(configs);
        long maxUncommitted = options.resolvedMaxUncommittedBytes(configs);
        boolean syncOnCommit = options.resolvedSyncOnCommit(configs);
        List<Object> openOptions = Arrays.asList(shape(), maxUncommitted, syncOnCommit, tuning);
        long parkMs = StartupParking.parkMillis(context, dir != null);
        if (parkMs > 0 && ownDirectory) {
            StartupParking.openAhead(context, name(), openOptions, d -> () -> openNative(d.getAbsolutePath(),
                KstateNative.ENGINE_ROCKSDB, maxUncommitted, syncOnCommit, tuning), parkMs);
            String own = path;
            StartupParking.Deferred d = fresh ? null : StartupParking.deferOpen(context, dir, openOptions,
                () -> openNative(own, KstateNative.ENGINE_ROCKSDB, maxUncommitted, syncOnCommit, tuning), parkMs,
                name() + " (task " + context.taskId() + ")");
            if (d != null) {
                initDeferred(context, root, dir, d, openOptions, parkMs);
                return;
            }
        }
        long openStart = System.nanoTime();
        S opened = null;
        String verb = "opened";
        if (dir != null) {
            // Adopted before the directory is (re)created: a parked store whose directory was
            // deleted must be closed while nothing stands at its path.
            ParkedStores.Parked parked = ParkedStores.adopt(dir, openOptions, name() + " (task " + context.taskId() + ")");
            if (parked != null) {
                opened = (S) parked.store();
                fresh = parked.emptySinceCreation();
                origin = parked.preOpened() ? "the store opened ahead in the background (ready " + parked.parkedMillis()
                    + " ms ago)" : "the store parked by Kafka Streams' start-up path " + parked.parkedMillis() + " ms ago "
                    + "(not opened again)";
                verb = "adopted";
            } else if (!dir.isDirectory() && !dir.mkdirs()) {
                throw new KstateProcessorStateException("cannot create the directory " + dir + " of store " + name(),
                    KstateException.IO);
            }
            directory = dir;
        }
        if (opened == null) {
            opened = openNative(path, engine, maxUncommitted, syncOnCommit, tuning);
        }
        position = recoveredPosition(name(), opened, opened::committedMetadata);
        committedPosition = position.copy();
        this.consistencyEnabled = booleanConfig(configs, IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED);
        this.emptySinceCreation = fresh;
        this.context = context;
        this.parkMillis = parkMs;
        this.openOptions = openOptions;
        this.hintWriter = ownDirectory ? new OffsetsHint.Writer(dir, name()) : null;
        this.store = opened;
        if (StartupParking.registersMetrics(context)) {
            metrics = KstateMetrics.register(context.metrics(), String.valueOf(context.taskId()), name(), stateIdTag(),
                options.engine == KstateStoreOptions.Engine.ROCKSDB, statistics, () -> store);
            registeredMetrics(context);
        }
        LOG.info("kstate {} (task {}): {} {}{} in {} ms, {}; committed position {}", label(), context.taskId(), verb,
            origin, path == null ? "" : " at " + path, (System.nanoTime() - openStart) / 1_000_000, openedDetails(),
            committedPosition);
        KafkaStoreCommits.warnIfOnlyForced(context.applicationId(), configs, label());
        context.register(root, new RestoreCallback());
        // Last: an init that failed before leaves no publication scheduled. Not on Kafka's
        // start-up path, whose stores only answer their offsets and close again.
        if (checkpoints.enabled() && ownDirectory && !StartupParking.isStartupPath(context)) {
            publisher = RemoteCheckpoints.Publisher.start(checkpoints, context, name(), () -> store, restored,
                remoteLabel);
            KstateMetrics m = metrics;
            if (publisher != null && m != null) {
                m.addCheckpointMetrics(publisher);
            }
        }
    }

    /** Called in {@link #init} when the store registers its metrics, for a kind's own sensors. */
    void registeredMetrics(StateStoreContext context) {
    }

    /**
     * The committed position of a store just opened.
     *
     * @param name the store, for the message
     * @param opened the native store, closed when its position is unreadable
     * @param metadata reads the position metadata of its last commit
     * @return the position
     * @throws KstateProcessorStateException with code {@code CORRUPTION} when it cannot be decoded
     */
    static Position recoveredPosition(String name, AutoCloseable opened, java.util.function.Supplier<byte[]> metadata) {
        try {
            return PositionCodec.decode(metadata.get());
        } catch (RuntimeException e) {
            try {
                opened.close();
            } catch (Exception closing) {
                e.addSuppressed(closing);
            }
            throw new KstateProcessorStateException("store " + name + ": unreadable position metadata: " + e.getMessage(),
                KstateException.CORRUPTION);
        }
    }

    /**
     * The start-up path's init of an existing store with an offsets hint: nothing is opened
     * here; the store answers {@link #committedOffset} and {@link #getPosition} from the hint,
     * treats the path's commit of those same offsets as the no-op it is, and opens (adopting
     * the background open) only if asked anything else. Its close leaves the background open
     * parked for the task's initialisation.
     */
    private void initDeferred(StateStoreContext context, StateStore root, File dir, StartupParking.Deferred d,
                             List<Object> openOptions, long parkMs) {
        position = d.position;
        committedPosition = d.position.copy();
        consistencyEnabled = booleanConfig(context.appConfigs(), IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED);
        emptySinceCreation = false;
        this.context = context;
        parkMillis = parkMs;
        this.openOptions = openOptions;
        directory = dir;
        hintWriter = new OffsetsHint.Writer(dir, name());
        deferred = d;
        LOG.info("kstate {} (task {}): deferred the open of the existing store at {} to the background; Kafka "
            + "Streams' start-up path is answered from its offsets hint {}", label(), context.taskId(), dir, d.hint);
        context.register(root, new RestoreCallback());
    }

    /** Opens a deferred store (see {@link #initDeferred}): adopts its background open, or opens it here. */
    @SuppressWarnings("unchecked") // the background open made a store of this kind (same options, same shape)
    private synchronized S openDeferred() {
        StartupParking.Deferred d = deferred;
        if (d == null) {
            return store;
        }
        long t0 = System.nanoTime();
        S s = (S) d.open();
        position = recoveredPosition(name(), s, s::committedMetadata);
        committedPosition = position.copy();
        store = s;
        deferred = null;
        LOG.info("kstate {} (task {}): opened the deferred store at {} in {} ms: the start-up path asked more than its "
            + "offsets hint answers", label(), context.taskId(), directory, (System.nanoTime() - t0) / 1_000_000);
        return s;
    }

    static boolean booleanConfig(Map<String, Object> configs, String key) {
        Object v = configs == null ? null : configs.get(key);
        return v != null && (v instanceof Boolean ? (Boolean) v : Boolean.parseBoolean(String.valueOf(v).trim()));
    }

    static boolean hasFiles(File dir) {
        String[] names = dir.list();
        return names != null && names.length > 0;
    }

    private static Method queryIsolationMethod() {
        try {
            return QueryConfig.class.getMethod("getIsolationLevel");
        } catch (NoSuchMethodException beforeKafka44) {
            return null;
        }
    }

    /**
     * The isolation level of an IQv2 query: its {@link QueryConfig}'s on Kafka Streams 4.4 and
     * later; READ_UNCOMMITTED (the writer's view, as Kafka's stores answer) on older runtimes,
     * whose QueryConfig carries no level.
     */
    static IsolationLevel isolationOf(QueryConfig config) {
        if (QUERY_ISOLATION == null) {
            return IsolationLevel.READ_UNCOMMITTED;
        }
        try {
            Object level = QUERY_ISOLATION.invoke(config);
            return level == null ? IsolationLevel.READ_UNCOMMITTED : (IsolationLevel) level;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the isolation level of " + config, e);
        }
    }

    /**
     * Writes each changelog batch with one native call. Implements Kafka's internal
     * {@link RecordBatchingStateRestoreCallback} (present in Kafka Streams 4.0 to 4.4) to get the
     * records with their headers: with the IQ consistency vector enabled, the store's
     * {@link Position} is rebuilt from them, as Kafka's own stores do.
     */
    private final class RestoreCallback implements RecordBatchingStateRestoreCallback {
        @Override
        public void restoreBatch(Collection<ConsumerRecord<byte[], byte[]>> records) {
            S s = open();
            if (records.isEmpty()) {
                return;
            }
            List<KeyValue<byte[], byte[]>> entries = new ArrayList<>(records.size());
            Position restored = consistencyEnabled ? position.copy() : null;
            long last = -1;
            ConsumerRecord<byte[], byte[]> any = null;
            for (ConsumerRecord<byte[], byte[]> record : records) {
                if (restored != null) {
                    mergeConsistencyHeaders(record, restored);
                }
                entries.add(KeyValue.pair(record.key(), record.value()));
                last = Math.max(last, record.offset());
                any = record;
            }
            // Restored records are committed in the changelog already: they are committed at once
            // with their own changelog offset (one batch is one changelog partition). Committed
            // this way they do not wait for the task's next commit, which under exactly-once never
            // comes for a task that restores and then has nothing to process, and read-committed
            // queries see them at once. Kafka restores before it processes, so the transaction has
            // no uncommitted writes here.
            Position snapshot = restored != null ? restored.copy() : position.copy();
            restoreCommittedRecords(s, records, entries,
                Collections.singletonMap(new TopicPartition(any.topic(), any.partition()), last),
                PositionCodec.encode(snapshot));
            committedForCheckpoints();
            emptySinceCreation = false;
            if (restored != null) {
                position = restored;
            }
            committedPosition = snapshot;
        }

        @Override
        public void restoreAll(Collection<KeyValue<byte[], byte[]>> records) {
            S s = open();
            if (!records.isEmpty()) {
                putAllStoreKeys(s, Packing.packRaw(records));
                emptySinceCreation = false;
            }
        }
    }

    /**
     * Kafka's rule (ChangelogRecordDeserializationHelper#applyChecksAndUpdatePosition, an
     * internal class, replicated here): header {@code "v"} = version; for version 0 the header
     * {@code "c"} must hold a Position (PositionSerde layout), merged into the store's position;
     * a newer version is skipped with a warning; no {@code "v"} header, nothing to do.
     */
    static void mergeConsistencyHeaders(ConsumerRecord<byte[], byte[]> record, Position into) {
        Header version = record.headers().lastHeader("v");
        if (version == null || version.value() == null || version.value().length == 0) {
            return;
        }
        if (version.value()[0] != 0) {
            LOG.warn("Changelog records have been encoded using a larger version than this server understands. "
                + "Please upgrade your server.");
            return;
        }
        Header vector = record.headers().lastHeader("c");
        if (vector == null || vector.value() == null) {
            throw new org.apache.kafka.streams.errors.StreamsException("This should not happen. Consistency is enabled but "
                + "the changelog contains records without consistency information.");
        }
        into.merge(PositionCodec.decodeKafka(vector.value()));
    }

    @Override
    @SuppressWarnings("deprecation") // kept for Kafka Streams 4.0-4.2 runtimes
    public void flush() {
        // Kafka Streams 4.0-4.2 call flush() to make writes durable and keep offsets in their
        // own checkpoint file; 4.4 calls commit(Map) instead and never flush().
        S s = open();
        Position snapshot = position.copy();
        s.flush(PositionCodec.encode(snapshot));
        committedPosition = snapshot;
        committedForCheckpoints();
    }

    /** Tells the checkpoint publisher, if any, that the store committed. */
    private void committedForCheckpoints() {
        RemoteCheckpoints.Publisher p = publisher;
        if (p != null) {
            p.committed();
        }
    }

    /** @return the store's checkpoint publisher ({@code kstate.checkpoint.uri}), or null */
    RemoteCheckpoints.Publisher checkpointPublisher() {
        return publisher;
    }

    @Override
    public void commit(Map<TopicPartition, Long> changelogOffsets) {
        StartupParking.Deferred d = deferred;
        if (d != null && changelogOffsets != null && d.hint.agrees(changelogOffsets)) {
            return; // the start-up path commits the offsets it read: nothing changes
        }
        S s = open();
        if (emptySinceCreation && changelogOffsets != null && changelogOffsets.values().stream().anyMatch(Objects::nonNull)) {
            // Kafka Streams migrates a legacy .checkpoint by committing its offsets right after
            // init. This store was created empty by that init: accepting them would make Kafka
            // skip restoring data the store does not hold.
            LOG.info("kstate store {}: ignoring committed offsets {}: the store was created empty in this init and holds "
                + "no data for them (a legacy .checkpoint from another store?). Kafka Streams will restore it from the "
                + "changelog.", name(), changelogOffsets);
            return;
        }
        Position snapshot = position.copy();
        Map<TopicPartition, Long> offsets = changelogOffsets == null ? Collections.emptyMap() : changelogOffsets;
        byte[] metadata = PositionCodec.encode(snapshot);
        s.commit(offsets, metadata);
        committedPosition = snapshot;
        committedForCheckpoints();
        OffsetsHint.Writer w = hintWriter;
        if (w != null) {
            w.committed(offsets, metadata);
        }
    }

    @Override
    public Long committedOffset(TopicPartition partition) {
        Objects.requireNonNull(partition, "partition cannot be null");
        StartupParking.Deferred d = deferred;
        if (d != null && d.hint.knows(partition)) {
            return d.hint.offset(partition);
        }
        Long offset = open().committedOffset(partition);
        if (offset == null && options.engine == KstateStoreOptions.Engine.MEMORY && persistent()) {
            // A memory store opens empty. Reported as persistent (a session store, see
            // KstateSessionStore#persistent), it answers Kafka's "no offset" rather than none:
            // Kafka then restores it from the changelog's start, as its own in-memory stores,
            // where none would make it, under exactly-once, wipe the task's other stores as
            // corrupted first.
            return KAFKA_NO_OFFSET;
        }
        return offset;
    }

    /**
     * Kafka Streams' committed offset of a store committed without a changelog offset
     * ({@code OFFSET_UNKNOWN} of its state manager, 4.3+), which it reads back as "restore from
     * the changelog's start".
     */
    static final long KAFKA_NO_OFFSET = -4L;

    @Override
    @SuppressWarnings("deprecation") // deprecated in 4.4 (every store will manage offsets); still consulted
    public boolean managesOffsets() {
        return true;
    }

    /**
     * The bytes of the store's uncommitted writes, which Kafka Streams sums over a thread's
     * stores to commit early past {@code statestore.uncommitted.max.bytes}. Always 0 when Kafka
     * commits the store only on forced commits ({@code exactly_once_v2} without
     * {@code enable.transactional.statestores}), as Kafka's own non-transactional stores
     * report: an early commit would not commit the store there, so the sum would stay past
     * the limit and every iteration of the stream thread would commit (a commit storm). The
     * memory the writes hold is bounded by spilling past {@code kstate.max.uncommitted.bytes}
     * instead.
     */
    @Override
    public long approximateNumUncommittedBytes() {
        S s = store;
        if (s == null || !s.isOpen() || !reportsUncommittedBytes) {
            return 0;
        }
        return s.approximateNumUncommittedBytes();
    }

    /**
     * Closes the store and its open iterators; uncommitted writes are discarded. Idempotent.
     *
     * <p>A store initialised by Kafka Streams' start-up path (see {@link StartupParking}) is
     * closed for Kafka (it reports closed, its metrics are gone, its uncommitted writes are
     * discarded) but its native store stays open, parked, for the task's next {@code init} of
     * the same directory to adopt ({@value KstateStoreOptions#STARTUP_PARK_MS_CONFIG}).
     */
    @Override
    public void close() {
        RemoteCheckpoints.Publisher p = publisher;
        if (p != null) {
            // Before the native close: the last commit is published (or the in-flight
            // publication finishes) while the store is open; never after.
            publisher = null;
            p.close();
        }
        KstateMetrics m = metrics;
        if (m != null) {
            metrics = null;
            m.close();
        }
        OffsetsHint.Writer hints = hintWriter;
        if (hints != null) {
            hints.close();
        }
        if (closeDeferred()) {
            return;
        }
        S s = store;
        if (s != null && s.isOpen()) {
            int leaked = s.openIterators();
            if (leaked > 0) {
                // As Kafka's RocksDBStore: an iterator left open is a bug in the caller.
                LOG.warn("Closing {} open iterators for store {}", leaked, name());
            }
            if (parkMillis > 0 && park(s)) {
                return;
            }
            s.close();
            LOG.debug("kstate store {} closed", name());
        }
    }

    /** Closes a store that is still deferred: its background open stays parked. */
    private synchronized boolean closeDeferred() {
        if (deferred == null) {
            return false;
        }
        deferred = null;
        LOG.info("kstate {} (task {}): closed by Kafka Streams' start-up path without being opened; its background "
            + "open is kept (parked) for up to {} ms for the task's initialisation to adopt", label(), context.taskId(),
            parkMillis);
        return true;
    }

    /** Parks the open native store (see {@link #close()}); false when it could not be (then it is closed as usual). */
    private boolean park(S s) {
        StateStoreContext ctx = context;
        try {
            s.closeIterators();
            s.rollback();
            ParkedStores.park(directory, openOptions, s, StartupParking.owner(ctx), emptySinceCreation, parkMillis,
                label() + " (task " + ctx.taskId() + ")");
        } catch (RuntimeException e) {
            LOG.warn("kstate {}: could not keep it open for adoption, closing it: {}", label(), e.toString());
            return false;
        }
        store = null;
        LOG.info("kstate {} (task {}): closed by Kafka Streams' start-up path; kept open (parked) for up to {} ms "
            + "for the task's initialisation to adopt", label(), ctx.taskId(), parkMillis);
        return true;
    }

    /**
     * The RocksDB engine's stores are persistent; the memory engine's are not (Kafka restores
     * them in full on every open), except its session stores on Kafka Streams 4.3+
     * ({@link KstateSessionStore#persistent()}).
     */
    @Override
    public boolean persistent() {
        return options.engine == KstateStoreOptions.Engine.ROCKSDB;
    }

    @Override
    public boolean isOpen() {
        S s = store;
        return deferred != null || (s != null && s.isOpen());
    }

    @Override
    public Position getPosition() {
        return position;
    }

    /**
     * Writes a checkpoint of this store's last commit to the new directory {@code dir}: a
     * consistent copy (table files hard-linked) with that commit's data, changelog offsets and
     * position, which opens as a kstate store of the same kind and options. Processing goes on
     * meanwhile (only a restore's file ingestion waits for the copy). A backup of a running
     * store; RocksDB engine only.
     *
     * @param dir the directory to create; it must not exist
     * @return what the checkpoint holds
     * @throws KstateProcessorStateException if {@code dir} exists ({@code INVALID_ARGUMENT}), for
     *     the memory engine ({@code UNSUPPORTED}), or when the copy fails (nothing is left at
     *     {@code dir})
     * @throws KstateInvalidStateStoreException if the store is closed
     */
    public KstateCheckpoint checkpoint(java.nio.file.Path dir) {
        return open().checkpoint(dir);
    }

    /** @return the options this store was built with */
    public KstateStoreOptions options() {
        return options;
    }

    /** @return the store's directory (RocksDB engine, after init), or null */
    public File directory() {
        return directory;
    }

    /** @return number of iterators currently open on this store */
    public int openIterators() {
        S s = store;
        return s == null ? 0 : s.openIterators();
    }

    /** @return the names of the metrics this store registered, empty when closed */
    List<org.apache.kafka.common.MetricName> metricNames() {
        KstateMetrics m = metrics;
        return m == null ? Collections.emptyList() : m.names();
    }

    // ----- helpers for the kinds -----------------------------------------------------------------

    /** @return the open native store (opening a deferred one) */
    S open() {
        S s = store;
        if (s == null && deferred != null) {
            s = openDeferred();
        }
        if (s == null || !s.isOpen()) {
            throw new KstateInvalidStateStoreException("Store " + name() + " is currently closed.", KstateException.STORE_CLOSED);
        }
        return s;
    }

    /** Called before a write: the store no longer holds only what its creation put there. */
    void written() {
        emptySinceCreation = false;
    }

    /** Moves the position to the record being processed (after a write that landed). */
    void updatePosition() {
        StateStoreContext ctx = context;
        if (ctx == null) {
            return;
        }
        Optional<RecordMetadata> meta = ctx.recordMetadata();
        if (meta.isPresent() && meta.get().topic() != null) {
            RecordMetadata m = meta.get();
            position = position.withComponent(m.topic(), m.partition(), m.offset());
        }
    }

    /**
     * Answers an IQv2 query at the isolation level of its config, checking the position bound
     * against the committed position for READ_COMMITTED and the current one otherwise (as
     * Kafka's own stores do). A failing store yields a failed result, not a throw.
     */
    @Override
    public <R> QueryResult<R> query(Query<R> query, PositionBound positionBound, QueryConfig config) {
        long start = System.nanoTime();
        boolean committed = isolationOf(config) == IsolationLevel.READ_COMMITTED;
        Position current = committed ? committedPosition : position;
        StateStoreContext ctx = context;
        int partition = ctx == null ? 0 : ctx.taskId().partition();
        QueryResult<R> result;
        try {
            if (!isPermitted(current, positionBound, partition)) {
                result = QueryResult.notUpToBound(current, positionBound, partition);
            } else {
                result = answer(query, committed);
            }
        } catch (RuntimeException e) {
            result = QueryResult.forFailure(FailureReason.STORE_EXCEPTION,
                "kstate store " + name() + " failed to answer " + query + ": " + e);
        }
        if (config.isCollectExecutionInfo()) {
            result.addExecutionInfo("Handled in " + getClass() + " (" + (committed ? "read committed" : "read uncommitted")
                + ") in " + (System.nanoTime() - start) + "ns");
        }
        result.setPosition(current.copy());
        return result;
    }

    /**
     * Kafka's rule: permitted when the bound is unbounded, or when for every topic in the
     * bound this store has seen at least the bound's offset of its partition.
     */
    static boolean isPermitted(Position current, PositionBound bound, int partition) {
        if (bound == null || bound.isUnbounded()) {
            return true;
        }
        Position required = bound.position();
        for (String topic : required.getTopics()) {
            Map<Integer, Long> need = required.getPartitionPositions(topic);
            Long needed = need.get(partition);
            if (needed == null) {
                continue;
            }
            Map<Integer, Long> have = current.getTopics().contains(topic)
                ? current.getPartitionPositions(topic) : Collections.emptyMap();
            Long seen = have.get(partition);
            if (seen == null || seen < needed) {
                return false;
            }
        }
        return true;
    }

    /** @return a key's bytes; Kafka's message when it is null */
    static byte[] key(Bytes key) {
        return Objects.requireNonNull(key, "key cannot be null").get();
    }

    /** @return a range bound's bytes, null for an open end */
    static byte[] bound(Bytes key) {
        return key == null ? null : key.get();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + name() + ", " + options.engine + ", open=" + isOpen() + "}";
    }
}
