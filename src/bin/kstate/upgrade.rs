//! `kstate upgrade DIR [--to timestamped|headers]`: the offline, in-place upgrade of one
//! store or of every store under a Kafka Streams state directory, plain -> timestamped
//! (KIP-258, the default) or plain/timestamped -> headers (KIP-1271). Each batch of
//! migrated values is one transaction committed with the store's own offsets, so the
//! command can be killed at any point and run again: it continues where the last completed
//! batch ended.
//!
//! Stores it does not convert are listed as left alone, with the reason, and never opened
//! for writing; Kafka's window and session stores (directories of segment databases) are
//! not opened at all. A store it cannot read or upgrade is a failure, named in the summary
//! (exit 1).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use kstate::format::meta::StoreKind;
use kstate::store::inspect::{inspect, StoreReport};
use kstate::store::kafka_segments::{self, KafkaSegmentedDir};
use kstate::{KvStore, StoreOptions, ValueFormat};

use super::CmdResult;

/// What `upgrade` will do with one store directory.
enum Plan {
    /// Values of an older format to migrate (a kstate store of an older format, a Kafka
    /// store, or an upgrade already under way), in one or two steps: a store whose plain
    /// -> timestamped upgrade is unfinished finishes it before going on to headers.
    Upgrade {
        values: u64,
        what: &'static str,
        steps: Vec<ValueFormat>,
    },
    /// Deliberately not touched (already in the target format, or not a key-value store).
    LeaveAlone(String),
    /// A store the command cannot read or upgrade: a failure, left as it is.
    Fail(String),
}

/// A store found at or under the directory `upgrade` was given.
pub enum Found {
    /// A directory holding one RocksDB database (or the remains of one).
    Database(PathBuf),
    /// A Kafka Streams window or session store: a directory of segment databases.
    KafkaSegmented(KafkaSegmentedDir),
}

impl Found {
    fn path(&self) -> &Path {
        match self {
            Found::Database(p) => p,
            Found::KafkaSegmented(d) => &d.path,
        }
    }
}

fn plan(found: &Found, target: ValueFormat) -> Plan {
    let path = match found {
        Found::Database(path) => path,
        Found::KafkaSegmented(dir) => {
            let mut why = format!(
                "a Kafka Streams window or session store, {} segment database(s): not a \
                 key-value store, not opened",
                dir.segments.len()
            );
            if !dir.strays.is_empty() {
                why.push_str(&format!(
                    "; {} entries that are not segments, which Kafka cannot open it with (see \
                     kstate verify)",
                    dir.strays.len()
                ));
            }
            return Plan::LeaveAlone(why);
        }
    };
    if kafka_segments::is_segment(path) {
        return Plan::LeaveAlone(
            "a segment of a Kafka Streams window or session store: not a key-value store, \
             not opened"
                .into(),
        );
    }
    let report = match inspect(path) {
        Ok(r) => r,
        Err(e) => return Plan::Fail(format!("cannot be read: {e}")),
    };
    if report.kafka_versioned {
        return Plan::LeaveAlone(
            "a Kafka Streams versioned key-value store (RocksDBVersionedStore): no format to \
             upgrade, not opened for writing"
                .into(),
        );
    }
    if let Some(kind) = report.header.map(|h| h.kind) {
        if kind != StoreKind::KeyValue {
            return Plan::LeaveAlone(format!(
                "a kstate {} store: not a key-value store",
                kind.name()
            ));
        }
    }
    match (plan_formats(&report, target), report.writer_pid) {
        (Plan::Upgrade { .. }, Some(pid)) => Plan::Fail(format!(
            "in use: process {pid} has it open (it holds RocksDB's LOCK); not touched"
        )),
        (plan, _) => plan,
    }
}

/// The plan for a key-value store, from its value formats.
fn plan_formats(report: &StoreReport, target: ValueFormat) -> Plan {
    let count = |name: &str| {
        report
            .families
            .iter()
            .find(|f| f.name == name)
            .map_or(0, |f| f.entries)
    };
    let unknown = report
        .families
        .iter()
        .any(|f| f.role.starts_with("unknown"));
    if target == ValueFormat::Headers {
        return plan_headers(
            report,
            unknown,
            count("default"),
            count("keyValueWithTimestamp"),
        );
    }
    let unknown = unknown || count("keyValueWithTimestampAndHeaders") > 0;
    match report.header.map(|h| h.value_format) {
        Some(ValueFormat::Headers) => {
            Plan::LeaveAlone("headers format, later than timestamped: nothing to do".into())
        }
        Some(ValueFormat::Timestamped) if report.values_to_upgrade == 0 => {
            Plan::LeaveAlone("already timestamped".into())
        }
        Some(ValueFormat::Timestamped) => Plan::Upgrade {
            values: report.values_to_upgrade,
            what: "kstate store, upgrade under way",
            steps: vec![ValueFormat::Timestamped],
        },
        Some(ValueFormat::Plain) => Plan::Upgrade {
            values: count("default"),
            what: "kstate plain store",
            steps: vec![ValueFormat::Timestamped],
        },
        None if unknown => Plan::LeaveAlone(
            "a Kafka Streams store of a layout kstate does not convert (headers format or \
             unknown column families)"
                .into(),
        ),
        None if count("default") == 0 => Plan::LeaveAlone("no plain values".into()),
        None => Plan::Upgrade {
            values: count("default"),
            what: "Kafka Streams RocksDBStore",
            steps: vec![ValueFormat::Timestamped],
        },
    }
}

/// The plan of `--to headers`, from the counts of plain and timestamped values.
fn plan_headers(report: &StoreReport, unknown: bool, plain: u64, timestamped: u64) -> Plan {
    let steps = if plain > 0 && timestamped > 0 {
        vec![ValueFormat::Timestamped, ValueFormat::Headers]
    } else {
        vec![ValueFormat::Headers]
    };
    let what = match report.header.map(|h| h.value_format) {
        Some(ValueFormat::Headers) if plain + timestamped == 0 => {
            return Plan::LeaveAlone("already in the headers format".into())
        }
        Some(ValueFormat::Headers) => "kstate store, upgrade under way",
        Some(ValueFormat::Timestamped) => "kstate timestamped store",
        Some(ValueFormat::Plain) => "kstate plain store",
        None if unknown => {
            return Plan::LeaveAlone(
                "a Kafka Streams store with column families kstate does not know".into(),
            )
        }
        None if plain + timestamped == 0 => {
            return Plan::LeaveAlone("no values of an older format".into())
        }
        None if timestamped > 0 => "Kafka Streams RocksDBTimestampedStore",
        None => "Kafka Streams RocksDBStore",
    };
    Plan::Upgrade {
        values: plain + timestamped,
        what,
        steps,
    }
}

/// Every store at or under `dir`: a directory holding a RocksDB `CURRENT` or `MANIFEST-*`
/// (a database, or a damaged one), or a Kafka Streams window or session store (a directory
/// of segment databases, not entered); kstate's hidden staging directories are skipped.
pub fn find_stores(dir: &Path, out: &mut Vec<Found>) -> std::io::Result<()> {
    let names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if names
        .iter()
        .any(|n| n == "CURRENT" || n.starts_with("MANIFEST-"))
    {
        out.push(Found::Database(dir.to_path_buf()));
        return Ok(());
    }
    if let Some(segmented) = kafka_segments::find(dir)? {
        out.push(Found::KafkaSegmented(segmented));
        return Ok(());
    }
    let mut children: Vec<PathBuf> = names
        .iter()
        .filter(|n| !n.starts_with('.'))
        .map(|n| dir.join(n))
        .filter(|p| p.is_dir())
        .collect();
    children.sort();
    for child in children {
        find_stores(&child, out)?;
    }
    Ok(())
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized out-parameter
    // that statvfs fills in; nothing else is touched.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(c.as_ptr(), &mut st) == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
    }
}

/// Runs the upgrade to `target`. Exit 0 when every store was upgraded or deliberately left
/// alone, 1 when any store could not be read or upgraded (each one named in the summary);
/// an error (exit 2) when nothing could be done at all.
pub fn cmd_upgrade(dir: &Path, dry_run: bool, batch: usize, target: ValueFormat) -> CmdResult {
    if target == ValueFormat::Plain {
        return Err("--to plain: stores are only ever upgraded (to timestamped or headers)".into());
    }
    let mut stores = Vec::new();
    find_stores(dir, &mut stores)?;
    if stores.is_empty() {
        return Err(format!("no RocksDB store at or under {}", dir.display()).into());
    }
    let plans: Vec<(PathBuf, Plan)> = stores
        .iter()
        .map(|found| (found.path().to_path_buf(), plan(found, target)))
        .collect();
    let mut needed = 0u64;
    let mut failed: Vec<(&Path, String)> = Vec::new();
    let mut left_alone = 0;
    println!("{} store(s) under {}:", plans.len(), dir.display());
    for (path, plan) in &plans {
        match plan {
            Plan::Upgrade { values, what, .. } => {
                needed += dir_bytes(path);
                let old = if target == ValueFormat::Headers {
                    "plain/timestamped"
                } else {
                    "plain"
                };
                println!(
                    "  upgrade     {} ({what}, {values} {old} values, to {})",
                    path.display(),
                    target.name()
                );
            }
            Plan::LeaveAlone(why) => {
                left_alone += 1;
                println!("  left alone  {} ({why})", path.display());
            }
            Plan::Fail(why) => {
                println!("  FAILED      {}: {why}", path.display());
                failed.push((path.as_path(), why.clone()));
            }
        }
    }
    if dry_run {
        println!("dry run: nothing was changed");
        return Ok(summary(0, left_alone, &failed, 0, None));
    }
    // Every plain value is written once more before its old copy can be compacted away.
    if let Some(free) = free_bytes(dir) {
        if needed > free {
            return Err(format!(
                "not enough free disk space under {}: the upgrade needs about {needed} bytes \
                 (the size of the stores it converts) and {free} are free; nothing was changed",
                dir.display()
            )
            .into());
        }
    }
    let (mut converted, mut migrated_total) = (0, 0u64);
    let started = Instant::now();
    for (path, plan) in &plans {
        let Plan::Upgrade { values, steps, .. } = plan else {
            continue;
        };
        match upgrade_store(path, *values, steps, batch) {
            Ok(done) => {
                converted += 1;
                migrated_total += done;
                println!("  done        {} ({done} values migrated)", path.display());
            }
            Err(e) => {
                println!("  FAILED      {}: {e}", path.display());
                failed.push((path.as_path(), e.to_string()));
            }
        }
    }
    Ok(summary(
        converted,
        left_alone,
        &failed,
        migrated_total,
        Some(started.elapsed().as_secs_f64()),
    ))
}

/// Migrates the values of one store in `steps`, `batch` values per transaction, showing
/// progress; the number of values migrated.
fn upgrade_store(
    path: &Path,
    values: u64,
    steps: &[ValueFormat],
    batch: usize,
) -> kstate::Result<u64> {
    let (mut done, t0, mut shown) = (0u64, Instant::now(), Instant::now());
    for step in steps {
        let options = StoreOptions {
            value_format: *step,
            ..StoreOptions::default()
        };
        let store = KvStore::open(path, &options)?;
        loop {
            let n = store.upgrade_step(batch)?;
            if n == 0 {
                break;
            }
            done += n;
            if shown.elapsed().as_millis() >= 500 {
                shown = Instant::now();
                let rate = done as f64 / t0.elapsed().as_secs_f64().max(1e-3);
                let eta = values.saturating_sub(done) as f64 / rate.max(1.0);
                eprintln!(
                    "  {}: {done}/{values} values, {rate:.0}/s, ETA {eta:.0}s",
                    path.display()
                );
            }
        }
        store.close()?;
    }
    Ok(done)
}

/// Prints the summary, naming every store that failed, and gives the exit code.
fn summary(
    converted: usize,
    left_alone: usize,
    failed: &[(&Path, String)],
    migrated: u64,
    seconds: Option<f64>,
) -> ExitCode {
    let took = seconds.map_or(String::new(), |s| format!(" in {s:.1}s"));
    println!(
        "{converted} store(s) upgraded, {left_alone} left alone, {} failed, {migrated} values \
         migrated{took}",
        failed.len()
    );
    for (path, why) in failed {
        println!("failed: {}: {why}", path.display());
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
