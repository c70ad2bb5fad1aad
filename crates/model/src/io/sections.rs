//! Sections of object files stored compressed (`SHF_COMPRESSED` with zlib or zstd, GNU
//! `.zdebug_*`), inflated under one rule for every reader of them (the CSI reader, the
//! symbolizer's DWARF):
//!
//! - the size a section announces once inflated may be at most [`MAX_RATIO`] times its
//!   compressed bytes, plus [`SLACK`]. Real DWARF and CSI text compress 3 to 20 times; a
//!   section that claims a thousand times its size holds one byte repeated, which is no debug
//!   information. The way past the rule, for a file that really is that repetitive, is to
//!   store the sections uncompressed (`objcopy --decompress-debug-sections`): those are
//!   mapped, not inflated;
//! - the memory for the inflated bytes is asked for first, so that a section too large for the
//!   memory the process may take is an error naming it, not an abort.

use std::borrow::Cow;

use object::ObjectSection;

use crate::error::{Error, Result};

/// Most times a compressed section may grow when inflated (beyond [`SLACK`]).
pub(crate) const MAX_RATIO: u64 = 100;
/// Bytes any compressed section may inflate to whatever its ratio (small sections of
/// repeated records compress well).
pub const SLACK: u64 = 64 << 10;

/// A section's bytes, inflated when it is compressed; an error (naming the section, for the
/// caller to place in its file) when it announces more than the rule allows, when the memory
/// cannot be had, or when its compressed bytes are damaged.
pub fn section_data<'data, S: ObjectSection<'data>>(section: &S, name: &str) -> Result<Cow<'data, [u8]>> {
    let range = section
        .compressed_file_range()
        .map_err(|e| Error::input(e.to_string()).at_path(format!("section {name}")))?;
    let (packed, unpacked) = (range.compressed_size, range.uncompressed_size);
    if range.format != object::CompressionFormat::None {
        if unpacked > packed.saturating_mul(MAX_RATIO).saturating_add(SLACK) {
            return Err(Error::input(format!(
                "{unpacked} bytes announced once inflated, {}x its {packed} compressed bytes: \
                 more than the {MAX_RATIO}x that real debug information compresses by",
                unpacked / packed.max(1)
            ))
            .at_path(format!("section {name}"))
            .with_hint("if the file is genuine, store its sections uncompressed: objcopy --decompress-debug-sections"));
        }
        let mut probe: Vec<u8> = Vec::new();
        if usize::try_from(unpacked).map_or(true, |n| probe.try_reserve_exact(n).is_err()) {
            return Err(Error::input(format!(
                "{} MiB once inflated, more than this process may allocate",
                unpacked >> 20
            ))
            .at_path(format!("section {name}")));
        }
        drop(probe);
    }
    section
        .uncompressed_data()
        .map_err(|e| Error::input(format!("cannot be inflated: {e}")).at_path(format!("section {name}")))
}
