//! Decoders that are not public API, reachable by kstate's fuzz targets (`fuzz/`).
//!
//! **Not API.** Hidden from the documentation and exempt from semantic versioning: the
//! functions here may change or disappear in any release. They exist because the fuzz
//! targets are a separate crate and the decoders they must reach are crate-private
//! (spill records, Kafka's `offsets` family, Java strings). Each one is a direct call of
//! the function the library itself uses, so a fuzz target exercises exactly the shipped
//! code. The public decoders ([`crate::format`], [`crate::jni::codec`], [`crate::capi`])
//! are fuzzed through their public names and need nothing here.
//!
//! Always compiled (no cargo feature): a feature would give the fuzz build a library that
//! the normal build, clippy and tests never see, and these wrappers cost nothing.

use std::collections::BTreeMap;

use crate::format::TopicPartition;
use crate::Result;

/// A spilled write's value (`[0]` tombstone, `[1] ‖ value` put), decoded as recovery does.
pub fn spill_decode_write(raw: &[u8]) -> Result<Option<&[u8]>> {
    crate::txn::spill::decode_write(raw)
}

/// A write encoded for the spill family.
pub fn spill_encode_write(write: Option<&[u8]>) -> Vec<u8> {
    crate::txn::spill::encode_write(write)
}

/// A spill key split into transaction id, family slot and user key.
pub fn spill_parse_key(spill_key: &[u8]) -> Result<(u64, usize, &[u8])> {
    crate::txn::spill::parse_key(spill_key)
}

/// What adopting a Kafka store reads from its `offsets` family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KafkaOffsets {
    /// Changelog offsets by partition.
    pub offsets: BTreeMap<TopicPartition, i64>,
    /// The `status` entry said the store was left open.
    pub left_open: bool,
    /// The `position` entry, converted to the Java adapter's metadata layout.
    pub position: Option<Vec<u8>>,
}

/// Reads the entries of a Kafka `offsets` family, in the order given (the engine gives them
/// in key order), exactly as adoption does.
pub fn kafka_offsets<'a>(
    entries: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
) -> Result<KafkaOffsets> {
    let mut out = crate::store::kafka::KafkaOffsets::default();
    for (key, value) in entries {
        out.add(key, value)?;
    }
    Ok(KafkaOffsets {
        offsets: out.offsets,
        left_open: out.left_open,
        position: out.position,
    })
}

/// Kafka's `PositionSerde` bytes converted to the Java adapter's metadata layout.
pub fn kafka_position_to_adapter(raw: &[u8]) -> Result<Vec<u8>> {
    crate::store::kafka::position_to_adapter(raw)
}

/// A string in the JVM's modified UTF-8, decoded as the JNI surface decodes every Java
/// string argument (store paths, topics, property names).
pub fn java_string(bytes: &[u8]) -> Result<String> {
    crate::jni::decode_java(bytes, "string")
}

/// Whether one entry of a Kafka store's `default` family has the layout of a Kafka Streams
/// versioned store's row (`kstate upgrade` leaves such stores alone, adoption refuses them).
pub fn kafka_versioned_entry(key: &[u8], value: &[u8]) -> bool {
    crate::store::kafka_versioned::is_versioned_entry(key, value)
}
