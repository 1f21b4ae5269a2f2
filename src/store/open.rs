//! Opening a store: recognising what is on disk, adopting Kafka Streams' own RocksDB
//! stores, creating new ones, and refusing everything else before changing it.

use std::path::Path;
use std::sync::Arc;

use crate::engine::memory::MemoryEngine;
use crate::engine::rocksdb::{probe, Probe, RocksEngine};
use crate::engine::{BatchOp, Engine, Family, KeyRange};
use crate::format::meta::{self, StoreHeader, ValueFormat, FORMAT_VERSION};
use crate::store::StoreOptions;
use crate::{Error, Result};

/// The data family of a value format.
pub(crate) fn data_family(format: ValueFormat) -> Family {
    match format {
        ValueFormat::Plain => Family::Plain,
        ValueFormat::Timestamped => Family::Timestamped,
    }
}

fn header_for(format: ValueFormat) -> Vec<u8> {
    StoreHeader {
        format_version: FORMAT_VERSION,
        value_format: format,
    }
    .encode()
}

/// A fresh in-memory engine with its header.
pub(crate) fn open_memory(options: &StoreOptions) -> Result<Arc<dyn Engine>> {
    let engine = MemoryEngine::new();
    engine.write(
        &[BatchOp::Put(
            Family::Meta,
            meta::KEY_HEADER,
            &header_for(options.value_format),
        )],
        false,
    )?;
    Ok(Arc::new(engine))
}

fn family_has_entries(engine: &RocksEngine, family: Family) -> Result<bool> {
    Ok(engine
        .iter(family, &KeyRange::all(), false)?
        .next_entry()?
        .is_some())
}

/// Opens the RocksDB store at `path`, creating it if the path is vacant.
///
/// Creating or adopting a store adds kstate's column families first and writes the header
/// second, so a crash in between leaves an empty `kstate_meta` family. kstate writes the
/// header before any other record, so such a store is treated as not yet created (or not
/// yet adopted) and the creation is redone, checks included.
pub(crate) fn open_rocksdb(path: &Path, options: &StoreOptions) -> Result<Arc<dyn Engine>> {
    let format = options.value_format;
    let wanted = [data_family(format), Family::Meta, Family::Spill];
    let existing = match probe(path)? {
        Probe::Vacant => Vec::new(),
        Probe::Database(families) => families,
    };
    let has = |f: Family| existing.iter().any(|n| n == f.cf_name());
    if has(Family::Meta) {
        let engine = RocksEngine::open(path, &wanted, &options.rocksdb)?;
        match engine.get(Family::Meta, meta::KEY_HEADER)? {
            Some(raw) => {
                let header = StoreHeader::decode(&raw)?;
                if header.value_format != format {
                    return Err(Error::FormatMismatch(format!(
                        "store at {} was created {} and cannot be opened {}",
                        path.display(),
                        header.value_format.name(),
                        format.name()
                    )));
                }
                return Ok(Arc::new(engine));
            }
            None if family_has_entries(&engine, Family::Meta)? => {
                return Err(Error::Corruption(
                    "kstate metadata column family has records but no header".into(),
                ));
            }
            None => check_adoptable(path, &engine, format)?,
        }
        drop(engine);
    } else if !existing.is_empty() {
        // A Kafka Streams RocksDB store (RocksDBStore or RocksDBTimestampedStore): look at
        // it with only its own families before adding ours.
        check_adoptable(
            path,
            &RocksEngine::open(path, &[], &options.rocksdb)?,
            format,
        )?;
    }
    let engine = RocksEngine::open(path, &wanted, &options.rocksdb)?;
    engine.write(
        &[BatchOp::Put(
            Family::Meta,
            meta::KEY_HEADER,
            &header_for(format),
        )],
        true,
    )?;
    Ok(Arc::new(engine))
}

/// Refuses a store whose existing values are in the other format.
fn check_adoptable(path: &Path, engine: &RocksEngine, format: ValueFormat) -> Result<()> {
    let (other, other_name) = match format {
        ValueFormat::Plain => (Family::Timestamped, "timestamped"),
        ValueFormat::Timestamped => (Family::Plain, "plain"),
    };
    if engine.has_family(other) && family_has_entries(engine, other)? {
        return Err(Error::FormatMismatch(format!(
            "Kafka Streams store at {} holds {other_name} values in column family '{}'; it \
             cannot be opened {} without an upgrade",
            path.display(),
            other.cf_name(),
            format.name()
        )));
    }
    Ok(())
}
