//! Byte layouts. Everything that is written to disk, or handed to Kafka Streams, is encoded
//! and decoded here and nowhere else, so the compatibility contract of DESIGN.md §3 has one
//! home.

pub mod meta;
pub mod segmented;
pub mod value;

pub use meta::{CommittedState, TopicPartition, ValueFormat};
pub use value::ValueAndTimestamp;

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
