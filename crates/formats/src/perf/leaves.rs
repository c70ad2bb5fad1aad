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
//! places it. Records whose leaf perf could not name (`[unknown]`) or printed without an
//! offset (`perf script -F` without `symoff`), and files not found here, keep their stacks
//! and get no address; a note (`-v`) says how many.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use cfghub_analysis::demangle::demangle;
use cfghub_analysis::symbolize::elf::ElfFile;
use cfghub_model::error::Findings;
use cfghub_model::ir::{Cost, Image, Profile, Symbol};

/// The samples of one binary in one process, by the address the binary states: (function,
/// values by event name).
type Placed = BTreeMap<u64, (u32, HashMap<String, u64>)>;

/// A binary's function symbols by name as perf names them (demangled) and as stated, the first
/// of each name; `None` where the file cannot be read.
type Functions = Option<HashMap<String, u64>>;

/// The records' leaf frames placed in their binaries, to be added to the profile read from
/// the same text ([`Leaves::add_to`]).
#[derive(Default)]
pub(super) struct Leaves {
    /// (pid, file) -> samples by stated address; records of no pid have pid `None`.
    placed: BTreeMap<(Option<u64>, String), Placed>,
    names: Vec<String>,
    unplaced: u64,
    records: u64,
}

impl Leaves {
    /// The leaf frames of the records of `perf script` text `raw`, placed in the binaries
    /// found (`symbol_paths`: the `--symbols` files).
    pub(super) fn find(raw: &[u8], symbol_paths: &[PathBuf]) -> Leaves {
        let mut leaves = Leaves::default();
        let mut binaries: HashMap<String, Functions> = HashMap::new();
        let mut name_ids: HashMap<String, u32> = HashMap::new();
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
            let Some(Frame { address, function, offset, file }) = leaf.and_then(frame) else {
                leaves.unplaced += 1;
                continue;
            };
            // The kernel's code (and perf's other bracketed maps) has no file here: placed
            // at the address perf printed, as the perf.data reader places it, so that both
            // readers' samples weigh alike.
            let at = if file.starts_with('[') {
                address
            } else {
                let functions =
                    binaries.entry(file.to_string()).or_insert_with(|| functions(file, symbol_paths));
                let Some(start) = functions.as_ref().and_then(|f| f.get(function)) else {
                    leaves.unplaced += 1;
                    continue;
                };
                start.wrapping_add(offset)
            };
            let pid = pid_of(&line[..header.comm_and_ids]);
            let id = *name_ids.entry(function.to_string()).or_insert_with(|| {
                leaves.names.push(function.to_string());
                leaves.names.len() as u32 - 1
            });
            let value = header.period.as_ref().map_or(1, |(p, _)| *p);
            let event = String::from_utf8_lossy(header.event).into_owned();
            let row = leaves
                .placed
                .entry((pid, file.to_string()))
                .or_default()
                .entry(at)
                .or_insert_with(|| (id, HashMap::new()));
            let v = row.1.entry(event).or_default();
            *v = v.saturating_add(value);
        }
        leaves
    }

    /// Adds to each process of `profile` (by pid; records of no pid to the process of pid 0,
    /// else the first) an image per binary its records' leaves are in, with a cost per sampled
    /// address the binary states. `events` are perf's names of the profile's event columns, in
    /// order.
    pub(super) fn add_to(self, profile: &mut Profile, events: &[&str], findings: &mut Findings) {
        let (unplaced, records) = (self.unplaced, self.records);
        if unplaced > 0 && unplaced < records {
            findings.detail(
                None,
                format!("perf: {unplaced} of {records} sample(s) have no address in a binary found here (kernel code, `[unknown]`, or no file at the path perf printed)"),
            );
        }
        for ((pid, file), samples) in self.placed {
            let processes = &profile.processes;
            let p = pid
                .and_then(|pid| processes.iter().position(|p| p.pid == pid))
                .or_else(|| processes.iter().position(|p| p.pid == 0))
                .or((!processes.is_empty()).then_some(0));
            let Some(p) = p else { continue };
            let mut image =
                Image { file: Some(profile.files.intern(&file)), leaf_samples: true, ..Image::default() };
            let mut symbol_of: HashMap<u32, u32> = HashMap::new();
            for (at, (name, by_event)) in samples {
                let symbol = *symbol_of.entry(name).or_insert_with(|| {
                    image
                        .symbols
                        .push(Symbol { name: self.names[name as usize].clone(), ..Symbol::default() });
                    image.symbols.len() as u32 - 1
                });
                let values = events.iter().map(|e| by_event.get(*e).copied().unwrap_or(0)).collect();
                image.costs.push(Cost { symbol: Some(symbol), offset: Some(at), values, ..Cost::default() });
            }
            let process = &mut profile.processes[p];
            image.id = process.images.len() as u64;
            process.images.push(image);
        }
    }
}

/// A frame line's address, function, offset and file: `ADDRESS FUNCTION+0xOFFSET (FILE)`;
/// `None` for `[unknown]` code.
fn frame(line: &[u8]) -> Option<Frame<'_>> {
    let line = std::str::from_utf8(line).ok()?.trim();
    let (address, rest) = line.split_once(char::is_whitespace)?;
    let (named, file) = rest.trim_start().rsplit_once(" (")?;
    let file = file.strip_suffix(')')?;
    let (function, offset) = named.trim_end().rsplit_once("+0x")?;
    if file == "[unknown]" {
        return None;
    }
    Some(Frame {
        address: u64::from_str_radix(address, 16).ok()?,
        function,
        offset: u64::from_str_radix(offset, 16).ok()?,
        file,
    })
}

/// A leaf frame as perf prints it.
#[derive(Debug, PartialEq, Eq)]
struct Frame<'a> {
    address: u64,
    function: &'a str,
    offset: u64,
    file: &'a str,
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
        by_name.entry(demangle(symbol.name)).or_insert(symbol.address);
        by_name.entry(symbol.name.to_string()).or_insert(symbol.address);
    }
    Some(by_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_name_their_function_offset_and_file() {
        let f = |address, function, offset, file| Some(Frame { address, function, offset, file });
        assert_eq!(
            frame(b"\t    55d1c0a1b2c3 main+0x75 (/tmp/sort)"),
            f(0x55d1c0a1b2c3, "main", 0x75, "/tmp/sort")
        );
        assert_eq!(
            frame(b"  1462a std::vector<int>::push_back(int const&)+0xa (/usr/bin/app)"),
            f(0x1462a, "std::vector<int>::push_back(int const&)", 0xa, "/usr/bin/app")
        );
        assert_eq!(
            frame(b"ffffffff822525e7 _raw_spin_lock+0x17 ([kernel.kallsyms])"),
            f(0xffffffff822525e7, "_raw_spin_lock", 0x17, "[kernel.kallsyms]")
        );
        assert_eq!(frame(b"7f09dcb5f8a8 [unknown] ([unknown])"), None);
        assert_eq!(frame(b"4011e0 main (/tmp/app)"), None);
        assert_eq!(pid_of(b"sortpie 12097/12098 "), Some(12097));
        assert_eq!(pid_of(b"sortpie 12097 "), None);
    }
}
