//! Addresses as an image's ELF file states them: what Callgrind positions are.
//!
//! valgrind writes, for every object, the addresses its ELF file states (`p_vaddr` space): a
//! fixed-address executable (`ET_EXEC`) runs where it says, so its runtime addresses are
//! written; a PIE or a shared library is written less the address it was loaded at. The model
//! keeps `load_addr + offset` (a runtime address for a DCFG or DCPI image), so a Callgrind
//! position is `offset` plus the [`stated_base`] of its image.
//!
//! Whether an image is a fixed-address executable is read from where it was loaded (and its
//! name: a `.so` is a shared library wherever it was put), as the profile does not say: non-PIE executables are linked at a handful of low addresses
//! (0x400000 by the x86-64 and AArch64 linkers, 0x8048000 on i386, 0x10000 on 32-bit ARM,
//! 0x10000000 on PowerPC, 0x120000000 on Alpha), while PIEs and shared libraries are mapped far
//! above (0x55..., 0x7f... on 64-bit systems; 0x56..., 0xf7... on 32-bit ones).

use crate::ir::{Image, Profile};

/// Whether a file name is a shared library's (`libc.so.6`, `lib0.so`): never fixed-address.
fn is_shared_library(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.ends_with(".so") || base.contains(".so.")
}

/// Whether `image` was loaded where fixed-address executables are linked (and its file is
/// not a shared library).
pub fn is_fixed_address(profile: &Profile, image: &Image) -> bool {
    let a = image.load_addr;
    let low = (0x1_0000..0x2000_0000).contains(&a) || (0x1_2000_0000..0x1_4000_0000).contains(&a);
    low && !image.file.is_some_and(|f| is_shared_library(profile.file_name(f)))
}

/// The address the ELF file of `image` states for `offset`, given where the file's lowest
/// segment is linked (`elf_base`; 0 for a position-independent file): for a fixed-address file
/// its runtime address, `load_addr + offset`; for a position-independent one the offset into
/// the file, `file_offset + offset` (an image that maps the file from `file_offset`, as pprof
/// maps a PIE's text from its page 0x1000), which such a file states as the address.
pub fn elf_address(image: &Image, elf_base: u64, offset: u64) -> u64 {
    if elf_base == 0 {
        offset.wrapping_add(image.file_offset.unwrap_or(0))
    } else {
        offset.wrapping_add(image.load_addr)
    }
}

/// What to add to an offset of `image` to give the address its ELF file states: the load
/// address of a fixed-address executable, 0 for any other image (a Callgrind image's load
/// address is 0 already).
pub fn stated_base(profile: &Profile, image: &Image) -> u64 {
    if is_fixed_address(profile, image) {
        image.load_addr
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executables_keep_their_addresses_and_libraries_are_written_from_zero() {
        let mut profile = Profile::default();
        let (prog, lib) = (profile.files.intern("/bin/prog"), profile.files.intern("/opt/lib/libx.so.1"));
        let at = |load_addr, file| Image { load_addr, file: Some(file), ..Image::default() };
        for exec in [0x400000, 0x8048000, 0x10000, 0x10000000, 0x120000000] {
            assert_eq!(stated_base(&profile, &at(exec, prog)), exec, "{exec:#x}");
            assert_eq!(stated_base(&profile, &at(exec, lib)), 0, "{exec:#x}");
        }
        for other in [0, 0x555555554000, 0x7f0000000000, 0x56555000, 0xf7d00000, 0x3ff80000000] {
            assert_eq!(stated_base(&profile, &at(other, prog)), 0, "{other:#x}");
        }
    }
}
