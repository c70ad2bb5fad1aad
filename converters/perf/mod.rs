//! `perf script` text: Linux perf's samples with their call chains.
//!
//! ```text
//! dd 29776 666709.771979:   10101010 cpu-clock:
//!           414b3b fsnotify (/lib/modules/4.1.0-virtual/build/vmlinux)
//!           3d6b4c vfs_read (/lib/modules/4.1.0-virtual/build/vmlinux)
//!            e5f70 read (/lib/x86_64-linux-gnu/libc-2.15.so)
//! ```
//!
//! A header line per sample (command, pid/tid, time, period, event), then its frames leaf
//! first (address, symbol, module), then a blank line. The collapse is inferno's
//! (`inferno::collapse::perf`, the port of FlameGraph's `stackcollapse-perf.pl`): the command
//! name becomes the root frame, inlined frames get the suffix `_[i]`, only the first event
//! seen is kept (as perf's own flame graph scripts do), equal stacks are summed. The folded
//! result lands in the model as stacks with the event `samples`. Read only. See
//! docs/formats/perf.md.

use std::io::BufRead;

use inferno::collapse::Collapse;

use crate::error::{Error, Findings, Result};
use crate::ir::Profile;
use crate::registry::Format;

/// The `perf script` text format.
pub static FORMAT: Format = Format {
    name: "perf",
    description: "`perf script` text output with call chains (read only)",
    extensions: &[".perf.txt", ".perf-script"],
    file_name: Some(matches_file_name),
    sniffer: Some(sniff),
    reader: Some(|input, _, findings| read(input, findings)),
    ..Format::NONE
};

/// Collapses `perf script` output with inferno and reads the folded stacks into the model.
pub fn read(input: &mut dyn BufRead, findings: &mut Findings) -> Result<Profile> {
    const HINT: &str = "expected a sample header line (`comm pid time: period event:`) followed by \
                        indented frames; record with `perf record -g`, print with `perf script`";
    let mut folder = inferno::collapse::perf::Folder::default();
    // inferno expects the first record to start with a sample header line: check the complete
    // lines of the first buffer before handing the input over.
    let head = input.fill_buf().map_err(|e| Error::io("-", e))?;
    let complete = match memchr::memrchr(b'\n', head) {
        Some(i) => &head[..=i],
        None => head,
    };
    if folder.is_applicable(&String::from_utf8_lossy(complete)) == Some(false) {
        return Err(Error::input("not `perf script` output: the first record has no sample header line")
            .at_line(1)
            .with_hint(HINT));
    }
    let folded = crate::stacks::collapse(&mut folder, input, "`perf script` output", HINT)?;
    crate::stacks::folded::read_bytes(&folded, findings)
}

/// `perf script` output saved under a name such as `perf-script.txt` or `perf.script`.
fn matches_file_name(base_name: &str) -> bool {
    base_name.starts_with("perf") && base_name.contains("script")
}

/// inferno's own test: a sample header line followed by a frame line.
fn sniff(head: &[u8]) -> bool {
    let complete = match memchr::memrchr(b'\n', head) {
        Some(i) => &head[..=i],
        None => head,
    };
    let mut folder = inferno::collapse::perf::Folder::default();
    folder.is_applicable(&String::from_utf8_lossy(complete)) == Some(true)
}
