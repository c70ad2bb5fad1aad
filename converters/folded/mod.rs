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

use crate::registry::Format;

pub use crate::stacks::folded::{read, read_bytes};
pub use write::write;

/// The folded-stacks format.
pub static FORMAT: Format = Format {
    name: "folded",
    description: "folded stacks (FlameGraph, inferno): frame;frame;frame count",
    extensions: &[".folded", ".collapsed"],
    reader: Some(|input, _, findings| {
        read(&mut crate::io::LineLimit::new(input, crate::io::MAX_LINE), findings)
    }),
    writer: Some(write),
    ..Format::NONE
};
