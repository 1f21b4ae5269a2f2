package dev.kstate.streams;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * What a checkpoint of a kstate store holds ({@link KstateStateStore#checkpoint(Path)}): the
 * commit it reflects (sequence number, changelog offsets, metadata such as the serialized
 * {@code Position}) and the size of its files. The directory opens as a store of the same kind
 * and options; copy it elsewhere, or place it as a store's directory, to restore from it.
 */
public final class KstateCheckpoint {
    private final Path directory;
    private final long sequence;
    private final int files;
    private final long bytes;
    private final Map<TopicPartition, Long> offsets;
    private final byte[] metadata;

    private KstateCheckpoint(Path directory, long sequence, int files, long bytes,
                             Map<TopicPartition, Long> offsets, byte[] metadata) {
        this.directory = directory;
        this.sequence = sequence;
        this.files = files;
        this.bytes = bytes;
        this.offsets = Collections.unmodifiableMap(offsets);
        this.metadata = metadata;
    }

    /**
     * Reads the native layout ({@code pack_checkpoint} in {@code src/jni/natives.rs}).
     *
     * @param directory the checkpoint's directory
     * @param packed what the native call returned
     * @return the checkpoint
     */
    public static KstateCheckpoint decode(Path directory, byte[] packed) {
        ByteBuffer in = ByteBuffer.wrap(packed);
        long sequence = in.getLong();
        int files = in.getInt();
        long bytes = in.getLong();
        int n = in.getInt();
        Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            byte[] topic = new byte[in.getInt()];
            in.get(topic);
            int partition = in.getInt();
            offsets.put(new TopicPartition(new String(topic, StandardCharsets.UTF_8), partition), in.getLong());
        }
        int len = in.getInt();
        byte[] metadata = null;
        if (len >= 0) {
            metadata = new byte[len];
            in.get(metadata);
        }
        return new KstateCheckpoint(directory, sequence, files, bytes, offsets, metadata);
    }

    /** @return the checkpoint's directory */
    public Path directory() {
        return directory;
    }

    /** @return the sequence number of the commit it holds (0: the store had never committed) */
    public long sequence() {
        return sequence;
    }

    /** @return the changelog offsets of that commit */
    public Map<TopicPartition, Long> offsets() {
        return offsets;
    }

    /** @return the metadata blob of that commit (kstate's encoding of the {@code Position}), or null */
    public byte[] metadata() {
        return metadata == null ? null : metadata.clone();
    }

    /** @return the number of files in the checkpoint directory */
    public int files() {
        return files;
    }

    /**
     * @return the sum of the files' sizes (table files are hard links shared with the store, so
     *     this is not the extra disk space used)
     */
    public long bytes() {
        return bytes;
    }

    @Override
    public String toString() {
        return "KstateCheckpoint{" + directory + ", sequence " + sequence + ", offsets " + offsets + ", "
            + files + " files, " + bytes + " bytes}";
    }
}
