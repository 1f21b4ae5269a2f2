//! The in-memory part of an uncommitted transaction: the latest write per key (a value or a
//! tombstone), in key order, with a running size so the transaction layer knows when to
//! spill.

use std::sync::Arc;

use imbl::OrdMap;

/// A buffered write: `Some(value)` or a tombstone.
pub(crate) type Write = Option<Arc<[u8]>>;

/// Per-entry bookkeeping cost counted on top of key and value bytes, roughly what the map
/// node and the two shared allocations cost.
const ENTRY_OVERHEAD: u64 = 64;

/// Latest uncommitted write per key.
#[derive(Clone, Default)]
pub(crate) struct WriteBuffer {
    map: OrdMap<Arc<[u8]>, Write>,
    bytes: u64,
}

fn cost(key: &[u8], write: &Write) -> u64 {
    key.len() as u64 + write.as_ref().map_or(0, |v| v.len() as u64) + ENTRY_OVERHEAD
}

impl WriteBuffer {
    /// Records a write, replacing any earlier write of the same key.
    pub(crate) fn insert(&mut self, key: &[u8], write: Option<&[u8]>) {
        self.insert_shared(key, write.map(Arc::from));
    }

    /// Records a write whose value is already shared (no copy).
    pub(crate) fn insert_shared(&mut self, key: &[u8], write: Write) {
        let added = cost(key, &write);
        if let Some(old) = self.map.insert(Arc::from(key), write) {
            self.bytes -= cost(key, &old);
        }
        self.bytes += added;
    }

    /// The buffered write of `key`: `None` if the key was not written, `Some(None)` for a
    /// tombstone.
    pub(crate) fn get(&self, key: &[u8]) -> Option<&Write> {
        self.map.get(key)
    }

    /// Approximate heap bytes held.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Number of buffered keys.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// True when nothing is buffered.
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Buffered puts minus buffered deletes, for entry-count estimates.
    pub(crate) fn net_entries(&self) -> i64 {
        self.map
            .values()
            .map(|w| if w.is_some() { 1 } else { -1 })
            .sum()
    }

    /// An O(1) snapshot of the entries, for cursors that must not see later writes.
    pub(crate) fn snapshot(&self) -> OrdMap<Arc<[u8]>, Write> {
        self.map.clone()
    }

    /// All entries in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Arc<[u8]>, &Write)> {
        self.map.iter()
    }

    /// Empties the buffer.
    pub(crate) fn clear(&mut self) {
        self.map = OrdMap::new();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounting_follows_overwrites() {
        let mut b = WriteBuffer::default();
        b.insert(b"k", Some(b"12345"));
        assert_eq!(b.bytes(), 1 + 5 + ENTRY_OVERHEAD);
        b.insert(b"k", None);
        assert_eq!(b.bytes(), 1 + ENTRY_OVERHEAD);
        b.insert(b"j", Some(b""));
        assert_eq!(b.len(), 2);
        assert_eq!(b.net_entries(), 0);
        assert_eq!(b.get(b"k"), Some(&None));
        assert!(b.get(b"x").is_none());
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.bytes(), 0);
    }
}
