//! Checkpoints of committed state: a consistent copy of a running RocksDB store in a new
//! local directory, taken without stopping its writer (a backup, and what a later upload
//! of checkpoints builds on).
//!
//! The copy is a RocksDB checkpoint (memtables flushed, table files hard-linked, the rest
//! copied) written to a hidden sibling of the destination. Writers go on meanwhile, so the
//! copy is a point in time that may hold a spilled commit being rolled forward, a spill
//! area of a transaction that never committed, or an unlogged restore batch: exactly what
//! a kill at that instant would leave. The copy is therefore opened privately and recovered
//! as after a crash, its committed state read, and closed cleanly; only then is it renamed
//! to the destination. The destination thus never holds half a copy, opens as a normal store
//! with nothing to roll forward, and holds one whole commit: the last one the store had
//! when the checkpoint was called, or a later one.
//!
//! One point in time cannot be recovered from a copy: a large restore ingests a staged
//! file that RocksDB's checkpoint does not copy (it did not make it), so a copy taken
//! between the restore's recorded intent and its commit would complete the intent without
//! its data, with offsets ahead of the data. An ingestion therefore waits while the engine
//! copies (a restore pauses for the length of the copy; writers and commits never do), and
//! a copy that still holds an intent is discarded and taken again, never kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::lock::{sibling, sync_dir, Staging, StoreLock};
use crate::engine::rocksdb::{RocksEngine, RocksOptions};
use crate::engine::{names, Engine};
use crate::format::meta::{self, CommittedState};
use crate::format::TopicPartition;
use crate::txn::TxnCore;
use crate::{Error, Result};

/// Copies discarded because they caught a restore's ingestion before one is kept.
const ATTEMPTS: u32 = 5;

/// What a checkpoint holds: the commit it reflects and its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// The directory holding the copy (the destination given).
    pub path: PathBuf,
    /// Sequence number of the commit the copy holds (see `commit_sequence`); 0 when the
    /// store had never committed.
    pub sequence: u64,
    /// The changelog offsets of that commit, ordered by topic and partition.
    pub offsets: Vec<(TopicPartition, i64)>,
    /// The metadata blob of that commit (Kafka's serialized `Position`), if any.
    pub metadata: Option<Vec<u8>>,
    /// Window, session and versioned stores: the stream time of that commit.
    pub stream_time: Option<i64>,
    /// Every file of the copy, ordered by name (the directory has no subdirectories).
    pub files: Vec<CheckpointFile>,
}

/// One file of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointFile {
    /// The file's name inside the checkpoint directory.
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
}

impl CheckpointInfo {
    /// The sum of the files' sizes. Table files are hard links shared with the store
    /// (until compaction replaces them there), so this is not the extra disk space used.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// Writes a checkpoint of the store whose transaction layer is `core` to the new directory
/// `dest` (see the module documentation).
///
/// # Errors
/// [`Error::InvalidArgument`] when `dest` exists or names no directory;
/// [`Error::Locked`] while another checkpoint to `dest`, or an open of a store there, is in
/// progress; [`Error::Unsupported`] for a memory store; [`Error::Storage`] when every
/// attempt caught a restore's ingestion; storage and I/O errors of the copy. On error
/// nothing is left at `dest`.
pub(crate) fn take(core: &TxnCore, dest: &Path) -> Result<CheckpointInfo> {
    if dest.as_os_str().is_empty() {
        return Err(Error::InvalidArgument(
            "the checkpoint path is empty: name a new directory".into(),
        ));
    }
    // Refused before anything is created beside it.
    if !core.engine().can_checkpoint() {
        return Err(Error::Unsupported(
            "a memory store has no files to checkpoint; only RocksDB stores can be copied".into(),
        ));
    }
    // The destination's lock (the one a store opened there takes) keeps two checkpoints to
    // the same place apart, so the fixed staging name is ours to clear.
    let _lock = StoreLock::acquire(dest)?;
    if std::fs::symlink_metadata(dest).is_ok() {
        return Err(Error::InvalidArgument(format!(
            "checkpoint destination {} already exists: a checkpoint goes to a new directory",
            dest.display()
        )));
    }
    let dir = sibling(dest, "kstate-checkpoint")?;
    let mut staging = Staging::new(dir.clone());
    // Left by a checkpoint that was killed.
    staging.clear()?;
    let mut attempt = 1;
    let state = loop {
        core.checkpoint(&dir)?;
        crate::failpoint::hit("checkpoint-copied");
        match settle(&dir, core)? {
            Some(state) => break state,
            None if attempt < ATTEMPTS => {
                staging.clear()?;
                attempt += 1;
                // The restore ingests under the writer's lock: once it can be taken, the
                // ingestion has finished.
                core.wait_for_writer();
            }
            None => {
                return Err(Error::Storage(format!(
                    "{ATTEMPTS} checkpoint attempts each caught a restore ingesting a file; \
                     retry when the restore has finished"
                )))
            }
        }
    };
    let files = sync_files(&dir)?;
    sync_dir(&dir)?;
    crate::failpoint::hit("checkpoint-before-rename");
    std::fs::rename(&dir, dest).map_err(|e| Error::io(dest, e))?;
    staging.published();
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_dir(parent)?;
    }
    Ok(CheckpointInfo {
        path: dest.to_path_buf(),
        sequence: state.sequence,
        offsets: state.offsets.into_iter().collect(),
        metadata: state.metadata,
        stream_time: state.stream_time,
        files,
    })
}

/// Recovers the copy in `dir` as an open after a crash would, closes it cleanly and returns
/// the commit it holds; `None` when it caught a restore's ingestion (see the module
/// documentation) and must be taken again.
fn settle(dir: &Path, core: &TxnCore) -> Result<Option<CommittedState>> {
    let options = RocksOptions {
        // A short private open: a small cache of its own, not the store's budget.
        block_cache_bytes: 1 << 20,
        ..RocksOptions::default()
    };
    let engine = RocksEngine::open(dir, &[], &options)?;
    let meta_family = engine.registry().require(names::META)?;
    if engine.get(meta_family, meta::KEY_INGEST)?.is_some() {
        return Ok(None);
    }
    let (copy, _) = TxnCore::recover(Arc::new(engine), core.config())?;
    let state = copy.committed()?;
    copy.close()?;
    Ok(Some(state))
}

/// Makes every file of `dir` durable and lists it.
fn sync_files(dir: &Path) -> Result<Vec<CheckpointFile>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let file = std::fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
        file.sync_all().map_err(|e| Error::io(&path, e))?;
        let bytes = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        files.push(CheckpointFile {
            name: entry.file_name().to_string_lossy().into_owned(),
            bytes,
        });
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::BatchOp;
    use crate::format::meta::PendingIngest;
    use crate::{KvStore, StoreOptions};

    /// A copy that caught a restore between its recorded intent and its commit would
    /// complete the intent without the staged file: it is never kept.
    #[test]
    fn a_copy_holding_an_ingest_intent_is_retaken_or_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = KvStore::open(tmp.path().join("s"), &StoreOptions::default()).unwrap();
        store.put(b"k", b"v", 1).unwrap();
        let tp = TopicPartition::new("t", 0);
        store.commit(&[(tp.clone(), Some(5))], None).unwrap();
        // What a restore's intent looks like while its file is staged (the file itself is
        // never in a checkpoint).
        let intent = PendingIngest {
            family: names::TIMESTAMPED.to_string(),
            file: "kstate-restore-2.sst".to_string(),
            state: CommittedState {
                sequence: 2,
                offsets: [(tp.clone(), 500)].into_iter().collect(),
                metadata: None,
                stream_time: None,
            },
        }
        .encode()
        .unwrap();
        store
            .with_core(|c| {
                let m = c.engine().registry().require(names::META)?;
                c.engine()
                    .write(&[BatchOp::Put(m, meta::KEY_INGEST, &intent)], true)
            })
            .unwrap();
        let dest = tmp.path().join("c");
        let err = store.checkpoint(&dest).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::Storage, "{err}");
        assert!(err.to_string().contains("restore"), "{err}");
        assert!(!dest.exists());
        assert!(!sibling(&dest, "kstate-checkpoint").unwrap().exists());
        // Once the restore has finished (here: its intent is gone), the checkpoint works
        // and holds the commit with its true offsets.
        store
            .with_core(|c| {
                let m = c.engine().registry().require(names::META)?;
                c.engine()
                    .write(&[BatchOp::Delete(m, meta::KEY_INGEST)], true)
            })
            .unwrap();
        let info = store.checkpoint(&dest).unwrap();
        assert_eq!(info.offsets, vec![(tp, 5)]);
        assert_eq!(info.sequence, 1);
    }
}
