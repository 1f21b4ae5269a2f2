//! Versioned key-value store functions (Kafka's `VersionedKeyValueStore`, KIP-889; the
//! IQv2 `VersionedKeyQuery` and `MultiVersionedKeyQuery`), declared in `versioned.rs.in`;
//! the handle types, the record out-parameter and the query order.

use super::bytes::{kstate_bytes_t, Nothing};
use super::kv::{kstate_kv_write_t, kstate_offset_t, parse_offsets, write_spans};
use crate::store::VersionOrder;
use crate::{Error, Result, VersionedRecord};

/// An open versioned key-value store (Kafka's `VersionedKeyValueStore`: every key keeps its
/// versions, each valid from its timestamp to the next version's), a handle as the
/// header's overview describes; released by `kstate_versioned_close`.
pub struct kstate_versioned_t {
    _opaque: [u8; 0],
}

/// The versions a `kstate_versioned_versions` query found, read from one view when the
/// query ran (Kafka's `VersionedRecordIterator`); a handle as the header's overview
/// describes. It holds its results: it keeps returning them after its store is closed. It
/// must be released with `kstate_versioned_iter_close`.
pub struct kstate_versioned_iter_t {
    _opaque: [u8; 0],
}

/// One version of a key, as Kafka's `VersionedRecord`. `value` is owned by the caller
/// (release it with `kstate_bytes_free(&record.value)`); a tombstone is never returned.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_versioned_record_t {
    /// The value (a non-NULL `ptr` with `len` 0 for the empty value); `{NULL, 0}` when no
    /// version was returned.
    pub value: kstate_bytes_t,
    /// When the version became valid (Kafka's `timestamp`, validFrom).
    pub timestamp: i64,
    /// When the next version replaced it (exclusive); meaningful only with `has_valid_to`,
    /// except `KSTATE_VERSIONED_NOT_PUT` from a dropped `kstate_versioned_delete`.
    pub valid_to: i64,
    /// false for the latest version (Kafka's empty `validTo`), true for a version from the
    /// history.
    pub has_valid_to: bool,
}

impl Nothing for kstate_versioned_record_t {
    const NOTHING: Self = kstate_versioned_record_t {
        value: kstate_bytes_t::NOTHING,
        timestamp: 0,
        valid_to: 0,
        has_valid_to: false,
    };
}

/// The order of a `kstate_versioned_versions` result: `KSTATE_VERSIONS_DESCENDING` or
/// `KSTATE_VERSIONS_ASCENDING`.
pub type kstate_version_order_t = u32;
/// Newest first (also what Kafka returns for `ResultOrder.ANY`).
pub const KSTATE_VERSIONS_DESCENDING: kstate_version_order_t = 0;
/// Oldest first (Kafka's `withAscendingTimestamps()`).
pub const KSTATE_VERSIONS_ASCENDING: kstate_version_order_t = 1;

/// What `kstate_versioned_put` returns in `*valid_to_out` when the version it wrote is the
/// newest of its key (Kafka's `PUT_RETURN_CODE_VALID_TO_UNDEFINED`).
pub const KSTATE_VERSIONED_VALID_TO_UNDEFINED: i64 = -1;
/// What `kstate_versioned_put` returns in `*valid_to_out` when the write was older than the
/// history retention allows and was dropped (Kafka's `PUT_RETURN_CODE_NOT_PUT`,
/// `INT64_MIN`).
pub const KSTATE_VERSIONED_NOT_PUT: i64 = i64::MIN;

// The C constants are the core's (spelled out above for cbindgen).
const _: () = assert!(
    KSTATE_VERSIONED_VALID_TO_UNDEFINED == crate::store::PUT_RETURN_CODE_VALID_TO_UNDEFINED
        && KSTATE_VERSIONED_NOT_PUT == crate::store::PUT_RETURN_CODE_NOT_PUT
);

fn version_order(value: kstate_version_order_t) -> Result<VersionOrder> {
    match value {
        KSTATE_VERSIONS_DESCENDING => Ok(VersionOrder::Descending),
        KSTATE_VERSIONS_ASCENDING => Ok(VersionOrder::Ascending),
        other => Err(Error::InvalidArgument(format!(
            "order {other} is not a KSTATE_VERSIONS_* value"
        ))),
    }
}

/// Publishes a version through the out-parameters (left at "nothing" when there is none).
/// Always `Ok`: the last expression of a body.
fn found_version(
    found: Option<VersionedRecord>,
    record_out: &mut kstate_versioned_record_t,
    found_out: &mut bool,
) -> Result<()> {
    if let Some(r) = found {
        *record_out = kstate_versioned_record_t {
            value: kstate_bytes_t::from_vec(r.value),
            timestamp: r.timestamp,
            valid_to: r.valid_to.unwrap_or(0),
            has_valid_to: r.valid_to.is_some(),
        };
        *found_out = true;
    }
    Ok(())
}

include!(concat!(env!("OUT_DIR"), "/capi_versioned.rs"));
