//! Memory crossing the boundary: `kstate_bytes_t` handed to C, and the checked readers of
//! C pointers (byte spans, strings, out-parameters).

use std::ffi::{c_char, CStr};

use crate::{Error, Result};

/// A byte buffer allocated by kstate and owned by the caller, who releases it with
/// `kstate_bytes_free`. `ptr` is NULL only for the empty "nothing returned" value
/// `{NULL, 0}`; a returned value of length 0 has a non-NULL `ptr` that must not be read.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kstate_bytes_t {
    /// First byte, or NULL when nothing was returned.
    pub ptr: *mut u8,
    /// Number of bytes at `ptr`.
    pub len: usize,
}

impl kstate_bytes_t {
    /// Hands `bytes` over to C (no copy when the vector is already tight).
    pub(crate) fn from_vec(bytes: Vec<u8>) -> kstate_bytes_t {
        let boxed: Box<[u8]> = bytes.into_boxed_slice();
        let len = boxed.len();
        let ptr = Box::into_raw(boxed).cast::<u8>();
        kstate_bytes_t { ptr, len }
    }
}

/// Releases a buffer returned by kstate and resets it to `{NULL, 0}`, so a second call on
/// the same variable is harmless.
///
/// # Arguments
/// * `bytes` - the buffer to release; NULL, or a buffer whose `ptr` is NULL, is a no-op.
///
/// # Safety
/// `bytes` is NULL or points to a `kstate_bytes_t` that is either `{NULL, 0}` or exactly as
/// a kstate function returned it (same `ptr`, same `len`) and not yet released through a
/// copy of it.
///
/// # Thread safety
/// Safe to call from any thread; a buffer is released once.
#[no_mangle]
pub unsafe extern "C" fn kstate_bytes_free(bytes: *mut kstate_bytes_t) {
    // SAFETY: the caller guarantees `bytes` is NULL or valid for reads and writes.
    let Some(b) = (unsafe { bytes.as_mut() }) else {
        return;
    };
    if !b.ptr.is_null() {
        let slice = std::ptr::slice_from_raw_parts_mut(b.ptr, b.len);
        // SAFETY: `ptr`/`len` come from `Box::into_raw` of a `Box<[u8]>` in
        // `kstate_bytes_t::from_vec` (caller's guarantee) and were not released before.
        drop(unsafe { Box::from_raw(slice) });
    }
    *b = kstate_bytes_t::NOTHING;
}

/// Reads a byte span given as pointer and length. NULL with length 0 is the empty span.
///
/// # Safety
/// When `ptr` is non-NULL it must be valid for reads of `len` bytes for `'a`.
pub(crate) unsafe fn span<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8]> {
    // SAFETY: forwarded to the caller.
    unsafe { array(ptr, len, what) }
}

/// Reads an optional byte span: NULL with length 0 is `None` (absent, e.g. an open range
/// end or a deletion); NULL with a non-zero length is an error.
///
/// # Safety
/// When `ptr` is non-NULL it must be valid for reads of `len` bytes for `'a`.
pub(crate) unsafe fn opt_span<'a>(
    ptr: *const u8,
    len: usize,
    what: &str,
) -> Result<Option<&'a [u8]>> {
    // SAFETY: forwarded to the caller.
    unsafe { opt_array(ptr, len, what) }
}

/// Reads a slice of `T` given as pointer and count. NULL with count 0 is the empty slice.
///
/// # Safety
/// When `ptr` is non-NULL it must be valid for reads of `len` initialised `T` for `'a`.
pub(crate) unsafe fn array<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    // SAFETY: forwarded to the caller.
    Ok(unsafe { opt_array(ptr, len, what)? }.unwrap_or(&[]))
}

/// Reads an optional slice of `T`: NULL with count 0 is `None`; NULL with a non-zero count,
/// a misaligned pointer or a count no object can have is an error.
///
/// # Safety
/// When `ptr` is non-NULL it must be valid for reads of `len` initialised `T` for `'a`.
unsafe fn opt_array<'a, T>(ptr: *const T, len: usize, what: &str) -> Result<Option<&'a [T]>> {
    if ptr.is_null() {
        if len != 0 {
            return Err(Error::InvalidArgument(format!(
                "{what} is NULL but its length is {len}"
            )));
        }
        return Ok(None);
    }
    if !ptr.is_aligned() {
        return Err(Error::InvalidArgument(format!("{what} is misaligned")));
    }
    if len > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        return Err(Error::InvalidArgument(format!(
            "{what} length {len} is larger than any object"
        )));
    }
    // SAFETY: non-NULL, aligned, size bounded by isize::MAX, and the caller guarantees `len`
    // initialised elements valid for `'a`.
    Ok(Some(unsafe { std::slice::from_raw_parts(ptr, len) }))
}

/// Reads a NUL-terminated string as UTF-8.
///
/// # Safety
/// When `ptr` is non-NULL it must point to a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn utf8<'a>(ptr: *const c_char, what: &str) -> Result<&'a str> {
    // SAFETY: forwarded to the caller.
    let c = unsafe { cstr(ptr, what)? };
    c.to_str()
        .map_err(|e| Error::InvalidArgument(format!("{what} is not valid UTF-8: {e}")))
}

/// Reads a NUL-terminated string as raw bytes.
///
/// # Safety
/// When `ptr` is non-NULL it must point to a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn cstr<'a>(ptr: *const c_char, what: &str) -> Result<&'a CStr> {
    if ptr.is_null() {
        return Err(Error::InvalidArgument(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated, valid for `'a` (caller's guarantee).
    Ok(unsafe { CStr::from_ptr(ptr) })
}

/// A store path: NULL (allowed for the memory engine, which then only names the store) or
/// NUL-terminated bytes, which need not be UTF-8.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string that outlives the returned slice.
pub(crate) unsafe fn opt_path<'a>(path: *const c_char) -> Result<Option<&'a [u8]>> {
    if path.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and NUL-terminated (caller's guarantee).
    Ok(Some(unsafe { cstr(path, "path")? }.to_bytes()))
}

/// Sets an out-parameter to its "nothing" value on entry, if it can be written at all; the
/// function validates it again (and fails) with [`out`] before doing anything.
///
/// # Safety
/// `ptr` is NULL or valid for writes of one `T` (no drop of the old contents happens).
pub(crate) unsafe fn init<T>(ptr: *mut T, value: T) {
    if !ptr.is_null() && ptr.is_aligned() {
        // SAFETY: non-NULL, aligned, and valid for writes (caller's guarantee); `write`
        // does not read or drop the previous, possibly uninitialised, contents.
        unsafe { ptr.write(value) };
    }
}

/// The value an out-parameter holds until a function succeeds: empty bytes, zero, false,
/// NULL. Generated functions (`@@ fn` in the templates) set every out-parameter to it on
/// entry, so each is defined whatever happens next.
pub(crate) trait Nothing {
    /// The "nothing" value.
    const NOTHING: Self;
}

impl Nothing for kstate_bytes_t {
    const NOTHING: Self = kstate_bytes_t {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
}

/// `Nothing` for plain values.
macro_rules! nothing {
    ($($t:ty = $v:expr),*) => {
        $(impl Nothing for $t {
            const NOTHING: Self = $v;
        })*
    };
}

nothing!(bool = false, i64 = 0, u64 = 0);

impl<T> Nothing for *mut T {
    const NOTHING: Self = std::ptr::null_mut();
}

/// Publishes what a typed read found, `(value, timestamp)`, through its out-parameters
/// (left at "nothing" when it found nothing). Always `Ok`: the last expression of a body.
pub(crate) fn found_typed(
    found: Option<(Vec<u8>, i64)>,
    value_out: &mut kstate_bytes_t,
    timestamp_out: &mut i64,
    found_out: &mut bool,
) -> Result<()> {
    if let Some((v, ts)) = found {
        *timestamp_out = ts;
        found_raw(Some(v), value_out, found_out)?;
    }
    Ok(())
}

/// Publishes what a raw read found through its out-parameters, as [`found_typed`].
pub(crate) fn found_raw(
    found: Option<Vec<u8>>,
    value_out: &mut kstate_bytes_t,
    found_out: &mut bool,
) -> Result<()> {
    if let Some(v) = found {
        *value_out = kstate_bytes_t::from_vec(v);
        *found_out = true;
    }
    Ok(())
}

/// Borrows a required out-parameter: NULL or misaligned is an `InvalidArgument` error.
///
/// # Safety
/// `ptr` is NULL or valid for reads and writes of one initialised `T` for `'a` (callers
/// have initialised it with [`init`]).
pub(crate) unsafe fn out<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T> {
    if !ptr.is_aligned() {
        return Err(Error::InvalidArgument(format!("{what} is misaligned")));
    }
    // SAFETY: aligned, and NULL or valid and initialised (caller's guarantee).
    unsafe { ptr.as_mut() }.ok_or_else(|| Error::InvalidArgument(format!("{what} is NULL")))
}
