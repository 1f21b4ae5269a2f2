package dev.kstate.eos;

import dev.kstate.broker.KafkaBroker;
import dev.kstate.streams.TestSupport;
import java.io.File;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Rule;
import org.junit.rules.TestWatcher;
import org.junit.runner.Description;

/**
 * One real Kafka broker per test class, started before its first test and always stopped after
 * its last. The class's directory (broker data, application state and logs) is deleted at the
 * end, unless a test failed or {@code -Dkstate.eos.keep=true}: it is then kept for diagnosis
 * and its path printed.
 */
public abstract class BrokerSuite {
    /** The running broker. */
    protected static KafkaBroker broker;
    /** The class's directory: {@code broker/} holds the broker's data. */
    protected static File base;
    private static volatile boolean failed;

    /** Marks the class failed, so that {@link #stopBroker} keeps its directory. */
    @Rule
    public final TestWatcher keepOnFailure = new TestWatcher() {
        @Override
        protected void failed(Throwable e, Description d) {
            failed = true;
            System.out.println("kept for diagnosis: " + base);
        }
    };

    /**
     * Starts the broker in a fresh directory.
     *
     * @throws Exception if the broker does not come up
     */
    @BeforeClass
    public static void startBroker() throws Exception {
        failed = false;
        base = TestSupport.tempDir("broker-suite");
        broker = KafkaBroker.start(new File(base, "broker"));
    }

    /** Stops the broker; deletes the directory unless it is kept. */
    @AfterClass
    public static void stopBroker() {
        if (failed) {
            System.setProperty("kstate.eos.keep", "true");
        }
        if (broker != null) {
            broker.close();
            broker = null;
        }
        if (!Boolean.getBoolean("kstate.eos.keep")) {
            TestSupport.deleteTree(base);
        }
    }
}
