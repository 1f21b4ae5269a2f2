//! The in-memory part of an uncommitted transaction: the latest write per key (a value or a
//! tombstone), in key order, with a running size so the transaction layer knows when to
//! spill.
//!
//! Two maps hold it. Writes go into `recent`, a plain `BTreeMap` that nothing else ever
//! sees, so a put costs one ordinary ordered insert. A reader that needs a snapshot of the
//! buffer (an iterator over the writer's view, which must not see later writes) gets a
//! clone of `frozen`, a persistent map that clones in O(1): taking the snapshot first moves
//! `recent` into `frozen`. So a transaction that is never iterated never touches the
//! persistent map, and one that is iterated pays, per snapshot, only for the writes made
//! since the previous one: never a copy of the whole buffer, however the writes and
//! iterators interleave. A key is in at most one of the two maps.

use std::collections::BTreeMap;
use std::iter::Peekable;
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
    /// Writes since the last snapshot; no key of it is in `frozen`.
    recent: BTreeMap<Arc<[u8]>, Write>,
    /// Writes up to the last snapshot, shared with the cursors that took it.
    frozen: OrdMap<Arc<[u8]>, Write>,
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
        // Keep a key in one map only: a newer write moves it out of `frozen`. (An empty
        // persistent map is not asked: a remove copies its root.)
        if !self.frozen.is_empty() {
            if let Some(old) = self.frozen.remove(key) {
                self.bytes -= cost(key, &old);
            }
        }
        // One descent: most writes are of keys not yet buffered, so the key is shared up
        // front rather than looked up first.
        if let Some(old) = self.recent.insert(Arc::from(key), write) {
            self.bytes -= cost(key, &old);
        }
        self.bytes += added;
    }

    /// The buffered write of `key`: `None` if the key was not written, `Some(None)` for a
    /// tombstone.
    pub(crate) fn get(&self, key: &[u8]) -> Option<&Write> {
        self.recent.get(key).or_else(|| self.frozen.get(key))
    }

    /// Approximate heap bytes held.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Number of buffered keys.
    pub(crate) fn len(&self) -> usize {
        self.recent.len() + self.frozen.len()
    }

    /// True when nothing is buffered.
    pub(crate) fn is_empty(&self) -> bool {
        self.recent.is_empty() && self.frozen.is_empty()
    }

    /// Buffered puts minus buffered deletes, for entry-count estimates.
    pub(crate) fn net_entries(&self) -> i64 {
        self.iter()
            .map(|(_, w)| if w.is_some() { 1 } else { -1 })
            .sum()
    }

    /// A snapshot of the entries, for cursors that must not see later writes: O(1) plus an
    /// insert into the persistent map per write made since the previous snapshot.
    pub(crate) fn snapshot(&mut self) -> OrdMap<Arc<[u8]>, Write> {
        if !self.recent.is_empty() {
            if self.frozen.is_empty() {
                self.frozen = std::mem::take(&mut self.recent).into_iter().collect();
            } else {
                for (key, write) in std::mem::take(&mut self.recent) {
                    self.frozen.insert(key, write);
                }
            }
        }
        self.frozen.clone()
    }

    /// All entries in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Arc<[u8]>, &Write)> {
        Union {
            recent: self.recent.iter().peekable(),
            frozen: self.frozen.iter().peekable(),
        }
    }

    /// Empties the buffer.
    pub(crate) fn clear(&mut self) {
        self.recent.clear();
        self.frozen = OrdMap::new();
        self.bytes = 0;
    }
}

/// The entries of two key-disjoint sorted iterators, in key order.
struct Union<'a, A, B>
where
    A: Iterator<Item = (&'a Arc<[u8]>, &'a Write)>,
    B: Iterator<Item = (&'a Arc<[u8]>, &'a Write)>,
{
    recent: Peekable<A>,
    frozen: Peekable<B>,
}

impl<'a, A, B> Iterator for Union<'a, A, B>
where
    A: Iterator<Item = (&'a Arc<[u8]>, &'a Write)>,
    B: Iterator<Item = (&'a Arc<[u8]>, &'a Write)>,
{
    type Item = (&'a Arc<[u8]>, &'a Write);

    fn next(&mut self) -> Option<Self::Item> {
        let recent_first = match (self.recent.peek(), self.frozen.peek()) {
            (Some((a, _)), Some((b, _))) => a < b,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if recent_first {
            self.recent.next()
        } else {
            self.frozen.next()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

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

    /// Writes, snapshots and overwrites interleaved at random: the buffer always reads as a
    /// model map, its accounting as the model's, and every snapshot keeps the entries it was
    /// taken with.
    #[test]
    fn snapshots_keep_their_entries_while_writes_go_on() {
        let mut x = 7u64;
        let mut next = move |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let mut b = WriteBuffer::default();
        let mut model: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
        let mut snapshots = Vec::new();
        for step in 0..5000 {
            match next(10) {
                0 => {
                    let snap = b.snapshot();
                    snapshots.push((snap, model.clone()));
                }
                1 if step % 7 == 0 => {
                    b.clear();
                    model.clear();
                }
                _ => {
                    let key = next(300).to_be_bytes().to_vec();
                    let value = (next(4) != 0).then(|| vec![b'v'; next(20) as usize]);
                    b.insert(&key, value.as_deref());
                    model.insert(key, value);
                }
            }
            let got: Vec<(Vec<u8>, Option<Vec<u8>>)> = b
                .iter()
                .map(|(k, w)| (k.to_vec(), w.as_deref().map(<[u8]>::to_vec)))
                .collect();
            let want: Vec<(Vec<u8>, Option<Vec<u8>>)> = model.clone().into_iter().collect();
            assert_eq!(got, want, "step {step}");
            assert_eq!(b.len(), model.len());
            let bytes: u64 = model
                .iter()
                .map(|(k, v)| k.len() as u64 + v.as_ref().map_or(0, |v| v.len() as u64))
                .sum::<u64>()
                + ENTRY_OVERHEAD * model.len() as u64;
            assert_eq!(b.bytes(), bytes);
            let net: i64 = model
                .values()
                .map(|v| if v.is_some() { 1 } else { -1 })
                .sum();
            assert_eq!(b.net_entries(), net);
            let probe = next(300).to_be_bytes();
            assert_eq!(
                b.get(&probe).map(|w| w.as_deref().map(<[u8]>::to_vec)),
                model.get(&probe[..]).cloned()
            );
        }
        assert!(snapshots.len() > 100);
        for (snap, then) in snapshots {
            let got: Vec<(Vec<u8>, Option<Vec<u8>>)> = snap
                .iter()
                .map(|(k, w)| (k.to_vec(), w.as_deref().map(<[u8]>::to_vec)))
                .collect();
            assert_eq!(got, then.into_iter().collect::<Vec<_>>());
        }
    }
}
