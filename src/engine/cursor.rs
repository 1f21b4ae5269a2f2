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

    /// The next entry, or `None` at the end.
    pub(crate) fn next_entry(&mut self) -> Option<(Arc<[u8]>, V)> {
        if self.ready.is_empty() {
            self.refill();
        }
        self.ready.pop_front()
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
}
