package dev.kstate.streams;

import dev.kstate.internal.KstateNative;
import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.processor.TaskId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * All-or-nothing adoption of a task's Kafka Streams stores. Kafka initialises a task's stores
 * one after another; before the first kstate store of a task adopts a directory in Kafka's
 * format, every kstate store of the task that would adopt one is checked, reading only, with
 * the checks the adoption makes ({@code kstate::store::check_adoption}). If any would be
 * refused, none is opened and {@code init} fails naming every blocking store.
 *
 * <p>Which stores of the task kstate will open is not visible from {@code init}; every kstate
 * RocksDB store built in this JVM records its name and options here when it is constructed,
 * which happens for all stores of a task before the first one is initialised. A store built
 * with Kafka's own supplier is not recorded, so its directory is neither checked nor adopted.
 */
final class TaskAdoption {
    private static final Logger LOG = LoggerFactory.getLogger(TaskAdoption.class);
    static final int KEY_VALUE = 0;
    static final int WINDOW = 1;
    static final int SESSION = 2;
    /** The time-ordered stores of {@code EmitStrategy.onWindowClose()}: they adopt Kafka's time-ordered segments. */
    static final int TIME_ORDERED_WINDOW = 3;
    static final int TIME_ORDERED_SESSION = 4;
    /** A versioned store: it adopts Kafka's {@code RocksDBVersionedStore} directory, where key-value stores' are. */
    static final int VERSIONED = 5;
    /** As {@code KstateSegmentedStateStore}'s: Kafka's segment directory names. */
    private static final Pattern KAFKA_SEGMENT = Pattern.compile(".+[.:-]\\d+");
    /** Store name to the options of the kstate RocksDB stores of that name built in this JVM. */
    private static final Map<String, Set<Plan>> PLANS = new ConcurrentHashMap<>();

    private TaskAdoption() {
    }

    /** What a kstate store adopts a Kafka directory as. */
    static final class Plan {
        final String name;
        final int kind;
        final int valueFormat;
        final long retention;
        final long segmentInterval;

        Plan(String name, int kind, int valueFormat, long retention, long segmentInterval) {
            this.name = name;
            this.kind = kind;
            this.valueFormat = valueFormat;
            this.retention = retention;
            this.segmentInterval = segmentInterval;
        }

        /** @return the directory of Kafka's store this store would adopt in {@code taskDir}, or null */
        File kafkaDir(File taskDir) {
            if (kind == KEY_VALUE || kind == VERSIONED) {
                return KstateKeyValueStore.kafkaDirToAdopt(taskDir, name);
            }
            File dir = new File(taskDir, name);
            return holdsKafkaSegments(dir) ? dir : null;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Plan)) {
                return false;
            }
            Plan p = (Plan) o;
            return name.equals(p.name) && kind == p.kind && valueFormat == p.valueFormat && retention == p.retention
                && segmentInterval == p.segmentInterval;
        }

        @Override
        public int hashCode() {
            return Objects.hash(name, kind, valueFormat, retention, segmentInterval);
        }
    }

    /**
     * Records a kstate RocksDB store built in this JVM.
     *
     * @param plan its name and what it adopts a Kafka directory as
     */
    static void record(Plan plan) {
        PLANS.computeIfAbsent(plan.name, n -> ConcurrentHashMap.newKeySet()).add(plan);
    }

    /**
     * Called by {@code init} of the store {@code self} before it opens {@code dir}, a directory
     * that may hold Kafka's store: when it does, checks every recorded kstate store of the task
     * that would adopt a Kafka directory, so that they are adopted all together or not at all.
     * A name recorded with several options (two applications in one JVM) blocks only when its
     * directory is refused with every one of them.
     *
     * @param taskDir the task directory ({@code context.stateDir()})
     * @param self the store being initialised
     * @param dir the directory it opens
     * @param description the store and task, for messages
     * @param taskId the task, for the {@code TaskCorruptedException} below
     * @param adoptLeftOpen whether a Kafka store left open is adopted ({@link KafkaStoreCommits#opensLeftOpen})
     * @throws TaskCorruptedException (nothing changed) when stores are refused only because they
     *     were left open (so not under at-least-once): Kafka's own store throws the same from
     *     {@code init}, and Kafka wipes the task and restores it from the changelog
     * @throws KstateProcessorStateException (nothing changed) when any of them would be refused
     *     otherwise, naming each
     */
    static void check(File taskDir, Plan self, File dir, String description, TaskId taskId, boolean adoptLeftOpen) {
        long start = System.nanoTime();
        List<String> blockers = new ArrayList<>();
        int code = 0;
        KstateProcessorStateException first = null;
        // whether every blocker would be adopted if left-open stores were: a refusal Kafka's own
        // store makes too, as TaskCorruptedException
        boolean onlyLeftOpen = true;
        try {
            if (!adopts(self, dir, adoptLeftOpen)) {
                return; // a store kstate adopted earlier: nothing of Kafka's to adopt
            }
        } catch (KstateProcessorStateException e) {
            blockers.add("store " + self.name + " at " + dir + ": " + e.getMessage());
            code = e.errorCode();
            first = e;
            onlyLeftOpen = !adoptLeftOpen && adoptedIfLeftOpenWere(self, dir);
        }
        int adopting = blockers.isEmpty() ? 1 : 0;
        for (Map.Entry<String, Set<Plan>> named : PLANS.entrySet()) {
            if (named.getKey().equals(self.name)) {
                continue;
            }
            KstateProcessorStateException refused = null;
            File refusedDir = null;
            Plan refusedPlan = null;
            boolean adoptable = false;
            for (Plan p : named.getValue()) {
                File d = p.kafkaDir(taskDir);
                if (d == null) {
                    continue;
                }
                try {
                    adoptable |= adopts(p, d, adoptLeftOpen);
                } catch (KstateProcessorStateException e) {
                    refused = e;
                    refusedDir = d;
                    refusedPlan = p;
                }
            }
            if (adoptable) {
                adopting++;
            } else if (refused != null) {
                blockers.add("store " + named.getKey() + " at " + refusedDir + ": " + refused.getMessage());
                code = blockers.size() == 1 ? refused.errorCode() : code;
                first = first == null ? refused : first;
                onlyLeftOpen &= !adoptLeftOpen && adoptedIfLeftOpenWere(refusedPlan, refusedDir);
            }
        }
        if (!blockers.isEmpty() && onlyLeftOpen && taskId != null) {
            LOG.warn("kstate store {}: the Kafka Streams store(s) of task directory {} were left open (their process "
                + "was killed) and processing.guarantee is exactly_once_v2: as Kafka Streams does for its own store, "
                + "the task is reported corrupted, so that Kafka Streams wipes it and restores it from the changelog "
                + "(nothing was adopted): {}", description, taskDir, String.join("; ", blockers));
            TaskCorruptedException corrupted = new TaskCorruptedException(Collections.singleton(taskId));
            corrupted.initCause(first);
            throw corrupted;
        }
        if (!blockers.isEmpty()) {
            throw new KstateProcessorStateException("store " + description + " is not opened: kstate adopts the Kafka "
                + "Streams stores of task directory " + taskDir + " all together or not at all, and " + blockers.size()
                + " of them cannot be adopted, so none was changed (remove or repair the blocking store's directory, or "
                + "run the task on Kafka's stores): " + String.join("; ", blockers), code);
        }
        LOG.info("kstate store {}: checked the {} Kafka Streams store(s) of task directory {} that kstate adopts (all "
            + "adoptable) in {} ms{}", description, adopting, taskDir, (System.nanoTime() - start) / 1_000_000,
            adoptLeftOpen ? "; under at-least-once a store left open (its process killed) is adopted, as Kafka Streams "
                + "opens it, with its committed offsets: its data may be ahead of them, and the changelog is replayed "
                + "from the offset over it" : "");
    }

    private static boolean adopts(Plan plan, File dir, boolean adoptLeftOpen) {
        KstateNative.ensureLoaded();
        return KstateNative.adoptionCheck(dir.getAbsolutePath(), plan.kind, plan.valueFormat, plan.retention,
            plan.segmentInterval, adoptLeftOpen);
    }

    /** @return whether {@code plan} would adopt {@code dir} if a store left open were adopted */
    private static boolean adoptedIfLeftOpenWere(Plan plan, File dir) {
        try {
            return adopts(plan, dir, true);
        } catch (KstateProcessorStateException e) {
            return false;
        }
    }

    /** @return whether {@code dir} holds Kafka's segment directories and no database of its own */
    static boolean holdsKafkaSegments(File dir) {
        String[] names = dir.list();
        if (names == null || new File(dir, "CURRENT").exists()) {
            return false;
        }
        for (String n : names) {
            if (KAFKA_SEGMENT.matcher(n).matches() && new File(dir, n).isDirectory()) {
                return true;
            }
        }
        return false;
    }
}
