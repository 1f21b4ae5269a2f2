package dev.kstate.streams;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When Kafka Streams 4.4 commits the stores of a running task, and what every kind of kstate
 * store does about it. Under {@code exactly_once_v2} a task's stores are committed only when
 * the commit is forced (revocation, suspension, close) unless
 * {@code enable.transactional.statestores} is true ({@code StreamTask#postCommit}); under
 * at-least-once, on every commit.
 */
final class KafkaStoreCommits {
    private static final Logger LOG = LoggerFactory.getLogger(KafkaStoreCommits.class);
    /** Application ids already warned about exactly-once without transactional state stores. */
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

    private KafkaStoreCommits() {
    }

    /**
     * @param configs the application's configs
     * @return true when Kafka commits the stores of a running task only on forced commits
     *     ({@code exactly_once_v2} without {@code enable.transactional.statestores=true})
     */
    static boolean onlyForced(Map<String, Object> configs) {
        if (configs == null) {
            return false;
        }
        boolean eos = StreamsConfig.EXACTLY_ONCE_V2.equals(String.valueOf(configs.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG)));
        return eos && !KstateKeyValueStore.booleanConfig(configs, StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG);
    }

    /**
     * Whether Kafka 4.4 opens its own RocksDB store when the store's {@code offsets} family says
     * it was left open (its process was killed): {@code RocksDBStore#openDB} ignores the status
     * unless {@code processing.guarantee} is {@code exactly_once_v2}, where the open throws
     * {@code TaskCorruptedException} (the task is wiped and restored). Under at-least-once the
     * store is used with its committed offsets, its data possibly ahead of them: the changelog
     * replayed from the offset rewrites records the store already holds.
     *
     * @param configs the application's configs (null: Kafka's default, at-least-once)
     * @return true unless the application runs under {@code exactly_once_v2}
     */
    static boolean opensLeftOpen(Map<String, Object> configs) {
        return configs == null
            || !StreamsConfig.EXACTLY_ONCE_V2.equals(configs.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG));
    }

    /**
     * Warns once per application id, whatever kind of store comes first, when Kafka commits
     * stores only on forced commits: kstate's writes then stay uncommitted between them, and
     * after a crash or a dirty close Kafka wipes the task's state anyway.
     *
     * @param applicationId the application id
     * @param configs the application's configs
     * @param store the store, for the message (e.g. {@code "window store w"})
     */
    static void warnIfOnlyForced(String applicationId, Map<String, Object> configs, String store) {
        if (onlyForced(configs) && WARNED.add(String.valueOf(applicationId))) {
            LOG.warn("kstate {}: processing.guarantee=exactly_once_v2 without {}=true. Kafka Streams then commits "
                    + "state stores only on forced commits (revocation, close), not on every commit: kstate's "
                    + "uncommitted writes grow until then (spilled to disk past {}), and after a crash or a dirty close "
                    + "Kafka Streams wipes the task's state and restores it from the changelog. Set {}=true (Kafka "
                    + "Streams 4.4 or later) so that every commit commits kstate's stores with their changelog offsets.",
                store, StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, KstateStoreOptions.MAX_UNCOMMITTED_BYTES_CONFIG,
                StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG);
        }
    }
}
