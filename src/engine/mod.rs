//! Storage engines. An engine stores committed bytes in named families and applies atomic
//! batches; it knows nothing of transactions, timestamps or offsets. Two engines implement
//! the same trait: [`rocksdb::RocksEngine`] (durable) and [`memory::MemoryEngine`] (process
//! memory, same semantics, nothing survives the process).
//!
//! Families are a registry, not a closed list: an engine is opened with the names the store
//! needs (created when missing) and also carries every family it already had, so a store of
//! Kafka Streams (with its `offsets` family) or a later kstate store kind (window segments,
//! the two families of an upgrade) opens with the same code. A [`Family`] is a small index
//! into that registry, valid for the engine that issued it.

mod families;
#[cfg(test)]
pub(crate) mod fault;
pub(crate) mod kafka_layout;
pub(crate) mod memory;
pub(crate) mod rocksdb;

mod cursor;
#[cfg(test)]
mod filter_tests;
mod range;

pub(crate) use cursor::OrdCursor;
pub use range::KeyRange;

use std::sync::Arc;

use crate::{Error, Result};

/// Which engine backs a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// RocksDB on local disk.
    RocksDb,
    /// Process memory; committed offsets and data vanish with the process.
    Memory,
}

impl EngineKind {
    /// Lower-case name for messages and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::RocksDb => "rocksdb",
            EngineKind::Memory => "memory",
        }
    }
}

/// Column-family names that are part of the on-disk contract (DESIGN.md §3).
pub(crate) mod names {
    /// Plain values (Kafka's `RocksDBStore`; RocksDB's default family).
    pub const PLAIN: &str = "default";
    /// Timestamped values (Kafka's `RocksDBTimestampedStore`).
    pub const TIMESTAMPED: &str = "keyValueWithTimestamp";
    /// Timestamped values with headers (Kafka 4.3+, KIP-1271; kstate's headers format).
    pub const HEADERS: &str = "keyValueWithTimestampAndHeaders";
    /// Session aggregates with headers in Kafka 4.3+'s headers-format session segments
    /// (`RocksDBMigratingSessionStoreWithHeaders`, KIP-1271).
    pub const SESSION_HEADERS: &str = "sessionKeyValueWithHeaders";
    /// The records (time-first and key-index) of Kafka 4.4's time-ordered window segments in
    /// the headers store format (`RocksDBTimeOrderedWindowStoreWithHeaders`, headers-format
    /// values).
    pub const WINDOW_TIME_ORDERED_HEADERS: &str = "windowKeyValueWithHeaders";
    /// Changelog offsets, position and open/closed status of Kafka 4.3+ RocksDB stores.
    pub const KAFKA_OFFSETS: &str = "offsets";
    /// kstate's metadata: header, committed state, status.
    pub const META: &str = "kstate_meta";
    /// kstate's staging area for uncommitted writes past the memory bound.
    pub const SPILL: &str = "kstate_spill";
}

/// A family of one engine: an index into that engine's registry of names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Family(u8);

impl Family {
    /// The family at `index` of a registry.
    pub(crate) fn at(index: usize) -> Result<Family> {
        u8::try_from(index)
            .map(Family)
            .map_err(|_| Error::Internal(format!("family index {index} exceeds 255")))
    }

    /// Position in the engine's registry.
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// The names of an engine's families, in registry order ([`Family`] indexes it). Shared,
/// so that every snapshot can carry it without copying.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Registry {
    names: std::sync::Arc<[String]>,
}

impl Registry {
    /// A registry of `existing` names plus those of `wanted` not among them, in that order.
    pub(crate) fn new(existing: &[String], wanted: &[&str]) -> Result<Registry> {
        let mut names = existing.to_vec();
        for w in wanted {
            if !names.iter().any(|n| n == w) {
                names.push((*w).to_string());
            }
        }
        if names.len() > 256 {
            return Err(Error::Internal(format!(
                "{} column families exceed kstate's 256",
                names.len()
            )));
        }
        Ok(Registry {
            names: names.into(),
        })
    }

    /// The family named `name`, if the engine has it.
    pub(crate) fn find(&self, name: &str) -> Option<Family> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| Family(i as u8))
    }

    /// The family named `name`, or an internal error naming it.
    pub(crate) fn require(&self, name: &str) -> Result<Family> {
        self.find(name)
            .ok_or_else(|| Error::Internal(format!("column family {name} is not open")))
    }

    /// The name of `family`.
    pub(crate) fn name(&self, family: Family) -> &str {
        self.names.get(family.index()).map_or("?", String::as_str)
    }

    /// Every name, in registry order.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// Number of families.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

/// The write-ahead log files of an engine (see [`Engine::logs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Logs {
    /// The numbers of the log files on disk now, ascending.
    pub live: Vec<u64>,
    /// The oldest log number the engine still needs to recover its data: files below it
    /// are obsolete (their data is in the table files), files from it on must be there.
    pub needed_from: u64,
}

/// One write of an atomic batch. Slices are borrowed so building a batch copies nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) enum BatchOp<'a> {
    /// Insert or overwrite `key` with `value`.
    Put(Family, &'a [u8], &'a [u8]),
    /// Remove `key`.
    Delete(Family, &'a [u8]),
    /// Remove every key in `[from, to)`.
    DeleteRange(Family, &'a [u8], &'a [u8]),
}

/// What a [`KeyFilter`] says of a stored key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The reader would pass over the entry without effect: skip it without copying it.
    Skip,
    /// The reader wants the entry.
    Take,
    /// The reader wants the entry and will then seek elsewhere: a cursor that reads ahead
    /// stops after it, since what follows would be read for nothing.
    TakeLast,
}

impl Verdict {
    /// False for [`Verdict::Skip`].
    pub(crate) fn taken(self) -> bool {
        self != Verdict::Skip
    }
}

/// A filter on stored keys: a cursor applying it skips the entries it rejects before
/// copying their key or value. It must depend on the key alone: cursors may apply it to
/// entries they read ahead, and a merged view applies it to each layer, so a key it rejects
/// is rejected in every layer (with its tombstones and the writes they shadow).
pub(crate) type KeyFilter = dyn Fn(&[u8]) -> Verdict + Send + Sync;

/// An owning cursor over committed entries of one family, fixed to the state the engine (or
/// the snapshot it was made from) had when the cursor was created.
pub(crate) trait EngineIter: Send {
    /// The next entry in the cursor's direction, or `None` at the end.
    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>>;

    /// The next entry whose key `keep` accepts (see [`KeyFilter`]). Engines override it to
    /// skip rejected entries without copying them: a segment walk over a time range
    /// rejects most of what it reads.
    fn next_entry_where(&mut self, keep: &KeyFilter) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            match self.next_entry()? {
                Some((k, _)) if !keep(&k).taken() => continue,
                other => return Ok(other),
            }
        }
    }

    /// Hands the next entry (the next one `keep` accepts, when given) to `visit` and moves
    /// past it; `false` at the end. Engines that can read an entry in place override it
    /// and lend slices of their own memory: a range read for JNI or C is then copied once,
    /// into the surface's buffer. The default copies through [`EngineIter::next_entry`].
    fn lend_next(
        &mut self,
        keep: Option<&KeyFilter>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool> {
        let next = match keep {
            Some(keep) => self.next_entry_where(keep)?,
            None => self.next_entry()?,
        };
        Ok(next.map(|(k, v)| visit(&k, &v)).is_some())
    }

    /// Repositions the cursor, within the range it was created with and on the same
    /// pinned state: the next entry is the first key `>= target` (ascending) or the last
    /// key `<= target` (descending). Segmented stores use it to jump between segments
    /// without opening a cursor per segment (which would not be one consistent view).
    fn seek(&mut self, target: &[u8]) -> Result<()>;
}

/// A read-only, pinned view of every family at one instant. Later writes to the engine are
/// not seen; holding a snapshot never blocks writers.
pub(crate) trait Snapshot: Send + Sync {
    /// Reads one value as of the snapshot.
    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// A cursor over `range` of `family` as of the snapshot.
    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>>;
}

/// A storage engine: committed bytes, atomic batches, consistent cursors and snapshots.
pub(crate) trait Engine: Send + Sync + 'static {
    /// The engine's families.
    fn registry(&self) -> &Registry;

    /// Reads one value as of now.
    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Applies all `ops` atomically: after a crash either all or none are visible. With
    /// `sync`, the batch is on stable storage when this returns. On error the engine may or
    /// may not have made the batch durable; callers treat the outcome as unknown.
    fn write(&self, ops: &[BatchOp<'_>], sync: bool) -> Result<()>;

    /// Applies all `ops` atomically like [`Engine::write`], but without the write-ahead log:
    /// for data that can be rebuilt from elsewhere (records restored from a changelog).
    ///
    /// Such a batch is durable only once the engine flushes it, and the engine keeps every
    /// flush whole: after a crash it holds a prefix of its batches that ends at a batch
    /// boundary, so a batch that carries its own commit record recovers with it or not at all.
    /// The engine flushes unlogged batches before its next logged write (which must never
    /// become durable ahead of them), when its memory buffers fill, and at close. The
    /// default, for engines without a log, is a plain write.
    fn write_unlogged(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        self.write(ops, false)
    }

    /// True when a live snapshot makes this engine's writes copy what they change (the
    /// memory engine, whose snapshots are versions of its trees), so that a caller able to
    /// guarantee its latest snapshot will not be read again should write through
    /// [`Engine::write_unshared`] and let the engine update in place.
    fn copies_under_snapshots(&self) -> bool {
        false
    }

    /// [`Engine::write`] (without the write-ahead log, like [`Engine::write_unlogged`], when
    /// `unlogged`), for a caller that guarantees nobody will read through `unused`, a
    /// snapshot of this engine, again: the engine need not preserve what it shows.
    fn write_unshared(
        &self,
        ops: &[BatchOp<'_>],
        sync: bool,
        unlogged: bool,
        _unused: &Arc<dyn Snapshot>,
    ) -> Result<()> {
        if unlogged {
            self.write_unlogged(ops)
        } else {
            self.write(ops, sync)
        }
    }

    /// Writes every family's buffered data to its files and waits (a no-op for engines
    /// without such buffers), so that the next open has no log to replay.
    fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// Makes everything written so far durable for a clean close, after the close's last
    /// write: [`Engine::flush`], unless the engine can instead leave a log small enough to
    /// replay at the next open for less than a flush costs (see the RocksDB engine).
    fn persist_for_close(&self) -> Result<()> {
        self.flush()
    }

    /// Whether the engine can ingest sorted files ([`Engine::stage_file`],
    /// [`Engine::ingest_file`]); large restores use them.
    fn can_ingest(&self) -> bool {
        false
    }

    /// Writes `entries` of `family` (keys strictly ascending; `None` deletes) to a sorted
    /// file called `name` in the engine's directory, durably, replacing any file of that
    /// name.
    fn stage_file(
        &self,
        _family: Family,
        _name: &str,
        _entries: &[(&[u8], Option<&[u8]>)],
    ) -> Result<()> {
        Err(Error::Internal("this engine cannot ingest files".into()))
    }

    /// Whether the staged file `name` is still waiting to be ingested.
    fn is_staged(&self, _name: &str) -> Result<bool> {
        Ok(false)
    }

    /// Adds the staged file `name` to `family` atomically, its entries newer than every
    /// earlier write; the staged file is consumed.
    fn ingest_file(&self, _family: Family, _name: &str) -> Result<()> {
        Err(Error::Internal("this engine cannot ingest files".into()))
    }

    /// Deletes every staged file (left by a restore killed before it recorded its intent).
    fn clear_staged(&self) -> Result<()> {
        Ok(())
    }

    /// Whether [`Engine::checkpoint`] can copy this engine.
    fn can_checkpoint(&self) -> bool {
        false
    }

    /// Writes a point-in-time copy of the whole engine into the new directory `dir` (table
    /// files hard-linked where the file system allows), without stopping writers. Engines
    /// without files (the memory engine) cannot.
    fn checkpoint(&self, dir: &std::path::Path) -> Result<()> {
        Err(Error::Unsupported(format!(
            "cannot write a checkpoint to {}: only RocksDB stores have files to copy",
            dir.display()
        )))
    }

    /// A cursor over `range` of `family` as of now, ascending or (with `reverse`) descending.
    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>>;

    /// A pinned view of the engine as of now.
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>>;

    /// Approximate number of keys in `family` (exact for the memory engine).
    fn approximate_count(&self, family: Family) -> Result<u64>;

    /// Compacts `family` fully and waits for it (a no-op for the memory engine).
    fn compact(&self, family: Family) -> Result<()>;

    /// The engine's write-ahead log files, `None` for engines without a log.
    fn logs(&self) -> Result<Option<Logs>> {
        Ok(None)
    }

    /// An integer property of the engine by RocksDB name (`rocksdb.cur-size-all-mem-tables`,
    /// a statistics ticker such as `rocksdb.bytes.written`, ...), `None` when the engine
    /// has no such value (always, for the memory engine).
    fn property(&self, _name: &str) -> Result<Option<u64>> {
        Ok(None)
    }
}

/// True when `family` has at least one entry as of now.
pub(crate) fn has_entries(engine: &dyn Engine, family: Family) -> Result<bool> {
    Ok(engine
        .iter(family, &KeyRange::all(), false)?
        .next_entry()?
        .is_some())
}
