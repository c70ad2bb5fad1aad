//! Fuzzes the Chrome trace-event reader (JSON, gzipped or not).
//! seeds: fixtures/chrome-trace/burn.chrome-trace.json fixtures/chrome-trace/nested.json fixtures/chrome-trace/nested.json.expected/to-chrome-trace fixtures/cpuprofile/small.cpuprofile.expected/to-chrome-trace
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read_compressed("chrome-trace", data));
