//! JNI surface for the Java adapter (`dev.kstate.internal.KstateNative`).
//!
//! Thin, as DESIGN.md §6 asks: every native validates its arguments, calls the core and
//! converts the result. The layers are
//!
//! * [`natives`]: the `extern "system"` functions: they convert Java arguments and results
//!   and call [`ops`];
//! * [`ops`]: the body of each native in plain Rust types. Handles are resolved in the
//!   process-wide table shared with C and the shared rules of `crate::bridge` apply, so a
//!   misuse fails exactly as on C; the Rust tests drive this layer without a JVM;
//! * [`guard`]: the single conversion point. It runs the body of a native under `catch_unwind` (a
//!   panic never unwinds into the JVM) and turns an error into a typed Java exception that
//!   carries the stable [`crate::ErrorCode`] number;
//! * [`codec`]: the packed `byte[]` layouts of the batch calls (putAll, restore batches,
//!   range fetches), so a batch costs one JNI crossing instead of several per entry.
//!
//! Stores and iterators are addressed by `jlong` handles from the one handle table of the
//! process (`crate::handle`, the same numbers the C API uses), tagged by kind: a closed,
//! forged, zero or wrong-kind handle gives `InvalidStateStoreException` with the same
//! code C reports (`STORE_CLOSED` / `ITERATOR_CLOSED` for a closed handle,
//! `INVALID_HANDLE` otherwise), never undefined behaviour.

mod adoption_natives;
pub mod codec;
mod declare;
mod guard;
mod natives;
mod ops;
mod segmented_natives;
mod segmented_ops;
mod swap_natives;
#[cfg(test)]
mod tests;

pub use guard::{exception_class_for, INVALID_STATE_CLASS, PROCESSOR_STATE_CLASS};
pub(crate) use natives::decode_java;
