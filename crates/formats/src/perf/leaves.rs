//! The sampled instructions of `perf script` records, placed in their binaries, so that the
//! samples can be laid on code (`--infer`, `overlap`, the BOLT and LLVM sample writers) as a
//! perf.data's are.
//!
//! A record's leaf frame is `ADDRESS FUNCTION+0xOFFSET (FILE)`: on the line after the header
//! when perf printed a call chain, on the header's line when it printed the sample's ip alone.
//! perf prints a call chain's user addresses relative to the file and a lone ip as the process
//! ran it, and no mapping either way, so the address itself places nothing; the function and
//! offset place both forms alike: the address the binary states for the function (its symbol
//! table, demangled as perf names it), plus the offset. The binary is a `--symbols` file of the
//! same name, else the file at the path perf printed. Kernel code (`[kernel.kallsyms]`) is
//! placed at the address perf printed, in an image of that name, as the perf.data reader
//! places it. Only where at least one binary of the text is found here: else the text is its
//! stacks alone. Records whose leaf perf could not name (`[unknown]`) or printed without an
//! offset (`perf script -F` without `symoff`), or whose file is not found here, are placed
//! at the address perf printed (less the distance between perf's and the binary's addresses
//! that the file's other leaves show, where they show it), so that a writer of costs keeps
//! every sample; a note (`-v`) says how many. Functions are named as the collapse names the
//! stacks' leaves (inferno's `_[k]` for the kernel, a Java inline chain's innermost method).

use std::collections::{BTreeMap, HashMap};

use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

use cfghub_analysis::demangle::demangle;
use cfghub_analysis::symbolize::elf::ElfFile;
use cfghub_model::error::Findings;
use cfghub_model::ir::{Cost, Image, Profile, Symbol};

/// A binary's function symbols by name as perf names them (demangled) and as stated: (start,
/// size), the first of each name; `None` where the file cannot be read.
type Functions = Option<HashMap<String, (u64, u64)>>;

/// One leaf as perf printed it, with the samples on it: (pid, file, function, address,
/// offset into the function, event) -> value.
type Printed = FxHashMap<(Option<u64>, u32, Option<u32>, Option<u64>, Option<u64>, u32), u64>;

/// The cost rows of one image: values by column, by (address, function).
type ImageRows = BTreeMap<(Option<u64>, Option<u32>), Vec<u64>>;

/// The records' leaf frames placed in their binaries, to be added to the profile read from
/// the same text ([`Leaves::add_to`]).
#[derive(Default)]
pub(super) struct Leaves {
    printed: Printed,
    /// The files, functions and events the leaves name, by the ids `printed` holds.
    files: Vec<String>,
    names: Vec<String>,
    events: Vec<String>,
    /// The function symbols of each file, where found.
    functions: Vec<Functions>,
    /// The command of a record each (file, function) leads.
    commands: HashMap<(u32, u32), String>,
    records: u64,
}

/// The records a text's files are looked for in before the rest is read.
const LOOK_AHEAD: u64 = 1000;

/// Interns `name` in `list` (with its index `ids`).
fn intern(list: &mut Vec<String>, ids: &mut FxHashMap<String, u32>, name: &str) -> u32 {
    if let Some(&id) = ids.get(name) {
        return id;
    }
    list.push(name.to_string());
    ids.insert(name.to_string(), list.len() as u32 - 1);
    list.len() as u32 - 1
}

impl Leaves {
    /// The leaf frames of the records of `perf script` text `raw`, with the function symbols
    /// of the binaries found (`symbol_paths`: the `--symbols` files).
    pub(super) fn find(raw: &[u8], symbol_paths: &[PathBuf]) -> Leaves {
        let mut leaves = Leaves::default();
        let (mut file_ids, mut name_ids, mut event_ids) =
            (FxHashMap::default(), FxHashMap::default(), FxHashMap::default());
        let blank = |l: &[u8]| l.iter().all(u8::is_ascii_whitespace);
        let mut lines = raw.split(|&b| b == b'\n').peekable();
        while let Some(line) = lines.next() {
            if blank(line) || line.starts_with(b"#") {
                continue;
            }
            let Some(header) = super::records::Header::parse(line) else { continue };
            leaves.records += 1;
            let leaf = match header.frame {
                Some(at) => Some(&line[at..]),
                None => lines.peek().copied().filter(|l| !blank(l)),
            };
            // The rest of a record with a call chain: its other frames (a lone ip is the
            // record's only line, and records of lone ips follow each other line by line).
            while header.frame.is_none() && lines.peek().is_some_and(|l| !blank(l)) {
                lines.next();
            }
            let frame = leaf.map(frame).unwrap_or_default();
            let file = intern(&mut leaves.files, &mut file_ids, frame.file);
            if file as usize == leaves.functions.len() {
                let path = frame.file;
                leaves.functions.push(if path.starts_with('[') {
                    None
                } else {
                    functions(path, symbol_paths)
                });
            }
            // A text none of whose first records' files is here places nothing (see
            // [`Leaves::add_to`]): its other records are not looked at.
            if leaves.records == LOOK_AHEAD && leaves.functions.iter().all(Option::is_none) {
                return Leaves::default();
            }
            let function = frame.function.map(|f| intern(&mut leaves.names, &mut name_ids, f));
            let event =
                intern(&mut leaves.events, &mut event_ids, std::str::from_utf8(header.event).unwrap_or("?"));
            let pid = pid_of(&line[..header.comm_and_ids]);
            if let Some(name) = function {
                leaves
                    .commands
                    .entry((file, name))
                    .or_insert_with(|| command_of(&line[..header.comm_and_ids]));
            }
            let value = header.period.as_ref().map_or(1, |(p, _)| *p);
            let v =
                leaves.printed.entry((pid, file, function, frame.address, frame.offset, event)).or_default();
            *v = v.saturating_add(value);
        }
        leaves
    }

    /// Adds to each process of `profile` (by pid; records of no pid to the process of pid 0,
    /// else the first) an image per file its records' leaves are in, with a cost per sampled
    /// address (see the module documentation). `events` are perf's names of the profile's
    /// event columns, in order.
    pub(super) fn add_to(self, profile: &mut Profile, events: &[&str], findings: &mut Findings) {
        // Each function's name as the collapse names the stacks' leaves.
        let mut leaf_kinds: Vec<(u32, u32)> =
            self.printed.keys().filter_map(|&(_, file, name, _, _, _)| Some((file, name?))).collect();
        leaf_kinds.sort_unstable();
        leaf_kinds.dedup();
        let lines: Vec<(String, String)> = leaf_kinds
            .iter()
            .map(|&(file, name)| {
                let command = self.commands.get(&(file, name)).cloned().unwrap_or_default();
                (command, format!("0 {}+0x0 ({})", self.names[name as usize], self.files[file as usize]))
            })
            .collect();
        let collapsed: HashMap<(u32, u32), String> = leaf_kinds
            .into_iter()
            .zip(super::collapsed_leaf_names(&lines))
            .filter_map(|(k, name)| Some((k, name?)))
            .collect();
        let function = |file: u32, name: Option<u32>| -> Option<(u64, u64)> {
            let functions = self.functions[file as usize].as_ref()?;
            functions.get(&self.names[name? as usize]).copied()
        };
        // How far each file's addresses as perf printed them lie from those its binary states:
        // the same for every leaf of a file in one text.
        // (The most common one, the smallest of equals: one choice whatever the order.)
        let mut seen: HashMap<(u32, u64), u64> = HashMap::new();
        for &(_, file, name, address, offset, _) in self.printed.keys() {
            if let (Some((start, _)), Some(address), Some(offset)) = (function(file, name), address, offset) {
                *seen.entry((file, address.wrapping_sub(start.wrapping_add(offset)))).or_default() += 1;
            }
        }
        let mut bias: HashMap<u32, (u64, u64)> = HashMap::new();
        for ((file, b), n) in seen {
            let best = bias.entry(file).or_insert((n, b));
            if (n, std::cmp::Reverse(b)) > (best.0, std::cmp::Reverse(best.1)) {
                *best = (n, b);
            }
        }
        let bias: HashMap<u32, u64> = bias.into_iter().map(|(file, (_, b))| (file, b)).collect();
        let columns: Vec<Option<usize>> = self
            .events
            .iter()
            .map(|e| events.iter().position(|c| c == e || c.strip_suffix(':') == Some(e)))
            .collect();
        // (pid, file) -> (address, function) -> values by column.
        let mut images: BTreeMap<(Option<u64>, u32), ImageRows> = BTreeMap::new();
        // Without any binary of the text here, addresses would be perf's alone: none are
        // placed, and the text is its stacks (as it was read before leaves were placed).
        if bias.is_empty() {
            return;
        }
        let mut starts: HashMap<(u32, u32), u64> = HashMap::new();
        let mut unplaced = 0u64;
        for (&(pid, file, name, address, offset, event), &value) in &self.printed {
            let Some(column) = columns[event as usize] else { continue };
            let bracketed = self.files[file as usize].starts_with('[');
            let at = match (function(file, name), offset) {
                (Some((start, _)), Some(offset)) => {
                    starts.insert((file, name.unwrap_or_default()), start);
                    Some(start.wrapping_add(offset))
                }
                _ if bracketed => address,
                _ => {
                    unplaced += 1;
                    match bias.get(&file) {
                        Some(b) => address.map(|a| a.wrapping_sub(*b)),
                        None => address,
                    }
                }
            };
            // A function no table names starts where perf's offset into it says.
            if let (Some(name), Some(at), Some(offset)) = (name, at, offset) {
                let start = at.wrapping_sub(offset);
                starts.entry((file, name)).and_modify(|s| *s = (*s).min(start)).or_insert(start);
            }
            let row = images
                .entry((pid, file))
                .or_default()
                .entry((at, name))
                .or_insert_with(|| vec![0; events.len()]);
            row[column] = row[column].saturating_add(value);
        }
        if unplaced > 0 {
            findings.detail(
                None,
                format!("perf: {unplaced} sampled address(es) are placed as perf printed them (no function of a binary found here named them)"),
            );
        }
        for ((pid, file), rows) in images {
            let processes = &profile.processes;
            let p = pid
                .and_then(|pid| processes.iter().position(|p| p.pid == pid))
                .or_else(|| processes.iter().position(|p| p.pid == 0))
                .or((!processes.is_empty()).then_some(0));
            let Some(p) = p else { continue };
            let path = &self.files[file as usize];
            let mut image =
                Image { file: Some(profile.files.intern(path)), leaf_samples: true, ..Image::default() };
            let mut symbol_of: HashMap<u32, u32> = HashMap::new();
            for ((at, name), values) in rows {
                let symbol = name.map(|name| {
                    *symbol_of.entry(name).or_insert_with(|| {
                        let size = function(file, Some(name)).map(|(_, size)| size).filter(|&s| s > 0);
                        image.symbols.push(Symbol {
                            name: collapsed
                                .get(&(file, name))
                                .cloned()
                                .unwrap_or_else(|| self.names[name as usize].clone()),
                            offset: starts.get(&(file, name)).copied(),
                            size,
                            file: None,
                        });
                        image.symbols.len() as u32 - 1
                    })
                });
                image.costs.push(Cost {
                    symbol,
                    offset: at,
                    values: values.into_iter().collect(),
                    ..Cost::default()
                });
            }
            let process = &mut profile.processes[p];
            image.id = process.images.len() as u64;
            process.images.push(image);
        }
    }
}

/// A frame line's address, function, offset into it and file, as far as perf printed them:
/// `ADDRESS FUNCTION+0xOFFSET (FILE)`, the function `[unknown]` where perf could not name it.
fn frame(line: &[u8]) -> Frame<'_> {
    let Ok(line) = std::str::from_utf8(line) else { return Frame::default() };
    let line = line.trim();
    let (address, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let (named, file) = match rest.trim_start().rsplit_once(" (") {
        Some((named, file)) => (named.trim(), file.strip_suffix(')').unwrap_or(file)),
        None => (rest.trim(), "[unknown]"),
    };
    let (function, offset) = match named.rsplit_once("+0x") {
        Some((f, o)) => (f, u64::from_str_radix(o, 16).ok()),
        None => (named, None),
    };
    Frame {
        address: u64::from_str_radix(address, 16).ok(),
        function: Some(function).filter(|f| !f.is_empty() && *f != "[unknown]"),
        offset,
        file: if file.is_empty() { "[unknown]" } else { file },
    }
}

/// A leaf frame as perf printed it.
#[derive(Debug, PartialEq, Eq)]
struct Frame<'a> {
    address: Option<u64>,
    function: Option<&'a str>,
    offset: Option<u64>,
    file: &'a str,
}

impl Default for Frame<'_> {
    fn default() -> Self {
        Frame { address: None, function: None, offset: None, file: "[unknown]" }
    }
}

/// The command of a header's `comm pid/tid ` part (`perf` where it has none).
fn command_of(comm_and_ids: &[u8]) -> String {
    let text = String::from_utf8_lossy(comm_and_ids);
    let command = text.trim().rsplit_once(' ').map_or("", |(c, _)| c).trim();
    if command.is_empty() {
        "perf".to_string()
    } else {
        command.to_string()
    }
}

/// The pid of a header's `comm pid/tid ` part; `None` where perf printed the tid alone.
fn pid_of(comm_and_ids: &[u8]) -> Option<u64> {
    let ids = std::str::from_utf8(comm_and_ids).ok()?.trim_end().rsplit(' ').next()?;
    let (pid, _) = ids.split_once('/')?;
    pid.parse().ok()
}

/// The function symbols of the binary perf printed as `file`: a `--symbols` file of the same
/// file name, else the file itself.
fn functions(file: &str, symbol_paths: &[PathBuf]) -> Functions {
    let name = Path::new(file).file_name()?;
    let path = symbol_paths
        .iter()
        .find(|p| p.is_file() && p.file_name() == Some(name))
        .cloned()
        .or_else(|| Some(PathBuf::from(file)).filter(|p| p.is_file()))?;
    let elf = ElfFile::open(&path).ok()?;
    let mut by_name = HashMap::new();
    for symbol in elf.function_symbols() {
        let at = (symbol.address, symbol.size);
        by_name.entry(demangle(symbol.name)).or_insert(at);
        by_name.entry(symbol.name.to_string()).or_insert(at);
    }
    Some(by_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_name_their_function_offset_and_file() {
        let f = |address, function, offset, file| Frame { address: Some(address), function, offset, file };
        assert_eq!(
            frame(b"\t    55d1c0a1b2c3 main+0x75 (/tmp/sort)"),
            f(0x55d1c0a1b2c3, Some("main"), Some(0x75), "/tmp/sort")
        );
        assert_eq!(
            frame(b"  1462a std::vector<int>::push_back(int const&)+0xa (/usr/bin/app)"),
            f(0x1462a, Some("std::vector<int>::push_back(int const&)"), Some(0xa), "/usr/bin/app")
        );
        assert_eq!(
            frame(b"ffffffff822525e7 _raw_spin_lock+0x17 ([kernel.kallsyms])"),
            f(0xffffffff822525e7, Some("_raw_spin_lock"), Some(0x17), "[kernel.kallsyms]")
        );
        assert_eq!(frame(b"7f09dcb5f8a8 [unknown] ([unknown])"), f(0x7f09dcb5f8a8, None, None, "[unknown]"));
        assert_eq!(frame(b"4011e0 main (/tmp/app)"), f(0x4011e0, Some("main"), None, "/tmp/app"));
        assert_eq!(pid_of(b"sortpie 12097/12098 "), Some(12097));
        assert_eq!(pid_of(b"sortpie 12097 "), None);
    }
}
