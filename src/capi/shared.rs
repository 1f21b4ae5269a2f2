//! The C functions every store kind has (open, close, commit, committed offset and metadata,
//! rollback, uncommitted bytes, iterator release), declared once in `shared.rs.in` and
//! expanded per kind by `build.rs`; this module gives the expansion its imports.

use std::ffi::c_char;

use super::bytes::{found_raw, kstate_bytes_t, opt_path};
use super::iter::kstate_kv_iter_t;
use super::kv::{kstate_kv_t, kstate_offset_t, parse_offsets};
use super::options::kstate_kv_options_t;
use super::segmented_options::{
    kstate_session_options_t, kstate_versioned_options_t, kstate_window_options_t,
};
use super::session::{kstate_session_iter_t, kstate_session_t};
use super::versioned::{kstate_versioned_iter_t, kstate_versioned_t};
use super::window::{kstate_window_iter_t, kstate_window_t};
use super::{number, pointer, OptionsStruct};
use crate::bridge::{self, Transactional};
use crate::TopicPartition;

include!(concat!(env!("OUT_DIR"), "/capi_shared.rs"));
