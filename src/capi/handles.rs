//! Opaque C handles. A `kstate_kv_t*` or `kstate_kv_iter_t*` is never a pointer to Rust
//! memory: its value is a number from a [`HandleTable`], so a NULL, closed or forged handle
//! is looked up, found missing and rejected, never dereferenced.
//!
//! Handle numbers of one table are issued consecutively and never reused, so a number
//! between the first and the last issued that is no longer live was closed: that case gets
//! the "closed" error (`STORE_CLOSED`, `ITERATOR_CLOSED`), anything else `INVALID_HANDLE`.

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
}

impl<T> Handles<T> {
    /// An empty table; `closed` makes the error for a handle that was closed.
    pub(crate) fn new(what: &'static str, closed: fn() -> Error) -> Self {
        Handles {
            table: HandleTable::new(what),
            lowest: AtomicU64::new(u64::MAX),
            highest: AtomicU64::new(0),
            closed,
        }
    }

    /// Registers `value`; returns its handle number.
    pub(crate) fn insert(&self, value: T) -> u64 {
        let h = self.table.insert(value);
        self.lowest.fetch_min(h, Ordering::AcqRel);
        self.highest.fetch_max(h, Ordering::AcqRel);
        h
    }

    /// The live object behind `h`.
    pub(crate) fn get(&self, h: u64) -> Result<Arc<T>> {
        self.table.get(h).map_err(|e| self.classify(h, e))
    }

    /// Unregisters `h` and returns its object.
    pub(crate) fn remove(&self, h: u64) -> Result<Arc<T>> {
        self.table.remove(h).map_err(|e| self.classify(h, e))
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

/// Handle number carried by an opaque pointer.
pub(crate) fn number<T>(ptr: *const T) -> u64 {
    ptr as usize as u64
}

/// Opaque pointer carrying a handle number (never dereferenced by anyone).
pub(crate) fn pointer<T>(h: u64) -> *mut T {
    h as usize as *mut T
}
