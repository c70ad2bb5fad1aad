//! Fuzzes the bzip2 decoder on its own (crates/bzip2-parallel): damaged block tables, selectors,
//! code lengths, runs and CRCs must be errors, never panics or unbounded allocations, and an
//! input it decodes must decode the same with libbz2.
//! seeds: shared/dcfg/simple-loop.dcfg.json.bz2 fixtures/dcfg/hello-world.dcfg.json.bz2
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::bzip2(data));
