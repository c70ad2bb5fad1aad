//! Fuzzes the dcpicat reader.
//! seeds: shared/dcpi
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("dcpicat", data));
