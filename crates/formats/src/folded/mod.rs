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

use crate::format::{Format, Needs};

pub use crate::folded_stacks::folded::{read, read_bytes};
pub use write::write;

/// The folded-stacks format.
pub static FORMAT: Format = Format {
    name: "folded",
    description: "folded stacks (FlameGraph, inferno): frame;frame;frame count",
    extensions: &[".folded", ".collapsed"],
    sniffer: Some(sniff),
    reader: Some(|input, _, findings| read(input.limit_lines().stream(), findings)),
    writer: Some(write),
    needs: Needs::NAMED_STACKS,
    without_addresses: Some("stacks are made of functions; these blocks have no counts to put on them"),
    ..Format::NONE
};

/// Lines of the head the sniffer looks at, at most.
const SNIFF_LINES: usize = 64;

/// Whether the head looks like folded stacks: every complete line among the first ones (blank
/// lines and `#` comments aside, such as austin's header) is a stack, frames joined by `;`,
/// then one or two counts (integer or fractional); and at least one stack has two frames, which
/// a lone `name 12` of other formats does not. Tried after every other format's sniffer.
fn sniff(head: &[u8]) -> bool {
    // The last line may be cut by the end of the head: only complete lines count, unless the
    // head is the whole input.
    let complete = match memchr::memrchr(b'\n', head) {
        Some(i) => &head[..=i],
        None => head,
    };
    let Ok(text) = std::str::from_utf8(complete) else { return false };
    let mut stacks = 0;
    let mut nested = false;
    for line in
        text.lines().map(|l| l.trim_end_matches('\r')).filter(|l| !l.trim().is_empty()).take(SNIFF_LINES)
    {
        if line.starts_with('#') {
            continue;
        }
        if !is_stack_line(line) {
            return false;
        }
        stacks += 1;
        nested |= line.contains(';');
    }
    stacks > 0 && nested
}

/// `frame;frame count` or `frame;frame count count`, the stack starting with no blank.
fn is_stack_line(line: &str) -> bool {
    let is_count = |t: &str| !t.is_empty() && t.parse::<f64>().is_ok_and(|v| v.is_finite() && v >= 0.0);
    if line.starts_with([' ', '\t']) {
        return false;
    }
    let Some((rest, last)) = line.rsplit_once([' ', '\t']) else { return false };
    if !is_count(last) {
        return false;
    }
    let stack = match rest.trim_end().rsplit_once([' ', '\t']) {
        Some((before, prev)) if is_count(prev) && !before.trim().is_empty() => before,
        _ => rest,
    };
    !stack.trim().is_empty()
}
