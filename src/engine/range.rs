//! Key ranges under the unsigned bytewise order of RocksDB's default comparator.

use std::cmp::Ordering;
use std::ops::Bound;

/// A range of keys with independent lower and upper bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    /// Lower bound.
    pub lower: Bound<Vec<u8>>,
    /// Upper bound.
    pub upper: Bound<Vec<u8>>,
}

impl KeyRange {
    /// Every key.
    pub fn all() -> Self {
        KeyRange {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// Kafka's `range(from, to)`: both ends inclusive, `None` leaves an end open.
    pub fn inclusive(from: Option<&[u8]>, to: Option<&[u8]>) -> Self {
        KeyRange {
            lower: from.map_or(Bound::Unbounded, |k| Bound::Included(k.to_vec())),
            upper: to.map_or(Bound::Unbounded, |k| Bound::Included(k.to_vec())),
        }
    }

    /// Every key that starts with `prefix`.
    pub fn prefix(prefix: &[u8]) -> Self {
        KeyRange {
            lower: Bound::Included(prefix.to_vec()),
            upper: crate::format::prefix_successor(prefix)
                .map_or(Bound::Unbounded, Bound::Excluded),
        }
    }

    /// True when no key can be in the range (lower end above upper end).
    pub fn is_empty(&self) -> bool {
        let (lo, lo_incl) = match &self.lower {
            Bound::Unbounded => return false,
            Bound::Included(k) => (k, true),
            Bound::Excluded(k) => (k, false),
        };
        let (hi, hi_incl) = match &self.upper {
            Bound::Unbounded => return false,
            Bound::Included(k) => (k, true),
            Bound::Excluded(k) => (k, false),
        };
        match lo.as_slice().cmp(hi.as_slice()) {
            Ordering::Greater => true,
            Ordering::Equal => !(lo_incl && hi_incl),
            Ordering::Less => false,
        }
    }

    /// True when `key` lies inside the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        let above = match &self.lower {
            Bound::Unbounded => true,
            Bound::Included(k) => key >= k.as_slice(),
            Bound::Excluded(k) => key > k.as_slice(),
        };
        let below = match &self.upper {
            Bound::Unbounded => true,
            Bound::Included(k) => key <= k.as_slice(),
            Bound::Excluded(k) => key < k.as_slice(),
        };
        above && below
    }

    /// The bounds as borrowed slices, the form `BTreeMap`-like `range` calls take.
    pub fn as_slices(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (as_slice(&self.lower), as_slice(&self.upper))
    }

    /// The lower bound as an inclusive key for RocksDB's `iterate_lower_bound`.
    pub fn inclusive_lower(&self) -> Option<Vec<u8>> {
        match &self.lower {
            Bound::Unbounded => None,
            Bound::Included(k) => Some(k.clone()),
            Bound::Excluded(k) => Some(successor(k)),
        }
    }

    /// The upper bound as an exclusive key for RocksDB's `iterate_upper_bound`.
    pub fn exclusive_upper(&self) -> Option<Vec<u8>> {
        match &self.upper {
            Bound::Unbounded => None,
            Bound::Included(k) => Some(successor(k)),
            Bound::Excluded(k) => Some(k.clone()),
        }
    }
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
    }
}

/// The immediate successor of `key` in bytewise order: `key ‖ 0x00`.
fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.extend_from_slice(key);
    k.push(0);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emptiness() {
        assert!(!KeyRange::all().is_empty());
        assert!(KeyRange::inclusive(Some(b"b"), Some(b"a")).is_empty());
        assert!(!KeyRange::inclusive(Some(b"a"), Some(b"a")).is_empty());
        let half = KeyRange {
            lower: Bound::Included(b"a".to_vec()),
            upper: Bound::Excluded(b"a".to_vec()),
        };
        assert!(half.is_empty());
    }

    #[test]
    fn rocksdb_bounds_keep_inclusive_semantics() {
        let r = KeyRange::inclusive(Some(b"a"), Some(b"c"));
        assert_eq!(r.inclusive_lower(), Some(b"a".to_vec()));
        assert_eq!(r.exclusive_upper(), Some(b"c\0".to_vec()));
        assert!(r.contains(b"c"));
        assert!(!r.contains(b"c\0"));
        let p = KeyRange::prefix(b"ab");
        assert!(p.contains(b"ab") && p.contains(b"ab\xff\xff") && !p.contains(b"ac"));
        assert_eq!(KeyRange::prefix(b"").upper, Bound::Unbounded);
    }
}
