//! Bad input and misuse: every case of the error table (docs/rust-api.md, Errors) returns its typed error
//! with its stable code, and never harms the data already committed.

use std::process::{Command, Stdio};

use kstate::format::meta::{StoreHeader, StoreKind, FORMAT_VERSION};
use kstate::{
    EngineKind, ErrorCode, Isolation, KeyRange, KvStore, StoreOptions, TopicPartition, ValueFormat,
    MAX_KEY_BYTES, MAX_VALUE_BYTES,
};

fn opts() -> StoreOptions {
    StoreOptions::default()
}

fn code<T: std::fmt::Debug>(r: kstate::Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

fn tp() -> TopicPartition {
    TopicPartition::new("t", 0)
}

/// Writes `value` under `key` in kstate's metadata column family, behind kstate's back.
fn poke_meta(path: &std::path::Path, key: &[u8], value: &[u8]) {
    let cfs = rocksdb::DB::list_cf(&rocksdb::Options::default(), path).unwrap();
    let db = rocksdb::DB::open_cf(&rocksdb::Options::default(), path, &cfs).unwrap();
    db.put_cf(db.cf_handle("kstate_meta").unwrap(), key, value)
        .unwrap();
}

fn committed_store(path: &std::path::Path) {
    let s = KvStore::open(path, &opts()).unwrap();
    s.put(b"k", b"v", 1).unwrap();
    s.commit(&[(tp(), Some(7))], None).unwrap();
    s.close().unwrap();
}

#[test]
fn a_directory_that_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"hello").unwrap();
    let err = KvStore::open(dir.path(), &opts()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAStore);
    assert!(err.to_string().contains("no RocksDB database"), "{err}");
    assert_eq!(
        code(KvStore::open(dir.path().join("notes.txt"), &opts())),
        ErrorCode::NotAStore
    );
    // Nothing was created in the foreign directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_newer_format_version() {
    let dir = tempfile::tempdir().unwrap();
    committed_store(dir.path());
    let newer = StoreHeader {
        format_version: FORMAT_VERSION + 1,
        value_format: ValueFormat::Timestamped,
        kind: StoreKind::KeyValue,
    };
    poke_meta(dir.path(), b"header", &newer.encode());
    let err = KvStore::open(dir.path(), &opts()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UnsupportedFormat);
    assert!(err.to_string().contains("upgrade kstate"), "{err}");
}

#[test]
fn a_corrupt_metadata_record() {
    let dir = tempfile::tempdir().unwrap();
    committed_store(dir.path());
    poke_meta(
        dir.path(),
        b"committed",
        b"\x01garbage-that-fails-its-checksum",
    );
    let err = KvStore::open(dir.path(), &opts()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Corruption);
    // `verify` reports the same problem without opening the store for writing.
    let report = kstate::store::inspect::verify(dir.path()).unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
}

#[test]
fn a_store_locked_by_this_process() {
    let dir = tempfile::tempdir().unwrap();
    let first = KvStore::open(dir.path(), &opts()).unwrap();
    first.put(b"a", b"1", 1).unwrap();
    assert_eq!(code(KvStore::open(dir.path(), &opts())), ErrorCode::Locked);
    // The first handle is unaffected.
    assert_eq!(first.get(b"a").unwrap().unwrap().value, b"1");
    first.close().unwrap();
    KvStore::open(dir.path(), &opts()).unwrap().close().unwrap();
}

#[test]
fn a_store_locked_by_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"))
        .arg("crash-worker")
        .arg("--dir")
        .arg(&path)
        .args(["--seed", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the child to report that it holds the store.
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let result = KvStore::open(&path, &opts());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(line.starts_with("ready "), "{line}");
    let err = result.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Locked, "{err}");
    assert!(err.to_string().contains("locked"), "{err}");
    KvStore::open(&path, &opts()).unwrap().close().unwrap();
}

#[test]
fn keys_and_values_over_the_limits_but_empty_ones_are_fine() {
    for engine in [EngineKind::RocksDb, EngineKind::Memory] {
        let dir = tempfile::tempdir().unwrap();
        let s = KvStore::open(dir.path().join("s"), &StoreOptions::timestamped(engine)).unwrap();
        let big_key = vec![7u8; MAX_KEY_BYTES + 1];
        assert_eq!(code(s.put(&big_key, b"v", 1)), ErrorCode::KeyTooLarge);
        assert_eq!(code(s.get(&big_key)), ErrorCode::KeyTooLarge);
        assert_eq!(code(s.delete(&big_key)), ErrorCode::KeyTooLarge);
        let big_value = vec![7u8; MAX_VALUE_BYTES];
        assert_eq!(code(s.put(b"k", &big_value, 1)), ErrorCode::ValueTooLarge);
        // A bad entry anywhere in put_all leaves the transaction untouched.
        let good = kstate::format::value::encode(b"ok", 1);
        assert_eq!(
            code(s.put_all_raw([
                (&b"a"[..], Some(&good[..])),
                (&big_key[..], Some(&good[..]))
            ])),
            ErrorCode::KeyTooLarge
        );
        assert_eq!(s.get(b"a").unwrap(), None);
        s.put(b"", b"", 5).unwrap();
        assert_eq!(
            s.get(b"").unwrap().unwrap(),
            kstate::ValueAndTimestamp::new(vec![], 5)
        );
        s.put(&big_key[..MAX_KEY_BYTES], b"max", 1).unwrap();
        s.commit(&[], None).unwrap();
        assert_eq!(
            s.get(&big_key[..MAX_KEY_BYTES]).unwrap().unwrap().value,
            b"max"
        );
    }
}

#[test]
fn timestamped_values_must_carry_their_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let s = KvStore::open(dir.path(), &opts()).unwrap();
    assert_eq!(
        code(s.put_raw(b"k", Some(&[0u8; 7]))),
        ErrorCode::InvalidValue
    );
    assert_eq!(
        code(s.put_if_absent_raw(b"k", &[1])),
        ErrorCode::InvalidValue
    );
    s.put_raw(b"k", Some(&[0u8; 8])).unwrap();
}

#[test]
fn opening_in_the_other_value_format() {
    let dir = tempfile::tempdir().unwrap();
    let plain = StoreOptions::plain(EngineKind::RocksDb);
    let s = KvStore::open(dir.path(), &plain).unwrap();
    // Typed (timestamped) calls on a plain store.
    assert_eq!(code(s.put(b"k", b"v", 1)), ErrorCode::FormatMismatch);
    assert_eq!(code(s.get(b"k")), ErrorCode::FormatMismatch);
    s.put_raw(b"k", Some(b"short")).unwrap(); // any bytes are a valid plain value
    s.commit(&[], None).unwrap();
    s.close().unwrap();
    // Opened timestamped, the plain store is upgraded (tests/upgrade.rs); from then on it
    // cannot be opened plain.
    let s = KvStore::open(dir.path(), &opts()).unwrap();
    assert!(s.is_upgrading());
    s.close().unwrap();
    let err = KvStore::open(dir.path(), &plain).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch);
    assert!(err.to_string().contains("created timestamped"), "{err}");
}

#[test]
fn every_operation_after_close() {
    for engine in [EngineKind::RocksDb, EngineKind::Memory] {
        let dir = tempfile::tempdir().unwrap();
        let s = KvStore::open(dir.path().join("s"), &StoreOptions::timestamped(engine)).unwrap();
        s.put(b"k", b"v", 1).unwrap();
        let mut it = s.all().unwrap();
        let other = s.clone();
        s.close().unwrap();
        s.close().unwrap(); // idempotent
        assert!(!other.is_open());
        let closed = ErrorCode::StoreClosed;
        assert_eq!(code(other.put(b"k", b"v", 1)), closed);
        assert_eq!(code(other.put_raw(b"k", None)), closed);
        assert_eq!(code(other.get(b"k")), closed);
        assert_eq!(
            code(other.get_raw_with(Isolation::ReadCommitted, b"k")),
            closed
        );
        assert_eq!(code(other.put_if_absent(b"k", b"v", 1)), closed);
        assert_eq!(code(other.delete(b"k")), closed);
        assert_eq!(code(other.put_all(&[(b"k", b"v", 1)])), closed);
        assert_eq!(code(other.range(None, None)), closed);
        assert_eq!(
            code(other.scan(Isolation::ReadCommitted, &KeyRange::all(), true)),
            closed
        );
        assert_eq!(code(other.commit(&[], None)), closed);
        assert_eq!(code(other.committed_offset(&tp())), closed);
        assert_eq!(code(other.rollback()), closed);
        assert_eq!(code(other.compact()), closed);
        assert_eq!(code(other.approximate_num_entries()), closed);
        assert_eq!(code(other.approximate_num_uncommitted_bytes()), closed);
        // The iterator opened before close is closed with its store.
        assert!(!it.is_open());
        assert_eq!(code(it.next_raw()), ErrorCode::IteratorClosed);
        assert_eq!(
            code(it.next_batch(10, 1 << 20, &mut Vec::new())),
            ErrorCode::IteratorClosed
        );
        assert_eq!(s.open_iterators(), 0);
    }
}

#[test]
fn closing_releases_the_store_even_with_iterators_left_open() {
    let dir = tempfile::tempdir().unwrap();
    let s = KvStore::open(dir.path(), &opts()).unwrap();
    s.put(b"k", b"v", 1).unwrap();
    s.commit(&[(tp(), Some(1))], None).unwrap();
    let _forgotten = s.all().unwrap();
    let _also = s
        .scan(Isolation::ReadCommitted, &KeyRange::all(), false)
        .unwrap();
    assert_eq!(s.open_iterators(), 2);
    s.close().unwrap();
    // Reopening works at once: the closed iterators no longer pin the database.
    let s = KvStore::open(dir.path(), &opts()).unwrap();
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(1));
    assert!(s.recovery().previous_close_clean);
}

#[test]
fn invalid_options() {
    let bad = StoreOptions::default().with_max_uncommitted_bytes(0);
    assert_eq!(
        code(KvStore::open_in_memory(&bad)),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn kafka_streams_stores_are_adopted_when_their_format_matches() {
    // A RocksDBStore (plain values in `default`), as Kafka Streams writes it.
    let dir = tempfile::tempdir().unwrap();
    let plain_path = dir.path().join("plain");
    {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        let db = rocksdb::DB::open(&o, &plain_path).unwrap();
        db.put(b"a", b"1").unwrap();
    }
    let s = KvStore::open(&plain_path, &StoreOptions::plain(EngineKind::RocksDb)).unwrap();
    assert_eq!(s.get_raw(b"a").unwrap(), Some(b"1".to_vec()));
    assert!(!s.is_upgrading());
    s.close().unwrap();

    // A RocksDBTimestampedStore: both families, values in `keyValueWithTimestamp`.
    let ts_path = dir.path().join("timestamped");
    {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&o, &ts_path, ["default", "keyValueWithTimestamp"]).unwrap();
        let raw = kstate::format::value::encode(b"v", 42);
        db.put_cf(db.cf_handle("keyValueWithTimestamp").unwrap(), b"k", raw)
            .unwrap();
    }
    let s = KvStore::open(&ts_path, &opts()).unwrap();
    assert_eq!(
        s.get(b"k").unwrap().unwrap(),
        kstate::ValueAndTimestamp::new(b"v".to_vec(), 42)
    );
    assert_eq!(s.committed_offset(&tp()).unwrap(), None);
}

#[test]
fn a_creation_interrupted_before_the_header_is_redone() {
    // kstate adds its column families, then writes the header: a crash in between leaves
    // an empty kstate_meta family, which must not make the store unopenable.
    let dir = tempfile::tempdir().unwrap();
    let families = [
        "default",
        "keyValueWithTimestamp",
        "kstate_meta",
        "kstate_spill",
    ];
    let fresh = dir.path().join("fresh");
    let adopted = dir.path().join("adopted");
    for path in [&fresh, &adopted] {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&o, path, families).unwrap();
        if path == &adopted {
            db.put(b"plain-key", b"plain value of a Kafka RocksDBStore")
                .unwrap();
        }
    }
    let s = KvStore::open(&fresh, &opts()).unwrap();
    s.put(b"k", b"v", 1).unwrap();
    s.commit(&[(tp(), Some(1))], None).unwrap();
    s.close().unwrap();
    assert_eq!(
        KvStore::open(&fresh, &opts())
            .unwrap()
            .committed_offset(&tp())
            .unwrap(),
        Some(1)
    );
    // The interrupted adoption of a plain store is checked again, not waved through.
    let s = KvStore::open(&adopted, &StoreOptions::plain(EngineKind::RocksDb)).unwrap();
    assert_eq!(
        s.get_raw(b"plain-key").unwrap().unwrap(),
        b"plain value of a Kafka RocksDBStore"
    );
}

/// Lists a directory's column families and files (to show a refusal changed nothing).
fn snapshot_dir(path: &std::path::Path) -> (Vec<String>, Vec<String>) {
    let mut cfs = rocksdb::DB::list_cf(&rocksdb::Options::default(), path).unwrap();
    cfs.sort();
    let mut files: Vec<String> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    (cfs, files)
}

/// A Kafka Streams-like RocksDB store with the given families and entries.
fn kafka_store(path: &std::path::Path, families: &[&str], entries: &[(&str, &[u8], &[u8])]) {
    let mut o = rocksdb::Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    let db = rocksdb::DB::open_cf(&o, path, families).unwrap();
    for (cf, k, v) in entries {
        db.put_cf(db.cf_handle(cf).unwrap(), k, v).unwrap();
    }
}

#[test]
fn kafka_stores_are_adopted_by_allow_list() {
    let dir = tempfile::tempdir().unwrap();
    let ts = kstate::format::value::encode(b"v", 42);
    // Kafka 4.4's RocksDBTimestampedStore: offsets, position and a clean status.
    let mut position = vec![0u8];
    position.extend_from_slice(&1i32.to_be_bytes());
    position.extend_from_slice(&5i32.to_be_bytes());
    position.extend_from_slice(b"input");
    position.extend_from_slice(&1i32.to_be_bytes());
    position.extend_from_slice(&2i32.to_be_bytes());
    position.extend_from_slice(&99i64.to_be_bytes());
    position.extend_from_slice(&[0; 30]); // Kafka's PositionSerde pads its buffer
    let adopted = dir.path().join("adopted");
    kafka_store(
        &adopted,
        &["default", "keyValueWithTimestamp", "offsets"],
        &[
            ("keyValueWithTimestamp", b"k", &ts),
            ("offsets", b"app-store-changelog-3", &41i64.to_be_bytes()),
            ("offsets", b"status", &0i64.to_be_bytes()),
            ("offsets", b"position", &position),
        ],
    );
    let s = KvStore::open(&adopted, &opts()).unwrap();
    assert_eq!(s.get(b"k").unwrap().unwrap().timestamp, 42);
    let changelog = TopicPartition::new("app-store-changelog", 3);
    assert_eq!(s.committed_offset(&changelog).unwrap(), Some(41));
    let meta = s.committed_metadata().unwrap().expect("position imported");
    assert_eq!(meta[0], 1, "the adapter's position layout");
    assert!(meta.windows(5).any(|w| w == b"input"));
    s.close().unwrap();
    // Adopted for good: reopening keeps the offsets.
    let s = KvStore::open(&adopted, &opts()).unwrap();
    assert_eq!(s.committed_offset(&changelog).unwrap(), Some(41));
    s.close().unwrap();

    // Refused, without changing anything on disk.
    let (open_status, headers_value) =
        (1i64.to_be_bytes(), b"\x00\x00\x00\x00\x00\x00\x00\x00\x01v");
    // (name, column families, entries, expected code, words the message must contain)
    type Case<'a> = (
        &'a str,
        Vec<&'a str>,
        Vec<(&'a str, &'a [u8], &'a [u8])>,
        ErrorCode,
        &'a str,
    );
    let refused: Vec<Case> = vec![
        (
            "headers",
            vec!["default", "keyValueWithTimestampAndHeaders", "offsets"],
            vec![("keyValueWithTimestampAndHeaders", b"k", headers_value)],
            ErrorCode::FormatMismatch,
            "cannot be opened timestamped",
        ),
        (
            "unknown",
            vec!["default", "mystery"],
            vec![],
            ErrorCode::FormatMismatch,
            "mystery",
        ),
        (
            "left-open",
            vec!["default", "keyValueWithTimestamp", "offsets"],
            vec![("offsets", b"status", &open_status)],
            ErrorCode::Corruption,
            "left open",
        ),
    ];
    for (name, families, entries, want, says) in refused {
        let path = dir.path().join(name);
        kafka_store(&path, &families, &entries);
        let before = snapshot_dir(&path);
        let err = KvStore::open(&path, &opts()).unwrap_err();
        assert_eq!(err.code(), want, "{name}: {err}");
        assert!(err.to_string().contains(says), "{name}: {err}");
        assert_eq!(
            snapshot_dir(&path),
            before,
            "{name}: refusing changed the directory"
        );
    }
}

/// A Kafka 4.3+ store whose `status` says it was left open (Kafka Streams was killed) holds
/// data possibly ahead of its offsets. Kafka 4.4's `RocksDBStore` opens it under at-least-once
/// with the offsets and position it holds, and refuses it under exactly-once
/// (`TaskCorruptedException`): `adopt_left_open` chooses between the two, and the
/// all-or-nothing check agrees with the open.
#[test]
fn a_kafka_store_left_open_is_adopted_with_its_offsets_when_allowed() {
    use kstate::store::{check_adoption, PlannedStore};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("left-open");
    let mut position = vec![0u8];
    position.extend_from_slice(&1i32.to_be_bytes());
    position.extend_from_slice(&5i32.to_be_bytes());
    position.extend_from_slice(b"input");
    position.extend_from_slice(&1i32.to_be_bytes());
    position.extend_from_slice(&2i32.to_be_bytes());
    position.extend_from_slice(&99i64.to_be_bytes());
    // Written after the commit of offset 41, before the kill: ahead of the offsets.
    let committed = kstate::format::value::encode(b"v", 42);
    let ahead = kstate::format::value::encode(b"w", 43);
    let plain = b"plain value";
    kafka_store(
        &path,
        &["default", "keyValueWithTimestamp", "offsets"],
        &[
            ("keyValueWithTimestamp", b"k", &committed),
            ("keyValueWithTimestamp", b"ahead", &ahead),
            ("default", b"legacy", plain),
            ("offsets", b"app-store-changelog-3", &41i64.to_be_bytes()),
            ("offsets", b"status", &1i64.to_be_bytes()),
            ("offsets", b"position", &position),
        ],
    );
    let allow = opts().with_adopt_left_open(true);
    let planned = |options: StoreOptions| PlannedStore::KeyValue {
        path: path.clone(),
        options,
    };
    let before = snapshot_dir(&path);
    let err = check_adoption(&[planned(opts())]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Corruption, "{err}");
    assert_eq!(code(KvStore::open(&path, &opts())), ErrorCode::Corruption);
    assert_eq!(
        check_adoption(&[planned(allow.clone())]).unwrap(),
        vec![path.clone()]
    );
    assert_eq!(
        snapshot_dir(&path),
        before,
        "refusing or checking changed it"
    );

    let s = KvStore::open(&path, &allow).unwrap();
    let changelog = TopicPartition::new("app-store-changelog", 3);
    assert_eq!(s.committed_offset(&changelog).unwrap(), Some(41));
    assert_eq!(
        s.committed_offsets().unwrap(),
        vec![(changelog.clone(), 41)]
    );
    let mut want_position = vec![1u8];
    want_position.extend_from_slice(&1i32.to_be_bytes());
    want_position.extend_from_slice(&5u16.to_be_bytes());
    want_position.extend_from_slice(b"input");
    want_position.extend_from_slice(&1i32.to_be_bytes());
    want_position.extend_from_slice(&2i32.to_be_bytes());
    want_position.extend_from_slice(&99i64.to_be_bytes());
    assert_eq!(s.committed_metadata().unwrap(), Some(want_position));
    // Every record Kafka's store holds, the ones ahead of the offset included, committed.
    let all: Vec<(Vec<u8>, Vec<u8>)> = s
        .scan(Isolation::ReadCommitted, &KeyRange::all(), false)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(
        all,
        vec![
            (b"ahead".to_vec(), ahead.clone()),
            (b"k".to_vec(), committed.clone()),
            (b"legacy".to_vec(), kstate::format::value::encode(plain, -1)),
        ]
    );
    s.close().unwrap();
    // A kstate store now: reopened without the option, with the same state.
    let s = KvStore::open(&path, &opts()).unwrap();
    assert_eq!(s.committed_offset(&changelog).unwrap(), Some(41));
    assert_eq!(s.get(b"ahead").unwrap().unwrap().timestamp, 43);
    s.close().unwrap();
    assert_eq!(
        check_adoption(&[planned(opts())]).unwrap(),
        Vec::<std::path::PathBuf>::new()
    );
}

#[test]
fn refusing_the_other_format_adds_no_column_family() {
    let dir = tempfile::tempdir().unwrap();
    let plain = StoreOptions::plain(EngineKind::RocksDb);
    KvStore::open(dir.path().join("s"), &opts())
        .unwrap()
        .close()
        .unwrap();
    let before = rocksdb::DB::list_cf(&rocksdb::Options::default(), dir.path().join("s")).unwrap();
    assert_eq!(
        code(KvStore::open(dir.path().join("s"), &plain)),
        ErrorCode::FormatMismatch
    );
    let after = rocksdb::DB::list_cf(&rocksdb::Options::default(), dir.path().join("s")).unwrap();
    assert_eq!(before, after);
}

/// A store whose only WAL file is deleted: that WAL held the commits since the last flush,
/// and nothing else on disk says whether there were any. RocksDB refuses an existing
/// database without a WAL (`track_and_verify_wals`), so the open is `CORRUPTION` rather
/// than a silent return to the last flushed commit; the directory is left as it was.
#[test]
fn a_store_without_its_wal_file_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let s = KvStore::open(&path, &opts()).unwrap();
    for round in 0..3i64 {
        for i in 0..100u32 {
            s.put(&i.to_be_bytes(), &[round as u8; 100], round).unwrap();
        }
        s.commit(&[(tp(), Some(round))], None).unwrap();
        // Flushes switch to a new WAL (atomic flushes cover every family, so the older
        // ones are obsolete); the commits of later rounds live only in the WAL.
        if round == 0 {
            s.compact().unwrap();
        }
    }
    let logs = || -> Vec<String> {
        let mut logs: Vec<String> = std::fs::read_dir(dir.path().join("copy"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".log"))
            .collect();
        logs.sort();
        logs
    };
    // A kill leaves the rest in the WAL; a copy of the store then loses its WAL files.
    std::mem::forget(s);
    // The forgotten store's background threads may still be compacting what `compact`
    // flushed (adding tables, deleting their inputs): copy only once the directory holds
    // still, or the copy could name a table it lacks.
    let listing = || -> Vec<(String, u64)> {
        let mut files: Vec<(String, u64)> = std::fs::read_dir(&path)
            .unwrap()
            .filter_map(|e| {
                let e = e.ok()?;
                Some((
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().ok()?.len(),
                ))
            })
            .collect();
        files.sort();
        files
    };
    let mut last = listing();
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let now = listing();
        if now == last {
            break;
        }
        last = now;
    }
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(&path).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name != "LOCK" && !name.ends_with(".log") {
            std::fs::copy(path.join(&name), copy.join(&name)).unwrap();
        }
    }
    let before = logs();
    let err = KvStore::open(&copy, &opts()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Corruption, "{err}");
    assert!(err.to_string().contains("no WAL files"), "{err}");
    assert_eq!(logs(), before, "the failed open wrote no WAL");
}

#[test]
fn an_empty_path_is_an_invalid_argument() {
    for engine in [EngineKind::RocksDb, EngineKind::Memory] {
        let err = KvStore::open("", &StoreOptions::timestamped(engine)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{engine:?}: {err}");
    }
}

#[test]
fn a_second_open_of_a_store_is_locked_until_the_first_closes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let first = KvStore::open(&path, &opts()).unwrap();
    let err = KvStore::open(&path, &opts()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Locked, "{err}");
    first.close().unwrap();
    KvStore::open(&path, &opts()).unwrap().close().unwrap();
}

/// Topic names are stored with a 16-bit length: up to 65,535 bytes commit, a longer one is
/// `INVALID_ARGUMENT` before anything is written (the transaction stays pending).
#[test]
fn a_topic_name_longer_than_65535_bytes_is_an_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let s = KvStore::open(dir.path().join("s"), &opts()).unwrap();
    s.put(b"k", b"v", 1).unwrap();
    let longest = TopicPartition::new("t".repeat(65_535), 0);
    let too_long = TopicPartition::new("t".repeat(65_536), 0);
    let err = s.commit(&[(too_long.clone(), Some(1))], None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("65536 bytes"), "{err}");
    assert_eq!(
        s.get_raw_with(Isolation::ReadCommitted, b"k").unwrap(),
        None
    );
    s.commit(&[(longest.clone(), Some(2))], None).unwrap();
    assert_eq!(s.committed_offset(&longest).unwrap(), Some(2));
    assert_eq!(s.committed_offset(&too_long).unwrap(), None);
    assert_eq!(s.get(b"k").unwrap().unwrap().value, b"v");
    s.close().unwrap();
}

/// A store whose manifest fails its checksum is `CORRUPTION` on every open, never `LOCKED`
/// by an earlier failed open (the C suite also checks, under valgrind and LSan, that the
/// failed opens leak nothing).
#[test]
fn a_damaged_manifest_is_corruption_on_every_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let s = KvStore::open(&path, &opts()).unwrap();
    s.put(b"k", b"v", 1).unwrap();
    s.commit(&[], None).unwrap();
    s.close().unwrap();
    let current = std::fs::read_to_string(path.join("CURRENT")).unwrap();
    let manifest = path.join(current.trim());
    // Inside the first record, after its 7-byte header: a checksum that cannot match (a
    // damaged last record could pass for a write cut short).
    let mut bytes = std::fs::read(&manifest).unwrap();
    for b in &mut bytes[7..15] {
        *b ^= 0x5A;
    }
    std::fs::write(&manifest, bytes).unwrap();
    let codes: Vec<ErrorCode> = (0..20)
        .map(|_| KvStore::open(&path, &opts()).unwrap_err().code())
        .collect();
    assert_eq!(codes, vec![ErrorCode::Corruption; 20]);
}
