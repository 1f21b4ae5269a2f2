//! Iterators over a store, read in batches: one call returns many entries.

use std::ffi::c_void;

use super::bytes::{init, opt_span, out, span};
use super::error::{ffi_call, kstate_error_t};
use super::kv::kstate_kv_t;
use super::{isolation, kstate_isolation_t, number, pointer};
use crate::bridge::{self, RawEntry};
use crate::format::value;
use crate::{handle, Isolation, KeyRange, KvIter, KvStore, Result, ValueFormat};

/// An iterator over a store's entries in key order (ascending or descending), fixed at the
/// moment it was created. Opaque handle number like `kstate_kv_t`: a NULL or made-up
/// handle, or a store handle cast to `kstate_kv_iter_t*`, is `KSTATE_ERR_INVALID_HANDLE`;
/// a released one `KSTATE_ERR_ITERATOR_CLOSED`. Released by `kstate_kv_iter_close`.
/// Closing its store closes it: later calls fail with `KSTATE_ERR_ITERATOR_CLOSED`, but
/// the handle must still be released.
///
/// Thread safety: an iterator may be used from any thread; concurrent calls on the same
/// iterator are serialised (each entry is returned once). Batches it returned are owned by
/// the caller and outlive the iterator and its store.
pub struct kstate_kv_iter_t {
    _opaque: [u8; 0],
}

/// One entry of a batch. Every pointer points into the batch and is valid until
/// `kstate_kv_batch_free`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_kv_entry_t {
    /// Key bytes (not NUL-terminated; non-NULL even when `key_len` is 0).
    pub key: *const u8,
    /// Length of `key`.
    pub key_len: usize,
    /// The value: for a timestamped store without its 8-byte timestamp prefix, for a plain
    /// store the stored bytes.
    pub value: *const u8,
    /// Length of `value`.
    pub value_len: usize,
    /// The record timestamp (timestamped store); -1 for a plain store.
    pub timestamp: i64,
    /// The value in the store's layout, as Kafka stores it (timestamp prefix included for
    /// a timestamped store; equal to `value` for a plain store).
    pub raw_value: *const u8,
    /// Length of `raw_value`.
    pub raw_value_len: usize,
}

/// A batch of entries returned by `kstate_kv_iter_next_batch`; release it with
/// `kstate_kv_batch_free`. `len` 0 means the iterator is exhausted.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_kv_batch_t {
    /// `len` entries, in iteration order (NULL when `len` is 0).
    pub entries: *const kstate_kv_entry_t,
    /// Number of entries.
    pub len: usize,
    /// Private to kstate (owns the memory); do not touch.
    pub owner: *mut c_void,
}

impl kstate_kv_batch_t {
    const NONE: kstate_kv_batch_t = kstate_kv_batch_t {
        entries: std::ptr::null(),
        len: 0,
        owner: std::ptr::null_mut(),
    };
}

/// What `owner` points to: the entries and the bytes they point into.
struct BatchStorage {
    entries: Vec<kstate_kv_entry_t>,
    _data: Vec<RawEntry>,
}

/// Opens an iterator with `make` on `store` and publishes its handle through `iter_out`.
///
/// # Safety
/// `iter_out` was initialised by the caller (NULL or valid and initialised).
unsafe fn open_iter(
    store: *mut kstate_kv_t,
    iter_out: *mut *mut kstate_kv_iter_t,
    make: impl FnOnce(&KvStore) -> Result<KvIter>,
) -> Result<()> {
    // SAFETY: forwarded to the caller.
    let iter_out = unsafe { out(iter_out, "iter_out")? };
    *iter_out = pointer(bridge::open_iter(number(store), make)?);
    Ok(())
}

/// Iterates, ascending, over every entry whose key starts with `prefix` (Kafka's
/// `prefixScan` on the serialized prefix).
///
/// # Arguments
/// * `store` - the store.
/// * `prefix`, `prefix_len` - the prefix; NULL only when `prefix_len` is 0 (every key).
/// * `iter_out` - receives the iterator; NULL on entry and on failure.
///
/// # Errors
/// As `kstate_kv_range`.
///
/// # Safety
/// `prefix` NULL or readable for `prefix_len` bytes (copied); `iter_out` NULL or writable.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_prefix_scan(
    store: *mut kstate_kv_t,
    prefix: *const u8,
    prefix_len: usize,
    iter_out: *mut *mut kstate_kv_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(iter_out, std::ptr::null_mut()) };
    ffi_call(|| {
        // SAFETY: readable as given (caller's guarantee); copied by the core.
        let prefix = unsafe { span(prefix, prefix_len, "prefix")? };
        // SAFETY: initialised above.
        unsafe { open_iter(store, iter_out, |s| s.prefix_scan(prefix)) }
    })
}

/// The general scan behind the others: inclusive bounds, either isolation, either order.
/// With `KSTATE_READ_COMMITTED` it sees only committed data, which is how threads other
/// than the writer iterate consistently.
///
/// # Arguments
/// * `store` - the store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` (writer's view) or `KSTATE_READ_COMMITTED`.
/// * `from`, `from_len`, `to`, `to_len` - bounds, as `kstate_kv_range`.
/// * `reverse` - false: ascending; true: descending.
/// * `iter_out` - receives the iterator; NULL on entry and on failure.
///
/// # Errors
/// As `kstate_kv_range`, plus `KSTATE_ERR_INVALID_ARGUMENT` for an unknown `isolation`.
///
/// # Safety
/// As `kstate_kv_range`.
///
/// # Thread safety
/// Safe from any thread; a committed scan sees one whole commit, never part of one.
#[must_use]
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kstate_kv_scan(
    store: *mut kstate_kv_t,
    isolation: kstate_isolation_t,
    from: *const u8,
    from_len: usize,
    to: *const u8,
    to_len: usize,
    reverse: bool,
    iter_out: *mut *mut kstate_kv_iter_t,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(iter_out, std::ptr::null_mut()) };
    ffi_call(|| {
        let isolation: Isolation = self::isolation(isolation)?;
        // SAFETY: readable as given (caller's guarantee); copied into the range.
        let range = unsafe {
            KeyRange::inclusive(
                opt_span(from, from_len, "from")?,
                opt_span(to, to_len, "to")?,
            )
        };
        // SAFETY: initialised above.
        unsafe { open_iter(store, iter_out, |s| s.scan(isolation, &range, reverse)) }
    })
}

/// Returns the next entries of an iterator: up to `max_entries`, stopping early once the
/// keys and values returned reach `max_bytes` (at least one entry is returned while any
/// remains). A batch of length 0 means the iterator is exhausted.
///
/// Errors never lose entries. Every value of a timestamped store is checked before it is
/// returned; when an entry cannot be read or is shorter than its 8-byte timestamp after
/// other entries were already taken for the batch, this call succeeds with those entries
/// and the next call fails with the error. A failing entry is reported once and skipped:
/// the call after the error continues with the entry after it (for
/// `KSTATE_ERR_INVALID_VALUE`, whose message names the key).
///
/// # Arguments
/// * `iter` - the iterator.
/// * `max_entries` - most entries to return; > 0.
/// * `max_bytes` - soft bound on key and value bytes in the batch; 0 means no bound.
/// * `batch_out` - receives the batch (release with `kstate_kv_batch_free`); set to an
///   empty batch on entry and on failure.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE` - `iter` NULL, not an iterator handle (a store handle,
///   say), or never issued.
/// * `KSTATE_ERR_ITERATOR_CLOSED` - the iterator (`kstate_kv_iter_close`) or its store was
///   closed.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `max_entries` 0, `batch_out` NULL.
/// * `KSTATE_ERR_INVALID_VALUE` - the next entry of a timestamped store has a value shorter
///   than 8 bytes (see above).
/// * `KSTATE_ERR_STORAGE` - the next entry could not be read.
///
/// # Safety
/// `batch_out` NULL or writable.
///
/// # Thread safety
/// Safe from any thread; calls on one iterator are serialised (each entry is returned
/// once). Batches are independent of the iterator and of each other.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_iter_next_batch(
    iter: *mut kstate_kv_iter_t,
    max_entries: usize,
    max_bytes: usize,
    batch_out: *mut kstate_kv_batch_t,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(batch_out, kstate_kv_batch_t::NONE) };
    ffi_call(|| {
        // SAFETY: initialised above.
        let batch_out = unsafe { out(batch_out, "batch_out")? };
        let it = handle::iter(number(iter))?;
        let max_bytes = if max_bytes == 0 {
            usize::MAX
        } else {
            max_bytes
        };
        let data = it.next_batch(max_entries, max_bytes)?;
        if data.is_empty() {
            return Ok(());
        }
        let mut entries = Vec::with_capacity(data.len());
        for (k, raw) in &data {
            // `next_batch` checked every value's layout, so these splits cannot fail.
            let (timestamp, v): (i64, &[u8]) = match it.format() {
                ValueFormat::Timestamped => value::split(raw)?,
                ValueFormat::Headers => {
                    let p = crate::format::headers::split(raw)?;
                    (p.timestamp, p.value)
                }
                ValueFormat::Plain => (-1, raw),
            };
            entries.push(kstate_kv_entry_t {
                key: k.as_ptr(),
                key_len: k.len(),
                value: v.as_ptr(),
                value_len: v.len(),
                timestamp,
                raw_value: raw.as_ptr(),
                raw_value_len: raw.len(),
            });
        }
        // The entries point into `data`'s heap buffers, which do not move with the box.
        let storage = Box::new(BatchStorage {
            entries,
            _data: data,
        });
        *batch_out = kstate_kv_batch_t {
            entries: storage.entries.as_ptr(),
            len: storage.entries.len(),
            owner: Box::into_raw(storage).cast::<c_void>(),
        };
        Ok(())
    })
}

/// Releases a batch and resets it to empty, so releasing it again is harmless.
///
/// # Arguments
/// * `batch` - the batch; NULL, or an empty batch, is a no-op.
///
/// # Returns
/// Nothing.
///
/// # Errors
/// None.
///
/// # Safety
/// `batch` is NULL or points to a batch exactly as `kstate_kv_iter_next_batch` returned
/// it (or an empty one), not released before through a copy. Entry pointers are invalid
/// afterwards.
///
/// # Thread safety
/// Safe from any thread; a batch is released once.
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_batch_free(batch: *mut kstate_kv_batch_t) {
    // SAFETY: the caller guarantees `batch` is NULL or valid for reads and writes.
    let Some(b) = (unsafe { batch.as_mut() }) else {
        return;
    };
    if !b.owner.is_null() {
        // SAFETY: `owner` came from `Box::into_raw` of a `BatchStorage` in
        // `kstate_kv_iter_next_batch` and was not released before (caller's guarantee).
        drop(unsafe { Box::from_raw(b.owner.cast::<BatchStorage>()) });
    }
    *b = kstate_kv_batch_t::NONE;
}

include!(concat!(env!("OUT_DIR"), "/capi_iter_queries.rs"));
