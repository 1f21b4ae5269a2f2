//! Committed readers never wait for the writer. Committed `get` latency on a store of
//! 100,000 committed keys, measured twice in one run: idle, and while another thread commits
//! a transaction that spilled 1 GiB to disk (1 KiB values) and rolls it forward.
//!
//! Criterion reports the mean of each; the percentiles (p50, p99, max) of every single read
//! are printed after it and written to `target/kstate-committed-reads.txt`. The goal: p99
//! during the roll-forward within 2x of the idle p99.
//!
//! Run: `cargo bench --bench committed_reads` (`KSTATE_BENCH_SPILL_MIB` sets the size of the
//! spilled transaction, 1024 by default).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use kstate::{Isolation, KvStore, StoreOptions, TopicPartition};

const COMMITTED_KEYS: u64 = 100_000;

fn spill_mib() -> u64 {
    std::env::var("KSTATE_BENCH_SPILL_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024)
}

fn key(i: u64) -> Vec<u8> {
    format!("key-{i:012}").into_bytes()
}

/// A reader's sample: the latency of each committed get of a pseudo-random present key.
fn read_for(store: &KvStore, keep_going: impl Fn() -> bool, limit: Duration) -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut out = Vec::new();
    let start = Instant::now();
    while keep_going() && start.elapsed() < limit {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = key(x % COMMITTED_KEYS);
        let t = Instant::now();
        let v = store
            .get_raw_with(Isolation::ReadCommitted, &k)
            .expect("read");
        out.push(t.elapsed().as_nanos() as u64);
        assert!(v.is_some());
    }
    out
}

fn percentiles(mut v: Vec<u64>) -> (u64, u64, u64, usize) {
    v.sort_unstable();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p) as usize];
    (at(0.50), at(0.99), *v.last().unwrap_or(&0), v.len())
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        KvStore::open(
            dir.path().join("store"),
            &StoreOptions::default().with_max_uncommitted_bytes(64 << 20),
        )
        .unwrap(),
    );
    let tp = TopicPartition::new("bench-changelog", 0);
    for i in 0..COMMITTED_KEYS {
        store.put(&key(i), &[7u8; 100], 1).unwrap();
    }
    store.commit(&[(tp.clone(), Some(1))], None).unwrap();
    store.compact().unwrap();

    let mut group = c.benchmark_group("committed_get");
    group.bench_function("idle", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i = (i + 7919) % COMMITTED_KEYS;
            black_box(
                store
                    .get_raw_with(Isolation::ReadCommitted, &key(i))
                    .unwrap(),
            )
        })
    });
    group.finish();

    let idle = percentiles(read_for(&store, || true, Duration::from_secs(3)));

    // The writer: a spilled transaction of `spill_mib` MiB, then its commit.
    let value = vec![3u8; 1024];
    let entries = spill_mib() << 10;
    for i in 0..entries {
        store
            .put(format!("big-{i:012}").as_bytes(), &value, 2)
            .unwrap();
    }
    let committing = Arc::new(AtomicBool::new(true));
    let writer = {
        let (store, committing, tp) = (Arc::clone(&store), Arc::clone(&committing), tp.clone());
        std::thread::spawn(move || {
            let t = Instant::now();
            store.commit(&[(tp, Some(2))], None).unwrap();
            committing.store(false, Ordering::SeqCst);
            t.elapsed()
        })
    };
    let busy = percentiles(read_for(
        &store,
        || committing.load(Ordering::SeqCst),
        Duration::from_secs(600),
    ));
    let commit_time = writer.join().unwrap();
    assert_eq!(store.committed_offset(&tp).unwrap(), Some(2));

    let report = format!(
        "committed get latency (ns), {COMMITTED_KEYS} committed keys:\n\
         | while | reads | p50 | p99 | max |\n|---|---|---|---|---|\n\
         | idle | {} | {} | {} | {} |\n\
         | a {} MiB spilled commit rolls forward ({:.1} s) | {} | {} | {} | {} |\n\
         p99 ratio (busy / idle): {:.2}\n",
        idle.3,
        idle.0,
        idle.1,
        idle.2,
        spill_mib(),
        commit_time.as_secs_f64(),
        busy.3,
        busy.0,
        busy.1,
        busy.2,
        busy.1 as f64 / idle.1.max(1) as f64
    );
    println!("{report}");
    let _ = std::fs::write("target/kstate-committed-reads.txt", &report);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
