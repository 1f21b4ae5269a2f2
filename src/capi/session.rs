//! Session store functions (Kafka's `SessionStore`): open/close, put/remove,
//! fetchSession, the findSessions and fetch queries and their iterators, transactions.

use std::ffi::c_char;
use std::sync::Arc;

use super::bytes::{cstr, init, kstate_bytes_t, opt_span, out, span};
use super::error::{ffi_call, kstate_error_t};
use super::kv::kstate_offset_t;
use super::segmented_options::kstate_session_options_t;
use super::{isolation, kstate_isolation_t, number, pointer, txn};
use crate::bridge::{self, SessionIterHandle};
use crate::format::segmented::parse_session_key;
use crate::handle::HANDLES;
use crate::store::SessionQuery;
use crate::{Result, SessionStore};

/// An open session store (Kafka's `SessionStore`: aggregates keyed by record key and
/// session start and end). Opaque handle number from the table `kstate_kv_t` uses: a
/// NULL, made-up or wrong-kind handle is `KSTATE_ERR_INVALID_HANDLE`, a closed one
/// `KSTATE_ERR_STORE_CLOSED`; numbers are never reused. Released by `kstate_session_close`.
///
/// Thread safety: as `kstate_kv_t`.
pub struct kstate_session_t {
    _opaque: [u8; 0],
}

/// An iterator over sessions, in Kafka's order, fixed when it was created. Opaque handle
/// number as `kstate_session_t` (wrong kind: `KSTATE_ERR_INVALID_HANDLE`; released:
/// `KSTATE_ERR_ITERATOR_CLOSED`). Closing its store closes it; the handle must still be
/// released with `kstate_session_iter_close`.
///
/// Thread safety: usable from any thread; concurrent calls on one iterator are serialised.
pub struct kstate_session_iter_t {
    _opaque: [u8; 0],
}

fn store(handle: *const kstate_session_t) -> Result<Arc<SessionStore>> {
    HANDLES.get::<SessionStore>(number(handle))
}

/// Opens (creating it if absent) and recovers the session store at `path`.
///
/// # Arguments
/// * `path` - NUL-terminated directory path, not empty. For the memory engine it only
///   names the store and may be NULL.
/// * `options` - options from `kstate_session_options_init`, possibly changed; NULL means
///   the defaults (RocksDB, retention 1 day).
/// * `store_out` - receives the store handle; set to NULL on entry and on failure.
///
/// # Returns
/// NULL on success, else an error (free it with `kstate_error_free`).
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `store_out` NULL; `path` NULL for RocksDB or empty;
///   an unknown `struct_size`; an option out of range (unknown engine, negative retention
///   or segment interval, the limits of `kstate_kv_open`).
/// * `KSTATE_ERR_LOCKED` - another handle or process has the store open.
/// * `KSTATE_ERR_FORMAT_MISMATCH` - `path` holds a store of another kind.
/// * `KSTATE_ERR_NOT_A_STORE`, `KSTATE_ERR_UNSUPPORTED_FORMAT`, `KSTATE_ERR_CORRUPTION`,
///   `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - what is at `path` cannot be opened.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `options` is NULL or points to a
/// `kstate_session_options_t` initialised by `kstate_session_options_init`; `store_out` is
/// NULL or valid for writing one pointer.
///
/// # Thread safety
/// Safe to call from any thread.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_open(
    path: *const c_char,
    options: *const kstate_session_options_t,
    store_out: *mut *mut kstate_session_t,
) -> *mut kstate_error_t {
    // SAFETY: `store_out` is NULL or writable (caller's guarantee).
    unsafe { init(store_out, std::ptr::null_mut()) };
    ffi_call(|| {
        // SAFETY: as above; initialised just before.
        let store_out = unsafe { out(store_out, "store_out")? };
        // SAFETY: NULL or an initialised options struct (caller's guarantee).
        let options = unsafe { kstate_session_options_t::read(options)? }.to_session_options()?;
        let path = if path.is_null() {
            None
        } else {
            // SAFETY: non-NULL and NUL-terminated (caller's guarantee).
            Some(unsafe { cstr(path, "path")? }.to_bytes())
        };
        *store_out = pointer(bridge::open_session_store(path, &options)?);
        Ok(())
    })
}

/// Closes a session store: uncommitted writes are discarded, its iterators are closed, the
/// handle becomes invalid.
///
/// # Arguments
/// * `store` - the session store handle.
///
/// # Returns
/// NULL on success, else an error. The handle is invalid afterwards in both cases,
/// unless the error is `KSTATE_ERR_INVALID_HANDLE` / `KSTATE_ERR_STORE_CLOSED`.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE` - `store` NULL, never issued, or not a session store.
/// * `KSTATE_ERR_STORE_CLOSED` - already closed (double close).
/// * `KSTATE_ERR_COMMIT_IN_DOUBT`, `KSTATE_ERR_STORAGE` - as `kstate_kv_close` (which
///   also says what a successful close guarantees); the store is closed anyway.
///
/// # Safety
/// None required: the handle is never dereferenced.
///
/// # Thread safety
/// Safe from any thread, also while others use the store.
#[must_use]
#[no_mangle]
pub extern "C" fn kstate_session_close(store: *mut kstate_session_t) -> *mut kstate_error_t {
    ffi_call(|| bridge::close_session_store(number(store)))
}

/// Kafka's `put(Windowed(key, SessionWindow(start, end)), aggregate)` in the current
/// transaction. The write advances the stream time to `end`; a session already expired by
/// the stream time is dropped silently, as in Kafka.
///
/// # Arguments
/// * `store` - a session store.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `start`, `end` - the session's start and end (ms).
/// * `aggregate`, `aggregate_len` - the aggregate, stored as given; NULL only when
///   `aggregate_len` is 0 (the empty aggregate; use `kstate_session_remove` to delete).
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL data with a non-zero length.
/// * `KSTATE_ERR_KEY_TOO_LARGE` (over `KSTATE_MAX_KEY_BYTES` - 16),
///   `KSTATE_ERR_VALUE_TOO_LARGE`.
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - spilling the transaction failed.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - an earlier commit is in doubt and finishing it failed
///   again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// `key` / `aggregate` are NULL or readable for their lengths.
///
/// # Thread safety
/// Safe from any thread; writes are serialised.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_put(
    store: *mut kstate_session_t,
    key: *const u8,
    key_len: usize,
    start: i64,
    end: i64,
    aggregate: *const u8,
    aggregate_len: usize,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = self::store(store)?;
        // SAFETY: spans readable as given (caller's guarantee), used during the call only.
        let (key, aggregate) = unsafe {
            (
                span(key, key_len, "key")?,
                span(aggregate, aggregate_len, "aggregate")?,
            )
        };
        s.put(key, start, end, Some(aggregate)).map(drop)
    })
}

/// Kafka's `remove(Windowed(key, SessionWindow(start, end)))`: deletes the session (the
/// stream time advances to `end`, as in Kafka 4.4).
///
/// # Arguments
/// * `store` - a session store.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `start`, `end` - the session's start and end.
///
/// # Returns
/// NULL on success (also when there was no such session), else an error.
///
/// # Errors
/// As `kstate_session_put`.
///
/// # Safety
/// `key` is NULL or readable for `key_len` bytes.
///
/// # Thread safety
/// As `kstate_session_put`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_remove(
    store: *mut kstate_session_t,
    key: *const u8,
    key_len: usize,
    start: i64,
    end: i64,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = self::store(store)?;
        // SAFETY: readable as given (caller's guarantee), used during the call only.
        let key = unsafe { span(key, key_len, "key")? };
        s.remove(key, start, end)
    })
}

/// Kafka's `fetchSession(key, start, end)`: the aggregate of exactly that session.
///
/// # Arguments
/// * `store` - a session store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` (the writer's view) or
///   `KSTATE_READ_COMMITTED`.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `start`, `end` - the session's start and end.
/// * `aggregate_out` - receives the aggregate (free with `kstate_bytes_free`);
///   `{NULL, 0}` on entry and when not found.
/// * `found_out` - true when the session exists and has not expired; false on entry.
///
/// # Returns
/// NULL on success (found or not), else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - a NULL out-parameter, NULL key with non-zero length,
///   an unknown isolation.
/// * `KSTATE_ERR_KEY_TOO_LARGE`, `KSTATE_ERR_STORAGE`.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - an earlier commit is in doubt and finishing it failed
///   again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// `key` NULL or readable for `key_len` bytes; out-parameters NULL or writable.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kstate_session_fetch_session(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    start: i64,
    end: i64,
    aggregate_out: *mut kstate_bytes_t,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(aggregate_out, kstate_bytes_t::NONE);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above; key readable as given.
        let (aggregate_out, found_out, key) = unsafe {
            (
                out(aggregate_out, "aggregate_out")?,
                out(found_out, "found_out")?,
                span(key, key_len, "key")?,
            )
        };
        let isolation = self::isolation(isolation)?;
        if let Some(v) = self::store(store)?.fetch_session_with(isolation, key, start, end)? {
            *aggregate_out = kstate_bytes_t::from_vec(v);
            *found_out = true;
        }
        Ok(())
    })
}

/// Opens an iterator for a query and publishes it through `iter_out`.
///
/// # Safety
/// `iter_out` is NULL or writable.
unsafe fn query(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    query: impl FnOnce() -> Result<SessionQuery>,
    reverse: bool,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(iter_out, std::ptr::null_mut()) };
    ffi_call(|| {
        // SAFETY: initialised above.
        let iter_out = unsafe { out(iter_out, "iter_out")? };
        let isolation = self::isolation(isolation)?;
        let query = query()?;
        let it = bridge::open_session_iter(number(store), |s| s.query(isolation, &query, reverse))?;
        *iter_out = pointer(it);
        Ok(())
    })
}

/// # Safety
/// `key` NULL or readable for `key_len` bytes; `iter_out` NULL or writable.
#[allow(clippy::too_many_arguments)]
unsafe fn key_query(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    earliest_end: i64,
    latest_start: i64,
    reverse: bool,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    let make = || {
        // SAFETY: readable as given (caller's guarantee); copied at once.
        let key = unsafe { span(key, key_len, "key")? }.to_vec();
        Ok(SessionQuery::Key {
            key,
            earliest_end,
            latest_start,
        })
    };
    // SAFETY: forwarded; same contract.
    unsafe { query(store, isolation, make, reverse, iter_out) }
}

/// # Safety
/// Bounds NULL or readable for their lengths; `iter_out` NULL or writable.
unsafe fn key_range_query(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key_from: (*const u8, usize),
    key_to: (*const u8, usize),
    (earliest_end, latest_start): (i64, i64),
    reverse: bool,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    let make = || {
        // SAFETY: readable as given (caller's guarantee); copied at once.
        let (key_from, key_to) = unsafe {
            (
                opt_span(key_from.0, key_from.1, "key_from")?.map(<[u8]>::to_vec),
                opt_span(key_to.0, key_to.1, "key_to")?.map(<[u8]>::to_vec),
            )
        };
        Ok(SessionQuery::KeyRange {
            key_from,
            key_to,
            earliest_end,
            latest_start,
        })
    };
    // SAFETY: forwarded; same contract.
    unsafe { query(store, isolation, make, reverse, iter_out) }
}

/// Kafka's `findSessions(key, earliestSessionEndTime, latestSessionStartTime)`: the
/// sessions of `key` that end at or after `earliest_end` and start at or before
/// `latest_start` (the sessions a new record may merge with), by ascending end, then start.
///
/// # Arguments
/// * `store` - a session store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` or `KSTATE_READ_COMMITTED`.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `earliest_end`, `latest_start` - the bounds, inclusive.
/// * `iter_out` - receives the iterator (release it with `kstate_session_iter_close`);
///   NULL on entry and on failure.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `iter_out` NULL, NULL key with non-zero length, an
///   unknown isolation.
/// * `KSTATE_ERR_STORAGE`.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - an earlier commit is in doubt and finishing it failed
///   again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// `key` NULL or readable for `key_len` bytes (copied); `iter_out` NULL or writable.
///
/// # Thread safety
/// Safe from any thread; the iterator sees its view as of its creation.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_find_sessions(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    earliest_end: i64,
    latest_start: i64,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        key_query(
            store,
            isolation,
            key,
            key_len,
            earliest_end,
            latest_start,
            false,
            iter_out,
        )
    }
}

/// Kafka's `backwardFindSessions(key, earliestSessionEndTime, latestSessionStartTime)`:
/// `kstate_session_find_sessions` in reverse order.
///
/// # Arguments
/// As `kstate_session_find_sessions`.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_session_find_sessions`.
///
/// # Safety
/// As `kstate_session_find_sessions`.
///
/// # Thread safety
/// As `kstate_session_find_sessions`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_backward_find_sessions(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    earliest_end: i64,
    latest_start: i64,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        key_query(
            store,
            isolation,
            key,
            key_len,
            earliest_end,
            latest_start,
            true,
            iter_out,
        )
    }
}

/// Kafka's `findSessions(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime)`:
/// as `kstate_session_find_sessions` for the keys in `[key_from, key_to]`, in Kafka's
/// order (segment by segment of session ends; within one by key bytes, end, start).
///
/// # Arguments
/// * `store` - a session store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` or `KSTATE_READ_COMMITTED`.
/// * `key_from`, `key_from_len` - lowest key, inclusive; NULL (with length 0) leaves it
///   open (a non-NULL pointer with length 0 is the empty key).
/// * `key_to`, `key_to_len` - highest key, inclusive; NULL leaves it open. Empty when
///   `key_from > key_to`.
/// * `earliest_end`, `latest_start` - the bounds, inclusive.
/// * `iter_out` - receives the iterator; NULL on entry and on failure.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_session_find_sessions`.
///
/// # Safety
/// Bounds NULL or readable for their lengths (copied); `iter_out` NULL or writable.
///
/// # Thread safety
/// As `kstate_session_find_sessions`.
#[must_use]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kstate_session_find_sessions_range(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key_from: *const u8,
    key_from_len: usize,
    key_to: *const u8,
    key_to_len: usize,
    earliest_end: i64,
    latest_start: i64,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        key_range_query(
            store,
            isolation,
            (key_from, key_from_len),
            (key_to, key_to_len),
            (earliest_end, latest_start),
            false,
            iter_out,
        )
    }
}

/// Kafka's `backwardFindSessions(keyFrom, keyTo, ...)`:
/// `kstate_session_find_sessions_range` in reverse order.
///
/// # Arguments
/// As `kstate_session_find_sessions_range`.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_session_find_sessions`.
///
/// # Safety
/// As `kstate_session_find_sessions_range`.
///
/// # Thread safety
/// As `kstate_session_find_sessions`.
#[must_use]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kstate_session_backward_find_sessions_range(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key_from: *const u8,
    key_from_len: usize,
    key_to: *const u8,
    key_to_len: usize,
    earliest_end: i64,
    latest_start: i64,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        key_range_query(
            store,
            isolation,
            (key_from, key_from_len),
            (key_to, key_to_len),
            (earliest_end, latest_start),
            true,
            iter_out,
        )
    }
}

/// Kafka's `fetch(key)`: every live session of `key`
/// (`findSessions(key, 0, INT64_MAX)`).
///
/// # Arguments
/// * `store` - a session store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` or `KSTATE_READ_COMMITTED`.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `iter_out` - receives the iterator; NULL on entry and on failure.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_session_find_sessions`.
///
/// # Safety
/// As `kstate_session_find_sessions`.
///
/// # Thread safety
/// As `kstate_session_find_sessions`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_fetch(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe { key_query(store, isolation, key, key_len, 0, i64::MAX, false, iter_out) }
}

/// Kafka's `backwardFetch(key)`: `kstate_session_fetch` in reverse order.
///
/// # Arguments
/// As `kstate_session_fetch`.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_session_find_sessions`.
///
/// # Safety
/// As `kstate_session_find_sessions`.
///
/// # Thread safety
/// As `kstate_session_find_sessions`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_backward_fetch(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe { key_query(store, isolation, key, key_len, 0, i64::MAX, true, iter_out) }
}

/// Kafka's `fetch(keyFrom, keyTo)`: every live session of the keys in
/// `[key_from, key_to]` (`findSessions(keyFrom, keyTo, 0, INT64_MAX)`).
///
/// # Arguments
/// * `store` - a session store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` or `KSTATE_READ_COMMITTED`.
/// * `key_from`, `key_from_len`, `key_to`, `key_to_len` - as for
///   `kstate_session_find_sessions_range` (NULL = open end).
/// * `iter_out` - receives the iterator; NULL on entry and on failure.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_session_find_sessions`.
///
/// # Safety
/// As `kstate_session_find_sessions_range`.
///
/// # Thread safety
/// As `kstate_session_find_sessions`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_fetch_range(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key_from: *const u8,
    key_from_len: usize,
    key_to: *const u8,
    key_to_len: usize,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        key_range_query(
            store,
            isolation,
            (key_from, key_from_len),
            (key_to, key_to_len),
            (0, i64::MAX),
            false,
            iter_out,
        )
    }
}

/// Kafka's `backwardFetch(keyFrom, keyTo)`: `kstate_session_fetch_range` in reverse order.
///
/// # Arguments
/// As `kstate_session_fetch_range`.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_session_find_sessions`.
///
/// # Safety
/// As `kstate_session_find_sessions_range`.
///
/// # Thread safety
/// As `kstate_session_find_sessions`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_backward_fetch_range(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    key_from: *const u8,
    key_from_len: usize,
    key_to: *const u8,
    key_to_len: usize,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        key_range_query(
            store,
            isolation,
            (key_from, key_from_len),
            (key_to, key_to_len),
            (0, i64::MAX),
            true,
            iter_out,
        )
    }
}

/// The next session of an iterator.
///
/// # Arguments
/// * `iter` - the iterator.
/// * `key_out` - receives the record key (free with `kstate_bytes_free`); `{NULL, 0}` on
///   entry and at the end.
/// * `aggregate_out` - receives the aggregate (free with `kstate_bytes_free`); `{NULL, 0}`
///   on entry and at the end.
/// * `start_out`, `end_out` - the session's start and end; 0 on entry.
/// * `found_out` - true when a session was returned, false at the end; false on entry.
///
/// # Returns
/// NULL on success (a session or the end), else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE` - `iter` NULL, never issued, or not a session iterator.
/// * `KSTATE_ERR_ITERATOR_CLOSED` - the iterator or its store was closed.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - a NULL out-parameter.
/// * `KSTATE_ERR_STORAGE`.
///
/// # Safety
/// Out-parameters NULL or writable.
///
/// # Thread safety
/// Safe from any thread; calls on one iterator are serialised.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_iter_next(
    iter: *mut kstate_session_iter_t,
    key_out: *mut kstate_bytes_t,
    aggregate_out: *mut kstate_bytes_t,
    start_out: *mut i64,
    end_out: *mut i64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(key_out, kstate_bytes_t::NONE);
        init(aggregate_out, kstate_bytes_t::NONE);
        init(start_out, 0);
        init(end_out, 0);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above.
        let (key_out, aggregate_out, start_out, end_out, found_out) = unsafe {
            (
                out(key_out, "key_out")?,
                out(aggregate_out, "aggregate_out")?,
                out(start_out, "start_out")?,
                out(end_out, "end_out")?,
                out(found_out, "found_out")?,
            )
        };
        let it = HANDLES.get::<SessionIterHandle>(number(iter))?;
        let Some((kafka_key, aggregate)) = it.0.next_batch(1, usize::MAX)?.pop() else {
            return Ok(());
        };
        let (key, start, end) = parse_session_key(&kafka_key)?;
        *key_out = kstate_bytes_t::from_vec(key.to_vec());
        *aggregate_out = kstate_bytes_t::from_vec(aggregate);
        *start_out = start;
        *end_out = end;
        *found_out = true;
        Ok(())
    })
}

/// Releases a session iterator.
///
/// # Arguments
/// * `iter` - the iterator.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE` - `iter` NULL, never issued, or not a session iterator.
/// * `KSTATE_ERR_ITERATOR_CLOSED` - already released (double close).
///
/// # Safety
/// None required.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
pub extern "C" fn kstate_session_iter_close(
    iter: *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    ffi_call(|| bridge::close_session_iter(number(iter)))
}

/// Commits the session store's uncommitted writes atomically with changelog `offsets` and
/// `metadata`, as `kstate_kv_commit`.
///
/// # Arguments
/// * `store` - a session store.
/// * `offsets`, `offsets_len` - offsets to record or remove; NULL only with length 0.
/// * `metadata`, `metadata_len` - bytes to record with the commit; NULL (length 0) keeps
///   the previous metadata.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_kv_commit`.
///
/// # Safety
/// As `kstate_kv_commit`.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_commit(
    store: *mut kstate_session_t,
    offsets: *const kstate_offset_t,
    offsets_len: usize,
    metadata: *const u8,
    metadata_len: usize,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        txn::commit::<SessionStore>(number(store), offsets, offsets_len, metadata, metadata_len)
    }
}

/// The committed changelog offset of a partition, as `kstate_kv_committed_offset`.
///
/// # Arguments
/// * `store` - a session store.
/// * `topic` - NUL-terminated UTF-8 topic name.
/// * `partition` - the partition.
/// * `offset_out` - receives the offset; 0 on entry and when none.
/// * `found_out` - true when an offset is committed; false on entry.
///
/// # Returns
/// NULL on success (found or not), else an error.
///
/// # Errors
/// As `kstate_kv_committed_offset`.
///
/// # Safety
/// As `kstate_kv_committed_offset`.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_committed_offset(
    store: *mut kstate_session_t,
    topic: *const c_char,
    partition: i32,
    offset_out: *mut i64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        txn::committed_offset::<SessionStore>(
            number(store),
            topic,
            partition,
            offset_out,
            found_out,
        )
    }
}

/// The metadata of the last commit, as `kstate_kv_committed_metadata`.
///
/// # Arguments
/// * `store` - a session store.
/// * `metadata_out` - receives the bytes (free with `kstate_bytes_free`); `{NULL, 0}` on
///   entry and when none.
/// * `found_out` - true when metadata was committed; false on entry.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_kv_committed_metadata`.
///
/// # Safety
/// Out-parameters NULL or writable.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_committed_metadata(
    store: *mut kstate_session_t,
    metadata_out: *mut kstate_bytes_t,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe { txn::committed_metadata::<SessionStore>(number(store), metadata_out, found_out) }
}

/// Discards the session store's uncommitted writes: the writer's view is the last commit
/// again.
///
/// # Arguments
/// * `store` - a session store.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED`; `KSTATE_ERR_COMMIT_IN_DOUBT`,
/// `KSTATE_ERR_STORAGE` as `kstate_kv_rollback` (otherwise the writes are discarded).
///
/// # Safety
/// None required.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
pub extern "C" fn kstate_session_rollback(store: *mut kstate_session_t) -> *mut kstate_error_t {
    txn::rollback::<SessionStore>(number(store))
}

/// Approximate bytes of the session store's uncommitted writes.
///
/// # Arguments
/// * `store` - a session store.
/// * `bytes_out` - receives the count; 0 on entry.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED`, `KSTATE_ERR_INVALID_ARGUMENT`
/// (`bytes_out` NULL).
///
/// # Safety
/// `bytes_out` NULL or writable.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_approximate_num_uncommitted_bytes(
    store: *mut kstate_session_t,
    bytes_out: *mut u64,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe { txn::uncommitted_bytes::<SessionStore>(number(store), bytes_out) }
}
