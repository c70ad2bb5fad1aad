//! Fuzzes the DCFG-trace decoder edge by edge, in order (`trace edges`).
//! seeds: fixtures/dcfg-trace
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::trace_edges(data));
