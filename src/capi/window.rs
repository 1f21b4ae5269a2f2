//! Window store functions (Kafka's `WindowStore`): open/close, put, fetch, the range
//! queries and their iterators, transactions.

use std::ffi::c_char;
use std::sync::Arc;

use super::bytes::{cstr, init, kstate_bytes_t, opt_span, out, span};
use super::error::{ffi_call, kstate_error_t};
use super::kv::kstate_offset_t;
use super::segmented_options::kstate_window_options_t;
use super::{isolation, kstate_isolation_t, number, pointer, txn};
use crate::bridge::{self, WindowIterHandle};
use crate::format::segmented::parse_window_key;
use crate::format::value;
use crate::handle::HANDLES;
use crate::store::WindowQuery;
use crate::{Result, ValueFormat, WindowStore};

/// An open window store (Kafka's `WindowStore`: values keyed by record key and window
/// start). Opaque handle number from the table `kstate_kv_t` uses: a NULL or made-up
/// handle, or a handle of another kind (a key-value or session store, an iterator), is
/// `KSTATE_ERR_INVALID_HANDLE`; a closed one `KSTATE_ERR_STORE_CLOSED`. Numbers are never
/// reused. Released by `kstate_window_close`.
///
/// Thread safety: as `kstate_kv_t`: any number of threads may use a handle at once;
/// writes and writer-view reads are serialised, committed reads run beside them.
pub struct kstate_window_t {
    _opaque: [u8; 0],
}

/// An iterator over windows, in Kafka's order, fixed when it was created. Opaque handle
/// number as `kstate_window_t` (a wrong-kind handle is `KSTATE_ERR_INVALID_HANDLE`, a
/// released one `KSTATE_ERR_ITERATOR_CLOSED`). Closing its store closes it: later calls
/// fail with `KSTATE_ERR_ITERATOR_CLOSED`, but the handle must still be released with
/// `kstate_window_iter_close`.
///
/// Thread safety: usable from any thread; concurrent calls on one iterator are serialised.
pub struct kstate_window_iter_t {
    _opaque: [u8; 0],
}

fn store(handle: *const kstate_window_t) -> Result<Arc<WindowStore>> {
    HANDLES.get::<WindowStore>(number(handle))
}

/// Opens (creating it if absent) and recovers the window store at `path`.
///
/// # Arguments
/// * `path` - NUL-terminated directory path, not empty. For the memory engine it only
///   names the store and may be NULL.
/// * `options` - options from `kstate_window_options_init`, possibly changed; NULL means
///   the defaults (RocksDB, timestamped, retention 1 day, window size 0).
/// * `store_out` - receives the store handle; set to NULL on entry and on failure.
///
/// # Returns
/// NULL on success, else an error (free it with `kstate_error_free`).
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `store_out` NULL; `path` NULL for RocksDB or empty;
///   an unknown `struct_size`; an option out of range (unknown engine or format, negative
///   retention or window size, a window larger than the retention, a negative segment
///   interval, the limits of `kstate_kv_open`).
/// * `KSTATE_ERR_LOCKED` - another handle or process has the store open.
/// * `KSTATE_ERR_FORMAT_MISMATCH` - the store was created with the other value format,
///   or `path` holds a store of another kind (a key-value or session store).
/// * `KSTATE_ERR_NOT_A_STORE`, `KSTATE_ERR_UNSUPPORTED_FORMAT`, `KSTATE_ERR_CORRUPTION`,
///   `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - what is at `path` cannot be opened.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `options` is NULL or points to a
/// `kstate_window_options_t` initialised by `kstate_window_options_init`; `store_out` is
/// NULL or valid for writing one pointer.
///
/// # Thread safety
/// Safe to call from any thread.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_open(
    path: *const c_char,
    options: *const kstate_window_options_t,
    store_out: *mut *mut kstate_window_t,
) -> *mut kstate_error_t {
    // SAFETY: `store_out` is NULL or writable (caller's guarantee).
    unsafe { init(store_out, std::ptr::null_mut()) };
    ffi_call(|| {
        // SAFETY: as above; initialised just before.
        let store_out = unsafe { out(store_out, "store_out")? };
        // SAFETY: NULL or an initialised options struct (caller's guarantee).
        let options = unsafe { kstate_window_options_t::read(options)? }.to_window_options()?;
        let path = if path.is_null() {
            None
        } else {
            // SAFETY: non-NULL and NUL-terminated (caller's guarantee).
            Some(unsafe { cstr(path, "path")? }.to_bytes())
        };
        *store_out = pointer(bridge::open_window_store(path, &options)?);
        Ok(())
    })
}

/// Closes a window store: uncommitted writes are discarded, its iterators are closed, the
/// handle becomes invalid.
///
/// # Arguments
/// * `store` - the window store handle.
///
/// # Returns
/// NULL on success, else an error. The handle is invalid afterwards in both cases,
/// unless the error is `KSTATE_ERR_INVALID_HANDLE` / `KSTATE_ERR_STORE_CLOSED`.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE` - `store` NULL, never issued, or not a window store.
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
pub extern "C" fn kstate_window_close(store: *mut kstate_window_t) -> *mut kstate_error_t {
    ffi_call(|| bridge::close_window_store(number(store)))
}

/// Kafka's `put(key, ValueAndTimestamp(value, timestamp), windowStart)` on a timestamped
/// window store, in the current transaction. The write advances the stream time to
/// `window_start`; a window already expired by the stream time is dropped silently, as in
/// Kafka. With `retain_duplicates`, every put is kept as a new entry.
///
/// # Arguments
/// * `store` - a timestamped window store.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `value`, `value_len` - the value without timestamp; NULL only when `value_len` is 0.
/// * `timestamp` - the record timestamp.
/// * `window_start` - the window start (ms).
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL data with a non-zero length.
/// * `KSTATE_ERR_KEY_TOO_LARGE` (over `KSTATE_MAX_KEY_BYTES` - 12),
///   `KSTATE_ERR_VALUE_TOO_LARGE`.
/// * `KSTATE_ERR_FORMAT_MISMATCH` - the store is plain (use `kstate_window_put_raw`).
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - spilling the transaction failed.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - an earlier commit is in doubt and finishing it failed
///   again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// `key` / `value` are NULL or readable for `key_len` / `value_len` bytes.
///
/// # Thread safety
/// Safe from any thread; writes are serialised.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_put(
    store: *mut kstate_window_t,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    timestamp: i64,
    window_start: i64,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = self::store(store)?;
        // SAFETY: spans readable as given (caller's guarantee), used during the call only.
        let (key, value) =
            unsafe { (span(key, key_len, "key")?, span(value, value_len, "value")?) };
        s.put(key, Some(value), timestamp, window_start)
    })
}

/// Kafka's `put(key, rawValue, windowStart)` with the value in the store's layout (an
/// 8-byte big-endian timestamp prefix in a timestamped store); a NULL value deletes the
/// window (ignored with `retain_duplicates`, as in Kafka).
///
/// # Arguments
/// * `store` - a window store.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `value`, `value_len` - the raw value, or NULL with length 0 to delete.
/// * `window_start` - the window start (ms).
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_window_put` (without `KSTATE_ERR_FORMAT_MISMATCH`), plus
/// `KSTATE_ERR_INVALID_VALUE` for a timestamped value shorter than 8 bytes.
///
/// # Safety
/// As `kstate_window_put`.
///
/// # Thread safety
/// As `kstate_window_put`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_put_raw(
    store: *mut kstate_window_t,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    window_start: i64,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = self::store(store)?;
        // SAFETY: spans readable as given (caller's guarantee), used during the call only.
        let (key, value) = unsafe {
            (
                span(key, key_len, "key")?,
                opt_span(value, value_len, "value")?,
            )
        };
        s.put_raw(key, value, window_start).map(drop)
    })
}

/// Splits a value in the store's layout into value and timestamp (-1 in a plain store).
fn split(raw: Vec<u8>, format: ValueFormat) -> Result<(Vec<u8>, i64)> {
    match format {
        ValueFormat::Plain => Ok((raw, crate::store::NO_TIMESTAMP)),
        ValueFormat::Timestamped => {
            let (timestamp, v) = value::split(&raw)?;
            Ok((v.to_vec(), timestamp))
        }
        // Window stores refuse this format on open; split it as the key-value surface
        // does rather than assume so.
        ValueFormat::Headers => {
            let p = crate::format::headers::split(&raw)?;
            Ok((p.value.to_vec(), p.timestamp))
        }
    }
}

/// Kafka's `fetch(key, windowStart)`: the window of `key` starting at `window_start`.
///
/// # Arguments
/// * `store` - a window store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` (the writer's view) or
///   `KSTATE_READ_COMMITTED` (committed data only).
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `window_start` - the window start.
/// * `value_out` - receives the value (without timestamp in a timestamped store; free with
///   `kstate_bytes_free`); `{NULL, 0}` on entry and when not found.
/// * `timestamp_out` - receives the record timestamp (-1 in a plain store); 0 on entry.
/// * `found_out` - true when the window exists and has not expired; false on entry.
///
/// # Returns
/// NULL on success (found or not), else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - a NULL out-parameter, NULL key with non-zero length,
///   an unknown isolation.
/// * `KSTATE_ERR_INVALID_VALUE`, `KSTATE_ERR_STORAGE`.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - an earlier commit is in doubt and finishing it failed
///   again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// `key` is NULL or readable for `key_len` bytes; out-parameters NULL or writable.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kstate_window_fetch(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    window_start: i64,
    value_out: *mut kstate_bytes_t,
    timestamp_out: *mut i64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(value_out, kstate_bytes_t::NONE);
        init(timestamp_out, 0);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above; key readable as given.
        let (value_out, ts_out, found_out, key) = unsafe {
            (
                out(value_out, "value_out")?,
                out(timestamp_out, "timestamp_out")?,
                out(found_out, "found_out")?,
                span(key, key_len, "key")?,
            )
        };
        let isolation = self::isolation(isolation)?;
        let s = self::store(store)?;
        if let Some(raw) = s.fetch_raw_with(isolation, key, window_start)? {
            let (v, ts) = split(raw, s.options().value_format)?;
            *value_out = kstate_bytes_t::from_vec(v);
            *ts_out = ts;
            *found_out = true;
        }
        Ok(())
    })
}

/// Opens an iterator for `query` and publishes it through `iter_out`.
///
/// # Safety
/// `iter_out` is NULL or writable.
unsafe fn query(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    query: impl FnOnce() -> Result<WindowQuery>,
    reverse: bool,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(iter_out, std::ptr::null_mut()) };
    ffi_call(|| {
        // SAFETY: initialised above.
        let iter_out = unsafe { out(iter_out, "iter_out")? };
        let isolation = self::isolation(isolation)?;
        let query = query()?;
        let it = bridge::open_window_iter(number(store), |s| s.query(isolation, &query, reverse))?;
        *iter_out = pointer(it);
        Ok(())
    })
}

/// Kafka's `fetch(key, timeFrom, timeTo)`: the windows of `key` whose start is in
/// `[time_from, time_to]`, by ascending start.
///
/// # Arguments
/// * `store` - a window store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` or `KSTATE_READ_COMMITTED`.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `time_from`, `time_to` - window start bounds, inclusive (empty when from > to).
/// * `iter_out` - receives the iterator (release it with `kstate_window_iter_close`);
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
pub unsafe extern "C" fn kstate_window_fetch_range(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    time_from: i64,
    time_to: i64,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        key_query(
            store, isolation, key, key_len, time_from, time_to, false, iter_out,
        )
    }
}

/// Kafka's `backwardFetch(key, timeFrom, timeTo)`: `kstate_window_fetch_range` by
/// descending start.
///
/// # Arguments
/// As `kstate_window_fetch_range`.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_window_fetch_range`.
///
/// # Safety
/// As `kstate_window_fetch_range`.
///
/// # Thread safety
/// As `kstate_window_fetch_range`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_backward_fetch_range(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    time_from: i64,
    time_to: i64,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        key_query(
            store, isolation, key, key_len, time_from, time_to, true, iter_out,
        )
    }
}

/// # Safety
/// As `kstate_window_fetch_range`.
#[allow(clippy::too_many_arguments)]
unsafe fn key_query(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    from: i64,
    to: i64,
    reverse: bool,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    let make = || {
        // SAFETY: readable as given (caller's guarantee); copied at once.
        let key = unsafe { span(key, key_len, "key")? }.to_vec();
        Ok(WindowQuery::Key { key, from, to })
    };
    // SAFETY: forwarded; same contract.
    unsafe { query(store, isolation, make, reverse, iter_out) }
}

/// Kafka's `fetch(keyFrom, keyTo, timeFrom, timeTo)`: the windows of the keys in
/// `[key_from, key_to]` whose start is in `[time_from, time_to]`, in Kafka's order
/// (segment by segment; within a segment by key bytes, then start).
///
/// # Arguments
/// * `store` - a window store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` or `KSTATE_READ_COMMITTED`.
/// * `key_from`, `key_from_len` - lowest key, inclusive; NULL (with length 0) leaves it
///   open (a non-NULL pointer with length 0 is the empty key).
/// * `key_to`, `key_to_len` - highest key, inclusive; NULL leaves it open. Empty when
///   `key_from > key_to`.
/// * `time_from`, `time_to` - window start bounds, inclusive.
/// * `iter_out` - receives the iterator; NULL on entry and on failure.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_window_fetch_range` (a NULL bound with a non-zero length is
/// `KSTATE_ERR_INVALID_ARGUMENT`).
///
/// # Safety
/// Bounds NULL or readable for their lengths (copied); `iter_out` NULL or writable.
///
/// # Thread safety
/// As `kstate_window_fetch_range`.
#[must_use]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kstate_window_fetch_key_range(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    key_from: *const u8,
    key_from_len: usize,
    key_to: *const u8,
    key_to_len: usize,
    time_from: i64,
    time_to: i64,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        key_range_query(
            store,
            isolation,
            (key_from, key_from_len),
            (key_to, key_to_len),
            (time_from, time_to),
            false,
            iter_out,
        )
    }
}

/// Kafka's `backwardFetch(keyFrom, keyTo, timeFrom, timeTo)`: `kstate_window_fetch_key_range`
/// in reverse order.
///
/// # Arguments
/// As `kstate_window_fetch_key_range`.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_window_fetch_key_range`.
///
/// # Safety
/// As `kstate_window_fetch_key_range`.
///
/// # Thread safety
/// As `kstate_window_fetch_range`.
#[must_use]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kstate_window_backward_fetch_key_range(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    key_from: *const u8,
    key_from_len: usize,
    key_to: *const u8,
    key_to_len: usize,
    time_from: i64,
    time_to: i64,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        key_range_query(
            store,
            isolation,
            (key_from, key_from_len),
            (key_to, key_to_len),
            (time_from, time_to),
            true,
            iter_out,
        )
    }
}

/// # Safety
/// As `kstate_window_fetch_key_range`.
unsafe fn key_range_query(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    key_from: (*const u8, usize),
    key_to: (*const u8, usize),
    (from, to): (i64, i64),
    reverse: bool,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    let make = || {
        // SAFETY: readable as given (caller's guarantee); copied at once.
        let (key_from, key_to) = unsafe {
            (
                opt_span(key_from.0, key_from.1, "key_from")?.map(<[u8]>::to_vec),
                opt_span(key_to.0, key_to.1, "key_to")?.map(<[u8]>::to_vec),
            )
        };
        Ok(WindowQuery::KeyRange {
            key_from,
            key_to,
            from,
            to,
        })
    };
    // SAFETY: forwarded; same contract.
    unsafe { query(store, isolation, make, reverse, iter_out) }
}

/// Kafka's `fetchAll(timeFrom, timeTo)`: every window whose start is in
/// `[time_from, time_to]`, in Kafka's order.
///
/// # Arguments
/// * `store` - a window store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` or `KSTATE_READ_COMMITTED`.
/// * `time_from`, `time_to` - window start bounds, inclusive.
/// * `iter_out` - receives the iterator; NULL on entry and on failure.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_window_fetch_range`.
///
/// # Safety
/// `iter_out` NULL or writable.
///
/// # Thread safety
/// As `kstate_window_fetch_range`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_fetch_all(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    time_from: i64,
    time_to: i64,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    let make = || {
        Ok(WindowQuery::Time {
            from: time_from,
            to: time_to,
        })
    };
    // SAFETY: forwarded; same contract.
    unsafe { query(store, isolation, make, false, iter_out) }
}

/// Kafka's `backwardFetchAll(timeFrom, timeTo)`: `kstate_window_fetch_all` in reverse
/// order.
///
/// # Arguments
/// As `kstate_window_fetch_all`.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_window_fetch_range`.
///
/// # Safety
/// `iter_out` NULL or writable.
///
/// # Thread safety
/// As `kstate_window_fetch_range`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_backward_fetch_all(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    time_from: i64,
    time_to: i64,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    let make = || {
        Ok(WindowQuery::Time {
            from: time_from,
            to: time_to,
        })
    };
    // SAFETY: forwarded; same contract.
    unsafe { query(store, isolation, make, true, iter_out) }
}

/// Kafka's `all()`: every live window, in Kafka's order.
///
/// # Arguments
/// * `store` - a window store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` or `KSTATE_READ_COMMITTED`.
/// * `iter_out` - receives the iterator; NULL on entry and on failure.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_window_fetch_range`.
///
/// # Safety
/// `iter_out` NULL or writable.
///
/// # Thread safety
/// As `kstate_window_fetch_range`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_all(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe { query(store, isolation, || Ok(WindowQuery::All), false, iter_out) }
}

/// Kafka's `backwardAll()`: `kstate_window_all` in reverse order.
///
/// # Arguments
/// As `kstate_window_all`.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// As `kstate_window_fetch_range`.
///
/// # Safety
/// `iter_out` NULL or writable.
///
/// # Thread safety
/// As `kstate_window_fetch_range`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_backward_all(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    iter_out: *mut *mut kstate_window_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe { query(store, isolation, || Ok(WindowQuery::All), true, iter_out) }
}

/// The next window of an iterator.
///
/// # Arguments
/// * `iter` - the iterator.
/// * `key_out` - receives the record key (free with `kstate_bytes_free`); `{NULL, 0}` on
///   entry and at the end.
/// * `value_out` - receives the value (without timestamp in a timestamped store; free
///   with `kstate_bytes_free`); `{NULL, 0}` on entry and at the end.
/// * `timestamp_out` - the record timestamp (-1 in a plain store); 0 on entry.
/// * `window_start_out` - the window start; 0 on entry.
/// * `window_end_out` - the window end: start + the store's window size
///   (`INT64_MAX` when that overflows, as Kafka); 0 on entry.
/// * `found_out` - true when a window was returned, false at the end (then every other
///   out-parameter keeps its entry value); false on entry.
///
/// # Returns
/// NULL on success (a window or the end), else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE` - `iter` NULL, never issued, or not a window iterator.
/// * `KSTATE_ERR_ITERATOR_CLOSED` - the iterator or its store was closed.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - a NULL out-parameter.
/// * `KSTATE_ERR_INVALID_VALUE` - a timestamped value shorter than its timestamp (the
///   next call continues after it); `KSTATE_ERR_STORAGE`.
///
/// # Safety
/// Out-parameters NULL or writable.
///
/// # Thread safety
/// Safe from any thread; calls on one iterator are serialised.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_iter_next(
    iter: *mut kstate_window_iter_t,
    key_out: *mut kstate_bytes_t,
    value_out: *mut kstate_bytes_t,
    timestamp_out: *mut i64,
    window_start_out: *mut i64,
    window_end_out: *mut i64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(key_out, kstate_bytes_t::NONE);
        init(value_out, kstate_bytes_t::NONE);
        init(timestamp_out, 0);
        init(window_start_out, 0);
        init(window_end_out, 0);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above.
        let (key_out, value_out, ts_out, start_out, end_out, found_out) = unsafe {
            (
                out(key_out, "key_out")?,
                out(value_out, "value_out")?,
                out(timestamp_out, "timestamp_out")?,
                out(window_start_out, "window_start_out")?,
                out(window_end_out, "window_end_out")?,
                out(found_out, "found_out")?,
            )
        };
        let it = HANDLES.get::<WindowIterHandle>(number(iter))?;
        let Some((kafka_key, raw)) = it.0.next_batch(1, usize::MAX)?.pop() else {
            return Ok(());
        };
        let (key, start, _seqnum) = parse_window_key(&kafka_key)?;
        let (v, ts) = split(raw, it.0.format())?;
        *key_out = kstate_bytes_t::from_vec(key.to_vec());
        *value_out = kstate_bytes_t::from_vec(v);
        *ts_out = ts;
        *start_out = start;
        *end_out = bridge::window_end(start, it.1);
        *found_out = true;
        Ok(())
    })
}

/// Releases a window iterator.
///
/// # Arguments
/// * `iter` - the iterator.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE` - `iter` NULL, never issued, or not a window iterator.
/// * `KSTATE_ERR_ITERATOR_CLOSED` - already released (double close).
///
/// # Safety
/// None required.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
pub extern "C" fn kstate_window_iter_close(iter: *mut kstate_window_iter_t) -> *mut kstate_error_t {
    ffi_call(|| bridge::close_window_iter(number(iter)))
}

/// Commits the window store's uncommitted writes atomically with changelog `offsets` and
/// `metadata`, as `kstate_kv_commit` (Kafka's map semantics for offsets).
///
/// # Arguments
/// * `store` - a window store.
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
pub unsafe extern "C" fn kstate_window_commit(
    store: *mut kstate_window_t,
    offsets: *const kstate_offset_t,
    offsets_len: usize,
    metadata: *const u8,
    metadata_len: usize,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        txn::commit::<WindowStore>(number(store), offsets, offsets_len, metadata, metadata_len)
    }
}

/// The committed changelog offset of a partition, as `kstate_kv_committed_offset`.
///
/// # Arguments
/// * `store` - a window store.
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
pub unsafe extern "C" fn kstate_window_committed_offset(
    store: *mut kstate_window_t,
    topic: *const c_char,
    partition: i32,
    offset_out: *mut i64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        txn::committed_offset::<WindowStore>(number(store), topic, partition, offset_out, found_out)
    }
}

/// The metadata of the last commit, as `kstate_kv_committed_metadata`.
///
/// # Arguments
/// * `store` - a window store.
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
pub unsafe extern "C" fn kstate_window_committed_metadata(
    store: *mut kstate_window_t,
    metadata_out: *mut kstate_bytes_t,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe { txn::committed_metadata::<WindowStore>(number(store), metadata_out, found_out) }
}

/// Discards the window store's uncommitted writes:
/// the writer's view is the last commit again.
///
/// # Arguments
/// * `store` - a window store.
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
pub extern "C" fn kstate_window_rollback(store: *mut kstate_window_t) -> *mut kstate_error_t {
    txn::rollback::<WindowStore>(number(store))
}

/// Approximate bytes of the window store's uncommitted writes.
///
/// # Arguments
/// * `store` - a window store.
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
pub unsafe extern "C" fn kstate_window_approximate_num_uncommitted_bytes(
    store: *mut kstate_window_t,
    bytes_out: *mut u64,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe { txn::uncommitted_bytes::<WindowStore>(number(store), bytes_out) }
}
