//! `EngineIter::next_entry_where` on both engines against a model: the entries a filter
//! takes, in both directions, across seeks, on a snapshot that later writes do not change.

use std::collections::BTreeMap;

use super::memory::MemoryEngine;
use super::rocksdb::RocksEngine;
use super::{names, BatchOp, Engine, KeyFilter, KeyRange, Verdict};
use crate::RocksOptions;

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

/// Skips multiples of 3, takes 250 as the last of its run, takes the rest.
fn verdict(k: &[u8]) -> Verdict {
    let i = u32::from_be_bytes([k[0], k[1], k[2], k[3]]);
    if i % 3 == 0 {
        Verdict::Skip
    } else if i == 250 {
        Verdict::TakeLast
    } else {
        Verdict::Take
    }
}

/// Reads the whole cursor with the filter, seeking to `seek_to` after the `seek_after`-th
/// entry.
fn read(
    e: &dyn Engine,
    range: &KeyRange,
    reverse: bool,
    seek_after: usize,
    seek_to: u32,
) -> Vec<u32> {
    let family = e.registry().require(names::TIMESTAMPED).unwrap();
    let mut it = e.iter(family, range, reverse).unwrap();
    // Written after the cursor was made: never seen.
    e.write(&[BatchOp::Put(family, &key(1), b"late")], false)
        .unwrap();
    e.write(&[BatchOp::Delete(family, &key(2))], false).unwrap();
    let keep: &KeyFilter = &verdict;
    let mut out = vec![];
    while let Some((k, v)) = it.next_entry_where(keep).unwrap() {
        assert_eq!(v, k, "the value is the key");
        out.push(u32::from_be_bytes([k[0], k[1], k[2], k[3]]));
        if out.len() == seek_after {
            it.seek(&key(seek_to)).unwrap();
        }
    }
    // Back to the model's content for the next read.
    e.write(
        &[
            BatchOp::Put(family, &key(1), &key(1)),
            BatchOp::Put(family, &key(2), &key(2)),
        ],
        false,
    )
    .unwrap();
    out
}

fn model(
    all: &BTreeMap<u32, ()>,
    lo: u32,
    hi: u32,
    reverse: bool,
    seek_after: usize,
    seek_to: u32,
) -> Vec<u32> {
    let taken = |i: &u32| verdict(&key(*i)).taken();
    let mut order: Vec<u32> = all.range(lo..=hi).map(|(i, _)| *i).filter(taken).collect();
    if reverse {
        order.reverse();
    }
    let mut out: Vec<u32> = order.iter().copied().take(seek_after).collect();
    if out.len() == seek_after {
        let rest = order.iter().copied().filter(|i| {
            if reverse {
                *i <= seek_to
            } else {
                *i >= seek_to
            }
        });
        out.extend(rest);
    }
    out
}

fn check(e: &dyn Engine) {
    let family = e.registry().require(names::TIMESTAMPED).unwrap();
    let mut all = BTreeMap::new();
    let keys: Vec<[u8; 4]> = (0..600u32).filter(|i| i % 7 != 0).map(key).collect();
    let ops: Vec<BatchOp<'_>> = keys.iter().map(|k| BatchOp::Put(family, k, k)).collect();
    e.write(&ops, false).unwrap();
    for k in &keys {
        all.insert(u32::from_be_bytes(*k), ());
    }
    for reverse in [false, true] {
        for (lo, hi, seek_after, seek_to) in [
            (0, 599, usize::MAX, 0),
            (10, 500, 20, 400),
            (10, 500, 100, 30),
            (100, 300, 5, 250),
        ] {
            let (seek_after, seek_to) = if reverse && seek_after != usize::MAX {
                (seek_after, hi + lo - seek_to)
            } else {
                (seek_after, seek_to)
            };
            let range = KeyRange::inclusive(Some(&key(lo)), Some(&key(hi)));
            assert_eq!(
                read(e, &range, reverse, seek_after, seek_to),
                model(&all, lo, hi, reverse, seek_after, seek_to),
                "range {lo}..={hi} reverse {reverse}, seek to {seek_to} after {seek_after}"
            );
        }
    }
}

#[test]
fn filtered_cursors_take_what_the_filter_takes_on_both_engines() {
    check(&MemoryEngine::new(&[names::TIMESTAMPED]).unwrap());
    let dir = tempfile::tempdir().unwrap();
    check(&RocksEngine::open(dir.path(), &[names::TIMESTAMPED], &RocksOptions::default()).unwrap());
}
