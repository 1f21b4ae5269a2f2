//! An owning, chunked cursor over a persistent ordered map. Cloning an `imbl::OrdMap` is
//! O(1) and later writes to the original do not affect the clone, so the cursor sees the
//! map as it was when created, without holding a borrow (which FFI handles cannot).

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use imbl::OrdMap;

use super::{KeyFilter, KeyRange, Verdict};

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

    /// Reads ahead up to [`CHUNK`] entries that `keep` takes, stopping after one it takes
    /// last; skipped entries are passed over without cloning, and the scan resumes after
    /// the last entry it looked at.
    fn refill(&mut self, keep: &KeyFilter) {
        if self.exhausted {
            return;
        }
        let bounds = self.remaining.as_slices();
        let range = self.map.range::<_, [u8]>(bounds);
        let (last, ended) = if self.reverse {
            take_kept(range.rev(), keep, &mut self.ready)
        } else {
            take_kept(range, keep, &mut self.ready)
        };
        if ended {
            self.exhausted = true;
        }
        if let Some(last) = last {
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
    }

    /// Repositions the cursor: the next entry is the first key `>= target` (ascending) or
    /// the last key `<= target` (descending), within the cursor's original range.
    pub(crate) fn seek(&mut self, target: &[u8]) {
        self.ready.clear();
        self.remaining = seek_range(&self.bounds, self.reverse, target);
        self.exhausted = self.remaining.is_empty();
    }

    /// The next entry, or `None` at the end (the store reads through
    /// [`OrdCursor::next_entry_where`]).
    #[cfg(test)]
    pub(crate) fn next_entry(&mut self) -> Option<(Arc<[u8]>, V)> {
        self.next_entry_where(&|_| Verdict::Take)
    }

    /// The next entry whose key `keep` accepts (see [`KeyFilter`]), or `None` at the end.
    pub(crate) fn next_entry_where(&mut self, keep: &KeyFilter) -> Option<(Arc<[u8]>, V)> {
        loop {
            if self.ready.is_empty() {
                self.refill(keep);
                if self.ready.is_empty() {
                    return None;
                }
            }
            // Entries read ahead before a filter was applied are checked here.
            let entry = self.ready.pop_front()?;
            if keep(&entry.0).taken() {
                return Some(entry);
            }
        }
    }
}

/// Appends to `ready` the entries of `scan` that `keep` takes, up to [`CHUNK`] of them and
/// up to the first one it takes last. Returns the last key looked at (taken or not: the
/// scan resumes after it) and whether `scan` ended.
fn take_kept<'a, V: Clone + 'a>(
    scan: impl Iterator<Item = (&'a Arc<[u8]>, &'a V)>,
    keep: &KeyFilter,
    ready: &mut VecDeque<(Arc<[u8]>, V)>,
) -> (Option<Arc<[u8]>>, bool) {
    let mut last: Option<&Arc<[u8]>> = None;
    let mut taken = 0;
    for (k, v) in scan {
        last = Some(k);
        let verdict = keep(k);
        if verdict.taken() {
            ready.push_back((k.clone(), v.clone()));
            taken += 1;
            if taken == CHUNK || verdict == Verdict::TakeLast {
                return (last.cloned(), false);
            }
        }
    }
    (last.cloned(), true)
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
    fn filtered_reads_skip_without_reading_ahead_past_a_last_take() {
        let map: OrdMap<Arc<[u8]>, u32> = (0..1000).map(|i| (key(i), i)).collect();
        let keep = |k: &[u8]| {
            let i = u32::from_be_bytes([k[0], k[1], k[2], k[3]]);
            if i % 2 == 1 {
                Verdict::Skip
            } else if i == 300 || i == 700 {
                Verdict::TakeLast
            } else {
                Verdict::Take
            }
        };
        for reverse in [false, true] {
            let mut c = OrdCursor::new(map.clone(), KeyRange::all(), reverse);
            let mut got = vec![];
            while let Some((_, v)) = c.next_entry_where(&keep) {
                got.push(v);
                // Nothing skipped was read ahead, and nothing past a last take.
                assert!(c.ready.iter().all(|(_, v)| v % 2 == 0), "{reverse}");
                if v == 300 || v == 700 {
                    assert!(c.ready.is_empty(), "read ahead past {v} ({reverse})");
                }
            }
            let mut want: Vec<u32> = (0..1000).filter(|i| i % 2 == 0).collect();
            if reverse {
                want.reverse();
            }
            assert_eq!(got, want, "the scan resumes after a last take ({reverse})");
        }
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
