//! Crash safety, tested for real: a child process (`kstate-test-worker crash-worker`) runs random
//! transactions on a RocksDB store (puts, deletes, put_all, put_if_absent, rollbacks,
//! commits with increasing offsets, large transactions that spill to disk) and is killed
//! with SIGKILL at random moments. After every kill the store is reopened and must hold
//! exactly the model state of the commit whose offset `committed_offset` reports.
//!
//! Some rounds also arm kstate's crash points (`KSTATE_FAILPOINT_ODDS`), so kills land
//! inside spilled commits: between the commit point and the end of the roll-forward. The
//! crash points exist only with the `failpoints` cargo feature, which this test requires
//! (`required-features` in Cargo.toml): `cargo test --release --features failpoints --test
//! crash`.
//!
//! `KSTATE_CRASH_KILLS` sets the number of kills (default 200); use thousands for a long
//! run: `KSTATE_CRASH_KILLS=5000 cargo test --release --features failpoints --test crash --
//! --nocapture`.

// The workload is shared source, not library API: each user compiles its own copy.
#[allow(dead_code)]
#[path = "support/workload.rs"]
mod workload;

#[path = "support/child.rs"]
mod child;

#[path = "support/kill_window.rs"]
mod kill_window;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code)]
#[path = "support/workload_segmented.rs"]
mod workload_segmented;

#[allow(dead_code)]
#[path = "support/workload_versioned.rs"]
mod workload_versioned;

use child::{kill_at, kill_unless_ended};
use kstate::store::{
    SessionOptions, SessionQuery, SessionStore, WindowOptions, WindowQuery, WindowStore,
};
use kstate::{EngineKind, Isolation, KvStore, StoreOptions};
use workload::{Model, Op, Rng, Workload, WorkloadConfig};

fn kills() -> usize {
    std::env::var("KSTATE_CRASH_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
}

/// Spawns a worker on `dir` with `seed`, optionally with crash points armed.
fn spawn_worker(dir: &Path, seed: u64, failpoint_odds: Option<u64>) -> std::process::Child {
    spawn_worker_with(dir, seed, failpoint_odds, &[])
}

/// [`spawn_worker`] with further worker arguments.
fn spawn_worker_with(
    dir: &Path,
    seed: u64,
    failpoint_odds: Option<u64>,
    extra: &[&str],
) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"));
    cmd.arg("crash-worker")
        .arg("--dir")
        .arg(dir)
        .args(["--seed", &seed.to_string(), "--max-uncommitted", "32768"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match failpoint_odds {
        Some(odds) => cmd.env("KSTATE_FAILPOINT_ODDS", odds.to_string()),
        None => cmd.env_remove("KSTATE_FAILPOINT_ODDS"),
    };
    cmd.spawn().expect("spawn crash worker")
}

/// Waits for a worker killed by the test (or by itself, at an armed crash point) and fails
/// the round, with the worker's stderr, if it ended any other way.
fn expect_sigkilled(child: &mut std::process::Child, round: usize) {
    use std::os::unix::process::ExitStatusExt;
    let status = child.wait().unwrap();
    if status.signal() != Some(libc::SIGKILL) {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        panic!("round {round}: worker ended with {status:?} instead of SIGKILL: {err}");
    }
}

#[test]
fn sigkill_at_random_points_always_recovers_a_whole_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let config = WorkloadConfig::default();
    let mut model = Model::default();
    let mut base = 0i64;
    let mut rng = Rng::new(0xC0FFEE ^ u64::from(std::process::id()));
    let (mut rolled_forward, mut discarded, mut self_killed, mut commits_seen) = (0, 0, 0, 0u64);
    let started = Instant::now();
    let total = kills();
    for round in 0..total {
        let seed = rng.next_u64();
        // One round in three arms the crash points inside spilled commits.
        let odds = (round % 3 == 2).then_some(4);
        let mut child = spawn_worker(&path, seed, odds);
        std::thread::sleep(Duration::from_millis(5 + rng.below(120)));
        kill_unless_ended(&mut child);
        expect_sigkilled(&mut child, round);

        let (store, report, offset, commits) =
            reopen_and_check(&path, round, seed, base, &mut model, config);
        rolled_forward += usize::from(report.rolled_forward);
        discarded += usize::from(report.discarded_spill);
        commits_seen += commits;
        if odds.is_some() && report.rolled_forward {
            self_killed += 1;
        }
        store.close().unwrap();
        base = offset;
    }
    eprintln!(
        "crash test: {total} SIGKILLs in {:.1}s, {commits_seen} commits verified, {rolled_forward} recoveries \
         completed a spilled commit ({self_killed} of them killed at a crash point), {discarded} discarded \
         an uncommitted spill",
        started.elapsed().as_secs_f64()
    );
    assert!(
        commits_seen > total as u64,
        "workers made too little progress to test anything"
    );
    if total >= 100 {
        assert!(rolled_forward > 0, "no kill landed inside a spilled commit");
        assert!(
            discarded > 0,
            "no kill landed inside a spilled, uncommitted transaction"
        );
    }
}

/// Kills in a row with no clean close in between: each worker opens the store the previous
/// one was killed in (recovering its write-ahead log, whose rebuilt memtables are not
/// flushed by the open: `avoid_flush_during_recovery`), works, and is killed in turn, some
/// before they finish opening, some restoring. Only after a chain of 2 to 4 workers does the
/// parent reopen the store and check it against the model of every chained worker's
/// commits, each worker's share known from the offset it reported when ready.
#[test]
fn kills_in_a_row_without_a_clean_close_recover_a_whole_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let config = WorkloadConfig::default();
    let mut model = Model::default();
    let mut base = 0i64;
    let mut rng = Rng::new(0xC4A1 ^ u64::from(std::process::id()));
    let (mut chained, mut unready) = (0usize, 0usize);
    let rounds = (kills() / 8).max(6);
    for round in 0..rounds {
        // (seed, offset the worker started from) of the workers that reported ready.
        let mut chain: Vec<(u64, i64)> = Vec::new();
        for _ in 0..2 + rng.below(3) {
            let seed = rng.next_u64();
            let odds = (rng.below(3) == 0).then_some(4);
            // One worker in three hands most transactions over as restores (written without
            // the WAL, into memtables that may hold the recovered ones).
            let restores: &[&str] = if rng.below(3) == 0 {
                &["--restore-percent", "70"]
            } else {
                &[]
            };
            let mut child = spawn_worker_with(&path, seed, odds, restores);
            let stdout = child.stdout.take().expect("piped stdout");
            std::thread::sleep(Duration::from_millis(rng.below(150)));
            kill_unless_ended(&mut child);
            expect_sigkilled(&mut child, round);
            let mut out = String::new();
            std::io::Read::read_to_string(&mut { stdout }, &mut out).unwrap();
            match out.lines().find_map(|l| l.strip_prefix("ready ")) {
                Some(start) => chain.push((seed, start.trim().parse().unwrap())),
                None => unready += 1, // killed while opening: no commit of its own
            }
            chained += 1;
        }
        // Each chained worker's commits: up to where the next one started.
        for (i, &(seed, start)) in chain.iter().enumerate() {
            let Some(&(_, next)) = chain.get(i + 1) else {
                continue;
            };
            assert!(next >= start, "round {round}: offset went backwards");
            workload::replay_commits(&mut model, seed, config, (next - start) as u64);
        }
        let (seed, start) = chain.last().copied().unwrap_or((0, base));
        // The last worker's commits are what the parent's reopen finds beyond its start.
        let (store, _, offset, _) = reopen_and_check(&path, round, seed, start, &mut model, config);
        store.close().unwrap();
        base = offset;
    }
    eprintln!(
        "kills in a row: {chained} workers in {rounds} chains, {unready} killed before ready"
    );
    assert!(chained > unready, "no worker got to work");
}

/// Reopens the store after a kill and checks it against the model, replaying the commits
/// the killed worker (seed `seed`, starting at offset `base`) completed.
fn reopen_and_check(
    path: &Path,
    round: usize,
    seed: u64,
    base: i64,
    model: &mut Model,
    config: WorkloadConfig,
) -> (KvStore, kstate::RecoveryReport, i64, u64) {
    let store = KvStore::open(path, &StoreOptions::default())
        .unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
    let report = store.recovery().clone();
    assert_eq!(
        store.property("kstate.recovery-rolled-forward").unwrap(),
        Some(u64::from(report.rolled_forward))
    );
    let offset = store
        .committed_offset(&workload::changelog_partition())
        .unwrap()
        .unwrap_or(0);
    assert!(
        offset >= base,
        "round {round}: committed offset went backwards: {offset} < {base}"
    );
    let commits = (offset - base) as u64;
    workload::replay_commits(model, seed, config, commits);
    let actual = workload::dump(&store).unwrap();
    if actual != model.committed {
        let missing = model
            .committed
            .keys()
            .filter(|k| !actual.contains_key(*k))
            .count();
        let extra = actual
            .keys()
            .filter(|k| !model.committed.contains_key(*k))
            .count();
        let differ = actual
            .iter()
            .filter(|(k, v)| model.committed.get(*k).is_some_and(|m| m != *v))
            .count();
        panic!(
            "round {round} (seed {seed}, offset {offset}, {commits} commits this round, recovery {report:?}): \
             store differs from the model: {missing} missing, {extra} extra, {differ} different"
        );
    }
    (store, report, offset, commits)
}

/// Kills that land inside store creation (before the rename that publishes it) and inside
/// recovery (during a roll-forward, before the status write): every directory left behind
/// opens, holds a whole commit, and verifies clean.
#[test]
fn kills_inside_creation_and_recovery_leave_a_store_that_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let config = WorkloadConfig::default();
    let mut rng = Rng::new(0xBADC0DE ^ u64::from(std::process::id()));
    let (mut model, mut base) = (Model::default(), 0i64);
    let (mut fresh, mut self_killed) = (0, 0);
    for round in 0..90 {
        if round % 3 == 0 {
            let _ = std::fs::remove_dir_all(&path);
            model = Model::default();
            base = 0;
            fresh += 1;
        }
        let seed = rng.next_u64();
        let mut child = spawn_worker(&path, seed, Some(2));
        // Most rounds kill the worker from outside within 40 ms, at whatever it is doing. On
        // a loaded machine the worker may not even reach creation by then, so every fifth
        // round waits (up to 30 s) for it to kill itself at one of its armed crash points.
        let deadline = Instant::now()
            + if round % 5 == 4 {
                Duration::from_secs(30)
            } else {
                Duration::from_millis(rng.below(40))
            };
        if kill_at(&mut child, deadline) {
            self_killed += 1;
        }
        child.wait().unwrap();
        let (store, _, offset, _) = reopen_and_check(&path, round, seed, base, &mut model, config);
        store.close().unwrap();
        let report = kstate::store::inspect::verify(&path).unwrap();
        assert!(
            report.problems.is_empty(),
            "round {round}: {:?}",
            report.problems
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("kstate-new"))
            .collect();
        assert!(
            leftovers.is_empty(),
            "round {round}: staging directories left: {leftovers:?}"
        );
        base = offset;
    }
    eprintln!("creation/recovery kills: {fresh} fresh stores, {self_killed} workers killed at a crash point");
    assert!(self_killed > 0, "no kill landed on a crash point");
}

/// SIGKILLs while a store runs in lazy upgrade mode: the store starts as a plain store
/// holding a plain value for every key of the workload, and the workers open it
/// timestamped, migrating keys as they write. After every kill the reopened store (still
/// merging both families) equals the model of the commit whose offset it reports.
#[test]
fn kills_during_a_lazy_upgrade_recover_a_whole_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let config = WorkloadConfig::default();
    let mut model = Model::default();
    let mut rng = Rng::new(0x5EED ^ u64::from(std::process::id()));
    let mut base = 0i64;
    // A worker touches every one of the workload's keys within a round or two (faster on
    // a quiet machine), which completes the upgrade; so every eighth round starts again
    // from a plain store, and the test counts the kills that land while upgrading.
    let (mut upgrading, mut killed_upgrading) = (false, 0);
    for round in 0..40 {
        if round % 8 == 0 {
            let _ = std::fs::remove_dir_all(&path);
            model = plain_store_of_every_key(&path, config);
            base = 0;
            upgrading = true;
        }
        let seed = rng.next_u64();
        let mut child = spawn_worker(&path, seed, (round % 3 == 2).then_some(4));
        std::thread::sleep(Duration::from_millis(5 + rng.below(120)));
        kill_unless_ended(&mut child);
        child.wait().unwrap();
        killed_upgrading += usize::from(upgrading);
        let (store, _, offset, _) = reopen_and_check(&path, round, seed, base, &mut model, config);
        upgrading = store.is_upgrading();
        store.close().unwrap();
        base = offset;
    }
    assert!(
        killed_upgrading >= 5,
        "only {killed_upgrading} workers were killed in upgrade mode"
    );
}

/// A plain store holding a plain value for every key of the workload, and its model as the
/// timestamped view shows it (timestamp -1).
fn plain_store_of_every_key(path: &Path, config: WorkloadConfig) -> Model {
    let mut model = Model::default();
    let plain = KvStore::open(path, &StoreOptions::plain(EngineKind::RocksDb)).unwrap();
    for k in 0..config.keys {
        let key = if k == 0 {
            Vec::new()
        } else {
            format!("key-{k:06}").into_bytes()
        };
        let value = format!("plain-{k}").into_bytes();
        plain.put_raw(&key, Some(&value)).unwrap();
        model
            .committed
            .insert(key, kstate::format::value::encode(&value, -1));
    }
    plain.commit(&[], None).unwrap();
    plain.close().unwrap();
    model
}

/// SIGKILLs while workers restore: most transactions are handed over whole as restore
/// batches (written without the WAL, each with its commit record), the others commit
/// through the transaction (logged writes, before which the engine flushes the restored
/// batches), on small memtables that also flush by themselves mid-run. One round in three
/// arms the crash points, among them right after a restore batch and right before the flush
/// that precedes a logged write. After every kill the store holds exactly the model state of
/// the commit whose offset it reports; restored batches lost with the process only move
/// that offset back to an earlier commit, never below what a previous round recovered.
#[test]
fn kills_during_restores_recover_a_whole_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let config = WorkloadConfig::default();
    let mut model = Model::default();
    let mut rng = Rng::new(0x2E5702E ^ u64::from(std::process::id()));
    let (mut base, mut self_killed, mut advanced, mut lost) = (0i64, 0, 0, 0);
    let (mut ingestions, mut completed) = (0u64, 0u64);
    let rounds = (kills() / 2).max(20);
    for round in 0..rounds {
        let seed = rng.next_u64();
        let odds = (round % 3 == 2).then_some(8);
        let mut child = spawn_worker_with(&path, seed, odds, &["--restore-percent", "70"]);
        // The worker reports each restored batch's offset; read them as they come, so that
        // the pipe never fills.
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            let (mut restored, mut ingested) = (None, 0u64);
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(o) = line.strip_prefix("restored ") {
                    restored = restored.max(o.parse::<i64>().ok());
                } else if let Some(n) = line.strip_prefix("ingestions ") {
                    ingested = ingested.max(n.parse().unwrap_or(0));
                }
            }
            (restored, ingested)
        });
        std::thread::sleep(Duration::from_millis(20 + rng.below(200)));
        if kill_unless_ended(&mut child) {
            self_killed += 1;
        }
        expect_sigkilled(&mut child, round);
        let (restored, ingested) = reader.join().unwrap();
        ingestions += ingested;
        let (store, _, offset, _) = reopen_and_check(&path, round, seed, base, &mut model, config);
        // Recovery completed an ingestion whose intent the killed worker had recorded.
        completed += store
            .property("kstate.restore-ingestions")
            .unwrap()
            .unwrap();
        advanced += usize::from(offset > base);
        // A batch reported restored but not recovered was lost with the process (it was not
        // flushed yet): the store went back to an earlier whole commit.
        lost += usize::from(restored.is_some_and(|r| r > offset));
        store.close().unwrap();
        base = offset;
    }
    eprintln!(
        "restore kills: {rounds} rounds, {advanced} advanced the committed offset, {lost} lost \
         unflushed restored batches, {self_killed} workers killed at a crash point, \
         {ingestions} restores ingested as files, {completed} ingestions completed by \
         recovery, final offset {base}"
    );
    assert!(ingestions > 0, "no restore was large enough to be ingested");
    assert!(
        completed > 0,
        "no kill landed between an ingestion's intent and its commit"
    );
    assert!(
        advanced > rounds / 5,
        "workers made too little progress to test anything"
    );
    assert!(
        lost > 0,
        "no kill landed while restored batches were unflushed"
    );
    assert!(self_killed > 0, "no kill landed on a crash point");
}

/// The in-memory engine cannot outlive its process, so its "crash" is in-process: the
/// workload is abandoned at random points by rollback or by closing without commit, and
/// the store must then equal the model state of the last commit.
#[test]
fn memory_engine_abandoned_transactions_leave_the_last_commit() {
    let config = WorkloadConfig::default();
    let mut rng = Rng::new(99);
    for round in 0..50 {
        let options =
            StoreOptions::timestamped(EngineKind::Memory).with_max_uncommitted_bytes(4096);
        let store = KvStore::open_in_memory(&options).unwrap();
        let mut model = Model::default();
        let stop_after = 50 + rng.below(3000);
        let mut offset = 0i64;
        for (i, op) in Workload::new(rng.next_u64(), config).enumerate() {
            if op == Op::Commit {
                offset += 1;
            }
            workload::apply_to_store(&store, &op, offset).unwrap();
            model.apply(&op);
            if i as u64 >= stop_after {
                break;
            }
        }
        assert_eq!(
            workload::dump(&store).unwrap(),
            model.view(),
            "round {round}: writer view"
        );
        if round % 2 == 0 {
            store.rollback().unwrap();
            model.apply(&Op::Rollback);
            assert_eq!(
                workload::dump(&store).unwrap(),
                model.committed,
                "round {round}: after rollback"
            );
        }
        assert_eq!(
            store
                .committed_offset(&workload::changelog_partition())
                .unwrap(),
            (offset > 0).then_some(offset),
        );
        let committed: std::collections::BTreeMap<_, _> = store
            .scan(
                kstate::Isolation::ReadCommitted,
                &kstate::KeyRange::all(),
                false,
            )
            .unwrap()
            .collect::<kstate::Result<_>>()
            .unwrap();
        assert_eq!(committed, model.committed, "round {round}: committed view");
        store.close().unwrap();
        assert!(store.get(b"k").is_err(), "closed store must refuse reads");
    }
}

/// A window or session store of the segmented crash workload, or its reference on the
/// memory engine.
enum Seg {
    W(WindowStore),
    S(SessionStore),
}

impl Seg {
    fn open(path: Option<&Path>, window: bool) -> Seg {
        use workload_segmented as w;
        let engine = if path.is_some() {
            EngineKind::RocksDb
        } else {
            EngineKind::Memory
        };
        let store = StoreOptions::timestamped(engine);
        if window {
            let o = WindowOptions::new(w::RETENTION, w::WINDOW, false)
                .with_segment_interval(w::INTERVAL)
                .with_store(store);
            Seg::W(match path {
                Some(p) => WindowStore::open(p, &o).unwrap(),
                None => WindowStore::open_in_memory(&o).unwrap(),
            })
        } else {
            let o = SessionOptions::new(w::RETENTION)
                .with_segment_interval(w::INTERVAL)
                .with_store(store);
            Seg::S(match path {
                Some(p) => SessionStore::open(p, &o).unwrap(),
                None => SessionStore::open_in_memory(&o).unwrap(),
            })
        }
    }

    fn apply(&self, op: &workload_segmented::SegOp, offset: i64) {
        match self {
            Seg::W(s) => workload_segmented::apply_window(s, op, offset).unwrap(),
            Seg::S(s) => workload_segmented::apply_session(s, op, offset).unwrap(),
        }
    }

    fn offset(&self) -> Option<i64> {
        let tp = workload_segmented::segmented_partition();
        match self {
            Seg::W(s) => s.committed_offset(&tp).unwrap(),
            Seg::S(s) => s.committed_offset(&tp).unwrap(),
        }
    }

    fn rollback(&self) {
        match self {
            Seg::W(s) => s.rollback().unwrap(),
            Seg::S(s) => s.rollback().unwrap(),
        }
    }

    /// The committed contents in Kafka's order (rendered), with the committed stream time.
    fn dump(&self) -> (Vec<String>, i64) {
        match self {
            Seg::W(s) => {
                // The memory engine (the reference) lists windows by start, RocksDB by key:
                // the contents are compared, in one order.
                let mut all: Vec<_> = s
                    .query(Isolation::ReadCommitted, &WindowQuery::All, false)
                    .unwrap()
                    .map(|e| {
                        let e = e.unwrap();
                        ((e.key.clone(), e.window_start, e.seqnum), format!("{e:?}"))
                    })
                    .collect();
                all.sort();
                (
                    all.into_iter().map(|(_, e)| e).collect(),
                    s.stream_time(Isolation::ReadCommitted).unwrap(),
                )
            }
            Seg::S(s) => (
                s.query(Isolation::ReadCommitted, &SessionQuery::All, false)
                    .unwrap()
                    .map(|e| format!("{:?}", e.unwrap()))
                    .collect(),
                s.stream_time(Isolation::ReadCommitted).unwrap(),
            ),
        }
    }

    /// Entries physically held (exact on the memory engine).
    fn entries(&self) -> u64 {
        match self {
            Seg::W(s) => s.approximate_num_entries(Isolation::ReadCommitted).unwrap(),
            Seg::S(s) => s.approximate_num_entries(Isolation::ReadCommitted).unwrap(),
        }
    }

    fn close(&self) {
        match self {
            Seg::W(s) => s.close().unwrap(),
            Seg::S(s) => s.close().unwrap(),
        }
    }
}

/// SIGKILLs of window and session store workers (crash points armed one round in three):
/// after each, the reopened store holds exactly the contents and stream time of the commit
/// whose offset it reports, as replayed on a reference store on the memory engine.
fn segmented_kills(window: bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let reference = Seg::open(None, window);
    let mut rng = Rng::new(0x5E6 ^ u64::from(std::process::id()) ^ u64::from(window));
    let (mut base, mut commits_seen, mut rolled_forward) = (0i64, 0u64, 0);
    let rounds = (kills() / 3).max(20);
    for round in 0..rounds {
        let seed = rng.next_u64();
        let odds = (round % 3 == 2).then_some(4);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"));
        cmd.arg("crash-worker")
            .arg("--dir")
            .arg(&path)
            .args(["--seed", &seed.to_string(), "--max-uncommitted", "32768"])
            .args(["--kind", if window { "window" } else { "session" }])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        match odds {
            Some(o) => cmd.env("KSTATE_FAILPOINT_ODDS", o.to_string()),
            None => cmd.env_remove("KSTATE_FAILPOINT_ODDS"),
        };
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(10 + rng.below(150)));
        kill_unless_ended(&mut child);
        expect_sigkilled(&mut child, round);

        let store = Seg::open(Some(&path), window);
        if let Seg::W(s) = &store {
            rolled_forward += usize::from(s.recovery().rolled_forward);
        }
        if let Seg::S(s) = &store {
            rolled_forward += usize::from(s.recovery().rolled_forward);
        }
        let offset = store.offset().unwrap_or(0);
        assert!(offset >= base, "round {round}: offset went backwards");
        let commits = (offset - base) as u64;
        let mut done = 0u64;
        for op in workload_segmented::SegWorkload::new(seed, window) {
            if done >= commits {
                break;
            }
            let is_commit = op == workload_segmented::SegOp::Commit;
            reference.apply(&op, base + done as i64 + 1);
            done += u64::from(is_commit);
        }
        reference.rollback();
        assert_eq!(reference.offset().unwrap_or(0), offset, "round {round}");
        assert_eq!(
            store.dump(),
            reference.dump(),
            "round {round} (seed {seed}, offset {offset}): recovered store differs from commit {offset}"
        );
        commits_seen += commits;
        store.close();
        // Expired segments were reclaimed exactly as on the reference: the family holds
        // the same number of entries (counted exactly by `inspect`).
        let family = if window {
            kstate::store::WINDOW_FAMILY
        } else {
            kstate::store::SESSION_FAMILY
        };
        let report = kstate::store::inspect::inspect(&path).unwrap();
        let held = report
            .families
            .iter()
            .find(|f| f.name == family)
            .map_or(0, |f| f.entries);
        assert_eq!(
            held,
            reference.entries(),
            "round {round}: entries held on disk"
        );
        base = offset;
    }
    eprintln!(
        "{} crash test: {rounds} SIGKILLs, {commits_seen} commits verified, {rolled_forward} \
         recoveries completed a spilled commit",
        if window { "window" } else { "session" }
    );
    assert!(
        commits_seen > rounds as u64,
        "workers made too little progress"
    );
}

/// SIGKILLs of versioned store workers (crash points armed one round in three): after
/// each, the reopened store answers every read (latest, as of each time, every version)
/// exactly as a memory-engine reference replayed to the commit whose offset it reports,
/// with that commit's stream time.
#[test]
fn versioned_store_sigkills_recover_a_whole_commit() {
    use kstate::store::{VersionedOptions, VersionedStore};
    use workload_versioned as w;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let options = |engine| {
        VersionedOptions::new(w::RETENTION)
            .with_segment_interval(w::INTERVAL)
            .with_store(StoreOptions::plain(engine))
    };
    let reference = VersionedStore::open_in_memory(&options(EngineKind::Memory)).unwrap();
    let tp = w::versioned_partition();
    let mut rng = Rng::new(0x7E5 ^ u64::from(std::process::id()));
    let (mut base, mut commits_seen, mut rolled_forward) = (0i64, 0u64, 0);
    let rounds = (kills() / 3).max(20);
    for round in 0..rounds {
        let seed = rng.next_u64();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"));
        cmd.arg("crash-worker")
            .arg("--dir")
            .arg(&path)
            .args(["--seed", &seed.to_string(), "--max-uncommitted", "32768"])
            .args(["--kind", "versioned"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        match round % 3 == 2 {
            true => cmd.env("KSTATE_FAILPOINT_ODDS", "4"),
            false => cmd.env_remove("KSTATE_FAILPOINT_ODDS"),
        };
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(10 + rng.below(150)));
        kill_unless_ended(&mut child);
        expect_sigkilled(&mut child, round);

        let store = VersionedStore::open(&path, &options(EngineKind::RocksDb)).unwrap();
        rolled_forward += usize::from(store.recovery().rolled_forward);
        let offset = store.committed_offset(&tp).unwrap().unwrap_or(0);
        assert!(offset >= base, "round {round}: offset went backwards");
        let commits = (offset - base) as u64;
        let mut done = 0u64;
        for op in w::VWorkload::new(seed) {
            if done >= commits {
                break;
            }
            w::apply(&reference, &op, base + done as i64 + 1).unwrap();
            done += u64::from(op == w::VOp::Commit);
        }
        reference.rollback().unwrap();
        assert_eq!(
            reference.committed_offset(&tp).unwrap().unwrap_or(0),
            offset,
            "round {round}"
        );
        assert_eq!(
            w::dump(&store, Isolation::ReadCommitted),
            w::dump(&reference, Isolation::ReadCommitted),
            "round {round} (seed {seed}, offset {offset}): recovered store differs from commit {offset}"
        );
        commits_seen += commits;
        store.close().unwrap();
        base = offset;
    }
    eprintln!(
        "versioned crash test: {rounds} SIGKILLs, {commits_seen} commits verified, \
         {rolled_forward} recoveries completed a spilled commit"
    );
    assert!(
        commits_seen > rounds as u64,
        "workers made too little progress"
    );
}

#[test]
fn window_store_sigkills_recover_a_whole_commit() {
    segmented_kills(true);
}

#[test]
fn session_store_sigkills_recover_a_whole_commit() {
    segmented_kills(false);
}

/// Kills during an upgrade by prepare and swap (`kstate-test-worker swap-worker`: the swap, with a second
/// thread committing `w-<i>` at offset 100 + i meanwhile), at random moments and at the
/// swap's crash points, half the rounds through the marker-file fallback instead of
/// `renameat2(RENAME_EXCHANGE)`: the store always opens, in upgrade mode (old store) or
/// regular mode (new store), and holds exactly the plain values plus the writes up to its
/// committed offset; no side directory survives the open.
/// The state `checkpoint-worker` leaves at `path`: its committed offset must match its data
/// (`w-<i>` for every i up to offset - 100, nothing after).
fn check_checkpoint_worker_state(path: &Path) -> Option<i64> {
    let store = KvStore::open(path, &StoreOptions::default()).unwrap();
    let tp = kstate::TopicPartition::new("checkpoint-changelog", 0);
    let offset = store.committed_offset(&tp).unwrap();
    let last = offset.map_or(-1, |o| o - 100);
    for i in [0, last / 2, last, last + 1] {
        let present = store.get(format!("w-{i}").as_bytes()).unwrap().is_some();
        assert_eq!(
            present,
            i >= 0 && i <= last,
            "w-{i} at offset {offset:?} in {path:?}"
        );
    }
    store.close().unwrap();
    offset
}

/// A checkpoint killed at any point leaves its source a store that opens with a whole
/// commit and nothing at its destination, or a whole checkpoint there; the next checkpoint
/// to the same destination clears what the killed one left beside it. Kills land exactly
/// at the checkpoint's crash points (after the copy, before the rename) and at random moments.
#[test]
fn kills_during_a_checkpoint_leave_no_partial_copy() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("store");
    let mut rng = Rng::new(0x5EED ^ u64::from(std::process::id()));
    let spawn = |dest: &Path, point: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"));
        cmd.arg("checkpoint-worker")
            .arg("--dir")
            .arg(&source)
            .arg("--dest")
            .arg(dest)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        match point {
            Some(p) => cmd
                .env("KSTATE_FAILPOINT_ODDS", "1")
                .env("KSTATE_FAILPOINT_ONLY", p),
            None => cmd.env_remove("KSTATE_FAILPOINT_ODDS"),
        };
        cmd.spawn().expect("spawn checkpoint worker")
    };
    let mut last_offset = None;
    let rounds = 12;
    for round in 0..rounds {
        let dest = dir.path().join(format!("round-{round}"));
        let point = match round % 3 {
            0 => Some("checkpoint-copied"),
            1 => Some("checkpoint-before-rename"),
            _ => None,
        };
        let mut child = spawn(&dest, point);
        if point.is_none() {
            std::thread::sleep(Duration::from_millis(50 + rng.below(400)));
            kill_unless_ended(&mut child);
        }
        expect_sigkilled(&mut child, round);
        // Every checkpoint directory is whole; the one in progress is absent.
        let mut n = 0;
        loop {
            let taken = dir.path().join(format!("round-{round}-{n}"));
            if !taken.exists() {
                break;
            }
            check_checkpoint_worker_state(&taken);
            n += 1;
        }
        if point.is_some() {
            assert_eq!(n, 0, "round {round}: killed in the first checkpoint");
            // The killed checkpoint's copy is left beside its destination, never at it.
            let staging = dir
                .path()
                .join(format!(".round-{round}-0.kstate-checkpoint"));
            assert!(staging.join("CURRENT").exists(), "round {round}");
        }
        let offset = check_checkpoint_worker_state(&source);
        assert!(
            offset >= last_offset,
            "round {round}: {offset:?} < {last_offset:?}"
        );
        last_offset = offset;
        // The destination the killed checkpoint was writing is free for the next one.
        let killed = dir.path().join(format!("round-{round}-{n}"));
        let store = KvStore::open(&source, &StoreOptions::default()).unwrap();
        let info = store.checkpoint(&killed).unwrap();
        store.close().unwrap();
        assert_eq!(
            check_checkpoint_worker_state(&killed),
            info.offsets.first().map(|o| o.1)
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".kstate-checkpoint"))
            .collect();
        assert!(
            left.is_empty(),
            "round {round}: staging left behind: {left:?}"
        );
    }
    assert!(last_offset.is_some());
}

#[test]
fn kills_during_an_upgrade_by_swap_leave_the_old_or_the_new_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let mut rng = Rng::new(0x5A5A ^ u64::from(std::process::id()));
    // A plain store of 40,000 keys; returns what the upgraded store must hold of them.
    let prepare = |path: &Path| {
        let _ = std::fs::remove_dir_all(path);
        let mut base = std::collections::BTreeMap::new();
        let plain = KvStore::open(path, &StoreOptions::plain(EngineKind::RocksDb)).unwrap();
        for k in 0..40_000u64 {
            let key = format!("key-{k:06}").into_bytes();
            let value = vec![b'a' + (k % 26) as u8; 100];
            plain.put_raw(&key, Some(&value)).unwrap();
            base.insert(key, kstate::format::value::encode(&value, -1));
        }
        plain.commit(&[], None).unwrap();
        plain.close().unwrap();
        base
    };
    let worker = |path: &Path| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"));
        cmd.arg("swap-worker")
            .arg("--dir")
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    };
    // Kill moments are drawn over this machine's time for a whole upgrade (KillWindow): a
    // fixed window was too long for a fast machine, where most workers finished before it
    // and the old store was never seen live (24 rounds, 0 old).
    let measure = || {
        prepare(&path);
        let started = Instant::now();
        let out = worker(&path).output().unwrap();
        assert!(
            out.status.success(),
            "the unkilled worker failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
    };
    let mut window = kill_window::KillWindow::measured("an upgrade by swap", measure());
    let (mut old_live, mut new_live) = (0, 0);
    for round in 0..24u64 {
        window.before_round(round as usize, new_live > 0, measure);
        let base = prepare(&path);
        let mut cmd = worker(&path);
        if round % 2 == 1 {
            cmd.env("KSTATE_SWAP_NO_EXCHANGE", "1");
        }
        if round % 3 != 0 {
            cmd.env("KSTATE_FAILPOINT_ODDS", "40");
        }
        let started = Instant::now();
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(5 + rng.below(window.span_ms())));
        kill_unless_ended(&mut child);
        let out = child.wait_with_output().unwrap();
        let killed = !out.status.success();
        println!(
            "round {round}: killed {killed} after {:?}",
            started.elapsed()
        );
        assert!(
            out.status.success() || out.status.code().is_none(),
            "round {round}: the worker failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let store = KvStore::open(&path, &StoreOptions::default()).unwrap();
        let tp = kstate::TopicPartition::new("swap-changelog", 0);
        let offset = store.committed_offset(&tp).unwrap();
        let mut expected = base.clone();
        if let Some(last) = offset {
            for i in 0..=(last - 100) {
                expected.insert(
                    format!("w-{i}").into_bytes(),
                    kstate::format::value::encode(i.to_string().as_bytes(), i),
                );
            }
        }
        let actual: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = store
            .scan(
                kstate::Isolation::ReadCommitted,
                &kstate::KeyRange::all(),
                false,
            )
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        assert!(
            actual == expected,
            "round {round} (killed {killed}): offset {offset:?}"
        );
        if store.is_upgrading() {
            old_live += 1;
        } else {
            new_live += 1;
        }
        store.close().unwrap();
        for leftover in ["kstate-swap", "kstate-swap-ready", "kstate-swap-old"] {
            assert!(
                !dir.path().join(format!(".store.{leftover}")).exists(),
                "round {round}: .store.{leftover} survived the open"
            );
        }
    }
    println!("swap kills: old store live {old_live} times, new store live {new_live} times");
    assert!(
        old_live > 0 && new_live > 0,
        "both outcomes: {old_live} old, {new_live} new"
    );
}

/// Names the scenario that a copy of this test binary, re-executed as a child process by
/// [`run_child`], plays in [`child_process_entry`] before it is killed.
const CHILD_ENV: &str = "KSTATE_CRASH_CHILD";
/// The store directory of that scenario.
const CHILD_DIR_ENV: &str = "KSTATE_CRASH_CHILD_DIR";

/// First offset the `commits` child scenario commits.
const CHILD_FROM_ENV: &str = "KSTATE_CRASH_CHILD_FROM";
/// Number of commits of the `commits` child scenario.
const CHILD_COUNT_ENV: &str = "KSTATE_CRASH_CHILD_COUNT";

/// Runs `scenario` on the store at `path` in a child process (this test binary again),
/// with the crash point `failpoint` (if any) killing it the first time it is reached, and
/// checks that it ended by SIGKILL (at that point, or killing itself after its last step).
fn run_child(scenario: &str, path: &Path, failpoint: Option<&str>) {
    run_child_with(scenario, path, failpoint, &[]);
}

/// Kills the calling process with SIGKILL, as a crash.
fn die() -> ! {
    // SAFETY: kill(2) with our own pid and a valid signal number has no memory effects.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("SIGKILL returned");
}

/// [`run_child`] with more environment variables for the child; returns its stdout.
fn run_child_with(
    scenario: &str,
    path: &Path,
    failpoint: Option<&str>,
    env: &[(&str, i64)],
) -> String {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_process_entry",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(CHILD_ENV, scenario)
    .env(CHILD_DIR_ENV, path)
    .envs(env.iter().map(|(k, v)| (*k, v.to_string())))
    .stdin(Stdio::null());
    match failpoint {
        Some(point) => cmd
            .env("KSTATE_FAILPOINT_ODDS", "1")
            .env("KSTATE_FAILPOINT_ONLY", point),
        None => cmd.env_remove("KSTATE_FAILPOINT_ODDS"),
    };
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGKILL),
        "{scenario}: the child ended with {:?}: {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The body of a child process started by [`run_child`]; a no-op in a normal test run.
#[test]
fn child_process_entry() {
    let Some(scenario) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let path = std::path::PathBuf::from(std::env::var_os(CHILD_DIR_ENV).unwrap());
    // The store stays open until the process dies: a drop would close it cleanly.
    let _store = match scenario.to_str().unwrap() {
        // A restore batch written (by the read) without the WAL, then compacted.
        "restore-written-compact" => {
            let store = KvStore::open(&path, &StoreOptions::default()).unwrap();
            restore_second_state(&store);
            store.get(b"k00").unwrap();
            store.compact().unwrap();
            store
        }
        // A restore batch still gathered in memory when the compaction starts.
        "restore-gathered-compact" => {
            let store = KvStore::open(&path, &StoreOptions::default()).unwrap();
            restore_second_state(&store);
            store.compact().unwrap();
            store
        }
        // In upgrade mode: `a` migrated by a step, `b` restored (leaving the old family
        // without the WAL), then the step that finds nothing left compacts the old family.
        "upgrade-restore-compact" => {
            let store = KvStore::open(&path, &StoreOptions::default()).unwrap();
            assert!(store.is_upgrading());
            assert_eq!(store.upgrade_step(1).unwrap(), 1);
            let b = kstate::format::value::encode(b"nb", 5);
            store
                .restore_batch(
                    [(&b"b"[..], Some(&b[..]))],
                    &[(tp_of_children(), Some(2))],
                    None,
                )
                .unwrap();
            assert_eq!(store.upgrade_step(10).unwrap(), 0);
            store
        }
        // Commits `from`, `from + 1`, ... (see [`numbered_state`]), left in the WAL. Prints
        // `opened <offset>` once open, or `open-error <code>` and dies.
        "commits" => {
            let number = |name: &str| -> i64 { std::env::var(name).unwrap().parse().unwrap() };
            let (from, count) = (number(CHILD_FROM_ENV), number(CHILD_COUNT_ENV));
            let store = match KvStore::open(&path, &StoreOptions::default()) {
                Ok(store) => store,
                Err(e) => {
                    println!("open-error {:?} {e}", e.code());
                    die();
                }
            };
            let opened = store.committed_offset(&tp_of_children()).unwrap();
            println!("opened {}", opened.unwrap_or(-1));
            for i in from..from + count {
                let value = kstate::format::value::encode(&i.to_be_bytes(), i);
                store
                    .put_raw(format!("c{i:05}").as_bytes(), Some(&value))
                    .unwrap();
                store.put_raw(b"last", Some(&value)).unwrap();
                store.commit(&[(tp_of_children(), Some(i))], None).unwrap();
            }
            store
        }
        other => panic!("unknown child scenario {other}"),
    };
    // Whatever the scenario left in memory dies with the process, as in a crash.
    die();
}

/// The changelog partition of the child scenarios.
fn tp_of_children() -> kstate::TopicPartition {
    kstate::TopicPartition::new("child-changelog", 0)
}

/// The first state of the child scenarios' key-value store: `k00`..`k09` = `one`, committed
/// at offset 1.
fn first_state() -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    (0..10)
        .map(|i| {
            let key = format!("k{i:02}").into_bytes();
            (key, kstate::format::value::encode(b"one", 1))
        })
        .collect()
}

/// The second state: `k00`..`k19` = `two`, restored at offset 2.
fn second_state() -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    (0..20)
        .map(|i| {
            let key = format!("k{i:02}").into_bytes();
            (key, kstate::format::value::encode(b"two", 2))
        })
        .collect()
}

/// Restores [`second_state`] in one batch at offset 2.
fn restore_second_state(store: &KvStore) {
    let second = second_state();
    store
        .restore_batch(
            second
                .iter()
                .map(|(k, v)| (k.as_slice(), Some(v.as_slice()))),
            &[(tp_of_children(), Some(2))],
            None,
        )
        .unwrap();
}

/// A store at [`first_state`], closed.
fn store_at_first_state(path: &Path) {
    let store = KvStore::open(path, &StoreOptions::default()).unwrap();
    for (k, v) in first_state() {
        store.put_raw(&k, Some(&v)).unwrap();
    }
    store.commit(&[(tp_of_children(), Some(1))], None).unwrap();
    store.close().unwrap();
}

/// The committed offset and contents of the store at `path`, reopened.
fn reopened_state(path: &Path) -> (Option<i64>, std::collections::BTreeMap<Vec<u8>, Vec<u8>>) {
    let store = KvStore::open(path, &StoreOptions::default()).unwrap();
    let state = (
        store.committed_offset(&tp_of_children()).unwrap(),
        workload::dump(&store).unwrap(),
    );
    store.close().unwrap();
    state
}

/// Defect of kstate 0.1: `compact` flushed only the compacted family, so a kill between
/// that flush and the compaction left a restore batch (written without the WAL) on disk
/// while its commit record, in the meta family, was lost: the store reopened at the
/// previous offset holding the restored data. The kill lands right after the flush.
#[test]
fn a_kill_inside_compact_keeps_restored_data_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    store_at_first_state(&path);
    run_child(
        "restore-written-compact",
        &path,
        Some("compact-after-flush"),
    );
    // The flush before the kill made the restore durable, whole.
    assert_eq!(reopened_state(&path), (Some(2), second_state()));
}

/// The same kill inside the compaction that ends an upgrade (`upgrade_step` compacts the
/// old family once it is empty): the restored key's removal from the old family must not
/// reach disk without its new value and offset (kstate 0.1 lost the key).
#[test]
fn a_kill_inside_the_compaction_of_an_upgrade_step_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let plain = KvStore::open(&path, &StoreOptions::plain(EngineKind::RocksDb)).unwrap();
    plain.put_raw(b"a", Some(b"pa")).unwrap();
    plain.put_raw(b"b", Some(b"pb")).unwrap();
    plain.commit(&[(tp_of_children(), Some(1))], None).unwrap();
    plain.close().unwrap();
    run_child(
        "upgrade-restore-compact",
        &path,
        Some("compact-after-flush"),
    );
    let expected = [
        (b"a".to_vec(), kstate::format::value::encode(b"pa", -1)),
        (b"b".to_vec(), kstate::format::value::encode(b"nb", 5)),
    ];
    assert_eq!(
        reopened_state(&path),
        (Some(2), expected.into_iter().collect())
    );
}

/// `compact` first writes restore batches still gathered in memory (kstate 0.1 compacted
/// without them, so a kill right after `compact` returned lost them).
#[test]
fn compact_writes_gathered_restores_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    store_at_first_state(&path);
    run_child("restore-gathered-compact", &path, None);
    assert_eq!(reopened_state(&path), (Some(2), second_state()));
}

/// The state after the `commits` child scenario's commits `ranges` (inclusive), on a store
/// that held `last` = 0: `c<i>` and `last` = `i` (as value and timestamp) for each `i`.
fn numbered_state(ranges: &[(i64, i64)]) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    let mut state = std::collections::BTreeMap::new();
    state.insert(
        b"last".to_vec(),
        kstate::format::value::encode(&0i64.to_be_bytes(), 0),
    );
    for &(from, to) in ranges {
        for i in from..=to {
            let value = kstate::format::value::encode(&i.to_be_bytes(), i);
            state.insert(format!("c{i:05}").into_bytes(), value.clone());
            state.insert(b"last".to_vec(), value);
        }
    }
    state
}

/// A store at `last` = 0 (offset 0), then three children each committing 100 commits and
/// killed: each open replays the WALs before it without flushing them
/// (`avoid_flush_during_recovery`), so the store is left with (at least) three WAL files,
/// one per child. Returns the WAL file names, oldest first.
fn store_with_three_wals(path: &Path) -> Vec<String> {
    let store = KvStore::open(path, &StoreOptions::default()).unwrap();
    let zero = kstate::format::value::encode(&0i64.to_be_bytes(), 0);
    store.put_raw(b"last", Some(&zero)).unwrap();
    store.commit(&[(tp_of_children(), Some(0))], None).unwrap();
    store.close().unwrap();
    for from in [1, 101, 201] {
        run_child_with(
            "commits",
            path,
            None,
            &[(CHILD_FROM_ENV, from), (CHILD_COUNT_ENV, 100)],
        );
    }
    let mut logs: Vec<String> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    logs.sort();
    assert!(logs.len() >= 3, "WAL files: {logs:?}");
    logs
}

/// Defect of kstate 0.1: with its middle WAL deleted, a killed store reopened at its newest
/// offset without the commits of the missing WAL. RocksDB replays the WALs around the hole:
/// its manifest tracks only synced WALs, and the predecessor record of
/// `track_and_verify_wals` does not link the first WAL of a session to the WALs its open
/// replayed without flushing. Each open now records the WALs it found, and the next open
/// refuses (`CORRUPTION`) when one of them is missing while still needed; an open at the
/// last whole commit before the hole would do too. Commits made after such an open must
/// then survive the next kill.
#[test]
fn a_deleted_middle_wal_is_corruption_or_an_earlier_whole_commit() {
    deleted_wal_is_corruption_or_an_earlier_whole_commit(1);
}

/// As [`a_deleted_middle_wal_is_corruption_or_an_earlier_whole_commit`], for the oldest of
/// the three WALs (kstate 0.1 opened at the newest offset without the first child's commits).
#[test]
fn a_deleted_oldest_wal_is_corruption_or_an_earlier_whole_commit() {
    deleted_wal_is_corruption_or_an_earlier_whole_commit(0);
}

/// Deletes the `which`-th (0-based) of the three WALs [`store_with_three_wals`] leaves, then
/// checks the store refuses to open (`CORRUPTION`) or opens at a whole commit made before
/// that WAL, with more commits made after that open surviving a kill.
fn deleted_wal_is_corruption_or_an_earlier_whole_commit(which: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let logs = store_with_three_wals(&path);
    std::fs::remove_file(path.join(&logs[logs.len() - 3 + which])).unwrap();
    // A child opens it (no clean close follows, so the WALs stay as recovery left them),
    // commits more, and is killed.
    let out = run_child_with(
        "commits",
        &path,
        None,
        &[(CHILD_FROM_ENV, 1001), (CHILD_COUNT_ENV, 10)],
    );
    // (libtest may print the test's name on the same line.)
    let line = |tag: &str| {
        out.lines()
            .find_map(|l| l.split_once(tag).map(|(_, rest)| rest))
    };
    if let Some(error) = line("open-error ") {
        assert!(error.starts_with("Corruption"), "{error}");
        eprintln!("WAL {which} of 3 deleted: {error}");
        // Refused every time, and nothing was changed on the way.
        let again = KvStore::open(&path, &StoreOptions::default()).unwrap_err();
        assert_eq!(again.code(), kstate::ErrorCode::Corruption, "{again}");
        return;
    }
    let opened: i64 = line("opened ")
        .unwrap_or_else(|| panic!("child output: {out}"))
        .parse()
        .unwrap();
    let before = 100 * which as i64;
    assert!(
        opened <= before,
        "opened at offset {opened}, past the missing WAL"
    );
    eprintln!("WAL {which} of 3 deleted: opened at offset {opened}");
    // The opened commit was whole, and the later commits stay on top of it.
    assert_eq!(
        reopened_state(&path),
        (Some(1010), numbered_state(&[(1, opened), (1001, 1010)]))
    );
}

/// What deleting the newest WAL does (documented): the commits only it held are lost
/// without an error, and the store opens at the last commit of the WAL before it, whole.
/// The record of the WALs the last open found lived in that WAL too (see docs/transactions.md,
/// *WAL integrity*).
#[test]
fn a_deleted_newest_wal_leaves_the_commit_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let logs = store_with_three_wals(&path);
    std::fs::remove_file(path.join(&logs[logs.len() - 1])).unwrap();
    assert_eq!(
        reopened_state(&path),
        (Some(200), numbered_state(&[(1, 200)]))
    );
}
