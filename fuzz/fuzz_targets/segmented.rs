//! Window and session key schemas (Kafka's `WindowKeySchema`, `SessionKeySchema`, and the
//! time-first keys of its time-ordered stores), kstate's segment prefix, Kafka's range bounds
//! over those keys, and the check that tells a Kafka versioned store's rows from plain ones.
//!
//! Properties: parsing arbitrary bytes never panics and is canonical (parse, rebuild gives
//! the input back); keys built from the input parse back to their parts; segment prefixes
//! order like segment ids; the bounds Kafka's fetches use enclose every key they must
//! return (`lowerRange <= key <= upperRange` for the record key and any time up to `to`).
#![no_main]

use kstate::format::segmented::{
    ordered_lower_range, parse_session_key, parse_window_key, segment_id, segment_prefix,
    session_key, session_key_of_time_first, session_upper_range, split_stored, stored_key,
    time_first_session_key, time_first_window_key, window_key, window_key_of_time_first,
    window_upper_range, SESSION_SUFFIX, WINDOW_SUFFIX,
};
use kstate_fuzz::arbitrary::{Result, Unstructured};
use kstate_fuzz::bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    parse_arbitrary(data);
    let _ = built_keys(&mut Unstructured::new(data));
});

fn parse_arbitrary(raw: &[u8]) {
    match parse_window_key(raw) {
        Ok((key, start, seq)) => assert_eq!(window_key(key, start, seq), raw),
        Err(_) => assert!(raw.len() < WINDOW_SUFFIX),
    }
    match parse_session_key(raw) {
        Ok((key, start, end)) => assert_eq!(session_key(key, start, end), raw),
        Err(_) => assert!(raw.len() < SESSION_SUFFIX),
    }
    match split_stored(raw) {
        Ok((segment, key)) => assert_eq!(stored_key(segment, key), raw),
        Err(_) => assert!(raw.len() < 8),
    }
    // Kafka's time-first keys (time-ordered stores, read when their segments are adopted):
    // each converts to the key-first key and back to itself.
    match window_key_of_time_first(raw) {
        Ok(w) => assert_eq!(time_first_window_key(&w).unwrap(), raw),
        Err(_) => assert!(raw.len() < WINDOW_SUFFIX),
    }
    match session_key_of_time_first(raw) {
        Ok(s) => assert_eq!(time_first_session_key(&s).unwrap(), raw),
        Err(_) => assert!(raw.len() < SESSION_SUFFIX),
    }
    // The versioned-store detector reads any entry without panicking; a key that is not
    // 8 bytes of segment prefix or more is never versioned.
    let (key, value) = raw.split_at(raw.len() / 2);
    if kstate::fuzz_api::kafka_versioned_entry(key, value) {
        assert!(key.len() >= 8);
    }
}

fn built_keys(u: &mut Unstructured<'_>) -> Result<()> {
    let key = bytes(u, 12)?;
    let (start, seq): (i64, i32) = (u.arbitrary()?, u.arbitrary()?);
    let w = window_key(&key, start, seq);
    assert_eq!(parse_window_key(&w).unwrap(), (&key[..], start, seq));
    let end: i64 = u.arbitrary()?;
    let s = session_key(&key, start, end);
    assert_eq!(parse_session_key(&s).unwrap(), (&key[..], start, end));

    let (a, b): (i64, i64) = (u.arbitrary()?, u.arbitrary()?);
    assert_eq!(a.cmp(&b), segment_prefix(a).cmp(&segment_prefix(b)));
    assert_eq!(split_stored(&stored_key(a, &key)).unwrap(), (a, &key[..]));
    let interval = u.int_in_range(1..=i64::MAX)?;
    // Java's long division truncates towards zero, as Rust's does.
    assert_eq!(segment_id(a, interval), a / interval);

    // Kafka's bounds assume its own domain: times and seqnums are never negative (a
    // negative long's big-endian bytes sort after every positive one).
    let t = |x: i64| x & i64::MAX;
    let (start, end, to, seq) = (t(start), t(end), t(u.arbitrary()?), seq & i32::MAX);
    let w = window_key(&key, start, seq);
    let s = session_key(&key, start, end);
    // A window fetch up to `to` sees every window of `key` starting at or before `to`.
    if start <= to {
        assert!(w <= window_upper_range(&key, to), "window upper bound");
    }
    assert!(ordered_lower_range(&key, WINDOW_SUFFIX) <= w);
    // A session search up to `to` sees every session of `key` starting at or before `to`,
    // whatever its end (Kafka's upper bound uses end = i64::MAX).
    if start <= to {
        assert!(s <= session_upper_range(&key, to), "session upper bound");
    }
    assert!(ordered_lower_range(&key, SESSION_SUFFIX) <= s);
    Ok(())
}
