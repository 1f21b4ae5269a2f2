package dev.kstate.streams;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.kstate.internal.KstateNative;
import dev.kstate.internal.NativeStore;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link KstateStores#checkpoint}: a checkpoint of a store reached as Kafka Streams hands it out
 * (through its metering and logging layers) holds the last commit, with the changelog offsets
 * Kafka committed, and opens as a kstate store; refusals are typed.
 */
public class CheckpointTest {
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("checkpoint");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    private static TopologyTestDriver driver(KeyValueBytesStoreSupplier supplier, File stateDir) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.table("in", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String>as(supplier)
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()).withCachingDisabled());
        Properties props = TestSupport.props("ckpt-app", stateDir);
        return new TopologyTestDriver(builder.build(), props);
    }

    @Test
    public void aCheckpointHoldsTheLastCommitWithItsOffsets() throws Exception {
        Path copy = dir.toPath().resolve("backup");
        KstateCheckpoint info;
        try (TopologyTestDriver driver = driver(KstateStores.persistentTimestampedKeyValueStore("s"), new File(dir, "state"))) {
            TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
            in.pipeInput("a", "1", 10L);
            in.pipeInput("b", "2", 20L);
            in.pipeInput("a", "3", 30L);
            info = KstateStores.checkpoint((org.apache.kafka.streams.processor.StateStore) driver.getTimestampedKeyValueStore("s"), copy);
            assertEquals(copy, info.directory());
            assertTrue(info.sequence() > 0);
            assertFalse(info.offsets().isEmpty());
            assertTrue(info.files() > 0 && info.bytes() > 0);
            assertNotNull(info.metadata());
            // The destination exists now.
            try {
                KstateStores.checkpoint((org.apache.kafka.streams.processor.StateStore) driver.getTimestampedKeyValueStore("s"), copy);
                fail("a second checkpoint to the same directory succeeded");
            } catch (KstateProcessorStateException e) {
                assertEquals(KstateException.INVALID_ARGUMENT, e.errorCode());
            }
            // The store goes on.
            in.pipeInput("c", "4", 40L);
        }
        assertTrue(Files.isDirectory(copy));
        try (NativeStore opened = NativeStore.open("copy", copy.toString(), KstateNative.ENGINE_ROCKSDB, true, 0, false, 0, 0)) {
            for (Map.Entry<TopicPartition, Long> e : info.offsets().entrySet()) {
                assertEquals(e.getValue(), opened.committedOffset(e.getKey()));
            }
            assertArrayEquals(info.metadata(), opened.committedMetadata());
            assertEquals("3", value(opened.get(key("a"), true)));
            assertEquals("2", value(opened.get(key("b"), true)));
            assertNull(opened.get(key("c"), true));
        }
    }

    private static byte[] key(String k) {
        return Serdes.String().serializer().serialize("in", k);
    }

    /** A timestamped value: 8 bytes of timestamp, then the serialized string. */
    private static String value(byte[] raw) {
        assertNotNull(raw);
        return new String(raw, 8, raw.length - 8, StandardCharsets.UTF_8);
    }

    @Test
    public void aMemoryStoreIsUnsupportedAndAForeignStoreIsRefused() throws Exception {
        try (TopologyTestDriver driver = driver(KstateStores.inMemoryTimestampedKeyValueStore("s"), new File(dir, "m"))) {
            driver.createInputTopic("in", new StringSerializer(), new StringSerializer()).pipeInput("a", "1", 10L);
            try {
                KstateStores.checkpoint((org.apache.kafka.streams.processor.StateStore) driver.getTimestampedKeyValueStore("s"), dir.toPath().resolve("m-copy"));
                fail("a memory store made a checkpoint");
            } catch (KstateProcessorStateException e) {
                assertEquals(KstateException.UNSUPPORTED, e.errorCode());
            }
            assertFalse(Files.exists(dir.toPath().resolve("m-copy")));
        }
        try (TopologyTestDriver driver = driver(Stores.persistentTimestampedKeyValueStore("s"), new File(dir, "k"))) {
            try {
                KstateStores.checkpoint((org.apache.kafka.streams.processor.StateStore) driver.getTimestampedKeyValueStore("s"), dir.toPath().resolve("k-copy"));
                fail("Kafka's own store made a kstate checkpoint");
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().contains("not a kstate store"));
            }
        }
    }
}
