//! Fuzzes the Java Flight Recorder reader (chunks, metadata, constant pools, events).
//! seeds: fixtures/jfr/burn.jfr
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("jfr", data));
