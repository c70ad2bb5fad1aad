//! DTrace aggregations of stacks: what `dtrace -n '... { @[ustack()] = count(); }'` prints.
//!
//! ```text
//! CPU     ID                    FUNCTION:NAME
//!   0  64091                        :tick-60s
//!
//!
//!               libc.so.1`_write+0xa
//!               app`flush+0x1c
//!               app`main+0x55
//!                 12
//! ```
//!
//! An optional header (absent with `dtrace -q`), then records: frames leaf first, one per
//! indented line, then the count alone on its line; with both `stack()` and `ustack()` as keys,
//! kernel frames, a blank line, user frames. Frames are ``module`symbol+0xoff``,
//! ``module`symbol``, ``module`0xaddr``, bare addresses, Java `L...;` frames and inlined `a->b`.
//!
//! The collapse is inferno's (`inferno::collapse::dtrace`, the port of FlameGraph's
//! `stackcollapse.pl`): offsets dropped, C++ argument lists cut, frames reversed to root
//! first, equal stacks summed. Its folded output lands in the model as stacks with the event
//! `samples`. Read only. See docs/formats/dtrace.md.

use std::io::BufRead;

use crate::error::{Findings, Result};
use crate::ir::Profile;
use crate::registry::{Format, ReadOptions};

/// What the DTrace reader can be asked.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Keep `+0xOFFSET` on every frame but the leaf (`--include-offsets`): one flame per call
    /// site instead of one per function.
    pub include_offsets: bool,
}

/// The DTrace aggregation format.
pub static FORMAT: Format = Format {
    name: "dtrace",
    description: "DTrace stack()/ustack() aggregation output (read only)",
    extensions: &[".stacks", ".dtrace"],
    sniffer: Some(sniff),
    reader: Some(read),
    ..Format::NONE
};

/// Collapses a DTrace aggregation with inferno and reads the folded stacks into the model.
/// [`Options::include_offsets`] keeps `+0xOFFSET` on every frame but the leaf.
pub fn read(input: &mut dyn BufRead, options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    let mut collapse = inferno::collapse::dtrace::Options::default();
    collapse.includeoffset = options.formats.get::<Options>().include_offsets;
    let mut folder = inferno::collapse::dtrace::Folder::from(collapse);
    let folded = crate::stacks::collapse(
        &mut folder,
        input,
        "a DTrace stack aggregation",
        "expected records of indented frames (leaf first), each ended by its count",
    )?;
    crate::stacks::folded::read_bytes(&folded, findings)
}

/// The header DTrace prints before an aggregation, a first record of indented
/// ``module`symbol`` frames (`dtrace -q`), or what inferno's collapser recognises.
fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    match lines.next() {
        Some(first) if first.split_whitespace().eq(["CPU", "ID", "FUNCTION:NAME"]) => true,
        Some(first) if first.starts_with([' ', '\t']) && first.contains('`') => true,
        // Any other header: inferno's own test (a record of frames ended by a count
        // after the first blank line).
        Some(_) => {
            let complete = match memchr::memrchr(b'\n', head) {
                Some(i) => &head[..=i],
                None => head,
            };
            let mut folder = inferno::collapse::dtrace::Folder::default();
            inferno::collapse::Collapse::is_applicable(&mut folder, &String::from_utf8_lossy(complete))
                == Some(true)
        }
        None => false,
    }
}
