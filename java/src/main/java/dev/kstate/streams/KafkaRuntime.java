package dev.kstate.streams;

/**
 * What the Kafka Streams runtime on the class path does, where kstate's stores must present
 * themselves differently to it (the jar runs on Kafka Streams 4.0 to 4.4).
 */
final class KafkaRuntime {
    /**
     * Whether Kafka Streams takes the changelog offset a persistent store restores from only from
     * the store itself ({@code StateStore#committedOffset}, Kafka Streams 4.3+), rather than
     * from the task's {@code .checkpoint} file (4.0 to 4.2). Found from the state manager's
     * method, not from the version string: an internal that is renamed or gone reads as
     * {@code false}, the safe answer (see {@link KstateSessionStore#persistent()}).
     */
    static final boolean RESTORE_OFFSETS_FROM_STORES = restoreOffsetsFromStores();

    private KafkaRuntime() {
    }

    private static boolean restoreOffsetsFromStores() {
        try {
            Class<?> manager = Class.forName("org.apache.kafka.streams.processor.internals.ProcessorStateManager");
            return hasMethod(manager, "initializeStoreOffsets") && !hasMethod(manager, "initializeStoreOffsetsFromCheckpoint");
        } catch (ClassNotFoundException | LinkageError | SecurityException e) {
            return false;
        }
    }

    private static boolean hasMethod(Class<?> c, String name) {
        try {
            c.getDeclaredMethod(name, boolean.class);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }
}
