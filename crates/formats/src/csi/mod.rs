//! CSI (csi-cc, "crash scene investigation") path-tracing and coverage metadata: the text of
//! the ELF sections `.debug_PT`, `.debug_BBC`, `.debug_CC` and `.debug_FC`, alone or straight
//! from an object file, executable or separate debug file (docs/formats/csi.md).
//!
//! `.debug_PT` describes each instrumented function by its control-flow graph: blocks with the
//! source line of each instruction (no addresses), edges with Ball-Larus increments and weights,
//! back edges marked `~>`. The coverage sections list the sites each function's coverage array
//! records. Everything maps to one image without addresses ([`cfghub_model::ir::Image::no_addresses`]):
//! a routine per function, blocks with [`cfghub_model::ir::BlockLines`], edges with
//! [`cfghub_model::ir::PathEdge`], arrays in [`cfghub_model::ir::Image::coverage`]. The writer prints
//! `.debug_PT` for any routine of the model, numbered by [`cfghub_analysis::ball_larus`] when
//! the input did not number it.

mod elf;
pub mod read;
mod write;

use std::io::Write;

use crate::format::{Format, ReadOptions, WriteOptions};
use cfghub_model::error::{Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::Profile;

/// The CSI format: reads section text or an object file holding the sections; writes
/// `.debug_PT` text of every routine.
pub static FORMAT: Format = Format {
    name: "csi",
    description:
        "CSI (csi-cc) path-tracing and coverage metadata: .debug_PT/BBC/CC/FC text, or an ELF holding them",
    extensions: &[".debug_PT", ".debug_BBC", ".debug_CC", ".debug_FC"],
    sniffer: Some(sniff),
    reader: Some(read),
    writer: Some(write),
    ..Format::NONE
};

/// An object file (the reader looks for the CSI sections in it), or section text.
fn sniff(head: &[u8]) -> bool {
    is_object_file(head) || sniff_text(head)
}

fn read(input: &mut Source<'_>, _options: &ReadOptions, _findings: &mut Findings) -> Result<Profile> {
    let file = input.file().map(|p| p.display().to_string());
    read_bytes(input.bytes()?, file)
}

/// `.debug_PT` text of every routine.
fn write(
    profile: &Profile,
    out: &mut dyn Write,
    _options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    write::write(profile, out, findings)
}

/// Reads CSI metadata from bytes: an object file (by its magic) or section text.
pub fn read_bytes(data: &[u8], file: Option<String>) -> Result<Profile> {
    let mut builder = read::Builder::new();
    if is_object_file(data) {
        elf::read(data, &mut builder)?;
    } else {
        builder.add_text(data, None)?;
    }
    Ok(builder.finish_profile(file))
}

/// Where block `id` of the function `function` is defined in CSI metadata (section text or
/// an object file): its line, as the reader's errors name lines. For messages about a function
/// read already, so `None` when it cannot be found.
pub fn block_location(data: &[u8], function: &str, id: u64) -> Option<cfghub_model::error::Place> {
    if is_object_file(data) {
        let sections = elf::sections(data).ok()?;
        return sections.iter().find_map(|(kind, text)| {
            let line = read::block_line(text, function, id)?;
            Some(cfghub_model::error::Place::Path(format!("section {}, line {line}", kind.name())))
        });
    }
    read::block_line(data, function, id).map(cfghub_model::error::Place::Line)
}

/// ELF, or Mach-O (either byte order, 32 or 64 bits).
fn is_object_file(head: &[u8]) -> bool {
    head.starts_with(b"\x7fELF")
        || [
            [0xfe, 0xed, 0xfa, 0xce],
            [0xfe, 0xed, 0xfa, 0xcf],
            [0xce, 0xfa, 0xed, 0xfe],
            [0xcf, 0xfa, 0xed, 0xfe],
        ]
        .iter()
        .any(|m| head.starts_with(m))
}

/// Whether text starts like a CSI section: `#` alone, then a name, then block lines; or a
/// coverage array header `#NAME|__BBC_arr...`.
fn sniff_text(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    match lines.next() {
        Some("#") => lines.next().is_some() && (text.contains("|ENTRY") || text.contains("|EXIT")),
        Some(l) if l.starts_with('#') => match l.rsplit_once('|') {
            Some((_, array)) => ["__BBC_arr", "__CC_arr", "__FC_arr"].iter().any(|p| array.starts_with(p)),
            None => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing() {
        assert!(sniff_text(b"#\nmain\n3|EXIT\n2|ENTRY|9\n"));
        assert!(sniff_text(b"\n#main|__CC_arr_tests_loop_loop_c_main\n0|CC0|9|rand\n"));
        assert!(!sniff_text(b"# callgrind format\nversion: 1\n"));
        assert!(!sniff_text(b"#\n"));
        assert!(is_object_file(b"\x7fELF\x02\x01"));
    }
}
