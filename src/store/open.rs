//! Opening a store: taking kstate's lock, recognising what is on disk, creating new stores
//! atomically, adopting Kafka Streams' own RocksDB stores by allow-list, and refusing
//! everything else before changing anything.
//!
//! * **Creation** happens in a hidden sibling directory (`.<name>.kstate-new`) that is
//!   renamed into place once complete, so a kill at any instant leaves either no store or a
//!   whole one; a leftover sibling is removed by the next open (which holds the lock).
//! * **Adoption** accepts exactly the column-family sets of Kafka Streams 4.0-4.4's
//!   `RocksDBStore` (`default`), `RocksDBTimestampedStore` (`default`,
//!   `keyValueWithTimestamp`) and 4.3+ `RocksDBTimestampedStoreWithHeaders` (`default`,
//!   `keyValueWithTimestampAndHeaders`, and `keyValueWithTimestamp` while it upgrades), each
//!   with or without the 4.3+ `offsets` family, decided on a
//!   read-only open. Their committed offsets and position become kstate's. Adding kstate's
//!   families and writing its header are two steps; an empty `kstate_meta` family therefore
//!   means "adoption interrupted" and the adoption is redone, checks included.
//! * **Kafka's window and session stores** (a directory of segment databases) are converted
//!   into a kstate store built beside them and swapped in atomically
//!   ([`super::adopt_segmented`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::adopt_segmented;
use super::kafka;
use super::lock::{sibling, StoreLock};
use crate::engine::memory::MemoryEngine;
use crate::engine::rocksdb::{lock_holder, probe, table_files, Probe, RocksEngine};
use crate::engine::{has_entries, names, BatchOp, Engine, Family};
use crate::format::meta::{self, CommittedState, StoreHeader, StoreKind, ValueFormat};
use crate::store::segmented::{SegmentBudget, SESSION_BY_TIME_FAMILY, WINDOW_BY_TIME_FAMILY};
use crate::store::StoreOptions;
use crate::{Error, Result};

/// An engine ready for the transaction layer.
pub(crate) struct Opened {
    /// The engine, with kstate's meta and spill families.
    pub engine: Arc<dyn Engine>,
    /// The family holding the store's values.
    pub data: Family,
    /// Upgrade mode: the family of plain values a timestamped store still reads.
    pub legacy: Option<Family>,
    /// kstate's lock on the store path (none in memory).
    pub lock: Option<StoreLock>,
}

/// The column family holding values of `format`.
pub(crate) fn data_family_name(format: ValueFormat) -> &'static str {
    match format {
        ValueFormat::Plain => names::PLAIN,
        ValueFormat::Timestamped => names::TIMESTAMPED,
        ValueFormat::Headers => names::HEADERS,
    }
}

/// The value format of the data family named `name`, if it is one.
pub(crate) fn family_format(name: &str) -> Option<ValueFormat> {
    match name {
        names::PLAIN => Some(ValueFormat::Plain),
        names::TIMESTAMPED => Some(ValueFormat::Timestamped),
        names::HEADERS => Some(ValueFormat::Headers),
        _ => None,
    }
}

/// In a store of `format`, the one family of an older format that still holds values
/// (upgrade mode), or `None` in regular mode.
///
/// # Errors
/// [`Error::FormatMismatch`] when two older families hold values (a store opened as headers
/// while its plain -> timestamped upgrade is unfinished): as Kafka's
/// `RocksDBTimestampedStoreWithHeaders`, kstate upgrades one step at a time.
pub(crate) fn legacy_family(engine: &dyn Engine, format: ValueFormat) -> Result<Option<Family>> {
    let mut found: Option<(Family, &str)> = None;
    for old in [ValueFormat::Plain, ValueFormat::Timestamped] {
        if old.rank() >= format.rank() {
            continue;
        }
        let name = data_family_name(old);
        let Some(f) = engine.registry().find(name) else {
            continue;
        };
        if !has_entries(engine, f)? {
            continue;
        }
        if let Some((_, first)) = found {
            return Err(Error::FormatMismatch(format!(
                "the store holds values in both '{first}' and '{name}': finish its upgrade to \
                 {} (kstate upgrade DIR, or open it {} until it runs in regular mode) before \
                 opening it {}",
                ValueFormat::Timestamped.name(),
                ValueFormat::Timestamped.name(),
                format.name()
            )));
        }
        found = Some((f, name));
    }
    Ok(found.map(|(f, _)| f))
}

fn header_for(format: ValueFormat) -> Vec<u8> {
    StoreHeader::new(format, StoreKind::KeyValue).encode()
}

/// A fresh in-memory engine with its header.
pub(crate) fn open_memory(options: &StoreOptions) -> Result<Opened> {
    open_memory_kind(
        options,
        StoreKind::KeyValue,
        data_family_name(options.value_format),
    )
}

/// A fresh in-memory engine for a store of `kind` whose values live in family `data`.
pub(crate) fn open_memory_kind(
    options: &StoreOptions,
    kind: StoreKind,
    data: &str,
) -> Result<Opened> {
    open_memory_families(options, kind, data, None, &[])
}

/// [`open_memory_kind`] with the time index family `by_time` of a time-ordered store and
/// the `more` families of a kind that has several (a versioned store).
pub(crate) fn open_memory_families(
    options: &StoreOptions,
    kind: StoreKind,
    data: &str,
    by_time: Option<&str>,
    more: &[&str],
) -> Result<Opened> {
    let mut families = vec![names::META, names::SPILL, data];
    families.extend(by_time);
    families.extend(more);
    let engine = MemoryEngine::new(&families)?;
    write_header(&engine, options.value_format, kind, false)?;
    let data = engine.registry().require(data)?;
    Ok(Opened {
        engine: Arc::new(engine),
        data,
        legacy: None,
        lock: None,
    })
}

/// Writes a new segmented store's header (its value format and kind) to `engine`, synced
/// when `sync`.
fn write_header(
    engine: &impl Engine,
    format: ValueFormat,
    kind: StoreKind,
    sync: bool,
) -> Result<()> {
    let meta = engine.registry().require(names::META)?;
    let header = StoreHeader::new(format, kind).encode();
    engine.write(&[BatchOp::Put(meta, meta::KEY_HEADER, &header)], sync)
}

/// Locks the store at `path` for this open and clears what a killed process left beside
/// it: a creation killed before its rename (its staging directory, returned for a new
/// creation to use) and an upgrade by swap or an adoption killed midway (finished or undone
/// by `swap::recover`, past its point of no return finished). We hold the lock, so nobody
/// else is using them.
fn take(path: &Path) -> Result<(StoreLock, PathBuf)> {
    let lock = StoreLock::acquire(path)?;
    let staging = sibling(path, "kstate-new")?;
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    }
    super::swap::recover(path)?;
    Ok((lock, staging))
}

/// Opens the RocksDB store at `path`, creating it if the path is vacant.
pub(crate) fn open_rocksdb(path: &Path, options: &StoreOptions) -> Result<Opened> {
    if path.as_os_str().is_empty() {
        return Err(Error::InvalidArgument("the store path is empty".into()));
    }
    // What is not a store is refused before the lock file is created next to it, and so is
    // a database kstate does not own yet while another process has it open.
    if let Probe::Database(families) = probe(path)? {
        if !families.iter().any(|n| n == names::META) {
            refuse_if_in_use(path)?;
        }
    }
    let (lock, staging) = take(path)?;
    let format = options.value_format;
    let existing = match probe(path)? {
        Probe::Vacant => {
            create(path, &staging, options)?;
            return finish_open(path, options, lock);
        }
        Probe::Database(families) => families,
    };
    if existing.iter().any(|n| n == names::META) {
        let tables = table_files(path)?;
        let engine = RocksEngine::open(path, &[names::META, names::SPILL], &options.rocksdb)?;
        let meta = engine.registry().require(names::META)?;
        match engine.get(meta, meta::KEY_HEADER)? {
            Some(raw) => {
                let header = StoreHeader::decode(&raw)?;
                if header.kind != StoreKind::KeyValue {
                    return Err(Error::FormatMismatch(format!(
                        "store at {} is a {} store, not a key-value store",
                        path.display(),
                        header.kind.name()
                    )));
                }
                if header.value_format == format {
                    return with_data(engine, format, lock);
                }
                if format.rank() < header.value_format.rank() {
                    return Err(Error::FormatMismatch(format!(
                        "store at {} was created {} and cannot be opened {}",
                        path.display(),
                        header.value_format.name(),
                        format.name()
                    )));
                }
                // An older kstate store opened in a later format: from now on it has that
                // format, in upgrade mode until its last old value is migrated (KIP-258,
                // KIP-1271). Refused first if two old families hold values. The family
                // comes first and the header second, so a kill in between leaves the old
                // store with an empty extra family, upgraded again by the next open.
                legacy_family(&engine, format)?;
                drop(engine);
                return with_data(open_with_header(path, options)?, format, lock);
            }
            None if has_entries(&engine, meta)? => {
                return Err(Error::Corruption(
                    "kstate metadata column family has records but no header".into(),
                ));
            }
            None => {
                drop(engine);
                refuse_if_tables_lost(path, &tables)?;
            }
        }
    }
    adopt(path, &existing, options)?;
    finish_open(path, options, lock)
}

/// Opens the existing kstate store at `path` whose lock the caller holds.
pub(crate) fn finish_open(path: &Path, options: &StoreOptions, lock: StoreLock) -> Result<Opened> {
    let engine = RocksEngine::open(path, &[names::META, names::SPILL], &options.rocksdb)?;
    with_data(engine, options.value_format, lock)
}

fn with_data(engine: RocksEngine, format: ValueFormat, lock: StoreLock) -> Result<Opened> {
    let data = engine
        .registry()
        .find(data_family_name(format))
        .ok_or_else(|| {
            Error::Corruption(format!(
                "the store has no {} column family for its values",
                data_family_name(format)
            ))
        })?;
    // A store with values left in an older format's family runs in upgrade mode.
    let legacy = legacy_family(&engine, format)?;
    Ok(Opened {
        engine: Arc::new(engine),
        data,
        legacy,
        lock: Some(lock),
    })
}

/// Opens `path` with kstate's families and the data family of `options.value_format`
/// (creating what is missing), then writes that format's header, synced.
fn open_with_header(path: &Path, options: &StoreOptions) -> Result<RocksEngine> {
    let format = options.value_format;
    let engine = RocksEngine::open(
        path,
        &[names::META, names::SPILL, data_family_name(format)],
        &options.rocksdb,
    )?;
    let meta = engine.registry().require(names::META)?;
    engine.write(
        &[BatchOp::Put(meta, meta::KEY_HEADER, &header_for(format))],
        true,
    )?;
    Ok(engine)
}

/// Builds a new store in `staging` and renames it to `path`.
fn create(path: &Path, staging: &Path, options: &StoreOptions) -> Result<()> {
    drop(open_with_header(staging, options)?);
    publish(path, staging)
}

/// Renames the complete new store `staging` to `path`, durably.
fn publish(path: &Path, staging: &Path) -> Result<()> {
    crate::failpoint::hit("create-before-rename");
    if path.exists() {
        // Vacant means empty: a directory the caller made for us.
        std::fs::remove_dir(path).map_err(|e| Error::io(path, e))?;
    }
    std::fs::rename(staging, path).map_err(|e| Error::io(path, e))?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        // Make the rename itself durable.
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(parent, e))?;
    }
    Ok(())
}

/// Refuses a database that another process has open for writing (Kafka Streams' own store,
/// most often) before kstate opens it writable: RocksDB would rotate the owner's `LOG`
/// before finding its `LOCK` taken.
pub(crate) fn refuse_if_in_use(path: &Path) -> Result<()> {
    match lock_holder(path)? {
        Some(pid) => Err(Error::Locked {
            path: path.to_path_buf(),
            detail: format!(
                "process {pid} has the database open (it holds RocksDB's LOCK: Kafka Streams \
                 or another program); nothing was changed"
            ),
        }),
        None => Ok(()),
    }
}

/// An empty `kstate_meta` is what an adoption killed before its header leaves, and the next
/// open adopts again. It is also what a MANIFEST cut after its column-family records leaves:
/// RocksDB then opens every family empty and deletes the table files it no longer names,
/// the store's committed data among them. Table files the open made disappear tell the two
/// apart; the data is gone either way, but the caller learns it instead of finding an
/// empty store with no offset.
fn refuse_if_tables_lost(path: &Path, before: &[PathBuf]) -> Result<()> {
    let lost = before.iter().filter(|f| !f.exists()).count();
    if lost == 0 {
        return Ok(());
    }
    Err(Error::Corruption(format!(
        "{} has kstate metadata without its header, and opening it deleted {lost} table \
         file(s) its MANIFEST no longer names: the MANIFEST lost the store's files and the \
         committed data with them; delete the directory and restore it from the changelog",
        path.display()
    )))
}

/// The families Kafka Streams' key-value stores may have that kstate adopts.
const ADOPTABLE: [&str; 4] = [
    names::PLAIN,
    names::TIMESTAMPED,
    names::HEADERS,
    names::KAFKA_OFFSETS,
];

/// Every check [`adopt`] makes of the Kafka Streams store at `path` (families `existing`)
/// before it changes anything, reading only (a read-only RocksDB writes no file, not even
/// its `LOG`): the offsets and position it would import, or why it is refused.
pub(crate) fn check_kafka_store(
    path: &Path,
    existing: &[String],
    options: &StoreOptions,
) -> Result<kafka::KafkaOffsets> {
    let format = options.value_format;
    let foreign: Vec<&String> = existing
        .iter()
        .filter(|n| *n != names::META && *n != names::SPILL)
        .collect();
    let unknown: Vec<&str> = foreign
        .iter()
        .filter(|n| !ADOPTABLE.contains(&n.as_str()))
        .map(|n| n.as_str())
        .collect();
    if !unknown.is_empty() {
        return Err(Error::FormatMismatch(format!(
            "{} has column families {unknown:?} that neither kstate nor Kafka Streams' \
             RocksDBStore/RocksDBTimestampedStore/RocksDBTimestampedStoreWithHeaders use; \
             kstate does not adopt it",
            path.display()
        )));
    }
    let imported = {
        let ro = RocksEngine::open_read_only_foreign(path, &options.rocksdb)?;
        let registry = ro.registry();
        // Values of an older format are upgraded lazily (as Kafka's RocksDBTimestampedStore
        // and RocksDBTimestampedStoreWithHeaders do); values of a later format cannot be
        // opened in an older one.
        for later in [ValueFormat::Timestamped, ValueFormat::Headers] {
            if later.rank() <= format.rank() {
                continue;
            }
            let name = data_family_name(later);
            if let Some(f) = registry.find(name) {
                if has_entries(&ro, f)? {
                    return Err(Error::FormatMismatch(format!(
                        "Kafka Streams store at {} holds {} values in column family '{name}'; \
                         it cannot be opened {}",
                        path.display(),
                        later.name(),
                        format.name()
                    )));
                }
            }
        }
        legacy_family(&ro, format)?;
        if let Some(plain) = registry.find(names::PLAIN) {
            if crate::store::kafka_versioned::looks_versioned(&ro, plain)? {
                return Err(Error::FormatMismatch(format!(
                    "{} is a Kafka Streams versioned key-value store (RocksDBVersionedStore: \
                     keys prefixed by a logical segment, rows of record versions), not a \
                     plain one; open it as a versioned store to adopt it (nothing was changed)",
                    path.display()
                )));
            }
        }
        match registry.find(names::KAFKA_OFFSETS) {
            Some(f) => kafka::read(&ro, f)?,
            None => kafka::KafkaOffsets::default(),
        }
    };
    // Kafka 4.4's RocksDBStore opens a store left open only under at-least-once, where
    // data ahead of its offsets is replayed harmlessly; `adopt_left_open` says the same.
    if imported.left_open && !options.adopt_left_open {
        return Err(Error::Corruption(format!(
            "Kafka Streams store at {} was left open (status 1 in its offsets column family): \
             its data may not match its offsets, and Kafka itself refuses it under exactly-once; \
             delete the directory to restore it from the changelog (under at-least-once, \
             adopt_left_open adopts it as Kafka opens it)",
            path.display()
        )));
    }
    refuse_if_in_use(path)?;
    Ok(imported)
}

/// Adopts the Kafka Streams store at `path` (families `existing`) in place, or refuses it
/// without changing anything.
fn adopt(path: &Path, existing: &[String], options: &StoreOptions) -> Result<()> {
    let format = options.value_format;
    let imported = check_kafka_store(path, existing, options)?;
    let engine = RocksEngine::open_foreign(
        path,
        &[names::META, names::SPILL, data_family_name(format)],
        &options.rocksdb,
    )?;
    crate::failpoint::hit("adopt-before-header");
    let committed = CommittedState {
        sequence: 0,
        offsets: imported.offsets,
        metadata: imported.position,
        stream_time: None,
    };
    write_adopted_state(&engine, &committed, &header_for(format))
}

/// Writes the first committed state of a store adopted from Kafka Streams (Kafka's offsets
/// and position; the stream time of a segmented store) with the store's `header`, in one
/// synced batch: from then on the store is a complete kstate store.
pub(crate) fn write_adopted_state(
    engine: &RocksEngine,
    committed: &CommittedState,
    header: &[u8],
) -> Result<()> {
    let meta = engine.registry().require(names::META)?;
    let committed = committed.encode()?;
    engine.write(
        &[
            BatchOp::Put(meta, meta::KEY_COMMITTED, &committed),
            BatchOp::Put(meta, meta::KEY_HEADER, header),
        ],
        true,
    )
}

/// Opens (creating it if the path is vacant) the RocksDB store of a window or session
/// store: `kind` (with the segment interval a new store gets), its `retention` and its one
/// data family `data`, with the memory of `budget`. An existing store keeps the segment
/// interval it was created with (it is part of its key layout), which the returned kind
/// carries. A directory holding Kafka Streams' own segmented store of the same kind is
/// converted into a kstate store first ([`adopt_segmented`]).
///
/// # Errors
/// [`Error::FormatMismatch`] for a store of another kind or value format, a directory
/// holding a database that is not a kstate store, or Kafka segments kstate does not adopt;
/// otherwise as for key-value stores.
pub(crate) fn open_rocksdb_kind(
    path: &Path,
    budget: &SegmentBudget,
    kind: StoreKind,
    retention: i64,
    data: &str,
    by_time: Option<&str>,
    more: &[&str],
) -> Result<(Opened, StoreKind)> {
    let options = &budget.store;
    let mut memtables = vec![(data, budget.data_write_buffer)];
    memtables.extend(by_time.map(|f| (f, budget.data_write_buffer)));
    memtables.extend(more.iter().map(|&f| (f, budget.data_write_buffer)));
    if path.as_os_str().is_empty() {
        return Err(Error::InvalidArgument("the store path is empty".into()));
    }
    // Kafka's segmented store is a directory of databases, which `probe` would call no store.
    if adopt_segmented::kafka_segments(path)?.is_none() {
        probe(path)?;
    }
    let (lock, staging) = take(path)?;
    if let StoreKind::Versioned { .. } = kind {
        if let Probe::Database(families) = probe(path)? {
            if super::adopt_versioned::kafka_families(&families) {
                super::adopt_versioned::adopt(path, kind, budget)?;
            }
        }
    }
    if let Some(segments) = adopt_segmented::kafka_segments(path)? {
        let target = adopt_segmented::Target {
            kind,
            retention,
            data,
            by_time,
        };
        adopt_segmented::adopt(path, &segments, &target, budget)?;
    }
    let mut wanted = vec![names::META, names::SPILL, data];
    wanted.extend(by_time);
    wanted.extend(more);
    let existing = match probe(path)? {
        Probe::Vacant => {
            let engine = RocksEngine::open_sized(&staging, &wanted, &options.rocksdb, &memtables)?;
            write_header(&engine, options.value_format, kind, true)?;
            drop(engine);
            publish(path, &staging)?;
            None
        }
        Probe::Database(families) => Some(families),
    };
    if let Some(families) = existing {
        if !families.iter().any(|n| n == names::META) {
            return Err(Error::FormatMismatch(format!(
                "{} holds a database that is not a kstate {} store (column families {families:?})",
                path.display(),
                kind.name()
            )));
        }
        // Time order is fixed when a store is created: a time index added later would miss
        // the windows written before, and one left behind would go stale.
        let indexed = families
            .iter()
            .find(|n| n.as_str() == WINDOW_BY_TIME_FAMILY || n.as_str() == SESSION_BY_TIME_FAMILY);
        match (by_time, indexed) {
            (Some(_), None) => {
                return Err(Error::FormatMismatch(format!(
                    "{} store at {} was created without a time order; it cannot be opened as a \
                     time-ordered store (EmitStrategy.onWindowClose()): nothing was changed",
                    kind.name(),
                    path.display()
                )))
            }
            (None, Some(_)) => {
                return Err(Error::FormatMismatch(format!(
                    "{} store at {} was created time-ordered (EmitStrategy.onWindowClose()); it \
                     cannot be opened as a regular store: nothing was changed",
                    kind.name(),
                    path.display()
                )))
            }
            _ => {}
        }
    }
    let engine = RocksEngine::open_sized(path, &wanted, &options.rocksdb, &memtables)?;
    let meta = engine.registry().require(names::META)?;
    let header = match engine.get(meta, meta::KEY_HEADER)? {
        Some(raw) => StoreHeader::decode(&raw)?,
        None => {
            return Err(Error::Corruption(format!(
                "{} has kstate metadata but no header",
                path.display()
            )))
        }
    };
    if std::mem::discriminant(&header.kind) != std::mem::discriminant(&kind) {
        return Err(Error::FormatMismatch(format!(
            "store at {} is a {} store, not a {} store",
            path.display(),
            header.kind.name(),
            kind.name()
        )));
    }
    if header.value_format != options.value_format {
        return Err(Error::FormatMismatch(format!(
            "{} store at {} holds {} values; it cannot be opened {}",
            kind.name(),
            path.display(),
            header.value_format.name(),
            options.value_format.name()
        )));
    }
    let family = engine.registry().require(data)?;
    Ok((
        Opened {
            engine: Arc::new(engine),
            data: family,
            legacy: None,
            lock: Some(lock),
        },
        header.kind,
    ))
}
