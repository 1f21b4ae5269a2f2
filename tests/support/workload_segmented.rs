//! A deterministic random workload for window and session stores, shared (as source) by
//! the `kstate-test-worker crash-worker --kind window|session` process and the crash test that checks
//! what it left. Stream time moves forward with out-of-order jitter, so segments expire
//! and are dropped by commits; transactions are sometimes large enough to spill.

use kstate::store::{SessionStore, WindowStore};
use kstate::{Result, TopicPartition};

// Each workload is path-included on its own by some test crates; a crate that includes
// both (the crash test, the worker) gets two copies of the pacer, one per workload.
#[allow(clippy::duplicate_mod)]
#[path = "pacing.rs"]
mod pacing;
use pacing::Pacer;

/// Topic name used for the workload's changelog offsets.
pub const SEGMENTED_TOPIC: &str = "kstate-segmented-changelog";

/// Retention of the crash stores (ms).
pub const RETENTION: i64 = 20_000;
/// Segment interval of the crash stores (ms).
pub const INTERVAL: i64 = 2_000;
/// Window size of the crash window store (ms).
pub const WINDOW: i64 = 1_000;

/// One step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegOp {
    /// Window `put(key, value or delete, timestamp, window_start)`.
    Window(Vec<u8>, Option<Vec<u8>>, i64),
    /// Session `put(key, start, end, aggregate or remove)`.
    Session(Vec<u8>, i64, i64, Option<Vec<u8>>),
    /// Commit with the next offset.
    Commit,
    /// Roll back.
    Rollback,
}

/// The generator.
pub struct SegWorkload {
    pacer: Pacer,
    clock: i64,
    window: bool,
}

impl SegWorkload {
    /// The workload of `seed` for a window (`window`) or session store.
    pub fn new(seed: u64, window: bool) -> Self {
        SegWorkload {
            pacer: Pacer::new(seed),
            clock: 0,
            window,
        }
    }

    fn below(&mut self, n: u64) -> u64 {
        self.pacer.below(n)
    }
}

impl Iterator for SegWorkload {
    type Item = SegOp;

    fn next(&mut self) -> Option<SegOp> {
        if let Some(rollback) = self.pacer.end_of_transaction() {
            return Some(if rollback {
                SegOp::Rollback
            } else {
                SegOp::Commit
            });
        }
        self.clock += self.below(40) as i64;
        // Out of order by up to 1.5 retention periods: some writes are late and dropped.
        let jitter = self.below((RETENTION * 3 / 2) as u64) as i64;
        let time = (self.clock - jitter).max(0);
        let key = format!("k{:03}", self.below(200)).into_bytes();
        let value = (self.below(10) != 0).then(|| {
            let n = 20 + self.below(200) as usize;
            (0..n)
                .map(|i| (i as u8).wrapping_add(self.pacer.state as u8))
                .collect()
        });
        Some(if self.window {
            SegOp::Window(key, value, time / 100 * 100)
        } else {
            let len = self.below(3_000) as i64;
            SegOp::Session(key, time, time + len, value)
        })
    }
}

/// The changelog partition of the workload.
pub fn segmented_partition() -> TopicPartition {
    TopicPartition::new(SEGMENTED_TOPIC, 0)
}

/// Applies a step to a window store; a commit records `offset`.
pub fn apply_window(store: &WindowStore, op: &SegOp, offset: i64) -> Result<()> {
    match op {
        SegOp::Window(k, v, start) => store.put(k, v.as_deref(), *start + 7, *start),
        SegOp::Session(..) => Ok(()),
        SegOp::Commit => store.commit(&[(segmented_partition(), Some(offset))], None),
        SegOp::Rollback => store.rollback(),
    }
}

/// Applies a step to a session store; a commit records `offset`.
pub fn apply_session(store: &SessionStore, op: &SegOp, offset: i64) -> Result<()> {
    match op {
        SegOp::Session(k, s, e, v) => store.put(k, *s, *e, v.as_deref()).map(drop),
        SegOp::Window(..) => Ok(()),
        SegOp::Commit => store.commit(&[(segmented_partition(), Some(offset))], None),
        SegOp::Rollback => store.rollback(),
    }
}
