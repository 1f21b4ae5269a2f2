//! Adoption of Kafka Streams' own window and session stores (a directory of segment
//! databases, `<store>/<store>.<segment start>/`), on fixtures written here with RocksDB in
//! Kafka's layout: plain and timestamped window segments (some values still in `default`,
//! as in a segment Kafka is upgrading), session segments, expired segments, Kafka 4.3+
//! `offsets` families (offsets, position, status) and the older runtimes' names.
//!
//! Every adopted store is checked against a model of what Kafka holds (the records of the
//! live segments, converted, in Kafka's order) and against a kstate store written with the
//! same records through the public API (every query kind, both directions, both isolation
//! levels), with Kafka's committed offsets and merged position. Refusals must leave Kafka's
//! directory byte-identical. The kill test SIGKILLs `kstate-test-worker adopt-worker` at random moments
//! (and, built with `--features failpoints`, at crash points inside the adoption): the
//! directory is always either Kafka's, byte-identical, or kstate's complete store, and the
//! next open always yields the complete store. `KSTATE_ADOPT_KILLS` sets the number of kills
//! (default 50; rounds whose worker finished before its kill moment do not count).

#[path = "support/kill_window.rs"]
mod kill_window;
#[allow(dead_code)]
#[path = "support/workload.rs"]
mod workload;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kill_window::KillWindow;
use kstate::format::segmented::{session_key, stored_key, window_key};
use kstate::format::value;
use kstate::store::{
    check_adoption, PlannedStore, SessionEntry, SessionOptions, SessionQuery, SessionStore,
    WindowEntry, WindowOptions, WindowQuery, WindowStore,
};
use kstate::{EngineKind, ErrorCode, Isolation, StoreOptions, TopicPartition};
use workload::Rng;

const RETENTION: i64 = 1_800_000;
/// Kafka's default for [`RETENTION`]: `max(retention / 2, 60 s)`.
const INTERVAL: i64 = 900_000;
const SEGMENTS: i64 = 6;
/// The first segment's start: 2020-01-01T00:00Z (a whole number of segments).
const BASE: i64 = 1_577_836_800_000;
const KEYS: u64 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `RocksDBTimestampedWindowStore` segments (`keyValueWithTimestamp`, some `default`).
    TimestampedWindow,
    /// `RocksDBWindowStore` segments (`default`).
    PlainWindow,
    /// `RocksDBSessionStore` segments (`default`).
    Session,
}

/// One record of a Kafka segment.
#[derive(Debug, Clone)]
struct Rec {
    family: &'static str,
    kafka_key: Vec<u8>,
    key: Vec<u8>,
    time: i64,
    value: Vec<u8>,
}

/// What kstate's store must hold: `(segment, Kafka key) -> (record, converted value)`.
type Model = BTreeMap<(i64, Vec<u8>), (Rec, Vec<u8>)>;

/// A Kafka store written to disk, and what kstate must make of it.
struct Fixture {
    kind: Kind,
    /// Every record, by segment.
    records: BTreeMap<i64, Vec<Rec>>,
    max_time: i64,
}

fn kafka_position(entries: &[(&str, i32, i64)]) -> Vec<u8> {
    let mut topics: BTreeMap<&str, Vec<(i32, i64)>> = BTreeMap::new();
    for (t, p, o) in entries {
        topics.entry(t).or_default().push((*p, *o));
    }
    let mut raw = vec![0u8];
    raw.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for (t, parts) in topics {
        raw.extend_from_slice(&(t.len() as i32).to_be_bytes());
        raw.extend_from_slice(t.as_bytes());
        raw.extend_from_slice(&(parts.len() as i32).to_be_bytes());
        for (p, o) in parts {
            raw.extend_from_slice(&p.to_be_bytes());
            raw.extend_from_slice(&o.to_be_bytes());
        }
    }
    raw.extend_from_slice(&[0; 16]); // Kafka's serde pads its buffer
    raw
}

/// Kafka's merged position of the fixtures, in the adapter layout kstate keeps.
fn expected_position() -> Vec<u8> {
    let mut out = vec![1u8];
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&2u16.to_be_bytes());
    out.extend_from_slice(b"in");
    out.extend_from_slice(&2i32.to_be_bytes());
    for (p, o) in [(0i32, 999i64), (1, 40)] {
        out.extend_from_slice(&p.to_be_bytes());
        out.extend_from_slice(&o.to_be_bytes());
    }
    out
}

fn expected_offsets() -> Vec<(TopicPartition, i64)> {
    vec![
        (TopicPartition::new("app-w-changelog", 0), 1000),
        (TopicPartition::new("app-x-changelog", 1), 55),
    ]
}

/// The `offsets` family of segment `s` of [`SEGMENTS`]: the newest has the latest offset of
/// one partition, the one before also another partition; positions differ.
fn offsets_family(s: i64, status: i64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = vec![(b"status".to_vec(), status.to_be_bytes().to_vec())];
    let (offsets, position): (Vec<(&str, i64)>, Vec<u8>) = if s == SEGMENTS - 1 {
        (
            vec![("app-w-changelog-0", 1000)],
            kafka_position(&[("in", 0, 999)]),
        )
    } else if s == SEGMENTS - 2 {
        (
            vec![("app-w-changelog-0", 990), ("app-x-changelog-1", 55)],
            kafka_position(&[("in", 0, 990), ("in", 1, 40)]),
        )
    } else {
        (
            vec![("app-w-changelog-0", 10 * s)],
            kafka_position(&[("in", 0, 5)]),
        )
    };
    for (k, o) in offsets {
        out.push((k.as_bytes().to_vec(), o.to_be_bytes().to_vec()));
    }
    out.push((b"position".to_vec(), position));
    out
}

impl Fixture {
    fn new(kind: Kind, per_segment: u64, seed: u64) -> Fixture {
        let mut rng = Rng::new(seed);
        let mut records = BTreeMap::new();
        let mut max_time = i64::MIN;
        for s in 0..SEGMENTS {
            let id = BASE / INTERVAL + s;
            let mut by_key: BTreeMap<(&'static str, Vec<u8>), Rec> = BTreeMap::new();
            for _ in 0..per_segment {
                let key = format!("k{:02}", rng.below(KEYS)).into_bytes();
                let time = id * INTERVAL + rng.below(INTERVAL as u64) as i64;
                let v = format!("v{}", rng.below(100_000)).into_bytes();
                let (kafka_key, family, value) = match kind {
                    Kind::Session => {
                        let start = time - rng.below(50_000) as i64;
                        (session_key(&key, start, time), "default", v)
                    }
                    Kind::PlainWindow => (window_key(&key, time, 0), "default", v),
                    Kind::TimestampedWindow if rng.chance(20) => {
                        (window_key(&key, time, 0), "default", v)
                    }
                    Kind::TimestampedWindow => (
                        window_key(&key, time, 0),
                        "keyValueWithTimestamp",
                        value::encode(&v, time + 7),
                    ),
                };
                max_time = max_time.max(time);
                by_key.insert(
                    (family, kafka_key.clone()),
                    Rec {
                        family,
                        kafka_key,
                        key,
                        time,
                        value,
                    },
                );
            }
            let mut recs: Vec<Rec> = by_key.into_values().collect();
            if kind == Kind::TimestampedWindow {
                // One window in both families: the timestamped value is the one Kafka reads.
                if let Some(r) = recs.iter().find(|r| r.family == "keyValueWithTimestamp") {
                    let mut twin = r.clone();
                    twin.family = "default";
                    twin.value = b"stale-plain".to_vec();
                    recs.push(twin);
                }
            }
            records.insert(id, recs);
        }
        Fixture {
            kind,
            records,
            max_time,
        }
    }

    /// Writes Kafka's directory `<parent>/<name>/<name>.<start>` with `sep` between name and
    /// start (`offsets`: the 4.3+ offsets family, with `status`).
    fn write(&self, store: &Path, offsets: Option<i64>, sep: char) {
        let name = store.file_name().unwrap().to_str().unwrap().to_string();
        for (s, recs) in &self.records {
            let dir = store.join(segment_dir_name(&name, sep, s * INTERVAL));
            let relative = s - BASE / INTERVAL;
            let mut opts = rocksdb::Options::default();
            opts.create_if_missing(true);
            opts.create_missing_column_families(true);
            let mut families = vec!["default"];
            if self.kind == Kind::TimestampedWindow {
                families.push("keyValueWithTimestamp");
            }
            if offsets.is_some() {
                families.push("offsets");
            }
            let db = rocksdb::DB::open_cf(&opts, &dir, &families).unwrap();
            for r in recs {
                let cf = db.cf_handle(r.family).unwrap();
                db.put_cf(cf, &r.kafka_key, &r.value).unwrap();
            }
            if let Some(status) = offsets {
                let cf = db.cf_handle("offsets").unwrap();
                for (k, v) in offsets_family(relative, status) {
                    db.put_cf(cf, k, v).unwrap();
                }
            }
            // Half the segments in table files, half only in their WAL (a read-only open
            // replays it without writing).
            if relative % 2 == 0 {
                db.flush().unwrap();
            }
        }
    }

    fn min_live(&self) -> i64 {
        (self.max_time - RETENTION) / INTERVAL
    }

    /// What kstate's store must hold: `(segment, Kafka key) -> value` of the live segments.
    fn model(&self, timestamped: bool) -> Model {
        let mut out = BTreeMap::new();
        for (s, recs) in &self.records {
            if *s < self.min_live() {
                continue;
            }
            // Plain values first: the timestamped family wins.
            let mut ordered: Vec<&Rec> = recs.iter().filter(|r| r.family == "default").collect();
            ordered.extend(recs.iter().filter(|r| r.family != "default"));
            for r in ordered {
                let v = if timestamped && r.family == "default" {
                    value::encode(&r.value, -1)
                } else {
                    r.value.clone()
                };
                out.insert((*s, r.kafka_key.clone()), (r.clone(), v));
            }
        }
        out
    }
}

fn segment_dir_name(name: &str, sep: char, start: i64) -> String {
    if sep == '-' {
        // yyyyMMddHHmm (UTC): the fixtures' starts are whole 15-minute steps after BASE.
        let minutes = (start - BASE) / 60_000;
        format!("{name}-202001010{}{:02}", minutes / 60, minutes % 60)
    } else {
        format!("{name}{sep}{start}")
    }
}

/// Every file under `dir`, by relative path, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &target);
        } else {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}

fn window_options(plain: bool) -> WindowOptions {
    let store = if plain {
        StoreOptions::plain(EngineKind::RocksDb)
    } else {
        StoreOptions::default()
    };
    WindowOptions::new(RETENTION, 0, false).with_store(store)
}

fn windows(it: kstate::store::WindowIter) -> Vec<WindowEntry> {
    it.collect::<kstate::Result<_>>().unwrap()
}

fn sessions(it: kstate::store::SessionIter) -> Vec<SessionEntry> {
    it.collect::<kstate::Result<_>>().unwrap()
}

/// Kafka's visible floor at the adopted stream time.
fn earliest_visible(f: &Fixture) -> i64 {
    f.max_time - RETENTION + 1
}

/// The window queries both stores answer.
fn window_queries(f: &Fixture) -> Vec<WindowQuery> {
    let st = f.max_time;
    let ranges = [
        (0, i64::MAX),
        (st - RETENTION, st),
        (BASE + 4 * INTERVAL, BASE + 5 * INTERVAL - 1),
        (st - 100_000, i64::MAX),
    ];
    let mut out = vec![WindowQuery::All];
    for (from, to) in ranges {
        out.push(WindowQuery::Time { from, to });
        out.push(WindowQuery::KeyRange {
            key_from: Some(b"k03".to_vec()),
            key_to: Some(b"k11".to_vec()),
            from,
            to,
        });
        out.push(WindowQuery::KeyRange {
            key_from: None,
            key_to: Some(b"k05".to_vec()),
            from,
            to,
        });
        for k in 0..KEYS {
            out.push(WindowQuery::Key {
                key: format!("k{k:02}").into_bytes(),
                from,
                to,
            });
        }
    }
    out
}

fn session_queries(f: &Fixture) -> Vec<SessionQuery> {
    let st = f.max_time;
    let ranges = [
        (0, i64::MAX),
        (st - RETENTION, st),
        (BASE + 4 * INTERVAL, BASE + 5 * INTERVAL),
    ];
    let mut out = vec![SessionQuery::All];
    for (earliest_end, latest_start) in ranges {
        out.push(SessionQuery::KeyRange {
            key_from: Some(b"k03".to_vec()),
            key_to: None,
            earliest_end,
            latest_start,
        });
        for k in 0..KEYS {
            out.push(SessionQuery::Key {
                key: format!("k{k:02}").into_bytes(),
                earliest_end,
                latest_start,
            });
        }
    }
    out
}

/// What both store kinds are checked for: `all` (the adopted store's `all()`) equals the
/// model's visible entries `want`, and the committed offsets and metadata are Kafka's (or
/// none, for the older runtimes' segments).
fn check_basics<E: PartialEq + std::fmt::Debug>(
    all: Vec<E>,
    want: Vec<E>,
    committed: (Vec<(TopicPartition, i64)>, Option<Vec<u8>>),
    kafka_offsets: bool,
) {
    assert!(!want.is_empty());
    assert_eq!(all, want, "all() against the model");
    check_offsets(committed.0, committed.1, kafka_offsets);
}

/// Runs every query on the adopted store and on the reference store, under both isolation
/// levels and in both directions, and asserts equal answers.
fn compare<Q: std::fmt::Debug, E: PartialEq + std::fmt::Debug>(
    queries: &[Q],
    adopted: impl Fn(Isolation, &Q, bool) -> Vec<E>,
    reference: impl Fn(Isolation, &Q, bool) -> Vec<E>,
) {
    let mut compared = 0;
    for q in queries {
        for iso in [Isolation::ReadCommitted, Isolation::ReadUncommitted] {
            for reverse in [false, true] {
                let got = adopted(iso, q, reverse);
                assert_eq!(got, reference(iso, q, reverse), "{q:?} reverse {reverse}");
                compared += got.len();
            }
        }
    }
    assert!(compared > 1000, "the queries returned {compared} entries");
}

/// The model's records oldest first, as the reference store gets them.
fn by_time(model: &Model) -> Vec<&(Rec, Vec<u8>)> {
    let mut out: Vec<_> = model.values().collect();
    out.sort_by_key(|(r, _)| r.time);
    out
}

/// Checks the adopted window store at `path` against the model and Kafka's offsets and
/// position, then (`full`) against a reference store written through the API, and the
/// data family on disk.
fn check_window(path: &Path, f: &Fixture, plain: bool, offsets: bool, full: bool) {
    let model = f.model(!plain);
    let store = WindowStore::open(path, &window_options(plain)).unwrap();
    assert_eq!(
        store.stream_time(Isolation::ReadCommitted).unwrap(),
        f.max_time
    );
    let floor = earliest_visible(f).max(0);
    let want = model
        .values()
        .filter(|(r, _)| r.time >= floor)
        .map(|(r, v)| WindowEntry {
            key: r.key.clone(),
            window_start: r.time,
            seqnum: 0,
            raw_value: v.clone(),
        })
        .collect();
    let committed = (
        store.committed_offsets().unwrap(),
        store.committed_metadata().unwrap(),
    );
    check_basics(windows(store.all().unwrap()), want, committed, offsets);
    if full {
        let refdir = tempfile::tempdir().unwrap();
        let reference = WindowStore::open(refdir.path().join("w"), &window_options(plain)).unwrap();
        for (r, v) in by_time(&model) {
            reference.put_raw(&r.key, Some(v), r.time).unwrap();
        }
        reference.commit(&[], None).unwrap();
        compare(
            &window_queries(f),
            |iso, q, rev| windows(store.query(iso, q, rev).unwrap()),
            |iso, q, rev| windows(reference.query(iso, q, rev).unwrap()),
        );
        reference.close().unwrap();
    }
    store.close().unwrap();
    check_family(path, "kstate_windows", &model);
}

/// [`check_window`] for session stores.
fn check_session(path: &Path, f: &Fixture, offsets: bool, full: bool) {
    let model = f.model(false);
    let store = SessionStore::open(path, &SessionOptions::new(RETENTION)).unwrap();
    assert_eq!(
        store.stream_time(Isolation::ReadCommitted).unwrap(),
        f.max_time
    );
    let floor = earliest_visible(f).max(0);
    let session = |r: &Rec| {
        let (_, start, end) = kstate::format::segmented::parse_session_key(&r.kafka_key).unwrap();
        (start, end)
    };
    let want = model
        .values()
        .filter(|(r, _)| r.time >= floor)
        .map(|(r, v)| SessionEntry {
            key: r.key.clone(),
            start: session(r).0,
            end: session(r).1,
            value: v.clone(),
        })
        .collect();
    let committed = (
        store.committed_offsets().unwrap(),
        store.committed_metadata().unwrap(),
    );
    check_basics(sessions(store.all().unwrap()), want, committed, offsets);
    if full {
        let refdir = tempfile::tempdir().unwrap();
        let reference =
            SessionStore::open(refdir.path().join("s"), &SessionOptions::new(RETENTION)).unwrap();
        for (r, v) in by_time(&model) {
            let (start, end) = session(r);
            reference.put(&r.key, start, end, Some(v)).unwrap();
        }
        reference.commit(&[], None).unwrap();
        compare(
            &session_queries(f),
            |iso, q, rev| sessions(store.query(iso, q, rev).unwrap()),
            |iso, q, rev| sessions(reference.query(iso, q, rev).unwrap()),
        );
        reference.close().unwrap();
    }
    store.close().unwrap();
    check_family(path, "kstate_sessions", &model);
}

fn check_offsets(offsets: Vec<(TopicPartition, i64)>, metadata: Option<Vec<u8>>, kafka: bool) {
    if kafka {
        assert_eq!(offsets, expected_offsets());
        assert_eq!(metadata, Some(expected_position()));
    } else {
        assert_eq!(offsets, vec![]);
        assert_eq!(metadata, None);
    }
}

/// The kstate store's data family holds exactly the live segments' records, re-keyed.
fn check_family(path: &Path, family: &str, model: &Model) {
    let db = rocksdb::DB::open_cf_for_read_only(
        &rocksdb::Options::default(),
        path,
        rocksdb::DB::list_cf(&rocksdb::Options::default(), path).unwrap(),
        false,
    )
    .unwrap();
    let cf = db.cf_handle(family).unwrap();
    let on_disk: Vec<(Vec<u8>, Vec<u8>)> = db
        .iterator_cf(cf, rocksdb::IteratorMode::Start)
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model
        .iter()
        .map(|((s, k), (_, v))| (stored_key(*s, k), v.clone()))
        .collect();
    assert_eq!(on_disk.len(), want.len(), "entries on disk");
    assert!(
        on_disk == want,
        "the data family holds the live segments' records"
    );
}

/// Kafka's directory was replaced: a kstate store, no side directory left.
fn assert_replaced(path: &Path) {
    assert!(path.join("CURRENT").is_file());
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(!std::fs::read_dir(path).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_str()
        .unwrap()
        .starts_with(name)));
    let parent = path.parent().unwrap();
    for side in [
        "kstate-swap",
        "kstate-swap-old",
        "kstate-swap-ready",
        "kstate-new",
    ] {
        assert!(
            !parent.join(format!(".{name}.{side}")).exists(),
            "{side} left"
        );
    }
}

#[test]
fn a_timestamped_window_store_is_adopted_with_its_offsets_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w");
    let f = Fixture::new(Kind::TimestampedWindow, 400, 1);
    f.write(&path, Some(0), '.');
    check_window(&path, &f, false, true, true);
    assert_replaced(&path);
    // Reopened as a kstate store, and it keeps working.
    let store = WindowStore::open(&path, &window_options(false)).unwrap();
    store.put(b"new", Some(b"x"), 5, f.max_time).unwrap();
    store
        .commit(
            &[(TopicPartition::new("app-w-changelog", 0), Some(1001))],
            None,
        )
        .unwrap();
    assert_eq!(
        store.fetch(b"new", f.max_time).unwrap().unwrap().value,
        b"x"
    );
    store.close().unwrap();
}

#[test]
fn a_plain_window_store_gets_timestamp_minus_one_or_stays_plain() {
    for plain in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        let f = Fixture::new(Kind::PlainWindow, 400, 2);
        f.write(&path, Some(0), '.');
        check_window(&path, &f, plain, true, true);
        assert_replaced(&path);
    }
}

#[test]
fn a_session_store_is_adopted_with_its_offsets_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let f = Fixture::new(Kind::Session, 400, 3);
    f.write(&path, Some(0), '.');
    check_session(&path, &f, true, true);
    assert_replaced(&path);
}

/// Kafka's newest segment was being created by RocksDB when Kafka Streams was SIGKILLed: it
/// holds `CURRENT` and a manifest but no WAL file (Kafka writes without the WAL, so nothing
/// is lost). Kafka's RocksDB opens such a segment; kstate adopts the store with it (found by
/// `RealBrokerRoundTripTest`, where the open failed with "Opening an existing DB with no WAL
/// files" and Kafka Streams could not start).
#[test]
fn a_segment_without_a_wal_file_is_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let f = Fixture::new(Kind::Session, 400, 5);
    f.write(&path, Some(0), '.');
    let newest = path.join(segment_dir_name(
        "s",
        '.',
        (BASE / INTERVAL + SEGMENTS) * INTERVAL,
    ));
    {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        drop(rocksdb::DB::open(&opts, &newest).unwrap());
    }
    let mut wals = 0;
    for e in std::fs::read_dir(&newest).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "log") {
            std::fs::remove_file(p).unwrap();
            wals += 1;
        }
    }
    assert!(wals > 0, "RocksDB left a WAL file to remove");
    check_session(&path, &f, true, true);
    assert_replaced(&path);
}

#[test]
fn the_older_runtimes_layout_is_adopted_without_offsets() {
    for (kind, sep) in [
        (Kind::TimestampedWindow, ':'),
        (Kind::Session, '-'),
        (Kind::PlainWindow, '.'),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old");
        let f = Fixture::new(kind, 200, 4);
        f.write(&path, None, sep);
        match kind {
            Kind::Session => check_session(&path, &f, false, true),
            _ => check_window(&path, &f, false, false, true),
        }
        assert_replaced(&path);
    }
}

/// Opens `path` with `open`, expects `code`, and checks that Kafka's directory is
/// byte-identical and that no side directory was left.
fn assert_refused(path: &Path, code: ErrorCode, open: impl FnOnce() -> kstate::Result<()>) {
    let before = snapshot(path);
    let err = open().unwrap_err();
    assert_eq!(err.code(), code, "{err}");
    assert!(snapshot(path) == before, "Kafka's directory changed: {err}");
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(!path
        .parent()
        .unwrap()
        .join(format!(".{name}.kstate-swap"))
        .exists());
}

#[test]
fn what_kstate_does_not_adopt_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let open_ts =
        |p: &Path| WindowStore::open(p, &window_options(false)).map(|s| s.close().unwrap());
    // Timestamped values opened plain.
    let p = dir.path().join("ts");
    Fixture::new(Kind::TimestampedWindow, 50, 5).write(&p, Some(0), '.');
    assert_refused(&p, ErrorCode::FormatMismatch, || {
        WindowStore::open(&p, &window_options(true)).map(|s| s.close().unwrap())
    });
    // Another segment interval, not a multiple of Kafka's (records outside their segment).
    assert_refused(&p, ErrorCode::FormatMismatch, || {
        WindowStore::open(
            &p,
            &window_options(false).with_segment_interval(INTERVAL * 2 / 3),
        )
        .map(|s| s.close().unwrap())
    });
    // A window store's segments opened as a session store (records outside their range).
    assert_refused(&p, ErrorCode::FormatMismatch, || {
        SessionStore::open(&p, &SessionOptions::new(RETENTION)).map(|s| s.close().unwrap())
    });
    // A segment left open.
    let p = dir.path().join("open");
    Fixture::new(Kind::TimestampedWindow, 50, 6).write(&p, Some(1), '.');
    assert_refused(&p, ErrorCode::Corruption, || open_ts(&p));
    // Another file among the segments.
    let p = dir.path().join("extra");
    Fixture::new(Kind::TimestampedWindow, 50, 7).write(&p, Some(0), '.');
    std::fs::write(p.join("notes.txt"), b"x").unwrap();
    assert_refused(&p, ErrorCode::FormatMismatch, || open_ts(&p));
    // A family Kafka's segments do not have.
    let p = dir.path().join("family");
    Fixture::new(Kind::PlainWindow, 50, 8).write(&p, Some(0), '.');
    {
        let seg = p.join(format!("family.{}", BASE + 5 * INTERVAL));
        let mut db =
            rocksdb::DB::open_cf(&rocksdb::Options::default(), &seg, ["default", "offsets"])
                .unwrap();
        db.create_cf("mystery", &rocksdb::Options::default())
            .unwrap();
    }
    assert_refused(&p, ErrorCode::FormatMismatch, || open_ts(&p));
    // Headers values (Kafka 4.4's headers window segments): a window store cannot hold them.
    let p = dir.path().join("headers");
    Fixture::new(Kind::TimestampedWindow, 50, 9).write(&p, Some(0), '.');
    {
        let seg = p.join(format!("headers.{}", BASE + 5 * INTERVAL));
        let mut db = rocksdb::DB::open_cf(
            &rocksdb::Options::default(),
            &seg,
            ["default", "keyValueWithTimestamp", "offsets"],
        )
        .unwrap();
        db.create_cf(
            "keyValueWithTimestampAndHeaders",
            &rocksdb::Options::default(),
        )
        .unwrap();
        let cf = db.cf_handle("keyValueWithTimestampAndHeaders").unwrap();
        db.put_cf(cf, window_key(b"k01", BASE + 5 * INTERVAL, 0), [0u8; 9])
            .unwrap();
    }
    assert_refused(&p, ErrorCode::FormatMismatch, || open_ts(&p));
}

fn kills() -> usize {
    std::env::var("KSTATE_ADOPT_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50)
}

fn worker(path: &Path, kind: Kind) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"));
    let kind = match kind {
        Kind::TimestampedWindow => "window",
        Kind::PlainWindow => "plain-window",
        Kind::Session => "session",
    };
    cmd.arg("adopt-worker")
        .arg("--dir")
        .arg(path)
        .args(["--kind", kind, "--retention", &RETENTION.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("KSTATE_FAILPOINT_ODDS")
        .env_remove("KSTATE_SWAP_NO_EXCHANGE");
    cmd
}

/// SIGKILLs adoptions at random moments (measured over this machine's time for a whole
/// adoption), through the exchange and through the marker-file fallback, with crash
/// points armed in some rounds: the directory is Kafka's, byte-identical, or kstate's
/// complete store, and the next open always yields the complete adopted store.
#[test]
fn kills_during_an_adoption_leave_kafkas_directory_or_the_whole_store() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures: Vec<(Kind, Fixture, PathBuf)> = [Kind::TimestampedWindow, Kind::Session]
        .into_iter()
        .enumerate()
        .map(|(i, kind)| {
            let f = Fixture::new(kind, 3_000, 10 + i as u64);
            let template = dir.path().join(format!("template-{i}")).join("store");
            f.write(&template, Some(0), '.');
            (kind, f, template)
        })
        .collect();
    let snapshots: Vec<_> = fixtures.iter().map(|(_, _, t)| snapshot(t)).collect();
    let path = dir.path().join("live").join("store");
    let fresh = |t: &Path| {
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
        copy_tree(t, &path);
    };
    // Kill moments are drawn over this machine's time for a whole adoption (KillWindow).
    let measure = |(kind, _, template): &(Kind, Fixture, PathBuf)| {
        fresh(template);
        let started = Instant::now();
        let out = worker(&path, *kind).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        u64::try_from(started.elapsed().as_millis()).unwrap()
    };
    let mut window = KillWindow::measured("an adoption", measure(&fixtures[0]));
    let mut rng = Rng::new(0xAD0 ^ u64::from(std::process::id()));
    let (mut untouched, mut adopted, mut between, mut killed) = (0, 0, 0, 0);
    let mut round = 0;
    while killed < kills() {
        assert!(round < 4 * kills(), "only {killed} kills in {round} rounds");
        let i = round % fixtures.len();
        window.before_round(round, adopted > 0, || measure(&fixtures[i]));
        let (kind, f, template) = &fixtures[i];
        fresh(template);
        let mut cmd = worker(&path, *kind);
        if round % 4 == 1 {
            cmd.env("KSTATE_SWAP_NO_EXCHANGE", "1");
        }
        if round % 3 == 2 {
            cmd.env("KSTATE_FAILPOINT_ODDS", "8");
        }
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(rng.below(window.span_ms())));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
        }
        let out = child.wait_with_output().unwrap();
        killed += usize::from(out.status.code().is_none());
        assert!(
            out.status.success() || out.status.code().is_none(),
            "round {round}: the worker failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if path.join("CURRENT").is_file() {
            adopted += 1;
        } else if path.is_dir() {
            assert!(
                snapshot(&path) == snapshots[i],
                "round {round}: Kafka's directory changed"
            );
            untouched += 1;
        } else {
            // Between the two renames of the fallback: the next open rolls forward.
            between += 1;
        }
        match kind {
            Kind::Session => check_session(&path, f, true, false),
            _ => check_window(&path, f, false, true, false),
        }
        assert_replaced(&path);
        round += 1;
    }
    println!(
        "{round} rounds, {killed} kills: then Kafka's directory {untouched}, kstate's store \
         {adopted}, between renames {between}"
    );
    assert!(
        untouched > 0 && adopted > 0,
        "both outcomes: {untouched} untouched, {adopted} adopted"
    );
}

/// The way back: an adopted store exported to Kafka's layout has the live segments, each
/// with Kafka's families, records and `offsets` family (offsets, status 0, position in
/// Kafka's serde), and adopting that again gives the same store.
#[test]
fn an_adopted_store_goes_back_to_kafkas_layout_with_its_offsets() {
    for kind in [Kind::TimestampedWindow, Kind::PlainWindow, Kind::Session] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("back");
        let f = Fixture::new(kind, 300, 20);
        f.write(&path, Some(0), '.');
        let (families, model) = match kind {
            Kind::Session => {
                check_session(&path, &f, true, false);
                (vec!["default", "offsets"], f.model(false))
            }
            _ => {
                check_window(&path, &f, false, true, false);
                let families = vec!["default", "keyValueWithTimestamp", "offsets"];
                (families, f.model(true))
            }
        };
        let report = kstate::store::export_segmented_to_kafka(&path).unwrap();
        let live: Vec<i64> = f
            .records
            .keys()
            .filter(|s| **s >= f.min_live())
            .copied()
            .collect();
        assert_eq!(report.segments, live.len());
        assert_eq!(report.records as usize, model.len());
        let mut names: Vec<String> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let mut want: Vec<String> = live
            .iter()
            .map(|s| format!("back.{}", s * INTERVAL))
            .collect();
        want.sort();
        assert_eq!(names, want, "Kafka's segment directories and nothing else");
        let mut position = kafka_position(&[("in", 0, 999), ("in", 1, 40)]);
        position.truncate(position.len() - 16);
        let offsets: BTreeMap<Vec<u8>, Vec<u8>> = [
            (
                b"app-w-changelog-0".to_vec(),
                1000i64.to_be_bytes().to_vec(),
            ),
            (b"app-x-changelog-1".to_vec(), 55i64.to_be_bytes().to_vec()),
            (b"status".to_vec(), 0i64.to_be_bytes().to_vec()),
            (b"position".to_vec(), position),
        ]
        .into_iter()
        .collect();
        for s in &live {
            let seg = path.join(format!("back.{}", s * INTERVAL));
            let mut cfs = rocksdb::DB::list_cf(&rocksdb::Options::default(), &seg).unwrap();
            cfs.sort();
            assert_eq!(cfs, families);
            let db = rocksdb::DB::open_cf_for_read_only(
                &rocksdb::Options::default(),
                &seg,
                &families,
                false,
            )
            .unwrap();
            let read = |family: &str| -> BTreeMap<Vec<u8>, Vec<u8>> {
                db.iterator_cf(db.cf_handle(family).unwrap(), rocksdb::IteratorMode::Start)
                    .map(|e| {
                        let (k, v) = e.unwrap();
                        (k.to_vec(), v.to_vec())
                    })
                    .collect()
            };
            assert_eq!(read("offsets"), offsets, "segment {s}");
            let data = if kind == Kind::Session {
                "default"
            } else {
                "keyValueWithTimestamp"
            };
            let records: BTreeMap<Vec<u8>, Vec<u8>> = model
                .iter()
                .filter(|((seg, _), _)| seg == s)
                .map(|((_, k), (_, v))| (k.clone(), v.clone()))
                .collect();
            assert!(read(data) == records, "segment {s} holds its records");
            if kind != Kind::Session {
                assert!(read("default").is_empty());
            }
        }
        // And adopted again: the same store.
        match kind {
            Kind::Session => check_session(&path, &f, true, false),
            _ => check_window(&path, &f, false, true, false),
        }
        assert_replaced(&path);
    }
}

/// Segments that say they were left open (`status` 1: Kafka Streams was killed) are what
/// Kafka 4.4's `RocksDBStore` opens under at-least-once with the offsets and position they
/// hold (`AbstractColumnFamilyAccessor.open(.., ignoreInvalidState = !eos)`). With
/// `adopt_left_open` kstate adopts them exactly as it adopts closed ones (records, stream
/// time, offsets, position), and the all-or-nothing check agrees; without it both refuse
/// them, changing nothing (what Kafka does under exactly-once: wipe and restore).
#[test]
fn segments_left_open_are_adopted_when_allowed_as_kafka_opens_them_under_at_least_once() {
    let allow = StoreOptions::default().with_adopt_left_open(true);
    for (kind, seed) in [(Kind::TimestampedWindow, 41), (Kind::Session, 42)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("left");
        let f = Fixture::new(kind, 200, seed);
        f.write(&path, Some(1), '.');
        let (refusing, allowing) = if kind == Kind::Session {
            (
                PlannedStore::Session {
                    path: path.clone(),
                    options: SessionOptions::new(RETENTION),
                },
                PlannedStore::Session {
                    path: path.clone(),
                    options: SessionOptions::new(RETENTION).with_store(allow.clone()),
                },
            )
        } else {
            (
                PlannedStore::Window {
                    path: path.clone(),
                    options: window_options(false),
                },
                PlannedStore::Window {
                    path: path.clone(),
                    options: window_options(false).with_store(allow.clone()),
                },
            )
        };
        let before = snapshot(&path);
        let err = check_adoption(std::slice::from_ref(&refusing)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Corruption, "{err}");
        assert!(err.to_string().contains("left open"), "{err}");
        assert_eq!(
            check_adoption(std::slice::from_ref(&allowing)).unwrap(),
            vec![path.clone()]
        );
        assert!(
            snapshot(&path) == before,
            "the checks changed the directory"
        );
        assert_refused(&path, ErrorCode::Corruption, || match &refusing {
            PlannedStore::Session { options, .. } => {
                SessionStore::open(&path, options).map(|s| s.close().unwrap())
            }
            PlannedStore::Window { options, .. } => {
                WindowStore::open(&path, options).map(|s| s.close().unwrap())
            }
            PlannedStore::KeyValue { .. } | PlannedStore::Versioned { .. } => unreachable!(),
        });
        match &allowing {
            PlannedStore::Session { options, .. } => {
                SessionStore::open(&path, options).unwrap().close().unwrap();
                check_session(&path, &f, true, false);
            }
            PlannedStore::Window { options, .. } => {
                WindowStore::open(&path, options).unwrap().close().unwrap();
                check_window(&path, &f, false, true, false);
            }
            PlannedStore::KeyValue { .. } | PlannedStore::Versioned { .. } => unreachable!(),
        }
        assert_replaced(&path);
    }
}

/// A task's stores are adopted all together or not at all: the preflight
/// (`kstate::store::check_adoption`) names every store of the plan that its open would refuse
/// and changes no byte of the task directory; once the blockers are gone it lists the stores
/// the opens adopt, and after the opens (kstate stores now) none.
#[test]
fn a_task_is_adopted_all_together_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("0_0");
    // Kafka's timestamped key-value store, with its 4.3+ offsets family (closed).
    let kv = task.join("rocksdb").join("kv");
    {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&opts, &kv, ["default", "keyValueWithTimestamp", "offsets"])
            .unwrap();
        let cf = db.cf_handle("keyValueWithTimestamp").unwrap();
        for i in 0..50 {
            db.put_cf(cf, format!("k{i:02}"), value::encode(b"v", i))
                .unwrap();
        }
        let cf = db.cf_handle("offsets").unwrap();
        db.put_cf(cf, "app-kv-changelog-0", 49i64.to_be_bytes())
            .unwrap();
        db.put_cf(cf, "status", 0i64.to_be_bytes()).unwrap();
    }
    // Kafka's window store with a segment holding a family its segments do not have, and a
    // session store left open: two blockers.
    let w = task.join("w");
    Fixture::new(Kind::TimestampedWindow, 50, 31).write(&w, Some(0), '.');
    let mystery = w.join(format!("w.{}", BASE + 5 * INTERVAL));
    {
        let mut db = rocksdb::DB::open_cf(
            &rocksdb::Options::default(),
            &mystery,
            ["default", "keyValueWithTimestamp", "offsets"],
        )
        .unwrap();
        db.create_cf("mystery", &rocksdb::Options::default())
            .unwrap();
    }
    let s = task.join("s");
    Fixture::new(Kind::Session, 50, 32).write(&s, Some(1), '.');
    let kv_plan = PlannedStore::KeyValue {
        path: kv.clone(),
        options: StoreOptions::default(),
    };
    let w_plan = PlannedStore::Window {
        path: w.clone(),
        options: window_options(false),
    };
    let s_plan = PlannedStore::Session {
        path: s.clone(),
        options: SessionOptions::new(RETENTION),
    };
    // A store of the task kstate creates new: nothing of Kafka's there.
    let own = PlannedStore::KeyValue {
        path: task.join("own"),
        options: StoreOptions::default(),
    };
    let before = snapshot(&task);
    let plan = [kv_plan.clone(), w_plan.clone(), s_plan.clone(), own.clone()];
    let err = check_adoption(&plan).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    let m = err.to_string();
    assert!(
        m.contains("2 of them cannot be adopted, so none was changed"),
        "{m}"
    );
    assert!(m.contains(&format!("{} is refused", w.display())), "{m}");
    assert!(m.contains("'mystery'"), "{m}");
    assert!(m.contains(&format!("{} is refused", s.display())), "{m}");
    assert!(m.contains("left open"), "{m}");
    assert!(!m.contains(&format!("{} is refused", kv.display())), "{m}");
    // Each store on its own: what its open would do.
    assert!(kv_plan.check().unwrap());
    assert!(!own.check().unwrap());
    assert_eq!(
        w_plan.check().unwrap_err().code(),
        ErrorCode::FormatMismatch
    );
    assert_eq!(s_plan.check().unwrap_err().code(), ErrorCode::Corruption);
    // The first blocker decides the code.
    let err = check_adoption(&[s_plan, kv_plan.clone()]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Corruption, "{err}");
    assert!(err.to_string().contains("1 of them"), "{err}");
    assert!(
        snapshot(&task) == before,
        "the check changed the task directory"
    );
    assert!(!task.join("own").exists());

    // The blocker gone (the session store restored from its changelog elsewhere), the plan
    // passes, still without writing anything, and the opens adopt both stores.
    {
        let mut db = rocksdb::DB::open_cf(
            &rocksdb::Options::default(),
            &mystery,
            ["default", "keyValueWithTimestamp", "offsets", "mystery"],
        )
        .unwrap();
        db.drop_cf("mystery").unwrap();
    }
    let plan = [kv_plan, w_plan, own];
    let before = snapshot(&task);
    assert_eq!(check_adoption(&plan).unwrap(), vec![kv.clone(), w.clone()]);
    assert!(snapshot(&task) == before);
    let store = kstate::KvStore::open(&kv, &StoreOptions::default()).unwrap();
    assert_eq!(
        store
            .committed_offset(&TopicPartition::new("app-kv-changelog", 0))
            .unwrap(),
        Some(49)
    );
    store.close().unwrap();
    WindowStore::open(&w, &window_options(false))
        .unwrap()
        .close()
        .unwrap();
    assert_eq!(check_adoption(&plan).unwrap(), Vec::<PathBuf>::new());
}
