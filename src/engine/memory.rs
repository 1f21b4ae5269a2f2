//! The in-memory engine: one persistent ordered map per family behind a lock. Batches are
//! applied under the write lock, so readers see all of a batch or none of it, exactly like
//! RocksDB's atomic write batches; cursors and snapshots are O(1) clones of the maps.

use std::sync::{Arc, RwLock};

use imbl::OrdMap;

use super::{BatchOp, Engine, EngineIter, Family, KeyRange, OrdCursor, Registry, Snapshot};
use crate::sync::RwLockExt;
use crate::{Error, Result};

type Map = OrdMap<Arc<[u8]>, Arc<[u8]>>;

/// Committed data held in process memory.
pub(crate) struct MemoryEngine {
    registry: Registry,
    maps: RwLock<Vec<Map>>,
}

impl MemoryEngine {
    /// An empty engine with the families `names`.
    pub(crate) fn new(names: &[&str]) -> Result<Self> {
        let registry = Registry::new(&[], names)?;
        let maps = vec![Map::new(); registry.len()];
        Ok(MemoryEngine {
            registry,
            maps: RwLock::new(maps),
        })
    }
}

fn map_of(maps: &[Map], family: Family) -> Result<&Map> {
    maps.get(family.index())
        .ok_or_else(|| Error::Internal(format!("memory family {} is not open", family.index())))
}

fn cursor(map: Map, range: &KeyRange, reverse: bool) -> Box<dyn EngineIter> {
    Box::new(MemoryIter(OrdCursor::new(map, range.clone(), reverse)))
}

impl Engine for MemoryEngine {
    fn registry(&self) -> &Registry {
        &self.registry
    }

    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let maps = self.maps.read_recover();
        Ok(map_of(&maps, family)?.get(key).map(|v| v.to_vec()))
    }

    fn write(&self, ops: &[BatchOp<'_>], _sync: bool) -> Result<()> {
        // Validate first so that a bad batch changes nothing, as RocksDB's would.
        for op in ops {
            let (BatchOp::Put(f, ..) | BatchOp::Delete(f, _) | BatchOp::DeleteRange(f, ..)) = op;
            if f.index() >= self.registry.len() {
                return Err(Error::Internal(format!(
                    "memory family {} is not open",
                    f.index()
                )));
            }
        }
        let mut maps = self.maps.write_recover();
        for op in ops {
            match *op {
                BatchOp::Put(f, k, v) => {
                    maps[f.index()].insert(Arc::from(k), Arc::from(v));
                }
                BatchOp::Delete(f, k) => {
                    maps[f.index()].remove(k);
                }
                BatchOp::DeleteRange(f, from, to) => {
                    let map = &mut maps[f.index()];
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
        let map = map_of(&self.maps.read_recover(), family)?.clone();
        Ok(cursor(map, range, reverse))
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        Ok(Arc::new(MemorySnapshot(self.maps.read_recover().clone())))
    }

    fn approximate_count(&self, family: Family) -> Result<u64> {
        Ok(map_of(&self.maps.read_recover(), family)?.len() as u64)
    }

    fn compact(&self, _family: Family) -> Result<()> {
        Ok(())
    }
}

/// The maps as they were: cloning each is O(1).
struct MemorySnapshot(Vec<Map>);

impl Snapshot for MemorySnapshot {
    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(map_of(&self.0, family)?.get(key).map(|v| v.to_vec()))
    }

    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>> {
        Ok(cursor(map_of(&self.0, family)?.clone(), range, reverse))
    }
}

struct MemoryIter(OrdCursor<Arc<[u8]>>);

impl EngineIter for MemoryIter {
    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.0.next_entry().map(|(k, v)| (k.to_vec(), v.to_vec())))
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.0.seek(target);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_ranges_and_snapshots() {
        let e = MemoryEngine::new(&["a", "b"]).unwrap();
        let (fa, fb) = (
            e.registry().require("a").unwrap(),
            e.registry().require("b").unwrap(),
        );
        e.write(
            &[
                BatchOp::Put(fa, b"a", b"1"),
                BatchOp::Put(fa, b"b", b"2"),
                BatchOp::Put(fa, b"c", b""),
                BatchOp::Put(fb, b"a", b"m"),
            ],
            false,
        )
        .unwrap();
        let snap = e.snapshot().unwrap();
        let mut it = e.iter(fa, &KeyRange::all(), true).unwrap();
        e.write(&[BatchOp::DeleteRange(fa, b"a", b"c")], false)
            .unwrap();
        let mut seen = vec![];
        while let Some((k, _)) = it.next_entry().unwrap() {
            seen.push(k);
        }
        assert_eq!(seen, vec![b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
        assert_eq!(e.approximate_count(fa).unwrap(), 1);
        assert_eq!(e.get(fa, b"c").unwrap(), Some(vec![]));
        assert_eq!(e.get(fb, b"a").unwrap(), Some(b"m".to_vec()));
        assert_eq!(
            snap.get(fa, b"a").unwrap(),
            Some(b"1".to_vec()),
            "snapshot is pinned"
        );
        assert!(e
            .write(&[BatchOp::Put(Family(9), b"x", b"y")], false)
            .is_err());
    }
}
