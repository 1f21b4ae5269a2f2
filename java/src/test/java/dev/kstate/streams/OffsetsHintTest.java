package dev.kstate.streams;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import dev.kstate.internal.PositionCodec;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.query.Position;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The offsets hint against the store it describes: after random commits (offsets, removals,
 * empty maps that wipe everything, reopens that forget what earlier handles committed), every
 * offset the hint claims to know is the store's committed offset; and a damaged hint is never
 * believed.
 */
public class OffsetsHintTest {
    private static final List<TopicPartition> PARTITIONS = Arrays.asList(new TopicPartition("a-changelog", 0),
        new TopicPartition("a-changelog", 1), new TopicPartition("b-changelog", 0), new TopicPartition("b-changelog", 7));
    private File taskDir;
    private KstateKeyValueStore store;

    @Before
    public void setUp() throws Exception {
        taskDir = TestSupport.tempDir("hint");
    }

    @After
    public void tearDown() {
        if (store != null) {
            store.close();
        }
        TestSupport.deleteTree(taskDir);
    }

    private KstateKeyValueStore open() {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "hint-app");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1");
        TestSupport.CapturingContext ctx = new TestSupport.CapturingContext(p, taskDir);
        ctx.setRecordMetadata("in", 3, 0);
        KstateKeyValueStore s = (KstateKeyValueStore) KstateStores.persistentTimestampedKeyValueStore("kv").get();
        s.init(ctx, s);
        return s;
    }

    private File dir() {
        return new File(taskDir, "kv");
    }

    @Test
    public void everyOffsetTheHintKnowsIsTheStoresCommittedOffset() {
        Random rnd = new Random(20261130L);
        store = open();
        assertNull("no commit, no hint", OffsetsHint.read(dir()));
        store.put(Bytes.wrap(new byte[] {1}), new byte[12]); // a store created empty takes no offsets before a write
        int knownChecks = 0;
        for (int step = 0; step < 300; step++) {
            for (int w = rnd.nextInt(4); w > 0; w--) {
                store.put(Bytes.wrap(("k" + rnd.nextInt(50)).getBytes(StandardCharsets.UTF_8)), new byte[12]);
            }
            Map<TopicPartition, Long> commit = new HashMap<>();
            if (rnd.nextInt(10) > 0) {
                for (int n = 1 + rnd.nextInt(3); n > 0; n--) {
                    commit.put(PARTITIONS.get(rnd.nextInt(PARTITIONS.size())), rnd.nextInt(8) == 0 ? null
                        : Long.valueOf(rnd.nextInt(1_000_000)));
                }
            }
            store.commit(commit);
            OffsetsHint hint = OffsetsHint.read(dir());
            assertNotNull("step " + step + ": a commit writes the hint", hint);
            for (TopicPartition tp : PARTITIONS) {
                if (hint.knows(tp)) {
                    knownChecks++;
                    assertEquals("step " + step + ", " + tp + ", hint " + hint, store.committedOffset(tp), hint.offset(tp));
                }
            }
            for (TopicPartition tp : commit.keySet()) {
                assertTrue("step " + step + ": the hint knows what the last commit named", hint.knows(tp));
            }
            assertTrue("step " + step + ": committing the same offsets again changes nothing", hint.agrees(commit));
            assertEquals(store.getPosition(), PositionCodec.decode(hint.metadata()));
            if (rnd.nextInt(25) == 0) {
                // a new handle knows nothing of earlier commits until it commits
                store.close();
                store = open();
            }
        }
        assertTrue("the model checked known offsets: " + knownChecks, knownChecks > 300);
    }

    @Test
    public void theHintDisagreesWithOtherOffsets() {
        store = open();
        TopicPartition a = PARTITIONS.get(0);
        TopicPartition b = PARTITIONS.get(1);
        store.put(Bytes.wrap(new byte[] {1}), new byte[12]); // a store created empty takes no offsets before a write
        store.commit(Collections.singletonMap(a, 10L));
        OffsetsHint hint = OffsetsHint.read(dir());
        assertTrue(hint.agrees(Collections.singletonMap(a, 10L)));
        assertFalse("another offset", hint.agrees(Collections.singletonMap(a, 11L)));
        assertFalse("removing it", hint.agrees(Collections.singletonMap(a, null)));
        assertFalse("a partition the hint does not know", hint.agrees(Collections.singletonMap(b, 10L)));
        assertFalse("an empty map wipes the offset", hint.agrees(Collections.emptyMap()));
        assertFalse(hint.knows(b));
        store.commit(Collections.emptyMap());
        hint = OffsetsHint.read(dir());
        assertTrue("after a wipe the hint knows every partition", hint.knows(b) && hint.knows(a));
        assertNull(hint.offset(a));
        assertTrue(hint.agrees(Collections.emptyMap()));
        assertTrue(hint.agrees(Collections.singletonMap(b, null)));
    }

    @Test
    public void aDamagedHintIsNotBelieved() throws Exception {
        store = open();
        store.put(Bytes.wrap(new byte[] {1}), new byte[12]);
        store.commit(Collections.singletonMap(PARTITIONS.get(0), 5L));
        File file = new File(dir(), OffsetsHint.FILE);
        byte[] good = Files.readAllBytes(file.toPath());
        assertNotNull(OffsetsHint.decode(good));
        List<byte[]> bad = new ArrayList<>();
        for (int i = 0; i < good.length; i++) {
            byte[] flipped = good.clone();
            flipped[i] ^= 0x01;
            bad.add(flipped);
        }
        for (int len = 0; len < good.length; len++) {
            bad.add(Arrays.copyOf(good, len));
        }
        bad.add("not a hint at all".getBytes(StandardCharsets.UTF_8));
        for (byte[] b : bad) {
            Files.write(file.toPath(), b);
            assertNull("believed " + Arrays.toString(b), OffsetsHint.read(dir()));
        }
        // the file is overwritten in place: what a longer record left after this one is ignored
        byte[] longer = Arrays.copyOf(good, good.length + 30);
        Arrays.fill(longer, good.length, longer.length, (byte) 0x5a);
        Files.write(file.toPath(), longer);
        assertEquals(Long.valueOf(5L), OffsetsHint.read(dir()).offset(PARTITIONS.get(0)));
        assertTrue(file.delete());
        assertNull(OffsetsHint.read(dir()));
        assertTrue(new File(dir(), "CURRENT").isFile());
        // the store does not mind the file, nor its absence: it reopens and rewrites it
        store.close();
        store = open();
        assertEquals(Long.valueOf(5L), store.committedOffset(PARTITIONS.get(0)));
        store.commit(Collections.singletonMap(PARTITIONS.get(0), 6L));
        assertEquals(Long.valueOf(6L), OffsetsHint.read(dir()).offset(PARTITIONS.get(0)));
        assertEquals(Position.emptyPosition().withComponent("in", 3, 0), PositionCodec.decode(OffsetsHint.read(dir())
            .metadata()));
    }
}
