//! The timestamped (or plain), transactional key-value store.

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::iter::{KvIter, Registry};
use super::lock::StoreLock;
use super::open::{
    data_family_name, family_format, finish_open, open_memory, open_rocksdb, Opened,
};
use super::swap;
use super::StoreOptions;
use crate::engine::rocksdb::RocksEngine;
use crate::engine::{names, BatchOp, Engine, EngineKind, Family, KeyRange};
use crate::format::meta::ValueFormat;
use crate::format::{
    self, headers, value, TopicPartition, ValueAndTimestamp, ValueTimestampHeaders,
};
use crate::sync::{MutexExt, RwLockExt};
use crate::txn::{Isolation, RecoveryReport, TxnConfig, TxnCore};
use crate::{Error, Result};

/// The open part of a store: its engine (under the transaction layer) with the families it
/// reads, and kstate's lock. Dropped, in this order, when the store closes; replaced whole
/// when an upgrade by swap moves the handle onto a new engine.
struct Live {
    core: TxnCore,
    /// The family holding the store's values.
    data: Family,
    /// In upgrade mode (KIP-258, KIP-1271): the family of values of an older format not yet
    /// migrated, read through their conversion.
    legacy: Option<Legacy>,
    _lock: Option<StoreLock>,
}

/// The family of an older value format in upgrade mode, and how its values are shown in
/// the store's format.
#[derive(Clone, Copy)]
struct Legacy {
    family: Family,
    convert: format::Conversion,
}

impl Live {
    fn new(
        core: TxnCore,
        opened_data: Family,
        legacy: Option<Family>,
        format: ValueFormat,
        lock: Option<StoreLock>,
    ) -> Result<Live> {
        let legacy = match legacy {
            None => None,
            Some(family) => {
                let name = core.engine().registry().name(family).to_string();
                let convert = family_format(&name)
                    .and_then(|old| format::upgrade_conversion(old, format))
                    .ok_or_else(|| {
                        Error::Internal(format!(
                            "no upgrade from column family {name} to {} values",
                            format.name()
                        ))
                    })?;
                Some(Legacy { family, convert })
            }
        };
        Ok(Live {
            core,
            data: opened_data,
            legacy,
            _lock: lock,
        })
    }
}

struct Shared {
    core: RwLock<Option<Live>>,
    /// The last plain key [`KvStore::upgrade_step`] migrated: the next step starts after
    /// it instead of skipping the tombstones of every key migrated before.
    upgraded_up_to: std::sync::Mutex<Option<Vec<u8>>>,
    iterators: Registry,
    path: Option<PathBuf>,
    options: StoreOptions,
    recovery: RecoveryReport,
    /// Commits that returned [`Error::CommitInDoubt`] on this handle's store.
    commits_in_doubt: AtomicU64,
    /// Spill and roll-forward batch size, kept to rebuild the transaction layer when an
    /// upgrade by swap moves the handle onto the new engine.
    chunk_bytes: usize,
    /// While an upgrade by swap prepares its side store: every key written since its
    /// snapshot, carried over before the swap.
    swap_touched: std::sync::Mutex<Option<BTreeSet<Vec<u8>>>>,
    /// True while `swap_touched` collects (one relaxed load per write otherwise).
    swap_active: AtomicBool,
    /// True from the start to the end of an upgrade by swap: a second one (from another
    /// thread, or from the first one's progress callback) is refused, not interleaved.
    swap_running: AtomicBool,
}

impl Shared {
    fn shutdown(&self) -> Result<()> {
        let mut core = self.core.write_recover();
        self.iterators.close_all();
        match core.take() {
            // The engine (and kstate's lock) are released whether or not the close
            // succeeded; a close that could not finish a commit in doubt reports it.
            Some(live) => live.core.close(),
            None => Ok(()),
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Dropping without close discards uncommitted writes, as close does; an error here
        // has nobody to report to and leaves the store for recovery on next open.
        let _ = self.shutdown();
    }
}

/// A key-value store whose writes form a transaction until [`KvStore::commit`].
///
/// Keys are raw bytes ordered bytewise; values are stored timestamped (Kafka's
/// `ValueAndTimestamp` layout) or plain, as chosen when the store was created. All methods
/// take `&self` and the store is `Send + Sync`: writes and `ReadUncommitted` reads are
/// serialised on the transaction; `ReadCommitted` reads run concurrently with them.
/// Cloning gives another handle to the same store; closing any handle closes the store.
///
/// ```
/// use kstate::{KvStore, StoreOptions, EngineKind, TopicPartition, Isolation};
/// # let dir = tempfile::tempdir().unwrap();
/// let store = KvStore::open(dir.path().join("counts"), &StoreOptions::default())?;
/// store.put(b"alice", b"3", 1_700_000_000_000)?;
/// // The writer sees its own uncommitted write; committed readers do not yet.
/// assert_eq!(store.get(b"alice")?.unwrap().value, b"3");
/// assert_eq!(store.get_raw_with(Isolation::ReadCommitted, b"alice")?, None);
/// let tp = TopicPartition::new("app-counts-changelog", 0);
/// store.commit(&[(tp.clone(), Some(41))], None)?;
/// assert_eq!(store.committed_offset(&tp)?, Some(41));
/// store.close()?;
/// # Ok::<(), kstate::Error>(())
/// ```
#[derive(Clone)]
pub struct KvStore {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for KvStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvStore")
            .field("path", &self.shared.path)
            .field("engine", &self.shared.options.engine)
            .field("format", &self.shared.options.value_format)
            .field("open", &self.is_open())
            .finish()
    }
}

impl KvStore {
    /// Opens the store at `path` with `options.engine` (for the memory engine the path
    /// only names the store), creating it when absent, and recovers it: a spilled commit
    /// interrupted by a crash is completed, uncommitted leftovers are discarded.
    ///
    /// # Errors
    /// [`Error::NotAStore`], [`Error::UnsupportedFormat`], [`Error::Corruption`],
    /// [`Error::FormatMismatch`], [`Error::Locked`], [`Error::Storage`], [`Error::Io`].
    pub fn open(path: impl AsRef<Path>, options: &StoreOptions) -> Result<KvStore> {
        let path = path.as_ref();
        let opened = match options.engine {
            EngineKind::RocksDb => open_rocksdb(path, options)?,
            EngineKind::Memory => {
                if path.as_os_str().is_empty() {
                    return Err(Error::InvalidArgument("the store path is empty".into()));
                }
                open_memory(options)?
            }
        };
        Self::with_engine(
            opened,
            Some(path.to_path_buf()),
            options,
            crate::txn::CHUNK_BYTES,
        )
    }

    /// Opens a fresh store on the memory engine.
    pub fn open_in_memory(options: &StoreOptions) -> Result<KvStore> {
        let options = StoreOptions {
            engine: EngineKind::Memory,
            ..options.clone()
        };
        Self::with_engine(
            open_memory(&options)?,
            None,
            &options,
            crate::txn::CHUNK_BYTES,
        )
    }

    /// A store over an opened engine; `chunk_bytes` sizes spill and roll-forward batches.
    pub(crate) fn with_engine(
        opened: Opened,
        path: Option<PathBuf>,
        options: &StoreOptions,
        chunk_bytes: usize,
    ) -> Result<KvStore> {
        let config = options.txn_config(chunk_bytes)?;
        let (core, recovery) = TxnCore::recover(opened.engine, config)?;
        let live = Live::new(
            core,
            opened.data,
            opened.legacy,
            options.value_format,
            opened.lock,
        )?;
        Ok(KvStore {
            shared: Arc::new(Shared {
                core: RwLock::new(Some(live)),
                upgraded_up_to: std::sync::Mutex::new(None),
                iterators: Registry::default(),
                path,
                options: options.clone(),
                recovery,
                commits_in_doubt: AtomicU64::new(0),
                chunk_bytes,
                swap_touched: std::sync::Mutex::new(None),
                swap_active: AtomicBool::new(false),
                swap_running: AtomicBool::new(false),
            }),
        })
    }

    pub(crate) fn with_core<T>(&self, f: impl FnOnce(&TxnCore) -> Result<T>) -> Result<T> {
        self.with_live(|l| f(&l.core))
    }

    fn with_live<T>(&self, f: impl FnOnce(&Live) -> Result<T>) -> Result<T> {
        let live = self.shared.core.read_recover();
        f(live.as_ref().ok_or(Error::StoreClosed)?)
    }

    fn format(&self) -> ValueFormat {
        self.shared.options.value_format
    }

    fn timestamped_only(&self, what: &str) -> Result<()> {
        match self.format() {
            ValueFormat::Timestamped | ValueFormat::Headers => Ok(()),
            ValueFormat::Plain => Err(Error::FormatMismatch(format!(
                "{what} needs a timestamped store; use the raw-bytes methods on a plain store"
            ))),
        }
    }

    fn headers_only(&self, what: &str) -> Result<()> {
        match self.format() {
            ValueFormat::Headers => Ok(()),
            other => Err(Error::FormatMismatch(format!(
                "{what} needs a headers-format store; this store is {}",
                other.name()
            ))),
        }
    }

    /// Checks a raw value against the store's limits and layout.
    fn check_raw(&self, raw: &[u8]) -> Result<()> {
        format::check_value(raw)?;
        format::check_layout(self.format(), raw)
    }

    /// A raw value of a timestamped or headers-format store as value and timestamp (the
    /// headers, if any, dropped).
    fn decode(&self, raw: Option<Vec<u8>>) -> Result<Option<ValueAndTimestamp>> {
        let Some(raw) = raw else { return Ok(None) };
        match self.format() {
            ValueFormat::Headers => {
                let p = headers::split(&raw)?;
                Ok(Some(ValueAndTimestamp::new(p.value, p.timestamp)))
            }
            _ => ValueAndTimestamp::decode(&raw).map(Some),
        }
    }

    /// `value` with `timestamp` (and no headers, in a headers-format store) in the store's
    /// layout.
    fn encode_timestamped(&self, value: &[u8], timestamp: i64) -> Result<Arc<[u8]>> {
        let encoded: Arc<[u8]> = match self.format() {
            ValueFormat::Headers => headers::encode(value, timestamp, &[])?.into(),
            _ => value::encode_shared(value, timestamp),
        };
        format::check_value(&encoded)?;
        Ok(encoded)
    }

    // ----- typed, timestamped API -------------------------------------------------------

    /// Writes `value` with `timestamp` for `key` (timestamped stores).
    pub fn put(&self, key: &[u8], value: &[u8], timestamp: i64) -> Result<()> {
        self.timestamped_only("put")?;
        format::check_key(key)?;
        let encoded = self.encode_timestamped(value, timestamp)?;
        self.with_live(|l| self.write(l, &[(key, Some(encoded))]))
    }

    /// Writes `value` with its timestamp and headers for `key` (headers-format stores).
    pub fn put_with_headers(&self, key: &[u8], value: &ValueTimestampHeaders) -> Result<()> {
        self.headers_only("put_with_headers")?;
        format::check_key(key)?;
        let encoded: Arc<[u8]> = value.encode()?.into();
        format::check_value(&encoded)?;
        self.with_live(|l| self.write(l, &[(key, Some(encoded))]))
    }

    /// The writer's view of `key` with its headers (headers-format stores).
    pub fn get_with_headers(&self, key: &[u8]) -> Result<Option<ValueTimestampHeaders>> {
        self.headers_only("get_with_headers")?;
        self.get_raw(key)?
            .map(|raw| ValueTimestampHeaders::decode(&raw))
            .transpose()
    }

    /// Buffers writes of the store's values; in upgrade mode each written key also leaves
    /// the old family, in the same transaction, so it is migrated when this commits.
    fn write(&self, live: &Live, writes: &[(&[u8], crate::txn::Write)]) -> Result<()> {
        self.track(writes.iter().map(|(k, _)| *k));
        if let Some(legacy) = live.legacy {
            live.core
                .write_all(legacy.family, writes.iter().map(|(k, _)| (*k, None)))?;
        }
        live.core
            .write_all(live.data, writes.iter().map(|(k, w)| (*k, w.clone())))
    }

    /// `key` in the family of values, falling back in upgrade mode to the old family
    /// (converted: timestamp -1 for a plain value, no headers).
    fn read(live: &Live, isolation: Isolation, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match live.core.get(isolation, live.data, key)? {
            Some(v) => Ok(Some(v)),
            None => match live.legacy {
                Some(legacy) => Ok(live
                    .core
                    .get(isolation, legacy.family, key)?
                    .map(|old| (legacy.convert)(&old))),
                None => Ok(None),
            },
        }
    }

    /// Writes `value` unless `key` already has one; returns the existing value, if any.
    pub fn put_if_absent(
        &self,
        key: &[u8],
        value: &[u8],
        timestamp: i64,
    ) -> Result<Option<ValueAndTimestamp>> {
        self.timestamped_only("put_if_absent")?;
        let encoded = self.encode_timestamped(value, timestamp)?;
        self.decode(self.put_if_absent_raw(key, &encoded)?)
    }

    /// The writer's view of `key` (its own uncommitted writes included).
    pub fn get(&self, key: &[u8]) -> Result<Option<ValueAndTimestamp>> {
        self.timestamped_only("get")?;
        self.decode(self.get_raw(key)?)
    }

    /// Deletes `key`; returns the value it had in the writer's view.
    pub fn delete(&self, key: &[u8]) -> Result<Option<ValueAndTimestamp>> {
        self.timestamped_only("delete")?;
        self.decode(self.delete_raw(key)?)
    }

    /// Writes every `(key, value, timestamp)`. All entries are validated before any is
    /// written.
    pub fn put_all(&self, entries: &[(&[u8], &[u8], i64)]) -> Result<()> {
        self.timestamped_only("put_all")?;
        let mut encoded = Vec::with_capacity(entries.len());
        for (k, v, ts) in entries {
            format::check_key(k)?;
            encoded.push(self.encode_timestamped(v, *ts)?);
        }
        self.with_live(|l| {
            self.write(
                l,
                &entries
                    .iter()
                    .zip(encoded)
                    .map(|((k, _, _), e)| (*k, Some(e)))
                    .collect::<Vec<_>>(),
            )
        })
    }

    // ----- raw-bytes API (values in the store's layout, as Kafka hands them over) -------

    /// Writes the raw `value` for `key`, or deletes `key` when `value` is `None` (Kafka's
    /// `put(key, null)`). A timestamped store checks the 8-byte timestamp prefix.
    pub fn put_raw(&self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        self.check_raw_write(key, value)?;
        self.with_live(|l| self.write(l, &[(key, value.map(Arc::from))]))
    }

    /// Checks a raw write: the key, and the value's layout unless it is a delete.
    fn check_raw_write(&self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        format::check_key(key)?;
        value.map_or(Ok(()), |v| self.check_raw(v))
    }

    /// Writes the raw `value` unless `key` has one; returns the existing raw value.
    pub fn put_if_absent_raw(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        format::check_key(key)?;
        self.check_raw(value)?;
        self.with_live(|l| {
            if l.legacy.is_none() {
                self.track(std::iter::once(key));
                return l.core.put_if_absent(l.data, key, value);
            }
            let existing = Self::read(l, Isolation::ReadUncommitted, key)?;
            if existing.is_none() {
                self.write(l, &[(key, Some(Arc::from(value)))])?;
            }
            Ok(existing)
        })
    }

    /// The writer's view of `key`, raw.
    pub fn get_raw(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_raw_with(Isolation::ReadUncommitted, key)
    }

    /// `key` under `isolation`, raw.
    pub fn get_raw_with(&self, isolation: Isolation, key: &[u8]) -> Result<Option<Vec<u8>>> {
        format::check_key(key)?;
        self.with_live(|l| Self::read(l, isolation, key))
    }

    /// `key` under `isolation`, decoded (timestamped stores).
    pub fn get_with(&self, isolation: Isolation, key: &[u8]) -> Result<Option<ValueAndTimestamp>> {
        self.timestamped_only("get_with")?;
        self.decode(self.get_raw_with(isolation, key)?)
    }

    /// Deletes `key`; returns its raw value in the writer's view.
    pub fn delete_raw(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        format::check_key(key)?;
        self.with_live(|l| {
            self.track(std::iter::once(key));
            let Some(legacy) = l.legacy else {
                return l.core.delete(l.data, key);
            };
            let existing = Self::read(l, Isolation::ReadUncommitted, key)?;
            l.core.delete(legacy.family, key)?;
            l.core.delete(l.data, key)?;
            Ok(existing)
        })
    }

    /// Writes every `(key, raw value or None to delete)`. All entries are validated before
    /// any is written, so an invalid entry leaves the transaction unchanged.
    pub fn put_all_raw<'a>(
        &self,
        entries: impl IntoIterator<Item = (&'a [u8], Option<&'a [u8]>)>,
    ) -> Result<()> {
        let entries: Vec<(&[u8], Option<&[u8]>)> = entries.into_iter().collect();
        for (k, v) in &entries {
            self.check_raw_write(k, *v)?;
        }
        self.with_live(|l| {
            self.write(
                l,
                &entries
                    .into_iter()
                    .map(|(k, v)| (k, v.map(Arc::<[u8]>::from)))
                    .collect::<Vec<_>>(),
            )
        })
    }

    // ----- iteration ----------------------------------------------------------------------

    /// Entries of `range` under `isolation`, ascending or descending.
    pub fn scan(&self, isolation: Isolation, range: &KeyRange, reverse: bool) -> Result<KvIter> {
        // Registered under the store's read lock, so a concurrent close cannot miss it.
        let slot = self.with_live(|l| {
            let values = l.core.iter(isolation, l.data, range, reverse)?;
            let merged = match l.legacy {
                Some(legacy) => crate::txn::MergedIter::upgrading(
                    values,
                    l.core.iter(isolation, legacy.family, range, reverse)?,
                    legacy.convert,
                    reverse,
                ),
                None => values,
            };
            Ok(self.shared.iterators.register(merged))
        })?;
        Ok(KvIter::new(slot, self.shared.options.value_format))
    }

    /// Kafka's `range(from, to)`: inclusive bounds, `None` leaves an end open; empty when
    /// `from > to`.
    pub fn range(&self, from: Option<&[u8]>, to: Option<&[u8]>) -> Result<KvIter> {
        self.scan(
            Isolation::ReadUncommitted,
            &KeyRange::inclusive(from, to),
            false,
        )
    }

    /// Kafka's `reverseRange(from, to)`: the same entries as `range`, descending.
    pub fn reverse_range(&self, from: Option<&[u8]>, to: Option<&[u8]>) -> Result<KvIter> {
        self.scan(
            Isolation::ReadUncommitted,
            &KeyRange::inclusive(from, to),
            true,
        )
    }

    /// Every entry, ascending.
    pub fn all(&self) -> Result<KvIter> {
        self.scan(Isolation::ReadUncommitted, &KeyRange::all(), false)
    }

    /// Every entry, descending.
    pub fn reverse_all(&self) -> Result<KvIter> {
        self.scan(Isolation::ReadUncommitted, &KeyRange::all(), true)
    }

    /// Every entry whose key starts with `prefix`, ascending.
    pub fn prefix_scan(&self, prefix: &[u8]) -> Result<KvIter> {
        self.scan(Isolation::ReadUncommitted, &KeyRange::prefix(prefix), false)
    }

    /// Approximate number of entries in the writer's view. Exact for committed data on the
    /// memory engine; RocksDB's estimate otherwise; buffered puts count +1 and buffered
    /// deletes -1.
    pub fn approximate_num_entries(&self) -> Result<u64> {
        self.approximate_num_entries_with(Isolation::ReadUncommitted)
    }

    /// Approximate number of entries under `isolation`.
    pub fn approximate_num_entries_with(&self, isolation: Isolation) -> Result<u64> {
        self.with_live(|l| {
            let legacy = match l.legacy {
                Some(old) => l.core.approximate_count(isolation, old.family)?,
                None => 0,
            };
            Ok(l.core.approximate_count(isolation, l.data)? + legacy)
        })
    }

    // ----- transactions -------------------------------------------------------------------

    /// Makes every uncommitted write durable together with the changelog `offsets` in one
    /// atomic step. Kafka's semantics: an empty slice removes all committed offsets; a
    /// `None` offset removes that partition's; other partitions keep theirs. `metadata`
    /// (e.g. Kafka's serialized `Position`) replaces the stored blob when given.
    pub fn commit(
        &self,
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        let result = self.with_core(|c| c.commit(offsets, metadata));
        if let Err(Error::CommitInDoubt(_)) = &result {
            self.shared.commits_in_doubt.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Restores a batch of changelog records, already committed upstream, and commits them
    /// at once with `offsets` and `metadata` (as [`KvStore::commit`] does): the fast path
    /// for Kafka's restore callback, with no transaction buffer, no spill and no second
    /// write. Entries are `(key, raw value or None to delete)` in changelog order (for one
    /// key, the last wins); all are validated before anything is accepted. Every later
    /// call on the store, from any thread, sees the batch committed.
    ///
    /// Consecutive batches are gathered in memory (up to
    /// [`StoreOptions::max_uncommitted_bytes`]) and reach the engine together just before
    /// the store's next other operation, or when the bound is reached. On RocksDB a
    /// gathering of 1 MiB or more (or of the bound, if lower) is sorted, written as one
    /// file and ingested: no memtable insert and no flush, about half the CPU of writing
    /// it. A smaller one is written in one batch without the write-ahead log, durable at
    /// the store's next commit or close, or earlier when memtables fill. A crash leaves the
    /// store at a completed restore or at an earlier commit, whose offset says where to
    /// restore from: never restored data without its offset, never an offset without its
    /// data (an ingestion records its intent first, and recovery completes it).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the transaction has uncommitted writes (restoring
    /// would commit them too: commit or roll them back first), and the validation errors
    /// of [`KvStore::put_all_raw`]; the store is then unchanged. A failed engine write
    /// ([`Error::Storage`], [`Error::Io`]) leaves the store broken until it is reopened,
    /// which recovers the last durable commit; writing gathered batches can also fail on
    /// the store's next call, which then returns that error.
    pub fn restore_batch<'a>(
        &self,
        entries: impl IntoIterator<Item = (&'a [u8], Option<&'a [u8]>)>,
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        let entries: Vec<(&[u8], Option<&[u8]>)> = entries.into_iter().collect();
        for (k, v) in &entries {
            self.check_raw_write(k, *v)?;
        }
        self.with_live(|live| {
            let data = live.data;
            let writes: Vec<crate::txn::RestoredWrite<'_>> = match &live.legacy {
                None => entries.iter().map(|&(k, v)| (data, k, v)).collect(),
                // Upgrade mode: a restored key leaves the old family, as a written one does.
                Some(legacy) => entries
                    .iter()
                    .flat_map(|&(k, v)| [(legacy.family, k, None), (data, k, v)])
                    .collect(),
            };
            // An upgrade by swap carries over every key written since its snapshot.
            self.track(entries.iter().map(|(k, _)| *k));
            live.core.restore(&writes, offsets, metadata)
        })
    }

    /// The changelog offset committed for `tp`, if any.
    pub fn committed_offset(&self, tp: &TopicPartition) -> Result<Option<i64>> {
        self.with_core(|c| Ok(c.committed()?.offsets.get(tp).copied()))
    }

    /// Every committed changelog offset.
    pub fn committed_offsets(&self) -> Result<Vec<(TopicPartition, i64)>> {
        self.with_core(|c| Ok(c.committed()?.offsets.into_iter().collect()))
    }

    /// The metadata blob of the last commit that carried one.
    pub fn committed_metadata(&self) -> Result<Option<Vec<u8>>> {
        self.with_core(|c| Ok(c.committed()?.metadata))
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
        self.with_core(|c| super::checkpoint::take(c, dir.as_ref()))
    }

    /// Number of commits completed on this store over its life.
    pub fn commit_sequence(&self) -> Result<u64> {
        self.with_core(|c| Ok(c.committed()?.sequence))
    }

    /// Discards every uncommitted write.
    pub fn rollback(&self) -> Result<()> {
        self.with_core(|c| c.rollback())
    }

    /// Approximate bytes of uncommitted writes, in memory and spilled.
    pub fn approximate_num_uncommitted_bytes(&self) -> Result<u64> {
        self.with_core(|c| Ok(c.uncommitted_bytes()))
    }

    // ----- life cycle ---------------------------------------------------------------------

    /// Closes the store: uncommitted writes are discarded, open iterators are closed, the
    /// engine is released and the close is recorded as clean. Idempotent; every later call
    /// on any handle returns [`Error::StoreClosed`].
    pub fn close(&self) -> Result<()> {
        self.shared.shutdown()
    }

    /// Closes the store as [`KvStore::close`] does, but hands kstate's lock on its directory
    /// to the caller (an export keeps it while it replaces the directory). `None` for a
    /// store without one (in memory) or already closed.
    pub(crate) fn close_keeping_lock(&self) -> Result<Option<StoreLock>> {
        let mut core = self.shared.core.write_recover();
        self.shared.iterators.close_all();
        let Some(Live {
            core: txn, _lock, ..
        }) = core.take()
        else {
            return Ok(None);
        };
        txn.close()?;
        drop(txn);
        Ok(_lock)
    }

    /// Migrates up to `max_entries` old-format values of a store in upgrade mode to the
    /// store's family (converted: timestamp -1 for a plain value, no headers; or dropping
    /// the old value where a new one already exists) and commits them, keeping the committed offsets and metadata.
    /// Each call is one transaction, so a kill between or inside calls loses nothing and
    /// the next call (after reopening) continues where the last completed one ended.
    /// Returns the number migrated; 0 once no plain value is left (the next open then
    /// runs in regular mode).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when uncommitted writes are pending (they would be
    /// committed with the migration) or `max_entries` is 0; engine errors as for commit.
    pub fn upgrade_step(&self, max_entries: usize) -> Result<u64> {
        if max_entries == 0 {
            return Err(Error::InvalidArgument(
                "max_entries must be positive".into(),
            ));
        }
        self.with_live(|l| {
            let Some(legacy) = l.legacy else {
                return Ok(0);
            };
            let c = &l.core;
            if c.uncommitted_bytes() > 0 {
                return Err(Error::InvalidArgument(
                    "the store has uncommitted writes: commit or roll them back before upgrading"
                        .into(),
                ));
            }
            let mut resume = self.shared.upgraded_up_to.lock_recover();
            let from = KeyRange {
                lower: resume
                    .clone()
                    .map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
                upper: std::ops::Bound::Unbounded,
            };
            let mut plain = c.iter(Isolation::ReadUncommitted, legacy.family, &from, false)?;
            let mut moved = Vec::new();
            while moved.len() < max_entries {
                let Some((key, value)) = plain.next_entry()? else {
                    break;
                };
                moved.push((key, value));
            }
            drop(plain);
            if moved.is_empty() {
                // Drop the tombstones, so that the next open's check for plain values is
                // one cheap seek.
                c.compact(legacy.family)?;
                return Ok(0);
            }
            self.track(moved.iter().map(|(k, _)| k.as_slice()));
            for (key, value) in &moved {
                if c.get(Isolation::ReadUncommitted, l.data, key)?.is_none() {
                    let upgraded: Arc<[u8]> = (legacy.convert)(value).into();
                    c.write_all(l.data, std::iter::once((key.as_slice(), Some(upgraded))))?;
                }
                c.write_all(legacy.family, std::iter::once((key.as_slice(), None)))?;
            }
            let committed = c.committed()?;
            let offsets: Vec<(TopicPartition, Option<i64>)> = committed
                .offsets
                .into_iter()
                .map(|(tp, o)| (tp, Some(o)))
                .collect();
            if offsets.is_empty() {
                // Kafka's map semantics: an empty map clears offsets, which is what we keep.
                c.commit(&[], None)?;
            } else {
                c.commit(&offsets, None)?;
            }
            *resume = moved.last().map(|(k, _)| k.clone());
            Ok(moved.len() as u64)
        })
    }

    /// Records keys written while an upgrade by swap prepares its side store.
    fn track<'a>(&self, keys: impl Iterator<Item = &'a [u8]>) {
        if self.shared.swap_active.load(Ordering::Acquire) {
            if let Some(set) = self.shared.swap_touched.lock_recover().as_mut() {
                set.extend(keys.map(<[u8]>::to_vec));
            }
        }
    }

    fn stop_tracking(&self) -> BTreeSet<Vec<u8>> {
        self.shared.swap_active.store(false, Ordering::Release);
        self.shared
            .swap_touched
            .lock_recover()
            .take()
            .unwrap_or_default()
    }

    /// Upgrades a RocksDB store in upgrade mode by **prepare and swap**: builds a store of
    /// the new format holding no old-format family in the side directory
    /// `.<name>.kstate-swap` from the last committed snapshot, in batches, while this
    /// store keeps serving reads, writes and commits on any handle; then, under the store's
    /// write lock (operations wait for a moment), carries over every key written since
    /// the snapshot, commits the side store with this store's committed offsets, metadata
    /// and commit count, swaps the two directories atomically (`renameat2(RENAME_EXCHANGE)`,
    /// or a marker-file protocol where the file system lacks it), removes the old one and
    /// continues on the new store in regular mode in the same handle. Uncommitted writes
    /// stay uncommitted across the swap; open iterators are closed by it.
    ///
    /// `progress(done, total)` is called after each batch copied from the snapshot
    /// (`total` is an estimate, at least `done`), and the last call has `done == total`. A kill at any instant leaves either the
    /// old store or the new one live and complete; the next open removes a stale side
    /// directory or finishes the fallback renames. Returns the number of entries copied
    /// from the snapshot; 0, with nothing done, when the store is not in upgrade mode.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on the memory engine, or when uncommitted writes are
    /// pending as the swap starts (commit or roll them back first); [`Error::StoreClosed`];
    /// engine and I/O errors, after which the store is unchanged (it stays in upgrade mode),
    /// except an error reopening the new store, after which this handle is closed and the
    /// new store is on disk.
    pub fn upgrade_by_swap(&self, progress: &mut dyn FnMut(u64, u64)) -> Result<u64> {
        self.upgrade_by_swap_or_stop(&mut |done, total| {
            progress(done, total);
            ControlFlow::Continue(())
        })
    }

    /// [`KvStore::upgrade_by_swap`] whose `progress` may stop it: returning
    /// `ControlFlow::Break(error)` abandons the side store (removed) before the swap, leaves
    /// the store as it was (upgrade mode) and returns `error`. The C and Java surfaces stop
    /// this way when their callback fails (a Java exception, a panic in a wrapper).
    ///
    /// The callback runs on the calling thread with no lock of the store held: it may
    /// read, write and commit on the store (those writes are carried over like any other).
    /// A second upgrade by swap on the store while one runs, from the callback or another
    /// thread, is refused.
    ///
    /// # Errors
    /// As [`KvStore::upgrade_by_swap`]; the callback's error; [`Error::InvalidArgument`]
    /// when an upgrade by swap is already running on this store; [`Error::StoreClosed`]
    /// when the store was closed meanwhile (by the callback, say), the side store then
    /// left for the next open to remove.
    pub fn upgrade_by_swap_or_stop(
        &self,
        progress: &mut dyn FnMut(u64, u64) -> ControlFlow<Error>,
    ) -> Result<u64> {
        if self
            .shared
            .swap_running
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::InvalidArgument(
                "an upgrade by swap is already running on this store (called again from its \
                 progress callback, or from another thread)"
                    .into(),
            ));
        }
        let result = self.swap_once(progress);
        self.shared.swap_running.store(false, Ordering::Release);
        result
    }

    fn swap_once(&self, progress: &mut dyn FnMut(u64, u64) -> ControlFlow<Error>) -> Result<u64> {
        let Some(path) = self
            .shared
            .path
            .clone()
            .filter(|_| self.shared.options.engine == EngineKind::RocksDb)
        else {
            return Err(Error::InvalidArgument(
                "an upgrade by swap needs a RocksDB store".into(),
            ));
        };
        // Snapshot and tracking start together: no write or commit is in flight.
        let (entries, total) = {
            let guard = self.shared.core.write_recover();
            let l = guard.as_ref().ok_or(Error::StoreClosed)?;
            let Some(legacy) = l.legacy else {
                return Ok(0);
            };
            if l.core.uncommitted_bytes() > 0 {
                return Err(Error::InvalidArgument(
                    "the store has uncommitted writes: commit or roll them back before \
                     upgrading by swap"
                        .into(),
                ));
            }
            let all = KeyRange::all();
            let current = l.core.iter(Isolation::ReadCommitted, l.data, &all, false)?;
            let old = l
                .core
                .iter(Isolation::ReadCommitted, legacy.family, &all, false)?;
            let total = l.core.approximate_count(Isolation::ReadCommitted, l.data)?
                + l.core
                    .approximate_count(Isolation::ReadCommitted, legacy.family)?;
            *self.shared.swap_touched.lock_recover() = Some(BTreeSet::new());
            self.shared.swap_active.store(true, Ordering::Release);
            (
                crate::txn::MergedIter::upgrading(current, old, legacy.convert, false),
                total,
            )
        };
        let result = self.swap_from(&path, entries, total, progress);
        self.stop_tracking();
        result
    }

    fn swap_from(
        &self,
        path: &Path,
        mut entries: crate::txn::MergedIter,
        total: u64,
        progress: &mut dyn FnMut(u64, u64) -> ControlFlow<Error>,
    ) -> Result<u64> {
        let options = &self.shared.options;
        let side = swap::side_dir(path)?;
        if side.exists() {
            std::fs::remove_dir_all(&side).map_err(|e| Error::io(&side, e))?;
        }
        let data_name = data_family_name(options.value_format);
        let engine = RocksEngine::open(
            &side,
            &[names::META, names::SPILL, data_name],
            &options.rocksdb,
        )?;
        let data = engine.registry().require(data_name)?;
        let meta = engine.registry().require(names::META)?;
        let mut done = 0u64;
        let mut batch: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut bytes = 0usize;
        // One entry read ahead, so that the batch holding the last entry is known as the
        // last one and reports `done == total` (the total is only an estimate).
        let mut next = entries.next_entry()?;
        while let Some((k, v)) = next.take() {
            bytes += k.len() + v.len();
            batch.push((k, v));
            next = entries.next_entry()?;
            let last = next.is_none();
            if last || bytes >= self.shared.chunk_bytes.max(1 << 16) {
                let ops: Vec<BatchOp<'_>> = batch
                    .iter()
                    .map(|(k, v)| BatchOp::Put(data, k, v))
                    .collect();
                engine.write(&ops, false)?;
                done += batch.len() as u64;
                batch.clear();
                bytes = 0;
                crate::failpoint::hit("swap-build");
                let estimate = if last { done } else { total.max(done) };
                if let ControlFlow::Break(e) = progress(done, estimate) {
                    drop(engine);
                    std::fs::remove_dir_all(&side).map_err(|io| Error::io(&side, io))?;
                    return Err(e);
                }
            }
        }
        // The snapshot pins the old engine, which must be closed before the swap.
        drop(entries);
        // Finish under the write lock: nothing moves while the rest is carried over.
        let mut guard = self.shared.core.write_recover();
        let live = guard.as_ref().ok_or(Error::StoreClosed)?;
        let touched = self.stop_tracking();
        let mut carried: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::with_capacity(touched.len());
        let mut pending: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        for key in touched {
            let committed = Self::read(live, Isolation::ReadCommitted, &key)?;
            let current = Self::read(live, Isolation::ReadUncommitted, &key)?;
            if current != committed {
                pending.push((key.clone(), current));
            }
            carried.push((key, committed));
        }
        let state = live.core.committed()?.encode()?;
        let header = crate::format::meta::StoreHeader {
            format_version: crate::format::meta::FORMAT_VERSION,
            value_format: options.value_format,
            kind: crate::format::meta::StoreKind::KeyValue,
        }
        .encode();
        let mut ops: Vec<BatchOp<'_>> = carried
            .iter()
            .map(|(k, v)| match v {
                Some(v) => BatchOp::Put(data, k, v),
                None => BatchOp::Delete(data, k),
            })
            .collect();
        ops.push(BatchOp::Put(
            meta,
            crate::format::meta::KEY_COMMITTED,
            &state,
        ));
        ops.push(BatchOp::Put(meta, crate::format::meta::KEY_HEADER, &header));
        engine.write(&ops, true)?;
        drop(ops);
        drop(engine);
        crate::failpoint::hit("swap-side-committed");
        // The old engine goes first: nothing may write into the directory once renamed.
        self.shared.iterators.close_all();
        live.core.close()?;
        let Some(old) = guard.take() else {
            return Err(Error::StoreClosed);
        };
        let Live { core, _lock, .. } = old;
        drop(core);
        let Some(lock) = _lock else {
            return Err(Error::Internal("a RocksDB store without its lock".into()));
        };
        if let Err(e) = swap::exchange(path, &side) {
            // Not swapped, or swapped but not cleaned up: settle the directories as the next
            // open would, and carry on with whichever store is live.
            swap::recover(path)?;
            let opened = finish_open(path, options, lock)?;
            *guard = Some(self.live_from(opened)?);
            return Err(e);
        }
        let opened = finish_open(path, options, lock)?;
        let new_live = self.live_from(opened)?;
        for (key, value) in &pending {
            new_live.core.write_all(
                new_live.data,
                std::iter::once((key.as_slice(), value.as_deref().map(Arc::<[u8]>::from))),
            )?;
        }
        *guard = Some(new_live);
        *self.shared.upgraded_up_to.lock_recover() = None;
        Ok(done)
    }

    /// A live store over a freshly opened engine, its recovery run.
    fn live_from(&self, opened: Opened) -> Result<Live> {
        let config = TxnConfig {
            max_uncommitted_bytes: self.shared.options.max_uncommitted_bytes,
            sync_on_commit: self.shared.options.sync_on_commit,
            chunk_bytes: self.shared.chunk_bytes,
        };
        let (core, _) = TxnCore::recover(opened.engine, config)?;
        Live::new(
            core,
            opened.data,
            opened.legacy,
            self.shared.options.value_format,
            opened.lock,
        )
    }

    /// True when the store runs in upgrade mode (KIP-258, KIP-1271): it was opened
    /// timestamped over plain values, or in the headers format over plain or timestamped
    /// ones, which it reads converted (timestamp -1 for a plain value, no headers) and
    /// migrates key by key as they are written or deleted. The next open after the last old
    /// value is gone runs in regular mode. False once the store is closed.
    pub fn is_upgrading(&self) -> bool {
        self.with_live(|l| Ok(l.legacy.is_some())).unwrap_or(false)
    }

    /// True until the store is closed.
    pub fn is_open(&self) -> bool {
        self.shared.core.read_recover().is_some()
    }

    /// What recovery found when the store was opened.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.shared.recovery
    }

    /// The store's path (for a memory store, the name it was opened with, if any).
    pub fn path(&self) -> Option<&Path> {
        self.shared.path.as_deref()
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &StoreOptions {
        &self.shared.options
    }

    /// Number of iterators currently open on the store.
    pub fn open_iterators(&self) -> usize {
        self.shared.iterators.live()
    }

    /// Flushes the committed data to disk and compacts it fully, waiting for the end: a
    /// maintenance step after a bulk load or many deletes (a no-op in memory). Uncommitted
    /// writes are unaffected.
    pub fn compact(&self) -> Result<()> {
        self.with_live(|l| l.core.compact(l.data))
    }

    /// An integer RocksDB property of the store, by RocksDB name: for example
    /// `rocksdb.cur-size-all-mem-tables`, `rocksdb.estimate-num-keys` (summed over the
    /// column families, as Kafka Streams reports them), `rocksdb.block-cache-usage` (the
    /// store's cache, shared when the store draws on a
    /// [`crate::BoundedMemory`] budget), or, with [`crate::RocksOptions::statistics`], the
    /// tickers `rocksdb.bytes.written` and `rocksdb.bytes.read`. `None` when RocksDB has no
    /// such integer property, when statistics are off for a ticker, and always on the
    /// memory engine.
    ///
    /// kstate's own counters answer on both engines: `kstate.commits-in-doubt` (commits
    /// that returned [`Error::CommitInDoubt`] since the store was opened) and
    /// `kstate.recovery-rolled-forward` (1 when opening completed a spilled commit
    /// interrupted by a crash, else 0), `kstate.spills` (times the uncommitted buffer was
    /// moved to disk), `kstate.roll-forwards` (spilled commits completed, recovery
    /// included) and `kstate.restore-ingestions` (large restores written as one sorted
    /// file and ingested, see [`KvStore::restore_batch`]; recovery included), all since
    /// the store was opened.
    ///
    /// # Errors
    /// [`Error::StoreClosed`] after close; [`Error::Storage`] from RocksDB.
    pub fn property(&self, name: &str) -> Result<Option<u64>> {
        self.with_core(|c| match name {
            "kstate.commits-in-doubt" => {
                Ok(Some(self.shared.commits_in_doubt.load(Ordering::Relaxed)))
            }
            "kstate.recovery-rolled-forward" => {
                Ok(Some(u64::from(self.shared.recovery.rolled_forward)))
            }
            "kstate.spills" => Ok(Some(c.counters().0)),
            "kstate.roll-forwards" => Ok(Some(c.counters().1)),
            "kstate.restore-ingestions" => Ok(Some(c.counters().2)),
            _ => c.engine().property(name),
        })
    }

    /// Names of the engine's families (RocksDB column families), for inspection.
    pub fn family_names(&self) -> Result<Vec<String>> {
        self.with_core(|c| Ok(c.engine().registry().names().to_vec()))
    }
}
