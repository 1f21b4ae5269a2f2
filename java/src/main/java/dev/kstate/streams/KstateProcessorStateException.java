package dev.kstate.streams;

import org.apache.kafka.streams.errors.ProcessorStateException;

/**
 * Kafka's {@link ProcessorStateException} for a kstate storage failure (open, read, write,
 * commit), carrying the native error code, e.g. {@link KstateException#LOCKED} when a second
 * instance opens a directory already in use.
 */
public class KstateProcessorStateException extends ProcessorStateException implements KstateException {
    private static final long serialVersionUID = 1L;
    /** The native error code ({@code KSTATE_ERR_*}), serialized with the exception. */
    private final int errorCode;

    /**
     * Thrown by the native library and by the adapter.
     *
     * @param message what happened
     * @param errorCode the native error code
     */
    public KstateProcessorStateException(String message, int errorCode) {
        super(message);
        this.errorCode = errorCode;
    }

    @Override
    public int errorCode() {
        return errorCode;
    }
}
