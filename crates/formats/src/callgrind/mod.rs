//! Callgrind: the profile format of Valgrind's `callgrind` tool, read by KCachegrind and
//! `callgrind_annotate` (usually `callgrind.out.<pid>`). Format version 1; see
//! docs/formats/callgrind.md for the mapping to the model.
//!
//! A Callgrind file is line-based text. Header lines (`key: value`) name the events measured
//! (`events: Ir`), what the leading numbers of a cost line are (`positions: instr line`) and
//! facts about the run (`cmd:`, `pid:`, `thread:`, `desc:`). Body lines set the current place
//! (`ob=` object, `fl=`/`fi=`/`fe=` source file, `fn=` function, with `(id)` name compression),
//! give self costs at a position (`0x1139 2 10`), and describe associations: a call
//! (`cfn=` + `calls=count target` followed by the call site with the callee's inclusive cost),
//! an unconditional jump (`jump=count target`) or a conditional one
//! (`jcnd=followed/executed target`), each followed by its source position.

mod branch_pairs;
mod functions;
mod parse;
mod read;
mod write;

use crate::format::Format;

pub use read::read;
pub use write::write;

/// What a Callgrind writer can be asked.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// One part per thread (`--per-thread`) instead of the threads summed into one part.
    pub per_thread: bool,
}

/// The Callgrind format.
pub static FORMAT: Format = Format {
    name: "callgrind",
    description: "Callgrind profile (valgrind --tool=callgrind; KCachegrind, callgrind_annotate)",
    extensions: &["callgrind.out.*", ".callgrind"],
    file_name: Some(matches_file_name),
    sniffer: Some(sniff),
    reader: Some(read),
    writer: Some(write),
    without_addresses: Some(
        "Callgrind positions are addresses or lines of costs; these blocks carry no cost and are left out",
    ),
    // Valgrind writes the addresses an object states (a PIE's too), not where it ran.
    addresses: cfghub_model::ir::AddressKind::Stated,
    ..Format::NONE
};

/// Valgrind names its output `callgrind.out.<pid>` (a prefix, not an extension);
/// other producers use a `.callgrind` ending.
fn matches_file_name(base_name: &str) -> bool {
    base_name.starts_with("callgrind.out") || base_name.ends_with(".callgrind")
}

fn sniff(head: &[u8]) -> bool {
    if head.starts_with(b"# callgrind format") {
        return true;
    }
    let head = &head[..head.len().min(2048)];
    for line in head.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        if line.starts_with(b"version:")
            || line.starts_with(b"events:")
            || line.starts_with(b"positions:")
            || line.starts_with(b"creator: callgrind")
        {
            return true;
        }
        // Other header lines may precede the telling ones; a body line ends the header.
        let is_header = line.iter().take_while(|b| b.is_ascii_alphabetic()).count() > 0
            && line.iter().find(|b| !b.is_ascii_alphabetic()) == Some(&b':');
        if !is_header {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_headers_and_names() {
        assert!(sniff(b"# callgrind format\nversion: 1\n"));
        assert!(sniff(b"version: 1\ncreator: callgrind-3.19.0\n"));
        assert!(sniff(b"# comment\nevents: Ir\nfn=main\n"));
        assert!(sniff(b"cmd: ./a\npid: 3\nevents: Ir\n"));
        assert!(!sniff(b"{\"FILE_NAMES\": []}"));
        assert!(!sniff(b"main;foo 12\n"));
        assert!(!sniff(b"fn=main\nevents: Ir\n"));
        let f = FORMAT;
        assert!(f.matches_file_name("callgrind.out.1234"));
        assert!(f.matches_file_name("callgrind.out"));
        assert!(f.matches_file_name("app.callgrind"));
        assert!(!f.matches_file_name("app.dcfg.json"));
    }
}
