//! Cursors over a pinned snapshot of one family, fetching entries in chunks: each refill
//! walks down from the root to where the last chunk ended, so the cursor holds no address
//! into the tree between calls, only its pin.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use super::super::cursor::seek_range;
use super::tree::Walk;
use super::Pinned;
use crate::engine::{EngineIter, Family, KeyRange};
use crate::Result;

/// Entries fetched per refill; large enough to amortise the O(log n) descent.
const CHUNK: usize = 128;

/// A cursor over `bounds` of one family of a pinned snapshot.
pub(super) struct MemoryIter {
    pinned: Arc<Pinned>,
    family: Family,
    /// The range the cursor was created with: seeks stay inside it.
    bounds: KeyRange,
    remaining: KeyRange,
    reverse: bool,
    ready: VecDeque<(Vec<u8>, Vec<u8>)>,
    exhausted: bool,
}

impl MemoryIter {
    /// A cursor over `range` of `family` as `pinned` holds it.
    pub(super) fn new(pinned: Arc<Pinned>, family: Family, range: KeyRange, reverse: bool) -> Self {
        let exhausted = range.is_empty();
        MemoryIter {
            pinned,
            family,
            bounds: range.clone(),
            remaining: range,
            reverse,
            ready: VecDeque::new(),
            exhausted,
        }
    }

    fn refill(&mut self) -> Result<()> {
        if self.exhausted {
            return Ok(());
        }
        let view = self.pinned.view(self.family)?;
        let (lower, upper) = self.remaining.as_slices();
        let ready = &mut self.ready;
        let walk = view.walk(lower, upper, self.reverse, CHUNK, &mut |k, v| {
            ready.push_back((k.to_vec(), v.to_vec()))
        });
        if walk == Walk::Done {
            self.exhausted = true;
        }
        if let Some((last, _)) = self.ready.back() {
            let resume = Bound::Excluded(last.clone());
            if self.reverse {
                self.remaining.upper = resume;
            } else {
                self.remaining.lower = resume;
            }
            if self.remaining.is_empty() {
                self.exhausted = true;
            }
        }
        Ok(())
    }
}

impl EngineIter for MemoryIter {
    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if self.ready.is_empty() {
            self.refill()?;
        }
        Ok(self.ready.pop_front())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.ready.clear();
        self.remaining = seek_range(&self.bounds, self.reverse, target);
        self.exhausted = self.remaining.is_empty();
        Ok(())
    }
}
