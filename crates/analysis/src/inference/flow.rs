//! Profile inference on one function: block and edge counts that conserve flow and stay as
//! close as they can to measured block weights, by a minimum-cost flow.
//!
//! The network is profi's (He, Mestre, Pupyrev, Wang, Yu, "Profile Inference Revisited",
//! POPL 2022; LLVM's `SampleProfileInference`). Every block `b` is split into `b_in` and
//! `b_out`, every jump `u -> v` is an arc `u_out -> v_in`, the entry is fed from a source `S`
//! and every exit drains into a sink `T`, with `T -> S` closing a circulation. Raising a
//! block's count by one costs a unit along `b_in -> b_out`; lowering it (below its weight `w`)
//! a unit along `b_out -> b_in` (capacity `w`). A super-source `S1` supplies `w` at `b_out`
//! and a super-sink `T1` takes `w` from `b_in`: a flow that saturates them is a circulation
//! in which the block's count is `w` plus what runs `b_in -> b_out` less what runs back. The
//! cheapest such flow is the inference: counts move off the weights only where flow
//! conservation forces them to, and then where it costs least (a fall-through is cheaper to
//! raise than a taken branch; the entry's count is dear to move).
//!
//! The flow is found by successive shortest paths (Bellman-Ford with a queue on the residual
//! network), each path pushed to its bottleneck. Paths of equal cost are many where weights
//! are missing (a short block no sample fell on); each augmentation spreads over them no
//! better than the first found, so a last pass ([`join_isolated_components`]) makes sure
//! every block with a count is reached from the entry by blocks with counts, as profi does.

use std::collections::VecDeque;

/// A unit of flow more than any path can carry.
const UNBOUNDED: i64 = i64::MAX / 4;

/// What moving a count off its weight costs, per unit (profi's defaults, `ProfiParams`).
#[derive(Clone, Copy, Debug)]
pub struct Costs {
    /// Raising a block's count.
    pub block_increase: i64,
    /// Lowering a block's count.
    pub block_decrease: i64,
    /// Raising the count of a block with no weight (no sample fell on it).
    pub block_zero_increase: i64,
    /// Raising the entry block's count.
    pub entry_increase: i64,
    /// Lowering the entry block's count.
    pub entry_decrease: i64,
    /// Sending a unit over a taken branch.
    pub jump: i64,
    /// Sending a unit over a fall-through.
    pub fall_through: i64,
    /// Costs relative to each block's weight (see [`block_costs`]): `block_increase` and
    /// `block_decrease` are then the cost of moving the heaviest block by one unit.
    pub relative: bool,
    /// With `relative`: a block without weight is priced as its heaviest neighbour is, not
    /// as a cold block (for a function whose few samples the cold prices would all drop: a
    /// loop whose header no sample fell on).
    pub unweighted_like_neighbours: bool,
}

impl Costs {
    /// The costs profile inference from time samples uses (see [`block_costs`]): raising a
    /// block's count by a fraction of its weight costs half as much as lowering it by that
    /// fraction (a time sample is more often missing from a cheap block than extra in it).
    pub fn relative() -> Costs {
        Costs { block_increase: 1000, block_decrease: 2000, relative: true, ..Costs::default() }
    }
}

impl Default for Costs {
    fn default() -> Costs {
        Costs {
            block_increase: 10,
            block_decrease: 20,
            block_zero_increase: 11,
            entry_increase: 40,
            entry_decrease: 10,
            jump: 1,
            fall_through: 0,
            relative: false,
            unweighted_like_neighbours: false,
        }
    }
}

/// A function's control-flow graph with measured block weights. Block 0 is the entry.
#[derive(Clone, Debug, Default)]
pub struct FlowGraph {
    /// Each block's weight: its count as measured (0 where nothing was measured).
    pub weights: Vec<u64>,
    /// The jumps between blocks (branches and fall-throughs).
    pub jumps: Vec<Jump>,
}

/// A jump between two blocks of a [`FlowGraph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jump {
    /// The block control leaves.
    pub source: u32,
    /// The block control enters.
    pub target: u32,
    /// Whether it is the fall-through into the next block (cheaper to raise than a branch).
    pub fall_through: bool,
}

/// Counts that conserve flow: at every block, what enters (the jumps into it, and for the
/// entry the function's calls) equals what leaves (the jumps out of it, and for an exit its
/// returns).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Each block's count.
    pub blocks: Vec<u64>,
    /// Each jump's count, in the order of [`FlowGraph::jumps`].
    pub jumps: Vec<u64>,
}

/// Block and jump counts for `graph` (see the module documentation). A block without jumps
/// out is an exit; the function is entered at block 0 only.
pub fn infer(graph: &FlowGraph, costs: &Costs) -> Counts {
    let n = graph.weights.len();
    if n == 0 {
        return Counts::default();
    }
    let mut is_exit = vec![true; n];
    for j in &graph.jumps {
        is_exit[j.source as usize] = false;
    }
    let scale = Scale::of(&graph.weights);
    // With `unweighted_like_neighbours`: an unweighted block's heaviest neighbour's weight.
    let mut neighbour = vec![0u64; n];
    if costs.unweighted_like_neighbours {
        for j in &graph.jumps {
            let (a, b) = (j.source as usize, j.target as usize);
            neighbour[a] = neighbour[a].max(graph.weights[b]);
            neighbour[b] = neighbour[b].max(graph.weights[a]);
        }
    }
    let (s, t, s1, t1) = (2 * n, 2 * n + 1, 2 * n + 2, 2 * n + 3);
    let mut net = Network::new(2 * n + 4);
    let mut block_arcs = Vec::with_capacity(n);
    for (b, &weight) in graph.weights.iter().enumerate() {
        let (b_in, b_out) = (2 * b, 2 * b + 1);
        if b == 0 {
            net.add(s, b_in, UNBOUNDED, 0);
        }
        if is_exit[b] {
            net.add(b_out, t, UNBOUNDED, 0);
        }
        let w = weight.min(UNBOUNDED as u64 / 1024) as i64;
        if w > 0 {
            net.add(s1, b_out, w, 0);
            net.add(b_in, t1, w, 0);
        }
        let reference = if weight == 0 { neighbour[b] } else { weight };
        let (increase, decrease) = block_costs(costs, b, reference, scale);
        let up = net.add(b_in, b_out, UNBOUNDED, increase);
        let down = (w > 0).then(|| net.add(b_out, b_in, w, decrease));
        block_arcs.push((w, up, down));
    }
    let jump_arcs: Vec<usize> = graph
        .jumps
        .iter()
        .map(|j| {
            let cost = if j.fall_through { costs.fall_through } else { costs.jump };
            net.add(2 * j.source as usize + 1, 2 * j.target as usize, UNBOUNDED, cost)
        })
        .collect();
    net.add(t, s, UNBOUNDED, 0);
    net.run(s1, t1);
    let mut counts = Counts {
        blocks: block_arcs
            .iter()
            .map(|&(w, up, down)| (w + net.flow(up) - down.map_or(0, |d| net.flow(d))).max(0) as u64)
            .collect(),
        jumps: jump_arcs.iter().map(|&a| net.flow(a).max(0) as u64).collect(),
    };
    join_isolated_components(graph, &is_exit, &mut counts);
    counts
}

/// The weights a function's relative costs are measured against.
#[derive(Clone, Copy, Debug)]
struct Scale {
    /// The largest weight.
    largest: u64,
    /// The least weight a block's costs are relative to: a tenth of the largest. A block
    /// weighed less (few samples, or none) is as dear to move, per unit, as one weighed that:
    /// its weight says little, and a cold block on the way to a hot loop must be free to
    /// carry the loop's entries.
    floor: u64,
}

impl Scale {
    fn of(weights: &[u64]) -> Scale {
        let largest = weights.iter().copied().max().unwrap_or(0).max(1);
        Scale { largest, floor: (largest / 10).max(1) }
    }
}

/// The cost of raising and of lowering block `b`'s count by one unit.
fn block_costs(costs: &Costs, b: usize, weight: u64, scale: Scale) -> (i64, i64) {
    if costs.relative {
        // Per unit, the fraction of the block's own weight: a count off by a factor costs
        // the same in a hot block as in a cold one.
        let per_unit = |factor: i64| -> i64 {
            let w = u128::from(weight.max(scale.floor));
            let c = (factor as u128 * u128::from(scale.largest)).div_ceil(w);
            c.clamp(1, 1 << 30) as i64
        };
        return (per_unit(costs.block_increase), per_unit(costs.block_decrease));
    }
    match (b == 0, weight == 0) {
        (true, _) => (costs.entry_increase, costs.entry_decrease),
        (false, true) => (costs.block_zero_increase, 0),
        (false, false) => (costs.block_increase, costs.block_decrease),
    }
}

/// Makes every block with a count reachable from the entry through jumps with counts, and
/// able to reach an exit so: a cycle of counts that the cheapest flow left apart from the
/// entry (a hot loop whose way in no sample showed) is joined to it by one unit along a
/// shortest path in, and one out, as profi does (`joinIsolatedComponents`).
fn join_isolated_components(graph: &FlowGraph, is_exit: &[bool], counts: &mut Counts) {
    let n = graph.weights.len();
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, j) in graph.jumps.iter().enumerate() {
        out[j.source as usize].push(k);
    }
    loop {
        let reached = reach_with_counts(&out, graph, counts);
        let Some(isolated) = (0..n).find(|&b| counts.blocks[b] > 0 && !reached[b]) else { return };
        // In: a shortest path from the entry, over any jumps; out: one to an exit.
        let Some(path_in) = shortest_path(n, 0, |b| b == isolated, |b| out_of(&out, graph, b)) else {
            return;
        };
        let Some(path_out) = shortest_path(n, isolated, |b| is_exit[b], |b| out_of(&out, graph, b)) else {
            return;
        };
        // One more run of the function, through the isolated block.
        counts.blocks[0] += 1;
        for &k in path_in.iter().chain(&path_out) {
            counts.jumps[k] += 1;
            counts.blocks[graph.jumps[k].target as usize] += 1;
        }
    }
}

fn out_of<'a>(
    out: &'a [Vec<usize>],
    graph: &'a FlowGraph,
    b: usize,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    out[b].iter().map(move |&k| (k, graph.jumps[k].target as usize))
}

/// The blocks reached from the entry through jumps with counts.
fn reach_with_counts(out: &[Vec<usize>], graph: &FlowGraph, counts: &Counts) -> Vec<bool> {
    let mut reached = vec![false; graph.weights.len()];
    if counts.blocks.first().is_some_and(|&c| c > 0) {
        reached[0] = true;
        let mut todo = vec![0usize];
        while let Some(b) = todo.pop() {
            for &k in &out[b] {
                let t = graph.jumps[k].target as usize;
                if counts.jumps[k] > 0 && !reached[t] {
                    reached[t] = true;
                    todo.push(t);
                }
            }
        }
    }
    reached
}

/// The jumps of a shortest path (fewest jumps) from `from` to a block `arrived` accepts.
fn shortest_path<I: Iterator<Item = (usize, usize)>>(
    n: usize,
    from: usize,
    arrived: impl Fn(usize) -> bool,
    next: impl Fn(usize) -> I,
) -> Option<Vec<usize>> {
    let mut via: Vec<Option<(usize, usize)>> = vec![None; n];
    let mut seen = vec![false; n];
    seen[from] = true;
    let mut queue = VecDeque::from([from]);
    while let Some(b) = queue.pop_front() {
        if arrived(b) {
            let mut path = Vec::new();
            let mut at = b;
            while let Some((k, prev)) = via[at] {
                path.push(k);
                at = prev;
            }
            path.reverse();
            return Some(path);
        }
        for (k, t) in next(b) {
            if !seen[t] {
                seen[t] = true;
                via[t] = Some((k, b));
                queue.push_back(t);
            }
        }
    }
    None
}

/// A flow network: arcs in pairs (an arc, then its reverse, of capacity 0 and opposite cost).
struct Network {
    heads: Vec<Vec<usize>>,
    to: Vec<usize>,
    capacity: Vec<i64>,
    cost: Vec<i64>,
    flow: Vec<i64>,
}

impl Network {
    fn new(nodes: usize) -> Network {
        Network {
            heads: vec![Vec::new(); nodes],
            to: Vec::new(),
            capacity: Vec::new(),
            cost: Vec::new(),
            flow: Vec::new(),
        }
    }

    /// Adds the arc `from -> to`; its index.
    fn add(&mut self, from: usize, to: usize, capacity: i64, cost: i64) -> usize {
        let k = self.to.len();
        for (a, b, c, d) in [(from, to, capacity, cost), (to, from, 0, -cost)] {
            self.heads[a].push(self.to.len());
            self.to.push(b);
            self.capacity.push(c);
            self.cost.push(d);
            self.flow.push(0);
        }
        k
    }

    fn flow(&self, arc: usize) -> i64 {
        self.flow[arc]
    }

    fn residual(&self, arc: usize) -> i64 {
        self.capacity[arc] - self.flow[arc]
    }

    /// A minimum-cost maximum flow from `source` to `sink`, by successive shortest paths.
    fn run(&mut self, source: usize, sink: usize) {
        let nodes = self.heads.len();
        let mut distance = vec![i64::MAX; nodes];
        let mut via = vec![usize::MAX; nodes];
        let mut queued = vec![false; nodes];
        let mut queue = VecDeque::new();
        loop {
            distance.fill(i64::MAX);
            via.fill(usize::MAX);
            distance[source] = 0;
            queue.push_back(source);
            queued[source] = true;
            while let Some(u) = queue.pop_front() {
                queued[u] = false;
                let du = distance[u];
                for &arc in &self.heads[u] {
                    if self.residual(arc) <= 0 {
                        continue;
                    }
                    let v = self.to[arc];
                    let dv = du + self.cost[arc];
                    if dv < distance[v] {
                        distance[v] = dv;
                        via[v] = arc;
                        if !queued[v] {
                            queued[v] = true;
                            queue.push_back(v);
                        }
                    }
                }
            }
            if distance[sink] == i64::MAX {
                return;
            }
            let mut push = UNBOUNDED;
            let mut at = sink;
            while at != source {
                let arc = via[at];
                push = push.min(self.residual(arc));
                at = self.to[arc ^ 1];
            }
            let mut at = sink;
            while at != source {
                let arc = via[at];
                self.flow[arc] += push;
                self.flow[arc ^ 1] -= push;
                at = self.to[arc ^ 1];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jump(source: u32, target: u32, fall_through: bool) -> Jump {
        Jump { source, target, fall_through }
    }

    /// Every block's count is what enters it and what leaves it.
    fn conserves(graph: &FlowGraph, counts: &Counts) -> bool {
        let n = graph.weights.len();
        let (mut ins, mut outs) = (vec![0u64; n], vec![0u64; n]);
        for (j, &c) in graph.jumps.iter().zip(&counts.jumps) {
            outs[j.source as usize] += c;
            ins[j.target as usize] += c;
        }
        (0..n).all(|b| {
            let exit = !graph.jumps.iter().any(|j| j.source as usize == b);
            (b == 0 || ins[b] == counts.blocks[b]) && (exit || outs[b] == counts.blocks[b])
        })
    }

    #[test]
    fn consistent_weights_are_kept_as_they_are() {
        // 0 -> {1, 2} -> 3: a diamond measured exactly.
        let graph = FlowGraph {
            weights: vec![100, 70, 30, 100],
            jumps: vec![jump(0, 1, true), jump(0, 2, false), jump(1, 3, false), jump(2, 3, true)],
        };
        let counts = infer(&graph, &Costs::default());
        assert_eq!(counts.blocks, vec![100, 70, 30, 100]);
        assert_eq!(counts.jumps, vec![70, 30, 70, 30]);
        assert!(conserves(&graph, &counts));
    }

    #[test]
    fn noisy_weights_become_counts_that_conserve_flow() {
        // A loop: 0 -> 1 (header) -> 2 (body) -> 1, 1 -> 3 (exit). The body was sampled
        // less than the header that runs once more per entry.
        let graph = FlowGraph {
            weights: vec![10, 1000, 900, 12],
            jumps: vec![jump(0, 1, true), jump(1, 2, true), jump(2, 1, false), jump(1, 3, false)],
        };
        let counts = infer(&graph, &Costs::default());
        assert!(conserves(&graph, &counts));
        // The header runs once more per entry than the body, and the exit as often as the
        // entry.
        assert_eq!(counts.blocks[1], counts.blocks[2] + counts.blocks[0]);
        assert_eq!(counts.blocks[3], counts.blocks[0]);
        assert!(counts.blocks[2] >= 900 && counts.blocks[1] <= 1000, "{counts:?}");
    }

    #[test]
    fn an_unsampled_block_on_the_only_way_gets_the_flow_through_it() {
        // 0 -> 1 -> 2: nothing fell on 1.
        let graph = FlowGraph { weights: vec![50, 0, 50], jumps: vec![jump(0, 1, true), jump(1, 2, false)] };
        let counts = infer(&graph, &Costs::default());
        assert_eq!(counts.blocks, vec![50, 50, 50]);
        assert_eq!(counts.jumps, vec![50, 50]);
    }

    #[test]
    fn a_loop_whose_way_in_has_no_samples_is_joined_to_the_entry() {
        // 0 -> 1 <-> 2, 1 -> 3: the entry and exit were never sampled, the loop was.
        let graph = FlowGraph {
            weights: vec![0, 500, 500, 0],
            jumps: vec![jump(0, 1, true), jump(1, 2, true), jump(2, 1, false), jump(1, 3, false)],
        };
        let counts = infer(&graph, &Costs::default());
        assert!(conserves(&graph, &counts), "{counts:?}");
        assert!(counts.blocks[0] >= 1 && counts.blocks[3] >= 1);
        assert!(counts.blocks[1] >= 500);
    }
}
