//! Fuzzes BOLT's `.fdata` reader (LBR and `no_lbr` forms), without a binary: functions laid out
//! in the order they first appear.
//! seeds: fixtures/bolt/call_in_loop.fdata fixtures/bolt/call_in_loop.pa.expected/to-fdata fixtures/perf-data/propeller_sample_1.perf.data.expected/to-fdata
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read("fdata", data));
