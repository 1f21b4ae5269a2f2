//! Rules the C and JNI surfaces share, written once (libsignal's bridge is the model).
//!
//! Each surface converts its own argument types (C pointers and lengths, Java arrays and
//! strings) and its own results, and calls these functions for everything else: which
//! paths are acceptable, how a store or an iterator becomes a handle and is closed, and
//! how an iterator is read in batches. A rule changed here changes on both surfaces.

use std::path::PathBuf;
use std::sync::Mutex;

use crate::handle::{self, HANDLES};
use crate::store::{SessionIter, VersionOrder, VersionedOptions, VersionedRecord, WindowIter};
use crate::sync::MutexExt;
use crate::{
    EngineKind, Error, KvIter, KvStore, Result, SessionOptions, SessionStore, StoreOptions,
    ValueFormat, VersionedStore, WindowOptions, WindowStore,
};

/// One entry as read from an iterator: key and raw value (the store's value layout).
pub type RawEntry = (Vec<u8>, Vec<u8>);

/// What a batch of [`KvIterHandle::first_batch_each`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batched {
    /// The entries taken.
    pub taken: usize,
    /// The iterator ran out of entries within the batch: nothing is left to read, and no
    /// error either.
    pub ended: bool,
}

/// The object behind an iterator handle: the core iterator, the value layout of its store,
/// and an error held back for the next call (see [`KvIterHandle::next_batch`]).
pub struct KvIterHandle {
    state: Mutex<IterState>,
    format: ValueFormat,
}

struct IterState {
    iter: KvIter,
    /// An error met after entries were already taken for a batch; reported by the next
    /// call so that those entries are not lost.
    deferred: Option<Error>,
}

impl KvIterHandle {
    /// Wraps `iter`, an iterator over `store`.
    pub fn new(store: &KvStore, iter: KvIter) -> Self {
        Self::with_format(iter, store.options().value_format)
    }

    /// Wraps `iter`, whose values have layout `format`.
    pub fn with_format(iter: KvIter, format: ValueFormat) -> Self {
        KvIterHandle {
            state: Mutex::new(IterState {
                iter,
                deferred: None,
            }),
            format,
        }
    }

    /// The value layout of the iterator's store.
    pub fn format(&self) -> ValueFormat {
        self.format
    }

    /// The next entries: up to `max_entries` (at least 1), stopping early once the keys
    /// and values taken reach `max_bytes` (at least one entry is returned while any
    /// remains). Empty means exhausted. Calls on one iterator are serialised.
    ///
    /// Every entry of a timestamped store is checked to carry its 8-byte timestamp, every
    /// entry of a headers-format store to be well formed.
    /// **No entry is ever lost to an error**: when reading or checking an entry fails
    /// after others were taken for the batch, the batch returns those entries and the
    /// error is returned by the next call. An entry that failed its check is skipped: the
    /// call after the error continues with the entry after it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `max_entries` 0; [`Error::InvalidValue`] (naming the
    /// key) for a short timestamped value; [`Error::IteratorClosed`] once the iterator or
    /// its store was closed; [`Error::Storage`] and friends from the engine.
    pub fn next_batch(&self, max_entries: usize, max_bytes: usize) -> Result<Vec<RawEntry>> {
        let mut batch = Vec::new();
        self.next_batch_each(max_entries, max_bytes, |k, v| {
            batch.push((k.to_vec(), v.to_vec()));
        })?;
        Ok(batch)
    }

    /// [`KvIterHandle::next_batch`], handing each entry to `take` as soon as it is read and
    /// checked instead of collecting them, as slices lent by the store's cursor where it
    /// can (see [`KvIter::lend_while`]): a surface that copies the entries into a buffer of
    /// its own (JNI's packed batches) copies each entry once. Same rules and errors;
    /// returns the number of entries taken (0: exhausted).
    pub fn next_batch_each(
        &self,
        max_entries: usize,
        max_bytes: usize,
        take: impl FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        self.batch_each(max_entries, max_bytes, false, take)
            .map(|b| b.taken)
    }

    /// The first batch of an iterator just opened, as [`KvIterHandle::next_batch_each`],
    /// also telling whether the iterator ended with it (a query whose answer fits in one
    /// batch then needs no further call). An error is always left for the next call, even
    /// when no entry was taken: the query that opened the iterator succeeds, and its first
    /// read fails, exactly as without a first batch.
    pub fn first_batch_each(
        &self,
        max_entries: usize,
        max_bytes: usize,
        take: impl FnMut(&[u8], &[u8]),
    ) -> Result<Batched> {
        self.batch_each(max_entries, max_bytes, true, take)
    }

    fn batch_each(
        &self,
        max_entries: usize,
        max_bytes: usize,
        defer_always: bool,
        mut take: impl FnMut(&[u8], &[u8]),
    ) -> Result<Batched> {
        if max_entries == 0 {
            return Err(Error::InvalidArgument(
                "max_entries must be positive".into(),
            ));
        }
        let mut state = self.state.lock_recover();
        if let Some(e) = state.deferred.take() {
            return Err(e);
        }
        let mut taken = 0usize;
        let mut bytes = 0usize;
        let mut failed = None;
        let read = state.iter.lend_while(&mut |k, v| {
            if let Err(e) = self.check(k, v) {
                failed = Some(e);
                return false;
            }
            bytes = bytes.saturating_add(k.len() + v.len());
            taken += 1;
            take(k, v);
            taken < max_entries && bytes < max_bytes
        });
        let (ended, error) = match read {
            Ok(ended) => (ended && failed.is_none(), failed),
            Err(e) => (false, Some(e)),
        };
        match error {
            None => Ok(Batched { taken, ended }),
            Some(e) if taken == 0 && !defer_always => Err(e),
            Some(e) => {
                state.deferred = Some(e);
                Ok(Batched {
                    taken,
                    ended: false,
                })
            }
        }
    }

    /// Checks that an entry's value is readable in the store's layout.
    fn check(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.format != ValueFormat::Plain {
            if let Err(e) = crate::format::check_layout(self.format, value) {
                return Err(match e {
                    Error::InvalidValue(why) => {
                        Error::InvalidValue(format!("key \"{}\": {why}", printable(key)))
                    }
                    other => other,
                });
            }
        }
        Ok(())
    }

    /// Closes the iterator (idempotent); later batches fail with
    /// [`Error::IteratorClosed`].
    pub fn close(&self) {
        let mut state = self.state.lock_recover();
        state.deferred = None;
        state.iter.close();
    }
}

/// The object behind a window iterator handle: batches of `(Kafka window key, raw value)`
/// with the batch rules of [`KvIterHandle::next_batch`] (checked timestamped values, no
/// entry lost to an error), and the window size of its store. The surfaces split each key
/// into record key, window start and seqnum
/// ([`crate::format::segmented::parse_window_key`]); C adds the window end
/// ([`window_end`]), Java computes it from its own copy of the window size.
pub struct WindowIterHandle(
    pub KvIterHandle,
    /// The store's window size (ms), for [`window_end`].
    pub i64,
);

/// The end of the window starting at `start` in a store of windows of `size` ms, as
/// Kafka's `WindowKeySchema.timeWindowForSize`: `start + size`, `i64::MAX` when that
/// overflows.
pub fn window_end(start: i64, size: i64) -> i64 {
    match start.checked_add(size) {
        Some(end) if end >= 0 => end,
        _ => i64::MAX,
    }
}

/// The segment interval of a new segmented store from the number a surface was given:
/// 0 means Kafka's default (`max(retention / 2, 60 s)`), any other value is taken as is
/// (and validated by the store's options).
pub fn segment_interval(ms: i64) -> Option<i64> {
    (ms != 0).then_some(ms)
}

/// The object behind a session iterator handle: batches of `(Kafka session key,
/// aggregate)`; the surfaces split each key into record key, start and end
/// ([`crate::format::segmented::parse_session_key`]).
pub struct SessionIterHandle(pub KvIterHandle);

/// Opens a window store and returns its new handle (`path` as for [`open_store`]).
///
/// # Errors
/// As [`open_store`] and [`WindowStore::open`].
pub fn open_window_store(path: Option<&[u8]>, options: &WindowOptions) -> Result<u64> {
    let store = match path {
        None if options.store.engine == EngineKind::Memory => WindowStore::open_in_memory(options)?,
        None => {
            return Err(Error::InvalidArgument(
                "path is required for a RocksDB store".into(),
            ))
        }
        Some(path) => WindowStore::open(store_path(path)?, options)?,
    };
    handle::insert(store)
}

/// Opens a session store and returns its new handle (`path` as for [`open_store`]).
///
/// # Errors
/// As [`open_store`] and [`SessionStore::open`].
pub fn open_session_store(path: Option<&[u8]>, options: &SessionOptions) -> Result<u64> {
    let store = match path {
        None if options.store.engine == EngineKind::Memory => {
            SessionStore::open_in_memory(options)?
        }
        None => {
            return Err(Error::InvalidArgument(
                "path is required for a RocksDB store".into(),
            ))
        }
        Some(path) => SessionStore::open(store_path(path)?, options)?,
    };
    handle::insert(store)
}

/// Closes the window store behind `store` and retires the handle.
///
/// # Errors
/// The lookup errors of the table; [`WindowStore::close`]'s (the handle is retired anyway).
pub fn close_window_store(store: u64) -> Result<()> {
    HANDLES.remove::<WindowStore>(store)?.close()
}

/// Closes the session store behind `store` and retires the handle.
///
/// # Errors
/// As [`close_window_store`].
pub fn close_session_store(store: u64) -> Result<()> {
    HANDLES.remove::<SessionStore>(store)?.close()
}

/// Opens a window iterator with `make` on the window store behind `store`.
///
/// # Errors
/// The lookup errors of the table, `make`'s errors.
pub fn open_window_iter(
    store: u64,
    make: impl FnOnce(&WindowStore) -> Result<WindowIter>,
) -> Result<u64> {
    handle::insert(window_iter(store, make)?)
}

/// [`open_window_iter`] without the handle: the iterator object, for a surface that
/// reads its first batch before deciding whether it needs a handle at all.
///
/// # Errors
/// As [`open_window_iter`].
pub fn window_iter(
    store: u64,
    make: impl FnOnce(&WindowStore) -> Result<WindowIter>,
) -> Result<WindowIterHandle> {
    let s = HANDLES.get::<WindowStore>(store)?;
    let format = s.options().value_format;
    let iter = make(&s)?.into_raw();
    Ok(WindowIterHandle(
        KvIterHandle::with_format(iter, format),
        s.window_size(),
    ))
}

/// Opens a session iterator with `make` on the session store behind `store`.
///
/// # Errors
/// The lookup errors of the table, `make`'s errors.
pub fn open_session_iter(
    store: u64,
    make: impl FnOnce(&SessionStore) -> Result<SessionIter>,
) -> Result<u64> {
    handle::insert(session_iter(store, make)?)
}

/// [`open_session_iter`] without the handle (see [`window_iter`]).
///
/// # Errors
/// As [`open_session_iter`].
pub fn session_iter(
    store: u64,
    make: impl FnOnce(&SessionStore) -> Result<SessionIter>,
) -> Result<SessionIterHandle> {
    let s = HANDLES.get::<SessionStore>(store)?;
    let iter = make(&s)?.into_raw();
    Ok(SessionIterHandle(KvIterHandle::with_format(
        iter,
        ValueFormat::Plain,
    )))
}

/// Opens a versioned store and returns its new handle (`path` as for [`open_store`]).
///
/// # Errors
/// As [`open_store`] and [`VersionedStore::open`].
pub fn open_versioned_store(path: Option<&[u8]>, options: &VersionedOptions) -> Result<u64> {
    let store = match path {
        None if options.store.engine == EngineKind::Memory => {
            VersionedStore::open_in_memory(options)?
        }
        None => {
            return Err(Error::InvalidArgument(
                "path is required for a RocksDB store".into(),
            ))
        }
        Some(path) => VersionedStore::open(store_path(path)?, options)?,
    };
    handle::insert(store)
}

/// Closes the versioned store behind `store` and retires the handle.
///
/// # Errors
/// As [`close_window_store`].
pub fn close_versioned_store(store: u64) -> Result<()> {
    HANDLES.remove::<VersionedStore>(store)?.close()
}

/// The object behind a versioned iterator handle: the versions a multi-version query found
/// (read from one view when the query ran), handed out one at a time.
pub struct VersionedIterHandle(Mutex<std::vec::IntoIter<VersionedRecord>>);

impl VersionedIterHandle {
    /// The next version, `None` once every one was returned.
    pub fn next(&self) -> Option<VersionedRecord> {
        self.0.lock_recover().next()
    }
}

/// Runs a multi-version query ([`VersionedStore::versions`]) on the versioned store behind
/// `store` and returns a handle to its results.
///
/// # Errors
/// The lookup errors of the table, the query's errors.
pub fn open_versioned_iter(
    store: u64,
    isolation: crate::Isolation,
    key: &[u8],
    from: Option<i64>,
    to: Option<i64>,
    order: VersionOrder,
) -> Result<u64> {
    let s = HANDLES.get::<VersionedStore>(store)?;
    let found = s.versions(isolation, key, from, to, order)?;
    handle::insert(VersionedIterHandle(Mutex::new(found.into_iter())))
}

/// Closes the versioned iterator behind `iter` and retires the handle.
///
/// # Errors
/// As [`close_window_iter`].
pub fn close_versioned_iter(iter: u64) -> Result<()> {
    HANDLES.remove::<VersionedIterHandle>(iter)?;
    Ok(())
}

/// Closes the window iterator behind `iter` and retires the handle.
///
/// # Errors
/// The lookup errors of the table (a second close gets [`Error::IteratorClosed`]).
pub fn close_window_iter(iter: u64) -> Result<()> {
    HANDLES.remove::<WindowIterHandle>(iter)?.0.close();
    Ok(())
}

/// Closes the session iterator behind `iter` and retires the handle.
///
/// # Errors
/// As [`close_window_iter`].
pub fn close_session_iter(iter: u64) -> Result<()> {
    HANDLES.remove::<SessionIterHandle>(iter)?.0.close();
    Ok(())
}

/// The transaction operations every store kind has, so that each surface defines them once
/// for all kinds (a window store's commit is the key-value store's commit).
pub trait Transactional: handle::Handled {
    /// See [`KvStore::commit`].
    fn commit(
        &self,
        offsets: &[(crate::TopicPartition, Option<i64>)],
        metadata: Option<&[u8]>,
    ) -> Result<()>;
    /// See [`KvStore::committed_offset`].
    fn committed_offset(&self, tp: &crate::TopicPartition) -> Result<Option<i64>>;
    /// See [`KvStore::committed_offsets`].
    fn committed_offsets(&self) -> Result<Vec<(crate::TopicPartition, i64)>>;
    /// See [`KvStore::committed_metadata`].
    fn committed_metadata(&self) -> Result<Option<Vec<u8>>>;
    /// See [`KvStore::rollback`].
    fn rollback(&self) -> Result<()>;
    /// See [`KvStore::approximate_num_uncommitted_bytes`].
    fn uncommitted_bytes(&self) -> Result<u64>;
    /// See [`KvStore::property`].
    fn property(&self, name: &str) -> Result<Option<u64>>;
    /// See [`KvStore::checkpoint`].
    fn checkpoint(&self, dir: &std::path::Path) -> Result<crate::CheckpointInfo>;
}

macro_rules! transactional {
    ($ty:ty) => {
        impl Transactional for $ty {
            fn commit(
                &self,
                offsets: &[(crate::TopicPartition, Option<i64>)],
                metadata: Option<&[u8]>,
            ) -> Result<()> {
                <$ty>::commit(self, offsets, metadata)
            }
            fn committed_offset(&self, tp: &crate::TopicPartition) -> Result<Option<i64>> {
                <$ty>::committed_offset(self, tp)
            }
            fn committed_offsets(&self) -> Result<Vec<(crate::TopicPartition, i64)>> {
                <$ty>::committed_offsets(self)
            }
            fn committed_metadata(&self) -> Result<Option<Vec<u8>>> {
                <$ty>::committed_metadata(self)
            }
            fn rollback(&self) -> Result<()> {
                <$ty>::rollback(self)
            }
            fn uncommitted_bytes(&self) -> Result<u64> {
                <$ty>::approximate_num_uncommitted_bytes(self)
            }
            fn property(&self, name: &str) -> Result<Option<u64>> {
                <$ty>::property(self, name)
            }
            fn checkpoint(&self, dir: &std::path::Path) -> Result<crate::CheckpointInfo> {
                <$ty>::checkpoint(self, dir)
            }
        }
    };
}

transactional!(KvStore);
transactional!(WindowStore);
transactional!(SessionStore);
transactional!(VersionedStore);

/// Commits the uncommitted writes keeping every committed offset (Kafka Streams 4.0-4.2
/// `flush()`, whose offsets live in Kafka's own checkpoint file).
///
/// # Errors
/// As [`Transactional::commit`].
pub fn flush<T: Transactional>(store: &T, metadata: Option<&[u8]>) -> Result<()> {
    let keep: Vec<(crate::TopicPartition, Option<i64>)> = store
        .committed_offsets()?
        .into_iter()
        .map(|(tp, offset)| (tp, Some(offset)))
        .collect();
    store.commit(&keep, metadata)
}

/// A key for an error message: escaped, at most 64 bytes of it.
fn printable(key: &[u8]) -> String {
    let shown = &key[..key.len().min(64)];
    let mut s = shown.escape_ascii().to_string();
    if key.len() > shown.len() {
        s.push_str("...");
    }
    s
}

/// The file-system path of a store from the bytes a surface was given.
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty path, a path with a NUL byte, and (where paths
/// must be Unicode, i.e. not on Unix) a path that is not UTF-8.
pub fn store_path(path: &[u8]) -> Result<PathBuf> {
    if path.is_empty() {
        return Err(Error::InvalidArgument(
            "path is empty: name the store's directory".into(),
        ));
    }
    if path.contains(&0) {
        return Err(Error::InvalidArgument("path contains a NUL byte".into()));
    }
    os_path(path)
}

#[cfg(unix)]
fn os_path(path: &[u8]) -> Result<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Ok(std::ffi::OsStr::from_bytes(path).into())
}

#[cfg(not(unix))]
fn os_path(path: &[u8]) -> Result<PathBuf> {
    std::str::from_utf8(path)
        .map(PathBuf::from)
        .map_err(|e| Error::InvalidArgument(format!("path is not valid UTF-8: {e}")))
}

/// Opens a store and returns its new handle. `path` may be absent only for the memory
/// engine (where a path merely names the store).
///
/// # Errors
/// [`Error::InvalidArgument`] for a missing RocksDB path and for the paths
/// [`store_path`] refuses; otherwise what [`KvStore::open`] returns.
pub fn open_store(path: Option<&[u8]>, options: &StoreOptions) -> Result<u64> {
    let store = match path {
        None if options.engine == EngineKind::Memory => KvStore::open_in_memory(options)?,
        None => {
            return Err(Error::InvalidArgument(
                "path is required for a RocksDB store".into(),
            ))
        }
        Some(path) => KvStore::open(store_path(path)?, options)?,
    };
    handle::insert(store)
}

/// Closes the store behind `store` (uncommitted writes discarded, its iterators closed)
/// and retires the handle.
///
/// # Errors
/// The lookup errors of [`handle::store`]; [`KvStore::close`]'s errors (the handle is
/// retired anyway).
pub fn close_store(store: u64) -> Result<()> {
    HANDLES.remove::<KvStore>(store)?.close()
}

/// Opens an iterator with `make` on the store behind `store` and returns its new handle.
///
/// # Errors
/// The lookup errors of [`handle::store`], `make`'s errors.
pub fn open_iter(store: u64, make: impl FnOnce(&KvStore) -> Result<KvIter>) -> Result<u64> {
    let s = handle::store(store)?;
    let iter = make(&s)?;
    handle::insert(KvIterHandle::new(&s, iter))
}

/// Whether the store behind `store` runs in upgrade mode ([`KvStore::is_upgrading`]).
///
/// # Errors
/// The lookup errors of the table; [`Error::StoreClosed`] once the store is closed.
pub fn is_upgrading(store: u64) -> Result<bool> {
    let s = handle::store(store)?;
    if !s.is_open() {
        return Err(Error::StoreClosed);
    }
    Ok(s.is_upgrading())
}

/// What a surface's progress callback tells [`upgrade_by_swap`]: go on, or stop with this
/// error (a Java exception pending, say).
pub type Progress<'a> = dyn FnMut(u64, u64) -> std::ops::ControlFlow<Error> + 'a;

/// Upgrades the store behind `store` by prepare and swap ([`KvStore::upgrade_by_swap`]),
/// calling `progress(done, total)` on this thread after each batch copied. Returns the
/// number of entries copied; 0 when the store is not in upgrade mode.
///
/// The callback runs with no lock of the store held, so calls from it into the same store
/// neither deadlock nor corrupt anything: reads, writes and commits behave as calls from
/// another thread during the swap (carried over); a nested upgrade is refused
/// ([`Error::InvalidArgument`]); a close makes the swap fail with [`Error::StoreClosed`].
/// A panic in `progress` (a surface's wrapper) is caught here and stops the swap with
/// [`Error::Internal`], the store unchanged: it never unwinds through the store.
///
/// # Errors
/// The lookup errors of the table; [`KvStore::upgrade_by_swap_or_stop`]'s.
pub fn upgrade_by_swap(store: u64, progress: &mut Progress<'_>) -> Result<u64> {
    let s = handle::store(store)?;
    s.upgrade_by_swap_or_stop(&mut |done, total| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| progress(done, total)))
            .unwrap_or_else(|payload| {
                std::ops::ControlFlow::Break(Error::from_panic(payload.as_ref()))
            })
    })
}

/// Closes the iterator behind `iter` and retires the handle.
///
/// # Errors
/// The lookup errors of [`handle::iter`] (a second close gets [`Error::IteratorClosed`]).
pub fn close_iter(iter: u64) -> Result<()> {
    HANDLES.remove::<KvIterHandle>(iter)?.close();
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn paths_that_cannot_name_a_directory_are_invalid_arguments() {
        for bad in [&b""[..], b"a\0b"] {
            let e = store_path(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
        }
        assert!(store_path(b"/tmp/x").is_ok());
        let e = open_store(Some(b""), &StoreOptions::default()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        assert!(e.to_string().contains("path is empty"), "{e}");
        let e = open_store(None, &StoreOptions::default()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        let memory = StoreOptions::timestamped(EngineKind::Memory);
        let e = open_store(Some(b""), &memory).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        let h = open_store(None, &memory).unwrap();
        close_store(h).unwrap();
    }

    /// A Kafka Streams timestamped RocksDB store (family `keyValueWithTimestamp`) whose
    /// entries `a`..`e` are well formed except `c`, whose value is 3 bytes long.
    pub(crate) fn kafka_store_with_a_short_value(path: &std::path::Path) {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&o, path, ["default", "keyValueWithTimestamp"]).unwrap();
        let cf = db.cf_handle("keyValueWithTimestamp").unwrap();
        for (i, k) in [b"a", b"b", b"c", b"d", b"e"].into_iter().enumerate() {
            let v = if k == b"c" {
                b"abc".to_vec()
            } else {
                let mut v = (i as i64).to_be_bytes().to_vec();
                v.extend_from_slice(k);
                v
            };
            db.put_cf(&cf, k, v).unwrap();
        }
    }

    fn keys(batch: &[RawEntry]) -> Vec<&[u8]> {
        batch.iter().map(|(k, _)| k.as_slice()).collect()
    }

    #[test]
    fn a_short_value_loses_no_entry_of_a_batch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kafka");
        kafka_store_with_a_short_value(&path);
        let store = open_store(
            Some(path.as_os_str().as_encoded_bytes()),
            &StoreOptions::default(),
        )
        .unwrap();
        // Big batches: the entries before the bad one, the error, the rest.
        let it = open_iter(store, |s| s.all()).unwrap();
        let i = handle::iter(it).unwrap();
        assert_eq!(keys(&i.next_batch(10, usize::MAX).unwrap()), [b"a", b"b"]);
        let e = i.next_batch(10, usize::MAX).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidValue);
        assert!(e.to_string().contains("key \"c\""), "{e}");
        assert_eq!(keys(&i.next_batch(10, usize::MAX).unwrap()), [b"d", b"e"]);
        assert!(i.next_batch(10, usize::MAX).unwrap().is_empty());
        close_iter(it).unwrap();
        // One entry per batch: the bad entry is an error of its own, nothing is skipped.
        let it = open_iter(store, |s| s.reverse_all()).unwrap();
        let i = handle::iter(it).unwrap();
        let mut seen = Vec::new();
        let mut errors = 0;
        loop {
            match i.next_batch(1, usize::MAX) {
                Ok(b) if b.is_empty() => break,
                Ok(b) => seen.extend(keys(&b).into_iter().map(<[u8]>::to_vec)),
                Err(e) => {
                    assert_eq!(e.code(), ErrorCode::InvalidValue);
                    errors += 1;
                }
            }
        }
        assert_eq!(seen, [b"e", b"d", b"b", b"a"]);
        assert_eq!(errors, 1);
        // An error held back is reported once, even after the store was closed.
        let it2 = open_iter(store, |s| s.all()).unwrap();
        let i2 = handle::iter(it2).unwrap();
        assert_eq!(i2.next_batch(5, usize::MAX).unwrap().len(), 2);
        close_store(store).unwrap();
        assert_eq!(
            i2.next_batch(5, usize::MAX).unwrap_err().code(),
            ErrorCode::InvalidValue,
            "the error met before the close is still reported, once"
        );
        assert_eq!(
            i2.next_batch(5, usize::MAX).unwrap_err().code(),
            ErrorCode::IteratorClosed
        );
        close_iter(it).unwrap();
        close_iter(it2).unwrap();
        assert_eq!(
            i.next_batch(0, 1).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
    }

    #[test]
    fn a_panicking_progress_callback_stops_the_swap_and_does_not_unwind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plain");
        let plain = KvStore::open(&path, &StoreOptions::plain(EngineKind::RocksDb)).unwrap();
        let mut model = std::collections::BTreeMap::new();
        for i in 0..100u32 {
            let (k, v) = (format!("k{i:03}").into_bytes(), vec![b'v'; 50_000]);
            plain.put_raw(&k, Some(&v)).unwrap();
            model.insert(k, crate::format::value::encode(&v, -1));
        }
        plain.commit(&[], None).unwrap();
        plain.close().unwrap();
        let bytes = path.as_os_str().as_encoded_bytes();
        let h = open_store(Some(bytes), &StoreOptions::default()).unwrap();
        assert!(is_upgrading(h).unwrap());
        let mut calls = 0;
        let e = upgrade_by_swap(h, &mut |_, _| {
            calls += 1;
            panic!("wrapper bug");
        })
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::Internal);
        assert!(e.to_string().contains("wrapper bug"), "{e}");
        assert_eq!(calls, 1, "stopped at the first batch");
        assert!(is_upgrading(h).unwrap(), "unchanged");
        let s = handle::store(h).unwrap();
        let seen: std::collections::BTreeMap<_, _> = s
            .scan(
                crate::Isolation::ReadCommitted,
                &crate::KeyRange::all(),
                false,
            )
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        assert_eq!(seen, model);
        let mut last = (0, 0);
        assert_eq!(
            upgrade_by_swap(h, &mut |d, t| {
                last = (d, t);
                std::ops::ControlFlow::Continue(())
            })
            .unwrap(),
            100
        );
        assert_eq!(last, (100, 100));
        assert!(!is_upgrading(h).unwrap());
        close_store(h).unwrap();
        assert_eq!(is_upgrading(h).unwrap_err().code(), ErrorCode::StoreClosed);
    }

    #[test]
    fn versioned_handles_open_query_and_close_once() {
        let options =
            VersionedOptions::new(1_000).with_store(StoreOptions::plain(EngineKind::Memory));
        let h = open_versioned_store(None, &options).unwrap();
        let s = HANDLES.get::<VersionedStore>(h).unwrap();
        s.put(b"k", Some(b"a"), 1).unwrap();
        s.put(b"k", Some(b"b"), 5).unwrap();
        let it = open_versioned_iter(
            h,
            crate::Isolation::ReadUncommitted,
            b"k",
            None,
            None,
            VersionOrder::Descending,
        )
        .unwrap();
        let found = HANDLES.get::<VersionedIterHandle>(it).unwrap();
        assert_eq!(found.next().map(|r| r.timestamp), Some(5));
        assert_eq!(
            found.next().map(|r| (r.timestamp, r.valid_to)),
            Some((1, Some(5)))
        );
        assert!(found.next().is_none());
        close_versioned_iter(it).unwrap();
        assert_eq!(
            close_versioned_iter(it).unwrap_err().code(),
            ErrorCode::IteratorClosed
        );
        // A versioned handle is no other kind's.
        assert_eq!(close_store(h).unwrap_err().code(), ErrorCode::InvalidHandle);
        close_versioned_store(h).unwrap();
        assert_eq!(
            close_versioned_store(h).unwrap_err().code(),
            ErrorCode::StoreClosed
        );
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_paths_are_fine_on_unix() {
        let dir = tempfile::tempdir().unwrap();
        let mut path = dir.path().as_os_str().as_encoded_bytes().to_vec();
        path.extend_from_slice(b"/st\xffore");
        let h = open_store(Some(&path), &StoreOptions::default()).unwrap();
        close_store(h).unwrap();
    }
}
