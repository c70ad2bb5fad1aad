//! Fuzzes the perf.data reader (file and pipe layouts).
//! seeds: fixtures/perf-data
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("perf-data", data));
