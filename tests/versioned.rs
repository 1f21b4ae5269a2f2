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
    let ended = store.delete(b"eur", 2_000)?.unwrap();
    assert_eq!(
        (ended.value.as_slice(), ended.timestamp),
        (&b"1.08"[..], 1_000)
    );
    let all = store.versions(
        Isolation::ReadCommitted,
        b"eur",
        None,
        None,
        VersionOrder::Ascending,
    )?;
    assert!(all.is_empty(), "nothing is committed yet");
    store.commit(
        &[(TopicPartition::new("app-prices-changelog", 0), Some(42))],
        None,
    )?;
    let all = store.versions(
        Isolation::ReadCommitted,
        b"eur",
        None,
        None,
        VersionOrder::Ascending,
    )?;
    let spans: Vec<_> = all.iter().map(|r| (r.timestamp, r.valid_to)).collect();
    assert_eq!(spans, [(500, Some(1_000)), (1_000, Some(2_000))]);
    store.close()
}
