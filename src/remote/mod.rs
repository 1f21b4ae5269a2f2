//! Checkpoints in an object store (cargo feature `remote`): publish a local checkpoint
//! ([`crate::CheckpointInfo`]) incrementally, list and verify what was published, restore
//! one into a new directory, and garbage-collect old ones. Targets are `file:///path` (a
//! shared file system) and `s3://bucket/prefix` (AWS or any S3-compatible server).
//!
//! Layout under the target, per store (see [`StoreScope`]):
//! `<app>/<task>/<store>/files/<sha256 of the content>` holds every file once, and
//! `<app>/<task>/<store>/manifests/<sequence:020>-<writer>.json` names the files of one
//! checkpoint with its commit. Files are uploaded before their manifest; a manifest is
//! written create-only, so two publishers (a zombie and the task's new owner) never
//! overwrite each other's history; garbage collection deletes manifests before files.
//! docs/operations.md ("Checkpoints in an object store") has the rules and failure modes.
//!
//! **Order.** "Newest" (for [`Remote::list`], a restore of the newest, and the manifests a
//! gc keeps) is decided by the changelog offsets first, not the commit sequence: after a
//! task moves, the new owner restores sequence s and commits s+1, s+2, ... while a zombie
//! on the old instance may go on committing s+1, s+2, ... of its own, stale lineage.
//! Under exactly-once the zombie cannot commit changelog records past the point where the
//! new owner took over (it is fenced), so offsets order the two lineages where sequences
//! cannot. Within one lineage offsets and sequences grow together.
//!
//! **Publish against gc.** A publish may reuse any file object it finds, even one that no
//! manifest the gc keeps names (a zombie's table file, a file of a manifest about to be
//! dropped), and object stores have no conditional delete, so a gc working from a listing
//! can delete an object between a publisher's listing and its manifest. Lease markers
//! (see [`Lease`]) exclude that: each side writes its marker, then looks for the other
//! side's; a publish waits while another writer's gc runs, and a gc that finds another
//! writer publishing deletes no file. The grace period stays as a second guard (and for
//! publishers without leases).
//!
//! The API is synchronous: the [`Remote`] owns a current-thread tokio runtime and blocks on
//! it, so callers (the C and Java adapters later) never see async code.

mod manifest;

use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::prefix::PrefixStore;
use object_store::{
    GetResultPayload, MultipartUpload, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
};
use sha2::{Digest, Sha256};

pub use manifest::{Manifest, ManifestFile, MANIFEST_FORMAT};

use crate::store::lock::{sibling, sync_dir, Staging, StoreLock};
use crate::sync::MutexExt;
use crate::{CheckpointInfo, Error, Result};

/// Files at most this large go up in one request; larger ones in parts of this size.
const PART_BYTES: usize = 8 << 20;

/// The piece size of reads of a `file://` target's objects and of local files.
const READ_BYTES: usize = 1 << 20;

/// Files a restore downloads at once, each on its own thread: requests in flight hide the
/// object store's latency, and hashing, writing and syncing spread over the cores.
const DOWNLOAD_THREADS: usize = 4;

/// What a download thread reports to the restore's thread.
enum Downloaded {
    /// This many more bytes were received.
    Bytes(u64),
    /// One more file was received, checked and synced.
    File,
}

/// How long a lease marker counts as live after its last write (see [`Lease`]).
const LEASE: Duration = Duration::from_secs(60);

/// Where the checkpoints of one store live: the Kafka Streams application id, the task id
/// and the store name. Each part is one path segment of the object keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StoreScope {
    /// `application.id` of the Kafka Streams application.
    pub application_id: String,
    /// The task (`0_1`).
    pub task: String,
    /// The store's name.
    pub store: String,
}

impl StoreScope {
    /// Builds a scope.
    pub fn new(
        application_id: impl Into<String>,
        task: impl Into<String>,
        store: impl Into<String>,
    ) -> Self {
        StoreScope {
            application_id: application_id.into(),
            task: task.into(),
            store: store.into(),
        }
    }

    /// The key prefix `<app>/<task>/<store>`, refusing parts that are not one plain path
    /// segment (Kafka's own names use `[A-Za-z0-9._-]`).
    fn prefix(&self) -> Result<String> {
        for (what, part) in [
            ("application id", &self.application_id),
            ("task", &self.task),
            ("store name", &self.store),
        ] {
            check_segment(what, part)?;
        }
        Ok(format!(
            "{}/{}/{}",
            self.application_id, self.task, self.store
        ))
    }
}

fn check_segment(what: &str, part: &str) -> Result<()> {
    let plain = part
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if part.is_empty() || part == "." || part == ".." || !plain {
        return Err(Error::InvalidArgument(format!(
            "{what} {part:?} cannot be part of an object key: use [A-Za-z0-9._-]"
        )));
    }
    Ok(())
}

/// Settings of a [`Remote`].
#[derive(Debug, Clone)]
pub struct RemoteSettings {
    /// `s3://` only: extra S3 settings applied after the `AWS_*` environment, by their
    /// `object_store` names (`aws_endpoint`, `aws_region`, `aws_access_key_id`,
    /// `aws_allow_http`, ...; the `AWS_` prefix and case are optional). `file://` refuses
    /// any.
    pub options: Vec<(String, String)>,
    /// Upper bound on upload bandwidth in bytes per second (`None`: unbounded).
    pub max_upload_bytes_per_sec: Option<u64>,
    /// Upper bound on download bandwidth in bytes per second, all the restores and checks
    /// of this `Remote` together (`None`: unbounded).
    pub max_download_bytes_per_sec: Option<u64>,
    /// Garbage collection never deletes a file object younger than this, referenced or
    /// not: it may belong to a checkpoint whose manifest is not written yet.
    pub gc_grace: Duration,
    /// Names this publisher in manifest keys and contents; must be unique among concurrent
    /// publishers of a store (the default is built from the host name, process id and
    /// clock). `[A-Za-z0-9._-]` only.
    pub writer_id: String,
}

impl Default for RemoteSettings {
    fn default() -> Self {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| {
                h.trim()
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .take(32)
                    .collect::<String>()
            })
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "host".into());
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        RemoteSettings {
            options: Vec::new(),
            max_upload_bytes_per_sec: None,
            max_download_bytes_per_sec: None,
            gc_grace: Duration::from_secs(3600),
            writer_id: format!(
                "{host}-{}-{:x}",
                std::process::id(),
                nanos & 0xffff_ffff_ffff
            ),
        }
    }
}

/// What [`Remote::publish`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishReport {
    /// The manifest's key, relative to the scope (`manifests/...json`).
    pub manifest: String,
    /// False when this writer had already published a manifest for the same commit
    /// sequence (nothing was overwritten; the files were still checked).
    pub manifest_created: bool,
    /// Names (in the checkpoint) of the files uploaded.
    pub uploaded: Vec<String>,
    /// Names of the files whose content the target already held.
    pub reused: Vec<String>,
    /// Bytes uploaded.
    pub bytes_uploaded: u64,
    /// Bytes not uploaded because the target held them.
    pub bytes_reused: u64,
}

/// One published checkpoint, as [`Remote::list`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestSummary {
    /// The manifest's key, relative to the scope.
    pub key: String,
    /// The manifest, or why it cannot be read (a bad checksum, an unknown format).
    pub manifest: std::result::Result<Manifest, String>,
}

/// What [`Remote::restore`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreReport {
    /// The manifest's key, relative to the scope.
    pub manifest_key: String,
    /// The manifest restored (its commit sequence, offsets, metadata, stream time).
    pub manifest: Manifest,
    /// Files written.
    pub files: usize,
    /// Bytes downloaded.
    pub bytes: u64,
}

/// What [`Remote::gc`] deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Manifests deleted (keys relative to the scope).
    pub manifests_deleted: Vec<String>,
    /// File objects deleted.
    pub files_deleted: usize,
    /// Unreferenced file objects kept because they are younger than the grace period.
    pub files_in_grace: usize,
    /// Other writers publishing while this gc ran (their live lease markers): it then
    /// deleted manifests only, no file, since a publish in flight may name any file it
    /// found in the target. Empty when it could delete files.
    pub publishers: Vec<String>,
    /// The gc stopped deleting files after half its lease (60 s); the next one continues.
    pub out_of_time: bool,
}

/// How far a restore is, as [`Remote::restore_with_progress`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestoreProgress {
    /// Files completely downloaded and checked.
    pub files_done: usize,
    /// Files of the checkpoint.
    pub files_total: usize,
    /// Bytes downloaded so far.
    pub bytes_done: u64,
    /// Bytes of the checkpoint.
    pub bytes_total: u64,
}

/// What [`Remote::check`] found about one manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// The manifest, when it could be read.
    pub manifest: Option<Manifest>,
    /// Every problem found, each naming the manifest and, for a file, its object and
    /// name. Empty when the checkpoint is whole.
    pub problems: Vec<String>,
}

/// Which operation holds a [`Lease`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeaseKind {
    Publish,
    Gc,
}

impl LeaseKind {
    fn name(self) -> &'static str {
        match self {
            LeaseKind::Publish => "publish",
            LeaseKind::Gc => "gc",
        }
    }
}

/// A lease marker `<scope>/leases/<writer>/<kind>-<nonce>`: written before a publish
/// lists the files it may reuse, or before a gc looks for publishers, rewritten every
/// quarter [`LEASE`] while the operation runs, deleted at its end. Each side writes its
/// own marker and then lists the other side's, so of a publish and a gc that overlap at
/// least one sees the other (the store's list is consistent with its puts): the publish
/// waits for the gc to end, or the gc deletes no file.
struct Lease {
    /// The marker's object key.
    key: String,
    /// When the marker was last written (taken before the request).
    written: Instant,
    /// Set when the marker went unrefreshed for half a lease: someone may have taken it
    /// for expired.
    gap: bool,
    /// The lease's length ([`LEASE`] but in tests).
    length: Duration,
}

impl Lease {
    /// Whether the marker is younger than half a lease: live to every reader whose clock
    /// is within half a lease of ours.
    fn fresh(&self) -> bool {
        self.written.elapsed() < self.length / 2
    }

    fn refresh(&mut self, remote: &Remote) -> Result<()> {
        let written = Instant::now();
        let body = format!(
            "{{\"writer\":\"{}\",\"pid\":{}}}",
            remote.settings.writer_id,
            std::process::id()
        );
        remote
            .runtime
            .block_on(
                remote
                    .store
                    .put(&ObjectPath::from(self.key.as_str()), PutPayload::from(body)),
            )
            .map_err(|e| remote.err(&self.key, e))?;
        self.written = written;
        Ok(())
    }

    /// Rewrites the marker when a quarter lease old; notes a gap past half a lease.
    fn keep_alive(&mut self, remote: &Remote) -> Result<()> {
        let age = self.written.elapsed();
        if age >= self.length / 2 {
            self.gap = true;
        }
        if age >= self.length / 4 {
            self.refresh(remote)?;
        }
        Ok(())
    }
}

/// A bytes/s token bucket: a burst of at most one second's worth.
struct Bucket {
    /// The bound in bytes per second.
    rate: u64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// A bucket of `rate` bytes/s, full.
    fn new(rate: u64) -> Mutex<Bucket> {
        Mutex::new(Bucket {
            rate,
            tokens: rate as f64,
            last: Instant::now(),
        })
    }

    /// Blocks until `n` bytes may go.
    fn take(&mut self, n: u64) {
        let rate = self.rate as f64;
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.last).as_secs_f64() * rate).min(rate);
        self.last = now;
        self.tokens -= n as f64;
        if self.tokens < 0.0 {
            let wait = Duration::from_secs_f64(-self.tokens / rate);
            std::thread::sleep(wait);
            self.tokens = 0.0;
            self.last = Instant::now();
        }
    }
}

/// Waits until `bucket`, when there is one, lets `bytes` more go.
fn pace(bucket: &Option<Mutex<Bucket>>, bytes: u64) {
    if let Some(bucket) = bucket {
        bucket.lock_recover().take(bytes);
    }
}

/// Key of the content-hash cache of table files: they never change once written, and a
/// checkpoint hard-links them, so (name, size, inode, mtime) names one content.
type HashKey = (String, u64, u64, i64);

/// A checkpoint target (see the module documentation).
pub struct Remote {
    uri: String,
    store: Arc<dyn ObjectStore>,
    runtime: tokio::runtime::Runtime,
    settings: RemoteSettings,
    upload_bucket: Option<Mutex<Bucket>>,
    download_bucket: Option<Mutex<Bucket>>,
    hashes: Mutex<HashMap<HashKey, String>>,
    /// Publishes share it, a gc takes it alone: this writer's own operations never
    /// overlap (the leases only guard against other writers).
    ops: RwLock<()>,
    /// Makes each lease marker key of this `Remote` unique.
    nonce: AtomicU64,
    /// [`LEASE`], shorter in tests.
    lease: Duration,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("uri", &self.uri).finish()
    }
}

/// An object-store failure, worded with the key it was about.
fn remote_error(uri: &str, key: &str, e: object_store::Error) -> Error {
    Error::io(
        format!("{}/{key}", uri.trim_end_matches('/')),
        std::io::Error::other(e.to_string()),
    )
}

impl Remote {
    /// Opens the target at `uri`: `file:///absolute/path` (created if missing) or
    /// `s3://bucket[/prefix]`, configured from the standard `AWS_*` environment
    /// (credentials, `AWS_REGION`, `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`, ...) and then
    /// `settings.options`. Makes no request.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another scheme, a bad option or writer id;
    /// [`Error::Io`] when the directory or the runtime cannot be created.
    pub fn open(uri: &str, settings: &RemoteSettings) -> Result<Remote> {
        check_segment("writer id", &settings.writer_id)?;
        for (name, bound) in [
            (
                "max_upload_bytes_per_sec",
                settings.max_upload_bytes_per_sec,
            ),
            (
                "max_download_bytes_per_sec",
                settings.max_download_bytes_per_sec,
            ),
        ] {
            if bound == Some(0) {
                return Err(Error::InvalidArgument(format!(
                    "{name} must be positive (None for unbounded)"
                )));
            }
        }
        let store: Arc<dyn ObjectStore> = if let Some(path) = uri.strip_prefix("file://") {
            if !settings.options.is_empty() {
                return Err(Error::InvalidArgument(
                    "a file:// checkpoint target takes no options".into(),
                ));
            }
            if !path.starts_with('/') {
                return Err(Error::InvalidArgument(format!(
                    "{uri}: a file:// target needs an absolute path (file:///dir)"
                )));
            }
            std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))?;
            let local = LocalFileSystem::new_with_prefix(path)
                .map_err(|e| Error::InvalidArgument(format!("{uri}: {e}")))?;
            Arc::new(local)
        } else if let Some(rest) = uri.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(Error::InvalidArgument(format!("{uri}: no bucket")));
            }
            let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
            for (key, value) in &settings.options {
                let lower = key.to_ascii_lowercase();
                let name = if lower.starts_with("aws_") {
                    lower
                } else {
                    format!("aws_{lower}")
                };
                let parsed: AmazonS3ConfigKey = name.parse().map_err(|e| {
                    Error::InvalidArgument(format!("unknown S3 setting {key:?}: {e}"))
                })?;
                builder = builder.with_config(parsed, value);
            }
            let s3 = builder
                .build()
                .map_err(|e| Error::InvalidArgument(format!("{uri}: {e}")))?;
            let prefix = prefix.trim_matches('/');
            if prefix.is_empty() {
                Arc::new(s3)
            } else {
                Arc::new(PrefixStore::new(s3, prefix))
            }
        } else {
            return Err(Error::InvalidArgument(format!(
                "checkpoint target {uri:?}: use file:///path or s3://bucket/prefix"
            )));
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::io(uri, e))?;
        Ok(Remote {
            uri: uri.to_string(),
            store,
            runtime,
            upload_bucket: settings.max_upload_bytes_per_sec.map(Bucket::new),
            download_bucket: settings.max_download_bytes_per_sec.map(Bucket::new),
            settings: settings.clone(),
            hashes: Mutex::new(HashMap::new()),
            ops: RwLock::new(()),
            nonce: AtomicU64::new(0),
            lease: LEASE,
        })
    }

    /// Sets the lease length (60 s otherwise) of this `Remote`'s markers and of the markers
    /// it reads. Test support, so that the tests reach the expiry and gap paths in less
    /// than a minute; every `Remote` of a target must use the same length.
    #[doc(hidden)]
    pub fn with_lease(mut self, lease: Duration) -> Remote {
        self.lease = lease;
        self
    }

    /// The URI given to [`Remote::open`].
    pub fn uri(&self) -> &str {
        &self.uri
    }

    fn err(&self, key: &str, e: object_store::Error) -> Error {
        remote_error(&self.uri, key, e)
    }

    /// Publishes `checkpoint` (a directory written by a store's `checkpoint`, still
    /// holding the files it lists) for `scope`: uploads each file whose content the target
    /// does not hold yet, then writes the manifest create-only.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad scope; [`Error::Io`] when a local file cannot be
    /// read or changed size, or a request fails. A failed publish leaves at most
    /// unreferenced file objects, which garbage collection removes after the grace period.
    pub fn publish(
        &self,
        scope: &StoreScope,
        checkpoint: &CheckpointInfo,
    ) -> Result<PublishReport> {
        let prefix = scope.prefix()?;
        let _local = self.ops.read().unwrap_or_else(|e| e.into_inner());
        let mut lease = self.lease_acquire(&prefix, LeaseKind::Publish)?;
        let result = self.publish_leased(scope, &prefix, checkpoint, &mut lease);
        // Best effort: a marker left behind only delays file deletion until it expires.
        let _ = self.delete(&lease.key);
        result
    }

    /// [`Remote::publish`] while holding the publish lease `lease`.
    fn publish_leased(
        &self,
        scope: &StoreScope,
        prefix: &str,
        checkpoint: &CheckpointInfo,
        lease: &mut Lease,
    ) -> Result<PublishReport> {
        let mut passes = 0;
        // Files an earlier pass uploaded count as uploaded, not reused, in the report.
        let mut uploaded_before = BTreeSet::new();
        let (report, files) = loop {
            passes += 1;
            self.await_no_gc(prefix, lease)?;
            let mut pass = self.upload_missing(prefix, checkpoint, lease)?;
            let report = &mut pass.0;
            let (earlier, reused): (Vec<String>, Vec<String>) = report
                .reused
                .drain(..)
                .partition(|name| uploaded_before.contains(name));
            report.reused = reused;
            for name in earlier {
                let bytes = checkpoint
                    .files
                    .iter()
                    .find(|f| f.name == name)
                    .map_or(0, |f| f.bytes);
                report.bytes_reused -= bytes;
                report.bytes_uploaded += bytes;
                report.uploaded.push(name);
            }
            uploaded_before.extend(report.uploaded.iter().cloned());
            // The files listed as present are only safe to name while this publisher's
            // lease was visible to every gc the whole time since the listing; after a gap
            // (a paused process, one request slower than half the lease) a gc may have
            // deleted one of them, so check and upload again under a fresh lease.
            if !lease.gap && lease.fresh() {
                break pass;
            }
            if passes >= 3 {
                return Err(Error::io(
                    format!("{}/{prefix}", self.uri.trim_end_matches('/')),
                    std::io::Error::other(
                        "publish could not keep its lease: three passes each had a gap longer \
                         than half the lease (process paused, or requests too slow)",
                    ),
                ));
            }
            lease.refresh(self)?;
            lease.gap = false;
        };
        self.write_manifest(scope, prefix, checkpoint, report, files)
    }

    /// Uploads every file of `checkpoint` whose content the target does not hold,
    /// refreshing `lease` between files.
    fn upload_missing(
        &self,
        prefix: &str,
        checkpoint: &CheckpointInfo,
        lease: &mut Lease,
    ) -> Result<(PublishReport, Vec<ManifestFile>)> {
        let files_prefix = format!("{prefix}/files");
        let present = self.list_sizes(&files_prefix)?;
        let mut report = PublishReport {
            manifest: String::new(),
            manifest_created: false,
            uploaded: Vec::new(),
            reused: Vec::new(),
            bytes_uploaded: 0,
            bytes_reused: 0,
        };
        let mut files = Vec::with_capacity(checkpoint.files.len());
        for file in &checkpoint.files {
            if is_info_log(&file.name) {
                // RocksDB's diagnostic log of the checkpoint's private open: not state, and
                // different every time.
                continue;
            }
            lease.keep_alive(self)?;
            let path = checkpoint.path.join(&file.name);
            let sha256 = self.content_hash(&file.name, &path)?;
            let object = format!("files/{sha256}");
            if present.get(&sha256) == Some(&file.bytes) {
                report.reused.push(file.name.clone());
                report.bytes_reused += file.bytes;
            } else {
                self.upload(&format!("{prefix}/{object}"), &path, file.bytes, lease)?;
                report.uploaded.push(file.name.clone());
                report.bytes_uploaded += file.bytes;
            }
            files.push(ManifestFile {
                name: file.name.clone(),
                object,
                size: file.bytes,
                sha256,
            });
        }
        Ok((report, files))
    }

    /// Writes the manifest of `checkpoint` naming `files`, create-only.
    fn write_manifest(
        &self,
        scope: &StoreScope,
        prefix: &str,
        checkpoint: &CheckpointInfo,
        mut report: PublishReport,
        files: Vec<ManifestFile>,
    ) -> Result<PublishReport> {
        let manifest = Manifest {
            format: MANIFEST_FORMAT,
            kstate_version: env!("CARGO_PKG_VERSION").to_string(),
            store_format: crate::format::meta::FORMAT_VERSION,
            application_id: scope.application_id.clone(),
            task: scope.task.clone(),
            store: scope.store.clone(),
            sequence: checkpoint.sequence,
            offsets: checkpoint
                .offsets
                .iter()
                .map(|(tp, offset)| manifest::Offset {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    offset: *offset,
                })
                .collect(),
            metadata_hex: checkpoint.metadata.as_deref().map(manifest::to_hex),
            stream_time: checkpoint.stream_time,
            published_at_ms: now_ms(),
            writer: self.settings.writer_id.clone(),
            files,
        };
        let key = format!(
            "manifests/{:020}-{}.json",
            checkpoint.sequence, self.settings.writer_id
        );
        let bytes = manifest.encode()?;
        crate::failpoint::hit("remote-before-manifest");
        let location = ObjectPath::from(format!("{prefix}/{key}"));
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let put = self.runtime.block_on(self.store.put_opts(
            &location,
            PutPayload::from(bytes),
            options,
        ));
        report.manifest_created = match put {
            Ok(_) => true,
            Err(object_store::Error::AlreadyExists { .. }) => false,
            Err(e) => return Err(self.err(&format!("{prefix}/{key}"), e)),
        };
        report.manifest = key;
        Ok(report)
    }

    /// The SHA-256 (hex) of a checkpoint file; table files' hashes are cached.
    fn content_hash(&self, name: &str, path: &Path) -> Result<String> {
        use std::os::unix::fs::MetadataExt;
        let table = name.ends_with(".sst") || name.ends_with(".blob");
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        let cache_key = (
            name.to_string(),
            meta.len(),
            meta.ino(),
            meta.mtime_nsec() + meta.mtime() * 1_000_000_000,
        );
        if table {
            if let Some(hash) = self.hashes.lock_recover().get(&cache_key) {
                return Ok(hash.clone());
            }
        }
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; READ_BYTES];
        loop {
            let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        let hash = manifest::to_hex(&hasher.finalize());
        if table {
            self.hashes.lock_recover().insert(cache_key, hash.clone());
        }
        Ok(hash)
    }

    /// Object names (last segment) and sizes under `prefix`.
    fn list_sizes(&self, prefix: &str) -> Result<HashMap<String, u64>> {
        let metas = self.list_objects(prefix)?;
        Ok(metas
            .into_iter()
            .map(|(name, size, _)| (name, size))
            .collect())
    }

    /// (last segment, size, last modified ms) of every object under `prefix`.
    fn list_objects(&self, prefix: &str) -> Result<Vec<(String, u64, i64)>> {
        let location = ObjectPath::from(prefix);
        let metas: Vec<object_store::ObjectMeta> = self
            .runtime
            .block_on(self.store.list(Some(&location)).try_collect())
            .map_err(|e| self.err(prefix, e))?;
        Ok(metas
            .into_iter()
            .filter_map(|m| {
                let name = m.location.filename()?.to_string();
                Some((name, m.size, m.last_modified.timestamp_millis()))
            })
            .collect())
    }

    /// Uploads the local file `path` (expected `size` bytes) to `key`, in parts when large,
    /// within the bandwidth bound, keeping `lease` alive between parts.
    fn upload(&self, key: &str, path: &Path, size: u64, lease: &mut Lease) -> Result<()> {
        let location = ObjectPath::from(key);
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let changed = |sent: u64| {
            Error::io(
                path,
                std::io::Error::other(format!(
                    "changed size while uploading ({sent} bytes, expected {size})"
                )),
            )
        };
        if size <= PART_BYTES as u64 {
            let data = self.read_part(&mut file, path)?;
            if data.len() as u64 != size {
                return Err(changed(data.len() as u64));
            }
            // Content-addressed: overwriting an object with the same name writes the same
            // bytes, so no condition is needed.
            self.runtime
                .block_on(self.store.put(&location, PutPayload::from(data)))
                .map_err(|e| self.err(key, e))?;
            return Ok(());
        }
        let mut upload = self
            .runtime
            .block_on(self.store.put_multipart(&location))
            .map_err(|e| self.err(key, e))?;
        let mut send_parts = || -> Result<()> {
            let mut sent = 0u64;
            loop {
                lease.keep_alive(self)?;
                let data = self.read_part(&mut file, path)?;
                if data.is_empty() {
                    break;
                }
                sent += data.len() as u64;
                self.runtime
                    .block_on(upload.put_part(PutPayload::from(data)))
                    .map_err(|e| self.err(key, e))?;
            }
            if sent != size {
                return Err(changed(sent));
            }
            Ok(())
        };
        match send_parts() {
            Ok(()) => self
                .runtime
                .block_on(upload.complete())
                .map(|_| ())
                .map_err(|e| self.err(key, e)),
            Err(e) => {
                // Best effort: S3 drops abandoned parts by its lifecycle rules otherwise.
                let _ = self.runtime.block_on(upload.abort());
                Err(e)
            }
        }
    }

    /// The next part (at most [`PART_BYTES`]) of `file`, once the bandwidth bound allows.
    fn read_part(&self, file: &mut std::fs::File, path: &Path) -> Result<Vec<u8>> {
        let mut part = Vec::with_capacity(PART_BYTES);
        Read::take(&mut *file, PART_BYTES as u64)
            .read_to_end(&mut part)
            .map_err(|e| Error::io(path, e))?;
        pace(&self.upload_bucket, part.len() as u64);
        Ok(part)
    }

    /// Every manifest of `scope`, newest first: by the sum of its changelog offsets, then
    /// commit sequence, publication time and key. Unreadable manifests are listed first,
    /// with the reason (their offsets are unknown; among themselves by their key's
    /// sequence). Offsets come first because two lineages of one task (a zombie that
    /// keeps committing on stale state and the new owner that restored one of its
    /// checkpoints) reuse the same sequence numbers, while exactly-once stops the zombie's
    /// offsets where the new owner started.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad scope; [`Error::Io`] when a request fails.
    pub fn list(&self, scope: &StoreScope) -> Result<Vec<ManifestSummary>> {
        let prefix = scope.prefix()?;
        let mut out = Vec::new();
        for (name, _, _) in self.list_objects(&format!("{prefix}/manifests"))? {
            let key = format!("manifests/{name}");
            let manifest = match self.get_bytes(&format!("{prefix}/{key}")) {
                Ok(bytes) => Manifest::decode(&bytes),
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    // Deleted by a garbage collection since the listing.
                    continue;
                }
                Err(e) => return Err(e),
            };
            out.push(ManifestSummary { key, manifest });
        }
        out.sort_by_key(|s| std::cmp::Reverse(order_key(s)));
        Ok(out)
    }

    fn get_bytes(&self, key: &str) -> Result<Vec<u8>> {
        let location = ObjectPath::from(key);
        let result = self.runtime.block_on(async {
            let got = self.store.get(&location).await?;
            got.bytes().await
        });
        match result {
            Ok(bytes) => Ok(bytes.to_vec()),
            Err(object_store::Error::NotFound { .. }) => Err(Error::io(
                format!("{}/{key}", self.uri.trim_end_matches('/')),
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such object"),
            )),
            Err(e) => Err(self.err(key, e)),
        }
    }

    /// Reads and checks one manifest (`key` as [`Remote::list`] gives it).
    fn read_manifest(&self, prefix: &str, key: &str) -> Result<Manifest> {
        let bytes = self.get_bytes(&format!("{prefix}/{key}"))?;
        Manifest::decode(&bytes).map_err(|why| Error::Corruption(format!("manifest {key}: {why}")))
    }

    /// Checks the manifest `key` of `scope`: its checksum and format, and that every file
    /// it names exists with its size. Returns the manifest.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the first problem; [`Error::Io`] when a request fails.
    pub fn verify(&self, scope: &StoreScope, key: &str) -> Result<Manifest> {
        let prefix = scope.prefix()?;
        let manifest = self.read_manifest(&prefix, key)?;
        let present = self.list_sizes(&format!("{prefix}/files"))?;
        for file in &manifest.files {
            let name = file.object.trim_start_matches("files/");
            match present.get(name) {
                Some(size) if *size == file.size => {}
                Some(size) => {
                    return Err(Error::Corruption(format!(
                        "checkpoint {key}: object {} of {} has {size} bytes, the manifest says {}",
                        file.object, file.name, file.size
                    )))
                }
                None => {
                    return Err(Error::Corruption(format!(
                        "checkpoint {key}: object {} ({}) is missing from {}",
                        file.object, file.name, self.uri
                    )))
                }
            }
        }
        Ok(manifest)
    }

    /// Downloads the checkpoint `key` of `scope` (the newest readable one when `None`) into
    /// the new directory `dest`, which then opens as a normal store of its kind holding that
    /// commit. The files go to a hidden sibling first and are checked against their sizes
    /// and SHA-256; only a complete, checked copy is renamed to `dest`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `dest` exists or nothing was published;
    /// [`Error::Corruption`] when the manifest is unreadable or an object is missing or
    /// differs from it; [`Error::Locked`] while a store or another restore uses `dest`;
    /// [`Error::Io`] for requests and local files. On error nothing is left at `dest`.
    pub fn restore(
        &self,
        scope: &StoreScope,
        key: Option<&str>,
        dest: &Path,
    ) -> Result<RestoreReport> {
        self.restore_with_progress(scope, key, dest, &mut |_| {})
    }

    /// [`Remote::restore`], calling `progress` after each piece of data received and after
    /// each file (the last call has `files_done == files_total`).
    ///
    /// # Errors
    /// As [`Remote::restore`].
    pub fn restore_with_progress(
        &self,
        scope: &StoreScope,
        key: Option<&str>,
        dest: &Path,
        progress: &mut dyn FnMut(RestoreProgress),
    ) -> Result<RestoreReport> {
        let prefix = scope.prefix()?;
        let key = match key {
            Some(k) => k.to_string(),
            None => self
                .list(scope)?
                .into_iter()
                .find(|s| s.manifest.is_ok())
                .map(|s| s.key)
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "no readable checkpoint of {prefix} in {}",
                        self.uri
                    ))
                })?,
        };
        let manifest = self.read_manifest(&prefix, &key)?;
        let _lock = StoreLock::acquire(dest)?;
        if std::fs::symlink_metadata(dest).is_ok() {
            return Err(Error::InvalidArgument(format!(
                "restore destination {} already exists: a restore goes to a new directory",
                dest.display()
            )));
        }
        let staging = sibling(dest, "kstate-restore")?;
        let mut guard = Staging::new(staging.clone());
        guard.clear()?;
        std::fs::create_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
        for file in &manifest.files {
            check_file_name(&file.name)?;
        }
        let mut done = RestoreProgress {
            files_done: 0,
            files_total: manifest.files.len(),
            bytes_done: 0,
            bytes_total: manifest.files.iter().map(|f| f.size).sum(),
        };
        self.download_all(&prefix, &key, &manifest.files, &staging, &mut |event| {
            match event {
                Downloaded::Bytes(n) => done.bytes_done += n,
                Downloaded::File => done.files_done += 1,
            }
            progress(done);
        })?;
        crate::failpoint::hit("remote-before-restore-rename");
        sync_dir(&staging)?;
        std::fs::rename(&staging, dest).map_err(|e| Error::io(dest, e))?;
        guard.published();
        if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync_dir(parent)?;
        }
        Ok(RestoreReport {
            manifest_key: key,
            files: manifest.files.len(),
            bytes: done.bytes_done,
            manifest,
        })
    }

    /// Downloads `files` into `staging`, [`DOWNLOAD_THREADS`] at a time, each checked against
    /// its size and SHA-256 and synced. `event` runs on the calling thread. The first failure
    /// stops the others from starting new files and is returned once the running ones end.
    fn download_all(
        &self,
        prefix: &str,
        key: &str,
        files: &[ManifestFile],
        staging: &Path,
        event: &mut dyn FnMut(Downloaded),
    ) -> Result<()> {
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let (tx, rx) = std::sync::mpsc::channel::<Result<Downloaded>>();
        std::thread::scope(|scope| {
            for _ in 0..DOWNLOAD_THREADS.min(files.len()) {
                let tx = tx.clone();
                let (next, stop) = (&next, &stop);
                scope.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let Some(file) = files.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        let result = self.download_one(prefix, key, file, staging, &mut |n| {
                            // The receiver lives until every sender is gone.
                            let _ = tx.send(Ok(Downloaded::Bytes(n)));
                        });
                        let failed = result.is_err();
                        let _ = tx.send(result.map(|()| Downloaded::File));
                        if failed {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                });
            }
            drop(tx);
            let mut first_error = None;
            for got in rx {
                match got {
                    Ok(e) => event(e),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            first_error.map_or(Ok(()), Err)
        })
    }

    /// Downloads one file of a checkpoint to `staging`, checks it and syncs it; `received`
    /// gets each piece's length.
    fn download_one(
        &self,
        prefix: &str,
        key: &str,
        file: &ManifestFile,
        staging: &Path,
        received: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let path = staging.join(&file.name);
        let mut out = std::fs::File::create(&path).map_err(|e| Error::io(&path, e))?;
        let mut before = 0;
        let fetched = self.fetch(
            prefix,
            key,
            file,
            Some((&mut out, path.as_path())),
            &mut |n| {
                received(n - before);
                before = n;
            },
        )?;
        if let Some(problem) = fetched {
            return Err(Error::Corruption(problem));
        }
        out.sync_all().map_err(|e| Error::io(&path, e))
    }

    /// Checks the manifest `key` of `scope` and the files it names, collecting every
    /// problem: an unreadable manifest, a missing object, one of another size, and with
    /// `contents` one whose SHA-256 differs (each object is downloaded and hashed, not
    /// stored).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad scope; [`Error::Io`] when a request fails (a
    /// missing manifest or object is a problem, not an error).
    pub fn check(&self, scope: &StoreScope, key: &str, contents: bool) -> Result<CheckReport> {
        let prefix = scope.prefix()?;
        let mut report = CheckReport {
            manifest: None,
            problems: Vec::new(),
        };
        let manifest = match self.read_manifest(&prefix, key) {
            Ok(m) => m,
            Err(Error::Corruption(why)) => {
                report.problems.push(why);
                return Ok(report);
            }
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                report
                    .problems
                    .push(format!("manifest {key}: no such object"));
                return Ok(report);
            }
            Err(e) => return Err(e),
        };
        let present = self.list_sizes(&format!("{prefix}/files"))?;
        for file in &manifest.files {
            let name = file.object.trim_start_matches("files/");
            match present.get(name) {
                Some(size) if *size == file.size => {
                    if contents {
                        if let Some(problem) = self.fetch(&prefix, key, file, None, &mut |_| {})? {
                            report.problems.push(problem);
                        }
                    }
                }
                Some(size) => report.problems.push(format!(
                    "checkpoint {key}: object {} of {} has {size} bytes, the manifest says {}",
                    file.object, file.name, file.size
                )),
                None => report.problems.push(format!(
                    "checkpoint {key}: object {} ({}) is missing from {}",
                    file.object, file.name, self.uri
                )),
            }
        }
        report.manifest = Some(manifest);
        Ok(report)
    }

    /// Streams one object, into `out` when given, hashing it; `received` gets the bytes
    /// so far. Returns the problem when it is missing or differs from the manifest.
    fn fetch(
        &self,
        prefix: &str,
        key: &str,
        file: &ManifestFile,
        mut out: Option<(&mut std::fs::File, &Path)>,
        received: &mut dyn FnMut(u64),
    ) -> Result<Option<String>> {
        let object_key = format!("{prefix}/{}", file.object);
        let location = ObjectPath::from(object_key.as_str());
        let mut hasher = Sha256::new();
        let mut written = 0u64;
        let mut take = |chunk: &[u8]| -> Result<()> {
            pace(&self.download_bucket, chunk.len() as u64);
            hasher.update(chunk);
            written += chunk.len() as u64;
            if let Some((out, path)) = out.as_mut() {
                let path: &Path = path;
                out.write_all(chunk).map_err(|e| Error::io(path, e))?;
            }
            received(written);
            Ok(())
        };
        let got = match self.runtime.block_on(self.store.get(&location)) {
            Ok(got) => Some(got),
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => return Err(self.err(&object_key, e)),
        };
        let Some(got) = got else {
            return Ok(Some(format!(
                "checkpoint {key}: object {} ({}) is missing from {}",
                file.object, file.name, self.uri
            )));
        };
        match got.payload {
            // A file:// target hands over the open file: read it in large pieces here
            // rather than through its stream of 8 KiB pieces, one blocking task each.
            GetResultPayload::File(mut source, source_path) => {
                use std::io::{Seek, SeekFrom};
                let mut left = got.range.end.saturating_sub(got.range.start);
                source
                    .seek(SeekFrom::Start(got.range.start))
                    .map_err(|e| Error::io(&source_path, e))?;
                // Under a download bound, pieces of an eighth of a second keep the pace even.
                let piece = self.download_bucket.as_ref().map_or(READ_BYTES, |b| {
                    usize::try_from(b.lock_recover().rate / 8)
                        .unwrap_or(READ_BYTES)
                        .clamp(4096, READ_BYTES)
                });
                let mut buf = vec![0u8; piece];
                while left > 0 {
                    let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let n = source
                        .read(&mut buf[..want])
                        .map_err(|e| Error::io(&source_path, e))?;
                    if n == 0 {
                        break;
                    }
                    take(&buf[..n])?;
                    left -= n as u64;
                }
            }
            GetResultPayload::Stream(mut stream) => {
                self.runtime.block_on(async {
                    while let Some(chunk) = stream.next().await {
                        take(&chunk.map_err(|e| self.err(&object_key, e))?)?;
                    }
                    Ok::<(), Error>(())
                })?;
            }
        }
        let sha256 = manifest::to_hex(&hasher.finalize());
        if written != file.size || sha256 != file.sha256 {
            return Ok(Some(format!(
                "checkpoint {key}: object {} ({}) has {written} bytes with SHA-256 {sha256}, \
                 the manifest says {} bytes, {}",
                file.object, file.name, file.size, file.sha256
            )));
        }
        Ok(None)
    }

    /// Deletes the manifests of `scope` beyond the newest `keep_newest` readable ones (and
    /// unreadable ones older than the grace period), then every file object that no
    /// remaining manifest names and that is older than the grace period.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `keep_newest` is 0 or the scope is bad;
    /// [`Error::Io`] when a request fails (what was deleted before stays deleted; nothing
    /// a remaining manifest names is ever deleted).
    pub fn gc(&self, scope: &StoreScope, keep_newest: usize) -> Result<GcReport> {
        if keep_newest == 0 {
            return Err(Error::InvalidArgument(
                "gc keeps at least the newest checkpoint (keep_newest >= 1)".into(),
            ));
        }
        let prefix = scope.prefix()?;
        let _local = self.ops.write().unwrap_or_else(|e| e.into_inner());
        let lease = self.lease_acquire(&prefix, LeaseKind::Gc)?;
        let result = self.gc_leased(scope, &prefix, keep_newest, &lease);
        // Best effort: a marker left behind only holds publishers back until it expires.
        let _ = self.delete(&lease.key);
        result
    }

    /// [`Remote::gc`] while holding the gc lease `lease`.
    fn gc_leased(
        &self,
        scope: &StoreScope,
        prefix: &str,
        keep_newest: usize,
        lease: &Lease,
    ) -> Result<GcReport> {
        let grace_ms = i64::try_from(self.settings.gc_grace.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now_ms().saturating_sub(grace_ms);
        // After our marker is written: a publisher that started before sees it and waits,
        // one that is publishing now is in this list (see the module documentation).
        let publishers = self.live_leases(prefix, LeaseKind::Publish)?;
        let manifest_times: HashMap<String, i64> = self
            .list_objects(&format!("{prefix}/manifests"))?
            .into_iter()
            .map(|(name, _, modified)| (format!("manifests/{name}"), modified))
            .collect();
        let mut report = GcReport::default();
        let mut referenced = BTreeSet::new();
        let mut kept = 0;
        for summary in self.list(scope)? {
            let delete = match &summary.manifest {
                Ok(manifest) if kept < keep_newest => {
                    kept += 1;
                    referenced.extend(manifest.files.iter().map(|f| f.object.clone()));
                    false
                }
                Ok(_) => true,
                Err(_) => manifest_times
                    .get(&summary.key)
                    .is_some_and(|t| *t < cutoff),
            };
            if delete {
                crate::failpoint::hit("remote-gc-manifest");
                self.delete(&format!("{prefix}/{}", summary.key))?;
                report.manifests_deleted.push(summary.key);
            }
        }
        self.delete_expired_leases(prefix)?;
        if !publishers.is_empty() {
            // A live publisher may name any file it listed, even one no manifest names
            // yet: deleting files waits for a gc that runs while nobody publishes.
            report.publishers = publishers;
            return Ok(report);
        }
        for (name, _, modified) in self.list_objects(&format!("{prefix}/files"))? {
            let object = format!("files/{name}");
            if referenced.contains(&object) {
                continue;
            }
            if modified >= cutoff {
                report.files_in_grace += 1;
                continue;
            }
            if !lease.fresh() {
                // A publisher may already take our marker for expired.
                report.out_of_time = true;
                break;
            }
            crate::failpoint::hit("remote-gc-file");
            self.delete(&format!("{prefix}/{object}"))?;
            report.files_deleted += 1;
        }
        Ok(report)
    }

    /// Writes a new lease marker of this writer (see [`Lease`]).
    fn lease_acquire(&self, prefix: &str, kind: LeaseKind) -> Result<Lease> {
        let n = self.nonce.fetch_add(1, Ordering::Relaxed);
        let key = format!(
            "{prefix}/leases/{}/{}-{:x}-{:x}-{n}",
            self.settings.writer_id,
            kind.name(),
            std::process::id(),
            now_ms()
        );
        let mut lease = Lease {
            key,
            written: Instant::now(),
            gap: false,
            length: self.lease,
        };
        lease.refresh(self)?;
        Ok(lease)
    }

    /// Writer ids of the live lease markers of `kind` of other writers.
    fn live_leases(&self, prefix: &str, kind: LeaseKind) -> Result<Vec<String>> {
        let lease_ms = self.lease.as_millis() as i64;
        let now = now_ms();
        let mut writers: Vec<String> = self
            .list_leases(prefix)?
            .into_iter()
            .filter(|(writer, name, modified)| {
                *writer != self.settings.writer_id
                    && name.starts_with(&format!("{}-", kind.name()))
                    && now - modified < lease_ms
            })
            .map(|(writer, _, _)| writer)
            .collect();
        writers.sort();
        writers.dedup();
        Ok(writers)
    }

    /// (writer, marker name, last modified ms) of every lease marker of the store.
    fn list_leases(&self, prefix: &str) -> Result<Vec<(String, String, i64)>> {
        let leases = format!("{prefix}/leases");
        let location = ObjectPath::from(leases.as_str());
        let metas: Vec<object_store::ObjectMeta> = self
            .runtime
            .block_on(self.store.list(Some(&location)).try_collect())
            .map_err(|e| self.err(&leases, e))?;
        Ok(metas
            .into_iter()
            .filter_map(|m| {
                let parts: Vec<String> = m.location.parts().map(|p| p.as_ref().into()).collect();
                let [.., writer, name] = parts.as_slice() else {
                    return None;
                };
                Some((
                    writer.clone(),
                    name.clone(),
                    m.last_modified.timestamp_millis(),
                ))
            })
            .collect())
    }

    /// Deletes the markers of killed publishers and collectors (a live one is rewritten
    /// every quarter lease, so one older than two leases is dead).
    fn delete_expired_leases(&self, prefix: &str) -> Result<()> {
        let dead_ms = 2 * self.lease.as_millis() as i64;
        let now = now_ms();
        for (writer, name, modified) in self.list_leases(prefix)? {
            if now - modified > dead_ms {
                self.delete(&format!("{prefix}/leases/{writer}/{name}"))?;
            }
        }
        Ok(())
    }

    /// Waits until no other writer's gc holds a live lease on the store, keeping `lease`
    /// (written before the first look) alive meanwhile.
    fn await_no_gc(&self, prefix: &str, lease: &mut Lease) -> Result<()> {
        let start = Instant::now();
        loop {
            let collectors = self.live_leases(prefix, LeaseKind::Gc)?;
            if collectors.is_empty() {
                return Ok(());
            }
            // A gc deletes nothing after half its lease and its marker expires after one.
            if start.elapsed() > 2 * self.lease {
                return Err(Error::io(
                    format!("{}/{prefix}", self.uri.trim_end_matches('/')),
                    std::io::Error::other(format!(
                        "a garbage collection by {} kept its lease longer than {:?}",
                        collectors.join(", "),
                        2 * self.lease
                    )),
                ));
            }
            lease.keep_alive(self)?;
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Deletes one object of `scope` (`key` relative to it, as manifests name objects).
    /// Test support: the failure tests remove a file a manifest names; not for callers.
    #[doc(hidden)]
    pub fn delete_object(&self, scope: &StoreScope, key: &str) -> Result<()> {
        let prefix = scope.prefix()?;
        self.delete(&format!("{prefix}/{key}"))
    }

    fn delete(&self, key: &str) -> Result<()> {
        match self
            .runtime
            .block_on(self.store.delete(&ObjectPath::from(key)))
        {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(key, e)),
        }
    }
}

/// Newest-first order (see [`Remote::list`]): unreadable manifests first, then the sum of
/// the changelog offsets, commit sequence, publication time, key.
fn order_key(s: &ManifestSummary) -> (bool, i128, u64, i64, String) {
    match &s.manifest {
        Ok(m) => (
            false,
            m.offsets.iter().map(|o| i128::from(o.offset)).sum(),
            m.sequence,
            m.published_at_ms,
            s.key.clone(),
        ),
        Err(_) => {
            let seq = s
                .key
                .trim_start_matches("manifests/")
                .split('-')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            (true, 0, seq, 0, s.key.clone())
        }
    }
}

/// RocksDB's info log (`LOG`, `LOG.old.<time>`).
fn is_info_log(name: &str) -> bool {
    name == "LOG" || name.starts_with("LOG.old")
}

/// A manifest's file names become local paths: one plain component only.
fn check_file_name(name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(Error::Corruption(format!(
            "manifest names the file {name:?}, which is not a plain file name"
        )));
    }
    Ok(())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
