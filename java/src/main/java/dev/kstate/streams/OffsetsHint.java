package dev.kstate.streams;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.zip.CRC32;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The committed changelog offsets (and position) of a kstate RocksDB store as of one of its
 * commits, in a small file inside the store's directory, so that Kafka Streams' start-up path
 * can be answered without opening the store (see {@link StartupParking}).
 *
 * <p>It is a <i>hint</i>: written after the commit it describes (in place, with no fsync), it
 * may lag the store by the last commits (a kill between a commit and its hint), and after a
 * power loss it may be ahead of a store that was not synced ({@code kstate.sync.on.commit=false}). The
 * start-up path uses the offsets only for the lags an instance reports in its first
 * rebalance; the stream thread's {@code init} reads the store's own offsets before anything is
 * restored, so a lagging or leading hint changes a lag estimate, never the data. An unreadable
 * hint (torn, another version, failed checksum) is ignored and the store is opened as before.
 *
 * <p>Which offsets it knows follows Kafka's commit semantics: a commit of an empty map removes
 * every offset (the hint then knows all of them: none), a {@code null} value removes one, and
 * the partitions a commit does not name keep their offsets (the hint does not know them unless
 * an earlier commit of this handle named them). A partition the hint does not know makes the
 * store open to answer.
 *
 * <p>Format (big-endian): magic {@code KSH1}, the record's length, a byte 1 when the offsets
 * are exhaustive, the number of partitions, each as modified UTF-8 topic, partition, a byte 1
 * when an offset follows and the offset; the metadata length (-1 for none) and bytes; a CRC-32
 * of the record before it. Bytes after the record are ignored: the file is overwritten in
 * place, and a shorter record leaves the tail of a longer one behind. In place because on
 * ext4 replacing a file (rename over it, or truncate and rewrite) flushes its data first
 * ({@code auto_da_alloc}): 350-700 microseconds a commit, measured, against 1-6 for a write
 * into the open file. A write torn by a power loss fails the checksum and is ignored.
 */
final class OffsetsHint {
    /** The hint's file name inside the store directory (RocksDB ignores files it did not name). */
    static final String FILE = "kstate-offsets-hint";
    /** Magic, record length; at the end, the CRC-32. */
    private static final int HEADER = 8;
    private static final int MAGIC = 0x4b534831; // "KSH1"
    private static final Logger LOG = LoggerFactory.getLogger(OffsetsHint.class);
    /** Partitions by topic, then number: the same offsets always encode (and print) the same. */
    private static final Comparator<TopicPartition> ORDER =
        Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    private final Map<TopicPartition, Long> known;
    private final boolean exhaustive;
    private final byte[] metadata;

    private OffsetsHint(Map<TopicPartition, Long> known, boolean exhaustive, byte[] metadata) {
        this.known = known;
        this.exhaustive = exhaustive;
        this.metadata = metadata;
    }

    /**
     * Reads the hint of the store at {@code dir}.
     *
     * @param dir the store's directory
     * @return the hint, or null when there is none or it cannot be trusted (logged)
     */
    static OffsetsHint read(File dir) {
        Path file = new File(dir, FILE).toPath();
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            LOG.info("kstate: cannot read the offsets hint {}: {}; the store is opened to answer", file, e.toString());
            return null;
        }
        try {
            return decode(bytes);
        } catch (IOException | RuntimeException e) {
            LOG.info("kstate: ignoring the offsets hint {}: {}; the store is opened to answer", file, e.getMessage());
            return null;
        }
    }

    static OffsetsHint decode(byte[] bytes) throws IOException {
        if (bytes.length < HEADER + 4) {
            throw new IOException("truncated (" + bytes.length + " bytes)");
        }
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
        if (in.readInt() != MAGIC) {
            throw new IOException("not a kstate offsets hint of this version");
        }
        int length = in.readInt();
        if (length < HEADER + 4 || length > bytes.length) {
            throw new IOException("truncated or bad length (" + length + " of " + bytes.length + " bytes)");
        }
        CRC32 crc = new CRC32();
        crc.update(bytes, 0, length - 4);
        if ((int) crc.getValue() != ByteBuffer.wrap(bytes, length - 4, 4).getInt()) {
            throw new IOException("checksum mismatch");
        }
        in = new DataInputStream(new ByteArrayInputStream(bytes, HEADER, length - 4 - HEADER));
        boolean exhaustive = in.readBoolean();
        int n = in.readInt();
        if (n < 0 || n > bytes.length) {
            throw new IOException("bad partition count " + n);
        }
        Map<TopicPartition, Long> known = new HashMap<>();
        for (int i = 0; i < n; i++) {
            TopicPartition tp = new TopicPartition(in.readUTF(), in.readInt());
            known.put(tp, in.readBoolean() ? in.readLong() : null);
        }
        int len = in.readInt();
        if (len < -1 || len > in.available()) {
            throw new IOException("bad metadata length " + len);
        }
        byte[] metadata = null;
        if (len >= 0) {
            metadata = new byte[len];
            in.readFully(metadata);
        }
        if (in.available() != 0) {
            throw new IOException(in.available() + " trailing bytes");
        }
        return new OffsetsHint(Collections.unmodifiableMap(known), exhaustive, metadata);
    }

    /** @return whether the hint knows the committed offset of {@code tp} (which may be none) */
    boolean knows(TopicPartition tp) {
        return exhaustive || known.containsKey(tp);
    }

    /** @return the committed offset of a partition the hint {@link #knows}, or null for none */
    Long offset(TopicPartition tp) {
        return known.get(tp);
    }

    /** @return the metadata (kstate's encoded position) of the commit, or null */
    byte[] metadata() {
        return metadata == null ? null : metadata.clone();
    }

    /**
     * Whether committing {@code offsets} over the state this hint describes, with nothing
     * written, would change no offset: what the start-up path commits after reading them.
     *
     * @param offsets the offsets of a commit (Kafka's semantics)
     * @return true when every offset named is known and equal, and an empty map wipes nothing
     */
    boolean agrees(Map<TopicPartition, Long> offsets) {
        if (offsets.isEmpty()) {
            return exhaustive && known.values().stream().allMatch(Objects::isNull);
        }
        for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
            if (!knows(e.getKey()) || !Objects.equals(offset(e.getKey()), e.getValue())) {
                return false;
            }
        }
        return true;
    }

    @Override
    public String toString() {
        Map<TopicPartition, Long> sorted = new TreeMap<>(ORDER);
        sorted.putAll(known);
        return sorted + (exhaustive ? " (all)" : "");
    }

    /**
     * Keeps the hint of one open store up to date: told every commit of the handle, it writes
     * what the commits so far say about the store's offsets into the hint file (kept open from
     * the first write to {@link #close}), unless that is what it wrote last. Used by one thread
     * at a time (the task's).
     */
    static final class Writer implements AutoCloseable {
        private final File dir;
        private final String store;
        private final Map<TopicPartition, Long> known = new TreeMap<>(ORDER);
        private boolean exhaustive;
        private byte[] last;
        private boolean warned;
        /** Not a FileChannel: a stream thread's interrupt would close that under the write. */
        private RandomAccessFile file;

        /**
         * @param dir the store's directory
         * @param store the store, for messages
         */
        Writer(File dir, String store) {
            this.dir = dir;
            this.store = store;
        }

        /**
         * Records a commit the store made durable and writes the hint. A failure to write is
         * logged (once per handle) and otherwise ignored: the old hint, if any, describes an
         * earlier commit, which is all a hint promises.
         *
         * @param offsets the commit's offsets (Kafka's semantics)
         * @param metadata the commit's metadata
         */
        void committed(Map<TopicPartition, Long> offsets, byte[] metadata) {
            if (offsets.isEmpty()) {
                known.clear();
                exhaustive = true;
            } else {
                known.putAll(offsets);
            }
            byte[] bytes = encode(known, exhaustive, metadata);
            if (Arrays.equals(bytes, last)) {
                return;
            }
            try {
                if (file == null) {
                    file = new RandomAccessFile(new File(dir, FILE), "rw");
                }
                file.seek(0);
                file.write(bytes);
                last = bytes;
            } catch (IOException | RuntimeException e) {
                close();
                if (!warned) {
                    warned = true;
                    LOG.warn("kstate store {}: cannot write its offsets hint in {}: {}; Kafka Streams' start-up path "
                        + "may open the store instead of reading it (this is logged once per open)", store, dir,
                        e.toString());
                }
            }
        }

        /** Closes the hint file (the store closes). Idempotent; the next commit would open it again. */
        @Override
        public void close() {
            RandomAccessFile f = file;
            file = null;
            last = null;
            if (f != null) {
                try {
                    f.close();
                } catch (IOException e) {
                    LOG.debug("kstate store {}: closing its offsets hint: {}", store, e.toString());
                }
            }
        }
    }

    /** @param known sorted by {@link #ORDER} (the writer's map), so that equal offsets encode equally */
    private static byte[] encode(Map<TopicPartition, Long> known, boolean exhaustive, byte[] metadata) {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + (metadata == null ? 0 : metadata.length));
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(MAGIC);
            out.writeInt(0); // the length, set below
            out.writeBoolean(exhaustive);
            out.writeInt(known.size());
            for (Map.Entry<TopicPartition, Long> e : known.entrySet()) {
                out.writeUTF(e.getKey().topic());
                out.writeInt(e.getKey().partition());
                out.writeBoolean(e.getValue() != null);
                if (e.getValue() != null) {
                    out.writeLong(e.getValue());
                }
            }
            out.writeInt(metadata == null ? -1 : metadata.length);
            if (metadata != null) {
                out.write(metadata);
            }
            out.writeInt(0); // the CRC, set below
            ByteBuffer record = ByteBuffer.wrap(bytes.toByteArray());
            int length = record.capacity();
            record.putInt(4, length);
            CRC32 crc = new CRC32();
            crc.update(record.array(), 0, length - 4);
            record.putInt(length - 4, (int) crc.getValue());
            return record.array();
        } catch (IOException e) {
            throw new IllegalStateException("cannot encode an offsets hint in memory", e);
        }
    }
}
