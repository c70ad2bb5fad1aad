//! Fuzzes the Firefox Profiler processed-format reader (JSON, gzipped or not).
//! seeds: fixtures/firefox/burn.samply.json.gz fixtures/firefox/upstream fixtures/firefox/burn.samply.json.gz.expected/to-firefox fixtures/perf-data/propeller_sample_1.perf.data.expected/to-firefox
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read_compressed("firefox", data));
