package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The README's Java examples are this file's marked regions, byte for byte (after their
 * indentation), and run here: every DSL store becomes a kstate store, and the count chosen
 * by name is a kstate store with the counts the input implies.
 */
public class ReadmeExampleTest {
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("readme");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    @Test
    public void theReadmeExamplesRun() {
        Properties props = TestSupport.props("readme", new File(dir, "state"));
        // README:begin
        props.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, KstateDslStoreSuppliers.class.getName());
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put("enable.transactional.statestores", "true");
        // README:end
        StreamsBuilder builder = new StreamsBuilder();
        // README:begin
        KTable<String, Long> counts = builder.stream("clicks", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .count(Materialized.<String, Long>as(KstateStores.persistentTimestampedKeyValueStore("click-counts"))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()));
        // README:end
        counts.toStream().groupBy((k, v) -> "all", org.apache.kafka.streams.kstream.Grouped.with(Serdes.String(), Serdes.Long()))
            .count(Materialized.as("totals"));
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props)) {
            TestInputTopic<String, String> in =
                driver.createInputTopic("clicks", new StringSerializer(), new StringSerializer());
            for (int i = 0; i < 30; i++) {
                in.pipeInput("user" + (i % 3), "page" + i);
            }
            assertEquals(Long.valueOf(10),
                driver.<String, Long>getTimestampedKeyValueStore("click-counts").get("user1").value());
            assertTrue(inner(driver.getAllStateStores().get("click-counts")) instanceof KstateTimestampedKeyValueStore);
            // "totals" is named but not chosen: KstateDslStoreSuppliers made it a kstate store
            StateStore totals = inner(driver.getAllStateStores().get("totals"));
            assertTrue(String.valueOf(totals), totals.getClass().getName().startsWith("dev.kstate."));
        }
    }

    /** The README's checkpoint settings are valid kstate configuration and read as it says. */
    @Test
    public void theReadmeCheckpointSettingsAreValid() {
        Properties props = new Properties();
        // README:begin
        props.put("kstate.checkpoint.uri", "s3://my-bucket/kstate");   // or file:///shared/dir
        props.put("kstate.checkpoint.s3.region", "eu-west-1");        // any object_store S3 option; AWS_* env applies too
        // README:end
        java.util.Map<String, Object> configs = new java.util.HashMap<>();
        props.forEach((k, v) -> configs.put(String.valueOf(k), v));
        KstateStoreOptions.validate(configs);
        CheckpointSettings settings = CheckpointSettings.of(configs);
        assertEquals("s3://my-bucket/kstate", settings.uri);
        assertEquals(java.util.Collections.singletonMap("region", "eu-west-1"), settings.s3Options);
    }

    @Test
    public void theReadmeShowsTheseExamples() throws Exception {
        String source = new String(Files.readAllBytes(
            Paths.get("src/test/java/dev/kstate/streams/ReadmeExampleTest.java")), StandardCharsets.UTF_8);
        List<String> regions = new ArrayList<>();
        int at = 0;
        while ((at = source.indexOf("// README:begin\n", at)) >= 0) {
            int start = at + "// README:begin\n".length();
            int end = source.indexOf("        // README:end", start);
            StringBuilder region = new StringBuilder();
            for (String line : source.substring(start, end).split("\n")) {
                region.append(line.startsWith("        ") ? line.substring(8) : line).append('\n');
            }
            regions.add(region.toString());
            at = end;
        }
        String readme = new String(Files.readAllBytes(Paths.get("../README.md")), StandardCharsets.UTF_8);
        List<String> blocks = new ArrayList<>();
        at = 0;
        while ((at = readme.indexOf("```java\n", at)) >= 0) {
            int start = at + "```java\n".length();
            int end = readme.indexOf("```\n", start);
            blocks.add(readme.substring(start, end));
            at = end;
        }
        assertEquals("README.md's Java examples are ReadmeExampleTest's marked regions", regions, blocks);
    }

    /** The store under Kafka's wrappers. */
    private static StateStore inner(StateStore store) {
        StateStore s = store;
        while (s instanceof WrappedStateStore) {
            s = ((WrappedStateStore<?, ?, ?>) s).wrapped();
        }
        return s;
    }
}
