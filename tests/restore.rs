//! `KvStore::restore_batch`, the restore fast path: changelog batches written straight to
//! the engine and committed with their offset, checked against a `BTreeMap` model on both
//! engines (duplicates within a batch, deletes, both isolation levels, reopen), and its
//! refusals (uncommitted writes, invalid entries) leaving the store unchanged. Kills during
//! restores are in `tests/crash.rs`.

use std::collections::BTreeMap;

use kstate::format::value;
use kstate::{EngineKind, ErrorCode, Isolation, KeyRange, KvStore, StoreOptions, TopicPartition};

fn tp() -> TopicPartition {
    TopicPartition::new("app-store-changelog", 3)
}

fn dump(store: &KvStore, isolation: Isolation) -> BTreeMap<Vec<u8>, Vec<u8>> {
    store
        .scan(isolation, &KeyRange::all(), false)
        .unwrap()
        .collect::<kstate::Result<_>>()
        .unwrap()
}

/// A changelog batch: keys from a small space (so batches repeat keys), one in eight a
/// tombstone.
fn batch(seed: u64, len: usize) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..len)
        .map(|i| {
            let key = format!("key-{:04}", next() % 700).into_bytes();
            let value = (next() % 8 != 0)
                .then(|| value::encode(format!("v{seed}-{i}").as_bytes(), i as i64));
            (key, value)
        })
        .collect()
}

fn apply(model: &mut BTreeMap<Vec<u8>, Vec<u8>>, batch: &[(Vec<u8>, Option<Vec<u8>>)]) {
    for (k, v) in batch {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
}

fn restore(store: &KvStore, b: &[(Vec<u8>, Option<Vec<u8>>)], offset: i64, meta: &[u8]) {
    store
        .restore_batch(
            b.iter().map(|(k, v)| (k.as_slice(), v.as_deref())),
            &[(tp(), Some(offset))],
            Some(meta),
        )
        .unwrap();
}

fn check(store: &KvStore, model: &BTreeMap<Vec<u8>, Vec<u8>>, offset: i64, meta: &[u8]) {
    assert_eq!(
        &dump(store, Isolation::ReadCommitted),
        model,
        "committed view"
    );
    assert_eq!(
        &dump(store, Isolation::ReadUncommitted),
        model,
        "writer view"
    );
    for k in ["key-0001", "key-0350", "key-0699", "absent"] {
        assert_eq!(
            store.get_raw(k.as_bytes()).unwrap().as_ref(),
            model.get(k.as_bytes()),
            "{k}"
        );
    }
    assert_eq!(store.committed_offset(&tp()).unwrap(), Some(offset));
    assert_eq!(store.committed_metadata().unwrap().as_deref(), Some(meta));
    assert_eq!(store.approximate_num_uncommitted_bytes().unwrap(), 0);
}

#[test]
fn restored_batches_equal_the_model_on_both_engines_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    for engine in [EngineKind::RocksDb, EngineKind::Memory] {
        let path = dir.path().join(engine.name());
        let options = StoreOptions::timestamped(engine);
        let store = KvStore::open(&path, &options).unwrap();
        let mut model = BTreeMap::new();
        let mut offset = 0;
        for round in 0..40u64 {
            let b = batch(round + 1, 1 + (round as usize * 37) % 500);
            offset += b.len() as i64;
            apply(&mut model, &b);
            restore(&store, &b, offset - 1, format!("pos-{round}").as_bytes());
            check(
                &store,
                &model,
                offset - 1,
                format!("pos-{round}").as_bytes(),
            );
            if round % 10 == 9 {
                // Normal processing between restores: a transaction commits through the
                // buffer (a logged write, which makes the restored batches durable first).
                store.put(b"key-0001", b"processed", 7).unwrap();
                model.insert(b"key-0001".to_vec(), value::encode(b"processed", 7));
                store
                    .commit(&[(tp(), Some(offset - 1))], Some(b"after"))
                    .unwrap();
                restore(&store, &[], offset - 1, b"after");
                check(&store, &model, offset - 1, b"after");
            }
        }
        store.close().unwrap();
        if engine == EngineKind::RocksDb {
            let reopened = KvStore::open(&path, &options).unwrap();
            // the last round ended with a commit carrying "after"
            check(&reopened, &model, offset - 1, b"after");
            reopened.close().unwrap();
        }
    }
}

#[test]
fn restore_is_refused_while_the_transaction_has_writes_and_for_invalid_entries() {
    for engine in [EngineKind::RocksDb, EngineKind::Memory] {
        let dir = tempfile::tempdir().unwrap();
        // a small bound, so that one case has spilled writes
        let options = StoreOptions::timestamped(engine).with_max_uncommitted_bytes(4096);
        let store = KvStore::open(dir.path().join("s"), &options).unwrap();
        let b = batch(9, 50);
        let mut model = BTreeMap::new();
        apply(&mut model, &b);
        restore(&store, &b, 49, b"m");

        let one = [(b"key-0001".to_vec(), Some(value::encode(b"r", 1)))];
        // Buffered, then spilled, uncommitted writes: refused, nothing changes.
        store.put(b"pending", b"x", 1).unwrap();
        for spilled in [false, true] {
            if spilled {
                for i in 0..200 {
                    store.put(format!("p{i}").as_bytes(), &[7; 64], 1).unwrap();
                }
                assert!(store.property("kstate.spills").unwrap().unwrap() > 0);
            }
            let e = store
                .restore_batch(
                    one.iter().map(|(k, v)| (k.as_slice(), v.as_deref())),
                    &[(tp(), Some(50))],
                    None,
                )
                .unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
            assert!(e.to_string().contains("uncommitted writes"), "{e}");
            assert_eq!(dump(&store, Isolation::ReadCommitted), model);
            assert_eq!(store.committed_offset(&tp()).unwrap(), Some(49));
        }
        store.rollback().unwrap();

        // An invalid entry (a timestamped value shorter than its timestamp): nothing written.
        let bad: Vec<(&[u8], Option<&[u8]>)> = vec![
            (b"key-0002", Some(&[0u8; 12][..])),
            (b"key-0003", Some(b"short")),
        ];
        let e = store
            .restore_batch(bad, &[(tp(), Some(51))], None)
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue, "{e}");
        check(&store, &model, 49, b"m");

        // And after the refusals the store restores and commits as usual.
        apply(&mut model, &one);
        restore(&store, &one, 52, b"n");
        check(&store, &model, 52, b"n");
        store.close().unwrap();
    }
}

#[test]
fn restore_in_upgrade_mode_migrates_the_restored_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let plain = KvStore::open(&path, &StoreOptions::plain(EngineKind::RocksDb)).unwrap();
    for k in ["a", "b", "c"] {
        plain.put_raw(k.as_bytes(), Some(b"plain")).unwrap();
    }
    plain.commit(&[], None).unwrap();
    plain.close().unwrap();
    let store = KvStore::open(&path, &StoreOptions::timestamped(EngineKind::RocksDb)).unwrap();
    assert!(store.is_upgrading());
    let restored = value::encode(b"restored", 5);
    store
        .restore_batch(
            [(&b"a"[..], Some(&restored[..])), (&b"b"[..], None)],
            &[(tp(), Some(1))],
            None,
        )
        .unwrap();
    let mut model = BTreeMap::new();
    model.insert(b"a".to_vec(), restored.clone());
    model.insert(b"c".to_vec(), value::encode(b"plain", -1));
    assert_eq!(dump(&store, Isolation::ReadCommitted), model);
    assert_eq!(dump(&store, Isolation::ReadUncommitted), model);
    store.close().unwrap();
    let reopened = KvStore::open(&path, &StoreOptions::timestamped(EngineKind::RocksDb)).unwrap();
    assert_eq!(dump(&reopened, Isolation::ReadCommitted), model);
    assert_eq!(reopened.committed_offset(&tp()).unwrap(), Some(1));
    reopened.close().unwrap();
}

/// Large restores are gathered, sorted, written as one file and ingested: tombstones,
/// repeated keys within and across batches, and data written before (through the
/// transaction and through small restores) all resolve as the changelog order says.
#[test]
fn large_restores_are_ingested_and_equal_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    // A 256 KiB bound: a gathering of that size is ingested as a file.
    let options =
        StoreOptions::timestamped(EngineKind::RocksDb).with_max_uncommitted_bytes(256 << 10);
    let store = KvStore::open(&path, &options).unwrap();
    let mut model = BTreeMap::new();
    // Data committed through the transaction first, which restores then overwrite.
    for i in 0..700 {
        let k = format!("key-{i:04}");
        store.put(k.as_bytes(), b"before", 1).unwrap();
        model.insert(k.into_bytes(), value::encode(b"before", 1));
    }
    store.commit(&[(tp(), Some(0))], Some(b"m0")).unwrap();
    let mut offset = 0i64;
    for round in 0..60u64 {
        // Batches of Kafka's size, keys repeating within and across batches.
        let b = batch(round + 100, 1000);
        offset += b.len() as i64;
        apply(&mut model, &b);
        let meta = format!("m{round}");
        restore(&store, &b, offset, meta.as_bytes());
        if round % 20 == 19 {
            check(&store, &model, offset, meta.as_bytes());
        }
    }
    let ingested = store
        .property("kstate.restore-ingestions")
        .unwrap()
        .unwrap();
    assert!(ingested >= 2, "only {ingested} ingestions");
    // After a small restore and a commit through the transaction, everything still holds.
    let tail = batch(7, 10);
    offset += 10;
    apply(&mut model, &tail);
    restore(&store, &tail, offset, b"tail");
    store.put(b"key-0003", b"processed", 9).unwrap();
    model.insert(b"key-0003".to_vec(), value::encode(b"processed", 9));
    store.commit(&[(tp(), Some(offset))], Some(b"end")).unwrap();
    check(&store, &model, offset, b"end");
    store.close().unwrap();
    let staged: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("kstate-restore-")
        })
        .collect();
    assert!(staged.is_empty(), "staged files left behind: {staged:?}");
    let reopened = KvStore::open(&path, &options).unwrap();
    check(&reopened, &model, offset, b"end");
    reopened.close().unwrap();
}

/// A restore gathered but not yet written is written before anything else looks at the
/// store: a committed read from another handle of the same store (another thread) and
/// the offset query Kafka makes both see it.
#[test]
fn gathered_restores_are_seen_by_every_later_call() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::timestamped(EngineKind::RocksDb);
    let store = std::sync::Arc::new(KvStore::open(dir.path().join("s"), &options).unwrap());
    let b = batch(3, 400);
    let mut model = BTreeMap::new();
    apply(&mut model, &b);
    restore(&store, &b, 399, b"m");
    let reader = std::sync::Arc::clone(&store);
    let seen = std::thread::spawn(move || dump(&reader, Isolation::ReadCommitted))
        .join()
        .unwrap();
    assert_eq!(seen, model);
    restore(&store, &batch(4, 10), 409, b"n");
    assert_eq!(store.committed_offset(&tp()).unwrap(), Some(409));
    assert_eq!(
        store.committed_metadata().unwrap().as_deref(),
        Some(&b"n"[..])
    );
    store.close().unwrap();
}
