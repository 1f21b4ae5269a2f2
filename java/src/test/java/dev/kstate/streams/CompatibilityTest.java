package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.query.KeyQuery;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The Kafka Streams versions kstate claims to run on. This class uses only APIs present in
 * Kafka Streams 4.0 to 4.4; Gradle runs it against 4.0.0, 4.2.0 and 4.3.0 ({@code gradle -p java
 * compatTest}, see build.gradle) as well as 4.4.0 (the normal test task). Each run checks the
 * runtime really is the version it was started for.
 */
public class CompatibilityTest {
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("compat");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** The runtime is the Kafka version Gradle put on the classpath. */
    @Test
    public void runsOnTheExpectedKafkaVersion() {
        String expected = System.getProperty("kstate.kafka.version", "4.4.0");
        String clientsJar = org.apache.kafka.common.TopicPartition.class.getProtectionDomain().getCodeSource().getLocation().getPath();
        assertTrue(clientsJar, clientsJar.contains("kafka-clients-" + expected));
        String streamsJar = StreamsBuilder.class.getProtectionDomain().getCodeSource().getLocation().getPath();
        assertTrue(streamsJar, streamsJar.contains("kafka-streams-" + expected));
    }

    /**
     * A session store on the memory engine is persistent to Kafka only where Kafka takes a
     * persistent store's restore offset from the store (4.3+): on 4.0 to 4.2 Kafka would restore
     * it from the task's {@code .checkpoint} file, past the data it lost when it closed. The
     * memory engine's other kinds are never persistent; the RocksDB engine's always are.
     */
    @Test
    public void memorySessionStoresArePersistentWhereKafkaAsksTheStoreForItsOffset() {
        String version = System.getProperty("kstate.kafka.version", "4.4.0");
        boolean checkpointFile = version.startsWith("4.0.") || version.startsWith("4.1.") || version.startsWith("4.2.");
        java.time.Duration hour = java.time.Duration.ofHours(1);
        assertEquals(version, !checkpointFile, KstateStores.inMemorySessionStore("s", hour).get().persistent());
        assertEquals(version, false, KstateStores.inMemoryWindowStore("w", hour, java.time.Duration.ofMinutes(1), false)
            .get().persistent());
        assertEquals(version, false, KstateStores.inMemoryTimestampedKeyValueStore("k").get().persistent());
        assertEquals(version, true, KstateStores.persistentSessionStore("p", hour).get().persistent());
    }

    /**
     * {@code dsl.store.suppliers.class=KstateDslStoreSuppliers} (a count) and
     * {@code Materialized.as(kstate)} (a table), against a model of the counts and latest values.
     */
    @Test
    public void dslSuppliersAndMaterializedStoresMatchTheModel() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("clicks", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .count()
            .toStream().to("counts", Produced.with(Serdes.String(), Serdes.Long()));
        builder.table("profiles", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String>as(KstateStores.persistentTimestampedKeyValueStore("profiles"))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        Properties props = TestSupport.props("compat", dir);
        props.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class.getName());
        Map<String, Long> counts = new HashMap<>();
        Map<String, String> profiles = new HashMap<>();
        Random rnd = new Random(7);
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props)) {
            TestInputTopic<String, String> clicks = driver.createInputTopic("clicks", new StringSerializer(), new StringSerializer());
            TestInputTopic<String, String> profileTopic = driver.createInputTopic("profiles", new StringSerializer(),
                new StringSerializer());
            TestOutputTopic<String, Long> out = driver.createOutputTopic("counts", new StringDeserializer(), new LongDeserializer());
            for (int i = 0; i < 2000; i++) {
                String user = "user-" + rnd.nextInt(50);
                clicks.pipeInput(user, "page-" + i, 1000L + i);
                counts.merge(user, 1L, Long::sum);
                if (i % 3 == 0) {
                    profileTopic.pipeInput(user, "profile-" + i, 1000L + i);
                    profiles.put(user, "profile-" + i);
                }
            }
            Map<String, Long> emitted = new HashMap<>();
            for (KeyValue<String, Long> kv : out.readKeyValuesToList()) {
                emitted.put(kv.key, kv.value);
            }
            assertEquals(counts, emitted);

            // The count's store is a kstate store made by KstateDslStoreSuppliers.
            String countStore = null;
            for (String name : driver.getAllStateStores().keySet()) {
                if (name.contains("AGGREGATE-STATE-STORE")) {
                    countStore = name;
                }
            }
            assertTrue(String.valueOf(driver.getAllStateStores().keySet()), countStore != null);
            StateStore count = driver.getAllStateStores().get(countStore);
            assertTrue(String.valueOf(count), inner(count) instanceof KstateTimestampedKeyValueStore);
            KeyValueStore<String, ValueAndTimestamp<Long>> countKv = driver.getTimestampedKeyValueStore(countStore);
            Map<String, Long> stored = new HashMap<>();
            try (KeyValueIterator<String, ValueAndTimestamp<Long>> it = countKv.all()) {
                while (it.hasNext()) {
                    KeyValue<String, ValueAndTimestamp<Long>> kv = it.next();
                    stored.put(kv.key, kv.value.value());
                }
            }
            assertEquals(counts, stored);

            KeyValueStore<String, ValueAndTimestamp<String>> profileKv = driver.getTimestampedKeyValueStore("profiles");
            for (Map.Entry<String, String> e : profiles.entrySet()) {
                assertEquals(e.getValue(), profileKv.get(e.getKey()).value());
            }
            // IQv2 on the kstate store (QueryConfig has no isolation level before 4.4)
            StateStore profileStore = driver.getAllStateStores().get("profiles");
            String someone = profiles.keySet().iterator().next();
            QueryResult<String> r = profileStore.query(KeyQuery.<String, String>withKey(someone), PositionBound.unbounded(),
                new QueryConfig(false));
            assertTrue(String.valueOf(r), r.isSuccess());
            assertEquals(profiles.get(someone), r.getResult());
        }
    }

    /**
     * A kstate versioned table (Kafka Streams 4.0+ has {@code VersionedBytesStore}) joined with a
     * stream whose records look it up in the past: every join equals the model's version valid at
     * the stream record's time, and IQv2's {@code VersionedKeyQuery} reads it back.
     */
    @Test
    public void aVersionedTableJoinMatchesTheModel() {
        StreamsBuilder builder = new StreamsBuilder();
        Consumed<String, String> strings = Consumed.with(Serdes.String(), Serdes.String());
        builder.stream("orders", strings)
            .join(builder.table("prices", strings, Materialized.<String, String>as(
                KstateStores.persistentVersionedKeyValueStore("prices", java.time.Duration.ofSeconds(10)))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())), (o, p) -> o + "|" + p)
            .to("joined", Produced.with(Serdes.String(), Serdes.String()));
        Map<String, java.util.TreeMap<Long, String>> model = new HashMap<>();
        java.util.List<String> expected = new java.util.ArrayList<>();
        java.util.List<String> actual = new java.util.ArrayList<>();
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), TestSupport.props("compat-v", dir))) {
            TestInputTopic<String, String> prices = driver.createInputTopic("prices", new StringSerializer(),
                new StringSerializer());
            TestInputTopic<String, String> orders = driver.createInputTopic("orders", new StringSerializer(),
                new StringSerializer());
            TestOutputTopic<String, String> joined = driver.createOutputTopic("joined", new StringDeserializer(),
                new StringDeserializer());
            Random rnd = new Random(5);
            long time = 1_000;
            for (int i = 0; i < 600; i++) {
                time += 10;
                String key = "k" + rnd.nextInt(5);
                if (rnd.nextBoolean()) {
                    String price = rnd.nextInt(6) == 0 ? null : "p" + i;
                    prices.pipeInput(key, price, time);
                    model.computeIfAbsent(key, k -> new java.util.TreeMap<>()).put(time, price);
                } else {
                    long at = time - rnd.nextInt(300);
                    orders.pipeInput(key, "o" + i, at);
                    java.util.TreeMap<Long, String> versions = model.get(key);
                    Map.Entry<Long, String> valid = versions == null ? null : versions.floorEntry(at);
                    if (valid != null && valid.getValue() != null) {
                        expected.add(key + "=o" + i + "|" + valid.getValue() + "@" + at);
                    }
                }
                joined.readRecordsToList().forEach(r -> actual.add(r.key() + "=" + r.value() + "@" + r.timestamp()));
            }
            assertTrue(String.valueOf(inner(driver.getAllStateStores().get("prices"))),
                inner(driver.getAllStateStores().get("prices")) instanceof KstateVersionedStore);
            assertTrue(expected.size() > 100);
            assertEquals(expected, actual);
            for (Map.Entry<String, java.util.TreeMap<Long, String>> e : model.entrySet()) {
                Map.Entry<Long, String> valid = e.getValue().floorEntry(time - 50);
                QueryResult<org.apache.kafka.streams.state.VersionedRecord<String>> r =
                    driver.getVersionedKeyValueStore("prices").query(
                        org.apache.kafka.streams.query.VersionedKeyQuery.<String, String>withKey(e.getKey())
                            .asOf(java.time.Instant.ofEpochMilli(time - 50)), PositionBound.unbounded(),
                        new QueryConfig(false));
                assertTrue(String.valueOf(r), r.isSuccess());
                assertEquals(valid == null ? null : valid.getValue(),
                    r.getResult() == null ? null : r.getResult().value());
            }
        }
    }

    /** The store under Kafka's wrappers. */
    private static StateStore inner(StateStore store) {
        StateStore s = store;
        while (s instanceof org.apache.kafka.streams.state.internals.WrappedStateStore) {
            s = ((org.apache.kafka.streams.state.internals.WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        return s;
    }

}
