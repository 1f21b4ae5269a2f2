package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * A Kafka Streams application on Kafka's own RocksDB store, really killed (SIGKILL of a child
 * JVM running Kafka 4.4's {@code RocksDBTimestampedStore} under at-least-once), then restarted on
 * kstate: its store says it was left open ({@code status} 1), and kstate does what Kafka 4.4 does
 * with it, checked against Kafka's own store opening copies of the same directory. Under
 * at-least-once kstate adopts it with exactly the data and committed offset Kafka's store opens
 * it with; under {@code exactly_once_v2} both report the task corrupted (Kafka then wipes it and
 * restores it from the changelog) and kstate changes nothing.
 */
public class KilledKafkaStoreAdoptionTest {
    /**
     * Records piped before the kill: past Kafka's 10,000-record checkpoint threshold, so that
     * Kafka has flushed its store (it writes without RocksDB's WAL) since it marked it open.
     */
    static final long KILL_AFTER = 25_000;
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("killed-kafka");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /**
     * The child: Kafka's own store in a TopologyTestDriver (a commit after every record) fed
     * records until it is killed, printing {@code PIPED <n>} every 1,000 records.
     *
     * @param args the state directory
     */
    public static void main(String[] args) {
        TopologyTestDriver driver = new TopologyTestDriver(
            MigrationTest.table(Stores.persistentTimestampedKeyValueStore("s")).build(),
            MigrationTest.props(new File(args[0]), false));
        TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
        for (long i = 0; ; i++) {
            in.pipeInput("key-" + (i % 150), "value-" + i, 1000L + i);
            if (i % 1000 == 999) {
                System.out.println("PIPED " + (i + 1));
                System.out.flush();
            }
        }
    }

    private static List<String> contents(TopologyTestDriver driver) {
        List<String> out = new ArrayList<>();
        KeyValueStore<String, ValueAndTimestamp<String>> store = driver.getTimestampedKeyValueStore("s");
        try (KeyValueIterator<String, ValueAndTimestamp<String>> it = store.all()) {
            while (it.hasNext()) {
                KeyValue<String, ValueAndTimestamp<String>> kv = it.next();
                out.add(kv.key + "=" + kv.value.value() + "@" + kv.value.timestamp());
            }
        }
        return out;
    }

    /** @return the {@code status} entry of the {@code offsets} family of Kafka's store at {@code db}, read only */
    private static Long status(File db) throws Exception {
        List<org.rocksdb.ColumnFamilyDescriptor> cfs = new ArrayList<>();
        List<String> names = MigrationTest.columnFamilies(db);
        for (String name : names) {
            cfs.add(new org.rocksdb.ColumnFamilyDescriptor(name.getBytes(StandardCharsets.UTF_8)));
        }
        List<org.rocksdb.ColumnFamilyHandle> handles = new ArrayList<>();
        try (org.rocksdb.DBOptions options = new org.rocksdb.DBOptions();
             org.rocksdb.RocksDB ro = org.rocksdb.RocksDB.openReadOnly(options, db.getPath(), cfs, handles)) {
            byte[] raw = ro.get(handles.get(names.indexOf("offsets")), "status".getBytes(StandardCharsets.UTF_8));
            for (org.rocksdb.ColumnFamilyHandle h : handles) {
                h.close();
            }
            return raw == null ? null : ByteBuffer.wrap(raw).getLong();
        }
    }

    private static File copyOf(File stateDir, File into) throws Exception {
        MigrationTest.copyTree(new File(stateDir, MigrationTest.APP).toPath(), new File(into, MigrationTest.APP).toPath());
        return into;
    }

    @Test
    public void aKilledKafkaStoreIsAdoptedUnderAtLeastOnceAsKafkaOpensIt() throws Exception {
        File stateDir = new File(dir, "state");
        TestSupport.killAfterPiped(KilledKafkaStoreAdoptionTest.class, KILL_AFTER, stateDir.getAbsolutePath());
        File kafkaDb = new File(stateDir, MigrationTest.APP + "/0_0/rocksdb/s");
        assertEquals("Kafka's store says it was left open", Long.valueOf(1L), status(kafkaDb));

        // Kafka's own store on a copy, under at-least-once: what it opens with.
        List<String> kafkaContents;
        Long kafkaOffset;
        KeyValueBytesStoreSupplier kafka = Stores.persistentTimestampedKeyValueStore("s");
        try (TopologyTestDriver driver = new TopologyTestDriver(MigrationTest.table(kafka).build(),
            MigrationTest.props(copyOf(stateDir, new File(dir, "kafka-alos")), false))) {
            kafkaContents = contents(driver);
            kafkaOffset = driver.getAllStateStores().get("s").committedOffset(MigrationTest.CHANGELOG);
        }
        assertNotNull("Kafka's store has a committed offset", kafkaOffset);
        assertTrue("Kafka's store holds data", kafkaContents.size() > 100);

        // exactly_once_v2: Kafka's store and kstate both report the task corrupted.
        for (KeyValueBytesStoreSupplier supplier : new KeyValueBytesStoreSupplier[] {
            kafka, KstateStores.persistentTimestampedKeyValueStore("s")}) {
            String who = supplier.getClass().getSimpleName();
            File eos = copyOf(stateDir, new File(dir, "eos-" + who));
            Map<String, Integer> before = MigrationTest.snapshot(eos);
            Throwable t = null;
            try (TopologyTestDriver driver = new TopologyTestDriver(MigrationTest.table(supplier).build(),
                MigrationTest.eosProps(eos))) {
                org.junit.Assert.fail(who + " opened a store left open under exactly_once_v2");
            } catch (RuntimeException e) {
                t = e;
                while (t != null && !(t instanceof TaskCorruptedException)) {
                    t = t.getCause();
                }
            }
            assertNotNull(who + ": TaskCorruptedException", t);
            assertEquals(Collections.singleton(new TaskId(0, 0)), ((TaskCorruptedException) t).corruptedTasks());
            if (supplier instanceof KstateKeyValueBytesStoreSupplier) {
                assertEquals("kstate changed nothing", before, MigrationTest.snapshot(eos));
            }
        }

        // At-least-once: kstate adopts the killed store itself, with Kafka's data and offset.
        try (TopologyTestDriver driver = new TopologyTestDriver(
            MigrationTest.table(KstateStores.persistentTimestampedKeyValueStore("s")).build(),
            MigrationTest.props(stateDir, false))) {
            assertEquals("the data Kafka's store opens with", kafkaContents, contents(driver));
            assertEquals("the offset Kafka's store opens with", kafkaOffset,
                driver.getAllStateStores().get("s").committedOffset(MigrationTest.CHANGELOG));
            assertTrue("no kstate store beside Kafka's",
                !new File(stateDir, MigrationTest.APP + "/0_0/s").exists());
        }
    }
}
