package org.slf4j.impl;

import org.slf4j.helpers.NOPMDCAdapter;
import org.slf4j.spi.MDCAdapter;

/** No MDC in the test JVMs (SLF4J 1.7 binding contract). */
public final class StaticMDCBinder {
    /** The singleton SLF4J looks up. */
    public static final StaticMDCBinder SINGLETON = new StaticMDCBinder();

    private StaticMDCBinder() {
    }

    /** @return the singleton */
    public static StaticMDCBinder getSingleton() {
        return SINGLETON;
    }

    /** @return a no-op MDC adapter */
    public MDCAdapter getMDCA() {
        return new NOPMDCAdapter();
    }

    /** @return the adapter class name */
    public String getMDCAdapterClassStr() {
        return NOPMDCAdapter.class.getName();
    }
}
