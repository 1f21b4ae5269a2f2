package dev.kstate.streams;

import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.streams.StreamsConfig;

/**
 * What a remote restore must know of a store's changelog partition to decide whether a
 * checkpoint is usable: its end and log-start offsets and the topic's
 * {@code delete.retention.ms}. Behind an interface so that tests inject the facts; the
 * application's own facts come from an {@link Admin} client ({@link #admin}).
 */
interface ChangelogFacts {
    /** Kafka's default {@code delete.retention.ms} (1 day). */
    long DEFAULT_DELETE_RETENTION_MS = 86_400_000L;

    /** The facts of one changelog partition. */
    final class Facts {
        /** The offset the next record would get. */
        final long endOffset;
        /** The first offset still in the log. */
        final long logStartOffset;
        /** The topic's {@code delete.retention.ms}. */
        final long deleteRetentionMs;

        Facts(long endOffset, long logStartOffset, long deleteRetentionMs) {
            this.endOffset = endOffset;
            this.logStartOffset = logStartOffset;
            this.deleteRetentionMs = deleteRetentionMs;
        }

        @Override
        public String toString() {
            return "end offset " + endOffset + ", log-start offset " + logStartOffset + ", delete.retention.ms "
                + deleteRetentionMs;
        }
    }

    /**
     * @param changelog the store's changelog partition
     * @return its facts
     * @throws Exception when they cannot be had (the caller falls back to Kafka's restore)
     */
    Facts facts(TopicPartition changelog) throws Exception;

    /**
     * The facts from {@code client}, which stays open (the caller owns it).
     *
     * @param client an Admin client of the application's cluster
     * @param timeout how long each request may take
     * @return the facts source
     */
    static ChangelogFacts admin(Admin client, Duration timeout) {
        return changelog -> {
            long ms = timeout.toMillis();
            ListOffsetsResult end = client.listOffsets(Collections.singletonMap(changelog, OffsetSpec.latest()));
            ListOffsetsResult start = client.listOffsets(Collections.singletonMap(changelog, OffsetSpec.earliest()));
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, changelog.topic());
            Map<ConfigResource, Config> configs = client.describeConfigs(Collections.singleton(topic)).all()
                .get(ms, TimeUnit.MILLISECONDS);
            long endOffset = end.partitionResult(changelog).get(ms, TimeUnit.MILLISECONDS).offset();
            long logStart = start.partitionResult(changelog).get(ms, TimeUnit.MILLISECONDS).offset();
            Config config = configs.get(topic);
            ConfigEntry entry = config == null ? null : config.get(TopicConfig.DELETE_RETENTION_MS_CONFIG);
            long retention = entry == null || entry.value() == null ? DEFAULT_DELETE_RETENTION_MS
                : Long.parseLong(entry.value());
            return new Facts(endOffset, logStart, retention);
        };
    }

    /**
     * The Admin client configs of an application ({@link StreamsConfig#getAdminConfigs}:
     * bootstrap servers, security and {@code admin.}-prefixed keys).
     *
     * @param appConfigs the application's configs
     * @return the configs of the restores' Admin client
     */
    static Map<String, Object> adminConfigs(Map<String, Object> appConfigs) {
        return new HashMap<>(new StreamsConfig(appConfigs).getAdminConfigs("kstate-checkpoint-restore"));
    }
}
