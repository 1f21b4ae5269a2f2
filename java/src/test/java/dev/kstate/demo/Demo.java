package dev.kstate.demo;

import dev.kstate.internal.KstateNative;
import dev.kstate.internal.NativeLoader;
import dev.kstate.streams.CrashChild;
import dev.kstate.streams.CrashTest;
import dev.kstate.streams.KstateStores;
import dev.kstate.streams.TestSupport;
import java.io.File;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * The kstate demo: a Kafka Streams topology on kstate stores (driven by TopologyTestDriver),
 * its per-key aggregates with timestamps and its commits with changelog offsets; then a
 * child JVM writing through the adapter is SIGKILLed and the store is reopened to show the
 * committed offset recovered.
 */
public final class Demo {
    private static final String APP = "kstate-demo";

    private Demo() {
    }

    public static void main(String[] args) throws Exception {
        File base = new File(System.getProperty("kstate.demo.dir", "build/demo"));
        TestSupport.deleteTree(base);
        base.mkdirs();
        KstateNative.ensureLoaded();
        System.out.println("== kstate demo ==");
        System.out.println("libkstate loaded from " + NativeLoader.loadedFrom());
        System.out.println();
        streamsPart(new File(base, "streams"));
        System.out.println();
        crashPart(new File(base, "crash"));
    }

    // ----- part 1: a Kafka Streams topology on kstate stores -----------------------------------

    static void streamsPart(File stateDir) {
        StreamsBuilder builder = new StreamsBuilder();
        KGroupedStream<String, Long> byUser = builder
            .stream("purchases", Consumed.with(Serdes.String(), Serdes.Long()))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.Long()));
        byUser.count(Materialized.<String, Long>as(KstateStores.persistentTimestampedKeyValueStore("purchase-count"))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()));
        byUser.reduce(Long::sum, Materialized.<String, Long>as(KstateStores.persistentTimestampedKeyValueStore("revenue"))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()));
        Topology topology = builder.build();
        System.out.println("-- 1. Kafka Streams topology: purchases -> count + sum per user, both on kstate stores");
        System.out.print(topology.describe());

        Properties props = TestSupport.props(APP, stateDir);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        TopicPartition countChangelog = new TopicPartition(APP + "-purchase-count-changelog", 0);
        TopicPartition revenueChangelog = new TopicPartition(APP + "-revenue-changelog", 0);
        String[] users = {"alice", "bob", "carol"};
        long[] amounts = {30, 12, 7, 45, 3, 18, 60, 25, 9, 14};
        Instant t0 = Instant.parse("2026-01-01T10:00:00Z");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props)) {
            TestInputTopic<String, Long> in = driver.createInputTopic("purchases",
                Serdes.String().serializer(), Serdes.Long().serializer());
            StateStore countStore = driver.getTimestampedKeyValueStore("purchase-count");
            StateStore revenueStore = driver.getTimestampedKeyValueStore("revenue");
            System.out.println("-- processing 10 records; TopologyTestDriver commits after each one:");
            for (int i = 0; i < amounts.length; i++) {
                String user = users[i % users.length];
                Instant ts = t0.plusSeconds(i * 90L);
                in.pipeInput(user, amounts[i], ts);
                System.out.printf("   record %2d  %-5s +%3d @ %s   commit: %s offset %s, %s offset %s%n",
                    i, user, amounts[i], ts, countChangelog.topic(), countStore.committedOffset(countChangelog),
                    revenueChangelog.topic(), revenueStore.committedOffset(revenueChangelog));
            }
            System.out.println("-- per-user aggregates (value @ timestamp of the latest contributing record):");
            KeyValueStore<String, ValueAndTimestamp<Long>> counts = driver.getTimestampedKeyValueStore("purchase-count");
            KeyValueStore<String, ValueAndTimestamp<Long>> revenue = driver.getTimestampedKeyValueStore("revenue");
            try (KeyValueIterator<String, ValueAndTimestamp<Long>> it = counts.all()) {
                while (it.hasNext()) {
                    KeyValue<String, ValueAndTimestamp<Long>> kv = it.next();
                    ValueAndTimestamp<Long> sum = revenue.get(kv.key);
                    System.out.printf("   %-5s  purchases=%d  revenue=%3d  @ %s%n", kv.key, kv.value.value(), sum.value(),
                        Instant.ofEpochMilli(kv.value.timestamp()));
                }
            }
            File taskDir = new File(new File(stateDir, APP), "0_0");
            String[] entries = taskDir.list();
            java.util.Arrays.sort(entries);
            System.out.println("-- task directory " + taskDir + ": " + String.join(", ", entries)
                + " (kstate stores live in stateDir/<store name>/)");
        }
    }

    // ----- part 2: SIGKILL a writer, recover the committed offset ---------------------------

    static void crashPart(File stateDir) throws Exception {
        System.out.println("-- 2. crash recovery: a child JVM writes and commits through the adapter; we SIGKILL it");
        stateDir.mkdirs();
        Process child = CrashTest.startChild(stateDir, Long.MAX_VALUE);
        CrashTest.ChildWatcher watcher = new CrashTest.ChildWatcher(child);
        watcher.start();
        if (!watcher.awaitOpened(60_000)) {
            throw new IllegalStateException("child did not start");
        }
        long deadline = System.currentTimeMillis() + 30_000;
        while (CrashChild.lastReported(stateDir) < 200 && System.currentTimeMillis() < deadline) {
            Thread.sleep(10);
        }
        long reportedBeforeKill = CrashChild.lastReported(stateDir);
        System.out.println("   child pid " + child.pid() + " is committing; last commit it reported: offset "
            + reportedBeforeKill);
        child.destroyForcibly();
        child.waitFor(30, TimeUnit.SECONDS);
        long reported = CrashChild.lastReported(stateDir);
        System.out.println("   SIGKILL sent; child exit status " + child.exitValue() + " (128+9); last commit it reported: offset "
            + reported);

        KeyValueStore<Bytes, byte[]> store = CrashChild.supplier().get();
        store.init(new TestSupport.CapturingContext(TestSupport.props("crash-app", stateDir), stateDir), store);
        try {
            Long recovered = store.committedOffset(CrashChild.CHANGELOG);
            long n = recovered == null ? 0 : recovered;
            TreeMap<Bytes, byte[]> expected = CrashChild.expected(n);
            List<KeyValue<Bytes, byte[]>> actual = TestSupport.drain(store.all());
            boolean same = actual.size() == expected.size();
            int i = 0;
            for (Map.Entry<Bytes, byte[]> e : expected.entrySet()) {
                if (!same) {
                    break;
                }
                KeyValue<Bytes, byte[]> kv = actual.get(i++);
                same = kv.key.equals(e.getKey()) && java.util.Arrays.equals(kv.value, e.getValue());
            }
            System.out.println("   reopened through the adapter: committedOffset(" + CrashChild.CHANGELOG + ") = " + n
                + (n == reported ? " (= the last reported commit)"
                    : n == reported + 1 ? " (the commit in flight at the kill was already durable)" : " (UNEXPECTED)"));
            System.out.println("   " + actual.size() + " entries; contents equal the model at offset " + n + ": "
                + (same ? "yes" : "NO"));
            if (!same || n < reported || n > reported + 1) {
                throw new IllegalStateException("recovery check failed");
            }
        } finally {
            store.close();
        }
        System.out.println("== demo done ==");
    }
}
