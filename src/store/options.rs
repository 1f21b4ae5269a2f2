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
    /// Adopt a Kafka Streams 4.3+ RocksDB store (or window/session segment) whose `offsets`
    /// column family says it was left open (`status` 1: the process was killed), as Kafka
    /// 4.4's `RocksDBStore` opens one under at-least-once: with the committed offsets and
    /// position it holds, its data possibly ahead of them (replaying the changelog from the
    /// offset then rewrites records the store already holds, which at-least-once allows).
    /// Off by default: such a store is refused with [`crate::Error::Corruption`], as Kafka
    /// refuses it under `exactly_once_v2` (`TaskCorruptedException`: wipe and restore),
    /// where data ahead of the offsets could hold writes of an aborted transaction.
    pub adopt_left_open: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            engine: EngineKind::RocksDb,
            value_format: ValueFormat::Timestamped,
            max_uncommitted_bytes: DEFAULT_MAX_UNCOMMITTED_BYTES,
            sync_on_commit: false,
            rocksdb: RocksOptions::default(),
            adopt_left_open: false,
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

    /// Sets [`StoreOptions::adopt_left_open`].
    pub fn with_adopt_left_open(mut self, allow: bool) -> Self {
        self.adopt_left_open = allow;
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
