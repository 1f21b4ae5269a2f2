//! The crash points (`KSTATE_FAILPOINT_ODDS`) exist only in builds with the `failpoints`
//! feature. A default build, which is what ships (libkstate.so, the `kstate` CLI), must
//! ignore the variable; a `failpoints` build must honour it (which also proves this test
//! reaches the crash points at all).
//!
//! The test worker's crash worker (`kstate-test-worker`, linked with the same library
//! build as the `kstate` CLI) runs spilled transactions with the variable at odds 1 (every
//! crash point fires): a default build finishes its commits and exits normally.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

// The workload is shared source, not library API: each user compiles its own copy.
#[allow(dead_code)]
#[path = "support/workload.rs"]
mod workload;

use kstate::{KvStore, StoreOptions};

#[test]
fn failpoint_odds_are_honoured_only_with_the_failpoints_feature() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let output = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"))
        .args(["crash-worker", "--dir"])
        .arg(&path)
        // A tiny memory bound: most transactions spill, so commits pass the crash points.
        .args(["--seed", "7", "--max-uncommitted", "512", "--commits", "40"])
        .env("KSTATE_FAILPOINT_ODDS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let status = output.status;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let store = KvStore::open(&path, &StoreOptions::default()).unwrap();
    let offset = store
        .committed_offset(&workload::changelog_partition())
        .unwrap();
    store.close().unwrap();
    if cfg!(feature = "failpoints") {
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "a failpoints build must kill itself at odds 1: {status:?} {stderr}"
        );
    } else {
        assert!(
            status.success(),
            "the default build must ignore KSTATE_FAILPOINT_ODDS: {status:?} {stderr}"
        );
        assert!(offset.is_some(), "the worker committed");
    }
}

/// An adoption killed after it created `kstate_meta` and before it wrote the header leaves
/// an empty metadata family beside Kafka's data: the next open adopts again, with Kafka's
/// data (a MANIFEST that lost its table files looks the same from the families alone, and
/// is `CORRUPTION`: see `tests/manifest.rs`).
#[test]
fn an_adoption_killed_before_its_header_is_redone_by_the_next_open() {
    if !cfg!(feature = "failpoints") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kafka");
    {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        let db = rocksdb::DB::open(&o, &path).unwrap();
        for i in 0..100u32 {
            db.put(format!("key-{i:03}"), format!("value-{i}")).unwrap();
        }
        db.flush().unwrap();
    }
    let output = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"))
        .args(["crash-worker", "--dir"])
        .arg(&path)
        .args(["--seed", "3", "--commits", "1"])
        .env("KSTATE_FAILPOINT_ODDS", "1")
        .env("KSTATE_FAILPOINT_ONLY", "adopt-before-header")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGKILL),
        "{:?} {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    // Kafka's plain values, read through a timestamped store (upgrade mode, as the
    // crash worker opens it).
    let store = KvStore::open(&path, &StoreOptions::default()).unwrap();
    for i in [0u32, 57, 99] {
        let v = store
            .get(format!("key-{i:03}").as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(v.value, format!("value-{i}").into_bytes());
    }
    store.close().unwrap();
}
