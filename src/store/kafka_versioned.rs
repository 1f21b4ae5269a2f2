//! Recognising a Kafka Streams versioned key-value store (`RocksDBVersionedStore`, KIP-889)
//! from its data, so that kstate never mistakes one for a plain `RocksDBStore`.
//!
//! On disk a versioned store is one RocksDB database at `<taskDir>/rocksdb/<name>` with only
//! the `default` family (and, since Kafka 4.3, `offsets`): exactly what a plain key-value store
//! looks like. What tells them apart is the data. Every key starts with the 8-byte
//! big-endian id of a logical segment: -1 (`0xFF` x 8) for the latest-value segment, whose
//! values are `timestamp (8) + value`, and a non-negative id for a history segment, whose
//! values are rows of `next_timestamp (8)`, `min_timestamp (8)`, a list of
//! `(timestamp (8), size (4))` newest first and ending at `min_timestamp` (a negative size
//! marks a tombstone), then the values, which fill the rest of the row exactly.
//!
//! A plain store whose first entries all fit that layout by chance is not a realistic case
//! (a history row's sizes must add up to its length to the byte), so the first
//! [`SAMPLE`] entries decide: reading them costs microseconds, where converting a versioned
//! store as if it were plain would destroy it (its values would be read as plain values and
//! rewritten with a timestamp prefix).

use crate::engine::{Engine, Family, KeyRange};
use crate::{Error, Result};

/// How many entries of the `default` family are checked; all must fit the layout.
pub(crate) const SAMPLE: usize = 256;

/// The logical-segment prefix of every key.
const PREFIX: usize = 8;
/// The reserved id of the latest-value segment, as the key prefix holds it.
const LATEST: [u8; PREFIX] = [0xFF; PREFIX];

/// Whether the entries of `family` have the layout of a Kafka Streams versioned store: at
/// least one entry, and each of the first [`SAMPLE`] a latest-value or a history row.
pub(crate) fn looks_versioned(engine: &dyn Engine, family: Family) -> Result<bool> {
    let mut it = engine.iter(family, &KeyRange::all(), false)?;
    let mut seen = 0;
    while seen < SAMPLE {
        match it.next_entry()? {
            Some((key, value)) if is_versioned_entry(&key, &value) => seen += 1,
            Some(_) => return Ok(false),
            None => break,
        }
    }
    Ok(seen > 0)
}

/// Whether one entry is a row of a versioned store.
pub(crate) fn is_versioned_entry(key: &[u8], value: &[u8]) -> bool {
    let Some(prefix) = key.get(..PREFIX) else {
        return false;
    };
    if prefix == LATEST {
        // timestamp + value (an empty value is possible, a missing timestamp is not)
        return value.len() >= 8;
    }
    // Segment ids are `timestamp / segmentInterval`: non-negative.
    prefix[0] & 0x80 == 0 && is_history_row(value)
}

/// Whether `row` parses as a history-segment row, to the last byte.
fn is_history_row(row: &[u8]) -> bool {
    parse_row(row).is_ok()
}

/// One version of a history row: valid over `[valid_from, valid_to)` (both equal for the
/// lone tombstone of a degenerate row), its value, or `None` for a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowVersion<'a> {
    pub valid_from: i64,
    pub valid_to: i64,
    pub value: Option<&'a [u8]>,
}

/// The versions of a history row, oldest first.
///
/// # Errors
/// [`Error::Corruption`] when the row does not parse to its last byte (timestamps out of
/// order, sizes that do not add up to the row's length).
pub(crate) fn parse_row(row: &[u8]) -> Result<Vec<RowVersion<'_>>> {
    let bad = |why: &str| Error::Corruption(format!("a Kafka versioned store row {why}"));
    let long = |at: usize| -> Result<i64> {
        row.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(i64::from_be_bytes)
            .ok_or_else(|| bad("is truncated"))
    };
    let (next, min) = (long(0)?, long(8)?);
    if min > next {
        return Err(bad("has its oldest version after its end"));
    }
    // (timestamp, size), newest first.
    let mut entries: Vec<(i64, i32)> = Vec::new();
    let mut at = 16;
    let mut newer = next;
    let mut values: usize = 0;
    loop {
        let timestamp = long(at)?;
        let size = row
            .get(at + 8..at + 12)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_be_bytes)
            .ok_or_else(|| bad("is truncated"))?;
        at += 12;
        // Newest first, strictly older each step; a degenerate row (one tombstone) has
        // its timestamp equal to `next`.
        if timestamp > newer || (timestamp == newer && !(next == min && size < 0)) {
            return Err(bad("has versions out of order"));
        }
        if timestamp < min {
            return Err(bad("has a version before its oldest"));
        }
        newer = timestamp;
        if size > 0 {
            values = values
                .checked_add(size as usize)
                .ok_or_else(|| bad("has sizes that overflow"))?;
        }
        entries.push((timestamp, size));
        if timestamp == min {
            break;
        }
    }
    if row.len().checked_sub(at) != Some(values) {
        return Err(bad("has values that do not fill it exactly"));
    }
    // Values are stored oldest first.
    let mut out = Vec::with_capacity(entries.len());
    for (i, (timestamp, size)) in entries.iter().enumerate().rev() {
        let valid_to = if i == 0 { next } else { entries[i - 1].0 };
        let value = if *size < 0 {
            None
        } else {
            let v = &row[at..at + *size as usize];
            at += *size as usize;
            Some(v)
        };
        out.push(RowVersion {
            valid_from: *timestamp,
            valid_to,
            value,
        });
    }
    Ok(out)
}

/// Kafka's history row of `versions` (oldest first, contiguous: each valid until the next
/// one's start; a lone tombstone may have `valid_from == valid_to`, Kafka's degenerate row).
pub(crate) fn encode_row(versions: &[RowVersion<'_>]) -> Result<Vec<u8>> {
    let (Some(first), Some(last)) = (versions.first(), versions.last()) else {
        return Err(Error::Internal(
            "a Kafka versioned row of no version".into(),
        ));
    };
    let mut out = Vec::new();
    out.extend_from_slice(&last.valid_to.to_be_bytes());
    out.extend_from_slice(&first.valid_from.to_be_bytes());
    for v in versions.iter().rev() {
        out.extend_from_slice(&v.valid_from.to_be_bytes());
        let size = match v.value {
            Some(bytes) => i32::try_from(bytes.len())
                .map_err(|_| Error::Internal("a version value over 2 GiB".into()))?,
            None => -1,
        };
        out.extend_from_slice(&size.to_be_bytes());
    }
    for v in versions {
        out.extend_from_slice(v.value.unwrap_or_default());
    }
    Ok(out)
}

/// A key of Kafka's versioned store: `BE i64 segment id ‖ record key` (-1: the latest
/// values).
pub(crate) fn kafka_key(segment: i64, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(PREFIX + key.len());
    k.extend_from_slice(&segment.to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// Splits a key of Kafka's versioned store into its segment id (`None`: the latest values)
/// and the record key.
pub(crate) fn split_kafka_key(key: &[u8]) -> Result<(Option<i64>, &[u8])> {
    let (prefix, rest) = key
        .split_at_checked(PREFIX)
        .ok_or_else(|| Error::Corruption("a Kafka versioned store key is truncated".into()))?;
    if prefix == LATEST {
        return Ok((None, rest));
    }
    let id = i64::from_be_bytes(prefix.try_into().unwrap_or_default());
    if id < 0 {
        return Err(Error::Corruption(format!(
            "a Kafka versioned store key has segment id {id}"
        )));
    }
    Ok((Some(id), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A history row of versions `(timestamp, value)` oldest first, valid until `next`.
    fn row(next: i64, versions: &[(i64, Option<&[u8]>)]) -> Vec<u8> {
        let mut out = next.to_be_bytes().to_vec();
        out.extend_from_slice(&versions[0].0.to_be_bytes());
        for (t, v) in versions.iter().rev() {
            out.extend_from_slice(&t.to_be_bytes());
            let size = v.map_or(-1, |v| v.len() as i32);
            out.extend_from_slice(&size.to_be_bytes());
        }
        for (_, v) in versions {
            out.extend_from_slice(v.unwrap_or_default());
        }
        out
    }

    fn key(segment: i64, user: &[u8]) -> Vec<u8> {
        let mut k = segment.to_be_bytes().to_vec();
        k.extend_from_slice(user);
        k
    }

    #[test]
    fn history_rows_parse_to_the_last_byte() {
        let r = row(300, &[(100, Some(b"a")), (150, None), (200, Some(b"ccc"))]);
        assert!(is_history_row(&r));
        assert!(is_versioned_entry(&key(3, b"k"), &r));
        let mut longer = r.clone();
        longer.push(0);
        assert!(!is_history_row(&longer), "a byte past the values");
        assert!(!is_history_row(&r[..r.len() - 1]), "a byte short");
        // degenerate row: a lone tombstone with next == min == its timestamp
        assert!(is_history_row(&row(50, &[(50, None)])));
        assert!(!is_history_row(&row(50, &[(50, Some(b"x"))])));
        // out of order
        assert!(!is_history_row(&row(
            300,
            &[(200, Some(b"a")), (100, Some(b"b"))]
        )));
    }

    #[test]
    fn rows_parse_into_versions_and_encode_back_to_the_same_bytes() {
        // Rows Kafka 4.4 wrote (research probe): segment 4 of `k`, and a degenerate row.
        let r = row(4000, &[(1010, Some(b"v2b"))]);
        let versions = parse_row(&r).unwrap();
        assert_eq!(
            versions,
            [RowVersion {
                valid_from: 1010,
                valid_to: 4000,
                value: Some(&b"v2b"[..])
            }]
        );
        assert_eq!(encode_row(&versions).unwrap(), r);
        let r = row(300, &[(100, Some(b"a")), (150, None), (200, Some(b""))]);
        let versions = parse_row(&r).unwrap();
        let spans: Vec<_> = versions
            .iter()
            .map(|v| (v.valid_from, v.valid_to, v.value))
            .collect();
        assert_eq!(
            spans,
            [
                (100, 150, Some(&b"a"[..])),
                (150, 200, None),
                (200, 300, Some(&b""[..]))
            ]
        );
        assert_eq!(encode_row(&versions).unwrap(), r);
        let degenerate = row(3005, &[(3005, None)]);
        let versions = parse_row(&degenerate).unwrap();
        assert_eq!((versions[0].valid_from, versions[0].valid_to), (3005, 3005));
        assert_eq!(encode_row(&versions).unwrap(), degenerate);
        assert_eq!(split_kafka_key(&key(-1, b"k")).unwrap(), (None, &b"k"[..]));
        assert_eq!(
            split_kafka_key(&key(4, b"k")).unwrap(),
            (Some(4), &b"k"[..])
        );
        assert_eq!(kafka_key(4, b"k"), key(4, b"k"));
        assert!(split_kafka_key(&key(-2, b"k")).is_err());
        assert!(split_kafka_key(b"short").is_err());
    }

    #[test]
    fn latest_rows_and_plain_values() {
        let mut latest = 7i64.to_be_bytes().to_vec();
        latest.extend_from_slice(b"value");
        assert!(is_versioned_entry(&key(-1, b"k"), &latest));
        assert!(!is_versioned_entry(&key(-1, b"k"), b"short"));
        // typical plain entries: string keys and values
        assert!(!is_versioned_entry(b"customer-0001", b"{\"name\":\"x\"}"));
        assert!(!is_versioned_entry(b"k1", b"v1"));
        // a negative segment other than -1
        assert!(!is_versioned_entry(
            &key(-2, b"k"),
            &row(300, &[(100, Some(b"a"))])
        ));
    }
}
