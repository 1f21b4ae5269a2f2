//! Kafka's time-ordered stores (`EmitStrategy.onWindowClose()`) on the way back: what an
//! export to Kafka's layout writes for a time-ordered kstate store, and how kstate knows
//! whether Kafka's store keeps a key index (`hasIndex`).
//!
//! Kafka's time-ordered segments keep every record in `default` under a one-byte prefix
//! (`PrefixedWindowKeySchemas`, `PrefixedSessionKeySchemas`): `0` for the base record, time
//! first (window `start ‖ key ‖ seqnum` with the timestamped value, session
//! `end ‖ start ‖ key` with the aggregate), and, when the store has an index, `1` for an
//! index record (the regular key-first key, empty value), which its key lookups read. A
//! store read with an index it lacks misses records on key lookups, so the export writes
//! the index exactly when Kafka's store has one.
//!
//! Kafka 4.4's DSL (`BuiltInDslStoreSuppliers.RocksDBDslStoreSuppliers`) decides it: a
//! window store of `onWindowClose()` has `hasIndex = DslWindowParams.isSlidingWindow()`
//! (`RocksDbIndexedTimeOrderedWindowBytesStoreSupplier.create`), a session store always has
//! one (`new RocksDbTimeOrderedSessionBytesStoreSupplier(name, retention, true)`). The export
//! runs from the command line, without the application, so a time-ordered window store
//! records it: every open of a RocksDB time-ordered window store writes the opener's
//! `key_index` (the Java adapter passes Kafka's `hasIndex` from the same DSL parameters)
//! to the `kafka_index` metadata record when it differs, at creation, after an adoption and
//! after any later change of the application. A session store always has the index, but
//! its layout depends on the DSL's store format, which its aggregates (stored without
//! headers in both) do not tell: every open of a RocksDB time-ordered session store writes
//! the opener's `kafka_headers_format` to the `kafka_headers` record the same way, and the
//! export writes `sessionKeyValueWithHeaders` (Kafka 4.4's
//! `RocksDbTimeOrderedSessionHeadersBytesStoreSupplier`) when it says so.

use std::path::Path;

use super::open::Opened;
use super::segmented::{SESSION_BY_TIME_FAMILY, WINDOW_BY_TIME_FAMILY};
use crate::engine::{names, BatchOp, Engine};
use crate::format::meta::{self, StoreHeader, StoreKind, ValueFormat};
use crate::format::segmented::{time_first_session_key, time_first_window_key};
use crate::{Error, Result};

/// Records Kafka's `hasIndex` of the time-ordered window store just opened (see the module
/// docs), writing only when the record is missing or says otherwise.
///
/// # Errors
/// Storage errors.
pub(crate) fn record_kafka_index(opened: &Opened, index: bool) -> Result<()> {
    record_flag(opened, meta::KEY_KAFKA_INDEX, index)
}

/// Records whether Kafka's store of the time-ordered session store just opened is the DSL's
/// headers store format (see the module docs), writing only when the record is missing or
/// says otherwise.
///
/// # Errors
/// Storage errors.
pub(crate) fn record_kafka_headers(opened: &Opened, headers: bool) -> Result<()> {
    record_flag(opened, meta::KEY_KAFKA_HEADERS, headers)
}

fn record_flag(opened: &Opened, key: &[u8], flag: bool) -> Result<()> {
    let engine = &opened.engine;
    let meta_family = engine.registry().require(names::META)?;
    let held = engine
        .get(meta_family, key)?
        .map(|raw| meta::decode_kafka_index(&raw))
        .transpose()?;
    if held == Some(flag) {
        return Ok(());
    }
    let raw = meta::encode_kafka_index(flag);
    engine.write(&[BatchOp::Put(meta_family, key, &raw)], true)
}

/// How an export writes the records of a time-ordered kstate store in Kafka's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimeOrderedExport {
    session: bool,
    /// Kafka's `hasIndex`: index records are written too.
    pub index: bool,
    /// The store of the DSL's headers store format (Kafka 4.4's
    /// `RocksDBTimeOrderedWindowStoreWithHeaders`, records in `windowKeyValueWithHeaders`,
    /// always with the index; for sessions `RocksDbTimeOrderedSessionHeadersBytesStoreSupplier`'s,
    /// records in `sessionKeyValueWithHeaders`).
    headers: bool,
}

/// The time-ordered export of the store at `path` (its `engine` and `header`), or `None`
/// when the store is not time-ordered.
///
/// # Errors
/// [`Error::FormatMismatch`] for a time-ordered store kstate does not export: a window store
/// without the `kafka_index` record (created by an earlier kstate and not opened since), or
/// a value format Kafka's time-ordered stores do not hold.
pub(crate) fn export_layout(
    engine: &dyn Engine,
    path: &Path,
    header: &StoreHeader,
) -> Result<Option<TimeOrderedExport>> {
    let registry = engine.registry();
    let session = match header.kind {
        StoreKind::Window { .. } if registry.find(WINDOW_BY_TIME_FAMILY).is_some() => false,
        StoreKind::Session { .. } if registry.find(SESSION_BY_TIME_FAMILY).is_some() => true,
        _ => return Ok(None),
    };
    // Kafka's time-ordered window store is timestamped (or headers-format in the DSL's
    // headers store format), its session store keeps aggregates.
    let supported = match header.value_format {
        ValueFormat::Timestamped => true,
        ValueFormat::Plain => session,
        ValueFormat::Headers => !session,
    };
    if !supported {
        return Err(Error::FormatMismatch(format!(
            "{} is a time-ordered {} store (EmitStrategy.onWindowClose()) of {} values, which \
             Kafka's time-ordered {} store does not hold: nothing was changed",
            path.display(),
            header.kind.name(),
            header.value_format.name(),
            header.kind.name()
        )));
    }
    let meta_family = registry.require(names::META)?;
    let headers = if session {
        // The DSL's time-ordered session store holds aggregates without headers in both store
        // formats: only the record says which layout Kafka's store has.
        match engine.get(meta_family, meta::KEY_KAFKA_HEADERS)? {
            Some(raw) => meta::decode_kafka_headers(&raw)?,
            None => {
                return Err(Error::FormatMismatch(format!(
                    "{} is a time-ordered session store (EmitStrategy.onWindowClose()) that does \
                     not record whether Kafka's store is of the DSL's headers store format; open \
                     it once with this kstate (the application's store supplier records it), \
                     then export: nothing was changed",
                    path.display()
                )))
            }
        }
    } else {
        header.value_format == ValueFormat::Headers
    };
    // Kafka 4.4's headers-format time-ordered window store
    // (`RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier`) always keeps the index,
    // whatever the window kind, so it needs no `kafka_index` record.
    let index = if session || headers {
        true
    } else {
        match engine.get(meta_family, meta::KEY_KAFKA_INDEX)? {
            Some(raw) => meta::decode_kafka_index(&raw)?,
            None => {
                return Err(Error::FormatMismatch(format!(
                    "{} is a time-ordered window store (EmitStrategy.onWindowClose()) that does \
                     not record whether Kafka's store keeps a key index (hasIndex: sliding \
                     windows do); open it once with this kstate (the application's store \
                     supplier records it), then export: nothing was changed",
                    path.display()
                )))
            }
        }
    };
    Ok(Some(TimeOrderedExport {
        session,
        index,
        headers,
    }))
}

impl TimeOrderedExport {
    /// Kafka's records (key, value) of one record of the store: its regular Kafka key
    /// `kafka_key` and its value.
    ///
    /// # Errors
    /// [`Error::Corruption`] for a key too short for its kind.
    pub(crate) fn records(&self, kafka_key: &[u8], value: &[u8]) -> Result<Vec<Record>> {
        let time_first = if self.session {
            time_first_session_key(kafka_key)?
        } else {
            time_first_window_key(kafka_key)?
        };
        let mut base = Vec::with_capacity(1 + time_first.len());
        base.push(0);
        base.extend_from_slice(&time_first);
        let mut out = vec![(base, value.to_vec())];
        if self.index {
            let mut index = Vec::with_capacity(1 + kafka_key.len());
            index.push(1);
            index.extend_from_slice(kafka_key);
            out.push((index, Vec::new()));
        }
        Ok(out)
    }

    /// The Kafka Streams class that opens the exported store.
    pub(crate) fn kafka_class(&self) -> &'static str {
        match (self.headers, self.session) {
            (true, false) => {
                return "RocksDBTimeOrderedWindowStoreWithHeaders (EmitStrategy.onWindowClose() in \
                        the DSL's headers store format, with Kafka's key index)"
            }
            (true, true) => {
                return "RocksDBTimeOrderedSessionStore (EmitStrategy.onWindowClose() in the DSL's \
                        headers store format: sessionKeyValueWithHeaders, with Kafka's key index)"
            }
            _ => {}
        }
        time_ordered_class(self.session, self.index)
    }

    /// The column family of Kafka's segments that holds the records.
    pub(crate) fn kafka_family(&self) -> &'static str {
        if self.headers && self.session {
            names::SESSION_HEADERS
        } else if self.headers {
            names::WINDOW_TIME_ORDERED_HEADERS
        } else {
            names::PLAIN
        }
    }
}

/// A record of a Kafka segment: key and value.
pub(crate) type Record = (Vec<u8>, Vec<u8>);

/// The Kafka Streams class (and supplier) that opens a time-ordered store exported to
/// Kafka's layout.
pub fn time_ordered_class(session: bool, index: bool) -> &'static str {
    match (session, index) {
        (true, _) => {
            "RocksDBTimeOrderedSessionStore (EmitStrategy.onWindowClose(), with Kafka's key index)"
        }
        (false, true) => {
            "RocksDBTimeOrderedWindowStore (EmitStrategy.onWindowClose(), sliding windows: with \
             Kafka's key index)"
        }
        (false, false) => {
            "RocksDBTimeOrderedWindowStore (EmitStrategy.onWindowClose(), without Kafka's key index)"
        }
    }
}
