//! Intel DCFG: the dynamic control-flow graph JSON written by Pin's DCFG tool, PinPlay and SDE
//! (usually `*.dcfg.json.bz2`). Format version 1.00; see docs/formats/dcfg.md for the mapping.

mod read;
pub mod validate;
mod write;

use crate::format::Format;

pub use read::read;
pub use write::write;

/// What a DCFG writer can be asked.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Indented, human-readable JSON (`--pretty`) instead of one table row per line.
    pub pretty: bool,
    /// Where the profile's binaries are found (`--symbols`), for the procedure linkage
    /// table's stubs that a Callgrind profile counts under its calls
    /// ([`cfghub_analysis::plt`]).
    pub symbols: cfghub_analysis::symbolize::Options,
}

/// The DCFG format.
pub static FORMAT: Format = Format {
    name: "dcfg",
    description: "Intel DCFG JSON (Pin, PinPlay, SDE)",
    extensions: &[".dcfg.json", ".dcfg"],
    sniffer: Some(sniff),
    reader: Some(|input, _, findings| read(input.stream(), findings)),
    writer: Some(|profile, out, options, findings| {
        write(profile, out, &options.formats.get::<Options>(), findings)
    }),
    without_addresses: Some(
        "they are written with ADDR_OFFSET 0 and SIZE 0, without their source lines and path numbers",
    ),
    // The structural and arithmetic rules of the DCFG spec.
    validator: Some(validate::check),
    ..Format::NONE
};

/// A JSON object whose first keys include DCFG's top-level tags (but not a trace's
/// `TRANSITION_TABLE`/`THREAD_DATA`).
fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    t.starts_with('{')
        && [
            "\"FILE_NAMES\"",
            "\"EDGE_TYPES\"",
            "\"SPECIAL_NODES\"",
            "\"INSTR_COUNT_PER_THREAD\"",
            "\"BASIC_BLOCKS\"",
        ]
        .iter()
        .any(|k| t.contains(k))
        && !t.contains("\"TRANSITION_TABLE\"")
}
