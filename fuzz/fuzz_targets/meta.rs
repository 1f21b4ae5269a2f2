//! kstate's own records: the store header, `kstate_meta` records (committed state, pending
//! commit, pending ingest, status) and spilled writes.
//!
//! Properties: decoding arbitrary bytes never panics; whatever decodes re-encodes, and
//! re-decoding that gives the same record (the encoding of a decoded record is a fixed
//! point); a record built from the input round-trips exactly; a record that decodes
//! carries a valid checksum, so one flipped bit of an encoded record never decodes.
#![no_main]

use std::collections::BTreeMap;

use kstate::format::meta::{
    decode_status, encode_status, CommittedState, PendingCommit, PendingIngest, RangeDelete,
    StoreHeader, StoreKind,
};
use kstate::format::{TopicPartition, ValueFormat};
use kstate::fuzz_api;
use kstate_fuzz::arbitrary::{Result, Unstructured};
use kstate_fuzz::{bytes, name};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, raw)) = data.split_first() else {
        return;
    };
    match mode % 8 {
        0 => header(raw),
        1 => decoded_is_fixed_point(raw, CommittedState::decode, |s| s.encode().ok()),
        2 => decoded_is_fixed_point(raw, PendingCommit::decode, |p| p.encode().ok()),
        3 => decoded_is_fixed_point(raw, PendingIngest::decode, |p| p.encode().ok()),
        4 => status(raw),
        5 => spill(raw),
        _ => {
            let _ = built_records_round_trip(&mut Unstructured::new(raw));
        }
    }
});

/// Headers are canonical: what decodes re-encodes to the very same bytes.
fn header(raw: &[u8]) {
    if let Ok(h) = StoreHeader::decode(raw) {
        assert_eq!(h.encode(), raw, "header {h:?}");
    }
}

fn status(raw: &[u8]) {
    if let Ok(clean) = decode_status(raw) {
        assert_eq!(encode_status(clean), raw);
    }
}

/// Arbitrary bytes: a record that decodes encodes again, to bytes that decode to it.
fn decoded_is_fixed_point<T: PartialEq + std::fmt::Debug>(
    raw: &[u8],
    decode: fn(&[u8]) -> kstate::Result<T>,
    encode: fn(&T) -> Option<Vec<u8>>,
) {
    if let Ok(record) = decode(raw) {
        let again = encode(&record).expect("a decoded record encodes");
        assert_eq!(decode(&again).expect("re-encoded record decodes"), record);
    }
}

fn spill(raw: &[u8]) {
    if let Ok(write) = fuzz_api::spill_decode_write(raw) {
        assert_eq!(fuzz_api::spill_encode_write(write), raw);
    }
    if let Ok((txn, slot, key)) = fuzz_api::spill_parse_key(raw) {
        // Tag, big-endian transaction id, slot byte, then the user key.
        assert_eq!(raw[0], 0x02);
        assert_eq!(raw[1..9], txn.to_be_bytes());
        assert_eq!(usize::from(raw[9]), slot);
        assert_eq!(&raw[10..], key);
    }
}

fn committed_state(u: &mut Unstructured<'_>) -> Result<CommittedState> {
    let mut offsets = BTreeMap::new();
    for _ in 0..u.int_in_range(0..=4)? {
        offsets.insert(
            TopicPartition::new(name(u, 6)?, u.arbitrary()?),
            u.arbitrary()?,
        );
    }
    Ok(CommittedState {
        sequence: u.arbitrary()?,
        offsets,
        metadata: if u.arbitrary()? {
            Some(bytes(u, 16)?)
        } else {
            None
        },
        stream_time: u.arbitrary()?,
    })
}

/// Records built from the input round-trip exactly, and every single-bit flip of their
/// encoding is rejected (the CRC-32 catches it).
fn built_records_round_trip(u: &mut Unstructured<'_>) -> Result<()> {
    let state = committed_state(u)?;
    let encoded = state.encode().expect("small records encode");
    assert_eq!(CommittedState::decode(&encoded).unwrap(), state);
    let bit: usize = u.int_in_range(0..=encoded.len() * 8 - 1)?;
    let mut flipped = encoded.clone();
    flipped[bit / 8] ^= 1 << (bit % 8);
    assert!(
        CommittedState::decode(&flipped).is_err(),
        "flipped bit {bit}"
    );

    let mut families = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        families.push(name(u, 8)?);
    }
    let mut ranges = Vec::new();
    for _ in 0..u.int_in_range(0..=2)? {
        ranges.push(RangeDelete {
            slot: u.arbitrary()?,
            from: bytes(u, 8)?,
            to: bytes(u, 8)?,
        });
    }
    let pending = PendingCommit {
        txn: u.arbitrary()?,
        families,
        ranges,
        state: state.clone(),
    };
    let encoded = pending.encode().expect("small records encode");
    assert_eq!(PendingCommit::decode(&encoded).unwrap(), pending);

    let ingest = PendingIngest {
        family: name(u, 8)?,
        file: name(u, 8)?,
        state,
    };
    assert_eq!(
        PendingIngest::decode(&ingest.encode().unwrap()).unwrap(),
        ingest
    );

    let interval = u.int_in_range(1..=i64::MAX)?;
    let kind = *u.choose(&[
        StoreKind::KeyValue,
        StoreKind::Window {
            segment_interval: interval,
        },
        StoreKind::Session {
            segment_interval: interval,
        },
    ])?;
    let format = *u.choose(&[
        ValueFormat::Plain,
        ValueFormat::Timestamped,
        ValueFormat::Headers,
    ])?;
    let header = StoreHeader::new(format, kind);
    assert_eq!(StoreHeader::decode(&header.encode()).unwrap(), header);
    Ok(())
}
