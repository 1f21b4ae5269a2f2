//! Store iterators. An iterator owns its position (no borrow of the store), so it can be a
//! C or Java handle; the store keeps a weak list of its iterators and empties them when it
//! closes, which also releases the engine resources they pin.

use std::sync::{Arc, Mutex, Weak};

use crate::format::meta::ValueFormat;
use crate::format::ValueAndTimestamp;
use crate::sync::MutexExt;
use crate::txn::MergedIter;
use crate::{Error, Result};

pub(crate) type Slot = Mutex<Option<MergedIter>>;

/// Weak references to the live iterators of a store.
#[derive(Default)]
pub(crate) struct Registry {
    slots: Mutex<Vec<Weak<Slot>>>,
}

impl Registry {
    /// Registers a new iterator, forgetting those already dropped.
    pub(crate) fn register(&self, iter: MergedIter) -> Arc<Slot> {
        let slot = Arc::new(Mutex::new(Some(iter)));
        let mut slots = self.slots.lock_recover();
        slots.retain(|w| w.strong_count() > 0);
        slots.push(Arc::downgrade(&slot));
        slot
    }

    /// Closes every live iterator.
    pub(crate) fn close_all(&self) {
        let slots = std::mem::take(&mut *self.slots.lock_recover());
        for slot in slots.iter().filter_map(Weak::upgrade) {
            slot.lock_recover().take();
        }
    }

    /// Number of live iterators.
    pub(crate) fn live(&self) -> usize {
        let slots = self.slots.lock_recover();
        slots
            .iter()
            .filter(|w| w.upgrade().is_some_and(|s| s.lock_recover().is_some()))
            .count()
    }
}

/// An ordered cursor over a store's entries, fixed at the moment it was created. Entries
/// are `(key, raw value)`, the raw value being in the store's value layout.
///
/// It is closed by [`KvIter::close`], by dropping it, or when its store closes; after that,
/// every call returns [`Error::IteratorClosed`].
pub struct KvIter {
    slot: Arc<Slot>,
    format: ValueFormat,
}

impl KvIter {
    pub(crate) fn new(slot: Arc<Slot>, format: ValueFormat) -> Self {
        KvIter { slot, format }
    }

    /// The next entry with its raw value, or `None` at the end.
    pub fn next_raw(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut slot = self.slot.lock_recover();
        let iter = slot.as_mut().ok_or(Error::IteratorClosed)?;
        iter.next_entry()
    }

    /// The next entry decoded as a value and timestamp (timestamped and headers-format
    /// stores; headers are dropped).
    pub fn next_timestamped(&mut self) -> Result<Option<(Vec<u8>, ValueAndTimestamp)>> {
        if self.format == ValueFormat::Plain {
            return Err(Error::FormatMismatch("the store is not timestamped".into()));
        }
        match self.next_raw()? {
            None => Ok(None),
            Some((k, raw)) if self.format == ValueFormat::Headers => {
                let p = crate::format::headers::split(&raw)?;
                Ok(Some((k, ValueAndTimestamp::new(p.value, p.timestamp))))
            }
            Some((k, raw)) => Ok(Some((k, ValueAndTimestamp::decode(&raw)?))),
        }
    }

    /// The next entry decoded with its headers (headers-format stores only).
    pub fn next_with_headers(
        &mut self,
    ) -> Result<Option<(Vec<u8>, crate::format::ValueTimestampHeaders)>> {
        if self.format != ValueFormat::Headers {
            return Err(Error::FormatMismatch(
                "the store is not in the headers format".into(),
            ));
        }
        match self.next_raw()? {
            None => Ok(None),
            Some((k, raw)) => Ok(Some((
                k,
                crate::format::ValueTimestampHeaders::decode(&raw)?,
            ))),
        }
    }

    /// Appends up to `max_entries` entries to `out`, stopping early once `max_bytes` of keys
    /// and values were added (at least one entry is always added if any remains). Returns
    /// the number added; 0 means the iterator is exhausted.
    pub fn next_batch(
        &mut self,
        max_entries: usize,
        max_bytes: usize,
        out: &mut Vec<(Vec<u8>, Vec<u8>)>,
    ) -> Result<usize> {
        if max_entries == 0 {
            return Ok(0);
        }
        let mut added = 0;
        let mut bytes = 0;
        self.lend_while(&mut |k, v| {
            bytes += k.len() + v.len();
            out.push((k.to_vec(), v.to_vec()));
            added += 1;
            added < max_entries && bytes < max_bytes
        })?;
        Ok(added)
    }

    /// Hands entries (key, raw value) to `visit` one at a time, under one lock, until `visit`
    /// returns `false` or the iterator ends (the entry after the last one visited is not
    /// read). The slices are lent by the engine where it can (RocksDB's cursor, when the
    /// view has one layer): a caller copying entries into a buffer of its own copies each
    /// once. An error ends the visit; entries visited before it stay consumed.
    ///
    /// Returns whether the iterator ended: true only when it ran out of entries with `visit`
    /// still asking for more, so a caller that stopped it learns nothing about what is left.
    pub fn lend_while(&mut self, visit: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<bool> {
        let mut slot = self.slot.lock_recover();
        let iter = slot.as_mut().ok_or(Error::IteratorClosed)?;
        let mut go = true;
        while go && iter.lend_next(&mut |k, v| go = visit(k, v))? {}
        Ok(go)
    }

    /// Closes the iterator, releasing what it pins. Idempotent.
    pub fn close(&mut self) {
        self.slot.lock_recover().take();
    }

    /// True until the iterator or its store is closed.
    pub fn is_open(&self) -> bool {
        self.slot.lock_recover().is_some()
    }
}

impl std::fmt::Debug for KvIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvIter")
            .field("format", &self.format)
            .field("open", &self.is_open())
            .finish()
    }
}

impl Iterator for KvIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_raw().transpose()
    }
}

impl Drop for KvIter {
    fn drop(&mut self) {
        self.close();
    }
}
