//! The crash points (`KSTATE_FAILPOINT_ODDS`) exist only in builds with the `failpoints`
//! feature. A default build, which is what ships (libkstate.so, the `kstate` CLI), must
//! ignore the variable; a `failpoints` build must honour it (which also proves this test
//! reaches the crash points at all).
//!
//! The `kstate` CLI's crash worker runs spilled transactions with the variable at odds 1
//! (every crash point fires): a default build finishes its commits and exits normally.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

// The workload is shared source, not library API: each user compiles its own copy.
#[allow(dead_code)]
#[path = "../src/workload.rs"]
mod workload;

use kstate::{KvStore, StoreOptions};

#[test]
fn failpoint_odds_are_honoured_only_with_the_failpoints_feature() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let output = Command::new(env!("CARGO_BIN_EXE_kstate"))
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
