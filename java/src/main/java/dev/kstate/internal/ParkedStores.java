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
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadPoolExecutor;
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
 * parked). It is closed for real (a clean close: status recorded, memtables flushed or a small
 * log synced) when it is not adopted before its deadline (by a daemon thread), when its owner goes away
 * ({@link #closeOwnedBy}, e.g. the {@code KafkaStreams} instance closing), when anything else in
 * the process opens its directory ({@link #release}, called by every native open with a path),
 * and on JVM shutdown. Adoption requires the same open options and the same directory: a
 * directory deleted and created again (Kafka wiping a task) is a different store, so the parked
 * handle is closed and the directory opened normally.
 *
 * <p>{@link #preOpen} parks stores before anything initialises them: while Kafka's start-up
 * path opens one store, the same store of the other local tasks is opened by two background
 * threads, so that the path, which goes through the tasks one after another, adopts them open.
 * An adoption that finds such an open not started yet runs it itself; one under way, it waits
 * for.
 *
 * <p>Every transition of an entry happens under its monitor, so an adoption racing with a
 * deadline either gets the open store or waits for the close to finish (and then opens the
 * directory, whose lock the close released).
 */
public final class ParkedStores {
    private static final Logger LOG = LoggerFactory.getLogger(ParkedStores.class);
    private static final Map<String, Parked> PARKED = new ConcurrentHashMap<>();
    private static final ScheduledThreadPoolExecutor CLOSER = closer();
    /** Threads of {@link #preOpen}: two, so that the replays overlap on two cores beside the caller's own. */
    private static final ThreadPoolExecutor OPENERS = openers();
    private static volatile boolean hookInstalled;

    private ParkedStores() {
    }

    private static ThreadPoolExecutor openers() {
        java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
        ThreadPoolExecutor e = new ThreadPoolExecutor(2, 2, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "kstate-store-opener-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        e.allowCoreThreadTimeOut(true);
        return e;
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

    private enum State { OPENING, PARKED, ADOPTED, CLOSED }

    /** A parked store (or one being opened to be parked) and what an adoption must match. */
    public static final class Parked {
        private final String directory;
        private final Object options;
        private final Object owner;
        private final boolean emptySinceCreation;
        private final String description;
        private final long deadlineMs;
        /** Counted down once the store is open and parked, or will never be (a failed or cancelled pre-open). */
        private final CountDownLatch settled;
        /** The open of a pre-opened store; null for a store parked open. */
        private final Callable<AutoCloseable> open;
        private volatile Thread opener;
        private boolean started;
        private AutoCloseable store;
        private Object directoryKey;
        private Object lockKey;
        private long parkedAtNanos;
        private State state;
        private ScheduledFuture<?> deadline;

        /** The checks {@link #park} and {@link #preOpen} share; the entry is keyed by its canonical directory. */
        private Parked(File directory, Object options, AutoCloseable store, Callable<AutoCloseable> open, Object owner,
                       boolean emptySinceCreation, long deadlineMs, String description) {
            if (deadlineMs <= 0) {
                throw new IllegalArgumentException("deadline must be positive: " + deadlineMs);
            }
            installShutdownHook();
            // what an adopter must match
            this.directory = canonical(directory);
            this.options = options;
            this.owner = owner;
            this.emptySinceCreation = emptySinceCreation;
            this.description = description;
            // the life cycle
            this.open = open;
            this.state = State.OPENING;
            this.deadlineMs = deadlineMs;
            this.settled = new CountDownLatch(1);
            // a store handed over open has nothing left to open: it is settled by parkOpen()
            this.started = store != null;
        }

        /** Parks the store handed over open, once the entry is in the registry. */
        private void parkOpen(AutoCloseable s) {
            synchronized (this) {
                opened(s);
            }
            settled.countDown();
        }

        /** Records the open store, parked from now on, and starts its deadline. Under the monitor. */
        private void opened(AutoCloseable s) {
            store = s;
            directoryKey = fileKey(new File(directory));
            lockKey = fileKey(lockFile(new File(directory)));
            parkedAtNanos = System.nanoTime();
            state = State.PARKED;
            deadline = CLOSER.schedule(() -> close("not adopted within " + deadlineMs + " ms"), deadlineMs,
                TimeUnit.MILLISECONDS);
        }

        /**
         * Opens a pre-opened store, on whichever thread gets here first: a background opener,
         * or the adopter, which would otherwise wait for the opener to reach it.
         */
        private void runOpen() {
            Callable<AutoCloseable> o;
            synchronized (this) {
                if (state != State.OPENING || started) {
                    return;
                }
                started = true;
                opener = Thread.currentThread();
                o = open;
            }
            long t0 = System.nanoTime();
            AutoCloseable s = null;
            Exception failure = null;
            try {
                s = o.call();
            } catch (Exception e) {
                failure = e;
            } finally {
                opener = null;
            }
            synchronized (this) {
                if (failure != null) {
                    // The adopter opens the directory itself and reports what goes wrong.
                    state = State.CLOSED;
                    PARKED.remove(directory, this);
                    LOG.info("kstate store {}: could not open it ahead of Kafka Streams' start-up path: {}", description,
                        failure.toString());
                } else {
                    opened(s);
                    LOG.info("kstate store {}: pre-opened at {} in {} ms, for Kafka Streams' start-up path", description,
                        directory, (System.nanoTime() - t0) / 1_000_000);
                }
            }
            settled.countDown();
        }

        /** Waits until a pre-opened store is open, or failed, or was cancelled. */
        private void awaitSettled() {
            boolean interrupted = false;
            while (true) {
                try {
                    settled.await();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }

        /** @return the parked native store, now owned by the adopter */
        public synchronized AutoCloseable store() {
            return store;
        }

        /** @return whether the store was created empty by the parking init and nothing was written to it since */
        public boolean emptySinceCreation() {
            return emptySinceCreation;
        }

        /** @return whether the store was opened ahead of its initialisation ({@link #preOpen}), not parked by it */
        public boolean preOpened() {
            return open != null;
        }

        /** @return milliseconds since the store was parked (or, pre-opened, since its open completed) */
        public synchronized long parkedMillis() {
            return (System.nanoTime() - parkedAtNanos) / 1_000_000;
        }

        /** True when the directory and the store's lock file are the very files the store was parked with. */
        private boolean sameFiles() {
            File dir = new File(directory);
            return directoryKey != null && lockKey != null && directoryKey.equals(fileKey(dir))
                && lockKey.equals(fileKey(lockFile(dir)));
        }

        /**
         * Closes the store for real unless it was adopted or closed already; waits for a close
         * or an open under way. A pre-open not started yet is cancelled.
         */
        private void close(String why) {
            synchronized (this) {
                if (state == State.OPENING && !started) {
                    state = State.CLOSED;
                    PARKED.remove(directory, this);
                    settled.countDown();
                    LOG.info("kstate store {}: not opened ahead after all: {}", description, why);
                    return;
                }
            }
            if (opener == Thread.currentThread()) {
                return; // the open under way wants its own directory: nothing to close yet
            }
            awaitSettled();
            closeParked(why);
        }

        private synchronized void closeParked(String why) {
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
        Parked p = new Parked(directory, options, store, null, owner, emptySinceCreation, deadlineMs, description);
        Parked previous = PARKED.put(p.directory, p);
        if (previous != null) {
            CLOSER.execute(() -> previous.close("another store was parked at the same directory"));
        }
        p.parkOpen(store);
    }

    /**
     * Opens a store in the background ahead of its initialisation and parks it, so that the
     * initialisation adopts it: the write-ahead-log replays of several stores overlap instead
     * of running one after another. Does nothing when something is parked (or being opened)
     * at the directory already.
     *
     * @param directory the store's directory
     * @param options what an adopter's open options must equal
     * @param open opens the store (called at most once, on a background thread or the adopter's)
     * @param owner as for {@link #park}
     * @param deadlineMs as for {@link #park}, counted from the end of the open
     * @param description the store, for messages
     * @return true when the open was scheduled
     */
    public static boolean preOpen(File directory, Object options, Callable<AutoCloseable> open, Object owner,
                                  long deadlineMs, String description) {
        Objects.requireNonNull(open, "open");
        Parked p = new Parked(directory, options, null, open, owner, false, deadlineMs, description);
        if (PARKED.putIfAbsent(p.directory, p) != null) {
            return false;
        }
        OPENERS.execute(p::runOpen);
        return true;
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
        if (!Objects.equals(p.options, options)) {
            p.close("store " + description + " opens the directory with other options (" + options + ", parked with "
                + p.options + ")");
            return null;
        }
        p.runOpen(); // a pre-open no background thread has started yet: open it here rather than wait
        p.awaitSettled();
        synchronized (p) {
            if (p.state != State.PARKED) {
                return null;
            }
            if (!p.sameFiles()) {
                p.closeParked("the directory was deleted or replaced while the store was parked");
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
        if (p != null && p.opener != Thread.currentThread()) {
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
