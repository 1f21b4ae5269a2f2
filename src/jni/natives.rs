//! The `extern "system"` natives of `dev.kstate.internal.KstateNative` (and the loader's
//! version check, `NativeLoader.nativeVersion`).
//!
//! Each native converts its Java arguments, calls its body in [`ops`] (plain Rust types,
//! handles resolved in the table shared with C) and converts the result, all inside
//! [`guard`], the one place where an error or a panic becomes a Java exception.

use jni::objects::{JByteArray, JClass, JIntArray, JLongArray, JObjectArray, JString};
use jni::sys::{jboolean, jbyteArray, jint, jlong, JNI_TRUE};
use jni::JNIEnv;

use super::guard::{guard, JniResult};
use super::ops::{self, OpenArgs, NO_OFFSET};
use crate::{Error, TopicPartition};

pub(super) fn bytes(env: &JNIEnv<'_>, array: &JByteArray<'_>, what: &str) -> JniResult<JavaBytes> {
    if array.is_null() {
        return Err(Error::InvalidArgument(format!("null {what}")).into());
    }
    JavaBytes::copy(env, array)
}

pub(super) fn opt_bytes(env: &JNIEnv<'_>, array: &JByteArray<'_>) -> JniResult<Option<JavaBytes>> {
    if array.is_null() {
        Ok(None)
    } else {
        JavaBytes::copy(env, array).map(Some)
    }
}

/// Arrays up to this many bytes are copied onto the stack (keys, and the values of most
/// stores); larger ones (packed batches) onto the heap.
const INLINE_BYTES: usize = 256;

/// The bytes of a Java array, copied once out of the JVM. A native call made per record
/// (get, put) copied its key and value into heap vectors, an allocation and a free each:
/// the small ones now stay on the stack.
// The inline variant is large on purpose: it lives on the stack for one native call.
#[allow(clippy::large_enum_variant)]
pub(super) enum JavaBytes {
    /// Up to [`INLINE_BYTES`], the first `len` of `buf`.
    Inline {
        buf: [jni::sys::jbyte; INLINE_BYTES],
        len: usize,
    },
    /// Larger arrays.
    Heap(Vec<u8>),
}

impl JavaBytes {
    /// Copies the elements of `array`, which is not null.
    fn copy(env: &JNIEnv<'_>, array: &JByteArray<'_>) -> JniResult<JavaBytes> {
        let len = usize::try_from(env.get_array_length(array)?)
            .map_err(|_| Error::Internal("a Java array of negative length".into()))?;
        if len > INLINE_BYTES {
            return Ok(JavaBytes::Heap(env.convert_byte_array(array)?));
        }
        let mut buf = [0; INLINE_BYTES];
        env.get_byte_array_region(array, 0, &mut buf[..len])?;
        Ok(JavaBytes::Inline { buf, len })
    }
}

impl std::ops::Deref for JavaBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            JavaBytes::Inline { buf, len } => {
                let bytes = &buf[..*len];
                // SAFETY: `jbyte` is `i8`, which has the size and alignment of `u8`, and every
                // bit pattern is a valid `u8`; the slice borrows `buf` for `&self`'s lifetime.
                unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<u8>(), bytes.len()) }
            }
            JavaBytes::Heap(v) => v,
        }
    }
}

/// A Java string as UTF-8. Strict: a string that is not valid Unicode (an unpaired
/// surrogate) is an invalid argument, never silently replaced by U+FFFD (which would name
/// another directory or topic).
pub(super) fn string(env: &mut JNIEnv<'_>, s: &JString<'_>, what: &str) -> JniResult<String> {
    if s.is_null() {
        return Err(Error::InvalidArgument(format!("null {what}")).into());
    }
    let java = env.get_string(s)?;
    Ok(decode_java(java.to_bytes(), what)?)
}

/// Decodes a string in the JVM's modified UTF-8, refusing what is not valid Unicode.
pub(crate) fn decode_java(bytes: &[u8], what: &str) -> crate::Result<String> {
    match cesu8::from_java_cesu8(bytes) {
        Ok(text) => Ok(text.into_owned()),
        Err(_) => Err(Error::InvalidArgument(format!(
            "{what} is not valid Unicode (it has an unpaired surrogate)"
        ))),
    }
}

pub(super) fn to_java(env: &JNIEnv<'_>, value: Option<Vec<u8>>) -> JniResult<jbyteArray> {
    match value {
        None => Ok(std::ptr::null_mut()),
        Some(v) => Ok(env.byte_array_from_slice(&v)?.into_raw()),
    }
}

// ----- life cycle ----------------------------------------------------------------------------

/// `long open(String path, int engine, int valueFormat, long maxUncommittedBytes,
/// boolean syncOnCommit, long blockCacheBytes, long writeBufferBytes, int maxWriteBuffers,
/// boolean bloomFilter, boolean statistics, long boundedMemoryBytes,
/// long boundedMemtableBytes, boolean adoptLeftOpen)`; engine 0 = RocksDB, 1 = memory (path
/// may then be null); value format 0 = timestamped, 1 = plain, 2 = headers (C's
/// `KSTATE_FORMAT_*`); `adoptLeftOpen` is [`crate::StoreOptions::adopt_left_open`].
/// `0` for a size or count keeps kstate's default; `boundedMemoryBytes` 0 means no shared
/// budget. An empty path is an invalid argument.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_open<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
    engine: jint,
    value_format: jint,
    max_uncommitted_bytes: jlong,
    sync_on_commit: jboolean,
    block_cache_bytes: jlong,
    write_buffer_bytes: jlong,
    max_write_buffers: jint,
    bloom_filter: jboolean,
    statistics: jboolean,
    bounded_memory_bytes: jlong,
    bounded_memtable_bytes: jlong,
    adopt_left_open: jboolean,
) -> jlong {
    guard(&mut env, 0, |env| {
        let args = OpenArgs {
            engine,
            value_format,
            max_uncommitted_bytes,
            sync_on_commit: sync_on_commit == JNI_TRUE,
            block_cache_bytes,
            write_buffer_bytes,
            max_write_buffers,
            bloom_filter: bloom_filter == JNI_TRUE,
            statistics: statistics == JNI_TRUE,
            bounded_memory_bytes,
            bounded_memtable_bytes,
            adopt_left_open: adopt_left_open == JNI_TRUE,
        };
        let path = if path.is_null() {
            None
        } else {
            Some(string(env, &path, "path")?)
        };
        Ok(ops::open(path.as_deref(), &args)?)
    })
}

/// `void close(long store)`: closes the store and its iterators; the handle dies.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_close<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
) {
    guard(&mut env, (), |_| Ok(ops::close(h)?))
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
        let value = ops::get(h, &key, committed == JNI_TRUE)?;
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
        Ok(ops::put(h, &key, value.as_deref())?)
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
        let old = ops::put_if_absent(h, &key, &value)?;
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
        let old = ops::delete(h, &key)?;
        to_java(env, old)
    })
}

/// `void putAll(long store, byte[] packed)`: writes a packed batch ([`super::codec`]) in one
/// call; used for `putAll` and for changelog restore batches. All or nothing.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_putAll<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    packed: JByteArray<'l>,
) {
    guard(&mut env, (), |env| {
        let packed = bytes(env, &packed, "batch")?;
        Ok(ops::put_all(h, &packed)?)
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
        Ok(ops::scan(
            h,
            from.as_deref(),
            to.as_deref(),
            prefix == JNI_TRUE,
            reverse == JNI_TRUE,
            committed == JNI_TRUE,
        )?)
    })
}

/// `byte[] next(long iterator, int maxEntries, int maxBytes)`: the next entries packed
/// ([`super::codec`]), at least one if any remains; null once exhausted. An error met after
/// entries were taken is thrown by the next call, so no entry is lost.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_next<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    it: jlong,
    max_entries: jint,
    max_bytes: jint,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let packed = ops::next(it, max_entries, max_bytes)?;
        to_java(env, packed)
    })
}

/// `void closeIterator(long iterator)`: releases the iterator; the handle dies.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_closeIterator<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    it: jlong,
) {
    guard(&mut env, (), |_| Ok(ops::close_iterator(it)?))
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
        let entries = offsets_of(env, &topics, &partitions, &offsets)?;
        let metadata = opt_bytes(env, &metadata)?;
        Ok(ops::commit(h, &entries, metadata.as_deref())?)
    })
}

/// `void restoreBatch(long store, byte[] packed, String[] topics, int[] partitions,
/// long[] offsets, byte[] metadata)`: restores a packed batch of changelog records
/// ([`super::codec`]) straight to the engine and commits it with the offsets (as `commit`)
/// and, when not null, the metadata blob. Refused while the transaction has uncommitted
/// writes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_restoreBatch<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    packed: JByteArray<'l>,
    topics: JObjectArray<'l>,
    partitions: JIntArray<'l>,
    offsets: JLongArray<'l>,
    metadata: JByteArray<'l>,
) {
    guard(&mut env, (), |env| {
        let packed = bytes(env, &packed, "batch")?;
        let entries = offsets_of(env, &topics, &partitions, &offsets)?;
        let metadata = opt_bytes(env, &metadata)?;
        Ok(ops::restore_batch(
            h,
            &packed,
            &entries,
            metadata.as_deref(),
        )?)
    })
}

/// The offsets of a `commit` call as (partition, offset or removal) pairs.
pub(super) fn offsets_of(
    env: &mut JNIEnv<'_>,
    topics: &JObjectArray<'_>,
    partitions: &JIntArray<'_>,
    offsets: &JLongArray<'_>,
) -> JniResult<Vec<(TopicPartition, Option<i64>)>> {
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
    Ok(entries)
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
        Ok(ops::committed_offset(h, topic, partition)?)
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
        let metadata = ops::committed_metadata(h)?;
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
    guard(&mut env, (), |_| Ok(ops::rollback(h)?))
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
        Ok(ops::approximate_num_entries(h, committed == JNI_TRUE)?)
    })
}

/// `long property(long store, String name)`: an integer RocksDB property or statistics
/// ticker by RocksDB name (`rocksdb.cur-size-all-mem-tables`, `rocksdb.bytes.written`);
/// -1 when the store has none (memory engine, unknown name, statistics off).
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_property<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    name: JString<'l>,
) -> jlong {
    guard(&mut env, -1, |env| {
        let name = string(env, &name, "property name")?;
        Ok(ops::property(h, &name)?)
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
        Ok(ops::approximate_num_uncommitted_bytes(h)?)
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
        Ok(ops::flush(h, metadata.as_deref())?)
    })
}

// ----- the library itself --------------------------------------------------------------------

/// `String NativeLoader.nativeVersion()`: this library's version (the crate's, e.g. `0.1.0`).
/// The loader compares it with the version its classes were built with and refuses a
/// library from another release, whose natives may not match the Java declarations. It is
/// declared on the loader, not on `KstateNative`, so the check runs before `KstateNative`'s
/// natives are used.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_NativeLoader_nativeVersion<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jni::sys::jstring {
    guard(&mut env, std::ptr::null_mut(), |env| {
        Ok(env.new_string(env!("CARGO_PKG_VERSION"))?.into_raw())
    })
}
