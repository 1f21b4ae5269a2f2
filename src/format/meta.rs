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
//! | `ingest`    | [`PendingIngest`]: a restore file being ingested, and its commit |

use std::collections::BTreeMap;

use crate::{Error, Result};

/// Newest on-disk format version this build reads. Key-value stores are still written as
/// version 1 (readable by kstate 0.1); window and session stores, which need the store kind
/// and segment interval in their header, are version 2, so an older kstate refuses them
/// ([`Error::UnsupportedFormat`]) instead of misreading them.
pub const FORMAT_VERSION: u32 = 2;

/// Header version of key-value stores (kind implied).
pub const KV_FORMAT_VERSION: u32 = 1;

/// Meta key of the [`StoreHeader`].
pub const KEY_HEADER: &[u8] = b"header";
/// Meta key of the last completed [`CommittedState`].
pub const KEY_COMMITTED: &[u8] = b"committed";
/// Meta key of an in-flight spilled commit.
pub const KEY_PENDING: &[u8] = b"pending";
/// Meta key of the clean-close flag.
pub const KEY_STATUS: &[u8] = b"status";
/// Meta key of a restore file being ingested.
pub const KEY_INGEST: &[u8] = b"ingest";
/// Meta key of the write-ahead log files live when the store was last opened.
pub const KEY_LOGS: &[u8] = b"logs";
/// Meta key of a time-ordered window store's Kafka `hasIndex` (one byte, 0 or 1): whether
/// Kafka's own time-ordered store of the application keeps key-first index records, which an
/// export to Kafka's layout must then write (see `store::time_order`).
pub const KEY_KAFKA_INDEX: &[u8] = b"kafka_index";

/// Meta key of a time-ordered session store's Kafka layout (one byte, 0 or 1): whether
/// Kafka's own store of the application is the DSL's headers store format
/// (`RocksDbTimeOrderedSessionHeadersBytesStoreSupplier`, records in
/// `sessionKeyValueWithHeaders`), which an export to Kafka's layout must then write (see
/// `store::time_order`). Same encoding as [`KEY_KAFKA_INDEX`].
pub const KEY_KAFKA_HEADERS: &[u8] = b"kafka_headers";

/// Encodes a [`KEY_KAFKA_INDEX`] record.
pub fn encode_kafka_index(index: bool) -> Vec<u8> {
    vec![u8::from(index)]
}

/// Decodes a [`KEY_KAFKA_INDEX`] record.
///
/// # Errors
/// [`Error::Corruption`] for anything but one byte 0 or 1.
pub fn decode_kafka_index(raw: &[u8]) -> Result<bool> {
    decode_flag("kafka_index", raw)
}

/// Decodes a [`KEY_KAFKA_HEADERS`] record.
///
/// # Errors
/// [`Error::Corruption`] for anything but one byte 0 or 1.
pub fn decode_kafka_headers(raw: &[u8]) -> Result<bool> {
    decode_flag("kafka_headers", raw)
}

fn decode_flag(name: &str, raw: &[u8]) -> Result<bool> {
    match raw {
        [0] => Ok(false),
        [1] => Ok(true),
        _ => Err(Error::Corruption(format!(
            "the {name} metadata record is {raw:?}, not one byte 0 or 1"
        ))),
    }
}

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

/// What kind of store a directory holds. The segment interval of window and session
/// stores is part of their key layout (`[segment id][Kafka key]`), so it is fixed when the
/// store is created and recorded here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreKind {
    /// A key-value store.
    KeyValue,
    /// A window store (Kafka's `WindowKeySchema` keys) with this segment interval (ms).
    Window {
        /// Segment interval in milliseconds (> 0).
        segment_interval: i64,
    },
    /// A session store (Kafka's `SessionKeySchema` keys) with this segment interval (ms).
    Session {
        /// Segment interval in milliseconds (> 0).
        segment_interval: i64,
    },
    /// A versioned key-value store (KIP-889) whose history expires by this segment
    /// interval (ms), as Kafka's segments do.
    Versioned {
        /// Segment interval in milliseconds (> 0).
        segment_interval: i64,
    },
}

impl StoreKind {
    fn to_byte(self) -> u8 {
        match self {
            StoreKind::KeyValue => 0,
            StoreKind::Window { .. } => 1,
            StoreKind::Session { .. } => 2,
            StoreKind::Versioned { .. } => 3,
        }
    }

    fn interval(self) -> i64 {
        match self {
            StoreKind::KeyValue => 0,
            StoreKind::Window { segment_interval }
            | StoreKind::Session { segment_interval }
            | StoreKind::Versioned { segment_interval } => segment_interval,
        }
    }

    fn from_parts(kind: u8, interval: i64) -> Result<Self> {
        let checked = || {
            if interval > 0 {
                Ok(interval)
            } else {
                Err(Error::Corruption(format!(
                    "store header has segment interval {interval}"
                )))
            }
        };
        match kind {
            0 => Ok(StoreKind::KeyValue),
            1 => Ok(StoreKind::Window {
                segment_interval: checked()?,
            }),
            2 => Ok(StoreKind::Session {
                segment_interval: checked()?,
            }),
            3 => Ok(StoreKind::Versioned {
                segment_interval: checked()?,
            }),
            other => Err(Error::Corruption(format!(
                "store header names unknown store kind {other}"
            ))),
        }
    }

    /// Lower-case name for messages and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::KeyValue => "key-value",
            StoreKind::Window { .. } => "window",
            StoreKind::Session { .. } => "session",
            StoreKind::Versioned { .. } => "versioned",
        }
    }
}

/// The first record of every kstate store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreHeader {
    /// On-disk format version.
    pub format_version: u32,
    /// Value layout of the store's data.
    pub value_format: ValueFormat,
    /// The kind of store (always [`StoreKind::KeyValue`] in a version 1 header).
    pub kind: StoreKind,
}

impl StoreHeader {
    /// The header a new store of `kind` gets: version 1 for key-value stores (unchanged
    /// since kstate 0.1), version 2 for the others.
    pub fn new(value_format: ValueFormat, kind: StoreKind) -> Self {
        StoreHeader {
            format_version: match kind {
                StoreKind::KeyValue => KV_FORMAT_VERSION,
                _ => FORMAT_VERSION,
            },
            value_format,
            kind,
        }
    }

    /// Encodes as `[u32 BE version][u8 value format]`, then from version 2 on
    /// `[u8 kind][i64 BE segment interval]`, then `[u32 BE crc]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(18);
        out.extend_from_slice(&self.format_version.to_be_bytes());
        out.push(self.value_format.to_byte());
        if self.format_version >= 2 {
            out.push(self.kind.to_byte());
            out.extend_from_slice(&self.kind.interval().to_be_bytes());
        }
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
        let expected = if version >= 2 { 14 } else { 5 };
        if body.len() != expected || version == 0 {
            return Err(Error::Corruption(format!(
                "store header has {} bytes and version {version}",
                body.len()
            )));
        }
        let kind = if version >= 2 {
            let mut interval = [0u8; 8];
            interval.copy_from_slice(&body[6..14]);
            StoreKind::from_parts(body[5], i64::from_be_bytes(interval))?
        } else {
            StoreKind::KeyValue
        };
        Ok(StoreHeader {
            format_version: version,
            value_format: ValueFormat::from_byte(body[4])?,
            kind,
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
    /// Window and session stores: the observed stream time (largest window start or
    /// session end written) this commit reflects, which decides what has expired.
    pub stream_time: Option<i64>,
}

const NO_METADATA: u32 = u32::MAX;

impl CommittedState {
    /// Encodes as `[u8 version][u64 seq][u32 n]{[u16 len][topic][i32 partition][i64 offset]}*`
    /// `[u32 metadata len or u32::MAX][metadata]`, then (version 2, written only when there
    /// is a stream time, so key-value stores keep version 1) `[i64 stream time]`, then
    /// `[u32 crc]`, all big-endian.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(40 + self.offsets.len() * 24);
        out.push(if self.stream_time.is_some() { 2u8 } else { 1u8 });
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
        if let Some(t) = self.stream_time {
            out.extend_from_slice(&t.to_be_bytes());
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
        if version != 1 && version != 2 {
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
        let stream_time = if version == 2 { Some(r.i64()?) } else { None };
        if !r.buf.is_empty() {
            return Err(Error::Corruption(
                "committed-state record has trailing bytes".into(),
            ));
        }
        Ok(CommittedState {
            sequence,
            offsets,
            metadata,
            stream_time,
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
    /// Ranges `[from, to)` of families (by slot) deleted by the commit after its writes
    /// (expired segments of window and session stores).
    pub ranges: Vec<RangeDelete>,
    /// The state the commit makes current.
    pub state: CommittedState,
}

/// A range `[from, to)` of one family (by registry slot) that a commit deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeDelete {
    /// Registry slot of the family.
    pub slot: u8,
    /// First key deleted.
    pub from: Vec<u8>,
    /// First key kept.
    pub to: Vec<u8>,
}

const PENDING_VERSION: u8 = 2;
/// Pending commits that carry range deletes; written only then, so a key-value store's
/// pending record stays readable by the kstate that wrote version 2.
const PENDING_VERSION_RANGES: u8 = 3;

impl PendingCommit {
    /// Encodes as `[u8 2][u64 txn][u8 n]{[u8 len][name]}*[committed-state record]`,
    /// sealed; with range deletes as version 3, which adds
    /// `[u16 n]{[u8 slot][u32 len][from][u32 len][to]}*` before the committed state.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = vec![if self.ranges.is_empty() {
            PENDING_VERSION
        } else {
            PENDING_VERSION_RANGES
        }];
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
        if !self.ranges.is_empty() {
            let n = u16::try_from(self.ranges.len())
                .map_err(|_| Error::Internal("too many range deletes in one commit".into()))?;
            out.extend_from_slice(&n.to_be_bytes());
            for r in &self.ranges {
                out.push(r.slot);
                for bound in [&r.from, &r.to] {
                    let len = u32::try_from(bound.len())
                        .map_err(|_| Error::Internal("range bound is too long".into()))?;
                    out.extend_from_slice(&len.to_be_bytes());
                    out.extend_from_slice(bound);
                }
            }
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
        if version != PENDING_VERSION && version != PENDING_VERSION_RANGES {
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
        let mut ranges = Vec::new();
        if version == PENDING_VERSION_RANGES {
            let n = r.u16()?;
            for _ in 0..n {
                let slot = r.take(1)?[0];
                let len = r.u32()? as usize;
                let from = r.take(len)?.to_vec();
                let len = r.u32()? as usize;
                let to = r.take(len)?.to_vec();
                ranges.push(RangeDelete { slot, from, to });
            }
        }
        let state = CommittedState::decode(r.buf)?;
        Ok(PendingCommit {
            txn,
            families,
            ranges,
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

const LOGS_VERSION: u8 = 1;

/// Encodes the numbers of the write-ahead log files live at an open:
/// `[u8 version][u32 n]{[u64 number]}*` and a CRC-32.
pub fn encode_logs(numbers: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + numbers.len() * 8);
    out.push(LOGS_VERSION);
    out.extend_from_slice(&(numbers.len() as u32).to_be_bytes());
    for n in numbers {
        out.extend_from_slice(&n.to_be_bytes());
    }
    seal(out)
}

/// Decodes [`encode_logs`].
pub fn decode_logs(raw: &[u8]) -> Result<Vec<u64>> {
    let mut r = Reader {
        buf: unseal(raw, "logs record")?,
        what: "logs record",
    };
    if r.take(1)? != [LOGS_VERSION] {
        return Err(Error::Corruption(
            "logs record has an unknown version".into(),
        ));
    }
    let n = r.u32()?;
    let numbers = (0..n).map(|_| r.u64()).collect::<Result<Vec<u64>>>()?;
    if !r.buf.is_empty() {
        return Err(Error::Corruption("logs record has trailing bytes".into()));
    }
    Ok(numbers)
}

/// A large restore on its way into the engine as a sorted file: written (durably) before the
/// file is ingested and deleted, in the same batch as the commit record of `state`, once it
/// was. Recovery that finds it ingests the file again if it is still there (ingesting the
/// same entries twice leaves the same data), then completes the commit, so a kill at any
/// point leaves the store at the commit before the restore or at `state`, never between.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingIngest {
    /// The family the file goes to.
    pub family: String,
    /// The file's name in the store directory.
    pub file: String,
    /// The state the ingestion makes current.
    pub state: CommittedState,
}

const INGEST_VERSION: u8 = 1;

impl PendingIngest {
    /// Encodes as `[u8 1][u8 len][family][u8 len][file][committed-state record]`, sealed.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = vec![INGEST_VERSION];
        for name in [&self.family, &self.file] {
            let len = u8::try_from(name.len())
                .map_err(|_| Error::Internal(format!("name {name} is too long")))?;
            out.push(len);
            out.extend_from_slice(name.as_bytes());
        }
        out.extend_from_slice(&self.state.encode()?);
        Ok(seal(out))
    }

    /// Decodes, verifying the checksum and every length.
    pub fn decode(raw: &[u8]) -> Result<Self> {
        let body = unseal(raw, "pending-ingest record")?;
        let mut r = Reader {
            buf: body,
            what: "pending-ingest record",
        };
        let version = r.take(1)?[0];
        if version != INGEST_VERSION {
            return Err(Error::Corruption(format!(
                "pending-ingest record has version {version}; this kstate reads version \
                 {INGEST_VERSION}"
            )));
        }
        let mut names = Vec::with_capacity(2);
        for _ in 0..2 {
            let len = r.take(1)?[0] as usize;
            let name = std::str::from_utf8(r.take(len)?).map_err(|_| {
                Error::Corruption("a name in the pending-ingest record is not UTF-8".into())
            })?;
            names.push(name.to_string());
        }
        let state = CommittedState::decode(r.buf)?;
        let file = names.pop().unwrap_or_default();
        let family = names.pop().unwrap_or_default();
        Ok(PendingIngest {
            family,
            file,
            state,
        })
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
            stream_time: None,
        }
    }

    #[test]
    fn logs_records_round_trip_and_refuse_damage() {
        for numbers in [vec![], vec![7], vec![4, 8, 12, u64::MAX]] {
            assert_eq!(decode_logs(&encode_logs(&numbers)).unwrap(), numbers);
        }
        let mut raw = encode_logs(&[4, 8]);
        raw[6] ^= 1;
        assert_eq!(decode_logs(&raw).unwrap_err().code(), ErrorCode::Corruption);
        assert_eq!(
            decode_logs(&[1, 2]).unwrap_err().code(),
            ErrorCode::Corruption
        );
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
    fn stream_time_uses_version_2_and_round_trips() {
        let s = CommittedState {
            stream_time: Some(i64::MIN + 5),
            ..sample()
        };
        let raw = s.encode().unwrap();
        assert_eq!(raw[0], 2);
        assert_eq!(CommittedState::decode(&raw).unwrap(), s);
        assert_eq!(
            sample().encode().unwrap()[0],
            1,
            "no stream time: version 1"
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
        let h = StoreHeader::new(
            ValueFormat::Timestamped,
            StoreKind::Window {
                segment_interval: 60_000,
            },
        );
        assert_eq!(h.format_version, FORMAT_VERSION);
        assert_eq!(StoreHeader::decode(&h.encode()).unwrap(), h);
        let kv = StoreHeader::new(ValueFormat::Plain, StoreKind::KeyValue);
        assert_eq!(kv.format_version, 1);
        assert_eq!(
            kv.encode().len(),
            9,
            "key-value headers keep the 0.1 layout"
        );
        assert_eq!(StoreHeader::decode(&kv.encode()).unwrap(), kv);
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
    fn pending_ingest_round_trips_and_detects_damage() {
        let p = PendingIngest {
            family: "keyValueWithTimestamp".into(),
            file: "kstate-restore-7.sst".into(),
            state: sample(),
        };
        let raw = p.encode().unwrap();
        assert_eq!(PendingIngest::decode(&raw).unwrap(), p);
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x10;
            assert_eq!(
                PendingIngest::decode(&bad).unwrap_err().code(),
                ErrorCode::Corruption,
                "byte {i}"
            );
        }
        assert!(PendingIngest::decode(&raw[..raw.len() - 5]).is_err());
    }

    #[test]
    fn pending_commit_round_trips_and_detects_damage() {
        let p = PendingCommit {
            txn: 9,
            families: vec!["keyValueWithTimestamp".into(), "default".into()],
            ranges: vec![],
            state: sample(),
        };
        let raw = p.encode().unwrap();
        assert_eq!(raw[0], PENDING_VERSION);
        assert_eq!(PendingCommit::decode(&raw).unwrap(), p);
        let with_ranges = PendingCommit {
            ranges: vec![RangeDelete {
                slot: 1,
                from: vec![],
                to: vec![0x80, 0, 0, 0, 0, 0, 0, 3],
            }],
            state: CommittedState {
                stream_time: Some(-1),
                ..sample()
            },
            ..p.clone()
        };
        let raw3 = with_ranges.encode().unwrap();
        assert_eq!(raw3[0], PENDING_VERSION_RANGES);
        assert_eq!(PendingCommit::decode(&raw3).unwrap(), with_ranges);
        for i in 0..raw3.len() {
            let mut bad = raw3.clone();
            bad[i] ^= 0x10;
            assert!(PendingCommit::decode(&bad).is_err(), "byte {i}");
        }
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
