package dev.kstate.streams;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.BatchingStateRestoreCallback;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** Changelog restore through the StateStoreContext's registered batching callback. */
public class RestoreTest {
    private static final int RECORDS = 100_000;
    private static final int BATCH = 1000; // Kafka's default max.poll.records
    private static final TopicPartition CHANGELOG = new TopicPartition("app-restore-changelog", 0);
    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("restore");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    static byte[] timestamped(long ts, byte[] value) {
        return ByteBuffer.allocate(8 + value.length).putLong(ts).put(value).array();
    }

    @Test
    public void restoresOneHundredThousandChangelogRecordsInBatches() {
        KstateKeyValueBytesStoreSupplier supplier = KstateStores.persistentTimestampedKeyValueStore("restored");
        KeyValueStore<Bytes, byte[]> store = supplier.get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(TestSupport.props("app", dir), dir);
        store.init(ctx, store);
        assertTrue("init registers a batching restore callback", ctx.restoreCallback instanceof BatchingStateRestoreCallback);
        BatchingStateRestoreCallback callback = (BatchingStateRestoreCallback) ctx.restoreCallback;

        Random rnd = new Random(2024);
        TreeMap<Bytes, byte[]> model = new TreeMap<>();
        List<KeyValue<byte[], byte[]>> batch = new ArrayList<>();
        long start = System.nanoTime();
        for (int offset = 0; offset < RECORDS; offset++) {
            byte[] key = ("key-" + rnd.nextInt(30_000)).getBytes(StandardCharsets.UTF_8);
            byte[] value = null;
            if (rnd.nextInt(20) != 0) {
                value = timestamped(1_000_000L + offset, ("value-" + offset).getBytes(StandardCharsets.UTF_8));
                model.put(Bytes.wrap(key), value);
            } else {
                model.remove(Bytes.wrap(key)); // a tombstone
            }
            batch.add(KeyValue.pair(key, value));
            if (batch.size() == BATCH) {
                callback.restoreAll(batch);
                batch = new ArrayList<>();
            }
        }
        callback.restoreAll(batch);
        // After restoring, Kafka commits the restored offset through the store.
        store.commit(Collections.singletonMap(CHANGELOG, (long) RECORDS - 1));
        long restoreMs = (System.nanoTime() - start) / 1_000_000;
        System.out.println("restored " + RECORDS + " records in " + restoreMs + " ms");
        assertEquals(Long.valueOf(RECORDS - 1), store.committedOffset(CHANGELOG));
        store.close();

        KeyValueStore<Bytes, byte[]> reopened = supplier.get();
        reopened.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), reopened);
        assertEquals(Long.valueOf(RECORDS - 1), reopened.committedOffset(CHANGELOG));
        List<KeyValue<Bytes, byte[]>> all = TestSupport.drain(reopened.all());
        assertEquals(model.size(), all.size());
        int i = 0;
        for (Map.Entry<Bytes, byte[]> e : model.entrySet()) {
            KeyValue<Bytes, byte[]> kv = all.get(i++);
            assertEquals(e.getKey(), kv.key);
            assertArrayEquals("value and timestamp of " + e.getKey(), e.getValue(), kv.value);
        }
        assertNull(reopened.get(Bytes.wrap("absent".getBytes(StandardCharsets.UTF_8))));
        reopened.close();
    }
}
