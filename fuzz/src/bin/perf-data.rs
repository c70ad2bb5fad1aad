//! Fuzzes the perf.data reader (file and pipe layouts).
//! seeds: fixtures/perf-data/hot-small.perf.data fixtures/perf-data/interp-dwarf.perf.data fixtures/perf-data/no-samples.perf.data fixtures/perf-data/propeller_sample_1.perf.data fixtures/fuzz/perf-data
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("perf-data", data));
