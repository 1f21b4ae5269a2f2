//! The `kstate` command line never changes what it does not convert, and its exit codes can
//! be trusted: a state directory laid out as Kafka Streams 4.4 lays out every store kind
//! (key-value plain, timestamped and headers; plain and timestamped window stores; session
//! stores, as directories of segment databases) plus kstate's own window and session
//! stores, upgraded with and without `--dry-run`, to timestamped and to headers: every file
//! of every store left alone keeps its bytes (`LOG` included) and no file appears in or
//! next to it. Damaged stores are failures (exit 1) named in the summary; a store another
//! process has open is neither opened for writing nor touched.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

mod support;

use kstate::store::{SessionOptions, SessionStore, WindowOptions, WindowStore};
use kstate::{KvStore, StoreOptions, TopicPartition};
use support::kstate;

/// Every file (with its bytes) and directory (with `None`) under `root`, by relative path.
type Tree = BTreeMap<PathBuf, Option<Vec<u8>>>;

fn snapshot(root: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if path.is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else if path.ends_with("LOCK") {
                // Never opened: closing a descriptor on it would drop the record lock this
                // process holds on it (RocksDB's), and RocksDB leaves it empty.
                let len = std::fs::metadata(&path).unwrap().len();
                out.insert(rel, Some(len.to_be_bytes().to_vec()));
            } else {
                out.insert(rel, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Tree::new();
    walk(root, root, &mut out);
    out
}

/// Asserts that `after` equals `before` except under the relative paths in `changed`
/// (a store directory, or a sibling file of it).
fn assert_unchanged_except(before: &Tree, after: &Tree, changed: &[&str], what: &str) {
    let allowed = |p: &Path| changed.iter().any(|c| p.starts_with(c));
    let keep = |t: &Tree| -> Tree {
        t.iter()
            .filter(|(p, _)| !allowed(p))
            .map(|(p, c)| (p.clone(), c.clone()))
            .collect()
    };
    let (b, a) = (keep(before), keep(after));
    for (path, content) in &b {
        match a.get(path) {
            None => panic!("{what}: {} disappeared", path.display()),
            Some(c) => assert!(c == content, "{what}: {} changed", path.display()),
        }
    }
    for path in a.keys() {
        assert!(b.contains_key(path), "{what}: {} appeared", path.display());
    }
    assert!(
        b.keys().any(|p| p.ends_with("LOG")),
        "{what}: the fixture has LOG files"
    );
}

fn rocks_options() -> rocksdb::Options {
    let mut o = rocksdb::Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o
}

/// Writes a RocksDB database at `path` with `families`, the entries of each, flushed to
/// table files (as a closed Kafka store leaves it), plus Kafka 4.4's `offsets` family.
/// Key-value entries of one column family.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn kafka_db(path: &Path, families: &[(&str, Entries)], offsets: bool) {
    let mut names: Vec<&str> = families.iter().map(|(n, _)| *n).collect();
    if offsets {
        names.push("offsets");
    }
    let db = rocksdb::DB::open_cf(&rocks_options(), path, &names).unwrap();
    for (name, entries) in families {
        let cf = db.cf_handle(name).unwrap();
        for (k, v) in entries {
            db.put_cf(cf, k, v).unwrap();
        }
        db.flush_cf(cf).unwrap();
    }
    if offsets {
        let cf = db.cf_handle("offsets").unwrap();
        db.put_cf(cf, b"app-changelog-0", 42i64.to_be_bytes())
            .unwrap();
        db.put_cf(cf, b"status", 0i64.to_be_bytes()).unwrap();
        db.flush_cf(cf).unwrap();
    }
}

fn timestamped(ts: i64, v: &[u8]) -> Vec<u8> {
    let mut out = ts.to_be_bytes().to_vec();
    out.extend_from_slice(v);
    out
}

fn window_key(key: &[u8], start: i64, seq: i32) -> Vec<u8> {
    let mut out = key.to_vec();
    out.extend_from_slice(&start.to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out
}

fn session_key(key: &[u8], start: i64, end: i64) -> Vec<u8> {
    let mut out = key.to_vec();
    out.extend_from_slice(&end.to_be_bytes());
    out.extend_from_slice(&start.to_be_bytes());
    out
}

const INTERVAL: i64 = 60_000;
const FIRST_SEGMENT: i64 = 26_280_000;

/// A Kafka segmented store `<task>/<name>/<name>.<id * INTERVAL>`, `segments` segments,
/// each with `per_segment` entries made by `entry(segment start, i)` in `families`.
fn kafka_segmented(
    task: &Path,
    name: &str,
    segments: i64,
    families: &[&str],
    entry: impl Fn(i64, u8) -> (Vec<u8>, Vec<u8>),
) {
    for id in FIRST_SEGMENT..FIRST_SEGMENT + segments {
        let start = id * INTERVAL;
        let entries: Entries = (0..(5 + id % 3) as u8).map(|i| entry(start, i)).collect();
        let fams: Vec<(&str, Entries)> = families
            .iter()
            .map(|f| {
                let data = if *f == "default" && families.len() > 1 {
                    Vec::new()
                } else {
                    entries.clone()
                };
                (*f, data)
            })
            .collect();
        kafka_db(
            &task.join(name).join(format!("{name}.{start}")),
            &fams,
            false,
        );
    }
}

/// A state directory with every Kafka Streams store kind and kstate's own window and
/// session stores. `0_0/rocksdb/kvplain` is the one store an upgrade to timestamped
/// converts; an upgrade to headers converts `kvts` too.
fn state_dir(app: &Path) {
    let task = app.join("0_0");
    let kv = |n: u8, f: &dyn Fn(u8) -> Vec<u8>| -> Entries {
        (0..n).map(|i| (vec![b'k', i], f(i))).collect()
    };
    kafka_db(
        &task.join("rocksdb").join("kvplain"),
        &[("default", kv(20, &|i| vec![b'p', i]))],
        true,
    );
    kafka_db(
        &task.join("rocksdb").join("kvts"),
        &[
            ("default", vec![]),
            (
                "keyValueWithTimestamp",
                kv(15, &|i| timestamped(1000 + i as i64, b"t")),
            ),
        ],
        true,
    );
    let mut headers_value = vec![0u8];
    headers_value.extend_from_slice(&timestamped(5, b"h"));
    kafka_db(
        &task.join("rocksdb").join("kvheaders"),
        &[
            ("default", vec![]),
            (
                "keyValueWithTimestampAndHeaders",
                kv(3, &|_| headers_value.clone()),
            ),
        ],
        true,
    );
    kafka_segmented(&task, "plainwin", 3, &["default"], |start, i| {
        (window_key(&[b'w', i], start + 1000 * i as i64, 0), vec![i])
    });
    kafka_segmented(
        &task,
        "tswin",
        2,
        &["default", "keyValueWithTimestamp"],
        |start, i| {
            let ws = start + 500 * i as i64;
            (window_key(&[b't', i], ws, 0), timestamped(ws + 7, &[i]))
        },
    );
    kafka_segmented(&task, "sess", 2, &["default"], |start, i| {
        let end = start + 2000 * i as i64;
        (session_key(&[b's', i], end - 1500, end), vec![i, i])
    });
    // kstate's own window and session stores: one database each, with a kstate header.
    let tp = TopicPartition::new("app-win-changelog", 0);
    let w = WindowStore::open(
        app.join("0_1").join("kwin"),
        &WindowOptions::new(600_000, 10_000, false).with_segment_interval(INTERVAL),
    )
    .unwrap();
    for i in 0..10i64 {
        w.put(&[b'x', i as u8], Some(b"v"), i * 1000, i * 1000)
            .unwrap();
    }
    w.commit(&[(tp.clone(), Some(9))], None).unwrap();
    w.close().unwrap();
    let s = SessionStore::open(
        app.join("0_1").join("ksess"),
        &SessionOptions::new(600_000).with_segment_interval(INTERVAL),
    )
    .unwrap();
    for i in 0..10i64 {
        s.put(&[b'y', i as u8], i * 1000, i * 1000 + 500, Some(b"a"))
            .unwrap();
    }
    s.commit(&[(tp, Some(9))], None).unwrap();
    s.close().unwrap();
}

fn line_with<'a>(out: &'a str, needle: &str) -> &'a str {
    out.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{out}"))
}

/// The stores an upgrade to headers converts, with their lock files.
const CONVERTED: [&str; 4] = [
    "0_0/rocksdb/kvplain",
    "0_0/rocksdb/.kvplain.kstate-lock",
    "0_0/rocksdb/kvts",
    "0_0/rocksdb/.kvts.kstate-lock",
];

#[test]
fn upgrade_leaves_every_store_it_does_not_convert_byte_for_byte_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    state_dir(&app);
    let original = snapshot(&app);
    let task = app.join("0_0");

    // Dry runs, to timestamped and to headers: nothing changes at all.
    for to in ["timestamped", "headers"] {
        let (code, out) = kstate(&[
            OsStr::new("upgrade"),
            app.as_os_str(),
            "--to".as_ref(),
            to.as_ref(),
            "--dry-run".as_ref(),
        ]);
        assert_eq!(code, 0, "{out}");
        assert!(
            line_with(&out, "0_0/rocksdb/kvplain").contains("upgrade "),
            "{out}"
        );
        for (store, why) in [
            (
                "0_0/plainwin ",
                "Kafka Streams window or session store, 3 segment",
            ),
            (
                "0_0/tswin ",
                "Kafka Streams window or session store, 2 segment",
            ),
            (
                "0_0/sess ",
                "Kafka Streams window or session store, 2 segment",
            ),
            ("0_1/kwin ", "a kstate window store: not a key-value store"),
            (
                "0_1/ksess ",
                "a kstate session store: not a key-value store",
            ),
            ("0_0/rocksdb/kvheaders ", ""),
        ] {
            let line = line_with(&out, store);
            assert!(line.contains("left alone") && line.contains(why), "{line}");
        }
        assert!(out.contains("0 failed"), "{out}");
        assert!(!out.contains(".kstate-lock"), "{out}");
        assert_unchanged_except(&original, &snapshot(&app), &[], "dry run");
    }

    // Inspect and verify of Kafka's segmented stores say what they are, changing nothing.
    let (code, out) = kstate(&[OsStr::new("inspect"), task.join("plainwin").as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("kind (guessed):   window store"), "{out}");
    assert!(
        out.contains(&format!("segment interval: {INTERVAL} ms")),
        "{out}"
    );
    assert!(out.contains("segments:         3"), "{out}");
    for (n, entries) in [(0i64, 5), (1, 6), (2, 7)] {
        let id = FIRST_SEGMENT + n;
        let seg = format!(
            "segment plainwin.{} (start {} ms, id {id})",
            id * INTERVAL,
            id * INTERVAL
        );
        let at = out.find(&seg).unwrap_or_else(|| panic!("{seg}: {out}"));
        let default_line = line_with(&out[at..], "default");
        assert!(
            default_line.contains(&format!(" {entries} entries")),
            "{default_line}"
        );
    }
    let (code, out) = kstate(&[OsStr::new("inspect"), task.join("tswin").as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("timestamped window store"), "{out}");
    let (code, out) = kstate(&[OsStr::new("inspect"), task.join("sess").as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("kind (guessed):   session store"), "{out}");
    for store in ["plainwin", "tswin", "sess"] {
        let (code, out) = kstate(&[OsStr::new("verify"), task.join(store).as_os_str()]);
        assert_eq!(code, 0, "{store}: {out}");
        assert!(out.contains(" 0 problems"), "{out}");
    }
    let (code, out) = kstate(&[OsStr::new("inspect"), app.join("0_1/kwin").as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "kind:             window (segment interval {INTERVAL} ms)"
        )),
        "{out}"
    );
    assert_unchanged_except(&original, &snapshot(&app), &[], "inspect and verify");

    // The upgrade to timestamped converts kvplain only (its lock file is the one new file
    // next to it); then to headers, kvts too.
    let (code, out) = kstate(&[OsStr::new("upgrade"), app.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("1 store(s) upgraded, 7 left alone, 0 failed, 20 values migrated"),
        "{out}"
    );
    let after = snapshot(&app);
    assert_unchanged_except(
        &original,
        &after,
        &["0_0/rocksdb/kvplain", "0_0/rocksdb/.kvplain.kstate-lock"],
        "upgrade to timestamped",
    );
    assert!(after.contains_key(Path::new("0_0/rocksdb/.kvplain.kstate-lock")));
    let (code, out) = kstate(&[
        OsStr::new("upgrade"),
        app.as_os_str(),
        "--to".as_ref(),
        "headers".as_ref(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("2 store(s) upgraded, 6 left alone, 0 failed, 35 values migrated"),
        "{out}"
    );
    assert_unchanged_except(&original, &snapshot(&app), &CONVERTED, "upgrade to headers");
    // A segment named directly is left alone too.
    let segment = task
        .join("plainwin")
        .join(format!("plainwin.{}", FIRST_SEGMENT * INTERVAL));
    let (code, out) = kstate(&[OsStr::new("upgrade"), segment.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("a segment of a Kafka Streams window or session store"),
        "{out}"
    );
    assert_unchanged_except(
        &original,
        &snapshot(&app),
        &CONVERTED,
        "upgrade of a segment",
    );
}

/// A stray file in a Kafka segmented store (what an older `kstate upgrade` left) is what
/// `verify` reports, by name, with exit 1.
#[test]
fn verify_names_what_kafka_cannot_open_a_segmented_store_with() {
    let dir = tempfile::tempdir().unwrap();
    kafka_segmented(dir.path(), "w", 2, &["default"], |start, i| {
        (window_key(&[i], start + i as i64, 0), vec![i])
    });
    let store = dir.path().join("w");
    let stray = format!(".w.{}.kstate-lock", FIRST_SEGMENT * INTERVAL);
    std::fs::write(store.join(&stray), b"").unwrap();
    let (code, out) = kstate(&[OsStr::new("verify"), store.as_os_str()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "PROBLEM: \"{stray}\" in the store directory is not a segment"
        )),
        "{out}"
    );
    let (code, out) = kstate(&[OsStr::new("upgrade"), dir.path().as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        line_with(&out, "left alone").contains("1 entries that are not segments"),
        "{out}"
    );
}

/// Rewrites the header record of the kstate store at `path` with format version `version`.
fn set_header_version(path: &Path, version: u32) {
    let cfs = rocksdb::DB::list_cf(&rocksdb::Options::default(), path).unwrap();
    let db = rocksdb::DB::open_cf(&rocksdb::Options::default(), path, &cfs).unwrap();
    let mut raw = version.to_be_bytes().to_vec();
    raw.extend_from_slice(&[1, 0, 0, 0, 0]);
    db.put_cf(db.cf_handle("kstate_meta").unwrap(), b"header", raw)
        .unwrap();
}

/// The one table file of the database at `path`.
fn table_file(path: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

#[test]
fn damaged_stores_are_failures_named_in_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    let kv = |name: &str| {
        let path = app.join("0_0").join("rocksdb").join(name);
        let entries: Entries = (0..200u32)
            .map(|i| (i.to_be_bytes().to_vec(), vec![b'v'; 50]))
            .collect();
        kafka_db(&path, &[("default", entries)], false);
        path
    };
    let current = kv("badcurrent");
    std::fs::write(current.join("CURRENT"), b"MANIFEST-garbage\n").unwrap();
    let missing = kv("nocurrent");
    std::fs::remove_file(missing.join("CURRENT")).unwrap();
    let truncated = kv("truncated");
    let sst = table_file(&truncated);
    let len = std::fs::metadata(&sst).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&sst)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let flipped = kv("bitflip");
    let sst = table_file(&flipped);
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[100] ^= 0x10; // inside the first data block
    std::fs::write(&sst, bytes).unwrap();
    let newer = app.join("0_1").join("newer");
    KvStore::open(&newer, &StoreOptions::default())
        .unwrap()
        .close()
        .unwrap();
    set_header_version(&newer, 99);
    let good = kv("good");

    let damaged = [&current, &missing, &truncated, &flipped, &newer];
    for dry_run in [true, false] {
        let mut args = vec![OsStr::new("upgrade"), app.as_os_str()];
        if dry_run {
            args.push("--dry-run".as_ref());
        }
        let (code, out) = kstate(&args);
        assert_eq!(code, 1, "dry run {dry_run}: {out}");
        assert!(out.contains(", 5 failed,"), "{out}");
        for path in damaged {
            let named = format!("failed: {}: cannot be read", path.display());
            assert!(out.contains(&named), "{named}: {out}");
        }
        assert!(
            line_with(&out, &good.display().to_string()).contains("upgrade"),
            "{out}"
        );
    }
    let report = kstate::store::inspect::inspect(&good).unwrap();
    assert_eq!(
        report.header.map(|h| h.value_format),
        Some(kstate::ValueFormat::Timestamped),
        "the sound store was upgraded all the same"
    );
    for path in [&current, &truncated, &flipped, &newer] {
        let (code, out) = kstate(&[OsStr::new("verify"), path.as_os_str()]);
        assert_eq!(code, 1, "{}: {out}", path.display());
        assert!(out.contains("PROBLEM: "), "{out}");
    }
    // Without CURRENT there is no database to verify: not a store (exit 2).
    let (code, out) = kstate(&[OsStr::new("verify"), missing.as_os_str()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no CURRENT file"), "{out}");
}

/// A Kafka store another process has open (here: this test process, through RocksDB's own
/// `LOCK`) is inspected without a byte changing, and `upgrade` and a kstate open refuse it
/// before opening it for writing: its `LOG` stays as it is, no `LOG.old.*` and no kstate
/// lock file appear.
#[test]
fn a_store_another_process_has_open_is_not_touched() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    let held = app.join("0_0").join("rocksdb").join("held");
    let entries: Entries = (0..50u8).map(|i| (vec![i], vec![i])).collect();
    kafka_db(&held, &[("default", entries)], true);
    let db = rocksdb::DB::open_cf(&rocks_options(), &held, ["default", "offsets"]).unwrap();
    let before = snapshot(&app);
    let pid = std::process::id();

    let (code, out) = kstate(&[OsStr::new("inspect"), held.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("in use:           process {pid}")),
        "{out}"
    );
    let (code, out) = kstate(&[OsStr::new("upgrade"), app.as_os_str()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "failed: {}: in use: process {pid}",
            held.display()
        )),
        "{out}"
    );
    // The library's own open (the crash worker opens a key-value store) refuses it too.
    let worker = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"))
        .args(["crash-worker", "--seed", "1", "--commits", "1", "--dir"])
        .arg(&held)
        .output()
        .unwrap();
    let code = worker.status.code().unwrap_or(-1);
    let out = String::from_utf8_lossy(&worker.stdout).into_owned()
        + &String::from_utf8_lossy(&worker.stderr);
    assert_eq!(code, 2, "{out}");
    assert_unchanged_except(&before, &snapshot(&app), &[], "a store in use");
    assert!(
        out.contains(&format!("process {pid} has the database open")),
        "{out}"
    );
    drop(db);
}

/// `--help` documents the exit codes, for the command and for each subcommand.
#[test]
fn help_documents_the_exit_codes() {
    for args in [
        vec!["--help"],
        vec!["upgrade", "--help"],
        vec!["verify", "--help"],
    ] {
        let (code, out) = kstate(&args);
        assert_eq!(code, 0, "{out}");
        for line in [
            "Exit codes:",
            "  0  inspect printed its report",
            "  1  verify found a problem, or upgrade could not read",
            "  2  the command could not run",
        ] {
            assert!(out.contains(line), "{args:?}: {line}: {out}");
        }
    }
}

/// A history row of a Kafka versioned store: versions `(timestamp, value)` oldest first,
/// valid until `next` (KIP-889's segment value layout).
fn versioned_row(next: i64, versions: &[(i64, &[u8])]) -> Vec<u8> {
    let mut out = next.to_be_bytes().to_vec();
    out.extend_from_slice(&versions[0].0.to_be_bytes());
    for (t, v) in versions.iter().rev() {
        out.extend_from_slice(&t.to_be_bytes());
        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
    }
    for (_, v) in versions {
        out.extend_from_slice(v);
    }
    out
}

/// A Kafka Streams versioned key-value store has a plain store's families (`default`,
/// `offsets`) but keys prefixed by a logical segment id and rows of versions: `upgrade`
/// leaves it alone byte for byte (converting it as a plain store would destroy it),
/// `inspect` names it, and the library refuses to adopt it.
#[test]
fn a_kafka_versioned_store_is_never_taken_for_a_plain_one() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    let store = app.join("0_0").join("rocksdb").join("versions");
    let mut entries: Entries = Vec::new();
    for k in 0..20u8 {
        let user = format!("key-{k}").into_bytes();
        let mut latest_key = (-1i64).to_be_bytes().to_vec();
        latest_key.extend_from_slice(&user);
        entries.push((latest_key, timestamped(5_000 + i64::from(k), b"now")));
        let mut history_key = 1i64.to_be_bytes().to_vec();
        history_key.extend_from_slice(&user);
        let row = versioned_row(5_000, &[(1_000, b"first"), (2_000, b""), (3_000, b"third")]);
        entries.push((history_key, row));
    }
    kafka_db(&store, &[("default", entries)], true);
    let before = snapshot(&app);

    let (code, out) = kstate(&[OsStr::new("inspect"), store.as_os_str()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Kafka Streams versioned key-value store"),
        "{out}"
    );
    for extra in [&[][..], &["--dry-run"][..], &["--to", "headers"][..]] {
        let mut args = vec![OsStr::new("upgrade"), app.as_os_str()];
        args.extend(extra.iter().map(OsStr::new));
        let (code, out) = kstate(&args);
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains(&format!(
                "left alone  {} (a Kafka Streams versioned key-value store",
                store.display()
            )),
            "{out}"
        );
        assert!(
            out.contains("0 store(s) upgraded, 1 left alone, 0 failed"),
            "{out}"
        );
    }
    assert_unchanged_except(
        &before,
        &snapshot(&app),
        &[],
        "the CLI on a Kafka versioned store",
    );
    let err =
        KvStore::open(&store, &StoreOptions::default()).expect_err("a versioned store is refused");
    assert_eq!(
        err.code(),
        kstate::Error::FormatMismatch(String::new()).code(),
        "{err}"
    );
    assert!(
        err.to_string().contains("versioned key-value store"),
        "{err}"
    );
    // The library's refusal leaves only its own lock file, next to the store.
    assert_unchanged_except(
        &before,
        &snapshot(&app),
        &["0_0/rocksdb/.versions.kstate-lock"],
        "a refused adoption",
    );

    // A plain store with string keys and values is still converted.
    let plain = app.join("0_0").join("rocksdb").join("plain");
    let entries: Entries = (0..20u8)
        .map(|i| {
            (
                format!("customer-{i:04}").into_bytes(),
                b"{\"n\":1}".to_vec(),
            )
        })
        .collect();
    kafka_db(&plain, &[("default", entries)], true);
    let (code, out) = kstate(&[OsStr::new("upgrade"), app.as_os_str(), "--dry-run".as_ref()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "upgrade     {} (Kafka Streams RocksDBStore",
            plain.display()
        )),
        "{out}"
    );
}
