//! JNI surface for the Java adapter (dev.kstate.internal). Thin: validate, call the core, convert.
