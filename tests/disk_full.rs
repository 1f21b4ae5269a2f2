//! A real full disk: a store on a small tmpfs (mounted by the test when it runs as root;
//! skipped with a message otherwise) keeps writing, spilling and committing while the file
//! system is filled to several free-space levels. Every error must be one of the documented
//! ones, committed readers must keep seeing exactly the last confirmed commit, and after
//! space is freed the handle is used on, closed and reopened: the store must hold the last
//! confirmed commit, or the one reported in doubt, and nothing else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kstate::{ErrorCode, Isolation, KeyRange, KvStore, StoreOptions, TopicPartition};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size_mib: u32) -> Option<Tmpfs> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("disk_full: skipped: mounting a tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().ok()?;
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size_mib}m"), "tmpfs"])
            .arg(dir.path())
            .status();
        match status {
            Ok(s) if s.success() => Some(Tmpfs { dir }),
            other => {
                eprintln!("disk_full: skipped: mount -t tmpfs failed ({other:?})");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn available(&self) -> u64 {
        let c = std::ffi::CString::new(self.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path and `st` a valid out-parameter.
        unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            assert_eq!(libc::statvfs(c.as_ptr(), &mut st), 0);
            st.f_bavail as u64 * st.f_frsize as u64
        }
    }

    /// Fills the file system until about `free` bytes remain.
    fn fill_to(&self, free: u64) -> PathBuf {
        let filler = self.path().join("filler");
        let take = self.available().saturating_sub(free);
        let f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0xAB_u8; 1 << 20];
        let mut left = take;
        use std::io::Write;
        let mut w = std::io::BufWriter::new(f);
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            if w.write_all(&chunk[..n]).is_err() {
                break;
            }
            left -= n as u64;
        }
        let _ = w.flush();
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn tp() -> TopicPartition {
    TopicPartition::new("disk-full-changelog", 0)
}

fn committed_view(store: &KvStore) -> Map {
    store
        .scan(Isolation::ReadCommitted, &KeyRange::all(), false)
        .unwrap()
        .map(|e| e.unwrap())
        .collect()
}

struct Model {
    committed: Map,
    offset: Option<i64>,
    pending: Map,
    in_doubt: Option<(Map, i64)>,
}

impl Model {
    fn writer_view(&self) -> Map {
        let mut m = self.committed.clone();
        m.extend(self.pending.clone());
        m
    }
}

fn run_level(free: u64, seed: u64) -> (usize, bool) {
    let Some(fs) = Tmpfs::mount(48) else {
        return (0, false);
    };
    let path = fs.path().join("store");
    let options =
        StoreOptions::plain(kstate::EngineKind::RocksDb).with_max_uncommitted_bytes(256 << 10);
    let store = KvStore::open(&path, &options).unwrap();
    let mut model = Model {
        committed: Map::new(),
        offset: None,
        pending: Map::new(),
        in_doubt: None,
    };
    // A first commit with room to spare.
    for i in 0..50u32 {
        store.put_raw(&i.to_be_bytes(), Some(&[1u8; 500])).unwrap();
        model
            .pending
            .insert(i.to_be_bytes().to_vec(), vec![1u8; 500]);
    }
    store.commit(&[(tp(), Some(0))], None).unwrap();
    model.committed = model.writer_view();
    model.pending.clear();
    model.offset = Some(0);

    let filler = fs.fill_to(free);
    let mut rng = seed;
    let mut errors = 0;
    for step in 1..=1_500i64 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let key = ((rng % 2_000) as u32).to_be_bytes().to_vec();
        let val = vec![(step % 251) as u8; 200 + (rng % 32_000) as usize];
        let was_in_doubt = model.in_doubt.is_some();
        let result = if step % 40 == 0 {
            store.commit(&[(tp(), Some(step))], None)
        } else {
            store.put_raw(&key, Some(&val))
        };
        match &result {
            Ok(()) => {
                if let Some((state, offset)) = model.in_doubt.take() {
                    model.committed = state;
                    model.offset = Some(offset);
                }
            }
            Err(e) => {
                errors += 1;
                let code = e.code();
                assert!(
                    matches!(
                        code,
                        ErrorCode::Storage | ErrorCode::CommitInDoubt | ErrorCode::Io
                    ),
                    "undocumented error on a full disk: {e}"
                );
                if was_in_doubt {
                    assert_eq!(code, ErrorCode::CommitInDoubt, "{e}");
                }
            }
        }
        if was_in_doubt && result.is_err() {
            // The earlier commit is still being finished: nothing else happened.
        } else if step % 40 == 0 {
            match &result {
                Ok(()) => {
                    model.committed = model.writer_view();
                    model.pending.clear();
                    model.offset = Some(step);
                }
                Err(e) if e.code() == ErrorCode::CommitInDoubt => {
                    model.in_doubt = Some((model.writer_view(), step));
                    model.pending.clear();
                }
                Err(_) => {}
            }
        } else {
            // A write is buffered even when spilling it failed.
            model.pending.insert(key, val);
        }
        assert_eq!(
            store.committed_offset(&tp()).unwrap(),
            model.offset,
            "step {step}"
        );
        if step % 20 == 0 {
            assert_eq!(
                committed_view(&store),
                model.committed,
                "step {step}: committed view"
            );
        }
    }
    std::fs::remove_file(filler).unwrap();
    // Space is back: use the handle on, then restart.
    let healed = store.commit(&[(tp(), Some(10_000))], None).is_ok();
    if healed {
        model.committed = model.writer_view();
        model.offset = Some(10_000);
        model.in_doubt = None;
    }
    // Once a commit succeeded, close succeeds too, even if RocksDB is still in its error
    // state: what it cannot do (record the clean close, flush) loses nothing committed.
    let closed = store.close();
    assert!(
        !healed || closed.is_ok(),
        "free={free}: close after a successful commit: {closed:?}"
    );
    drop(store);
    let reopened = KvStore::open(&path, &options).unwrap();
    let offset = reopened.committed_offset(&tp()).unwrap();
    let data = committed_view(&reopened);
    let matches_confirmed = offset == model.offset && data == model.committed;
    let matches_in_doubt = model
        .in_doubt
        .as_ref()
        .is_some_and(|(state, o)| offset == Some(*o) && &data == state);
    assert!(
        matches_confirmed || matches_in_doubt,
        "free={free}: reopened at offset {offset:?} with {} entries; confirmed {:?} with {}",
        data.len(),
        model.offset,
        model.committed.len()
    );
    let report = kstate::store::inspect::verify(&path).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    reopened.close().unwrap();
    (errors, healed)
}

#[test]
fn a_full_disk_at_every_level_leaves_a_consistent_store() {
    let mut total_errors = 0;
    for (i, free) in [0u64, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 12 << 20]
        .into_iter()
        .enumerate()
    {
        let (errors, healed) = run_level(free, 0x9E37_79B9_7F4A_7C15 ^ i as u64);
        println!("disk_full: {free:>9} bytes free: {errors} errors, handle recovered after freeing space: {healed}");
        total_errors += errors;
    }
    if Tmpfs::mount(1).is_some() {
        assert!(total_errors > 0, "the sweep never filled the disk");
    }
}

/// `kstate upgrade` checks free space first and refuses, changing nothing, when the stores
/// it would convert do not fit.
#[test]
fn offline_upgrade_refuses_when_the_disk_is_too_full() {
    let Some(fs) = Tmpfs::mount(32) else {
        return;
    };
    let path = fs.path().join("plain");
    let store = KvStore::open(&path, &StoreOptions::plain(kstate::EngineKind::RocksDb)).unwrap();
    for i in 0..3_000u32 {
        store
            .put_raw(&i.to_be_bytes(), Some(&[9u8; 1_000]))
            .unwrap();
    }
    store.commit(&[(tp(), Some(1))], None).unwrap();
    store.compact().unwrap();
    store.close().unwrap();
    let filler = fs.fill_to(256 << 10);
    let out = Command::new(env!("CARGO_BIN_EXE_kstate"))
        .arg("upgrade")
        .arg(fs.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    eprintln!("DEBUG {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("not enough free disk space"), "{text}");
    assert!(text.contains("nothing was changed"), "{text}");
    std::fs::remove_file(filler).unwrap();
    let report = kstate::store::inspect::inspect(&path).unwrap();
    assert_eq!(
        report.header.map(|h| h.value_format),
        Some(kstate::ValueFormat::Plain)
    );
}
