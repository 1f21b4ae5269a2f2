//! `kstate export --to kafka`: kstate key-value stores handed back to Kafka Streams' own
//! RocksDB layout, window stores to Kafka's segmented layout and versioned stores to Kafka's
//! `RocksDBVersionedStore` layout, checked byte for byte
//! against a model (values, Kafka's `offsets` family, the position, the task checkpoint),
//! the dry run, the refusals, and SIGKILLs of the real `kstate export` process (key-value
//! window and versioned stores) at random moments (and, with the `failpoints` feature, at its crash
//! points): every state left is the complete kstate store or the complete Kafka store with
//! the same offsets, and a rerun finishes.
//!
//! `KSTATE_EXPORT_KILLS` sets the number of killed exports (default 50).

#[allow(dead_code)]
#[path = "support/workload.rs"]
mod workload;

#[path = "support/child.rs"]
mod child;

#[allow(dead_code)]
#[path = "support/workload_versioned.rs"]
mod workload_versioned;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use child::kill_at;
use kstate::store::export::{export, kafka_target, newer_table_files, plan, ExportPlan};
use kstate::store::{SessionOptions, SessionStore, WindowOptions, WindowStore};
use kstate::{ErrorCode, KvStore, StoreOptions, TopicPartition, ValueFormat};
use rocksdb::{Options, DB};
use workload::{Model, Rng, WorkloadConfig};

const TOPIC: &str = "app-s-changelog";

/// A position on `input` partition 0 at `offset`: in the Kafka Streams adapter's metadata
/// layout (`[u8 1]`, u16 topic length) or in Kafka's `PositionSerde` v0 (`[u8 0]`, i32).
fn position(adapter: bool, offset: i64) -> Vec<u8> {
    let mut m = vec![u8::from(adapter)];
    m.extend_from_slice(&1i32.to_be_bytes());
    if adapter {
        m.extend_from_slice(&5u16.to_be_bytes());
    } else {
        m.extend_from_slice(&5i32.to_be_bytes());
    }
    m.extend_from_slice(b"input");
    m.extend_from_slice(&1i32.to_be_bytes());
    m.extend_from_slice(&0i32.to_be_bytes());
    m.extend_from_slice(&offset.to_be_bytes());
    m
}

fn options(format: ValueFormat) -> StoreOptions {
    StoreOptions {
        value_format: format,
        ..StoreOptions::default()
    }
}

/// Writes 300 keys in two commits (offsets 41 then 99, with a position), then uncommitted
/// writes that a close discards. Returns the committed entries, raw.
fn write_store(path: &Path, format: ValueFormat) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let store = KvStore::open(path, &options(format)).unwrap();
    let put = |i: usize, tag: &str| {
        let key = format!("key-{i:04}");
        let value = format!("{tag}-{i}");
        match format {
            ValueFormat::Plain => store.put_raw(key.as_bytes(), Some(value.as_bytes())),
            _ => store.put(key.as_bytes(), value.as_bytes(), 1000 + i as i64),
        }
        .unwrap();
    };
    for i in 0..200 {
        put(i, "first");
    }
    let tp0 = TopicPartition::new(TOPIC, 0);
    let tp1 = TopicPartition::new(TOPIC, 1);
    store
        .commit(&[(tp0.clone(), Some(41))], Some(&position(true, 41)))
        .unwrap();
    for i in 100..300 {
        put(i, "second");
    }
    store.delete_raw(b"key-0007").unwrap();
    store
        .commit(
            &[(tp0, Some(99)), (tp1, Some(-4))],
            Some(&position(true, 99)),
        )
        .unwrap();
    let committed = workload::dump(&store).unwrap();
    for i in 0..50 {
        put(i, "uncommitted");
    }
    store.close().unwrap();
    committed
}

/// Every entry of column family `family` of the RocksDB database at `path`, read-only.
fn family_entries(path: &Path, family: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let families = DB::list_cf(&Options::default(), path).unwrap();
    let db = DB::open_cf_for_read_only(&Options::default(), path, &families, false).unwrap();
    let cf = db.cf_handle(family).unwrap();
    db.iterator_cf(cf, rocksdb::IteratorMode::Start)
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn sorted_families(path: &Path) -> Vec<String> {
    let mut f = DB::list_cf(&Options::default(), path).unwrap();
    f.sort();
    f
}

/// Every path under `dir` (relative), recursively.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Files under `dir` with their contents, RocksDB's info logs aside (a read-only open may
/// rotate them).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    tree(dir)
        .into_iter()
        .filter(|p| !p.rsplit('/').next().unwrap_or("").starts_with("LOG"))
        .filter_map(|p| {
            let full = dir.join(&p);
            full.is_file().then(|| (p, std::fs::read(full).unwrap()))
        })
        .collect()
}

/// [`snapshot`] of a directory holding an open store, once two in a row 200 ms apart agree:
/// the store may still be compacting what its open found (its metadata family compacts
/// every level-0 file), which is the owner's doing, not the refused export's.
fn settled_snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut last = snapshot(dir);
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let now = snapshot(dir);
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("{} kept changing", dir.display());
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// The Kafka `offsets` family expected for the commit of [`write_store`].
fn expected_offsets() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut want = BTreeMap::new();
    want.insert(
        format!("{TOPIC}-0").into_bytes(),
        99i64.to_be_bytes().to_vec(),
    );
    want.insert(
        format!("{TOPIC}-1").into_bytes(),
        (-4i64).to_be_bytes().to_vec(),
    );
    want.insert(b"status".to_vec(), vec![0; 8]);
    want.insert(b"position".to_vec(), position(false, 99));
    want
}

#[test]
fn export_of_each_format_and_layout_matches_the_model_and_reopens_in_kstate() {
    for format in [
        ValueFormat::Plain,
        ValueFormat::Timestamped,
        ValueFormat::Headers,
    ] {
        for adopted in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let task = dir.path().join("app").join("0_0");
            let source = if adopted {
                task.join("rocksdb").join("s")
            } else {
                task.join("s")
            };
            let committed = write_store(&source, format);
            assert_eq!(committed.len(), 299);
            let target = task.join("rocksdb").join("s");
            assert_eq!(kafka_target(&source).unwrap(), target);
            let ExportPlan::Export { newer_tables, .. } = plan(&source).unwrap() else {
                panic!("not a kstate store to export");
            };
            assert_eq!(
                newer_tables, 0,
                "kstate wrote a table Kafka's RocksDB cannot read"
            );
            let done = export(&source, false).unwrap().unwrap();
            assert_eq!(done.tables_rewritten, 0);
            let case = format!("{} store, adopted {adopted}", format.name());
            assert_eq!(done.target, target, "{case}");
            assert!(done.position, "{case}");
            assert_eq!(done.offsets.len(), 2, "{case}");
            // Only Kafka's families, holding exactly the committed entries and offsets.
            let data = match format {
                ValueFormat::Plain => "default",
                ValueFormat::Timestamped => "keyValueWithTimestamp",
                ValueFormat::Headers => "keyValueWithTimestampAndHeaders",
            };
            let mut want_families = vec!["default".to_string(), "offsets".to_string()];
            if format != ValueFormat::Plain {
                want_families.push(data.to_string());
            }
            want_families.sort();
            assert_eq!(sorted_families(&target), want_families, "{case}");
            assert_eq!(family_entries(&target, data), committed, "{case}");
            assert_eq!(
                family_entries(&target, "offsets"),
                expected_offsets(),
                "{case}"
            );
            assert!(newer_table_files(&target).unwrap().is_empty(), "{case}");
            // Nothing of kstate's is left in the task directory.
            assert_eq!(
                tree(&task)
                    .iter()
                    .filter(|p| !p.starts_with("rocksdb/s/"))
                    .cloned()
                    .collect::<Vec<_>>(),
                vec!["rocksdb".to_string(), "rocksdb/s".to_string()],
                "{case}"
            );
            // The other direction: kstate adopts the exported store, offsets and position
            // included, and every value is there.
            let back = KvStore::open(&target, &options(format)).unwrap();
            assert_eq!(workload::dump(&back).unwrap(), committed, "{case}");
            assert_eq!(
                back.committed_offset(&TopicPartition::new(TOPIC, 0))
                    .unwrap(),
                Some(99)
            );
            assert_eq!(
                back.committed_offset(&TopicPartition::new(TOPIC, 1))
                    .unwrap(),
                Some(-4)
            );
            assert_eq!(
                back.committed_metadata().unwrap(),
                Some(position(true, 99)),
                "{case}"
            );
            back.close().unwrap();
        }
    }
}

#[test]
fn legacy_checkpoint_is_merged_into_the_task_file() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("app").join("0_0");
    write_store(&task.join("s"), ValueFormat::Timestamped);
    std::fs::write(task.join(".checkpoint"), "0\n1\nother-changelog 0 7\n").unwrap();
    let done = export(&task.join("s"), true).unwrap().unwrap();
    assert_eq!(done.checkpoint_file, Some(task.join(".checkpoint")));
    assert_eq!(
        std::fs::read_to_string(task.join(".checkpoint")).unwrap(),
        format!("0\n3\n{TOPIC} 0 99\n{TOPIC} 1 -4\nother-changelog 0 7\n")
    );
}

/// Window starts of [`window_store`]'s records: three segments of 300 000 ms (retention
/// 600 000 ms), none expired.
const WINDOW_STARTS: [i64; 3] = [1_000, 301_000, 601_000];

/// Creates a kstate timestamped window store at `path`: five keys in each window of
/// [`WINDOW_STARTS`] committed with offsets 99 and -4 and a position, then uncommitted
/// writes that the close discards. Returns Kafka's segment directory name -> the committed
/// entries of that segment (Kafka's window key -> timestamped value).
fn window_store(path: &Path) -> BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> {
    let store = WindowStore::open(
        path,
        &WindowOptions::new(600_000, 1_000, false).with_store(options(ValueFormat::Timestamped)),
    )
    .unwrap();
    let name = path.file_name().unwrap().to_str().unwrap();
    let mut want: BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> = BTreeMap::new();
    for start in WINDOW_STARTS {
        for k in 0..5 {
            let key = format!("wkey-{k}");
            let value = format!("v-{k}-{start}");
            store
                .put(key.as_bytes(), Some(value.as_bytes()), start + k, start)
                .unwrap();
            let mut kafka_key = key.into_bytes();
            kafka_key.extend_from_slice(&start.to_be_bytes());
            kafka_key.extend_from_slice(&0i32.to_be_bytes());
            let mut stored = (start + k).to_be_bytes().to_vec();
            stored.extend_from_slice(value.as_bytes());
            want.entry(format!("{name}.{}", start / 300_000 * 300_000))
                .or_default()
                .insert(kafka_key, stored);
        }
    }
    store
        .commit(
            &[
                (TopicPartition::new(TOPIC, 0), Some(99)),
                (TopicPartition::new(TOPIC, 1), Some(-4)),
            ],
            Some(&position(true, 99)),
        )
        .unwrap();
    store
        .put(b"wkey-0", Some(b"uncommitted"), 1_500, 1_000)
        .unwrap();
    store.close().unwrap();
    want
}

/// Checks that `path` now holds exactly Kafka's segments `want` with the offsets of
/// [`window_store`] in each, and nothing of kstate's.
fn assert_kafka_window_store(path: &Path, want: &BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>) {
    assert_kafka_segments(path, want);
    // No kstate lock or side directory beside the store.
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let beside: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(&name) && *n != name)
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
}

/// Checks that `path` holds exactly Kafka's segments `want` with the offsets of
/// [`window_store`] in each (whatever is beside it).
fn assert_kafka_segments(path: &Path, want: &BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>) {
    let dirs: Vec<String> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(dirs, want.keys().cloned().collect::<Vec<_>>());
    for (segment, entries) in want {
        let dir = path.join(segment);
        assert_eq!(
            sorted_families(&dir),
            vec!["default", "keyValueWithTimestamp", "offsets"],
            "{segment}"
        );
        assert_eq!(family_entries(&dir, "keyValueWithTimestamp"), *entries);
        assert!(family_entries(&dir, "default").is_empty(), "{segment}");
        assert_eq!(
            family_entries(&dir, "offsets"),
            expected_offsets(),
            "{segment}"
        );
        assert!(newer_table_files(&dir).unwrap().is_empty(), "{segment}");
    }
}

fn cli(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kstate"))
        .args(args)
        .env_remove("KSTATE_FAILPOINT_ODDS")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn dry_run_changes_nothing_and_window_stores_are_exported_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    let committed = write_store(&app.join("0_0").join("s"), ValueFormat::Timestamped);
    write_store(
        &app.join("0_1").join("rocksdb").join("p"),
        ValueFormat::Plain,
    );
    let window = app.join("1_0").join("w");
    let segments = window_store(&window);
    assert_eq!(
        plan(&window).unwrap(),
        ExportPlan::Segmented {
            kind: "window",
            kafka_class: "RocksDBTimestampedWindowStore (Stores.persistentTimestampedWindowStore)",
            segments: 3,
            offsets: [
                (TopicPartition::new(TOPIC, 0), 99),
                (TopicPartition::new(TOPIC, 1), -4)
            ]
            .into_iter()
            .collect(),
        }
    );
    let before = snapshot(&app);
    let app_arg = app.to_str().unwrap();
    let (code, out) = cli(&["export", "--to", "kafka", app_arg, "--dry-run"]);
    assert_eq!(code, 0, "every store can be exported: {out}");
    assert!(out.contains("dry run: nothing was changed"), "{out}");
    assert!(!out.contains("NOT EXPORTED"), "{out}");
    assert!(
        out.contains(
            "(kstate window store; offsets [app-s-changelog-0=99, app-s-changelog-1=-4]; 3 \
             Kafka segment(s) written in place; opens as Kafka's RocksDBTimestampedWindowStore"
        ),
        "{out}"
    );
    assert_eq!(out.matches("  export  ").count(), 3, "{out}");
    assert_eq!(snapshot(&app), before, "the dry run changed files");

    let (code, out) = cli(&["export", "--to", "kafka", app_arg]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("3 store(s) exported to Kafka's stores, 0 not exported"),
        "{out}"
    );
    assert!(
        out.contains("(3 Kafka segment(s), 15 records, 2 offsets and the position)"),
        "{out}"
    );
    assert_eq!(
        family_entries(
            &app.join("0_0").join("rocksdb").join("s"),
            "keyValueWithTimestamp"
        ),
        committed
    );
    // The window store is Kafka's layout in the same place.
    assert_kafka_window_store(&window, &segments);
    // A second run finds only Kafka's stores.
    let (code, out) = cli(&["export", "--to", "kafka", app_arg]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 store(s) exported"), "{out}");
    assert!(
        out.contains("a Kafka Streams window or session store: left as it is)"),
        "{out}"
    );
    // What an export killed right after its exchange leaves beside the window store (the
    // old kstate store in the side directory, the lock file) is listed by a dry run and
    // removed by a rerun; Kafka's segments are not touched.
    let side = app.join("1_0").join(".w.kstate-swap");
    copy_tree(&app.join("0_1").join("rocksdb").join("p"), &side);
    std::fs::write(app.join("1_0").join(".w.kstate-lock"), b"").unwrap();
    let before = snapshot(&app);
    let window_arg = window.to_str().unwrap();
    let (code, out) = cli(&["export", "--to", "kafka", window_arg, "--dry-run"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("; kstate leftovers beside it are removed)"),
        "{out}"
    );
    assert_eq!(snapshot(&app), before, "the dry run changed files");
    let (code, out) = cli(&["export", "--to", "kafka", window_arg]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("; kstate leftovers beside it removed)"),
        "{out}"
    );
    assert!(!side.exists());
    assert_kafka_window_store(&window, &segments);
}

#[test]
fn a_window_stores_offsets_are_merged_into_its_task_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("app").join("1_0");
    let window = task.join("w");
    let segments = window_store(&window);
    std::fs::write(task.join(".checkpoint"), "0\n1\nother-changelog 0 7\n").unwrap();
    let done = export(&window, true).unwrap().unwrap();
    assert_eq!(done.target, window);
    assert!(done.position);
    assert_eq!(done.checkpoint_file, Some(task.join(".checkpoint")));
    let report = done.segmented.unwrap();
    assert_eq!((report.segments, report.records), (3, 15));
    assert_eq!(
        std::fs::read_to_string(task.join(".checkpoint")).unwrap(),
        format!("0\n3\n{TOPIC} 0 99\n{TOPIC} 1 -4\nother-changelog 0 7\n")
    );
    assert_kafka_window_store(&window, &segments);
}

#[test]
fn plain_window_and_session_stores_become_kafkas_default_family_segments() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("app").join("0_0");
    let commit = [(TopicPartition::new(TOPIC, 0), Some(7))];
    // A plain window store: raw values, Kafka's `default` family.
    let pw = task.join("pw");
    let store = WindowStore::open(
        &pw,
        &WindowOptions::new(600_000, 1_000, false).with_store(options(ValueFormat::Plain)),
    )
    .unwrap();
    store.put_raw(b"k", Some(b"early"), 1_000).unwrap();
    store.put_raw(b"k", Some(b"late"), 301_000).unwrap();
    store.commit(&commit, None).unwrap();
    store.close().unwrap();
    // A session store: segments by session end, Kafka's `default` family.
    let ss = task.join("ss");
    let store = SessionStore::open(&ss, &SessionOptions::new(600_000)).unwrap();
    store.put(b"k", 1_000, 2_000, Some(b"a")).unwrap();
    store.put(b"k", 290_000, 310_000, Some(b"b")).unwrap();
    store.commit(&commit, None).unwrap();
    store.close().unwrap();

    let offsets: BTreeMap<TopicPartition, i64> = [(TopicPartition::new(TOPIC, 0), 7)].into();
    assert_eq!(
        plan(&pw).unwrap(),
        ExportPlan::Segmented {
            kind: "window",
            kafka_class: "RocksDBWindowStore (Stores.persistentWindowStore)",
            segments: 2,
            offsets: offsets.clone(),
        }
    );
    assert_eq!(
        plan(&ss).unwrap(),
        ExportPlan::Segmented {
            kind: "session",
            kafka_class: "RocksDBSessionStore (Stores.persistentSessionStore)",
            segments: 2,
            offsets,
        }
    );
    let (code, out) = cli(&[
        "export",
        "--to",
        "kafka",
        task.parent().unwrap().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("2 store(s) exported to Kafka's stores, 0 not exported"),
        "{out}"
    );

    let window_key = |start: i64| {
        let mut k = b"k".to_vec();
        k.extend_from_slice(&start.to_be_bytes());
        k.extend_from_slice(&0i32.to_be_bytes());
        k
    };
    let session_key = |start: i64, end: i64| {
        let mut k = b"k".to_vec();
        k.extend_from_slice(&end.to_be_bytes());
        k.extend_from_slice(&start.to_be_bytes());
        k
    };
    let mut want_offsets = BTreeMap::new();
    want_offsets.insert(
        format!("{TOPIC}-0").into_bytes(),
        7i64.to_be_bytes().to_vec(),
    );
    want_offsets.insert(b"status".to_vec(), vec![0; 8]);
    let want: [(std::path::PathBuf, Vec<u8>, &[u8]); 4] = [
        (pw.join("pw.0"), window_key(1_000), b"early"),
        (pw.join("pw.300000"), window_key(301_000), b"late"),
        (ss.join("ss.0"), session_key(1_000, 2_000), b"a"),
        (ss.join("ss.300000"), session_key(290_000, 310_000), b"b"),
    ];
    for (segment, key, value) in want {
        assert_eq!(
            sorted_families(&segment),
            vec!["default", "offsets"],
            "{segment:?}"
        );
        assert_eq!(
            family_entries(&segment, "default"),
            [(key, value.to_vec())].into(),
            "{segment:?}"
        );
        assert_eq!(
            family_entries(&segment, "offsets"),
            want_offsets,
            "{segment:?}"
        );
    }
    // Kafka's segments only, no kstate file beside or inside the stores.
    let top: Vec<String> = tree(&task)
        .into_iter()
        .filter(|p| p.matches('/').count() < 2)
        .collect();
    assert_eq!(
        top,
        [
            "pw",
            "pw/pw.0",
            "pw/pw.300000",
            "ss",
            "ss/ss.0",
            "ss/ss.300000"
        ]
    );
}

#[test]
fn refusals_leave_everything_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("app").join("0_0");
    let source = task.join("s");
    write_store(&source, ValueFormat::Timestamped);

    // Open elsewhere: kstate's lock.
    let open = KvStore::open(&source, &options(ValueFormat::Timestamped)).unwrap();
    let before = settled_snapshot(&task);
    let err = export(&source, false).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Locked, "{err}");
    assert_eq!(snapshot(&task), before);
    open.close().unwrap();

    // Kafka's directory for it holds another store.
    write_store(&task.join("rocksdb").join("s"), ValueFormat::Plain);
    let before = snapshot(&task);
    let err = export(&source, false).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(
        err.to_string().contains("already holds a kstate store"),
        "{err}"
    );
    assert_eq!(snapshot(&task), before);

    // A window store open elsewhere.
    let window = dir.path().join("w");
    window_store(&window);
    let open = WindowStore::open(
        &window,
        &WindowOptions::new(600_000, 1_000, false).with_store(options(ValueFormat::Timestamped)),
    )
    .unwrap();
    let before = snapshot(&window);
    let err = export(&window, false).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Locked, "{err}");
    assert_eq!(snapshot(&window), before);
    open.close().unwrap();

    // A headers store still upgrading plain values.
    let mixed = dir.path().join("x").join("m");
    write_store(&mixed, ValueFormat::Plain);
    KvStore::open(&mixed, &options(ValueFormat::Headers))
        .unwrap()
        .close()
        .unwrap();
    let err = export(&mixed, false).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FormatMismatch, "{err}");

    // Nothing there.
    let err = export(&dir.path().join("none"), false).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAStore, "{err}");
}

// ----- SIGKILLs -------------------------------------------------------------------------

fn kills() -> usize {
    std::env::var("KSTATE_EXPORT_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50)
}

/// What the crash-worker workload committed up to `offset` (seeds in order, each with the
/// offset it started from).
fn model_at(chain: &[(u64, i64)], offset: i64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = Model::default();
    for (i, &(seed, start)) in chain.iter().enumerate() {
        let end = chain
            .get(i + 1)
            .map_or(offset, |&(_, next)| next.min(offset));
        if end > start {
            workload::replay_commits(
                &mut model,
                seed,
                WorkloadConfig::default(),
                (end - start) as u64,
            );
        }
    }
    model.committed
}

/// Runs the crash worker on `path` with `seed`: to completion after `commits` commits, or
/// killed after `kill_after`. Returns the offset it started from, if it got that far.
fn worker(path: &Path, seed: u64, commits: Option<u64>, kill_after: Duration) -> Option<i64> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"));
    cmd.args(["crash-worker", "--dir"])
        .arg(path)
        .args(["--seed", &seed.to_string(), "--max-uncommitted", "32768"])
        .env_remove("KSTATE_FAILPOINT_ODDS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(n) = commits {
        cmd.args(["--commits", &n.to_string()]);
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    if commits.is_none() {
        std::thread::sleep(kill_after);
        let _ = child.kill();
    }
    child.wait().unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut { stdout }, &mut out).unwrap();
    out.lines()
        .find_map(|l| l.strip_prefix("ready "))
        .map(|s| s.trim().parse().unwrap())
}

/// The committed offset and entries of the store at `path` as kstate reads it, from a copy
/// (a kstate store, or a Kafka store kstate adopts), so the original is not touched.
fn read_copy(path: &Path, scratch: &Path) -> (Option<i64>, BTreeMap<Vec<u8>, Vec<u8>>) {
    let _ = std::fs::remove_dir_all(scratch);
    copy_tree(path, scratch);
    let store = KvStore::open(scratch, &StoreOptions::default()).unwrap();
    let offset = store
        .committed_offset(&workload::changelog_partition())
        .unwrap();
    let entries = workload::dump(&store).unwrap();
    store.close().unwrap();
    std::fs::remove_dir_all(scratch).unwrap();
    (offset, entries)
}

fn is_kstate(path: &Path) -> bool {
    path.join("CURRENT").is_file()
        && DB::list_cf(&Options::default(), path)
            .unwrap()
            .iter()
            .any(|f| f == "kstate_meta")
}

/// Checks a complete Kafka store at `target`: Kafka's families only, readable tables, and
/// the model's entries at its offset. Returns the offset.
fn check_kafka(target: &Path, chain: &[(u64, i64)], scratch: &Path, round: usize) -> i64 {
    assert_eq!(
        sorted_families(target),
        ["default", "keyValueWithTimestamp", "offsets"],
        "round {round}: not Kafka's layout"
    );
    assert!(
        newer_table_files(target).unwrap().is_empty(),
        "round {round}"
    );
    let (offset, entries) = read_copy(target, scratch);
    let offset = offset.unwrap_or(0);
    assert_eq!(
        entries,
        model_at(chain, offset),
        "round {round}: Kafka store differs from the model at {offset}"
    );
    offset
}

/// Runs `kstate export --to kafka path` and SIGKILLs it after `after_ms`; every other round
/// (with the `failpoints` feature) it dies at one of `steps` instead (a crash point, always
/// taken). True when the kill interrupted the export.
fn kill_export(path: &Path, round: usize, steps: &[&str], after_ms: u64) -> bool {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate"));
    cmd.args(["export", "--to", "kafka"])
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_remove("KSTATE_FAILPOINT_ODDS")
        .env_remove("KSTATE_FAILPOINT_ONLY");
    let at_a_step = cfg!(feature = "failpoints") && round % 2 == 0;
    if at_a_step {
        cmd.env("KSTATE_FAILPOINT_ODDS", "1")
            .env("KSTATE_FAILPOINT_ONLY", steps[(round / 2) % steps.len()]);
    }
    let mut child = cmd.spawn().unwrap();
    // Armed at a step, the export kills itself there: wait for it. A timer, sized on an
    // export of an idle machine, can land first on a busy one, and the step would then go
    // untested.
    let wait = if at_a_step {
        Duration::from_secs(120)
    } else {
        Duration::from_millis(after_ms)
    };
    kill_at(&mut child, Instant::now() + wait);
    child.wait().unwrap().signal() == Some(libc::SIGKILL)
}

/// SIGKILLs of `kstate export` on a window store (at random moments, and with the
/// `failpoints` feature at the steps around its exchange): the store directory holds the
/// complete kstate store (which reopens with its committed offsets) or exactly Kafka's
/// segments, and a rerun leaves exactly Kafka's segments and no kstate file.
#[test]
fn kills_during_a_window_export_leave_the_kstate_store_or_kafkas_segments() {
    let dir = tempfile::tempdir().unwrap();
    let calibration = dir.path().join("calibration").join("1_0").join("w");
    window_store(&calibration);
    let t0 = Instant::now();
    assert_eq!(
        cli(&["export", "--to", "kafka", calibration.to_str().unwrap()]).0,
        0
    );
    let span = (t0.elapsed().as_millis() as u64 * 11 / 10).max(20);
    let mut rng = Rng::new(0x5E_6E ^ u64::from(std::process::id()));
    let (mut kstate_seen, mut kafka_seen, mut killed) = (0, 0, 0);
    let rounds = (kills() / 2).max(4);
    for round in 0..rounds {
        let window = dir.path().join(format!("r{round}")).join("1_0").join("w");
        let segments = window_store(&window);
        const STEPS: [&str; 3] = [
            "swap-before-exchange",
            "swap-after-exchange",
            "export-segmented-exchanged",
        ];
        killed += usize::from(kill_export(&window, round, &STEPS, rng.below(2 * span)));
        if is_kstate(&window) {
            kstate_seen += 1;
            let store = WindowStore::open(
                &window,
                &WindowOptions::new(600_000, 1_000, false)
                    .with_store(options(ValueFormat::Timestamped)),
            )
            .unwrap();
            assert_eq!(
                store
                    .committed_offset(&TopicPartition::new(TOPIC, 0))
                    .unwrap(),
                Some(99),
                "round {round}"
            );
            store.close().unwrap();
        } else {
            kafka_seen += 1;
            assert_kafka_segments(&window, &segments);
        }
        let (code, out) = cli(&["export", "--to", "kafka", window.to_str().unwrap()]);
        assert_eq!(code, 0, "round {round}: {out}");
        assert_kafka_window_store(&window, &segments);
    }
    eprintln!(
        "{rounds} window exports, {killed} SIGKILLed before they ended: {kstate_seen} left the \
         kstate store, {kafka_seen} Kafka's segments"
    );
    assert!(kstate_seen > 0 || !cfg!(feature = "failpoints"));
}

#[test]
fn kills_during_an_export_leave_the_kstate_or_the_kafka_store() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    let mut rng = Rng::new(0xE4_0427 ^ u64::from(std::process::id()));
    let (mut killed, mut finished, mut kafka_seen, mut kstate_seen) = (0, 0, 0, 0);
    let mut kafka_after_kill = 0;
    // How long one export takes here: kills are spread over that time.
    let calibration = dir.path().join("calibration").join("0_0").join("s");
    worker(&calibration, 1, Some(3), Duration::ZERO).unwrap();
    let t0 = Instant::now();
    assert_eq!(
        cli(&["export", "--to", "kafka", calibration.to_str().unwrap()]).0,
        0
    );
    let span = (t0.elapsed().as_millis() as u64 * 11 / 10).max(20);
    let started = Instant::now();
    let total = kills();
    let mut round = 0;
    while killed < total {
        round += 1;
        let task = dir.path().join(format!("r{round}")).join("app").join("0_0");
        let adopted = round % 2 == 0;
        let source = if adopted {
            task.join("rocksdb").join("s")
        } else {
            task.join("s")
        };
        let target = task.join("rocksdb").join("s");
        // A store with a few commits, then (every other round) a writer killed mid-work:
        // a spilled transaction, a commit in doubt or a WAL to replay for the export.
        let mut chain = Vec::new();
        let seed = rng.next_u64();
        chain.push((
            seed,
            worker(&source, seed, Some(3), Duration::ZERO).unwrap(),
        ));
        if round % 2 == 1 {
            let seed = rng.next_u64();
            if let Some(start) = worker(
                &source,
                seed,
                None,
                Duration::from_millis(40 + rng.below(80)),
            ) {
                chain.push((seed, start));
            }
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate"));
        cmd.args(["export", "--to", "kafka"])
            .arg(if round % 3 == 0 {
                task.parent().unwrap()
            } else {
                &source
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.env_remove("KSTATE_FAILPOINT_ODDS")
            .env_remove("KSTATE_FAILPOINT_ONLY");
        if cfg!(feature = "failpoints") && rng.below(2) == 0 {
            // Killed at one step of the export (those of its layout; the others let it
            // finish), or at a crash point of the recovery it starts with.
            const STEPS: [&str; 7] = [
                "export-checkpointed",
                "export-built",
                "export-published",
                "export-source-moved",
                "swap-before-exchange",
                "swap-after-exchange",
                "export-swapped",
            ];
            match rng.below(8) {
                7 => cmd.env("KSTATE_FAILPOINT_ODDS", "2"),
                i => cmd
                    .env("KSTATE_FAILPOINT_ODDS", "1")
                    .env("KSTATE_FAILPOINT_ONLY", STEPS[i as usize]),
            };
        }
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(rng.below(2 * span)));
        let _ = child.kill();
        let output = child.wait_with_output().unwrap();
        let status = output.status;
        let was_killed = !status.success();
        if status.success() {
            finished += 1;
        } else {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(
                status.signal(),
                Some(libc::SIGKILL),
                "round {round}: export failed: {status:?} {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            killed += 1;
        }
        // The store kstate's adapter opens (its own directory first) and the one Kafka
        // opens: each complete, with the same offset when both are there.
        let own = task.join("s");
        let kstate_side = if own.join("CURRENT").is_file() {
            own
        } else {
            target.clone()
        };
        let mut offsets = Vec::new();
        if is_kstate(&kstate_side) {
            kstate_seen += 1;
            let (offset, entries) = read_copy(&kstate_side, &scratch);
            let offset = offset.unwrap_or(0);
            assert_eq!(
                entries,
                model_at(&chain, offset),
                "round {round}: kstate store differs"
            );
            offsets.push(offset);
        }
        if target.join("CURRENT").is_file() && !is_kstate(&target) {
            kafka_seen += 1;
            kafka_after_kill += usize::from(was_killed);
            offsets.push(check_kafka(&target, &chain, &scratch, round));
        }
        assert!(
            !offsets.is_empty(),
            "round {round}: neither store is complete"
        );
        assert!(
            offsets.windows(2).all(|w| w[0] == w[1]),
            "round {round}: offsets differ {offsets:?}"
        );
        // A rerun finishes: Kafka's store only, the same offset, no kstate file left.
        let (code, out) = cli(&["export", "--to", "kafka", source.to_str().unwrap()]);
        assert_eq!(code, 0, "round {round}: rerun failed: {out}");
        assert_eq!(
            check_kafka(&target, &chain, &scratch, round),
            offsets[0],
            "round {round}"
        );
        let rest: Vec<String> = tree(&task)
            .into_iter()
            .filter(|p| !p.starts_with("rocksdb/s/"))
            .collect();
        assert_eq!(rest, ["rocksdb", "rocksdb/s"], "round {round}: leftovers");
        std::fs::remove_dir_all(dir.path().join(format!("r{round}"))).unwrap();
    }
    eprintln!(
        "export kills: {killed} SIGKILLs ({finished} exports finished first) in {round} rounds, {:.1}s \
         (kills spread over {span} ms); states seen: {kstate_seen} kstate, {kafka_seen} Kafka \
         ({kafka_after_kill} of them after a kill)",
        started.elapsed().as_secs_f64()
    );
    if cfg!(feature = "failpoints") {
        // Kills at named steps reach past the publication whatever the machine's speed.
        assert!(
            kafka_after_kill > 0 && kstate_seen > 0,
            "kills never landed on both sides"
        );
    }
}

/// A kstate versioned store at `path` after a workload, committed at offset 99, and what
/// it answers (latest, as-of reads, every version, stream time).
fn versioned_store(path: &Path) -> Vec<String> {
    use kstate::store::VersionedStore;
    use workload_versioned as w;
    let store = VersionedStore::open(path, &versioned_options()).unwrap();
    for op in w::VWorkload::new(5).take(800) {
        w::apply(&store, &op, 1).unwrap();
    }
    store.rollback().unwrap();
    store
        .commit(&[(TopicPartition::new(TOPIC, 0), Some(99))], None)
        .unwrap();
    let answers = w::dump(&store, kstate::Isolation::ReadCommitted);
    store.close().unwrap();
    answers
}

fn versioned_options() -> kstate::store::VersionedOptions {
    kstate::store::VersionedOptions::new(workload_versioned::RETENTION)
        .with_segment_interval(workload_versioned::INTERVAL)
}

/// The Kafka versioned store at `target` (Kafka's families, its offsets family at 99),
/// adopted by a kstate versioned store (on a copy), answers `want`.
fn assert_kafka_versioned(target: &Path, want: &[String], scratch: &Path) {
    assert_eq!(sorted_families(target), ["default", "offsets"]);
    let offsets = family_entries(target, "offsets");
    assert_eq!(
        offsets.get(format!("{TOPIC}-0").as_bytes()),
        Some(&99i64.to_be_bytes().to_vec())
    );
    let _ = std::fs::remove_dir_all(scratch);
    copy_tree(target, scratch);
    let store = kstate::store::VersionedStore::open(scratch, &versioned_options()).unwrap();
    assert_eq!(
        store
            .committed_offset(&TopicPartition::new(TOPIC, 0))
            .unwrap(),
        Some(99)
    );
    assert_eq!(
        workload_versioned::dump(&store, kstate::Isolation::ReadCommitted)[1..],
        want[1..],
        "every answer but the stream time (rebuilt from the versions)"
    );
    store.close().unwrap();
}

/// `kstate export --to kafka` moves a kstate versioned store to Kafka's directory for it
/// (`<taskDir>/rocksdb/<name>`) in Kafka's layout with its offsets; SIGKILLs of the export
/// (at random and at its crash points) leave the kstate store, Kafka's store not yet moved,
/// or Kafka's store in place, and a rerun finishes.
#[test]
fn versioned_stores_are_exported_to_kafkas_directory_and_kills_leave_one_whole_store() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    let calibration = dir.path().join("c").join("1_0").join("vs");
    let want = versioned_store(&calibration);
    let t0 = Instant::now();
    let (code, out) = cli(&[
        "export",
        "--to",
        "kafka",
        calibration.parent().unwrap().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let span = (t0.elapsed().as_millis() as u64 * 11 / 10).max(20);
    let target = kafka_target(&calibration).unwrap();
    assert!(out.contains(&format!("-> {}", target.display())), "{out}");
    assert!(!calibration.exists());
    assert_kafka_versioned(&target, &want, &scratch);

    let mut rng = Rng::new(0x7E_5E ^ u64::from(std::process::id()));
    let (mut seen, mut killed) = ([0usize; 3], 0);
    let rounds = (kills() / 4).max(8);
    for round in 0..rounds {
        let path = dir.path().join(format!("r{round}")).join("1_0").join("vs");
        let want = versioned_store(&path);
        let target = kafka_target(&path).unwrap();
        const STEPS: [&str; 4] = [
            "swap-before-exchange",
            "swap-after-exchange",
            "export-segmented-exchanged",
            "export-versioned-converted",
        ];
        killed += usize::from(kill_export(&path, round, &STEPS, rng.below(2 * span)));
        if target.exists() {
            seen[2] += 1;
            assert!(!path.exists(), "round {round}: both directories");
        } else if is_kstate(&path) {
            seen[0] += 1;
        } else {
            // Converted, not yet moved: Kafka's store (a kstate open would adopt it again).
            seen[1] += 1;
            assert_kafka_versioned(&path, &want, &scratch);
        }
        let (code, out) = cli(&["export", "--to", "kafka", path.to_str().unwrap()]);
        assert_eq!(code, 0, "round {round}: {out}");
        assert!(!path.exists(), "round {round}: {out}");
        assert_kafka_versioned(&target, &want, &scratch);
    }
    eprintln!(
        "{rounds} versioned exports, {killed} SIGKILLed before they ended: {} left the kstate \
         store, {} Kafka's store not yet moved, {} Kafka's store in place",
        seen[0], seen[1], seen[2]
    );
    assert!(!cfg!(feature = "failpoints") || (seen[0] > 0 && seen[1] > 0));
}
