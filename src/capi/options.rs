//! `kstate_kv_options_t`: how a store is opened.

use crate::engine::rocksdb::{BoundedMemory, RocksOptions};
use crate::{EngineKind, Error, Result, StoreOptions, ValueFormat};

use super::segmented_options::{
    kstate_session_options_t, kstate_versioned_options_t, kstate_window_options_t,
};
use super::sized::{init, Layouts, OptionsStruct};

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

/// Options for `kstate_kv_open`. Initialise them with
/// `kstate_kv_options_init(&options, sizeof options)`, then change the fields you need.
///
/// ABI: the struct grows at its end, and `struct_size` tells the library which layout the
/// caller was compiled with. A library reads only the fields of that layout and gives the
/// others their defaults, so a program built against an older header keeps working with a
/// newer library; a size the library does not know (zero, uninitialised memory, or a header
/// newer than the library) is `KSTATE_ERR_INVALID_ARGUMENT`. Every release that adds fields
/// makes the struct larger and adds its size to the `KSTATE_KV_OPTIONS_SIZE_*` constants.
/// One exception is shipped and stays: `rocksdb_bloom_filter` and `rocksdb_statistics`
/// (layout 2) sit at offsets 52 and 53, in the tail padding of the 56-byte layout 1; the
/// library never reads them from a caller whose `struct_size` is
/// `KSTATE_KV_OPTIONS_SIZE_V1` (nor writes them for one), so whatever such a caller's
/// padding holds is ignored. Later fields go after the end of the last layout, never into
/// its padding.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_kv_options_t {
    /// The size of this struct as the caller's header defines it: set by
    /// `kstate_kv_options_init` (pass `sizeof` of your variable); never change it.
    pub struct_size: usize,
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
    /// RocksDB block cache size in bytes. Default 50 MiB. Ignored by the memory engine
    /// and when `rocksdb_bounded_memory_bytes` is set.
    pub rocksdb_block_cache_bytes: usize,
    /// RocksDB memtable size per column family in bytes; > 0. Default 16 MiB.
    pub rocksdb_write_buffer_bytes: usize,
    /// RocksDB memtables per column family before writes stall; >= 1. Default 3.
    pub rocksdb_max_write_buffers: i32,
    /// A full-key bloom filter of 10 bits per key in every SST file. Default true (as in
    /// Kafka Streams); false saves its memory and disk at the cost of a disk read per
    /// lookup of an absent key. (Since layout `KSTATE_KV_OPTIONS_SIZE_V2`.)
    pub rocksdb_bloom_filter: bool,
    /// Collect RocksDB statistics (tickers such as `rocksdb.bytes.written`). Default false;
    /// costs a few percent of CPU. (Since layout `KSTATE_KV_OPTIONS_SIZE_V2`.)
    pub rocksdb_statistics: bool,
    /// A memory budget in bytes shared by every store of the process opened with the same
    /// budget (one block cache that memtables are charged to, as Kafka Streams'
    /// `BoundedMemoryRocksDBConfig`); it replaces the per-store block cache. Default 0:
    /// no shared budget. (Since layout `KSTATE_KV_OPTIONS_SIZE_V2`.)
    pub rocksdb_bounded_memory_bytes: usize,
    /// With `rocksdb_bounded_memory_bytes`: the part of the budget memtables may use before
    /// RocksDB flushes them; > 0 and < `rocksdb_bounded_memory_bytes`. Ignored when the
    /// budget is 0. (Since layout `KSTATE_KV_OPTIONS_SIZE_V2`.)
    pub rocksdb_bounded_memtable_bytes: usize,
}

/// `struct_size` of the first layout (up to `rocksdb_max_write_buffers`): 56 bytes.
pub const KSTATE_KV_OPTIONS_SIZE_V1: usize = 56;
/// `struct_size` of the second layout (adds `rocksdb_bloom_filter`, `rocksdb_statistics`,
/// `rocksdb_bounded_memory_bytes`, `rocksdb_bounded_memtable_bytes`): 72 bytes, the
/// `sizeof(kstate_kv_options_t)` of this header.
pub const KSTATE_KV_OPTIONS_SIZE_V2: usize = 72;

/// The bytes of layout 1 that hold its fields: the 56-byte layout ends with 4 bytes of tail
/// padding, where layout 2 keeps `rocksdb_bloom_filter` and `rocksdb_statistics`; a layout-1
/// caller's padding is neither read nor written.
const KV_V1_FIELD_BYTES: usize = std::mem::offset_of!(kstate_kv_options_t, rocksdb_bloom_filter);

// The constants are the ABI: a change of layout that moves them fails the build.
const _: () = assert!(std::mem::size_of::<kstate_kv_options_t>() == KSTATE_KV_OPTIONS_SIZE_V2);
const _: () = assert!(KV_V1_FIELD_BYTES == 52 && KV_V1_FIELD_BYTES <= KSTATE_KV_OPTIONS_SIZE_V1);

impl OptionsStruct for kstate_kv_options_t {
    type Options = StoreOptions;
    const LAYOUTS: Layouts = Layouts {
        v1: KSTATE_KV_OPTIONS_SIZE_V1,
        v1_fields: KV_V1_FIELD_BYTES,
        v2: KSTATE_KV_OPTIONS_SIZE_V2,
        name: "kstate_kv_options",
    };
    /// The defaults, in the current layout.
    fn defaults() -> Self {
        let d = StoreOptions::default();
        kstate_kv_options_t {
            struct_size: KSTATE_KV_OPTIONS_SIZE_V2,
            engine: KSTATE_ENGINE_ROCKSDB,
            value_format: KSTATE_FORMAT_TIMESTAMPED,
            max_uncommitted_bytes: d.max_uncommitted_bytes,
            sync_on_commit: d.sync_on_commit,
            rocksdb_block_cache_bytes: d.rocksdb.block_cache_bytes,
            rocksdb_write_buffer_bytes: d.rocksdb.write_buffer_bytes,
            rocksdb_max_write_buffers: d.rocksdb.max_write_buffers,
            rocksdb_bloom_filter: d.rocksdb.bloom_filter,
            rocksdb_statistics: d.rocksdb.statistics,
            rocksdb_bounded_memory_bytes: 0,
            rocksdb_bounded_memtable_bytes: 0,
        }
    }

    /// The first layout's fields of these options.
    fn convert(self) -> Result<StoreOptions> {
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
        let bounded_memory = if self.rocksdb_bounded_memory_bytes == 0 {
            None
        } else {
            let budget = BoundedMemory {
                total_bytes: self.rocksdb_bounded_memory_bytes,
                memtable_bytes: self.rocksdb_bounded_memtable_bytes,
            };
            budget.validate().map_err(|e| {
                Error::InvalidArgument(format!("options.rocksdb_bounded_memory_*: {e}"))
            })?;
            Some(budget)
        };
        Ok(StoreOptions {
            engine,
            value_format,
            max_uncommitted_bytes: self.max_uncommitted_bytes,
            sync_on_commit: self.sync_on_commit,
            rocksdb: RocksOptions {
                block_cache_bytes: self.rocksdb_block_cache_bytes,
                write_buffer_bytes: self.rocksdb_write_buffer_bytes,
                max_write_buffers: self.rocksdb_max_write_buffers,
                bloom_filter: self.rocksdb_bloom_filter,
                statistics: self.rocksdb_statistics,
                bounded_memory,
            },
            // Not in the C structs yet: C callers keep refusing a Kafka store left open.
            adopt_left_open: false,
        })
    }
}

include!(concat!(env!("OUT_DIR"), "/capi_options.rs"));
