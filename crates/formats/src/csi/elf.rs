//! CSI sections read straight from an object file, executable or separate debug file (ELF,
//! 32 or 64 bits, either byte order; Mach-O `__CSI,debug_*`), through the `object` crate.
//!
//! The linker concatenates the sections of every object file, so one section holds several
//! objects' texts one after the other: the text parser reads them as one. Sections compressed
//! with `objcopy --compress-debug-sections` (`SHF_COMPRESSED`, or GNU `.zdebug_*`) are
//! inflated under the rule every reader of compressed sections follows
//! ([`cfghub_model::io::sections`]).

use std::borrow::Cow;

use object::{Object, ObjectSection};

use super::read::{Builder, Section};
use cfghub_model::error::{Error, Result};

/// The section a name stands for: `.debug_PT`, `.zdebug_PT`, Mach-O `debug_PT`.
fn section_of(name: &str) -> Option<Section> {
    let bare = name.trim_start_matches('.').trim_start_matches("__").trim_start_matches('z');
    let bare = bare.strip_prefix("debug_").or_else(|| bare.strip_prefix("zdebug_"))?;
    Section::ALL.into_iter().find(|s| s.name().trim_start_matches(".debug_") == bare)
}

/// Reads every CSI section of an object file into `builder`; errors when there is none.
pub fn read(data: &[u8], builder: &mut Builder) -> Result<()> {
    for (kind, bytes) in sections(data)? {
        builder.add_text(&bytes, Some(kind))?;
    }
    Ok(())
}

/// The CSI sections of an object file, inflated, path tracing first (so that coverage arrays
/// attach to the functions' symbols); errors when there is none.
pub fn sections(data: &[u8]) -> Result<Vec<(Section, Cow<'_, [u8]>)>> {
    let file = object::File::parse(data)
        .map_err(|e| Error::input(format!("not a readable object file: {e}")).at_byte(0))?;
    let mut found = Vec::new();
    for section in file.sections() {
        let Ok(name) = section.name() else { continue };
        let Some(kind) = section_of(name) else { continue };
        if let Some(seg) = section.segment_name().ok().flatten() {
            if seg != "__CSI" {
                continue;
            }
        }
        found.push((kind, cfghub_model::io::sections::section_data(&section, name)?));
    }
    if found.is_empty() {
        return Err(Error::input(
            "the object file has no CSI section: expected .debug_PT, .debug_BBC, .debug_CC or .debug_FC",
        )
        .with_hint(
            "build the program with csi-cc, or add a section with objcopy --add-section .debug_PT=FILE",
        ));
    }
    found.sort_by_key(|(kind, _)| Section::ALL.iter().position(|s| s == kind));
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_names() {
        assert_eq!(section_of(".debug_PT"), Some(Section::Paths));
        assert_eq!(section_of(".zdebug_BBC"), Some(Section::BlockCoverage));
        assert_eq!(section_of("__debug_CC"), Some(Section::CallCoverage));
        assert_eq!(section_of("debug_FC"), Some(Section::FunctionCoverage));
        assert_eq!(section_of(".debug_info"), None);
        assert_eq!(section_of(".text"), None);
    }
}
