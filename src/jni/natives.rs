//! The `extern "system"` natives of `dev.kstate.internal.KstateNative` (and the loader's
//! version check, `NativeLoader.nativeVersion`).
//!
//! Each native converts its Java arguments, calls its body in [`ops`] (plain Rust types,
//! handles resolved in the table shared with C) and converts the result, all inside
//! [`guard`], the one place where an error or a panic becomes a Java exception.

use jni::objects::{JByteArray, JClass, JIntArray, JLongArray, JObjectArray, JString};
use jni::sys::{jint, jlong};
use jni::JNIEnv;

use super::declare::{natives, transaction_natives};
use super::guard::{guard, JniResult};
use super::ops::{self, OpenArgs, NO_OFFSET};
use crate::{Error, KvStore, TopicPartition};

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

// ----- life cycle ----------------------------------------------------------------------------

natives! {
    /// `long open(String path, int engine, int valueFormat, long maxUncommittedBytes,
    /// boolean syncOnCommit, long blockCacheBytes, long writeBufferBytes, int maxWriteBuffers,
    /// boolean bloomFilter, boolean statistics, long boundedMemoryBytes,
    /// long boundedMemtableBytes, boolean adoptLeftOpen)`; engine 0 = RocksDB, 1 = memory
    /// (path may then be null); value format 0 = timestamped, 1 = plain, 2 = headers (C's
    /// `KSTATE_FORMAT_*`); `adoptLeftOpen` is [`crate::StoreOptions::adopt_left_open`].
    /// `0` for a size or count keeps kstate's default; `boundedMemoryBytes` 0 means no shared
    /// budget. An empty path is an invalid argument.
    fn Java_dev_kstate_internal_KstateNative_open(
        path: Option<String>,
        engine: jint,
        value_format: jint,
        max_uncommitted_bytes: jlong,
        sync_on_commit: bool,
        block_cache_bytes: jlong,
        write_buffer_bytes: jlong,
        max_write_buffers: jint,
        bloom_filter: bool,
        statistics: bool,
        bounded_memory_bytes: jlong,
        bounded_memtable_bytes: jlong,
        adopt_left_open: bool,
    ) -> jlong = {
        let args = OpenArgs {
            engine,
            value_format,
            max_uncommitted_bytes,
            sync_on_commit,
            block_cache_bytes,
            write_buffer_bytes,
            max_write_buffers,
            bloom_filter,
            statistics,
            bounded_memory_bytes,
            bounded_memtable_bytes,
            adopt_left_open,
        };
        ops::open(path.as_deref(), &args)
    };

    /// `void close(long store)`: closes the store and its iterators; the handle dies.
    fn Java_dev_kstate_internal_KstateNative_close(h: jlong) -> () = ops::close(h);

    /// `byte[] get(long store, byte[] key, boolean committed)`: the raw value or null.
    fn Java_dev_kstate_internal_KstateNative_get(h: jlong, key: JavaBytes, committed: bool)
        -> Option<Vec<u8>> = ops::get(h, &key, committed);

    /// `void put(long store, byte[] key, byte[] rawValue)`: a null value deletes.
    fn Java_dev_kstate_internal_KstateNative_put(h: jlong, key: JavaBytes, value: Option<JavaBytes>)
        -> () = ops::put(h, &key, value.as_deref());

    /// `byte[] putIfAbsent(long store, byte[] key, byte[] rawValue)`: the existing value or
    /// null.
    fn Java_dev_kstate_internal_KstateNative_putIfAbsent(h: jlong, key: JavaBytes, value: JavaBytes)
        -> Option<Vec<u8>> = ops::put_if_absent(h, &key, &value);

    /// `byte[] delete(long store, byte[] key)`: the deleted value or null.
    fn Java_dev_kstate_internal_KstateNative_delete(h: jlong, key: JavaBytes) -> Option<Vec<u8>> =
        ops::delete(h, &key);

    /// `void putAll(long store, byte[] packed)`: writes a packed batch ([`super::codec`]) in
    /// one call; used for `putAll` and for changelog restore batches. All or nothing.
    fn Java_dev_kstate_internal_KstateNative_putAll(h: jlong, batch: JavaBytes) -> () =
        ops::put_all(h, &batch);

    /// `long scan(long store, byte[] from, byte[] to, boolean prefix, boolean reverse,
    /// boolean committed)`: an iterator over `[from, to]` (null = open end), or over the keys
    /// starting with `from` when `prefix` is set.
    fn Java_dev_kstate_internal_KstateNative_scan(
        h: jlong,
        from: Option<JavaBytes>,
        to: Option<JavaBytes>,
        prefix: bool,
        reverse: bool,
        committed: bool,
    ) -> jlong = ops::scan(h, from.as_deref(), to.as_deref(), prefix, reverse, committed);

    /// `byte[] next(long iterator, int maxEntries, int maxBytes)`: the next entries packed
    /// ([`super::codec`]), at least one if any remains; null once exhausted. An error met
    /// after entries were taken is thrown by the next call, so no entry is lost.
    fn Java_dev_kstate_internal_KstateNative_next(it: jlong, max_entries: jint, max_bytes: jint)
        -> Option<Vec<u8>> = ops::next(it, max_entries, max_bytes);

    /// `void closeIterator(long iterator)`: releases the iterator; the handle dies.
    fn Java_dev_kstate_internal_KstateNative_closeIterator(it: jlong) -> () =
        ops::close_iterator(it);

    /// `long approximateNumEntries(long store, boolean committed)`.
    fn Java_dev_kstate_internal_KstateNative_approximateNumEntries(h: jlong, committed: bool)
        -> jlong = ops::approximate_num_entries(h, committed);
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

transaction_natives! {
    KvStore: commit = Java_dev_kstate_internal_KstateNative_commit,
    committed_offset = Java_dev_kstate_internal_KstateNative_committedOffset,
    committed_metadata = Java_dev_kstate_internal_KstateNative_committedMetadata,
    rollback = Java_dev_kstate_internal_KstateNative_rollback,
    flush = Java_dev_kstate_internal_KstateNative_flush,
    uncommitted_bytes = Java_dev_kstate_internal_KstateNative_approximateNumUncommittedBytes,
    property = Java_dev_kstate_internal_KstateNative_property
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
