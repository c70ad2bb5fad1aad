//! Intel DCFG: the dynamic control-flow graph JSON written by Pin's DCFG tool, PinPlay and SDE
//! (usually `*.dcfg.json.bz2`). Format version 1.00; see docs/formats/dcfg.md for the mapping.

mod read;
mod write;

use std::io::{BufRead, Write};

use crate::error::{Findings, Result};
use crate::ir::Profile;
use crate::registry::{Format, ReadOptions, WriteOptions};

pub use read::read;
pub use write::write;

/// The DCFG format.
pub struct Dcfg;

impl Format for Dcfg {
    fn name(&self) -> &'static str {
        "dcfg"
    }

    fn description(&self) -> &'static str {
        "Intel DCFG JSON (Pin, PinPlay, SDE)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &[".dcfg.json", ".dcfg"]
    }

    /// A JSON object whose first keys include DCFG's top-level tags (but not a trace's
    /// `TRANSITION_TABLE`/`THREAD_DATA`).
    fn sniff(&self, head: &[u8]) -> bool {
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

    fn can_read(&self) -> bool {
        true
    }

    /// The structural and arithmetic rules of the DCFG spec (see [`crate::analysis::validate`]).
    fn validate(&self, profile: &Profile) -> Findings {
        crate::analysis::validate::check(profile)
    }

    fn can_write(&self) -> bool {
        true
    }

    fn read(
        &self,
        input: &mut dyn BufRead,
        _options: &ReadOptions,
        findings: &mut Findings,
    ) -> Result<Profile> {
        read(input, findings)
    }

    fn write(
        &self,
        profile: &Profile,
        out: &mut dyn Write,
        options: &WriteOptions,
        findings: &mut Findings,
    ) -> Result<()> {
        write(profile, out, options.pretty, findings)
    }
}
