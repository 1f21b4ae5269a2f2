package dev.kstate.bench;

import java.io.File;

/**
 * The child JVM of {@link OpenBench}'s kill case: loads the store (putAll of 1,000 + commit,
 * repeated), prints {@link #READY} and waits to be SIGKILLed, never closing the store.
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
        System.out.println(READY);
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
