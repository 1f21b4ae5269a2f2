//! The directory side of an upgrade by prepare and swap: the side directory a new-format
//! store is built in (`.<name>.kstate-swap`), the atomic exchange of the two directories,
//! and the clean-up a later open does after a kill.
//!
//! * **Exchange.** Linux `renameat2(RENAME_EXCHANGE)` swaps the store directory and the
//!   side directory in one system call: before it the old store is live, after it the new
//!   one, and the other sits in the side directory until it is removed.
//! * **Fallback** where the file system refuses the exchange: a marker file
//!   (`.<name>.kstate-swap-ready`, written and synced once the side store is complete) makes
//!   the two renames (`store -> .<name>.kstate-swap-old`, `side -> store`) a roll-forward
//!   protocol: an open that finds the marker finishes them.
//! * **Clean-up.** Without a marker, a side directory is a swap that never reached its
//!   exchange (or finished it and was killed before removing the old store): the store
//!   path holds a complete store either way, and the side directory is removed.

use std::path::{Path, PathBuf};

use super::lock::sibling;
use crate::{Error, Result};

/// The side directory of the store at `path`.
pub(crate) fn side_dir(path: &Path) -> Result<PathBuf> {
    sibling(path, "kstate-swap")
}

fn marker(path: &Path) -> Result<PathBuf> {
    sibling(path, "kstate-swap-ready")
}

fn old_dir(path: &Path) -> Result<PathBuf> {
    sibling(path, "kstate-swap-old")
}

fn sync_parent(path: &Path) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(parent, e))?;
    }
    Ok(())
}

fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(dir, e)),
        _ => Ok(()),
    }
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| Error::io(to, e))
}

/// Finishes or undoes what a killed swap left next to the store at `path`. Called by
/// every open, under kstate's lock.
pub(crate) fn recover(path: &Path) -> Result<()> {
    let (side, marker, old) = (side_dir(path)?, marker(path)?, old_dir(path)?);
    if marker.exists() {
        // The side store was complete: roll the fallback renames forward.
        if side.exists() {
            if path.exists() {
                rename(path, &old)?;
            }
            rename(&side, path)?;
        }
        sync_parent(path)?;
        remove_dir(&old)?;
        std::fs::remove_file(&marker).map_err(|e| Error::io(&marker, e))?;
        return sync_parent(path);
    }
    remove_dir(&side)?;
    remove_dir(&old)
}

/// Swaps the complete, synced store in `side` with the store at `path` and removes the old
/// one. A kill at any instant leaves a complete store at `path` (old or new) for
/// [`recover`].
pub(crate) fn exchange(path: &Path, side: &Path) -> Result<()> {
    crate::failpoint::hit("swap-before-exchange");
    if exchange_directories(path, side)? {
        sync_parent(path)?;
        crate::failpoint::hit("swap-after-exchange");
    } else {
        let (marker, old) = (marker(path)?, old_dir(path)?);
        std::fs::File::create(&marker)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(&marker, e))?;
        sync_parent(path)?;
        crate::failpoint::hit("swap-fallback-marked");
        rename(path, &old)?;
        crate::failpoint::hit("swap-fallback-moved-old");
        rename(side, path)?;
        sync_parent(path)?;
        crate::failpoint::hit("swap-fallback-moved-new");
        remove_dir(&old)?;
        std::fs::remove_file(&marker).map_err(|e| Error::io(&marker, e))?;
        return sync_parent(path);
    }
    remove_dir(side)
}

/// `renameat2(a, b, RENAME_EXCHANGE)`: true when the two directories were swapped, false
/// when the kernel or file system does not support it (the caller falls back).
fn exchange_directories(a: &Path, b: &Path) -> Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    if forced_fallback() {
        return Ok(false);
    }
    let ca = std::ffi::CString::new(a.as_os_str().as_bytes())
        .map_err(|_| Error::InvalidArgument(format!("{} has a NUL byte", a.display())))?;
    let cb = std::ffi::CString::new(b.as_os_str().as_bytes())
        .map_err(|_| Error::InvalidArgument(format!("{} has a NUL byte", b.display())))?;
    // SAFETY: both paths are valid NUL-terminated strings that outlive the call; the
    // syscall only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::ENOTSUP) => Ok(false),
        _ => Err(Error::io(a, err)),
    }
}

/// With the `failpoints` feature, `KSTATE_SWAP_NO_EXCHANGE=1` makes the tests take the
/// marker-file fallback; without it the exchange is always tried.
fn forced_fallback() -> bool {
    cfg!(feature = "failpoints") && std::env::var("KSTATE_SWAP_NO_EXCHANGE").is_ok_and(|v| v == "1")
}
