//! `kstate_window_options_t`, `kstate_session_options_t` and `kstate_versioned_options_t`:
//! how the stores segmented by time are opened (a versioned store's history is segmented as
//! Kafka's). Sized structs as `kstate_kv_options_t` (see `sized.rs`); their store fields
//! are those of `kstate_kv_options_t`, validated by its conversion. Each first layout ends
//! without tail padding, so it is a byte prefix of the second.

use crate::{bridge, Error, Result, SessionOptions, VersionedOptions, WindowOptions};

use super::options::{
    kstate_engine_t, kstate_kv_options_t, kstate_value_format_t, KSTATE_FORMAT_PLAIN,
    KSTATE_FORMAT_TIMESTAMPED, KSTATE_KV_OPTIONS_SIZE_V2,
};
use super::sized::{Layouts, OptionsStruct};

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
    /// As `kstate_kv_options_t`.
    pub engine: kstate_engine_t,
    /// `KSTATE_FORMAT_TIMESTAMPED` (default; Kafka's timestamped window store, whose values
    /// carry the record timestamp), `KSTATE_FORMAT_PLAIN` (Kafka's plain window store) or
    /// `KSTATE_FORMAT_HEADERS` (Kafka 4.3+'s `ValueTimestampHeaders` layout, KIP-1271: the
    /// typed calls write no headers and return value and timestamp, the raw calls take and
    /// return the whole layout). An existing store must be opened with the format it was
    /// created with (else `KSTATE_ERR_FORMAT_MISMATCH`).
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
    /// As `kstate_kv_options_t`.
    pub sync_on_commit: bool,
    /// As `kstate_kv_options_t`.
    pub max_uncommitted_bytes: u64,
    /// RocksDB block cache size in bytes per live segment (the store's one cache holds it
    /// times the segments live at its retention and segment interval, at most 3, as Kafka's
    /// stores have a cache per segment). Default 50 MiB. Ignored by the memory engine and
    /// when `rocksdb_bounded_memory_bytes` is set.
    pub rocksdb_block_cache_bytes: usize,
    /// RocksDB memtable size per column family in bytes; > 0. Default 16 MiB. The data
    /// family gets it per live segment, as the block cache (at most 3 times).
    pub rocksdb_write_buffer_bytes: usize,
    /// As `kstate_kv_options_t`.
    pub rocksdb_max_write_buffers: i32,
    /// As `kstate_kv_options_t`.
    pub rocksdb_bloom_filter: bool,
    /// As `kstate_kv_options_t`.
    pub rocksdb_statistics: bool,
    /// As `kstate_kv_options_t`.
    pub rocksdb_bounded_memory_bytes: usize,
    /// As `kstate_kv_options_t`.
    pub rocksdb_bounded_memtable_bytes: usize,
    /// Kafka's time-ordered window store (`RocksDbIndexedTimeOrderedWindowBytesStoreSupplier`,
    /// what `EmitStrategy.onWindowClose()` uses): `kstate_window_fetch_all`,
    /// `kstate_window_all` and (without `key_index`) key-range fetches return windows by
    /// start, then key, from a time index kept in the same transaction (values are stored
    /// twice); the retention floor is Kafka's time-ordered one. Fixed when the store is
    /// created: opening it with the other setting is `KSTATE_ERR_FORMAT_MISMATCH`. Default
    /// false. (Since layout `KSTATE_WINDOW_OPTIONS_SIZE_V2`.)
    pub time_ordered: bool,
    /// With `time_ordered`: Kafka's `hasIndex` (sliding windows), under which key-range
    /// fetches keep the key-first order. True without `time_ordered` is
    /// `KSTATE_ERR_INVALID_ARGUMENT`. Default false. (Since layout
    /// `KSTATE_WINDOW_OPTIONS_SIZE_V2`.)
    pub key_index: bool,
}

/// Options for `kstate_session_open`. Initialise them with
/// `kstate_session_options_init(&options, sizeof options)`, then set at least
/// `retention_ms` and change the other fields you need. Aggregates are stored as given
/// (Kafka's session stores are not timestamped).
///
/// ABI: as `kstate_window_options_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_session_options_t {
    /// The size of this struct as the caller's header defines it: set by
    /// `kstate_session_options_init`; never change it.
    pub struct_size: usize,
    /// As `kstate_kv_options_t`.
    pub engine: kstate_engine_t,
    /// As `kstate_kv_options_t`.
    pub sync_on_commit: bool,
    /// How long sessions are kept, in ms (>= 0). With stream time T (the largest session
    /// end written), reads no longer return sessions ending at or before
    /// T - `retention_ms`; a put into a segment that old is dropped. Default 1 day.
    pub retention_ms: i64,
    /// Segment interval in ms for a new store (> 0), or 0 (default) for Kafka's
    /// `max(retention_ms / 2, 60000)`. An existing store keeps its own.
    pub segment_interval_ms: i64,
    /// As `kstate_kv_options_t`.
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
    /// `KSTATE_FORMAT_PLAIN` (default: aggregates as given, Kafka's session store) or
    /// `KSTATE_FORMAT_HEADERS` (Kafka 4.3+'s `AggregationWithHeaders` layout, KIP-1271:
    /// `[varint headersSize][headers][aggregation]`, which every aggregate given and
    /// returned then has). `KSTATE_FORMAT_TIMESTAMPED` is `KSTATE_ERR_INVALID_ARGUMENT`
    /// (session aggregates carry no timestamp). An existing store must be opened with the
    /// format it was created with (else `KSTATE_ERR_FORMAT_MISMATCH`). (Since layout
    /// `KSTATE_SESSION_OPTIONS_SIZE_V2`.)
    pub value_format: kstate_value_format_t,
    /// Kafka's time-ordered session store (`RocksDbTimeOrderedSessionBytesStoreSupplier`,
    /// what `EmitStrategy.onWindowClose()` uses), which also answers
    /// `kstate_session_find_sessions_by_end`. Fixed when the store is created: opening it
    /// with the other setting is `KSTATE_ERR_FORMAT_MISMATCH`. Default false. (Since layout
    /// `KSTATE_SESSION_OPTIONS_SIZE_V2`.)
    pub time_ordered: bool,
}

/// Options for `kstate_versioned_open`. Initialise them with
/// `kstate_versioned_options_init(&options, sizeof options)`, then set at least
/// `history_retention_ms` and change the other fields you need. Values are stored as
/// given, each version with its timestamp (there is no value format).
///
/// ABI: as `kstate_window_options_t` (one layout so far).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_versioned_options_t {
    /// The size of this struct as the caller's header defines it: set by
    /// `kstate_versioned_options_init`; never change it.
    pub struct_size: usize,
    /// As `kstate_kv_options_t`.
    pub engine: kstate_engine_t,
    /// As `kstate_kv_options_t`.
    pub sync_on_commit: bool,
    /// Kafka's `historyRetention` in ms (>= 0): how long older versions stay readable, and
    /// also the grace period of writes. With stream time T (the largest timestamp written),
    /// a put or delete older than T - `history_retention_ms` is refused
    /// (`KSTATE_VERSIONED_NOT_PUT`), and a read as of a time older than that sees only the
    /// latest version. Default 1 day.
    pub history_retention_ms: i64,
    /// Segment interval in ms for a new store (> 0; the granularity at which expired
    /// history is dropped), or 0 (default) for Kafka's default for the history retention.
    /// An existing store keeps its own.
    pub segment_interval_ms: i64,
    /// As `kstate_kv_options_t`.
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

/// `struct_size` of the first layout of `kstate_window_options_t` (up to
/// `rocksdb_bounded_memtable_bytes`): 96 bytes.
pub const KSTATE_WINDOW_OPTIONS_SIZE_V1: usize = 96;
/// `struct_size` of the second layout of `kstate_window_options_t` (adds `time_ordered`,
/// `key_index`): 104 bytes, this header's `sizeof(kstate_window_options_t)`.
pub const KSTATE_WINDOW_OPTIONS_SIZE_V2: usize = 104;
/// `struct_size` of the first layout of `kstate_session_options_t` (up to
/// `rocksdb_bounded_memtable_bytes`): 80 bytes.
pub const KSTATE_SESSION_OPTIONS_SIZE_V1: usize = 80;
/// `struct_size` of the second layout of `kstate_session_options_t` (adds `value_format`,
/// `time_ordered`): 88 bytes, this header's `sizeof(kstate_session_options_t)`.
pub const KSTATE_SESSION_OPTIONS_SIZE_V2: usize = 88;

/// `struct_size` of the first layout of `kstate_versioned_options_t`: 80 bytes, this header's
/// `sizeof(kstate_versioned_options_t)`.
pub const KSTATE_VERSIONED_OPTIONS_SIZE_V1: usize = 80;

// The constants are the ABI: a layout change that moves them fails the build. Layout 1 is
// a byte prefix of layout 2 (the first new field starts where layout 1 ended).
const _: () =
    assert!(std::mem::size_of::<kstate_window_options_t>() == KSTATE_WINDOW_OPTIONS_SIZE_V2);
const _: () = assert!(
    std::mem::offset_of!(kstate_window_options_t, time_ordered) == KSTATE_WINDOW_OPTIONS_SIZE_V1
);
const _: () =
    assert!(std::mem::size_of::<kstate_session_options_t>() == KSTATE_SESSION_OPTIONS_SIZE_V2);
const _: () = assert!(
    std::mem::offset_of!(kstate_session_options_t, value_format) == KSTATE_SESSION_OPTIONS_SIZE_V1
);

const _: () =
    assert!(std::mem::size_of::<kstate_versioned_options_t>() == KSTATE_VERSIONED_OPTIONS_SIZE_V1);

/// Default retention of the option structs: one day, Kafka's default for windowed stores.
const DEFAULT_RETENTION_MS: i64 = 86_400_000;

/// A `$t` whose store fields (the fields every options struct has, by the same names) are
/// those of `$from`, and whose other fields are as given: a window or session struct from the
/// key-value defaults, or the key-value struct a window or session struct converts through.
macro_rules! with_store_fields {
    ($from:expr, $t:ident { $($field:ident: $value:expr),* $(,)? }) => {{
        let from = $from;
        $t {
            engine: from.engine,
            sync_on_commit: from.sync_on_commit,
            max_uncommitted_bytes: from.max_uncommitted_bytes,
            rocksdb_block_cache_bytes: from.rocksdb_block_cache_bytes,
            rocksdb_write_buffer_bytes: from.rocksdb_write_buffer_bytes,
            rocksdb_max_write_buffers: from.rocksdb_max_write_buffers,
            rocksdb_bloom_filter: from.rocksdb_bloom_filter,
            rocksdb_statistics: from.rocksdb_statistics,
            rocksdb_bounded_memory_bytes: from.rocksdb_bounded_memory_bytes,
            rocksdb_bounded_memtable_bytes: from.rocksdb_bounded_memtable_bytes,
            $($field: $value),*
        }
    }};
}

/// The store options of a window or session options struct, through the key-value options'
/// conversion and checks.
macro_rules! store_options {
    ($o:expr) => {
        store_options!($o, $o.value_format)
    };
    ($o:expr, $format:expr) => {
        with_store_fields!(
            $o,
            kstate_kv_options_t {
                struct_size: KSTATE_KV_OPTIONS_SIZE_V2,
                value_format: $format,
            }
        )
        .convert()
    };
}

impl OptionsStruct for kstate_window_options_t {
    type Options = WindowOptions;
    const LAYOUTS: Layouts = Layouts {
        v1: KSTATE_WINDOW_OPTIONS_SIZE_V1,
        v1_fields: KSTATE_WINDOW_OPTIONS_SIZE_V1,
        v2: KSTATE_WINDOW_OPTIONS_SIZE_V2,
        name: "kstate_window_options",
    };
    /// The defaults (retention 1 day, window size 0), in the current layout.
    fn defaults() -> Self {
        with_store_fields!(
            kstate_kv_options_t::defaults(),
            kstate_window_options_t {
                struct_size: KSTATE_WINDOW_OPTIONS_SIZE_V2,
                value_format: KSTATE_FORMAT_TIMESTAMPED,
                retention_ms: DEFAULT_RETENTION_MS,
                window_size_ms: 0,
                segment_interval_ms: 0,
                retain_duplicates: false,
                time_ordered: false,
                key_index: false,
            }
        )
    }

    /// Validates and converts to the core's options.
    fn convert(self) -> Result<WindowOptions> {
        let store = store_options!(self)?;
        if self.key_index && !self.time_ordered {
            return Err(Error::InvalidArgument(
                "options.key_index is Kafka's hasIndex of a time-ordered window store: it \
                 needs options.time_ordered"
                    .into(),
            ));
        }
        let mut options = WindowOptions::new(
            self.retention_ms,
            self.window_size_ms,
            self.retain_duplicates,
        )
        .with_store(store);
        options.segment_interval = bridge::segment_interval(self.segment_interval_ms);
        if self.time_ordered {
            options = options.time_ordered(self.key_index);
        }
        options.validate()?;
        Ok(options)
    }
}

impl OptionsStruct for kstate_session_options_t {
    type Options = SessionOptions;
    const LAYOUTS: Layouts = Layouts {
        v1: KSTATE_SESSION_OPTIONS_SIZE_V1,
        v1_fields: KSTATE_SESSION_OPTIONS_SIZE_V1,
        v2: KSTATE_SESSION_OPTIONS_SIZE_V2,
        name: "kstate_session_options",
    };
    /// The defaults (retention 1 day), in the current layout.
    fn defaults() -> Self {
        with_store_fields!(
            kstate_kv_options_t::defaults(),
            kstate_session_options_t {
                struct_size: KSTATE_SESSION_OPTIONS_SIZE_V2,
                value_format: KSTATE_FORMAT_PLAIN,
                retention_ms: DEFAULT_RETENTION_MS,
                segment_interval_ms: 0,
                time_ordered: false,
            }
        )
    }

    /// Validates and converts to the core's options.
    fn convert(self) -> Result<SessionOptions> {
        // The core reads timestamped as plain for sessions; C callers are told instead.
        if self.value_format == KSTATE_FORMAT_TIMESTAMPED {
            return Err(Error::InvalidArgument(
                "options.value_format: a session store is KSTATE_FORMAT_PLAIN or \
                 KSTATE_FORMAT_HEADERS (session aggregates carry no timestamp)"
                    .into(),
            ));
        }
        let store = store_options!(self)?;
        let mut options = SessionOptions::new(self.retention_ms).with_store(store);
        options.segment_interval = bridge::segment_interval(self.segment_interval_ms);
        options.time_ordered = self.time_ordered;
        options.validate()?;
        Ok(options)
    }
}

impl OptionsStruct for kstate_versioned_options_t {
    type Options = VersionedOptions;
    const LAYOUTS: Layouts = Layouts {
        v1: KSTATE_VERSIONED_OPTIONS_SIZE_V1,
        v1_fields: KSTATE_VERSIONED_OPTIONS_SIZE_V1,
        v2: KSTATE_VERSIONED_OPTIONS_SIZE_V1,
        name: "kstate_versioned_options",
    };
    /// The defaults (history retention 1 day), in the current layout.
    fn defaults() -> Self {
        with_store_fields!(
            kstate_kv_options_t::defaults(),
            kstate_versioned_options_t {
                struct_size: KSTATE_VERSIONED_OPTIONS_SIZE_V1,
                history_retention_ms: DEFAULT_RETENTION_MS,
                segment_interval_ms: 0,
            }
        )
    }

    /// Validates and converts to the core's options (the core checks retention and
    /// interval when the store opens, before anything is created).
    fn convert(self) -> Result<VersionedOptions> {
        // Plain: versions are stored in the store's own layout, whatever the format says.
        let store = store_options!(self, KSTATE_FORMAT_PLAIN)?;
        let mut options = VersionedOptions::new(self.history_retention_ms).with_store(store);
        options.segment_interval = bridge::segment_interval(self.segment_interval_ms);
        Ok(options)
    }
}
