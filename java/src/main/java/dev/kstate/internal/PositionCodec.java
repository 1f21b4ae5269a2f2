package dev.kstate.internal;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import org.apache.kafka.streams.query.Position;

/**
 * Serialises a Kafka {@link Position} as the commit metadata of a kstate store, so the
 * position is made durable atomically with the data it describes. Layout: {@code [byte
 * version=1][int topics]{[UTF topic][int partitions]{[int partition][long offset]}}}.
 */
public final class PositionCodec {
    private static final byte VERSION = 1;

    private PositionCodec() {
    }

    /**
     * @param position the position
     * @return its bytes
     */
    public static byte[] encode(Position position) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeInt(position.getTopics().size());
            for (String topic : position.getTopics()) {
                Map<Integer, Long> partitions = position.getPartitionPositions(topic);
                out.writeUTF(topic);
                out.writeInt(partitions.size());
                for (Map.Entry<Integer, Long> e : partitions.entrySet()) {
                    out.writeInt(e.getKey());
                    out.writeLong(e.getValue());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /**
     * @param bytes bytes from {@link #encode}, or null
     * @return the position (empty for null)
     * @throws IllegalArgumentException for bytes of another layout
     */
    public static Position decode(byte[] bytes) {
        Position position = Position.emptyPosition();
        if (bytes == null) {
            return position;
        }
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            byte version = in.readByte();
            if (version != VERSION) {
                throw new IllegalArgumentException("unknown position metadata version " + version);
            }
            int topics = in.readInt();
            for (int t = 0; t < topics; t++) {
                String topic = in.readUTF();
                int partitions = in.readInt();
                for (int p = 0; p < partitions; p++) {
                    position = position.withComponent(topic, in.readInt(), in.readLong());
                }
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("malformed position metadata", e);
        }
        return position;
    }

    /**
     * Decodes a {@link Position} in the layout of Kafka Streams' {@code PositionSerde} (version
     * 0: {@code [byte 0][int topics]{[int len][UTF-8 topic][int partitions]{[int partition][long
     * offset]}}}, big-endian), the layout of the {@code "c"} header Kafka writes on changelog
     * records when the IQ consistency vector is enabled. Kafka pads the value with zeros past the
     * last field; trailing bytes are ignored, as Kafka's own reader does.
     *
     * @param bytes the header value
     * @return the position
     * @throws IllegalArgumentException for an unknown version or truncated bytes
     */
    public static Position decodeKafka(byte[] bytes) {
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(bytes);
        try {
            byte version = buf.get();
            if (version != 0) {
                throw new IllegalArgumentException("Unknown version " + version + " when deserializing Position");
            }
            Position position = Position.emptyPosition();
            int topics = buf.getInt();
            for (int t = 0; t < topics; t++) {
                byte[] name = new byte[buf.getInt()];
                buf.get(name);
                String topic = new String(name, java.nio.charset.StandardCharsets.UTF_8);
                int partitions = buf.getInt();
                for (int p = 0; p < partitions; p++) {
                    position = position.withComponent(topic, buf.getInt(), buf.getLong());
                }
            }
            return position;
        } catch (java.nio.BufferUnderflowException | NegativeArraySizeException e) {
            throw new IllegalArgumentException("truncated Position in changelog header", e);
        }
    }
}
