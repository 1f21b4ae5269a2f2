//! Byte layouts of versioned key-value stores (KIP-889).
//!
//! A versioned store keeps, per record key, the *latest* version (the newest one, when it
//! is a value) and a *history* of older versions, each valid over `[valid_from, valid_to)`.
//! Three families hold them:
//!
//! * latest (`kstate_versions_latest`): `key` -> `BE i64 valid_from ‖ value`, Kafka's
//!   `LatestValueFormatter` layout (the latest version never expires and is never a
//!   tombstone).
//! * history (`kstate_versions`): `BE u32 key length ‖ key ‖ sortable valid_to` ->
//!   `BE i64 valid_from ‖ u8 tag ‖ value`, the tag being [`TAG_VALUE`] or
//!   [`TAG_TOMBSTONE`]. The length prefix keeps one key's versions contiguous and in
//!   `valid_to` order (a longer key that starts with the same bytes cannot interleave), so
//!   the version valid at a time `t` is the first entry at or after `key ‖ t + 1`: one seek.
//!   Versioned stores have no range queries, so the key order across keys is free.
//!   A tombstone of zero length (`valid_from == valid_to`) marks a delete that nothing
//!   follows, as Kafka's "degenerate" segment does: it bounds older out-of-order writes.
//! * expiry index (`kstate_versions_by_time`): `sortable valid_to ‖ history key` -> empty.
//!   Expiring history reads the index below a time and deletes what it names, so the cost
//!   is the expired versions, never the live ones.
//!
//! Sortable timestamps are big-endian with the sign bit flipped, so bytewise order is
//! numeric order for negative times too.

use crate::{Error, Result};

/// Family of the latest versions.
pub const LATEST_FAMILY: &str = "kstate_versions_latest";
/// Family of the older versions.
pub const HISTORY_FAMILY: &str = "kstate_versions";
/// Family of the expiry index of the history.
pub const BY_TIME_FAMILY: &str = "kstate_versions_by_time";

/// History value tag: a tombstone (no value bytes follow).
pub const TAG_TOMBSTONE: u8 = 0;
/// History value tag: a value follows.
pub const TAG_VALUE: u8 = 1;

/// Bytes a record key gains in the largest stored key (the expiry index's): time, length,
/// time.
pub const KEY_OVERHEAD: usize = 8 + 4 + 8;

/// `t` in an order-preserving byte form.
pub fn sortable(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

fn from_sortable(b: &[u8]) -> Result<i64> {
    let arr: [u8; 8] = b
        .try_into()
        .map_err(|_| Error::Corruption("a versioned store timestamp is truncated".into()))?;
    Ok((u64::from_be_bytes(arr) ^ (1 << 63)) as i64)
}

/// The prefix every history key of `key` starts with: `BE u32 length ‖ key`.
pub fn history_prefix(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + key.len() + 8);
    // Record keys are at most MAX_KEY_BYTES (4 MiB), far below u32::MAX.
    k.extend_from_slice(&(key.len() as u32).to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// The history key of the version of `key` valid until `valid_to`.
pub fn history_key(key: &[u8], valid_to: i64) -> Vec<u8> {
    let mut k = history_prefix(key);
    k.extend_from_slice(&sortable(valid_to));
    k
}

/// Splits a history key into the record key and `valid_to`.
pub fn split_history_key(stored: &[u8]) -> Result<(&[u8], i64)> {
    let bad = || Error::Corruption("a versioned store history key is malformed".into());
    let len_bytes: [u8; 4] = stored
        .get(..4)
        .ok_or_else(bad)?
        .try_into()
        .map_err(|_| bad())?;
    let len = u32::from_be_bytes(len_bytes) as usize;
    if stored.len() != 4 + len + 8 {
        return Err(bad());
    }
    Ok((&stored[4..4 + len], from_sortable(&stored[4 + len..])?))
}

/// The expiry index key of the history entry `history_key`, which ends at `valid_to`.
pub fn index_key(valid_to: i64, history_key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + history_key.len());
    k.extend_from_slice(&sortable(valid_to));
    k.extend_from_slice(history_key);
    k
}

/// The history key an expiry index key names.
pub fn indexed_history_key(index_key: &[u8]) -> Result<&[u8]> {
    index_key
        .get(8..)
        .ok_or_else(|| Error::Corruption("a versioned store index key is truncated".into()))
}

/// The lower bound of the index keys of versions ending at `valid_to` or later.
pub fn index_bound(valid_to: i64) -> Vec<u8> {
    sortable(valid_to).to_vec()
}

/// Kafka's latest-value layout: `BE i64 valid_from ‖ value`.
pub fn encode_latest(valid_from: i64, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 + value.len());
    v.extend_from_slice(&valid_from.to_be_bytes());
    v.extend_from_slice(value);
    v
}

/// Splits a latest value into `valid_from` and the value.
pub fn decode_latest(raw: &[u8]) -> Result<(i64, &[u8])> {
    if raw.len() < 8 {
        return Err(Error::Corruption(
            "a versioned store latest value is shorter than its timestamp".into(),
        ));
    }
    let (ts, value) = raw.split_at(8);
    let mut b = [0u8; 8];
    b.copy_from_slice(ts);
    Ok((i64::from_be_bytes(b), value))
}

/// A history value: `BE i64 valid_from ‖ tag ‖ value` (`None`: a tombstone).
pub fn encode_history(valid_from: i64, value: Option<&[u8]>) -> Vec<u8> {
    let mut v = Vec::with_capacity(9 + value.map_or(0, <[u8]>::len));
    v.extend_from_slice(&valid_from.to_be_bytes());
    match value {
        Some(bytes) => {
            v.push(TAG_VALUE);
            v.extend_from_slice(bytes);
        }
        None => v.push(TAG_TOMBSTONE),
    }
    v
}

/// Splits a history value into `valid_from` and the value (`None`: a tombstone).
pub fn decode_history(raw: &[u8]) -> Result<(i64, Option<&[u8]>)> {
    let bad = |what: &str| Error::Corruption(format!("a versioned store history value {what}"));
    if raw.len() < 9 {
        return Err(bad("is truncated"));
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&raw[..8]);
    let from = i64::from_be_bytes(b);
    match raw[8] {
        TAG_VALUE => Ok((from, Some(&raw[9..]))),
        TAG_TOMBSTONE if raw.len() == 9 => Ok((from, None)),
        TAG_TOMBSTONE => Err(bad("is a tombstone with value bytes")),
        tag => Err(bad(&format!("has unknown tag {tag}"))),
    }
}

/// Kafka's default segment interval of a versioned store with `history_retention` ms
/// (`RocksDbVersionedKeyValueBytesStoreSupplier`): a fraction of the retention, at least a
/// floor that grows with it.
pub fn default_segment_interval(history_retention: i64) -> i64 {
    let r = history_retention;
    if r <= 60_000 {
        (r / 3).max(2_000)
    } else if r <= 300_000 {
        (r / 5).max(20_000)
    } else if r <= 3_600_000 {
        (r / 12).max(60_000)
    } else {
        (r / 24).max(300_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keys_of_one_key_sort_by_valid_to_and_never_interleave_with_longer_keys() {
        let times = [i64::MIN, -5, -1, 0, 1, 1_000, i64::MAX];
        let mut keys: Vec<Vec<u8>> = times.iter().map(|&t| history_key(b"a", t)).collect();
        let longer: Vec<Vec<u8>> = times.iter().map(|&t| history_key(b"a\x80", t)).collect();
        keys.sort();
        let sorted: Vec<i64> = keys
            .iter()
            .map(|k| split_history_key(k).unwrap().1)
            .collect();
        assert_eq!(sorted, times);
        // Every key of "a" sorts before every key of "a\x80" (the length prefix).
        assert!(keys.iter().all(|k| longer.iter().all(|l| k < l)));
        assert_eq!(split_history_key(&keys[3]).unwrap(), (&b"a"[..], 0));
    }

    #[test]
    fn values_round_trip_and_malformed_ones_are_corruption() {
        assert_eq!(
            decode_latest(&encode_latest(7, b"v")).unwrap(),
            (7, &b"v"[..])
        );
        assert_eq!(
            decode_history(&encode_history(-3, Some(b""))).unwrap(),
            (-3, Some(&b""[..]))
        );
        assert_eq!(decode_history(&encode_history(9, None)).unwrap(), (9, None));
        assert!(decode_latest(b"1234567").is_err());
        assert!(decode_history(&[0; 8]).is_err());
        assert!(decode_history(&[0, 0, 0, 0, 0, 0, 0, 0, 2]).is_err());
        assert!(decode_history(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 1]).is_err());
        assert!(split_history_key(b"\x00\x00\x00\x05ab").is_err());
        let hk = history_key(b"k", 42);
        assert_eq!(indexed_history_key(&index_key(42, &hk)).unwrap(), &hk[..]);
    }

    #[test]
    fn default_segment_interval_follows_kafka() {
        assert_eq!(default_segment_interval(0), 2_000);
        assert_eq!(default_segment_interval(60_000), 20_000);
        assert_eq!(default_segment_interval(300_000), 60_000);
        assert_eq!(default_segment_interval(3_600_000), 300_000);
        assert_eq!(default_segment_interval(86_400_000), 3_600_000);
    }
}
