//! Kafka's timestamped-with-headers value layout (KIP-1271, Kafka Streams 4.3+), as written
//! by `ValueTimestampHeadersSerializer` and stored by `RocksDBTimestampedStoreWithHeaders` in
//! its `keyValueWithTimestampAndHeaders` column family:
//!
//! ```text
//! [varint headersSize][headers: headersSize bytes][8-byte big-endian timestamp][value]
//! headers = [varint count] { [varint keyLen][key UTF-8][varint valueLen or -1][value] }*
//! ```
//!
//! Varints are Kafka's `ByteUtils.writeVarint`: zig-zag encoded, then 7 bits per byte, low
//! group first. No headers (none, or an empty set) is `headersSize = 0` with no count at all;
//! a header whose value is null has `valueLen = -1` and no value bytes (Kafka's
//! `HeadersSerializer`).

use super::value::{TIMESTAMP_BYTES, UNKNOWN_TIMESTAMP};
use crate::{Error, Result};

/// One record header: a UTF-8 key and a value that may be null.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// Header key.
    pub key: String,
    /// Header value; `None` is Kafka's null value.
    pub value: Option<Vec<u8>>,
}

impl Header {
    /// Builds one.
    pub fn new(key: impl Into<String>, value: Option<Vec<u8>>) -> Self {
        Header {
            key: key.into(),
            value,
        }
    }
}

/// A value with the timestamp and headers of the record that produced it (Kafka's
/// `ValueTimestampHeaders`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ValueTimestampHeaders {
    /// The value bytes.
    pub value: Vec<u8>,
    /// The record timestamp.
    pub timestamp: i64,
    /// The record headers, in order (duplicate keys allowed, as in Kafka).
    pub headers: Vec<Header>,
}

impl ValueTimestampHeaders {
    /// Builds one.
    pub fn new(value: impl Into<Vec<u8>>, timestamp: i64, headers: Vec<Header>) -> Self {
        ValueTimestampHeaders {
            value: value.into(),
            timestamp,
            headers,
        }
    }

    /// Encodes into the Kafka layout.
    pub fn encode(&self) -> Result<Vec<u8>> {
        encode(&self.value, self.timestamp, &self.headers)
    }

    /// Decodes the Kafka layout, checking every length and that header keys are UTF-8.
    pub fn decode(raw: &[u8]) -> Result<Self> {
        let parts = split(raw)?;
        Ok(ValueTimestampHeaders {
            value: parts.value.to_vec(),
            timestamp: parts.timestamp,
            headers: decode_headers(parts.headers)?,
        })
    }
}

/// The three parts of an encoded value, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts<'a> {
    /// The serialized headers (`headersSize` bytes; empty when there are none).
    pub headers: &'a [u8],
    /// The timestamp.
    pub timestamp: i64,
    /// The value bytes.
    pub value: &'a [u8],
}

fn invalid(what: impl std::fmt::Display) -> Error {
    Error::InvalidValue(format!("headers-format value: {what}"))
}

/// Appends `n` as a Kafka varint (zig-zag, then LEB128).
fn put_varint(out: &mut Vec<u8>, n: i32) {
    let mut v = ((n << 1) ^ (n >> 31)) as u32;
    while v >= 0x80 {
        out.push((v as u8 & 0x7F) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a Kafka varint from the front of `buf`, advancing it.
fn take_varint(buf: &mut &[u8]) -> Result<i32> {
    let mut v: u32 = 0;
    for i in 0..5 {
        let (&b, rest) = buf
            .split_first()
            .ok_or_else(|| invalid("truncated varint"))?;
        *buf = rest;
        if i == 4 && b & 0xF0 != 0 {
            return Err(invalid("varint longer than 32 bits"));
        }
        v |= u32::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(((v >> 1) as i32) ^ -((v & 1) as i32));
        }
    }
    Err(invalid("varint longer than 5 bytes"))
}

fn take<'a>(buf: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8]> {
    if buf.len() < n {
        return Err(invalid(format!(
            "{what} needs {n} bytes, {} remain",
            buf.len()
        )));
    }
    let (head, tail) = buf.split_at(n);
    *buf = tail;
    Ok(head)
}

fn len_of(n: usize, what: &str) -> Result<i32> {
    i32::try_from(n).map_err(|_| invalid(format!("{what} of {n} bytes is too long")))
}

/// Serializes `headers` as Kafka's `HeadersSerializer` does (empty for no headers).
pub fn encode_headers(headers: &[Header]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    if headers.is_empty() {
        return Ok(out);
    }
    put_varint(&mut out, len_of(headers.len(), "header count")?);
    for h in headers {
        put_varint(&mut out, len_of(h.key.len(), "header key")?);
        out.extend_from_slice(h.key.as_bytes());
        match &h.value {
            Some(v) => {
                put_varint(&mut out, len_of(v.len(), "header value")?);
                out.extend_from_slice(v);
            }
            None => put_varint(&mut out, -1),
        }
    }
    Ok(out)
}

/// Parses serialized headers (the `headers` part of [`Parts`]).
pub fn decode_headers(mut buf: &[u8]) -> Result<Vec<Header>> {
    if buf.is_empty() {
        return Ok(Vec::new());
    }
    let count = take_varint(&mut buf)?;
    let count = usize::try_from(count).map_err(|_| invalid("negative header count"))?;
    // Each header takes at least two bytes: a count beyond that is damage, not a reason
    // to reserve memory.
    let mut headers = Vec::with_capacity(count.min(buf.len() / 2));
    for _ in 0..count {
        let key_len = usize::try_from(take_varint(&mut buf)?)
            .map_err(|_| invalid("negative header key length"))?;
        let key = std::str::from_utf8(take(&mut buf, key_len, "header key")?)
            .map_err(|_| invalid("header key is not UTF-8"))?
            .to_string();
        let value = match take_varint(&mut buf)? {
            -1 => None,
            n if n < 0 => return Err(invalid(format!("header value length {n}"))),
            n => Some(take(&mut buf, n as usize, "header value")?.to_vec()),
        };
        headers.push(Header { key, value });
    }
    if !buf.is_empty() {
        return Err(invalid(format!(
            "{} bytes after the last header",
            buf.len()
        )));
    }
    Ok(headers)
}

/// Encodes `value` with `timestamp` and `headers` into the Kafka layout.
pub fn encode(value: &[u8], timestamp: i64, headers: &[Header]) -> Result<Vec<u8>> {
    let serialized = encode_headers(headers)?;
    let mut out = Vec::with_capacity(5 + serialized.len() + TIMESTAMP_BYTES + value.len());
    put_varint(&mut out, len_of(serialized.len(), "headers")?);
    out.extend_from_slice(&serialized);
    out.extend_from_slice(&timestamp.to_be_bytes());
    out.extend_from_slice(value);
    Ok(out)
}

/// Splits an encoded value into its parts without copying. Checks the outer lengths only;
/// [`decode_headers`] checks the headers themselves.
pub fn split(raw: &[u8]) -> Result<Parts<'_>> {
    let mut buf = raw;
    let size = take_varint(&mut buf)?;
    let size = usize::try_from(size).map_err(|_| invalid(format!("headersSize {size}")))?;
    let headers = take(&mut buf, size, "headers")?;
    let ts = take(&mut buf, TIMESTAMP_BYTES, "timestamp")?;
    let mut b = [0u8; TIMESTAMP_BYTES];
    b.copy_from_slice(ts);
    Ok(Parts {
        headers,
        timestamp: i64::from_be_bytes(b),
        value: buf,
    })
}

/// Checks that `raw` is a well-formed headers-format value (every length, header keys
/// UTF-8), as kstate requires of values written to a headers-format store.
pub fn check(raw: &[u8]) -> Result<()> {
    decode_headers(split(raw)?.headers).map(drop)
}

/// Splits a session aggregate in Kafka's headers layout (`AggregationWithHeaders`, KIP-1271:
/// `[varint headersSize][headers][aggregation]`, no timestamp) into its serialized headers
/// and the aggregation, without copying. Checks the outer lengths only.
pub fn split_aggregation(raw: &[u8]) -> Result<(&[u8], &[u8])> {
    let mut buf = raw;
    let size = take_varint(&mut buf)?;
    let size = usize::try_from(size).map_err(|_| invalid(format!("headersSize {size}")))?;
    let headers = take(&mut buf, size, "headers")?;
    Ok((headers, buf))
}

/// Checks that `raw` is a well-formed headers-format session aggregate (every length,
/// header keys UTF-8).
pub fn check_aggregation(raw: &[u8]) -> Result<()> {
    decode_headers(split_aggregation(raw)?.0).map(drop)
}

/// Converts a plain value to a headers layout with no headers: a `0x00` byte in front (Kafka's
/// `HeadersBytesStore.convertToHeaderFormat`, which its headers-format session segments apply
/// to values of their plain `default` family).
pub fn prefix_no_headers(raw: &[u8]) -> Vec<u8> {
    from_timestamped(raw)
}

/// The timestamped layout (`[ts][value]`) of an encoded value: its headers dropped.
pub fn to_timestamped(raw: &[u8]) -> Result<Vec<u8>> {
    let p = split(raw)?;
    Ok(super::value::encode(p.value, p.timestamp))
}

/// Converts a timestamped value (`[ts][value]`) to this layout with no headers, as Kafka's
/// `HeadersBytesStore.convertToHeaderFormat` does: a `0x00` byte in front.
pub fn from_timestamped(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + raw.len());
    out.push(0);
    out.extend_from_slice(raw);
    out
}

/// Converts a plain value to this layout with no headers and an unknown timestamp (-1), as
/// Kafka's `HeadersBytesStore.convertFromPlainToHeaderFormat` does.
pub fn from_plain(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + TIMESTAMP_BYTES + value.len());
    out.push(0);
    out.extend_from_slice(&UNKNOWN_TIMESTAMP.to_be_bytes());
    out.extend_from_slice(value);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_headers_match_kafkas_conversions() {
        // HeadersBytesStore.convertToHeaderFormat: 0x00 then the timestamped bytes.
        let ts = super::super::value::encode(b"v", 5);
        assert_eq!(from_timestamped(&ts), encode(b"v", 5, &[]).unwrap());
        assert_eq!(from_timestamped(&ts)[0], 0);
        // convertFromPlainToHeaderFormat: 0x00, eight 0xFF, then the value.
        let mut expected = vec![0u8];
        expected.extend_from_slice(&[0xFF; 8]);
        expected.extend_from_slice(b"abc");
        assert_eq!(from_plain(b"abc"), expected);
        assert_eq!(split(&expected).unwrap().timestamp, -1);
    }

    #[test]
    fn layout_with_headers_is_kafkas() {
        // Hand-encoded per HeadersSerializer: count 2 -> 0x04; "a" (len 1 -> 0x02) value
        // [7] (len 1 -> 0x02); "bc" (0x04) null value (-1 -> 0x01). headersSize = 9 -> 0x12.
        let raw = encode(
            b"val",
            0x0102_0304_0506_0708,
            &[Header::new("a", Some(vec![7])), Header::new("bc", None)],
        )
        .unwrap();
        let mut expected = vec![0x12, 0x04, 0x02, b'a', 0x02, 7, 0x04, b'b', b'c', 0x01];
        expected.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        expected.extend_from_slice(b"val");
        assert_eq!(raw, expected);
        let back = ValueTimestampHeaders::decode(&raw).unwrap();
        assert_eq!(back.value, b"val");
        assert_eq!(back.timestamp, 0x0102_0304_0506_0708);
        assert_eq!(back.headers[1], Header::new("bc", None));
        assert_eq!(
            to_timestamped(&raw).unwrap(),
            super::super::value::encode(b"val", 0x0102_0304_0506_0708)
        );
    }

    #[test]
    fn varints_round_trip_at_every_width() {
        for n in [
            0,
            1,
            -1,
            63,
            -64,
            64,
            8191,
            8192,
            i32::MAX,
            i32::MIN,
            1 << 20,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, n);
            let mut s = out.as_slice();
            assert_eq!(take_varint(&mut s).unwrap(), n, "{n}");
            assert!(s.is_empty());
        }
        let mut long_header = Vec::new();
        put_varint(&mut long_header, 300);
        assert_eq!(long_header, [0xD8, 0x04]);
    }

    #[test]
    fn damage_is_rejected() {
        let good = encode(b"v", 1, &[Header::new("k", Some(b"x".to_vec()))]).unwrap();
        check(&good).unwrap();
        // Any cut into the headers or the timestamp is caught (a shorter value is not).
        for cut in 0..good.len() - 1 {
            assert!(check(&good[..cut]).is_err(), "cut {cut}");
        }
        assert!(split(&[0x01]).is_err(), "negative headersSize");
        assert!(split(&[0x00, 1, 2]).is_err(), "short timestamp");
        assert!(
            check(&[0x02, 0x03, 0, 0, 0, 0, 0, 0, 0, 0]).is_err(),
            "negative count"
        );
        assert!(split(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]).is_err());
        let bad_utf8 = {
            let mut raw = vec![0x08, 0x02, 0x02, 0xC3, 0x01];
            raw.extend_from_slice(&[0; 8]);
            raw
        };
        assert!(check(&bad_utf8).is_err());
    }
}
