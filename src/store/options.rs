//! Options of a store.

use crate::engine::rocksdb::RocksOptions;
use crate::engine::EngineKind;
use crate::format::meta::ValueFormat;

/// Default bound on uncommitted bytes held in memory before spilling: 64 MiB.
pub const DEFAULT_MAX_UNCOMMITTED_BYTES: u64 = 64 << 20;

/// How to open a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// Engine backing the store (RocksDB by default).
    pub engine: EngineKind,
    /// Value layout; an existing store must be opened with the format it was created with.
    pub value_format: ValueFormat,
    /// Bound on uncommitted bytes kept in memory; past it they spill to disk.
    pub max_uncommitted_bytes: u64,
    /// fsync the RocksDB WAL on every commit. Off by default, as in Kafka Streams: a process
    /// crash loses nothing committed either way; a machine crash without fsync may lose the
    /// last commits but always leaves a consistent prefix with its matching offset.
    pub sync_on_commit: bool,
    /// RocksDB tuning (ignored by the memory engine).
    pub rocksdb: RocksOptions,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            engine: EngineKind::RocksDb,
            value_format: ValueFormat::Timestamped,
            max_uncommitted_bytes: DEFAULT_MAX_UNCOMMITTED_BYTES,
            sync_on_commit: false,
            rocksdb: RocksOptions::default(),
        }
    }
}

impl StoreOptions {
    /// Options for a timestamped store on `engine`.
    pub fn timestamped(engine: EngineKind) -> Self {
        StoreOptions {
            engine,
            ..StoreOptions::default()
        }
    }

    /// Options for a plain (not timestamped) store on `engine`.
    pub fn plain(engine: EngineKind) -> Self {
        StoreOptions {
            engine,
            value_format: ValueFormat::Plain,
            ..StoreOptions::default()
        }
    }

    /// Sets [`StoreOptions::max_uncommitted_bytes`].
    pub fn with_max_uncommitted_bytes(mut self, bytes: u64) -> Self {
        self.max_uncommitted_bytes = bytes;
        self
    }

    /// Sets [`StoreOptions::sync_on_commit`].
    pub fn with_sync_on_commit(mut self, sync: bool) -> Self {
        self.sync_on_commit = sync;
        self
    }

    /// The transaction layer's settings for these options; `chunk_bytes` sizes spill and
    /// roll-forward batches.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a zero `max_uncommitted_bytes`.
    pub(crate) fn txn_config(&self, chunk_bytes: usize) -> crate::Result<crate::txn::TxnConfig> {
        if self.max_uncommitted_bytes == 0 {
            return Err(crate::Error::InvalidArgument(
                "max_uncommitted_bytes must be positive".into(),
            ));
        }
        Ok(crate::txn::TxnConfig {
            max_uncommitted_bytes: self.max_uncommitted_bytes,
            sync_on_commit: self.sync_on_commit,
            chunk_bytes,
        })
    }
}
