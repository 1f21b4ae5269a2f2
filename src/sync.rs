//! Lock helpers. A panic while holding one of kstate's locks (caught at the FFI boundary)
//! must not turn every later call into a second panic, so poisoned locks are entered
//! anyway: every critical section leaves the protected state valid between statements.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `lock()` without poisoning.
pub(crate) trait MutexExt<T> {
    /// Locks, entering a poisoned mutex anyway.
    fn lock_recover(&self) -> MutexGuard<'_, T>;
}

impl<T> MutexExt<T> for Mutex<T> {
    fn lock_recover(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `read()`/`write()` without poisoning.
pub(crate) trait RwLockExt<T> {
    /// Read-locks, entering a poisoned lock anyway.
    fn read_recover(&self) -> RwLockReadGuard<'_, T>;
    /// Write-locks, entering a poisoned lock anyway.
    fn write_recover(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T> RwLockExt<T> for RwLock<T> {
    fn read_recover(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_recover(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|p| p.into_inner())
    }
}
