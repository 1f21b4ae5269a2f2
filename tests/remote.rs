//! Checkpoints in an object store (`kstate::remote`, feature `remote`), against a `file://`
//! target and a real S3-compatible server (moto's server mode on 127.0.0.1, started here):
//! incremental publishing (the second publish uploads only the new table files), restore
//! into a new directory that opens with the model state of the published commit, two
//! concurrent publishers of one store (no manifest lost or overwritten, create-only
//! fencing), garbage collection (keeps the newest N and all they name, honours the grace
//! period), a restore whose object is missing (clear error, nothing at the destination),
//! two lineages of one task (a zombie beside the task's new owner: the order by changelog
//! offsets, concurrent publishes and gcs), and a gc run while a publish is in flight (the
//! lease protocol: no manifest ever names a missing object).
//!
//! The S3 half needs moto: `scripts/install-moto.sh` puts it in target/moto-venv (or set
//! KSTATE_MOTO_VENV). Without it the S3 test fails, unless KSTATE_SKIP_S3=1.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kstate::remote::{Remote, RemoteSettings, StoreScope};
use kstate::{CheckpointInfo, ErrorCode, KvStore, StoreOptions, TopicPartition};

type Model = BTreeMap<u32, Vec<u8>>;

const KEYS: u32 = 400;

fn tp() -> TopicPartition {
    TopicPartition::new("app-store-changelog", 3)
}

fn key(k: u32) -> Vec<u8> {
    format!("key-{k:04}").into_bytes()
}

/// A source store and the model of its committed state.
struct Source {
    store: KvStore,
    model: Model,
    offset: i64,
    /// How far each commit moves the changelog offset (0: a fenced zombie's commits).
    offset_step: i64,
    dir: PathBuf,
    name: String,
    checkpoints: u32,
}

impl Source {
    fn new(dir: &Path) -> Source {
        Source::named(dir, "source")
    }

    /// A new store `dir/<name>`; its checkpoints go to `dir/<name>-ckpt-<n>`.
    fn named(dir: &Path, name: &str) -> Source {
        Source::restored(dir, name, Model::new(), 0)
    }

    /// The store at `dir/<name>` (new, or restored holding `model` at `offset`).
    fn restored(dir: &Path, name: &str, model: Model, offset: i64) -> Source {
        Source {
            store: KvStore::open(dir.join(name), &StoreOptions::default()).unwrap(),
            model,
            offset,
            offset_step: 100,
            dir: dir.to_path_buf(),
            name: name.to_string(),
            checkpoints: 0,
        }
    }

    /// Writes a round of puts and deletes derived from `round` and commits them.
    fn write_and_commit(&mut self, round: u32) {
        for k in 0..KEYS {
            if (k + round) % 3 == 0 {
                let value = format!("value-{k}-{round}-{}", "x".repeat(64)).into_bytes();
                self.store.put(&key(k), &value, round as i64).unwrap();
                self.model.insert(k, value);
            } else if round > 1 && (k + round) % 7 == 0 {
                self.store.delete(&key(k)).unwrap();
                self.model.remove(&k);
            }
        }
        self.offset += self.offset_step;
        let position = format!("position-{round}").into_bytes();
        self.store
            .commit(&[(tp(), Some(self.offset))], Some(&position))
            .unwrap();
    }

    /// Rewrites every key with a 1.5 KB value made of `fill`, commits, and checkpoints: the
    /// new checkpoint keeps some table files of `earlier` and adds a large new one. Returns
    /// it, the table files it shares with `earlier`, and the bytes of its other table files
    /// (what a publish uploads).
    fn grow_past(
        &mut self,
        earlier: &CheckpointInfo,
        fill: &str,
        timestamp: i64,
    ) -> (CheckpointInfo, BTreeSet<String>, u64) {
        for k in 0..KEYS {
            let value = format!("{k}-{}", fill.repeat(1500)).into_bytes();
            self.store.put(&key(k), &value, timestamp).unwrap();
            self.model.insert(k, value);
        }
        self.offset += 100;
        self.store
            .commit(&[(tp(), Some(self.offset))], None)
            .unwrap();
        let next = self.checkpoint();
        let kept: BTreeSet<String> = tables(&next)
            .intersection(&tables(earlier))
            .cloned()
            .collect();
        assert!(!kept.is_empty(), "{earlier:?} {next:?}");
        let new_bytes = next
            .files
            .iter()
            .filter(|f| f.name.ends_with(".sst") && !kept.contains(&f.name))
            .map(|f| f.bytes)
            .sum();
        (next, kept, new_bytes)
    }

    fn checkpoint(&mut self) -> CheckpointInfo {
        self.checkpoints += 1;
        let dir = self
            .dir
            .join(format!("{}-ckpt-{}", self.name, self.checkpoints));
        self.store.checkpoint(dir).unwrap()
    }
}

/// Waits until the table files of the store at `dir` stayed the same for half a second.
fn settle(dir: &Path) {
    let tables = || {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sst"))
            .collect();
        names.sort();
        names
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = tables();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = tables();
        if now == last {
            return;
        }
        assert!(Instant::now() < deadline, "table files never settled");
        last = now;
    }
}

/// Opens the restored store and compares it with the model.
fn assert_store_holds(dir: &Path, model: &Model, offset: i64) {
    let store = KvStore::open(dir, &StoreOptions::default()).unwrap();
    for k in 0..KEYS {
        let got = store.get(&key(k)).unwrap().map(|v| v.value);
        assert_eq!(got.as_ref(), model.get(&k), "key {k} in {}", dir.display());
    }
    assert_eq!(store.committed_offsets().unwrap(), vec![(tp(), offset)]);
    let recovery = store.recovery();
    assert!(
        recovery.previous_close_clean && !recovery.rolled_forward,
        "{recovery:?}"
    );
    store.close().unwrap();
}

fn tables(info: &CheckpointInfo) -> BTreeSet<String> {
    info.files
        .iter()
        .filter(|f| f.name.ends_with(".sst"))
        .map(|f| f.name.clone())
        .collect()
}

/// Name -> content of the files a publish sends (all but RocksDB's info log).
fn published_files(info: &CheckpointInfo) -> BTreeMap<String, Vec<u8>> {
    info.files
        .iter()
        .filter(|f| f.name != "LOG" && !f.name.starts_with("LOG.old"))
        .map(|f| {
            (
                f.name.clone(),
                std::fs::read(info.path.join(&f.name)).unwrap(),
            )
        })
        .collect()
}

fn only_tables(names: &[String]) -> BTreeSet<String> {
    names
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .cloned()
        .collect()
}

/// Opens a `Remote` on the target with these settings (the target's own options added).
type Open<'a> = &'a dyn Fn(RemoteSettings) -> Remote;

/// Settings with this writer id and grace period.
fn settings(writer: &str, grace: Duration) -> RemoteSettings {
    RemoteSettings {
        writer_id: writer.into(),
        gc_grace: grace,
        ..RemoteSettings::default()
    }
}

fn scope(store: &str) -> StoreScope {
    StoreScope::new("app-1", "0_3", store)
}

/// Two publishes with writes between: the second uploads exactly the new table files;
/// both list (newest first), verify and restore to their model states.
fn incremental_publish_and_restore(open: Open, tmp: &Path) {
    let remote = open(settings("writer-a", Duration::from_secs(3600)));
    let scope = scope("incremental");
    let mut source = Source::new(tmp);
    source.write_and_commit(1);
    // RocksDB rewrites a new bottom-level table file once more in the background, to zero
    // its sequence numbers, when a later flush lets it (measured: the first round's file
    // replaced during the second checkpoint), so nothing would be reused. Compact, commit
    // and flush once more (a throwaway checkpoint), and wait for the table files to settle:
    // from then on the bottom level stays while level-0 files are added, as a large
    // store's lower levels do.
    source.store.compact().unwrap();
    source.write_and_commit(100);
    drop(source.checkpoint());
    settle(&tmp.join("source"));
    let model1 = source.model.clone();
    let c1 = source.checkpoint();
    let r1 = remote.publish(&scope, &c1).unwrap();
    assert!(r1.manifest_created);
    assert_eq!(only_tables(&r1.uploaded), tables(&c1));
    assert!(!tables(&c1).is_empty());
    let sent: u64 = published_files(&c1).values().map(|b| b.len() as u64).sum();
    assert_eq!(r1.bytes_uploaded + r1.bytes_reused, sent, "{r1:?}");

    source.write_and_commit(2);
    // Uncommitted: in no checkpoint.
    source.store.put(&key(1), b"uncommitted", 9).unwrap();
    let model2 = source.model.clone();
    let c2 = source.checkpoint();
    let r2 = remote.publish(&scope, &c2).unwrap();
    // Content-addressed: uploaded = the files whose bytes the first publish did not hold.
    let before: BTreeSet<Vec<u8>> = published_files(&c1).into_values().collect();
    let (reused, uploaded): (Vec<_>, Vec<_>) = published_files(&c2)
        .into_iter()
        .partition(|(_, bytes)| before.contains(bytes));
    let names = |v: Vec<(String, Vec<u8>)>| v.into_iter().map(|(n, _)| n).collect::<BTreeSet<_>>();
    let (reused, uploaded) = (names(reused), names(uploaded));
    assert_eq!(
        r2.uploaded.iter().cloned().collect::<BTreeSet<_>>(),
        uploaded
    );
    assert_eq!(r2.reused.iter().cloned().collect::<BTreeSet<_>>(), reused);
    let new_tables = only_tables(&uploaded.iter().cloned().collect::<Vec<_>>());
    let kept_tables = only_tables(&reused.iter().cloned().collect::<Vec<_>>());
    assert!(
        !new_tables.is_empty() && !kept_tables.is_empty(),
        "{r2:?} {:?} {:?}",
        c1.files,
        c2.files
    );
    // The reused table files are the ones the store kept since the first checkpoint.
    assert!(kept_tables.is_subset(&tables(&c1)), "{r2:?}");
    assert!(r2.bytes_uploaded < c2.total_bytes());
    // Publishing the same commit again creates nothing and uploads nothing.
    let again = remote.publish(&scope, &c2).unwrap();
    assert!(!again.manifest_created);
    assert!(again.uploaded.is_empty(), "{again:?}");

    let list = remote.list(&scope).unwrap();
    assert_eq!(
        list.iter().map(|s| s.key.clone()).collect::<Vec<_>>(),
        vec![r2.manifest.clone(), r1.manifest.clone()]
    );
    let newest = list[0].manifest.as_ref().unwrap();
    assert_eq!(newest.sequence, c2.sequence);
    assert_eq!(newest.metadata().unwrap(), b"position-2");
    assert_eq!(newest.offsets[0].offset, 300);
    assert_eq!(newest.writer, "writer-a");
    for s in &list {
        remote.verify(&scope, &s.key).unwrap();
    }

    let restored = remote
        .restore(&scope, None, &tmp.join("restored-newest"))
        .unwrap();
    assert_eq!(restored.manifest_key, r2.manifest);
    let sent: u64 = published_files(&c2).values().map(|b| b.len() as u64).sum();
    assert_eq!(restored.bytes, sent);
    assert_store_holds(&tmp.join("restored-newest"), &model2, 300);
    remote
        .restore(&scope, Some(&r1.manifest), &tmp.join("restored-first"))
        .unwrap();
    assert_store_holds(&tmp.join("restored-first"), &model1, 200);
    // A restore never writes into an existing directory.
    let err = remote
        .restore(&scope, None, &tmp.join("restored-first"))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
}

/// Two publishers of one store at once: every manifest of both survives and verifies; two
/// publishers with the same writer id race for one key and exactly one wins.
fn concurrent_publishers(open: Open, tmp: &Path) {
    let scope = scope("concurrent");
    let mut source = Source::new(tmp);
    let mut checkpoints = Vec::new();
    let mut models = BTreeMap::new();
    for round in 1..=4 {
        source.write_and_commit(round);
        let c = source.checkpoint();
        models.insert(c.sequence, (source.model.clone(), source.offset));
        checkpoints.push(c);
    }
    let a = open(settings("writer-a", Duration::from_secs(3600)));
    let b = open(settings("writer-b", Duration::from_secs(3600)));
    let z1 = open(settings("zombie", Duration::from_secs(3600)));
    let z2 = open(settings("zombie", Duration::from_secs(3600)));
    let (ra, rb, rz1, rz2) = std::thread::scope(|s| {
        let checkpoints = &checkpoints;
        let scope = &scope;
        let run = move |remote: &Remote| -> Vec<_> {
            checkpoints
                .iter()
                .map(|c| remote.publish(scope, c).unwrap())
                .collect()
        };
        let (a, b) = (&a, &b);
        let ta = s.spawn(move || run(a));
        let tb = s.spawn(move || run(b));
        let last = checkpoints.last().unwrap();
        let (z1, z2) = (&z1, &z2);
        let tz1 = s.spawn(move || z1.publish(scope, last).unwrap());
        let tz2 = s.spawn(move || z2.publish(scope, last).unwrap());
        (
            ta.join().unwrap(),
            tb.join().unwrap(),
            tz1.join().unwrap(),
            tz2.join().unwrap(),
        )
    });
    assert!(ra.iter().chain(&rb).all(|r| r.manifest_created));
    assert_eq!(rz1.manifest, rz2.manifest);
    assert!(
        rz1.manifest_created ^ rz2.manifest_created,
        "exactly one of two same-named publishers creates the manifest"
    );
    let list = remote_keys(&a, &scope);
    let expected: BTreeSet<String> = ra
        .iter()
        .chain(&rb)
        .map(|r| r.manifest.clone())
        .chain([rz1.manifest.clone()])
        .collect();
    assert_eq!(list.iter().cloned().collect::<BTreeSet<_>>(), expected);
    assert_eq!(list.len(), 9);
    for (i, s) in a.list(&scope).unwrap().iter().enumerate() {
        let manifest = a.verify(&scope, &s.key).unwrap();
        assert!(s.key.ends_with(&format!("-{}.json", manifest.writer)));
        let (model, offset) = &models[&manifest.sequence];
        let dest = tmp.join(format!("restored-{i}"));
        b.restore(&scope, Some(&s.key), &dest).unwrap();
        assert_store_holds(&dest, model, *offset);
    }
}

fn remote_keys(remote: &Remote, scope: &StoreScope) -> Vec<String> {
    remote
        .list(scope)
        .unwrap()
        .into_iter()
        .map(|s| s.key)
        .collect()
}

/// Garbage collection keeps the newest N manifests and everything they name; unreferenced
/// files younger than the grace period stay.
fn gc_keeps_the_newest(open: Open, tmp: &Path) {
    let scope = scope("gc");
    let mut source = Source::new(tmp);
    let patient = open(settings("writer-a", Duration::from_secs(3600)));
    let mut published = Vec::new();
    let mut models = BTreeMap::new();
    for round in 1..=5 {
        source.write_and_commit(round);
        let c = source.checkpoint();
        models.insert(c.sequence, (source.model.clone(), source.offset));
        published.push(patient.publish(&scope, &c).unwrap().manifest);
    }
    published.reverse(); // newest first
    assert_eq!(remote_keys(&patient, &scope), published);

    let first = patient.gc(&scope, 3).unwrap();
    assert_eq!(first.manifests_deleted, published[3..].to_vec());
    assert_eq!(
        first.files_deleted, 0,
        "all files are inside the grace period"
    );
    assert!(first.files_in_grace > 0, "{first:?}");
    assert_eq!(remote_keys(&patient, &scope), published[..3].to_vec());

    std::thread::sleep(Duration::from_millis(20));
    let eager = open(settings("writer-a", Duration::ZERO));
    let second = eager.gc(&scope, 2).unwrap();
    assert_eq!(second.manifests_deleted, vec![published[2].clone()]);
    assert!(second.files_deleted > 0, "{second:?}");
    // Nothing unreferenced is left, and every remaining manifest is whole.
    let third = eager.gc(&scope, 2).unwrap();
    assert_eq!(third, Default::default());
    for (i, key) in published[..2].iter().enumerate() {
        let manifest = eager.verify(&scope, key).unwrap();
        let dest = tmp.join(format!("after-gc-{i}"));
        eager.restore(&scope, Some(key), &dest).unwrap();
        let (model, offset) = &models[&manifest.sequence];
        assert_store_holds(&dest, model, *offset);
    }
    assert_eq!(
        eager.gc(&scope, 0).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
}

/// A restore's progress, reported while several files download at once, only grows and
/// ends at the checkpoint's totals, with one call per file completed.
fn restore_progress(open: Open, tmp: &Path) {
    let scope = scope("progress");
    let remote = open(settings("writer-a", Duration::from_secs(3600)));
    let mut source = Source::new(tmp);
    for round in 1..=6 {
        // one table file per round: a checkpoint of several files
        source.write_and_commit(round);
        drop(source.checkpoint());
    }
    let c = source.checkpoint();
    let report = remote.publish(&scope, &c).unwrap();
    let manifest = remote.verify(&scope, &report.manifest).unwrap();
    assert!(manifest.files.len() > 4, "{:?}", manifest.files);
    let dest = tmp.join("restored");
    let mut seen = Vec::new();
    let restored = remote
        .restore_with_progress(&scope, None, &dest, &mut |p| seen.push(p))
        .unwrap();
    let total: u64 = manifest.files.iter().map(|f| f.size).sum();
    let last = *seen.last().unwrap();
    assert_eq!(last.files_done, manifest.files.len());
    assert_eq!(last.files_total, manifest.files.len());
    assert_eq!((last.bytes_done, last.bytes_total), (total, total));
    assert_eq!(restored.bytes, total);
    // One call per file: files_done steps by at most one, from 0 to the total.
    assert!(seen[0].files_done <= 1, "{:?}", seen[0]);
    for pair in seen.windows(2) {
        assert!(pair[1].bytes_done >= pair[0].bytes_done, "{pair:?}");
        assert!(pair[1].files_done >= pair[0].files_done, "{pair:?}");
        assert!(pair[1].files_done <= pair[0].files_done + 1, "{pair:?}");
    }
    assert_store_holds(&dest, &source.model, source.offset);
}

/// A manifest naming a missing object fails verify and restore clearly; the restore
/// leaves nothing at the destination, not even its hidden staging directory.
fn missing_object(open: Open, tmp: &Path) {
    let scope = scope("missing");
    let remote = open(settings("writer-a", Duration::from_secs(3600)));
    let mut source = Source::new(tmp);
    source.write_and_commit(1);
    let c = source.checkpoint();
    let report = remote.publish(&scope, &c).unwrap();
    let manifest = remote.verify(&scope, &report.manifest).unwrap();
    let victim = manifest
        .files
        .iter()
        .rev()
        .find(|f| f.name.ends_with(".sst"))
        .unwrap();
    remote.delete_object(&scope, &victim.object).unwrap();

    let err = remote.verify(&scope, &report.manifest).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Corruption);
    assert!(err.to_string().contains(&victim.object), "{err}");
    let dest = tmp.join("restored");
    let err = remote.restore(&scope, None, &dest).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Corruption);
    assert!(
        err.to_string().contains("missing") && err.to_string().contains(&victim.name),
        "{err}"
    );
    assert!(!dest.exists());
    let leftovers: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        // The lock file beside a store path is left by design (as by an open).
        .filter(|n| n.contains("restored") && !n.ends_with(".kstate-lock"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // An unknown manifest is an error too.
    assert!(remote
        .restore(&scope, Some("manifests/nope.json"), &dest)
        .is_err());
    assert!(!dest.exists());
}

/// A table file larger than one upload part (8 MiB) goes up in parts and comes back whole.
fn large_file_in_parts(open: Open, tmp: &Path) {
    let scope = scope("large");
    let remote = open(settings("writer-a", Duration::from_secs(3600)));
    let store = KvStore::open(tmp.join("source"), &StoreOptions::default()).unwrap();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut model = BTreeMap::new();
    for k in 0..12_000u32 {
        // Incompressible values (RocksDB compresses nothing here anyway): ~12 MiB.
        let value: Vec<u8> = (0..1024)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        store.put(&key(k), &value, 1).unwrap();
        model.insert(k, value);
    }
    store.commit(&[(tp(), Some(5))], None).unwrap();
    let c = store.checkpoint(tmp.join("ckpt")).unwrap();
    let largest = c.files.iter().map(|f| f.bytes).max().unwrap();
    assert!(largest > 8 << 20, "{c:?}");
    let report = remote.publish(&scope, &c).unwrap();
    remote.verify(&scope, &report.manifest).unwrap();
    let dest = tmp.join("restored");
    let restored = remote.restore(&scope, None, &dest).unwrap();
    assert_eq!(restored.bytes, report.bytes_uploaded + report.bytes_reused);
    let copy = KvStore::open(&dest, &StoreOptions::default()).unwrap();
    for (k, v) in &model {
        assert_eq!(copy.get(&key(*k)).unwrap().unwrap().value, *v);
    }
    assert_eq!(copy.committed_offsets().unwrap(), vec![(tp(), 5)]);
}

/// Every manifest listed is whole (its objects exist with their size and SHA-256), the
/// newest is `newest`, and a restore of the newest holds `model` at `offset`.
fn assert_newest_and_whole(
    remote: &Remote,
    scope: &StoreScope,
    newest: &str,
    model: &Model,
    offset: i64,
    dest: &Path,
) {
    let list = remote.list(scope).unwrap();
    for s in &list {
        let check = remote.check(scope, &s.key, true).unwrap();
        assert!(check.problems.is_empty(), "{:?}", check.problems);
    }
    assert_eq!(list[0].key, newest);
    let restored = remote.restore(scope, None, dest).unwrap();
    assert_eq!(restored.manifest_key, newest);
    assert_store_holds(dest, model, offset);
}

/// Two lineages of one task. A publishes; B, the task's new owner, restores A's newest
/// checkpoint and goes on committing and publishing; A goes on too, as a zombie: exactly-
/// once fences its changelog writes, so its offsets stay at the fork point, while its
/// commit sequence grows twice as fast as B's (sequence order would call A newest). Each
/// step both publish at once, then both collect (keep 2) while A publishes once more,
/// alternately without and with a grace period. After every step every listed manifest is
/// whole, B's latest is the newest, and a restore of the newest holds B's model state; at
/// the end a quiet gc leaves exactly B's two latest.
fn zombie_and_new_owner(open: Open, tmp: &Path) {
    let scope = scope("lineages");
    let mut a = Source::named(tmp, "owner-a");
    let a_remote = open(settings("owner-a", Duration::from_secs(3600)));
    for round in 1..=3 {
        a.write_and_commit(round);
        a_remote.publish(&scope, &a.checkpoint()).unwrap();
    }
    let fork = a_remote
        .restore(&scope, None, &tmp.join("owner-b"))
        .unwrap();
    assert_eq!(fork.manifest.offsets[0].offset, a.offset);
    let mut b = Source::restored(tmp, "owner-b", a.model.clone(), a.offset);
    a.offset_step = 0;
    let b_remote = open(settings("owner-b", Duration::from_secs(3600)));
    let mut b_published = Vec::new();
    let mut gc_saw_publisher = 0;
    for step in 0..6u32 {
        let grace = if step % 2 == 0 {
            Duration::ZERO
        } else {
            Duration::from_secs(3600)
        };
        a.write_and_commit(1000 + 3 * step);
        a.write_and_commit(1001 + 3 * step);
        b.write_and_commit(2000 + step);
        let (ca, cb) = (a.checkpoint(), b.checkpoint());
        assert!(
            ca.sequence > cb.sequence,
            "the zombie's sequence runs ahead"
        );
        let rb = std::thread::scope(|s| {
            let ta = s.spawn(|| a_remote.publish(&scope, &ca).unwrap());
            let tb = s.spawn(|| b_remote.publish(&scope, &cb).unwrap());
            ta.join().unwrap();
            tb.join().unwrap()
        });
        b_published.push(rb.manifest.clone());
        a.write_and_commit(1002 + 3 * step);
        let ca2 = a.checkpoint();
        let (ga, gb) = (
            open(settings("owner-a-gc", grace)),
            open(settings("owner-b-gc", grace)),
        );
        std::thread::scope(|s| {
            let tp = s.spawn(|| a_remote.publish(&scope, &ca2).unwrap());
            let t1 = s.spawn(|| ga.gc(&scope, 2).unwrap());
            let t2 = s.spawn(|| gb.gc(&scope, 2).unwrap());
            tp.join().unwrap();
            for report in [t1.join().unwrap(), t2.join().unwrap()] {
                gc_saw_publisher += usize::from(!report.publishers.is_empty());
                // B's two latest are the newest two: never deleted.
                for kept in b_published.iter().rev().take(2) {
                    assert!(!report.manifests_deleted.contains(kept), "{report:?}");
                }
            }
        });
        assert_newest_and_whole(
            &b_remote,
            &scope,
            &rb.manifest,
            &b.model,
            b.offset,
            &tmp.join(format!("restored-step-{step}")),
        );
    }
    eprintln!("zombie_and_new_owner: {gc_saw_publisher} of 12 gc runs saw a publisher");
    let quiet = open(settings("owner-b-gc", Duration::ZERO));
    let last = quiet.gc(&scope, 2).unwrap();
    assert!(last.publishers.is_empty(), "{last:?}");
    let keys = remote_keys(&quiet, &scope);
    let expected: Vec<String> = b_published.iter().rev().take(2).cloned().collect();
    assert_eq!(keys, expected);
    assert_newest_and_whole(
        &quiet,
        &scope,
        &expected[0],
        &b.model,
        b.offset,
        &tmp.join("restored-end"),
    );
}

/// The race of a gc against a publish in flight: the zombie's second publish reuses the
/// table file of its first checkpoint, which no manifest the gc keeps names any more (the
/// new owner's lineage is further along), and uploads a large new one slowly (bandwidth
/// bound). A gc with grace period `grace` (0: only the lease protects the publish) runs in
/// the middle of it. The gc sees the publisher's lease: it deletes manifests only, and the
/// zombie's manifest, written after the gc, names only files that exist. Once nobody
/// publishes, a gc deletes the zombie's manifest, then (no grace period) its files.
fn gc_while_publishing(open: Open, tmp: &Path, grace: Duration) {
    let scope = scope(if grace.is_zero() {
        "race"
    } else {
        "race-grace"
    });
    let mut zombie = Source::named(tmp, "zombie");
    zombie.write_and_commit(1);
    // As in incremental_publish_and_restore: let RocksDB finish rewriting the bottom level
    // so that the next checkpoint keeps this one's table files.
    zombie.store.compact().unwrap();
    zombie.write_and_commit(2);
    drop(zombie.checkpoint());
    settle(&tmp.join("zombie"));
    let c1 = zombie.checkpoint();
    let z_remote = open(settings("zombie", Duration::from_secs(3600)));
    let first = z_remote.publish(&scope, &c1).unwrap();
    let mut owner = Source::named(tmp, "owner");
    owner.offset = 10_000;
    let o_remote = open(settings("owner", grace));
    let mut owner_keys = Vec::new();
    for round in 1..=2 {
        owner.write_and_commit(round);
        owner_keys.push(
            o_remote
                .publish(&scope, &owner.checkpoint())
                .unwrap()
                .manifest,
        );
    }
    // A large new table file beside round 1's.
    let (c2, kept_tables, new_bytes) = zombie.grow_past(&c1, "z", 7);
    // A full bucket (one second's worth) goes at once, the rest takes about 2 s.
    let rate = new_bytes / 3;
    let slow = open(RemoteSettings {
        max_upload_bytes_per_sec: Some(rate),
        ..settings("zombie", Duration::from_secs(3600))
    });
    let (published, published_at, collected, collected_at) = std::thread::scope(|s| {
        let p = s.spawn(|| {
            let r = slow.publish(&scope, &c2).unwrap();
            (r, Instant::now())
        });
        std::thread::sleep(Duration::from_millis(500));
        let g = o_remote.gc(&scope, 1).unwrap();
        let at = Instant::now();
        let (r, r_at) = p.join().unwrap();
        (r, r_at, g, at)
    });
    assert!(
        collected_at < published_at,
        "the gc ran while the publish was in flight"
    );
    assert!(
        kept_tables.iter().all(|t| published.reused.contains(t)),
        "{published:?}"
    );
    assert_eq!(collected.publishers, vec!["zombie".to_string()]);
    assert_eq!(collected.files_deleted, 0, "{collected:?}");
    assert_eq!(
        collected.manifests_deleted.iter().collect::<BTreeSet<_>>(),
        [&first.manifest, &owner_keys[0]].into_iter().collect()
    );
    // The owner's latest is the newest; the zombie's new manifest is whole and restores.
    assert_newest_and_whole(
        &o_remote,
        &scope,
        &owner_keys[1],
        &owner.model,
        owner.offset,
        &tmp.join("restored-owner"),
    );
    let dest = tmp.join("restored-zombie");
    o_remote
        .restore(&scope, Some(&published.manifest), &dest)
        .unwrap();
    assert_store_holds(&dest, &zombie.model, zombie.offset);

    let quiet = o_remote.gc(&scope, 1).unwrap();
    assert!(quiet.publishers.is_empty(), "{quiet:?}");
    assert_eq!(quiet.manifests_deleted, vec![published.manifest.clone()]);
    if grace.is_zero() {
        assert!(quiet.files_deleted > 0, "{quiet:?}");
    } else {
        assert_eq!(quiet.files_deleted, 0, "{quiet:?}");
        assert!(quiet.files_in_grace > 0, "{quiet:?}");
    }
    assert_eq!(remote_keys(&o_remote, &scope), vec![owner_keys[1].clone()]);
    assert_newest_and_whole(
        &o_remote,
        &scope,
        &owner_keys[1],
        &owner.model,
        owner.offset,
        &tmp.join("restored-owner-end"),
    );
}

fn all_scenarios(open: Open) {
    type Scenario = fn(Open, &Path);
    let scenarios: [(&str, Scenario); 9] = [
        ("large_file_in_parts", large_file_in_parts),
        ("restore_progress", restore_progress),
        (
            "incremental_publish_and_restore",
            incremental_publish_and_restore,
        ),
        ("concurrent_publishers", concurrent_publishers),
        ("gc_keeps_the_newest", gc_keeps_the_newest),
        ("missing_object", missing_object),
        ("zombie_and_new_owner", zombie_and_new_owner),
        ("gc_while_publishing", |open, tmp| {
            gc_while_publishing(open, tmp, Duration::ZERO)
        }),
        ("gc_while_publishing_with_grace", |open, tmp| {
            gc_while_publishing(open, tmp, Duration::from_secs(3600))
        }),
    ];
    for (name, scenario) in scenarios {
        eprintln!("scenario {name}");
        let tmp = tempfile::tempdir().unwrap();
        scenario(open, tmp.path());
    }
}

fn file_target(root: &Path) -> impl Fn(RemoteSettings) -> Remote + '_ {
    move |settings| Remote::open(&format!("file://{}", root.display()), &settings).unwrap()
}

#[test]
fn file_target_publish_list_verify_restore_gc() {
    let root = tempfile::tempdir().unwrap();
    all_scenarios(&file_target(root.path()));
}

/// A manifest changed after publication (one digit of an offset) fails its CRC: `list`
/// shows why, `verify` and a named restore refuse it with `CORRUPTION`, and a restore of
/// the newest skips it for the newest readable one. A manifest of a newer format (with a
/// right CRC) is refused the same way.
#[test]
fn damaged_and_newer_manifests_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("target");
    let remote = Remote::open(
        &format!("file://{}", root.display()),
        &RemoteSettings::default(),
    )
    .unwrap();
    let scope = scope("damaged");
    let mut source = Source::new(tmp.path());
    source.write_and_commit(1);
    let older = remote.publish(&scope, &source.checkpoint()).unwrap();
    let model = source.model.clone();
    source.write_and_commit(2);
    let newer = remote.publish(&scope, &source.checkpoint()).unwrap();
    let path = root.join("app-1/0_3/damaged").join(&newer.manifest);
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged = text.replace("\"offset\":200", "\"offset\":900");
    assert_ne!(damaged, text);
    std::fs::write(&path, &damaged).unwrap();

    let list = remote.list(&scope).unwrap();
    assert_eq!(list[0].key, newer.manifest);
    assert!(list[0].manifest.as_ref().unwrap_err().contains("checksum"));
    let err = remote.verify(&scope, &newer.manifest).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Corruption, "{err}");
    let dest = tmp.path().join("restored");
    let err = remote
        .restore(&scope, Some(&newer.manifest), &dest)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Corruption, "{err}");
    assert!(!dest.exists());
    let report = remote.restore(&scope, None, &dest).unwrap();
    assert_eq!(report.manifest_key, older.manifest);
    assert_store_holds(&dest, &model, 100);

    // Format 2 under a right checksum: "body" is re-wrapped with its own CRC.
    let body_start = text.find("\"body\":").unwrap() + "\"body\":".len();
    let body = &text[body_start..text.len() - 1];
    let future = body.replacen("\"format\":1", "\"format\":2", 1);
    assert_ne!(future, body);
    let wrapped = format!(
        "{{\"crc32\":{},\"body\":{future}}}",
        crc32fast::hash(future.as_bytes())
    );
    std::fs::write(&path, wrapped).unwrap();
    let err = remote.verify(&scope, &newer.manifest).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Corruption, "{err}");
    assert!(err.to_string().contains("newer"), "{err}");
}

#[test]
fn bad_uris_scopes_and_settings_are_refused() {
    let settings = RemoteSettings::default();
    for uri in ["http://x/y", "file://relative/dir", "s3://", "/plain/path"] {
        let err = Remote::open(uri, &settings).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{uri}");
    }
    let root = tempfile::tempdir().unwrap();
    let uri = format!("file://{}", root.path().display());
    let bad_writer = RemoteSettings {
        writer_id: "a/b".into(),
        ..RemoteSettings::default()
    };
    assert!(Remote::open(&uri, &bad_writer).is_err());
    let remote = Remote::open(&uri, &settings).unwrap();
    for bad in [
        StoreScope::new("app", "0_1", "../x"),
        StoreScope::new("", "0_1", "s"),
        StoreScope::new("app", "0/1", "s"),
    ] {
        assert_eq!(
            remote.list(&bad).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
    }
    assert!(remote.list(&scope("nothing")).unwrap().is_empty());
    let err = remote
        .restore(&scope("nothing"), None, &root.path().join("d"))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
}

#[test]
fn uploads_respect_the_bandwidth_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let mut source = Source::new(tmp.path());
    source.write_and_commit(1);
    let c = source.checkpoint();
    let sent: u64 = published_files(&c).values().map(|b| b.len() as u64).sum();
    let rate = sent / 3 + 1;
    let settings = RemoteSettings {
        max_upload_bytes_per_sec: Some(rate),
        ..RemoteSettings::default()
    };
    let root = tmp.path().join("target");
    let remote = Remote::open(&format!("file://{}", root.display()), &settings).unwrap();
    let start = Instant::now();
    let report = remote.publish(&scope("slow"), &c).unwrap();
    assert_paced(start.elapsed(), report.bytes_uploaded, rate);
}

/// Asserts that moving `bytes` under a bound of `rate` bytes/s took at least its floor: a
/// full bucket (one second's worth) goes at once, the rest waits its share, whatever the
/// number of threads. Returns the floor in seconds.
fn assert_paced(took: Duration, bytes: u64, rate: u64) -> f64 {
    let floor = (bytes.saturating_sub(rate)) as f64 / rate as f64;
    assert!(floor > 0.5, "{floor}");
    assert!(took.as_secs_f64() >= floor * 0.95, "{took:?} < {floor} s");
    floor
}

#[test]
fn downloads_respect_their_bandwidth_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let mut source = Source::new(tmp.path());
    source.write_and_commit(1);
    let c = source.checkpoint();
    let root = tmp.path().join("target");
    let uri = format!("file://{}", root.display());
    let report = Remote::open(&uri, &RemoteSettings::default())
        .unwrap()
        .publish(&scope("slow"), &c)
        .unwrap();
    let total = report.bytes_uploaded;
    let rate = total / 3 + 1;
    let bounded = Remote::open(
        &uri,
        &RemoteSettings {
            max_download_bytes_per_sec: Some(rate),
            ..RemoteSettings::default()
        },
    )
    .unwrap();
    let start = Instant::now();
    let restored = bounded
        .restore(&scope("slow"), None, &tmp.path().join("restored"))
        .unwrap();
    let floor = assert_paced(start.elapsed(), total, rate);
    assert_eq!(restored.bytes, total);
    assert_store_holds(&tmp.path().join("restored"), &source.model, source.offset);
    // Unbounded, the same restore takes a fraction of that.
    let start = Instant::now();
    Remote::open(&uri, &RemoteSettings::default())
        .unwrap()
        .restore(&scope("slow"), None, &tmp.path().join("again"))
        .unwrap();
    assert!(
        start.elapsed().as_secs_f64() < floor / 2.0,
        "{:?}",
        start.elapsed()
    );
    let zero = RemoteSettings {
        max_download_bytes_per_sec: Some(0),
        ..RemoteSettings::default()
    };
    let err = Remote::open(&uri, &zero).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
}

/// Checks what a remote worker left: every manifest verifies (none names a missing file),
/// the newest restores to a store holding `w-0..=w-k` (k from its offset) and nothing more,
/// and every restore directory the worker finished is whole.
fn check_after_kill(remote: &Remote, work: &Path, round: usize) -> usize {
    let scope = StoreScope::new("app", "0_0", "kv");
    let list = remote.list(&scope).unwrap();
    for s in &list {
        remote
            .verify(&scope, &s.key)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
    let check_store = |dir: &Path| {
        let store = KvStore::open(dir, &StoreOptions::default()).unwrap();
        let offsets = store.committed_offsets().unwrap();
        let last = offsets[0].1 - 100;
        for i in [0, last / 2, last] {
            let got = store.get(format!("w-{i}").as_bytes()).unwrap().unwrap();
            assert_eq!(got.value, i.to_string().into_bytes(), "round {round}");
        }
        assert!(store
            .get(format!("w-{}", last + 1).as_bytes())
            .unwrap()
            .is_none());
        store.close().unwrap();
    };
    if !list.is_empty() {
        let dest = work.join(format!("check-{round}"));
        remote.restore(&scope, None, &dest).unwrap();
        check_store(&dest);
    }
    for entry in std::fs::read_dir(work).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("restore-") {
            check_store(&work.join(name));
        }
    }
    list.len()
}

/// SIGKILLs `kstate-test-worker remote-worker` at random moments of its publish / gc /
/// restore loop (`KSTATE_REMOTE_KILLS`, default 30) against a `file://` target: after each
/// kill no manifest names a missing file, the newest checkpoint restores to a whole commit,
/// and no restore directory is partial (a killed restore leaves only its hidden sibling).
#[test]
fn kills_during_publish_gc_and_restore_leave_no_broken_checkpoint() {
    let kills: usize = std::env::var("KSTATE_REMOTE_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let tmp = tempfile::tempdir().unwrap();
    let uri = format!("file://{}", tmp.path().join("target").display());
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let remote = Remote::open(&uri, &RemoteSettings::default()).unwrap();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut published = 0;
    let (mut restores, mut killed_restores) = (0, 0);
    for round in 0..kills {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kstate-test-worker"))
            .args(["remote-worker", "--uri", &uri])
            .arg("--dir")
            .arg(tmp.path().join("store"))
            .arg("--work")
            .arg(&work)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(150 + rng % 500));
        if let Ok(Some(status)) = child.try_wait() {
            panic!("round {round}: the worker ended early: {status}");
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        published = check_after_kill(&remote, &work, round);
        let names: Vec<String> = std::fs::read_dir(&work)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        restores = names.iter().filter(|n| n.starts_with("restore-")).count();
        killed_restores = names
            .iter()
            .filter(|n| n.ends_with(".kstate-restore"))
            .count();
    }
    eprintln!(
        "{kills} kills: {published} manifests at the end, {restores} finished restores \
         checked, {killed_restores} killed restores (hidden staging only)"
    );
    assert!(published > 0, "no checkpoint was ever published");
    assert!(restores > 0, "the worker never finished a restore");
}

/// moto's S3 server on a free port of 127.0.0.1, killed when dropped.
struct Moto {
    child: Child,
    port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto_server() -> Option<PathBuf> {
    let venv = std::env::var_os("KSTATE_MOTO_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/moto-venv"));
    let bin = venv.join("bin/moto_server");
    bin.exists().then_some(bin)
}

fn start_moto(bin: &Path) -> Moto {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(bin)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let moto = Moto { child, port };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if http(port, "PUT", "/kstate-test").is_some_and(|r| r.starts_with("HTTP/1.1 200")) {
            return moto;
        }
        assert!(
            Instant::now() < deadline,
            "moto_server did not answer on port {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One unsigned request (moto accepts a bucket creation without credentials).
fn http(port: u16, method: &str, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

#[test]
fn s3_target_publish_list_verify_restore_gc() {
    let Some(bin) = moto_server() else {
        if std::env::var("KSTATE_SKIP_S3").as_deref() == Ok("1") {
            eprintln!("KSTATE_SKIP_S3=1: S3 checkpoint tests skipped");
            return;
        }
        panic!(
            "moto_server not found in target/moto-venv (or $KSTATE_MOTO_VENV): run \
             scripts/install-moto.sh, or set KSTATE_SKIP_S3=1 to skip the S3 tests"
        );
    };
    let moto = start_moto(&bin);
    let endpoint = format!("http://127.0.0.1:{}", moto.port);
    let open = |settings: RemoteSettings| {
        let settings = RemoteSettings {
            options: vec![
                ("endpoint".into(), endpoint.clone()),
                ("allow_http".into(), "true".into()),
                ("region".into(), "us-east-1".into()),
                ("access_key_id".into(), "test".into()),
                ("secret_access_key".into(), "test".into()),
            ],
            ..settings
        };
        Remote::open("s3://kstate-test/some/prefix", &settings).unwrap()
    };
    all_scenarios(&open);
    // The CLI on the same bucket, S3 settings by --s3: the lineage scenario left B's two
    // latest checkpoints.
    let s3 = [
        format!("endpoint={endpoint}"),
        "allow_http=true".into(),
        "region=us-east-1".into(),
        "access_key_id=test".into(),
        "secret_access_key=test".into(),
    ];
    for sub in ["list", "verify"] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kstate"));
        cmd.args([
            "checkpoint",
            sub,
            "s3://kstate-test/some/prefix",
            "app-1",
            "0_3",
        ])
        .arg("lineages");
        for setting in &s3 {
            cmd.args(["--s3", setting]);
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{sub}: {text}");
        let expected = if sub == "list" {
            "2 checkpoints, 2 readable"
        } else {
            "2 checkpoints checked, 0 problems"
        };
        assert!(text.contains(expected), "{sub}: {text}");
        assert_eq!(text.matches("owner-b.json").count(), 2, "{sub}: {text}");
    }
    drop(moto);
}

/// Writes a lease marker of the writer `other` by hand (`file://` layout), `age` old.
fn fake_lease(root: &Path, store: &str, name: &str, age: Duration) -> PathBuf {
    let dir = root.join("app-1/0_3").join(store).join("leases/other");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, b"{}").unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(std::time::SystemTime::now() - age)
        .unwrap();
    path
}

/// The lease rules, with markers of another writer written by hand: a publish waits while
/// a live gc marker is there and goes on when it is gone; an expired gc marker (older than
/// the 60 s lease) does not hold it; a gc that finds a live publish marker deletes no file
/// (grace period 0), and one that finds only a dead one (older than two leases) deletes it
/// and collects the files.
#[test]
fn leases_order_publishers_and_collectors() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("target");
    let open = file_target(&root);
    let scope = scope("leases");
    let remote = open(settings("writer-a", Duration::ZERO));
    let mut source = Source::new(tmp.path());
    source.write_and_commit(1);
    let c1 = source.checkpoint();
    remote.publish(&scope, &c1).unwrap();

    let gc_marker = fake_lease(&root, "leases", "gc-1", Duration::ZERO);
    source.write_and_commit(2);
    let c2 = source.checkpoint();
    let done = std::sync::atomic::AtomicBool::new(false);
    let second = std::thread::scope(|s| {
        let t = s.spawn(|| {
            let r = remote.publish(&scope, &c2).unwrap();
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            r
        });
        std::thread::sleep(Duration::from_millis(600));
        assert!(
            !done.load(std::sync::atomic::Ordering::SeqCst),
            "the publish did not wait for the gc"
        );
        std::fs::remove_file(&gc_marker).unwrap();
        t.join().unwrap()
    });
    assert!(second.manifest_created);

    fake_lease(&root, "leases", "gc-2", Duration::from_secs(90));
    source.write_and_commit(3);
    let start = Instant::now();
    let third = remote.publish(&scope, &source.checkpoint()).unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );

    let live = fake_lease(&root, "leases", "publish-3", Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(20));
    let held = remote.gc(&scope, 1).unwrap();
    assert_eq!(held.publishers, vec!["other".to_string()]);
    assert_eq!(held.files_deleted, 0, "{held:?}");
    assert_eq!(held.manifests_deleted.len(), 2, "{held:?}");
    std::fs::remove_file(&live).unwrap();
    let dead = fake_lease(&root, "leases", "publish-4", Duration::from_secs(300));
    let freed = remote.gc(&scope, 1).unwrap();
    assert!(freed.publishers.is_empty(), "{freed:?}");
    assert!(freed.files_deleted > 0, "{freed:?}");
    assert!(!dead.exists(), "a dead marker is deleted");
    assert_eq!(remote_keys(&remote, &scope), vec![third.manifest.clone()]);
    let check = remote.check(&scope, &third.manifest, true).unwrap();
    assert!(check.problems.is_empty(), "{:?}", check.problems);
}

/// The gap path of the lease, with 400 ms leases: a publish lists the files of an earlier
/// checkpoint whose manifest is gone, then uploads a large new file slowly (bandwidth
/// bound), so its marker goes unrefreshed past the lease. A gc of another writer running
/// then finds no live publisher and deletes those orphaned files. The publish notices the
/// gap, lists again, uploads them again and only then writes its manifest: the manifest is
/// whole, the report counts them as uploaded, and the checkpoint restores to its model.
#[test]
fn a_publish_that_lost_its_lease_checks_its_files_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("target");
    let open = file_target(&root);
    let lease = Duration::from_millis(400);
    let scope = scope("gap");
    let mut source = Source::named(tmp.path(), "gap");
    source.write_and_commit(1);
    source.store.compact().unwrap();
    source.write_and_commit(2);
    drop(source.checkpoint());
    settle(&tmp.path().join("gap"));
    let c1 = source.checkpoint();
    let first = open(settings("first", Duration::ZERO))
        .publish(&scope, &c1)
        .unwrap();
    open(settings("first", Duration::ZERO))
        .delete_object(&scope, &first.manifest)
        .unwrap();
    let (c2, kept, new_bytes) = source.grow_past(&c1, "g", 9);
    let slow = open(RemoteSettings {
        max_upload_bytes_per_sec: Some(new_bytes / 3),
        ..settings("slow", Duration::ZERO)
    })
    .with_lease(lease);
    let collector = open(settings("collector", Duration::ZERO)).with_lease(lease);
    let (published, collected) = std::thread::scope(|s| {
        let p = s.spawn(|| slow.publish(&scope, &c2).unwrap());
        std::thread::sleep(Duration::from_millis(1000));
        let g = collector.gc(&scope, 1).unwrap();
        (p.join().unwrap(), g)
    });
    assert!(collected.publishers.is_empty(), "{collected:?}");
    assert!(collected.files_deleted >= kept.len(), "{collected:?}");
    assert!(published.reused.is_empty(), "{published:?}");
    for name in &kept {
        assert!(published.uploaded.contains(name), "{published:?}");
    }
    let sent: u64 = published_files(&c2).values().map(|b| b.len() as u64).sum();
    assert_eq!(published.bytes_uploaded, sent, "{published:?}");
    let check = collector.check(&scope, &published.manifest, true).unwrap();
    assert!(check.problems.is_empty(), "{:?}", check.problems);
    let dest = tmp.path().join("restored-gap");
    collector.restore(&scope, None, &dest).unwrap();
    assert_store_holds(&dest, &source.model, source.offset);
}
