//! Fuzzes the folded reader.
//! seeds: shared/folded fixtures/dcfg-trace/small.trace.json.expected/replayed-to-folded
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("folded", data));
