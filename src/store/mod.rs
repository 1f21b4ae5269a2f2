//! Stores over the transaction layer: key-value stores, and window and session stores,
//! one generic [`SegmentedStore`] (per kind: [`WindowKind`], [`SessionKind`]) over the
//! segmented engine (`store/segmented.rs`).

mod adopt_segmented;
mod adopt_versioned;
mod adoption;
pub mod checkpoint;
mod checkpoint_file;
pub mod export;
mod export_segmented;
pub mod inspect;
mod iter;
pub(crate) mod kafka;
pub mod kafka_segments;
pub(crate) mod kafka_versioned;
mod kv;
pub(crate) mod lock;
pub(crate) mod open;
mod options;
mod segmented;
mod segmented_store;
mod session;
mod swap;
pub(crate) mod time_order;
mod versioned;
mod window;

pub use adopt_versioned::{export_versioned_to_kafka, VersionedExport};
pub use adoption::{check_adoption, PlannedStore};
pub use checkpoint::{CheckpointFile, CheckpointInfo};
pub use export_segmented::{export_segmented_to_kafka, KafkaSegmentsExport};
pub use iter::KvIter;
pub use kv::KvStore;
pub use options::StoreOptions;
pub use segmented::NO_TIMESTAMP;
pub use segmented_store::{SegmentIter, SegmentKind, SegmentSpec, SegmentedStore};
pub use session::{
    SessionEntry, SessionIter, SessionKind, SessionOptions, SessionQuery, SessionStore,
    SESSION_FAMILY,
};
pub use versioned::{
    ChangelogRecord, VersionOrder, VersionedDelete, VersionedOptions, VersionedRecord,
    VersionedStore, PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED,
};
pub use window::{
    default_segment_interval, WindowEntry, WindowIter, WindowKind, WindowOptions, WindowQuery,
    WindowStore, WINDOW_FAMILY,
};
