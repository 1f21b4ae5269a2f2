//! `kstate checkpoint list|verify|restore|gc`: the checkpoints a store published to an
//! object store (`kstate::remote`). The arguments are always parsed; the commands run only
//! in a CLI built with the cargo feature `remote` (otherwise they say so and exit 2).

use std::path::PathBuf;
#[cfg(not(feature = "remote"))]
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::CmdResult;

/// The exit codes of the checkpoint commands, shown by their `--help`.
pub const EXIT_CODES: &str = "Exit codes:
  0  list printed the checkpoints (unreadable ones with the reason); verify found every
     checkpoint it checked whole; restore restored; gc finished
  1  verify found a problem (each one named: an unreadable manifest, a missing object, an
     object of another size or content), or there is no checkpoint to verify; restore found
     the checkpoint damaged (nothing is left at the destination)
  2  the command could not run: bad arguments, a bad URI or S3 setting, a failed request,
     nothing to restore, an existing destination, a CLI built without the feature `remote`";

/// Where the checkpoints of one store are.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// The checkpoint target: file:///absolute/dir or s3://bucket[/prefix].
    pub uri: String,
    /// The Kafka Streams application.id.
    pub app: String,
    /// The task (`0_1`).
    pub task: String,
    /// The store's name.
    pub store: String,
    /// An S3 setting by object_store's name (endpoint, region, allow_http, access_key_id,
    /// secret_access_key, ...; the aws_ prefix is optional), applied after the AWS_*
    /// environment. Repeatable.
    #[arg(long = "s3", value_name = "NAME=VALUE", value_parser = parse_setting)]
    pub s3: Vec<(String, String)>,
}

fn parse_setting(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("{s:?}: expected NAME=VALUE")),
    }
}

/// The checkpoint commands.
#[derive(Subcommand, Debug)]
pub enum CheckpointCmd {
    /// List a store's checkpoints, newest first (by changelog offsets, then commit
    /// sequence): key, sequence, offsets, publication time (UTC), writer, files, bytes, and
    /// whether it can be restored (its manifest reads and every object it names exists
    /// with its size) or why not.
    #[command(after_help = EXIT_CODES)]
    List {
        #[command(flatten)]
        target: Target,
    },
    /// Check one checkpoint (by manifest key, as list shows it) or all of a store: the
    /// manifest's checksum and format, and every object it names: present, of its size,
    /// and (unless --quick) of its SHA-256, which downloads every object.
    #[command(after_help = EXIT_CODES)]
    Verify {
        #[command(flatten)]
        target: Target,
        /// The manifest key (manifests/...json); all checkpoints when absent.
        manifest: Option<String>,
        /// Check presence and sizes only (no download).
        #[arg(long)]
        quick: bool,
    },
    /// Download a checkpoint (the newest readable one, or --manifest) into the new
    /// directory DEST, which then opens as a store holding that commit. Progress on
    /// stderr; the files are checked (size, SHA-256) before DEST appears.
    #[command(after_help = EXIT_CODES)]
    Restore {
        #[command(flatten)]
        target: Target,
        /// The new store directory (must not exist).
        dest: PathBuf,
        /// The manifest key to restore instead of the newest readable one.
        #[arg(long)]
        manifest: Option<String>,
    },
    /// Delete all but the newest N checkpoints, then every file object no remaining
    /// checkpoint names that is older than the grace period. While another writer
    /// publishes, only manifests are deleted.
    #[command(after_help = EXIT_CODES)]
    Gc {
        #[command(flatten)]
        target: Target,
        /// How many of the newest readable checkpoints to keep (at least 1).
        #[arg(long)]
        keep: usize,
        /// Unreferenced file objects younger than this are kept (they may belong to a
        /// publish in flight); default one hour.
        #[arg(long)]
        grace_ms: Option<u64>,
    },
}

/// Runs a checkpoint command.
#[cfg(not(feature = "remote"))]
pub fn run(_command: CheckpointCmd) -> CmdResult {
    eprintln!(
        "kstate: this kstate was built without the cargo feature `remote`: the checkpoint \
         commands are not available (build with `cargo build --release --features remote`)"
    );
    Ok(ExitCode::from(2))
}

/// Runs a checkpoint command.
#[cfg(feature = "remote")]
pub fn run(command: CheckpointCmd) -> CmdResult {
    match command {
        CheckpointCmd::List { target } => imp::list(&target),
        CheckpointCmd::Verify {
            target,
            manifest,
            quick,
        } => imp::verify(&target, manifest.as_deref(), quick),
        CheckpointCmd::Restore {
            target,
            dest,
            manifest,
        } => imp::restore(&target, &dest, manifest.as_deref()),
        CheckpointCmd::Gc {
            target,
            keep,
            grace_ms,
        } => imp::gc(&target, keep, grace_ms),
    }
}

#[cfg(feature = "remote")]
mod imp {
    use std::io::Write;
    use std::path::Path;
    use std::process::ExitCode;
    use std::time::{Duration, Instant};

    use kstate::remote::{Manifest, Remote, RemoteSettings, RestoreProgress, StoreScope};
    use kstate::Error;

    use super::{CmdResult, Target};

    fn open(target: &Target, grace: Option<Duration>) -> kstate::Result<(Remote, StoreScope)> {
        let mut settings = RemoteSettings {
            options: target.s3.clone(),
            ..RemoteSettings::default()
        };
        if let Some(grace) = grace {
            settings.gc_grace = grace;
        }
        let remote = Remote::open(&target.uri, &settings)?;
        let scope = StoreScope::new(&target.app, &target.task, &target.store);
        Ok((remote, scope))
    }

    fn offsets(m: &Manifest) -> String {
        if m.offsets.is_empty() {
            return "none".into();
        }
        m.offsets
            .iter()
            .map(|o| format!("{}-{}: {}", o.topic, o.partition, o.offset))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn list(target: &Target) -> CmdResult {
        let (remote, scope) = open(target, None)?;
        let list = remote.list(&scope)?;
        println!(
            "checkpoints of {}/{}/{} in {}, newest first:",
            target.app, target.task, target.store, target.uri
        );
        let mut readable = 0;
        for summary in &list {
            println!("{}", summary.key);
            match &summary.manifest {
                Ok(m) => {
                    let bytes: u64 = m.files.iter().map(|f| f.size).sum();
                    println!("  sequence:   {}", m.sequence);
                    println!("  offsets:    {}", offsets(m));
                    println!("  published:  {}", utc(m.published_at_ms));
                    println!("  writer:     {}", m.writer);
                    println!("  files:      {} ({bytes} bytes)", m.files.len());
                    let check = remote.check(&scope, &summary.key, false)?;
                    if check.problems.is_empty() {
                        readable += 1;
                        println!("  status:     readable");
                    } else {
                        println!("  status:     NOT READABLE: {}", check.problems.join("; "));
                    }
                }
                Err(why) => println!("  status:     NOT READABLE: {why}"),
            }
        }
        println!("{} checkpoints, {readable} readable", list.len());
        Ok(ExitCode::SUCCESS)
    }

    pub fn verify(target: &Target, key: Option<&str>, quick: bool) -> CmdResult {
        let (remote, scope) = open(target, None)?;
        let keys: Vec<String> = match key {
            Some(k) => vec![k.to_string()],
            None => remote.list(&scope)?.into_iter().map(|s| s.key).collect(),
        };
        let mut problems = Vec::new();
        if keys.is_empty() {
            problems.push(format!(
                "no checkpoint of {}/{}/{} in {}",
                target.app, target.task, target.store, target.uri
            ));
        }
        for key in &keys {
            let report = remote.check(&scope, key, !quick)?;
            if let (Some(m), true) = (&report.manifest, report.problems.is_empty()) {
                let bytes: u64 = m.files.iter().map(|f| f.size).sum();
                println!(
                    "ok: {key} (sequence {}, {} files, {bytes} bytes{})",
                    m.sequence,
                    m.files.len(),
                    if quick {
                        ", sizes only"
                    } else {
                        ", SHA-256 checked"
                    }
                );
            }
            problems.extend(report.problems);
        }
        for p in &problems {
            println!("PROBLEM: {p}");
        }
        println!(
            "{} checkpoints checked, {} problems",
            keys.len(),
            problems.len()
        );
        Ok(if problems.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    }

    pub fn restore(target: &Target, dest: &Path, key: Option<&str>) -> CmdResult {
        let (remote, scope) = open(target, None)?;
        let start = Instant::now();
        let mut last_print: Option<Instant> = None;
        let mut last_files = 0;
        let mut stderr = std::io::stderr();
        let mut progress = |p: RestoreProgress| {
            let file_done = p.files_done != last_files;
            let due = last_print.is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
            if !file_done && !due {
                return;
            }
            last_files = p.files_done;
            last_print = Some(Instant::now());
            let _ = writeln!(
                stderr,
                "restore: files {}/{}, {:.1}/{:.1} MB, {:.1} MB/s",
                p.files_done,
                p.files_total,
                mb(p.bytes_done),
                mb(p.bytes_total),
                mb(p.bytes_done) / start.elapsed().as_secs_f64().max(1e-3)
            );
        };
        let report = match remote.restore_with_progress(&scope, key, dest, &mut progress) {
            Ok(r) => r,
            Err(Error::Corruption(why)) => {
                println!("PROBLEM: {why}");
                println!("nothing restored at {}", dest.display());
                return Ok(ExitCode::from(1));
            }
            Err(e) => return Err(e.into()),
        };
        let secs = start.elapsed().as_secs_f64();
        println!(
            "restored {} (sequence {}, offsets {}, published {} by {}) into {}: {} files, {} \
             bytes in {secs:.2} s ({:.1} MB/s)",
            report.manifest_key,
            report.manifest.sequence,
            offsets(&report.manifest),
            utc(report.manifest.published_at_ms),
            report.manifest.writer,
            dest.display(),
            report.files,
            report.bytes,
            mb(report.bytes) / secs.max(1e-3)
        );
        Ok(ExitCode::SUCCESS)
    }

    pub fn gc(target: &Target, keep: usize, grace_ms: Option<u64>) -> CmdResult {
        let (remote, scope) = open(target, grace_ms.map(Duration::from_millis))?;
        let report = remote.gc(&scope, keep)?;
        println!("deleted {} manifests", report.manifests_deleted.len());
        for key in &report.manifests_deleted {
            println!("  {key}");
        }
        println!(
            "deleted {} file objects; kept {} unreferenced ones younger than the grace period",
            report.files_deleted, report.files_in_grace
        );
        if !report.publishers.is_empty() {
            println!(
                "note: {} publishing now: no file object was deleted (run gc again later)",
                report.publishers.join(", ")
            );
        }
        if report.out_of_time {
            println!("note: stopped deleting after half its lease; run gc again");
        }
        Ok(ExitCode::SUCCESS)
    }

    fn mb(bytes: u64) -> f64 {
        bytes as f64 / 1e6
    }

    /// `ms` since the epoch as `YYYY-MM-DD hh:mm:ss.mmm UTC` (proleptic Gregorian).
    pub fn utc(ms: i64) -> String {
        let secs = ms.div_euclid(1000);
        let milli = ms.rem_euclid(1000);
        let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        // Days to a civil date: the era / year-of-era method (Howard Hinnant's
        // `civil_from_days`), with March as the first month so leap days come last.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        format!(
            "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{milli:03} UTC",
            sod / 3600,
            sod % 3600 / 60,
            sod % 60
        )
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn utc_formats_known_instants() {
            assert_eq!(super::utc(0), "1970-01-01 00:00:00.000 UTC");
            assert_eq!(super::utc(1_700_000_000_123), "2023-11-14 22:13:20.123 UTC");
            assert_eq!(super::utc(951_782_400_000), "2000-02-29 00:00:00.000 UTC");
            assert_eq!(super::utc(-1), "1969-12-31 23:59:59.999 UTC");
        }
    }
}
