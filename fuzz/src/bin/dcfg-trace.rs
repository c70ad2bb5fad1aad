//! Fuzzes the DCFG-trace reader (`trace stats`: every chunk decoded in parallel, edges counted).
//! seeds: fixtures/dcfg-trace
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("dcfg-trace", data));
