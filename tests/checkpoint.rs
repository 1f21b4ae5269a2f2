//! Checkpoints of committed state (`checkpoint(dir)` on every store kind): taken while
//! another thread keeps writing, spilling, rolling back and committing, each checkpoint must
//! open as a store of the same kind holding exactly the model state of the commit it
//! reports (never a partial or uncommitted one), with that commit's offsets, at least the
//! commit the source had when the checkpoint was called, and nothing to roll forward.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kstate::store::{SessionOptions, WindowOptions};

use kstate::{
    CheckpointInfo, EngineKind, ErrorCode, KvStore, RecoveryReport, SessionStore, StoreOptions,
    TopicPartition, VersionedOptions, VersionedStore, WindowStore,
};

// The workload's generator is shared source, not library API: each user compiles its own copy.
#[allow(dead_code)]
#[path = "support/workload.rs"]
mod workload;
use workload::Rng;

const KEYS: u32 = 64;
const DAY: i64 = 86_400_000;

fn tp() -> TopicPartition {
    TopicPartition::new("changelog", 0)
}

fn key(k: u32) -> Vec<u8> {
    format!("key-{k:03}").into_bytes()
}

/// What the test needs of one store kind.
struct Kind<S> {
    open: fn(&Path) -> S,
    /// Writes `value` (None deletes) at record time `ts`.
    write: fn(&S, u32, Option<&[u8]>, i64),
    read: fn(&S, u32) -> Option<Vec<u8>>,
    commit: fn(&S, i64),
    rollback: fn(&S),
    sequence: fn(&S) -> u64,
    offsets: fn(&S) -> Vec<(TopicPartition, i64)>,
    checkpoint: fn(&S, &Path) -> kstate::Result<CheckpointInfo>,
    recovery: fn(&S) -> RecoveryReport,
    close: fn(&S),
}

fn store_options() -> StoreOptions {
    StoreOptions {
        // Small, so that the larger transactions spill and commit by rolling forward.
        max_uncommitted_bytes: 32 << 10,
        ..StoreOptions::default()
    }
}

type Model = BTreeMap<u32, Vec<u8>>;

/// Committed states by commit sequence, with their offset.
type Models = Arc<Mutex<HashMap<u64, (Model, Option<i64>)>>>;

/// Runs a writer thread (random writes, rollbacks, commits with increasing offsets, some
/// transactions large enough to spill) against a model, takes checkpoints meanwhile and
/// checks each one against the model of the commit it reports.
fn checkpoints_while_writing<S: Send + Sync + 'static>(kind: Kind<S>, seed: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new((kind.open)(&tmp.path().join("store")));
    // Committed states by sequence (the empty store is sequence 0).
    let models: Models = Arc::new(Mutex::new(HashMap::from([(
        (kind.sequence)(&store),
        (Model::new(), None),
    )])));
    let done = Arc::new(AtomicBool::new(false));
    // The writer goes on until this many checkpoints were taken while it wrote.
    let checkpoints = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (store, models, done) = (Arc::clone(&store), Arc::clone(&models), Arc::clone(&done));
        let checkpoints = Arc::clone(&checkpoints);
        let (write, commit, rollback, sequence) =
            (kind.write, kind.commit, kind.rollback, kind.sequence);
        std::thread::spawn(move || {
            let mut rng = Rng::new(seed);
            let mut committed = Model::new();
            let mut ts = 1;
            let mut round = 0i64;
            while round < 300 || checkpoints.load(Ordering::SeqCst) < 8 {
                round += 1;
                let mut txn = committed.clone();
                let writes = if rng.below(8) == 0 {
                    120
                } else {
                    rng.below(12) + 1
                };
                for _ in 0..writes {
                    let k = rng.below(u64::from(KEYS)) as u32;
                    ts += 1;
                    if rng.below(5) == 0 {
                        write(&store, k, None, ts);
                        txn.remove(&k);
                    } else {
                        let value = format!("{k}-{round}-{ts}").repeat(30).into_bytes();
                        write(&store, k, Some(&value), ts);
                        txn.insert(k, value);
                    }
                }
                if rng.below(10) == 0 {
                    rollback(&store);
                    continue;
                }
                commit(&store, round);
                committed = txn;
                models
                    .lock()
                    .unwrap()
                    .insert(sequence(&store), (committed.clone(), Some(round)));
            }
            // Uncommitted writes left at the end must not reach any checkpoint either.
            write(&store, 0, Some(b"never committed"), ts + 1);
            done.store(true, Ordering::SeqCst);
        })
    };
    let mut taken = Vec::new();
    let mut n = 0;
    while !done.load(Ordering::SeqCst) || taken.len() < 3 {
        let before = (kind.sequence)(&store);
        let dir = tmp.path().join(format!("checkpoint-{n}"));
        n += 1;
        let info = (kind.checkpoint)(&store, &dir).unwrap();
        assert!(
            info.sequence >= before,
            "checkpoint holds commit {} but the store had {before}",
            info.sequence
        );
        assert_eq!(info.path, dir);
        taken.push(info);
        checkpoints.fetch_add(1, Ordering::SeqCst);
    }
    writer.join().unwrap();
    assert!(taken.len() >= 8);
    let models = models.lock().unwrap();
    for info in &taken {
        let (model, offset) = models
            .get(&info.sequence)
            .unwrap_or_else(|| panic!("no commit with sequence {}", info.sequence));
        let expected_offsets: Vec<(TopicPartition, i64)> =
            offset.iter().map(|&o| (tp(), o)).collect();
        assert_eq!(info.offsets, expected_offsets);
        assert!(!info.files.is_empty());
        assert!(info.files.iter().any(|f| f.name == "CURRENT"));
        let on_disk: u64 = info
            .files
            .iter()
            .map(|f| std::fs::metadata(info.path.join(&f.name)).unwrap().len())
            .sum();
        assert_eq!(info.total_bytes(), on_disk);
        let copy = (kind.open)(&info.path);
        let report = (kind.recovery)(&copy);
        assert!(report.previous_close_clean, "{report:?}");
        assert!(!report.rolled_forward && !report.discarded_spill && !report.completed_restore);
        assert_eq!((kind.sequence)(&copy), info.sequence);
        assert_eq!((kind.offsets)(&copy), expected_offsets);
        let read: Model = (0..KEYS)
            .filter_map(|k| (kind.read)(&copy, k).map(|v| (k, v)))
            .collect();
        assert_eq!(&read, model, "checkpoint of commit {}", info.sequence);
        (kind.close)(&copy);
    }
    // The source is unharmed and still writable.
    (kind.commit)(&store, 1_000);
    (kind.close)(&store);
    let reopened = (kind.open)(&tmp.path().join("store"));
    assert_eq!((kind.offsets)(&reopened), vec![(tp(), 1_000)]);
}

/// The operations every store kind spells the same way (its own method of the same name),
/// as a [`Kind`] to complete with struct update syntax.
macro_rules! common_ops {
    () => {
        Kind {
            open: |_| unreachable!("set by each kind"),
            write: |_, _, _, _| unreachable!("set by each kind"),
            read: |_, _| unreachable!("set by each kind"),
            commit: |s, o| s.commit(&[(tp(), Some(o))], None).unwrap(),
            rollback: |s| s.rollback().unwrap(),
            sequence: |s| s.commit_sequence().unwrap(),
            offsets: |s| s.committed_offsets().unwrap(),
            checkpoint: |s, d| s.checkpoint(d),
            recovery: |s| s.recovery().clone(),
            close: |s| s.close().unwrap(),
        }
    };
}

fn kv_kind() -> Kind<KvStore> {
    Kind {
        open: |p| KvStore::open(p, &store_options()).unwrap(),
        write: |s, k, v, ts| match v {
            Some(v) => s.put(&key(k), v, ts).unwrap(),
            None => drop(s.delete(&key(k)).unwrap()),
        },
        read: |s, k| s.get(&key(k)).unwrap().map(|v| v.value),
        commit: |s, o| s.commit(&[(tp(), Some(o))], Some(b"position")).unwrap(),
        ..common_ops!()
    }
}

fn window_options() -> WindowOptions {
    WindowOptions::new(DAY, 10, false).with_store(store_options())
}

fn window_kind() -> Kind<WindowStore> {
    Kind {
        open: |p| WindowStore::open(p, &window_options()).unwrap(),
        write: |s, k, v, ts| s.put(&key(k), v, ts, 1_000).unwrap(),
        read: |s, k| s.fetch(&key(k), 1_000).unwrap().map(|v| v.value),
        ..common_ops!()
    }
}

fn session_options() -> SessionOptions {
    SessionOptions::new(DAY).with_store(store_options())
}

fn session_kind() -> Kind<SessionStore> {
    Kind {
        open: |p| SessionStore::open(p, &session_options()).unwrap(),
        write: |s, k, v, _| match v {
            Some(v) => drop(s.put(&key(k), 100, 200, Some(v)).unwrap()),
            None => s.remove(&key(k), 100, 200).unwrap(),
        },
        read: |s, k| s.fetch_session(&key(k), 100, 200).unwrap(),
        ..common_ops!()
    }
}

fn versioned_options() -> VersionedOptions {
    VersionedOptions::new(DAY).with_store(store_options())
}

fn versioned_kind() -> Kind<VersionedStore> {
    Kind {
        open: |p| VersionedStore::open(p, &versioned_options()).unwrap(),
        write: |s, k, v, ts| {
            s.put(&key(k), v, ts).unwrap();
        },
        read: |s, k| s.get(&key(k)).unwrap().map(|r| r.value),
        ..common_ops!()
    }
}

#[test]
fn key_value_checkpoints_taken_while_writing_hold_whole_commits() {
    checkpoints_while_writing(kv_kind(), 0x1234_5678);
}

#[test]
fn window_checkpoints_taken_while_writing_hold_whole_commits() {
    checkpoints_while_writing(window_kind(), 0x2345_6789);
}

#[test]
fn session_checkpoints_taken_while_writing_hold_whole_commits() {
    checkpoints_while_writing(session_kind(), 0x3456_789a);
}

#[test]
fn versioned_checkpoints_taken_while_writing_hold_whole_commits() {
    checkpoints_while_writing(versioned_kind(), 0x4567_89ab);
}

#[test]
fn checkpoint_keeps_the_metadata_and_stream_time_of_its_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let store = WindowStore::open(tmp.path().join("w"), &window_options()).unwrap();
    store.put(b"a", Some(b"1"), 5, 7_000).unwrap();
    store
        .commit(&[(tp(), Some(3))], Some(b"position-blob"))
        .unwrap();
    store.put(b"a", Some(b"2"), 6, 9_000).unwrap(); // uncommitted: not in the copy
    let info = store.checkpoint(tmp.path().join("c")).unwrap();
    assert_eq!(info.metadata.as_deref(), Some(&b"position-blob"[..]));
    assert_eq!(info.stream_time, Some(7_000));
    assert_eq!(info.offsets, vec![(tp(), 3)]);
    let copy = WindowStore::open(tmp.path().join("c"), &window_options()).unwrap();
    assert_eq!(
        copy.committed_metadata().unwrap().as_deref(),
        Some(&b"position-blob"[..])
    );
    assert_eq!(
        copy.stream_time(kstate::Isolation::ReadCommitted).unwrap(),
        7_000
    );
    assert_eq!(copy.fetch(b"a", 9_000).unwrap(), None);
    assert_eq!(copy.fetch(b"a", 7_000).unwrap().unwrap().value, b"1");
}

#[test]
fn an_existing_destination_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let store = KvStore::open(tmp.path().join("s"), &StoreOptions::default()).unwrap();
    store.put(b"k", b"v", 1).unwrap();
    store.commit(&[(tp(), Some(1))], None).unwrap();
    let dest = tmp.path().join("taken");
    std::fs::create_dir(&dest).unwrap();
    std::fs::write(dest.join("mine"), b"user data").unwrap();
    let err = store.checkpoint(&dest).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");
    assert_eq!(std::fs::read(dest.join("mine")).unwrap(), b"user data");
    // An existing file too.
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    assert_eq!(
        store.checkpoint(&file).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    // A second checkpoint to a path that a first one created.
    store.checkpoint(tmp.path().join("once")).unwrap();
    assert_eq!(
        store
            .checkpoint(tmp.path().join("once"))
            .unwrap_err()
            .code(),
        ErrorCode::InvalidArgument
    );
    // Nothing but the copies and their lock files is left beside them.
    let mut names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(".s."))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".file.kstate-lock",
            ".once.kstate-lock",
            ".taken.kstate-lock",
            "file",
            "once",
            "s",
            "taken"
        ]
    );
}

#[test]
fn a_closed_store_cannot_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let store = KvStore::open(tmp.path().join("s"), &StoreOptions::default()).unwrap();
    store.close().unwrap();
    let err = store.checkpoint(tmp.path().join("c")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreClosed);
    assert!(!tmp.path().join("c").exists());
}

#[test]
fn a_memory_store_cannot_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        engine: EngineKind::Memory,
        ..StoreOptions::default()
    };
    let store = KvStore::open_in_memory(&options).unwrap();
    let err = store.checkpoint(tmp.path().join("c")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn a_never_committed_store_checkpoints_as_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let store = KvStore::open(tmp.path().join("s"), &StoreOptions::default()).unwrap();
    store.put(b"k", b"uncommitted", 1).unwrap();
    let info = store.checkpoint(tmp.path().join("c")).unwrap();
    assert_eq!(info.sequence, 0);
    assert!(info.offsets.is_empty());
    let copy = KvStore::open(tmp.path().join("c"), &StoreOptions::default()).unwrap();
    assert_eq!(copy.get(b"k").unwrap(), None);
}

/// A large restore ingests a staged file that a RocksDB checkpoint does not copy: each
/// checkpoint taken while restores run must still hold data matching its offsets.
#[test]
fn checkpoints_taken_during_large_restores_match_their_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        max_uncommitted_bytes: 64 << 10,
        ..StoreOptions::default()
    };
    let store = Arc::new(KvStore::open(tmp.path().join("s"), &options).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let checkpoints = Arc::new(AtomicUsize::new(0));
    let restorer = {
        let (store, done) = (Arc::clone(&store), Arc::clone(&done));
        let checkpoints = Arc::clone(&checkpoints);
        std::thread::spawn(move || {
            // Batch b writes every key with value b: offset b <=> all values b.
            let mut b = 0i64;
            while b < 40 || (checkpoints.load(Ordering::SeqCst) < 10 && b < 2_000) {
                b += 1;
                let value = format!("{b:04}").repeat(512).into_bytes();
                let keys: Vec<Vec<u8>> = (0..400u32).map(key).collect();
                let entries: Vec<(&[u8], Option<&[u8]>)> = keys
                    .iter()
                    .map(|k| (k.as_slice(), Some(value.as_slice())))
                    .collect();
                store
                    .restore_batch(entries, &[(tp(), Some(b))], None)
                    .unwrap();
                // Make the gathered batches reach the engine (an ingestion past the bound).
                store.committed_offsets().unwrap();
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let mut n = 0;
    while !done.load(Ordering::SeqCst) {
        let dir = tmp.path().join(format!("c{n}"));
        n += 1;
        let info = store.checkpoint(&dir).unwrap();
        let copy = KvStore::open(&dir, &options).unwrap();
        match copy.committed_offset(&tp()).unwrap() {
            None => assert_eq!(copy.get_raw(&key(0)).unwrap(), None),
            Some(b) => {
                let expected = format!("{b:04}").repeat(512).into_bytes();
                for k in [0, 199, 399] {
                    let raw = copy.get_raw(&key(k)).unwrap().unwrap();
                    assert_eq!(raw, expected, "checkpoint {n} at offset {b}, key {k}");
                }
                assert_eq!(info.offsets, vec![(tp(), b)]);
            }
        }
        copy.close().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        checkpoints.fetch_add(1, Ordering::SeqCst);
    }
    restorer.join().unwrap();
    assert!(n > 0);
    eprintln!("{n} checkpoints taken during the restore");
}
