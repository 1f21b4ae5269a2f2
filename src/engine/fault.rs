//! A fault-injecting engine wrapper for tests: it fails chosen write batches (by their
//! ordinal number) before they reach the engine underneath, which then behaves exactly as an
//! engine whose write failed without effect. Everything else passes through.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::{BatchOp, Engine, EngineIter, Family, KeyRange, Registry, Snapshot};
use crate::{Error, Result};

/// Wraps an engine and fails its write batches on demand.
pub(crate) struct FaultyEngine {
    inner: Arc<dyn Engine>,
    writes: AtomicU64,
    fail_at: AtomicU64,
    fail_after: AtomicBool,
}

impl FaultyEngine {
    /// A wrapper that fails nothing yet.
    pub(crate) fn new(inner: Arc<dyn Engine>) -> Arc<FaultyEngine> {
        Arc::new(FaultyEngine {
            inner,
            writes: AtomicU64::new(0),
            fail_at: AtomicU64::new(u64::MAX),
            fail_after: AtomicBool::new(false),
        })
    }

    /// Fails the write with ordinal `n` (1-based, counted from now); with `sticky`, every
    /// write from then on fails too, as on a full disk.
    pub(crate) fn fail_write(&self, n: u64, sticky: bool) {
        self.writes.store(0, Ordering::SeqCst);
        self.fail_at.store(n, Ordering::SeqCst);
        self.fail_after.store(sticky, Ordering::SeqCst);
    }

    /// Stops failing writes (the disk has room again).
    pub(crate) fn heal(&self) {
        self.fail_at.store(u64::MAX, Ordering::SeqCst);
        self.fail_after.store(false, Ordering::SeqCst);
    }

    /// Writes attempted since the last [`FaultyEngine::fail_write`].
    pub(crate) fn writes(&self) -> u64 {
        self.writes.load(Ordering::SeqCst)
    }

    /// True once a write was refused and the fault is still armed.
    fn should_fail(&self) -> bool {
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        let at = self.fail_at.load(Ordering::SeqCst);
        n == at || (self.fail_after.load(Ordering::SeqCst) && n >= at)
    }
}

impl Engine for FaultyEngine {
    fn registry(&self) -> &Registry {
        self.inner.registry()
    }

    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(family, key)
    }

    fn write(&self, ops: &[BatchOp<'_>], sync: bool) -> Result<()> {
        if self.should_fail() {
            return Err(Error::Storage(
                "injected write fault (No space left on device)".into(),
            ));
        }
        self.inner.write(ops, sync)
    }

    fn write_unlogged(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        if self.should_fail() {
            return Err(Error::Storage(
                "injected write fault (No space left on device)".into(),
            ));
        }
        self.inner.write_unlogged(ops)
    }

    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>> {
        self.inner.iter(family, range, reverse)
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        self.inner.snapshot()
    }

    fn approximate_count(&self, family: Family) -> Result<u64> {
        self.inner.approximate_count(family)
    }

    fn compact(&self, family: Family) -> Result<()> {
        self.inner.compact(family)
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    fn property(&self, name: &str) -> Result<Option<u64>> {
        self.inner.property(name)
    }
}
