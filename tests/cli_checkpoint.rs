//! `kstate checkpoint list|verify|restore|gc` (feature `remote`), run as the built CLI
//! against a `file://` target that the library published to: outputs and exit codes, and
//! a damaged object that verify names (exit 1) and restore refuses.
//!
//! `cargo test --release --features remote --test cli_checkpoint`

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use kstate::remote::{Remote, RemoteSettings, StoreScope};
use kstate::{KvStore, StoreOptions, TopicPartition};
use support::kstate;

fn tp() -> TopicPartition {
    TopicPartition::new("app-store-changelog", 3)
}

/// `kstate` with these arguments: exit code, stdout, stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kstate"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kstate checkpoint <sub> <target...> <extra...>`.
fn checkpoint<'a>(sub: &'a str, target: &[&'a str], extra: &[&'a str]) -> (i32, String, String) {
    let mut args = vec!["checkpoint", sub];
    args.extend(target);
    args.extend(extra);
    run(&args)
}

fn assert_holds(dir: &Path, model: &BTreeMap<String, String>, offset: i64) {
    let store = KvStore::open(dir, &StoreOptions::default()).unwrap();
    for k in 0..100 {
        let key = format!("k{k:03}");
        let got = store
            .get(key.as_bytes())
            .unwrap()
            .map(|v| String::from_utf8(v.value).unwrap());
        assert_eq!(got.as_ref(), model.get(&key), "{key}");
    }
    assert_eq!(store.committed_offsets().unwrap(), vec![(tp(), offset)]);
    store.close().unwrap();
}

#[test]
fn list_verify_restore_gc_and_a_damaged_object() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("target");
    let uri = format!("file://{}", root.display());
    let settings = RemoteSettings {
        writer_id: "cli-test".into(),
        ..RemoteSettings::default()
    };
    let remote = Remote::open(&uri, &settings).unwrap();
    let scope = StoreScope::new("app", "0_3", "counts");
    let store = KvStore::open(tmp.path().join("store"), &StoreOptions::default()).unwrap();
    let mut model = BTreeMap::new();
    let mut keys = Vec::new();
    let mut models = Vec::new();
    for round in 1..=2i64 {
        for k in (0..100).filter(|k| k % round == 0) {
            let (key, value) = (format!("k{k:03}"), format!("v{k}-{round}"));
            store.put(key.as_bytes(), value.as_bytes(), round).unwrap();
            model.insert(key, value);
        }
        store.commit(&[(tp(), Some(100 * round))], None).unwrap();
        let info = store
            .checkpoint(tmp.path().join(format!("ckpt-{round}")))
            .unwrap();
        keys.push(remote.publish(&scope, &info).unwrap().manifest);
        models.push(model.clone());
    }
    let target = [uri.as_str(), "app", "0_3", "counts"];
    let cmd = |sub: &str, extra: &[&str]| checkpoint(sub, &target, extra);

    // list: newest first, every field, readable.
    let (code, out, err) = cmd("list", &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (first, second) = (out.find(&keys[1]).unwrap(), out.find(&keys[0]).unwrap());
    assert!(first < second, "newest first: {out}");
    assert!(
        out.contains("  offsets:    app-store-changelog-3: 200"),
        "{out}"
    );
    assert!(
        out.contains("  offsets:    app-store-changelog-3: 100"),
        "{out}"
    );
    assert!(out.contains("  writer:     cli-test"), "{out}");
    assert!(out.contains(" UTC\n"), "{out}");
    assert_eq!(out.matches("  status:     readable").count(), 2, "{out}");
    assert!(out.contains("2 checkpoints, 2 readable"), "{out}");

    // verify: all, then one.
    let (code, out, err) = cmd("verify", &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("2 checkpoints checked, 0 problems"), "{out}");
    assert_eq!(out.matches("SHA-256 checked").count(), 2, "{out}");
    let (code, out, _) = cmd("verify", &[&keys[0]]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("ok: {}", keys[0])), "{out}");

    // restore the newest, with progress on stderr; the copy holds the model.
    let dest = tmp.path().join("restored");
    let dest_arg = dest.to_str().unwrap();
    let (code, out, err) = cmd("restore", &[dest_arg]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with(&format!("restored {}", keys[1])), "{out}");
    let last = err.lines().last().unwrap();
    let total: Vec<&str> = last
        .trim_start_matches("restore: files ")
        .split(',')
        .next()
        .unwrap()
        .split('/')
        .collect();
    assert_eq!(total[0], total[1], "{err}");
    assert!(last.ends_with("MB/s"), "{err}");
    assert_holds(&dest, &models[1], 200);
    // An existing destination: exit 2, nothing changed.
    let (code, _, err) = cmd("restore", &[dest_arg]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("already exists"), "{err}");
    // --manifest: the older one.
    let older = tmp.path().join("restored-older");
    let (code, out, err) = cmd(
        "restore",
        &[older.to_str().unwrap(), "--manifest", &keys[0]],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_holds(&older, &models[0], 100);

    // Damage one byte of a table file object only the newest checkpoint names (same size).
    let manifest = remote.verify(&scope, &keys[1]).unwrap();
    let older_objects: Vec<String> = remote
        .verify(&scope, &keys[0])
        .unwrap()
        .files
        .into_iter()
        .map(|f| f.object)
        .collect();
    let victim = manifest
        .files
        .iter()
        .find(|f| f.name.ends_with(".sst") && !older_objects.contains(&f.object))
        .unwrap();
    let object = root.join("app/0_3/counts").join(&victim.object);
    let mut bytes = std::fs::read(&object).unwrap();
    bytes[10] ^= 0x55;
    std::fs::write(&object, &bytes).unwrap();
    let (code, out, _) = cmd("verify", &[]);
    assert_eq!(code, 1, "{out}");
    let problem = out
        .lines()
        .find(|l| l.starts_with("PROBLEM: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        problem.contains(&victim.object) && problem.contains(&victim.name),
        "{out}"
    );
    assert!(out.contains("checkpoints checked, "), "{out}");
    assert!(!out.contains(" 0 problems"), "{out}");
    // --quick checks sizes only: the same size passes.
    let (code, out, _) = cmd("verify", &["--quick"]);
    assert_eq!(code, 0, "{out}");
    // A restore of it fails with exit 1 naming the object, and leaves nothing.
    let bad = tmp.path().join("restored-bad");
    let (code, out, err) = cmd("restore", &[bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains(&victim.object), "{out}");
    assert!(!bad.exists());
    // A missing object: even --quick names it.
    std::fs::remove_file(&object).unwrap();
    let (code, out, _) = cmd("verify", &["--quick", &keys[1]]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("is missing"), "{out}");
    let (code, out, _) = cmd("list", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("NOT READABLE: "), "{out}");
    assert!(out.contains("2 checkpoints, 1 readable"), "{out}");

    // gc: keep the newest; with no grace period the unreferenced files go too.
    let (code, out, err) = cmd("gc", &["--keep", "1", "--grace-ms", "0"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("deleted 1 manifests"), "{out}");
    assert!(out.contains(&keys[0]), "{out}");
    let listed: Vec<String> = remote
        .list(&scope)
        .unwrap()
        .into_iter()
        .map(|s| s.key)
        .collect();
    assert_eq!(listed, vec![keys[1].clone()]);
    // A manifest changed after publication: list shows why, verify names it (exit 1).
    let path = root.join("app/0_3/counts").join(&keys[1]);
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged = text.replace("\"offset\":200", "\"offset\":900");
    assert_ne!(damaged, text);
    std::fs::write(&path, damaged).unwrap();
    let (code, out, _) = cmd("list", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("  status:     NOT READABLE: checksum mismatch"),
        "{out}"
    );
    assert!(out.contains("1 checkpoints, 0 readable"), "{out}");
    let (code, out, _) = cmd("verify", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("PROBLEM: manifest {}: checksum mismatch", keys[1])),
        "{out}"
    );
    let (code, out, _) = cmd("gc", &["--keep", "0"]);
    assert_eq!(code, 2, "{out}");

    // Nothing published there: verify says so (exit 1), restore cannot run (exit 2).
    let empty = [uri.as_str(), "app", "0_3", "nothing"];
    let (code, out, _) = run(&[&["checkpoint", "verify"][..], &empty[..]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("PROBLEM: no checkpoint"), "{out}");
    let nowhere = tmp.path().join("nowhere");
    let (code, _, err) = run(&[
        &["checkpoint", "restore"][..],
        &empty[..],
        &[nowhere.to_str().unwrap()][..],
    ]
    .concat());
    assert_eq!(code, 2, "{err}");
}

#[test]
fn bad_targets_and_usage_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let uri = format!("file://{}", tmp.path().display());
    let uri = uri.as_str();
    for args in [
        &["checkpoint", "list", "http://x/y", "a", "0_1", "s"][..],
        &["checkpoint", "list", uri, "a", "0/1", "s"][..],
        &[
            "checkpoint",
            "list",
            uri,
            "a",
            "0_1",
            "s",
            "--s3",
            "region=x",
        ][..],
        &[
            "checkpoint",
            "list",
            "s3://b/p",
            "a",
            "0_1",
            "s",
            "--s3",
            "novalue",
        ][..],
        &[
            "checkpoint",
            "list",
            "s3://b/p",
            "a",
            "0_1",
            "s",
            "--s3",
            "bogus_key=1",
        ][..],
        &["checkpoint", "list", uri, "a"][..],
        &["checkpoint", "gc", uri, "a", "0_1", "s"][..],
    ] {
        let (code, text) = kstate(args);
        assert_eq!(code, 2, "{args:?}: {text}");
    }
    let (code, text) = kstate(&["checkpoint", "--help"]);
    assert_eq!(code, 0, "{text}");
    for sub in ["list", "verify", "restore", "gc"] {
        assert!(text.contains(sub), "{text}");
    }
    let (code, text) = kstate(&["checkpoint", "verify", "--help"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("Exit codes:"), "{text}");
}
