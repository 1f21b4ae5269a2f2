//! The `extern "system"` window and session natives of `dev.kstate.internal.KstateNative`
//! (documented there and in `NativeWindowStore` / `NativeSessionStore`). Each converts its
//! Java arguments, calls its body in [`super::segmented_ops`] and converts the result inside
//! [`super::guard`].
//!
//! Iterator batches (`windowNext`, `sessionNext`) are packed like the key-value range path
//! ([`super::codec`]), each key being Kafka's store key: `key ‖ BE i64 windowStart ‖
//! BE i32 seqnum` for windows, `key ‖ BE i64 end ‖ BE i64 start` for sessions.

use jni::sys::{jint, jlong};

use super::declare::{natives, transaction_natives};
use super::natives::JavaBytes;
use super::ops::OpenArgs;
use super::segmented_ops::{self as ops, SegmentArgs};
use crate::{SessionStore, WindowStore};

natives! {
    /// `long windowOpen(String path, int engine, int valueFormat, long maxUncommittedBytes,
    /// boolean syncOnCommit, long blockCacheBytes, long writeBufferBytes, int maxWriteBuffers,
    /// boolean bloomFilter, boolean statistics, long boundedMemoryBytes,
    /// long boundedMemtableBytes, long retentionMs, long windowSizeMs, boolean retainDuplicates,
    /// long segmentIntervalMs, boolean timeOrdered, boolean keyIndex, boolean adoptLeftOpen)`:
    /// tuning and `adoptLeftOpen` as `open`;
    /// segment interval 0 = Kafka's default; `timeOrdered` / `keyIndex` make Kafka's
    /// time-ordered store (with its `hasIndex`). Value formats numbered as C's
    /// `KSTATE_FORMAT_*`: 0 timestamped, 1 plain, 2 headers.
    fn Java_dev_kstate_internal_KstateNative_windowOpen(
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
        retention: jlong,
        window_size: jlong,
        retain_duplicates: bool,
        segment_interval: jlong,
        time_ordered: bool,
        key_index: bool,
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
        let seg = SegmentArgs {
            retention,
            window_size,
            retain_duplicates,
            segment_interval,
            time_ordered,
            key_index,
            kafka_headers: false,
        };
        ops::window_open(path.as_deref(), &args, &seg)
    };

    /// `long sessionOpen(String path, int engine, boolean headers, long maxUncommittedBytes,
    /// boolean syncOnCommit, long blockCacheBytes, long writeBufferBytes, int maxWriteBuffers,
    /// boolean bloomFilter, boolean statistics, long boundedMemoryBytes,
    /// long boundedMemtableBytes, long retentionMs, long segmentIntervalMs,
    /// boolean timeOrdered, boolean kafkaHeaders, boolean adoptLeftOpen)` (`adoptLeftOpen` as
    /// `open`; `kafkaHeaders` as `SessionOptions::kafka_headers_format`): aggregates
    /// are stored plain, or in Kafka's
    /// `AggregationWithHeaders` layout when `headers`; `timeOrdered` makes Kafka's
    /// time-ordered session store.
    fn Java_dev_kstate_internal_KstateNative_sessionOpen(
        path: Option<String>,
        engine: jint,
        headers: bool,
        max_uncommitted_bytes: jlong,
        sync_on_commit: bool,
        block_cache_bytes: jlong,
        write_buffer_bytes: jlong,
        max_write_buffers: jint,
        bloom_filter: bool,
        statistics: bool,
        bounded_memory_bytes: jlong,
        bounded_memtable_bytes: jlong,
        retention: jlong,
        segment_interval: jlong,
        time_ordered: bool,
        kafka_headers: bool,
        adopt_left_open: bool,
    ) -> jlong = {
        let args = OpenArgs {
            engine,
            value_format: if headers { 2 } else { 1 },
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
        let seg = SegmentArgs {
            retention,
            window_size: 0,
            retain_duplicates: false,
            segment_interval,
            time_ordered,
            key_index: false,
            kafka_headers,
        };
        ops::session_open(path.as_deref(), &args, &seg)
    };

    /// `void windowClose(long store)`.
    fn Java_dev_kstate_internal_KstateNative_windowClose(h: jlong) -> () = ops::window_close(h);
    /// `void sessionClose(long store)`.
    fn Java_dev_kstate_internal_KstateNative_sessionClose(h: jlong) -> () = ops::session_close(h);

    /// `boolean windowPut(long store, byte[] key, byte[] rawValue, long windowStart)`: a null
    /// value deletes; false when the write was dropped as expired.
    fn Java_dev_kstate_internal_KstateNative_windowPut(
        h: jlong,
        key: JavaBytes,
        value: Option<JavaBytes>,
        start: jlong,
    ) -> bool = ops::window_put(h, &key, value.as_deref(), start);
    /// `boolean sessionPut(long store, byte[] key, long start, long end, byte[] aggregate)`: a
    /// null aggregate removes the session; false when the write was dropped as expired.
    fn Java_dev_kstate_internal_KstateNative_sessionPut(
        h: jlong,
        key: JavaBytes,
        start: jlong,
        end: jlong,
        aggregate: Option<JavaBytes>,
    ) -> bool = ops::session_put(h, &key, start, end, aggregate.as_deref());

    /// `void windowPutAll(long store, byte[] packed)`: a packed batch keyed by Kafka's window
    /// store keys (restore).
    fn Java_dev_kstate_internal_KstateNative_windowPutAll(h: jlong, batch: JavaBytes) -> () =
        ops::window_put_all(h, &batch);
    /// `void sessionPutAll(long store, byte[] packed)`: as `windowPutAll`, Kafka's session keys.
    fn Java_dev_kstate_internal_KstateNative_sessionPutAll(h: jlong, batch: JavaBytes) -> () =
        ops::session_put_all(h, &batch);

    /// `byte[] windowFetch(long store, byte[] key, long windowStart, boolean committed)`.
    fn Java_dev_kstate_internal_KstateNative_windowFetch(
        h: jlong,
        key: JavaBytes,
        start: jlong,
        committed: bool,
    ) -> Option<Vec<u8>> = ops::window_fetch(h, &key, start, committed);
    /// `byte[] sessionFetch(long store, byte[] key, long start, long end, boolean committed)`.
    fn Java_dev_kstate_internal_KstateNative_sessionFetch(
        h: jlong,
        key: JavaBytes,
        start: jlong,
        end: jlong,
        committed: bool,
    ) -> Option<Vec<u8>> = ops::session_fetch(h, &key, start, end, committed);

    /// `long windowQuery(long store, int kind, byte[] keyFrom, byte[] keyTo, long from,
    /// long to, boolean reverse, boolean committed)`: a new iterator (kinds in
    /// [`super::segmented_ops`]).
    fn Java_dev_kstate_internal_KstateNative_windowQuery(
        h: jlong,
        kind: jint,
        key_from: Option<JavaBytes>,
        key_to: Option<JavaBytes>,
        from: jlong,
        to: jlong,
        reverse: bool,
        committed: bool,
    ) -> jlong = ops::window_query(
        h, kind, key_from.as_deref(), key_to.as_deref(), from, to, reverse, committed,
    );
    /// `long sessionQuery(long store, int kind, byte[] keyFrom, byte[] keyTo,
    /// long earliestEnd, long latestStart, boolean reverse, boolean committed)`.
    fn Java_dev_kstate_internal_KstateNative_sessionQuery(
        h: jlong,
        kind: jint,
        key_from: Option<JavaBytes>,
        key_to: Option<JavaBytes>,
        earliest_end: jlong,
        latest_start: jlong,
        reverse: bool,
        committed: bool,
    ) -> jlong = ops::session_query(
        h,
        kind,
        key_from.as_deref(),
        key_to.as_deref(),
        earliest_end,
        latest_start,
        reverse,
        committed,
    );

    /// `byte[] windowNext(long iterator, int maxEntries, int maxBytes)`: packed as the
    /// key-value `next`, each key Kafka's window store key.
    fn Java_dev_kstate_internal_KstateNative_windowNext(it: jlong, max_entries: jint, max_bytes: jint)
        -> Option<Vec<u8>> = ops::window_next(it, max_entries, max_bytes);
    /// `byte[] sessionNext(long iterator, int maxEntries, int maxBytes)`: Kafka's session keys.
    fn Java_dev_kstate_internal_KstateNative_sessionNext(it: jlong, max_entries: jint, max_bytes: jint)
        -> Option<Vec<u8>> = ops::session_next(it, max_entries, max_bytes);
    /// `void windowCloseIterator(long iterator)`.
    fn Java_dev_kstate_internal_KstateNative_windowCloseIterator(it: jlong) -> () =
        ops::window_close_iterator(it);
    /// `void sessionCloseIterator(long iterator)`.
    fn Java_dev_kstate_internal_KstateNative_sessionCloseIterator(it: jlong) -> () =
        ops::session_close_iterator(it);
    /// `long windowStreamTime(long store, boolean committed)`: -1 before the first record.
    fn Java_dev_kstate_internal_KstateNative_windowStreamTime(h: jlong, committed: bool) -> jlong =
        ops::window_stream_time(h, committed);
    /// `long sessionStreamTime(long store, boolean committed)`.
    fn Java_dev_kstate_internal_KstateNative_sessionStreamTime(h: jlong, committed: bool) -> jlong =
        ops::session_stream_time(h, committed);
}

transaction_natives! {
    WindowStore: commit = Java_dev_kstate_internal_KstateNative_windowCommit,
    committed_offset = Java_dev_kstate_internal_KstateNative_windowCommittedOffset,
    committed_metadata = Java_dev_kstate_internal_KstateNative_windowCommittedMetadata,
    rollback = Java_dev_kstate_internal_KstateNative_windowRollback,
    flush = Java_dev_kstate_internal_KstateNative_windowFlush,
    uncommitted_bytes = Java_dev_kstate_internal_KstateNative_windowApproximateNumUncommittedBytes,
    property = Java_dev_kstate_internal_KstateNative_windowProperty
}

transaction_natives! {
    SessionStore: commit = Java_dev_kstate_internal_KstateNative_sessionCommit,
    committed_offset = Java_dev_kstate_internal_KstateNative_sessionCommittedOffset,
    committed_metadata = Java_dev_kstate_internal_KstateNative_sessionCommittedMetadata,
    rollback = Java_dev_kstate_internal_KstateNative_sessionRollback,
    flush = Java_dev_kstate_internal_KstateNative_sessionFlush,
    uncommitted_bytes = Java_dev_kstate_internal_KstateNative_sessionApproximateNumUncommittedBytes,
    property = Java_dev_kstate_internal_KstateNative_sessionProperty
}
