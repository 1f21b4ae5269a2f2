//! The write-fault sweep of a window store: puts that spill, commits that drop expired
//! segments (a range delete in the commit batch, or in the roll-forward of a spilled
//! commit), rollbacks, each step run on a store whose engine fails its N-th write (once, or
//! from then on until the disk is "freed"), for every N the script reaches. After every
//! step the committed and uncommitted views and stream times are compared with a reference
//! window store on the memory engine that sees only what the failing store confirmed; the
//! store is then reopened and compared again.

use std::sync::Arc;

use crate::engine::fault::FaultyEngine;
use crate::engine::rocksdb::RocksEngine;
use crate::engine::{names, Engine};
use crate::format::meta::StoreKind;
use crate::store::open::{open_memory_kind, Opened};
use crate::store::{WindowOptions, WindowQuery, WindowStore, WINDOW_FAMILY};
use crate::{EngineKind, Error, ErrorCode, Isolation, StoreOptions, TopicPartition};

const RETENTION: i64 = 6_000;
const INTERVAL: i64 = 1_000;
const WINDOW: i64 = 500;

#[derive(Debug, Clone, Copy)]
enum Step {
    /// `put(key, value, timestamp = window start)`.
    Put(u8, u8, i64),
    Commit(i64),
    Rollback,
}

fn tp() -> TopicPartition {
    TopicPartition::new("window-changelog", 0)
}

fn options(engine: EngineKind) -> WindowOptions {
    WindowOptions::new(RETENTION, WINDOW, false)
        .with_segment_interval(INTERVAL)
        .with_store(StoreOptions::timestamped(engine).with_max_uncommitted_bytes(1_000))
}

/// Stream time moves forward over 20 s, so segments expire and commits drop them; the
/// transactions spill (values of 100 bytes over a 1,000-byte bound); one is rolled back.
fn script() -> Vec<Step> {
    let mut steps = Vec::new();
    let mut time = 0i64;
    let mut seed = 11u32;
    let mut next = || {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (seed >> 16) as u8
    };
    for round in 0..6i64 {
        for _ in 0..8 {
            time += i64::from(next() % 8) * 100;
            let late = i64::from(next() % 3) * 700;
            let start = (time - late).max(0) / WINDOW * WINDOW;
            steps.push(Step::Put(next() % 6, next(), start));
        }
        steps.push(if round == 2 {
            Step::Rollback
        } else {
            Step::Commit(round * 10)
        });
    }
    steps
}

fn run(store: &WindowStore, step: Step) -> Result<(), Error> {
    match step {
        Step::Put(k, v, start) => store.put(&[k], Some(&[v; 100][..]), start, start),
        Step::Commit(offset) => store.commit(&[(tp(), Some(offset))], None),
        Step::Rollback => store.rollback(),
    }
}

/// Every entry of `isolation`, rendered, with the stream time.
fn dump(store: &WindowStore, isolation: Isolation) -> (Vec<String>, i64) {
    let entries = store
        .query(isolation, &WindowQuery::All, false)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let head = &e.raw_value[..e.raw_value.len().min(9)];
            format!("{:?}@{} {head:?}", e.key, e.window_start)
        })
        .collect();
    (entries, store.stream_time(isolation).unwrap())
}

/// The reference: a window store that applies what the failing store confirmed.
struct Reference {
    store: WindowStore,
    /// A commit reported in doubt: its offset; it completes before the next success.
    in_doubt: Option<i64>,
}

impl Reference {
    fn new() -> Self {
        Reference {
            store: WindowStore::open_in_memory(&options(EngineKind::Memory)).unwrap(),
            in_doubt: None,
        }
    }

    fn apply(&mut self, step: Step, result: &Result<(), Error>) {
        match (result, self.in_doubt) {
            (Err(e), Some(_)) => {
                // Finishing the earlier commit failed again: nothing else happened.
                assert_eq!(e.code(), ErrorCode::CommitInDoubt, "{step:?}: {e}");
                return;
            }
            (Ok(()), Some(offset)) => {
                run(&self.store, Step::Commit(offset)).unwrap();
                self.in_doubt = None;
            }
            _ => {}
        }
        match (step, result) {
            // A put whose spill failed is still buffered.
            (Step::Put(..), Ok(())) => run(&self.store, step).unwrap(),
            (Step::Put(..), Err(e)) => {
                assert_eq!(e.code(), ErrorCode::Storage, "{step:?}: {e}");
                run(&self.store, step).unwrap();
            }
            (Step::Commit(offset), Err(e)) if e.code() == ErrorCode::CommitInDoubt => {
                self.in_doubt = Some(offset);
            }
            // Failed before the commit point: the transaction is unchanged.
            (Step::Commit(_), Err(e)) => assert_eq!(e.code(), ErrorCode::Storage, "{e}"),
            (_, Ok(())) => run(&self.store, step).unwrap(),
            (Step::Rollback, Err(e)) => panic!("rollback failed: {e}"),
        }
    }

    fn check(&self, store: &WindowStore, what: &str) {
        assert_eq!(
            dump(store, Isolation::ReadCommitted),
            dump(&self.store, Isolation::ReadCommitted),
            "{what}: committed view"
        );
        assert_eq!(
            store.committed_offset(&tp()).unwrap(),
            self.store.committed_offset(&tp()).unwrap(),
            "{what}: offset"
        );
        if self.in_doubt.is_none() {
            assert_eq!(
                dump(store, Isolation::ReadUncommitted),
                dump(&self.store, Isolation::ReadUncommitted),
                "{what}: writer view"
            );
        }
    }
}

/// Where the swept store lives.
enum Backend {
    Memory,
    Rocks(tempfile::TempDir),
}

impl Backend {
    /// A fresh window store's engine.
    fn create(&self) -> Arc<dyn Engine> {
        match self {
            Backend::Memory => {
                let kind = StoreKind::Window {
                    segment_interval: INTERVAL,
                };
                let store = StoreOptions::timestamped(EngineKind::Memory);
                open_memory_kind(&store, kind, WINDOW_FAMILY)
                    .unwrap()
                    .engine
            }
            Backend::Rocks(dir) => {
                let path = dir.path().join("store");
                let _ = std::fs::remove_dir_all(&path);
                WindowStore::open(&path, &options(EngineKind::RocksDb))
                    .unwrap()
                    .close()
                    .unwrap();
                self.reopen()
            }
        }
    }

    /// The RocksDB store's engine again (after the last handle on it was dropped).
    fn reopen(&self) -> Arc<dyn Engine> {
        let Backend::Rocks(dir) = self else {
            unreachable!("the memory engine is reopened by reusing it")
        };
        let path = dir.path().join("store");
        Arc::new(
            RocksEngine::open(&path, &[names::META, names::SPILL], &Default::default()).unwrap(),
        )
    }
}

fn open_over(engine: Arc<dyn Engine>) -> WindowStore {
    let data = engine.registry().require(WINDOW_FAMILY).unwrap();
    let opened = Opened {
        engine,
        data,
        legacy: None,
        lock: None,
    };
    WindowStore::over_engine(opened, &options(EngineKind::Memory)).unwrap()
}

/// Runs the script with the `n`-th write failing (from then on if `sticky`); returns the
/// number of writes the script made.
fn sweep_one(backend: &Backend, n: u64, sticky: bool) -> u64 {
    let inner = backend.create();
    let faulty = FaultyEngine::new(Arc::clone(&inner));
    let store = open_over(faulty.clone() as Arc<dyn Engine>);
    faulty.fail_write(n, sticky);
    let mut reference = Reference::new();
    for (i, step) in script().into_iter().enumerate() {
        let result = run(&store, step);
        let failed = result.is_err();
        reference.apply(step, &result);
        let what = format!("n={n} sticky={sticky} step {i} {step:?} -> {result:?}");
        reference.check(&store, &what);
        if sticky && failed && i % 4 == 0 {
            faulty.heal();
        }
    }
    faulty.heal();
    let result = run(&store, Step::Commit(1_000));
    reference.apply(Step::Commit(1_000), &result);
    assert!(result.is_ok(), "n={n}: {result:?}");
    reference.check(&store, &format!("n={n} sticky={sticky} after healing"));
    let writes = faulty.writes();
    store.close().unwrap();
    drop((store, faulty));
    let engine = match backend {
        Backend::Memory => inner,
        Backend::Rocks(_) => {
            drop(inner);
            backend.reopen()
        }
    };
    let reopened = open_over(engine);
    reference.check(&reopened, &format!("n={n} sticky={sticky} reopened"));
    reopened.close().unwrap();
    writes
}

fn sweep(backend: &Backend) {
    let total = sweep_one(backend, u64::MAX, false);
    assert!(
        total > 20,
        "the script should make many writes, made {total}"
    );
    for n in 1..=total {
        sweep_one(backend, n, false);
        sweep_one(backend, n, true);
    }
}

#[test]
fn every_write_of_a_memory_window_store_can_fail() {
    sweep(&Backend::Memory);
}

#[test]
fn every_write_of_a_rocksdb_window_store_can_fail() {
    sweep(&Backend::Rocks(tempfile::tempdir().unwrap()));
}
