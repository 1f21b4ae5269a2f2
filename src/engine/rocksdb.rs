//! The RocksDB engine. Families are column families named as in Kafka's RocksDB stores;
//! every batch is one RocksDB `WriteBatch` (atomic, through the WAL).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompressionType,
    DBRawIteratorWithThreadMode, Options, ReadOptions, WriteBatch, WriteOptions, DB,
};

use super::{BatchOp, Engine, EngineIter, EngineKind, Family, KeyRange};
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
pub enum Probe {
    /// Nothing there, or an empty directory: a new store may be created.
    Vacant,
    /// A RocksDB database with these column families.
    Database(Vec<String>),
}

/// Looks at `path` without changing anything.
///
/// # Errors
/// [`Error::NotAStore`] for a file, or a non-empty directory with no RocksDB `CURRENT`
/// file; [`Error::Storage`] when the database's column families cannot be listed.
pub fn probe(path: &Path) -> Result<Probe> {
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
    if !path.join("CURRENT").exists() {
        let mut entries = std::fs::read_dir(path).map_err(|e| Error::io(path, e))?;
        if entries.next().is_none() {
            return Ok(Probe::Vacant);
        }
        return Err(Error::NotAStore {
            path: path.to_path_buf(),
            reason: "the directory has files but no RocksDB database (no CURRENT file)".into(),
        });
    }
    let families = DB::list_cf(&Options::default(), path).map_err(|e| map_err(path, e))?;
    Ok(Probe::Database(families))
}

/// Committed data in a RocksDB database.
pub struct RocksEngine {
    db: Arc<DB>,
    path: PathBuf,
    families: Vec<String>,
    present: [bool; 4],
}

impl RocksEngine {
    /// Opens (creating if needed) the database at `path` with the column families it
    /// already has plus those in `wanted`.
    pub fn open(path: &Path, wanted: &[Family], opts: &RocksOptions) -> Result<RocksEngine> {
        std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
        Self::open_with(path, wanted, opts, false)
    }

    /// Opens an existing database read-only, with all its column families. Takes no lock,
    /// so it works while another process has the store open (`kstate inspect`), and
    /// changes nothing on disk.
    pub fn open_read_only(path: &Path, opts: &RocksOptions) -> Result<RocksEngine> {
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
        wanted: &[Family],
        opts: &RocksOptions,
        read_only: bool,
    ) -> Result<RocksEngine> {
        let existing = match probe(path)? {
            Probe::Vacant => Vec::new(),
            Probe::Database(f) => f,
        };
        let cache = Cache::new_lru_cache(opts.block_cache_bytes);
        let cf_opts = column_family_options(opts, &cache);
        let mut names: Vec<String> = existing;
        for f in wanted.iter().chain(std::iter::once(&Family::Plain)) {
            if !names.iter().any(|n| n == f.cf_name()) {
                names.push(f.cf_name().to_string());
            }
        }
        let descriptors = names
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
        // Spill and data column families share one WAL; cap it so a long-idle family
        // cannot pin gigabytes of log.
        db_opts.set_max_total_wal_size(256 << 20);
        let db = if read_only {
            DB::open_cf_descriptors_read_only(&db_opts, path, descriptors, false)
        } else {
            DB::open_cf_descriptors(&db_opts, path, descriptors)
        }
        .map_err(|e| map_err(path, e))?;
        let mut present = [false; 4];
        for f in Family::ALL {
            present[f.index()] = names.iter().any(|n| n == f.cf_name());
        }
        Ok(RocksEngine {
            db: Arc::new(db),
            path: path.to_path_buf(),
            families: names,
            present,
        })
    }

    /// True when the database has `family`.
    pub fn has_family(&self, family: Family) -> bool {
        self.present[family.index()]
    }

    fn cf(&self, family: Family) -> Result<&rocksdb::ColumnFamily> {
        if !self.present[family.index()] {
            return Err(Error::Internal(format!(
                "column family {} was not opened",
                family.cf_name()
            )));
        }
        self.db
            .cf_handle(family.cf_name())
            .ok_or_else(|| Error::Internal(format!("column family {} vanished", family.cf_name())))
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
/// when another process (or another handle in this one) has the database open.
fn map_err(path: &Path, e: rocksdb::Error) -> Error {
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
    fn kind(&self) -> EngineKind {
        EngineKind::RocksDb
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
        let mut ro = ReadOptions::default();
        if let Some(lo) = range.inclusive_lower() {
            ro.set_iterate_lower_bound(lo);
        }
        if let Some(hi) = range.exclusive_upper() {
            ro.set_iterate_upper_bound(hi);
        }
        let db = Arc::clone(&self.db);
        let raw = db.raw_iterator_cf_opt(self.cf(family)?, ro);
        // SAFETY: `raw` borrows the `DB` inside the `Arc` we move into the same struct. The
        // `DB` lives on the heap, so moving the `Arc` does not move it, and `RocksIter`
        // declares `raw` before `_db`, so the iterator is dropped before that `Arc`. The
        // `'static` lifetime is therefore never observed beyond the database's life.
        let raw: DBRawIteratorWithThreadMode<'static, DB> = unsafe { std::mem::transmute(raw) };
        Ok(Box::new(RocksIter {
            raw,
            _db: db,
            reverse,
            started: range.is_empty(),
            done: range.is_empty(),
            path: self.path.clone(),
        }))
    }

    fn approximate_count(&self, family: Family) -> Result<u64> {
        let cf = self.cf(family)?;
        self.db
            .property_int_value_cf(cf, "rocksdb.estimate-num-keys")
            .map(|v| v.unwrap_or(0))
            .map_err(|e| map_err(&self.path, e))
    }

    fn family_names(&self) -> Vec<String> {
        self.families.clone()
    }

    fn compact(&self, family: Family) -> Result<()> {
        let cf = self.cf(family)?;
        self.db.flush_cf(cf).map_err(|e| map_err(&self.path, e))?;
        self.db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }
}

/// A RocksDB iterator that owns a reference to its database. The iterator pins the
/// database state of its creation (RocksDB's implicit snapshot).
struct RocksIter {
    // Field order is load-bearing: `raw` must drop before `_db` (see `RocksEngine::iter`).
    raw: DBRawIteratorWithThreadMode<'static, DB>,
    _db: Arc<DB>,
    reverse: bool,
    started: bool,
    done: bool,
    path: PathBuf,
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

    #[test]
    fn write_iterate_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        {
            let e = RocksEngine::open(
                &path,
                &[Family::Timestamped, Family::Meta],
                &RocksOptions::default(),
            )
            .unwrap();
            e.write(
                &[
                    BatchOp::Put(Family::Timestamped, b"a", b"1"),
                    BatchOp::Put(Family::Timestamped, b"b", b"2"),
                    BatchOp::Put(Family::Timestamped, b"c", b"3"),
                ],
                true,
            )
            .unwrap();
            let mut it = e
                .iter(
                    Family::Timestamped,
                    &KeyRange::inclusive(Some(b"b"), None),
                    true,
                )
                .unwrap();
            e.write(&[BatchOp::Delete(Family::Timestamped, b"c")], false)
                .unwrap();
            assert_eq!(it.next_entry().unwrap().unwrap().0, b"c".to_vec());
            assert_eq!(it.next_entry().unwrap().unwrap().0, b"b".to_vec());
            assert!(it.next_entry().unwrap().is_none());
            assert!(it.next_entry().unwrap().is_none());
            drop(e);
            // The iterator keeps the database alive after the engine is gone.
        }
        let e = RocksEngine::open(&path, &[], &RocksOptions::default()).unwrap();
        assert_eq!(
            e.get(Family::Timestamped, b"a").unwrap(),
            Some(b"1".to_vec())
        );
        assert_eq!(e.get(Family::Timestamped, b"c").unwrap(), None);
        assert!(e
            .family_names()
            .contains(&"keyValueWithTimestamp".to_string()));
        assert!(e.get(Family::Spill, b"x").is_err());
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
    fn probe_recognises_non_stores() {
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
    }
}
