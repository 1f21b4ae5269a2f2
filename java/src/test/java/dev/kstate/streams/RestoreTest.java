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
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.processor.BatchingStateRestoreCallback;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.apache.kafka.streams.processor.internals.StateRestoreCallbackAdapter;
import org.apache.kafka.streams.query.KeyQuery;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.state.internals.PositionSerde;
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

    /**
     * Restored records are committed in the changelog already: each batch is committed with its
     * own changelog offset, so read-committed readers see it at once and a kill after the
     * restore does not replay it (under exactly-once, a task that restores and then has nothing
     * to process is not committed again by Kafka).
     */
    @Test
    public void eachRestoredBatchIsCommittedWithItsChangelogOffset() {
        KeyValueStore<Bytes, byte[]> store = restoreWithHeaders(false, "committed-restore");
        assertEquals(Long.valueOf(3L), ((org.apache.kafka.streams.processor.StateStore) store).committedOffset(CHANGELOG));
        assertEquals(0L, store.approximateNumUncommittedBytes());
        org.apache.kafka.streams.state.ReadOnlyKeyValueStore<Bytes, byte[]> readOnly =
            ((KstateKeyValueStore) store).readOnly(IsolationLevel.READ_COMMITTED);
        assertArrayEquals(timestamped(2, "3".getBytes(StandardCharsets.UTF_8)),
            readOnly.get(Bytes.wrap("a".getBytes(StandardCharsets.UTF_8))));
        assertNull(readOnly.get(Bytes.wrap("b".getBytes(StandardCharsets.UTF_8))));
        store.close();
    }

    /** A changelog record as Kafka writes it with the IQ consistency vector on: headers v=0, c=position. */
    private static ConsumerRecord<byte[], byte[]> record(long offset, String key, String value, Position position) {
        RecordHeaders headers = new RecordHeaders();
        if (position != null) {
            headers.add("v", new byte[] {0});
            // Kafka writes PositionSerde's whole (zero-padded) backing array
            headers.add("c", PositionSerde.serialize(position).array());
        }
        byte[] v = value == null ? null : timestamped(offset, value.getBytes(StandardCharsets.UTF_8));
        return new ConsumerRecord<>(CHANGELOG.topic(), 0, offset, offset, TimestampType.CREATE_TIME, -1, -1,
            key.getBytes(StandardCharsets.UTF_8), v, headers, Optional.empty());
    }

    private static Position at(String topic, int partition, long offset) {
        return Position.emptyPosition().withComponent(topic, partition, offset);
    }

    private KeyValueStore<Bytes, byte[]> restoreWithHeaders(boolean consistency, String name) {
        Properties props = TestSupport.props("app", dir);
        if (consistency) {
            props.put("__iq.consistency.offset.vector.enabled__", "true");
        }
        KeyValueStore<Bytes, byte[]> store = KstateStores.persistentTimestampedKeyValueStore(name).get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props, dir);
        store.init(ctx, store);
        assertTrue("the callback receives whole records", ctx.restoreCallback instanceof RecordBatchingStateRestoreCallback);
        // exactly how ProcessorStateManager#restore hands batches over
        RecordBatchingStateRestoreCallback callback = StateRestoreCallbackAdapter.adapt(ctx.restoreCallback);
        List<ConsumerRecord<byte[], byte[]>> first = new ArrayList<>();
        first.add(record(0, "a", "1", at("input", 0, 5)));
        first.add(record(1, "b", "2", at("input", 1, 3)));
        callback.restoreBatch(first);
        List<ConsumerRecord<byte[], byte[]>> second = new ArrayList<>();
        second.add(record(2, "a", "3", at("input", 0, 7).withComponent("other", 0, 9)));
        second.add(record(3, "b", null, null)); // a tombstone written without the vector
        callback.restoreBatch(second);
        return store;
    }

    /**
     * With {@code __iq.consistency.offset.vector.enabled__}, restore rebuilds the store's
     * Position from the changelog headers (as Kafka's RocksDBStore#restoreBatch does), commits
     * it with the restored offset, and IQv2 position bounds see it.
     */
    @Test
    public void restoreRebuildsThePositionFromChangelogHeaders() {
        KeyValueStore<Bytes, byte[]> store = restoreWithHeaders(true, "vector");
        Position expected = at("input", 0, 7).withComponent("input", 1, 3).withComponent("other", 0, 9);
        assertEquals(expected, store.getPosition());
        assertEquals(1, TestSupport.drain(store.all()).size());
        PositionBound bound = PositionBound.at(at("input", 0, 7));
        assertTrue(store.query(KeyQuery.<Bytes, byte[]>withKey(Bytes.wrap("a".getBytes(StandardCharsets.UTF_8))), bound,
            new QueryConfig(false)).isSuccess());
        store.commit(Collections.singletonMap(CHANGELOG, 3L));
        store.close();
        KeyValueStore<Bytes, byte[]> reopened = KstateStores.persistentTimestampedKeyValueStore("vector").get();
        reopened.init(new TestSupport.CapturingContext(TestSupport.props("app", dir), dir), reopened);
        assertEquals("the restored position was committed with the offset", expected, reopened.getPosition());
        reopened.close();
    }

    /** Without the internal flag the headers are ignored, as Kafka's stores ignore them. */
    @Test
    public void restoreIgnoresHeadersWithoutTheConsistencyVector() {
        KeyValueStore<Bytes, byte[]> store = restoreWithHeaders(false, "novector");
        assertEquals(Position.emptyPosition(), store.getPosition());
        assertEquals(1, TestSupport.drain(store.all()).size());
        store.close();
    }

    /** Kafka's rule: a version-0 record without the position header is an error. */
    @Test
    public void aRecordWithoutItsPositionHeaderFailsTheRestore() {
        Properties props = TestSupport.props("app", dir);
        props.put("__iq.consistency.offset.vector.enabled__", true);
        KeyValueStore<Bytes, byte[]> store = KstateStores.persistentTimestampedKeyValueStore("broken").get();
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(props, dir);
        store.init(ctx, store);
        ConsumerRecord<byte[], byte[]> bad = record(0, "a", "1", null);
        bad.headers().add("v", new byte[] {0});
        try {
            StateRestoreCallbackAdapter.adapt(ctx.restoreCallback).restoreBatch(Collections.singletonList(bad));
            throw new AssertionError("expected a StreamsException");
        } catch (StreamsException expected) {
            assertTrue(expected.getMessage(), expected.getMessage().contains("without consistency information"));
        } finally {
            store.close();
        }
    }
}
