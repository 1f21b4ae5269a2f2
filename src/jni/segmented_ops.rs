//! The bodies of the window and session natives, in plain Rust types (see [`super::ops`]
//! for the conventions): handles resolved in the one table shared with C, with the shared
//! rules of [`crate::bridge`]. The transaction natives (commit, offsets, rollback, ...) are
//! one generic definition for every store kind ([`bridge::Transactional`]).

use jni::sys::{jint, jlong};

use super::codec;
use super::ops::{isolation, jhandle, number, pack, OpenArgs};
use crate::bridge::{self, SessionIterHandle, WindowIterHandle};
use crate::handle::{Handled, HANDLES};
use crate::store::{SessionOptions, SessionQuery, WindowOptions, WindowQuery};
use crate::{Error, Result, SessionStore, WindowStore};

/// Query kinds of `windowQuery`.
pub(crate) const WINDOW_KEY: jint = 0;
/// `fetch(keyFrom, keyTo, from, to)`.
pub(crate) const WINDOW_KEY_RANGE: jint = 1;
/// `fetchAll(from, to)`.
pub(crate) const WINDOW_TIME: jint = 2;
/// `all()`.
pub(crate) const WINDOW_ALL: jint = 3;
/// Query kinds of `sessionQuery`: `findSessions(key, earliestEnd, latestStart)`.
pub(crate) const SESSION_KEY: jint = 0;
/// `findSessions(keyFrom, keyTo, earliestEnd, latestStart)`.
pub(crate) const SESSION_KEY_RANGE: jint = 1;
/// Every live session.
pub(crate) const SESSION_ALL: jint = 2;
/// Time-ordered stores: `findSessions(earliestSessionEndTime, latestSessionEndTime)`
/// (the two times travel in `earliestEnd` / `latestStart`).
pub(crate) const SESSION_BY_END: jint = 3;

/// Retention settings of `windowOpen` / `sessionOpen`, as Java passes them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SegmentArgs {
    /// Retention period (ms).
    pub retention: jlong,
    /// Window size (ms; window stores only).
    pub window_size: jlong,
    /// Kafka's `retainDuplicates` (window stores only).
    pub retain_duplicates: bool,
    /// Segment interval of a new store (ms); 0 = Kafka's default.
    pub segment_interval: jlong,
    /// Kafka's time-ordered store (emit on window close).
    pub time_ordered: bool,
    /// With `time_ordered`: Kafka's `hasIndex` (window stores only).
    pub key_index: bool,
    /// With `time_ordered`: Kafka's store is of the DSL's headers store format (session
    /// stores only, see `SessionOptions::kafka_headers_format`).
    pub kafka_headers: bool,
}

impl SegmentArgs {
    fn interval(&self) -> Option<i64> {
        bridge::segment_interval(self.segment_interval)
    }
}

fn store<T: Handled>(h: jlong) -> Result<std::sync::Arc<T>> {
    HANDLES.get::<T>(number(h))
}

/// `windowOpen`: a new window store handle.
pub(crate) fn window_open(path: Option<&str>, args: &OpenArgs, seg: &SegmentArgs) -> Result<jlong> {
    let mut options = WindowOptions::new(seg.retention, seg.window_size, seg.retain_duplicates)
        .with_store(args.store_options()?);
    options.segment_interval = seg.interval();
    if seg.time_ordered {
        options = options.time_ordered(seg.key_index);
    }
    bridge::open_window_store(path.map(str::as_bytes), &options).map(jhandle)
}

/// `sessionOpen`: a new session store handle.
pub(crate) fn session_open(
    path: Option<&str>,
    args: &OpenArgs,
    seg: &SegmentArgs,
) -> Result<jlong> {
    let mut options = SessionOptions::new(seg.retention).with_store(args.store_options()?);
    options.segment_interval = seg.interval();
    options.time_ordered = seg.time_ordered;
    options.kafka_headers_format = seg.kafka_headers;
    bridge::open_session_store(path.map(str::as_bytes), &options).map(jhandle)
}

/// `windowClose`.
pub(crate) fn window_close(h: jlong) -> Result<()> {
    bridge::close_window_store(number(h))
}

/// `sessionClose`.
pub(crate) fn session_close(h: jlong) -> Result<()> {
    bridge::close_session_store(number(h))
}

/// `windowPut`: Kafka's `put(key, rawValue, windowStart)`; `None` deletes. False when the
/// write was dropped as expired.
pub(crate) fn window_put(h: jlong, key: &[u8], value: Option<&[u8]>, start: jlong) -> Result<bool> {
    store::<WindowStore>(h)?.put_raw(key, value, start)
}

/// `windowPutAll`: a packed batch keyed by Kafka window store keys (restore).
pub(crate) fn window_put_all(h: jlong, packed: &[u8]) -> Result<()> {
    store::<WindowStore>(h)?.put_all_kafka_keys(&codec::decode_entries(packed)?)
}

/// `windowFetch`: Kafka's `fetch(key, windowStart)`.
pub(crate) fn window_fetch(
    h: jlong,
    key: &[u8],
    start: jlong,
    committed: bool,
) -> Result<Option<Vec<u8>>> {
    store::<WindowStore>(h)?.fetch_raw_with(isolation(committed), key, start)
}

/// `windowQuery`: a new window iterator handle.
#[allow(clippy::too_many_arguments)]
pub(crate) fn window_query(
    h: jlong,
    kind: jint,
    key_from: Option<&[u8]>,
    key_to: Option<&[u8]>,
    from: jlong,
    to: jlong,
    reverse: bool,
    committed: bool,
) -> Result<jlong> {
    let query = match kind {
        WINDOW_KEY => WindowQuery::Key {
            key: key_from
                .ok_or_else(|| Error::InvalidArgument("null key".into()))?
                .to_vec(),
            from,
            to,
        },
        WINDOW_KEY_RANGE => WindowQuery::KeyRange {
            key_from: key_from.map(<[u8]>::to_vec),
            key_to: key_to.map(<[u8]>::to_vec),
            from,
            to,
        },
        WINDOW_TIME => WindowQuery::Time { from, to },
        WINDOW_ALL => WindowQuery::All,
        other => {
            return Err(Error::InvalidArgument(format!(
                "unknown window query kind {other}"
            )))
        }
    };
    bridge::open_window_iter(number(h), |s| {
        s.query(isolation(committed), &query, reverse)
    })
    .map(jhandle)
}

/// `sessionPut`: Kafka's `put(Windowed(key, SessionWindow(start, end)), agg)`; `None`
/// removes. False when the write was dropped as expired.
pub(crate) fn session_put(
    h: jlong,
    key: &[u8],
    start: jlong,
    end: jlong,
    agg: Option<&[u8]>,
) -> Result<bool> {
    store::<SessionStore>(h)?.put(key, start, end, agg)
}

/// `sessionPutAll`: a packed batch keyed by Kafka session store keys (restore).
pub(crate) fn session_put_all(h: jlong, packed: &[u8]) -> Result<()> {
    store::<SessionStore>(h)?.put_all_kafka_keys(&codec::decode_entries(packed)?)
}

/// `sessionFetch`: Kafka's `fetchSession(key, start, end)`.
pub(crate) fn session_fetch(
    h: jlong,
    key: &[u8],
    start: jlong,
    end: jlong,
    committed: bool,
) -> Result<Option<Vec<u8>>> {
    store::<SessionStore>(h)?.fetch_session_with(isolation(committed), key, start, end)
}

/// `sessionQuery`: a new session iterator handle.
#[allow(clippy::too_many_arguments)]
pub(crate) fn session_query(
    h: jlong,
    kind: jint,
    key_from: Option<&[u8]>,
    key_to: Option<&[u8]>,
    earliest_end: jlong,
    latest_start: jlong,
    reverse: bool,
    committed: bool,
) -> Result<jlong> {
    if kind == SESSION_BY_END {
        return bridge::open_session_iter(number(h), |s| {
            s.find_sessions_by_end_with(isolation(committed), earliest_end, latest_start, reverse)
        })
        .map(jhandle);
    }
    let query = match kind {
        SESSION_KEY => SessionQuery::Key {
            key: key_from
                .ok_or_else(|| Error::InvalidArgument("null key".into()))?
                .to_vec(),
            earliest_end,
            latest_start,
        },
        SESSION_KEY_RANGE => SessionQuery::KeyRange {
            key_from: key_from.map(<[u8]>::to_vec),
            key_to: key_to.map(<[u8]>::to_vec),
            earliest_end,
            latest_start,
        },
        SESSION_ALL => SessionQuery::All,
        other => {
            return Err(Error::InvalidArgument(format!(
                "unknown session query kind {other}"
            )))
        }
    };
    bridge::open_session_iter(number(h), |s| {
        s.query(isolation(committed), &query, reverse)
    })
    .map(jhandle)
}

/// `windowNext`: entries keyed by Kafka window store keys, packed.
pub(crate) fn window_next(
    it: jlong,
    max_entries: jint,
    max_bytes: jint,
) -> Result<Option<Vec<u8>>> {
    pack(
        &HANDLES.get::<WindowIterHandle>(number(it))?.0,
        max_entries,
        max_bytes,
    )
}

/// `sessionNext`: entries keyed by Kafka session store keys, packed.
pub(crate) fn session_next(
    it: jlong,
    max_entries: jint,
    max_bytes: jint,
) -> Result<Option<Vec<u8>>> {
    pack(
        &HANDLES.get::<SessionIterHandle>(number(it))?.0,
        max_entries,
        max_bytes,
    )
}

/// `windowCloseIterator`.
pub(crate) fn window_close_iterator(it: jlong) -> Result<()> {
    bridge::close_window_iter(number(it))
}

/// `sessionCloseIterator`.
pub(crate) fn session_close_iterator(it: jlong) -> Result<()> {
    bridge::close_session_iter(number(it))
}

/// `windowStreamTime` / `sessionStreamTime`.
pub(crate) fn window_stream_time(h: jlong, committed: bool) -> Result<jlong> {
    store::<WindowStore>(h)?.stream_time(isolation(committed))
}

/// `sessionStreamTime`.
pub(crate) fn session_stream_time(h: jlong, committed: bool) -> Result<jlong> {
    store::<SessionStore>(h)?.stream_time(isolation(committed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jni::ops::{commit, committed_offset, rollback};
    use crate::ErrorCode;
    use crate::TopicPartition;

    fn memory() -> OpenArgs {
        OpenArgs {
            engine: 1,
            value_format: 0,
            max_uncommitted_bytes: 0,
            sync_on_commit: false,
            block_cache_bytes: 0,
            write_buffer_bytes: 0,
            max_write_buffers: 0,
            bloom_filter: true,
            statistics: false,
            bounded_memory_bytes: 0,
            bounded_memtable_bytes: 0,
            adopt_left_open: false,
        }
    }

    fn seg() -> SegmentArgs {
        SegmentArgs {
            retention: 10_000,
            window_size: 100,
            retain_duplicates: false,
            segment_interval: 1_000,
            time_ordered: false,
            key_index: false,
            kafka_headers: false,
        }
    }

    fn drain(next: impl Fn() -> Result<Option<Vec<u8>>>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(packed) = next().unwrap() {
            for (k, v) in codec::decode_entries(&packed).unwrap() {
                out.push((k.to_vec(), v.unwrap().to_vec()));
            }
        }
        out
    }

    #[test]
    fn window_and_session_handles_work_and_refuse_other_kinds() {
        let w = window_open(None, &memory(), &seg()).unwrap();
        let s = session_open(None, &memory(), &seg()).unwrap();
        let v = crate::format::value::encode(b"v", 5);
        window_put(w, b"a", Some(&v), 0).unwrap();
        window_put(w, b"a", Some(&v), 2_000).unwrap();
        session_put(s, b"a", 10, 20, Some(b"agg")).unwrap();
        assert_eq!(window_fetch(w, b"a", 0, false).unwrap(), Some(v.clone()));
        assert_eq!(window_fetch(w, b"a", 0, true).unwrap(), None);
        commit::<WindowStore>(w, &[(TopicPartition::new("t", 0), Some(4))], None).unwrap();
        assert_eq!(
            committed_offset::<WindowStore>(w, "t".into(), 0).unwrap(),
            4
        );
        let it = window_query(w, WINDOW_KEY_RANGE, None, None, 0, 5_000, true, true).unwrap();
        let got = drain(|| window_next(it, 1, 1));
        let starts: Vec<i64> = got
            .iter()
            .map(|(k, _)| crate::format::segmented::parse_window_key(k).unwrap().1)
            .collect();
        assert_eq!(starts, [2_000, 0], "backward, committed");
        window_close_iterator(it).unwrap();
        let it =
            session_query(s, SESSION_KEY, Some(b"a"), None, 0, i64::MAX, false, false).unwrap();
        assert_eq!(drain(|| session_next(it, 10, 1 << 20)).len(), 1);
        // Kinds are checked: a window store is no session store, nor a key-value store,
        // and a window iterator is no session iterator.
        let code = |e: Error| e.code();
        assert_eq!(
            code(session_put(w, b"k", 0, 0, None).unwrap_err()),
            ErrorCode::InvalidHandle
        );
        assert_eq!(
            code(window_fetch(s, b"k", 0, false).unwrap_err()),
            ErrorCode::InvalidHandle
        );
        assert_eq!(
            code(super::super::ops::get(w, b"k", false).unwrap_err()),
            ErrorCode::InvalidHandle
        );
        assert_eq!(
            code(window_next(it, 1, 1).unwrap_err()),
            ErrorCode::InvalidHandle
        );
        assert_eq!(
            code(window_query(w, 9, None, None, 0, 0, false, false).unwrap_err()),
            ErrorCode::InvalidArgument
        );
        session_close(s).unwrap();
        assert_eq!(
            code(session_next(it, 1, 1).unwrap_err()),
            ErrorCode::IteratorClosed
        );
        assert_eq!(code(session_close(s).unwrap_err()), ErrorCode::StoreClosed);
        session_close_iterator(it).unwrap();
        window_close(w).unwrap();
        assert_eq!(
            code(rollback::<WindowStore>(w).unwrap_err()),
            ErrorCode::StoreClosed
        );
    }
}
