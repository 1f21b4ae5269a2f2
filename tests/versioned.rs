//! Versioned key-value stores against references: a RocksDB store whose transactions
//! spill and which is reopened between commits against a memory-engine store that does
//! neither (every result and every read-back equal, at both isolation levels), and a
//! store rebuilt from its changelog by restore batches against the store that wrote it.
//! Kafka's own semantics are checked against Kafka's `RocksDBVersionedStore` in the Java
//! suite (`VersionedDifferentialTest`); these tests check that the transaction layer,
//! the engines, reopening and restoring never change what the store answers.

#[allow(dead_code)]
#[path = "support/workload_versioned.rs"]
mod workload_versioned;

use kstate::store::{VersionedOptions, VersionedStore};
use kstate::{EngineKind, Isolation, StoreOptions};
use workload_versioned::{dump, versioned_partition, VOp, VWorkload, INTERVAL, RETENTION};

fn options(engine: EngineKind, max_uncommitted: u64) -> VersionedOptions {
    VersionedOptions::new(RETENTION)
        .with_segment_interval(INTERVAL)
        .with_store(StoreOptions::plain(engine).with_max_uncommitted_bytes(max_uncommitted))
}

/// Applies `op` to `store`, returning what it answered (rendered).
fn answer(store: &VersionedStore, op: &VOp, offset: i64) -> String {
    match op {
        VOp::Put(k, v, t) => format!("{:?}", store.put(k, v.as_deref(), *t)),
        VOp::Delete(k, t) => format!("{:?}", store.delete(k, *t)),
        VOp::Commit => format!(
            "{:?}",
            store.commit(&[(versioned_partition(), Some(offset))], None)
        ),
        VOp::Rollback => format!("{:?}", store.rollback()),
    }
}

#[test]
fn a_spilling_reopened_rocksdb_store_answers_as_a_memory_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut ops_run = 0;
    let mut reopens = 0;
    let mut spills = 0;
    for seed in 0..4u64 {
        let path = dir.path().join(format!("s{seed}"));
        let rocks_options = options(EngineKind::RocksDb, 16 * 1024);
        let mut rocks = VersionedStore::open(&path, &rocks_options).unwrap();
        let memory = VersionedStore::open_in_memory(&options(EngineKind::Memory, 1 << 30)).unwrap();
        let mut offset = 0;
        // What the writer saw at the last commit: all a committed reader may see.
        let mut committed = dump(&memory, Isolation::ReadUncommitted);
        for (i, op) in VWorkload::new(seed).take(3_000).enumerate() {
            if op == VOp::Commit {
                offset += 1;
            }
            let got = answer(&rocks, &op, offset);
            let want = answer(&memory, &op, offset);
            assert_eq!(got, want, "seed {seed} op {i}: {op:?}");
            ops_run += 1;
            if op == VOp::Commit {
                committed = dump(&memory, Isolation::ReadUncommitted);
            }
            if i % 97 == 0 {
                assert_eq!(
                    dump(&rocks, Isolation::ReadCommitted),
                    committed,
                    "seed {seed} op {i}: a committed reader sees the last commit only"
                );
                for isolation in [Isolation::ReadUncommitted, Isolation::ReadCommitted] {
                    assert_eq!(
                        dump(&rocks, isolation),
                        dump(&memory, isolation),
                        "seed {seed} op {i} {isolation:?}"
                    );
                }
            }
            if op == VOp::Commit {
                assert_eq!(
                    dump(&memory, Isolation::ReadCommitted),
                    dump(&memory, Isolation::ReadUncommitted),
                    "seed {seed} op {i}: a commit publishes the writer's view"
                );
                if i % 5 == 0 {
                    spills += rocks.property("kstate.spills").unwrap().unwrap_or(0);
                    rocks.close().unwrap();
                    rocks = VersionedStore::open(&path, &rocks_options).unwrap();
                    reopens += 1;
                }
            }
        }
        spills += rocks.property("kstate.spills").unwrap().unwrap_or(0);
        assert_eq!(
            dump(&rocks, Isolation::ReadCommitted),
            dump(&memory, Isolation::ReadCommitted)
        );
        rocks.close().unwrap();
    }
    assert!(
        reopens > 20 && spills > 0,
        "reopens {reopens}, spills {spills}"
    );
    eprintln!("{ops_run} operations, {reopens} reopens, {spills} spills");
}

#[test]
fn restoring_the_changelog_rebuilds_the_store_that_wrote_it() {
    for (seed, engine) in [(7u64, EngineKind::Memory), (8, EngineKind::RocksDb)] {
        let dir = tempfile::tempdir().unwrap();
        let source = VersionedStore::open_in_memory(&options(EngineKind::Memory, 1 << 30)).unwrap();
        // What Kafka's changelog holds: every put and delete of committed transactions
        // (dropped ones included: Kafka logs them too), as (key, value, timestamp).
        let mut changelog: Vec<(Vec<u8>, Option<Vec<u8>>, i64)> = Vec::new();
        let mut pending = Vec::new();
        let mut offset = 0;
        for op in VWorkload::new(seed).take(4_000) {
            match &op {
                VOp::Put(k, v, t) => pending.push((k.clone(), v.clone(), *t)),
                VOp::Delete(k, t) => pending.push((k.clone(), None, *t)),
                VOp::Commit => {
                    offset += 1;
                    changelog.append(&mut pending);
                }
                VOp::Rollback => pending.clear(),
            }
            answer(&source, &op, offset);
        }
        source.rollback().unwrap();
        let restored = match engine {
            EngineKind::Memory => {
                VersionedStore::open_in_memory(&options(engine, 1 << 30)).unwrap()
            }
            EngineKind::RocksDb => {
                VersionedStore::open(dir.path().join("r"), &options(engine, 16 * 1024)).unwrap()
            }
        };
        let mut at = 0;
        let mut batch = 1;
        while at < changelog.len() {
            let end = (at + batch).min(changelog.len());
            let records: Vec<_> = changelog[at..end]
                .iter()
                .map(|(k, v, t)| (k.as_slice(), v.as_deref(), *t))
                .collect();
            let tp = versioned_partition();
            restored
                .restore_batch(&records, &[(tp, Some(end as i64))], None)
                .unwrap();
            at = end;
            batch = batch * 3 % 500 + 1;
        }
        assert_eq!(
            dump(&restored, Isolation::ReadCommitted),
            dump(&source, Isolation::ReadCommitted),
            "seed {seed} {engine:?}"
        );
        let tp = versioned_partition();
        assert_eq!(
            restored.committed_offset(&tp).unwrap(),
            Some(changelog.len() as i64)
        );
    }
}

/// A delete is reported dropped (`NotPut`) exactly when a model of the stream time (the
/// largest accepted timestamp, back to the committed one on rollback) says it is older than
/// the history retention, and a dropped delete changes nothing the writer sees; puts are
/// refused by the same rule, and `kstate.dropped-records` counts both.
#[test]
fn a_delete_is_reported_dropped_exactly_when_older_than_the_retention() {
    use kstate::store::{VersionedDelete, PUT_RETURN_CODE_NOT_PUT};
    for (seed, engine) in [(11u64, EngineKind::Memory), (12, EngineKind::RocksDb)] {
        let dir = tempfile::tempdir().unwrap();
        let store = match engine {
            EngineKind::Memory => {
                VersionedStore::open_in_memory(&options(engine, 1 << 30)).unwrap()
            }
            EngineKind::RocksDb => {
                VersionedStore::open(dir.path().join("v"), &options(engine, 16 * 1024)).unwrap()
            }
        };
        let (mut stream_time, mut committed_time) = (-1i64, -1i64);
        let (mut dropped_deletes, mut deletes, mut dropped_puts, mut offset) = (0, 0, 0, 0);
        for (i, op) in VWorkload::new(seed).take(4_000).enumerate() {
            let late = |t: i64| t < stream_time - RETENTION;
            match &op {
                VOp::Delete(k, t) => {
                    let before = late(*t).then(|| dump(&store, Isolation::ReadUncommitted));
                    let got = store.delete(k, *t).unwrap();
                    let at =
                        format!("seed {seed} op {i}: delete at {t}, stream time {stream_time}");
                    assert_eq!(got.is_not_put(), late(*t), "{at}: {got:?}");
                    match before {
                        Some(before) => {
                            assert_eq!(got, VersionedDelete::NotPut, "{at}");
                            assert_eq!(dump(&store, Isolation::ReadUncommitted), before, "{at}");
                            dropped_deletes += 1;
                        }
                        None => {
                            stream_time = stream_time.max(*t);
                            deletes += 1;
                        }
                    }
                }
                VOp::Put(k, v, t) => {
                    let code = store.put(k, v.as_deref(), *t).unwrap();
                    assert_eq!(
                        code == PUT_RETURN_CODE_NOT_PUT,
                        late(*t),
                        "seed {seed} op {i}"
                    );
                    match late(*t) {
                        true => dropped_puts += 1,
                        false => stream_time = stream_time.max(*t),
                    }
                }
                VOp::Commit => {
                    offset += 1;
                    workload_versioned::apply(&store, &op, offset).unwrap();
                    committed_time = stream_time;
                }
                VOp::Rollback => {
                    workload_versioned::apply(&store, &op, offset).unwrap();
                    stream_time = committed_time;
                }
            }
            assert_eq!(
                store.stream_time(Isolation::ReadUncommitted).unwrap(),
                stream_time,
                "seed {seed} op {i}"
            );
        }
        assert_eq!(
            store.property("kstate.dropped-records").unwrap(),
            Some(dropped_deletes + dropped_puts)
        );
        assert!(
            dropped_deletes > 10 && deletes > 100,
            "{engine:?}: {dropped_deletes} deletes dropped, {deletes} written"
        );
        eprintln!("{engine:?}: {dropped_deletes} deletes dropped, {deletes} written");
    }
}

#[test]
fn restore_refuses_a_store_with_uncommitted_writes_and_keeps_them() {
    let store = VersionedStore::open_in_memory(&options(EngineKind::Memory, 1 << 20)).unwrap();
    store.put(b"k", Some(b"mine"), 10).unwrap();
    let e = store
        .restore_batch(&[(&b"k"[..], Some(&b"r"[..]), 5)], &[], None)
        .unwrap_err();
    assert_eq!(e.code(), kstate::ErrorCode::InvalidArgument, "{e}");
    assert_eq!(store.get(b"k").unwrap().unwrap().value, b"mine");
    // An oversized key refuses the whole batch before anything is applied.
    store.rollback().unwrap();
    let big = vec![0u8; kstate::MAX_KEY_BYTES];
    let e = store
        .restore_batch(
            &[(&b"a"[..], Some(&b"1"[..]), 1), (&big[..], None, 2)],
            &[],
            None,
        )
        .unwrap_err();
    assert_eq!(e.code(), kstate::ErrorCode::KeyTooLarge, "{e}");
    assert_eq!(store.get(b"a").unwrap(), None);
    assert_eq!(store.commit_sequence().unwrap(), 0);
}

#[test]
fn options_are_checked_as_kafka_checks_them_and_the_interval_is_kept() {
    let e = VersionedStore::open_in_memory(&VersionedOptions::new(-1)).unwrap_err();
    assert_eq!(e.code(), kstate::ErrorCode::InvalidArgument);
    let e = VersionedStore::open_in_memory(&VersionedOptions::new(10).with_segment_interval(0))
        .unwrap_err();
    assert_eq!(e.code(), kstate::ErrorCode::InvalidArgument);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v");
    let s = VersionedStore::open(&path, &VersionedOptions::new(60_000)).unwrap();
    assert_eq!(s.segment_interval(), 20_000);
    s.close().unwrap();
    s.close().unwrap();
    assert_eq!(
        s.get(b"k").unwrap_err().code(),
        kstate::ErrorCode::StoreClosed
    );
    let s = VersionedStore::open(
        &path,
        &VersionedOptions::new(60_000).with_segment_interval(5),
    )
    .unwrap();
    assert_eq!(
        s.segment_interval(),
        20_000,
        "an existing store keeps its interval"
    );
    s.close().unwrap();
    // A versioned store is no key-value or window store, and the other way round.
    let e = kstate::KvStore::open(&path, &StoreOptions::default()).unwrap_err();
    assert_eq!(e.code(), kstate::ErrorCode::FormatMismatch, "{e}");
    let kv = dir.path().join("kv");
    kstate::KvStore::open(&kv, &StoreOptions::default())
        .unwrap()
        .close()
        .unwrap();
    let e = VersionedStore::open(&kv, &VersionedOptions::new(10)).unwrap_err();
    assert_eq!(e.code(), kstate::ErrorCode::FormatMismatch, "{e}");
}

/// The example of docs/rust-api.md ("Versioned key-value stores"), with its claims checked.
#[test]
fn the_rust_api_page_example_answers_as_documented() -> kstate::Result<()> {
    use kstate::store::VersionOrder;
    use kstate::TopicPartition;
    let dir = tempfile::tempdir().unwrap();
    let store = VersionedStore::open(dir.path().join("prices"), &VersionedOptions::new(3_600_000))?;
    assert_eq!(store.put(b"eur", Some(b"1.08"), 1_000)?, -1);
    assert_eq!(store.put(b"eur", Some(b"1.07"), 500)?, 1_000);
    let v = store.get_as_of(b"eur", 700)?.unwrap();
    assert_eq!(
        (v.value.as_slice(), v.timestamp, v.valid_to),
        (&b"1.07"[..], 500, Some(1_000))
    );
    let ended = store.delete(b"eur", 2_000)?.into_record().unwrap();
    assert_eq!(
        (ended.value.as_slice(), ended.timestamp),
        (&b"1.08"[..], 1_000)
    );
    let committed = || {
        store.versions(
            Isolation::ReadCommitted,
            b"eur",
            None,
            None,
            VersionOrder::Ascending,
        )
    };
    assert!(committed()?.is_empty(), "nothing is committed yet");
    store.commit(
        &[(TopicPartition::new("app-prices-changelog", 0), Some(42))],
        None,
    )?;
    let spans: Vec<_> = committed()?
        .iter()
        .map(|r| (r.timestamp, r.valid_to))
        .collect();
    assert_eq!(spans, [(500, Some(1_000)), (1_000, Some(2_000))]);
    store.close()
}

/// The rows Kafka 4.4's `RocksDBVersionedStore` wrote (history retention 10 s, segment
/// interval 1 s) for `k=v1@5, k=v2@1010, k=v0@2, k=v2b@1010, t=null@3005, e=""@7,
/// delete(k)@4000, x=vx@4001`, as dumped from its `default` family.
fn kafka_rows() -> Vec<(Vec<u8>, Vec<u8>)> {
    let key = |segment: i64, k: &[u8]| [&segment.to_be_bytes()[..], k].concat();
    let row = |next: i64, min: i64, entries: &[(i64, i32)], values: &[u8]| {
        let mut r = [next.to_be_bytes(), min.to_be_bytes()].concat();
        for (t, size) in entries {
            r.extend_from_slice(&t.to_be_bytes());
            r.extend_from_slice(&size.to_be_bytes());
        }
        r.extend_from_slice(values);
        r
    };
    let latest = |t: i64, v: &[u8]| [&t.to_be_bytes()[..], v].concat();
    let mut rows = vec![
        (key(0, b"k"), row(5, 2, &[(2, 2)], b"v0")),
        (key(1, b"k"), row(1010, 5, &[(5, 2)], b"v1")),
        (key(3, b"t"), row(3005, 3005, &[(3005, -1)], b"")),
        (key(4, b"k"), row(4000, 1010, &[(1010, 3)], b"v2b")),
        (key(-1, b"e"), latest(7, b"")),
        (key(-1, b"x"), latest(4001, b"vx")),
    ];
    rows.sort();
    rows
}

fn kafka_store(path: &std::path::Path, rows: &[(Vec<u8>, Vec<u8>)], status: i64) {
    let mut o = rocksdb::Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    let db = rocksdb::DB::open_cf(&o, path, ["default", "offsets"]).unwrap();
    for (k, v) in rows {
        db.put(k, v).unwrap();
    }
    let offsets = db.cf_handle("offsets").unwrap();
    db.put_cf(offsets, b"app-vs-changelog-0", 7i64.to_be_bytes())
        .unwrap();
    db.put_cf(offsets, b"status", status.to_be_bytes()).unwrap();
    db.flush().unwrap();
}

fn kafka_entries(path: &std::path::Path, family: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = rocksdb::DB::open_cf_for_read_only(
        &rocksdb::Options::default(),
        path,
        ["default", "offsets"],
        false,
    )
    .unwrap();
    let cf = db.cf_handle(family).unwrap();
    db.iterator_cf(cf, rocksdb::IteratorMode::Start)
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn record(value: &str, timestamp: i64, valid_to: Option<i64>) -> Option<kstate::VersionedRecord> {
    Some(kstate::VersionedRecord {
        value: value.as_bytes().to_vec(),
        timestamp,
        valid_to,
    })
}

/// A directory of Kafka's versioned store is adopted in place when a kstate versioned
/// store opens it, with its offsets, and answers what Kafka answered; the export writes
/// Kafka's rows back byte for byte, with the offsets, and adopting that again changes
/// nothing. A store Kafka left open, or a plain Kafka store, is refused untouched.
#[test]
fn kafka_versioned_stores_are_adopted_and_handed_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vs");
    kafka_store(&path, &kafka_rows(), 0);
    let options = VersionedOptions::new(10_000).with_segment_interval(1_000);
    let planned = kstate::store::PlannedStore::Versioned {
        path: path.clone(),
        options: options.clone(),
    };
    assert!(
        planned.check().unwrap(),
        "the task's adoption check sees Kafka's store"
    );
    let store = VersionedStore::open(&path, &options).unwrap();
    let tp = kstate::TopicPartition::new("app-vs-changelog", 0);
    assert_eq!(store.committed_offset(&tp).unwrap(), Some(7));
    assert_eq!(store.stream_time(Isolation::ReadCommitted).unwrap(), 4001);
    for isolation in [Isolation::ReadCommitted, Isolation::ReadUncommitted] {
        let get = |k: &[u8], t: Option<i64>| store.get_with(isolation, k, t).unwrap();
        assert_eq!(get(b"k", Some(10)), record("v1", 5, Some(1010)));
        assert_eq!(get(b"k", Some(2)), record("v0", 2, Some(5)));
        assert_eq!(get(b"k", Some(1500)), record("v2b", 1010, Some(4000)));
        assert_eq!(get(b"k", Some(4000)), None);
        assert_eq!(get(b"k", None), None);
        assert_eq!(get(b"e", None), record("", 7, None));
        assert_eq!(get(b"x", Some(5000)), record("vx", 4001, None));
        assert_eq!(get(b"t", Some(3005)), None);
    }
    // The degenerate tombstone bounds an older write, as in Kafka.
    assert_eq!(store.put(b"t", Some(b"late"), 3000).unwrap(), 3005);
    store.rollback().unwrap();
    let before = dump(&store, Isolation::ReadCommitted);
    store.close().unwrap();

    let report = kstate::store::export_versioned_to_kafka(&path).unwrap();
    assert_eq!((report.latest, report.rows), (2, 4));
    assert_eq!(kafka_entries(&path, "default"), kafka_rows());
    let offsets = kafka_entries(&path, "offsets");
    assert!(offsets.contains(&(b"app-vs-changelog-0".to_vec(), 7i64.to_be_bytes().to_vec())));
    assert!(offsets.contains(&(b"status".to_vec(), 0i64.to_be_bytes().to_vec())));

    let again = VersionedStore::open(&path, &options).unwrap();
    assert_eq!(dump(&again, Isolation::ReadCommitted), before);
    again.close().unwrap();
    let planned = kstate::store::PlannedStore::Versioned {
        path: path.clone(),
        options: options.clone(),
    };
    assert!(
        !planned.check().unwrap(),
        "kstate's own store: nothing to adopt"
    );

    // Left open by Kafka: refused, nothing changed; a plain Kafka store is not versioned.
    let open = dir.path().join("open");
    kafka_store(&open, &kafka_rows(), 1);
    let e = VersionedStore::open(&open, &options).unwrap_err();
    assert_eq!(e.code(), kstate::ErrorCode::Corruption, "{e}");
    let planned = kstate::store::PlannedStore::Versioned {
        path: open.clone(),
        options: options.clone(),
    };
    assert_eq!(
        planned.check().unwrap_err().code(),
        kstate::ErrorCode::Corruption
    );
    assert_eq!(kafka_entries(&open, "default"), kafka_rows());
    let plain = dir.path().join("plain");
    kafka_store(&plain, &[(b"customer-1".to_vec(), b"{}".to_vec())], 0);
    let e = VersionedStore::open(&plain, &options).unwrap_err();
    assert_eq!(e.code(), kstate::ErrorCode::FormatMismatch, "{e}");
    assert!(e.to_string().contains("not a versioned one"), "{e}");
}

/// Whatever a workload leaves (tombstones, gaps, versions split and replaced, expired
/// history), exporting to Kafka's layout and adopting it again keeps every answer.
#[test]
fn export_and_adoption_keep_every_answer_of_a_workload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w");
    let rocks = options(EngineKind::RocksDb, 1 << 20);
    let store = VersionedStore::open(&path, &rocks).unwrap();
    let mut offset = 0;
    for op in VWorkload::new(3).take(3_000) {
        offset += i64::from(op == VOp::Commit);
        answer(&store, &op, offset);
    }
    store.rollback().unwrap();
    let before = dump(&store, Isolation::ReadCommitted);
    store.close().unwrap();
    kstate::store::export_versioned_to_kafka(&path).unwrap();
    let again = VersionedStore::open(&path, &rocks).unwrap();
    assert_eq!(dump(&again, Isolation::ReadCommitted), before);
    again.close().unwrap();
}
