//! The transactional session store (Kafka's `RocksDBSessionStore`) on the one transaction
//! layer. Aggregates are stored as given (Kafka's session stores are not timestamped).
//! Semantics, result order and retention follow Kafka's segmented stores, segmented by
//! session end; see [`super::segmented`].

use std::sync::Arc;

use super::segmented::{Plan, TimePlan, SESSION_BY_TIME_FAMILY};
use super::segmented_store::{
    forward_and_backward, segmented_options, Sealed, SegmentIter, SegmentKind, SegmentSpec,
    SegmentedStore,
};
use super::StoreOptions;
use crate::engine::EngineKind;
use crate::format::meta::{StoreKind, ValueFormat};
use crate::format::segmented::{
    ordered_lower_range, parse_session_key, session_key, session_upper_range, SESSION_SUFFIX,
};
use crate::txn::Isolation;
use crate::Result;

/// Column family of session stores: `[segment][Kafka session key]` -> aggregate.
pub const SESSION_FAMILY: &str = "kstate_sessions";

/// How to open a session store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOptions {
    /// Engine, memory bound, RocksDB tuning, value format: aggregates are stored plain, as
    /// Kafka's session stores do, or, with [`ValueFormat::Headers`], in Kafka 4.3+'s
    /// `AggregationWithHeaders` layout (KIP-1271: `[varint headersSize][headers][aggregation]`).
    /// Timestamped means plain (session aggregates carry no timestamp). A store opens only in
    /// the format it was created with.
    pub store: StoreOptions,
    /// Retention period in ms (>= 0).
    pub retention_period: i64,
    /// Segment interval in ms for a new store (`None`: Kafka's `max(retention / 2, 60 s)`);
    /// an existing store keeps its own.
    pub segment_interval: Option<i64>,
    /// Kafka's time-ordered session store (`RocksDbTimeOrderedSessionBytesStoreSupplier`,
    /// what `EmitStrategy.onWindowClose()` uses): adds
    /// [`SessionStore::find_sessions_by_end_with`], answered from a time index kept in the
    /// same transaction. Fixed when the store is created: a store created otherwise is
    /// refused.
    pub time_ordered: bool,
    /// With `time_ordered`: Kafka's own store of the application is the DSL's headers store
    /// format (Kafka 4.4's `RocksDbTimeOrderedSessionHeadersBytesStoreSupplier`, aggregates
    /// without headers in `sessionKeyValueWithHeaders`). Recorded in the store's metadata on
    /// every RocksDB open (the last opener wins) for `kstate export --to kafka`, which writes
    /// that layout then; the Java adapter sets it from the DSL's store format.
    pub kafka_headers_format: bool,
}

impl SessionOptions {
    /// Options for a session store on RocksDB.
    pub fn new(retention_period: i64) -> Self {
        SessionOptions {
            store: StoreOptions::plain(EngineKind::RocksDb),
            retention_period,
            segment_interval: None,
            time_ordered: false,
            kafka_headers_format: false,
        }
    }

    /// Makes the options those of Kafka's time-ordered session store.
    pub fn time_ordered(mut self) -> Self {
        self.time_ordered = true;
        self
    }

    pub(crate) fn by_time(&self) -> Option<&'static str> {
        self.time_ordered.then_some(SESSION_BY_TIME_FAMILY)
    }

    segmented_options!();

    /// Checks the values.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a negative retention or
    /// a segment interval below 1.
    pub fn validate(&self) -> Result<()> {
        self.check_segmenting()
    }

    pub(crate) fn kind(&self) -> StoreKind {
        StoreKind::Session {
            segment_interval: self.segment_interval_or_default(),
        }
    }

    /// The store options with the value format a session store has: plain or headers.
    pub(crate) fn plain_store(&self) -> StoreOptions {
        let value_format = match self.store.value_format {
            ValueFormat::Headers => ValueFormat::Headers,
            ValueFormat::Plain | ValueFormat::Timestamped => ValueFormat::Plain,
        };
        StoreOptions {
            value_format,
            ..self.store.clone()
        }
    }
}

/// One session of a session store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEntry {
    /// The record key.
    pub key: Vec<u8>,
    /// Session start (ms).
    pub start: i64,
    /// Session end (ms).
    pub end: i64,
    /// The aggregate.
    pub value: Vec<u8>,
}

/// What a session query selects (Kafka's `findSessions` bounds, inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionQuery {
    /// `findSessions(key, earliestSessionEndTime, latestSessionStartTime)`.
    Key {
        /// The key.
        key: Vec<u8>,
        /// Sessions ending at or after this.
        earliest_end: i64,
        /// Sessions starting at or before this.
        latest_start: i64,
    },
    /// `findSessions(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime)`
    /// (`None` leaves a key end open).
    KeyRange {
        /// Lowest key.
        key_from: Option<Vec<u8>>,
        /// Highest key.
        key_to: Option<Vec<u8>>,
        /// Sessions ending at or after this.
        earliest_end: i64,
        /// Sessions starting at or before this.
        latest_start: i64,
    },
    /// Every live session (the segmented store's `all()`).
    All,
}

/// What sets a session store apart from other segmented stores: Kafka's session key layout
/// (`key ‖ BE i64 end ‖ BE i64 start`, segmented by session end); a session store keeps no
/// settings of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionKind;

impl Sealed for SessionKind {}

impl SegmentKind for SessionKind {
    type Options = SessionOptions;
    type Entry = SessionEntry;
    const NAME: &'static str = "SessionStore";
    const FAMILY: &'static str = SESSION_FAMILY;

    const DESCRIPTION: &'static str = "session store";
    const KEY_SUFFIX: usize = SESSION_SUFFIX;

    fn spec(options: &SessionOptions) -> Result<(SegmentSpec, Self)> {
        options.validate()?;
        let (store, kind) = (options.plain_store(), options.kind());
        let spec = SegmentSpec::new(
            store,
            kind,
            options.retention_period,
            options.by_time(),
            false,
        );
        let spec = if options.time_ordered {
            spec.recording_kafka_headers(options.kafka_headers_format)
        } else {
            spec
        };
        Ok((spec, SessionKind))
    }

    fn decode(kafka_key: &[u8], value: Vec<u8>) -> Result<SessionEntry> {
        decode_session(kafka_key, value)
    }
}

/// A transactional session store. Cloning gives another handle to the same store.
///
/// ```
/// use kstate::store::{SessionOptions, SessionStore};
/// # let dir = tempfile::tempdir().unwrap();
/// let store = SessionStore::open(dir.path().join("s"), &SessionOptions::new(3_600_000))?;
/// store.put(b"alice", 10, 20, Some(&b"2"[..]))?;
/// assert_eq!(store.fetch_session(b"alice", 10, 20)?, Some(b"2".to_vec()));
/// let found: Vec<_> = store.find_sessions(b"alice", 15, 30)?.collect::<kstate::Result<_>>()?;
/// assert_eq!((found[0].start, found[0].end), (10, 20));
/// store.close()?;
/// # Ok::<(), kstate::Error>(())
/// ```
pub type SessionStore = SegmentedStore<SessionKind>;

/// Sessions of a query, in Kafka's order; fixed when created, closed with its store.
pub type SessionIter = SegmentIter<SessionKind>;

impl SegmentedStore<SessionKind> {
    fn kafka_key(key: &[u8], start: i64, end: i64) -> Result<Vec<u8>> {
        Self::check_record_key(key)?;
        Ok(session_key(key, start, end))
    }

    /// Kafka's `put(Windowed(key, SessionWindow(start, end)), aggregate)`; `None` deletes.
    /// Advances the stream time to `end`; dropped when its segment has expired.
    ///
    /// Returns false when the write was dropped because its segment has expired (what
    /// Kafka counts in its `dropped-records` task metric), else true.
    ///
    /// # Errors
    /// [`Error::KeyTooLarge`](crate::Error::KeyTooLarge),
    /// [`Error::ValueTooLarge`](crate::Error::ValueTooLarge),
    /// [`Error::StoreClosed`](crate::Error::StoreClosed), spill errors.
    pub fn put(&self, key: &[u8], start: i64, end: i64, aggregate: Option<&[u8]>) -> Result<bool> {
        if let Some(v) = aggregate {
            self.inner.check_raw(v)?;
        }
        let k = Self::kafka_key(key, start, end)?;
        self.inner.write(&k, end, aggregate.map(Arc::from))
    }

    /// Kafka's `remove(Windowed(key, SessionWindow(start, end)))` (also advances the
    /// stream time, as Kafka 4.4 does).
    pub fn remove(&self, key: &[u8], start: i64, end: i64) -> Result<()> {
        self.put(key, start, end, None).map(drop)
    }

    /// Kafka's `fetchSession(key, start, end)` in the writer's view.
    pub fn fetch_session(&self, key: &[u8], start: i64, end: i64) -> Result<Option<Vec<u8>>> {
        self.fetch_session_with(Isolation::ReadUncommitted, key, start, end)
    }

    /// Kafka's `fetchSession(key, start, end)` under `isolation`; `None` once expired.
    pub fn fetch_session_with(
        &self,
        isolation: Isolation,
        key: &[u8],
        start: i64,
        end: i64,
    ) -> Result<Option<Vec<u8>>> {
        let k = Self::kafka_key(key, start, end)?;
        self.inner.get(isolation, &k, end)
    }

    /// Runs `query` under `isolation` in Kafka's order (segments by session end, within a
    /// segment by key bytes, then end, then start), ascending or descending.
    pub fn query(
        &self,
        isolation: Isolation,
        query: &SessionQuery,
        reverse: bool,
    ) -> Result<SessionIter> {
        let retention = self.inner.retention;
        let iter = self.inner.scan(isolation, reverse, |stream_time| {
            let ev = retention.earliest_visible(stream_time);
            match query {
                SessionQuery::Key {
                    key,
                    earliest_end,
                    latest_start,
                } => {
                    let af = (*earliest_end).max(ev);
                    Some(Plan {
                        bin_from: Some(session_key(key, 0, af.max(0))),
                        bin_to: Some(session_key(key, *latest_start, i64::MAX)),
                        ..Plan::times(&retention, af, *latest_start, i64::MAX)
                            .keys(Some(key), Some(key))
                    })
                }
                SessionQuery::KeyRange {
                    key_from,
                    key_to,
                    earliest_end,
                    latest_start,
                } => {
                    if matches!((key_from, key_to), (Some(f), Some(t)) if f > t) {
                        return None;
                    }
                    let af = (*earliest_end).max(ev);
                    let (from, to) = (key_from.as_deref(), key_to.as_deref());
                    Some(Plan {
                        bin_from: from.map(|k| ordered_lower_range(k, SESSION_SUFFIX)),
                        bin_to: to.map(|k| session_upper_range(k, *latest_start)),
                        ..Plan::times(&retention, af, *latest_start, i64::MAX).keys(from, to)
                    })
                }
                SessionQuery::All => Some(Plan::all(&retention, ev)),
            }
        })?;
        Ok(SessionIter::new(iter))
    }

    /// Kafka's `findSessions(earliestSessionEndTime, latestSessionEndTime)` of its
    /// time-ordered session store (KIP-825, what emit-on-window-close reads): every session
    /// whose end is in `[earliest_end, latest_end]`, by end, then start, then key bytes,
    /// from the live segments (as Kafka, no finer retention filter), under `isolation`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) on a store not opened
    /// time-ordered.
    pub fn find_sessions_by_end_with(
        &self,
        isolation: Isolation,
        earliest_end: i64,
        latest_end: i64,
        reverse: bool,
    ) -> Result<SessionIter> {
        let retention = self.inner.retention;
        let iter = self.inner.scan_by_time(isolation, reverse, |stream_time| {
            let from = earliest_end.max(0);
            (latest_end >= from).then(|| {
                TimePlan::times(
                    &retention,
                    retention.min_live_segment(stream_time),
                    from,
                    latest_end,
                )
            })
        })?;
        Ok(SessionIter::new(iter))
    }

    forward_and_backward! {
        /// Kafka's `findSessions(key, earliestSessionEndTime, latestSessionStartTime)`.
        fn find_sessions /
        /// Kafka's `backwardFindSessions(key, earliestSessionEndTime, latestSessionStartTime)`.
        fn backward_find_sessions(
            &self,
            key: &[u8],
            earliest_end: i64,
            latest_start: i64
        ) -> Result<SessionIter>
        |reverse| {
            let q = key_query(key, earliest_end, latest_start);
            self.query(Isolation::ReadUncommitted, &q, reverse)
        }

        /// Kafka's `findSessions(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime)`.
        fn find_sessions_range /
        /// Kafka's `backwardFindSessions(keyFrom, keyTo, ...)`.
        fn backward_find_sessions_range(
            &self,
            key_from: Option<&[u8]>,
            key_to: Option<&[u8]>,
            earliest_end: i64,
            latest_start: i64
        ) -> Result<SessionIter>
        |reverse| {
            let q = range_query(key_from, key_to, earliest_end, latest_start);
            self.query(Isolation::ReadUncommitted, &q, reverse)
        }

        /// Kafka's `fetch(key)`: `findSessions(key, 0, Long.MAX_VALUE)`.
        fn fetch /
        /// Kafka's `backwardFetch(key)`.
        fn backward_fetch(&self, key: &[u8]) -> Result<SessionIter>
        |reverse| {
            let q = key_query(key, 0, i64::MAX);
            self.query(Isolation::ReadUncommitted, &q, reverse)
        }

        /// Kafka's `fetch(keyFrom, keyTo)`: `findSessions(keyFrom, keyTo, 0, Long.MAX_VALUE)`.
        fn fetch_key_range /
        /// Kafka's `backwardFetch(keyFrom, keyTo)`.
        fn backward_fetch_key_range(
            &self,
            key_from: Option<&[u8]>,
            key_to: Option<&[u8]>
        ) -> Result<SessionIter>
        |reverse| {
            let q = range_query(key_from, key_to, 0, i64::MAX);
            self.query(Isolation::ReadUncommitted, &q, reverse)
        }
    }

    /// Every live session, in Kafka's order.
    pub fn all(&self) -> Result<SessionIter> {
        self.query(Isolation::ReadUncommitted, &SessionQuery::All, false)
    }
}

fn key_query(key: &[u8], earliest_end: i64, latest_start: i64) -> SessionQuery {
    SessionQuery::Key {
        key: key.to_vec(),
        earliest_end,
        latest_start,
    }
}

fn range_query(
    key_from: Option<&[u8]>,
    key_to: Option<&[u8]>,
    earliest_end: i64,
    latest_start: i64,
) -> SessionQuery {
    SessionQuery::KeyRange {
        key_from: key_from.map(<[u8]>::to_vec),
        key_to: key_to.map(<[u8]>::to_vec),
        earliest_end,
        latest_start,
    }
}

impl SegmentIter<SessionKind> {
    /// The next session, or `None` at the end.
    pub fn next_session(&mut self) -> Result<Option<SessionEntry>> {
        self.next_entry()
    }
}

/// A session from a Kafka session key and its aggregate.
pub(crate) fn decode_session(kafka_key: &[u8], value: Vec<u8>) -> Result<SessionEntry> {
    let (key, start, end) = parse_session_key(kafka_key)?;
    Ok(SessionEntry {
        key: key.to_vec(),
        start,
        end,
        value,
    })
}
