package dev.kstate.streams;

import dev.kstate.internal.KstateNative;
import dev.kstate.internal.NativeSegmentedStore;
import dev.kstate.internal.NativeStore;
import dev.kstate.internal.ParkedStores;
import dev.kstate.internal.Packing;
import dev.kstate.internal.PositionCodec;
import java.io.File;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Sensor;
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
 * What kstate's window and session stores share with each other and with
 * {@link KstateKeyValueStore}: Kafka Streams 4.4's {@link StateStore} life cycle (init under
 * {@code stateDir()/<name>/}, {@code commit(Map)} of the writes with the changelog offsets and
 * the {@link Position} in one native step, {@code committedOffset}, {@code managesOffsets},
 * uncommitted bytes, restore batches committed with their changelog offset, idempotent close),
 * and Kafka's segmented-store rules for when a write moves the position (not when it lands in
 * an expired segment).
 *
 * @param <S> the native store kind
 */
abstract class KstateSegmentedStateStore<S extends NativeSegmentedStore> implements StateStore {
    private static final Logger LOG = LoggerFactory.getLogger(KstateSegmentedStateStore.class);
    final KstateStoreOptions options;
    final long retentionPeriod;
    final long segmentInterval;
    /** Whether this store adopts Kafka's time-ordered segments rather than the regular ones. */
    private final boolean adoptsTimeOrdered;
    volatile S store;
    volatile StateStoreContext context;
    volatile Position position = Position.emptyPosition();
    volatile Position committedPosition = Position.emptyPosition();
    private volatile File directory;
    private volatile boolean consistencyEnabled;
    private volatile KstateMetrics metrics;
    /** Park the native store on close for this long (ms): initialised by Kafka's start-up path; else 0. */
    private volatile long parkMillis;
    /** What the native store was opened with: an adopter must open with equal options. */
    private volatile List<Object> openOptions;
    /** True while the store was created empty by this init and nothing was written or restored since. */
    private volatile boolean emptySinceCreation;
    /** Kafka's task-level {@code dropped-records} sensor, which counts expired writes; null when unavailable. */
    private volatile Sensor droppedRecords;
    /** Set while the start-up path's init answers from the offsets hint, unopened (as {@link KstateKeyValueStore}). */
    private volatile StartupParking.Deferred deferred;
    /** Writes the offsets hint after each commit (RocksDB engine); else null. */
    private volatile OffsetsHint.Writer hintWriter;
    /** False when Kafka commits this store only on forced commits: see {@link #approximateNumUncommittedBytes()}. */
    private volatile boolean reportsUncommittedBytes = true;

    KstateSegmentedStateStore(KstateStoreOptions options, long retentionPeriod, long segmentInterval) {
        this(options, retentionPeriod, segmentInterval, false);
    }

    /**
     * @param timeOrdered a time-ordered store ({@code EmitStrategy.onWindowClose()}), which adopts Kafka's
     *     time-ordered segments (known here, before the subclass is constructed, for the adoption plan)
     */
    KstateSegmentedStateStore(KstateStoreOptions options, long retentionPeriod, long segmentInterval,
                              boolean timeOrdered) {
        this.options = options;
        this.retentionPeriod = retentionPeriod;
        this.segmentInterval = segmentInterval;
        this.adoptsTimeOrdered = timeOrdered;
        if (options.engine == KstateStoreOptions.Engine.ROCKSDB) {
            TaskAdoption.record(adoptionPlan());
        }
    }

    /** @return what this store adopts a directory of Kafka's segments as */
    final TaskAdoption.Plan adoptionPlan() {
        boolean session = "session".equals(kind());
        int kind = session ? TaskAdoption.SESSION : TaskAdoption.WINDOW;
        if (adoptsTimeOrdered) {
            kind = session ? TaskAdoption.TIME_ORDERED_SESSION : TaskAdoption.TIME_ORDERED_WINDOW;
        }
        int format = options.valueFormat == KstateStoreOptions.ValueFormat.HEADERS ? KstateNative.FORMAT_HEADERS
            : !session && options.timestamped ? KstateNative.FORMAT_TIMESTAMPED : KstateNative.FORMAT_PLAIN;
        return new TaskAdoption.Plan(name(), kind, format,
            retentionPeriod, segmentInterval);
    }

    /** Opens the native store at {@code path} (null for the memory engine). */
    abstract S openNative(String path, int engine, long maxUncommittedBytes, boolean syncOnCommit,
                          NativeStore.RocksTuning tuning);

    /** @return what, besides the common options, a native store of this kind is opened with (kind, retention...) */
    abstract List<Object> shape();

    /** Writes a restored changelog batch keyed by Kafka store keys. */
    abstract void putAllStoreKeys(S s, byte[] packed);

    /** @return Kafka's metrics tag naming the store (e.g. {@code rocksdb-window-state-id}) */
    abstract String stateIdTag();

    /** @return "window" or "session", for messages */
    abstract String kind();

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
        reportsUncommittedBytes = !KafkaStoreCommits.onlyForced(configs);
        if (options.engine == KstateStoreOptions.Engine.ROCKSDB) {
            configs = KstateStoreOptions.withRocksDbConfigSetter(name(), configs);
        }
        String path = null;
        int engine = KstateNative.ENGINE_MEMORY;
        boolean fresh = true;
        boolean kafkaSegments = false;
        File dir = null;
        if (options.engine == KstateStoreOptions.Engine.ROCKSDB) {
            dir = new File(context.stateDir(), name());
            kafkaSegments = TaskAdoption.holdsKafkaSegments(dir);
            fresh = !hasFiles(dir);
            path = dir.getAbsolutePath();
            engine = KstateNative.ENGINE_ROCKSDB;
        }
        boolean statistics = options.resolvedStatistics(configs);
        long maxUncommitted = options.resolvedMaxUncommittedBytes(configs);
        boolean syncOnCommit = options.resolvedSyncOnCommit(configs);
        NativeStore.RocksTuning tuning = options.resolvedRocksTuning(configs);
        List<Object> openOptions = java.util.Arrays.asList(shape(), maxUncommitted, syncOnCommit, tuning);
        if (kafkaSegments) {
            // before anything of the task is adopted: all of its Kafka stores, or none
            TaskAdoption.check(context.stateDir(), adoptionPlan(), dir, name() + " (task " + context.taskId() + ")",
                context.taskId(), KafkaStoreCommits.opensLeftOpen(configs));
        }
        long parkMs = StartupParking.parkMillis(context, dir != null);
        if (parkMs > 0) {
            int rocksdb = engine;
            StartupParking.openAhead(context, name(), openOptions, d -> () -> openNative(d.getAbsolutePath(), rocksdb,
                maxUncommitted, syncOnCommit, tuning), parkMs);
            String own = path;
            StartupParking.Deferred d = fresh ? null : StartupParking.deferOpen(context, dir, openOptions,
                () -> openNative(own, rocksdb, maxUncommitted, syncOnCommit, tuning), parkMs,
                name() + " (task " + context.taskId() + ")");
            if (d != null) {
                initDeferred(context, root, dir, d, openOptions, parkMs);
                return;
            }
        }
        long openStart = System.nanoTime();
        S opened = null;
        String verb = "opened";
        String origin = path == null ? "new in-memory store" : fresh ? "new store" : kafkaSegments
            ? "Kafka Streams' own segmented " + kind() + " store, converted in place with its offsets (adopted)"
            : "existing store";
        if (dir != null) {
            // Adopted before the directory is (re)created: a parked store whose directory was
            // deleted must be closed while nothing stands at its path.
            ParkedStores.Parked parked = ParkedStores.adopt(dir, openOptions, name() + " (task " + context.taskId() + ")");
            if (parked != null) {
                opened = (S) parked.store();
                fresh = parked.emptySinceCreation();
                verb = "adopted";
                origin = parked.preOpened() ? "the store opened ahead in the background (ready " + parked.parkedMillis()
                    + " ms ago)" : "the store parked by Kafka Streams' start-up path " + parked.parkedMillis() + " ms ago "
                    + "(not opened again)";
            } else if (!dir.isDirectory() && !dir.mkdirs()) {
                throw new KstateProcessorStateException("cannot create the directory " + dir + " of store " + name(),
                    KstateException.IO);
            }
            directory = dir;
        }
        if (opened == null) {
            opened = openNative(path, engine, maxUncommitted, syncOnCommit, tuning);
        }
        position = KstateKeyValueStore.recoveredPosition(name(), opened, opened::committedMetadata);
        committedPosition = position.copy();
        consistencyEnabled = KstateKeyValueStore.booleanConfig(configs, KstateKeyValueStore.IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED);
        emptySinceCreation = fresh;
        this.context = context;
        this.parkMillis = parkMs;
        this.openOptions = openOptions;
        this.hintWriter = dir == null ? null : new OffsetsHint.Writer(dir, name());
        this.store = opened;
        if (StartupParking.registersMetrics(context)) {
            metrics = KstateMetrics.register(context.metrics(), String.valueOf(context.taskId()), name(), stateIdTag(),
                options.engine == KstateStoreOptions.Engine.ROCKSDB, statistics, () -> store);
            droppedRecords = KstateMetrics.droppedRecordsSensor(context);
        }
        LOG.info("kstate {} store {} (task {}): {} {}{} in {} ms, retention {} ms, segment interval {} ms; committed "
            + "position {}", kind(), name(), context.taskId(), verb, origin, path == null ? "" : " at " + path,
            (System.nanoTime() - openStart) / 1_000_000, retentionPeriod, segmentInterval, committedPosition);
        KafkaStoreCommits.warnIfOnlyForced(context.applicationId(), configs, kind() + " store " + name());
        context.register(root, new RestoreCallback());
    }

    /** The start-up path's init of an existing store with an offsets hint, as {@link KstateKeyValueStore}'s. */
    private void initDeferred(StateStoreContext context, StateStore root, File dir, StartupParking.Deferred d,
                             List<Object> openOptions, long parkMs) {
        position = d.position;
        committedPosition = d.position.copy();
        consistencyEnabled = KstateKeyValueStore.booleanConfig(context.appConfigs(),
            KstateKeyValueStore.IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED);
        emptySinceCreation = false;
        this.context = context;
        parkMillis = parkMs;
        this.openOptions = openOptions;
        directory = dir;
        hintWriter = new OffsetsHint.Writer(dir, name());
        deferred = d;
        LOG.info("kstate {} store {} (task {}): deferred the open of the existing store at {} to the background; Kafka "
            + "Streams' start-up path is answered from its offsets hint {}", kind(), name(), context.taskId(), dir, d.hint);
        context.register(root, new RestoreCallback());
    }

    /** Opens a deferred store: adopts its background open, or opens it here. */
    @SuppressWarnings("unchecked") // the background open made a store of this kind (same options, same shape)
    private synchronized S openDeferred() {
        StartupParking.Deferred d = deferred;
        if (d == null) {
            return store;
        }
        long t0 = System.nanoTime();
        S s = (S) d.open();
        position = KstateKeyValueStore.recoveredPosition(name(), s, s::committedMetadata);
        committedPosition = position.copy();
        store = s;
        deferred = null;
        LOG.info("kstate {} store {} (task {}): opened the deferred store at {} in {} ms: the start-up path asked more than "
            + "its offsets hint answers", kind(), name(), context.taskId(), directory, (System.nanoTime() - t0) / 1_000_000);
        return s;
    }

    /**
     * Kafka's own segmented stores live in {@code <taskDir>/<name>/<name>.<segment>}: the native
     * open converts such a directory into a kstate store in one atomic step, keeping Kafka's
     * committed offsets and position, or refuses it unchanged. Only told apart here for the log.
     */
    private static boolean hasFiles(File dir) {
        String[] names = dir.list();
        return names != null && names.length > 0;
    }

    /** Restored batches are committed at once with their changelog offset, as the key-value store does. */
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
                    KstateKeyValueStore.mergeConsistencyHeaders(record, restored);
                }
                entries.add(KeyValue.pair(record.key(), record.value()));
                last = Math.max(last, record.offset());
                any = record;
            }
            putAllStoreKeys(s, Packing.packRaw(entries));
            emptySinceCreation = false;
            if (restored != null) {
                position = restored;
            }
            Position snapshot = position.copy();
            s.commit(Collections.singletonMap(new TopicPartition(any.topic(), any.partition()), last),
                PositionCodec.encode(snapshot));
            committedPosition = snapshot;
        }

        @Override
        public void restoreAll(Collection<KeyValue<byte[], byte[]>> records) {
            S s = open();
            if (!records.isEmpty()) {
                putAllStoreKeys(s, Packing.packRaw(new ArrayList<>(records)));
                emptySinceCreation = false;
            }
        }
    }

    @Override
    @SuppressWarnings("deprecation") // kept for Kafka Streams 4.0-4.2 runtimes
    public void flush() {
        S s = open();
        Position snapshot = position.copy();
        s.flush(PositionCodec.encode(snapshot));
        committedPosition = snapshot;
    }

    @Override
    public void commit(Map<TopicPartition, Long> changelogOffsets) {
        StartupParking.Deferred d = deferred;
        if (d != null && changelogOffsets != null && d.hint.agrees(changelogOffsets)) {
            return; // the start-up path commits the offsets it read: nothing changes
        }
        S s = open();
        if (emptySinceCreation && changelogOffsets != null && changelogOffsets.values().stream().anyMatch(Objects::nonNull)) {
            // As the key-value store: offsets migrated from a legacy .checkpoint right after an
            // init that created this store empty would claim data the store does not hold.
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
        return open().committedOffset(partition);
    }

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
     * A store initialised by Kafka Streams' start-up path is parked instead, as
     * {@link KstateKeyValueStore#close()} describes.
     */
    @Override
    public void close() {
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
        LOG.info("kstate {} store {} (task {}): closed by Kafka Streams' start-up path without being opened; its background "
            + "open is kept (parked) for up to {} ms for the task's initialisation to adopt", kind(), name(), context.taskId(),
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
                kind() + " store " + name() + " (task " + ctx.taskId() + ")");
        } catch (RuntimeException e) {
            LOG.warn("kstate {} store {}: could not keep it open for adoption, closing it: {}", kind(), name(), e.toString());
            return false;
        }
        store = null;
        LOG.info("kstate {} store {} (task {}): closed by Kafka Streams' start-up path; kept open (parked) for up to {} ms "
            + "for the task's initialisation to adopt", kind(), name(), ctx.taskId(), parkMillis);
        return true;
    }

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

    // ----- helpers for the subclasses ----------------------------------------------------------

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

    /**
     * Runs a native write, then does what Kafka's {@code AbstractRocksDBSegmentedBytesStore#put}
     * does after it: a write whose segment is live moves the position; one the native store
     * dropped because its segment has expired is counted in the task's {@code dropped-records}
     * metric and logged, as Kafka's segmented stores do.
     *
     * @param isPut false for writes that are neither counted nor move the position (session
     *     removes, as Kafka's {@code remove})
     * @param write the native write; false when it was dropped as expired
     */
    void write(boolean isPut, BooleanSupplier write) {
        emptySinceCreation = false;
        boolean live = write.getAsBoolean();
        if (!isPut) {
            return;
        }
        if (live) {
            updatePosition();
            return;
        }
        Sensor dropped = droppedRecords;
        if (dropped != null) {
            dropped.record();
        }
        LOG.warn("Skipping record for expired segment (kstate {} store {}).", kind(), name());
    }

    private void updatePosition() {
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
     * Kafka's own segmented stores do). A failing store yields a failed result, not a throw.
     */
    <R> QueryResult<R> query(Query<R> query, PositionBound positionBound, QueryConfig config, Answerer answerer) {
        long start = System.nanoTime();
        boolean committed = KstateKeyValueStore.isolationOf(config) == IsolationLevel.READ_COMMITTED;
        Position current = committed ? committedPosition : position;
        StateStoreContext ctx = context;
        int partition = ctx == null ? 0 : ctx.taskId().partition();
        QueryResult<R> result;
        try {
            if (!KstateKeyValueStore.isPermitted(current, positionBound, partition)) {
                result = QueryResult.notUpToBound(current, positionBound, partition);
            } else {
                result = answerer.answer(query, committed);
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

    /** The query types a store kind answers. */
    interface Answerer {
        /**
         * @param query the query
         * @param committed read committed data only
         * @param <R> the result type
         * @return the result, or {@code QueryResult.forUnknownQueryType}
         */
        <R> QueryResult<R> answer(Query<R> query, boolean committed);
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + name() + ", " + options.engine + ", open=" + isOpen() + "}";
    }
}
