//! Fuzzes the Firefox Profiler processed-format reader (JSON, gzipped or not).
//! seeds: fixtures/firefox
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read_compressed("firefox", data));
