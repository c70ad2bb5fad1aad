//! Block and edge counts inferred from plain instruction samples (`--infer`).
//!
//! A profile of sampled instruction addresses (perf.data without branch records, `perf
//! script`, pprof, DCPI) says where time went, not which way control went. With the binary
//! at hand this analysis gives each sampled function the counts an instrumented run would
//! have: it decodes the function's machine code into BOLT's basic blocks
//! ([`crate::machine_code`]) and the jumps between them (taken branches, fall-throughs, and
//! for an indirect jump every block of the function nothing else jumps to: a jump table's or a
//! computed goto's targets), weighs each block by its samples per instruction, and finds by
//! a minimum-cost flow ([`flow`]) the counts that conserve flow and stay closest to those
//! weights. A direct call runs as often as its block. The counts then become the model's
//! blocks and edges through the branch-record path ([`crate::branch_records`]), so every
//! writer of control flow gets them as it gets branch records. A process that has branch
//! records keeps them: only its sampled functions no record covers are inferred, and joined
//! to the records' blocks in one rebuild (`add_recorded`).
//!
//! The counts are relative, as samples are: a block's weight is its samples per instruction
//! times [`SCALE`], so an inferred count is an estimate of executions in units of 1/1000 of a
//! sample per instruction. Their ratios (branch probabilities, block frequencies) are what
//! the optimizers read.

pub mod flow;

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::branch_records::{BranchRecords, CodeAddress};
use crate::machine_code::{BinaryCode, Flow, FunctionCode};
use crate::symbolize::{find_image_files, Options as SymbolOptions, Relocation, Symbolizer};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{AddressKind, EdgeKind, NodeRef, Process, Profile, Symbol};
use flow::{Costs, FlowGraph, Jump};

/// A block's weight is its samples per instruction times this.
pub const SCALE: u64 = 1000;

/// What an inference did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Functions given counts.
    pub functions: usize,
    /// Their blocks.
    pub blocks: usize,
    /// Samples (of the event weighed) in those functions.
    pub samples: u64,
    /// Samples in code that could not be decoded (no binary found, another machine, no
    /// function symbol covers them, bytes that are no instruction).
    pub samples_left_out: u64,
    /// Samples in functions branch records cover (counted as the records count them).
    pub samples_recorded: u64,
    /// Processes whose branch records were used as they are (their sampled functions
    /// without blocks inferred and joined to them).
    pub with_branch_records: usize,
}

/// Infers block and edge counts for every sampled function of `profile` whose binary can be
/// found (searched as [`crate::symbolize::symbolize`] searches, with `options`), weighing
/// samples of event `event`. `kind` says what the profile's addresses are. An error when
/// nothing could be inferred; what was left out goes to `findings`.
pub fn infer(
    profile: &mut Profile,
    kind: AddressKind,
    event: usize,
    options: &SymbolOptions,
    findings: &mut Findings,
) -> Result<Report> {
    let mut run = Run {
        kind,
        event,
        options,
        unit: sample_unit(profile, event),
        sole: profile
            .processes
            .iter()
            .map(|p| p.images.iter().filter(|i| !i.costs.is_empty()).count())
            .sum::<usize>()
            == 1,
        report: Report::default(),
        without_binary: Vec::new(),
        mismatched: Vec::new(),
        off_functions: Vec::new(),
    };
    for p in 0..profile.processes.len() {
        // Branch records are used as they are: only the sampled functions they leave without
        // a block are inferred, and joined to them.
        let with_records = !profile.processes[p].edges.is_empty();
        let mut records = BranchRecords::new();
        let mut named: Vec<(usize, Vec<Symbol>)> = Vec::new();
        for i in 0..profile.processes[p].images.len() {
            if !profile.processes[p].images[i].costs.is_empty() {
                named.push((i, run.image(profile, p, i, with_records, &mut records)?));
            }
        }
        if with_records {
            run.report.with_branch_records += 1;
        }
        if records.is_empty() {
            continue;
        }
        let process = &mut profile.processes[p];
        if with_records {
            add_recorded(process, &mut records);
        }
        for (i, symbols) in named {
            add_symbols(&mut process.images[i].symbols, symbols);
        }
        to_model(process, records);
    }
    run.finish(findings)
}

/// One inference under way: its settings, and what it found so far.
struct Run<'a> {
    kind: AddressKind,
    event: usize,
    options: &'a SymbolOptions,
    /// The value of one sample ([`sample_unit`]).
    unit: u64,
    /// Only one image has samples: `--symbols` names its binary whatever its name.
    sole: bool,
    report: Report,
    /// Images with samples whose binary was not found (or has no x86-64 code).
    without_binary: Vec<String>,
    /// Files refused as another build.
    mismatched: Vec<String>,
    /// Per binary, sampled addresses that no function of it covers (a few, for the message).
    off_functions: Vec<(String, Vec<u64>, u64)>,
}

/// Most sampled addresses outside every function a message names per binary.
const ADDRESSES_NAMED: usize = 4;

impl Run<'_> {
    /// Infers the sampled functions of image `i` of process `p` into `records` (with
    /// `recorded`, only those none of the image's blocks lies in: the blocks of branch
    /// records); the functions' symbols (in the image's offsets), for the image to know their
    /// extents.
    fn image(
        &mut self,
        profile: &Profile,
        p: usize,
        i: usize,
        recorded: bool,
        records: &mut BranchRecords,
    ) -> Result<Vec<Symbol>> {
        let image = &profile.processes[p].images[i];
        let name = profile.image_name(image);
        let found = find_image_files(profile, image, self.options, self.sole);
        self.mismatched.extend(found.wrong_build.iter().map(|w| format!("{name}: {w}")));
        let samples = sampled(image, self.event);
        let total: u64 = samples.iter().map(|s| s.1).sum();
        let binary_path = found.binary.clone();
        let code = found.binary.as_deref().and_then(BinaryCode::open);
        let symbolizer = found.binary.is_some().then(|| Symbolizer::with_symbols_only(found)).transpose()?;
        let relocation =
            symbolizer.as_ref().and_then(|s| s.relocation(self.kind, image.load_addr, image.file_offset));
        let (Some(code), Some(symbolizer), Some(relocation)) = (code, symbolizer, relocation) else {
            if total > 0 {
                self.without_binary.push(name);
                self.report.samples_left_out += total;
            }
            return Ok(Vec::new());
        };
        let place = Placement { relocation: &relocation, load_addr: image.load_addr, image: i as u32 };
        // The functions branch records cover, by start.
        let covered: std::collections::BTreeSet<u64> = match recorded {
            true => image
                .blocks
                .iter()
                .filter_map(|b| symbolizer.find_symbol(place.stated(b.offset)?))
                .map(|h| h.address)
                .collect(),
            false => Default::default(),
        };
        // The samples of each function, by its start: (size, name, samples).
        let mut functions: BTreeMap<u64, FunctionSamples> = BTreeMap::new();
        let mut outside = (Vec::new(), 0u64);
        for &(offset, value) in &samples {
            let at = place.stated(offset);
            match at.and_then(|a| symbolizer.find_symbol(a).map(|h| (a, h))) {
                Some((_, hit)) if covered.contains(&hit.address) => self.report.samples_recorded += value,
                Some((at, hit)) => functions
                    .entry(hit.address)
                    .or_insert_with(|| (hit.size, hit.name, Vec::new()))
                    .2
                    .push((at, value)),
                None => {
                    self.report.samples_left_out += value;
                    outside.1 += value;
                    if outside.0.len() < ADDRESSES_NAMED {
                        outside.0.push(at.unwrap_or(offset));
                    }
                }
            }
        }
        if outside.1 > 0 {
            let binary = binary_path.map_or(name, |b| b.display().to_string());
            self.off_functions.push((binary, outside.0, outside.1));
        }
        let mut symbols = Vec::new();
        let mut inferred: Vec<(u64, FunctionCode, Inferred)> = Vec::new();
        // Each function is decoded and solved on its own: in parallel.
        let unit = self.unit;
        let solved: Vec<_> = functions
            .into_iter()
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|(start, (size, name, samples))| {
                let weight: u64 = samples.iter().map(|s| s.1).sum();
                let function = code.function_at_address(start, size).filter(|f| !f.blocks.is_empty());
                let one = function.as_ref().map(|f| infer_function(f, &samples, unit));
                (start, size, name, weight, function, one)
            })
            .collect();
        for (start, size, name, weight, function, one) in solved {
            let (Some(function), Some(one)) =
                (function, one.filter(|o| o.counts.blocks.iter().any(|&c| c > 0)))
            else {
                self.report.samples_left_out += weight;
                continue;
            };
            self.report.functions += 1;
            self.report.blocks += function.blocks.len();
            self.report.samples += weight;
            if let Some(offset) = place.offset(start) {
                symbols.push(Symbol { name, offset: Some(offset), size: Some(size), file: None });
            }
            inferred.push((start, function, one));
        }
        let calls = call_counts(&inferred);
        for ((_, function, one), calls) in inferred.iter().zip(&calls) {
            one.record(function, calls, &place, records);
        }
        Ok(symbols)
    }

    /// The report, with what was left out told in `findings`; an error when nothing was
    /// inferred.
    fn finish(self, findings: &mut Findings) -> Result<Report> {
        let report = self.report;
        if !self.mismatched.is_empty() {
            findings.warn(
                None,
                format!("--infer: {}: another build than the one profiled", self.mismatched.join("; ")),
            );
        }
        // Short forms for one line: the images without a binary (each once), and the binary
        // with the most samples outside its functions, with a few of those addresses.
        let mut missing: Vec<&str> = self.without_binary.iter().map(String::as_str).collect();
        missing.sort_unstable();
        missing.dedup();
        let missing_text = match missing.len() {
            0 => None,
            1 | 2 => Some(missing.join(", ")),
            n => Some(format!("{}, {} and {} more", missing[0], missing[1], n - 2)),
        };
        let mut off: BTreeMap<&str, (Vec<u64>, u64)> = BTreeMap::new();
        for (binary, addresses, samples) in &self.off_functions {
            let entry = off.entry(binary.as_str()).or_default();
            for &a in addresses {
                if !entry.0.contains(&a) {
                    entry.0.push(a);
                }
            }
            entry.1 += samples;
        }
        let off_text = off.iter().max_by_key(|(_, v)| v.1).map(|(binary, (addresses, _))| {
            let binary = binary.rsplit('/').next().unwrap_or(binary);
            let list: Vec<String> = addresses.iter().take(2).map(|a| format!("{a:#x}")).collect();
            let others = match off.len() - 1 {
                0 => String::new(),
                n => format!(" (and outside those of {n} other binaries)"),
            };
            format!("no function of {binary} holds the sampled addresses {}, ...{others}", list.join(", "))
        });
        let details: Vec<String> = off
            .iter()
            .map(|(binary, (addresses, _))| {
                let list: Vec<String> = addresses.iter().map(|a| format!("{a:#x}")).collect();
                format!("--infer: no function of {binary} holds the sampled addresses {}", list.join(", "))
            })
            .collect();
        for d in details {
            findings.detail(None, d);
        }
        if report.functions == 0 && report.with_branch_records == 0 {
            let mut err = Error::input("--infer: no sampled function could be given block counts");
            let mut why = Vec::new();
            if let Some(m) = &missing_text {
                why.push(format!("no binary found for {m}: name it with --symbols (x86-64 ELF code only)"));
            }
            why.extend(off_text);
            if why.is_empty() {
                why.push("the profile has no sampled addresses".to_string());
            }
            err = err.with_hint(why.join("; "));
            return Err(err);
        }
        if report.samples_left_out > 0 {
            let all = report.samples + report.samples_left_out + report.samples_recorded;
            let mut why: Vec<String> = Vec::new();
            if let Some(m) = &missing_text {
                why.push(format!("no binary for {m}"));
            }
            why.extend(off_text);
            let why = if why.is_empty() { String::new() } else { format!(" ({})", why.join("; ")) };
            findings.warn(
                None,
                format!(
                    "--infer: {:.1}% of the samples fall on code that could not be decoded and have no block counts{why}",
                    report.samples_left_out as f64 * 100.0 / all as f64
                ),
            );
        }
        if report.with_branch_records > 0 {
            findings.detail(
                None,
                format!(
                    "--infer: {} process(es) have branch records: their counts are used as they are, and only the sampled functions they leave without blocks are inferred",
                    report.with_branch_records
                ),
            );
        }
        Ok(report)
    }
}

/// A function's size, name and samples (stated address, value).
type FunctionSamples = (u64, String, Vec<(u64, u64)>);

/// The value one sample adds to a cost, so that weights count samples whether the profile
/// counts them or adds up their periods (perf's nanoseconds of `cpu-clock`): the greatest
/// common divisor of the values at sampled addresses where every sample has the same period
/// (the divisor is then the period, whichever addresses were placed), else the median of the
/// values (most addresses hold one sample), as with perf's adaptive periods (`-F` on a
/// hardware event), whose divisor says nothing. The divisor is taken for the period when
/// the median holds at most 16 of it.
pub fn sample_unit(profile: &Profile, event: usize) -> u64 {
    let mut values: Vec<u64> = profile
        .processes
        .iter()
        .flat_map(|p| &p.images)
        .flat_map(|i| i.costs.iter())
        .filter_map(|c| c.values.get(event).copied())
        .filter(|&v| v > 0)
        .collect();
    if values.is_empty() {
        return 1;
    }
    let divisor = values.iter().fold(0u64, |g, &v| gcd(g, v));
    let middle = values.len() / 2;
    let median = *values.select_nth_unstable(middle).1;
    if median / divisor <= 16 {
        divisor
    } else {
        median
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The sampled offsets of an image and their samples of `event`, by offset.
fn sampled(image: &cfghub_model::ir::Image, event: usize) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = image
        .costs
        .iter()
        .filter_map(|c| Some((c.offset?, c.values.get(event).copied().unwrap_or(0))))
        .filter(|s| s.1 > 0)
        .collect();
    out.sort_unstable();
    out
}

/// Where an image's offsets lie in its binary (the addresses the ELF file states).
struct Placement<'a> {
    relocation: &'a Relocation,
    load_addr: u64,
    image: u32,
}

impl Placement<'_> {
    fn stated(&self, offset: u64) -> Option<u64> {
        self.relocation.to_stated(self.load_addr.wrapping_add(offset))
    }

    fn offset(&self, stated: u64) -> Option<u64> {
        Some(self.relocation.from_stated(stated)?.wrapping_sub(self.load_addr))
    }

    fn at(&self, stated: u64) -> Option<CodeAddress> {
        Some(CodeAddress::new(self.image, self.offset(stated)?))
    }
}

/// One function's inference: its flow graph's jumps (each with the instruction that takes
/// it) and the counts found.
struct Inferred {
    /// Per jump of the graph: the branch instruction that takes it (`None` for a
    /// fall-through).
    branches: Vec<Option<u64>>,
    graph: FlowGraph,
    counts: flow::Counts,
}

/// The flow graph of a decoded function weighed by `samples` (stated address, samples,
/// sorted; `unit` the value of one sample), and the counts inferred for it.
fn infer_function(function: &FunctionCode, samples: &[(u64, u64)], unit: u64) -> Inferred {
    let (jumps, branches) = function_jumps(function);
    let graph = FlowGraph { weights: block_weights(function, samples, unit), jumps };
    let mut counts = flow::infer(&graph, &Costs::relative());
    if counts.blocks.iter().all(|&c| c == 0) && graph.weights.iter().any(|&w| w > 0) {
        // Every sampled block was dropped rather than raise the unsampled ones around it
        // (a hot loop whose header no sample fell on): price those as their neighbours.
        counts = flow::infer(&graph, &Costs { unweighted_like_neighbours: true, ..Costs::relative() });
    }
    Inferred { branches, graph, counts }
}

/// How often each direct call of the inferred functions of one binary is taken, by (caller,
/// call address): as often as its block runs, unless the callee's entry count is less than
/// all its calls together, when every call of it is scaled down to fit. Each function keeps
/// the counts its own samples gave; the calls between them then never say that a function was
/// entered more often than it ran. (Pinning a callee's entry to its callers' counts, callers
/// first, measured worse: a cold caller's few samples then decide a hot callee's scale.)
fn call_counts(functions: &[(u64, FunctionCode, Inferred)]) -> Vec<BTreeMap<u64, u64>> {
    let index_of = |start: u64| functions.binary_search_by_key(&start, |f| f.0).ok();
    // (caller, call address, callee, count) of every direct call of an inferred function.
    let mut calls = Vec::new();
    for (f, (_, code, one)) in functions.iter().enumerate() {
        for (k, block) in code.blocks.iter().enumerate() {
            let end = code.blocks.get(k + 1).map_or(u64::MAX, |b| b.start);
            let from = code.instructions.partition_point(|i| i.at < block.start);
            for i in code.instructions[from..].iter().take_while(|i| i.at < end) {
                if let Flow::Call(Some(target)) = i.flow {
                    calls.push((f, i.at, index_of(target), one.counts.blocks[k]));
                }
            }
            if let Some((at, target)) = tail_call(code, k) {
                calls.push((f, at, index_of(target), one.counts.blocks[k]));
            }
        }
    }
    let mut into = vec![0u128; functions.len()];
    for &(_, _, g, count) in &calls {
        if let Some(g) = g {
            into[g] += u128::from(count);
        }
    }
    let mut out = vec![BTreeMap::new(); functions.len()];
    for (f, at, g, count) in calls {
        let count = match g {
            Some(g) if into[g] > 0 => {
                let entry = u128::from(functions[g].2.counts.blocks[0]);
                (u128::from(count) * entry.min(into[g]) / into[g]) as u64
            }
            _ => count,
        };
        out[f].insert(at, count);
    }
    out
}

/// A tail call that closes block `k`: the address of its jump and the code outside the
/// function the jump enters (another function, which branch records, llvm-profgen and Valgrind
/// count as called from there).
fn tail_call(function: &FunctionCode, k: usize) -> Option<(u64, u64)> {
    let block = function.blocks[k];
    let last = function.instructions.binary_search_by_key(&block.last, |i| i.at).ok()?;
    let Flow::Jump(target) = function.instructions[last].flow else { return None };
    let start = function.blocks.first()?.start;
    let end = function.instructions.last()?.end();
    (target < start || target >= end).then_some((block.last, target))
}

/// The block of `function` holding `addr`.
pub(crate) fn block_of(function: &FunctionCode, addr: u64) -> Option<usize> {
    let blocks = &function.blocks;
    let k = blocks.partition_point(|b| b.start <= addr).checked_sub(1)?;
    let end = blocks.get(k + 1).map_or(u64::MAX, |b| b.start);
    (addr < end).then_some(k)
}

/// The instructions of each block of `function`.
pub(crate) fn block_instructions(function: &FunctionCode) -> Vec<u64> {
    let mut instructions = vec![0u64; function.blocks.len()];
    for i in &function.instructions {
        if let Some(k) = block_of(function, i.at) {
            instructions[k] += 1;
        }
    }
    instructions
}

/// What a mispredicted branch costs, in half cycles (about 15 cycles on current x86-64 cores).
const MISPREDICT_HALF_CYCLES: u64 = 30;

/// The estimated half cycles one run of each block of `function` takes. A loop's exit (the
/// block a backward conditional branch falls through to) is entered by a mispredicted branch
/// whenever the trip counts vary: the pipeline refills there, and time samples taken while it
/// does fall on the exit's instructions ([`MISPREDICT_HALF_CYCLES`] more). A backward branch
/// inside a tighter loop (one whose own backward branch comes after it and jumps back to
/// between its target and it) leaves that loop when taken: its fall-through is the tighter
/// loop's body going on, no exit.
fn block_half_cycles(function: &FunctionCode) -> Vec<u64> {
    use crate::machine_code::Flow;
    let backward: Vec<(u64, u64)> = function
        .instructions
        .iter()
        .filter_map(|i| match i.flow {
            Flow::Conditional(t) | Flow::Jump(t) if t <= i.at => Some((i.at, t)),
            _ => None,
        })
        .collect();
    let in_tighter_loop =
        |at: u64, target: u64| backward.iter().any(|&(b, t)| b > at && t > target && t <= at);
    let mut cycles = vec![0u64; function.blocks.len()];
    for i in &function.instructions {
        if let Some(k) = block_of(function, i.at) {
            cycles[k] += u64::from(i.half_cycles);
            if let Flow::Conditional(target) = i.flow {
                let exit = (target <= i.at && !in_tighter_loop(i.at, target))
                    .then(|| block_of(function, i.end()))
                    .flatten();
                if let Some(e) = exit.filter(|&e| e != k && function.blocks[e].start == i.end()) {
                    cycles[e] += MISPREDICT_HALF_CYCLES;
                }
            }
        }
    }
    cycles
}

/// Each block's weight: its samples (stated address, value, sorted; `unit` the value of one
/// sample) per estimated cycle of one run of it ([`crate::machine_code::Instruction::half_cycles`]),
/// times [`SCALE`].
pub(crate) fn block_weights(function: &FunctionCode, samples: &[(u64, u64)], unit: u64) -> Vec<u64> {
    let mut sampled = vec![0u128; function.blocks.len()];
    for &(at, n) in samples {
        if let Some(k) = block_of(function, at) {
            sampled[k] += u128::from(n);
        }
    }
    let unit = u128::from(unit.max(1));
    sampled
        .iter()
        .zip(block_half_cycles(function))
        .map(|(&s, half_cycles)| match half_cycles {
            0 => 0,
            h => (s * 2 * u128::from(SCALE) / unit / u128::from(h)).min(1 << 48) as u64,
        })
        .collect()
}

/// The jumps between the blocks of `function` as its code states them (taken branches inside
/// the function and fall-throughs; an indirect jump to every block nothing else enters), each
/// with the branch instruction that takes it (`None` for a fall-through).
pub(crate) fn function_jumps(function: &FunctionCode) -> (Vec<Jump>, Vec<Option<u64>>) {
    let blocks = &function.blocks;
    let starting_at = |t: u64| block_of(function, t).filter(|&b| blocks[b].start == t);
    let mut jumps: Vec<Jump> = Vec::new();
    let mut branches: Vec<Option<u64>> = Vec::new();
    let mut seen = rustc_hash::FxHashSet::default();
    let mut add =
        |jumps: &mut Vec<Jump>, source: usize, target: usize, fall_through: bool, branch: Option<u64>| {
            let (source, target) = (source as u32, target as u32);
            if seen.insert((source, target)) {
                jumps.push(Jump { source, target, fall_through });
                branches.push(branch);
            }
        };
    let instruction_at = |addr: u64| function.instructions.binary_search_by_key(&addr, |i| i.at).ok();
    let mut indirect = Vec::new();
    for (k, block) in blocks.iter().enumerate() {
        let Some(last) = instruction_at(block.last) else { continue };
        let last_i = function.instructions[last];
        // A conditional branch before the block's closing jump is its other exit.
        if let Some(before) = last.checked_sub(1).map(|b| function.instructions[b]) {
            if before.at >= block.start {
                if let (Flow::Conditional(t), Flow::Jump(_)) = (before.flow, last_i.flow) {
                    if let Some(target) = starting_at(t) {
                        add(&mut jumps, k, target, false, Some(before.at));
                    }
                }
            }
        }
        match last_i.flow {
            Flow::Conditional(t) | Flow::Jump(t) => {
                if let Some(target) = starting_at(t) {
                    add(&mut jumps, k, target, false, Some(last_i.at));
                }
            }
            Flow::Indirect => match function.jump_table(last_i.at) {
                Some(table) => {
                    for &t in table {
                        if let Some(target) = starting_at(t) {
                            add(&mut jumps, k, target, false, Some(last_i.at));
                        }
                    }
                }
                None => indirect.push(k),
            },
            _ => {}
        }
        if block.falls_through && k + 1 < blocks.len() {
            add(&mut jumps, k, k + 1, true, None);
        }
    }
    if !indirect.is_empty() {
        // The blocks nothing else enters: a jump table's (or computed goto's) targets.
        let mut entered = vec![false; blocks.len()];
        entered[0] = true;
        for j in &jumps {
            entered[j.target as usize] = true;
        }
        let targets: Vec<usize> = (0..blocks.len()).filter(|&b| !entered[b]).collect();
        for &k in &indirect {
            let at = blocks[k].last;
            for &t in &targets {
                add(&mut jumps, k, t, false, Some(at));
            }
        }
    }
    (jumps, branches)
}

impl Inferred {
    /// The counts as branch records: each block run from its first through its last
    /// instruction, each jump taken or fallen through, each direct call as `calls` says
    /// ([`call_counts`]; by call address), else as often as its block.
    fn record(
        &self,
        function: &FunctionCode,
        calls: &BTreeMap<u64, u64>,
        place: &Placement,
        records: &mut BranchRecords,
    ) {
        let blocks = &function.blocks;
        let tails: Vec<u64> = (0..blocks.len()).map(|k| tail(function, k)).collect();
        for (k, (block, &count)) in blocks.iter().zip(&self.counts.blocks).enumerate() {
            if count == 0 {
                continue;
            }
            // As branch records would state it: the code runs from the block's start to its
            // first call, the call is taken, the callee returns after it, and so on to the
            // block's tail.
            let from = function.instructions.partition_point(|i| i.at < block.start);
            let mut run_from = block.start;
            for i in function.instructions[from..].iter().take_while(|i| i.at <= tails[k]) {
                let Flow::Call(target) = i.flow else { continue };
                if let (Some(start), Some(call)) = (place.at(run_from), place.at(i.at)) {
                    records.add_fall_through(start, call, count);
                    if let Some(callee) = target.and_then(|t| place.at(t)) {
                        records.add_call(call, callee, calls.get(&i.at).copied().unwrap_or(count));
                    }
                }
                run_from = i.end();
            }
            // A conditional branch before the block's closing jump: the runs that do not take
            // it go on to the jump.
            let pair = self.conditional_before_jump(function, k);
            let end = pair.map_or(tails[k], |(conditional, _, _)| conditional);
            if run_from <= end {
                if let (Some(start), Some(last)) = (place.at(run_from), place.at(end)) {
                    records.add_fall_through(start, last, count);
                }
            }
            if let Some((_, jump, taken)) = pair {
                if let Some(jump) = place.at(jump).filter(|_| count > taken) {
                    records.add_fall_through(jump, jump, count - taken);
                }
            }
            // A tail call: the jump out of the function enters the callee, as a call would.
            if let Some((at, target)) = tail_call(function, k) {
                if let (Some(from), Some(to)) = (place.at(at), place.at(target)) {
                    records.add_taken(from, to, calls.get(&at).copied().unwrap_or(count), 0);
                }
            }
        }
        for ((jump, branch), &count) in self.graph.jumps.iter().zip(&self.branches).zip(&self.counts.jumps) {
            if count == 0 {
                continue;
            }
            let target = blocks[jump.target as usize];
            let Some(to) = place.at(target.start) else { continue };
            match branch {
                Some(b) => {
                    if let Some(from) = place.at(*b) {
                        records.add_taken(from, to, count, 0);
                    }
                }
                None => {
                    if let Some(from) = place.at(tails[jump.source as usize]) {
                        records.add_block_fall_through(from, to, count);
                    }
                }
            }
        }
    }
}

impl Inferred {
    /// For a block that ends in a conditional branch and a jump (`jcc A; jmp B`): the
    /// conditional's address, the jump's, and how often the conditional was taken.
    fn conditional_before_jump(&self, function: &FunctionCode, k: usize) -> Option<(u64, u64, u64)> {
        let block = function.blocks[k];
        let last = function.instructions.binary_search_by_key(&block.last, |i| i.at).ok()?;
        let before = function.instructions[last.checked_sub(1)?];
        if before.at < block.start
            || !matches!(before.flow, Flow::Conditional(_))
            || !matches!(function.instructions[last].flow, Flow::Jump(_))
        {
            return None;
        }
        let taken: u64 = self
            .branches
            .iter()
            .zip(&self.counts.jumps)
            .filter(|(b, _)| **b == Some(before.at))
            .map(|(_, &c)| c)
            .sum();
        Some((before.at, block.last, taken))
    }
}

/// The instruction a run of block `k` ends on: its last instruction, or, for a block that runs
/// on into the next without a branch, the last no-operation before the next block (padding
/// runs too, and a fall-through leaves the block from there).
fn tail(function: &FunctionCode, k: usize) -> u64 {
    let block = function.blocks[k];
    let Some(next) = function.blocks.get(k + 1) else { return block.last };
    let last = function.instructions.binary_search_by_key(&block.last, |i| i.at).ok();
    let branch =
        last.is_some_and(|i| matches!(function.instructions[i].flow, Flow::Conditional(_) | Flow::Jump(_)));
    if branch {
        return block.last;
    }
    let before_next = function.instructions.partition_point(|i| i.at < next.start);
    before_next.checked_sub(1).map_or(block.last, |i| function.instructions[i].at.max(block.last))
}

/// Gives the image the extents of the functions inferred: a symbol the profile has at the
/// same offset gets the size it lacks; others are added.
fn add_symbols(symbols: &mut Vec<Symbol>, found: Vec<Symbol>) {
    for s in found {
        match symbols.iter_mut().find(|k| k.offset == s.offset) {
            Some(k) => {
                if k.size.is_none() {
                    k.size = s.size;
                }
            }
            None => symbols.push(s),
        }
    }
}

/// The records' blocks and edges in the process; the sampled costs stay as they were.
/// The blocks and edges of `process` (made from branch records) as the records that make
/// them again: each block a range run as often as it ran, each edge between blocks the
/// transfer it is (a call, a fall-through, a call's way over, a taken branch), so that
/// inferred records join them in one rebuild ([`BranchRecords::to_model`] replaces a
/// process's blocks).
fn add_recorded(process: &Process, records: &mut BranchRecords) {
    let executions = crate::executions::block_totals(process);
    for (r, block) in process.blocks() {
        let count = executions.get(r).copied().unwrap_or(0).max(block.count.unwrap_or(0));
        if count > 0 {
            let last = block.offset + u64::from(block.last_instr_offset);
            records.add_fall_through(
                CodeAddress::new(r.image, block.offset),
                CodeAddress::new(r.image, last),
                count,
            );
        }
    }
    for edge in &process.edges {
        let (NodeRef::Block(from), NodeRef::Block(to)) = (edge.source, edge.target) else { continue };
        let count = edge.total();
        if count == 0 {
            continue;
        }
        let (source, target) = (process.block(from), process.block(to));
        let last = CodeAddress::new(from.image, source.offset + u64::from(source.last_instr_offset));
        let start = CodeAddress::new(to.image, target.offset);
        match edge.kind {
            kind if kind.is_call() => records.add_call(last, start, count),
            EdgeKind::FallThrough => records.add_block_fall_through(last, start, count),
            EdgeKind::CallBypass => records.add_over_call(last, start, count),
            _ => records.add_taken(last, start, count, edge.mispredicts()),
        }
    }
}

fn to_model(process: &mut Process, records: BranchRecords) {
    let costs: Vec<_> = process.images.iter_mut().map(|i| std::mem::take(&mut i.costs)).collect();
    records.to_model(process);
    for (image, costs) in process.images.iter_mut().zip(costs) {
        image.costs = costs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine_code::tests::{switch_table, SWITCH};

    #[test]
    fn a_switch_jumps_to_its_cases_and_its_counts_follow_their_samples() {
        let code = FunctionCode::decode_x86_64_with_data(SWITCH, 0, &switch_table);
        let (jumps, branches) = function_jumps(&code);
        let edges: Vec<(u32, u32, Option<u64>)> =
            jumps.iter().zip(&branches).map(|(j, &b)| (j.source, j.target, b)).collect();
        // Blocks 0 (cmp; ja), 1 (lea .. jmp *), 2..4 the cases, 5 the default.
        assert_eq!(
            edges,
            vec![
                (0, 5, Some(0x04)),
                (0, 1, None),
                (1, 2, Some(0x14)),
                (1, 3, Some(0x14)),
                (1, 4, Some(0x14))
            ]
        );
        // A time profile of 100 runs, 60, 30 and 10 of them in cases 0, 1 and 2: each block's
        // samples its runs times its cost (the dispatch's indirect jump is dear), plus noise.
        let samples = [(0x00, 41), (0x0d, 70), (0x14, 88), (0x16, 23), (0x1c, 13), (0x22, 4)];
        let inferred = infer_function(&code, &samples, 1);
        let c = &inferred.counts;
        assert_eq!(c.blocks[5], 0, "{c:?}");
        assert!(c.blocks[2] > c.blocks[3] && c.blocks[3] > c.blocks[4] && c.blocks[4] > 0, "{c:?}");
        assert_eq!(c.blocks[1], c.blocks[2] + c.blocks[3] + c.blocks[4]);
        assert_eq!(c.blocks[0], c.blocks[1] + c.blocks[5]);
        let share = |k: usize| c.blocks[k] as f64 / c.blocks[1] as f64;
        assert!((share(2) - 0.6).abs() < 0.1 && (share(4) - 0.1).abs() < 0.1, "{c:?}");
    }

    /// `f`: `test %edi,%edi; je 1f; jmp g; 1: ret`, and `g`: `ret`. The jump to `g` is a tail
    /// call: `g` is entered as often as the block with the jump runs, as Valgrind and
    /// llvm-profgen count it (before, `g` had no calls into it at all, its sample profile's
    /// head 0, and clang took it for cold).
    #[test]
    fn a_jump_into_another_function_is_a_call_of_it() {
        const F: &[u8] = &[0x85, 0xff, 0x74, 0x05, 0xe9, 0xf7, 0x0e, 0x00, 0x00, 0xc3];
        let f = FunctionCode::decode_x86_64(F, 0x100);
        let g = FunctionCode::decode_x86_64(&[0xc3], 0x1000);
        assert_eq!(f.blocks.len(), 3);
        assert_eq!(
            (tail_call(&f, 0), tail_call(&f, 1), tail_call(&f, 2)),
            (None, Some((0x104, 0x1000)), None)
        );
        let one = infer_function(&f, &[(0x100, 50), (0x102, 50), (0x104, 40), (0x109, 10)], 1);
        let taken = one.counts.blocks[1];
        assert!(taken > 0, "{:?}", one.counts);
        let entered = infer_function(&g, &[(0x1000, 50)], 1);
        let calls = call_counts(&[(0x100, f, one), (0x1000, g, entered)]);
        assert_eq!(calls[0].get(&0x104), Some(&taken));
    }

    /// `0: mov (%rdi),%eax; 2: cmp %esi,%eax; 4: jle 0; 6: dec %esi; 8: jg 2; a: ret`: the
    /// loop from 2 to 8 is left by `jle 0`, a backward branch whose fall-through (6) is the
    /// loop's body, no exit (as the inner loops of `sort`'s insertion sort, unrolled, are
    /// left: charged a mispredicted branch, their bodies got a third of their runs); `jg 2`
    /// falls through to the exit (a).
    #[test]
    fn a_backward_branch_out_of_a_tighter_loop_falls_through_to_no_exit() {
        const F: &[u8] = &[0x8b, 0x07, 0x39, 0xf0, 0x7e, 0xfa, 0xff, 0xce, 0x7f, 0xf8, 0xc3];
        let f = FunctionCode::decode_x86_64(F, 0);
        let starts: Vec<u64> = f.blocks.iter().map(|b| b.start).collect();
        assert_eq!(starts, vec![0, 2, 6, 0xa]);
        let cycles = block_half_cycles(&f);
        assert!(cycles[2] < MISPREDICT_HALF_CYCLES, "{cycles:?}");
        assert!(cycles[3] > MISPREDICT_HALF_CYCLES, "{cycles:?}");
    }

    #[test]
    fn one_sample_is_the_common_period_or_else_the_most_common_value_at_an_address() {
        let mut profile = Profile::default();
        let mut image = cfghub_model::ir::Image::default();
        for (offset, value) in [(0, 50_000), (4, 50_000), (8, 100_000), (12, 49_000)] {
            image.costs.push(cfghub_model::ir::Cost {
                offset: Some(offset),
                values: cfghub_model::ir::Values::from_slice(&[value]),
                ..Default::default()
            });
        }
        profile.processes.push(Process { images: vec![image], ..Process::default() });
        assert_eq!(sample_unit(&profile, 0), 50_000);
        assert_eq!(sample_unit(&Profile::default(), 0), 1);
        // One period throughout: the period, though no address holds a single sample (a
        // hot loop's few addresses, the cold ones left out).
        let mut image = cfghub_model::ir::Image::default();
        for (offset, samples) in [(0, 3), (4, 5), (8, 7), (12, 2)] {
            image.costs.push(cfghub_model::ir::Cost {
                offset: Some(offset),
                values: cfghub_model::ir::Values::from_slice(&[samples * 50_000]),
                ..Default::default()
            });
        }
        profile.processes[0].images = vec![image];
        assert_eq!(sample_unit(&profile, 0), 50_000);
    }
}

#[cfg(test)]
mod with_branch_records {
    use super::*;
    use crate::symbolize::elf::ElfFile;
    use cfghub_model::ir::{Cost, Image, Values};

    /// The fixture binary `burn` (x86-64, gcc -O1), and its functions `sum_loop` and
    /// `hash_loop`: (start, size).
    fn burn() -> (String, [(u64, u64); 2]) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/firefox/burn").to_string();
        let elf = ElfFile::open(std::path::Path::new(&path)).unwrap();
        let symbols = elf.function_symbols();
        let find = |name: &str| symbols.iter().find(|s| s.name == name).map(|s| (s.address, s.size)).unwrap();
        (path, [find("sum_loop"), find("hash_loop")])
    }

    /// Samples spread over a function: eight addresses, ten each.
    fn sample(image: &mut Image, (start, size): (u64, u64)) {
        for j in 0..8 {
            image.costs.push(Cost {
                offset: Some(start + size * j / 8),
                values: Values::from_slice(&[10]),
                ..Cost::default()
            });
        }
    }

    /// The blocks of `process` inside `range`: (offset, executions), and the traversals of
    /// the edges between them.
    fn counts_in(process: &Process, (start, size): (u64, u64)) -> (Vec<(u64, u64)>, u64) {
        let executions = crate::executions::block_totals(process);
        let inside = |offset: u64| offset >= start && offset < start + size;
        let blocks = process
            .blocks()
            .filter(|(_, b)| inside(b.offset))
            .map(|(r, b)| (b.offset, executions.get(r).copied().unwrap_or(0)))
            .collect();
        let edges = process
            .edges
            .iter()
            .filter_map(|e| match (e.source, e.target) {
                (NodeRef::Block(a), NodeRef::Block(b))
                    if inside(process.block(a).offset) && inside(process.block(b).offset) =>
                {
                    Some(e.total())
                }
                _ => None,
            })
            .sum();
        (blocks, edges)
    }

    /// A process whose branch records cover `sum_loop` (here: counts inferred once, which
    /// reach the model as records do) and whose samples also fall in `hash_loop`, which no
    /// record covers: `hash_loop` is inferred, `sum_loop` keeps the counts it had.
    #[test]
    fn inference_fills_the_functions_branch_records_leave_without_blocks() {
        let (path, [sum_loop, hash_loop]) = burn();
        let mut profile = Profile::default();
        let file = profile.files.intern(&path);
        let mut image = Image { file: Some(file), ..Image::default() };
        sample(&mut image, sum_loop);
        profile.processes.push(Process { images: vec![image], ..Process::default() });
        let options = SymbolOptions::default();
        let mut findings = Findings::default();
        infer(&mut profile, AddressKind::Stated, 0, &options, &mut findings).unwrap();
        let recorded = counts_in(&profile.processes[0], sum_loop);
        assert!(!recorded.0.is_empty() && recorded.1 > 0, "{recorded:?}");
        assert!(counts_in(&profile.processes[0], hash_loop).0.is_empty());

        sample(&mut profile.processes[0].images[0], hash_loop);
        let report = infer(&mut profile, AddressKind::Stated, 0, &options, &mut findings).unwrap();
        assert_eq!((report.with_branch_records, report.functions), (1, 1), "{report:?}");
        assert_eq!((report.samples, report.samples_recorded), (80, 80), "{report:?}");
        let process = &profile.processes[0];
        let (filled, filled_edges) = counts_in(process, hash_loop);
        assert!(filled.iter().any(|&(_, n)| n > 0) && filled_edges > 0, "{filled:?}");
        // The records' blocks and counts as they were.
        assert_eq!(counts_in(process, sum_loop), recorded);
    }
}
