//! Key-value store functions: open/close, typed (timestamped) and raw reads and writes,
//! transactions.

use std::ffi::c_char;
use std::sync::Arc;

use super::bytes::{array, init, kstate_bytes_t, opt_span, out, span, utf8, FoundOut};
use super::error::{ffi_call, kstate_error_t};
use super::number;
use super::{isolation, kstate_isolation_t};
use crate::bridge;
use crate::{KvStore, Result};

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

/// One entry for `kstate_kv_put_all` / `kstate_kv_put_all_raw`.
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
    pub value: *const u8,
    /// Length of `value`.
    pub value_len: usize,
    /// Record timestamp (`kstate_kv_put_all` only; ignored by the raw variant).
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

/// The live store behind a handle.
pub(crate) fn store(handle: *const kstate_kv_t) -> Result<Arc<KvStore>> {
    crate::handle::store(number(handle))
}

/// Writes `value` with `timestamp` for `key` in the current transaction (visible to the
/// writer's reads at once, to committed readers after `kstate_kv_commit`).
///
/// # Arguments
/// * `store` - a timestamped store.
/// * `key`, `key_len` - the key; `key` may be NULL only when `key_len` is 0.
/// * `value`, `value_len` - the value without timestamp; NULL only when `value_len` is 0.
/// * `timestamp` - the record timestamp (milliseconds, as in Kafka).
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL data with a non-zero length.
/// * `KSTATE_ERR_KEY_TOO_LARGE`, `KSTATE_ERR_VALUE_TOO_LARGE` - over the limits.
/// * `KSTATE_ERR_FORMAT_MISMATCH` - the store is plain (use `kstate_kv_put_raw`).
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - spilling the transaction to disk failed.
///
/// # Safety
/// `key` / `value` are NULL or valid for reading `key_len` / `value_len` bytes.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_put(
    store: *mut kstate_kv_t,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    timestamp: i64,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = self::store(store)?;
        // SAFETY: spans readable as given (caller's guarantee), used during the call only.
        let (key, value) =
            unsafe { (span(key, key_len, "key")?, span(value, value_len, "value")?) };
        s.put(key, value, timestamp)
    })
}

/// Writes `value` for `key` unless the key already has a value in the writer's view; in
/// that case nothing is written and the existing value is returned.
///
/// # Arguments
/// * `store` - a timestamped store.
/// * `key`, `key_len`, `value`, `value_len`, `timestamp` - as for `kstate_kv_put`.
/// * `existing_out` - receives the existing value (free with `kstate_bytes_free`); set to
///   `{NULL, 0}` on entry.
/// * `existing_timestamp_out` - receives its timestamp; set to 0 on entry.
/// * `found_out` - set to true when a value existed (and nothing was written); false on
///   entry.
///
/// # Returns
/// NULL on success, else an error (out-parameters keep their entry values).
///
/// # Errors
/// As `kstate_kv_put`, plus `KSTATE_ERR_INVALID_ARGUMENT` for a NULL out-parameter.
///
/// # Safety
/// As `kstate_kv_put`; each out-parameter is NULL or valid for writing its type.
///
/// # Thread safety
/// Safe from any thread; the check and the write are one atomic step.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_put_if_absent(
    store: *mut kstate_kv_t,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    timestamp: i64,
    existing_out: *mut kstate_bytes_t,
    existing_timestamp_out: *mut i64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    let outs = FoundOut::typed(
        existing_out,
        "existing_out",
        existing_timestamp_out,
        "existing_timestamp_out",
        found_out,
    );
    // SAFETY: out-parameters NULL or writable; spans readable as given (caller's guarantee).
    unsafe {
        outs.call(|| {
            let (key, value) = (span(key, key_len, "key")?, span(value, value_len, "value")?);
            let existing = self::store(store)?.put_if_absent(key, value, timestamp)?;
            Ok(existing.map(|v| (v.value, v.timestamp)))
        })
    }
}

/// Reads `key` in the writer's view (committed data plus this store's uncommitted writes).
///
/// # Arguments
/// * `store` - a timestamped store.
/// * `key`, `key_len` - the key; `key` may be NULL only when `key_len` is 0.
/// * `value_out` - receives the value without timestamp (free with `kstate_bytes_free`);
///   `{NULL, 0}` on entry and when not found.
/// * `timestamp_out` - receives the timestamp; 0 on entry and when not found.
/// * `found_out` - true when the key has a value; false on entry.
///
/// # Returns
/// NULL on success (found or not), else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - a NULL out-parameter, NULL key with non-zero length.
/// * `KSTATE_ERR_KEY_TOO_LARGE`; `KSTATE_ERR_FORMAT_MISMATCH` (plain store: use
///   `kstate_kv_get_raw`); `KSTATE_ERR_INVALID_VALUE`, `KSTATE_ERR_STORAGE`.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - (uncommitted reads) an earlier commit is in doubt and
///   finishing it failed again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// `key` is NULL or readable for `key_len` bytes; out-parameters NULL or writable.
///
/// # Thread safety
/// Safe from any thread; serialised with the writer.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_get(
    store: *mut kstate_kv_t,
    key: *const u8,
    key_len: usize,
    value_out: *mut kstate_bytes_t,
    timestamp_out: *mut i64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        get_typed(
            store,
            false,
            key,
            key_len,
            value_out,
            timestamp_out,
            found_out,
        )
    }
}

/// Reads `key` as committed: uncommitted writes of the store are invisible. This is the
/// read for other threads (Kafka's interactive queries).
///
/// # Arguments
/// As `kstate_kv_get`.
///
/// # Returns
/// NULL on success (found or not), else an error.
///
/// # Errors
/// As `kstate_kv_get`.
///
/// # Safety
/// As `kstate_kv_get`.
///
/// # Thread safety
/// Safe from any thread; runs concurrently with the writer and other readers and always
/// sees one whole commit, never part of one.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_get_committed(
    store: *mut kstate_kv_t,
    key: *const u8,
    key_len: usize,
    value_out: *mut kstate_bytes_t,
    timestamp_out: *mut i64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: forwarded; same contract.
    unsafe {
        get_typed(
            store,
            true,
            key,
            key_len,
            value_out,
            timestamp_out,
            found_out,
        )
    }
}

/// # Safety
/// As `kstate_kv_get`.
unsafe fn get_typed(
    store: *mut kstate_kv_t,
    committed: bool,
    key: *const u8,
    key_len: usize,
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
            let s = self::store(store)?;
            let found = if committed {
                s.get_with(crate::Isolation::ReadCommitted, key)?
            } else {
                s.get(key)?
            };
            Ok(found.map(|v| (v.value, v.timestamp)))
        })
    }
}

/// Deletes `key` in the current transaction and returns the value it had in the writer's
/// view.
///
/// # Arguments
/// * `store` - a timestamped store.
/// * `key`, `key_len` - the key; `key` may be NULL only when `key_len` is 0.
/// * `old_value_out`, `old_timestamp_out`, `found_out` - the previous value, as
///   `kstate_kv_get` returns it.
///
/// # Returns
/// NULL on success (whether or not the key existed), else an error.
///
/// # Errors
/// As `kstate_kv_get`.
///
/// # Safety
/// As `kstate_kv_get`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_delete(
    store: *mut kstate_kv_t,
    key: *const u8,
    key_len: usize,
    old_value_out: *mut kstate_bytes_t,
    old_timestamp_out: *mut i64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    let outs = FoundOut::typed(
        old_value_out,
        "old_value_out",
        old_timestamp_out,
        "old_timestamp_out",
        found_out,
    );
    // SAFETY: out-parameters NULL or writable; key readable as given (caller's guarantee).
    unsafe {
        outs.call(|| {
            let old = self::store(store)?.delete(span(key, key_len, "key")?)?;
            Ok(old.map(|v| (v.value, v.timestamp)))
        })
    }
}

/// Writes many entries in one call. All entries are validated first: on error nothing was
/// written. A later entry for the same key wins.
///
/// # Arguments
/// * `store` - a timestamped store.
/// * `entries`, `entries_len` - the entries (key, value without timestamp, timestamp);
///   `entries` may be NULL only when `entries_len` is 0.
///
/// # Errors
/// As `kstate_kv_put`, for any entry; `KSTATE_ERR_INVALID_ARGUMENT` names the entry.
///
/// # Safety
/// `entries` is NULL or readable for `entries_len` elements, each of whose pointers
/// satisfies the rules of `kstate_kv_put`.
///
/// # Thread safety
/// Safe from any thread; the entries are written as one step.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_put_all(
    store: *mut kstate_kv_t,
    entries: *const kstate_kv_write_t,
    entries_len: usize,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = self::store(store)?;
        // SAFETY: readable as given (caller's guarantee).
        let entries = unsafe { array(entries, entries_len, "entries")? };
        let mut typed = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            // SAFETY: each entry's spans are readable as given (caller's guarantee).
            let (k, v) = unsafe {
                (
                    span(e.key, e.key_len, &format!("entries[{i}].key"))?,
                    span(e.value, e.value_len, &format!("entries[{i}].value"))?,
                )
            };
            typed.push((k, v, e.timestamp));
        }
        s.put_all(&typed)
    })
}

/// Writes a value given in the store's own layout (for a timestamped store: 8-byte
/// big-endian timestamp followed by the value, as Kafka serialises `ValueAndTimestamp`;
/// for a headers-format store: Kafka's `ValueTimestampHeaders` layout; for a plain store:
/// the value), or deletes the key when `value` is NULL.
///
/// # Arguments
/// * `store` - any store.
/// * `key`, `key_len` - the key; `key` may be NULL only when `key_len` is 0.
/// * `value`, `value_len` - the raw value; NULL with `value_len` 0 deletes `key` (Kafka's
///   `put(key, null)`). An empty value is a non-NULL pointer with `value_len` 0.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL data with a non-zero length.
/// * `KSTATE_ERR_INVALID_VALUE` - a timestamped store got fewer than 8 bytes, a
///   headers-format store a malformed value.
/// * `KSTATE_ERR_KEY_TOO_LARGE`, `KSTATE_ERR_VALUE_TOO_LARGE`, `KSTATE_ERR_STORAGE`.
///
/// # Safety
/// `key` / `value` are NULL or readable for `key_len` / `value_len` bytes.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_put_raw(
    store: *mut kstate_kv_t,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = self::store(store)?;
        // SAFETY: spans readable as given (caller's guarantee).
        let (key, value) = unsafe {
            (
                span(key, key_len, "key")?,
                opt_span(value, value_len, "value")?,
            )
        };
        s.put_raw(key, value)
    })
}

/// `kstate_kv_put_if_absent` with values in the store's own layout (see
/// `kstate_kv_put_raw`); works on plain and timestamped stores.
///
/// # Arguments
/// * `store`, `key`, `key_len` - as `kstate_kv_put_raw`.
/// * `value`, `value_len` - the raw value; NULL only when `value_len` is 0 (empty value).
/// * `existing_out` - receives the existing raw value; `{NULL, 0}` on entry.
/// * `found_out` - true when a value existed (and nothing was written); false on entry.
///
/// # Errors
/// As `kstate_kv_put_raw`, plus `KSTATE_ERR_INVALID_ARGUMENT` for a NULL out-parameter.
///
/// # Safety
/// As `kstate_kv_put_raw`; out-parameters NULL or writable.
///
/// # Thread safety
/// Safe from any thread; the check and the write are one atomic step.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_put_if_absent_raw(
    store: *mut kstate_kv_t,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    existing_out: *mut kstate_bytes_t,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    let outs = FoundOut::raw(existing_out, "existing_out", found_out);
    // SAFETY: out-parameters NULL or writable; spans readable as given (caller's guarantee).
    unsafe {
        outs.call(|| {
            let (key, value) = (span(key, key_len, "key")?, span(value, value_len, "value")?);
            let existing = self::store(store)?.put_if_absent_raw(key, value)?;
            Ok(existing.map(|v| (v, 0)))
        })
    }
}

/// Reads `key` with its value in the store's own layout (see `kstate_kv_put_raw`), in the
/// writer's view or as committed.
///
/// # Arguments
/// * `store` - any store.
/// * `isolation` - `KSTATE_READ_UNCOMMITTED` (writer's view) or `KSTATE_READ_COMMITTED`.
/// * `key`, `key_len` - the key; `key` may be NULL only when `key_len` is 0.
/// * `value_out` - receives the raw value (free with `kstate_bytes_free`); `{NULL, 0}` on
///   entry and when not found.
/// * `found_out` - true when the key has a value; false on entry.
///
/// # Returns
/// NULL on success (found or not), else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - unknown `isolation`, NULL out-parameter, NULL key
///   with non-zero length.
/// * `KSTATE_ERR_KEY_TOO_LARGE`, `KSTATE_ERR_STORAGE`.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - (uncommitted reads) an earlier commit is in doubt and
///   finishing it failed again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// As `kstate_kv_get`.
///
/// # Thread safety
/// As `kstate_kv_get` / `kstate_kv_get_committed`, depending on `isolation`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_get_raw(
    store: *mut kstate_kv_t,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    value_out: *mut kstate_bytes_t,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    let outs = FoundOut::raw(value_out, "value_out", found_out);
    // SAFETY: out-parameters NULL or writable; key readable as given (caller's guarantee).
    unsafe {
        outs.call(|| {
            let key = span(key, key_len, "key")?;
            let isolation = self::isolation(isolation)?;
            let found = self::store(store)?.get_raw_with(isolation, key)?;
            Ok(found.map(|v| (v, 0)))
        })
    }
}

/// Deletes `key` and returns its previous value in the store's own layout; works on plain
/// and timestamped stores.
///
/// # Arguments
/// * `store`, `key`, `key_len` - as `kstate_kv_put_raw`.
/// * `old_value_out` - receives the previous raw value; `{NULL, 0}` on entry.
/// * `found_out` - true when the key had a value; false on entry.
///
/// # Returns
/// NULL on success (whether or not the key existed), else an error.
///
/// # Errors
/// As `kstate_kv_get_raw`.
///
/// # Safety
/// As `kstate_kv_get_raw`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_delete_raw(
    store: *mut kstate_kv_t,
    key: *const u8,
    key_len: usize,
    old_value_out: *mut kstate_bytes_t,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    let outs = FoundOut::raw(old_value_out, "old_value_out", found_out);
    // SAFETY: out-parameters NULL or writable; key readable as given (caller's guarantee).
    unsafe {
        outs.call(|| {
            let old = self::store(store)?.delete_raw(span(key, key_len, "key")?)?;
            Ok(old.map(|v| (v, 0)))
        })
    }
}

/// `kstate_kv_put_all` with values in the store's own layout; an entry whose `value` is
/// NULL (with `value_len` 0) deletes its key. `timestamp` fields are ignored.
///
/// # Arguments
/// * `store` - any store.
/// * `entries`, `entries_len` - the entries; `entries` NULL only when `entries_len` is 0.
///
/// # Returns
/// NULL on success, else an error; on error nothing was written.
///
/// # Errors
/// As `kstate_kv_put_raw`, for any entry.
///
/// # Safety
/// As `kstate_kv_put_all`.
///
/// # Thread safety
/// Safe from any thread; the entries are written as one step.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_put_all_raw(
    store: *mut kstate_kv_t,
    entries: *const kstate_kv_write_t,
    entries_len: usize,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = self::store(store)?;
        // SAFETY: readable as given (caller's guarantee).
        let entries = unsafe { array(entries, entries_len, "entries")? };
        let mut raw = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            // SAFETY: each entry's spans are readable as given (caller's guarantee).
            let (k, v) = unsafe {
                (
                    span(e.key, e.key_len, &format!("entries[{i}].key"))?,
                    opt_span(e.value, e.value_len, &format!("entries[{i}].value"))?,
                )
            };
            raw.push((k, v));
        }
        s.put_all_raw(raw)
    })
}

/// Restores a batch of changelog records that are committed upstream already (Kafka's
/// restore after a rebalance or a lost disk) and commits them at once with `offsets` and
/// `metadata`, as `kstate_kv_commit` would. The fast path for restores: the records go
/// straight to the store's engine in one batch without the write-ahead log, with no
/// transaction buffer, no spill and no second write.
///
/// Entries are in changelog order, values in the store's own layout as for
/// `kstate_kv_put_all_raw` (NULL deletes); for one key, the last entry wins. Every later
/// call on the store (from any thread) sees the batch committed.
///
/// Consecutive batches are gathered in memory, up to the store's `max_uncommitted_bytes`,
/// and reach the engine together just before the store's next other operation (read,
/// write, commit, offset query or close) or when the bound is reached. On RocksDB a
/// gathering of 1 MiB or more (or of `max_uncommitted_bytes`, if lower) is sorted,
/// written as one file and ingested: no memtable, no flush. A smaller one is written in
/// one batch without the write-ahead log, durable at the store's next commit or close, or
/// earlier when its memory buffers fill. After a crash the store holds a completed restore
/// or an earlier commit, and `kstate_kv_committed_offset` says where to restore from:
/// never restored data without its offset, nor an offset without its data.
///
/// # Arguments
/// * `store` - the store; its transaction must have no uncommitted writes.
/// * `entries`, `entries_len` - the records; `entries` NULL only when `entries_len` is 0.
/// * `offsets`, `offsets_len` - the changelog offsets, as for `kstate_kv_commit`.
/// * `metadata`, `metadata_len` - as for `kstate_kv_commit`.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - the transaction has uncommitted writes (commit or roll
///   them back first; nothing was written); NULL arrays, blobs or topics as for
///   `kstate_kv_commit`.
/// * `KSTATE_ERR_INVALID_VALUE`, `KSTATE_ERR_KEY_TOO_LARGE`, `KSTATE_ERR_VALUE_TOO_LARGE` - an
///   entry is invalid; nothing was written.
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - the engine write failed; the store refuses
///   every call until it is closed and reopened, which recovers the last durable commit.
///   Writing gathered batches can also fail on the store's next call, which then returns
///   this error and leaves the store in the same state.
///
/// # Safety
/// `entries` as for `kstate_kv_put_all_raw`; `offsets` and `metadata` as for
/// `kstate_kv_commit`.
///
/// # Thread safety
/// Safe from any thread; committed readers see all of the batch or none of it.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_restore_batch(
    store: *mut kstate_kv_t,
    entries: *const kstate_kv_write_t,
    entries_len: usize,
    offsets: *const kstate_offset_t,
    offsets_len: usize,
    metadata: *const u8,
    metadata_len: usize,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = self::store(store)?;
        // SAFETY: readable as given (caller's guarantee).
        let (entries, offsets, metadata) = unsafe {
            (
                array(entries, entries_len, "entries")?,
                super::txn::parse_offsets(offsets, offsets_len)?,
                opt_span(metadata, metadata_len, "metadata")?,
            )
        };
        let mut raw = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            // SAFETY: each entry's spans are readable as given (caller's guarantee).
            let (k, v) = unsafe {
                (
                    span(e.key, e.key_len, &format!("entries[{i}].key"))?,
                    opt_span(e.value, e.value_len, &format!("entries[{i}].value"))?,
                )
            };
            raw.push((k, v));
        }
        s.restore_batch(raw, &offsets, metadata)
    })
}

/// Approximate number of entries in the writer's view: exact for committed data on the
/// memory engine, RocksDB's estimate otherwise, adjusted by uncommitted puts and deletes.
///
/// # Arguments
/// * `store` - the store.
/// * `count_out` - receives the estimate; 0 on entry.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `count_out` NULL.
/// * `KSTATE_ERR_STORAGE`.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - (uncommitted reads) an earlier commit is in doubt and
///   finishing it failed again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// `count_out` NULL or writable.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_approximate_num_entries(
    store: *mut kstate_kv_t,
    count_out: *mut u64,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(count_out, 0) };
    ffi_call(|| {
        // SAFETY: initialised above.
        let count_out = unsafe { out(count_out, "count_out")? };
        *count_out = self::store(store)?.approximate_num_entries()?;
        Ok(())
    })
}

/// An integer property of the store by RocksDB name, as the Java adapter's metrics read
/// them: a RocksDB integer property such as `"rocksdb.cur-size-all-mem-tables"` or
/// `"rocksdb.estimate-num-keys"` (summed over the store's column families),
/// `"rocksdb.block-cache-usage"` / `"rocksdb.block-cache-capacity"` (the store's cache),
/// or kstate's counters `"kstate.commits-in-doubt"`, `"kstate.recovery-rolled-forward"`,
/// `"kstate.spills"`, `"kstate.roll-forwards"` and `"kstate.restore-ingestions"` (large
/// restores written as one sorted file and ingested, see `kstate_kv_restore_batch`).
/// The memory engine has no RocksDB property.
///
/// # Arguments
/// * `store` - the store.
/// * `name` - NUL-terminated UTF-8 property name.
/// * `value_out` - receives the value; 0 on entry.
/// * `found_out` - receives true when the store has the property; false on entry.
///
/// # Returns
/// NULL on success (also when the property does not exist: `*found_out` is then false),
/// else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `name`, `value_out` or `found_out` NULL, or `name`
///   not UTF-8.
/// * `KSTATE_ERR_STORAGE` - RocksDB failed to read it.
///
/// # Safety
/// `name` NULL or a NUL-terminated string; `value_out` and `found_out` NULL or writable.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_property(
    store: *mut kstate_kv_t,
    name: *const c_char,
    value_out: *mut u64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe {
        init(value_out, 0);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: initialised above.
        let value_out = unsafe { out(value_out, "value_out")? };
        // SAFETY: initialised above.
        let found_out = unsafe { out(found_out, "found_out")? };
        // SAFETY: NULL or NUL-terminated (caller's guarantee).
        let name = unsafe { utf8(name, "name")? };
        if let Some(v) = self::store(store)?.property(name)? {
            *value_out = v;
            *found_out = true;
        }
        Ok(())
    })
}

/// Progress of a long operation: called with the work `done` so far and the estimated
/// `total` (at least `done`), and the `user_data` the caller passed along.
pub type kstate_progress_fn =
    Option<unsafe extern "C" fn(done: u64, total: u64, user_data: *mut std::ffi::c_void)>;

/// Upgrades a store running in upgrade mode (a plain store opened timestamped, a plain or
/// timestamped store opened in the headers format) by **prepare and swap**: builds a store
/// of the new format in the side directory `.<name>.kstate-swap` from the last committed
/// snapshot while the store keeps serving every call from other threads, carries over the
/// keys written meanwhile, commits it with the store's committed offsets and metadata,
/// swaps the two directories atomically and continues on the new store, in regular mode,
/// in the same handle. A kill at any point leaves the old store or the new one live and
/// complete; the next open removes what is left of the other.
///
/// # Arguments
/// * `store` - a RocksDB store.
/// * `progress` - called after each batch copied from the snapshot with the entries copied
///   so far and the estimated total (`done` increases from call to call; the last call has
///   `done == total`); NULL for none.
/// * `user_data` - passed to `progress` as is (may be NULL).
///
/// # Returns
/// NULL on success (also when the store is not in upgrade mode: nothing is done and
/// `progress` is not called), else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`;
///   `KSTATE_ERR_STORE_CLOSED` also when the store was closed during the swap (by
///   `progress`, say): the swap is abandoned, the side directory removed by the next open.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - the store has uncommitted writes when the swap starts
///   (commit or roll them back first); a memory-engine store; an upgrade by swap already
///   running on this store (from `progress`, or from another thread).
/// * `KSTATE_ERR_INTERNAL` - a panic in kstate's wrapper of `progress`: the swap is
///   abandoned, the store unchanged (still in upgrade mode).
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - building or swapping failed: the store is
///   unchanged (still in upgrade mode), except when reopening the new store failed, after
///   which the handle is closed and the new store is on disk.
///
/// Uncommitted writes made while the swap runs stay uncommitted on the new store; open
/// iterators of the store are closed by the swap (`KSTATE_ERR_ITERATOR_CLOSED`).
///
/// # Safety
/// `progress` is NULL or a function of this signature; it runs on the calling thread and
/// must not unwind (no C++ exception, no `longjmp`) out of itself. It may call into the
/// same store: no lock of the store is held while it runs, so reads, writes and commits
/// work as from another thread (and are carried over), a nested `kstate_kv_upgrade_swap`
/// fails with `KSTATE_ERR_INVALID_ARGUMENT`, and `kstate_kv_close` makes this call fail
/// with `KSTATE_ERR_STORE_CLOSED`; none deadlocks.
///
/// # Thread safety
/// Safe from any thread; other threads may use the store throughout (they wait for a
/// moment while the last writes are carried over and the directories swapped).
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_upgrade_swap(
    store: *mut kstate_kv_t,
    progress: kstate_progress_fn,
    user_data: *mut std::ffi::c_void,
) -> *mut kstate_error_t {
    ffi_call(|| {
        bridge::upgrade_by_swap(number(store), &mut |done, total| {
            if let Some(f) = progress {
                // SAFETY: `f` is a function of this signature that does not unwind, and
                // `user_data` is the caller's own pointer handed back (caller's guarantee).
                unsafe { f(done, total, user_data) };
            }
            std::ops::ControlFlow::Continue(())
        })
        .map(|_| ())
    })
}

/// Tells whether a store runs in upgrade mode: it was opened in a later value format than
/// its values (a plain store opened timestamped, say), reads old values converted and
/// migrates them as keys are written; false once no old value is left at open, or after
/// `kstate_kv_upgrade_swap`.
///
/// # Arguments
/// * `store` - the store.
/// * `upgrading_out` - receives the answer; false on entry.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `upgrading_out` NULL.
///
/// # Safety
/// `upgrading_out` NULL or writable.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_is_upgrading(
    store: *mut kstate_kv_t,
    upgrading_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(upgrading_out, false) };
    ffi_call(|| {
        // SAFETY: initialised above.
        let upgrading_out = unsafe { out(upgrading_out, "upgrading_out")? };
        *upgrading_out = bridge::is_upgrading(number(store))?;
        Ok(())
    })
}
