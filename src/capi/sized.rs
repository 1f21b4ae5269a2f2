//! The sized option structs of the C API (`kstate_kv_options_t`, `kstate_window_options_t`,
//! `kstate_session_options_t`, `kstate_versioned_options_t`), read and initialised by one
//! set of rules: a leading `struct_size` names the layout the caller was compiled with, the
//! library reads and writes only that layout's bytes (the later fields keep their
//! defaults), and a size no layout has is `KSTATE_ERR_INVALID_ARGUMENT` with a message
//! saying what went wrong.

use crate::{Error, Result};

/// The layouts of one options struct, by `struct_size`.
pub(crate) struct Layouts {
    /// Size of layout 1.
    pub v1: usize,
    /// The bytes of layout 1 that hold its fields, read and written for a layout-1 caller:
    /// `v1` unless layout 1 ends with tail padding (where layout 2 may keep fields).
    pub v1_fields: usize,
    /// Size of layout 2, the current one (`size_of::<Self>()`); `v1` for a struct with one
    /// layout so far.
    pub v2: usize,
    /// The struct's name without `_t`, for messages (`kstate_kv_options`).
    pub name: &'static str,
}

/// An options struct of the C API: what each kind's open reads from the caller's pointer
/// and its `_init` function writes.
pub(crate) trait OptionsStruct: Copy {
    /// The core's options it becomes.
    type Options;
    /// Its layouts.
    const LAYOUTS: Layouts;
    /// The defaults, in the current layout.
    fn defaults() -> Self;
    /// Checks the fields and converts them.
    fn convert(self) -> Result<Self::Options>;

    /// Reads the caller's options (NULL: the defaults) in their layout and converts them.
    ///
    /// # Safety
    /// `options` is NULL or points to a struct set up by the kind's `_init` function, of at
    /// least its `struct_size` readable bytes.
    unsafe fn load(options: *const Self) -> Result<Self::Options> {
        if options.is_null() {
            return Self::defaults().convert();
        }
        // SAFETY: non-NULL, else as above (caller's guarantee).
        unsafe { Self::read(options) }?.convert()
    }

    /// Reads the caller's options in their layout.
    ///
    /// # Safety
    /// `options` is non-NULL and points to a struct set up by the kind's `_init` function,
    /// of at least its `struct_size` readable bytes.
    unsafe fn read(options: *const Self) -> Result<Self> {
        if !options.is_aligned() {
            return Err(Error::InvalidArgument("options is misaligned".into()));
        }
        // SAFETY: aligned and readable for the leading size field (caller's guarantee).
        let size = unsafe { options.cast::<usize>().read() };
        Ok(match size {
            // SAFETY: the caller's struct has the current layout, all readable; plain old
            // data, copied out.
            s if s == Self::LAYOUTS.v2 => unsafe { options.read() },
            s if s == Self::LAYOUTS.v1 => {
                let mut read = Self::defaults();
                let to = std::ptr::addr_of_mut!(read).cast::<u8>();
                // SAFETY: the caller's layout-1 bytes are readable; its fields are the leading
                // fields of `Self` in the same places, so copying them over the defaults
                // leaves the later fields at their defaults.
                unsafe {
                    std::ptr::copy_nonoverlapping(options.cast::<u8>(), to, Self::LAYOUTS.v1_fields)
                };
                read
            }
            other => return Err(size_error::<Self>(other, "options.struct_size")),
        })
    }
}

/// The `_init` function of every options struct: writes the defaults in the caller's
/// layout, with `struct_size` set to it; nothing is written on error.
///
/// # Safety
/// `options` is NULL or writable for `struct_size` bytes.
pub(crate) unsafe fn init<T: OptionsStruct>(options: *mut T, struct_size: usize) -> Result<()> {
    if options.is_null() {
        return Err(Error::InvalidArgument("options is NULL".into()));
    }
    if !options.is_aligned() {
        return Err(Error::InvalidArgument("options is misaligned".into()));
    }
    let mut value = T::defaults();
    // SAFETY: every options struct starts with its `usize` size field.
    unsafe {
        std::ptr::addr_of_mut!(value)
            .cast::<usize>()
            .write(struct_size)
    };
    match struct_size {
        // SAFETY: non-NULL, aligned, writable for the current layout (caller's guarantee).
        s if s == T::LAYOUTS.v2 => unsafe { options.write(value) },
        s if s == T::LAYOUTS.v1 => {
            let from = std::ptr::addr_of!(value).cast::<u8>();
            // SAFETY: as above, for layout 1, whose field bytes are a prefix of `value`.
            unsafe {
                std::ptr::copy_nonoverlapping(from, options.cast::<u8>(), T::LAYOUTS.v1_fields)
            };
        }
        other => return Err(size_error::<T>(other, "struct_size")),
    }
    Ok(())
}

/// The error for a size (`what`: the field or argument) that no layout of `T` has.
fn size_error<T: OptionsStruct>(got: usize, what: &str) -> Error {
    let Layouts { v1, v2, name, .. } = T::LAYOUTS;
    Error::InvalidArgument(if got == 0 {
        format!("{what} is 0: initialise the options with {name}_init(&options, sizeof options)")
    } else if got > v2 {
        format!(
            "{what} {got} is larger than any {name}_t this library ({}) knows ({v2} bytes at \
             most): the program was built against a newer kstate.h, or the options were not \
             initialised with {name}_init",
            env!("CARGO_PKG_VERSION")
        )
    } else {
        let sizes = if v1 == v2 {
            format!("{v1}")
        } else {
            format!("{v1} or {v2}")
        };
        format!(
            "{what} {got} is not the size of a {name}_t layout ({sizes}): initialise the \
             options with {name}_init(&options, sizeof options)"
        )
    })
}
