//! JNI surface for the Java adapter (`dev.kstate.internal.KstateNative`).
//!
//! Thin, as DESIGN.md §6 asks: every native converts its arguments, calls the core and
//! converts the result. [`declare`] declares each native once, as a plain-Rust body (what
//! the tests call without a JVM) from which the `extern "system"` function is generated, and
//! the natives every store kind has once for all kinds; [`convert`] converts each Java type
//! once; [`guard`] is the single conversion point of errors and panics (a panic never
//! unwinds into the JVM) to typed Java exceptions carrying the stable [`crate::ErrorCode`];
//! [`codec`] is the packed `byte[]` layout of the batch calls (one crossing per batch);
//! [`natives`] (key-value stores), [`segmented`] (window, session) and [`versioned`] are the
//! declarations, [`remote`] those of checkpoints in an object store (feature `remote`).
//!
//! Stores and iterators are `jlong` handles of the process's one handle table
//! (`crate::handle`, the numbers C uses), tagged by kind: a closed, forged, zero or
//! wrong-kind handle gives `InvalidStateStoreException` with the code C reports
//! (`STORE_CLOSED` / `ITERATOR_CLOSED` for a closed handle, `INVALID_HANDLE` otherwise).

pub mod codec;
mod convert;
mod declare;
mod guard;
mod natives;
mod remote;
mod segmented;
#[cfg(test)]
mod tests;
mod versioned;

pub(crate) use convert::decode_java;
pub use guard::{exception_class_for, INVALID_STATE_CLASS, PROCESSOR_STATE_CLASS};
