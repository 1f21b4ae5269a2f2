//! An owning, chunked cursor over a persistent ordered map. Cloning an `imbl::OrdMap` is
//! O(1) and later writes to the original do not affect the clone, so the cursor sees the
//! map as it was when created, without holding a borrow (which FFI handles cannot).

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use imbl::OrdMap;

use super::KeyRange;

/// Entries fetched per refill; large enough to amortise the O(log n) re-seek.
const CHUNK: usize = 128;

/// A cursor over a snapshot of an `OrdMap` keyed by shared byte slices.
pub(crate) struct OrdCursor<V: Clone> {
    map: OrdMap<Arc<[u8]>, V>,
    /// The range the cursor was created with: seeks stay inside it.
    bounds: KeyRange,
    remaining: KeyRange,
    reverse: bool,
    ready: VecDeque<(Arc<[u8]>, V)>,
    exhausted: bool,
}

impl<V: Clone> OrdCursor<V> {
    /// A cursor over `range` of the snapshot `map`.
    pub(crate) fn new(map: OrdMap<Arc<[u8]>, V>, range: KeyRange, reverse: bool) -> Self {
        let exhausted = range.is_empty();
        OrdCursor {
            map,
            bounds: range.clone(),
            remaining: range,
            reverse,
            ready: VecDeque::new(),
            exhausted,
        }
    }

    fn refill(&mut self) {
        if self.exhausted {
            return;
        }
        let bounds = self.remaining.as_slices();
        let chunk: Vec<(Arc<[u8]>, V)> = if self.reverse {
            self.map
                .range::<_, [u8]>(bounds)
                .rev()
                .take(CHUNK)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        } else {
            self.map
                .range::<_, [u8]>(bounds)
                .take(CHUNK)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        if chunk.len() < CHUNK {
            self.exhausted = true;
        }
        if let Some((last, _)) = chunk.last() {
            let resume = Bound::Excluded(last.to_vec());
            if self.reverse {
                self.remaining.upper = resume;
            } else {
                self.remaining.lower = resume;
            }
            if self.remaining.is_empty() {
                self.exhausted = true;
            }
        }
        self.ready.extend(chunk);
    }

    /// Repositions the cursor: the next entry is the first key `>= target` (ascending) or
    /// the last key `<= target` (descending), within the cursor's original range.
    pub(crate) fn seek(&mut self, target: &[u8]) {
        self.ready.clear();
        self.remaining = seek_range(&self.bounds, self.reverse, target);
        self.exhausted = self.remaining.is_empty();
    }

    /// The next entry, or `None` at the end.
    pub(crate) fn next_entry(&mut self) -> Option<(Arc<[u8]>, V)> {
        if self.ready.is_empty() {
            self.refill();
        }
        self.ready.pop_front()
    }
}

/// What remains of a cursor's `bounds` after a seek to `target`: the next entry is the
/// first key `>= target` (ascending) or the last key `<= target` (descending), never
/// outside `bounds`.
pub(super) fn seek_range(bounds: &KeyRange, reverse: bool, target: &[u8]) -> KeyRange {
    let mut remaining = bounds.clone();
    let bound = Bound::Included(target.to_vec());
    if reverse {
        if bounds.contains(target) || below_upper(&bounds.upper, target) {
            remaining.upper = bound;
        }
    } else if bounds.contains(target) || above_lower(&bounds.lower, target) {
        remaining.lower = bound;
    }
    remaining
}

/// True when `key` is strictly inside the `upper` bound (so `<= key` is tighter).
fn below_upper(upper: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match upper {
        Bound::Unbounded => true,
        Bound::Included(k) | Bound::Excluded(k) => key < k.as_slice(),
    }
}

/// True when `key` is strictly inside the `lower` bound (so `>= key` is tighter).
fn above_lower(lower: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match lower {
        Bound::Unbounded => true,
        Bound::Included(k) | Bound::Excluded(k) => key > k.as_slice(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Arc<[u8]> {
        Arc::from(&i.to_be_bytes()[..])
    }

    #[test]
    fn walks_both_directions_across_chunks_on_a_snapshot() {
        let mut map: OrdMap<Arc<[u8]>, u32> = OrdMap::new();
        for i in 0..1000 {
            map.insert(key(i), i);
        }
        let range = KeyRange::inclusive(Some(&10u32.to_be_bytes()), Some(&700u32.to_be_bytes()));
        let mut fwd = OrdCursor::new(map.clone(), range.clone(), false);
        let mut rev = OrdCursor::new(map.clone(), range, true);
        map.insert(key(20), 9999); // after the snapshot: invisible
        let got: Vec<u32> = std::iter::from_fn(|| fwd.next_entry().map(|(_, v)| v)).collect();
        assert_eq!(got, (10..=700).collect::<Vec<_>>());
        let got: Vec<u32> = std::iter::from_fn(|| rev.next_entry().map(|(_, v)| v)).collect();
        assert_eq!(got, (10..=700).rev().collect::<Vec<_>>());
    }

    #[test]
    fn seeks_stay_inside_the_original_range() {
        let map: OrdMap<Arc<[u8]>, u32> = (0..300).map(|i| (key(i), i)).collect();
        let range = KeyRange::inclusive(Some(&10u32.to_be_bytes()), Some(&200u32.to_be_bytes()));
        let mut fwd = OrdCursor::new(map.clone(), range.clone(), false);
        fwd.seek(&150u32.to_be_bytes());
        assert_eq!(fwd.next_entry().unwrap().1, 150);
        fwd.seek(&5u32.to_be_bytes());
        assert_eq!(
            fwd.next_entry().unwrap().1,
            10,
            "clamped to the lower bound"
        );
        fwd.seek(&250u32.to_be_bytes());
        assert!(fwd.next_entry().is_none());
        let mut rev = OrdCursor::new(map, range, true);
        rev.seek(&150u32.to_be_bytes());
        assert_eq!(rev.next_entry().unwrap().1, 150);
        assert_eq!(rev.next_entry().unwrap().1, 149);
        rev.seek(&999u32.to_be_bytes());
        assert_eq!(
            rev.next_entry().unwrap().1,
            200,
            "clamped to the upper bound"
        );
        rev.seek(&3u32.to_be_bytes());
        assert!(rev.next_entry().is_none());
    }
}
