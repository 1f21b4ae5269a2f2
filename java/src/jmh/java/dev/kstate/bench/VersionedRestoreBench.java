package dev.kstate.bench;

import dev.kstate.streams.TestSupport;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Changelog restore of a versioned store (history retention 1 hour) into an empty store
 * through the batching restore callback it registered in init, in batches of 1,000 records as
 * ProcessorStateManager hands them over, then the commit of the last restored offset: 100,000
 * records, versions of 20,000 keys one second apart in time order (the record timestamp is the
 * version's), 100-byte values. One operation = the whole restore.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 5)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx4g"})
public class VersionedRestoreBench {
    static final int RECORDS = 100_000;
    static final int KEYS = 20_000;

    @Param({"kstate-rocksdb", "kstate-memory", "kafka-rocksdb", "kafka-rocksdb-txn"})
    public String variant;

    private List<List<ConsumerRecord<byte[], byte[]>>> changelog;
    private File dir;
    private VersionedSubject subject;

    @Setup(Level.Trial)
    public void records() {
        byte[][] values = BenchStore.values(1024, 23);
        changelog = new ArrayList<>();
        List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>(1000);
        org.apache.kafka.common.utils.Bytes[] keys = Subject.keys(KEYS);
        for (int offset = 0; offset < RECORDS; offset++) {
            byte[] key = keys[offset % KEYS].get();
            batch.add(new ConsumerRecord<>(BenchStore.CHANGELOG.topic(), BenchStore.CHANGELOG.partition(), offset,
                1_000L * (offset / KEYS) + offset % 1000, TimestampType.CREATE_TIME, key.length, BenchStore.VALUE_BYTES,
                key, values[offset % values.length], new RecordHeaders(), Optional.empty()));
            if (batch.size() == 1000) {
                changelog.add(batch);
                batch = new ArrayList<>(1000);
            }
        }
    }

    @Setup(Level.Iteration)
    public void emptyStore() throws Exception {
        dir = BenchStore.freshDir("versioned-restore-" + variant);
        subject = VersionedSubject.open(variant, dir, Duration.ofHours(1));
        System.gc();
    }

    @TearDown(Level.Iteration)
    public void drop() {
        subject.close();
        TestSupport.deleteTree(dir);
    }

    @Benchmark
    public void versionedRestore100k() {
        Cpu.Span cpu = Cpu.start();
        RecordBatchingStateRestoreCallback callback = subject.restorer();
        long last = -1;
        for (List<ConsumerRecord<byte[], byte[]>> batch : changelog) {
            callback.restoreBatch(batch);
            last = batch.get(batch.size() - 1).offset();
        }
        subject.commit(last);
        cpu.stop();
    }
}
