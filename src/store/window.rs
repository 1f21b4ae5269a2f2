//! The transactional window store (Kafka's `RocksDBTimestampedWindowStore` /
//! `RocksDBWindowStore`) on the one transaction layer. Semantics, result order and
//! retention follow Kafka's segmented stores; see [`super::segmented`].

use std::path::Path;
use std::sync::Arc;

use super::iter::KvIter;
use super::open::{open_memory_families, open_rocksdb_kind};
use super::segmented::{
    segment_budget, Plan, Retention, Schema, Segmented, TimePlan, WINDOW_BY_TIME_FAMILY,
};
use super::StoreOptions;
use crate::engine::EngineKind;
use crate::format::meta::{StoreKind, ValueFormat};
use crate::format::segmented::{
    ordered_lower_range, parse_window_key, segment_id, window_key, window_upper_range,
    WINDOW_SUFFIX,
};
use crate::format::{value, TopicPartition, ValueAndTimestamp};
use crate::txn::{Isolation, RecoveryReport};
use crate::{Error, Result};

/// Column family of window stores: `[segment][Kafka window key]` -> value.
pub const WINDOW_FAMILY: &str = "kstate_windows";

/// Kafka's default segment interval: `max(retention / 2, 60 s)`.
pub fn default_segment_interval(retention_period: i64) -> i64 {
    (retention_period / 2).max(60_000)
}

/// How to open a window store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowOptions {
    /// Engine, value format (timestamped by default, plain, or headers: Kafka 4.3+'s
    /// `ValueTimestampHeaders`, KIP-1271), memory bound, RocksDB tuning. A store opens only
    /// in the format it was created with.
    pub store: StoreOptions,
    /// Retention period in ms (>= 0, >= `window_size`).
    pub retention_period: i64,
    /// Window size in ms (>= 0): the end of a window returned by iterators.
    pub window_size: i64,
    /// Keep every put (Kafka's `retainDuplicates`, for stream-stream joins): each put gets
    /// a new seqnum, and a put of `None` is ignored.
    pub retain_duplicates: bool,
    /// Segment interval in ms for a new store (`None`: Kafka's default); an existing store
    /// keeps the interval it was created with.
    pub segment_interval: Option<i64>,
    /// Kafka's time-ordered window store (`RocksDbIndexedTimeOrderedWindowBytesStoreSupplier`,
    /// what `EmitStrategy.onWindowClose()` uses): `fetchAll`, `all` and (without
    /// `key_index`) key-range fetches return windows by start time, then key, then seqnum,
    /// from a time index kept in the same transaction; the retention floor is Kafka's
    /// time-ordered one (`stream_time - retention`). Fixed when the store is created: a
    /// store created otherwise is refused.
    pub time_ordered: bool,
    /// With `time_ordered`: Kafka's `hasIndex` (sliding windows), under which key-range
    /// fetches keep the key-first order.
    pub key_index: bool,
}

impl WindowOptions {
    /// Options for a timestamped window store on RocksDB.
    pub fn new(retention_period: i64, window_size: i64, retain_duplicates: bool) -> Self {
        WindowOptions {
            store: StoreOptions::default(),
            retention_period,
            window_size,
            retain_duplicates,
            segment_interval: None,
            time_ordered: false,
            key_index: false,
        }
    }

    /// Makes the options those of Kafka's time-ordered window store (see
    /// [`WindowOptions::time_ordered`]); `key_index` is Kafka's `hasIndex`.
    pub fn time_ordered(mut self, key_index: bool) -> Self {
        self.time_ordered = true;
        self.key_index = key_index;
        self
    }

    pub(crate) fn by_time(&self) -> Option<&'static str> {
        self.time_ordered.then_some(WINDOW_BY_TIME_FAMILY)
    }

    /// Sets the store options (engine, value format, ...).
    pub fn with_store(mut self, store: StoreOptions) -> Self {
        self.store = store;
        self
    }

    /// Sets the segment interval of a new store.
    pub fn with_segment_interval(mut self, interval: i64) -> Self {
        self.segment_interval = Some(interval);
        self
    }

    /// Checks the values as Kafka's `Stores.persistentWindowStore` does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: negative retention or window size, a window larger
    /// than the retention, a segment interval below 1.
    pub fn validate(&self) -> Result<()> {
        if self.retention_period < 0 {
            return Err(Error::InvalidArgument(
                "retention_period cannot be negative".into(),
            ));
        }
        if self.window_size < 0 {
            return Err(Error::InvalidArgument(
                "window_size cannot be negative".into(),
            ));
        }
        if self.window_size > self.retention_period {
            return Err(Error::InvalidArgument(format!(
                "the retention period ({}) must be no smaller than the window size ({})",
                self.retention_period, self.window_size
            )));
        }
        if self.segment_interval.is_some_and(|i| i < 1) {
            return Err(Error::InvalidArgument(
                "segment_interval must be positive".into(),
            ));
        }
        Ok(())
    }

    pub(crate) fn kind(&self) -> StoreKind {
        StoreKind::Window {
            segment_interval: self
                .segment_interval
                .unwrap_or_else(|| default_segment_interval(self.retention_period)),
        }
    }
}

/// One window of a window store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowEntry {
    /// The record key.
    pub key: Vec<u8>,
    /// Window start (ms).
    pub window_start: i64,
    /// Kafka's seqnum (0 unless the store retains duplicates).
    pub seqnum: i32,
    /// The value in the store's layout (`[BE i64 timestamp][value]` when timestamped).
    pub raw_value: Vec<u8>,
}

impl WindowEntry {
    /// The value and its timestamp (timestamped stores).
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for a value shorter than its timestamp.
    pub fn timestamped(&self) -> Result<ValueAndTimestamp> {
        ValueAndTimestamp::decode(&self.raw_value)
    }
}

/// What a window query selects, with Kafka's meaning of each bound (times inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowQuery {
    /// `fetch(key, timeFrom, timeTo)`: one key, window starts in `[from, to]`.
    Key {
        /// The key.
        key: Vec<u8>,
        /// Earliest window start.
        from: i64,
        /// Latest window start.
        to: i64,
    },
    /// `fetch(keyFrom, keyTo, timeFrom, timeTo)`: keys in `[key_from, key_to]` (`None`
    /// leaves an end open), window starts in `[from, to]`.
    KeyRange {
        /// Lowest key.
        key_from: Option<Vec<u8>>,
        /// Highest key.
        key_to: Option<Vec<u8>>,
        /// Earliest window start.
        from: i64,
        /// Latest window start.
        to: i64,
    },
    /// `fetchAll(timeFrom, timeTo)`.
    Time {
        /// Earliest window start.
        from: i64,
        /// Latest window start.
        to: i64,
    },
    /// `all()`.
    All,
}

/// A transactional window store. Cloning gives another handle to the same store.
///
/// ```
/// use kstate::store::{WindowOptions, WindowStore};
/// use kstate::{Isolation, TopicPartition};
/// # let dir = tempfile::tempdir().unwrap();
/// let store = WindowStore::open(dir.path().join("w"), &WindowOptions::new(3_600_000, 60_000, false))?;
/// store.put(b"alice", Some(&b"3"[..]), 1_000, 0)?;
/// assert_eq!(store.fetch(b"alice", 0)?.unwrap().value, b"3");
/// assert_eq!(store.fetch_raw_with(Isolation::ReadCommitted, b"alice", 0)?, None);
/// store.commit(&[(TopicPartition::new("w-changelog", 0), Some(7))], None)?;
/// let windows: Vec<_> = store.fetch_range(b"alice", 0, 60_000)?.collect::<kstate::Result<_>>()?;
/// assert_eq!(windows[0].window_start, 0);
/// store.close()?;
/// # Ok::<(), kstate::Error>(())
/// ```
#[derive(Clone)]
pub struct WindowStore {
    inner: Arc<Segmented>,
    window_size: i64,
    retain_duplicates: bool,
    /// Kafka's `hasIndex` of a time-ordered store.
    key_index: bool,
}

impl std::fmt::Debug for WindowStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowStore")
            .field("path", &self.inner.path())
            .field("retention", &self.inner.retention.period)
            .field("segment_interval", &self.inner.retention.segment_interval)
            .field("window_size", &self.window_size)
            .field("retain_duplicates", &self.retain_duplicates)
            .field("open", &self.is_open())
            .finish()
    }
}

impl WindowStore {
    /// Opens (creating if absent) and recovers the window store at `path`; for the memory
    /// engine the path only names the store.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for invalid options; [`Error::FormatMismatch`] for a
    /// store of another kind or value format; otherwise as [`crate::KvStore::open`].
    pub fn open(path: impl AsRef<Path>, options: &WindowOptions) -> Result<WindowStore> {
        options.validate()?;
        let path = path.as_ref();
        let (opened, kind) = match options.store.engine {
            EngineKind::RocksDb => {
                let kind = options.kind();
                let StoreKind::Window { segment_interval } = kind else {
                    return Err(Error::Internal("a window store of another kind".into()));
                };
                let budget =
                    segment_budget(&options.store, options.retention_period, segment_interval);
                let opened = open_rocksdb_kind(
                    path,
                    &budget,
                    kind,
                    options.retention_period,
                    WINDOW_FAMILY,
                    options.by_time(),
                )?;
                if options.time_ordered {
                    // What an export to Kafka's layout needs to know (super::time_order).
                    super::time_order::record_kafka_index(&opened.0, options.key_index)?;
                }
                opened
            }
            EngineKind::Memory => {
                if path.as_os_str().is_empty() {
                    return Err(Error::InvalidArgument("the store path is empty".into()));
                }
                let kind = options.kind();
                let opened =
                    open_memory_families(&options.store, kind, WINDOW_FAMILY, options.by_time())?;
                (opened, kind)
            }
        };
        Self::build(opened, kind, Some(path.to_path_buf()), options)
    }

    /// Opens a fresh window store on the memory engine.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for invalid options.
    pub fn open_in_memory(options: &WindowOptions) -> Result<WindowStore> {
        options.validate()?;
        let mut options = options.clone();
        options.store.engine = EngineKind::Memory;
        let kind = options.kind();
        let opened = open_memory_families(&options.store, kind, WINDOW_FAMILY, options.by_time())?;
        Self::build(opened, kind, None, &options)
    }

    /// A window store over an engine a test opened (a fault-injecting one, say).
    #[cfg(test)]
    pub(crate) fn over_engine(
        opened: super::open::Opened,
        options: &WindowOptions,
    ) -> Result<WindowStore> {
        Self::build(opened, options.kind(), None, options)
    }

    fn build(
        opened: super::open::Opened,
        kind: StoreKind,
        path: Option<std::path::PathBuf>,
        options: &WindowOptions,
    ) -> Result<WindowStore> {
        let StoreKind::Window { segment_interval } = kind else {
            return Err(Error::Internal("a window store of another kind".into()));
        };
        let retention = Retention {
            period: options.retention_period,
            segment_interval,
            time_first_floor: options.time_ordered,
        };
        Ok(WindowStore {
            inner: Arc::new(Segmented::new(
                opened,
                Schema::Window,
                retention,
                path,
                &options.store,
                options.by_time(),
            )?),
            window_size: options.window_size,
            retain_duplicates: options.retain_duplicates,
            key_index: options.key_index,
        })
    }

    fn timestamped_only(&self, what: &str) -> Result<()> {
        match self.inner.value_format() {
            ValueFormat::Timestamped => Ok(()),
            ValueFormat::Plain | ValueFormat::Headers => Err(Error::FormatMismatch(format!(
                "{what} needs a timestamped window store; use the raw-bytes methods"
            ))),
        }
    }

    // ----- writes -----------------------------------------------------------------------

    /// Kafka's `put(key, ValueAndTimestamp(value, timestamp), windowStart)` on a
    /// timestamped store; `None` deletes the window (ignored with duplicates, as in Kafka).
    pub fn put(
        &self,
        key: &[u8],
        value: Option<&[u8]>,
        timestamp: i64,
        window_start: i64,
    ) -> Result<()> {
        self.timestamped_only("put")?;
        let raw = value.map(|v| value::encode(v, timestamp));
        self.put_raw(key, raw.as_deref(), window_start).map(drop)
    }

    /// Kafka's `put(key, rawValue, windowStart)` with the value in the store's layout;
    /// `None` deletes. Exactly Kafka's `RocksDBWindowStore.put`: with duplicates a `None`
    /// is ignored and every other put takes the next seqnum; the write advances the
    /// stream time and is dropped when its segment has expired.
    ///
    /// Returns false when the write was dropped because its segment has expired (what
    /// Kafka counts in its `dropped-records` task metric), true otherwise (a delete ignored
    /// with duplicates included: Kafka never lets it reach its segments).
    ///
    /// # Errors
    /// [`Error::KeyTooLarge`], [`Error::ValueTooLarge`], [`Error::InvalidValue`] (a
    /// timestamped value under 8 bytes), [`Error::StoreClosed`], spill errors.
    pub fn put_raw(&self, key: &[u8], value: Option<&[u8]>, window_start: i64) -> Result<bool> {
        if let Some(v) = value {
            self.inner.check_raw(v)?;
        }
        if key.len() > crate::MAX_KEY_BYTES - WINDOW_SUFFIX {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max: crate::MAX_KEY_BYTES - WINDOW_SUFFIX,
            });
        }
        if value.is_none() && self.retain_duplicates {
            return Ok(true);
        }
        let seqnum = if self.retain_duplicates {
            self.inner.next_seqnum()
        } else {
            0
        };
        let kafka_key = window_key(key, window_start, seqnum);
        self.inner
            .write(&kafka_key, window_start, value.map(Arc::from))
    }

    /// Writes entries keyed by Kafka window store keys (`key ‖ BE i64 start ‖ BE i32
    /// seqnum`, the changelog's key layout) with raw values (`None` deletes), as Kafka's
    /// restore does: each through the segmented put (stream time, expiry), keeping the
    /// seqnum of the key. Every entry is validated before any is written.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key shorter than 12 bytes; as [`Self::put_raw`].
    pub fn put_all_kafka_keys(&self, entries: &[(&[u8], Option<&[u8]>)]) -> Result<()> {
        let mut times = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let (_, start, _) = parse_window_key(k).map_err(|_| {
                Error::InvalidArgument("a window store key is shorter than 12 bytes".into())
            })?;
            crate::format::check_key(k)?;
            if let Some(v) = v {
                self.inner.check_raw(v)?;
            }
            times.push(start);
        }
        for ((k, v), t) in entries.iter().zip(times) {
            self.inner.write(k, t, v.map(Arc::from))?;
        }
        Ok(())
    }

    // ----- point reads --------------------------------------------------------------------

    /// Kafka's `fetch(key, windowStart)` in the writer's view, decoded.
    pub fn fetch(&self, key: &[u8], window_start: i64) -> Result<Option<ValueAndTimestamp>> {
        self.timestamped_only("fetch")?;
        self.fetch_raw_with(Isolation::ReadUncommitted, key, window_start)?
            .map(|r| ValueAndTimestamp::decode(&r))
            .transpose()
    }

    /// Kafka's `fetch(key, windowStart)` under `isolation`, raw: the window with the
    /// store's current seqnum (0 without duplicates), `None` once expired.
    pub fn fetch_raw_with(
        &self,
        isolation: Isolation,
        key: &[u8],
        window_start: i64,
    ) -> Result<Option<Vec<u8>>> {
        let seqnum = if self.retain_duplicates {
            self.inner.seqnum()
        } else {
            0
        };
        self.inner.get(
            isolation,
            &window_key(key, window_start, seqnum),
            window_start,
        )
    }

    // ----- iteration ----------------------------------------------------------------------

    /// Runs `query` under `isolation`, ascending (Kafka's `fetch...`) or descending
    /// (`backwardFetch...`), in Kafka's order: segment by segment, within a segment by
    /// key bytes, then window start, then seqnum. A time-ordered store answers `Time`,
    /// `All` and (without a key index) `KeyRange` as Kafka's time-ordered store does: by
    /// window start, then key, then seqnum (one range of its time index).
    pub fn query(
        &self,
        isolation: Isolation,
        query: &WindowQuery,
        reverse: bool,
    ) -> Result<WindowIter> {
        if self.inner.is_time_ordered() {
            let by_time = match query {
                WindowQuery::Key { .. } => None,
                WindowQuery::KeyRange {
                    key_from,
                    key_to,
                    from,
                    to,
                } if !self.key_index => {
                    if matches!((key_from, key_to), (Some(f), Some(t)) if f > t) {
                        Some((key_from.clone(), key_to.clone(), 1, 0))
                    } else {
                        Some((key_from.clone(), key_to.clone(), *from, *to))
                    }
                }
                WindowQuery::KeyRange { .. } => None,
                WindowQuery::Time { from, to } => Some((None, None, *from, *to)),
                WindowQuery::All => Some((None, None, 0, i64::MAX)),
            };
            if let Some((key_from, key_to, from, to)) = by_time {
                let retention = self.inner.retention;
                let iter = self.inner.scan_by_time(isolation, reverse, |stream_time| {
                    let af = from.max(retention.earliest_visible(stream_time)).max(0);
                    (to >= af).then(|| {
                        let min = retention.min_live_segment(stream_time);
                        let mut plan = TimePlan::times(&retention, min, af, to);
                        plan.key_from = key_from;
                        plan.key_to = key_to;
                        plan
                    })
                })?;
                return Ok(WindowIter { inner: iter });
            }
        }
        let interval = self.inner.retention.segment_interval;
        let retention = self.inner.retention;
        let iter = self.inner.scan(isolation, reverse, |stream_time| {
            let ev = retention.earliest_visible(stream_time);
            let seg = |t: i64| segment_id(t, interval);
            match query {
                WindowQuery::Key { key, from, to } => {
                    let af = (*from).max(ev);
                    (*to >= af).then(|| Plan {
                        seg_lo: seg(af),
                        seg_hi: seg(*to),
                        bin_from: Some(window_key(key, af.max(0), 0)),
                        bin_to: Some(window_key(key, *to, i32::MAX)),
                        key_from: Some(key.clone()),
                        key_to: Some(key.clone()),
                        time_from: af,
                        time_to: *to,
                    })
                }
                WindowQuery::KeyRange {
                    key_from,
                    key_to,
                    from,
                    to,
                } => {
                    if matches!((key_from, key_to), (Some(f), Some(t)) if f > t) {
                        return None;
                    }
                    let af = (*from).max(ev);
                    (*to >= af).then(|| Plan {
                        seg_lo: seg(af),
                        seg_hi: seg(*to),
                        bin_from: key_from
                            .as_deref()
                            .map(|k| ordered_lower_range(k, WINDOW_SUFFIX)),
                        bin_to: key_to.as_deref().map(|k| window_upper_range(k, *to)),
                        key_from: key_from.clone(),
                        key_to: key_to.clone(),
                        time_from: af,
                        time_to: *to,
                    })
                }
                WindowQuery::Time { from, to } => {
                    let af = (*from).max(ev);
                    (*to >= af).then(|| Plan {
                        seg_lo: seg(af),
                        seg_hi: seg(*to),
                        bin_from: None,
                        bin_to: None,
                        key_from: None,
                        key_to: None,
                        time_from: af,
                        time_to: *to,
                    })
                }
                WindowQuery::All => {
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
        Ok(WindowIter { inner: iter })
    }

    /// Kafka's `fetch(key, timeFrom, timeTo)` in the writer's view.
    pub fn fetch_range(&self, key: &[u8], from: i64, to: i64) -> Result<WindowIter> {
        self.query(Isolation::ReadUncommitted, &key_query(key, from, to), false)
    }

    /// Kafka's `backwardFetch(key, timeFrom, timeTo)` in the writer's view.
    pub fn backward_fetch_range(&self, key: &[u8], from: i64, to: i64) -> Result<WindowIter> {
        self.query(Isolation::ReadUncommitted, &key_query(key, from, to), true)
    }

    /// Kafka's `fetch(keyFrom, keyTo, timeFrom, timeTo)` (`None` = open end).
    pub fn fetch_key_range(
        &self,
        key_from: Option<&[u8]>,
        key_to: Option<&[u8]>,
        from: i64,
        to: i64,
    ) -> Result<WindowIter> {
        let q = range_query(key_from, key_to, from, to);
        self.query(Isolation::ReadUncommitted, &q, false)
    }

    /// Kafka's `backwardFetch(keyFrom, keyTo, timeFrom, timeTo)`.
    pub fn backward_fetch_key_range(
        &self,
        key_from: Option<&[u8]>,
        key_to: Option<&[u8]>,
        from: i64,
        to: i64,
    ) -> Result<WindowIter> {
        let q = range_query(key_from, key_to, from, to);
        self.query(Isolation::ReadUncommitted, &q, true)
    }

    /// Kafka's `fetchAll(timeFrom, timeTo)`.
    pub fn fetch_all(&self, from: i64, to: i64) -> Result<WindowIter> {
        self.query(
            Isolation::ReadUncommitted,
            &WindowQuery::Time { from, to },
            false,
        )
    }

    /// Kafka's `backwardFetchAll(timeFrom, timeTo)`.
    pub fn backward_fetch_all(&self, from: i64, to: i64) -> Result<WindowIter> {
        self.query(
            Isolation::ReadUncommitted,
            &WindowQuery::Time { from, to },
            true,
        )
    }

    /// Kafka's `all()`.
    pub fn all(&self) -> Result<WindowIter> {
        self.query(Isolation::ReadUncommitted, &WindowQuery::All, false)
    }

    /// Kafka's `backwardAll()`.
    pub fn backward_all(&self) -> Result<WindowIter> {
        self.query(Isolation::ReadUncommitted, &WindowQuery::All, true)
    }

    // ----- transactions and life cycle ------------------------------------------------

    /// Commits every uncommitted write with `offsets` (Kafka's map semantics, as
    /// [`crate::KvStore::commit`]) and `metadata`, together with the stream time and the
    /// deletion of the segments it expired, atomically.
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

    /// Approximate number of stored windows under `isolation`.
    pub fn approximate_num_entries(&self, isolation: Isolation) -> Result<u64> {
        self.inner.approximate_count(isolation)
    }

    /// An engine property or kstate counter, as [`crate::KvStore::property`].
    pub fn property(&self, name: &str) -> Result<Option<u64>> {
        self.inner.property(name)
    }

    /// Closes the store (uncommitted writes discarded, iterators closed). Idempotent.
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

    /// Window size (ms).
    pub fn window_size(&self) -> i64 {
        self.window_size
    }

    /// Whether puts are kept as duplicates.
    pub fn retain_duplicates(&self) -> bool {
        self.retain_duplicates
    }

    /// What recovery found on open.
    pub fn recovery(&self) -> &RecoveryReport {
        self.inner.recovery()
    }

    /// The options' store part (engine, value format, ...).
    pub fn options(&self) -> &StoreOptions {
        self.inner.options()
    }

    /// Number of open iterators.
    pub fn open_iterators(&self) -> usize {
        self.inner.open_iterators()
    }

    /// Flushes and compacts the data (reclaims expired segments on disk at once).
    pub fn compact(&self) -> Result<()> {
        self.inner.compact()
    }
}

fn key_query(key: &[u8], from: i64, to: i64) -> WindowQuery {
    WindowQuery::Key {
        key: key.to_vec(),
        from,
        to,
    }
}

fn range_query(key_from: Option<&[u8]>, key_to: Option<&[u8]>, from: i64, to: i64) -> WindowQuery {
    WindowQuery::KeyRange {
        key_from: key_from.map(<[u8]>::to_vec),
        key_to: key_to.map(<[u8]>::to_vec),
        from,
        to,
    }
}

/// Windows of a query, in Kafka's order; fixed when created, closed with its store.
pub struct WindowIter {
    inner: KvIter,
}

impl WindowIter {
    /// The next window, or `None` at the end.
    pub fn next_window(&mut self) -> Result<Option<WindowEntry>> {
        match self.inner.next_raw()? {
            None => Ok(None),
            Some((k, v)) => Ok(Some(decode_window(&k, v)?)),
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

    /// The underlying raw iterator (Kafka window keys and raw values).
    #[allow(dead_code)] // used by the C and JNI bridge (next commit)
    pub(crate) fn into_raw(self) -> KvIter {
        self.inner
    }
}

/// A window from a Kafka window key and its raw value.
pub(crate) fn decode_window(kafka_key: &[u8], raw_value: Vec<u8>) -> Result<WindowEntry> {
    let (key, window_start, seqnum) = parse_window_key(kafka_key)?;
    Ok(WindowEntry {
        key: key.to_vec(),
        window_start,
        seqnum,
        raw_value,
    })
}

impl Iterator for WindowIter {
    type Item = Result<WindowEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_window().transpose()
    }
}

impl std::fmt::Debug for WindowIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowIter")
            .field("open", &self.is_open())
            .finish()
    }
}
