//! The `kstate` command line: inspect and verify on real stores.

mod support;

use kstate::{KvStore, StoreOptions, TopicPartition};
use support::kstate;

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
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("keyValueWithTimestamp ")
                && l.contains(" 10 entries")
                && l.contains("timestamped values")),
        "{out}"
    );
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

#[test]
fn inspect_and_verify_name_every_column_family_of_a_kafka_store() {
    // A Kafka 4.4 headers-format store with its offsets family, plus a family nobody knows.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kafka");
    {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let families = [
            "default",
            "keyValueWithTimestampAndHeaders",
            "offsets",
            "mystery",
        ];
        let db = rocksdb::DB::open_cf(&o, &path, families).unwrap();
        let cf = |n| db.cf_handle(n).unwrap();
        db.put_cf(
            cf("keyValueWithTimestampAndHeaders"),
            b"k",
            b"\x00\x00\x00\x00\x00\x00\x00\x00\x07v",
        )
        .unwrap();
        db.put_cf(cf("offsets"), b"app-changelog-0", 5i64.to_be_bytes())
            .unwrap();
        db.put_cf(cf("offsets"), b"status", 0i64.to_be_bytes())
            .unwrap();
        for i in 0..3u8 {
            db.put_cf(cf("mystery"), [i], b"?").unwrap();
        }
    }
    let (code, out) = kstate(&["inspect".as_ref(), path.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    for (name, entries, says) in [
        ("keyValueWithTimestampAndHeaders", 1, "headers"),
        ("offsets", 2, "changelog offsets"),
        ("mystery", 3, "not understood"),
        ("default", 0, "plain values"),
    ] {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(&format!("{name} "))
                    && l.contains(&format!(" {entries} entries"))
                    && l.contains(says)),
            "{name}: {out}"
        );
    }
    let (code, out) = kstate(&["verify".as_ref(), path.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("\"mystery\" (3 entries) is unknown to kstate: not understood"),
        "{out}"
    );
}

/// A CLI built without the cargo feature `remote` says so for every checkpoint command and
/// exits 2 (tests/cli_checkpoint.rs runs them in a CLI built with it).
#[cfg(not(feature = "remote"))]
#[test]
fn checkpoint_commands_need_the_remote_feature() {
    let dir = tempfile::tempdir().unwrap();
    let uri = format!("file://{}", dir.path().display());
    for sub in [&["list"][..], &["verify"][..], &["gc", "--keep", "1"][..]] {
        let mut args = vec!["checkpoint", sub[0], &uri, "app", "0_1", "s"];
        args.extend(&sub[1..]);
        let (code, out) = kstate(&args);
        assert_eq!(code, 2, "{out}");
        assert!(out.contains("without the cargo feature `remote`"), "{out}");
    }
    // Nothing was created at the target.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
