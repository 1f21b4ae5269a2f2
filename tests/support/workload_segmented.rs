//! A deterministic random workload for window and session stores, shared (as source) by
//! the `kstate-test-worker crash-worker --kind window|session` process and the crash test that checks
//! what it left. Stream time moves forward with out-of-order jitter, so segments expire
//! and are dropped by commits; transactions are sometimes large enough to spill.

use kstate::store::{SessionStore, WindowStore};
use kstate::{Result, TopicPartition};

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

/// The generator (SplitMix64 as in `workload.rs`).
pub struct SegWorkload {
    state: u64,
    clock: i64,
    window: bool,
    left_in_txn: u64,
}

impl SegWorkload {
    /// The workload of `seed` for a window (`window`) or session store.
    pub fn new(seed: u64, window: bool) -> Self {
        SegWorkload {
            state: seed,
            clock: 0,
            window,
            left_in_txn: 0,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

impl Iterator for SegWorkload {
    type Item = SegOp;

    fn next(&mut self) -> Option<SegOp> {
        if self.left_in_txn == 0 {
            // Mostly small transactions, one in 12 large enough to spill (32 KiB bound).
            self.left_in_txn = if self.below(12) == 0 {
                300 + self.below(300)
            } else {
                1 + self.below(40)
            };
            return Some(if self.below(8) == 0 {
                SegOp::Rollback
            } else {
                SegOp::Commit
            });
        }
        self.left_in_txn -= 1;
        self.clock += self.below(40) as i64;
        // Out of order by up to 1.5 retention periods: some writes are late and dropped.
        let jitter = self.below((RETENTION * 3 / 2) as u64) as i64;
        let time = (self.clock - jitter).max(0);
        let key = format!("k{:03}", self.below(200)).into_bytes();
        let value = (self.below(10) != 0).then(|| {
            let n = 20 + self.below(200) as usize;
            (0..n)
                .map(|i| (i as u8).wrapping_add(self.state as u8))
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
