//! JNI surface for the Java adapter (`dev.kstate.internal.KstateNative`).
//!
//! Thin, as DESIGN.md §6 asks: every native validates its arguments, calls the core and
//! converts the result. The layers are
//!
//! * [`declare`]: each native is declared once, as its body in plain Rust types (handles
//!   resolved in the process-wide table shared with C, the shared rules of `crate::bridge`
//!   applied, so a misuse fails exactly as on C; the Rust tests call these bodies without a
//!   JVM) from which the `extern "system"` function is generated; the natives every store
//!   kind has are declared once for all kinds;
//! * [`convert`]: how each Java argument and result type is converted, once per type;
//! * [`guard`]: the single conversion point. It runs the body of a native under `catch_unwind` (a
//!   panic never unwinds into the JVM) and turns an error into a typed Java exception that
//!   carries the stable [`crate::ErrorCode`] number;
//! * [`codec`]: the packed `byte[]` layouts of the batch calls (putAll, restore batches,
//!   range fetches), so a batch costs one JNI crossing instead of several per entry;
//! * [`natives`] (key-value stores, the open options, upgrade by swap) and [`segmented`]
//!   (window and session stores): the declarations.
//!
//! Stores and iterators are addressed by `jlong` handles from the one handle table of the
//! process (`crate::handle`, the same numbers the C API uses), tagged by kind: a closed,
//! forged, zero or wrong-kind handle gives `InvalidStateStoreException` with the same
//! code C reports (`STORE_CLOSED` / `ITERATOR_CLOSED` for a closed handle,
//! `INVALID_HANDLE` otherwise), never undefined behaviour.

pub mod codec;
mod convert;
mod declare;
mod guard;
mod natives;
mod segmented;
#[cfg(test)]
mod tests;

pub(crate) use convert::decode_java;
pub use guard::{exception_class_for, INVALID_STATE_CLASS, PROCESSOR_STATE_CLASS};
