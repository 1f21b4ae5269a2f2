//! Kafka Streams' versioned store (`RocksDBVersionedStore`) and kstate's, converted in
//! place both ways: adoption when a kstate versioned store is opened on Kafka's directory,
//! and [`export_versioned_to_kafka`], the way back.
//!
//! Kafka keeps one RocksDB database: `default` holds the latest values (key prefix -1) and
//! one history row per key and segment ([`super::kafka_versioned`]), and since Kafka 4.3
//! `offsets` holds the changelog offsets and position. kstate's layout keeps one entry per
//! version ([`crate::format::versioned`]). Every version converts to one entry and back;
//! Kafka's gaps inside a row are tombstones, its degenerate rows kstate's zero-length
//! tombstones. Both conversions write beside the store and exchange the directories
//! atomically ([`super::swap`]), so a kill leaves one layout or the other, whole.
//!
//! Kafka does not record its stream time. An adopted store gets the largest timestamp its
//! versions hold (what Kafka had observed before it closed, at least), so that it refuses
//! the writes Kafka refused and keeps its history readable; Kafka 4.x itself restarts at no
//! stream time and reads no history until writes recreate its segments.

use std::path::Path;

use super::adopt_segmented::{Batch, BATCH_BYTES};
use super::kafka::{self, KafkaOffsets};
use super::kafka_versioned::{
    encode_row, kafka_key, looks_versioned, parse_row, split_kafka_key, RowVersion,
};
use super::segmented::SegmentBudget;
use super::{swap, StoreOptions};
use crate::engine::rocksdb::{RocksEngine, RocksOptions};
use crate::engine::{names, BatchOp, Engine, KeyRange};
use crate::format::meta::{self, CommittedState, StoreHeader, StoreKind, ValueFormat};
use crate::format::segmented::segment_id;
use crate::format::versioned::{self as layout, BY_TIME_FAMILY, HISTORY_FAMILY, LATEST_FAMILY};
use crate::txn::{TxnConfig, TxnCore};
use crate::{Error, Result};

/// What a visit of Kafka's store hands over.
enum Found<'a> {
    /// A latest value: record key, Kafka's `valid_from ‖ value` (kstate's layout too).
    Latest(&'a [u8], &'a [u8]),
    /// A version of the history.
    Version(&'a [u8], RowVersion<'a>),
}

/// Whether a database with `families` (no kstate metadata) can be Kafka's versioned store.
pub(crate) fn kafka_families(families: &[String]) -> bool {
    !families.iter().any(|n| n == names::META)
        && families
            .iter()
            .all(|n| n == names::PLAIN || n == names::KAFKA_OFFSETS)
}

/// Reads Kafka's versioned store at `path` (read-only), refusing what kstate does not
/// adopt, and hands every latest value and version to `sink`; returns Kafka's offsets and
/// the largest timestamp found.
fn visit(
    path: &Path,
    options: &StoreOptions,
    sink: &mut dyn FnMut(Found<'_>) -> Result<()>,
) -> Result<(KafkaOffsets, Option<i64>)> {
    let refuse = |why: String| {
        Error::FormatMismatch(format!(
            "{} {why}; kstate has changed nothing",
            path.display()
        ))
    };
    let ro = RocksEngine::open_read_only_foreign(path, &options.rocksdb)?;
    let registry = ro.registry();
    if let Some(other) = registry
        .names()
        .iter()
        .find(|n| *n != names::PLAIN && *n != names::KAFKA_OFFSETS)
    {
        return Err(refuse(format!(
            "has column family '{other}', which Kafka Streams' versioned store does not have"
        )));
    }
    let data = registry.require(names::PLAIN)?;
    if crate::engine::has_entries(&ro, data)? && !looks_versioned(&ro, data)? {
        return Err(refuse(
            "holds a Kafka Streams key-value store, not a versioned one (RocksDBVersionedStore)"
                .into(),
        ));
    }
    let offsets = match registry.find(names::KAFKA_OFFSETS) {
        Some(f) => kafka::read(&ro, f)?,
        None => KafkaOffsets::default(),
    };
    if offsets.left_open && !options.adopt_left_open {
        return Err(Error::Corruption(format!(
            "Kafka Streams versioned store at {} was left open (status 1 in its offsets column \
             family): its data may not match its offsets, and Kafka itself refuses it under \
             exactly-once; delete the directory to restore it from the changelog (under \
             at-least-once, adopt_left_open adopts it as Kafka opens it)",
            path.display()
        )));
    }
    let mut newest: Option<i64> = None;
    let mut it = ro.iter(data, &KeyRange::all(), false)?;
    while let Some((key, value)) = it.next_entry()? {
        let (segment, record_key) = split_kafka_key(&key)?;
        match segment {
            None => {
                let (valid_from, _) = layout::decode_latest(&value)?;
                newest = newest.max(Some(valid_from));
                sink(Found::Latest(record_key, &value))?;
            }
            Some(_) => {
                for version in parse_row(&value)? {
                    newest = newest.max(Some(version.valid_to));
                    sink(Found::Version(record_key, version))?;
                }
            }
        }
    }
    Ok((offsets, newest))
}

/// Every check the adoption of Kafka's versioned store at `path` makes, reading only.
///
/// # Errors
/// Why the adoption would refuse the directory (nothing was changed).
pub(crate) fn check(path: &Path, options: &StoreOptions) -> Result<()> {
    super::open::refuse_if_in_use(path)?;
    visit(path, options, &mut |_| Ok(())).map(drop)
}

/// Converts Kafka's versioned store at `path` into a kstate versioned store of `kind`, in
/// place (called under kstate's lock).
///
/// # Errors
/// As [`check`]; storage errors (the directory is then unchanged).
pub(crate) fn adopt(path: &Path, kind: StoreKind, budget: &SegmentBudget) -> Result<()> {
    check(path, &budget.store)?;
    let side = swap::side_dir(path)?;
    if side.exists() {
        std::fs::remove_dir_all(&side).map_err(|e| Error::io(&side, e))?;
    }
    let built = build(path, kind, budget, &side);
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&side);
        return Err(e);
    }
    swap::exchange(path, &side)
}

fn build(path: &Path, kind: StoreKind, budget: &SegmentBudget, side: &Path) -> Result<()> {
    let families = [
        names::META,
        names::SPILL,
        LATEST_FAMILY,
        HISTORY_FAMILY,
        BY_TIME_FAMILY,
    ];
    let buffer = budget.data_write_buffer;
    let memtables = [
        (LATEST_FAMILY, buffer),
        (HISTORY_FAMILY, buffer),
        (BY_TIME_FAMILY, buffer),
    ];
    let engine = RocksEngine::open_sized(side, &families, &budget.store.rocksdb, &memtables)?;
    let registry = engine.registry();
    let (latest, history, by_time) = (
        registry.require(LATEST_FAMILY)?,
        registry.require(HISTORY_FAMILY)?,
        registry.require(BY_TIME_FAMILY)?,
    );
    let mut batch = Batch::default();
    let (offsets, newest) = visit(path, &budget.store, &mut |found| {
        match found {
            Found::Latest(key, raw) => batch.push(latest, key.to_vec(), raw.to_vec()),
            Found::Version(key, v) => {
                let hk = layout::history_key(key, v.valid_to);
                if v.valid_from == v.valid_to {
                    // A degenerate tombstone only bounds older writes: a version ending at
                    // the same time (in another row) does that already, and wins.
                    batch.write(&engine)?;
                    if engine.get(history, &hk)?.is_some() {
                        return Ok(());
                    }
                }
                batch.push(by_time, layout::index_key(v.valid_to, &hk), Vec::new());
                batch.push(history, hk, layout::encode_history(v.valid_from, v.value));
            }
        }
        if batch.bytes >= BATCH_BYTES {
            batch.write(&engine)?;
        }
        Ok(())
    })?;
    batch.write(&engine)?;
    crate::failpoint::hit("adopt-segment-copied");
    let state = CommittedState {
        sequence: 0,
        offsets: offsets.offsets,
        metadata: offsets.position,
        stream_time: newest,
    };
    let header = StoreHeader::new(ValueFormat::Plain, kind).encode();
    super::open::write_adopted_state(&engine, &state, &header)?;
    engine.flush()?;
    drop(engine);
    Ok(())
}

/// What [`export_versioned_to_kafka`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionedExport {
    /// Latest values written.
    pub latest: u64,
    /// History rows written (one per key and segment).
    pub rows: u64,
}

/// Replaces the kstate versioned store at `path` (closed) with Kafka Streams' own
/// `RocksDBVersionedStore` layout of its committed state (after the recovery an open does),
/// with Kafka 4.3+'s `offsets` family (committed offsets, the position when the commit
/// metadata is the Java adapter's, status 0), so that Kafka opens it without a restore.
/// History rows are grouped by the segment interval the store was created with.
///
/// # Errors
/// [`Error::Locked`] while the store is open; [`Error::NotAStore`] or
/// [`Error::FormatMismatch`] for anything but a kstate versioned store; storage and I/O
/// errors (the store is then unchanged, or already Kafka's when the error comes after the
/// exchange).
pub fn export_versioned_to_kafka(path: &Path) -> Result<VersionedExport> {
    super::export_segmented::export_in_place(path, |path, _, side| export(path, side))
}

fn export(path: &Path, side: &Path) -> Result<VersionedExport> {
    let engine: std::sync::Arc<dyn Engine> = std::sync::Arc::new(RocksEngine::open(
        path,
        &[names::META, names::SPILL],
        &RocksOptions::default(),
    )?);
    let registry = engine.registry();
    let header = engine
        .get(registry.require(names::META)?, meta::KEY_HEADER)?
        .map(|raw| StoreHeader::decode(&raw))
        .transpose()?
        .ok_or_else(|| Error::Corruption(format!("{} has no kstate header", path.display())))?;
    let StoreKind::Versioned { segment_interval } = header.kind else {
        return Err(Error::FormatMismatch(format!(
            "{} is a {} store, not a versioned store",
            path.display(),
            header.kind.name()
        )));
    };
    let (latest, history) = (
        registry.require(LATEST_FAMILY)?,
        registry.require(HISTORY_FAMILY)?,
    );
    let config = TxnConfig {
        max_uncommitted_bytes: 1 << 20,
        sync_on_commit: true,
        chunk_bytes: crate::txn::CHUNK_BYTES,
    };
    let (core, _) = TxnCore::recover(std::sync::Arc::clone(&engine), config)?;
    let state = core.committed()?;
    if side.exists() {
        std::fs::remove_dir_all(side).map_err(|e| Error::io(side, e))?;
    }
    let kafka = RocksEngine::open_sized(
        side,
        &[names::PLAIN, names::KAFKA_OFFSETS],
        &RocksOptions::default(),
        &[],
    )?;
    let data = kafka.registry().require(names::PLAIN)?;
    let mut report = VersionedExport { latest: 0, rows: 0 };
    let mut out = Rows::default();
    let mut it = engine.iter(latest, &KeyRange::all(), false)?;
    while let Some((key, raw)) = it.next_entry()? {
        out.put(&kafka, data, kafka_key(-1, &key), raw)?;
        report.latest += 1;
    }
    // The history is ordered by key, then valid_to: a row is a run of one key's versions
    // in one segment.
    let mut run: Vec<(i64, i64, Option<Vec<u8>>)> = Vec::new();
    let mut run_of: Option<(Vec<u8>, i64)> = None;
    let mut it = engine.iter(history, &KeyRange::all(), false)?;
    loop {
        let next = it.next_entry()?;
        let decoded = match &next {
            Some((hk, raw)) => {
                let (key, valid_to) = layout::split_history_key(hk)?;
                let (valid_from, value) = layout::decode_history(raw)?;
                let segment = segment_id(valid_to, segment_interval);
                Some((
                    key.to_vec(),
                    segment,
                    valid_from,
                    valid_to,
                    value.map(<[u8]>::to_vec),
                ))
            }
            None => None,
        };
        let same = match (&decoded, &run_of) {
            (Some((k, s, ..)), Some((rk, rs))) => k == rk && s == rs,
            _ => false,
        };
        if !same {
            if let Some((key, segment)) = run_of.take() {
                let row = encode_row(&contiguous(&run)?)?;
                out.put(&kafka, data, kafka_key(segment, &key), row)?;
                report.rows += 1;
                run.clear();
            }
        }
        let Some((key, segment, valid_from, valid_to, value)) = decoded else {
            break;
        };
        run_of.get_or_insert((key, segment));
        run.push((valid_from, valid_to, value));
    }
    out.write(&kafka, data)?;
    let offsets = kafka.registry().require(names::KAFKA_OFFSETS)?;
    let entries = super::export_segmented::offsets_entries(&state);
    let ops: Vec<BatchOp<'_>> = entries
        .iter()
        .map(|(k, v)| BatchOp::Put(offsets, k, v))
        .collect();
    kafka.write(&ops, true)?;
    kafka.flush()?;
    drop(it);
    core.close()?;
    Ok(report)
}

/// Kafka's rows, buffered.
#[derive(Default)]
struct Rows {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    bytes: usize,
}

impl Rows {
    fn put(
        &mut self,
        kafka: &RocksEngine,
        data: crate::engine::Family,
        key: Vec<u8>,
        value: Vec<u8>,
    ) -> Result<()> {
        self.bytes += key.len() + value.len();
        self.entries.push((key, value));
        if self.bytes >= BATCH_BYTES {
            self.write(kafka, data)?;
        }
        Ok(())
    }

    fn write(&mut self, kafka: &RocksEngine, data: crate::engine::Family) -> Result<()> {
        let ops: Vec<BatchOp<'_>> = self
            .entries
            .iter()
            .map(|(k, v)| BatchOp::Put(data, k, v))
            .collect();
        kafka.write(&ops, false)?;
        self.entries.clear();
        self.bytes = 0;
        Ok(())
    }
}

/// One key's versions in one segment (`(valid_from, valid_to, value)`, by `valid_to`) as
/// the contiguous list a Kafka row holds: a gap becomes a tombstone, a zero-length
/// tombstone lasts until the next version (or, last in the run, ends the row; alone, it is
/// Kafka's degenerate row).
///
/// # Errors
/// [`Error::Corruption`] for overlapping versions.
fn contiguous(run: &[(i64, i64, Option<Vec<u8>>)]) -> Result<Vec<RowVersion<'_>>> {
    let mut out: Vec<RowVersion<'_>> = Vec::with_capacity(run.len());
    for (i, (from, to, value)) in run.iter().enumerate() {
        if let Some(prev) = out.last() {
            if prev.valid_to > *from {
                return Err(Error::Corruption(format!(
                    "versioned store history has overlapping versions [{}, {}) and [{from}, {to})",
                    prev.valid_from, prev.valid_to
                )));
            }
            if prev.valid_to < *from {
                out.push(RowVersion {
                    valid_from: prev.valid_to,
                    valid_to: *from,
                    value: None,
                });
            }
        }
        let version = RowVersion {
            valid_from: *from,
            valid_to: *to,
            value: value.as_deref(),
        };
        if from == to {
            match run.get(i + 1) {
                Some((next_from, ..)) if next_from > from => out.push(RowVersion {
                    valid_to: *next_from,
                    ..version
                }),
                // The next version starts at its time: nothing to bound.
                Some(_) => {}
                None if out.is_empty() => out.push(version),
                // Last: the gap before it, now a tombstone, ends the row at its time.
                None => {}
            }
            continue;
        }
        out.push(version);
    }
    Ok(out)
}
