//! Handle tables for the C and JNI surfaces.
//!
//! A handle given to foreign code is a number, not a pointer to Rust memory: the table maps
//! it to an `Arc` of the object. Numbers are never reused (a 64-bit counter), so a handle
//! that was closed, never issued, or corrupted is recognised and rejected with
//! [`Error::InvalidHandle`] instead of being dereferenced. Closing removes the entry; a
//! call already in flight keeps the object alive through its own `Arc` until it returns.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::sync::RwLockExt;
use crate::{Error, Result};

/// Handle numbers start here, so small integers (and 0, the null handle) are never valid
/// and a handle confused with a length or an index is caught.
const FIRST_HANDLE: u64 = 0x4B53_0000_0000_0001;

/// A table of live objects of one kind, addressed by opaque 64-bit handles.
pub struct HandleTable<T> {
    what: &'static str,
    next: AtomicU64,
    live: RwLock<HashMap<u64, Arc<T>>>,
}

impl<T> HandleTable<T> {
    /// An empty table; `what` names the kind in error messages ("store", "iterator").
    pub fn new(what: &'static str) -> Self {
        HandleTable {
            what,
            next: AtomicU64::new(FIRST_HANDLE),
            live: RwLock::new(HashMap::new()),
        }
    }

    /// Registers `value` and returns its new handle (never 0).
    pub fn insert(&self, value: T) -> u64 {
        let handle = self.next.fetch_add(1, Ordering::Relaxed);
        self.live.write_recover().insert(handle, Arc::new(value));
        handle
    }

    /// The object behind `handle`.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] for 0, a closed handle, or a number never issued.
    pub fn get(&self, handle: u64) -> Result<Arc<T>> {
        self.live
            .read_recover()
            .get(&handle)
            .cloned()
            .ok_or_else(|| self.invalid(handle))
    }

    /// Unregisters `handle` and returns its object; the handle is invalid from now on.
    ///
    /// # Errors
    /// [`Error::InvalidHandle`] as for [`HandleTable::get`], including a second removal.
    pub fn remove(&self, handle: u64) -> Result<Arc<T>> {
        self.live
            .write_recover()
            .remove(&handle)
            .ok_or_else(|| self.invalid(handle))
    }

    fn invalid(&self, handle: u64) -> Error {
        if handle == 0 {
            Error::InvalidHandle(format!("null {} handle", self.what))
        } else {
            Error::InvalidHandle(format!(
                "{} handle {handle:#x} is not open (already closed, or never issued)",
                self.what
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn stale_null_and_forged_handles_are_rejected() {
        let t = HandleTable::new("store");
        let h = t.insert(5u32);
        assert_eq!(*t.get(h).unwrap(), 5);
        assert_eq!(t.get(0).unwrap_err().code(), ErrorCode::InvalidHandle);
        assert_eq!(t.get(h + 1).unwrap_err().code(), ErrorCode::InvalidHandle);
        let held = t.get(h).unwrap();
        assert_eq!(*t.remove(h).unwrap(), 5);
        assert_eq!(*held, 5, "an in-flight user keeps the object alive");
        assert_eq!(t.remove(h).unwrap_err().code(), ErrorCode::InvalidHandle);
        let h2 = t.insert(6);
        assert_ne!(h, h2, "handles are never reused");
        assert!(t.get(h).is_err());
    }
}
