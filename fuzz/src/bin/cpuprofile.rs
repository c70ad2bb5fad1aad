//! Fuzzes the V8 `.cpuprofile` reader (JSON, gzipped or not).
//! seeds: fixtures/cpuprofile/small.cpuprofile fixtures/cpuprofile/small.cpuprofile.expected/to-cpuprofile fixtures/chrome-trace/nested.json.expected/to-cpuprofile
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read_compressed("cpuprofile", data));
