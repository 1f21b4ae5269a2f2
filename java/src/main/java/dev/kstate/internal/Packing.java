package dev.kstate.internal;

import java.util.Collection;
import java.util.List;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;

/**
 * Packs entries for the batch natives: per entry {@code [int keyLen][key][int valueLen, -1 =
 * null][value]}, big-endian ({@code src/jni/codec.rs}).
 */
public final class Packing {
    private Packing() {
    }

    /**
     * @param entries key/raw-value pairs; a null value deletes; keys must not be null
     * @return the packed batch
     */
    public static byte[] packBytes(List<KeyValue<Bytes, byte[]>> entries) {
        long size = 0;
        for (KeyValue<Bytes, byte[]> e : entries) {
            size += 8L + e.key.get().length + (e.value == null ? 0 : e.value.length);
        }
        Writer w = new Writer(size);
        for (KeyValue<Bytes, byte[]> e : entries) {
            w.entry(e.key.get(), e.value);
        }
        return w.buf;
    }

    /**
     * @param records changelog records (raw key, raw value; a null value is a tombstone)
     * @return the packed batch
     */
    public static byte[] packRaw(Collection<KeyValue<byte[], byte[]>> records) {
        long size = 0;
        for (KeyValue<byte[], byte[]> e : records) {
            size += 8L + e.key.length + (e.value == null ? 0 : e.value.length);
        }
        Writer w = new Writer(size);
        for (KeyValue<byte[], byte[]> e : records) {
            w.entry(e.key, e.value);
        }
        return w.buf;
    }

    private static final class Writer {
        final byte[] buf;
        int pos;

        Writer(long size) {
            if (size > Integer.MAX_VALUE - 16) {
                throw new IllegalArgumentException("batch of " + size + " bytes is too large for one call");
            }
            buf = new byte[(int) size];
        }

        void entry(byte[] key, byte[] value) {
            putInt(key.length);
            System.arraycopy(key, 0, buf, pos, key.length);
            pos += key.length;
            if (value == null) {
                putInt(-1);
            } else {
                putInt(value.length);
                System.arraycopy(value, 0, buf, pos, value.length);
                pos += value.length;
            }
        }

        void putInt(int v) {
            buf[pos++] = (byte) (v >>> 24);
            buf[pos++] = (byte) (v >>> 16);
            buf[pos++] = (byte) (v >>> 8);
            buf[pos++] = (byte) v;
        }
    }
}
