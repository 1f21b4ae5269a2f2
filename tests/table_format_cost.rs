//! What writing block-based tables in `format_version` 6 (readable by Kafka Streams 4.4's
//! RocksDB) instead of RocksDB 11.8's default 7 costs on reads: two raw RocksDB databases
//! with kstate's table options and the same data, one per version, read in alternating
//! rounds in one process; each round's point reads and ranges of 100 are timed in CPU time
//! of the reading thread, which other processes on a shared machine disturb far less than
//! wall time. Prints the median of the rounds per operation and version.
//!
//! `cargo test --release --test table_format_cost -- --ignored --nocapture`
//! (`KSTATE_FORMAT_COST_KEYS`, default 300,000).

use std::hint::black_box;
use std::path::Path;

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, DB};

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn key(i: u64) -> Vec<u8> {
    format!("key-{i:012}").into_bytes()
}

fn open(path: &Path, version: i32) -> DB {
    let mut table = BlockBasedOptions::default();
    table.set_format_version(version);
    table.set_block_cache(&Cache::new_lru_cache(50 << 20));
    table.set_block_size(4096);
    table.set_bloom_filter(10.0, false);
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_block_based_table_factory(&table);
    o.set_compression_type(DBCompressionType::None);
    o.set_allow_mmap_reads(true);
    DB::open(&o, path).unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[test]
#[ignore = "a measurement, not a check: run it with --ignored --nocapture"]
fn format_version_6_and_7_read_alike() {
    let keys: u64 = std::env::var("KSTATE_FORMAT_COST_KEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300_000);
    let dir = tempfile::tempdir().unwrap();
    let dbs: Vec<(i32, DB)> = [6, 7]
        .into_iter()
        .map(|v| {
            let db = open(&dir.path().join(format!("v{v}")), v);
            for i in 0..keys {
                db.put(key(2 * i), [i as u8; 108]).unwrap();
            }
            db.flush().unwrap();
            db.compact_range(None::<&[u8]>, None::<&[u8]>);
            (v, db)
        })
        .collect();
    let (rounds, gets, ranges) = (21, 20_000u64, 2_000u64);
    let mut times: Vec<[Vec<f64>; 3]> = vec![Default::default(), Default::default()];
    for round in 0..rounds {
        // Alternate which version goes first, so that neither always follows the other.
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for slot in order {
            let db = &dbs[slot].1;
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ round;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % keys
            };
            let t = thread_cpu_ns();
            for _ in 0..gets {
                black_box(db.get_pinned(key(2 * next())).unwrap());
            }
            times[slot][0].push((thread_cpu_ns() - t) as f64 / gets as f64);
            let t = thread_cpu_ns();
            for _ in 0..gets {
                black_box(db.get_pinned(key(2 * next() + 1)).unwrap());
            }
            times[slot][1].push((thread_cpu_ns() - t) as f64 / gets as f64);
            let t = thread_cpu_ns();
            for _ in 0..ranges {
                let from = key(2 * next());
                let it = db.iterator(rocksdb::IteratorMode::From(
                    &from,
                    rocksdb::Direction::Forward,
                ));
                for e in it.take(100) {
                    black_box(e.unwrap());
                }
            }
            times[slot][2].push((thread_cpu_ns() - t) as f64 / ranges as f64);
        }
    }
    for (op, name) in ["get hit", "get miss", "range of 100"].iter().enumerate() {
        let v6 = median(times[0][op].clone());
        let v7 = median(times[1][op].clone());
        eprintln!(
            "{name:>13}: format_version 6 {:8.0} ns, 7 {:8.0} ns, 6/7 = {:.3} (CPU time, median of {rounds} rounds, {keys} keys)",
            v6,
            v7,
            v6 / v7
        );
    }
    for (v, db) in &dbs {
        let live = db.live_files().unwrap();
        for f in live {
            let raw = std::fs::read(
                dir.path()
                    .join(format!("v{v}"))
                    .join(f.name.trim_start_matches('/')),
            )
            .unwrap();
            let at = raw.len() - 12;
            let version = u32::from_le_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]]);
            assert_eq!(
                version as i32, *v,
                "the table was written in the version asked for"
            );
        }
    }
}
