//! Model-based property tests of window and session stores: random puts, deletes,
//! removes, point reads, every query shape (forward and backward, both isolation levels),
//! commits, rollbacks and reopens, on both engines and with spilling, checked against a
//! brute-force model of Kafka's segmented stores.
//!
//! The model keeps every written entry in a `BTreeMap` keyed by the Kafka key and answers a
//! query by scanning *all* of it: an entry is returned when its segment is in the searched
//! segments, its Kafka key lies within Kafka's byte bounds (`lowerRange`/`upperRange`...,
//! computed here from Kafka's code, independently of the store's), and it passes the key
//! schema's `hasNextCondition`; results are ordered by (segment, Kafka key bytes), which is
//! the order of Kafka's `SegmentIterator`. Stream time and retention follow
//! `AbstractRocksDBSegmentedBytesStore`. The store answers with seeks between segments;
//! any difference in content or order fails.
//!
//! A window store on the memory engine without duplicates answers `fetchAll`, `all` and
//! key-range fetches as Kafka's in-memory window store does ([`memory_window_answer`]):
//! every window whose start and key are inside the bounds, by start, then key and seqnum
//! bytes.

use std::collections::BTreeMap;

use kstate::store::{
    SessionOptions, SessionQuery, SessionStore, WindowOptions, WindowQuery, WindowStore,
};
use kstate::{EngineKind, Isolation, StoreOptions, TopicPartition};
use proptest::prelude::*;

const RETENTION: i64 = 500;
const INTERVAL: i64 = 100;
const WINDOW: i64 = 50;

fn tp() -> TopicPartition {
    TopicPartition::new("model-changelog", 0)
}

// ----- Kafka's rules, written from its source ---------------------------------------------

fn seg(t: i64) -> i64 {
    t / INTERVAL
}

fn earliest_visible(stream_time: i64) -> i64 {
    stream_time - RETENTION + 1
}

fn min_live(stream_time: i64) -> i64 {
    seg(stream_time - RETENTION)
}

fn upper_range(key: &[u8], suffix: &[u8]) -> Vec<u8> {
    let first = suffix[0];
    let mut out = Vec::new();
    if first == 0 {
        out.extend_from_slice(key);
    } else {
        let mut i = 0;
        while i < key.len() && (i < 1 || key[i] >= first) {
            out.push(key[i]);
            i += 1;
        }
    }
    out.extend_from_slice(suffix);
    out
}

fn wkey(key: &[u8], t: i64, seq: i32) -> Vec<u8> {
    [key, &t.to_be_bytes(), &seq.to_be_bytes()].concat()
}

fn skey(key: &[u8], start: i64, end: i64) -> Vec<u8> {
    [key, &end.to_be_bytes(), &start.to_be_bytes()].concat()
}

/// What a Kafka segmented query scans: segments, byte bounds, filter.
struct Scan {
    segs: (i64, i64),
    bin_from: Option<Vec<u8>>,
    bin_to: Option<Vec<u8>>,
    keys: (Option<Vec<u8>>, Option<Vec<u8>>),
    times: (i64, i64),
}

/// A brute-force segmented-store model: entries by Kafka key, with the time that
/// segments them.
#[derive(Clone, Default)]
struct Model {
    committed: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Writes of the open transaction (`None` = delete).
    pending: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    committed_time: i64,
    writer_time: i64,
    seqnum: i32,
    offset: Option<i64>,
}

impl Model {
    fn new() -> Self {
        Model {
            committed_time: -1,
            writer_time: -1,
            ..Model::default()
        }
    }

    fn view(&self, isolation: Isolation) -> (BTreeMap<Vec<u8>, Vec<u8>>, i64) {
        match isolation {
            Isolation::ReadCommitted => (self.committed.clone(), self.committed_time),
            Isolation::ReadUncommitted => {
                let mut v = self.committed.clone();
                for (k, w) in &self.pending {
                    match w {
                        Some(x) => v.insert(k.clone(), x.clone()),
                        None => v.remove(k),
                    };
                }
                (v, self.writer_time)
            }
        }
    }

    /// `AbstractRocksDBSegmentedBytesStore.put`.
    fn write(&mut self, kafka_key: Vec<u8>, time: i64, value: Option<Vec<u8>>) {
        self.writer_time = self.writer_time.max(time);
        if seg(time) >= min_live(self.writer_time) {
            self.pending.insert(kafka_key, value);
        }
    }

    fn get(&self, isolation: Isolation, kafka_key: &[u8], time: i64) -> Option<Vec<u8>> {
        let (view, st) = self.view(isolation);
        if time < earliest_visible(st) {
            return None;
        }
        view.get(kafka_key).cloned()
    }

    fn commit(&mut self, offset: Option<i64>) {
        let pending = std::mem::take(&mut self.pending);
        for (k, w) in pending {
            match w {
                Some(v) => self.committed.insert(k, v),
                None => self.committed.remove(&k),
            };
        }
        self.committed_time = self.writer_time;
        if offset.is_some() {
            self.offset = offset;
        }
    }

    fn rollback(&mut self) {
        self.pending.clear();
        self.writer_time = self.committed_time;
    }

    /// Entries a scan returns, in Kafka's order; `time_of` extracts (record key, segment
    /// time, passes-time-filter) from a Kafka key.
    fn scan(
        &self,
        isolation: Isolation,
        scan: Option<Scan>,
        reverse: bool,
        parse: impl Fn(&[u8], (i64, i64)) -> (Vec<u8>, i64, bool),
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let Some(s) = scan else { return vec![] };
        if matches!((&s.bin_from, &s.bin_to), (Some(f), Some(t)) if f > t) {
            return vec![];
        }
        let (view, _) = self.view(isolation);
        let mut out: Vec<(i64, Vec<u8>, Vec<u8>)> = view
            .into_iter()
            .filter_map(|(k, v)| {
                let (key, time, time_ok) = parse(&k, s.times);
                let sg = seg(time);
                let inside = sg >= s.segs.0
                    && sg <= s.segs.1
                    && s.bin_from.as_ref().is_none_or(|f| &k >= f)
                    && s.bin_to.as_ref().is_none_or(|t| &k <= t)
                    && time_ok
                    && s.keys.0.as_ref().is_none_or(|f| &key >= f)
                    && s.keys.1.as_ref().is_none_or(|t| &key <= t);
                inside.then_some((sg, k, v))
            })
            .collect();
        out.sort();
        if reverse {
            out.reverse();
        }
        out.into_iter().map(|(_, k, v)| (k, v)).collect()
    }
}

fn parse_window(k: &[u8], (from, to): (i64, i64)) -> (Vec<u8>, i64, bool) {
    let n = k.len() - 12;
    let t = i64::from_be_bytes(k[n..n + 8].try_into().unwrap());
    (k[..n].to_vec(), t, t >= from && t <= to)
}

fn parse_session(k: &[u8], (from, to): (i64, i64)) -> (Vec<u8>, i64, bool) {
    let n = k.len() - 16;
    let end = i64::from_be_bytes(k[n..n + 8].try_into().unwrap());
    let start = i64::from_be_bytes(k[n + 8..].try_into().unwrap());
    (k[..n].to_vec(), end, end >= from && start <= to)
}

/// Kafka's window fetch variants (`AbstractRocksDBSegmentedBytesStore.fetch/fetchAll/all`).
fn window_scan(q: &WindowQuery, stream_time: i64) -> Option<Scan> {
    let ev = earliest_visible(stream_time);
    match q {
        WindowQuery::Key { key, from, to } => {
            let af = (*from).max(ev);
            (*to >= af).then(|| Scan {
                segs: (seg(af), seg(*to)),
                bin_from: Some(wkey(key, af.max(0), 0)),
                bin_to: Some(wkey(key, *to, i32::MAX)),
                keys: (Some(key.clone()), Some(key.clone())),
                times: (af, *to),
            })
        }
        WindowQuery::KeyRange {
            key_from,
            key_to,
            from,
            to,
        } => {
            if let (Some(f), Some(t)) = (key_from, key_to) {
                if f > t {
                    return None;
                }
            }
            let af = (*from).max(ev);
            let mut suffix = to.to_be_bytes().to_vec();
            suffix.extend_from_slice(&i32::MAX.to_be_bytes());
            (*to >= af).then(|| Scan {
                segs: (seg(af), seg(*to)),
                bin_from: key_from
                    .as_ref()
                    .map(|k| [k.as_slice(), &[0u8; 12]].concat()),
                bin_to: key_to.as_ref().map(|k| upper_range(k, &suffix)),
                keys: (key_from.clone(), key_to.clone()),
                times: (af, *to),
            })
        }
        WindowQuery::Time { from, to } => {
            let af = (*from).max(ev);
            (*to >= af).then(|| Scan {
                segs: (seg(af), seg(*to)),
                bin_from: None,
                bin_to: None,
                keys: (None, None),
                times: (af, *to),
            })
        }
        WindowQuery::All => {
            let af = ev.max(0);
            Some(Scan {
                segs: (seg(af), seg(i64::MAX)),
                bin_from: None,
                bin_to: None,
                keys: (None, None),
                times: (af, i64::MAX),
            })
        }
    }
}

/// What a window store on the memory engine answers for `q`: single-key fetches as on
/// RocksDB ([`window_scan`]); every other query the windows whose start is inside
/// `[max(from, earliest visible, 0), to]` and whose record key is inside the key bounds
/// (no byte bounds), ordered by start, then key and seqnum bytes (Kafka's in-memory order).
fn memory_window_answer(
    model: &Model,
    isolation: Isolation,
    q: &WindowQuery,
    reverse: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (view, stream_time) = model.view(isolation);
    let (key_from, key_to, from, to) = match q {
        WindowQuery::Key { .. } => {
            return model.scan(
                isolation,
                window_scan(q, stream_time),
                reverse,
                parse_window,
            )
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
    let af = from.max(earliest_visible(stream_time)).max(0);
    // (start, key and seqnum bytes, Kafka key, value)
    type Hit = (i64, Vec<u8>, Vec<u8>, Vec<u8>);
    let mut out: Vec<Hit> = view
        .into_iter()
        .filter_map(|(k, v)| {
            let (key, t, _) = parse_window(&k, (0, 0));
            let inside = t >= af
                && t <= to
                && key_from.as_ref().is_none_or(|f| &key >= f)
                && key_to.as_ref().is_none_or(|t| &key <= t);
            // Key and seqnum bytes: the Kafka key without its window start.
            let n = k.len() - 12;
            let rest = [&k[..n], &k[n + 8..]].concat();
            inside.then_some((t, rest, k, v))
        })
        .collect();
    out.sort();
    if reverse {
        out.reverse();
    }
    out.into_iter().map(|(_, _, k, v)| (k, v)).collect()
}

/// Kafka's session fetch variants (`SessionKeySchema` bounds, `segments(from, MAX)`).
fn session_scan(q: &SessionQuery, stream_time: i64) -> Option<Scan> {
    let ev = earliest_visible(stream_time);
    match q {
        SessionQuery::Key {
            key,
            earliest_end,
            latest_start,
        } => {
            let af = (*earliest_end).max(ev);
            Some(Scan {
                segs: (seg(af), seg(i64::MAX)),
                bin_from: Some(skey(key, 0, af.max(0))),
                bin_to: Some(skey(key, *latest_start, i64::MAX)),
                keys: (Some(key.clone()), Some(key.clone())),
                times: (af, *latest_start),
            })
        }
        SessionQuery::KeyRange {
            key_from,
            key_to,
            earliest_end,
            latest_start,
        } => {
            if let (Some(f), Some(t)) = (key_from, key_to) {
                if f > t {
                    return None;
                }
            }
            let af = (*earliest_end).max(ev);
            let mut suffix = i64::MAX.to_be_bytes().to_vec();
            suffix.extend_from_slice(&latest_start.to_be_bytes());
            Some(Scan {
                segs: (seg(af), seg(i64::MAX)),
                bin_from: key_from
                    .as_ref()
                    .map(|k| [k.as_slice(), &[0u8; 16]].concat()),
                bin_to: key_to.as_ref().map(|k| upper_range(k, &suffix)),
                keys: (key_from.clone(), key_to.clone()),
                times: (af, *latest_start),
            })
        }
        SessionQuery::All => {
            let af = ev.max(0);
            Some(Scan {
                segs: (seg(af), seg(i64::MAX)),
                bin_from: None,
                bin_to: None,
                keys: (None, None),
                times: (af, i64::MAX),
            })
        }
    }
}

// ----- random steps ----------------------------------------------------------------------

/// Keys of a tiny alphabet with the byte-order edges (and the empty key, which Kafka's
/// range helpers assume away), so key prefixes and bound quirks are frequent.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![0x00u8, 0x01, b'a', 0x80, 0xFF]),
        0..3,
    )
}

fn time() -> impl Strategy<Value = i64> {
    prop_oneof![
        20 => -150i64..2500,
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => Just(0i64),
    ]
}

fn small_time() -> impl Strategy<Value = i64> {
    // Mostly moving forward with some out-of-order writes, as stream time does.
    -120i64..2400
}

fn isolation() -> impl Strategy<Value = Isolation> {
    prop_oneof![
        3 => Just(Isolation::ReadUncommitted),
        1 => Just(Isolation::ReadCommitted),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..40)
}

#[derive(Debug, Clone)]
enum Common {
    Commit(Option<i64>),
    Rollback,
    Reopen,
}

fn common() -> impl Strategy<Value = Common> {
    prop_oneof![
        4 => prop::option::weighted(0.9, 0i64..1_000_000).prop_map(Common::Commit),
        1 => Just(Common::Rollback),
        1 => Just(Common::Reopen),
    ]
}

#[derive(Debug, Clone)]
enum WStep {
    Put(Vec<u8>, Option<Vec<u8>>, i64),
    Fetch(Isolation, Vec<u8>, i64),
    Query(Isolation, WindowQuery, bool),
    Common(Common),
}

fn window_query() -> impl Strategy<Value = WindowQuery> {
    prop_oneof![
        3 => (key(), time(), time()).prop_map(|(key, from, to)| WindowQuery::Key { key, from, to }),
        3 => (prop::option::of(key()), prop::option::of(key()), time(), time())
            .prop_map(|(key_from, key_to, from, to)| WindowQuery::KeyRange { key_from, key_to, from, to }),
        2 => (time(), time()).prop_map(|(from, to)| WindowQuery::Time { from, to }),
        1 => Just(WindowQuery::All),
    ]
}

fn wstep() -> impl Strategy<Value = WStep> {
    prop_oneof![
        10 => (key(), prop::option::weighted(0.85, value()), small_time())
            .prop_map(|(k, v, t)| WStep::Put(k, v, t)),
        3 => (isolation(), key(), small_time()).prop_map(|(i, k, t)| WStep::Fetch(i, k, t)),
        5 => (isolation(), window_query(), any::<bool>()).prop_map(|(i, q, r)| WStep::Query(i, q, r)),
        3 => common().prop_map(WStep::Common),
    ]
}

/// Keys of two bytes of the tiny alphabet (0x00 and 0xFF included), few enough that most
/// window starts hold several of them, as a windowed aggregation writes them.
fn grid_key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![0x00u8, 0x01, b'a', 0x80, 0xFF]),
        2..=2,
    )
}

/// Window starts on a grid of 10 ms (as a store of fixed windows has them; ten starts a
/// segment) within about the retention, so that query bounds often fall on a live window.
fn grid_time() -> impl Strategy<Value = i64> {
    (-2i64..60).prop_map(|t| t * 10)
}

/// Steps on the grid of window starts: single-key fetches over many starts (the memory
/// engine's key walk seeks from start to start), key-range fetches and `fetchAll` over
/// short and long time ranges.
fn wstep_grid() -> impl Strategy<Value = WStep> {
    prop_oneof![
        10 => (grid_key(), prop::option::weighted(0.85, value()), grid_time())
            .prop_map(|(k, v, t)| WStep::Put(k, v, t)),
        4 => (isolation(), grid_time(), 0i64..15, any::<bool>())
            .prop_map(|(i, from, n, r)| WStep::Query(i, WindowQuery::Time { from, to: from + n * 10 }, r)),
        1 => (isolation(), time(), time(), any::<bool>())
            .prop_map(|(i, from, to, r)| WStep::Query(i, WindowQuery::Time { from, to }, r)),
        3 => (isolation(), grid_key(), grid_time(), 0i64..15, any::<bool>())
            .prop_map(|(i, key, from, n, r)| WStep::Query(i, WindowQuery::Key { key, from, to: from + n * 10 }, r)),
        1 => (isolation(), grid_key(), grid_key(), grid_time(), 0i64..15, any::<bool>())
            .prop_map(|(i, f, t, from, n, r)| WStep::Query(i, WindowQuery::KeyRange { key_from: Some(f), key_to: Some(t), from, to: from + n * 10 }, r)),
        3 => common().prop_map(WStep::Common),
    ]
}

#[derive(Debug, Clone)]
enum SStep {
    Put(Vec<u8>, i64, i64, Option<Vec<u8>>),
    Remove(Vec<u8>, i64, i64),
    FetchSession(Isolation, Vec<u8>, i64, i64),
    Query(Isolation, SessionQuery, bool),
    Common(Common),
}

fn session_query() -> impl Strategy<Value = SessionQuery> {
    prop_oneof![
        3 => (key(), time(), time()).prop_map(|(key, earliest_end, latest_start)| SessionQuery::Key { key, earliest_end, latest_start }),
        3 => (prop::option::of(key()), prop::option::of(key()), time(), time())
            .prop_map(|(key_from, key_to, earliest_end, latest_start)| SessionQuery::KeyRange { key_from, key_to, earliest_end, latest_start }),
        1 => Just(SessionQuery::All),
    ]
}

fn sstep() -> impl Strategy<Value = SStep> {
    prop_oneof![
        10 => (key(), small_time(), 0i64..300, prop::option::weighted(0.9, value()))
            .prop_map(|(k, s, len, v)| SStep::Put(k, s, s + len, v)),
        2 => (key(), small_time(), 0i64..300).prop_map(|(k, s, len)| SStep::Remove(k, s, s + len)),
        3 => (isolation(), key(), small_time(), 0i64..300)
            .prop_map(|(i, k, s, len)| SStep::FetchSession(i, k, s, s + len)),
        5 => (isolation(), session_query(), any::<bool>()).prop_map(|(i, q, r)| SStep::Query(i, q, r)),
        3 => common().prop_map(SStep::Common),
    ]
}

// ----- harnesses -------------------------------------------------------------------------

fn store_options(engine: EngineKind, max_uncommitted: u64, timestamped: bool) -> StoreOptions {
    let base = if timestamped {
        StoreOptions::timestamped(engine)
    } else {
        StoreOptions::plain(engine)
    };
    base.with_max_uncommitted_bytes(max_uncommitted)
}

struct WindowHarness {
    dir: tempfile::TempDir,
    options: WindowOptions,
    store: WindowStore,
    model: Model,
}

impl WindowHarness {
    fn new(engine: EngineKind, max_uncommitted: u64, dups: bool, timestamped: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let options = WindowOptions::new(RETENTION, WINDOW, dups)
            .with_store(store_options(engine, max_uncommitted, timestamped))
            .with_segment_interval(INTERVAL);
        let store = WindowStore::open(dir.path().join("w"), &options).unwrap();
        WindowHarness {
            dir,
            options,
            store,
            model: Model::new(),
        }
    }

    fn run(&mut self, step: &WStep) {
        let dups = self.options.retain_duplicates;
        match step {
            WStep::Put(k, v, t) => {
                // Raw values: timestamped stores get an 8-byte timestamp prefix.
                let raw = v.as_ref().map(|v| {
                    if self.options.store.value_format == kstate::ValueFormat::Timestamped {
                        kstate::format::value::encode(v, *t + 7)
                    } else {
                        v.clone()
                    }
                });
                self.store.put_raw(k, raw.as_deref(), *t).unwrap();
                if !(raw.is_none() && dups) {
                    if dups {
                        self.model.seqnum = (self.model.seqnum + 1) & 0x7FFF_FFFF;
                    }
                    let seq = if dups { self.model.seqnum } else { 0 };
                    self.model.write(wkey(k, *t, seq), *t, raw);
                }
            }
            WStep::Fetch(i, k, t) => {
                let seq = if dups { self.model.seqnum } else { 0 };
                let want = self.model.get(*i, &wkey(k, *t, seq), *t);
                assert_eq!(
                    self.store.fetch_raw_with(*i, k, *t).unwrap(),
                    want,
                    "fetch {step:?}"
                );
            }
            WStep::Query(i, q, reverse) => {
                let (_, st) = self.model.view(*i);
                let answer = if self.options.store.engine == EngineKind::Memory && !dups {
                    memory_window_answer(&self.model, *i, q, *reverse)
                } else {
                    self.model
                        .scan(*i, window_scan(q, st), *reverse, parse_window)
                };
                let want: Vec<(Vec<u8>, i64, i32, Vec<u8>)> = answer
                    .into_iter()
                    .map(|(k, v)| {
                        let n = k.len() - 12;
                        let t = i64::from_be_bytes(k[n..n + 8].try_into().unwrap());
                        let s = i32::from_be_bytes(k[n + 8..].try_into().unwrap());
                        (k[..n].to_vec(), t, s, v)
                    })
                    .collect();
                let got: Vec<(Vec<u8>, i64, i32, Vec<u8>)> = self
                    .store
                    .query(*i, q, *reverse)
                    .unwrap()
                    .map(|e| {
                        let e = e.unwrap();
                        (e.key, e.window_start, e.seqnum, e.raw_value)
                    })
                    .collect();
                assert_eq!(got, want, "query {step:?}");
            }
            WStep::Common(c) => self.common(c),
        }
    }

    fn common(&mut self, c: &Common) {
        match c {
            Common::Commit(offset) => {
                let offsets: Vec<_> = offset.map(|o| (tp(), Some(o))).into_iter().collect();
                if offsets.is_empty() {
                    // Keep what is committed: an empty map would clear the offsets.
                    let keep: Vec<_> = self
                        .model
                        .offset
                        .map(|o| (tp(), Some(o)))
                        .into_iter()
                        .collect();
                    self.store.commit(&keep, None).unwrap();
                } else {
                    self.store.commit(&offsets, None).unwrap();
                }
                self.model.commit(*offset);
                self.check_reclaimed();
            }
            Common::Rollback => {
                self.store.rollback().unwrap();
                self.model.rollback();
            }
            Common::Reopen => {
                if self.options.store.engine == EngineKind::Memory {
                    return;
                }
                self.store.close().unwrap();
                self.store = WindowStore::open(self.dir.path().join("w"), &self.options).unwrap();
                self.model.rollback();
                self.model.seqnum = 0;
            }
        }
        assert_eq!(
            self.store.committed_offset(&tp()).unwrap(),
            self.model.offset
        );
        assert_eq!(
            self.store.stream_time(Isolation::ReadCommitted).unwrap(),
            self.model.committed_time
        );
    }

    /// On the memory engine (exact counts) the commit reclaimed every expired segment.
    fn check_reclaimed(&self) {
        if self.options.store.engine != EngineKind::Memory {
            return;
        }
        let live = min_live(self.model.committed_time);
        let kept = self
            .model
            .committed
            .keys()
            .filter(|k| seg(parse_window(k, (0, 0)).1) >= live)
            .count() as u64;
        assert_eq!(
            self.store
                .approximate_num_entries(Isolation::ReadCommitted)
                .unwrap(),
            kept,
            "expired segments are deleted by the commit"
        );
    }
}

struct SessionHarness {
    dir: tempfile::TempDir,
    options: SessionOptions,
    store: SessionStore,
    model: Model,
}

impl SessionHarness {
    fn new(engine: EngineKind, max_uncommitted: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let options = SessionOptions::new(RETENTION)
            .with_store(store_options(engine, max_uncommitted, false))
            .with_segment_interval(INTERVAL);
        let store = SessionStore::open(dir.path().join("s"), &options).unwrap();
        SessionHarness {
            dir,
            options,
            store,
            model: Model::new(),
        }
    }

    fn run(&mut self, step: &SStep) {
        match step {
            SStep::Put(k, s, e, v) => {
                self.store.put(k, *s, *e, v.as_deref()).unwrap();
                self.model.write(skey(k, *s, *e), *e, v.clone());
            }
            SStep::Remove(k, s, e) => {
                self.store.remove(k, *s, *e).unwrap();
                self.model.write(skey(k, *s, *e), *e, None);
            }
            SStep::FetchSession(i, k, s, e) => {
                let want = self.model.get(*i, &skey(k, *s, *e), *e);
                assert_eq!(
                    self.store.fetch_session_with(*i, k, *s, *e).unwrap(),
                    want,
                    "{step:?}"
                );
            }
            SStep::Query(i, q, reverse) => {
                let (_, st) = self.model.view(*i);
                let want: Vec<(Vec<u8>, i64, i64, Vec<u8>)> = self
                    .model
                    .scan(*i, session_scan(q, st), *reverse, parse_session)
                    .into_iter()
                    .map(|(k, v)| {
                        let n = k.len() - 16;
                        let end = i64::from_be_bytes(k[n..n + 8].try_into().unwrap());
                        let start = i64::from_be_bytes(k[n + 8..].try_into().unwrap());
                        (k[..n].to_vec(), start, end, v)
                    })
                    .collect();
                let got: Vec<(Vec<u8>, i64, i64, Vec<u8>)> = self
                    .store
                    .query(*i, q, *reverse)
                    .unwrap()
                    .map(|e| {
                        let e = e.unwrap();
                        (e.key, e.start, e.end, e.value)
                    })
                    .collect();
                assert_eq!(got, want, "query {step:?}");
            }
            SStep::Common(c) => match c {
                Common::Commit(offset) => {
                    let offsets: Vec<_> = offset
                        .or(self.model.offset)
                        .map(|o| (tp(), Some(o)))
                        .into_iter()
                        .collect();
                    self.store.commit(&offsets, None).unwrap();
                    self.model.commit(*offset);
                }
                Common::Rollback => {
                    self.store.rollback().unwrap();
                    self.model.rollback();
                }
                Common::Reopen => {
                    if self.options.store.engine == EngineKind::Memory {
                        return;
                    }
                    self.store.close().unwrap();
                    self.store =
                        SessionStore::open(self.dir.path().join("s"), &self.options).unwrap();
                    self.model.rollback();
                }
            },
        }
    }
}

fn run_windows(engine: EngineKind, max_uncommitted: u64, dups: bool, ts: bool, steps: &[WStep]) {
    let mut h = WindowHarness::new(engine, max_uncommitted, dups, ts);
    for s in steps {
        h.run(s);
    }
    // Everything visible at the end, both levels, both directions.
    for i in [Isolation::ReadUncommitted, Isolation::ReadCommitted] {
        for r in [false, true] {
            h.run(&WStep::Query(i, WindowQuery::All, r));
        }
    }
    h.store.close().unwrap();
}

fn run_sessions(engine: EngineKind, max_uncommitted: u64, steps: &[SStep]) {
    let mut h = SessionHarness::new(engine, max_uncommitted);
    for s in steps {
        h.run(s);
    }
    for i in [Isolation::ReadUncommitted, Isolation::ReadCommitted] {
        for r in [false, true] {
            h.run(&SStep::Query(i, SessionQuery::All, r));
        }
    }
    h.store.close().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn window_rocksdb_matches_model(steps in prop::collection::vec(wstep(), 1..150), dups in any::<bool>()) {
        run_windows(EngineKind::RocksDb, 64 << 20, dups, true, &steps);
    }

    #[test]
    fn window_rocksdb_spilling_plain_matches_model(steps in prop::collection::vec(wstep(), 1..150), dups in any::<bool>()) {
        run_windows(EngineKind::RocksDb, 300, dups, false, &steps);
    }

    #[test]
    fn window_memory_matches_model(steps in prop::collection::vec(wstep(), 1..200), dups in any::<bool>()) {
        run_windows(EngineKind::Memory, 64 << 20, dups, true, &steps);
    }

    #[test]
    fn window_memory_grid_matches_model(steps in prop::collection::vec(wstep_grid(), 1..200), dups in any::<bool>()) {
        run_windows(EngineKind::Memory, 64 << 20, dups, true, &steps);
    }

    #[test]
    fn window_memory_grid_spilling_matches_model(steps in prop::collection::vec(wstep_grid(), 1..200), dups in any::<bool>()) {
        run_windows(EngineKind::Memory, 300, dups, true, &steps);
    }

    #[test]
    fn window_memory_spilling_matches_model(steps in prop::collection::vec(wstep(), 1..200), dups in any::<bool>()) {
        run_windows(EngineKind::Memory, 300, dups, true, &steps);
    }

    #[test]
    fn session_rocksdb_matches_model(steps in prop::collection::vec(sstep(), 1..150)) {
        run_sessions(EngineKind::RocksDb, 64 << 20, &steps);
    }

    #[test]
    fn session_rocksdb_spilling_matches_model(steps in prop::collection::vec(sstep(), 1..150)) {
        run_sessions(EngineKind::RocksDb, 300, &steps);
    }

    #[test]
    fn session_memory_matches_model(steps in prop::collection::vec(sstep(), 1..200)) {
        run_sessions(EngineKind::Memory, 64 << 20, &steps);
    }

    #[test]
    fn session_memory_spilling_matches_model(steps in prop::collection::vec(sstep(), 1..200)) {
        run_sessions(EngineKind::Memory, 300, &steps);
    }
}
