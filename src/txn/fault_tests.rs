//! Write-fault sweeps: a scripted workload of puts, deletes, spills, commits (buffered and
//! spilled), roll-forwards, rollbacks and restores (gathered, ingested as a file, written
//! in place on the memory engine) runs against an engine that fails its N-th write, for
//! every N the script reaches, once with a single failure and once with every write failing
//! from N on (a full disk) until the disk is "freed". After every step the committed view,
//! the writer's view and the committed offset are checked against a model; the handle is
//! then used on (or, after a failed restore, which breaks it, reopened and checked against
//! the restores that may have become durable), and finally the store is reopened and
//! checked again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::engine::fault::FaultyEngine;
use crate::engine::rocksdb::RocksEngine;
use crate::engine::{names, Engine};
use crate::store::open::Opened;
use crate::{Error, ErrorCode, Isolation, KeyRange, KvStore, StoreOptions, TopicPartition};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Step {
    Put(u8, u8),
    Delete(u8),
    Commit(i64),
    Rollback,
    /// A restore batch at an offset (`None` deletes); with `true`, a read follows that
    /// writes the gathered batches.
    Restore(Vec<(u8, Option<u8>)>, i64, bool),
}

fn key(k: u8) -> Vec<u8> {
    format!("k{k:02}").into_bytes()
}

fn value(v: u8) -> Vec<u8> {
    vec![v; 100]
}

fn tp() -> TopicPartition {
    TopicPartition::new("app-store-changelog", 0)
}

/// Puts and deletes that spill several times per transaction, a rollback of a spilled
/// transaction, spilled and buffered commits.
fn script() -> Vec<Step> {
    let mut steps = Vec::new();
    let mut seed = 7u32;
    let mut next = || {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (seed >> 16) as u8
    };
    let mut offset = 0;
    for (round, len) in [24usize, 16, 3, 20, 2].into_iter().enumerate() {
        for _ in 0..len {
            let k = next() % 24;
            if next() % 4 == 0 {
                steps.push(Step::Delete(k));
            } else {
                steps.push(Step::Put(k, next()));
            }
        }
        if round == 1 {
            steps.push(Step::Rollback);
        } else {
            offset += 10;
            steps.push(Step::Commit(offset));
        }
        if round == 2 {
            // Gathered; then past the 1,000-byte bound, so written as one file and ingested
            // (RocksDB); then a small one, written in one batch (in place on the memory
            // engine, whose committed view nobody holds).
            steps.push(Step::Restore(
                vec![(1, Some(50)), (2, Some(51)), (3, None)],
                offset + 1,
                false,
            ));
            let second = vec![(4, Some(52)), (1, Some(53)), (6, Some(54)), (7, Some(55))];
            steps.push(Step::Restore(second, offset + 2, false));
            steps.push(Step::Restore(
                vec![(8, Some(56)), (4, None)],
                offset + 3,
                true,
            ));
        }
    }
    steps
}

#[derive(Default, Clone)]
struct Model {
    committed: Map,
    offset: Option<i64>,
    pending: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// A commit reported in doubt: the state it makes current.
    in_doubt: Option<(Map, i64)>,
    /// The last commit before the current run of restores, and the state after each of
    /// them: what a failed restore may leave durable.
    restored: Vec<(Map, Option<i64>)>,
    /// A restore failed: the handle is broken until the store is reopened.
    broken: bool,
}

impl Model {
    fn settle(&mut self) {
        if let Some((state, offset)) = self.in_doubt.take() {
            self.committed = state;
            self.offset = Some(offset);
        }
    }

    fn writer_view(&self) -> Map {
        let mut view = self.committed.clone();
        for (k, w) in &self.pending {
            match w {
                Some(v) => view.insert(k.clone(), v.clone()),
                None => view.remove(k),
            };
        }
        view
    }

    /// Applies the outcome of `step` given the store's answer.
    fn apply(&mut self, step: &Step, result: &Result<(), Error>) {
        let was_in_doubt = self.in_doubt.is_some();
        if let Err(e) = result {
            if was_in_doubt {
                // Finishing the earlier commit failed again: nothing else happened.
                assert_eq!(e.code(), ErrorCode::CommitInDoubt, "{step:?}: {e}");
                return;
            }
        } else {
            self.settle();
        }
        match step {
            // A failed write failed to spill: the write itself is buffered.
            Step::Put(k, v) => {
                self.pending.insert(key(*k), Some(value(*v)));
            }
            Step::Delete(k) => {
                self.pending.insert(key(*k), None);
            }
            Step::Rollback => self.pending.clear(),
            Step::Restore(writes, offset, read) => {
                if let Err(e) = result {
                    if e.code() == ErrorCode::InvalidArgument {
                        // Refused: a commit that failed before its commit point left writes.
                        assert!(!self.pending.is_empty(), "{step:?}: {e}");
                        return;
                    }
                    assert_eq!(e.code(), ErrorCode::Storage, "{step:?}: {e}");
                    self.broken = true;
                }
                if self.restored.is_empty() {
                    self.restored.push((self.committed.clone(), self.offset));
                }
                for (k, v) in writes {
                    match v {
                        Some(v) => self.committed.insert(key(*k), value(*v)),
                        None => self.committed.remove(&key(*k)),
                    };
                }
                self.offset = Some(*offset);
                self.restored.push((self.committed.clone(), self.offset));
                if result.is_ok() && *read {
                    // Written: the run of restores is committed.
                    self.restored.clear();
                }
            }
            Step::Commit(offset) => match result {
                Ok(()) => {
                    self.committed = self.writer_view();
                    self.offset = Some(*offset);
                    self.pending.clear();
                }
                Err(e) if e.code() == ErrorCode::CommitInDoubt => {
                    self.in_doubt = Some((self.writer_view(), *offset));
                    self.pending.clear();
                }
                // Failed before the commit point: the transaction is unchanged.
                Err(e) => assert_eq!(e.code(), ErrorCode::Storage, "{e}"),
            },
        }
    }
}

fn run(store: &KvStore, step: &Step) -> Result<(), Error> {
    match step {
        Step::Put(k, v) => store.put_raw(&key(*k), Some(&value(*v))),
        Step::Delete(k) => store.delete_raw(&key(*k)).map(drop),
        Step::Commit(offset) => store.commit(&[(tp(), Some(*offset))], None),
        Step::Rollback => store.rollback(),
        Step::Restore(writes, offset, read) => {
            let values: Vec<(Vec<u8>, Option<Vec<u8>>)> = writes
                .iter()
                .map(|(k, v)| (key(*k), v.map(value)))
                .collect();
            store.restore_batch(
                values.iter().map(|(k, v)| (k.as_slice(), v.as_deref())),
                &[(tp(), Some(*offset))],
                None,
            )?;
            if *read {
                store.committed_offset(&tp())?;
            }
            Ok(())
        }
    }
}

fn scan(store: &KvStore, isolation: Isolation) -> Result<Map, Error> {
    let mut out = Map::new();
    for entry in store.scan(isolation, &KeyRange::all(), false)? {
        let (k, v) = entry?;
        out.insert(k, v);
    }
    Ok(out)
}

fn check(store: &KvStore, model: &Model, what: &str) {
    assert_eq!(
        scan(store, Isolation::ReadCommitted).unwrap(),
        model.committed,
        "{what}: committed view"
    );
    for k in 0..24 {
        assert_eq!(
            store
                .get_raw_with(Isolation::ReadCommitted, &key(k))
                .unwrap()
                .as_ref(),
            model.committed.get(&key(k)),
            "{what}: committed get"
        );
    }
    assert_eq!(
        store.committed_offset(&tp()).unwrap(),
        model.offset,
        "{what}: offset"
    );
    if model.in_doubt.is_none() {
        let view = model.writer_view();
        assert_eq!(
            scan(store, Isolation::ReadUncommitted).unwrap(),
            view,
            "{what}: writer view"
        );
        for k in 0..24 {
            assert_eq!(
                store.get_raw(&key(k)).unwrap().as_ref(),
                view.get(&key(k)),
                "{what}: get"
            );
        }
    }
}

/// How a sweep makes and remakes its engine.
trait Backend {
    /// A fresh store's engine (with kstate's families and header).
    fn create(&self) -> Arc<dyn Engine>;
    /// The same store's engine after a restart.
    fn reopen(&self, old: KvStore) -> Arc<dyn Engine>;
}

struct Memory(std::sync::Mutex<Option<Arc<dyn Engine>>>);

impl Backend for Memory {
    fn create(&self) -> Arc<dyn Engine> {
        let opened =
            crate::store::open::open_memory(&StoreOptions::plain(crate::EngineKind::Memory))
                .unwrap();
        *self.0.lock().unwrap() = Some(Arc::clone(&opened.engine));
        opened.engine
    }

    fn reopen(&self, old: KvStore) -> Arc<dyn Engine> {
        // A crash: nothing of the old handle's shutdown runs.
        std::mem::forget(old);
        Arc::clone(self.0.lock().unwrap().as_ref().unwrap())
    }
}

struct Rocks(tempfile::TempDir);

impl Rocks {
    fn path(&self) -> std::path::PathBuf {
        self.0.path().join("store")
    }

    fn engine(&self) -> Arc<dyn Engine> {
        Arc::new(
            RocksEngine::open(
                &self.path(),
                &[names::META, names::SPILL],
                &Default::default(),
            )
            .unwrap(),
        )
    }
}

impl Backend for Rocks {
    fn create(&self) -> Arc<dyn Engine> {
        let _ = std::fs::remove_dir_all(self.path());
        drop(
            KvStore::open(
                self.path(),
                &StoreOptions::plain(crate::EngineKind::RocksDb),
            )
            .unwrap(),
        );
        self.engine()
    }

    fn reopen(&self, old: KvStore) -> Arc<dyn Engine> {
        // Dropping releases RocksDB; its close may fail under the fault, as a crash would.
        drop(old);
        self.engine()
    }
}

fn open_over(engine: Arc<dyn Engine>) -> KvStore {
    let data = engine.registry().require(names::PLAIN).unwrap();
    let options = StoreOptions::plain(crate::EngineKind::Memory).with_max_uncommitted_bytes(1_000);
    KvStore::with_engine(
        Opened {
            engine,
            data,
            legacy: None,
            lock: None,
        },
        None,
        &options,
        250,
    )
    .unwrap()
}

/// Reopens the store of a broken handle (faults healed) and settles `model` on the
/// restore the reopened store reports by its offset.
fn restart_broken(
    backend: &dyn Backend,
    faulty: Arc<FaultyEngine>,
    store: KvStore,
    model: &mut Model,
    what: &str,
) -> (Arc<FaultyEngine>, KvStore) {
    assert_eq!(
        store.get_raw(&key(0)).unwrap_err().code(),
        ErrorCode::Storage,
        "{what}: a failed restore breaks the handle"
    );
    drop(faulty);
    let faulty = FaultyEngine::new(backend.reopen(store));
    let store = open_over(faulty.clone() as Arc<dyn Engine>);
    let offset = store.committed_offset(&tp()).unwrap();
    let (state, _) = model
        .restored
        .iter()
        .find(|(_, o)| *o == offset)
        .unwrap_or_else(|| panic!("{what}: reopened at offset {offset:?}"))
        .clone();
    model.committed = state;
    model.offset = offset;
    model.pending.clear();
    model.restored.clear();
    model.broken = false;
    check(&store, model, &format!("{what}, reopened"));
    (faulty, store)
}

/// Runs the script with the `n`-th write failing (from then on if `sticky`); returns the
/// writes the script made and the kinds of write that were refused.
fn sweep_one(backend: &dyn Backend, n: u64, sticky: bool) -> (u64, BTreeSet<&'static str>) {
    let mut faulty = FaultyEngine::new(backend.create());
    let mut store = open_over(faulty.clone() as Arc<dyn Engine>);
    faulty.fail_write(n, sticky);
    let mut model = Model::default();
    let mut failed = false;
    let mut refused = BTreeSet::new();
    for (i, step) in script().iter().enumerate() {
        let result = run(&store, step);
        failed |= result.is_err();
        model.apply(step, &result);
        let what = format!("n={n} sticky={sticky} step {i} {step:?} -> {result:?}");
        if model.broken {
            refused.append(&mut faulty.refused());
            (faulty, store) = restart_broken(backend, faulty, store, &mut model, &what);
            continue;
        }
        if matches!(step, Step::Restore(_, _, false)) && result.is_ok() {
            // Gathered: the checks' reads would write it before the next restore.
            continue;
        }
        check(&store, &model, &what);
        if sticky && failed && i % 5 == 0 {
            // The disk has room again: the handle recovers without a reopen.
            faulty.heal();
        }
    }
    faulty.heal();
    // Any call finishes a commit left in doubt.
    let result = store.commit(&[(tp(), Some(1_000))], None);
    model.apply(&Step::Commit(1_000), &result);
    assert!(result.is_ok(), "n={n}: {result:?}");
    check(
        &store,
        &model,
        &format!("n={n} sticky={sticky} after healing"),
    );
    let writes = faulty.writes();
    refused.append(&mut faulty.refused());
    if n == u64::MAX {
        // The large restore was ingested as a file wherever the engine can ingest.
        let ingested = store.property("kstate.restore-ingestions").unwrap();
        assert_eq!(ingested, Some(u64::from(faulty.can_ingest())));
    }
    // Leave an uncommitted spilled transaction behind, then restart.
    for k in 0..12 {
        store.put_raw(&key(k), Some(&value(200))).unwrap();
    }
    drop(faulty);
    let reopened = open_over(backend.reopen(store));
    let mut after = model.clone();
    after.pending.clear();
    check(
        &reopened,
        &after,
        &format!("n={n} sticky={sticky} reopened"),
    );
    reopened.close().unwrap();
    (writes, refused)
}

/// Sweeps every write of the script; `paths` are the kinds of write that must have been
/// refused at least once.
fn sweep(backend: &dyn Backend, paths: &[&str]) {
    let (total, _) = sweep_one(backend, u64::MAX, false);
    assert!(
        total > 30,
        "the script should make many writes, made {total}"
    );
    let mut refused = BTreeSet::new();
    for n in 1..=total {
        refused.append(&mut sweep_one(backend, n, false).1);
        refused.append(&mut sweep_one(backend, n, true).1);
    }
    for path in paths {
        assert!(refused.contains(path), "no {path} failed: {refused:?}");
    }
}

#[test]
fn every_write_of_the_memory_engine_can_fail() {
    // Small commits and restores are applied in place (no reader holds their view).
    sweep(
        &Memory(std::sync::Mutex::new(None)),
        &["write", "write_unshared"],
    );
}

#[test]
fn every_write_of_the_rocksdb_engine_can_fail() {
    // Restores: gathered and ingested as a file, or written without the WAL.
    sweep(
        &Rocks(tempfile::tempdir().unwrap()),
        &["write", "write_unlogged", "stage_file", "ingest_file"],
    );
}

/// Defect of kstate 0.1: a spill whose second batch failed left its first batch in the
/// spill area, and a later spilled commit applied it.
#[test]
fn a_failed_spill_never_leaks_into_a_later_commit() {
    let backend = Memory(std::sync::Mutex::new(None));
    let faulty = FaultyEngine::new(backend.create());
    let store = open_over(faulty.clone() as Arc<dyn Engine>);
    for k in 0..5 {
        store.put_raw(&key(k), Some(&value(1))).unwrap();
    }
    store.commit(&[(tp(), Some(1))], None).unwrap();
    // The disk fills up during the second batch of the next spill, and is still full when
    // the transaction is rolled back, so the first batch stays in the spill area.
    faulty.fail_write(2, true);
    let mut err = None;
    for k in 0..6 {
        if let Err(e) = store.put_raw(&key(k), Some(&value(2))) {
            err = Some(e);
        }
    }
    assert_eq!(err.map(|e| e.code()), Some(ErrorCode::Storage));
    // The rollback happened (kstate 0.1 said STORAGE, though it had discarded the writes):
    // clearing the spill area is left to the next commit.
    store.rollback().unwrap();
    assert_eq!(
        store.get_raw(&key(0)).unwrap(),
        Some(value(1)),
        "rolled back"
    );
    let spill = faulty.registry().require(names::SPILL).unwrap();
    assert!(crate::engine::has_entries(faulty.as_ref(), spill).unwrap());
    faulty.heal();
    // A spilled commit of other keys.
    for k in 10..20 {
        store.put_raw(&key(k), Some(&value(3))).unwrap();
    }
    store.commit(&[(tp(), Some(2))], None).unwrap();
    for k in 0..5 {
        assert_eq!(
            store.get_raw(&key(k)).unwrap(),
            Some(value(1)),
            "rolled-back write leaked"
        );
    }
    assert_eq!(store.get_raw(&key(5)).unwrap(), None);
    assert!(
        !crate::engine::has_entries(faulty.as_ref(), spill).unwrap(),
        "the commit cleared the spill area"
    );
}

/// Defect of kstate 0.1: once the disk refused writes, `close` returned `STORAGE` after a
/// successful commit, though that commit was durable; it now closes successfully, and the
/// next open finds the commit (and reports the close as unclean: its record was refused).
#[test]
fn close_after_a_successful_commit_succeeds_on_a_refusing_disk() {
    let backend = Rocks(tempfile::tempdir().unwrap());
    let faulty = FaultyEngine::new(backend.create());
    let store = open_over(faulty.clone() as Arc<dyn Engine>);
    store.put_raw(&key(1), Some(&value(1))).unwrap();
    store.commit(&[(tp(), Some(7))], None).unwrap();
    faulty.fail_write(1, true);
    store.close().unwrap();
    assert!(faulty.writes() > 0, "close tried to write");
    assert_eq!(
        store.get_raw(&key(1)).unwrap_err().code(),
        ErrorCode::StoreClosed
    );
    drop(faulty);
    let reopened = open_over(backend.reopen(store));
    assert!(!reopened.recovery().previous_close_clean);
    assert_eq!(reopened.committed_offset(&tp()).unwrap(), Some(7));
    assert_eq!(reopened.get_raw(&key(1)).unwrap(), Some(value(1)));
    reopened.close().unwrap();
}

/// A commit whose write fails is in doubt, not failed: readers keep the previous commit,
/// and the next call completes it.
#[test]
fn a_commit_in_doubt_completes_on_the_next_call() {
    let backend = Memory(std::sync::Mutex::new(None));
    let faulty = FaultyEngine::new(backend.create());
    let store = open_over(faulty.clone() as Arc<dyn Engine>);
    store.put_raw(b"a", Some(b"1")).unwrap();
    faulty.fail_write(1, false);
    let err = store.commit(&[(tp(), Some(5))], None).unwrap_err();
    assert_eq!(err.code(), ErrorCode::CommitInDoubt, "{err}");
    assert!(err.to_string().contains("will complete"), "{err}");
    assert_eq!(store.property("kstate.commits-in-doubt").unwrap(), Some(1));
    assert_eq!(store.committed_offset(&tp()).unwrap(), None);
    assert_eq!(
        store.get_raw_with(Isolation::ReadCommitted, b"a").unwrap(),
        None
    );
    // Rolling back cannot undo it: the next call finishes the commit first.
    store.rollback().unwrap();
    assert_eq!(store.committed_offset(&tp()).unwrap(), Some(5));
    assert_eq!(
        store.get_raw_with(Isolation::ReadCommitted, b"a").unwrap(),
        Some(b"1".to_vec())
    );
    // A close that cannot finish it reports it.
    store.put_raw(b"b", Some(b"2")).unwrap();
    faulty.fail_write(1, true);
    assert_eq!(
        store.commit(&[(tp(), Some(6))], None).unwrap_err().code(),
        ErrorCode::CommitInDoubt
    );
    assert_eq!(store.property("kstate.commits-in-doubt").unwrap(), Some(2));
    assert_eq!(store.close().unwrap_err().code(), ErrorCode::CommitInDoubt);
    assert_eq!(
        store.get_raw(b"a").unwrap_err().code(),
        ErrorCode::StoreClosed
    );
}

/// kstate 0.1's writer-view entry estimate forgot spilled writes.
#[test]
fn the_entry_estimate_counts_spilled_writes() {
    let backend = Memory(std::sync::Mutex::new(None));
    let store = open_over(backend.create());
    for k in 0..20 {
        store.put_raw(&key(k), Some(&value(1))).unwrap();
    }
    // max_uncommitted_bytes is 1,000: almost all of these were spilled.
    assert!(store.approximate_num_uncommitted_bytes().unwrap() > 1_000);
    assert_eq!(store.approximate_num_entries().unwrap(), 20);
    let spills = store.property("kstate.spills").unwrap().unwrap();
    assert!(
        spills >= 2,
        "20 writes of ~170 bytes over a 1,000-byte bound: {spills} spills"
    );
    assert_eq!(store.property("kstate.roll-forwards").unwrap(), Some(0));
    assert_eq!(
        store
            .approximate_num_entries_with(Isolation::ReadCommitted)
            .unwrap(),
        0
    );
    store.commit(&[(tp(), Some(1))], None).unwrap();
    assert_eq!(
        store
            .approximate_num_entries_with(Isolation::ReadCommitted)
            .unwrap(),
        20
    );
    assert_eq!(
        store.property("kstate.roll-forwards").unwrap(),
        Some(1),
        "a spilled commit"
    );
}
