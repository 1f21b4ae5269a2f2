//! Key-value store functions (declared in `kv.rs.in`): typed (timestamped) and raw reads
//! and writes, batches, restore, upgrade; and the C structs of writes and offsets.

use std::ffi::c_char;

use super::bytes::{found_raw, found_typed, kstate_bytes_t, opt_span, span, utf8};
use super::number;
use crate::{Result, TopicPartition};

/// An open key-value store. Opaque: the pointer value is a handle number (the same kind
/// of number the Java adapter uses) that kstate looks up on every call, never a memory
/// address. A NULL or made-up handle, or a handle of another kind (a `kstate_kv_iter_t*`
/// cast to `kstate_kv_t*`), is reported as `KSTATE_ERR_INVALID_HANDLE`; a closed one as
/// `KSTATE_ERR_STORE_CLOSED`. Numbers are never reused, so a stale handle can never reach
/// a store opened later. Released by `kstate_kv_close`.
///
/// Thread safety: a store handle may be shared by any number of threads and every function
/// may be called on it concurrently. Writes and writer-view reads are serialised; committed
/// reads (`kstate_kv_get_committed`, `kstate_kv_scan` with `KSTATE_READ_COMMITTED`) run in
/// parallel with them and always see whole commits.
pub struct kstate_kv_t {
    _opaque: [u8; 0],
}

/// One entry for `kstate_kv_put_all` / `kstate_kv_put_all_raw`, or one changelog record
/// for `kstate_versioned_restore_batch`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_kv_write_t {
    /// Key bytes (NULL allowed when `key_len` is 0: the empty key).
    pub key: *const u8,
    /// Length of `key`.
    pub key_len: usize,
    /// Value bytes. `kstate_kv_put_all`: the value without timestamp (NULL allowed when
    /// `value_len` is 0). `kstate_kv_put_all_raw`: the value in the store's layout, or NULL
    /// (with `value_len` 0) to delete the key, as Kafka's `put(key, null)`.
    /// `kstate_versioned_restore_batch`: the value, or NULL (with `value_len` 0) for a
    /// tombstone.
    pub value: *const u8,
    /// Length of `value`.
    pub value_len: usize,
    /// Record timestamp (`kstate_kv_put_all`; ignored by the raw variant), or the version's
    /// timestamp (`kstate_versioned_restore_batch`).
    pub timestamp: i64,
}

/// One changelog offset for `kstate_kv_commit`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_offset_t {
    /// Topic name: NUL-terminated UTF-8, not NULL, at most 65,535 bytes (Kafka's own
    /// limit is 249 characters).
    pub topic: *const c_char,
    /// Partition number.
    pub partition: i32,
    /// The offset to record (any value, including Kafka's -4 "unknown"); ignored when
    /// `has_offset` is false.
    pub offset: i64,
    /// true: record `offset` for this partition. false: remove this partition's offset
    /// (Kafka's `null` map value).
    pub has_offset: bool,
}

/// Progress of a long operation: called with the work `done` so far and the estimated
/// `total` (at least `done`), and the `user_data` the caller passed along.
pub type kstate_progress_fn =
    Option<unsafe extern "C" fn(done: u64, total: u64, user_data: *mut std::ffi::c_void)>;

/// One write of a `kstate_kv_write_t` array, checked: key, value (NULL: `None`), timestamp.
type WriteSpans<'a> = (&'a [u8], Option<&'a [u8]>, i64);

/// Checks the spans of each write of a `kstate_kv_write_t` array: `(key, value, timestamp)`,
/// a NULL value as `None`. An error names the entry.
///
/// # Safety
/// Each entry's pointers are NULL or readable for their lengths (the header's pointer rules).
pub(crate) unsafe fn write_spans(entries: &[kstate_kv_write_t]) -> Result<Vec<WriteSpans<'_>>> {
    let mut spans = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        // SAFETY: readable as given (caller's guarantee).
        let (k, v) = unsafe {
            (
                span(e.key, e.key_len, &format!("entries[{i}].key"))?,
                opt_span(e.value, e.value_len, &format!("entries[{i}].value"))?,
            )
        };
        spans.push((k, v, e.timestamp));
    }
    Ok(spans)
}

/// Reads the offsets of a commit or restore: each topic as UTF-8, `has_offset` false as
/// Kafka's `null` (remove the partition's offset).
///
/// # Safety
/// Each `topic` is NULL or NUL-terminated (the header's pointer rules).
pub(crate) unsafe fn parse_offsets(
    offsets: &[kstate_offset_t],
) -> Result<Vec<(TopicPartition, Option<i64>)>> {
    let mut parsed = Vec::with_capacity(offsets.len());
    for (i, o) in offsets.iter().enumerate() {
        // SAFETY: `topic` is NULL or NUL-terminated (caller's guarantee).
        let topic = unsafe { utf8(o.topic, &format!("offsets[{i}].topic"))? };
        parsed.push((
            TopicPartition::new(topic, o.partition),
            o.has_offset.then_some(o.offset),
        ));
    }
    Ok(parsed)
}

include!(concat!(env!("OUT_DIR"), "/capi_kv.rs"));
