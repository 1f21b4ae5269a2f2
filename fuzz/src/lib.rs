//! Helpers shared by kstate's fuzz targets: bounded structured input and reference
//! encoders written from the format descriptions (not from kstate's encoders), so that a
//! round trip compares kstate against an independent reading of the layout.

use libfuzzer_sys::arbitrary::{Result, Unstructured};

pub use libfuzzer_sys::arbitrary;

pub mod capi_model;
pub mod capi_segmented;

/// At most `max` bytes from the input: inputs stay small, so mutations stay cheap.
pub fn bytes(u: &mut Unstructured<'_>, max: usize) -> Result<Vec<u8>> {
    let len = u.int_in_range(0..=max)?;
    Ok(u.bytes(len)?.to_vec())
}

/// A short string over a small alphabet that includes Kafka's separators (`-`, `.`) and
/// a multi-byte character, so that topic parsing meets its edge cases often.
pub fn name(u: &mut Unstructured<'_>, max: usize) -> Result<String> {
    const ALPHABET: [&str; 8] = ["a", "b", "-", ".", "0", "7", "é", "_"];
    let len = u.int_in_range(0..=max)?;
    let mut s = String::new();
    for _ in 0..len {
        s.push_str(u.choose(&ALPHABET)?);
    }
    Ok(s)
}

/// Big-endian `i32` length prefix followed by the bytes (Java's `DataOutput` style).
pub fn put_i32_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// One topic of a store position: its name and `(partition, offset)` pairs.
pub type PositionTopic = (String, Vec<(i32, i64)>);

/// Kafka's `PositionSerde` v0 of `topics`, as Kafka writes it:
/// `[i8 0][i32 topics]{[i32 len][topic][i32 partitions]{[i32 partition][i64 offset]}}`.
pub fn kafka_position(topics: &[PositionTopic]) -> Vec<u8> {
    let mut out = vec![0u8];
    out.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for (topic, partitions) in topics {
        put_i32_bytes(&mut out, topic.as_bytes());
        out.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
        for (p, o) in partitions {
            out.extend_from_slice(&p.to_be_bytes());
            out.extend_from_slice(&o.to_be_bytes());
        }
    }
    out
}

/// The Java adapter's metadata layout of `topics` (`PositionCodec`):
/// `[u8 1][i32 topics]{[u16 len][topic][i32 partitions]{[i32 partition][i64 offset]}}`.
pub fn adapter_position(topics: &[PositionTopic]) -> Vec<u8> {
    let mut out = vec![1u8];
    out.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for (topic, partitions) in topics {
        out.extend_from_slice(&(topic.len() as u16).to_be_bytes());
        out.extend_from_slice(topic.as_bytes());
        out.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
        for (p, o) in partitions {
            out.extend_from_slice(&p.to_be_bytes());
            out.extend_from_slice(&o.to_be_bytes());
        }
    }
    out
}
