//! Cursors over a pinned snapshot of one family. A cursor keeps its position in the
//! pinned tree (the path from the root to its leaf): its pin keeps every node of that tree
//! allocated and unchanged, so stepping costs no search and no buffering.

use std::ops::Bound;
use std::sync::Arc;

use super::super::cursor::seek_range;
use super::tree::Position;
use super::Pinned;
use crate::engine::{EngineIter, Family, KeyFilter, KeyRange};
use crate::Result;

/// A cursor over `bounds` of one family of a pinned snapshot.
pub(super) struct MemoryIter {
    /// Declared before `pinned` for clarity only: the position has no destructor; the
    /// pin is what keeps its addresses valid.
    position: Position,
    pinned: Arc<Pinned>,
    family: Family,
    /// The range the cursor was created with: seeks stay inside it.
    bounds: KeyRange,
    /// Where the cursor stops: the upper bound ascending, the lower one descending.
    end: Bound<Vec<u8>>,
    reverse: bool,
    exhausted: bool,
}

// SAFETY: the position's addresses point into the tree `pinned` pins, whose nodes are
// read-only and allocated for as long as the pin lives (it lives in this value); `Pinned`
// itself is `Send`. Nothing else in the cursor is tied to a thread.
unsafe impl Send for MemoryIter {}

impl MemoryIter {
    /// A cursor over `range` of `family` as `pinned` holds it (`family` must exist).
    pub(super) fn new(pinned: Arc<Pinned>, family: Family, range: KeyRange, reverse: bool) -> Self {
        let mut it = MemoryIter {
            position: Position::default(),
            pinned,
            family,
            bounds: range.clone(),
            end: Bound::Unbounded,
            reverse,
            exhausted: false,
        };
        it.position_at(&range, false);
        it
    }

    /// Positions the cursor at the start of `remaining`; `near`: from where it is, when
    /// that start lies ahead (see [`Position::seek_forward_near`]).
    fn position_at(&mut self, remaining: &KeyRange, near: bool) {
        self.exhausted = remaining.is_empty();
        let Some(tree) = self.pinned.tree(self.family) else {
            self.exhausted = true;
            return;
        };
        let (lower, upper) = remaining.as_slices();
        // SAFETY: `pinned` pins the tree for as long as this cursor (and its position)
        // lives.
        unsafe {
            if self.reverse {
                self.position.seek_backward(tree, upper);
            } else if near && !self.exhausted {
                self.position.seek_forward_near(tree, lower);
            } else {
                self.position.seek_forward(tree, lower);
            }
        }
        self.end = if self.reverse {
            remaining.lower.clone()
        } else {
            remaining.upper.clone()
        };
    }
}

impl MemoryIter {
    /// The next entry `keep` takes, read in place in the pinned tree: the slices live as
    /// long as the pin, which this cursor holds, and the borrow of `self` ends their use
    /// before the cursor can move or drop it.
    fn step(&mut self, keep: &KeyFilter) -> Option<(&[u8], &[u8])> {
        loop {
            if self.exhausted {
                return None;
            }
            // SAFETY: the position was set by `position_at` over the tree `pinned` pins.
            let entry = unsafe {
                if self.reverse {
                    self.position.next_backward()
                } else {
                    self.position.next_forward()
                }
            };
            let Some((key, value)) = entry else {
                self.exhausted = true;
                return None;
            };
            let past_end = match (&self.end, self.reverse) {
                (Bound::Unbounded, _) => false,
                (Bound::Included(e), false) => key > e.as_slice(),
                (Bound::Excluded(e), false) => key >= e.as_slice(),
                (Bound::Included(e), true) => key < e.as_slice(),
                (Bound::Excluded(e), true) => key <= e.as_slice(),
            };
            if past_end {
                self.exhausted = true;
                return None;
            }
            // A skipped entry is never copied. (The cursor reads nothing ahead, so a last
            // take needs no special case.)
            if keep(key).taken() {
                return Some((key, value));
            }
        }
    }
}

impl EngineIter for MemoryIter {
    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.next_entry_where(&|_| crate::engine::Verdict::Take)
    }

    fn next_entry_where(&mut self, keep: &KeyFilter) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.step(keep).map(|(k, v)| (k.to_vec(), v.to_vec())))
    }

    fn lend_next(
        &mut self,
        keep: Option<&KeyFilter>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool> {
        let entry = match keep {
            Some(keep) => self.step(keep),
            None => self.step(&|_| crate::engine::Verdict::Take),
        };
        Ok(entry.map(|(k, v)| visit(k, v)).is_some())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let remaining = seek_range(&self.bounds, self.reverse, target);
        // The position is one of this cursor's tree (the pinned tree never changes).
        self.position_at(&remaining, true);
        Ok(())
    }
}
