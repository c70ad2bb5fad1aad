//! Stacks estimated from a call graph, for a model with blocks and calls but no stacks.
//!
//! # What is exact and what is estimated
//! - **Frames are the source's functions.** Where the model has cost rows that name their
//!   function (Callgrind's `fn=` lines), each row's cost belongs to the function it names,
//!   whatever routine its address fell into in the block rebuild: code that two names share,
//!   or that a name's lines do not cover, stays with the name the source gave it. Recursion
//!   levels (`fib'2`) are their base function's frames. Where the model has no cost rows (a
//!   DCFG), a function is a routine and its cost the instructions its blocks executed.
//! - **Self costs are exact, per event:** the stacks that end in a function add up to its
//!   self cost, and all stacks to the profile's total. Cost on no call path (code run before
//!   `main`, a function nothing calls, a routine entered only by recursion, calls past the
//!   path limit) is a stack of its own frame.
//! - **The paths are an estimate.** A function's self cost is shared among the call paths
//!   that reach it in proportion to the flow each path brings: a root starts with all its
//!   cost, and at each function the flow splits between the function itself and its calls to
//!   functions not already on the path (calls back into the path are recursion, and are cut),
//!   in proportion to the calls' inclusive costs: stated ones where the source gives them
//!   (Callgrind's `calls=` cost lines), else the call graph's estimate
//!   ([`crate::callgraph`]), each event on its own.

use std::collections::HashMap;

use crate::callgraph::{self, CallGraph};
use crate::names::{self, SymbolIndex};
use cfghub_model::ir::{Event, FrameId, NodeRef, Process, Profile, StackValue, Stacks, NO_INDEX};

/// The event of stacks estimated from blocks alone: instructions executed
/// (`num_instrs × count` of blocks).
pub(crate) const ESTIMATED_EVENT: &str = "instructions";

/// What a function of the estimate is: a symbol of the source (recursion levels folded), a
/// routine without a symbol, or code known only by a name (cost rows outside every symbol).
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Symbol(u32, u32),
    Routine(u32),
    Name(String),
}

/// Calls between two functions, summed over call sites.
struct Arc {
    caller: u32,
    callee: u32,
    /// Calls made.
    count: u64,
    /// The callee's inclusive cost these calls account for, per event.
    weight: Vec<f64>,
}

/// The function-level graph the estimate walks.
#[derive(Default)]
struct Functions {
    names: Vec<String>,
    /// Self cost of every function, per event.
    costs: Vec<Vec<u64>>,
    by_key: HashMap<Key, u32>,
    /// Arcs sorted by caller.
    arcs: Vec<Arc>,
    events: usize,
}

impl Functions {
    fn node(&mut self, key: Key, name: impl FnOnce() -> String) -> u32 {
        if let Some(&n) = self.by_key.get(&key) {
            return n;
        }
        let n = self.names.len() as u32;
        self.names.push(name());
        self.costs.push(vec![0; self.events]);
        self.by_key.insert(key, n);
        n
    }

    fn add_cost(&mut self, node: u32, values: impl IntoIterator<Item = u64>) {
        for (slot, v) in self.costs[node as usize].iter_mut().zip(values) {
            *slot = slot.saturating_add(v);
        }
    }

    fn calls_from(&self, node: u32) -> &[Arc] {
        let lo = self.arcs.partition_point(|a| a.caller < node);
        let hi = self.arcs.partition_point(|a| a.caller <= node);
        &self.arcs[lo..hi]
    }
}

/// Whether the estimate takes its costs from the model's cost rows (their events), rather
/// than from block executions (one event, [`ESTIMATED_EVENT`]).
pub(crate) fn uses_cost_rows(profile: &Profile) -> bool {
    !profile.events.is_empty()
        && profile.processes.iter().any(|p| p.images.iter().any(|i| !i.costs.is_empty()))
}

/// The functions of one process: nodes, self costs and arcs.
fn functions(profile: &Profile, process: &Process, graph: &CallGraph, from_rows: bool) -> Functions {
    let mut f =
        Functions { events: if from_rows { profile.events.len() } else { 1 }, ..Functions::default() };
    let bases = names::recursion_bases(process);
    let indexes: Vec<SymbolIndex> = process.images.iter().map(SymbolIndex::new).collect();
    // The function of every routine of the call graph.
    let mut of_routine = Vec::with_capacity(graph.nodes.len());
    for (r, node) in graph.nodes.iter().enumerate() {
        let (i, image) = (node.image as usize, &process.images[node.image as usize]);
        let entry = image.blocks.get(node.entry.block as usize).filter(|_| !image.no_addresses);
        let symbol = if from_rows {
            entry.and_then(|b| indexes[i].covering(b.offset)).map(|s| bases[i][s as usize])
        } else {
            None
        };
        of_routine.push(match symbol {
            Some(s) => f.node(Key::Symbol(i as u32, s), || image.symbols[s as usize].name.clone()),
            None => f.node(Key::Routine(r as u32), || node.name.clone()),
        });
    }
    if from_rows {
        for (i, image) in process.images.iter().enumerate() {
            // The node of each symbol, looked up once (a large profile has millions of rows).
            let mut of_symbol = vec![u32::MAX; image.symbols.len()];
            for row in image.costs.iter() {
                let symbol = row.symbol.or_else(|| row.offset.and_then(|o| indexes[i].covering(o)));
                let node = match (symbol, row.offset) {
                    (Some(s), _) if of_symbol[s as usize] != u32::MAX => of_symbol[s as usize],
                    (Some(s), _) => {
                        let base = bases[i][s as usize];
                        let node =
                            f.node(Key::Symbol(i as u32, base), || image.symbols[base as usize].name.clone());
                        of_symbol[s as usize] = node;
                        node
                    }
                    (None, Some(o)) => {
                        let name = names::code_name(profile, image, &indexes[i], o);
                        f.node(Key::Name(name.clone()), || name)
                    }
                    (None, None) => {
                        let name = names::image_base_name(profile, image);
                        f.node(Key::Name(name.clone()), || name)
                    }
                };
                f.add_cost(node, row.values.iter().copied());
            }
        }
    } else {
        for (r, node) in graph.nodes.iter().enumerate() {
            f.add_cost(of_routine[r], [node.self_instrs]);
        }
        // Blocks in no routine: under the name of their code.
        for (i, image) in process.images.iter().enumerate() {
            for (b, block) in image.blocks.iter().enumerate() {
                let at = cfghub_model::ir::BlockRef { image: i as u32, block: b as u32 };
                if graph.node_of(at).is_some() || block.executed_instrs() == 0 {
                    continue;
                }
                let name = if image.no_addresses {
                    names::image_base_name(profile, image)
                } else {
                    names::code_name(profile, image, &indexes[i], block.offset)
                };
                let node = f.node(Key::Name(name.clone()), || name);
                f.add_cost(node, [block.executed_instrs()]);
            }
        }
    }
    f.arcs = arcs(process, graph, &of_routine, &bases, &mut f, from_rows);
    f
}

/// Whether the arcs between functions come from the inclusive costs the calls state (see
/// [`arcs`]).
fn states_inclusive_costs(process: &Process, from_rows: bool) -> bool {
    from_rows && process.edges.iter().any(|e| e.kind.is_call() && !e.inclusive().is_empty())
}

/// The arcs between functions: from call edges with the inclusive costs they state, when the
/// model's costs are cost rows and its calls state them; else from the call graph's arcs and
/// their estimated inclusive instructions. Calls of a function to itself make no arc.
fn arcs(
    process: &Process,
    graph: &CallGraph,
    of_routine: &[u32],
    bases: &[Vec<u32>],
    f: &mut Functions,
    from_rows: bool,
) -> Vec<Arc> {
    let mut merged: HashMap<(u32, u32), (u64, Vec<f64>)> = HashMap::new();
    let events = f.events;
    let mut add = |caller: u32, callee: u32, count: u64, weight: &mut dyn Iterator<Item = f64>| {
        if caller == callee {
            return;
        }
        let slot = merged.entry((caller, callee)).or_insert_with(|| (0, vec![0.0; events]));
        slot.0 = slot.0.saturating_add(count);
        for (w, v) in slot.1.iter_mut().zip(weight) {
            *w += v;
        }
    };
    if states_inclusive_costs(process, from_rows) {
        let function_of = |node: NodeRef, f: &mut Functions| -> Option<u32> {
            match node {
                NodeRef::Block(b) => graph.node_of(b).map(|r| of_routine[r as usize]),
                NodeRef::Symbol(s) => {
                    let image = process.images.get(s.image as usize)?;
                    let base = *bases.get(s.image as usize)?.get(s.symbol as usize)?;
                    let name = &image.symbols.get(base as usize)?.name;
                    Some(f.node(Key::Symbol(s.image, base), || name.clone()))
                }
                _ => None,
            }
        };
        for e in process.edges.iter().filter(|e| e.kind.is_call()) {
            let (Some(caller), Some(callee)) = (function_of(e.source, f), function_of(e.target, f)) else {
                continue;
            };
            add(caller, callee, e.total(), &mut e.inclusive().iter().map(|&v| v as f64));
        }
    } else {
        for a in &graph.arcs {
            let (caller, callee) = (of_routine[a.caller as usize], of_routine[a.callee as usize]);
            add(caller, callee, a.count, &mut std::iter::repeat(a.inclusive_instrs as f64));
        }
    }
    let mut arcs: Vec<Arc> = merged
        .into_iter()
        .map(|((caller, callee), (count, weight))| Arc { caller, callee, count, weight })
        .collect();
    arcs.sort_unstable_by_key(|a| (a.caller, a.callee));
    arcs
}

/// Stacks estimated from the call graph of every process (see the module documentation).
/// Returns a profile with the same meta data and processes (pids) holding only the stacks,
/// with the events of the model's cost rows ([`uses_cost_rows`]) or the one event
/// [`ESTIMATED_EVENT`], and whether the walk stopped at `max_stacks` paths (the functions
/// below are stacks of their own then).
pub fn estimate(profile: &Profile, max_stacks: usize) -> (Profile, bool) {
    Graphs::of(profile).walk(max_stacks)
}

/// [`estimate`] for a caller that needs nothing more of the model: the model is given up as
/// soon as the functions' graphs are taken from it, so that it and the walk's call paths are
/// never in memory together (the 21 MB `cc1plus` Callgrind profile to folded stacks: 105.5 ->
/// 78.9-81.6 MB at the peak, where reading it alone peaks).
pub(crate) fn estimate_owned(profile: Profile, max_stacks: usize) -> (Profile, bool) {
    let graphs = Graphs::of(&profile);
    drop(profile);
    graphs.walk(max_stacks)
}

/// What the walk needs of the model: its meta data and events, and each process's function
/// graph.
struct Graphs {
    shell: Profile,
    processes: Vec<(u64, Functions)>,
}

impl Graphs {
    fn of(profile: &Profile) -> Graphs {
        let from_rows = uses_cost_rows(profile);
        let events = if from_rows { profile.events.clone() } else { vec![Event::new(ESTIMATED_EVENT)] };
        let shell = Profile { meta: profile.meta.clone(), events, ..Profile::default() };
        let processes = profile
            .processes
            .iter()
            .map(|process| {
                // Calls that state their inclusive costs need the graph's routines alone.
                let graph = if states_inclusive_costs(process, from_rows) {
                    callgraph::nodes_only(profile, process)
                } else {
                    callgraph::build(profile, process)
                };
                (process.pid, functions(profile, process, &graph, from_rows))
            })
            .collect();
        Graphs { shell, processes }
    }

    fn walk(self, max_stacks: usize) -> (Profile, bool) {
        let Graphs { shell: mut out, processes } = self;
        let mut truncated = false;
        for (pid, f) in processes {
            let frame_of: Vec<FrameId> = f.names.iter().map(|n| out.frames.intern(n)).collect();
            let mut walk = Walk { f: &f, paths: Paths::default(), max_stacks, truncated: false };
            walk.all();
            truncated |= walk.truncated;
            let Walk { paths, .. } = walk;
            let stacks = share_self_costs(&f, paths, &frame_of);
            out.processes.push(Process { pid, stacks, ..Process::default() });
        }
        (out, truncated)
    }
}

/// The call paths found by the walk (a large program has a million), and the flow each
/// brings to its last function, per event.
///
/// The walk goes depth first, so each path extends one walked before: the paths are kept as
/// the tree of the walk, one entry (function, entry it extends) per path walked, 8 bytes
/// however deep. A list of each path's functions took 4 bytes per frame: 0.8 GB of the
/// `cc1plus` profile's million paths, some 100 calls deep.
#[derive(Default)]
struct Paths {
    /// The tree: the last function of each walked path, and the entry of the path it extends
    /// ([`NO_INDEX`] for none).
    function: Vec<u32>,
    parent: Vec<u32>,
    /// The entry of each path found (one that ends in a function with a cost of its own).
    found: Vec<u32>,
    /// `events` values per path found.
    flows: Vec<f64>,
}

impl Paths {
    /// Paths found.
    fn len(&self) -> usize {
        self.found.len()
    }

    /// The entry of the path `parent` extended by `function`.
    fn walk(&mut self, parent: u32, function: u32) -> u32 {
        self.function.push(function);
        self.parent.push(parent);
        (self.function.len() - 1) as u32
    }

    /// Path `entry` is one found, with its flow.
    fn push(&mut self, entry: u32, flow: &[f64]) {
        self.found.push(entry);
        self.flows.extend_from_slice(flow);
    }

    /// The last function of path `k`.
    fn last(&self, k: usize) -> u32 {
        self.function[self.found[k] as usize]
    }

    /// The functions of path `k`, root first.
    fn nodes(&self, k: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = self.found[k];
        while at != NO_INDEX {
            out.push(self.function[at as usize]);
            at = self.parent[at as usize];
        }
        out.reverse();
        out
    }
}

struct Walk<'a> {
    f: &'a Functions,
    paths: Paths,
    max_stacks: usize,
    truncated: bool,
}

impl Walk<'_> {
    /// Walks from every root (a function no call reaches; then, for recursion cycles nothing
    /// outside calls, their first function), each root's flow being its self cost plus the
    /// inclusive cost of its calls.
    fn all(&mut self) {
        let n = self.f.names.len();
        let mut has_caller = vec![false; n];
        for a in &self.f.arcs {
            // A call never made (count 0) makes no caller: the loader's entry has such arcs.
            if a.count > 0 {
                has_caller[a.callee as usize] = true;
            }
        }
        let mut reached = vec![false; n];
        let mut roots: Vec<u32> = (0..n as u32).filter(|&v| !has_caller[v as usize]).collect();
        loop {
            for &r in &roots {
                self.mark_reachable(r, &mut reached);
                let mut flow = self.f.costs[r as usize].iter().map(|&c| c as f64).collect::<Vec<f64>>();
                for a in self.f.calls_from(r) {
                    for (slot, w) in flow.iter_mut().zip(&a.weight) {
                        *slot += w;
                    }
                }
                self.visit(&mut vec![r], NO_INDEX, flow);
            }
            match (0..n as u32).find(|&v| !reached[v as usize]) {
                Some(v) => roots = vec![v],
                None => break,
            }
        }
    }

    fn mark_reachable(&self, root: u32, reached: &mut [bool]) {
        let mut todo = vec![root];
        while let Some(v) = todo.pop() {
            if std::mem::replace(&mut reached[v as usize], true) {
                continue;
            }
            todo.extend(self.f.calls_from(v).iter().map(|a| a.callee).filter(|&c| !reached[c as usize]));
        }
    }

    /// Walks `path`, which extends the walked path `parent` by its last function.
    fn visit(&mut self, path: &mut Vec<u32>, parent: u32, flow: Vec<f64>) {
        if flow.iter().all(|&x| x <= 0.0) {
            return;
        }
        let v = *path.last().expect("paths are never empty");
        let entry = self.paths.walk(parent, v);
        let calls: Vec<&Arc> = self
            .f
            .calls_from(v)
            .iter()
            .filter(|a| !path.contains(&a.callee) && a.weight.iter().any(|&w| w > 0.0))
            .collect();
        let own = &self.f.costs[v as usize];
        let whole: Vec<f64> =
            (0..flow.len()).map(|e| own[e] as f64 + calls.iter().map(|a| a.weight[e]).sum::<f64>()).collect();
        let full = self.paths.len() + calls.len() >= self.max_stacks;
        let children: Vec<(u32, Vec<f64>)> = if full {
            self.truncated |= !calls.is_empty();
            Vec::new()
        } else {
            calls
                .iter()
                .map(|a| {
                    let share = (0..flow.len())
                        .map(|e| if whole[e] > 0.0 { flow[e] * a.weight[e] / whole[e] } else { 0.0 })
                        .collect();
                    (a.callee, share)
                })
                .collect()
        };
        if own.iter().any(|&c| c > 0) {
            self.paths.push(entry, &flow);
        }
        for (callee, share) in children {
            path.push(callee);
            self.visit(path, entry, share);
            path.pop();
        }
    }
}

/// The stacks: every function's self cost shared among the paths that end in it in proportion
/// to their flows, event by event, in whole units that add up to the self cost exactly
/// (largest remainders); a function's cost that no path brings flow to is a stack of its own.
///
/// Each path's flows are replaced by its whole units in place (a path's flow for an event is
/// read only while its last function's cost for that event is shared), and the paths that end
/// in each function are one list ordered by function: beside the paths of the `cc1plus`
/// profile's million, a second list of values and a list per function took 10 MB more.
fn share_self_costs(f: &Functions, mut paths: Paths, frame_of: &[FrameId]) -> Stacks {
    let n = f.names.len();
    let events = f.events;
    // The paths ending in function `v`: `by_last[first[v]..first[v + 1]]`, in path order.
    let mut first = vec![0u32; n + 1];
    for k in 0..paths.len() {
        first[paths.last(k) as usize + 1] += 1;
    }
    for v in 0..n {
        first[v + 1] += first[v];
    }
    let mut by_last = vec![0u32; paths.len()];
    let mut next = first.clone();
    for k in 0..paths.len() {
        let slot = &mut next[paths.last(k) as usize];
        by_last[*slot as usize] = k as u32;
        *slot += 1;
    }
    drop(next);
    let mut stacks = Stacks::with_width(events);
    for v in 0..n {
        let ends = &by_last[first[v] as usize..first[v + 1] as usize];
        for e in 0..events {
            let values = &mut paths.flows;
            let at = |k: u32| k as usize * events + e;
            let cost = f.costs[v][e];
            let sum: f64 = ends.iter().map(|&k| values[at(k)].max(0.0)).sum();
            if cost == 0 || sum <= 0.0 {
                ends.iter().for_each(|&k| values[at(k)] = 0.0);
            }
            if cost == 0 {
                continue;
            }
            if sum <= 0.0 {
                // On no call path: a stack of its own frame.
                let mut own = vec![0; events];
                own[e] = StackValue::from(cost);
                stacks.push(&[frame_of[v]], None, &own);
                continue;
            }
            let shares: Vec<f64> = ends.iter().map(|&k| cost as f64 * values[at(k)].max(0.0) / sum).collect();
            for (&k, whole) in ends.iter().zip(whole_units(&shares, cost)) {
                values[at(k)] = whole as f64;
            }
        }
    }
    // Paths whose shares all rounded to nothing make no stack.
    for (k, v) in paths.flows.chunks(events.max(1)).enumerate().take(paths.len()) {
        if v.iter().any(|&x| x != 0.0) {
            let frames: Vec<FrameId> = paths.nodes(k).iter().map(|&p| frame_of[p as usize]).collect();
            // Whole units (the shares above), exact as integers.
            let values: Vec<StackValue> = v.iter().map(|&x| x as StackValue).collect();
            stacks.push(&frames, None, &values);
        }
    }
    stacks
}

/// Whole numbers near `shares` that add up to `total` (largest-remainder rounding).
fn whole_units(shares: &[f64], total: u64) -> Vec<u64> {
    let mut out: Vec<u64> = shares.iter().map(|s| s.floor().max(0.0) as u64).collect();
    let mut missing = total.saturating_sub(out.iter().sum());
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| {
        (shares[b] - shares[b].floor()).total_cmp(&(shares[a] - shares[a].floor())).then(a.cmp(&b))
    });
    // Floors may fall short by up to one per share; rounding error of the shares by a little
    // more: hand out whole units round the order until none is missing.
    while missing > 0 && !order.is_empty() {
        for &k in &order {
            if missing == 0 {
                break;
            }
            out[k] += 1;
            missing -= 1;
        }
    }
    // Shares summing past the total through rounding error: take back from the largest.
    let mut excess = out.iter().sum::<u64>().saturating_sub(total);
    while excess > 0 {
        let k = (0..out.len()).max_by_key(|&k| out[k]).expect("shares exist when there is excess");
        let take = excess.min(out[k]);
        out[k] -= take;
        excess -= take;
    }
    out
}
