//! Model-based property tests: random operation sequences (writes, reads, scans, commits,
//! rollbacks, reopen) run against both engines and against a `BTreeMap` model; every
//! observation must match the model.

// The workload is shared source, not library API: each user compiles its own copy.
#[allow(dead_code)]
#[path = "support/workload.rs"]
mod workload;

use std::collections::BTreeMap;

use kstate::{
    EngineKind, Isolation, KeyRange, KvStore, StoreOptions, TopicPartition, ValueAndTimestamp,
};
use proptest::prelude::*;
use workload::Model;

#[derive(Debug, Clone)]
enum Step {
    Put(Vec<u8>, Vec<u8>, i64),
    Delete(Vec<u8>),
    PutIfAbsent(Vec<u8>, Vec<u8>, i64),
    PutAll(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Get(Vec<u8>),
    Range(Option<Vec<u8>>, Option<Vec<u8>>, bool),
    Prefix(Vec<u8>),
    CommittedScan(bool),
    Commit(Option<i64>),
    Rollback,
    Reopen,
}

/// Keys from a tiny alphabet that includes the edges of the bytewise order (the empty
/// key, 0x00 and 0xFF), so prefixes, bounds and collisions are frequent.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![0x00u8, 0x01, b'a', b'b', 0xFF]),
        0..4,
    )
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..24)
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (key(), value(), any::<i64>()).prop_map(|(k, v, t)| Step::Put(k, v, t)),
        3 => key().prop_map(Step::Delete),
        2 => (key(), value(), any::<i64>()).prop_map(|(k, v, t)| Step::PutIfAbsent(k, v, t)),
        2 => prop::collection::vec((key(), prop::option::weighted(0.8, value())), 0..6).prop_map(Step::PutAll),
        4 => key().prop_map(Step::Get),
        3 => (prop::option::of(key()), prop::option::of(key()), any::<bool>())
            .prop_map(|(a, b, r)| Step::Range(a, b, r)),
        2 => key().prop_map(Step::Prefix),
        1 => any::<bool>().prop_map(Step::CommittedScan),
        3 => prop::option::weighted(0.9, 0i64..1_000_000).prop_map(Step::Commit),
        1 => Just(Step::Rollback),
        1 => Just(Step::Reopen),
    ]
}

fn tp() -> TopicPartition {
    TopicPartition::new("model-changelog", 0)
}

fn collect(it: kstate::KvIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|e| e.unwrap()).collect()
}

/// Reads `it` in batches of at most three entries (`next_batch`: entries lent by the
/// engine's cursor, stopping and resuming between batches).
fn collect_in_batches(mut it: kstate::KvIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    while it.next_batch(3, usize::MAX, &mut out).unwrap() > 0 {}
    out
}

fn model_range(
    view: &BTreeMap<Vec<u8>, Vec<u8>>,
    range: &KeyRange,
    reverse: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<_> = view
        .iter()
        .filter(|(k, _)| range.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if reverse {
        out.reverse();
    }
    out
}

struct Harness {
    engine: EngineKind,
    dir: tempfile::TempDir,
    options: StoreOptions,
    store: KvStore,
    model: Model,
    offset: Option<i64>,
}

impl Harness {
    fn new(engine: EngineKind, max_uncommitted: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions::timestamped(engine).with_max_uncommitted_bytes(max_uncommitted);
        let store = KvStore::open(dir.path().join("s"), &options).unwrap();
        Harness {
            engine,
            dir,
            options,
            store,
            model: Model::default(),
            offset: None,
        }
    }

    fn run(&mut self, step: &Step) {
        let s = &self.store;
        let m = &mut self.model;
        match step {
            Step::Put(k, v, t) => {
                s.put(k, v, *t).unwrap();
                m.apply(&workload::Op::Put(k.clone(), v.clone(), *t));
            }
            Step::Delete(k) => {
                let old = s.delete(k).unwrap();
                assert_eq!(old.map(|v| v.encode()), m.get(k).cloned(), "delete return");
                m.apply(&workload::Op::Delete(k.clone()));
            }
            Step::PutIfAbsent(k, v, t) => {
                let old = s.put_if_absent(k, v, *t).unwrap();
                assert_eq!(
                    old.map(|v| v.encode()),
                    m.get(k).cloned(),
                    "put_if_absent return"
                );
                m.apply(&workload::Op::PutIfAbsent(k.clone(), v.clone(), *t));
            }
            Step::PutAll(entries) => {
                let raw: Vec<(Vec<u8>, Option<Vec<u8>>)> = entries
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_ref()
                                .map(|v| ValueAndTimestamp::new(v.clone(), 5).encode()),
                        )
                    })
                    .collect();
                s.put_all_raw(raw.iter().map(|(k, v)| (k.as_slice(), v.as_deref())))
                    .unwrap();
                for (k, v) in raw {
                    m.pending.insert(k, v);
                }
            }
            Step::Get(k) => {
                assert_eq!(
                    s.get(k).unwrap().map(|v| v.encode()),
                    m.get(k).cloned(),
                    "get"
                );
                assert_eq!(
                    s.get_raw_with(Isolation::ReadCommitted, k).unwrap(),
                    m.committed.get(k).cloned(),
                    "committed get"
                );
            }
            Step::Range(from, to, reverse) => {
                let range = KeyRange::inclusive(from.as_deref(), to.as_deref());
                let it = if *reverse {
                    s.reverse_range(from.as_deref(), to.as_deref())
                } else {
                    s.range(from.as_deref(), to.as_deref())
                };
                assert_eq!(
                    collect_in_batches(it.unwrap()),
                    model_range(&m.view(), &range, *reverse),
                    "range"
                );
            }
            Step::Prefix(p) => {
                let got = collect(s.prefix_scan(p).unwrap());
                let want: Vec<_> = m
                    .view()
                    .into_iter()
                    .filter(|(k, _)| k.starts_with(p))
                    .collect();
                assert_eq!(got, want, "prefix scan");
            }
            Step::CommittedScan(reverse) => {
                let got = collect(
                    s.scan(Isolation::ReadCommitted, &KeyRange::all(), *reverse)
                        .unwrap(),
                );
                assert_eq!(
                    got,
                    model_range(&m.committed, &KeyRange::all(), *reverse),
                    "committed scan"
                );
            }
            Step::Commit(offset) => {
                s.commit(&[(tp(), *offset)], None).unwrap();
                m.apply(&workload::Op::Commit);
                self.offset = *offset;
                assert_eq!(s.committed_offset(&tp()).unwrap(), self.offset);
                assert_eq!(s.approximate_num_uncommitted_bytes().unwrap(), 0);
                if self.engine == EngineKind::Memory {
                    assert_eq!(
                        s.approximate_num_entries().unwrap(),
                        m.committed.len() as u64
                    );
                }
            }
            Step::Rollback => {
                s.rollback().unwrap();
                m.apply(&workload::Op::Rollback);
            }
            Step::Reopen => {
                if self.engine == EngineKind::RocksDb {
                    s.close().unwrap();
                    self.store = KvStore::open(self.dir.path().join("s"), &self.options).unwrap();
                    m.pending.clear();
                    assert_eq!(self.store.committed_offset(&tp()).unwrap(), self.offset);
                    assert!(self.store.recovery().previous_close_clean);
                }
            }
        }
    }

    fn check_all(&self) {
        assert_eq!(
            collect(self.store.all().unwrap()),
            model_range(&self.model.view(), &KeyRange::all(), false)
        );
        assert_eq!(
            collect(self.store.reverse_all().unwrap()),
            model_range(&self.model.view(), &KeyRange::all(), true)
        );
    }
}

fn run_case(engine: EngineKind, max_uncommitted: u64, steps: &[Step]) {
    let mut h = Harness::new(engine, max_uncommitted);
    for step in steps {
        h.run(step);
    }
    h.check_all();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn rocksdb_matches_model(steps in prop::collection::vec(step(), 1..120)) {
        run_case(EngineKind::RocksDb, 64 << 20, &steps);
    }

    #[test]
    fn rocksdb_with_spilling_matches_model(steps in prop::collection::vec(step(), 1..120)) {
        // A 300-byte bound spills every few writes, so merged reads cross all three layers.
        run_case(EngineKind::RocksDb, 300, &steps);
    }

    #[test]
    fn memory_matches_model(steps in prop::collection::vec(step(), 1..160)) {
        run_case(EngineKind::Memory, 64 << 20, &steps);
    }

    #[test]
    fn memory_with_spilling_matches_model(steps in prop::collection::vec(step(), 1..160)) {
        run_case(EngineKind::Memory, 300, &steps);
    }
}

#[test]
fn iterators_are_snapshots_and_merge_in_order() {
    for engine in [EngineKind::RocksDb, EngineKind::Memory] {
        for bound in [64 << 20, 200] {
            let mut h = Harness::new(engine, bound);
            for i in 0..20u8 {
                h.run(&Step::Put(vec![b'k', i], vec![i], i64::from(i)));
            }
            h.run(&Step::Commit(Some(1)));
            h.run(&Step::Delete(vec![b'k', 3]));
            h.run(&Step::Put(vec![b'k', 4], b"new".to_vec(), 99));
            let before = h.model.view();
            let it = h.store.all().unwrap();
            // Writes and a commit after the iterator was created stay invisible to it.
            h.run(&Step::Put(vec![b'k', 5], b"later".to_vec(), 100));
            h.run(&Step::Commit(Some(2)));
            h.run(&Step::Delete(vec![b'k', 6]));
            assert_eq!(
                collect(it),
                before.into_iter().collect::<Vec<_>>(),
                "{engine:?}/{bound}"
            );
            h.check_all();
        }
    }
}

#[test]
fn read_committed_view_runs_beside_the_writer() {
    let h = Harness::new(EngineKind::RocksDb, 64 << 20);
    let store = h.store.clone();
    let reader = std::thread::spawn(move || {
        // Every committed snapshot a reader sees is one whole commit: all ten keys carry
        // the same round number.
        for _ in 0..300 {
            let entries = collect(
                store
                    .scan(Isolation::ReadCommitted, &KeyRange::all(), false)
                    .unwrap(),
            );
            if entries.is_empty() {
                continue;
            }
            assert_eq!(entries.len(), 10);
            let first = &entries[0].1;
            assert!(
                entries.iter().all(|(_, v)| v == first),
                "torn commit observed"
            );
        }
    });
    for round in 0..300i64 {
        for k in 0..10u8 {
            h.store.put(&[k], &round.to_be_bytes(), round).unwrap();
        }
        h.store.commit(&[(tp(), Some(round))], None).unwrap();
    }
    reader.join().unwrap();
}

#[test]
fn compaction_keeps_committed_and_uncommitted_data() {
    for engine in [EngineKind::RocksDb, EngineKind::Memory] {
        let mut h = Harness::new(engine, 64 << 20);
        for i in 0..200u8 {
            h.run(&Step::Put(vec![b'c', i], vec![i; 10], i64::from(i)));
            if i % 3 == 0 {
                h.run(&Step::Delete(vec![b'c', i / 2]));
            }
        }
        h.run(&Step::Commit(Some(9)));
        h.run(&Step::Put(b"pending".to_vec(), b"p".to_vec(), 1));
        let before = h.model.view();
        let it = h.store.all().unwrap();
        h.store.compact().unwrap();
        assert_eq!(collect(it), before.into_iter().collect::<Vec<_>>());
        h.check_all();
        h.run(&Step::Reopen);
        h.check_all();
    }
}
