package dev.kstate.broker;

import java.io.InputStream;
import java.lang.reflect.Method;

/**
 * Entry point of a child JVM (the broker, or a Streams application) that must never outlive
 * the JVM that started it: a daemon thread reads standard input, which the parent keeps open,
 * and halts this JVM at end of input, that is when the parent exits or dies (even by SIGKILL).
 * Then it calls {@code main} of the class named by the first argument with the other ones.
 * Uses only the JDK, so it runs on the broker's classpath too.
 */
public final class BrokerMain {
    private BrokerMain() {
    }

    /** Halts this JVM when standard input ends. */
    public static void haltWhenParentDies() {
        Thread t = new Thread(() -> {
            try {
                InputStream in = System.in;
                byte[] buf = new byte[256];
                while (in.read(buf) >= 0) {
                    // the parent writes nothing; just wait for end of input
                }
            } catch (Throwable e) {
                // the pipe broke: the parent is gone
            }
            Runtime.getRuntime().halt(3);
        }, "parent-watchdog");
        t.setDaemon(true);
        t.start();
    }

    public static void main(String[] args) throws Exception {
        haltWhenParentDies();
        String[] rest = new String[args.length - 1];
        System.arraycopy(args, 1, rest, 0, rest.length);
        Method main = Class.forName(args[0]).getMethod("main", String[].class);
        main.invoke(null, (Object) rest);
    }
}
