//! Which fall-through completes which conditional branch.
//!
//! A conditional branch leaves its block two ways: taken (a `CONDITIONAL_BRANCH` edge) or not
//! (a `FALL_THROUGH` from the same source). Formats that state one branch instruction with both
//! counts (Callgrind's `jcnd=followed/executed`, a branch record's taken and not-taken counts)
//! need to know which fall-through belongs to which conditional: each conditional takes the
//! first fall-through, in edge order, of the same source and source site (offset and line of
//! the edge's [`cfghub_model::ir::Site`]) not taken by an earlier conditional.

use cfghub_model::ir::NO_INDEX;
use cfghub_model::ir::{Edge, EdgeKind, NodeRef, Process, Site};

/// A dense index for every block and symbol of a process, and one more for every other edge
/// end (special nodes, references out of range): for tables indexed by edge end.
pub struct Slots {
    block_base: Vec<usize>,
    symbol_base: Vec<usize>,
    /// The slot of the other ends; also the number of block and symbol slots.
    pub other: usize,
}

impl Slots {
    pub fn new(process: &Process) -> Slots {
        let mut block_base = Vec::with_capacity(process.images.len());
        let mut symbol_base = Vec::with_capacity(process.images.len());
        let mut slots = 0usize;
        for image in &process.images {
            block_base.push(slots);
            slots += image.blocks.len();
        }
        for image in &process.images {
            symbol_base.push(slots);
            slots += image.symbols.len();
        }
        Slots { block_base, symbol_base, other: slots }
    }

    /// The slot of edge end `n`.
    #[inline]
    pub fn of(&self, process: &Process, n: NodeRef) -> usize {
        match n {
            NodeRef::Block(b) => match process.images.get(b.image as usize) {
                Some(i) if (b.block as usize) < i.blocks.len() => {
                    self.block_base[b.image as usize] + b.block as usize
                }
                _ => self.other,
            },
            NodeRef::Symbol(s) => match process.images.get(s.image as usize) {
                Some(i) if (s.symbol as usize) < i.symbols.len() => {
                    self.symbol_base[s.image as usize] + s.symbol as usize
                }
                _ => self.other,
            },
            _ => self.other,
        }
    }
}

/// Whether an edge takes part in the pairing: a conditional or a fall-through.
pub(crate) fn takes_part(e: &Edge) -> bool {
    e.kind.is_conditional() || e.kind == EdgeKind::FallThrough
}

/// The runs of edges with one source, as `(start, end)` index pairs, in order.
pub(crate) fn source_runs(edges: &[Edge]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut k = 0;
    std::iter::from_fn(move || {
        let source = edges.get(k)?.source;
        let start = k;
        k += 1;
        while k < edges.len() && edges[k].source == source {
            k += 1;
        }
        Some((start, k))
    })
}

/// Whether every source's conditionals and fall-throughs lie in one run of edges with that
/// source (as readers give them): then [`pair_group`] on each run pairs them as
/// [`BranchPairs`] would, and a writer can pair them as it writes. One pass over the sources
/// and kinds alone, which a writer can make before it writes anything.
pub(crate) fn pairable_in_runs(process: &Process) -> bool {
    let edges = &process.edges;
    let slots = Slots::new(process);
    let mut seen = vec![false; slots.other];
    source_runs(edges).all(|(k, end)| {
        if !edges[k..end].iter().any(takes_part) {
            return true;
        }
        let slot = slots.of(process, edges[k].source);
        slot != slots.other && !std::mem::replace(&mut seen[slot], true)
    })
}

/// A fall-through or conditional while pairing: source, site offset and line, whether a
/// conditional, edge index.
pub(crate) type PairEntry = (NodeRef, Option<u64>, Option<u32>, bool, u32);

/// Pairs the fall-throughs and conditionals of one source's edges (`group`, in edge order):
/// calls `pair(conditional, fall_through)` for each pair. `run` is scratch space. For callers
/// that meet the edges source by source and pair them on the way.
pub(crate) fn pair_group(
    edges: &[Edge],
    group: impl Iterator<Item = u32>,
    run: &mut Vec<PairEntry>,
    mut pair: impl FnMut(u32, u32),
) {
    run.clear();
    run.extend(group.map(|k| {
        let e = &edges[k as usize];
        let site = e.site();
        let (offset, line) = (site.and_then(Site::source_offset), site.and_then(Site::source_line));
        (e.source, offset, line, e.kind.is_conditional(), k)
    }));
    // By source and site, fall-throughs before conditionals, each in edge order.
    run.sort_unstable();
    let mut i = 0;
    while i < run.len() {
        let key = (run[i].0, run[i].1, run[i].2);
        let mut j = i;
        while j < run.len() && (run[j].0, run[j].1, run[j].2) == key {
            j += 1;
        }
        let conds = run[i..j].iter().position(|r| r.3).map_or(j, |p| i + p);
        for (f, c) in run[i..conds].iter().zip(&run[conds..j]) {
            pair(c.4, f.4);
        }
        i = j;
    }
}

/// The pairing of a process's conditionals and fall-throughs (see the module).
#[derive(Debug, Default)]
pub(crate) struct BranchPairs {
    /// Per edge: for a conditional, the index of its fall-through ([`NO_INDEX`] for none); empty
    /// when the process has no conditional.
    partner: Vec<u32>,
    /// Per edge: a fall-through taken by a conditional; empty likewise.
    paired: Vec<bool>,
}

/// A fall-through or conditional edge while pairing.
#[derive(Clone, Copy)]
struct Candidate {
    /// Dense index of the source.
    slot: u32,
    edge: u32,
    conditional: bool,
    /// Whether the edge may state a site (else its site is known to be none).
    details: bool,
}

impl BranchPairs {
    /// Pairs the edges of a process in one pass over them. Fall-throughs and conditionals are
    /// grouped by source: in place when the edges come sorted by source (as a Callgrind or DCFG
    /// reader gives them), else by a counting sort over every block and symbol (no hashing);
    /// inside a source's group, usually of two edges, by site.
    pub fn new(process: &Process) -> BranchPairs {
        let edges = &process.edges;
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut conditionals = false;
        let mut slots: Option<Slots> = None;
        for (k, e) in edges.iter().enumerate() {
            if takes_part(e) {
                let conditional = e.kind.is_conditional();
                conditionals |= conditional;
                let slots = slots.get_or_insert_with(|| Slots::new(process));
                candidates.push(Candidate {
                    slot: slots.of(process, e.source) as u32,
                    edge: k as u32,
                    conditional,
                    details: e.details.is_some(),
                });
            }
        }
        let mut pairs = BranchPairs::default();
        let Some(other) = slots.filter(|_| conditionals).map(|s| s.other) else { return pairs };
        pairs.partner = vec![NO_INDEX; edges.len()];
        pairs.paired = vec![false; edges.len()];
        if !candidates.windows(2).all(|w| w[0].slot <= w[1].slot) {
            // A stable counting sort by slot.
            let mut start = vec![0u32; other + 2];
            for c in &candidates {
                start[c.slot as usize + 1] += 1;
            }
            for s in 1..start.len() {
                start[s] += start[s - 1];
            }
            let mut sorted = candidates.clone();
            for &c in &candidates {
                sorted[start[c.slot as usize] as usize] = c;
                start[c.slot as usize] += 1;
            }
            candidates = sorted;
        }
        let mut run: Vec<PairEntry> = Vec::new();
        let mut a = 0;
        while a < candidates.len() {
            let s = candidates[a].slot;
            let mut b = a + 1;
            while b < candidates.len() && candidates[b].slot == s {
                b += 1;
            }
            let group = &candidates[a..b];
            a = b;
            if group.len() < 2 {
                continue;
            }
            if let [x, y] = group {
                // The common case: a block's conditional and its fall-through, neither with a
                // site, so that the pair is known without looking at the edges again.
                if x.conditional != y.conditional && !x.details && !y.details && s as usize != other {
                    let (f, c) = if x.conditional { (y.edge, x.edge) } else { (x.edge, y.edge) };
                    pairs.partner[c as usize] = f;
                    pairs.paired[f as usize] = true;
                    continue;
                }
            }
            let (partner, paired) = (&mut pairs.partner, &mut pairs.paired);
            pair_group(edges, group.iter().map(|c| c.edge), &mut run, |c, f| {
                partner[c as usize] = f;
                paired[f as usize] = true;
            });
        }
        pairs
    }

    /// The fall-through of conditional edge `k`.
    pub fn partner(&self, k: usize) -> Option<usize> {
        self.partner.get(k).filter(|&&f| f != NO_INDEX).map(|&f| f as usize)
    }

    /// Whether fall-through edge `k` completes a conditional.
    pub fn paired(&self, k: usize) -> bool {
        self.paired.get(k).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Block, BlockRef, EdgeDetails, Image, Site, SymbolRef};

    #[test]
    fn conditionals_take_the_fall_throughs_of_their_source_and_site_in_order() {
        let sym = |s| NodeRef::Symbol(SymbolRef { image: 0, symbol: s });
        let at = |line| EdgeDetails::boxed(Vec::new(), Some(Site::at_line(line)));
        let edge = |source, kind, details| Edge { source, target: sym(1), kind, details, ..Edge::default() };
        let image = Image { symbols: vec![Default::default(), Default::default()], ..Image::default() };
        let process = Process {
            images: vec![image],
            edges: vec![
                edge(sym(0), EdgeKind::FallThrough, at(5)),       // 0
                edge(sym(0), EdgeKind::ConditionalBranch, at(7)), // 1: no fall-through at line 7
                edge(sym(0), EdgeKind::ConditionalBranch, at(5)), // 2 -> 0
                edge(sym(0), EdgeKind::ConditionalBranch, at(5)), // 3 -> 5
                edge(sym(1), EdgeKind::FallThrough, at(5)),       // 4: another source
                edge(sym(0), EdgeKind::FallThrough, at(5)),       // 5
                edge(sym(0), EdgeKind::FallThrough, at(5)),       // 6: left over
            ],
            ..Process::default()
        };
        let p = BranchPairs::new(&process);
        let partners: Vec<Option<usize>> = (0..7).map(|k| p.partner(k)).collect();
        assert_eq!(partners, [None, None, Some(0), Some(5), None, None, None]);
        let paired: Vec<bool> = (0..7).map(|k| p.paired(k)).collect();
        assert_eq!(paired, [true, false, false, false, false, true, false]);
    }

    /// Edges pair run by run only when no source's conditionals and fall-throughs are split
    /// between two runs; runs of other edges may repeat a source.
    #[test]
    fn pairing_in_runs_needs_each_source_together() {
        let sym = |s| NodeRef::Symbol(SymbolRef { image: 0, symbol: s });
        let edge = |s, kind| Edge { source: sym(s), target: sym(1), kind, ..Edge::default() };
        let image = Image { symbols: vec![Default::default(), Default::default()], ..Image::default() };
        let with = |kinds: &[(u32, EdgeKind)]| Process {
            images: vec![image.clone()],
            edges: kinds.iter().map(|&(s, k)| edge(s, k)).collect(),
            ..Process::default()
        };
        use EdgeKind::{Call, ConditionalBranch as Cond, FallThrough as Ft};
        assert!(pairable_in_runs(&with(&[(0, Cond), (0, Ft), (1, Ft)])));
        assert!(pairable_in_runs(&with(&[(0, Call), (1, Cond), (0, Call)])));
        assert!(!pairable_in_runs(&with(&[(0, Cond), (1, Ft), (0, Ft)])));
        assert!(pairable_in_runs(&with(&[(0, Ft), (1, Call), (0, Call)])));
        assert!(!pairable_in_runs(&with(&[(0, Ft), (1, Call), (0, Cond)])));
        let runs: Vec<(usize, usize)> =
            source_runs(&with(&[(0, Call), (0, Ft), (1, Ft), (0, Call)]).edges).collect();
        assert_eq!(runs, [(0, 2), (2, 3), (3, 4)]);
    }

    #[test]
    fn blocks_pair_wherever_their_edges_stand() {
        let block = |b| NodeRef::Block(BlockRef { image: 0, block: b });
        let edge = |s, t, kind| Edge { source: block(s), target: block(t), kind, ..Edge::default() };
        let image = Image { blocks: vec![Block::default(); 4], ..Image::default() };
        let process = Process {
            images: vec![image],
            edges: vec![
                edge(2, 3, EdgeKind::FallThrough),       // 0
                edge(0, 2, EdgeKind::ConditionalBranch), // 1 -> 3
                edge(2, 0, EdgeKind::ConditionalBranch), // 2 -> 0: sources out of order
                edge(0, 1, EdgeKind::FallThrough),       // 3
                edge(1, 2, EdgeKind::ConditionalBranch), // 4: never falls through
            ],
            ..Process::default()
        };
        let p = BranchPairs::new(&process);
        assert_eq!((0..5).map(|k| p.partner(k)).collect::<Vec<_>>(), [None, Some(3), Some(0), None, None]);
        assert_eq!((0..5).map(|k| p.paired(k)).collect::<Vec<_>>(), [true, false, false, true, false]);
        // Without conditionals, nothing pairs.
        let only_ft = Process { edges: vec![process.edges[0].clone()], ..process.clone() };
        let p = BranchPairs::new(&only_ft);
        assert_eq!((p.partner(0), p.paired(0)), (None, false));
    }
}
