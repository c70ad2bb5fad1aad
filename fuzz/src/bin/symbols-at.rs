//! Fuzzes the symbolizer with two inputs in one: addresses the input chooses (a count byte,
//! then 8 bytes each) looked up in an ELF file with DWARF (the rest). `scripts/fuzz.sh` seeds
//! it with fixtures/symbols/inlined.c compiled with `cc -g`, behind addresses of its code.
//! seeds: fixtures/symbols
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::symbolize_at(data));
