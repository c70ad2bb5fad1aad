//! Ball-Larus path numbering (Ball and Larus, "Efficient path profiling", 1996): every acyclic
//! path of a routine gets one number in `0..N`, the sum of the weights of its edges.
//!
//! The routine's graph is made acyclic by cutting its back edges: a back edge `v -> w` is
//! replaced by two phony edges, `ENTRY -> w` (a path may start just after the back edge) and
//! `v -> EXIT` (a path may end by taking it). Then, in reverse topological order,
//! `NP(EXIT) = 1` and `NP(v)` is the sum of `NP(t)` over the out-edges `v -> t`; the edges of
//! `v` get weights `0, NP(t1), NP(t1) + NP(t2), ...`, so that an edge `v -> t` of weight `W`
//! covers the path numbers `[W, W + NP(t))` of `v`.
//!
//! The functions here work on a small graph type, [`PathGraph`], so that any format's routines
//! can be numbered and decoded ([`crate::path_graph`] builds it from the model):
//! - [`number`]: the numbering of a graph whose back edges are marked ([`mark_back_edges`] marks
//!   them by depth-first search when the input does not say);
//! - [`Dag::new`]: the acyclic graph with stated or computed weights, and [`Dag::decode`] of a
//!   path number to its nodes (O(path length × log out-degree));
//! - [`Dag::crash`]: the nodes a frame ran before it stopped, from the trace ring buffer, its
//!   index, the running path sum and the node where it stopped.
//!
//! How CSI states a back edge `v ~> w`: its increment and weight are those of the phony
//! `ENTRY -> w` edge; the weight of the phony `v -> EXIT` edge is not printed and is the single
//! number of `[0, NP(v))` that no other edge of `v` covers.

use cfghub_model::ir::NO_INDEX;
use std::fmt;

/// A routine's control-flow graph: nodes `0..nodes`, one entry and one exit node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathGraph {
    /// Number of nodes; nodes are `0..nodes`.
    pub nodes: u32,
    /// The node every path starts at.
    pub entry: u32,
    /// The node every path ends at.
    pub exit: u32,
    /// The edges, back edges marked; [`Numbering::edges`] is parallel to it.
    pub edges: Vec<GraphEdge>,
}

/// One edge of a [`PathGraph`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GraphEdge {
    /// The node the edge leaves.
    pub source: u32,
    /// The node the edge enters.
    pub target: u32,
    /// Cut from the acyclic graph: replaced by phony `ENTRY -> target` and `source -> EXIT` edges.
    pub back: bool,
}

/// Increment and weight of one edge. For a back edge they are the phony `ENTRY -> target`
/// edge's, and `exit_weight` is the phony `source -> EXIT` edge's (when known).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EdgeNumbers {
    /// What the instrumented program adds to its path sum when it takes the edge; along a whole
    /// path the increments add up to its number, as the weights do, but may be placed on fewer
    /// edges (equal to `weight` in [`number`]'s numbering).
    pub increment: i64,
    /// The first path number of the edge's source that the edge covers: it covers
    /// `[weight, weight + NP(target))`.
    pub weight: i64,
    /// For a back edge, the weight of its phony `source -> EXIT` edge; `None` when not stated
    /// ([`Dag::new`] takes the one number the source's other edges leave).
    pub exit_weight: Option<i64>,
}

/// The numbering of a graph: the number of acyclic paths and each edge's numbers (parallel to
/// [`PathGraph::edges`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Numbering {
    /// Number of acyclic paths from the entry to the exit: path numbers are `0..paths`.
    pub paths: u64,
    /// The numbers of each edge, parallel to [`PathGraph::edges`].
    pub edges: Vec<EdgeNumbers>,
}

/// Why a graph cannot be numbered or a number decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathError {
    /// A node or edge names a node outside `0..nodes`.
    BadNode(u32),
    /// The graph left after cutting back edges still has a cycle through this node.
    Cycle(u32),
    /// More acyclic paths than a signed 64-bit path number holds.
    TooManyPaths,
    /// The stated weights of a node's edges do not tile its path numbers.
    BadWeights {
        /// The node whose arcs' weights leave a gap, overlap, or miss its path count.
        node: u32,
    },
    /// A path number outside `0..paths`.
    OutOfRange {
        /// The path number asked for.
        number: i64,
        /// Number of acyclic paths of the graph.
        paths: u64,
    },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::BadNode(n) => write!(f, "node {n} is not in the graph"),
            PathError::Cycle(n) => write!(f, "a cycle through node {n} has no back edge"),
            PathError::TooManyPaths => write!(f, "more than 2^63 acyclic paths"),
            PathError::BadWeights { node } => {
                write!(f, "the edge weights out of node {node} do not cover its paths exactly once")
            }
            PathError::OutOfRange { number, paths } => match paths {
                0 => write!(f, "path number {number} is out of range: there are no paths"),
                _ => write!(
                    f,
                    "path number {number} is out of range: there are {paths} paths, 0 to {}",
                    paths - 1
                ),
            },
        }
    }
}

/// Largest number of paths a numbering accepts: path numbers are signed 64-bit in the trace,
/// so 2^63 paths (numbers 0 to 2^63 - 1) is the most that can be told apart.
pub(crate) const MAX_PATHS: u64 = 1 << 63;

/// Marks the retreating edges of a depth-first search from the entry (then from every node it
/// does not reach) as back edges, and unmarks the others, so that the rest is acyclic. Edges into the entry are always back
/// edges. Iterative: no recursion depth limit.
pub fn mark_back_edges(g: &mut PathGraph) -> Result<(), PathError> {
    let n = g.nodes as usize;
    check_nodes(g)?;
    let mut first = vec![0u32; n + 1];
    for e in &g.edges {
        first[e.source as usize + 1] += 1;
    }
    for i in 0..n {
        first[i + 1] += first[i];
    }
    let mut fill = first.clone();
    let mut order = vec![0u32; g.edges.len()];
    for (i, e) in g.edges.iter().enumerate() {
        order[fill[e.source as usize] as usize] = i as u32;
        fill[e.source as usize] += 1;
    }
    // 0 unvisited, 1 on the stack, 2 done.
    let mut state = vec![0u8; n];
    let mut back = vec![false; g.edges.len()];
    // From the entry first, then from every node it does not reach, so that every cycle is cut.
    let roots = std::iter::once(g.entry).chain(0..g.nodes);
    let mut stack: Vec<(u32, u32)> = Vec::new();
    for root in roots {
        if state[root as usize] != 0 {
            continue;
        }
        state[root as usize] = 1;
        stack.push((root, first[root as usize]));
        while let Some(top) = stack.last_mut() {
            let (v, next) = *top;
            if next < first[v as usize + 1] {
                top.1 += 1;
                let ei = order[next as usize] as usize;
                let t = g.edges[ei].target;
                match state[t as usize] {
                    0 => {
                        state[t as usize] = 1;
                        stack.push((t, first[t as usize]));
                    }
                    1 => back[ei] = true,
                    _ => {}
                }
            } else {
                state[v as usize] = 2;
                stack.pop();
            }
        }
    }
    for (e, b) in g.edges.iter_mut().zip(back) {
        e.back = b || e.target == g.entry;
    }
    Ok(())
}

fn check_nodes(g: &PathGraph) -> Result<(), PathError> {
    for &n in &[g.entry, g.exit] {
        if n >= g.nodes {
            return Err(PathError::BadNode(n));
        }
    }
    for e in &g.edges {
        for n in [e.source, e.target] {
            if n >= g.nodes {
                return Err(PathError::BadNode(n));
            }
        }
    }
    Ok(())
}

/// Where an arc of the acyclic graph comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArcKind {
    /// A forward edge of the graph (index into [`PathGraph::edges`]).
    Edge(u32),
    /// The phony `ENTRY -> target` edge of back edge(s), the first of them named.
    Start(u32),
    /// The phony `source -> EXIT` edge of back edge(s) out of the source, the first named.
    End(u32),
}

/// An arc of the acyclic graph with its numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arc {
    /// The node the arc enters (the graph's exit for a phony end arc).
    pub target: u32,
    /// The edge of the graph the arc stands for, or which phony arc it is.
    pub kind: ArcKind,
    /// The first path number of the arc's source that the arc covers (see [`EdgeNumbers::weight`]).
    pub weight: i64,
    /// What the instrumented program adds to its path sum on the arc (see
    /// [`EdgeNumbers::increment`]).
    pub increment: i64,
}

/// The acyclic graph of a routine: back edges cut into phony arcs, the number of paths from
/// every node, each node's arcs sorted by weight.
#[derive(Clone, Debug)]
pub struct Dag {
    /// The node every path starts at.
    pub entry: u32,
    /// The node every path ends at.
    pub exit: u32,
    /// Paths from each node to the exit.
    pub np: Vec<u64>,
    /// Arcs of node `v`: `arcs[first[v]..first[v + 1]]`, by increasing weight.
    first: Vec<u32>,
    arcs: Vec<Arc>,
}

/// The acyclic arcs of a graph before numbering, out of each node in a fixed order: its forward
/// edges in edge order, then phony start arcs (entry only), then its phony end arc.
fn build_arcs(g: &PathGraph) -> Result<(Vec<u32>, Vec<Arc>), PathError> {
    check_nodes(g)?;
    let n = g.nodes as usize;
    let mut count = vec![0u32; n + 1];
    let mut start_seen = vec![false; n];
    let mut end_seen = vec![false; n];
    let mut raw: Vec<(u32, Arc)> = Vec::with_capacity(g.edges.len() + 4);
    for (i, e) in g.edges.iter().enumerate() {
        if !e.back {
            raw.push((
                e.source,
                Arc { target: e.target, kind: ArcKind::Edge(i as u32), weight: 0, increment: 0 },
            ));
        }
    }
    for (i, e) in g.edges.iter().enumerate() {
        // A path restarting at the entry is a path from the entry: no phony arc.
        if e.back && e.target != g.entry && !start_seen[e.target as usize] {
            start_seen[e.target as usize] = true;
            raw.push((
                g.entry,
                Arc { target: e.target, kind: ArcKind::Start(i as u32), weight: 0, increment: 0 },
            ));
        }
    }
    for (i, e) in g.edges.iter().enumerate() {
        if e.back && !end_seen[e.source as usize] {
            end_seen[e.source as usize] = true;
            raw.push((
                e.source,
                Arc { target: g.exit, kind: ArcKind::End(i as u32), weight: 0, increment: 0 },
            ));
        }
    }
    for (s, _) in &raw {
        count[*s as usize + 1] += 1;
    }
    for i in 0..n {
        count[i + 1] += count[i];
    }
    let mut fill = count.clone();
    let mut arcs = vec![Arc { target: 0, kind: ArcKind::Edge(0), weight: 0, increment: 0 }; raw.len()];
    for (s, a) in raw {
        arcs[fill[s as usize] as usize] = a;
        fill[s as usize] += 1;
    }
    Ok((count, arcs))
}

/// Paths from every node to the exit, in reverse topological order of the arcs.
fn count_paths(nodes: usize, exit: u32, first: &[u32], arcs: &[Arc]) -> Result<Vec<u64>, PathError> {
    let mut indegree = vec![0u32; nodes];
    for a in arcs {
        indegree[a.target as usize] += 1;
    }
    let mut order: Vec<u32> = (0..nodes as u32).filter(|&v| indegree[v as usize] == 0).collect();
    let mut i = 0;
    while i < order.len() {
        let v = order[i] as usize;
        for a in &arcs[first[v] as usize..first[v + 1] as usize] {
            indegree[a.target as usize] -= 1;
            if indegree[a.target as usize] == 0 {
                order.push(a.target);
            }
        }
        i += 1;
    }
    if order.len() < nodes {
        let v = indegree.iter().position(|&d| d > 0).unwrap_or(0);
        return Err(PathError::Cycle(v as u32));
    }
    let mut np = vec![0u64; nodes];
    for &v in order.iter().rev() {
        let v = v as usize;
        if v == exit as usize {
            np[v] = 1;
            continue;
        }
        let mut sum = 0u64;
        for a in &arcs[first[v] as usize..first[v + 1] as usize] {
            sum = sum
                .checked_add(np[a.target as usize])
                .filter(|&s| s <= MAX_PATHS)
                .ok_or(PathError::TooManyPaths)?;
        }
        np[v] = sum;
    }
    Ok(np)
}

/// Numbers the acyclic paths of `g`, whose back edges are marked: increments equal weights.
pub fn number(g: &PathGraph) -> Result<Numbering, PathError> {
    let (first, mut arcs) = build_arcs(g)?;
    let np = count_paths(g.nodes as usize, g.exit, &first, &arcs)?;
    let mut edges = vec![EdgeNumbers::default(); g.edges.len()];
    let mut start_of = vec![None; g.nodes as usize];
    let mut end_of = vec![None; g.nodes as usize];
    for v in 0..g.nodes as usize {
        let mut w = 0u64;
        for a in &mut arcs[first[v] as usize..first[v + 1] as usize] {
            a.weight = w as i64;
            a.increment = w as i64;
            match a.kind {
                ArcKind::Edge(i) => {
                    edges[i as usize] =
                        EdgeNumbers { increment: a.weight, weight: a.weight, exit_weight: None }
                }
                ArcKind::Start(_) => start_of[a.target as usize] = Some(a.weight),
                ArcKind::End(_) => end_of[v] = Some(a.weight),
            }
            w += np[a.target as usize];
        }
    }
    for (i, e) in g.edges.iter().enumerate() {
        if e.back {
            let w = start_of[e.target as usize].unwrap_or(0);
            edges[i] = EdgeNumbers { increment: w, weight: w, exit_weight: end_of[e.source as usize] };
        }
    }
    Ok(Numbering { paths: np[g.entry as usize], edges })
}

/// One decoded path: its nodes in order, and whether it began just after a back edge (at that
/// edge's target) and ended by taking one (at that edge's source).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedPath {
    /// The path's nodes in order, from the entry (or the back edge's target) to the exit (or the
    /// back edge's source).
    pub nodes: Vec<u32>,
    /// The path began just after a back edge, at its target, rather than at the entry.
    pub after_back_edge: bool,
    /// The path ended by taking a back edge, at its source, rather than at the exit.
    pub ends_at_back_edge: bool,
}

/// What a frame ran before it stopped: completed paths oldest first, and every candidate for
/// the unfinished one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crash {
    /// (path number, path), oldest first.
    pub completed: Vec<(i64, DecodedPath)>,
    /// Every prefix ending at the crash node whose increments sum to the running value.
    pub partial: Vec<DecodedPath>,
    /// The search for candidates stopped at its limit; more may exist.
    pub truncated: bool,
}

/// Limit on the steps of the search for unfinished-path candidates.
const CRASH_SEARCH_STEPS: usize = 1_000_000;
/// Limit on the nodes of the candidates the search spells out.
const CRASH_CANDIDATE_NODES: usize = 10_000_000;

impl Dag {
    /// The acyclic graph of `g` with the given numbers per edge (stated by the input, or
    /// [`number`]'s). The weights of each node's arcs must tile `[0, NP(v))`; the phony end arc
    /// of a node takes the one number its other arcs leave (when `exit_weight` is unknown).
    pub fn new(g: &PathGraph, numbers: &[EdgeNumbers]) -> Result<Dag, PathError> {
        let (first, mut arcs) = build_arcs(g)?;
        let np = count_paths(g.nodes as usize, g.exit, &first, &arcs)?;
        for v in 0..g.nodes as usize {
            let range = first[v] as usize..first[v + 1] as usize;
            let mut end_arc = None;
            for (k, a) in arcs[range.clone()].iter_mut().enumerate() {
                let n = |i: u32| numbers.get(i as usize).copied().unwrap_or_default();
                match a.kind {
                    ArcKind::Edge(i) | ArcKind::Start(i) => {
                        a.weight = n(i).weight;
                        a.increment = n(i).increment;
                    }
                    ArcKind::End(i) => match n(i).exit_weight {
                        Some(w) => a.weight = w,
                        None => end_arc = Some(range.start + k),
                    },
                }
            }
            if let Some(k) = end_arc {
                // The single number no other arc covers.
                let mut taken: Vec<(i64, u64)> = arcs[range.clone()]
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| range.start + j != k)
                    .map(|(_, a)| (a.weight, np[a.target as usize]))
                    .collect();
                taken.sort_unstable();
                // Wider than i64: the numbers of a node run up to 2^63.
                let mut gap = 0i128;
                for (w, c) in taken {
                    if w as i128 == gap {
                        gap += c as i128;
                    } else {
                        break;
                    }
                }
                arcs[k].weight = i64::try_from(gap).unwrap_or(i64::MAX);
                arcs[k].increment = 0;
            }
            let slice = &mut arcs[range];
            slice.sort_by_key(|a| a.weight);
            let mut expect = 0i128;
            for a in slice.iter() {
                if np[a.target as usize] == 0 {
                    continue;
                }
                if a.weight as i128 != expect {
                    return Err(PathError::BadWeights { node: v as u32 });
                }
                expect += np[a.target as usize] as i128;
            }
            if expect != np[v] as i128 && v != g.exit as usize {
                return Err(PathError::BadWeights { node: v as u32 });
            }
        }
        Ok(Dag { entry: g.entry, exit: g.exit, np, first, arcs })
    }

    /// Number of acyclic paths.
    pub fn paths(&self) -> u64 {
        self.np[self.entry as usize]
    }

    /// The arcs out of node `v`, by increasing weight.
    pub fn arcs(&self, v: u32) -> &[Arc] {
        let v = v as usize;
        match (self.first.get(v), self.first.get(v + 1)) {
            (Some(&a), Some(&b)) => &self.arcs[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The nodes of path `number`.
    pub fn decode(&self, number: i64) -> Result<DecodedPath, PathError> {
        let paths = self.paths();
        if number < 0 || number as u64 >= paths {
            return Err(PathError::OutOfRange { number, paths });
        }
        let mut r = number;
        let mut v = self.entry;
        let mut path = DecodedPath { nodes: Vec::new(), after_back_edge: false, ends_at_back_edge: false };
        loop {
            if v == self.exit {
                path.nodes.push(v);
                return Ok(path);
            }
            let arcs = self.arcs(v);
            // The last arc (with paths) whose weight is at most r.
            let k = arcs.partition_point(|a| a.weight <= r);
            let Some(a) = arcs[..k].iter().rev().find(|a| self.np[a.target as usize] > 0) else {
                return Err(PathError::BadWeights { node: v });
            };
            if (r - a.weight) as u64 >= self.np[a.target as usize] {
                return Err(PathError::BadWeights { node: v });
            }
            r -= a.weight;
            match a.kind {
                ArcKind::Start(_) => path.after_back_edge = true,
                ArcKind::End(_) => {
                    path.nodes.push(v);
                    path.ends_at_back_edge = true;
                    return Ok(path);
                }
                ArcKind::Edge(_) => path.nodes.push(v),
            }
            v = a.target;
        }
    }

    /// Decodes a frame's trace: the ring buffer `slots` (whose last slot starts as -1), the
    /// index of the next slot to write, the running path sum and the node where the frame
    /// stopped. A buffer whose last slot is still -1 has not wrapped: its completed paths are
    /// the slots before the index; otherwise they start at the index.
    pub fn crash(&self, slots: &[i64], index: usize, current: i64, node: u32) -> Result<Crash, PathError> {
        let wrapped = slots.last().is_some_and(|&s| s != -1);
        let order: Vec<usize> = if wrapped {
            (index..slots.len()).chain(0..index.min(slots.len())).collect()
        } else {
            (0..index.min(slots.len())).collect()
        };
        let mut completed = Vec::with_capacity(order.len());
        for i in order {
            completed.push((slots[i], self.decode(slots[i])?));
        }
        let (partial, truncated) = self.prefixes(node, current);
        Ok(Crash { completed, partial, truncated })
    }

    /// Every prefix of a path that ends at `node` and whose increments sum to `sum`: from the
    /// entry, or from the target of a back edge (starting from that edge's increment). Sums
    /// wrap at 2^64, as the program's counter does (csi-cc adds increments to a 64-bit
    /// integer): `-2` is the running value of a prefix whose increments add up to 2^64 - 2.
    ///
    /// A depth-first search whose partial paths share their prefixes (each step records its
    /// node and the step before it), so that a step costs the same at any depth; a path is
    /// spelled out only when it is a candidate. The search stops after a million steps (or
    /// twice the nodes, when more), or once the candidates hold ten million nodes in all
    /// (`true` in the result's second place).
    pub fn prefixes(&self, node: u32, sum: i64) -> (Vec<DecodedPath>, bool) {
        let n = self.np.len();
        if node as usize >= n {
            return (Vec::new(), false);
        }
        // Nodes from which `node` can be reached along forward arcs.
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
        for v in 0..n as u32 {
            for a in self.arcs(v) {
                if matches!(a.kind, ArcKind::Edge(_)) {
                    preds[a.target as usize].push(v);
                }
            }
        }
        let mut reaches = vec![false; n];
        reaches[node as usize] = true;
        let mut stack = vec![node];
        while let Some(v) = stack.pop() {
            for &p in &preds[v as usize] {
                if !reaches[p as usize] {
                    reaches[p as usize] = true;
                    stack.push(p);
                }
            }
        }
        // Steps taken: (node, the step before it).
        let mut steps: Vec<(u32, u32)> = Vec::new();
        // (node, running sum, the step before it, started after a back edge)
        let mut work: Vec<(u32, i64, u32, bool)> = Vec::new();
        if reaches[self.entry as usize] {
            work.push((self.entry, 0, NO_INDEX, false));
        }
        for a in self.arcs(self.entry) {
            if matches!(a.kind, ArcKind::Start(_)) && reaches[a.target as usize] {
                work.push((a.target, a.increment, NO_INDEX, true));
            }
        }
        let mut out = Vec::new();
        let mut spelled = 0usize;
        let mut truncated = false;
        // Enough steps to walk the whole graph twice, however large.
        let most_steps = CRASH_SEARCH_STEPS.max(2 * n);
        while let Some((v, s, before, after)) = work.pop() {
            if steps.len() >= most_steps || spelled > CRASH_CANDIDATE_NODES {
                truncated = true;
                break;
            }
            let here = steps.len() as u32;
            steps.push((v, before));
            if v == node {
                if s == sum {
                    let mut nodes = Vec::new();
                    let mut k = here;
                    while k != NO_INDEX {
                        nodes.push(steps[k as usize].0);
                        k = steps[k as usize].1;
                    }
                    nodes.reverse();
                    spelled += nodes.len();
                    out.push(DecodedPath { nodes, after_back_edge: after, ends_at_back_edge: false });
                }
                continue;
            }
            for a in self.arcs(v) {
                if matches!(a.kind, ArcKind::Edge(_)) && reaches[a.target as usize] {
                    work.push((a.target, s.wrapping_add(a.increment), here, after));
                }
            }
        }
        out.sort_by(|a, b| (a.after_back_edge, &a.nodes).cmp(&(b.after_back_edge, &b.nodes)));
        (out, truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `main` of csi-cc's `loop` test: blocks 2 (ENTRY) .. 9 as nodes 0 .. 7, EXIT is block 3.
    fn loop_main() -> (PathGraph, Vec<EdgeNumbers>) {
        let e = |s: u32, t: u32, back: bool| GraphEdge { source: s - 2, target: t - 2, back };
        let edges = vec![
            e(2, 4, false),
            e(4, 5, false),
            e(4, 6, false),
            e(5, 7, false),
            e(5, 8, false),
            e(6, 3, false),
            e(7, 9, false),
            e(8, 9, false),
            e(9, 4, true),
        ];
        let stated = [0, 0, 2, 0, 1, 0, 0, 0, 3]
            .iter()
            .map(|&w| EdgeNumbers { increment: w, weight: w, exit_weight: None })
            .collect();
        (PathGraph { nodes: 8, entry: 0, exit: 1, edges }, stated)
    }

    fn blocks(p: &DecodedPath) -> Vec<u32> {
        p.nodes.iter().map(|n| n + 2).collect()
    }

    #[test]
    fn the_six_paths_of_loop_main() {
        let (g, stated) = loop_main();
        let dag = Dag::new(&g, &stated).unwrap();
        assert_eq!(dag.paths(), 6);
        let want: [(&[u32], bool, bool); 6] = [
            (&[2, 4, 5, 7, 9], false, true),
            (&[2, 4, 5, 8, 9], false, true),
            (&[2, 4, 6, 3], false, false),
            (&[4, 5, 7, 9], true, true),
            (&[4, 5, 8, 9], true, true),
            (&[4, 6, 3], true, false),
        ];
        for (p, (nodes, after, ends)) in want.iter().enumerate() {
            let d = dag.decode(p as i64).unwrap();
            assert_eq!(
                (blocks(&d).as_slice(), d.after_back_edge, d.ends_at_back_edge),
                (*nodes, *after, *ends),
                "path {p}"
            );
        }
        assert_eq!(dag.decode(6), Err(PathError::OutOfRange { number: 6, paths: 6 }));
        assert!(dag.decode(-1).is_err());
    }

    #[test]
    fn computed_numbering_matches_csi_cc_on_loop_main() {
        let (g, stated) = loop_main();
        let n = number(&g).unwrap();
        assert_eq!(n.paths, 6);
        let weights: Vec<i64> = n.edges.iter().map(|e| e.weight).collect();
        let want: Vec<i64> = stated.iter().map(|e| e.weight).collect();
        assert_eq!(weights, want);
        assert_eq!(n.edges[8].exit_weight, Some(0));
    }

    #[test]
    fn back_edges_found_by_depth_first_search() {
        let (mut g, _) = loop_main();
        for e in &mut g.edges {
            e.back = false;
        }
        mark_back_edges(&mut g).unwrap();
        let back: Vec<usize> = g.edges.iter().enumerate().filter(|(_, e)| e.back).map(|(i, _)| i).collect();
        assert_eq!(back, vec![8]);
        let mut cyclic = g.clone();
        cyclic.edges[8].back = false;
        assert!(matches!(number(&cyclic), Err(PathError::Cycle(_))));
    }

    #[test]
    fn crash_state_of_the_example() {
        let (g, stated) = loop_main();
        let dag = Dag::new(&g, &stated).unwrap();
        // Not wrapped: the slots before the index, oldest first.
        let c = dag.crash(&[1, 3, 6, 3, 2, 4, 8, 9, 2, -1], 2, 4, 9 - 2).unwrap();
        let done: Vec<(i64, Vec<u32>)> = c.completed.iter().map(|(n, p)| (*n, blocks(p))).collect();
        assert_eq!(done, vec![(1, vec![2, 4, 5, 8, 9]), (3, vec![4, 5, 7, 9])]);
        let partial: Vec<Vec<u32>> = c.partial.iter().map(blocks).collect();
        assert_eq!(partial, vec![vec![4, 5, 8, 9]]);
        assert!(c.partial[0].after_back_edge);
        // Wrapped: from the index on, then from the start.
        let c = dag.crash(&[0, 1, 2, 3, 4, 5, 0, 1, 2, 3], 8, 0, 0).unwrap();
        let numbers: Vec<i64> = c.completed.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, vec![2, 3, 0, 1, 2, 3, 4, 5, 0, 1]);
        assert_eq!(c.partial.len(), 1);
        assert_eq!(blocks(&c.partial[0]), vec![2]);
        // A slot out of range is an error.
        assert!(dag.crash(&[7, -1], 1, 0, 0).is_err());
    }

    #[test]
    fn stated_weights_that_do_not_tile_are_refused() {
        let (g, mut stated) = loop_main();
        stated[2].weight = 5;
        assert!(matches!(Dag::new(&g, &stated), Err(PathError::BadWeights { .. })));
    }

    #[test]
    fn numbering_is_linear_on_a_long_ladder() {
        // 3 nodes per rung (a diamond's two arms and a join), a back edge every rung and a cut
        // link every 30 rungs to keep path counts in 64 bits: 30_002 nodes.
        let rungs = 10_000u32;
        let mut edges = Vec::new();
        let node = |r: u32, k: u32| 2 + 3 * r + k;
        edges.push(GraphEdge { source: 0, target: node(0, 0), back: false });
        for r in 0..rungs {
            let (a, b, j) = (node(r, 0), node(r, 1), node(r, 2));
            edges.push(GraphEdge { source: a, target: b, back: false });
            edges.push(GraphEdge { source: a, target: j, back: false });
            edges.push(GraphEdge { source: b, target: j, back: false });
            let next = if r + 1 < rungs { node(r + 1, 0) } else { 1 };
            edges.push(GraphEdge { source: j, target: next, back: r % 30 == 29 });
            edges.push(GraphEdge { source: j, target: a, back: true });
        }
        let g = PathGraph { nodes: 2 + 3 * rungs, entry: 0, exit: 1, edges };
        let n = number(&g).unwrap();
        let dag = Dag::new(&g, &n.edges).unwrap();
        assert_eq!(dag.paths(), n.paths);
        let last = dag.decode((n.paths - 1) as i64).unwrap();
        assert!(!last.nodes.is_empty());
    }

    /// `diamonds` diamonds in a row: 2^diamonds acyclic paths.
    fn diamonds(diamonds: u32) -> PathGraph {
        let mut edges = Vec::new();
        let node = |d: u32, k: u32| 2 + 3 * d + k;
        edges.push(GraphEdge { source: 0, target: node(0, 0), back: false });
        for d in 0..diamonds {
            let (a, b, j) = (node(d, 0), node(d, 1), node(d, 2));
            edges.push(GraphEdge { source: a, target: b, back: false });
            edges.push(GraphEdge { source: a, target: j, back: false });
            edges.push(GraphEdge { source: b, target: j, back: false });
            let next = if d + 1 < diamonds { node(d + 1, 0) } else { 1 };
            edges.push(GraphEdge { source: j, target: next, back: false });
        }
        PathGraph { nodes: 2 + 3 * diamonds, entry: 0, exit: 1, edges }
    }

    #[test]
    fn exactly_two_to_the_63_paths_are_numbered_and_one_more_doubling_is_refused() {
        let g = diamonds(63);
        let n = number(&g).unwrap();
        assert_eq!(n.paths, 1 << 63);
        let dag = Dag::new(&g, &n.edges).unwrap();
        assert_eq!(dag.paths(), 1 << 63);
        // The first and last numbers take opposite arms of every diamond.
        let (first, last) = (dag.decode(0).unwrap(), dag.decode(i64::MAX).unwrap());
        let mut lengths = [first.nodes.len(), last.nodes.len()];
        lengths.sort_unstable();
        assert_eq!(lengths, [2 + 2 * 63, 2 + 3 * 63]);
        assert!(dag.decode(-1).is_err());
        assert_eq!(number(&diamonds(64)), Err(PathError::TooManyPaths));
        assert_eq!(PathError::TooManyPaths.to_string(), "more than 2^63 acyclic paths");
    }
}
