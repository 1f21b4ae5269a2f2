package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.function.Consumer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.RocksDbIndexedTimeOrderedWindowBytesStoreSupplier;
import org.apache.kafka.streams.state.internals.RocksDbTimeOrderedSessionBytesStoreSupplier;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.junit.Test;

/**
 * The time-ordered window and session stores of {@code EmitStrategy.onWindowClose()}: kstate's
 * against Kafka's own ({@code RocksDbIndexedTimeOrderedWindowBytesStoreSupplier},
 * {@code RocksDbTimeOrderedSessionBytesStoreSupplier}).
 *
 * <ul>
 *   <li>The same emit-on-window-close DSL topologies (tumbling count with the DSL's default
 *   caching, hopping aggregate without caching, sliding aggregate, session count) over random
 *   records with late ones beyond the grace period, run through TopologyTestDriver on Kafka's
 *   stores and on kstate's (RocksDB and memory engines): output records (key, value, timestamp,
 *   order), changelog records and final store contents identical.</li>
 *   <li>The same after a restart mid-stream (the driver closed, a new one on the same state
 *   directory).</li>
 *   <li>Store level: random puts and deletes (late ones and expired segments included), and
 *   interleaved {@code fetchAll}, {@code all}, key and key-range fetches and
 *   {@code findSessions(earliestEnd, latestEnd)}, through the wrapping Kafka builds (metered,
 *   change-logging, caching on and off): identical answers, order included.</li>
 * </ul>
 */
public class TimeOrderedStoresTest extends TimeOrderedHarness {
    private static final int RECORDS = 4_000;

    private static Properties props(Stores3 stores, File stateDir) {
        return props("to", stores, stateDir);
    }

    /** Random records: stream time moves on, one in six late by up to 100 s (beyond every grace). */
    private static List<KeyValue<String, KeyValue<String, Long>>> records(long seed) {
        return records(seed, RECORDS,
            (rnd, ts) -> KeyValue.pair("k" + rnd.nextInt(30), KeyValue.pair("v" + rnd.nextInt(1000), ts)));
    }

    /** What one run produced. */
    private static final class Run {
        final List<String> output = new ArrayList<>();
        final List<String> changelog = new ArrayList<>();
        final List<String> contents = new ArrayList<>();
        String store;
        /** The class of the store doing the work in each part. */
        final List<String> stores = new ArrayList<>();
        /**
         * At each restart, every record of {@code default} in Kafka's segments of the store (hex key =
         * hex value, all segments), or "kstate" when the directory holds a kstate store.
         */
        final List<String> handedOver = new ArrayList<>();
        /** What each {@code kstate export --to kafka} between parts printed. */
        final List<String> exports = new ArrayList<>();
        /** The classes of Kafka's layers above the store. */
        String layers;
    }

    /**
     * Runs {@code topology} on {@code stores} over the records; with {@code restartAt} >= 0, closes the
     * driver after that many records and goes on with a new one on the same state directory. (The
     * driver deletes its state directory when it closes, so the directory is copied aside before and
     * put back after: the driver commits after every record, and the copy is taken while it is idle.)
     */
    private Run run(Stores3 stores, Consumer<StreamsBuilder> topology, List<KeyValue<String, KeyValue<String, Long>>> input,
                    String storeName, boolean session, int restartAt) throws Exception {
        return run(stores, stores, false, topology, input, storeName, session, restartAt);
    }

    /**
     * As above, with the restart going on with {@code after}'s stores; with {@code closeTask}, the
     * first driver's task is closed as Kafka closes it (commit, stores closed: Kafka's segments flushed
     * with their offsets) before the copy, instead of flushing Kafka's segments only.
     */
    private Run run(Stores3 stores, Stores3 after, boolean closeTask, Consumer<StreamsBuilder> topology,
                    List<KeyValue<String, KeyValue<String, Long>>> input, String storeName, boolean session,
                    int restartAt) throws Exception {
        return restartAt < 0 ? run(new Stores3[] {stores}, closeTask, topology, input, storeName, session, new int[0])
            : run(new Stores3[] {stores, after}, closeTask, topology, input, storeName, session, new int[] {restartAt});
    }

    /**
     * Runs the input in parts, part {@code i} on {@code phases[i]}'s stores, restarting (a new driver
     * on the same state directory) at each of {@code cuts}. A part on kstate's RocksDB stores followed
     * by one on Kafka's is handed back to Kafka by {@code kstate export --to kafka} in between (the
     * task closed first, with {@code closeTask}); a part on Kafka's followed by one on kstate's is
     * adopted by kstate's open.
     */
    private Run run(Stores3[] phases, boolean closeTask, Consumer<StreamsBuilder> topology,
                    List<KeyValue<String, KeyValue<String, Long>>> input, String storeName, boolean session,
                    int[] cuts) throws Exception {
        File stateDir = tempDir("to-" + String.join("-", java.util.Arrays.stream(phases).map(Enum::name)
            .toArray(String[]::new)));
        Run run = new Run();
        int from = 0;
        org.apache.kafka.common.TopicPartition changelog =
            new org.apache.kafka.common.TopicPartition("to-" + storeName + "-changelog", 0);
        Long closedAt = null;
        for (int part = 0; part < phases.length; part++) {
            boolean last = part == phases.length - 1;
            int to = last ? input.size() : cuts[part];
            StreamsBuilder builder = new StreamsBuilder();
            topology.accept(builder);
            Stores3 now = phases[part];
            File saved = last ? null : tempDir("to-saved-" + part);
            try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(now, stateDir))) {
                TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
                if (closedAt != null) {
                    // reopened after a task close: the store's committed offset is the one its task closed
                    // with, and Kafka's state manager restores nothing before it
                    StateStore reopened = session ? (StateStore) driver.getSessionStore(storeName)
                        : (StateStore) driver.getTimestampedWindowStore(storeName);
                    assertEquals(storeName + ": committed offset after the restart on " + now, closedAt,
                        reopened.committedOffset(changelog));
                    assertEquals(storeName + ": the changelog is read from right after it", Long.valueOf(closedAt + 1),
                        SegmentAdoptionTest.changelogStarts(driver).get(changelog));
                }
                for (KeyValue<String, KeyValue<String, Long>> r : input.subList(from, to)) {
                    in.pipeInput(r.key, r.value.key, r.value.value);
                }
                collect(driver, "to-" + storeName + "-changelog", false, run.output, run.changelog);
                run.contents.add("--- part " + part);
                StateStore outer;
                if (session) {
                    SessionStore<String, Object> s = driver.getSessionStore(storeName);
                    try (KeyValueIterator<Windowed<String>, Object> it = s.findSessions(null, null, 0, Long.MAX_VALUE)) {
                        it.forEachRemaining(kv -> run.contents.add(kv.key + "=" + kv.value));
                    }
                    outer = (StateStore) s;
                } else {
                    WindowStore<String, ValueAndTimestamp<Object>> w = driver.getTimestampedWindowStore(storeName);
                    try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<Object>> it = w.all()) {
                        it.forEachRemaining(kv -> run.contents.add(kv.key + "=" + kv.value));
                    }
                    outer = (StateStore) w;
                }
                run.store = innermost(outer);
                run.layers = layers(outer);
                run.stores.add(run.store);
                if (now == Stores3.KSTATE_ROCKSDB) {
                    // a kstate RocksDB store (CURRENT at <taskDir>/<name>/), not Kafka's segment directories
                    File[] found = new File(stateDir, "to").listFiles((d, n) ->
                        new File(new File(d, n), storeName + "/CURRENT").exists());
                    assertTrue(storeName + " is a kstate RocksDB store", found != null && found.length == 1);
                }
                if (!last) {
                    if (closeTask) {
                        closedAt = outer.committedOffset(changelog);
                        assertNotNull(storeName + ": the task committed an offset", closedAt);
                        MigrationTest.closeTaskKeepingState(driver);
                    } else if (now == Stores3.KAFKA) {
                        flushKafkaSegments(outer);
                    }
                    copyTree(stateDir.toPath(), saved.toPath());
                }
            }
            if (!last) {
                TestSupport.deleteTree(stateDir);
                copyTree(saved.toPath(), stateDir.toPath());
                if (now == Stores3.KSTATE_ROCKSDB && phases[part + 1] == Stores3.KAFKA) {
                    run.exports.add(TestSupport.runCli(0, "export", "--to", "kafka", new File(stateDir, "to").getPath()));
                }
                run.handedOver.add(segmentRecords(new File(stateDir, "to/0_0/" + storeName)));
            }
            from = to;
        }
        return run;
    }

    /**
     * Kafka's segment databases write without a WAL and keep the last writes in memtables until
     * they close (a restart then restores them from the changelog, which the driver cannot do):
     * they are flushed to their table files before the copy, through the fields Kafka keeps them in.
     */
    private static void flushKafkaSegments(StateStore outer) throws Exception {
        StateStore s = outer;
        while (s instanceof WrappedStateStore) {
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        java.lang.reflect.Field segmentsField = field(s.getClass(), "segments");
        Object segments = segmentsField.get(s);
        List<?> all = (List<?>) segments.getClass().getMethod("allSegments", boolean.class).invoke(segments, true);
        assertTrue("Kafka's store has segments", !all.isEmpty());
        for (Object segment : all) {
            org.rocksdb.RocksDB db = (org.rocksdb.RocksDB) field(segment.getClass(), "db").get(segment);
            try (org.rocksdb.FlushOptions options = new org.rocksdb.FlushOptions().setWaitForFlush(true)) {
                db.flush(options);
            }
        }
    }

    private static java.lang.reflect.Field field(Class<?> type, String name) throws NoSuchFieldException {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            try {
                java.lang.reflect.Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException next) {
                // a superclass declares it
            }
        }
        throw new NoSuchFieldException(type + "." + name);
    }

    /** @return the last kstate run */
    private Run assertSame(String what, Consumer<StreamsBuilder> topology, String storeName, boolean session,
                           String kstateClass, long seed, int restartAt) throws Exception {
        // a restart keeps the stores on disk: the memory engine's are gone, Kafka's are not
        Stores3[] kstateRuns = restartAt >= 0 ? new Stores3[] {Stores3.KSTATE_ROCKSDB}
            : new Stores3[] {Stores3.KSTATE_ROCKSDB, Stores3.KSTATE_MEMORY};
        List<KeyValue<String, KeyValue<String, Long>>> input = records(seed);
        if (restartAt >= 0) {
            // Kafka's segmented stores reopen with no observed stream time (until a write, or a
            // restore from the changelog, moves it), kstate's with the committed one: the first
            // record after the restart is at the stream time, so that both stores have the same one
            // when the first windows are emitted.
            long streamTime = input.subList(0, restartAt).stream().mapToLong(r -> r.value.value).max().orElse(0);
            input.add(restartAt, KeyValue.pair("k0", KeyValue.pair("restart", streamTime)));
        }
        Run kafka = run(Stores3.KAFKA, topology, input, storeName, session, restartAt);
        assertTrue(what + ": the topology emits final results", kafka.output.size() > 100);
        assertTrue(what + ": on Kafka's time-ordered store (" + kafka.store + ")", kafka.store.contains("TimeOrdered"));
        Run last = null;
        for (Stores3 s : kstateRuns) {
            Run kstate = run(s, topology, input, storeName, session, restartAt);
            last = kstate;
            assertEquals(what + " on " + s + ": a kstate store", kstateClass, kstate.store);
            assertEquals(what + " on " + s + ": Kafka's layers above the store", kafka.layers, kstate.layers);
            assertSameList(what + " on " + s + ": output", kafka.output, kstate.output);
            assertSameList(what + " on " + s + ": changelog", kafka.changelog, kstate.changelog);
            assertSameList(what + " on " + s + ": final store contents", kafka.contents, kstate.contents);
        }
        return last;
    }

    /** Kafka's time-ordered cache over the kstate store, as over its own. */
    @Test
    public void tumblingCountWithCaching() throws Exception {
        Run kstate = assertSame("tumbling count", tumblingCount(true), "counts", false, "KstateTimeOrderedWindowStore",
            11, -1);
        assertTrue(kstate.layers, kstate.layers.contains("TimeOrderedCachingWindowStore"));
    }

    @Test
    public void hoppingAggregateWithoutCachingAndLongerRetention() throws Exception {
        assertSame("hopping aggregate", hoppingAggregate(false), "hops", false, "KstateTimeOrderedWindowStore", 12, -1);
    }

    @Test
    public void slidingAggregate() throws Exception {
        assertSame("sliding aggregate", slidingAggregate(true), "slides", false, "KstateTimeOrderedWindowStore", 13, -1);
    }

    @Test
    public void sessionCountByEnd() throws Exception {
        assertSame("session count", sessionCount(), "sessions", true, "KstateSessionStore", 14, -1);
    }

    /**
     * Without caching: with it, the first emit after a restart reads the store before the cache
     * has written the record's window to it, while Kafka's reopened segments have no stream time
     * yet (they then also return windows older than the retention still on disk), kstate's its
     * committed one.
     */
    @Test
    public void restartMidStream() throws Exception {
        assertSame("tumbling count, restarted", tumblingCount(false), "counts", false, "KstateTimeOrderedWindowStore", 15,
            RECORDS / 2);
        assertSame("session count, restarted", sessionCount(), "sessions", true, "KstateSessionStore", 16, RECORDS / 2);
    }

    /**
     * An onWindowClose() application switching to kstate mid-stream: its task closed on Kafka's
     * time-ordered stores (time windows without and sliding windows with Kafka's key index, session
     * windows), then reopened with {@code KstateDslStoreSuppliers}: kstate adopts Kafka's segment
     * directories in place (a kstate RocksDB store at the store's directory afterwards; the driver
     * restores nothing) and the rest of the input gives the same output, changelog and final store
     * contents as a run that stayed on Kafka's stores. The sliding aggregate is compared with a run
     * that was on kstate's stores all along instead: its right windows start after the latest record,
     * so kstate's reopened store (stream time: the latest window start held, as after a restore from the
     * changelog) and Kafka's reopened segments (no stream time until the first write, which is the
     * restart record's left window) see different retention floors at the first emit after the restart.
     */
    @Test
    public void kafkasTimeOrderedStoresAreAdoptedMidStream() throws Exception {
        assertAdoptedMidStream("tumbling count", tumblingCount(false), "counts", false, "KstateTimeOrderedWindowStore", 17,
            Stores3.KAFKA);
        assertAdoptedMidStream("sliding aggregate", slidingAggregate(false), "slides", false, "KstateTimeOrderedWindowStore",
            18, Stores3.KSTATE_ROCKSDB);
        assertAdoptedMidStream("session count", sessionCount(), "sessions", true, "KstateSessionStore", 19, Stores3.KAFKA);
    }

    private void assertAdoptedMidStream(String what, Consumer<StreamsBuilder> topology, String storeName, boolean session,
                                        String kstateClass, long seed, Stores3 reference) throws Exception {
        List<KeyValue<String, KeyValue<String, Long>>> input = records(seed);
        int restartAt = RECORDS / 2;
        // as in assertSame: the first record after the restart is at the stream time
        long streamTime = input.subList(0, restartAt).stream().mapToLong(r -> r.value.value).max().orElse(0);
        input.add(restartAt, KeyValue.pair("k0", KeyValue.pair("restart", streamTime)));
        Run kafka = run(reference, reference, true, topology, input, storeName, session, restartAt);
        assertTrue(what + ": the topology emits final results", kafka.output.size() > 100);
        if (reference == Stores3.KAFKA) {
            assertTrue(what + ": on Kafka's time-ordered store (" + kafka.store + ")", kafka.store.contains("TimeOrdered"));
        }
        Run adopted = run(Stores3.KAFKA, Stores3.KSTATE_ROCKSDB, true, topology, input, storeName, session, restartAt);
        assertEquals(what + ": a kstate store after the switch", kstateClass, adopted.store);
        assertSameList(what + ": output", kafka.output, adopted.output);
        assertSameList(what + ": changelog", kafka.changelog, adopted.changelog);
        assertSameList(what + ": final store contents", kafka.contents, adopted.contents);
    }

    /**
     * Puts a record at the stream time at each of {@code cuts} (indices of {@code input}, ascending),
     * as assertSame does for its restart; returns the cuts in the longer list (each at its record).
     */
    private static int[] withRestartRecords(List<KeyValue<String, KeyValue<String, Long>>> input, int[] cuts) {
        for (int i = cuts.length - 1; i >= 0; i--) {
            long streamTime = input.subList(0, cuts[i]).stream().mapToLong(r -> r.value.value).max().orElse(0);
            input.add(cuts[i], KeyValue.pair("k0", KeyValue.pair("restart" + i, streamTime)));
        }
        int[] shifted = new int[cuts.length];
        for (int i = 0; i < cuts.length; i++) {
            shifted[i] = cuts[i] + i;
        }
        return shifted;
    }

    /**
     * The way back (issue #26): an onWindowClose() application on kstate's time-ordered stores, its
     * task closed, its state directory exported by {@code kstate export --to kafka}, and reopened on
     * Kafka 4.4's own time-ordered stores (the DSL's {@code RocksDbIndexedTimeOrderedWindowBytesStoreSupplier}
     * without the key index for time windows, with it for sliding windows, and
     * {@code RocksDbTimeOrderedSessionBytesStoreSupplier} with it): Kafka reports kstate's committed
     * offset and restores nothing, and the rest of the input gives the same output, changelog and
     * final store contents as a run on Kafka's stores throughout, restarted at the same record; and the
     * exported segments hold, byte for byte, the records Kafka's own stores held at that record (index
     * records included exactly where Kafka writes them). The sliding aggregate reads by key through
     * Kafka's index: an export without the index records also fails on the output (checked by leaving
     * them out).
     */
    @Test
    public void kstatesTimeOrderedStoresAreExportedToKafkasMidStream() throws Exception {
        assertExportedMidStream("tumbling count", tumblingCount(false), "counts", false, "KstateTimeOrderedWindowStore",
            20, "RocksDBTimeOrderedWindowStore (EmitStrategy.onWindowClose(), without Kafka's key index)");
        assertExportedMidStream("sliding aggregate", slidingAggregate(false), "slides", false,
            "KstateTimeOrderedWindowStore", 21, "sliding windows: with Kafka's key index");
        assertExportedMidStream("session count", sessionCount(), "sessions", true, "KstateSessionStore", 22,
            "RocksDBTimeOrderedSessionStore");
    }

    private void assertExportedMidStream(String what, Consumer<StreamsBuilder> topology, String storeName, boolean session,
                                         String kstateClass, long seed, String exportedAs) throws Exception {
        List<KeyValue<String, KeyValue<String, Long>>> input = records(seed);
        int[] cuts = withRestartRecords(input, new int[] {RECORDS / 2});
        Run kafka = run(new Stores3[] {Stores3.KAFKA, Stores3.KAFKA}, true, topology, input, storeName, session, cuts);
        assertTrue(what + ": the topology emits final results", kafka.output.size() > 100);
        Run exported = run(new Stores3[] {Stores3.KSTATE_ROCKSDB, Stores3.KAFKA}, true, topology, input, storeName,
            session, cuts);
        assertEquals(what + ": kstate's store before the export", kstateClass, exported.stores.get(0));
        assertEquals(what + ": Kafka's own store after it", kafka.stores.get(1), exported.stores.get(1));
        assertTrue(what + ": " + kafka.stores.get(1), kafka.stores.get(1).contains("TimeOrdered"));
        assertTrue(exported.exports.get(0), exported.exports.get(0).contains(exportedAs));
        assertTrue(exported.exports.get(0), exported.exports.get(0).contains("1 store(s) exported"));
        assertTrue(what + ": Kafka's segments hold records", kafka.handedOver.get(0).length() > 1000
            && kafka.handedOver.get(0).startsWith("{"));
        assertEquals(what + ": the exported segments hold Kafka's own records, byte for byte", kafka.handedOver,
            exported.handedOver);
        assertSameList(what + ": output", kafka.output, exported.output);
        assertSameList(what + ": changelog", kafka.changelog, exported.changelog);
        assertSameList(what + ": final store contents", kafka.contents, exported.contents);
    }

    /**
     * Adopted, exported and adopted again: an application on Kafka's time-ordered stores switches to
     * kstate (adoption in place), back to Kafka's (export) and to kstate again, restarted at the same
     * records as a run on Kafka's stores throughout: the same output, changelog and final store
     * contents (time windows without Kafka's key index, session windows with it; the sliding
     * aggregate is left out, see kafkasTimeOrderedStoresAreAdoptedMidStream).
     */
    @Test
    public void adoptedExportedAndAdoptedAgain() throws Exception {
        Stores3[] kafkaOnly = {Stores3.KAFKA, Stores3.KAFKA, Stores3.KAFKA, Stores3.KAFKA};
        Stores3[] switching = {Stores3.KAFKA, Stores3.KSTATE_ROCKSDB, Stores3.KAFKA, Stores3.KSTATE_ROCKSDB};
        for (boolean session : new boolean[] {false, true}) {
            String what = session ? "session count" : "tumbling count";
            String storeName = session ? "sessions" : "counts";
            Consumer<StreamsBuilder> topology = session ? sessionCount() : tumblingCount(false);
            List<KeyValue<String, KeyValue<String, Long>>> input = records(session ? 24 : 23);
            int[] cuts = withRestartRecords(input, new int[] {RECORDS / 4, RECORDS / 2, 3 * RECORDS / 4});
            Run kafka = run(kafkaOnly, true, topology, input, storeName, session, cuts);
            Run trip = run(switching, true, topology, input, storeName, session, cuts);
            assertEquals(what + ": one export", 1, trip.exports.size());
            String kstateClass = session ? "KstateSessionStore" : "KstateTimeOrderedWindowStore";
            assertEquals(what + ": stores of each part",
                java.util.Arrays.asList(kafka.stores.get(0), kstateClass, kafka.stores.get(2), kstateClass), trip.stores);
            assertSameList(what + ": output", kafka.output, trip.output);
            assertSameList(what + ": changelog", kafka.changelog, trip.changelog);
            assertSameList(what + ": final store contents", kafka.contents, trip.contents);
        }
    }

    /** Every store class from the outermost layer down, under Kafka's wrappers. */
    private static List<String> chain(StateStore store) {
        List<String> out = new ArrayList<>();
        StateStore s = store;
        out.add(s.getClass().getSimpleName());
        while (s instanceof WrappedStateStore) {
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
            out.add(s.getClass().getSimpleName());
        }
        return out;
    }

    /** See {@link Run#handedOver}. */
    private static String segmentRecords(File store) throws Exception {
        if (new File(store, "CURRENT").exists()) {
            return "kstate";
        }
        java.util.TreeMap<String, String> out = new java.util.TreeMap<>();
        for (String segment : store.list()) {
            File db = new File(store, segment);
            try (org.rocksdb.Options options = new org.rocksdb.Options();
                 org.rocksdb.RocksDB rocks = org.rocksdb.RocksDB.openReadOnly(options, db.getPath());
                 org.rocksdb.RocksIterator it = rocks.newIterator()) {
                for (it.seekToFirst(); it.isValid(); it.next()) {
                    assertNull(segment + ": one segment per record", out.put(Bytes.wrap(it.key()).toString(),
                        Bytes.wrap(it.value()).toString()));
                }
            }
        }
        return out.toString();
    }

    /** The distinct (first key byte, value length, first value byte) of a family's records in a segment. */
    private static List<String> records(File db, String family) throws Exception {
        List<String> out = new ArrayList<>();
        readFamilies(db, (name, it) -> {
            if (!name.equals(family)) {
                return;
            }
            for (it.seekToFirst(); it.isValid(); it.next()) {
                byte[] v = it.value();
                String r = it.key()[0] + "/" + v.length + (v.length > 0 ? "/" + v[0] : "");
                if (!out.contains(r)) {
                    out.add(r);
                }
            }
        });
        return out;
    }

    /**
     * Runs 500 records through {@code topology} on {@code props} (state directory {@code stateDir}),
     * closes the task keeping its state and copies the state directory into {@code into} (the driver
     * deletes it when it closes).
     */
    private static List<String> runAndClose(Consumer<StreamsBuilder> topology, Properties props, String storeName,
                                            File stateDir, File into) throws Exception {
        StreamsBuilder builder = new StreamsBuilder();
        topology.accept(builder);
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props)) {
            TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
            for (KeyValue<String, KeyValue<String, Long>> r : records(25).subList(0, 500)) {
                in.pipeInput(r.key, r.value.key, r.value.value);
            }
            assertFalse(storeName + ": emits", driver.createOutputTopic("out", new StringDeserializer(),
                new StringDeserializer()).readRecordsToList().isEmpty());
            List<String> stores = chain(driver.getAllStateStores().get(storeName));
            MigrationTest.closeTaskKeepingState(driver);
            copyTree(stateDir.toPath(), into.toPath());
            return stores;
        }
    }

    /** The column families of every segment of a Kafka store, and the distinct records() of {@code family}. */
    private static String layout(File store, String family) throws Exception {
        assertFalse(store + ": no kstate store", new File(store, "CURRENT").exists());
        String[] segments = store.list();
        assertTrue(store + ": Kafka's segments", segments != null && segments.length > 0);
        java.util.Set<List<String>> families = new java.util.HashSet<>();
        java.util.Set<String> seen = new java.util.TreeSet<>();
        for (String segment : segments) {
            families.add(MigrationTest.columnFamilies(new File(store, segment)));
            seen.addAll(records(new File(store, segment), family));
        }
        return families + " " + seen;
    }

    /**
     * What Kafka 4.4 itself writes for {@code onWindowClose()} (issue #26), pinned so that a change in
     * Kafka shows up. In the timestamped format, what the export writes: records in {@code default},
     * {@code 0}-prefixed time-first records (window: timestamp and value, 16 bytes for a count), and
     * {@code 1}-prefixed index records with empty values for sliding windows and sessions only. In the
     * headers format, which {@code KstateDslStoreSuppliers} leaves to Kafka's built-in suppliers
     * ({@code RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier},
     * {@code RocksDbTimeOrderedSessionHeadersBytesStoreSupplier}), on an application configured with
     * kstate's suppliers: windows in {@code windowKeyValueWithHeaders} with headers-format values (a
     * 0 headers length, timestamp, value: 17 bytes) and index records for tumbling windows too; sessions
     * in {@code sessionKeyValueWithHeaders}, but through Kafka's {@code SessionToHeadersStoreAdapter}
     * (the supplier's store is not a {@code HeadersBytesStore}), so the aggregates are stored without
     * headers (8 bytes for a count).
     */
    @Test
    public void kafkasOwnTimeOrderedLayouts() throws Exception {
        Object[][] cases = {
            {tumblingCount(false), "counts", "[[default, offsets]] [0/16/0]",
                "RocksDBTimeOrderedWindowStoreWithHeaders", "[[default, offsets, windowKeyValueWithHeaders]] [0/17/0, 1/0]"},
            {slidingAggregate(false), "slides", "[[default, offsets]] [0/16/0, 1/0]",
                "RocksDBTimeOrderedWindowStoreWithHeaders", "[[default, offsets, windowKeyValueWithHeaders]] [0/17/0, 1/0]"},
            {sessionCount(), "sessions", "[[default, offsets]] [0/8/0, 1/0]",
                "SessionToHeadersStoreAdapter", "[[default, offsets, sessionKeyValueWithHeaders]] [0/8/0, 1/0]"},
        };
        for (Object[] c : cases) {
            @SuppressWarnings("unchecked")
            Consumer<StreamsBuilder> topology = (Consumer<StreamsBuilder>) c[0];
            String storeName = (String) c[1];
            File plainDir = tempDir("to-kafka");
            File plainRun = tempDir("to-run");
            runAndClose(topology, props(Stores3.KAFKA, plainRun), storeName, plainRun, plainDir);
            assertEquals(storeName + ": Kafka's time-ordered layout", c[2],
                layout(new File(plainDir, "to/0_0/" + storeName), "default"));

            File headersDir = tempDir("to-headers");
            File run = tempDir("to-run");
            Properties props = props(Stores3.KAFKA, run);
            props.put(StreamsConfig.DSL_STORE_FORMAT_CONFIG, StreamsConfig.DSL_STORE_FORMAT_HEADERS);
            List<String> stores = runAndClose(topology, props, storeName, run, headersDir);
            assertTrue(storeName + ": " + stores, stores.contains(c[3]));
            assertFalse(storeName + ": " + stores, stores.stream().anyMatch(n -> n.startsWith("Kstate")));
            String family = ((String) c[4]).contains("window") ? "windowKeyValueWithHeaders" : "sessionKeyValueWithHeaders";
            String headersLayout = layout(new File(headersDir, "to/0_0/" + storeName), family);
            assertEquals(storeName + ": Kafka's time-ordered headers layout", c[4], headersLayout);
            assertTrue(storeName + ": default is empty",
                layout(new File(headersDir, "to/0_0/" + storeName), "default").endsWith(" []"));
        }
    }

    // ----- store level ------------------------------------------------------------------------------

    /** Applies op records ({@code kind|a|b|value}) to "w" and "s" and runs the queries of "q" records. */
    private static final class Applier implements Processor<String, String, Void, Void> {
        private final List<String> answers;
        private TimestampedWindowStore<String, String> w;
        private SessionStore<String, String> s;

        Applier(List<String> answers) {
            this.answers = answers;
        }

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            w = context.getStateStore("w");
            s = context.getStateStore("s");
        }

        @Override
        public void process(Record<String, String> record) {
            String[] f = record.value().split("\\|", -1);
            long a = Long.parseLong(f[1]);
            long b = Long.parseLong(f[2]);
            switch (f[0]) {
                case "w":
                    w.put(record.key(), ValueAndTimestamp.make(f[3], record.timestamp()), a);
                    break;
                case "wd":
                    w.put(record.key(), null, a);
                    break;
                case "s":
                    s.put(new Windowed<>(record.key(), new SessionWindow(a, b)), f[3]);
                    break;
                case "sr":
                    s.remove(new Windowed<>(record.key(), new SessionWindow(a, b)));
                    break;
                case "q":
                    query(record.key(), a, b);
                    break;
                default:
                    throw new IllegalArgumentException(record.value());
            }
        }

        private void query(String key, long a, long b) {
            String q = key + "|" + a + "|" + b + " ";
            answers.add(q + "fetchAll " + windows(w.fetchAll(a, b)));
            answers.add(q + "backwardFetchAll " + windows(w.backwardFetchAll(a, b)));
            answers.add(q + "fetch key " + times(w.fetch(key, a, b)));
            answers.add(q + "fetch range " + windows(w.fetch("k1", "k6", a, b)));
            answers.add(q + "fetch point " + w.fetch(key, a / 60_000 * 60_000));
            answers.add(q + "findSessions by end " + windows(s.findSessions(a, b)));
            answers.add(q + "findSessions key " + windows(s.findSessions(key, a, b)));
            answers.add(q + "all " + windows(w.all()));
        }

        private static <V> String windows(KeyValueIterator<Windowed<String>, V> it) {
            StringBuilder sb = new StringBuilder();
            try (KeyValueIterator<Windowed<String>, V> i = it) {
                i.forEachRemaining(kv -> sb.append(window(kv.key)).append('=').append(kv.value).append(' '));
            }
            return sb.toString();
        }

        private static <V> String times(KeyValueIterator<Long, V> it) {
            StringBuilder sb = new StringBuilder();
            try (KeyValueIterator<Long, V> i = it) {
                i.forEachRemaining(kv -> sb.append(kv.key).append('=').append(kv.value).append(' '));
            }
            return sb.toString();
        }
    }

    /** Ops over an hour of stream time (many segments expire), one in six late, one in ten a query. */
    private static List<KeyValue<String, KeyValue<String, Long>>> ops(long seed) {
        Random rnd = new Random(seed);
        List<KeyValue<String, KeyValue<String, Long>>> out = new ArrayList<>();
        long base = 600_000;
        for (int i = 0; i < 2_000; i++) {
            base += rnd.nextInt(1_800);
            long t = rnd.nextInt(6) == 0 ? Math.max(0, base - rnd.nextInt(400_000)) : base;
            String key = "k" + rnd.nextInt(10);
            long start = t / 60_000 * 60_000;
            String op;
            int kind = rnd.nextInt(10);
            if (kind < 4) {
                op = "w|" + start + "|0|v" + i;
            } else if (kind == 4) {
                op = "wd|" + start + "|0|";
            } else if (kind < 7) {
                op = "s|" + t + "|" + (t + rnd.nextInt(90_000)) + "|a" + i;
            } else if (kind == 7) {
                long st = t / 10_000 * 10_000;
                op = "sr|" + st + "|" + (st + 10_000) + "|";
            } else {
                long from = Math.max(0, base - rnd.nextInt(500_000));
                op = "q|" + from + "|" + (from + rnd.nextInt(300_000)) + "|";
            }
            out.add(KeyValue.pair(key, KeyValue.pair(op, t)));
        }
        return out;
    }

    private List<String> storeLevel(WindowBytesStoreSupplier w, SessionBytesStoreSupplier s, boolean caching)
        throws Exception {
        List<String> answers = new ArrayList<>();
        Topology t = new Topology();
        t.addSource("src", Serdes.String().deserializer(), Serdes.String().deserializer(), "ops");
        t.addProcessor("apply", () -> new Applier(answers), "src");
        org.apache.kafka.streams.state.StoreBuilder<TimestampedWindowStore<String, String>> wb =
            Stores.timestampedWindowStoreBuilder(w, Serdes.String(), Serdes.String());
        t.addStateStore(caching ? wb.withCachingEnabled() : wb.withCachingDisabled(), "apply");
        t.addStateStore(Stores.sessionStoreBuilder(s, Serdes.String(), Serdes.String()), "apply");
        File stateDir = tempDir("to-store");
        try (TopologyTestDriver driver = new TopologyTestDriver(t, props(Stores3.KAFKA, stateDir))) {
            TestInputTopic<String, String> in = driver.createInputTopic("ops", new StringSerializer(), new StringSerializer());
            for (KeyValue<String, KeyValue<String, Long>> op : ops(21)) {
                in.pipeInput(op.key, op.value.key, op.value.value);
            }
        }
        return answers;
    }

    @Test
    public void storeLevelAnswersEqualKafkasTimeOrderedStores() throws Exception {
        Duration retention = Duration.ofMinutes(5);
        Duration size = Duration.ofMinutes(1);
        for (boolean keyIndex : new boolean[] {false, true}) {
            for (boolean caching : new boolean[] {false, true}) {
                List<String> kafka = storeLevel(
                    RocksDbIndexedTimeOrderedWindowBytesStoreSupplier.create("w", retention, size, false, keyIndex),
                    new RocksDbTimeOrderedSessionBytesStoreSupplier("s", retention.toMillis(), true), caching);
                assertTrue("queries answered", kafka.size() > 800);
                assertTrue("fetchAll finds windows", kafka.stream().anyMatch(a -> a.contains("fetchAll k")));
                assertTrue("findSessions finds sessions", kafka.stream().anyMatch(a -> a.contains("findSessions by end k")));
                for (KstateStoreOptions.Engine engine : KstateStoreOptions.Engine.values()) {
                    KstateStoreOptions options = KstateStores.builder("w").engine(engine).timestamped(true).options();
                    List<String> kstate = storeLevel(
                        new KstateWindowBytesStoreSupplier(options, retention.toMillis(), size.toMillis(), false, true,
                            keyIndex),
                        new KstateSessionBytesStoreSupplier(KstateStores.builder("s").engine(engine).options(),
                            retention.toMillis(), true), caching);
                    String what = "keyIndex=" + keyIndex + " caching=" + caching + " " + engine;
                    assertEquals(what + ": as many answers", kafka.size(), kstate.size());
                    for (int i = 0; i < kafka.size(); i++) {
                        assertEquals(what + ": answer " + i, kafka.get(i), kstate.get(i));
                    }
                }
            }
        }
    }
}
