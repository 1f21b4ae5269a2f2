package dev.kstate.streams;

import static dev.kstate.streams.SegmentAdoptionTest.APP;
import static dev.kstate.streams.SegmentAdoptionTest.STORES;
import static dev.kstate.streams.SegmentAdoptionTest.answers;
import static dev.kstate.streams.SegmentAdoptionTest.changelog;
import static dev.kstate.streams.SegmentAdoptionTest.changelogStarts;
import static dev.kstate.streams.SegmentAdoptionTest.key;
import static dev.kstate.streams.SegmentAdoptionTest.stateStore;
import static dev.kstate.streams.SegmentAdoptionTest.topology;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The way back for window and session stores (issue #26): the topology of
 * {@link SegmentAdoptionTest} (a timestamped window store, a plain window store and a session
 * store) runs on kstate's stores and is closed cleanly; {@code kstate export --to kafka} turns
 * its state directory into Kafka's segmented layout; the same topology on Kafka 4.4's own
 * {@code persistentTimestampedWindowStore} / {@code persistentWindowStore} /
 * {@code persistentSessionStore} opens it: every query answers what the kstate run answered,
 * Kafka reports kstate's committed offsets and starts each changelog right after them (nothing
 * restored), and processing goes on with the state of a run that never switched. Then kstate
 * adopts the directory Kafka wrote, and still answers the same.
 */
public class SegmentExportTest {
    private static final int PHASE1 = 2000;
    private static final int PHASE2 = 3000;

    private File dir;

    @Before
    public void setUp() throws Exception {
        dir = TestSupport.tempDir("segexport");
    }

    @After
    public void tearDown() {
        TestSupport.deleteTree(dir);
    }

    /** One input record. */
    private static final class In {
        final String key;
        final String value;
        final long ts;

        In(String key, String value, long ts) {
            this.key = key;
            this.value = value;
            this.ts = ts;
        }
    }

    /** The input of every run: SegmentAdoptionTest's, out-of-order records included. */
    private static List<In> input() {
        Random rnd = new Random(26);
        List<In> out = new ArrayList<>();
        long base = 1_000_000;
        for (int i = 0; i < PHASE2; i++) {
            base += rnd.nextInt(2_000);
            long ts = rnd.nextInt(6) == 0 ? Math.max(0, base - rnd.nextInt(120_000)) : base;
            out.add(new In(key(rnd.nextInt(SegmentAdoptionTest.KEYS)), "v" + i, ts));
        }
        return out;
    }

    /** Pipes records {@code [from, to)} and returns the stream time after them. */
    private static long pipe(TopologyTestDriver driver, List<In> input, int from, int to) {
        TestInputTopic<String, String> in = driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
        for (In r : input.subList(from, to)) {
            in.pipeInput(r.key, r.value, r.ts);
        }
        return streamTime(input, to);
    }

    private static long streamTime(List<In> input, int to) {
        return input.subList(0, to).stream().mapToLong(r -> r.ts).max().orElse(-1);
    }

    private static Map<String, Long> offsets(TopologyTestDriver driver) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (String s : STORES) {
            Long o = stateStore(driver, s).committedOffset(changelog(s));
            assertNotNull("committed offset of " + s, o);
            out.put(s, o);
        }
        return out;
    }

    /** Closes the task cleanly (committing its stores) and copies the state directory into {@code into}. */
    private static void closeCleanlyInto(TopologyTestDriver driver, File stateDir, File into) throws Exception {
        try {
            MigrationTest.closeTaskKeepingState(driver);
            SegmentAdoptionTest.copyTree(new File(stateDir, APP).toPath(), new File(into, APP).toPath());
        } finally {
            driver.close();
        }
    }

    private static String export(File stateDir, boolean dryRun) throws Exception {
        String app = new File(stateDir, APP).getPath();
        return dryRun
            ? TestSupport.runCli(0, "export", "--to", "kafka", app, "--dry-run")
            : TestSupport.runCli(0, "export", "--to", "kafka", app);
    }

    private static List<String> tree(File root) throws Exception {
        try (Stream<Path> paths = Files.walk(root.toPath())) {
            return paths.map(p -> root.toPath().relativize(p).toString() + (Files.isDirectory(p) ? "/" : ""))
                .sorted().collect(Collectors.toList());
        }
    }

    @Test
    public void kstateWindowAndSessionStoresGoBackToKafkasOwnAndReturn() throws Exception {
        List<In> input = input();
        long time1 = streamTime(input, PHASE1);
        long time2 = streamTime(input, PHASE2);

        // The run that never switches: Kafka's own stores throughout, restarted (closed cleanly
        // and reopened) where the other run switches. A restarted Kafka segmented store does not
        // know its stream time until the next put, so it shows the records of its oldest live
        // segments that a running one hides: the answers right after the switch are compared
        // with a restarted Kafka store's.
        Map<String, List<String>> ref1;
        Map<String, List<String>> refRestarted;
        Map<String, List<String>> ref2;
        File refRun = new File(dir, "never-switched");
        File refRestart = new File(dir, "never-switched-restarted");
        TopologyTestDriver ref = new TopologyTestDriver(topology(false), TestSupport.props(APP, refRun));
        try {
            pipe(ref, input, 0, PHASE1);
            ref1 = answers(ref, time1);
        } catch (RuntimeException e) {
            ref.close();
            throw e;
        }
        closeCleanlyInto(ref, refRun, refRestart);
        try (TopologyTestDriver restarted = new TopologyTestDriver(topology(false), TestSupport.props(APP, refRestart))) {
            refRestarted = answers(restarted, time1);
            pipe(restarted, input, PHASE1, PHASE2);
            ref2 = answers(restarted, time2);
        }

        // Phase 1 on kstate, closed cleanly.
        File run1 = new File(dir, "run1");
        File exported = new File(dir, "exported");
        TopologyTestDriver onKstate = new TopologyTestDriver(topology(true), TestSupport.props(APP, run1));
        Map<String, Long> kstateOffsets;
        Map<String, List<String>> kstateAnswers;
        try {
            pipe(onKstate, input, 0, PHASE1);
            kstateAnswers = answers(onKstate, time1);
            kstateOffsets = offsets(onKstate);
        } catch (RuntimeException e) {
            onKstate.close();
            throw e;
        }
        closeCleanlyInto(onKstate, run1, exported);
        File taskDir = new File(exported, APP + "/0_0");
        for (String s : STORES) {
            assertEquals("kstate answers as Kafka for " + s, ref1.get(s), kstateAnswers.get(s));
            assertTrue(s + " is a kstate store", new File(taskDir, s + "/CURRENT").isFile());
        }

        // The way back, by the CLI: a dry run changes nothing, the real run exports all three.
        List<String> before = tree(exported);
        String dry = export(exported, true);
        assertTrue(dry, dry.contains("opens as Kafka's RocksDBTimestampedWindowStore"));
        assertTrue(dry, dry.contains("opens as Kafka's RocksDBWindowStore"));
        assertTrue(dry, dry.contains("opens as Kafka's RocksDBSessionStore"));
        assertEquals("the dry run changed nothing", before, tree(exported));
        String out = export(exported, false);
        assertTrue(out, out.contains("3 store(s) exported to Kafka's stores, 0 not exported"));
        for (String s : STORES) {
            File store = new File(taskDir, s);
            assertFalse(s + " is no kstate store any more", new File(store, "CURRENT").exists());
            String[] segments = store.list();
            assertTrue(s + " holds Kafka's segments", segments != null && segments.length >= 2);
            for (String segment : segments) {
                assertTrue(segment, segment.startsWith(s + "."));
                List<String> families = MigrationTest.columnFamilies(new File(store, segment));
                assertEquals(s.equals("tw") ? Arrays.asList("default", "keyValueWithTimestamp", "offsets")
                    : Arrays.asList("default", "offsets"), families);
            }
        }
        List<String> kstateFiles = tree(taskDir).stream().filter(n -> n.contains("kstate")).collect(Collectors.toList());
        assertEquals("no kstate file left", Arrays.asList(), kstateFiles);

        // Phase 2 on Kafka 4.4's own stores, in the exported directory.
        File back = new File(dir, "back");
        TopologyTestDriver onKafka = new TopologyTestDriver(topology(false), TestSupport.props(APP, exported));
        try {
            Map<TopicPartition, Long> starts = changelogStarts(onKafka);
            for (String s : STORES) {
                assertEquals("Kafka reports kstate's committed offset for " + s, kstateOffsets.get(s),
                    stateStore(onKafka, s).committedOffset(changelog(s)));
                assertEquals("Kafka starts " + s + "'s changelog right after it: nothing to restore",
                    Long.valueOf(kstateOffsets.get(s) + 1), starts.get(changelog(s)));
            }
            Map<String, List<String>> kafkaAnswers = answers(onKafka, time1);
            for (String s : STORES) {
                assertEquals("every answer of " + s + ", read by Kafka's own store restarted", refRestarted.get(s),
                    kafkaAnswers.get(s));
            }
            pipe(onKafka, input, PHASE1, PHASE2);
            Map<String, List<String>> after = answers(onKafka, time2);
            for (String s : STORES) {
                assertEquals("the state of the run that never switched, " + s, ref2.get(s), after.get(s));
            }
        } catch (RuntimeException | AssertionError e) {
            onKafka.close();
            throw e;
        }
        closeCleanlyInto(onKafka, exported, back);

        // And the first direction again: kstate adopts the segments Kafka wrote.
        try (TopologyTestDriver again = new TopologyTestDriver(topology(true), TestSupport.props(APP, back))) {
            Map<String, List<String>> adopted = answers(again, time2);
            for (String s : STORES) {
                assertEquals("kstate adopted " + s, ref2.get(s), adopted.get(s));
                assertTrue(s + " is a kstate store again", new File(back, APP + "/0_0/" + s + "/CURRENT").isFile());
            }
        }
    }
}
