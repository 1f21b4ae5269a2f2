//! The transactional session store (Kafka's `RocksDBSessionStore`) on the one transaction
//! layer. Aggregates are stored as given (Kafka's session stores are not timestamped).
//! Semantics, result order and retention follow Kafka's segmented stores, segmented by
//! session end; see [`super::segmented`].

use std::path::Path;
use std::sync::Arc;

use super::iter::KvIter;
use super::open::{open_memory_families, open_rocksdb_kind};
use super::segmented::{
    segment_budget, Plan, Retention, Schema, Segmented, TimePlan, SESSION_BY_TIME_FAMILY,
};
use super::window::default_segment_interval;
use super::StoreOptions;
use crate::engine::EngineKind;
use crate::format::meta::{StoreKind, ValueFormat};
use crate::format::segmented::{
    ordered_lower_range, parse_session_key, segment_id, session_key, session_upper_range,
    SESSION_SUFFIX,
};
use crate::format::TopicPartition;
use crate::txn::{Isolation, RecoveryReport};
use crate::{Error, Result};

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
}

impl SessionOptions {
    /// Options for a session store on RocksDB.
    pub fn new(retention_period: i64) -> Self {
        SessionOptions {
            store: StoreOptions::plain(EngineKind::RocksDb),
            retention_period,
            segment_interval: None,
            time_ordered: false,
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

    /// Sets the store options (engine, memory bound, ...).
    pub fn with_store(mut self, store: StoreOptions) -> Self {
        self.store = store;
        self
    }

    /// Sets the segment interval of a new store.
    pub fn with_segment_interval(mut self, interval: i64) -> Self {
        self.segment_interval = Some(interval);
        self
    }

    /// Checks the values.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative retention or a segment interval below 1.
    pub fn validate(&self) -> Result<()> {
        if self.retention_period < 0 {
            return Err(Error::InvalidArgument(
                "retention_period cannot be negative".into(),
            ));
        }
        if self.segment_interval.is_some_and(|i| i < 1) {
            return Err(Error::InvalidArgument(
                "segment_interval must be positive".into(),
            ));
        }
        Ok(())
    }

    pub(crate) fn kind(&self) -> StoreKind {
        StoreKind::Session {
            segment_interval: self
                .segment_interval
                .unwrap_or_else(|| default_segment_interval(self.retention_period)),
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
#[derive(Clone)]
pub struct SessionStore {
    inner: Arc<Segmented>,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("path", &self.inner.path())
            .field("retention", &self.inner.retention.period)
            .field("segment_interval", &self.inner.retention.segment_interval)
            .field("open", &self.is_open())
            .finish()
    }
}

impl SessionStore {
    /// Opens (creating if absent) and recovers the session store at `path`.
    ///
    /// # Errors
    /// As [`crate::store::WindowStore::open`].
    pub fn open(path: impl AsRef<Path>, options: &SessionOptions) -> Result<SessionStore> {
        options.validate()?;
        let path = path.as_ref();
        let store = options.plain_store();
        let (opened, kind) = match store.engine {
            EngineKind::RocksDb => {
                let kind = options.kind();
                let StoreKind::Session { segment_interval } = kind else {
                    return Err(Error::Internal("a session store of another kind".into()));
                };
                let budget = segment_budget(&store, options.retention_period, segment_interval);
                open_rocksdb_kind(
                    path,
                    &budget,
                    kind,
                    options.retention_period,
                    SESSION_FAMILY,
                    options.by_time(),
                )?
            }
            EngineKind::Memory => {
                if path.as_os_str().is_empty() {
                    return Err(Error::InvalidArgument("the store path is empty".into()));
                }
                let kind = options.kind();
                let opened = open_memory_families(&store, kind, SESSION_FAMILY, options.by_time())?;
                (opened, kind)
            }
        };
        Self::build(opened, kind, Some(path.to_path_buf()), options, &store)
    }

    /// Opens a fresh session store on the memory engine.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for invalid options.
    pub fn open_in_memory(options: &SessionOptions) -> Result<SessionStore> {
        options.validate()?;
        let mut store = options.plain_store();
        store.engine = EngineKind::Memory;
        let kind = options.kind();
        let opened = open_memory_families(&store, kind, SESSION_FAMILY, options.by_time())?;
        Self::build(opened, kind, None, options, &store)
    }

    fn build(
        opened: super::open::Opened,
        kind: StoreKind,
        path: Option<std::path::PathBuf>,
        options: &SessionOptions,
        store: &StoreOptions,
    ) -> Result<SessionStore> {
        let StoreKind::Session { segment_interval } = kind else {
            return Err(Error::Internal("a session store of another kind".into()));
        };
        let retention = Retention {
            period: options.retention_period,
            segment_interval,
            time_first_floor: false,
        };
        Ok(SessionStore {
            inner: Arc::new(Segmented::new(
                opened,
                Schema::Session,
                retention,
                path,
                store,
                options.by_time(),
            )?),
        })
    }

    fn kafka_key(key: &[u8], start: i64, end: i64) -> Result<Vec<u8>> {
        if key.len() > crate::MAX_KEY_BYTES - SESSION_SUFFIX {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max: crate::MAX_KEY_BYTES - SESSION_SUFFIX,
            });
        }
        Ok(session_key(key, start, end))
    }

    /// Kafka's `put(Windowed(key, SessionWindow(start, end)), aggregate)`; `None` deletes.
    /// Advances the stream time to `end`; dropped when its segment has expired.
    ///
    /// Returns false when the write was dropped because its segment has expired (what
    /// Kafka counts in its `dropped-records` task metric), else true.
    ///
    /// # Errors
    /// [`Error::KeyTooLarge`], [`Error::ValueTooLarge`], [`Error::StoreClosed`], spill
    /// errors.
    pub fn put(&self, key: &[u8], start: i64, end: i64, aggregate: Option<&[u8]>) -> Result<bool> {
        if let Some(v) = aggregate {
            self.inner.check_raw(v)?;
        }
        let k = Self::kafka_key(key, start, end)?;
        self.inner.write(&k, end, aggregate.map(Arc::from))
    }

    /// Writes entries keyed by Kafka session store keys (`key ‖ BE i64 end ‖ BE i64
    /// start`, the changelog's key layout), as Kafka's restore does (`None` deletes).
    /// Every entry is validated before any is written.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key shorter than 16 bytes; as [`Self::put`].
    pub fn put_all_kafka_keys(&self, entries: &[(&[u8], Option<&[u8]>)]) -> Result<()> {
        let mut times = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let (_, _, end) = parse_session_key(k).map_err(|_| {
                Error::InvalidArgument("a session store key is shorter than 16 bytes".into())
            })?;
            crate::format::check_key(k)?;
            if let Some(v) = v {
                self.inner.check_raw(v)?;
            }
            times.push(end);
        }
        for ((k, v), t) in entries.iter().zip(times) {
            self.inner.write(k, t, v.map(Arc::from))?;
        }
        Ok(())
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
        let interval = self.inner.retention.segment_interval;
        let retention = self.inner.retention;
        let iter = self.inner.scan(isolation, reverse, |stream_time| {
            let ev = retention.earliest_visible(stream_time);
            let seg = |t: i64| segment_id(t, interval);
            match query {
                SessionQuery::Key {
                    key,
                    earliest_end,
                    latest_start,
                } => {
                    let af = (*earliest_end).max(ev);
                    Some(Plan {
                        seg_lo: seg(af),
                        seg_hi: seg(i64::MAX),
                        bin_from: Some(session_key(key, 0, af.max(0))),
                        bin_to: Some(session_key(key, *latest_start, i64::MAX)),
                        key_from: Some(key.clone()),
                        key_to: Some(key.clone()),
                        time_from: af,
                        time_to: *latest_start,
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
                    Some(Plan {
                        seg_lo: seg(af),
                        seg_hi: seg(i64::MAX),
                        bin_from: key_from
                            .as_deref()
                            .map(|k| ordered_lower_range(k, SESSION_SUFFIX)),
                        bin_to: key_to
                            .as_deref()
                            .map(|k| session_upper_range(k, *latest_start)),
                        key_from: key_from.clone(),
                        key_to: key_to.clone(),
                        time_from: af,
                        time_to: *latest_start,
                    })
                }
                SessionQuery::All => {
                    let af = ev.max(0);
                    Some(Plan {
                        seg_lo: seg(af),
                        seg_hi: seg(i64::MAX),
                        bin_from: None,
                        bin_to: None,
                        key_from: None,
                        key_to: None,
                        time_from: af,
                        time_to: i64::MAX,
                    })
                }
            }
        })?;
        Ok(SessionIter { inner: iter })
    }

    /// Kafka's `findSessions(earliestSessionEndTime, latestSessionEndTime)` of its
    /// time-ordered session store (KIP-825, what emit-on-window-close reads): every session
    /// whose end is in `[earliest_end, latest_end]`, by end, then start, then key bytes,
    /// from the live segments (as Kafka, no finer retention filter), under `isolation`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a store not opened time-ordered.
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
        Ok(SessionIter { inner: iter })
    }

    /// Kafka's `findSessions(key, earliestSessionEndTime, latestSessionStartTime)`.
    pub fn find_sessions(
        &self,
        key: &[u8],
        earliest_end: i64,
        latest_start: i64,
    ) -> Result<SessionIter> {
        self.query(
            Isolation::ReadUncommitted,
            &key_query(key, earliest_end, latest_start),
            false,
        )
    }

    /// Kafka's `backwardFindSessions(key, earliestSessionEndTime, latestSessionStartTime)`.
    pub fn backward_find_sessions(
        &self,
        key: &[u8],
        earliest_end: i64,
        latest_start: i64,
    ) -> Result<SessionIter> {
        self.query(
            Isolation::ReadUncommitted,
            &key_query(key, earliest_end, latest_start),
            true,
        )
    }

    /// Kafka's `findSessions(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime)`.
    pub fn find_sessions_range(
        &self,
        key_from: Option<&[u8]>,
        key_to: Option<&[u8]>,
        earliest_end: i64,
        latest_start: i64,
    ) -> Result<SessionIter> {
        let q = range_query(key_from, key_to, earliest_end, latest_start);
        self.query(Isolation::ReadUncommitted, &q, false)
    }

    /// Kafka's `backwardFindSessions(keyFrom, keyTo, ...)`.
    pub fn backward_find_sessions_range(
        &self,
        key_from: Option<&[u8]>,
        key_to: Option<&[u8]>,
        earliest_end: i64,
        latest_start: i64,
    ) -> Result<SessionIter> {
        let q = range_query(key_from, key_to, earliest_end, latest_start);
        self.query(Isolation::ReadUncommitted, &q, true)
    }

    /// Kafka's `fetch(key)`: `findSessions(key, 0, Long.MAX_VALUE)`.
    pub fn fetch(&self, key: &[u8]) -> Result<SessionIter> {
        self.find_sessions(key, 0, i64::MAX)
    }

    /// Kafka's `backwardFetch(key)`.
    pub fn backward_fetch(&self, key: &[u8]) -> Result<SessionIter> {
        self.backward_find_sessions(key, 0, i64::MAX)
    }

    /// Kafka's `fetch(keyFrom, keyTo)`: `findSessions(keyFrom, keyTo, 0, Long.MAX_VALUE)`.
    pub fn fetch_key_range(
        &self,
        key_from: Option<&[u8]>,
        key_to: Option<&[u8]>,
    ) -> Result<SessionIter> {
        self.find_sessions_range(key_from, key_to, 0, i64::MAX)
    }

    /// Kafka's `backwardFetch(keyFrom, keyTo)`.
    pub fn backward_fetch_key_range(
        &self,
        key_from: Option<&[u8]>,
        key_to: Option<&[u8]>,
    ) -> Result<SessionIter> {
        self.backward_find_sessions_range(key_from, key_to, 0, i64::MAX)
    }

    /// Every live session, in Kafka's order.
    pub fn all(&self) -> Result<SessionIter> {
        self.query(Isolation::ReadUncommitted, &SessionQuery::All, false)
    }

    /// Commits, as [`crate::store::WindowStore::commit`].
    pub fn commit(
        &self,
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        self.inner.commit(offsets, metadata)
    }

    /// The changelog offset committed for `tp`.
    pub fn committed_offset(&self, tp: &TopicPartition) -> Result<Option<i64>> {
        self.inner.committed_offset(tp)
    }

    /// Every committed changelog offset.
    pub fn committed_offsets(&self) -> Result<Vec<(TopicPartition, i64)>> {
        self.inner.committed_offsets()
    }

    /// The metadata blob of the last commit carrying one.
    pub fn committed_metadata(&self) -> Result<Option<Vec<u8>>> {
        self.inner.committed_metadata()
    }

    /// Number of commits completed on this store over its life.
    pub fn commit_sequence(&self) -> Result<u64> {
        self.inner.commit_sequence()
    }

    /// Discards every uncommitted write (the stream time returns to the committed one).
    pub fn rollback(&self) -> Result<()> {
        self.inner.rollback()
    }

    /// Kafka's observed stream time under `isolation` (-1 before any write).
    pub fn stream_time(&self, isolation: Isolation) -> Result<i64> {
        self.inner.stream_time(isolation)
    }

    /// Approximate bytes of uncommitted writes.
    pub fn approximate_num_uncommitted_bytes(&self) -> Result<u64> {
        self.inner.uncommitted_bytes()
    }

    /// Approximate number of stored sessions under `isolation`.
    pub fn approximate_num_entries(&self, isolation: Isolation) -> Result<u64> {
        self.inner.approximate_count(isolation)
    }

    /// An engine property or kstate counter, as [`crate::KvStore::property`].
    pub fn property(&self, name: &str) -> Result<Option<u64>> {
        self.inner.property(name)
    }

    /// Closes the store. Idempotent.
    pub fn close(&self) -> Result<()> {
        self.inner.shutdown()
    }

    /// True until closed.
    pub fn is_open(&self) -> bool {
        self.inner.is_open()
    }

    /// Retention period (ms).
    pub fn retention_period(&self) -> i64 {
        self.inner.retention.period
    }

    /// The segment interval (ms) the store was created with.
    pub fn segment_interval(&self) -> i64 {
        self.inner.retention.segment_interval
    }

    /// What recovery found on open.
    pub fn recovery(&self) -> &RecoveryReport {
        self.inner.recovery()
    }

    /// Number of open iterators.
    pub fn open_iterators(&self) -> usize {
        self.inner.open_iterators()
    }

    /// Flushes and compacts the data.
    pub fn compact(&self) -> Result<()> {
        self.inner.compact()
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

/// Sessions of a query, in Kafka's order; fixed when created, closed with its store.
pub struct SessionIter {
    inner: KvIter,
}

impl SessionIter {
    /// The next session, or `None` at the end.
    pub fn next_session(&mut self) -> Result<Option<SessionEntry>> {
        match self.inner.next_raw()? {
            None => Ok(None),
            Some((k, v)) => Ok(Some(decode_session(&k, v)?)),
        }
    }

    /// Closes the iterator. Idempotent.
    pub fn close(&mut self) {
        self.inner.close();
    }

    /// True until it or its store is closed.
    pub fn is_open(&self) -> bool {
        self.inner.is_open()
    }

    /// The underlying raw iterator (Kafka session keys and aggregates).
    #[allow(dead_code)] // used by the C and JNI bridge (next commit)
    pub(crate) fn into_raw(self) -> KvIter {
        self.inner
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

impl Iterator for SessionIter {
    type Item = Result<SessionEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_session().transpose()
    }
}

impl std::fmt::Debug for SessionIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionIter")
            .field("open", &self.is_open())
            .finish()
    }
}
