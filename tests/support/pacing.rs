//! What the segmented and versioned workloads share: SplitMix64 (as in `workload.rs`) and
//! the pacing of their transactions (mostly small ones, one in 12 large enough to spill a
//! 32 KiB bound, one in 8 rolled back instead of committed).

/// A seeded random source that also paces transactions.
pub struct Pacer {
    /// The generator's state (its low bits also vary values).
    pub state: u64,
    left_in_txn: u64,
}

impl Pacer {
    /// The source of `seed`.
    pub fn new(seed: u64) -> Self {
        Pacer {
            state: seed,
            left_in_txn: 0,
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `[0, n)`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// At a transaction's end, whether it is rolled back (the next one's size is drawn);
    /// otherwise `None`, and one write of the current transaction is counted.
    pub fn end_of_transaction(&mut self) -> Option<bool> {
        if self.left_in_txn == 0 {
            self.left_in_txn = if self.below(12) == 0 {
                300 + self.below(300)
            } else {
                1 + self.below(40)
            };
            return Some(self.below(8) == 0);
        }
        self.left_in_txn -= 1;
        None
    }
}
