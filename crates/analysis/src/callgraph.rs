//! The call graph: one node per routine, one arc per call site and callee, with self and
//! inclusive instruction counts.
//!
//! # What is exact and what is estimated
//! - **Nodes** are the routines of every image ([`crate::routines::all`]), named by
//!   [`crate::names::code_name`] at their entry block.
//! - **Self cost** of a node is exact: the instructions executed in its blocks,
//!   `Σ num_instrs × count` ([`cfghub_model::ir::Block::executed_instrs`]).
//! - **Arcs** come from call-type edges ([`cfghub_model::ir::EdgeKind::is_call`]) between two blocks:
//!   one arc per (calling block, callee routine), with the summed traversal count. Edges from or
//!   to the special nodes (`START`, `END`, `UNKNOWN`) and function-level edges
//!   ([`cfghub_model::ir::NodeRef::Symbol`]) make no arc.
//! - **Inclusive costs are estimates.** An aggregate profile says how often each arc was taken,
//!   not how much work each individual call did, so the inclusive cost of a routine is shared out
//!   the way gprof and KCachegrind do it:
//!   1. Routines that call each other in a circle are grouped into *cycles*, the strongly
//!      connected components of the call graph (Tarjan's algorithm). Self-recursive arcs make no
//!      cycle of their own (a routine calling itself is a trivial component).
//!   2. Components are processed callees first. The inclusive cost of a component is its
//!      members' self cost plus the share of every arc that leaves it.
//!   3. A component's inclusive cost is split among the arcs entering it from outside in
//!      proportion to their counts: an arc with count `c` out of `C` external calls into the
//!      component carries `incl × c / C`. Arcs inside a component (recursive arcs, self-recursive
//!      arcs included) never pass cost up, so a cycle is never counted twice.
//!   4. The inclusive cost of a node outside any cycle is its component's. A node in a cycle
//!      gets the part of the cycle's inclusive cost that enters through it from outside
//!      (KCachegrind's rule: only calls from outside the cycle count), but never less than its
//!      own self cost plus the arcs it makes out of the cycle, nor more than the whole cycle. A
//!      component nothing calls (a root such as `main`'s caller-less routine, or a root cycle)
//!      gives every member the whole component's cost.
//!   5. An arc inside a component carries the callee's inclusive cost times the arc's share of
//!      all the callee's incoming calls: bounded by the callee's inclusive cost, so it never
//!      double counts (a self-recursive arc with 9 of 10 calls carries 9/10 of the routine).
//!
//!   The estimate is exact when every routine is called from one place only. When one callee
//!   does much more work for one caller than for another (a sort called with long and short
//!   lists) the proportional split is wrong, as it is in gprof. Exact inclusive costs need a
//!   trace (a DCFG-trace replayed into stacks) or a format that states them
//!   ([`cfghub_model::ir::Edge::inclusive`], Callgrind's `calls=` cost lines): writers prefer those.
//!
//! Cost: `O(blocks + edges)` plus a sort of the call arcs.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::{names, routines};
use cfghub_model::ir::NO_INDEX;
use cfghub_model::ir::{BlockRef, NodeRef, Process, Profile, Routine};

/// A routine in the call graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallNode {
    /// Index of the image in its process.
    pub image: u32,
    /// Index into `analysis::routines::all(process)[image]`.
    pub routine: u32,
    /// The routine's entry block.
    pub entry: BlockRef,
    /// The symbol at the entry (`symbol`, `symbol+0xN`, or `image+0xOFFSET`).
    pub name: String,
    /// Instructions executed in the routine's own blocks (exact).
    pub self_instrs: u64,
    /// Instructions executed in the routine and everything it called (estimated; see the
    /// module documentation).
    pub inclusive_instrs: u64,
    /// Index into [`CallGraph::cycles`] when the routine is part of a recursion cycle of two
    /// or more routines.
    pub cycle: Option<u32>,
}

/// Calls from one call site to one routine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallArc {
    /// Index of the calling node in [`CallGraph::nodes`].
    pub caller: u32,
    /// Index of the called node in [`CallGraph::nodes`].
    pub callee: u32,
    /// The calling block (the source of the call edges).
    pub site: BlockRef,
    /// Calls made, over all threads.
    pub count: u64,
    /// The callee's inclusive instructions attributed to these calls (estimated; see the module
    /// documentation).
    pub inclusive_instrs: u64,
}

/// The call graph of one process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallGraph {
    /// One node per routine, images in order, routines in `routines::all` order.
    pub nodes: Vec<CallNode>,
    /// Arcs sorted by (caller, site, callee).
    pub arcs: Vec<CallArc>,
    /// Recursion cycles of two or more routines (strongly connected components), each a sorted
    /// list of node indices.
    pub cycles: Vec<Vec<u32>>,
    /// First node index of each image's routines.
    image_base: Vec<u32>,
    /// Node index of every block, per image (`u32::MAX` for a block in no routine).
    block_node: Vec<Vec<u32>>,
}

impl CallGraph {
    /// The node of the routine that contains block `b`.
    pub fn node_of(&self, b: BlockRef) -> Option<u32> {
        let n = *self.block_node.get(b.image as usize)?.get(b.block as usize)?;
        (n != u32::MAX).then_some(n)
    }

    /// The node of routine `routine` of image `image` (tests).
    #[cfg(test)]
    fn node_of_routine(&self, image: u32, routine: u32) -> Option<u32> {
        let base = *self.image_base.get(image as usize)?;
        let end = self.image_base.get(image as usize + 1).copied().unwrap_or(self.nodes.len() as u32);
        let n = base.checked_add(routine)?;
        (n < end).then_some(n)
    }

    /// Arcs leaving `node` (the arcs are sorted by caller).
    pub fn calls_from(&self, node: u32) -> &[CallArc] {
        let lo = self.arcs.partition_point(|a| a.caller < node);
        let hi = self.arcs.partition_point(|a| a.caller <= node);
        &self.arcs[lo..hi]
    }

    /// Total instructions executed over all nodes (the sum of self costs).
    pub fn total_instrs(&self) -> u64 {
        self.nodes.iter().fold(0u64, |a, n| a.saturating_add(n.self_instrs))
    }
}

/// Builds the call graph of `process`, discovering routines where the input has none.
pub fn build(profile: &Profile, process: &Process) -> CallGraph {
    build_with(profile, process, &routines::all(process))
}

/// Builds the call graph over routines computed already (`routines::all` or
/// `routines::all_recomputed`), so that a caller computing several analyses does it once.
pub fn build_with(profile: &Profile, process: &Process, routines: &[Cow<'_, [Routine]>]) -> CallGraph {
    let mut graph = nodes_with(profile, process, routines);
    add_arcs(&mut graph, process);
    inclusive(&mut graph);
    graph
}

/// The call graph's nodes and the node of every block, without arcs or inclusive costs (and
/// without the routines' dominators, [`routines::outlines`]): for a caller that takes the
/// calls and their costs from elsewhere (the stated inclusive costs of Callgrind's calls).
pub(crate) fn nodes_only(profile: &Profile, process: &Process) -> CallGraph {
    nodes_with(profile, process, &routines::outlines(process))
}

fn nodes_with(profile: &Profile, process: &Process, routines: &[Cow<'_, [Routine]>]) -> CallGraph {
    let mut graph = CallGraph::default();
    for (i, image) in process.images.iter().enumerate() {
        graph.image_base.push(graph.nodes.len() as u32);
        let mut block_node = vec![u32::MAX; image.blocks.len()];
        let index = names::SymbolIndex::new(image);
        let Some(rs) = routines.get(i) else {
            graph.block_node.push(block_node);
            continue;
        };
        for (r, routine) in rs.iter().enumerate() {
            let node = graph.nodes.len() as u32;
            let mut self_instrs = 0u64;
            for &b in &routine.nodes {
                if let Some(block) = image.blocks.get(b as usize) {
                    block_node[b as usize] = node;
                    self_instrs = self_instrs.saturating_add(block.executed_instrs());
                }
            }
            if let Some(slot) = block_node.get_mut(routine.entry as usize) {
                *slot = node;
            }
            let name = match image.blocks.get(routine.entry as usize) {
                Some(entry) => names::code_name(profile, image, &index, entry.offset),
                None => format!("{}#{}", names::image_base_name(profile, image), r),
            };
            graph.nodes.push(CallNode {
                image: i as u32,
                routine: r as u32,
                entry: BlockRef { image: i as u32, block: routine.entry },
                name,
                self_instrs,
                inclusive_instrs: 0,
                cycle: None,
            });
        }
        graph.block_node.push(block_node);
    }
    graph
}

/// The arcs of `graph`: the call edges between its routines, one per (caller, call site,
/// callee).
fn add_arcs(graph: &mut CallGraph, process: &Process) {
    let mut arcs: HashMap<(u32, BlockRef, u32), u64> = HashMap::new();
    for e in &process.edges {
        if !e.kind.is_call() {
            continue;
        }
        let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) else { continue };
        let (Some(caller), Some(callee)) = (graph.node_of(s), graph.node_of(t)) else { continue };
        let c = arcs.entry((caller, s, callee)).or_default();
        *c = c.saturating_add(e.total());
    }
    let mut arcs: Vec<CallArc> = arcs
        .into_iter()
        .map(|((caller, site, callee), count)| CallArc { caller, callee, site, count, inclusive_instrs: 0 })
        .collect();
    arcs.sort_unstable_by_key(|a| (a.caller, a.site, a.callee));
    graph.arcs = arcs;
}

/// Strongly connected components of the call graph (Tarjan, iterative). Tarjan's algorithm
/// closes a component only after every component it reaches, so the numbering is callees
/// first: component `k` only calls components numbered below `k`. Returns the component of
/// every node and the number of components.
fn components(n: usize, arcs: &[CallArc]) -> (Vec<u32>, usize) {
    // Adjacency in CSR form from the caller-sorted arcs.
    let mut start = vec![0u32; n + 1];
    for a in arcs {
        start[a.caller as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let targets: Vec<u32> = arcs.iter().map(|a| a.callee).collect();

    let mut index = vec![NO_INDEX; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![NO_INDEX; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut call: Vec<(u32, u32)> = Vec::new(); // (node, next arc position)
    let mut next_index = 0u32;
    let mut ncomp = 0usize;
    for root in 0..n as u32 {
        if index[root as usize] != NO_INDEX {
            continue;
        }
        call.push((root, start[root as usize]));
        index[root as usize] = next_index;
        low[root as usize] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(top) = call.last_mut() {
            let (v, pos) = *top;
            if pos < start[v as usize + 1] {
                top.1 += 1;
                let w = targets[pos as usize];
                if index[w as usize] == NO_INDEX {
                    index[w as usize] = next_index;
                    low[w as usize] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w as usize] = true;
                    call.push((w, start[w as usize]));
                } else if on_stack[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
                continue;
            }
            call.pop();
            if let Some(&(parent, _)) = call.last() {
                low[parent as usize] = low[parent as usize].min(low[v as usize]);
            }
            if low[v as usize] == index[v as usize] {
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    comp[w as usize] = ncomp as u32;
                    if w == v {
                        break;
                    }
                }
                ncomp += 1;
            }
        }
    }
    (comp, ncomp)
}

fn share(total: u64, part: u64, whole: u64) -> u64 {
    if whole == 0 {
        return 0;
    }
    ((total as u128 * part as u128) / whole as u128).min(u64::MAX as u128) as u64
}

/// Fills the inclusive costs of nodes and arcs (see the module documentation for the rule).
fn inclusive(g: &mut CallGraph) {
    let n = g.nodes.len();
    let (comp, ncomp) = components(n, &g.arcs);
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); ncomp];
    for v in 0..n {
        members[comp[v] as usize].push(v as u32);
    }
    // Cycles: components of two or more routines.
    for m in &members {
        if m.len() > 1 {
            let id = g.cycles.len() as u32;
            for &v in m {
                g.nodes[v as usize].cycle = Some(id);
            }
            g.cycles.push(m.clone());
        }
    }
    // Calls into each component and each node from outside its component, and all calls into
    // each node.
    let mut ext_in_comp = vec![0u64; ncomp];
    let mut ext_in_node = vec![0u64; n];
    let mut all_in_node = vec![0u64; n];
    // Arcs leaving each component, grouped by component.
    let mut out_arcs: Vec<Vec<u32>> = vec![Vec::new(); ncomp];
    for (i, a) in g.arcs.iter().enumerate() {
        let (cc, ce) = (comp[a.caller as usize], comp[a.callee as usize]);
        all_in_node[a.callee as usize] = all_in_node[a.callee as usize].saturating_add(a.count);
        if cc != ce {
            ext_in_comp[ce as usize] = ext_in_comp[ce as usize].saturating_add(a.count);
            ext_in_node[a.callee as usize] = ext_in_node[a.callee as usize].saturating_add(a.count);
            out_arcs[cc as usize].push(i as u32);
        }
    }
    // Tarjan numbers components callees first: component k only calls components < k.
    let mut comp_incl = vec![0u64; ncomp];
    for c in 0..ncomp {
        let mut incl =
            members[c].iter().fold(0u64, |a, &v| a.saturating_add(g.nodes[v as usize].self_instrs));
        let mut own_out: HashMap<u32, u64> = HashMap::new();
        for &ai in &out_arcs[c] {
            let a = &g.arcs[ai as usize];
            let ce = comp[a.callee as usize] as usize;
            let s = share(comp_incl[ce], a.count, ext_in_comp[ce]);
            g.arcs[ai as usize].inclusive_instrs = s;
            incl = incl.saturating_add(s);
            let o = own_out.entry(g.arcs[ai as usize].caller).or_default();
            *o = o.saturating_add(s);
        }
        comp_incl[c] = incl;
        for &v in &members[c] {
            let node = &g.nodes[v as usize];
            let own = node.self_instrs.saturating_add(own_out.get(&v).copied().unwrap_or(0));
            let value = if ext_in_comp[c] == 0 {
                incl
            } else {
                share(incl, ext_in_node[v as usize], ext_in_comp[c]).max(own).min(incl)
            };
            g.nodes[v as usize].inclusive_instrs = value;
        }
    }
    // Arcs inside a component: the callee's inclusive cost times the arc's share of its calls.
    for a in g.arcs.iter_mut() {
        if comp[a.caller as usize] == comp[a.callee as usize] {
            let callee = a.callee as usize;
            a.inclusive_instrs = share(g.nodes[callee].inclusive_instrs, a.count, all_in_node[callee]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Block, Edge, EdgeKind, Image, Symbol};

    /// A model of one image whose routines are given by `routines` as (name, [(instrs, count)]
    /// per block]); `calls` are (caller routine, block index in it, callee routine, count).
    /// Every routine's blocks are chained by fall-throughs.
    fn model(
        routines: &[(&str, &[(u64, u64)])],
        calls: &[(usize, usize, usize, u64)],
    ) -> (Profile, Vec<Vec<u32>>) {
        let mut image = Image::default();
        let mut edges = Vec::new();
        let mut blocks_of = Vec::new();
        let mut offset = 0x1000u64;
        for (name, blocks) in routines {
            image.symbols.push(Symbol {
                name: name.to_string(),
                offset: Some(offset),
                size: Some(16 * blocks.len() as u64),
                file: None,
            });
            let mut mine = Vec::new();
            for &(instrs, count) in blocks.iter() {
                let b = image.blocks.len() as u32;
                image.blocks.push(Block {
                    id: 10 + b as u64,
                    offset,
                    size: 16,
                    num_instrs: instrs as u32,
                    last_instr_offset: 12,
                    count: Some(count),
                });
                offset += 16;
                if let Some(&prev) = mine.last() {
                    edges.push(Edge {
                        source: NodeRef::Block(BlockRef { image: 0, block: prev }),
                        target: NodeRef::Block(BlockRef { image: 0, block: b }),
                        kind: EdgeKind::FallThrough,
                        counts: vec![count].into(),
                        ..Edge::default()
                    });
                }
                mine.push(b);
            }
            blocks_of.push(mine);
        }
        for &(caller, site, callee, count) in calls {
            edges.push(Edge {
                source: NodeRef::Block(BlockRef { image: 0, block: blocks_of[caller][site] }),
                target: NodeRef::Block(BlockRef { image: 0, block: blocks_of[callee][0] }),
                kind: EdgeKind::DirectCall,
                counts: vec![count].into(),
                ..Edge::default()
            });
        }
        let process = Process { pid: 1, images: vec![image], edges, ..Process::default() };
        (Profile { processes: vec![process], ..Profile::default() }, blocks_of)
    }

    fn node<'a>(g: &'a CallGraph, name: &str) -> &'a CallNode {
        g.nodes.iter().find(|n| n.name == name).unwrap_or_else(|| panic!("no node {name}"))
    }

    fn arc(g: &CallGraph, from: &str, to: &str) -> CallArc {
        let (f, t) = (g.nodes.iter().position(|n| n.name == from), g.nodes.iter().position(|n| n.name == to));
        let (f, t) = (f.unwrap() as u32, t.unwrap() as u32);
        let found: Vec<&CallArc> = g.arcs.iter().filter(|a| a.caller == f && a.callee == t).collect();
        assert_eq!(found.len(), 1, "{from} -> {to}");
        found[0].clone()
    }

    /// The nodes of `nodes_only` are those of `build`, without inclusive costs or cycles, and
    /// every block is in the same node.
    fn assert_same_nodes(p: &Profile) {
        let process = &p.processes[0];
        let (whole, bare) = (build(p, process), nodes_only(p, process));
        let outline = |n: &CallNode| (n.image, n.routine, n.entry, n.name.clone(), n.self_instrs);
        assert!(!whole.nodes.is_empty());
        assert_eq!(
            whole.nodes.iter().map(outline).collect::<Vec<_>>(),
            bare.nodes.iter().map(outline).collect::<Vec<_>>()
        );
        assert!(
            bare.arcs.is_empty() && bare.nodes.iter().all(|n| n.inclusive_instrs == 0 && n.cycle.is_none())
        );
        for (i, image) in process.images.iter().enumerate() {
            for b in 0..image.blocks.len() as u32 {
                let at = BlockRef { image: i as u32, block: b };
                assert_eq!(whole.node_of(at), bare.node_of(at));
            }
        }
    }

    #[test]
    fn nodes_alone_are_the_graphs_nodes_whether_routines_are_found_or_given() {
        let (mut p, _) = model(
            &[("main", &[(5, 1), (5, 1)]), ("a", &[(10, 1)]), ("b", &[(20, 1)]), ("d", &[(10, 4)])],
            &[(0, 0, 1, 1), (0, 1, 2, 1), (1, 0, 3, 1), (2, 0, 3, 3)],
        );
        assert_same_nodes(&p);
        // Routines given without dominators (as Callgrind gives them) are taken as they are.
        let given = crate::routines::all(&p.processes[0])[0].to_vec();
        let image = &mut p.processes[0].images[0];
        image.routines =
            Some(given.into_iter().map(|r| Routine { idoms: Vec::new(), loops: Vec::new(), ..r }).collect());
        assert_same_nodes(&p);
    }

    #[test]
    fn diamond_splits_the_shared_callee_by_call_counts() {
        // main calls a and b once; a calls d once, b calls d three times.
        let (p, _) = model(
            &[("main", &[(5, 1), (5, 1)]), ("a", &[(10, 1)]), ("b", &[(20, 1)]), ("d", &[(10, 4)])],
            &[(0, 0, 1, 1), (0, 1, 2, 1), (1, 0, 3, 1), (2, 0, 3, 3)],
        );
        let g = build(&p, &p.processes[0]);
        assert_eq!(g.nodes.len(), 4);
        assert_eq!(node(&g, "d").self_instrs, 40);
        assert_eq!(node(&g, "d").inclusive_instrs, 40);
        assert_eq!(arc(&g, "a", "d").inclusive_instrs, 10);
        assert_eq!(arc(&g, "b", "d").inclusive_instrs, 30);
        assert_eq!(node(&g, "a").inclusive_instrs, 20);
        assert_eq!(node(&g, "b").inclusive_instrs, 50);
        assert_eq!(node(&g, "main").inclusive_instrs, 80);
        assert_eq!(node(&g, "main").inclusive_instrs, g.total_instrs());
        assert!(g.cycles.is_empty());
        // Two call sites in main make two arcs with their own site.
        let from_main = g.calls_from(node_index(&g, "main"));
        assert_eq!(from_main.len(), 2);
        assert_ne!(from_main[0].site, from_main[1].site);
    }

    fn node_index(g: &CallGraph, name: &str) -> u32 {
        g.nodes.iter().position(|n| n.name == name).unwrap() as u32
    }

    #[test]
    fn self_recursion_is_never_counted_twice() {
        // main calls fact once; fact calls itself 9 times (10 activations of 3 instructions).
        let (p, blocks) = model(&[("main", &[(4, 1)]), ("fact", &[(3, 10)])], &[(0, 0, 1, 1), (1, 0, 1, 9)]);
        let g = build(&p, &p.processes[0]);
        assert_eq!(node(&g, "fact").self_instrs, 30);
        assert_eq!(node(&g, "fact").inclusive_instrs, 30);
        assert_eq!(arc(&g, "main", "fact").inclusive_instrs, 30);
        assert_eq!(arc(&g, "fact", "fact").inclusive_instrs, 27);
        assert_eq!(node(&g, "main").inclusive_instrs, 34);
        assert!(g.cycles.is_empty(), "a self-recursive routine is no cycle");
        assert_eq!(node(&g, "fact").cycle, None);
        // Block lookup.
        let b = BlockRef { image: 0, block: blocks[1][0] };
        assert_eq!(g.node_of(b), Some(node_index(&g, "fact")));
        assert_eq!(g.node_of_routine(0, g.nodes[1].routine), Some(1));
    }

    #[test]
    fn mutual_recursion_forms_one_cycle_counted_once() {
        // main -> a (1); a -> b (5); b -> a (4); b -> leaf (5).
        let (p, _) = model(
            &[("main", &[(1, 1)]), ("a", &[(2, 5)]), ("b", &[(4, 5)]), ("leaf", &[(10, 5)])],
            &[(0, 0, 1, 1), (1, 0, 2, 5), (2, 0, 1, 4), (2, 0, 3, 5)],
        );
        let g = build(&p, &p.processes[0]);
        assert_eq!(g.cycles.len(), 1);
        let cycle: Vec<&str> = g.cycles[0].iter().map(|&v| g.nodes[v as usize].name.as_str()).collect();
        assert_eq!(cycle, ["a", "b"]);
        assert_eq!(node(&g, "a").cycle, Some(0));
        assert_eq!(node(&g, "main").cycle, None);
        // The cycle: 10 + 20 self, 50 below it.
        assert_eq!(arc(&g, "main", "a").inclusive_instrs, 80);
        assert_eq!(node(&g, "main").inclusive_instrs, 81);
        assert_eq!(node(&g, "main").inclusive_instrs, g.total_instrs());
        // a is entered from outside: the whole cycle.
        assert_eq!(node(&g, "a").inclusive_instrs, 80);
        // b is only called inside the cycle: at least its own work and what it calls outside.
        assert_eq!(node(&g, "b").inclusive_instrs, 70);
        // Arcs inside the cycle never exceed the callee's inclusive cost.
        assert_eq!(arc(&g, "a", "b").inclusive_instrs, 70);
        assert_eq!(arc(&g, "b", "a").inclusive_instrs, 64);
        for n in &g.nodes {
            assert!(n.inclusive_instrs >= n.self_instrs);
            assert!(n.inclusive_instrs <= g.total_instrs());
        }
    }

    #[test]
    fn calls_from_special_nodes_and_unknown_blocks_make_no_arc() {
        let (mut p, _) = model(&[("main", &[(1, 1)]), ("f", &[(1, 1)])], &[(0, 0, 1, 1)]);
        let proc0 = &mut p.processes[0];
        proc0.edges.push(Edge {
            source: NodeRef::Start,
            target: NodeRef::Block(BlockRef { image: 0, block: 0 }),
            kind: EdgeKind::Call,
            counts: vec![1].into(),
            ..Edge::default()
        });
        proc0.edges.push(Edge {
            source: NodeRef::Block(BlockRef { image: 0, block: 0 }),
            target: NodeRef::Block(BlockRef { image: 7, block: 0 }),
            kind: EdgeKind::Call,
            counts: vec![1].into(),
            ..Edge::default()
        });
        let g = build(&p, &p.processes[0]);
        assert_eq!(g.arcs.len(), 1);
        assert_eq!(g.node_of(BlockRef { image: 7, block: 0 }), None);
    }
}
