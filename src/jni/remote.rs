//! The natives of `dev.kstate.internal.NativeRemote`: checkpoints of a store published to,
//! listed in, restored from and garbage-collected in an object store ([`crate::remote`]).
//!
//! Compiled with the cargo feature `remote` only, except [`remote_supported`], which lets the
//! adapter refuse `kstate.checkpoint.uri` with a clear message when the library was built
//! without it (instead of an `UnsatisfiedLinkError` on the first publish).
//!
//! Results cross as one packed `byte[]` each, big-endian as Java's `ByteBuffer` reads it;
//! a string is `[i32 length][UTF-8]`, a length of -1 being null. The layouts are documented
//! on each native and decoded by `NativeRemote`.

use jni::sys::jboolean;
use jni::JNIEnv;

use super::guard::guard;

/// `boolean remoteSupported()`: whether this library was built with the cargo feature
/// `remote` (the other `remote*` natives exist only then).
#[no_mangle]
pub extern "system" fn Java_dev_kstate_internal_KstateNative_remoteSupported<'l>(
    mut env: JNIEnv<'l>,
    _class: jni::objects::JClass<'l>,
) -> jboolean {
    guard(&mut env, 0, |_| {
        Ok(jboolean::from(cfg!(feature = "remote")))
    })
}

#[cfg(feature = "remote")]
mod with_remote {
    use std::path::Path;
    use std::time::Duration;

    use jni::sys::{jint, jlong};

    use crate::bridge::Transactional;
    use crate::handle::HANDLES;
    use crate::jni::declare::natives;
    use crate::jni::natives::{jhandle, number, saturating, store};
    use crate::remote::{Manifest, Remote, RemoteSettings, StoreScope};
    use crate::{
        CheckpointInfo, Error, KvStore, Result, SessionStore, VersionedStore, WindowStore,
    };

    /// A packed result under construction.
    #[derive(Default)]
    pub(crate) struct Out(Vec<u8>);

    impl Out {
        fn i32(&mut self, v: i32) -> &mut Self {
            self.0.extend_from_slice(&v.to_be_bytes());
            self
        }
        fn count(&mut self, n: usize) -> &mut Self {
            self.i32(i32::try_from(n).unwrap_or(i32::MAX))
        }
        fn i64(&mut self, v: i64) -> &mut Self {
            self.0.extend_from_slice(&v.to_be_bytes());
            self
        }
        fn u64(&mut self, v: u64) -> &mut Self {
            self.i64(saturating(v))
        }
        fn str(&mut self, s: Option<&str>) -> &mut Self {
            match s {
                None => self.i32(-1),
                Some(s) => {
                    self.count(s.len());
                    self.0.extend_from_slice(s.as_bytes());
                    self
                }
            }
        }
        /// `[i32 n]{[str topic][i32 partition][i64 offset]}*` of a manifest.
        fn offsets(&mut self, manifest: &Manifest) -> &mut Self {
            self.count(manifest.offsets.len());
            for o in &manifest.offsets {
                self.str(Some(&o.topic)).i32(o.partition).i64(o.offset);
            }
            self
        }
        fn done(&mut self) -> Option<Vec<u8>> {
            Some(std::mem::take(&mut self.0))
        }
    }

    /// The scope; [`Remote`]'s calls refuse parts that are not one plain path segment
    /// before making any request.
    fn scope(app: &str, task: &str, store: &str) -> Result<StoreScope> {
        Ok(StoreScope::new(app, task, store))
    }

    /// Writes a checkpoint of the store behind `h`, whatever its RocksDB kind, to `dir`.
    fn checkpoint_any(h: jlong, dir: &Path) -> Result<CheckpointInfo> {
        fn of<T: Transactional>(h: jlong, dir: &Path) -> Option<Result<CheckpointInfo>> {
            match store::<T>(h) {
                Ok(s) => Some(s.checkpoint(dir)),
                // Another kind's handle: try the next kind.
                Err(Error::InvalidHandle(_)) => None,
                Err(e) => Some(Err(e)),
            }
        }
        of::<KvStore>(h, dir)
            .or_else(|| of::<WindowStore>(h, dir))
            .or_else(|| of::<SessionStore>(h, dir))
            .or_else(|| of::<VersionedStore>(h, dir))
            .unwrap_or_else(|| {
                Err(Error::InvalidHandle(format!(
                    "{h:#x} is not the handle of an open store"
                )))
            })
    }

    /// Removes the scratch directory of a publish, whatever state a failed or killed
    /// earlier publish left it in.
    fn clear_scratch(dir: &Path) -> Result<()> {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(dir, e)),
        }
    }

    /// The reason a readable manifest still cannot be opened by this build, if any.
    fn unreadable_store(manifest: &Manifest) -> Option<String> {
        let ours = crate::format::meta::FORMAT_VERSION;
        (manifest.store_format > ours).then(|| {
            format!(
                "store format {} is newer than this kstate's ({ours}; written by kstate {})",
                manifest.store_format, manifest.kstate_version
            )
        })
    }

    natives! {
        /// `long remoteOpen(String uri, String[] optionNames, String[] optionValues, long
        /// maxBytesPerSec, long maxRestoreBytesPerSec, long gcGraceMs, String writerId)`: a
        /// new checkpoint target ([`Remote::open`]); a bound <= 0 is unbounded; `writerId`
        /// null is the default (host, process, clock).
        java "remoteOpen" fn remote_open(uri: String, names: Vec<String>, values: Vec<String>,
            max_bytes_per_sec: jlong, max_restore_bytes_per_sec: jlong, gc_grace_ms: jlong,
            writer_id: Option<String>) -> jlong {
            if names.len() != values.len() {
                return Err(Error::InvalidArgument(format!(
                    "{} option names but {} values", names.len(), values.len()
                )));
            }
            let grace = u64::try_from(gc_grace_ms).map_err(|_| {
                Error::InvalidArgument(format!("gc grace must not be negative: {gc_grace_ms}"))
            })?;
            let bound = |v: jlong| u64::try_from(v).ok().filter(|&n| n > 0);
            let mut settings = RemoteSettings {
                options: names.iter().cloned().zip(values.iter().cloned()).collect(),
                max_upload_bytes_per_sec: bound(max_bytes_per_sec),
                max_download_bytes_per_sec: bound(max_restore_bytes_per_sec),
                gc_grace: Duration::from_millis(grace),
                ..RemoteSettings::default()
            };
            if let Some(w) = writer_id {
                settings.writer_id = w.to_string();
            }
            HANDLES.insert(Remote::open(uri, &settings)?).map(jhandle)
        }
        /// `void remoteClose(long remote)`: releases the target; the handle dies (a call in
        /// flight finishes first).
        java "remoteClose" fn remote_close(h: jlong) -> () {
            HANDLES.remove::<Remote>(number(h)).map(drop)
        }
        /// `byte[] remotePublishStore(long remote, long store, String scratchDir, String app,
        /// String task, String storeName, long lastSequence)`: writes a checkpoint of the
        /// store (key-value, window, session or versioned; RocksDB engine) to `scratchDir`
        /// (removed first if a failed publish left it), publishes it unless its commit
        /// sequence is `lastSequence` or it has no changelog offsets, and removes
        /// `scratchDir`. Returns `[str manifest key, null when nothing was published][i64
        /// sequence][i64 bytes uploaded][i64 bytes reused][i32 files uploaded][i32 files
        /// reused][bool manifest created]`.
        java "remotePublishStore" fn remote_publish_store(h: jlong, store_handle: jlong,
            scratch_dir: String, app: String, task: String, store_name: String,
            last_sequence: jlong) -> Option<Vec<u8>> {
            let remote = store::<Remote>(h)?;
            let scope = scope(app, task, store_name)?;
            let dir = crate::bridge::store_path(scratch_dir.as_bytes())?;
            clear_scratch(&dir)?;
            let published = checkpoint_any(store_handle, &dir).and_then(|info| {
                let mut out = Out::default();
                if saturating(info.sequence) == last_sequence || info.offsets.is_empty() {
                    out.str(None).u64(info.sequence).i64(0).i64(0).i32(0).i32(0);
                    return Ok(out.i32(0).done());
                }
                let report = remote.publish(&scope, &info)?;
                out.str(Some(&report.manifest)).u64(info.sequence)
                    .u64(report.bytes_uploaded).u64(report.bytes_reused)
                    .count(report.uploaded.len()).count(report.reused.len())
                    .i32(i32::from(report.manifest_created));
                Ok(out.done())
            });
            // The scratch copy is removed whatever happened: its hard links would keep
            // compacted-away table files on disk.
            let cleared = clear_scratch(&dir);
            let packed = published?;
            cleared.map(|()| packed)
        }
        /// `byte[] remoteList(long remote, String app, String task, String storeName)`: the
        /// store's manifests in [`Remote::list`]'s order, `[i32 n]` then each `[str key][str
        /// why it is unusable, null when usable][i64 sequence][i64 published at ms][i32 store
        /// format][str writer][offsets]`, offsets `[i32 n]{[str topic][i32 partition][i64
        /// offset]}`; an unreadable manifest has sequence -1, times 0 and no offsets.
        java "remoteList" fn remote_list(h: jlong, app: String, task: String, store_name: String)
            -> Option<Vec<u8>> {
            let remote = store::<Remote>(h)?;
            let summaries = remote.list(&scope(app, task, store_name)?)?;
            let mut out = Out::default();
            out.count(summaries.len());
            for s in &summaries {
                out.str(Some(&s.key));
                match &s.manifest {
                    Ok(m) => {
                        out.str(unreadable_store(m).as_deref()).u64(m.sequence)
                            .i64(m.published_at_ms)
                            .i32(i32::try_from(m.store_format).unwrap_or(i32::MAX))
                            .str(Some(&m.writer)).offsets(m);
                    }
                    Err(why) => {
                        out.str(Some(why)).i64(-1).i64(0).i32(0).str(None).i32(0);
                    }
                }
            }
            Ok(out.done())
        }
        /// `byte[] remoteRestore(long remote, String app, String task, String storeName,
        /// String key, String destDir)`: downloads checkpoint `key` into the new directory
        /// `destDir` ([`Remote::restore`]). Returns `[str key][i32 files][i64 bytes][i64
        /// sequence][i64 published at ms][offsets]`.
        java "remoteRestore" fn remote_restore(h: jlong, app: String, task: String,
            store_name: String, key: String, dest_dir: String) -> Option<Vec<u8>> {
            let remote = store::<Remote>(h)?;
            let scope = scope(app, task, store_name)?;
            let dest = crate::bridge::store_path(dest_dir.as_bytes())?;
            let report = remote.restore(&scope, Some(key), &dest)?;
            if unreadable_store(&report.manifest).is_some() {
                // Downloaded but not for this build: nothing may be left to open.
                let _ = std::fs::remove_dir_all(&dest);
                return Err(Error::UnsupportedFormat {
                    found: report.manifest.store_format,
                    supported: crate::format::meta::FORMAT_VERSION,
                });
            }
            let mut out = Out::default();
            out.str(Some(&report.manifest_key)).count(report.files).u64(report.bytes)
                .u64(report.manifest.sequence).i64(report.manifest.published_at_ms)
                .offsets(&report.manifest);
            Ok(out.done())
        }
        /// `byte[] remoteGc(long remote, String app, String task, String storeName, int
        /// keep)`: [`Remote::gc`] keeping the newest `keep` (>= 1). Returns `[i32 manifests
        /// deleted][i32 files deleted][i32 files kept in their grace period]`.
        java "remoteGc" fn remote_gc(h: jlong, app: String, task: String, store_name: String,
            keep: jint) -> Option<Vec<u8>> {
            let remote = store::<Remote>(h)?;
            let keep = usize::try_from(keep).map_err(|_| {
                Error::InvalidArgument(format!("keep must be at least 1: {keep}"))
            })?;
            let report = remote.gc(&scope(app, task, store_name)?, keep)?;
            let mut out = Out::default();
            out.count(report.manifests_deleted.len()).count(report.files_deleted)
                .count(report.files_in_grace);
            Ok(out.done())
        }
    }
}
