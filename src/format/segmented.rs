//! Key layouts of window and session stores (DESIGN.md §3), Kafka Streams' range bounds
//! over them, and kstate's segment prefix.
//!
//! * Window key (Kafka's `WindowKeySchema`): `key ‖ BE i64 window start ‖ BE i32 seqnum`.
//! * Session key (Kafka's `SessionKeySchema`): `key ‖ BE i64 end ‖ BE i64 start`.
//! * Stored key: `BE u64 segment ‖ Kafka key`, the segment being
//!   `timestamp / segment_interval` (Java's truncating division, as Kafka's
//!   `AbstractSegments.segmentId`) with its sign bit flipped so that the bytewise order of
//!   the prefix is the numeric order of the segment. One ordered family then iterates
//!   exactly like Kafka's list of segment databases: segment by segment, and within a
//!   segment by the bytes of the Kafka key.
//!
//! The range bounds reproduce Kafka's byte for byte, quirks included
//! (`OrderedBytes.upperRange` keeps only the leading key bytes that are at least the first
//! byte of the suffix; fixed-size lower bounds clamp the time at 0), because a fetch
//! returns what lies inside those bounds *and* passes the key schema's filter.

use crate::{Error, Result};

/// Bytes of the segment prefix of a stored key.
pub const SEGMENT_PREFIX: usize = 8;
/// Bytes after the record key in a window key: window start and seqnum.
pub const WINDOW_SUFFIX: usize = 8 + 4;
/// Bytes after the record key in a session key: end and start.
pub const SESSION_SUFFIX: usize = 8 + 8;

/// Kafka's segment id of `timestamp` (`timestamp / segmentInterval`, truncating).
pub fn segment_id(timestamp: i64, segment_interval: i64) -> i64 {
    timestamp / segment_interval.max(1)
}

/// The stored-key prefix of segment `id`: ordered like the ids.
pub fn segment_prefix(id: i64) -> [u8; SEGMENT_PREFIX] {
    ((id as u64) ^ (1 << 63)).to_be_bytes()
}

/// Splits a stored key into its segment id and the Kafka key.
pub fn split_stored(stored: &[u8]) -> Result<(i64, &[u8])> {
    if stored.len() < SEGMENT_PREFIX {
        return Err(Error::Corruption(
            "a segmented store key is shorter than its segment prefix".into(),
        ));
    }
    let (p, rest) = stored.split_at(SEGMENT_PREFIX);
    let mut b = [0u8; 8];
    b.copy_from_slice(p);
    Ok(((u64::from_be_bytes(b) ^ (1 << 63)) as i64, rest))
}

/// `segment prefix ‖ kafka key`.
pub fn stored_key(segment: i64, kafka_key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(SEGMENT_PREFIX + kafka_key.len());
    k.extend_from_slice(&segment_prefix(segment));
    k.extend_from_slice(kafka_key);
    k
}

/// Kafka's `WindowKeySchema.toStoreKeyBinary`.
pub fn window_key(key: &[u8], window_start: i64, seqnum: i32) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + WINDOW_SUFFIX);
    k.extend_from_slice(key);
    k.extend_from_slice(&window_start.to_be_bytes());
    k.extend_from_slice(&seqnum.to_be_bytes());
    k
}

/// The parts of a Kafka window key: record key, window start, seqnum.
pub fn parse_window_key(kafka_key: &[u8]) -> Result<(&[u8], i64, i32)> {
    let n = kafka_key
        .len()
        .checked_sub(WINDOW_SUFFIX)
        .ok_or_else(|| Error::Corruption("a window key is shorter than 12 bytes".into()))?;
    let (key, suffix) = kafka_key.split_at(n);
    let mut t = [0u8; 8];
    t.copy_from_slice(&suffix[..8]);
    let mut s = [0u8; 4];
    s.copy_from_slice(&suffix[8..]);
    Ok((key, i64::from_be_bytes(t), i32::from_be_bytes(s)))
}

/// Kafka's `SessionKeySchema.toBinary(key, start, end)`: `key ‖ end ‖ start`.
pub fn session_key(key: &[u8], start: i64, end: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + SESSION_SUFFIX);
    k.extend_from_slice(key);
    k.extend_from_slice(&end.to_be_bytes());
    k.extend_from_slice(&start.to_be_bytes());
    k
}

/// The parts of a Kafka session key: record key, start, end.
pub fn parse_session_key(kafka_key: &[u8]) -> Result<(&[u8], i64, i64)> {
    let n = kafka_key
        .len()
        .checked_sub(SESSION_SUFFIX)
        .ok_or_else(|| Error::Corruption("a session key is shorter than 16 bytes".into()))?;
    let (key, suffix) = kafka_key.split_at(n);
    let mut e = [0u8; 8];
    e.copy_from_slice(&suffix[..8]);
    let mut s = [0u8; 8];
    s.copy_from_slice(&suffix[8..]);
    Ok((key, i64::from_be_bytes(s), i64::from_be_bytes(e)))
}

/// Kafka's `TimeFirstWindowKeySchema` key (without Kafka's one-byte family prefix) of the
/// window key `kafka_key`: `BE i64 window start ‖ key ‖ BE i32 seqnum`, the layout whose
/// byte order is the order of Kafka's time-ordered window stores.
pub fn time_first_window_key(kafka_key: &[u8]) -> Result<Vec<u8>> {
    let mut k = Vec::with_capacity(kafka_key.len());
    append_time_first_window_key(kafka_key, &mut k)?;
    Ok(k)
}

/// [`time_first_window_key`] appended to `out` (after a segment prefix, say: a stored key
/// is then built in one allocation).
pub fn append_time_first_window_key(kafka_key: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let (key, start, seqnum) = parse_window_key(kafka_key)?;
    out.extend_from_slice(&start.to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&seqnum.to_be_bytes());
    Ok(())
}

/// The window key (`key ‖ start ‖ seqnum`) of a [`time_first_window_key`].
pub fn window_key_of_time_first(time_first: &[u8]) -> Result<Vec<u8>> {
    let mut k = Vec::with_capacity(time_first.len());
    window_key_of_time_first_into(time_first, &mut k)?;
    Ok(k)
}

/// [`window_key_of_time_first`] written into `out` (emptied first), so that a walk over
/// many windows reuses one buffer.
pub fn window_key_of_time_first_into(time_first: &[u8], out: &mut Vec<u8>) -> Result<()> {
    if time_first.len() < WINDOW_SUFFIX {
        return Err(Error::Corruption(
            "a time-ordered window key is shorter than 12 bytes".into(),
        ));
    }
    let (start, rest) = time_first.split_at(8);
    let (key, seqnum) = rest.split_at(rest.len() - 4);
    out.clear();
    out.extend_from_slice(key);
    out.extend_from_slice(start);
    out.extend_from_slice(seqnum);
    Ok(())
}

/// Kafka's `TimeFirstSessionKeySchema` key (without its one-byte family prefix) of the
/// session key `kafka_key`: `BE i64 end ‖ BE i64 start ‖ key`.
pub fn time_first_session_key(kafka_key: &[u8]) -> Result<Vec<u8>> {
    let mut k = Vec::with_capacity(kafka_key.len());
    append_time_first_session_key(kafka_key, &mut k)?;
    Ok(k)
}

/// [`time_first_session_key`] appended to `out`, as [`append_time_first_window_key`].
pub fn append_time_first_session_key(kafka_key: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let (key, start, end) = parse_session_key(kafka_key)?;
    out.extend_from_slice(&end.to_be_bytes());
    out.extend_from_slice(&start.to_be_bytes());
    out.extend_from_slice(key);
    Ok(())
}

/// The session key (`key ‖ end ‖ start`) of a [`time_first_session_key`].
pub fn session_key_of_time_first(time_first: &[u8]) -> Result<Vec<u8>> {
    if time_first.len() < SESSION_SUFFIX {
        return Err(Error::Corruption(
            "a time-ordered session key is shorter than 16 bytes".into(),
        ));
    }
    let (times, key) = time_first.split_at(SESSION_SUFFIX);
    let mut k = Vec::with_capacity(time_first.len());
    k.extend_from_slice(key);
    k.extend_from_slice(times);
    Ok(k)
}

/// Kafka's `OrderedBytes.upperRange(key, maxSuffix)`.
pub fn ordered_upper_range(key: &[u8], max_suffix: &[u8]) -> Vec<u8> {
    let first = max_suffix.first().copied().unwrap_or(0);
    let mut out = Vec::with_capacity(key.len() + max_suffix.len());
    if first == 0 {
        out.extend_from_slice(key);
    } else {
        // The first byte always (Kafka assumes keys of at least one byte), then every
        // following byte while it is at least the suffix's first byte.
        for (i, b) in key.iter().enumerate() {
            if i < 1 || *b >= first {
                out.push(*b);
            } else {
                break;
            }
        }
    }
    out.extend_from_slice(max_suffix);
    out
}

/// Kafka's `OrderedBytes.lowerRange(key, minSuffix)` with an all-zero suffix of `len`.
pub fn ordered_lower_range(key: &[u8], suffix_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + suffix_len);
    out.extend_from_slice(key);
    out.resize(key.len() + suffix_len, 0);
    out
}

/// Kafka's `WindowKeySchema.upperRange(key, to)`.
pub fn window_upper_range(key: &[u8], to: i64) -> Vec<u8> {
    let mut suffix = Vec::with_capacity(WINDOW_SUFFIX);
    suffix.extend_from_slice(&to.to_be_bytes());
    suffix.extend_from_slice(&i32::MAX.to_be_bytes());
    ordered_upper_range(key, &suffix)
}

/// Kafka's `SessionKeySchema.upperRange(key, to)`.
pub fn session_upper_range(key: &[u8], to: i64) -> Vec<u8> {
    let mut suffix = Vec::with_capacity(SESSION_SUFFIX);
    suffix.extend_from_slice(&i64::MAX.to_be_bytes());
    suffix.extend_from_slice(&to.to_be_bytes());
    ordered_upper_range(key, &suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_first_keys_round_trip_and_order_by_time_first() {
        let w = window_key(b"key", 42, 7);
        let tf = time_first_window_key(&w).unwrap();
        assert_eq!(&tf[..8], &42i64.to_be_bytes());
        assert_eq!(window_key_of_time_first(&tf).unwrap(), w);
        // A later window of a smaller key sorts after an earlier window of a larger key.
        let a = time_first_window_key(&window_key(b"zz", 1, 0)).unwrap();
        let b = time_first_window_key(&window_key(b"a", 2, 0)).unwrap();
        assert!(a < b);
        let s = session_key(b"key", 5, 9);
        let tf = time_first_session_key(&s).unwrap();
        assert_eq!(&tf[..8], &9i64.to_be_bytes());
        assert_eq!(&tf[8..16], &5i64.to_be_bytes());
        assert_eq!(session_key_of_time_first(&tf).unwrap(), s);
        assert!(window_key_of_time_first(&[0; 11]).is_err());
        assert!(session_key_of_time_first(&[0; 15]).is_err());
    }

    #[test]
    fn segment_prefixes_order_like_segment_ids() {
        let ids = [i64::MIN, -7, -1, 0, 1, 2, 1 << 40, i64::MAX];
        for w in ids.windows(2) {
            assert!(segment_prefix(w[0]) < segment_prefix(w[1]), "{w:?}");
        }
        for id in ids {
            let k = stored_key(id, b"abc");
            assert_eq!(split_stored(&k).unwrap(), (id, &b"abc"[..]));
        }
        assert_eq!(segment_id(-5, 60), 0, "Java truncates towards zero");
        assert_eq!(segment_id(119, 60), 1);
        assert!(split_stored(b"short").is_err());
    }

    #[test]
    fn keys_round_trip_in_kafka_layout() {
        let k = window_key(b"k", 1000, 7);
        assert_eq!(
            k,
            [b"k".as_slice(), &1000i64.to_be_bytes(), &7i32.to_be_bytes()].concat()
        );
        assert_eq!(parse_window_key(&k).unwrap(), (&b"k"[..], 1000, 7));
        let s = session_key(b"k", 10, 20);
        assert_eq!(
            s,
            [b"k".as_slice(), &20i64.to_be_bytes(), &10i64.to_be_bytes()].concat()
        );
        assert_eq!(parse_session_key(&s).unwrap(), (&b"k"[..], 10, 20));
        assert!(parse_window_key(&[0; 11]).is_err());
        assert!(parse_session_key(&[0; 15]).is_err());
    }

    #[test]
    fn upper_range_keeps_kafkas_truncation() {
        // First suffix byte 0: the whole key.
        assert_eq!(window_upper_range(b"ab", 5)[..2], *b"ab");
        // Session upper ranges start with Long.MAX's 0x7F: bytes below 0x7F after the first
        // are cut, as in OrderedBytes.upperRange.
        let r = session_upper_range(b"a\x01\x90", 3);
        assert_eq!(&r[..1], b"a");
        assert_eq!(r.len(), 1 + 16);
        let r = session_upper_range(b"\x90\x91\x05", 3);
        assert_eq!(&r[..2], b"\x90\x91");
        assert_eq!(ordered_lower_range(b"x", 3), b"x\0\0\0");
    }
}
