//! Aggregated branch records: taken branches and fall-through ranges, turned into blocks and
//! edges.
//!
//! Hardware branch records (Intel LBR, AMD BRS, Arm BRBE: `perf record -b`, `perf script -F
//! brstack`) and the profiles made from them (BOLT's `.fdata` and its pre-aggregated form) say
//! two things about a run, both by code address:
//! - **taken branches** `FROM -> TO`: the branch instruction at `FROM` (a jump, a call, a
//!   return) went to `TO`, `count` times, of which `mispredicts` were mispredicted;
//! - **fall-through ranges** `START ..= END`: code ran straight from the instruction at
//!   `START` through the instruction at `END`, with no taken branch between, `count` times.
//!   perf's traces run from one branch record's target to the next record's source (BOLT's
//!   pre-aggregated `F START END COUNT`);
//! - **fall-throughs between blocks** `FROM -> TO`: the block whose last instruction is at
//!   `FROM` ran on into the block that starts at `TO`, `count` times (`.fdata` writes them
//!   so). Said of two instructions, it is the range `FROM ..= TO`; it says more: a block ends
//!   at `FROM` and one starts at `TO`, where a range leaves the blocks to the branches.
//!
//! [`BranchRecords`] gathers them ([`BranchRecords::aggregate`] adds up repeats) and
//! [`BranchRecords::to_model`] turns them into the model's basic blocks and edges through the
//! block rebuild ([`crate::blocks::rebuild`]) that Callgrind profiles use:
//!
//! 1. Every address a record names is a *point*. Its executions are the larger of the flow
//!    that reaches it (branches taken to it, ranges that run into it from below) and the flow
//!    that leaves it (branches taken from it, ranges that run on from it). For perf's traces
//!    both sides agree; for `.fdata`, where a block's first instruction is reached by branches
//!    and fall-throughs and its last one left by them, each side sees half of the story and
//!    the larger is the whole.
//! 2. Points become the executed instructions of the rebuild (one row each, in the function
//!    whose symbol covers it; a point no symbol covers gets a placeholder function named by its
//!    address, `0x401190`, which `--symbols` renames), and taken branches its transfers: a
//!    branch to a function's first address from another function is a call, one into another
//!    function elsewhere a return, one inside a function a conditional branch when code also
//!    ran on from its source (a range runs through or from it), else an unconditional branch,
//!    or an indirect one when it has several targets.
//! 3. The rebuild cuts blocks at branch targets, after branch sources and where the executions
//!    change, links conditionals to their fall-through and blocks that end without a branch to
//!    the next one, and makes routines of the functions.
//!
//! What the records cannot say: instruction boundaries inside a range. A block's instructions
//! are the points it holds (its first and last instruction, and any other address a record
//! names), and its last instruction is taken to end where the next point starts when that is
//! at most 15 bytes on (the longest x86 instruction), else after one byte. Mispredictions are
//! kept on the edges of the taken branches ([`cfghub_model::ir::Edge::mispredicts`]).
//!
//! Ranges whose start lies above their end, or whose ends lie in different images or
//! functions (perf2bolt counts those as invalid traces too), are left out and counted in
//! [`Summary`].

use std::collections::HashMap;

use crate::blocks::{self, Transfer};
use crate::repeats::add_up;
use cfghub_model::ir::{BlockRef, CostTable, EdgeDetails, EdgeKind, Image, NodeRef, Process, Symbol};

/// A code address: the image (index into [`Process::images`]) and the offset from its load
/// address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeAddress {
    /// Index into [`Process::images`].
    pub image: u32,
    /// Bytes from the image's load address.
    pub offset: u64,
}

impl CodeAddress {
    /// The address `offset` bytes from the load address of image `image`.
    pub fn new(image: u32, offset: u64) -> CodeAddress {
        CodeAddress { image, offset }
    }
}

/// A branch taken from the instruction at `from` to `to`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TakenBranch {
    /// The branch instruction (a jump, a call, a return).
    pub from: CodeAddress,
    /// Where the branch went.
    pub to: CodeAddress,
    /// Times the branch was taken from `from` to `to`.
    pub count: u64,
    /// Of `count`, the times the branch was mispredicted (0 when the source does not say).
    pub mispredicts: u64,
}

/// Code that ran straight from the instruction at `start` through the one at `end`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FallThrough {
    /// The first instruction that ran (the lists of [`BranchRecords`] other than ranges say what
    /// `start` and `end` are there).
    pub start: CodeAddress,
    /// The last instruction that ran; a range that ends below its start is invalid and left out.
    pub end: CodeAddress,
    /// Times the code ran from `start` through `end`.
    pub count: u64,
}

/// Taken branches and fall-through ranges of one process, as branch records state them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BranchRecords {
    /// Taken branches, in the order added (or by place, once aggregated).
    pub taken: Vec<TakenBranch>,
    /// Fall-through ranges: code that ran straight from `start` through `end`.
    pub fall_throughs: Vec<FallThrough>,
    /// Fall-throughs between blocks: `start` is the last instruction of a block, `end` the
    /// first of the next.
    pub block_fall_throughs: Vec<FallThrough>,
    /// Runs over a call as perf2bolt counts them: `start` is the call, `end` the instruction
    /// after it (see [`crate::machine_code::FunctionCode::call_before`]). They say
    /// nothing of the flow (the call's branch and the callee's return do); they are kept on
    /// the call's bypass edge ([`cfghub_model::ir::RecordedRuns::over_call`]).
    pub over_calls: Vec<FallThrough>,
    /// Sources of taken branches known to be call instructions (from the binary's code): a
    /// call of a function's own entry (recursion) is then a call, not a branch back to the
    /// entry.
    pub calls: Vec<CodeAddress>,
}

/// What [`BranchRecords::to_model`] left out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Fall-through ranges that run backwards, or across images or functions.
    pub invalid_ranges: u64,
    /// Executions those ranges stated.
    pub invalid_range_count: u64,
}

impl BranchRecords {
    /// Records of nothing yet.
    pub fn new() -> BranchRecords {
        BranchRecords::default()
    }

    /// Adds a taken branch (repeats add up in [`BranchRecords::aggregate`]).
    pub fn add_taken(&mut self, from: CodeAddress, to: CodeAddress, count: u64, mispredicts: u64) {
        self.taken.push(TakenBranch { from, to, count, mispredicts });
    }

    /// Adds a call from the call instruction at `from` to the function entry `to`, `count`
    /// times.
    pub fn add_call(&mut self, from: CodeAddress, to: CodeAddress, count: u64) {
        self.add_taken(from, to, count, 0);
        self.calls.push(from);
    }

    /// Adds a fall-through range (repeats add up in [`BranchRecords::aggregate`]).
    pub fn add_fall_through(&mut self, start: CodeAddress, end: CodeAddress, count: u64) {
        self.fall_throughs.push(FallThrough { start, end, count });
    }

    /// Adds a fall-through from the block whose last instruction is at `from` into the block
    /// that starts at `to` (repeats add up in [`BranchRecords::aggregate`]).
    pub fn add_block_fall_through(&mut self, from: CodeAddress, to: CodeAddress, count: u64) {
        self.block_fall_throughs.push(FallThrough { start: from, end: to, count });
    }

    /// Adds a run from the call at `call` on at the instruction after it, `landing`, as
    /// perf2bolt counts a trace that starts there (repeats add up in
    /// [`BranchRecords::aggregate`]).
    pub fn add_over_call(&mut self, call: CodeAddress, landing: CodeAddress, count: u64) {
        self.over_calls.push(FallThrough { start: call, end: landing, count });
    }

    /// Adds up records of the same branch or range (counts saturate), drops those counted
    /// zero times, and sorts both lists by address.
    pub fn aggregate(&mut self) {
        self.taken.retain(|b| b.count > 0);
        add_up(
            &mut self.taken,
            |b| (b.from, b.to),
            |kept, b| {
                kept.count = kept.count.saturating_add(b.count);
                kept.mispredicts = kept.mispredicts.saturating_add(b.mispredicts);
            },
        );
        self.calls.sort_unstable();
        self.calls.dedup();
        for list in [&mut self.fall_throughs, &mut self.block_fall_throughs, &mut self.over_calls] {
            list.retain(|f| f.count > 0);
            add_up(list, |f| (f.start, f.end), |kept, f| kept.count = kept.count.saturating_add(f.count));
        }
    }

    /// Whether there is nothing to say.
    pub fn is_empty(&self) -> bool {
        self.taken.is_empty() && self.fall_throughs.is_empty() && self.block_fall_throughs.is_empty()
    }

    /// Fills `process` with the blocks, edges and routines the records describe (see the
    /// module documentation). `process.images` must hold every image a [`CodeAddress`] names,
    /// with the symbols known for it (`offset` and `size` set where known); images' blocks,
    /// source lines, routines and costs are replaced, and the process's edges too. Symbols keep
    /// the ranges they were given; points no symbol covers get placeholder symbols.
    pub fn to_model(mut self, process: &mut Process) -> Summary {
        self.aggregate();
        let nimages = process.images.len() as u32;
        let mut summary = Summary::default();
        self.taken.retain(|b| b.from.image < nimages && b.to.image < nimages);
        let covers: Vec<Coverage> = process.images.iter().map(Coverage::new).collect();
        for list in [&mut self.fall_throughs, &mut self.block_fall_throughs] {
            list.retain(|f| {
                let valid = f.start.image == f.end.image
                    && f.start.image < nimages
                    && f.start.offset <= f.end.offset
                    && covers[f.start.image as usize].symbol_at(f.start.offset)
                        == covers[f.start.image as usize].symbol_at(f.end.offset);
                if !valid {
                    summary.invalid_ranges += 1;
                    summary.invalid_range_count = summary.invalid_range_count.saturating_add(f.count);
                }
                valid
            });
        }
        let mut images: Vec<ImagePoints> = (0..nimages).map(|_| ImagePoints::default()).collect();
        for b in &self.taken {
            images[b.from.image as usize].addrs.push(b.from.offset);
            images[b.to.image as usize].addrs.push(b.to.offset);
        }
        for f in self.fall_throughs.iter().chain(&self.block_fall_throughs) {
            let points = &mut images[f.start.image as usize].addrs;
            points.push(f.start.offset);
            points.push(f.end.offset);
        }
        for points in &mut images {
            points.addrs.sort_unstable();
            points.addrs.dedup();
            points.flow = vec![Flow::default(); points.addrs.len()];
        }
        for b in &self.taken {
            images[b.from.image as usize].at(b.from.offset).taken_out += b.count;
            images[b.to.image as usize].at(b.to.offset).taken_in += b.count;
        }
        for f in &self.fall_throughs {
            images[f.start.image as usize].at(f.start.offset).lead = true;
            images[f.end.image as usize].at(f.end.offset).end = true;
        }
        for f in &self.block_fall_throughs {
            images[f.start.image as usize].at(f.start.offset).end = true;
            images[f.end.image as usize].at(f.end.offset).lead = true;
        }
        for points in &mut images {
            points.diff = vec![(0i128, 0i128); points.addrs.len() + 1];
        }
        // A fall-through between blocks runs from one instruction into the next, as a range.
        for f in self.fall_throughs.iter().chain(&self.block_fall_throughs) {
            let points = &mut images[f.start.image as usize];
            let (s, e) = (points.index(f.start.offset), points.index(f.end.offset));
            let c = i128::from(f.count);
            // Runs into every point after its start, and on from every point before its end.
            points.diff[s + 1].0 += c;
            points.diff[e + 1].0 -= c;
            points.diff[s].1 += c;
            points.diff[e].1 -= c;
        }
        for (points, cover) in images.iter_mut().zip(&covers) {
            points.accumulate();
            points.equalize(cover);
        }
        // Symbols as given: the rebuild sets them from what ran, which is narrower.
        let given: Vec<Vec<(Option<u64>, Option<u64>)>> =
            process.images.iter().map(|i| i.symbols.iter().map(|s| (s.offset, s.size)).collect()).collect();
        let mut symbol_of: Vec<Vec<u32>> = Vec::with_capacity(images.len());
        for ((image, points), cover) in process.images.iter_mut().zip(&images).zip(&covers) {
            symbol_of.push(place_points(image, points, cover));
        }
        let mut transfers = transfers(&self.taken, &self.calls, &images, &symbol_of, &process.images);
        block_ends(&mut transfers, &self.block_fall_throughs, &self.taken, &images, &symbol_of);
        let owners: Vec<Vec<u32>> =
            process.images.iter().map(|i| (0..i.symbols.len() as u32).collect()).collect();
        process.edges.clear();
        blocks::rebuild(process, transfers, &[], 0, Some(0), &owners, false);
        for (image, given) in process.images.iter_mut().zip(given) {
            image.costs = CostTable::new();
            for (sym, (offset, size)) in image.symbols.iter_mut().zip(given) {
                if offset.is_some() {
                    (sym.offset, sym.size) = (offset, size);
                }
            }
        }
        attach_mispredicts(process, &self.taken);
        attach_over_calls(process, &self.over_calls);
        attach_stated(process, &images);
        summary
    }
}

/// Puts on each fall-through edge the traversals the records do not state: its count less
/// the flow that runs on from the source block's last instruction (ranges and fall-throughs
/// between blocks alike). The rebuild counts the source block's executions that did not
/// branch, which a branch stack's first and last runs add to unseen.
fn attach_stated(process: &mut Process, images: &[ImagePoints]) {
    for e in &mut process.edges {
        let (EdgeKind::FallThrough, NodeRef::Block(s)) = (e.kind, e.source) else { continue };
        let last = process.images[s.image as usize].blocks[s.block as usize].last_instr();
        let points = &images[s.image as usize];
        let Ok(k) = points.addrs.binary_search(&last) else { continue };
        let unstated = e.total().saturating_sub(points.flow[k].seq_out);
        if unstated > 0 {
            e.details.get_or_insert_with(Box::default).runs_mut().unstated = unstated;
        }
    }
}

/// Flow through one point.
#[derive(Clone, Copy, Debug, Default)]
struct Flow {
    taken_in: u64,
    taken_out: u64,
    /// Ranges that run into the point from below, and on from it.
    seq_in: u64,
    seq_out: u64,
    /// Code is entered here (a range starts, a fall-through between blocks arrives), or left
    /// from here (a range ends, a fall-through between blocks leaves).
    lead: bool,
    end: bool,
    /// Executions, once known ([`ImagePoints::equalize`]).
    executions: u64,
}

impl Flow {
    fn executions(&self) -> u64 {
        let reached = self.taken_in.saturating_add(self.seq_in);
        let left = self.taken_out.saturating_add(self.seq_out);
        reached.max(left)
    }
}

/// An image's points in address order with their flow.
#[derive(Default)]
struct ImagePoints {
    addrs: Vec<u64>,
    flow: Vec<Flow>,
    /// Running sums of the ranges' flow, by point (a difference array).
    diff: Vec<(i128, i128)>,
}

impl ImagePoints {
    fn index(&self, addr: u64) -> usize {
        self.addrs.binary_search(&addr).expect("every record's address is a point")
    }

    fn at(&mut self, addr: u64) -> &mut Flow {
        let i = self.index(addr);
        &mut self.flow[i]
    }

    fn accumulate(&mut self) {
        let (mut seq_in, mut seq_out) = (0i128, 0i128);
        for (flow, d) in self.flow.iter_mut().zip(&self.diff) {
            seq_in += d.0;
            seq_out += d.1;
            flow.seq_in = u64::try_from(seq_in).unwrap_or(u64::MAX);
            flow.seq_out = u64::try_from(seq_out).unwrap_or(u64::MAX);
        }
        self.diff = Vec::new();
    }

    /// Sets each point's executions: the most of any point in its straight run. Points with
    /// no way in or out between them (no branch taken to or from them, nothing entering or
    /// leaving, one function) run equally often, but each may see only part of the flow: a
    /// function's first block is entered by calls the records may not hold, and left by
    /// branches they do.
    fn equalize(&mut self, cover: &Coverage) {
        let n = self.addrs.len();
        let mut start = 0;
        for i in 1..=n {
            let cut = i == n || {
                let (prev, here) = (self.flow[i - 1], self.flow[i]);
                here.taken_in > 0
                    || here.lead
                    || prev.taken_out > 0
                    || prev.end
                    || cover.symbol_at(self.addrs[i - 1]) != cover.symbol_at(self.addrs[i])
            };
            if cut {
                let most = self.flow[start..i].iter().map(Flow::executions).max().unwrap_or(0);
                for f in &mut self.flow[start..i] {
                    f.executions = most;
                }
                start = i;
            }
        }
    }
}

/// An image's symbols with an address, by start, to find the one covering an address.
struct Coverage {
    /// (start, end, symbol index), sorted by start.
    ranges: Vec<(u64, u64, u32)>,
}

impl Coverage {
    fn new(image: &Image) -> Coverage {
        let mut ranges: Vec<(u64, u64, u32)> = image
            .symbols
            .iter()
            .enumerate()
            .filter_map(|(k, s)| {
                let start = s.offset?;
                Some((start, start.saturating_add(s.size.unwrap_or(1).max(1)), k as u32))
            })
            .collect();
        ranges.sort_unstable();
        Coverage { ranges }
    }

    /// The symbol covering `addr`: the one starting nearest below it whose range holds it.
    fn symbol_at(&self, addr: u64) -> Option<u32> {
        let end = self.ranges.partition_point(|r| r.0 <= addr);
        self.ranges[..end].iter().rev().take(8).find(|r| addr < r.1).map(|r| r.2)
    }

    fn starts_at(&self, addr: u64) -> bool {
        self.ranges.binary_search_by_key(&addr, |r| r.0).is_ok()
    }
}

/// Each point's row in the image's cost table (one event: its executions), in the function
/// that covers it; points no symbol covers get a placeholder function from the first such
/// point on, up to the next covered point or a gap of over 4 KiB. Returns each point's symbol.
fn place_points(image: &mut Image, points: &ImagePoints, cover: &Coverage) -> Vec<u32> {
    const GAP: u64 = 4096;
    let mut costs = CostTable::new();
    costs.reserve(points.addrs.len());
    let mut symbol_of = Vec::with_capacity(points.addrs.len());
    let mut placeholder: Option<(u32, u64)> = None;
    for (&addr, flow) in points.addrs.iter().zip(&points.flow) {
        let symbol = match cover.symbol_at(addr) {
            Some(s) => {
                placeholder = None;
                s
            }
            None => match placeholder {
                Some((s, last)) if addr - last <= GAP => {
                    placeholder = Some((s, addr));
                    s
                }
                _ => {
                    let s = image.symbols.len() as u32;
                    image.symbols.push(Symbol { name: format!("0x{addr:x}"), ..Symbol::default() });
                    placeholder = Some((s, addr));
                    s
                }
            },
        };
        symbol_of.push(symbol);
        costs.push_parts(Some(addr), Some(symbol), None, None, &[flow.executions]);
    }
    image.costs = costs;
    image.blocks.clear();
    image.source_lines.clear();
    image.routines = None;
    symbol_of
}

/// The rebuild's transfers: one per taken branch, its kind told from the functions at its ends
/// and the flow at its source (see the module documentation).
fn transfers(
    taken: &[TakenBranch],
    calls: &[CodeAddress],
    images: &[ImagePoints],
    symbol_of: &[Vec<u32>],
    model: &[Image],
) -> Vec<Transfer> {
    let covers: Vec<Coverage> = model.iter().map(Coverage::new).collect();
    let mut list = Vec::with_capacity(taken.len());
    // Taken branches are sorted by source: those of one source are neighbours.
    let mut k = 0;
    while k < taken.len() {
        let from = taken[k].from;
        let run = taken[k..].iter().take_while(|b| b.from == from).count();
        let src_points = &images[from.image as usize];
        let si = src_points.index(from.offset);
        let flow = src_points.flow[si];
        let src_symbol = symbol_of[from.image as usize][si];
        let is_call = calls.binary_search(&from).is_ok();
        for (j, b) in taken[k..k + run].iter().enumerate() {
            let tgt_points = &images[b.to.image as usize];
            let ti = tgt_points.index(b.to.offset);
            let tgt_symbol = symbol_of[b.to.image as usize][ti];
            let other_function = (b.to.image, tgt_symbol) != (from.image, src_symbol);
            let at_entry = covers[b.to.image as usize].starts_at(b.to.offset);
            let (kind, detail) = if (other_function || is_call) && at_entry {
                (EdgeKind::Call, 0)
            } else if other_function {
                (EdgeKind::Return, 0)
            } else if flow.seq_out > 0 {
                // The fall-through belongs to the first target's record.
                let executed = if j == 0 { b.count.saturating_add(flow.seq_out) } else { b.count };
                (EdgeKind::ConditionalBranch, executed)
            } else if run > 1 {
                (EdgeKind::IndirectBranch, 0)
            } else {
                (EdgeKind::UnconditionalBranch, 0)
            };
            list.push(Transfer {
                kind,
                has_addr: true,
                has_line: false,
                thread: 0,
                incl_len: 0,
                src_image: from.image,
                src_symbol,
                src_line: 0,
                tgt_image: b.to.image,
                tgt_symbol,
                tgt_line: 0,
                src_addr: from.offset,
                tgt_addr: b.to.offset,
                count: b.count,
                detail,
            });
        }
        k += run;
    }
    list
}

/// A fall-through between blocks ends a block at its source, also where no branch is taken
/// from there: a transfer that is a conditional branch never taken, executed as often as
/// the fall-through, which the rebuild turns into the fall-through edge to the next block.
/// (Where a branch is taken from the source, its own transfer carries the fall-through.)
fn block_ends(
    list: &mut Vec<Transfer>,
    edges: &[FallThrough],
    taken: &[TakenBranch],
    images: &[ImagePoints],
    symbol_of: &[Vec<u32>],
) {
    for f in edges {
        if taken.binary_search_by_key(&f.start, |b| b.from).is_ok() {
            continue;
        }
        let points = &images[f.start.image as usize];
        let (si, ti) = (points.index(f.start.offset), points.index(f.end.offset));
        let symbols = &symbol_of[f.start.image as usize];
        list.push(Transfer {
            kind: EdgeKind::ConditionalBranch,
            has_addr: true,
            has_line: false,
            thread: 0,
            incl_len: 0,
            src_image: f.start.image,
            src_symbol: symbols[si],
            src_line: 0,
            tgt_image: f.end.image,
            tgt_symbol: symbols[ti],
            tgt_line: 0,
            src_addr: f.start.offset,
            tgt_addr: f.end.offset,
            count: 0,
            detail: f.count,
        });
    }
}

/// Sums counts of instruction pairs `(from, to, count)` by the edge they make: from the block
/// whose last instruction is `from` to the block that starts at `to`; a pair without such
/// blocks is left out.
fn by_block_pair(
    process: &Process,
    pairs: impl Iterator<Item = (CodeAddress, CodeAddress, u64)>,
) -> HashMap<(BlockRef, BlockRef), u64> {
    let mut sums: HashMap<(BlockRef, BlockRef), u64> = HashMap::new();
    for (from, to, count) in pairs {
        let (Some(src), Some(tgt)) = (block_ending_at(process, from), block_starting_at(process, to)) else {
            continue;
        };
        let n = sums.entry((src, tgt)).or_default();
        *n = n.saturating_add(count);
    }
    sums
}

/// Puts each taken branch's mispredictions on the edge made of it: the edge from the block
/// whose last instruction is the branch to the block that starts at its target.
fn attach_mispredicts(process: &mut Process, taken: &[TakenBranch]) {
    let pairs = taken.iter().filter(|b| b.mispredicts > 0).map(|b| (b.from, b.to, b.mispredicts));
    let mut wanted = by_block_pair(process, pairs);
    if wanted.is_empty() {
        return;
    }
    for e in &mut process.edges {
        let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) else { continue };
        if matches!(e.kind, EdgeKind::FallThrough | EdgeKind::CallBypass) {
            continue;
        }
        if let Some(m) = wanted.remove(&(s, t)) {
            match &mut e.details {
                Some(d) => d.mispredicts = m,
                None => e.details = EdgeDetails::mispredicted(m),
            }
        }
    }
}

/// Puts each run over a call on the call's bypass edge: from the block whose last
/// instruction is the call to the block that starts after it. Where the records hold no such
/// edge (the call itself never recorded), nothing is kept.
fn attach_over_calls(process: &mut Process, over_calls: &[FallThrough]) {
    let mut wanted = by_block_pair(process, over_calls.iter().map(|f| (f.start, f.end, f.count)));
    if wanted.is_empty() {
        return;
    }
    for e in &mut process.edges {
        let (EdgeKind::CallBypass, NodeRef::Block(s), NodeRef::Block(t)) = (e.kind, e.source, e.target)
        else {
            continue;
        };
        if let Some(n) = wanted.remove(&(s, t)) {
            e.details.get_or_insert_with(Box::default).runs_mut().over_call = n;
        }
    }
}

fn block_starting_at(process: &Process, at: CodeAddress) -> Option<BlockRef> {
    let blocks = &process.images.get(at.image as usize)?.blocks;
    let k = blocks.binary_search_by_key(&at.offset, |b| b.offset).ok()?;
    Some(BlockRef { image: at.image, block: k as u32 })
}

fn block_ending_at(process: &Process, at: CodeAddress) -> Option<BlockRef> {
    let blocks = &process.images.get(at.image as usize)?.blocks;
    let k = blocks.partition_point(|b| b.offset <= at.offset).checked_sub(1)?;
    (blocks[k].last_instr() == at.offset).then_some(BlockRef { image: at.image, block: k as u32 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::Edge;

    fn image_with(symbols: &[(&str, u64, u64)]) -> Image {
        Image {
            symbols: symbols
                .iter()
                .map(|&(n, o, s)| Symbol { name: n.into(), offset: Some(o), size: Some(s), file: None })
                .collect(),
            ..Image::default()
        }
    }

    fn edges(p: &Process) -> Vec<(u64, u64, EdgeKind, u64)> {
        let at = |n: NodeRef| match n {
            NodeRef::Block(b) => p.block(b).offset,
            _ => u64::MAX,
        };
        let mut v: Vec<_> =
            p.edges.iter().map(|e: &Edge| (at(e.source), at(e.target), e.kind, e.total())).collect();
        v.sort_unstable_by_key(|e| (e.0, e.1));
        v
    }

    /// A loop `0x10..=0x18` run 10 times in `main` (0x00..0x40): entered from 0x08, the
    /// conditional at 0x18 taken back 9 times and falling through to 0x1c once; as perf's
    /// traces and as `.fdata` says it.

    #[test]
    fn traces_and_fdata_edges_give_the_same_loop() {
        let l = |o| CodeAddress::new(0, o);
        let mut traces = BranchRecords::new();
        traces.add_taken(l(0x08), l(0x10), 1, 0);
        traces.add_taken(l(0x18), l(0x10), 9, 2);
        traces.add_fall_through(l(0x10), l(0x18), 9);
        traces.add_fall_through(l(0x10), l(0x1c), 1);
        let mut fdata = BranchRecords::new();
        fdata.add_taken(l(0x08), l(0x10), 1, 0);
        fdata.add_taken(l(0x18), l(0x10), 9, 2);
        fdata.add_block_fall_through(l(0x18), l(0x1c), 1);
        for records in [traces, fdata] {
            let mut p = Process { images: vec![image_with(&[("main", 0, 0x40)])], ..Process::default() };
            let summary = records.to_model(&mut p);
            assert_eq!(summary, Summary::default());
            let loop_block = p.images[0].blocks.iter().find(|b| b.offset == 0x10).unwrap();
            assert_eq!((loop_block.count, loop_block.last_instr()), (Some(10), 0x18));
            let e = edges(&p);
            assert!(e.contains(&(0x10, 0x10, EdgeKind::ConditionalBranch, 9)), "{e:?}");
            assert!(e.contains(&(0x10, 0x1c, EdgeKind::FallThrough, 1)), "{e:?}");
            let back = p.edges.iter().find(|e| e.kind == EdgeKind::ConditionalBranch).unwrap();
            assert_eq!(back.mispredicts(), 2);
            assert_eq!(p.images[0].symbols[0].size, Some(0x40));
        }
    }

    /// The loop of `run` (`analysis::machine_code`'s `CALL_IN_LOOP`) calling `work` on every
    /// turn, as perf's traces and the code state it: the trace from the return at 0x401145
    /// runs on from the call at 0x401140 to BOLT. That run is kept on the call's bypass and
    /// changes nothing else.
    #[test]
    fn a_run_over_a_call_is_kept_on_its_bypass() {
        let l = |o| CodeAddress::new(0, o);
        let build = |over_call: bool| {
            let mut r = BranchRecords::new();
            r.add_taken(l(0x401140), l(0x401110), 10, 0);
            r.add_taken(l(0x401115), l(0x401145), 10, 0);
            r.add_taken(l(0x40115d), l(0x401140), 10, 1);
            r.add_fall_through(l(0x401110), l(0x401115), 10);
            r.add_fall_through(l(0x401145), l(0x401157), 10);
            r.add_block_fall_through(l(0x401157), l(0x401159), 10);
            r.add_fall_through(l(0x401159), l(0x40115d), 10);
            r.add_fall_through(l(0x401140), l(0x401140), 10);
            if over_call {
                r.add_over_call(l(0x401140), l(0x401145), 6);
                r.add_over_call(l(0x401140), l(0x401145), 4);
            }
            let mut p = Process {
                images: vec![image_with(&[("work", 0x401110, 6), ("run", 0x401120, 0x4d)])],
                ..Process::default()
            };
            r.to_model(&mut p);
            p
        };
        let (plain, with) = (build(false), build(true));
        assert_eq!(edges(&plain), edges(&with));
        let counts = |p: &Process| p.images[0].blocks.iter().map(|b| (b.offset, b.count)).collect::<Vec<_>>();
        assert_eq!(counts(&plain), counts(&with));
        let at = |p: &Process, n: NodeRef| match n {
            NodeRef::Block(b) => p.block(b).offset,
            _ => u64::MAX,
        };
        let over: Vec<_> = with
            .edges
            .iter()
            .filter_map(|e| e.details.as_ref().filter(|d| d.over_call() > 0).map(|d| (e, d.over_call())))
            .map(|(e, n)| (at(&with, e.source), at(&with, e.target), e.kind, e.total(), n))
            .collect();
        assert_eq!(over, vec![(0x401140, 0x401145, EdgeKind::CallBypass, 0, 10)]);
        assert!(plain.edges.iter().all(|e| e.details.as_ref().is_none_or(|d| d.over_call() == 0)));
    }

    /// A block entered 10 times whose fall-through the records state 7 times (the other runs
    /// were the newest of their stacks): the edge counts the 10 executions and keeps the 3
    /// the records do not state.
    #[test]
    fn fall_throughs_keep_what_the_records_do_not_state() {
        let l = |o| CodeAddress::new(0, o);
        let mut r = BranchRecords::new();
        r.add_taken(l(0x08), l(0x20), 10, 0);
        r.add_block_fall_through(l(0x24), l(0x28), 7);
        r.add_fall_through(l(0x28), l(0x2c), 7);
        let mut p = Process { images: vec![image_with(&[("main", 0, 0x40)])], ..Process::default() };
        r.to_model(&mut p);
        let at = |n: NodeRef| match n {
            NodeRef::Block(b) => p.block(b).offset,
            _ => u64::MAX,
        };
        let ft = p
            .edges
            .iter()
            .find(|e| e.kind == EdgeKind::FallThrough && at(e.source) == 0x20)
            .expect("the fall-through from the block at 0x20");
        assert_eq!((at(ft.target), ft.total(), ft.stated()), (0x28, 10, 7));
    }

    #[test]
    fn calls_returns_and_unnamed_code() {
        let l = |o| CodeAddress::new(0, o);
        let mut r = BranchRecords::new();
        r.add_taken(l(0x04), l(0x100), 3, 0); // call f
        r.add_taken(l(0x108), l(0x09), 3, 0); // return to after the call
        r.add_fall_through(l(0x100), l(0x108), 3);
        r.add_taken(l(0x0c), l(0x5000), 1, 0); // into code no symbol covers
        r.add_fall_through(l(0x5000), l(0x50f0), 0); // counted zero times: dropped
        r.add_fall_through(l(0x108), l(0x100), 4); // backwards: invalid
        let mut p = Process {
            images: vec![image_with(&[("main", 0, 0x40), ("f", 0x100, 0x10)])],
            ..Process::default()
        };
        let summary = r.to_model(&mut p);
        assert_eq!(summary, Summary { invalid_ranges: 1, invalid_range_count: 4 });
        let e = edges(&p);
        assert!(e.contains(&(0x04, 0x100, EdgeKind::Call, 3)), "{e:?}");
        assert!(e.contains(&(0x100, 0x09, EdgeKind::Return, 3)), "{e:?}");
        assert_eq!(p.images[0].symbols.len(), 3);
        assert_eq!(p.images[0].symbols[2].name, "0x5000");
        assert!(p.images[0].costs.is_empty());
    }
}
