//! The transaction layer (KIP-844): an uncommitted write buffer over an engine, merged read
//! views, atomic commit of data with changelog offsets, rollback, spill to disk, and
//! recovery after a crash. One transaction spans any number of the engine's families.
//!
//! # Commit protocol
//! * **Buffered transaction** (the common case): one engine batch holds every buffered
//!   write of every family plus the new [`CommittedState`] record. The batch is the commit
//!   point: a crash leaves either the old commit or the new one.
//! * **Spilled transaction** (the buffer outgrew `max_uncommitted_bytes` and its writes
//!   were moved to the spill family under this transaction's id): the rest of the buffer is
//!   spilled, then a [`PendingCommit`] record naming the transaction is written. That record
//!   is the commit point. The transaction's spilled writes are then applied to their
//!   families in bounded batches, and a final batch writes the `committed` record, deletes
//!   `pending` and clears the spill area. Re-applying is idempotent, so recovery redoes the
//!   roll-forward whenever it finds a `pending` record, and otherwise discards the area.
//!
//! # States
//! `Open` (writes buffer and spill) → a commit either completes (back to `Open`, next
//! transaction) or fails. A failure before the commit point (a spill batch) leaves the
//! transaction `Open` and usable. A failure of the commit write itself leaves the outcome
//! unknown to the engine (RocksDB may have made the batch durable before reporting an error)
//! and the transaction `InDoubt`: the caller gets [`Error::CommitInDoubt`], committed
//! readers keep the previous commit, and the next call on the store retries the same
//! idempotent commit, without a reopen, before doing its own work. A close that cannot
//! finish it reports it, and the next open finishes or discards it. Damage found on the way
//! makes the transaction `Broken`: every call reports it until the store is reopened.
//!
//! # Readers
//! Committed readers never wait for the writer: they read a pinned [`CommittedView`] (an
//! engine snapshot plus the committed state it reflects) that a completed commit, spilled or
//! not, replaces in one pointer swap.

mod buffer;
mod gather;
mod merge;
pub(crate) mod spill;

use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockWriteGuard};

use crate::engine::{BatchOp, Engine, Family, KeyRange, OrdCursor, Snapshot};
use crate::format::meta::{self, CommittedState, PendingCommit, PendingIngest, RangeDelete};
use crate::format::TopicPartition;
use crate::sync::{MutexExt, RwLockExt};
use crate::{Error, Result};

pub(crate) use buffer::Write;
use buffer::WriteBuffer;
use gather::Gathering;
use merge::{Buffered, Committed, Spilled};
pub(crate) use merge::{KeyWrite, MergedIter, Source};

/// One restored record: its family, key, and value (`None` deletes).
pub(crate) type RestoredWrite<'a> = (Family, &'a [u8], Option<&'a [u8]>);

/// Bytes per engine batch when spilling or rolling forward: bounds transient memory.
pub(crate) const CHUNK_BYTES: usize = 4 << 20;

/// Gathered restore batches smaller than this (or than the bound on uncommitted bytes, if
/// lower) go to the engine as a batch: a file ingestion has a fixed cost (a synced intent,
/// a manifest update) that only pays off for larger restores.
const INGEST_MIN_BYTES: u64 = 1 << 20;

/// Largest commit batch (in writes) that an engine whose snapshots make writes copy (the
/// memory engine) applies while committed readers cannot take the current view: a reader
/// asking for it meanwhile waits for this in-memory apply, at most a few milliseconds.
/// Larger batches are written beside a pinned view, and readers never wait.
const IN_PLACE_MAX_OPS: usize = 4096;

/// The view slot, held by a commit that publishes its view in it.
type HeldView<'a> = RwLockWriteGuard<'a, Arc<CommittedView>>;

/// Which writes a read observes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Isolation {
    /// The writer's view: committed data plus this store's uncommitted writes.
    ReadUncommitted,
    /// Committed data only (what interactive queries see by default).
    ReadCommitted,
}

/// What recovery found and did when a store was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Whether the previous session closed the store cleanly.
    pub previous_close_clean: bool,
    /// A spilled commit had reached its commit point and was completed.
    pub rolled_forward: bool,
    /// Uncommitted spilled writes of a transaction that never committed were discarded.
    pub discarded_spill: bool,
    /// Sequence number of the commit the store now reflects (0: never committed).
    pub commit_sequence: u64,
    /// A large restore had recorded its intent to ingest its file; the ingestion and its
    /// commit were completed.
    pub completed_restore: bool,
}

/// Transaction settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TxnConfig {
    pub max_uncommitted_bytes: u64,
    pub sync_on_commit: bool,
    /// Bytes per engine batch when spilling or rolling forward.
    pub chunk_bytes: usize,
}

/// A range `[from, to)` of a data family that a commit deletes after applying its writes:
/// how window and session stores drop expired segments atomically with their offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Deletion {
    pub family: Family,
    pub from: Vec<u8>,
    pub to: Vec<u8>,
}

/// What a store kind adds to a commit besides writes, offsets and metadata.
#[derive(Debug, Clone, Default)]
pub(crate) struct CommitExtras {
    /// The stream time to record (window and session stores); `None` keeps the previous.
    pub stream_time: Option<i64>,
    /// Ranges deleted after the writes, in the same atomic step.
    pub deletes: Vec<Deletion>,
}

/// The last completed commit, as committed readers see it.
pub(crate) struct CommittedView {
    /// The engine pinned at the end of that commit.
    pub snapshot: Arc<dyn Snapshot>,
    /// The offsets and metadata it committed.
    pub state: CommittedState,
}

enum Phase {
    Open,
    /// The commit of `next` reached the engine but its outcome is unknown; it is retried
    /// before anything else happens on the store.
    InDoubt {
        next: CommittedState,
        spilled: bool,
        deletes: Vec<Deletion>,
    },
    Broken(String),
}

struct TxnState {
    phase: Phase,
    /// Restore batches acknowledged but not yet written (see [`TxnCore::restore`]).
    restore: Option<Gathering>,
    /// Buffered writes per family (indexed by family).
    buffers: Vec<WriteBuffer>,
    /// Bytes moved to the spill family by the current transaction.
    spilled_bytes: u64,
    /// Spilled puts minus spilled deletes, for entry estimates.
    spilled_net: i64,
    /// Id of the current transaction: its spill entries carry it.
    txn: u64,
    /// The spill area may hold entries (of this or earlier transactions) to clear.
    area_dirty: bool,
    /// The last completed commit.
    committed: CommittedState,
}

impl TxnState {
    fn buffered_bytes(&self) -> u64 {
        self.buffers.iter().map(WriteBuffer::bytes).sum()
    }

    fn buffered_entries(&self) -> usize {
        self.buffers.iter().map(WriteBuffer::len).sum()
    }

    /// Ends the current transaction: its writes are applied or discarded.
    fn next_transaction(&mut self) {
        for b in &mut self.buffers {
            b.clear();
        }
        self.spilled_bytes = 0;
        self.spilled_net = 0;
        self.txn += 1;
    }
}

/// An engine plus one open transaction over its families.
pub(crate) struct TxnCore {
    engine: Arc<dyn Engine>,
    /// Spills completed since open (for metrics).
    spills: std::sync::atomic::AtomicU64,
    /// Spilled commits rolled forward since open, recovery included (for metrics).
    roll_forwards: std::sync::atomic::AtomicU64,
    /// Restore files ingested since open, recovery included (for metrics).
    ingestions: std::sync::atomic::AtomicU64,
    meta: Family,
    spill: Family,
    config: TxnConfig,
    state: Mutex<TxnState>,
    view: RwLock<Arc<CommittedView>>,
    /// Set while `state.restore` holds gathered batches: readers that do not otherwise take
    /// the writer's lock check it to complete the restore first.
    restore_pending: AtomicBool,
    /// Held by a restore's ingestion from its recorded intent to its commit, and by a
    /// checkpoint while the engine copies: the copy does not hold the staged file, so it
    /// must not catch an intent (see [`crate::store::checkpoint`]).
    ingest_gate: Mutex<()>,
}

impl TxnCore {
    /// Takes over `engine` (which must have kstate's meta and spill families), first
    /// finishing or discarding whatever a crash left behind. Every step is idempotent, so a
    /// kill during recovery is recovered by the next open.
    pub(crate) fn recover(
        engine: Arc<dyn Engine>,
        config: TxnConfig,
    ) -> Result<(TxnCore, RecoveryReport)> {
        let meta = engine.registry().require(crate::engine::names::META)?;
        let spill = engine.registry().require(crate::engine::names::SPILL)?;
        let logs = check_logs(engine.as_ref(), meta)?;
        let mut report = RecoveryReport {
            previous_close_clean: match engine.get(meta, meta::KEY_STATUS)? {
                Some(raw) => meta::decode_status(&raw)?,
                None => true,
            },
            ..RecoveryReport::default()
        };
        if let Some(raw) = engine.get(meta, meta::KEY_INGEST)? {
            complete_ingest(
                engine.as_ref(),
                meta,
                &PendingIngest::decode(&raw)?,
                &config,
            )?;
            report.completed_restore = true;
        }
        // Files staged by a restore that was killed before recording its intent.
        engine.clear_staged()?;
        let pending = engine
            .get(meta, meta::KEY_PENDING)?
            .map(|raw| PendingCommit::decode(&raw))
            .transpose()?;
        let committed = match pending {
            Some(pending) => {
                roll_forward(engine.as_ref(), meta, spill, &pending, &config)?;
                report.rolled_forward = true;
                pending.state
            }
            None => {
                let mut leftovers = engine.iter(spill, &spill::area(), false)?;
                if leftovers.next_entry()?.is_some() {
                    engine.write(&[spill::clear_area(spill)], false)?;
                    report.discarded_spill = true;
                }
                match engine.get(meta, meta::KEY_COMMITTED)? {
                    Some(raw) => CommittedState::decode(&raw)?,
                    None => CommittedState::default(),
                }
            }
        };
        crate::failpoint::hit("recover-before-status");
        let status = meta::encode_status(false);
        let logs = logs.map(|l| meta::encode_logs(&l.live));
        let mut ops = vec![BatchOp::Put(meta, meta::KEY_STATUS, &status)];
        if let Some(logs) = &logs {
            ops.push(BatchOp::Put(meta, meta::KEY_LOGS, logs));
        }
        engine.write(&ops, config.sync_on_commit)?;
        report.commit_sequence = committed.sequence;
        let view = Arc::new(CommittedView {
            snapshot: engine.snapshot()?,
            state: committed.clone(),
        });
        let families = engine.registry().len();
        let core = TxnCore {
            spills: std::sync::atomic::AtomicU64::new(0),
            roll_forwards: std::sync::atomic::AtomicU64::new(u64::from(report.rolled_forward)),
            ingestions: std::sync::atomic::AtomicU64::new(u64::from(report.completed_restore)),
            engine,
            meta,
            spill,
            config,
            state: Mutex::new(TxnState {
                phase: Phase::Open,
                restore: None,
                buffers: (0..families).map(|_| WriteBuffer::default()).collect(),
                spilled_bytes: 0,
                spilled_net: 0,
                txn: 1,
                area_dirty: false,
                committed,
            }),
            view: RwLock::new(view),
            restore_pending: AtomicBool::new(false),
            ingest_gate: Mutex::new(()),
        };
        Ok((core, report))
    }

    /// Spills, spilled commits rolled forward and restore files ingested since open
    /// (recovery included).
    pub(crate) fn counters(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.spills.load(Relaxed),
            self.roll_forwards.load(Relaxed),
            self.ingestions.load(Relaxed),
        )
    }

    /// The engine underneath.
    pub(crate) fn engine(&self) -> &dyn Engine {
        self.engine.as_ref()
    }

    /// Returns once no other call holds the writer's lock (a restore's ingestion runs
    /// under it).
    pub(crate) fn wait_for_writer(&self) {
        drop(self.state.lock_recover());
    }

    /// The transaction settings (a checkpoint recovers its copy with them).
    pub(crate) fn config(&self) -> TxnConfig {
        self.config
    }

    /// Writes a point-in-time copy of the engine into the new directory `dir`, after
    /// writing restore batches already acknowledged (so the copy holds at least the commit
    /// [`TxnCore::committed`] reports now). The writer's lock is not held while the engine
    /// copies: writers and commits go on meanwhile, and the copy may hold a later commit, an
    /// uncommitted spill area or a commit being rolled forward, which recovery of the copy
    /// settles as after a crash. Only a restore's file ingestion waits for the copy (the
    /// copy must not catch it half done).
    pub(crate) fn checkpoint(&self, dir: &std::path::Path) -> Result<()> {
        self.complete_restore()?;
        // A restore waits (before its intent) while the engine copies; writers do not.
        let _gate = self.ingest_gate.lock_recover();
        self.engine.checkpoint(dir)
    }

    /// The last completed commit, pinned: never waits for the writer's I/O (except to
    /// complete gathered restore batches, see [`TxnCore::restore`]).
    pub(crate) fn committed_view(&self) -> Result<Arc<CommittedView>> {
        self.complete_restore()?;
        Ok(Arc::clone(&self.view.read_recover()))
    }

    /// The writer's state, after finishing a commit left in doubt and a gathered restore.
    fn writer(&self) -> Result<MutexGuard<'_, TxnState>> {
        let mut state = self.state.lock_recover();
        self.settle(&mut state)?;
        self.complete_restore_locked(&mut state)?;
        Ok(state)
    }

    /// Retries a commit left in doubt; reports a broken transaction.
    fn settle(&self, state: &mut TxnState) -> Result<()> {
        match &state.phase {
            Phase::Open => Ok(()),
            Phase::Broken(why) => Err(Error::Storage(format!(
                "the store is broken ({why}); reopen it to recover"
            ))),
            Phase::InDoubt {
                next,
                spilled,
                deletes,
            } => {
                let (next, spilled, deletes) = (next.clone(), *spilled, deletes.clone());
                match self.finish_commit(state, &next, spilled, &deletes) {
                    Ok(()) => Ok(()),
                    Err(e) => Err(self.in_doubt(state, next, spilled, deletes, e)),
                }
            }
        }
    }

    /// Records that the commit of `next` is in doubt because of `e`; the error to return.
    fn in_doubt(
        &self,
        state: &mut TxnState,
        next: CommittedState,
        spilled: bool,
        deletes: Vec<Deletion>,
        e: Error,
    ) -> Error {
        if matches!(e, Error::Corruption(_)) {
            state.phase = Phase::Broken(e.to_string());
            return e;
        }
        let cause = match e {
            Error::CommitInDoubt(cause) => cause,
            other => other.to_string(),
        };
        state.phase = Phase::InDoubt {
            next,
            spilled,
            deletes,
        };
        Error::CommitInDoubt(cause)
    }

    fn check_family(&self, family: Family) -> Result<()> {
        if family == self.meta
            || family == self.spill
            || family.index() >= self.engine.registry().len()
        {
            return Err(Error::Internal(format!(
                "family {} is not a data family",
                self.engine.registry().name(family)
            )));
        }
        Ok(())
    }

    /// Reads `key` of `family` under `isolation`.
    pub(crate) fn get(
        &self,
        isolation: Isolation,
        family: Family,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.check_family(family)?;
        match isolation {
            Isolation::ReadCommitted => self.committed_view()?.snapshot.get(family, key),
            Isolation::ReadUncommitted => {
                let state = self.writer()?;
                self.get_uncommitted(&state, family, key)
            }
        }
    }

    fn get_uncommitted(
        &self,
        state: &TxnState,
        family: Family,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        if let Some(write) = state.buffers[family.index()].get(key) {
            return Ok(write.as_ref().map(|v| v.to_vec()));
        }
        if state.spilled_bytes > 0 {
            let k = spill::spill_key(state.txn, family, key);
            if let Some(raw) = self.engine.get(self.spill, &k)? {
                return Ok(spill::decode_write(&raw)?.map(<[u8]>::to_vec));
            }
        }
        self.engine.get(family, key)
    }

    /// Buffers writes to `family` (`None` deletes), spilling if the buffer outgrows its
    /// bound. If spilling fails, the writes stay buffered and the transaction is intact;
    /// only the move to disk failed (it is retried by the next write or the commit).
    pub(crate) fn write_all<'a>(
        &self,
        family: Family,
        writes: impl IntoIterator<Item = (&'a [u8], buffer::Write)>,
    ) -> Result<()> {
        self.buffer_all(family, writes)?
    }

    /// [`TxnCore::write_all`], telling the two failures apart: the outer error means
    /// nothing was buffered (a commit in doubt could not be finished, say); the inner one
    /// that the writes are buffered but spilling them failed.
    pub(crate) fn buffer_all<'a>(
        &self,
        family: Family,
        writes: impl IntoIterator<Item = (&'a [u8], buffer::Write)>,
    ) -> Result<Result<()>> {
        self.check_family(family)?;
        let mut state = self.writer()?;
        let buffer = &mut state.buffers[family.index()];
        for (key, value) in writes {
            buffer.insert_shared(key, value);
        }
        Ok(self.maybe_spill(&mut state))
    }

    /// [`TxnCore::buffer_all`] for writes to several families at once: all of them are
    /// buffered, or (outer error) none.
    pub(crate) fn buffer_each(
        &self,
        writes: &[(Family, &[u8], buffer::Write)],
    ) -> Result<Result<()>> {
        for (family, _, _) in writes {
            self.check_family(*family)?;
        }
        let mut state = self.writer()?;
        for (family, key, value) in writes {
            state.buffers[family.index()].insert_shared(key, value.clone());
        }
        Ok(self.maybe_spill(&mut state))
    }

    /// Buffers `value` for `key` unless the key has a value in the writer's view; returns
    /// the existing value.
    pub(crate) fn put_if_absent(
        &self,
        family: Family,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.check_family(family)?;
        let mut state = self.writer()?;
        let existing = self.get_uncommitted(&state, family, key)?;
        if existing.is_none() {
            state.buffers[family.index()].insert(key, Some(value));
            self.maybe_spill(&mut state)?;
        }
        Ok(existing)
    }

    /// Buffers a delete of `key`; returns the value it had in the writer's view.
    pub(crate) fn delete(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_family(family)?;
        let mut state = self.writer()?;
        let existing = self.get_uncommitted(&state, family, key)?;
        state.buffers[family.index()].insert(key, None);
        self.maybe_spill(&mut state)?;
        Ok(existing)
    }

    fn maybe_spill(&self, state: &mut TxnState) -> Result<()> {
        if state.buffered_bytes() > self.config.max_uncommitted_bytes {
            self.spill(state)?;
        }
        Ok(())
    }

    /// Moves every buffered write to the spill family, in bounded batches. Not synced:
    /// spilled writes matter only once a synced `pending` record follows them in the WAL.
    ///
    /// The buffer is emptied only after every batch succeeded. If one fails, the entries
    /// already spilled duplicate writes still buffered (which win every read and are
    /// spilled again, overwriting them, by the next successful spill), so the transaction
    /// stays exactly as it was.
    fn spill(&self, state: &mut TxnState) -> Result<()> {
        state.area_dirty = true;
        let txn = state.txn;
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut values: Vec<Vec<u8>> = Vec::new();
        let mut size = 0usize;
        let mut total = 0u64;
        let mut net = 0i64;
        for (index, buffer) in state.buffers.iter().enumerate() {
            let family = Family::at(index)?;
            for (key, write) in buffer.iter() {
                let k = spill::spill_key(txn, family, key);
                let v = spill::encode_write(write.as_deref());
                size += k.len() + v.len();
                total += (k.len() + v.len()) as u64;
                net += if write.is_some() { 1 } else { -1 };
                keys.push(k);
                values.push(v);
                if size >= self.config.chunk_bytes {
                    self.write_spill_chunk(&mut keys, &mut values)?;
                    size = 0;
                }
            }
        }
        if !keys.is_empty() {
            self.write_spill_chunk(&mut keys, &mut values)?;
        }
        state.spilled_bytes += total.max(1);
        state.spilled_net += net;
        self.spills
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for b in &mut state.buffers {
            b.clear();
        }
        Ok(())
    }

    fn write_spill_chunk(&self, keys: &mut Vec<Vec<u8>>, values: &mut Vec<Vec<u8>>) -> Result<()> {
        let ops: Vec<BatchOp<'_>> = keys
            .iter()
            .zip(values.iter())
            .map(|(k, v)| BatchOp::Put(self.spill, k, v))
            .collect();
        self.engine.write(&ops, false)?;
        crate::failpoint::hit("spill-chunk");
        keys.clear();
        values.clear();
        Ok(())
    }

    /// A merged, ordered view of `range` of `family` under `isolation`, fixed at the time of
    /// the call.
    pub(crate) fn iter(
        &self,
        isolation: Isolation,
        family: Family,
        range: &KeyRange,
        reverse: bool,
    ) -> Result<MergedIter> {
        self.check_family(family)?;
        let mut sources: Vec<Box<dyn Source>> = Vec::with_capacity(3);
        match isolation {
            Isolation::ReadCommitted => {
                let view = self.committed_view()?;
                sources.push(Box::new(Committed(
                    view.snapshot.iter(family, range, reverse)?,
                )));
            }
            Isolation::ReadUncommitted => {
                let mut state = self.writer()?;
                let buffer = &mut state.buffers[family.index()];
                if !buffer.is_empty() {
                    sources.push(Box::new(Buffered(OrdCursor::new(
                        buffer.snapshot(),
                        range.clone(),
                        reverse,
                    ))));
                }
                if state.spilled_bytes > 0 {
                    let r = spill::family_range(state.txn, family, range);
                    sources.push(Box::new(Spilled {
                        iter: self.engine.iter(self.spill, &r, reverse)?,
                        txn: state.txn,
                        family,
                    }));
                }
                sources.push(Box::new(Committed(
                    self.engine.iter(family, range, reverse)?,
                )));
            }
        }
        Ok(MergedIter::new(sources, reverse))
    }

    /// A merged view of `range` of `family` as of the pinned commit `view` (so that a
    /// reader can combine the data with the committed state of the same commit).
    pub(crate) fn iter_view(
        &self,
        view: &CommittedView,
        family: Family,
        range: &KeyRange,
        reverse: bool,
    ) -> Result<MergedIter> {
        self.check_family(family)?;
        Ok(MergedIter::new(
            vec![Box::new(Committed(
                view.snapshot.iter(family, range, reverse)?,
            ))],
            reverse,
        ))
    }

    /// Writes gathered restore batches (as every operation does first), then flushes and
    /// fully compacts `family`.
    pub(crate) fn compact(&self, family: Family) -> Result<()> {
        self.complete_restore()?;
        self.engine.compact(family)
    }

    /// Approximate bytes of uncommitted writes (buffered plus spilled).
    pub(crate) fn uncommitted_bytes(&self) -> u64 {
        let state = self.state.lock_recover();
        state.buffered_bytes() + state.spilled_bytes
    }

    /// Approximate entry count of `family` under `isolation`: the engine's estimate of the
    /// committed entries, plus, for the writer's view, buffered and spilled puts minus
    /// deletes.
    pub(crate) fn approximate_count(&self, isolation: Isolation, family: Family) -> Result<u64> {
        self.check_family(family)?;
        let committed = self.engine.approximate_count(family)?;
        match isolation {
            Isolation::ReadCommitted => Ok(committed),
            Isolation::ReadUncommitted => {
                let state = self.writer()?;
                let net = state.buffers[family.index()].net_entries() + state.spilled_net;
                Ok((committed as i64).saturating_add(net).max(0) as u64)
            }
        }
    }

    /// The state of the last completed commit.
    ///
    /// # Errors
    /// Completing gathered restore batches failed ([`TxnCore::complete_restore`]).
    pub(crate) fn committed(&self) -> Result<CommittedState> {
        Ok(self.committed_view()?.state.clone())
    }

    /// Commits every uncommitted write together with `offsets` (Kafka's map semantics: an
    /// empty slice clears all offsets, a `None` offset clears that partition) and, when
    /// given, `metadata` (otherwise the previous metadata is kept).
    ///
    /// # Errors
    /// Before the commit point (spilling the rest of the buffer) any error leaves the
    /// transaction open and unchanged. A failed commit write is [`Error::CommitInDoubt`].
    pub(crate) fn commit(
        &self,
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        self.commit_with(offsets, metadata, CommitExtras::default())
    }

    /// [`TxnCore::commit`] plus what a store kind adds: a stream time recorded in the
    /// committed state and ranges deleted after the writes, all in the same atomic step
    /// (for a spilled commit, recorded in its pending record and applied by the final
    /// batch of the roll-forward).
    pub(crate) fn commit_with(
        &self,
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
        extras: CommitExtras,
    ) -> Result<()> {
        for d in &extras.deletes {
            self.check_family(d.family)?;
        }
        let mut state = self.writer()?;
        let mut next = state.committed.clone();
        next.sequence += 1;
        if offsets.is_empty() {
            next.offsets.clear();
        }
        for (tp, offset) in offsets {
            match offset {
                Some(o) => next.offsets.insert(tp.clone(), *o),
                None => next.offsets.remove(tp),
            };
        }
        if let Some(m) = metadata {
            next.metadata = Some(m.to_vec());
        }
        if extras.stream_time.is_some() {
            next.stream_time = extras.stream_time;
        }
        // Validate the records before anything is written.
        next.encode()?;
        let spilled = state.spilled_bytes > 0;
        if spilled {
            // Still before the commit point: a failure leaves the transaction usable.
            self.spill(&mut state)?;
        }
        match self.finish_commit(&mut state, &next, spilled, &extras.deletes) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.in_doubt(&mut state, next, spilled, extras.deletes, e)),
        }
    }

    /// Takes changelog records that are committed upstream already (a restore) and commits
    /// them with `offsets` and `metadata` (as for [`TxnCore::commit`]), bypassing the
    /// transaction: no buffer, no spill, no second write. Writes to one key apply in order
    /// (the last wins).
    ///
    /// Consecutive restore batches of one family are gathered in memory (up to the store's
    /// bound on uncommitted bytes) and reach the engine together, before anything else
    /// happens on the store: any read, write, commit or close first completes the restore
    /// ([`TxnCore::complete_restore`]), so every caller observes each batch as committed
    /// once this returns. A large gathering is written as one sorted file and ingested
    /// (no memtable insert, no flush: about half the CPU of writing it, see
    /// docs/performance.md); a small one, or writes to several families (an upgrade in progress), go
    /// in one engine batch without the write-ahead log, durable at the engine's next flush.
    /// Either way a crash leaves the store at an earlier commit or at a completed one, whose
    /// offset tells the caller where to restore from.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the transaction has uncommitted writes (a restore
    /// would commit them along with the restored records); the store is unchanged. A failed
    /// engine write leaves the outcome unknown: the transaction is then broken and the
    /// store must be reopened (recovery finds each completed restore whole or not at all).
    pub(crate) fn restore(
        &self,
        writes: &[RestoredWrite<'_>],
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        let mut state = self.state.lock_recover();
        self.settle(&mut state)?;
        if state.buffered_entries() > 0 || state.spilled_bytes > 0 {
            return Err(Error::InvalidArgument(
                "the store has uncommitted writes: commit or roll them back before restoring \
                 (a restore commits its records at once)"
                    .into(),
            ));
        }
        for (family, _, _) in writes {
            self.check_family(*family)?;
        }
        let family = writes.first().map(|w| w.0);
        let one_family = family.filter(|f| writes.iter().all(|w| w.0 == *f));
        match one_family {
            Some(family) if self.engine.can_ingest() => {
                if state.restore.as_ref().is_some_and(|r| r.family() != family) {
                    self.complete_restore_locked(&mut state)?;
                }
                let base = state.restore.as_ref().map_or(&state.committed, |r| &r.next);
                let next = next_state(base, offsets, metadata)?;
                let gathered = state.restore.get_or_insert_with(|| Gathering::new(family));
                for (_, key, value) in writes {
                    gathered.push(key, *value);
                }
                gathered.next = next;
                let full = gathered.bytes() >= self.config.max_uncommitted_bytes;
                self.restore_pending.store(true, AtomicOrdering::Release);
                if full {
                    self.complete_restore_locked(&mut state)?;
                }
                Ok(())
            }
            _ => {
                self.complete_restore_locked(&mut state)?;
                let next = next_state(&state.committed, offsets, metadata)?;
                let record = next.encode()?;
                let ops: Vec<BatchOp<'_>> = writes
                    .iter()
                    .map(|&(family, key, value)| match value {
                        Some(v) => BatchOp::Put(family, key, v),
                        None => BatchOp::Delete(family, key),
                    })
                    .collect();
                self.write_restored(&mut state, ops, &record, next)
            }
        }
    }

    /// Commits the restore batches gathered so far, if any (see [`TxnCore::restore`]).
    ///
    /// # Errors
    /// A failed engine write or ingestion breaks the transaction (the store must be
    /// reopened; recovery completes or forgets the restore whole).
    pub(crate) fn complete_restore(&self) -> Result<()> {
        if !self.restore_pending.load(AtomicOrdering::Acquire) {
            return Ok(());
        }
        let mut state = self.state.lock_recover();
        self.settle(&mut state)?;
        self.complete_restore_locked(&mut state)
    }

    fn complete_restore_locked(&self, state: &mut TxnState) -> Result<()> {
        let Some(mut gathered) = state.restore.take() else {
            return Ok(());
        };
        self.restore_pending.store(false, AtomicOrdering::Release);
        let (family, bytes, next) = (
            gathered.family(),
            gathered.bytes(),
            std::mem::take(&mut gathered.next),
        );
        let last = gathered.sorted_last();
        if bytes < self.config.max_uncommitted_bytes.min(INGEST_MIN_BYTES) {
            let record = next.encode()?;
            let ops = last
                .iter()
                .map(|&(key, value)| match value {
                    Some(v) => BatchOp::Put(family, key, v),
                    None => BatchOp::Delete(family, key),
                })
                .collect();
            return self.write_restored(state, ops, &record, next);
        }
        match self.ingest(state, family, &last, &next) {
            Ok(()) => {
                self.ingestions
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.publish_restored(state, None, next)?;
                Ok(())
            }
            Err(e) => {
                // The gathered batches were acknowledged: their loss must be seen, and the
                // committed offset (which recovery trusts) says where to restore them from.
                state.phase = Phase::Broken(format!("completing a restore failed: {e}"));
                Err(e)
            }
        }
    }

    /// The ingestion protocol: stage the sorted file, record the intent durably, ingest,
    /// then commit and forget the intent in one batch ([`PendingIngest`]).
    fn ingest(
        &self,
        state: &TxnState,
        family: Family,
        entries: &[(&[u8], Option<&[u8]>)],
        next: &CommittedState,
    ) -> Result<()> {
        let file = format!("kstate-restore-{}.sst", next.sequence);
        self.engine.stage_file(family, &file, entries)?;
        crate::failpoint::hit("ingest-after-stage");
        let _gate = self.ingest_gate.lock_recover();
        let intent = PendingIngest {
            family: self.engine.registry().name(family).to_string(),
            file: file.clone(),
            state: next.clone(),
        }
        .encode()?;
        self.engine
            .write(&[BatchOp::Put(self.meta, meta::KEY_INGEST, &intent)], true)?;
        crate::failpoint::hit("ingest-after-intent");
        self.engine.ingest_file(family, &file)?;
        crate::failpoint::hit("ingest-after-ingest");
        let record = next.encode()?;
        let mut ops = vec![
            BatchOp::Put(self.meta, meta::KEY_COMMITTED, &record),
            BatchOp::Delete(self.meta, meta::KEY_INGEST),
        ];
        if state.area_dirty {
            ops.push(spill::clear_area(self.spill));
        }
        self.engine.write(&ops, self.config.sync_on_commit)
    }

    /// Writes restored `ops` with `record`, the commit record of `next`, in one engine batch without
    /// the write-ahead log, then publishes `next`.
    fn write_restored<'a>(
        &self,
        state: &mut TxnState,
        mut ops: Vec<BatchOp<'a>>,
        record: &'a [u8],
        next: CommittedState,
    ) -> Result<()> {
        ops.push(BatchOp::Put(self.meta, meta::KEY_COMMITTED, record));
        if state.area_dirty {
            ops.push(spill::clear_area(self.spill));
        }
        let held = match self.write_batch(&ops, true) {
            Ok(held) => held,
            Err(e) => {
                // The batch may or may not be in the engine: nothing this handle believes
                // about the committed state can be trusted until recovery looks at it.
                state.phase = Phase::Broken(format!("a restore batch failed: {e}"));
                return Err(e);
            }
        };
        crate::failpoint::hit("restore-after-write");
        self.publish_restored(state, held, next)
    }

    /// Makes `next`, just written with restored data, the committed state readers see (in
    /// the view slot the write held, if any).
    fn publish_restored(
        &self,
        state: &mut TxnState,
        held: Option<HeldView<'_>>,
        next: CommittedState,
    ) -> Result<()> {
        state.area_dirty = false;
        state.next_transaction();
        state.committed = next.clone();
        self.publish_view(held, next)
    }

    /// Writes the batch of a commit or restore (`unlogged`: without the write-ahead log).
    ///
    /// An engine whose snapshots make writes copy gets a small batch while the view slot
    /// is held, so that no reader can take the current view meanwhile; when nobody holds
    /// that view either, it is never read again and the engine may update in place. The
    /// held slot is returned for the next view.
    fn write_batch(&self, ops: &[BatchOp<'_>], unlogged: bool) -> Result<Option<HeldView<'_>>> {
        let sync = self.config.sync_on_commit;
        if !self.engine.copies_under_snapshots() || ops.len() > IN_PLACE_MAX_OPS {
            if unlogged {
                self.engine.write_unlogged(ops)?;
            } else {
                self.engine.write(ops, sync)?;
            }
            return Ok(None);
        }
        let slot = self.view.write_recover();
        if Arc::strong_count(&slot) == 1 {
            self.engine
                .write_unshared(ops, sync, unlogged, &slot.snapshot)?;
        } else if unlogged {
            self.engine.write_unlogged(ops)?;
        } else {
            self.engine.write(ops, sync)?;
        }
        Ok(Some(slot))
    }

    /// Publishes the view of a completed commit, in the slot a commit held if any.
    fn publish_view(&self, held: Option<HeldView<'_>>, state: CommittedState) -> Result<()> {
        let view = Arc::new(CommittedView {
            snapshot: self.engine.snapshot()?,
            state,
        });
        match held {
            Some(mut slot) => *slot = view,
            None => *self.view.write_recover() = view,
        }
        Ok(())
    }

    /// Writes the commit of `next` (again, if it is in doubt) and completes it. Idempotent.
    fn finish_commit(
        &self,
        state: &mut TxnState,
        next: &CommittedState,
        spilled: bool,
        deletes: &[Deletion],
    ) -> Result<()> {
        let record = next.encode()?;
        let mut held = None;
        if spilled {
            let pending = PendingCommit {
                txn: state.txn,
                families: self.engine.registry().names().to_vec(),
                ranges: deletes
                    .iter()
                    .map(|d| RangeDelete {
                        // Families are registry indexes, which fit a u8 (Family is one).
                        slot: d.family.index() as u8,
                        from: d.from.clone(),
                        to: d.to.clone(),
                    })
                    .collect(),
                state: next.clone(),
            };
            self.engine.write(
                &[BatchOp::Put(
                    self.meta,
                    meta::KEY_PENDING,
                    &pending.encode()?,
                )],
                self.config.sync_on_commit,
            )?;
            crate::failpoint::hit("commit-after-pending");
            roll_forward(
                self.engine.as_ref(),
                self.meta,
                self.spill,
                &pending,
                &self.config,
            )?;
            self.roll_forwards
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        } else {
            let mut ops: Vec<BatchOp<'_>> = Vec::with_capacity(state.buffered_entries() + 2);
            for (index, buffer) in state.buffers.iter().enumerate() {
                let family = Family::at(index)?;
                for (k, w) in buffer.iter() {
                    ops.push(match w {
                        Some(v) => BatchOp::Put(family, k, v),
                        None => BatchOp::Delete(family, k),
                    });
                }
            }
            // After the writes: a write into a range the commit expires is dropped too.
            for d in deletes {
                ops.push(BatchOp::DeleteRange(d.family, &d.from, &d.to));
            }
            ops.push(BatchOp::Put(self.meta, meta::KEY_COMMITTED, &record));
            if state.area_dirty {
                ops.push(spill::clear_area(self.spill));
            }
            held = self.write_batch(&ops, false)?;
        }
        // The commit is durable (as far as the engine's sync setting goes): publish it.
        state.area_dirty = false;
        state.next_transaction();
        state.committed = next.clone();
        state.phase = Phase::Open;
        self.publish_view(held, next.clone())
    }

    /// Discards every uncommitted write. A commit in doubt is finished first (it is no
    /// longer this transaction's to discard).
    ///
    /// # Errors
    /// Only those of finishing a commit in doubt ([`Error::CommitInDoubt`]) or of a broken
    /// transaction: once the writes are discarded the rollback has happened, even if the
    /// spill area could not be cleared yet (see [`TxnCore::discard`]).
    pub(crate) fn rollback(&self) -> Result<()> {
        let mut state = self.writer()?;
        self.discard(&mut state);
        Ok(())
    }

    /// Ends the transaction without its writes. Clearing spilled writes from the spill
    /// area is only housekeeping: the next transaction gets a new id first, so they can
    /// never be applied. If clearing fails (a full disk), the area stays marked and the
    /// next commit or restore clears it in its own batch, or the next open does.
    fn discard(&self, state: &mut TxnState) {
        state.next_transaction();
        if state.area_dirty
            && self
                .engine
                .write(&[spill::clear_area(self.spill)], false)
                .is_ok()
        {
            state.area_dirty = false;
        }
    }

    /// Discards uncommitted writes and records a clean close. A commit in doubt is finished
    /// first; if it cannot be, the error says so, the status stays "unclean" and the next
    /// open completes or discards it.
    ///
    /// Once every commit is complete, what is left is housekeeping whose failure (a disk
    /// that is full or in RocksDB's error state) loses nothing committed, so it is not an
    /// error: every acknowledged commit is in the write-ahead log. Without the clean-close
    /// record, the next open reports the close as unclean; without the flush, it replays
    /// the log. Restore batches written without the log and not flushed yet may then be
    /// lost, exactly as in a kill: the store reopens at an earlier whole commit with its
    /// offset.
    pub(crate) fn close(&self) -> Result<()> {
        let mut state = self.writer()?;
        self.discard(&mut state);
        let _ = self.engine.write(
            &[BatchOp::Put(
                self.meta,
                meta::KEY_STATUS,
                &meta::encode_status(true),
            )],
            self.config.sync_on_commit,
        );
        // A clean close leaves at most a small, synced write-ahead log to replay: the next
        // open is quick (a large flush RocksDB would otherwise leave to recovery happens
        // here, as Kafka's store flushes on close).
        let _ = self.engine.persist_for_close();
        Ok(())
    }
}

/// Checks that no write-ahead log file the store had when it was last opened has gone
/// missing while the engine still needs it, and returns the engine's log files now (to be
/// recorded for the next open).
///
/// RocksDB links the log files it rotates within one session (`track_and_verify_wals`),
/// but not the first file of a session to the files an open replayed without flushing
/// (`avoid_flush_during_recovery`): after kills in a row, a missing file among them
/// would be skipped, and the later files replayed over the hole, with newer offsets over
/// older data. Each open therefore records the files it found (in the same batch as its
/// status, so the record lives in the newest log), and the next open checks them: a
/// recorded file at or above the oldest number the engine still needs, but not on disk,
/// held commits that are lost.
///
/// # Errors
/// [`Error::Corruption`] naming the missing files.
fn check_logs(engine: &dyn Engine, meta: Family) -> Result<Option<crate::engine::Logs>> {
    let Some(logs) = engine.logs()? else {
        return Ok(None);
    };
    if let Some(raw) = engine.get(meta, meta::KEY_LOGS)? {
        let missing: Vec<u64> = meta::decode_logs(&raw)?
            .into_iter()
            .filter(|n| *n >= logs.needed_from && logs.live.binary_search(n).is_err())
            .collect();
        if !missing.is_empty() {
            return Err(Error::Corruption(format!(
                "write-ahead log files {missing:?} are missing: they held commits that are \
                 not in the table files (log files needed from {}, present {:?})",
                logs.needed_from, logs.live
            )));
        }
    }
    Ok(Some(logs))
}

/// The commit that follows `committed` with `offsets` (Kafka's map semantics: an empty slice
/// clears all offsets, a `None` offset clears that partition) and, when given, `metadata`
/// (otherwise the previous metadata is kept); validated, so that nothing is written for a
/// commit whose record cannot be encoded.
fn next_state(
    committed: &CommittedState,
    offsets: &[(TopicPartition, Option<i64>)],
    metadata: Option<&[u8]>,
) -> Result<CommittedState> {
    let mut next = committed.clone();
    next.sequence += 1;
    if offsets.is_empty() {
        next.offsets.clear();
    }
    for (tp, offset) in offsets {
        match offset {
            Some(o) => next.offsets.insert(tp.clone(), *o),
            None => next.offsets.remove(tp),
        };
    }
    if let Some(m) = metadata {
        next.metadata = Some(m.to_vec());
    }
    next.encode()?;
    Ok(next)
}

/// Finishes the ingestion an `intent` record names: ingests its file if it is still staged
/// (if the ingestion happened already, the same entries again leave the same data), then
/// commits its state and forgets the intent. Safe to repeat after a crash at any point.
fn complete_ingest(
    engine: &dyn Engine,
    meta: Family,
    intent: &PendingIngest,
    config: &TxnConfig,
) -> Result<()> {
    let family = engine.registry().find(&intent.family).ok_or_else(|| {
        Error::Corruption(format!(
            "an interrupted restore names family {}, which the store does not have",
            intent.family
        ))
    })?;
    if engine.is_staged(&intent.file)? {
        engine.ingest_file(family, &intent.file)?;
    }
    crate::failpoint::hit("recover-ingest");
    let record = intent.state.encode()?;
    engine.write(
        &[
            BatchOp::Put(meta, meta::KEY_COMMITTED, &record),
            BatchOp::Delete(meta, meta::KEY_INGEST),
        ],
        config.sync_on_commit,
    )
}

/// Applies the spilled writes of the transaction a `pending` record names, then completes
/// the commit. Safe to repeat after a crash or a failure at any point.
fn roll_forward(
    engine: &dyn Engine,
    meta: Family,
    spill: Family,
    pending: &PendingCommit,
    config: &TxnConfig,
) -> Result<()> {
    let slots: Vec<Option<Family>> = pending
        .families
        .iter()
        .map(|name| engine.registry().find(name))
        .collect();
    let mut it = engine.iter(spill, &spill::txn_range(pending.txn), false)?;
    let mut chunk: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut size = 0usize;
    loop {
        let entry = it.next_entry()?;
        let done = entry.is_none();
        if let Some((k, v)) = entry {
            size += k.len() + v.len();
            chunk.push((k, v));
        }
        if size >= config.chunk_bytes || (done && !chunk.is_empty()) {
            let mut ops = Vec::with_capacity(chunk.len());
            for (k, v) in &chunk {
                let (_, slot, key) = spill::parse_key(k)?;
                let family = slots.get(slot).copied().flatten().ok_or_else(|| {
                    Error::Corruption(format!(
                        "a spilled write of the pending commit names family slot {slot}, which \
                         the store does not have"
                    ))
                })?;
                ops.push(match spill::decode_write(v)? {
                    Some(value) => BatchOp::Put(family, key, value),
                    None => BatchOp::Delete(family, key),
                });
            }
            engine.write(&ops, false)?;
            crate::failpoint::hit("roll-forward-chunk");
            chunk.clear();
            size = 0;
        }
        if done {
            break;
        }
    }
    let record = pending.state.encode()?;
    let mut ops = Vec::with_capacity(pending.ranges.len() + 3);
    // The range deletes come after every spilled write was applied (above), so a spilled
    // write into an expired range is deleted too; repeating them is harmless.
    for r in &pending.ranges {
        let family = slots
            .get(usize::from(r.slot))
            .copied()
            .flatten()
            .ok_or_else(|| {
                Error::Corruption(format!(
                    "the pending commit deletes a range of family slot {}, which the store does \
                 not have",
                    r.slot
                ))
            })?;
        ops.push(BatchOp::DeleteRange(family, &r.from, &r.to));
    }
    ops.push(BatchOp::Put(meta, meta::KEY_COMMITTED, &record));
    ops.push(BatchOp::Delete(meta, meta::KEY_PENDING));
    ops.push(spill::clear_area(spill));
    engine.write(&ops, config.sync_on_commit)
}

#[cfg(test)]
mod expiry_fault_tests;
#[cfg(test)]
mod fault_tests;
