//! A deterministic random workload for versioned key-value stores, shared (as source) by
//! the `kstate-test-worker crash-worker --kind versioned` process, the crash test that
//! checks what it left, and the model test. Stream time moves forward with out-of-order
//! jitter of up to 1.5 history retentions, so writes land inside the history (splitting
//! versions), some are too late and dropped, and commits drop expired history; tombstones
//! are puts of `None` and deletes; transactions are sometimes large enough to spill.

use kstate::store::{VersionOrder, VersionedRecord, VersionedStore};
use kstate::{Isolation, Result, TopicPartition};

// Each workload is path-included on its own by some test crates; a crate that includes
// both (the crash test, the worker) gets two copies of the pacer, one per workload.
#[allow(clippy::duplicate_mod)]
#[path = "pacing.rs"]
mod pacing;
use pacing::Pacer;

/// Topic name used for the workload's changelog offsets.
pub const VERSIONED_TOPIC: &str = "kstate-versioned-changelog";
/// History retention of the workload's stores (ms).
pub const RETENTION: i64 = 5_000;
/// Segment interval of the workload's stores (ms).
pub const INTERVAL: i64 = 1_000;
/// Keys the workload writes (`k000`..).
pub const KEYS: u64 = 60;

/// One step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VOp {
    /// `put(key, value or tombstone, timestamp)`.
    Put(Vec<u8>, Option<Vec<u8>>, i64),
    /// `delete(key, timestamp)`.
    Delete(Vec<u8>, i64),
    /// Commit with the next offset.
    Commit,
    /// Roll back.
    Rollback,
}

/// The generator.
pub struct VWorkload {
    pacer: Pacer,
    clock: i64,
}

impl VWorkload {
    /// The workload of `seed`.
    pub fn new(seed: u64) -> Self {
        VWorkload {
            pacer: Pacer::new(seed),
            clock: 0,
        }
    }

    fn below(&mut self, n: u64) -> u64 {
        self.pacer.below(n)
    }
}

impl Iterator for VWorkload {
    type Item = VOp;

    fn next(&mut self) -> Option<VOp> {
        if let Some(rollback) = self.pacer.end_of_transaction() {
            return Some(if rollback { VOp::Rollback } else { VOp::Commit });
        }
        self.clock += self.below(60) as i64;
        let jitter = if self.below(3) == 0 {
            self.below((RETENTION * 3 / 2) as u64) as i64
        } else {
            0
        };
        // Coarse times make writes at equal timestamps (replacements) common.
        let time = (self.clock - jitter).max(0) / 10 * 10;
        let key = format!("k{:03}", self.below(KEYS)).into_bytes();
        Some(match self.below(10) {
            0 => VOp::Delete(key, time),
            1 => VOp::Put(key, None, time),
            _ => {
                let n = 10 + self.below(120) as usize;
                let seed = self.pacer.state as u8;
                let value = (0..n).map(|i| (i as u8).wrapping_add(seed)).collect();
                VOp::Put(key, Some(value), time)
            }
        })
    }
}

/// The changelog partition of the workload.
pub fn versioned_partition() -> TopicPartition {
    TopicPartition::new(VERSIONED_TOPIC, 0)
}

/// Applies a step; a commit records `offset`.
pub fn apply(store: &VersionedStore, op: &VOp, offset: i64) -> Result<()> {
    match op {
        VOp::Put(k, v, t) => store.put(k, v.as_deref(), *t).map(drop),
        VOp::Delete(k, t) => store.delete(k, *t).map(drop),
        VOp::Commit => store.commit(&[(versioned_partition(), Some(offset))], None),
        VOp::Rollback => store.rollback(),
    }
}

fn render(r: &Option<VersionedRecord>) -> String {
    match r {
        None => "-".into(),
        Some(r) => format!("{:?}@{}..{:?}", r.value.len(), r.timestamp, r.valid_to),
    }
}

/// Everything `isolation` shows of the store: the stream time, and per key its latest
/// version, its version as of every 50 ms of the live history, and every version the
/// multi-version query returns, rendered.
pub fn dump(store: &VersionedStore, isolation: Isolation) -> Vec<String> {
    let stream_time = store.stream_time(isolation).unwrap();
    let mut out = vec![format!("stream time {stream_time}")];
    for i in 0..KEYS {
        let key = format!("k{i:03}").into_bytes();
        let mut line = render(&store.get_with(isolation, &key, None).unwrap());
        let mut t = (stream_time - RETENTION - 100).max(-1);
        while t <= stream_time + 10 {
            line.push(' ');
            line.push_str(&render(&store.get_with(isolation, &key, Some(t)).unwrap()));
            t += 50;
        }
        for r in store
            .versions(isolation, &key, None, None, VersionOrder::Ascending)
            .unwrap()
        {
            line.push_str(&format!(
                " | {:?}@{}..{:?}",
                r.value, r.timestamp, r.valid_to
            ));
        }
        out.push(line);
    }
    out
}
