//! The way back for window and session stores: a kstate store handed back to Kafka
//! Streams' own segmented layout, the reverse of [`super::adopt_segmented`].
//!
//! The store's committed state (after the same recovery an open does) is written as Kafka's
//! `<store>/<store>.<segment start>/` databases in the side directory of [`super::swap`]:
//! records in `keyValueWithTimestamp` (timestamped window stores), `default` (plain window
//! and session stores), `keyValueWithTimestampAndHeaders` (headers-format window stores,
//! Kafka 4.3+'s `TimestampedSegmentWithHeaders`) or `sessionKeyValueWithHeaders`
//! (headers-format session stores, `SessionSegmentWithHeaders`) or, for a time-ordered store
//! (`EmitStrategy.onWindowClose()`), `default` in Kafka's time-first layout with its index
//! records when Kafka's store has an index ([`super::time_order`]; a window store of
//! headers-format values: `windowKeyValueWithHeaders`, always with the index, as Kafka 4.4's
//! `RocksDBTimeOrderedWindowStoreWithHeaders`), and in every segment
//! Kafka 4.3+'s `offsets` family with the committed
//! offsets, the position (converted back to Kafka's `PositionSerde` when the commit metadata
//! is the Java adapter's position) and status 0 (closed). A store with offsets but no record
//! gets one empty segment at its stream time to carry them. The side directory is then
//! exchanged with the store atomically and the kstate store removed, under kstate's lock: a
//! kill leaves the kstate store (the next open removes the side directory) or Kafka's layout
//! (a kstate open would adopt it again). kstate's lock file is removed last, under the lock.

use std::path::Path;
use std::sync::Arc;

use super::kafka;
use super::lock::StoreLock;
use super::swap;
use crate::engine::rocksdb::{probe, Probe, RocksEngine, RocksOptions};
use crate::engine::{names, BatchOp, Engine, KeyRange};
use crate::format::meta::{self, CommittedState, StoreHeader, StoreKind, ValueFormat};
use crate::format::segmented::{segment_id, split_stored};
use crate::txn::{TxnConfig, TxnCore};
use crate::{Error, Result};

/// What [`export_segmented_to_kafka`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KafkaSegmentsExport {
    /// Kafka segment databases written.
    pub segments: usize,
    /// Records of the store written (a time-ordered store with Kafka's key index also gets
    /// one index record each).
    pub records: u64,
}

/// Records of one segment buffered before they are written.
const BATCH_BYTES: usize = 4 << 20;

/// Replaces the kstate window or session store at `path` (closed) with Kafka Streams' own
/// segmented layout of the same store, carrying its committed offsets and position, so that
/// Kafka's `RocksDBTimestampedWindowStore`, `RocksDBWindowStore`, `RocksDBSessionStore`,
/// their headers-format (KIP-1271) variants, or for a time-ordered store
/// `RocksDBTimeOrderedWindowStore` / `RocksDBTimeOrderedSessionStore` open it without a
/// restore.
///
/// # Errors
/// [`Error::Locked`] while the store is open; [`Error::NotAStore`] or
/// [`Error::FormatMismatch`] for anything but a kstate window or session store, or a
/// time-ordered one [`super::time_order`] does not export; storage and
/// I/O errors (the store is then unchanged, or already Kafka's when the error comes after
/// the exchange).
pub fn export_segmented_to_kafka(path: &Path) -> Result<KafkaSegmentsExport> {
    export_in_place(path, build)
}

/// Replaces the kstate store at `path` (closed) with what `build(path, store name, side
/// directory)` writes into the side directory, in one atomic exchange under kstate's lock
/// (a kill leaves the kstate store, whose next open removes the side directory, or the new
/// layout); kstate's lock file is removed last, under the lock.
///
/// # Errors
/// [`Error::Locked`] while the store is open; [`Error::NotAStore`] without a kstate store
/// at `path`; `build`'s errors (the store is then unchanged); I/O errors of the exchange.
pub(crate) fn export_in_place<T>(
    path: &Path,
    build: impl FnOnce(&Path, &str, &Path) -> Result<T>,
) -> Result<T> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| {
            Error::InvalidArgument(format!("{} has no UTF-8 store name", path.display()))
        })?
        .to_string();
    if !matches!(probe(path)?, Probe::Database(f) if f.iter().any(|n| n == names::META)) {
        return Err(Error::NotAStore {
            path: path.to_path_buf(),
            reason: "no kstate store there".into(),
        });
    }
    let _lock = StoreLock::acquire(path)?;
    swap::recover(path)?;
    let side = swap::side_dir(path)?;
    let built = build(path, &name, &side);
    match built {
        Ok(report) => {
            swap::exchange(path, &side)?;
            crate::failpoint::hit("export-segmented-exchanged");
            // The store is Kafka's now: kstate's lock file goes, removed while the lock is
            // still held so that no kstate open races it (as the key-value export does).
            let lock_file = super::lock::sibling(path, "kstate-lock")?;
            match std::fs::remove_file(&lock_file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::io(&lock_file, e))
                }
                _ => {}
            }
            Ok(report)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&side);
            Err(e)
        }
    }
}

/// Writes Kafka's segments of the store at `path` into `side`.
fn build(path: &Path, name: &str, side: &Path) -> Result<KafkaSegmentsExport> {
    let engine: Arc<dyn Engine> = Arc::new(RocksEngine::open(
        path,
        &[names::META, names::SPILL],
        &RocksOptions::default(),
    )?);
    let meta_family = engine.registry().require(names::META)?;
    let header = engine
        .get(meta_family, meta::KEY_HEADER)?
        .map(|raw| StoreHeader::decode(&raw))
        .transpose()?
        .ok_or_else(|| Error::Corruption(format!("{} has no kstate header", path.display())))?;
    let (interval, data_name, kafka_family) = match header.kind {
        StoreKind::Window { segment_interval } => (
            segment_interval,
            super::WINDOW_FAMILY,
            match header.value_format {
                ValueFormat::Timestamped => names::TIMESTAMPED,
                // Kafka 4.3+'s TimestampedSegmentWithHeaders (a RocksDBTimestampedStoreWithHeaders)
                ValueFormat::Headers => names::HEADERS,
                ValueFormat::Plain => names::PLAIN,
            },
        ),
        StoreKind::Session { segment_interval } => (
            segment_interval,
            super::SESSION_FAMILY,
            match header.value_format {
                // Kafka 4.3+'s SessionSegmentWithHeaders
                ValueFormat::Headers => names::SESSION_HEADERS,
                ValueFormat::Plain | ValueFormat::Timestamped => names::PLAIN,
            },
        ),
        StoreKind::KeyValue | StoreKind::Versioned { .. } => {
            return Err(Error::FormatMismatch(format!(
                "{} is a {} store, not a window or session store",
                path.display(),
                header.kind.name()
            )))
        }
    };
    // Kafka's time-ordered stores (emit on window close) read time-first keys in `default`,
    // with key-first index records when Kafka's store has an index (super::time_order).
    let time_ordered = super::time_order::export_layout(engine.as_ref(), path, &header)?;
    let kafka_family = match &time_ordered {
        Some(layout) => layout.kafka_family(),
        None => kafka_family,
    };
    // The committed state an open would recover (a spilled commit rolled forward).
    let config = TxnConfig {
        max_uncommitted_bytes: 1 << 20,
        sync_on_commit: true,
        chunk_bytes: crate::txn::CHUNK_BYTES,
    };
    let (core, _) = TxnCore::recover(Arc::clone(&engine), config)?;
    let state = core.committed()?;
    let offsets = offsets_entries(&state);
    if side.exists() {
        std::fs::remove_dir_all(side).map_err(|e| Error::io(side, e))?;
    }
    std::fs::create_dir_all(side).map_err(|e| Error::io(side, e))?;
    let data = engine.registry().require(data_name)?;
    let mut report = KafkaSegmentsExport {
        segments: 0,
        records: 0,
    };
    let mut current: Option<(i64, Segment)> = None;
    let mut it = engine.iter(data, &KeyRange::all(), false)?;
    while let Some((stored, value)) = it.next_entry()? {
        let (id, kafka_key) = split_stored(&stored)?;
        if current.as_ref().map(|(c, _)| *c) != Some(id) {
            if let Some((_, done)) = current.take() {
                done.finish(&offsets)?;
            }
            current = Some((id, Segment::create(side, name, id, interval, kafka_family)?));
            report.segments += 1;
        }
        if let Some((_, segment)) = current.as_mut() {
            match &time_ordered {
                Some(layout) => {
                    for (key, v) in layout.records(kafka_key, &value)? {
                        segment.put(&key, &v)?;
                    }
                }
                None => segment.put(kafka_key, &value)?,
            }
        }
        report.records += 1;
    }
    match current.take() {
        Some((_, last)) => last.finish(&offsets)?,
        None => {
            // Nothing to write but offsets: one empty segment at the stream time carries them.
            if let Some(t) = state.stream_time.filter(|t| *t >= 0) {
                if !state.offsets.is_empty() {
                    let id = segment_id(t, interval);
                    Segment::create(side, name, id, interval, kafka_family)?.finish(&offsets)?;
                    report.segments += 1;
                }
            }
        }
    }
    drop(it);
    core.close()?;
    Ok(report)
}

/// Kafka's `offsets` family for `state` ([`kafka::entries`]), with the position when the
/// commit metadata is the Java adapter's.
pub(crate) fn offsets_entries(state: &CommittedState) -> Vec<(Vec<u8>, Vec<u8>)> {
    let position = state
        .metadata
        .as_deref()
        .and_then(kafka::adapter_to_position);
    kafka::entries(&state.offsets, position.as_deref())
}

/// One Kafka segment database being written.
struct Segment {
    engine: RocksEngine,
    data: crate::engine::Family,
    offsets: crate::engine::Family,
    batch: Vec<(Vec<u8>, Vec<u8>)>,
    bytes: usize,
}

impl Segment {
    /// Creates `<side>/<name>.<id * interval>` with Kafka's families.
    fn create(side: &Path, name: &str, id: i64, interval: i64, family: &str) -> Result<Segment> {
        let start = id.checked_mul(interval).ok_or_else(|| {
            Error::Corruption(format!("segment {id} of interval {interval} overflows"))
        })?;
        let dir = side.join(format!("{name}.{start}"));
        let engine = RocksEngine::open_sized(
            &dir,
            &[family, names::KAFKA_OFFSETS],
            &RocksOptions::default(),
            &[],
        )?;
        let data = engine.registry().require(family)?;
        let offsets = engine.registry().require(names::KAFKA_OFFSETS)?;
        Ok(Segment {
            engine,
            data,
            offsets,
            batch: Vec::new(),
            bytes: 0,
        })
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.bytes += key.len() + value.len();
        self.batch.push((key.to_vec(), value.to_vec()));
        if self.bytes >= BATCH_BYTES {
            self.write()?;
        }
        Ok(())
    }

    fn write(&mut self) -> Result<()> {
        let ops: Vec<BatchOp<'_>> = self
            .batch
            .iter()
            .map(|(k, v)| BatchOp::Put(self.data, k, v))
            .collect();
        self.engine.write(&ops, false)?;
        self.batch.clear();
        self.bytes = 0;
        Ok(())
    }

    /// Writes the rest, then the offsets family, synced, and flushes the segment to its table
    /// files.
    fn finish(mut self, offsets: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
        self.write()?;
        let ops: Vec<BatchOp<'_>> = offsets
            .iter()
            .map(|(k, v)| BatchOp::Put(self.offsets, k, v))
            .collect();
        self.engine.write(&ops, true)?;
        self.engine.flush()
    }
}
