//! The time-ordered window and session stores of `EmitStrategy.onWindowClose()`, checked
//! against a brute-force model of Kafka's `RocksDBTimeOrderedWindowStore` /
//! `RocksDBTimeOrderedSessionStore`: random puts, deletes and removes (late ones, expired
//! segments), commits, rollbacks and reopens on both engines; every time-ordered query
//! (`fetchAll`, `all`, key-range fetches without a key index, `findSessions` by end) at both
//! isolation levels, in Kafka's order (the bytes of the time-first key). Kafka's own
//! time-ordered segment directories adopted in place. Plus the refusals: a store opened with
//! the other time order, each of Kafka's two segment layouts by the other kind of store. And
//! the way back: the export to Kafka's time-ordered layout, adopted again, and killed.

#[path = "support/kill_window.rs"]
mod kill_window;

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
                && key_from.is_none_or(|f| k.as_slice() >= f)
                && key_to.is_none_or(|t| k.as_slice() <= t)
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

/// With `key_index` (Kafka's `hasIndex`), key-range fetches keep the key-first order, so
/// they are compared as sets.
fn check_window_queries(
    store: &WindowStore,
    m: &Model,
    iso: Isolation,
    rng: &mut Rng,
    what: &str,
    key_index: bool,
) {
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
        let (mut got, mut want) = (
            windows(store.query(iso, &q, false).unwrap()),
            model_windows(m, Some(&kf), Some(&kt), from, to),
        );
        if key_index {
            got.sort();
            want.sort();
        }
        assert_eq!(got, want, "{what}: fetch(k2, k5, {from}, {to})");
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
                check_window_queries(&w, &wm, Isolation::ReadUncommitted, &mut rng, &what, false);
                check_window_queries(&w, &wc, Isolation::ReadCommitted, &mut rng, &what, false);
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
}

/// Kafka's serialized `Position` of one topic partition (`PositionSerde`: version 0, topics,
/// partitions, padded as Kafka's serde pads its buffer).
fn kafka_position(topic: &str, partition: i32, offset: i64) -> Vec<u8> {
    let mut raw = vec![0u8];
    raw.extend_from_slice(&1i32.to_be_bytes());
    raw.extend_from_slice(&(topic.len() as i32).to_be_bytes());
    raw.extend_from_slice(topic.as_bytes());
    raw.extend_from_slice(&1i32.to_be_bytes());
    raw.extend_from_slice(&partition.to_be_bytes());
    raw.extend_from_slice(&offset.to_be_bytes());
    raw.extend_from_slice(&[0; 16]);
    raw
}

/// The position kstate keeps for [`kafka_position`]`("in", p, o)` (the adapter layout).
fn adapter_position(partition: i32, offset: i64) -> Vec<u8> {
    let mut out = vec![1u8];
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&2u16.to_be_bytes());
    out.extend_from_slice(b"in");
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&partition.to_be_bytes());
    out.extend_from_slice(&offset.to_be_bytes());
    out
}

/// A key and value of a Kafka segment.
type Record = (Vec<u8>, Vec<u8>);

/// Writes Kafka's time-ordered store (`RocksDBTimeOrderedWindowSegmentedBytesStore` /
/// `...SessionSegmentedBytesStore`) holding `m` at `path`: `<store>/<store>.<segment start>/`,
/// one RocksDB per segment, records in `default` under prefix 0 (window `[0][start][key][seqnum]`
/// with the timestamped value, session `[0][end][start][key]` with the aggregate) and, with
/// `index`, key-first keys under prefix 1 with empty values; `offsets` with the changelog
/// offset (the newest segment's is 77), the position (input offset 999 in the newest) and
/// status 0. Plus an expired segment, which Kafka has
/// not deleted yet and the adoption leaves out.
fn write_kafka_time_ordered(path: &Path, m: &Model, session: bool, index: bool) {
    write_kafka_time_ordered_in(path, m, session, index, "default");
}

/// As [`write_kafka_time_ordered`], the records in `family` (Kafka 4.4's time-ordered stores of
/// the DSL's headers store format keep them in `windowKeyValueWithHeaders` /
/// `sessionKeyValueWithHeaders`, `default` left empty).
fn write_kafka_time_ordered_in(path: &Path, m: &Model, session: bool, index: bool, family: &str) {
    let mut by_segment: BTreeMap<i64, Vec<Record>> = BTreeMap::new();
    let mut put = |segment: i64, key: Vec<u8>, value: Vec<u8>| {
        by_segment.entry(segment).or_default().push((key, value));
    };
    for ((key, time, other), v) in &m.entries {
        let segment = time / INTERVAL;
        let mut base = vec![0u8];
        base.extend_from_slice(&be(*time));
        let mut idx = vec![1u8];
        idx.extend_from_slice(key);
        if session {
            // time = end, other = start
            base.extend_from_slice(&be(*other));
            base.extend_from_slice(key);
            idx.extend_from_slice(&be(*time));
            idx.extend_from_slice(&be(*other));
        } else {
            base.extend_from_slice(key);
            base.extend_from_slice(&(*other as i32).to_be_bytes());
            idx.extend_from_slice(&be(*time));
            idx.extend_from_slice(&(*other as i32).to_be_bytes());
        }
        put(segment, base, v.clone());
        if index {
            put(segment, idx, Vec::new());
        }
    }
    // an expired segment (below the lowest live one): left out
    assert!(m.min_live() > 0);
    let mut old = vec![0u8];
    old.extend_from_slice(&be(5));
    if session {
        old.extend_from_slice(&be(0));
        old.extend_from_slice(b"gone");
        put(0, old, b"gone".to_vec());
    } else {
        old.extend_from_slice(b"gone");
        old.extend_from_slice(&0i32.to_be_bytes());
        put(0, old, b"00000000gone".to_vec());
    }
    let name = path.file_name().unwrap().to_str().unwrap().to_string();
    let newest = *by_segment.keys().last().unwrap();
    for (segment, records) in by_segment {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(
            &opts,
            path.join(format!("{name}.{}", segment * INTERVAL)),
            ["default", family, "offsets"],
        )
        .unwrap();
        let data = db.cf_handle(family).unwrap();
        for (k, v) in records {
            db.put_cf(data, &k, &v).unwrap();
        }
        let offsets = db.cf_handle("offsets").unwrap();
        db.put_cf(offsets, b"status", be(0)).unwrap();
        let offset: i64 = if segment == newest { 77 } else { 70 };
        db.put_cf(offsets, b"to-changelog-0", be(offset)).unwrap();
        db.put_cf(offsets, b"position", kafka_position("in", 0, offset + 922))
            .unwrap();
        db.flush().unwrap();
        db.flush_cf(offsets).unwrap();
    }
}

/// Random writes to the model of a Kafka store: window (key, start, seqnum 0) with
/// timestamped values, session (key, end, start) with aggregates.
fn random_model(session: bool, seed: u64, records: usize) -> Model {
    let mut m = Model::default();
    let mut rng = Rng(seed);
    let mut base = 1_000i64;
    for i in 0..records {
        base += rng.next(4) as i64;
        let t = if rng.next(6) == 0 {
            (base - rng.next(700) as i64).max(0)
        } else {
            base
        };
        let key = format!("k{}", rng.next(8 + records as u64 / 100)).into_bytes();
        let tombstone = rng.next(8) == 0;
        if session {
            let end = t + rng.next(60) as i64;
            m.write(
                &key,
                end,
                t,
                (!tombstone).then(|| format!("a{i}").into_bytes()),
            );
        } else {
            let start = t / WINDOW * WINDOW;
            let v = format!("{:08}v{i}", 0).into_bytes();
            m.write(&key, start, 0, (!tombstone).then_some(v));
        }
    }
    m
}

/// Kafka's time-ordered window and session stores (with and without Kafka's key index) are
/// adopted in place by the time-ordered kstate stores: every query equal to the model's
/// (which exercises the time family too), Kafka's offsets and position carried, the stream time carried
/// (a write expired at Kafka's stream time stays expired). A regular kstate store refuses
/// them, and a time-ordered one refuses Kafka's regular layout: both untouched.
#[test]
fn kafkas_time_ordered_segments_are_adopted_in_place() {
    use kstate::store::{check_adoption, PlannedStore};
    let expired = |m: &Model| m.stream_time.unwrap() - RETENTION - INTERVAL;
    for index in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        // window
        let path = dir.path().join("counts");
        let mut m = random_model(false, 0x5EED_0001 + index as u64, 600);
        write_kafka_time_ordered(&path, &m, false, index);
        let before = snapshot(&path);
        let regular = WindowOptions::new(RETENTION, WINDOW, false).with_segment_interval(INTERVAL);
        let err = WindowStore::open(&path, &regular).unwrap_err();
        assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
        let err = SessionStore::open(&path, &session_options(EngineKind::RocksDb)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
        let planned = |options: WindowOptions| PlannedStore::Window {
            path: path.clone(),
            options,
        };
        assert!(check_adoption(&[planned(regular.clone())]).is_err());
        assert!(snapshot(&path) == before, "Kafka's directory changed");
        let options = window_options(EngineKind::RocksDb).time_ordered(index);
        assert_eq!(
            check_adoption(&[planned(options.clone())]).unwrap(),
            vec![path.clone()]
        );
        assert!(
            snapshot(&path) == before,
            "the check changed Kafka's directory"
        );
        let w = WindowStore::open(&path, &options).unwrap();
        assert!(path.join("CURRENT").is_file(), "adopted in place");
        assert_eq!(w.committed_offset(&tp()).unwrap(), Some(77));
        assert_eq!(
            w.committed_metadata().unwrap(),
            Some(adapter_position(0, 999))
        );
        let mut rng = Rng(7);
        for iso in [Isolation::ReadCommitted, Isolation::ReadUncommitted] {
            check_window_queries(
                &w,
                &m,
                iso,
                &mut rng,
                &format!("adopted, index {index}"),
                index,
            );
        }
        let late = expired(&m) / WINDOW * WINDOW;
        w.put_raw(b"late", Some(b"00000000x"), late).unwrap();
        m.write(b"late", late, 0, Some(b"00000000x".to_vec()));
        w.put_raw(b"k9", Some(b"00000000y"), 5_000).unwrap();
        m.write(b"k9", 5_000, 0, Some(b"00000000y".to_vec()));
        w.commit(&[(tp(), Some(78))], None).unwrap();
        w.close().unwrap();
        let w = WindowStore::open(&path, &options).unwrap();
        check_window_queries(
            &w,
            &m,
            Isolation::ReadCommitted,
            &mut rng,
            "after writes",
            index,
        );
        w.close().unwrap();

        // session
        let path = dir.path().join("sessions");
        let mut m = random_model(true, 0x5EED_0003 + index as u64, 600);
        write_kafka_time_ordered(&path, &m, true, index);
        let before = snapshot(&path);
        let regular = SessionOptions::new(RETENTION).with_segment_interval(INTERVAL);
        let err = SessionStore::open(&path, &regular).unwrap_err();
        assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
        assert!(snapshot(&path) == before, "Kafka's directory changed");
        let options = session_options(EngineKind::RocksDb);
        let s = SessionStore::open(&path, &options).unwrap();
        assert!(path.join("CURRENT").is_file(), "adopted in place");
        assert_eq!(s.committed_offset(&tp()).unwrap(), Some(77));
        assert_eq!(
            s.committed_metadata().unwrap(),
            Some(adapter_position(0, 999))
        );
        for iso in [Isolation::ReadCommitted, Isolation::ReadUncommitted] {
            check_session_queries(&s, &m, iso, &mut rng, &format!("adopted, index {index}"));
        }
        let late = expired(&m);
        s.put(b"late", late, late, Some(b"x")).unwrap();
        m.write(b"late", late, late, Some(b"x".to_vec()));
        s.put(b"k9", 5_000, 5_010, Some(b"y")).unwrap();
        m.write(b"k9", 5_010, 5_000, Some(b"y".to_vec()));
        check_session_queries(&s, &m, Isolation::ReadUncommitted, &mut rng, "after writes");
        s.close().unwrap();
    }
}

/// Kafka 4.4's time-ordered stores of the DSL's headers store format (`dsl.store.format=headers`
/// with `onWindowClose()`) are adopted in place by the kstate stores its DSL gets there: windows
/// (records in `windowKeyValueWithHeaders`, headers-format values, with the key index Kafka keeps
/// for every window kind) by a time-ordered window store of headers values, sessions (records in
/// `sessionKeyValueWithHeaders`, aggregates without headers) by a time-ordered session store;
/// every query equal to the model's, Kafka's offsets and position carried. A store of another
/// value format or a regular store refuses them, Kafka's directory unchanged; `kstate export`
/// hands both back as Kafka wrote them (records byte for byte in `windowKeyValueWithHeaders` /
/// `sessionKeyValueWithHeaders`, `default` empty, its offsets; a session store only when it
/// records that its opener was of the DSL's headers store format), and they are adopted again.
#[test]
fn kafkas_time_ordered_headers_segments_are_adopted_in_place() {
    use kstate::ValueFormat;
    let dir = tempfile::tempdir().unwrap();
    // window: headers-format values, no headers (0x00) before the timestamped value
    let path = dir.path().join("counts");
    let mut m = random_model(false, 0x5EED_0011, 600);
    for v in m.entries.values_mut() {
        v.insert(0, 0);
    }
    write_kafka_time_ordered_in(&path, &m, false, true, "windowKeyValueWithHeaders");
    let want = expected_export_in(&path, "windowKeyValueWithHeaders");
    let before = snapshot(&path);
    let headers = |options: WindowOptions| {
        let mut store = options.store.clone();
        store.value_format = ValueFormat::Headers;
        options.with_store(store)
    };
    let regular =
        headers(WindowOptions::new(RETENTION, WINDOW, false).with_segment_interval(INTERVAL));
    let err = WindowStore::open(&path, &regular).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    let timestamped = window_options(EngineKind::RocksDb).time_ordered(true);
    let err = WindowStore::open(&path, &timestamped).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    assert!(snapshot(&path) == before, "Kafka's directory changed");
    let options = headers(window_options(EngineKind::RocksDb).time_ordered(true));
    let w = WindowStore::open(&path, &options).unwrap();
    assert!(path.join("CURRENT").is_file(), "adopted in place");
    assert_eq!(w.committed_offset(&tp()).unwrap(), Some(77));
    assert_eq!(
        w.committed_metadata().unwrap(),
        Some(adapter_position(0, 999))
    );
    let mut rng = Rng(11);
    for iso in [Isolation::ReadCommitted, Isolation::ReadUncommitted] {
        check_window_queries(&w, &m, iso, &mut rng, "adopted headers windows", true);
    }
    w.close().unwrap();
    // handed back as Kafka 4.4's RocksDBTimeOrderedWindowStoreWithHeaders wrote it: the same
    // records (base and index) in windowKeyValueWithHeaders, byte for byte, and its offsets
    let done = kstate::store::export_segmented_to_kafka(&path).unwrap();
    assert_eq!(done.records, m.entries.len() as u64);
    assert_eq!(done.segments, want.0.len());
    assert_exported_in(&path, &want, "windowKeyValueWithHeaders", "headers windows");
    // a timestamped time-ordered store still refuses the headers layout; the headers one
    // adopts it again
    let err = WindowStore::open(&path, &timestamped).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    let w = WindowStore::open(&path, &options).unwrap();
    assert_eq!(w.committed_offset(&tp()).unwrap(), Some(77));
    check_window_queries(
        &w,
        &m,
        Isolation::ReadCommitted,
        &mut rng,
        "adopted again",
        true,
    );
    w.close().unwrap();

    // session: plain aggregates
    let path = dir.path().join("sessions");
    let m = random_model(true, 0x5EED_0013, 600);
    write_kafka_time_ordered_in(&path, &m, true, true, "sessionKeyValueWithHeaders");
    let want = expected_export_in(&path, "sessionKeyValueWithHeaders");
    let before = snapshot(&path);
    let regular = SessionOptions::new(RETENTION).with_segment_interval(INTERVAL);
    let err = SessionStore::open(&path, &regular).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    assert!(snapshot(&path) == before, "Kafka's directory changed");
    let mut options = session_options(EngineKind::RocksDb);
    options.kafka_headers_format = true;
    let s = SessionStore::open(&path, &options).unwrap();
    assert!(path.join("CURRENT").is_file(), "adopted in place");
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(77));
    for iso in [Isolation::ReadCommitted, Isolation::ReadUncommitted] {
        check_session_queries(&s, &m, iso, &mut rng, "adopted headers-format sessions");
    }
    s.close().unwrap();
    // without the record of Kafka's layout (an earlier kstate's store): refused, unchanged
    let held = meta_record(&path, b"kafka_headers", None);
    assert_eq!(held, Some(vec![1]));
    let err = kstate::store::export_segmented_to_kafka(&path).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    assert!(err.to_string().contains("headers store format"), "{err}");
    assert!(path.join("CURRENT").is_file(), "the kstate store is left");
    meta_record(&path, b"kafka_headers", held);
    // handed back as Kafka 4.4's store of the combination wrote it: the same records (base and
    // index) in sessionKeyValueWithHeaders, byte for byte, and its offsets; adopted again
    let done = kstate::store::export_segmented_to_kafka(&path).unwrap();
    assert_eq!(done.records, m.entries.len() as u64);
    assert_exported_in(
        &path,
        &want,
        "sessionKeyValueWithHeaders",
        "headers sessions",
    );
    let s = SessionStore::open(&path, &options).unwrap();
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(77));
    check_session_queries(&s, &m, Isolation::ReadCommitted, &mut rng, "adopted again");
    s.close().unwrap();
}

/// Reads the kstate metadata record `key` of the closed store at `path` and replaces it with
/// `put` (deleted when `None`), returning what it held.
fn meta_record(path: &Path, key: &[u8], put: Option<Vec<u8>>) -> Option<Vec<u8>> {
    let opts = rocksdb::Options::default();
    let cfs = rocksdb::DB::list_cf(&opts, path).unwrap();
    let db = rocksdb::DB::open_cf(&opts, path, &cfs).unwrap();
    let meta = db.cf_handle("kstate_meta").unwrap();
    let held = db.get_cf(meta, key).unwrap();
    match put {
        Some(v) => db.put_cf(meta, key, v).unwrap(),
        None => db.delete_cf(meta, key).unwrap(),
    }
    db.flush_cf(meta).unwrap();
    held
}

/// Kafka's time-ordered segments whose newest says it was left open (`status` 1: Kafka Streams
/// was killed) are refused untouched by default, as Kafka refuses them under exactly-once, and
/// adopted like closed ones (offsets, position, every record) under `adopt_left_open`, as Kafka
/// opens them under at-least-once; `check_adoption` agrees with each.
#[test]
fn kafkas_time_ordered_segments_left_open_are_adopted_when_allowed() {
    use kstate::store::{check_adoption, PlannedStore};
    for session in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(if session { "sessions" } else { "counts" });
        let m = random_model(session, 0x5EED_0011 + session as u64, 400);
        write_kafka_time_ordered(&path, &m, session, false);
        let newest = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .max_by_key(|p| {
                let name = p.file_name().unwrap().to_str().unwrap().to_string();
                name.rsplit('.').next().unwrap().parse::<i64>().unwrap()
            })
            .unwrap();
        {
            let db = rocksdb::DB::open_cf(
                &rocksdb::Options::default(),
                &newest,
                ["default", "offsets"],
            )
            .unwrap();
            db.put_cf(db.cf_handle("offsets").unwrap(), b"status", be(1))
                .unwrap();
            db.flush_cf(db.cf_handle("offsets").unwrap()).unwrap();
        }
        let planned = |allow: bool| {
            if session {
                let mut options = session_options(EngineKind::RocksDb);
                options.store.adopt_left_open = allow;
                PlannedStore::Session {
                    path: path.clone(),
                    options,
                }
            } else {
                let mut options = window_options(EngineKind::RocksDb);
                options.store.adopt_left_open = allow;
                PlannedStore::Window {
                    path: path.clone(),
                    options,
                }
            }
        };
        let open = |allow: bool| -> kstate::Result<()> {
            match planned(allow) {
                PlannedStore::Session { options, .. } => {
                    SessionStore::open(&path, &options)?.close()
                }
                PlannedStore::Window { options, .. } => WindowStore::open(&path, &options)?.close(),
                PlannedStore::KeyValue { .. } | PlannedStore::Versioned { .. } => unreachable!(),
            }
        };
        let before = snapshot(&path);
        let err = check_adoption(&[planned(false)]).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Corruption, "{err}");
        let err = open(false).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Corruption, "{err}");
        assert!(err.to_string().contains("left open"), "{err}");
        assert_eq!(
            check_adoption(&[planned(true)]).unwrap(),
            vec![path.clone()]
        );
        assert!(snapshot(&path) == before, "Kafka's directory changed");
        open(true).unwrap();
        assert!(path.join("CURRENT").is_file(), "adopted in place");
        let mut rng = Rng(11);
        if session {
            let s = SessionStore::open(&path, &session_options(EngineKind::RocksDb)).unwrap();
            assert_eq!(s.committed_offset(&tp()).unwrap(), Some(77));
            assert_eq!(
                s.committed_metadata().unwrap(),
                Some(adapter_position(0, 999))
            );
            check_session_queries(&s, &m, Isolation::ReadCommitted, &mut rng, "left open");
            s.close().unwrap();
        } else {
            let w = WindowStore::open(&path, &window_options(EngineKind::RocksDb)).unwrap();
            assert_eq!(w.committed_offset(&tp()).unwrap(), Some(77));
            assert_eq!(
                w.committed_metadata().unwrap(),
                Some(adapter_position(0, 999))
            );
            check_window_queries(
                &w,
                &m,
                Isolation::ReadCommitted,
                &mut rng,
                "left open",
                false,
            );
            w.close().unwrap();
        }
    }
}

/// Kafka's regular segments (key-first keys) are refused untouched by a time-ordered store.
#[test]
fn kafkas_regular_segments_are_refused_by_a_time_ordered_store() {
    use kstate::format::segmented::{session_key, window_key};
    let dir = tempfile::tempdir().unwrap();
    for (name, session) in [("w", false), ("s", true)] {
        let path = dir.path().join(name);
        for start in [0i64, 100] {
            let db = rocksdb::DB::open_default(path.join(format!("{name}.{start}"))).unwrap();
            for key in [&b"key"[..], b"\x00\x00", b"\x01k"] {
                if session {
                    db.put(session_key(key, start, start + 10), b"agg").unwrap();
                } else {
                    db.put(window_key(key, start, 0), b"00000000v").unwrap();
                }
            }
            db.flush().unwrap();
        }
        let before = snapshot(&path);
        let err = if session {
            SessionStore::open(&path, &session_options(EngineKind::RocksDb)).unwrap_err()
        } else {
            WindowStore::open(&path, &window_options(EngineKind::RocksDb)).unwrap_err()
        };
        assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
        assert!(err.to_string().contains("time-ordered"), "{err}");
        assert!(snapshot(&path) == before, "Kafka's directory changed");
    }
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

/// SIGKILLs `kstate-test-worker adopt-worker` adopting Kafka's time-ordered window (with index) and
/// session stores at random moments, through the exchange and the marker-file fallback, with
/// crash points armed in some rounds under `--features failpoints`: the directory is Kafka's,
/// byte-identical, or kstate's complete store, and the next open always gives the complete
/// adopted store (every query equal to the model, Kafka's offset). `KSTATE_ADOPT_KILLS` sets
/// the number of kills (default 20).
#[test]
fn kills_during_a_time_ordered_adoption_leave_kafkas_directory_or_the_whole_store() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let kills: usize = std::env::var("KSTATE_ADOPT_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let fixtures: Vec<(bool, Model, PathBuf)> = [false, true]
        .into_iter()
        .map(|session| {
            let m = random_model(session, 0xC0FFEE + session as u64, 20_000);
            let template = dir.path().join(format!("template-{session}")).join("store");
            write_kafka_time_ordered(&template, &m, session, true);
            (session, m, template)
        })
        .collect();
    // by path inside the store directory: the templates and the live copy compare
    let relative = |d: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        snapshot(d)
            .into_iter()
            .map(|(p, v)| (p.strip_prefix(d).unwrap().to_path_buf(), v))
            .collect()
    };
    let snapshots: Vec<_> = fixtures.iter().map(|(_, _, t)| relative(t)).collect();
    let path = dir.path().join("live").join("store");
    let fresh = |t: &Path| {
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
        copy_tree(t, &path);
    };
    let worker = |session: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"));
        let kind = if session {
            "time-ordered-session"
        } else {
            "time-ordered-window"
        };
        cmd.arg("adopt-worker")
            .arg("--dir")
            .arg(&path)
            .args(["--kind", kind, "--retention", &RETENTION.to_string()])
            .args(["--segment-interval", &INTERVAL.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env_remove("KSTATE_FAILPOINT_ODDS")
            .env_remove("KSTATE_SWAP_NO_EXCHANGE");
        cmd
    };
    // Kill moments are drawn over this machine's time for a whole adoption (KillWindow).
    let measure = |(session, _, template): &(bool, Model, PathBuf)| {
        fresh(template);
        let started = Instant::now();
        let out = worker(*session).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        u64::try_from(started.elapsed().as_millis()).unwrap()
    };
    let mut window =
        kill_window::KillWindow::measured("a time-ordered adoption", measure(&fixtures[0]));
    let mut rng = Rng(0xAD0 ^ u64::from(std::process::id()));
    let (mut untouched, mut adopted, mut between, mut killed) = (0, 0, 0, 0);
    let mut round = 0;
    while killed < kills {
        assert!(round < 4 * kills, "only {killed} kills in {round} rounds");
        let i = round % fixtures.len();
        window.before_round(round, adopted > 0, || measure(&fixtures[i]));
        let (session, m, template) = &fixtures[i];
        fresh(template);
        let mut cmd = worker(*session);
        if round % 4 == 1 {
            cmd.env("KSTATE_SWAP_NO_EXCHANGE", "1");
        }
        if round % 3 == 2 {
            cmd.env("KSTATE_FAILPOINT_ODDS", "8");
        }
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(rng.next(window.span_ms())));
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
                relative(&path) == snapshots[i],
                "round {round}: Kafka's directory changed"
            );
            untouched += 1;
        } else {
            between += 1;
        }
        let what = format!("round {round}");
        if *session {
            let s = SessionStore::open(&path, &session_options(EngineKind::RocksDb)).unwrap();
            assert_eq!(s.committed_offset(&tp()).unwrap(), Some(77), "{what}");
            check_session_queries(&s, m, Isolation::ReadCommitted, &mut rng, &what);
            s.close().unwrap();
        } else {
            let options = window_options(EngineKind::RocksDb).time_ordered(true);
            let w = WindowStore::open(&path, &options).unwrap();
            assert_eq!(w.committed_offset(&tp()).unwrap(), Some(77), "{what}");
            check_window_queries(&w, m, Isolation::ReadCommitted, &mut rng, &what, true);
            w.close().unwrap();
        }
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

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The records of `family` in each segment database of Kafka's store at `path`, by the
/// segment directory's name (read-only: the store is read as Kafka would find it).
fn kafka_family(path: &Path, family: &str) -> BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(path).unwrap() {
        let e = e.unwrap();
        let opts = rocksdb::Options::default();
        let cfs = rocksdb::DB::list_cf(&opts, e.path()).unwrap();
        let db = rocksdb::DB::open_cf_for_read_only(&opts, e.path(), &cfs, false).unwrap();
        let records = db
            .iterator_cf(db.cf_handle(family).unwrap(), rocksdb::IteratorMode::Start)
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        out.insert(e.file_name().to_string_lossy().into_owned(), records);
    }
    out
}

/// The column families of each segment database of the store at `path`.
fn kafka_families(path: &Path) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(path).unwrap() {
        let mut cfs =
            rocksdb::DB::list_cf(&rocksdb::Options::default(), e.unwrap().path()).unwrap();
        cfs.sort();
        out.push(cfs);
    }
    out
}

/// Kafka's records of each segment (by directory name), and the `offsets` family every
/// segment holds.
type Exported = (
    BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>,
    BTreeMap<Vec<u8>, Vec<u8>>,
);

/// What the export of a store adopted from [`write_kafka_time_ordered`] must write: Kafka's
/// records of every live segment exactly (the expired segment the adoption left out is gone),
/// and in every segment the `offsets` family of the newest one (offset 77, its position,
/// status 0).
fn expected_export(kafka_dir: &Path) -> Exported {
    expected_export_in(kafka_dir, "default")
}

/// As [`expected_export`], Kafka's records in `family` (see [`write_kafka_time_ordered_in`]).
fn expected_export_in(kafka_dir: &Path, family: &str) -> Exported {
    let name = kafka_dir.file_name().unwrap().to_str().unwrap().to_string();
    let mut records = kafka_family(kafka_dir, family);
    assert!(records.remove(&format!("{name}.0")).is_some());
    // The export writes Kafka's `PositionSerde` bytes without the zero padding Kafka's own
    // serde buffer leaves (Kafka reads both; SegmentExportTest checks it on Kafka itself).
    let mut position = kafka_position("in", 0, 999);
    position.truncate(position.len() - 16);
    let offsets = [
        (b"status".to_vec(), be(0).to_vec()),
        (b"to-changelog-0".to_vec(), be(77).to_vec()),
        (b"position".to_vec(), position),
    ]
    .into();
    (records, offsets)
}

/// Checks that `path` holds exactly Kafka's time-ordered segments `want` (records in
/// `default`, Kafka's `offsets` family in each) and nothing of kstate's.
fn assert_exported(path: &Path, want: &Exported, what: &str) {
    assert_exported_in(path, want, "default", what);
}

/// As [`assert_exported`], the records in `family` (`default` then empty, as in Kafka's
/// segments of the DSL's headers store format).
fn assert_exported_in(path: &Path, want: &Exported, family: &str, what: &str) {
    assert!(!path.join("CURRENT").exists(), "{what}: no kstate store");
    let name = path.file_name().unwrap().to_string_lossy();
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!(".{name}.")))
        .collect();
    assert!(
        leftovers.is_empty(),
        "{what}: kstate files left {leftovers:?}"
    );
    let mut expected_families = vec!["default", "offsets", family];
    expected_families.sort();
    expected_families.dedup();
    for families in kafka_families(path) {
        assert_eq!(families, expected_families, "{what}");
        if family != "default" {
            assert!(
                kafka_family(path, "default").values().all(|r| r.is_empty()),
                "{what}: default left empty"
            );
        }
    }
    let records = kafka_family(path, family);
    assert_eq!(
        records.keys().collect::<Vec<_>>(),
        want.0.keys().collect::<Vec<_>>(),
        "{what}: segments"
    );
    assert!(records == want.0, "{what}: Kafka's records");
    for (segment, offsets) in kafka_family(path, "offsets") {
        assert_eq!(offsets, want.1, "{what}: offsets family of {segment}");
    }
}

/// The way back (issue #26): Kafka's time-ordered window (with and without its key index)
/// and session stores adopted by kstate, exported again (`export_segmented_to_kafka`):
/// the directory holds exactly Kafka's records of the live segments (time-first base records,
/// index records exactly when Kafka's store has the index) and its offsets; adopted again,
/// every query answers the model. The window store's `hasIndex` is the one its last opener
/// gave (recorded in its metadata), and a store without that record (an earlier kstate's) is
/// refused until it is opened.
#[test]
fn time_ordered_stores_export_to_kafkas_layout_and_adopt_again() {
    for index in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        // window: adopted by an opener with the other hasIndex, reopened with this one
        let kafka = dir.path().join("kafka").join("counts");
        let m = random_model(false, 0xE0_0001 + index as u64, 800);
        write_kafka_time_ordered(&kafka, &m, false, index);
        let want = expected_export(&kafka);
        let path = dir.path().join("task").join("counts");
        copy_tree(&kafka, &path);
        let options = window_options(EngineKind::RocksDb).time_ordered(index);
        WindowStore::open(
            &path,
            &window_options(EngineKind::RocksDb).time_ordered(!index),
        )
        .unwrap()
        .close()
        .unwrap();
        WindowStore::open(&path, &options).unwrap().close().unwrap();
        let done = kstate::store::export_segmented_to_kafka(&path).unwrap();
        assert_eq!(done.records, m.entries.len() as u64);
        assert_eq!(done.segments, want.0.len());
        assert_exported(&path, &want, &format!("window, index {index}"));
        let mut rng = Rng(11);
        let w = WindowStore::open(&path, &options).unwrap();
        assert_eq!(w.committed_offset(&tp()).unwrap(), Some(77));
        assert_eq!(
            w.committed_metadata().unwrap(),
            Some(adapter_position(0, 999))
        );
        check_window_queries(
            &w,
            &m,
            Isolation::ReadCommitted,
            &mut rng,
            "adopted again",
            index,
        );
        w.close().unwrap();

        // session (Kafka's DSL always keeps the index of a time-ordered session store)
        let kafka = dir.path().join("kafka").join("sessions");
        let m = random_model(true, 0xE0_0003 + index as u64, 800);
        write_kafka_time_ordered(&kafka, &m, true, true);
        let want = expected_export(&kafka);
        let path = dir.path().join("task").join("sessions");
        copy_tree(&kafka, &path);
        SessionStore::open(&path, &session_options(EngineKind::RocksDb))
            .unwrap()
            .close()
            .unwrap();
        let done = kstate::store::export_segmented_to_kafka(&path).unwrap();
        assert_eq!(done.records, m.entries.len() as u64);
        assert_exported(&path, &want, "session");
        let s = SessionStore::open(&path, &session_options(EngineKind::RocksDb)).unwrap();
        assert_eq!(s.committed_offset(&tp()).unwrap(), Some(77));
        check_session_queries(&s, &m, Isolation::ReadCommitted, &mut rng, "adopted again");
        s.close().unwrap();
    }

    // A time-ordered window store without the record of Kafka's hasIndex (created by an
    // earlier kstate): refused, the store left as it was; opened once, it exports.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w");
    let options = window_options(EngineKind::RocksDb).time_ordered(true);
    let w = WindowStore::open(&path, &options).unwrap();
    w.put_raw(b"k", Some(b"00000000v"), 100).unwrap();
    w.commit(&[(tp(), Some(5))], None).unwrap();
    w.close().unwrap();
    {
        let opts = rocksdb::Options::default();
        let cfs = rocksdb::DB::list_cf(&opts, &path).unwrap();
        let db = rocksdb::DB::open_cf(&opts, &path, &cfs).unwrap();
        let meta = db.cf_handle("kstate_meta").unwrap();
        assert!(db.get_cf(meta, b"kafka_index").unwrap().is_some());
        db.delete_cf(meta, b"kafka_index").unwrap();
        db.flush_cf(meta).unwrap();
    }
    let err = kstate::store::export_segmented_to_kafka(&path).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    assert!(err.to_string().contains("hasIndex"), "{err}");
    let w = WindowStore::open(&path, &options).unwrap();
    assert_eq!(w.committed_offset(&tp()).unwrap(), Some(5));
    assert_eq!(windows(w.fetch_all(0, 1_000).unwrap()).len(), 1);
    w.close().unwrap();
    let done = kstate::store::export_segmented_to_kafka(&path).unwrap();
    assert_eq!((done.segments, done.records), (1, 1));
    let records = kafka_family(&path, "default");
    let mut base = vec![0u8];
    base.extend_from_slice(&be(100));
    base.extend_from_slice(b"k");
    base.extend_from_slice(&0i32.to_be_bytes());
    let mut idx = vec![1u8];
    idx.extend_from_slice(b"k");
    idx.extend_from_slice(&be(100));
    idx.extend_from_slice(&0i32.to_be_bytes());
    let want: BTreeMap<Vec<u8>, Vec<u8>> =
        [(base, b"00000000v".to_vec()), (idx, Vec::new())].into();
    assert!(records["w.100"] == want, "{records:?}");
}

/// SIGKILLs of `kstate export --to kafka` on a time-ordered window store (adopted from
/// Kafka's directory with the key index, 20,000 writes): at random moments and, with the
/// `failpoints` feature, at the steps around its exchange. The directory then holds the
/// complete kstate store (its committed offset, every query as the model) or exactly Kafka's
/// segments; a rerun leaves exactly Kafka's segments. `KSTATE_EXPORT_KILLS` sets the number
/// of killed exports (default 6).
#[test]
fn kills_during_a_time_ordered_export_leave_the_kstate_store_or_kafkas_segments() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let kills: usize = std::env::var("KSTATE_EXPORT_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    let dir = tempfile::tempdir().unwrap();
    let kafka = dir.path().join("kafka").join("store");
    let m = random_model(false, 0xE0_0005, 20_000);
    write_kafka_time_ordered(&kafka, &m, false, true);
    let want = expected_export(&kafka);
    let options = window_options(EngineKind::RocksDb).time_ordered(true);
    let template = dir.path().join("template").join("store");
    copy_tree(&kafka, &template);
    WindowStore::open(&template, &options)
        .unwrap()
        .close()
        .unwrap();
    let export = |path: &Path| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate"));
        cmd.args(["export", "--to", "kafka"])
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env_remove("KSTATE_FAILPOINT_ODDS")
            .env_remove("KSTATE_FAILPOINT_ONLY");
        cmd
    };
    let calibration = dir.path().join("calibration").join("store");
    copy_tree(&template, &calibration);
    let started = Instant::now();
    let out = export(&calibration).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let span = (started.elapsed().as_millis() as u64 * 11 / 10).max(20);
    assert_exported(&calibration, &want, "export without kills");
    let mut rng = Rng(0xE0_0006 ^ u64::from(std::process::id()));
    let (mut kstate_seen, mut kafka_seen, mut killed) = (0, 0, 0);
    let mut round = 0;
    while killed < kills {
        assert!(round < 6 * kills, "only {killed} kills in {round} rounds");
        let path = dir.path().join(format!("r{round}")).join("store");
        copy_tree(&template, &path);
        let mut cmd = export(&path);
        const STEPS: [&str; 3] = [
            "swap-before-exchange",
            "swap-after-exchange",
            "export-segmented-exchanged",
        ];
        if cfg!(feature = "failpoints") && round % 2 == 0 {
            cmd.env("KSTATE_FAILPOINT_ODDS", "1")
                .env("KSTATE_FAILPOINT_ONLY", STEPS[(round / 2) % STEPS.len()]);
        }
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(rng.next(2 * span)));
        if child.try_wait().unwrap().is_none() {
            let _ = child.kill();
        }
        let status = child.wait().unwrap();
        killed += usize::from(status.code().is_none());
        let what = format!("round {round}");
        if path.join("CURRENT").is_file() {
            kstate_seen += 1;
            let w = WindowStore::open(&path, &options).unwrap();
            assert_eq!(w.committed_offset(&tp()).unwrap(), Some(77), "{what}");
            check_window_queries(&w, &m, Isolation::ReadCommitted, &mut rng, &what, true);
            w.close().unwrap();
        } else {
            kafka_seen += 1;
            let records = kafka_family(&path, "default");
            assert!(records == want.0, "{what}: Kafka's records");
        }
        let out = export(&path).output().unwrap();
        assert!(
            out.status.success(),
            "{what}: the rerun failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_exported(&path, &want, &what);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
        round += 1;
    }
    println!(
        "{round} time-ordered exports, {killed} SIGKILLed: {kstate_seen} left the kstate \
         store, {kafka_seen} Kafka's segments"
    );
    assert!(kstate_seen > 0 || !cfg!(feature = "failpoints"));
}
