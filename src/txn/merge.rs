//! Merged, ordered views over layered sources: uncommitted buffer over spilled writes over
//! committed data. The highest-priority source wins for a key; tombstones hide the key.

use std::sync::Arc;

use super::buffer::Write;
use crate::engine::{EngineIter, KeyFilter, OrdCursor};
use crate::Result;

/// A key with its write: a value, or `None` for a tombstone.
pub(crate) type KeyWrite = (Vec<u8>, Option<Vec<u8>>);

/// One layer of a merged view: entries in the view's direction, `None` values being
/// tombstones.
pub(crate) trait Source: Send {
    fn next_write(&mut self) -> Result<Option<KeyWrite>>;

    /// The next write whose key `keep` accepts (see [`KeyFilter`]); layers that can pass
    /// over rejected entries without copying them override it.
    fn next_write_where(&mut self, keep: &KeyFilter) -> Result<Option<KeyWrite>> {
        loop {
            match self.next_write()? {
                Some((k, _)) if !keep(&k).taken() => continue,
                other => return Ok(other),
            }
        }
    }

    /// The next write that has a value (tombstones are passed over; only keys `keep`
    /// accepts, when given), owned. Layers whose entries are never tombstones override it
    /// to hand their entries straight through.
    fn next_value(&mut self, keep: Option<&KeyFilter>) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let write = match keep {
                Some(keep) => self.next_write_where(keep)?,
                None => self.next_write()?,
            };
            match write {
                None => return Ok(None),
                Some((k, Some(v))) => return Ok(Some((k, v))),
                Some((_, None)) => continue,
            }
        }
    }

    /// Hands the entry [`Source::next_value`] would return to `visit`; `false` at the end.
    /// Layers that can lend their entries in place override it (see
    /// [`crate::engine::EngineIter::lend_next`]).
    fn lend_next(
        &mut self,
        keep: Option<&KeyFilter>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool> {
        Ok(self.next_value(keep)?.map(|(k, v)| visit(&k, &v)).is_some())
    }

    /// Repositions the layer (see [`crate::engine::EngineIter::seek`]); `target` is a user
    /// key.
    fn seek(&mut self, target: &[u8]) -> Result<()>;
}

/// Committed entries: never tombstones.
pub(crate) struct Committed(pub Box<dyn EngineIter>);

impl Source for Committed {
    fn next_write(&mut self) -> Result<Option<KeyWrite>> {
        Ok(self.0.next_entry()?.map(|(k, v)| (k, Some(v))))
    }

    fn next_write_where(&mut self, keep: &KeyFilter) -> Result<Option<KeyWrite>> {
        Ok(self.0.next_entry_where(keep)?.map(|(k, v)| (k, Some(v))))
    }

    fn next_value(&mut self, keep: Option<&KeyFilter>) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        // Committed data has no tombstones: entries pass straight through, copied once.
        match keep {
            Some(keep) => self.0.next_entry_where(keep),
            None => self.0.next_entry(),
        }
    }

    fn lend_next(
        &mut self,
        keep: Option<&KeyFilter>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool> {
        // Committed data has no tombstones: every entry is lent as the engine holds it.
        self.0.lend_next(keep, visit)
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.0.seek(target)
    }
}

/// Buffered writes from a snapshot of the write buffer.
pub(crate) struct Buffered(pub OrdCursor<Write>);

impl Source for Buffered {
    fn next_write(&mut self) -> Result<Option<KeyWrite>> {
        self.next_write_where(&|_| crate::engine::Verdict::Take)
    }

    fn next_write_where(&mut self, keep: &KeyFilter) -> Result<Option<KeyWrite>> {
        Ok(self
            .0
            .next_entry_where(keep)
            .map(|(k, w): (Arc<[u8]>, Write)| (k.to_vec(), w.map(|v| v.to_vec()))))
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.0.seek(target);
        Ok(())
    }
}

/// Spilled writes of one transaction and family, decoded from the spill family (see
/// [`super::spill`]).
pub(crate) struct Spilled {
    pub iter: Box<dyn EngineIter>,
    pub txn: u64,
    pub family: crate::engine::Family,
}

impl Source for Spilled {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.iter
            .seek(&super::spill::spill_key(self.txn, self.family, target))
    }

    fn next_write(&mut self) -> Result<Option<KeyWrite>> {
        match self.iter.next_entry()? {
            None => Ok(None),
            Some((k, v)) => {
                let key = super::spill::user_key(&k)?.to_vec();
                let write = super::spill::decode_write(&v)?.map(<[u8]>::to_vec);
                Ok(Some((key, write)))
            }
        }
    }
}

/// A merged view used as one layer of another merge (its entries are never tombstones).
impl Source for MergedIter {
    fn next_write(&mut self) -> Result<Option<KeyWrite>> {
        Ok(self.next_entry()?.map(|(k, v)| (k, Some(v))))
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        MergedIter::seek(self, target)
    }
}

/// Values of an older format in a store being upgraded, shown converted to the store's
/// layout (KIP-258: a plain value gets timestamp -1; KIP-1271: no headers).
struct UpgradedPlain(MergedIter, crate::format::Conversion);

impl Source for UpgradedPlain {
    fn next_write(&mut self) -> Result<Option<KeyWrite>> {
        Ok(self.0.next_entry()?.map(|(k, v)| (k, Some((self.1)(&v)))))
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.0.seek(target)
    }
}

impl MergedIter {
    /// The view of a store in upgrade mode: entries of the store's format win over old
    /// entries of the same key, which appear converted by `convert`.
    pub(crate) fn upgrading(
        current: MergedIter,
        old: MergedIter,
        convert: crate::format::Conversion,
        reverse: bool,
    ) -> Self {
        MergedIter::new(
            vec![Box::new(current), Box::new(UpgradedPlain(old, convert))],
            reverse,
        )
    }
}

struct Layer {
    source: Box<dyn Source>,
    head: Option<KeyWrite>,
    primed: bool,
}

impl Layer {
    fn prime(&mut self, filter: Option<&KeyFilter>) -> Result<()> {
        if !self.primed {
            self.head = match filter {
                Some(keep) => self.source.next_write_where(keep)?,
                None => self.source.next_write()?,
            };
            self.primed = true;
        }
        Ok(())
    }

    fn key(&self) -> Option<&[u8]> {
        self.head.as_ref().map(|(k, _)| k.as_slice())
    }

    fn take(&mut self) -> Option<KeyWrite> {
        self.primed = false;
        self.head.take()
    }
}

/// A merged view of several layers, highest priority first.
pub(crate) struct MergedIter {
    layers: Vec<Layer>,
    reverse: bool,
    /// Only keys it accepts are read (see [`MergedIter::with_filter`]).
    filter: Option<Arc<KeyFilter>>,
}

impl MergedIter {
    /// Merges `sources` (index 0 has the highest priority) in the given direction.
    pub(crate) fn new(sources: Vec<Box<dyn Source>>, reverse: bool) -> Self {
        MergedIter {
            layers: sources
                .into_iter()
                .map(|source| Layer {
                    source,
                    head: None,
                    primed: false,
                })
                .collect(),
            reverse,
            filter: None,
        }
    }

    /// The same view restricted to the keys `keep` accepts (see [`KeyFilter`]): each layer
    /// passes over the rejected ones without copying them, and a rejected key is rejected
    /// in every layer, so filtering the layers equals filtering the merged view.
    pub(crate) fn with_filter(mut self, keep: Arc<KeyFilter>) -> Self {
        for layer in &mut self.layers {
            // A head already read is dropped if rejected: the layer moves on past it.
            if layer.key().is_some_and(|k| !keep(k).taken()) {
                layer.take();
            }
        }
        self.filter = Some(keep);
        self
    }

    /// Repositions every layer: the next entry is the first live key `>= target`
    /// (ascending) or the last `<= target` (descending), on the same pinned state.
    pub(crate) fn seek(&mut self, target: &[u8]) -> Result<()> {
        for layer in &mut self.layers {
            layer.source.seek(target)?;
            layer.head = None;
            layer.primed = false;
        }
        Ok(())
    }

    /// Hands the next live entry of the merged view to `visit`; `false` at the end. With one
    /// layer (the common case, as in [`MergedIter::next_entry`]) the entry is lent by the
    /// engine's cursor without a copy; merges of several layers copy it once.
    pub(crate) fn lend_next(&mut self, visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        let filter = self.filter.as_deref();
        if let [only] = self.layers.as_mut_slice() {
            if !only.primed {
                return only.source.lend_next(filter, visit);
            }
        }
        Ok(self.next_entry()?.map(|(k, v)| visit(&k, &v)).is_some())
    }

    /// The next live entry of the merged view.
    pub(crate) fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let filter = self.filter.as_deref();
        if let [only] = self.layers.as_mut_slice() {
            if !only.primed {
                // One layer (committed reads, or a writer with nothing uncommitted): entries
                // pass straight through, copied once by the engine.
                return only.source.next_value(filter);
            }
        }
        loop {
            for layer in &mut self.layers {
                layer.prime(filter)?;
            }
            // The layer whose head comes first in our direction; ties go to the earlier
            // (higher-priority) layer.
            let mut best: Option<usize> = None;
            for i in 0..self.layers.len() {
                let Some(k) = self.layers[i].key() else {
                    continue;
                };
                let better = match best.and_then(|b| self.layers[b].key()) {
                    None => true,
                    Some(bk) => {
                        if self.reverse {
                            k > bk
                        } else {
                            k < bk
                        }
                    }
                };
                if better {
                    best = Some(i);
                }
            }
            let Some(winner) = best else {
                return Ok(None);
            };
            let Some((key, write)) = self.layers[winner].take() else {
                return Ok(None);
            };
            // Shadowed writes of the same key in lower layers are dropped.
            for layer in self.layers.iter_mut().skip(winner + 1) {
                if layer.key() == Some(key.as_slice()) {
                    layer.take();
                }
            }
            if let Some(v) = write {
                return Ok(Some((key, v)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(std::vec::IntoIter<(Vec<u8>, Option<Vec<u8>>)>);

    impl Source for Fixed {
        fn next_write(&mut self) -> Result<Option<KeyWrite>> {
            Ok(self.0.next())
        }

        fn seek(&mut self, _target: &[u8]) -> Result<()> {
            Err(crate::Error::Internal(
                "fixed test source cannot seek".into(),
            ))
        }
    }

    fn src(entries: &[(&str, Option<&str>)], reverse: bool) -> Box<dyn Source> {
        let mut v: Vec<_> = entries
            .iter()
            .map(|(k, w)| (k.as_bytes().to_vec(), w.map(|s| s.as_bytes().to_vec())))
            .collect();
        if reverse {
            v.reverse();
        }
        Box::new(Fixed(v.into_iter()))
    }

    fn collect(mut m: MergedIter) -> Vec<(String, String)> {
        let mut out = vec![];
        while let Some((k, v)) = m.next_entry().unwrap() {
            out.push((String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()));
        }
        out
    }

    /// Layers over keys 0..200 of a pseudo-random mix of values and tombstones: a buffer
    /// (an `OrdCursor`), a plain source, and committed data in the memory engine.
    fn layers(seed: u64, reverse: bool) -> Vec<Box<dyn Source>> {
        use crate::engine::memory::MemoryEngine;
        use crate::engine::{BatchOp, Engine, KeyRange};
        let mut x = seed;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as u32
        };
        let mut buffer: imbl::OrdMap<Arc<[u8]>, Write> = imbl::OrdMap::new();
        let mut middle = vec![];
        let engine = MemoryEngine::new(&["f"]).unwrap();
        let family = engine.registry().require("f").unwrap();
        let mut committed = vec![];
        for i in 0..200u32 {
            let k = i.to_be_bytes().to_vec();
            let v = format!("v{i}-{}", next() % 10).into_bytes();
            match next() % 4 {
                0 => {
                    buffer.insert(
                        Arc::from(&k[..]),
                        (next() % 3 != 0).then(|| Arc::from(&v[..])),
                    );
                }
                1 => middle.push((k.clone(), (next() % 3 != 0).then(|| v.clone()))),
                _ => {}
            }
            if next() % 2 == 0 {
                committed.push((k, v));
            }
        }
        let ops: Vec<BatchOp<'_>> = committed
            .iter()
            .map(|(k, v)| BatchOp::Put(family, k, v))
            .collect();
        engine.write(&ops, false).unwrap();
        if reverse {
            middle.reverse();
        }
        vec![
            Box::new(Buffered(OrdCursor::new(buffer, KeyRange::all(), reverse))),
            Box::new(Fixed(middle.into_iter())),
            Box::new(Committed(
                engine.iter(family, &KeyRange::all(), reverse).unwrap(),
            )),
        ]
    }

    #[test]
    fn a_filter_on_every_layer_equals_filtering_the_merged_view() {
        use crate::engine::{KeyFilter, Verdict};
        let keep: Arc<KeyFilter> = Arc::new(|k: &[u8]| match k[3] % 5 {
            0 | 1 => Verdict::Skip,
            2 => Verdict::TakeLast,
            _ => Verdict::Take,
        });
        for seed in 0..20 {
            for reverse in [false, true] {
                let mut plain = MergedIter::new(layers(seed, reverse), reverse);
                let mut want = vec![];
                while let Some((k, v)) = plain.next_entry().unwrap() {
                    if keep(&k).taken() {
                        want.push((k, v));
                    }
                }
                let mut filtered =
                    MergedIter::new(layers(seed, reverse), reverse).with_filter(Arc::clone(&keep));
                let mut got = vec![];
                while let Some(e) = filtered.next_entry().unwrap() {
                    got.push(e);
                }
                assert!(!want.is_empty());
                assert_eq!(got, want, "seed {seed} reverse {reverse}");
            }
        }
    }

    #[test]
    fn a_single_layer_of_each_kind_reads_its_values_through_the_filter() {
        use crate::engine::{KeyFilter, Verdict};
        let keep: Arc<KeyFilter> = Arc::new(|k: &[u8]| match k[3] % 3 {
            0 => Verdict::Skip,
            _ => Verdict::Take,
        });
        for seed in 0..5 {
            for reverse in [false, true] {
                // Buffer, plain source, committed engine data: each alone takes the
                // one-layer path (`Source::next_value`, the committed layer's override).
                for kind in 0..3 {
                    let mut model = layers(seed, reverse).swap_remove(kind);
                    let mut want = vec![];
                    while let Some((k, w)) = model.next_write().unwrap() {
                        if let (Some(v), true) = (w, keep(&k).taken()) {
                            want.push((k, v));
                        }
                    }
                    let only = vec![layers(seed, reverse).swap_remove(kind)];
                    let mut view = MergedIter::new(only, reverse).with_filter(Arc::clone(&keep));
                    let mut got = vec![];
                    while let Some(e) = view.next_entry().unwrap() {
                        got.push(e);
                    }
                    let only = vec![layers(seed, reverse).swap_remove(kind)];
                    let mut lent_view =
                        MergedIter::new(only, reverse).with_filter(Arc::clone(&keep));
                    let mut lent = vec![];
                    while lent_view
                        .lend_next(&mut |k, v| lent.push((k.to_vec(), v.to_vec())))
                        .unwrap()
                    {}
                    assert!(!want.is_empty(), "seed {seed} kind {kind}");
                    assert_eq!(got, want, "seed {seed} reverse {reverse} kind {kind}");
                    assert_eq!(lent, want, "seed {seed} reverse {reverse} kind {kind}");
                }
            }
        }
    }

    #[test]
    fn upper_layers_shadow_and_tombstones_hide() {
        for reverse in [false, true] {
            let top = src(
                &[("b", None), ("c", Some("C1")), ("e", Some("E1"))],
                reverse,
            );
            let mid = src(
                &[("a", None), ("c", Some("C2")), ("d", Some("D2"))],
                reverse,
            );
            let bottom = src(
                &[("a", Some("A3")), ("b", Some("B3")), ("f", Some("F3"))],
                reverse,
            );
            let got = collect(MergedIter::new(vec![top, mid, bottom], reverse));
            let mut want: Vec<(String, String)> =
                [("c", "C1"), ("d", "D2"), ("e", "E1"), ("f", "F3")]
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
            if reverse {
                want.reverse();
            }
            assert_eq!(got, want);
        }
    }
}
