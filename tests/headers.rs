//! The headers value format (KIP-1271, Kafka Streams 4.3+): a third kstate format whose
//! values are Kafka's `[varint headersSize][headers][ts][value]`, and its upgrades from the
//! timestamped and plain formats: lazy (reads convert with no headers, writes migrate the
//! key in the same transaction), by `upgrade_step`, offline with `kstate upgrade --to
//! headers`, and adoption of Kafka's `RocksDBTimestampedStoreWithHeaders` directories.
//! Checked against models through random operations, commits, rollbacks and reopens.

use std::collections::BTreeMap;
use std::path::Path;

use kstate::format::{headers, value};
use kstate::{
    ErrorCode, Header, Isolation, KeyRange, KvStore, StoreOptions, TopicPartition, ValueFormat,
    ValueTimestampHeaders,
};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn tp() -> TopicPartition {
    TopicPartition::new("headers-changelog", 0)
}

fn key(i: u64) -> Vec<u8> {
    format!("key-{i:04}").into_bytes()
}

fn opts(format: ValueFormat) -> StoreOptions {
    StoreOptions {
        value_format: format,
        ..StoreOptions::default()
    }
}

fn scan(s: &KvStore, isolation: Isolation, reverse: bool) -> Map {
    let entries: Vec<(Vec<u8>, Vec<u8>)> = s
        .scan(isolation, &KeyRange::all(), reverse)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    let mut keys: Vec<&Vec<u8>> = entries.iter().map(|(k, _)| k).collect();
    if reverse {
        keys.reverse();
    }
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "order");
    entries.into_iter().collect()
}

/// A timestamped kstate store with `n` committed values at offset 7; the model holds them
/// as a headers-format store shows them (no headers).
fn timestamped_store(path: &Path, n: u64) -> Map {
    let s = KvStore::open(path, &opts(ValueFormat::Timestamped)).unwrap();
    let mut model = Map::new();
    for i in 0..n {
        let v = format!("ts-{i}").into_bytes();
        s.put(&key(i), &v, i as i64 * 10).unwrap();
        model.insert(
            key(i),
            headers::from_timestamped(&value::encode(&v, i as i64 * 10)),
        );
    }
    s.commit(&[(tp(), Some(7))], Some(b"pos")).unwrap();
    s.close().unwrap();
    model
}

fn sample_headers(i: u64) -> Vec<Header> {
    match i % 3 {
        0 => vec![],
        1 => vec![Header::new("trace", Some(i.to_be_bytes().to_vec()))],
        _ => vec![
            Header::new("a", None),
            Header::new("a", Some(vec![])),
            Header::new("ü", Some(b"x".to_vec())),
        ],
    }
}

#[test]
fn a_headers_store_keeps_headers_and_speaks_kafkas_layout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h");
    let s = KvStore::open(&path, &opts(ValueFormat::Headers)).unwrap();
    let v = ValueTimestampHeaders::new(b"val".to_vec(), 99, sample_headers(2));
    s.put_with_headers(b"a", &v).unwrap();
    assert_eq!(s.get_with_headers(b"a").unwrap(), Some(v.clone()));
    // The typed timestamped API drops headers on read and writes none.
    assert_eq!(s.get(b"a").unwrap().unwrap().timestamp, 99);
    s.put(b"b", b"plain-api", 5).unwrap();
    let raw = s.get_raw(b"b").unwrap().unwrap();
    let mut expected = vec![0u8];
    expected.extend_from_slice(&5i64.to_be_bytes());
    expected.extend_from_slice(b"plain-api");
    assert_eq!(raw, expected, "no headers: headersSize 0, then [ts][value]");
    // Malformed raw values are refused, well-formed ones taken as they are.
    for bad in [&b""[..], &[0x00, 1, 2], &[0x01, 0, 0, 0, 0, 0, 0, 0, 0]] {
        assert_eq!(
            s.put_raw(b"x", Some(bad)).unwrap_err().code(),
            ErrorCode::InvalidValue
        );
    }
    s.put_raw(b"c", Some(&v.encode().unwrap())).unwrap();
    let mut it = s.all().unwrap();
    let (k, first) = it.next_with_headers().unwrap().unwrap();
    assert_eq!((k.as_slice(), first), (&b"a"[..], v.clone()));
    let (_, second) = it.next_timestamped().unwrap().unwrap();
    assert_eq!(
        (second.value.as_slice(), second.timestamp),
        (&b"plain-api"[..], 5)
    );
    drop(it);
    s.commit(&[(tp(), Some(3))], None).unwrap();
    s.close().unwrap();
    // A headers store opens only as headers.
    for older in [ValueFormat::Timestamped, ValueFormat::Plain] {
        assert_eq!(
            KvStore::open(&path, &opts(older)).unwrap_err().code(),
            ErrorCode::FormatMismatch
        );
    }
    let s = KvStore::open(&path, &opts(ValueFormat::Headers)).unwrap();
    assert!(!s.is_upgrading());
    assert_eq!(s.get_with_headers(b"c").unwrap(), Some(v));
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(3));
    // Header-specific calls need a headers store.
    let t = KvStore::open_in_memory(&StoreOptions::default()).unwrap();
    assert_eq!(
        t.get_with_headers(b"a").unwrap_err().code(),
        ErrorCode::FormatMismatch
    );
    s.close().unwrap();
    let report = kstate::store::inspect::inspect(&path).unwrap();
    assert_eq!(report.header.unwrap().value_format, ValueFormat::Headers);
    assert!(kstate::store::inspect::verify(&path)
        .unwrap()
        .problems
        .is_empty());
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Random puts (with headers), deletes, putIfAbsent, commits, rollbacks and reopens on a
/// timestamped store opened as headers: every read, scan (both directions, both isolation
/// levels) and the committed offsets match the model; the old family drains as keys are
/// written, and `upgrade_step` finishes the job; the next open runs in regular mode.
#[test]
fn a_timestamped_store_opened_as_headers_upgrades_lazily_against_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let mut committed = timestamped_store(&path, 300);
    let mut current = committed.clone();
    let mut offset = 7;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut s = KvStore::open(&path, &opts(ValueFormat::Headers)).unwrap();
    assert!(s.is_upgrading());
    assert_eq!(scan(&s, Isolation::ReadCommitted, false), committed);
    assert_eq!(
        s.committed_metadata().unwrap().as_deref(),
        Some(&b"pos"[..])
    );
    for step in 0..3_000u64 {
        let k = key(rng.next() % 400);
        match rng.next() % 100 {
            0..=39 => {
                let v = ValueTimestampHeaders::new(
                    format!("v{step}").into_bytes(),
                    step as i64,
                    sample_headers(step),
                );
                s.put_with_headers(&k, &v).unwrap();
                current.insert(k, v.encode().unwrap());
            }
            40..=54 => {
                let before = s.delete_raw(&k).unwrap();
                assert_eq!(before, current.remove(&k));
            }
            55..=64 => {
                let raw = headers::encode(b"pia", 1, &[]).unwrap();
                let existing = s.put_if_absent_raw(&k, &raw).unwrap();
                assert_eq!(existing.as_ref(), current.get(&k));
                current.entry(k).or_insert(raw);
            }
            65..=79 => assert_eq!(s.get_raw(&k).unwrap().as_ref(), current.get(&k)),
            80..=84 => {
                assert_eq!(
                    s.get_raw_with(Isolation::ReadCommitted, &k)
                        .unwrap()
                        .as_ref(),
                    committed.get(&k)
                );
            }
            85..=92 => {
                offset += 1;
                s.commit(&[(tp(), Some(offset))], None).unwrap();
                committed = current.clone();
            }
            93..=95 => {
                s.rollback().unwrap();
                current = committed.clone();
            }
            _ => {
                s.close().unwrap();
                current = committed.clone();
                s = KvStore::open(&path, &opts(ValueFormat::Headers)).unwrap();
                assert_eq!(s.committed_offset(&tp()).unwrap(), Some(offset));
            }
        }
        if step % 500 == 0 {
            assert_eq!(scan(&s, Isolation::ReadUncommitted, false), current);
            assert_eq!(scan(&s, Isolation::ReadUncommitted, true), current);
            assert_eq!(scan(&s, Isolation::ReadCommitted, true), committed);
        }
    }
    s.commit(&[(tp(), Some(offset))], None).unwrap();
    committed = current.clone();
    while s.upgrade_step(37).unwrap() > 0 {}
    assert_eq!(scan(&s, Isolation::ReadCommitted, false), committed);
    s.close().unwrap();
    let report = kstate::store::inspect::inspect(&path).unwrap();
    assert_eq!(report.values_to_upgrade, 0);
    let s = KvStore::open(&path, &opts(ValueFormat::Headers)).unwrap();
    assert!(!s.is_upgrading(), "no old value left: regular mode");
    assert_eq!(scan(&s, Isolation::ReadCommitted, false), committed);
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(offset));
    s.close().unwrap();
    assert!(kstate::store::inspect::verify(&path)
        .unwrap()
        .problems
        .is_empty());
}

#[test]
fn plain_to_headers_in_one_step_and_two_old_families_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // A plain store opened as headers: timestamp -1, no headers (Kafka's
    // convertFromPlainToHeaderFormat).
    let plain = dir.path().join("plain");
    let s = KvStore::open(&plain, &opts(ValueFormat::Plain)).unwrap();
    s.put_raw(b"p", Some(b"pv")).unwrap();
    s.commit(&[(tp(), Some(1))], None).unwrap();
    s.close().unwrap();
    let s = KvStore::open(&plain, &opts(ValueFormat::Headers)).unwrap();
    assert!(s.is_upgrading());
    assert_eq!(s.get_raw(b"p").unwrap(), Some(headers::from_plain(b"pv")));
    assert_eq!(s.get(b"p").unwrap().unwrap().timestamp, -1);
    assert_eq!(s.upgrade_step(10).unwrap(), 1);
    s.close().unwrap();

    // A timestamped store still holding plain values: refused as headers, unchanged.
    let mixed = dir.path().join("mixed");
    let s = KvStore::open(&mixed, &opts(ValueFormat::Plain)).unwrap();
    s.put_raw(b"a", Some(b"1")).unwrap();
    s.put_raw(b"b", Some(b"2")).unwrap();
    s.commit(&[], None).unwrap();
    s.close().unwrap();
    let s = KvStore::open(&mixed, &opts(ValueFormat::Timestamped)).unwrap();
    s.put(b"a", b"1t", 4).unwrap();
    s.commit(&[], None).unwrap();
    s.close().unwrap();
    let err = KvStore::open(&mixed, &opts(ValueFormat::Headers)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");
    assert!(err.to_string().contains("both"), "{err}");
    let s = KvStore::open(&mixed, &opts(ValueFormat::Timestamped)).unwrap();
    assert!(s.is_upgrading(), "still the timestamped store it was");
    while s.upgrade_step(10).unwrap() > 0 {}
    s.close().unwrap();
    let s = KvStore::open(&mixed, &opts(ValueFormat::Headers)).unwrap();
    assert_eq!(
        s.get_raw(b"b").unwrap(),
        Some(headers::from_timestamped(&value::encode(b"2", -1)))
    );
    assert_eq!(
        s.get_raw(b"a").unwrap(),
        Some(headers::from_timestamped(&value::encode(b"1t", 4)))
    );
    s.close().unwrap();
}

fn kafka_store(path: &Path, families: &[&str], entries: &[(&str, &[u8], &[u8])]) {
    let mut o = rocksdb::Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    let db = rocksdb::DB::open_cf(&o, path, families).unwrap();
    for (cf, k, v) in entries {
        db.put_cf(db.cf_handle(cf).unwrap(), k, v).unwrap();
    }
}

/// Kafka 4.4's `RocksDBTimestampedStoreWithHeaders` directory, mid-upgrade from a
/// timestamped store (its `keyValueWithTimestamp` family still has a value), adopted: the
/// offsets survive, both families read in the headers layout.
#[test]
fn kafka_headers_directories_are_adopted_with_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kafka");
    let with_headers =
        headers::encode(b"hv", 12, &[Header::new("h", Some(b"1".to_vec()))]).unwrap();
    let old = value::encode(b"tv", 34);
    kafka_store(
        &path,
        &[
            "default",
            "keyValueWithTimestamp",
            "keyValueWithTimestampAndHeaders",
            "offsets",
        ],
        &[
            ("keyValueWithTimestampAndHeaders", b"h", &with_headers),
            ("keyValueWithTimestamp", b"t", &old),
            ("offsets", b"app-store-changelog-2", &55i64.to_be_bytes()),
            ("offsets", b"status", &0i64.to_be_bytes()),
        ],
    );
    // Not as timestamped: it holds headers values.
    assert_eq!(
        KvStore::open(&path, &opts(ValueFormat::Timestamped))
            .unwrap_err()
            .code(),
        ErrorCode::FormatMismatch
    );
    let s = KvStore::open(&path, &opts(ValueFormat::Headers)).unwrap();
    assert!(s.is_upgrading());
    let changelog = TopicPartition::new("app-store-changelog", 2);
    assert_eq!(s.committed_offset(&changelog).unwrap(), Some(55));
    assert_eq!(s.get_raw(b"h").unwrap(), Some(with_headers.clone()));
    assert_eq!(
        s.get_raw(b"t").unwrap(),
        Some(headers::from_timestamped(&old))
    );
    s.close().unwrap();
    let s = KvStore::open(&path, &opts(ValueFormat::Headers)).unwrap();
    assert_eq!(s.committed_offset(&changelog).unwrap(), Some(55));
    s.close().unwrap();
}

/// `kstate upgrade --to headers` over a state directory: a timestamped kstate store, a
/// plain one, a timestamped store whose plain upgrade is unfinished (two steps), and a
/// Kafka `RocksDBTimestampedStore`, each killed with SIGKILL at random moments and run again
/// until it succeeds; every store ends in the headers format in regular mode with exactly
/// its values (converted) and offsets.
#[test]
fn offline_upgrade_to_headers_survives_kills() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("app");
    let ts = state.join("0_0").join("ts");
    let plain = state.join("0_1").join("plain");
    let mixed = state.join("0_2").join("mixed");
    let kafka = state.join("0_3").join("rocksdb").join("kafka");
    let mut models: Vec<(&Path, Map, Option<i64>)> = Vec::new();
    models.push((&ts, timestamped_store(&ts, 20_000), Some(7)));
    {
        let s = KvStore::open(&plain, &opts(ValueFormat::Plain)).unwrap();
        let mut m = Map::new();
        for i in 0..5_000 {
            s.put_raw(&key(i), Some(b"p")).unwrap();
            m.insert(key(i), headers::from_plain(b"p"));
        }
        s.commit(&[(tp(), Some(8))], None).unwrap();
        s.close().unwrap();
        models.push((&plain, m, Some(8)));
    }
    {
        let s = KvStore::open(&mixed, &opts(ValueFormat::Plain)).unwrap();
        let mut m = Map::new();
        for i in 0..5_000 {
            s.put_raw(&key(i), Some(b"m")).unwrap();
            m.insert(key(i), headers::from_plain(b"m"));
        }
        s.commit(&[(tp(), Some(9))], None).unwrap();
        s.close().unwrap();
        let s = KvStore::open(&mixed, &opts(ValueFormat::Timestamped)).unwrap();
        for i in 0..1_000 {
            s.put(&key(i), b"n", 3).unwrap();
            m.insert(key(i), headers::from_timestamped(&value::encode(b"n", 3)));
        }
        s.commit(&[(tp(), Some(10))], None).unwrap();
        s.close().unwrap();
        models.push((&mixed, m, Some(10)));
    }
    {
        let mut m = Map::new();
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&o, &kafka, ["default", "keyValueWithTimestamp", "offsets"])
            .unwrap();
        let cf = db.cf_handle("keyValueWithTimestamp").unwrap();
        for i in 0..10_000 {
            let v = value::encode(b"k", i as i64);
            db.put_cf(cf, key(i), &v).unwrap();
            m.insert(key(i), headers::from_timestamped(&v));
        }
        let off = db.cf_handle("offsets").unwrap();
        db.put_cf(off, b"headers-changelog-0", 77i64.to_be_bytes())
            .unwrap();
        db.put_cf(off, b"status", 0i64.to_be_bytes()).unwrap();
        models.push((&kafka, m, Some(77)));
    }
    let cli = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate"));
        cmd.arg("upgrade")
            .arg(&state)
            .args(["--to", "headers"])
            .args(args)
            .stdin(Stdio::null());
        cmd
    };
    let out = cli(&["--dry-run"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("Kafka Streams RocksDBTimestampedStore, 10000"),
        "{text}"
    );
    assert!(text.contains("kstate timestamped store, 5000"), "{text}");
    assert!(text.contains("to headers"), "{text}");

    let mut x = 0x2545_F491_4F6C_DD1Du64 ^ u64::from(std::process::id());
    let (mut kills, mut runs) = (0, 0);
    loop {
        runs += 1;
        assert!(runs < 200, "the upgrade never finished");
        let mut child = cli(&["--batch", "500"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::thread::sleep(std::time::Duration::from_millis(80 + x % 400));
        let status = match child.try_wait().unwrap() {
            Some(status) => status,
            None => {
                child.kill().unwrap();
                kills += 1;
                child.wait().unwrap()
            }
        };
        if status.success() {
            break;
        }
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "upgrade failed: {status:?}"
        );
    }
    println!("offline upgrade to headers: {kills} kills, {runs} runs");
    for (path, model, offset) in &models {
        let report = kstate::store::inspect::inspect(path).unwrap();
        assert_eq!(
            report.header.unwrap().value_format,
            ValueFormat::Headers,
            "{}",
            path.display()
        );
        assert_eq!(report.values_to_upgrade, 0, "{}", path.display());
        let s = KvStore::open(path, &opts(ValueFormat::Headers)).unwrap();
        assert!(!s.is_upgrading(), "{}", path.display());
        assert_eq!(
            &scan(&s, Isolation::ReadCommitted, false),
            model,
            "{}",
            path.display()
        );
        let committed = s.committed_offsets().unwrap();
        assert_eq!(
            committed.iter().map(|(_, o)| *o).next(),
            *offset,
            "{}",
            path.display()
        );
        s.close().unwrap();
    }
    let again = cli(&[]).output().unwrap();
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(text.contains("already in the headers format"), "{text}");
}

/// A session aggregate in Kafka's `AggregationWithHeaders` layout (headers under 64 bytes,
/// whose zig-zag varint size is one byte).
fn session_value(agg: &[u8], hs: &[Header]) -> Vec<u8> {
    let serialized = headers::encode_headers(hs).unwrap();
    assert!(serialized.len() < 64);
    let mut out = vec![(serialized.len() * 2) as u8];
    out.extend_from_slice(&serialized);
    out.extend_from_slice(agg);
    out
}

/// Window and session stores in the headers format: values in Kafka's layouts
/// (`ValueTimestampHeaders`, `AggregationWithHeaders`) are kept byte for byte, ill-formed
/// ones refused, and the format is fixed when the store is created: opening it in another
/// format, or an older store in this one, is FORMAT_MISMATCH, never a misreading.
#[test]
fn headers_window_and_session_stores_keep_kafkas_layouts_and_their_format() {
    use kstate::store::{SessionOptions, SessionStore, WindowOptions, WindowStore};
    let dir = tempfile::tempdir().unwrap();
    let (w_path, s_path) = (dir.path().join("w"), dir.path().join("s"));
    let window_opts = |f| WindowOptions::new(600_000, 60_000, false).with_store(opts(f));
    let session_opts = |f| SessionOptions::new(600_000).with_store(opts(f));
    let hs = sample_headers(2);
    let wv = ValueTimestampHeaders::new(b"v".to_vec(), 5, hs.clone())
        .encode()
        .unwrap();
    let sv = session_value(b"agg", &hs);
    {
        let w = WindowStore::open(&w_path, &window_opts(ValueFormat::Headers)).unwrap();
        let s = SessionStore::open(&s_path, &session_opts(ValueFormat::Headers)).unwrap();
        assert!(w.put_raw(b"k", Some(&wv), 60_000).unwrap());
        assert!(s.put(b"k", 10, 20, Some(&sv)).unwrap());
        // headersSize 1 with nothing after it; for a window value also no timestamp
        for bad in [vec![2u8], vec![0u8, 1, 2]] {
            let e = w.put_raw(b"k", Some(&bad), 60_000).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidValue, "{bad:?}");
        }
        let e = s.put(b"k", 10, 20, Some(&[2u8])).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue);
        // a session aggregate has no timestamp: one byte of headers size is enough
        assert!(s.put(b"e", 10, 20, Some(&[0u8])).unwrap());
        w.commit(&[(tp(), Some(1))], None).unwrap();
        s.commit(&[(tp(), Some(1))], None).unwrap();
    }
    for wrong in [ValueFormat::Timestamped, ValueFormat::Plain] {
        let e = WindowStore::open(&w_path, &window_opts(wrong)).unwrap_err();
        assert_eq!(
            e.code(),
            ErrorCode::FormatMismatch,
            "window opened {wrong:?}"
        );
    }
    let e = SessionStore::open(&s_path, &session_opts(ValueFormat::Plain)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::FormatMismatch);
    let w = WindowStore::open(&w_path, &window_opts(ValueFormat::Headers)).unwrap();
    let s = SessionStore::open(&s_path, &session_opts(ValueFormat::Headers)).unwrap();
    assert_eq!(
        w.fetch_raw_with(Isolation::ReadCommitted, b"k", 60_000)
            .unwrap(),
        Some(wv)
    );
    assert_eq!(
        s.fetch_session_with(Isolation::ReadCommitted, b"k", 10, 20)
            .unwrap(),
        Some(sv)
    );
    assert_eq!(w.committed_offset(&tp()).unwrap(), Some(1));
    drop((w, s));
    // older stores are not opened in the headers format either
    let (old_w, old_s) = (dir.path().join("old-w"), dir.path().join("old-s"));
    drop(WindowStore::open(&old_w, &window_opts(ValueFormat::Timestamped)).unwrap());
    drop(SessionStore::open(&old_s, &session_opts(ValueFormat::Plain)).unwrap());
    let e = WindowStore::open(&old_w, &window_opts(ValueFormat::Headers)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::FormatMismatch);
    let e = SessionStore::open(&old_s, &session_opts(ValueFormat::Headers)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::FormatMismatch);
}

/// Kafka 4.3+'s headers-format segment directories (window: `TimestampedSegmentWithHeaders`
/// values in `keyValueWithTimestampAndHeaders`; session: `SessionSegmentWithHeaders` values
/// in `sessionKeyValueWithHeaders`; older values still in `default`) are adopted with the
/// older values converted as Kafka's segments read them, and exported back to those
/// families.
#[test]
fn kafka_headers_segments_are_adopted_and_exported_back() {
    use kstate::format::segmented::{session_key, window_key};
    use kstate::store::{SessionOptions, SessionStore, WindowOptions, WindowStore};
    let dir = tempfile::tempdir().unwrap();
    let (w_path, s_path) = (dir.path().join("ws"), dir.path().join("ss"));
    let hs = sample_headers(3);
    let wv = ValueTimestampHeaders::new(b"new".to_vec(), 7, hs.clone())
        .encode()
        .unwrap();
    let sv = session_value(b"agg", &hs);
    // retention 120 s: segment interval 60 s; both segments live at stream time 60 s
    std::fs::create_dir_all(&w_path).unwrap();
    std::fs::create_dir_all(&s_path).unwrap();
    kafka_store(
        &w_path.join("ws.60000"),
        &["default", "keyValueWithTimestampAndHeaders", "offsets"],
        &[
            (
                "keyValueWithTimestampAndHeaders",
                &window_key(b"a", 60_000, 0),
                &wv,
            ),
            ("default", &window_key(b"b", 60_000, 0), b"old"),
        ],
    );
    kafka_store(
        &s_path.join("ss.60000"),
        &["default", "sessionKeyValueWithHeaders", "offsets"],
        &[
            (
                "sessionKeyValueWithHeaders",
                &session_key(b"a", 0, 60_000),
                &sv,
            ),
            ("default", &session_key(b"b", 1, 60_001), b"old"),
        ],
    );
    let window_opts = WindowOptions::new(120_000, 0, false).with_store(opts(ValueFormat::Headers));
    let session_opts = SessionOptions::new(120_000).with_store(opts(ValueFormat::Headers));
    {
        let w = WindowStore::open(&w_path, &window_opts).unwrap();
        let s = SessionStore::open(&s_path, &session_opts).unwrap();
        let c = Isolation::ReadCommitted;
        assert_eq!(w.fetch_raw_with(c, b"a", 60_000).unwrap(), Some(wv.clone()));
        assert_eq!(
            w.fetch_raw_with(c, b"b", 60_000).unwrap(),
            Some(headers::from_plain(b"old"))
        );
        assert_eq!(
            s.fetch_session_with(c, b"a", 0, 60_000).unwrap(),
            Some(sv.clone())
        );
        assert_eq!(
            s.fetch_session_with(c, b"b", 1, 60_001).unwrap(),
            Some(b"\0old".to_vec())
        );
    }
    kstate::store::export_segmented_to_kafka(&w_path).unwrap();
    kstate::store::export_segmented_to_kafka(&s_path).unwrap();
    let read = |segment: &Path, family: &str| -> Vec<(Vec<u8>, Vec<u8>)> {
        let families = rocksdb::DB::list_cf(&rocksdb::Options::default(), segment).unwrap();
        assert!(families.iter().any(|f| f == family), "{families:?}");
        let db = rocksdb::DB::open_cf_for_read_only(
            &rocksdb::Options::default(),
            segment,
            &families,
            false,
        )
        .unwrap();
        let cf = db.cf_handle(family).unwrap();
        db.iterator_cf(cf, rocksdb::IteratorMode::Start)
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect()
    };
    assert_eq!(
        read(&w_path.join("ws.60000"), "keyValueWithTimestampAndHeaders"),
        vec![
            (window_key(b"a", 60_000, 0), wv),
            (window_key(b"b", 60_000, 0), headers::from_plain(b"old")),
        ]
    );
    assert_eq!(
        read(&s_path.join("ss.60000"), "sessionKeyValueWithHeaders"),
        vec![
            (session_key(b"a", 0, 60_000), sv),
            (session_key(b"b", 1, 60_001), b"\0old".to_vec()),
        ]
    );
}
