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
//! Window and session stores on the memory engine (`WindowBench`, `SessionBench`), 10,000
//! keys (`KSTATE_BENCH_KEYS / 100`):
//! * `window_put_commit_expiring`, `session_put_commit_expiring`: a put of a random key's
//!   window (session) at the current minute, every 1,000th put also commits and moves the
//!   stream time on by one minute; retention 1 hour (segment interval 30 minutes), so
//!   segments expire while the benchmark runs, as in a windowed aggregation; per put.
//! * `window_fetch_all_minute`: on a store of 120 one-minute windows of each key (retention
//!   2 hours, segments of 1 hour), `fetch_all` of one minute (10,000 windows, each read);
//!   per fetch.
//! * `window_fetch_key_hour`: `fetch(key, from, to)` of one hour (60 windows) on the store
//!   of `window_fetch_all_minute`.
//!
//! Run: `cargo bench --bench memory` (`KSTATE_BENCH_KEYS` shrinks the data set;
//! `cargo bench --bench memory -- segmented` runs the window and session rows alone).

// The workload is shared source, not library API: each user compiles its own copy.
#[allow(dead_code)]
#[path = "../tests/support/workload.rs"]
mod workload;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use kstate::{
    Isolation, KvStore, SessionOptions, SessionStore, StoreOptions, TopicPartition, WindowOptions,
    WindowStore,
};
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

const MINUTE: i64 = 60_000;

/// The window and session rows (see the module docs).
fn segmented(c: &mut Criterion) {
    let n = (keys() / 100).max(100);
    let all: Vec<Vec<u8>> = (0..n).map(key).collect();
    let values: Vec<Vec<u8>> = (0..1024).map(raw).collect();
    let mut rng = Rng::new(3);
    let mut g = c.benchmark_group("segmented");
    g.throughput(Throughput::Elements(1));

    // Puts whose stream time advances a minute per 1,000 puts: a segment of 30 minutes
    // expires every 30,000 puts. One hour of puts first, so the store is in its steady state.
    // Each store is built on its benchmark's first call (Criterion calls the closure once
    // per sample): a filtered-out row builds nothing.
    let window_put = |store: &WindowStore, rng: &mut Rng, offset: &mut i64| {
        let i = rng.below(n) as usize;
        store
            .put_raw(&all[i], Some(&values[i & 1023]), *offset / 1000 * MINUTE)
            .unwrap();
        *offset += 1;
        if *offset % 1000 == 0 {
            store.commit(&[(tp(), Some(*offset))], None).unwrap();
        }
    };
    let mut window: Option<(WindowStore, i64)> = None;
    g.bench_function("window_put_commit_expiring", |b| {
        let (store, offset) = window.get_or_insert_with(|| {
            let options = WindowOptions::new(60 * MINUTE, MINUTE, false);
            let store = WindowStore::open_in_memory(&options).unwrap();
            let mut offset = 0;
            for _ in 0..60_000 {
                window_put(&store, &mut rng, &mut offset);
            }
            (store, offset)
        });
        b.iter(|| window_put(store, &mut rng, offset))
    });
    drop(window);
    let session_put = |store: &SessionStore, rng: &mut Rng, offset: &mut i64| {
        let i = rng.below(n) as usize;
        let start = *offset / 1000 * MINUTE;
        store
            .put(&all[i], start, start + MINUTE, Some(&values[i & 1023][8..]))
            .unwrap();
        *offset += 1;
        if *offset % 1000 == 0 {
            store.commit(&[(tp(), Some(*offset))], None).unwrap();
        }
    };
    let mut session: Option<(SessionStore, i64)> = None;
    g.bench_function("session_put_commit_expiring", |b| {
        let (store, offset) = session.get_or_insert_with(|| {
            let store = SessionStore::open_in_memory(&SessionOptions::new(60 * MINUTE)).unwrap();
            let mut offset = 0;
            for _ in 0..60_000 {
                session_put(&store, &mut rng, &mut offset);
            }
            (store, offset)
        });
        b.iter(|| session_put(store, &mut rng, offset))
    });
    drop(session);

    // fetchAll of one minute on 120 windows of every key (WindowBench's store).
    g.throughput(Throughput::Elements(n));
    let load_windows = || {
        let options = WindowOptions::new(120 * MINUTE, MINUTE, false);
        let store = WindowStore::open_in_memory(&options).unwrap();
        let mut offset = 0i64;
        for w in 0..120 {
            for (i, k) in all.iter().enumerate() {
                store
                    .put_raw(k, Some(&values[i & 1023]), w * MINUTE)
                    .unwrap();
                offset += 1;
                if offset % 1000 == 0 {
                    store.commit(&[(tp(), Some(offset))], None).unwrap();
                }
            }
        }
        store.commit(&[(tp(), Some(offset))], None).unwrap();
        store
    };
    let mut loaded: Option<WindowStore> = None;
    g.bench_function("window_fetch_all_minute", |b| {
        let store = loaded.get_or_insert_with(load_windows);
        b.iter(|| {
            let t = rng.below(120) as i64 * MINUTE;
            let mut count = 0u64;
            for e in store.fetch_all(t, t).unwrap() {
                black_box(e.unwrap());
                count += 1;
            }
            assert_eq!(count, n);
        })
    });
    // fetch(key, from, to) of one hour (60 windows) on the same store: the key's windows are
    // one per window start, among n keys per start.
    g.throughput(Throughput::Elements(60));
    g.bench_function("window_fetch_key_hour", |b| {
        let store = loaded.get_or_insert_with(load_windows);
        b.iter(|| {
            let i = rng.below(n) as usize;
            let t = rng.below(60) as i64 * MINUTE;
            let mut count = 0u64;
            for e in store.fetch_range(&all[i], t, t + 59 * MINUTE).unwrap() {
                black_box(e.unwrap());
                count += 1;
            }
            assert_eq!(count, 60);
        })
    });
    g.finish();
}

criterion_group! {
    name = memory;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5));
    targets = benches, segmented
}
criterion_main!(memory);
