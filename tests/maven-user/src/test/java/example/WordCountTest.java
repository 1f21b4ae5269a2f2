package example;

import static org.junit.Assert.assertEquals;

import dev.kstate.streams.KstateStores;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
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
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.junit.Test;

/** A word count on a kstate store, as an application using the published artifact writes it. */
public class WordCountTest {
    @Test
    public void countsWordsInAKstateStore() throws Exception {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("lines", Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long>as(
                    KstateStores.persistentTimestampedKeyValueStore("word-counts"))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to("counts", Produced.with(Serdes.String(), Serdes.Long()));

        Path stateDir = Files.createTempDirectory("kstate-user");
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "kstate-user");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props)) {
            TestInputTopic<String, String> in = driver.createInputTopic("lines",
                Serdes.String().serializer(), Serdes.String().serializer());
            TestOutputTopic<String, Long> out = driver.createOutputTopic("counts",
                Serdes.String().deserializer(), Serdes.Long().deserializer());
            in.pipeInput("a", "the cat", 1000L);
            in.pipeInput("b", "The dog and the cat", 2000L);

            Map<String, Long> expected = new HashMap<>();
            for (String w : "the cat the dog and the cat".split(" ")) {
                expected.merge(w, 1L, Long::sum);
            }
            Map<String, Long> last = new HashMap<>();
            for (KeyValue<String, Long> kv : out.readKeyValuesToList()) {
                last.put(kv.key, kv.value);
            }
            assertEquals(expected, last);

            // The store behind the count is kstate's, with Kafka's timestamps.
            KeyValueStore<String, ValueAndTimestamp<Long>> store = driver.getTimestampedKeyValueStore("word-counts");
            assertEquals(ValueAndTimestamp.make(3L, 2000L), store.get("the"));
            assertEquals(ValueAndTimestamp.make(1L, 2000L), store.get("dog"));

            // kstate's store lives in <task dir>/word-counts/ (Kafka's own would be under rocksdb/)
            try (java.util.stream.Stream<Path> files = Files.walk(stateDir)) {
                assertEquals(true, files.anyMatch(p -> p.getFileName().toString().equals("word-counts")
                    && Files.isDirectory(p) && !p.getParent().getFileName().toString().equals("rocksdb")));
            }
        }
    }
}
