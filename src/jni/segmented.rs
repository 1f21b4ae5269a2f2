//! The window and session natives of `dev.kstate.internal.KstateNative` (documented there
//! and in `NativeWindowStore` / `NativeSessionStore`): those every kind has and the
//! restore batches, stream time and queries both segmented kinds share are declared once
//! ([`super::declare::kind_natives`]); what differs by kind (open, put, fetch) is here.
//!
//! Iterator batches are packed like the key-value range path ([`super::codec`]), each key
//! being Kafka's store key: `key ‖ BE i64 windowStart ‖ BE i32 seqnum` for windows,
//! `key ‖ BE i64 end ‖ BE i64 start` for sessions.

use jni::sys::{jint, jlong};

use super::convert::JavaBytes;
use super::declare::{kind_natives, natives};
use super::natives::{isolation, jhandle, store, OpenArgs};
use crate::bridge::{self, SessionIterHandle, WindowIterHandle};
use crate::store::{SessionQuery, WindowQuery};
use crate::{Error, Isolation, Result, SessionStore, WindowStore};

/// Query kind of both segmented kinds: one key (`keyFrom`, not null) between the two times.
pub(crate) const KEY: jint = 0;
/// Query kind of both segmented kinds: keys in `[keyFrom, keyTo]` (null = open end).
pub(crate) const KEY_RANGE: jint = 1;
/// `windowQuery` kind: `fetchAll(from, to)`.
pub(crate) const WINDOW_TIME: jint = 2;
/// `windowQuery` kind: `all()`.
pub(crate) const WINDOW_ALL: jint = 3;
/// `sessionQuery` kind: every live session.
pub(crate) const SESSION_ALL: jint = 2;
/// `sessionQuery` kind of time-ordered stores: `findSessions(earliestSessionEndTime,
/// latestSessionEndTime)` (the two times travel in `earliestEnd` / `latestStart`).
pub(crate) const SESSION_BY_END: jint = 3;

fn required(key: Option<&[u8]>) -> Result<Vec<u8>> {
    Ok(key
        .ok_or_else(|| Error::InvalidArgument("null key".into()))?
        .to_vec())
}

fn by_end(
    h: u64,
    isolation: Isolation,
    earliest: i64,
    latest: i64,
    reverse: bool,
) -> Result<SessionIterHandle> {
    bridge::session_iter(h, |s| {
        s.find_sessions_by_end_with(isolation, earliest, latest, reverse)
    })
}

kind_natives! {
    window, "window", WindowStore, WindowIterHandle, bridge::close_window_store,
    bridge::close_window_iter; WindowQuery(from, to), bridge::window_iter,
    |kind, from, to| match kind {
        WINDOW_TIME => Some(WindowQuery::Time { from, to }),
        WINDOW_ALL => Some(WindowQuery::All),
        _ => None,
    }
}

kind_natives! {
    session, "session", SessionStore, SessionIterHandle, bridge::close_session_store,
    bridge::close_session_iter; SessionQuery(earliest_end, latest_start), bridge::session_iter,
    |kind, _, _| (kind == SESSION_ALL).then_some(SessionQuery::All), SESSION_BY_END => by_end
}

natives! {
    /// `long windowOpen(String path, long[] options)`: options as [`OpenArgs`].
    java "windowOpen" fn window_open(path: Option<String>, options: OpenArgs) -> jlong {
        bridge::open_window_store(path.map(str::as_bytes), &options.window).map(jhandle)
    }
    /// `long sessionOpen(String path, long[] options)`: options as [`OpenArgs`]; aggregates
    /// are stored plain (format 1), or in Kafka's `AggregationWithHeaders` layout (2).
    java "sessionOpen" fn session_open(path: Option<String>, options: OpenArgs) -> jlong {
        bridge::open_session_store(path.map(str::as_bytes), &options.session).map(jhandle)
    }
    /// `boolean windowPut(long store, byte[] key, byte[] rawValue, long windowStart)`: a null
    /// value deletes; false when the write was dropped as expired.
    java "windowPut" fn window_put(h: jlong, key: JavaBytes, value: Option<JavaBytes>, start: jlong) -> bool {
        store::<WindowStore>(h)?.put_raw(key, value, start)
    }
    /// `boolean sessionPut(long store, byte[] key, long start, long end, byte[] aggregate)`: a
    /// null aggregate removes the session; false when the write was dropped as expired.
    java "sessionPut" fn session_put(h: jlong, key: JavaBytes, start: jlong, end: jlong,
        aggregate: Option<JavaBytes>) -> bool {
        store::<SessionStore>(h)?.put(key, start, end, aggregate)
    }
    /// `byte[] windowFetch(long store, byte[] key, long windowStart, boolean committed)`.
    java "windowFetch" fn window_fetch(h: jlong, key: JavaBytes, start: jlong, committed: bool)
        -> Option<Vec<u8>> {
        store::<WindowStore>(h)?.fetch_raw_with(isolation(committed), key, start)
    }
    /// `byte[] sessionFetch(long store, byte[] key, long start, long end, boolean committed)`.
    java "sessionFetch" fn session_fetch(h: jlong, key: JavaBytes, start: jlong, end: jlong, committed: bool)
        -> Option<Vec<u8>> {
        store::<SessionStore>(h)?.fetch_session_with(isolation(committed), key, start, end)
    }
}
