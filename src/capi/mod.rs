//! C ABI surface (see `include/kstate.h`, generated from this module by `build.rs`).
//!
//! Thin: every entry point validates its arguments, calls the core and converts. The shape
//! of each function is the same:
//!
//! * out-parameters are set to their "nothing" value on entry;
//! * the body runs inside [`error::ffi_call`], which catches panics and is the one place a
//!   `Result` becomes a `kstate_error_t*` (NULL = success);
//! * handles are numbers of the process-wide table shared with JNI ([`crate::handle`]):
//!   a `kstate_kv_t*` or `kstate_kv_iter_t*` is never a pointer to Rust memory, so NULL,
//!   closed, forged and wrong-kind handles are looked up and rejected, never dereferenced;
//! * rules shared with JNI (paths, handles, batches) live in [`crate::bridge`].
//!
//! Names follow DESIGN.md §5: functions `kstate_*`, types `kstate_*_t`, constants
//! `KSTATE_*`. Those names are the C API, hence the non-Rust casing.

#![allow(non_camel_case_types)]

mod bytes;
mod error;
mod iter;
mod kv;
mod options;
mod segmented_options;
mod session;
mod shared;
mod sized;
#[cfg(test)]
mod tests;
mod window;
#[cfg(test)]
mod window_tests;

pub use bytes::{kstate_bytes_free, kstate_bytes_t};
pub use error::{
    kstate_error_code, kstate_error_code_name, kstate_error_free, kstate_error_message,
    kstate_error_t,
};
pub use iter::{
    kstate_kv_all, kstate_kv_batch_free, kstate_kv_batch_t, kstate_kv_entry_t,
    kstate_kv_iter_next_batch, kstate_kv_iter_t, kstate_kv_prefix_scan, kstate_kv_range,
    kstate_kv_reverse_all, kstate_kv_reverse_range, kstate_kv_scan,
};
pub use kv::{
    kstate_kv_approximate_num_entries, kstate_kv_delete, kstate_kv_delete_raw, kstate_kv_get,
    kstate_kv_get_committed, kstate_kv_get_raw, kstate_kv_is_upgrading, kstate_kv_put,
    kstate_kv_put_all, kstate_kv_put_all_raw, kstate_kv_put_if_absent, kstate_kv_put_if_absent_raw,
    kstate_kv_put_raw, kstate_kv_restore_batch, kstate_kv_t, kstate_kv_upgrade_swap,
    kstate_kv_write_t, kstate_offset_t, kstate_progress_fn,
};
pub use options::{
    kstate_engine_t, kstate_kv_options_init, kstate_kv_options_t, kstate_session_options_init,
    kstate_value_format_t, kstate_window_options_init, KSTATE_ENGINE_MEMORY, KSTATE_ENGINE_ROCKSDB,
    KSTATE_FORMAT_PLAIN, KSTATE_FORMAT_TIMESTAMPED, KSTATE_KV_OPTIONS_SIZE_V1,
    KSTATE_KV_OPTIONS_SIZE_V2,
};
pub use segmented_options::{
    kstate_session_options_t, kstate_window_options_t, KSTATE_SESSION_OPTIONS_SIZE_V1,
    KSTATE_SESSION_OPTIONS_SIZE_V2, KSTATE_WINDOW_OPTIONS_SIZE_V1, KSTATE_WINDOW_OPTIONS_SIZE_V2,
};
pub use session::{
    kstate_session_backward_fetch, kstate_session_backward_fetch_range,
    kstate_session_backward_find_sessions, kstate_session_backward_find_sessions_range,
    kstate_session_fetch, kstate_session_fetch_range, kstate_session_fetch_session,
    kstate_session_find_sessions, kstate_session_find_sessions_by_end,
    kstate_session_find_sessions_range, kstate_session_iter_next, kstate_session_iter_t,
    kstate_session_put, kstate_session_remove, kstate_session_t,
};
pub use shared::{
    kstate_kv_approximate_num_uncommitted_bytes, kstate_kv_close, kstate_kv_commit,
    kstate_kv_committed_metadata, kstate_kv_committed_offset, kstate_kv_iter_close, kstate_kv_open,
    kstate_kv_rollback, kstate_session_approximate_num_uncommitted_bytes, kstate_session_close,
    kstate_session_commit, kstate_session_committed_metadata, kstate_session_committed_offset,
    kstate_session_iter_close, kstate_session_open, kstate_session_rollback,
    kstate_window_approximate_num_uncommitted_bytes, kstate_window_close, kstate_window_commit,
    kstate_window_committed_metadata, kstate_window_committed_offset, kstate_window_iter_close,
    kstate_window_open, kstate_window_rollback,
};
pub use window::{
    kstate_window_all, kstate_window_backward_all, kstate_window_backward_fetch_all,
    kstate_window_backward_fetch_key_range, kstate_window_backward_fetch_range,
    kstate_window_fetch, kstate_window_fetch_all, kstate_window_fetch_key_range,
    kstate_window_fetch_range, kstate_window_fetch_raw, kstate_window_iter_next,
    kstate_window_iter_t, kstate_window_put, kstate_window_put_raw, kstate_window_t,
};

use std::ffi::c_char;

pub(crate) use sized::OptionsStruct;

use crate::{Error, Isolation, Result};

/// Major version of the library this header belongs to (semantic versioning).
pub const KSTATE_VERSION_MAJOR: u32 = 0;
/// Minor version of the library this header belongs to.
pub const KSTATE_VERSION_MINOR: u32 = 1;
/// Patch version of the library this header belongs to.
pub const KSTATE_VERSION_PATCH: u32 = 0;

/// Largest key accepted, in bytes (4 MiB).
pub const KSTATE_MAX_KEY_BYTES: usize = 4_194_304;
/// Largest value accepted, in bytes, timestamp prefix included (256 MiB).
pub const KSTATE_MAX_VALUE_BYTES: usize = 268_435_456;

/// What `kstate_error_code(NULL)` returns: no error.
pub const KSTATE_OK: i32 = 0;
/// An argument was malformed: a NULL pointer where one is required, NULL data with a
/// non-zero length, an empty path, a topic that is not UTF-8, an option or enum value out
/// of range.
pub const KSTATE_ERR_INVALID_ARGUMENT: i32 = 1;
/// The store was closed (also: a store handle used after `kstate_kv_close`, double close).
pub const KSTATE_ERR_STORE_CLOSED: i32 = 2;
/// The path holds neither a kstate store nor a Kafka Streams RocksDB store.
pub const KSTATE_ERR_NOT_A_STORE: i32 = 3;
/// The store was written by a newer kstate whose format this build cannot read.
pub const KSTATE_ERR_UNSUPPORTED_FORMAT: i32 = 4;
/// Stored data kstate relies on failed its integrity checks.
pub const KSTATE_ERR_CORRUPTION: i32 = 5;
/// Another process or another open handle holds the store.
pub const KSTATE_ERR_LOCKED: i32 = 6;
/// A key is longer than `KSTATE_MAX_KEY_BYTES`.
pub const KSTATE_ERR_KEY_TOO_LARGE: i32 = 7;
/// A value is longer than `KSTATE_MAX_VALUE_BYTES`.
pub const KSTATE_ERR_VALUE_TOO_LARGE: i32 = 8;
/// The store has the other value format (plain vs timestamped), or a timestamped-only
/// function was called on a plain store.
pub const KSTATE_ERR_FORMAT_MISMATCH: i32 = 9;
/// The storage engine (RocksDB) reported an error.
pub const KSTATE_ERR_STORAGE: i32 = 10;
/// A file-system operation failed.
pub const KSTATE_ERR_IO: i32 = 11;
/// kstate failed internally (a caught panic); the operation did not happen. Please report.
pub const KSTATE_ERR_INTERNAL: i32 = 12;
/// A handle is NULL, not a handle kstate issued, or a handle of the other kind (an
/// iterator handle passed as a store handle, or back; open or closed).
pub const KSTATE_ERR_INVALID_HANDLE: i32 = 13;
/// An iterator was used after it, or its store, was closed (also: double iterator close).
pub const KSTATE_ERR_ITERATOR_CLOSED: i32 = 14;
/// A timestamped value is shorter than its 8-byte timestamp prefix.
pub const KSTATE_ERR_INVALID_VALUE: i32 = 15;
/// A commit was written but not confirmed durable (the storage failed on the way). It will
/// complete: the next call on the store (retry `kstate_kv_commit`, or any other) retries it
/// first; committed readers see the previous commit meanwhile. If the process ends first,
/// the next open completes it or keeps the previous commit (`kstate_kv_committed_offset`
/// tells which). Until the retry succeeds, every call that works on the writer's
/// transaction (writes, uncommitted reads and ranges, commit, restore, rollback, close)
/// returns this code again and does nothing else.
pub const KSTATE_ERR_COMMIT_IN_DOUBT: i32 = 16;

/// Which data a read sees: `KSTATE_READ_UNCOMMITTED` or `KSTATE_READ_COMMITTED`.
pub type kstate_isolation_t = u32;
/// The writer's view: committed data plus the store's uncommitted writes.
pub const KSTATE_READ_UNCOMMITTED: kstate_isolation_t = 0;
/// Committed data only, as of the last completed commit.
pub const KSTATE_READ_COMMITTED: kstate_isolation_t = 1;

// Handles travel as pointer values; the table's 64-bit numbers must fit.
#[cfg(not(target_pointer_width = "64"))]
compile_error!("the kstate C API needs 64-bit pointers to carry its 64-bit handles");

/// The handle number an opaque C handle carries (NULL is 0, the null handle).
pub(crate) fn number<P>(handle: *const P) -> u64 {
    handle as usize as u64
}

/// The opaque C handle that carries handle number `h`.
pub(crate) fn pointer<P>(h: u64) -> *mut P {
    h as usize as *mut P
}

pub(crate) fn isolation(value: kstate_isolation_t) -> Result<Isolation> {
    match value {
        KSTATE_READ_UNCOMMITTED => Ok(Isolation::ReadUncommitted),
        KSTATE_READ_COMMITTED => Ok(Isolation::ReadCommitted),
        other => Err(Error::InvalidArgument(format!(
            "isolation {other} is not a KSTATE_READ_* value"
        ))),
    }
}

/// The library's version, e.g. `"0.1.0"`. Compare with the `KSTATE_VERSION_*` macros to
/// detect a header/library mismatch.
///
/// # Returns
/// A static NUL-terminated string; never NULL, never freed.
#[no_mangle]
pub extern "C" fn kstate_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
