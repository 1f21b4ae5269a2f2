//! The one handle table of the process, shared by the C and the JNI surfaces.
//!
//! A handle given to foreign code is a number, never a pointer to Rust memory: the table
//! maps it to an `Arc` of the object, so a NULL, forged, closed or wrong-kind handle is
//! looked up, found wanting and rejected, never dereferenced. Both surfaces go through the
//! same typed lookups ([`store`], [`iter`]), so every misuse gives the same error on both:
//!
//! | handle | error |
//! |---|---|
//! | 0 (NULL) | [`Error::InvalidHandle`] |
//! | not a kstate handle number (forged, corrupted, a length or a pointer) | [`Error::InvalidHandle`] |
//! | a live or closed handle of another kind (an iterator passed as a store) | [`Error::InvalidHandle`] |
//! | the right kind, but never issued | [`Error::InvalidHandle`] |
//! | the right kind, issued and since closed | the kind's closed error: [`Error::StoreClosed`], [`Error::IteratorClosed`] |
//!
//! # Handle numbers
//! ```text
//!  63        56 55        48 47                                             0
//! +------------+------------+------------------------------------------------+
//! | 0x4B ('K') |    kind    |   serial: 1, 2, 3, ... per kind, never reused   |
//! +------------+------------+------------------------------------------------+
//! ```
//! The kind is part of the number, so a handle's kind is known without a lookup and a
//! wrong-kind handle is rejected even after the object it named was closed. Serials count
//! up per kind and are never reused (2^48 per kind per process; exhausting them is an
//! error, not a wrap-around), so "issued and now absent" means "closed", exactly. The top
//! bit is 0, so on the JNI side handles are positive `long`s; 0 is the null handle.
//!
//! # Lifetime
//! A lookup returns an `Arc` of the object: a call in flight keeps the object alive while
//! another thread closes the handle, and the object is freed when the last such call
//! returns. Closing removes the entry first, so later lookups fail at once.
//!
//! # Adding a kind
//! A new kind is a [`Kind`] variant, an [`Object`] variant and a `handled!` line for its
//! type; the table, the number layout and the error rules need no change. Window and
//! session stores and their iterators were added that way.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, RwLock};

use crate::bridge::{KvIterHandle, SessionIterHandle, VersionedIterHandle, WindowIterHandle};
use crate::sync::RwLockExt;
use crate::{Error, KvStore, Result, SessionStore, VersionedStore, WindowStore};

/// The kind of object a handle stands for; its number is bits 48..56 of the handle.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A key-value store ([`KvStore`]).
    KvStore = 1,
    /// An iterator over a key-value store ([`KvIterHandle`]).
    KvIter = 2,
    /// A window store ([`WindowStore`]).
    WindowStore = 3,
    /// An iterator over a window store ([`WindowIterHandle`]).
    WindowIter = 4,
    /// A session store ([`SessionStore`]).
    SessionStore = 5,
    /// An iterator over a session store ([`SessionIterHandle`]).
    SessionIter = 6,
    /// A versioned key-value store ([`VersionedStore`]).
    VersionedStore = 7,
    /// The versions a multi-version query found ([`VersionedIterHandle`]).
    VersionedIter = 8,
    /// A checkpoint target in an object store (`kstate::remote::Remote`, cargo feature
    /// `remote`; without it no handle of this kind is ever issued).
    Remote = 9,
}

impl Kind {
    /// Every kind, in number order.
    pub const ALL: [Kind; 9] = [
        Kind::KvStore,
        Kind::KvIter,
        Kind::WindowStore,
        Kind::WindowIter,
        Kind::SessionStore,
        Kind::SessionIter,
        Kind::VersionedStore,
        Kind::VersionedIter,
        Kind::Remote,
    ];

    /// The kind with this number, if any.
    fn from_number(n: u8) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| *k as u8 == n)
    }

    /// Index of this kind's serial counter.
    fn index(self) -> usize {
        usize::from(self as u8 - 1)
    }

    /// What the kind is called in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::KvStore => "store",
            Kind::KvIter => "iterator",
            Kind::WindowStore => "window store",
            Kind::WindowIter => "window iterator",
            Kind::SessionStore => "session store",
            Kind::SessionIter => "session iterator",
            Kind::VersionedStore => "versioned store",
            Kind::VersionedIter => "versioned iterator",
            Kind::Remote => "checkpoint target",
        }
    }

    /// The error for a handle of this kind that was closed.
    fn closed(self) -> Error {
        match self {
            // A closed checkpoint target is reported as a closed store: the object a
            // caller holds is gone, the same condition for both surfaces.
            Kind::KvStore
            | Kind::WindowStore
            | Kind::SessionStore
            | Kind::VersionedStore
            | Kind::Remote => Error::StoreClosed,
            Kind::KvIter | Kind::WindowIter | Kind::SessionIter | Kind::VersionedIter => {
                Error::IteratorClosed
            }
        }
    }
}

/// Top byte of every handle number ('K').
const MAGIC: u64 = 0x4B;
const MAGIC_SHIFT: u32 = 56;
const KIND_SHIFT: u32 = 48;
/// Mask of the serial bits; also the largest serial.
const SERIAL_MASK: u64 = (1 << KIND_SHIFT) - 1;

/// The handle number of `serial` of `kind`.
fn compose(kind: Kind, serial: u64) -> u64 {
    (MAGIC << MAGIC_SHIFT) | (u64::from(kind as u8) << KIND_SHIFT) | serial
}

/// A live object, whatever its kind.
pub enum Object {
    /// See [`Kind::KvStore`].
    KvStore(Arc<KvStore>),
    /// See [`Kind::KvIter`].
    KvIter(Arc<KvIterHandle>),
    /// See [`Kind::WindowStore`].
    WindowStore(Arc<WindowStore>),
    /// See [`Kind::WindowIter`].
    WindowIter(Arc<WindowIterHandle>),
    /// See [`Kind::SessionStore`].
    SessionStore(Arc<SessionStore>),
    /// See [`Kind::SessionIter`].
    SessionIter(Arc<SessionIterHandle>),
    /// See [`Kind::VersionedStore`].
    VersionedStore(Arc<VersionedStore>),
    /// See [`Kind::VersionedIter`].
    VersionedIter(Arc<VersionedIterHandle>),
    /// See [`Kind::Remote`].
    #[cfg(feature = "remote")]
    Remote(Arc<crate::remote::Remote>),
}

/// A type whose values live in the handle table, as one [`Kind`].
pub trait Handled: Send + Sync + Sized + 'static {
    /// The kind of handle this type gets.
    const KIND: Kind;
    /// Wraps the object for the table.
    fn into_object(this: Arc<Self>) -> Object;
    /// The object, when `object` is of this type.
    fn from_object(object: &Object) -> Option<&Arc<Self>>;
}

macro_rules! handled {
    ($ty:ty, $kind:ident) => {
        impl Handled for $ty {
            const KIND: Kind = Kind::$kind;
            fn into_object(this: Arc<Self>) -> Object {
                Object::$kind(this)
            }
            fn from_object(object: &Object) -> Option<&Arc<Self>> {
                match object {
                    Object::$kind(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}

handled!(KvStore, KvStore);
handled!(KvIterHandle, KvIter);
handled!(WindowStore, WindowStore);
handled!(WindowIterHandle, WindowIter);
handled!(SessionStore, SessionStore);
handled!(SessionIterHandle, SessionIter);
handled!(VersionedStore, VersionedStore);
handled!(VersionedIterHandle, VersionedIter);
#[cfg(feature = "remote")]
handled!(crate::remote::Remote, Remote);

/// Hashes handle numbers for the table's map. Every native call looks its handle up, and
/// the map's default hasher (SipHash, keyed against collision attacks) was measurable in
/// profiles of single-entry calls; handle numbers are issued by the table itself, never
/// chosen by a caller, so a multiply-and-fold spreads them well enough and safely.
#[derive(Default)]
struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the map's keys are u64); fold anything else in too.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: the serial (low bits) reaches the top bits hashbrown uses for
        // its control bytes, and the fold brings the kind back down to the bucket bits.
        let h = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Live objects of every kind, addressed by handle numbers (see the module docs).
pub struct HandleTable {
    /// Next serial of each kind, indexed by [`Kind::index`].
    next: [AtomicU64; Kind::ALL.len()],
    live: RwLock<HashMap<u64, Object, BuildHasherDefault<HandleHasher>>>,
}

impl Default for HandleTable {
    fn default() -> Self {
        HandleTable::new()
    }
}

impl HandleTable {
    /// An empty table; the first handle of every kind has serial 1.
    pub fn new() -> Self {
        HandleTable {
            next: std::array::from_fn(|_| AtomicU64::new(1)),
            live: RwLock::new(HashMap::default()),
        }
    }

    /// Registers `value` and returns its new handle (never 0, never a number issued
    /// before).
    ///
    /// # Errors
    /// [`Error::Internal`] when the 2^48 serials of the kind are used up.
    pub fn insert<T: Handled>(&self, value: T) -> Result<u64> {
        let serial = self.next[T::KIND.index()]
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n <= SERIAL_MASK).then_some(n + 1)
            })
            .map_err(|_| Error::Internal(format!("{} handle numbers exhausted", T::KIND.name())))?;
        let handle = compose(T::KIND, serial);
        self.live
            .write_recover()
            .insert(handle, T::into_object(Arc::new(value)));
        Ok(handle)
    }

    /// The live object of type `T` behind `handle`; the `Arc` keeps it alive for the call.
    ///
    /// # Errors
    /// See the module docs: [`Error::InvalidHandle`] for 0, forged, never-issued and
    /// wrong-kind handles; the kind's closed error for a closed one.
    pub fn get<T: Handled>(&self, handle: u64) -> Result<Arc<T>> {
        self.check::<T>(handle)?;
        let live = self.live.read_recover();
        match live.get(&handle) {
            Some(object) => T::from_object(object)
                .cloned()
                .ok_or_else(|| mixed_up(handle)),
            None => Err(T::KIND.closed()),
        }
    }

    /// Unregisters `handle` and returns its object; later lookups of `handle` fail with
    /// the kind's closed error. Calls already holding the object keep it alive.
    ///
    /// # Errors
    /// As [`HandleTable::get`]; a second removal gets the closed error.
    pub fn remove<T: Handled>(&self, handle: u64) -> Result<Arc<T>> {
        self.check::<T>(handle)?;
        let mut live = self.live.write_recover();
        let Some(object) = live.remove(&handle) else {
            return Err(T::KIND.closed());
        };
        match T::from_object(&object) {
            Some(value) => Ok(Arc::clone(value)),
            None => {
                live.insert(handle, object);
                Err(mixed_up(handle))
            }
        }
    }

    /// Checks that `handle` is a number this table issued for kind `T::KIND`: everything
    /// but "is it still open", which the caller decides from the map.
    fn check<T: Handled>(&self, handle: u64) -> Result<()> {
        let want = T::KIND;
        if handle == 0 {
            return Err(Error::InvalidHandle(format!("null {} handle", want.name())));
        }
        let kind = u8::try_from((handle >> KIND_SHIFT) & 0xFF)
            .ok()
            .and_then(Kind::from_number);
        let kind = match kind {
            Some(kind) if handle >> MAGIC_SHIFT == MAGIC => kind,
            _ => {
                return Err(Error::InvalidHandle(format!(
                    "{handle:#x} is not a kstate handle (a {} handle was expected)",
                    want.name()
                )))
            }
        };
        if kind != want {
            return Err(Error::InvalidHandle(format!(
                "{handle:#x} is {} {} handle, not a {} handle",
                article(kind.name()),
                kind.name(),
                want.name()
            )));
        }
        let serial = handle & SERIAL_MASK;
        if serial == 0 || serial >= self.next[want.index()].load(Ordering::Relaxed) {
            return Err(Error::InvalidHandle(format!(
                "{} handle {handle:#x} was never issued",
                want.name()
            )));
        }
        Ok(())
    }
}

/// An entry whose object is not of the kind its number says: impossible, since numbers
/// carry the kind of the object they were issued for.
fn mixed_up(handle: u64) -> Error {
    Error::Internal(format!(
        "handle {handle:#x} names an object of another kind"
    ))
}

fn article(word: &str) -> &'static str {
    match word.as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    }
}

/// The process-wide table used by the C and JNI surfaces.
pub static HANDLES: LazyLock<HandleTable> = LazyLock::new(HandleTable::new);

/// Registers an object in the process-wide table and returns its new handle.
///
/// # Errors
/// See [`HandleTable::insert`].
pub fn insert<T: Handled>(value: T) -> Result<u64> {
    HANDLES.insert(value)
}

/// The live store behind `handle`.
///
/// # Errors
/// [`Error::InvalidHandle`] (null, forged, never issued, not a store handle),
/// [`Error::StoreClosed`] (closed).
pub fn store(handle: u64) -> Result<Arc<KvStore>> {
    HANDLES.get(handle)
}

/// The live iterator behind `handle`.
///
/// # Errors
/// [`Error::InvalidHandle`] (null, forged, never issued, not an iterator handle),
/// [`Error::IteratorClosed`] (the handle was closed).
pub fn iter(handle: u64) -> Result<Arc<KvIterHandle>> {
    HANDLES.get(handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorCode, StoreOptions};

    #[test]
    fn handle_numbers_spread_over_buckets_and_control_bytes() {
        // hashbrown picks the bucket from the low bits and the control byte from the top 7.
        let hash = |n: u64| {
            let mut h = HandleHasher::default();
            h.write_u64(n);
            h.finish()
        };
        for kind in Kind::ALL {
            let hashes: Vec<u64> = (1..=1024).map(|s| hash(compose(kind, s))).collect();
            let buckets: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 1023).collect();
            let controls: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
            assert!(buckets.len() > 600, "{kind:?}: {} buckets", buckets.len());
            assert_eq!(controls.len(), 128, "{kind:?}");
        }
    }

    fn memory_store() -> KvStore {
        KvStore::open_in_memory(&StoreOptions::default()).unwrap()
    }

    fn code<T>(r: Result<T>) -> ErrorCode {
        match r {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.code(),
        }
    }

    #[test]
    fn numbers_carry_magic_kind_and_a_fresh_serial() {
        let t = HandleTable::new();
        let a = t.insert(memory_store()).unwrap();
        let b = t.insert(memory_store()).unwrap();
        assert_eq!(a, 0x4B01_0000_0000_0001);
        assert_eq!(b, 0x4B01_0000_0000_0002);
        assert!(i64::try_from(a).is_ok(), "positive as a Java long");
        t.remove::<KvStore>(a).unwrap().close().unwrap();
        let c = t.insert(memory_store()).unwrap();
        assert_eq!(c, 0x4B01_0000_0000_0003, "numbers are never reused");
        assert_eq!(t.live.read_recover().len(), 2);
    }

    #[test]
    fn null_forged_closed_and_never_issued() {
        let t = HandleTable::new();
        let h = t.insert(memory_store()).unwrap();
        assert!(t.get::<KvStore>(h).is_ok());
        for forged in [
            0,
            1,
            0x1234,
            u64::MAX,
            h ^ (1 << 63),
            h & !(0xFF << 48),
            h + 1,
        ] {
            assert_eq!(code(t.get::<KvStore>(forged)), ErrorCode::InvalidHandle);
            assert_eq!(code(t.remove::<KvStore>(forged)), ErrorCode::InvalidHandle);
        }
        // The right layout, an unknown kind.
        assert_eq!(
            code(t.get::<KvStore>(compose(Kind::KvStore, 1) | (0x17 << 48))),
            ErrorCode::InvalidHandle
        );
        let held = t.get::<KvStore>(h).unwrap();
        let removed = t.remove::<KvStore>(h).unwrap();
        assert!(Arc::ptr_eq(&held, &removed));
        assert!(held.is_open(), "an in-flight call keeps the object alive");
        assert_eq!(code(t.get::<KvStore>(h)), ErrorCode::StoreClosed);
        assert_eq!(code(t.remove::<KvStore>(h)), ErrorCode::StoreClosed);
        let msg = t.get::<KvStore>(0).unwrap_err().to_string();
        assert!(msg.contains("null store handle"), "{msg}");
    }

    #[test]
    fn wrong_kind_is_invalid_live_or_closed() {
        let t = HandleTable::new();
        let s = t.insert(memory_store()).unwrap();
        let store = t.get::<KvStore>(s).unwrap();
        let it = t
            .insert(KvIterHandle::new(&store, store.all().unwrap()))
            .unwrap();
        assert_eq!(code(t.get::<KvStore>(it)), ErrorCode::InvalidHandle);
        assert_eq!(code(t.remove::<KvStore>(it)), ErrorCode::InvalidHandle);
        assert_eq!(code(t.get::<KvIterHandle>(s)), ErrorCode::InvalidHandle);
        assert_eq!(code(t.remove::<KvIterHandle>(s)), ErrorCode::InvalidHandle);
        let msg = t.get::<KvStore>(it).unwrap_err().to_string();
        assert!(
            msg.contains("is an iterator handle, not a store handle"),
            "{msg}"
        );
        // Both still live and usable after the misuse.
        assert!(t.get::<KvIterHandle>(it).is_ok());
        t.remove::<KvIterHandle>(it).unwrap();
        assert_eq!(code(t.get::<KvIterHandle>(it)), ErrorCode::IteratorClosed);
        assert_eq!(code(t.get::<KvStore>(it)), ErrorCode::InvalidHandle);
        t.remove::<KvStore>(s).unwrap();
        assert_eq!(code(t.get::<KvIterHandle>(s)), ErrorCode::InvalidHandle);
        assert!(t.live.read_recover().is_empty());
    }

    #[test]
    fn exhausted_serials_are_an_error_not_a_wraparound() {
        let t = HandleTable::new();
        t.next[Kind::KvStore.index()].store(SERIAL_MASK, Ordering::Relaxed);
        let last = t.insert(memory_store()).unwrap();
        assert_eq!(last & SERIAL_MASK, SERIAL_MASK);
        assert_eq!(code(t.insert(memory_store())), ErrorCode::Internal);
        assert!(t.get::<KvStore>(last).is_ok());
        // Other kinds are unaffected.
        let store = t.get::<KvStore>(last).unwrap();
        assert!(t
            .insert(KvIterHandle::new(&store, store.all().unwrap()))
            .is_ok());
    }

    #[test]
    fn concurrent_close_never_frees_under_a_call() {
        let t = Arc::new(HandleTable::new());
        for _ in 0..50 {
            let h = t.insert(memory_store()).unwrap();
            let reader = {
                let t = Arc::clone(&t);
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        match t.get::<KvStore>(h) {
                            Ok(s) => {
                                let r = s.get_raw(b"k");
                                assert!(
                                    r.is_ok() || r.unwrap_err().code() == ErrorCode::StoreClosed
                                );
                            }
                            Err(e) => assert_eq!(e.code(), ErrorCode::StoreClosed),
                        }
                    }
                })
            };
            t.remove::<KvStore>(h).unwrap().close().unwrap();
            reader.join().unwrap();
        }
    }
}
