//! Reading the changelog offsets a commit carries (`kstate_offset_t` arrays), for every
//! store kind's commit (`shared.rs.in`) and the key-value store's restore batches.

use super::bytes::{array, utf8};
use super::kv::kstate_offset_t;
use crate::{Result, TopicPartition};

/// Reads the offsets of a commit: each topic as UTF-8, `has_offset` false as Kafka's
/// `null` (remove the partition's offset).
///
/// # Safety
/// `offsets` is NULL or readable for `len` entries whose topics are NULL or NUL-terminated.
pub(crate) unsafe fn parse_offsets(
    offsets: *const kstate_offset_t,
    len: usize,
) -> Result<Vec<(TopicPartition, Option<i64>)>> {
    // SAFETY: readable as given (caller's guarantee).
    let offsets = unsafe { array(offsets, len, "offsets")? };
    let mut parsed = Vec::with_capacity(offsets.len());
    for (i, o) in offsets.iter().enumerate() {
        // SAFETY: `topic` is NULL or NUL-terminated (caller's guarantee).
        let topic = unsafe { utf8(o.topic, &format!("offsets[{i}].topic"))? };
        parsed.push((
            TopicPartition::new(topic, o.partition),
            o.has_offset.then_some(o.offset),
        ));
    }
    Ok(parsed)
}
