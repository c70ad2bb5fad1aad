//! Fuzzes the dcfg reader.
//! seeds: fixtures/dcfg shared/dcfg
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("dcfg", data));
