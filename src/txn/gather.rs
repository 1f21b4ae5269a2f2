//! Restore batches gathered for one write (see `TxnCore::restore`): every record copied once
//! into an arena of large chunks (never moved once written: a growing contiguous buffer
//! would copy everything gathered at each growth), then sorted by key for a sorted file.
//! Sorting compares a 16-byte key prefix held in the index first, so that most comparisons
//! touch neither the arena nor a second cache line, and nothing is allocated per record.

use crate::engine::Family;
use crate::format::meta::CommittedState;

/// Key bytes held in [`Entry::prefix`].
const PREFIX_BYTES: usize = 16;

/// Bytes per arena chunk; a larger record gets a chunk of its own size.
const CHUNK_BYTES: usize = 1 << 20;

/// One gathered record: where its key and value sit in the arena.
#[derive(Clone, Copy)]
struct Entry {
    /// The first 16 key bytes, big-endian, zero-padded: orders like the key itself
    /// whenever two prefixes differ (a zero pad only ever sorts a shorter key first).
    prefix: u128,
    /// The arena chunk holding the record.
    chunk: usize,
    /// Offset of the key in its chunk; the value follows it.
    at: usize,
    /// Changelog order: orders the writes of one key. The position in the arena cannot,
    /// because a record with an empty key and no value takes no arena bytes, so two
    /// records can share one.
    seq: usize,
    key_len: usize,
    /// `None` deletes.
    value_len: Option<usize>,
}

/// Restore records of one family in changelog order, and the commit they complete.
pub(crate) struct Gathering {
    family: Family,
    /// Chunks of at least [`CHUNK_BYTES`] capacity, filled one after the other.
    arena: Vec<Vec<u8>>,
    /// Bytes written into the arena.
    arena_bytes: usize,
    entries: Vec<Entry>,
    /// The commit that completes the gathered batches.
    pub(crate) next: CommittedState,
}

impl Gathering {
    /// An empty gathering for `family`.
    pub(crate) fn new(family: Family) -> Self {
        Gathering {
            family,
            arena: Vec::new(),
            arena_bytes: 0,
            entries: Vec::new(),
            next: CommittedState::default(),
        }
    }

    /// The family every record goes to.
    pub(crate) fn family(&self) -> Family {
        self.family
    }

    /// Appends one record (`None` deletes `key`).
    pub(crate) fn push(&mut self, key: &[u8], value: Option<&[u8]>) {
        let mut prefix = [0u8; PREFIX_BYTES];
        let n = key.len().min(PREFIX_BYTES);
        prefix[..n].copy_from_slice(&key[..n]);
        let len = key.len() + value.map_or(0, <[u8]>::len);
        let chunk = match self.arena.last_mut() {
            Some(c) if c.capacity() - c.len() >= len => c,
            _ => {
                self.arena.push(Vec::with_capacity(len.max(CHUNK_BYTES)));
                let last = self.arena.len() - 1;
                &mut self.arena[last]
            }
        };
        let at = chunk.len();
        chunk.extend_from_slice(key);
        if let Some(v) = value {
            chunk.extend_from_slice(v);
        }
        self.arena_bytes += len;
        self.entries.push(Entry {
            prefix: u128::from_be_bytes(prefix),
            chunk: self.arena.len() - 1,
            at,
            seq: self.entries.len(),
            key_len: key.len(),
            value_len: value.map(<[u8]>::len),
        });
    }

    /// Memory held, approximately.
    pub(crate) fn bytes(&self) -> u64 {
        (self.arena_bytes + self.entries.len() * std::mem::size_of::<Entry>()) as u64
    }

    fn key(&self, e: &Entry) -> &[u8] {
        &self.arena[e.chunk][e.at..e.at + e.key_len]
    }

    /// The last write of every key, in ascending key order.
    pub(crate) fn sorted_last(&mut self) -> Vec<(&[u8], Option<&[u8]>)> {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_unstable_by(|a, b| {
            a.prefix
                .cmp(&b.prefix)
                .then_with(|| self.key(a).cmp(self.key(b)))
                .then(a.seq.cmp(&b.seq))
        });
        let mut out: Vec<(&[u8], Option<&[u8]>)> = Vec::with_capacity(entries.len());
        let mut prev: Option<&Entry> = None;
        for e in &entries {
            let chunk = &self.arena[e.chunk];
            let key = &chunk[e.at..e.at + e.key_len];
            let value = e
                .value_len
                .map(|len| &chunk[e.at + e.key_len..e.at + e.key_len + len]);
            match (prev, out.last_mut()) {
                // Sorted by key, then changelog order: a later write of the key replaces.
                (Some(p), Some(last)) if self.same_key(p, e) => *last = (key, value),
                _ => out.push((key, value)),
            }
            prev = Some(e);
        }
        out
    }

    /// Whether two entries hold the same key, reading the arena only when the prefixes
    /// cannot tell: the arena is in changelog order, so in key order every first read of a
    /// key there is a cache miss.
    fn same_key(&self, a: &Entry, b: &Entry) -> bool {
        a.prefix == b.prefix
            && a.key_len == b.key_len
            && (a.key_len <= PREFIX_BYTES || self.key(a) == self.key(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// An empty gathering for a family named `data`.
    fn gathering() -> Gathering {
        let registry = crate::engine::Registry::new(&[], &["data"]).unwrap();
        Gathering::new(registry.require("data").unwrap())
    }

    /// `sorted_last` as owned entries, to compare with a model.
    fn owned_sorted_last(g: &mut Gathering) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        g.sorted_last()
            .into_iter()
            .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
            .collect()
    }

    proptest! {
        /// Against a map applied in changelog order: keys of every length around the
        /// 16-byte prefix (sharing prefixes, zero bytes), repeats and deletes.
        #[test]
        fn sorted_last_equals_the_last_write_of_each_key(
            writes in proptest::collection::vec(
                (
                    prop_oneof![
                        proptest::collection::vec(0u8..3, 0..20),
                        proptest::collection::vec(any::<u8>(), 14..19),
                    ],
                    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..6)),
                ),
                0..300,
            )
        ) {
            let mut g = gathering();
            let mut model: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
            for (k, v) in &writes {
                g.push(k, v.as_deref());
                model.insert(k.clone(), v.clone());
            }
            prop_assert_eq!(owned_sorted_last(&mut g), model.into_iter().collect::<Vec<_>>());
        }
    }

    /// Records spread over several chunks, one of them larger than a chunk (a chunk of its
    /// own), and a key rewritten in a later chunk: each comes back whole, the last write
    /// winning.
    #[test]
    fn records_across_chunks_come_back_whole() {
        let mut g = gathering();
        let mut model: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
        for i in 0..40u32 {
            let key = (i % 30).to_be_bytes();
            let len = if i == 17 {
                2 * CHUNK_BYTES + 3
            } else {
                100_000 + i as usize
            };
            let value = vec![i as u8; len];
            g.push(&key, Some(&value));
            model.insert(key.to_vec(), Some(value));
        }
        assert!(g.arena.len() >= 5, "{} chunks", g.arena.len());
        let want: Vec<(Vec<u8>, Option<Vec<u8>>)> = model.into_iter().collect();
        assert!(
            owned_sorted_last(&mut g) == want,
            "sorted_last differs from the model"
        );
    }

    /// Records that take no arena bytes (empty key, no value) share their arena offset with
    /// the record after them: here a thousand deletes of the empty key and its final write
    /// all sit at offset 0, and only the changelog order says which one wins.
    #[test]
    fn records_without_bytes_keep_their_changelog_order() {
        let mut g = gathering();
        // Other keys, in no order, before and after: the sort has to move the run around.
        let mut x = 7u32;
        let mut other = |g: &mut Gathering| {
            for _ in 0..500 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                g.push(&[1, (x >> 24) as u8], Some(b"v"));
            }
        };
        other(&mut g);
        for _ in 0..1000 {
            g.push(b"", None);
        }
        g.push(b"", Some(b"last"));
        other(&mut g);
        let got = g.sorted_last();
        assert_eq!(got[0], (&b""[..], Some(&b"last"[..])));
    }
}
