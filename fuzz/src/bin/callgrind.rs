//! Fuzzes the callgrind reader.
//! seeds: fixtures/callgrind shared/callgrind
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("callgrind", data));
