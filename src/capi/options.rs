//! `kstate_kv_options_t`: how a store is opened.

use crate::engine::rocksdb::RocksOptions;
use crate::{EngineKind, Error, Result, StoreOptions, ValueFormat};

use super::error::ffi_infallible;

/// Which storage engine backs a store: `KSTATE_ENGINE_ROCKSDB` or `KSTATE_ENGINE_MEMORY`.
pub type kstate_engine_t = u32;
/// RocksDB on local disk (the default).
pub const KSTATE_ENGINE_ROCKSDB: kstate_engine_t = 0;
/// Process memory; data and committed offsets vanish with the store.
pub const KSTATE_ENGINE_MEMORY: kstate_engine_t = 1;

/// How values are laid out: `KSTATE_FORMAT_TIMESTAMPED`, `KSTATE_FORMAT_PLAIN` or
/// `KSTATE_FORMAT_HEADERS`.
pub type kstate_value_format_t = u32;
/// Values carry an 8-byte big-endian timestamp prefix (Kafka's `ValueAndTimestamp`;
/// the default). The typed functions (`kstate_kv_put`, `kstate_kv_get`, ...) need it.
pub const KSTATE_FORMAT_TIMESTAMPED: kstate_value_format_t = 0;
/// Values are stored verbatim (Kafka's plain `RocksDBStore`); use the `_raw` functions.
pub const KSTATE_FORMAT_PLAIN: kstate_value_format_t = 1;
/// Values carry record headers and a timestamp (KIP-1271, Kafka Streams 4.3+'s
/// `keyValueWithTimestampAndHeaders` layout: `[varint headersSize][headers][8-byte
/// big-endian timestamp][value]`). The typed functions work on it with no headers
/// (`kstate_kv_put` writes none, `kstate_kv_get` drops them); the `_raw` functions carry the
/// whole layout. Opening a timestamped or plain store with it upgrades the store in place
/// (lazily, as for plain -> timestamped).
pub const KSTATE_FORMAT_HEADERS: kstate_value_format_t = 2;

/// Options for `kstate_kv_open`. Start from `kstate_kv_options_default()` and change the
/// fields you need.
///
/// The struct is passed and returned by value and carries no size or version field, so
/// fields cannot be appended without breaking binaries built against an older header.
/// The RocksDB knobs added since (bloom filter on/off, statistics, the process-wide
/// bounded memory budget) are therefore not settable from C: a store opened through C gets
/// kstate's defaults for them (bloom filter on, statistics off, a block cache of its own).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_kv_options_t {
    /// `KSTATE_ENGINE_ROCKSDB` (default) or `KSTATE_ENGINE_MEMORY`.
    pub engine: kstate_engine_t,
    /// `KSTATE_FORMAT_TIMESTAMPED` (default), `KSTATE_FORMAT_PLAIN` or
    /// `KSTATE_FORMAT_HEADERS`. An existing store opens with its own format or a later one
    /// (plain < timestamped < headers; a later one upgrades it), never an earlier one.
    pub value_format: kstate_value_format_t,
    /// Bytes of uncommitted writes kept in memory before they spill to disk; > 0.
    /// Default 64 MiB.
    pub max_uncommitted_bytes: u64,
    /// fsync the write-ahead log on every commit. Default false: a process crash loses
    /// nothing committed either way; a machine crash may lose the last commits.
    pub sync_on_commit: bool,
    /// RocksDB block cache size in bytes. Default 50 MiB. Ignored by the memory engine.
    pub rocksdb_block_cache_bytes: usize,
    /// RocksDB memtable size per column family in bytes; > 0. Default 16 MiB.
    pub rocksdb_write_buffer_bytes: usize,
    /// RocksDB memtables per column family before writes stall; >= 1. Default 3.
    pub rocksdb_max_write_buffers: i32,
}

impl kstate_kv_options_t {
    pub(crate) fn defaults() -> Self {
        let d = StoreOptions::default();
        kstate_kv_options_t {
            engine: KSTATE_ENGINE_ROCKSDB,
            value_format: KSTATE_FORMAT_TIMESTAMPED,
            max_uncommitted_bytes: d.max_uncommitted_bytes,
            sync_on_commit: d.sync_on_commit,
            rocksdb_block_cache_bytes: d.rocksdb.block_cache_bytes,
            rocksdb_write_buffer_bytes: d.rocksdb.write_buffer_bytes,
            rocksdb_max_write_buffers: d.rocksdb.max_write_buffers,
        }
    }

    /// Validates and converts to the core's options.
    pub(crate) fn to_store_options(self) -> Result<StoreOptions> {
        let engine = match self.engine {
            KSTATE_ENGINE_ROCKSDB => EngineKind::RocksDb,
            KSTATE_ENGINE_MEMORY => EngineKind::Memory,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "options.engine {other} is not a KSTATE_ENGINE_* value"
                )))
            }
        };
        let value_format = match self.value_format {
            KSTATE_FORMAT_TIMESTAMPED => ValueFormat::Timestamped,
            KSTATE_FORMAT_PLAIN => ValueFormat::Plain,
            KSTATE_FORMAT_HEADERS => ValueFormat::Headers,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "options.value_format {other} is not a KSTATE_FORMAT_* value"
                )))
            }
        };
        if self.max_uncommitted_bytes == 0 {
            return Err(Error::InvalidArgument(
                "options.max_uncommitted_bytes must be positive".into(),
            ));
        }
        if self.rocksdb_write_buffer_bytes == 0 {
            return Err(Error::InvalidArgument(
                "options.rocksdb_write_buffer_bytes must be positive".into(),
            ));
        }
        if self.rocksdb_max_write_buffers < 1 {
            return Err(Error::InvalidArgument(format!(
                "options.rocksdb_max_write_buffers must be at least 1, not {}",
                self.rocksdb_max_write_buffers
            )));
        }
        Ok(StoreOptions {
            engine,
            value_format,
            max_uncommitted_bytes: self.max_uncommitted_bytes,
            sync_on_commit: self.sync_on_commit,
            rocksdb: RocksOptions {
                block_cache_bytes: self.rocksdb_block_cache_bytes,
                write_buffer_bytes: self.rocksdb_write_buffer_bytes,
                max_write_buffers: self.rocksdb_max_write_buffers,
                // Not in this struct (see its docs): kstate's defaults.
                ..RocksOptions::default()
            },
        })
    }
}

/// The default options: RocksDB, timestamped values, 64 MiB of uncommitted writes in
/// memory, no fsync on commit, Kafka Streams' RocksDB tuning (50 MiB block cache, 16 MiB
/// write buffers, 3 of them).
///
/// # Arguments
/// None.
///
/// # Returns
/// The defaults, by value.
///
/// # Errors
/// None.
///
/// # Safety
/// None required.
///
/// # Thread safety
/// Safe to call from any thread.
#[no_mangle]
pub extern "C" fn kstate_kv_options_default() -> kstate_kv_options_t {
    ffi_infallible(
        kstate_kv_options_t {
            engine: KSTATE_ENGINE_ROCKSDB,
            value_format: KSTATE_FORMAT_TIMESTAMPED,
            max_uncommitted_bytes: 64 << 20,
            sync_on_commit: false,
            rocksdb_block_cache_bytes: 50 << 20,
            rocksdb_write_buffer_bytes: 16 << 20,
            rocksdb_max_write_buffers: 3,
        },
        kstate_kv_options_t::defaults,
    )
}
