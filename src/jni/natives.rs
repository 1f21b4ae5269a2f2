//! The `extern "system"` natives of `dev.kstate.internal.KstateNative`.
//!
//! Each native is a one-line wrapper: [`guard`] around an `_impl` function that returns a
//! [`JniResult`]. Handles are numbers from the [`HandleTable`]s below, never pointers.

use std::sync::Mutex;

use jni::objects::{JByteArray, JClass, JIntArray, JLongArray, JObjectArray, JString};
use jni::sys::{jboolean, jbyteArray, jint, jlong, JNI_TRUE};
use jni::JNIEnv;
use once_cell::sync::Lazy;

use super::codec;
use super::guard::{guard, JniResult};
use crate::engine::rocksdb::RocksOptions;
use crate::format::meta::ValueFormat;
use crate::handle::HandleTable;
use crate::sync::MutexExt;
use crate::{
    EngineKind, Error, Isolation, KeyRange, KvIter, KvStore, StoreOptions, TopicPartition,
};

static STORES: Lazy<HandleTable<KvStore>> = Lazy::new(|| HandleTable::new("store"));
static ITERATORS: Lazy<HandleTable<Mutex<KvIter>>> = Lazy::new(|| HandleTable::new("iterator"));

/// Returned by `committedOffset` when no offset is committed (never a Kafka offset).
const NO_OFFSET: jlong = jlong::MIN;

fn handle(h: jlong) -> u64 {
    // Bit-for-bit reinterpretation: Java has no unsigned long.
    h as u64
}

fn store(h: jlong) -> JniResult<std::sync::Arc<KvStore>> {
    Ok(STORES.get(handle(h))?)
}

fn isolation(committed: jboolean) -> Isolation {
    if committed == JNI_TRUE {
        Isolation::ReadCommitted
    } else {
        Isolation::ReadUncommitted
    }
}

fn bytes(env: &JNIEnv<'_>, array: &JByteArray<'_>, what: &str) -> JniResult<Vec<u8>> {
    if array.is_null() {
        return Err(Error::InvalidArgument(format!("null {what}")).into());
    }
    Ok(env.convert_byte_array(array)?)
}

fn opt_bytes(env: &JNIEnv<'_>, array: &JByteArray<'_>) -> JniResult<Option<Vec<u8>>> {
    if array.is_null() {
        Ok(None)
    } else {
        Ok(Some(env.convert_byte_array(array)?))
    }
}

fn string(env: &mut JNIEnv<'_>, s: &JString<'_>, what: &str) -> JniResult<String> {
    if s.is_null() {
        return Err(Error::InvalidArgument(format!("null {what}")).into());
    }
    Ok(env.get_string(s)?.into())
}

fn to_java(env: &JNIEnv<'_>, value: Option<Vec<u8>>) -> JniResult<jbyteArray> {
    match value {
        None => Ok(std::ptr::null_mut()),
        Some(v) => Ok(env.byte_array_from_slice(&v)?.into_raw()),
    }
}

fn non_negative(value: jlong, what: &str) -> JniResult<u64> {
    u64::try_from(value)
        .map_err(|_| Error::InvalidArgument(format!("{what} must not be negative: {value}")).into())
}

// ----- life cycle ----------------------------------------------------------------------------

/// `long open(String path, int engine, boolean timestamped, long maxUncommittedBytes,
/// boolean syncOnCommit, long blockCacheBytes, long writeBufferBytes)`; engine 0 = RocksDB,
/// 1 = memory (path may then be null). `0` for a byte size keeps kstate's default.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_open<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
    engine: jint,
    timestamped: jboolean,
    max_uncommitted_bytes: jlong,
    sync_on_commit: jboolean,
    block_cache_bytes: jlong,
    write_buffer_bytes: jlong,
) -> jlong {
    guard(&mut env, 0, |env| {
        open_impl(
            env,
            &path,
            engine,
            timestamped == JNI_TRUE,
            max_uncommitted_bytes,
            sync_on_commit == JNI_TRUE,
            (block_cache_bytes, write_buffer_bytes),
        )
    })
}

fn open_impl(
    env: &mut JNIEnv<'_>,
    path: &JString<'_>,
    engine: jint,
    timestamped: bool,
    max_uncommitted_bytes: jlong,
    sync_on_commit: bool,
    (block_cache_bytes, write_buffer_bytes): (jlong, jlong),
) -> JniResult<jlong> {
    let engine = match engine {
        0 => EngineKind::RocksDb,
        1 => EngineKind::Memory,
        other => return Err(Error::InvalidArgument(format!("unknown engine {other}")).into()),
    };
    let mut options = if timestamped {
        StoreOptions::timestamped(engine)
    } else {
        StoreOptions::plain(engine)
    };
    debug_assert_eq!(
        options.value_format == ValueFormat::Timestamped,
        timestamped
    );
    if max_uncommitted_bytes != 0 {
        options.max_uncommitted_bytes = non_negative(max_uncommitted_bytes, "maxUncommittedBytes")?;
    }
    options.sync_on_commit = sync_on_commit;
    let defaults = RocksOptions::default();
    if block_cache_bytes != 0 {
        options.rocksdb.block_cache_bytes =
            usize::try_from(non_negative(block_cache_bytes, "blockCacheBytes")?)
                .unwrap_or(defaults.block_cache_bytes);
    }
    if write_buffer_bytes != 0 {
        options.rocksdb.write_buffer_bytes =
            usize::try_from(non_negative(write_buffer_bytes, "writeBufferBytes")?)
                .unwrap_or(defaults.write_buffer_bytes);
    }
    let store = match engine {
        EngineKind::Memory if path.is_null() => KvStore::open_in_memory(&options)?,
        _ => {
            let path = string(env, path, "path")?;
            KvStore::open(path, &options)?
        }
    };
    // Bit-for-bit reinterpretation back to Java's signed long.
    Ok(STORES.insert(store) as jlong)
}

/// `void close(long store)`: closes the store and its iterators; the handle dies.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_close<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
) {
    guard(&mut env, (), |_| Ok(STORES.remove(handle(h))?.close()?))
}

// ----- point operations ----------------------------------------------------------------------

/// `byte[] get(long store, byte[] key, boolean committed)`: the raw value or null.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_get<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    key: JByteArray<'l>,
    committed: jboolean,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let key = bytes(env, &key, "key")?;
        let value = store(h)?.get_raw_with(isolation(committed), &key)?;
        to_java(env, value)
    })
}

/// `void put(long store, byte[] key, byte[] rawValue)`: a null value deletes.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_put<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    key: JByteArray<'l>,
    value: JByteArray<'l>,
) {
    guard(&mut env, (), |env| {
        let key = bytes(env, &key, "key")?;
        let value = opt_bytes(env, &value)?;
        Ok(store(h)?.put_raw(&key, value.as_deref())?)
    })
}

/// `byte[] putIfAbsent(long store, byte[] key, byte[] rawValue)`: the existing value or null.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_putIfAbsent<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    key: JByteArray<'l>,
    value: JByteArray<'l>,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let key = bytes(env, &key, "key")?;
        let value = bytes(env, &value, "value")?;
        let old = store(h)?.put_if_absent_raw(&key, &value)?;
        to_java(env, old)
    })
}

/// `byte[] delete(long store, byte[] key)`: the deleted value or null.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_delete<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    key: JByteArray<'l>,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let key = bytes(env, &key, "key")?;
        let old = store(h)?.delete_raw(&key)?;
        to_java(env, old)
    })
}

/// `void putAll(long store, byte[] packed)`: writes a packed batch ([`codec`]) in one call;
/// used for `putAll` and for changelog restore batches. All or nothing.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_putAll<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    packed: JByteArray<'l>,
) {
    guard(&mut env, (), |env| {
        let packed = bytes(env, &packed, "batch")?;
        let entries = codec::decode_entries(&packed)?;
        Ok(store(h)?.put_all_raw(entries)?)
    })
}

// ----- iteration -----------------------------------------------------------------------------

/// `long scan(long store, byte[] from, byte[] to, boolean prefix, boolean reverse,
/// boolean committed)`: an iterator over `[from, to]` (null = open end), or over the keys
/// starting with `from` when `prefix` is set.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_scan<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    from: JByteArray<'l>,
    to: JByteArray<'l>,
    prefix: jboolean,
    reverse: jboolean,
    committed: jboolean,
) -> jlong {
    guard(&mut env, 0, |env| {
        let from = opt_bytes(env, &from)?;
        let to = opt_bytes(env, &to)?;
        let range = if prefix == JNI_TRUE {
            KeyRange::prefix(from.as_deref().unwrap_or_default())
        } else {
            KeyRange::inclusive(from.as_deref(), to.as_deref())
        };
        let iter = store(h)?.scan(isolation(committed), &range, reverse == JNI_TRUE)?;
        Ok(ITERATORS.insert(Mutex::new(iter)) as jlong)
    })
}

/// `byte[] next(long iterator, int maxEntries, int maxBytes)`: the next entries packed
/// ([`codec`]), at least one if any remains; null once exhausted.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_next<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    it: jlong,
    max_entries: jint,
    max_bytes: jint,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let iter = ITERATORS.get(handle(it))?;
        let mut batch = Vec::new();
        let max_entries = usize::try_from(max_entries.max(1)).unwrap_or(1);
        let max_bytes = usize::try_from(max_bytes.max(1)).unwrap_or(1);
        let added = iter
            .lock_recover()
            .next_batch(max_entries, max_bytes, &mut batch)?;
        if added == 0 {
            return Ok(std::ptr::null_mut());
        }
        let mut packed = Vec::with_capacity(batch.iter().map(|(k, v)| k.len() + v.len() + 8).sum());
        for (k, v) in &batch {
            codec::encode_entry(&mut packed, k, Some(v))?;
        }
        to_java(env, Some(packed))
    })
}

/// `void closeIterator(long iterator)`: releases the iterator; the handle dies.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_closeIterator<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    it: jlong,
) {
    guard(&mut env, (), |_| {
        ITERATORS.remove(handle(it))?.lock_recover().close();
        Ok(())
    })
}

// ----- transactions --------------------------------------------------------------------------

/// `void commit(long store, String[] topics, int[] partitions, long[] offsets,
/// byte[] metadata)`: commits the transaction with the changelog offsets (`Long.MIN_VALUE`
/// removes a partition's offset; empty arrays remove all) and, when not null, the metadata
/// blob, atomically.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_commit<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    topics: JObjectArray<'l>,
    partitions: JIntArray<'l>,
    offsets: JLongArray<'l>,
    metadata: JByteArray<'l>,
) {
    guard(&mut env, (), |env| {
        commit_impl(env, h, &topics, &partitions, &offsets, &metadata)
    })
}

fn commit_impl(
    env: &mut JNIEnv<'_>,
    h: jlong,
    topics: &JObjectArray<'_>,
    partitions: &JIntArray<'_>,
    offsets: &JLongArray<'_>,
    metadata: &JByteArray<'_>,
) -> JniResult<()> {
    if topics.is_null() || partitions.is_null() || offsets.is_null() {
        return Err(Error::InvalidArgument("null offsets array".into()).into());
    }
    let n = env.get_array_length(topics)?;
    if env.get_array_length(partitions)? != n || env.get_array_length(offsets)? != n {
        return Err(Error::InvalidArgument("offset arrays differ in length".into()).into());
    }
    let len = usize::try_from(n).unwrap_or(0);
    let mut parts = vec![0; len];
    let mut offs = vec![0; len];
    env.get_int_array_region(partitions, 0, &mut parts)?;
    env.get_long_array_region(offsets, 0, &mut offs)?;
    let mut entries = Vec::with_capacity(len);
    for (i, (partition, offset)) in parts.into_iter().zip(offs).enumerate() {
        let index = jint::try_from(i).unwrap_or(jint::MAX);
        // One local frame per element: its local references are freed each iteration, so any
        // number of partitions stays within the JVM's local-reference capacity.
        let topic = env.with_local_frame(4, |env| -> JniResult<String> {
            let element = env.get_object_array_element(topics, index)?;
            string(env, &JString::from(element), "topic")
        })?;
        let offset = (offset != NO_OFFSET).then_some(offset);
        entries.push((TopicPartition::new(topic, partition), offset));
    }
    let metadata = opt_bytes(env, metadata)?;
    Ok(store(h)?.commit(&entries, metadata.as_deref())?)
}

/// `long committedOffset(long store, String topic, int partition)`: `Long.MIN_VALUE` when
/// none is committed.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_committedOffset<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    topic: JString<'l>,
    partition: jint,
) -> jlong {
    guard(&mut env, NO_OFFSET, |env| {
        let topic = string(env, &topic, "topic")?;
        let tp = TopicPartition::new(topic, partition);
        Ok(store(h)?.committed_offset(&tp)?.unwrap_or(NO_OFFSET))
    })
}

/// `byte[] committedMetadata(long store)`: the metadata blob of the last commit carrying
/// one, or null.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_committedMetadata<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let metadata = store(h)?.committed_metadata()?;
        to_java(env, metadata)
    })
}

/// `void rollback(long store)`: discards the uncommitted writes.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_rollback<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
) {
    guard(&mut env, (), |_| Ok(store(h)?.rollback()?))
}

/// `long approximateNumEntries(long store, boolean committed)`.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_approximateNumEntries<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    committed: jboolean,
) -> jlong {
    guard(&mut env, 0, |_| {
        let n = store(h)?.approximate_num_entries_with(isolation(committed))?;
        Ok(jlong::try_from(n).unwrap_or(jlong::MAX))
    })
}

/// `long approximateNumUncommittedBytes(long store)`.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_approximateNumUncommittedBytes<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
) -> jlong {
    guard(&mut env, 0, |_| {
        let n = store(h)?.approximate_num_uncommitted_bytes()?;
        Ok(jlong::try_from(n).unwrap_or(jlong::MAX))
    })
}

/// `void flush(long store, byte[] metadata)`: commits the uncommitted writes keeping every
/// committed offset as it is (for Kafka Streams 4.0-4.2 runtimes, which call `flush()`
/// and keep offsets in their own checkpoint file).
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_flush<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    metadata: JByteArray<'l>,
) {
    guard(&mut env, (), |env| {
        let metadata = opt_bytes(env, &metadata)?;
        let store = store(h)?;
        let keep: Vec<(TopicPartition, Option<i64>)> = store
            .committed_offsets()?
            .into_iter()
            .map(|(tp, offset)| (tp, Some(offset)))
            .collect();
        Ok(store.commit(&keep, metadata.as_deref())?)
    })
}
