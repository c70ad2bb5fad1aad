//! Fuzzes the pprof reader (protocol buffers, gzipped or not).
//! seeds: fixtures/pprof
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("pprof", data));
