//! The RocksDB engine. Families are column families named as in Kafka's RocksDB stores;
//! every batch is one RocksDB `WriteBatch` (atomic, through the WAL), and snapshots are
//! RocksDB snapshots that own a reference to their database.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompressionType,
    DBRawIteratorWithThreadMode, DBRecoveryMode, Options, ReadOptions, SnapshotWithThreadMode,
    WriteBatch, WriteOptions, DB,
};

use super::{BatchOp, Engine, EngineIter, Family, KeyRange, Registry, Snapshot};
use crate::{Error, Result};

/// Tuning knobs of the RocksDB engine. Defaults follow Kafka Streams' `RocksDBStore`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RocksOptions {
    /// LRU block cache size in bytes (Kafka: 50 MiB).
    pub block_cache_bytes: usize,
    /// Memtable size per column family in bytes (Kafka: 16 MiB).
    pub write_buffer_bytes: usize,
    /// Memtables per column family before writes stall (Kafka: 3).
    pub max_write_buffers: i32,
}

impl Default for RocksOptions {
    fn default() -> Self {
        RocksOptions {
            block_cache_bytes: 50 << 20,
            write_buffer_bytes: 16 << 20,
            max_write_buffers: 3,
        }
    }
}

/// What is found at a path before anything is opened or created there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Nothing there, or an empty directory: a new store may be created.
    Vacant,
    /// A RocksDB database with these column families.
    Database(Vec<String>),
}

/// Looks at `path` without changing anything.
///
/// # Errors
/// [`Error::NotAStore`] for a file, or a non-empty directory with no RocksDB `CURRENT`
/// file; [`Error::Corruption`] when `CURRENT` does not name an existing manifest;
/// [`Error::Storage`] when the database's column families cannot be listed.
pub(crate) fn probe(path: &Path) -> Result<Probe> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Probe::Vacant),
        Err(e) => return Err(Error::io(path, e)),
    };
    if !meta.is_dir() {
        return Err(Error::NotAStore {
            path: path.to_path_buf(),
            reason: "it is a file, not a directory".into(),
        });
    }
    let current = path.join("CURRENT");
    if !current.exists() {
        let mut entries = std::fs::read_dir(path).map_err(|e| Error::io(path, e))?;
        if entries.next().is_none() {
            return Ok(Probe::Vacant);
        }
        return Err(Error::NotAStore {
            path: path.to_path_buf(),
            reason: "the directory has files but no RocksDB database (no CURRENT file)".into(),
        });
    }
    // Check CURRENT ourselves: RocksDB's family listing leaks on a damaged one, and a clear
    // message beats RocksDB's.
    let manifest = std::fs::read(&current).map_err(|e| Error::io(&current, e))?;
    let name = std::str::from_utf8(&manifest)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| {
            s.strip_prefix("MANIFEST-")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
    match name {
        Some(name) if path.join(name).is_file() => {}
        _ => {
            return Err(Error::Corruption(format!(
                "{} does not name an existing RocksDB manifest",
                current.display()
            )))
        }
    }
    let families = DB::list_cf(&Options::default(), path).map_err(|e| map_err(path, e))?;
    Ok(Probe::Database(families))
}

/// Committed data in a RocksDB database.
pub(crate) struct RocksEngine {
    db: Arc<DB>,
    path: PathBuf,
    registry: Registry,
}

impl RocksEngine {
    /// Opens (creating if needed) the database at `path` with the column families it
    /// already has plus those in `wanted`.
    pub(crate) fn open(path: &Path, wanted: &[&str], opts: &RocksOptions) -> Result<RocksEngine> {
        std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
        Self::open_with(path, wanted, opts, false)
    }

    /// Opens an existing database read-only, with all its column families. Takes no lock,
    /// so it works while another process has the store open (`kstate inspect`), and
    /// changes nothing on disk.
    pub(crate) fn open_read_only(path: &Path, opts: &RocksOptions) -> Result<RocksEngine> {
        if probe(path)? == Probe::Vacant {
            return Err(Error::NotAStore {
                path: path.to_path_buf(),
                reason: "no database there".into(),
            });
        }
        Self::open_with(path, &[], opts, true)
    }

    fn open_with(
        path: &Path,
        wanted: &[&str],
        opts: &RocksOptions,
        read_only: bool,
    ) -> Result<RocksEngine> {
        let existing = match probe(path)? {
            Probe::Vacant => Vec::new(),
            Probe::Database(f) => f,
        };
        let mut wanted = wanted.to_vec();
        wanted.push(super::names::PLAIN);
        let registry = Registry::new(&existing, &wanted)?;
        let cache = Cache::new_lru_cache(opts.block_cache_bytes);
        let cf_opts = column_family_options(opts, &cache);
        let descriptors = registry
            .names()
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(n, cf_opts.clone()));
        let mut db_opts = cf_opts.clone();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.set_error_if_exists(false);
        db_opts.set_log_level(rocksdb::LogLevel::Error);
        db_opts.set_keep_log_file_num(2);
        db_opts.set_max_log_file_size(1 << 20);
        db_opts.increase_parallelism(2);
        // A missing or truncated WAL in the middle of the log is corruption, not a silently
        // shorter history: the manifest tracks every WAL and open verifies them.
        db_opts.set_track_and_verify_wals_in_manifest(true);
        db_opts.set_wal_recovery_mode(DBRecoveryMode::PointInTime);
        // All families share one WAL; cap it so that a rarely written family (kstate_meta
        // holds a few records) is flushed instead of pinning every log file forever.
        db_opts.set_max_total_wal_size(64 << 20);
        let db = if read_only {
            DB::open_cf_descriptors_read_only(&db_opts, path, descriptors, false)
        } else {
            DB::open_cf_descriptors(&db_opts, path, descriptors)
        }
        .map_err(|e| map_err(path, e))?;
        Ok(RocksEngine {
            db: Arc::new(db),
            path: path.to_path_buf(),
            registry,
        })
    }

    fn cf(&self, family: Family) -> Result<&rocksdb::ColumnFamily> {
        let name = self.registry.name(family);
        self.db
            .cf_handle(name)
            .ok_or_else(|| Error::Internal(format!("column family {name} is not open")))
    }

    fn read_options(range: &KeyRange) -> ReadOptions {
        let mut ro = ReadOptions::default();
        if let Some(lo) = range.inclusive_lower() {
            ro.set_iterate_lower_bound(lo);
        }
        if let Some(hi) = range.exclusive_upper() {
            ro.set_iterate_upper_bound(hi);
        }
        ro
    }
}

fn column_family_options(opts: &RocksOptions, cache: &Cache) -> Options {
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(cache);
    table.set_block_size(4096);
    table.set_bloom_filter(10.0, false);
    let mut o = Options::default();
    o.set_block_based_table_factory(&table);
    o.set_compression_type(DBCompressionType::None);
    o.set_write_buffer_size(opts.write_buffer_bytes);
    o.set_max_write_buffer_number(opts.max_write_buffers);
    o
}

/// Maps a RocksDB error to kstate's, recognising the lock-file conflict RocksDB reports
/// when another handle in this process has the database open.
pub(crate) fn map_err(path: &Path, e: rocksdb::Error) -> Error {
    let msg = e.into_string();
    if msg.contains("LOCK") || msg.contains("lock hold") {
        return Error::Locked {
            path: path.to_path_buf(),
            detail: msg,
        };
    }
    if msg.starts_with("Corruption") {
        return Error::Corruption(msg);
    }
    Error::Storage(msg)
}

impl Engine for RocksEngine {
    fn registry(&self) -> &Registry {
        &self.registry
    }

    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let cf = self.cf(family)?;
        self.db
            .get_pinned_cf(cf, key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| map_err(&self.path, e))
    }

    fn write(&self, ops: &[BatchOp<'_>], sync: bool) -> Result<()> {
        let mut batch = WriteBatch::default();
        for op in ops {
            match *op {
                BatchOp::Put(f, k, v) => batch.put_cf(self.cf(f)?, k, v),
                BatchOp::Delete(f, k) => batch.delete_cf(self.cf(f)?, k),
                BatchOp::DeleteRange(f, from, to) => batch.delete_range_cf(self.cf(f)?, from, to),
            }
        }
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        self.db
            .write_opt(batch, &wo)
            .map_err(|e| map_err(&self.path, e))
    }

    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>> {
        let raw = self
            .db
            .raw_iterator_cf_opt(self.cf(family)?, Self::read_options(range));
        // SAFETY: `raw` borrows the `DB` inside `self.db`; the `Arc` clone moved into the
        // same `RocksIter` keeps that heap-allocated `DB` alive, and `RocksIter` declares
        // `raw` first so it is dropped before its `Arc`. The `'static` lifetime is thus never
        // observed beyond the database's life.
        let raw: DBRawIteratorWithThreadMode<'static, DB> = unsafe { std::mem::transmute(raw) };
        Ok(Box::new(RocksIter::new(
            raw,
            Keepalive::Db(Arc::clone(&self.db)),
            range,
            reverse,
            &self.path,
        )))
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        let snap = self.db.snapshot();
        // SAFETY: the snapshot borrows the heap-allocated `DB` that the `Arc` stored after it
        // in `SnapInner` keeps alive; `SnapInner`'s field order drops the snapshot first.
        let snap: SnapshotWithThreadMode<'static, DB> = unsafe { std::mem::transmute(snap) };
        Ok(Arc::new(RocksSnapshot {
            inner: Arc::new(SnapInner {
                snap,
                db: Arc::clone(&self.db),
            }),
            path: self.path.clone(),
            registry: self.registry.clone(),
        }))
    }

    fn approximate_count(&self, family: Family) -> Result<u64> {
        let cf = self.cf(family)?;
        self.db
            .property_int_value_cf(cf, "rocksdb.estimate-num-keys")
            .map(|v| v.unwrap_or(0))
            .map_err(|e| map_err(&self.path, e))
    }

    fn compact(&self, family: Family) -> Result<()> {
        let cf = self.cf(family)?;
        self.db.flush_cf(cf).map_err(|e| map_err(&self.path, e))?;
        self.db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }
}

/// A RocksDB snapshot that owns a reference to its database.
struct SnapInner {
    // Field order is load-bearing: `snap` must drop before `db` (see `RocksEngine::snapshot`).
    snap: SnapshotWithThreadMode<'static, DB>,
    db: Arc<DB>,
}

// SAFETY: a RocksDB snapshot is an immutable sequence number that RocksDB lets any thread
// read through concurrently; the wrapper exposes only reads and releases it once, on drop.
unsafe impl Send for SnapInner {}
// SAFETY: see `Send`: every use takes `&self` and only reads through the snapshot.
unsafe impl Sync for SnapInner {}

/// The engine's [`Snapshot`]: shared, so that cursors made from it keep it alive.
struct RocksSnapshot {
    inner: Arc<SnapInner>,
    path: PathBuf,
    registry: Registry,
}

impl RocksSnapshot {
    fn cf(&self, family: Family) -> Result<&rocksdb::ColumnFamily> {
        let name = self.registry.name(family);
        self.inner
            .db
            .cf_handle(name)
            .ok_or_else(|| Error::Internal(format!("column family {name} is not open")))
    }
}

impl Snapshot for RocksSnapshot {
    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let cf = self.cf(family)?;
        self.inner
            .snap
            .get_pinned_cf_opt(cf, key, ReadOptions::default())
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| map_err(&self.path, e))
    }

    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>> {
        let raw = self
            .inner
            .snap
            .raw_iterator_cf_opt(self.cf(family)?, RocksEngine::read_options(range));
        // SAFETY: `raw` reads through the snapshot and its `DB`; the `Arc<SnapInner>` moved
        // into the same `RocksIter` (declared after `raw`) keeps both alive until `raw` is
        // dropped, so the `'static` lifetime is never observed beyond them.
        let raw: DBRawIteratorWithThreadMode<'static, DB> = unsafe { std::mem::transmute(raw) };
        Ok(Box::new(RocksIter::new(
            raw,
            Keepalive::Snapshot(Arc::clone(&self.inner)),
            range,
            reverse,
            &self.path,
        )))
    }
}

/// What a cursor keeps alive besides itself.
enum Keepalive {
    Db(#[allow(dead_code)] Arc<DB>),
    Snapshot(#[allow(dead_code)] Arc<SnapInner>),
}

/// A RocksDB iterator that owns a reference to what it reads. The iterator pins the
/// database state of its creation (RocksDB's implicit snapshot, or the explicit one).
struct RocksIter {
    // Field order is load-bearing: `raw` must drop before `_keep`.
    raw: DBRawIteratorWithThreadMode<'static, DB>,
    _keep: Keepalive,
    reverse: bool,
    started: bool,
    done: bool,
    path: PathBuf,
}

impl RocksIter {
    fn new(
        raw: DBRawIteratorWithThreadMode<'static, DB>,
        keep: Keepalive,
        range: &KeyRange,
        reverse: bool,
        path: &Path,
    ) -> Self {
        RocksIter {
            raw,
            _keep: keep,
            reverse,
            started: range.is_empty(),
            done: range.is_empty(),
            path: path.to_path_buf(),
        }
    }
}

// SAFETY: a RocksDB iterator may be used from any thread as long as it is not used from two
// at once; `EngineIter::next_entry` takes `&mut self`, so access is exclusive.
unsafe impl Send for RocksIter {}

impl EngineIter for RocksIter {
    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if self.done {
            return Ok(None);
        }
        if !self.started {
            self.started = true;
            if self.reverse {
                self.raw.seek_to_last();
            } else {
                self.raw.seek_to_first();
            }
        } else if self.reverse {
            self.raw.prev();
        } else {
            self.raw.next();
        }
        match (self.raw.key(), self.raw.value()) {
            (Some(k), Some(v)) => Ok(Some((k.to_vec(), v.to_vec()))),
            _ => {
                self.done = true;
                self.raw.status().map_err(|e| map_err(&self.path, e))?;
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::names;

    #[test]
    fn write_iterate_snapshot_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        {
            let e = RocksEngine::open(
                &path,
                &[names::TIMESTAMPED, names::META],
                &RocksOptions::default(),
            )
            .unwrap();
            let ts = e.registry().require(names::TIMESTAMPED).unwrap();
            e.write(
                &[
                    BatchOp::Put(ts, b"a", b"1"),
                    BatchOp::Put(ts, b"b", b"2"),
                    BatchOp::Put(ts, b"c", b"3"),
                ],
                true,
            )
            .unwrap();
            let snap = e.snapshot().unwrap();
            let mut it = e
                .iter(ts, &KeyRange::inclusive(Some(b"b"), None), true)
                .unwrap();
            e.write(&[BatchOp::Delete(ts, b"c")], false).unwrap();
            assert_eq!(it.next_entry().unwrap().unwrap().0, b"c".to_vec());
            assert_eq!(it.next_entry().unwrap().unwrap().0, b"b".to_vec());
            assert!(it.next_entry().unwrap().is_none());
            assert!(it.next_entry().unwrap().is_none());
            assert_eq!(snap.get(ts, b"c").unwrap(), Some(b"3".to_vec()));
            assert_eq!(e.get(ts, b"c").unwrap(), None);
            let mut sit = snap.iter(ts, &KeyRange::all(), false).unwrap();
            drop(snap);
            drop(e);
            // Cursors keep the snapshot and the database alive after both are gone.
            let mut keys = vec![];
            while let Some((k, _)) = sit.next_entry().unwrap() {
                keys.push(k);
            }
            assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        }
        let e = RocksEngine::open(&path, &[], &RocksOptions::default()).unwrap();
        let ts = e.registry().require(names::TIMESTAMPED).unwrap();
        assert_eq!(e.get(ts, b"a").unwrap(), Some(b"1".to_vec()));
        assert_eq!(e.get(ts, b"c").unwrap(), None);
        assert!(e.registry().find(names::SPILL).is_none());
    }

    #[test]
    fn second_open_is_locked() {
        let dir = tempfile::tempdir().unwrap();
        let _e = RocksEngine::open(dir.path(), &[], &RocksOptions::default()).unwrap();
        let err = RocksEngine::open(dir.path(), &[], &RocksOptions::default())
            .err()
            .unwrap();
        assert_eq!(err.code(), crate::ErrorCode::Locked, "{err}");
    }

    #[test]
    fn probe_recognises_non_stores_and_a_damaged_current() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(probe(&dir.path().join("nope")).unwrap(), Probe::Vacant);
        assert_eq!(probe(dir.path()).unwrap(), Probe::Vacant);
        std::fs::write(dir.path().join("notes.txt"), b"hello").unwrap();
        assert_eq!(
            probe(dir.path()).unwrap_err().code(),
            crate::ErrorCode::NotAStore
        );
        assert_eq!(
            probe(&dir.path().join("notes.txt")).unwrap_err().code(),
            crate::ErrorCode::NotAStore
        );
        let db = dir.path().join("db");
        drop(RocksEngine::open(&db, &[], &RocksOptions::default()).unwrap());
        assert!(matches!(probe(&db).unwrap(), Probe::Database(_)));
        std::fs::write(db.join("CURRENT"), b"garbage\n").unwrap();
        assert_eq!(probe(&db).unwrap_err().code(), crate::ErrorCode::Corruption);
        std::fs::write(db.join("CURRENT"), b"MANIFEST-999999\n").unwrap();
        assert_eq!(probe(&db).unwrap_err().code(), crate::ErrorCode::Corruption);
    }
}
