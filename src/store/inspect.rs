//! Read-only examination of a store on disk (`kstate inspect` and `kstate verify`). Opens
//! RocksDB read-only, so it changes nothing (no file, not even RocksDB's `LOG`), takes no
//! lock and works beside a live writer.

use std::path::{Path, PathBuf};

use crate::engine::rocksdb::{lock_holder, RocksEngine, RocksOptions};
use crate::engine::{names, Engine, Family, KeyRange};
use crate::format::meta::{self, CommittedState, PendingCommit, PendingIngest, StoreHeader};
use crate::format::{self, value, ValueFormat};
use crate::store::kafka_versioned;
use crate::txn::spill;
use crate::Result;

/// What `kstate inspect` shows.
#[derive(Debug, Clone)]
pub struct StoreReport {
    /// Store directory.
    pub path: PathBuf,
    /// The process that has the store open for writing (holds RocksDB's `LOCK`), if one
    /// does and it can be told.
    pub writer_pid: Option<i32>,
    /// The kstate header, or `None` for a Kafka Streams store kstate never opened.
    pub header: Option<StoreHeader>,
    /// Every column family: its name, exact entry count and what it holds.
    pub families: Vec<FamilyReport>,
    /// The last completed commit.
    pub committed: Option<CommittedState>,
    /// A spilled commit past its commit point but not yet rolled forward.
    pub pending: Option<PendingCommit>,
    /// Whether the last session closed the store cleanly (`None`: never opened by kstate).
    pub last_close_clean: Option<bool>,
    /// Values of an older format the store still reads from [`StoreReport::upgrade_family`]
    /// (upgrade mode: plain values of a timestamped store, KIP-258; plain or timestamped
    /// values of a headers-format store, KIP-1271); 0 in regular mode.
    pub values_to_upgrade: u64,
    /// In upgrade mode, the column family of the older format (`default` or
    /// `keyValueWithTimestamp`); `None` in regular mode.
    pub upgrade_family: Option<String>,
    /// A Kafka Streams versioned key-value store (`RocksDBVersionedStore`): its families are
    /// a plain store's, its data is not; kstate neither converts nor adopts it.
    pub kafka_versioned: bool,
}

/// One column family as `kstate inspect` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyReport {
    /// Column-family name.
    pub name: String,
    /// Exact number of entries.
    pub entries: u64,
    /// What the family holds, or that kstate does not know it.
    pub role: &'static str,
}

/// What a column family of this name holds in a kstate or Kafka Streams store; `None` when
/// kstate does not know the name.
pub fn family_role(name: &str) -> Option<&'static str> {
    Some(match name {
        names::PLAIN => "plain values (Kafka's RocksDBStore)",
        names::TIMESTAMPED => "timestamped values (Kafka's RocksDBTimestampedStore)",
        names::HEADERS => {
            "timestamped values with headers (KIP-1271: Kafka 4.3+ \
             RocksDBTimestampedStoreWithHeaders, kstate's headers format)"
        }
        names::KAFKA_OFFSETS => "Kafka 4.3+ changelog offsets, position and status",
        names::META => "kstate metadata: header, committed offsets, status",
        names::SPILL => "kstate staging area for large uncommitted transactions",
        super::WINDOW_FAMILY => "kstate window store: [segment][Kafka window key] -> value",
        super::SESSION_FAMILY => "kstate session store: [segment][Kafka session key] -> aggregate",
        super::segmented::WINDOW_BY_TIME_FAMILY => {
            "kstate time-ordered window store's time index: [segment][start, key, seqnum] -> value"
        }
        super::segmented::SESSION_BY_TIME_FAMILY => {
            "kstate time-ordered session store's time index: [segment][end, start, key] -> aggregate"
        }
        _ => return None,
    })
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

fn count(engine: &RocksEngine, family: Family) -> Result<u64> {
    let mut it = engine.iter(family, &KeyRange::all(), false)?;
    let mut n = 0;
    while it.next_entry()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// Every column family of `engine` with its exact entry count and role.
pub(crate) fn count_families(engine: &RocksEngine) -> Result<Vec<FamilyReport>> {
    let mut families = Vec::new();
    for (index, name) in engine.registry().names().iter().enumerate() {
        families.push(FamilyReport {
            name: name.clone(),
            entries: count(engine, Family::at(index)?)?,
            role: family_role(name).unwrap_or("unknown to kstate: not understood"),
        });
    }
    Ok(families)
}

/// Describes the store at `path`.
///
/// # Errors
/// [`crate::Error::NotAStore`] when there is no database; decoding errors of the header
/// and commit records ([`crate::Error::Corruption`], [`crate::Error::UnsupportedFormat`]).
pub fn inspect(path: &Path) -> Result<StoreReport> {
    let engine = RocksEngine::open_read_only(path, &RocksOptions::default())?;
    let families = count_families(&engine)?;
    let meta_family = engine.registry().find(names::META);
    let meta_record = |key: &[u8]| -> Result<Option<Vec<u8>>> {
        match meta_family {
            Some(f) => engine.get(f, key),
            None => Ok(None),
        }
    };
    let header = meta_record(meta::KEY_HEADER)?
        .map(|r| StoreHeader::decode(&r))
        .transpose()?;
    let committed = meta_record(meta::KEY_COMMITTED)?
        .map(|r| CommittedState::decode(&r))
        .transpose()?;
    let pending = meta_record(meta::KEY_PENDING)?
        .map(|r| PendingCommit::decode(&r))
        .transpose()?;
    let last_close_clean = meta_record(meta::KEY_STATUS)?
        .map(|r| meta::decode_status(&r))
        .transpose()?;
    // The older families a store of this format reads in upgrade mode, as the store does
    // (at most one of them holds values in a store that opens).
    let older: &[&str] = match header.map(|h| h.value_format) {
        Some(ValueFormat::Timestamped) => &[names::PLAIN],
        Some(ValueFormat::Headers) => &[names::PLAIN, names::TIMESTAMPED],
        _ => &[],
    };
    let upgrading = families
        .iter()
        .find(|f| older.contains(&f.name.as_str()) && f.entries > 0);
    let kafka_versioned = match (header, engine.registry().find(names::PLAIN)) {
        (None, Some(plain)) => kafka_versioned::looks_versioned(&engine, plain)?,
        _ => false,
    };
    Ok(StoreReport {
        kafka_versioned,
        values_to_upgrade: upgrading.map_or(0, |f| f.entries),
        upgrade_family: upgrading.map(|f| f.name.clone()),
        path: path.to_path_buf(),
        // Unknown (a `LOCK` this user cannot read) is no reason to fail a read-only report.
        writer_pid: lock_holder(path).ok().flatten(),
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
    let registry = engine.registry().clone();
    let header = if let Some(meta_family) = registry.find(names::META) {
        match engine.get(meta_family, meta::KEY_HEADER)? {
            Some(raw) => match StoreHeader::decode(&raw) {
                Ok(h) => Some(h),
                Err(e) => {
                    report.problems.push(format!("{}/header: {e}", names::META));
                    None
                }
            },
            None => {
                report
                    .problems
                    .push(format!("{}/header: missing", names::META));
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
    let mut pending_txn = None;
    let mut ingest_file = None;
    let mut spill_entries = 0u64;
    let mut pending_entries = 0u64;
    // Metadata first, so that spilled writes can be matched against a pending commit.
    let mut order: Vec<usize> = (0..registry.len()).collect();
    order.sort_by_key(|&i| registry.names()[i] != names::META);
    for index in order {
        let family = Family::at(index)?;
        let name = registry.name(family).to_string();
        if family_role(&name).is_none() {
            report.notes.push(format!(
                "column family {name:?} ({} entries) is unknown to kstate: not understood, not checked",
                count(&engine, family)?
            ));
            continue;
        }
        let mut it = engine.iter(family, &KeyRange::all(), false)?;
        while let Some((k, v)) = it.next_entry()? {
            report.records_checked += 1;
            let shown = String::from_utf8_lossy(&k[..k.len().min(40)]).into_owned();
            let mut problem =
                |what: String| report.problems.push(format!("{name}/{shown:?}: {what}"));
            match name.as_str() {
                names::TIMESTAMPED | names::PLAIN => {
                    if let Err(e) = format::check_key(&k) {
                        problem(e.to_string());
                    }
                    if let Err(e) = format::check_value(&v) {
                        problem(e.to_string());
                    }
                    if name == names::TIMESTAMPED && timestamped_data {
                        if let Err(e) = value::split(&v) {
                            problem(e.to_string());
                        }
                    }
                }
                names::HEADERS => {
                    if let Err(e) = format::check_key(&k)
                        .and_then(|()| format::check_value(&v))
                        .and_then(|()| format::headers::check(&v))
                    {
                        problem(e.to_string());
                    }
                }
                names::META => {
                    let result = match k.as_slice() {
                        meta::KEY_HEADER => Ok(()),
                        meta::KEY_COMMITTED => CommittedState::decode(&v).map(drop),
                        meta::KEY_PENDING => PendingCommit::decode(&v).map(|p| {
                            pending_txn = Some(p.txn);
                        }),
                        meta::KEY_STATUS => meta::decode_status(&v).map(drop),
                        meta::KEY_LOGS => meta::decode_logs(&v).map(drop),
                        meta::KEY_KAFKA_INDEX => meta::decode_kafka_index(&v).map(drop),
                        meta::KEY_KAFKA_HEADERS => meta::decode_kafka_headers(&v).map(drop),
                        meta::KEY_INGEST => PendingIngest::decode(&v).map(|p| {
                            ingest_file = Some(p.file);
                        }),
                        _ => Err(crate::Error::Corruption("unknown metadata record".into())),
                    };
                    if let Err(e) = result {
                        problem(e.to_string());
                    }
                }
                names::SPILL => {
                    spill_entries += 1;
                    match spill::parse_key(&k)
                        .and_then(|(txn, ..)| spill::decode_write(&v).map(|_| txn))
                    {
                        Ok(txn) if Some(txn) == pending_txn => pending_entries += 1,
                        Ok(_) => {}
                        Err(e) => problem(e.to_string()),
                    }
                }
                // Kafka's offsets family: counted by inspect, not decoded here.
                _ => {}
            }
        }
    }
    if let Some(file) = ingest_file {
        report.notes.push(format!(
            "a restore file ({file}) was being ingested: the next open completes its commit"
        ));
    }
    if pending_entries > 0 {
        report.notes.push(format!(
            "{pending_entries} spilled writes of a committed transaction: the next open completes it"
        ));
    }
    if spill_entries > pending_entries {
        report.notes.push(format!(
            "{} spilled writes of uncommitted transactions: the next open discards them",
            spill_entries - pending_entries
        ));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KvStore, StoreOptions};

    /// Found by the `store_dir` fuzz target: a store killed while a restore file was being
    /// ingested keeps its `ingest` record, which `verify` reported as an unknown metadata
    /// record (exit 1) although the next open completes the ingestion.
    #[test]
    fn verify_reads_a_pending_ingest_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let store = KvStore::open(&path, &StoreOptions::default()).unwrap();
        store.put(b"k", b"v", 1).unwrap();
        store.commit(&[], None).unwrap();
        store.close().unwrap();
        let put_ingest = |raw: &[u8]| {
            let cfs = rocksdb::DB::list_cf(&rocksdb::Options::default(), &path).unwrap();
            let db = rocksdb::DB::open_cf(&rocksdb::Options::default(), &path, &cfs).unwrap();
            db.put_cf(db.cf_handle(names::META).unwrap(), meta::KEY_INGEST, raw)
                .unwrap();
        };
        let ingest = PendingIngest {
            family: names::TIMESTAMPED.into(),
            file: "kstate-restore-1.sst".into(),
            state: CommittedState {
                sequence: 2,
                ..CommittedState::default()
            },
        };
        put_ingest(&ingest.encode().unwrap());
        let report = verify(&path).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.contains("kstate-restore-1.sst")),
            "{:?}",
            report.notes
        );

        put_ingest(b"\x01damaged");
        let report = verify(&path).unwrap();
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert!(
            report.problems[0].starts_with("kstate_meta/\"ingest\": corruption"),
            "{:?}",
            report.problems
        );
    }
}
