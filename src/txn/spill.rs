//! Layout of spilled writes. When the write buffer outgrows `max_uncommitted_bytes`, its
//! entries move to the spill family, keyed `[SPILL_TAG] ‖ key` with values `[0]` for a
//! tombstone or `[1] ‖ value` for a put. The tag byte gives the whole area finite bounds,
//! so one range delete discards it.

use crate::engine::{BatchOp, Family, KeyRange};
use crate::{Error, Result};
use std::ops::Bound;

/// First byte of every spill key.
pub(crate) const SPILL_TAG: u8 = 0x01;
/// Lower end (inclusive) of the spill area.
pub(crate) const AREA_START: &[u8] = &[SPILL_TAG];
/// Upper end (exclusive) of the spill area.
pub(crate) const AREA_END: &[u8] = &[SPILL_TAG + 1];

/// The batch operation that discards the whole spill area (rollback, recovery, and the
/// end of a roll-forward).
pub(crate) const CLEAR_AREA: BatchOp<'static> =
    BatchOp::DeleteRange(Family::Spill, AREA_START, AREA_END);

/// The spill key of a user key.
pub(crate) fn spill_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(SPILL_TAG);
    k.extend_from_slice(key);
    k
}

/// The user key inside a spill key.
pub(crate) fn user_key(spill_key: &[u8]) -> Result<&[u8]> {
    match spill_key.split_first() {
        Some((&SPILL_TAG, rest)) => Ok(rest),
        _ => Err(Error::Corruption("spill key without its tag byte".into())),
    }
}

/// Encodes a write for the spill family.
pub(crate) fn encode_write(write: Option<&[u8]>) -> Vec<u8> {
    match write {
        None => vec![0],
        Some(v) => {
            let mut out = Vec::with_capacity(v.len() + 1);
            out.push(1);
            out.extend_from_slice(v);
            out
        }
    }
}

/// Decodes a spilled write.
pub(crate) fn decode_write(raw: &[u8]) -> Result<Option<&[u8]>> {
    match raw.split_first() {
        Some((0, [])) => Ok(None),
        Some((1, v)) => Ok(Some(v)),
        _ => Err(Error::Corruption("spilled write has an unknown tag".into())),
    }
}

/// The spill-family range holding the writes of user keys in `range`.
pub(crate) fn spill_range(range: &KeyRange) -> KeyRange {
    let map = |b: &Bound<Vec<u8>>, open: &[u8], open_incl: bool| match b {
        Bound::Unbounded if open_incl => Bound::Included(open.to_vec()),
        Bound::Unbounded => Bound::Excluded(open.to_vec()),
        Bound::Included(k) => Bound::Included(spill_key(k)),
        Bound::Excluded(k) => Bound::Excluded(spill_key(k)),
    };
    KeyRange {
        lower: map(&range.lower, AREA_START, true),
        upper: map(&range.upper, AREA_END, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        assert_eq!(user_key(&spill_key(b"")).unwrap(), b"");
        assert_eq!(user_key(&spill_key(b"\xff\xff")).unwrap(), b"\xff\xff");
        assert_eq!(decode_write(&encode_write(None)).unwrap(), None);
        assert_eq!(
            decode_write(&encode_write(Some(b""))).unwrap(),
            Some(&b""[..])
        );
        assert!(decode_write(&[2]).is_err());
        assert!(decode_write(&[0, 1]).is_err());
        assert!(user_key(&[9, 1]).is_err());
    }

    #[test]
    fn ranges_stay_inside_the_area() {
        let all = spill_range(&KeyRange::all());
        assert!(all.contains(&spill_key(b"")) && all.contains(&spill_key(&[0xFF; 9])));
        assert!(!all.contains(AREA_END));
        let r = spill_range(&KeyRange::inclusive(Some(b"b"), Some(b"d")));
        assert!(r.contains(&spill_key(b"d")) && !r.contains(&spill_key(b"d\0")));
    }
}
