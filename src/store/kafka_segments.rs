//! Kafka Streams' own window and session stores on disk, recognised and described without
//! changing a byte. Such a store is a directory `<taskDir>/<store>/` of RocksDB databases,
//! one per segment, named `<store>.<start>` where `<start>` is the segment id times the
//! segment interval in milliseconds (Kafka's `AbstractSegments.segmentName`; older releases
//! wrote `<store>:<start>`). Each segment holds window keys (`key ‖ BE i64 windowStart ‖ BE
//! i32 seqnum`) or session keys (`key ‖ BE i64 end ‖ BE i64 start`), in `default` (plain
//! window and session stores) or `keyValueWithTimestamp` (timestamped window stores).
//!
//! kstate neither adopts nor converts them. Kafka reads every entry of the store directory
//! as a segment name and fails on one it cannot parse, so nothing may ever be written there:
//! callers only list the directory and open segments read-only.

use std::path::{Path, PathBuf};

use super::inspect::{count_families, FamilyReport};
use crate::engine::rocksdb::{RocksEngine, RocksOptions};
use crate::engine::{names, Engine, KeyRange};
use crate::Result;

/// One segment directory of a Kafka Streams window or session store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaSegment {
    /// Start of the segment's time range in ms (segment id × segment interval), from its
    /// directory name.
    pub start: i64,
    /// The segment's database directory.
    pub path: PathBuf,
}

/// A directory laid out as a Kafka Streams window or session store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaSegmentedDir {
    /// The store directory (`<taskDir>/<store>`).
    pub path: PathBuf,
    /// Its segments, by start time.
    pub segments: Vec<KafkaSegment>,
    /// Entries of the store directory that are not segments: Kafka cannot open the store
    /// while they are there (it parses every name as a segment name).
    pub strays: Vec<String>,
}

/// The start time a segment named `entry` of the store `store` carries, if `entry` is
/// named as one (`<store>.<start>` or the older `<store>:<start>`).
fn segment_start(store: &str, entry: &str) -> Option<i64> {
    let rest = entry.strip_prefix(store)?;
    let digits = rest.strip_prefix('.').or_else(|| rest.strip_prefix(':'))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `dir` as a Kafka Streams window or session store: a directory with no database of its
/// own and at least one subdirectory named as a segment of it that holds a database.
/// `None` otherwise. Only lists directories.
///
/// # Errors
/// When `dir` cannot be listed.
pub fn find(dir: &Path) -> std::io::Result<Option<KafkaSegmentedDir>> {
    if !dir.is_dir() || dir.join("CURRENT").exists() {
        return Ok(None);
    }
    let Some(store) = dir.file_name().and_then(|n| n.to_str()) else {
        return Ok(None);
    };
    let mut segments = Vec::new();
    let mut strays = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        match segment_start(store, &name) {
            Some(start) if entry.path().join("CURRENT").is_file() => segments.push(KafkaSegment {
                start,
                path: entry.path(),
            }),
            _ => strays.push(name),
        }
    }
    if segments.is_empty() {
        return Ok(None);
    }
    segments.sort_by_key(|s| s.start);
    strays.sort();
    Ok(Some(KafkaSegmentedDir {
        path: dir.to_path_buf(),
        segments,
        strays,
    }))
}

/// Whether `path` is one segment of a Kafka Streams window or session store: a database
/// directory named `<parent>.<start>` (or `<parent>:<start>`) inside a directory `<parent>`.
pub fn is_segment(path: &Path) -> bool {
    let parent = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str());
    let name = path.file_name().and_then(|n| n.to_str());
    match (parent, name) {
        (Some(parent), Some(name)) => {
            segment_start(parent, name).is_some() && path.join("CURRENT").is_file()
        }
        _ => false,
    }
}

/// What the keys of a Kafka segmented store say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindGuess {
    /// Window keys in `keyValueWithTimestamp`: a timestamped window store (sessions have
    /// no timestamped format).
    TimestampedWindow,
    /// Window keys, whose window starts fall into their segments.
    Window,
    /// Session keys, whose session ends fall into their segments.
    Session,
    /// Keys fit both schemas (too few segments to tell), or there are no keys.
    WindowOrSession,
    /// Keys fit neither schema.
    Unknown,
}

impl KindGuess {
    /// How `kstate inspect` names it.
    pub fn describe(self) -> &'static str {
        match self {
            KindGuess::TimestampedWindow => "timestamped window store",
            KindGuess::Window => "window store",
            KindGuess::Session => "session store",
            KindGuess::WindowOrSession => "window or session store (the keys fit both schemas)",
            KindGuess::Unknown => "unknown: keys fit neither the window nor the session schema",
        }
    }
}

/// One segment as `kstate inspect` shows it.
#[derive(Debug, Clone)]
pub struct SegmentReport {
    /// The segment.
    pub segment: KafkaSegment,
    /// Its column families and their entry counts (empty when it cannot be read).
    pub families: Vec<FamilyReport>,
    /// Why the segment cannot be read, if it cannot.
    pub error: Option<String>,
}

/// What `kstate inspect` shows of a Kafka Streams window or session store.
#[derive(Debug, Clone)]
pub struct SegmentedReport {
    /// The store's layout.
    pub dir: KafkaSegmentedDir,
    /// Every segment.
    pub segments: Vec<SegmentReport>,
    /// What kind of store the keys say it is.
    pub kind: KindGuess,
    /// The greatest segment interval the segment names allow (their greatest common
    /// divisor), when it is known and consistent with the keys; segment ids assume it.
    pub interval: Option<i64>,
    /// Values in `keyValueWithTimestamp` too short to carry their 8-byte timestamp.
    pub short_timestamped_values: u64,
}

/// How well one key schema explains the keys seen so far.
#[derive(Debug, Clone, Copy)]
struct Fit {
    /// Every key parsed under the schema, with its time at or after its segment's start.
    ok: bool,
    /// Greatest `time - segment start` seen: the interval must exceed it.
    max_offset: i64,
}

impl Fit {
    fn new() -> Fit {
        Fit {
            ok: true,
            max_offset: 0,
        }
    }

    /// Records a key whose time under the schema is `time` (`None`: does not parse).
    fn see(&mut self, time: Option<i64>, start: i64) {
        match time.and_then(|t| t.checked_sub(start)) {
            Some(offset) if offset >= 0 => self.max_offset = self.max_offset.max(offset),
            _ => self.ok = false,
        }
    }

    /// Whether the schema explains every key with segments of `interval` (0: unknown).
    fn consistent(self, interval: i64) -> bool {
        self.ok && (interval == 0 || self.max_offset < interval)
    }
}

fn be_i64(bytes: &[u8]) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(bytes);
    i64::from_be_bytes(b)
}

/// The window start of a window-schema key, if it is one.
fn window_time(key: &[u8]) -> Option<i64> {
    let n = key.len().checked_sub(12)?;
    let seq = i32::from_be_bytes([key[n + 8], key[n + 9], key[n + 10], key[n + 11]]);
    (seq >= 0).then(|| be_i64(&key[n..n + 8]))
}

/// The end time of a session-schema key, if it is one (start <= end).
fn session_time(key: &[u8]) -> Option<i64> {
    let n = key.len().checked_sub(16)?;
    let (end, start) = (be_i64(&key[n..n + 8]), be_i64(&key[n + 8..n + 16]));
    (start >= 0 && start <= end).then_some(end)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Describes the Kafka segmented store `dir`: every segment opened read-only (which writes
/// nothing, not even RocksDB's `LOG`), its families counted, its keys read against both
/// key schemas. A segment that cannot be read is reported, not an error.
pub fn describe(dir: &KafkaSegmentedDir) -> SegmentedReport {
    let (mut window, mut session) = (Fit::new(), Fit::new());
    let mut timestamped = false;
    let mut short_timestamped_values = 0;
    let mut segments = Vec::new();
    for segment in &dir.segments {
        let mut scan = |engine: &RocksEngine| -> Result<()> {
            for name in [
                names::PLAIN,
                names::TIMESTAMPED,
                names::HEADERS,
                names::SESSION_HEADERS,
            ] {
                let Some(family) = engine.registry().find(name) else {
                    continue;
                };
                let mut it = engine.iter(family, &KeyRange::all(), false)?;
                while let Some((key, value)) = it.next_entry()? {
                    window.see(window_time(&key), segment.start);
                    session.see(session_time(&key), segment.start);
                    if name == names::TIMESTAMPED {
                        timestamped = true;
                        if value.len() < 8 {
                            short_timestamped_values += 1;
                        }
                    }
                }
            }
            Ok(())
        };
        let read = RocksEngine::open_read_only_foreign(&segment.path, &RocksOptions::default())
            .and_then(|engine| {
                let families = count_families(&engine)?;
                scan(&engine)?;
                Ok(families)
            });
        segments.push(match read {
            Ok(families) => SegmentReport {
                segment: segment.clone(),
                families,
                error: None,
            },
            Err(e) => SegmentReport {
                segment: segment.clone(),
                families: Vec::new(),
                error: Some(e.to_string()),
            },
        });
    }
    let interval = dir.segments.iter().fold(0, |g, s| gcd(s.start, g)).abs();
    let kind = match (window.consistent(interval), session.consistent(interval)) {
        (true, _) if timestamped => KindGuess::TimestampedWindow,
        (true, true) => KindGuess::WindowOrSession,
        (true, false) => KindGuess::Window,
        (false, true) => KindGuess::Session,
        (false, false) => KindGuess::Unknown,
    };
    let fits = match kind {
        KindGuess::Session => Some(session),
        KindGuess::Window | KindGuess::TimestampedWindow => Some(window),
        _ => None,
    };
    SegmentedReport {
        interval: fits.filter(|_| interval > 0).map(|_| interval),
        dir: dir.clone(),
        segments,
        kind,
        short_timestamped_values,
    }
}

/// What `kstate verify` finds wrong in a Kafka segmented store: entries Kafka cannot open
/// the store with, segments that cannot be read, keys of neither schema, timestamped values
/// without their timestamp. Empty when sound.
pub fn problems(report: &SegmentedReport) -> Vec<String> {
    let mut out: Vec<String> = report
        .dir
        .strays
        .iter()
        .map(|s| {
            format!(
                "{s:?} in the store directory is not a segment: Kafka Streams fails to open \
                 the store while it is there"
            )
        })
        .collect();
    for s in &report.segments {
        if let Some(e) = &s.error {
            out.push(format!("segment {}: {e}", s.segment.path.display()));
        }
    }
    if report.kind == KindGuess::Unknown {
        out.push("the keys fit neither the window nor the session key schema".into());
    }
    if report.short_timestamped_values > 0 {
        out.push(format!(
            "{} values in {} are shorter than their 8-byte timestamp",
            report.short_timestamped_values,
            names::TIMESTAMPED
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_and_key_schemas() {
        assert_eq!(segment_start("w", "w.1576800000000"), Some(1576800000000));
        assert_eq!(segment_start("w", "w:60000"), Some(60000));
        assert_eq!(segment_start("w", ".w.60000.kstate-lock"), None);
        assert_eq!(segment_start("w", "w.6x"), None);
        assert_eq!(segment_start("w", "w."), None);
        assert_eq!(segment_start("w", "ww.5"), None);
        let mut window_key = b"k".to_vec();
        window_key.extend_from_slice(&120_000i64.to_be_bytes());
        window_key.extend_from_slice(&3i32.to_be_bytes());
        assert_eq!(window_time(&window_key), Some(120_000));
        let mut session_key = b"k".to_vec();
        session_key.extend_from_slice(&200i64.to_be_bytes());
        session_key.extend_from_slice(&100i64.to_be_bytes());
        assert_eq!(session_time(&session_key), Some(200));
        assert_eq!(session_time(&window_key[..12]), None);
        assert_eq!(gcd(120_000, 180_000), 60_000);
    }
}
