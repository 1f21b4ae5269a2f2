//! The versioned key-value natives of `dev.kstate.internal.KstateNative` (documented there
//! and in `NativeVersionedStore`): those every kind has ([`super::declare::kind_natives`])
//! and the versioned store's own (open, put, delete, get, the multi-version query, restore
//! batches, stream time).
//!
//! A version crosses as `[BE i64 timestamp][BE i64 validTo][value]`, validTo being
//! [`NO_VALID_TO`] for a latest version (Kafka's empty `validTo`): the whole array for a
//! point read, and in a multi-version query's batches a [`super::codec`] entry whose key is
//! the 16 bytes of the two times and whose value is the value.

use jni::sys::{jint, jlong};

use super::codec;
use super::convert::JavaBytes;
use super::declare::{kind_natives, natives};
use super::natives::{batch_limits, isolation, jhandle, number, store, OpenArgs, Packed};
use crate::bridge::{self, VersionedIterHandle};
use crate::store::{ChangelogRecord, VersionOrder, VersionedDelete, VersionedRecord};
use crate::{Error, Result, VersionedStore};

/// The validTo of a latest version, which has none (never a real validTo: a version's
/// validTo is after its timestamp).
pub(crate) const NO_VALID_TO: jlong = jlong::MIN;

/// The 16 bytes of a version's two times.
fn times(record: &VersionedRecord) -> [u8; 16] {
    let mut out = [0; 16];
    out[..8].copy_from_slice(&record.timestamp.to_be_bytes());
    let valid_to = record.valid_to.unwrap_or(NO_VALID_TO);
    out[8..].copy_from_slice(&valid_to.to_be_bytes());
    out
}

/// A version as one array (a point read's result).
fn encode(record: Option<VersionedRecord>) -> Option<Vec<u8>> {
    record.map(|r| [&times(&r)[..], &r.value].concat())
}

/// The versions a query found, one at a time.
impl Packed for VersionedIterHandle {
    fn pack(&self, max_entries: jint, max_bytes: jint) -> Result<Option<Vec<u8>>> {
        let (max_entries, max_bytes) = batch_limits(max_entries, max_bytes);
        let mut packed = Vec::new();
        let mut taken = 0;
        while taken < max_entries && packed.len() < max_bytes {
            let Some(record) = self.next() else { break };
            codec::encode_entry(&mut packed, &times(&record), Some(&record.value))?;
            taken += 1;
        }
        Ok((taken > 0).then_some(packed))
    }
}

kind_natives! {
    versioned, "versioned", VersionedStore, VersionedIterHandle, bridge::close_versioned_store,
    bridge::close_versioned_iter
}

natives! {
    /// `long versionedOpen(String path, long[] options)`: options as [`OpenArgs`] (retentionMs
    /// is the history retention; segmentIntervalMs 0 is Kafka's default for it).
    java "versionedOpen" fn versioned_open(path: Option<String>, options: OpenArgs) -> jlong {
        bridge::open_versioned_store(path.map(str::as_bytes), &options.versioned).map(jhandle)
    }
    /// `long versionedPut(long store, byte[] key, byte[] value, long timestamp)`: Kafka's
    /// return code (the new version's validTo, -1 when it is the latest, `Long.MIN_VALUE`
    /// when the write was older than the history retention); a null value is a tombstone.
    java "versionedPut" fn versioned_put(h: jlong, key: JavaBytes, value: Option<JavaBytes>,
        timestamp: jlong) -> jlong {
        store::<VersionedStore>(h)?.put(key, value, timestamp)
    }
    /// `byte[] versionedDelete(long store, byte[] key, long timestamp)`: the version valid at
    /// `timestamp` before the delete, or null; an empty array (never a version, which has its
    /// 16 bytes of times) when the delete was older than the history retention and dropped.
    java "versionedDelete" fn versioned_delete(h: jlong, key: JavaBytes, timestamp: jlong)
        -> Option<Vec<u8>> {
        Ok(match store::<VersionedStore>(h)?.delete(key, timestamp)? {
            VersionedDelete::Deleted(before) => encode(before),
            VersionedDelete::NotPut => Some(Vec::new()),
        })
    }
    /// `byte[] versionedGet(long store, byte[] key, boolean latest, long asOf, boolean
    /// committed)`: the latest version (`latest`, `asOf` ignored) or the one valid at `asOf`,
    /// or null.
    java "versionedGet" fn versioned_get(h: jlong, key: JavaBytes, latest: bool, as_of: jlong,
        committed: bool) -> Option<Vec<u8>> {
        let as_of = (!latest).then_some(as_of);
        Ok(encode(store::<VersionedStore>(h)?.get_with(isolation(committed), key, as_of)?))
    }
    /// `long versionedQuery(long store, byte[] key, long fromTime, long toTime, boolean
    /// ascending, boolean committed)`: an iterator over every version with a value valid at
    /// some time in `[fromTime, toTime]` (`Long.MIN_VALUE` / `Long.MAX_VALUE`: unbounded),
    /// oldest or newest first; invalid when `fromTime > toTime`.
    java "versionedQuery" fn versioned_query(h: jlong, key: JavaBytes, from: jlong, to: jlong,
        ascending: bool, committed: bool) -> jlong {
        let order = match ascending {
            true => VersionOrder::Ascending,
            false => VersionOrder::Descending,
        };
        let (from, to) = (Some(from), Some(to));
        bridge::open_versioned_iter(number(h), isolation(committed), key, from, to, order)
            .map(jhandle)
    }
    /// `void versionedRestoreBatch(long store, byte[] packed, long[] timestamps, String[]
    /// topics, int[] partitions, long[] offsets, byte[] metadata)`: changelog records (a
    /// packed batch of keys and values, a null value a tombstone, and one timestamp each)
    /// applied as Kafka's restore does and committed with the offsets and, when not null, the
    /// metadata blob, all or none. Refused while the transaction has uncommitted writes.
    java "versionedRestoreBatch" fn versioned_restore_batch(h: jlong, batch: JavaBytes,
        timestamps: Vec<jlong>, topics: Vec<String>, partitions: Vec<jint>, offsets: Vec<jlong>,
        metadata: Option<JavaBytes>) -> () {
        let offsets = super::convert::offsets(topics, partitions, offsets)?;
        let entries = codec::decode_entries(batch)?;
        if entries.len() != timestamps.len() {
            return Err(Error::InvalidArgument(format!(
                "{} records and {} timestamps",
                entries.len(),
                timestamps.len()
            )));
        }
        let records: Vec<ChangelogRecord<'_>> = entries
            .into_iter()
            .zip(timestamps)
            .map(|((k, v), t)| (k, v, *t))
            .collect();
        store::<VersionedStore>(h)?.restore_batch(&records, &offsets, metadata)
    }
    /// `long versionedStreamTime(long store, boolean committed)`: the observed stream time,
    /// -1 before the first record.
    java "versionedStreamTime" fn versioned_stream_time(h: jlong, committed: bool) -> jlong {
        store::<VersionedStore>(h)?.stream_time(isolation(committed))
    }
}
