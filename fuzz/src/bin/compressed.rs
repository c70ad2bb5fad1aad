//! Fuzzes the input layer (gzip and bzip2 told by magic bytes, decompressed on their own thread)
//! under the DCFG reader: damaged streams and decompression bombs.
//! seeds: shared/dcfg/simple-loop.dcfg.json.bz2
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read_compressed("dcfg", data));
