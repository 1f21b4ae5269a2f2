//! Window store functions (Kafka's `WindowStore`): open/close, put, fetch, the range
//! queries and their iterators, transactions.

use std::sync::Arc;

use super::bytes::{init, kstate_bytes_t, opt_span, out, span, FoundOut};
use super::error::{ffi_call, kstate_error_t};
use super::segmented::{key_query, key_range_query, query};
use super::{isolation, kstate_isolation_t, number};
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

/// Kafka's `put(key, ValueAndTimestamp(value, timestamp), windowStart)` on a timestamped
/// window store (on a headers-format store: the value with its timestamp and no headers, as
/// `kstate_kv_put` does there), in the current transaction. The write advances the stream time to
/// `window_start`; a window already expired by the stream time is dropped silently, as in
/// Kafka. With `retain_duplicates`, every put is kept as a new entry.
///
/// # Arguments
/// * `store` - a timestamped or headers-format window store.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `value`, `value_len` - the value without timestamp; NULL only when `value_len` is 0.
/// * `timestamp` - the record timestamp.
/// * `window_start` - the window start (ms).
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL data with a non-zero length.
/// * `KSTATE_ERR_KEY_TOO_LARGE` (over `KSTATE_MAX_KEY_BYTES` - 12),
///   `KSTATE_ERR_VALUE_TOO_LARGE`.
/// * `KSTATE_ERR_FORMAT_MISMATCH` - the store is plain (use `kstate_window_put_raw`).
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - spilling the transaction failed.
///
/// # Safety
/// `key` / `value` are NULL or readable for `key_len` / `value_len` bytes.
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
        if s.options().value_format == ValueFormat::Headers {
            // The core's typed put is timestamped-only; the headers layout with no headers
            // is what a typed key-value put writes to a headers-format store.
            let raw = crate::format::headers::encode(value, timestamp, &[])?;
            return s.put_raw(key, Some(&raw), window_start).map(drop);
        }
        s.put(key, Some(value), timestamp, window_start)
    })
}

/// Kafka's `put(key, rawValue, windowStart)` with the value in the store's layout (an
/// 8-byte big-endian timestamp prefix in a timestamped store; Kafka's
/// `ValueTimestampHeaders` layout, `[varint headersSize][headers][8-byte big-endian
/// timestamp][value]`, in a headers-format store); a NULL value deletes the window (ignored
/// with `retain_duplicates`, as in Kafka).
///
/// # Arguments
/// * `store` - a window store.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `value`, `value_len` - the raw value, or NULL with length 0 to delete.
/// * `window_start` - the window start (ms).
///
/// # Errors
/// As `kstate_window_put` (without `KSTATE_ERR_FORMAT_MISMATCH`), plus
/// `KSTATE_ERR_INVALID_VALUE` for a timestamped value shorter than 8 bytes or a malformed
/// headers-format value.
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
        // As the key-value surface: value and timestamp, the headers dropped (the raw calls
        // return them).
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
/// * `value_out` - receives the value (without timestamp in a timestamped store, without
///   timestamp and headers in a headers-format one; free with `kstate_bytes_free`);
///   `{NULL, 0}` on entry and when not found.
/// * `timestamp_out` - receives the record timestamp (-1 in a plain store); 0 on entry.
/// * `found_out` - true when the window exists and has not expired; false on entry.
///
/// # Returns
/// NULL on success (found or not), else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - a NULL out-parameter, NULL key with non-zero length,
///   an unknown isolation.
/// * `KSTATE_ERR_INVALID_VALUE`, `KSTATE_ERR_STORAGE`.
///
/// # Safety
/// `key` is NULL or readable for `key_len` bytes; out-parameters NULL or writable.
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
    let outs = FoundOut::typed(
        value_out,
        "value_out",
        timestamp_out,
        "timestamp_out",
        found_out,
    );
    // SAFETY: out-parameters NULL or writable; key readable as given (caller's guarantee).
    unsafe {
        outs.call(|| {
            let key = span(key, key_len, "key")?;
            let isolation = self::isolation(isolation)?;
            let s = self::store(store)?;
            match s.fetch_raw_with(isolation, key, window_start)? {
                Some(raw) => split(raw, s.options().value_format).map(Some),
                None => Ok(None),
            }
        })
    }
}

/// Kafka's `fetch(key, windowStart)` returning the value in the store's own layout, as
/// `kstate_window_put_raw` takes it (timestamp prefix in a timestamped store, Kafka's
/// `ValueTimestampHeaders` layout with its headers in a headers-format store, the bytes of
/// a plain one).
///
/// # Arguments
/// * `store` - a window store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` (the writer's view) or
///   `KSTATE_READ_COMMITTED` (committed data only).
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `window_start` - the window start.
/// * `value_out` - receives the raw value (free with `kstate_bytes_free`); `{NULL, 0}` on
///   entry and when not found.
/// * `found_out` - true when the window exists and has not expired; false on entry.
///
/// # Returns
/// NULL on success (found or not), else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - a NULL out-parameter, NULL key with non-zero length,
///   an unknown isolation.
/// * `KSTATE_ERR_STORAGE`.
///
/// # Safety
/// As `kstate_window_fetch`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_fetch_raw(
    store: *mut kstate_window_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    window_start: i64,
    value_out: *mut kstate_bytes_t,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    let outs = FoundOut::raw(value_out, "value_out", found_out);
    // SAFETY: out-parameters NULL or writable; key readable as given (caller's guarantee).
    unsafe {
        outs.call(|| {
            let key = span(key, key_len, "key")?;
            let isolation = self::isolation(isolation)?;
            let raw = self::store(store)?.fetch_raw_with(isolation, key, window_start)?;
            Ok(raw.map(|v| (v, 0)))
        })
    }
}

/// The next window of an iterator.
///
/// # Arguments
/// * `iter` - the iterator.
/// * `key_out` - receives the record key (free with `kstate_bytes_free`); `{NULL, 0}` on
///   entry and at the end.
/// * `value_out` - receives the value (without timestamp in a timestamped store, without
///   timestamp and headers in a headers-format one; free with `kstate_bytes_free`);
///   `{NULL, 0}` on entry and at the end.
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

include!(concat!(env!("OUT_DIR"), "/capi_window_queries.rs"));
