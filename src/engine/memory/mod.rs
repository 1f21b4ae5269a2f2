//! The in-memory engine: one B+tree per family ([`tree`]), entries stored inline in the
//! nodes, snapshots in O(1). Batches are applied under the write lock, so readers of the
//! live trees see all of a batch or none of it, exactly like RocksDB's atomic write
//! batches; snapshots and cursors pin an epoch and read their trees without any lock.
//!
//! Nodes are freed by epoch ([`reclaim`]), not by reference counts: with no snapshot alive
//! a batch updates the trees in place; with one, it copies each node it changes once and
//! the copies' originals are freed when the last snapshot that can see them is dropped.

mod iter;
mod packed;
mod reclaim;
mod tree;

use std::sync::{Arc, Mutex, RwLock};

use super::{BatchOp, Engine, EngineIter, Family, KeyRange, Registry, Snapshot};
use crate::sync::{MutexExt, RwLockExt};
use crate::{Error, Result};
use reclaim::Reclaim;
use tree::{NodePtr, Tree, Writer};

/// The trees and their epochs, shared by the engine and every snapshot of it: the last
/// of them to go frees the nodes.
struct Shared {
    /// The live tree of each family (indexed by family).
    live: RwLock<Vec<Tree>>,
    reclaim: Mutex<Reclaim>,
}

// SAFETY: the node addresses in `live` and in the retired queue are only dereferenced
// under the rules of `tree`: live trees under `live`'s lock (shared for readers, exclusive
// for the one writer), retired nodes never (they are only freed, under `reclaim`'s rules).
// The nodes themselves hold plain bytes and addresses, which any thread may read or free.
unsafe impl Send for Shared {}
// SAFETY: as above; every shared access goes through the two locks.
unsafe impl Sync for Shared {}

impl Drop for Shared {
    fn drop(&mut self) {
        // The engine and every snapshot are gone (they hold this `Shared`): nothing can
        // reach a node any more.
        let live = self.live.get_mut().unwrap_or_else(|p| p.into_inner());
        for tree in live.iter_mut() {
            // SAFETY: no reader, writer or snapshot remains (see above).
            unsafe { tree.free_all() };
        }
        let reclaim = self.reclaim.get_mut().unwrap_or_else(|p| p.into_inner());
        free_all(reclaim.drain());
    }
}

/// Frees nodes that [`Reclaim`] found unreachable.
fn free_all(nodes: Vec<NodePtr>) {
    for n in nodes {
        // SAFETY: `Reclaim` hands out a node once, when it left the live tree and no
        // snapshot that could reach it remains; spares are unreachable by definition.
        unsafe { tree::free(n) };
    }
}

/// Committed data held in process memory.
pub(crate) struct MemoryEngine {
    registry: Registry,
    shared: Arc<Shared>,
}

impl MemoryEngine {
    /// An empty engine with the families `names`.
    pub(crate) fn new(names: &[&str]) -> Result<Self> {
        let registry = Registry::new(&[], names)?;
        let trees = vec![Tree::default(); registry.len()];
        Ok(MemoryEngine {
            registry,
            shared: Arc::new(Shared {
                live: RwLock::new(trees),
                reclaim: Mutex::new(Reclaim::default()),
            }),
        })
    }

    fn pin(&self) -> Arc<Pinned> {
        // The read lock keeps the writer out while the roots are copied and the epoch is
        // pinned: the snapshot reaches exactly the nodes live at this instant.
        let live = self.shared.live.read_recover();
        let epoch = self.shared.reclaim.lock_recover().pin();
        Arc::new(Pinned {
            shared: Arc::clone(&self.shared),
            trees: live.clone(),
            epoch,
        })
    }
}

fn tree_of(trees: &[Tree], family: Family) -> Result<&Tree> {
    trees
        .get(family.index())
        .ok_or_else(|| Error::Internal(format!("memory family {} is not open", family.index())))
}

/// Keys and values the engine stores have lengths that fit a `u32` (kstate's limits are
/// far below); the engine refuses others before changing anything.
fn check_len(len: usize) -> Result<()> {
    u32::try_from(len).map(|_| ()).map_err(|_| {
        Error::Internal(format!(
            "{len} bytes exceed the memory engine's entry limit"
        ))
    })
}

impl Engine for MemoryEngine {
    fn registry(&self) -> &Registry {
        &self.registry
    }

    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let live = self.shared.live.read_recover();
        let tree = tree_of(&live, family)?;
        // SAFETY: the read lock keeps the writer out: the live tree's nodes stay valid and
        // unchanged while it is held, which outlives this view.
        let view = unsafe { tree.view() };
        Ok(view.get(key).map(<[u8]>::to_vec))
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
            match op {
                BatchOp::Put(_, k, v) => {
                    check_len(k.len())?;
                    check_len(v.len())?;
                }
                BatchOp::Delete(_, k) => check_len(k.len())?,
                BatchOp::DeleteRange(..) => {}
            }
        }
        let mut live = self.shared.live.write_recover();
        let mut w = {
            let mut reclaim = self.shared.reclaim.lock_recover();
            let (epoch, newest_pin) = reclaim.writer_epochs();
            Writer::new(epoch, newest_pin, reclaim.take_spare())
        };
        {
            for op in ops {
                // SAFETY (all three): the write lock makes this thread the trees' only
                // user; no snapshot can be pinned meanwhile (pinning takes the read
                // lock), so `w` knows every pin.
                match *op {
                    BatchOp::Put(f, k, v) => unsafe { live[f.index()].insert(&mut w, k, v) },
                    BatchOp::Delete(f, k) => {
                        unsafe { live[f.index()].remove(&mut w, k) };
                    }
                    BatchOp::DeleteRange(f, from, to) => {
                        unsafe { live[f.index()].remove_range(&mut w, from, to) };
                    }
                }
            }
        }
        // Retired under the write lock, so in the epoch the writer ran in.
        let excess = self
            .shared
            .reclaim
            .lock_recover()
            .finish_write(w.retired, w.spare);
        drop(live);
        free_all(excess);
        Ok(())
    }

    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>> {
        let pinned = self.pin();
        tree_of(&pinned.trees, family)?;
        Ok(Box::new(iter::MemoryIter::new(
            pinned,
            family,
            range.clone(),
            reverse,
        )))
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        Ok(Arc::new(MemorySnapshot(self.pin())))
    }

    fn approximate_count(&self, family: Family) -> Result<u64> {
        Ok(tree_of(&self.shared.live.read_recover(), family)?.len())
    }

    fn compact(&self, _family: Family) -> Result<()> {
        Ok(())
    }
}

/// The trees as they were when pinned. Dropping the last handle releases the pin.
struct Pinned {
    shared: Arc<Shared>,
    trees: Vec<Tree>,
    epoch: u64,
}

// SAFETY: the roots in `trees` reach only nodes of versions up to `epoch`, which the
// writer never changes (it copies them) and `Reclaim` never frees while the pin is held.
// They are read-only bytes and addresses for as long as this value lives, so any thread
// may read them.
unsafe impl Send for Pinned {}
// SAFETY: as above; readers only read.
unsafe impl Sync for Pinned {}

impl Pinned {
    fn view(&self, family: Family) -> Result<tree::View<'_>> {
        let tree = tree_of(&self.trees, family)?;
        // SAFETY: the pin keeps every node reachable from this root allocated and
        // unchanged for as long as `self` lives.
        Ok(unsafe { tree.view() })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let excess = self.shared.reclaim.lock_recover().unpin(self.epoch);
        free_all(excess);
    }
}

/// The engine as it was; cloning the handle into cursors is O(1).
struct MemorySnapshot(Arc<Pinned>);

impl Snapshot for MemorySnapshot {
    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.0.view(family)?.get(key).map(<[u8]>::to_vec))
    }

    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>> {
        self.0.view(family)?;
        Ok(Box::new(iter::MemoryIter::new(
            Arc::clone(&self.0),
            family,
            range.clone(),
            reverse,
        )))
    }
}

#[cfg(test)]
mod tests;
