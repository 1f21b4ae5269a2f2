package dev.kstate.streams;

import dev.kstate.internal.KstateNative;
import dev.kstate.internal.NativeIterator;
import dev.kstate.internal.NativeStore;
import dev.kstate.internal.ParkedStores;
import dev.kstate.internal.Packing;
import dev.kstate.internal.PositionCodec;
import java.io.File;
import java.nio.ByteBuffer;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.apache.kafka.streams.query.FailureReason;
import org.apache.kafka.streams.query.KeyQuery;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.RangeQuery;
import org.apache.kafka.streams.query.ResultOrder;
import org.apache.kafka.streams.query.TimestampedKeyQuery;
import org.apache.kafka.streams.query.TimestampedRangeQuery;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.internals.ManagedKeyValueIterator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A kstate key-value store speaking Kafka Streams 4.4's {@link StateStore} contract.
 *
 * <p>Writes form a transaction: {@link #commit(Map)} makes them durable together with the
 * changelog offsets and the store's {@link Position} in one atomic native step
 * ({@link #managesOffsets()} is true).
 *
 * <p>Isolation follows Kafka's transactional stores: the plain read methods ({@link #get},
 * {@link #range}, {@link #all}, {@link #prefixScan}, ...) are the writer's view (uncommitted
 * writes included), whatever thread calls them. Committed-only reads are asked for explicitly,
 * the way Kafka asks: {@link #readOnly(IsolationLevel)} (IQv1, with Kafka's
 * {@code default.interactive.query.isolation.level}) and the {@link QueryConfig} of an IQv2
 * query. Values are stored as handed over (for the timestamped subclass: Kafka's 8-byte
 * timestamp + value layout).
 */
public class KstateKeyValueStore implements KeyValueStore<Bytes, byte[]> {
    private static final Logger LOG = LoggerFactory.getLogger(KstateKeyValueStore.class);
    /** Kafka's directory for its own RocksDB key-value stores, under the task directory. */
    static final String KAFKA_ROCKSDB_DIR = "rocksdb";
    /** Kafka's internal config that turns on the IQ consistency vector in changelog headers. */
    static final String IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED = "__iq.consistency.offset.vector.enabled__";
    /** {@code QueryConfig#getIsolationLevel()}, absent before Kafka Streams 4.4. */
    private static final Method QUERY_ISOLATION = queryIsolationMethod();

    private final KstateStoreOptions options;
    private volatile NativeStore store;
    private volatile StateStoreContext context;
    private volatile Position position = Position.emptyPosition();
    private volatile Position committedPosition = Position.emptyPosition();
    private volatile File directory;
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
    private volatile OffsetsHint.Writer hintWriter;
    /** False when Kafka commits this store only on forced commits: see {@link #approximateNumUncommittedBytes()}. */
    private volatile boolean reportsUncommittedBytes = true;

    KstateKeyValueStore(KstateStoreOptions options) {
        this.options = options;
        if (options.engine == KstateStoreOptions.Engine.ROCKSDB) {
            TaskAdoption.record(adoptionPlan());
        }
    }

    /** @return what this store adopts Kafka's key-value store directory as */
    private TaskAdoption.Plan adoptionPlan() {
        return new TaskAdoption.Plan(options.name, TaskAdoption.KEY_VALUE, options.valueFormat.nativeNumber, 0, 0);
    }

    // ----- life cycle ---------------------------------------------------------------------

    @Override
    public String name() {
        return options.name;
    }

    @Override
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
        String origin;
        boolean fresh = true;
        File dir = null;
        boolean inOwnDirectory = false;
        if (options.engine == KstateStoreOptions.Engine.ROCKSDB) {
            File own = new File(context.stateDir(), name());
            File kafka = new File(new File(context.stateDir(), KAFKA_ROCKSDB_DIR), name());
            if (!hasFiles(own) && hasFiles(kafka)) {
                // Kafka Streams' own RocksDB store of the same name (a migration to kstate, or a
                // store kstate adopted earlier): open it in place, never beside it empty.
                dir = kafka;
                origin = "Kafka Streams' RocksDB store directory, opened in place (adopted)";
                fresh = false;
            } else {
                dir = own;
                inOwnDirectory = true;
                fresh = !hasFiles(own);
                origin = fresh ? "new store" : "existing store";
            }
            path = dir.getAbsolutePath();
            engine = KstateNative.ENGINE_ROCKSDB;
        } else {
            origin = "new in-memory store";
        }
        if (dir != null && !inOwnDirectory) {
            // before anything of the task is adopted: all of its Kafka stores, or none
            TaskAdoption.check(context.stateDir(), adoptionPlan(), dir, name() + " (task " + context.taskId() + ")",
                context.taskId(), KafkaStoreCommits.opensLeftOpen(configs));
        }
        NativeStore.RocksTuning tuning = options.resolvedRocksTuning(configs);
        boolean statistics = options.resolvedStatistics(configs);
        long maxUncommitted = options.resolvedMaxUncommittedBytes(configs);
        boolean syncOnCommit = options.resolvedSyncOnCommit(configs);
        List<Object> openOptions = java.util.Arrays.asList("key-value", options.valueFormat, maxUncommitted, syncOnCommit,
            tuning);
        long parkMs = StartupParking.parkMillis(context, dir != null);
        if (parkMs > 0 && inOwnDirectory) {
            int valueFormat = options.valueFormat.nativeNumber;
            StartupParking.openAhead(context, name(), openOptions, d -> () -> NativeStore.open(name(), d.getAbsolutePath(),
                KstateNative.ENGINE_ROCKSDB, valueFormat, maxUncommitted, syncOnCommit, tuning), parkMs);
            File own = dir;
            StartupParking.Deferred d = fresh ? null : StartupParking.deferOpen(context, own, openOptions,
                () -> NativeStore.open(name(), own.getAbsolutePath(), KstateNative.ENGINE_ROCKSDB, valueFormat, maxUncommitted,
                    syncOnCommit, tuning), parkMs, name() + " (task " + context.taskId() + ")");
            if (d != null) {
                initDeferred(context, root, own, d, openOptions, parkMs);
                return;
            }
        }
        long openStart = System.nanoTime();
        NativeStore opened = null;
        String verb = "opened";
        if (dir != null) {
            // Adopted before the directory is (re)created: a parked store whose directory was
            // deleted must be closed while nothing stands at its path.
            ParkedStores.Parked parked = ParkedStores.adopt(dir, openOptions, name() + " (task " + context.taskId() + ")");
            if (parked != null) {
                opened = (NativeStore) parked.store();
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
            opened = NativeStore.open(name(), path, engine, options.valueFormat.nativeNumber, maxUncommitted, syncOnCommit,
                tuning);
        }
        position = recoveredPosition(name(), opened, opened::committedMetadata);
        committedPosition = position.copy();
        this.consistencyEnabled = booleanConfig(configs, IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED);
        this.emptySinceCreation = fresh;
        this.context = context;
        this.parkMillis = parkMs;
        this.openOptions = openOptions;
        this.hintWriter = inOwnDirectory ? new OffsetsHint.Writer(dir, name()) : null;
        this.store = opened;
        if (StartupParking.registersMetrics(context)) {
            metrics = KstateMetrics.register(context.metrics(), String.valueOf(context.taskId()), name(),
                options.engine == KstateStoreOptions.Engine.ROCKSDB, statistics, () -> store);
        }
        LOG.info("kstate store {} (task {}): {} {}{} in {} ms, {} values; committed position {}",
            name(), context.taskId(), verb, origin, path == null ? "" : " at " + path, (System.nanoTime() - openStart) / 1_000_000,
            options.valueFormat.name().toLowerCase(java.util.Locale.ROOT), committedPosition);
        KafkaStoreCommits.warnIfOnlyForced(context.applicationId(), configs, "store " + name());
        context.register(root, new RestoreCallback());
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
        LOG.info("kstate store {} (task {}): deferred the open of the existing store at {} to the background; Kafka "
            + "Streams' start-up path is answered from its offsets hint {}", name(), context.taskId(), dir, d.hint);
        context.register(root, new RestoreCallback());
    }

    /** Opens a deferred store (see {@link #initDeferred}): adopts its background open, or opens it here. */
    private synchronized NativeStore openDeferred() {
        StartupParking.Deferred d = deferred;
        if (d == null) {
            return store;
        }
        long t0 = System.nanoTime();
        NativeStore s = (NativeStore) d.open();
        position = recoveredPosition(name(), s, s::committedMetadata);
        committedPosition = position.copy();
        store = s;
        deferred = null;
        LOG.info("kstate store {} (task {}): opened the deferred store at {} in {} ms: the start-up path asked more than its "
            + "offsets hint answers", name(), context.taskId(), directory, (System.nanoTime() - t0) / 1_000_000);
        return s;
    }

    static boolean booleanConfig(Map<String, Object> configs, String key) {
        Object v = configs == null ? null : configs.get(key);
        return v != null && (v instanceof Boolean ? (Boolean) v : Boolean.parseBoolean(String.valueOf(v).trim()));
    }

    private static boolean hasFiles(File dir) {
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
            NativeStore s = open();
            if (records.isEmpty()) {
                return;
            }
            List<KeyValue<byte[], byte[]>> entries = new ArrayList<>(records.size());
            Position restored = consistencyEnabled ? position.copy() : null;
            for (ConsumerRecord<byte[], byte[]> record : records) {
                if (restored != null) {
                    mergeConsistencyHeaders(record, restored);
                }
                entries.add(KeyValue.pair(record.key(), record.value()));
            }
            // Restored records are committed in the changelog already: they are committed at once
            // with their own changelog offset (one batch is one changelog partition), in one native
            // call that skips the transaction buffer and the write-ahead log (the native side
            // gathers consecutive batches and ingests large restores as one sorted file, before the
            // store's next operation). Committed this way they do not wait for the task's next commit,
            // which under exactly-once never comes for a task that restores and then has nothing
            // to process, and read-committed queries see them at once. Kafka restores before it
            // processes, so the transaction has no uncommitted writes here (the native call
            // refuses otherwise).
            long last = -1;
            ConsumerRecord<byte[], byte[]> any = null;
            for (ConsumerRecord<byte[], byte[]> record : records) {
                last = Math.max(last, record.offset());
                any = record;
            }
            Position snapshot = restored != null ? restored.copy() : position.copy();
            s.restoreBatch(Packing.packRaw(entries),
                Collections.singletonMap(new TopicPartition(any.topic(), any.partition()), last),
                PositionCodec.encode(snapshot));
            emptySinceCreation = false;
            if (restored != null) {
                position = restored;
            }
            committedPosition = snapshot;
        }

        @Override
        public void restoreAll(Collection<KeyValue<byte[], byte[]>> records) {
            NativeStore s = open();
            if (!records.isEmpty()) {
                s.putAllPacked(Packing.packRaw(records));
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
        NativeStore s = open();
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
        NativeStore s = open();
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
        NativeStore s = store;
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
        NativeStore s = store;
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
        LOG.info("kstate store {} (task {}): closed by Kafka Streams' start-up path without being opened; its background "
            + "open is kept (parked) for up to {} ms for the task's initialisation to adopt", name(), context.taskId(),
            parkMillis);
        return true;
    }

    /** Parks the open native store (see {@link #close()}); false when it could not be (then it is closed as usual). */
    private boolean park(NativeStore s) {
        StateStoreContext ctx = context;
        try {
            s.closeIterators();
            s.rollback();
            ParkedStores.park(directory, openOptions, s, StartupParking.owner(ctx), emptySinceCreation, parkMillis,
                name() + " (task " + ctx.taskId() + ")");
        } catch (RuntimeException e) {
            LOG.warn("kstate store {}: could not keep it open for adoption, closing it: {}", name(), e.toString());
            return false;
        }
        store = null;
        LOG.info("kstate store {} (task {}): closed by Kafka Streams' start-up path; kept open (parked) for up to {} ms "
            + "for the task's initialisation to adopt", name(), ctx.taskId(), parkMillis);
        return true;
    }

    @Override
    public boolean persistent() {
        return options.engine == KstateStoreOptions.Engine.ROCKSDB;
    }

    @Override
    public boolean isOpen() {
        NativeStore s = store;
        return deferred != null || (s != null && s.isOpen());
    }

    @Override
    public Position getPosition() {
        return position;
    }

    /**
     * @return true while the store runs in upgrade mode (KIP-258 / KIP-1271): it was opened
     *     in a later value format than the values it holds (a plain store, kstate's or Kafka's
     *     {@code RocksDBStore}, opened timestamped), reads old values converted and migrates
     *     them key by key as they are written; false after {@link #upgradeBySwap}
     * @throws KstateInvalidStateStoreException when the store is closed
     */
    public boolean isUpgrading() {
        return open().isUpgrading();
    }

    /**
     * Finishes an upgrade in one go, by <b>prepare and swap</b>: builds a store of the new
     * format in the side directory {@code .<name>.kstate-swap} from the last committed
     * snapshot, carries over the keys written meanwhile, commits it with this store's committed
     * offsets and position, swaps the two directories atomically and continues on the new store,
     * in regular mode, in this same object. A kill at any point leaves the old store or the new
     * one live and complete (no changelog restore either way). Does nothing and returns 0 when
     * the store is not in upgrade mode.
     *
     * <p><b>When to call it.</b> It runs on the calling thread and blocks it for the length of
     * the copy, so call it from the stream thread that owns the task (a Processor API user
     * holding this store from {@code ProcessorContext#getStateStore}) <i>between commits</i>:
     * the store must have no uncommitted writes when it starts ({@link
     * #approximateNumUncommittedBytes()} is 0: right after {@code init} and restoration, or
     * right after a commit), otherwise it throws {@code KstateProcessorStateException} with code
     * {@code INVALID_ARGUMENT} and changes nothing. Open iterators of the store are closed by
     * the swap.
     *
     * <p>{@code progress} runs on the calling thread. It may read or write this store (writes
     * are carried over, uncommitted); calling {@code upgradeBySwap} again from it is refused
     * ({@code INVALID_ARGUMENT}); an exception it throws stops the swap, leaves the store as it
     * was (still in upgrade mode, side directory removed) and propagates to the caller.
     *
     * @param progress told after each batch copied (entries done, estimated total; the last
     *     call has {@code done == total}), or null
     * @return the entries copied into the new store
     * @throws KstateInvalidStateStoreException when the store is closed (also when
     *     {@code progress} closed it)
     * @throws KstateProcessorStateException on the refusals above (code {@code
     *     INVALID_ARGUMENT}, also for the in-memory engine) and storage errors, after which the
     *     store is unchanged
     */
    public long upgradeBySwap(UpgradeProgress progress) {
        NativeStore s = open();
        long copied = s.upgradeBySwap(progress);
        OffsetsHint.Writer hints = hintWriter;
        if (copied > 0 && hints != null) {
            hints.close(); // its file went with the old directory; the swapped-in one has no hint yet
            hintWriter = new OffsetsHint.Writer(directory, name());
        }
        if (copied > 0) {
            LOG.info("kstate store {} upgraded by swap: {} entries copied, now in regular mode", name(), copied);
        }
        return copied;
    }

    /** @return the options this store was built with */
    public KstateStoreOptions options() {
        return options;
    }

    /** @return the store's directory (RocksDB engine, after init), or null */
    public File directory() {
        return directory;
    }

    /** @return the names of the metrics this store registered, empty when closed */
    List<org.apache.kafka.common.MetricName> metricNames() {
        KstateMetrics m = metrics;
        return m == null ? Collections.emptyList() : m.names();
    }

    /** @return number of iterators currently open on this store */
    public int openIterators() {
        NativeStore s = store;
        return s == null ? 0 : s.openIterators();
    }

    // ----- helpers -------------------------------------------------------------------------

    private NativeStore open() {
        NativeStore s = store;
        if (s == null && deferred != null) {
            s = openDeferred();
        }
        if (s == null || !s.isOpen()) {
            throw new KstateInvalidStateStoreException("Store " + name() + " is currently closed.", KstateException.STORE_CLOSED);
        }
        return s;
    }

    private void written() {
        emptySinceCreation = false;
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

    private static byte[] key(Bytes key) {
        return Objects.requireNonNull(key, "key cannot be null").get();
    }

    // ----- KeyValueStore ------------------------------------------------------------------

    @Override
    public void put(Bytes key, byte[] value) {
        byte[] k = key(key);
        NativeStore s = open();
        written();
        s.put(k, value);
        updatePosition();
    }

    @Override
    public byte[] putIfAbsent(Bytes key, byte[] value) {
        byte[] k = key(key);
        NativeStore s = open();
        if (value == null) {
            // Kafka: putIfAbsent(k, null) writes nothing and returns the current value
            return s.get(k, false);
        }
        byte[] existing = s.putIfAbsent(k, value);
        if (existing == null) {
            written();
            updatePosition();
        }
        return existing;
    }

    @Override
    public void putAll(List<KeyValue<Bytes, byte[]>> entries) {
        for (KeyValue<Bytes, byte[]> e : entries) {
            key(e.key);
        }
        NativeStore s = open();
        written();
        if (!entries.isEmpty()) {
            s.putAllPacked(Packing.packBytes(entries));
            updatePosition();
        }
    }

    @Override
    public byte[] delete(Bytes key) {
        byte[] k = key(key);
        NativeStore s = open();
        written();
        byte[] old = s.delete(k);
        updatePosition();
        return old;
    }

    @Override
    public byte[] get(Bytes key) {
        return get(key, false);
    }

    private byte[] get(Bytes key, boolean committed) {
        return open().get(key(key), committed);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
        return scan(from, to, false, false);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
        return scan(from, to, true, false);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> all() {
        return scan(null, null, false, false);
    }

    @Override
    public KeyValueIterator<Bytes, byte[]> reverseAll() {
        return scan(null, null, true, false);
    }

    @Override
    public <PS extends Serializer<P>, P> KeyValueIterator<Bytes, byte[]> prefixScan(P prefix, PS prefixKeySerializer) {
        return prefixScan(prefix, prefixKeySerializer, false);
    }

    private <PS extends Serializer<P>, P> KeyValueIterator<Bytes, byte[]> prefixScan(P prefix, PS prefixKeySerializer,
                                                                                   boolean committed) {
        Objects.requireNonNull(prefix, "prefix cannot be null");
        Objects.requireNonNull(prefixKeySerializer, "prefixKeySerializer cannot be null");
        byte[] bytes = prefixKeySerializer.serialize(null, prefix);
        return open().scan(bytes, null, true, false, committed);
    }

    private NativeIterator scan(Bytes from, Bytes to, boolean reverse, boolean committed) {
        return open().scan(from == null ? null : from.get(), to == null ? null : to.get(), false, reverse, committed);
    }

    @Override
    public long approximateNumEntries() {
        return open().approximateNumEntries(false);
    }

    /**
     * A read-only view at an isolation level: READ_COMMITTED reads the last completed commit
     * (a pinned snapshot, never waiting for the writer), READ_UNCOMMITTED the writer's view.
     * Kafka's IQv1 ({@code KafkaStreams#store}) calls this on every store with
     * {@code default.interactive.query.isolation.level} (or the level of
     * {@code ReadOnlyKeyValueStore#readOnly} on the composite store it returns).
     *
     * @param isolationLevel the level
     * @return the view; every read method, {@code prefixScan} included, is supported
     */
    @Override
    public ReadOnlyKeyValueStore<Bytes, byte[]> readOnly(IsolationLevel isolationLevel) {
        Objects.requireNonNull(isolationLevel, "isolationLevel cannot be null");
        return new ReadOnlyView(isolationLevel);
    }

    /** See {@link #readOnly(IsolationLevel)}. */
    private final class ReadOnlyView implements ReadOnlyKeyValueStore<Bytes, byte[]> {
        private final IsolationLevel level;
        private final boolean committed;

        ReadOnlyView(IsolationLevel level) {
            this.level = level;
            this.committed = level == IsolationLevel.READ_COMMITTED;
        }

        @Override
        public byte[] get(Bytes key) {
            return KstateKeyValueStore.this.get(key, committed);
        }

        @Override
        public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
            return scan(from, to, false, committed);
        }

        @Override
        public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
            return scan(from, to, true, committed);
        }

        @Override
        public KeyValueIterator<Bytes, byte[]> all() {
            return scan(null, null, false, committed);
        }

        @Override
        public KeyValueIterator<Bytes, byte[]> reverseAll() {
            return scan(null, null, true, committed);
        }

        @Override
        public <PS extends Serializer<P>, P> KeyValueIterator<Bytes, byte[]> prefixScan(P prefix, PS prefixKeySerializer) {
            return KstateKeyValueStore.this.prefixScan(prefix, prefixKeySerializer, committed);
        }

        @Override
        public long approximateNumEntries() {
            return open().approximateNumEntries(committed);
        }

        @Override
        public ReadOnlyKeyValueStore<Bytes, byte[]> readOnly(IsolationLevel isolationLevel) {
            return KstateKeyValueStore.this.readOnly(isolationLevel);
        }

        @Override
        public String toString() {
            return "ReadOnlyView{" + name() + ", " + level + "}";
        }
    }

    // ----- IQv2 ---------------------------------------------------------------------------

    @Override
    @SuppressWarnings("unchecked")
    public <R> QueryResult<R> query(Query<R> query, PositionBound positionBound, QueryConfig config) {
        long start = System.nanoTime();
        boolean committed = isolationOf(config) == IsolationLevel.READ_COMMITTED;
        Position current = committed ? committedPosition : position;
        StateStoreContext ctx = context;
        int partition = ctx == null ? 0 : ctx.taskId().partition();
        QueryResult<R> result;
        try {
            result = answer(query, positionBound, committed, current, partition);
        } catch (RuntimeException e) {
            // As Kafka's own stores do: a failing store yields a failed result, not a throw.
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

    @SuppressWarnings("unchecked")
    private <R> QueryResult<R> answer(Query<R> query, PositionBound positionBound, boolean committed, Position current,
                                      int partition) {
        if (!isPermitted(current, positionBound, partition)) {
            return QueryResult.notUpToBound(current, positionBound, partition);
        } else if (query instanceof KeyQuery) {
            KeyQuery<Bytes, byte[]> q = (KeyQuery<Bytes, byte[]>) query;
            return (QueryResult<R>) QueryResult.forResult(get(q.getKey(), committed));
        } else if (query instanceof RangeQuery) {
            RangeQuery<Bytes, byte[]> q = (RangeQuery<Bytes, byte[]>) query;
            boolean reverse = q.resultOrder() == ResultOrder.DESCENDING;
            return (QueryResult<R>) QueryResult.forResult(
                scan(q.getLowerBound().orElse(null), q.getUpperBound().orElse(null), reverse, committed));
        } else if (query instanceof TimestampedKeyQuery && timestampedValues()) {
            TimestampedKeyQuery<Bytes, byte[]> q = (TimestampedKeyQuery<Bytes, byte[]>) query;
            return (QueryResult<R>) QueryResult.forResult(decode(get(q.key(), committed)));
        } else if (query instanceof TimestampedRangeQuery && timestampedValues()) {
            TimestampedRangeQuery<Bytes, byte[]> q = (TimestampedRangeQuery<Bytes, byte[]>) query;
            boolean reverse = q.resultOrder() == ResultOrder.DESCENDING;
            NativeIterator raw = scan(q.lowerBound().orElse(null), q.upperBound().orElse(null), reverse, committed);
            return (QueryResult<R>) QueryResult.forResult(new DecodingIterator(raw));
        } else {
            return QueryResult.forUnknownQueryType(query, this);
        }
    }

    /** @return true when values carry Kafka's 8-byte timestamp prefix */
    protected boolean timestampedValues() {
        return false;
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

    static ValueAndTimestamp<byte[]> decode(byte[] raw) {
        if (raw == null) {
            return null;
        }
        ByteBuffer buf = ByteBuffer.wrap(raw);
        long timestamp = buf.getLong();
        byte[] value = new byte[raw.length - 8];
        buf.get(value);
        return ValueAndTimestamp.make(value, timestamp);
    }

    /**
     * A range result decoded to values and timestamps; a {@link ManagedKeyValueIterator} like
     * every range result kstate hands to Kafka (whose wrappers cast to it).
     */
    private static final class DecodingIterator implements ManagedKeyValueIterator<Bytes, ValueAndTimestamp<byte[]>> {
        private final NativeIterator inner;

        DecodingIterator(NativeIterator inner) {
            this.inner = inner;
        }

        @Override
        public void onClose(Runnable closeCallback) {
            inner.onClose(closeCallback);
        }

        @Override
        public boolean hasNext() {
            return inner.hasNext();
        }

        @Override
        public KeyValue<Bytes, ValueAndTimestamp<byte[]>> next() {
            KeyValue<Bytes, byte[]> kv = inner.next();
            return KeyValue.pair(kv.key, decode(kv.value));
        }

        @Override
        public Bytes peekNextKey() {
            return inner.peekNextKey();
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + name() + ", " + options.engine + ", open=" + isOpen() + "}";
    }
}
