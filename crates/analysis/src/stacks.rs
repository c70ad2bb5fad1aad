//! Stacks: what call-path profiles (folded stacks, DTrace, perf) say about functions, and
//! stacks for models that have none.
//!
//! [`function_level`] turns a process's stacks into a function-level profile that
//! function-level writers (Callgrind) express directly:
//! - one symbol per distinct frame name (in one image without a file), in its function's
//!   source file when the stacks' format names one (pprof `Function.filename`), its self
//!   cost at the function's first line when known (`start_line`);
//! - **self cost**: each stack's values go to its leaf frame, exactly;
//! - **call edges** between [`NodeRef::Symbol`]s, one per distinct caller->callee pair seen on
//!   any stack, with the **inclusive cost**: the sum of the values of the stacks on which the
//!   pair occurs, each stack counted *once per distinct pair* however often the pair repeats on
//!   it, so recursion (`a;b;a;b`) never counts a sample twice. The edge's count is the number
//!   of samples (first event) whose stack holds the pair: sampling does not see calls, only
//!   that a call was under way.
//!
//! Stack values are exact integers (of a decimal scale per event) and costs whole units: sums
//! are exact and rounded once per symbol or edge when the values have decimals.

use std::borrow::Cow;
use std::collections::HashMap;

mod estimate;
mod flat;

pub use estimate::estimate;
pub(crate) use estimate::{estimate_owned, ESTIMATED_EVENT};
pub use flat::{FlatStacks, Frame};

use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{
    power_of_ten, rounded, Cost, Edge, EdgeDetails, EdgeKind, FrameId, Image, Label, NodeRef, Process,
    Profile, StackValue, Stacks, Symbol, SymbolRef, NO_INDEX,
};

/// A non-negative sum of stack values as a cost: rounded to whole units once (fractional
/// values from folded stacks), negative sums (differential profiles) as 0, beyond `u64` as
/// its largest value.
fn to_cost(v: StackValue, decimals: u8) -> u64 {
    let whole = rounded(v, decimals);
    u64::try_from(whole.max(0)).unwrap_or(u64::MAX)
}

/// The stacks with a negative value in one of `columns` (a difference profile: a comparison's
/// differences), over every process: writers of counts write them as 0 and say so.
pub fn negative_stacks(profile: &Profile, columns: &[usize]) -> usize {
    profile
        .processes
        .iter()
        .map(|p| {
            p.stacks
                .samples()
                .filter(|s| columns.iter().any(|&e| s.values.get(e).is_some_and(|&v| v < 0)))
                .count()
        })
        .sum()
}

/// The function-level view of a process's stacks: one image whose symbols are the frame names
/// (in order of first appearance), self costs per leaf symbol, and call edges with inclusive
/// costs. `events` is the number of events in the profile ([`cfghub_model::ir::Profile::events`]).
pub fn function_level(profile: &Profile, process: &Process) -> Process {
    let events = profile.events.len();
    let stacks = &process.stacks;
    let decimals = stacks.decimals(0..events);
    let mut symbol_of: HashMap<FrameId, u32> = HashMap::new();
    let mut symbols: Vec<Symbol> = Vec::new();
    let mut self_cost: Vec<Vec<StackValue>> = Vec::new();
    // The first line of each symbol's function, where its self cost is put, when known.
    let mut start_lines: Vec<Option<u32>> = Vec::new();
    // (caller, callee) -> (edge index)
    let mut edge_of: HashMap<(u32, u32), usize> = HashMap::new();
    struct Acc {
        pair: (u32, u32),
        counts: Vec<StackValue>,
        inclusive: Vec<StackValue>,
        /// 1 + the index of the last stack that counted this edge: a deep stack checks each
        /// pair in constant time (linear in its depth, not quadratic).
        counted_on: usize,
    }
    let mut edges: Vec<Acc> = Vec::new();
    let mut frame_syms: Vec<u32> = Vec::new();
    let mut frames: Vec<FrameId> = Vec::new();
    let threads = stacks.max_thread().map_or(1, |t| t as usize + 1);
    for (stack_index, stack) in stacks.samples().enumerate() {
        frame_syms.clear();
        stacks.path(stack.node, &mut frames);
        for &f in &frames {
            let s = *symbol_of.entry(f).or_insert_with(|| {
                let source = profile.frame_source(f);
                let file = source.and_then(|s| s.file);
                start_lines.push(source.and_then(|s| s.line));
                symbols.push(Symbol { name: profile.frames.get(f).to_string(), file, ..Symbol::default() });
                self_cost.push(vec![0; events]);
                (symbols.len() - 1) as u32
            });
            frame_syms.push(s);
        }
        let Some(&leaf) = frame_syms.last() else { continue };
        for (slot, v) in self_cost[leaf as usize].iter_mut().zip(stack.values) {
            *slot += v;
        }
        let thread = stack.thread.unwrap_or(0) as usize;
        let samples = stack.values.first().copied().unwrap_or(0);
        for pair in frame_syms.windows(2) {
            let pair = (pair[0], pair[1]);
            let e = *edge_of.entry(pair).or_insert_with(|| {
                edges.push(Acc { pair, counts: vec![0; threads], inclusive: vec![0; events], counted_on: 0 });
                edges.len() - 1
            });
            // Once per distinct pair on this stack: recursion repeats pairs.
            let acc = &mut edges[e];
            if acc.counted_on == stack_index + 1 {
                continue;
            }
            acc.counted_on = stack_index + 1;
            acc.counts[thread] += samples;
            for (slot, v) in acc.inclusive.iter_mut().zip(stack.values) {
                *slot += v;
            }
        }
    }
    let first_decimals = decimals.first().copied().unwrap_or(0);
    let costs = self_cost
        .iter()
        .enumerate()
        .filter(|(_, v)| v.iter().any(|&x| x != 0))
        .map(|(s, v)| Cost {
            symbol: Some(s as u32),
            file: symbols[s].file,
            line: start_lines[s],
            values: v.iter().zip(&decimals).map(|(&x, &d)| to_cost(x, d)).collect(),
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
            counts: acc.counts.iter().map(|&c| to_cost(c, first_decimals)).collect(),
            details: EdgeDetails::boxed(
                acc.inclusive.iter().zip(&decimals).map(|(&c, &d)| to_cost(c, d)).collect(),
                None,
            ),
        })
        .collect();
    Process {
        pid: process.pid,
        images: vec![Image { symbols, costs, ..Image::default() }],
        edges,
        ..Process::default()
    }
}

/// What a process's stacks say of each function (frame), per event (`frame * width + event`,
/// `width` the stacks' value columns), as `go tool pprof -top` gives them: `self_cost`, the
/// values of the stacks it ends (flat); `total`, of the stacks it is on, each stack once
/// however often the frame repeats on it (cum); and the totals of all stacks.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameTotals {
    /// Values per event of every stack (those without frames too).
    pub totals: Vec<StackValue>,
    /// Self values per frame and event.
    pub self_cost: Vec<StackValue>,
    /// Inclusive values per frame and event.
    pub total: Vec<StackValue>,
    /// Whether the frame is on some stack.
    pub seen: Vec<bool>,
}

/// [`FrameTotals`] of `stacks`, whose frames are below `frames`: one walk of the prefix tree,
/// depth first, each node's inclusive values summed on the way back up (a sum per level of the
/// path, not per node) and given to its frame unless the frame is on the path above it. The
/// root frames' subtrees are walked side by side in a few runs, then added up.
pub fn frame_totals(stacks: &Stacks, frames: usize) -> FrameTotals {
    use rayon::prelude::*;
    let w = stacks.width();
    let nodes = stacks.nodes();
    let mut totals = vec![0; w];
    // The samples by their leaf node: those of node `n` are `at_node[first[n]..first[n + 1]]`.
    let mut first = vec![0u32; nodes.len() + 1];
    for s in stacks.samples() {
        for (t, v) in totals.iter_mut().zip(s.values) {
            *t += v;
        }
        if s.node != NO_INDEX {
            first[s.node as usize + 1] += 1;
        }
    }
    for n in 0..nodes.len() {
        first[n + 1] += first[n];
    }
    let mut at_node = vec![0u32; first[nodes.len()] as usize];
    let mut next = first.clone();
    for (i, s) in stacks.samples().enumerate() {
        if s.node != NO_INDEX {
            at_node[next[s.node as usize] as usize] = i as u32;
            next[s.node as usize] += 1;
        }
    }
    drop(next);
    let children = stacks.children();
    let walk = |roots: &[u32]| -> FrameTotals {
        let mut out = FrameTotals {
            totals: Vec::new(),
            self_cost: vec![0; frames * w],
            total: vec![0; frames * w],
            seen: vec![false; frames],
        };
        // How often each frame is on the path to the node visited, and the path's inclusive
        // sums (`w` per level).
        let mut on_path = vec![0u32; frames];
        let mut sums: Vec<StackValue> = Vec::new();
        // (node, entered): a node is entered, then left once its children are done.
        let mut todo: Vec<(u32, bool)> = roots.iter().rev().map(|&n| (n, false)).collect();
        while let Some((n, entered)) = todo.pop() {
            let f = nodes[n as usize].frame as usize;
            if entered {
                on_path[f] -= 1;
                let level = sums.len() - w;
                if on_path[f] == 0 {
                    for k in 0..w {
                        out.total[f * w + k] += sums[level + k];
                    }
                }
                if level > 0 {
                    for k in 0..w {
                        sums[level - w + k] += sums[level + k];
                    }
                }
                sums.truncate(level);
                continue;
            }
            out.seen[f] = true;
            let level = sums.len();
            sums.resize(level + w, 0);
            for &i in &at_node[first[n as usize] as usize..first[n as usize + 1] as usize] {
                for (k, v) in stacks.sample(i as usize).values.iter().enumerate() {
                    sums[level + k] += v;
                    out.self_cost[f * w + k] += v;
                }
            }
            on_path[f] += 1;
            todo.push((n, true));
            todo.extend(children.of(n).iter().rev().map(|&c| (c, false)));
        }
        out
    };
    let roots = children.roots();
    let runs = if nodes.len() < 1 << 16 { 1 } else { 2 * rayon::current_num_threads() };
    let run = roots.len().div_ceil(runs).max(1);
    let add = |mut a: FrameTotals, b: FrameTotals| {
        a.self_cost.iter_mut().zip(&b.self_cost).for_each(|(x, y)| *x += y);
        a.total.iter_mut().zip(&b.total).for_each(|(x, y)| *x += y);
        a.seen.iter_mut().zip(&b.seen).for_each(|(x, y)| *x |= y);
        a
    };
    let mut out = roots.par_chunks(run).map(walk).reduce_with(add).unwrap_or_else(|| walk(&[]));
    out.totals = totals;
    out
}

/// A call between two frames of [`call_arcs`]: the values per event of the samples whose
/// stack holds it, and whether frames left out lie between the two on some of those stacks.
#[derive(Clone, Debug, PartialEq)]
pub struct CallArc {
    /// Values per event, each sample once.
    pub values: Vec<StackValue>,
    /// Whether the caller reaches the callee through frames left out on some stack (pprof's
    /// residual edge, drawn dashed).
    pub through_left_out: bool,
}

/// The calls the stacks hold between the frames `kept` keeps, as pprof's call graph counts
/// them: for each (caller, callee) next to each other on some stack once the other frames are
/// left out, the values of the samples whose stack holds that call, each sample once however
/// often its stack repeats it (recursion); a frame calling itself is no call. One walk of the
/// prefix tree: a call is counted at its outermost node on each path, with that node's
/// inclusive values, which hold every sample below it.
pub fn call_arcs(stacks: &Stacks, kept: &dyn Fn(FrameId) -> bool) -> HashMap<(FrameId, FrameId), CallArc> {
    let w = stacks.width();
    let nodes = stacks.nodes();
    let (_, inclusive) = stacks.node_totals();
    let children = stacks.children();
    let mut arcs: HashMap<(FrameId, FrameId), CallArc> = HashMap::new();
    // How often each call is on the path to the node visited.
    let mut on_path: HashMap<(FrameId, FrameId), u32> = HashMap::new();
    // A node to enter, with the kept frame above it on its path and whether frames were left
    // out since; or a node to leave, with the call it counted on the path.
    enum Step {
        Enter(u32, FrameId, bool),
        Leave(Option<(FrameId, FrameId)>),
    }
    let mut todo: Vec<Step> =
        children.roots().iter().rev().map(|&n| Step::Enter(n, NO_INDEX, false)).collect();
    while let Some(step) = todo.pop() {
        let (n, above, skipped) = match step {
            Step::Enter(n, above, skipped) => (n, above, skipped),
            Step::Leave(call) => {
                if let Some(call) = call {
                    *on_path.get_mut(&call).expect("entered before") -= 1;
                }
                continue;
            }
        };
        let frame = nodes[n as usize].frame;
        let (below, skipped_below, mut call) =
            if kept(frame) { (frame, false, None) } else { (above, true, None) };
        if kept(frame) && above != NO_INDEX && above != frame {
            let key = (above, frame);
            let depth = on_path.entry(key).or_insert(0);
            let arc =
                arcs.entry(key).or_insert_with(|| CallArc { values: vec![0; w], through_left_out: false });
            arc.through_left_out |= skipped;
            if *depth == 0 {
                for (sum, v) in arc.values.iter_mut().zip(&inclusive[n as usize * w..(n as usize + 1) * w]) {
                    *sum += v;
                }
            }
            *depth += 1;
            call = Some(key);
        }
        todo.push(Step::Leave(call));
        todo.extend(children.of(n).iter().rev().map(|&c| Step::Enter(c, below, skipped_below)));
    }
    arcs
}

/// The stacks a writer of stacks writes: the profile's own, stacks estimated from its call
/// graph, or the stacks of its flat costs, named as they are written.
// One per write: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum WrittenStacks<'p> {
    /// The profile's own stacks (borrowed) or stacks estimated from its call graph.
    Model(Cow<'p, Profile>),
    /// The stacks of a profile of flat costs ([`FlatStacks`]).
    Flat(FlatStacks<'p>),
}

impl<'p> WrittenStacks<'p> {
    /// The stacks as a model's, for writers that walk a model's stacks: a flat profile's
    /// stacks made into a model ([`FlatStacks::into_profile`], frames named as written).
    pub fn into_model(self) -> Cow<'p, Profile> {
        match self {
            WrittenStacks::Model(model) => model,
            WrittenStacks::Flat(flat) => Cow::Owned(FlatStacks::new(flat.profile(), false).into_profile()),
        }
    }

    /// The profile whose events and headers go with the stacks.
    pub fn profile(&self) -> &Profile {
        match self {
            WrittenStacks::Model(p) => p,
            WrittenStacks::Flat(flat) => flat.profile(),
        }
    }

    /// Whether some stack was sampled on a known thread.
    pub fn any_thread(&self) -> bool {
        match self {
            WrittenStacks::Model(p) => p.processes.iter().any(|p| p.stacks.any_thread()),
            WrittenStacks::Flat(_) => false,
        }
    }

    /// The decimal places of event `e`'s values as [`WrittenStacks::try_for_each`] hands them
    /// out: a value `v` stands for `v / 10^decimals` (0 but for fractional folded counts).
    pub fn decimals(&self, e: usize) -> u8 {
        match self {
            WrittenStacks::Model(p) => p.processes.iter().map(|p| p.stacks.decimals_of(e)).max().unwrap_or(0),
            WrittenStacks::Flat(_) => 0,
        }
    }

    /// `f(frames, values)` for every stack, root first, in model order: a model's stacks all
    /// (with or without frames), a flat profile's those whose values are not all zero. Values
    /// are in units of [`WrittenStacks::decimals`].
    pub fn try_for_each<E>(
        &self,
        mut f: impl FnMut(&[Frame], &[StackValue]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.try_for_each_sample(|_, _, frames, values| f(frames, values))
    }

    /// `f(process, thread, frames, values)` for every stack, as [`WrittenStacks::try_for_each`]
    /// walks them, with the index of its process and its thread.
    pub fn try_for_each_sample<E>(
        &self,
        mut f: impl FnMut(usize, Option<u32>, &[Frame], &[StackValue]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.try_for_each_labelled_sample(|p, thread, _, frames, values| f(p, thread, frames, values))
    }

    /// As [`WrittenStacks::try_for_each_sample`], with each sample's labels (in order of key;
    /// none for estimated stacks).
    pub fn try_for_each_labelled_sample<E>(
        &self,
        mut f: impl FnMut(usize, Option<u32>, &[Label], &[Frame], &[StackValue]) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            WrittenStacks::Model(p) => {
                let mut frames = Vec::new();
                let mut path = Vec::new();
                let mut scaled = Vec::new();
                let width = p.processes.iter().map(|p| p.stacks.width()).max().unwrap_or(0);
                let common: Vec<u8> = (0..width).map(|e| self.decimals(e)).collect();
                for (index, process) in p.processes.iter().enumerate() {
                    let stacks = &process.stacks;
                    let scale: Vec<StackValue> = (0..stacks.width())
                        .map(|e| power_of_ten(common[e] - stacks.decimals_of(e)))
                        .collect();
                    let rescale = scale.iter().any(|&k| k != 1);
                    for stack in stacks.samples() {
                        stacks.path(stack.node, &mut path);
                        frames.clear();
                        frames.extend(path.iter().map(|&f| Frame::Named(f)));
                        if rescale {
                            scaled.clear();
                            scaled.extend(stack.values.iter().zip(&scale).map(|(v, k)| v * k));
                            f(index, stack.thread, stack.labels, &frames, &scaled)?;
                        } else {
                            f(index, stack.thread, stack.labels, &frames, stack.values)?;
                        }
                    }
                }
                Ok(())
            }
            WrittenStacks::Flat(flat) => {
                flat.try_for_each(|p, frames, values| f(p, None, &[], frames, values))
            }
        }
    }

    /// Appends the name of `frame` to `out`.
    pub fn push_name(&self, frame: Frame, out: &mut Vec<u8>) {
        match (self, frame) {
            (WrittenStacks::Model(p), Frame::Named(f)) => out.extend_from_slice(p.frames.get(f).as_bytes()),
            (WrittenStacks::Model(_), Frame::Address { .. }) => unreachable!("model stacks name every frame"),
            (WrittenStacks::Flat(flat), frame) => flat.push_name(frame, out),
        }
    }
}

/// Stacks for a writer of stacks (folded, SVG, pprof): the profile's own when it has stacks (write
/// them, exactly) or nothing to estimate them from, else stacks estimated from its call graph
/// ([`estimate`]) or made of its flat costs ([`FlatStacks`], their addresses named as they
/// are written), with a warning that says so.
pub fn stacks_to_write<'p>(profile: &'p Profile, findings: &mut Findings) -> Result<WrittenStacks<'p>> {
    if needs_estimate(profile) {
        let (estimated, truncated) = estimate(profile, MAX_ESTIMATED_STACKS);
        warn_estimated(findings, truncated);
        return Ok(WrittenStacks::Model(Cow::Owned(estimated)));
    }
    // Stacks, or no blocks: the profile's own stacks, or stacks of its flat costs.
    let has_stacks = profile.processes.iter().any(|p| !p.stacks.is_empty());
    let has_other =
        profile.processes.iter().any(|p| !p.edges.is_empty() || p.images.iter().any(|i| !i.costs.is_empty()));
    if has_stacks || !has_other {
        return Ok(WrittenStacks::Model(Cow::Borrowed(profile)));
    }
    let flat = FlatStacks::new(profile, true);
    if !flat.has_values() {
        return Err(Error::unsupported(
            "the profile has no stacks, no basic blocks to estimate them from a call graph, \
             and no costs of functions or addresses",
        )
        .with_hint("stacks come from stack samplers (folded, DTrace, perf) or from a DCFG with blocks"));
    }
    findings.detail(
        None,
        "the profile has no call stacks: one stack per function with its self cost, the \
         functions inlined at an address (after --symbols) as frames under it; callers are not shown",
    );
    let unnamed = profile
        .processes
        .iter()
        .flat_map(|p| &p.images)
        .filter(|i| !i.costs.is_empty() && i.symbols.is_empty())
        .count();
    if unnamed > 0 {
        findings.warn(
            None,
            format!(
                "{unnamed} image(s) have costs but no functions: frames are IMAGE+0xOFFSET; \
                 name them with --symbols BINARY"
            ),
        );
    }
    Ok(WrittenStacks::Flat(flat))
}

/// For a caller that owns the model and needs nothing of it but the stacks a writer of stacks
/// writes (`cfghub convert` to folded stacks, say): where [`stacks_to_write`] would estimate
/// them from the call graph, estimates them now, giving the model up before the walk
/// ([`estimate_owned`]), and puts them in its place, with the same warnings. The writer then
/// writes them as the profile's own stacks: the same output.
pub fn estimate_in_place(profile: &mut Profile, findings: &mut Findings) {
    if !needs_estimate(profile) {
        return;
    }
    let (estimated, truncated) = estimate_owned(std::mem::take(profile), MAX_ESTIMATED_STACKS);
    warn_estimated(findings, truncated);
    *profile = estimated;
}

/// Whether [`stacks_to_write`] estimates the stacks from the call graph: the model has basic
/// blocks and no stacks.
pub fn needs_estimate(profile: &Profile) -> bool {
    let has_stacks = profile.processes.iter().any(|p| !p.stacks.is_empty());
    let has_blocks = profile.processes.iter().any(|p| p.images.iter().any(|i| !i.blocks.is_empty()));
    has_blocks && !has_stacks
}

fn warn_estimated(findings: &mut Findings, truncated: bool) {
    findings.warn(None, "stacks estimated from the call graph (self costs exact; -v says how)");
    findings.detail(
        None,
        "stacks estimated from the call graph: every function keeps its self cost exactly, shared \
         among the call paths to it in proportion to the calls' inclusive costs; recursion is cut \
         and cost on no call path is a stack of its own function; exact stacks need a stack \
         profile or a DCFG-trace",
    );
    if truncated {
        findings.warn(
            None,
            format!(
                "more than {MAX_ESTIMATED_STACKS} estimated call paths: functions reached only \
                 deeper are stacks of their own"
            ),
        );
    }
}

/// The most call paths [`stacks_to_write`] enumerates before folding deeper calls into
/// their callers.
pub(crate) const MAX_ESTIMATED_STACKS: usize = 1_000_000;

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::Event;

    /// Stacks of one event, their values with one decimal place.
    fn profile(stacks: &[(&str, f64)]) -> Profile {
        let mut p = Profile { events: vec![Event::new("samples")], ..Profile::default() };
        let mut process = Process::default();
        process.stacks.set_decimals(0, 1);
        for (path, v) in stacks {
            let frames: Vec<FrameId> = path.split(';').map(|f| p.frames.intern(f)).collect();
            process.stacks.push(&frames, None, &[(v * 10.0).round() as StackValue]);
        }
        p.processes.push(process);
        p
    }

    type Selfs = HashMap<String, u64>;
    type Edges = HashMap<(String, String), (u64, u64)>;

    fn by_name(fl: &Process) -> (Selfs, Edges) {
        let image = &fl.images[0];
        let name = |r: NodeRef| match r {
            NodeRef::Symbol(s) => image.symbols[s.symbol as usize].name.clone(),
            other => panic!("{other:?}"),
        };
        let selfs = image
            .costs
            .iter()
            .map(|c| (image.symbols[c.symbol.unwrap() as usize].name.clone(), c.values[0]))
            .collect();
        let edges = fl
            .edges
            .iter()
            .map(|e| ((name(e.source), name(e.target)), (e.counts[0], e.inclusive()[0])))
            .collect();
        (selfs, edges)
    }

    #[test]
    fn self_costs_are_leaf_sums_and_inclusive_counts_each_stack_once() {
        let p = profile(&[("main;a;b", 3.0), ("main;a", 2.0), ("main;b", 5.0), ("main;a;b", 1.0)]);
        let fl = function_level(&p, &p.processes[0]);
        let (selfs, edges) = by_name(&fl);
        assert_eq!(selfs["b"], 9);
        assert_eq!(selfs["a"], 2);
        assert!(!selfs.contains_key("main"));
        assert_eq!(edges[&("main".into(), "a".into())], (6, 6));
        assert_eq!(edges[&("a".into(), "b".into())], (4, 4));
        assert_eq!(edges[&("main".into(), "b".into())], (5, 5));
        assert_eq!(fl.edges.iter().filter(|e| e.kind == EdgeKind::Call).count(), 3);
    }

    #[test]
    fn frame_totals_count_each_stack_once_per_function() {
        let p = profile(&[("main;a;b;a", 3.0), ("main;a", 2.0), ("main;b", 5.0), ("x", 1.0)]);
        let t = frame_totals(&p.processes[0].stacks, p.frames.len());
        let id = |n: &str| p.frames.lookup(n).unwrap() as usize;
        // Values in tenths (the helper's one decimal place).
        assert_eq!(t.totals, [110]);
        assert_eq!((t.self_cost[id("a")], t.self_cost[id("b")], t.self_cost[id("main")]), (50, 50, 0));
        assert_eq!(
            (t.total[id("main")], t.total[id("a")], t.total[id("b")], t.total[id("x")]),
            (100, 50, 80, 10)
        );
        assert!(t.seen.iter().all(|&s| s));
    }

    #[test]
    fn recursion_never_double_counts() {
        // a calls b calls a calls b: the pairs a->b and b->a each occur twice on the stack.
        let p = profile(&[("main;a;b;a;b", 7.0), ("main;a", 1.0)]);
        let fl = function_level(&p, &p.processes[0]);
        let (selfs, edges) = by_name(&fl);
        assert_eq!(selfs["b"], 7);
        assert_eq!(edges[&("a".into(), "b".into())], (7, 7));
        assert_eq!(edges[&("b".into(), "a".into())], (7, 7));
        assert_eq!(edges[&("main".into(), "a".into())], (8, 8));
        // No inclusive cost exceeds the total.
        assert!(fl.edges.iter().all(|e| e.inclusive()[0] <= 8));
    }

    #[test]
    fn fractional_values_are_rounded_once_per_sum() {
        let p = profile(&[("m;x", 0.4), ("m;x", 0.4), ("m;y", 0.2)]);
        let fl = function_level(&p, &p.processes[0]);
        let (selfs, edges) = by_name(&fl);
        assert_eq!(selfs["x"], 1);
        assert_eq!(selfs.get("y").copied().unwrap_or(0), 0);
        assert_eq!(edges[&("m".into(), "x".into())].1, 1);
    }

    #[test]
    fn stacks_are_written_as_they_are() {
        let p = profile(&[("a;b", 1.0)]);
        let written = stacks_to_write(&p, &mut Findings::default()).unwrap();
        assert!(matches!(written, WrittenStacks::Model(Cow::Borrowed(_))));
    }

    /// One image; routine `i` is one block of `instrs[i]` instructions run `runs[i]` times at
    /// 0x1000 + 0x100·i, named by a symbol; `calls` are (caller, callee, count).
    fn block_model(names: &[&str], instrs: &[(u64, u64)], calls: &[(u32, u32, u64)]) -> Profile {
        use cfghub_model::ir::{Block, BlockRef};
        let mut image = Image::default();
        for (i, (name, &(n, runs))) in names.iter().zip(instrs).enumerate() {
            let offset = 0x1000 + 0x100 * i as u64;
            image.symbols.push(Symbol {
                name: name.to_string(),
                offset: Some(offset),
                size: Some(16),
                file: None,
            });
            image.blocks.push(Block {
                id: 10 + i as u64,
                offset,
                size: 16,
                num_instrs: n as u32,
                last_instr_offset: 12,
                count: Some(runs),
            });
        }
        let edges = calls
            .iter()
            .map(|&(from, to, count)| Edge {
                source: NodeRef::Block(BlockRef { image: 0, block: from }),
                target: NodeRef::Block(BlockRef { image: 0, block: to }),
                kind: EdgeKind::DirectCall,
                counts: vec![count].into(),
                ..Edge::default()
            })
            .collect();
        let process = Process { pid: 7, images: vec![image], edges, ..Process::default() };
        Profile { processes: vec![process], ..Profile::default() }
    }

    fn folded(p: &Profile) -> Vec<(String, f64)> {
        let stacks = &p.processes[0].stacks;
        let mut v: Vec<(String, f64)> = stacks
            .samples()
            .map(|s| {
                let names: Vec<&str> = stacks.frames(s.node).iter().map(|&f| p.frames.get(f)).collect();
                (names.join(";"), s.values[0] as f64)
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    #[test]
    fn estimated_stacks_split_callees_by_call_counts() {
        // main calls a and b once; a calls d once, b calls d three times; d runs 4 times.
        let p = block_model(
            &["main", "a", "b", "d"],
            &[(5, 1), (10, 1), (20, 1), (10, 4)],
            &[(0, 1, 1), (0, 2, 1), (1, 3, 1), (2, 3, 3)],
        );
        let (est, truncated) = estimate(&p, 1000);
        assert!(!truncated);
        // Given up to the estimate, the model gives the same stacks.
        assert_eq!(estimate_owned(p.clone(), 1000), (est.clone(), truncated));
        assert_eq!(est.events[0].name, "instructions");
        assert_eq!(est.processes[0].pid, 7);
        assert_eq!(
            folded(&est),
            [
                ("main".to_string(), 5.0),
                ("main;a".to_string(), 10.0),
                ("main;a;d".to_string(), 10.0),
                ("main;b".to_string(), 20.0),
                ("main;b;d".to_string(), 30.0),
            ]
        );
    }

    #[test]
    fn estimated_stacks_cut_recursion_and_keep_the_total() {
        // main -> a (1); a -> b (5); b -> a (4); b -> leaf (5): a and b form a cycle.
        let p = block_model(
            &["main", "a", "b", "leaf"],
            &[(1, 1), (2, 5), (4, 5), (10, 5)],
            &[(0, 1, 1), (1, 2, 5), (2, 1, 4), (2, 3, 5)],
        );
        let (est, _) = estimate(&p, 1000);
        let stacks = folded(&est);
        let total: f64 = stacks.iter().map(|s| s.1).sum();
        assert_eq!(total, 81.0);
        // The back edge b -> a is never followed: no frame repeats on a stack.
        for (path, _) in &stacks {
            let frames: Vec<&str> = path.split(';').collect();
            let mut unique = frames.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), frames.len(), "{path}");
        }
        assert!(stacks.iter().any(|s| s.0 == "main;a;b;leaf" && s.1 == 50.0), "{stacks:?}");
        assert!(stacks.iter().all(|s| s.1.fract() == 0.0));
    }

    /// Self cost of every leaf frame, for event `e`.
    fn leaf_costs(p: &Profile, e: usize) -> HashMap<String, f64> {
        let mut m = HashMap::new();
        let stacks = &p.processes[0].stacks;
        for s in stacks.samples() {
            *m.entry(p.frames.get(stacks.leaf(s.node).unwrap()).to_string()).or_insert(0.0) +=
                s.values[e] as f64;
        }
        m
    }

    #[test]
    fn estimated_stacks_keep_the_cost_lines_of_every_function_by_its_own_name() {
        // main calls a (block 1) and b; the cost lines say: main 5, a 7 of which 3 at an address
        // of b's block (code the two share), a'2 (a's recursion level) 4, b 20, and 6 in `init`,
        // a function nothing calls; 2 Dr in b.
        let mut p = block_model(
            &["main", "a", "b", "init"],
            &[(5, 1), (10, 1), (20, 1), (1, 1)],
            &[(0, 1, 1), (0, 2, 1), (1, 1, 1)],
        );
        p.events = vec![cfghub_model::ir::Event::new("Ir"), cfghub_model::ir::Event::new("Dr")];
        let image = &mut p.processes[0].images[0];
        image.symbols.push(Symbol { name: "a'2".into(), ..Symbol::default() });
        for (offset, symbol, ir, dr) in [
            (0x1000, 0, 5, 0),
            (0x1100, 1, 4, 0),
            (0x1200, 1, 3, 0),
            (0x1100, 4, 4, 0),
            (0x1200, 2, 20, 2),
            (0x1300, 3, 6, 0),
        ] {
            image.costs.push_parts(Some(offset), Some(symbol), None, None, &[ir, dr]);
        }
        let (est, truncated) = estimate(&p, 1000);
        assert!(!truncated);
        // Given up to the estimate, the model gives the same stacks.
        assert_eq!(estimate_owned(p.clone(), 1000), (est.clone(), truncated));
        assert_eq!(est.events.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["Ir", "Dr"]);
        let ir = leaf_costs(&est, 0);
        assert_eq!((ir["main"], ir["a"], ir["b"], ir["init"]), (5.0, 11.0, 20.0, 6.0));
        assert!(!ir.contains_key("a'2"));
        assert_eq!(leaf_costs(&est, 1)["b"], 2.0);
        // `init` is on no call path: a stack of its own; a's recursion is cut.
        let stacks = folded(&est);
        assert!(stacks.iter().any(|s| s.0 == "init" && s.1 == 6.0), "{stacks:?}");
        assert!(stacks.iter().all(|s| !s.0.contains("a;a")), "{stacks:?}");
        let total: StackValue = est.processes[0].stacks.samples().map(|s| s.values[0]).sum();
        assert_eq!(total, 42);
    }

    #[test]
    fn every_function_keeps_its_self_cost_whatever_the_call_counts_say() {
        // d is called by a and b; the call graph's shares are estimates, d's self cost is not.
        let p = block_model(
            &["main", "a", "b", "d"],
            &[(5, 1), (10, 1), (20, 1), (7, 3)],
            &[(0, 1, 1), (0, 2, 1), (1, 3, 2), (2, 3, 1)],
        );
        let (est, _) = estimate(&p, 1000);
        let leaf = leaf_costs(&est, 0);
        assert_eq!((leaf["main"], leaf["a"], leaf["b"], leaf["d"]), (5.0, 10.0, 20.0, 21.0));
        assert_eq!(folded(&est).iter().find(|s| s.0 == "main;a;d").unwrap().1, 14.0);
    }

    #[test]
    fn estimation_stops_at_the_path_limit_and_keeps_the_total() {
        let p = block_model(
            &["main", "a", "b", "d"],
            &[(5, 1), (10, 1), (20, 1), (10, 4)],
            &[(0, 1, 1), (0, 2, 1), (1, 3, 1), (2, 3, 3)],
        );
        let (est, truncated) = estimate(&p, 2);
        assert!(truncated);
        let total: StackValue = est.processes[0].stacks.samples().map(|s| s.values[0]).sum();
        assert_eq!(total, 75);
    }
}
