//! The manifest of a published checkpoint: JSON, so an operator can read it with any tool,
//! wrapped with a CRC-32 of the exact bytes of its body.
//!
//! The object is `{"crc32":N,"body":{...}}`. The CRC covers the body's bytes as written
//! (kept verbatim when read, never re-serialized), so a reader that does not know a field
//! a newer writer added still checks the checksum right.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::{Error, Result};

/// Version of the manifest format this build writes and the newest it reads. A reader
/// refuses a newer one (its files may need rules this build does not know).
pub const MANIFEST_FORMAT: u32 = 1;

/// One published checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`] of the writer.
    pub format: u32,
    /// Version of the kstate that published it.
    pub kstate_version: String,
    /// Newest store format version of that kstate (an older reader may refuse the store).
    pub store_format: u32,
    /// The scope's application id.
    pub application_id: String,
    /// The scope's task.
    pub task: String,
    /// The scope's store name.
    pub store: String,
    /// Commit sequence of the state.
    pub sequence: u64,
    /// Changelog offsets of that commit.
    pub offsets: Vec<Offset>,
    /// The commit's metadata blob (Kafka's `Position`), hex.
    pub metadata_hex: Option<String>,
    /// Window, session and versioned stores: the commit's stream time.
    pub stream_time: Option<i64>,
    /// Wall-clock time of publication, ms since the epoch, by the writer's clock.
    pub published_at_ms: i64,
    /// The publisher's writer id.
    pub writer: String,
    /// Every file of the checkpoint directory.
    pub files: Vec<ManifestFile>,
}

/// One changelog offset of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Committed offset.
    pub offset: i64,
}

/// One file of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// Its name in the checkpoint (and restored) directory.
    pub name: String,
    /// Its object key relative to the scope (`files/<sha256>`).
    pub object: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the content, hex.
    pub sha256: String,
}

#[derive(Serialize, Deserialize)]
struct Envelope<'a> {
    crc32: u32,
    #[serde(borrow)]
    body: &'a RawValue,
}

impl Manifest {
    /// The commit's metadata blob.
    pub fn metadata(&self) -> Option<Vec<u8>> {
        self.metadata_hex.as_deref().and_then(from_hex)
    }

    /// The object bytes.
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        let body = serde_json::to_string(self)
            .map_err(|e| Error::Internal(format!("manifest encoding: {e}")))?;
        let raw = RawValue::from_string(body)
            .map_err(|e| Error::Internal(format!("manifest encoding: {e}")))?;
        let envelope = Envelope {
            crc32: crc32fast::hash(raw.get().as_bytes()),
            body: &raw,
        };
        serde_json::to_vec(&envelope)
            .map_err(|e| Error::Internal(format!("manifest encoding: {e}")))
    }

    /// Parses and checks object bytes; the error says why they are unusable.
    pub(crate) fn decode(bytes: &[u8]) -> std::result::Result<Manifest, String> {
        let envelope: Envelope<'_> =
            serde_json::from_slice(bytes).map_err(|e| format!("not a manifest: {e}"))?;
        let crc = crc32fast::hash(envelope.body.get().as_bytes());
        if crc != envelope.crc32 {
            return Err(format!(
                "checksum mismatch (stored {:08x}, computed {crc:08x})",
                envelope.crc32
            ));
        }
        #[derive(Deserialize)]
        struct Version {
            format: u32,
        }
        let version: Version = serde_json::from_str(envelope.body.get())
            .map_err(|e| format!("manifest body without a format: {e}"))?;
        if version.format > MANIFEST_FORMAT {
            return Err(format!(
                "manifest format {} is newer than {MANIFEST_FORMAT}, the newest this kstate reads",
                version.format
            ));
        }
        let manifest: Manifest = serde_json::from_str(envelope.body.get())
            .map_err(|e| format!("bad manifest body: {e}"))?;
        // A restore writes every file to its own path, several at once.
        let mut names = std::collections::HashSet::new();
        if let Some(twice) = manifest.files.iter().find(|f| !names.insert(&f.name)) {
            return Err(format!("the manifest names the file {} twice", twice.name));
        }
        Ok(manifest)
    }
}

/// Lower-case hex.
pub(crate) fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            format: MANIFEST_FORMAT,
            kstate_version: "0.1.0".into(),
            store_format: 2,
            application_id: "app".into(),
            task: "0_1".into(),
            store: "s".into(),
            sequence: 7,
            offsets: vec![Offset {
                topic: "t".into(),
                partition: 1,
                offset: 42,
            }],
            metadata_hex: Some(to_hex(b"pos\x00\xff")),
            stream_time: Some(-5),
            published_at_ms: 1_700_000_000_000,
            writer: "w".into(),
            files: vec![ManifestFile {
                name: "000009.sst".into(),
                object: "files/ab".into(),
                size: 3,
                sha256: "ab".into(),
            }],
        }
    }

    #[test]
    fn round_trips_and_detects_any_changed_byte_of_the_body() {
        let m = sample();
        let bytes = m.encode().unwrap();
        assert_eq!(Manifest::decode(&bytes).unwrap(), m);
        assert_eq!(m.metadata().unwrap(), b"pos\x00\xff");
        let text = String::from_utf8(bytes).unwrap();
        let tampered = text.replace("\"offset\":42", "\"offset\":43");
        assert_ne!(tampered, text);
        let err = Manifest::decode(tampered.as_bytes()).unwrap_err();
        assert!(err.contains("checksum mismatch"), "{err}");
    }

    #[test]
    fn a_file_named_twice_is_refused() {
        let mut m = sample();
        m.files.push(m.files[0].clone());
        let err = Manifest::decode(&m.encode().unwrap()).unwrap_err();
        assert!(err.contains("names the file 000009.sst twice"), "{err}");
    }

    #[test]
    fn a_newer_format_is_refused() {
        let mut m = sample();
        m.format = MANIFEST_FORMAT + 1;
        let err = Manifest::decode(&m.encode().unwrap()).unwrap_err();
        assert!(err.contains("newer"), "{err}");
    }
}
