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

use crate::symbolize::elf::{ElfFile, Segment};
use cfghub_model::ir::{Image, Profile};

/// Whether a file name is a shared library's (`libc.so.6`, `lib0.so`): never fixed-address.
fn is_shared_library(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.ends_with(".so") || base.contains(".so.")
}

/// Whether `image` was loaded where fixed-address executables are linked (and its file is
/// not a shared library).
pub(crate) fn is_fixed_address(profile: &Profile, image: &Image) -> bool {
    let a = image.load_addr;
    let low = (0x1_0000..0x2000_0000).contains(&a) || (0x1_2000_0000..0x1_4000_0000).contains(&a);
    low && !image.file.is_some_and(|f| is_shared_library(profile.file_name(f)))
}

/// Where an ELF file's loadable segments go: what a writer of one binary's profile (BOLT,
/// LLVM sample profiles) needs to give an image offset as the address the file states.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElfLayout {
    /// Where the lowest segment is linked: 0 for a position-independent file.
    pub base: u64,
    segments: Vec<Segment>,
}

impl ElfLayout {
    /// The layout of `elf`'s loadable segments (those of non-zero size).
    pub fn of(elf: &ElfFile) -> ElfLayout {
        let segments: Vec<Segment> = elf.segments().into_iter().filter(|s| s.size > 0).collect();
        ElfLayout { base: segments.iter().map(|s| s.address).min().unwrap_or(0), segments }
    }

    /// The address the file states for `offset` of `image`. A fixed-address file runs where
    /// it says: `load_addr + offset`. For a position-independent one, an image that maps the
    /// file from `file_offset` (perf's and pprof's mappings) has offsets into the file,
    /// `file_offset + offset`, which the segment holding it turns into the address the file
    /// states: lld puts each segment after the first a page or more above its file offset,
    /// where GNU ld keeps the two equal. Other images' offsets (DCFG, Callgrind) are the
    /// stated addresses already.
    pub fn address(&self, image: &Image, offset: u64) -> u64 {
        if self.base != 0 {
            return offset.wrapping_add(image.load_addr);
        }
        let Some(start) = image.file_offset else { return offset };
        let at = offset.wrapping_add(start);
        self.segments
            .iter()
            .find(|s| at >= s.file_offset && at - s.file_offset < s.file_size)
            .map_or(at, |s| at - s.file_offset + s.address)
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

    /// lld's layout: the text is 0x1000 above its file offset; GNU ld's keeps them equal.
    #[test]
    fn file_offsets_of_a_pie_become_the_addresses_its_segments_state() {
        let segment = |address, file_offset, size, executable| Segment {
            address,
            size,
            file_offset,
            file_size: size,
            executable,
        };
        let lld = ElfLayout {
            base: 0,
            segments: vec![segment(0, 0, 0x734, false), segment(0x1740, 0x740, 0x450, true)],
        };
        let mapped = Image { load_addr: 0x5629_ec74_2000, file_offset: Some(0), ..Image::default() };
        assert_eq!(lld.address(&mapped, 0x8d0), 0x18d0, "compute_flag, as perf maps it");
        let stated = Image { load_addr: 0x5629_ec74_1000, ..Image::default() };
        assert_eq!(lld.address(&stated, 0x18d0), 0x18d0, "offsets that are addresses already");
        let gnu = ElfLayout {
            base: 0,
            segments: vec![segment(0, 0, 0x650, false), segment(0x1000, 0x1000, 0x219, true)],
        };
        let text = Image { file_offset: Some(0x1000), ..Image::default() };
        assert_eq!(gnu.address(&text, 0x139), 0x1139, "pprof's mapping of the text from its page");
        let fixed = ElfLayout { base: 0x400000, segments: vec![segment(0x400000, 0, 0x1000, true)] };
        assert_eq!(fixed.address(&Image { load_addr: 0x400000, ..Image::default() }, 0x10), 0x400010);
    }
}
