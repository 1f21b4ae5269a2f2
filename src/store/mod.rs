//! Stores over the transaction layer. Key-value stores live here; window and session
//! stores, which share the same machinery, join them later.

pub mod inspect;
mod iter;
mod kafka;
mod kv;
mod lock;
pub(crate) mod open;
mod options;
mod swap;

pub use iter::KvIter;
pub use kv::KvStore;
pub use options::StoreOptions;
