//! Key-value store functions: open/close, typed (timestamped) and raw reads and writes,
//! transactions.

use std::ffi::c_char;
use std::sync::Arc;

use super::bytes::{array, cstr, init, kstate_bytes_t, opt_span, out, span, utf8};
use super::error::{ffi_call, kstate_error_t};
use super::options::kstate_kv_options_t;
use super::{isolation, kstate_isolation_t};
use super::{number, pointer};
use crate::bridge;
use crate::{KvStore, Result, TopicPartition, ValueAndTimestamp};

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

/// Writes a found value (or nothing) into the out-parameters of a typed read.
fn give_typed(
    found: Option<ValueAndTimestamp>,
    value_out: &mut kstate_bytes_t,
    timestamp_out: &mut i64,
    found_out: &mut bool,
) {
    if let Some(v) = found {
        *timestamp_out = v.timestamp;
        *value_out = kstate_bytes_t::from_vec(v.value);
        *found_out = true;
    }
}

/// Writes a found raw value (or nothing) into the out-parameters of a raw read.
fn give_raw(found: Option<Vec<u8>>, value_out: &mut kstate_bytes_t, found_out: &mut bool) {
    if let Some(v) = found {
        *value_out = kstate_bytes_t::from_vec(v);
        *found_out = true;
    }
}

/// Opens (creating it if absent) and recovers the store at `path`.
///
/// # Arguments
/// * `path` - NUL-terminated directory path, not empty (any other bytes; it need not be
///   UTF-8). For the memory engine it only names the store and may be NULL.
/// * `options` - options set up by `kstate_kv_options_init`, possibly changed; NULL means
///   the defaults.
/// * `store_out` - receives the store handle; set to NULL on entry and on failure.
///
/// # Returns
/// NULL on success, else an error (free it with `kstate_error_free`).
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `store_out` NULL; `path` NULL for RocksDB; `path`
///   empty (`""`); `options->struct_size` not a `KSTATE_KV_OPTIONS_SIZE_*` (options not
///   initialised with `kstate_kv_options_init`, or a header newer than the library); an
///   option out of range (unknown engine or format, zero `max_uncommitted_bytes` or write
///   buffer size, fewer than 1 write buffer, a bounded memory budget whose memtable part is
///   not strictly between 0 and the budget).
/// * `KSTATE_ERR_LOCKED` - another handle or process has the store open.
/// * `KSTATE_ERR_FORMAT_MISMATCH` - the store was created with a later value format
///   (plain < timestamped < headers), or holds values of two older formats.
/// * `KSTATE_ERR_NOT_A_STORE`, `KSTATE_ERR_UNSUPPORTED_FORMAT`, `KSTATE_ERR_CORRUPTION`,
///   `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - what is at `path` cannot be opened.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `options` is NULL or points to a
/// `kstate_kv_options_t` of at least `options->struct_size` readable bytes; `store_out` is
/// NULL or valid for writing one pointer.
///
/// # Thread safety
/// Safe to call from any thread. The handle it returns may be used from any number of
/// threads at once (see `kstate_kv_t`).
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_open(
    path: *const c_char,
    options: *const kstate_kv_options_t,
    store_out: *mut *mut kstate_kv_t,
) -> *mut kstate_error_t {
    // SAFETY: `store_out` is NULL or writable (caller's guarantee).
    unsafe { init(store_out, std::ptr::null_mut()) };
    ffi_call(|| {
        // SAFETY: as above; initialised just before.
        let store_out = unsafe { out(store_out, "store_out")? };
        let options = if options.is_null() {
            kstate_kv_options_t::defaults()
        } else {
            // SAFETY: non-NULL, and points to options initialised by kstate_kv_options_init
            // with the caller's struct size (caller's guarantee); read in that layout.
            unsafe { kstate_kv_options_t::read(options)? }
        };
        let options = options.to_store_options()?;
        let path = if path.is_null() {
            None
        } else {
            // SAFETY: non-NULL and NUL-terminated (caller's guarantee).
            Some(unsafe { cstr(path, "path")? }.to_bytes())
        };
        *store_out = pointer(bridge::open_store(path, &options)?);
        Ok(())
    })
}

/// Closes a store: uncommitted writes are discarded, every iterator of the store is closed
/// (later calls on them fail with `KSTATE_ERR_ITERATOR_CLOSED`; still release them with
/// `kstate_kv_iter_close`), files are released, and the handle becomes invalid.
///
/// # Arguments
/// * `store` - the store handle.
///
/// # Returns
/// NULL on success, else an error. The handle is invalid afterwards in both cases,
/// unless the error is `KSTATE_ERR_INVALID_HANDLE` / `KSTATE_ERR_STORE_CLOSED`.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE` - `store` is NULL, not a store handle (an iterator handle,
///   say), or never issued.
/// * `KSTATE_ERR_STORE_CLOSED` - `store` was already closed (double close).
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - a commit left in doubt could still not be finished;
///   the store is closed anyway, and the next open holds either the previous commit or
///   that one.
/// * `KSTATE_ERR_STORAGE` - the store was broken by an earlier failed restore; it is
///   closed anyway, and the next open recovers the last durable commit.
///
/// Otherwise the close succeeds, even on a disk that refuses writes: every commit that
/// returned success is durable (in RocksDB's write-ahead log). If recording the clean close
/// or flushing failed, the next open replays the log and reports the close as unclean;
/// restore batches not yet flushed may then be lost as in a kill (the store opens at an
/// earlier whole commit, with its offset).
///
/// # Safety
/// None required: the handle is never dereferenced, any value is accepted.
///
/// # Thread safety
/// Safe to call from any thread, also while other threads use the store: calls already
/// running finish first, later ones fail with `KSTATE_ERR_STORE_CLOSED`.
#[must_use]
#[no_mangle]
pub extern "C" fn kstate_kv_close(store: *mut kstate_kv_t) -> *mut kstate_error_t {
    ffi_call(|| bridge::close_store(number(store)))
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
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL data with a non-zero length.
/// * `KSTATE_ERR_KEY_TOO_LARGE`, `KSTATE_ERR_VALUE_TOO_LARGE` - over the limits.
/// * `KSTATE_ERR_FORMAT_MISMATCH` - the store is plain (use `kstate_kv_put_raw`).
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - spilling the transaction to disk failed.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - an earlier commit is in doubt and finishing it failed
///   again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// `key` / `value` are NULL or valid for reading `key_len` / `value_len` bytes.
///
/// # Thread safety
/// Safe from any thread; writes and writer-view reads are serialised by the store.
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
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(existing_out, kstate_bytes_t::NONE);
        init(existing_timestamp_out, 0);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above; spans readable as given.
        let (existing_out, ts_out, found_out, key, value) = unsafe {
            (
                out(existing_out, "existing_out")?,
                out(existing_timestamp_out, "existing_timestamp_out")?,
                out(found_out, "found_out")?,
                span(key, key_len, "key")?,
                span(value, value_len, "value")?,
            )
        };
        let existing = self::store(store)?.put_if_absent(key, value, timestamp)?;
        give_typed(existing, existing_out, ts_out, found_out);
        Ok(())
    })
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
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
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
        let s = self::store(store)?;
        let found = if committed {
            s.get_with(crate::Isolation::ReadCommitted, key)?
        } else {
            s.get(key)?
        };
        give_typed(found, value_out, ts_out, found_out);
        Ok(())
    })
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
///
/// # Thread safety
/// Safe from any thread; serialised with other writes.
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
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(old_value_out, kstate_bytes_t::NONE);
        init(old_timestamp_out, 0);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above; key readable as given.
        let (value_out, ts_out, found_out, key) = unsafe {
            (
                out(old_value_out, "old_value_out")?,
                out(old_timestamp_out, "old_timestamp_out")?,
                out(found_out, "found_out")?,
                span(key, key_len, "key")?,
            )
        };
        let old = self::store(store)?.delete(key)?;
        give_typed(old, value_out, ts_out, found_out);
        Ok(())
    })
}

/// Writes many entries in one call. All entries are validated first: on error nothing was
/// written. A later entry for the same key wins.
///
/// # Arguments
/// * `store` - a timestamped store.
/// * `entries`, `entries_len` - the entries (key, value without timestamp, timestamp);
///   `entries` may be NULL only when `entries_len` is 0.
///
/// # Returns
/// NULL on success, else an error.
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
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL data with a non-zero length.
/// * `KSTATE_ERR_INVALID_VALUE` - a timestamped store got fewer than 8 bytes, a
///   headers-format store a malformed value.
/// * `KSTATE_ERR_KEY_TOO_LARGE`, `KSTATE_ERR_VALUE_TOO_LARGE`, `KSTATE_ERR_STORAGE`.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - an earlier commit is in doubt and finishing it failed
///   again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// `key` / `value` are NULL or readable for `key_len` / `value_len` bytes.
///
/// # Thread safety
/// Safe from any thread; serialised with other writes.
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
/// # Returns
/// NULL on success, else an error.
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
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(existing_out, kstate_bytes_t::NONE);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above; spans readable as given.
        let (existing_out, found_out, key, value) = unsafe {
            (
                out(existing_out, "existing_out")?,
                out(found_out, "found_out")?,
                span(key, key_len, "key")?,
                span(value, value_len, "value")?,
            )
        };
        let existing = self::store(store)?.put_if_absent_raw(key, value)?;
        give_raw(existing, existing_out, found_out);
        Ok(())
    })
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
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
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
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(value_out, kstate_bytes_t::NONE);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above; key readable as given.
        let (value_out, found_out, key) = unsafe {
            (
                out(value_out, "value_out")?,
                out(found_out, "found_out")?,
                span(key, key_len, "key")?,
            )
        };
        let isolation = self::isolation(isolation)?;
        let found = self::store(store)?.get_raw_with(isolation, key)?;
        give_raw(found, value_out, found_out);
        Ok(())
    })
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
///
/// # Thread safety
/// Safe from any thread; serialised with other writes.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_delete_raw(
    store: *mut kstate_kv_t,
    key: *const u8,
    key_len: usize,
    old_value_out: *mut kstate_bytes_t,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(old_value_out, kstate_bytes_t::NONE);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above; key readable as given.
        let (value_out, found_out, key) = unsafe {
            (
                out(old_value_out, "old_value_out")?,
                out(found_out, "found_out")?,
                span(key, key_len, "key")?,
            )
        };
        let old = self::store(store)?.delete_raw(key)?;
        give_raw(old, value_out, found_out);
        Ok(())
    })
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

/// Commits the transaction: every uncommitted write, the changelog offsets and the
/// metadata blob become durable in one atomic step. After a crash at any instant, the
/// store reopens to exactly the state of some completed commit, with that commit's offsets.
///
/// Offsets follow Kafka's `StateStore.commit(Map<TopicPartition, Long>)`: an empty array
/// removes all committed offsets; an entry with `has_offset` false removes that partition's
/// offset; partitions not named keep theirs.
///
/// # Arguments
/// * `store` - the store.
/// * `offsets`, `offsets_len` - the offsets; `offsets` may be NULL only when
///   `offsets_len` is 0.
/// * `metadata`, `metadata_len` - an opaque blob (e.g. Kafka's serialized `Position`) that
///   replaces the stored one; NULL with length 0 keeps the previous blob.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL array or blob with a non-zero length, a NULL
///   topic, a topic that is not valid UTF-8 or longer than 65,535 bytes (nothing written).
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - moving the rest of a large transaction to disk
///   failed before the commit point: the transaction is still pending, unchanged; retry
///   the commit or roll back.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - the commit itself was written but not confirmed
///   durable. It will complete: the next call on the store (this commit again, a rollback,
///   any read or write) first retries it, and committed readers see the previous commit
///   until then; a rollback cannot undo it. If the process ends first, the next open holds
///   either the previous commit or this one (`kstate_kv_committed_offset` tells which).
///
/// # Safety
/// `offsets` is NULL or readable for `offsets_len` elements whose `topic` is NULL or a
/// NUL-terminated string; `metadata` is NULL or readable for `metadata_len` bytes.
///
/// # Thread safety
/// Safe from any thread; committed readers see either all of the commit or none of it.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_commit(
    store: *mut kstate_kv_t,
    offsets: *const kstate_offset_t,
    offsets_len: usize,
    metadata: *const u8,
    metadata_len: usize,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = self::store(store)?;
        // SAFETY: readable as given (caller's guarantee).
        let (offsets, metadata) = unsafe {
            (
                super::txn::parse_offsets(offsets, offsets_len)?,
                opt_span(metadata, metadata_len, "metadata")?,
            )
        };
        s.commit(&offsets, metadata)
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
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - the transaction has uncommitted writes (commit or roll
///   them back first; nothing was written); NULL arrays, blobs or topics as for
///   `kstate_kv_commit`.
/// * `KSTATE_ERR_INVALID_VALUE`, `KSTATE_ERR_KEY_TOO_LARGE`, `KSTATE_ERR_VALUE_TOO_LARGE` - an
///   entry is invalid; nothing was written.
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - the engine write failed; the store refuses
///   every call until it is closed and reopened, which recovers the last durable commit.
///   Writing gathered batches can also fail on the store's next call, which then returns
///   this error and leaves the store in the same state.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - an earlier commit is in doubt and finishing it failed
///   again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
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

/// The changelog offset last committed for a topic partition.
///
/// # Arguments
/// * `store` - the store.
/// * `topic` - NUL-terminated UTF-8 topic name.
/// * `partition` - partition number.
/// * `offset_out` - receives the offset; 0 on entry and when none is committed.
/// * `found_out` - true when an offset is committed for the partition; false on entry.
///
/// # Returns
/// NULL on success (found or not), else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL or non-UTF-8 `topic`, NULL out-parameter.
///
/// # Safety
/// `topic` is NULL or NUL-terminated; out-parameters NULL or writable.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_committed_offset(
    store: *mut kstate_kv_t,
    topic: *const c_char,
    partition: i32,
    offset_out: *mut i64,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(offset_out, 0);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above; `topic` NULL or NUL-terminated.
        let (offset_out, found_out, topic) = unsafe {
            (
                out(offset_out, "offset_out")?,
                out(found_out, "found_out")?,
                utf8(topic, "topic")?,
            )
        };
        let tp = TopicPartition::new(topic, partition);
        if let Some(offset) = self::store(store)?.committed_offset(&tp)? {
            *offset_out = offset;
            *found_out = true;
        }
        Ok(())
    })
}

/// The metadata blob stored by the last commit that carried one.
///
/// # Arguments
/// * `store` - the store.
/// * `metadata_out` - receives the blob (free with `kstate_bytes_free`); `{NULL, 0}` on
///   entry and when there is none.
/// * `found_out` - true when a blob is stored; false on entry.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL out-parameter.
///
/// # Safety
/// Out-parameters NULL or writable.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_committed_metadata(
    store: *mut kstate_kv_t,
    metadata_out: *mut kstate_bytes_t,
    found_out: *mut bool,
) -> *mut kstate_error_t {
    // SAFETY: each out-parameter is NULL or writable (caller's guarantee).
    unsafe {
        init(metadata_out, kstate_bytes_t::NONE);
        init(found_out, false);
    }
    ffi_call(|| {
        // SAFETY: out-parameters initialised above.
        let (metadata_out, found_out) = unsafe {
            (
                out(metadata_out, "metadata_out")?,
                out(found_out, "found_out")?,
            )
        };
        let found = self::store(store)?.committed_metadata()?;
        give_raw(found, metadata_out, found_out);
        Ok(())
    })
}

/// Discards every uncommitted write (the transaction restarts empty).
///
/// # Arguments
/// * `store` - the store.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - an earlier commit is in doubt and finishing it failed
///   again: nothing was rolled back (the writes of that commit are no longer the
///   transaction's; retry).
/// * `KSTATE_ERR_STORAGE` - the store is broken by an earlier failed restore; reopen it.
///
/// Any other outcome is success: the writes are discarded. Writes that had spilled to disk
/// are left for the next commit (or open) to clear if the disk refuses that now; they can
/// never be applied.
///
/// # Safety
/// None required: the handle is never dereferenced.
///
/// # Thread safety
/// Safe from any thread; serialised with writes.
#[must_use]
#[no_mangle]
pub extern "C" fn kstate_kv_rollback(store: *mut kstate_kv_t) -> *mut kstate_error_t {
    ffi_call(|| self::store(store)?.rollback())
}

/// Approximate number of entries in the writer's view: exact for committed data on the
/// memory engine, RocksDB's estimate otherwise, adjusted by uncommitted puts and deletes.
///
/// # Arguments
/// * `store` - the store.
/// * `count_out` - receives the estimate; 0 on entry.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `count_out` NULL.
/// * `KSTATE_ERR_STORAGE`.
/// * `KSTATE_ERR_COMMIT_IN_DOUBT` - (uncommitted reads) an earlier commit is in doubt and
///   finishing it failed again (see `KSTATE_ERR_COMMIT_IN_DOUBT`); nothing else happened.
///
/// # Safety
/// `count_out` NULL or writable.
///
/// # Thread safety
/// Safe from any thread.
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

/// Approximate bytes of uncommitted writes, in memory and spilled to disk.
///
/// # Arguments
/// * `store` - the store.
/// * `bytes_out` - receives the estimate; 0 on entry.
///
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `bytes_out` NULL.
///
/// # Safety
/// `bytes_out` NULL or writable.
///
/// # Thread safety
/// Safe from any thread.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_kv_approximate_num_uncommitted_bytes(
    store: *mut kstate_kv_t,
    bytes_out: *mut u64,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(bytes_out, 0) };
    ffi_call(|| {
        // SAFETY: initialised above.
        let bytes_out = unsafe { out(bytes_out, "bytes_out")? };
        *bytes_out = self::store(store)?.approximate_num_uncommitted_bytes()?;
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
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `name`, `value_out` or `found_out` NULL, or `name`
///   not UTF-8.
/// * `KSTATE_ERR_STORAGE` - RocksDB failed to read it.
///
/// # Safety
/// `name` NULL or a NUL-terminated string; `value_out` and `found_out` NULL or writable.
///
/// # Thread safety
/// Safe from any thread.
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
/// # Returns
/// NULL on success, else an error.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_HANDLE`, `KSTATE_ERR_STORE_CLOSED` - bad or closed `store`.
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `upgrading_out` NULL.
///
/// # Safety
/// `upgrading_out` NULL or writable.
///
/// # Thread safety
/// Safe from any thread.
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
