//! kstate's own metadata records, kept in the `kstate_meta` column family (or its in-memory
//! twin). Every record ends with a CRC-32 of its preceding bytes, so a damaged record is
//! reported as [`Error::Corruption`] instead of being misread.
//!
//! | key         | record                                                        |
//! |-------------|---------------------------------------------------------------|
//! | `header`    | [`StoreHeader`]: format version and value format             |
//! | `committed` | [`CommittedState`] of the last completed commit               |
//! | `pending`   | [`PendingCommit`]: a spilled commit still rolling forward     |
//! | `status`    | one byte: 1 = last close was clean, 0 = open or crashed       |

use std::collections::BTreeMap;

use crate::{Error, Result};

/// Newest on-disk format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Meta key of the [`StoreHeader`].
pub const KEY_HEADER: &[u8] = b"header";
/// Meta key of the last completed [`CommittedState`].
pub const KEY_COMMITTED: &[u8] = b"committed";
/// Meta key of an in-flight spilled commit.
pub const KEY_PENDING: &[u8] = b"pending";
/// Meta key of the clean-close flag.
pub const KEY_STATUS: &[u8] = b"status";

/// How values are laid out in a store (KIP-258 keeps both kinds side by side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueFormat {
    /// Values are stored verbatim (Kafka's `RocksDBStore`, `default` column family).
    Plain,
    /// Values carry an 8-byte timestamp prefix (Kafka's `RocksDBTimestampedStore`,
    /// `keyValueWithTimestamp` column family).
    Timestamped,
    /// Values carry record headers and a timestamp (KIP-1271, Kafka Streams 4.3+:
    /// `RocksDBTimestampedStoreWithHeaders`, `keyValueWithTimestampAndHeaders` column
    /// family; layout in [`crate::format::headers`]).
    Headers,
}

impl ValueFormat {
    fn to_byte(self) -> u8 {
        match self {
            ValueFormat::Plain => 0,
            ValueFormat::Timestamped => 1,
            ValueFormat::Headers => 2,
        }
    }

    fn from_byte(b: u8) -> Result<Self> {
        match b {
            0 => Ok(ValueFormat::Plain),
            1 => Ok(ValueFormat::Timestamped),
            2 => Ok(ValueFormat::Headers),
            other => Err(Error::Corruption(format!(
                "store header names unknown value format {other}"
            ))),
        }
    }

    /// Lower-case name for messages and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            ValueFormat::Plain => "plain",
            ValueFormat::Timestamped => "timestamped",
            ValueFormat::Headers => "headers",
        }
    }

    /// The format of a lower-case [`ValueFormat::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        [
            ValueFormat::Plain,
            ValueFormat::Timestamped,
            ValueFormat::Headers,
        ]
        .into_iter()
        .find(|f| f.name() == name)
    }

    /// The formats, oldest first: a store can be upgraded (lazily, offline or by swap)
    /// from a format to any later one, never back.
    pub fn rank(self) -> u8 {
        self.to_byte()
    }

    /// Whether values carry a timestamp (all but [`ValueFormat::Plain`]).
    pub fn has_timestamp(self) -> bool {
        self != ValueFormat::Plain
    }
}

/// The first record of every kstate store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreHeader {
    /// On-disk format version.
    pub format_version: u32,
    /// Value layout of the store's data.
    pub value_format: ValueFormat,
}

impl StoreHeader {
    /// Encodes as `[u32 BE version][u8 value format][u32 BE crc]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(9);
        out.extend_from_slice(&self.format_version.to_be_bytes());
        out.push(self.value_format.to_byte());
        seal(out)
    }

    /// Decodes, checking the version before anything else so that a store written by a
    /// newer kstate is reported as such even if the rest of its header changed shape.
    pub fn decode(raw: &[u8]) -> Result<Self> {
        if raw.len() < 4 {
            return Err(Error::Corruption("store header is truncated".into()));
        }
        let version = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]);
        if version > FORMAT_VERSION {
            return Err(Error::UnsupportedFormat {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let body = unseal(raw, "store header")?;
        if body.len() != 5 || version == 0 {
            return Err(Error::Corruption(format!(
                "store header has {} bytes and version {version}",
                body.len()
            )));
        }
        Ok(StoreHeader {
            format_version: version,
            value_format: ValueFormat::from_byte(body[4])?,
        })
    }
}

/// A Kafka topic partition, the key of committed changelog offsets.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// Topic name (UTF-8, as in Kafka).
    pub topic: String,
    /// Partition number.
    pub partition: i32,
}

impl TopicPartition {
    /// Builds one.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

/// What one commit made durable besides the data: changelog offsets and an opaque blob
/// (Kafka's serialized `Position`, for instance).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommittedState {
    /// Number of commits completed on this store so far (1 for the first).
    pub sequence: u64,
    /// Committed changelog offsets.
    pub offsets: BTreeMap<TopicPartition, i64>,
    /// Opaque metadata stored with the commit, if any.
    pub metadata: Option<Vec<u8>>,
}

const NO_METADATA: u32 = u32::MAX;

impl CommittedState {
    /// Encodes as `[u8 1][u64 seq][u32 n]{[u16 len][topic][i32 partition][i64 offset]}*`
    /// `[u32 metadata len or u32::MAX][metadata][u32 crc]`, all big-endian.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(32 + self.offsets.len() * 24);
        out.push(1u8);
        out.extend_from_slice(&self.sequence.to_be_bytes());
        out.extend_from_slice(&(self.offsets.len() as u32).to_be_bytes());
        for (tp, offset) in &self.offsets {
            let topic = tp.topic.as_bytes();
            let len = u16::try_from(topic.len()).map_err(|_| {
                Error::InvalidArgument(format!("topic name of {} bytes is too long", topic.len()))
            })?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(topic);
            out.extend_from_slice(&tp.partition.to_be_bytes());
            out.extend_from_slice(&offset.to_be_bytes());
        }
        match &self.metadata {
            Some(m) => {
                let len = u32::try_from(m.len())
                    .ok()
                    .filter(|l| *l != NO_METADATA)
                    .ok_or_else(|| Error::InvalidArgument("commit metadata is too large".into()))?;
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(m);
            }
            None => out.extend_from_slice(&NO_METADATA.to_be_bytes()),
        }
        Ok(seal(out))
    }

    /// Decodes, verifying the checksum and every length.
    pub fn decode(raw: &[u8]) -> Result<Self> {
        let body = unseal(raw, "committed-state record")?;
        let mut r = Reader {
            buf: body,
            what: "committed-state record",
        };
        let version = r.take(1)?[0];
        if version != 1 {
            return Err(Error::Corruption(format!(
                "committed-state record has unknown version {version}"
            )));
        }
        let sequence = r.u64()?;
        let n = r.u32()?;
        let mut offsets = BTreeMap::new();
        for _ in 0..n {
            let len = r.u16()? as usize;
            let topic = std::str::from_utf8(r.take(len)?)
                .map_err(|_| {
                    Error::Corruption("topic name in committed state is not UTF-8".into())
                })?
                .to_string();
            let partition = r.i32()?;
            let offset = r.i64()?;
            offsets.insert(TopicPartition { topic, partition }, offset);
        }
        let meta_len = r.u32()?;
        let metadata = if meta_len == NO_METADATA {
            None
        } else {
            Some(r.take(meta_len as usize)?.to_vec())
        };
        if !r.buf.is_empty() {
            return Err(Error::Corruption(
                "committed-state record has trailing bytes".into(),
            ));
        }
        Ok(CommittedState {
            sequence,
            offsets,
            metadata,
        })
    }
}

/// A spilled commit past its commit point: the transaction whose spilled writes it applies,
/// the names of the families those writes go to (by the slot number in each spill key),
/// and the committed state it completes with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingCommit {
    /// Transaction id: only spill entries of this transaction are applied.
    pub txn: u64,
    /// Family name of each spill slot.
    pub families: Vec<String>,
    /// The state the commit makes current.
    pub state: CommittedState,
}

const PENDING_VERSION: u8 = 2;

impl PendingCommit {
    /// Encodes as `[u8 2][u64 txn][u8 n]{[u8 len][name]}*[committed-state record]`, sealed.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = vec![PENDING_VERSION];
        out.extend_from_slice(&self.txn.to_be_bytes());
        let n = u8::try_from(self.families.len())
            .map_err(|_| Error::Internal("more than 255 families in one commit".into()))?;
        out.push(n);
        for name in &self.families {
            let len = u8::try_from(name.len())
                .map_err(|_| Error::Internal(format!("family name {name} is too long")))?;
            out.push(len);
            out.extend_from_slice(name.as_bytes());
        }
        out.extend_from_slice(&self.state.encode()?);
        Ok(seal(out))
    }

    /// Decodes, verifying the checksum and every length.
    pub fn decode(raw: &[u8]) -> Result<Self> {
        let body = unseal(raw, "pending-commit record")?;
        let mut r = Reader {
            buf: body,
            what: "pending-commit record",
        };
        let version = r.take(1)?[0];
        if version != PENDING_VERSION {
            return Err(Error::Corruption(format!(
                "pending-commit record has version {version}; this kstate reads version \
                 {PENDING_VERSION} (a spilled commit left by kstate 0.1 cannot be completed)"
            )));
        }
        let txn = r.u64()?;
        let n = r.take(1)?[0];
        let mut families = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let len = r.take(1)?[0] as usize;
            let name = std::str::from_utf8(r.take(len)?).map_err(|_| {
                Error::Corruption("family name in pending-commit record is not UTF-8".into())
            })?;
            families.push(name.to_string());
        }
        let state = CommittedState::decode(r.buf)?;
        Ok(PendingCommit {
            txn,
            families,
            state,
        })
    }
}

/// Encodes the clean-close flag.
pub fn encode_status(clean: bool) -> Vec<u8> {
    vec![u8::from(clean)]
}

/// Decodes the clean-close flag.
pub fn decode_status(raw: &[u8]) -> Result<bool> {
    match raw {
        [0] => Ok(false),
        [1] => Ok(true),
        _ => Err(Error::Corruption("status record is malformed".into())),
    }
}

fn seal(mut body: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&body);
    body.extend_from_slice(&crc.to_be_bytes());
    body
}

fn unseal<'a>(raw: &'a [u8], what: &str) -> Result<&'a [u8]> {
    if raw.len() < 4 {
        return Err(Error::Corruption(format!("{what} is truncated")));
    }
    let (body, crc) = raw.split_at(raw.len() - 4);
    let expected = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if crc32fast::hash(body) != expected {
        return Err(Error::Corruption(format!("{what} fails its checksum")));
    }
    Ok(body)
}

struct Reader<'a> {
    buf: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(Error::Corruption(format!("{} is truncated", self.what)));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(self.array()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    fn sample() -> CommittedState {
        let mut offsets = BTreeMap::new();
        offsets.insert(TopicPartition::new("app-store-changelog", 3), 42);
        offsets.insert(TopicPartition::new("", 0), -4);
        CommittedState {
            sequence: 7,
            offsets,
            metadata: Some(b"position".to_vec()),
        }
    }

    #[test]
    fn committed_state_round_trips() {
        let s = sample();
        assert_eq!(CommittedState::decode(&s.encode().unwrap()).unwrap(), s);
        let empty = CommittedState::default();
        assert_eq!(
            CommittedState::decode(&empty.encode().unwrap()).unwrap(),
            empty
        );
        let no_meta = CommittedState {
            metadata: Some(vec![]),
            ..CommittedState::default()
        };
        assert_eq!(
            CommittedState::decode(&no_meta.encode().unwrap()).unwrap(),
            no_meta
        );
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let raw = sample().encode().unwrap();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x40;
            let err = CommittedState::decode(&bad).unwrap_err();
            assert_eq!(err.code(), ErrorCode::Corruption, "byte {i}");
        }
        for cut in 0..raw.len() {
            assert!(CommittedState::decode(&raw[..cut]).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn header_rejects_newer_versions_first() {
        let h = StoreHeader {
            format_version: FORMAT_VERSION,
            value_format: ValueFormat::Timestamped,
        };
        assert_eq!(StoreHeader::decode(&h.encode()).unwrap(), h);
        let newer = StoreHeader {
            format_version: FORMAT_VERSION + 1,
            ..h
        }
        .encode();
        assert_eq!(
            StoreHeader::decode(&newer).unwrap_err().code(),
            ErrorCode::UnsupportedFormat
        );
        let mut garbage_after_newer = (FORMAT_VERSION + 5).to_be_bytes().to_vec();
        garbage_after_newer.extend_from_slice(b"??");
        assert_eq!(
            StoreHeader::decode(&garbage_after_newer)
                .unwrap_err()
                .code(),
            ErrorCode::UnsupportedFormat
        );
        let mut bad = h.encode();
        bad[4] = 9;
        assert_eq!(
            StoreHeader::decode(&bad).unwrap_err().code(),
            ErrorCode::Corruption
        );
    }

    #[test]
    fn pending_commit_round_trips_and_detects_damage() {
        let p = PendingCommit {
            txn: 9,
            families: vec!["keyValueWithTimestamp".into(), "default".into()],
            state: sample(),
        };
        let raw = p.encode().unwrap();
        assert_eq!(PendingCommit::decode(&raw).unwrap(), p);
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x10;
            assert!(PendingCommit::decode(&bad).is_err(), "byte {i}");
        }
        let old = sample().encode().unwrap();
        assert_eq!(
            PendingCommit::decode(&old).unwrap_err().code(),
            ErrorCode::Corruption
        );
    }

    #[test]
    fn status_flag() {
        assert!(decode_status(&encode_status(true)).unwrap());
        assert!(!decode_status(&encode_status(false)).unwrap());
        assert!(decode_status(&[7]).is_err());
    }
}
