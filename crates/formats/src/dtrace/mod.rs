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

use crate::format::{Format, ReadOptions};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::Profile;

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
    reader: Some(|input, options, findings| read(input.stream(), options, findings)),
    ..Format::NONE
};

const WHAT: &str = "a DTrace stack aggregation";
const HINT: &str = "expected records of indented frames (leaf first), each ended by its count";

/// Collapses a DTrace aggregation with inferno and reads the folded stacks into the model.
/// [`Options::include_offsets`] keeps `+0xOFFSET` on every frame but the leaf. The records are
/// checked first ([`check_records`]): inferno would take any text as an empty aggregation and
/// name no line where a record is cut short.
pub fn read(input: &mut dyn BufRead, options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    let raw = crate::folded_stacks::read_all(input)?;
    check_records(&raw)?;
    let mut collapse = inferno::collapse::dtrace::Options::default();
    collapse.includeoffset = options.formats.get::<Options>().include_offsets;
    let mut folder = inferno::collapse::dtrace::Folder::from(collapse);
    let folded = crate::folded_stacks::collapse_bytes(&mut folder, &raw, WHAT, HINT)?;
    crate::folded_stacks::folded::read_bytes(&folded, findings)
}

/// Walks the records as inferno's collapser will (everything up to the first blank line is a
/// header; then frame lines, each record ended by a line holding only its count) and refuses,
/// at their line: a count with no frames before it, a record the input cuts short, and input
/// with no record at all, unless it is DTrace's header alone (`CPU ID FUNCTION:NAME` and the
/// probe lines: what DTrace prints for an empty aggregation).
fn check_records(raw: &[u8]) -> Result<()> {
    let text = |line: &[u8]| String::from_utf8_lossy(line).trim().to_string();
    let mut lines = raw.split(|&b| b == b'\n').zip(1u64..);
    let mut header = Vec::new();
    for (line, _) in lines.by_ref() {
        let t = text(line);
        if t.is_empty() {
            break;
        }
        header.push(t);
    }
    let (mut records, mut start) = (0u64, None);
    for (line, n) in lines {
        let t = text(line);
        if t.is_empty() {
            continue;
        }
        if t.parse::<u64>().is_ok() {
            if start.take().is_none() {
                return Err(Error::input(format!("DTrace record: a count ({t}) with no frames before it"))
                    .at_line(n)
                    .with_hint(HINT));
            }
            records += 1;
        } else if start.is_none() {
            start = Some(n);
        }
    }
    if let Some(n) = start {
        return Err(Error::input(
            "the DTrace aggregation ends in the middle of a stack: the record that starts here has frames but no count after them",
        )
        .at_line(n)
        .with_hint("the aggregation was cut short (a partial copy?); every record ends with its count"));
    }
    let probe = |t: &String| {
        let words: Vec<&str> = t.split_whitespace().collect();
        words.len() == 3
            && words[..2].iter().all(|w| w.bytes().all(|b| b.is_ascii_digit()))
            && words[2].contains(':')
    };
    let dtrace_header =
        header.first().is_some_and(|h| h.split_whitespace().eq(["CPU", "ID", "FUNCTION:NAME"]))
            && header[1..].iter().all(probe);
    if records == 0 && !dtrace_header {
        let first = raw.split(|&b| b == b'\n').position(|l| !text(l).is_empty()).map_or(1, |i| i as u64 + 1);
        return Err(Error::input(format!(
            "not a DTrace aggregation: no stack record in the input{}",
            if header.is_empty() {
                ""
            } else {
                " (the lines up to the first blank line are taken as a header)"
            }
        ))
        .at_line(first)
        .with_hint(HINT));
    }
    Ok(())
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
