//! Fuzzes the LLVM sample profile reader.
//! seeds: fixtures/llvm-sample
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("llvm-sample", data));
