//! Unit tests of the window and session C functions, called as C would, checked against
//! a model of Kafka's semantics (order, retention, duplicates, key ranges): Kafka's
//! RocksDB order on the RocksDB engine, Kafka's in-memory order (window start, then key)
//! for window queries over several keys on the memory engine (stores without duplicates).

use std::ffi::CString;
use std::ptr::{null, null_mut};

use super::*;
use crate::format::segmented::segment_id;

fn code(e: *mut kstate_error_t) -> i32 {
    // SAFETY: `e` is NULL or fresh from kstate; freed once.
    unsafe {
        let c = kstate_error_code(e);
        kstate_error_free(e);
        c
    }
}

fn ok(e: *mut kstate_error_t) {
    assert_eq!(code(e), KSTATE_OK);
}

fn take(b: &mut kstate_bytes_t) -> Vec<u8> {
    let v = if b.ptr.is_null() {
        Vec::new()
    } else {
        // SAFETY: a buffer kstate returned, `len` bytes.
        unsafe { std::slice::from_raw_parts(b.ptr, b.len) }.to_vec()
    };
    // SAFETY: as returned.
    unsafe { kstate_bytes_free(b) };
    v
}

fn window_options(retention: i64, size: i64, dups: bool, interval: i64) -> kstate_window_options_t {
    let mut o = std::mem::MaybeUninit::<kstate_window_options_t>::uninit();
    // SAFETY: writable for its size.
    ok(unsafe { kstate_window_options_init(o.as_mut_ptr(), size_of::<kstate_window_options_t>()) });
    // SAFETY: initialised above.
    let mut o = unsafe { o.assume_init() };
    o.engine = KSTATE_ENGINE_MEMORY;
    o.retention_ms = retention;
    o.window_size_ms = size;
    o.retain_duplicates = dups;
    o.segment_interval_ms = interval;
    o
}

fn open_window(o: &kstate_window_options_t) -> *mut kstate_window_t {
    let mut w = null_mut();
    // SAFETY: valid pointers.
    ok(unsafe { kstate_window_open(null(), o, &mut w) });
    w
}

fn session_options(retention: i64, interval: i64) -> kstate_session_options_t {
    let mut o = std::mem::MaybeUninit::<kstate_session_options_t>::uninit();
    // SAFETY: writable for its size.
    ok(unsafe {
        kstate_session_options_init(o.as_mut_ptr(), size_of::<kstate_session_options_t>())
    });
    // SAFETY: initialised above.
    let mut o = unsafe { o.assume_init() };
    o.engine = KSTATE_ENGINE_MEMORY;
    o.retention_ms = retention;
    o.segment_interval_ms = interval;
    o
}

/// (key, value, timestamp, start, end) of every window of an iterator, then closes it.
type Win = (Vec<u8>, Vec<u8>, i64, i64, i64);

fn drain_windows(it: *mut kstate_window_iter_t) -> Vec<Win> {
    let mut got = Vec::new();
    loop {
        let (mut k, mut v) = (kstate_bytes_t::NOTHING, kstate_bytes_t::NOTHING);
        let (mut ts, mut s, mut e, mut found) = (0, 0, 0, false);
        // SAFETY: valid out-parameters.
        ok(unsafe {
            kstate_window_iter_next(it, &mut k, &mut v, &mut ts, &mut s, &mut e, &mut found)
        });
        if !found {
            assert!(k.ptr.is_null() && v.ptr.is_null());
            break;
        }
        got.push((take(&mut k), take(&mut v), ts, s, e));
    }
    ok(kstate_window_iter_close(it));
    got
}

/// Deterministic pseudo-random numbers (an LCG), so a failure replays.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn options_are_sized_and_validated() {
    let mut o = window_options(1_000, 100, false, 0);
    assert_eq!(o.struct_size, KSTATE_WINDOW_OPTIONS_SIZE_V2);
    // SAFETY: NULL and bad sizes are refused before any write.
    unsafe {
        assert_eq!(
            code(kstate_window_options_init(null_mut(), 96)),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        for bad in [0, 56, 95, 97, 4096] {
            let before = o;
            assert_eq!(
                code(kstate_window_options_init(&mut o, bad)),
                KSTATE_ERR_INVALID_ARGUMENT
            );
            assert_eq!(o.struct_size, before.struct_size, "nothing written");
        }
        let mut s = session_options(1_000, 0);
        assert_eq!(s.struct_size, KSTATE_SESSION_OPTIONS_SIZE_V2);
        assert_eq!(
            code(kstate_session_options_init(&mut s, 96)),
            KSTATE_ERR_INVALID_ARGUMENT
        );
    }
    // The defaults are Kafka's (retention 1 day, Kafka's segment interval).
    let d = kstate_window_options_t::defaults().convert().unwrap();
    assert_eq!(d, crate::WindowOptions::new(86_400_000, 0, false));
    let d = kstate_session_options_t::defaults().convert().unwrap();
    assert_eq!(d, crate::SessionOptions::new(86_400_000));
    let mut w = null_mut();
    // A window larger than the retention, a negative interval, a forged size: refused.
    for bad in [
        window_options(100, 101, false, 0),
        window_options(100, 10, false, -5),
        window_options(-1, 0, false, 0),
        kstate_window_options_t {
            struct_size: 0,
            ..window_options(100, 10, false, 0)
        },
        kstate_window_options_t {
            engine: 9,
            ..window_options(100, 10, false, 0)
        },
    ] {
        // SAFETY: valid pointers.
        assert_eq!(
            code(unsafe { kstate_window_open(null(), &bad, &mut w) }),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert!(w.is_null());
    }
    let w = open_window(&window_options(100, 10, false, 7));
    // SAFETY: valid pointers; the window store's interval is the one given.
    let ws = crate::handle::HANDLES
        .get::<crate::WindowStore>(number(w))
        .unwrap();
    assert_eq!(ws.segment_interval(), 7);
    ok(kstate_window_close(w));
}

#[test]
fn windows_match_a_model_of_kafka_order_and_retention() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [(false, 1), (true, 2), (false, 3)];
    for (case, ((dups, seed), engine)) in cases
        .into_iter()
        .flat_map(|c| [(c, KSTATE_ENGINE_MEMORY), (c, KSTATE_ENGINE_ROCKSDB)])
        .enumerate()
    {
        let (retention, size, interval) = (1_000, 50, 200);
        let mut options = window_options(retention, size, dups, interval);
        options.engine = engine;
        let path = dir.path().join(format!("w{case}"));
        let path = CString::new(path.into_os_string().into_encoded_bytes()).unwrap();
        let mut w = null_mut();
        // SAFETY: valid pointers.
        ok(unsafe { kstate_window_open(path.as_ptr(), &options, &mut w) });
        let mut rng = Lcg(seed);
        // Model: entries (segment, key, start, seqnum) -> (value, timestamp); stream time.
        let mut model = std::collections::BTreeMap::new();
        let mut stream_time = -1i64;
        let mut seq = 0i32;
        let keys: [&[u8]; 4] = [b"a", b"b", b"bb", b"c"];
        for i in 0..400 {
            let key = keys[rng.next(4) as usize];
            let start = (i * 7 + rng.next(300) as i64).max(0);
            let value = format!("v{i}").into_bytes();
            // SAFETY: valid spans.
            ok(unsafe {
                kstate_window_put(
                    w,
                    key.as_ptr(),
                    key.len(),
                    value.as_ptr(),
                    value.len(),
                    i,
                    start,
                )
            });
            stream_time = stream_time.max(start);
            let min_live = segment_id(stream_time.saturating_sub(retention), interval);
            if segment_id(start, interval) < min_live {
                continue; // dropped, as Kafka drops a record of an expired segment
            }
            let seqnum = if dups {
                seq += 1;
                seq
            } else {
                0
            };
            model.insert(
                (segment_id(start, interval), key.to_vec(), start, seqnum),
                (value, i),
            );
        }
        let visible = |start: i64| start > stream_time - retention;
        // A query over several keys on the memory engine without duplicates: by start, then
        // key (these keys are never followed by a seqnum byte they could sort against).
        let by_start = engine == KSTATE_ENGINE_MEMORY && !dups;
        let expect = |pred: &dyn Fn(&[u8], i64) -> bool| -> Vec<Win> {
            let mut hits: Vec<_> = model
                .iter()
                .filter(|((_, k, s, _), _)| visible(*s) && pred(k, *s))
                .collect();
            if by_start {
                hits.sort_by_key(|((_, k, s, q), _)| (*s, k.clone(), *q));
            }
            hits.into_iter()
                .map(|((_, k, s, _), (v, ts))| (k.clone(), v.clone(), *ts, *s, s + size))
                .collect()
        };
        // The run covers expiry: some stored windows are no longer visible.
        assert!(model.keys().any(|(_, _, s, _)| !visible(*s)));
        assert!(expect(&|_, _| true).len() > 20);
        let (from, to) = (stream_time - 700, stream_time - 100);
        for reverse in [false, true] {
            let rev = |mut v: Vec<Win>| {
                if reverse {
                    v.reverse();
                }
                v
            };
            let mut it = null_mut();
            // SAFETY: valid pointers for every call below.
            unsafe {
                let f = if reverse {
                    kstate_window_backward_all
                } else {
                    kstate_window_all
                };
                ok(f(w, KSTATE_READ_UNCOMMITTED, &mut it));
                assert_eq!(drain_windows(it), rev(expect(&|_, _| true)), "all");
                let f = if reverse {
                    kstate_window_backward_fetch_all
                } else {
                    kstate_window_fetch_all
                };
                ok(f(w, KSTATE_READ_UNCOMMITTED, from, to, &mut it));
                assert_eq!(
                    drain_windows(it),
                    rev(expect(&|_, s| s >= from && s <= to)),
                    "fetch_all"
                );
                let f = if reverse {
                    kstate_window_backward_fetch_range
                } else {
                    kstate_window_fetch_range
                };
                ok(f(
                    w,
                    KSTATE_READ_UNCOMMITTED,
                    b"b".as_ptr(),
                    1,
                    from,
                    to,
                    &mut it,
                ));
                assert_eq!(
                    drain_windows(it),
                    rev(expect(&|k, s| k == b"b" && s >= from && s <= to)),
                    "fetch"
                );
                let f = if reverse {
                    kstate_window_backward_fetch_key_range
                } else {
                    kstate_window_fetch_key_range
                };
                // Open lower bound, upper "bb": keys a, b, bb.
                ok(f(
                    w,
                    KSTATE_READ_UNCOMMITTED,
                    null(),
                    0,
                    b"bb".as_ptr(),
                    2,
                    from,
                    to,
                    &mut it,
                ));
                assert_eq!(
                    drain_windows(it),
                    rev(expect(&|k, s| k <= &b"bb"[..] && s >= from && s <= to)),
                    "open from"
                );
                // Lower "b", open upper: b, bb, c.
                ok(f(
                    w,
                    KSTATE_READ_UNCOMMITTED,
                    b"b".as_ptr(),
                    1,
                    null(),
                    0,
                    from,
                    to,
                    &mut it,
                ));
                assert_eq!(
                    drain_windows(it),
                    rev(expect(&|k, s| k >= &b"b"[..] && s >= from && s <= to)),
                    "open to"
                );
                // from > to: empty.
                ok(f(
                    w,
                    KSTATE_READ_UNCOMMITTED,
                    b"c".as_ptr(),
                    1,
                    b"a".as_ptr(),
                    1,
                    from,
                    to,
                    &mut it,
                ));
                assert!(drain_windows(it).is_empty());
            }
        }
        // Point fetch: the window of the model (latest seqnum with duplicates: Kafka's
        // fetch(key, start) reads the current seqnum only, so test it without).
        if !dups {
            for ((_, k, s, _), (v, ts)) in &model {
                let (mut out, mut t, mut found) = (kstate_bytes_t::NOTHING, 0, false);
                // SAFETY: valid pointers.
                ok(unsafe {
                    kstate_window_fetch(
                        w,
                        KSTATE_READ_UNCOMMITTED,
                        k.as_ptr(),
                        k.len(),
                        *s,
                        &mut out,
                        &mut t,
                        &mut found,
                    )
                });
                assert_eq!(found, visible(*s));
                if found {
                    assert_eq!((take(&mut out), t), (v.clone(), *ts));
                }
                // Nothing committed yet.
                // SAFETY: valid pointers.
                ok(unsafe {
                    kstate_window_fetch(
                        w,
                        KSTATE_READ_COMMITTED,
                        k.as_ptr(),
                        k.len(),
                        *s,
                        &mut out,
                        &mut t,
                        &mut found,
                    )
                });
                assert!(!found);
            }
        }
        ok(kstate_window_close(w));
    }
}

type Sess = (Vec<u8>, Vec<u8>, i64, i64);

fn drain_sessions(it: *mut kstate_session_iter_t) -> Vec<Sess> {
    let mut got = Vec::new();
    loop {
        let (mut k, mut v) = (kstate_bytes_t::NOTHING, kstate_bytes_t::NOTHING);
        let (mut s, mut e, mut found) = (0, 0, false);
        // SAFETY: valid out-parameters.
        ok(unsafe { kstate_session_iter_next(it, &mut k, &mut v, &mut s, &mut e, &mut found) });
        if !found {
            break;
        }
        got.push((take(&mut k), take(&mut v), s, e));
    }
    ok(kstate_session_iter_close(it));
    got
}

#[test]
fn sessions_match_a_model_of_find_sessions() {
    let (retention, interval) = (2_000, 500);
    let st = {
        let o = session_options(retention, interval);
        let mut s = null_mut();
        // SAFETY: valid pointers.
        ok(unsafe { kstate_session_open(null(), &o, &mut s) });
        s
    };
    let mut rng = Lcg(9);
    let mut model = std::collections::BTreeMap::new();
    let mut stream_time = -1i64;
    let keys: [&[u8]; 3] = [b"k1", b"k2", b"k3"];
    for i in 0..300i64 {
        let key = keys[rng.next(3) as usize];
        let start = i * 10 + rng.next(100) as i64;
        let end = start + rng.next(300) as i64;
        let agg = format!("g{i}").into_bytes();
        let remove = rng.next(5) == 0;
        // SAFETY: valid spans.
        unsafe {
            if remove {
                ok(kstate_session_remove(
                    st,
                    key.as_ptr(),
                    key.len(),
                    start,
                    end,
                ));
            } else {
                ok(kstate_session_put(
                    st,
                    key.as_ptr(),
                    key.len(),
                    start,
                    end,
                    agg.as_ptr(),
                    agg.len(),
                ));
            }
        }
        stream_time = stream_time.max(end);
        if segment_id(end, interval) < segment_id(stream_time.saturating_sub(retention), interval) {
            continue;
        }
        let k = (segment_id(end, interval), key.to_vec(), end, start);
        if remove {
            model.remove(&k);
        } else {
            model.insert(k, agg);
        }
    }
    let expect = |pred: &dyn Fn(&[u8], i64, i64) -> bool| -> Vec<Sess> {
        model
            .iter()
            .filter(|((_, k, e, s), _)| *e > stream_time - retention && pred(k, *s, *e))
            .map(|((_, k, e, s), v)| (k.clone(), v.clone(), *s, *e))
            .collect()
    };
    assert!(model
        .keys()
        .any(|(_, _, e, _)| *e <= stream_time - retention));
    let (earliest_end, latest_start) = (stream_time - 900, stream_time - 400);
    let mut it = null_mut();
    for reverse in [false, true] {
        let rev = |mut v: Vec<Sess>| {
            if reverse {
                v.reverse();
            }
            v
        };
        // SAFETY: valid pointers for every call below.
        unsafe {
            let f = if reverse {
                kstate_session_backward_find_sessions
            } else {
                kstate_session_find_sessions
            };
            ok(f(
                st,
                KSTATE_READ_UNCOMMITTED,
                b"k2".as_ptr(),
                2,
                earliest_end,
                latest_start,
                &mut it,
            ));
            let got = drain_sessions(it);
            assert!(!got.is_empty());
            assert_eq!(
                got,
                rev(expect(&|k, s, e| k == b"k2"
                    && e >= earliest_end
                    && s <= latest_start))
            );
            let f = if reverse {
                kstate_session_backward_find_sessions_range
            } else {
                kstate_session_find_sessions_range
            };
            ok(f(
                st,
                KSTATE_READ_UNCOMMITTED,
                b"k2".as_ptr(),
                2,
                null(),
                0,
                earliest_end,
                latest_start,
                &mut it,
            ));
            assert_eq!(
                drain_sessions(it),
                rev(expect(&|k, s, e| k >= &b"k2"[..]
                    && e >= earliest_end
                    && s <= latest_start))
            );
            let f = if reverse {
                kstate_session_backward_fetch
            } else {
                kstate_session_fetch
            };
            ok(f(st, KSTATE_READ_UNCOMMITTED, b"k1".as_ptr(), 2, &mut it));
            assert_eq!(drain_sessions(it), rev(expect(&|k, _, _| k == b"k1")));
            let f = if reverse {
                kstate_session_backward_fetch_range
            } else {
                kstate_session_fetch_range
            };
            ok(f(
                st,
                KSTATE_READ_UNCOMMITTED,
                null(),
                0,
                b"k2".as_ptr(),
                2,
                &mut it,
            ));
            assert_eq!(drain_sessions(it), rev(expect(&|k, _, _| k <= &b"k2"[..])));
        }
    }
    for ((_, k, e, s), v) in &model {
        let (mut out, mut found) = (kstate_bytes_t::NOTHING, false);
        // SAFETY: valid pointers.
        ok(unsafe {
            kstate_session_fetch_session(
                st,
                KSTATE_READ_UNCOMMITTED,
                k.as_ptr(),
                k.len(),
                *s,
                *e,
                &mut out,
                &mut found,
            )
        });
        assert_eq!(found, *e > stream_time - retention);
        if found {
            assert_eq!(&take(&mut out), v);
        }
    }
    ok(kstate_session_close(st));
}

#[test]
fn handles_are_checked_by_kind_and_state() {
    let w = open_window(&window_options(1_000, 10, false, 0));
    let o = session_options(1_000, 0);
    let mut s = null_mut();
    // SAFETY: valid pointers for every call below (handles are numbers, never dereferenced).
    unsafe {
        ok(kstate_session_open(null(), &o, &mut s));
        ok(kstate_window_put(
            w,
            b"k".as_ptr(),
            1,
            b"v".as_ptr(),
            1,
            5,
            0,
        ));
        let mut wi = null_mut();
        ok(kstate_window_all(w, KSTATE_READ_UNCOMMITTED, &mut wi));
        // A window store is no session store and no key-value store, and back.
        let as_session = pointer::<kstate_session_t>(number(w));
        assert_eq!(
            code(kstate_session_remove(as_session, b"k".as_ptr(), 1, 0, 0)),
            KSTATE_ERR_INVALID_HANDLE
        );
        assert_eq!(
            code(kstate_kv_rollback(pointer(number(w)))),
            KSTATE_ERR_INVALID_HANDLE
        );
        assert_eq!(
            code(kstate_window_rollback(pointer(number(s)))),
            KSTATE_ERR_INVALID_HANDLE
        );
        assert_eq!(
            code(kstate_window_close(pointer(number(wi)))),
            KSTATE_ERR_INVALID_HANDLE
        );
        let (mut k, mut v) = (kstate_bytes_t::NOTHING, kstate_bytes_t::NOTHING);
        let (mut a, mut b, mut found) = (0, 0, false);
        assert_eq!(
            code(kstate_session_iter_next(
                pointer(number(wi)),
                &mut k,
                &mut v,
                &mut a,
                &mut b,
                &mut found
            )),
            KSTATE_ERR_INVALID_HANDLE
        );
        assert_eq!(
            code(kstate_window_close(null_mut())),
            KSTATE_ERR_INVALID_HANDLE
        );
        assert_eq!(
            code(kstate_window_close(pointer(
                0x4B03_0000_0000_0000 | 0xFFFF_FFFF
            ))),
            KSTATE_ERR_INVALID_HANDLE
        );
        // NULL out-parameters and spans.
        let mut it = null_mut();
        assert_eq!(
            code(kstate_window_all(w, KSTATE_READ_UNCOMMITTED, null_mut())),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            code(kstate_window_all(w, 7, &mut it)),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            code(kstate_window_put(w, null(), 3, b"v".as_ptr(), 1, 0, 0)),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            code(kstate_window_fetch_key_range(
                w,
                0,
                null(),
                2,
                null(),
                0,
                0,
                1,
                &mut it
            )),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert!(it.is_null());
        assert_eq!(
            code(kstate_session_put(s, b"k".as_ptr(), 1, 0, 0, null(), 4)),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        let mut t = 0;
        assert_eq!(
            code(kstate_window_fetch(
                w,
                0,
                b"k".as_ptr(),
                1,
                0,
                null_mut(),
                &mut t,
                &mut found
            )),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            code(kstate_window_iter_next(
                wi,
                &mut k,
                &mut v,
                &mut a,
                null_mut(),
                &mut b,
                &mut found
            )),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        // Closing the store closes its iterator; double closes are errors, not crashes.
        ok(kstate_window_close(w));
        assert_eq!(
            code(kstate_window_iter_next(
                wi, &mut k, &mut v, &mut t, &mut a, &mut b, &mut found
            )),
            KSTATE_ERR_ITERATOR_CLOSED
        );
        ok(kstate_window_iter_close(wi));
        assert_eq!(
            code(kstate_window_iter_close(wi)),
            KSTATE_ERR_ITERATOR_CLOSED
        );
        assert_eq!(code(kstate_window_close(w)), KSTATE_ERR_STORE_CLOSED);
        assert_eq!(
            code(kstate_window_put(w, b"k".as_ptr(), 1, null(), 0, 0, 0)),
            KSTATE_ERR_STORE_CLOSED
        );
        ok(kstate_session_close(s));
        assert_eq!(code(kstate_session_close(s)), KSTATE_ERR_STORE_CLOSED);
        // A new store never gets the old number.
        let w2 = open_window(&window_options(1_000, 10, false, 0));
        assert_ne!(number(w2), number(w));
        ok(kstate_window_close(w2));
    }
}

#[test]
fn commit_rollback_and_offsets_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let wpath = CString::new(dir.path().join("w").into_os_string().into_encoded_bytes()).unwrap();
    let spath = CString::new(dir.path().join("s").into_os_string().into_encoded_bytes()).unwrap();
    let mut wo = window_options(10_000, 100, false, 0);
    wo.engine = KSTATE_ENGINE_ROCKSDB;
    let mut so = session_options(10_000, 0);
    so.engine = KSTATE_ENGINE_ROCKSDB;
    let topic = c"changelog";
    let offset = kstate_offset_t {
        topic: topic.as_ptr(),
        partition: 3,
        offset: 41,
        has_offset: true,
    };
    // SAFETY: valid pointers for every call below.
    unsafe {
        let (mut w, mut s) = (null_mut(), null_mut());
        ok(kstate_window_open(wpath.as_ptr(), &wo, &mut w));
        ok(kstate_session_open(spath.as_ptr(), &so, &mut s));
        ok(kstate_window_put(
            w,
            b"k".as_ptr(),
            1,
            b"one".as_ptr(),
            3,
            11,
            100,
        ));
        ok(kstate_session_put(
            s,
            b"k".as_ptr(),
            1,
            10,
            20,
            b"agg".as_ptr(),
            3,
        ));
        ok(kstate_window_commit(w, &offset, 1, b"m".as_ptr(), 1));
        ok(kstate_session_commit(s, &offset, 1, null(), 0));
        // Uncommitted writes, then rolled back.
        ok(kstate_window_put(
            w,
            b"k".as_ptr(),
            1,
            b"two".as_ptr(),
            3,
            12,
            200,
        ));
        ok(kstate_session_remove(s, b"k".as_ptr(), 1, 10, 20));
        let mut bytes = 0;
        ok(kstate_window_approximate_num_uncommitted_bytes(
            w, &mut bytes,
        ));
        assert!(bytes > 0);
        ok(kstate_window_rollback(w));
        ok(kstate_session_rollback(s));
        ok(kstate_window_approximate_num_uncommitted_bytes(
            w, &mut bytes,
        ));
        assert_eq!(bytes, 0);
        // Uncommitted again, then closed: lost.
        ok(kstate_window_put(
            w,
            b"k".as_ptr(),
            1,
            b"three".as_ptr(),
            5,
            13,
            300,
        ));
        ok(kstate_window_close(w));
        ok(kstate_session_close(s));
        ok(kstate_window_open(wpath.as_ptr(), &wo, &mut w));
        ok(kstate_session_open(spath.as_ptr(), &so, &mut s));
        let (mut off, mut found) = (0, false);
        ok(kstate_window_committed_offset(
            w,
            topic.as_ptr(),
            3,
            &mut off,
            &mut found,
        ));
        assert_eq!((off, found), (41, true));
        ok(kstate_session_committed_offset(
            s,
            topic.as_ptr(),
            3,
            &mut off,
            &mut found,
        ));
        assert_eq!((off, found), (41, true));
        ok(kstate_session_committed_offset(
            s,
            topic.as_ptr(),
            4,
            &mut off,
            &mut found,
        ));
        assert_eq!((off, found), (0, false));
        let mut m = kstate_bytes_t::NOTHING;
        ok(kstate_window_committed_metadata(w, &mut m, &mut found));
        assert_eq!((take(&mut m), found), (b"m".to_vec(), true));
        let mut it = null_mut();
        ok(kstate_window_all(w, KSTATE_READ_COMMITTED, &mut it));
        assert_eq!(
            drain_windows(it),
            [(b"k".to_vec(), b"one".to_vec(), 11, 100, 200)]
        );
        let mut sit = null_mut();
        ok(kstate_session_fetch(
            s,
            KSTATE_READ_COMMITTED,
            b"k".as_ptr(),
            1,
            &mut sit,
        ));
        assert_eq!(
            drain_sessions(sit),
            [(b"k".to_vec(), b"agg".to_vec(), 10, 20)]
        );
        // A window store path is not a session store.
        let mut other = null_mut();
        ok(kstate_window_close(w));
        assert_eq!(
            code(kstate_session_open(wpath.as_ptr(), &so, &mut other)),
            KSTATE_ERR_FORMAT_MISMATCH
        );
        ok(kstate_session_close(s));
    }
}

#[test]
fn layout_1_callers_get_the_defaults_of_the_later_fields() {
    // A layout-1 caller's struct has only its 96 / 80 bytes: the fields after them (here
    // set to non-defaults) must be neither written by init nor read.
    let mut wo = kstate_window_options_t {
        time_ordered: true,
        key_index: true,
        ..kstate_window_options_t::defaults()
    };
    // SAFETY: writable for layout 1's size.
    ok(unsafe { kstate_window_options_init(&mut wo, KSTATE_WINDOW_OPTIONS_SIZE_V1) });
    assert!(wo.time_ordered && wo.key_index, "init wrote past layout 1");
    assert_eq!(wo.struct_size, KSTATE_WINDOW_OPTIONS_SIZE_V1);
    // SAFETY: readable for layout 1.
    let read = unsafe { kstate_window_options_t::read(&wo) }.unwrap();
    assert!(!read.time_ordered && !read.key_index);
    let mut modern = kstate_window_options_t::defaults();
    modern.time_ordered = true;
    modern.key_index = true;
    assert!(modern.convert().unwrap().key_index);
    modern.time_ordered = false;
    assert!(matches!(
        modern.convert(),
        Err(crate::Error::InvalidArgument(_))
    ));

    let mut so = kstate_session_options_t {
        value_format: 0xFFFF_FFFF,
        time_ordered: true,
        ..kstate_session_options_t::defaults()
    };
    // SAFETY: writable for layout 1's size.
    ok(unsafe { kstate_session_options_init(&mut so, KSTATE_SESSION_OPTIONS_SIZE_V1) });
    assert_eq!(so.value_format, 0xFFFF_FFFF, "init wrote past layout 1");
    // SAFETY: readable for layout 1.
    let read = unsafe { kstate_session_options_t::read(&so) }.unwrap();
    assert_eq!(read.value_format, KSTATE_FORMAT_PLAIN);
    assert!(!read.time_ordered);
    let d = read.convert().unwrap();
    assert!(!d.time_ordered);
    assert_eq!(d.store.value_format, crate::ValueFormat::Plain);
    let timestamped = kstate_session_options_t {
        value_format: KSTATE_FORMAT_TIMESTAMPED,
        ..kstate_session_options_t::defaults()
    };
    assert!(matches!(
        timestamped.convert(),
        Err(crate::Error::InvalidArgument(_))
    ));
}
