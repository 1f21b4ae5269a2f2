/**
 * Internal: kstate's native loader and JNI bindings. <strong>Not an API</strong>: these
 * classes are public only because {@code dev.kstate.streams} uses them from another package;
 * they may change or disappear in any release, without notice or deprecation. Use
 * {@code dev.kstate.streams} ({@code KstateStores}, {@code KstateDslStoreSuppliers}).
 *
 * <p>One setting here is supported: the system property {@code kstate.native.dir}, the
 * directory {@link dev.kstate.internal.NativeLoader} extracts {@code libkstate} to (see there).
 */
package dev.kstate.internal;
