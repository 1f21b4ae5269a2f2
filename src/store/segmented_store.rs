//! The public segmented store: [`SegmentedStore`], one type for window and session stores.
//! What every segmented kind has (opening, Kafka's restore writes, transactions, offsets,
//! stream time, life cycle, iterators) is defined here once, over the engine of
//! [`super::segmented`]; a kind ([`super::WindowKind`], [`super::SessionKind`]) brings only
//! what sets it apart: its options, its Kafka key layout, and its queries and writes (an
//! `impl SegmentedStore<ThatKind>` block in its own module).

use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::iter::KvIter;
use super::open::{open_memory_families, open_rocksdb_kind, Opened};
use super::segmented::{segment_budget, Retention, Schema, Segmented};
use super::StoreOptions;
use crate::engine::EngineKind;
use crate::format::meta::StoreKind;
use crate::format::TopicPartition;
use crate::txn::{Isolation, RecoveryReport};
use crate::{Error, Result};

mod sealed {
    /// Only this crate defines store kinds: the engine knows each kind's key layout.
    pub trait Sealed {}
}
pub(crate) use sealed::Sealed;

/// A kind of segmented store: what [`SegmentedStore`] needs to open one and to decode its
/// entries. Implemented by [`super::WindowKind`] and [`super::SessionKind`] only.
pub trait SegmentKind: Sealed + Clone + std::fmt::Debug + Send + Sync + 'static {
    /// The options a store of this kind opens with.
    type Options: Clone;
    /// One entry as its iterators return it.
    type Entry;
    /// The name of the store type (for `Debug`).
    const NAME: &'static str;
    /// The data family: `[segment][Kafka key]` -> value.
    const FAMILY: &'static str;
    /// What the store is called in messages (`window store`).
    const DESCRIPTION: &'static str;
    /// The bytes a Kafka key of this kind adds after the record key, the first 8 of them
    /// the time it is segmented by (window: start and seqnum; session: end and start).
    const KEY_SUFFIX: usize;

    /// Checks `options` as Kafka's store builders do, and splits them into what opening
    /// any segmented store takes and the settings a handle of this kind keeps.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for values Kafka refuses.
    fn spec(options: &Self::Options) -> Result<(SegmentSpec, Self)>;

    /// An entry from a Kafka key of this kind and its raw value.
    ///
    /// # Errors
    /// [`Error::Corruption`] for a key the layout cannot split.
    fn decode(kafka_key: &[u8], raw_value: Vec<u8>) -> Result<Self::Entry>;
}

/// What opening a segmented store takes, from the options of its kind
/// ([`SegmentKind::spec`]).
#[derive(Debug, Clone)]
pub struct SegmentSpec {
    store: StoreOptions,
    kind: StoreKind,
    retention_period: i64,
    by_time: Option<&'static str>,
    time_first_floor: bool,
    /// For a store that records Kafka's `hasIndex` on disk (a time-ordered window store),
    /// the value to record.
    kafka_index: Option<bool>,
    /// For a store that records Kafka's layout on disk (a time-ordered session store), whether
    /// it is the DSL's headers store format.
    kafka_headers: Option<bool>,
    /// On the memory engine, the data family is keyed time first (see
    /// [`super::segmented`]).
    time_first_in_memory: bool,
}

impl SegmentSpec {
    /// Records Kafka's `hasIndex` in the store's metadata on every RocksDB open (a
    /// time-ordered window store, whose export to Kafka's layout must know it).
    pub(crate) fn recording_kafka_index(mut self, has_index: bool) -> Self {
        self.kafka_index = Some(has_index);
        self
    }

    /// Keys the data family time first on the memory engine (see [`super::segmented`]).
    pub(crate) fn time_first_in_memory(mut self) -> Self {
        self.time_first_in_memory = true;
        self
    }

    /// Records whether Kafka's store is of the DSL's headers store format on every RocksDB
    /// open (a time-ordered session store, whose export to Kafka's layout must know it).
    pub(crate) fn recording_kafka_headers(mut self, headers: bool) -> Self {
        self.kafka_headers = Some(headers);
        self
    }

    /// The spec of a store with `store` options (as the kind keeps them), recorded as
    /// `kind` with `retention_period` (ms), with the time index family `by_time` of a
    /// time-ordered store, and Kafka's time-ordered retention floor when
    /// `time_first_floor`.
    pub(crate) fn new(
        store: StoreOptions,
        kind: StoreKind,
        retention_period: i64,
        by_time: Option<&'static str>,
        time_first_floor: bool,
    ) -> Self {
        SegmentSpec {
            store,
            kind,
            retention_period,
            by_time,
            time_first_floor,
            kafka_index: None,
            kafka_headers: None,
            time_first_in_memory: false,
        }
    }
}

/// A transactional segmented store of kind `K` ([`super::WindowStore`],
/// [`super::SessionStore`]). Cloning gives another handle to the same store.
#[derive(Clone)]
pub struct SegmentedStore<K> {
    pub(crate) inner: Arc<Segmented>,
    /// The kind's per-store settings (a window store's size and duplicates).
    pub(crate) kind: K,
}

impl<K: SegmentKind> std::fmt::Debug for SegmentedStore<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(K::NAME)
            .field("path", &self.inner.path())
            .field("retention", &self.inner.retention.period)
            .field("segment_interval", &self.inner.retention.segment_interval)
            .field("settings", &self.kind)
            .field("open", &self.is_open())
            .finish()
    }
}

impl<K: SegmentKind> SegmentedStore<K> {
    /// Opens (creating if absent) and recovers the store at `path`; for the memory engine
    /// the path only names the store.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for invalid options; [`Error::FormatMismatch`] for a
    /// store of another kind or value format; otherwise as [`crate::KvStore::open`].
    pub fn open(path: impl AsRef<Path>, options: &K::Options) -> Result<Self> {
        let (spec, settings) = K::spec(options)?;
        let path = path.as_ref();
        let (opened, kind) = match spec.store.engine {
            EngineKind::RocksDb => {
                let retention = spec.retention_period;
                let budget = segment_budget(&spec.store, retention, segment_interval(spec.kind)?);
                let (family, by_time) = (K::FAMILY, spec.by_time);
                let opened =
                    open_rocksdb_kind(path, &budget, spec.kind, retention, family, by_time, &[])?;
                if let Some(has_index) = spec.kafka_index {
                    // What an export to Kafka's layout needs to know (super::time_order).
                    super::time_order::record_kafka_index(&opened.0, has_index)?;
                }
                if let Some(headers) = spec.kafka_headers {
                    super::time_order::record_kafka_headers(&opened.0, headers)?;
                }
                opened
            }
            EngineKind::Memory => {
                if path.as_os_str().is_empty() {
                    return Err(Error::InvalidArgument("the store path is empty".into()));
                }
                let opened = open_memory_families(
                    &spec.store,
                    spec.kind,
                    K::FAMILY,
                    Self::memory_index(&spec),
                    &[],
                )?;
                (opened, spec.kind)
            }
        };
        Self::build(opened, kind, Some(path.to_path_buf()), spec, settings)
    }

    /// Opens a fresh store on the memory engine.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for invalid options.
    pub fn open_in_memory(options: &K::Options) -> Result<Self> {
        let (mut spec, settings) = K::spec(options)?;
        spec.store.engine = EngineKind::Memory;
        let index = Self::memory_index(&spec);
        let opened = open_memory_families(&spec.store, spec.kind, K::FAMILY, index, &[])?;
        Self::build(opened, spec.kind, None, spec, settings)
    }

    /// The time index family a store of `spec` keeps on the memory engine: none when the
    /// data family is keyed time first.
    fn memory_index(spec: &SegmentSpec) -> Option<&'static str> {
        spec.by_time.filter(|_| !spec.time_first_in_memory)
    }

    /// A store over an engine a test opened (a fault-injecting one, say).
    #[cfg(test)]
    pub(crate) fn over_engine(opened: Opened, options: &K::Options) -> Result<Self> {
        let (spec, settings) = K::spec(options)?;
        Self::build(opened, spec.kind, None, spec, settings)
    }

    /// The store over `opened`, a store of `kind` (the one found on disk).
    fn build(
        opened: Opened,
        kind: StoreKind,
        path: Option<PathBuf>,
        spec: SegmentSpec,
        settings: K,
    ) -> Result<Self> {
        if std::mem::discriminant(&kind) != std::mem::discriminant(&spec.kind) {
            return Err(Error::Internal(format!(
                "a {} of another kind",
                K::DESCRIPTION
            )));
        }
        let (schema, segment_interval) = match kind {
            StoreKind::Window { segment_interval } => (Schema::Window, segment_interval),
            StoreKind::Session { segment_interval } => (Schema::Session, segment_interval),
            StoreKind::KeyValue | StoreKind::Versioned { .. } => return Err(not_segmented(kind)),
        };
        let retention = Retention {
            period: spec.retention_period,
            segment_interval,
            time_first_floor: spec.time_first_floor,
        };
        let time_first = spec.time_first_in_memory && spec.store.engine == EngineKind::Memory;
        let segmented = Segmented::new(
            opened,
            schema,
            retention,
            path,
            &spec.store,
            spec.by_time,
            time_first,
        )?;
        Ok(SegmentedStore {
            inner: Arc::new(segmented),
            kind: settings,
        })
    }

    /// Checks a record key against the largest key a Kafka key of the kind can hold.
    pub(crate) fn check_record_key(key: &[u8]) -> Result<()> {
        let max = crate::MAX_KEY_BYTES - K::KEY_SUFFIX;
        if key.len() > max {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max,
            });
        }
        Ok(())
    }

    /// The time a Kafka key of the kind is segmented by (window start, session end).
    fn segment_time(kafka_key: &[u8]) -> Result<i64> {
        let at = kafka_key.len().checked_sub(K::KEY_SUFFIX).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a {} key is shorter than {} bytes",
                K::DESCRIPTION,
                K::KEY_SUFFIX
            ))
        })?;
        let mut time = [0u8; 8];
        time.copy_from_slice(&kafka_key[at..at + 8]);
        Ok(i64::from_be_bytes(time))
    }

    /// Writes entries keyed by the Kafka keys of the kind (the changelog's key layout)
    /// with raw values (`None` deletes), as Kafka's restore does: each through the
    /// segmented put (stream time, expiry), a window key keeping its seqnum. Every entry is
    /// validated before any is written.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key too short for the layout (12 bytes for a
    /// window, 16 for a session); [`Error::KeyTooLarge`], [`Error::ValueTooLarge`],
    /// [`Error::InvalidValue`], [`Error::StoreClosed`], spill errors.
    pub fn put_all_kafka_keys(&self, entries: &[(&[u8], Option<&[u8]>)]) -> Result<()> {
        let mut times = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let time = Self::segment_time(k)?;
            crate::format::check_key(k)?;
            if let Some(v) = v {
                self.inner.check_raw(v)?;
            }
            times.push(time);
        }
        for ((k, v), t) in entries.iter().zip(times) {
            self.inner.write(k, t, v.map(Arc::from))?;
        }
        Ok(())
    }

    /// Commits every uncommitted write with `offsets` (Kafka's map semantics, as
    /// [`crate::KvStore::commit`]) and `metadata`, together with the stream time and the
    /// deletion of the segments it expired, atomically.
    pub fn commit(
        &self,
        offsets: &[(TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()> {
        self.inner.commit(offsets, metadata)
    }

    /// The changelog offset committed for `tp`.
    pub fn committed_offset(&self, tp: &TopicPartition) -> Result<Option<i64>> {
        self.inner.committed_offset(tp)
    }

    /// Every committed changelog offset.
    pub fn committed_offsets(&self) -> Result<Vec<(TopicPartition, i64)>> {
        self.inner.committed_offsets()
    }

    /// The metadata blob of the last commit carrying one.
    pub fn committed_metadata(&self) -> Result<Option<Vec<u8>>> {
        self.inner.committed_metadata()
    }

    /// Writes a checkpoint of the last commit to the new directory `dir` (hard links to
    /// the table files, see [`crate::store::checkpoint`]) without blocking the writer, and
    /// returns what it holds. `dir` opens as a store of the same kind and options, holding
    /// that commit (the last one when this was called, or a later one) and its offsets.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `dir` exists; [`Error::Unsupported`] for a memory
    /// store; [`Error::StoreClosed`]; storage and I/O errors. Nothing is left at `dir` on
    /// error.
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<crate::CheckpointInfo> {
        self.inner.checkpoint(dir.as_ref())
    }

    /// Number of commits completed on this store over its life.
    pub fn commit_sequence(&self) -> Result<u64> {
        self.inner.commit_sequence()
    }

    /// Discards every uncommitted write (the stream time returns to the committed one).
    pub fn rollback(&self) -> Result<()> {
        self.inner.rollback()
    }

    /// Kafka's observed stream time under `isolation` (-1 before any write).
    pub fn stream_time(&self, isolation: Isolation) -> Result<i64> {
        self.inner.stream_time(isolation)
    }

    /// Approximate bytes of uncommitted writes.
    pub fn approximate_num_uncommitted_bytes(&self) -> Result<u64> {
        self.inner.uncommitted_bytes()
    }

    /// Approximate number of stored entries (windows, sessions) under `isolation`.
    pub fn approximate_num_entries(&self, isolation: Isolation) -> Result<u64> {
        self.inner.approximate_count(isolation)
    }

    /// An engine property or kstate counter, as [`crate::KvStore::property`].
    pub fn property(&self, name: &str) -> Result<Option<u64>> {
        self.inner.property(name)
    }

    /// Closes the store (uncommitted writes discarded, iterators closed). Idempotent.
    pub fn close(&self) -> Result<()> {
        self.inner.shutdown()
    }

    /// True until closed.
    pub fn is_open(&self) -> bool {
        self.inner.is_open()
    }

    /// Retention period (ms).
    pub fn retention_period(&self) -> i64 {
        self.inner.retention.period
    }

    /// The segment interval (ms) the store was created with.
    pub fn segment_interval(&self) -> i64 {
        self.inner.retention.segment_interval
    }

    /// What recovery found on open.
    pub fn recovery(&self) -> &RecoveryReport {
        self.inner.recovery()
    }

    /// The options' store part (engine, value format, ...).
    pub fn options(&self) -> &StoreOptions {
        self.inner.options()
    }

    /// Number of open iterators.
    pub fn open_iterators(&self) -> usize {
        self.inner.open_iterators()
    }

    /// Flushes and compacts the data (reclaims expired segments on disk at once).
    pub fn compact(&self) -> Result<()> {
        self.inner.compact()
    }
}

/// The segment interval of a segmented store kind.
fn segment_interval(kind: StoreKind) -> Result<i64> {
    match kind {
        StoreKind::Window { segment_interval } | StoreKind::Session { segment_interval } => {
            Ok(segment_interval)
        }
        StoreKind::KeyValue | StoreKind::Versioned { .. } => Err(not_segmented(kind)),
    }
}

fn not_segmented(kind: StoreKind) -> Error {
    Error::Internal(format!(
        "a {} store opened as a segmented store",
        kind.name()
    ))
}

/// Entries of a query on a store of kind `K`, in Kafka's order; fixed when created,
/// closed with its store ([`super::WindowIter`], [`super::SessionIter`]).
pub struct SegmentIter<K> {
    inner: KvIter,
    kind: PhantomData<fn() -> K>,
}

impl<K: SegmentKind> SegmentIter<K> {
    pub(crate) fn new(inner: KvIter) -> Self {
        SegmentIter {
            inner,
            kind: PhantomData,
        }
    }

    /// The next entry, or `None` at the end.
    pub(crate) fn next_entry(&mut self) -> Result<Option<K::Entry>> {
        match self.inner.next_raw()? {
            None => Ok(None),
            Some((k, v)) => Ok(Some(K::decode(&k, v)?)),
        }
    }

    /// Closes the iterator. Idempotent.
    pub fn close(&mut self) {
        self.inner.close();
    }

    /// True until it or its store is closed.
    pub fn is_open(&self) -> bool {
        self.inner.is_open()
    }

    /// The underlying raw iterator (Kafka keys and raw values), for the C and JNI bridge.
    pub(crate) fn into_raw(self) -> KvIter {
        self.inner
    }
}

impl<K: SegmentKind> Iterator for SegmentIter<K> {
    type Item = Result<K::Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().transpose()
    }
}

impl<K: SegmentKind> std::fmt::Debug for SegmentIter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentIter")
            .field("store", &K::NAME)
            .field("open", &self.is_open())
            .finish()
    }
}

/// Defines a Kafka query method and its `backward` twin from one body, in which
/// `$reverse` is false in the first and true in the second: Kafka's `fetch...` and
/// `backwardFetch...` pairs differ only in direction.
macro_rules! forward_and_backward {
    ($(
        $(#[$fwd_doc:meta])*
        fn $fwd:ident /
        $(#[$bwd_doc:meta])*
        fn $bwd:ident(&$self:ident $(, $arg:ident: $ty:ty)*) -> $ret:ty
        |$reverse:ident| $body:block
    )*) => {$(
        $(#[$fwd_doc])*
        pub fn $fwd(&$self $(, $arg: $ty)*) -> $ret {
            let $reverse = false;
            $body
        }

        $(#[$bwd_doc])*
        pub fn $bwd(&$self $(, $arg: $ty)*) -> $ret {
            let $reverse = true;
            $body
        }
    )*};
}
pub(crate) use forward_and_backward;

/// The option plumbing window and session options share (over their `store`,
/// `retention_period` and `segment_interval` fields), defined once inside each options
/// type's `impl`.
macro_rules! segmented_options {
    () => {
        /// Sets the store options (engine, value format, memory bound, ...).
        pub fn with_store(mut self, store: $crate::store::StoreOptions) -> Self {
            self.store = store;
            self
        }

        /// Sets the segment interval of a new store.
        pub fn with_segment_interval(mut self, interval: i64) -> Self {
            self.segment_interval = Some(interval);
            self
        }

        /// Kafka's checks of a segmented store's retention period and segment interval.
        fn check_segmenting(&self) -> $crate::Result<()> {
            if self.retention_period < 0 {
                return Err($crate::Error::InvalidArgument(
                    "retention_period cannot be negative".into(),
                ));
            }
            if self.segment_interval.is_some_and(|i| i < 1) {
                return Err($crate::Error::InvalidArgument(
                    "segment_interval must be positive".into(),
                ));
            }
            Ok(())
        }

        /// The segment interval of a new store: the one set, or Kafka's default.
        fn segment_interval_or_default(&self) -> i64 {
            self.segment_interval
                .unwrap_or_else(|| $crate::store::default_segment_interval(self.retention_period))
        }
    };
}
pub(crate) use segmented_options;
