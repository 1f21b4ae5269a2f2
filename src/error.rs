//! The one error type of kstate and its stable numeric codes.
//!
//! Every failure that can reach a caller is an [`Error`]. Each variant maps to an
//! [`ErrorCode`] whose number is part of the public contract: the C header exposes it as
//! `KSTATE_ERR_*` and the Java adapter carries it in its exceptions, so the numbers never
//! change meaning once released. New failures get new numbers.

use std::path::PathBuf;

/// Result alias used throughout kstate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Stable numeric error codes shared by the Rust, C and Java surfaces.
///
/// `0` is reserved for "no error" and never appears in an [`Error`].
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// An argument was malformed: a null pointer, a length that does not match, a range
    /// whose ends are swapped where that is not allowed, an option out of bounds.
    InvalidArgument = 1,
    /// The store was closed (explicitly or because its owner went away).
    StoreClosed = 2,
    /// The path exists but holds neither a kstate store nor a Kafka Streams RocksDB store.
    NotAStore = 3,
    /// The store was written by a newer kstate whose format this build cannot read.
    UnsupportedFormat = 4,
    /// A record kstate relies on (metadata, committed offsets, a spilled entry, a value
    /// layout) failed its integrity checks.
    Corruption = 5,
    /// Another process or another open handle in this process holds the store.
    Locked = 6,
    /// A key is longer than [`crate::MAX_KEY_BYTES`].
    KeyTooLarge = 7,
    /// A value is longer than [`crate::MAX_VALUE_BYTES`].
    ValueTooLarge = 8,
    /// The store was created in the other value format (plain vs timestamped), or a
    /// timestamped-only operation was called on a plain store.
    FormatMismatch = 9,
    /// The storage engine (RocksDB) reported an error.
    Storage = 10,
    /// A file-system operation failed.
    Io = 11,
    /// kstate panicked internally; the operation did not happen. Please report it.
    Internal = 12,
    /// A handle passed through the C or Java surface is not a live kstate handle.
    InvalidHandle = 13,
    /// An iterator was used after it, or its store, was closed.
    IteratorClosed = 14,
    /// A value in the timestamped layout is shorter than its 8-byte timestamp prefix.
    InvalidValue = 15,
    /// A commit was written but its outcome is not confirmed (the engine failed while
    /// making it durable). The commit will complete: kstate retries it before the next
    /// operation on the store (retry `commit`, or make any other call), and committed
    /// readers see the previous commit until then. If the process ends first, the next open
    /// finishes it or keeps the previous commit; `committed_offset` tells which.
    CommitInDoubt = 16,
    /// The operation does not exist for this kind of store: a checkpoint of a memory
    /// store, which has no files to copy.
    Unsupported = 17,
}

impl ErrorCode {
    /// Every code, in numeric order (for documentation and exhaustive tests).
    pub const ALL: [ErrorCode; 17] = [
        ErrorCode::InvalidArgument,
        ErrorCode::StoreClosed,
        ErrorCode::NotAStore,
        ErrorCode::UnsupportedFormat,
        ErrorCode::Corruption,
        ErrorCode::Locked,
        ErrorCode::KeyTooLarge,
        ErrorCode::ValueTooLarge,
        ErrorCode::FormatMismatch,
        ErrorCode::Storage,
        ErrorCode::Io,
        ErrorCode::Internal,
        ErrorCode::InvalidHandle,
        ErrorCode::IteratorClosed,
        ErrorCode::InvalidValue,
        ErrorCode::CommitInDoubt,
        ErrorCode::Unsupported,
    ];

    /// The stable number of this code.
    pub fn as_i32(self) -> i32 {
        self as i32
    }

    /// The code with this number, if any.
    pub fn from_i32(code: i32) -> Option<ErrorCode> {
        Self::ALL.iter().copied().find(|c| c.as_i32() == code)
    }

    /// A short, stable, upper-case name (`"STORE_CLOSED"`), as used in the C constants.
    pub fn name(self) -> &'static str {
        // The names are ASCII literals, so the conversion cannot fail.
        self.c_name().to_str().unwrap_or("UNKNOWN")
    }

    /// [`ErrorCode::name`] as a NUL-terminated string (what `kstate_error_code_name` returns).
    pub fn c_name(self) -> &'static std::ffi::CStr {
        match self {
            ErrorCode::InvalidArgument => c"INVALID_ARGUMENT",
            ErrorCode::StoreClosed => c"STORE_CLOSED",
            ErrorCode::NotAStore => c"NOT_A_STORE",
            ErrorCode::UnsupportedFormat => c"UNSUPPORTED_FORMAT",
            ErrorCode::Corruption => c"CORRUPTION",
            ErrorCode::Locked => c"LOCKED",
            ErrorCode::KeyTooLarge => c"KEY_TOO_LARGE",
            ErrorCode::ValueTooLarge => c"VALUE_TOO_LARGE",
            ErrorCode::FormatMismatch => c"FORMAT_MISMATCH",
            ErrorCode::Storage => c"STORAGE",
            ErrorCode::Io => c"IO",
            ErrorCode::Internal => c"INTERNAL",
            ErrorCode::InvalidHandle => c"INVALID_HANDLE",
            ErrorCode::IteratorClosed => c"ITERATOR_CLOSED",
            ErrorCode::InvalidValue => c"INVALID_VALUE",
            ErrorCode::CommitInDoubt => c"COMMIT_IN_DOUBT",
            ErrorCode::Unsupported => c"UNSUPPORTED",
        }
    }
}

/// Everything that can go wrong in kstate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// See [`ErrorCode::InvalidArgument`].
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// See [`ErrorCode::StoreClosed`].
    #[error("store is closed")]
    StoreClosed,
    /// See [`ErrorCode::NotAStore`].
    #[error("{path} is not a kstate or Kafka Streams store: {reason}")]
    NotAStore {
        /// The offending path.
        path: PathBuf,
        /// What was found there instead.
        reason: String,
    },
    /// See [`ErrorCode::UnsupportedFormat`].
    #[error("store format version {found} is newer than the newest this build reads ({supported}); upgrade kstate")]
    UnsupportedFormat {
        /// Version recorded in the store.
        found: u32,
        /// Newest version this build understands.
        supported: u32,
    },
    /// See [`ErrorCode::Corruption`].
    #[error("corruption: {0}")]
    Corruption(String),
    /// See [`ErrorCode::Locked`].
    #[error("store at {path} is locked by another process or another open handle: {detail}")]
    Locked {
        /// Store directory.
        path: PathBuf,
        /// The engine's own words.
        detail: String,
    },
    /// See [`ErrorCode::KeyTooLarge`].
    #[error("key of {len} bytes exceeds the limit of {max} bytes")]
    KeyTooLarge {
        /// Length given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// See [`ErrorCode::ValueTooLarge`].
    #[error("value of {len} bytes exceeds the limit of {max} bytes")]
    ValueTooLarge {
        /// Length given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// See [`ErrorCode::FormatMismatch`].
    #[error("format mismatch: {0}")]
    FormatMismatch(String),
    /// See [`ErrorCode::Storage`].
    #[error("storage engine error: {0}")]
    Storage(String),
    /// See [`ErrorCode::Io`].
    #[error("i/o error on {path}: {source}")]
    Io {
        /// Path the operation was about.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// See [`ErrorCode::Internal`].
    #[error("internal error (please report): {0}")]
    Internal(String),
    /// See [`ErrorCode::InvalidHandle`].
    #[error("invalid handle: {0}")]
    InvalidHandle(String),
    /// See [`ErrorCode::IteratorClosed`].
    #[error("iterator is closed (closed explicitly, or its store was closed)")]
    IteratorClosed,
    /// See [`ErrorCode::InvalidValue`].
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// See [`ErrorCode::CommitInDoubt`].
    #[error("commit in doubt: {0}; the commit will complete, retry it (or make any other call) once the cause is fixed")]
    CommitInDoubt(String),
    /// See [`ErrorCode::Unsupported`].
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidArgument(_) => ErrorCode::InvalidArgument,
            Error::StoreClosed => ErrorCode::StoreClosed,
            Error::NotAStore { .. } => ErrorCode::NotAStore,
            Error::UnsupportedFormat { .. } => ErrorCode::UnsupportedFormat,
            Error::Corruption(_) => ErrorCode::Corruption,
            Error::Locked { .. } => ErrorCode::Locked,
            Error::KeyTooLarge { .. } => ErrorCode::KeyTooLarge,
            Error::ValueTooLarge { .. } => ErrorCode::ValueTooLarge,
            Error::FormatMismatch(_) => ErrorCode::FormatMismatch,
            Error::Storage(_) => ErrorCode::Storage,
            Error::Io { .. } => ErrorCode::Io,
            Error::Internal(_) => ErrorCode::Internal,
            Error::InvalidHandle(_) => ErrorCode::InvalidHandle,
            Error::IteratorClosed => ErrorCode::IteratorClosed,
            Error::InvalidValue(_) => ErrorCode::InvalidValue,
            Error::CommitInDoubt(_) => ErrorCode::CommitInDoubt,
            Error::Unsupported(_) => ErrorCode::Unsupported,
        }
    }

    /// Shorthand for an [`Error::Io`] about `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Turns a caught panic payload into an [`Error::Internal`]; used by the FFI surfaces.
    pub fn from_panic(payload: &(dyn std::any::Any + Send)) -> Error {
        let msg = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "panic with a non-string payload".to_string()
        };
        Error::Internal(format!("panic: {msg}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_and_unique() {
        let numbers: Vec<i32> = ErrorCode::ALL.iter().map(|c| c.as_i32()).collect();
        assert_eq!(numbers, (1..=17).collect::<Vec<_>>());
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_i32(c.as_i32()), Some(c));
        }
        assert_eq!(ErrorCode::from_i32(0), None);
        assert_eq!(ErrorCode::from_i32(18), None);
    }

    #[test]
    fn errors_map_to_their_codes() {
        assert_eq!(Error::StoreClosed.code(), ErrorCode::StoreClosed);
        assert_eq!(
            Error::KeyTooLarge { len: 2, max: 1 }.code(),
            ErrorCode::KeyTooLarge
        );
        let e = Error::from_panic(&"boom");
        assert_eq!(e.code(), ErrorCode::Internal);
        assert!(e.to_string().contains("boom"));
    }
}
