//! A deterministic random workload and its reference model.
//!
//! The same seed yields the same sequence of transactions everywhere, so a process that
//! runs the workload against a store (and may be killed at any instant) and another that
//! replays it against a `BTreeMap` model agree on what every commit contains. The crash
//! tests (through `kstate-test-worker`, tests/support/worker.rs) and the benchmarks share
//! it.

use std::collections::BTreeMap;

use kstate::format::value;
use kstate::{KvStore, Result, TopicPartition};

/// Topic name used for the workload's changelog offsets.
pub const CHANGELOG_TOPIC: &str = "kstate-workload-changelog";

/// A small, fast, deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// One step of the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `put(key, value, ts)`.
    Put(Vec<u8>, Vec<u8>, i64),
    /// `delete(key)`.
    Delete(Vec<u8>),
    /// `put_if_absent(key, value, ts)`.
    PutIfAbsent(Vec<u8>, Vec<u8>, i64),
    /// `put_all` of puts (`Some`) and deletes (`None`) with one timestamp.
    PutAll(Vec<(Vec<u8>, Option<Vec<u8>>)>, i64),
    /// Commit, with the workload's next changelog offset.
    Commit,
    /// Roll the transaction back.
    Rollback,
}

/// Shape of the workload.
#[derive(Debug, Clone, Copy)]
pub struct WorkloadConfig {
    /// Size of the key space.
    pub keys: u64,
    /// Largest value, in bytes (values are 0..=this long).
    pub max_value: usize,
    /// Writes per ordinary transaction (1..=this).
    pub max_txn_ops: u64,
    /// Percentage of transactions that are large (many big values, enough to spill a
    /// small `max_uncommitted_bytes`).
    pub large_txn_percent: u64,
    /// Writes in a large transaction.
    pub large_txn_ops: u64,
    /// Percentage of transactions that end in a rollback instead of a commit.
    pub rollback_percent: u64,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            keys: 500,
            max_value: 64,
            max_txn_ops: 20,
            large_txn_percent: 10,
            large_txn_ops: 400,
            rollback_percent: 10,
        }
    }
}

/// An endless, deterministic sequence of operations grouped into transactions.
pub struct Workload {
    rng: Rng,
    config: WorkloadConfig,
    queue: std::collections::VecDeque<Op>,
    clock: i64,
}

impl Workload {
    /// The workload of `seed`.
    pub fn new(seed: u64, config: WorkloadConfig) -> Self {
        Workload {
            rng: Rng::new(seed),
            config,
            queue: Default::default(),
            clock: 1_700_000_000_000,
        }
    }

    fn key(&mut self) -> Vec<u8> {
        // Fixed-width keys keep numeric and bytewise order equal; key 0 is the empty key,
        // which Kafka Streams treats as a real key.
        match self.rng.below(self.config.keys) {
            0 => Vec::new(),
            k => format!("key-{k:06}").into_bytes(),
        }
    }

    fn value(&mut self, max: usize) -> Vec<u8> {
        let len = self.rng.below(max as u64 + 1) as usize;
        (0..len).map(|_| b'a' + self.rng.below(26) as u8).collect()
    }

    fn write(&mut self, max_value: usize) -> Op {
        self.clock += self.rng.below(1000) as i64;
        let ts = self.clock;
        match self.rng.below(10) {
            0..=4 => {
                let (k, v) = (self.key(), self.value(max_value));
                Op::Put(k, v, ts)
            }
            5 | 6 => Op::Delete(self.key()),
            7 => {
                let (k, v) = (self.key(), self.value(max_value));
                Op::PutIfAbsent(k, v, ts)
            }
            _ => {
                let n = 1 + self.rng.below(8);
                let entries = (0..n)
                    .map(|_| {
                        let k = self.key();
                        let v = if self.rng.chance(80) {
                            Some(self.value(max_value))
                        } else {
                            None
                        };
                        (k, v)
                    })
                    .collect();
                Op::PutAll(entries, ts)
            }
        }
    }

    fn plan_transaction(&mut self) {
        let large = self.rng.chance(self.config.large_txn_percent);
        let (n, max_value) = if large {
            (self.config.large_txn_ops, self.config.max_value * 8)
        } else {
            (
                1 + self.rng.below(self.config.max_txn_ops),
                self.config.max_value,
            )
        };
        for _ in 0..n {
            let op = self.write(max_value);
            self.queue.push_back(op);
        }
        let end = if self.rng.chance(self.config.rollback_percent) {
            Op::Rollback
        } else {
            Op::Commit
        };
        self.queue.push_back(end);
    }
}

impl Iterator for Workload {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        if self.queue.is_empty() {
            self.plan_transaction();
        }
        self.queue.pop_front()
    }
}

/// The reference model: committed contents plus the open transaction, with the values in
/// the timestamped layout, exactly as the store holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Model {
    /// Committed contents.
    pub committed: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Uncommitted writes (`None`: delete).
    pub pending: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Commits applied.
    pub commits: u64,
}

impl Model {
    /// The writer's view of `key`.
    pub fn get(&self, key: &[u8]) -> Option<&Vec<u8>> {
        match self.pending.get(key) {
            Some(w) => w.as_ref(),
            None => self.committed.get(key),
        }
    }

    /// Applies one operation.
    pub fn apply(&mut self, op: &Op) {
        match op {
            Op::Put(k, v, ts) => {
                self.pending.insert(k.clone(), Some(value::encode(v, *ts)));
            }
            Op::Delete(k) => {
                self.pending.insert(k.clone(), None);
            }
            Op::PutIfAbsent(k, v, ts) => {
                if self.get(k).is_none() {
                    self.pending.insert(k.clone(), Some(value::encode(v, *ts)));
                }
            }
            Op::PutAll(entries, ts) => {
                for (k, v) in entries {
                    self.pending
                        .insert(k.clone(), v.as_ref().map(|v| value::encode(v, *ts)));
                }
            }
            Op::Commit => {
                for (k, w) in std::mem::take(&mut self.pending) {
                    match w {
                        Some(v) => self.committed.insert(k, v),
                        None => self.committed.remove(&k),
                    };
                }
                self.commits += 1;
            }
            Op::Rollback => self.pending.clear(),
        }
    }

    /// The writer's view of every entry, in key order.
    pub fn view(&self) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut view = self.committed.clone();
        for (k, w) in &self.pending {
            match w {
                Some(v) => view.insert(k.clone(), v.clone()),
                None => view.remove(k),
            };
        }
        view
    }
}

/// Applies `op` to a timestamped `store`; a commit records `offset` for the workload's
/// changelog partition 0.
pub fn apply_to_store(store: &KvStore, op: &Op, offset: i64) -> Result<()> {
    match op {
        Op::Put(k, v, ts) => store.put(k, v, *ts),
        Op::Delete(k) => store.delete(k).map(drop),
        Op::PutIfAbsent(k, v, ts) => store.put_if_absent(k, v, *ts).map(drop),
        Op::PutAll(entries, ts) => {
            let encoded: Vec<(Vec<u8>, Option<Vec<u8>>)> = entries
                .iter()
                .map(|(k, v)| (k.clone(), v.as_ref().map(|v| value::encode(v, *ts))))
                .collect();
            store.put_all_raw(encoded.iter().map(|(k, v)| (k.as_slice(), v.as_deref())))
        }
        Op::Commit => store.commit(&[(changelog_partition(), Some(offset))], None),
        Op::Rollback => store.rollback(),
    }
}

/// The changelog partition the workload commits offsets for.
pub fn changelog_partition() -> TopicPartition {
    TopicPartition::new(CHANGELOG_TOPIC, 0)
}

/// Replays `seed`'s workload on `model` until `commits` more commits were applied, leaving
/// the model exactly at that commit (the open transaction after it is discarded).
pub fn replay_commits(model: &mut Model, seed: u64, config: WorkloadConfig, commits: u64) {
    let target = model.commits + commits;
    model.pending.clear();
    let mut ops = Workload::new(seed, config);
    while model.commits < target {
        let op = ops.next().unwrap_or(Op::Commit);
        model.apply(&op);
    }
    model.pending.clear();
}

/// Every entry of the store in the writer's view, raw.
pub fn dump(store: &KvStore) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    store.all()?.collect()
}

#[cfg(test)]
mod tests {
    #[allow(unused_imports)] // the benches compile this file without its tests
    use super::*;

    #[test]
    fn same_seed_same_ops() {
        let a: Vec<Op> = Workload::new(7, WorkloadConfig::default())
            .take(500)
            .collect();
        let b: Vec<Op> = Workload::new(7, WorkloadConfig::default())
            .take(500)
            .collect();
        assert_eq!(a, b);
        assert!(a.contains(&Op::Commit));
    }

    #[test]
    fn replay_stops_at_the_commit() {
        let cfg = WorkloadConfig::default();
        let mut m = Model::default();
        replay_commits(&mut m, 3, cfg, 5);
        assert_eq!(m.commits, 5);
        assert!(m.pending.is_empty());
        let mut step = Model::default();
        for op in Workload::new(3, cfg) {
            step.apply(&op);
            if step.commits == 5 {
                break;
            }
        }
        assert_eq!(step.committed, m.committed);
    }
}
