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
    let mut opts = kstate_kv_options_default();
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
    let d = kstate_kv_options_default();
    let core = crate::StoreOptions::default();
    assert_eq!(d.to_store_options().unwrap(), core);
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
