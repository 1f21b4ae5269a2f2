//! Versioned key-value stores (KIP-889): every key keeps its versions over time, each
//! valid over `[valid_from, valid_to)`, with Kafka's `VersionedKeyValueStore` semantics
//! on the transaction layer, so uncommitted versions are the writer's only and a commit
//! makes the latest values, the history and the changelog offsets durable together.
//!
//! # Semantics (Kafka's `RocksDBVersionedStore`)
//! * The history retention is also the grace period: a write older than
//!   `stream_time - history_retention` is refused ([`PUT_RETURN_CODE_NOT_PUT`]), a read as
//!   of a time older than that sees only the latest version.
//! * `put` returns the `valid_to` of the version it wrote, or
//!   [`PUT_RETURN_CODE_VALID_TO_UNDEFINED`] when it is the newest. A `None` value is a
//!   tombstone: a version without a value.
//! * Kafka forgets a tombstone written at exactly the latest version's timestamp (it
//!   deletes the latest value and records nothing); kstate does the same, so that every
//!   later result equals Kafka's.
//! * Unlike Kafka (4.0 to 4.4), the observed stream time is committed with the data: after
//!   a restart the store refuses the same late writes as before it, and its history stays
//!   readable (Kafka's forgets its segments on reopen).
//!
//! The layouts are in [`crate::format::versioned`].

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::lock::StoreLock;
use super::open::{open_memory_families, open_rocksdb_kind, Opened};
use super::segmented::{SegmentBudget, NO_TIMESTAMP};
use super::StoreOptions;
use crate::engine::{EngineKind, Family, KeyRange};
use crate::format::meta::{StoreKind, ValueFormat};
use crate::format::segmented::segment_id;
use crate::format::versioned::{self as layout, BY_TIME_FAMILY, HISTORY_FAMILY, LATEST_FAMILY};
use crate::format::{self, TopicPartition};
use crate::sync::{MutexExt, RwLockExt};
use crate::txn::{CommitExtras, CommittedView, Deletion, Isolation, RecoveryReport, TxnCore};
use crate::{Error, Result};

/// Kafka's `VersionedKeyValueStore.PUT_RETURN_CODE_VALID_TO_UNDEFINED`: the version put is
/// the newest of its key.
pub const PUT_RETURN_CODE_VALID_TO_UNDEFINED: i64 = -1;
/// Kafka's `VersionedKeyValueStore.PUT_RETURN_CODE_NOT_PUT`: the write was older than the
/// history retention and was dropped.
pub const PUT_RETURN_CODE_NOT_PUT: i64 = i64::MIN;

/// A changelog record of a versioned store: key, value (`None`: a tombstone) and the
/// version's timestamp.
pub type ChangelogRecord<'a> = (&'a [u8], Option<&'a [u8]>, i64);

/// How to open a versioned store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedOptions {
    /// Engine, memory bound, RocksDB tuning (the value format is not used: versions carry
    /// their timestamps in the store's own layout).
    pub store: StoreOptions,
    /// How long older versions stay readable, in ms (>= 0); also the grace period of writes.
    pub history_retention: i64,
    /// The granularity in ms at which expired history is dropped, as Kafka's segment
    /// interval (`None`: Kafka's default for the retention). Fixed when the store is
    /// created; an existing store keeps its own.
    pub segment_interval: Option<i64>,
}

impl VersionedOptions {
    /// Options for a versioned store on RocksDB with `history_retention` ms.
    pub fn new(history_retention: i64) -> Self {
        VersionedOptions {
            store: StoreOptions::plain(EngineKind::RocksDb),
            history_retention,
            segment_interval: None,
        }
    }

    /// Sets the store options (engine, memory bound, ...).
    pub fn with_store(mut self, store: StoreOptions) -> Self {
        self.store = store;
        self
    }

    /// Sets the segment interval of a new store.
    pub fn with_segment_interval(mut self, interval: i64) -> Self {
        self.segment_interval = Some(interval);
        self
    }

    /// Kafka's checks (`Stores.persistentVersionedKeyValueStore`), and the options the
    /// store opens with (plain values: the layout is the store's own).
    fn checked(&self) -> Result<(StoreOptions, i64)> {
        if self.history_retention < 0 {
            return Err(Error::InvalidArgument(
                "history_retention cannot be negative".into(),
            ));
        }
        let interval = match self.segment_interval {
            Some(i) if i < 1 => {
                return Err(Error::InvalidArgument(
                    "segment_interval must be positive".into(),
                ))
            }
            Some(i) => i,
            None => layout::default_segment_interval(self.history_retention),
        };
        let mut store = self.store.clone();
        store.value_format = ValueFormat::Plain;
        Ok((store, interval))
    }
}

/// One version of a key, as Kafka's `VersionedRecord`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedRecord {
    /// The value (a tombstone is never returned).
    pub value: Vec<u8>,
    /// When the version became valid (`valid_from`).
    pub timestamp: i64,
    /// When the next version replaced it; `None` for the latest version.
    pub valid_to: Option<i64>,
}

/// What [`VersionedStore::delete`] did: Kafka's delete answers `null` both for a dropped
/// delete and for a key without a version at the time, but a caller must count the dropped
/// one (Kafka's `dropped-records`) without guessing the store's stream time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionedDelete {
    /// The tombstone was written; the version that was valid at its timestamp before it, if
    /// any (Kafka's return value).
    Deleted(Option<VersionedRecord>),
    /// The delete was older than the history retention allows and was dropped, as a put
    /// answering [`PUT_RETURN_CODE_NOT_PUT`]: nothing was written and the stream time did
    /// not move (counted in `kstate.dropped-records`).
    NotPut,
}

impl VersionedDelete {
    /// Kafka's return value: the version the delete ended, `None` when there was none or
    /// the delete was dropped.
    pub fn into_record(self) -> Option<VersionedRecord> {
        match self {
            VersionedDelete::Deleted(before) => before,
            VersionedDelete::NotPut => None,
        }
    }

    /// True when the delete was dropped as older than the history retention.
    pub fn is_not_put(&self) -> bool {
        matches!(self, VersionedDelete::NotPut)
    }
}

/// The order of a multi-version query's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionOrder {
    /// Oldest first.
    Ascending,
    /// Newest first (Kafka's order for `ResultOrder.ANY`).
    Descending,
}

/// A version of the history as stored.
struct Stored {
    valid_from: i64,
    valid_to: i64,
    value: Option<Vec<u8>>,
}

/// Where a read looks: the writer's view, or one committed view (so that the latest values
/// and the history it reads are of the same commit).
enum Reader<'a> {
    /// The writer's view, at the writer's stream time.
    Writer(&'a TxnCore, i64),
    Committed(&'a TxnCore, Arc<CommittedView>),
}

impl Reader<'_> {
    fn latest(&self, fams: &Families, key: &[u8]) -> Result<Option<(i64, Vec<u8>)>> {
        let raw = match self {
            Reader::Writer(c, _) => c.get(Isolation::ReadUncommitted, fams.latest, key)?,
            Reader::Committed(_, view) => view.snapshot.get(fams.latest, key)?,
        };
        raw.map(|r| layout::decode_latest(&r).map(|(t, v)| (t, v.to_vec())))
            .transpose()
    }

    /// Every stored version of `key` ending after `after`, in `valid_to` order.
    fn history(&self, fams: &Families, key: &[u8], after: i64) -> Result<HistoryIter> {
        let range = KeyRange {
            lower: match after.checked_add(1) {
                Some(t) => Bound::Included(layout::history_key(key, t)),
                None => Bound::Excluded(layout::history_key(key, i64::MAX)),
            },
            upper: Bound::Included(layout::history_key(key, i64::MAX)),
        };
        let iter = match self {
            Reader::Writer(c, _) => {
                c.iter(Isolation::ReadUncommitted, fams.history, &range, false)?
            }
            Reader::Committed(c, view) => c.iter_view(view, fams.history, &range, false)?,
        };
        Ok(HistoryIter(iter))
    }

    /// The version of `key` that ends first after `after`.
    fn first_ending_after(
        &self,
        fams: &Families,
        key: &[u8],
        after: i64,
    ) -> Result<Option<Stored>> {
        self.history(fams, key, after)?.next()
    }

    fn stream_time(&self) -> i64 {
        match self {
            Reader::Writer(_, t) => *t,
            Reader::Committed(_, view) => view.state.stream_time.unwrap_or(NO_TIMESTAMP),
        }
    }
}

struct HistoryIter(crate::txn::MergedIter);

impl HistoryIter {
    fn next(&mut self) -> Result<Option<Stored>> {
        let Some((k, v)) = self.0.next_entry()? else {
            return Ok(None);
        };
        let (_, valid_to) = layout::split_history_key(&k)?;
        let (valid_from, value) = layout::decode_history(&v)?;
        Ok(Some(Stored {
            valid_from,
            valid_to,
            value: value.map(<[u8]>::to_vec),
        }))
    }
}

#[derive(Clone, Copy)]
struct Families {
    latest: Family,
    history: Family,
    by_time: Family,
}

/// The writes of one operation, buffered together (all or none).
struct Writes<'f> {
    fams: &'f Families,
    ops: Vec<(Family, Vec<u8>, crate::txn::Write)>,
}

impl<'f> Writes<'f> {
    fn new(fams: &'f Families) -> Self {
        Writes {
            fams,
            ops: Vec::with_capacity(4),
        }
    }

    fn put_latest(&mut self, key: &[u8], valid_from: i64, value: &[u8]) {
        let v = layout::encode_latest(valid_from, value);
        self.ops
            .push((self.fams.latest, key.to_vec(), Some(v.into())));
    }

    fn delete_latest(&mut self, key: &[u8]) {
        self.ops.push((self.fams.latest, key.to_vec(), None));
    }

    /// Writes the version `[valid_from, valid_to)` (replacing what ended at `valid_to`)
    /// and its expiry index entry.
    fn put_history(&mut self, key: &[u8], valid_to: i64, valid_from: i64, value: Option<&[u8]>) {
        let hk = layout::history_key(key, valid_to);
        let v = layout::encode_history(valid_from, value);
        let ik = layout::index_key(valid_to, &hk);
        self.ops
            .push((self.fams.by_time, ik, Some(Arc::from(&[][..]))));
        self.ops.push((self.fams.history, hk, Some(v.into())));
    }

    /// Buffers the writes in `core` (see [`TxnCore::buffer_each`] for the two errors).
    fn buffer(self, core: &TxnCore) -> Result<Result<()>> {
        if self.ops.is_empty() {
            return Ok(Ok(()));
        }
        let ops: Vec<(Family, &[u8], crate::txn::Write)> = self
            .ops
            .iter()
            .map(|(f, k, v)| (*f, k.as_slice(), v.clone()))
            .collect();
        core.buffer_each(&ops)
    }
}

/// The writer's state; its mutex is taken before the transaction's.
struct WriterState {
    /// Observed stream time including uncommitted writes.
    stream_time: i64,
    /// The time below which the last commit on this handle dropped the history (`None`:
    /// not yet, so the next commit looks from the start).
    swept_below: Option<i64>,
}

struct Live {
    core: TxnCore,
    _lock: Option<StoreLock>,
}

struct Inner {
    core: RwLock<Option<Live>>,
    fams: Families,
    writer: Mutex<WriterState>,
    history_retention: i64,
    segment_interval: i64,
    path: Option<PathBuf>,
    options: StoreOptions,
    recovery: RecoveryReport,
    commits_in_doubt: AtomicU64,
    /// Writes refused as older than the history retention (Kafka's `dropped-records`).
    dropped: AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // As for the other kinds: dropping without close discards uncommitted writes.
        let _ = self.shutdown();
    }
}

/// A transactional versioned key-value store. Cloning gives another handle to the same
/// store.
#[derive(Clone)]
pub struct VersionedStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for VersionedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionedStore")
            .field("path", &self.inner.path)
            .field("history_retention", &self.inner.history_retention)
            .field("segment_interval", &self.inner.segment_interval)
            .field("open", &self.is_open())
            .finish()
    }
}

impl VersionedStore {
    /// Opens (creating if absent) and recovers the store at `path`; for the memory engine
    /// the path only names the store.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for invalid options; [`Error::FormatMismatch`] for a
    /// store of another kind, or a directory holding Kafka Streams' own versioned store;
    /// otherwise as [`crate::KvStore::open`].
    pub fn open(path: impl AsRef<Path>, options: &VersionedOptions) -> Result<Self> {
        let (store, interval) = options.checked()?;
        let path = path.as_ref();
        let kind = StoreKind::Versioned {
            segment_interval: interval,
        };
        let (opened, kind) = match store.engine {
            EngineKind::RocksDb => {
                let budget = SegmentBudget {
                    data_write_buffer: store.rocksdb.write_buffer_bytes,
                    store: store.clone(),
                };
                open_rocksdb_kind(
                    path,
                    &budget,
                    kind,
                    options.history_retention,
                    LATEST_FAMILY,
                    None,
                    &[HISTORY_FAMILY, BY_TIME_FAMILY],
                )?
            }
            EngineKind::Memory => {
                if path.as_os_str().is_empty() {
                    return Err(Error::InvalidArgument("the store path is empty".into()));
                }
                (open_memory(&store, kind)?, kind)
            }
        };
        Self::build(opened, kind, Some(path.to_path_buf()), options, store)
    }

    /// Opens a fresh store on the memory engine.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for invalid options.
    pub fn open_in_memory(options: &VersionedOptions) -> Result<Self> {
        let (mut store, interval) = options.checked()?;
        store.engine = EngineKind::Memory;
        let kind = StoreKind::Versioned {
            segment_interval: interval,
        };
        let opened = open_memory(&store, kind)?;
        Self::build(opened, kind, None, options, store)
    }

    /// A store over an engine a test opened (a fault-injecting one, say).
    #[cfg(test)]
    pub(crate) fn over_engine(opened: Opened, options: &VersionedOptions) -> Result<Self> {
        let (store, interval) = options.checked()?;
        let kind = StoreKind::Versioned {
            segment_interval: interval,
        };
        Self::build(opened, kind, None, options, store)
    }

    fn build(
        opened: Opened,
        kind: StoreKind,
        path: Option<PathBuf>,
        options: &VersionedOptions,
        store: StoreOptions,
    ) -> Result<Self> {
        let StoreKind::Versioned { segment_interval } = kind else {
            return Err(Error::Internal("a versioned store of another kind".into()));
        };
        let registry = opened.engine.registry();
        let fams = Families {
            latest: opened.data,
            history: registry.require(HISTORY_FAMILY)?,
            by_time: registry.require(BY_TIME_FAMILY)?,
        };
        let config = store.txn_config(crate::txn::CHUNK_BYTES)?;
        let (core, recovery) = TxnCore::recover(opened.engine, config)?;
        let stream_time = core.committed()?.stream_time.unwrap_or(NO_TIMESTAMP);
        Ok(VersionedStore {
            inner: Arc::new(Inner {
                core: RwLock::new(Some(Live {
                    core,
                    _lock: opened.lock,
                })),
                fams,
                writer: Mutex::new(WriterState {
                    stream_time,
                    swept_below: None,
                }),
                history_retention: options.history_retention,
                segment_interval,
                path,
                options: store,
                recovery,
                commits_in_doubt: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
            }),
        })
    }

    /// Kafka's `put(key, value, timestamp)`: writes the version of `key` valid from
    /// `timestamp` (`None`: a tombstone) and returns its `valid_to`,
    /// [`PUT_RETURN_CODE_VALID_TO_UNDEFINED`] when it is the newest version, or
    /// [`PUT_RETURN_CODE_NOT_PUT`] when `timestamp` is older than the history retention
    /// allows (nothing is written; counted in `kstate.dropped-records`).
    ///
    /// # Errors
    /// [`Error::KeyTooLarge`], [`Error::ValueTooLarge`], [`Error::StoreClosed`]; spill
    /// errors leave the write buffered.
    pub fn put(&self, key: &[u8], value: Option<&[u8]>, timestamp: i64) -> Result<i64> {
        check_record(key, value)?;
        let written = self
            .inner
            .write(key, value, timestamp, |_| Ok(None::<()>))?;
        Ok(written.map_or(PUT_RETURN_CODE_NOT_PUT, |(valid_to, _)| valid_to))
    }

    /// Kafka's `delete(key, timestamp)`: a tombstone at `timestamp`; returns the version
    /// that was valid at `timestamp` before it ([`VersionedDelete::Deleted`]), or
    /// [`VersionedDelete::NotPut`] when the delete is older than the history retention
    /// allows and was dropped (where Kafka's delete answers `null`).
    ///
    /// # Errors
    /// As [`VersionedStore::put`].
    pub fn delete(&self, key: &[u8], timestamp: i64) -> Result<VersionedDelete> {
        check_record(key, None)?;
        let inner = &self.inner;
        let written = inner.write(key, None, timestamp, |reader| {
            inner.read_as_of(reader, key, timestamp)
        })?;
        Ok(match written {
            Some((_, before)) => VersionedDelete::Deleted(before),
            None => VersionedDelete::NotPut,
        })
    }

    /// Kafka's `get(key)`: the latest version of `key` (no `valid_to`), in the writer's view.
    pub fn get(&self, key: &[u8]) -> Result<Option<VersionedRecord>> {
        self.get_with(Isolation::ReadUncommitted, key, None)
    }

    /// Kafka's `get(key, asOfTimestamp)`: the version valid at `as_of`, in the writer's
    /// view. When `as_of` is older than the history retention, only the latest version is
    /// considered.
    pub fn get_as_of(&self, key: &[u8], as_of: i64) -> Result<Option<VersionedRecord>> {
        self.get_with(Isolation::ReadUncommitted, key, Some(as_of))
    }

    /// [`VersionedStore::get`] (`as_of` `None`) or [`VersionedStore::get_as_of`] under
    /// `isolation` (an interactive query's `VersionedKeyQuery`).
    ///
    /// # Errors
    /// [`Error::KeyTooLarge`], [`Error::StoreClosed`], engine errors.
    pub fn get_with(
        &self,
        isolation: Isolation,
        key: &[u8],
        as_of: Option<i64>,
    ) -> Result<Option<VersionedRecord>> {
        check_record(key, None)?;
        let inner = &self.inner;
        inner.read(isolation, |reader| match as_of {
            None => Ok(inner.fams_latest(reader, key)?),
            Some(t) => inner.read_as_of(reader, key, t),
        })
    }

    /// Kafka's `MultiVersionedKeyQuery`: every version of `key` with a value that was valid
    /// at some time in `[from, to]` (`None`: unbounded), within the history retention (the
    /// latest version always counts), in `order`. Unlike Kafka 4.4, a version is found
    /// wherever its validity ends (Kafka misses versions that end after a later segment).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `from > to` (Kafka's `IllegalArgumentException`);
    /// otherwise as [`VersionedStore::get_with`].
    pub fn versions(
        &self,
        isolation: Isolation,
        key: &[u8],
        from: Option<i64>,
        to: Option<i64>,
        order: VersionOrder,
    ) -> Result<Vec<VersionedRecord>> {
        check_record(key, None)?;
        let (from, to) = (from.unwrap_or(i64::MIN), to.unwrap_or(i64::MAX));
        if from > to {
            return Err(Error::InvalidArgument(format!(
                "the multi-version query's from time {from} is after its to time {to}"
            )));
        }
        let inner = &self.inner;
        let mut out = inner.read(isolation, |reader| {
            let mut out = Vec::new();
            let stream_time = reader.stream_time();
            if to >= inner.cutoff(stream_time) {
                let live_from = inner.live_from(stream_time);
                let mut history =
                    reader.history(&inner.fams, key, from.max(live_from.saturating_sub(1)))?;
                while let Some(v) = history.next()? {
                    if v.valid_from > to {
                        break;
                    }
                    if let Some(value) = v.value {
                        out.push(VersionedRecord {
                            value,
                            timestamp: v.valid_from,
                            valid_to: Some(v.valid_to),
                        });
                    }
                }
            }
            if let Some(latest) = inner.fams_latest(reader, key)? {
                if latest.timestamp <= to {
                    out.push(latest);
                }
            }
            Ok(out)
        })?;
        if order == VersionOrder::Descending {
            out.reverse();
        }
        Ok(out)
    }

    /// Applies changelog records (key, value or `None` for a tombstone, timestamp) as
    /// Kafka's restore does (each as a put, records older than the history retention at
    /// their turn skipped), and commits them with `offsets` and `metadata`, all or none.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the store has uncommitted writes (they would be
    /// committed with the restore); a record's key or value over the limits (nothing is
    /// written); a failed commit as [`VersionedStore::commit`] (the restore is rolled
    /// back unless the commit is in doubt).
    pub fn restore_batch(
        &self,
        records: &[ChangelogRecord<'_>],
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        for (k, v, _) in records {
            check_record(k, *v)?;
        }
        self.inner.restore(records, offsets, metadata)
    }

    /// Commits every uncommitted write with `offsets` (Kafka's map semantics, as
    /// [`crate::KvStore::commit`]), `metadata` and the stream time, dropping the history
    /// that stream time expired, in one atomic step.
    pub fn commit(
        &self,
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        let mut w = self.inner.writer.lock_recover();
        self.inner.commit_locked(&mut w, offsets, metadata)
    }

    /// Discards every uncommitted write (the stream time returns to the committed one).
    pub fn rollback(&self) -> Result<()> {
        let mut w = self.inner.writer.lock_recover();
        self.inner.with_core(|c| {
            c.rollback()?;
            w.stream_time = c.committed()?.stream_time.unwrap_or(NO_TIMESTAMP);
            Ok(())
        })
    }

    /// The changelog offset committed for `tp`.
    pub fn committed_offset(&self, tp: &TopicPartition) -> Result<Option<i64>> {
        self.inner
            .with_core(|c| Ok(c.committed()?.offsets.get(tp).copied()))
    }

    /// Every committed changelog offset.
    pub fn committed_offsets(&self) -> Result<Vec<(TopicPartition, i64)>> {
        self.inner
            .with_core(|c| Ok(c.committed()?.offsets.into_iter().collect()))
    }

    /// The metadata blob of the last commit carrying one.
    pub fn committed_metadata(&self) -> Result<Option<Vec<u8>>> {
        self.inner.with_core(|c| Ok(c.committed()?.metadata))
    }

    /// Writes a checkpoint of the last commit to the new directory `dir` (hard links to
    /// the table files, see [`crate::store::checkpoint`]) without blocking the writer, and
    /// returns what it holds. `dir` opens as a store of the same kind and options, holding
    /// that commit (the last one when this was called, or a later one) and its offsets.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `dir` exists; [`Error::Unsupported`] for a memory
    /// store; [`Error::StoreClosed`]; storage and I/O errors. Nothing is left at `dir` on
    /// error.
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<crate::CheckpointInfo> {
        self.inner
            .with_core(|c| super::checkpoint::take(c, dir.as_ref()))
    }

    /// Number of commits completed on this store over its life.
    pub fn commit_sequence(&self) -> Result<u64> {
        self.inner.with_core(|c| Ok(c.committed()?.sequence))
    }

    /// Kafka's observed stream time under `isolation` (-1 before any write).
    pub fn stream_time(&self, isolation: Isolation) -> Result<i64> {
        let inner = &self.inner;
        inner.read(isolation, |reader| Ok(reader.stream_time()))
    }

    /// The history retention the store was opened with (ms).
    pub fn history_retention(&self) -> i64 {
        self.inner.history_retention
    }

    /// The segment interval of the store (ms), fixed when it was created.
    pub fn segment_interval(&self) -> i64 {
        self.inner.segment_interval
    }

    /// Approximate bytes of uncommitted writes.
    pub fn approximate_num_uncommitted_bytes(&self) -> Result<u64> {
        self.inner.with_core(|c| Ok(c.uncommitted_bytes()))
    }

    /// Approximate number of keys with a latest value under `isolation`.
    pub fn approximate_num_entries(&self, isolation: Isolation) -> Result<u64> {
        let latest = self.inner.fams.latest;
        self.inner
            .with_core(|c| c.approximate_count(isolation, latest))
    }

    /// An engine property or kstate counter, as [`crate::KvStore::property`], plus
    /// `kstate.dropped-records` (writes refused as older than the history retention).
    pub fn property(&self, name: &str) -> Result<Option<u64>> {
        let inner = &self.inner;
        inner.with_core(|c| match name {
            "kstate.dropped-records" => Ok(Some(inner.dropped.load(Ordering::Relaxed))),
            "kstate.commits-in-doubt" => Ok(Some(inner.commits_in_doubt.load(Ordering::Relaxed))),
            "kstate.recovery-rolled-forward" => Ok(Some(u64::from(inner.recovery.rolled_forward))),
            "kstate.spills" => Ok(Some(c.counters().0)),
            "kstate.roll-forwards" => Ok(Some(c.counters().1)),
            "kstate.restore-ingestions" => Ok(Some(c.counters().2)),
            _ => c.engine().property(name),
        })
    }

    /// Flushes and compacts the store's families (reclaims dropped history on disk).
    pub fn compact(&self) -> Result<()> {
        let f = self.inner.fams;
        self.inner.with_core(|c| {
            for family in [f.latest, f.history, f.by_time] {
                c.compact(family)?;
            }
            Ok(())
        })
    }

    /// Closes the store (uncommitted writes discarded). Idempotent.
    pub fn close(&self) -> Result<()> {
        self.inner.shutdown()
    }

    /// Whether the store is open.
    pub fn is_open(&self) -> bool {
        self.inner.core.read_recover().is_some()
    }

    /// What recovery found when the store was opened.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.inner.recovery
    }

    /// The store's path (`None` for [`VersionedStore::open_in_memory`]).
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &StoreOptions {
        &self.inner.options
    }
}

/// A fresh memory engine with the versioned store's families.
fn open_memory(store: &StoreOptions, kind: StoreKind) -> Result<Opened> {
    open_memory_families(
        store,
        kind,
        LATEST_FAMILY,
        None,
        &[HISTORY_FAMILY, BY_TIME_FAMILY],
    )
}

/// Checks a record key and value against the limits of the layout.
fn check_record(key: &[u8], value: Option<&[u8]>) -> Result<()> {
    let max = format::MAX_KEY_BYTES - layout::KEY_OVERHEAD;
    if key.len() > max {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max,
        });
    }
    value.map_or(Ok(()), format::check_value)
}

impl Inner {
    fn with_core<T>(&self, f: impl FnOnce(&TxnCore) -> Result<T>) -> Result<T> {
        let live = self.core.read_recover();
        f(&live.as_ref().ok_or(Error::StoreClosed)?.core)
    }

    /// Runs `f` over the reader of `isolation`.
    fn read<T>(&self, isolation: Isolation, f: impl FnOnce(&Reader<'_>) -> Result<T>) -> Result<T> {
        match isolation {
            Isolation::ReadUncommitted => {
                // The writer's lock first, as writes take it.
                let stream_time = self.writer.lock_recover().stream_time;
                self.with_core(|c| f(&Reader::Writer(c, stream_time)))
            }
            Isolation::ReadCommitted => {
                self.with_core(|c| f(&Reader::Committed(c, c.committed_view()?)))
            }
        }
    }

    /// Kafka's `stream_time - history_retention`: reads as of an earlier time see only the
    /// latest versions, and writes at an earlier time are refused.
    fn cutoff(&self, stream_time: i64) -> i64 {
        stream_time.saturating_sub(self.history_retention)
    }

    /// The start of the lowest segment live at `stream_time`: history ending before it is
    /// dropped (as Kafka drops whole segments), history ending at or after it is kept.
    fn live_from(&self, stream_time: i64) -> i64 {
        let id = segment_id(self.cutoff(stream_time), self.segment_interval);
        id.saturating_mul(self.segment_interval)
    }

    fn fams_latest(&self, reader: &Reader<'_>, key: &[u8]) -> Result<Option<VersionedRecord>> {
        Ok(reader
            .latest(&self.fams, key)?
            .map(|(timestamp, value)| VersionedRecord {
                value,
                timestamp,
                valid_to: None,
            }))
    }

    /// Kafka's `get(key, asOf)` over `reader`.
    fn read_as_of(
        &self,
        reader: &Reader<'_>,
        key: &[u8],
        as_of: i64,
    ) -> Result<Option<VersionedRecord>> {
        if let Some(latest) = self.fams_latest(reader, key)? {
            if latest.timestamp <= as_of {
                return Ok(Some(latest));
            }
        }
        if as_of < self.cutoff(reader.stream_time()) {
            return Ok(None);
        }
        Ok(match reader.first_ending_after(&self.fams, key, as_of)? {
            Some(v) if v.valid_from <= as_of => v.value.map(|value| VersionedRecord {
                value,
                timestamp: v.valid_from,
                valid_to: Some(v.valid_to),
            }),
            _ => None,
        })
    }

    /// A put (`before` reads what a delete returns first, in the writer's view): refused
    /// (`None`) when older than the grace period, otherwise planned, buffered, and the
    /// stream time advanced; then the put's `valid_to` and what `before` read.
    fn write<T>(
        &self,
        key: &[u8],
        value: Option<&[u8]>,
        timestamp: i64,
        before: impl FnOnce(&Reader<'_>) -> Result<Option<T>>,
    ) -> Result<Option<(i64, Option<T>)>> {
        let mut w = self.writer.lock_recover();
        self.with_core(|c| {
            if timestamp < self.cutoff(w.stream_time) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return Ok(None);
            }
            let reader = Reader::Writer(c, w.stream_time);
            let found = before(&reader)?;
            let (valid_to, writes) = self.plan_put(&reader, key, value, timestamp)?;
            let spilled = writes.buffer(c)?;
            // Once buffered, even if spilling failed (the writes stay in the transaction).
            w.stream_time = w.stream_time.max(timestamp);
            spilled.map(|()| Some((valid_to, found)))
        })
    }

    /// The writes of Kafka's `doPut` in kstate's layout, and the put's return value.
    fn plan_put(
        &self,
        reader: &Reader<'_>,
        key: &[u8],
        value: Option<&[u8]>,
        ts: i64,
    ) -> Result<(i64, Writes<'_>)> {
        let mut w = Writes::new(&self.fams);
        let latest = reader.latest(&self.fams, key)?;
        if let Some((latest_from, latest_value)) = &latest {
            if ts >= *latest_from {
                // The newest version: the latest one moves to the history, unless it is
                // replaced at the same time (a tombstone then leaves no trace, as in Kafka).
                if ts > *latest_from {
                    w.put_history(key, ts, *latest_from, Some(latest_value));
                }
                match value {
                    Some(v) => w.put_latest(key, ts, v),
                    None => w.delete_latest(key),
                }
                return Ok((PUT_RETURN_CODE_VALID_TO_UNDEFINED, w));
            }
        }
        let found = reader.first_ending_after(&self.fams, key, ts)?;
        if let Some(v) = &found {
            if v.valid_from == ts {
                // Replaces the version at `ts`; its validity is unchanged.
                w.put_history(key, v.valid_to, ts, value);
                return Ok((v.valid_to, w));
            }
            if v.valid_from < ts {
                // Splits the version valid at `ts`.
                w.put_history(key, ts, v.valid_from, v.value.as_deref());
                w.put_history(key, v.valid_to, ts, value);
                return Ok((v.valid_to, w));
            }
        }
        // No version is valid at `ts`: the new one lasts until the next version begins.
        let next = found.map(|v| v.valid_from).or(latest.map(|(t, _)| t));
        match (next, value) {
            (Some(next), _) => {
                w.put_history(key, next, ts, value);
                Ok((next, w))
            }
            (None, Some(v)) => {
                w.put_latest(key, ts, v);
                Ok((PUT_RETURN_CODE_VALID_TO_UNDEFINED, w))
            }
            (None, None) => {
                // A delete that nothing follows: a zero-length tombstone bounds older
                // out-of-order writes, unless a version already ends at `ts`.
                let ends_here = layout::history_key(key, ts);
                let present = match reader {
                    Reader::Writer(c, _) => {
                        c.get(Isolation::ReadUncommitted, self.fams.history, &ends_here)?
                    }
                    Reader::Committed(_, view) => {
                        view.snapshot.get(self.fams.history, &ends_here)?
                    }
                };
                if present.is_none() {
                    w.put_history(key, ts, ts, None);
                }
                Ok((PUT_RETURN_CODE_VALID_TO_UNDEFINED, w))
            }
        }
    }

    /// Commits under the writer's lock: drops the history the stream time expired (the
    /// versions ending before [`Inner::live_from`], found through the expiry index), then
    /// commits with the stream time and a range deletion of the expired index.
    fn commit_locked(
        &self,
        w: &mut WriterState,
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        let live_from = self.live_from(w.stream_time);
        let result = self.with_core(|c| {
            let mut deletes = Vec::new();
            if w.swept_below.is_none_or(|s| s < live_from) {
                self.sweep(c, w.swept_below, live_from)?;
                deletes.push(Deletion {
                    family: self.fams.by_time,
                    from: Vec::new(),
                    to: layout::index_bound(live_from),
                });
            }
            let extras = CommitExtras {
                stream_time: Some(w.stream_time),
                deletes,
            };
            c.commit_with(offsets, metadata, extras)
        });
        match &result {
            Ok(()) => w.swept_below = Some(live_from.max(w.swept_below.unwrap_or(i64::MIN))),
            Err(Error::CommitInDoubt(_)) => {
                self.commits_in_doubt.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {}
        }
        result
    }

    /// Buffers deletes of the history entries the expiry index names below `below`
    /// (from `from` on, what an earlier commit did not drop yet).
    fn sweep(&self, c: &TxnCore, from: Option<i64>, below: i64) -> Result<()> {
        const CHUNK: usize = 1024;
        let range = KeyRange {
            lower: from.map_or(Bound::Unbounded, |t| {
                Bound::Included(layout::index_bound(t))
            }),
            upper: Bound::Excluded(layout::index_bound(below)),
        };
        let mut iter = c.iter(Isolation::ReadUncommitted, self.fams.by_time, &range, false)?;
        let mut keys: Vec<Vec<u8>> = Vec::new();
        loop {
            let next = iter.next_entry()?;
            let done = next.is_none();
            if let Some((ik, _)) = next {
                keys.push(layout::indexed_history_key(&ik)?.to_vec());
            }
            if keys.len() >= CHUNK || (done && !keys.is_empty()) {
                let ops = keys.iter().map(|k| (k.as_slice(), None));
                c.buffer_all(self.fams.history, ops)??;
                keys.clear();
            }
            if done {
                return Ok(());
            }
        }
    }

    fn restore(
        &self,
        records: &[ChangelogRecord<'_>],
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        let mut w = self.writer.lock_recover();
        let applied = self.with_core(|c| {
            if c.uncommitted_bytes() > 0 {
                return Err(Error::InvalidArgument(
                    "the store has uncommitted writes: commit or roll them back before restoring \
                     (a restore commits its records at once)"
                        .into(),
                ));
            }
            for (key, value, ts) in records {
                // Kafka skips a record older than the grace period at its turn, without
                // counting it as dropped.
                if *ts < self.cutoff(w.stream_time) {
                    continue;
                }
                let reader = Reader::Writer(c, w.stream_time);
                let (_, writes) = self.plan_put(&reader, key, *value, *ts)?;
                w.stream_time = w.stream_time.max(*ts);
                writes.buffer(c)??;
            }
            Ok(())
        });
        let result = applied.and_then(|()| self.commit_locked(&mut w, offsets, metadata));
        match result {
            Err(Error::InvalidArgument(m)) if m.starts_with("the store has uncommitted") => {
                Err(Error::InvalidArgument(m))
            }
            Err(e) if !matches!(e, Error::CommitInDoubt(_)) => {
                // All or none: what was buffered goes, the stream time returns.
                let _ = self.with_core(|c| {
                    c.rollback()?;
                    w.stream_time = c.committed()?.stream_time.unwrap_or(NO_TIMESTAMP);
                    Ok(())
                });
                Err(e)
            }
            other => other,
        }
    }

    fn shutdown(&self) -> Result<()> {
        let mut core = self.core.write_recover();
        match core.take() {
            Some(live) => live.core.close(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(value: &str, timestamp: i64, valid_to: Option<i64>) -> Option<VersionedRecord> {
        Some(VersionedRecord {
            value: value.as_bytes().to_vec(),
            timestamp,
            valid_to,
        })
    }

    fn memory(retention: i64, interval: i64) -> VersionedStore {
        let options = VersionedOptions::new(retention).with_segment_interval(interval);
        VersionedStore::open_in_memory(&options).unwrap()
    }

    /// The sequence Kafka 4.4's RocksDBVersionedStore was observed to answer (history
    /// retention 10 000, segment interval 1 000), with its results.
    #[test]
    fn answers_as_kafka_did_on_the_observed_sequence() {
        let s = memory(10_000, 1_000);
        assert_eq!(s.put(b"k", Some(b"v1"), 5).unwrap(), -1);
        assert_eq!(s.put(b"k", Some(b"v2"), 1010).unwrap(), -1);
        assert_eq!(s.put(b"k", Some(b"v0"), 2).unwrap(), 5);
        assert_eq!(s.put(b"k", Some(b"v2b"), 1010).unwrap(), -1);
        assert_eq!(s.put(b"t", None, 3005).unwrap(), -1);
        assert_eq!(s.put(b"e", Some(b""), 7).unwrap(), -1);
        assert_eq!(
            s.delete(b"k", 4000).unwrap(),
            VersionedDelete::Deleted(rec("v2b", 1010, None))
        );
        assert_eq!(s.put(b"x", Some(b"vx"), 4001).unwrap(), -1);
        assert_eq!(s.get_as_of(b"k", 10).unwrap(), rec("v1", 5, Some(1010)));
        assert_eq!(
            s.get_as_of(b"k", 1010).unwrap(),
            rec("v2b", 1010, Some(4000))
        );
        assert_eq!(s.get_as_of(b"k", 4000).unwrap(), None);
        assert_eq!(s.get_as_of(b"k", 1).unwrap(), None);
        assert_eq!(s.get_as_of(b"k", 2).unwrap(), rec("v0", 2, Some(5)));
        assert_eq!(s.get(b"k").unwrap(), None);
        assert_eq!(s.get(b"e").unwrap(), rec("", 7, None));
        // A second delete at the same time finds the tombstone.
        assert_eq!(
            s.delete(b"k", 4000).unwrap(),
            VersionedDelete::Deleted(None)
        );
        let all = s
            .versions(
                Isolation::ReadUncommitted,
                b"k",
                None,
                None,
                VersionOrder::Ascending,
            )
            .unwrap();
        let times: Vec<_> = all.iter().map(|r| (r.timestamp, r.valid_to)).collect();
        assert_eq!(times, [(2, Some(5)), (5, Some(1010)), (1010, Some(4000))]);
        let some = s
            .versions(
                Isolation::ReadUncommitted,
                b"k",
                Some(0),
                Some(10),
                VersionOrder::Descending,
            )
            .unwrap();
        let times: Vec<_> = some.iter().map(|r| r.timestamp).collect();
        assert_eq!(times, [5, 2]);
        // Nothing is committed yet.
        assert_eq!(
            s.get_with(Isolation::ReadCommitted, b"e", None).unwrap(),
            None
        );
        s.commit(&[], None).unwrap();
        assert_eq!(
            s.get_with(Isolation::ReadCommitted, b"k", Some(10))
                .unwrap(),
            rec("v1", 5, Some(1010))
        );
    }

    #[test]
    fn writes_older_than_the_history_retention_are_dropped_and_reads_see_only_the_latest() {
        let s = memory(100, 50);
        assert_eq!(s.put(b"k", Some(b"a"), 1_000).unwrap(), -1);
        assert_eq!(s.put(b"k", Some(b"b"), 1_100).unwrap(), -1);
        assert_eq!(
            s.put(b"k", Some(b"old"), 999).unwrap(),
            PUT_RETURN_CODE_NOT_PUT
        );
        assert_eq!(s.delete(b"k", 999).unwrap(), VersionedDelete::NotPut);
        assert_eq!(s.property("kstate.dropped-records").unwrap(), Some(2));
        // Exactly stream time - retention is still accepted and readable.
        assert_eq!(
            s.get_as_of(b"k", 1_000).unwrap(),
            rec("a", 1_000, Some(1_100))
        );
        assert_eq!(s.put(b"k", Some(b"c"), 1_200).unwrap(), -1);
        assert_eq!(s.get_as_of(b"k", 1_099).unwrap(), None);
        assert_eq!(
            s.get_as_of(b"k", 1_100).unwrap(),
            rec("b", 1_100, Some(1_200))
        );
        assert_eq!(s.get_as_of(b"k", 5_000).unwrap(), rec("c", 1_200, None));
    }

    #[test]
    fn commit_drops_expired_history_through_the_index_and_reopen_keeps_stream_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v");
        let options = VersionedOptions::new(100).with_segment_interval(10);
        let s = VersionedStore::open(&path, &options).unwrap();
        for t in 0..50 {
            s.put(b"k", Some(format!("v{t}").as_bytes()), t * 10)
                .unwrap();
        }
        s.commit(&[(TopicPartition::new("c", 0), Some(7))], None)
            .unwrap();
        // Stream time 490: history ending before 390 is gone from the index and the data
        // (the versions ending at 390, 400, ..., 490 are left).
        let core = s.inner.core.read_recover();
        let c = &core.as_ref().unwrap().core;
        let count = |family| {
            let mut it = c
                .iter(Isolation::ReadCommitted, family, &KeyRange::all(), false)
                .unwrap();
            let mut n = 0;
            while it.next_entry().unwrap().is_some() {
                n += 1;
            }
            n
        };
        assert_eq!(count(s.inner.fams.history), 11);
        assert_eq!(count(s.inner.fams.by_time), 11);
        drop(core);
        s.close().unwrap();
        let s = VersionedStore::open(&path, &options).unwrap();
        assert_eq!(s.stream_time(Isolation::ReadCommitted).unwrap(), 490);
        assert_eq!(
            s.put(b"k", Some(b"late"), 389).unwrap(),
            PUT_RETURN_CODE_NOT_PUT
        );
        assert_eq!(s.get_as_of(b"k", 395).unwrap(), rec("v39", 390, Some(400)));
        assert_eq!(
            s.committed_offset(&TopicPartition::new("c", 0)).unwrap(),
            Some(7)
        );
    }
}
