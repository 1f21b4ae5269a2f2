//! The `kstate` CLI's argument handling and its walk of store and state directories, run
//! in-process: an argv built from the input (subcommands, flags and values, garbage, help
//! and version requests) over a small directory tree built from the input (files named
//! `CURRENT`, `MANIFEST-*`, `*.log`, `*.sst`, `LOCK`, `.checkpoint`, segment-like
//! directories `<store>.<segmentId>`, task directories, garbage contents, and copies of a
//! real kstate store and of a Kafka-style RocksDB store).
//!
//! Properties:
//! * no panic, and the exit code is one of the documented ones (0, 1, 2);
//! * nothing outside the state directory the command was given changes (a sibling
//!   directory with store-like files is compared byte for byte);
//! * `inspect` and `verify` change nothing, nor does a `--dry-run`, nor a command that
//!   exits 2 ("nothing was changed"), nor an argv clap refuses.
//!
//! `store_dir` covers what `inspect` and `verify` make of the records inside a database;
//! this target covers the command line and the directories around databases. The hidden
//! worker commands and `demo` (which spawn and kill processes) are parsed but never run,
//! and neither is a command whose directory lies outside the sandbox.
#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kstate_fuzz::arbitrary::{Result, Unstructured};
use kstate_fuzz::{bytes, name};
use libfuzzer_sys::fuzz_target;

// The CLI's own source, compiled into this target:
// `cli::parse` and `cli::dispatch` are what its `main` runs.
#[allow(dead_code, unused_imports)]
#[path = "../../src/bin/kstate.rs"]
mod cli;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});

/// Names a tree is built from: RocksDB's and Kafka Streams' files, and store, task and
/// segment directory names.
const NAMES: &[&str] = &[
    "CURRENT",
    "MANIFEST-000001",
    "MANIFEST-000005",
    "OPTIONS-000007",
    "000004.log",
    "000009.sst",
    "LOCK",
    "IDENTITY",
    "LOG",
    ".checkpoint",
    ".lock",
    "store",
    "store.0",
    "store.60000",
    "store.x",
    "rocksdb",
    "0_0",
    "1_2",
    "kv",
];

/// The per-process sandbox: `root/state` is what commands get, `root/outside` must never
/// change; `template` holds the real stores copied into trees.
struct Sandbox {
    root: PathBuf,
    template: PathBuf,
}

fn sandbox() -> &'static Sandbox {
    static S: std::sync::OnceLock<Sandbox> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("kstate-fuzz-cli-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let template = base.join("template");
        // A kstate key-value store with one commit.
        let kv = kstate::KvStore::open(template.join("kstate"), &kstate::StoreOptions::default())
            .expect("template store");
        kv.put(b"k", b"v", 1).expect("put");
        kv.commit(&[(kstate::TopicPartition::new("t", 0), Some(3))], None)
            .expect("commit");
        kv.close().expect("close");
        // A Kafka Streams plain key-value store (RocksDB's `default` family only).
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        let db = rocksdb::DB::open(&o, template.join("kafka")).expect("template db");
        db.put(b"k", b"v").expect("put");
        drop(db);
        Sandbox {
            root: base.join("root"),
            template,
        }
    })
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::create_dir_all(to);
    for e in std::fs::read_dir(from).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            let _ = std::fs::copy(&p, to.join(e.file_name()));
        }
    }
}

/// Every file (with its bytes) and directory under `dir`.
fn snapshot(dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.insert(p.clone(), None);
            snapshot(&p, out);
        } else {
            out.insert(p.clone(), Some(std::fs::read(&p).unwrap_or_default()));
        }
    }
}

fn tree(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    snapshot(dir, &mut out);
    out
}

/// A relative path of one to three names.
fn rel(u: &mut Unstructured<'_>) -> Result<PathBuf> {
    let mut p = PathBuf::new();
    for _ in 0..u.int_in_range(1..=3)? {
        p.push(u.choose(NAMES)?);
    }
    Ok(p)
}

/// Builds the tree under `state` (and store-like files under `outside`); returns what it
/// created.
fn build(
    u: &mut Unstructured<'_>,
    s: &Sandbox,
    state: &Path,
    outside: &Path,
) -> Result<Vec<PathBuf>> {
    let mut created = Vec::new();
    std::fs::create_dir_all(state).expect("state dir");
    std::fs::create_dir_all(outside).expect("outside dir");
    std::fs::write(outside.join("CURRENT"), b"MANIFEST-000001\n").expect("outside");
    std::fs::write(outside.join(".checkpoint"), b"0\n1\nt 0 5\n").expect("outside");
    copy_dir(&s.template.join("kstate"), &outside.join("kv"));
    for _ in 0..u.int_in_range(0..=8)? {
        let path = state.join(rel(u)?);
        let parent = path.parent().expect("parent");
        // A name already taken by a file cannot be a directory: such entries are skipped.
        if std::fs::create_dir_all(parent).is_err() || path.exists() {
            continue;
        }
        created.push(path.clone());
        match u.int_in_range(0..=8)? {
            0 => {
                let _ = std::fs::create_dir(&path);
            }
            1 | 2 => copy_dir(&s.template.join("kstate"), &path),
            8 => copy_dir(&s.template.join("kafka"), &path),
            3 => {
                let _ = std::fs::write(&path, b"MANIFEST-000001\n");
            }
            4 => {
                let text = format!(
                    "0\n{}\n{} {} {}\n",
                    u.int_in_range(0..=2)?,
                    name(u, 4)?,
                    u.int_in_range(-1..=2)?,
                    u.int_in_range(-5..=9)?
                );
                let _ = std::fs::write(&path, text);
            }
            _ => {
                let _ = std::fs::write(&path, bytes(u, 40)?);
            }
        }
    }
    Ok(created)
}

/// One argv token: a subcommand, flag or value, or garbage.
fn token(
    u: &mut Unstructured<'_>,
    state: &Path,
    outside: &Path,
    created: &[PathBuf],
) -> Result<String> {
    const WORDS: &[&str] = &[
        "inspect",
        "verify",
        "upgrade",
        "export",
        "demo",
        "help",
        "--help",
        "-h",
        "--version",
        "-V",
        "--dry-run",
        "--checkpoint",
        "--to=timestamped",
        "--to=headers",
        "--to=plain",
        "--to=kafka",
        "--to",
        "--batch=0",
        "--batch=1",
        "--batch=-1",
        "--batch",
        "--",
        "-",
        "--bogus",
    ];
    Ok(match u.int_in_range(0..=9)? {
        0..=4 => u.choose(WORDS)?.to_string(),
        5..=7 => path(u, state, created)?,
        8 => match u.int_in_range(0..=2)? {
            0 => state.display().to_string(),
            1 => outside.display().to_string(),
            _ => outside.join("kv").display().to_string(),
        },
        _ => name(u, 6)?,
    })
}

/// A path in the state directory: mostly one the tree holds (or its parent), else any.
fn path(u: &mut Unstructured<'_>, state: &Path, created: &[PathBuf]) -> Result<String> {
    let p = if !created.is_empty() && u.ratio(3, 4)? {
        let p = u.choose(created)?;
        if u.ratio(1, 3)? {
            p.parent().unwrap_or(p).to_path_buf()
        } else {
            p.clone()
        }
    } else {
        state.join(rel(u)?)
    };
    Ok(p.display().to_string())
}

/// The directory a command would work on (a relative one made relative to `state`, the
/// process's working directory being the fuzzer's), and whether the command may change
/// nothing; `None` for a command never run here.
fn dir_of<'a>(cmd: &'a mut cli::Cmd, state: &Path) -> Option<(&'a Path, bool)> {
    let (dir, read_only) = match cmd {
        cli::Cmd::Inspect { dir } | cli::Cmd::Verify { dir } => (dir, true),
        cli::Cmd::Upgrade { dir, dry_run, .. } | cli::Cmd::Export { dir, dry_run, .. } => {
            (dir, *dry_run)
        }
        _ => return None,
    };
    let plain = dir
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if dir.is_relative() && plain && !dir.as_os_str().is_empty() {
        *dir = state.join(&*dir);
    }
    Some((dir, read_only))
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let s = sandbox();
    let _ = std::fs::remove_dir_all(&s.root);
    let (state, outside) = (s.root.join("state"), s.root.join("outside"));
    let created = build(u, s, &state, &outside)?;
    let mut argv = vec!["kstate".to_string()];
    // Mostly a command that works on a directory and a directory first, then anything.
    if u.ratio(3, 4)? {
        let command = u.choose(&["inspect", "verify", "upgrade", "export"])?;
        argv.push(command.to_string());
        // Export's one required flag.
        if *command == "export" && u.ratio(3, 4)? {
            argv.push("--to=kafka".into());
        }
    }
    if u.ratio(3, 4)? {
        argv.push(path(u, &state, &created)?);
    }
    for _ in 0..u.int_in_range(0..=4)? {
        argv.push(token(u, &state, &outside, &created)?);
    }
    let before = tree(&s.root);
    let outside_before = tree(&outside);
    let codes = [ExitCode::from(0), ExitCode::from(1), ExitCode::from(2)];
    match cli::parse(&argv) {
        Err(code) => {
            // A usage error (2), or help and version (0).
            assert!(code == codes[0] || code == codes[2], "{argv:?}: {code:?}");
        }
        Ok(mut cmd) => {
            // Only commands on the state directory or inside it run; export only inside
            // (it writes beside the store it is given, in its task directory).
            let export = matches!(cmd, cli::Cmd::Export { .. });
            let Some((dir, read_only)) = dir_of(&mut cmd, &state) else {
                return Ok(());
            };
            if !dir.starts_with(&state) || (export && dir == state) {
                return Ok(());
            }
            let code = cli::dispatch(cmd);
            if std::env::var_os("KSTATE_FUZZ_TRACE").is_some() {
                eprintln!("ran {argv:?}: {code:?}");
            }
            assert!(
                codes.contains(&code),
                "{argv:?}: undocumented exit code {code:?}"
            );
            if read_only || code == codes[2] {
                assert!(
                    before == tree(&s.root),
                    "{argv:?} ({code:?}) changed the tree"
                );
            }
        }
    }
    assert!(
        outside_before == tree(&outside),
        "{argv:?} changed a directory it was not given"
    );
    assert!(
        before
            .keys()
            .filter(|p| !p.starts_with(&state))
            .eq(tree(&s.root).keys().filter(|p| !p.starts_with(&state))),
        "{argv:?} wrote beside the state directory"
    );
    Ok(())
}
