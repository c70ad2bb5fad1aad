//! Fuzzes BOLT's pre-aggregated branch records reader (`B`, `F` and `f` lines), without a binary.
//! seeds: fixtures/bolt/call_in_loop.pa fixtures/bolt/call_in_loop.fdata.expected/to-bolt-pa fixtures/perf-data/propeller_sample_1.perf.data.expected/to-bolt-pa
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("bolt-pa", data));
