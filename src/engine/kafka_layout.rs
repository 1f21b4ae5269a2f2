//! Turning a private copy of a kstate RocksDB database into the layout of Kafka Streams'
//! own key-value stores (`kstate export --to kafka`): only Kafka's column families, Kafka's
//! `offsets` family written afresh, and every table file in a `format_version` Kafka's
//! RocksDB reads.
//!
//! The copy is a RocksDB checkpoint (table files hard-linked, see
//! [`super::rocksdb::RocksEngine::checkpoint`]): what is kept is not rewritten, only tables
//! of a newer format (written by kstate before it pinned [`KAFKA_TABLE_FORMAT_VERSION`]) are, by
//! a forced compaction of their family.

use std::path::Path;

use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, ColumnFamilyDescriptor, CompactOptions,
    DBCompressionType, FlushOptions, Options, WriteBatch, WriteOptions, DB,
};

use super::names;
use super::rocksdb::{map_err, table_files};
use crate::{Error, Result};

/// The newest block-based table `format_version` Kafka Streams 4.4's RocksDB (rocksdbjni
/// 10.1.3) reads: 7 needs RocksDB 10.4 (`Corrupt or unsupported format_version: 7`).
pub(crate) const KAFKA_TABLE_FORMAT_VERSION: u32 = 6;

/// RocksDB's block-based table magic number, the last 8 bytes (little-endian) of a table.
const BLOCK_BASED_MAGIC: u64 = 0x88e2_41b7_85f4_cff7;

/// The block-based table `format_version` of the table file at `path`, from its footer:
/// every footer of version 1 or later ends with the version (fixed32) and the magic
/// number (fixed64), both little-endian.
///
/// # Errors
/// [`Error::Corruption`] for a file too short or not a block-based table.
pub(crate) fn table_format_version(path: &Path) -> Result<u32> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut tail = [0u8; 12];
    file.seek(SeekFrom::End(-12))
        .and_then(|_| file.read_exact(&mut tail))
        .map_err(|e| Error::Corruption(format!("{}: no table footer ({e})", path.display())))?;
    let mut magic = [0u8; 8];
    magic.copy_from_slice(&tail[4..]);
    if u64::from_le_bytes(magic) != BLOCK_BASED_MAGIC {
        return Err(Error::Corruption(format!(
            "{} is not a block-based table file",
            path.display()
        )));
    }
    Ok(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]))
}

/// The table files directly in `dir` whose format Kafka's RocksDB cannot read (newer than
/// [`KAFKA_TABLE_FORMAT_VERSION`]), by file name. A file without a table footer is not
/// counted: it is the remains of a flush or compaction killed midway, which no manifest
/// names and RocksDB deletes on its next open.
pub(crate) fn newer_tables(dir: &Path) -> Result<Vec<String>> {
    let mut out: Vec<String> = table_files(dir)?
        .into_iter()
        .filter(|path| table_format_version(path).is_ok_and(|v| v > KAFKA_TABLE_FORMAT_VERSION))
        .filter_map(|path| path.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    out.sort();
    Ok(out)
}

/// Options for new tables of the copy: kstate's (no compression, 4 KiB blocks, a bloom
/// filter of 10 bits per key, as Kafka's) at [`KAFKA_TABLE_FORMAT_VERSION`].
fn table_options() -> Options {
    let mut table = BlockBasedOptions::default();
    table.set_format_version(KAFKA_TABLE_FORMAT_VERSION as i32);
    table.set_block_size(4096);
    table.set_bloom_filter(10.0, false);
    let mut o = Options::default();
    o.set_block_based_table_factory(&table);
    o.set_compression_type(DBCompressionType::None);
    o.set_disable_auto_compactions(true);
    o
}

fn family<'a>(db: &'a DB, name: &str) -> Result<&'a rocksdb::ColumnFamily> {
    db.cf_handle(name)
        .ok_or_else(|| Error::Internal(format!("column family {name} is not open")))
}

/// What [`rewrite_as_kafka`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rewritten {
    /// Column families dropped (kstate's own, empty older-format families).
    pub dropped: Vec<String>,
    /// Table files of a newer format rewritten by compaction.
    pub tables_rewritten: usize,
}

/// Rewrites the database at `dir`, a copy nobody else opens, into a Kafka Streams
/// key-value store: keeps `default`, the families in `keep` and those in
/// `keep_if_nonempty` that hold an entry (an older format's family in upgrade mode), drops
/// every other one
/// (kstate's, and Kafka's `offsets`, which is then created again holding exactly
/// `offsets`), compacts every family holding a table of a newer format than Kafka reads,
/// flushes everything (no write-ahead log is left to replay) and syncs the directory.
///
/// # Errors
/// [`Error::Storage`] / [`Error::Io`] from RocksDB and the file system;
/// [`Error::Internal`] when a newer-format table survives the compaction.
pub(crate) fn rewrite_as_kafka(
    dir: &Path,
    keep: &[&str],
    keep_if_nonempty: &[&str],
    offsets: &[(Vec<u8>, Vec<u8>)],
) -> Result<Rewritten> {
    let err = |e: rocksdb::Error| map_err(dir, e);
    let families = DB::list_cf(&Options::default(), dir).map_err(err)?;
    let cf_opts = table_options();
    let mut db_opts = cf_opts.clone();
    db_opts.create_if_missing(false);
    db_opts.set_log_level(rocksdb::LogLevel::Error);
    let descriptors = families
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(n, cf_opts.clone()));
    let mut db = DB::open_cf_descriptors(&db_opts, dir, descriptors).map_err(err)?;
    let mut out = Rewritten::default();
    let mut kept: Vec<&str> = keep.to_vec();
    for name in keep_if_nonempty {
        if let Some(cf) = db.cf_handle(name) {
            let mut it = db.raw_iterator_cf(cf);
            it.seek_to_first();
            it.status().map_err(err)?;
            if it.valid() {
                kept.push(name);
            }
        }
    }
    for name in &families {
        if name != names::PLAIN && !kept.contains(&name.as_str()) {
            db.drop_cf(name).map_err(err)?;
            if name != names::KAFKA_OFFSETS {
                out.dropped.push(name.clone());
            }
        }
    }
    db.create_cf(names::KAFKA_OFFSETS, &cf_opts).map_err(err)?;
    {
        let cf = family(&db, names::KAFKA_OFFSETS)?;
        let mut batch = WriteBatch::default();
        for (k, v) in offsets {
            batch.put_cf(cf, k, v);
        }
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        db.write_opt(batch, &wo).map_err(err)?;
    }
    let mut live: Vec<&str> = vec![names::PLAIN, names::KAFKA_OFFSETS];
    live.extend(kept.iter().filter(|n| families.iter().any(|f| f == *n)));
    let mut fo = FlushOptions::default();
    fo.set_wait(true);
    for name in &live {
        db.flush_cf_opt(family(&db, name)?, &fo).map_err(err)?;
    }
    let newer = newer_tables(dir)?;
    if !newer.is_empty() {
        let files = db.live_files().map_err(err)?;
        let mut co = CompactOptions::default();
        co.set_exclusive_manual_compaction(true);
        co.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        for name in &live {
            let affected = files
                .iter()
                .filter(|f| {
                    f.column_family_name == *name
                        && newer.iter().any(|n| f.name.trim_start_matches('/') == n)
                })
                .count();
            if affected > 0 {
                db.compact_range_cf_opt(family(&db, name)?, None::<&[u8]>, None::<&[u8]>, &co);
                out.tables_rewritten += affected;
            }
        }
    }
    drop(db);
    let left = newer_tables(dir)?;
    if !left.is_empty() {
        return Err(Error::Internal(format!(
            "table files {left:?} in {} are still newer than format_version \
             {KAFKA_TABLE_FORMAT_VERSION} after their compaction",
            dir.display()
        )));
    }
    sync_tree(dir)?;
    Ok(out)
}

/// Syncs every file directly in `dir`, then `dir` itself: hard-linked tables and the files
/// RocksDB wrote are on disk before the directory is moved into place.
pub(crate) fn sync_tree(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_file() {
            std::fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| Error::io(&path, e))?;
        }
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database like a kstate store written before kstate pinned its table format: its
    /// tables are `format_version` 7, which Kafka 4.4's RocksDB refuses.
    fn old_kstate_store(dir: &Path) {
        let mut table = BlockBasedOptions::default();
        table.set_format_version(7);
        let mut o = Options::default();
        o.set_block_based_table_factory(&table);
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let db = DB::open_cf(&o, dir, [names::TIMESTAMPED, names::META]).unwrap();
        for (family, n) in [
            (names::TIMESTAMPED, 500u32),
            (names::META, 3),
            (names::PLAIN, 7),
        ] {
            let cf = db.cf_handle(family).unwrap();
            for i in 0..n {
                db.put_cf(cf, format!("{family}-{i:05}"), i.to_be_bytes())
                    .unwrap();
            }
            db.flush_cf(cf).unwrap();
        }
    }

    fn entries(dir: &Path, family: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
        let families = DB::list_cf(&Options::default(), dir).unwrap();
        let db = DB::open_cf_for_read_only(&Options::default(), dir, &families, false).unwrap();
        let cf = db.cf_handle(family).unwrap();
        db.iterator_cf(cf, rocksdb::IteratorMode::Start)
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect()
    }

    #[test]
    fn old_tables_are_rewritten_and_only_kafkas_families_are_left() {
        let dir = tempfile::tempdir().unwrap();
        old_kstate_store(dir.path());
        let before = entries(dir.path(), names::TIMESTAMPED);
        let plain = entries(dir.path(), names::PLAIN);
        assert_eq!(
            newer_tables(dir.path()).unwrap().len(),
            3,
            "one v7 table per family"
        );
        let offsets = vec![(b"t-0".to_vec(), 5i64.to_be_bytes().to_vec())];
        let done = rewrite_as_kafka(
            dir.path(),
            &[names::TIMESTAMPED],
            &[names::HEADERS],
            &offsets,
        )
        .unwrap();
        assert_eq!(done.dropped, vec![names::META.to_string()]);
        assert_eq!(
            done.tables_rewritten, 2,
            "the meta family's table went with its family"
        );
        assert_eq!(newer_tables(dir.path()).unwrap(), Vec::<String>::new());
        let mut families = DB::list_cf(&Options::default(), dir.path()).unwrap();
        families.sort();
        assert_eq!(families, ["default", "keyValueWithTimestamp", "offsets"]);
        assert_eq!(entries(dir.path(), names::TIMESTAMPED), before);
        assert_eq!(entries(dir.path(), names::PLAIN), plain);
        assert_eq!(entries(dir.path(), names::KAFKA_OFFSETS), offsets);
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "sst") {
                assert_eq!(
                    table_format_version(&p).unwrap(),
                    KAFKA_TABLE_FORMAT_VERSION
                );
            }
        }
        assert!(table_format_version(&dir.path().join("CURRENT")).is_err());
        // The remains of a flush killed midway are no table: not counted.
        std::fs::write(dir.path().join("999999.sst"), b"").unwrap();
        assert_eq!(newer_tables(dir.path()).unwrap(), Vec::<String>::new());
    }
}
