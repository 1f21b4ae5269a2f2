//! Upgrade by prepare and swap: a store in upgrade mode builds a pure new-format store in
//! `.<name>.kstate-swap` from its last committed snapshot while another thread keeps
//! writing and committing on it, carries those writes over, swaps the directories and goes
//! on in regular mode in the same handle. Checked against a model of the writer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kstate::format::{headers, value};
use kstate::{
    EngineKind, ErrorCode, Isolation, KeyRange, KvStore, StoreOptions, TopicPartition, ValueFormat,
};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn tp() -> TopicPartition {
    TopicPartition::new("swap-changelog", 0)
}

fn scan(s: &KvStore, isolation: Isolation) -> Map {
    s.scan(isolation, &KeyRange::all(), false)
        .unwrap()
        .map(|e| e.unwrap())
        .collect()
}

fn key(i: u64) -> Vec<u8> {
    format!("key-{i:06}").into_bytes()
}

/// A plain store of `n` values (100 bytes each) committed at offset 7; its model as a
/// timestamped store shows it.
fn plain_store(path: &std::path::Path, n: u64) -> Map {
    let s = KvStore::open(path, &StoreOptions::plain(EngineKind::RocksDb)).unwrap();
    let mut model = Map::new();
    for i in 0..n {
        let v = vec![b'a' + (i % 26) as u8; 100];
        s.put_raw(&key(i), Some(&v)).unwrap();
        model.insert(key(i), value::encode(&v, -1));
    }
    s.commit(&[(tp(), Some(7))], Some(b"meta")).unwrap();
    s.close().unwrap();
    model
}

#[test]
fn a_swap_under_concurrent_writes_keeps_every_commit_and_the_uncommitted_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let base = plain_store(&path, 120_000);
    let store = KvStore::open(&path, &StoreOptions::default()).unwrap();
    assert!(store.is_upgrading());
    // A few keys already migrated before the swap.
    store.put(&key(1), b"early", 11).unwrap();
    store.commit(&[(tp(), Some(8))], None).unwrap();
    let mut committed = base.clone();
    committed.insert(key(1), value::encode(b"early", 11));

    let go = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, go, stop) = (store.clone(), go.clone(), stop.clone());
        let mut committed = committed.clone();
        std::thread::spawn(move || {
            while !go.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            let mut current = committed.clone();
            let (mut offset, mut i) = (8i64, 0u64);
            while !stop.load(Ordering::Acquire) || i % 10 != 7 {
                let k = key((i * 7919) % 130_000);
                if i % 5 == 4 {
                    store.delete_raw(&k).unwrap();
                    current.remove(&k);
                } else {
                    let v = value::encode(format!("w{i}").as_bytes(), i as i64);
                    store.put_raw(&k, Some(&v)).unwrap();
                    current.insert(k, v);
                }
                if i % 10 == 9 {
                    offset += 1;
                    store.commit(&[(tp(), Some(offset))], None).unwrap();
                    committed = current.clone();
                }
                i += 1;
            }
            // Stopped with uncommitted writes pending (i % 10 == 7).
            (committed, current, offset, i)
        })
    };
    let mut calls = Vec::new();
    let copied = store
        .upgrade_by_swap(&mut |done, total| {
            calls.push((done, total));
            go.store(true, Ordering::Release);
            // Let the writer run while the side store is being built.
            std::thread::sleep(std::time::Duration::from_millis(30));
        })
        .unwrap();
    stop.store(true, Ordering::Release);
    go.store(true, Ordering::Release);
    let (committed, current, offset, writes) = writer.join().unwrap();
    println!(
        "swap: {copied} entries copied, {} progress calls, {writes} concurrent writes",
        calls.len()
    );
    assert!(copied >= 120_000, "{copied}");
    assert!(calls.len() > 1, "progress in batches: {calls:?}");
    assert!(calls
        .windows(2)
        .all(|w| w[0].0 < w[1].0 && w[1].0 <= w[1].1));
    assert_eq!(
        calls.last().map(|c| (c.0, c.0)),
        calls.last().copied(),
        "the last call has done == total"
    );
    assert_eq!(calls.last().map(|c| c.0), Some(copied));
    assert!(
        !store.is_upgrading(),
        "regular mode after the swap, same handle"
    );
    assert_eq!(scan(&store, Isolation::ReadCommitted), committed);
    assert_eq!(scan(&store, Isolation::ReadUncommitted), current);
    assert_eq!(store.committed_offset(&tp()).unwrap(), Some(offset));
    assert_eq!(
        store.committed_metadata().unwrap().as_deref(),
        Some(&b"meta"[..])
    );
    store.commit(&[(tp(), Some(offset + 1))], None).unwrap();
    store.close().unwrap();
    assert!(
        !dir.path().join(".s.kstate-swap").exists(),
        "side directory removed"
    );
    let report = kstate::store::inspect::inspect(&path).unwrap();
    assert!(
        report
            .families
            .iter()
            .all(|f| f.name != "default" || f.entries == 0),
        "no plain family data: {:?}",
        report.families
    );
    let s = KvStore::open(&path, &StoreOptions::default()).unwrap();
    assert!(!s.is_upgrading());
    assert_eq!(scan(&s, Isolation::ReadCommitted), current);
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(offset + 1));
    // Not in upgrade mode: nothing to do.
    assert_eq!(s.upgrade_by_swap(&mut |_, _| {}).unwrap(), 0);
    s.close().unwrap();
}

#[test]
fn timestamped_to_headers_by_swap_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let s = KvStore::open(&path, &StoreOptions::default()).unwrap();
    let mut model = Map::new();
    for i in 0..1_000 {
        s.put(&key(i), b"v", i as i64).unwrap();
        model.insert(
            key(i),
            headers::from_timestamped(&value::encode(b"v", i as i64)),
        );
    }
    s.commit(&[(tp(), Some(3))], None).unwrap();
    s.close().unwrap();
    let opts = StoreOptions {
        value_format: ValueFormat::Headers,
        ..StoreOptions::default()
    };
    let s = KvStore::open(&path, &opts).unwrap();
    assert!(s.is_upgrading());
    s.put(b"pending", b"x", 1).unwrap();
    assert_eq!(
        s.upgrade_by_swap(&mut |_, _| {}).unwrap_err().code(),
        ErrorCode::InvalidArgument,
        "uncommitted writes at the start"
    );
    s.rollback().unwrap();
    assert_eq!(s.upgrade_by_swap(&mut |_, _| {}).unwrap(), 1_000);
    assert!(!s.is_upgrading());
    assert_eq!(scan(&s, Isolation::ReadCommitted), model);
    assert_eq!(s.committed_offset(&tp()).unwrap(), Some(3));
    s.close().unwrap();
    assert_eq!(
        s.upgrade_by_swap(&mut |_, _| {}).unwrap_err().code(),
        ErrorCode::StoreClosed
    );
    let m = KvStore::open_in_memory(&StoreOptions::default()).unwrap();
    assert_eq!(
        m.upgrade_by_swap(&mut |_, _| {}).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn a_stale_side_directory_is_removed_by_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let model = plain_store(&path, 100);
    let side = dir.path().join(".s.kstate-swap");
    std::fs::create_dir(&side).unwrap();
    std::fs::write(side.join("junk"), b"half-built").unwrap();
    let s = KvStore::open(&path, &StoreOptions::default()).unwrap();
    assert!(!side.exists());
    assert_eq!(scan(&s, Isolation::ReadCommitted), model);
    s.close().unwrap();
}

#[test]
fn a_stopped_swap_leaves_the_store_in_upgrade_mode_and_a_nested_one_is_refused() {
    use std::ops::ControlFlow;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let base = plain_store(&path, 5_000);
    let store = KvStore::open(&path, &StoreOptions::default()).unwrap();
    assert!(store.is_upgrading());
    // Stopped by its callback after the first batch: nothing changed, no side directory.
    let mut calls = 0;
    let e = store
        .upgrade_by_swap_or_stop(&mut |_, _| {
            calls += 1;
            ControlFlow::Break(kstate::Error::Internal("stop here".into()))
        })
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Internal);
    assert!(e.to_string().contains("stop here"), "{e}");
    assert_eq!(calls, 1);
    assert!(store.is_upgrading());
    assert!(!dir.path().join(".s.kstate-swap").exists());
    assert_eq!(scan(&store, Isolation::ReadCommitted), base);
    // A swap started from the progress callback of another is refused; a write from the
    // callback is carried over, uncommitted.
    let mut nested = Vec::new();
    let copied = store
        .upgrade_by_swap(&mut |_, _| {
            if nested.is_empty() {
                nested.push(store.upgrade_by_swap(&mut |_, _| {}).map_err(|e| e.code()));
                store.put(b"zz-from-callback", b"v", 5).unwrap();
            }
        })
        .unwrap();
    assert_eq!(copied, 5_000);
    assert_eq!(nested, [Err(ErrorCode::InvalidArgument)]);
    assert!(!store.is_upgrading());
    let mut current = base.clone();
    current.insert(b"zz-from-callback".to_vec(), value::encode(b"v", 5));
    assert_eq!(scan(&store, Isolation::ReadCommitted), base);
    assert_eq!(scan(&store, Isolation::ReadUncommitted), current);
    store.close().unwrap();
}
