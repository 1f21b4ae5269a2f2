//! The C API of window and session stores on RocksDB (a temporary directory per input;
//! reopening keeps the last commit and its stream time), driven with arbitrary call
//! sequences and checked against a model (`kstate_fuzz::capi_segmented`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kstate_fuzz::capi_segmented::run(data, true));
