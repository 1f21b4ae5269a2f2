package dev.kstate.streams;

import org.apache.kafka.streams.errors.InvalidStateStoreException;

/**
 * Kafka's {@link InvalidStateStoreException} for a closed kstate store or iterator, carrying
 * the native error code ({@link KstateException#STORE_CLOSED},
 * {@link KstateException#ITERATOR_CLOSED} or {@link KstateException#INVALID_HANDLE}).
 */
public class KstateInvalidStateStoreException extends InvalidStateStoreException implements KstateException {
    private static final long serialVersionUID = 1L;
    /** The native error code ({@code KSTATE_ERR_*}), serialized with the exception. */
    private final int errorCode;

    /**
     * Thrown by the native library and by the adapter.
     *
     * @param message what happened
     * @param errorCode the native error code
     */
    public KstateInvalidStateStoreException(String message, int errorCode) {
        super(message);
        this.errorCode = errorCode;
    }

    @Override
    public int errorCode() {
        return errorCode;
    }
}
