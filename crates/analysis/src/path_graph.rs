//! Acyclic paths of the model's routines: the [`PathGraph`] of a routine, with the Ball-Larus
//! numbers its input stated (CSI) or computed by [`ball_larus::number`], ready to decode.
//!
//! A routine's graph has its blocks as nodes and its intra-routine edges (calls and returns
//! left out). Its exit node is the routine's own exit block when the format has one block for
//! it (CSI's `EXIT`, in an image without addresses); otherwise a virtual exit node joined from
//! every exit block and every block without a successor. Back edges are the ones the input
//! marks (CSI `~>`); when it marks none, the retreating edges of a depth-first search.
//! Parallel edges (a conditional branch to the block it would fall through to) are one step of
//! a path and are numbered once.

use crate::ball_larus::{self, Dag, EdgeNumbers, GraphEdge, PathError, PathGraph};
use cfghub_model::ir::{Image, NodeRef, Process, Routine};

/// One routine's path graph and the model objects behind it.
#[derive(Clone, Debug)]
pub struct RoutinePaths {
    /// The routine's graph: its blocks (and a virtual exit node, when it needs one) as nodes,
    /// its intra-routine edges with their back edges marked.
    pub graph: PathGraph,
    /// The image block of each node; `None` for a virtual exit node.
    pub blocks: Vec<Option<u32>>,
    /// The process edge behind each graph edge; `None` for an edge to the virtual exit.
    pub edges: Vec<Option<usize>>,
    /// The numbers every edge states (CSI), or `None` when they are to be computed.
    pub stated: Option<Vec<EdgeNumbers>>,
}

impl RoutinePaths {
    /// The stated numbers, or the computed ones.
    pub fn numbers(&self) -> Result<Vec<EdgeNumbers>, PathError> {
        match &self.stated {
            Some(s) => Ok(s.clone()),
            None => Ok(ball_larus::number(&self.graph)?.edges),
        }
    }

    /// The acyclic graph with its numbers, ready to decode path numbers.
    pub fn dag(&self) -> Result<Dag, PathError> {
        Dag::new(&self.graph, &self.numbers()?)
    }

    /// Whether the exit node is a virtual one (not a block of the image) (tests).
    #[cfg(test)]
    fn virtual_exit(&self) -> bool {
        self.blocks.get(self.graph.exit as usize).is_some_and(|b| b.is_none())
    }
}

/// The path graphs of the routines `routines` of image `image` of `process` (as
/// [`crate::routines`] gives them), in the same order.
pub fn routine_paths(process: &Process, image: usize, routines: &[Routine]) -> Vec<RoutinePaths> {
    let img = &process.images[image];
    let nb = img.blocks.len();
    // Intra-routine edges by source block (compressed rows).
    let mut first = vec![0u32; nb + 1];
    let local = |r: NodeRef| match r {
        NodeRef::Block(b) if b.image as usize == image && (b.block as usize) < nb => Some(b.block),
        _ => None,
    };
    let inner: Vec<(u32, u32, usize)> = process
        .edges
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind.is_intra_routine())
        .filter_map(|(i, e)| Some((local(e.source)?, local(e.target)?, i)))
        .collect();
    for &(s, _, _) in &inner {
        first[s as usize + 1] += 1;
    }
    for i in 0..nb {
        first[i + 1] += first[i];
    }
    let mut fill = first.clone();
    let mut by_source = vec![(0u32, 0usize); inner.len()];
    for &(s, t, i) in &inner {
        by_source[fill[s as usize] as usize] = (t, i);
        fill[s as usize] += 1;
    }
    let mut node_of = vec![u32::MAX; nb];
    routines
        .iter()
        .map(|r| {
            let one = build(process, img, r, &first, &by_source, &mut node_of);
            for b in one.blocks.iter().flatten() {
                node_of[*b as usize] = u32::MAX;
            }
            one
        })
        .collect()
}

fn build(
    process: &Process,
    img: &Image,
    r: &Routine,
    first: &[u32],
    by_source: &[(u32, usize)],
    node_of: &mut [u32],
) -> RoutinePaths {
    let nb = img.blocks.len() as u32;
    let mut blocks: Vec<Option<u32>> = Vec::with_capacity(r.nodes.len() + 1);
    let add = |b: u32, blocks: &mut Vec<Option<u32>>, node_of: &mut [u32]| {
        if b < nb && node_of[b as usize] == u32::MAX {
            node_of[b as usize] = blocks.len() as u32;
            blocks.push(Some(b));
        }
    };
    add(r.entry, &mut blocks, node_of);
    for &b in &r.nodes {
        add(b, &mut blocks, node_of);
    }
    let mut edges = Vec::new();
    let mut graph_edges = Vec::new();
    let mut stated = Vec::new();
    let mut all_stated = true;
    let mut has_succ = vec![false; blocks.len()];
    for (v, b) in blocks.clone().iter().enumerate() {
        let b = b.expect("only blocks so far") as usize;
        for &(t, ei) in &by_source[first[b] as usize..first[b + 1] as usize] {
            let tn = node_of[t as usize];
            if tn == u32::MAX {
                continue;
            }
            has_succ[v] = true;
            let e = &process.edges[ei];
            // Two edges between the same blocks (a branch to the next block, taken or fallen
            // through) are one step of a path: numbered once, unless the input numbered both.
            if e.path().is_none()
                && graph_edges.iter().any(|g: &GraphEdge| g.source == v as u32 && g.target == tn)
            {
                continue;
            }
            match e.path() {
                Some(p) => {
                    stated.push(EdgeNumbers { increment: p.increment, weight: p.weight, exit_weight: None });
                    graph_edges.push(GraphEdge { source: v as u32, target: tn, back: p.back });
                }
                None => {
                    all_stated = false;
                    graph_edges.push(GraphEdge { source: v as u32, target: tn, back: false });
                }
            }
            edges.push(Some(ei));
        }
    }
    // The exit: the routine's one exit block in an image without addresses, else virtual.
    let single_exit = match r.exits.as_slice() {
        [x] if img.no_addresses && *x < nb && node_of[*x as usize] != u32::MAX => {
            let n = node_of[*x as usize];
            (!has_succ[n as usize]).then_some(n)
        }
        _ => None,
    };
    let exit = match single_exit {
        Some(n) => n,
        None => {
            let x = blocks.len() as u32;
            blocks.push(None);
            let exits: Vec<u32> = r.exits.iter().filter(|&&b| b < nb).map(|&b| node_of[b as usize]).collect();
            for v in 0..x {
                if !has_succ[v as usize] || exits.contains(&v) {
                    graph_edges.push(GraphEdge { source: v, target: x, back: false });
                    edges.push(None);
                    all_stated = false;
                }
            }
            x
        }
    };
    let mut graph = PathGraph { nodes: blocks.len() as u32, entry: 0, exit, edges: graph_edges };
    let stated = if all_stated && !graph.edges.is_empty() {
        Some(stated)
    } else {
        // Numbers are computed: cut the retreating edges (the input's marks are kept when it
        // marked any, since those are the edges its own numbering cut).
        if !graph.edges.iter().any(|e| e.back) {
            let _ = ball_larus::mark_back_edges(&mut graph);
        }
        None
    };
    RoutinePaths { graph, blocks, edges, stated }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Block, BlockRef, Edge, EdgeKind};

    fn edge(s: u32, t: u32, kind: EdgeKind) -> Edge {
        Edge {
            source: NodeRef::Block(BlockRef { image: 0, block: s }),
            target: NodeRef::Block(BlockRef { image: 0, block: t }),
            kind,
            ..Edge::default()
        }
    }

    /// A DCFG-like routine: 0 -> 1 -> 2 -> 1 (loop), 2 -> 3 (return block), with a call out
    /// of 1 that is not part of the graph.
    #[test]
    fn routine_with_a_loop_gets_a_virtual_exit_and_a_cut_back_edge() {
        let image = Image {
            blocks: (0..4).map(|i| Block { id: i + 10, ..Block::default() }).collect(),
            ..Image::default()
        };
        let process = Process {
            images: vec![image],
            edges: vec![
                edge(0, 1, EdgeKind::FallThrough),
                edge(1, 2, EdgeKind::FallThrough),
                edge(2, 1, EdgeKind::ConditionalBranch),
                edge(2, 3, EdgeKind::FallThrough),
                edge(1, 0, EdgeKind::DirectCall),
            ],
            ..Process::default()
        };
        let r = Routine { entry: 0, exits: vec![3], nodes: vec![0, 1, 2, 3], ..Routine::default() };
        let rp = &routine_paths(&process, 0, &[r])[0];
        assert!(rp.virtual_exit());
        assert_eq!(rp.graph.edges.iter().filter(|e| e.back).count(), 1);
        let dag = rp.dag().unwrap();
        // 0 1 2 3 X, 0 1 2 (back), 1 2 3 X, 1 2 (back)
        assert_eq!(dag.paths(), 4);
        for p in 0..4 {
            dag.decode(p).unwrap();
        }
    }
}
