//! The `extern "system"` window and session natives of `dev.kstate.internal.KstateNative`
//! (documented there and in `NativeWindowStore` / `NativeSessionStore`). Each converts its
//! Java arguments, calls its body in [`super::segmented_ops`] and converts the result inside
//! [`super::guard`].
//!
//! Iterator batches (`windowNext`, `sessionNext`) are packed like the key-value range path
//! ([`super::codec`]), each key being Kafka's store key: `key ‖ BE i64 windowStart ‖
//! BE i32 seqnum` for windows, `key ‖ BE i64 end ‖ BE i64 start` for sessions.

use jni::objects::{JByteArray, JClass, JIntArray, JLongArray, JObjectArray, JString};
use jni::sys::{jboolean, jbyteArray, jint, jlong, JNI_TRUE};
use jni::JNIEnv;

use super::guard::guard;
use super::natives::{bytes, offsets_of, opt_bytes, string, to_java};
use super::ops::{OpenArgs, NO_OFFSET};
use super::segmented_ops::{self as ops, SegmentArgs};
use crate::{SessionStore, WindowStore};

fn flag(b: jboolean) -> bool {
    b == JNI_TRUE
}

fn path_of(env: &mut JNIEnv<'_>, path: &JString<'_>) -> super::guard::JniResult<Option<String>> {
    if path.is_null() {
        Ok(None)
    } else {
        Ok(Some(string(env, path, "path")?))
    }
}

/// `long windowOpen(String path, int engine, int valueFormat, long maxUncommittedBytes,
/// boolean syncOnCommit, long blockCacheBytes, long writeBufferBytes, int maxWriteBuffers,
/// boolean bloomFilter, boolean statistics, long boundedMemoryBytes,
/// long boundedMemtableBytes, long retentionMs, long windowSizeMs, boolean retainDuplicates,
/// long segmentIntervalMs, boolean timeOrdered, boolean keyIndex, boolean adoptLeftOpen)`:
/// tuning and `adoptLeftOpen` as `open`; segment
/// interval 0 = Kafka's default; `timeOrdered` / `keyIndex` make Kafka's time-ordered store
/// (with its `hasIndex`).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_windowOpen<'l>(
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
    retention: jlong,
    window_size: jlong,
    retain_duplicates: jboolean,
    segment_interval: jlong,
    time_ordered: jboolean,
    key_index: jboolean,
    adopt_left_open: jboolean,
) -> jlong {
    guard(&mut env, 0, |env| {
        let args = OpenArgs {
            engine,
            // numbered as C's KSTATE_FORMAT_*: 0 timestamped, 1 plain, 2 headers
            value_format,
            max_uncommitted_bytes,
            sync_on_commit: flag(sync_on_commit),
            block_cache_bytes,
            write_buffer_bytes,
            max_write_buffers,
            bloom_filter: flag(bloom_filter),
            statistics: flag(statistics),
            bounded_memory_bytes,
            bounded_memtable_bytes,
            adopt_left_open: flag(adopt_left_open),
        };
        let seg = SegmentArgs {
            retention,
            window_size,
            retain_duplicates: flag(retain_duplicates),
            segment_interval,
            time_ordered: flag(time_ordered),
            key_index: flag(key_index),
        };
        let path = path_of(env, &path)?;
        Ok(ops::window_open(path.as_deref(), &args, &seg)?)
    })
}

/// `long sessionOpen(String path, int engine, boolean headers, long maxUncommittedBytes,
/// boolean syncOnCommit, long blockCacheBytes, long writeBufferBytes, int maxWriteBuffers,
/// boolean bloomFilter, boolean statistics, long boundedMemoryBytes,
/// long boundedMemtableBytes, long retentionMs, long segmentIntervalMs, boolean timeOrdered,
/// boolean adoptLeftOpen)` (`adoptLeftOpen` as `open`):
/// aggregates are stored plain, or in Kafka's `AggregationWithHeaders` layout when `headers`;
/// `timeOrdered` makes Kafka's time-ordered session store.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_sessionOpen<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
    engine: jint,
    headers: jboolean,
    max_uncommitted_bytes: jlong,
    sync_on_commit: jboolean,
    block_cache_bytes: jlong,
    write_buffer_bytes: jlong,
    max_write_buffers: jint,
    bloom_filter: jboolean,
    statistics: jboolean,
    bounded_memory_bytes: jlong,
    bounded_memtable_bytes: jlong,
    retention: jlong,
    segment_interval: jlong,
    time_ordered: jboolean,
    adopt_left_open: jboolean,
) -> jlong {
    guard(&mut env, 0, |env| {
        let args = OpenArgs {
            engine,
            // numbered as C's KSTATE_FORMAT_*: 1 plain, 2 headers
            value_format: if flag(headers) { 2 } else { 1 },
            max_uncommitted_bytes,
            sync_on_commit: flag(sync_on_commit),
            block_cache_bytes,
            write_buffer_bytes,
            max_write_buffers,
            bloom_filter: flag(bloom_filter),
            statistics: flag(statistics),
            bounded_memory_bytes,
            bounded_memtable_bytes,
            adopt_left_open: flag(adopt_left_open),
        };
        let seg = SegmentArgs {
            retention,
            window_size: 0,
            retain_duplicates: false,
            segment_interval,
            time_ordered: flag(time_ordered),
            key_index: false,
        };
        let path = path_of(env, &path)?;
        Ok(ops::session_open(path.as_deref(), &args, &seg)?)
    })
}

/// `void windowClose(long store)`.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_windowClose<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
) {
    guard(&mut env, (), |_| Ok(ops::window_close(h)?))
}

/// `void sessionClose(long store)`.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_sessionClose<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
) {
    guard(&mut env, (), |_| Ok(ops::session_close(h)?))
}

/// `boolean windowPut(long store, byte[] key, byte[] rawValue, long windowStart)`: a null
/// value deletes (ignored with duplicates); false when the write was dropped as expired.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_windowPut<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    key: JByteArray<'l>,
    value: JByteArray<'l>,
    start: jlong,
) -> jboolean {
    guard(&mut env, JNI_TRUE, |env| {
        let key = bytes(env, &key, "key")?;
        let value = opt_bytes(env, &value)?;
        Ok(jboolean::from(ops::window_put(
            h,
            &key,
            value.as_deref(),
            start,
        )?))
    })
}

/// `void windowPutAll(long store, byte[] packed)`: entries keyed by Kafka window store keys
/// (restore), all validated before any is written.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_windowPutAll<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    packed: JByteArray<'l>,
) {
    guard(&mut env, (), |env| {
        let packed = bytes(env, &packed, "batch")?;
        Ok(ops::window_put_all(h, &packed)?)
    })
}

/// `byte[] windowFetch(long store, byte[] key, long windowStart, boolean committed)`.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_windowFetch<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    key: JByteArray<'l>,
    start: jlong,
    committed: jboolean,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let key = bytes(env, &key, "key")?;
        let v = ops::window_fetch(h, &key, start, flag(committed))?;
        to_java(env, v)
    })
}

/// `long windowQuery(long store, int kind, byte[] keyFrom, byte[] keyTo, long from, long to,
/// boolean reverse, boolean committed)`: kind 0 = `fetch(key=keyFrom, from, to)`, 1 =
/// `fetch(keyFrom, keyTo, from, to)` (null = open end), 2 = `fetchAll(from, to)`, 3 = `all()`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_windowQuery<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    kind: jint,
    key_from: JByteArray<'l>,
    key_to: JByteArray<'l>,
    from: jlong,
    to: jlong,
    reverse: jboolean,
    committed: jboolean,
) -> jlong {
    guard(&mut env, 0, |env| {
        let kf = opt_bytes(env, &key_from)?;
        let kt = opt_bytes(env, &key_to)?;
        Ok(ops::window_query(
            h,
            kind,
            kf.as_deref(),
            kt.as_deref(),
            from,
            to,
            flag(reverse),
            flag(committed),
        )?)
    })
}

/// `boolean sessionPut(long store, byte[] key, long start, long end, byte[] aggregate)`:
/// a null aggregate removes the session; false when the write was dropped as expired.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_sessionPut<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    key: JByteArray<'l>,
    start: jlong,
    end: jlong,
    agg: JByteArray<'l>,
) -> jboolean {
    guard(&mut env, JNI_TRUE, |env| {
        let key = bytes(env, &key, "key")?;
        let agg = opt_bytes(env, &agg)?;
        Ok(jboolean::from(ops::session_put(
            h,
            &key,
            start,
            end,
            agg.as_deref(),
        )?))
    })
}

/// `void sessionPutAll(long store, byte[] packed)`: entries keyed by Kafka session store
/// keys (restore).
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_sessionPutAll<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    packed: JByteArray<'l>,
) {
    guard(&mut env, (), |env| {
        let packed = bytes(env, &packed, "batch")?;
        Ok(ops::session_put_all(h, &packed)?)
    })
}

/// `byte[] sessionFetch(long store, byte[] key, long start, long end, boolean committed)`.
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_sessionFetch<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    key: JByteArray<'l>,
    start: jlong,
    end: jlong,
    committed: jboolean,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let key = bytes(env, &key, "key")?;
        let v = ops::session_fetch(h, &key, start, end, flag(committed))?;
        to_java(env, v)
    })
}

/// `long sessionQuery(long store, int kind, byte[] keyFrom, byte[] keyTo, long earliestEnd,
/// long latestStart, boolean reverse, boolean committed)`: kind 0 = `findSessions(key =
/// keyFrom, ...)`, 1 = `findSessions(keyFrom, keyTo, ...)` (null = open end), 2 = every
/// live session.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_sessionQuery<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    kind: jint,
    key_from: JByteArray<'l>,
    key_to: JByteArray<'l>,
    earliest_end: jlong,
    latest_start: jlong,
    reverse: jboolean,
    committed: jboolean,
) -> jlong {
    guard(&mut env, 0, |env| {
        let kf = opt_bytes(env, &key_from)?;
        let kt = opt_bytes(env, &key_to)?;
        Ok(ops::session_query(
            h,
            kind,
            kf.as_deref(),
            kt.as_deref(),
            earliest_end,
            latest_start,
            flag(reverse),
            flag(committed),
        )?)
    })
}

macro_rules! iterator_natives {
    ($next:ident, $close:ident, $time:ident, $next_op:path, $close_op:path, $time_op:path) => {
        /// `byte[] *Next(long iterator, int maxEntries, int maxBytes)`: packed entries (see
        /// the module docs), at least one if any remains; null once exhausted.
        #[no_mangle]
        pub extern "system" fn $next<'l>(
            mut env: JNIEnv<'l>,
            _class: JClass<'l>,
            it: jlong,
            max_entries: jint,
            max_bytes: jint,
        ) -> jbyteArray {
            guard(&mut env, std::ptr::null_mut(), |env| {
                let packed = $next_op(it, max_entries, max_bytes)?;
                to_java(env, packed)
            })
        }

        /// `void *CloseIterator(long iterator)`.
        #[no_mangle]
        pub extern "system" fn $close<'l>(mut env: JNIEnv<'l>, _class: JClass<'l>, it: jlong) {
            guard(&mut env, (), |_| Ok($close_op(it)?))
        }

        /// `long *StreamTime(long store, boolean committed)`: Kafka's observed stream time
        /// (-1 before any write).
        #[no_mangle]
        pub extern "system" fn $time<'l>(
            mut env: JNIEnv<'l>,
            _class: JClass<'l>,
            h: jlong,
            committed: jboolean,
        ) -> jlong {
            guard(&mut env, -1, |_| Ok($time_op(h, flag(committed))?))
        }
    };
}

iterator_natives!(
    Java_dev_kstate_internal_KstateNative_windowNext,
    Java_dev_kstate_internal_KstateNative_windowCloseIterator,
    Java_dev_kstate_internal_KstateNative_windowStreamTime,
    ops::window_next,
    ops::window_close_iterator,
    ops::window_stream_time
);
iterator_natives!(
    Java_dev_kstate_internal_KstateNative_sessionNext,
    Java_dev_kstate_internal_KstateNative_sessionCloseIterator,
    Java_dev_kstate_internal_KstateNative_sessionStreamTime,
    ops::session_next,
    ops::session_close_iterator,
    ops::session_stream_time
);

macro_rules! transaction_natives {
    ($ty:ty, $commit:ident, $offset:ident, $meta:ident, $rollback:ident, $flush:ident,
     $bytes:ident, $prop:ident) => {
        /// `void *Commit(long store, String[] topics, int[] partitions, long[] offsets,
        /// byte[] metadata)`: as `commit` of key-value stores (`Long.MIN_VALUE` removes a
        /// partition's offset, empty arrays remove all).
        #[no_mangle]
        pub extern "system" fn $commit<'l>(
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
                Ok(ops::commit::<$ty>(h, &entries, metadata.as_deref())?)
            })
        }

        /// `long *CommittedOffset(long store, String topic, int partition)`:
        /// `Long.MIN_VALUE` when none.
        #[no_mangle]
        pub extern "system" fn $offset<'l>(
            mut env: JNIEnv<'l>,
            _class: JClass<'l>,
            h: jlong,
            topic: JString<'l>,
            partition: jint,
        ) -> jlong {
            guard(&mut env, NO_OFFSET, |env| {
                let topic = string(env, &topic, "topic")?;
                Ok(ops::committed_offset::<$ty>(h, topic, partition)?)
            })
        }

        /// `byte[] *CommittedMetadata(long store)`.
        #[no_mangle]
        pub extern "system" fn $meta<'l>(
            mut env: JNIEnv<'l>,
            _class: JClass<'l>,
            h: jlong,
        ) -> jbyteArray {
            guard(&mut env, std::ptr::null_mut(), |env| {
                let m = ops::committed_metadata::<$ty>(h)?;
                to_java(env, m)
            })
        }

        /// `void *Rollback(long store)`.
        #[no_mangle]
        pub extern "system" fn $rollback<'l>(mut env: JNIEnv<'l>, _class: JClass<'l>, h: jlong) {
            guard(&mut env, (), |_| Ok(ops::rollback::<$ty>(h)?))
        }

        /// `void *Flush(long store, byte[] metadata)`: commit keeping the offsets.
        #[no_mangle]
        pub extern "system" fn $flush<'l>(
            mut env: JNIEnv<'l>,
            _class: JClass<'l>,
            h: jlong,
            metadata: JByteArray<'l>,
        ) {
            guard(&mut env, (), |env| {
                let metadata = opt_bytes(env, &metadata)?;
                Ok(ops::flush::<$ty>(h, metadata.as_deref())?)
            })
        }

        /// `long *ApproximateNumUncommittedBytes(long store)`.
        #[no_mangle]
        pub extern "system" fn $bytes<'l>(
            mut env: JNIEnv<'l>,
            _class: JClass<'l>,
            h: jlong,
        ) -> jlong {
            guard(&mut env, 0, |_| Ok(ops::uncommitted_bytes::<$ty>(h)?))
        }

        /// `long *Property(long store, String name)`: -1 when there is none.
        #[no_mangle]
        pub extern "system" fn $prop<'l>(
            mut env: JNIEnv<'l>,
            _class: JClass<'l>,
            h: jlong,
            name: JString<'l>,
        ) -> jlong {
            guard(&mut env, -1, |env| {
                let name = string(env, &name, "property name")?;
                Ok(ops::property::<$ty>(h, &name)?)
            })
        }
    };
}

transaction_natives!(
    WindowStore,
    Java_dev_kstate_internal_KstateNative_windowCommit,
    Java_dev_kstate_internal_KstateNative_windowCommittedOffset,
    Java_dev_kstate_internal_KstateNative_windowCommittedMetadata,
    Java_dev_kstate_internal_KstateNative_windowRollback,
    Java_dev_kstate_internal_KstateNative_windowFlush,
    Java_dev_kstate_internal_KstateNative_windowApproximateNumUncommittedBytes,
    Java_dev_kstate_internal_KstateNative_windowProperty
);
transaction_natives!(
    SessionStore,
    Java_dev_kstate_internal_KstateNative_sessionCommit,
    Java_dev_kstate_internal_KstateNative_sessionCommittedOffset,
    Java_dev_kstate_internal_KstateNative_sessionCommittedMetadata,
    Java_dev_kstate_internal_KstateNative_sessionRollback,
    Java_dev_kstate_internal_KstateNative_sessionFlush,
    Java_dev_kstate_internal_KstateNative_sessionApproximateNumUncommittedBytes,
    Java_dev_kstate_internal_KstateNative_sessionProperty
);
