//! `kstate`: inspect, verify and demonstrate kstate stores.

// The workload is shared source, not library API: each user compiles its own copy.
#[allow(dead_code)]
#[path = "../workload.rs"]
mod workload;
#[allow(dead_code)]
#[path = "../workload_segmented.rs"]
mod workload_segmented;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use clap::{Parser, Subcommand};
use kstate::format::meta::StoreKind;
use kstate::store::inspect::{inspect, verify, FamilyReport};
use kstate::store::kafka_segments::{self, SegmentedReport};
use kstate::{ErrorCode, KvStore, StoreOptions, TopicPartition, ValueFormat};
use workload::{Model, Workload, WorkloadConfig};

#[derive(Parser)]
#[command(
    name = "kstate",
    version,
    about = "Timestamped, transactional state stores for Kafka Streams",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

/// The exit codes, shown by `--help`.
const EXIT_CODES: &str = "Exit codes:
  0  inspect printed its report; verify found nothing wrong; upgrade upgraded every store it
     converts and left every other one alone on purpose (each listed with the reason)
  1  verify found a problem, or upgrade could not read, check or upgrade a store (each one
     named in the summary; the others were still upgraded)
  2  the command could not run: bad arguments, a path that is not a store, no store found,
     not enough disk space (nothing was changed)";

#[derive(Subcommand)]
pub enum Cmd {
    /// Show a store's format, column families, entry counts, committed offsets and whether
    /// it was closed cleanly; for a Kafka Streams window or session store directory, its
    /// kind and segments. Read-only (writes no file, not even RocksDB's LOG); works while
    /// another process has the store open.
    #[command(after_help = EXIT_CODES)]
    Inspect {
        /// Store directory.
        dir: PathBuf,
    },
    /// Check the layout of every record; exit 1 with a report when anything is wrong,
    /// including a store that cannot be read. Read-only, as inspect.
    #[command(after_help = EXIT_CODES)]
    Verify {
        /// Store directory.
        dir: PathBuf,
    },
    /// Upgrade stores in place: plain to timestamped (KIP-258), or with `--to headers` plain
    /// or timestamped to the headers format (KIP-1271); one store directory, or every store
    /// under a Kafka Streams state directory. Resumable: after a kill, run it again. Stores
    /// it does not convert (already upgraded, window and session stores) are left alone
    /// untouched; a store it cannot read or upgrade is a failure.
    #[command(after_help = EXIT_CODES)]
    Upgrade {
        /// A store directory or a Kafka Streams state directory.
        dir: PathBuf,
        /// The value format to upgrade to: timestamped or headers.
        #[arg(long, default_value = "timestamped", value_parser = parse_format)]
        to: ValueFormat,
        /// Show what would be upgraded and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Values migrated per transaction.
        #[arg(long, default_value_t = 10_000)]
        batch: usize,
    },
    /// Hand kstate stores back to Kafka Streams' own RocksDB stores (one store directory,
    /// or every store under a Kafka Streams state directory): key-value stores as Kafka's
    /// RocksDBStore families at `<taskDir>/rocksdb/<name>`, window and session stores as
    /// Kafka's segment directories, each with its offsets and position, no kstate files
    /// left. Crash-safe and resumable: after a kill, run it again. Run it with the
    /// application stopped. Exit 1 when a store cannot be exported (each one named).
    Export {
        /// A store directory or a Kafka Streams state directory.
        dir: PathBuf,
        /// Where to: `kafka` (Kafka Streams' RocksDBStore, RocksDBTimestampedStore,
        /// RocksDBTimestampedStoreWithHeaders).
        #[arg(long, value_parser = ["kafka"])]
        to: String,
        /// Show what would be exported and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also merge each store's offsets into its task's legacy `.checkpoint` file, which
        /// Kafka Streams 4.2 and older read (4.3+ read the store's `offsets` family).
        #[arg(long)]
        checkpoint: bool,
    },
    /// Write and commit word counts, kill a writer mid-transaction with SIGKILL, reopen and
    /// show what was recovered.
    Demo {
        /// Directory for the demo's stores (default: a fresh temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Run the deterministic random workload against a store until killed (used by the
    /// crash tests and the demo).
    #[command(hide = true)]
    CrashWorker {
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
        /// Store kind: `kv` (default), `window` or `session`.
        #[arg(long, default_value = "kv")]
        kind: String,
        /// Percent of transactions handed over whole as restore batches
        /// (`KvStore::restore_batch`) instead of running through the transaction (`kv`
        /// only); with any, the store's memtables are small so that flushes happen mid-run.
        #[arg(long, default_value_t = 0)]
        restore_percent: u64,
    },
    /// Upgrade a store in upgrade mode by prepare and swap while a second thread writes
    /// and commits `w-<i>` = `<i>` at offset 100 + i (used by the crash tests).
    #[command(hide = true)]
    SwapWorker {
        /// Store directory.
        #[arg(long)]
        dir: PathBuf,
        /// Writes (each committed) made during and after the swap.
        #[arg(long, default_value_t = 200)]
        writes: u64,
    },
    /// Open a window or session store (adopting Kafka Streams' segmented store found there)
    /// and close it (used by the crash tests).
    #[command(hide = true)]
    AdoptWorker {
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

fn main() -> ExitCode {
    match parse(std::env::args_os()) {
        Ok(command) => dispatch(command),
        Err(code) => code,
    }
}

/// Parses a command line (program name first) as `main` does: on a usage error, `--help`
/// or `--version`, clap's text is printed and the exit code returned (2, 0, 0). Separate
/// from [`dispatch`] so that the CLI fuzz target (`fuzz/fuzz_targets/cli.rs`, which
/// compiles this file) runs the CLI in-process and looks at the command before it runs.
pub fn parse<I, T>(args: I) -> Result<Cmd, ExitCode>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(args)
        .map(|cli| cli.command)
        .map_err(|e| {
            let _ = e.print();
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
        })
}

/// Runs a parsed command; its exit code (errors: printed, exit 2).
pub fn dispatch(command: Cmd) -> ExitCode {
    let result = match command {
        Cmd::Inspect { dir } => cmd_inspect(&dir),
        Cmd::Verify { dir } => cmd_verify(&dir),
        Cmd::Upgrade {
            dir,
            to,
            dry_run,
            batch,
        } => upgrade::cmd_upgrade(&dir, dry_run, batch, to),
        Cmd::Export {
            dir,
            to: _,
            dry_run,
            checkpoint,
        } => export::cmd_export(&dir, dry_run, checkpoint),
        Cmd::Demo { dir } => cmd_demo(dir),
        Cmd::CrashWorker {
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
            other => Err(format!("unknown store kind {other}").into()),
        },
        Cmd::SwapWorker { dir, writes } => swap_worker(&dir, writes),
        Cmd::AdoptWorker {
            dir,
            kind,
            retention,
            segment_interval,
        } => adopt_worker(&dir, &kind, retention, segment_interval),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kstate: {e}");
            ExitCode::from(2)
        }
    }
}

#[path = "kstate/upgrade.rs"]
mod upgrade;

#[path = "kstate/export.rs"]
mod export;

fn parse_format(s: &str) -> Result<ValueFormat, String> {
    ValueFormat::from_name(s)
        .ok_or_else(|| format!("{s:?}: expected plain, timestamped or headers"))
}

type CmdResult = Result<ExitCode, Box<dyn std::error::Error>>;

fn cmd_inspect(dir: &Path) -> CmdResult {
    if let Some(segmented) = kafka_segments::find(dir)? {
        print_segmented(&kafka_segments::describe(&segmented));
        return Ok(ExitCode::SUCCESS);
    }
    let r = inspect(dir)?;
    println!("store:            {}", r.path.display());
    println!("engine:           rocksdb");
    if kafka_segments::is_segment(dir) {
        println!("segment of:       a Kafka Streams window or session store (inspect its parent)");
    }
    match r.header {
        Some(h) => {
            println!("format version:   {}", h.format_version);
            match h.kind {
                StoreKind::KeyValue => println!("kind:             key-value"),
                StoreKind::Window { segment_interval }
                | StoreKind::Session { segment_interval } => {
                    println!(
                        "kind:             {} (segment interval {segment_interval} ms)",
                        h.kind.name()
                    )
                }
            }
            println!("value format:     {}", h.value_format.name());
            if let Some(family) = r
                .upgrade_family
                .as_deref()
                .filter(|_| r.values_to_upgrade > 0)
            {
                println!(
                    "mode:             upgrade ({} values in `{family}` are read converted \
                     (timestamp -1 for a plain value, no headers) and migrated as they are \
                     written)",
                    r.values_to_upgrade
                );
            } else {
                println!("mode:             regular");
            }
        }
        None if r.kafka_versioned => println!(
            "format:           Kafka Streams versioned key-value store (RocksDBVersionedStore; \
             kstate neither converts nor adopts it)"
        ),
        None => println!("format:           Kafka Streams store (not yet opened by kstate)"),
    }
    if let Some(pid) = r.writer_pid {
        println!("in use:           process {pid} has it open for writing");
    }
    print_families("", &r.families);
    match &r.committed {
        Some(c) => {
            println!("commits:          {}", c.sequence);
            for (tp, off) in &c.offsets {
                println!("  offset {}-{}: {off}", tp.topic, tp.partition);
            }
            if let Some(m) = &c.metadata {
                println!("  metadata:       {} bytes", m.len());
            }
        }
        None => println!("commits:          none"),
    }
    if let Some(p) = &r.pending {
        println!(
            "pending commit:   #{} (spilled transaction {}; the next open completes it)",
            p.state.sequence, p.txn
        );
    }
    println!(
        "last close:       {}",
        match r.last_close_clean {
            Some(true) => "clean",
            Some(false) => "unclean (crashed, or still open)",
            None => "unknown",
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints column families, each line indented by `indent`.
fn print_families(indent: &str, families: &[FamilyReport]) {
    println!("{indent}column families:");
    for f in families {
        println!(
            "{indent}  {:<32} {:>10} entries  {}",
            f.name, f.entries, f.role
        );
    }
}

fn print_segmented(r: &SegmentedReport) {
    println!("store:            {}", r.dir.path.display());
    println!(
        "format:           Kafka Streams segmented store (one RocksDB per segment); kstate \
         does not adopt or convert it"
    );
    println!("kind (guessed):   {}", r.kind.describe());
    match r.interval {
        Some(i) => println!(
            "segment interval: {i} ms (the greatest the segment names allow; ids assume it)"
        ),
        None => println!("segment interval: unknown"),
    }
    println!("segments:         {}", r.segments.len());
    for s in &r.segments {
        let name = s
            .segment
            .path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        let id = r
            .interval
            .map_or(String::new(), |i| format!(", id {}", s.segment.start / i));
        println!("  segment {name} (start {} ms{id})", s.segment.start);
        match &s.error {
            Some(e) => println!("    cannot be read: {e}"),
            None => print_families("    ", &s.families),
        }
    }
    for stray in &r.dir.strays {
        println!(
            "not a segment:    {stray:?} (Kafka Streams cannot open the store while it is there)"
        );
    }
}

fn cmd_verify(dir: &Path) -> CmdResult {
    if let Some(segmented) = kafka_segments::find(dir)? {
        let r = kafka_segments::describe(&segmented);
        let checked: u64 = r
            .segments
            .iter()
            .flat_map(|s| &s.families)
            .map(|f| f.entries)
            .sum();
        println!(
            "note: a Kafka Streams {} with {} segment(s), read-only",
            r.kind.describe(),
            r.segments.len()
        );
        return Ok(verdict(checked, &kafka_segments::problems(&r)));
    }
    let r = match verify(dir) {
        Ok(r) => r,
        // Not a store at all: the command could not run. Anything else the store holds
        // that cannot be read is what verify is for.
        Err(e) if matches!(e.code(), ErrorCode::NotAStore | ErrorCode::InvalidArgument) => {
            return Err(e.into())
        }
        Err(e) => return Ok(verdict(0, &[format!("cannot be read: {e}")])),
    };
    for note in &r.notes {
        println!("note: {note}");
    }
    Ok(verdict(r.records_checked, &r.problems))
}

/// Prints the problems and the count line of `verify`, and gives its exit code.
fn verdict(records_checked: u64, problems: &[String]) -> ExitCode {
    for p in problems {
        println!("PROBLEM: {p}");
    }
    println!(
        "{records_checked} records checked, {} problems",
        problems.len()
    );
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
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

fn cmd_demo(dir: Option<PathBuf>) -> CmdResult {
    let tmp_created = dir.is_none();
    let root = dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("kstate-demo-{}", std::process::id()))
    });
    std::fs::create_dir_all(&root)?;
    // The demo's reasoning starts from empty stores.
    for sub in ["word-counts", "crash"] {
        let _ = std::fs::remove_dir_all(root.join(sub));
    }
    println!("== kstate demo (stores under {}) ==\n", root.display());

    // 1. Word counts with timestamps, committed with changelog offsets.
    let counts_dir = root.join("word-counts");
    let store = KvStore::open(&counts_dir, &StoreOptions::default())?;
    let tp = TopicPartition::new("demo-word-counts-changelog", 0);
    let lines = [
        (1_700_000_000_000i64, "the quick brown fox"),
        (1_700_000_001_000, "the lazy dog"),
        (1_700_000_002_000, "the fox jumps"),
    ];
    for (offset, (ts, line)) in lines.iter().enumerate() {
        for word in line.split_whitespace() {
            let n = match store.get(word.as_bytes())? {
                Some(v) => String::from_utf8_lossy(&v.value).parse::<u64>()? + 1,
                None => 1,
            };
            store.put(word.as_bytes(), n.to_string().as_bytes(), *ts)?;
        }
        store.commit(&[(tp.clone(), Some(offset as i64))], None)?;
        println!("committed line {offset} ({line:?}) at changelog offset {offset}");
    }
    store.put(b"uncommitted", b"1", 1_700_000_003_000)?;
    println!("\nper-key aggregates (committed view):");
    for entry in store.scan(
        kstate::Isolation::ReadCommitted,
        &kstate::KeyRange::all(),
        false,
    )? {
        let (k, raw) = entry?;
        let v = kstate::ValueAndTimestamp::decode(&raw)?;
        println!(
            "  {:<8} count={:<3} ts={}",
            String::from_utf8_lossy(&k),
            String::from_utf8_lossy(&v.value),
            v.timestamp
        );
    }
    store.close()?;
    let reopened = KvStore::open(&counts_dir, &StoreOptions::default())?;
    println!(
        "closed without committing 'uncommitted'; reopened: committed offset {:?}, 'uncommitted' present: {}",
        reopened.committed_offset(&tp)?,
        reopened.get(b"uncommitted")?.is_some()
    );
    reopened.close()?;

    // 2. A writer killed with SIGKILL in the middle of its transactions.
    let crash_dir = root.join("crash");
    let seed = 0x5EED;
    println!(
        "\nstarting a writer process on {} (random transactions, some spilled to disk)",
        crash_dir.display()
    );
    let mut child = Command::new(std::env::current_exe()?)
        .args(["crash-worker", "--dir"])
        .arg(&crash_dir)
        .args(["--seed", &seed.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()?;
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill(2) on our own child's pid with a valid signal has no memory effects.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
    let status = child.wait()?;
    println!("killed the writer with SIGKILL (kill rc={rc}, exit status: {status})");

    let store = KvStore::open(&crash_dir, &StoreOptions::default())?;
    let r = store.recovery();
    let offset = store
        .committed_offset(&workload::changelog_partition())?
        .unwrap_or(0);
    println!(
        "reopened: previous close clean={}, spilled commit completed={}, uncommitted spill discarded={}",
        r.previous_close_clean, r.rolled_forward, r.discarded_spill
    );
    println!(
        "committed offset recovered: {offset} -> Kafka Streams replays the changelog from {}",
        offset + 1
    );
    let mut model = Model::default();
    workload::replay_commits(&mut model, seed, WorkloadConfig::default(), offset as u64);
    let actual = workload::dump(&store)?;
    let equal = actual == model.committed;
    println!(
        "store holds {} entries; equal to the model state of commit #{offset}: {}",
        actual.len(),
        if equal { "YES" } else { "NO" }
    );
    store.close()?;
    if tmp_created {
        let _ = std::fs::remove_dir_all(&root);
    }
    Ok(if equal {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
