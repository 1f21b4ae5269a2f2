//! Session store functions (Kafka's `SessionStore`): open/close, put/remove,
//! fetchSession, the findSessions and fetch queries and their iterators, transactions.

use std::sync::Arc;

use super::bytes::{init, kstate_bytes_t, out, span, FoundOut};
use super::error::{ffi_call, kstate_error_t};
use super::segmented::{key_query, key_range_query};
use super::{isolation, kstate_isolation_t, number, pointer};
use crate::bridge::{self, SessionIterHandle};
use crate::format::segmented::parse_session_key;
use crate::handle::HANDLES;
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

/// Kafka's `put(Windowed(key, SessionWindow(start, end)), aggregate)` in the current
/// transaction. The write advances the stream time to `end`; a session already expired by
/// the stream time is dropped silently, as in Kafka.
///
/// # Arguments
/// * `store` - a session store.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `start`, `end` - the session's start and end (ms).
/// * `aggregate`, `aggregate_len` - the aggregate, stored as given (in a headers-format
///   store: Kafka's `AggregationWithHeaders` layout, `[varint headersSize][headers]
///   [aggregation]`); NULL only when `aggregate_len` is 0 (the empty aggregate; use
///   `kstate_session_remove` to delete).
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL data with a non-zero length.
/// * `KSTATE_ERR_INVALID_VALUE` - a headers-format store got a malformed aggregate.
/// * `KSTATE_ERR_KEY_TOO_LARGE` (over `KSTATE_MAX_KEY_BYTES` - 16),
///   `KSTATE_ERR_VALUE_TOO_LARGE`.
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - spilling the transaction failed.
///
/// # Safety
/// `key` / `aggregate` are NULL or readable for their lengths.
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
/// * `KSTATE_ERR_INVALID_ARGUMENT` - a NULL out-parameter, NULL key with non-zero length,
///   an unknown isolation.
/// * `KSTATE_ERR_KEY_TOO_LARGE`, `KSTATE_ERR_STORAGE`.
///
/// # Safety
/// `key` NULL or readable for `key_len` bytes; out-parameters NULL or writable.
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
    let outs = FoundOut::raw(aggregate_out, "aggregate_out", found_out);
    // SAFETY: out-parameters NULL or writable; key readable as given (caller's guarantee).
    unsafe {
        outs.call(|| {
            let key = span(key, key_len, "key")?;
            let isolation = self::isolation(isolation)?;
            let found = self::store(store)?.fetch_session_with(isolation, key, start, end)?;
            Ok(found.map(|v| (v, 0)))
        })
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

/// Kafka's `findSessions(earliestSessionEndTime, latestSessionEndTime)` of its time-ordered
/// session store (KIP-825, what `EmitStrategy.onWindowClose()` reads): the sessions of every
/// key whose end is in `[earliest_end, latest_end]`, by end, then start, then key bytes,
/// from the live segments (as Kafka, no finer retention filter). Kafka has no backward
/// form of this query.
///
/// # Arguments
/// * `store` - a session store opened with `time_ordered`.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` or `KSTATE_READ_COMMITTED`.
/// * `earliest_end`, `latest_end` - the bounds of the session end, inclusive.
/// * `iter_out` - receives the iterator (release it with `kstate_session_iter_close`);
///   NULL on entry and on failure.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - the store is not time-ordered (as Kafka's
///   `RocksDBSessionStore`, which does not support this query); `iter_out` NULL; an
///   unknown isolation.
/// * `KSTATE_ERR_STORAGE`.
///
/// # Safety
/// `iter_out` NULL or writable.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_find_sessions_by_end(
    store: *mut kstate_session_t,
    isolation: kstate_isolation_t,
    earliest_end: i64,
    latest_end: i64,
    iter_out: *mut *mut kstate_session_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(iter_out, std::ptr::null_mut()) };
    ffi_call(|| {
        // SAFETY: initialised above.
        let iter_out = unsafe { out(iter_out, "iter_out")? };
        let isolation = self::isolation(isolation)?;
        let it = bridge::open_session_iter(number(store), |s| {
            s.find_sessions_by_end_with(isolation, earliest_end, latest_end, false)
        })?;
        *iter_out = pointer(it);
        Ok(())
    })
}

include!(concat!(env!("OUT_DIR"), "/capi_session_queries.rs"));
