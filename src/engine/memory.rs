//! The in-memory engine: one persistent ordered map per family behind a lock. Batches are
//! applied under the write lock, so readers see all of a batch or none of it, exactly like
//! RocksDB's atomic write batches; cursors iterate O(1) snapshots.

use std::sync::Arc;

use imbl::OrdMap;
use once_cell::sync::Lazy;

use super::{BatchOp, Engine, EngineIter, EngineKind, Family, KeyRange, OrdCursor};
use crate::sync::RwLockExt;
use crate::Result;

type Map = OrdMap<Arc<[u8]>, Arc<[u8]>>;

/// Committed data held in process memory.
#[derive(Default)]
pub struct MemoryEngine {
    families: std::sync::RwLock<[Map; 4]>,
}

impl MemoryEngine {
    /// An empty engine.
    pub fn new() -> Self {
        Self::default()
    }

    fn snapshot(&self, family: Family) -> Map {
        self.families.read_recover()[family.index()].clone()
    }
}

static EMPTY: Lazy<Arc<[u8]>> = Lazy::new(|| Arc::from(&[][..]));

fn shared(bytes: &[u8]) -> Arc<[u8]> {
    if bytes.is_empty() {
        EMPTY.clone()
    } else {
        Arc::from(bytes)
    }
}

impl Engine for MemoryEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Memory
    }

    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.families.read_recover()[family.index()]
            .get(key)
            .map(|v| v.to_vec()))
    }

    fn write(&self, ops: &[BatchOp<'_>], _sync: bool) -> Result<()> {
        let mut families = self.families.write_recover();
        for op in ops {
            match *op {
                BatchOp::Put(f, k, v) => {
                    families[f.index()].insert(shared(k), shared(v));
                }
                BatchOp::Delete(f, k) => {
                    families[f.index()].remove(k);
                }
                BatchOp::DeleteRange(f, from, to) => {
                    let map = &mut families[f.index()];
                    let doomed: Vec<Arc<[u8]>> = map
                        .range::<_, [u8]>((
                            std::ops::Bound::Included(from),
                            std::ops::Bound::Excluded(to),
                        ))
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in doomed {
                        map.remove(&k[..]);
                    }
                }
            }
        }
        Ok(())
    }

    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>> {
        Ok(Box::new(MemoryIter(OrdCursor::new(
            self.snapshot(family),
            range.clone(),
            reverse,
        ))))
    }

    fn approximate_count(&self, family: Family) -> Result<u64> {
        Ok(self.families.read_recover()[family.index()].len() as u64)
    }

    fn compact(&self, _family: Family) -> Result<()> {
        Ok(())
    }

    fn family_names(&self) -> Vec<String> {
        Family::ALL
            .iter()
            .map(|f| f.cf_name().to_string())
            .collect()
    }
}

struct MemoryIter(OrdCursor<Arc<[u8]>>);

impl EngineIter for MemoryIter {
    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.0.next_entry().map(|(k, v)| (k.to_vec(), v.to_vec())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_and_ranges() {
        let e = MemoryEngine::new();
        e.write(
            &[
                BatchOp::Put(Family::Plain, b"a", b"1"),
                BatchOp::Put(Family::Plain, b"b", b"2"),
                BatchOp::Put(Family::Plain, b"c", b""),
                BatchOp::Put(Family::Meta, b"a", b"m"),
            ],
            false,
        )
        .unwrap();
        let mut it = e.iter(Family::Plain, &KeyRange::all(), true).unwrap();
        e.write(&[BatchOp::DeleteRange(Family::Plain, b"a", b"c")], false)
            .unwrap();
        let mut seen = vec![];
        while let Some((k, _)) = it.next_entry().unwrap() {
            seen.push(k);
        }
        assert_eq!(seen, vec![b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
        assert_eq!(e.approximate_count(Family::Plain).unwrap(), 1);
        assert_eq!(e.get(Family::Plain, b"c").unwrap(), Some(vec![]));
        assert_eq!(e.get(Family::Meta, b"a").unwrap(), Some(b"m".to_vec()));
    }
}
