//! Fuzzes the perf reader.
//! seeds: shared/perf
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("perf", data));
