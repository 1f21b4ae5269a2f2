//! What kstate reads when it adopts a Kafka Streams 4.3+ store: the `offsets` column family
//! (`<topic>-<partition>` -> 8-byte offset, `status`, `position`) and Kafka's
//! `PositionSerde` bytes, converted to the Java adapter's metadata layout.
//!
//! Properties: reading arbitrary entries never panics and agrees with a model of the
//! family (the last `-` splits topic and partition; values are 8-byte big-endian longs);
//! a position built from the input converts to exactly the adapter layout of the same
//! position, whatever zero padding follows it; a converted arbitrary position is a
//! well-formed adapter record.
#![no_main]

use std::collections::BTreeMap;

use kstate::format::TopicPartition;
use kstate::fuzz_api;
use kstate_fuzz::arbitrary::{Result, Unstructured};
use kstate_fuzz::{adapter_position, bytes, kafka_position, name, PositionTopic};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => arbitrary_position(rest),
        1 => {
            let _ = built_position(&mut Unstructured::new(rest));
        }
        _ => {
            let _ = family(&mut Unstructured::new(rest));
        }
    }
});

/// Whatever converts is a complete adapter record: `[1][i32 n]` then `n` topics
/// (`[u16 len][topic][i32 m]` then `m` 12-byte pairs), and nothing after them.
fn arbitrary_position(raw: &[u8]) {
    let Ok(out) = fuzz_api::kafka_position_to_adapter(raw) else {
        return;
    };
    let int = |b: &[u8]| i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(out[0], 1);
    let mut at = 5;
    for _ in 0..int(&out[1..5]).max(0) {
        let len = usize::from(u16::from_be_bytes([out[at], out[at + 1]]));
        at += 2 + len;
        let pairs = int(&out[at..at + 4]).max(0) as usize;
        at += 4 + 12 * pairs;
    }
    assert_eq!(at, out.len(), "adapter record has no trailing bytes");
}

fn built_position(u: &mut Unstructured<'_>) -> Result<()> {
    let mut topics: Vec<PositionTopic> = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let mut partitions = Vec::new();
        for _ in 0..u.int_in_range(0..=3)? {
            partitions.push((u.arbitrary()?, u.arbitrary()?));
        }
        topics.push((name(u, 8)?, partitions));
    }
    let mut raw = kafka_position(&topics);
    // Kafka's serde may leave zero padding after the position.
    raw.resize(raw.len() + u.int_in_range(0..=16)?, 0);
    assert_eq!(
        fuzz_api::kafka_position_to_adapter(&raw).unwrap(),
        adapter_position(&topics)
    );
    Ok(())
}

/// The model of one entry: `None` when the entry must be refused.
fn model_entry(key: &[u8], value: &[u8]) -> Option<(Option<TopicPartition>, i64)> {
    let long = i64::from_be_bytes(<[u8; 8]>::try_from(value).ok()?);
    if key == b"status" {
        return Some((None, long));
    }
    let text = std::str::from_utf8(key).ok()?;
    let cut = text.rfind('-')?;
    let partition: i32 = text[cut + 1..].parse().ok()?;
    Some((Some(TopicPartition::new(&text[..cut], partition)), long))
}

fn family(u: &mut Unstructured<'_>) -> Result<()> {
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for _ in 0..u.int_in_range(0..=4)? {
        let key = match u.int_in_range(0..=3)? {
            0 => b"status".to_vec(),
            1 => bytes(u, 10)?,
            _ => format!("{}-{}", name(u, 6)?, name(u, 3)?).into_bytes(),
        };
        let value = if u.ratio(7, 8)? {
            u.arbitrary::<i64>()?.to_be_bytes().to_vec()
        } else {
            bytes(u, 10)?
        };
        // `position` has its own test above; here it is just skipped.
        if key != b"position" {
            entries.push((key, value));
        }
    }
    let read = fuzz_api::kafka_offsets(entries.iter().map(|(k, v)| (&k[..], &v[..])));
    let mut offsets = BTreeMap::new();
    let mut left_open = false;
    for (k, v) in &entries {
        match model_entry(k, v) {
            None => {
                assert!(read.is_err(), "entry {k:?} = {v:?} must be refused");
                return Ok(());
            }
            Some((None, status)) => left_open = status != 0,
            Some((Some(tp), offset)) => {
                offsets.insert(tp, offset);
            }
        }
    }
    let read = read.expect("well-formed entries are read");
    assert_eq!(read.offsets, offsets);
    assert_eq!(read.left_open, left_open);
    assert_eq!(read.position, None);
    Ok(())
}
