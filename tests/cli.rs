//! The `kstate` command line: inspect and verify on real stores.

use std::process::Command;

use kstate::{KvStore, StoreOptions, TopicPartition};

fn kstate(args: &[&std::ffi::OsStr]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kstate"))
        .args(args)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn inspect_and_verify_a_sound_store_then_a_damaged_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let store = KvStore::open(&path, &StoreOptions::default()).unwrap();
    for i in 0..10u8 {
        store.put(&[i], b"v", 5).unwrap();
    }
    store
        .commit(
            &[(TopicPartition::new("app-changelog", 3), Some(99))],
            Some(b"pos"),
        )
        .unwrap();
    // Inspect works while the store is open (read-only, no lock) and reports it unclean.
    let (code, out) = kstate(&["inspect".as_ref(), path.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("offset app-changelog-3: 99"), "{out}");
    assert!(out.contains("unclean"), "{out}");
    store.close().unwrap();

    let (code, out) = kstate(&["inspect".as_ref(), path.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("value format:     timestamped"), "{out}");
    assert!(out.contains("keyValueWithTimestamp    10 entries"), "{out}");
    assert!(out.contains("last close:       clean"), "{out}");
    assert!(out.contains("metadata:       3 bytes"), "{out}");

    let (code, out) = kstate(&["verify".as_ref(), path.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 problems"), "{out}");

    // A value too short to hold its timestamp, written behind kstate's back.
    {
        let cfs = rocksdb::DB::list_cf(&rocksdb::Options::default(), &path).unwrap();
        let db = rocksdb::DB::open_cf(&rocksdb::Options::default(), &path, &cfs).unwrap();
        db.put_cf(
            db.cf_handle("keyValueWithTimestamp").unwrap(),
            b"bad",
            b"1234",
        )
        .unwrap();
    }
    let (code, out) = kstate(&["verify".as_ref(), path.as_os_str()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("PROBLEM: keyValueWithTimestamp/\"bad\""),
        "{out}"
    );
    assert!(out.contains("1 problems"), "{out}");
}

#[test]
fn a_path_that_is_not_a_store_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x"), b"x").unwrap();
    let (code, out) = kstate(&["inspect".as_ref(), dir.path().as_os_str()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("not a kstate or Kafka Streams store"), "{out}");
}
