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
use crate::Result;

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
    let long = |at: usize| -> Option<i64> {
        row.get(at..at + 8)
            .map(|b| i64::from_be_bytes(b.try_into().unwrap_or([0; 8])))
    };
    let (Some(next), Some(min)) = (long(0), long(8)) else {
        return false;
    };
    if min > next {
        return false;
    }
    let mut at = 16;
    let mut newer = next;
    let mut values: usize = 0;
    loop {
        let Some(timestamp) = long(at) else {
            return false;
        };
        let Some(size) = row
            .get(at + 8..at + 12)
            .map(|b| i32::from_be_bytes(b.try_into().unwrap_or([0; 4])))
        else {
            return false;
        };
        at += 12;
        // Newest first, strictly older each step; a degenerate row (one tombstone) has
        // its timestamp equal to `next`.
        if timestamp > newer || (timestamp == newer && !(next == min && size < 0)) {
            return false;
        }
        if timestamp < min {
            return false;
        }
        newer = timestamp;
        if size > 0 {
            values = match values.checked_add(size as usize) {
                Some(v) => v,
                None => return false,
            };
        }
        if timestamp == min {
            return row.len().checked_sub(at) == Some(values);
        }
    }
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
