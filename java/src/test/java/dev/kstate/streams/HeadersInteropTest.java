package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStoreWithHeaders;
import org.apache.kafka.streams.state.ValueTimestampHeaders;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Differential interop in the headers format (KIP-1271, Kafka 4.4's {@code dsl.store.format=HEADERS}):
 * the same topologies over the same records carrying headers, once on Kafka's
 * {@code RocksDBTimestampedStoreWithHeaders} and once on kstate's headers store, give identical
 * outputs (values, timestamps, headers) and byte-identical store contents; kstate's store sits
 * under Kafka's layers with no adapter.
 */
public class HeadersInteropTest {
    private static final int RECORDS = 4_000;
    private static final String[] DSL_STORES = {"counts", "lengths", "sums", "table"};
    private static final String[] DSL_OUTPUTS = {"count-out", "agg-out", "reduce-out", "table-out"};

    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("headers-interop");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private static Headers headersFor(Random rnd) {
        RecordHeaders h = new RecordHeaders();
        switch (rnd.nextInt(4)) {
            case 0:
                break;
            case 1:
                h.add("trace", Integer.toString(rnd.nextInt(100)).getBytes(StandardCharsets.UTF_8));
                break;
            case 2:
                h.add("null-valued", null);
                h.add("dup", new byte[] {1});
                h.add("dup", new byte[0]);
                break;
            default:
                h.add("ünïcode", new byte[] {(byte) rnd.nextInt(256)});
        }
        return h;
    }

    /** Events and table updates with headers, repeats, out-of-order timestamps, tombstones. */
    private static List<List<TestRecord<String, String>>> input(long seed) {
        Random rnd = new Random(seed);
        List<TestRecord<String, String>> events = new ArrayList<>();
        List<TestRecord<String, String>> items = new ArrayList<>();
        Instant base = Instant.ofEpochMilli(1_700_000_000_000L);
        for (int i = 0; i < RECORDS; i++) {
            Instant ts = base.plusMillis(i * 10L + rnd.nextInt(200) - 100);
            events.add(new TestRecord<>("user-" + rnd.nextInt(300), Integer.toString(rnd.nextInt(1000)),
                headersFor(rnd), ts));
            String tval = rnd.nextInt(10) == 0 ? null : "price-" + rnd.nextInt(100);
            items.add(new TestRecord<>("item-" + rnd.nextInt(200), tval, headersFor(rnd), ts));
        }
        List<List<TestRecord<String, String>>> out = new ArrayList<>();
        out.add(events);
        out.add(items);
        return out;
    }

    /** Outputs (with headers) and raw store contents of one run. */
    static final class Result {
        final Map<String, List<String>> outputs = new LinkedHashMap<>();
        final Map<String, List<String>> stores = new LinkedHashMap<>();
        final Map<String, List<String>> layers = new LinkedHashMap<>();
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x));
        }
        return s.toString();
    }

    private static String headers(Headers hs) {
        StringBuilder s = new StringBuilder("[");
        for (Header h : hs) {
            s.append(h.key()).append(':').append(h.value() == null ? "null" : hex(h.value())).append(' ');
        }
        return s.append(']').toString();
    }

    /** The innermost bytes store under Kafka's layers, recording each layer's class. */
    @SuppressWarnings("unchecked")
    private static KeyValueStore<Bytes, byte[]> innermost(StateStore store, List<String> layers) {
        StateStore s = store;
        while (s instanceof WrappedStateStore) {
            layers.add(s.getClass().getSimpleName());
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        layers.add(s.getClass().getSimpleName());
        return (KeyValueStore<Bytes, byte[]>) s;
    }

    private static List<String> rawContents(KeyValueStore<Bytes, byte[]> store) {
        List<String> out = new ArrayList<>();
        try (KeyValueIterator<Bytes, byte[]> it = store.all()) {
            while (it.hasNext()) {
                KeyValue<Bytes, byte[]> kv = it.next();
                out.add(hex(kv.key.get()) + "=" + hex(kv.value));
            }
        }
        return out;
    }

    private Properties config(String run, boolean kstate) {
        Properties p = TestSupport.props("headers-" + run, new File(dir, run));
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.DSL_STORE_FORMAT_CONFIG, StreamsConfig.DSL_STORE_FORMAT_HEADERS);
        if (kstate) {
            p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class.getName());
        }
        return p;
    }

    private Result run(Topology topology, Properties props, List<List<TestRecord<String, String>>> input,
                       String[] outputs, String[] stores) {
        Result r = new Result();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props)) {
            TestInputTopic<String, String> events = driver.createInputTopic("events",
                Serdes.String().serializer(), Serdes.String().serializer());
            TestInputTopic<String, String> items = driver.createInputTopic("items",
                Serdes.String().serializer(), Serdes.String().serializer());
            for (int i = 0; i < input.get(0).size(); i++) {
                events.pipeInput(input.get(0).get(i));
                items.pipeInput(input.get(1).get(i));
            }
            for (String out : outputs) {
                List<String> records = new ArrayList<>();
                for (TestRecord<String, byte[]> rec : driver.createOutputTopic(out, Serdes.String().deserializer(),
                        Serdes.ByteArray().deserializer()).readRecordsToList()) {
                    records.add(rec.key() + "=" + (rec.value() == null ? "null" : hex(rec.value())) + "@"
                        + rec.timestamp() + headers(rec.headers()));
                }
                r.outputs.put(out, records);
            }
            for (String store : stores) {
                List<String> layers = new ArrayList<>();
                r.stores.put(store, rawContents(innermost(driver.getAllStateStores().get(store), layers)));
                r.layers.put(store, layers);
            }
        }
        return r;
    }

    private static void assertSame(Result kafka, Result kstate) {
        for (String out : kafka.outputs.keySet()) {
            assertFalse(out + " is empty", kafka.outputs.get(out).isEmpty());
            assertEquals("output " + out, kafka.outputs.get(out), kstate.outputs.get(out));
        }
        for (String store : kafka.stores.keySet()) {
            assertFalse(store + " is empty", kafka.stores.get(store).isEmpty());
            assertEquals("store " + store + " (raw bytes)", kafka.stores.get(store), kstate.stores.get(store));
            List<String> layers = kstate.layers.get(store);
            assertEquals(store + ": " + layers, "KstateHeadersKeyValueStore", layers.get(layers.size() - 1));
            for (String layer : layers) {
                assertFalse(store + ": no adapter in " + layers, layer.contains("Adapter"));
            }
            List<String> kafkaLayers = kafka.layers.get(store);
            assertEquals("RocksDBTimestampedStoreWithHeaders", kafkaLayers.get(kafkaLayers.size() - 1));
        }
    }

    @Test
    public void dslTopologiesInTheHeadersFormatMatchKafka() {
        List<List<TestRecord<String, String>>> in = input(42);
        Topology kafkaTopology = InteropTest.dslTopology(InteropTest.Flavour.KSTATE_DSL_SUPPLIERS);
        Result kafka = run(kafkaTopology, config("kafka", false), in, DSL_OUTPUTS, DSL_STORES);
        Result kstate = run(InteropTest.dslTopology(InteropTest.Flavour.KSTATE_DSL_SUPPLIERS), config("kstate", true),
            in, DSL_OUTPUTS, DSL_STORES);
        assertSame(kafka, kstate);
    }

    /** Reads, writes (with the record's headers), deletes, putIfAbsent and scans through the typed store. */
    static final class HeadersProcessor implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStoreWithHeaders<String, Long> store;
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
            ValueTimestampHeaders<Long> old = store.get(record.key());
            if (v % 97 == 0 && old != null) {
                store.delete(record.key());
                context.forward(record.withValue("deleted"));
                return;
            }
            long total = (old == null ? 0 : old.value()) + v;
            if (v % 13 == 0) {
                store.putIfAbsent(record.key() + "-first", ValueTimestampHeaders.make(v, record.timestamp(),
                    record.headers()));
            }
            store.put(record.key(), ValueTimestampHeaders.make(total, record.timestamp(), record.headers()));
            String oldHeaders = old == null ? "-" : headers(old.headers());
            context.forward(record.withValue(total + " " + oldHeaders));
            if (seen % 250 == 0) {
                StringBuilder scan = new StringBuilder();
                try (KeyValueIterator<String, ValueTimestampHeaders<Long>> it = store.range("user-1", "user-2")) {
                    while (it.hasNext()) {
                        KeyValue<String, ValueTimestampHeaders<Long>> kv = it.next();
                        scan.append(kv.key).append(headers(kv.value.headers()));
                    }
                }
                context.forward(new Record<>("scan", scan.toString(), record.timestamp()));
            }
        }
    }

    static Topology papiTopology(KeyValueBytesStoreSupplier supplier) {
        Topology t = new Topology();
        t.addSource("src", Serdes.String().deserializer(), Serdes.String().deserializer(), "events", "items");
        t.addProcessor("proc", () -> new Processor<String, String, String, String>() {
            private final HeadersProcessor inner = new HeadersProcessor();

            @Override
            public void init(ProcessorContext<String, String> context) {
                inner.init(context);
            }

            @Override
            public void process(Record<String, String> record) {
                if (record.value() != null && !record.value().startsWith("price")) {
                    inner.process(record);
                }
            }
        }, "src");
        t.addStateStore(Stores.timestampedKeyValueStoreWithHeadersBuilder(supplier, Serdes.String(), Serdes.Long()),
            "proc");
        t.addSink("sink", "totals-out", Serdes.String().serializer(), Serdes.String().serializer(), "proc");
        return t;
    }

    @Test
    public void processorApiOnTheHeadersStoreMatchesKafka() {
        List<List<TestRecord<String, String>>> in = input(99);
        Result kafka = run(papiTopology(Stores.persistentTimestampedKeyValueStoreWithHeaders("totals")),
            config("papi-kafka", false), in, new String[] {"totals-out"}, new String[] {"totals"});
        Result kstate = run(papiTopology(KstateStores.persistentTimestampedKeyValueStoreWithHeaders("totals")),
            config("papi-kstate", false), in, new String[] {"totals-out"}, new String[] {"totals"});
        assertSame(kafka, kstate);
        // The headers really reached the store: some raw value has a non-empty headers section.
        assertTrue("some stored value carries headers",
            kstate.stores.get("totals").stream().anyMatch(e -> !e.split("=")[1].startsWith("00")));
        Result memory = run(papiTopology(KstateStores.inMemoryTimestampedKeyValueStoreWithHeaders("totals")),
            config("papi-memory", false), in, new String[] {"totals-out"}, new String[] {"totals"});
        assertEquals(kafka.outputs, memory.outputs);
        assertEquals(kafka.stores, memory.stores);
    }
}
