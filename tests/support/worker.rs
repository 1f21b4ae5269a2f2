//! `kstate-test-worker`: the processes the crash and kill tests SIGKILL. Test support, not
//! part of the shipped `kstate` CLI: each subcommand runs a deterministic workload (or an
//! upgrade, or an adoption) on a store until it is done or killed, and the test that
//! spawned it checks what the store kept against the model of the same workload.

// The workloads are shared source, not library API: each user compiles its own copy.
#[allow(dead_code)]
mod workload;
#[allow(dead_code)]
mod workload_segmented;
#[allow(dead_code)]
mod workload_versioned;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kstate::{KvStore, StoreOptions, TopicPartition};
use workload::{Model, Workload, WorkloadConfig};

#[derive(Parser)]
#[command(
    name = "kstate-test-worker",
    about = "Workers the kstate kill tests run"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the deterministic random workload against a store until killed.
    #[command(name = "crash-worker")]
    Crash {
        /// Store directory.
        #[arg(long)]
        dir: PathBuf,
        /// Workload seed.
        #[arg(long)]
        seed: u64,
        /// `max_uncommitted_bytes` of the store (small values force spilling).
        #[arg(long, default_value_t = 32 * 1024)]
        max_uncommitted: u64,
        /// Stop after this many commits (default: run until killed).
        #[arg(long)]
        commits: Option<u64>,
        /// Store kind: `kv` (default), `window`, `session` or `versioned`.
        #[arg(long, default_value = "kv")]
        kind: String,
        /// Percent of transactions handed over whole as restore batches
        /// (`KvStore::restore_batch`) instead of running through the transaction (`kv`
        /// only); with any, the store's memtables are small so that flushes happen mid-run.
        #[arg(long, default_value_t = 0)]
        restore_percent: u64,
    },
    /// Upgrade a store in upgrade mode by prepare and swap while a second thread writes
    /// and commits `w-<i>` = `<i>` at offset 100 + i.
    #[command(name = "swap-worker")]
    Swap {
        /// Store directory.
        #[arg(long)]
        dir: PathBuf,
        /// Writes (each committed) made during and after the swap.
        #[arg(long, default_value_t = 200)]
        writes: u64,
    },
    /// Take checkpoints `<dest>-0`, `<dest>-1`, ... of a key-value store while a second
    /// thread writes and commits `w-<i>` = `<i>` at offset 100 + i, until killed.
    #[command(name = "checkpoint-worker")]
    Checkpoint {
        /// Store directory.
        #[arg(long)]
        dir: PathBuf,
        /// Checkpoint directories: this path with `-<n>` appended.
        #[arg(long)]
        dest: String,
    },
    /// Publish checkpoints of a key-value store to the object store at `uri` while a
    /// second thread writes and commits `w-<i>` = `<i>` at offset 100 + i; every third
    /// round collect garbage (keep 2, no grace period) and restore the newest checkpoint
    /// into `<work>/restore-<pid>-<n>`; until killed.
    #[cfg(feature = "remote")]
    #[command(name = "remote-worker")]
    Remote {
        /// Store directory.
        #[arg(long)]
        dir: PathBuf,
        /// `file:///...` or `s3://...` target.
        #[arg(long)]
        uri: String,
        /// Directory for the checkpoints and restores.
        #[arg(long)]
        work: PathBuf,
    },
    /// Open a window or session store (adopting Kafka Streams' segmented store found there)
    /// and close it.
    #[command(name = "adopt-worker")]
    Adopt {
        /// Store directory.
        #[arg(long)]
        dir: PathBuf,
        /// `window` (timestamped), `plain-window`, `session`, `time-ordered-window` or
        /// `time-ordered-session`.
        #[arg(long)]
        kind: String,
        /// Retention period (ms).
        #[arg(long)]
        retention: i64,
        /// Segment interval (ms); Kafka's default when absent.
        #[arg(long)]
        segment_interval: Option<i64>,
    },
}

type CmdResult = Result<ExitCode, Box<dyn std::error::Error>>;

/// Runs the command; errors are printed with exit code 2, as the `kstate` CLI does (the
/// tests check the exit code of a refused open).
fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Cmd::Crash {
            dir,
            seed,
            max_uncommitted,
            commits,
            kind,
            restore_percent,
        } => match kind.as_str() {
            "kv" => crash_worker(&dir, seed, max_uncommitted, commits, restore_percent),
            "window" | "session" => {
                segmented_crash_worker(&dir, seed, max_uncommitted, commits, kind == "window")
            }
            "versioned" => versioned_crash_worker(&dir, seed, max_uncommitted, commits),
            other => Err(format!("unknown store kind {other}").into()),
        },
        Cmd::Swap { dir, writes } => swap_worker(&dir, writes),
        Cmd::Checkpoint { dir, dest } => checkpoint_worker(&dir, &dest),
        #[cfg(feature = "remote")]
        Cmd::Remote { dir, uri, work } => remote_worker(&dir, &uri, &work),
        Cmd::Adopt {
            dir,
            kind,
            retention,
            segment_interval,
        } => adopt_worker(&dir, &kind, retention, segment_interval),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kstate-test-worker: {e}");
            ExitCode::from(2)
        }
    }
}

fn crash_worker(
    dir: &Path,
    seed: u64,
    max_uncommitted: u64,
    commits: Option<u64>,
    restore_percent: u64,
) -> CmdResult {
    let mut options = StoreOptions::default().with_max_uncommitted_bytes(max_uncommitted);
    if restore_percent > 0 {
        // Small memtables: restored batches (written without the WAL) then reach disk by
        // automatic flushes in mid-run too, not only before the next logged write.
        options.rocksdb.write_buffer_bytes = 64 << 10;
    }
    let store = KvStore::open(dir, &options)?;
    let base = store
        .committed_offset(&workload::changelog_partition())?
        .unwrap_or(0);
    // Tells a waiting parent that the store is open (and locked) from now on, and from which
    // committed offset this worker's commits count.
    println!("ready {base}");
    std::io::Write::flush(&mut std::io::stdout())?;
    // A transaction chosen for restore is tracked in a model of the writer's view (which
    // resolves put_if_absent) and handed over whole, as one restore batch, at its commit;
    // a rolled-back one is never handed over. Either way a commit leaves the same state, so
    // the parent checks both paths with the same model.
    let mut view = Model {
        committed: if restore_percent > 0 {
            workload::dump(&store)?
        } else {
            Default::default()
        },
        ..Model::default()
    };
    let mut rng = workload::Rng::new(seed ^ 0x5E5704E5);
    let mut restoring = rng.chance(restore_percent);
    let mut done = 0u64;
    for op in Workload::new(seed, WorkloadConfig::default()) {
        let is_commit = op == workload::Op::Commit;
        let offset = base + done as i64 + 1;
        if !restoring {
            workload::apply_to_store(&store, &op, offset)?;
        } else if is_commit {
            store.restore_batch(
                view.pending
                    .iter()
                    .map(|(k, v)| (k.as_slice(), v.as_deref())),
                &[(workload::changelog_partition(), Some(offset))],
                None,
            )?;
            // For the parent: restored (visible, not yet durable) up to this offset, and
            // how many gathered restores were ingested as files so far.
            println!("restored {offset}");
            let ingested = store.property("kstate.restore-ingestions")?.unwrap_or(0);
            println!("ingestions {ingested}");
        }
        if restore_percent > 0 {
            view.apply(&op);
            if is_commit || op == workload::Op::Rollback {
                restoring = rng.chance(restore_percent);
            }
        }
        if is_commit {
            done += 1;
            if commits.is_some_and(|n| done >= n) {
                break;
            }
        }
    }
    store.close()?;
    Ok(ExitCode::SUCCESS)
}

/// The crash worker of window (`window`) and session stores: the segmented workload of
/// `seed`, committing offsets `base + 1, base + 2, ...`, until killed.
fn segmented_crash_worker(
    dir: &Path,
    seed: u64,
    max_uncommitted: u64,
    commits: Option<u64>,
    window: bool,
) -> CmdResult {
    use kstate::store::{SessionOptions, SessionStore, WindowOptions, WindowStore};
    use workload_segmented as w;
    let store_options = StoreOptions::default().with_max_uncommitted_bytes(max_uncommitted);
    enum Either {
        W(WindowStore),
        S(SessionStore),
    }
    let store = if window {
        Either::W(WindowStore::open(
            dir,
            &WindowOptions::new(w::RETENTION, w::WINDOW, false)
                .with_segment_interval(w::INTERVAL)
                .with_store(store_options),
        )?)
    } else {
        Either::S(SessionStore::open(
            dir,
            &SessionOptions::new(w::RETENTION)
                .with_segment_interval(w::INTERVAL)
                .with_store(store_options),
        )?)
    };
    let tp = w::segmented_partition();
    let base = match &store {
        Either::W(s) => s.committed_offset(&tp)?,
        Either::S(s) => s.committed_offset(&tp)?,
    }
    .unwrap_or(0);
    println!("ready");
    std::io::Write::flush(&mut std::io::stdout())?;
    let mut done = 0u64;
    for op in w::SegWorkload::new(seed, window) {
        let offset = base + done as i64 + 1;
        match &store {
            Either::W(s) => w::apply_window(s, &op, offset)?,
            Either::S(s) => w::apply_session(s, &op, offset)?,
        }
        if op == w::SegOp::Commit {
            done += 1;
            if commits.is_some_and(|n| done >= n) {
                break;
            }
        }
    }
    match store {
        Either::W(s) => s.close()?,
        Either::S(s) => s.close()?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The crash worker of versioned stores: the versioned workload of `seed`, committing
/// offsets `base + 1, base + 2, ...`, until killed.
fn versioned_crash_worker(
    dir: &Path,
    seed: u64,
    max_uncommitted: u64,
    commits: Option<u64>,
) -> CmdResult {
    use kstate::store::{VersionedOptions, VersionedStore};
    use workload_versioned as w;
    let options = VersionedOptions::new(w::RETENTION)
        .with_segment_interval(w::INTERVAL)
        .with_store(StoreOptions::default().with_max_uncommitted_bytes(max_uncommitted));
    let store = VersionedStore::open(dir, &options)?;
    let base = store
        .committed_offset(&w::versioned_partition())?
        .unwrap_or(0);
    println!("ready");
    std::io::Write::flush(&mut std::io::stdout())?;
    let mut done = 0u64;
    for op in w::VWorkload::new(seed) {
        w::apply(&store, &op, base + done as i64 + 1)?;
        if op == w::VOp::Commit {
            done += 1;
            if commits.is_some_and(|n| done >= n) {
                break;
            }
        }
    }
    store.close()?;
    Ok(ExitCode::SUCCESS)
}

fn swap_worker(dir: &Path, writes: u64) -> CmdResult {
    let store = KvStore::open(dir, &StoreOptions::default())?;
    let go = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (store, go) = (store.clone(), go.clone());
        std::thread::spawn(move || -> kstate::Result<()> {
            // The swap starts without uncommitted writes; the writer joins once it runs.
            while !go.load(std::sync::atomic::Ordering::Acquire) {
                std::thread::yield_now();
            }
            let tp = TopicPartition::new("swap-changelog", 0);
            for i in 0..writes {
                let value = kstate::format::value::encode(i.to_string().as_bytes(), i as i64);
                store.put_raw(format!("w-{i}").as_bytes(), Some(&value))?;
                store.commit(&[(tp.clone(), Some(100 + i as i64))], None)?;
            }
            Ok(())
        })
    };
    let result = store.upgrade_by_swap(&mut |_, _| {
        go.store(true, std::sync::atomic::Ordering::Release);
    });
    go.store(true, std::sync::atomic::Ordering::Release);
    let joined = writer.join().map_err(|_| "the writer thread panicked")?;
    result?;
    joined?;
    store.close()?;
    Ok(ExitCode::SUCCESS)
}

fn checkpoint_worker(dir: &Path, dest: &str) -> CmdResult {
    let store = KvStore::open(dir, &StoreOptions::default())?;
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || -> kstate::Result<()> {
            let tp = TopicPartition::new("checkpoint-changelog", 0);
            let mut i = store.committed_offset(&tp)?.map_or(0, |o| o - 100 + 1);
            loop {
                let value = kstate::format::value::encode(i.to_string().as_bytes(), i);
                store.put_raw(format!("w-{i}").as_bytes(), Some(&value))?;
                store.commit(&[(tp.clone(), Some(100 + i))], None)?;
                i += 1;
            }
        })
    };
    let mut n = 0;
    while !writer.is_finished() {
        store.checkpoint(format!("{dest}-{n}"))?;
        n += 1;
    }
    writer.join().map_err(|_| "the writer thread panicked")??;
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "remote")]
fn remote_worker(dir: &Path, uri: &str, work: &Path) -> CmdResult {
    use kstate::remote::{Remote, RemoteSettings, StoreScope};
    let store = KvStore::open(dir, &StoreOptions::default())?;
    let tp = TopicPartition::new("remote-changelog", 0);
    let mut i = store.committed_offset(&tp)?.map_or(0, |o| o - 100 + 1);
    let settings = RemoteSettings {
        gc_grace: std::time::Duration::ZERO,
        writer_id: "worker".into(),
        ..RemoteSettings::default()
    };
    let remote = Remote::open(uri, &settings)?;
    let scope = StoreScope::new("app", "0_0", "kv");
    let pid = std::process::id();
    for n in 0.. {
        for _ in 0..20 {
            store.put(format!("w-{i}").as_bytes(), i.to_string().as_bytes(), i)?;
            store.commit(&[(tp.clone(), Some(100 + i))], None)?;
            i += 1;
        }
        let ckpt = work.join(format!("ckpt-{pid}-{n}"));
        let info = store.checkpoint(&ckpt)?;
        remote.publish(&scope, &info)?;
        std::fs::remove_dir_all(&ckpt)?;
        if n % 3 == 2 {
            remote.gc(&scope, 2)?;
            remote.restore(&scope, None, &work.join(format!("restore-{pid}-{n}")))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn adopt_worker(dir: &Path, kind: &str, retention: i64, interval: Option<i64>) -> CmdResult {
    use kstate::store::{SessionOptions, SessionStore, WindowOptions, WindowStore};
    let window = |store: StoreOptions| {
        let mut options = WindowOptions::new(retention, 0, false).with_store(store);
        options.segment_interval = interval;
        options
    };
    let mut session = SessionOptions::new(retention);
    session.segment_interval = interval;
    match kind {
        "window" => WindowStore::open(dir, &window(StoreOptions::default()))?.close()?,
        "plain-window" => WindowStore::open(
            dir,
            &window(StoreOptions::plain(kstate::EngineKind::RocksDb)),
        )?
        .close()?,
        "session" => SessionStore::open(dir, &session)?.close()?,
        "time-ordered-window" => {
            WindowStore::open(dir, &window(StoreOptions::default()).time_ordered(true))?.close()?
        }
        "time-ordered-session" => SessionStore::open(dir, &session.time_ordered())?.close()?,
        other => return Err(format!("unknown store kind {other}").into()),
    }
    Ok(ExitCode::SUCCESS)
}
