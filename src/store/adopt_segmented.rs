//! Adopting Kafka Streams' own window and session stores: converting the directory of
//! segment databases Kafka keeps per store into kstate's one database, in one crash-safe
//! step.
//!
//! Kafka's `AbstractSegments` keeps `<taskDir>/<store>/<store>.<segment start>/`, one
//! RocksDB per segment (`<store>:<start>` and `<store>-<yyyyMMddHHmm>` in older runtimes),
//! and nothing else in the store directory. Each segment is a `RocksDBStore` (plain window
//! and session stores: values in `default`) or a `RocksDBTimestampedStore` (timestamped
//! window stores: `keyValueWithTimestamp`, plus `default` while it upgrades), or, for
//! Kafka 4.3+'s headers format (KIP-1271), a `RocksDBTimestampedStoreWithHeaders` (window:
//! `keyValueWithTimestampAndHeaders`) or `RocksDBMigratingSessionStoreWithHeaders`
//! (session: `sessionKeyValueWithHeaders`), with, from
//! Kafka 4.3 on, its own `offsets` family: every commit writes the offsets and the store's
//! position into every live segment; `committedOffset` answers from the newest segment that
//! has the partition, and the position is the merge of the segments' positions. Older
//! runtimes keep the offsets in the task's `.checkpoint`, which Kafka Streams migrates by
//! committing them right after `init`.
//!
//! The conversion (under kstate's lock, which lives beside the directory):
//! 1. every segment is opened read-only with RocksDB's info log routed to a temporary
//!    directory, so nothing is written inside Kafka's directory;
//! 2. the complete kstate store is built in the side directory of
//!    [`super::swap`] (`.<name>.kstate-swap`): every record of the live segments, re-keyed
//!    `[segment][Kafka key]` (a plain value opened timestamped gets timestamp -1), then, in
//!    one synced batch, the header and a committed state carrying Kafka's offsets, the
//!    merged position and the stream time (the largest window start or session end held,
//!    which is what a restore from the changelog observes);
//! 3. the two directories are exchanged atomically and Kafka's is removed
//!    ([`super::swap::exchange`]); a kill at any instant leaves either Kafka's untouched
//!    directory (the next open removes the side directory and converts again) or kstate's
//!    complete store.
//!
//! Kafka's time-ordered stores (`EmitStrategy.onWindowClose()`:
//! `RocksDBTimeOrderedWindowSegmentedBytesStore`, `RocksDBTimeOrderedSessionSegmentedBytesStore`)
//! use the same segment directories and `offsets` family, with every record in `default`
//! under a one-byte prefix (`PrefixedWindowKeySchemas`, `PrefixedSessionKeySchemas`): `0`
//! for the base records, time first (window `start ‖ key ‖ seqnum` with a timestamped
//! value, session `end ‖ start ‖ key` with the aggregate), and, with `hasIndex`, `1` for
//! index records (the regular key-first key, empty value). A time-ordered kstate store adopts
//! them: base records become its records (data family and time family), index records are
//! checked and skipped (kstate keeps its own order). In the DSL's headers store format
//! (Kafka 4.4), the same records are in `windowKeyValueWithHeaders` (window: headers-format
//! values, index records for every window kind) or `sessionKeyValueWithHeaders` (session:
//! aggregates without headers), adopted by a kstate store of the same value format. Each layout is accepted only by the
//! store of its kind: a store whose records also all read in the other layout is refused as
//! ambiguous rather than guessed.
//!
//! Anything unexpected (another file in the directory, a column family of another kind or
//! a later value format, a record outside its segment's time range or of the other key
//! layout, a segment left open unless [`crate::StoreOptions::adopt_left_open`] allows it, as
//! Kafka opens one under at-least-once) is refused before anything changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::kafka;
use super::segmented::Retention;
use super::swap;
use crate::engine::rocksdb::{RocksEngine, RocksOptions};
use crate::engine::{names, BatchOp, Engine, Family, KeyRange};
use crate::format::meta::{CommittedState, StoreHeader, StoreKind, ValueFormat};
use crate::format::segmented::{
    parse_session_key, parse_window_key, segment_id, session_key_of_time_first, stored_key,
    time_first_session_key, time_first_window_key, window_key_of_time_first,
};
use crate::format::{value, TopicPartition};
use crate::store::segmented::SegmentBudget;
use crate::{Error, Result};

/// Bytes of converted records buffered before they are written to the new store.
pub(crate) const BATCH_BYTES: usize = 4 << 20;

/// One of Kafka's segment databases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KafkaSegment {
    /// The segment's start time as its directory name gives it.
    pub start: i64,
    /// The segment database's directory.
    pub dir: PathBuf,
}

/// What the adopted store is: its kind (with the segment interval), retention, value
/// format and data family.
pub(crate) struct Target<'a> {
    /// Window or session, with kstate's segment interval.
    pub kind: StoreKind,
    /// Retention period (ms).
    pub retention: i64,
    /// The data family of the kstate store.
    pub data: &'a str,
    /// The time family of a time-ordered store (`EmitStrategy.onWindowClose()`), which
    /// adopts Kafka's time-ordered segments; `None` for a regular store, which adopts the
    /// regular ones.
    pub by_time: Option<&'a str>,
}

/// One record of a Kafka segment read in one key layout.
enum Decoded {
    /// A record of the store: its regular Kafka key and its time (window start, session
    /// end).
    Base(Vec<u8>, i64),
    /// An index record of a time-ordered store (key-first, empty value), at this time.
    Index(i64),
}

impl Target<'_> {
    fn interval(&self) -> Result<i64> {
        match self.kind {
            StoreKind::Window { segment_interval } | StoreKind::Session { segment_interval } => {
                Ok(segment_interval)
            }
            StoreKind::KeyValue | StoreKind::Versioned { .. } => Err(Error::Internal(format!(
                "a {} store has no Kafka segments to adopt",
                self.kind.name()
            ))),
        }
    }

    fn session(&self) -> bool {
        matches!(self.kind, StoreKind::Session { .. })
    }

    /// The Kafka time of a regular key: window start or session end (a session ends at or
    /// after its start).
    fn time_of(&self, kafka_key: &[u8]) -> Result<i64> {
        if self.session() {
            let (_, start, end) = parse_session_key(kafka_key)?;
            if start > end {
                return Err(Error::FormatMismatch(
                    "a session key ends before it starts".into(),
                ));
            }
            Ok(end)
        } else {
            Ok(parse_window_key(kafka_key)?.1)
        }
    }

    /// Kafka's time-first key (without its prefix) of a regular key.
    fn time_first(&self, kafka_key: &[u8]) -> Result<Vec<u8>> {
        if self.session() {
            time_first_session_key(kafka_key)
        } else {
            time_first_window_key(kafka_key)
        }
    }

    /// Reads a record of a segment in the time-first layout (`time_first`) or the regular
    /// one. `None` when it is no record of that layout.
    fn decode(&self, time_first: bool, key: &[u8], value: &[u8]) -> Option<Decoded> {
        if !time_first {
            return Some(Decoded::Base(key.to_vec(), self.time_of(key).ok()?));
        }
        match key.split_first()? {
            (&0, tf) => {
                let regular = if self.session() {
                    session_key_of_time_first(tf)
                } else {
                    window_key_of_time_first(tf)
                }
                .ok()?;
                let time = self.time_of(&regular).ok()?;
                Some(Decoded::Base(regular, time))
            }
            (&1, regular) if value.is_empty() => Some(Decoded::Index(self.time_of(regular).ok()?)),
            _ => None,
        }
    }
}

/// Whether a decoded record lies in segment `id`.
fn in_segment(decoded: &Option<Decoded>, id: i64, interval: i64) -> bool {
    match decoded {
        Some(Decoded::Base(_, t)) | Some(Decoded::Index(t)) => segment_id(*t, interval) == id,
        None => false,
    }
}

/// The segment start a Kafka segment directory name gives, for store `name`:
/// `<name>.<start>`, `<name>:<start>` or `<name>-<yyyyMMddHHmm>` (UTC), as Kafka's
/// `AbstractSegments.segmentIdFromSegmentName` reads them.
fn segment_start(name: &str, entry: &str) -> Option<i64> {
    let rest = entry.strip_prefix(name)?;
    let mut chars = rest.chars();
    let sep = chars.next()?;
    let digits = chars.as_str();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match sep {
        '.' | ':' => digits.parse().ok(),
        '-' if digits.len() == 12 => {
            let n = |r: std::ops::Range<usize>| digits[r].parse::<i64>().ok();
            let (y, mo, d, h, mi) = (n(0..4)?, n(4..6)?, n(6..8)?, n(8..10)?, n(10..12)?);
            if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 {
                return None;
            }
            Some(((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60_000)
        }
        _ => None,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Kafka's segment databases in `path`, when `path` holds Kafka's layout of a segmented
/// store: a directory without a database of its own whose entries are all segment
/// directories of the store named like the directory. `None` when it is anything else
/// (vacant, a database, no segment at all).
///
/// # Errors
/// [`Error::FormatMismatch`] when segment directories sit beside other entries (Kafka
/// itself cannot open such a directory), or two name the same segment.
pub(crate) fn kafka_segments(path: &Path) -> Result<Option<Vec<KafkaSegment>>> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Ok(None);
    };
    if !path.is_dir() || path.join("CURRENT").exists() {
        return Ok(None);
    }
    let mut segments = Vec::new();
    let mut other = Vec::new();
    for entry in std::fs::read_dir(path).map_err(|e| Error::io(path, e))? {
        let entry = entry.map_err(|e| Error::io(path, e))?;
        let file = entry.file_name().to_string_lossy().into_owned();
        match segment_start(name, &file) {
            Some(start) if entry.path().is_dir() => segments.push(KafkaSegment {
                start,
                dir: entry.path(),
            }),
            _ => other.push(file),
        }
    }
    if segments.is_empty() {
        return Ok(None);
    }
    if !other.is_empty() {
        other.sort();
        return Err(Error::FormatMismatch(format!(
            "{} holds Kafka Streams' segment directories and also {other:?}; kstate adopts only \
             a directory of segments (as Kafka itself opens it) and has changed nothing",
            path.display()
        )));
    }
    segments.sort_by_key(|s| s.start);
    if let Some(w) = segments.windows(2).find(|w| w[0].start == w[1].start) {
        return Err(Error::FormatMismatch(format!(
            "{} and {} name the same Kafka segment; kstate has changed nothing",
            w[0].dir.display(),
            w[1].dir.display()
        )));
    }
    Ok(Some(segments))
}

/// What the segments' `offsets` families say, combined as Kafka's `AbstractSegments` does.
#[derive(Default)]
struct Committed {
    offsets: BTreeMap<TopicPartition, i64>,
    position: Option<Vec<u8>>,
}

/// Converts Kafka's segmented store at `path` (its `segments`, from [`kafka_segments`])
/// into a kstate store of `target`, replacing the directory in one atomic exchange. The
/// caller holds kstate's lock and has recovered any earlier swap ([`swap::recover`]).
///
/// # Errors
/// [`Error::FormatMismatch`] or [`Error::Corruption`] for a directory kstate does not adopt
/// (nothing changed); storage and I/O errors (the side directory is removed by the next
/// open).
pub(crate) fn adopt(
    path: &Path,
    segments: &[KafkaSegment],
    target: &Target<'_>,
    budget: &SegmentBudget,
) -> Result<()> {
    let side = swap::side_dir(path)?;
    if side.exists() {
        std::fs::remove_dir_all(&side).map_err(|e| Error::io(&side, e))?;
    }
    let built = build(segments, target, budget, &side);
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&side);
        return Err(e);
    }
    swap::exchange(path, &side)
}

/// Every check [`adopt`] makes of Kafka's `segments` before it builds anything, reading
/// only (segments are opened read-only, which writes no file, not even RocksDB's `LOG`): the
/// same pass over every segment and record, nothing copied.
///
/// # Errors
/// As [`adopt`] for a directory kstate does not adopt.
pub(crate) fn check(
    segments: &[KafkaSegment],
    target: &Target<'_>,
    format: ValueFormat,
    adopt_left_open: bool,
) -> Result<()> {
    visit(segments, target, format, adopt_left_open, &mut |_| Ok(())).map(|_| ())
}

/// What [`visit`] hands over: a record of a live segment (segment id, Kafka key, value in
/// the target's format), or the end of a live segment's records.
enum Visited<'a> {
    Record(i64, &'a [u8], Vec<u8>),
    SegmentDone,
}

/// Reads Kafka's `segments` newest first, refusing what kstate does not adopt, and hands
/// every record of the live segments to `sink`. Returns the combined offsets and position
/// and the stream time. A segment left open is refused unless `adopt_left_open`.
fn visit(
    segments: &[KafkaSegment],
    target: &Target<'_>,
    format: ValueFormat,
    adopt_left_open: bool,
    sink: &mut dyn FnMut(Visited<'_>) -> Result<()>,
) -> Result<(Committed, Option<i64>)> {
    let interval = target.interval()?;
    let retention = Retention {
        period: target.retention,
        segment_interval: interval,
        // Only which segments are live matters here, which the floor does not change.
        time_first_floor: false,
    };
    let time_first = target.by_time.is_some();
    let layout = |t: bool| {
        if t {
            "Kafka's time-ordered layout (EmitStrategy.onWindowClose())"
        } else {
            "Kafka's regular layout"
        }
    };
    // Whether every record read so far also reads in the time-ordered layout.
    let mut records = 0u64;
    let mut other_fits = true;
    let mut committed = Committed::default();
    let mut stream_time: Option<i64> = None;
    // Newest first: the newest segment holding data gives the stream time (every record
    // lies in its own segment, checked below), which decides which older segments are live.
    for segment in segments.iter().rev() {
        let id = segment_id(segment.start, interval);
        let live = stream_time.is_none_or(|t| id >= retention.min_live_segment(t));
        let ro = RocksEngine::open_read_only_foreign(&segment.dir, &RocksOptions::default())?;
        read_offsets(&ro, segment, adopt_left_open, &mut committed)?;
        let sources = data_sources(&ro, segment, format, target)?;
        if !live {
            continue;
        }
        for (family, convert) in sources {
            let mut it = ro.iter(family, &KeyRange::all(), false)?;
            while let Some((key, v)) = it.next_entry()? {
                let decoded = target.decode(time_first, &key, &v);
                if !in_segment(&decoded, id, interval) {
                    return Err(Error::FormatMismatch(format!(
                        "{}: a record does not read as a record of this segment (segment \
                         interval {interval} ms) in {} of a {} store: the store was written with \
                         another segment interval or key layout; kstate has changed nothing",
                        segment.dir.display(),
                        layout(time_first),
                        target.kind.name()
                    )));
                }
                records += 1;
                // Only a regular store checks that the records do not all read time-ordered
                // too: a time-first key always starts with 0 or 1, which a regular store's
                // keys may also all do (integer keys), while a regular key read time-first
                // gives a time inside its segment only by chance.
                other_fits = other_fits
                    && !time_first
                    && in_segment(&target.decode(true, &key, &v), id, interval);
                let Some(Decoded::Base(kafka_key, time)) = decoded else {
                    // kstate keeps its own order of a time-ordered store.
                    continue;
                };
                stream_time = Some(stream_time.map_or(time, |t| t.max(time)));
                sink(Visited::Record(id, &kafka_key, convert.apply(v)))?;
            }
        }
        sink(Visited::SegmentDone)?;
    }
    if records > 0 && other_fits {
        return Err(Error::FormatMismatch(format!(
            "every record of the Kafka Streams store of segments {:?} reads both in {} and in {}: \
             kstate cannot tell which one Kafka wrote and has changed nothing (delete the \
             directory to restore the store from its changelog)",
            segments.first().map(|s| s.dir.display().to_string()),
            layout(false),
            layout(true)
        )));
    }
    Ok((committed, stream_time))
}

/// Builds the complete kstate store in `side`.
fn build(
    segments: &[KafkaSegment],
    target: &Target<'_>,
    budget: &SegmentBudget,
    side: &Path,
) -> Result<()> {
    let format = budget.store.value_format;
    let mut families = vec![names::META, names::SPILL, target.data];
    let mut memtables = vec![(target.data, budget.data_write_buffer)];
    families.extend(target.by_time);
    memtables.extend(target.by_time.map(|f| (f, budget.data_write_buffer)));
    let engine = RocksEngine::open_sized(side, &families, &budget.store.rocksdb, &memtables)?;
    let data = engine.registry().require(target.data)?;
    let by_time = match target.by_time {
        Some(f) => Some(engine.registry().require(f)?),
        None => None,
    };
    let mut batch = Batch::default();
    let allow = budget.store.adopt_left_open;
    let (committed, stream_time) =
        visit(
            segments,
            target,
            format,
            allow,
            &mut |visited| match visited {
                Visited::Record(id, key, v) => {
                    if let Some(by_time) = by_time {
                        batch.push(by_time, stored_key(id, &target.time_first(key)?), v.clone());
                    }
                    batch.push(data, stored_key(id, key), v);
                    if batch.bytes >= BATCH_BYTES {
                        batch.write(&engine)?;
                    }
                    Ok(())
                }
                Visited::SegmentDone => {
                    batch.write(&engine)?;
                    crate::failpoint::hit("adopt-segment-copied");
                    Ok(())
                }
            },
        )?;
    let state = CommittedState {
        sequence: 0,
        offsets: committed.offsets,
        metadata: committed.position,
        stream_time,
    };
    super::open::write_adopted_state(
        &engine,
        &state,
        &StoreHeader::new(format, target.kind).encode(),
    )?;
    engine.flush()?;
    drop(engine);
    Ok(())
}

/// Converted records waiting to be written.
#[derive(Default)]
pub(crate) struct Batch {
    entries: Vec<(Family, Vec<u8>, Vec<u8>)>,
    /// Bytes buffered.
    pub bytes: usize,
}

impl Batch {
    pub(crate) fn push(&mut self, family: Family, key: Vec<u8>, value: Vec<u8>) {
        self.bytes += key.len() + value.len();
        self.entries.push((family, key, value));
    }

    /// Writes the records without the write-ahead log: the engine flushes them before the
    /// final, synced batch that makes the store complete.
    pub(crate) fn write(&mut self, engine: &RocksEngine) -> Result<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let ops: Vec<BatchOp<'_>> = self
            .entries
            .iter()
            .map(|(f, k, v)| BatchOp::Put(*f, k, v))
            .collect();
        engine.write_unlogged(&ops)?;
        self.entries.clear();
        self.bytes = 0;
        Ok(())
    }
}

/// Merges a segment's `offsets` family into `into`: a partition's offset comes from the
/// newest segment that has it (segments arrive newest first), positions merge.
///
/// # Errors
/// [`Error::Corruption`] for a segment left open (status 1) unless `adopt_left_open`, as for
/// key-value stores.
fn read_offsets(
    ro: &RocksEngine,
    segment: &KafkaSegment,
    adopt_left_open: bool,
    into: &mut Committed,
) -> Result<()> {
    let Some(f) = ro.registry().find(names::KAFKA_OFFSETS) else {
        return Ok(());
    };
    let found = kafka::read(ro, f)?;
    if found.left_open && !adopt_left_open {
        return Err(Error::Corruption(format!(
            "Kafka Streams segment {} was left open (status 1 in its offsets column family): its \
             data may not match its offsets, and Kafka itself refuses it under exactly-once; \
             delete the store directory to restore it from the changelog",
            segment.dir.display()
        )));
    }
    for (tp, offset) in found.offsets {
        into.offsets.entry(tp).or_insert(offset);
    }
    into.position = match (into.position.take(), found.position) {
        (Some(a), Some(b)) => Some(kafka::merge_adapter_positions(&a, &b)?),
        (a, b) => a.or(b),
    };
    Ok(())
}

/// How a value read from one of Kafka's segment families becomes a value of the target
/// store (Kafka's own lazy upgrades, applied once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Convert {
    /// Copied as it is.
    Keep,
    /// A plain value opened timestamped: timestamp -1 in front.
    PlainToTimestamped,
    /// A plain value opened in the window headers format: no headers, timestamp -1
    /// (`HeadersBytesStore.convertFromPlainToHeaderFormat`).
    PlainToHeaders,
    /// A `0x00` (no headers) in front: a timestamped window value opened in the headers
    /// format, or a plain session aggregate opened in the session headers format
    /// (`HeadersBytesStore.convertToHeaderFormat`).
    NoHeaders,
}

impl Convert {
    fn apply(self, v: Vec<u8>) -> Vec<u8> {
        match self {
            Convert::Keep => v,
            Convert::PlainToTimestamped => value::encode(&v, value::UNKNOWN_TIMESTAMP),
            Convert::PlainToHeaders => crate::format::headers::from_plain(&v),
            Convert::NoHeaders => crate::format::headers::prefix_no_headers(&v),
        }
    }
}

/// The families of a segment to copy, in order (a later one wins for a key in both: the
/// later format, which Kafka's upgrading segments read first), each with the conversion
/// its values get on the way. Kafka's headers-format window segments
/// (`TimestampedSegmentWithHeaders`) keep values in `keyValueWithTimestampAndHeaders`,
/// its headers-format session segments (`SessionSegmentWithHeaders`) in
/// `sessionKeyValueWithHeaders`; both may still hold older values in `default` (and a
/// window segment in `keyValueWithTimestamp`).
///
/// # Errors
/// [`Error::FormatMismatch`] for a family Kafka's window and session segments do not have,
/// or values the target cannot hold (a later value format than the target's).
fn data_sources(
    ro: &RocksEngine,
    segment: &KafkaSegment,
    format: ValueFormat,
    target: &Target<'_>,
) -> Result<Vec<(Family, Convert)>> {
    let refuse = |why: String| {
        Error::FormatMismatch(format!(
            "Kafka Streams segment {} {why}; kstate has changed nothing",
            segment.dir.display()
        ))
    };
    let session = target.session();
    let time_ordered = target.by_time.is_some();
    // (rank of the family's format, family, conversion)
    let mut out: Vec<(u8, Family, Convert)> = Vec::new();
    for (index, name) in ro.registry().names().iter().enumerate() {
        let family = Family::at(index)?;
        let held = match name.as_str() {
            names::KAFKA_OFFSETS => continue,
            // Kafka's time-ordered window store is a `TimestampedBytesStore` over plain
            // segments; its session store keeps the aggregates.
            names::PLAIN if time_ordered && !session => ValueFormat::Timestamped,
            names::PLAIN => ValueFormat::Plain,
            // Kafka 4.4's time-ordered segments in the DSL's headers store format: a window
            // store's records (time-first and index, same prefixes) with headers-format values;
            // a session store's aggregates without headers (the DSL's
            // `SessionToHeadersStoreAdapter` strips them before its time-ordered store).
            names::WINDOW_TIME_ORDERED_HEADERS if time_ordered && !session => ValueFormat::Headers,
            names::SESSION_HEADERS if time_ordered && session => ValueFormat::Plain,
            other if time_ordered => {
                return Err(refuse(format!(
                    "has column family '{other}', which Kafka's time-ordered {} segments do not \
                     have",
                    target.kind.name()
                )))
            }
            names::TIMESTAMPED if !session => ValueFormat::Timestamped,
            names::HEADERS if !session => ValueFormat::Headers,
            names::SESSION_HEADERS if session => ValueFormat::Headers,
            other => {
                return Err(refuse(format!(
                    "has column family '{other}', which Kafka's {} segments do not have",
                    target.kind.name()
                )))
            }
        };
        let convert = match (held, format) {
            (h, f) if h == f => Convert::Keep,
            (ValueFormat::Plain, ValueFormat::Timestamped) => Convert::PlainToTimestamped,
            (ValueFormat::Plain, ValueFormat::Headers) if session => Convert::NoHeaders,
            (ValueFormat::Plain, ValueFormat::Headers) => Convert::PlainToHeaders,
            (ValueFormat::Timestamped, ValueFormat::Headers) => Convert::NoHeaders,
            // A later format than the target's: refused if it holds anything.
            _ => {
                if crate::engine::has_entries(ro, family)? {
                    return Err(refuse(format!(
                        "holds {} values, which a {} {} store cannot hold",
                        held.name(),
                        format.name(),
                        target.kind.name()
                    )));
                }
                continue;
            }
        };
        out.push((held.rank(), family, convert));
    }
    out.sort_by_key(|(rank, _, _)| *rank);
    Ok(out.into_iter().map(|(_, f, c)| (f, c)).collect())
}
