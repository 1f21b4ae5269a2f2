//! Tests of the JNI surface without a JVM: the natives' bodies (the plain functions
//! [`super::declare::natives`] generates) called with the `long` handles Java would pass,
//! misuse included, checked against the C surface.

use jni::sys::{jint, jlong};

use super::codec;
use super::natives::kv::{self, close_iterator, commit, committed_offset, property, rollback};
use super::natives::{self as ops, OpenArgs, NO_OFFSET};
use super::segmented::{self as seg, session, window, KEY, KEY_RANGE};
use super::versioned::{self as ver, versioned, NO_VALID_TO};
use crate::capi::{self, kstate_error_code, kstate_error_free, kstate_error_t};
use crate::{Error, ErrorCode, Result};

// Positions in the packed open options ([`OpenArgs`]).
const ENGINE: usize = 0;
const FORMAT: usize = 1;
const BLOCK_CACHE: usize = 4;
const WRITE_BUFFERS: usize = 6;
const BLOOM: usize = 7;
const STATISTICS: usize = 8;
const BOUNDED: usize = 9;
const MEMTABLE: usize = 10;
const MAX_UNCOMMITTED: usize = 2;
const RETENTION: usize = 12;
const WINDOW_SIZE: usize = 13;
const INTERVAL: usize = 15;

/// The packed options of a memory store of plain values with bloom filters, then `set`.
fn packed(set: &[(usize, jlong)]) -> [jlong; OpenArgs::LEN] {
    let mut v = [0; OpenArgs::LEN];
    (v[ENGINE], v[FORMAT], v[BLOOM]) = (1, 1, 1);
    for &(i, x) in set {
        v[i] = x;
    }
    v
}

fn options(set: &[(usize, jlong)]) -> OpenArgs {
    OpenArgs::decode(&packed(set)).unwrap()
}

fn memory() -> OpenArgs {
    options(&[])
}

fn topics(t: &[&str]) -> Vec<String> {
    t.iter().map(|t| t.to_string()).collect()
}

type Op = (&'static str, fn(jlong) -> Result<()>);

/// Every native taking a store handle, called with valid other arguments.
const STORE_OPS: [Op; 14] = [
    ("get", |h| ops::get(h, b"k", false).map(drop)),
    ("get committed", |h| ops::get(h, b"k", true).map(drop)),
    ("put", |h| ops::put(h, b"k", Some(b"v"))),
    ("putIfAbsent", |h| {
        ops::put_if_absent(h, b"k", b"v").map(drop)
    }),
    ("delete", |h| ops::delete(h, b"k").map(drop)),
    ("putAll", |h| ops::put_all(h, &[])),
    ("scan", |h| {
        ops::scan(h, None, None, false, false, false).map(drop)
    }),
    ("commit", |h| commit(h, &topics(&["t"]), &[0], &[1], None)),
    ("committedOffset", |h| committed_offset(h, "t", 0).map(drop)),
    ("committedMetadata", |h| kv::committed_metadata(h).map(drop)),
    ("rollback", rollback),
    ("approximateNumEntries", |h| {
        ops::approximate_num_entries(h, false).map(drop)
    }),
    ("approximateNumUncommittedBytes", |h| {
        kv::uncommitted_bytes(h).map(drop)
    }),
    ("flush", |h| kv::flush(h, None)),
];

/// `close` last: it retires the handle.
const STORE_CLOSE: Op = ("close", kv::close);

/// Every native taking an iterator handle.
const ITER_OPS: [Op; 2] = [
    ("next", |h| kv::next(h, 10, 1000).map(drop)),
    ("closeIterator", close_iterator),
];

fn code_of(r: Result<()>) -> Option<ErrorCode> {
    r.err().map(|e| e.code())
}

fn expect_all(ops: &[Op], h: jlong, want: ErrorCode, case: &str) {
    for (name, op) in ops {
        assert_eq!(code_of(op(h)), Some(want), "{name} with {case} ({h:#x})");
    }
}

/// A store with one entry and an open iterator over it.
fn store_and_iter() -> (jlong, jlong) {
    let s = ops::open(None, &memory()).unwrap();
    ops::put(s, b"a", Some(b"1")).unwrap();
    let it = ops::scan(s, None, None, false, false, false).unwrap();
    (s, it)
}

#[test]
fn null_and_forged_handles_are_invalid_everywhere() {
    let forged: [jlong; 6] = [
        0,
        1,
        -1,
        0x4B53_0000_0000_0001 + 1_000_000,
        jlong::MAX,
        0x4B01_0000_0000_0000, // a store number with serial 0
    ];
    for h in forged {
        expect_all(&STORE_OPS, h, ErrorCode::InvalidHandle, "a forged handle");
        expect_all(
            &[STORE_CLOSE],
            h,
            ErrorCode::InvalidHandle,
            "a forged handle",
        );
        expect_all(&ITER_OPS, h, ErrorCode::InvalidHandle, "a forged handle");
    }
    // Never issued: the right layout and kind, a serial far beyond the last one.
    let never = 0x4B01_0000_0000_0000 + 0xFFFF_FFFF_FFFF;
    expect_all(
        &STORE_OPS,
        never,
        ErrorCode::InvalidHandle,
        "a never-issued handle",
    );
    let never_it = 0x4B02_0000_0000_0000 + 0xFFFF_FFFF_FFFF;
    expect_all(
        &ITER_OPS,
        never_it,
        ErrorCode::InvalidHandle,
        "a never-issued handle",
    );
}

#[test]
fn an_iterator_handle_is_no_store_handle_and_back() {
    let (s, it) = store_and_iter();
    // Every store native refuses the iterator: nothing is read, written or closed.
    expect_all(
        &STORE_OPS,
        it,
        ErrorCode::InvalidHandle,
        "an iterator handle",
    );
    expect_all(
        &[STORE_CLOSE],
        it,
        ErrorCode::InvalidHandle,
        "an iterator handle",
    );
    // Every iterator native refuses the store.
    expect_all(&ITER_OPS, s, ErrorCode::InvalidHandle, "a store handle");
    // Both are still open and intact.
    assert_eq!(
        ops::get(s, b"a", false).unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert!(kv::next(it, 10, 1000).unwrap().is_some());
    assert_eq!(kv::next(it, 10, 1000).unwrap(), None);
    // Closed handles of the other kind stay the wrong kind.
    close_iterator(it).unwrap();
    expect_all(
        &STORE_OPS,
        it,
        ErrorCode::InvalidHandle,
        "a closed iterator handle",
    );
    kv::close(s).unwrap();
    expect_all(
        &ITER_OPS,
        s,
        ErrorCode::InvalidHandle,
        "a closed store handle",
    );
}

#[test]
fn closed_handles_are_closed_errors() {
    let (s, it) = store_and_iter();
    let it2 = ops::scan(s, None, None, false, true, true).unwrap();
    close_iterator(it).unwrap();
    expect_all(
        &ITER_OPS,
        it,
        ErrorCode::IteratorClosed,
        "a closed iterator",
    );
    kv::close(s).unwrap();
    expect_all(&STORE_OPS, s, ErrorCode::StoreClosed, "a closed store");
    expect_all(&[STORE_CLOSE], s, ErrorCode::StoreClosed, "a closed store");
    // An iterator whose store was closed is closed; its handle is still released once.
    assert_eq!(code_of(ITER_OPS[0].1(it2)), Some(ErrorCode::IteratorClosed));
    close_iterator(it2).unwrap();
    assert_eq!(
        code_of(close_iterator(it2)),
        Some(ErrorCode::IteratorClosed)
    );
}

/// The code of a C error, freeing it.
fn c_code(e: *mut kstate_error_t) -> Option<ErrorCode> {
    // SAFETY: `e` is NULL or fresh from kstate; freed once.
    let code = unsafe {
        let c = kstate_error_code(e);
        kstate_error_free(e);
        c
    };
    ErrorCode::from_i32(code)
}

fn c_store(h: jlong) -> *mut capi::kstate_kv_t {
    h as u64 as usize as *mut capi::kstate_kv_t
}

fn c_iter(h: jlong) -> *mut capi::kstate_kv_iter_t {
    h as u64 as usize as *mut capi::kstate_kv_iter_t
}

/// C's verdict on a handle used as a store (rollback) and as an iterator (next batch).
fn c_verdicts(h: jlong) -> (Option<ErrorCode>, Option<ErrorCode>) {
    let as_store = c_code(capi::kstate_kv_rollback(c_store(h)));
    let mut b = capi::kstate_kv_batch_t {
        entries: std::ptr::null(),
        len: 0,
        owner: std::ptr::null_mut(),
    };
    // SAFETY: valid out-pointer; the handle is what is tested.
    let as_iter = c_code(unsafe { capi::kstate_kv_iter_next_batch(c_iter(h), 1, 0, &mut b) });
    // SAFETY: `b` is as returned.
    unsafe { capi::kstate_kv_batch_free(&mut b) };
    (as_store, as_iter)
}

fn jni_verdicts(h: jlong) -> (Option<ErrorCode>, Option<ErrorCode>) {
    (code_of(rollback(h)), code_of(kv::next(h, 1, 1).map(drop)))
}

#[test]
fn both_surfaces_share_one_table_and_one_verdict() {
    let (s, it) = store_and_iter();
    // A store opened through JNI is a store for C, and back.
    assert_eq!(c_verdicts(s).0, None);
    let mut c_handle = std::ptr::null_mut();
    let mut opts = <capi::kstate_kv_options_t as capi::OptionsStruct>::defaults();
    opts.engine = capi::KSTATE_ENGINE_MEMORY;
    // SAFETY: valid pointers.
    assert_eq!(
        c_code(unsafe { capi::kstate_kv_open(std::ptr::null(), &opts, &mut c_handle) }),
        None
    );
    let cs = c_handle as usize as u64 as jlong;
    assert_eq!(rollback(cs).map_err(|e| e.code()), Ok(()));
    // A versioned store and iterator are neither for C's nor for JNI's key-value functions.
    let (vs, vit) = versioned_store_and_iter();
    // Same verdicts for every kind of misuse, handle by handle.
    let mut cases = vec![
        0,
        1,
        -1,
        0x4B53_0000_0000_0001 + 1_000_000,
        s,
        it,
        cs,
        vs,
        vit,
    ];
    for h in cases.clone() {
        assert_eq!(c_verdicts(h), jni_verdicts(h), "live handle {h:#x}");
    }
    close_iterator(it).unwrap();
    kv::close(s).unwrap();
    versioned::close(vs).unwrap();
    assert_eq!(c_code(capi::kstate_kv_close(c_store(cs))), None);
    cases.extend([s + 1_000_000, it + 1_000_000]);
    for h in cases {
        assert_eq!(c_verdicts(h), jni_verdicts(h), "closed handle {h:#x}");
    }
    assert_eq!(
        jni_verdicts(s),
        (Some(ErrorCode::StoreClosed), Some(ErrorCode::InvalidHandle))
    );
    assert_eq!(
        jni_verdicts(it),
        (
            Some(ErrorCode::InvalidHandle),
            Some(ErrorCode::IteratorClosed)
        )
    );
}

#[test]
fn paths_and_strings_are_checked_before_opening() {
    let rocks = options(&[(ENGINE, 0)]);
    for args in [&rocks, &memory()] {
        let e = ops::open(Some(""), args).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
        assert!(e.to_string().contains("path is empty"), "{e}");
    }
    assert_eq!(
        ops::open(None, &rocks).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        ops::open(Some("a\0b"), &rocks).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    // Java's modified UTF-8: an unpaired surrogate (U+D800) is refused, not replaced.
    let e = super::convert::decode_java(b"dir\xED\xA0\x80", "path").unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    // A surrogate pair (U+1F600) and an embedded NUL (0xC0 0x80) decode.
    assert_eq!(
        super::convert::decode_java(b"\xED\xA0\xBD\xED\xB8\x80", "path").unwrap(),
        "\u{1F600}"
    );
    assert_eq!(
        super::convert::decode_java(b"a\xC0\x80b", "path").unwrap(),
        "a\0b"
    );
}

#[test]
fn packed_open_options_are_decoded_and_checked() {
    let args = options(&[
        (ENGINE, 0),
        (FORMAT, 2),
        (BLOCK_CACHE, 5 << 20),
        (STATISTICS, 1),
    ]);
    assert_eq!(args.window.store.engine, crate::EngineKind::RocksDb);
    assert_eq!(args.window.store.value_format, crate::ValueFormat::Headers);
    assert_eq!(args.window.store.rocksdb.block_cache_bytes, 5 << 20);
    assert!(args.window.store.rocksdb.statistics && args.window.store.rocksdb.bloom_filter);
    assert_eq!(args.window.segment_interval, None, "0 is Kafka's default");
    let bad: [&[jlong]; 5] = [
        &[1; OpenArgs::LEN - 1],
        &[1; OpenArgs::LEN + 1],
        &packed(&[(ENGINE, 2)]),
        &packed(&[(FORMAT, 3)]),
        &packed(&[(BLOCK_CACHE, -1)]),
    ];
    for v in bad {
        let e = OpenArgs::decode(v).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{v:?}: {e}");
    }
}

#[test]
fn commit_offsets_arrays_are_checked_and_removals_kept() {
    let h = ops::open(None, &memory()).unwrap();
    let t = topics(&["a", "b"]);
    commit(h, &t, &[0, 1], &[7, 9], Some(b"m")).unwrap();
    assert_eq!(committed_offset(h, "a", 0).unwrap(), 7);
    commit(h, &t[..1], &[0], &[NO_OFFSET], None).unwrap();
    assert_eq!(committed_offset(h, "a", 0).unwrap(), NO_OFFSET);
    assert_eq!(committed_offset(h, "b", 1).unwrap(), 9);
    assert_eq!(
        kv::committed_metadata(h).unwrap().as_deref(),
        Some(&b"m"[..])
    );
    for (partitions, offsets) in [(&[0][..], &[1, 2][..]), (&[0, 1], &[1])] {
        let e = commit(h, &t, partitions, offsets, None).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    }
    let e = ops::restore_batch(h, &[], &t, &[0], &[1], None).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    kv::close(h).unwrap();
}

#[test]
fn next_keeps_entries_before_a_short_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kafka");
    crate::bridge::tests::kafka_store_with_a_short_value(&path);
    let args = options(&[(ENGINE, 0), (FORMAT, 0)]);
    let s = ops::open(path.to_str(), &args).unwrap();
    let it = ops::scan(s, None, None, false, false, false).unwrap();
    let first = kv::next(it, 100, 1 << 20).unwrap().unwrap();
    let keys: Vec<Vec<u8>> = super::codec::decode_entries(&first)
        .unwrap()
        .into_iter()
        .map(|(k, _)| k.to_vec())
        .collect();
    assert_eq!(keys, [b"a", b"b"]);
    let e = kv::next(it, 100, 1 << 20).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    let rest = kv::next(it, 100, 1 << 20).unwrap().unwrap();
    assert_eq!(super::codec::decode_entries(&rest).unwrap().len(), 2);
    assert_eq!(kv::next(it, 100, 1 << 20).unwrap(), None);
    close_iterator(it).unwrap();
    kv::close(s).unwrap();
}

#[test]
fn rocksdb_tuning_and_properties_cross_the_surface() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tuned");
    let tuned = [
        (ENGINE, 0),
        (FORMAT, 0),
        (BLOCK_CACHE, 5 << 20),
        (WRITE_BUFFERS, 2),
        (BLOOM, 0),
        (STATISTICS, 1),
    ];
    let s = ops::open(path.to_str(), &options(&tuned)).unwrap();
    assert_eq!(
        property(s, "rocksdb.block-cache-capacity").unwrap(),
        5 << 20
    );
    ops::put(s, b"k", Some(b"12345678v")).unwrap();
    commit(s, &[], &[], &[], None).unwrap();
    // The entry plus kstate's commit record(s) in its meta family.
    assert!(property(s, "rocksdb.num-entries-active-mem-table").unwrap() >= 2);
    assert!(property(s, "rocksdb.bytes.written").unwrap() > 0);
    assert_eq!(property(s, "rocksdb.nope").unwrap(), -1);
    kv::close(s).unwrap();
    assert_eq!(
        property(s, "rocksdb.bytes.written").unwrap_err().code(),
        ErrorCode::StoreClosed
    );
    // A shared budget: its capacity is what every store of it reports.
    let with = |more: &[(usize, jlong)]| [&tuned[..], more].concat();
    let budget = with(&[(BOUNDED, (10 << 20) + 8192), (MEMTABLE, 2 << 20)]);
    let a = ops::open(dir.path().join("a").to_str(), &options(&budget)).unwrap();
    let b = ops::open(dir.path().join("b").to_str(), &options(&budget)).unwrap();
    for h in [a, b] {
        assert_eq!(
            property(h, "rocksdb.block-cache-capacity").unwrap(),
            (10 << 20) + 8192
        );
    }
    kv::close(a).unwrap();
    kv::close(b).unwrap();
    for bad in [
        [&budget[..], &[(MEMTABLE, 0)]].concat(),
        [&budget[..], &[(MEMTABLE, -1)]].concat(),
        with(&[(WRITE_BUFFERS, -1)]),
        with(&[(WRITE_BUFFERS, 1 << 40)]),
    ] {
        let e = OpenArgs::decode(&packed(&bad)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    }
    // The memory engine has no RocksDB properties.
    let m = ops::open(None, &memory()).unwrap();
    assert_eq!(property(m, "rocksdb.estimate-num-keys").unwrap(), -1);
    kv::close(m).unwrap();
}

/// Entries as the JNI batches carry them: key and raw value.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// The entries of one packed batch, owned.
fn decoded(packed: &[u8]) -> Entries {
    let entries = super::codec::decode_entries(packed).unwrap();
    entries
        .into_iter()
        .map(|(k, v)| (k.to_vec(), v.unwrap().to_vec()))
        .collect()
}

fn drain(next: impl Fn() -> Result<Option<Vec<u8>>>) -> Entries {
    let mut out = Vec::new();
    while let Some(packed) = next().unwrap() {
        out.extend(decoded(&packed));
    }
    out
}

/// A `*Query` answer: the iterator's handle (0: released, the batch was all) and the
/// entries of its first batch.
fn answer(answer: Result<Option<Vec<u8>>>) -> (jlong, Entries) {
    let packed = answer.unwrap().unwrap();
    let (handle, batch) = packed.split_at(8);
    (
        jlong::from_be_bytes(handle.try_into().unwrap()),
        decoded(batch),
    )
}

#[test]
fn window_and_session_handles_work_and_refuse_other_kinds() {
    let segmented = options(&[
        (FORMAT, 0),
        (RETENTION, 10_000),
        (WINDOW_SIZE, 100),
        (INTERVAL, 1_000),
    ]);
    let w = seg::window_open(None, &segmented).unwrap();
    let s = seg::session_open(None, &segmented).unwrap();
    let v = crate::format::value::encode(b"v", 5);
    seg::window_put(w, b"a", Some(&v), 0).unwrap();
    seg::window_put(w, b"a", Some(&v), 2_000).unwrap();
    seg::session_put(s, b"a", 10, 20, Some(b"agg")).unwrap();
    assert_eq!(
        seg::window_fetch(w, b"a", 0, false).unwrap(),
        Some(v.clone())
    );
    assert_eq!(seg::window_fetch(w, b"a", 0, true).unwrap(), None);
    assert_eq!(
        seg::session_fetch(s, b"a", 10, 20, false)
            .unwrap()
            .as_deref(),
        Some(&b"agg"[..])
    );
    window::commit(w, &topics(&["t"]), &[0], &[4], None).unwrap();
    assert_eq!(window::committed_offset(w, "t", 0).unwrap(), 4);
    assert_eq!(window::stream_time(w, true).unwrap(), 2_000);
    assert_eq!(
        session::stream_time(s, true).unwrap(),
        -1,
        "nothing committed"
    );
    // A first batch of 1 window leaves the iterator registered for the next one.
    let (it, mut got) = answer(window::query(
        w, KEY_RANGE, None, None, 0, 5_000, true, true, 1, 1,
    ));
    assert_ne!(it, 0, "a window is left");
    got.extend(drain(|| window::next(it, 1, 1)));
    let starts = |got: &[(Vec<u8>, Vec<u8>)]| -> Vec<i64> {
        got.iter()
            .map(|(k, _)| crate::format::segmented::parse_window_key(k).unwrap().1)
            .collect()
    };
    assert_eq!(starts(&got), [2_000, 0], "backward, committed");
    window::close_iterator(it).unwrap();
    // A first batch that holds the whole answer releases the iterator at once.
    let (none, got) = answer(window::query(
        w,
        KEY_RANGE,
        None,
        None,
        0,
        5_000,
        true,
        true,
        16,
        1 << 20,
    ));
    assert_eq!((none, starts(&got)), (0, vec![2_000, 0]));
    // A batch that stops at its limit does not know whether it ended: 1 of 1 session.
    let (it, got) = answer(session::query(
        s,
        KEY,
        Some(b"a"),
        None,
        0,
        i64::MAX,
        false,
        false,
        1,
        1 << 20,
    ));
    assert_eq!(got.len(), 1);
    assert!(drain(|| session::next(it, 10, 1 << 20)).is_empty());
    // Kinds are checked: a window store is no session store, nor a key-value store,
    // and a window iterator is no session iterator.
    let code = |e: Error| e.code();
    let invalid = ErrorCode::InvalidHandle;
    assert_eq!(
        code(seg::session_put(w, b"k", 0, 0, None).unwrap_err()),
        invalid
    );
    assert_eq!(
        code(seg::window_fetch(s, b"k", 0, false).unwrap_err()),
        invalid
    );
    assert_eq!(code(ops::get(w, b"k", false).unwrap_err()), invalid);
    assert_eq!(code(window::next(it, 1, 1).unwrap_err()), invalid);
    for (kind, key) in [(9, None), (KEY, None)] {
        let e = window::query(w, kind, key, None, 0, 0, false, false, 16, 1 << 20).unwrap_err();
        assert_eq!(code(e), ErrorCode::InvalidArgument);
    }
    session::close(s).unwrap();
    assert_eq!(
        code(session::next(it, 1, 1).unwrap_err()),
        ErrorCode::IteratorClosed
    );
    assert_eq!(code(session::close(s).unwrap_err()), ErrorCode::StoreClosed);
    session::close_iterator(it).unwrap();
    window::close(w).unwrap();
    assert_eq!(
        code(window::rollback(w).unwrap_err()),
        ErrorCode::StoreClosed
    );
}

/// Every native taking a versioned store handle, called with valid other arguments.
const VERSIONED_OPS: [Op; 16] = [
    ("versionedPut", |h| {
        ver::versioned_put(h, b"k", Some(b"v"), 1).map(drop)
    }),
    ("versionedDelete", |h| {
        ver::versioned_delete(h, b"k", 1).map(drop)
    }),
    ("versionedGet latest", |h| {
        ver::versioned_get(h, b"k", true, 0, false).map(drop)
    }),
    ("versionedGet as of, committed", |h| {
        ver::versioned_get(h, b"k", false, 5, true).map(drop)
    }),
    ("versionedQuery", |h| {
        ver::versioned_query(h, b"k", 0, 9, true, false).map(drop)
    }),
    ("versionedRestoreBatch", |h| {
        ver::versioned_restore_batch(h, &[], &[], &[], &[], &[], None)
    }),
    ("versionedStreamTime", |h| {
        ver::versioned_stream_time(h, false).map(drop)
    }),
    ("versionedCommit", |h| {
        versioned::commit(h, &topics(&["t"]), &[0], &[1], None)
    }),
    ("versionedCommittedOffset", |h| {
        versioned::committed_offset(h, "t", 0).map(drop)
    }),
    ("versionedCommittedMetadata", |h| {
        versioned::committed_metadata(h).map(drop)
    }),
    ("versionedRollback", versioned::rollback),
    ("versionedFlush", |h| versioned::flush(h, None)),
    ("versionedApproximateNumUncommittedBytes", |h| {
        versioned::uncommitted_bytes(h).map(drop)
    }),
    ("versionedProperty", |h| {
        versioned::property(h, "kstate.dropped-records").map(drop)
    }),
    ("versionedStreamTime committed", |h| {
        ver::versioned_stream_time(h, true).map(drop)
    }),
    ("versionedClose", versioned::close),
];

/// Every native taking a versioned iterator handle.
const VERSIONED_ITER_OPS: [Op; 2] = [
    ("versionedNext", |h| versioned::next(h, 10, 1000).map(drop)),
    ("versionedCloseIterator", versioned::close_iterator),
];

fn versioned_options() -> OpenArgs {
    options(&[(RETENTION, 100), (INTERVAL, 10)])
}

/// A versioned store with one version and an open multi-version iterator over it.
fn versioned_store_and_iter() -> (jlong, jlong) {
    let s = ver::versioned_open(None, &versioned_options()).unwrap();
    assert_eq!(ver::versioned_put(s, b"k", Some(b"v"), 1).unwrap(), -1);
    let it = ver::versioned_query(s, b"k", jlong::MIN, jlong::MAX, true, false).unwrap();
    (s, it)
}

#[test]
fn versioned_handles_are_checked_like_every_kind() {
    for h in [0, 1, -1, 0x4B53_0000_0000_0001 + 1_000_000, jlong::MAX] {
        expect_all(
            &VERSIONED_OPS,
            h,
            ErrorCode::InvalidHandle,
            "a forged handle",
        );
        expect_all(
            &VERSIONED_ITER_OPS,
            h,
            ErrorCode::InvalidHandle,
            "a forged handle",
        );
    }
    let (s, it) = store_and_iter();
    let (vs, vit) = versioned_store_and_iter();
    // Each kind refuses the other's handles, store and iterator alike.
    for (h, case) in [
        (s, "a key-value store"),
        (it, "a key-value iterator"),
        (vit, "a versioned iterator"),
    ] {
        expect_all(&VERSIONED_OPS, h, ErrorCode::InvalidHandle, case);
    }
    for (h, case) in [
        (s, "a key-value store"),
        (it, "a key-value iterator"),
        (vs, "a versioned store"),
    ] {
        expect_all(&VERSIONED_ITER_OPS, h, ErrorCode::InvalidHandle, case);
    }
    for h in [vs, vit] {
        expect_all(
            &STORE_OPS,
            h,
            ErrorCode::InvalidHandle,
            "a versioned handle",
        );
        expect_all(
            &[STORE_CLOSE],
            h,
            ErrorCode::InvalidHandle,
            "a versioned handle",
        );
        expect_all(&ITER_OPS, h, ErrorCode::InvalidHandle, "a versioned handle");
    }
    // Nothing was written, read or closed by the refused calls.
    assert_eq!(
        ops::get(s, b"a", false).unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(ver::versioned_stream_time(vs, false).unwrap(), 1);
    let batch = versioned::next(vit, 10, 1000).unwrap().unwrap();
    assert_eq!(codec::decode_entries(&batch).unwrap().len(), 1);
    assert_eq!(versioned::next(vit, 10, 1000).unwrap(), None);
    close_iterator(it).unwrap();
    kv::close(s).unwrap();
    // Closed handles: closed errors. A versioned iterator holds the versions its query
    // found (materialised when it ran), so closing the store does not close it; it is
    // released once, by its own close (Java closes it with the store).
    let vit2 = ver::versioned_query(vs, b"k", 0, 9, false, true).unwrap();
    versioned::close_iterator(vit).unwrap();
    expect_all(
        &VERSIONED_ITER_OPS,
        vit,
        ErrorCode::IteratorClosed,
        "a closed iterator",
    );
    versioned::close(vs).unwrap();
    expect_all(&VERSIONED_OPS, vs, ErrorCode::StoreClosed, "a closed store");
    assert_eq!(
        versioned::next(vit2, 1, 1).unwrap(),
        None,
        "nothing committed"
    );
    versioned::close_iterator(vit2).unwrap();
    expect_all(
        &VERSIONED_ITER_OPS,
        vit2,
        ErrorCode::IteratorClosed,
        "a closed iterator",
    );
}

/// A version as the natives encode it: `(value, timestamp, validTo or None)`.
type Version = (Vec<u8>, i64, Option<i64>);

fn version(bytes: &[u8]) -> Version {
    let long = |at: usize| i64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
    let valid_to = (long(8) != NO_VALID_TO).then_some(long(8));
    (bytes[16..].to_vec(), long(0), valid_to)
}

fn v(value: &[u8], timestamp: i64, valid_to: Option<i64>) -> Option<Version> {
    Some((value.to_vec(), timestamp, valid_to))
}

fn versions(h: jlong, from: jlong, to: jlong, ascending: bool, per_batch: jint) -> Vec<Version> {
    let it = ver::versioned_query(h, b"k", from, to, ascending, false).unwrap();
    let mut out = Vec::new();
    while let Some(batch) = versioned::next(it, per_batch, 1 << 20).unwrap() {
        let entries = codec::decode_entries(&batch).unwrap();
        assert!(entries.len() <= per_batch as usize);
        for (times, value) in entries {
            out.push(version(&[times, value.unwrap()].concat()));
        }
    }
    versioned::close_iterator(it).unwrap();
    out
}

#[test]
fn versioned_natives_put_read_delete_query_and_restore() {
    for engine in [1, 0] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("versioned");
        // A tiny buffer: the transaction spills to disk on RocksDB.
        let args = options(&[
            (ENGINE, engine),
            (MAX_UNCOMMITTED, 64),
            (RETENTION, 100),
            (INTERVAL, 10),
        ]);
        let s = ver::versioned_open((engine == 0).then(|| path.to_str().unwrap()), &args).unwrap();
        let get = |latest: bool, as_of: jlong, committed: bool| {
            ver::versioned_get(s, b"k", latest, as_of, committed)
                .unwrap()
                .map(|b| version(&b))
        };
        assert_eq!(ver::versioned_stream_time(s, false).unwrap(), -1);
        assert_eq!(ver::versioned_put(s, b"k", Some(b"a"), 10).unwrap(), -1);
        assert_eq!(ver::versioned_put(s, b"k", Some(b"c"), 30).unwrap(), -1);
        // Out of order: valid until the next version.
        assert_eq!(ver::versioned_put(s, b"k", Some(b"b"), 20).unwrap(), 30);
        assert_eq!(get(true, 0, false), v(b"c", 30, None));
        assert_eq!(get(false, 25, false), v(b"b", 20, Some(30)));
        assert_eq!(get(false, 9, false), None);
        assert_eq!(get(true, 0, true), None, "nothing committed");
        // Every version, both orders, one per batch and all in one.
        let all = vec![
            v(b"a", 10, Some(20)).unwrap(),
            v(b"b", 20, Some(30)).unwrap(),
            v(b"c", 30, None).unwrap(),
        ];
        assert_eq!(versions(s, jlong::MIN, jlong::MAX, true, 1), all);
        let newest_first: Vec<Version> = all.iter().rev().cloned().collect();
        assert_eq!(
            versions(s, jlong::MIN, jlong::MAX, false, 100),
            newest_first
        );
        assert_eq!(versions(s, 21, 29, true, 100), all[1..2]);
        let e = ver::versioned_query(s, b"k", 5, 4, true, false).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
        // A delete returns the version it replaced, with its validTo when it was history.
        let deleted = ver::versioned_delete(s, b"k", 25)
            .unwrap()
            .map(|b| version(&b));
        assert_eq!(deleted, v(b"b", 20, Some(30)));
        assert_eq!(get(false, 26, false), None);
        versioned::commit(s, &topics(&["t"]), &[0], &[7], None).unwrap();
        assert_eq!(get(true, 0, true), v(b"c", 30, None));
        assert_eq!(ver::versioned_stream_time(s, true).unwrap(), 30);
        // Older than the history retention (stream time 30 + 200 - 100): not put.
        ver::versioned_put(s, b"k", Some(b"d"), 230).unwrap();
        assert_eq!(
            ver::versioned_put(s, b"k", Some(b"x"), 129).unwrap(),
            jlong::MIN
        );
        assert_eq!(versioned::property(s, "kstate.dropped-records").unwrap(), 1);
        // A delete as old is dropped too, and says so with an empty array (never a version,
        // which has 16 bytes of times); a delete that is not dropped and finds nothing: null.
        assert_eq!(
            ver::versioned_delete(s, b"k", 129).unwrap(),
            Some(Vec::new())
        );
        assert_eq!(versioned::property(s, "kstate.dropped-records").unwrap(), 2);
        assert_eq!(ver::versioned_delete(s, b"none", 130).unwrap(), None);
        let e = ver::versioned_restore_batch(s, &[], &[], &[], &[], &[], None).unwrap_err();
        assert_eq!(
            e.code(),
            ErrorCode::InvalidArgument,
            "uncommitted writes: {e}"
        );
        versioned::rollback(s).unwrap();
        // A restore batch: keys and values packed, timestamps beside them, one each.
        let mut batch = Vec::new();
        codec::encode_entry(&mut batch, b"k", Some(b"e")).unwrap();
        codec::encode_entry(&mut batch, b"k", None).unwrap();
        let e = ver::versioned_restore_batch(s, &batch, &[40], &[], &[], &[], None).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
        ver::versioned_restore_batch(
            s,
            &batch,
            &[40, 50],
            &topics(&["t"]),
            &[0],
            &[9],
            Some(b"m"),
        )
        .unwrap();
        assert_eq!(versioned::committed_offset(s, "t", 0).unwrap(), 9);
        assert_eq!(
            versioned::committed_metadata(s).unwrap().as_deref(),
            Some(&b"m"[..])
        );
        assert_eq!(
            get(true, 0, true),
            None,
            "the tombstone at 50 is the latest"
        );
        assert_eq!(get(false, 45, true), v(b"e", 40, Some(50)));
        assert_eq!(ver::versioned_stream_time(s, true).unwrap(), 50);
        versioned::close(s).unwrap();
        if engine == 0 {
            // Reopened: the committed versions and stream time are back.
            let s = ver::versioned_open(path.to_str(), &args).unwrap();
            let got = ver::versioned_get(s, b"k", false, 45, true).unwrap();
            assert_eq!(got.map(|b| version(&b)), v(b"e", 40, Some(50)));
            assert_eq!(ver::versioned_stream_time(s, true).unwrap(), 50);
            versioned::close(s).unwrap();
        }
    }
    // Kafka's checks of the options.
    for bad in [
        [(RETENTION, -1), (INTERVAL, 0)],
        [(RETENTION, 100), (INTERVAL, -5)],
    ] {
        let e = ver::versioned_open(None, &options(&bad)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    }
    let e = ver::versioned_open(None, &options(&[(ENGINE, 0)])).unwrap_err();
    assert_eq!(
        e.code(),
        ErrorCode::InvalidArgument,
        "RocksDB needs a path: {e}"
    );
}

// ----- the packed batch layout (`codec`) -----

#[test]
fn round_trip_with_nulls_and_empties() {
    let mut buf = Vec::new();
    codec::encode_entry(&mut buf, b"a", Some(b"1")).unwrap();
    codec::encode_entry(&mut buf, b"", None).unwrap();
    codec::encode_entry(&mut buf, b"c", Some(b"")).unwrap();
    let entries = codec::decode_entries(&buf).unwrap();
    assert_eq!(
        entries,
        vec![
            (&b"a"[..], Some(&b"1"[..])),
            (&b""[..], None),
            (&b"c"[..], Some(&b""[..]))
        ]
    );
    assert!(codec::decode_entries(&[]).unwrap().is_empty());
}

#[test]
fn malformed_batches_are_rejected() {
    let mut buf = Vec::new();
    codec::encode_entry(&mut buf, b"key", Some(b"value")).unwrap();
    for cut in 1..buf.len() {
        assert!(codec::decode_entries(&buf[..cut]).is_err(), "cut at {cut}");
    }
    assert!(codec::decode_entries(&(-1i32).to_be_bytes()).is_err());
    assert!(codec::decode_entries(&(-7i32).to_be_bytes()).is_err());
    assert!(codec::decode_entries(&i32::MAX.to_be_bytes()).is_err());
}
