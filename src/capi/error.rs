//! `kstate_error_t` and the one place where a Rust `Result` (or a caught panic) becomes a C
//! error pointer.

use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::{Error, ErrorCode, Result};

/// An error returned by a kstate function. Opaque: read it with `kstate_error_code` and
/// `kstate_error_message`, release it with `kstate_error_free`. A function that succeeds
/// returns NULL instead.
///
/// Thread safety: an error belongs to the caller that received it; it may be read from
/// several threads and freed from any thread, once.
pub struct kstate_error_t {
    code: i32,
    message: CString,
}

impl kstate_error_t {
    fn new(error: &Error) -> Self {
        let text = error.to_string().replace('\0', "\\0");
        // The text has no NUL left, so this cannot fail; fall back to a fixed text anyway.
        let message = CString::new(text).unwrap_or_else(|_| c"kstate error".to_owned());
        kstate_error_t {
            code: error.code().as_i32(),
            message,
        }
    }
}

/// Runs the body of an entry point: a panic becomes `ErrorCode::Internal`, an `Err` becomes
/// a heap-allocated `kstate_error_t`, `Ok` becomes NULL. The only conversion point.
pub(crate) fn ffi_call(body: impl FnOnce() -> Result<()>) -> *mut kstate_error_t {
    let outcome = catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|payload| Err(Error::from_panic(payload.as_ref())));
    match outcome {
        Ok(()) => std::ptr::null_mut(),
        Err(e) => Box::into_raw(Box::new(kstate_error_t::new(&e))),
    }
}

/// Runs an infallible body, turning a panic into `fallback` (for functions that return a
/// value rather than an error).
pub(crate) fn ffi_infallible<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The numeric code of an error (one of the `KSTATE_ERR_*` constants).
///
/// # Arguments
/// * `error` - an error returned by a kstate function, or NULL.
///
/// # Returns
/// The error's `KSTATE_ERR_*` code; `KSTATE_OK` (0) when `error` is NULL.
///
/// # Safety
/// `error` is NULL or a pointer returned by a kstate function and not yet passed to
/// `kstate_error_free`.
///
/// # Thread safety
/// Safe to call from any thread; an error object may be read from several threads at once.
#[no_mangle]
pub unsafe extern "C" fn kstate_error_code(error: *const kstate_error_t) -> i32 {
    // SAFETY: the caller guarantees `error` is NULL or a live error from kstate.
    match unsafe { error.as_ref() } {
        Some(e) => e.code,
        None => 0,
    }
}

/// The human-readable message of an error, in English, for logs.
///
/// # Arguments
/// * `error` - an error returned by a kstate function, or NULL.
///
/// # Returns
/// A NUL-terminated UTF-8 string owned by `error` and valid until `kstate_error_free(error)`;
/// a static `"no error"` when `error` is NULL. Never NULL.
///
/// # Safety
/// `error` is NULL or a pointer returned by a kstate function and not yet freed. Do not
/// free or modify the returned string, nor use it after freeing `error`.
#[no_mangle]
pub unsafe extern "C" fn kstate_error_message(error: *const kstate_error_t) -> *const c_char {
    // SAFETY: the caller guarantees `error` is NULL or a live error from kstate.
    match unsafe { error.as_ref() } {
        Some(e) => e.message.as_ptr(),
        None => c"no error".as_ptr(),
    }
}

/// Releases an error.
///
/// # Arguments
/// * `error` - an error returned by a kstate function, or NULL (then nothing happens).
///
/// # Safety
/// `error` is NULL or a pointer returned by a kstate function that was not freed before;
/// it must not be used afterwards (freeing it twice is undefined behaviour, as with
/// `free`).
///
/// # Thread safety
/// Safe to call from any thread, once per error.
#[no_mangle]
pub unsafe extern "C" fn kstate_error_free(error: *mut kstate_error_t) {
    if !error.is_null() {
        // SAFETY: the caller guarantees `error` came from `Box::into_raw` in `ffi_call`
        // and was not freed before, so we own it.
        drop(unsafe { Box::from_raw(error) });
    }
}

/// The stable upper-case name of an error code, e.g. `"STORE_CLOSED"` for
/// `KSTATE_ERR_STORE_CLOSED`.
///
/// # Arguments
/// * `code` - any integer.
///
/// # Returns
/// A static NUL-terminated string: `"OK"` for 0, the name for a `KSTATE_ERR_*` code,
/// `"UNKNOWN"` otherwise. Never NULL; never freed.
#[no_mangle]
pub extern "C" fn kstate_error_code_name(code: i32) -> *const c_char {
    ffi_infallible(c"UNKNOWN".as_ptr(), || {
        if code == 0 {
            return c"OK".as_ptr();
        }
        match ErrorCode::from_i32(code) {
            Some(c) => c.c_name().as_ptr(),
            None => c"UNKNOWN".as_ptr(),
        }
    })
}
