//! Fuzzes the CSI reader (`.debug_PT` path-tracing metadata and the coverage arrays).
//! seeds: fixtures/csi shared/csi
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("csi", data));
