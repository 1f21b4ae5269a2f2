//! Lazy online upgrade (KIP-258): a store holding plain values (a kstate plain store, or
//! Kafka Streams' `RocksDBStore`) opened timestamped runs in upgrade mode. Reads fall back to
//! the plain family and show timestamp -1; writes and deletes migrate their key in the same
//! transaction; iterators merge both families with the timestamped one winning; committed
//! readers see only committed migrations; once the plain family is empty the next open runs
//! in regular mode. Checked against a model through random operations, commits, rollbacks
//! and reopens.

use std::collections::BTreeMap;
use std::path::Path;

use kstate::format::value;
use kstate::{EngineKind, ErrorCode, Isolation, KeyRange, KvStore, StoreOptions, TopicPartition};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn tp() -> TopicPartition {
    TopicPartition::new("upgrade-changelog", 0)
}

fn key(i: u64) -> Vec<u8> {
    format!("key-{i:04}").into_bytes()
}

/// A plain kstate store with `n` committed plain values (`plain-<i>`) at offset 7.
fn plain_store(path: &Path, n: u64) -> Map {
    let s = KvStore::open(path, &StoreOptions::plain(EngineKind::RocksDb)).unwrap();
    let mut model = Map::new();
    for i in 0..n {
        let v = format!("plain-{i}").into_bytes();
        s.put_raw(&key(i), Some(&v)).unwrap();
        model.insert(key(i), value::encode(&v, -1));
    }
    s.commit(&[(tp(), Some(7))], None).unwrap();
    s.close().unwrap();
    model
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
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "order, reverse={reverse}"
    );
    entries.into_iter().collect()
}

#[test]
fn a_plain_store_opened_timestamped_upgrades_key_by_key_then_runs_regular() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let mut committed = plain_store(&path, 20);
    let opts = StoreOptions::default();
    let s = KvStore::open(&path, &opts).unwrap();
    assert!(s.is_upgrading());
    assert_eq!(
        s.committed_offset(&tp()).unwrap(),
        Some(7),
        "offsets survive the upgrade"
    );
    let v = s.get(&key(3)).unwrap().unwrap();
    assert_eq!((v.value.as_slice(), v.timestamp), (&b"plain-3"[..], -1));
    assert_eq!(scan(&s, Isolation::ReadUncommitted, false), committed);
    assert_eq!(scan(&s, Isolation::ReadCommitted, true), committed);
    // Writes and deletes migrate; committed readers see it only after the commit.
    s.put(&key(3), b"new", 42).unwrap();
    assert_eq!(s.delete(&key(4)).unwrap().unwrap().timestamp, -1);
    assert_eq!(
        s.put_if_absent(&key(5), b"x", 1)
            .unwrap()
            .unwrap()
            .timestamp,
        -1
    );
    assert_eq!(
        s.get_with(Isolation::ReadCommitted, &key(3))
            .unwrap()
            .unwrap()
            .timestamp,
        -1
    );
    s.commit(&[(tp(), Some(8))], None).unwrap();
    committed.insert(key(3), value::encode(b"new", 42));
    committed.remove(&key(4));
    assert_eq!(scan(&s, Isolation::ReadCommitted, false), committed);
    s.close().unwrap();
    // Still plain values left: upgrade mode again; a plain open is refused now.
    assert_eq!(
        KvStore::open(&path, &StoreOptions::plain(EngineKind::RocksDb))
            .unwrap_err()
            .code(),
        ErrorCode::FormatMismatch
    );
    let report = kstate::store::inspect::inspect(&path).unwrap();
    assert_eq!(report.values_to_upgrade, 18, "20 plain values, 2 migrated");
    assert!(kstate::store::inspect::verify(&path)
        .unwrap()
        .problems
        .is_empty());
    let s = KvStore::open(&path, &opts).unwrap();
    assert!(s.is_upgrading());
    assert_eq!(scan(&s, Isolation::ReadUncommitted, false), committed);
    // Rewrite every key: the plain family empties.
    let all: Vec<(Vec<u8>, Vec<u8>)> = committed.clone().into_iter().collect();
    for (k, raw) in &all {
        s.put_raw(k, Some(raw)).unwrap();
    }
    s.commit(&[(tp(), Some(9))], None).unwrap();
    s.close().unwrap();
    assert_eq!(
        kstate::store::inspect::inspect(&path)
            .unwrap()
            .values_to_upgrade,
        0
    );
    let s = KvStore::open(&path, &opts).unwrap();
    assert!(!s.is_upgrading(), "no plain value left: regular mode");
    assert_eq!(scan(&s, Isolation::ReadCommitted, false), committed);
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(9));
    s.close().unwrap();
}

#[test]
fn kafka_streams_plain_store_is_adopted_in_upgrade_mode_with_its_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kafka");
    {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&o, &path, ["default", "offsets"]).unwrap();
        db.put(b"a", b"1").unwrap();
        db.put(b"b", b"2").unwrap();
        let off = db.cf_handle("offsets").unwrap();
        db.put_cf(off, b"upgrade-changelog-0", 12i64.to_be_bytes())
            .unwrap();
        db.put_cf(off, b"status", 0i64.to_be_bytes()).unwrap();
    }
    let s = KvStore::open(&path, &StoreOptions::default()).unwrap();
    assert!(s.is_upgrading());
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(12));
    assert_eq!(s.get(b"a").unwrap().unwrap().timestamp, -1);
    s.put(b"b", b"22", 5).unwrap();
    s.commit(&[(tp(), Some(13))], None).unwrap();
    let got = scan(&s, Isolation::ReadCommitted, false);
    assert_eq!(got[&b"a".to_vec()], value::encode(b"1", -1));
    assert_eq!(got[&b"b".to_vec()], value::encode(b"22", 5));
}

/// Deletes the WAL files of the RocksDB database at `path`, as a SIGKILL leaves a database
/// that RocksDB was still creating (`CURRENT` and a manifest, no WAL yet); a store that
/// Kafka Streams writes without the WAL loses nothing by it.
fn drop_wal_files(path: &std::path::Path) {
    let mut dropped = 0;
    for e in std::fs::read_dir(path).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "log") {
            std::fs::remove_file(p).unwrap();
            dropped += 1;
        }
    }
    assert!(
        dropped > 0,
        "RocksDB leaves a WAL file in {}",
        path.display()
    );
}

/// A Kafka Streams 4.4 store without a WAL file (Kafka writes without the WAL, and a kill
/// while RocksDB creates a store leaves none): Kafka's RocksDB opens it, and kstate adopts
/// it with its data and offsets instead of refusing it as `CORRUPTION` (found by
/// `RealBrokerRoundTripTest`, on a window segment).
#[test]
fn kafka_streams_store_without_a_wal_file_is_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kafka");
    {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&o, &path, ["default", "keyValueWithTimestamp", "offsets"])
            .unwrap();
        let ts = db.cf_handle("keyValueWithTimestamp").unwrap();
        db.put_cf(ts, b"a", value::encode(b"1", 3)).unwrap();
        let off = db.cf_handle("offsets").unwrap();
        db.put_cf(off, b"upgrade-changelog-0", 12i64.to_be_bytes())
            .unwrap();
        db.put_cf(off, b"status", 0i64.to_be_bytes()).unwrap();
        db.flush_cfs_opt(&[ts, off], &rocksdb::FlushOptions::default())
            .unwrap();
    }
    drop_wal_files(&path);
    let s = KvStore::open(&path, &StoreOptions::default()).unwrap();
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(12));
    assert_eq!(s.get(b"a").unwrap().unwrap().value, b"1");
    s.put(b"b", b"2", 5).unwrap();
    s.commit(&[(tp(), Some(13))], None).unwrap();
    s.close().unwrap();
    // kstate's own store again: it has its WAL, and reopens with its commit
    let s = KvStore::open(&path, &StoreOptions::default()).unwrap();
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(13));
    assert_eq!(s.get(b"b").unwrap().unwrap().value, b"2");
    s.close().unwrap();
}

/// Random puts, deletes, put_if_absent, put_all, commits, rollbacks, spills and reopens in
/// upgrade mode, against a model.
#[test]
fn upgrade_mode_matches_the_model() {
    for seed in 1..=6u64 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let mut committed = plain_store(&path, 60);
        let mut pending: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
        let opts = StoreOptions::default().with_max_uncommitted_bytes(if seed % 2 == 0 {
            2048
        } else {
            1 << 20
        });
        let mut s = KvStore::open(&path, &opts).unwrap();
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut offset = 7;
        for step in 0..1_500 {
            let k = key(next(80));
            let view = |committed: &Map, pending: &BTreeMap<Vec<u8>, Option<Vec<u8>>>| {
                let mut m = committed.clone();
                for (k, w) in pending {
                    match w {
                        Some(v) => m.insert(k.clone(), v.clone()),
                        None => m.remove(k),
                    };
                }
                m
            };
            match next(20) {
                0..=7 => {
                    let ts = next(1000) as i64;
                    s.put(&k, format!("v{step}").as_bytes(), ts).unwrap();
                    pending.insert(k, Some(value::encode(format!("v{step}").as_bytes(), ts)));
                }
                8..=10 => {
                    let old = s.delete_raw(&k).unwrap();
                    assert_eq!(
                        old.as_ref(),
                        view(&committed, &pending).get(&k),
                        "seed {seed} step {step}"
                    );
                    pending.insert(k, None);
                }
                11 => {
                    let raw = value::encode(b"pia", 3);
                    let old = s.put_if_absent_raw(&k, &raw).unwrap();
                    let want = view(&committed, &pending).get(&k).cloned();
                    assert_eq!(old, want, "seed {seed} step {step}");
                    if want.is_none() {
                        pending.insert(k, Some(raw));
                    }
                }
                12 => {
                    let k2 = key(next(80));
                    let (a, b) = (value::encode(b"pa", 1), value::encode(b"pb", 2));
                    s.put_all_raw([
                        (k.as_slice(), Some(a.as_slice())),
                        (k2.as_slice(), Some(b.as_slice())),
                    ])
                    .unwrap();
                    pending.insert(k, Some(a));
                    pending.insert(k2, Some(b));
                }
                13..=14 => {
                    offset += 1;
                    s.commit(&[(tp(), Some(offset))], None).unwrap();
                    committed = view(&committed, &pending);
                    pending.clear();
                }
                15 => {
                    s.rollback().unwrap();
                    pending.clear();
                }
                16 => {
                    // A restart: uncommitted writes are gone.
                    s.close().unwrap();
                    s = KvStore::open(&path, &opts).unwrap();
                    pending.clear();
                    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(offset));
                }
                _ => {
                    assert_eq!(
                        s.get_raw(&k).unwrap().as_ref(),
                        view(&committed, &pending).get(&k),
                        "seed {seed} step {step}"
                    );
                    assert_eq!(
                        s.get_raw_with(Isolation::ReadCommitted, &k)
                            .unwrap()
                            .as_ref(),
                        committed.get(&k),
                        "seed {seed} step {step}"
                    );
                }
            }
            if step % 100 == 0 {
                let writer = view(&committed, &pending);
                assert_eq!(
                    scan(&s, Isolation::ReadUncommitted, false),
                    writer,
                    "seed {seed} step {step}"
                );
                assert_eq!(
                    scan(&s, Isolation::ReadUncommitted, true),
                    writer,
                    "seed {seed} step {step}"
                );
                assert_eq!(
                    scan(&s, Isolation::ReadCommitted, false),
                    committed,
                    "seed {seed} step {step}"
                );
            }
        }
        s.close().unwrap();
    }
}

/// `kstate upgrade` over a Kafka Streams-like state directory (a Kafka `RocksDBStore` with
/// its offsets, a kstate plain store, a timestamped store and a headers-format store),
/// SIGKILLed at random moments and run again until it succeeds: every convertible store
/// ends timestamped in regular mode with exactly its values (timestamp -1) and offsets;
/// the others are untouched. `--dry-run` changes nothing.
#[test]
fn offline_upgrade_of_a_state_directory_survives_kills() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("app");
    let kafka = state.join("0_0").join("rocksdb").join("counts");
    let plain = state.join("0_1").join("counts");
    let headers = state.join("0_2").join("rocksdb").join("counts");
    let n = 30_000u64;
    let mut kafka_model = Map::new();
    {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&o, &kafka, ["default", "offsets"]).unwrap();
        for i in 0..n {
            let v = format!("kafka-{i}").into_bytes();
            db.put(key(i), &v).unwrap();
            kafka_model.insert(key(i), value::encode(&v, -1));
        }
        let off = db.cf_handle("offsets").unwrap();
        db.put_cf(off, b"upgrade-changelog-0", 99i64.to_be_bytes())
            .unwrap();
        db.put_cf(off, b"status", 0i64.to_be_bytes()).unwrap();
        let db = rocksdb::DB::open_cf(
            &o,
            &headers,
            ["default", "keyValueWithTimestampAndHeaders", "offsets"],
        )
        .unwrap();
        db.put_cf(
            db.cf_handle("keyValueWithTimestampAndHeaders").unwrap(),
            b"h",
            b"\x00\x00\x00\x00\x00\x00\x00\x00\x01v",
        )
        .unwrap();
    }
    let plain_model = plain_store(&plain, 2_000);
    let cli = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate"));
        cmd.arg("upgrade")
            .arg(&state)
            .args(args)
            .stdin(Stdio::null());
        cmd
    };
    let before = kstate::store::inspect::inspect(&kafka).unwrap();
    let out = cli(&["--dry-run"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("Kafka Streams RocksDBStore, 30000 plain values"),
        "{text}"
    );
    assert!(
        text.contains("kstate plain store, 2000 plain values"),
        "{text}"
    );
    assert!(text.contains("headers format"), "{text}");
    assert_eq!(
        kstate::store::inspect::inspect(&kafka).unwrap().families,
        before.families
    );

    let mut x = 0x1234_5678u64 ^ u64::from(std::process::id());
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
        std::thread::sleep(std::time::Duration::from_millis(100 + x % 500));
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
    println!("offline upgrade: {kills} kills, {runs} runs");
    for (path, model, offset) in [
        (&kafka, &kafka_model, Some(99)),
        (&plain, &plain_model, Some(7)),
    ] {
        let s = KvStore::open(path, &StoreOptions::default()).unwrap();
        assert!(!s.is_upgrading(), "{}", path.display());
        assert_eq!(
            &scan(&s, Isolation::ReadCommitted, false),
            model,
            "{}",
            path.display()
        );
        assert_eq!(
            s.committed_offset(&tp()).unwrap(),
            offset,
            "{}",
            path.display()
        );
        s.close().unwrap();
    }
    let h = kstate::store::inspect::inspect(&headers).unwrap();
    assert!(
        h.header.is_none(),
        "the headers-format store was left alone"
    );
}
