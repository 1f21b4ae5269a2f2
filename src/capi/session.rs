//! Session store functions (Kafka's `SessionStore`): open/close, put/remove,
//! fetchSession, the findSessions and fetch queries and their iterators, transactions.

use super::bytes::{found_raw, kstate_bytes_t};
use super::{number, pointer};
use crate::bridge::{self, SessionIterHandle};
use crate::format::segmented::parse_session_key;
use crate::handle::HANDLES;
use crate::store::SessionQuery;
use crate::{Isolation, Result};

/// An open session store (Kafka's `SessionStore`: aggregates keyed by record key and
/// session start and end), a handle as the header's overview describes; released by
/// `kstate_session_close`.
pub struct kstate_session_t {
    _opaque: [u8; 0],
}

/// An iterator over sessions, in Kafka's order, fixed when it was created; a handle as the
/// header's overview describes. Closing its store closes it (`KSTATE_ERR_ITERATOR_CLOSED`);
/// it must still be released with `kstate_session_iter_close`.
pub struct kstate_session_iter_t {
    _opaque: [u8; 0],
}

/// Kafka's `put(Windowed(key, SessionWindow(start, end)), aggregate)` in the current
/// transaction. The write advances the stream time to `end`; a session already expired by
/// the stream time is dropped silently, as in Kafka.
///
/// # Arguments
/// * `store` - a session store.
/// * `key`, `key_len` - the record key; `key` may be NULL only when `key_len` is 0.
/// * `start`, `end` - the session's start and end (ms).
/// * `aggregate`, `aggregate_len` - the aggregate, stored as given (in a headers-format
///   store: Kafka's `AggregationWithHeaders` layout, `[varint headersSize][headers]
///   [aggregation]`); NULL only when `aggregate_len` is 0 (the empty aggregate; use
///   `kstate_session_remove` to delete).
///
/// # Errors
/// * `KSTATE_ERR_INVALID_ARGUMENT` - NULL data with a non-zero length.
/// * `KSTATE_ERR_INVALID_VALUE` - a headers-format store got a malformed aggregate.
/// * `KSTATE_ERR_KEY_TOO_LARGE` (over `KSTATE_MAX_KEY_BYTES` - 16),
///   `KSTATE_ERR_VALUE_TOO_LARGE`.
/// * `KSTATE_ERR_STORAGE`, `KSTATE_ERR_IO` - spilling the transaction failed.
///
/// # Safety
/// `key` / `aggregate` are NULL or readable for their lengths.
/// The query of the sessions of the keys in `[key_from, key_to]` (`None`: open) that end at
/// or after `earliest_end` and start at or before `latest_start`.
fn key_range(
    key_from: Option<&[u8]>,
    key_to: Option<&[u8]>,
    earliest_end: i64,
    latest_start: i64,
) -> SessionQuery {
    let (key_from, key_to) = (key_from.map(<[u8]>::to_vec), key_to.map(<[u8]>::to_vec));
    SessionQuery::KeyRange {
        key_from,
        key_to,
        earliest_end,
        latest_start,
    }
}

/// Opens an iterator for `query` on the store behind `store` and publishes it.
fn open_iter(
    store: *mut kstate_session_t,
    isolation: Isolation,
    query: &SessionQuery,
    reverse: bool,
    iter_out: &mut *mut kstate_session_iter_t,
) -> Result<()> {
    let it = bridge::open_session_iter(number(store), |s| s.query(isolation, query, reverse))?;
    *iter_out = pointer(it);
    Ok(())
}

include!(concat!(env!("OUT_DIR"), "/capi_session.rs"));
