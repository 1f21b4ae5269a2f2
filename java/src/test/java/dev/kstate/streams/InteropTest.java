package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Differential interop: the same topologies over the same generated records, once on Kafka's
 * own RocksDB stores and once on kstate stores, must give identical outputs and identical
 * final store contents (values and timestamps).
 */
public class InteropTest {
    private static final int RECORDS = 10_000;
    private static final String[] DSL_STORES = {"counts", "lengths", "sums", "table"};
    private static final String[] DSL_OUTPUTS = {"count-out", "agg-out", "reduce-out", "table-out"};

    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("interop");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** Generated input: keys with repeats, out-of-order timestamps, table tombstones. */
    static final class Input {
        final List<TestRecord<String, String>> events = new ArrayList<>();
        final List<TestRecord<String, String>> tableUpdates = new ArrayList<>();

        Input(long seed) {
            Random rnd = new Random(seed);
            Instant base = Instant.ofEpochMilli(1_700_000_000_000L);
            for (int i = 0; i < RECORDS; i++) {
                String key = "user-" + rnd.nextInt(400);
                String value = Integer.toString(rnd.nextInt(1000));
                Instant ts = base.plusMillis(i * 10L + rnd.nextInt(200) - 100);
                events.add(new TestRecord<>(key, value, ts));
                String tkey = "item-" + rnd.nextInt(300);
                String tval = rnd.nextInt(10) == 0 ? null : "price-" + rnd.nextInt(100);
                tableUpdates.add(new TestRecord<>(tkey, tval, ts));
            }
        }
    }

    /** Which stores a topology is built on. */
    enum Flavour { KAFKA, KSTATE_MATERIALIZED, KSTATE_IN_MEMORY, KSTATE_DSL_SUPPLIERS }

    static Materialized<String, Long, KeyValueStore<Bytes, byte[]>> mat(Flavour f, String name) {
        switch (f) {
            case KAFKA:
                return Materialized.as(Stores.persistentTimestampedKeyValueStore(name));
            case KSTATE_MATERIALIZED:
                return Materialized.as(KstateStores.persistentTimestampedKeyValueStore(name));
            case KSTATE_IN_MEMORY:
                return Materialized.as(KstateStores.inMemoryTimestampedKeyValueStore(name));
            default:
                return Materialized.as(name); // dsl.store.suppliers.class decides
        }
    }

    static <V> Materialized<String, V, KeyValueStore<Bytes, byte[]>> matAny(Flavour f, String name) {
        switch (f) {
            case KAFKA:
                return Materialized.as(Stores.persistentTimestampedKeyValueStore(name));
            case KSTATE_MATERIALIZED:
                return Materialized.as(KstateStores.persistentTimestampedKeyValueStore(name));
            case KSTATE_IN_MEMORY:
                return Materialized.as(KstateStores.inMemoryTimestampedKeyValueStore(name));
            default:
                return Materialized.as(name);
        }
    }

    static Topology dslTopology(Flavour f) {
        StreamsBuilder builder = new StreamsBuilder();
        var events = builder.stream("events", Consumed.with(Serdes.String(), Serdes.String()));
        var grouped = events.groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        grouped.count(mat(f, "counts").withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream().to("count-out", Produced.with(Serdes.String(), Serdes.Long()));
        grouped.aggregate(() -> 0L, (k, v, agg) -> agg + v.length(),
                mat(f, "lengths").withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream().to("agg-out", Produced.with(Serdes.String(), Serdes.Long()));
        events.mapValues(v -> Long.parseLong(v))
            .groupBy((k, v) -> k.substring(0, 6), Grouped.with(Serdes.String(), Serdes.Long()))
            .reduce(Long::sum, mat(f, "sums").withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream().to("reduce-out", Produced.with(Serdes.String(), Serdes.Long()));
        KTable<String, String> table = builder.table("items", Consumed.with(Serdes.String(), Serdes.String()),
            InteropTest.<String>matAny(f, "table").withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        table.mapValues(v -> v.length()).toStream().to("table-out", Produced.with(Serdes.String(), Serdes.Integer()));
        return builder.build();
    }

    Properties config(Flavour f, String run) {
        Properties p = TestSupport.props("interop-" + run, new File(dir, run));
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0); // every update reaches the store
        if (f == Flavour.KSTATE_DSL_SUPPLIERS) {
            p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class.getName());
        }
        return p;
    }

    /** Outputs and store contents of one run. */
    static final class Result {
        final Map<String, List<String>> outputs = new LinkedHashMap<>();
        final Map<String, List<String>> stores = new LinkedHashMap<>();
        final List<String> taskDirEntries = new ArrayList<>();
    }

    Result runDsl(Flavour f, Input input) {
        Result r = new Result();
        try (TopologyTestDriver driver = new TopologyTestDriver(dslTopology(f), config(f, f.name()))) {
            TestInputTopic<String, String> events = driver.createInputTopic("events",
                Serdes.String().serializer(), Serdes.String().serializer());
            TestInputTopic<String, String> items = driver.createInputTopic("items",
                Serdes.String().serializer(), Serdes.String().serializer());
            for (int i = 0; i < RECORDS; i++) {
                events.pipeInput(input.events.get(i));
                items.pipeInput(input.tableUpdates.get(i));
            }
            for (String out : DSL_OUTPUTS) {
                org.apache.kafka.common.serialization.Deserializer<Object> valueDeserializer = out.equals("table-out")
                    ? (topicName, data) -> Serdes.Integer().deserializer().deserialize(topicName, data)
                    : (topicName, data) -> Serdes.Long().deserializer().deserialize(topicName, data);
                TestOutputTopic<String, Object> topic = driver.createOutputTopic(out, Serdes.String().deserializer(),
                    valueDeserializer);
                List<String> records = new ArrayList<>();
                for (TestRecord<String, Object> rec : topic.readRecordsToList()) {
                    records.add(rec.key() + "=" + rec.value() + "@" + rec.timestamp());
                }
                r.outputs.put(out, records);
            }
            for (String store : DSL_STORES) {
                r.stores.put(store, contents(driver.<String, Object>getTimestampedKeyValueStore(store)));
            }
            // TopologyTestDriver wipes the state directory on close: look while it is open.
            File task = new File(new File(new File(dir, f.name()), "interop-" + f.name()), "0_0");
            String[] entries = task.list();
            if (entries != null) {
                r.taskDirEntries.addAll(java.util.Arrays.asList(entries));
            }
        }
        return r;
    }

    static <V> List<String> contents(KeyValueStore<String, ValueAndTimestamp<V>> store) {
        List<String> out = new ArrayList<>();
        try (KeyValueIterator<String, ValueAndTimestamp<V>> it = store.all()) {
            while (it.hasNext()) {
                KeyValue<String, ValueAndTimestamp<V>> kv = it.next();
                out.add(kv.key + "=" + kv.value.value() + "@" + kv.value.timestamp());
            }
        }
        return out;
    }

    private void assertSame(Result expected, Result actual, String what) {
        for (String out : expected.outputs.keySet()) {
            assertFalse(out + " is empty", expected.outputs.get(out).isEmpty());
            assertEquals(what + ": output " + out, expected.outputs.get(out), actual.outputs.get(out));
        }
        for (String store : expected.stores.keySet()) {
            assertFalse(store + " is empty", expected.stores.get(store).isEmpty());
            assertEquals(what + ": store " + store, expected.stores.get(store), actual.stores.get(store));
        }
    }

    /** The kstate run really used kstate: its stores live in stateDir/<name>/, not rocksdb/<name>. */
    private static void assertKstateDirectories(Result r, String... stores) {
        for (String store : stores) {
            assertTrue("kstate directory for " + store + " in " + r.taskDirEntries, r.taskDirEntries.contains(store));
        }
    }

    @Test
    public void dslTopologiesMatchKafkaStores() {
        Input input = new Input(42);
        Result kafka = runDsl(Flavour.KAFKA, input);
        Result kstate = runDsl(Flavour.KSTATE_MATERIALIZED, input);
        assertSame(kafka, kstate, "Materialized.as(kstate)");
        Result viaConfig = runDsl(Flavour.KSTATE_DSL_SUPPLIERS, input);
        assertSame(kafka, viaConfig, "dsl.store.suppliers.class");
        assertKstateDirectories(kstate, DSL_STORES);
        assertKstateDirectories(viaConfig, DSL_STORES);
        assertTrue("Kafka's stores live under rocksdb/: " + kafka.taskDirEntries, kafka.taskDirEntries.contains("rocksdb"));
        assertFalse(kafka.taskDirEntries.contains("counts"));
        assertEquals(RECORDS, kafka.outputs.get("count-out").size());
    }

    @Test
    public void dslTopologiesMatchOnTheInMemoryEngine() {
        Input input = new Input(7);
        assertSame(runDsl(Flavour.KAFKA, input), runDsl(Flavour.KSTATE_IN_MEMORY, input), "in-memory kstate");
    }

    // ----- Processor API ----------------------------------------------------------------------

    /** Keeps per-key totals with the latest timestamp, deletes some, and scans ranges. */
    static final class TotalsProcessor implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStore<String, Long> store;
        private long seen;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore("totals");
        }

        @Override
        public void process(Record<String, String> record) {
            seen++;
            long v = Long.parseLong(record.value());
            ValueAndTimestamp<Long> old = store.get(record.key());
            if (v % 97 == 0 && old != null) {
                store.delete(record.key());
                context.forward(record.withValue("deleted"));
                return;
            }
            long total = (old == null ? 0 : old.value()) + v;
            long ts = old == null ? record.timestamp() : Math.max(old.timestamp(), record.timestamp());
            if (v % 13 == 0) {
                store.putIfAbsent(record.key() + "-first", ValueAndTimestamp.make(v, record.timestamp()));
            }
            store.put(record.key(), ValueAndTimestamp.make(total, ts));
            context.forward(record.withValue(total + "@" + ts));
            if (seen % 250 == 0) {
                long entries = 0;
                long sum = 0;
                try (KeyValueIterator<String, ValueAndTimestamp<Long>> it = store.range("user-1", "user-2")) {
                    while (it.hasNext()) {
                        entries++;
                        sum += it.next().value.value();
                    }
                }
                long reverse = 0;
                try (KeyValueIterator<String, ValueAndTimestamp<Long>> it = store.reverseAll()) {
                    while (it.hasNext()) {
                        it.next();
                        reverse++;
                    }
                }
                context.forward(new Record<>("scan", entries + ":" + sum + ":" + reverse, record.timestamp()));
            }
        }
    }

    static Topology papiTopology(KeyValueBytesStoreSupplier supplier) {
        Topology t = new Topology();
        t.addSource("src", Serdes.String().deserializer(), Serdes.String().deserializer(), "events");
        t.addProcessor("totals-proc", TotalsProcessor::new, "src");
        t.addStateStore(Stores.timestampedKeyValueStoreBuilder(supplier, Serdes.String(), Serdes.Long()), "totals-proc");
        t.addSink("sink", "totals-out", Serdes.String().serializer(), Serdes.String().serializer(), "totals-proc");
        return t;
    }

    Result runPapi(String run, KeyValueBytesStoreSupplier supplier, Input input) {
        Result r = new Result();
        Properties p = TestSupport.props("papi-" + run, new File(dir, run));
        try (TopologyTestDriver driver = new TopologyTestDriver(papiTopology(supplier), p)) {
            TestInputTopic<String, String> events = driver.createInputTopic("events",
                Serdes.String().serializer(), Serdes.String().serializer());
            events.pipeRecordList(input.events);
            List<String> out = new ArrayList<>();
            for (TestRecord<String, String> rec : driver.createOutputTopic("totals-out", Serdes.String().deserializer(),
                    Serdes.String().deserializer()).readRecordsToList()) {
                out.add(rec.key() + "=" + rec.value() + "@" + rec.timestamp());
            }
            r.outputs.put("totals-out", out);
            r.stores.put("totals", contents(driver.<String, Long>getTimestampedKeyValueStore("totals")));
        }
        return r;
    }

    @Test
    public void processorApiTopologyMatchesKafkaStores() {
        Input input = new Input(99);
        Result kafka = runPapi("kafka", Stores.persistentTimestampedKeyValueStore("totals"), input);
        Result kstate = runPapi("kstate", KstateStores.persistentTimestampedKeyValueStore("totals"), input);
        assertSame(kafka, kstate, "Processor API");
        Result tuned = runPapi("kstate-tuned", KstateStores.builder("totals").maxUncommittedBytes(4096)
            .blockCacheBytes(1 << 20).writeBufferBytes(1 << 20).build(), input);
        assertSame(kafka, tuned, "Processor API, tiny uncommitted buffer");
        assertTrue(kafka.outputs.get("totals-out").size() >= RECORDS);
    }

}
