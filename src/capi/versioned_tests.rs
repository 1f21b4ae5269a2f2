//! Unit tests of the versioned store's C functions, called as C would: every result equals
//! the Rust core's on the same random operations (the core is checked against Kafka's
//! semantics in its own tests), plus the options' layout checks and handle misuse.

use std::ptr::{null, null_mut};

use super::bytes::Nothing;
use super::*;
use crate::store::VersionOrder;
use crate::{Isolation, VersionedDelete, VersionedOptions, VersionedRecord, VersionedStore};

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

fn options(retention: i64, interval: i64) -> kstate_versioned_options_t {
    let mut o = std::mem::MaybeUninit::<kstate_versioned_options_t>::uninit();
    // SAFETY: writable for the struct's size; initialised by the call.
    ok(unsafe {
        kstate_versioned_options_init(o.as_mut_ptr(), size_of::<kstate_versioned_options_t>())
    });
    // SAFETY: initialised above.
    let mut o = unsafe { o.assume_init() };
    o.engine = KSTATE_ENGINE_MEMORY;
    o.history_retention_ms = retention;
    o.segment_interval_ms = interval;
    o
}

fn open(o: &kstate_versioned_options_t) -> *mut kstate_versioned_t {
    let mut s = null_mut();
    // SAFETY: valid pointers.
    ok(unsafe { kstate_versioned_open(null(), o, &mut s) });
    s
}

/// A record out-parameter as the core's record (`None` when not found), released.
fn record(mut r: kstate_versioned_record_t, found: bool) -> Option<VersionedRecord> {
    let value = if r.value.ptr.is_null() {
        Vec::new()
    } else {
        // SAFETY: a buffer kstate returned, `len` bytes.
        unsafe { std::slice::from_raw_parts(r.value.ptr, r.value.len) }.to_vec()
    };
    // SAFETY: as returned.
    unsafe { kstate_bytes_free(&mut r.value) };
    if !found {
        assert!(value.is_empty() && r.timestamp == 0 && r.valid_to == 0 && !r.has_valid_to);
        return None;
    }
    Some(VersionedRecord {
        value,
        timestamp: r.timestamp,
        valid_to: r.has_valid_to.then_some(r.valid_to),
    })
}

/// A delete's out-parameters as the core's outcome: dropped when nothing was found and
/// `valid_to` says `KSTATE_VERSIONED_NOT_PUT`.
fn deleted(mut r: kstate_versioned_record_t, found: bool) -> VersionedDelete {
    if !found && r.valid_to == KSTATE_VERSIONED_NOT_PUT {
        r.valid_to = 0;
        assert_eq!(record(r, found), None);
        return VersionedDelete::NotPut;
    }
    VersionedDelete::Deleted(record(r, found))
}

fn get(
    s: *mut kstate_versioned_t,
    iso: u32,
    key: &[u8],
    as_of: Option<i64>,
) -> Option<VersionedRecord> {
    let mut r = kstate_versioned_record_t::NOTHING;
    let mut found = false;
    // SAFETY: valid pointers.
    ok(unsafe {
        match as_of {
            None => kstate_versioned_get(s, iso, key.as_ptr(), key.len(), &mut r, &mut found),
            Some(t) => {
                kstate_versioned_get_as_of(s, iso, key.as_ptr(), key.len(), t, &mut r, &mut found)
            }
        }
    });
    record(r, found)
}

fn versions(
    s: *mut kstate_versioned_t,
    iso: u32,
    key: &[u8],
    from: i64,
    to: i64,
    order: u32,
) -> Vec<VersionedRecord> {
    let mut it = null_mut();
    // SAFETY: valid pointers.
    ok(unsafe {
        kstate_versioned_versions(s, iso, key.as_ptr(), key.len(), from, to, order, &mut it)
    });
    let mut out = Vec::new();
    loop {
        let mut r = kstate_versioned_record_t::NOTHING;
        let mut found = false;
        // SAFETY: valid pointers.
        ok(unsafe { kstate_versioned_iter_next(it, &mut r, &mut found) });
        match record(r, found) {
            Some(v) => out.push(v),
            None => break,
        }
    }
    ok(kstate_versioned_iter_close(it));
    out
}

struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> i64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n) as i64
    }
}

#[test]
fn options_are_sized_and_validated() {
    let mut o = options(1_000, 0);
    for bad in [0, 8, 72, 88, 4096] {
        // SAFETY: writable for the struct's size (the sizes tried are refused first).
        let c = code(unsafe { kstate_versioned_options_init(&mut o, bad) });
        assert_eq!(c, KSTATE_ERR_INVALID_ARGUMENT, "{bad}");
    }
    // SAFETY: NULL is refused.
    let c = code(unsafe { kstate_versioned_options_init(null_mut(), 80) });
    assert_eq!(c, KSTATE_ERR_INVALID_ARGUMENT);
    let d = kstate_versioned_options_t::defaults().convert().unwrap();
    assert_eq!(d.history_retention, 86_400_000);
    assert_eq!(d.segment_interval, None);
    assert_eq!(d.store.engine, crate::EngineKind::RocksDb);
    // Refused: negative retention or interval, a forged size, an unknown engine.
    for bad in [
        options(-1, 0),
        options(100, -5),
        kstate_versioned_options_t {
            struct_size: 81,
            ..options(100, 0)
        },
        kstate_versioned_options_t {
            engine: 9,
            ..options(100, 0)
        },
    ] {
        let mut s = null_mut();
        // SAFETY: valid pointers.
        let c = code(unsafe { kstate_versioned_open(null(), &bad, &mut s) });
        assert_eq!(c, KSTATE_ERR_INVALID_ARGUMENT);
        assert!(s.is_null());
    }
    // The interval given, or Kafka's default for the retention.
    for (interval, want) in [(7, 7), (0, 2_000)] {
        let s = open(&options(1_000, interval));
        let store = crate::handle::HANDLES
            .get::<VersionedStore>(number(s))
            .unwrap();
        assert_eq!(
            (store.segment_interval(), store.history_retention()),
            (want, 1_000)
        );
        ok(kstate_versioned_close(s));
    }
}

#[test]
fn every_result_equals_the_core() {
    let (retention, interval) = (300, 100);
    for seed in [1, 2, 3] {
        let s = open(&options(retention, interval));
        let core = VersionedStore::open_in_memory(
            &VersionedOptions::new(retention)
                .with_store(crate::StoreOptions::plain(crate::EngineKind::Memory))
                .with_segment_interval(interval),
        )
        .unwrap();
        let mut rng = Rng(seed);
        let keys: [&[u8]; 3] = [b"a", b"b", b""];
        let mut dropped_deletes = 0;
        for i in 0..600 {
            let key = keys[rng.next(3) as usize];
            let ts = (i * 3 + rng.next(120) - if rng.next(5) == 0 { 350 } else { 0 }).max(0);
            let value = format!("v{i}").into_bytes();
            match rng.next(8) {
                0 => {
                    let mut r = kstate_versioned_record_t::NOTHING;
                    let mut found = false;
                    // SAFETY: valid pointers.
                    ok(unsafe {
                        kstate_versioned_delete(s, key.as_ptr(), key.len(), ts, &mut r, &mut found)
                    });
                    let want = core.delete(key, ts).unwrap();
                    assert_eq!(deleted(r, found), want, "delete {i}");
                    dropped_deletes += usize::from(want.is_not_put());
                }
                op => {
                    // A NULL value is a tombstone; a non-NULL empty one a value.
                    let v: Option<&[u8]> = match op {
                        1 => None,
                        2 => Some(b""),
                        _ => Some(&value),
                    };
                    let mut got = 0;
                    // SAFETY: valid pointers.
                    ok(unsafe {
                        kstate_versioned_put(
                            s,
                            key.as_ptr(),
                            key.len(),
                            v.map_or(null(), <[u8]>::as_ptr),
                            v.map_or(0, <[u8]>::len),
                            ts,
                            &mut got,
                        )
                    });
                    assert_eq!(got, core.put(key, v, ts).unwrap(), "put {i}");
                }
            }
            match rng.next(25) {
                0 => {
                    // SAFETY: no offsets, no metadata.
                    ok(unsafe { kstate_versioned_commit(s, null(), 0, null(), 0) });
                    core.commit(&[], None).unwrap();
                }
                1 => {
                    ok(kstate_versioned_rollback(s));
                    core.rollback().unwrap();
                }
                _ => {}
            }
            let (k, t) = (keys[rng.next(3) as usize], i * 3 - rng.next(400));
            for (iso, isolation) in [
                (KSTATE_READ_UNCOMMITTED, Isolation::ReadUncommitted),
                (KSTATE_READ_COMMITTED, Isolation::ReadCommitted),
            ] {
                assert_eq!(
                    get(s, iso, k, None),
                    core.get_with(isolation, k, None).unwrap()
                );
                assert_eq!(
                    get(s, iso, k, Some(t)),
                    core.get_with(isolation, k, Some(t)).unwrap()
                );
                let mut st = 0;
                // SAFETY: valid pointers.
                ok(unsafe { kstate_versioned_stream_time(s, iso, &mut st) });
                assert_eq!(st, core.stream_time(isolation).unwrap());
                for (c_order, order) in [
                    (KSTATE_VERSIONS_ASCENDING, VersionOrder::Ascending),
                    (KSTATE_VERSIONS_DESCENDING, VersionOrder::Descending),
                ] {
                    for (from, to) in [(i64::MIN, i64::MAX), (t - 60, t + 60)] {
                        let (f, u) = (
                            (from != i64::MIN).then_some(from),
                            (to != i64::MAX).then_some(to),
                        );
                        assert_eq!(
                            versions(s, iso, k, from, to, c_order),
                            core.versions(isolation, k, f, u, order).unwrap()
                        );
                    }
                }
            }
        }
        assert!(dropped_deletes > 0, "seed {seed}: no delete was dropped");
        ok(kstate_versioned_close(s));
    }
}

#[test]
fn handles_are_checked_by_kind_and_state() {
    let s = open(&options(1_000, 0));
    let mut kv_opts = kstate_kv_options_t::defaults();
    kv_opts.engine = KSTATE_ENGINE_MEMORY;
    let mut kv = null_mut();
    // SAFETY: valid pointers for every call below (handles are numbers, never dereferenced).
    unsafe {
        ok(kstate_kv_open(null(), &kv_opts, &mut kv));
        let mut code_out = 0;
        ok(kstate_versioned_put(
            s,
            b"k".as_ptr(),
            1,
            b"v".as_ptr(),
            1,
            5,
            &mut code_out,
        ));
        let mut it = null_mut();
        ok(kstate_versioned_versions(
            s,
            0,
            b"k".as_ptr(),
            1,
            0,
            9,
            0,
            &mut it,
        ));
        let mut r = kstate_versioned_record_t::NOTHING;
        let mut found = false;
        // Wrong kinds, both ways; nothing is closed by them.
        let kinds = [
            code(kstate_versioned_rollback(pointer(number(kv)))),
            code(kstate_versioned_close(pointer(number(it)))),
            code(kstate_versioned_iter_next(
                pointer(number(s)),
                &mut r,
                &mut found,
            )),
            code(kstate_versioned_iter_close(pointer(number(s)))),
            code(kstate_kv_rollback(pointer(number(s)))),
            code(kstate_window_close(pointer(number(s)))),
            code(kstate_session_iter_close(pointer(number(it)))),
        ];
        assert_eq!(kinds, [KSTATE_ERR_INVALID_HANDLE; 7]);
        // NULL and forged handles.
        for h in [0usize, 1, 0x1234, usize::MAX] {
            assert_eq!(
                code(kstate_versioned_close(pointer(h as u64))),
                KSTATE_ERR_INVALID_HANDLE
            );
            assert_eq!(
                code(kstate_versioned_stream_time(
                    pointer(h as u64),
                    0,
                    &mut code_out
                )),
                KSTATE_ERR_INVALID_HANDLE
            );
            assert_eq!(
                code(kstate_versioned_iter_next(
                    pointer(h as u64),
                    &mut r,
                    &mut found
                )),
                KSTATE_ERR_INVALID_HANDLE
            );
        }
        // Bad arguments: NULL out-parameters and spans, unknown isolation and order.
        let mut it2 = null_mut();
        let bad = [
            code(kstate_versioned_put(
                s,
                null(),
                1,
                null(),
                0,
                1,
                &mut code_out,
            )),
            code(kstate_versioned_put(
                s,
                b"k".as_ptr(),
                1,
                null(),
                3,
                1,
                &mut code_out,
            )),
            code(kstate_versioned_put(
                s,
                b"k".as_ptr(),
                1,
                null(),
                0,
                1,
                null_mut(),
            )),
            code(kstate_versioned_get(
                s,
                0,
                b"k".as_ptr(),
                1,
                null_mut(),
                &mut found,
            )),
            code(kstate_versioned_get(
                s,
                5,
                b"k".as_ptr(),
                1,
                &mut r,
                &mut found,
            )),
            code(kstate_versioned_versions(
                s,
                0,
                b"k".as_ptr(),
                1,
                0,
                9,
                2,
                &mut it2,
            )),
            code(kstate_versioned_versions(
                s,
                0,
                b"k".as_ptr(),
                1,
                9,
                0,
                0,
                &mut it2,
            )),
            code(kstate_versioned_iter_next(it, &mut r, null_mut())),
        ];
        assert_eq!(bad, [KSTATE_ERR_INVALID_ARGUMENT; 8]);
        assert!(it2.is_null());
        // The iterator holds its results: the store's close does not end it.
        ok(kstate_versioned_close(s));
        ok(kstate_versioned_iter_next(it, &mut r, &mut found));
        assert_eq!(
            record(r, found),
            Some(VersionedRecord {
                value: b"v".to_vec(),
                timestamp: 5,
                valid_to: None
            })
        );
        ok(kstate_versioned_iter_close(it));
        assert_eq!(
            code(kstate_versioned_iter_close(it)),
            KSTATE_ERR_ITERATOR_CLOSED
        );
        assert_eq!(
            code(kstate_versioned_iter_next(it, &mut r, &mut found)),
            KSTATE_ERR_ITERATOR_CLOSED
        );
        assert_eq!(code(kstate_versioned_close(s)), KSTATE_ERR_STORE_CLOSED);
        assert_eq!(
            code(kstate_versioned_put(
                s,
                b"k".as_ptr(),
                1,
                null(),
                0,
                9,
                &mut code_out
            )),
            KSTATE_ERR_STORE_CLOSED
        );
        assert_eq!(
            code(kstate_versioned_restore_batch(
                s,
                null(),
                0,
                null(),
                0,
                null(),
                0
            )),
            KSTATE_ERR_STORE_CLOSED
        );
        ok(kstate_kv_close(kv));
        // A new store never gets the old number.
        let s2 = open(&options(1_000, 0));
        assert_ne!(number(s2), number(s));
        ok(kstate_versioned_close(s2));
    }
}
