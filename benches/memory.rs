//! The in-memory engine through the store, as the JNI surface drives it for Kafka Streams'
//! benchmark (`java/src/jmh`, `KvBench` and `RestoreBench`): 1M keys of 12 bytes, 108-byte
//! raw values (8-byte timestamp + 100 bytes), every call on the raw-bytes API.
//!
//! * `get_hit`, `get_miss`: the writer's view (`get_raw`), as Kafka's processor reads;
//!   `get_hit_committed`: a read-committed get (interactive queries).
//! * `put_commit`: one put of an existing key, every 1,000th also commits; per put.
//! * `put_all_1000`: `put_all_raw` of 1,000 existing keys plus the commit; per batch.
//! * `restore_100k`: 100,000 changelog records (distinct keys, shuffled) in batches of 1,000
//!   through `restore_batch` into an empty store; per restore.
//!
//! Run: `cargo bench --bench memory` (`KSTATE_BENCH_KEYS` shrinks the data set).

// The workload is shared source, not library API: each user compiles its own copy.
#[allow(dead_code)]
#[path = "../tests/support/workload.rs"]
mod workload;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use kstate::{Isolation, KvStore, StoreOptions, TopicPartition};
use workload::Rng;

const VALUE_BYTES: usize = 100;

fn keys() -> u64 {
    std::env::var("KSTATE_BENCH_KEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
}

/// Key `i`: 12 bytes, ordered as `i` (the JMH suite's layout).
fn key(i: u64) -> Vec<u8> {
    format!("k{i:011}").into_bytes()
}

/// A key that sorts among the keys but is none of them.
fn absent(i: u64) -> Vec<u8> {
    format!("k{i:011}x").into_bytes()
}

/// A raw timestamped value: 8-byte timestamp, then 100 bytes.
fn raw(i: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 + VALUE_BYTES);
    v.extend_from_slice(&(i as i64).to_be_bytes());
    v.extend((0..VALUE_BYTES).map(|j| (i as u8).wrapping_add(j as u8)));
    v
}

fn memory_store() -> KvStore {
    KvStore::open_in_memory(&StoreOptions::default()).unwrap()
}

fn tp() -> TopicPartition {
    TopicPartition::new("bench-changelog", 0)
}

/// Loads keys `0..n` in batches of 1,000 (put_all + commit), as the JMH suite does.
fn load(store: &KvStore, keys: &[Vec<u8>], values: &[Vec<u8>]) {
    for (batch, chunk) in keys.chunks(1000).enumerate() {
        store
            .put_all_raw(
                chunk
                    .iter()
                    .enumerate()
                    .map(|(j, k)| (&k[..], Some(&values[j % values.len()][..]))),
            )
            .unwrap();
        store.commit(&[(tp(), Some(batch as i64))], None).unwrap();
    }
}

fn benches(c: &mut Criterion) {
    let n = keys();
    let all: Vec<Vec<u8>> = (0..n).map(key).collect();
    let missing: Vec<Vec<u8>> = (0..n).map(absent).collect();
    let values: Vec<Vec<u8>> = (0..1024).map(raw).collect();
    let store = memory_store();
    load(&store, &all, &values);

    let mut g = c.benchmark_group("memory");
    let mut rng = Rng::new(2);
    g.throughput(Throughput::Elements(1));
    g.bench_function("get_hit", |b| {
        b.iter(|| black_box(store.get_raw(&all[rng.below(n) as usize]).unwrap()))
    });
    g.bench_function("get_miss", |b| {
        b.iter(|| black_box(store.get_raw(&missing[rng.below(n) as usize]).unwrap()))
    });
    g.bench_function("get_hit_committed", |b| {
        b.iter(|| {
            black_box(
                store
                    .get_raw_with(Isolation::ReadCommitted, &all[rng.below(n) as usize])
                    .unwrap(),
            )
        })
    });

    let mut offset = n as i64;
    g.bench_function("put_commit", |b| {
        b.iter(|| {
            let i = rng.below(n) as usize;
            store.put_raw(&all[i], Some(&values[i & 1023])).unwrap();
            offset += 1;
            if offset % 1000 == 0 {
                store.commit(&[(tp(), Some(offset))], None).unwrap();
            }
        })
    });
    store.commit(&[(tp(), Some(offset))], None).unwrap();

    g.bench_function("put_all_1000", |b| {
        b.iter(|| {
            let batch: Vec<(&[u8], Option<&[u8]>)> = (0..1000)
                .map(|_| {
                    let i = rng.below(n) as usize;
                    (&all[i][..], Some(&values[i & 1023][..]))
                })
                .collect();
            store.put_all_raw(batch).unwrap();
            offset += 1;
            store.commit(&[(tp(), Some(offset))], None).unwrap();
        })
    });
    g.finish();
    drop(store);

    let mut g = c.benchmark_group("memory_restore");
    g.sample_size(10);
    let count = n.min(100_000);
    g.throughput(Throughput::Elements(count));
    let mut order: Vec<u64> = (0..count).collect();
    let mut shuffle = Rng::new(7);
    for i in (1..order.len()).rev() {
        order.swap(i, shuffle.below(i as u64 + 1) as usize);
    }
    g.bench_function("restore_100k", |b| {
        b.iter_batched(
            memory_store,
            |store| {
                for (batch, chunk) in order.chunks(1000).enumerate() {
                    store
                        .restore_batch(
                            chunk.iter().map(|&i| {
                                (&all[i as usize][..], Some(&values[i as usize & 1023][..]))
                            }),
                            &[(tp(), Some(batch as i64))],
                            None,
                        )
                        .unwrap();
                }
                store
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group! {
    name = memory;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5));
    targets = benches
}
criterion_main!(memory);
