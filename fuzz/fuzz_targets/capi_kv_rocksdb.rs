//! The C API of key-value stores on RocksDB (a temporary directory per input; reopening
//! keeps the last commit), driven with arbitrary call sequences and checked against a
//! model (`kstate_fuzz::capi_model`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kstate_fuzz::capi_model::run(data, true));
