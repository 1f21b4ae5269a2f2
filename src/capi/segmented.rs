//! What the window and session query functions share: reading the C bounds into the kind's
//! query and publishing the new iterator through `iter_out`, written once for both kinds.

use super::bytes::{init, opt_span, out, span};
use super::error::{ffi_call, kstate_error_t};
use super::session::{kstate_session_iter_t, kstate_session_t};
use super::window::{kstate_window_iter_t, kstate_window_t};
use super::{isolation, kstate_isolation_t, number, pointer};
use crate::bridge;
use crate::store::{SessionQuery, WindowQuery};
use crate::{Isolation, Result};

/// A segmented store's C handle type, as its query functions see it.
pub(crate) trait SegmentedQueries {
    /// The kind's iterator handle type.
    type Iter;
    /// The kind's query.
    type Query;
    /// One key between two times (window starts; session end and start bounds).
    fn key(key: Vec<u8>, a: i64, b: i64) -> Self::Query;
    /// A key range (`None`: open) between two times.
    fn key_range(key_from: Option<Vec<u8>>, key_to: Option<Vec<u8>>, a: i64, b: i64)
        -> Self::Query;
    /// Opens an iterator for `query` on the store behind handle number `store`.
    fn open(store: u64, isolation: Isolation, query: &Self::Query, reverse: bool) -> Result<u64>;
}

impl SegmentedQueries for kstate_window_t {
    type Iter = kstate_window_iter_t;
    type Query = WindowQuery;
    fn key(key: Vec<u8>, from: i64, to: i64) -> WindowQuery {
        WindowQuery::Key { key, from, to }
    }
    fn key_range(
        key_from: Option<Vec<u8>>,
        key_to: Option<Vec<u8>>,
        from: i64,
        to: i64,
    ) -> WindowQuery {
        WindowQuery::KeyRange {
            key_from,
            key_to,
            from,
            to,
        }
    }
    fn open(store: u64, isolation: Isolation, query: &WindowQuery, reverse: bool) -> Result<u64> {
        bridge::open_window_iter(store, |s| s.query(isolation, query, reverse))
    }
}

impl SegmentedQueries for kstate_session_t {
    type Iter = kstate_session_iter_t;
    type Query = SessionQuery;
    fn key(key: Vec<u8>, earliest_end: i64, latest_start: i64) -> SessionQuery {
        SessionQuery::Key {
            key,
            earliest_end,
            latest_start,
        }
    }
    fn key_range(
        key_from: Option<Vec<u8>>,
        key_to: Option<Vec<u8>>,
        earliest_end: i64,
        latest_start: i64,
    ) -> SessionQuery {
        SessionQuery::KeyRange {
            key_from,
            key_to,
            earliest_end,
            latest_start,
        }
    }
    fn open(store: u64, isolation: Isolation, query: &SessionQuery, reverse: bool) -> Result<u64> {
        bridge::open_session_iter(store, |s| s.query(isolation, query, reverse))
    }
}

/// Opens an iterator for the query `make` builds and publishes it through `iter_out`.
///
/// # Safety
/// `iter_out` is NULL or writable.
pub(crate) unsafe fn query<S: SegmentedQueries>(
    store: *mut S,
    isolation: kstate_isolation_t,
    make: impl FnOnce() -> Result<S::Query>,
    reverse: bool,
    iter_out: *mut *mut S::Iter,
) -> *mut kstate_error_t {
    // SAFETY: NULL or writable (caller's guarantee).
    unsafe { init(iter_out, std::ptr::null_mut()) };
    ffi_call(|| {
        // SAFETY: initialised above.
        let iter_out = unsafe { out(iter_out, "iter_out")? };
        let isolation = self::isolation(isolation)?;
        let query = make()?;
        *iter_out = pointer(S::open(number(store), isolation, &query, reverse)?);
        Ok(())
    })
}

/// [`query`] of one key between the times `a` and `b`.
///
/// # Safety
/// `key` NULL or readable for `key_len` bytes; `iter_out` NULL or writable.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn key_query<S: SegmentedQueries>(
    store: *mut S,
    isolation: kstate_isolation_t,
    key: *const u8,
    key_len: usize,
    a: i64,
    b: i64,
    reverse: bool,
    iter_out: *mut *mut S::Iter,
) -> *mut kstate_error_t {
    let make = || {
        // SAFETY: readable as given (caller's guarantee); copied at once.
        let key = unsafe { span(key, key_len, "key")? }.to_vec();
        Ok(S::key(key, a, b))
    };
    // SAFETY: forwarded; same contract.
    unsafe { query(store, isolation, make, reverse, iter_out) }
}

/// [`query`] of a key range (a NULL bound is open) between the times `(a, b)`.
///
/// # Safety
/// Bounds NULL or readable for their lengths; `iter_out` NULL or writable.
pub(crate) unsafe fn key_range_query<S: SegmentedQueries>(
    store: *mut S,
    isolation: kstate_isolation_t,
    key_from: (*const u8, usize),
    key_to: (*const u8, usize),
    (a, b): (i64, i64),
    reverse: bool,
    iter_out: *mut *mut S::Iter,
) -> *mut kstate_error_t {
    let make = || {
        // SAFETY: readable as given (caller's guarantee); copied at once.
        let (key_from, key_to) = unsafe {
            (
                opt_span(key_from.0, key_from.1, "key_from")?.map(<[u8]>::to_vec),
                opt_span(key_to.0, key_to.1, "key_to")?.map(<[u8]>::to_vec),
            )
        };
        Ok(S::key_range(key_from, key_to, a, b))
    };
    // SAFETY: forwarded; same contract.
    unsafe { query(store, isolation, make, reverse, iter_out) }
}
