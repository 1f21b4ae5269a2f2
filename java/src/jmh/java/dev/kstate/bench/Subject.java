package dev.kstate.bench;

import dev.kstate.streams.KstateStores;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * One key-value store under test, built as a Kafka Streams user builds it:
 * {@code Stores.timestampedKeyValueStoreBuilder(supplier, Bytes, byte[]).withLoggingDisabled()
 * .withCachingDisabled()}, initialised as {@link BenchStore} says.
 *
 * <p>Variants: {@code kstate-rocksdb}, {@code kstate-memory} (kstate's suppliers),
 * {@code kafka-rocksdb} and {@code kafka-rocksdb-txn} (Kafka 4.4's RocksDB timestamped store,
 * {@code enable.transactional.statestores} off and on), {@code kafka-memory} (Kafka's in-memory
 * store).
 */
public final class Subject extends BenchStore {
    /** The store, as the processor sees it. */
    public final TimestampedKeyValueStore<Bytes, byte[]> store;

    private Subject(String variant, File stateDir, TimestampedKeyValueStore<Bytes, byte[]> store,
                    Class<?> configSetter) {
        super(variant, stateDir, store, configSetter);
        this.store = store;
    }

    /** Opens (creating if absent) the variant's store under {@code stateDir}. */
    public static Subject open(String variant, File stateDir) {
        return open(variant, stateDir, null);
    }

    /**
     * Opens (creating if absent) the variant's store under {@code stateDir}, in an application
     * whose {@code rocksdb.config.setter} is {@code configSetter} ({@code null}: none).
     */
    public static Subject open(String variant, File stateDir, Class<?> configSetter) {
        return new Subject(variant, stateDir,
            Stores.timestampedKeyValueStoreBuilder(supplier(variant), Serdes.Bytes(), Serdes.ByteArray())
                .withLoggingDisabled()
                .withCachingDisabled()
                .build(), configSetter);
    }

    private static KeyValueBytesStoreSupplier supplier(String variant) {
        switch (variant) {
            case "kstate-rocksdb":
                return KstateStores.persistentTimestampedKeyValueStore(NAME);
            case "kstate-memory":
                return KstateStores.inMemoryTimestampedKeyValueStore(NAME);
            case "kafka-rocksdb":
            case "kafka-rocksdb-txn":
                return Stores.persistentTimestampedKeyValueStore(NAME);
            case "kafka-memory":
                return Stores.inMemoryKeyValueStore(NAME);
            default:
                throw unknownVariant(variant);
        }
    }

    // ----- data --------------------------------------------------------------------------------

    /** @return key {@code i}: 12 bytes, ordered as {@code i} */
    public static Bytes key(int i) {
        return Bytes.wrap(String.format("k%011d", i).getBytes(StandardCharsets.US_ASCII));
    }

    /** @return a key that sorts among the keys but is none of them */
    public static Bytes absentKey(int i) {
        return Bytes.wrap(String.format("k%011dx", i).getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * Writes keys 0..n-1 in batches of 1,000 (putAll + commit), as a loaded store. Key {@code i}
     * gets timestamp {@code i} and {@code values[i % values.length]}, as if it were changelog
     * record {@code i}: each commit carries the offset of its batch's last record, and
     * {@link #loadRecord} rebuilds any record of the load.
     */
    public void load(Bytes[] keys, byte[][] values) {
        List<KeyValue<Bytes, ValueAndTimestamp<byte[]>>> batch = new ArrayList<>(1000);
        for (int i = 0; i < keys.length; i++) {
            batch.add(KeyValue.pair(keys[i], ValueAndTimestamp.make(values[i % values.length], i)));
            if (batch.size() == 1000 || i == keys.length - 1) {
                store.putAll(batch);
                commit(i);
                batch.clear();
            }
        }
    }

    /**
     * @return changelog record {@code i} of a {@link #load} of {@code values}: key {@code i}, its
     *     timestamp then its value, as a timestamped store's changelog holds them
     */
    public static ConsumerRecord<byte[], byte[]> loadRecord(int i, byte[][] values) {
        return record(i, i, values);
    }

    /**
     * @return the changelog record at {@code offset} writing key {@code keyIndex}: timestamp
     *     {@code offset}, then {@code values[offset % values.length]}
     */
    private static ConsumerRecord<byte[], byte[]> record(int offset, int keyIndex, byte[][] values) {
        byte[] raw = ByteBuffer.allocate(8 + VALUE_BYTES).putLong(offset).put(values[offset % values.length]).array();
        return new ConsumerRecord<>(CHANGELOG.topic(), CHANGELOG.partition(), offset, key(keyIndex).get(), raw);
    }

    /** @return {@code n} changelog records (keys 0..n-1 in a shuffled order) in batches of 1,000 */
    public static List<List<ConsumerRecord<byte[], byte[]>>> changelog(int n, long seed) {
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Random rnd = new Random(seed);
        for (int i = n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        byte[][] values = values(1024, seed);
        List<List<ConsumerRecord<byte[], byte[]>>> batches = new ArrayList<>();
        List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>(1000);
        for (int offset = 0; offset < n; offset++) {
            batch.add(record(offset, order[offset], values));
            if (batch.size() == 1000) {
                batches.add(batch);
                batch = new ArrayList<>(1000);
            }
        }
        if (!batch.isEmpty()) {
            batches.add(batch);
        }
        return batches;
    }

    /** @return the keys 0..n-1 */
    public static Bytes[] keys(int n) {
        Bytes[] keys = new Bytes[n];
        for (int i = 0; i < n; i++) {
            keys[i] = key(i);
        }
        return keys;
    }
}
