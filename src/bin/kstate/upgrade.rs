//! `kstate upgrade DIR [--to timestamped|headers]`: the offline, in-place upgrade of one
//! store or of every store under a Kafka Streams state directory, plain -> timestamped
//! (KIP-258, the default) or plain/timestamped -> headers (KIP-1271). Each batch of
//! migrated values is one transaction committed with the store's own offsets, so the
//! command can be killed at any point and run again: it continues where the last completed
//! batch ended.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use kstate::store::inspect::{inspect, StoreReport};
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
    /// Nothing to do.
    Skip(String),
}

fn plan(path: &Path, target: ValueFormat) -> Plan {
    let report = match inspect(path) {
        Ok(r) => r,
        Err(e) => return Plan::Skip(format!("cannot be read: {e}")),
    };
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
            &report,
            unknown,
            count("default"),
            count("keyValueWithTimestamp"),
        );
    }
    let unknown = unknown || count("keyValueWithTimestampAndHeaders") > 0;
    match report.header.map(|h| h.value_format) {
        Some(ValueFormat::Headers) => {
            Plan::Skip("headers format, later than timestamped: nothing to do".into())
        }
        Some(ValueFormat::Timestamped) if report.values_to_upgrade == 0 => {
            Plan::Skip("already timestamped".into())
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
        None if unknown => Plan::Skip(
            "a Kafka Streams store of a layout kstate does not convert (headers format or \
             unknown column families)"
                .into(),
        ),
        None if count("default") == 0 => Plan::Skip("no plain values".into()),
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
            return Plan::Skip("already in the headers format".into())
        }
        Some(ValueFormat::Headers) => "kstate store, upgrade under way",
        Some(ValueFormat::Timestamped) => "kstate timestamped store",
        Some(ValueFormat::Plain) => "kstate plain store",
        None if unknown => {
            return Plan::Skip(
                "a Kafka Streams store with column families kstate does not know".into(),
            )
        }
        None if plain + timestamped == 0 => {
            return Plan::Skip("no values of an older format".into())
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

/// Every store directory at or under `dir` (a directory holding a RocksDB `CURRENT`),
/// skipping kstate's hidden staging directories.
pub fn find_stores(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if dir.join("CURRENT").is_file() {
        out.push(dir.to_path_buf());
        return Ok(());
    }
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
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

/// Runs the upgrade to `target`; exit 0 when every convertible store was converted, 1
/// otherwise.
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
        .into_iter()
        .map(|p| (p.clone(), plan(&p, target)))
        .collect();
    let mut needed = 0u64;
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
                    "  upgrade  {} ({what}, {values} {old} values, to {})",
                    path.display(),
                    target.name()
                );
            }
            Plan::Skip(why) => println!("  skip     {} ({why})", path.display()),
        }
    }
    if dry_run {
        println!("dry run: nothing was changed");
        return Ok(ExitCode::SUCCESS);
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
    let (mut converted, mut failed, mut migrated_total) = (0, 0, 0u64);
    let started = Instant::now();
    for (path, plan) in &plans {
        let Plan::Upgrade { values, steps, .. } = plan else {
            continue;
        };
        let result = (|| -> kstate::Result<u64> {
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
        })();
        match result {
            Ok(done) => {
                converted += 1;
                migrated_total += done;
                println!("  done     {} ({done} values migrated)", path.display());
            }
            Err(e) => {
                failed += 1;
                println!("  FAILED   {}: {e}", path.display());
            }
        }
    }
    println!(
        "{converted} store(s) upgraded, {failed} failed, {migrated_total} values migrated in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
