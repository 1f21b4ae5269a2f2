//! The RocksDB engine. Families are column families named as in Kafka's RocksDB stores;
//! every batch is one RocksDB `WriteBatch` (atomic, through the WAL), and snapshots are
//! RocksDB snapshots that own a reference to their database.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use rocksdb::statistics::Ticker;
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompactionStyle, DBCompressionType,
    DBRawIteratorWithThreadMode, DBRecoveryMode, Options, ReadOptions, SnapshotWithThreadMode,
    WriteBatch, WriteBufferManager, WriteOptions, DB,
};

use super::{BatchOp, Engine, EngineIter, Family, KeyFilter, KeyRange, Registry, Snapshot};
use crate::sync::MutexExt;
use crate::{Error, Result};

/// Tuning knobs of the RocksDB engine. Defaults follow Kafka Streams' `RocksDBStore`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RocksOptions {
    /// LRU block cache size in bytes (Kafka: 50 MiB). Each store (engine) has its own cache
    /// of this size, shared by its column families, unless [`RocksOptions::bounded_memory`]
    /// is set, which replaces it. Window and session stores read it per live segment, as
    /// Kafka's stores (a RocksDB instance and cache per segment): their one cache holds
    /// this size times the segments live at their retention and segment interval, at most
    /// three.
    pub block_cache_bytes: usize,
    /// Memtable size per column family in bytes (Kafka: 16 MiB). The data family of a
    /// window or session store gets it per live segment, as the block cache (at most three
    /// times).
    pub write_buffer_bytes: usize,
    /// Memtables per column family before writes stall (Kafka: 3).
    pub max_write_buffers: i32,
    /// A full-key bloom filter of 10 bits per key in every SST file (default on, as in
    /// Kafka). Off saves the filter's memory and disk at the cost of a disk read per
    /// point lookup of an absent key.
    pub bloom_filter: bool,
    /// Collect RocksDB statistics (tickers such as `rocksdb.bytes.written`); default off,
    /// as in Kafka unless `metrics.recording.level=DEBUG`. Costs a few percent of CPU.
    pub statistics: bool,
    /// A memory budget shared by every store of the process opened with the same one
    /// (Kafka's `BoundedMemoryRocksDBConfig` pattern); `None` (default) for a cache per
    /// store and unbounded memtables.
    pub bounded_memory: Option<BoundedMemory>,
}

impl Default for RocksOptions {
    fn default() -> Self {
        RocksOptions {
            block_cache_bytes: 50 << 20,
            write_buffer_bytes: 16 << 20,
            max_write_buffers: 3,
            bloom_filter: true,
            statistics: false,
            bounded_memory: None,
        }
    }
}

impl RocksOptions {
    /// Checks the values that RocksDB would misuse or reject.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the field: a zero write buffer size, fewer than
    /// one write buffer, or a bounded memory budget that [`BoundedMemory::validate`]
    /// refuses.
    pub fn validate(&self) -> Result<()> {
        if self.write_buffer_bytes == 0 {
            return Err(Error::InvalidArgument(
                "write_buffer_bytes must be positive".into(),
            ));
        }
        if self.max_write_buffers < 1 {
            return Err(Error::InvalidArgument(format!(
                "max_write_buffers must be at least 1, not {}",
                self.max_write_buffers
            )));
        }
        if let Some(b) = &self.bounded_memory {
            b.validate()?;
        }
        Ok(())
    }
}

/// A process-wide memory budget: one LRU block cache of `total_bytes` and a RocksDB
/// `WriteBufferManager` that charges every memtable to that cache and flushes once the
/// memtables reach `memtable_bytes`. Index and filter blocks are cached (and charged) too.
/// Every store opened with an equal budget shares the same cache and manager, whatever
/// its path; the budget is freed when its last store closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BoundedMemory {
    /// Capacity of the shared block cache, memtables included; > 0.
    pub total_bytes: usize,
    /// Part of `total_bytes` memtables may use before RocksDB flushes them; > 0 and
    /// < `total_bytes`.
    pub memtable_bytes: usize,
}

impl BoundedMemory {
    /// Checks the budget.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `total_bytes` is zero or `memtable_bytes` is not
    /// strictly between zero and `total_bytes`.
    pub fn validate(&self) -> Result<()> {
        if self.total_bytes == 0 {
            return Err(Error::InvalidArgument(
                "bounded memory total_bytes must be positive".into(),
            ));
        }
        if self.memtable_bytes == 0 || self.memtable_bytes >= self.total_bytes {
            return Err(Error::InvalidArgument(format!(
                "bounded memory memtable_bytes must be positive and less than total_bytes \
                 ({}), not {}",
                self.total_bytes, self.memtable_bytes
            )));
        }
        Ok(())
    }
}

/// The objects of one [`BoundedMemory`] budget, shared by its stores.
pub(crate) struct SharedBudget {
    cache: Cache,
    write_buffers: WriteBufferManager,
    /// The writable stores drawing on the budget, for [`SharedBudget::wrote`].
    members: Mutex<Members>,
}

/// The writable stores of a budget and when each last wrote.
#[derive(Default)]
struct Members {
    /// Ticks at every write of a member: orders the members by their last write.
    clock: u64,
    /// Identifies the next member.
    next_id: u64,
    list: Vec<Member>,
}

/// One writable store of a budget.
struct Member {
    id: u64,
    /// Weak, so that the registry never keeps a database open: see [`RocksEngine`]'s `Drop`.
    db: Weak<DB>,
    families: Vec<String>,
    /// `Members::clock` at its last write.
    last_write: u64,
    /// Written since the budget last flushed it.
    dirty: bool,
}

impl SharedBudget {
    fn join(&self, db: &Arc<DB>, families: &[String]) -> u64 {
        let mut m = self.members.lock_recover();
        let id = m.next_id;
        m.next_id += 1;
        m.list.push(Member {
            id,
            db: Arc::downgrade(db),
            families: families.to_vec(),
            last_write: 0,
            dirty: false,
        });
        id
    }

    fn leave(&self, id: u64) {
        self.members.lock_recover().list.retain(|m| m.id != id);
    }

    /// Called after every write of member `id`. RocksDB's write-buffer manager makes only
    /// the store that is writing flush once the memtables pass the budget: a store that
    /// stopped writing keeps its memtables (at least one 1 MiB arena block each) however
    /// far the sum is past the budget. Kafka's stores flush at every commit, so theirs are
    /// empty; kstate's commits go to the write-ahead log and stay in memtables. Past the
    /// budget, each write therefore also asks the member that has gone longest without
    /// writing (and wrote since its last such flush) to flush, in the background: 200
    /// stores of 1.1 MB each under a 64 MiB budget held 234 MB of memtables without it.
    fn wrote(&self, id: u64) {
        let mut m = self.members.lock_recover();
        m.clock += 1;
        let now = m.clock;
        if let Some(me) = m.list.iter_mut().find(|x| x.id == id) {
            me.last_write = now;
            me.dirty = true;
        }
        if self.write_buffers.get_usage() <= self.write_buffers.get_buffer_size() {
            return;
        }
        let Some(idle) = m
            .list
            .iter_mut()
            .filter(|x| x.dirty && x.id != id)
            .min_by_key(|x| x.last_write)
        else {
            return;
        };
        idle.dirty = false;
        // Upgraded and released under the lock: a member's `Drop` leaves under the same
        // lock, so no database outlives its engine here.
        if let Some(db) = idle.db.upgrade() {
            // A failed flush loses nothing (the data is in the memtables and, unless
            // written for a restore, in the log); the store's own writes report its state.
            let _ = flush_families(&db, &idle.families, false);
        }
    }
}

/// Budgets in use, by value: a store joins the live budget equal to its own. Entries are
/// weak so that a budget dies with its last store (the entry is replaced on next use).
static BUDGETS: LazyLock<Mutex<HashMap<BoundedMemory, Weak<SharedBudget>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The live budget equal to `bounded`, created if none is.
pub(crate) fn shared_budget(bounded: &BoundedMemory) -> Arc<SharedBudget> {
    let mut budgets = BUDGETS.lock_recover();
    if let Some(live) = budgets.get(bounded).and_then(Weak::upgrade) {
        return live;
    }
    budgets.retain(|_, w| w.strong_count() > 0);
    let cache = Cache::new_lru_cache(bounded.total_bytes);
    // allow_stall false, as Kafka's example: the manager flushes, it never blocks writers.
    let write_buffers = WriteBufferManager::new_write_buffer_manager_with_cache(
        bounded.memtable_bytes,
        false,
        cache.clone(),
    );
    let budget = Arc::new(SharedBudget {
        cache,
        write_buffers,
        members: Mutex::new(Members::default()),
    });
    budgets.insert(*bounded, Arc::downgrade(&budget));
    budget
}

/// Block-cache properties: they describe the one cache all families of an engine share,
/// so they are read once instead of summed over families.
const CACHE_PROPERTIES: [&str; 3] = [
    "rocksdb.block-cache-capacity",
    "rocksdb.block-cache-usage",
    "rocksdb.block-cache-pinned-usage",
];

/// RocksDB statistics tickers readable through [`Engine::property`] by name when
/// [`RocksOptions::statistics`] is on.
const TICKERS: [(&str, Ticker); 4] = [
    ("rocksdb.bytes.written", Ticker::BytesWritten),
    ("rocksdb.bytes.read", Ticker::BytesRead),
    ("rocksdb.flush.write.bytes", Ticker::FlushWriteBytes),
    ("rocksdb.number.keys.written", Ticker::NumberKeysWritten),
];

/// What is found at a path before anything is opened or created there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Nothing there, or an empty directory: a new store may be created.
    Vacant,
    /// A RocksDB database with these column families.
    Database(Vec<String>),
}

/// The table files (`*.sst`) directly in the database directory `dir`.
pub(crate) fn table_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry.file_name().to_string_lossy().ends_with(".sst") {
            out.push(entry.path());
        }
    }
    Ok(out)
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
    // Check CURRENT ourselves: a clear message beats RocksDB's.
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
    let families = super::families::list(path)?;
    Ok(Probe::Database(families))
}

/// The process that holds RocksDB's `LOCK` on the database at `path` (has it open for
/// writing: Kafka Streams, another kstate, any RocksDB program, this process included),
/// found without taking the lock or changing any file; `None` when nobody holds it or
/// there is no `LOCK`.
///
/// RocksDB takes a POSIX record lock on `LOCK` (`fcntl(F_SETLK)`, from Java too), and
/// `fcntl(F_GETLK)` names the process holding a conflicting one. It cannot see a lock of
/// this process, though, and closing any descriptor on `LOCK` drops every record lock this
/// process holds on it (a Kafka store open in the same JVM would silently lose its lock):
/// this process's own lock is therefore looked up in `/proc/locks` first (Linux), by device
/// and inode, without opening `LOCK`. A writable open must be refused on this before it starts,
/// since RocksDB rotates the database's `LOG` before it finds `LOCK` taken.
///
/// # Errors
/// [`Error::Io`] when `LOCK` exists but cannot be read or queried.
pub(crate) fn lock_holder(path: &Path) -> Result<Option<i32>> {
    use std::os::fd::AsRawFd;
    let lock = path.join("LOCK");
    let meta = match std::fs::metadata(&lock) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&lock, e)),
    };
    let this = std::process::id() as i32;
    if locked_by(this, &meta) {
        return Ok(Some(this));
    }
    let file = std::fs::File::open(&lock).map_err(|e| Error::io(&lock, e))?;
    // SAFETY: `flock` is a plain C struct for which all-zero bytes are a valid value.
    let mut query: libc::flock = unsafe { std::mem::zeroed() };
    query.l_type = libc::F_WRLCK as libc::c_short;
    query.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: `file` is open for the duration of the call and `query` is a valid `flock`
    // the kernel reads and overwrites; F_GETLK takes no lock.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut query) };
    if rc != 0 {
        return Err(Error::io(&lock, std::io::Error::last_os_error()));
    }
    Ok((query.l_type != libc::F_UNLCK as libc::c_short).then_some(query.l_pid))
}

/// Whether process `pid` holds a record lock on the file `meta` describes, by
/// `/proc/locks` (Linux only; elsewhere `false`).
#[cfg(target_os = "linux")]
fn locked_by(pid: i32, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let file_id = format!(
        "{:02x}:{:02x}:{}",
        libc::major(meta.dev()),
        libc::minor(meta.dev()),
        meta.ino()
    );
    std::fs::read_to_string("/proc/locks").is_ok_and(|locks| {
        locks
            .lines()
            .any(|l| record_lock_on(l, &file_id) == Some(pid))
    })
}

#[cfg(not(target_os = "linux"))]
fn locked_by(_pid: i32, _meta: &std::fs::Metadata) -> bool {
    false
}

/// The pid of a `/proc/locks` line (`1: POSIX  ADVISORY  WRITE 4711 08:01:123 0 EOF`)
/// holding a record lock on the file `file_id` (`major:minor:inode`, as the kernel prints
/// it); `None` for other lines and for waiters (`->`).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn record_lock_on(line: &str, file_id: &str) -> Option<i32> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [_, kind, _, _, pid, file, ..] = fields.as_slice() else {
        return None;
    };
    if !matches!(*kind, "POSIX" | "OFDLCK") || file != &file_id {
        return None;
    }
    pid.parse().ok()
}

/// Committed data in a RocksDB database.
pub(crate) struct RocksEngine {
    db: Arc<DB>,
    path: PathBuf,
    registry: Registry,
    /// The options the database was opened with: they own its statistics, if enabled.
    db_opts: Options,
    statistics: bool,
    /// The shared budget this engine draws on, kept alive while the engine lives (the
    /// database's options hold their own references to the cache and manager too).
    _budget: Option<Arc<SharedBudget>>,
    /// This engine's entry among the budget's members (writable engines with a budget).
    member: Option<u64>,
    /// True while batches written without the WAL may sit in memtables: the next logged
    /// write flushes them first. A mutex, not an atomic, so that a logged write cannot
    /// slip past a flush in progress.
    unlogged: Mutex<bool>,
}

impl RocksEngine {
    /// Opens (creating if needed) the database at `path` with the column families it
    /// already has plus those in `wanted`.
    pub(crate) fn open(path: &Path, wanted: &[&str], opts: &RocksOptions) -> Result<RocksEngine> {
        Self::open_sized(path, wanted, opts, &[])
    }

    /// [`RocksEngine::open`], with the memtable size of the families named in `memtables`
    /// set apart from `opts.write_buffer_bytes` (a segmented store's data family, see
    /// [`crate::store::segmented`]).
    pub(crate) fn open_sized(
        path: &Path,
        wanted: &[&str],
        opts: &RocksOptions,
        memtables: &[(&str, usize)],
    ) -> Result<RocksEngine> {
        std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
        Self::open_with(
            path,
            wanted,
            opts,
            memtables,
            Access::ReadWrite(Wals::Verify),
        )
    }

    /// [`RocksEngine::open`] of an existing Kafka Streams store that kstate adopts in place:
    /// without RocksDB's `track_and_verify_wals`, which refuses an existing database without
    /// a WAL file. Kafka's stores write without the WAL, so a missing WAL file loses nothing
    /// of theirs, and Kafka's RocksDB (which does not set the option) opens such a store: a
    /// store SIGKILLed while RocksDB was creating it has `CURRENT` and a manifest but no
    /// WAL yet (`RealBrokerRoundTripTest` met a segment in that state). The store is kstate's
    /// once adopted, and every later open verifies its WALs again.
    pub(crate) fn open_foreign(
        path: &Path,
        wanted: &[&str],
        opts: &RocksOptions,
    ) -> Result<RocksEngine> {
        Self::open_with(path, wanted, opts, &[], Access::ReadWrite(Wals::Foreign))
    }

    /// Opens an existing database read-only, with all its column families. Takes no lock,
    /// so it works while another process has the store open (`kstate inspect`), and writes
    /// nothing into the directory: no file appears or changes, RocksDB's `LOG` included
    /// (a read-only RocksDB creates no info log of its own; `tests/cli_foreign.rs` checks
    /// every byte of Kafka's stores). The one open to use on a directory kstate does not own.
    pub(crate) fn open_read_only(path: &Path, opts: &RocksOptions) -> Result<RocksEngine> {
        Self::open_read_only_with(path, opts, Wals::Verify)
    }

    /// [`RocksEngine::open_read_only`] of a Kafka Streams store or segment, which may have no
    /// WAL file (see [`RocksEngine::open_foreign`]).
    pub(crate) fn open_read_only_foreign(path: &Path, opts: &RocksOptions) -> Result<RocksEngine> {
        Self::open_read_only_with(path, opts, Wals::Foreign)
    }

    fn open_read_only_with(path: &Path, opts: &RocksOptions, wals: Wals) -> Result<RocksEngine> {
        if probe(path)? == Probe::Vacant {
            return Err(Error::NotAStore {
                path: path.to_path_buf(),
                reason: "no database there".into(),
            });
        }
        // A read-only open reads the manifest and the WALs it lists while a live writer may
        // be rotating and deleting them; such a race fails the open, so a few retries tell
        // it apart from a store that is really damaged (which fails every time).
        let mut attempt = 0;
        loop {
            match Self::open_with(path, &[], opts, &[], Access::ReadOnly(wals)) {
                Err(Error::Storage(_) | Error::Corruption(_) | Error::Io { .. }) if attempt < 4 => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(25 * attempt));
                }
                result => return result,
            }
        }
    }

    fn open_with(
        path: &Path,
        wanted: &[&str],
        opts: &RocksOptions,
        memtables: &[(&str, usize)],
        access: Access,
    ) -> Result<RocksEngine> {
        let (read_only, wals) = match access {
            Access::ReadOnly(w) => (true, w),
            Access::ReadWrite(w) => (false, w),
        };
        let existing = match probe(path)? {
            Probe::Vacant => Vec::new(),
            Probe::Database(f) => f,
        };
        let mut wanted = wanted.to_vec();
        wanted.push(super::names::PLAIN);
        let registry = Registry::new(&existing, &wanted)?;
        opts.validate()?;
        let budget = opts.bounded_memory.as_ref().map(shared_budget);
        let cache = match &budget {
            Some(b) => b.cache.clone(),
            None => Cache::new_lru_cache(opts.block_cache_bytes),
        };
        let cf_opts = column_family_options(opts, &cache, budget.is_some());
        let descriptors = registry.names().iter().map(|n| {
            let mut o = cf_opts.clone();
            if let Some((_, bytes)) = memtables.iter().find(|(f, _)| *f == n.as_str()) {
                o.set_write_buffer_size(*bytes);
            }
            if n == super::names::META {
                small_family(&mut o);
            }
            ColumnFamilyDescriptor::new(n, o)
        });
        let mut db_opts = cf_opts.clone();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.set_error_if_exists(false);
        db_opts.set_log_level(rocksdb::LogLevel::Error);
        // No size limit on `LOG` (RocksDB's default, as Kafka's stores): at error level it
        // grows by a few lines an open, and a limit makes RocksDB keep every open's header
        // (its options) in memory to start the next file with: 80 KiB a store of 4 families
        // (a Rust run of 200 empty stores). Each open starts a new `LOG`; 2 old ones are kept.
        db_opts.set_keep_log_file_num(2);
        db_opts.increase_parallelism(2);
        db_opts.set_allow_mmap_reads(mmap_reads(
            std::env::var_os(MMAP_READS_ENV).as_deref(),
            budget.is_some(),
        )?);
        db_opts.set_max_file_opening_threads(file_opening_threads(
            count_table_files(path),
            std::thread::available_parallelism().map_or(1, usize::from),
        ));
        // A missing or truncated WAL in the middle of the log is corruption, not a silently
        // shorter history: the manifest tracks every WAL and open verifies them.
        db_opts.set_track_and_verify_wals_in_manifest(true);
        db_opts.set_wal_recovery_mode(DBRecoveryMode::PointInTime);
        // All families share one WAL; cap it so that a rarely written family (kstate_meta
        // holds a few records) is flushed instead of pinning every log file forever.
        db_opts.set_max_total_wal_size(64 << 20);
        // Every flush covers all families up to one sequence number (as Kafka's stores
        // set it): batches written without the WAL (restores) carry their commit record in
        // the meta family, and must reach disk together with it or not at all.
        db_opts.set_atomic_flush(true);
        if let Some(b) = &budget {
            db_opts.set_write_buffer_manager(&b.write_buffers);
        }
        if opts.statistics {
            db_opts.enable_statistics();
        }
        let open_opts =
            recovery_keeps_memtables(&mut db_opts, wals).map_err(|e| map_err(path, e))?;
        let db = if read_only {
            DB::open_cf_descriptors_read_only(&open_opts, path, descriptors, false)
        } else {
            DB::open_cf_descriptors(&open_opts, path, descriptors)
        }
        .map_err(|e| map_err(path, e))?;
        let db = Arc::new(db);
        let member = match &budget {
            Some(b) if !read_only => Some(b.join(&db, registry.names())),
            _ => None,
        };
        Ok(RocksEngine {
            db,
            member,
            path: path.to_path_buf(),
            registry,
            db_opts,
            statistics: opts.statistics,
            _budget: budget,
            unlogged: Mutex::new(false),
        })
    }

    /// Where the staged file `name` lives: the database directory (RocksDB ignores files
    /// whose names it did not make, and ingestion then only links the file).
    fn staged_path(&self, name: &str) -> Result<PathBuf> {
        if !is_staged_name(name) {
            return Err(Error::Internal(format!("{name} is not a staged file name")));
        }
        Ok(self.path.join(name))
    }

    /// Writes a RocksDB checkpoint of the database into the new directory `dir`: table
    /// files hard-linked, memtables flushed first, so that it opens without a WAL to replay.
    pub(crate) fn checkpoint(&self, dir: &Path) -> Result<()> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)
            .and_then(|c| c.create_checkpoint(dir))
            .map_err(|e| map_err(dir, e))
    }

    /// Flushes the memtables of every family (atomically: see `set_atomic_flush`) and waits.
    fn flush_all(&self) -> Result<()> {
        flush_families(&self.db, self.registry.names(), true).map_err(|e| map_err(&self.path, e))
    }

    /// Tells the budget, if any, that this engine wrote (see [`SharedBudget::wrote`]).
    fn wrote(&self) {
        if let (Some(b), Some(id)) = (&self._budget, self.member) {
            b.wrote(id);
        }
    }

    fn batch(&self, ops: &[BatchOp<'_>]) -> Result<WriteBatch> {
        let mut batch = WriteBatch::default();
        for op in ops {
            match *op {
                BatchOp::Put(f, k, v) => batch.put_cf(self.cf(f)?, k, v),
                BatchOp::Delete(f, k) => batch.delete_cf(self.cf(f)?, k),
                BatchOp::DeleteRange(f, from, to) => batch.delete_range_cf(self.cf(f)?, from, to),
            }
        }
        Ok(batch)
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

/// The block-based table `format_version` kstate writes: the newest one Kafka Streams 4.4's
/// RocksDB (rocksdbjni 10.1.3) reads, so that a store handed back to Kafka (`kstate export
/// --to kafka`) keeps its table files, and Kafka's RocksDB can open a kstate store at all. RocksDB 11.8's default, 7, only changes how custom
/// compression is recorded (kstate compresses nothing) and needs RocksDB 10.4 to read;
/// tables of either version stay readable by kstate.
pub(crate) const TABLE_FORMAT_VERSION: u32 = super::kafka_layout::KAFKA_TABLE_FORMAT_VERSION;

fn column_family_options(opts: &RocksOptions, cache: &Cache, bounded: bool) -> Options {
    let mut table = BlockBasedOptions::default();
    table.set_format_version(TABLE_FORMAT_VERSION as i32);
    table.set_block_cache(cache);
    table.set_block_size(4096);
    if opts.bloom_filter {
        table.set_bloom_filter(10.0, false);
    }
    if bounded {
        // As Kafka's BoundedMemoryRocksDBConfig: index and filter blocks live in (and are
        // charged to) the shared cache instead of unbounded table-reader memory.
        table.set_cache_index_and_filter_blocks(true);
        table.set_cache_index_and_filter_blocks_with_high_priority(true);
        table.set_pin_top_level_index_and_filter(true);
    }
    let mut o = Options::default();
    o.set_block_based_table_factory(&table);
    o.set_compression_type(DBCompressionType::None);
    o.set_write_buffer_size(opts.write_buffer_bytes);
    o.set_max_write_buffer_number(opts.max_write_buffers);
    if bounded {
        // Universal compaction, as Kafka's RocksDB stores: a shared budget flushes small
        // memtables often (the writing store, and idle ones, see `SharedBudget::wrote`).
        // Leveled compaction moves such flushes of ascending keys (a load, a changelog
        // restore) down whole, each a table file and a descriptor of its own, where
        // universal compaction merges them once there are more than 4 sorted runs: 800
        // stores of 10,000 entries held 17 descriptors each after loading instead of 11
        // (a Rust run of 200). Either style opens the other's files.
        o.set_compaction_style(DBCompactionStyle::Universal);
    }
    o
}

/// Flushes the memtables of the families `names` of `db` in one flush (atomic when the
/// database sets `atomic_flush`), waiting for it to finish or only scheduling it.
fn flush_families(
    db: &DB,
    names: &[String],
    wait: bool,
) -> std::result::Result<(), rocksdb::Error> {
    let cfs: Vec<&rocksdb::ColumnFamily> = names.iter().filter_map(|n| db.cf_handle(n)).collect();
    let mut fo = rocksdb::FlushOptions::default();
    fo.set_wait(wait);
    db.flush_cfs_opt(&cfs, &fo)
}

/// Options of `kstate_meta`, which holds a few small records (header, commit record,
/// offsets, status) rewritten by every commit and flushed with the data (atomic flush).
///
/// * Arena blocks of [`META_ARENA_BLOCK_BYTES`] instead of RocksDB's 1 MiB (the smaller of
///   1 MiB and an eighth of the memtable size): a memtable holding more than its 2 KiB
///   inline block takes a whole arena block, which a shared budget's write-buffer manager
///   charges in full (to its flush trigger and its cache) for a few hundred bytes.
/// * Level-0 compaction at every file instead of at 4: each flush of the data leaves a
///   tiny table file here, moved down whole where RocksDB can, and they piled up until a
///   compaction merged them (up to 7 per store in the test below, 2 with this). A store
///   reopened after its close's flush starts with such a compaction, in the background.
///   (At 2 files, 800 stores under a shared budget held 0.6 more descriptors each after
///   loading and 1.1 more after reopening than at 1.)
fn small_family(o: &mut Options) {
    o.set_compaction_style(DBCompactionStyle::Level);
    o.set_arena_block_size(META_ARENA_BLOCK_BYTES);
    o.set_level_zero_file_num_compaction_trigger(1);
}

/// Arena block size of `kstate_meta`'s memtables (see [`small_family`]).
const META_ARENA_BLOCK_BYTES: usize = 16 << 10;

/// `opts` with RocksDB's `avoid_flush_during_recovery` set: the memtables rebuilt from the
/// write-ahead log when a killed store reopens stay memtables, flushed later like any
/// other, instead of being written to level-0 files before the open returns. The log files
/// they came from stay alive (tracked in the manifest) until that flush, so a second kill
/// replays them again. Reopening a store killed with a 13 MB log took 72 ms, 36.5 ms with
/// it (Rust probe, 1M keys, best of 3; the flush was half the open).
///
/// Also `track_and_verify_wals`: each WAL rotated within a session starts with a record of
/// its predecessor (number, size, last sequence number), so recovery finds such a WAL
/// missing or cut short and stops replaying there (point-in-time recovery) instead of
/// replaying the later WALs over the hole; and an existing store with no WAL at all is
/// `CORRUPTION` (a store always has its current one). RocksDB 11.8 does not link the first
/// WAL of a session to the WALs its open replayed and kept, and
/// `track_and_verify_wals_in_manifest` tracks only synced WALs: kstate records the WALs
/// of each open itself and checks them at the next (`check_logs` in the transaction
/// layer).
///
/// rust-rocksdb 0.25 has no setter for either; RocksDB's own options-string parser applies
/// them to a copy of `opts`. The copy shares what `opts` holds by reference (block cache, table
/// factory, write buffer manager, statistics); kstate sets no callback (comparator, merge
/// operator, filter) whose Rust side the copy could outlive, and the engine keeps `opts`.
///
/// A Kafka Streams store being adopted ([`Wals::Foreign`]) gets `avoid_flush_during_recovery`
/// only: see [`RocksEngine::open_foreign`].
fn recovery_keeps_memtables(
    opts: &mut Options,
    wals: Wals,
) -> std::result::Result<Options, rocksdb::Error> {
    opts.get_options_from_string(match wals {
        Wals::Verify => "avoid_flush_during_recovery=true;track_and_verify_wals=true",
        Wals::Foreign => "avoid_flush_during_recovery=true",
    })
}

/// Whether an open verifies the database's WALs (kstate's stores) or not (Kafka's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wals {
    /// `track_and_verify_wals`: an existing database without a WAL file is `CORRUPTION`.
    Verify,
    /// A Kafka Streams database, written without the WAL: no WAL file is no loss.
    Foreign,
}

/// How [`RocksEngine::open_with`] opens a database.
#[derive(Clone, Copy, Debug)]
enum Access {
    ReadOnly(Wals),
    ReadWrite(Wals),
}

/// Bytes before the end of the data blocks that [`RocksEngine::stage_file`] reads ahead
/// too: the last data block (ingestion reads the last key) and any block still buffered
/// when the writer's size was taken.
const TAIL_MARGIN_BYTES: u64 = 16 << 10;

/// Asks the kernel to start reading a staged table file into the page cache, from `from` to
/// its end, and its first page; the reads run while the caller goes on.
///
/// RocksDB's SST writer drops the pages it writes from the page cache (it invalidates them
/// after every MiB and once the file is synced), and ingestion then opens the file and
/// reads its footer, properties, index and filter, and its first and last data blocks:
/// through memory maps, a synchronous disk read per page fault. Read ahead while the
/// ingestion intent is being recorded, they no longer stall it: a 100k-record restore went
/// from about 55 to 41 ms of wall time (Rust probe), its commit's wall time now equal to
/// its CPU time. Only a hint: a failure changes nothing but the speed.
fn read_ahead(path: &Path, from: u64) {
    #[cfg(target_os = "linux")]
    if let Ok(file) = std::fs::File::open(path) {
        use std::os::unix::io::AsRawFd;
        let fd = file.as_raw_fd();
        let from = libc::off_t::try_from(from).unwrap_or(0);
        // SAFETY: `fd` is open for both calls (`file` lives until the end of the block);
        // posix_fadvise reads nothing through pointers. A length of 0 means "to the end".
        unsafe {
            libc::posix_fadvise(fd, from, 0, libc::POSIX_FADV_WILLNEED);
            libc::posix_fadvise(fd, 0, 4096, libc::POSIX_FADV_WILLNEED);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (path, from);
}

/// How many entries ahead of the one being written [`RocksEngine::stage_file`] asks for.
const PREFETCH_AHEAD: usize = 8;

/// Starts loading the first cache lines of `bytes` (at most four) into the CPU cache.
///
/// A restore gathers its records in changelog order and writes them in key order, so each
/// record's first read is a cache miss (and a TLB miss) the SST writer would otherwise wait
/// for, in its key order check and its copy into the block: together a fifth of a
/// 100k-record restore's CPU in a profile. Prefetching took a tenth off the commit's CPU.
#[inline]
fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in bytes.chunks(64).take(4) {
        // SAFETY: a prefetch is only a hint to the cache: it cannot fault and changes nothing
        // the program observes; the address is inside `bytes` anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch(
                line.as_ptr().cast::<i8>(),
                std::arch::x86_64::_MM_HINT_T0,
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// The environment variable that turns memory-mapped reads of table files off (`false`) or
/// on (`true`, the default).
pub const MMAP_READS_ENV: &str = "KSTATE_MMAP_READS";

/// Whether table files are read through memory maps (RocksDB's `allow_mmap_reads`), from
/// the value of [`MMAP_READS_ENV`]: what it says, or else on without a shared budget
/// (`bounded`) and off with one.
///
/// kstate's table files are uncompressed (as Kafka's), so a mapped block is used where it
/// lies in the page cache: no `pread` copy into a heap buffer, and no block cache insert
/// and eviction per block read. Measured on a 1M-key store read through the 50 MiB cache
/// (most blocks outside it): a point read 8 -> 5 us, a range of 100 entries 50 -> 30-40 us
/// (raw RocksDB, 2-core VM). The cost: a disk error while reading a mapped page is a
/// `SIGBUS` for the process instead of an error result, and each open table file takes one
/// of the process's memory maps (`vm.max_map_count`).
///
/// Off under a shared budget, where reads go through the budget's cache as Kafka's
/// bounded stores' do: every mapped page a read or compaction touches counts in the
/// process's resident memory, outside the budget. 200 stores of 10,000 entries under a
/// 256 MiB budget held 1,233 KiB each with maps, 818 KiB without (a Rust run).
///
/// # Errors
/// [`Error::InvalidArgument`] for a value other than `true`/`false` (or `1`/`0`, `on`/`off`).
fn mmap_reads(setting: Option<&std::ffi::OsStr>, bounded: bool) -> Result<bool> {
    let Some(raw) = setting else {
        return Ok(!bounded);
    };
    match raw
        .to_str()
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        Some("true" | "1" | "on") => Ok(true),
        Some("false" | "0" | "off") => Ok(false),
        _ => Err(Error::InvalidArgument(format!(
            "{MMAP_READS_ENV} must be true or false, not {raw:?}"
        ))),
    }
}

/// Up to this many table files, an open loads them on the calling thread.
const SERIAL_TABLE_OPEN_LIMIT: usize = 64;

/// RocksDB's `max_file_opening_threads` for a store holding `table_files` SST files.
///
/// RocksDB loads the table files of every column family on open with that many threads, and
/// starts the extra threads for each family whatever its number of files (default 16: 15
/// threads created and joined per family, per open). For the few files of a typical Kafka
/// Streams task store that costs more than the loading: measured on 2 cores, a store of a
/// few files reopened after a kill took 26 ms of CPU with the default and 16 ms with one
/// thread, most of the difference in thread creation and the TLB flushes of unmapping their
/// stacks, which also stall every other thread of the process. Only stores with many files
/// (large ones, whose index and filter blocks take real reading) get parallel loading.
fn file_opening_threads(table_files: usize, cores: usize) -> i32 {
    if table_files <= SERIAL_TABLE_OPEN_LIMIT {
        1
    } else {
        i32::try_from(cores.clamp(1, 16)).unwrap_or(16)
    }
}

/// The number of SST files in a store directory (0 when it cannot be listed: the open then
/// reports what is wrong).
fn count_table_files(path: &Path) -> usize {
    std::fs::read_dir(path).map_or(0, |entries| {
        entries
            .filter_map(std::result::Result::ok)
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".sst")))
            .count()
    })
}

/// The number of a write-ahead log file, from its name (`<number>.log`).
fn log_number(name: &str) -> Option<u64> {
    name.strip_suffix(".log")
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))?
        .parse()
        .ok()
}

/// Names of files staged for ingestion: `kstate-restore-<n>.sst`.
fn is_staged_name(name: &str) -> bool {
    name.strip_prefix("kstate-restore-")
        .and_then(|rest| rest.strip_suffix(".sst"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Maps a RocksDB error to kstate's, recognising the lock-file conflict RocksDB reports
/// when another handle in this process has the database open.
pub(crate) fn map_err(path: &Path, e: rocksdb::Error) -> Error {
    map_message(path, e.into_string())
}

/// [`map_err`] for RocksDB's error message itself (from a call into its C API).
pub(crate) fn map_message(path: &Path, msg: String) -> Error {
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

/// Most write-ahead log files a clean close leaves instead of flushing (see
/// [`RocksEngine::persist_for_close`]): each open starts a new one and keeps those it
/// replayed, so a store closed without a flush holds one more at every reopen until a close
/// flushes.
const CLOSE_LOG_FILES: usize = 2;

/// Most write-ahead log bytes a clean close leaves instead of flushing (see
/// [`RocksEngine::persist_for_close`]).
const CLOSE_LOG_BYTES: u64 = 64 << 10;

impl RocksEngine {
    /// Whether the database's write-ahead log files are few and small enough to leave for
    /// the next open to replay (see [`RocksEngine::persist_for_close`]).
    fn log_is_small(&self) -> Result<bool> {
        let io = |source| Error::Io {
            path: self.path.clone(),
            source,
        };
        let (mut files, mut bytes) = (0, 0);
        for entry in std::fs::read_dir(&self.path).map_err(io)? {
            let entry = entry.map_err(io)?;
            if entry.file_name().to_str().and_then(log_number).is_some() {
                files += 1;
                bytes += entry.metadata().map_err(io)?.len();
            }
        }
        Ok(files <= CLOSE_LOG_FILES && bytes <= CLOSE_LOG_BYTES)
    }
}

impl Drop for RocksEngine {
    fn drop(&mut self) {
        // Before the database closes (the fields drop after this): once the entry is gone,
        // no budget flush holds the database, so it closes here, before the caller's
        // store lock is released.
        if let (Some(b), Some(id)) = (&self._budget, self.member) {
            b.leave(id);
        }
    }
}

impl Engine for RocksEngine {
    fn registry(&self) -> &Registry {
        &self.registry
    }

    fn can_checkpoint(&self) -> bool {
        true
    }

    fn checkpoint(&self, dir: &Path) -> Result<()> {
        RocksEngine::checkpoint(self, dir)
    }

    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let cf = self.cf(family)?;
        self.db
            .get_pinned_cf(cf, key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| map_err(&self.path, e))
    }

    fn write(&self, ops: &[BatchOp<'_>], sync: bool) -> Result<()> {
        let batch = self.batch(ops)?;
        {
            // A logged batch replayed from the WAL after a crash must not land on a state
            // missing the unlogged batches written before it: make those durable first.
            let mut unlogged = self.unlogged.lock_recover();
            if *unlogged {
                crate::failpoint::hit("flush-unlogged");
                self.flush_all()?;
                *unlogged = false;
            }
        }
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        self.db
            .write_opt(batch, &wo)
            .map_err(|e| map_err(&self.path, e))?;
        self.wrote();
        Ok(())
    }

    fn write_unlogged(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        let batch = self.batch(ops)?;
        // Set before the write: if the write fails after reaching the memtable, the flush
        // still happens.
        *self.unlogged.lock_recover() = true;
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        self.db
            .write_opt(batch, &wo)
            .map_err(|e| map_err(&self.path, e))?;
        self.wrote();
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        let mut unlogged = self.unlogged.lock_recover();
        self.flush_all()?;
        *unlogged = false;
        Ok(())
    }

    /// A sync of the write-ahead log instead of a flush when the log is small (at most
    /// [`CLOSE_LOG_FILES`] files of [`CLOSE_LOG_BYTES`] in all) and holds every unflushed
    /// batch (no restore batch written without it): as durable, and one or two syncs
    /// where a flush writes a table file per family and syncs it, the manifest and the
    /// directory. The next open replays that log into memtables (`avoid_flush_during_recovery`),
    /// a fraction of a millisecond at that size. Under a shared budget most stores have been
    /// flushed by it (see [`SharedBudget::wrote`]) and close with a log of a few records:
    /// 200 stores closed in 0.9 s instead of 2.3-2.6 s (a Rust run). A larger log is
    /// flushed, so that a reopened store does not hold it in memory again.
    fn persist_for_close(&self) -> Result<()> {
        {
            let unlogged = self.unlogged.lock_recover();
            if !*unlogged && self.log_is_small()? {
                return self.db.flush_wal(true).map_err(|e| map_err(&self.path, e));
            }
        }
        self.flush()
    }

    fn can_ingest(&self) -> bool {
        true
    }

    fn stage_file(
        &self,
        family: Family,
        name: &str,
        entries: &[(&[u8], Option<&[u8]>)],
    ) -> Result<()> {
        self.cf(family)?;
        let path = self.staged_path(name)?;
        let mut writer = rocksdb::SstFileWriter::create(&self.db_opts);
        let err = |e: rocksdb::Error| map_err(&path, e);
        writer.open(&path).map_err(err)?;
        for (i, (key, value)) in entries.iter().enumerate() {
            if let Some((k, v)) = entries.get(i + PREFETCH_AHEAD) {
                prefetch(k);
                if let Some(v) = v {
                    prefetch(v);
                }
            }
            match value {
                Some(v) => writer.put(key, v),
                None => writer.delete(key),
            }
            .map_err(err)?;
        }
        // What the data blocks take (less the last one, still buffered): after them come
        // the index, the filter and the footer.
        let data_bytes = writer.file_size();
        // `finish` syncs the file; the directory entry is synced here, so that a recorded
        // intent never names a file a power cut could lose.
        writer.finish().map_err(err)?;
        read_ahead(&path, data_bytes.saturating_sub(TAIL_MARGIN_BYTES));
        std::fs::File::open(&self.path)
            .and_then(|dir| dir.sync_all())
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })
    }

    fn is_staged(&self, name: &str) -> Result<bool> {
        Ok(self.staged_path(name)?.is_file())
    }

    fn ingest_file(&self, family: Family, name: &str) -> Result<()> {
        let path = self.staged_path(name)?;
        let mut opts = rocksdb::IngestExternalFileOptions::default();
        // The file is linked into the database and its staged name removed: no copy.
        opts.set_move_files(true);
        self.db
            .ingest_external_file_cf_opts(self.cf(family)?, &opts, vec![&path])
            .map_err(|e| map_err(&self.path, e))
    }

    fn clear_staged(&self) -> Result<()> {
        let io = |source| Error::Io {
            path: self.path.clone(),
            source,
        };
        for entry in std::fs::read_dir(&self.path).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            if name.to_str().is_some_and(is_staged_name) {
                std::fs::remove_file(entry.path()).map_err(io)?;
            }
        }
        Ok(())
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
        // Every family, in one atomic flush: with atomic flush RocksDB flushes only the
        // families it is given, and a restore batch written without the WAL must not reach
        // disk in its data family while its commit record stays in the meta family's
        // memtable (a kill then reopens at the previous offset over the restored data).
        self.flush()?;
        crate::failpoint::hit("compact-after-flush");
        // Its own flush, if writes came in meanwhile, covers every family too (RocksDB's
        // manual compaction flushes atomically under atomic flush).
        self.db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }

    fn logs(&self) -> Result<Option<super::Logs>> {
        let io = |source| Error::Io {
            path: self.path.clone(),
            source,
        };
        let mut live = Vec::new();
        for entry in std::fs::read_dir(&self.path).map_err(io)? {
            let name = entry.map_err(io)?.file_name();
            if let Some(n) = name.to_str().and_then(log_number) {
                live.push(n);
            }
        }
        live.sort_unstable();
        let needed_from = self
            .db
            .property_int_value("rocksdb.min-log-number-to-keep")
            .map_err(|e| map_err(&self.path, e))?
            .ok_or_else(|| Error::Storage("RocksDB has no min-log-number-to-keep".into()))?;
        Ok(Some(super::Logs { live, needed_from }))
    }

    fn property(&self, name: &str) -> Result<Option<u64>> {
        if let Some((_, ticker)) = TICKERS.iter().find(|(n, _)| *n == name) {
            return Ok(self
                .statistics
                .then(|| self.db_opts.get_ticker_count(*ticker)));
        }
        if CACHE_PROPERTIES.contains(&name) {
            return self
                .db
                .property_int_value(name)
                .map_err(|e| map_err(&self.path, e));
        }
        // Summed over the column families, as Kafka's getAggregatedLongProperty.
        let mut sum: Option<u64> = None;
        for family in self.registry.names() {
            let Some(cf) = self.db.cf_handle(family) else {
                continue;
            };
            let value = self
                .db
                .property_int_value_cf(cf, name)
                .map_err(|e| map_err(&self.path, e))?;
            if let Some(v) = value {
                sum = Some(sum.unwrap_or(0).saturating_add(v));
            }
        }
        Ok(sum)
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
    /// Positioned on an entry (by a seek) that the next call returns without moving.
    positioned: bool,
    /// The range the cursor was created with: seeks are clamped to it.
    range: KeyRange,
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
            positioned: false,
            range: range.clone(),
            path: path.to_path_buf(),
        }
    }
}

// SAFETY: a RocksDB iterator may be used from any thread as long as it is not used from two
// at once; `EngineIter::next_entry` takes `&mut self`, so access is exclusive.
unsafe impl Send for RocksIter {}

impl RocksIter {
    /// Moves to the next entry in the cursor's direction (the first one after creation, or
    /// the one a seek positioned on); false at the end, which also ends the cursor.
    fn step(&mut self) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        if !self.started {
            self.started = true;
            if self.reverse {
                self.raw.seek_to_last();
            } else {
                self.raw.seek_to_first();
            }
        } else if self.positioned {
            self.positioned = false;
        } else if self.reverse {
            self.raw.prev();
        } else {
            self.raw.next();
        }
        if self.raw.valid() {
            return Ok(true);
        }
        self.done = true;
        self.raw.status().map_err(|e| map_err(&self.path, e))?;
        Ok(false)
    }

    /// The next entry `keep` accepts (any, without it), copied.
    fn next_copied(&mut self, keep: Option<&KeyFilter>) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut entry = None;
        self.lend_next(keep, &mut |k, v| entry = Some((k.to_vec(), v.to_vec())))?;
        Ok(entry)
    }
}

impl EngineIter for RocksIter {
    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.next_copied(None)
    }

    fn next_entry_where(&mut self, keep: &KeyFilter) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.next_copied(Some(keep))
    }

    fn lend_next(
        &mut self,
        keep: Option<&KeyFilter>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool> {
        while self.step()? {
            let Some(key) = self.raw.key() else {
                return Err(Error::Internal(
                    "a valid RocksDB iterator has no key".into(),
                ));
            };
            // The key is read in place: a rejected entry is never copied.
            if keep.is_some_and(|keep| !keep(key).taken()) {
                continue;
            }
            let Some(value) = self.raw.value() else {
                return Err(Error::Internal(
                    "a valid RocksDB iterator has no value".into(),
                ));
            };
            visit(key, value);
            return Ok(true);
        }
        Ok(false)
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        if self.range.is_empty() {
            return Ok(());
        }
        // Targets outside the iterator's bounds are clamped here: RocksDB leaves a seek
        // past `iterate_upper_bound` (or a reverse seek below the lower one) undefined.
        if self.reverse {
            match self.range.exclusive_upper() {
                Some(hi) if target >= hi.as_slice() => self.raw.seek_to_last(),
                _ => self.raw.seek_for_prev(target),
            }
        } else {
            match self.range.inclusive_lower() {
                Some(lo) if target < lo.as_slice() => self.raw.seek_to_first(),
                _ => self.raw.seek(target),
            }
        }
        self.started = true;
        self.done = false;
        self.positioned = true;
        Ok(())
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

    /// The value RocksDB recorded for `name` in the newest OPTIONS file of a store.
    fn persisted_option(dir: &Path, name: &str) -> String {
        let number = |p: &Path| -> Option<u64> {
            let file = p.file_name()?.to_string_lossy().into_owned();
            file.strip_prefix("OPTIONS-")?.parse().ok()
        };
        let newest = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter_map(|p| number(&p).map(|n| (n, p)))
            .max()
            .unwrap()
            .1;
        let text = std::fs::read_to_string(newest).unwrap();
        let prefix = format!("{name}=");
        text.lines()
            .find_map(|l| l.trim().strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{name} not in the OPTIONS file"))
            .to_owned()
    }

    #[test]
    fn few_table_files_open_on_one_thread_many_on_several() {
        assert_eq!(file_opening_threads(0, 2), 1);
        assert_eq!(file_opening_threads(SERIAL_TABLE_OPEN_LIMIT, 8), 1);
        assert_eq!(file_opening_threads(SERIAL_TABLE_OPEN_LIMIT + 1, 8), 8);
        assert_eq!(file_opening_threads(10_000, 64), 16);
        assert_eq!(file_opening_threads(10_000, 0), 1);

        // What RocksDB was really given: a store with a few flushed files reopens with one
        // loading thread.
        let dir = tempfile::tempdir().unwrap();
        for round in 0..3u8 {
            let e = RocksEngine::open(dir.path(), &[], &RocksOptions::default()).unwrap();
            let plain = e.registry().require(names::PLAIN).unwrap();
            e.write(&[BatchOp::Put(plain, &[round], b"v")], true)
                .unwrap();
            e.flush().unwrap();
        }
        assert!(count_table_files(dir.path()) >= 3);
        let _e = RocksEngine::open(dir.path(), &[], &RocksOptions::default()).unwrap();
        assert_eq!(
            persisted_option(dir.path(), "max_file_opening_threads"),
            "1"
        );
        assert_eq!(count_table_files(&dir.path().join("missing")), 0);
    }

    /// Live table files of family `name`, once background compactions are done.
    fn settled_files(e: &RocksEngine, name: &str) -> usize {
        let mut wait = rocksdb::WaitForCompactOptions::default();
        wait.set_timeout(10_000_000);
        e.db.wait_for_compact(&wait).unwrap();
        let files = e.db.live_files().unwrap();
        files
            .iter()
            .filter(|f| f.column_family_name == name)
            .count()
    }

    #[test]
    fn the_meta_family_keeps_few_table_files_whatever_the_flushes() {
        let dir = tempfile::tempdir().unwrap();
        let e = RocksEngine::open(dir.path(), &[names::META], &RocksOptions::default()).unwrap();
        let (plain, meta) = (
            e.registry().require(names::PLAIN).unwrap(),
            e.registry().require(names::META).unwrap(),
        );
        let mut most = 0;
        for round in 0..12u8 {
            // As a commit: data, and the commit record rewritten in the meta family.
            e.write(
                &[
                    BatchOp::Put(plain, &[round], b"v"),
                    BatchOp::Put(meta, b"committed", &[round]),
                ],
                false,
            )
            .unwrap();
            e.flush().unwrap();
            most = most.max(settled_files(&e, names::META));
        }
        // RocksDB moves level-0 files down whole where it can (the same user key may end one
        // file and start the next), so files pile up until a compaction merges them: with
        // level-0 compaction at 4 files, up to 7 here (measured); at 2, 1 to 3; at 1, 1 to 2.
        assert!(most <= 2, "{most} table files");
        assert_eq!(e.get(meta, b"committed").unwrap(), Some(vec![11]));
        // Small arena blocks for the meta family only (RocksDB persists each family's
        // options in its own section of the OPTIONS file).
        let section = |cf: &str| family_options(dir.path(), cf);
        let arena = format!("arena_block_size={META_ARENA_BLOCK_BYTES}\n");
        assert!(section(names::META).contains(&arena));
        assert!(!section(names::PLAIN).contains(&arena));
    }

    /// The section of family `cf` in the newest (longest) OPTIONS file RocksDB persisted in
    /// `dir` (each family's options have a section of their own).
    fn family_options(dir: &Path, cf: &str) -> String {
        let options: String = std::fs::read_dir(dir)
            .unwrap()
            .map(|f| f.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("OPTIONS-")
            })
            .map(|p| std::fs::read_to_string(p).unwrap())
            .max_by_key(String::len)
            .unwrap();
        let start = options.find(&format!("[CFOptions \"{cf}\"]")).unwrap();
        let rest = &options[start..];
        let end = rest[1..].find("\n[").map_or(rest.len(), |i| i + 1);
        rest[..end].to_owned()
    }

    #[test]
    fn recovery_keeps_the_memtables_it_rebuilds() {
        // Set for the open through RocksDB's options-string parser (see
        // `recovery_keeps_memtables`): the options RocksDB persisted show it was applied,
        // with the rest of the engine's options (a sample) intact.
        let dir = tempfile::tempdir().unwrap();
        let e = RocksEngine::open(dir.path(), &[], &RocksOptions::default()).unwrap();
        let plain = e.registry().require(names::PLAIN).unwrap();
        e.write(&[BatchOp::Put(plain, b"k", b"v")], false).unwrap();
        assert_eq!(
            persisted_option(dir.path(), "avoid_flush_during_recovery"),
            "true"
        );
        assert_eq!(persisted_option(dir.path(), "atomic_flush"), "true");
        assert_eq!(
            persisted_option(dir.path(), "track_and_verify_wals_in_manifest"),
            "true"
        );
        assert_eq!(
            persisted_option(dir.path(), "track_and_verify_wals"),
            "true"
        );
        assert_eq!(e.get(plain, b"k").unwrap(), Some(b"v".to_vec()));
    }

    #[test]
    fn table_files_are_memory_mapped_without_a_budget_unless_the_environment_says_otherwise() {
        use std::ffi::OsStr;
        assert!(mmap_reads(None, false).unwrap());
        assert!(!mmap_reads(None, true).unwrap());
        for bounded in [false, true] {
            for on in ["true", "1", "ON", " on "] {
                assert!(mmap_reads(Some(OsStr::new(on)), bounded).unwrap(), "{on}");
            }
            for off in ["false", "0", "Off"] {
                assert!(
                    !mmap_reads(Some(OsStr::new(off)), bounded).unwrap(),
                    "{off}"
                );
            }
        }
        let e = mmap_reads(Some(OsStr::new("maybe")), false).unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::InvalidArgument);
        assert!(e.to_string().contains(MMAP_READS_ENV), "{e}");

        // What RocksDB was given, and reads still see every entry through the maps. The
        // test environment does not set the variable.
        assert!(std::env::var_os(MMAP_READS_ENV).is_none());
        let dir = tempfile::tempdir().unwrap();
        let e = RocksEngine::open(dir.path(), &[], &RocksOptions::default()).unwrap();
        let plain = e.registry().require(names::PLAIN).unwrap();
        for i in 0..1000u32 {
            e.write(&[BatchOp::Put(plain, &i.to_be_bytes(), &[7; 100])], false)
                .unwrap();
        }
        e.flush().unwrap();
        assert_eq!(persisted_option(dir.path(), "allow_mmap_reads"), "true");
        assert_eq!(
            e.get(plain, &999u32.to_be_bytes()).unwrap(),
            Some(vec![7; 100])
        );
        assert_eq!(e.get(plain, &1000u32.to_be_bytes()).unwrap(), None);
    }

    #[test]
    fn lock_holders_are_found_without_dropping_this_process_s_lock() {
        let line = "1: POSIX  ADVISORY  WRITE 4711 08:01:123 0 EOF";
        assert_eq!(record_lock_on(line, "08:01:123"), Some(4711));
        assert_eq!(record_lock_on(line, "08:02:123"), None);
        assert_eq!(record_lock_on(line, "08:01:12"), None);
        let flock = "2: FLOCK  ADVISORY  WRITE 99 08:01:123 0 EOF";
        assert_eq!(record_lock_on(flock, "08:01:123"), None);
        let waiter = "1: -> POSIX  ADVISORY  WRITE 5 08:01:123 0 EOF";
        assert_eq!(record_lock_on(waiter, "08:01:123"), None);
        // A database this process has open is reported with this process's id, and asking
        // twice shows the lock was not dropped by the first question; a closed one, or a
        // directory with no LOCK, with none.
        let dir = tempfile::tempdir().unwrap();
        let e = RocksEngine::open(dir.path(), &[], &RocksOptions::default()).unwrap();
        let this = Some(std::process::id() as i32);
        assert_eq!(lock_holder(dir.path()).unwrap(), this);
        assert_eq!(lock_holder(dir.path()).unwrap(), this);
        drop(e);
        assert_eq!(lock_holder(dir.path()).unwrap(), None);
        assert_eq!(lock_holder(&dir.path().join("none")).unwrap(), None);
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

    fn bounded(total: usize, memtables: usize) -> RocksOptions {
        RocksOptions {
            write_buffer_bytes: 4 << 20,
            bounded_memory: Some(BoundedMemory {
                total_bytes: total,
                memtable_bytes: memtables,
            }),
            ..RocksOptions::default()
        }
    }

    fn prop(e: &RocksEngine, name: &str) -> u64 {
        e.property(name).unwrap().unwrap()
    }

    #[test]
    fn stores_with_one_budget_share_one_cache_and_stay_within_it() {
        let dir = tempfile::tempdir().unwrap();
        // A budget no other test uses, so the registry's entry is this test's alone.
        let opts = bounded((24 << 20) + 4096, 8 << 20);
        let a = RocksEngine::open(&dir.path().join("a"), &[names::TIMESTAMPED], &opts).unwrap();
        let b = RocksEngine::open(&dir.path().join("b"), &[names::TIMESTAMPED], &opts).unwrap();
        let other = RocksEngine::open(
            &dir.path().join("c"),
            &[names::TIMESTAMPED],
            &bounded(16 << 20, 4 << 20),
        )
        .unwrap();
        let (ba, bb) = (a._budget.as_ref().unwrap(), b._budget.as_ref().unwrap());
        assert!(Arc::ptr_eq(ba, bb), "one budget object for equal budgets");
        assert!(!Arc::ptr_eq(ba, other._budget.as_ref().unwrap()));
        let total = (24 << 20) + 4096;
        assert_eq!(prop(&a, "rocksdb.block-cache-capacity"), total as u64);
        assert_eq!(prop(&b, "rocksdb.block-cache-capacity"), total as u64);
        assert_eq!(prop(&other, "rocksdb.block-cache-capacity"), 16 << 20);

        let value = vec![7u8; 1000];
        let mut max_cache = 0;
        let mut max_memtables = 0;
        for round in 0..64u32 {
            for e in [&a, &b] {
                let ts = e.registry().require(names::TIMESTAMPED).unwrap();
                let keys: Vec<Vec<u8>> = (0..512u32)
                    .map(|i| format!("{round:04}-{i:06}").into_bytes())
                    .collect();
                let ops: Vec<BatchOp<'_>> =
                    keys.iter().map(|k| BatchOp::Put(ts, k, &value)).collect();
                e.write(&ops, false).unwrap();
            }
            // The two stores report the one cache: the same usage at the same instant.
            // Background flushes move the usage between two reads, so look for an instant
            // at which nothing moved (two caches would keep differing).
            let mut ua = 0;
            let same = (0..200).any(|_| {
                ua = prop(&a, "rocksdb.block-cache-usage");
                let ub = prop(&b, "rocksdb.block-cache-usage");
                let direct = ba.cache.get_usage() as u64;
                let again = prop(&a, "rocksdb.block-cache-usage");
                if ua == ub && ub == direct && direct == again {
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
                false
            });
            assert!(same, "round {round}: the stores report different caches");
            max_cache = max_cache.max(ua);
            let memtables = prop(&a, "rocksdb.cur-size-all-mem-tables")
                + prop(&b, "rocksdb.cur-size-all-mem-tables");
            max_memtables = max_memtables.max(memtables);
        }
        // 64 MiB were written in all, as fast as the two stores take them. Memtables are
        // flushed once they reach their 8 MiB share, but flushes lag such a burst: the peak
        // is bounded by RocksDB's per-family limits (write buffer size x count), and the
        // cache, memtable reservations included, overshoots its capacity by little.
        eprintln!("peak cache usage {max_cache}, peak memtables {max_memtables}");
        // (Measured: memtables peak at 23-25 MB of the 24 MiB the families allow; the
        // cache at 10-20% over capacity, its memtable reservations being pinned.)
        let family_limit: u64 = 2 * 3 * (4 << 20);
        assert!(
            max_memtables <= family_limit * 6 / 5,
            "memtables {max_memtables}"
        );
        assert!(max_cache <= (total as u64) * 27 / 20, "cache {max_cache}");
        assert!(
            max_cache >= 4 << 20,
            "memtables are charged to the cache: {max_cache}"
        );
        // Once the flushes catch up, both are within the budget.
        let mut settled = (u64::MAX, u64::MAX);
        for _ in 0..100 {
            settled = (
                prop(&a, "rocksdb.cur-size-all-mem-tables")
                    + prop(&b, "rocksdb.cur-size-all-mem-tables"),
                prop(&a, "rocksdb.block-cache-usage"),
            );
            if settled.0 <= 8 << 20 && settled.1 <= total as u64 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        eprintln!("settled memtables {}, cache usage {}", settled.0, settled.1);
        assert!(settled.0 <= 8 << 20, "memtables {}", settled.0);
        assert!(settled.1 <= total as u64, "cache {}", settled.1);
        assert!(prop(&a, "rocksdb.estimate-num-keys") > 0);
        let old = Arc::downgrade(a._budget.as_ref().unwrap());
        drop((a, b));
        // The last store gone, the budget is too: a new store gets a fresh cache, holding
        // only what that store charged to it (the memtables its open rebuilt from the WAL,
        // kept by `avoid_flush_during_recovery`), not what the two stores left.
        assert!(old.upgrade().is_none(), "the budget outlived its stores");
        let again = RocksEngine::open(&dir.path().join("a"), &[], &opts).unwrap();
        let usage = again._budget.as_ref().unwrap().cache.get_usage() as u64;
        let memtables = prop(&again, "rocksdb.size-all-mem-tables");
        assert!(
            usage <= memtables + (1 << 20),
            "cache {usage}, memtables {memtables}"
        );
    }

    #[test]
    fn a_store_that_stopped_writing_is_flushed_once_others_pass_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        // A budget no other test uses: 2 MiB of memtables.
        let opts = bounded((16 << 20) + 8192, 2 << 20);
        let open = |name: &str| {
            RocksEngine::open(&dir.path().join(name), &[names::TIMESTAMPED], &opts).unwrap()
        };
        let (idle, busy, other) = (open("idle"), open("busy"), open("other"));
        let value = vec![7u8; 1000];
        let load = |e: &RocksEngine, batches: u32| {
            let ts = e.registry().require(names::TIMESTAMPED).unwrap();
            for b in 0..batches {
                let keys: Vec<Vec<u8>> = (0..256u32)
                    .map(|i| format!("{b:04}-{i:06}").into_bytes())
                    .collect();
                let ops: Vec<BatchOp<'_>> =
                    keys.iter().map(|k| BatchOp::Put(ts, k, &value)).collect();
                e.write(&ops, false).unwrap();
            }
        };
        let memtables = |e: &RocksEngine| prop(e, "rocksdb.cur-size-all-mem-tables");
        // 768 KB each: under the budget and under their own 4 MiB memtables.
        load(&idle, 3);
        load(&other, 3);
        assert!(memtables(&idle) >= 512 << 10, "{}", memtables(&idle));
        // The busy store passes the budget: RocksDB flushes it, and kstate the store that
        // has gone longest without writing, then the next.
        load(&busy, 16);
        let flushed = |e: &RocksEngine| {
            (0..500).any(|_| {
                if memtables(e) < 64 << 10 {
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
                false
            })
        };
        assert!(flushed(&idle), "idle store kept {}", memtables(&idle));
        assert!(flushed(&other), "other store kept {}", memtables(&other));
        let ts = idle.registry().require(names::TIMESTAMPED).unwrap();
        assert_eq!(idle.get(ts, b"0002-000255").unwrap(), Some(value.clone()));
        // Closing a store while others write: its entry leaves the budget first.
        drop(idle);
        load(&other, 8);
        let again = open("idle");
        let ts = again.registry().require(names::TIMESTAMPED).unwrap();
        assert_eq!(again.get(ts, b"0002-000255").unwrap(), Some(value));
    }

    #[test]
    fn properties_tickers_and_invalid_options() {
        let dir = tempfile::tempdir().unwrap();
        let opts = RocksOptions {
            statistics: true,
            bloom_filter: false,
            block_cache_bytes: 3 << 20,
            ..RocksOptions::default()
        };
        let e = RocksEngine::open(dir.path(), &[names::TIMESTAMPED], &opts).unwrap();
        let ts = e.registry().require(names::TIMESTAMPED).unwrap();
        e.write(&[BatchOp::Put(ts, b"k", b"12345678v")], false)
            .unwrap();
        assert_eq!(prop(&e, "rocksdb.block-cache-capacity"), 3 << 20);
        assert_eq!(prop(&e, "rocksdb.num-entries-active-mem-table"), 1);
        assert!(prop(&e, "rocksdb.cur-size-all-mem-tables") > 0);
        assert_eq!(prop(&e, "rocksdb.background-errors"), 0);
        assert!(prop(&e, "rocksdb.bytes.written") > 0);
        e.get(ts, b"k").unwrap();
        assert!(prop(&e, "rocksdb.bytes.read") > 0);
        assert_eq!(e.property("rocksdb.no-such-property").unwrap(), None);
        drop(e);
        let plain = RocksEngine::open(dir.path(), &[], &RocksOptions::default()).unwrap();
        assert_eq!(plain.property("rocksdb.bytes.written").unwrap(), None);
        for bad in [
            RocksOptions {
                max_write_buffers: 0,
                ..RocksOptions::default()
            },
            bounded(8 << 20, 8 << 20),
            bounded(0, 0),
        ] {
            let err = RocksEngine::open(&dir.path().join("x"), &[], &bad)
                .err()
                .unwrap();
            assert_eq!(err.code(), crate::ErrorCode::InvalidArgument, "{err}");
        }
    }

    /// Ascending keys flushed in 12 batches into the data family (as a load or a restore
    /// under a budget that flushes small memtables), then `kstate_meta` as a commit writes it.
    fn flush_ascending_batches(e: &RocksEngine) {
        let (plain, meta) = (
            e.registry().require(names::PLAIN).unwrap(),
            e.registry().require(names::META).unwrap(),
        );
        for round in 0..12u32 {
            let keys: Vec<[u8; 4]> = (round * 100..(round + 1) * 100)
                .map(u32::to_be_bytes)
                .collect();
            let mut ops: Vec<BatchOp<'_>> =
                keys.iter().map(|k| BatchOp::Put(plain, k, b"v")).collect();
            let record = round.to_be_bytes();
            ops.push(BatchOp::Put(meta, b"committed", &record));
            e.write(&ops, false).unwrap();
            e.flush().unwrap();
        }
    }

    #[test]
    fn under_a_budget_flushes_merge_universally_and_reads_skip_the_maps() {
        let dir = tempfile::tempdir().unwrap();
        // Without a budget: leveled compaction moves each flush of ascending keys down whole.
        let plain = RocksEngine::open(
            &dir.path().join("plain"),
            &[names::META],
            &RocksOptions::default(),
        )
        .unwrap();
        flush_ascending_batches(&plain);
        let leveled = settled_files(&plain, names::PLAIN);
        assert!(leveled >= 10, "{leveled} table files");
        // A budget no other test uses.
        let opts = bounded((20 << 20) + 8192, 6 << 20);
        let path = dir.path().join("bounded");
        let e = RocksEngine::open(&path, &[names::META], &opts).unwrap();
        flush_ascending_batches(&e);
        let universal = settled_files(&e, names::PLAIN);
        assert!(universal <= 4, "{universal} table files");
        assert!(settled_files(&e, names::META) <= 2);
        let style = |cf: &str| -> String {
            let section = family_options(&path, cf);
            let line = section
                .lines()
                .find_map(|l| l.trim().strip_prefix("compaction_style="));
            line.unwrap().to_owned()
        };
        assert_eq!(style(names::PLAIN), "kCompactionStyleUniversal");
        assert_eq!(style(names::META), "kCompactionStyleLevel");
        assert_eq!(persisted_option(&path, "allow_mmap_reads"), "false");
        drop(e);
        // Each style opens the other's files, with every entry.
        for (i, o) in [RocksOptions::default(), opts, RocksOptions::default()]
            .iter()
            .enumerate()
        {
            let e = RocksEngine::open(&path, &[names::META], o).unwrap();
            let fam = e.registry().require(names::PLAIN).unwrap();
            let meta = e.registry().require(names::META).unwrap();
            let key = (1200 + i as u32).to_be_bytes();
            e.write(&[BatchOp::Put(fam, &key, b"w")], false).unwrap();
            e.flush().unwrap();
            let mut it = e.iter(fam, &KeyRange::all(), false).unwrap();
            let mut n = 0u32;
            while let Some((k, _)) = it.next_entry().unwrap() {
                assert_eq!(k, n.to_be_bytes());
                n += 1;
            }
            assert_eq!(n, 1201 + i as u32);
            assert_eq!(
                e.get(meta, b"committed").unwrap(),
                Some(11u32.to_be_bytes().to_vec())
            );
        }
    }

    fn log_files(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|f| {
                f.as_ref()
                    .unwrap()
                    .file_name()
                    .to_str()
                    .and_then(log_number)
                    .is_some()
            })
            .count()
    }

    #[test]
    fn a_close_leaves_a_small_logged_log_and_flushes_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        // Small logged writes: the close syncs the log and writes no table file, but not
        // more than `CLOSE_LOG_FILES` logs pile up across reopens; every write is reopened.
        for round in 0..6u8 {
            let e = RocksEngine::open(path, &[], &RocksOptions::default()).unwrap();
            let plain = e.registry().require(names::PLAIN).unwrap();
            for r in 0..round {
                assert_eq!(e.get(plain, &[r]).unwrap(), Some(vec![r]), "round {round}");
            }
            let tables = count_table_files(path);
            e.write(&[BatchOp::Put(plain, &[round], &[round])], false)
                .unwrap();
            let small = log_files(path) <= CLOSE_LOG_FILES;
            e.persist_for_close().unwrap();
            assert_eq!(count_table_files(path) == tables, small, "round {round}");
            drop(e);
            assert!(log_files(path) <= CLOSE_LOG_FILES, "round {round}");
        }
        // A log past `CLOSE_LOG_BYTES` is flushed.
        let e = RocksEngine::open(path, &[], &RocksOptions::default()).unwrap();
        e.flush().unwrap();
        let plain = e.registry().require(names::PLAIN).unwrap();
        let tables = count_table_files(path);
        let big = vec![1u8; CLOSE_LOG_BYTES as usize];
        e.write(&[BatchOp::Put(plain, b"big", &big)], false)
            .unwrap();
        e.persist_for_close().unwrap();
        assert!(count_table_files(path) > tables);
        // So is a small batch written without the log (a restore's), which only a flush
        // makes durable.
        let tables = count_table_files(path);
        e.write_unlogged(&[BatchOp::Put(plain, b"restored", b"r")])
            .unwrap();
        e.persist_for_close().unwrap();
        assert!(count_table_files(path) > tables);
        drop(e);
        let e = RocksEngine::open(path, &[], &RocksOptions::default()).unwrap();
        assert_eq!(e.get(plain, b"big").unwrap(), Some(big));
        assert_eq!(e.get(plain, b"restored").unwrap(), Some(b"r".to_vec()));
    }
}
