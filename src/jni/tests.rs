//! Tests of the JNI surface without a JVM: the natives' bodies ([`super::ops`]) called with
//! the `long` handles Java would pass, misuse included, checked against the C surface.

use jni::sys::jlong;

use super::ops::{self, OpenArgs};
use crate::capi::{self, kstate_error_code, kstate_error_free, kstate_error_t};
use crate::{ErrorCode, KvStore, Result, TopicPartition};

const MEMORY: OpenArgs = OpenArgs {
    engine: 1,
    value_format: 1,
    max_uncommitted_bytes: 0,
    sync_on_commit: false,
    block_cache_bytes: 0,
    write_buffer_bytes: 0,
    max_write_buffers: 0,
    bloom_filter: true,
    statistics: false,
    bounded_memory_bytes: 0,
    bounded_memtable_bytes: 0,
    adopt_left_open: false,
};

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
    ("commit", |h| {
        ops::commit::<KvStore>(h, &[(TopicPartition::new("t", 0), Some(1))], None)
    }),
    ("committedOffset", |h| {
        ops::committed_offset::<KvStore>(h, "t".into(), 0).map(drop)
    }),
    ("committedMetadata", |h| {
        ops::committed_metadata::<KvStore>(h).map(drop)
    }),
    ("rollback", ops::rollback::<KvStore>),
    ("approximateNumEntries", |h| {
        ops::approximate_num_entries(h, false).map(drop)
    }),
    ("approximateNumUncommittedBytes", |h| {
        ops::uncommitted_bytes::<KvStore>(h).map(drop)
    }),
    ("flush", |h| ops::flush::<KvStore>(h, None)),
];

/// `close` last: it retires the handle.
const STORE_CLOSE: Op = ("close", ops::close);

/// Every native taking an iterator handle.
const ITER_OPS: [Op; 2] = [
    ("next", |h| ops::next(h, 10, 1000).map(drop)),
    ("closeIterator", ops::close_iterator),
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
    let s = ops::open(None, &MEMORY).unwrap();
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
    assert!(ops::next(it, 10, 1000).unwrap().is_some());
    assert_eq!(ops::next(it, 10, 1000).unwrap(), None);
    // Closed handles of the other kind stay the wrong kind.
    ops::close_iterator(it).unwrap();
    expect_all(
        &STORE_OPS,
        it,
        ErrorCode::InvalidHandle,
        "a closed iterator handle",
    );
    ops::close(s).unwrap();
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
    ops::close_iterator(it).unwrap();
    expect_all(
        &ITER_OPS,
        it,
        ErrorCode::IteratorClosed,
        "a closed iterator",
    );
    ops::close(s).unwrap();
    expect_all(&STORE_OPS, s, ErrorCode::StoreClosed, "a closed store");
    expect_all(&[STORE_CLOSE], s, ErrorCode::StoreClosed, "a closed store");
    // An iterator whose store was closed is closed; its handle is still released once.
    assert_eq!(code_of(ITER_OPS[0].1(it2)), Some(ErrorCode::IteratorClosed));
    ops::close_iterator(it2).unwrap();
    assert_eq!(
        code_of(ops::close_iterator(it2)),
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
    (
        code_of(ops::rollback::<KvStore>(h)),
        code_of(ops::next(h, 1, 1).map(drop)),
    )
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
    assert_eq!(ops::rollback::<KvStore>(cs).map_err(|e| e.code()), Ok(()));
    // Same verdicts for every kind of misuse, handle by handle.
    let mut cases = vec![0, 1, -1, 0x4B53_0000_0000_0001 + 1_000_000, s, it, cs];
    for h in cases.clone() {
        assert_eq!(c_verdicts(h), jni_verdicts(h), "live handle {h:#x}");
    }
    ops::close_iterator(it).unwrap();
    ops::close(s).unwrap();
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
    let rocks = OpenArgs {
        engine: 0,
        ..MEMORY
    };
    for args in [rocks, MEMORY] {
        let e = ops::open(Some(""), &args).unwrap_err();
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
    let e = super::natives::decode_java(b"dir\xED\xA0\x80", "path").unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    // A surrogate pair (U+1F600) and an embedded NUL (0xC0 0x80) decode.
    assert_eq!(
        super::natives::decode_java(b"\xED\xA0\xBD\xED\xB8\x80", "path").unwrap(),
        "\u{1F600}"
    );
    assert_eq!(
        super::natives::decode_java(b"a\xC0\x80b", "path").unwrap(),
        "a\0b"
    );
}

#[test]
fn next_keeps_entries_before_a_short_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kafka");
    crate::bridge::tests::kafka_store_with_a_short_value(&path);
    let args = OpenArgs {
        engine: 0,
        value_format: 0,
        ..MEMORY
    };
    let s = ops::open(path.to_str(), &args).unwrap();
    let it = ops::scan(s, None, None, false, false, false).unwrap();
    let first = ops::next(it, 100, 1 << 20).unwrap().unwrap();
    let keys: Vec<Vec<u8>> = super::codec::decode_entries(&first)
        .unwrap()
        .into_iter()
        .map(|(k, _)| k.to_vec())
        .collect();
    assert_eq!(keys, [b"a", b"b"]);
    let e = ops::next(it, 100, 1 << 20).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidValue);
    let rest = ops::next(it, 100, 1 << 20).unwrap().unwrap();
    assert_eq!(super::codec::decode_entries(&rest).unwrap().len(), 2);
    assert_eq!(ops::next(it, 100, 1 << 20).unwrap(), None);
    ops::close_iterator(it).unwrap();
    ops::close(s).unwrap();
}

#[test]
fn rocksdb_tuning_and_properties_cross_the_surface() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tuned");
    let args = OpenArgs {
        engine: 0,
        value_format: 0,
        block_cache_bytes: 5 << 20,
        max_write_buffers: 2,
        bloom_filter: false,
        statistics: true,
        ..MEMORY
    };
    let s = ops::open(path.to_str(), &args).unwrap();
    assert_eq!(
        ops::property::<KvStore>(s, "rocksdb.block-cache-capacity").unwrap(),
        5 << 20
    );
    ops::put(s, b"k", Some(b"12345678v")).unwrap();
    ops::commit::<KvStore>(s, &[], None).unwrap();
    // The entry plus kstate's commit record(s) in its meta family.
    assert!(ops::property::<KvStore>(s, "rocksdb.num-entries-active-mem-table").unwrap() >= 2);
    assert!(ops::property::<KvStore>(s, "rocksdb.bytes.written").unwrap() > 0);
    assert_eq!(ops::property::<KvStore>(s, "rocksdb.nope").unwrap(), -1);
    ops::close(s).unwrap();
    assert_eq!(
        ops::property::<KvStore>(s, "rocksdb.bytes.written")
            .unwrap_err()
            .code(),
        ErrorCode::StoreClosed
    );
    // A shared budget: its capacity is what every store of it reports.
    let budget = OpenArgs {
        bounded_memory_bytes: (10 << 20) + 8192,
        bounded_memtable_bytes: 2 << 20,
        ..args
    };
    let a = ops::open(dir.path().join("a").to_str(), &budget).unwrap();
    let b = ops::open(dir.path().join("b").to_str(), &budget).unwrap();
    for h in [a, b] {
        assert_eq!(
            ops::property::<KvStore>(h, "rocksdb.block-cache-capacity").unwrap(),
            (10 << 20) + 8192
        );
    }
    ops::close(a).unwrap();
    ops::close(b).unwrap();
    for bad in [
        OpenArgs {
            bounded_memtable_bytes: 0,
            ..budget
        },
        OpenArgs {
            bounded_memtable_bytes: -1,
            ..budget
        },
        OpenArgs {
            max_write_buffers: -1,
            ..args
        },
    ] {
        let e = ops::open(dir.path().join("c").to_str(), &bad).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    }
    // The memory engine has no RocksDB properties.
    let m = ops::open(None, &MEMORY).unwrap();
    assert_eq!(
        ops::property::<KvStore>(m, "rocksdb.estimate-num-keys").unwrap(),
        -1
    );
    ops::close(m).unwrap();
}
