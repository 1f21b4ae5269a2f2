//! Bounded memory: one transaction of 1 GiB of writes commits correctly while the process's
//! peak anonymous RSS (its own allocations) stays below `max_uncommitted_bytes` + 256 MiB.
//! This file holds a single test so the measured peak belongs to it alone. The figures are
//! printed and written to `target/kstate-large-txn.txt`.
//!
//! The peak is sampled from `RssAnon` rather than read from `VmHWM`, which also counts the
//! pages of the store's table files that RocksDB's memory-mapped reads touched: page cache,
//! clean and reclaimable, that the final full scan maps in (about 1 GiB) with any store.
//!
//! `KSTATE_LARGE_TXN_MIB` changes the transaction size (default 1024).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kstate::{Isolation, KvStore, StoreOptions, TopicPartition};

const VALUE_BYTES: usize = 1024;
const MAX_UNCOMMITTED: u64 = 64 << 20;

/// A field of /proc/self/status (in KiB there), in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Samples the anonymous RSS every 2 ms until dropped, keeping the highest value seen.
struct AnonPeak {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    sampler: Option<std::thread::JoinHandle<()>>,
}

impl AnonPeak {
    fn start() -> AnonPeak {
        let peak = Arc::new(AtomicU64::new(status_bytes("RssAnon:")));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        let sampler = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(status_bytes("RssAnon:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        AnonPeak {
            peak,
            stop,
            sampler: Some(sampler),
        }
    }

    /// Stops sampling; the highest anonymous RSS seen, in bytes.
    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.sampler.take() {
            t.join().unwrap();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

fn value_for(i: u64, buf: &mut [u8]) {
    let tag = i.to_be_bytes();
    for (j, b) in buf.iter_mut().enumerate() {
        *b = tag[j % 8] ^ (j as u8);
    }
}

#[test]
fn one_gib_transaction_commits_within_the_memory_bound() {
    let mib: u64 = std::env::var("KSTATE_LARGE_TXN_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let entries = mib * 1024 * 1024 / VALUE_BYTES as u64;
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::default().with_max_uncommitted_bytes(MAX_UNCOMMITTED);
    let store = KvStore::open(dir.path(), &options).unwrap();
    let tp = TopicPartition::new("large-changelog", 0);
    store.put(b"before", b"committed", 1).unwrap();
    store.commit(&[(tp.clone(), Some(1))], None).unwrap();
    let rss_before = status_bytes("RssAnon:");
    let anon = AnonPeak::start();

    let started = Instant::now();
    let mut value = vec![0u8; VALUE_BYTES];
    for i in 0..entries {
        value_for(i, &mut value);
        store
            .put(format!("key-{i:012}").as_bytes(), &value, i as i64)
            .unwrap();
    }
    store.delete(b"before").unwrap();
    let write_secs = started.elapsed().as_secs_f64();
    // Mid-transaction: the writer sees its writes, committed readers see none of them.
    assert!(store.get(b"key-000000000007").unwrap().is_some());
    assert_eq!(
        store
            .get_raw_with(Isolation::ReadCommitted, b"key-000000000007")
            .unwrap(),
        None
    );
    assert!(store
        .get_raw_with(Isolation::ReadCommitted, b"before")
        .unwrap()
        .is_some());
    let uncommitted = store.approximate_num_uncommitted_bytes().unwrap();
    assert!(uncommitted >= mib << 20, "uncommitted bytes {uncommitted}");

    let commit_started = Instant::now();
    store.commit(&[(tp.clone(), Some(2))], None).unwrap();
    let commit_secs = commit_started.elapsed().as_secs_f64();
    assert_eq!(store.committed_offset(&tp).unwrap(), Some(2));
    assert_eq!(store.approximate_num_uncommitted_bytes().unwrap(), 0);

    // Every entry is there, in order, with its value and timestamp; the delete applied.
    let mut expected = vec![0u8; VALUE_BYTES];
    let mut n = 0u64;
    let mut it = store
        .scan(Isolation::ReadCommitted, &kstate::KeyRange::all(), false)
        .unwrap();
    let mut batch = Vec::new();
    while it.next_batch(4096, 8 << 20, &mut batch).unwrap() > 0 {
        for (k, raw) in batch.drain(..) {
            assert_eq!(k, format!("key-{n:012}").into_bytes());
            let v = kstate::ValueAndTimestamp::decode(&raw).unwrap();
            value_for(n, &mut expected);
            assert_eq!(v.value, expected, "value of entry {n}");
            assert_eq!(v.timestamp, n as i64);
            n += 1;
        }
    }
    assert_eq!(n, entries);
    store.close().unwrap();

    let peak = anon.finish();
    let bound = MAX_UNCOMMITTED + (256 << 20);
    let report = format!(
        "large transaction: {mib} MiB in {entries} puts of {VALUE_BYTES} B; writes {write_secs:.1}s, \
         commit {commit_secs:.1}s; peak anonymous RSS {} MiB (before the transaction {} MiB; \
         peak RSS with mapped table files {} MiB); bound {} MiB \
         (max_uncommitted_bytes {} MiB + 256 MiB)\n",
        peak >> 20,
        rss_before >> 20,
        status_bytes("VmHWM:") >> 20,
        bound >> 20,
        MAX_UNCOMMITTED >> 20
    );
    eprint!("{report}");
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/kstate-large-txn.txt");
    let _ = std::fs::write(out, &report);
    assert!(peak < bound, "{report}");
}
