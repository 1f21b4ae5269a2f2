//! The transactional window store (Kafka's `RocksDBTimestampedWindowStore` /
//! `RocksDBWindowStore`) on the one transaction layer. Semantics, result order and
//! retention follow Kafka's segmented stores; see [`super::segmented`].

use std::sync::Arc;

use super::segmented::{Plan, TimePlan, WINDOW_BY_TIME_FAMILY};
use super::segmented_store::{
    forward_and_backward, segmented_options, Sealed, SegmentIter, SegmentKind, SegmentSpec,
    SegmentedStore,
};
use super::StoreOptions;
use crate::format::meta::{StoreKind, ValueFormat};
use crate::format::segmented::{
    ordered_lower_range, parse_window_key, window_key, window_upper_range, WINDOW_SUFFIX,
};
use crate::format::{value, ValueAndTimestamp};
use crate::txn::Isolation;
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

    segmented_options!();

    /// Checks the values as Kafka's `Stores.persistentWindowStore` does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: negative retention or window size, a window larger
    /// than the retention, a segment interval below 1.
    pub fn validate(&self) -> Result<()> {
        self.check_segmenting()?;
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
        Ok(())
    }

    pub(crate) fn kind(&self) -> StoreKind {
        StoreKind::Window {
            segment_interval: self.segment_interval_or_default(),
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

/// What sets a window store apart from other segmented stores: Kafka's window key layout
/// (`key ‖ BE i64 start ‖ BE i32 seqnum`, segmented by window start) and the window
/// settings a handle keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowKind {
    window_size: i64,
    retain_duplicates: bool,
    /// Kafka's `hasIndex` of a time-ordered store.
    key_index: bool,
}

impl Sealed for WindowKind {}

impl SegmentKind for WindowKind {
    type Options = WindowOptions;
    type Entry = WindowEntry;
    const NAME: &'static str = "WindowStore";
    const FAMILY: &'static str = WINDOW_FAMILY;

    const DESCRIPTION: &'static str = "window store";
    const KEY_SUFFIX: usize = WINDOW_SUFFIX;

    fn spec(options: &WindowOptions) -> Result<(SegmentSpec, Self)> {
        options.validate()?;
        let spec = SegmentSpec::new(
            options.store.clone(),
            options.kind(),
            options.retention_period,
            options.by_time(),
            options.time_ordered,
        );
        let spec = if options.time_ordered {
            spec.recording_kafka_index(options.key_index)
        } else {
            spec
        };
        // Two kinds of window store keep the key-first layout on the memory engine (see
        // `super::segmented`): one that retains duplicates (a stream-stream join's, whose
        // `fetch(key, from, to)` over a window of record timestamps would seek once per
        // record of every key in the time-first order) and a key-indexed time-ordered one
        // (Kafka's `hasIndex`: its key-range fetches are key first).
        let spec = if options.retain_duplicates || (options.time_ordered && options.key_index) {
            spec
        } else {
            spec.time_first_in_memory()
        };
        let settings = WindowKind {
            window_size: options.window_size,
            retain_duplicates: options.retain_duplicates,
            key_index: options.key_index,
        };
        Ok((spec, settings))
    }

    fn decode(kafka_key: &[u8], raw_value: Vec<u8>) -> Result<WindowEntry> {
        decode_window(kafka_key, raw_value)
    }
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
pub type WindowStore = SegmentedStore<WindowKind>;

/// Windows of a query, in Kafka's order; fixed when created, closed with its store.
pub type WindowIter = SegmentIter<WindowKind>;

impl SegmentedStore<WindowKind> {
    fn timestamped_only(&self, what: &str) -> Result<()> {
        match self.inner.value_format() {
            ValueFormat::Timestamped => Ok(()),
            ValueFormat::Plain | ValueFormat::Headers => Err(Error::FormatMismatch(format!(
                "{what} needs a timestamped window store; use the raw-bytes methods"
            ))),
        }
    }

    /// The seqnum a window is read and written with: the store's current one with
    /// duplicates (`next`: the next one, for a put), else 0.
    fn seqnum(&self, next: bool) -> i32 {
        match (self.kind.retain_duplicates, next) {
            (false, _) => 0,
            (true, false) => self.inner.seqnum(),
            (true, true) => self.inner.next_seqnum(),
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
        Self::check_record_key(key)?;
        if value.is_none() && self.kind.retain_duplicates {
            return Ok(true);
        }
        let kafka_key = window_key(key, window_start, self.seqnum(true));
        self.inner
            .write(&kafka_key, window_start, value.map(Arc::from))
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
        let kafka_key = window_key(key, window_start, self.seqnum(false));
        self.inner.get(isolation, &kafka_key, window_start)
    }

    // ----- iteration ----------------------------------------------------------------------

    /// Runs `query` under `isolation`, ascending (Kafka's `fetch...`) or descending
    /// (`backwardFetch...`), in Kafka's order: on RocksDB segment by segment, within a
    /// segment by key bytes, then window start, then seqnum. A time-ordered store answers
    /// `Time`, `All` and (without a key index) `KeyRange` as Kafka's time-ordered store
    /// does: by window start, then key, then seqnum (one range of its time index). A store
    /// on the memory engine without duplicates (and not key-indexed) answers every query
    /// but `Key` in that order, Kafka's in-memory window store's: its data family is keyed
    /// time first (see [`super::segmented`]).
    pub fn query(
        &self,
        isolation: Isolation,
        query: &WindowQuery,
        reverse: bool,
    ) -> Result<WindowIter> {
        let retention = self.inner.retention;
        // A time walk's plan over window starts `[from, to]`, or `None` when empty.
        let time_plan = |stream_time: i64, from: i64, to: i64| {
            let af = from.max(retention.earliest_visible(stream_time)).max(0);
            (to >= af).then(|| {
                let min = retention.min_live_segment(stream_time);
                TimePlan::times(&retention, min, af, to)
            })
        };
        if self.inner.is_time_first() {
            let (key_from, key_to, from, to) = match query {
                WindowQuery::Key { key, from, to } => {
                    (Some(key.clone()), Some(key.clone()), *from, *to)
                }
                WindowQuery::KeyRange {
                    key_from,
                    key_to,
                    from,
                    to,
                } => (key_from.clone(), key_to.clone(), *from, *to),
                WindowQuery::Time { from, to } => (None, None, *from, *to),
                WindowQuery::All => (None, None, 0, i64::MAX),
            };
            let empty = matches!((&key_from, &key_to), (Some(f), Some(t)) if f > t);
            let iter = self.inner.scan_starts(isolation, reverse, |stream_time| {
                let plan = time_plan(stream_time, from, to).filter(|_| !empty);
                plan.map(|mut plan| {
                    plan.key_from = key_from;
                    plan.key_to = key_to;
                    plan
                })
            })?;
            return Ok(WindowIter::new(iter));
        }
        if self.inner.is_time_ordered() {
            let by_time = match query {
                WindowQuery::Key { .. } => None,
                WindowQuery::KeyRange {
                    key_from,
                    key_to,
                    from,
                    to,
                } if !self.kind.key_index => {
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
                let iter = self.inner.scan_by_time(isolation, reverse, |stream_time| {
                    time_plan(stream_time, from, to).map(|mut plan| {
                        plan.key_from = key_from;
                        plan.key_to = key_to;
                        plan
                    })
                })?;
                return Ok(WindowIter::new(iter));
            }
        }
        let iter = self.inner.scan(isolation, reverse, |stream_time| {
            let ev = retention.earliest_visible(stream_time);
            match query {
                WindowQuery::Key { key, from, to } => {
                    let af = (*from).max(ev);
                    (*to >= af).then(|| Plan {
                        bin_from: Some(window_key(key, af.max(0), 0)),
                        bin_to: Some(window_key(key, *to, i32::MAX)),
                        ..Plan::times(&retention, af, *to, *to).keys(Some(key), Some(key))
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
                        bin_from: key_from
                            .as_deref()
                            .map(|k| ordered_lower_range(k, WINDOW_SUFFIX)),
                        bin_to: key_to.as_deref().map(|k| window_upper_range(k, *to)),
                        ..Plan::times(&retention, af, *to, *to)
                            .keys(key_from.as_deref(), key_to.as_deref())
                    })
                }
                WindowQuery::Time { from, to } => {
                    let af = (*from).max(ev);
                    (*to >= af).then(|| Plan::times(&retention, af, *to, *to))
                }
                WindowQuery::All => Some(Plan::all(&retention, ev)),
            }
        })?;
        Ok(WindowIter::new(iter))
    }

    forward_and_backward! {
        /// Kafka's `fetch(key, timeFrom, timeTo)` in the writer's view.
        fn fetch_range /
        /// Kafka's `backwardFetch(key, timeFrom, timeTo)` in the writer's view.
        fn backward_fetch_range(&self, key: &[u8], from: i64, to: i64) -> Result<WindowIter>
        |reverse| {
            let q = key_query(key, from, to);
            self.query(Isolation::ReadUncommitted, &q, reverse)
        }

        /// Kafka's `fetch(keyFrom, keyTo, timeFrom, timeTo)` (`None` = open end).
        fn fetch_key_range /
        /// Kafka's `backwardFetch(keyFrom, keyTo, timeFrom, timeTo)`.
        fn backward_fetch_key_range(
            &self,
            key_from: Option<&[u8]>,
            key_to: Option<&[u8]>,
            from: i64,
            to: i64
        ) -> Result<WindowIter>
        |reverse| {
            let q = range_query(key_from, key_to, from, to);
            self.query(Isolation::ReadUncommitted, &q, reverse)
        }

        /// Kafka's `fetchAll(timeFrom, timeTo)`.
        fn fetch_all /
        /// Kafka's `backwardFetchAll(timeFrom, timeTo)`.
        fn backward_fetch_all(&self, from: i64, to: i64) -> Result<WindowIter>
        |reverse| {
            let q = WindowQuery::Time { from, to };
            self.query(Isolation::ReadUncommitted, &q, reverse)
        }

        /// Kafka's `all()`.
        fn all /
        /// Kafka's `backwardAll()`.
        fn backward_all(&self) -> Result<WindowIter>
        |reverse| {
            self.query(Isolation::ReadUncommitted, &WindowQuery::All, reverse)
        }
    }

    /// Window size (ms).
    pub fn window_size(&self) -> i64 {
        self.kind.window_size
    }

    /// Whether puts are kept as duplicates.
    pub fn retain_duplicates(&self) -> bool {
        self.kind.retain_duplicates
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

impl SegmentIter<WindowKind> {
    /// The next window, or `None` at the end.
    pub fn next_window(&mut self) -> Result<Option<WindowEntry>> {
        self.next_entry()
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
