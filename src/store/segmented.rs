//! What window and session stores share: one data family keyed
//! `[segment][Kafka key]` over the one transaction layer, Kafka's stream-time retention,
//! expiry of whole segments inside the commit, and Kafka's segment-by-segment iteration.
//!
//! # Retention
//! Kafka's segmented stores keep an *observed stream time* (the largest window start or
//! session end written) and:
//! * drop a write whose segment lies below `segment(stream_time - retention)`;
//! * return only entries whose time is `>= stream_time - retention + 1` (every read
//!   clamps its lower time bound to it; `all` also to 0);
//! * destroy segments below `segment(stream_time - retention)`.
//!
//! kstate keeps one stream time per isolation level: the writer's (advanced by its
//! uncommitted writes) and the committed one (recorded in each commit's state, so a crash
//! recovers the stream time that matches the data). Reads filter with the stream time of
//! their level, so data the writer has expired is invisible at once. The storage of expired
//! segments is reclaimed by the commit: when the lowest live segment moved, the commit
//! batch deletes the range `[start, prefix(lowest live segment))` of the family (one
//! RocksDB range tombstone; the memory engine removes the expired entries), after its own
//! writes and atomically with the offsets. The cost is per expired segment range, never a
//! scan of live data.
//!
//! # Time-ordered stores
//! The stores of `EmitStrategy.onWindowClose()` (Kafka's `RocksDBTimeOrderedWindowStore`
//! and `RocksDBTimeOrderedSessionStore`) also answer queries in time order. A time-ordered
//! store keeps a second family, [`WINDOW_BY_TIME_FAMILY`] or [`SESSION_BY_TIME_FAMILY`],
//! keyed `[segment][Kafka's time-first key]` (window: `start ‖ key ‖ seqnum`, session:
//! `end ‖ start ‖ key`) with the same values, written in the same transaction as the data
//! family and expired by the same range deletes. A time-range query is then one ordered
//! range of that family: it never reads an entry outside its time range, and it returns
//! Kafka's order (time, then the bytes of the rest of the time-first key). The values are
//! kept twice rather than looked up from the data family per entry: an emit-final scan
//! stays one sequential read, at the price of twice the bytes per write.
//!
//! # Window stores on the memory engine: time first
//! On the memory engine a window store keys its data family itself
//! `[segment][start ‖ key ‖ seqnum]`, the order of Kafka's in-memory window store (a map
//! per window start), and keeps no second family: a time-ordered store reads its time
//! queries from the data family. Nothing but the running process ever reads that family,
//! so its layout is free to follow the access pattern of a windowed aggregation: a put at
//! the current window start lands next to the other puts of that start (where the tree's
//! path is in the CPU's caches), and a `fetchAll` of a time range, a key-range fetch and
//! `all` are one ordered range of the family that reads no window outside the range, in
//! Kafka's in-memory order (start, then key, then seqnum). A fetch of one key or a key
//! range seeks once or twice per window start in its range ([`StartWalk`]), as Kafka's
//! in-memory store looks the keys up in the map of each start. Session stores keep the key-first layout on
//! both engines: `findSessions(key, ...)`, the read of every session-aggregated record,
//! stays one short range of the key's sessions. So do two kinds of window store: one that
//! retains duplicates (a stream-stream join's), whose window starts are record timestamps,
//! so that its `fetch(key, from, to)` would seek once per record of every key in the time
//! range (Kafka's in-memory store pays that), where the key-first layout reads one range;
//! and a time-ordered one with Kafka's `hasIndex` (sliding windows), whose key-range
//! fetches are key first, which keeps its time index.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::iter::{KvIter, Registry};
use super::lock::StoreLock;
use super::open::Opened;
use super::StoreOptions;
use crate::engine::{Family, KeyFilter, KeyRange, Verdict};
use crate::format::meta::ValueFormat;
use crate::format::segmented::{self as layout, segment_id, segment_prefix};
use crate::format::{self, value, TopicPartition};
use crate::sync::{MutexExt, RwLockExt};
use crate::txn::{
    CommitExtras, CommittedView, Deletion, Isolation, MergedIter, RecoveryReport, TxnCore,
};
use crate::{Error, Result};

/// Family of a time-ordered window store's time index: `[segment][start ‖ key ‖ seqnum]`.
pub const WINDOW_BY_TIME_FAMILY: &str = "kstate_windows_by_time";
/// Family of a time-ordered session store's time index: `[segment][end ‖ start ‖ key]`.
pub const SESSION_BY_TIME_FAMILY: &str = "kstate_sessions_by_time";

/// Kafka's `ConsumerRecord.NO_TIMESTAMP`: the stream time before any write.
pub const NO_TIMESTAMP: i64 = -1;

/// Which of Kafka's key schemas a store uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schema {
    /// `WindowKeySchema`: time = window start.
    Window,
    /// `SessionKeySchema`: segmented by session end.
    Session,
}

/// Retention settings shared by both kinds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention {
    /// Retention period in ms (>= 0).
    pub period: i64,
    /// Segment interval in ms (> 0).
    pub segment_interval: i64,
    /// Kafka's time-ordered window stores (`getActualFrom` with a time-first window
    /// schema) keep one more millisecond visible: the floor is `stream_time - retention`
    /// instead of `stream_time - retention + 1`.
    pub time_first_floor: bool,
}

impl Retention {
    /// The lowest segment still live at `stream_time` (Kafka's `minLiveSegment`).
    pub(crate) fn min_live_segment(&self, stream_time: i64) -> i64 {
        segment_id(
            stream_time.saturating_sub(self.period),
            self.segment_interval,
        )
    }

    /// The earliest visible time at `stream_time` (Kafka's `getActualFrom` floor).
    pub(crate) fn earliest_visible(&self, stream_time: i64) -> i64 {
        let floor = stream_time.saturating_sub(self.period);
        if self.time_first_floor {
            floor
        } else {
            floor.saturating_add(1)
        }
    }
}

/// The most segments whose memory budget a segmented store gets (see [`segment_budget`]).
pub(crate) const MAX_BUDGETED_SEGMENTS: usize = 3;

/// How a segmented store opens RocksDB: the options, and the memtable size of its data
/// family.
pub(crate) struct SegmentBudget {
    /// The store's options, with the block cache of every live segment.
    pub store: StoreOptions,
    /// Memtable size of the data family (the other families keep the configured size).
    pub data_write_buffer: usize,
}

/// Kafka opens a RocksDB instance per segment, each with its own block cache of
/// `block_cache_bytes` (50 MiB by default) and memtables of `write_buffer_bytes` (16 MiB),
/// so that a window store reads and writes with the memory of every live segment. kstate
/// keeps every segment in one instance, which gets the same budget: the block cache and the
/// data family's memtable are sized per segment Kafka keeps live at `retention` and
/// `segment_interval` (`ceil(retention / segment_interval) + 1`), at most
/// [`MAX_BUDGETED_SEGMENTS`] (Kafka's count at its default segment interval, so that a store
/// with a custom small interval does not multiply its memory). The metadata and spill
/// families keep the configured memtable size; a shared budget (`bounded_memory`) is left
/// as it is.
pub(crate) fn segment_budget(
    store: &StoreOptions,
    retention: i64,
    segment_interval: i64,
) -> SegmentBudget {
    let mut out = store.clone();
    let mut data_write_buffer = store.rocksdb.write_buffer_bytes;
    if out.rocksdb.bounded_memory.is_none() {
        let interval = segment_interval.max(1);
        let retention = retention.max(0);
        let spanned = retention / interval + i64::from(retention % interval != 0);
        let segments = usize::try_from(spanned.saturating_add(1))
            .unwrap_or(MAX_BUDGETED_SEGMENTS)
            .min(MAX_BUDGETED_SEGMENTS);
        out.rocksdb.block_cache_bytes = out.rocksdb.block_cache_bytes.saturating_mul(segments);
        data_write_buffer = data_write_buffer.saturating_mul(segments);
    }
    SegmentBudget {
        store: out,
        data_write_buffer,
    }
}

/// The writer's retention state; guarded by one mutex taken before the transaction.
struct WriterTime {
    /// Observed stream time including uncommitted writes.
    stream_time: i64,
    /// Kafka's in-memory `seqnum` of window stores with duplicates.
    seqnum: i32,
    /// The lowest live segment whose expiry the last commit on this handle recorded; the
    /// next commit deletes the expired range only when it moved (`None`: not yet).
    expired_below: Option<i64>,
}

/// The open part of a store.
struct Live {
    core: TxnCore,
    _lock: Option<StoreLock>,
}

/// A segmented store: window and session stores wrap one.
pub(crate) struct Segmented {
    core: RwLock<Option<Live>>,
    data: Family,
    /// The time index of a time-ordered store (see the module docs).
    by_time: Option<Family>,
    writer: Mutex<WriterTime>,
    iterators: Registry,
    pub(crate) schema: Schema,
    pub(crate) retention: Retention,
    path: Option<PathBuf>,
    options: StoreOptions,
    recovery: RecoveryReport,
    commits_in_doubt: AtomicU64,
    /// The data family is keyed time first (memory-engine window stores; see the module
    /// docs).
    time_first: bool,
}

impl Drop for Segmented {
    fn drop(&mut self) {
        // As for key-value stores: dropping without close discards uncommitted writes.
        let _ = self.shutdown();
    }
}

/// What a query reads, once the stream time of its isolation level is known.
#[derive(Clone)]
pub(crate) struct Plan {
    /// Segments `[lo, hi]`.
    pub seg_lo: i64,
    pub seg_hi: i64,
    /// Kafka's byte bounds inside each segment (inclusive; `None` = open).
    pub bin_from: Option<Vec<u8>>,
    pub bin_to: Option<Vec<u8>>,
    /// Kafka's `hasNextCondition`: record-key bounds and time bounds.
    pub key_from: Option<Vec<u8>>,
    pub key_to: Option<Vec<u8>>,
    pub time_from: i64,
    pub time_to: i64,
}

impl Plan {
    /// The plan of the times `[from, to]` over the segments from `from`'s to
    /// `segments_to`'s (a session query reads every segment from its earliest end on),
    /// every key.
    pub(crate) fn times(retention: &Retention, from: i64, to: i64, segments_to: i64) -> Plan {
        let seg = |t: i64| segment_id(t, retention.segment_interval);
        Plan {
            seg_lo: seg(from),
            seg_hi: seg(segments_to),
            bin_from: None,
            bin_to: None,
            key_from: None,
            key_to: None,
            time_from: from,
            time_to: to,
        }
    }

    /// Kafka's `all()`: everything visible from `earliest_visible` (and from 0) on.
    pub(crate) fn all(retention: &Retention, earliest_visible: i64) -> Plan {
        Plan::times(retention, earliest_visible.max(0), i64::MAX, i64::MAX)
    }

    /// The plan with the record-key bounds `[from, to]` (`None` = open).
    pub(crate) fn keys(self, from: Option<&[u8]>, to: Option<&[u8]>) -> Plan {
        Plan {
            key_from: from.map(<[u8]>::to_vec),
            key_to: to.map(<[u8]>::to_vec),
            ..self
        }
    }
}

impl Segmented {
    /// Recovers the transaction layer over `opened` and restores the committed stream time.
    /// `by_time` names the time index family of a time-ordered store; `time_first` keys the
    /// data family time first instead (see the module docs), with no index.
    pub(crate) fn new(
        opened: Opened,
        schema: Schema,
        retention: Retention,
        path: Option<PathBuf>,
        options: &StoreOptions,
        by_time: Option<&str>,
        time_first: bool,
    ) -> Result<Segmented> {
        let by_time = by_time
            .filter(|_| !time_first)
            .map(|name| opened.engine.registry().require(name))
            .transpose()?;
        let config = options.txn_config(crate::txn::CHUNK_BYTES)?;
        let (core, recovery) = TxnCore::recover(opened.engine, config)?;
        let stream_time = core.committed()?.stream_time.unwrap_or(NO_TIMESTAMP);
        Ok(Segmented {
            core: RwLock::new(Some(Live {
                core,
                _lock: opened.lock,
            })),
            data: opened.data,
            by_time,
            writer: Mutex::new(WriterTime {
                stream_time,
                seqnum: 0,
                expired_below: None,
            }),
            iterators: Registry::default(),
            schema,
            retention,
            path,
            options: options.clone(),
            recovery,
            commits_in_doubt: AtomicU64::new(0),
            time_first,
        })
    }

    fn with_core<T>(&self, f: impl FnOnce(&TxnCore) -> Result<T>) -> Result<T> {
        let live = self.core.read_recover();
        f(&live.as_ref().ok_or(Error::StoreClosed)?.core)
    }

    pub(crate) fn value_format(&self) -> ValueFormat {
        self.options.value_format
    }

    /// Checks a raw value against the limits and (timestamped and headers-format stores)
    /// its layout: a headers-format window value is Kafka's `ValueTimestampHeaders`, a
    /// headers-format session aggregate Kafka's `AggregationWithHeaders` (no timestamp).
    pub(crate) fn check_raw(&self, raw: &[u8]) -> Result<()> {
        format::check_value(raw)?;
        match (self.options.value_format, self.schema) {
            (ValueFormat::Plain, _) => Ok(()),
            (ValueFormat::Timestamped, _) => value::split(raw).map(drop),
            (ValueFormat::Headers, Schema::Window) => format::headers::check(raw),
            (ValueFormat::Headers, Schema::Session) => format::headers::check_aggregation(raw),
        }
    }

    /// Kafka's `maybeUpdateSeqnumForDups` followed by nothing: returns the new seqnum.
    pub(crate) fn next_seqnum(&self) -> i32 {
        let mut w = self.writer.lock_recover();
        w.seqnum = (w.seqnum.wrapping_add(1)) & 0x7FFF_FFFF;
        w.seqnum
    }

    /// The current seqnum (Kafka's window `fetch(key, time)` reads with it).
    pub(crate) fn seqnum(&self) -> i32 {
        self.writer.lock_recover().seqnum
    }

    /// Kafka's segmented `put`/`remove`: advances the writer's stream time to `time`, then
    /// writes `value` (`None` deletes) at `kafka_key`, unless its segment has expired.
    /// Returns false when the write was dropped as expired.
    pub(crate) fn write(
        &self,
        kafka_key: &[u8],
        time: i64,
        value: Option<Arc<[u8]>>,
    ) -> Result<bool> {
        format::check_key(kafka_key)?;
        let mut w = self.writer.lock_recover();
        let stream_time = w.stream_time.max(time);
        let segment = segment_id(time, self.retention.segment_interval);
        let live = segment >= self.retention.min_live_segment(stream_time);
        let spilled = self.with_core(|c| {
            // A segment below the lowest live one does not exist any more (Kafka drops
            // the write, or finds no segment to delete from).
            if !live {
                return Ok(Ok(()));
            }
            let key = self.stored_key(segment, kafka_key)?;
            match self.by_time {
                None => c.buffer_all(self.data, std::iter::once((key.as_slice(), value))),
                Some(by_time) => {
                    let tf = stored_time_first(segment, self.schema, kafka_key)?;
                    // One buffering step for both families: never one without the other.
                    c.buffer_each(&[
                        (by_time, tf.as_slice(), value.clone()),
                        (self.data, &key, value),
                    ])
                }
            }
        })?;
        // Once the write is buffered, even if spilling it failed (it stays in the
        // transaction): a write that was not buffered changes nothing.
        w.stream_time = stream_time;
        spilled.map(|()| live)
    }

    /// The data family's key of the Kafka key `kafka_key` in `segment`.
    fn stored_key(&self, segment: i64, kafka_key: &[u8]) -> Result<Vec<u8>> {
        if self.time_first {
            stored_time_first(segment, self.schema, kafka_key)
        } else {
            Ok(layout::stored_key(segment, kafka_key))
        }
    }

    /// Kafka's segmented `get`: `None` when `time` is no longer visible at the stream time
    /// of `isolation`.
    pub(crate) fn get(
        &self,
        isolation: Isolation,
        kafka_key: &[u8],
        time: i64,
    ) -> Result<Option<Vec<u8>>> {
        format::check_key(kafka_key)?;
        let key = self.stored_key(segment_id(time, self.retention.segment_interval), kafka_key)?;
        match isolation {
            Isolation::ReadUncommitted => {
                let w = self.writer.lock_recover();
                if time < self.retention.earliest_visible(w.stream_time) {
                    return Ok(None);
                }
                self.with_core(|c| c.get(Isolation::ReadUncommitted, self.data, &key))
            }
            Isolation::ReadCommitted => self.with_core(|c| {
                let view = c.committed_view()?;
                if time < self.retention.earliest_visible(committed_time(&view)) {
                    return Ok(None);
                }
                view.snapshot.get(self.data, &key)
            }),
        }
    }

    /// Opens a segment walk whose plan `plan` derives from the stream time of `isolation`
    /// (`None` from `plan` = an empty result), registered with the store.
    pub(crate) fn scan(
        &self,
        isolation: Isolation,
        reverse: bool,
        plan: impl FnOnce(i64) -> Option<Plan>,
    ) -> Result<KvIter> {
        let schema = self.schema;
        self.walk(
            isolation,
            reverse,
            self.data,
            plan,
            walk_range,
            |inner, plan| Box::new(SegmentWalk::new(inner, plan, schema, reverse)),
        )
    }

    /// Whether the store keeps a time index (a time-ordered store on RocksDB).
    pub(crate) fn is_time_ordered(&self) -> bool {
        self.by_time.is_some()
    }

    /// Whether the data family is keyed time first (see the module docs).
    pub(crate) fn is_time_first(&self) -> bool {
        self.time_first
    }

    /// Opens a walk of the time index (time-ordered stores) over the range `plan` derives
    /// from the stream time of `isolation` (`None` = an empty result). Yields Kafka's
    /// key-first keys, in the time index's order.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a store without a time index.
    pub(crate) fn scan_by_time(
        &self,
        isolation: Isolation,
        reverse: bool,
        plan: impl FnOnce(i64) -> Option<TimePlan>,
    ) -> Result<KvIter> {
        let by_time = self.by_time.ok_or_else(|| {
            Error::InvalidArgument(
                "a time-ordered query on a store that is not time-ordered".into(),
            )
        })?;
        let schema = self.schema;
        let range = |p: &TimePlan| p.range.clone();
        self.walk(isolation, reverse, by_time, plan, range, |inner, plan| {
            Box::new(TimeWalk {
                inner,
                plan,
                schema,
            })
        })
    }

    /// Opens a walk of a window data family keyed time first over the plan `plan` derives
    /// from the stream time of `isolation` (`None` = an empty result): Kafka's in-memory
    /// window store's answer, by start, then key ([`StartWalk`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a store whose data family is not keyed time first.
    pub(crate) fn scan_starts(
        &self,
        isolation: Isolation,
        reverse: bool,
        plan: impl FnOnce(i64) -> Option<TimePlan>,
    ) -> Result<KvIter> {
        if !(self.time_first && self.schema == Schema::Window) {
            return Err(Error::InvalidArgument(
                "a walk over window starts on a store not keyed time first".into(),
            ));
        }
        let interval = self.retention.segment_interval;
        let range = |p: &TimePlan| p.range.clone();
        self.walk(isolation, reverse, self.data, plan, range, |inner, plan| {
            Box::new(StartWalk {
                inner,
                bounds: StartBounds {
                    key_from: plan.key_from,
                    key_to: plan.key_to,
                    from: plan.time_from,
                    to: plan.time_to,
                    interval,
                    reverse,
                },
                started: false,
                key: Vec::new(),
            })
        })
    }

    /// Opens, registered with the store, the walk `walk` makes over the merged iterator of
    /// `family` in `range` of the plan that `plan` derives from the stream time of
    /// `isolation` (`None` = an empty result). The plan and the iterator come from one view:
    /// the writer's under its lock, or one committed view.
    fn walk<P>(
        &self,
        isolation: Isolation,
        reverse: bool,
        family: Family,
        plan: impl FnOnce(i64) -> Option<P>,
        range: impl Fn(&P) -> KeyRange,
        walk: impl FnOnce(MergedIter, P) -> Box<dyn crate::txn::Source>,
    ) -> Result<KvIter> {
        let slot = self.with_core(|c| {
            let source = match isolation {
                Isolation::ReadUncommitted => {
                    let w = self.writer.lock_recover();
                    let plan = plan(w.stream_time);
                    plan.map(|p| {
                        Ok::<_, Error>(walk(c.iter(isolation, family, &range(&p), reverse)?, p))
                    })
                }
                Isolation::ReadCommitted => {
                    let view = c.committed_view()?;
                    let plan = plan(committed_time(&view));
                    plan.map(|p| {
                        Ok::<_, Error>(walk(c.iter_view(&view, family, &range(&p), reverse)?, p))
                    })
                }
            };
            let source = source.transpose()?.unwrap_or_else(|| Box::new(Empty));
            Ok(self
                .iterators
                .register(MergedIter::new(vec![source], reverse)))
        })?;
        Ok(KvIter::new(slot, self.options.value_format))
    }

    /// The stream time of `isolation`.
    pub(crate) fn stream_time(&self, isolation: Isolation) -> Result<i64> {
        match isolation {
            Isolation::ReadUncommitted => {
                self.with_core(|_| Ok(self.writer.lock_recover().stream_time))
            }
            Isolation::ReadCommitted => {
                self.with_core(|c| Ok(committed_time(c.committed_view()?.as_ref())))
            }
        }
    }

    /// Commits writes, offsets, metadata and the writer's stream time, deleting the
    /// segments that stream time expired, in one atomic step.
    pub(crate) fn commit(
        &self,
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        let mut w = self.writer.lock_recover();
        let min_live = self.retention.min_live_segment(w.stream_time);
        let mut deletes = Vec::new();
        if w.expired_below != Some(min_live) {
            for family in std::iter::once(self.data).chain(self.by_time) {
                deletes.push(Deletion {
                    family,
                    from: Vec::new(),
                    to: segment_prefix(min_live).to_vec(),
                });
            }
        }
        let extras = CommitExtras {
            stream_time: Some(w.stream_time),
            deletes,
        };
        let result = self.with_core(|c| c.commit_with(offsets, metadata, extras));
        match &result {
            Ok(()) => w.expired_below = Some(min_live),
            Err(Error::CommitInDoubt(_)) => {
                self.commits_in_doubt.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {}
        }
        result
    }

    /// Discards uncommitted writes; the writer's stream time returns to the committed one.
    pub(crate) fn rollback(&self) -> Result<()> {
        let mut w = self.writer.lock_recover();
        self.with_core(|c| {
            c.rollback()?;
            w.stream_time = c.committed()?.stream_time.unwrap_or(NO_TIMESTAMP);
            Ok(())
        })
    }

    pub(crate) fn committed_offset(&self, tp: &TopicPartition) -> Result<Option<i64>> {
        self.with_core(|c| Ok(c.committed()?.offsets.get(tp).copied()))
    }

    pub(crate) fn committed_offsets(&self) -> Result<Vec<(TopicPartition, i64)>> {
        self.with_core(|c| Ok(c.committed()?.offsets.into_iter().collect()))
    }

    pub(crate) fn committed_metadata(&self) -> Result<Option<Vec<u8>>> {
        self.with_core(|c| Ok(c.committed()?.metadata))
    }

    pub(crate) fn checkpoint(&self, dir: &std::path::Path) -> Result<crate::CheckpointInfo> {
        self.with_core(|c| super::checkpoint::take(c, dir))
    }

    pub(crate) fn commit_sequence(&self) -> Result<u64> {
        self.with_core(|c| Ok(c.committed()?.sequence))
    }

    pub(crate) fn uncommitted_bytes(&self) -> Result<u64> {
        self.with_core(|c| Ok(c.uncommitted_bytes()))
    }

    /// Approximate stored entries under `isolation` (expired ones not yet reclaimed
    /// included).
    pub(crate) fn approximate_count(&self, isolation: Isolation) -> Result<u64> {
        self.with_core(|c| c.approximate_count(isolation, self.data))
    }

    /// kstate counters and engine properties, as [`crate::KvStore::property`].
    pub(crate) fn property(&self, name: &str) -> Result<Option<u64>> {
        self.with_core(|c| match name {
            "kstate.commits-in-doubt" => Ok(Some(self.commits_in_doubt.load(Ordering::Relaxed))),
            "kstate.recovery-rolled-forward" => Ok(Some(u64::from(self.recovery.rolled_forward))),
            "kstate.spills" => Ok(Some(c.counters().0)),
            "kstate.roll-forwards" => Ok(Some(c.counters().1)),
            "kstate.restore-ingestions" => Ok(Some(c.counters().2)),
            _ => c.engine().property(name),
        })
    }

    pub(crate) fn shutdown(&self) -> Result<()> {
        let mut core = self.core.write_recover();
        self.iterators.close_all();
        match core.take() {
            Some(live) => live.core.close(),
            None => Ok(()),
        }
    }

    pub(crate) fn is_open(&self) -> bool {
        self.core.read_recover().is_some()
    }

    pub(crate) fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    pub(crate) fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    pub(crate) fn options(&self) -> &StoreOptions {
        &self.options
    }

    pub(crate) fn open_iterators(&self) -> usize {
        self.iterators.live()
    }

    /// Flushes and compacts the data family (reclaims expired segments on disk at once).
    pub(crate) fn compact(&self) -> Result<()> {
        self.with_core(|c| c.compact(self.data))
    }
}

fn committed_time(view: &CommittedView) -> i64 {
    view.state.stream_time.unwrap_or(NO_TIMESTAMP)
}

/// The stored-key range covering segments `[lo, hi]`.
fn walk_range(plan: &Plan) -> KeyRange {
    KeyRange {
        lower: std::ops::Bound::Included(segment_prefix(plan.seg_lo).to_vec()),
        upper: match plan.seg_hi.checked_add(1) {
            Some(next) => std::ops::Bound::Excluded(segment_prefix(next).to_vec()),
            None => std::ops::Bound::Unbounded,
        },
    }
}

/// A query of the time index: one stored-key range, plus the record-key and time bounds
/// an entry inside it must meet.
pub(crate) struct TimePlan {
    /// Stored keys `[segment][time-first key]` to read.
    pub range: KeyRange,
    /// Record-key bounds (inclusive; `None` = open).
    pub key_from: Option<Vec<u8>>,
    pub key_to: Option<Vec<u8>>,
    /// Bounds (inclusive) of the leading time: window start, or session end.
    pub time_from: i64,
    pub time_to: i64,
}

impl TimePlan {
    /// The plan of the times `[from, to]` (`from >= 0`; segments below `min_segment` are
    /// expired): every stored key of those times, and no other time.
    pub(crate) fn times(retention: &Retention, min_segment: i64, from: i64, to: i64) -> TimePlan {
        let at = |t: i64| time_prefix(t, retention.segment_interval);
        let lower = at(from).max(segment_prefix(min_segment).to_vec());
        TimePlan {
            range: KeyRange {
                lower: std::ops::Bound::Included(lower),
                upper: match to.checked_add(1) {
                    Some(next) => std::ops::Bound::Excluded(at(next)),
                    None => std::ops::Bound::Unbounded,
                },
            },
            key_from: None,
            key_to: None,
            time_from: from,
            time_to: to,
        }
    }
}

/// `[segment][BE time]`: the stored-key prefix of every time-first key of time `t`, and
/// below them all.
fn time_prefix(t: i64, segment_interval: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(layout::SEGMENT_PREFIX + 8 + 16);
    k.extend_from_slice(&segment_prefix(segment_id(t, segment_interval)));
    k.extend_from_slice(&t.to_be_bytes());
    k
}

/// The stored key, in `segment`, of the time-first layout of `kafka_key`, built in one
/// allocation (a put builds one or two of them).
fn stored_time_first(segment: i64, schema: Schema, kafka_key: &[u8]) -> Result<Vec<u8>> {
    let mut k = Vec::with_capacity(layout::SEGMENT_PREFIX + kafka_key.len());
    k.extend_from_slice(&segment_prefix(segment));
    match schema {
        Schema::Window => layout::append_time_first_window_key(kafka_key, &mut k)?,
        Schema::Session => layout::append_time_first_session_key(kafka_key, &mut k)?,
    }
    Ok(k)
}

/// A walk of the time index over one [`TimePlan`]: yields `(Kafka key-first key, value)`
/// in the index's order, skipping entries outside the plan's key or time bounds.
struct TimeWalk {
    inner: MergedIter,
    plan: TimePlan,
    schema: Schema,
}

impl TimeWalk {
    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        while let Some((stored, v)) = self.inner.next_entry()? {
            let (_, tf) = layout::split_stored(&stored)?;
            let kafka_key = match self.schema {
                Schema::Window => layout::window_key_of_time_first(tf)?,
                Schema::Session => layout::session_key_of_time_first(tf)?,
            };
            let mut t = [0u8; 8];
            t.copy_from_slice(&tf[..8]);
            let time = i64::from_be_bytes(t);
            let key = match self.schema {
                Schema::Window => &tf[8..tf.len() - 4],
                Schema::Session => &tf[16..],
            };
            let p = &self.plan;
            if time >= p.time_from
                && time <= p.time_to
                && p.key_from.as_deref().is_none_or(|f| key >= f)
                && p.key_to.as_deref().is_none_or(|t| key <= t)
            {
                return Ok(Some((kafka_key, v)));
            }
        }
        Ok(None)
    }
}

impl crate::txn::Source for TimeWalk {
    fn next_write(&mut self) -> Result<Option<crate::txn::KeyWrite>> {
        Ok(self.next_entry()?.map(|(k, v)| (k, Some(v))))
    }

    fn seek(&mut self, _target: &[u8]) -> Result<()> {
        Err(Error::Internal("a time walk cannot be repositioned".into()))
    }
}

/// A window query over a data family keyed time first (`[segment][start ‖ key ‖ seqnum]`),
/// answered as Kafka's in-memory window store answers it: for each window start in
/// `[from, to]` (`from >= 0`), the entries in `[start ‖ key_from ‖ 0, start ‖ key_to ‖
/// i32::MAX]` (Kafka's seqnum bounds; an open bound leaves that end of the start open)
/// whose record key lies within the key bounds. Between starts the walk seeks to the next
/// start's range: a single-key fetch costs one seek per start holding the key and two per
/// start that does not, a `fetchAll` (both bounds open) is one sequential read. A negative
/// window start sorts after the other starts of its segment; as in Kafka's RocksDB store,
/// whose lower fetch bound clamps the time at 0, a range query never returns it.
///
/// Yields `(Kafka key-first key, value)` by start, then key and seqnum bytes (all reversed
/// with `reverse`).
struct StartWalk {
    inner: MergedIter,
    bounds: StartBounds,
    started: bool,
    /// The Kafka key of the entry being lent (reused from entry to entry).
    key: Vec<u8>,
}

/// The query of a [`StartWalk`]: its key and time bounds, and its direction.
struct StartBounds {
    key_from: Option<Vec<u8>>,
    key_to: Option<Vec<u8>>,
    from: i64,
    to: i64,
    interval: i64,
    reverse: bool,
}

/// What a [`StartWalk`] does with a stored entry it read.
enum StartStep {
    /// Answer it; its time-first part (`start ‖ key ‖ seqnum`) begins at this byte of the
    /// stored key.
    Take(usize),
    /// Pass it over and read the next one.
    Skip,
    /// Pass it over and read on from this stored key.
    Seek(Vec<u8>),
    /// The walk is over.
    End,
}

/// `x` against the concatenation `a ‖ b`, bytewise, without building it.
fn cmp_concat(x: &[u8], a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let n = x.len().min(a.len());
    match x[..n].cmp(&a[..n]) {
        std::cmp::Ordering::Equal if x.len() < a.len() => std::cmp::Ordering::Less,
        std::cmp::Ordering::Equal => x[n..].cmp(b),
        other => other,
    }
}

impl StartBounds {
    /// The stored key of window start `start` with the record key `key` (`None`: the
    /// start's first key) and `seqnum`: where the range of that start begins (ascending)
    /// or ends (descending; past the start's last entry when `key` is `None`).
    fn at(&self, start: i64, key: Option<&[u8]>, seqnum: i32) -> Vec<u8> {
        match key {
            Some(key) => {
                let mut k = time_prefix(start, self.interval);
                k.extend_from_slice(key);
                k.extend_from_slice(&seqnum.to_be_bytes());
                k
            }
            // The last key of `start` is below the next start's prefix (a prefix is never
            // itself a key: every key carries a seqnum after it).
            None if self.reverse => match start.checked_add(1) {
                Some(next) => time_prefix(next, self.interval),
                None => {
                    let mut k = segment_prefix(segment_id(start, self.interval)).to_vec();
                    k.extend_from_slice(&[0xFF; 9]);
                    k
                }
            },
            None => time_prefix(start, self.interval),
        }
    }

    /// Where the range of window start `start` begins in the walk's direction.
    fn entry_of(&self, start: i64) -> Vec<u8> {
        if self.reverse {
            self.at(start, self.key_to.as_deref(), i32::MAX)
        } else {
            self.at(start, self.key_from.as_deref(), 0)
        }
    }

    /// What the walk does with the entry stored under `stored`.
    fn step(&self, stored: &[u8]) -> Result<StartStep> {
        use std::cmp::Ordering::{Greater, Less};
        let (s, tf) = layout::split_stored(stored)?;
        if tf.len() < 8 + 4 {
            return Err(Error::Corruption(
                "a time-first window key is shorter than 12 bytes".into(),
            ));
        }
        let mut t = [0u8; 8];
        t.copy_from_slice(&tf[..8]);
        let start = i64::from_be_bytes(t);
        if start < 0 {
            // Past (ascending) or before (descending) the other starts of segment `s`.
            return Ok(if self.reverse {
                let mut k = segment_prefix(s).to_vec();
                k.push(0x80);
                StartStep::Seek(k)
            } else {
                match s.checked_add(1) {
                    Some(next) => StartStep::Seek(segment_prefix(next).to_vec()),
                    None => StartStep::End,
                }
            });
        }
        if start < self.from || start > self.to {
            return Ok(StartStep::End);
        }
        let rest = &tf[8..];
        let below_from = |f: &Vec<u8>| cmp_concat(rest, f, &0i32.to_be_bytes()) == Less;
        let above_to = |t: &Vec<u8>| cmp_concat(rest, t, &i32::MAX.to_be_bytes()) == Greater;
        let (low, high) = (
            self.key_from.as_ref().is_some_and(below_from),
            self.key_to.as_ref().is_some_and(above_to),
        );
        let (before, after) = if self.reverse {
            (high, low)
        } else {
            (low, high)
        };
        if before {
            // Not yet at this start's range: seek to it.
            return Ok(StartStep::Seek(self.entry_of(start)));
        }
        if after {
            // Past this start's range: on to the next start's.
            let next = if self.reverse {
                start.checked_sub(1).filter(|n| *n >= self.from)
            } else {
                start.checked_add(1).filter(|n| *n <= self.to)
            };
            return Ok(match next {
                Some(n) => StartStep::Seek(self.entry_of(n)),
                None => StartStep::End,
            });
        }
        let key = &tf[8..tf.len() - 4];
        if self.key_from.as_deref().is_none_or(|f| key >= f)
            && self.key_to.as_deref().is_none_or(|t| key <= t)
        {
            Ok(StartStep::Take(stored.len() - tf.len()))
        } else {
            // A key of the range's bytes that is not between the key bounds (a longer key
            // sharing a bound's bytes): read on.
            Ok(StartStep::Skip)
        }
    }
}

impl StartWalk {
    /// Positions the walk at its first start, once; `false` if it answers nothing.
    fn begin(&mut self) -> Result<bool> {
        if !self.started {
            self.started = true;
            let b = &self.bounds;
            if b.from > b.to || b.from < 0 {
                return Ok(false);
            }
            let first = b.entry_of(if b.reverse { b.to } else { b.from });
            self.inner.seek(&first)?;
        }
        Ok(true)
    }

    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if !self.begin()? {
            return Ok(None);
        }
        while let Some((stored, v)) = self.inner.next_entry()? {
            match self.bounds.step(&stored)? {
                StartStep::Take(at) => {
                    return Ok(Some((layout::window_key_of_time_first(&stored[at..])?, v)))
                }
                StartStep::Skip => {}
                StartStep::Seek(target) => self.inner.seek(&target)?,
                StartStep::End => return Ok(None),
            }
        }
        Ok(None)
    }
}

impl crate::txn::Source for StartWalk {
    fn next_write(&mut self) -> Result<Option<crate::txn::KeyWrite>> {
        Ok(self.next_entry()?.map(|(k, v)| (k, Some(v))))
    }

    fn lend_next(
        &mut self,
        keep: Option<&KeyFilter>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool> {
        if keep.is_some() {
            // No caller filters a start walk; the owned path applies a filter if one does.
            return Ok(self.next_value(keep)?.map(|(k, v)| visit(&k, &v)).is_some());
        }
        if !self.begin()? {
            return Ok(false);
        }
        // Entries are lent by the engine's cursor and passed on with their key rewritten
        // into a buffer kept from entry to entry: a `fetchAll` for JNI or C allocates
        // nothing per window.
        loop {
            let (bounds, key) = (&self.bounds, &mut self.key);
            let mut step = Ok(StartStep::End);
            let read = self.inner.lend_next(&mut |stored, v| {
                step = bounds.step(stored).and_then(|s| {
                    if let StartStep::Take(at) = s {
                        layout::window_key_of_time_first_into(&stored[at..], key)?;
                        visit(key, v);
                    }
                    Ok(s)
                });
            })?;
            if !read {
                return Ok(false);
            }
            match step? {
                StartStep::Take(_) => return Ok(true),
                StartStep::Skip => {}
                StartStep::Seek(target) => self.inner.seek(&target)?,
                StartStep::End => return Ok(false),
            }
        }
    }

    fn seek(&mut self, _target: &[u8]) -> Result<()> {
        Err(Error::Internal(
            "a start walk cannot be repositioned".into(),
        ))
    }
}

/// No entries (a query Kafka answers with an empty iterator).
struct Empty;

impl crate::txn::Source for Empty {
    fn next_write(&mut self) -> Result<Option<crate::txn::KeyWrite>> {
        Ok(None)
    }

    fn seek(&mut self, _target: &[u8]) -> Result<()> {
        Ok(())
    }
}

/// Kafka's `SegmentIterator` over one merged, pinned view of the family: segment by
/// segment (ascending or descending), within each segment the Kafka keys in
/// `[bin_from, bin_to]` in byte order, filtered by the key schema's condition. Segments
/// are found by the keys themselves; a seek jumps to the next segment's range, so a
/// single-key fetch touches each segment once instead of scanning it. Yields
/// `(kafka key, value)`.
struct SegmentWalk {
    inner: MergedIter,
    plan: Arc<Plan>,
    schema: Schema,
    reverse: bool,
    /// The segment whose range the cursor is in (`None` before the first seek).
    segment: Option<i64>,
    started: bool,
    done: bool,
}

impl SegmentWalk {
    /// A walk of `plan`.
    fn new(inner: MergedIter, plan: Plan, schema: Schema, reverse: bool) -> Self {
        // Kafka's RocksDBStore.range returns nothing when from > to.
        let empty = matches!((&plan.bin_from, &plan.bin_to), (Some(f), Some(t)) if f > t)
            || plan.seg_lo > plan.seg_hi;
        let plan = Arc::new(plan);
        let skip = Arc::clone(&plan);
        let keep: Arc<KeyFilter> = Arc::new(move |stored: &[u8]| verdict(&skip, schema, stored));
        SegmentWalk {
            inner: inner.with_filter(keep),
            plan,
            schema,
            reverse,
            segment: None,
            started: false,
            done: empty,
        }
    }

    /// Seeks to the start (in the walk's direction) of segment `s`'s range.
    fn enter(&mut self, s: i64) -> Result<()> {
        self.segment = Some(s);
        let bound = if self.reverse {
            &self.plan.bin_to
        } else {
            &self.plan.bin_from
        };
        match bound {
            Some(b) => self.inner.seek(&layout::stored_key(s, b)),
            None if self.reverse => match s.checked_add(1) {
                // The last key below the next segment's prefix (never itself a key).
                Some(next) => self.inner.seek(&segment_prefix(next)),
                None => Ok(()),
            },
            None => self.inner.seek(&segment_prefix(s)),
        }
    }

    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if self.done {
            return Ok(None);
        }
        if !self.started {
            self.started = true;
            let first = if self.reverse {
                self.plan.seg_hi
            } else {
                self.plan.seg_lo
            };
            self.enter(first)?;
        }
        loop {
            let Some((stored, v)) = self.inner.next_entry()? else {
                self.done = true;
                return Ok(None);
            };
            let (s, kafka_key) = layout::split_stored(&stored)?;
            if s < self.plan.seg_lo || s > self.plan.seg_hi {
                self.done = true;
                return Ok(None);
            }
            if self.segment != Some(s) {
                // Arrived in another segment: start at its range unless already inside.
                let before_range = if self.reverse {
                    self.plan.bin_to.as_deref().is_some_and(|t| kafka_key > t)
                } else {
                    self.plan.bin_from.as_deref().is_some_and(|f| kafka_key < f)
                };
                self.segment = Some(s);
                if before_range {
                    self.enter(s)?;
                    continue;
                }
            }
            let past_range = if self.reverse {
                self.plan.bin_from.as_deref().is_some_and(|f| kafka_key < f)
            } else {
                self.plan.bin_to.as_deref().is_some_and(|t| kafka_key > t)
            };
            if past_range {
                // The rest of this segment is outside the range: on to the next one.
                let next = if self.reverse {
                    s.checked_sub(1)
                } else {
                    s.checked_add(1)
                };
                match next {
                    Some(n) if n >= self.plan.seg_lo && n <= self.plan.seg_hi => {
                        self.enter(n)?;
                        continue;
                    }
                    _ => {
                        self.done = true;
                        return Ok(None);
                    }
                }
            }
            if passes(&self.plan, self.schema, kafka_key)? {
                // The Kafka key is the stored key without its prefix: shifted in place.
                let mut key = stored;
                key.drain(..layout::SEGMENT_PREFIX);
                return Ok(Some((key, v)));
            }
        }
    }
}

/// Kafka's `hasNextCondition`: the entry's record key and time are inside the plan's bounds.
fn passes(p: &Plan, schema: Schema, kafka_key: &[u8]) -> Result<bool> {
    let (key, time_ok) = match schema {
        Schema::Window => {
            let (key, start, _) = layout::parse_window_key(kafka_key)?;
            (key, start >= p.time_from && start <= p.time_to)
        }
        Schema::Session => {
            let (key, start, end) = layout::parse_session_key(kafka_key)?;
            (key, end >= p.time_from && start <= p.time_to)
        }
    };
    Ok(time_ok
        && p.key_from.as_deref().is_none_or(|f| key >= f)
        && p.key_to.as_deref().is_none_or(|t| key <= t))
}

/// The walk's [`KeyFilter`], a function of the key alone (whatever the walk read before):
/// * [`Verdict::Skip`] for an entry the walk passes over without any effect: inside the
///   planned segments and inside the byte range within its segment (so it neither ends the
///   walk nor moves it to another segment's range), and failing [`passes`]. The engine and
///   the merge skip it before copying it, which is what makes a time query (which reads
///   whole segments, as Kafka's does) cheap per entry it does not return;
/// * [`Verdict::TakeLast`] for an entry outside the segments or the byte range: the walk
///   ends or seeks after it, so reading ahead past it would be wasted;
/// * [`Verdict::Take`] otherwise, and for entries it cannot parse (the walk reports them).
fn verdict(p: &Plan, schema: Schema, stored: &[u8]) -> Verdict {
    let Ok((s, kafka_key)) = layout::split_stored(stored) else {
        return Verdict::Take;
    };
    if s < p.seg_lo
        || s > p.seg_hi
        || p.bin_from.as_deref().is_some_and(|f| kafka_key < f)
        || p.bin_to.as_deref().is_some_and(|t| kafka_key > t)
    {
        return Verdict::TakeLast;
    }
    match passes(p, schema, kafka_key) {
        Ok(false) => Verdict::Skip,
        Ok(true) | Err(_) => Verdict::Take,
    }
}

impl crate::txn::Source for SegmentWalk {
    fn next_write(&mut self) -> Result<Option<crate::txn::KeyWrite>> {
        Ok(self.next_entry()?.map(|(k, v)| (k, Some(v))))
    }

    fn seek(&mut self, _target: &[u8]) -> Result<()> {
        Err(Error::Internal(
            "a segment walk cannot be repositioned".into(),
        ))
    }
}
