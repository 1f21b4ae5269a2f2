//! `kstate_window_options_t` and `kstate_session_options_t`: how window and session stores
//! are opened.
//!
//! Both are sized structs (a leading `struct_size`, set by their `_init` function), the ABI
//! rule `kstate_kv_options_t` follows: the struct grows at its end, the library reads the
//! layout the caller's `struct_size` names, and an unknown size is
//! `KSTATE_ERR_INVALID_ARGUMENT`. The store fields are those of `kstate_kv_options_t`; they
//! are validated by its one conversion (plus the RocksDB knobs it lacks on this branch).

use crate::engine::rocksdb::BoundedMemory;
use crate::{bridge, Error, Result, SessionOptions, StoreOptions, WindowOptions};

use super::error::{ffi_call, kstate_error_t};
use super::options::{
    kstate_engine_t, kstate_kv_options_t, kstate_value_format_t, KSTATE_ENGINE_ROCKSDB,
    KSTATE_FORMAT_PLAIN, KSTATE_FORMAT_TIMESTAMPED,
};

/// Options for `kstate_window_open`. Initialise them with
/// `kstate_window_options_init(&options, sizeof options)`, then set at least
/// `retention_ms` and `window_size_ms` and change the other fields you need.
///
/// ABI: as `kstate_kv_options_t`, the struct only grows at its end and `struct_size` tells
/// the library which layout the caller was compiled with; a size the library does not know
/// (zero, uninitialised memory, a newer header) is `KSTATE_ERR_INVALID_ARGUMENT`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_window_options_t {
    /// The size of this struct as the caller's header defines it: set by
    /// `kstate_window_options_init` (pass `sizeof` of your variable); never change it.
    pub struct_size: usize,
    /// `KSTATE_ENGINE_ROCKSDB` (default) or `KSTATE_ENGINE_MEMORY`.
    pub engine: kstate_engine_t,
    /// `KSTATE_FORMAT_TIMESTAMPED` (default; Kafka's timestamped window store, whose values
    /// carry the record timestamp) or `KSTATE_FORMAT_PLAIN` (Kafka's plain window store).
    /// An existing store must be opened with the format it was created with.
    /// `KSTATE_FORMAT_HEADERS` is for key-value stores only (`KSTATE_ERR_INVALID_ARGUMENT`).
    pub value_format: kstate_value_format_t,
    /// How long windows are kept, in ms (>= `window_size_ms`). With stream time T (the
    /// largest window start written), reads no longer return windows starting at or
    /// before T - `retention_ms`; a put into a segment that old is dropped, and expired
    /// segments are deleted on commit. Default 1 day.
    pub retention_ms: i64,
    /// The window size in ms (>= 0; 0 default): the end of a window returned by iterators
    /// is its start plus this.
    pub window_size_ms: i64,
    /// Segment interval in ms for a new store (> 0), or 0 (default) for Kafka's
    /// `max(retention_ms / 2, 60000)`. An existing store keeps the interval it was created
    /// with.
    pub segment_interval_ms: i64,
    /// Kafka's `retainDuplicates` (stream-stream joins): every put is kept as its own
    /// entry, and a delete (a NULL raw value) is ignored. Default false.
    pub retain_duplicates: bool,
    /// fsync the write-ahead log on every commit. Default false.
    pub sync_on_commit: bool,
    /// Bytes of uncommitted writes kept in memory before they spill to disk; > 0.
    /// Default 64 MiB.
    pub max_uncommitted_bytes: u64,
    /// RocksDB block cache size in bytes per live segment (the store's one cache holds it
    /// times the segments live at its retention and segment interval, at most 3, as Kafka's
    /// stores have a cache per segment). Default 50 MiB. Ignored by the memory engine and
    /// when `rocksdb_bounded_memory_bytes` is set.
    pub rocksdb_block_cache_bytes: usize,
    /// RocksDB memtable size per column family in bytes; > 0. Default 16 MiB. The data
    /// family gets it per live segment, as the block cache (at most 3 times).
    pub rocksdb_write_buffer_bytes: usize,
    /// RocksDB memtables per column family before writes stall; >= 1. Default 3.
    pub rocksdb_max_write_buffers: i32,
    /// A full-key bloom filter in every SST file. Default true.
    pub rocksdb_bloom_filter: bool,
    /// Collect RocksDB statistics. Default false.
    pub rocksdb_statistics: bool,
    /// A memory budget in bytes shared by every store of the process opened with the same
    /// budget (it replaces the per-store block cache). Default 0: none.
    pub rocksdb_bounded_memory_bytes: usize,
    /// With a budget: the part of it memtables may use; > 0 and <
    /// `rocksdb_bounded_memory_bytes`. Ignored when the budget is 0.
    pub rocksdb_bounded_memtable_bytes: usize,
}

/// Options for `kstate_session_open`. Initialise them with
/// `kstate_session_options_init(&options, sizeof options)`, then set at least
/// `retention_ms` and change the other fields you need. Aggregates are stored as given
/// (Kafka's session stores are not timestamped), so there is no value format.
///
/// ABI: as `kstate_window_options_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_session_options_t {
    /// The size of this struct as the caller's header defines it: set by
    /// `kstate_session_options_init`; never change it.
    pub struct_size: usize,
    /// `KSTATE_ENGINE_ROCKSDB` (default) or `KSTATE_ENGINE_MEMORY`.
    pub engine: kstate_engine_t,
    /// fsync the write-ahead log on every commit. Default false.
    pub sync_on_commit: bool,
    /// How long sessions are kept, in ms (>= 0). With stream time T (the largest session
    /// end written), reads no longer return sessions ending at or before
    /// T - `retention_ms`; a put into a segment that old is dropped. Default 1 day.
    pub retention_ms: i64,
    /// Segment interval in ms for a new store (> 0), or 0 (default) for Kafka's
    /// `max(retention_ms / 2, 60000)`. An existing store keeps its own.
    pub segment_interval_ms: i64,
    /// Bytes of uncommitted writes kept in memory before they spill to disk; > 0.
    /// Default 64 MiB.
    pub max_uncommitted_bytes: u64,
    /// As `kstate_window_options_t`.
    pub rocksdb_block_cache_bytes: usize,
    /// As `kstate_window_options_t`.
    pub rocksdb_write_buffer_bytes: usize,
    /// As `kstate_window_options_t`.
    pub rocksdb_max_write_buffers: i32,
    /// As `kstate_window_options_t`.
    pub rocksdb_bloom_filter: bool,
    /// As `kstate_window_options_t`.
    pub rocksdb_statistics: bool,
    /// As `kstate_window_options_t`.
    pub rocksdb_bounded_memory_bytes: usize,
    /// As `kstate_window_options_t`.
    pub rocksdb_bounded_memtable_bytes: usize,
}

/// `struct_size` of the first layout of `kstate_window_options_t` (this header's
/// `sizeof(kstate_window_options_t)`): 96 bytes.
pub const KSTATE_WINDOW_OPTIONS_SIZE_V1: usize = 96;
/// `struct_size` of the first layout of `kstate_session_options_t` (this header's
/// `sizeof(kstate_session_options_t)`): 80 bytes.
pub const KSTATE_SESSION_OPTIONS_SIZE_V1: usize = 80;

// The constants are the ABI: a layout change that moves them fails the build.
const _: () =
    assert!(std::mem::size_of::<kstate_window_options_t>() == KSTATE_WINDOW_OPTIONS_SIZE_V1);
const _: () =
    assert!(std::mem::size_of::<kstate_session_options_t>() == KSTATE_SESSION_OPTIONS_SIZE_V1);

/// Default retention of both option structs: one day, Kafka's default for windowed stores.
const DEFAULT_RETENTION_MS: i64 = 86_400_000;

/// The fields both structs share with `kstate_kv_options_t`.
struct StoreFields {
    engine: kstate_engine_t,
    value_format: kstate_value_format_t,
    sync_on_commit: bool,
    max_uncommitted_bytes: u64,
    rocksdb_block_cache_bytes: usize,
    rocksdb_write_buffer_bytes: usize,
    rocksdb_max_write_buffers: i32,
    rocksdb_bloom_filter: bool,
    rocksdb_statistics: bool,
    rocksdb_bounded_memory_bytes: usize,
    rocksdb_bounded_memtable_bytes: usize,
}

impl StoreFields {
    /// Validated store options, through the key-value options' conversion.
    fn to_store_options(&self) -> Result<StoreOptions> {
        // `..defaults()` fills the fields kstate_kv_options_t gains (its sized layout adds
        // `struct_size` and the knobs set below), so this stays right when it grows.
        let kv = kstate_kv_options_t {
            engine: self.engine,
            value_format: self.value_format,
            max_uncommitted_bytes: self.max_uncommitted_bytes,
            sync_on_commit: self.sync_on_commit,
            rocksdb_block_cache_bytes: self.rocksdb_block_cache_bytes,
            rocksdb_write_buffer_bytes: self.rocksdb_write_buffer_bytes,
            rocksdb_max_write_buffers: self.rocksdb_max_write_buffers,
            ..kstate_kv_options_t::defaults()
        };
        let mut options = kv.to_store_options()?;
        options.rocksdb.bloom_filter = self.rocksdb_bloom_filter;
        options.rocksdb.statistics = self.rocksdb_statistics;
        if self.rocksdb_bounded_memory_bytes != 0 {
            let budget = BoundedMemory {
                total_bytes: self.rocksdb_bounded_memory_bytes,
                memtable_bytes: self.rocksdb_bounded_memtable_bytes,
            };
            budget.validate().map_err(|e| {
                Error::InvalidArgument(format!("options.rocksdb_bounded_memory_*: {e}"))
            })?;
            options.rocksdb.bounded_memory = Some(budget);
        }
        Ok(options)
    }
}

impl kstate_window_options_t {
    /// The defaults (retention 1 day, window size 0), in the current layout.
    pub(crate) fn defaults() -> Self {
        let kv = kstate_kv_options_t::defaults();
        let rocks = StoreOptions::default().rocksdb;
        kstate_window_options_t {
            struct_size: KSTATE_WINDOW_OPTIONS_SIZE_V1,
            engine: KSTATE_ENGINE_ROCKSDB,
            value_format: KSTATE_FORMAT_TIMESTAMPED,
            retention_ms: DEFAULT_RETENTION_MS,
            window_size_ms: 0,
            segment_interval_ms: 0,
            retain_duplicates: false,
            sync_on_commit: kv.sync_on_commit,
            max_uncommitted_bytes: kv.max_uncommitted_bytes,
            rocksdb_block_cache_bytes: kv.rocksdb_block_cache_bytes,
            rocksdb_write_buffer_bytes: kv.rocksdb_write_buffer_bytes,
            rocksdb_max_write_buffers: kv.rocksdb_max_write_buffers,
            rocksdb_bloom_filter: rocks.bloom_filter,
            rocksdb_statistics: rocks.statistics,
            rocksdb_bounded_memory_bytes: 0,
            rocksdb_bounded_memtable_bytes: 0,
        }
    }

    /// Reads a caller's options in the layout its `struct_size` names; NULL is the defaults.
    ///
    /// # Safety
    /// `options` is NULL or points to at least `size_of::<usize>()` readable bytes, and to
    /// `struct_size` readable bytes when that is a known layout's size.
    pub(crate) unsafe fn read(options: *const Self) -> Result<Self> {
        if options.is_null() {
            return Ok(Self::defaults());
        }
        // SAFETY: forwarded to the caller.
        unsafe {
            read_sized(
                options,
                KSTATE_WINDOW_OPTIONS_SIZE_V1,
                "kstate_window_options",
            )
        }
    }

    /// Validates and converts to the core's options.
    pub(crate) fn to_window_options(self) -> Result<WindowOptions> {
        let store = StoreFields {
            engine: self.engine,
            value_format: self.value_format,
            sync_on_commit: self.sync_on_commit,
            max_uncommitted_bytes: self.max_uncommitted_bytes,
            rocksdb_block_cache_bytes: self.rocksdb_block_cache_bytes,
            rocksdb_write_buffer_bytes: self.rocksdb_write_buffer_bytes,
            rocksdb_max_write_buffers: self.rocksdb_max_write_buffers,
            rocksdb_bloom_filter: self.rocksdb_bloom_filter,
            rocksdb_statistics: self.rocksdb_statistics,
            rocksdb_bounded_memory_bytes: self.rocksdb_bounded_memory_bytes,
            rocksdb_bounded_memtable_bytes: self.rocksdb_bounded_memtable_bytes,
        }
        .to_store_options()?;
        // The C window calls split values as timestamped or plain; headers-format window
        // stores are served to Java (JNI) only.
        if store.value_format == crate::ValueFormat::Headers {
            return Err(Error::InvalidArgument(
                "KSTATE_FORMAT_HEADERS is for key-value stores in the C API".into(),
            ));
        }
        let mut options = WindowOptions::new(
            self.retention_ms,
            self.window_size_ms,
            self.retain_duplicates,
        )
        .with_store(store);
        options.segment_interval = bridge::segment_interval(self.segment_interval_ms);
        options.validate()?;
        Ok(options)
    }
}

impl kstate_session_options_t {
    /// The defaults (retention 1 day), in the current layout.
    pub(crate) fn defaults() -> Self {
        let w = kstate_window_options_t::defaults();
        kstate_session_options_t {
            struct_size: KSTATE_SESSION_OPTIONS_SIZE_V1,
            engine: w.engine,
            sync_on_commit: w.sync_on_commit,
            retention_ms: w.retention_ms,
            segment_interval_ms: 0,
            max_uncommitted_bytes: w.max_uncommitted_bytes,
            rocksdb_block_cache_bytes: w.rocksdb_block_cache_bytes,
            rocksdb_write_buffer_bytes: w.rocksdb_write_buffer_bytes,
            rocksdb_max_write_buffers: w.rocksdb_max_write_buffers,
            rocksdb_bloom_filter: w.rocksdb_bloom_filter,
            rocksdb_statistics: w.rocksdb_statistics,
            rocksdb_bounded_memory_bytes: 0,
            rocksdb_bounded_memtable_bytes: 0,
        }
    }

    /// Reads a caller's options as [`kstate_window_options_t::read`].
    ///
    /// # Safety
    /// As [`kstate_window_options_t::read`].
    pub(crate) unsafe fn read(options: *const Self) -> Result<Self> {
        if options.is_null() {
            return Ok(Self::defaults());
        }
        // SAFETY: forwarded to the caller.
        unsafe {
            read_sized(
                options,
                KSTATE_SESSION_OPTIONS_SIZE_V1,
                "kstate_session_options",
            )
        }
    }

    /// Validates and converts to the core's options.
    pub(crate) fn to_session_options(self) -> Result<SessionOptions> {
        let store = StoreFields {
            engine: self.engine,
            value_format: KSTATE_FORMAT_PLAIN,
            sync_on_commit: self.sync_on_commit,
            max_uncommitted_bytes: self.max_uncommitted_bytes,
            rocksdb_block_cache_bytes: self.rocksdb_block_cache_bytes,
            rocksdb_write_buffer_bytes: self.rocksdb_write_buffer_bytes,
            rocksdb_max_write_buffers: self.rocksdb_max_write_buffers,
            rocksdb_bloom_filter: self.rocksdb_bloom_filter,
            rocksdb_statistics: self.rocksdb_statistics,
            rocksdb_bounded_memory_bytes: self.rocksdb_bounded_memory_bytes,
            rocksdb_bounded_memtable_bytes: self.rocksdb_bounded_memtable_bytes,
        }
        .to_store_options()?;
        let mut options = SessionOptions::new(self.retention_ms).with_store(store);
        options.segment_interval = bridge::segment_interval(self.segment_interval_ms);
        options.validate()?;
        Ok(options)
    }
}

/// Reads a sized struct whose only layout so far is `size` bytes.
///
/// # Safety
/// `options` is non-NULL and points to at least `size_of::<usize>()` readable bytes, and to
/// a whole `T` when its leading size is `size`.
unsafe fn read_sized<T: Copy>(options: *const T, size: usize, name: &str) -> Result<T> {
    if !options.is_aligned() {
        return Err(Error::InvalidArgument("options is misaligned".into()));
    }
    // SAFETY: aligned and readable for the leading size field (caller's guarantee).
    let got = unsafe { options.cast::<usize>().read() };
    if got == size {
        // SAFETY: the caller's struct has this layout, all readable; plain old data.
        return Ok(unsafe { options.read() });
    }
    Err(Error::InvalidArgument(size_error(got, size, name)))
}

/// The message for a `struct_size` no layout has.
fn size_error(got: usize, size: usize, name: &str) -> String {
    if got == 0 {
        format!(
            "options.struct_size is 0: initialise the options with \
             {name}_init(&options, sizeof options)"
        )
    } else if got > size {
        format!(
            "options.struct_size {got} is larger than any {name}_t this library ({}) knows \
             ({size} bytes): the program was built against a newer kstate.h, or the options \
             were not initialised with {name}_init",
            env!("CARGO_PKG_VERSION")
        )
    } else {
        format!(
            "options.struct_size {got} is not the size of a {name}_t layout ({size}): \
             initialise the options with {name}_init(&options, sizeof options)"
        )
    }
}

/// Writes `defaults` to a caller's struct of `struct_size` bytes.
///
/// # Safety
/// `options` is NULL or valid for writing `struct_size` bytes.
unsafe fn init_sized<T>(
    options: *mut T,
    struct_size: usize,
    defaults: T,
    size: usize,
    name: &str,
) -> Result<()> {
    if options.is_null() {
        return Err(Error::InvalidArgument("options is NULL".into()));
    }
    if !options.is_aligned() {
        return Err(Error::InvalidArgument("options is misaligned".into()));
    }
    if struct_size != size {
        return Err(Error::InvalidArgument(
            size_error(struct_size, size, name).replace("options.struct_size", "struct_size"),
        ));
    }
    // SAFETY: non-NULL, aligned, writable for this layout's size (caller's guarantee with
    // this `struct_size`).
    unsafe { options.write(defaults) };
    Ok(())
}

/// Sets window store options to the defaults: RocksDB, timestamped values, retention 1
/// day, window size 0, Kafka's segment interval, no duplicates, 64 MiB of uncommitted
/// writes in memory, no fsync on commit, Kafka Streams' RocksDB tuning; and `struct_size`
/// to `struct_size`.
///
/// # Arguments
/// * `options` - the options to initialise.
/// * `struct_size` - `sizeof` the caller's `kstate_window_options_t`: `sizeof options`.
///
/// # Returns
/// NULL on success, else an error (free it with `kstate_error_free`); `options` is left
/// unchanged then.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `options` NULL or misaligned; `struct_size` is not
///   a `KSTATE_WINDOW_OPTIONS_SIZE_*` this library knows.
///
/// # Safety
/// `options` is NULL or valid for writing `struct_size` bytes.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_window_options_init(
    options: *mut kstate_window_options_t,
    struct_size: usize,
) -> *mut kstate_error_t {
    ffi_call(|| {
        // SAFETY: forwarded to the caller.
        unsafe {
            init_sized(
                options,
                struct_size,
                kstate_window_options_t::defaults(),
                KSTATE_WINDOW_OPTIONS_SIZE_V1,
                "kstate_window_options",
            )
        }
    })
}

/// Sets session store options to the defaults: RocksDB, retention 1 day, Kafka's segment
/// interval, 64 MiB of uncommitted writes in memory, no fsync on commit, Kafka Streams'
/// RocksDB tuning; and `struct_size` to `struct_size`.
///
/// # Arguments
/// * `options` - the options to initialise.
/// * `struct_size` - `sizeof` the caller's `kstate_session_options_t`: `sizeof options`.
///
/// # Returns
/// NULL on success, else an error; `options` is left unchanged then.
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - `options` NULL or misaligned; `struct_size` is not
///   a `KSTATE_SESSION_OPTIONS_SIZE_*` this library knows.
///
/// # Safety
/// `options` is NULL or valid for writing `struct_size` bytes.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn kstate_session_options_init(
    options: *mut kstate_session_options_t,
    struct_size: usize,
) -> *mut kstate_error_t {
    ffi_call(|| {
        // SAFETY: forwarded to the caller.
        unsafe {
            init_sized(
                options,
                struct_size,
                kstate_session_options_t::defaults(),
                KSTATE_SESSION_OPTIONS_SIZE_V1,
                "kstate_session_options",
            )
        }
    })
}
