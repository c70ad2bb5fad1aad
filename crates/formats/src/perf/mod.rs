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
//! result lands in the model as stacks with the event `samples`, in one process per pid, each
//! stack on the thread of its tid (threads numbered in tid order; the tids are kept in the
//! `tids` header). Text of `perf script -F brstack` (branch stacks) is read by [`brstack`]
//! into blocks and edges instead. Read only. See docs/formats/perf.md; the binary perf.data
//! is read by [`data`] (docs/formats/perf-data.md).

pub mod brstack;
pub mod data;

use std::io::BufRead;

use inferno::collapse::Collapse;

use crate::format::Format;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::Profile;

/// The `perf script` text format.
pub static FORMAT: Format = Format {
    name: "perf",
    description: "`perf script` text output with call chains (read only)",
    extensions: &[".perf.txt", ".perf-script"],
    file_name: Some(matches_file_name),
    sniffer: Some(sniff),
    reader: Some(|input, _, findings| read(input.stream(), findings)),
    ..Format::NONE
};

const HINT: &str = "expected a sample header line (`comm pid time: period event:`) followed by \
                    indented frames; record with `perf record -g`, print with `perf script`";

/// Collapses `perf script` output with inferno and reads the folded stacks into the model.
/// inferno learns the event to keep from the first record's header line and asserts that it
/// found one: the input is handed over from the first record on, once its header is checked.
pub fn read(input: &mut dyn BufRead, findings: &mut Findings) -> Result<Profile> {
    let raw = crate::folded_stacks::read_all(input)?;
    // Branch-stack text: entries on the first lines (the first samples may have none).
    let mut head = raw
        .split(|&b| b == b'\n')
        .map(String::from_utf8_lossy)
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .take(64);
    if head.any(|l| brstack::has_entries(&l)) {
        return brstack::read(&raw, findings);
    }
    let from = first_record(&raw)?;
    let folded = collapse(&raw[from..])?;
    let profile = crate::folded_stacks::folded::read_bytes(&folded, findings)?;
    Ok(by_process_and_thread(profile))
}

/// The collapse of `perf script` text both readers use (the perf.data reader writes its
/// samples as that text): the tid in the root frame (`comm-pid/tid`, the pid alone when perf
/// printed no tid), kernel frames marked `_[k]`.
fn collapse(text: &[u8]) -> Result<Vec<u8>> {
    let mut options = inferno::collapse::perf::Options::default();
    options.include_tid = true;
    options.annotate_kernel = true;
    let mut folder = inferno::collapse::perf::Folder::from(options);
    crate::folded_stacks::collapse_bytes(&mut folder, text, "`perf script` output", HINT)
}

/// The command, pid and tid of a root frame `comm-pid/tid` as the collapse names it; the pid is
/// `?` (unknown) when perf printed one number, the tid (`perf script`'s default fields).
fn split_root(frame: &str) -> Option<(&str, Option<u64>, u64)> {
    let (comm, ids) = frame.rsplit_once('-')?;
    let (pid, tid) = ids.split_once('/').unwrap_or((ids, ids));
    let pid = match pid {
        "?" => None,
        p => Some(p.parse().ok()?),
    };
    Some((comm, pid, tid.parse().ok()?))
}

/// The pid (if known) and tid a root frame `comm-pid/tid` names.
type RootIds = Option<(Option<u64>, u64)>;

/// A root frame `comm-pid/tid` read: the command's frame, and the pid (if known) and tid.
type RootFrame = (cfghub_model::ir::FrameId, RootIds);

/// Moves the stacks of the collapse (one process, root frames `comm-pid/tid`) into one process
/// per pid (samples without a pid in one process of pid 0), each stack on the thread of its
/// tid, its root frame the command alone.
fn by_process_and_thread(mut profile: cfghub_model::ir::Profile) -> cfghub_model::ir::Profile {
    use cfghub_model::ir::{Process, Stacks, NO_INDEX};
    use std::collections::BTreeMap;
    let Some(all) = profile.processes.pop() else { return profile };
    let old = std::mem::take(&mut profile.frames);
    let stacks = &all.stacks;
    // pid -> tids seen.
    let mut tids: BTreeMap<Option<u64>, Vec<u64>> = BTreeMap::new();
    let mut processes: BTreeMap<Option<u64>, Process> = BTreeMap::new();
    // Per sample: its root's ids and its node in its process's stacks.
    let mut placed = Vec::with_capacity(stacks.len());
    // Each old frame's new id, and each root frame's command (new id) and ids, found once.
    let mut renamed: Vec<Option<cfghub_model::ir::FrameId>> = vec![None; old.len()];
    let mut roots: Vec<Option<RootFrame>> = vec![None; old.len()];
    // Each old node's root ids and new node, once made (a node's root is its path's first).
    let mut new_node: Vec<Option<(RootIds, u32)>> = vec![None; stacks.nodes().len()];
    let mut on_path: Vec<u32> = Vec::new();
    let width = stacks.width();
    for sample in stacks.samples() {
        if sample.node == NO_INDEX {
            // A stack without frames: the root of no command.
            let root = profile.frames.intern("");
            let stacks = &mut processes
                .entry(None)
                .or_insert_with(|| Process {
                    pid: all.pid,
                    stacks: Stacks::with_width(width),
                    ..Default::default()
                })
                .stacks;
            placed.push((None, stacks.node(NO_INDEX, root)));
            continue;
        }
        // The nodes of the path not made yet, leaf first.
        on_path.clear();
        let mut n = sample.node;
        while n != NO_INDEX && new_node[n as usize].is_none() {
            on_path.push(n);
            n = stacks.nodes()[n as usize].parent;
        }
        let mut at = if n == NO_INDEX { None } else { new_node[n as usize] };
        for &o in on_path.iter().rev() {
            let node = stacks.nodes()[o as usize];
            let made = match at {
                None => {
                    let first = node.frame;
                    let (root, ids) = *roots[first as usize].get_or_insert_with(|| {
                        let name = old.get(first);
                        let (comm, ids) = match split_root(name) {
                            Some((comm, pid, tid)) => (comm, Some((pid, tid))),
                            None => (name, None),
                        };
                        (profile.frames.intern(comm), ids)
                    });
                    let pid = ids.and_then(|i| i.0);
                    let stacks = &mut processes
                        .entry(pid)
                        .or_insert_with(|| Process {
                            pid: pid.unwrap_or(all.pid),
                            stacks: Stacks::with_width(width),
                            ..Default::default()
                        })
                        .stacks;
                    (ids, stacks.node(NO_INDEX, root))
                }
                Some((ids, parent)) => {
                    let f = *renamed[node.frame as usize]
                        .get_or_insert_with(|| profile.frames.intern(old.get(node.frame)));
                    let pid = ids.and_then(|i| i.0);
                    let stacks = &mut processes.get_mut(&pid).expect("made with the root").stacks;
                    (ids, stacks.node(parent, f))
                }
            };
            new_node[o as usize] = Some(made);
            at = Some(made);
        }
        let (ids, node) = at.expect("a path of frames");
        if let Some((pid, tid)) = ids {
            let t = tids.entry(pid).or_default();
            if !t.contains(&tid) {
                t.push(tid);
            }
        }
        placed.push((ids, node));
    }
    for t in tids.values_mut() {
        t.sort_unstable();
    }
    for (sample, (ids, node)) in stacks.samples().zip(placed) {
        let pid = ids.and_then(|i| i.0);
        let thread = ids.and_then(|(p, tid)| tids[&p].iter().position(|&t| t == tid)).map(|i| i as u32);
        processes.get_mut(&pid).expect("made with the stack").stacks.push_sample(node, thread, sample.values);
    }
    for (pid, t) in &tids {
        let list: Vec<String> = t.iter().map(|t| t.to_string()).collect();
        let pid = pid.map_or("?".to_string(), |p| p.to_string());
        profile.meta.headers.push(("tids".into(), format!("{pid}: {}", list.join(" "))));
    }
    profile.processes = processes.into_values().collect();
    profile
}

/// Where the first record starts (leading blank lines and `#` comments skipped), after checking
/// that it starts with a sample header line that names an event, followed by a frame line.
fn first_record(raw: &[u8]) -> Result<usize> {
    let mut at = 0;
    for (line, n) in raw.split(|&b| b == b'\n').zip(1u64..) {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if text.is_empty() || line.starts_with(b"#") {
            at += line.len() + 1;
            continue;
        }
        let names_event = sample_header_end(text).is_some_and(|end| text[end..].contains(':'));
        // inferno's own test over the record's complete lines in the first 64 KiB.
        let rest = &raw[at..raw.len().min(at + (64 << 10))];
        let complete = match memchr::memrchr(b'\n', rest) {
            Some(i) => &rest[..=i],
            None => rest,
        };
        let mut folder = inferno::collapse::perf::Folder::default();
        let applicable = folder.is_applicable(&String::from_utf8_lossy(complete)) != Some(false);
        if !names_event || !applicable {
            return Err(Error::input(
                "not `perf script` output: the first record does not start with a sample header line",
            )
            .at_line(n)
            .with_hint(HINT));
        }
        return Ok(at);
    }
    Ok(raw.len())
}

/// The end of a sample header's `comm pid ` (or `comm pid/tid `) part: the byte after the
/// first space that follows a word of digits (and slashes), as inferno finds it.
fn sample_header_end(line: &str) -> Option<usize> {
    let (mut all_digits, mut last_was_space) = (false, false);
    for (i, c) in line.char_indices() {
        if c == ' ' {
            if all_digits && !last_was_space {
                return Some(i + 1);
            }
            all_digits = true;
        } else if !(c.is_ascii_digit() || c == '/') {
            all_digits = false;
        }
        last_was_space = c == ' ';
    }
    None
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
