//! The C API of key-value stores, driven with arbitrary call sequences and arguments and
//! checked against a model.
//!
//! The input opens a store (memory engine, or RocksDB in a temporary directory: two
//! targets, as a RocksDB open costs about 170 ms and a memory one nothing; plain or
//! timestamped values; a small `max_uncommitted_bytes` at times, so that transactions
//! spill), then runs operations chosen by the input: every
//! read and write function, put-all and restore batches, commits with offsets and
//! metadata, rollbacks, iterators of every kind read in batches of any size while the
//! store keeps changing, closing and reopening, and misuse: NULL pointers with non-zero
//! lengths, non-UTF-8 and NULL topics, unknown isolation levels, NULL, forged, closed and
//! wrong-kind handles.
//!
//! The model is two `BTreeMap`s (the writer's view and the last commit) plus the committed
//! offsets and metadata. Every result, every error code and every byte returned must be
//! the model's; a handle misuse must give exactly the error of `src/handle.rs`'s table.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::ops::Bound;
use std::ptr::{null, null_mut};

use crate::arbitrary::{Result, Unstructured};
use crate::bytes;
use kstate::capi::*;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;
/// A topic partition as the model keys it: topic bytes and partition.
pub(crate) type Partition = (Vec<u8>, i32);
/// One write of a batch: key, value (`None` deletes), timestamp.
type Write = (Vec<u8>, Option<Vec<u8>>, i64);

/// Runs the call sequence `data` against a store on the memory engine, or on RocksDB in a
/// temporary directory.
pub fn run(data: &[u8], rocksdb: bool) {
    let mut u = Unstructured::new(data);
    let Ok(mut session) = Session::open(&mut u, rocksdb) else {
        return;
    };
    for _ in 0..64 {
        if u.is_empty() || session.step(&mut u).is_err() {
            break;
        }
    }
    session.finish();
}

/// The code of `err` (0 for NULL), after checking its message; frees it.
pub(crate) fn code(err: *mut kstate_error_t) -> i32 {
    // SAFETY: `err` was returned by a kstate function and is freed exactly once, here.
    unsafe {
        let c = kstate_error_code(err);
        if !err.is_null() {
            let msg = kstate_error_message(err);
            assert!(!msg.is_null(), "an error has a message");
            assert!(CStr::from_ptr(msg).to_str().is_ok(), "messages are UTF-8");
            assert_ne!(c, KSTATE_OK, "an error is not OK");
        }
        kstate_error_free(err);
        c
    }
}

pub(crate) fn ok(err: *mut kstate_error_t) {
    if !err.is_null() {
        // SAFETY: a live error returned by kstate; its message is valid until it is freed.
        let msg = unsafe { CStr::from_ptr(kstate_error_message(err)) }.to_owned();
        panic!("unexpected error {}: {msg:?}", code(err));
    }
}

pub(crate) fn expect(err: *mut kstate_error_t, want: i32) {
    assert_eq!(code(err), want, "error code");
}

/// Checks that `err` has one of two codes: which one a call reports first is not part of
/// the contract when two rules are broken at once.
pub(crate) fn expect_either(err: *mut kstate_error_t, a: i32, b: i32) {
    let c = code(err);
    assert!(c == a || c == b, "error code {c}, expected {a} or {b}");
}

/// Takes the bytes out of a `kstate_bytes_t` and frees it.
pub(crate) fn take(mut b: kstate_bytes_t) -> Vec<u8> {
    let v = if b.ptr.is_null() {
        assert_eq!(b.len, 0);
        Vec::new()
    } else {
        // SAFETY: kstate returned `len` readable bytes at `ptr`, freed just below.
        unsafe { std::slice::from_raw_parts(b.ptr, b.len) }.to_vec()
    };
    // SAFETY: returned by kstate, freed once.
    unsafe { kstate_bytes_free(&mut b) };
    v
}

pub(crate) const NO_BYTES: kstate_bytes_t = kstate_bytes_t {
    ptr: null_mut(),
    len: 0,
};

/// A small key: few distinct keys, so that writes, reads and ranges meet each other.
pub(crate) fn key(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    let len = u.int_in_range(0..=2)?;
    let mut k = Vec::with_capacity(len);
    for _ in 0..len {
        k.push(*u.choose(&[0x00, 0x01, b'a', b'b', 0x7F, 0xFF])?);
    }
    Ok(k)
}

/// A pointer for `data`: NULL is allowed (and sometimes chosen) when `data` is empty.
pub(crate) fn ptr(u: &mut Unstructured<'_>, data: &[u8]) -> Result<*const u8> {
    Ok(if data.is_empty() && u.arbitrary()? {
        null()
    } else {
        data.as_ptr()
    })
}

/// `data`'s pointer (never NULL, even when empty: an empty slice's pointer is dangling but
/// not NULL), or NULL when the argument is to be absent.
pub(crate) fn present_or_null(data: &[u8], absent: bool) -> *const u8 {
    if absent {
        null()
    } else {
        data.as_ptr()
    }
}

/// A topic: valid UTF-8 names from a small set, or (with `bad`) NULL or not UTF-8.
pub(crate) fn topic(u: &mut Unstructured<'_>) -> Result<(Option<CString>, bool)> {
    Ok(match u.int_in_range(0..=9)? {
        0 => (None, false),
        1 => (Some(CString::new(vec![b'x', 0xFF]).unwrap()), false),
        n => (
            Some(CString::new(["in", "out", "", "a-b", "é"][n as usize % 5]).unwrap()),
            true,
        ),
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Plain,
    Timestamped,
}

/// What a commit or restore does to the committed offsets and metadata.
pub(crate) struct CommitArgs {
    pub(crate) offsets: Vec<kstate_offset_t>,
    _topics: Vec<Option<CString>>,
    pub(crate) valid: bool,
    pub(crate) model: Vec<(Partition, Option<i64>)>,
    pub(crate) metadata: Option<Vec<u8>>,
    pub(crate) metadata_ptr: *const u8,
    pub(crate) metadata_len: usize,
}

impl CommitArgs {
    pub(crate) fn arbitrary(u: &mut Unstructured<'_>) -> Result<Self> {
        let mut offsets = Vec::new();
        let mut topics = Vec::new();
        let mut valid = true;
        let mut model = Vec::new();
        for _ in 0..u.int_in_range(0..=3)? {
            let (t, good) = topic(u)?;
            valid &= good;
            let partition = u.int_in_range(-1..=2)?;
            let offset = u.int_in_range(-4..=1000)?;
            let has_offset = u.ratio(4, 5)?;
            if let Some(t) = &t {
                model.push((
                    (t.as_bytes().to_vec(), partition),
                    has_offset.then_some(offset),
                ));
            }
            offsets.push(kstate_offset_t {
                topic: t.as_ref().map_or(null(), |c| c.as_ptr()),
                partition,
                offset,
                has_offset,
            });
            topics.push(t);
        }
        let (metadata, metadata_ptr, metadata_len) = match u.int_in_range(0..=5)? {
            // NULL with length 0 keeps the stored blob.
            0..=2 => (None, null(), 0),
            // NULL with a length is refused.
            3 => {
                valid = false;
                (None, null(), 3)
            }
            _ => {
                let m = bytes(u, 6)?;
                let (p, l) = (m.as_ptr(), m.len());
                (Some(m), p, l)
            }
        };
        Ok(CommitArgs {
            offsets,
            _topics: topics,
            valid,
            model,
            metadata,
            metadata_ptr,
            metadata_len,
        })
    }

    /// The offsets array: NULL when empty, at times.
    pub(crate) fn ptr(&self, u: &mut Unstructured<'_>) -> Result<*const kstate_offset_t> {
        Ok(if self.offsets.is_empty() && u.arbitrary()? {
            null()
        } else {
            self.offsets.as_ptr()
        })
    }
}

/// An open iterator and what it must still return.
struct Iter {
    handle: *mut kstate_kv_iter_t,
    expected: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
    /// Closed with its store: every call fails, but it must still be released.
    store_closed: bool,
}

/// The store under test and its model.
struct Session {
    rocksdb: Option<std::path::PathBuf>,
    format: Format,
    max_uncommitted: u64,
    store: *mut kstate_kv_t,
    writer: Map,
    committed: Map,
    offsets: BTreeMap<Partition, i64>,
    metadata: Option<Vec<u8>>,
    /// Some write since the last commit or rollback surely buffered something.
    dirty: bool,
    /// Some write since then may have buffered something (a delete of an absent key).
    maybe_dirty: bool,
    iters: Vec<Iter>,
    closed_stores: Vec<*mut kstate_kv_t>,
    released_iters: Vec<*mut kstate_kv_iter_t>,
}

/// A distinct directory per input, removed when the input is done.
pub(crate) fn temp_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("kstate-fuzz-{}-{n}", std::process::id()))
}

impl Session {
    fn open(u: &mut Unstructured<'_>, rocksdb: bool) -> Result<Self> {
        let flags: u8 = u.arbitrary()?;
        let mut s = Session {
            rocksdb: rocksdb.then(temp_dir),
            format: if flags & 1 != 0 {
                Format::Plain
            } else {
                Format::Timestamped
            },
            max_uncommitted: if flags & 2 != 0 { 64 } else { 64 << 20 },
            store: null_mut(),
            writer: Map::new(),
            committed: Map::new(),
            offsets: BTreeMap::new(),
            metadata: None,
            dirty: false,
            maybe_dirty: false,
            iters: Vec::new(),
            closed_stores: Vec::new(),
            released_iters: Vec::new(),
        };
        s.store = s.open_store();
        Ok(s)
    }

    fn open_store(&self) -> *mut kstate_kv_t {
        // SAFETY: a zeroed options struct is a valid buffer for kstate_kv_options_init,
        // which fills it for the size given.
        let mut options: kstate_kv_options_t = unsafe { std::mem::zeroed() };
        // SAFETY: `options` is writable for its full size.
        ok(unsafe {
            kstate_kv_options_init(&mut options, std::mem::size_of::<kstate_kv_options_t>())
        });
        options.engine = if self.rocksdb.is_some() {
            KSTATE_ENGINE_ROCKSDB
        } else {
            KSTATE_ENGINE_MEMORY
        };
        options.value_format = match self.format {
            Format::Plain => KSTATE_FORMAT_PLAIN,
            Format::Timestamped => KSTATE_FORMAT_TIMESTAMPED,
        };
        options.max_uncommitted_bytes = self.max_uncommitted;
        let path = self
            .rocksdb
            .as_ref()
            .map(|p| CString::new(p.to_str().unwrap()).unwrap());
        let mut store = null_mut();
        // SAFETY: path NULL or NUL-terminated, options initialised, out-parameter valid.
        ok(unsafe {
            kstate_kv_open(
                path.as_ref().map_or(null(), |p| p.as_ptr()),
                &options,
                &mut store,
            )
        });
        assert!(!store.is_null());
        store
    }

    fn raw(&self, value: &[u8], ts: i64) -> Vec<u8> {
        match self.format {
            Format::Plain => value.to_vec(),
            Format::Timestamped => [&ts.to_be_bytes()[..], value].concat(),
        }
    }

    /// Whether a raw value fits the store's layout.
    fn raw_ok(&self, raw: &[u8]) -> bool {
        self.format == Format::Plain || raw.len() >= 8
    }

    fn typed(&self) -> bool {
        self.format == Format::Timestamped
    }

    fn wrote(&mut self) {
        self.dirty = true;
        self.maybe_dirty = true;
    }

    fn step(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        match u.int_in_range(0..=19)? {
            0 | 1 => self.put(u),
            2 => self.put_raw(u),
            3 | 4 => self.get(u),
            5 => self.get_raw(u),
            6 => self.delete(u),
            7 => self.put_if_absent(u),
            8 => self.put_all(u),
            9 => self.commit(u),
            10 => self.committed_reads(u),
            11 => self.rollback(),
            12 | 13 => self.open_iter(u),
            14 | 15 => self.next_batch(u),
            16 => self.close_iter(u),
            17 => self.misuse(u),
            18 => self.restore(u),
            _ => self.reopen(u),
        }
    }

    fn put(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (k, v, ts) = (key(u)?, bytes(u, 12)?, u.arbitrary::<i64>()?);
        if u.ratio(1, 10)? {
            // SAFETY: NULL with a length is refused before anything is read.
            let e = unsafe { kstate_kv_put(self.store, null(), 1, v.as_ptr(), v.len(), ts) };
            if self.typed() {
                expect(e, KSTATE_ERR_INVALID_ARGUMENT);
            } else {
                // Two rules broken at once: either may be reported.
                expect_either(e, KSTATE_ERR_INVALID_ARGUMENT, KSTATE_ERR_FORMAT_MISMATCH);
            }
            return Ok(());
        }
        let (kp, vp) = (ptr(u, &k)?, ptr(u, &v)?);
        // SAFETY: pointers valid for their lengths (or NULL with length 0).
        let e = unsafe { kstate_kv_put(self.store, kp, k.len(), vp, v.len(), ts) };
        if self.typed() {
            ok(e);
            self.writer.insert(k, self.raw(&v, ts));
            self.wrote();
        } else {
            expect(e, KSTATE_ERR_FORMAT_MISMATCH);
        }
        Ok(())
    }

    fn put_raw(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let k = key(u)?;
        let delete = u.ratio(1, 4)?;
        let raw = if delete { Vec::new() } else { bytes(u, 14)? };
        let kp = ptr(u, &k)?;
        let vp = present_or_null(&raw, delete);
        // SAFETY: pointers valid for their lengths (or NULL with length 0).
        let e = unsafe { kstate_kv_put_raw(self.store, kp, k.len(), vp, raw.len()) };
        if delete {
            ok(e);
            self.writer.remove(&k);
            self.maybe_dirty = true;
        } else if self.raw_ok(&raw) {
            ok(e);
            self.writer.insert(k, raw);
            self.wrote();
        } else {
            expect(e, KSTATE_ERR_INVALID_VALUE);
        }
        Ok(())
    }

    /// The value and timestamp the typed functions return for a raw value.
    fn split(raw: &[u8]) -> (Vec<u8>, i64) {
        let (ts, v) = raw.split_at(8);
        (v.to_vec(), i64::from_be_bytes(ts.try_into().unwrap()))
    }

    fn check_typed(
        &self,
        e: *mut kstate_error_t,
        want: Option<&Vec<u8>>,
        value: kstate_bytes_t,
        ts: i64,
        found: bool,
    ) {
        if !self.typed() {
            expect(e, KSTATE_ERR_FORMAT_MISMATCH);
            assert!(!found && value.ptr.is_null() && ts == 0, "outputs reset");
            return;
        }
        ok(e);
        let got = take(value);
        match want {
            Some(raw) => {
                assert!(found);
                assert_eq!((got, ts), Self::split(raw));
            }
            None => {
                assert!(!found && got.is_empty() && ts == 0);
            }
        }
    }

    fn get(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let k = key(u)?;
        let committed = u.arbitrary()?;
        let kp = ptr(u, &k)?;
        let (mut value, mut ts, mut found) = (NO_BYTES, 7i64, true);
        // SAFETY: key valid for its length; out-parameters writable.
        let e = unsafe {
            if committed {
                kstate_kv_get_committed(self.store, kp, k.len(), &mut value, &mut ts, &mut found)
            } else {
                kstate_kv_get(self.store, kp, k.len(), &mut value, &mut ts, &mut found)
            }
        };
        let view = if committed {
            &self.committed
        } else {
            &self.writer
        };
        self.check_typed(e, view.get(&k), value, ts, found);
        Ok(())
    }

    fn get_raw(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let k = key(u)?;
        let isolation = u.int_in_range(0..=2)?;
        let kp = ptr(u, &k)?;
        let (mut value, mut found) = (NO_BYTES, true);
        // SAFETY: key valid for its length; out-parameters writable.
        let e = unsafe {
            kstate_kv_get_raw(self.store, isolation, kp, k.len(), &mut value, &mut found)
        };
        let view = match isolation {
            KSTATE_READ_UNCOMMITTED => &self.writer,
            KSTATE_READ_COMMITTED => &self.committed,
            _ => {
                expect(e, KSTATE_ERR_INVALID_ARGUMENT);
                assert!(!found && value.ptr.is_null());
                return Ok(());
            }
        };
        ok(e);
        assert_eq!(found, view.contains_key(&k));
        assert_eq!(take(value), view.get(&k).cloned().unwrap_or_default());
        Ok(())
    }

    fn delete(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let k = key(u)?;
        let kp = ptr(u, &k)?;
        if u.arbitrary()? {
            let (mut value, mut ts, mut found) = (NO_BYTES, 7i64, true);
            // SAFETY: key valid for its length; out-parameters writable.
            let e = unsafe {
                kstate_kv_delete(self.store, kp, k.len(), &mut value, &mut ts, &mut found)
            };
            let old = self.writer.get(&k).cloned();
            self.check_typed(e, old.as_ref(), value, ts, found);
            if self.typed() {
                self.writer.remove(&k);
                self.maybe_dirty = true;
                self.dirty |= old.is_some();
            }
        } else {
            let (mut value, mut found) = (NO_BYTES, true);
            // SAFETY: key valid for its length; out-parameters writable.
            let e =
                unsafe { kstate_kv_delete_raw(self.store, kp, k.len(), &mut value, &mut found) };
            ok(e);
            let old = self.writer.remove(&k);
            assert_eq!(found, old.is_some());
            assert_eq!(take(value), old.clone().unwrap_or_default());
            self.maybe_dirty = true;
            self.dirty |= old.is_some();
        }
        Ok(())
    }

    fn put_if_absent(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (k, v, ts) = (key(u)?, bytes(u, 12)?, u.arbitrary::<i64>()?);
        let (kp, vp) = (ptr(u, &k)?, ptr(u, &v)?);
        let existing = self.writer.get(&k).cloned();
        if u.arbitrary()? {
            let (mut value, mut old_ts, mut found) = (NO_BYTES, 7i64, true);
            // SAFETY: pointers valid for their lengths; out-parameters writable.
            let e = unsafe {
                kstate_kv_put_if_absent(
                    self.store,
                    kp,
                    k.len(),
                    vp,
                    v.len(),
                    ts,
                    &mut value,
                    &mut old_ts,
                    &mut found,
                )
            };
            self.check_typed(e, existing.as_ref(), value, old_ts, found);
            if self.typed() && existing.is_none() {
                self.writer.insert(k, self.raw(&v, ts));
                self.wrote();
            }
        } else {
            let raw = bytes(u, 14)?;
            let rp = raw.as_ptr();
            let (mut value, mut found) = (NO_BYTES, true);
            // SAFETY: pointers valid for their lengths; out-parameters writable.
            let e = unsafe {
                kstate_kv_put_if_absent_raw(
                    self.store,
                    kp,
                    k.len(),
                    rp,
                    raw.len(),
                    &mut value,
                    &mut found,
                )
            };
            if !self.raw_ok(&raw) {
                expect(e, KSTATE_ERR_INVALID_VALUE);
                return Ok(());
            }
            ok(e);
            assert_eq!(found, existing.is_some());
            assert_eq!(take(value), existing.clone().unwrap_or_default());
            if existing.is_none() {
                self.writer.insert(k, raw);
                self.wrote();
            }
        }
        Ok(())
    }

    /// Entries for put-all or a restore: `(key, value or None, timestamp)`, and whether one
    /// carries NULL data with a length.
    fn writes(u: &mut Unstructured<'_>, raw: bool) -> Result<(Vec<Write>, bool)> {
        let mut entries = Vec::new();
        for _ in 0..u.int_in_range(0..=4)? {
            let k = key(u)?;
            let v = if raw && u.ratio(1, 4)? {
                None
            } else {
                Some(bytes(u, 14)?)
            };
            entries.push((k, v, u.arbitrary()?));
        }
        Ok((entries, u.ratio(1, 12)?))
    }

    fn write_structs(entries: &[Write], null_key: bool) -> Vec<kstate_kv_write_t> {
        let mut out: Vec<kstate_kv_write_t> = entries
            .iter()
            .map(|(k, v, ts)| kstate_kv_write_t {
                key: k.as_ptr(),
                key_len: k.len(),
                value: v.as_ref().map_or(null(), |v| v.as_ptr()),
                value_len: v.as_ref().map_or(0, Vec::len),
                timestamp: *ts,
            })
            .collect();
        if null_key {
            out.push(kstate_kv_write_t {
                key: null(),
                key_len: 2,
                value: [].as_ptr(),
                value_len: 0,
                timestamp: 0,
            });
        }
        out
    }

    fn put_all(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let raw = !self.typed() || u.arbitrary()?;
        let (entries, null_key) = Self::writes(u, raw)?;
        let structs = Self::write_structs(&entries, null_key);
        let sp = if structs.is_empty() && u.arbitrary()? {
            null()
        } else {
            structs.as_ptr()
        };
        // SAFETY: `structs` and the buffers it points into live until after the call.
        let e = unsafe {
            if raw {
                kstate_kv_put_all_raw(self.store, sp, structs.len())
            } else {
                kstate_kv_put_all(self.store, sp, structs.len())
            }
        };
        let converted: Vec<(Vec<u8>, Option<Vec<u8>>)> = entries
            .iter()
            .map(|(k, v, ts)| {
                let v = v
                    .as_ref()
                    .map(|v| if raw { v.clone() } else { self.raw(v, *ts) });
                (k.clone(), v)
            })
            .collect();
        if null_key {
            expect(e, KSTATE_ERR_INVALID_ARGUMENT);
        } else if raw
            && converted
                .iter()
                .any(|(_, v)| v.as_ref().is_some_and(|v| !self.raw_ok(v)))
        {
            expect(e, KSTATE_ERR_INVALID_VALUE);
        } else {
            ok(e);
            for (k, v) in converted {
                self.maybe_dirty = true;
                match v {
                    Some(v) => {
                        self.writer.insert(k, v);
                        self.dirty = true;
                    }
                    None => {
                        self.dirty |= self.writer.remove(&k).is_some();
                    }
                }
            }
        }
        Ok(())
    }

    fn apply_commit(&mut self, args: &CommitArgs) {
        if args.model.is_empty() {
            self.offsets.clear();
        }
        for (tp, offset) in &args.model {
            match offset {
                Some(o) => self.offsets.insert(tp.clone(), *o),
                None => self.offsets.remove(tp),
            };
        }
        if let Some(m) = &args.metadata {
            self.metadata = Some(m.clone());
        }
        self.dirty = false;
        self.maybe_dirty = false;
    }

    fn commit(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let args = CommitArgs::arbitrary(u)?;
        let op = args.ptr(u)?;
        // SAFETY: the offsets, their topics and the metadata live until after the call.
        let e = unsafe {
            kstate_kv_commit(
                self.store,
                op,
                args.offsets.len(),
                args.metadata_ptr,
                args.metadata_len,
            )
        };
        if !args.valid {
            expect(e, KSTATE_ERR_INVALID_ARGUMENT);
            return Ok(());
        }
        ok(e);
        self.committed = self.writer.clone();
        self.apply_commit(&args);
        self.check_uncommitted_bytes(true);
        Ok(())
    }

    fn check_uncommitted_bytes(&self, clean: bool) {
        let mut n = u64::MAX;
        // SAFETY: out-parameter writable.
        ok(unsafe { kstate_kv_approximate_num_uncommitted_bytes(self.store, &mut n) });
        if clean {
            assert_eq!(n, 0, "nothing uncommitted after a commit or rollback");
        }
    }

    fn committed_reads(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (t, good) = topic(u)?;
        let partition = u.int_in_range(-1..=2)?;
        let (mut offset, mut found) = (7i64, true);
        // SAFETY: topic NULL or NUL-terminated; out-parameters writable.
        let e = unsafe {
            kstate_kv_committed_offset(
                self.store,
                t.as_ref().map_or(null(), |c| c.as_ptr()),
                partition,
                &mut offset,
                &mut found,
            )
        };
        if good {
            ok(e);
            let want = self
                .offsets
                .get(&(t.unwrap().as_bytes().to_vec(), partition))
                .copied();
            assert_eq!((found, offset), (want.is_some(), want.unwrap_or(0)));
        } else {
            expect(e, KSTATE_ERR_INVALID_ARGUMENT);
        }
        let (mut blob, mut found) = (NO_BYTES, true);
        // SAFETY: out-parameters writable.
        ok(unsafe { kstate_kv_committed_metadata(self.store, &mut blob, &mut found) });
        assert_eq!(found, self.metadata.is_some());
        assert_eq!(take(blob), self.metadata.clone().unwrap_or_default());
        Ok(())
    }

    fn rollback(&mut self) -> Result<()> {
        ok(kstate_kv_rollback(self.store));
        self.writer = self.committed.clone();
        self.dirty = false;
        self.maybe_dirty = false;
        self.check_uncommitted_bytes(true);
        Ok(())
    }

    fn restore(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (entries, null_key) = Self::writes(u, true)?;
        let structs = Self::write_structs(&entries, null_key);
        let args = CommitArgs::arbitrary(u)?;
        let op = args.ptr(u)?;
        let mut pending = u64::MAX;
        // SAFETY: out-parameter writable.
        ok(unsafe { kstate_kv_approximate_num_uncommitted_bytes(self.store, &mut pending) });
        if self.dirty {
            assert!(pending > 0, "buffered writes are counted");
        }
        if !self.maybe_dirty {
            assert_eq!(pending, 0, "nothing was written");
        }
        // SAFETY: every array and buffer lives until after the call.
        let e = unsafe {
            kstate_kv_restore_batch(
                self.store,
                structs.as_ptr(),
                structs.len(),
                op,
                args.offsets.len(),
                args.metadata_ptr,
                args.metadata_len,
            )
        };
        let bad_value = entries
            .iter()
            .any(|(_, v, _)| v.as_ref().is_some_and(|v| !self.raw_ok(v)));
        if null_key || !args.valid {
            expect(e, KSTATE_ERR_INVALID_ARGUMENT);
        } else if bad_value {
            expect(e, KSTATE_ERR_INVALID_VALUE);
        } else if pending > 0 {
            expect(e, KSTATE_ERR_INVALID_ARGUMENT);
        } else {
            ok(e);
            for (k, v, _) in entries {
                match v {
                    Some(v) => self.committed.insert(k, v),
                    None => self.committed.remove(&k),
                };
            }
            self.writer = self.committed.clone();
            self.apply_commit(&args);
        }
        Ok(())
    }

    fn open_iter(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (from, to) = (key(u)?, key(u)?);
        let (from_open, to_open) = (u.ratio(1, 3)?, u.ratio(1, 3)?);
        let bound = |k: &Vec<u8>, open: bool| {
            if open {
                Bound::Unbounded
            } else {
                Bound::Included(k.clone())
            }
        };
        let (lo, hi) = (bound(&from, from_open), bound(&to, to_open));
        let fp = present_or_null(&from, from_open);
        let tp = present_or_null(&to, to_open);
        let (fl, tl) = (
            if from_open { 0 } else { from.len() },
            if to_open { 0 } else { to.len() },
        );
        let mut it = null_mut();
        let kind = u.int_in_range(0..=6)?;
        let mut committed = false;
        let mut reverse = false;
        let mut prefix = None;
        // SAFETY: bounds valid for their lengths (or NULL with length 0), out-parameter
        // writable.
        let e = unsafe {
            match kind {
                0 => kstate_kv_range(self.store, fp, fl, tp, tl, &mut it),
                1 => {
                    reverse = true;
                    kstate_kv_reverse_range(self.store, fp, fl, tp, tl, &mut it)
                }
                2 => kstate_kv_all(self.store, &mut it),
                3 => {
                    reverse = true;
                    kstate_kv_reverse_all(self.store, &mut it)
                }
                4 => {
                    prefix = Some(from.clone());
                    kstate_kv_prefix_scan(self.store, from.as_ptr(), from.len(), &mut it)
                }
                5 => {
                    // NULL bound with a length.
                    let e = kstate_kv_range(self.store, null(), 1, tp, tl, &mut it);
                    expect(e, KSTATE_ERR_INVALID_ARGUMENT);
                    assert!(it.is_null());
                    return Ok(());
                }
                _ => {
                    let isolation = u.int_in_range(0..=2)?;
                    reverse = u.arbitrary()?;
                    committed = isolation == KSTATE_READ_COMMITTED;
                    let e = kstate_kv_scan(self.store, isolation, fp, fl, tp, tl, reverse, &mut it);
                    if isolation > KSTATE_READ_COMMITTED {
                        expect(e, KSTATE_ERR_INVALID_ARGUMENT);
                        assert!(it.is_null());
                        return Ok(());
                    }
                    e
                }
            }
        };
        ok(e);
        assert!(!it.is_null());
        let view = if committed {
            &self.committed
        } else {
            &self.writer
        };
        let mut expected: Vec<(Vec<u8>, Vec<u8>)> = match (kind, prefix) {
            (_, Some(p)) => view
                .iter()
                .filter(|(k, _)| k.starts_with(&p))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            (2 | 3, None) => view.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            _ => {
                let empty = matches!((&lo, &hi), (Bound::Included(a), Bound::Included(b)) if a > b);
                if empty {
                    Vec::new()
                } else {
                    view.range((lo, hi))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                }
            }
        };
        if reverse {
            expected.reverse();
        }
        self.iters.push(Iter {
            handle: it,
            expected,
            pos: 0,
            store_closed: false,
        });
        Ok(())
    }

    fn next_batch(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.iters.is_empty() {
            return Ok(());
        }
        let i = u.choose_index(self.iters.len())?;
        let max_entries = u.int_in_range(0..=4)?;
        let max_bytes = u.int_in_range(0..=24)?;
        let typed = self.typed();
        let iter = &mut self.iters[i];
        let mut batch = kstate_kv_batch_t {
            entries: null(),
            len: 0,
            owner: null_mut(),
        };
        // SAFETY: out-parameter writable.
        let e =
            unsafe { kstate_kv_iter_next_batch(iter.handle, max_entries, max_bytes, &mut batch) };
        match (iter.store_closed, max_entries) {
            (true, 0) => expect_either(e, KSTATE_ERR_ITERATOR_CLOSED, KSTATE_ERR_INVALID_ARGUMENT),
            (true, _) => expect(e, KSTATE_ERR_ITERATOR_CLOSED),
            (false, 0) => expect(e, KSTATE_ERR_INVALID_ARGUMENT),
            (false, _) => ok(e),
        }
        if iter.store_closed || max_entries == 0 {
            assert_eq!(batch.len, 0);
            return Ok(());
        }
        // The model of a batch: entries while fewer than max_entries were taken and their
        // key and value bytes stay under max_bytes (0 = no bound).
        let bound = if max_bytes == 0 {
            usize::MAX
        } else {
            max_bytes
        };
        let rest = &iter.expected[iter.pos..];
        let (mut n, mut size) = (0, 0usize);
        while n < rest.len() {
            size += rest[n].0.len() + rest[n].1.len();
            n += 1;
            if n == max_entries || size >= bound {
                break;
            }
        }
        assert_eq!(batch.len, n, "batch length");
        let entries = if n == 0 {
            &[][..]
        } else {
            // SAFETY: kstate returned `len` entries at `entries`, valid until freed below.
            unsafe { std::slice::from_raw_parts(batch.entries, batch.len) }
        };
        for (entry, (k, raw)) in entries.iter().zip(rest) {
            // SAFETY: every pointer of an entry points into the live batch.
            let slice = |p: *const u8, len: usize| unsafe { std::slice::from_raw_parts(p, len) };
            assert_eq!(slice(entry.key, entry.key_len), &k[..]);
            assert_eq!(slice(entry.raw_value, entry.raw_value_len), &raw[..]);
            let (value, ts) = if typed {
                Self::split(raw)
            } else {
                (raw.clone(), -1)
            };
            assert_eq!(slice(entry.value, entry.value_len), &value[..]);
            assert_eq!(entry.timestamp, ts);
        }
        iter.pos += n;
        // SAFETY: returned by kstate, freed once.
        unsafe { kstate_kv_batch_free(&mut batch) };
        Ok(())
    }

    fn close_iter(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.iters.is_empty() {
            return Ok(());
        }
        let iter = self.iters.remove(u.choose_index(self.iters.len())?);
        ok(kstate_kv_iter_close(iter.handle));
        self.released_iters.push(iter.handle);
        Ok(())
    }

    /// A call with a handle that is not a live store (or iterator) handle.
    fn misuse(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        const KV: u64 = 0x4B01 << 48;
        const ITER: u64 = 0x4B02 << 48;
        let forged_serial = (1 << 47) | (u.arbitrary::<u64>()? & ((1 << 47) - 1));
        let (store, store_code): (*mut kstate_kv_t, i32) = match u.int_in_range(0..=4)? {
            0 => (null_mut(), KSTATE_ERR_INVALID_HANDLE),
            // Not a kstate handle number at all.
            1 => (
                ((u.arbitrary::<u64>()? & !(0xFF << 56)) | (0x11 << 56)) as usize as *mut _,
                KSTATE_ERR_INVALID_HANDLE,
            ),
            // The right kind, never issued.
            2 => (
                (KV | forged_serial) as usize as *mut _,
                KSTATE_ERR_INVALID_HANDLE,
            ),
            3 if !self.iters.is_empty() => {
                let it = self.iters[u.choose_index(self.iters.len())?].handle;
                (it.cast(), KSTATE_ERR_INVALID_HANDLE)
            }
            _ if !self.closed_stores.is_empty() => {
                (*u.choose(&self.closed_stores)?, KSTATE_ERR_STORE_CLOSED)
            }
            _ => (null_mut(), KSTATE_ERR_INVALID_HANDLE),
        };
        let k = b"k";
        let (mut value, mut ts, mut found) = (NO_BYTES, 0i64, false);
        // SAFETY: valid arguments apart from the handle, which is never dereferenced.
        let e = unsafe {
            match u.int_in_range(0..=5)? {
                0 => kstate_kv_put_raw(store, k.as_ptr(), 1, [0u8; 8].as_ptr(), 8),
                1 => kstate_kv_get(store, k.as_ptr(), 1, &mut value, &mut ts, &mut found),
                2 => kstate_kv_commit(store, null(), 0, null(), 0),
                3 => kstate_kv_rollback(store),
                4 => {
                    let mut it = null_mut();
                    let e = kstate_kv_all(store, &mut it);
                    assert!(it.is_null());
                    e
                }
                _ => kstate_kv_close(store),
            }
        };
        expect(e, store_code);
        assert!(!found && value.ptr.is_null());

        // The same for iterator functions.
        let (iter, iter_code): (*mut kstate_kv_iter_t, i32) = match u.int_in_range(0..=3)? {
            0 => (null_mut(), KSTATE_ERR_INVALID_HANDLE),
            1 => (
                (ITER | forged_serial) as usize as *mut _,
                KSTATE_ERR_INVALID_HANDLE,
            ),
            2 => (self.store.cast(), KSTATE_ERR_INVALID_HANDLE),
            _ if !self.released_iters.is_empty() => {
                (*u.choose(&self.released_iters)?, KSTATE_ERR_ITERATOR_CLOSED)
            }
            _ => (null_mut(), KSTATE_ERR_INVALID_HANDLE),
        };
        let mut batch = kstate_kv_batch_t {
            entries: null(),
            len: 0,
            owner: null_mut(),
        };
        // SAFETY: the handle is never dereferenced; the out-parameter is writable.
        let e = unsafe {
            if u.arbitrary()? {
                kstate_kv_iter_next_batch(iter, 1, 0, &mut batch)
            } else {
                kstate_kv_iter_close(iter)
            }
        };
        expect(e, iter_code);
        assert_eq!(batch.len, 0);
        self.other_kinds(u)
    }

    /// The live key-value handles given to window and session functions: refused as
    /// handles of another kind, and left working (the model's later checks use them).
    fn other_kinds(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let store = self.store;
        let e = match u.int_in_range(0..=3)? {
            0 => kstate_window_close(store.cast()),
            1 => kstate_session_close(store.cast()),
            2 => kstate_window_rollback(store.cast()),
            _ => kstate_session_rollback(store.cast()),
        };
        expect(e, KSTATE_ERR_INVALID_HANDLE);
        if !self.iters.is_empty() {
            let it = self.iters[u.choose_index(self.iters.len())?].handle;
            let e = if u.arbitrary()? {
                kstate_window_iter_close(it.cast())
            } else {
                kstate_session_iter_close(it.cast())
            };
            expect(e, KSTATE_ERR_INVALID_HANDLE);
        }
        Ok(())
    }

    /// Closes the store (its iterators with it) and opens it again: a RocksDB store comes
    /// back with its last commit, a memory store empty.
    fn reopen(&mut self, _u: &mut Unstructured<'_>) -> Result<()> {
        ok(kstate_kv_close(self.store));
        self.closed_stores.push(self.store);
        for it in &mut self.iters {
            it.store_closed = true;
        }
        self.store = self.open_store();
        if self.rocksdb.is_some() {
            self.writer = self.committed.clone();
        } else {
            self.writer.clear();
            self.committed.clear();
            self.offsets.clear();
            self.metadata = None;
        }
        self.dirty = false;
        self.maybe_dirty = false;
        Ok(())
    }

    /// Releases everything; a second close of each handle is an error of its own.
    fn finish(self) {
        for it in &self.iters {
            ok(kstate_kv_iter_close(it.handle));
            expect(kstate_kv_iter_close(it.handle), KSTATE_ERR_ITERATOR_CLOSED);
        }
        ok(kstate_kv_close(self.store));
        expect(kstate_kv_close(self.store), KSTATE_ERR_STORE_CLOSED);
        if let Some(dir) = &self.rocksdb {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
