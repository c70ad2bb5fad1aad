//! Fuzzes the dtrace reader.
//! seeds: shared/dtrace
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("dtrace", data));
