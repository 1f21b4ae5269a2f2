//! Unit tests of the C surface, calling the extern functions directly as C would.

use std::ffi::CStr;
use std::ptr::{null, null_mut};

use super::*;
use crate::ErrorCode;

/// Code of an error, freeing it.
fn code(e: *mut kstate_error_t) -> i32 {
    // SAFETY: `e` is NULL or fresh from kstate; freed once.
    unsafe {
        let c = kstate_error_code(e);
        kstate_error_free(e);
        c
    }
}

fn memory_store() -> *mut kstate_kv_t {
    let mut opts = kstate_kv_options_t::defaults();
    opts.engine = KSTATE_ENGINE_MEMORY;
    let mut s = null_mut();
    // SAFETY: valid pointers.
    assert_eq!(code(unsafe { kstate_kv_open(null(), &opts, &mut s) }), 0);
    assert!(!s.is_null());
    s
}

#[test]
fn constants_match_the_core() {
    let pairs = [
        (KSTATE_ERR_INVALID_ARGUMENT, ErrorCode::InvalidArgument),
        (KSTATE_ERR_STORE_CLOSED, ErrorCode::StoreClosed),
        (KSTATE_ERR_NOT_A_STORE, ErrorCode::NotAStore),
        (KSTATE_ERR_UNSUPPORTED_FORMAT, ErrorCode::UnsupportedFormat),
        (KSTATE_ERR_CORRUPTION, ErrorCode::Corruption),
        (KSTATE_ERR_LOCKED, ErrorCode::Locked),
        (KSTATE_ERR_KEY_TOO_LARGE, ErrorCode::KeyTooLarge),
        (KSTATE_ERR_VALUE_TOO_LARGE, ErrorCode::ValueTooLarge),
        (KSTATE_ERR_FORMAT_MISMATCH, ErrorCode::FormatMismatch),
        (KSTATE_ERR_STORAGE, ErrorCode::Storage),
        (KSTATE_ERR_IO, ErrorCode::Io),
        (KSTATE_ERR_INTERNAL, ErrorCode::Internal),
        (KSTATE_ERR_INVALID_HANDLE, ErrorCode::InvalidHandle),
        (KSTATE_ERR_ITERATOR_CLOSED, ErrorCode::IteratorClosed),
        (KSTATE_ERR_INVALID_VALUE, ErrorCode::InvalidValue),
        (KSTATE_ERR_COMMIT_IN_DOUBT, ErrorCode::CommitInDoubt),
        (KSTATE_ERR_UNSUPPORTED, ErrorCode::Unsupported),
    ];
    assert_eq!(pairs.len(), ErrorCode::ALL.len());
    for (c, core) in pairs {
        assert_eq!(c, core.as_i32());
        // SAFETY: static string.
        let name = unsafe { CStr::from_ptr(kstate_error_code_name(c)) };
        assert_eq!(name.to_str().unwrap(), core.name());
    }
    assert_eq!(KSTATE_MAX_KEY_BYTES, crate::MAX_KEY_BYTES);
    assert_eq!(KSTATE_MAX_VALUE_BYTES, crate::MAX_VALUE_BYTES);
    let v = format!("{KSTATE_VERSION_MAJOR}.{KSTATE_VERSION_MINOR}.{KSTATE_VERSION_PATCH}");
    assert_eq!(v, env!("CARGO_PKG_VERSION"));
    // SAFETY: static string.
    let lib = unsafe { CStr::from_ptr(kstate_version()) };
    assert_eq!(lib.to_str().unwrap(), v);
    let d = kstate_kv_options_t::defaults();
    let core = crate::StoreOptions::default();
    assert_eq!(d.convert().unwrap(), core);
}

#[test]
fn panics_become_internal_errors() {
    let e = error::ffi_call(|| panic!("boom"));
    // SAFETY: fresh error.
    let msg = unsafe { CStr::from_ptr(kstate_error_message(e)) }
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(code(e), KSTATE_ERR_INTERNAL);
    assert!(msg.contains("boom"), "{msg}");
    assert_eq!(code(error::ffi_call(|| Ok(()))), KSTATE_OK);
}

#[test]
fn null_and_forged_handles_and_double_close() {
    let forged = 0x1234usize as *mut kstate_kv_t;
    assert_eq!(
        code(kstate_kv_rollback(null_mut())),
        KSTATE_ERR_INVALID_HANDLE
    );
    assert_eq!(code(kstate_kv_rollback(forged)), KSTATE_ERR_INVALID_HANDLE);
    assert_eq!(code(kstate_kv_close(null_mut())), KSTATE_ERR_INVALID_HANDLE);
    let s = memory_store();
    assert_eq!(code(kstate_kv_close(s)), KSTATE_OK);
    assert_eq!(code(kstate_kv_close(s)), KSTATE_ERR_STORE_CLOSED);
    assert_eq!(code(kstate_kv_rollback(s)), KSTATE_ERR_STORE_CLOSED);
    assert_eq!(
        code(kstate_kv_iter_close(null_mut())),
        KSTATE_ERR_INVALID_HANDLE
    );
}

#[test]
fn null_pointers_are_invalid_arguments_and_outs_are_initialised() {
    let s = memory_store();
    // SAFETY: every pointer is NULL or valid; that is what is being tested.
    unsafe {
        assert_eq!(
            code(kstate_kv_put(s, null(), 3, b"v".as_ptr(), 1, 1)),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            code(kstate_kv_put(s, b"k".as_ptr(), 1, null(), 2, 1)),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(code(kstate_kv_put(s, null(), 0, null(), 0, 7)), KSTATE_OK);
        let mut v = kstate_bytes_t {
            ptr: 0x99 as *mut u8,
            len: 42,
        };
        let mut ts = 5i64;
        let mut found = true;
        assert_eq!(
            code(kstate_kv_get(
                s,
                b"x".as_ptr(),
                1,
                &mut v,
                &mut ts,
                null_mut()
            )),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert!(v.ptr.is_null() && v.len == 0 && ts == 0);
        assert_eq!(
            code(kstate_kv_get(s, null(), 0, &mut v, &mut ts, &mut found)),
            KSTATE_OK
        );
        assert!(found && ts == 7 && v.len == 0 && !v.ptr.is_null());
        kstate_bytes_free(&mut v);
        kstate_bytes_free(&mut v);
        kstate_bytes_free(null_mut());
        let mut off = 9i64;
        assert_eq!(
            code(kstate_kv_committed_offset(
                s,
                null(),
                0,
                &mut off,
                &mut found
            )),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert!(off == 0 && !found);
        let bad = [0xffu8, 0xfe, 0];
        let o = kstate_offset_t {
            topic: bad.as_ptr().cast(),
            partition: 0,
            offset: 1,
            has_offset: true,
        };
        assert_eq!(
            code(kstate_kv_commit(s, &o, 1, null(), 0)),
            KSTATE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            code(kstate_kv_commit(s, null(), 1, null(), 0)),
            KSTATE_ERR_INVALID_ARGUMENT
        );
    }
    assert_eq!(code(kstate_kv_close(s)), KSTATE_OK);
}

#[test]
fn iterators_batch_and_close_with_their_store() {
    let s = memory_store();
    // SAFETY: valid pointers throughout.
    unsafe {
        for i in 0..10u8 {
            let k = [b'k', b'0' + i];
            assert_eq!(
                code(kstate_kv_put(s, k.as_ptr(), 2, &i, 1, i64::from(i))),
                0
            );
        }
        let mut it = null_mut();
        assert_eq!(code(kstate_kv_reverse_all(s, &mut it)), 0);
        let mut b = kstate_kv_batch_t {
            entries: null(),
            len: 0,
            owner: null_mut(),
        };
        assert_eq!(code(kstate_kv_iter_next_batch(it, 4, 0, &mut b)), 0);
        assert_eq!(b.len, 4);
        let first = *b.entries;
        assert_eq!(std::slice::from_raw_parts(first.key, first.key_len), b"k9");
        assert_eq!(first.timestamp, 9);
        assert_eq!(first.raw_value_len, 9);
        kstate_kv_batch_free(&mut b);
        assert!(b.owner.is_null());
        assert_eq!(code(kstate_kv_close(s)), 0);
        assert_eq!(
            code(kstate_kv_iter_next_batch(it, 4, 0, &mut b)),
            KSTATE_ERR_ITERATOR_CLOSED
        );
        assert_eq!(code(kstate_kv_iter_close(it)), 0);
        assert_eq!(code(kstate_kv_iter_close(it)), KSTATE_ERR_ITERATOR_CLOSED);
    }
}

#[test]
fn handles_of_one_kind_are_invalid_as_the_other() {
    let s = memory_store();
    let mut it = null_mut();
    // SAFETY: valid pointers.
    assert_eq!(code(unsafe { kstate_kv_all(s, &mut it) }), 0);
    let mut b = kstate_kv_batch_t {
        entries: null(),
        len: 0,
        owner: null_mut(),
    };
    assert_eq!(
        code(kstate_kv_rollback(it.cast())),
        KSTATE_ERR_INVALID_HANDLE
    );
    assert_eq!(code(kstate_kv_close(it.cast())), KSTATE_ERR_INVALID_HANDLE);
    // SAFETY: valid out-pointer; the handle is the thing under test.
    unsafe {
        assert_eq!(
            code(kstate_kv_iter_next_batch(s.cast(), 1, 0, &mut b)),
            KSTATE_ERR_INVALID_HANDLE
        );
    }
    assert_eq!(
        code(kstate_kv_iter_close(s.cast())),
        KSTATE_ERR_INVALID_HANDLE
    );
    assert_eq!(code(kstate_kv_iter_close(it)), 0);
    assert_eq!(code(kstate_kv_close(s)), 0);
}

/// Calls one store function with `s` as its store and valid other arguments; the code.
type StoreCall = (&'static str, fn(*mut kstate_kv_t) -> i32);

fn empty_batch() -> kstate_kv_batch_t {
    kstate_kv_batch_t {
        entries: null(),
        len: 0,
        owner: null_mut(),
    }
}

/// Every function taking a store handle (`kstate_kv_close` separately: it retires it).
// In every call below, all pointers are valid (or NULL where allowed), returned buffers and
// iterators are released, and the store handle is what is under test.
const STORE_CALLS: [StoreCall; 25] = [
    ("put", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        code(unsafe { kstate_kv_put(s, b"k".as_ptr(), 1, b"v".as_ptr(), 1, 1) })
    }),
    ("put_if_absent", |s| {
        let (mut v, mut ts, mut f) = (kstate_bytes_t::NOTHING, 0, false);
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        let c = code(unsafe {
            kstate_kv_put_if_absent(
                s,
                b"k".as_ptr(),
                1,
                b"v".as_ptr(),
                1,
                1,
                &mut v,
                &mut ts,
                &mut f,
            )
        });
        // SAFETY: `v` is as the call left it, released once.
        unsafe { kstate_bytes_free(&mut v) };
        c
    }),
    ("get", |s| {
        let (mut v, mut ts, mut f) = (kstate_bytes_t::NOTHING, 0, false);
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        let c = code(unsafe { kstate_kv_get(s, b"k".as_ptr(), 1, &mut v, &mut ts, &mut f) });
        // SAFETY: `v` is as the call left it, released once.
        unsafe { kstate_bytes_free(&mut v) };
        c
    }),
    ("get_committed", |s| {
        let (mut v, mut ts, mut f) = (kstate_bytes_t::NOTHING, 0, false);
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        let c =
            code(unsafe { kstate_kv_get_committed(s, b"k".as_ptr(), 1, &mut v, &mut ts, &mut f) });
        // SAFETY: `v` is as the call left it, released once.
        unsafe { kstate_bytes_free(&mut v) };
        c
    }),
    ("delete", |s| {
        let (mut v, mut ts, mut f) = (kstate_bytes_t::NOTHING, 0, false);
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        let c = code(unsafe { kstate_kv_delete(s, b"k".as_ptr(), 1, &mut v, &mut ts, &mut f) });
        // SAFETY: `v` is as the call left it, released once.
        unsafe { kstate_bytes_free(&mut v) };
        c
    }),
    ("put_all", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        code(unsafe { kstate_kv_put_all(s, null(), 0) })
    }),
    ("put_raw", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        code(unsafe { kstate_kv_put_raw(s, b"k".as_ptr(), 1, [0u8; 9].as_ptr(), 9) })
    }),
    ("put_if_absent_raw", |s| {
        let (mut v, mut f) = (kstate_bytes_t::NOTHING, false);
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        let c = code(unsafe {
            kstate_kv_put_if_absent_raw(s, b"k".as_ptr(), 1, [0u8; 9].as_ptr(), 9, &mut v, &mut f)
        });
        // SAFETY: `v` is as the call left it, released once.
        unsafe { kstate_bytes_free(&mut v) };
        c
    }),
    ("get_raw", |s| {
        let (mut v, mut f) = (kstate_bytes_t::NOTHING, false);
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        let c = code(unsafe {
            kstate_kv_get_raw(s, KSTATE_READ_COMMITTED, b"k".as_ptr(), 1, &mut v, &mut f)
        });
        // SAFETY: `v` is as the call left it, released once.
        unsafe { kstate_bytes_free(&mut v) };
        c
    }),
    ("delete_raw", |s| {
        let (mut v, mut f) = (kstate_bytes_t::NOTHING, false);
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        let c = code(unsafe { kstate_kv_delete_raw(s, b"k".as_ptr(), 1, &mut v, &mut f) });
        // SAFETY: `v` is as the call left it, released once.
        unsafe { kstate_bytes_free(&mut v) };
        c
    }),
    ("put_all_raw", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        code(unsafe { kstate_kv_put_all_raw(s, null(), 0) })
    }),
    ("commit", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        code(unsafe { kstate_kv_commit(s, null(), 0, null(), 0) })
    }),
    ("committed_offset", |s| {
        let (mut o, mut f) = (0, false);
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        code(unsafe { kstate_kv_committed_offset(s, c"t".as_ptr(), 0, &mut o, &mut f) })
    }),
    ("committed_metadata", |s| {
        let (mut v, mut f) = (kstate_bytes_t::NOTHING, false);
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        let c = code(unsafe { kstate_kv_committed_metadata(s, &mut v, &mut f) });
        // SAFETY: `v` is as the call left it, released once.
        unsafe { kstate_bytes_free(&mut v) };
        c
    }),
    ("rollback", |s| code(kstate_kv_rollback(s))),
    ("approximate_num_entries", |s| {
        let mut n = 0;
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        code(unsafe { kstate_kv_approximate_num_entries(s, &mut n) })
    }),
    ("approximate_num_uncommitted_bytes", |s| {
        let mut n = 0;
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        code(unsafe { kstate_kv_approximate_num_uncommitted_bytes(s, &mut n) })
    }),
    ("range", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        with_iter(|out| unsafe { kstate_kv_range(s, null(), 0, null(), 0, out) })
    }),
    ("reverse_range", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        with_iter(|out| unsafe { kstate_kv_reverse_range(s, null(), 0, null(), 0, out) })
    }),
    ("all", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        with_iter(|out| unsafe { kstate_kv_all(s, out) })
    }),
    ("reverse_all", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        with_iter(|out| unsafe { kstate_kv_reverse_all(s, out) })
    }),
    ("prefix_scan", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        with_iter(|out| unsafe { kstate_kv_prefix_scan(s, b"k".as_ptr(), 1, out) })
    }),
    ("scan uncommitted", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        with_iter(|out| unsafe {
            kstate_kv_scan(s, KSTATE_READ_UNCOMMITTED, null(), 0, null(), 0, false, out)
        })
    }),
    ("scan committed", |s| {
        // SAFETY: valid arguments (or NULL where allowed); the handle is under test.
        with_iter(|out| unsafe {
            kstate_kv_scan(s, KSTATE_READ_COMMITTED, null(), 0, null(), 0, true, out)
        })
    }),
    ("close", |s| code(kstate_kv_close(s))),
];

/// Opens an iterator with `open`, closes it if one was opened; the code of `open`.
fn with_iter(open: impl FnOnce(*mut *mut kstate_kv_iter_t) -> *mut kstate_error_t) -> i32 {
    let mut it = null_mut();
    let c = code(open(&mut it));
    if !it.is_null() {
        assert_eq!(code(kstate_kv_iter_close(it)), 0);
    }
    c
}

type IterCall = (&'static str, fn(*mut kstate_kv_iter_t) -> i32);

/// Every function taking an iterator handle.
const ITER_CALLS: [IterCall; 2] = [
    ("iter_next_batch", |it| {
        let mut b = empty_batch();
        // SAFETY: valid out-pointer; the handle is under test; the batch is released.
        let c = code(unsafe { kstate_kv_iter_next_batch(it, 4, 0, &mut b) });
        // SAFETY: as returned.
        unsafe { kstate_kv_batch_free(&mut b) };
        c
    }),
    ("iter_close", |it| code(kstate_kv_iter_close(it))),
];

fn store_with_iter() -> (*mut kstate_kv_t, *mut kstate_kv_iter_t) {
    let s = memory_store();
    let mut it = null_mut();
    // SAFETY: valid pointers.
    assert_eq!(code(unsafe { kstate_kv_all(s, &mut it) }), 0);
    (s, it)
}

#[test]
fn every_store_function_refuses_an_iterator_and_back() {
    let (s, it) = store_with_iter();
    for (name, call) in STORE_CALLS {
        assert_eq!(
            call(it.cast()),
            KSTATE_ERR_INVALID_HANDLE,
            "{name}(iterator)"
        );
    }
    for (name, call) in ITER_CALLS {
        assert_eq!(call(s.cast()), KSTATE_ERR_INVALID_HANDLE, "{name}(store)");
    }
    // Nothing was closed by the misuse.
    assert_eq!(STORE_CALLS[0].1(s), 0);
    assert_eq!(ITER_CALLS[0].1(it), 0);
    // Closed handles of the other kind are still the wrong kind.
    assert_eq!(code(kstate_kv_iter_close(it)), 0);
    for (name, call) in STORE_CALLS {
        assert_eq!(
            call(it.cast()),
            KSTATE_ERR_INVALID_HANDLE,
            "{name}(closed iterator)"
        );
    }
    assert_eq!(code(kstate_kv_close(s)), 0);
    for (name, call) in ITER_CALLS {
        assert_eq!(
            call(s.cast()),
            KSTATE_ERR_INVALID_HANDLE,
            "{name}(closed store)"
        );
    }
}

#[test]
fn every_function_refuses_null_forged_and_closed_handles() {
    let forged = [
        0usize,
        1,
        0x1234,
        usize::MAX,
        0x4B53_0000_0000_0001 + 1_000_000,
    ];
    for h in forged {
        for (name, call) in STORE_CALLS {
            assert_eq!(
                call(h as *mut _),
                KSTATE_ERR_INVALID_HANDLE,
                "{name}({h:#x})"
            );
        }
        for (name, call) in ITER_CALLS {
            assert_eq!(
                call(h as *mut _),
                KSTATE_ERR_INVALID_HANDLE,
                "{name}({h:#x})"
            );
        }
    }
    let (s, it) = store_with_iter();
    assert_eq!(code(kstate_kv_iter_close(it)), 0);
    for (name, call) in ITER_CALLS {
        assert_eq!(
            call(it),
            KSTATE_ERR_ITERATOR_CLOSED,
            "{name}(closed iterator)"
        );
    }
    assert_eq!(code(kstate_kv_close(s)), 0);
    for (name, call) in STORE_CALLS {
        assert_eq!(call(s), KSTATE_ERR_STORE_CLOSED, "{name}(closed store)");
    }
}

#[test]
fn open_refuses_an_empty_path() {
    let mut s = null_mut();
    for engine in [KSTATE_ENGINE_ROCKSDB, KSTATE_ENGINE_MEMORY] {
        let mut opts = kstate_kv_options_t::defaults();
        opts.engine = engine;
        // SAFETY: valid pointers.
        let e = unsafe { kstate_kv_open(c"".as_ptr(), &opts, &mut s) };
        // SAFETY: fresh error.
        let msg = unsafe { CStr::from_ptr(kstate_error_message(e)) }
            .to_string_lossy()
            .into_owned();
        assert_eq!(code(e), KSTATE_ERR_INVALID_ARGUMENT, "{msg}");
        assert!(msg.contains("path is empty"), "{msg}");
        assert!(s.is_null());
    }
}

#[test]
fn next_batch_loses_no_entry_to_a_short_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kafka");
    crate::bridge::tests::kafka_store_with_a_short_value(&path);
    let cpath = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut s = null_mut();
    let mut it = null_mut();
    let mut b = empty_batch();
    // SAFETY: valid pointers throughout; batches are released.
    unsafe {
        assert_eq!(code(kstate_kv_open(cpath.as_ptr(), null(), &mut s)), 0);
        assert_eq!(code(kstate_kv_all(s, &mut it)), 0);
        let mut keys = Vec::new();
        let mut errors = Vec::new();
        loop {
            let e = kstate_kv_iter_next_batch(it, 100, 0, &mut b);
            if !e.is_null() {
                let msg = CStr::from_ptr(kstate_error_message(e))
                    .to_string_lossy()
                    .into_owned();
                errors.push((code(e), msg));
                continue;
            }
            if b.len == 0 {
                break;
            }
            let entries = std::slice::from_raw_parts(b.entries, b.len);
            let batch: Vec<Vec<u8>> = entries
                .iter()
                .map(|e| std::slice::from_raw_parts(e.key, e.key_len).to_vec())
                .collect();
            keys.push(batch);
            kstate_kv_batch_free(&mut b);
        }
        assert_eq!(
            keys,
            [
                vec![b"a".to_vec(), b"b".to_vec()],
                vec![b"d".to_vec(), b"e".to_vec()]
            ]
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].0, KSTATE_ERR_INVALID_VALUE);
        assert!(errors[0].1.contains("key \"c\""), "{}", errors[0].1);
        assert_eq!(code(kstate_kv_iter_close(it)), 0);
        assert_eq!(code(kstate_kv_close(s)), 0);
    }
}

/// Message of an error, freeing it.
fn message(e: *mut kstate_error_t) -> String {
    // SAFETY: `e` is a fresh error from kstate; read, then freed once.
    unsafe {
        let m = CStr::from_ptr(kstate_error_message(e))
            .to_string_lossy()
            .into_owned();
        kstate_error_free(e);
        m
    }
}

#[test]
fn options_are_read_in_the_layout_the_caller_was_built_with() {
    // The current layout: every field set by init, read back whole.
    let mut current = std::mem::MaybeUninit::<kstate_kv_options_t>::uninit();
    // SAFETY: writable for the current layout's size.
    let e = unsafe { kstate_kv_options_init(current.as_mut_ptr(), KSTATE_KV_OPTIONS_SIZE_V2) };
    assert_eq!(code(e), KSTATE_OK);
    // SAFETY: initialised by kstate_kv_options_init.
    let mut current = unsafe { current.assume_init() };
    assert_eq!(current.struct_size, KSTATE_KV_OPTIONS_SIZE_V2);
    current.rocksdb_bloom_filter = false;
    current.rocksdb_statistics = true;
    current.rocksdb_bounded_memory_bytes = 8 << 20;
    current.rocksdb_bounded_memtable_bytes = 2 << 20;
    // SAFETY: a valid current-layout struct.
    let read = unsafe { kstate_kv_options_t::read(&current) }.unwrap();
    let core = read.convert().unwrap();
    assert!(!core.rocksdb.bloom_filter && core.rocksdb.statistics);
    assert_eq!(
        core.rocksdb.bounded_memory.map(|b| b.total_bytes),
        Some(8 << 20)
    );

    // An older caller's struct: init writes its 56 bytes only, not one past them.
    let mut old = [0xA5A5_A5A5_A5A5_A5A5_u64; 9];
    // SAFETY: 72 writable, aligned bytes; 56 are claimed.
    let e = unsafe { kstate_kv_options_init(old.as_mut_ptr().cast(), KSTATE_KV_OPTIONS_SIZE_V1) };
    assert_eq!(code(e), KSTATE_OK);
    assert_eq!(old[0], KSTATE_KV_OPTIONS_SIZE_V1 as u64);
    assert_eq!(&old[7..], &[0xA5A5_A5A5_A5A5_A5A5; 2]);
    // Bytes 52..56 are the old layout's padding, where the current one keeps its two
    // flags: whatever an old caller left there is not read as them.
    let bytes: &mut [u8; 72] = bytemuck_view(&mut old);
    bytes[52] = 0;
    bytes[53] = 1;
    bytes[8..12].copy_from_slice(&KSTATE_ENGINE_MEMORY.to_ne_bytes());
    // SAFETY: an initialised old-layout struct of 56 readable bytes.
    let read = unsafe { kstate_kv_options_t::read(old.as_ptr().cast()) }.unwrap();
    let core = read.convert().unwrap();
    let defaults = crate::StoreOptions::default();
    assert_eq!(core.engine, crate::EngineKind::Memory);
    assert_eq!(core.rocksdb, defaults.rocksdb);

    // Sizes no layout has: zero (never initialised), in between, and a newer header's.
    for size in [
        0,
        8,
        KSTATE_KV_OPTIONS_SIZE_V1 + 8,
        KSTATE_KV_OPTIONS_SIZE_V2 + 8,
    ] {
        let mut buf = [0_u64; 16];
        buf[0] = size as u64;
        let mut s = null_mut();
        // SAFETY: 128 readable bytes, more than any layout.
        let e = unsafe { kstate_kv_open(null(), buf.as_ptr().cast(), &mut s) };
        assert_eq!(
            code_and_message(e).0,
            KSTATE_ERR_INVALID_ARGUMENT,
            "size {size}"
        );
        assert!(s.is_null());
        // SAFETY: 128 writable bytes.
        let e = unsafe { kstate_kv_options_init(buf.as_mut_ptr().cast(), size) };
        let (c, m) = code_and_message(e);
        assert_eq!(c, KSTATE_ERR_INVALID_ARGUMENT, "size {size}");
        assert!(m.contains("struct_size") || m.contains("sizeof"), "{m}");
        assert_eq!(buf[1], 0, "nothing written for size {size}");
    }
    // SAFETY: NULL is checked.
    let e = unsafe { kstate_kv_options_init(null_mut(), KSTATE_KV_OPTIONS_SIZE_V2) };
    assert_eq!(code(e), KSTATE_ERR_INVALID_ARGUMENT);
}

/// The bytes of a `[u64; 9]`, to poke at a C struct's layout.
fn bytemuck_view(words: &mut [u64; 9]) -> &mut [u8; 72] {
    // SAFETY: same size, u8 has no alignment or validity requirement, and the borrow is
    // carried over.
    unsafe { &mut *(words as *mut [u64; 9]).cast::<[u8; 72]>() }
}

/// Code and message of an error, freeing it.
fn code_and_message(e: *mut kstate_error_t) -> (i32, String) {
    // SAFETY: `e` is NULL or fresh from kstate.
    let c = unsafe { kstate_error_code(e) };
    if e.is_null() {
        return (c, String::new());
    }
    (c, message(e))
}
