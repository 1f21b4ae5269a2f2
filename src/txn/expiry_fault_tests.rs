//! The write-fault sweep of the stores whose commits drop expired data (window and
//! versioned stores): puts that spill, commits that drop expired segments or history (a
//! range delete in the commit batch, or in the roll-forward of a spilled commit),
//! rollbacks, each step run on a store whose engine fails its N-th write (once, or from
//! then on until the disk is "freed"), for every N the script reaches. After every step
//! the committed and uncommitted views and stream times are compared with a reference store
//! of the same kind on the memory engine that sees only what the failing store confirmed;
//! the store is then reopened and compared again.

use std::sync::Arc;

use crate::engine::fault::FaultyEngine;
use crate::engine::rocksdb::RocksEngine;
use crate::engine::{names, Engine};
use crate::format::meta::StoreKind;
use crate::format::versioned::{BY_TIME_FAMILY, HISTORY_FAMILY, LATEST_FAMILY};
use crate::store::open::{open_memory_families, Opened};
use crate::store::{
    VersionOrder, VersionedOptions, VersionedStore, WindowOptions, WindowQuery, WindowStore,
    WINDOW_FAMILY,
};
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

/// What the sweep needs of a store kind.
trait Swept: Sized {
    /// The data family and the families beside it.
    const FAMILIES: (&'static str, &'static [&'static str]);
    /// The store's kind, as its header records it.
    const KIND: StoreKind;
    /// Opens a store at `path` (RocksDB) or in memory (`None`) with a small bound on
    /// uncommitted bytes, so that transactions spill.
    fn open(path: Option<&std::path::Path>) -> Self;
    /// The store over an engine the sweep opened.
    fn over(opened: Opened) -> Self;
    fn put(&self, key: u8, value: u8, time: i64) -> Result<(), Error>;
    fn commit(&self, offset: i64) -> Result<(), Error>;
    fn rollback(&self) -> Result<(), Error>;
    fn offset(&self) -> Option<i64>;
    /// Everything `isolation` shows, rendered, with the stream time.
    fn dump(&self, isolation: Isolation) -> (Vec<String>, i64);
    fn close(&self);
}

fn store_options(engine: EngineKind) -> StoreOptions {
    StoreOptions::timestamped(engine).with_max_uncommitted_bytes(1_000)
}

fn window_options(engine: EngineKind) -> WindowOptions {
    WindowOptions::new(RETENTION, WINDOW, false)
        .with_segment_interval(INTERVAL)
        .with_store(store_options(engine))
}

impl Swept for WindowStore {
    const FAMILIES: (&'static str, &'static [&'static str]) = (WINDOW_FAMILY, &[]);
    const KIND: StoreKind = StoreKind::Window {
        segment_interval: INTERVAL,
    };
    fn open(path: Option<&std::path::Path>) -> Self {
        match path {
            Some(p) => WindowStore::open(p, &window_options(EngineKind::RocksDb)).unwrap(),
            None => WindowStore::open_in_memory(&window_options(EngineKind::Memory)).unwrap(),
        }
    }
    fn over(opened: Opened) -> Self {
        WindowStore::over_engine(opened, &window_options(EngineKind::Memory)).unwrap()
    }
    fn put(&self, key: u8, value: u8, time: i64) -> Result<(), Error> {
        WindowStore::put(self, &[key], Some(&[value; 100][..]), time, time)
    }
    fn commit(&self, offset: i64) -> Result<(), Error> {
        WindowStore::commit(self, &[(tp(), Some(offset))], None)
    }
    fn rollback(&self) -> Result<(), Error> {
        WindowStore::rollback(self)
    }
    fn offset(&self) -> Option<i64> {
        self.committed_offset(&tp()).unwrap()
    }
    fn dump(&self, isolation: Isolation) -> (Vec<String>, i64) {
        let entries = self
            .query(isolation, &WindowQuery::All, false)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let head = &e.raw_value[..e.raw_value.len().min(9)];
                format!("{:?}@{} {head:?}", e.key, e.window_start)
            })
            .collect();
        (entries, self.stream_time(isolation).unwrap())
    }
    fn close(&self) {
        WindowStore::close(self).unwrap()
    }
}

fn versioned_options(engine: EngineKind) -> VersionedOptions {
    VersionedOptions::new(RETENTION)
        .with_segment_interval(INTERVAL)
        .with_store(store_options(engine))
}

impl Swept for VersionedStore {
    const FAMILIES: (&'static str, &'static [&'static str]) =
        (LATEST_FAMILY, &[HISTORY_FAMILY, BY_TIME_FAMILY]);
    const KIND: StoreKind = StoreKind::Versioned {
        segment_interval: INTERVAL,
    };
    fn open(path: Option<&std::path::Path>) -> Self {
        match path {
            Some(p) => VersionedStore::open(p, &versioned_options(EngineKind::RocksDb)).unwrap(),
            None => VersionedStore::open_in_memory(&versioned_options(EngineKind::Memory)).unwrap(),
        }
    }
    fn over(opened: Opened) -> Self {
        VersionedStore::over_engine(opened, &versioned_options(EngineKind::Memory)).unwrap()
    }
    fn put(&self, key: u8, value: u8, time: i64) -> Result<(), Error> {
        // Every fourth value is a tombstone.
        let v = (value % 4 != 0).then_some([value; 100]);
        VersionedStore::put(self, &[key], v.as_ref().map(|v| &v[..]), time).map(drop)
    }
    fn commit(&self, offset: i64) -> Result<(), Error> {
        VersionedStore::commit(self, &[(tp(), Some(offset))], None)
    }
    fn rollback(&self) -> Result<(), Error> {
        VersionedStore::rollback(self)
    }
    fn offset(&self) -> Option<i64> {
        self.committed_offset(&tp()).unwrap()
    }
    fn dump(&self, isolation: Isolation) -> (Vec<String>, i64) {
        let mut out = Vec::new();
        for key in 0..6u8 {
            for r in self
                .versions(isolation, &[key], None, None, VersionOrder::Ascending)
                .unwrap()
            {
                out.push(format!(
                    "{key}: {}@{}..{:?}",
                    r.value[0], r.timestamp, r.valid_to
                ));
            }
        }
        (out, self.stream_time(isolation).unwrap())
    }
    fn close(&self) {
        VersionedStore::close(self).unwrap()
    }
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

fn run<S: Swept>(store: &S, step: Step) -> Result<(), Error> {
    match step {
        Step::Put(k, v, start) => store.put(k, v, start),
        Step::Commit(offset) => store.commit(offset),
        Step::Rollback => store.rollback(),
    }
}

/// The reference: a store that applies what the failing store confirmed.
struct Reference<S> {
    store: S,
    /// A commit reported in doubt: its offset; it completes before the next success.
    in_doubt: Option<i64>,
}

impl<S: Swept> Reference<S> {
    fn new() -> Self {
        Reference {
            store: S::open(None),
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

    fn check(&self, store: &S, what: &str) {
        assert_eq!(
            store.dump(Isolation::ReadCommitted),
            self.store.dump(Isolation::ReadCommitted),
            "{what}: committed view"
        );
        assert_eq!(store.offset(), self.store.offset(), "{what}: offset");
        if self.in_doubt.is_none() {
            assert_eq!(
                store.dump(Isolation::ReadUncommitted),
                self.store.dump(Isolation::ReadUncommitted),
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
    /// A fresh store's engine.
    fn create<S: Swept>(&self) -> Arc<dyn Engine> {
        match self {
            Backend::Memory => {
                let (data, more) = S::FAMILIES;
                let store = store_options(EngineKind::Memory);
                open_memory_families(&store, S::KIND, data, None, more)
                    .unwrap()
                    .engine
            }
            Backend::Rocks(dir) => {
                let path = dir.path().join("store");
                let _ = std::fs::remove_dir_all(&path);
                S::open(Some(&path)).close();
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

fn open_over<S: Swept>(engine: Arc<dyn Engine>) -> S {
    let data = engine.registry().require(S::FAMILIES.0).unwrap();
    S::over(Opened {
        engine,
        data,
        legacy: None,
        lock: None,
    })
}

/// Runs the script with the `n`-th write failing (from then on if `sticky`); returns the
/// number of writes the script made.
fn sweep_one<S: Swept>(backend: &Backend, n: u64, sticky: bool) -> u64 {
    let inner = backend.create::<S>();
    let faulty = FaultyEngine::new(Arc::clone(&inner));
    let store: S = open_over(faulty.clone() as Arc<dyn Engine>);
    faulty.fail_write(n, sticky);
    let mut reference = Reference::<S>::new();
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
    store.close();
    drop((store, faulty));
    let engine = match backend {
        Backend::Memory => inner,
        Backend::Rocks(_) => {
            drop(inner);
            backend.reopen()
        }
    };
    let reopened: S = open_over(engine);
    reference.check(&reopened, &format!("n={n} sticky={sticky} reopened"));
    reopened.close();
    writes
}

fn sweep<S: Swept>(backend: &Backend) {
    let total = sweep_one::<S>(backend, u64::MAX, false);
    assert!(
        total > 20,
        "the script should make many writes, made {total}"
    );
    for n in 1..=total {
        sweep_one::<S>(backend, n, false);
        sweep_one::<S>(backend, n, true);
    }
}

#[test]
fn every_write_of_a_memory_window_store_can_fail() {
    sweep::<WindowStore>(&Backend::Memory);
}

#[test]
fn every_write_of_a_rocksdb_window_store_can_fail() {
    sweep::<WindowStore>(&Backend::Rocks(tempfile::tempdir().unwrap()));
}

#[test]
fn every_write_of_a_memory_versioned_store_can_fail() {
    sweep::<VersionedStore>(&Backend::Memory);
}

#[test]
fn every_write_of_a_rocksdb_versioned_store_can_fail() {
    sweep::<VersionedStore>(&Backend::Rocks(tempfile::tempdir().unwrap()));
}
