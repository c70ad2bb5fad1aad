//! Fuzzes the pprof reader (protocol buffers, gzipped or not).
//! seeds: fixtures/pprof/burn.cpu.pb.gz fixtures/pprof/allocs.heap.pb.gz fixtures/pprof/burn.cpu.pb.gz.expected/to-pprof fixtures/firefox/burn.samply.json.gz.expected/to-pprof
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("pprof", data));
