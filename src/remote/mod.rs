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
//! The API is synchronous: the [`Remote`] owns a current-thread tokio runtime and blocks on
//! it, so callers (the C and Java adapters later) never see async code.

mod manifest;

use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::prefix::PrefixStore;
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use sha2::{Digest, Sha256};

pub use manifest::{Manifest, ManifestFile, MANIFEST_FORMAT};

use crate::store::lock::{sibling, sync_dir, Staging, StoreLock};
use crate::sync::MutexExt;
use crate::{CheckpointInfo, Error, Result};

/// Files at most this large go up in one request; larger ones in parts of this size.
const PART_BYTES: usize = 8 << 20;

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
}

/// A bytes/s token bucket: a burst of at most one second's worth.
struct Bucket {
    rate: u64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
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

/// Key of the content-hash cache of table files: they never change once written, and a
/// checkpoint hard-links them, so (name, size, inode, mtime) names one content.
type HashKey = (String, u64, u64, i64);

/// A checkpoint target (see the module documentation).
pub struct Remote {
    uri: String,
    store: Arc<dyn ObjectStore>,
    runtime: tokio::runtime::Runtime,
    settings: RemoteSettings,
    bucket: Option<Mutex<Bucket>>,
    hashes: Mutex<HashMap<HashKey, String>>,
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
        if settings.max_upload_bytes_per_sec == Some(0) {
            return Err(Error::InvalidArgument(
                "max_upload_bytes_per_sec must be positive (None for unbounded)".into(),
            ));
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
            bucket: settings.max_upload_bytes_per_sec.map(|rate| {
                Mutex::new(Bucket {
                    rate,
                    tokens: rate as f64,
                    last: Instant::now(),
                })
            }),
            settings: settings.clone(),
            hashes: Mutex::new(HashMap::new()),
        })
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
            let path = checkpoint.path.join(&file.name);
            let sha256 = self.content_hash(&file.name, &path)?;
            let object = format!("files/{sha256}");
            if present.get(&sha256) == Some(&file.bytes) {
                report.reused.push(file.name.clone());
                report.bytes_reused += file.bytes;
            } else {
                self.upload(&format!("{prefix}/{object}"), &path, file.bytes)?;
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
        let mut buf = vec![0u8; 1 << 20];
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
    /// within the bandwidth bound.
    fn upload(&self, key: &str, path: &Path, size: u64) -> Result<()> {
        let location = ObjectPath::from(key);
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let read_part = |file: &mut std::fs::File| -> Result<Vec<u8>> {
            let mut part = Vec::with_capacity(PART_BYTES);
            Read::take(&mut *file, PART_BYTES as u64)
                .read_to_end(&mut part)
                .map_err(|e| Error::io(path, e))?;
            self.throttle(part.len() as u64);
            Ok(part)
        };
        let changed = || {
            Error::io(
                path,
                std::io::Error::other(format!(
                    "changed size while uploading (expected {size} bytes)"
                )),
            )
        };
        if size <= PART_BYTES as u64 {
            let data = read_part(&mut file)?;
            if data.len() as u64 != size {
                return Err(changed());
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
        let result = self.send_parts(upload.as_mut(), key, &mut file, &read_part, size);
        match result {
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

    /// Sends the parts of a multipart upload; the file must hold exactly `size` bytes.
    fn send_parts(
        &self,
        upload: &mut dyn MultipartUpload,
        key: &str,
        file: &mut std::fs::File,
        read_part: &dyn Fn(&mut std::fs::File) -> Result<Vec<u8>>,
        size: u64,
    ) -> Result<()> {
        let mut sent = 0u64;
        loop {
            let data = read_part(file)?;
            if data.is_empty() {
                break;
            }
            sent += data.len() as u64;
            self.runtime
                .block_on(upload.put_part(PutPayload::from(data)))
                .map_err(|e| self.err(key, e))?;
        }
        if sent != size {
            return Err(Error::io(
                key,
                std::io::Error::other(format!(
                    "the local file changed size while uploading ({sent} bytes, expected {size})"
                )),
            ));
        }
        Ok(())
    }

    fn throttle(&self, bytes: u64) {
        if let Some(bucket) = &self.bucket {
            bucket.lock_recover().take(bytes);
        }
    }

    /// Every manifest of `scope`, newest first: by commit sequence, then publication time,
    /// then key. Unreadable manifests are listed with the reason (and sort by their key's
    /// sequence).
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
        let mut bytes = 0;
        for file in &manifest.files {
            check_file_name(&file.name)?;
            bytes += self.download(&prefix, &key, file, &staging.join(&file.name))?;
        }
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
            bytes,
            manifest,
        })
    }

    /// Streams one object to `path`, checking its size and hash; returns its size.
    fn download(&self, prefix: &str, key: &str, file: &ManifestFile, path: &Path) -> Result<u64> {
        let object_key = format!("{prefix}/{}", file.object);
        let location = ObjectPath::from(object_key.as_str());
        let mut out = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
        let mut hasher = Sha256::new();
        let mut written = 0u64;
        let result: std::result::Result<(), Error> = self.runtime.block_on(async {
            let got = match self.store.get(&location).await {
                Ok(got) => got,
                Err(object_store::Error::NotFound { .. }) => {
                    return Err(Error::Corruption(format!(
                        "checkpoint {key}: object {} ({}) is missing from {}",
                        file.object, file.name, self.uri
                    )))
                }
                Err(e) => return Err(self.err(&object_key, e)),
            };
            let mut stream = got.into_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| self.err(&object_key, e))?;
                hasher.update(&chunk);
                written += chunk.len() as u64;
                out.write_all(&chunk).map_err(|e| Error::io(path, e))?;
            }
            Ok(())
        });
        result?;
        let sha256 = manifest::to_hex(&hasher.finalize());
        if written != file.size || sha256 != file.sha256 {
            return Err(Error::Corruption(format!(
                "checkpoint {key}: object {} ({}) has {written} bytes with SHA-256 {sha256}, \
                 the manifest says {} bytes, {}",
                file.object, file.name, file.size, file.sha256
            )));
        }
        out.sync_all().map_err(|e| Error::io(path, e))?;
        Ok(written)
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
        let grace_ms = i64::try_from(self.settings.gc_grace.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now_ms().saturating_sub(grace_ms);
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
        for (name, _, modified) in self.list_objects(&format!("{prefix}/files"))? {
            let object = format!("files/{name}");
            if referenced.contains(&object) {
                continue;
            }
            if modified >= cutoff {
                report.files_in_grace += 1;
                continue;
            }
            crate::failpoint::hit("remote-gc-file");
            self.delete(&format!("{prefix}/{object}"))?;
            report.files_deleted += 1;
        }
        Ok(report)
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

/// Newest-first order: sequence, publication time, key.
fn order_key(s: &ManifestSummary) -> (u64, i64, String) {
    match &s.manifest {
        Ok(m) => (m.sequence, m.published_at_ms, s.key.clone()),
        Err(_) => {
            let seq = s
                .key
                .trim_start_matches("manifests/")
                .split('-')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            (seq, 0, s.key.clone())
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
