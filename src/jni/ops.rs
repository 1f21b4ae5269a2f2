//! The bodies of the natives, in plain Rust types: everything a native does after it has
//! converted its Java arguments (arrays, strings) and before it converts its result.
//!
//! Handles arrive as the `jlong`s Java holds and are resolved through the process-wide
//! table shared with C ([`crate::handle`]), with the shared rules of [`crate::bridge`], so a
//! NULL, forged, closed or wrong-kind handle fails here exactly as it does on C. Keeping
//! these functions free of `JNIEnv` lets the Rust tests drive the JNI surface, misuse
//! included, without a JVM.

use jni::sys::{jint, jlong};

use super::codec;
use crate::bridge::Transactional;
use crate::engine::rocksdb::{BoundedMemory, RocksOptions};
use crate::handle::HANDLES;
use crate::{bridge, handle};
use crate::{
    EngineKind, Error, Isolation, KeyRange, Result, StoreOptions, TopicPartition, ValueFormat,
};

/// Returned by `committedOffset` when no offset is committed (never a Kafka offset).
pub(crate) const NO_OFFSET: jlong = jlong::MIN;

/// The table's number for a Java handle (bit-for-bit: Java has no unsigned long).
pub(crate) fn number(h: jlong) -> u64 {
    h as u64
}

/// A table number as Java's signed long (bit-for-bit; handles are positive anyway).
pub(crate) fn jhandle(h: u64) -> jlong {
    h as jlong
}

pub(crate) fn isolation(committed: bool) -> Isolation {
    if committed {
        Isolation::ReadCommitted
    } else {
        Isolation::ReadUncommitted
    }
}

fn non_negative(value: jlong, what: &str) -> Result<u64> {
    u64::try_from(value)
        .map_err(|_| Error::InvalidArgument(format!("{what} must not be negative: {value}")))
}

pub(crate) fn saturating_jlong(n: u64) -> jlong {
    jlong::try_from(n).unwrap_or(jlong::MAX)
}

/// The options of `open`, as Java passes them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenArgs {
    /// 0 = RocksDB, 1 = memory.
    pub engine: jint,
    /// Value format, numbered as C's `KSTATE_FORMAT_*`: 0 timestamped, 1 plain, 2 headers.
    pub value_format: jint,
    /// 0 keeps the default.
    pub max_uncommitted_bytes: jlong,
    /// fsync on commit.
    pub sync_on_commit: bool,
    /// 0 keeps the default.
    pub block_cache_bytes: jlong,
    /// 0 keeps the default.
    pub write_buffer_bytes: jlong,
    /// Memtables per column family; 0 keeps the default.
    pub max_write_buffers: jint,
    /// Bloom filters in SST files.
    pub bloom_filter: bool,
    /// RocksDB statistics (tickers).
    pub statistics: bool,
    /// Total bytes of the process-wide shared budget; 0 = no shared budget.
    pub bounded_memory_bytes: jlong,
    /// Memtable share of that budget in bytes (with a budget only).
    pub bounded_memtable_bytes: jlong,
    /// [`StoreOptions::adopt_left_open`]: the adapter sets it under at-least-once.
    pub adopt_left_open: bool,
}

impl OpenArgs {
    pub(crate) fn store_options(&self) -> Result<StoreOptions> {
        let engine = match self.engine {
            0 => EngineKind::RocksDb,
            1 => EngineKind::Memory,
            other => return Err(Error::InvalidArgument(format!("unknown engine {other}"))),
        };
        let mut options = StoreOptions::timestamped(engine);
        options.value_format = match self.value_format {
            0 => ValueFormat::Timestamped,
            1 => ValueFormat::Plain,
            2 => ValueFormat::Headers,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown value format {other}"
                )))
            }
        };
        if self.max_uncommitted_bytes != 0 {
            options.max_uncommitted_bytes =
                non_negative(self.max_uncommitted_bytes, "maxUncommittedBytes")?;
        }
        options.sync_on_commit = self.sync_on_commit;
        options.adopt_left_open = self.adopt_left_open;
        let defaults = RocksOptions::default();
        if self.block_cache_bytes != 0 {
            options.rocksdb.block_cache_bytes =
                usize::try_from(non_negative(self.block_cache_bytes, "blockCacheBytes")?)
                    .unwrap_or(defaults.block_cache_bytes);
        }
        if self.write_buffer_bytes != 0 {
            options.rocksdb.write_buffer_bytes =
                usize::try_from(non_negative(self.write_buffer_bytes, "writeBufferBytes")?)
                    .unwrap_or(defaults.write_buffer_bytes);
        }
        if self.max_write_buffers != 0 {
            options.rocksdb.max_write_buffers = self.max_write_buffers;
        }
        options.rocksdb.bloom_filter = self.bloom_filter;
        options.rocksdb.statistics = self.statistics;
        if self.bounded_memory_bytes != 0 {
            let size = |v: jlong, what: &str| -> Result<usize> {
                usize::try_from(non_negative(v, what)?)
                    .map_err(|_| Error::InvalidArgument(format!("{what} is too large: {v}")))
            };
            options.rocksdb.bounded_memory = Some(BoundedMemory {
                total_bytes: size(self.bounded_memory_bytes, "boundedMemoryBytes")?,
                memtable_bytes: size(self.bounded_memtable_bytes, "boundedMemtableBytes")?,
            });
        }
        options.rocksdb.validate()?;
        Ok(options)
    }
}

/// `open`: a new store handle. `path` is `None` for Java's `null` (memory engine only).
pub(crate) fn open(path: Option<&str>, args: &OpenArgs) -> Result<jlong> {
    let options = args.store_options()?;
    bridge::open_store(path.map(str::as_bytes), &options).map(jhandle)
}

/// `close`: closes the store and its iterators; the handle is retired.
pub(crate) fn close(h: jlong) -> Result<()> {
    bridge::close_store(number(h))
}

/// `get`: the raw value or `None`.
pub(crate) fn get(h: jlong, key: &[u8], committed: bool) -> Result<Option<Vec<u8>>> {
    handle::store(number(h))?.get_raw_with(isolation(committed), key)
}

/// `put`: `None` deletes.
pub(crate) fn put(h: jlong, key: &[u8], value: Option<&[u8]>) -> Result<()> {
    handle::store(number(h))?.put_raw(key, value)
}

/// `putIfAbsent`: the existing value, or `None` when `value` was written.
pub(crate) fn put_if_absent(h: jlong, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
    handle::store(number(h))?.put_if_absent_raw(key, value)
}

/// `delete`: the deleted value or `None`.
pub(crate) fn delete(h: jlong, key: &[u8]) -> Result<Option<Vec<u8>>> {
    handle::store(number(h))?.delete_raw(key)
}

/// `putAll`: a packed batch ([`codec`]), all or nothing.
pub(crate) fn put_all(h: jlong, packed: &[u8]) -> Result<()> {
    let store = handle::store(number(h))?;
    store.put_all_raw(codec::decode_entries(packed)?)
}

/// `scan`: a new iterator handle over `[from, to]` (`None` = open end), or over the keys
/// starting with `from` when `prefix` is set.
pub(crate) fn scan(
    h: jlong,
    from: Option<&[u8]>,
    to: Option<&[u8]>,
    prefix: bool,
    reverse: bool,
    committed: bool,
) -> Result<jlong> {
    let range = if prefix {
        KeyRange::prefix(from.unwrap_or_default())
    } else {
        KeyRange::inclusive(from, to)
    };
    bridge::open_iter(number(h), |s| s.scan(isolation(committed), &range, reverse)).map(jhandle)
}

/// `next`: the next entries packed ([`codec`]), at least one if any remains; `None` once
/// exhausted. Non-positive bounds count as 1. The batch rules (checked timestamped values,
/// no entry lost to an error) are [`bridge::KvIterHandle::next_batch`]'s.
pub(crate) fn next(it: jlong, max_entries: jint, max_bytes: jint) -> Result<Option<Vec<u8>>> {
    pack(&*handle::iter(number(it))?, max_entries, max_bytes)
}

/// The next batch of `iter` packed ([`codec`] entries), `None` once exhausted; what every
/// iterator's `next` native returns. Each entry is encoded as soon as it is read, from the
/// slices the store's cursor lends, and the buffer is sized from the first entry, so a
/// batch costs one buffer and one copy of each entry, not a list of entries and then a
/// buffer.
pub(crate) fn pack(
    iter: &bridge::KvIterHandle,
    max_entries: jint,
    max_bytes: jint,
) -> Result<Option<Vec<u8>>> {
    let max_entries = usize::try_from(max_entries.max(1)).unwrap_or(1);
    let max_bytes = usize::try_from(max_bytes.max(1)).unwrap_or(1);
    let mut packed: Vec<u8> = Vec::new();
    let mut failed = None;
    let taken = iter.next_batch_each(max_entries, max_bytes, |k, v| {
        let size = k.len() + v.len() + 8;
        if packed.is_empty() {
            packed.reserve(
                size.saturating_mul(max_entries)
                    .min(max_bytes.saturating_add(size)),
            );
        }
        // Only a key or value over 2 GiB fails, which no store accepts.
        if let Err(e) = codec::encode_entry(&mut packed, k, Some(v)) {
            failed.get_or_insert(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok((taken > 0).then_some(packed))
}

/// `closeIterator`: releases the iterator; the handle is retired.
pub(crate) fn close_iterator(it: jlong) -> Result<()> {
    bridge::close_iter(number(it))
}

/// `restoreBatch`: changelog records (packed, [`codec`]) written straight to the engine and
/// committed with the offsets and metadata ([`crate::KvStore::restore_batch`]).
pub(crate) fn restore_batch(
    h: jlong,
    packed: &[u8],
    offsets: &[(TopicPartition, Option<i64>)],
    metadata: Option<&[u8]>,
) -> Result<()> {
    let store = handle::store(number(h))?;
    store.restore_batch(codec::decode_entries(packed)?, offsets, metadata)
}

/// `isUpgrading`.
pub(crate) fn is_upgrading(h: jlong) -> Result<bool> {
    bridge::is_upgrading(number(h))
}

/// `upgradeBySwap`, its progress already turned into a Rust callback by the native.
pub(crate) fn upgrade_by_swap(h: jlong, progress: &mut bridge::Progress<'_>) -> Result<jlong> {
    let copied = bridge::upgrade_by_swap(number(h), progress)?;
    Ok(jlong::try_from(copied).unwrap_or(jlong::MAX))
}

/// `approximateNumEntries`.
pub(crate) fn approximate_num_entries(h: jlong, committed: bool) -> Result<jlong> {
    let n = handle::store(number(h))?.approximate_num_entries_with(isolation(committed))?;
    Ok(saturating_jlong(n))
}

// ----- the transaction natives, once for every kind ---------------------------------------

/// `*Commit`.
pub(crate) fn commit<T: Transactional>(
    h: jlong,
    offsets: &[(TopicPartition, Option<i64>)],
    metadata: Option<&[u8]>,
) -> Result<()> {
    HANDLES.get::<T>(number(h))?.commit(offsets, metadata)
}

/// `*CommittedOffset`: [`NO_OFFSET`] when none.
pub(crate) fn committed_offset<T: Transactional>(
    h: jlong,
    topic: String,
    partition: jint,
) -> Result<jlong> {
    let tp = TopicPartition::new(topic, partition);
    Ok(HANDLES
        .get::<T>(number(h))?
        .committed_offset(&tp)?
        .unwrap_or(NO_OFFSET))
}

/// `*CommittedMetadata`.
pub(crate) fn committed_metadata<T: Transactional>(h: jlong) -> Result<Option<Vec<u8>>> {
    HANDLES.get::<T>(number(h))?.committed_metadata()
}

/// `*Rollback`.
pub(crate) fn rollback<T: Transactional>(h: jlong) -> Result<()> {
    HANDLES.get::<T>(number(h))?.rollback()
}

/// `*Flush`: commit keeping the committed offsets.
pub(crate) fn flush<T: Transactional>(h: jlong, metadata: Option<&[u8]>) -> Result<()> {
    bridge::flush(HANDLES.get::<T>(number(h))?.as_ref(), metadata)
}

/// `*ApproximateNumUncommittedBytes`.
pub(crate) fn uncommitted_bytes<T: Transactional>(h: jlong) -> Result<jlong> {
    Ok(saturating_jlong(
        HANDLES.get::<T>(number(h))?.uncommitted_bytes()?,
    ))
}

/// `*Property`: -1 when there is none.
pub(crate) fn property<T: Transactional>(h: jlong, name: &str) -> Result<jlong> {
    Ok(HANDLES
        .get::<T>(number(h))?
        .property(name)?
        .map_or(-1, saturating_jlong))
}
