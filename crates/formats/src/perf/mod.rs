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
//! name becomes the root frame, inlined frames get the suffix `_[i]`, equal stacks are summed;
//! it runs once per event over that event's records, which [`records`] prepares so that every
//! sample is kept and its period read. The folded results land in the model as stacks with
//! one column per event, named as perf names it, in one process per pid, each
//! stack on the thread of its tid (threads numbered in tid order; the tids are kept in the
//! `tids` header). For outputs that need images, each record's sampled instruction is also
//! placed in its binary as a cost at an address (`leaves`), as the perf.data reader places
//! samples. Text of `perf script -F brstack` (branch stacks) is read by [`brstack`]
//! into blocks and edges instead. Read only. See docs/formats/perf.md; the binary perf.data
//! is read by [`data`] (docs/formats/perf-data.md).

pub mod brstack;
pub mod data;
mod leaves;
mod records;

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
    reader: Some(|input, options, findings| {
        // Where the output names frames alone (folded stacks, flame graphs), no addresses.
        if !options.needs.images {
            return read(input.stream(), findings);
        }
        let symbol_paths = &options.formats.get::<data::Options>().symbol_paths;
        read_placed(input.stream(), symbol_paths, findings)
    }),
    addresses: cfghub_model::ir::AddressKind::Stated,
    ..Format::NONE
};

const HINT: &str = "expected a sample header line (`comm pid time: period event:`) followed by \
                    indented frames; record with `perf record -g`, print with `perf script`";

/// Collapses `perf script` output with inferno and reads the folded stacks into the model,
/// one column per event (see [`records`]).
pub fn read(input: &mut dyn BufRead, findings: &mut Findings) -> Result<Profile> {
    read_with(input, None, findings)
}

/// [`read`], and each record's sampled instruction placed in its binary where the binary is
/// found (`symbol_paths`: the `--symbols` files; see the module `leaves`).
pub fn read_placed(
    input: &mut dyn BufRead,
    symbol_paths: &[std::path::PathBuf],
    findings: &mut Findings,
) -> Result<Profile> {
    read_with(input, Some(symbol_paths), findings)
}

/// [`read`], placing the leaves where `symbol_paths` is given.
fn read_with(
    input: &mut dyn BufRead,
    symbol_paths: Option<&[std::path::PathBuf]>,
    findings: &mut Findings,
) -> Result<Profile> {
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
    let leaves = symbol_paths.map(|paths| leaves::Leaves::find(&raw[from..], paths));
    let mut raw = raw;
    raw.drain(..from);
    let (text, events, unreadable) = records::prepare(crate::folded_stacks::escape_owned(raw));
    if unreadable > 0 {
        findings.warn(None, format!("perf: left out {unreadable} sample(s) whose header line is not one"));
    }
    let names: Vec<String> = events.iter().map(event_name).collect();
    let mut folded = format!("# events: {}\n", names.join(" ")).into_bytes();
    for (e, event) in events.iter().enumerate() {
        let collapsed = collapse_records(&text, &event.tag)?;
        let mut total = 0u128;
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', &collapsed) {
            let line = &collapsed[start..end];
            start = end + 1;
            let Some(space) = memchr::memrchr(b' ', line) else { continue };
            let count = &line[space + 1..];
            total += count.iter().fold(0u128, |n, &d| n * 10 + u128::from(d.wrapping_sub(b'0')));
            if events.len() > 1 {
                folded.extend_from_slice(&line[..space]);
                for column in 0..events.len() {
                    folded.push(b' ');
                    folded.extend_from_slice(if column == e { count } else { b"0" });
                }
                folded.push(b'\n');
            }
        }
        if events.len() == 1 {
            folded.extend_from_slice(&collapsed);
        }
        if event.with_period > 0 && event.with_period < event.samples {
            findings.warn(
                None,
                format!(
                    "perf: {} of {} sample(s) of {} state no period and count 1 each",
                    event.samples - event.with_period,
                    event.samples,
                    event.name
                ),
            );
        }
        if total < event.total {
            let what = if event.with_period == 0 { "sample(s)" } else { "in periods" };
            let left_out = event.total - total;
            findings.warn(
                None,
                format!("perf: left out {left_out} {what} of {}'s {} in total", event.name, event.total),
            );
        }
    }
    let mut profile = crate::folded_stacks::folded::read_bytes(&folded, findings)?;
    // Each event's unit, as the perf.data reader states it: perf's periods of its software
    // clocks are nanoseconds, of the other events counts; sample counts are counts.
    for (event, name) in events.iter().zip(&names) {
        let base = event.name.split(':').next().unwrap_or_default();
        let clock = event.with_period > 0 && matches!(base, "cpu-clock" | "task-clock");
        let unit = if clock { "nanoseconds" } else { "count" };
        profile.meta.headers.push((cfghub_model::ir::EVENT_UNIT_KEY.into(), format!("{name} {unit}")));
    }
    let mut profile = by_process_and_thread(profile);
    let perf_names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    if let Some(leaves) = leaves {
        leaves.add_to(&mut profile, &perf_names, findings);
    }
    Ok(profile)
}

/// The name of an event's column: perf's name where its samples' values are periods, as the
/// perf.data reader names them, followed by `:` where they are sample counts (no sample
/// states a period).
fn event_name(event: &records::EventRecords) -> String {
    match event.with_period {
        0 => format!("{}:", event.name),
        _ => event.name.clone(),
    }
}

/// The collapse of `perf script` text both readers use (the perf.data reader writes its
/// samples as that text, one event at a time): every sample kept, as [`records`] prepares it.
fn collapse(text: &[u8]) -> Result<Vec<u8>> {
    let (text, events, _) = records::prepare(crate::folded_stacks::escape_owned(text.to_vec()));
    let mut folded = Vec::new();
    for event in &events {
        folded.extend_from_slice(&collapse_records(&text, &event.tag)?);
    }
    Ok(folded)
}

/// The collapse of the records of the event tagged `tag` in text [`records::prepare`]d: the
/// tid in the root frame (`comm-pid/tid`, the pid alone when perf printed no tid), kernel
/// frames marked `_[k]`.
fn collapse_records(prepared: &[u8], tag: &str) -> Result<Vec<u8>> {
    let mut options = inferno::collapse::perf::Options::default();
    options.include_tid = true;
    options.annotate_kernel = true;
    options.event_filter = Some(tag.to_string());
    let mut folder = inferno::collapse::perf::Folder::from(options);
    crate::folded_stacks::collapse_escaped(&mut folder, prepared, "`perf script` output", HINT)
}

/// The names the collapse gives leaf frames (`ADDRESS FUNCTION+0xOFFSET (FILE)` lines), so
/// that the costs of [`leaves`] name functions as the stacks do (inferno's `_[k]` for the
/// kernel, a Java inline chain's innermost method, `[FILE]` for code perf could not name):
/// each line (with the command of a record it leads, which the collapse's rules for Java
/// heed) collapsed as a record of its own, its index the record's pid and tid.
fn collapsed_leaf_names(frames: &[(String, String)]) -> Vec<Option<String>> {
    let mut text = String::new();
    for (i, (command, frame)) in frames.iter().enumerate() {
        text.push_str(&format!("{command} {i}/{i} 0.0: 1 x:\n\t{frame}\n\n"));
    }
    let mut names = vec![None; frames.len()];
    let (prepared, _, _) = records::prepare(crate::folded_stacks::escape_owned(text.into_bytes()));
    let Ok(folded) = collapse_records(&prepared, "e0") else { return names };
    let Ok(profile) = crate::folded_stacks::folded::read_bytes(&folded, &mut Findings::default()) else {
        return names;
    };
    let mut path = Vec::new();
    for process in &profile.processes {
        for sample in process.stacks.samples() {
            process.stacks.path(sample.node, &mut path);
            let (Some(&root), Some(&leaf)) = (path.first(), path.last()) else { continue };
            let index =
                split_root(profile.frames.get(root)).and_then(|(_, _, tid)| usize::try_from(tid).ok());
            if let Some(slot) = index.and_then(|i| names.get_mut(i)).filter(|_| path.len() > 1) {
                *slot = Some(profile.frames.get(leaf).to_string());
            }
        }
    }
    names
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

/// A root frame `comm-pid/tid` read: the command's frame, and the pid (if known) and tid.
type RootFrame = (cfghub_model::ir::FrameId, RootIds);

/// Moves the stacks of the collapse (one process, root frames `comm-pid/tid`) into one process
/// per pid (samples without a pid in one process of pid 0), each stack on the thread of its
/// tid, its root frame the command alone.
fn by_process_and_thread(mut profile: cfghub_model::ir::Profile) -> cfghub_model::ir::Profile {
    let Some(all) = profile.processes.pop() else { return profile };
    let old = std::mem::take(&mut profile.frames);
    let stacks = &all.stacks;
    let mut placing = ByProcess::new(old.len(), stacks.width(), all.pid);
    let mut path = Vec::new();
    for sample in stacks.samples() {
        stacks.path(sample.node, &mut path);
        placing.add(&path, |f| old.get(f), sample.values);
    }
    placing.finish(&mut profile);
    profile
}

/// The pid (if known) and tid a root frame `comm-pid/tid` names.
type RootIds = Option<(Option<u64>, u64)>;

/// Stacks whose root frame is `comm-pid/tid` (as the collapse names a thread's stacks), put into
/// one process per pid as they come: each frame given by a key (an id of the caller's names,
/// looked up once), the root frame the command alone, each stack on the thread of its tid (the
/// tids of a process numbered in order once all are known). Stacks that come sorted share
/// prefixes with the one before, whose nodes are kept without a lookup.
pub(crate) struct ByProcess {
    frames: cfghub_model::ir::StringTable,
    width: usize,
    default_pid: u64,
    /// The new frame of each key, and of each root key its command's frame and ids.
    renamed: Vec<Option<cfghub_model::ir::FrameId>>,
    roots: Vec<Option<RootFrame>>,
    tids: std::collections::BTreeMap<Option<u64>, Vec<u64>>,
    processes: std::collections::BTreeMap<Option<u64>, cfghub_model::ir::Process>,
    /// Each stack's root ids and node, and its values (`width` each), in order.
    placed: Vec<(RootIds, u32)>,
    values: Vec<cfghub_model::ir::StackValue>,
    /// The keys of the stack before and the node each ends at.
    before: (Vec<u32>, Vec<u32>),
}

impl ByProcess {
    /// Placing stacks whose frames are keys below `keys`, with `width` values each.
    pub(crate) fn new(keys: usize, width: usize, default_pid: u64) -> Self {
        ByProcess {
            frames: Default::default(),
            width,
            default_pid,
            renamed: vec![None; keys],
            roots: vec![None; keys],
            tids: Default::default(),
            processes: Default::default(),
            placed: Vec::new(),
            values: Vec::new(),
            before: (Vec::new(), Vec::new()),
        }
    }

    /// Adds a stack: its frames' keys root first (the root `comm-pid/tid`), `name` the name of
    /// a key.
    pub(crate) fn add<'n>(
        &mut self,
        keys: &[u32],
        name: impl Fn(u32) -> &'n str,
        values: &[cfghub_model::ir::StackValue],
    ) {
        use cfghub_model::ir::{Process, Stacks, NO_INDEX};
        let (width, default_pid) = (self.width, self.default_pid);
        fn process(
            processes: &mut std::collections::BTreeMap<Option<u64>, Process>,
            pid: Option<u64>,
            default_pid: u64,
            width: usize,
        ) -> &mut Process {
            processes.entry(pid).or_insert_with(|| Process {
                pid: pid.unwrap_or(default_pid),
                stacks: Stacks::with_width(width),
                ..Default::default()
            })
        }
        if let Some(&most) = keys.iter().max() {
            if most as usize >= self.renamed.len() {
                self.renamed.resize(most as usize + 1, None);
                self.roots.resize(most as usize + 1, None);
            }
        }
        let Some(&root) = keys.first() else {
            // A stack without frames: the root of no command.
            let root = self.frames.intern("");
            let node = process(&mut self.processes, None, default_pid, width).stacks.node(NO_INDEX, root);
            self.placed.push((None, node));
            self.values.extend_from_slice(values);
            self.before.0.clear();
            self.before.1.clear();
            return;
        };
        let frames = &mut self.frames;
        let (root_frame, ids) = *self.roots[root as usize].get_or_insert_with(|| {
            let text = name(root);
            let (comm, ids) = match split_root(text) {
                Some((comm, pid, tid)) => (comm, Some((pid, tid))),
                None => (text, None),
            };
            (frames.intern(comm), ids)
        });
        let pid = ids.and_then(|i| i.0);
        let stacks = &mut process(&mut self.processes, pid, default_pid, width).stacks;
        let (before, nodes) = &mut self.before;
        // The same root key is the same process: the shared prefix keeps its nodes.
        let shared = keys.iter().zip(before.iter()).take_while(|(a, b)| a == b).count();
        nodes.truncate(shared);
        for (k, &key) in keys.iter().enumerate().skip(shared) {
            let frame = match k {
                0 => root_frame,
                _ => *self.renamed[key as usize].get_or_insert_with(|| frames.intern(name(key))),
            };
            nodes.push(stacks.node(nodes.last().copied().unwrap_or(NO_INDEX), frame));
        }
        before.clear();
        before.extend_from_slice(keys);
        if let Some((pid, tid)) = ids {
            let t = self.tids.entry(pid).or_default();
            if !t.contains(&tid) {
                t.push(tid);
            }
        }
        self.placed.push((ids, *nodes.last().expect("a stack of frames")));
        self.values.extend_from_slice(values);
        self.values.extend(std::iter::repeat_n(0, width.saturating_sub(values.len())));
    }

    /// Puts the processes (in place of the profile's), their frames and a `tids` header per
    /// process into `profile`.
    pub(crate) fn finish(mut self, profile: &mut cfghub_model::ir::Profile) {
        for t in self.tids.values_mut() {
            t.sort_unstable();
        }
        let width = self.width;
        for (k, &(ids, node)) in self.placed.iter().enumerate() {
            let pid = ids.and_then(|i| i.0);
            let thread =
                ids.and_then(|(p, tid)| self.tids[&p].iter().position(|&t| t == tid)).map(|i| i as u32);
            let values = &self.values[k * width..(k + 1) * width];
            self.processes
                .get_mut(&pid)
                .expect("made with the stack")
                .stacks
                .push_sample(node, thread, values);
        }
        for (pid, t) in &self.tids {
            let list: Vec<String> = t.iter().map(|t| t.to_string()).collect();
            let pid = pid.map_or("?".to_string(), |p| p.to_string());
            profile.meta.headers.push(("tids".into(), format!("{pid}: {}", list.join(" "))));
        }
        profile.frames = self.frames;
        profile.processes = self.processes.into_values().collect();
    }
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
        let names_event = sample_header_end(text.as_bytes()).is_some_and(|end| text[end..].contains(':'));
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
fn sample_header_end(line: &[u8]) -> Option<usize> {
    let (mut all_digits, mut last_was_space) = (false, false);
    for (i, &c) in line.iter().enumerate() {
        if c == b' ' {
            if all_digits && !last_was_space {
                return Some(i + 1);
            }
            all_digits = true;
        } else if !(c.is_ascii_digit() || c == b'/') {
            all_digits = false;
        }
        last_was_space = c == b' ';
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
