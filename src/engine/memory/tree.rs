//! A B+tree of byte keys and values with O(1) snapshots, for the memory engine.
//!
//! Nodes store their entries inline ([`Packed`]): a lookup reads a few contiguous buffers
//! per level instead of one heap object per key comparison.
//!
//! # Versions instead of reference counts
//! Every node carries the epoch it was created in. A snapshot pins an epoch (see
//! [`super::reclaim`]) and then reaches only nodes created in or before it. The writer (one
//! at a time, under the engine's write lock) changes a node in place when its version is
//! above every pinned epoch, since no snapshot can reach it; otherwise it copies the node
//! first (copy-on-write along the path from the root) and retires the original, which is
//! freed once no snapshot pinned before the retirement remains. With no snapshot alive the
//! tree is updated in place; with one, a commit copies each node it changes once. Copying a
//! node copies its bytes and its children's addresses: unlike a tree of reference-counted
//! nodes, it touches no child, so a copy costs what the node's size costs.
//!
//! What makes this sound:
//! * A snapshot pinned at epoch `p` reaches only nodes that were live when it was taken,
//!   all of version `<= p`; the writer changes in place only nodes of a version above the
//!   newest pin, which no snapshot can reach (created after every pin). A node changed in
//!   place keeps its version, so a later pin covers it and the next change copies it.
//! * A node in the live tree has exactly one parent there; it leaves the live tree once
//!   (copied, emptied, merged or collapsed) and is then retired or freed exactly once, by
//!   [`Writer::discard`]. Freeing a node frees only that node, never its children.
//!
//! All leaves are at the same depth: splits grow the tree at the root, emptied nodes are
//! removed from their parent, and a root left with one child is replaced by it.

use std::ops::Bound;
use std::ptr::NonNull;

use super::packed::Packed;

/// Most entries in a leaf.
const LEAF_MAX_ENTRIES: usize = 32;
/// A leaf with more entries than one splits past this many key and value bytes.
const LEAF_MAX_BYTES: usize = 4096;
/// Most children of an inner node.
const INNER_MAX_CHILDREN: usize = 64;
/// An inner node with more than two children splits past this many separator bytes.
const INNER_MAX_BYTES: usize = 4096;
/// A node with fewer entries (leaf) or children (inner) than its maximum over this is
/// merged with a sibling when they fit in one node.
const MERGE_BELOW_FRACTION: usize = 4;

#[cfg(test)]
thread_local! {
    /// Nodes allocated minus nodes freed by this thread: a single-threaded test that drops
    /// its engine and snapshots must see it return to where it started.
    pub(super) static LIVE_NODES: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

/// The address of a node. Only the tree's owner (the engine) dereferences it, under the
/// rules in the module documentation.
pub(super) type NodePtr = NonNull<Node>;

/// A node of the tree.
pub(super) struct Node {
    /// The epoch the node was created in.
    version: u64,
    body: Body,
}

enum Body {
    Leaf(Packed),
    Inner(Inner),
}

/// Separator `i` is the smallest key of child `i + 1`: every key of child `i` is below it
/// and every key of child `i + 1` at or above it. `children.len() == keys.len() + 1`.
struct Inner {
    keys: Packed,
    children: Vec<NodePtr>,
}

impl Node {
    fn size(&self) -> usize {
        match &self.body {
            Body::Leaf(p) => p.len(),
            Body::Inner(i) => i.children.len(),
        }
    }
}

/// The node at `p`.
///
/// # Safety
/// `p` must point to a node that stays allocated and unmodified for `'a`: a node reachable
/// from a root the caller reads under the engine's lock or under a snapshot's pin.
unsafe fn node<'a>(p: NodePtr) -> &'a Node {
    // SAFETY: guaranteed by the caller.
    unsafe { &*p.as_ptr() }
}

/// Frees one node (not its children).
///
/// # Safety
/// `p` must be a node that nothing can reach any more and that is freed only here.
pub(super) unsafe fn free(p: NodePtr) {
    #[cfg(test)]
    LIVE_NODES.with(|n| n.set(n.get() - 1));
    // SAFETY: every node is allocated by `Box` in `Writer::alloc`; the caller guarantees
    // this is its one release and that no reference to it remains.
    drop(unsafe { Box::from_raw(p.as_ptr()) });
}

/// The root of one family's tree and its entry count. Plain addresses: the engine owns the
/// nodes and decides when they are freed.
#[derive(Clone, Copy, Default)]
pub(super) struct Tree {
    root: Option<NodePtr>,
    len: u64,
}

/// A read-only view of a tree whose nodes stay valid and unchanged for `'a`.
#[derive(Clone, Copy)]
pub(super) struct View<'a> {
    root: Option<&'a Node>,
}

/// Whether a range walk ended (past the range or at the end) or stopped at its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Walk {
    /// Every entry of the range was visited.
    Done,
    /// The limit was reached; more entries may follow.
    Limited,
}

fn below_lower(key: &[u8], lower: Bound<&[u8]>) -> bool {
    match lower {
        Bound::Unbounded => false,
        Bound::Included(l) => key < l,
        Bound::Excluded(l) => key <= l,
    }
}

fn above_upper(key: &[u8], upper: Bound<&[u8]>) -> bool {
    match upper {
        Bound::Unbounded => false,
        Bound::Included(u) => key > u,
        Bound::Excluded(u) => key >= u,
    }
}

impl<'a> View<'a> {
    /// The value of `key`.
    pub(super) fn get(&self, key: &[u8]) -> Option<&'a [u8]> {
        let mut n = self.root?;
        loop {
            match &n.body {
                Body::Leaf(p) => return p.search(key).ok().map(|i| p.value(i)),
                Body::Inner(inner) => {
                    let child = inner.children[inner.keys.count_le(key)];
                    // SAFETY: a child of a node valid for 'a is valid for 'a (the module's
                    // invariants: nodes reachable from a pinned or locked root live on).
                    n = unsafe { node(child) };
                }
            }
        }
    }

    /// Calls `visit` on the entries between `lower` and `upper`, ascending or (with
    /// `reverse`) descending, until `limit` entries were visited.
    pub(super) fn walk(
        &self,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        reverse: bool,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Walk {
        let Some(root) = self.root else {
            return Walk::Done;
        };
        let mut left = limit;
        if limit == 0 {
            return Walk::Limited;
        }
        let mut w = Walker {
            lower,
            upper,
            left: &mut left,
            visit,
        };
        if reverse {
            w.backward(root)
        } else {
            w.forward(root)
        }
    }
}

struct Walker<'b, 'k> {
    lower: Bound<&'k [u8]>,
    upper: Bound<&'k [u8]>,
    left: &'b mut usize,
    visit: &'b mut dyn FnMut(&[u8], &[u8]),
}

impl Walker<'_, '_> {
    fn forward(&mut self, n: &Node) -> Walk {
        match &n.body {
            Body::Leaf(p) => {
                let start = match self.lower {
                    Bound::Unbounded => 0,
                    Bound::Included(k) => p.count_lt(k),
                    Bound::Excluded(k) => p.count_le(k),
                };
                for i in start..p.len() {
                    let key = p.key(i);
                    if above_upper(key, self.upper) {
                        return Walk::Done;
                    }
                    (self.visit)(key, p.value(i));
                    *self.left -= 1;
                    if *self.left == 0 {
                        return Walk::Limited;
                    }
                }
                Walk::Done
            }
            Body::Inner(inner) => {
                let start = match self.lower {
                    Bound::Unbounded => 0,
                    Bound::Included(k) | Bound::Excluded(k) => inner.keys.count_le(k),
                };
                for c in start..inner.children.len() {
                    if c > 0 && above_upper(inner.keys.key(c - 1), self.upper) {
                        return Walk::Done;
                    }
                    // SAFETY: children of a valid node are valid (module invariants).
                    let child = unsafe { node(inner.children[c]) };
                    if self.forward(child) == Walk::Limited {
                        return Walk::Limited;
                    }
                }
                Walk::Done
            }
        }
    }

    fn backward(&mut self, n: &Node) -> Walk {
        match &n.body {
            Body::Leaf(p) => {
                let end = match self.upper {
                    Bound::Unbounded => p.len(),
                    Bound::Included(k) => p.count_le(k),
                    Bound::Excluded(k) => p.count_lt(k),
                };
                for i in (0..end).rev() {
                    let key = p.key(i);
                    if below_lower(key, self.lower) {
                        return Walk::Done;
                    }
                    (self.visit)(key, p.value(i));
                    *self.left -= 1;
                    if *self.left == 0 {
                        return Walk::Limited;
                    }
                }
                Walk::Done
            }
            Body::Inner(inner) => {
                let end = match self.upper {
                    Bound::Unbounded => inner.children.len(),
                    Bound::Included(k) | Bound::Excluded(k) => inner.keys.count_le(k) + 1,
                };
                for c in (0..end).rev() {
                    // SAFETY: children of a valid node are valid (module invariants).
                    let child = unsafe { node(inner.children[c]) };
                    if self.backward(child) == Walk::Limited {
                        return Walk::Limited;
                    }
                    // Every key of the children left of `c` is below separator `c - 1`.
                    if c > 0 && below_lower_or_at(inner.keys.key(c - 1), self.lower) {
                        return Walk::Done;
                    }
                }
                Walk::Done
            }
        }
    }
}

/// True when no key below `separator` can be inside `lower`.
fn below_lower_or_at(separator: &[u8], lower: Bound<&[u8]>) -> bool {
    match lower {
        Bound::Unbounded => false,
        // Keys left of the separator are < separator <= l: all below an inclusive l.
        Bound::Included(l) | Bound::Excluded(l) => separator <= l,
    }
}

/// The writer's context for one engine batch: which nodes a snapshot may see (and must
/// therefore be copied before a change), where replaced nodes go, and spare nodes to
/// reuse instead of allocating.
pub(super) struct Writer {
    /// The epoch new nodes belong to; above every pinned epoch.
    epoch: u64,
    /// The newest pinned epoch: nodes up to it may be visible to a snapshot.
    newest_pin: Option<u64>,
    /// Nodes that left the live tree but may still be visible to a snapshot.
    pub(super) retired: Vec<NodePtr>,
    /// Nodes nothing can reach, owned by the writer: reused (box and buffers) by copies
    /// and splits, so that a commit's copy-on-write recycles the nodes the previous
    /// commit's copies freed instead of going through the allocator.
    pub(super) spare: Vec<NodePtr>,
}

impl Writer {
    /// A writer creating nodes in `epoch` (above every pin), with `newest_pin` the newest
    /// pinned epoch, if any, and `spare` nodes nothing reaches.
    pub(super) fn new(epoch: u64, newest_pin: Option<u64>, spare: Vec<NodePtr>) -> Self {
        debug_assert!(newest_pin.is_none_or(|p| p < epoch));
        Writer {
            epoch,
            newest_pin,
            retired: Vec::new(),
            spare,
        }
    }

    /// A spare node to overwrite, if any.
    fn shell(&mut self) -> Option<Box<Node>> {
        // SAFETY: spare nodes are allocated by `Box`, unreachable from any tree or
        // snapshot, and handed out once (popped).
        self.spare
            .pop()
            .map(|p| unsafe { Box::from_raw(p.as_ptr()) })
    }

    /// The buffers of a spare node, emptied, to build a new body in.
    fn buffers(shell: &mut Option<Box<Node>>) -> (Packed, Vec<NodePtr>) {
        let Some(node) = shell else {
            return (Packed::default(), Vec::new());
        };
        match std::mem::replace(&mut node.body, Body::Leaf(Packed::default())) {
            Body::Leaf(mut p) => {
                p.clear();
                (p, Vec::new())
            }
            Body::Inner(mut i) => {
                i.keys.clear();
                i.children.clear();
                (i.keys, i.children)
            }
        }
    }

    /// A node of this epoch with `body`, in `shell` when given.
    fn place(&mut self, shell: Option<Box<Node>>, body: Body) -> NodePtr {
        let node = match shell {
            Some(mut node) => {
                node.version = self.epoch;
                node.body = body;
                node
            }
            None => {
                #[cfg(test)]
                LIVE_NODES.with(|n| n.set(n.get() + 1));
                Box::new(Node {
                    version: self.epoch,
                    body,
                })
            }
        };
        NonNull::from(Box::leak(node))
    }

    fn alloc(&mut self, body: Body) -> NodePtr {
        let shell = self.shell();
        self.place(shell, body)
    }

    fn visible(&self, n: &Node) -> bool {
        self.newest_pin.is_some_and(|p| n.version <= p)
    }

    /// The node at `*slot`, writable: copied first (and the original retired) when a
    /// snapshot may see it.
    ///
    /// # Safety
    /// `*slot` is a node of the live tree, whose owner the caller holds exclusively, and
    /// `slot` is its one place in that tree (its parent is itself writable).
    unsafe fn own<'n>(&mut self, slot: &'n mut NodePtr) -> &'n mut Node {
        // SAFETY: a live node is valid (caller).
        let current = unsafe { node(*slot) };
        if self.visible(current) {
            let mut shell = self.shell();
            let (mut keys, mut children) = Self::buffers(&mut shell);
            let body = match &current.body {
                Body::Leaf(p) => {
                    p.copy_range_into(0, p.len(), &mut keys);
                    Body::Leaf(keys)
                }
                Body::Inner(inner) => {
                    inner.keys.copy_range_into(0, inner.keys.len(), &mut keys);
                    children.extend_from_slice(&inner.children);
                    Body::Inner(Inner { keys, children })
                }
            };
            self.retired.push(*slot);
            *slot = self.place(shell, body);
        }
        // SAFETY: `*slot` is now a node no snapshot can see (created in this epoch or
        // above every pin), reachable only through `slot`, which the caller holds
        // mutably: no other reference to it exists.
        unsafe { &mut *slot.as_ptr() }
    }

    /// One node (not its children) leaves the live tree: retired while a snapshot may see
    /// it, kept as a spare otherwise.
    ///
    /// # Safety
    /// `p` was a node of the live tree and no longer is; it is discarded only once.
    unsafe fn discard(&mut self, p: NodePtr) {
        // SAFETY: still allocated (it is being discarded now, once).
        if self.visible(unsafe { node(p) }) {
            self.retired.push(p);
        } else {
            self.spare.push(p);
        }
    }
}

/// What an insertion below a node did to it.
enum Grown {
    Same,
    /// The node split: its new right siblings in order, each with its separator (the
    /// smallest key below it). Usually one; more when entries of several kilobytes must
    /// each get a leaf of their own.
    Split(Vec<(Vec<u8>, NodePtr)>),
}

/// An overfull leaf cut into pieces none of which is overfull (a piece of one entry never
/// is).
///
/// A leaf that took a long sorted run (a commit's puts at the current window start, say)
/// is cut straight into pieces of three quarters of [`LEAF_MAX_ENTRIES`], so each entry is
/// copied once rather than once per halving, and the leaves a run appends leave room for
/// a few later inserts each. A leaf only a little over its bound, or over it by bytes, is
/// halved by bytes as [`leaf_halves`] does.
fn leaf_pieces(p: Packed, out: &mut Vec<Packed>) {
    if p.len() <= 2 * LEAF_MAX_ENTRIES {
        leaf_halves(p, out);
        return;
    }
    let pieces = p.len().div_ceil(LEAF_MAX_ENTRIES * 3 / 4);
    for j in 0..pieces {
        let (from, to) = (j * p.len() / pieces, (j + 1) * p.len() / pieces);
        leaf_halves(p.copy_range(from, to), out);
    }
}

/// An overfull leaf cut in halves by bytes, and halves still overfull cut again, until
/// no piece is.
fn leaf_halves(p: Packed, out: &mut Vec<Packed>) {
    if !leaf_overfull(&p) {
        out.push(p);
        return;
    }
    let at = p.byte_midpoint();
    leaf_halves(p.copy_range(0, at), out);
    leaf_halves(p.copy_range(at, p.len()), out);
}

/// An overfull inner node cut in halves, recursively, as [`leaf_pieces`]: the pieces and,
/// between each two, the separator that goes up.
fn inner_pieces(inner: Inner, out: &mut Vec<(Vec<u8>, Inner)>, separator: Vec<u8>) {
    if !inner_overfull(&inner) {
        out.push((separator, inner));
        return;
    }
    // Children `..mid` stay left, `mid..` go right; separator `mid - 1` goes up.
    let mid = inner.children.len() / 2;
    let up = inner.keys.key(mid - 1).to_vec();
    let mut children = inner.children;
    let right = Inner {
        keys: inner.keys.copy_range(mid, inner.keys.len()),
        children: children.split_off(mid),
    };
    let left = Inner {
        keys: inner.keys.copy_range(0, mid - 1),
        children,
    };
    inner_pieces(left, out, separator);
    inner_pieces(right, out, up);
}

/// Splits an overfull inner node in place: it keeps the first piece; the others are
/// returned as new siblings.
fn split_inner(w: &mut Writer, inner: &mut Inner) -> Grown {
    let whole = std::mem::replace(
        inner,
        Inner {
            keys: Packed::default(),
            children: Vec::new(),
        },
    );
    let mut pieces = Vec::new();
    inner_pieces(whole, &mut pieces, Vec::new());
    let mut pieces = pieces.into_iter();
    if let Some((_, first)) = pieces.next() {
        *inner = first;
    }
    Grown::Split(
        pieces
            .map(|(separator, piece)| (separator, w.alloc(Body::Inner(piece))))
            .collect(),
    )
}

fn leaf_overfull(p: &Packed) -> bool {
    p.len() > LEAF_MAX_ENTRIES || (p.len() > 1 && p.live_bytes() > LEAF_MAX_BYTES)
}

fn inner_overfull(i: &Inner) -> bool {
    i.children.len() > INNER_MAX_CHILDREN
        || (i.children.len() > 2 && i.keys.live_bytes() > INNER_MAX_BYTES)
}

impl Tree {
    /// Number of entries.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// A read-only view of the tree.
    ///
    /// # Safety
    /// Every node reachable from the root must stay allocated and unmodified for `'a`:
    /// the caller holds the engine's lock (no writer) or a pin covering this root.
    pub(super) unsafe fn view<'a>(&self) -> View<'a> {
        View {
            // SAFETY: guaranteed by the caller.
            root: self.root.map(|r| unsafe { node(r) }),
        }
    }

    /// Sets each key of `run`, whose keys are strictly ascending, to its value, with one
    /// descent per node the run reaches instead of one from the root per key: a commit's
    /// sorted writes that land in a few leaves (a window store's puts at the current window
    /// start, appended at the end of its time-first family) cost a leaf insert each plus a
    /// few descents.
    ///
    /// # Safety
    /// The caller holds the tree exclusively (the engine's write lock), and `w` carries the
    /// pins of every snapshot alive.
    pub(super) unsafe fn insert_run(&mut self, w: &mut Writer, run: &[(&[u8], &[u8])]) {
        debug_assert!(run.windows(2).all(|p| p[0].0 < p[1].0));
        let Some(((first, value), rest)) = run.split_first() else {
            return;
        };
        let Some(root) = self.root.as_mut() else {
            let mut leaf = Packed::default();
            leaf.insert(0, first, value);
            self.root = Some(w.alloc(Body::Leaf(leaf)));
            self.len = 1;
            // SAFETY: guaranteed by the caller.
            return unsafe { self.insert_run(w, rest) };
        };
        let mut added = 0;
        // SAFETY: the root is live and held exclusively (caller).
        let grown = unsafe { insert_at(w, root, run, &mut added) };
        self.len += added;
        let Grown::Split(siblings) = grown else {
            return;
        };
        // The tree grows at the root: a new root over the old one and its new siblings,
        // itself split (and grown again) in the unlikely case that they overfill it.
        let mut top = *root;
        let mut siblings = siblings;
        loop {
            let mut inner = Inner {
                keys: Packed::default(),
                children: vec![top],
            };
            for (separator, node) in siblings {
                let at = inner.keys.len();
                inner.keys.insert(at, &separator, &[]);
                inner.children.push(node);
            }
            let grown = if inner_overfull(&inner) {
                split_inner(w, &mut inner)
            } else {
                Grown::Same
            };
            top = w.alloc(Body::Inner(inner));
            match grown {
                Grown::Same => break,
                Grown::Split(more) => siblings = more,
            }
        }
        self.root = Some(top);
    }

    /// Removes `key`; returns whether it was present. A missing key copies nothing.
    ///
    /// # Safety
    /// As for [`Tree::insert_run`].
    pub(super) unsafe fn remove(&mut self, w: &mut Writer, key: &[u8]) -> bool {
        // SAFETY: exclusive access (caller): the nodes are valid and unchanging meanwhile.
        if unsafe { self.view() }.get(key).is_none() {
            return false;
        }
        let Some(root) = self.root.as_mut() else {
            return false;
        };
        // SAFETY: the root is live and held exclusively (caller).
        let emptied = unsafe { remove_at(w, root, key) };
        self.len -= 1;
        // SAFETY: the root is live and held exclusively (caller).
        unsafe { self.settle_root(w, emptied) };
        true
    }

    /// After a removal: drops a root the removal `emptied`, or replaces a root left with a
    /// single child by that child (the tree gets shallower), as often as that holds.
    ///
    /// # Safety
    /// As for [`Tree::insert_run`].
    unsafe fn settle_root(&mut self, w: &mut Writer, emptied: bool) {
        if emptied {
            if let Some(gone) = self.root.take() {
                // SAFETY: the emptied root just left the live tree.
                unsafe { w.discard(gone) };
            }
            return;
        }
        while let Some(r) = self.root {
            // SAFETY: a live node, held exclusively.
            let only_child = match &unsafe { node(r) }.body {
                Body::Inner(inner) if inner.children.len() == 1 => inner.children[0],
                _ => break,
            };
            self.root = Some(only_child);
            // SAFETY: the old root left the live tree; its child stays, now the root.
            unsafe { w.discard(r) };
        }
    }

    /// Removes every key in `[from, to)`; returns how many.
    ///
    /// # Safety
    /// As for [`Tree::insert_run`].
    pub(super) unsafe fn remove_range(&mut self, w: &mut Writer, from: &[u8], to: &[u8]) -> u64 {
        if from.is_empty() {
            // A range from the lowest key (the commit's expiry of a segmented store's old
            // segments): whole subtrees go at once, without a search per key.
            // SAFETY: as for this function.
            return unsafe { self.remove_below(w, to) };
        }
        let mut doomed: Vec<Vec<u8>> = Vec::new();
        // SAFETY: exclusive access (caller).
        unsafe { self.view() }.walk(
            Bound::Included(from),
            Bound::Excluded(to),
            false,
            usize::MAX,
            &mut |k, _| doomed.push(k.to_vec()),
        );
        for k in &doomed {
            // SAFETY: as for this function.
            unsafe { self.remove(w, k) };
        }
        doomed.len() as u64
    }

    /// Removes every key below `to`; returns how many. The subtrees wholly below `to` leave
    /// the tree whole (each of their nodes discarded once, none searched or copied); only
    /// the nodes on the path to `to` change. The cost is the expired nodes plus one path,
    /// not a descent per expired key, and nothing of the data left alive is visited.
    ///
    /// # Safety
    /// As for [`Tree::insert_run`].
    pub(super) unsafe fn remove_below(&mut self, w: &mut Writer, to: &[u8]) -> u64 {
        let Some(root) = self.root.as_mut() else {
            return 0;
        };
        let mut removed = 0;
        // SAFETY: the root is live and held exclusively (caller).
        let emptied = unsafe { remove_below_at(w, root, to, &mut removed) };
        self.len -= removed;
        // SAFETY: the root is live and held exclusively (caller).
        unsafe { self.settle_root(w, emptied) };
        removed
    }

    /// Frees every node of the live tree.
    ///
    /// # Safety
    /// Nothing may reach the tree's nodes any more (no snapshot, no reader), and the tree
    /// is not used afterwards.
    pub(super) unsafe fn free_all(&mut self) {
        if let Some(root) = self.root.take() {
            // SAFETY: guaranteed by the caller.
            unsafe { free_subtree(root) };
        }
        self.len = 0;
    }
}

/// Frees `p` and everything below it.
///
/// # Safety
/// Nothing may reach any node of the subtree any more.
unsafe fn free_subtree(p: NodePtr) {
    // SAFETY: allocated and unreachable by others (caller).
    if let Body::Inner(inner) = &unsafe { node(p) }.body {
        for c in &inner.children {
            // SAFETY: a child of an unreachable subtree is unreachable; each node of a
            // tree has one parent, so each is freed once.
            unsafe { free_subtree(*c) };
        }
    }
    // SAFETY: as above; children are freed and the node is released once.
    unsafe { free(p) };
}

/// Inserts `run` (keys strictly ascending) below `*slot`, each child reached once with the
/// part of the run it holds; `added` counts the keys that were new.
///
/// # Safety
/// `*slot` is a live node held exclusively; see [`Writer::own`].
unsafe fn insert_at(
    w: &mut Writer,
    slot: &mut NodePtr,
    run: &[(&[u8], &[u8])],
    added: &mut u64,
) -> Grown {
    // SAFETY: guaranteed by the caller.
    let n = unsafe { w.own(slot) };
    match &mut n.body {
        Body::Leaf(p) => {
            for (key, value) in run {
                match p.search(key) {
                    Ok(i) => p.set_value(i, value),
                    Err(i) => {
                        p.insert(i, key, value);
                        *added += 1;
                    }
                }
            }
            if !leaf_overfull(p) {
                return Grown::Same;
            }
            let mut pieces = Vec::new();
            leaf_pieces(std::mem::take(p), &mut pieces);
            let mut pieces = pieces.into_iter();
            if let Some(first) = pieces.next() {
                *p = first;
            }
            Grown::Split(
                pieces
                    .map(|piece| (piece.key(0).to_vec(), w.alloc(Body::Leaf(piece))))
                    .collect(),
            )
        }
        Body::Inner(inner) => {
            // Each child's part of the run, then the children's new siblings, inserted from
            // the right so that the indexes still to be used do not move.
            let mut splits = Vec::new();
            let mut rest = run;
            while let Some(((first, _), _)) = rest.split_first() {
                let c = inner.keys.count_le(first);
                let end = if c < inner.keys.len() {
                    let separator = inner.keys.key(c);
                    rest.partition_point(|(k, _)| *k < separator)
                } else {
                    rest.len()
                };
                let (part, tail) = rest.split_at(end);
                // SAFETY: the child is live and its parent (`n`) is owned by the writer.
                let grown = unsafe { insert_at(w, &mut inner.children[c], part, added) };
                if let Grown::Split(siblings) = grown {
                    splits.push((c, siblings));
                }
                rest = tail;
            }
            for (c, siblings) in splits.into_iter().rev() {
                for (j, (separator, node)) in siblings.into_iter().enumerate() {
                    inner.keys.insert(c + j, &separator, &[]);
                    inner.children.insert(c + 1 + j, node);
                }
            }
            if inner_overfull(inner) {
                split_inner(w, inner)
            } else {
                Grown::Same
            }
        }
    }
}

/// Removes `key`, which is present, below `*slot`; returns whether the node is now empty.
///
/// # Safety
/// As for [`insert_at`].
unsafe fn remove_at(w: &mut Writer, slot: &mut NodePtr, key: &[u8]) -> bool {
    // SAFETY: guaranteed by the caller.
    let n = unsafe { w.own(slot) };
    match &mut n.body {
        Body::Leaf(p) => {
            if let Ok(i) = p.search(key) {
                p.remove(i);
            }
            p.is_empty()
        }
        Body::Inner(inner) => {
            let c = inner.keys.count_le(key);
            // SAFETY: the child is live and its parent is owned by the writer.
            let emptied = unsafe { remove_at(w, &mut inner.children[c], key) };
            if emptied {
                let gone = inner.children.remove(c);
                if !inner.keys.is_empty() {
                    inner.keys.remove(c.saturating_sub(1));
                }
                // SAFETY: the emptied child just left the live tree.
                unsafe { w.discard(gone) };
            } else {
                // SAFETY: `inner` is owned by the writer; its children are live.
                unsafe { merge_small(w, inner, c) };
            }
            inner.children.is_empty()
        }
    }
}

/// Removes every key below `to` below `*slot`, adding their number to `removed`; returns
/// whether the node is now empty.
///
/// # Safety
/// As for [`insert_at`].
unsafe fn remove_below_at(
    w: &mut Writer,
    slot: &mut NodePtr,
    to: &[u8],
    removed: &mut u64,
) -> bool {
    // Nothing to remove: the node is left as it is (not copied for a snapshot).
    // SAFETY: a live node (caller).
    let first_below = match &unsafe { node(*slot) }.body {
        Body::Leaf(p) => !p.is_empty() && p.key(0) < to,
        Body::Inner(_) => true,
    };
    if !first_below {
        return false;
    }
    // SAFETY: guaranteed by the caller.
    let n = unsafe { w.own(slot) };
    match &mut n.body {
        Body::Leaf(p) => {
            let k = p.count_lt(to);
            *removed += k as u64;
            if k == p.len() {
                p.clear();
            } else if k > 0 {
                *p = p.copy_range(k, p.len());
            }
            p.is_empty()
        }
        Body::Inner(inner) => {
            // Children before `c` hold only keys below separator `c - 1 <= to`.
            let c = inner.keys.count_le(to);
            for gone in inner.children.drain(..c) {
                // SAFETY: the subtree just left the live tree, once.
                *removed += unsafe { discard_subtree(w, gone) };
            }
            if c > 0 {
                // Separators `0..c` bounded the children removed; the first child left
                // is now child 0, bounded below by this node's own lower bound.
                let rest = inner.keys.copy_range(c, inner.keys.len());
                inner.keys = rest;
            }
            // SAFETY: the child is live and its parent is owned by the writer.
            let emptied = unsafe { remove_below_at(w, &mut inner.children[0], to, removed) };
            if emptied {
                let gone = inner.children.remove(0);
                if !inner.keys.is_empty() {
                    inner.keys.remove(0);
                }
                // SAFETY: the emptied child just left the live tree.
                unsafe { w.discard(gone) };
            } else {
                // SAFETY: `inner` is owned by the writer; its children are live.
                unsafe { merge_small(w, inner, 0) };
            }
            inner.children.is_empty()
        }
    }
}

/// Discards every node of the subtree at `p`, which just left the live tree; returns
/// its number of entries.
///
/// # Safety
/// `p` was a node of the live tree, no longer reachable from it, discarded only here.
unsafe fn discard_subtree(w: &mut Writer, p: NodePtr) -> u64 {
    // SAFETY: still allocated (caller): read before it is discarded.
    let entries = match &unsafe { node(p) }.body {
        Body::Leaf(l) => l.len() as u64,
        Body::Inner(inner) => {
            let mut sum = 0;
            for &child in &inner.children {
                // SAFETY: each child of a node that left the tree left it with it, and a
                // tree has no shared children, so each is discarded once.
                sum += unsafe { discard_subtree(w, child) };
            }
            sum
        }
    };
    // SAFETY: as above; its children were read first.
    unsafe { w.discard(p) };
    entries
}

/// Merges child `c` of `inner` with a sibling when it has shrunk below a quarter of a
/// node and the two fit in one node.
///
/// # Safety
/// `inner` is owned by the writer (created in its epoch) and part of the live tree.
unsafe fn merge_small(w: &mut Writer, inner: &mut Inner, c: usize) {
    // SAFETY: live children of a live node.
    let size = unsafe { node(inner.children[c]) }.size();
    let small = match &unsafe { node(inner.children[c]) }.body {
        Body::Leaf(_) => size < LEAF_MAX_ENTRIES / MERGE_BELOW_FRACTION,
        Body::Inner(_) => size < INNER_MAX_CHILDREN / MERGE_BELOW_FRACTION,
    };
    if !small || inner.children.len() < 2 {
        return;
    }
    // Merge the pair (l, l + 1) that contains c.
    let l = if c + 1 < inner.children.len() {
        c
    } else {
        c - 1
    };
    let right_ptr = inner.children[l + 1];
    // SAFETY: live, and distinct from the left child (a tree has no shared children).
    let (left_node, right_node) = unsafe { (node(inner.children[l]), node(right_ptr)) };
    let fits = match (&left_node.body, &right_node.body) {
        (Body::Leaf(a), Body::Leaf(b)) => {
            a.len() + b.len() <= LEAF_MAX_ENTRIES
                && a.live_bytes() + b.live_bytes() <= LEAF_MAX_BYTES
        }
        (Body::Inner(a), Body::Inner(b)) => {
            a.children.len() + b.children.len() <= INNER_MAX_CHILDREN
                && a.keys.live_bytes() + b.keys.live_bytes() + inner.keys.key(l).len()
                    <= INNER_MAX_BYTES
        }
        _ => false,
    };
    if !fits {
        return;
    }
    let separator = inner.keys.key(l).to_vec();
    // SAFETY: child `l` is live, its parent is owned; the right sibling is only read.
    let left = unsafe { w.own(&mut inner.children[l]) };
    match (&mut left.body, &right_node.body) {
        (Body::Leaf(a), Body::Leaf(b)) => a.append(b),
        (Body::Inner(a), Body::Inner(b)) => {
            let at = a.keys.len();
            a.keys.insert(at, &separator, &[]);
            a.keys.append(&b.keys);
            a.children.extend_from_slice(&b.children);
        }
        _ => return,
    }
    inner.children.remove(l + 1);
    inner.keys.remove(l);
    // SAFETY: the right sibling left the live tree; its children (if any) now belong to
    // the left one.
    unsafe { w.discard(right_ptr) };
}

/// Heap bytes of the live tree (nodes and their buffers), for tests and diagnostics.
///
/// # Safety
/// As for [`Tree::view`].
#[cfg(test)]
pub(super) unsafe fn heap_bytes(tree: &Tree) -> usize {
    fn walk(n: &Node) -> usize {
        std::mem::size_of::<Node>()
            + match &n.body {
                Body::Leaf(p) => p.heap_bytes(),
                Body::Inner(i) => {
                    i.keys.heap_bytes()
                        + i.children.capacity() * std::mem::size_of::<NodePtr>()
                        // SAFETY: children of a valid node are valid.
                        + i.children.iter().map(|c| walk(unsafe { node(*c) })).sum::<usize>()
                }
            }
    }
    // SAFETY: guaranteed by the caller.
    unsafe { tree.view() }.root.map_or(0, walk)
}

/// Checks the tree's shape: ordered keys within separators, leaves at one depth, sizes
/// within bounds, the entry count. For tests.
///
/// # Safety
/// As for [`Tree::view`].
#[cfg(test)]
pub(super) unsafe fn check(tree: &Tree) -> Result<(), String> {
    fn walk(
        n: &Node,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        depth: usize,
        leaf_depth: &mut Option<usize>,
        count: &mut u64,
    ) -> Result<(), String> {
        let keys = match &n.body {
            Body::Leaf(p) => p,
            Body::Inner(i) => &i.keys,
        };
        for k in 0..keys.len() {
            let key = keys.key(k);
            if k > 0 && keys.key(k - 1) >= key {
                return Err("keys out of order".into());
            }
            if lo.is_some_and(|l| key < l) || hi.is_some_and(|h| key >= h) {
                return Err("key outside its separators".into());
            }
        }
        match &n.body {
            Body::Leaf(p) => {
                if p.is_empty() {
                    return Err("empty leaf".into());
                }
                if leaf_overfull(p) {
                    return Err("overfull leaf".into());
                }
                *count += p.len() as u64;
                match leaf_depth {
                    Some(d) if *d != depth => return Err("leaves at different depths".into()),
                    _ => *leaf_depth = Some(depth),
                }
            }
            Body::Inner(i) => {
                if i.children.len() != i.keys.len() + 1 || i.children.is_empty() {
                    return Err("children and separators do not match".into());
                }
                if inner_overfull(i) {
                    return Err("overfull inner node".into());
                }
                for (c, child) in i.children.iter().enumerate() {
                    let clo = if c == 0 { lo } else { Some(i.keys.key(c - 1)) };
                    let chi = if c + 1 == i.children.len() {
                        hi
                    } else {
                        Some(i.keys.key(c))
                    };
                    // SAFETY: children of a valid node are valid.
                    let child = unsafe { node(*child) };
                    walk(child, clo, chi, depth + 1, leaf_depth, count)?;
                }
            }
        }
        Ok(())
    }
    // SAFETY: guaranteed by the caller.
    let Some(root) = (unsafe { tree.view() }).root else {
        return if tree.len == 0 {
            Ok(())
        } else {
            Err("empty tree with a count".into())
        };
    };
    if let Body::Inner(i) = &root.body {
        if i.children.len() < 2 {
            return Err("root with a single child".into());
        }
    }
    let mut count = 0;
    walk(root, None, None, 0, &mut None, &mut count)?;
    if count != tree.len {
        return Err(format!("{count} entries, count says {}", tree.len));
    }
    Ok(())
}

/// Number of nodes of the live tree, for tests.
///
/// # Safety
/// As for [`Tree::view`].
#[cfg(test)]
pub(super) unsafe fn node_count(tree: &Tree) -> usize {
    fn walk(n: &Node) -> usize {
        1 + match &n.body {
            Body::Leaf(_) => 0,
            // SAFETY: children of a valid node are valid.
            Body::Inner(i) => i.children.iter().map(|c| walk(unsafe { node(*c) })).sum(),
        }
    }
    // SAFETY: guaranteed by the caller.
    unsafe { tree.view() }.root.map_or(0, walk)
}

/// Depth of the live tree (0 when empty, 1 for a single leaf), for tests.
///
/// # Safety
/// As for [`Tree::view`].
#[cfg(test)]
pub(super) unsafe fn depth(tree: &Tree) -> usize {
    // SAFETY: guaranteed by the caller.
    let mut n = unsafe { tree.view() }.root;
    let mut d = 0;
    while let Some(node_ref) = n {
        d += 1;
        n = match &node_ref.body {
            Body::Leaf(_) => None,
            // SAFETY: children of a valid node are valid.
            Body::Inner(i) => Some(unsafe { node(i.children[0]) }),
        };
    }
    d
}

/// A position in a tree, for a cursor: the path from the root, each inner node with the
/// index of the child the path goes through, the leaf with the index of the next entry
/// (ascending) or one past it (descending). It holds node addresses, so its owner must
/// keep every node of the tree valid and unchanged while it is used (a pin does).
#[derive(Default)]
pub(super) struct Position {
    path: Vec<(NodePtr, usize)>,
}

impl Position {
    /// Moves before the first entry `>= lower` (`> lower` when excluded) of `tree`.
    ///
    /// # Safety
    /// As for [`Tree::view`], for as long as the position is used.
    pub(super) unsafe fn seek_forward(&mut self, tree: &Tree, lower: Bound<&[u8]>) {
        self.path.clear();
        // SAFETY: the root of the pinned tree (caller).
        unsafe { self.descend_forward(tree.root, lower) }
    }

    /// As [`Position::seek_forward`], from where the position is when `lower` lies ahead of
    /// it: the descent starts at the lowest node on the current path whose subtree holds
    /// `lower`, so a seek a few entries ahead reads one leaf (or a few nodes) instead of
    /// searching every level from the root, whose nodes a large tree has out of the CPU's
    /// caches. A time query seeks this way over each record key's windows.
    ///
    /// # Safety
    /// As for [`Position::seek_forward`]; the position was last moved by it, by this or by
    /// [`Position::next_forward`], over `tree`.
    pub(super) unsafe fn seek_forward_near(&mut self, tree: &Tree, lower: Bound<&[u8]>) {
        let k = match lower {
            Bound::Included(k) | Bound::Excluded(k) => k,
            Bound::Unbounded => {
                // SAFETY: as for this function.
                return unsafe { self.seek_forward(tree, lower) };
            }
        };
        // `lower` must lie past the entry last returned, and so past every lower bound
        // of the subtrees on the path.
        let ahead = self.path.last().is_some_and(|&(p, i)| {
            // SAFETY: valid while pinned (caller).
            match &unsafe { node(p) }.body {
                Body::Leaf(leaf) => i > 0 && i <= leaf.len() && leaf.key(i - 1) < k,
                Body::Inner(_) => false,
            }
        });
        if ahead {
            // The deepest inner node on the path whose current child's subtree holds `k`
            // (below the child's upper separator): a descent from the root passes there.
            for level in (0..self.path.len().saturating_sub(1)).rev() {
                let (p, c) = self.path[level];
                // SAFETY: valid while pinned (caller).
                let Body::Inner(inner) = &unsafe { node(p) }.body else {
                    break;
                };
                if c < inner.keys.len() && k < inner.keys.key(c) {
                    self.path.truncate(level + 1);
                    // SAFETY: as for this function.
                    unsafe { self.descend_forward(Some(inner.children[c]), lower) };
                    return;
                }
            }
        }
        // SAFETY: as for this function.
        unsafe { self.seek_forward(tree, lower) }
    }

    /// Descends from `next` to the first entry `>= lower` (`> lower` when excluded),
    /// pushing the nodes it passes onto the path.
    ///
    /// # Safety
    /// As for [`Position::seek_forward`]; `next` is a node of the pinned tree.
    unsafe fn descend_forward(&mut self, mut next: Option<NodePtr>, lower: Bound<&[u8]>) {
        while let Some(p) = next {
            // SAFETY: valid while pinned (caller).
            match &unsafe { node(p) }.body {
                Body::Inner(inner) => {
                    let c = match lower {
                        Bound::Unbounded => 0,
                        Bound::Included(k) | Bound::Excluded(k) => inner.keys.count_le(k),
                    };
                    self.path.push((p, c));
                    next = Some(inner.children[c]);
                }
                Body::Leaf(leaf) => {
                    let i = match lower {
                        Bound::Unbounded => 0,
                        Bound::Included(k) => leaf.count_lt(k),
                        Bound::Excluded(k) => leaf.count_le(k),
                    };
                    self.path.push((p, i));
                    next = None;
                }
            }
        }
    }

    /// Moves after the last entry `<= upper` (`< upper` when excluded) of `tree`.
    ///
    /// # Safety
    /// As for [`Position::seek_forward`].
    pub(super) unsafe fn seek_backward(&mut self, tree: &Tree, upper: Bound<&[u8]>) {
        self.path.clear();
        let mut next = tree.root;
        while let Some(p) = next {
            // SAFETY: valid while pinned (caller).
            match &unsafe { node(p) }.body {
                Body::Inner(inner) => {
                    let c = match upper {
                        Bound::Unbounded => inner.children.len() - 1,
                        Bound::Included(k) | Bound::Excluded(k) => inner.keys.count_le(k),
                    };
                    self.path.push((p, c));
                    next = Some(inner.children[c]);
                }
                Body::Leaf(leaf) => {
                    let i = match upper {
                        Bound::Unbounded => leaf.len(),
                        Bound::Included(k) => leaf.count_le(k),
                        Bound::Excluded(k) => leaf.count_lt(k),
                    };
                    self.path.push((p, i));
                    next = None;
                }
            }
        }
    }

    /// The next entry ascending, or `None` past the last.
    ///
    /// # Safety
    /// As for [`Position::seek_forward`]; the position was last moved by it or by this.
    pub(super) unsafe fn next_forward<'a>(&mut self) -> Option<(&'a [u8], &'a [u8])> {
        loop {
            let &mut (p, ref mut i) = self.path.last_mut()?;
            // SAFETY: valid while pinned (caller).
            let n = unsafe { node(p) };
            match &n.body {
                Body::Leaf(leaf) if *i < leaf.len() => {
                    *i += 1;
                    return Some((leaf.key(*i - 1), leaf.value(*i - 1)));
                }
                Body::Leaf(_) => {
                    self.path.pop();
                }
                Body::Inner(inner) if *i + 1 < inner.children.len() => {
                    // Into the next child, down its left edge.
                    *i += 1;
                    let mut down = inner.children[*i];
                    loop {
                        // SAFETY: valid while pinned (caller).
                        match &unsafe { node(down) }.body {
                            Body::Inner(d) => {
                                self.path.push((down, 0));
                                down = d.children[0];
                            }
                            Body::Leaf(_) => {
                                self.path.push((down, 0));
                                break;
                            }
                        }
                    }
                }
                Body::Inner(_) => {
                    self.path.pop();
                }
            }
        }
    }

    /// The next entry descending, or `None` before the first.
    ///
    /// # Safety
    /// As for [`Position::seek_backward`]; the position was last moved by it or by this.
    pub(super) unsafe fn next_backward<'a>(&mut self) -> Option<(&'a [u8], &'a [u8])> {
        loop {
            let &mut (p, ref mut i) = self.path.last_mut()?;
            // SAFETY: valid while pinned (caller).
            let n = unsafe { node(p) };
            match &n.body {
                Body::Leaf(leaf) if *i > 0 => {
                    *i -= 1;
                    return Some((leaf.key(*i), leaf.value(*i)));
                }
                Body::Leaf(_) => {
                    self.path.pop();
                }
                Body::Inner(inner) if *i > 0 => {
                    // Into the previous child, down its right edge.
                    *i -= 1;
                    let mut down = inner.children[*i];
                    loop {
                        // SAFETY: valid while pinned (caller).
                        match &unsafe { node(down) }.body {
                            Body::Inner(d) => {
                                self.path.push((down, d.children.len() - 1));
                                down = d.children[d.children.len() - 1];
                            }
                            Body::Leaf(l) => {
                                self.path.push((down, l.len()));
                                break;
                            }
                        }
                    }
                }
                Body::Inner(_) => {
                    self.path.pop();
                }
            }
        }
    }
}
