//! The C API of window and session stores, driven with arbitrary call sequences and
//! arguments and checked against a model.
//!
//! The input opens a store (window: timestamped or plain, with or without
//! `retain_duplicates`, a window size; or session; small retentions and segment intervals,
//! so that the stream time expires segments within a few calls; a small
//! `max_uncommitted_bytes` at times, so that transactions spill), on the memory engine or
//! on RocksDB in a temporary directory, then runs calls chosen by the input: puts, raw puts
//! and deletes, session puts and removes, point fetches, every query (fetch by key, key
//! range, time range, all, and their backward forms; `findSessions` and session fetches)
//! under both isolation levels, iterators read one entry at a time across later writes,
//! commits, rollbacks and closes, commits with offsets and metadata, reopening, and misuse:
//! NULL data with lengths, NULL out-parameters, unknown isolation levels, invalid options,
//! NULL, forged, closed and wrong-kind handles, double closes.
//!
//! The model is Kafka's semantics written down directly: the entries of each view keyed by
//! `(segment, Kafka key)` (segment = time / interval, Kafka's key layout), one stream time
//! per view (the largest window start or session end written; a rollback returns the
//! writer's to the committed one), a write dropped when its segment lies below
//! `segment(stream time - retention)`, a read returning only times after
//! `stream time - retention`, results in Kafka's order (segment by segment, then the
//! Kafka key's bytes; backward: the reverse), an iterator fixed at its creation. A window
//! store without duplicates on the memory engine answers key-range, time-range and `all` queries as Kafka's
//! in-memory window store: the windows of starts `>= 0` inside the bounds (no byte bounds),
//! by start, then record key and seqnum bytes.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::ptr::{null, null_mut};

use crate::arbitrary::{Result, Unstructured};
use crate::bytes;
use crate::capi_model::{
    code, expect, key, ok, present_or_null, ptr, take, temp_dir, topic, CommitArgs, Partition,
    NO_BYTES,
};
use kstate::capi::*;
use kstate::format::segmented as seg;

/// Prints the calls when `KSTATE_FUZZ_TRACE` is set (replaying a finding).
macro_rules! trace {
    ($($arg:tt)*) => {
        if std::env::var_os("KSTATE_FUZZ_TRACE").is_some() {
            eprintln!($($arg)*);
        }
    };
}

/// Entries of one view: `(segment, Kafka key)` -> raw value.
type View = BTreeMap<(i64, Vec<u8>), Vec<u8>>;

/// What opens the store.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Window { plain: bool, dups: bool, size: i64 },
    Session,
}

/// An open iterator and what it must still return: `(key, raw value, start, end)` (window
/// entries: end = start + window size, Kafka's clamp at `i64::MAX`).
struct Iter {
    handle: usize,
    expected: Vec<(Vec<u8>, Vec<u8>, i64, i64)>,
    pos: usize,
    store_closed: bool,
}

/// Runs the call sequence `data` against a window or session store on the memory engine,
/// or on RocksDB in a temporary directory.
pub fn run(data: &[u8], rocksdb: bool) {
    let mut u = Unstructured::new(data);
    let Ok(mut s) = Seg::open(&mut u, rocksdb) else {
        return;
    };
    for _ in 0..64 {
        if u.is_empty() || s.step(&mut u).is_err() {
            break;
        }
    }
    s.finish();
}

struct Seg {
    rocksdb: Option<std::path::PathBuf>,
    kind: Kind,
    retention: i64,
    interval: i64,
    max_uncommitted: u64,
    store: usize,
    writer: View,
    committed: View,
    writer_time: i64,
    committed_time: i64,
    /// Kafka's in-memory seqnum of a window store with duplicates (per handle).
    seqnum: i32,
    offsets: BTreeMap<Partition, i64>,
    metadata: Option<Vec<u8>>,
    /// A write since the last commit or rollback surely buffered something.
    dirty: bool,
    /// A write since then may have buffered something (a delete of an absent key).
    maybe_dirty: bool,
    iters: Vec<Iter>,
    closed_stores: Vec<usize>,
    released_iters: Vec<usize>,
}

/// A time: mostly small (the segments and retentions are small), at times near the top of
/// the range (window ends overflow there).
fn time(u: &mut Unstructured<'_>) -> Result<i64> {
    Ok(match u.int_in_range(0..=15)? {
        0 => i64::MAX - u.int_in_range(0..=3)?,
        _ => u.int_in_range(0..=120)?,
    })
}

/// A query bound: a time, or (now and then) a negative one.
fn bound(u: &mut Unstructured<'_>) -> Result<i64> {
    Ok(if u.ratio(1, 8)? {
        -u.int_in_range(1..=5)?
    } else {
        time(u)?
    })
}

fn window_key(key: &[u8], start: i64, seq: i32) -> Vec<u8> {
    [key, &start.to_be_bytes(), &seq.to_be_bytes()].concat()
}

fn session_key(key: &[u8], start: i64, end: i64) -> Vec<u8> {
    [key, &end.to_be_bytes(), &start.to_be_bytes()].concat()
}

/// `(record key, start, end-or-seq)` of a Kafka key (both layouts end in 12 or 16 bytes).
fn split_window(k: &[u8]) -> (&[u8], i64) {
    let (key, rest) = k.split_at(k.len() - 12);
    (key, i64::from_be_bytes(rest[..8].try_into().unwrap()))
}

fn split_session(k: &[u8]) -> (&[u8], i64, i64) {
    let (key, rest) = k.split_at(k.len() - 16);
    let end = i64::from_be_bytes(rest[..8].try_into().unwrap());
    let start = i64::from_be_bytes(rest[8..].try_into().unwrap());
    (key, start, end)
}

/// What a query selects, in the terms of Kafka's interfaces.
#[derive(Debug)]
enum Query {
    /// Window `fetch(key, from, to)` / session `findSessions(key, earliestEnd, latestStart)`.
    Key(Vec<u8>, i64, i64),
    /// The key-range forms; `None` = open end.
    Range(Option<Vec<u8>>, Option<Vec<u8>>, i64, i64),
    /// Window `fetchAll(from, to)`.
    Time(i64, i64),
    /// `all()`.
    All,
}

impl Seg {
    fn window(&self) -> bool {
        matches!(self.kind, Kind::Window { .. })
    }

    fn ws(&self) -> *mut kstate_window_t {
        self.store as *mut _
    }

    fn ss(&self) -> *mut kstate_session_t {
        self.store as *mut _
    }

    fn open(u: &mut Unstructured<'_>, rocksdb: bool) -> Result<Self> {
        let flags: u8 = u.arbitrary()?;
        let retention = *u.choose(&[0i64, 1, 5, 20, 60, 1000])?;
        let interval = *u.choose(&[1i64, 3, 10, 50])?;
        let kind = if flags & 1 != 0 {
            Kind::Session
        } else {
            Kind::Window {
                plain: flags & 2 != 0,
                dups: flags & 4 != 0,
                size: u.int_in_range(0..=retention.min(7))?,
            }
        };
        trace!("kind {kind:?} retention {retention} interval {interval}");
        let mut s = Seg {
            rocksdb: rocksdb.then(temp_dir),
            kind,
            retention,
            interval,
            max_uncommitted: if flags & 8 != 0 { 64 } else { 64 << 20 },
            store: 0,
            writer: View::new(),
            committed: View::new(),
            writer_time: -1,
            committed_time: -1,
            seqnum: 0,
            offsets: BTreeMap::new(),
            metadata: None,
            dirty: false,
            maybe_dirty: false,
            iters: Vec::new(),
            closed_stores: Vec::new(),
            released_iters: Vec::new(),
        };
        if flags & 16 != 0 {
            s.bad_options(u)?;
        }
        s.store = s.open_store();
        Ok(s)
    }

    /// Options out of range are refused at open, before anything is created.
    fn bad_options(&self, u: &mut Unstructured<'_>) -> Result<()> {
        let which = u.int_in_range(0..=4)?;
        let path = self.path();
        let mut out = null_mut();
        let e = if self.window() {
            let mut o = self.window_options();
            match which {
                0 => o.retention_ms = -1,
                1 => o.window_size_ms = o.retention_ms + 1,
                2 => o.segment_interval_ms = -1,
                // Kafka's key index belongs to time-ordered stores only.
                3 => {
                    o.time_ordered = false;
                    o.key_index = true;
                }
                _ => o.struct_size = 3,
            }
            // SAFETY: path NULL or NUL-terminated, options initialised, out-parameter valid.
            unsafe {
                kstate_window_open(path.as_ref().map_or(null(), |p| p.as_ptr()), &o, &mut out)
            }
        } else {
            let mut o = self.session_options();
            match which {
                0 | 1 => o.retention_ms = -1,
                2 | 3 => o.segment_interval_ms = -1,
                _ => o.struct_size = 3,
            }
            // SAFETY: as above.
            unsafe {
                kstate_session_open(
                    path.as_ref().map_or(null(), |p| p.as_ptr()),
                    &o,
                    (&mut out as *mut *mut kstate_window_t).cast(),
                )
            }
        };
        expect(e, KSTATE_ERR_INVALID_ARGUMENT);
        assert!(out.is_null());
        if let Some(dir) = &self.rocksdb {
            assert!(!dir.exists(), "a refused open created the store");
        }
        Ok(())
    }

    fn path(&self) -> Option<CString> {
        self.rocksdb
            .as_ref()
            .map(|p| CString::new(p.to_str().unwrap()).unwrap())
    }

    fn engine(&self) -> kstate_engine_t {
        if self.rocksdb.is_some() {
            KSTATE_ENGINE_ROCKSDB
        } else {
            KSTATE_ENGINE_MEMORY
        }
    }

    fn window_options(&self) -> kstate_window_options_t {
        // SAFETY: a zeroed struct is a valid buffer for the init function, which fills it.
        let mut o: kstate_window_options_t = unsafe { std::mem::zeroed() };
        // SAFETY: `o` is writable for its full size.
        ok(unsafe { kstate_window_options_init(&mut o, std::mem::size_of_val(&o)) });
        let Kind::Window { plain, dups, size } = self.kind else {
            unreachable!()
        };
        o.engine = self.engine();
        o.value_format = if plain {
            KSTATE_FORMAT_PLAIN
        } else {
            KSTATE_FORMAT_TIMESTAMPED
        };
        o.retention_ms = self.retention;
        o.window_size_ms = size;
        o.segment_interval_ms = self.interval;
        o.retain_duplicates = dups;
        o.max_uncommitted_bytes = self.max_uncommitted;
        o
    }

    fn session_options(&self) -> kstate_session_options_t {
        // SAFETY: as for window options.
        let mut o: kstate_session_options_t = unsafe { std::mem::zeroed() };
        // SAFETY: `o` is writable for its full size.
        ok(unsafe { kstate_session_options_init(&mut o, std::mem::size_of_val(&o)) });
        o.engine = self.engine();
        o.retention_ms = self.retention;
        o.segment_interval_ms = self.interval;
        o.max_uncommitted_bytes = self.max_uncommitted;
        o
    }

    fn open_store(&self) -> usize {
        let path = self.path();
        let p = path.as_ref().map_or(null(), |p| p.as_ptr());
        if self.window() {
            let o = self.window_options();
            let mut out = null_mut();
            // SAFETY: path NULL or NUL-terminated, options initialised, out-parameter valid.
            ok(unsafe { kstate_window_open(p, &o, &mut out) });
            assert!(!out.is_null());
            out as usize
        } else {
            let o = self.session_options();
            let mut out = null_mut();
            // SAFETY: as above.
            ok(unsafe { kstate_session_open(p, &o, &mut out) });
            assert!(!out.is_null());
            out as usize
        }
    }

    fn timestamped(&self) -> bool {
        matches!(self.kind, Kind::Window { plain: false, .. })
    }

    /// The earliest time a read of a view with stream time `t` returns.
    fn earliest_visible(&self, t: i64) -> i64 {
        t.saturating_sub(self.retention).saturating_add(1)
    }

    /// Kafka's segmented put: advances the writer's stream time, drops a write into an
    /// expired segment.
    fn write(&mut self, kafka_key: Vec<u8>, t: i64, value: Option<Vec<u8>>) {
        trace!(
            "write {kafka_key:?} at {t}: {value:?} (stream time {})",
            self.writer_time
        );
        let st = self.writer_time.max(t);
        let seg = t / self.interval;
        if seg >= st.saturating_sub(self.retention) / self.interval {
            self.maybe_dirty = true;
            match value {
                Some(v) => {
                    self.writer.insert((seg, kafka_key), v);
                    self.dirty = true;
                }
                None => self.dirty |= self.writer.remove(&(seg, kafka_key)).is_some(),
            }
        }
        self.writer_time = st;
    }

    fn step(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let op = u.int_in_range(0..=17)?;
        trace!("op {op}");
        match op {
            0..=3 => self.put(u),
            4 => self.delete(u),
            5 | 6 => self.fetch(u),
            7 | 8 => self.open_iter(u),
            9..=11 => self.next(u),
            12 => self.close_iter(u),
            13 => self.commit(u),
            14 => self.rollback(),
            15 => self.committed_reads(u),
            16 => self.misuse(u),
            _ => self.reopen(),
        }
    }

    fn check_pending(&self) {
        let mut n = u64::MAX;
        // SAFETY: out-parameter writable.
        let e = unsafe {
            if self.window() {
                kstate_window_approximate_num_uncommitted_bytes(self.ws(), &mut n)
            } else {
                kstate_session_approximate_num_uncommitted_bytes(self.ss(), &mut n)
            }
        };
        ok(e);
        if self.dirty {
            assert!(n > 0, "buffered writes are counted");
        }
        if !self.maybe_dirty {
            assert_eq!(n, 0, "nothing was written");
        }
    }

    fn put(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (k, v) = (key(u)?, bytes(u, 10)?);
        let null_key = u.ratio(1, 12)?;
        let kp = if null_key { null() } else { ptr(u, &k)? };
        let klen = if null_key { 1 } else { k.len() };
        let vp = ptr(u, &v)?;
        match self.kind {
            Kind::Session => {
                let (start, end) = (time(u)?, time(u)?);
                // SAFETY: pointers valid for their lengths (or NULL: refused).
                let e = unsafe { kstate_session_put(self.ss(), kp, klen, start, end, vp, v.len()) };
                if null_key {
                    expect(e, KSTATE_ERR_INVALID_ARGUMENT);
                } else {
                    ok(e);
                    self.write(session_key(&k, start, end), end, Some(v));
                }
            }
            Kind::Window { plain, dups, .. } => {
                let start = time(u)?;
                let typed = u.arbitrary()?;
                let raw = if typed {
                    let ts: i64 = u.arbitrary()?;
                    // SAFETY: as above.
                    let e =
                        unsafe { kstate_window_put(self.ws(), kp, klen, vp, v.len(), ts, start) };
                    if null_key {
                        let c = code(e);
                        assert!(
                            c == KSTATE_ERR_INVALID_ARGUMENT
                                || (plain && c == KSTATE_ERR_FORMAT_MISMATCH),
                            "code {c}"
                        );
                        return Ok(());
                    }
                    if plain {
                        expect(e, KSTATE_ERR_FORMAT_MISMATCH);
                        return Ok(());
                    }
                    ok(e);
                    [&ts.to_be_bytes()[..], &v].concat()
                } else {
                    // SAFETY: as above.
                    // Never NULL here: a NULL value deletes.
                    let e = unsafe {
                        kstate_window_put_raw(self.ws(), kp, klen, v.as_ptr(), v.len(), start)
                    };
                    if null_key {
                        expect(e, KSTATE_ERR_INVALID_ARGUMENT);
                        return Ok(());
                    }
                    if !plain && v.len() < 8 {
                        expect(e, KSTATE_ERR_INVALID_VALUE);
                        return Ok(());
                    }
                    ok(e);
                    v
                };
                let seq = if dups {
                    self.seqnum = self.seqnum.wrapping_add(1) & 0x7FFF_FFFF;
                    self.seqnum
                } else {
                    0
                };
                self.write(window_key(&k, start, seq), start, Some(raw));
            }
        }
        self.check_pending();
        Ok(())
    }

    fn delete(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let k = key(u)?;
        let kp = ptr(u, &k)?;
        match self.kind {
            Kind::Session => {
                let (start, end) = (time(u)?, time(u)?);
                // SAFETY: key valid for its length.
                ok(unsafe { kstate_session_remove(self.ss(), kp, k.len(), start, end) });
                self.write(session_key(&k, start, end), end, None);
            }
            Kind::Window { dups, .. } => {
                let start = time(u)?;
                // NULL with a non-zero length is refused; NULL with 0 deletes.
                let bad = u.ratio(1, 8)?;
                // SAFETY: key valid for its length; the value NULL.
                let e = unsafe {
                    kstate_window_put_raw(self.ws(), kp, k.len(), null(), usize::from(bad), start)
                };
                if bad {
                    expect(e, KSTATE_ERR_INVALID_ARGUMENT);
                    return Ok(());
                }
                ok(e);
                // Kafka ignores a delete with duplicates: not even the stream time moves.
                if !dups {
                    self.write(window_key(&k, start, 0), start, None);
                }
            }
        }
        self.check_pending();
        Ok(())
    }

    fn view(&self, committed: bool) -> (&View, i64) {
        if committed {
            (&self.committed, self.committed_time)
        } else {
            (&self.writer, self.writer_time)
        }
    }

    fn fetch(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let k = key(u)?;
        let isolation = u.int_in_range(0..=2)?;
        let kp = ptr(u, &k)?;
        let null_out = u.ratio(1, 12)?;
        let (mut value, mut found) = (NO_BYTES, true);
        let mut ts = 7i64;
        let (e, want) = match self.kind {
            Kind::Session => {
                let (start, end) = (time(u)?, time(u)?);
                // SAFETY: key valid for its length, out-parameters writable or NULL.
                let e = unsafe {
                    kstate_session_fetch_session(
                        self.ss(),
                        isolation,
                        kp,
                        k.len(),
                        start,
                        end,
                        &mut value,
                        if null_out { null_mut() } else { &mut found },
                    )
                };
                let (view, st) = self.view(isolation == KSTATE_READ_COMMITTED);
                let want = (end >= self.earliest_visible(st))
                    .then(|| view.get(&(end / self.interval, session_key(&k, start, end))))
                    .flatten()
                    .cloned();
                (e, want)
            }
            Kind::Window { dups, .. } => {
                let start = time(u)?;
                // SAFETY: as above.
                let e = unsafe {
                    kstate_window_fetch(
                        self.ws(),
                        isolation,
                        kp,
                        k.len(),
                        start,
                        &mut value,
                        &mut ts,
                        if null_out { null_mut() } else { &mut found },
                    )
                };
                let seq = if dups { self.seqnum } else { 0 };
                let (view, st) = self.view(isolation == KSTATE_READ_COMMITTED);
                let want = (start >= self.earliest_visible(st))
                    .then(|| view.get(&(start / self.interval, window_key(&k, start, seq))))
                    .flatten()
                    .cloned();
                (e, want)
            }
        };
        if null_out || isolation > KSTATE_READ_COMMITTED {
            expect(e, KSTATE_ERR_INVALID_ARGUMENT);
            assert!(value.ptr.is_null());
            return Ok(());
        }
        ok(e);
        assert_eq!(found, want.is_some(), "found");
        let got = take(value);
        match want {
            None => assert!(got.is_empty() && (ts == 7 || ts == 0)),
            Some(raw) if self.timestamped() => {
                assert_eq!(got, raw[8..]);
                assert_eq!(ts, i64::from_be_bytes(raw[..8].try_into().unwrap()));
            }
            Some(raw) => {
                assert_eq!(got, raw);
                if self.window() {
                    assert_eq!(ts, -1);
                }
            }
        }
        Ok(())
    }

    /// The model's answer to `q` on a view: Kafka's order, backward reversed.
    fn answer(
        &self,
        q: &Query,
        committed: bool,
        reverse: bool,
    ) -> Vec<(Vec<u8>, Vec<u8>, i64, i64)> {
        let (view, st) = self.view(committed);
        let ev = self.earliest_visible(st);
        let size = match self.kind {
            Kind::Window { size, .. } => size,
            Kind::Session => 0,
        };
        // Kafka's in-memory order: a window store on the memory engine (but for `Key`).
        let dups = matches!(self.kind, Kind::Window { dups: true, .. });
        let by_start =
            self.window() && !dups && self.rocksdb.is_none() && !matches!(q, Query::Key(..));
        let floor = if by_start { 0 } else { i64::MIN };
        let mut out = Vec::new();
        for ((_, kk), v) in view {
            // (record key, time bounds checked against, start, end)
            let (rk, start, end) = if self.window() {
                let (rk, start) = split_window(kk);
                let end = match start.checked_add(size) {
                    Some(e) if e >= 0 => e,
                    _ => i64::MAX,
                };
                (rk, start, end)
            } else {
                split_session(kk)
            };
            // Windows are selected by start, sessions by end >= lower and start <= upper.
            let lo_time = if self.window() { start } else { end };
            let keep = match q {
                Query::Key(key, from, to) => {
                    rk == &key[..] && lo_time >= (*from).max(ev) && start <= *to
                }
                Query::Range(kf, kt, from, to) => {
                    // Kafka reads each segment between byte bounds built from the key
                    // bounds (`OrderedBytes`), which with keys of different lengths leave
                    // out some entries whose record key is in range (ones at times of
                    // 2^56 and more): what Kafka returns, kstate returns.
                    let (lo, hi) = if self.window() {
                        (
                            kf.as_deref()
                                .map(|f| seg::ordered_lower_range(f, seg::WINDOW_SUFFIX)),
                            kt.as_deref().map(|t| seg::window_upper_range(t, *to)),
                        )
                    } else {
                        (
                            kf.as_deref()
                                .map(|f| seg::ordered_lower_range(f, seg::SESSION_SUFFIX)),
                            kt.as_deref().map(|t| seg::session_upper_range(t, *to)),
                        )
                    };
                    (by_start
                        || lo.is_none_or(|lo| kk[..] >= lo[..])
                            && hi.is_none_or(|hi| kk[..] <= hi[..]))
                        && kf.as_deref().is_none_or(|f| rk >= f)
                        && kt.as_deref().is_none_or(|t| rk <= t)
                        && lo_time >= (*from).max(ev).max(floor)
                        && start <= *to
                }
                Query::Time(from, to) => start >= (*from).max(ev).max(floor) && start <= *to,
                Query::All => lo_time >= ev.max(0),
            };
            if keep {
                // With `by_start`, ordered by start, then the Kafka key without its start
                // (record key and seqnum bytes).
                let rest = if by_start {
                    [rk, &kk[kk.len() - 4..]].concat()
                } else {
                    Vec::new()
                };
                out.push(((start, rest), (rk.to_vec(), v.clone(), start, end)));
            }
        }
        if by_start {
            out.sort_by(|a, b| a.0.cmp(&b.0));
        }
        let mut out: Vec<_> = out.into_iter().map(|(_, entry)| entry).collect();
        if reverse {
            out.reverse();
        }
        out
    }

    fn open_iter(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let isolation = u.int_in_range(0..=2)?;
        let reverse: bool = u.arbitrary()?;
        let (k, kf, kt) = (key(u)?, key(u)?, key(u)?);
        let (f_open, t_open) = (u.ratio(1, 3)?, u.ratio(1, 3)?);
        let null_bound = u.ratio(1, 16)?;
        let null_out = u.ratio(1, 16)?;
        let (from, to) = (bound(u)?, bound(u)?);
        let fp = if null_bound {
            null()
        } else {
            present_or_null(&kf, f_open)
        };
        let fl = if f_open && !null_bound {
            0
        } else {
            kf.len().max(usize::from(null_bound))
        };
        let tp = present_or_null(&kt, t_open);
        let tl = if t_open { 0 } else { kt.len() };
        let range = Query::Range(
            (!f_open).then(|| kf.clone()),
            (!t_open).then(|| kt.clone()),
            from,
            to,
        );
        let which = u.int_in_range(0..=3)?;
        let mut it: usize = 0;
        let out: *mut usize = if null_out { null_mut() } else { &mut it };
        let mut uses_bound = false;
        // SAFETY: keys valid for their lengths or NULL (refused with a length), the
        // out-parameter writable or NULL (refused).
        let (e, q) = unsafe {
            if self.window() {
                let out = out.cast::<*mut kstate_window_iter_t>();
                let s = self.ws();
                match which {
                    0 => {
                        let e = if reverse {
                            kstate_window_backward_fetch_range(
                                s,
                                isolation,
                                k.as_ptr(),
                                k.len(),
                                from,
                                to,
                                out,
                            )
                        } else {
                            kstate_window_fetch_range(
                                s,
                                isolation,
                                k.as_ptr(),
                                k.len(),
                                from,
                                to,
                                out,
                            )
                        };
                        (e, Query::Key(k, from, to))
                    }
                    1 => {
                        uses_bound = true;
                        let e = if reverse {
                            kstate_window_backward_fetch_key_range(
                                s, isolation, fp, fl, tp, tl, from, to, out,
                            )
                        } else {
                            kstate_window_fetch_key_range(
                                s, isolation, fp, fl, tp, tl, from, to, out,
                            )
                        };
                        (e, range)
                    }
                    2 => {
                        let e = if reverse {
                            kstate_window_backward_fetch_all(s, isolation, from, to, out)
                        } else {
                            kstate_window_fetch_all(s, isolation, from, to, out)
                        };
                        (e, Query::Time(from, to))
                    }
                    _ => {
                        let e = if reverse {
                            kstate_window_backward_all(s, isolation, out)
                        } else {
                            kstate_window_all(s, isolation, out)
                        };
                        (e, Query::All)
                    }
                }
            } else {
                let out = out.cast::<*mut kstate_session_iter_t>();
                let s = self.ss();
                match which {
                    0 => {
                        let e = if reverse {
                            kstate_session_backward_find_sessions(
                                s,
                                isolation,
                                k.as_ptr(),
                                k.len(),
                                from,
                                to,
                                out,
                            )
                        } else {
                            kstate_session_find_sessions(
                                s,
                                isolation,
                                k.as_ptr(),
                                k.len(),
                                from,
                                to,
                                out,
                            )
                        };
                        (e, Query::Key(k, from, to))
                    }
                    1 => {
                        uses_bound = true;
                        let e = if reverse {
                            kstate_session_backward_find_sessions_range(
                                s, isolation, fp, fl, tp, tl, from, to, out,
                            )
                        } else {
                            kstate_session_find_sessions_range(
                                s, isolation, fp, fl, tp, tl, from, to, out,
                            )
                        };
                        (e, range)
                    }
                    2 => {
                        let e = if reverse {
                            kstate_session_backward_fetch(s, isolation, k.as_ptr(), k.len(), out)
                        } else {
                            kstate_session_fetch(s, isolation, k.as_ptr(), k.len(), out)
                        };
                        (e, Query::Key(k, 0, i64::MAX))
                    }
                    _ => {
                        uses_bound = true;
                        let e = if reverse {
                            kstate_session_backward_fetch_range(s, isolation, fp, fl, tp, tl, out)
                        } else {
                            kstate_session_fetch_range(s, isolation, fp, fl, tp, tl, out)
                        };
                        let Query::Range(a, b, _, _) = range else {
                            unreachable!()
                        };
                        (e, Query::Range(a, b, 0, i64::MAX))
                    }
                }
            }
        };
        if null_out || isolation > KSTATE_READ_COMMITTED || (uses_bound && null_bound) {
            expect(e, KSTATE_ERR_INVALID_ARGUMENT);
            assert_eq!(it, 0);
            return Ok(());
        }
        ok(e);
        assert_ne!(it, 0);
        let expected = self.answer(&q, isolation == KSTATE_READ_COMMITTED, reverse);
        trace!(
            "query {q:?} reverse {reverse} isolation {isolation} -> {expected:?}; writer {:?} at {}, committed {:?} at {}",
            self.writer, self.writer_time, self.committed, self.committed_time
        );
        self.iters.push(Iter {
            handle: it,
            expected,
            pos: 0,
            store_closed: false,
        });
        Ok(())
    }

    fn next(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.iters.is_empty() {
            return Ok(());
        }
        let i = u.choose_index(self.iters.len())?;
        let null_out = u.ratio(1, 16)?;
        let (window, timestamped) = (self.window(), self.timestamped());
        let iter = &mut self.iters[i];
        let (mut k, mut v) = (NO_BYTES, NO_BYTES);
        let (mut ts, mut start, mut end, mut found) = (5i64, 5i64, 5i64, true);
        let found_ptr: *mut bool = if null_out { null_mut() } else { &mut found };
        // SAFETY: out-parameters writable (or NULL: refused).
        let e = unsafe {
            if window {
                kstate_window_iter_next(
                    iter.handle as *mut _,
                    &mut k,
                    &mut v,
                    &mut ts,
                    &mut start,
                    &mut end,
                    found_ptr,
                )
            } else {
                kstate_session_iter_next(
                    iter.handle as *mut _,
                    &mut k,
                    &mut v,
                    &mut start,
                    &mut end,
                    found_ptr,
                )
            }
        };
        if iter.store_closed {
            let c = code(e);
            assert!(
                c == KSTATE_ERR_ITERATOR_CLOSED || (null_out && c == KSTATE_ERR_INVALID_ARGUMENT),
                "code {c}"
            );
            return Ok(());
        }
        if null_out {
            expect(e, KSTATE_ERR_INVALID_ARGUMENT);
            return Ok(());
        }
        ok(e);
        let (k, v) = (take(k), take(v));
        let Some((wk, raw, wstart, wend)) = iter.expected.get(iter.pos) else {
            assert!(!found, "past the end");
            assert!(k.is_empty() && v.is_empty() && start == 0 && end == 0);
            return Ok(());
        };
        assert!(
            found,
            "entry {} of {} missing",
            iter.pos,
            iter.expected.len()
        );
        assert_eq!(&k, wk);
        assert_eq!((start, end), (*wstart, *wend));
        if timestamped {
            assert_eq!(v, raw[8..]);
            assert_eq!(ts, i64::from_be_bytes(raw[..8].try_into().unwrap()));
        } else {
            assert_eq!(&v, raw);
            if window {
                assert_eq!(ts, -1);
            }
        }
        iter.pos += 1;
        Ok(())
    }

    fn close_iter(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.iters.is_empty() {
            return Ok(());
        }
        let iter = self.iters.remove(u.choose_index(self.iters.len())?);
        ok(self.iter_close(iter.handle));
        self.released_iters.push(iter.handle);
        Ok(())
    }

    fn iter_close(&self, h: usize) -> *mut kstate_error_t {
        if self.window() {
            kstate_window_iter_close(h as *mut _)
        } else {
            kstate_session_iter_close(h as *mut _)
        }
    }

    fn store_close(&self, h: usize) -> *mut kstate_error_t {
        if self.window() {
            kstate_window_close(h as *mut _)
        } else {
            kstate_session_close(h as *mut _)
        }
    }

    fn commit(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let args = CommitArgs::arbitrary(u)?;
        let op = args.ptr(u)?;
        // SAFETY: the offsets, their topics and the metadata live until after the call.
        let e = unsafe {
            if self.window() {
                kstate_window_commit(
                    self.ws(),
                    op,
                    args.offsets.len(),
                    args.metadata_ptr,
                    args.metadata_len,
                )
            } else {
                kstate_session_commit(
                    self.ss(),
                    op,
                    args.offsets.len(),
                    args.metadata_ptr,
                    args.metadata_len,
                )
            }
        };
        if !args.valid {
            expect(e, KSTATE_ERR_INVALID_ARGUMENT);
            return Ok(());
        }
        ok(e);
        // The commit reclaims the expired segments (invisible already).
        let min_live = self.writer_time.saturating_sub(self.retention) / self.interval;
        self.writer.retain(|(seg, _), _| *seg >= min_live);
        self.committed = self.writer.clone();
        self.committed_time = self.writer_time;
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
        self.check_pending();
        Ok(())
    }

    fn rollback(&mut self) -> Result<()> {
        ok(if self.window() {
            kstate_window_rollback(self.ws())
        } else {
            kstate_session_rollback(self.ss())
        });
        self.writer = self.committed.clone();
        self.writer_time = self.committed_time;
        self.dirty = false;
        self.maybe_dirty = false;
        self.check_pending();
        Ok(())
    }

    fn committed_reads(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (t, good) = topic(u)?;
        let partition = u.int_in_range(-1..=2)?;
        let (mut offset, mut found) = (7i64, true);
        let tp = t.as_ref().map_or(null(), |c| c.as_ptr());
        // SAFETY: topic NULL or NUL-terminated; out-parameters writable.
        let e = unsafe {
            if self.window() {
                kstate_window_committed_offset(self.ws(), tp, partition, &mut offset, &mut found)
            } else {
                kstate_session_committed_offset(self.ss(), tp, partition, &mut offset, &mut found)
            }
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
        ok(unsafe {
            if self.window() {
                kstate_window_committed_metadata(self.ws(), &mut blob, &mut found)
            } else {
                kstate_session_committed_metadata(self.ss(), &mut blob, &mut found)
            }
        });
        assert_eq!(found, self.metadata.is_some());
        assert_eq!(take(blob), self.metadata.clone().unwrap_or_default());
        Ok(())
    }

    /// Calls with a handle that is not a live store or iterator of this kind.
    fn misuse(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        // Tags of src/handle.rs: window store, window iterator, session store, session
        // iterator, key-value store.
        let (my_tag, other_tag): (u64, u64) = if self.window() {
            (0x4B03, 0x4B05)
        } else {
            (0x4B05, 0x4B03)
        };
        let forged_serial = (1 << 47) | (u.arbitrary::<u64>()? & ((1 << 47) - 1));
        let (store, want) = match u.int_in_range(0..=4)? {
            0 => (0usize, KSTATE_ERR_INVALID_HANDLE),
            1 => (
                ((my_tag << 48) | forged_serial) as usize,
                KSTATE_ERR_INVALID_HANDLE,
            ),
            2 => (
                ((other_tag << 48) | forged_serial) as usize,
                KSTATE_ERR_INVALID_HANDLE,
            ),
            3 if !self.iters.is_empty() => (
                self.iters[u.choose_index(self.iters.len())?].handle,
                KSTATE_ERR_INVALID_HANDLE,
            ),
            _ if !self.closed_stores.is_empty() => {
                (*u.choose(&self.closed_stores)?, KSTATE_ERR_STORE_CLOSED)
            }
            _ => (0, KSTATE_ERR_INVALID_HANDLE),
        };
        let k = b"k";
        let raw = [0u8; 9];
        let (mut value, mut found, mut ts) = (NO_BYTES, false, 0i64);
        let mut it: usize = 0;
        let op = u.int_in_range(0..=5)?;
        // SAFETY: valid arguments apart from the handle, which is never dereferenced.
        let e = unsafe {
            if self.window() {
                let s = store as *mut kstate_window_t;
                match op {
                    0 => kstate_window_put_raw(s, k.as_ptr(), 1, raw.as_ptr(), raw.len(), 1),
                    1 => {
                        kstate_window_fetch(s, 0, k.as_ptr(), 1, 1, &mut value, &mut ts, &mut found)
                    }
                    2 => kstate_window_commit(s, null(), 0, null(), 0),
                    3 => kstate_window_rollback(s),
                    4 => kstate_window_all(s, 0, (&mut it as *mut usize).cast()),
                    _ => kstate_window_close(s),
                }
            } else {
                let s = store as *mut kstate_session_t;
                match op {
                    0 => kstate_session_put(s, k.as_ptr(), 1, 1, 2, raw.as_ptr(), raw.len()),
                    1 => kstate_session_fetch_session(
                        s,
                        0,
                        k.as_ptr(),
                        1,
                        1,
                        2,
                        &mut value,
                        &mut found,
                    ),
                    2 => kstate_session_commit(s, null(), 0, null(), 0),
                    3 => kstate_session_rollback(s),
                    4 => kstate_session_fetch(s, 0, k.as_ptr(), 1, (&mut it as *mut usize).cast()),
                    _ => kstate_session_close(s),
                }
            }
        };
        expect(e, want);
        assert!(!found && value.ptr.is_null() && it == 0);

        // Iterator functions: NULL, forged, a store handle, a released iterator, an
        // iterator of the other kind (forged).
        let (iter, want) = match u.int_in_range(0..=3)? {
            0 => (0usize, KSTATE_ERR_INVALID_HANDLE),
            1 => (
                (((my_tag + 1) << 48) | forged_serial) as usize,
                KSTATE_ERR_INVALID_HANDLE,
            ),
            2 => (self.store, KSTATE_ERR_INVALID_HANDLE),
            _ if !self.released_iters.is_empty() => {
                (*u.choose(&self.released_iters)?, KSTATE_ERR_ITERATOR_CLOSED)
            }
            _ => (0, KSTATE_ERR_INVALID_HANDLE),
        };
        let e = if u.arbitrary()? {
            let (mut k, mut v, mut a, mut b, mut c, mut f) = (NO_BYTES, NO_BYTES, 0, 0, 0, false);
            // SAFETY: the handle is never dereferenced; out-parameters writable.
            unsafe {
                if self.window() {
                    kstate_window_iter_next(
                        iter as *mut _,
                        &mut k,
                        &mut v,
                        &mut a,
                        &mut b,
                        &mut c,
                        &mut f,
                    )
                } else {
                    kstate_session_iter_next(iter as *mut _, &mut k, &mut v, &mut a, &mut b, &mut f)
                }
            }
        } else {
            self.iter_close(iter)
        };
        expect(e, want);

        // This store's live handle given to the other kind's functions.
        let e = if self.window() {
            kstate_session_rollback(self.store as *mut _)
        } else {
            kstate_window_rollback(self.store as *mut _)
        };
        expect(e, KSTATE_ERR_INVALID_HANDLE);
        Ok(())
    }

    /// Closes the store (its iterators with it) and opens it again: RocksDB comes back at
    /// its last commit with that commit's stream time, the memory engine empty.
    fn reopen(&mut self) -> Result<()> {
        ok(self.store_close(self.store));
        self.closed_stores.push(self.store);
        for it in &mut self.iters {
            it.store_closed = true;
        }
        self.store = self.open_store();
        if self.rocksdb.is_some() {
            self.writer = self.committed.clone();
            self.writer_time = self.committed_time;
        } else {
            self.writer.clear();
            self.committed.clear();
            self.writer_time = -1;
            self.committed_time = -1;
            self.offsets.clear();
            self.metadata = None;
        }
        self.seqnum = 0;
        self.dirty = false;
        self.maybe_dirty = false;
        Ok(())
    }

    fn finish(self) {
        for it in &self.iters {
            ok(self.iter_close(it.handle));
            expect(self.iter_close(it.handle), KSTATE_ERR_ITERATOR_CLOSED);
        }
        ok(self.store_close(self.store));
        expect(self.store_close(self.store), KSTATE_ERR_STORE_CLOSED);
        if let Some(dir) = &self.rocksdb {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
