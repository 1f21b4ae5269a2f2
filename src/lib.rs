//! # kstate
//!
//! Timestamped (KIP-258) and transactional (KIP-844) state stores for Kafka Streams and
//! for C callers, on RocksDB or in memory.
//!
//! * Values carry the record timestamp in Kafka's `ValueAndTimestamp` layout, or are
//!   stored plain, as Kafka's own stores do ([`format`]).
//! * Writes form a transaction: the writer reads its own writes, committed readers do not
//!   see them, and [`KvStore::commit`] makes them durable atomically with changelog offsets
//!   ([`txn`]). A crash at any instant reopens to exactly some completed commit.
//! * Uncommitted writes are bounded in memory and spill to disk past the bound.
//!
//! Layers, each depending only on the next: surfaces (`capi`, `jni`) → [`store`] →
//! `txn` → `engine` → [`format`]. Only the surfaces, the stores and the formats are public.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod bridge;
pub mod capi;
pub mod error;
pub mod format;
#[doc(hidden)]
pub mod fuzz_api;
pub mod jni;
#[cfg(feature = "remote")]
pub mod remote;
pub mod store;

mod engine;
mod failpoint;
mod handle;
mod sync;
mod txn;

/// The Rust global allocator of everything linked with kstate's default features (the C and
/// JNI libraries, the CLI): a memory-engine put buffers a key and a value, each a small
/// allocation freed at the commit, and glibc's malloc and free were the largest single cost
/// of it. Only Rust's allocations change; RocksDB's C++ keeps the system allocator. Off with
/// `default-features = false` (a program that sets its own allocator).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub use engine::rocksdb::{BoundedMemory, RocksOptions};
pub use engine::{EngineKind, KeyRange};
pub use error::{Error, ErrorCode, Result};
pub use format::meta::ValueFormat;
pub use format::{
    Header, TopicPartition, ValueAndTimestamp, ValueTimestampHeaders, MAX_KEY_BYTES,
    MAX_VALUE_BYTES,
};
pub use store::{
    CheckpointFile, CheckpointInfo, KvIter, KvStore, SessionOptions, SessionStore, StoreOptions,
    VersionedDelete, VersionedOptions, VersionedRecord, VersionedStore, WindowOptions, WindowStore,
};
pub use txn::{Isolation, RecoveryReport};
