//! What Kafka Streams 4.3+ keeps in the `offsets` column family of its RocksDB key-value
//! stores (KIP-1035), read when kstate adopts such a store:
//!
//! | key | value |
//! |---|---|
//! | `<topic>-<partition>` (UTF-8) | changelog offset, 8-byte big-endian |
//! | `status` | 8-byte big-endian: 1 while open, 0 once closed |
//! | `position` | Kafka's `PositionSerde` v0 (may carry trailing zero padding) |
//!
//! [`read`] imports it when kstate adopts a Kafka store; [`entries`] writes it back when
//! `kstate export --to kafka` hands a store to Kafka.

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

/// Kafka's `Position.merge` of two positions in the adapter's layout (see
/// [`position_to_adapter`]): every partition of either, at the larger offset. Kafka's
/// segmented stores keep one position per segment database and merge them when they open.
pub(crate) fn merge_adapter_positions(a: &[u8], b: &[u8]) -> Result<Vec<u8>> {
    let mut merged = parse_adapter_position(a)?;
    for (tp, offset) in parse_adapter_position(b)? {
        let at = merged.entry(tp).or_insert(offset);
        *at = (*at).max(offset);
    }
    encode_position(&merged, Layout::Adapter)
}

/// The reverse of [`position_to_adapter`]: a position in the adapter's layout as Kafka's
/// `PositionSerde` v0 writes it (without padding), for a store handed back to Kafka; `None`
/// when `raw` is not exactly one adapter position (metadata a C caller chose, say), which
/// Kafka could not read.
pub(crate) fn adapter_to_position(raw: &[u8]) -> Option<Vec<u8>> {
    encode_position(&parse_adapter_position(raw).ok()?, Layout::Kafka).ok()
}

/// The two layouts of a position: they differ in their first byte and topic length prefix.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Kafka's `PositionSerde` v0: `[i8 0]`, topic lengths as `i32`.
    Kafka,
    /// The Java adapter's: `[u8 1]`, topic lengths as `u16`.
    Adapter,
}

fn encode_position(position: &BTreeMap<(Vec<u8>, i32), i64>, layout: Layout) -> Result<Vec<u8>> {
    let mut topics: BTreeMap<&[u8], Vec<(i32, i64)>> = BTreeMap::new();
    for ((topic, partition), offset) in position {
        topics
            .entry(topic.as_slice())
            .or_default()
            .push((*partition, *offset));
    }
    let int = |n: usize| {
        i32::try_from(n).map_err(|_| Error::Corruption("a position is too large".into()))
    };
    let mut out = vec![u8::from(layout == Layout::Adapter)];
    out.extend_from_slice(&int(topics.len())?.to_be_bytes());
    for (topic, partitions) in topics {
        match layout {
            Layout::Kafka => out.extend_from_slice(&int(topic.len())?.to_be_bytes()),
            Layout::Adapter => out.extend_from_slice(
                &u16::try_from(topic.len())
                    .map_err(|_| Error::Corruption("a position topic is too long".into()))?
                    .to_be_bytes(),
            ),
        }
        out.extend_from_slice(topic);
        out.extend_from_slice(&int(partitions.len())?.to_be_bytes());
        for (partition, offset) in partitions {
            out.extend_from_slice(&partition.to_be_bytes());
            out.extend_from_slice(&offset.to_be_bytes());
        }
    }
    Ok(out)
}

/// The partitions of a position in the adapter's layout, keyed by topic bytes and partition.
fn parse_adapter_position(raw: &[u8]) -> Result<BTreeMap<(Vec<u8>, i32), i64>> {
    let bad = || Error::Corruption("a converted Kafka position is malformed".into());
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8]> {
        let s = raw.get(at..at + n).ok_or_else(bad)?;
        at += n;
        Ok(s)
    };
    if take(1)? != [1] {
        return Err(bad());
    }
    let int = |b: &[u8]| i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let mut out = BTreeMap::new();
    for _ in 0..int(take(4)?).max(0) {
        let len = take(2)?;
        let topic = take(usize::from(u16::from_be_bytes([len[0], len[1]])))?.to_vec();
        for _ in 0..int(take(4)?).max(0) {
            let partition = int(take(4)?);
            let o = take(8)?;
            let mut b = [0u8; 8];
            b.copy_from_slice(o);
            out.insert((topic.clone(), partition), i64::from_be_bytes(b));
        }
    }
    if at != raw.len() {
        return Err(bad());
    }
    Ok(out)
}

/// The `offsets` family of a Kafka store closed cleanly at this commit: every committed
/// offset, `status` 0, and `position` when the commit metadata is the adapter's position.
pub(crate) fn entries(
    offsets: &BTreeMap<TopicPartition, i64>,
    position: Option<&[u8]>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = offsets
        .iter()
        .map(|(tp, offset)| {
            (
                format!("{}-{}", tp.topic, tp.partition).into_bytes(),
                offset.to_be_bytes().to_vec(),
            )
        })
        .collect();
    out.push((b"status".to_vec(), 0i64.to_be_bytes().to_vec()));
    if let Some(p) = position {
        out.push((b"position".to_vec(), p.to_vec()));
    }
    out
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
        // and back: Kafka's bytes without the padding
        assert_eq!(
            adapter_to_position(&want).unwrap(),
            kafka[..kafka.len() - 40]
        );
        assert_eq!(adapter_to_position(&want[..want.len() - 1]), None);
        let mut trailing = want.clone();
        trailing.push(0);
        assert_eq!(
            adapter_to_position(&trailing),
            None,
            "not exactly a position"
        );
        assert_eq!(adapter_to_position(b"opaque C metadata"), None);
    }

    #[test]
    fn entries_are_what_read_imports() {
        let mut offsets = BTreeMap::new();
        offsets.insert(TopicPartition::new("app-s-changelog", 3), 41);
        offsets.insert(TopicPartition::new("a-b", 0), -4);
        let e = entries(&offsets, Some(&[0, 0, 0, 0, 0]));
        let want: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b"a-b-0".to_vec(), (-4i64).to_be_bytes().to_vec()),
            (b"app-s-changelog-3".to_vec(), 41i64.to_be_bytes().to_vec()),
            (b"status".to_vec(), vec![0; 8]),
            (b"position".to_vec(), vec![0, 0, 0, 0, 0]),
        ];
        assert_eq!(e, want);
    }

    #[test]
    fn positions_merge_at_the_larger_offset() {
        let kafka = |entries: &[(&str, i32, i64)]| {
            let mut raw = vec![0u8];
            raw.extend_from_slice(&(entries.len() as i32).to_be_bytes());
            for (topic, partition, offset) in entries {
                raw.extend_from_slice(&(topic.len() as i32).to_be_bytes());
                raw.extend_from_slice(topic.as_bytes());
                raw.extend_from_slice(&1i32.to_be_bytes());
                raw.extend_from_slice(&partition.to_be_bytes());
                raw.extend_from_slice(&offset.to_be_bytes());
            }
            position_to_adapter(&raw).unwrap()
        };
        let a = kafka(&[("in", 0, 7), ("other", 1, 3)]);
        let b = kafka(&[("in", 0, 9), ("in", 2, 1)]);
        let merged = parse_adapter_position(&merge_adapter_positions(&a, &b).unwrap()).unwrap();
        let want: BTreeMap<(Vec<u8>, i32), i64> = [
            ((b"in".to_vec(), 0), 9),
            ((b"in".to_vec(), 2), 1),
            ((b"other".to_vec(), 1), 3),
        ]
        .into_iter()
        .collect();
        assert_eq!(merged, want);
        assert!(merge_adapter_positions(&a, &[0, 1]).is_err());
        // And back to Kafka's layout, which converts to the same adapter bytes.
        let back = adapter_to_position(&a).unwrap();
        assert_eq!(back[0], 0);
        assert_eq!(position_to_adapter(&back).unwrap(), a);
    }
}
