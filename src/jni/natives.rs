//! The key-value natives of `dev.kstate.internal.KstateNative`, the open options of every
//! kind, the two natives written by hand (upgrade by swap calls back into Java; the
//! loader's version check sits on another class) and what every kind's natives use.

use std::ops::ControlFlow;

use jni::objects::{JClass, JObject, JValue};
use jni::sys::{jint, jlong};
use jni::JNIEnv;

use super::codec;
use super::convert::JavaBytes;
use super::declare::{kind_natives, natives};
use super::guard::{guard, Failure};
use crate::bridge::{self, KvIterHandle, SessionIterHandle, WindowIterHandle};
use crate::engine::rocksdb::BoundedMemory;
use crate::handle::{Handled, HANDLES};
use crate::store::{PlannedStore, SessionOptions, VersionedOptions, WindowOptions};
use crate::{EngineKind, Error, Isolation, KeyRange, KvStore, Result, StoreOptions, ValueFormat};

/// Returned by `committedOffset` when no offset is committed (never a Kafka offset); in
/// `commit`'s offsets it removes the partition's offset.
pub(crate) const NO_OFFSET: jlong = jlong::MIN;

/// The table's number for a Java handle, bit for bit (Java has no unsigned long).
pub(crate) fn number(h: jlong) -> u64 {
    h as u64
}

/// A table number as Java's signed long, bit for bit.
pub(crate) fn jhandle(h: u64) -> jlong {
    h as jlong
}

/// The live object of kind `T` behind a Java handle (the table's checks: null, forged,
/// closed and wrong-kind handles fail as on C).
pub(crate) fn store<T: Handled>(h: jlong) -> Result<std::sync::Arc<T>> {
    HANDLES.get::<T>(number(h))
}

pub(crate) fn isolation(committed: bool) -> Isolation {
    if committed {
        Isolation::ReadCommitted
    } else {
        Isolation::ReadUncommitted
    }
}

/// What a checkpoint holds, for `KstateCheckpoint.decode` (Java), big-endian:
/// `[i64 sequence][i32 files][i64 total bytes][i32 n]{[i32 len][UTF-8 topic][i32 partition]
/// [i64 offset]}*[i32 metadata length, -1 for none][metadata]`.
pub(crate) fn pack_checkpoint(info: &crate::CheckpointInfo) -> Vec<u8> {
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX).to_be_bytes();
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&saturating(info.sequence).to_be_bytes());
    out.extend_from_slice(&count(info.files.len()));
    out.extend_from_slice(&saturating(info.total_bytes()).to_be_bytes());
    out.extend_from_slice(&count(info.offsets.len()));
    for (tp, offset) in &info.offsets {
        out.extend_from_slice(&count(tp.topic.len()));
        out.extend_from_slice(tp.topic.as_bytes());
        out.extend_from_slice(&tp.partition.to_be_bytes());
        out.extend_from_slice(&offset.to_be_bytes());
    }
    match &info.metadata {
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(m) => {
            out.extend_from_slice(&count(m.len()));
            out.extend_from_slice(m);
        }
    }
    out
}

pub(crate) fn saturating(n: u64) -> jlong {
    jlong::try_from(n).unwrap_or(jlong::MAX)
}

fn non_negative(value: jlong, what: &str) -> Result<u64> {
    u64::try_from(value)
        .map_err(|_| Error::InvalidArgument(format!("{what} must not be negative: {value}")))
}

fn size_of(value: jlong, what: &str) -> Result<usize> {
    usize::try_from(non_negative(value, what)?)
        .map_err(|_| Error::InvalidArgument(format!("{what} is too large: {value}")))
}

/// The `n`th of `all`: how Java numbers engines and value formats.
fn numbered<T: Copy>(n: jlong, what: &str, all: &[T]) -> Result<T> {
    let found = usize::try_from(n).ok().and_then(|i| all.get(i).copied());
    found.ok_or_else(|| Error::InvalidArgument(format!("unknown {what} {n}")))
}

/// A value format as Java numbers it (C's `KSTATE_FORMAT_*`).
fn value_format(n: jlong) -> Result<ValueFormat> {
    let formats = [
        ValueFormat::Timestamped,
        ValueFormat::Plain,
        ValueFormat::Headers,
    ];
    numbered(n, "value format", &formats)
}

/// The options of the four open natives, which Java packs into one `long[]` of
/// [`OpenArgs::LEN`] in this order (`KstateNative.openOptions` writes the same list):
/// engine (0 RocksDB, 1 memory), valueFormat (0 timestamped, 1 plain, 2 headers: C's
/// `KSTATE_FORMAT_*`), maxUncommittedBytes, syncOnCommit, blockCacheBytes, writeBufferBytes,
/// maxWriteBuffers, bloomFilter, statistics, boundedMemoryBytes, boundedMemtableBytes,
/// adoptLeftOpen; then, read by window and session stores only, retentionMs, windowSizeMs,
/// retainDuplicates, segmentIntervalMs, timeOrdered, keyIndex, kafkaHeaders (the fields of
/// [`WindowOptions`] and [`SessionOptions`]; a versioned store reads retentionMs as its
/// history retention and segmentIntervalMs, [`VersionedOptions`]). Booleans are 0 or 1; 0 for a size, count or
/// segment interval keeps kstate's (Kafka's) default; boundedMemoryBytes 0: no shared budget.
#[derive(Debug, Clone)]
pub(crate) struct OpenArgs {
    /// The options of a window store; those of a key-value store are its `store`.
    pub window: WindowOptions,
    /// The options of a session store.
    pub session: SessionOptions,
    /// The options of a versioned store.
    pub versioned: VersionedOptions,
}

impl OpenArgs {
    /// The length of the packed options.
    pub(crate) const LEN: usize = 19;

    /// Decodes the packed options, refusing what the store's options would not take.
    pub(crate) fn decode(packed: &[jlong]) -> Result<OpenArgs> {
        let wrong = |_| Error::InvalidArgument(format!("{} open options", packed.len()));
        #[rustfmt::skip]
        let [engine, format, max_uncommitted, sync, cache, buffer, buffers, bloom, stats, bounded,
            memtable, adopt, retention, size, duplicates, interval, time_ordered, index, headers] =
            <[jlong; Self::LEN]>::try_from(packed).map_err(wrong)?;
        let engines = [EngineKind::RocksDb, EngineKind::Memory];
        let mut store = StoreOptions::timestamped(numbered(engine, "engine", &engines)?);
        store.value_format = value_format(format)?;
        if max_uncommitted != 0 {
            store.max_uncommitted_bytes = non_negative(max_uncommitted, "maxUncommittedBytes")?;
        }
        (store.sync_on_commit, store.adopt_left_open) = (sync != 0, adopt != 0);
        let rocks = &mut store.rocksdb;
        // Past usize (32-bit targets only) a size keeps the default, as it always did.
        let or = |v: jlong, what: &str, default: usize| -> Result<usize> {
            match v {
                0 => Ok(default),
                v => Ok(usize::try_from(non_negative(v, what)?).unwrap_or(default)),
            }
        };
        rocks.block_cache_bytes = or(cache, "blockCacheBytes", rocks.block_cache_bytes)?;
        rocks.write_buffer_bytes = or(buffer, "writeBufferBytes", rocks.write_buffer_bytes)?;
        if buffers != 0 {
            rocks.max_write_buffers = jint::try_from(buffers).unwrap_or(-1);
        }
        (rocks.bloom_filter, rocks.statistics) = (bloom != 0, stats != 0);
        if bounded != 0 {
            rocks.bounded_memory = Some(BoundedMemory {
                total_bytes: size_of(bounded, "boundedMemoryBytes")?,
                memtable_bytes: size_of(memtable, "boundedMemtableBytes")?,
            });
        }
        rocks.validate()?;
        let versioned = VersionedOptions {
            store: store.clone(),
            history_retention: retention,
            segment_interval: bridge::segment_interval(interval),
        };
        let mut window = WindowOptions::new(retention, size, duplicates != 0);
        let mut session = SessionOptions::new(retention).with_store(store.clone());
        window = window.with_store(store);
        window.segment_interval = bridge::segment_interval(interval);
        session.segment_interval = window.segment_interval;
        window.time_ordered = time_ordered != 0;
        window.key_index = window.time_ordered && index != 0;
        session.time_ordered = window.time_ordered;
        session.kafka_headers_format = headers != 0;
        Ok(OpenArgs {
            window,
            session,
            versioned,
        })
    }
}

/// An iterator handle whose `next` native returns its entries in packed batches ([`codec`]
/// entries), `None` once exhausted: what every kind's `next` calls.
pub(crate) trait Packed: Handled {
    /// The next batch: at most `max_entries`, stopping after the entry that reaches
    /// `max_bytes` (both at least 1).
    fn pack(&self, max_entries: jint, max_bytes: jint) -> Result<Option<Vec<u8>>>;
}

/// `max_entries` and `max_bytes` of a `next` call as sizes, at least 1 each.
pub(crate) fn batch_limits(max_entries: jint, max_bytes: jint) -> (usize, usize) {
    let at_least_one = |n: jint| usize::try_from(n.max(1)).unwrap_or(1);
    (at_least_one(max_entries), at_least_one(max_bytes))
}

/// The batch rules (checked timestamped values, no entry lost to an error) are
/// [`KvIterHandle::next_batch_each`]'s. Each entry is encoded as soon as it is read, from the
/// slices the store's cursor lends, and the buffer is sized from the first entry: a batch
/// costs one buffer and one copy of each entry.
impl Packed for KvIterHandle {
    fn pack(&self, max_entries: jint, max_bytes: jint) -> Result<Option<Vec<u8>>> {
        let mut packed = Vec::new();
        let taken = pack_into(&mut packed, max_entries, max_bytes, |limits, take| {
            self.next_batch_each(limits.0, limits.1, take)
        })?;
        Ok((taken > 0).then_some(packed))
    }
}

/// Encodes the entries `read` hands over (called with the batch limits and the encoder)
/// after what `packed` already holds; returns what `read` returns.
fn pack_into<R>(
    packed: &mut Vec<u8>,
    max_entries: jint,
    max_bytes: jint,
    read: impl FnOnce((usize, usize), &mut dyn FnMut(&[u8], &[u8])) -> Result<R>,
) -> Result<R> {
    let (max_entries, max_bytes) = batch_limits(max_entries, max_bytes);
    let start = packed.len();
    let mut failed = None;
    let read = read((max_entries, max_bytes), &mut |k, v| {
        let size = k.len() + v.len() + 8;
        if packed.len() == start {
            packed.reserve(
                size.saturating_mul(max_entries)
                    .min(max_bytes.saturating_add(size)),
            );
        }
        // Only a key or value over 2 GiB fails, which no store accepts.
        if let Err(e) = codec::encode_entry(packed, k, Some(v)) {
            failed.get_or_insert(e);
        }
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(read),
    }
}

/// The answer of a window or session `*Query` native: the new iterator's first batch
/// ([`KvIterHandle::first_batch_each`], packed as `*Next` packs), after an 8-byte
/// big-endian handle. The handle is 0 when the iterator ended within the batch: it is
/// released at once, and the caller needs no `*Next` nor `*CloseIterator` call (a
/// `findSessions` or `fetch(key, from, to)` per record costs one crossing instead of
/// three). Otherwise the iterator is registered as `*Query` always did.
pub(crate) fn first_batch<I: Packed>(
    iter: I,
    entries: impl Fn(&I) -> &KvIterHandle,
    max_entries: jint,
    max_bytes: jint,
) -> Result<Option<Vec<u8>>> {
    let mut packed = vec![0u8; 8];
    let batch = pack_into(&mut packed, max_entries, max_bytes, |limits, take| {
        entries(&iter).first_batch_each(limits.0, limits.1, take)
    })?;
    if !batch.ended {
        let h = jhandle(crate::handle::insert(iter)?);
        packed[..8].copy_from_slice(&h.to_be_bytes());
    }
    Ok(Some(packed))
}

/// Kafka's window store keys with their raw values.
impl Packed for WindowIterHandle {
    fn pack(&self, max_entries: jint, max_bytes: jint) -> Result<Option<Vec<u8>>> {
        self.0.pack(max_entries, max_bytes)
    }
}

/// Kafka's session store keys with their aggregates.
impl Packed for SessionIterHandle {
    fn pack(&self, max_entries: jint, max_bytes: jint) -> Result<Option<Vec<u8>>> {
        self.0.pack(max_entries, max_bytes)
    }
}

kind_natives! { kv, "", KvStore, KvIterHandle, bridge::close_store, bridge::close_iter }

natives! {
    /// `long open(String path, long[] options)`: options as [`OpenArgs`]; path null for
    /// the memory engine only; an empty path is an invalid argument.
    java "open" fn open(path: Option<String>, options: OpenArgs) -> jlong {
        bridge::open_store(path.map(str::as_bytes), &options.window.store).map(jhandle)
    }
    /// `byte[] get(long store, byte[] key, boolean committed)`: the raw value or null.
    java "get" fn get(h: jlong, key: JavaBytes, committed: bool) -> Option<Vec<u8>> {
        store::<KvStore>(h)?.get_raw_with(isolation(committed), key)
    }
    /// `void put(long store, byte[] key, byte[] rawValue)`: a null value deletes.
    java "put" fn put(h: jlong, key: JavaBytes, value: Option<JavaBytes>) -> () {
        store::<KvStore>(h)?.put_raw(key, value)
    }
    /// `byte[] putIfAbsent(long store, byte[] key, byte[] rawValue)`: the existing value, or
    /// null when this one was written.
    java "putIfAbsent" fn put_if_absent(h: jlong, key: JavaBytes, value: JavaBytes) -> Option<Vec<u8>> {
        store::<KvStore>(h)?.put_if_absent_raw(key, value)
    }
    /// `byte[] delete(long store, byte[] key)`: the deleted value or null.
    java "delete" fn delete(h: jlong, key: JavaBytes) -> Option<Vec<u8>> {
        store::<KvStore>(h)?.delete_raw(key)
    }
    /// `void putAll(long store, byte[] packed)`: writes a packed batch ([`codec`]) in one
    /// call; used for `putAll` and for changelog restore batches. All or nothing.
    java "putAll" fn put_all(h: jlong, batch: JavaBytes) -> () {
        store::<KvStore>(h)?.put_all_raw(codec::decode_entries(batch)?)
    }
    /// `long scan(long store, byte[] from, byte[] to, boolean prefix, boolean reverse,
    /// boolean committed)`: an iterator over `[from, to]` (null = open end), or over the keys
    /// starting with `from` when `prefix` is set.
    java "scan" fn scan(h: jlong, from: Option<JavaBytes>, to: Option<JavaBytes>, prefix: bool,
        reverse: bool, committed: bool) -> jlong {
        let range = match prefix {
            true => KeyRange::prefix(from.unwrap_or_default()),
            false => KeyRange::inclusive(from, to),
        };
        bridge::open_iter(number(h), |s| s.scan(isolation(committed), &range, reverse)).map(jhandle)
    }
    /// `long approximateNumEntries(long store, boolean committed)`.
    java "approximateNumEntries" fn approximate_num_entries(h: jlong, committed: bool) -> jlong {
        Ok(saturating(store::<KvStore>(h)?.approximate_num_entries_with(isolation(committed))?))
    }
    /// `void restoreBatch(long store, byte[] packed, String[] topics, int[] partitions,
    /// long[] offsets, byte[] metadata)`: restores a packed batch of changelog records
    /// ([`codec`]) straight to the engine and commits it with the offsets (as `commit`) and,
    /// when not null, the metadata blob. Refused while the transaction has uncommitted writes.
    java "restoreBatch" fn restore_batch(h: jlong, batch: JavaBytes, topics: Vec<String>,
        partitions: Vec<jint>, offsets: Vec<jlong>, metadata: Option<JavaBytes>) -> () {
        let offsets = super::convert::offsets(topics, partitions, offsets)?;
        store::<KvStore>(h)?.restore_batch(codec::decode_entries(batch)?, &offsets, metadata)
    }
    /// `boolean isUpgrading(long store)`: true while the store runs in upgrade mode
    /// (old-format values still present, read converted).
    java "isUpgrading" fn is_upgrading(h: jlong) -> bool {
        bridge::is_upgrading(number(h))
    }
    /// `boolean adoptionCheck(String path, int kind, int valueFormat, long retentionMs,
    /// long segmentIntervalMs, boolean adoptLeftOpen)`: whether opening the store adopts a
    /// Kafka Streams store at `path` ([`PlannedStore::check`]; documented in `KstateNative`).
    java "adoptionCheck" fn adoption_check(path: String, kind: jint, value_format: jint,
        retention: jlong, segment_interval: jlong, adopt_left_open: bool) -> bool {
        let (path, value_format) = (path.into(), self::value_format(value_format.into())?);
        let store = StoreOptions { value_format, adopt_left_open, ..StoreOptions::default() };
        let mut versioned = VersionedOptions::new(retention).with_store(store.clone());
        versioned.segment_interval = bridge::segment_interval(segment_interval);
        let mut window = WindowOptions::new(retention, 0, false).with_store(store.clone());
        let mut session = SessionOptions::new(retention).with_store(store.clone());
        window.segment_interval = bridge::segment_interval(segment_interval);
        session.segment_interval = window.segment_interval;
        // 3 and 4: the time-ordered stores of `EmitStrategy.onWindowClose()`, which adopt
        // Kafka's time-ordered segments (whether Kafka kept a key index changes nothing).
        (window.time_ordered, session.time_ordered) = (kind == 3, kind == 4);
        match kind {
            0 => PlannedStore::KeyValue { path, options: store },
            1 | 3 => PlannedStore::Window { path, options: window },
            2 | 4 => PlannedStore::Session { path, options: session },
            5 => PlannedStore::Versioned { path, options: versioned },
            other => return Err(Error::InvalidArgument(format!("unknown store kind {other}"))),
        }
        .check()
    }
}

/// `long upgradeBySwap(long store, UpgradeProgress progress)`: the entries copied by
/// [`bridge::upgrade_by_swap`], calling `progress.onProgress(done, total)` (if not null) on
/// this thread after each batch; an exception it throws stops the swap (the store stays in
/// upgrade mode) and propagates as is. The one native that calls back into Java.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_upgradeBySwap<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    progress: JObject<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let result = bridge::upgrade_by_swap(number(h), &mut |done, total| {
            if progress.is_null() {
                return ControlFlow::Continue(());
            }
            let args = [
                JValue::Long(saturating(done)),
                JValue::Long(saturating(total)),
            ];
            match env.call_method(&progress, "onProgress", "(JJ)V", &args) {
                Ok(_) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(Error::Internal(format!(
                    "the progress callback failed: {e}"
                ))),
            }
        });
        match result {
            Ok(copied) => Ok(saturating(copied)),
            // The callback's own exception is the one the caller sees.
            Err(_) if env.exception_check()? => Err(Failure::Pending),
            Err(e) => Err(e.into()),
        }
    })
}

/// `String NativeLoader.nativeVersion()`: this library's version (the crate's), which the
/// loader compares with its classes' before any `KstateNative` native is used: a library of
/// another release may not match the Java declarations.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_NativeLoader_nativeVersion<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jni::sys::jstring {
    guard(&mut env, std::ptr::null_mut(), |env| {
        Ok(env.new_string(env!("CARGO_PKG_VERSION"))?.into_raw())
    })
}
