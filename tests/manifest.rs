//! A RocksDB MANIFEST damaged in its middle: a store must open at a whole commit with that
//! commit's offset, or refuse with `CORRUPTION`; never data and offset of different
//! commits, never committed data silently lost at a newer offset.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kstate::{ErrorCode, KeyRange, KvStore, StoreOptions, TopicPartition};

type State = BTreeMap<Vec<u8>, Vec<u8>>;

const ROUNDS: i64 = 8;

fn tp() -> TopicPartition {
    TopicPartition::new("manifest-changelog", 0)
}

fn value(round: i64, i: i64) -> Vec<u8> {
    kstate::format::value::encode(
        format!("{round}-{i}-{}", "x".repeat(1000)).as_bytes(),
        round,
    )
}

/// The committed state after `round` (round 0: the empty store).
fn model(round: i64) -> State {
    let mut s = State::new();
    for r in 1..=round {
        for i in 0..40 {
            s.insert(format!("k{i:03}").into_bytes(), value(r, i));
            s.insert(format!("r{r:02}-{i:03}").into_bytes(), value(r, i));
        }
    }
    s
}

/// A store with `ROUNDS` commits in one session, each followed by a flush (and, with
/// `compact`, a full compaction that deletes the table files of the flushes before it),
/// so that its MANIFEST holds a record per flush, per compaction and per WAL change.
fn build(path: &Path, compact: bool) {
    let mut options = StoreOptions::default();
    options.rocksdb.write_buffer_bytes = 64 << 10;
    let store = KvStore::open(path, &options).unwrap();
    for r in 1..=ROUNDS {
        for (k, v) in model(r)
            .into_iter()
            .filter(|(k, _)| k.starts_with(format!("r{r:02}-").as_bytes()) || k.starts_with(b"k"))
        {
            store.put_raw(&k, Some(&v)).unwrap();
        }
        store.commit(&[(tp(), Some(r))], None).unwrap();
        if compact {
            store.compact().unwrap();
        }
    }
    store.close().unwrap();
}

fn manifest(path: &Path) -> PathBuf {
    let current = std::fs::read_to_string(path.join("CURRENT")).unwrap();
    path.join(current.trim())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// What opening the damaged copy gives: its offset and data, or the error code.
fn outcome(path: &Path) -> Result<(Option<i64>, State), ErrorCode> {
    let store = KvStore::open(path, &StoreOptions::default()).map_err(|e| e.code())?;
    let offset = store.committed_offset(&tp()).unwrap();
    let mut state = State::new();
    for e in store
        .scan(kstate::Isolation::ReadCommitted, &KeyRange::all(), false)
        .unwrap()
    {
        let (k, v) = e.unwrap();
        state.insert(k, v);
    }
    store.close().unwrap();
    Ok((offset, state))
}

fn sweep(compact: bool) {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine");
    build(&pristine, compact);
    let len = std::fs::metadata(manifest(&pristine)).unwrap().len() as usize;
    let (mut refused, mut opened) = (0, Vec::new());
    let step = (len / 60).max(1);
    for pos in (0..len).step_by(step) {
        for truncate in [false, true] {
            let copy = dir.path().join(format!("c{pos}-{truncate}"));
            copy_dir(&pristine, &copy);
            let m = manifest(&copy);
            let mut bytes = std::fs::read(&m).unwrap();
            if truncate {
                bytes.truncate(pos);
            } else {
                bytes[pos] ^= 0x5A;
            }
            std::fs::write(&m, &bytes).unwrap();
            let what = if truncate { "truncated" } else { "flipped" };
            match outcome(&copy) {
                Err(code) => {
                    assert_eq!(code, ErrorCode::Corruption, "{what} at {pos}");
                    refused += 1;
                }
                Ok((offset, state)) => {
                    // A whole commit with its own offset; never the empty store with no
                    // offset that a MANIFEST cut after its column-family records used to
                    // open as (its open deletes the table files the MANIFEST lost).
                    assert!(
                        offset.is_some(),
                        "{what} at {pos} of {len}: opened as an empty store with no offset"
                    );
                    assert!(
                        state == model(offset.unwrap_or(0)),
                        "{what} at {pos} of {len}: opened at offset {offset:?} with {} \
                         entries, not that commit's",
                        state.len()
                    );
                    opened.push((pos, truncate, offset));
                }
            }
            std::fs::remove_dir_all(&copy).unwrap();
        }
    }
    // What RocksDB cannot tell from a shorter MANIFEST, kstate's record of the WALs each
    // open found catches: most damages are refused.
    assert!(
        refused > opened.len(),
        "refused {refused}, opened {opened:?}"
    );
    eprintln!(
        "compact={compact}: MANIFEST of {len} bytes, {refused} damages refused, opened: {opened:?}"
    );
}

/// Flushes only (small memtables): the MANIFEST holds a record per flush and WAL switch.
#[test]
fn a_manifest_damaged_in_its_middle_flushes() {
    sweep(false);
}

/// A full compaction after each commit: older table files are deleted as it goes.
#[test]
fn a_manifest_damaged_in_its_middle_compactions() {
    sweep(true);
}
