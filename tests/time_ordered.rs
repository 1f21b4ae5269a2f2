//! The time-ordered window and session stores of `EmitStrategy.onWindowClose()`, checked
//! against a brute-force model of Kafka's `RocksDBTimeOrderedWindowStore` /
//! `RocksDBTimeOrderedSessionStore`: random puts, deletes and removes (late ones, expired
//! segments), commits, rollbacks and reopens on both engines; every time-ordered query
//! (`fetchAll`, `all`, key-range fetches without a key index, `findSessions` by end) at both
//! isolation levels, in Kafka's order (the bytes of the time-first key). Plus the refusals:
//! a store opened with the other time order, Kafka's own time-ordered segment directories,
//! and the export of a time-ordered store to Kafka's regular layout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kstate::store::{SessionOptions, SessionStore, WindowOptions, WindowQuery, WindowStore};
use kstate::{EngineKind, ErrorCode, Isolation, StoreOptions, TopicPartition};

const RETENTION: i64 = 500;
const INTERVAL: i64 = 100;
const WINDOW: i64 = 50;

fn tp() -> TopicPartition {
    TopicPartition::new("to-changelog", 0)
}

/// A small deterministic generator (no extra dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Kafka's segmented store rules: a write to a segment below the lowest live one at the new
/// stream time is dropped; expired segments disappear.
#[derive(Clone, Default)]
struct Model {
    /// (segment, key, time a, time b) -> value; window: (start, seqnum 0), session: (end, start).
    entries: BTreeMap<(Vec<u8>, i64, i64), Vec<u8>>,
    stream_time: Option<i64>,
}

impl Model {
    fn min_live(&self) -> i64 {
        self.stream_time
            .map_or(i64::MIN, |t| (t - RETENTION) / INTERVAL)
    }

    /// `time` decides the segment (window start, session end).
    fn write(&mut self, key: &[u8], time: i64, other: i64, value: Option<Vec<u8>>) {
        let st = self.stream_time.map_or(time, |t| t.max(time));
        self.stream_time = Some(st);
        if time / INTERVAL < self.min_live() {
            return;
        }
        match value {
            Some(v) => self.entries.insert((key.to_vec(), time, other), v),
            None => self.entries.remove(&(key.to_vec(), time, other)),
        };
        let min = self.min_live();
        self.entries.retain(|(_, t, _), _| t / INTERVAL >= min);
    }
}

fn be(t: i64) -> [u8; 8] {
    t.to_be_bytes()
}

/// Kafka's time-first window key order: `start ‖ key ‖ seqnum`.
fn window_order(key: &[u8], start: i64) -> Vec<u8> {
    let mut k = be(start).to_vec();
    k.extend_from_slice(key);
    k.extend_from_slice(&0i32.to_be_bytes());
    k
}

/// Kafka's `fetchAll` / key-range fetch on a time-ordered window store without index:
/// starts in `[max(from, stream_time - retention), to]`, by time-first key bytes.
fn model_windows(
    m: &Model,
    key_from: Option<&[u8]>,
    key_to: Option<&[u8]>,
    from: i64,
    to: i64,
) -> Vec<(Vec<u8>, i64, Vec<u8>)> {
    let floor = m.stream_time.map_or(i64::MIN, |t| t - RETENTION);
    let from = from.max(floor).max(0);
    let mut out: Vec<_> = m
        .entries
        .iter()
        .filter(|((k, s, _), _)| {
            *s >= from
                && *s <= to
                && key_from.map_or(true, |f| k.as_slice() >= f)
                && key_to.map_or(true, |t| k.as_slice() <= t)
        })
        .map(|((k, s, _), v)| (k.clone(), *s, v.clone()))
        .collect();
    out.sort_by_key(|(k, s, _)| window_order(k, *s));
    out
}

/// Kafka's `findSessions(earliestEnd, latestEnd)`: ends in the range, live segments, by
/// `end ‖ start ‖ key`.
fn model_sessions(m: &Model, earliest: i64, latest: i64) -> Vec<(Vec<u8>, i64, i64, Vec<u8>)> {
    let mut out: Vec<_> = m
        .entries
        .iter()
        .filter(|((_, end, _), _)| *end >= earliest.max(0) && *end <= latest)
        .map(|((k, end, start), v)| (k.clone(), *start, *end, v.clone()))
        .collect();
    out.sort_by_key(|(k, start, end, _)| {
        let mut o = be(*end).to_vec();
        o.extend_from_slice(&be(*start));
        o.extend_from_slice(k);
        o
    });
    out
}

fn window_options(engine: EngineKind) -> WindowOptions {
    // spills with a small bound: the time index spills with the data
    let store = StoreOptions {
        engine,
        max_uncommitted_bytes: 4096,
        ..Default::default()
    };
    WindowOptions::new(RETENTION, WINDOW, false)
        .with_store(store)
        .with_segment_interval(INTERVAL)
        .time_ordered(false)
}

fn session_options(engine: EngineKind) -> SessionOptions {
    let mut store = StoreOptions::plain(engine);
    store.max_uncommitted_bytes = 4096;
    SessionOptions::new(RETENTION)
        .with_store(store)
        .with_segment_interval(INTERVAL)
        .time_ordered()
}

fn windows(it: kstate::store::WindowIter) -> Vec<(Vec<u8>, i64, Vec<u8>)> {
    it.map(|e| {
        let e = e.unwrap();
        (e.key, e.window_start, e.raw_value)
    })
    .collect()
}

fn check_window_queries(store: &WindowStore, m: &Model, iso: Isolation, rng: &mut Rng, what: &str) {
    let st = m.stream_time.unwrap_or(0);
    for _ in 0..4 {
        let from = st - rng.next(900) as i64;
        let to = from + rng.next(700) as i64;
        let expected = model_windows(m, None, None, from, to);
        let q = WindowQuery::Time { from, to };
        assert_eq!(
            windows(store.query(iso, &q, false).unwrap()),
            expected,
            "{what}: fetchAll({from}, {to})"
        );
        let mut back = expected.clone();
        back.reverse();
        assert_eq!(
            windows(store.query(iso, &q, true).unwrap()),
            back,
            "{what}: backwardFetchAll"
        );
        let (kf, kt) = (b"k2".to_vec(), b"k5".to_vec());
        let q = WindowQuery::KeyRange {
            key_from: Some(kf.clone()),
            key_to: Some(kt.clone()),
            from,
            to,
        };
        assert_eq!(
            windows(store.query(iso, &q, false).unwrap()),
            model_windows(m, Some(&kf), Some(&kt), from, to),
            "{what}: fetch(k2, k5, {from}, {to})"
        );
    }
    assert_eq!(
        windows(store.query(iso, &WindowQuery::All, false).unwrap()),
        model_windows(m, None, None, 0, i64::MAX),
        "{what}: all()"
    );
}

fn check_session_queries(
    store: &SessionStore,
    m: &Model,
    iso: Isolation,
    rng: &mut Rng,
    what: &str,
) {
    let st = m.stream_time.unwrap_or(0);
    for _ in 0..4 {
        let earliest = st - rng.next(900) as i64;
        let latest = earliest + rng.next(700) as i64;
        let got: Vec<_> = store
            .find_sessions_by_end_with(iso, earliest, latest, false)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.key, e.start, e.end, e.value)
            })
            .collect();
        assert_eq!(
            got,
            model_sessions(m, earliest, latest),
            "{what}: findSessions({earliest}, {latest})"
        );
    }
}

/// Random writes with commits, rollbacks and (RocksDB) reopens; the writer's view checked
/// against the writer's model, the committed view against the last committed model.
#[test]
fn time_ordered_stores_answer_as_kafkas() {
    for engine in [EngineKind::RocksDb, EngineKind::Memory] {
        let dir = tempfile::tempdir().unwrap();
        let wpath = dir.path().join("w");
        let spath = dir.path().join("s");
        let mut w = WindowStore::open(&wpath, &window_options(engine)).unwrap();
        let mut s = SessionStore::open(&spath, &session_options(engine)).unwrap();
        let (mut wm, mut sm) = (Model::default(), Model::default());
        let (mut wc, mut sc) = (Model::default(), Model::default());
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut base = 1_000i64;
        let mut offset = 0i64;
        for i in 0..3_000 {
            base += rng.next(4) as i64;
            let t = if rng.next(6) == 0 {
                (base - rng.next(700) as i64).max(0)
            } else {
                base
            };
            let key = format!("k{}", rng.next(8)).into_bytes();
            match rng.next(10) {
                0..=3 => {
                    let start = t / WINDOW * WINDOW;
                    let v = format!("{:08}v{i}", 0).into_bytes();
                    w.put_raw(&key, Some(&v), start).unwrap();
                    wm.write(&key, start, 0, Some(v));
                }
                4 => {
                    let start = t / WINDOW * WINDOW;
                    w.put_raw(&key, None, start).unwrap();
                    wm.write(&key, start, 0, None);
                }
                5..=7 => {
                    let end = t + rng.next(60) as i64;
                    let v = format!("a{i}").into_bytes();
                    s.put(&key, t, end, Some(&v)).unwrap();
                    sm.write(&key, end, t, Some(v));
                }
                8 => {
                    let end = t + rng.next(60) as i64;
                    s.put(&key, t, end, None).unwrap();
                    sm.write(&key, end, t, None);
                }
                _ => match rng.next(5) {
                    0 => {
                        w.rollback().unwrap();
                        s.rollback().unwrap();
                        wm = wc.clone();
                        sm = sc.clone();
                    }
                    1 if engine == EngineKind::RocksDb => {
                        // a close without commit discards; the reopened store is the committed one
                        w.close().unwrap();
                        s.close().unwrap();
                        w = WindowStore::open(&wpath, &window_options(engine)).unwrap();
                        s = SessionStore::open(&spath, &session_options(engine)).unwrap();
                        wm = wc.clone();
                        sm = sc.clone();
                    }
                    _ => {
                        offset += 1;
                        w.commit(&[(tp(), Some(offset))], None).unwrap();
                        s.commit(&[(tp(), Some(offset))], None).unwrap();
                        wc = wm.clone();
                        sc = sm.clone();
                    }
                },
            }
            if i % 97 == 0 {
                let what = format!("{engine:?} op {i}");
                check_window_queries(&w, &wm, Isolation::ReadUncommitted, &mut rng, &what);
                check_window_queries(&w, &wc, Isolation::ReadCommitted, &mut rng, &what);
                check_session_queries(&s, &sm, Isolation::ReadUncommitted, &mut rng, &what);
                check_session_queries(&s, &sc, Isolation::ReadCommitted, &mut rng, &what);
            }
        }
        assert!(!wm.entries.is_empty() && !sm.entries.is_empty());
        w.close().unwrap();
        s.close().unwrap();
    }
}

#[test]
fn time_order_is_fixed_when_a_store_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let regular = dir.path().join("regular");
    let timed = dir.path().join("timed");
    let mut plain = window_options(EngineKind::RocksDb);
    plain.time_ordered = false;
    WindowStore::open(&regular, &plain)
        .unwrap()
        .close()
        .unwrap();
    WindowStore::open(&timed, &window_options(EngineKind::RocksDb))
        .unwrap()
        .close()
        .unwrap();
    let err = WindowStore::open(&regular, &window_options(EngineKind::RocksDb)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    let err = WindowStore::open(&timed, &plain).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    let mut plain_sessions = session_options(EngineKind::RocksDb);
    plain_sessions.time_ordered = false;
    let sessions = dir.path().join("sessions");
    SessionStore::open(&sessions, &plain_sessions)
        .unwrap()
        .close()
        .unwrap();
    let err = SessionStore::open(&sessions, &session_options(EngineKind::RocksDb)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    // a query only a time-ordered store answers
    let s = SessionStore::open(&sessions, &plain_sessions).unwrap();
    assert!(s
        .find_sessions_by_end_with(Isolation::ReadUncommitted, 0, 10, false)
        .is_err());
    s.close().unwrap();
    // exporting a time-ordered store to Kafka's regular layout is refused; the store stays
    // kstate's, time-ordered, with its data
    let w = WindowStore::open(&timed, &window_options(EngineKind::RocksDb)).unwrap();
    w.put_raw(b"k", Some(b"00000000v"), 0).unwrap();
    w.commit(&[(tp(), Some(1))], None).unwrap();
    w.close().unwrap();
    let err = kstate::store::export_segmented_to_kafka(&timed).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    let w = WindowStore::open(&timed, &window_options(EngineKind::RocksDb)).unwrap();
    assert_eq!(windows(w.fetch_all(0, 10).unwrap()).len(), 1);
    w.close().unwrap();
}

/// Kafka's time-ordered segments: `<store>/<store>.<segment start>/`, one RocksDB each, with
/// time-first keys under prefix 0 (`[0][start][key][seqnum]`) and, with an index, key-first
/// keys under prefix 1 with empty values. kstate does not adopt them: refused untouched.
#[test]
fn kafkas_time_ordered_segments_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("counts");
    for start in [0i64, 100] {
        let seg = path.join(format!("counts.{start}"));
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        let db = rocksdb::DB::open(&opts, &seg).unwrap();
        let mut base = vec![0u8];
        base.extend_from_slice(&be(start));
        base.extend_from_slice(b"key");
        base.extend_from_slice(&0i32.to_be_bytes());
        let mut value = be(start).to_vec();
        value.extend_from_slice(b"1");
        db.put(&base, &value).unwrap();
        let mut index = vec![1u8];
        index.extend_from_slice(b"key");
        index.extend_from_slice(&be(start));
        index.extend_from_slice(&0i32.to_be_bytes());
        db.put(&index, b"").unwrap();
        db.flush().unwrap();
    }
    let before = snapshot(&path);
    let err = WindowStore::open(&path, &window_options(EngineKind::RocksDb)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    assert!(err.to_string().contains("time-ordered"), "{err}");
    let err = SessionStore::open(&path, &session_options(EngineKind::RocksDb)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    assert!(snapshot(&path) == before, "Kafka's directory changed");
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A restore writes changelog records (Kafka's key-first keys) through the same path: the
/// time index gets them too, in the same transaction.
#[test]
fn restored_records_reach_the_time_index() {
    use kstate::format::segmented::{session_key, window_key};
    for engine in [EngineKind::RocksDb, EngineKind::Memory] {
        let dir = tempfile::tempdir().unwrap();
        let w = WindowStore::open(dir.path().join("w"), &window_options(engine)).unwrap();
        let keys: Vec<Vec<u8>> = [(b"b", 100), (b"a", 150), (b"c", 100), (b"a", 100)]
            .iter()
            .map(|(k, t)| window_key(*k, *t, 0))
            .collect();
        let value = b"00000000v".to_vec();
        let entries: Vec<(&[u8], Option<&[u8]>)> = keys
            .iter()
            .map(|k| (k.as_slice(), Some(value.as_slice())))
            .collect();
        w.put_all_kafka_keys(&entries).unwrap();
        w.commit(&[(tp(), Some(4))], None).unwrap();
        let got: Vec<(Vec<u8>, i64)> = windows(
            w.query(
                Isolation::ReadCommitted,
                &WindowQuery::Time { from: 0, to: 200 },
                false,
            )
            .unwrap(),
        )
        .into_iter()
        .map(|(k, t, _)| (k, t))
        .collect();
        let expected: Vec<(Vec<u8>, i64)> =
            [(&b"a"[..], 100), (b"b", 100), (b"c", 100), (b"a", 150)]
                .iter()
                .map(|(k, t)| (k.to_vec(), *t))
                .collect();
        assert_eq!(got, expected, "{engine:?}");
        w.close().unwrap();

        let s = SessionStore::open(dir.path().join("s"), &session_options(engine)).unwrap();
        let keys = [
            session_key(b"b", 10, 100),
            session_key(b"a", 50, 100),
            session_key(b"a", 0, 90),
        ];
        let entries: Vec<(&[u8], Option<&[u8]>)> = keys
            .iter()
            .map(|k| (k.as_slice(), Some(&b"x"[..])))
            .collect();
        s.put_all_kafka_keys(&entries).unwrap();
        let got: Vec<(Vec<u8>, i64, i64)> = s
            .find_sessions_by_end_with(Isolation::ReadUncommitted, 0, 100, false)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.key, e.start, e.end)
            })
            .collect();
        // by end, then start, then key
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), 0, 90),
                (b"b".to_vec(), 10, 100),
                (b"a".to_vec(), 50, 100)
            ],
            "{engine:?}"
        );
        s.close().unwrap();
    }
}
