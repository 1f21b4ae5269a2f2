//! What Kafka Streams 4.3+ keeps in the `offsets` column family of its RocksDB key-value
//! stores (KIP-1035), read when kstate adopts such a store:
//!
//! | key | value |
//! |---|---|
//! | `<topic>-<partition>` (UTF-8) | changelog offset, 8-byte big-endian |
//! | `status` | 8-byte big-endian: 1 while open, 0 once closed |
//! | `position` | Kafka's `PositionSerde` v0 (may carry trailing zero padding) |

use std::collections::BTreeMap;

use crate::engine::{Engine, Family, KeyRange};
use crate::format::TopicPartition;
use crate::{Error, Result};

/// The contents of a Kafka store's `offsets` family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KafkaOffsets {
    /// Committed changelog offsets (`-4` is Kafka's "unknown").
    pub offsets: BTreeMap<TopicPartition, i64>,
    /// The store was left open (not closed cleanly).
    pub left_open: bool,
    /// The store's position, re-encoded in the Kafka Streams adapter's metadata layout.
    pub position: Option<Vec<u8>>,
}

fn long(key: &[u8], raw: &[u8]) -> Result<i64> {
    <[u8; 8]>::try_from(raw)
        .map(i64::from_be_bytes)
        .map_err(|_| {
            Error::Corruption(format!(
                "Kafka offsets entry {} has {} bytes, not 8",
                String::from_utf8_lossy(key),
                raw.len()
            ))
        })
}

/// Reads Kafka's `offsets` family.
pub(crate) fn read(engine: &dyn Engine, family: Family) -> Result<KafkaOffsets> {
    let mut out = KafkaOffsets::default();
    let mut it = engine.iter(family, &KeyRange::all(), false)?;
    while let Some((key, value)) = it.next_entry()? {
        out.add(&key, &value)?;
    }
    Ok(out)
}

impl KafkaOffsets {
    /// Takes in one entry of the family (a pure step of [`read`], so that it can be fuzzed
    /// without an engine).
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        match key {
            b"status" => self.left_open = long(key, value)? != 0,
            b"position" => self.position = Some(position_to_adapter(value)?),
            _ => {
                let text = std::str::from_utf8(key)
                    .map_err(|_| Error::Corruption("a Kafka offsets key is not UTF-8".into()))?;
                let (topic, partition) = text
                    .rsplit_once('-')
                    .and_then(|(t, p)| Some((t, p.parse::<i32>().ok()?)))
                    .ok_or_else(|| {
                        Error::Corruption(format!(
                            "Kafka offsets key {text:?} is not <topic>-<partition>"
                        ))
                    })?;
                self.offsets
                    .insert(TopicPartition::new(topic, partition), long(key, value)?);
            }
        }
        Ok(())
    }
}

/// Converts Kafka's `PositionSerde` v0 (`[i8 0][i32 topics]{[i32 len][topic][i32
/// partitions]{[i32 partition][i64 offset]}}`, padding ignored) into the layout the Kafka
/// Streams adapter stores as commit metadata (`[u8 1][i32 topics]{[u16 len][topic][i32
/// partitions]{[i32 partition][i64 offset]}}`, Java's `DataOutput`).
pub(crate) fn position_to_adapter(raw: &[u8]) -> Result<Vec<u8>> {
    let bad = || Error::Corruption("Kafka's stored position is malformed".into());
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8]> {
        let s = raw.get(at..at + n).ok_or_else(bad)?;
        at += n;
        Ok(s)
    };
    let int = |b: &[u8]| i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    if take(1)? != [0] {
        return Err(bad());
    }
    let topics = int(take(4)?);
    let mut out = vec![1u8];
    out.extend_from_slice(&topics.to_be_bytes());
    for _ in 0..topics.max(0) {
        let len = usize::try_from(int(take(4)?)).map_err(|_| bad())?;
        let topic = take(len)?;
        let short = u16::try_from(len).map_err(|_| bad())?;
        out.extend_from_slice(&short.to_be_bytes());
        out.extend_from_slice(topic);
        let partitions = int(take(4)?);
        out.extend_from_slice(&partitions.to_be_bytes());
        for _ in 0..partitions.max(0) {
            out.extend_from_slice(take(12)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_is_converted_and_padding_ignored() {
        let mut kafka = vec![0u8];
        kafka.extend_from_slice(&1i32.to_be_bytes());
        kafka.extend_from_slice(&5i32.to_be_bytes());
        kafka.extend_from_slice(b"input");
        kafka.extend_from_slice(&1i32.to_be_bytes());
        kafka.extend_from_slice(&3i32.to_be_bytes());
        kafka.extend_from_slice(&42i64.to_be_bytes());
        kafka.extend_from_slice(&[0; 40]);
        let mut want = vec![1u8];
        want.extend_from_slice(&1i32.to_be_bytes());
        want.extend_from_slice(&5u16.to_be_bytes());
        want.extend_from_slice(b"input");
        want.extend_from_slice(&1i32.to_be_bytes());
        want.extend_from_slice(&3i32.to_be_bytes());
        want.extend_from_slice(&42i64.to_be_bytes());
        assert_eq!(position_to_adapter(&kafka).unwrap(), want);
        assert!(position_to_adapter(&kafka[..10]).is_err());
        assert!(position_to_adapter(&[1, 0, 0, 0, 0]).is_err());
    }
}
