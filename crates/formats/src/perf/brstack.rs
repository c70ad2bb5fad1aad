//! `perf script -F brstack` text (with `pid`, `tid`, `ip` and other fields or without): one
//! line per sample, its branch stack newest first as entries
//! `0xFROM/0xTO/FLAG/TX/ABORT/CYCLES/...`, FLAG `M` for a mispredicted branch, `P` for a
//! predicted one:
//!
//! ```text
//!  5595  5629ec742901 0x5629ec7428f4/0x5629ec742901/P/-/-/19/  0x5629ec742967/0x5629ec7428d0/M/-/-/1/
//! ```
//!
//! The entries are added up as the perf.data reader adds up the branch stacks it reads
//! ([`super::data::records::BranchTotals`]: each entry a taken branch, each consecutive pair a
//! fall-through range), per pid when the text has one (the first decimal field), and become
//! blocks and edges through the branch-record analysis. The text names no files: addresses
//! are kept as they are, in one image for user space and one for the kernel (`--symbols`
//! names them).

use std::collections::BTreeMap;

use super::data::records::BranchTotals;
use super::data::sample::Branch;
use cfghub_analysis::branch_records::{BranchRecords, CodeAddress};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{Image, Process, Profile};

const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// Whether a line holds a branch-stack entry.
pub(crate) fn has_entries(line: &str) -> bool {
    line.split_ascii_whitespace().any(|t| entry(t).is_some())
}

/// One entry `0xFROM/0xTO/FLAG/...`.
fn entry(token: &str) -> Option<Branch> {
    let mut parts = token.split('/');
    let hex =
        |p: Option<&str>| p.and_then(|p| p.strip_prefix("0x")).and_then(|h| u64::from_str_radix(h, 16).ok());
    let from = hex(parts.next())?;
    let to = hex(parts.next())?;
    let flag = parts.next()?;
    Some(Branch { from, to, mispredicted: flag == "M" })
}

/// Reads brstack text into a profile.
pub fn read(text: &[u8], findings: &mut Findings) -> Result<Profile> {
    let mut per_pid: BTreeMap<u64, BranchTotals> = BTreeMap::new();
    for (line, n) in text.split(|&b| b == b'\n').zip(1u64..) {
        let line = String::from_utf8_lossy(line);
        let mut tokens = line.split_ascii_whitespace().peekable();
        let Some(first) = tokens.peek().copied() else { continue };
        if first.starts_with('#') {
            continue;
        }
        let pid = first.parse::<u64>().ok();
        let mut stack = Vec::new();
        for t in tokens {
            if t.contains('/') {
                let b = entry(t).ok_or_else(|| {
                    Error::input(format!("`{t}` is not a branch entry `0xFROM/0xTO/FLAG/...`")).at_line(n)
                })?;
                stack.push(b);
            }
        }
        if !stack.is_empty() {
            per_pid.entry(pid.unwrap_or(0)).or_default().add_stack(stack.into_iter());
        }
    }
    if per_pid.is_empty() {
        return Err(Error::input("no branch stacks (`0xFROM/0xTO/FLAG/...` entries) found")
            .with_hint("print them with `perf script -F pid,brstack`"));
    }
    let mut profile = Profile::default();
    let user = profile.files.intern("[unknown]");
    let kernel = profile.files.intern("[kernel.kallsyms]");
    for (pid, totals) in per_pid {
        let mut process = Process { pid, ..Process::default() };
        process.images.push(Image { id: 0, file: Some(user), ..Image::default() });
        let any_kernel =
            totals.taken.keys().chain(totals.ranges.keys()).any(|&(a, b)| a.max(b) >= KERNEL_START);
        if any_kernel {
            process.images.push(Image { id: 1, file: Some(kernel), ..Image::default() });
        }
        let at = |a: u64| CodeAddress::new(u32::from(a >= KERNEL_START), a);
        let mut branches = BranchRecords::new();
        for (&(from, to), &(count, mispredicts)) in &totals.taken {
            branches.add_taken(at(from), at(to), count, mispredicts);
        }
        for (&(start, end), &count) in &totals.ranges {
            branches.add_fall_through(at(start), at(end), count);
        }
        let summary = branches.to_model(&mut process);
        if summary.invalid_ranges > 0 {
            findings.warn(
                None,
                format!(
                    "process {pid}: {} fall-through range(s) ({} executions) run backwards or across images or functions and were left out, as perf2bolt leaves them",
                    summary.invalid_ranges, summary.invalid_range_count
                ),
            );
        }
        profile.processes.push(process);
    }
    Ok(profile)
}
