//! The in-memory engine: one B+tree per family ([`tree`]), entries stored inline in the
//! nodes, snapshots in O(1). Batches are applied under the write lock, so readers of the
//! live trees see all of a batch or none of it, exactly like RocksDB's atomic write
//! batches; snapshots and cursors pin an epoch and read their trees without any lock.
//!
//! Nodes are freed by epoch ([`reclaim`]), not by reference counts: with no snapshot alive
//! a batch updates the trees in place; with one, it copies each node it changes once and
//! the copies' originals are freed when the last snapshot that can see them is dropped.
//!
//! Snapshots pin lazily. A snapshot taken after the last write reads the live trees (under
//! the read lock) for as long as no write comes; the next write pins it first, so that it
//! keeps showing its instant, unless its owner declared through
//! [`Engine::write_unshared`] that nobody will read it again. The transaction layer
//! publishes such a snapshot with every commit: when no reader holds the previous commit's
//! view, the next commit updates the trees in place instead of copying what it changes.

mod iter;
mod packed;
mod reclaim;
mod tree;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use super::{BatchOp, Engine, EngineIter, Family, KeyRange, Registry, Snapshot};
use crate::sync::{MutexExt, RwLockExt};
use crate::{Error, Result};
use reclaim::Reclaim;
use tree::{NodePtr, Tree, Writer};

/// The trees and their epochs, shared by the engine and every snapshot of it: the last
/// of them to go frees the nodes.
struct Shared {
    live: RwLock<Live>,
    reclaim: Mutex<Reclaim>,
}

/// The live trees and the snapshots that still read them.
struct Live {
    /// The live tree of each family (indexed by family).
    trees: Vec<Tree>,
    /// Counts writes: a lazy snapshot reads the live trees while this is the one it was
    /// taken at.
    generation: u64,
    /// Snapshots taken since the last write, not pinned: the next write pins those still
    /// alive and not released.
    lazies: Vec<Weak<Lazy>>,
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
        for tree in live.trees.iter_mut() {
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
                live: RwLock::new(Live {
                    trees,
                    generation: 0,
                    lazies: Vec::new(),
                }),
                reclaim: Mutex::new(Reclaim::default()),
            }),
        })
    }

    fn pin(&self) -> Arc<Pinned> {
        pin(&self.shared, &self.shared.live.read_recover())
    }

    fn write_batch(&self, ops: &[BatchOp<'_>], unused: Option<&Arc<dyn Snapshot>>) -> Result<()> {
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
        // Snapshots of the state about to change keep it: pinned now (one pin for all),
        // except the one the caller will not read again.
        let unused = unused.map(|u| Arc::as_ptr(u).cast::<u8>());
        let mut pinned: Option<Arc<Pinned>> = None;
        for lazy in std::mem::take(&mut live.lazies) {
            let Some(lazy) = lazy.upgrade() else { continue };
            if unused == Some(Arc::as_ptr(&lazy).cast::<u8>()) {
                lazy.released.store(true, Ordering::Release);
                continue;
            }
            let pin = pinned.get_or_insert_with(|| pin(&self.shared, &live));
            let _ = lazy.pinned.set(Arc::clone(pin));
        }
        live.generation += 1;
        let mut w = {
            let mut reclaim = self.shared.reclaim.lock_recover();
            let (epoch, newest_pin) = reclaim.writer_epochs();
            Writer::new(epoch, newest_pin, reclaim.take_spare())
        };
        let mut i = 0;
        while let Some(op) = ops.get(i) {
            let trees = &mut live.trees;
            i += 1;
            // SAFETY (all three): the write lock makes this thread the trees' only user;
            // no snapshot can be pinned meanwhile (pinning takes the read lock), so `w`
            // knows every pin; lazy snapshots of the old state were pinned above or are
            // never read again (the caller's word).
            match *op {
                BatchOp::Put(f, k, v) => {
                    // The puts that follow into the same family with ascending keys (a
                    // commit's sorted writes) go in as one run.
                    let mut run = vec![(k, v)];
                    while let Some(BatchOp::Put(g, k2, v2)) = ops.get(i) {
                        if *g != f || run.last().is_some_and(|(last, _)| **k2 <= **last) {
                            break;
                        }
                        run.push((*k2, *v2));
                        i += 1;
                    }
                    unsafe { trees[f.index()].insert_run(&mut w, &run) }
                }
                BatchOp::Delete(f, k) => {
                    unsafe { trees[f.index()].remove(&mut w, k) };
                }
                BatchOp::DeleteRange(f, from, to) => {
                    unsafe { trees[f.index()].remove_range(&mut w, from, to) };
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
}

/// Pins the live trees as they are (the caller holds the live lock, so no writer runs).
fn pin(shared: &Arc<Shared>, live: &Live) -> Arc<Pinned> {
    let epoch = shared.reclaim.lock_recover().pin();
    Arc::new(Pinned {
        shared: Arc::clone(shared),
        trees: live.trees.clone(),
        epoch,
    })
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
        let tree = tree_of(&live.trees, family)?;
        // SAFETY: the read lock keeps the writer out: the live tree's nodes stay valid and
        // unchanged while it is held, which outlives this view.
        let view = unsafe { tree.view() };
        Ok(view.get(key).map(<[u8]>::to_vec))
    }

    fn write(&self, ops: &[BatchOp<'_>], _sync: bool) -> Result<()> {
        self.write_batch(ops, None)
    }

    fn copies_under_snapshots(&self) -> bool {
        true
    }

    fn write_unshared(
        &self,
        ops: &[BatchOp<'_>],
        _sync: bool,
        _unlogged: bool,
        unused: &Arc<dyn Snapshot>,
    ) -> Result<()> {
        self.write_batch(ops, Some(unused))
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
        let mut live = self.shared.live.write_recover();
        let lazy = Arc::new(Lazy {
            shared: Arc::clone(&self.shared),
            generation: live.generation,
            pinned: OnceLock::new(),
            released: AtomicBool::new(false),
        });
        live.lazies.retain(|l| l.strong_count() > 0);
        live.lazies.push(Arc::downgrade(&lazy));
        Ok(lazy)
    }

    fn approximate_count(&self, family: Family) -> Result<u64> {
        Ok(tree_of(&self.shared.live.read_recover().trees, family)?.len())
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
    /// The pinned tree of `family`, if the engine has it.
    fn tree(&self, family: Family) -> Option<&Tree> {
        self.trees.get(family.index())
    }

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

/// The engine as it was at a generation, pinned on demand: by the first cursor made from
/// it, or by the next write, which would otherwise change what it shows.
struct Lazy {
    shared: Arc<Shared>,
    generation: u64,
    pinned: OnceLock<Arc<Pinned>>,
    /// Its owner promised never to read it again (see [`Engine::write_unshared`]).
    released: AtomicBool,
}

impl Lazy {
    fn lost() -> Error {
        Error::Internal("a memory snapshot was read after its owner released it".into())
    }

    /// The pinned trees, pinning them now if no write came since the snapshot was taken.
    fn pinned(&self) -> Result<Arc<Pinned>> {
        if let Some(p) = self.pinned.get() {
            return Ok(Arc::clone(p));
        }
        let live = self.shared.live.read_recover();
        if live.generation == self.generation {
            return Ok(Arc::clone(
                self.pinned.get_or_init(|| pin(&self.shared, &live)),
            ));
        }
        // A write came: it pinned this snapshot first (under the lock now held) unless
        // the snapshot was released.
        self.pinned.get().cloned().ok_or_else(Self::lost)
    }
}

impl Snapshot for Lazy {
    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(p) = self.pinned.get() {
            return Ok(p.view(family)?.get(key).map(<[u8]>::to_vec));
        }
        let live = self.shared.live.read_recover();
        if live.generation == self.generation {
            let tree = tree_of(&live.trees, family)?;
            // SAFETY: the read lock keeps the writer out while the view is used.
            return Ok(unsafe { tree.view() }.get(key).map(<[u8]>::to_vec));
        }
        drop(live);
        let p = self.pinned.get().ok_or_else(Self::lost)?;
        Ok(p.view(family)?.get(key).map(<[u8]>::to_vec))
    }

    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>> {
        let pinned = self.pinned()?;
        pinned.view(family)?;
        Ok(Box::new(iter::MemoryIter::new(
            pinned,
            family,
            range.clone(),
            reverse,
        )))
    }
}

#[cfg(test)]
mod tests;
