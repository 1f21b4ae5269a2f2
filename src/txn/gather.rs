//! Restore batches gathered for one write (see `TxnCore::restore`): every record copied once
//! into one contiguous arena, then sorted by key for a sorted file. Sorting compares a
//! 16-byte key prefix held in the index first, so that most comparisons touch neither the
//! arena nor a second cache line, and nothing is allocated per record.

use crate::engine::Family;
use crate::format::meta::CommittedState;

/// One gathered record: where its key and value sit in the arena.
#[derive(Clone, Copy)]
struct Entry {
    /// The first 16 key bytes, big-endian, zero-padded: orders like the key itself
    /// whenever two prefixes differ (a zero pad only ever sorts a shorter key first).
    prefix: u128,
    /// Offset of the key in the arena; the value follows it.
    at: usize,
    /// Changelog order: orders the writes of one key. `at` cannot, because a record with an
    /// empty key and no value takes no arena bytes, so two records can share an offset.
    seq: usize,
    key_len: usize,
    /// `None` deletes.
    value_len: Option<usize>,
}

/// Restore records of one family in changelog order, and the commit they complete.
pub(crate) struct Gathering {
    family: Family,
    arena: Vec<u8>,
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
        let mut prefix = [0u8; 16];
        let n = key.len().min(16);
        prefix[..n].copy_from_slice(&key[..n]);
        self.entries.push(Entry {
            prefix: u128::from_be_bytes(prefix),
            at: self.arena.len(),
            seq: self.entries.len(),
            key_len: key.len(),
            value_len: value.map(<[u8]>::len),
        });
        self.arena.extend_from_slice(key);
        if let Some(v) = value {
            self.arena.extend_from_slice(v);
        }
    }

    /// Memory held, approximately.
    pub(crate) fn bytes(&self) -> u64 {
        (self.arena.len() + self.entries.len() * std::mem::size_of::<Entry>()) as u64
    }

    fn key(&self, e: &Entry) -> &[u8] {
        &self.arena[e.at..e.at + e.key_len]
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
        for e in &entries {
            let key = &self.arena[e.at..e.at + e.key_len];
            let value = e
                .value_len
                .map(|len| &self.arena[e.at + e.key_len..e.at + e.key_len + len]);
            match out.last_mut() {
                // Sorted by key, then changelog order: a later write of the key replaces.
                Some(prev) if prev.0 == key => *prev = (key, value),
                _ => out.push((key, value)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

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
            let registry = crate::engine::Registry::new(&[], &["data"]).unwrap();
            let mut g = Gathering::new(registry.require("data").unwrap());
            let mut model: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
            for (k, v) in &writes {
                g.push(k, v.as_deref());
                model.insert(k.clone(), v.clone());
            }
            let got: Vec<(Vec<u8>, Option<Vec<u8>>)> = g
                .sorted_last()
                .into_iter()
                .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
                .collect();
            let want: Vec<(Vec<u8>, Option<Vec<u8>>)> = model.into_iter().collect();
            prop_assert_eq!(got, want);
        }
    }
    /// Records that take no arena bytes (empty key, no value) share their arena offset with
    /// the record after them: here a thousand deletes of the empty key and its final write
    /// all sit at offset 0, and only the changelog order says which one wins.
    #[test]
    fn records_without_bytes_keep_their_changelog_order() {
        let registry = crate::engine::Registry::new(&[], &["data"]).unwrap();
        let mut g = Gathering::new(registry.require("data").unwrap());
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
