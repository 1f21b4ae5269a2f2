//! Window store functions (Kafka's `WindowStore`): open/close, put, fetch, the range
//! queries and their iterators, transactions.

use super::bytes::{found_raw, found_typed, kstate_bytes_t};
use super::{number, pointer};
use crate::bridge::{self, WindowIterHandle};
use crate::format::segmented::parse_window_key;
use crate::format::value;
use crate::handle::HANDLES;
use crate::store::WindowQuery;
use crate::{Isolation, Result, ValueFormat};

/// An open window store (Kafka's `WindowStore`: values keyed by record key and window
/// start), a handle as the header's overview describes; released by `kstate_window_close`.
pub struct kstate_window_t {
    _opaque: [u8; 0],
}

/// An iterator over windows, in Kafka's order, fixed when it was created: Kafka's RocksDB
/// order (segment by segment, then key bytes, then window start), except that a window
/// store without duplicates on the memory engine lists the windows of a key-range fetch,
/// `fetch_all` and `all` by start, then key (Kafka's in-memory order); a handle as the
/// header's overview describes. Closing its store closes it (`KSTATE_ERR_ITERATOR_CLOSED`);
/// it must still be released with `kstate_window_iter_close`.
pub struct kstate_window_iter_t {
    _opaque: [u8; 0],
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
/// Opens an iterator for `query` on the store behind `store` and publishes it.
fn open_iter(
    store: *mut kstate_window_t,
    isolation: Isolation,
    query: &WindowQuery,
    reverse: bool,
    iter_out: &mut *mut kstate_window_iter_t,
) -> Result<()> {
    let it = bridge::open_window_iter(number(store), |s| s.query(isolation, query, reverse))?;
    *iter_out = pointer(it);
    Ok(())
}

include!(concat!(env!("OUT_DIR"), "/capi_window.rs"));
