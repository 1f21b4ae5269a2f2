//! `kstate`: inspect, verify, upgrade and export kstate stores, and manage their
//! checkpoints in an object store.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use clap::{Parser, Subcommand};
use kstate::format::meta::StoreKind;
use kstate::store::inspect::{inspect, verify, FamilyReport};
use kstate::store::kafka_segments::{self, SegmentedReport};
use kstate::{ErrorCode, KvStore, StoreOptions, TopicPartition, ValueFormat};

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
     named in the summary; the others were still upgraded); checkpoint verify found a
     damaged or missing checkpoint, checkpoint restore a damaged one
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
    /// The checkpoints of a store in an object store (file:// or s3://): list, verify,
    /// restore, gc. Needs a CLI built with the cargo feature `remote`.
    #[command(subcommand)]
    Checkpoint(checkpoint::CheckpointCmd),
    /// Write and commit word counts, kill a writer mid-transaction with SIGKILL, reopen and
    /// show what was recovered.
    Demo {
        /// Directory for the demo's stores (default: a fresh temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// The writer process `demo` kills (rounds of writes, each committed with its offset).
    #[command(hide = true)]
    DemoWriter {
        /// Store directory.
        #[arg(long)]
        dir: PathBuf,
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
        Cmd::Checkpoint(command) => checkpoint::run(command),
        Cmd::Demo { dir } => cmd_demo(dir),
        Cmd::DemoWriter { dir } => demo_writer(&dir),
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

#[path = "kstate/checkpoint.rs"]
pub mod checkpoint;

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
                | StoreKind::Session { segment_interval }
                | StoreKind::Versioned { segment_interval } => {
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
             a kstate versioned store opened on it adopts it; upgrade leaves it alone)"
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
    println!(
        "\nstarting a writer process on {} (rounds of {DEMO_KEYS} keys, each round one \
         transaction spilled to disk and committed with its changelog offset)",
        crash_dir.display()
    );
    let mut child = Command::new(std::env::current_exe()?)
        .args(["demo-writer", "--dir"])
        .arg(&crash_dir)
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
    let offset = store.committed_offset(&demo_partition())?.unwrap_or(0);
    println!(
        "reopened: previous close clean={}, spilled commit completed={}, uncommitted spill discarded={}",
        r.previous_close_clean, r.rolled_forward, r.discarded_spill
    );
    println!(
        "committed offset recovered: {offset} -> Kafka Streams replays the changelog from {}",
        offset + 1
    );
    // The state of commit #offset: every key holds that round's value (nothing before the
    // first commit), whatever the killed round had written.
    let entries = store
        .scan(
            kstate::Isolation::ReadCommitted,
            &kstate::KeyRange::all(),
            false,
        )?
        .collect::<kstate::Result<Vec<_>>>()?;
    let expected = demo_value(offset);
    let equal = entries.len() == if offset == 0 { 0 } else { DEMO_KEYS }
        && entries.iter().all(|(_, raw)| {
            kstate::ValueAndTimestamp::decode(raw).is_ok_and(|v| v.value == expected)
        });
    println!(
        "store holds {} entries; equal to the state of commit #{offset}: {}",
        entries.len(),
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

/// Keys of each round of the demo's writer.
const DEMO_KEYS: usize = 200;

/// The changelog partition the demo's writer commits offsets for.
fn demo_partition() -> TopicPartition {
    TopicPartition::new("demo-writer-changelog", 0)
}

/// The value every key holds after round `round` (about 200 bytes: a round of
/// [`DEMO_KEYS`] keys is larger than the writer's 32 KiB memory bound, so it spills).
fn demo_value(round: i64) -> Vec<u8> {
    format!("round {round:>7} ").repeat(14).into_bytes()
}

/// The writer `demo` kills: round 1, 2, ... writes every key with the round's value and
/// commits it with changelog offset = round, until killed.
fn demo_writer(dir: &Path) -> CmdResult {
    let options = StoreOptions::default().with_max_uncommitted_bytes(32 << 10);
    let store = KvStore::open(dir, &options)?;
    let tp = demo_partition();
    let mut round = store.committed_offset(&tp)?.unwrap_or(0);
    loop {
        round += 1;
        let value = demo_value(round);
        for k in 0..DEMO_KEYS {
            store.put(format!("key-{k:03}").as_bytes(), &value, round)?;
        }
        store.commit(&[(tp.clone(), Some(round))], None)?;
    }
}
