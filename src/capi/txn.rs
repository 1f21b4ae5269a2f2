//! The transaction functions of the window and session stores (commit, committed offset
//! and metadata, rollback, uncommitted bytes), written once for every store kind through
//! [`bridge::Transactional`], as the JNI natives are.

use std::ffi::c_char;

use super::bytes::{array, init, kstate_bytes_t, opt_span, out, utf8};
use super::error::{ffi_call, kstate_error_t};
use super::kv::kstate_offset_t;
use crate::bridge::Transactional;
use crate::handle::HANDLES;
use crate::{Result, TopicPartition};

/// Reads the offsets of a commit: each topic as UTF-8, `has_offset` false as Kafka's
/// `null` (remove the partition's offset).
///
/// # Safety
/// `offsets` is NULL or readable for `len` entries whose topics are NULL or NUL-terminated.
pub(crate) unsafe fn parse_offsets(
    offsets: *const kstate_offset_t,
    len: usize,
) -> Result<Vec<(TopicPartition, Option<i64>)>> {
    // SAFETY: readable as given (caller's guarantee).
    let offsets = unsafe { array(offsets, len, "offsets")? };
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

/// `kstate_*_commit` for a store of type `T` behind handle number `store`.
///
/// # Safety
/// As `kstate_kv_commit`.
pub(crate) unsafe fn commit<T: Transactional>(
    store: u64,
    offsets: *const kstate_offset_t,
    offsets_len: usize,
    metadata: *const u8,
    metadata_len: usize,
) -> *mut kstate_error_t {
    ffi_call(|| {
        let s = HANDLES.get::<T>(store)?;
        // SAFETY: readable as given (caller's guarantee).
        let (offsets, metadata) = unsafe {
            (
                parse_offsets(offsets, offsets_len)?,
                opt_span(metadata, metadata_len, "metadata")?,
            )
        };
        s.commit(&offsets, metadata)
    })
}

/// `kstate_*_committed_offset`.
///
/// # Safety
/// As `kstate_kv_committed_offset`.
pub(crate) unsafe fn committed_offset<T: Transactional>(
    store: u64,
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
        if let Some(offset) = HANDLES.get::<T>(store)?.committed_offset(&tp)? {
            *offset_out = offset;
            *found_out = true;
        }
        Ok(())
    })
}

/// `kstate_*_committed_metadata`.
///
/// # Safety
/// As `kstate_kv_committed_metadata`.
pub(crate) unsafe fn committed_metadata<T: Transactional>(
    store: u64,
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
        if let Some(m) = HANDLES.get::<T>(store)?.committed_metadata()? {
            *metadata_out = kstate_bytes_t::from_vec(m);
            *found_out = true;
        }
        Ok(())
    })
}

/// `kstate_*_rollback`.
pub(crate) fn rollback<T: Transactional>(store: u64) -> *mut kstate_error_t {
    ffi_call(|| HANDLES.get::<T>(store)?.rollback())
}

/// `kstate_*_approximate_num_uncommitted_bytes`.
///
/// # Safety
/// `bytes_out` is NULL or writable.
pub(crate) unsafe fn uncommitted_bytes<T: Transactional>(
    store: u64,
    bytes_out: *mut u64,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(bytes_out, 0) };
    ffi_call(|| {
        // SAFETY: initialised above.
        let bytes_out = unsafe { out(bytes_out, "bytes_out")? };
        *bytes_out = HANDLES.get::<T>(store)?.uncommitted_bytes()?;
        Ok(())
    })
}
