//! Store directories as `kstate inspect` and `kstate verify` (the CLI) meet them: a RocksDB
//! database whose column families and records come from the input (kstate's metadata
//! records well formed or damaged, values of each format, Kafka's `offsets` family, spilled
//! writes), written with RocksDB itself in a temporary directory.
//!
//! Properties:
//! * `verify` reports exactly one problem per malformed record and none for a well-formed
//!   one, for every kind of record kstate writes (a model decides with the record's own
//!   decoder or layout rule);
//! * `inspect` fails exactly when a record it decodes is malformed, and otherwise shows the
//!   decoded header, commit, pending commit and status;
//! * neither changes the directory in any way (the two-way door of DESIGN.md §3: not a
//!   file, not even RocksDB's `LOG`), checked file by file, byte by byte.
#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kstate::format::meta::{
    self, CommittedState, PendingCommit, PendingIngest, StoreHeader, StoreKind,
};
use kstate::format::{headers, value, ValueFormat};
use kstate::fuzz_api;
use kstate::store::inspect::{inspect, verify};
use kstate_fuzz::arbitrary::{Result, Unstructured};
use kstate_fuzz::bytes;
use libfuzzer_sys::fuzz_target;

const META: &str = "kstate_meta";
const SPILL: &str = "kstate_spill";
const PLAIN: &str = "default";
const TIMESTAMPED: &str = "keyValueWithTimestamp";
const HEADERS: &str = "keyValueWithTimestampAndHeaders";
const OFFSETS: &str = "offsets";

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(layout) = Layout::arbitrary(&mut u) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("kstate-fuzz-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    layout.write(&dir);
    let before = snapshot(&dir);
    check_verify(&layout, &dir);
    check_inspect(&layout, &dir);
    assert!(
        before == snapshot(&dir),
        "inspect or verify changed the directory"
    );
    let _ = std::fs::remove_dir_all(&dir);
});

/// Records of one family, in write order.
type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// The families of the database and their records.
struct Layout {
    families: BTreeMap<&'static str, Records>,
}

/// A well-formed metadata record of `key`, or arbitrary bytes.
fn meta_record(u: &mut Unstructured<'_>, key: &[u8]) -> Result<Vec<u8>> {
    if u.ratio(1, 4)? {
        return bytes(u, 24);
    }
    let state = CommittedState {
        sequence: u.int_in_range(0..=9)?,
        offsets: [(kstate::TopicPartition::new("in", u.int_in_range(0..=2)?), 5)].into(),
        metadata: if u.arbitrary()? {
            Some(bytes(u, 4)?)
        } else {
            None
        },
        stream_time: if u.arbitrary()? {
            Some(u.arbitrary()?)
        } else {
            None
        },
    };
    Ok(match key {
        meta::KEY_HEADER => {
            let format = *u.choose(&[
                ValueFormat::Plain,
                ValueFormat::Timestamped,
                ValueFormat::Headers,
            ])?;
            StoreHeader::new(format, StoreKind::KeyValue).encode()
        }
        meta::KEY_COMMITTED => state.encode().unwrap(),
        meta::KEY_PENDING => PendingCommit {
            txn: u.int_in_range(0..=3)?,
            families: vec![TIMESTAMPED.into()],
            ranges: vec![],
            state,
        }
        .encode()
        .unwrap(),
        meta::KEY_INGEST => PendingIngest {
            family: TIMESTAMPED.into(),
            file: "kstate-restore-1.sst".into(),
            state,
        }
        .encode()
        .unwrap(),
        _ => meta::encode_status(u.arbitrary()?),
    })
}

impl Layout {
    fn arbitrary(u: &mut Unstructured<'_>) -> Result<Self> {
        let mut families: BTreeMap<&'static str, Records> = BTreeMap::new();
        families.insert(PLAIN, Vec::new());
        if u.ratio(3, 4)? {
            let mut records = Vec::new();
            for key in [
                meta::KEY_HEADER,
                meta::KEY_COMMITTED,
                meta::KEY_PENDING,
                meta::KEY_STATUS,
                meta::KEY_INGEST,
            ] {
                if u.ratio(2, 3)? {
                    records.push((key.to_vec(), meta_record(u, key)?));
                }
            }
            if u.ratio(1, 8)? {
                records.push((b"unknown".to_vec(), bytes(u, 4)?));
            }
            families.insert(META, records);
        }
        for family in [PLAIN, TIMESTAMPED, HEADERS, OFFSETS, SPILL] {
            if family != PLAIN && u.ratio(1, 2)? {
                continue;
            }
            let records = families.entry(family).or_default();
            for _ in 0..u.int_in_range(0..=3)? {
                let key = match family {
                    SPILL if u.ratio(3, 4)? => [
                        &[2u8][..],
                        &u.int_in_range(0u64..=3)?.to_be_bytes(),
                        &[0],
                        b"k",
                    ]
                    .concat(),
                    _ => bytes(u, 6)?,
                };
                let value = match (family, u.ratio(3, 4)?) {
                    (TIMESTAMPED, true) => value::encode(&bytes(u, 4)?, u.arbitrary()?),
                    (HEADERS, true) => headers::encode(&bytes(u, 4)?, u.arbitrary()?, &[]).unwrap(),
                    (SPILL, true) => fuzz_api::spill_encode_write(Some(b"v")),
                    _ => bytes(u, 12)?,
                };
                records.push((key, value));
            }
        }
        Ok(Layout { families })
    }

    fn write(&self, dir: &Path) {
        let mut options = rocksdb::Options::default();
        options.create_if_missing(true);
        options.create_missing_column_families(true);
        let names: Vec<&str> = self.families.keys().copied().collect();
        let db = rocksdb::DB::open_cf(&options, dir, &names).unwrap();
        for (family, records) in &self.families {
            let cf = db.cf_handle(family).unwrap();
            for (k, v) in records {
                db.put_cf(&cf, k, v).unwrap();
            }
        }
    }

    /// The records of `family` as the database holds them: sorted, last write wins.
    fn records(&self, family: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
        self.families
            .get(family)
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn meta(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.records(META).get(key).cloned()
    }
}

/// Every file under `dir` with its contents.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(snapshot(&path));
        } else {
            out.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    out
}

/// The number of problems `verify` must report.
fn expected_problems(layout: &Layout) -> usize {
    let mut problems = 0;
    let mut header = None;
    if layout.families.contains_key(META) {
        match layout
            .meta(meta::KEY_HEADER)
            .map(|r| StoreHeader::decode(&r))
        {
            Some(Ok(h)) => header = Some(h),
            _ => problems += 1,
        }
        for (k, v) in layout.records(META) {
            let ok = match k.as_slice() {
                meta::KEY_HEADER => true,
                meta::KEY_COMMITTED => CommittedState::decode(&v).is_ok(),
                meta::KEY_PENDING => PendingCommit::decode(&v).is_ok(),
                meta::KEY_STATUS => meta::decode_status(&v).is_ok(),
                meta::KEY_INGEST => PendingIngest::decode(&v).is_ok(),
                _ => false,
            };
            problems += usize::from(!ok);
        }
    }
    let timestamped = header.is_none_or(|h| h.value_format != ValueFormat::Plain);
    problems += layout
        .records(TIMESTAMPED)
        .values()
        .filter(|v| timestamped && v.len() < 8)
        .count();
    problems += layout
        .records(HEADERS)
        .values()
        .filter(|v| headers::check(v).is_err())
        .count();
    problems += layout
        .records(SPILL)
        .iter()
        .filter(|(k, v)| {
            fuzz_api::spill_parse_key(k).is_err() || fuzz_api::spill_decode_write(v).is_err()
        })
        .count();
    problems
}

fn check_verify(layout: &Layout, dir: &Path) {
    let report = verify(dir).expect("a readable database verifies");
    assert_eq!(
        report.problems.len(),
        expected_problems(layout),
        "problems: {:?}",
        report.problems
    );
    let records: usize = layout
        .families
        .keys()
        .map(|f| layout.records(f).len())
        .sum();
    assert_eq!(
        report.records_checked as usize, records,
        "every record is checked"
    );
}

fn check_inspect(layout: &Layout, dir: &Path) {
    let decoded = |key: &[u8]| layout.meta(key);
    let header = decoded(meta::KEY_HEADER).map(|r| StoreHeader::decode(&r));
    let committed = decoded(meta::KEY_COMMITTED).map(|r| CommittedState::decode(&r));
    let pending = decoded(meta::KEY_PENDING).map(|r| PendingCommit::decode(&r));
    let status = decoded(meta::KEY_STATUS).map(|r| meta::decode_status(&r));
    let report = inspect(dir);
    let broken = header.as_ref().is_some_and(|r| r.is_err())
        || committed.as_ref().is_some_and(|r| r.is_err())
        || pending.as_ref().is_some_and(|r| r.is_err())
        || status.as_ref().is_some_and(|r| r.is_err());
    match report {
        Err(e) => assert!(broken, "inspect failed on sound records: {e}"),
        Ok(r) => {
            assert!(!broken, "inspect accepted a malformed record");
            assert_eq!(r.header, header.map(|h| h.unwrap()));
            assert_eq!(r.committed, committed.map(|c| c.unwrap()));
            assert_eq!(r.pending, pending.map(|p| p.unwrap()));
            assert_eq!(r.last_close_clean, status.map(|s| s.unwrap()));
            for f in &r.families {
                assert_eq!(
                    f.entries as usize,
                    layout.records(&f.name).len(),
                    "{}",
                    f.name
                );
            }
        }
    }
}
