//! Self and inclusive cost per routine name, whatever the model holds: what `cfghub diff`
//! compares between two profiles.
//!
//! - Blocks (DCFG, DCFG-trace): the call graph's routines ([`cfghub_analysis::callgraph`]),
//!   self = instructions executed in the routine (exact), inclusive = the call graph's estimate.
//!   The event is `instructions`.
//! - Costs at symbols (Callgrind, DCPI): self = the symbol's costs for the event; inclusive =
//!   self plus the inclusive cost of its calls to other functions
//!   ([`cfghub_model::ir::Edge::inclusive`] on [`NodeRef::Symbol`] edges).
//! - Stacks: the function-level view of [`cfghub_analysis::stacks::function_level`], then the
//!   rule for costs at symbols.
//!
//! Routines of the same name (in several images or processes) are summed.

use std::collections::HashMap;

use cfghub_analysis::{callgraph, stacks};
use cfghub_model::ir::{EventId, NodeRef, Process, Profile};

/// Costs of one routine name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoutineCost {
    pub name: String,
    pub self_cost: u64,
    pub inclusive: u64,
}

/// The event name that costs of block-level models are measured in.
pub const INSTRUCTIONS: &str = "instructions";

/// Whether costs of this profile come from its blocks (and so are counted in instructions).
pub fn uses_blocks(profile: &Profile) -> bool {
    profile.processes.iter().any(|p| p.images.iter().any(|i| !i.blocks.is_empty()))
}

/// Self and inclusive cost of every routine name, in first-seen order. `event` picks the column
/// for models with costs or stacks (ignored for blocks, which count instructions).
pub fn routine_costs(profile: &Profile, event: EventId) -> Vec<RoutineCost> {
    let mut order: Vec<RoutineCost> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut add = |name: &str, s: u64, i: u64| {
        let k = *index.entry(name.to_string()).or_insert_with(|| {
            order.push(RoutineCost { name: name.to_string(), ..RoutineCost::default() });
            order.len() - 1
        });
        order[k].self_cost = order[k].self_cost.saturating_add(s);
        order[k].inclusive = order[k].inclusive.saturating_add(i);
    };
    for process in &profile.processes {
        if process.images.iter().any(|i| !i.blocks.is_empty()) {
            let graph = callgraph::build(profile, process);
            for n in &graph.nodes {
                add(&n.name, n.self_instrs, n.inclusive_instrs);
            }
        } else if !process.stacks.is_empty() && process.images.iter().all(|i| i.costs.is_empty()) {
            let fl = stacks::function_level(profile, process);
            symbol_costs(&fl, event, &mut add);
        } else {
            symbol_costs(process, event, &mut add);
        }
    }
    order
}

fn symbol_costs(process: &Process, event: EventId, add: &mut impl FnMut(&str, u64, u64)) {
    for (i, image) in process.images.iter().enumerate() {
        let mut selfs = vec![0u64; image.symbols.len()];
        for c in &image.costs {
            if let Some(s) = c.symbol.and_then(|s| selfs.get_mut(s as usize)) {
                *s = s.saturating_add(c.value(event));
            }
        }
        let mut calls = vec![0u64; image.symbols.len()];
        for e in &process.edges {
            if !e.kind.is_call() {
                continue;
            }
            if let (NodeRef::Symbol(from), NodeRef::Symbol(to)) = (e.source, e.target) {
                if from.image as usize == i && from != to {
                    if let Some(slot) = calls.get_mut(from.symbol as usize) {
                        *slot = slot.saturating_add(e.inclusive().get(event).copied().unwrap_or(0));
                    }
                }
            }
        }
        for (s, sym) in image.symbols.iter().enumerate() {
            if selfs[s] != 0 || calls[s] != 0 {
                add(&sym.name, selfs[s], selfs[s].saturating_add(calls[s]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Event, FrameId};

    #[test]
    fn stacks_give_leaf_self_costs_and_inclusive_costs() {
        let mut p = Profile { events: vec![Event::new("samples")], ..Profile::default() };
        let mut process = Process::default();
        for (path, v) in [("main;a;b", 3), ("main;a", 2), ("main", 1)] {
            let frames: Vec<FrameId> = path.split(';').map(|f| p.frames.intern(f)).collect();
            process.stacks.push(&frames, None, &[v]);
        }
        p.processes.push(process);
        let costs = routine_costs(&p, 0);
        let get = |n: &str| costs.iter().find(|c| c.name == n).cloned().unwrap();
        assert_eq!((get("main").self_cost, get("main").inclusive), (1, 6));
        assert_eq!((get("a").self_cost, get("a").inclusive), (2, 5));
        assert_eq!((get("b").self_cost, get("b").inclusive), (3, 3));
    }
}
