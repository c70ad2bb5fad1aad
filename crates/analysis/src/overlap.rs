//! How close two profiles of one program are: function, block and edge overlap, and flow
//! conservation, on the binary's own basic blocks (`cfghub overlap`).
//!
//! Profiles cut code into blocks their own way (Valgrind's rebuild splits after every call,
//! a DCFG as Pin saw it, samples have none), so both are first laid on one grid: the blocks
//! BOLT builds from the binary's code ([`crate::machine_code`]). A block of the grid counts
//! what the profile's block holding its first instruction counts (every instruction of a
//! block runs as often as the block); a jump of the grid, what the profile's edges from the
//! block holding its branch to the block starting at its target count. A profile of plain
//! samples, without blocks, counts its samples per instruction in each block ("plain
//! per-block samples"), and has no edges.
//!
//! The measures are LLVM's (`llvm-profdata overlap`): over matched items, the sum of
//! `min(a_i / sum_a, b_i / sum_b)`, 1 for equal distributions and 0 for disjoint ones.
//! - **function overlap**: of the functions' executed instructions (block counts times
//!   their instructions), over every function either profile has;
//! - **block overlap** and **edge overlap**: of block and jump counts, over the *hot*
//!   functions: those holding a fraction (0.9 by default) of the first profile's executed
//!   instructions;
//! - per hot function, the same two within the function (each side normalised to the
//!   function's own total), and for each side how many of its blocks with a count conserve
//!   flow (the jumps in, and out, add up to the count; BOLT's profile-quality measure) and
//!   its **CFG discontinuity** (BOLT's `ProfileQualityStats`: the fraction of the function's
//!   block executions in blocks that no path of jumps with a count reaches from the entry;
//!   in total, the 95th percentile over the hot functions, as BOLT reports it);
//! - **hot-block overlap** (`llvm-profdata overlap --sample`'s): a block is hot in a profile
//!   when its count reaches the profile's hot threshold, the smallest count among the
//!   largest counts that hold 99% of the profile's block counts (LLVM's profile summary at
//!   the cutoff 990000); the overlap is the blocks hot in both over those hot in either, over
//!   every function laid on the grid.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::executions::block_totals;
use crate::inference::{block_instructions, block_of, block_weights, function_jumps, sample_unit};
use crate::machine_code::{BinaryCode, FunctionCode};
use crate::sample_profile::hot_count_threshold;
use crate::symbolize::{find_image_files, Options as SymbolOptions, Symbolizer};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{AddressKind, EdgeKind, NodeRef, Profile};

/// A profile to compare: the model and what its addresses are.
pub struct Side<'a> {
    /// The profile.
    pub profile: &'a Profile,
    /// What its addresses are (its format's address kind).
    pub kind: AddressKind,
    /// The event its samples are weighed by, where it has no blocks.
    pub event: usize,
}

/// The overlap of two profiles.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Overlap {
    /// The fraction of the first profile's executed instructions the hot functions hold.
    pub hot_fraction: f64,
    /// Function overlap, over every function.
    pub functions: f64,
    /// Block overlap over the hot functions.
    pub blocks: f64,
    /// Edge overlap over the hot functions; `None` when a side has no edges.
    pub edges: Option<f64>,
    /// Of each side's blocks with a count in the hot functions, how many conserve flow:
    /// `[balanced, with a count]`; `None` for a side without edges.
    pub balanced: [Option<[u64; 2]>; 2],
    /// Per side: BOLT's function CFG discontinuity, the 95th percentile over the hot
    /// functions of each one's fraction of block executions unreachable from its entry
    /// through jumps with a count; `None` for a side without edges.
    pub discontinuity: [Option<f64>; 2],
    /// Hot-block overlap as `llvm-profdata overlap --sample` measures it.
    pub hot_blocks: HotBlocks,
    /// The hot functions, hottest first in the first profile.
    pub per_function: Vec<FunctionOverlap>,
}

/// Blocks hot in each profile and in both (see the module documentation).
#[derive(Clone, Debug, Default, Serialize)]
pub struct HotBlocks {
    /// Hot in both over hot in either (0 when no block is hot).
    pub overlap: f64,
    /// Each side's hot threshold: the count a block must reach.
    pub threshold: [u64; 2],
    /// Blocks hot in both.
    pub common: u64,
    /// Blocks hot in the first only, and in the second only.
    pub unique: [u64; 2],
}

/// One hot function's overlap.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FunctionOverlap {
    /// Its name (the binary's symbol, demangled).
    pub name: String,
    /// The binary it is in.
    pub binary: String,
    /// Its stated address.
    pub address: u64,
    /// Its blocks (BOLT's).
    pub blocks: usize,
    /// Its share of each profile's executed instructions.
    pub share: [f64; 2],
    /// Block overlap within it.
    pub block_overlap: f64,
    /// Edge overlap within it; `None` when a side has no edges.
    pub edge_overlap: Option<f64>,
    /// Per side: `[blocks that conserve flow, blocks with a count]`; `None` without edges.
    pub balanced: [Option<[u64; 2]>; 2],
    /// Per side: the fraction of its block executions in blocks unreachable from the entry
    /// through jumps with a count (BOLT's CFG discontinuity); `None` without edges.
    pub discontinuity: [Option<f64>; 2],
}

/// A function's counts on the grid, for one side.
#[derive(Clone, Debug, Default)]
struct Counts {
    blocks: Vec<u64>,
    jumps: Vec<u64>,
    has_edges: bool,
}

/// A function of a binary: its grid and each side's counts on it.
struct Function {
    name: String,
    binary: String,
    code: FunctionCode,
    instructions: Vec<u64>,
    jumps: Vec<crate::inference::flow::Jump>,
    sides: [Counts; 2],
}

/// Compares `a` and `b` (see the module documentation), finding binaries as `options` say;
/// `hot` is the fraction of the first profile's executed instructions whose functions are
/// compared block by block.
pub fn overlap(
    a: &Side,
    b: &Side,
    options: &SymbolOptions,
    hot: f64,
    findings: &mut Findings,
) -> Result<Overlap> {
    let mut binaries = Binaries::default();
    let mut functions: BTreeMap<(String, u64), Function> = BTreeMap::new();
    for (s, side) in [a, b].into_iter().enumerate() {
        project(side, s, options, &mut binaries, &mut functions, findings)?;
    }
    if functions.is_empty() {
        return Err(Error::input(
            "overlap: no function of either profile could be laid on its binary's blocks",
        )
        .with_hint("name the profiled binary with --symbols (x86-64 ELF code)"));
    }
    Ok(measure(&functions, hot))
}

/// The binaries found so far, by the path found.
#[derive(Default)]
struct Binaries {
    opened: BTreeMap<PathBuf, Option<(BinaryCode, Symbolizer)>>,
}

/// Lays one side's counts on the grid of every function it touches.
fn project(
    side: &Side,
    s: usize,
    options: &SymbolOptions,
    binaries: &mut Binaries,
    functions: &mut BTreeMap<(String, u64), Function>,
    findings: &mut Findings,
) -> Result<()> {
    let profile = side.profile;
    let unit = sample_unit(profile, side.event);
    let images: usize = profile.processes.iter().map(|p| p.images.len()).sum();
    let mut unplaced = Vec::new();
    for process in &profile.processes {
        let totals = block_totals(process);
        // The edges inside each image (calls and returns aside), by image.
        let mut inside: Vec<Vec<&cfghub_model::ir::Edge>> = vec![Vec::new(); process.images.len()];
        for edge in &process.edges {
            if edge.kind.is_call() || matches!(edge.kind, EdgeKind::Return) {
                continue;
            }
            if let (NodeRef::Block(from), NodeRef::Block(to)) = (edge.source, edge.target) {
                if from.image == to.image {
                    if let Some(list) = inside.get_mut(from.image as usize) {
                        list.push(edge);
                    }
                }
            }
        }
        for (i, image) in process.images.iter().enumerate() {
            if image.blocks.is_empty() && image.costs.is_empty() {
                continue;
            }
            let name = profile.image_name(image);
            let found = find_image_files(profile, image, options, images == 1);
            let Some(path) = found.binary.clone() else {
                unplaced.push(name);
                continue;
            };
            let opened = binaries.opened.entry(path.clone()).or_insert_with(|| {
                let code = BinaryCode::open(&path)?;
                Some((code, Symbolizer::with_symbols_only(found).ok()?))
            });
            let Some((code, symbolizer)) = opened.as_ref() else {
                unplaced.push(name);
                continue;
            };
            let Some(relocation) = symbolizer.relocation(side.kind, image.load_addr, image.file_offset)
            else {
                unplaced.push(name);
                continue;
            };
            let binary = path.file_name().map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned());
            let stated = |offset: u64| relocation.to_stated(image.load_addr.wrapping_add(offset));
            let mut lay = Lay { functions: &mut *functions, code, symbolizer, binary, side: s };
            if image.blocks.is_empty() {
                lay.samples(image, &stated, side.event, unit);
            } else {
                lay.blocks(image, i as u32, &totals, &stated);
                lay.edges(image, &inside[i], &stated);
            }
        }
    }
    // Code of no file (the kernel's, a profile's unknown image) has no binary to look for.
    unplaced.retain(|name| !name.starts_with('[') && name != "???");
    if !unplaced.is_empty() {
        unplaced.sort();
        unplaced.dedup();
        findings.warn(
            None,
            format!(
                "overlap: no x86-64 binary found for {}: left out (name it with --symbols)",
                unplaced.join(", ")
            ),
        );
    }
    Ok(())
}

/// One side's counts of one image laid on the grids of its binary's functions.
struct Lay<'a> {
    functions: &'a mut BTreeMap<(String, u64), Function>,
    code: &'a BinaryCode,
    symbolizer: &'a Symbolizer,
    /// The binary's file name, part of each function's key.
    binary: String,
    /// Which side (0 or 1).
    side: usize,
}

/// An image's offset as the address its binary states.
type Stated<'a> = dyn Fn(u64) -> Option<u64> + 'a;

impl Lay<'_> {
    /// The function holding stated address `at`, on its grid.
    fn function(&mut self, at: u64) -> Option<&mut Function> {
        function_at(self.functions, self.code, self.symbolizer, &self.binary, at)
    }

    /// Plain samples: per function, each grid block's samples per estimated cycle.
    fn samples(&mut self, image: &cfghub_model::ir::Image, stated: &Stated, event: usize, unit: u64) {
        let mut by_function: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
        for c in image.costs.iter() {
            let (Some(offset), Some(&v)) = (c.offset, c.values.get(event)) else { continue };
            let Some(at) = stated(offset).filter(|_| v > 0) else { continue };
            if let Some(hit) = self.symbolizer.find_symbol(at) {
                by_function.entry(hit.address).or_default().push((at, v));
            }
        }
        let s = self.side;
        for (start, mut samples) in by_function {
            samples.sort_unstable();
            let Some(f) = self.function(start) else { continue };
            let weights = block_weights(&f.code, &samples, unit);
            for (c, w) in f.sides[s].blocks.iter_mut().zip(weights) {
                *c += w;
            }
        }
    }

    /// Blocks: each grid block counts what the profile's block holding its start counts.
    fn blocks(
        &mut self,
        image: &cfghub_model::ir::Image,
        i: u32,
        totals: &crate::executions::PerBlock<u64>,
        stated: &Stated,
    ) {
        let mut by_function: BTreeMap<u64, Vec<(u64, u64, u64)>> = BTreeMap::new();
        for (k, block) in image.blocks.iter().enumerate() {
            let count = totals
                .get(cfghub_model::ir::BlockRef { image: i, block: k as u32 })
                .copied()
                .unwrap_or(0)
                .max(block.count.unwrap_or(0));
            let Some(start) = stated(block.offset).filter(|_| count > 0) else { continue };
            // Up to its last instruction's start: the sizes some profiles give their last
            // instructions are guesses (Callgrind's state no lengths).
            let last = start + u64::from(block.last_instr_offset);
            if let Some(hit) = self.symbolizer.find_symbol(start) {
                by_function.entry(hit.address).or_default().push((start, last, count));
            }
        }
        let s = self.side;
        for (start, mut blocks) in by_function {
            blocks.sort_unstable();
            let Some(f) = self.function(start) else { continue };
            f.sides[s].has_edges = true;
            // The profile's block holding an address of the grid.
            let holder = |at: u64| -> Option<usize> {
                let k = blocks.partition_point(|b| b.0 <= at).checked_sub(1)?;
                (at <= blocks[k].1).then_some(k)
            };
            for (k, grid) in f.code.blocks.iter().enumerate() {
                if let Some(h) = holder(grid.start) {
                    f.sides[s].blocks[k] += blocks[h].2;
                }
            }
            // A grid block whose end lies in the profile's block that holds the next grid
            // block's start falls through into it as often as that block runs (a branch
            // never taken, or the return from a call, which the profile's block runs over).
            for (j, jump) in f.jumps.iter().enumerate() {
                let (a, b) = (jump.source as usize, jump.target as usize);
                if !jump.fall_through {
                    continue;
                }
                let (end, next) = (f.code.blocks[a].last, f.code.blocks[b].start);
                if let (Some(x), Some(y)) = (holder(end), holder(next)) {
                    if x == y {
                        f.sides[s].jumps[j] += blocks[x].2;
                    }
                }
            }
        }
    }

    /// Edges inside a function: from the grid block holding the branch to the grid block
    /// starting at the target.
    fn edges(&mut self, image: &cfghub_model::ir::Image, edges: &[&cfghub_model::ir::Edge], stated: &Stated) {
        let mut by_function: BTreeMap<u64, Vec<(u64, u64, u64)>> = BTreeMap::new();
        for edge in edges {
            let (NodeRef::Block(from), NodeRef::Block(to)) = (edge.source, edge.target) else { continue };
            let (src, tgt) = (&image.blocks[from.block as usize], &image.blocks[to.block as usize]);
            let count = edge.counts.iter().fold(0u64, |t, &c| t.saturating_add(c));
            let last = src.offset + u64::from(src.last_instr_offset);
            let (Some(last), Some(target)) = (stated(last), stated(tgt.offset)) else { continue };
            if count == 0 {
                continue;
            }
            if let Some(hit) = self.symbolizer.find_symbol(last) {
                by_function.entry(hit.address).or_default().push((last, target, count));
            }
        }
        let s = self.side;
        for (start, edges) in by_function {
            let Some(f) = self.function(start) else { continue };
            let index: BTreeMap<(u32, u32), usize> =
                f.jumps.iter().enumerate().map(|(k, j)| ((j.source, j.target), k)).collect();
            for (last, target, count) in edges {
                let (Some(from), Some(to)) = (block_of(&f.code, last), block_of(&f.code, target)) else {
                    continue;
                };
                if f.code.blocks[to].start != target {
                    continue; // inside a grid block: the profile's own cut (after a call)
                }
                if let Some(&k) = index.get(&(from as u32, to as u32)) {
                    f.sides[s].jumps[k] += count;
                }
            }
        }
    }
}

/// The function of the binary holding stated address `at`, laid on the grid when first met.
fn function_at<'f>(
    functions: &'f mut BTreeMap<(String, u64), Function>,
    code: &BinaryCode,
    symbolizer: &Symbolizer,
    binary: &str,
    at: u64,
) -> Option<&'f mut Function> {
    let hit = symbolizer.find_symbol(at)?;
    let key = (binary.to_string(), hit.address);
    if !functions.contains_key(&key) {
        let code = code.function_at_address(hit.address, hit.size).filter(|f| !f.blocks.is_empty())?;
        let (jumps, _) = function_jumps(&code);
        let n = code.blocks.len();
        let counts = Counts { blocks: vec![0; n], jumps: vec![0; jumps.len()], has_edges: false };
        let function = Function {
            name: hit.name,
            binary: binary.to_string(),
            instructions: block_instructions(&code),
            code,
            jumps,
            sides: [counts.clone(), counts],
        };
        functions.insert(key.clone(), function);
    }
    functions.get_mut(&key)
}

/// The measures of the module documentation over the functions laid on the grid.
fn measure(functions: &BTreeMap<(String, u64), Function>, hot: f64) -> Overlap {
    let executed = |f: &Function, s: usize| -> u128 {
        f.sides[s].blocks.iter().zip(&f.instructions).map(|(&c, &n)| u128::from(c) * u128::from(n)).sum()
    };
    let totals = [0, 1].map(|s| functions.values().map(|f| executed(f, s)).sum::<u128>());
    let share = |f: &Function, s: usize| ratio(executed(f, s), totals[s]);
    let mut out = Overlap {
        functions: functions.values().map(|f| share(f, 0).min(share(f, 1))).sum(),
        ..Overlap::default()
    };
    // The hot functions, hottest first in the first profile.
    let mut order: Vec<&Function> = functions.values().filter(|f| executed(f, 0) > 0).collect();
    order.sort_by(|x, y| executed(y, 0).cmp(&executed(x, 0)).then(x.name.cmp(&y.name)));
    let mut held = 0u128;
    let mut hot_functions = Vec::new();
    for f in order {
        if totals[0] > 0 && ratio(held, totals[0]) >= hot {
            break;
        }
        held += executed(f, 0);
        hot_functions.push(f);
    }
    out.hot_fraction = ratio(held, totals[0]);
    let edges_on = [0, 1].map(|s| hot_functions.iter().any(|f| f.sides[s].has_edges));
    let sum = |s: usize, jumps: bool| -> u128 {
        let pick = |c: &Counts| -> u128 {
            let v = if jumps { &c.jumps } else { &c.blocks };
            v.iter().map(|&c| u128::from(c)).sum()
        };
        hot_functions.iter().map(|f| pick(&f.sides[s])).sum()
    };
    let block_sums = [sum(0, false), sum(1, false)];
    let jump_sums = [sum(0, true), sum(1, true)];
    let mut balanced = [[0u64; 2]; 2];
    for f in &hot_functions {
        out.blocks += pair_overlap(&f.sides[0].blocks, &f.sides[1].blocks, block_sums);
        out.edges =
            Some(out.edges.unwrap_or(0.0) + pair_overlap(&f.sides[0].jumps, &f.sides[1].jumps, jump_sums));
        let local = |v: &[u64]| v.iter().map(|&c| u128::from(c)).sum::<u128>();
        let mut row = FunctionOverlap {
            name: f.name.clone(),
            binary: f.binary.clone(),
            address: f.code.blocks[0].start,
            blocks: f.code.blocks.len(),
            share: [share(f, 0), share(f, 1)],
            block_overlap: pair_overlap(
                &f.sides[0].blocks,
                &f.sides[1].blocks,
                [local(&f.sides[0].blocks), local(&f.sides[1].blocks)],
            ),
            edge_overlap: (edges_on[0] && edges_on[1] && !f.jumps.is_empty()).then(|| {
                pair_overlap(
                    &f.sides[0].jumps,
                    &f.sides[1].jumps,
                    [local(&f.sides[0].jumps), local(&f.sides[1].jumps)],
                )
            }),
            balanced: [None, None],
            discontinuity: [None, None],
        };
        for s in 0..2 {
            if edges_on[s] {
                let b = conserving(f, s);
                balanced[s][0] += b[0];
                balanced[s][1] += b[1];
                row.balanced[s] = Some(b);
                row.discontinuity[s] = Some(discontinuity(f, s));
            }
        }
        out.per_function.push(row);
    }
    if !(edges_on[0] && edges_on[1]) {
        out.edges = None;
    }
    out.balanced = [0, 1].map(|s| edges_on[s].then_some(balanced[s]));
    out.discontinuity = [0, 1].map(|s| {
        edges_on[s]
            .then(|| percentile_95(out.per_function.iter().filter_map(|f| f.discontinuity[s]).collect()))
    });
    out.hot_blocks = hot_blocks(functions);
    out
}

/// BOLT's report of a distribution: the value at rank `n * 95 / 100` of the sorted values.
fn percentile_95(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() * 95 / 100).or(values.last()).copied().unwrap_or(0.0)
}

/// The fraction of side `s`'s block executions of `f` in blocks that no path of jumps with a
/// count reaches from the entry (0 for a function of one block, as BOLT counts it).
fn discontinuity(f: &Function, s: usize) -> f64 {
    let counts = &f.sides[s].blocks;
    let all: u128 = counts.iter().map(|&c| u128::from(c)).sum();
    if counts.len() <= 1 || all == 0 || counts[0] == 0 {
        return if all == 0 || counts.len() <= 1 { 0.0 } else { 1.0 };
    }
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); counts.len()];
    for (j, &c) in f.jumps.iter().zip(&f.sides[s].jumps) {
        if c > 0 {
            next[j.source as usize].push(j.target as usize);
        }
    }
    let mut seen = vec![false; counts.len()];
    let (mut queue, mut reached) = (vec![0usize], u128::from(counts[0]));
    seen[0] = true;
    while let Some(k) = queue.pop() {
        for &t in &next[k] {
            if !std::mem::replace(&mut seen[t], true) {
                reached += u128::from(counts[t]);
                queue.push(t);
            }
        }
    }
    ratio(all - reached, all)
}

/// Hot-block overlap over every function laid on the grid.
fn hot_blocks(functions: &BTreeMap<(String, u64), Function>) -> HotBlocks {
    let threshold = [0, 1].map(|s| {
        hot_count_threshold(functions.values().flat_map(|f| f.sides[s].blocks.iter().copied()).collect())
    });
    let mut out = HotBlocks { threshold, ..HotBlocks::default() };
    for f in functions.values() {
        for (&a, &b) in f.sides[0].blocks.iter().zip(&f.sides[1].blocks) {
            let hot = [a > 0 && a >= threshold[0], b > 0 && b >= threshold[1]];
            match hot {
                [true, true] => out.common += 1,
                [true, false] => out.unique[0] += 1,
                [false, true] => out.unique[1] += 1,
                [false, false] => {}
            }
        }
    }
    let union = out.common + out.unique[0] + out.unique[1];
    out.overlap = ratio(u128::from(out.common), u128::from(union));
    out
}

/// `sum_i min(a_i / sums[0], b_i / sums[1])`.
fn pair_overlap(a: &[u64], b: &[u64], sums: [u128; 2]) -> f64 {
    a.iter().zip(b).map(|(&x, &y)| ratio(u128::from(x), sums[0]).min(ratio(u128::from(y), sums[1]))).sum()
}

fn ratio(x: u128, total: u128) -> f64 {
    if total == 0 {
        0.0
    } else {
        x as f64 / total as f64
    }
}

/// Of a side's blocks with a count, `[those whose jumps in (but for the entry) and out (but
/// for an exit) add up to the count, all of them]`.
fn conserving(f: &Function, s: usize) -> [u64; 2] {
    let n = f.code.blocks.len();
    let (mut ins, mut outs, mut exits) = (vec![0u64; n], vec![0u64; n], vec![true; n]);
    for (j, &c) in f.jumps.iter().zip(&f.sides[s].jumps) {
        outs[j.source as usize] += c;
        ins[j.target as usize] += c;
        exits[j.source as usize] = false;
    }
    let counts = &f.sides[s].blocks;
    let with_count = counts.iter().filter(|&&c| c > 0).count() as u64;
    let balanced = (0..n)
        .filter(|&k| counts[k] > 0)
        .filter(|&k| (k == 0 || ins[k] == counts[k]) && (exits[k] || outs[k] == counts[k]))
        .count() as u64;
    [balanced, with_count]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::flow::Jump;
    use crate::machine_code::CodeBlock;

    /// A function of `n` blocks and these jumps, with side 0's counts.
    fn function(n: usize, jumps: &[(u32, u32, u64)], blocks: &[u64]) -> Function {
        let mut code = FunctionCode::default();
        code.blocks =
            (0..n as u64).map(|k| CodeBlock { start: k * 4, last: k * 4, falls_through: false }).collect();
        let side =
            Counts { blocks: blocks.to_vec(), jumps: jumps.iter().map(|j| j.2).collect(), has_edges: true };
        Function {
            name: "f".into(),
            binary: "b".into(),
            code,
            instructions: vec![1; n],
            jumps: jumps
                .iter()
                .map(|&(source, target, _)| Jump { source, target, fall_through: false })
                .collect(),
            sides: [side.clone(), side],
        }
    }

    #[test]
    fn discontinuity_is_the_share_of_executions_no_counted_path_from_the_entry_reaches() {
        // 0 -> 1 -> 3 counted; 2 runs 30 times, but the jump into it has no count.
        let f = function(4, &[(0, 1, 10), (0, 2, 0), (1, 3, 10)], &[10, 10, 30, 10]);
        assert!((discontinuity(&f, 0) - 30.0 / 60.0).abs() < 1e-12);
        // Every block reached: none.
        let f = function(3, &[(0, 1, 5), (1, 2, 5)], &[5, 5, 5]);
        assert_eq!(discontinuity(&f, 0), 0.0);
        // An entry without a count reaches nothing; a single block is never discontinuous.
        let f = function(2, &[(0, 1, 0)], &[0, 7]);
        assert_eq!(discontinuity(&f, 0), 1.0);
        assert_eq!(discontinuity(&function(1, &[], &[9]), 0), 0.0);
    }

    #[test]
    fn the_hot_threshold_is_the_smallest_count_of_those_holding_99_percent() {
        // 1,000 + 50 + 10 + 1 = 1,061; 99% of it is 1,050 (rounded down): 1,000 and 50 hold it.
        assert_eq!(hot_count_threshold(vec![10, 1000, 1, 50, 0]), 50);
        // 99 of 100 units at 1 each: the 99th largest.
        assert_eq!(hot_count_threshold(vec![1; 100]), 1);
        assert_eq!(hot_count_threshold(vec![]), 0);
        // BOLT's rank: n * 95 / 100 of the sorted values.
        assert_eq!(percentile_95((0..20).map(f64::from).collect()), 19.0);
        assert_eq!(percentile_95((0..100).map(f64::from).collect()), 95.0);
    }
}
