//! kstate's own store lock. RocksDB's `LOCK` file is held per process, and only one handle
//! in a process can take it, but two copies of kstate in one process (two class loaders,
//! each with its own extracted `libkstate.so`) each think they are the only one. An `flock`
//! on a sibling file is held per open file description, so every open anywhere (another
//! process, another handle, another copy of the library) conflicts with it.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use fs2::FileExt;

use crate::{Error, Result};

/// How long an open waits for a contended lock before reporting [`Error::Locked`].
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// An exclusive lock on a store path, held until dropped.
#[derive(Debug)]
pub(crate) struct StoreLock {
    _file: File,
}

/// Makes the entries of `dir` (files created, renamed or removed in it) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// Removes `dir` and everything in it; a `dir` that is not there is fine.
pub(crate) fn remove_dir_if_present(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(dir, e)),
        _ => Ok(()),
    }
}

/// A hidden directory a new directory is built in before a rename publishes it (a
/// checkpoint, a restore): removed when dropped unless [`Staging::published`] was called,
/// so a failed build leaves nothing behind.
pub(crate) struct Staging {
    dir: PathBuf,
    published: bool,
}

impl Staging {
    /// Guards `dir` (usually a [`sibling`] of the destination).
    pub(crate) fn new(dir: PathBuf) -> Staging {
        Staging {
            dir,
            published: false,
        }
    }

    /// Removes what a killed or failed earlier build left there.
    pub(crate) fn clear(&self) -> Result<()> {
        remove_dir_if_present(&self.dir)
    }

    /// The directory was renamed into place: nothing to remove any more.
    pub(crate) fn published(&mut self) {
        self.published = true;
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            // Best effort: the next build to the same destination clears it too.
            let _ = self.clear();
        }
    }
}

/// A hidden file or directory next to the store: `<parent>/.<name>.<suffix>`.
pub(crate) fn sibling(store: &Path, suffix: &str) -> Result<PathBuf> {
    let name = store.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "store path {} does not end in a directory name",
            store.display()
        ))
    })?;
    let parent = match store.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut file = std::ffi::OsString::from(".");
    file.push(name);
    file.push(".");
    file.push(suffix);
    Ok(parent.join(file))
}

impl StoreLock {
    /// Takes the lock of the store at `store`, creating its parent directory if needed.
    ///
    /// # Errors
    /// [`Error::Locked`] when any other open still holds it after [`LOCK_WAIT`];
    /// [`Error::Io`] when the lock file cannot be created.
    pub(crate) fn acquire(store: &Path) -> Result<StoreLock> {
        let path = sibling(store, "kstate-lock")?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        // A process that forks right after the store was closed elsewhere in it shares the
        // lock's file description until its exec closes the copy (the file is O_CLOEXEC), so
        // contention is retried briefly before it is reported.
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        loop {
            match file.try_lock_exclusive() {
                Ok(()) => return Ok(StoreLock { _file: file }),
                Err(e) if e.kind() == fs2::lock_contended_error().kind() => {
                    if std::time::Instant::now() >= deadline {
                        return Err(Error::Locked {
                            path: store.to_path_buf(),
                            detail: format!(
                                "{} is held by another open of this store",
                                path.display()
                            ),
                        });
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("nested").join("s");
        let first = StoreLock::acquire(&store).unwrap();
        assert!(dir.path().join("nested").join(".s.kstate-lock").is_file());
        let err = StoreLock::acquire(&store).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::Locked, "{err}");
        drop(first);
        StoreLock::acquire(&store).unwrap();
        assert_eq!(
            sibling(Path::new("rel"), "x").unwrap(),
            PathBuf::from("./.rel.x")
        );
        assert!(sibling(Path::new("/"), "x").is_err());
    }
}
