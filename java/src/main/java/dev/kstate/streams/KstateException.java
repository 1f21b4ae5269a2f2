package dev.kstate.streams;

/**
 * Implemented by every exception kstate throws: gives the stable native error code
 * (the same numbers as the C header's {@code KSTATE_ERR_*} constants).
 */
public interface KstateException {
    /** An argument was malformed. */
    int INVALID_ARGUMENT = 1;
    /** The store was closed. */
    int STORE_CLOSED = 2;
    /** The path holds neither a kstate nor a Kafka Streams store. */
    int NOT_A_STORE = 3;
    /** The store was written by a newer kstate. */
    int UNSUPPORTED_FORMAT = 4;
    /** Integrity checks failed. */
    int CORRUPTION = 5;
    /** Another process or another open instance holds the store directory. */
    int LOCKED = 6;
    /** A key is over the size limit (4 MiB). */
    int KEY_TOO_LARGE = 7;
    /** A value is over the size limit (256 MiB). */
    int VALUE_TOO_LARGE = 8;
    /** The store was created plain and opened timestamped, or the other way round. */
    int FORMAT_MISMATCH = 9;
    /** RocksDB reported an error. */
    int STORAGE = 10;
    /** A file-system operation failed. */
    int IO = 11;
    /** kstate failed internally (a caught panic); the operation did not happen. */
    int INTERNAL = 12;
    /** A native handle is not live (closed store or iterator). */
    int INVALID_HANDLE = 13;
    /** An iterator was used after it, or its store, was closed. */
    int ITERATOR_CLOSED = 14;
    /** A timestamped value is shorter than its 8-byte timestamp prefix. */
    int INVALID_VALUE = 15;
    /**
     * A commit was written but not confirmed durable. It will complete: the next call on the
     * store retries it first, and committed readers see the previous commit meanwhile.
     */
    int COMMIT_IN_DOUBT = 16;
    /** The operation does not exist for this kind of store (a checkpoint of a memory store). */
    int UNSUPPORTED = 17;

    /** @return the stable native error code, one of the constants above */
    int errorCode();
}
