//! Versioned key-value stores: their byte layouts, and call sequences on a store.
//!
//! Properties: the history key and value decoders never panic on arbitrary bytes and are
//! canonical (decode, encode gives the input back). On a memory-engine store driven by
//! puts, deletes, commits and rollbacks with arbitrary keys, values and timestamps
//! (extreme ones included), and small retentions and segment intervals: no call panics;
//! every key's versions, oldest first, are disjoint intervals in time order with the
//! latest (no `valid_to`) last; a read as of any time inside a version's interval (within
//! the retention) returns that version; a put that returns a `valid_to` made its value
//! valid exactly until then; a committed reader sees what the writer saw at the commit.
#![no_main]

use kstate::format::versioned::{
    decode_history, decode_latest, encode_history, encode_latest, history_key, split_history_key,
};
use kstate::store::{
    VersionOrder, VersionedDelete, VersionedOptions, VersionedRecord, VersionedStore,
    PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED,
};
use kstate::{EngineKind, Isolation, StoreOptions};
use kstate_fuzz::arbitrary::{Result, Unstructured};
use kstate_fuzz::bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    decode_arbitrary(data);
    let _ = calls(&mut Unstructured::new(data));
});

fn decode_arbitrary(raw: &[u8]) {
    if let Ok((key, valid_to)) = split_history_key(raw) {
        assert_eq!(history_key(key, valid_to), raw);
    }
    if let Ok((from, value)) = decode_history(raw) {
        assert_eq!(encode_history(from, value), raw);
    }
    if let Ok((from, value)) = decode_latest(raw) {
        assert_eq!(encode_latest(from, value), raw);
    }
}

/// A timestamp: mostly small (so that versions of a key meet), sometimes anything.
fn time(u: &mut Unstructured<'_>) -> Result<i64> {
    Ok(if u.ratio(1, 8)? {
        u.arbitrary()?
    } else {
        i64::from(u.int_in_range(-3i16..=400)?)
    })
}

fn calls(u: &mut Unstructured<'_>) -> Result<()> {
    let retention = i64::from(u.int_in_range(0u16..=300)?);
    let interval = i64::from(u.int_in_range(1u16..=120)?);
    let options = VersionedOptions::new(retention)
        .with_segment_interval(interval)
        .with_store(StoreOptions::plain(EngineKind::Memory).with_max_uncommitted_bytes(2_000));
    let store = VersionedStore::open_in_memory(&options).expect("valid options");
    let keys: [&[u8]; 3] = [b"", b"a", b"a\x00"];
    let mut at_commit = snapshot(&store, &keys, Isolation::ReadUncommitted);
    for _ in 0..u.int_in_range(1..=40)? {
        let key = *u.choose(&keys)?;
        match u.int_in_range(0..=4)? {
            0 | 1 => {
                let value = if u.ratio(1, 4)? {
                    None
                } else {
                    Some(bytes(u, 300)?)
                };
                let ts = time(u)?;
                let valid_to = store.put(key, value.as_deref(), ts).expect("put");
                if valid_to != PUT_RETURN_CODE_NOT_PUT
                    && valid_to != PUT_RETURN_CODE_VALID_TO_UNDEFINED
                {
                    assert!(valid_to > ts, "put at {ts} valid until {valid_to}");
                }
                if let (Some(v), true) = (value, valid_to != PUT_RETURN_CODE_NOT_PUT) {
                    let read = store
                        .get_as_of(key, ts)
                        .expect("get")
                        .expect("the put version");
                    assert_eq!(read.value, v);
                    assert_eq!(read.timestamp, ts);
                    if valid_to == PUT_RETURN_CODE_VALID_TO_UNDEFINED {
                        // -1 is also a timestamp: as in Kafka, a version valid until a
                        // version at -1 returns the same code as the newest one.
                        assert!(matches!(read.valid_to, None | Some(-1)), "{read:?}");
                    } else {
                        assert_eq!(read.valid_to, Some(valid_to));
                    }
                }
            }
            2 => {
                let ts = time(u)?;
                let before = store.get_as_of(key, ts).expect("get");
                let stream_time = store.stream_time(Isolation::ReadUncommitted).expect("time");
                let deleted = store.delete(key, ts).expect("delete");
                if ts >= stream_time.saturating_sub(retention) {
                    assert_eq!(deleted, VersionedDelete::Deleted(before));
                    assert_eq!(store.get_as_of(key, ts).expect("get"), None);
                } else {
                    assert_eq!(deleted, VersionedDelete::NotPut);
                }
            }
            3 => {
                store.commit(&[], None).expect("commit");
                at_commit = snapshot(&store, &keys, Isolation::ReadUncommitted);
            }
            _ => store.rollback().expect("rollback"),
        }
        assert_eq!(snapshot(&store, &keys, Isolation::ReadCommitted), at_commit);
        for key in keys {
            check_versions(&store, key, retention);
        }
    }
    Ok(())
}

fn snapshot(
    store: &VersionedStore,
    keys: &[&[u8]],
    isolation: Isolation,
) -> Vec<Vec<VersionedRecord>> {
    keys.iter()
        .map(|k| {
            store
                .versions(isolation, k, None, None, VersionOrder::Ascending)
                .expect("versions")
        })
        .collect()
}

fn check_versions(store: &VersionedStore, key: &[u8], retention: i64) {
    let all = store
        .versions(
            Isolation::ReadUncommitted,
            key,
            None,
            None,
            VersionOrder::Ascending,
        )
        .expect("versions");
    let mut descending = store
        .versions(
            Isolation::ReadUncommitted,
            key,
            None,
            None,
            VersionOrder::Descending,
        )
        .expect("versions");
    descending.reverse();
    assert_eq!(all, descending);
    let cutoff = store
        .stream_time(Isolation::ReadUncommitted)
        .expect("time")
        .saturating_sub(retention);
    for (i, r) in all.iter().enumerate() {
        match r.valid_to {
            Some(to) => {
                assert!(r.timestamp < to, "{r:?}");
                if let Some(next) = all.get(i + 1) {
                    assert!(to <= next.timestamp, "{r:?} overlaps {next:?}");
                }
                for t in [r.timestamp, to - 1] {
                    if t >= cutoff {
                        assert_eq!(store.get_as_of(key, t).expect("get").as_ref(), Some(r));
                    }
                }
            }
            None => {
                assert_eq!(i, all.len() - 1, "the latest version is the newest");
                assert_eq!(store.get(key).expect("get").as_ref(), Some(r));
            }
        }
    }
}
