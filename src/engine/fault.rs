//! A fault-injecting engine wrapper for tests: it fails chosen writes (by their ordinal
//! number) before they reach the engine underneath, which then behaves exactly as an
//! engine whose write failed without effect. Writes are every path that changes the
//! engine: batches (logged, unlogged, in place), staging a file, ingesting it, clearing
//! staged files. Everything else passes through, including what the engine can do (file
//! ingestion, in-place writes), so the caller takes the same paths as without the wrapper.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{BatchOp, Engine, EngineIter, Family, KeyRange, Registry, Snapshot};
use crate::{Error, Result};

/// Wraps an engine and fails its write batches on demand.
pub(crate) struct FaultyEngine {
    inner: Arc<dyn Engine>,
    writes: AtomicU64,
    fail_at: AtomicU64,
    fail_after: AtomicBool,
    /// The kinds of write refused so far (`write`, `ingest_file`, ...).
    refused: Mutex<BTreeSet<&'static str>>,
}

impl FaultyEngine {
    /// A wrapper that fails nothing yet.
    pub(crate) fn new(inner: Arc<dyn Engine>) -> Arc<FaultyEngine> {
        Arc::new(FaultyEngine {
            inner,
            writes: AtomicU64::new(0),
            fail_at: AtomicU64::new(u64::MAX),
            fail_after: AtomicBool::new(false),
            refused: Mutex::new(BTreeSet::new()),
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

    /// The kinds of write refused since the wrapper was made: sweeps check that every
    /// path was failed at least once.
    pub(crate) fn refused(&self) -> BTreeSet<&'static str> {
        self.refused.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Counts a write of `kind`; an error if it is to fail.
    fn attempt(&self, kind: &'static str) -> Result<()> {
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        let at = self.fail_at.load(Ordering::SeqCst);
        if n == at || (self.fail_after.load(Ordering::SeqCst) && n >= at) {
            if let Ok(mut refused) = self.refused.lock() {
                refused.insert(kind);
            }
            return Err(Error::Storage(
                "injected write fault (No space left on device)".into(),
            ));
        }
        Ok(())
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
        self.attempt("write")?;
        self.inner.write(ops, sync)
    }

    fn write_unlogged(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        self.attempt("write_unlogged")?;
        self.inner.write_unlogged(ops)
    }

    fn copies_under_snapshots(&self) -> bool {
        self.inner.copies_under_snapshots()
    }

    fn write_unshared(
        &self,
        ops: &[BatchOp<'_>],
        sync: bool,
        unlogged: bool,
        unused: &Arc<dyn Snapshot>,
    ) -> Result<()> {
        self.attempt("write_unshared")?;
        self.inner.write_unshared(ops, sync, unlogged, unused)
    }

    fn can_ingest(&self) -> bool {
        self.inner.can_ingest()
    }

    fn can_checkpoint(&self) -> bool {
        self.inner.can_checkpoint()
    }

    fn checkpoint(&self, dir: &std::path::Path) -> Result<()> {
        self.inner.checkpoint(dir)
    }

    fn stage_file(
        &self,
        family: Family,
        name: &str,
        entries: &[(&[u8], Option<&[u8]>)],
    ) -> Result<()> {
        self.attempt("stage_file")?;
        self.inner.stage_file(family, name, entries)
    }

    fn is_staged(&self, name: &str) -> Result<bool> {
        self.inner.is_staged(name)
    }

    fn ingest_file(&self, family: Family, name: &str) -> Result<()> {
        self.attempt("ingest_file")?;
        self.inner.ingest_file(family, name)
    }

    fn clear_staged(&self) -> Result<()> {
        self.attempt("clear_staged")?;
        self.inner.clear_staged()
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

    fn logs(&self) -> Result<Option<super::Logs>> {
        self.inner.logs()
    }
}
