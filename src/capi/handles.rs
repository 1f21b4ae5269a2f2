//! Opaque C handles. A `kstate_kv_t*` or `kstate_kv_iter_t*` is never a pointer to Rust
//! memory: its value is a number from a [`HandleTable`], so a NULL, closed or forged handle
//! is looked up, found missing and rejected, never dereferenced.
//!
//! Handle numbers of one table are issued consecutively and never reused, so a number
//! between the first and the last issued that is no longer live was closed: that case gets
//! the "closed" error (`STORE_CLOSED`, `ITERATOR_CLOSED`), anything else `INVALID_HANDLE`.
//!
//! Every kind of handle XORs its numbers with its own tag before they become pointers, so
//! a handle of one kind cast to another kind (an iterator passed as a store) lands outside
//! the other table's range and is rejected as invalid instead of addressing some object.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::handle::HandleTable;
use crate::{Error, ErrorCode, Result};

// Handles travel as pointer values; the table's 64-bit numbers must fit.
#[cfg(not(target_pointer_width = "64"))]
compile_error!("the kstate C API needs 64-bit pointers to carry its 64-bit handles");

/// A table of one kind of object plus the bounds of the numbers it issued.
pub(crate) struct Handles<T> {
    table: HandleTable<T>,
    lowest: AtomicU64,
    highest: AtomicU64,
    closed: fn() -> Error,
    tag: u64,
}

impl<T> Handles<T> {
    /// An empty table; `closed` makes the error for a handle that was closed; `tag` is
    /// XORed into the pointers of this kind (distinct per kind).
    pub(crate) fn new(what: &'static str, closed: fn() -> Error, tag: u64) -> Self {
        Handles {
            table: HandleTable::new(what),
            lowest: AtomicU64::new(u64::MAX),
            highest: AtomicU64::new(0),
            closed,
            tag,
        }
    }

    /// Registers `value`; returns the opaque pointer that stands for it (never NULL).
    pub(crate) fn insert<P>(&self, value: T) -> *mut P {
        let h = self.table.insert(value);
        self.lowest.fetch_min(h, Ordering::AcqRel);
        self.highest.fetch_max(h, Ordering::AcqRel);
        (h ^ self.tag) as usize as *mut P
    }

    /// The live object behind the opaque pointer `handle`.
    pub(crate) fn get<P>(&self, handle: *const P) -> Result<Arc<T>> {
        let h = self.number(handle);
        self.table.get(h).map_err(|e| self.classify(h, e))
    }

    /// Unregisters the opaque pointer `handle` and returns its object.
    pub(crate) fn remove<P>(&self, handle: *const P) -> Result<Arc<T>> {
        let h = self.number(handle);
        self.table.remove(h).map_err(|e| self.classify(h, e))
    }

    /// The handle number behind a pointer; NULL stays 0, the table's null handle.
    fn number<P>(&self, handle: *const P) -> u64 {
        match handle as usize as u64 {
            0 => 0,
            p => p ^ self.tag,
        }
    }

    fn classify(&self, h: u64, e: Error) -> Error {
        let issued =
            h >= self.lowest.load(Ordering::Acquire) && h <= self.highest.load(Ordering::Acquire);
        if issued && e.code() == ErrorCode::InvalidHandle {
            (self.closed)()
        } else {
            e
        }
    }
}
