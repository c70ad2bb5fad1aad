//! The intra-routine control-flow graph of every image, in compressed adjacency form.
//!
//! Routine discovery, dominators and loops walk the edges that stay inside a routine
//! ([`cfghub_model::ir::EdgeKind::is_intra_routine`]: branches, fall-throughs, `REP` repeats and bypasses) between
//! blocks of the same image. This module gathers them once per process into two arrays per
//! image (a successor list, CSR style), so that every walk is a slice look-up; a routine's own graph
//! ([`RoutineCfg`]) holds its predecessors too.
//! Duplicate edges (the same two blocks under two kinds) are kept: walks do not mind them.

use cfghub_model::ir::{NodeRef, Process};

/// Successor lists of one image's blocks, over intra-routine edges only.
#[derive(Clone, Debug, Default)]
pub struct ImageCfg {
    succ_start: Vec<u32>,
    succ: Vec<u32>,
}

impl ImageCfg {
    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.succ_start.len().saturating_sub(1)
    }

    /// Whether the image has no blocks.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Blocks an intra-routine edge from `b` leads to.
    pub fn successors(&self, b: u32) -> &[u32] {
        let b = b as usize;
        &self.succ[self.succ_start[b] as usize..self.succ_start[b + 1] as usize]
    }

    /// Builds the graph of `blocks` blocks from `(source, target)` pairs (both `< blocks`).
    pub(crate) fn from_pairs(blocks: usize, pairs: &[(u32, u32)]) -> ImageCfg {
        let (succ_start, succ) = csr(blocks, pairs.iter().map(|&(s, t)| (s, t)), pairs.len());
        ImageCfg { succ_start, succ }
    }
}

fn csr(n: usize, pairs: impl Iterator<Item = (u32, u32)> + Clone, len: usize) -> (Vec<u32>, Vec<u32>) {
    let mut start = vec![0u32; n + 1];
    for (a, _) in pairs.clone() {
        start[a as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut list = vec![0u32; len];
    for (a, b) in pairs {
        list[fill[a as usize] as usize] = b;
        fill[a as usize] += 1;
    }
    (start, list)
}

/// The intra-routine graph of every image of a process (index = image index). Edges between
/// images, from or to special nodes, or naming blocks that do not exist are left out.
pub fn build(process: &Process) -> Vec<ImageCfg> {
    let mut pairs: Vec<Vec<(u32, u32)>> = vec![Vec::new(); process.images.len()];
    for e in &process.edges {
        if !e.kind.is_intra_routine() {
            continue;
        }
        if let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) {
            if s.image != t.image {
                continue;
            }
            let Some(image) = process.images.get(s.image as usize) else { continue };
            let n = image.blocks.len() as u32;
            if s.block < n && t.block < n {
                pairs[s.image as usize].push((s.block, t.block));
            }
        }
    }
    process.images.iter().zip(pairs).map(|(image, p)| ImageCfg::from_pairs(image.blocks.len(), &p)).collect()
}

/// One routine's part of an [`ImageCfg`], renumbered densely: local node `i` is block
/// `blocks[i]`, and `entry` is a local index.
/// Only edges between two of the routine's blocks are kept.
#[derive(Clone, Debug, Default)]
pub struct RoutineCfg {
    /// Block index (into `Image::blocks`) of every local node.
    pub blocks: Vec<u32>,
    /// Local index of the entry.
    pub entry: u32,
    succ_start: Vec<u32>,
    succ: Vec<u32>,
    pred_start: Vec<u32>,
    pred: Vec<u32>,
}

impl RoutineCfg {
    /// Extracts the routine with entry block `entry` and blocks `nodes` from `cfg`. `map` is
    /// scratch space of one slot per image block, all `u32::MAX`, and is left so. Nodes out of
    /// range or listed twice are ignored; the entry is added when `nodes` lacks it.
    pub fn new(cfg: &ImageCfg, entry: u32, nodes: &[u32], map: &mut Vec<u32>) -> RoutineCfg {
        let n_blocks = cfg.len();
        if map.len() < n_blocks {
            map.resize(n_blocks, u32::MAX);
        }
        let mut blocks = Vec::with_capacity(nodes.len() + 1);
        for &b in std::iter::once(&entry).chain(nodes) {
            if (b as usize) < n_blocks && map[b as usize] == u32::MAX {
                map[b as usize] = blocks.len() as u32;
                blocks.push(b);
            }
        }
        let mut pairs = Vec::new();
        for (i, &b) in blocks.iter().enumerate() {
            for &t in cfg.successors(b) {
                let j = map[t as usize];
                if j != u32::MAX {
                    pairs.push((i as u32, j));
                }
            }
        }
        for &b in &blocks {
            map[b as usize] = u32::MAX;
        }
        let n = blocks.len();
        let (succ_start, succ) = csr(n, pairs.iter().copied(), pairs.len());
        let (pred_start, pred) = csr(n, pairs.iter().map(|&(s, t)| (t, s)), pairs.len());
        // The entry went in first, so it is local node 0.
        RoutineCfg { blocks, entry: 0, succ_start, succ, pred_start, pred }
    }

    /// Builds a routine graph straight from local edges (tests): `n` nodes, node `i` standing
    /// for block `i`, entry `entry`.
    #[cfg(test)]
    pub(crate) fn from_local(n: usize, entry: u32, pairs: &[(u32, u32)]) -> RoutineCfg {
        let (succ_start, succ) = csr(n, pairs.iter().copied(), pairs.len());
        let (pred_start, pred) = csr(n, pairs.iter().map(|&(s, t)| (t, s)), pairs.len());
        RoutineCfg { blocks: (0..n as u32).collect(), entry, succ_start, succ, pred_start, pred }
    }

    /// Number of local nodes: the routine's blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether the routine has no blocks.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Local nodes an edge inside the routine from local node `v` leads to.
    pub fn successors(&self, v: u32) -> &[u32] {
        let v = v as usize;
        &self.succ[self.succ_start[v] as usize..self.succ_start[v + 1] as usize]
    }

    /// Local nodes with an edge inside the routine to local node `v`.
    pub(crate) fn predecessors(&self, v: u32) -> &[u32] {
        let v = v as usize;
        &self.pred[self.pred_start[v] as usize..self.pred_start[v + 1] as usize]
    }
}
