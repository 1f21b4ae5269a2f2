//! Read-only examination of a store on disk (`kstate inspect` and `kstate verify`). Opens
//! RocksDB read-only, so it changes nothing, takes no lock and works beside a live writer.

use std::path::{Path, PathBuf};

use crate::engine::rocksdb::{RocksEngine, RocksOptions};
use crate::engine::{Engine, Family, KeyRange};
use crate::format::meta::{self, CommittedState, StoreHeader};
use crate::format::{self, value, ValueFormat};
use crate::txn::spill;
use crate::Result;

/// What `kstate inspect` shows.
#[derive(Debug, Clone)]
pub struct StoreReport {
    /// Store directory.
    pub path: PathBuf,
    /// The kstate header, or `None` for a Kafka Streams store kstate never opened.
    pub header: Option<StoreHeader>,
    /// Column families with their exact entry counts.
    pub families: Vec<(String, u64)>,
    /// The last completed commit.
    pub committed: Option<CommittedState>,
    /// A spilled commit past its commit point but not yet rolled forward.
    pub pending: Option<CommittedState>,
    /// Whether the last session closed the store cleanly (`None`: never opened by kstate).
    pub last_close_clean: Option<bool>,
}

/// What `kstate verify` found.
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    /// Records examined.
    pub records_checked: u64,
    /// Problems, one line each; empty when the store is sound.
    pub problems: Vec<String>,
    /// Observations that are not problems (for instance leftovers recovery will discard).
    pub notes: Vec<String>,
}

fn family_of(name: &str) -> Option<Family> {
    Family::ALL.into_iter().find(|f| f.cf_name() == name)
}

fn count(engine: &RocksEngine, family: Family) -> Result<u64> {
    let mut it = engine.iter(family, &KeyRange::all(), false)?;
    let mut n = 0;
    while it.next_entry()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// Describes the store at `path`.
///
/// # Errors
/// [`crate::Error::NotAStore`] when there is no database; decoding errors of the header
/// and commit records ([`crate::Error::Corruption`], [`crate::Error::UnsupportedFormat`]).
pub fn inspect(path: &Path) -> Result<StoreReport> {
    let engine = RocksEngine::open_read_only(path, &RocksOptions::default())?;
    let mut families = Vec::new();
    for name in engine.family_names() {
        let n = match family_of(&name) {
            Some(f) => count(&engine, f)?,
            None => 0,
        };
        families.push((name, n));
    }
    let meta_record = |key: &[u8]| -> Result<Option<Vec<u8>>> {
        if engine.has_family(Family::Meta) {
            engine.get(Family::Meta, key)
        } else {
            Ok(None)
        }
    };
    let header = meta_record(meta::KEY_HEADER)?
        .map(|r| StoreHeader::decode(&r))
        .transpose()?;
    let committed = meta_record(meta::KEY_COMMITTED)?
        .map(|r| CommittedState::decode(&r))
        .transpose()?;
    let pending = meta_record(meta::KEY_PENDING)?
        .map(|r| CommittedState::decode(&r))
        .transpose()?;
    let last_close_clean = meta_record(meta::KEY_STATUS)?
        .map(|r| meta::decode_status(&r))
        .transpose()?;
    Ok(StoreReport {
        path: path.to_path_buf(),
        header,
        families,
        committed,
        pending,
        last_close_clean,
    })
}

/// Checks every record's layout in the store at `path`.
///
/// # Errors
/// Only when the store cannot be opened or read at all; everything found wrong inside it
/// goes into [`VerifyReport::problems`].
pub fn verify(path: &Path) -> Result<VerifyReport> {
    let engine = RocksEngine::open_read_only(path, &RocksOptions::default())?;
    let mut report = VerifyReport::default();
    let header = if engine.has_family(Family::Meta) {
        match engine.get(Family::Meta, meta::KEY_HEADER)? {
            Some(raw) => match StoreHeader::decode(&raw) {
                Ok(h) => Some(h),
                Err(e) => {
                    report.problems.push(format!("meta/header: {e}"));
                    None
                }
            },
            None => {
                report.problems.push("meta/header: missing".into());
                None
            }
        }
    } else {
        report
            .notes
            .push("no kstate metadata: a Kafka Streams store kstate has not opened yet".into());
        None
    };
    let timestamped_data = match header.map(|h| h.value_format) {
        Some(ValueFormat::Plain) => false,
        // Kafka's own timestamped stores keep timestamped values in that family too.
        _ => true,
    };
    let mut pending = false;
    for family in Family::ALL {
        if !engine.has_family(family) {
            continue;
        }
        let mut it = engine.iter(family, &KeyRange::all(), false)?;
        let mut spill_entries = 0u64;
        while let Some((k, v)) = it.next_entry()? {
            report.records_checked += 1;
            let shown = String::from_utf8_lossy(&k[..k.len().min(40)]).into_owned();
            let mut problem = |what: String| {
                report
                    .problems
                    .push(format!("{}/{shown:?}: {what}", family.cf_name()))
            };
            match family {
                Family::Timestamped | Family::Plain => {
                    if let Err(e) = format::check_key(&k) {
                        problem(e.to_string());
                    }
                    if let Err(e) = format::check_value(&v) {
                        problem(e.to_string());
                    }
                    if family == Family::Timestamped && timestamped_data {
                        if let Err(e) = value::split(&v) {
                            problem(e.to_string());
                        }
                    }
                    if family == Family::Plain
                        && header.map(|h| h.value_format) == Some(ValueFormat::Timestamped)
                    {
                        problem(
                            "plain value in the default family of a timestamped kstate store"
                                .into(),
                        );
                    }
                }
                Family::Meta => {
                    let result = match k.as_slice() {
                        meta::KEY_HEADER => Ok(()),
                        meta::KEY_COMMITTED => CommittedState::decode(&v).map(drop),
                        meta::KEY_PENDING => {
                            pending = true;
                            CommittedState::decode(&v).map(drop)
                        }
                        meta::KEY_STATUS => meta::decode_status(&v).map(drop),
                        _ => Err(crate::Error::Corruption("unknown metadata record".into())),
                    };
                    if let Err(e) = result {
                        problem(e.to_string());
                    }
                }
                Family::Spill => {
                    spill_entries += 1;
                    if let Err(e) = spill::user_key(&k).and_then(|_| spill::decode_write(&v)) {
                        problem(e.to_string());
                    }
                }
            }
        }
        if spill_entries > 0 {
            report.notes.push(if pending {
                format!("{spill_entries} spilled writes of a committed transaction: the next open completes it")
            } else {
                format!("{spill_entries} spilled writes of an uncommitted transaction: the next open discards them")
            });
        }
    }
    Ok(report)
}
