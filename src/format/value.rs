//! Kafka's timestamped value layout: `[8-byte big-endian i64 timestamp][value bytes]`, as
//! written by `ValueAndTimestampSerializer` and stored by `RocksDBTimestampedStore`.

use crate::{Error, Result};

/// Length of the timestamp prefix.
pub const TIMESTAMP_BYTES: usize = 8;

/// Timestamp given to a plain value whose record timestamp is unknown (KIP-258 upgrade).
pub const UNKNOWN_TIMESTAMP: i64 = -1;

/// A value together with the timestamp of the record that produced it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ValueAndTimestamp {
    /// The value bytes, without the timestamp prefix.
    pub value: Vec<u8>,
    /// The record timestamp (milliseconds since the epoch in Kafka Streams).
    pub timestamp: i64,
}

impl ValueAndTimestamp {
    /// Builds one from parts.
    pub fn new(value: impl Into<Vec<u8>>, timestamp: i64) -> Self {
        ValueAndTimestamp {
            value: value.into(),
            timestamp,
        }
    }

    /// Encodes into the Kafka layout.
    pub fn encode(&self) -> Vec<u8> {
        encode(&self.value, self.timestamp)
    }

    /// Decodes the Kafka layout, rejecting anything shorter than the timestamp.
    pub fn decode(raw: &[u8]) -> Result<Self> {
        let (timestamp, value) = split(raw)?;
        Ok(ValueAndTimestamp {
            value: value.to_vec(),
            timestamp,
        })
    }
}

/// Values up to this size (with their timestamp) are assembled on the stack by
/// [`encode_shared`].
const STACK_ENCODE_BYTES: usize = 512;

/// Encodes like [`encode`], into a shared buffer. A value that fits in
/// [`STACK_ENCODE_BYTES`] (most Kafka values) costs one allocation: it is assembled on the
/// stack and copied once into the `Arc`. Collecting the bytes from an iterator into the
/// `Arc` did the same with a byte-by-byte loop, 3.7% of the CPU of kstate's side of the
/// Criterion put benchmark (100-byte values).
pub(crate) fn encode_shared(value: &[u8], timestamp: i64) -> std::sync::Arc<[u8]> {
    let len = TIMESTAMP_BYTES + value.len();
    if len > STACK_ENCODE_BYTES {
        return encode(value, timestamp).into();
    }
    let mut buf = [0u8; STACK_ENCODE_BYTES];
    buf[..TIMESTAMP_BYTES].copy_from_slice(&timestamp.to_be_bytes());
    buf[TIMESTAMP_BYTES..len].copy_from_slice(value);
    std::sync::Arc::from(&buf[..len])
}

/// Encodes `value` with `timestamp` into the Kafka layout.
pub fn encode(value: &[u8], timestamp: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(TIMESTAMP_BYTES + value.len());
    out.extend_from_slice(&timestamp.to_be_bytes());
    out.extend_from_slice(value);
    out
}

/// Splits a Kafka-layout value into its timestamp and value bytes without copying.
pub fn split(raw: &[u8]) -> Result<(i64, &[u8])> {
    if raw.len() < TIMESTAMP_BYTES {
        return Err(Error::InvalidValue(format!(
            "timestamped value has {} bytes, needs at least {TIMESTAMP_BYTES} for the timestamp",
            raw.len()
        )));
    }
    let (ts, value) = raw.split_at(TIMESTAMP_BYTES);
    let mut buf = [0u8; TIMESTAMP_BYTES];
    buf.copy_from_slice(ts);
    Ok((i64::from_be_bytes(buf), value))
}

/// Converts a plain (legacy) value to the timestamped layout with an unknown timestamp, as
/// Kafka's `RocksDBTimestampedStore` does when it meets a value in the `default` family.
pub fn from_plain(value: &[u8]) -> Vec<u8> {
    encode(value, UNKNOWN_TIMESTAMP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_shared_equals_encode_on_both_sides_of_the_stack_buffer() {
        for len in [0, 1, 100, 503, 504, 505, 4096] {
            let value: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            for ts in [0, -1, i64::MIN, 1_700_000_000_000] {
                assert_eq!(
                    &encode_shared(&value, ts)[..],
                    &encode(&value, ts)[..],
                    "{len}-byte value, timestamp {ts}"
                );
            }
        }
    }

    #[test]
    fn layout_matches_kafka() {
        // ValueAndTimestampSerializer: 8-byte big-endian timestamp, then the raw value.
        let raw = encode(b"v", 0x0102_0304_0506_0708);
        assert_eq!(raw, [1, 2, 3, 4, 5, 6, 7, 8, b'v']);
        let neg = encode(b"", -1);
        assert_eq!(neg, [0xFF; 8]);
        assert_eq!(
            ValueAndTimestamp::decode(&raw).unwrap(),
            ValueAndTimestamp::new(b"v".to_vec(), 0x0102_0304_0506_0708)
        );
    }

    #[test]
    fn short_values_are_rejected() {
        let err = ValueAndTimestamp::decode(&[0; 7]).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::InvalidValue);
        assert_eq!(split(&[0; 8]).unwrap(), (0, &[][..]));
    }

    #[test]
    fn plain_values_get_unknown_timestamp() {
        let raw = from_plain(b"abc");
        assert_eq!(split(&raw).unwrap(), (UNKNOWN_TIMESTAMP, &b"abc"[..]));
    }
}
