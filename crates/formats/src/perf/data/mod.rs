//! perf.data: the binary file `perf record` writes, read directly (no `perf script`).
//!
//! The file (see [`layout`]) holds the events' attributes (name, sampling period or frequency,
//! `sample_type`), header features (hostname, command line, CPU, build ids) and a stream of
//! records: `SAMPLE`s, and the side-band records that say what the samples' addresses mean
//! (`MMAP`/`MMAP2`: a file mapped at an address; `COMM`: a thread's name; `FORK`/`EXIT`).
//! `perf record -z` packs the records into zstd-compressed `COMPRESSED` records; `perf record
//! -o -` writes the pipe layout, where attributes and features are records too. The records
//! are parsed by the `linux-perf-data` crate (the parser samply uses), after [`layout`] has
//! checked every size against the bytes there are; samples are read by [`sample`].
//!
//! Model (docs/formats/perf-data.md has the table):
//! - each event a column, named as perf names it (`cpu-clock`, `cycles:u`); a sample counts its
//!   period (the sum over samples is what `perf report` shows);
//! - one process per pid; its stacks: every sample's call chain, named as `perf script` names
//!   it and collapsed as the `perf script` reader collapses that text (so the two forms of one
//!   recording give the same stacks): the command name as the root, kernel frames with the
//!   suffix `_[k]`, `[unknown]` kept, frames in no known function named after their file;
//! - its images: every file samples fell in, with the address its byte 0 would be mapped at
//!   (offsets are file offsets), its size and build id; the sampled instructions as costs at
//!   their offsets, with their function and source line;
//! - branch stacks (`perf record -b`, `--call-graph lbr`): taken branches and fall-through
//!   ranges, added up per process as perf2bolt adds them ([`records::add_branches`]);
//! - threads' command names and the header features as header lines.

mod demangle;
pub mod header;
pub mod layout;
mod libiberty;
pub mod names;
mod rbtree;
pub mod records;
pub mod sample;
mod stack_set;
mod stacks;
mod stream;
mod symbol_tree;
mod symtab;
mod unwind;

/// A symbol's name as perf prints it (`scripts/perf-names-vs-cxxfilt.sh` compares it with
/// libiberty's over a library's symbols).
pub use demangle::demangle as perf_name;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::format::{Format, Needs, Weight};
use cfghub_analysis::branch_records::{BranchRecords, CodeAddress};
use cfghub_analysis::machine_code::{BinaryCode, FunctionCode};
use cfghub_model::error::{Findings, Result};
use cfghub_model::ir::{Cost, Event, Image, Process, Profile, Symbol};
use records::{Recording, NO_IMAGE, NO_KERNEL_IMAGE};

/// The perf.data format.
pub static FORMAT: Format = Format {
    name: "perf-data",
    description: "Linux perf.data as `perf record` writes it, file or pipe layout (read only)",
    extensions: &[".perf.data"],
    file_name: Some(matches_file_name),
    sniffer: Some(sniff),
    reader: Some(|input, options, findings| {
        let (bytes, pages) = input.bytes_releasable()?;
        read_releasing(bytes, pages, &Reading::serving(options.needs, options.formats.get()), findings)
    }),
    // Offsets are file offsets: the symbolizer maps them through the ELF file's segments.
    addresses: cfghub_model::ir::AddressKind::FileOffset,
    ..Format::NONE
};

/// What the perf.data reader can be asked beyond what the output needs
/// ([`crate::format::ReadOptions::needs`]).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Files and folders named with `--symbols`, searched (by build id, else by name) before
    /// perf's build-id cache as the images are named: what names an image as it is read also
    /// bounds its branch records' fall-through ranges (by function), so a binary named on
    /// the command line must serve there, not after the reading.
    pub symbol_paths: Vec<PathBuf>,
}

/// How one reading goes: the output's needs as this reader serves them, and its options.
#[derive(Clone, Debug)]
pub struct Reading {
    /// Look up the source line of every sampled instruction in the images' DWARF (the
    /// default). Stacks need only function names, from the symbol tables; a conversion to a
    /// format that holds nothing but stacks turns this off, as reading (and decompressing)
    /// the DWARF of every image is most of the time such a conversion would take.
    pub source_lines: bool,
    /// Count samples rather than add up their periods: each event's column holds how many
    /// samples it took (at each address, on each stack), as perf2bolt (`-nl`) and llvm-profgen
    /// count them, and is named as `perf script` prints the event (`cpu-clock:`), the name
    /// perf2bolt writes.
    pub sample_counts: bool,
    /// Build the images: their functions and the sampled instructions' costs (the default).
    /// A conversion to a format that names frames alone (folded, flame graphs) turns this
    /// off: the model then holds the processes and their stacks alone, and only the call
    /// chains' addresses are named. Building every image of every process (the same
    /// library's functions copied into each process that sampled it) was a sixth of such a
    /// conversion. Nor are the sampled instructions' costs added up. Where no stack is left
    /// (samples whose frames the collapse all drops), the records are read again and the
    /// images built all the same: stack writers make stacks from them.
    pub images: bool,
    /// The reader's own options.
    pub options: Options,
}

impl Reading {
    /// The reading that serves `needs`, with the reader's own `options`.
    pub fn serving(needs: Needs, options: Options) -> Reading {
        Reading {
            source_lines: needs.source_lines,
            sample_counts: needs.weight == Weight::SampleCount,
            images: needs.images,
            options,
        }
    }
}

impl Default for Reading {
    fn default() -> Self {
        Reading::serving(Needs::ALL, Options::default())
    }
}

/// `perf.data`, `perf.data.old`, `x.perf.data`.
fn matches_file_name(base_name: &str) -> bool {
    base_name.starts_with("perf.data")
}

fn sniff(head: &[u8]) -> bool {
    layout::order_of(head).is_some()
}

/// Reads a whole perf.data file (either layout).
pub fn read(bytes: &[u8], findings: &mut Findings) -> Result<Profile> {
    read_with(bytes, &Reading::default(), findings)
}

/// Reads a whole perf.data file (either layout) as `options` say.
pub fn read_with(bytes: &[u8], options: &Reading, findings: &mut Findings) -> Result<Profile> {
    read_releasing(bytes, cfghub_model::mem::PageReleaser::none(), options, findings)
}

/// Reads a whole perf.data file, `pages` handing its pages back to the system as soon as
/// they are read (the model holds what it needs of them).
fn read_releasing(
    bytes: &[u8],
    pages: cfghub_model::mem::PageReleaser<'_>,
    options: &Reading,
    findings: &mut Findings,
) -> Result<Profile> {
    let frame = layout::check(bytes)?;
    // The check read every page; the records are read again from the start.
    pages.release(0..bytes.len());
    let mut found = Findings::default();
    let rec = records::replay_weighing(
        bytes,
        pages,
        &frame,
        options.sample_counts,
        options.images,
        &options.options.symbol_paths,
        &mut found,
    )?;
    let model = to_model(rec, options, &mut found)?;
    match model {
        Some(profile) => {
            findings.extend(found);
            Ok(profile)
        }
        // No stack is left (the collapse dropped every frame): stack writers then make
        // stacks from the images, which a reading for stacks alone leaves out. The records
        // are read again for them (the pages come back from the file).
        None => read_releasing(bytes, pages, &Reading { images: true, ..options.clone() }, findings),
    }
}

/// The offsets of each image that need names beside the stack frames' (which
/// [`names::name_images`] names anyway): with `images`, those of sampled instructions and
/// branch records.
fn wanted_offsets(rec: &Recording, images: bool) -> Vec<Vec<u64>> {
    let mut wanted = vec![Vec::new(); rec.images.len()];
    if !images {
        return wanted;
    }
    for &(_, image, offset) in rec.costs.keys() {
        if let Some(w) = wanted.get_mut(image as usize) {
            w.push(offset);
        }
    }
    for (&pid, totals) in &rec.branches {
        let ends = totals.taken.keys().chain(totals.ranges.keys());
        for &(a, b) in ends {
            for address in [a, b] {
                let (image, offset) = rec.resolve(pid, address);
                if let Some(w) = wanted.get_mut(image as usize) {
                    w.push(offset);
                }
            }
        }
    }
    wanted
}

/// The model of a recording; `None` where it was read for stacks alone (see
/// [`Reading::images`]) and no stack is left.
fn to_model(mut rec: Recording, options: &Reading, findings: &mut Findings) -> Result<Option<Profile>> {
    let rec = &mut rec;
    let names = names::name_images(rec, &wanted_offsets(rec, options.images), options);
    let mut profile = Profile::default();
    profile.meta.creator = rec.creator.clone();
    profile.meta.command = rec.command.clone();
    profile.meta.headers = rec.headers.clone();
    // Events that took no samples (the `dummy` event `perf record -a` adds) are named in a
    // header, not given a column of zeros.
    let any = rec.event_samples.iter().any(|&n| n > 0);
    let mut columns = Vec::with_capacity(rec.events.len());
    for (e, n) in rec.events.iter().zip(&rec.event_samples) {
        if any && *n == 0 {
            profile.meta.headers.push(("event without samples".into(), e.name.clone()));
            columns.push(None);
            continue;
        }
        columns.push(Some(profile.events.len()));
        let how = match (e.period, e.frequency) {
            (Some(p), _) => format!("perf event, one sample every {p}"),
            (_, Some(f)) => format!("perf event, sampled at {f} Hz"),
            _ => "perf event".to_string(),
        };
        let fields = sample_fields(e.sample_type);
        let (event, unit) = if options.sample_counts {
            (
                Event { name: format!("{}:", e.name), description: Some(format!("{how}; samples taken")) },
                "count",
            )
        } else {
            (Event { name: e.name.clone(), description: Some(format!("{how}; samples {fields}")) }, e.unit)
        };
        profile
            .meta
            .headers
            .push((cfghub_model::ir::EVENT_UNIT_KEY.into(), format!("{} {unit}", event.name)));
        profile.events.push(event);
    }
    // The stacks are dropped as soon as the model has them.
    let chains = std::mem::take(&mut rec.stacks);
    stacks::add_stacks(&mut profile, rec, chains, &names, &columns)?;
    if options.images {
        add_images(&mut profile, rec, &names, &columns, findings);
    } else if profile.processes.iter().all(|p| p.stacks.is_empty()) {
        return Ok(None);
    } else {
        add_processes(&mut profile, rec);
    }
    let mut threads: Vec<_> = rec.thread_names.iter().collect();
    threads.sort();
    for ((pid, tid), comm) in threads {
        profile.meta.headers.push(("thread".into(), format!("{pid}/{tid} {}", rec.comms[*comm as usize])));
    }
    let unnamed: Vec<&str> = rec
        .images
        .iter()
        .enumerate()
        .filter(|(at, i)| !i.kernel && names.get(*at).is_some_and(names::ImageNames::without_symbols))
        .map(|(_, i)| i.path.as_str())
        .collect();
    let mut unnamed = unnamed;
    unnamed.sort_unstable();
    unnamed.dedup();
    if !unnamed.is_empty() {
        // perf names them no better (`[unknown]`): a stripped library's symbol table holds
        // its exported functions alone.
        findings.detail(
            None,
            format!(
                "no function of the symbol table of {} covers its sampled addresses: they stay unnamed (its debug symbols, from `perf buildid-cache` or --symbols, name them)",
                unnamed.join(", ")
            ),
        );
    }
    // Where the samples were taken, as labels of every sample: the machine and the command
    // recorded (profiles of a fleet merged keep them apart and can be partitioned by them).
    let mut labels = Vec::new();
    if let Some((_, host)) = rec.headers.iter().find(|(k, _)| k == "hostname") {
        labels.push(cfghub_model::ir::Label::text(HOST_LABEL, host));
    }
    if let Some(command) = &rec.command {
        labels.push(cfghub_model::ir::Label::text(COMMAND_LABEL, command));
    }
    cfghub_analysis::labels::apply(&mut profile, &labels);
    Ok(Some(profile))
}

/// The sample label holding the recording machine's host name.
pub const HOST_LABEL: &str = "host";
/// The sample label holding the command line of `perf record`.
pub const COMMAND_LABEL: &str = "command";

/// The fields of an event's samples (its `sample_type`), as perf names them.
fn sample_fields(sample_type: u64) -> String {
    const NAMES: &[&str] = &[
        "IP",
        "TID",
        "TIME",
        "ADDR",
        "READ",
        "CALLCHAIN",
        "ID",
        "CPU",
        "PERIOD",
        "STREAM_ID",
        "RAW",
        "BRANCH_STACK",
        "REGS_USER",
        "STACK_USER",
        "WEIGHT",
        "DATA_SRC",
        "IDENTIFIER",
        "TRANSACTION",
        "REGS_INTR",
        "PHYS_ADDR",
        "AUX",
        "CGROUP",
        "DATA_PAGE_SIZE",
        "CODE_PAGE_SIZE",
        "WEIGHT_STRUCT",
    ];
    let names: Vec<&str> =
        NAMES.iter().enumerate().filter(|(bit, _)| sample_type & (1 << bit) != 0).map(|(_, n)| *n).collect();
    names.join("|")
}

/// The processes that took samples but have no stack, without their images (see
/// [`Reading::images`]): the model has the processes it has with its images.
fn add_processes(profile: &mut Profile, rec: &Recording) {
    let mut pids: Vec<i32> = rec.threads.iter().map(|t| t.pid).chain(rec.branches.keys().copied()).collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        let pid = pid as u32 as u64;
        if !profile.processes.iter().any(|p| p.pid == pid) {
            profile.processes.push(Process { pid, ..Process::default() });
        }
    }
    profile.processes.sort_by_key(|p| p.pid);
}

/// The images of each process, with the sampled instructions as costs, and the blocks and
/// edges its branch records describe.
fn add_images(
    profile: &mut Profile,
    rec: &Recording,
    names: &names::Names,
    columns: &[Option<usize>],
    findings: &mut Findings,
) {
    // pid -> image -> offset -> values.
    let mut by_pid: BTreeMap<i32, BTreeMap<u32, BTreeMap<u64, &[u64]>>> = BTreeMap::new();
    for ((pid, image, offset), values) in &rec.costs {
        by_pid.entry(*pid).or_default().entry(*image).or_default().insert(*offset, values.as_slice());
    }
    for (&pid, totals) in &rec.branches {
        for &(a, b) in totals.taken.keys().chain(totals.ranges.keys()) {
            for address in [a, b] {
                by_pid.entry(pid).or_default().entry(rec.resolve(pid, address).0).or_default();
            }
        }
    }
    for (pid, images) in by_pid {
        let pid_u = pid as u32 as u64;
        let at = match profile.processes.iter().position(|p| p.pid == pid_u) {
            Some(i) => i,
            None => {
                profile.processes.push(Process { pid: pid_u, ..Process::default() });
                profile.processes.len() - 1
            }
        };
        let mut local = BTreeMap::new();
        for (image, offsets) in images {
            local.insert(image, profile.processes[at].images.len() as u32);
            let model = image_model(profile, rec, names, columns, image, &offsets);
            profile.processes[at].images.push(model);
        }
        if let Some(totals) = rec.branches.get(&pid) {
            add_branches(&mut profile.processes[at], rec, names, pid, totals, &local, findings);
        }
    }
    profile.processes.sort_by_key(|p| p.pid);
}

/// One image of a process: where it was mapped, its build id, the functions named in it and
/// the sampled instructions as costs.
fn image_model(
    profile: &mut Profile,
    rec: &Recording,
    names: &names::Names,
    columns: &[Option<usize>],
    image: u32,
    offsets: &BTreeMap<u64, &[u64]>,
) -> Image {
    let width = profile.events.len();
    let (key, n) = match image {
        NO_IMAGE | NO_KERNEL_IMAGE => (None, None),
        i => (rec.images.get(i as usize), names.get(i as usize)),
    };
    let mut model = Image {
        id: u64::from(image),
        load_addr: key.map_or(0, |k| k.base),
        size: key.map(|_| rec.image_ends[image as usize]),
        file_offset: key.map(|_| 0),
        build_id: n.and_then(|n| n.build_id.clone()),
        routines: None,
        ..Image::default()
    };
    let path = key.map_or("[unknown]", |k| k.path.as_str());
    model.file = Some(profile.files.intern(path));
    if let Some(n) = n {
        model.symbols = n
            .symbols
            .iter()
            .map(|(name, offset, size)| Symbol {
                name: name.clone(),
                offset: Some(*offset),
                size: Some(*size),
                file: None,
            })
            .collect();
    }
    for (&offset, values) in offsets {
        let place = n.and_then(|n| n.at(offset));
        let mut v = cfghub_model::ir::Values::from_elem(0, width);
        for (value, column) in values.iter().zip(columns) {
            if let Some(c) = column {
                v[*c] = *value;
            }
        }
        model.costs.push(Cost {
            symbol: place.and_then(|p| p.function),
            offset: Some(offset),
            file: place.and_then(|p| p.file).map(|f| profile.files.intern(f)),
            line: place.and_then(|p| p.line),
            values: v,
        });
    }
    model
}

/// The blocks and edges of a process's branch records, through the block rebuild; the
/// sampled instructions' costs stay as they were. Where an image's binary has code that can
/// be decoded, a range that no run can take (over a jump or a return) is left out, as
/// perf2bolt leaves out a trace its disassembly of the function does not allow.
fn add_branches(
    process: &mut Process,
    rec: &Recording,
    names: &names::Names,
    pid: i32,
    totals: &records::BranchTotals,
    local: &BTreeMap<u32, u32>,
    findings: &mut Findings,
) {
    let resolve = |address: u64| rec.resolve(pid, address);
    let at = |(image, offset): (u32, u64)| CodeAddress::new(local[&image], offset);
    let mut branches = BranchRecords::new();
    for (&(from, to), &(count, mispredicts)) in &totals.taken {
        branches.add_taken(at(resolve(from)), at(resolve(to)), count, mispredicts);
    }
    let mut code = RangeCheck::new(names);
    let (mut impossible, mut impossible_count) = (0u64, 0u64);
    for (&(start, end), &count) in &totals.ranges {
        let (start, end) = (resolve(start), resolve(end));
        match code.check(start, end) {
            Run::Unknown => branches.add_fall_through(at(start), at(end), count),
            Run::Impossible => {
                impossible += 1;
                impossible_count = impossible_count.saturating_add(count);
            }
            Run::Through(between) => {
                // Cut where the binary's blocks are: a range to each block's last
                // instruction, a fall-through from there into the next block.
                let mut from = start.1;
                for (last, next) in between {
                    branches.add_fall_through(at((start.0, from)), at((start.0, last)), count);
                    branches.add_block_fall_through(at((start.0, last)), at((start.0, next)), count);
                    from = next;
                }
                branches.add_fall_through(at((start.0, from)), at(end), count);
            }
        }
    }
    for (&(from, start, end), &count) in &totals.entered {
        let (from, start, end) = (resolve(from), resolve(start), resolve(end));
        if let Some(call) = code.call_before(from, start, end) {
            branches.add_over_call(at((start.0, call)), at(start), count);
        }
    }
    let costs: Vec<_> = process.images.iter_mut().map(|i| std::mem::take(&mut i.costs)).collect();
    let summary = branches.to_model(process);
    for (image, costs) in process.images.iter_mut().zip(costs) {
        image.costs = costs;
    }
    let (ranges, executions) =
        (summary.invalid_ranges + impossible, summary.invalid_range_count.saturating_add(impossible_count));
    if ranges > 0 {
        findings.warn(
            None,
            format!(
                "process {pid}: {ranges} fall-through range(s) ({executions} executions) run backwards, across images or functions, or over a jump or return of the binary's code, and were left out, as perf2bolt leaves them"
            ),
        );
    }
}

/// Tells, from the code of the images' binaries, whether code can run straight through a
/// range; binaries are read and functions decoded once, when a range first needs them.
struct RangeCheck<'a> {
    names: &'a names::Names,
    /// Per image: its binary's code (when it has code to decode) and its functions'
    /// `(offset, size)`, sorted.
    binaries: BTreeMap<u32, Option<ImageCode>>,
    /// (image, function offset) -> its code.
    functions: BTreeMap<(u32, u64), Option<FunctionCode>>,
}

impl<'a> RangeCheck<'a> {
    fn new(names: &'a names::Names) -> RangeCheck<'a> {
        RangeCheck { names, binaries: BTreeMap::new(), functions: BTreeMap::new() }
    }

    /// What the binary's code says of a run straight from `start` through the instruction
    /// at `end` (image, file offset).
    fn check(&mut self, start: (u32, u64), end: (u32, u64)) -> Run {
        if start.0 != end.0 || start.1 > end.1 {
            return Run::Unknown; // left to the analysis, which counts these too
        }
        let Some((offset, size, function)) = self.function_at(start) else { return Run::Unknown };
        if end.1 - offset >= size {
            return Run::Unknown;
        }
        match function {
            None => Run::Unknown,
            Some(f) => f.fall_throughs(start.1, end.1).map_or(Run::Impossible, Run::Through),
        }
    }

    /// The call a range from `start` through `end`, entered by a branch from `from`, runs on
    /// from as perf2bolt reads it: the branch comes from outside the function, and the range
    /// starts at a block just after a call ([`FunctionCode::call_before`]) and runs through
    /// the function's blocks.
    fn call_before(&mut self, from: (u32, u64), start: (u32, u64), end: (u32, u64)) -> Option<u64> {
        if start.0 != end.0 || start.1 > end.1 {
            return None;
        }
        let (offset, size, function) = self.function_at(start)?;
        let inside = |a: (u32, u64)| a.0 == start.0 && a.1 >= offset && a.1 - offset < size;
        if inside(from) || !inside(end) {
            return None;
        }
        let function = function?;
        let call = function.call_before(start.1)?;
        function.fall_throughs(start.1, end.1)?;
        Some(call)
    }

    /// The function of the image's binary that holds `at`: its `(offset, size)` and its code
    /// (`None` when it cannot be decoded); `None` when the binary has no code or no function
    /// holds the address.
    fn function_at(&mut self, at: (u32, u64)) -> Option<(u64, u64, Option<&FunctionCode>)> {
        let names = self.names;
        let binary = self.binaries.entry(at.0).or_insert_with(|| {
            let image = names.get(at.0 as usize)?;
            let code = BinaryCode::open(image.source.as_deref()?)?;
            let mut functions: Vec<(u64, u64)> = image.symbols.iter().map(|&(_, o, s)| (o, s)).collect();
            functions.sort_unstable();
            Some((code, functions))
        });
        let (binary, functions) = binary.as_ref()?;
        let k = functions.partition_point(|f| f.0 <= at.1);
        let &(offset, size) = &functions[k.checked_sub(1)?];
        if at.1 - offset >= size {
            return None;
        }
        let function = self
            .functions
            .entry((at.0, offset))
            .or_insert_with(|| binary.function_at_file_offset(offset, size));
        Some((offset, size, function.as_ref()))
    }
}

/// An image's binary's code and its functions' `(offset, size)`, sorted.
type ImageCode = (BinaryCode, Vec<(u64, u64)>);

/// What a binary's code says of a range of branch records.
enum Run {
    /// Nothing: no code to decode, or the range is not inside one function.
    Unknown,
    /// No run can take it (over a jump or a return).
    Impossible,
    /// It runs through these blocks of the binary: (the last instruction of each block it
    /// leaves, the start of the next block).
    Through(Vec<(u64, u64)>),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fixtures/bolt/call_in_loop (`run` at file offset 0x1120, `work` at 0x1110; the code of
    /// `analysis::machine_code`'s `CALL_IN_LOOP`), as a recording names it.
    fn call_in_loop() -> names::Names {
        let source =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/bolt/call_in_loop");
        let symbols = vec![("work".to_string(), 0x1110, 6), ("run".to_string(), 0x1120, 0x4d)];
        names::Names::of_files(vec![names::ImageNames {
            symbols,
            source: Some(source),
            ..names::ImageNames::default()
        }])
    }

    #[test]
    fn a_range_entered_from_another_function_just_after_a_call_runs_on_from_it() {
        let names = call_in_loop();
        let mut code = RangeCheck::new(&names);
        // work's return to 0x1145, on to the branch at 0x1157: from the call at 0x1140.
        assert_eq!(code.call_before((0, 0x1115), (0, 0x1145), (0, 0x1157)), Some(0x1140));
        // From another image (a library's code) too.
        assert_eq!(code.call_before((1, 0x1115), (0, 0x1145), (0, 0x115d)), Some(0x1140));
        // Entered from inside the function (the jump at 0x1161): no.
        assert_eq!(code.call_before((0, 0x1161), (0, 0x1145), (0, 0x1157)), None);
        // A range no run can take (over the jump at 0x1161), or out of the function: no.
        assert_eq!(code.call_before((0, 0x1115), (0, 0x1145), (0, 0x1169)), None);
        assert_eq!(code.call_before((0, 0x1115), (0, 0x1145), (0, 0x1170)), None);
        // Not just after a call: no.
        assert_eq!(code.call_before((0, 0x1115), (0, 0x1159), (0, 0x115d)), None);
    }
}
