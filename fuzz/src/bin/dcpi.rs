//! Fuzzes the dcpi reader.
//! seeds: fixtures/dcpi
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("dcpi", data));
