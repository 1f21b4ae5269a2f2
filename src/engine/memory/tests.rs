//! The memory engine against a `BTreeMap` model: batches of puts, deletes and range
//! deletes, snapshots taken and dropped at random (each checked against the model of its
//! instant until it is dropped), point reads, cursors in both directions with seeks, the
//! trees' shape after every batch, and every node freed once nothing can reach it.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::tree::{self, LIVE_NODES};
use super::*;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Miri (`scripts/miri.sh`) interprets these tests thousands of times slower than native
/// code: under it they run on fewer keys and cases, still enough for deep trees, splits,
/// merges, copies under snapshots and node reuse.
const fn scaled(native: u32, miri: u32) -> u32 {
    if cfg!(miri) {
        miri
    } else {
        native
    }
}

/// `cases` proptest cases natively, `miri_cases` under Miri. Miri's isolation forbids the
/// file system, so there failures are not persisted (the failing input is still printed).
pub(super) fn proptest_config(cases: u32, miri_cases: u32) -> ProptestConfig {
    if cfg!(miri) {
        ProptestConfig {
            cases: miri_cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    } else {
        ProptestConfig {
            cases,
            ..ProptestConfig::default()
        }
    }
}

fn live_nodes() -> isize {
    LIVE_NODES.with(|n| n.get())
}

impl MemoryEngine {
    /// Checks every live tree's shape, and that the live trees plus the retired queue
    /// account for every node this thread allocated since `baseline`.
    fn check(&self, baseline: isize) -> std::result::Result<(), String> {
        let live = self.shared.live.read_recover();
        let mut nodes = 0;
        for t in live.trees.iter() {
            // SAFETY: the read lock keeps the writer out.
            unsafe { tree::check(t) }?;
            // SAFETY: as above.
            nodes += unsafe { tree::node_count(t) };
        }
        let (_, retired, spare) = self.shared.reclaim.lock_recover().counts();
        let allocated = live_nodes() - baseline;
        if allocated != (nodes + retired + spare) as isize {
            return Err(format!(
                "{allocated} nodes allocated, {nodes} live, {retired} retired, {spare} spare"
            ));
        }
        Ok(())
    }
}

fn scan(iter: &mut dyn EngineIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    std::iter::from_fn(|| iter.next_entry().unwrap()).collect()
}

fn model_scan(m: &Model, range: &KeyRange, reverse: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    if range.is_empty() {
        return vec![];
    }
    let it = m
        .range::<[u8], _>(range.as_slices())
        .map(|(k, v)| (k.clone(), v.clone()));
    if reverse {
        it.rev().collect()
    } else {
        it.collect()
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Puts of keys `start..start + n` (step `step`) with values of `size` bytes.
    PutRun {
        start: u32,
        n: u32,
        step: u32,
        size: usize,
    },
    /// Scattered puts and deletes of single keys in one batch.
    Mixed(Vec<(u32, Option<usize>)>),
    DeleteRange(u32, u32),
    /// A range delete from the lowest key (`[b"", key)`: a segmented store's expiry),
    /// which removes whole subtrees.
    DeleteBelow(u32),
    Snapshot,
    DropSnapshot(usize),
    /// A batch of puts written with a promise never to read snapshot `i` again (which is
    /// then dropped from the checks).
    ReleaseAndWrite(usize, u32),
    Scan {
        from: Option<u32>,
        to: Option<u32>,
        reverse: bool,
        seek: Option<u32>,
    },
}

/// Keys of varied length sharing prefixes, ordered as `i` for the fixed-width part.
fn key(i: u32) -> Vec<u8> {
    let mut k = format!("k{:06}", i / 3).into_bytes();
    match i % 3 {
        0 => {}
        1 => k.push(0),
        _ => k.extend_from_slice(b"\xffsuffix-longer-than-eight"),
    }
    k
}

/// `size` bytes naming key `i` (its number, repeated), built by a few block copies rather
/// than byte by byte, which Miri would interpret one byte at a time.
fn value(i: u32, size: usize) -> Vec<u8> {
    let mut v = i.to_le_bytes().repeat(size / 4 + 1);
    v.truncate(size);
    v
}

/// Key numbers the model test draws from, and the longest run of puts in one batch.
const KEYS: u32 = scaled(6000, 1500);
const RUN: u32 = scaled(600, 150);

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u32..KEYS, 1u32..RUN, 1u32..4, prop_oneof![0usize..40, 100usize..300, Just(5000usize)])
            .prop_map(|(start, n, step, size)| Op::PutRun { start, n, step, size }),
        3 => prop::collection::vec((0u32..KEYS, prop::option::of(0usize..200)), 1..60).prop_map(Op::Mixed),
        1 => (0u32..KEYS, 0u32..KEYS / 2).prop_map(|(a, n)| Op::DeleteRange(a, a + n)),
        1 => (0u32..KEYS + 1).prop_map(Op::DeleteBelow),
        1 => Just(Op::Snapshot),
        1 => (0usize..4).prop_map(Op::DropSnapshot),
        1 => (0usize..4, 0u32..KEYS).prop_map(|(i, k)| Op::ReleaseAndWrite(i, k)),
        2 => (prop::option::of(0u32..KEYS), prop::option::of(0u32..KEYS), any::<bool>(), prop::option::of(0u32..KEYS))
            .prop_map(|(from, to, reverse, seek)| Op::Scan { from, to, reverse, seek }),
    ]
}

fn run(ops: Vec<Op>) -> std::result::Result<(), TestCaseError> {
    let baseline = live_nodes();
    {
        let e = MemoryEngine::new(&["other", "data"]).unwrap();
        let (other, f) = (
            e.registry().require("other").unwrap(),
            e.registry().require("data").unwrap(),
        );
        let mut model = Model::new();
        let mut snaps: Vec<(Arc<dyn Snapshot>, Model)> = vec![];
        for op in ops {
            match op {
                Op::PutRun {
                    start,
                    n,
                    step,
                    size,
                } => {
                    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
                        .map(|j| start + j * step)
                        .map(|i| (key(i), value(i, size)))
                        .collect();
                    let mut batch: Vec<BatchOp<'_>> =
                        entries.iter().map(|(k, v)| BatchOp::Put(f, k, v)).collect();
                    batch.push(BatchOp::Put(other, b"x", b"y"));
                    e.write(&batch, false).unwrap();
                    model.extend(entries);
                }
                Op::Mixed(writes) => {
                    let entries: Vec<(Vec<u8>, Option<Vec<u8>>)> = writes
                        .iter()
                        .map(|(i, w)| (key(*i), w.map(|s| value(*i, s))))
                        .collect();
                    let batch: Vec<BatchOp<'_>> = entries
                        .iter()
                        .map(|(k, v)| match v {
                            Some(v) => BatchOp::Put(f, k, v),
                            None => BatchOp::Delete(f, k),
                        })
                        .collect();
                    e.write(&batch, false).unwrap();
                    for (k, v) in entries {
                        match v {
                            Some(v) => model.insert(k, v),
                            None => model.remove(&k),
                        };
                    }
                }
                Op::DeleteRange(a, b) => {
                    let (from, to) = (key(a), key(b));
                    e.write(&[BatchOp::DeleteRange(f, &from, &to)], false)
                        .unwrap();
                    if from < to {
                        let doomed: Vec<Vec<u8>> =
                            model.range(from..to).map(|(k, _)| k.clone()).collect();
                        for k in doomed {
                            model.remove(&k);
                        }
                    }
                }
                Op::DeleteBelow(b) => {
                    let to = key(b);
                    e.write(&[BatchOp::DeleteRange(f, b"", &to)], false)
                        .unwrap();
                    model.retain(|k, _| *k >= to);
                }
                Op::Snapshot => snaps.push((e.snapshot().unwrap(), model.clone())),
                Op::ReleaseAndWrite(i, start) => {
                    let entries: Vec<(Vec<u8>, Vec<u8>)> = (start..start + 40)
                        .map(|i| (key(i), value(i, 20)))
                        .collect();
                    let batch: Vec<BatchOp<'_>> =
                        entries.iter().map(|(k, v)| BatchOp::Put(f, k, v)).collect();
                    match snaps.len() {
                        0 => {
                            let fresh = e.snapshot().unwrap();
                            e.write_unshared(&batch, false, false, &fresh).unwrap();
                        }
                        n => {
                            let (released, _) = snaps.remove(i % n);
                            e.write_unshared(&batch, false, true, &released).unwrap();
                        }
                    }
                    model.extend(entries);
                }
                Op::DropSnapshot(i) => {
                    if !snaps.is_empty() {
                        snaps.remove(i % snaps.len());
                    }
                }
                Op::Scan {
                    from,
                    to,
                    reverse,
                    seek,
                } => {
                    let range =
                        KeyRange::inclusive(from.map(key).as_deref(), to.map(key).as_deref());
                    let mut it = e.iter(f, &range, reverse).unwrap();
                    // A write after the cursor was made is not seen by it.
                    e.write(&[BatchOp::Put(f, &key(1), b"late")], false)
                        .unwrap();
                    let mut want = model_scan(&model, &range, reverse);
                    if let Some(s) = seek {
                        let target = key(s);
                        it.seek(&target).unwrap();
                        let remaining = crate::engine::cursor::seek_range(&range, reverse, &target);
                        want = model_scan(&model, &remaining, reverse);
                    }
                    prop_assert_eq!(scan(it.as_mut()), want);
                    model.insert(key(1), b"late".to_vec());
                }
            }
            e.check(baseline).map_err(TestCaseError::fail)?;
            prop_assert_eq!(e.approximate_count(f).unwrap(), model.len() as u64);
            for probe in [0u32, 1, 2, 3, KEYS / 6, KEYS / 2 - 2, KEYS - 1, KEYS] {
                prop_assert_eq!(
                    e.get(f, &key(probe)).unwrap(),
                    model.get(&key(probe)).cloned()
                );
            }
            for (snap, m) in &snaps {
                for probe in [0u32, 1, 2, KEYS / 4, KEYS * 2 / 3] {
                    prop_assert_eq!(
                        snap.get(f, &key(probe)).unwrap(),
                        m.get(&key(probe)).cloned()
                    );
                }
            }
        }
        // Every snapshot still shows its instant, in full, in both directions.
        for (snap, m) in &snaps {
            let mut fwd = snap.iter(f, &KeyRange::all(), false).unwrap();
            prop_assert_eq!(scan(fwd.as_mut()), model_scan(m, &KeyRange::all(), false));
            let mut rev = snap.iter(f, &KeyRange::all(), true).unwrap();
            prop_assert_eq!(scan(rev.as_mut()), model_scan(m, &KeyRange::all(), true));
        }
        drop(snaps);
        // With no snapshot left, nothing stays retired.
        prop_assert_eq!(e.shared.reclaim.lock_recover().counts().0, 0);
        prop_assert_eq!(e.shared.reclaim.lock_recover().counts().1, 0);
        e.check(baseline).map_err(TestCaseError::fail)?;
    }
    prop_assert_eq!(live_nodes(), baseline, "every node freed with the engine");
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config(96, 4))]

    #[test]
    fn engine_matches_a_model_with_snapshots(
        ops in prop::collection::vec(op(), 1..scaled(40, 16) as usize)
    ) {
        run(ops)?;
    }
}

#[test]
fn batches_ranges_and_snapshots() {
    let e = MemoryEngine::new(&["a", "b"]).unwrap();
    let (fa, fb) = (
        e.registry().require("a").unwrap(),
        e.registry().require("b").unwrap(),
    );
    e.write(
        &[
            BatchOp::Put(fa, b"a", b"1"),
            BatchOp::Put(fa, b"b", b"2"),
            BatchOp::Put(fa, b"c", b""),
            BatchOp::Put(fb, b"a", b"m"),
        ],
        false,
    )
    .unwrap();
    let snap = e.snapshot().unwrap();
    let mut it = e.iter(fa, &KeyRange::all(), true).unwrap();
    e.write(&[BatchOp::DeleteRange(fa, b"a", b"c")], false)
        .unwrap();
    let seen: Vec<Vec<u8>> = scan(it.as_mut()).into_iter().map(|(k, _)| k).collect();
    assert_eq!(seen, vec![b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
    assert_eq!(e.approximate_count(fa).unwrap(), 1);
    assert_eq!(e.get(fa, b"c").unwrap(), Some(vec![]));
    assert_eq!(e.get(fb, b"a").unwrap(), Some(b"m".to_vec()));
    assert_eq!(
        snap.get(fa, b"a").unwrap(),
        Some(b"1".to_vec()),
        "snapshot is pinned"
    );
    assert!(e
        .write(&[BatchOp::Put(Family(9), b"x", b"y")], false)
        .is_err());
    // A refused batch changes nothing, even when its bad op comes last.
    assert!(e
        .write(
            &[
                BatchOp::Put(fa, b"z", b"1"),
                BatchOp::Delete(Family(9), b"x")
            ],
            false
        )
        .is_err());
    assert_eq!(e.get(fa, b"z").unwrap(), None);
}

/// Without snapshots the trees are updated in place: a batch that overwrites existing keys
/// allocates no node; with a snapshot alive the same batch copies, and dropping the
/// snapshot frees the originals.
#[test]
fn copies_only_while_a_snapshot_can_see() {
    let baseline = live_nodes();
    let e = MemoryEngine::new(&["d"]).unwrap();
    let f = e.registry().require("d").unwrap();
    // Deep enough for three levels: more leaves than a root holds. Under Miri, fewer and
    // larger entries (two or three a leaf) make a tree as deep from a hundredth of the keys.
    let (n, size) = if cfg!(miri) {
        (200, 1000)
    } else {
        (20_000, 108)
    };
    let (v1, v2) = (vec![1u8; size], vec![2u8; size]);
    let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("k{i:011}").into_bytes()).collect();
    for chunk in keys.chunks(1000) {
        let ops: Vec<BatchOp<'_>> = chunk.iter().map(|k| BatchOp::Put(f, k, &v1)).collect();
        e.write(&ops, false).unwrap();
    }
    let depth = depth_of(&e, f);
    assert!(depth >= 3, "{n} entries make a tree of depth {depth}");
    let heap = {
        let live = e.shared.live.read_recover();
        // SAFETY: the read lock keeps the writer out.
        unsafe { tree::heap_bytes(&live.trees[f.index()]) }
    };
    let data = keys.len() * (12 + size);
    assert!(
        heap < 3 * data,
        "{heap} heap bytes for {data} bytes of entries"
    );
    let before = live_nodes();
    let overwrite: Vec<BatchOp<'_>> = keys
        .iter()
        .step_by(7)
        .map(|k| BatchOp::Put(f, k, &v2))
        .collect();
    e.write(&overwrite, false).unwrap();
    assert_eq!(live_nodes(), before, "in place: no node allocated");

    let snap = e.snapshot().unwrap();
    e.write(&overwrite, false).unwrap();
    let (_, retired, spare) = e.shared.reclaim.lock_recover().counts();
    assert!(retired > 0, "originals retired while the snapshot lives");
    assert_eq!(spare, 0);
    assert_eq!(live_nodes(), before + retired as isize);
    assert_eq!(snap.get(f, &keys[0]).unwrap(), Some(v2.clone()));
    drop(snap);
    assert_eq!(
        e.shared.reclaim.lock_recover().counts(),
        (0, 0, retired),
        "originals kept as spares"
    );
    // The next copy-on-write reuses them: no new node while spares last.
    let snap = e.snapshot().unwrap();
    let few: Vec<BatchOp<'_>> = overwrite.iter().copied().take(50).collect();
    e.write(&few, false).unwrap();
    assert_eq!(
        live_nodes(),
        before + retired as isize,
        "copies made in spare nodes"
    );
    drop(snap);
    e.check(baseline).unwrap();
    drop(e);
    assert_eq!(live_nodes(), baseline);
}

/// Readers on other threads hold snapshots and cursors while the writer rewrites, splits
/// and empties the tree: each sees exactly the state of its instant.
#[test]
fn snapshots_on_other_threads_stay_fixed() {
    let e = Arc::new(MemoryEngine::new(&["d"]).unwrap());
    let f = e.registry().require("d").unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (e, stop) = (Arc::clone(&e), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut checked = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let snap = e.snapshot().unwrap();
                    // Every batch writes one generation to all keys of a range: a snapshot
                    // holds a single generation throughout.
                    let all = scan(snap.iter(f, &KeyRange::all(), false).unwrap().as_mut());
                    if let Some((_, first)) = all.first() {
                        assert!(all.iter().all(|(_, v)| v == first), "torn snapshot");
                    }
                    std::thread::yield_now();
                    let again = scan(snap.iter(f, &KeyRange::all(), true).unwrap().as_mut());
                    assert_eq!(again.len(), all.len());
                    checked += 1;
                }
                checked
            })
        })
        .collect();
    let n_keys = scaled(3000, 120) as usize;
    let keys: Vec<Vec<u8>> = (0..n_keys)
        .map(|i| format!("k{i:06}").into_bytes())
        .collect();
    for generation in 0..scaled(300, 12) {
        let value = generation
            .to_be_bytes()
            .repeat(1 + (generation % 5) as usize);
        let n = if generation % 10 == 9 {
            0
        } else {
            n_keys / 6 + (generation as usize * 37) % (n_keys * 5 / 6)
        };
        let mut ops: Vec<BatchOp<'_>> = vec![BatchOp::DeleteRange(f, b"", b"\xff")];
        ops.extend(keys[..n].iter().map(|k| BatchOp::Put(f, k, &value)));
        e.write(&ops, false).unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
}

/// A snapshot reads the live trees until a write comes, which pins it first: it keeps its
/// instant, and only then do writes copy.
#[test]
fn snapshots_pin_at_the_next_write() {
    let baseline = live_nodes();
    let e = MemoryEngine::new(&["d"]).unwrap();
    let f = e.registry().require("d").unwrap();
    let keys: Vec<Vec<u8>> = (0..scaled(5000, 400))
        .map(|i| format!("k{i:011}").into_bytes())
        .collect();
    let load: Vec<BatchOp<'_>> = keys.iter().map(|k| BatchOp::Put(f, k, b"v0")).collect();
    e.write(&load, false).unwrap();
    let snap = e.snapshot().unwrap();
    assert_eq!(
        e.shared.reclaim.lock_recover().counts().0,
        0,
        "not pinned yet"
    );
    assert_eq!(snap.get(f, &keys[7]).unwrap(), Some(b"v0".to_vec()));
    let before = live_nodes();
    e.write(&[BatchOp::Put(f, &keys[7], b"v1")], false).unwrap();
    assert_eq!(
        e.shared.reclaim.lock_recover().counts().0,
        1,
        "pinned by the write"
    );
    assert!(
        live_nodes() > before,
        "the write copied the path it changed"
    );
    assert_eq!(snap.get(f, &keys[7]).unwrap(), Some(b"v0".to_vec()));
    assert_eq!(e.get(f, &keys[7]).unwrap(), Some(b"v1".to_vec()));
    drop(snap);
    e.check(baseline).unwrap();
}

/// A snapshot its owner releases is not pinned: the write updates in place; a snapshot
/// somebody else holds is pinned by the same write and keeps its instant.
#[test]
fn released_snapshots_let_writes_update_in_place() {
    let e = MemoryEngine::new(&["d"]).unwrap();
    let f = e.registry().require("d").unwrap();
    let keys: Vec<Vec<u8>> = (0..scaled(5000, 400))
        .map(|i| format!("k{i:011}").into_bytes())
        .collect();
    let load: Vec<BatchOp<'_>> = keys.iter().map(|k| BatchOp::Put(f, k, b"v0")).collect();
    e.write(&load, false).unwrap();
    let view = e.snapshot().unwrap();
    let before = live_nodes();
    let change: Vec<BatchOp<'_>> = keys
        .iter()
        .step_by(3)
        .map(|k| BatchOp::Put(f, k, b"v1"))
        .collect();
    e.write_unshared(&change, false, false, &view).unwrap();
    assert_eq!(live_nodes(), before, "in place");
    assert_eq!(
        e.shared.reclaim.lock_recover().counts().0,
        0,
        "nothing pinned"
    );
    assert!(
        view.get(f, &keys[0]).is_err(),
        "a released snapshot read by mistake fails, never lies"
    );
    let view = e.snapshot().unwrap();
    let reader = e.snapshot().unwrap();
    let change: Vec<BatchOp<'_>> = keys
        .iter()
        .step_by(3)
        .map(|k| BatchOp::Put(f, k, b"v2"))
        .collect();
    e.write_unshared(&change, false, false, &view).unwrap();
    assert!(live_nodes() > before, "copied for the other snapshot");
    assert_eq!(reader.get(f, &keys[0]).unwrap(), Some(b"v1".to_vec()));
    let all = scan(reader.iter(f, &KeyRange::all(), false).unwrap().as_mut());
    assert_eq!(all.len(), keys.len());
    assert_eq!(e.get(f, &keys[0]).unwrap(), Some(b"v2".to_vec()));
}

/// The depth of family `f`'s live tree.
fn depth_of(e: &MemoryEngine, f: Family) -> usize {
    let live = e.shared.live.read_recover();
    // SAFETY: the read lock keeps the writer out.
    unsafe { tree::depth(&live.trees[f.index()]) }
}

/// A three-level tree shrinks under a snapshot and two open cursors: a range delete and
/// scattered deletes empty leaves, merge leaves and inner nodes with their siblings and
/// collapse the root, each change copying what the snapshot can see. The snapshot and the
/// cursors keep their instant; once they are gone the originals are spares, the next
/// copies and splits are made in them, and dropping the engine frees every node.
#[test]
fn deep_tree_shrinks_under_a_snapshot() {
    let baseline = live_nodes();
    {
        let e = MemoryEngine::new(&["d"]).unwrap();
        let f = e.registry().require("d").unwrap();
        // Under Miri, fewer and larger entries (two or three a leaf): as deep a tree from
        // a hundredth of the keys.
        let (n, copies) = if cfg!(miri) { (200, 90) } else { (20_000, 1) };
        let value = |k: &[u8]| k[1..].repeat(copies);
        let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("k{i:011}").into_bytes()).collect();
        let loaded: Model = keys.iter().map(|k| (k.clone(), value(k))).collect();
        // Small batches: a leaf overfilled by a long sorted run is cut into nearly full
        // pieces (Tree::insert_run), which makes a tree shallower than this test needs.
        for chunk in loaded.iter().collect::<Vec<_>>().chunks(8) {
            let ops: Vec<BatchOp<'_>> = chunk.iter().map(|(k, v)| BatchOp::Put(f, k, v)).collect();
            e.write(&ops, false).unwrap();
        }
        let deep = depth_of(&e, f);
        assert!(deep >= 3, "{n} entries make a tree of depth {deep}");

        let snap = e.snapshot().unwrap();
        let mut forward = snap.iter(f, &KeyRange::all(), false).unwrap();
        let mut backward = e.iter(f, &KeyRange::all(), true).unwrap();
        let all = model_scan(&loaded, &KeyRange::all(), false);
        // Both cursors stop a third of the way in, inside leaves the deletes empty.
        let third = n / 3;
        for want in &all[..third] {
            assert_eq!(forward.next_entry().unwrap().as_ref(), Some(want));
        }
        for want in all.iter().rev().take(third) {
            assert_eq!(backward.next_entry().unwrap().as_ref(), Some(want));
        }

        // The middle 80% in one range delete, then all but every 40th key of the rest.
        let middle = n / 10..n * 9 / 10;
        e.write(
            &[BatchOp::DeleteRange(
                f,
                &keys[middle.start],
                &keys[middle.end],
            )],
            false,
        )
        .unwrap();
        let kept = |i: usize| i % 40 == 0 && !middle.contains(&i);
        let scattered: Vec<BatchOp<'_>> = (0..n)
            .filter(|&i| !kept(i) && !middle.contains(&i))
            .map(|i| BatchOp::Delete(f, &keys[i]))
            .collect();
        e.write(&scattered, false).unwrap();
        let mut model: Model = (0..n)
            .filter(|&i| kept(i))
            .map(|i| (keys[i].clone(), value(&keys[i])))
            .collect();
        e.check(baseline).unwrap();
        let shallow = depth_of(&e, f);
        assert!(shallow < deep, "depth {deep} became {shallow}");
        let (pins, retired, _) = e.shared.reclaim.lock_recover().counts();
        assert_eq!(
            pins, 2,
            "the snapshot's (shared by its cursor) and the engine cursor's"
        );
        assert!(
            retired > 0,
            "what the snapshot sees was copied, not changed"
        );
        let now = scan(e.iter(f, &KeyRange::all(), false).unwrap().as_mut());
        assert_eq!(now, model_scan(&model, &KeyRange::all(), false));

        // The snapshot and the cursors still show the tree as loaded.
        assert_eq!(scan(forward.as_mut()), all[third..].to_vec());
        let rest_backward: Vec<(Vec<u8>, Vec<u8>)> =
            all[..n - third].iter().rev().cloned().collect();
        assert_eq!(scan(backward.as_mut()), rest_backward);
        for i in (0..n).step_by(97) {
            assert_eq!(
                snap.get(f, &keys[i]).unwrap(),
                loaded.get(&keys[i]).cloned()
            );
        }
        drop((forward, backward, snap));
        let (pins, retired, spare) = e.shared.reclaim.lock_recover().counts();
        assert_eq!((pins, retired), (0, 0), "nothing left to retire");
        assert!(spare > 0, "the originals became spares");

        // Under a new snapshot, refilling a tenth of the keys with values twice as long
        // copies the remaining nodes and splits leaves: every node it needs comes from the
        // spares.
        let allocated = live_nodes();
        let snap = e.snapshot().unwrap();
        let refilled: Model = keys[..n / 10]
            .iter()
            .map(|k| (k.clone(), value(k).repeat(2)))
            .collect();
        let refill: Vec<BatchOp<'_>> = refilled
            .iter()
            .map(|(k, v)| BatchOp::Put(f, k, v))
            .collect();
        e.write(&refill, false).unwrap();
        assert_eq!(
            live_nodes(),
            allocated,
            "copies and splits made in spare nodes"
        );
        model.extend(refilled);
        assert_eq!(snap.get(f, &keys[0]).unwrap(), Some(value(&keys[0])));
        assert_eq!(e.get(f, &keys[0]).unwrap(), Some(value(&keys[0]).repeat(2)));
        drop(snap);
        e.check(baseline).unwrap();
        for reverse in [false, true] {
            let got = scan(e.iter(f, &KeyRange::all(), reverse).unwrap().as_mut());
            assert_eq!(got, model_scan(&model, &KeyRange::all(), reverse));
        }
    }
    assert_eq!(live_nodes(), baseline, "every node freed with the engine");
}

/// The transaction layer's pattern, raced: after every batch the writer publishes a fresh
/// snapshot as the view; it writes the next batch in place (`write_unshared`) when no
/// reader holds that view, and copies otherwise. Readers take the view and read it by key
/// and through cursors while later batches land: each read shows one whole batch, never an
/// older one than the reader saw before. Small, so that Miri runs it under many thread
/// schedules (`scripts/miri.sh`).
#[test]
fn published_views_race_readers() {
    let e = Arc::new(MemoryEngine::new(&["d"]).unwrap());
    let f = e.registry().require("d").unwrap();
    let keys: Arc<Vec<Vec<u8>>> = Arc::new(
        (0..scaled(400, 40))
            .map(|i| format!("k{i:04}").into_bytes())
            .collect(),
    );
    let batches = scaled(300, 8);
    // Batch `g` sets every key to `g`, as 4 to 12 bytes (sizes change: appends and
    // in-place overwrites both happen).
    let value = |g: u32| g.to_be_bytes().repeat(1 + (g % 3) as usize);
    let view: Arc<Mutex<Arc<dyn Snapshot>>> = Arc::new(Mutex::new(e.snapshot().unwrap()));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (keys, view) = (Arc::clone(&keys), Arc::clone(&view));
            std::thread::spawn(move || {
                let mut seen = 0u32;
                let mut reads = 0u32;
                while seen < batches {
                    let snap = Arc::clone(&*view.lock().unwrap());
                    let g = snap
                        .get(f, &keys[r])
                        .unwrap()
                        .map_or(0, |v| u32::from_be_bytes([v[0], v[1], v[2], v[3]]));
                    assert!(g >= seen, "view went back from batch {seen} to {g}");
                    seen = g;
                    let want: Vec<(Vec<u8>, Vec<u8>)> = if g == 0 {
                        vec![]
                    } else {
                        keys.iter().map(|k| (k.clone(), value(g))).collect()
                    };
                    std::thread::yield_now();
                    let reverse = reads % 2 == 1;
                    let mut got = scan(snap.iter(f, &KeyRange::all(), reverse).unwrap().as_mut());
                    if reverse {
                        got.reverse();
                    }
                    assert_eq!(got, want, "batch {g} torn");
                    let last = keys.len() - 1 - r;
                    assert_eq!(
                        snap.get(f, &keys[last]).unwrap(),
                        want.get(last).map(|(_, v)| v.clone())
                    );
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for g in 1..=batches {
        let v = value(g);
        let ops: Vec<BatchOp<'_>> = keys.iter().map(|k| BatchOp::Put(f, k, &v)).collect();
        let mut slot = view.lock().unwrap();
        if Arc::strong_count(&slot) == 1 {
            e.write_unshared(&ops, false, false, &slot).unwrap();
        } else {
            e.write(&ops, false).unwrap();
        }
        *slot = e.snapshot().unwrap();
    }
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let last = e.snapshot().unwrap();
    assert_eq!(last.get(f, &keys[0]).unwrap(), Some(value(batches)));
}
