//! Iterators over a store, read in batches: one call returns many entries.

use std::ffi::c_void;

use super::bytes::Nothing;
use super::kv::kstate_kv_t;
use super::{number, pointer};
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

impl Nothing for kstate_kv_batch_t {
    const NOTHING: kstate_kv_batch_t = kstate_kv_batch_t {
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

/// Opens a key-value iterator with `make` on the store behind `store` and publishes it.
fn open_iter(
    store: *mut kstate_kv_t,
    iter_out: &mut *mut kstate_kv_iter_t,
    make: impl FnOnce(&KvStore) -> Result<KvIter>,
) -> Result<()> {
    *iter_out = pointer(bridge::open_iter(number(store), make)?);
    Ok(())
}

/// Lays a non-empty batch read from an iterator of a store in `format` out for C: each
/// entry's value split from its timestamp, the raw value beside it.
fn batch(format: ValueFormat, data: Vec<RawEntry>) -> Result<kstate_kv_batch_t> {
    let mut entries = Vec::with_capacity(data.len());
    for (k, raw) in &data {
        // `next_batch` checked every value's layout, so these splits cannot fail.
        let (timestamp, v): (i64, &[u8]) = match format {
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
    Ok(kstate_kv_batch_t {
        entries: storage.entries.as_ptr(),
        len: storage.entries.len(),
        owner: Box::into_raw(storage).cast::<c_void>(),
    })
}

/// Releases a batch and resets it to empty, so releasing it again is harmless.
///
/// # Arguments
/// * `batch` - the batch; NULL, or an empty batch, is a no-op.
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
    *b = kstate_kv_batch_t::NOTHING;
}

include!(concat!(env!("OUT_DIR"), "/capi_iter.rs"));
