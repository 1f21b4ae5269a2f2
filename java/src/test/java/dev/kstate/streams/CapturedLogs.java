package dev.kstate.streams;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.slf4j.ILoggerFactory;
import org.slf4j.Logger;
import org.slf4j.event.EventRecodingLogger;
import org.slf4j.event.Level;
import org.slf4j.event.SubstituteLoggingEvent;
import org.slf4j.helpers.MessageFormatter;
import org.slf4j.helpers.NOPLogger;
import org.slf4j.helpers.SubstituteLogger;

/**
 * The log events of kstate's loggers ({@code dev.kstate.*}) in this JVM, recorded by the test
 * SLF4J binding ({@code org.slf4j.impl.StaticLoggerBinder}). Other loggers (Kafka's) are
 * dropped, as slf4j-nop did, unless {@link #STDERR} prints them.
 */
public final class CapturedLogs {
    /**
     * System property: {@code true} also prints every INFO-or-higher event of every logger
     * (Kafka's too) to standard error, with its time, for timelines of child JVMs (the restart
     * race's {@code -PkeepLogs}).
     */
    public static final String STDERR = "kstate.test.log.stderr";
    private static final Queue<SubstituteLoggingEvent> EVENTS = new ConcurrentLinkedQueue<>();
    /** kstate's events: recorded, and printed too with {@link #STDERR}. */
    private static final Queue<SubstituteLoggingEvent> KSTATE = new ConcurrentLinkedQueue<SubstituteLoggingEvent>() {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean offer(SubstituteLoggingEvent e) {
            PRINTED.offer(e);
            java.util.function.Consumer<String> sink = forward;
            if (sink != null) {
                sink.accept(e.getLevel() + " " + e.getThreadName() + " "
                    + MessageFormatter.arrayFormat(e.getMessage(), e.getArgumentArray()).getMessage());
            }
            return EVENTS.offer(e);
        }
    };
    /** Kafka's state manager: what its start-up path read from the stores. Recorded apart from kstate's. */
    static final String STATE_MANAGER = "org.apache.kafka.streams.processor.internals.ProcessorStateManager";
    private static final Queue<SubstituteLoggingEvent> STATE_MANAGER_EVENTS = new ConcurrentLinkedQueue<>();
    private static final Queue<SubstituteLoggingEvent> STATE_MANAGER_SINK = new ConcurrentLinkedQueue<SubstituteLoggingEvent>() {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean offer(SubstituteLoggingEvent e) {
            PRINTED.offer(e);
            return STATE_MANAGER_EVENTS.offer(e);
        }
    };
    private static volatile java.util.function.Consumer<String> forward;
    /** Events printed with {@link #STDERR} (every logger's), else dropped. */
    private static final Queue<SubstituteLoggingEvent> PRINTED = new ConcurrentLinkedQueue<SubstituteLoggingEvent>() {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean offer(SubstituteLoggingEvent e) {
            if (Boolean.getBoolean(STDERR) && e.getLevel().toInt() >= Level.INFO.toInt()) {
                String msg = MessageFormatter.arrayFormat(e.getMessage(), e.getArgumentArray()).getMessage();
                System.err.printf("%tT.%<tL %s %s %s%n", e.getTimeStamp(), e.getLevel(), e.getThreadName(), msg);
            }
            return true;
        }
    };

    private CapturedLogs() {
    }

    /**
     * Hands every later kstate event to {@code sink} too, as {@code LEVEL thread message} (the
     * {@code EosApp} child reports them to its parent this way).
     *
     * @param sink the receiver, or null to stop
     */
    public static void forward(java.util.function.Consumer<String> sink) {
        forward = sink;
    }

    /** Forgets every recorded event. */
    public static void clear() {
        EVENTS.clear();
        STATE_MANAGER_EVENTS.clear();
    }

    /**
     * @param level the level
     * @return the formatted messages of Kafka's {@value #STATE_MANAGER} at that level, oldest first
     */
    public static List<String> stateManagerMessages(Level level) {
        return format(STATE_MANAGER_EVENTS, level);
    }

    /**
     * @param level the level
     * @return the formatted messages recorded at that level, oldest first
     */
    public static List<String> messages(Level level) {
        return format(EVENTS, level);
    }

    private static List<String> format(Queue<SubstituteLoggingEvent> events, Level level) {
        List<String> out = new ArrayList<>();
        for (SubstituteLoggingEvent e : events) {
            if (e.getLevel() == level) {
                out.add(MessageFormatter.arrayFormat(e.getMessage(), e.getArgumentArray()).getMessage());
            }
        }
        return out;
    }

    /**
     * @param level the level
     * @param fragment text to look for
     * @return the number of messages at that level containing the fragment
     */
    public static long count(Level level, String fragment) {
        return messages(level).stream().filter(m -> m.contains(fragment)).count();
    }

    /** The logger factory of the test binding. */
    public static final class Factory implements ILoggerFactory {
        @Override
        public Logger getLogger(String name) {
            if (name.startsWith("dev.kstate")) {
                return new EventRecodingLogger(new SubstituteLogger(name, KSTATE, false), KSTATE);
            }
            if (name.equals(STATE_MANAGER)) {
                return new EventRecodingLogger(new SubstituteLogger(name, STATE_MANAGER_SINK, false), STATE_MANAGER_SINK);
            }
            return Boolean.getBoolean(STDERR) ? new EventRecodingLogger(new SubstituteLogger(name, PRINTED, false), PRINTED)
                : NOPLogger.NOP_LOGGER;
        }
    }
}
