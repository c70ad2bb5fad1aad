//! Fuzzes the CSI reader's object-file path: the input (after a first byte whose low bit asks
//! for zlib compression) is the `.debug_PT` section of a generated ELF object file.
//! seeds: fixtures/csi shared/csi
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cfghub_fuzz::read_csi_elf(data));
