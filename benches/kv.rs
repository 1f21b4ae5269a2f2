//! kstate vs raw rust-rocksdb, side by side in one run, on the same data: 1M keys with
//! 100-byte values (plus kstate's 8-byte timestamp, which the raw side also stores), the
//! same RocksDB options (Kafka Streams' defaults: no compression, bloom filter, 50 MiB
//! block cache, 16 MiB write buffers; and kstate's memory-mapped reads).
//!
//! * `put_commit_1000`: 1,000 puts then a commit (kstate) / one `WriteBatch` of 1,000 puts
//!   (raw), the unit a transactional buffer replaces; reported per put.
//! * `get_hit`, `get_miss`: point reads of present and absent keys.
//! * `range_100`: a range scan reading 100 entries from a random start key.
//!
//! Run: `cargo bench --bench kv` (`KSTATE_BENCH_KEYS` shrinks the data set).

// The workload is shared source, not library API: each user compiles its own copy.
#[allow(dead_code)]
#[path = "../tests/support/workload.rs"]
mod workload;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use kstate::{KvStore, StoreOptions, TopicPartition};
use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, WriteBatch, WriteOptions, DB};
use workload::Rng;

const VALUE_BYTES: usize = 100;
const TS: i64 = 1_700_000_000_000;

fn keys() -> u64 {
    std::env::var("KSTATE_BENCH_KEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000)
}

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key-000000000000";
    let digits = format!("{i:012}");
    k[4..].copy_from_slice(digits.as_bytes());
    k
}

fn value(i: u64) -> [u8; VALUE_BYTES] {
    let mut v = [0u8; VALUE_BYTES];
    for (j, b) in v.iter_mut().enumerate() {
        *b = (i as u8).wrapping_add(j as u8);
    }
    v
}

/// Raw RocksDB configured like kstate's engine.
fn raw_db(path: &std::path::Path) -> DB {
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(&Cache::new_lru_cache(50 << 20));
    table.set_block_size(4096);
    table.set_bloom_filter(10.0, false);
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_block_based_table_factory(&table);
    o.set_compression_type(DBCompressionType::None);
    o.set_write_buffer_size(16 << 20);
    o.set_max_write_buffer_number(3);
    o.increase_parallelism(2);
    // kstate reads its table files through memory maps (see `engine::rocksdb::mmap_reads`).
    o.set_allow_mmap_reads(true);
    DB::open(&o, path).unwrap()
}

fn raw_value(i: u64) -> Vec<u8> {
    kstate::format::value::encode(&value(i), TS)
}

fn load(n: u64, store: &KvStore, db: &DB) {
    let tp = TopicPartition::new("bench-changelog", 0);
    for chunk in 0..n.div_ceil(10_000) {
        let mut batch = WriteBatch::default();
        for i in chunk * 10_000..((chunk + 1) * 10_000).min(n) {
            // Even keys only, so odd keys are guaranteed misses.
            store.put(&key(2 * i), &value(i), TS).unwrap();
            batch.put(key(2 * i), raw_value(i));
        }
        store
            .commit(&[(tp.clone(), Some(chunk as i64))], None)
            .unwrap();
        db.write(batch).unwrap();
    }
    settle(store, db);
}

/// Brings both databases to the same settled shape (flushed, fully compacted), so that
/// neither side is measured while the other's background compactions compete for the CPU.
fn settle(store: &KvStore, db: &DB) {
    store.compact().unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>);
}

fn benches(c: &mut Criterion) {
    let n = keys();
    let dir = tempfile::tempdir().unwrap();
    let store = KvStore::open(dir.path().join("kstate"), &StoreOptions::default()).unwrap();
    let db = raw_db(&dir.path().join("raw"));
    load(n, &store, &db);
    let tp = TopicPartition::new("bench-changelog", 0);

    let mut g = c.benchmark_group("put_commit_1000");
    g.throughput(Throughput::Elements(1000));
    let mut rng = Rng::new(1);
    let mut offset = 1_000_000i64;
    g.bench_function("kstate", |b| {
        b.iter(|| {
            for _ in 0..1000 {
                let i = rng.below(n);
                store.put(&key(2 * i), &value(i), TS).unwrap();
            }
            offset += 1;
            store.commit(&[(tp.clone(), Some(offset))], None).unwrap();
        })
    });
    // The raw side is measured on a settled machine too, not while kstate's flushes and
    // compactions of the writes just measured still run on the same cores.
    settle(&store, &db);
    let wo = WriteOptions::default();
    g.bench_function("rocksdb", |b| {
        b.iter(|| {
            let mut batch = WriteBatch::default();
            for _ in 0..1000 {
                let i = rng.below(n);
                batch.put(key(2 * i), raw_value(i));
            }
            db.write_opt(batch, &wo).unwrap();
        })
    });
    g.finish();
    settle(&store, &db);

    for (name, parity) in [("get_hit", 0u64), ("get_miss", 1u64)] {
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Elements(1));
        let mut rng = Rng::new(2);
        g.bench_function("kstate", |b| {
            b.iter(|| black_box(store.get_raw(&key(2 * rng.below(n) + parity)).unwrap()))
        });
        g.bench_function("rocksdb", |b| {
            b.iter(|| black_box(db.get(key(2 * rng.below(n) + parity)).unwrap()))
        });
        g.finish();
    }

    let mut g = c.benchmark_group("range_100");
    g.throughput(Throughput::Elements(100));
    let mut rng = Rng::new(3);
    g.bench_function("kstate", |b| {
        b.iter_batched(
            || key(2 * rng.below(n.saturating_sub(200).max(1))),
            |from| {
                let it = store.range(Some(&from), None).unwrap();
                for e in it.take(100) {
                    black_box(e.unwrap());
                }
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("rocksdb", |b| {
        b.iter_batched(
            || key(2 * rng.below(n.saturating_sub(200).max(1))),
            |from| {
                let it = db.iterator(rocksdb::IteratorMode::From(
                    &from,
                    rocksdb::Direction::Forward,
                ));
                for e in it.take(100) {
                    black_box(e.unwrap());
                }
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group! {
    name = kv;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6));
    targets = benches
}
criterion_main!(kv);
