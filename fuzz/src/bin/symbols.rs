//! Fuzzes the symbolizer's opening of an ELF file and its DWARF (`--symbols`), and look-ups of
//! the file's own addresses. Its seeds are ELF files with DWARF: `scripts/fuzz.sh` compiles
//! fixtures/symbols/inlined.c with `cc -g` into the corpus when a C compiler is at hand.
//! seeds: fixtures/symbols
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::symbolize(data));
