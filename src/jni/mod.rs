//! JNI surface for the Java adapter (`dev.kstate.internal.KstateNative`).
//!
//! Thin, as DESIGN.md §6 asks: every native validates its arguments, calls the core and
//! converts the result. The layers are
//!
//! * [`natives`]: the `extern "system"` functions, one line each, delegating to an `_impl`
//!   function that returns a [`Result`];
//! * [`guard`]: the single conversion point. It runs the `_impl` under `catch_unwind` (a
//!   panic never unwinds into the JVM) and turns an error into a typed Java exception that
//!   carries the stable [`crate::ErrorCode`] number;
//! * [`codec`]: the packed `byte[]` layouts of the batch calls (putAll, restore batches,
//!   range fetches), so a batch costs one JNI crossing instead of several per entry.
//!
//! Stores and iterators are addressed by `jlong` handles from a [`crate::handle::HandleTable`]:
//! a closed, forged or zero handle gives `InvalidStateStoreException`, never undefined
//! behaviour.

pub mod codec;
mod guard;
mod natives;

pub use guard::{exception_class_for, INVALID_STATE_CLASS, PROCESSOR_STATE_CLASS};
