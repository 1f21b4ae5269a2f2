//! Layout of spilled writes. When the write buffer outgrows `max_uncommitted_bytes`, its
//! entries move to the spill family, keyed by transaction:
//! `[SPILL_TAG] ‖ BE u64 txn ‖ u8 slot ‖ key`, where `slot` is the family's index in the
//! store's registry (the pending-commit record names each slot's family). Values are `[0]`
//! for a tombstone or `[1] ‖ value` for a put.
//!
//! Keying by transaction is what makes a failed spill harmless: a roll-forward applies only
//! the entries of the transaction its pending record names, so whatever an earlier, failed
//! or rolled-back transaction left in the area can never be applied; it is cleared at the
//! next opportunity (rollback, the end of a commit, recovery).

use std::ops::Bound;

use crate::engine::{BatchOp, Family, KeyRange};
use crate::{Error, Result};

/// First byte of every spill key. (kstate 0.1 used `0x01` with no transaction id; the area
/// bounds cover it too, so recovery clears such leftovers.)
const SPILL_TAG: u8 = 0x02;
/// Lower end (inclusive) of the whole spill area.
const AREA_START: &[u8] = &[0x01];
/// Upper end (exclusive) of the whole spill area.
const AREA_END: &[u8] = &[SPILL_TAG + 1];
/// Bytes before the user key: tag, transaction id, slot.
const HEADER: usize = 1 + 8 + 1;

/// The batch operation that discards the whole spill area.
pub(crate) fn clear_area(spill: Family) -> BatchOp<'static> {
    BatchOp::DeleteRange(spill, AREA_START, AREA_END)
}

/// The range of the whole spill area.
pub(crate) fn area() -> KeyRange {
    KeyRange {
        lower: Bound::Included(AREA_START.to_vec()),
        upper: Bound::Excluded(AREA_END.to_vec()),
    }
}

fn prefix(txn: u64, slot: Option<Family>) -> Vec<u8> {
    let mut p = Vec::with_capacity(HEADER);
    p.push(SPILL_TAG);
    p.extend_from_slice(&txn.to_be_bytes());
    if let Some(f) = slot {
        p.push(f.index() as u8);
    }
    p
}

/// The spill key of `key` of `family` in transaction `txn`.
pub(crate) fn spill_key(txn: u64, family: Family, key: &[u8]) -> Vec<u8> {
    let mut k = prefix(txn, Some(family));
    k.extend_from_slice(key);
    k
}

/// Splits a spill key into its transaction, slot and user key.
pub(crate) fn parse_key(spill_key: &[u8]) -> Result<(u64, usize, &[u8])> {
    match spill_key {
        [SPILL_TAG, rest @ ..] if rest.len() >= HEADER - 1 => {
            let (txn, rest) = rest.split_at(8);
            let mut id = [0u8; 8];
            id.copy_from_slice(txn);
            Ok((u64::from_be_bytes(id), rest[0] as usize, &rest[1..]))
        }
        _ => Err(Error::Corruption("spill key without its header".into())),
    }
}

/// The user key of a spill key.
pub(crate) fn user_key(spill_key: &[u8]) -> Result<&[u8]> {
    Ok(parse_key(spill_key)?.2)
}

/// Every spill entry of transaction `txn`.
pub(crate) fn txn_range(txn: u64) -> KeyRange {
    KeyRange::prefix(&prefix(txn, None))
}

/// The spill entries of transaction `txn` holding writes of `family` keys in `range`.
pub(crate) fn family_range(txn: u64, family: Family, range: &KeyRange) -> KeyRange {
    let base = prefix(txn, Some(family));
    let whole = KeyRange::prefix(&base);
    let map = |b: &Bound<Vec<u8>>, open: &Bound<Vec<u8>>| match b {
        Bound::Unbounded => open.clone(),
        Bound::Included(k) => Bound::Included(spill_key(txn, family, k)),
        Bound::Excluded(k) => Bound::Excluded(spill_key(txn, family, k)),
    };
    KeyRange {
        lower: map(&range.lower, &whole.lower),
        upper: map(&range.upper, &whole.upper),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let f = Family::at(3).unwrap();
        let k = spill_key(7, f, b"\xff\xff");
        assert_eq!(parse_key(&k).unwrap(), (7, 3, &b"\xff\xff"[..]));
        assert_eq!(user_key(&spill_key(u64::MAX, f, b"")).unwrap(), b"");
        assert_eq!(decode_write(&encode_write(None)).unwrap(), None);
        assert_eq!(
            decode_write(&encode_write(Some(b""))).unwrap(),
            Some(&b""[..])
        );
        assert!(decode_write(&[2]).is_err());
        assert!(decode_write(&[0, 1]).is_err());
        assert!(parse_key(&[SPILL_TAG, 0, 0]).is_err());
        assert!(parse_key(&[9; 12]).is_err());
    }

    #[test]
    fn ranges_separate_transactions_and_families() {
        let (a, b) = (Family::at(2).unwrap(), Family::at(3).unwrap());
        let t = txn_range(5);
        assert!(t.contains(&spill_key(5, a, b"x")) && t.contains(&spill_key(5, b, &[0xFF; 4])));
        assert!(!t.contains(&spill_key(4, a, b"x")) && !t.contains(&spill_key(6, a, b"")));
        let r = family_range(5, a, &KeyRange::inclusive(Some(b"b"), Some(b"d")));
        assert!(r.contains(&spill_key(5, a, b"d")) && !r.contains(&spill_key(5, a, b"d\0")));
        assert!(!r.contains(&spill_key(5, b, b"c")));
        let all = family_range(5, a, &KeyRange::all());
        assert!(all.contains(&spill_key(5, a, b"")) && !all.contains(&spill_key(5, b, b"")));
        assert!(area().contains(&spill_key(u64::MAX, b, &[0xFF; 3])));
        assert!(
            area().contains(&[0x01, 7]),
            "kstate 0.1 leftovers are inside the area"
        );
    }
}
