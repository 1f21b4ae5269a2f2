package dev.kstate.streams;

import static org.junit.Assert.assertEquals;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.After;

/**
 * The harness the differential tests of the time-ordered stores of
 * {@code EmitStrategy.onWindowClose()} share ({@link TimeOrderedStoresTest} in the timestamped store
 * format, {@link TimeOrderedHeadersStoresTest} in the headers one): the three store sets a run is
 * on, their configuration, the DSL topologies, what a run records of Kafka's layers and of its
 * output, and the state directory copies and RocksDB reads a run between two drivers needs.
 */
abstract class TimeOrderedHarness {
    /** Whose stores a run is on. */
    enum Stores3 { KAFKA, KSTATE_ROCKSDB, KSTATE_MEMORY }

    private final List<File> dirs = new ArrayList<>();

    @After
    public void deleteTempDirs() {
        for (File d : dirs) {
            TestSupport.deleteTree(d);
        }
        dirs.clear();
    }

    /** A temporary directory, deleted after the test. */
    File tempDir(String prefix) throws Exception {
        File d = TestSupport.tempDir(prefix);
        dirs.add(d);
        return d;
    }

    /**
     * The application {@code appId} on {@code stores}: every window emitted at once (the default
     * throttles emits to one a second of wall-clock time), kstate's DSL suppliers on the engine asked.
     */
    static Properties props(String appId, Stores3 stores, File stateDir) {
        Properties props = TestSupport.props(appId, stateDir);
        props.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION, 0L);
        if (stores != Stores3.KAFKA) {
            props.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class.getName());
            props.put(KstateStoreOptions.ENGINE_CONFIG, stores == Stores3.KSTATE_MEMORY ? "memory" : "rocksdb");
        }
        return props;
    }

    /** Makes one input record at a timestamp, with the run's random numbers. */
    interface RecordMaker<R> {
        R make(Random rnd, long timestamp);
    }

    /**
     * {@code count} random input records: stream time moves on by up to 2 s a record, one record in
     * six is late by up to 100 s (beyond every grace period of the topologies here).
     */
    static <R> List<R> records(long seed, int count, RecordMaker<R> maker) {
        Random rnd = new Random(seed);
        List<R> out = new ArrayList<>();
        long base = 1_000_000;
        for (int i = 0; i < count; i++) {
            base += rnd.nextInt(2_000);
            long ts = rnd.nextInt(6) == 0 ? Math.max(0, base - rnd.nextInt(100_000)) : base;
            out.add(maker.make(rnd, ts));
        }
        return out;
    }

    // ----- topologies ----------------------------------------------------------------------------------

    static String window(Windowed<String> w) {
        return w.key() + "@" + w.window().start() + "/" + w.window().end();
    }

    /** Counts per tumbling minute, store "counts". */
    static Consumer<StreamsBuilder> tumblingCount(boolean caching) {
        return b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(60), Duration.ofSeconds(30)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(caching ? Materialized.as("counts")
                : Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("counts").withCachingDisabled())
            .toStream((w, v) -> window(w)).mapValues(String::valueOf)
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
    }

    /** Values concatenated per hopping minute (15 s advance, 5 minutes' retention), store "hops". */
    static Consumer<StreamsBuilder> hoppingAggregate(boolean caching) {
        return b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(60), Duration.ofSeconds(20))
                .advanceBy(Duration.ofSeconds(15)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "", (k, v, agg) -> agg.length() > 40 ? v : agg + "," + v,
                cachingAsAsked(Materialized.<String, String, WindowStore<Bytes, byte[]>>as("hops")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
                    .withRetention(Duration.ofMinutes(5)), caching))
            .toStream((w, v) -> window(w))
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
    }

    /** Value lengths summed per sliding 20 s window, store "slides" (Kafka keeps its key index for it). */
    static Consumer<StreamsBuilder> slidingAggregate(boolean caching) {
        return b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(20), Duration.ofSeconds(30)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> 0L, (k, v, agg) -> agg + v.length(),
                cachingAsAsked(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("slides")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()), caching))
            .toStream((w, v) -> window(w)).mapValues(String::valueOf)
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
    }

    /** Counts per session (20 s gap), store "sessions". */
    static Consumer<StreamsBuilder> sessionCount() {
        return b -> b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(20), Duration.ofSeconds(15)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .count(Materialized.as("sessions"))
            .toStream((w, v) -> window(w)).mapValues(v -> v == null ? "<removed>" : String.valueOf(v))
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
    }

    private static <V> Materialized<String, V, WindowStore<Bytes, byte[]>> cachingAsAsked(
        Materialized<String, V, WindowStore<Bytes, byte[]>> m, boolean caching) {
        return caching ? m.withCachingEnabled() : m.withCachingDisabled();
    }

    // ----- what a run records --------------------------------------------------------------------------

    /**
     * The output records so far and the changelog records of {@code changelogTopic} so far
     * ({@code key=value@timestamp}, then the record headers when {@code withHeaders}).
     */
    static void collect(TopologyTestDriver driver, String changelogTopic, boolean withHeaders, List<String> output,
                        List<String> changelog) {
        TestOutputTopic<String, String> out = driver.createOutputTopic("out", new StringDeserializer(),
            new StringDeserializer());
        for (TestRecord<String, String> r : out.readRecordsToList()) {
            output.add(r.key() + "=" + r.value() + "@" + r.timestamp() + headers(r.headers(), withHeaders));
        }
        TestOutputTopic<byte[], byte[]> c = driver.createOutputTopic(changelogTopic, Serdes.ByteArray().deserializer(),
            Serdes.ByteArray().deserializer());
        for (TestRecord<byte[], byte[]> r : c.readRecordsToList()) {
            changelog.add(Bytes.wrap(r.key()) + "=" + (r.value() == null ? "null" : Bytes.wrap(r.value())) + "@"
                + r.timestamp() + headers(r.headers(), withHeaders));
        }
    }

    private static String headers(Headers headers, boolean withHeaders) {
        return withHeaders ? HeadersWindowSessionTest.headers(headers) : "";
    }

    /**
     * Kafka's metered, caching and change-logging layers down to the store (Kafka's RocksDB
     * stores are wrappers too), and Kafka's session adapter of the headers format under them.
     */
    static String layers(StateStore store) {
        StringBuilder sb = new StringBuilder();
        StateStore s = store;
        while (s instanceof WrappedStateStore && !(s instanceof KstateTimeOrderedWindowStore)
            && !s.getClass().getSimpleName().startsWith("RocksDB")) {
            sb.append(s.getClass().getSimpleName()).append(' ');
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        return sb.append(s.getClass().getSimpleName().startsWith("SessionToHeaders") ? s.getClass().getSimpleName() : "")
            .toString();
    }

    /** The class of the store doing the work, under Kafka's wrappers and its session adapter of the headers format. */
    static String innermost(StateStore store) throws Exception {
        StateStore s = store;
        while (true) {
            if (s instanceof WrappedStateStore && !(s instanceof KstateTimeOrderedWindowStore)
                && !s.getClass().getSimpleName().startsWith("RocksDB")) {
                s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
            } else if (s.getClass().getSimpleName().equals("SessionToHeadersStoreAdapter")) {
                java.lang.reflect.Field f = s.getClass().getDeclaredField("store");
                f.setAccessible(true);
                s = (StateStore) f.get(s);
            } else {
                return s.getClass().getSimpleName();
            }
        }
    }

    /** Equal lists, or a message naming the first difference. */
    static void assertSameList(String what, List<String> expected, List<String> actual) {
        for (int i = 0; i < Math.min(expected.size(), actual.size()); i++) {
            assertEquals(what + ": record " + i + " of " + expected.size(), expected.get(i), actual.get(i));
        }
        assertEquals(what + ": records", expected.size(), actual.size());
    }

    // ----- between two drivers -------------------------------------------------------------------------

    /**
     * Copies a state directory, lock files left out (the driver deletes its state directory when it
     * closes, so a run that goes on with another driver copies it aside and back).
     */
    static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> paths = Files.walk(from)) {
            for (Path p : (Iterable<Path>) paths::iterator) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else if (!p.getFileName().toString().endsWith(".lock") && !p.getFileName().toString().equals("LOCK")) {
                    Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    /** Reads the records of one column family of a RocksDB database. */
    interface FamilyReader {
        void read(String family, org.rocksdb.RocksIterator records) throws Exception;
    }

    /** Opens the database at {@code db} read-only and hands each of its column families to {@code reader}. */
    static void readFamilies(File db, FamilyReader reader) throws Exception {
        List<org.rocksdb.ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        try (org.rocksdb.Options listing = new org.rocksdb.Options()) {
            for (byte[] name : org.rocksdb.RocksDB.listColumnFamilies(listing, db.getPath())) {
                descriptors.add(new org.rocksdb.ColumnFamilyDescriptor(name));
            }
        }
        List<org.rocksdb.ColumnFamilyHandle> handles = new ArrayList<>();
        try (org.rocksdb.DBOptions options = new org.rocksdb.DBOptions();
             org.rocksdb.RocksDB rocks = org.rocksdb.RocksDB.openReadOnly(options, db.getPath(), descriptors, handles)) {
            try {
                for (int i = 0; i < descriptors.size(); i++) {
                    try (org.rocksdb.RocksIterator it = rocks.newIterator(handles.get(i))) {
                        reader.read(new String(descriptors.get(i).getName(), StandardCharsets.UTF_8), it);
                    }
                }
            } finally {
                for (org.rocksdb.ColumnFamilyHandle h : handles) {
                    h.close();
                }
            }
        }
    }
}
