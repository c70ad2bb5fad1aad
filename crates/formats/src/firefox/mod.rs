//! The Firefox Profiler's processed profile format: what samply saves (`samply record
//! --save-only -o prof.json.gz`, `samply import perf.data`), what the profiler's "Download"
//! writes, and what Perfetto imports too (firefox-devtools/profiler, `src/types/profile.ts`,
//! `docs-developer/processed-profile-format.md`).
//!
//! ```text
//! { "meta": { "preprocessedProfileVersion": 55, "interval": 1, "product": "app",
//!             "categories": [{ "name": "User", "color": "yellow", "subcategories": ["Other"] }] },
//!   "libs": [{ "name": "app", "path": "/bin/app", "codeId": "9f2c…", "breakpadId": "…0",
//!              "start": 94000, "end": 98000 }],
//!   "threads": [{ "name": "app", "pid": "1234", "tid": "1234",
//!     "samples":       { "stack": [2, 2, 1], "time": [0, 1, 2], "weight": null, "weightType": "samples" },
//!     "stackTable":    { "prefix": [null, 0, 1], "frame": [0, 1, 2] },
//!     "frameTable":    { "address": [4409, 4433, -1], "inlineDepth": [0, 0, 0], "func": [0, 1, 2], "line": [...] },
//!     "funcTable":     { "name": [0, 1, 2], "resource": [0, 0, -1], "fileName": [...], "lineNumber": [...] },
//!     "resourceTable": { "lib": [0], "name": [3] },
//!     "stringArray":   ["0x1139", "0x1151", "main", "app"] }] }
//! ```
//!
//! Tables are columnar: every column of a table has one entry per row. A sample names a stack;
//! a stack is a node of a prefix tree (its caller's stack, `null` at a root) holding a frame;
//! a frame names a function and an address relative to its library; strings are indices into
//! the string array. Later versions move the tables to `shared` (see [`schema`] for what
//! changed when). The file is gzip-compressed or plain; [`cfghub_model::io`] takes care of that.
//! See docs/formats/firefox.md for the mapping.

/// The sample label that carries a thread's name (`GeckoMain`, `tokio-runtime-worker`): each
/// sample of a named thread has it, and the writer names a track by it.
pub const THREAD_NAME_LABEL: &str = "thread_name";

mod flat;
mod read;
mod schema;
mod write;

use std::io::Write;

use cfghub_analysis::stacks::WrittenStacks;
use cfghub_model::error::{Findings, Result};
use cfghub_model::ir::Profile;

use crate::folded_stacks::stacks_for_writing;
use crate::format::{Format, Needs, WriteOptions};

pub use read::read_bytes;

/// The oldest processed-profile version the reader takes (profiles from before versioning).
pub(crate) const OLDEST_VERSION: u64 = 0;
/// The newest processed-profile version the reader takes.
pub(crate) const NEWEST_VERSION: u64 = 70;

/// The processed profile format.
pub static FORMAT: Format = Format {
    name: "firefox",
    description:
        "Firefox Profiler processed profile (samply, the profiler's downloads, Perfetto), gzip or plain",
    extensions: &[".fxprof.json", ".fxprof"],
    sniffer: Some(sniff),
    reader: Some(read::read),
    writer: Some(write),
    needs: Needs::STACKS,
    // samply records addresses relative to each library and where the library was.
    symbolize_by_default: true,
    addresses: cfghub_model::ir::AddressKind::ImageRelative,
    ..Format::NONE
};

/// Writes the profile's stacks (or, with a warning, those derived as for folded stacks).
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let (stacks, events) =
        stacks_for_writing(profile, options.event.as_deref(), findings, "Firefox Profiler profiles")?;
    let model = match stacks {
        // A profile of flat costs of one process, a frame per stack, is written as its stacks
        // are walked: as model stacks through the crate, its 2.5 million addresses took 176x
        // the input.
        WrittenStacks::Flat(flat) if profile.processes.len() == 1 => match flat::one_frame_stacks(&flat) {
            Some(n) => return flat::write(&flat, n, &events, out, findings),
            None => WrittenStacks::Flat(flat).into_model(),
        },
        stacks => stacks.into_model(),
    };
    write::write_model(&model, &events, out, findings)
}

/// A JSON object that starts with `"meta"` (as samply and the profiler write it), or whose
/// first bytes hold a key only this format has. Gecko profiles start so too: the reader
/// explains that it cannot read them.
fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    let Some(rest) = t.strip_prefix('{') else { return false };
    rest.trim_start().starts_with("\"meta\"")
        || ["\"preprocessedProfileVersion\"", "\"stackTable\"", "\"frameTable\""]
            .iter()
            .any(|k| t.contains(k))
}

/// What perf's collapsers (and folded stacks after them) append to a kernel function's name;
/// the reader appends it to frames of the `Kernel` category or a kernel image, the writer
/// takes it off and sets that category.
pub(crate) const KERNEL_SUFFIX: &str = "_[k]";

/// Whether an image holds kernel code: samply's and perf's `[kernel.kallsyms]`, a `vmlinux`,
/// a module.
pub(crate) fn is_kernel_image(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.starts_with("[kernel") || base.starts_with("vmlinux") || base.ends_with(".ko")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_processed_profiles() {
        assert!(sniff(b"{\"meta\":{\"preprocessedProfileVersion\":49"));
        assert!(sniff(b" {\n  \"meta\": {"));
        assert!(!sniff(b"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""));
        assert!(!sniff(b"{\"MAJOR_VERSION\":1"));
        assert!(sniff(b"{\"libs\":[],\"meta\":{\"preprocessedProfileVersion\":49}}"));
    }
}
