//! `kstate export --to kafka DIR`: hands kstate key-value, window, session and versioned stores back
//! to Kafka Streams' own RocksDB stores (one store directory, or every store under a Kafka
//! Streams state directory). The work and its crash safety are in `kstate::store::export`;
//! this module lists, reports and sets the exit code: 0 when every store under DIR is now
//! Kafka's, 1 when a store was not exported (an error), 2 on a usage error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kstate::store::export::{
    clean_up_segmented, export, kafka_class, plan, segmented_leftovers, ExportPlan,
};

use super::upgrade::{find_stores, Found};
use super::CmdResult;

/// Whether a plan leaves a kstate store behind.
fn blocks(plan: &kstate::Result<ExportPlan>) -> bool {
    plan.is_err()
}

/// `topic-partition=offset`, one string per partition.
fn offsets_list(offsets: &std::collections::BTreeMap<kstate::TopicPartition, i64>) -> Vec<String> {
    offsets
        .iter()
        .map(|(tp, o)| format!("{}-{}={o}", tp.topic, tp.partition))
        .collect()
}

fn describe(path: &Path, plan: &kstate::Result<ExportPlan>) -> String {
    match plan {
        Ok(ExportPlan::Export {
            target,
            format,
            offsets,
            newer_tables,
            resumed,
        }) => {
            let offsets = offsets_list(offsets);
            format!(
                "  {}  {} -> {} (kstate {} store; offsets [{}]; {newer_tables} table files to \
                 rewrite; opens as Kafka's {})",
                if *resumed { "resume" } else { "export" },
                path.display(),
                target.display(),
                format.name(),
                offsets.join(", "),
                kafka_class(*format)
            )
        }
        Ok(ExportPlan::Kafka { leftovers }) => format!(
            "  kafka   {} (a Kafka Streams store: left as it is{})",
            path.display(),
            if *leftovers {
                "; kstate leftovers beside it are removed"
            } else {
                ""
            }
        ),
        Ok(ExportPlan::Versioned { target, offsets }) => format!(
            "  export  {} -> {} (kstate versioned store; offsets [{}]; opens as Kafka's \
             RocksDBVersionedStore (Stores.persistentVersionedKeyValueStore))",
            path.display(),
            target.display(),
            offsets_list(offsets).join(", ")
        ),
        Ok(ExportPlan::Segmented {
            kind,
            kafka_class,
            segments,
            offsets,
        }) => format!(
            "  export  {} (kstate {kind} store; offsets [{}]; {segments} Kafka segment(s) \
             written in place; opens as Kafka's {kafka_class})",
            path.display(),
            offsets_list(offsets).join(", ")
        ),
        Err(e) => format!("  NOT EXPORTED  {}: {e}", path.display()),
    }
}

/// Runs the export; see the module documentation for the exit code.
pub fn cmd_export(dir: &Path, dry_run: bool, checkpoint: bool) -> CmdResult {
    let mut found = Vec::new();
    if dir.exists() {
        find_stores(dir, &mut found)?;
    }
    let mut stores = Vec::new();
    let mut segmented = Vec::new();
    for f in found {
        match f {
            Found::Database(path) => stores.push(path),
            // Kafka's own window or session store: already Kafka's; never opened. kstate files
            // an interrupted export left beside it are removed (not in a dry run).
            Found::KafkaSegmented(d) => segmented.push(d.path),
        }
    }
    if stores.is_empty() && plan(dir).is_ok() {
        // A store whose export only has its clean-up left (it now lives at its target).
        stores.push(dir.to_path_buf());
    }
    if stores.is_empty() && segmented.is_empty() {
        return Err(format!("no RocksDB store at or under {}", dir.display()).into());
    }
    let plans: Vec<(PathBuf, kstate::Result<ExportPlan>)> =
        stores.into_iter().map(|p| (p.clone(), plan(&p))).collect();
    println!(
        "{} store(s) under {}:",
        plans.len() + segmented.len(),
        dir.display()
    );
    for (path, plan) in &plans {
        println!("{}", describe(path, plan));
    }
    let mut left = plans.iter().filter(|(_, p)| blocks(p)).count();
    for path in &segmented {
        left += usize::from(!kafka_segmented(path, dry_run));
    }
    if dry_run {
        println!("dry run: nothing was changed");
        return Ok(exit(left));
    }
    let mut exported = 0;
    // kstate stores first: a Kafka store listed may be the target of one of them.
    let order = plans
        .iter()
        .filter(|(_, p)| {
            matches!(
                p,
                Ok(ExportPlan::Export { .. }
                    | ExportPlan::Segmented { .. }
                    | ExportPlan::Versioned { .. })
            )
        })
        .chain(
            plans
                .iter()
                .filter(|(_, p)| matches!(p, Ok(ExportPlan::Kafka { .. }))),
        );
    for (path, _) in order {
        match export(path, checkpoint) {
            Ok(Some(done)) => {
                exported += 1;
                let offsets = format!(
                    "{} offsets{}",
                    done.offsets.len(),
                    if done.position {
                        " and the position"
                    } else {
                        ""
                    }
                );
                let merged = done
                    .checkpoint_file
                    .as_ref()
                    .map(|f| format!("; merged into {}", f.display()))
                    .unwrap_or_default();
                let (path, target) = (path.display(), done.target.display());
                match (&done.segmented, &done.versioned) {
                    (Some(s), _) => println!(
                        "  done    {path} ({} Kafka segment(s), {} records, {offsets}{merged})",
                        s.segments, s.records
                    ),
                    (_, Some(v)) => println!(
                        "  done    {path} -> {target} ({} latest values, {} history rows, \
                         {offsets}{merged})",
                        v.latest, v.rows
                    ),
                    _ => println!(
                        "  done    {path} -> {target} ({offsets}, {} table files rewritten{merged})",
                        done.tables_rewritten
                    ),
                }
            }
            Ok(None) => {}
            Err(e) => {
                left += 1;
                println!("  FAILED  {}: {e}", path.display());
            }
        }
    }
    println!("{exported} store(s) exported to Kafka's stores, {left} not exported");
    Ok(exit(left))
}

/// Reports Kafka's own segmented store at `path` and, unless `dry_run`, removes kstate's
/// leftovers beside it; false when they could not be removed.
fn kafka_segmented(path: &Path, dry_run: bool) -> bool {
    let leftovers = match segmented_leftovers(path) {
        Ok(l) => l,
        Err(e) => {
            println!("  NOT EXPORTED  {}: {e}", path.display());
            return false;
        }
    };
    let cleaned = if leftovers && !dry_run {
        clean_up_segmented(path).map(|_| ())
    } else {
        Ok(())
    };
    match cleaned {
        Ok(()) => {
            println!(
                "  kafka   {} (a Kafka Streams window or session store: left as it is{})",
                path.display(),
                match (leftovers, dry_run) {
                    (false, _) => "",
                    (true, true) => "; kstate leftovers beside it are removed",
                    (true, false) => "; kstate leftovers beside it removed",
                }
            );
            true
        }
        Err(e) => {
            println!("  FAILED  {}: {e}", path.display());
            false
        }
    }
}

fn exit(left: usize) -> ExitCode {
    if left == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
