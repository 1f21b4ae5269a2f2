package dev.kstate.internal;

/**
 * An open-or-closed native store whose integer properties (RocksDB properties, statistics
 * tickers, kstate counters) can be read; what the store metrics read, whatever the store kind.
 */
public interface NativePropertySource {
    /** @return true until the store is closed */
    boolean isOpen();

    /**
     * @param name a RocksDB integer property, ticker or kstate counter
     * @return its value, or -1 when the store has none
     */
    long property(String name);
}
