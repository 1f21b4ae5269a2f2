//! Byte layouts. Everything that is written to disk, or handed to Kafka Streams, is encoded
//! and decoded here and nowhere else, so the compatibility contract of DESIGN.md §3 has one
//! home.

pub mod headers;
pub mod meta;
pub mod segmented;
pub mod value;
pub mod versioned;

pub use headers::{Header, ValueTimestampHeaders};
pub use meta::{CommittedState, TopicPartition, ValueFormat};
pub use value::ValueAndTimestamp;

/// Converts one value of an older format to a later one (see [`upgrade_conversion`]).
pub type Conversion = fn(&[u8]) -> Vec<u8>;

/// The conversion of a value stored in format `from` to format `to`, for a store being
/// upgraded (KIP-258, KIP-1271): the timestamp of a plain value is unknown (-1), the headers
/// of a plain or timestamped value are empty. `None` when `to` is not a later format.
pub fn upgrade_conversion(from: ValueFormat, to: ValueFormat) -> Option<Conversion> {
    match (from, to) {
        (ValueFormat::Plain, ValueFormat::Timestamped) => Some(value::from_plain),
        (ValueFormat::Plain, ValueFormat::Headers) => Some(headers::from_plain),
        (ValueFormat::Timestamped, ValueFormat::Headers) => Some(headers::from_timestamped),
        _ => None,
    }
}

/// Checks that `raw` is a well-formed value of `format` (any bytes for a plain store).
pub fn check_layout(format: ValueFormat, raw: &[u8]) -> crate::Result<()> {
    match format {
        ValueFormat::Plain => Ok(()),
        ValueFormat::Timestamped => value::split(raw).map(drop),
        ValueFormat::Headers => headers::check(raw),
    }
}

/// Largest key kstate accepts, in bytes (4 MiB). Kafka records are far smaller by default;
/// the limit keeps a single key from dominating a write batch or the uncommitted buffer.
pub const MAX_KEY_BYTES: usize = 4 << 20;

/// Largest value kstate accepts, in bytes (256 MiB, timestamp prefix included).
pub const MAX_VALUE_BYTES: usize = 256 << 20;

/// Rejects keys over [`MAX_KEY_BYTES`]. Empty keys are valid (a Kafka `String` key `""`).
pub fn check_key(key: &[u8]) -> crate::Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(crate::Error::KeyTooLarge {
            len: key.len(),
            max: MAX_KEY_BYTES,
        });
    }
    Ok(())
}

/// Rejects values over [`MAX_VALUE_BYTES`]. Empty values are valid.
pub fn check_value(value: &[u8]) -> crate::Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(crate::Error::ValueTooLarge {
            len: value.len(),
            max: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

/// The smallest key strictly greater than every key that starts with `prefix`, or `None`
/// when no such key exists (the prefix is empty or all `0xFF`). Used to turn a prefix scan
/// into a half-open range under the bytewise order.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_successor_covers_edge_cases() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(&[0x01, 0xFF]), Some(vec![0x02]));
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
        assert_eq!(prefix_successor(b""), None);
    }

    #[test]
    fn limits_are_enforced_and_empty_is_fine() {
        assert!(check_key(b"").is_ok());
        assert!(check_value(b"").is_ok());
        let big = vec![0u8; MAX_KEY_BYTES + 1];
        assert_eq!(
            check_key(&big).unwrap_err().code(),
            crate::ErrorCode::KeyTooLarge
        );
        assert!(check_key(&big[..MAX_KEY_BYTES]).is_ok());
    }
}
