package dev.kstate.streams;

import dev.kstate.internal.NativeIterator;
import java.util.function.Function;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.internals.ManagedKeyValueIterator;

/**
 * A native iterator whose keys and values are decoded as a store kind hands them to Kafka:
 * windowed keys, session keys, window start times, values with their timestamp. A
 * {@link ManagedKeyValueIterator} like every range result kstate hands to Kafka (whose wrappers
 * cast to it).
 *
 * @param <B> the key type the native iterator reads (the store key, or a key read from the batch)
 * @param <K> the decoded key type
 * @param <V> the decoded value type
 */
class MappedIterator<B, K, V> implements ManagedKeyValueIterator<K, V> {
    private final NativeIterator<B> inner;
    private final Function<B, K> key;
    private final Function<byte[], V> value;

    MappedIterator(NativeIterator<B> inner, Function<B, K> key, Function<byte[], V> value) {
        this.inner = inner;
        this.key = key;
        this.value = value;
    }

    /** @return the raw values of {@code inner} with its keys decoded by {@code key} */
    static <K> MappedIterator<Bytes, K, byte[]> keys(NativeIterator<Bytes> inner, Function<Bytes, K> key) {
        return new MappedIterator<>(inner, key, Function.identity());
    }

    @Override
    public void onClose(Runnable closeCallback) {
        inner.onClose(closeCallback);
    }

    @Override
    public boolean hasNext() {
        return inner.hasNext();
    }

    @Override
    public KeyValue<K, V> next() {
        KeyValue<B, byte[]> kv = inner.next();
        return KeyValue.pair(key.apply(kv.key), value.apply(kv.value));
    }

    @Override
    public K peekNextKey() {
        return key.apply(inner.peekNextKey());
    }

    @Override
    public void close() {
        inner.close();
    }
}
