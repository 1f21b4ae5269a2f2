package dev.kstate.streams;

import dev.kstate.internal.KstateNative;
import dev.kstate.internal.NativeSegmentedStore;
import java.io.File;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What kstate's window and session stores add to {@link KstateStateStore}: retention and
 * segments, adoption of Kafka's segmented stores in place, and Kafka's segmented-store rules
 * for when a write moves the position (not when it lands in an expired segment, which is
 * counted in {@code dropped-records}).
 *
 * @param <S> the native store kind
 */
abstract class KstateSegmentedStateStore<S extends NativeSegmentedStore> extends KstateStateStore<S> {
    private static final Logger LOG = LoggerFactory.getLogger(KstateSegmentedStateStore.class);
    final long retentionPeriod;
    final long segmentInterval;
    /** Whether this store adopts Kafka's time-ordered segments rather than the regular ones. */
    private final boolean adoptsTimeOrdered;
    /** Kafka's task-level {@code dropped-records} sensor, which counts expired writes; null when unavailable. */
    private volatile Sensor droppedRecords;

    KstateSegmentedStateStore(KstateStoreOptions options, long retentionPeriod, long segmentInterval) {
        this(options, retentionPeriod, segmentInterval, false);
    }

    /**
     * @param timeOrdered a time-ordered store ({@code EmitStrategy.onWindowClose()}), which adopts Kafka's
     *     time-ordered segments (known here, before the subclass is constructed, for the adoption plan)
     */
    KstateSegmentedStateStore(KstateStoreOptions options, long retentionPeriod, long segmentInterval,
                              boolean timeOrdered) {
        super(options);
        this.retentionPeriod = retentionPeriod;
        this.segmentInterval = segmentInterval;
        this.adoptsTimeOrdered = timeOrdered;
        recordAdoptionPlan();
    }

    /** @return what this store adopts a directory of Kafka's segments as */
    @Override
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

    /** @return "window" or "session", for messages */
    abstract String kind();

    @Override
    final String label() {
        return kind() + " store " + name();
    }

    @Override
    final String openedDetails() {
        return "retention " + retentionPeriod + " ms, segment interval " + segmentInterval + " ms";
    }

    /**
     * Kafka's own segmented stores live in {@code <taskDir>/<name>/<name>.<segment>}: the native
     * open converts such a directory into a kstate store in one atomic step, keeping Kafka's
     * committed offsets and position, or refuses it unchanged.
     */
    @Override
    final Location locate(File stateDir) {
        File dir = new File(stateDir, name());
        return new Location(dir, TaskAdoption.holdsKafkaSegments(dir), true,
            "Kafka Streams' own segmented " + kind() + " store, converted in place with its offsets (adopted)");
    }

    /** @return Kafka's tag: {@code rocksdb-window-state-id}, {@code rocksdb-session-state-id} (kstate's for the memory engine) */
    @Override
    final String stateIdTag() {
        return (options.engine == KstateStoreOptions.Engine.ROCKSDB ? "rocksdb-" : "kstate-memory-") + kind() + "-state-id";
    }

    @Override
    final void putAllStoreKeys(S s, byte[] packed) {
        s.putAllStoreKeys(packed);
    }

    /** Restored batches are written, then committed at once with their changelog offset. */
    @Override
    final void restoreCommitted(S s, byte[] packed, Map<TopicPartition, Long> offsets, byte[] metadata) {
        putAllStoreKeys(s, packed);
        s.commit(offsets, metadata);
    }

    @Override
    final void registeredMetrics(StateStoreContext context) {
        droppedRecords = KstateMetrics.droppedRecordsSensor(context);
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
        written();
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
}
