//! Storage engines. An engine stores committed bytes in a few named families and applies
//! atomic batches; it knows nothing of transactions, timestamps or offsets. Two engines
//! implement the same trait: [`rocksdb::RocksEngine`] (durable) and
//! [`memory::MemoryEngine`] (process memory, same semantics, nothing survives the process).

pub mod memory;
pub mod rocksdb;

mod cursor;
mod range;

pub(crate) use cursor::OrdCursor;
pub use range::KeyRange;

use crate::Result;

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

/// The named key spaces of a store. Their RocksDB column-family names are part of the
/// on-disk contract (DESIGN.md §3), shared with Kafka's RocksDB stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Plain values (`default`, as in Kafka's `RocksDBStore`).
    Plain,
    /// Timestamped values (`keyValueWithTimestamp`, as in `RocksDBTimestampedStore`).
    Timestamped,
    /// kstate's metadata: header, committed offsets, status.
    Meta,
    /// Staging area for uncommitted writes that overflowed the memory bound.
    Spill,
}

impl Family {
    /// All families, in a fixed order (also their index in per-family arrays).
    pub const ALL: [Family; 4] = [
        Family::Plain,
        Family::Timestamped,
        Family::Meta,
        Family::Spill,
    ];

    /// RocksDB column-family name.
    pub fn cf_name(self) -> &'static str {
        match self {
            Family::Plain => "default",
            Family::Timestamped => "keyValueWithTimestamp",
            Family::Meta => "kstate_meta",
            Family::Spill => "kstate_spill",
        }
    }

    /// Position in [`Family::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One write of an atomic batch. Slices are borrowed so building a batch copies nothing.
#[derive(Debug, Clone, Copy)]
pub enum BatchOp<'a> {
    /// Insert or overwrite `key` with `value`.
    Put(Family, &'a [u8], &'a [u8]),
    /// Remove `key`.
    Delete(Family, &'a [u8]),
    /// Remove every key in `[from, to)`.
    DeleteRange(Family, &'a [u8], &'a [u8]),
}

/// An owning cursor over committed entries of one family, fixed to the state the engine had
/// when the cursor was created (later writes are not seen).
pub trait EngineIter: Send {
    /// The next entry in the cursor's direction, or `None` at the end.
    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>>;
}

/// A storage engine: committed bytes, atomic batches, consistent cursors.
pub trait Engine: Send + Sync + 'static {
    /// Which engine this is.
    fn kind(&self) -> EngineKind;

    /// Reads one committed value.
    fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Applies all `ops` atomically: after a crash either all or none are visible. With
    /// `sync`, the batch is on stable storage when this returns.
    fn write(&self, ops: &[BatchOp<'_>], sync: bool) -> Result<()>;

    /// A cursor over `range` of `family`, ascending or (with `reverse`) descending.
    fn iter(&self, family: Family, range: &KeyRange, reverse: bool) -> Result<Box<dyn EngineIter>>;

    /// Approximate number of keys in `family` (exact for the memory engine).
    fn approximate_count(&self, family: Family) -> Result<u64>;

    /// Names of the families this engine holds, as stored (for `kstate inspect`).
    fn family_names(&self) -> Vec<String>;

    /// Compacts `family` fully and waits for it (a no-op for the memory engine).
    fn compact(&self, family: Family) -> Result<()>;
}
