//! The transaction layer (KIP-844): an uncommitted write buffer over an engine, merged read
//! views, atomic commit of data with changelog offsets, rollback, spill to disk, and
//! recovery after a crash.
//!
//! # Commit protocol
//! * **Buffered transaction** (the common case): one engine batch holds every buffered
//!   write plus the new [`CommittedState`] record. The engine applies it atomically, so a
//!   crash leaves either the old commit or the new one.
//! * **Spilled transaction** (the buffer outgrew `max_uncommitted_bytes` and its writes
//!   were moved to the spill family): the rest of the buffer is spilled, then a `pending`
//!   record carrying the new committed state is written. That record is the commit point.
//!   The spilled writes are then applied to the data family in bounded batches, and a final
//!   batch writes the `committed` record, deletes `pending` and clears the spill area.
//!   Re-applying spilled writes is idempotent, so recovery simply redoes this roll-forward
//!   whenever it finds a `pending` record; without one, it discards the spill area.
//!
//! Read-committed readers take [`TxnCore::gate`] shared while they open a view; a
//! roll-forward holds it exclusively, so readers never observe half of a spilled commit.

mod buffer;
mod merge;
pub(crate) mod spill;

use std::sync::{Mutex, RwLock};

use crate::engine::{BatchOp, Engine, Family, KeyRange, OrdCursor};
use crate::format::meta::{self, CommittedState};
use crate::format::TopicPartition;
use crate::sync::{MutexExt, RwLockExt};
use crate::{Error, Result};

use buffer::WriteBuffer;
pub(crate) use merge::MergedIter;
use merge::{Buffered, Committed, Source, Spilled};

/// Bytes per engine batch when spilling or rolling forward: bounds transient memory.
const CHUNK_BYTES: usize = 4 << 20;

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
}

/// Transaction settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TxnConfig {
    pub data: Family,
    pub max_uncommitted_bytes: u64,
    pub sync_on_commit: bool,
}

struct TxnState {
    buffer: WriteBuffer,
    /// Bytes moved to the spill family by the current transaction (0: nothing spilled).
    spilled_bytes: u64,
    committed: CommittedState,
    /// Set when a commit failed after its commit point: the store must be reopened so
    /// recovery can finish it.
    broken: Option<String>,
}

/// An engine plus one open transaction on one data family.
pub(crate) struct TxnCore {
    engine: std::sync::Arc<dyn Engine>,
    config: TxnConfig,
    state: Mutex<TxnState>,
    gate: RwLock<()>,
}

impl TxnCore {
    /// Takes over `engine`, first finishing or discarding whatever a crash left behind.
    pub(crate) fn recover(
        engine: std::sync::Arc<dyn Engine>,
        config: TxnConfig,
    ) -> Result<(TxnCore, RecoveryReport)> {
        let mut report = RecoveryReport {
            previous_close_clean: match engine.get(Family::Meta, meta::KEY_STATUS)? {
                Some(raw) => meta::decode_status(&raw)?,
                None => true,
            },
            ..RecoveryReport::default()
        };
        let pending = engine
            .get(Family::Meta, meta::KEY_PENDING)?
            .map(|raw| CommittedState::decode(&raw))
            .transpose()?;
        let committed = match pending {
            Some(pending) => {
                roll_forward(engine.as_ref(), &config, &pending)?;
                report.rolled_forward = true;
                pending
            }
            None => {
                let mut spill =
                    engine.iter(Family::Spill, &spill::spill_range(&KeyRange::all()), false)?;
                if spill.next_entry()?.is_some() {
                    engine.write(&[spill::CLEAR_AREA], false)?;
                    report.discarded_spill = true;
                }
                match engine.get(Family::Meta, meta::KEY_COMMITTED)? {
                    Some(raw) => CommittedState::decode(&raw)?,
                    None => CommittedState::default(),
                }
            }
        };
        engine.write(
            &[BatchOp::Put(
                Family::Meta,
                meta::KEY_STATUS,
                &meta::encode_status(false),
            )],
            config.sync_on_commit,
        )?;
        report.commit_sequence = committed.sequence;
        let core = TxnCore {
            engine,
            config,
            state: Mutex::new(TxnState {
                buffer: WriteBuffer::default(),
                spilled_bytes: 0,
                committed,
                broken: None,
            }),
            gate: RwLock::new(()),
        };
        Ok((core, report))
    }

    /// The engine underneath.
    pub(crate) fn engine(&self) -> &dyn Engine {
        self.engine.as_ref()
    }

    fn live_state(&self) -> Result<std::sync::MutexGuard<'_, TxnState>> {
        let state = self.state.lock_recover();
        if let Some(why) = &state.broken {
            return Err(Error::Storage(format!(
                "a commit failed after its commit point ({why}); reopen the store to finish it"
            )));
        }
        Ok(state)
    }

    /// Reads `key` under `isolation`.
    pub(crate) fn get(&self, isolation: Isolation, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match isolation {
            Isolation::ReadCommitted => {
                let _gate = self.gate.read_recover();
                self.engine.get(self.config.data, key)
            }
            Isolation::ReadUncommitted => {
                let state = self.live_state()?;
                self.get_uncommitted(&state, key)
            }
        }
    }

    fn get_uncommitted(&self, state: &TxnState, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(write) = state.buffer.get(key) {
            return Ok(write.as_ref().map(|v| v.to_vec()));
        }
        if state.spilled_bytes > 0 {
            if let Some(raw) = self.engine.get(Family::Spill, &spill::spill_key(key))? {
                return Ok(spill::decode_write(&raw)?.map(<[u8]>::to_vec));
            }
        }
        self.engine.get(self.config.data, key)
    }

    /// Buffers writes (`None` deletes), spilling if the buffer outgrows its bound.
    pub(crate) fn write_all<'a>(
        &self,
        writes: impl IntoIterator<Item = (&'a [u8], Option<&'a [u8]>)>,
    ) -> Result<()> {
        let mut state = self.live_state()?;
        for (key, value) in writes {
            state.buffer.insert(key, value);
        }
        self.maybe_spill(&mut state)
    }

    /// Buffers `value` for `key` unless the key has a value in the writer's view; returns
    /// the existing value.
    pub(crate) fn put_if_absent(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut state = self.live_state()?;
        let existing = self.get_uncommitted(&state, key)?;
        if existing.is_none() {
            state.buffer.insert(key, Some(value));
            self.maybe_spill(&mut state)?;
        }
        Ok(existing)
    }

    /// Buffers a delete of `key`; returns the value it had in the writer's view.
    pub(crate) fn delete(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut state = self.live_state()?;
        let existing = self.get_uncommitted(&state, key)?;
        state.buffer.insert(key, None);
        self.maybe_spill(&mut state)?;
        Ok(existing)
    }

    fn maybe_spill(&self, state: &mut TxnState) -> Result<()> {
        if state.buffer.bytes() > self.config.max_uncommitted_bytes {
            self.spill(state)?;
        }
        Ok(())
    }

    /// Moves the whole buffer to the spill family, in bounded batches. Not synced: spilled
    /// writes matter only once a synced `pending` record follows them in the WAL.
    fn spill(&self, state: &mut TxnState) -> Result<()> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut values: Vec<Vec<u8>> = Vec::new();
        let mut size = 0usize;
        let mut total = 0u64;
        let flush = |keys: &mut Vec<Vec<u8>>, values: &mut Vec<Vec<u8>>| -> Result<()> {
            let ops: Vec<BatchOp<'_>> = keys
                .iter()
                .zip(values.iter())
                .map(|(k, v)| BatchOp::Put(Family::Spill, k, v))
                .collect();
            self.engine.write(&ops, false)?;
            keys.clear();
            values.clear();
            Ok(())
        };
        for (key, write) in state.buffer.iter() {
            let k = spill::spill_key(key);
            let v = spill::encode_write(write.as_deref());
            size += k.len() + v.len();
            total += (k.len() + v.len()) as u64;
            keys.push(k);
            values.push(v);
            if size >= CHUNK_BYTES {
                flush(&mut keys, &mut values)?;
                size = 0;
            }
        }
        if !keys.is_empty() {
            flush(&mut keys, &mut values)?;
        }
        state.spilled_bytes += total.max(1);
        state.buffer.clear();
        Ok(())
    }

    /// A merged, ordered view of `range` under `isolation`, fixed at the time of the call.
    pub(crate) fn iter(
        &self,
        isolation: Isolation,
        range: &KeyRange,
        reverse: bool,
    ) -> Result<MergedIter> {
        let mut sources: Vec<Box<dyn Source>> = Vec::with_capacity(3);
        match isolation {
            Isolation::ReadCommitted => {
                let _gate = self.gate.read_recover();
                sources.push(Box::new(Committed(self.engine.iter(
                    self.config.data,
                    range,
                    reverse,
                )?)));
            }
            Isolation::ReadUncommitted => {
                let state = self.live_state()?;
                if !state.buffer.is_empty() {
                    sources.push(Box::new(Buffered(OrdCursor::new(
                        state.buffer.snapshot(),
                        range.clone(),
                        reverse,
                    ))));
                }
                if state.spilled_bytes > 0 {
                    let r = spill::spill_range(range);
                    sources.push(Box::new(Spilled(self.engine.iter(
                        Family::Spill,
                        &r,
                        reverse,
                    )?)));
                }
                sources.push(Box::new(Committed(self.engine.iter(
                    self.config.data,
                    range,
                    reverse,
                )?)));
            }
        }
        Ok(MergedIter::new(sources, reverse))
    }

    /// Flushes and fully compacts the committed data.
    pub(crate) fn compact(&self) -> Result<()> {
        self.engine.compact(self.config.data)
    }

    /// Approximate bytes of uncommitted writes (buffered plus spilled).
    pub(crate) fn uncommitted_bytes(&self) -> u64 {
        let state = self.state.lock_recover();
        state.buffer.bytes() + state.spilled_bytes
    }

    /// Approximate entry count under `isolation`.
    pub(crate) fn approximate_count(&self, isolation: Isolation) -> Result<u64> {
        let committed = self.engine.approximate_count(self.config.data)?;
        match isolation {
            Isolation::ReadCommitted => Ok(committed),
            Isolation::ReadUncommitted => {
                let state = self.live_state()?;
                let net = state.buffer.net_entries();
                Ok((committed as i64).saturating_add(net).max(0) as u64)
            }
        }
    }

    /// The state of the last completed commit.
    pub(crate) fn committed(&self) -> CommittedState {
        self.state.lock_recover().committed.clone()
    }

    /// Commits every uncommitted write together with `offsets` (Kafka's map semantics: an
    /// empty slice clears all offsets, a `None` offset clears that partition) and, when
    /// given, `metadata` (otherwise the previous metadata is kept).
    pub(crate) fn commit(
        &self,
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        let mut state = self.live_state()?;
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
        let record = next.encode()?;
        if state.spilled_bytes == 0 {
            let data = self.config.data;
            let mut ops: Vec<BatchOp<'_>> = Vec::with_capacity(state.buffer.len() + 1);
            for (k, w) in state.buffer.iter() {
                ops.push(match w {
                    Some(v) => BatchOp::Put(data, k, v),
                    None => BatchOp::Delete(data, k),
                });
            }
            ops.push(BatchOp::Put(Family::Meta, meta::KEY_COMMITTED, &record));
            self.engine.write(&ops, self.config.sync_on_commit)?;
        } else {
            self.spill(&mut state)?;
            self.engine.write(
                &[BatchOp::Put(Family::Meta, meta::KEY_PENDING, &record)],
                self.config.sync_on_commit,
            )?;
            crate::failpoint::hit("commit-after-pending");
            let _gate = self.gate.write_recover();
            if let Err(e) = roll_forward(self.engine.as_ref(), &self.config, &next) {
                state.broken = Some(e.to_string());
                return Err(e);
            }
            state.spilled_bytes = 0;
        }
        state.buffer.clear();
        state.committed = next;
        Ok(())
    }

    /// Discards every uncommitted write.
    pub(crate) fn rollback(&self) -> Result<()> {
        let mut state = self.live_state()?;
        state.buffer.clear();
        if state.spilled_bytes > 0 {
            self.engine.write(&[spill::CLEAR_AREA], false)?;
            state.spilled_bytes = 0;
        }
        Ok(())
    }

    /// Discards uncommitted writes and records a clean close.
    pub(crate) fn close(&self) -> Result<()> {
        let broken = self.state.lock_recover().broken.is_some();
        if broken {
            // Leave the status "unclean" and the pending record for recovery.
            return Ok(());
        }
        self.rollback()?;
        self.engine.write(
            &[BatchOp::Put(
                Family::Meta,
                meta::KEY_STATUS,
                &meta::encode_status(true),
            )],
            self.config.sync_on_commit,
        )
    }
}

/// Applies the spilled writes of a transaction whose `pending` record is written, then
/// completes the commit. Safe to repeat after a crash at any point.
fn roll_forward(engine: &dyn Engine, config: &TxnConfig, next: &CommittedState) -> Result<()> {
    let mut it = engine.iter(Family::Spill, &spill::spill_range(&KeyRange::all()), false)?;
    let mut chunk: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut size = 0usize;
    loop {
        let entry = it.next_entry()?;
        let done = entry.is_none();
        if let Some((k, v)) = entry {
            size += k.len() + v.len();
            chunk.push((k, v));
        }
        if size >= CHUNK_BYTES || (done && !chunk.is_empty()) {
            let mut ops = Vec::with_capacity(chunk.len());
            for (k, v) in &chunk {
                let key = spill::user_key(k)?;
                ops.push(match spill::decode_write(v)? {
                    Some(value) => BatchOp::Put(config.data, key, value),
                    None => BatchOp::Delete(config.data, key),
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
    let record = next.encode()?;
    engine.write(
        &[
            BatchOp::Put(Family::Meta, meta::KEY_COMMITTED, &record),
            BatchOp::Delete(Family::Meta, meta::KEY_PENDING),
            spill::CLEAR_AREA,
        ],
        config.sync_on_commit,
    )
}
