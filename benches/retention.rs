//! Retention without scanning: the cost of dropping `k` expired segments of a window store
//! grows with `k`, not with the amount of live data.
//!
//! Two RocksDB window stores of 10,000 windows per segment: 60 segments (600,000 windows)
//! and 100 segments (1,000,000 windows). For each store and each `k` in 1, 10, 50, one
//! measured iteration is the commit that expires the oldest `k` segments: the store (a
//! hard-linked copy of the loaded one, made outside the measured time) is reopened with a
//! retention that leaves exactly `N - k` segments live, and the commit deletes the expired
//! range in its atomic batch. A commit that expires nothing is measured as the baseline.
//! After Criterion's report a table of the means is printed and written to
//! `target/kstate-retention.txt`.
//!
//! Run: `cargo bench --bench retention`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use kstate::store::{WindowOptions, WindowStore};
use kstate::{Isolation, TopicPartition};

const PER_SEGMENT: i64 = 10_000;
const INTERVAL: i64 = 60_000;

fn tp() -> TopicPartition {
    TopicPartition::new("retention-changelog", 0)
}

/// Window starts of segment `s`: `PER_SEGMENT` keys, one window each, spread over it.
fn load(path: &Path, segments: i64) {
    let options =
        WindowOptions::new(segments * INTERVAL * 2, 1, false).with_segment_interval(INTERVAL);
    let store = WindowStore::open(path, &options).expect("open");
    let mut offset = 0;
    for s in 0..segments {
        for i in 0..PER_SEGMENT {
            let start = s * INTERVAL + (i % INTERVAL);
            let key = format!("key-{i:08}");
            store
                .put(key.as_bytes(), Some(b"0123456789abcdef"), start, start)
                .expect("put");
        }
        offset += 1;
        store.commit(&[(tp(), Some(offset))], None).expect("commit");
    }
    store.compact().expect("compact");
    store.close().expect("close");
}

/// A copy of the store at `from` in `to`: SST files hard-linked (RocksDB never changes
/// them), everything else copied.
fn copy_store(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().extension().is_some_and(|e| e == "sst") {
            std::fs::hard_link(entry.path(), &target).expect("link");
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Reopens a copy with the retention that leaves `segments - k` segments live and times
/// the commit that drops the other `k`.
fn drop_k(master: &Path, scratch: &Path, segments: i64, k: i64) -> Duration {
    copy_store(master, scratch);
    // Stream time is the last window start written: segments * INTERVAL - 1 at most.
    let stream_time = (segments - 1) * INTERVAL + (PER_SEGMENT - 1) % INTERVAL;
    // min live segment = (stream_time - retention) / INTERVAL = k.
    let retention = stream_time - k * INTERVAL;
    let options = WindowOptions::new(retention, 1, false).with_segment_interval(INTERVAL);
    let store = WindowStore::open(scratch, &options).expect("reopen");
    assert_eq!(
        store.stream_time(Isolation::ReadCommitted).expect("time"),
        stream_time
    );
    let t = Instant::now();
    store
        .commit(&[(tp(), Some(1_000_000))], None)
        .expect("commit");
    let elapsed = t.elapsed();
    store.close().expect("close");
    elapsed
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rows: Vec<(i64, i64, f64)> = Vec::new();
    let mut group = c.benchmark_group("retention");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(2));
    for segments in [60i64, 100] {
        let master: PathBuf = dir.path().join(format!("master-{segments}"));
        let started = Instant::now();
        load(&master, segments);
        eprintln!(
            "loaded {} windows in {segments} segments in {:.1}s",
            segments * PER_SEGMENT,
            started.elapsed().as_secs_f64()
        );
        let scratch = dir.path().join("scratch");
        for k in [0i64, 1, 10, 50] {
            let mut total = Duration::ZERO;
            let mut runs = 0u32;
            group.bench_with_input(
                BenchmarkId::new(format!("{}k-windows", segments * PER_SEGMENT / 1000), k),
                &k,
                |b, &k| {
                    b.iter_custom(|iters| {
                        let mut sum = Duration::ZERO;
                        for _ in 0..iters {
                            let d = drop_k(&master, &scratch, segments, k);
                            sum += d;
                        }
                        total += sum;
                        runs += iters as u32;
                        sum
                    })
                },
            );
            rows.push((
                segments * PER_SEGMENT,
                k,
                total.as_secs_f64() * 1e6 / f64::from(runs.max(1)),
            ));
        }
    }
    group.finish();
    let mut table = String::from(
        "commit that drops k expired segments (10,000 windows each), RocksDB, mean us\n\
         store windows | k=0 (nothing expires) | k=1 | k=10 | k=50\n",
    );
    for size in [600_000i64, 1_000_000] {
        let cell = |k: i64| {
            rows.iter()
                .find(|(s, kk, _)| *s == size && *kk == k)
                .map_or("-".to_string(), |(_, _, us)| format!("{us:.0}"))
        };
        table.push_str(&format!(
            "{size:>13} | {:>21} | {:>3} | {:>4} | {:>4}\n",
            cell(0),
            cell(1),
            cell(10),
            cell(50)
        ));
    }
    eprintln!("{table}");
    let _ = std::fs::write("target/kstate-retention.txt", &table);
}

criterion_group!(benches, bench);
criterion_main!(benches);
