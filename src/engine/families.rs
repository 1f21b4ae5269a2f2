//! Lists the column families of a RocksDB database through RocksDB's C API directly.
//!
//! rust-rocksdb 0.25's `DB::list_cf` leaks on every failure: RocksDB's
//! `rocksdb_list_column_families` returns an array (`malloc` of zero entries, a real
//! allocation) even when it reports an error, and `list_cf` returns early without giving
//! it back. A store whose manifest fails its checksum, opened again and again by a caller
//! that retries, leaked one block per attempt. This call frees everything on both paths.

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::path::Path;

use librocksdb_sys as ffi;

use crate::{Error, Result};

/// The names of the column families of the database at `path`, read from its manifest;
/// nothing is written there (no `LOG` either).
///
/// # Errors
/// RocksDB's refusal as [`super::rocksdb::map_message`] maps it ([`Error::Corruption`] for
/// a damaged manifest, [`Error::Storage`] otherwise); [`Error::InvalidArgument`] for a path
/// holding a NUL byte.
pub(crate) fn list(path: &Path) -> Result<Vec<String>> {
    let c_path = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::InvalidArgument(format!("{} contains a NUL byte", path.display())))?;
    let mut len: usize = 0;
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: `rocksdb_options_create` has no preconditions; the options are destroyed
    // below, once, after their only use.
    let options = unsafe { ffi::rocksdb_options_create() };
    // SAFETY: `options` is a live options object, `c_path` a NUL-terminated string that
    // outlives the call, `len` and `err` valid out-parameters. RocksDB copies what it keeps.
    let list =
        unsafe { ffi::rocksdb_list_column_families(options, c_path.as_ptr(), &mut len, &mut err) };
    // SAFETY: created above and not used after this.
    unsafe { ffi::rocksdb_options_destroy(options) };
    let names = if err.is_null() && !list.is_null() {
        // SAFETY: on success `list` holds `len` NUL-terminated strings that RocksDB
        // allocated; they are copied before the list is destroyed below.
        let entries = unsafe { std::slice::from_raw_parts(list, len) };
        // SAFETY: each entry is one of those strings, alive until the destroy below.
        let names = entries
            .iter()
            .map(|&p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            .collect();
        Ok(names)
    } else if err.is_null() {
        Err(Error::Storage(format!(
            "RocksDB listed no column families of {}",
            path.display()
        )))
    } else {
        // SAFETY: RocksDB set `err` to a NUL-terminated string it allocated with malloc;
        // it is copied here and freed with `rocksdb_free` just after.
        let message = unsafe { CStr::from_ptr(err) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: `err` came from RocksDB and is freed once, with RocksDB's free.
        unsafe { ffi::rocksdb_free(err.cast()) };
        Err(super::rocksdb::map_message(path, message))
    };
    if !list.is_null() {
        // SAFETY: `list` and `len` are what RocksDB returned (on failure too: the array is
        // allocated either way, with `len` entries, zero on failure); nothing borrows them
        // any more.
        unsafe { ffi::rocksdb_list_column_families_destroy(list, len) };
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rocksdb::{RocksEngine, RocksOptions};
    use crate::ErrorCode;

    #[test]
    fn lists_the_families_of_a_database() {
        let dir = tempfile::tempdir().unwrap();
        drop(RocksEngine::open(dir.path(), &["one", "two"], &RocksOptions::default()).unwrap());
        let mut names = list(dir.path()).unwrap();
        names.sort();
        assert_eq!(names, ["default", "one", "two"]);
    }

    /// A manifest whose records fail their checksum: every attempt is `CORRUPTION` (and,
    /// checked under valgrind and LSan, leaks nothing).
    #[test]
    fn a_damaged_manifest_is_corruption_every_time() {
        let dir = tempfile::tempdir().unwrap();
        drop(RocksEngine::open(dir.path(), &["one"], &RocksOptions::default()).unwrap());
        corrupt_manifest(dir.path());
        for _ in 0..100 {
            let err = list(dir.path()).unwrap_err();
            assert_eq!(err.code(), ErrorCode::Corruption, "{err}");
        }
        let missing = list(&dir.path().join("missing")).unwrap_err();
        assert_eq!(missing.code(), ErrorCode::Storage, "{missing}");
    }

    /// Flips bytes of the first record of the manifest `CURRENT` names, after its 7-byte
    /// header: a checksum that cannot match (a damaged last record could pass for a write
    /// cut short).
    fn corrupt_manifest(dir: &Path) {
        let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
        let manifest = dir.join(current.trim());
        let mut bytes = std::fs::read(&manifest).unwrap();
        for b in &mut bytes[7..15] {
            *b ^= 0x5A;
        }
        std::fs::write(&manifest, bytes).unwrap();
    }
}
