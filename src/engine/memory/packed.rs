//! An ordered run of byte-string entries (a key and a value each) stored inline: every
//! entry's bytes live in one buffer and a slot array indexes them. A node of the memory
//! engine's tree is one such run, so a search inside a node touches a few contiguous
//! buffers instead of one heap object per key, and copying a node (copy-on-write under a
//! snapshot) copies bytes and touches no reference count.
//!
//! Keys of one node tend to share a long prefix (neighbouring keys of a sorted store), so
//! the run keeps that common prefix once and, per entry, the eight key bytes after it as
//! an integer: most comparisons of a search are integer comparisons in one dense array.

use std::cmp::Ordering;

/// Where an entry's bytes are: the key at `off`, the value right after it.
#[derive(Debug, Clone, Copy)]
struct Slot {
    off: usize,
    klen: u32,
    vlen: u32,
}

/// Eight bytes of `key` from `at`, zero-padded, as a big-endian integer.
///
/// For two keys that agree before `at`, differing heads order them as the keys: they
/// differ at a byte within the eight, and either both keys have that byte (the same
/// comparison) or the shorter key ended before it, so it is a proper prefix of the other
/// (smaller) and its padding byte is 0 where the other's is not (also smaller). Equal
/// heads say nothing.
pub(super) fn head_at(key: &[u8], at: usize) -> u64 {
    let rest = key.get(at..).unwrap_or(&[]);
    let mut word = [0u8; 8];
    let n = rest.len().min(8);
    word[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(word)
}

/// Length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Lengths kstate accepts fit a `u32` (the engine refuses others before writing).
fn len32(n: usize) -> u32 {
    debug_assert!(u32::try_from(n).is_ok(), "entry length {n} exceeds u32");
    n as u32
}

/// Garbage (bytes of overwritten or removed entries) tolerated before a buffer is
/// compacted: at least this much, and at least as much as the live bytes.
const GARBAGE_FLOOR: usize = 1024;

/// Bytes of the common prefix kept in the header, so that checking a key against it
/// usually reads no entry.
const INLINE_PREFIX: usize = 16;

/// An ordered run of entries stored inline. Keys are unique and ascending; callers keep
/// them so (every insertion position comes from [`Packed::search`]).
///
/// Every key starts with the same `lcp` bytes; `heads[i]` holds the eight bytes of key `i`
/// that follow them. A search first checks the key against the common prefix, then
/// binary-searches the heads, a dense array of integers, and reads entry bytes only to
/// break a tie (in practice: to confirm the match).
#[derive(Debug, Default)]
pub(super) struct Packed {
    /// Number of leading bytes all keys share (not necessarily the longest such prefix).
    lcp: usize,
    /// The first `min(lcp, INLINE_PREFIX)` bytes of the common prefix.
    prefix: [u8; INLINE_PREFIX],
    heads: Vec<u64>,
    slots: Vec<Slot>,
    data: Vec<u8>,
    /// Bytes of `data` no slot refers to.
    garbage: usize,
}

impl Packed {
    /// Number of entries.
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when there is no entry.
    pub(super) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Key and value bytes of the entries.
    pub(super) fn live_bytes(&self) -> usize {
        self.data.len() - self.garbage
    }

    /// Bytes this run holds on the heap (its buffers' capacity).
    #[cfg(test)]
    pub(super) fn heap_bytes(&self) -> usize {
        self.heads.capacity() * std::mem::size_of::<u64>()
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.data.capacity()
    }

    /// The key of entry `i` (`i < len`).
    pub(super) fn key(&self, i: usize) -> &[u8] {
        let s = self.slots[i];
        &self.data[s.off..s.off + s.klen as usize]
    }

    /// The value of entry `i` (`i < len`).
    pub(super) fn value(&self, i: usize) -> &[u8] {
        let s = self.slots[i];
        let start = s.off + s.klen as usize;
        &self.data[start..start + s.vlen as usize]
    }

    /// `key` against the common prefix: `Less` when it sorts before every key of the run,
    /// `Greater` after every key, `Equal` when it starts with the prefix.
    fn cmp_prefix(&self, key: &[u8]) -> Ordering {
        let inline = self.lcp.min(INLINE_PREFIX);
        match key[..key.len().min(inline)].cmp(&self.prefix[..inline]) {
            Ordering::Equal => {}
            other => return other,
        }
        if self.lcp > inline {
            let first = self.key(0);
            let ours = &key[inline.min(key.len())..key.len().min(self.lcp)];
            return ours.cmp(&first[inline..self.lcp]);
        }
        Ordering::Equal
    }

    /// `Ok(i)` when entry `i` has `key`, else `Err(i)`, the position where it would go.
    pub(super) fn search(&self, key: &[u8]) -> Result<usize, usize> {
        let n = self.slots.len();
        if n == 0 {
            return Err(0);
        }
        if self.lcp > 0 {
            match self.cmp_prefix(key) {
                Ordering::Less => return Err(0),
                Ordering::Greater => return Err(n),
                Ordering::Equal => {}
            }
        }
        let head = head_at(key, self.lcp);
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let order = match self.heads[mid].cmp(&head) {
                Ordering::Equal => self.key(mid)[self.lcp..].cmp(&key[self.lcp..]),
                other => other,
            };
            match order {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Number of entries whose key is `<= key`.
    pub(super) fn count_le(&self, key: &[u8]) -> usize {
        match self.search(key) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }

    /// Number of entries whose key is `< key`.
    pub(super) fn count_lt(&self, key: &[u8]) -> usize {
        match self.search(key) {
            Ok(i) | Err(i) => i,
        }
    }

    /// Sets the common prefix to `lcp` bytes (all keys must share them) and recomputes
    /// the heads.
    fn set_lcp(&mut self, lcp: usize) {
        self.lcp = lcp;
        let inline = lcp.min(INLINE_PREFIX);
        if inline > 0 {
            let first = self.slots[0];
            self.prefix[..inline].copy_from_slice(&self.data[first.off..first.off + inline]);
        }
        let mut heads = std::mem::take(&mut self.heads);
        heads.clear();
        heads.extend((0..self.slots.len()).map(|i| head_at(self.key(i), lcp)));
        self.heads = heads;
    }

    /// Makes the common prefix one `key` shares too (before `key` is added).
    fn admit(&mut self, key: &[u8]) {
        if self.slots.is_empty() {
            return;
        }
        if key.len() < self.lcp || self.cmp_prefix(key) != Ordering::Equal {
            let shared = common_prefix(key, self.key(0)).min(self.lcp);
            self.set_lcp(shared);
        }
    }

    fn push_bytes(&mut self, key: &[u8], value: &[u8]) -> Slot {
        let off = self.data.len();
        self.data.reserve(key.len() + value.len());
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
        Slot {
            off,
            klen: len32(key.len()),
            vlen: len32(value.len()),
        }
    }

    /// Inserts an entry at position `i` (as given by [`Packed::search`]).
    pub(super) fn insert(&mut self, i: usize, key: &[u8], value: &[u8]) {
        if self.slots.is_empty() {
            self.clear();
        }
        self.admit(key);
        let slot = self.push_bytes(key, value);
        self.slots.insert(i, slot);
        self.heads.insert(i, head_at(key, self.lcp));
    }

    /// Replaces the value of entry `i`: in place when the length is unchanged (a store's
    /// values often keep their size), appended otherwise.
    pub(super) fn set_value(&mut self, i: usize, value: &[u8]) {
        let s = self.slots[i];
        if s.vlen as usize == value.len() {
            let start = s.off + s.klen as usize;
            self.data[start..start + value.len()].copy_from_slice(value);
            return;
        }
        let off = self.data.len();
        self.data.reserve(s.klen as usize + value.len());
        self.data.extend_from_within(s.off..s.off + s.klen as usize);
        self.data.extend_from_slice(value);
        self.garbage += s.klen as usize + s.vlen as usize;
        self.slots[i] = Slot {
            off,
            vlen: len32(value.len()),
            ..s
        };
        self.compact_if_wasteful();
    }

    /// Removes entry `i`.
    pub(super) fn remove(&mut self, i: usize) {
        let s = self.slots.remove(i);
        self.heads.remove(i);
        self.garbage += s.klen as usize + s.vlen as usize;
        if self.slots.is_empty() {
            self.clear();
        } else {
            self.compact_if_wasteful();
        }
    }

    /// Empties the run, keeping its buffers.
    pub(super) fn clear(&mut self) {
        self.lcp = 0;
        self.heads.clear();
        self.slots.clear();
        self.data.clear();
        self.garbage = 0;
    }

    fn compact_if_wasteful(&mut self) {
        if self.garbage > GARBAGE_FLOOR && self.garbage > self.live_bytes() {
            *self = self.copy_range(0, self.len());
        }
    }

    /// Entries `from..to` in a new, compact run (no garbage, longest common prefix).
    pub(super) fn copy_range(&self, from: usize, to: usize) -> Packed {
        let mut out = Packed::default();
        self.copy_range_into(from, to, &mut out);
        out
    }

    /// Entries `from..to` written into `out` (emptied first, its buffers reused): compact,
    /// with the longest common prefix.
    pub(super) fn copy_range_into(&self, from: usize, to: usize, out: &mut Packed) {
        out.clear();
        let slots = &self.slots[from..to];
        let bytes: usize = slots
            .iter()
            .map(|s| s.klen as usize + s.vlen as usize)
            .sum();
        out.slots.reserve(slots.len() + 1);
        out.heads.reserve(slots.len() + 1);
        out.data.reserve(bytes + bytes / 8);
        for s in slots {
            let off = out.data.len();
            out.data
                .extend_from_slice(&self.data[s.off..s.off + s.klen as usize + s.vlen as usize]);
            out.slots.push(Slot { off, ..*s });
        }
        if to > from {
            // Keys are sorted: what the first and last share, all share.
            let lcp = common_prefix(out.key(0), out.key(out.len() - 1));
            out.set_lcp(lcp);
        }
    }

    /// Appends every entry of `other`, whose keys must all be greater than this run's.
    pub(super) fn append(&mut self, other: &Packed) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            other.copy_range_into(0, other.len(), self);
            return;
        }
        self.data.reserve(other.live_bytes());
        self.slots.reserve(other.len());
        for i in 0..other.len() {
            let slot = self.push_bytes(other.key(i), other.value(i));
            self.slots.push(slot);
        }
        let lcp = common_prefix(self.key(0), self.key(self.len() - 1));
        self.set_lcp(lcp);
    }

    /// The index that splits the entries into two runs of about equal bytes, each with at
    /// least one entry (`len >= 2`).
    pub(super) fn byte_midpoint(&self) -> usize {
        let half = self.live_bytes() / 2;
        let mut seen = 0usize;
        for (i, s) in self.slots.iter().enumerate() {
            seen += s.klen as usize + s.vlen as usize;
            if seen >= half {
                return (i + 1).clamp(1, self.len() - 1);
            }
        }
        self.len() / 2
    }

    /// Checks the heads and the common prefix against the entries, for tests.
    #[cfg(test)]
    pub(super) fn check(&self) -> Result<(), String> {
        if self.heads.len() != self.slots.len() {
            return Err("heads and slots differ in number".into());
        }
        for i in 0..self.len() {
            let key = self.key(i);
            if key.len() < self.lcp || self.cmp_prefix(key) != Ordering::Equal {
                return Err(format!("key {i} lacks the common prefix"));
            }
            if self.heads[i] != head_at(key, self.lcp) {
                return Err(format!("stale head {i}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn heads_order_like_keys_where_they_differ() {
        let keys: Vec<&[u8]> = vec![
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"a\0\0\0\0\0\0\0\0",
            b"ab",
            b"abcdefgh",
            b"abcdefghi",
            b"abcdefgi",
            b"b",
            b"\xff",
        ];
        for a in &keys {
            for b in &keys {
                let (pa, pb) = (head_at(a, 0), head_at(b, 0));
                if pa != pb {
                    assert_eq!(pa.cmp(&pb), a.cmp(b), "{a:?} vs {b:?}");
                }
            }
        }
    }

    /// Keys sharing long prefixes, of lengths on both sides of the head's eight bytes and the
    /// inline prefix's sixteen, with zero bytes that padding could be mistaken for.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        (0usize..24, prop::collection::vec(0u8..3, 0..12)).prop_map(|(shared, tail)| {
            let mut k = b"common-prefix-of-twenty"
                .get(..shared)
                .unwrap_or(b"")
                .to_vec();
            k.extend(tail);
            k
        })
    }

    proptest! {
        #![proptest_config(super::super::tests::proptest_config(256, 2))]

        /// Random inserts, overwrites (same and other lengths) and removes agree with a
        /// `BTreeMap`, through compactions, copies, splits and appends.
        #[test]
        fn behaves_like_an_ordered_map(
            ops in prop::collection::vec(
                (0u8..3, key(), prop::collection::vec(any::<u8>(), 0..40)),
                // Fewer under Miri, where every operation also checks the whole run.
                1..if cfg!(miri) { 80 } else { 300 },
            )
        ) {
            let mut p = Packed::default();
            let mut model = std::collections::BTreeMap::<Vec<u8>, Vec<u8>>::new();
            for (op, key, value) in ops {
                match (op, p.search(&key)) {
                    (0 | 1, Ok(i)) => p.set_value(i, &value),
                    (0 | 1, Err(i)) => p.insert(i, &key, &value),
                    (_, Ok(i)) => p.remove(i),
                    (_, Err(_)) => {}
                }
                if op < 2 {
                    model.insert(key.clone(), value);
                } else {
                    model.remove(&key);
                }
                prop_assert_eq!(p.count_le(&key), model.range(..=key.clone()).count());
                prop_assert_eq!(p.count_lt(&key), model.range(..key.clone()).count());
                prop_assert!(p.garbage <= GARBAGE_FLOOR.max(p.live_bytes()));
                p.check().map_err(TestCaseError::fail)?;
            }
            let got: Vec<(Vec<u8>, Vec<u8>)> =
                (0..p.len()).map(|i| (p.key(i).to_vec(), p.value(i).to_vec())).collect();
            let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
            prop_assert_eq!(&got, &want);
            if p.len() >= 2 {
                let mid = p.byte_midpoint();
                prop_assert!(mid >= 1 && mid < p.len());
                let mut left = p.copy_range(0, mid);
                let right = p.copy_range(mid, p.len());
                left.check().map_err(TestCaseError::fail)?;
                right.check().map_err(TestCaseError::fail)?;
                left.append(&right);
                left.check().map_err(TestCaseError::fail)?;
                let again: Vec<(Vec<u8>, Vec<u8>)> =
                    (0..left.len()).map(|i| (left.key(i).to_vec(), left.value(i).to_vec())).collect();
                prop_assert_eq!(&again, &want);
                prop_assert_eq!(left.live_bytes(), p.live_bytes());
            }
            let mut copy = Packed::default();
            copy.insert(0, b"zzz", b"reused buffers");
            p.copy_range_into(0, p.len(), &mut copy);
            prop_assert_eq!(copy.garbage, 0);
            prop_assert_eq!(copy.live_bytes(), p.live_bytes());
            copy.check().map_err(TestCaseError::fail)?;
            for i in 0..p.len() {
                prop_assert_eq!(copy.search(p.key(i)), Ok(i));
            }
        }
    }
}
