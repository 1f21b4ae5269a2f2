//! The C API of window and session stores on the memory engine, driven with arbitrary call
//! sequences and checked against a model (`kstate_fuzz::capi_segmented`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kstate_fuzz::capi_segmented::run(data, false));
