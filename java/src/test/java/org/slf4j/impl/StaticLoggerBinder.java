package org.slf4j.impl;

import dev.kstate.streams.CapturedLogs;
import org.slf4j.ILoggerFactory;
import org.slf4j.spi.LoggerFactoryBinder;

/**
 * The SLF4J 1.7 binding of the test JVMs (in place of slf4j-nop): kstate's own log events are
 * recorded in {@link CapturedLogs} so tests can assert on them; everything else is dropped.
 */
public final class StaticLoggerBinder implements LoggerFactoryBinder {
    /** Declared for SLF4J's version check. */
    public static String REQUESTED_API_VERSION = "1.6.99";
    private static final StaticLoggerBinder SINGLETON = new StaticLoggerBinder();
    private final ILoggerFactory factory = new CapturedLogs.Factory();

    private StaticLoggerBinder() {
    }

    /** @return the binder SLF4J uses */
    public static StaticLoggerBinder getSingleton() {
        return SINGLETON;
    }

    @Override
    public ILoggerFactory getLoggerFactory() {
        return factory;
    }

    @Override
    public String getLoggerFactoryClassStr() {
        return CapturedLogs.Factory.class.getName();
    }
}
