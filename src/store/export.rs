//! The way back: handing a kstate key-value store to Kafka Streams' own RocksDB stores
//! (`kstate export --to kafka`).
//!
//! The Kafka store is built beside the kstate store, from its last commit, and then takes
//! its place in one atomic step, so a kill at any instant leaves either the complete kstate
//! store or the complete Kafka store with the same offsets (and a rerun finishes the job):
//!
//! 1. The kstate store is opened as usual (recovery completes or discards what a crash
//!    left: a spilled commit, an ingest, a commit in doubt), closed cleanly, and its lock
//!    kept. Only committed data is in its families after that.
//! 2. A RocksDB checkpoint of it (table files hard-linked) goes to the hidden side
//!    directory of the target, `.<name>.kstate-swap`, where
//!    [`crate::engine::kafka_layout::rewrite_as_kafka`] drops kstate's families, writes
//!    Kafka's `offsets` family (committed offsets, position, `status` 0) and rewrites any
//!    table of a format Kafka's RocksDB cannot read.
//! 3. The target is Kafka's own path for the store, `<taskDir>/rocksdb/<name>`. When the
//!    kstate store already lives there (it adopted Kafka's store), the side directory and
//!    the store are exchanged (`renameat2(RENAME_EXCHANGE)`, or the marker-file fallback of
//!    [`super::swap`]). When it lives at `<taskDir>/<name>`, the side directory is renamed
//!    to the (vacant) target first: both stores are then complete with the same offsets,
//!    and Kafka opens its own while kstate's adapter, which prefers `<taskDir>/<name>`,
//!    opens kstate's. Then the kstate store is renamed into the side directory.
//! 4. The old kstate store and kstate's lock files are removed.
//!
//! A rerun finds a Kafka store with kstate leftovers beside it and removes them (what
//! [`super::swap::recover`] does on every kstate open, too), or a kstate store whose target
//! already holds a Kafka store with the same offsets and position (step 3 interrupted), and
//! finishes from there. A target holding anything else is refused.
//!
//! A kstate window or session store is replaced in place by Kafka's segmented layout
//! ([`super::export_segmented_to_kafka`], one atomic directory exchange): Kafka keeps those
//! stores at `<taskDir>/<name>/`, where kstate keeps them too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::kafka;
use super::lock::{sibling, sync_dir, StoreLock};
use super::open::data_family_name;
use super::{
    export_segmented_to_kafka, swap, KafkaSegmentsExport, KvStore, StoreOptions, VersionedExport,
};
use crate::engine::kafka_layout::{self, rewrite_as_kafka};
use crate::engine::rocksdb::{probe, Probe, RocksEngine, RocksOptions};
use crate::engine::{names, Engine};
use crate::format::meta::{StoreKind, ValueFormat};
use crate::format::segmented::{segment_prefix, split_stored};
use crate::format::TopicPartition;
use crate::store::inspect::inspect;
use crate::{Error, Result};

/// What `kstate export --to kafka` finds at a store directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportPlan {
    /// A kstate key-value store, to be handed to Kafka.
    Export {
        /// Where the Kafka store goes: `<taskDir>/rocksdb/<name>`.
        target: PathBuf,
        /// The store's value format, which decides the Kafka store class.
        format: ValueFormat,
        /// Committed offsets of the last commit (recovery may still complete a spilled
        /// commit, whose offsets are exported instead).
        offsets: BTreeMap<TopicPartition, i64>,
        /// Table files Kafka's RocksDB cannot read, rewritten by the export.
        newer_tables: usize,
        /// The target already holds the Kafka store of an interrupted export.
        resumed: bool,
    },
    /// A Kafka Streams store (no kstate metadata): left as it is; kstate leftovers beside
    /// it (an interrupted export's) are removed.
    Kafka {
        /// True when kstate leftovers are found beside it.
        leftovers: bool,
    },
    /// A kstate versioned store, to be converted to Kafka's `RocksDBVersionedStore` layout
    /// ([`super::export_versioned_to_kafka`]) and moved to Kafka's directory for it.
    Versioned {
        /// Where the Kafka store goes: `<taskDir>/rocksdb/<name>` (the store itself when it
        /// is there already).
        target: PathBuf,
        /// Committed offsets (of the pending spilled commit, if there is one).
        offsets: BTreeMap<TopicPartition, i64>,
    },
    /// A kstate window or session store, to be replaced in place by Kafka's segmented
    /// layout ([`super::export_segmented_to_kafka`]): Kafka keeps these stores at
    /// `<taskDir>/<name>/` as kstate does, so nothing moves.
    Segmented {
        /// The store kind (`window`, `session`).
        kind: &'static str,
        /// The Kafka Streams class that opens the exported store.
        kafka_class: &'static str,
        /// Kafka segment databases the committed records fill (a spilled commit still to
        /// be rolled forward may add some; a store with offsets but no record gets one).
        segments: usize,
        /// Committed offsets (of the pending spilled commit, if there is one).
        offsets: BTreeMap<TopicPartition, i64>,
    },
}

/// What an export did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// Where the Kafka store now is.
    pub target: PathBuf,
    /// Value format, and so the Kafka class that opens the store.
    pub format: ValueFormat,
    /// The offsets written into Kafka's `offsets` family.
    pub offsets: BTreeMap<TopicPartition, i64>,
    /// Whether a position was written (the commit metadata was the adapter's position).
    pub position: bool,
    /// Table files of a newer format that were rewritten.
    pub tables_rewritten: usize,
    /// The legacy task `.checkpoint` file written, if asked for.
    pub checkpoint_file: Option<PathBuf>,
    /// For a window or session store, what its segmented export wrote (`None` for a
    /// key-value store).
    pub segmented: Option<KafkaSegmentsExport>,
    /// For a versioned store, what its export wrote.
    pub versioned: Option<VersionedExport>,
}

/// The Kafka Streams class that opens a store of `format` exported to Kafka.
pub fn kafka_class(format: ValueFormat) -> &'static str {
    match format {
        ValueFormat::Plain => "RocksDBStore (Stores.persistentKeyValueStore)",
        ValueFormat::Timestamped => {
            "RocksDBTimestampedStore (Stores.persistentTimestampedKeyValueStore)"
        }
        ValueFormat::Headers => "RocksDBTimestampedStoreWithHeaders (KIP-1271, Kafka 4.3+)",
    }
}

/// The table files directly in `dir` that Kafka Streams 4.4's RocksDB cannot read (a
/// block-based `format_version` newer than the one kstate writes), by name.
pub fn newer_table_files(dir: &Path) -> Result<Vec<String>> {
    kafka_layout::newer_tables(dir)
}

/// Kafka's directory for the key-value store at `path`: `path` itself when its parent is
/// a `rocksdb` directory (a store kstate adopted), else `<parent>/rocksdb/<name>`.
pub fn kafka_target(path: &Path) -> Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!("{} does not end in a store name", path.display()))
    })?;
    let parent = path.parent().unwrap_or(Path::new(""));
    if parent.file_name().is_some_and(|p| p == "rocksdb") {
        return Ok(path.to_path_buf());
    }
    Ok(parent.join("rocksdb").join(name))
}

/// kstate files an interrupted export (or kstate's own use) may leave beside the Kafka store
/// at `target`, and beside the kstate store it came from.
fn leftovers(target: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for suffix in [
        "kstate-swap",
        "kstate-swap-ready",
        "kstate-swap-old",
        "kstate-new",
        "kstate-lock",
    ] {
        out.push(sibling(target, suffix)?);
    }
    if let Some(source) = source_of(target) {
        if !source.exists() {
            out.push(sibling(&source, "kstate-lock")?);
        }
    }
    out.retain(|p| p.exists());
    Ok(out)
}

/// `<taskDir>/<name>` for a target `<taskDir>/rocksdb/<name>`.
fn source_of(target: &Path) -> Option<PathBuf> {
    let parent = target.parent()?;
    if parent.file_name()? != "rocksdb" {
        return None;
    }
    Some(parent.parent()?.join(target.file_name()?))
}

/// Looks at the store at `path` without changing anything.
///
/// # Errors
/// [`Error::NotAStore`] when nothing is there (and no exported store for it either);
/// [`Error::InvalidArgument`] when the target of a kstate store holds a store other than
/// its own interrupted export; errors reading the store.
pub fn plan(path: &Path) -> Result<ExportPlan> {
    if probe(path)? == Probe::Vacant {
        // Its export may have finished all but the clean-up.
        let target = kafka_target(path)?;
        if target != path && probe(&target)? != Probe::Vacant {
            return plan(&target);
        }
        return Err(Error::NotAStore {
            path: path.to_path_buf(),
            reason: "no store there".into(),
        });
    }
    let report = inspect(path)?;
    let Some(header) = report.header else {
        return Ok(ExportPlan::Kafka {
            leftovers: !leftovers(path)?.is_empty(),
        });
    };
    let offsets = report
        .pending
        .as_ref()
        .map(|p| p.state.offsets.clone())
        .or_else(|| report.committed.as_ref().map(|c| c.offsets.clone()))
        .unwrap_or_default();
    if let StoreKind::Versioned { .. } = header.kind {
        let target = kafka_target(path)?;
        if target != path && probe(&target)? != Probe::Vacant {
            return Err(Error::InvalidArgument(format!(
                "{} already holds a store; the kstate versioned store at {} was not exported",
                target.display(),
                path.display()
            )));
        }
        return Ok(ExportPlan::Versioned { target, offsets });
    }
    if header.kind != StoreKind::KeyValue {
        return segmented_plan(path, &header, offsets, &report);
    }
    if header.value_format == ValueFormat::Headers
        && report.upgrade_family.as_deref() == Some(names::PLAIN)
    {
        return Err(Error::FormatMismatch(format!(
            "{} is a headers-format store still upgrading plain values, which Kafka's \
             headers store does not read: finish its upgrade first (kstate upgrade --to \
             headers)",
            path.display()
        )));
    }
    let target = kafka_target(path)?;
    let resumed = if target == path {
        false
    } else {
        let metadata = report
            .pending
            .as_ref()
            .map(|p| p.state.metadata.clone())
            .or_else(|| report.committed.as_ref().map(|c| c.metadata.clone()))
            .flatten();
        target_holds_export(&target, &offsets, metadata.as_deref())?
    };
    Ok(ExportPlan::Export {
        target,
        format: header.value_format,
        offsets,
        newer_tables: kafka_layout::newer_tables(path)?.len(),
        resumed,
    })
}

/// The Kafka Streams class that opens a window or session store of `kind` and `format`
/// once exported.
pub fn kafka_segmented_class(kind: StoreKind, format: ValueFormat) -> &'static str {
    match (kind, format) {
        (StoreKind::Session { .. }, ValueFormat::Headers) => {
            "RocksDBSessionStoreWithHeaders (Stores.persistentSessionStoreWithHeaders)"
        }
        (StoreKind::Session { .. }, _) => "RocksDBSessionStore (Stores.persistentSessionStore)",
        (_, ValueFormat::Headers) => {
            "RocksDBTimestampedWindowStoreWithHeaders (Stores.persistentTimestampedWindowStoreWithHeaders)"
        }
        (_, ValueFormat::Timestamped) => {
            "RocksDBTimestampedWindowStore (Stores.persistentTimestampedWindowStore)"
        }
        _ => "RocksDBWindowStore (Stores.persistentWindowStore)",
    }
}

/// The plan of a kstate window or session store: read-only, counting the segments its
/// committed records fall into by seeking from one segment prefix to the next.
fn segmented_plan(
    path: &Path,
    header: &crate::format::meta::StoreHeader,
    offsets: BTreeMap<TopicPartition, i64>,
    report: &crate::store::inspect::StoreReport,
) -> Result<ExportPlan> {
    let family = match header.kind {
        StoreKind::Window { .. } => super::WINDOW_FAMILY,
        StoreKind::Session { .. } => super::SESSION_FAMILY,
        StoreKind::KeyValue | StoreKind::Versioned { .. } => {
            return Err(Error::Internal(format!(
                "a {} store planned as segmented",
                header.kind.name()
            )))
        }
    };
    let engine = RocksEngine::open_read_only(path, &RocksOptions::default())?;
    let mut segments = 0;
    if let Some(data) = engine.registry().find(family) {
        let mut lower: Option<Vec<u8>> = None;
        loop {
            let range = crate::engine::KeyRange {
                lower: lower.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Included),
                upper: std::ops::Bound::Unbounded,
            };
            let mut it = engine.iter(data, &range, false)?;
            let Some((stored, _)) = it.next_entry()? else {
                break;
            };
            let (id, _) = split_stored(&stored)?;
            segments += 1;
            match id.checked_add(1) {
                Some(next) => lower = Some(segment_prefix(next).to_vec()),
                None => break,
            }
        }
    }
    let stream_time = report
        .pending
        .as_ref()
        .map(|p| p.state.stream_time)
        .or_else(|| report.committed.as_ref().map(|c| c.stream_time))
        .flatten();
    // export_segmented_to_kafka's rule: offsets and no record make one empty segment.
    if segments == 0 && !offsets.is_empty() && stream_time.is_some_and(|t| t >= 0) {
        segments = 1;
    }
    // A time-ordered store goes to Kafka's time-ordered store (a store it cannot export is
    // refused here, before anything changes).
    let kafka_class = match super::time_order::export_layout(&engine, path, header)? {
        Some(layout) => layout.kafka_class(),
        None => kafka_segmented_class(header.kind, header.value_format),
    };
    Ok(ExportPlan::Segmented {
        kind: header.kind.name(),
        kafka_class,
        segments,
        offsets,
    })
}

/// Whether `target` is vacant (false) or holds the Kafka store an interrupted export of a
/// store with these `offsets` and `metadata` built (true).
///
/// # Errors
/// [`Error::InvalidArgument`] when it holds anything else.
fn target_holds_export(
    target: &Path,
    offsets: &BTreeMap<TopicPartition, i64>,
    metadata: Option<&[u8]>,
) -> Result<bool> {
    let families = match probe(target)? {
        Probe::Vacant => return Ok(false),
        Probe::Database(f) => f,
    };
    let occupied = |why: &str| {
        Err(Error::InvalidArgument(format!(
            "Kafka's directory for this store, {}, already holds {why}: move it away \
             (or delete it) before exporting",
            target.display()
        )))
    };
    if families.iter().any(|f| f == names::META) {
        return occupied("a kstate store");
    }
    let engine = RocksEngine::open_read_only(target, &RocksOptions::default())?;
    let Some(f) = engine.registry().find(names::KAFKA_OFFSETS) else {
        return occupied("a Kafka store without committed offsets");
    };
    let theirs = kafka::read(&engine, f)?;
    // kafka::read gives the position back in the adapter's layout: equal bytes, equal
    // position.
    let ours = metadata.filter(|m| kafka::adapter_to_position(m).is_some());
    if theirs.offsets != *offsets || theirs.left_open || theirs.position.as_deref() != ours {
        return occupied("a Kafka store with other offsets or position");
    }
    Ok(true)
}

/// Whether kstate files an interrupted export or adoption left are beside Kafka's own
/// segmented store at `path` (`<taskDir>/<name>/`): the side directory (holding the old
/// kstate store after an exchange), the fallback's marker or old directory, the lock file.
///
/// # Errors
/// [`Error::InvalidArgument`] when `path` has no store name.
pub fn segmented_leftovers(path: &Path) -> Result<bool> {
    Ok(!leftovers(path)?.is_empty())
}

/// Removes the leftovers [`segmented_leftovers`] finds, under kstate's lock (a fallback
/// exchange left half-way is finished first, as a kstate open would); returns whether there
/// were any. What a rerun of `kstate export` does for a window or session store whose export
/// was killed after its exchange.
///
/// # Errors
/// [`Error::Locked`] while kstate has the store open; I/O errors.
pub fn clean_up_segmented(path: &Path) -> Result<bool> {
    let any = segmented_leftovers(path)?;
    clean_up(path)?;
    Ok(any)
}

/// Removes the kstate leftovers beside the Kafka store at `target` (under kstate's lock,
/// so that no kstate open races the clean-up); finishes an interrupted exchange first.
fn clean_up(target: &Path) -> Result<()> {
    if leftovers(target)?.is_empty() {
        return Ok(());
    }
    let lock = StoreLock::acquire(target)?;
    swap::recover(target)?;
    remove_dir(&sibling(target, "kstate-new")?)?;
    let mut locks = vec![sibling(target, "kstate-lock")?];
    if let Some(source) = source_of(target).filter(|s| !s.exists()) {
        locks.push(sibling(&source, "kstate-lock")?);
    }
    remove_files(&locks)?;
    drop(lock);
    Ok(())
}

fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(dir, e)),
        _ => Ok(()),
    }
}

fn remove_files(files: &[PathBuf]) -> Result<()> {
    for f in files {
        match std::fs::remove_file(f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(f, e)),
            _ => {}
        }
    }
    Ok(())
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| Error::io(to, e))?;
    for dir in [from.parent(), to.parent()].into_iter().flatten() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Hands the store at `path` to Kafka Streams (see the module documentation), or only
/// removes an interrupted export's leftovers when `path` (or its target) already holds
/// the Kafka store. With `legacy_checkpoint`, also merges the store's offsets into its task
/// directory's `.checkpoint` (Kafka Streams 4.2 and older read offsets there only).
///
/// A window or session store is exported in place (see the module documentation).
///
/// # Errors
/// [`Error::Locked`] while the store is open anywhere; [`Error::InvalidArgument`] when Kafka's directory for the store
/// holds another store; recovery errors of the store (it is left as it was); I/O and
/// storage errors (a rerun finishes or cleans up).
pub fn export(path: &Path, legacy_checkpoint: bool) -> Result<Option<Exported>> {
    let (target, format, resumed) = match plan(path)? {
        ExportPlan::Kafka { .. } if moved_versioned(path)? => return Ok(None),
        ExportPlan::Kafka { .. } => {
            let target = if probe(path)? == Probe::Vacant {
                kafka_target(path)?
            } else {
                path.to_path_buf()
            };
            clean_up(&target)?;
            return Ok(None);
        }
        ExportPlan::Segmented { offsets, .. } => {
            return export_segmented(path, offsets, legacy_checkpoint)
        }
        ExportPlan::Versioned { target, offsets } => {
            return export_versioned(path, &target, offsets, legacy_checkpoint)
        }
        ExportPlan::Export {
            target,
            format,
            resumed,
            ..
        } => (target, format, resumed),
    };
    let options = StoreOptions {
        value_format: format,
        ..StoreOptions::default()
    };
    // Recovery first: a spilled commit, an ingest or a commit in doubt is completed (or
    // discarded, if uncommitted) before anything is read.
    let store = KvStore::open(path, &options)?;
    let offsets: BTreeMap<TopicPartition, i64> = store.committed_offsets()?.into_iter().collect();
    let metadata = store.committed_metadata()?;
    let Some(source_lock) = store.close_keeping_lock()? else {
        return Err(Error::Internal("a RocksDB store without its lock".into()));
    };
    let position = metadata.as_deref().and_then(kafka::adapter_to_position);
    let target_lock = if target == path {
        None
    } else {
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        Some(StoreLock::acquire(&target)?)
    };
    let side = swap::side_dir(&target)?;
    // Whatever is in the side directory is an unfinished build (or an old store not yet
    // removed): the store at `path` and any Kafka store at `target` are complete.
    remove_dir(&side)?;
    let mut tables_rewritten = 0;
    let built = !(resumed && target_holds_export(&target, &offsets, metadata.as_deref())?);
    if built {
        RocksEngine::open(path, &[], &options.rocksdb)?.checkpoint(&side)?;
        crate::failpoint::hit("export-checkpointed");
        // In upgrade mode, the older family of a headers store (Kafka's headers store
        // upgrades from `keyValueWithTimestamp`); `default` is always kept.
        let older: &[&str] = match format {
            ValueFormat::Headers => &[names::TIMESTAMPED],
            _ => &[],
        };
        tables_rewritten = rewrite_as_kafka(
            &side,
            &[data_family_name(format)],
            older,
            &kafka::entries(&offsets, position.as_deref()),
        )?
        .tables_rewritten;
        crate::failpoint::hit("export-built");
    }
    let checkpoint_file = if legacy_checkpoint {
        Some(super::checkpoint_file::merge(&target, &offsets)?)
    } else {
        None
    };
    if target == path {
        swap::exchange(&target, &side)?;
    } else {
        if built {
            rename(&side, &target)?;
        }
        crate::failpoint::hit("export-published");
        rename(path, &side)?;
        crate::failpoint::hit("export-source-moved");
        remove_dir(&side)?;
    }
    crate::failpoint::hit("export-swapped");
    let mut locks = vec![
        sibling(path, "kstate-lock")?,
        sibling(&target, "kstate-lock")?,
    ];
    locks.dedup();
    remove_files(&locks)?;
    drop(target_lock);
    drop(source_lock);
    Ok(Some(Exported {
        target,
        format,
        offsets,
        position: position.is_some(),
        tables_rewritten,
        checkpoint_file,
        segmented: None,
        versioned: None,
    }))
}

/// Exports the kstate window or session store at `path` in place
/// ([`super::export_segmented_to_kafka`]). The `.checkpoint` of its task directory (the
/// store's parent, `<taskDir>/<name>`) is merged first, as for a key-value store, so that a
/// kill between the two leaves a kstate store (which ignores the file) rather than a Kafka
/// store without its checkpoint.
fn export_segmented(
    path: &Path,
    offsets: BTreeMap<TopicPartition, i64>,
    legacy_checkpoint: bool,
) -> Result<Option<Exported>> {
    let checkpoint_file = if legacy_checkpoint {
        let task = path.parent().ok_or_else(|| {
            Error::InvalidArgument(format!("{} has no task directory", path.display()))
        })?;
        Some(super::checkpoint_file::merge_task(task, &offsets)?)
    } else {
        None
    };
    let header_format = inspect(path)?
        .header
        .map(|h| h.value_format)
        .unwrap_or(ValueFormat::Plain);
    let done = export_segmented_to_kafka(path)?;
    // What the export wrote, read back from Kafka's `offsets` family of its first segment.
    let written = first_segment_offsets(path)?;
    Ok(Some(Exported {
        target: path.to_path_buf(),
        format: header_format,
        offsets: written
            .as_ref()
            .map(|w| w.offsets.clone())
            .unwrap_or(offsets),
        position: written.is_some_and(|w| w.position.is_some()),
        tables_rewritten: 0,
        checkpoint_file,
        segmented: Some(done),
        versioned: None,
    }))
}

/// Exports the kstate versioned store at `path` to Kafka's layout in place
/// ([`super::export_versioned_to_kafka`]), then moves it to `target` (Kafka's directory for
/// it) unless it is there already. The task `.checkpoint` is merged first, as for the other
/// kinds. A kill before the move leaves Kafka's store at `path`: a rerun moves it
/// ([`moved_versioned`]); a kstate open adopts it again.
fn export_versioned(
    path: &Path,
    target: &Path,
    offsets: BTreeMap<TopicPartition, i64>,
    legacy_checkpoint: bool,
) -> Result<Option<Exported>> {
    let checkpoint_file = if legacy_checkpoint {
        let task = target.parent().and_then(Path::parent).ok_or_else(|| {
            Error::InvalidArgument(format!("{} has no task directory", target.display()))
        })?;
        Some(super::checkpoint_file::merge_task(task, &offsets)?)
    } else {
        None
    };
    let done = super::export_versioned_to_kafka(path)?;
    crate::failpoint::hit("export-versioned-converted");
    moved_versioned(path)?;
    let engine = RocksEngine::open_read_only(target, &RocksOptions::default())?;
    let written = match engine.registry().find(names::KAFKA_OFFSETS) {
        Some(f) => Some(kafka::read(&engine, f)?),
        None => None,
    };
    Ok(Some(Exported {
        target: target.to_path_buf(),
        format: ValueFormat::Plain,
        offsets: written.as_ref().map_or(offsets, |w| w.offsets.clone()),
        position: written.is_some_and(|w| w.position.is_some()),
        tables_rewritten: 0,
        checkpoint_file,
        segmented: None,
        versioned: Some(done),
    }))
}

/// Moves Kafka's versioned store at `path`, when it is one and is not in Kafka's directory
/// for it, to that (vacant) directory: the last step of a versioned export. False when
/// there is nothing to move.
fn moved_versioned(path: &Path) -> Result<bool> {
    let target = kafka_target(path)?;
    if target == path || probe(&target)? != Probe::Vacant {
        return Ok(false);
    }
    let Probe::Database(families) = probe(path)? else {
        return Ok(false);
    };
    if !super::adopt_versioned::kafka_families(&families) {
        return Ok(false);
    }
    let engine = RocksEngine::open_read_only_foreign(path, &RocksOptions::default())?;
    let default = engine.registry().require(names::PLAIN)?;
    if !super::kafka_versioned::looks_versioned(&engine, default)? {
        return Ok(false);
    }
    drop(engine);
    let parent = target
        .parent()
        .ok_or_else(|| Error::Internal("a Kafka target without a parent".into()))?;
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    std::fs::rename(path, &target).map_err(|e| Error::io(path, e))?;
    sync_dir(parent)?;
    if let Some(old_parent) = path.parent() {
        sync_dir(old_parent)?;
    }
    Ok(true)
}

/// Kafka's `offsets` family of the first segment of the Kafka segmented store at `store`
/// (every segment carries the same), or `None` when it has no segment.
fn first_segment_offsets(store: &Path) -> Result<Option<kafka::KafkaOffsets>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(store)
        .map_err(|e| Error::io(store, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let Some(first) = dirs.first() else {
        return Ok(None);
    };
    let engine = RocksEngine::open_read_only(first, &RocksOptions::default())?;
    match engine.registry().find(names::KAFKA_OFFSETS) {
        Some(f) => Ok(Some(kafka::read(&engine, f)?)),
        None => Ok(None),
    }
}
