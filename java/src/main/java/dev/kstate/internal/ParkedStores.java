package dev.kstate.internal;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Native stores kept open between two initialisations of the same store directory, process-wide.
 *
 * <p>Kafka Streams 4.3+ opens every store of every non-empty task directory once on
 * {@code KafkaStreams#start()} (to read the committed offsets it reports in its first rebalance),
 * closes them, and opens them again when the tasks are assigned. A kstate store opened by that
 * start-up path is not closed but <i>parked</i> here, keyed by its canonical directory, and the
 * next initialisation of that directory <i>adopts</i> it instead of opening it again: after a
 * kill, the write-ahead log is replayed once, not twice, and no flush happens in between.
 *
 * <p>A parked store holds committed state only (its transaction is rolled back before it is
 * parked). It is closed for real (a clean close: status recorded, memtables flushed) when it is
 * not adopted before its deadline (by a daemon thread), when its owner goes away
 * ({@link #closeOwnedBy}, e.g. the {@code KafkaStreams} instance closing), when anything else in
 * the process opens its directory ({@link #release}, called by every native open with a path),
 * and on JVM shutdown. Adoption requires the same open options and the same directory: a
 * directory deleted and created again (Kafka wiping a task) is a different store, so the parked
 * handle is closed and the directory opened normally.
 *
 * <p>Every transition of an entry happens under its monitor, so an adoption racing with a
 * deadline either gets the open store or waits for the close to finish (and then opens the
 * directory, whose lock the close released).
 */
public final class ParkedStores {
    private static final Logger LOG = LoggerFactory.getLogger(ParkedStores.class);
    private static final Map<String, Parked> PARKED = new ConcurrentHashMap<>();
    private static final ScheduledThreadPoolExecutor CLOSER = closer();
    private static volatile boolean hookInstalled;

    private ParkedStores() {
    }

    private static ScheduledThreadPoolExecutor closer() {
        ScheduledThreadPoolExecutor e = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "kstate-parked-store-closer");
            t.setDaemon(true);
            return t;
        });
        e.setRemoveOnCancelPolicy(true);
        e.setKeepAliveTime(1, TimeUnit.SECONDS);
        e.allowCoreThreadTimeOut(true);
        return e;
    }

    private enum State { PARKED, ADOPTED, CLOSED }

    /** A parked store and what an adoption must match. */
    public static final class Parked {
        private final String directory;
        private final Object options;
        private final AutoCloseable store;
        private final Object owner;
        private final Object directoryKey;
        private final Object lockKey;
        private final boolean emptySinceCreation;
        private final String description;
        private final long parkedAtNanos = System.nanoTime();
        private State state = State.PARKED;
        private ScheduledFuture<?> deadline;

        private Parked(String directory, Object options, AutoCloseable store, Object owner, boolean emptySinceCreation,
                       String description) {
            this.directory = directory;
            this.options = options;
            this.store = store;
            this.owner = owner;
            this.emptySinceCreation = emptySinceCreation;
            this.description = description;
            this.directoryKey = fileKey(new File(directory));
            this.lockKey = fileKey(lockFile(new File(directory)));
        }

        /** @return the parked native store, now owned by the adopter */
        public AutoCloseable store() {
            return store;
        }

        /** @return whether the store was created empty by the parking init and nothing was written to it since */
        public boolean emptySinceCreation() {
            return emptySinceCreation;
        }

        /** @return milliseconds since the store was parked */
        public long parkedMillis() {
            return (System.nanoTime() - parkedAtNanos) / 1_000_000;
        }

        /** True when the directory and the store's lock file are the very files the store was parked with. */
        private boolean sameFiles() {
            File dir = new File(directory);
            return directoryKey != null && lockKey != null && directoryKey.equals(fileKey(dir))
                && lockKey.equals(fileKey(lockFile(dir)));
        }

        /** Closes the store for real unless it was adopted or closed already; waits for a close under way. */
        private synchronized void close(String why) {
            if (state != State.PARKED) {
                return;
            }
            state = State.CLOSED;
            if (deadline != null) {
                deadline.cancel(false);
            }
            boolean gone = !sameFiles();
            try {
                store.close();
                LOG.info("kstate: closed the parked store {} at {} after {} ms: {}", description, directory, parkedMillis(),
                    why);
            } catch (Exception e) {
                if (gone) {
                    // Kafka deleted the task directory (a wipe, cleanUp()): the close cannot write
                    // its flush there, and nothing needs it; the handle is released all the same.
                    LOG.info("kstate: closed the parked store {} at {} after {} ms: {}; its directory was deleted while "
                        + "it was parked, so the close could not flush it ({})", description, directory, parkedMillis(), why,
                        e.getMessage());
                } else {
                    LOG.warn("kstate: closing the parked store {} at {} failed ({}): {}", description, directory, why,
                        e.toString());
                }
            } finally {
                PARKED.remove(directory, this);
            }
        }
    }

    /**
     * The canonical form of a store directory: the registry's key.
     *
     * @param dir the directory (it need not exist)
     * @return its canonical path, or its absolute normalised path when it cannot be resolved
     */
    public static String canonical(File dir) {
        try {
            return dir.getCanonicalPath();
        } catch (IOException e) {
            return dir.toPath().toAbsolutePath().normalize().toString();
        }
    }

    /**
     * Parks an open store. A store already parked at the same directory (which cannot happen
     * unless something opened the directory without going through {@link #release}) is closed.
     *
     * @param directory the store's directory, as given to the native open
     * @param options what an adopter's open options must equal ({@code equals})
     * @param store the open native store, owned by the registry from now on
     * @param owner what the store belongs to (closed with it by {@link #closeOwnedBy}), or null
     * @param emptySinceCreation the store was created empty and nothing was written to it
     * @param deadlineMs close it for real if not adopted within this many milliseconds (> 0)
     * @param description the store, for messages
     */
    public static void park(File directory, Object options, AutoCloseable store, Object owner, boolean emptySinceCreation,
                            long deadlineMs, String description) {
        Objects.requireNonNull(store, "store");
        if (deadlineMs <= 0) {
            throw new IllegalArgumentException("deadline must be positive: " + deadlineMs);
        }
        installShutdownHook();
        Parked p = new Parked(canonical(directory), options, store, owner, emptySinceCreation, description);
        synchronized (p) {
            Parked previous = PARKED.put(p.directory, p);
            if (previous != null) {
                previous.close("another store was parked at the same directory");
                PARKED.put(p.directory, p);
            }
            p.deadline = CLOSER.schedule(() -> p.close("not adopted within " + deadlineMs + " ms"), deadlineMs,
                TimeUnit.MILLISECONDS);
        }
    }

    /**
     * Takes the store parked at {@code directory} if it was opened with equal options from the
     * same files; otherwise closes it (so that the directory can be opened) and returns null.
     *
     * @param directory the store's directory
     * @param options the options the caller would open it with
     * @param description the caller's store, for messages
     * @return the adopted entry, or null when nothing (usable) was parked there
     */
    public static Parked adopt(File directory, Object options, String description) {
        Parked p = PARKED.get(canonical(directory));
        if (p == null) {
            return null;
        }
        synchronized (p) {
            if (p.state != State.PARKED) {
                return null;
            }
            if (!Objects.equals(p.options, options)) {
                p.close("store " + description + " opens the directory with other options (" + options + ", parked with "
                    + p.options + ")");
                return null;
            }
            if (!p.sameFiles()) {
                p.close("the directory was deleted or replaced while the store was parked");
                return null;
            }
            p.state = State.ADOPTED;
            if (p.deadline != null) {
                p.deadline.cancel(false);
            }
            PARKED.remove(p.directory, p);
            return p;
        }
    }

    /**
     * Closes the store parked at {@code path}, if any, so that the caller can open it; waits
     * for a close under way. Every native open with a directory calls this first.
     *
     * @param path a store directory, or null (the memory engine: nothing to do)
     */
    public static void release(String path) {
        if (path == null || PARKED.isEmpty()) {
            return;
        }
        Parked p = PARKED.get(canonical(new File(path)));
        if (p != null) {
            p.close("the directory is being opened again");
        }
    }

    /**
     * Closes every store parked by {@code owner}.
     *
     * @param owner the owner given to {@link #park}
     * @param why the reason, for messages
     * @return the number of stores closed
     */
    public static int closeOwnedBy(Object owner, String why) {
        int n = 0;
        for (Parked p : new ArrayList<>(PARKED.values())) {
            if (p.owner != null && p.owner == owner) {
                p.close(why);
                n++;
            }
        }
        return n;
    }

    /**
     * Closes every parked store (JVM shutdown; tests).
     *
     * @param why the reason, for messages
     */
    public static void closeAll(String why) {
        for (Parked p : new ArrayList<>(PARKED.values())) {
            p.close(why);
        }
    }

    /** @return the canonical directories of the stores parked now */
    public static List<String> parkedDirectories() {
        return new ArrayList<>(PARKED.keySet());
    }

    private static void installShutdownHook() {
        if (hookInstalled) {
            return;
        }
        synchronized (ParkedStores.class) {
            if (!hookInstalled) {
                Runtime.getRuntime().addShutdownHook(new Thread(() -> closeAll("the JVM shuts down"),
                    "kstate-parked-store-shutdown"));
                hookInstalled = true;
            }
        }
    }

    /** kstate's lock file of a store directory: {@code <parent>/.<name>.kstate-lock} (src/store/lock.rs). */
    static File lockFile(File dir) {
        return new File(dir.getAbsoluteFile().getParentFile(), "." + dir.getName() + ".kstate-lock");
    }

    /** The file's identity (device and inode on Linux), or null when it is missing or the platform has none. */
    private static Object fileKey(File f) {
        try {
            Path p = f.toPath();
            return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
        } catch (IOException | UnsupportedOperationException e) {
            return null;
        }
    }
}
