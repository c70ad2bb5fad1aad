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

mod read;
mod write;

use std::io::{BufRead, Write};

use crate::error::{Error, Findings, Result};
use crate::ir::Profile;
use crate::registry::{Format, ReadOptions, WriteOptions};

/// Runs one of inferno's collapsers (DTrace, perf) over an input and returns its folded
/// text. inferno asserts some of its own invariants on malformed input; such a panic is caught
/// and reported as bad input, never passed on.
pub fn collapse<C: inferno::collapse::Collapse>(
    folder: &mut C,
    input: &mut dyn BufRead,
    what: &str,
    hint: &str,
) -> Result<Vec<u8>> {
    let mut folded = Vec::new();
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| folder.collapse(input, &mut folded)));
    let bad = |detail: String| Error::input(format!("not {what}: {detail}")).with_hint(hint.to_string());
    match result {
        Ok(Ok(())) => Ok(folded),
        Ok(Err(e)) => Err(bad(e.to_string())),
        Err(_) => Err(bad("the collapser could not follow its records".to_string())),
    }
}

pub use read::{default_event_names, read, read_bytes, DEFAULT_EVENT};
pub use write::{chosen_events, write};

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
        read(input, findings)
    }

    fn write(
        &self,
        profile: &Profile,
        out: &mut dyn Write,
        options: &WriteOptions,
        findings: &mut Findings,
    ) -> Result<()> {
        crate::analysis::names::warn_blocks_without_addresses(
            profile,
            findings,
            "folded",
            "stacks are made of functions; these blocks have no counts to put on them",
        );
        write(profile, out, options, findings)
    }
}
