//! Deterministic checks of window and session stores that the model tests do not cover:
//! store kinds refuse each other, the segment interval is fixed at creation, the stream
//! time survives a reopen with the commit it belongs to, and expired segments are
//! reclaimed on disk by the commit that expires them.

use kstate::store::{SessionOptions, SessionStore, WindowOptions, WindowStore};
use kstate::{ErrorCode, Isolation, KvStore, StoreOptions, TopicPartition};

fn tp() -> TopicPartition {
    TopicPartition::new("c", 0)
}

#[test]
fn store_kinds_refuse_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let (w, s, kv) = (
        dir.path().join("w"),
        dir.path().join("s"),
        dir.path().join("kv"),
    );
    WindowStore::open(&w, &WindowOptions::new(1000, 10, false))
        .unwrap()
        .close()
        .unwrap();
    SessionStore::open(&s, &SessionOptions::new(1000))
        .unwrap()
        .close()
        .unwrap();
    KvStore::open(&kv, &StoreOptions::default())
        .unwrap()
        .close()
        .unwrap();
    let code = |e: kstate::Error| e.code();
    assert_eq!(
        code(KvStore::open(&w, &StoreOptions::default()).unwrap_err()),
        ErrorCode::FormatMismatch
    );
    assert_eq!(
        code(SessionStore::open(&w, &SessionOptions::new(1000)).unwrap_err()),
        ErrorCode::FormatMismatch
    );
    assert_eq!(
        code(WindowStore::open(&s, &WindowOptions::new(1000, 10, false)).unwrap_err()),
        ErrorCode::FormatMismatch
    );
    assert_eq!(
        code(WindowStore::open(&kv, &WindowOptions::new(1000, 10, false)).unwrap_err()),
        ErrorCode::FormatMismatch
    );
    let plain = WindowOptions::new(1000, 10, false)
        .with_store(StoreOptions::plain(kstate::EngineKind::RocksDb));
    assert_eq!(
        code(WindowStore::open(&w, &plain).unwrap_err()),
        ErrorCode::FormatMismatch
    );
    assert_eq!(
        code(WindowStore::open(&w, &WindowOptions::new(5, 10, false)).unwrap_err()),
        ErrorCode::InvalidArgument
    );
    // The key-value store still opens as before: its header is unchanged (version 1).
    KvStore::open(&kv, &StoreOptions::default())
        .unwrap()
        .close()
        .unwrap();
}

#[test]
fn segment_interval_and_stream_time_persist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w");
    let options = WindowOptions::new(1000, 10, false).with_segment_interval(100);
    let store = WindowStore::open(&path, &options).unwrap();
    assert_eq!(store.stream_time(Isolation::ReadCommitted).unwrap(), -1);
    store.put(b"k", Some(b"v"), 1, 5000).unwrap();
    assert_eq!(store.stream_time(Isolation::ReadUncommitted).unwrap(), 5000);
    assert_eq!(store.stream_time(Isolation::ReadCommitted).unwrap(), -1);
    store.commit(&[(tp(), Some(3))], None).unwrap();
    store.put(b"k", Some(b"v"), 1, 9000).unwrap();
    store.close().unwrap();
    // Another default interval asked for: the store keeps its own.
    let store = WindowStore::open(&path, &WindowOptions::new(1000, 10, false)).unwrap();
    assert_eq!(store.segment_interval(), 100);
    assert_eq!(
        store.stream_time(Isolation::ReadUncommitted).unwrap(),
        5000,
        "uncommitted 9000 is gone"
    );
    // Late by more than the retention: invisible, and a late put is dropped.
    store.put(b"old", Some(b"x"), 1, 3999).unwrap();
    assert_eq!(store.fetch(b"old", 3999).unwrap(), None);
    assert_eq!(store.fetch(b"k", 5000).unwrap().unwrap().value, b"v");
    store.close().unwrap();
}

/// A put into an expired segment is dropped and reports it (Kafka counts such writes in its
/// `dropped-records` task metric; the Java adapter does from this answer).
#[test]
fn a_put_into_an_expired_segment_reports_the_drop() {
    const V: &[u8] = &[0, 0, 0, 0, 0, 0, 0, 1, b'v'];
    let dir = tempfile::tempdir().unwrap();
    let options = WindowOptions::new(1000, 10, false).with_segment_interval(100);
    let w = WindowStore::open(dir.path().join("w"), &options).unwrap();
    assert!(w.put_raw(b"k", Some(V), 5000).unwrap());
    // lowest live segment: (5000 - 1000) / 100 = 40
    assert!(!w.put_raw(b"old", Some(V), 3999).unwrap(), "segment 39");
    assert!(!w.put_raw(b"old", None, 3999).unwrap(), "a delete too");
    assert!(w.put_raw(b"edge", Some(V), 4000).unwrap(), "segment 40");
    let dups = WindowOptions::new(1000, 10, true).with_segment_interval(100);
    let d = WindowStore::open(dir.path().join("d"), &dups).unwrap();
    assert!(d.put_raw(b"k", Some(V), 5000).unwrap());
    assert!(
        d.put_raw(b"old", None, 0).unwrap(),
        "a delete with duplicates is ignored before any segment"
    );
    let sessions = SessionOptions::new(1000).with_segment_interval(100);
    let s = SessionStore::open(dir.path().join("s"), &sessions).unwrap();
    assert!(s.put(b"k", 5000, 5000, Some(b"a")).unwrap());
    assert!(!s.put(b"old", 3000, 3999, Some(b"a")).unwrap());
    assert!(s.put(b"edge", 4000, 4000, Some(b"a")).unwrap());
}

#[test]
fn the_commit_reclaims_expired_segments_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let options = SessionOptions::new(1000).with_segment_interval(100);
    let store = SessionStore::open(dir.path().join("s"), &options).unwrap();
    for i in 0..2000i64 {
        store
            .put(format!("key{i:05}").as_bytes(), i, i, Some(b"agg"))
            .unwrap();
    }
    // Stream time 1999: the commit already dropped the segments below 999 (the first 900).
    store.commit(&[(tp(), Some(1))], None).unwrap();
    store.compact().unwrap();
    let before = store
        .property("rocksdb.estimate-num-keys")
        .unwrap()
        .unwrap();
    // Stream time 100_000: everything written so far has expired.
    store.put(b"late", 100_000, 100_000, Some(b"x")).unwrap();
    let all: Vec<_> = store.all().unwrap().collect::<kstate::Result<_>>().unwrap();
    assert_eq!(
        all.len(),
        1,
        "expired sessions are invisible before the commit"
    );
    let committed: Vec<_> = store
        .query(
            Isolation::ReadCommitted,
            &kstate::store::SessionQuery::All,
            false,
        )
        .unwrap()
        .collect::<kstate::Result<_>>()
        .unwrap();
    assert_eq!(
        committed.len(),
        1000,
        "committed readers keep the last commit's retention"
    );
    store.commit(&[(tp(), Some(2))], None).unwrap();
    store.compact().unwrap();
    let after = store
        .property("rocksdb.estimate-num-keys")
        .unwrap()
        .unwrap();
    assert!(
        before >= 1000 && after <= 10,
        "before {before}, after {after}"
    );
    store.close().unwrap();
}

/// Kafka's segmented stores open a RocksDB instance with its own 50 MiB cache per live
/// segment; kstate's one instance gets the same budget: `block_cache_bytes` per segment
/// live at the retention and segment interval, at most three (the data family's memtable
/// likewise, see `the_data_memtable_is_sized_per_live_segment`).
#[test]
fn the_block_cache_is_sized_per_live_segment_up_to_three() {
    let dir = tempfile::tempdir().unwrap();
    const MIB: u64 = 1 << 20;
    let capacity = |p: Option<u64>| p.expect("the cache capacity");
    let window = |name: &str, options: WindowOptions| {
        let w = WindowStore::open(dir.path().join(name), &options).unwrap();
        let c = capacity(w.property("rocksdb.block-cache-capacity").unwrap());
        w.close().unwrap();
        c
    };
    // Kafka's default interval (retention / 2): three segments.
    assert_eq!(
        window("w1", WindowOptions::new(7_200_000, 60_000, false)),
        150 * MIB
    );
    // Retention one minute, interval one minute (Kafka's floor): two segments.
    assert_eq!(
        window("w2", WindowOptions::new(60_000, 1_000, false)),
        100 * MIB
    );
    // No retention: the one current segment.
    assert_eq!(window("w3", WindowOptions::new(0, 0, false)), 50 * MIB);
    // A custom small interval (Kafka would keep 25 segments): capped at three.
    assert_eq!(
        window(
            "w4",
            WindowOptions::new(1_440_000, 1_000, false).with_segment_interval(60_000)
        ),
        150 * MIB
    );
    // The option is per segment: 8 MiB each.
    let mut small = WindowOptions::new(7_200_000, 60_000, false);
    small.store.rocksdb.block_cache_bytes = 8 << 20;
    assert_eq!(window("w5", small), 24 * MIB);
    let s = SessionStore::open(dir.path().join("s"), &SessionOptions::new(600_000)).unwrap();
    assert_eq!(
        capacity(s.property("rocksdb.block-cache-capacity").unwrap()),
        150 * MIB
    );
    s.close().unwrap();
    // A key-value store keeps one cache of the configured size.
    let kv = KvStore::open(dir.path().join("kv"), &StoreOptions::default()).unwrap();
    assert_eq!(
        capacity(kv.property("rocksdb.block-cache-capacity").unwrap()),
        50 * MIB
    );
    kv.close().unwrap();
}

/// As the cache, the data family's memtable holds `write_buffer_bytes` per live segment (at
/// most three): 2 MiB per segment lets a window store buffer about 4 MiB of writes in one
/// memtable without a flush, where a key-value store with the same options switches
/// memtables at 2 MiB.
#[test]
fn the_data_memtable_is_sized_per_live_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = StoreOptions::default();
    store.rocksdb.write_buffer_bytes = 2 << 20;
    let w = WindowStore::open(
        dir.path().join("w"),
        &WindowOptions::new(7_200_000, 60_000, false).with_store(store.clone()),
    )
    .unwrap();
    let kv = KvStore::open(dir.path().join("kv"), &store).unwrap();
    let prop = |p: kstate::Result<Option<u64>>| p.unwrap().unwrap_or(0);
    // The creation's header, flushed when the new store was published.
    let files_at_open = prop(w.property("rocksdb.num-files-at-level0"));
    let value = [7u8; 120];
    for i in 0..24_000u32 {
        let key = format!("key-{:08}", i);
        w.put(key.as_bytes(), Some(&value), 0, i64::from(i % 60) * 60_000)
            .unwrap();
        kv.put(key.as_bytes(), &value, 0).unwrap();
        if i % 1000 == 999 {
            w.commit(&[(tp(), Some(i64::from(i)))], None).unwrap();
            kv.commit(&[(tp(), Some(i64::from(i)))], None).unwrap();
        }
    }
    let active = prop(w.property("rocksdb.cur-size-active-mem-table"));
    assert!(
        active > 3 << 20,
        "the window store's memtable holds {active} bytes"
    );
    assert_eq!(prop(w.property("rocksdb.num-immutable-mem-table")), 0);
    assert_eq!(
        prop(w.property("rocksdb.num-files-at-level0")),
        files_at_open,
        "no flush"
    );
    let kv_active = prop(kv.property("rocksdb.cur-size-active-mem-table"));
    assert!(
        kv_active < 3 << 20,
        "the key-value store's memtable holds {kv_active} bytes"
    );
    w.close().unwrap();
    kv.close().unwrap();
}
