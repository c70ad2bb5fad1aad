//! Folded stacks: the text format of Brendan Gregg's FlameGraph tools and inferno
//! (`*.folded`). One line per call path, frames root first joined by `;`, then a count:
//!
//! ```text
//! main;parse;read_line 31
//! main;compute 274.3
//! ```
//!
//! cfghub reads and writes several count columns (`a;b 31 56`, the before/after of a
//! differential profile) and names them with a `# events: NAME ...` comment, which flame-graph
//! tools skip. See docs/formats/folded.md for the mapping.

mod write;

use std::io::{BufRead, Write};

use crate::error::{Findings, Result};
use crate::ir::Profile;
use crate::registry::{Format, ReadOptions, WriteOptions};

pub use crate::stacks::folded::{read, read_bytes};
pub use write::write;

/// The folded-stacks format.
pub struct Folded;

impl Format for Folded {
    fn name(&self) -> &'static str {
        "folded"
    }

    fn description(&self) -> &'static str {
        "folded stacks (FlameGraph, inferno): frame;frame;frame count"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &[".folded", ".collapsed"]
    }

    fn can_read(&self) -> bool {
        true
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
        read(&mut crate::io::LineLimit::new(input, crate::io::MAX_LINE), findings)
    }

    fn write(
        &self,
        profile: &Profile,
        out: &mut dyn Write,
        options: &WriteOptions,
        findings: &mut Findings,
    ) -> Result<()> {
        write(profile, out, options, findings)
    }
}
