//! All-or-nothing adoption: before any store of a Kafka Streams task is adopted, every
//! store of the task that kstate is about to open on a directory in Kafka's format is
//! checked, reading only, with the checks its adoption makes. Kafka initialises a task's
//! stores one after another, so without this a refusal of the second store would come after
//! the first was converted, leaving the task half switched.
//!
//! A store that stays on Kafka's own implementation (built with Kafka's supplier) is not
//! planned, so it is neither checked nor adopted. A plan that passes can still fail later
//! by I/O; each store's adoption is crash-safe on its own, so the task is then a mix of
//! adopted kstate stores and untouched Kafka stores, and the next open adopts the rest (or
//! [`crate::store::export`] hands the adopted ones back).

use std::path::{Path, PathBuf};

use super::adopt_segmented::{self, Target};
use super::adopt_versioned;
use super::open::check_kafka_store;
use super::{
    SessionOptions, StoreOptions, VersionedOptions, WindowOptions, SESSION_FAMILY, WINDOW_FAMILY,
};
use crate::engine::names;
use crate::engine::rocksdb::{probe, Probe};
use crate::engine::EngineKind;
use crate::{Error, Result};

/// A store about to be opened, as [`check_adoption`] checks it: its path and the options it
/// will be opened with.
#[derive(Debug, Clone)]
pub enum PlannedStore {
    /// A key-value store ([`crate::KvStore::open`]).
    KeyValue {
        /// The store's directory.
        path: PathBuf,
        /// Its options (the value format decides what is adopted).
        options: StoreOptions,
    },
    /// A window store ([`crate::store::WindowStore::open`]).
    Window {
        /// The store's directory.
        path: PathBuf,
        /// Its options (value format, retention and segment interval decide what is
        /// adopted).
        options: WindowOptions,
    },
    /// A session store ([`crate::store::SessionStore::open`]).
    Session {
        /// The store's directory.
        path: PathBuf,
        /// Its options (retention and segment interval decide what is adopted).
        options: SessionOptions,
    },
    /// A versioned store ([`crate::store::VersionedStore::open`]).
    Versioned {
        /// The store's directory.
        path: PathBuf,
        /// Its options (the engine and `adopt_left_open` decide what is adopted).
        options: VersionedOptions,
    },
}

impl PlannedStore {
    /// The store's directory.
    pub fn path(&self) -> &Path {
        match self {
            PlannedStore::KeyValue { path, .. }
            | PlannedStore::Window { path, .. }
            | PlannedStore::Session { path, .. }
            | PlannedStore::Versioned { path, .. } => path,
        }
    }

    /// Whether the store's directory holds a Kafka Streams store its open would adopt,
    /// checked, reading only, as the adoption checks it: `Ok(true)` when it would be
    /// adopted, `Ok(false)` when there is nothing of Kafka's to adopt (vacant, a kstate
    /// store, the memory engine).
    ///
    /// # Errors
    /// Why the adoption would refuse the directory (nothing was changed).
    pub fn check(&self) -> Result<bool> {
        match self {
            PlannedStore::KeyValue { path, options } => {
                if options.engine == EngineKind::Memory {
                    return Ok(false);
                }
                match probe(path)? {
                    Probe::Vacant => Ok(false),
                    // kstate's own store, or an adoption already under way: its open
                    // finishes it (with its checks) and nothing else waits on it.
                    Probe::Database(families) if families.iter().any(|n| n == names::META) => {
                        Ok(false)
                    }
                    Probe::Database(families) => {
                        check_kafka_store(path, &families, options)?;
                        Ok(true)
                    }
                }
            }
            PlannedStore::Window { path, options } => {
                options.validate()?;
                segmented(
                    path,
                    &options.store,
                    options.kind(),
                    options.retention_period,
                    WINDOW_FAMILY,
                    options.by_time(),
                )
            }
            PlannedStore::Versioned { path, options } => {
                if options.store.engine == EngineKind::Memory {
                    return Ok(false);
                }
                match probe(path)? {
                    Probe::Database(families) if adopt_versioned::kafka_families(&families) => {
                        adopt_versioned::check(path, &options.store)?;
                        Ok(true)
                    }
                    // Vacant, or kstate's own store (whose open finishes what it finds).
                    _ => Ok(false),
                }
            }
            PlannedStore::Session { path, options } => {
                options.validate()?;
                segmented(
                    path,
                    &options.plain_store(),
                    options.kind(),
                    options.retention_period,
                    SESSION_FAMILY,
                    options.by_time(),
                )
            }
        }
    }
}

fn segmented(
    path: &Path,
    store: &StoreOptions,
    kind: crate::format::meta::StoreKind,
    retention: i64,
    data: &str,
    by_time: Option<&str>,
) -> Result<bool> {
    if store.engine == EngineKind::Memory {
        return Ok(false);
    }
    let Some(segments) = adopt_segmented::kafka_segments(path)? else {
        return Ok(false);
    };
    let target = Target {
        kind,
        retention,
        data,
        by_time,
    };
    adopt_segmented::check(
        &segments,
        &target,
        store.value_format,
        store.adopt_left_open,
    )?;
    Ok(true)
}

/// Checks, before any of them is opened, that every store of `stores` whose directory
/// holds a Kafka Streams store would be adopted: the same checks as the adoption made by
/// each store's open, reading only (no file is written or opened for writing, not even
/// RocksDB's `LOG`). Opening the stores afterwards then either adopts all of them or fails
/// by I/O (each adoption is crash-safe on its own; the next open adopts the rest).
///
/// Returns the directories that the opens will adopt (empty when there is nothing of
/// Kafka's: kstate stores and vacant paths cost a directory listing, key-value stores a
/// read of RocksDB's manifest).
///
/// # Errors
/// When any store would be refused, one error naming every blocking store and why, with
/// the error code of the first ([`Error::FormatMismatch`], [`Error::Corruption`],
/// [`Error::Locked`] ...): nothing was changed and none should be opened.
pub fn check_adoption(stores: &[PlannedStore]) -> Result<Vec<PathBuf>> {
    let mut adopted = Vec::new();
    let mut blockers: Vec<(&Path, Error)> = Vec::new();
    for store in stores {
        match store.check() {
            Ok(true) => adopted.push(store.path().to_path_buf()),
            Ok(false) => {}
            Err(e) => blockers.push((store.path(), e)),
        }
    }
    let Some((_, first)) = blockers.first() else {
        return Ok(adopted);
    };
    let reasons: Vec<String> = blockers
        .iter()
        .map(|(path, e)| format!("{} is refused: {e}", path.display()))
        .collect();
    let message = format!(
        "kstate adopts the Kafka Streams stores of a task all together or not at all, and {} of \
         them cannot be adopted, so none was changed: {}",
        blockers.len(),
        reasons.join("; ")
    );
    Err(with_message(first, message))
}

/// An error of `like`'s code carrying `message`.
fn with_message(like: &Error, message: String) -> Error {
    match like {
        Error::Corruption(_) => Error::Corruption(message),
        Error::Storage(_) => Error::Storage(message),
        Error::Locked { path, .. } => Error::Locked {
            path: path.clone(),
            detail: message,
        },
        Error::NotAStore { path, .. } => Error::NotAStore {
            path: path.clone(),
            reason: message,
        },
        Error::Io { path, source } => Error::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), message),
        },
        Error::InvalidArgument(_) => Error::InvalidArgument(message),
        _ => Error::FormatMismatch(message),
    }
}
