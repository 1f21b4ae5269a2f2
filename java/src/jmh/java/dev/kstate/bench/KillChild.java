package dev.kstate.bench;

import java.io.File;

/**
 * The child JVM of {@link OpenBench}'s kill case: loads the store (putAll of 1,000 + commit,
 * repeated), lets it settle, prints {@link #READY} and waits to be SIGKILLed, never closing
 * the store.
 *
 * <p>Settled ({@link BenchStore#settle}) means the flushes of the memtables the load filled
 * have finished, as in an application killed at a random moment (a flush takes a fraction of
 * a second, filling a memtable much longer): what the kill leaves to recover is then the last
 * memtable of each store (kstate's write-ahead log of it; Kafka's store loses it), not however
 * many memtables were still queued for flushing when the load's last write returned. Without
 * it, each trial's kill state differed: kstate's open after a kill measured 67 or 104 ms, and
 * Kafka's stores lost 104,000 or 216,000 records, from one trial to the next.
 */
public final class KillChild {
    /** The line the child prints once everything is written and committed. */
    static final String READY = "COMMITTED";

    private KillChild() {
    }

    public static void main(String[] args) throws Exception {
        String variant = args[0];
        File dir = new File(args[1]);
        int n = Subject.keyCount();
        Subject s = Subject.open(variant, dir);
        s.load(Subject.keys(n), Subject.values(1024, 3));
        BenchStore.settle();
        System.out.println(READY);
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
