package dev.kstate.bench;

import dev.kstate.streams.TestSupport;
import java.io.File;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
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
 * Changelog restore into an empty store through the batching restore callback the store
 * registered in init, in batches of 1,000 records (Kafka's default max.poll.records) exactly as
 * ProcessorStateManager hands them over, then the commit of the last restored offset that
 * follows a restore. 100k and 1M records of 1M distinct keys in a shuffled order, 100-byte
 * values. One operation = the whole restore.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 5)
@Fork(value = 1, jvmArgsAppend = {"-Xms3g", "-Xmx4g"})
public class RestoreBench {
    @Param({"kstate-rocksdb", "kstate-memory", "kafka-rocksdb", "kafka-rocksdb-txn", "kafka-memory"})
    public String variant;

    private List<List<ConsumerRecord<byte[], byte[]>>> changelog;
    private File dir;
    private Subject subject;

    @Setup(Level.Trial)
    public void records() {
        changelog = Subject.changelog(Math.max(Subject.keyCount(), 100_000), 11);
    }

    @Setup(Level.Iteration)
    public void emptyStore() throws Exception {
        dir = Subject.freshDir("restore-" + variant);
        subject = Subject.open(variant, dir);
        System.gc();
    }

    @TearDown(Level.Iteration)
    public void drop() {
        subject.close();
        TestSupport.deleteTree(dir);
    }

    private void restore(int records) {
        Cpu.Span cpu = Cpu.start();
        RecordBatchingStateRestoreCallback callback = subject.restorer();
        long last = -1;
        int done = 0;
        for (List<ConsumerRecord<byte[], byte[]>> batch : changelog) {
            if (done >= records) {
                break;
            }
            callback.restoreBatch(batch);
            done += batch.size();
            last = batch.get(batch.size() - 1).offset();
        }
        subject.commit(last);
        cpu.stop();
    }

    @Benchmark
    public void restore100k() {
        restore(100_000);
    }

    @Benchmark
    public void restore1M() {
        restore(1_000_000);
    }
}
