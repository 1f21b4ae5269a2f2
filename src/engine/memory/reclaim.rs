//! Epochs, pins and retired nodes: when a node the writer replaced may be freed.
//!
//! Taking a snapshot pins the current epoch and starts a new one, so every node created
//! afterwards has a version above the pin. A node that leaves the live tree during epoch
//! `e` is reachable only from snapshots pinned before `e` (a snapshot pinned later was
//! taken after it left); it becomes unreachable as soon as no such snapshot remains.
//!
//! Unreachable nodes are kept, up to [`SPARE_MAX`], for the writer to reuse: a commit's
//! copy-on-write then overwrites the nodes the previous commit's copies replaced instead
//! of asking the allocator for thousands of node-sized blocks per commit.

use std::collections::{BTreeMap, VecDeque};

use super::tree::NodePtr;

/// Most unreachable nodes kept for reuse (a few times what a commit of a thousand
/// scattered writes copies); the rest are freed.
const SPARE_MAX: usize = 4096;

/// Epoch bookkeeping of one engine, under its mutex.
#[derive(Default)]
pub(super) struct Reclaim {
    /// The epoch of nodes created now; above every pin.
    epoch: u64,
    /// Live snapshots per pinned epoch.
    pins: BTreeMap<u64, usize>,
    /// Nodes retired in an epoch, oldest first (epochs never decrease along the queue).
    retired: VecDeque<(u64, NodePtr)>,
    /// Unreachable nodes kept for the writer to reuse.
    spare: Vec<NodePtr>,
}

impl Reclaim {
    /// The epoch new nodes belong to and the newest pinned epoch, for a writer.
    pub(super) fn writer_epochs(&self) -> (u64, Option<u64>) {
        (self.epoch, self.pins.keys().next_back().copied())
    }

    /// Pins the current epoch for a new snapshot and starts the next one.
    pub(super) fn pin(&mut self) -> u64 {
        let pinned = self.epoch;
        self.epoch += 1;
        *self.pins.entry(pinned).or_insert(0) += 1;
        pinned
    }

    /// Releases a pin; returns the nodes to free (unreachable, beyond the spares kept).
    pub(super) fn unpin(&mut self, epoch: u64) -> Vec<NodePtr> {
        if let Some(count) = self.pins.get_mut(&epoch) {
            *count -= 1;
            if *count == 0 {
                self.pins.remove(&epoch);
            }
        }
        self.reclaim(Vec::new())
    }

    /// The spare nodes, handed to a writer (who gives back what it does not use).
    pub(super) fn take_spare(&mut self) -> Vec<NodePtr> {
        std::mem::take(&mut self.spare)
    }

    /// Ends a write: records the nodes it retired (in the current epoch, the writer's) and
    /// takes back its spares; returns the nodes to free.
    pub(super) fn finish_write(
        &mut self,
        retired: Vec<NodePtr>,
        spare: Vec<NodePtr>,
    ) -> Vec<NodePtr> {
        let epoch = self.epoch;
        self.retired.extend(retired.into_iter().map(|n| (epoch, n)));
        self.reclaim(spare)
    }

    /// Moves the retired nodes no pin can reach (those retired in an epoch no live pin
    /// precedes) and `extra` unreachable nodes to the spares; returns the overflow.
    fn reclaim(&mut self, extra: Vec<NodePtr>) -> Vec<NodePtr> {
        let oldest = self.pins.keys().next().copied();
        self.spare.extend(extra);
        while let Some(&(retired_in, node)) = self.retired.front() {
            if oldest.is_some_and(|p| p < retired_in) {
                break;
            }
            self.retired.pop_front();
            self.spare.push(node);
        }
        if self.spare.len() > SPARE_MAX {
            self.spare.split_off(SPARE_MAX)
        } else {
            Vec::new()
        }
    }

    /// Every retired and spare node, for the engine's final release.
    pub(super) fn drain(&mut self) -> Vec<NodePtr> {
        let mut all: Vec<NodePtr> = self.retired.drain(..).map(|(_, n)| n).collect();
        all.append(&mut self.spare);
        all
    }

    /// Number of live pins, retired nodes and spare nodes, for tests.
    #[cfg(test)]
    pub(super) fn counts(&self) -> (usize, usize, usize) {
        (
            self.pins.values().sum(),
            self.retired.len(),
            self.spare.len(),
        )
    }
}
