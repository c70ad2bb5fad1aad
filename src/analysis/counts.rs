//! Execution counts that follow from the edges.

use crate::ir::{BlockRef, Image, NodeRef, Process};
use std::collections::HashMap;

/// Per-thread execution counts of every block: the sum of its incoming edges' counts.
/// (DCFG `COUNT` is the all-thread total and is optional; edges carry the per-thread split.)
pub fn block_thread_counts(process: &Process) -> HashMap<BlockRef, Vec<u64>> {
    let threads = process.thread_count();
    let mut counts: HashMap<BlockRef, Vec<u64>> = HashMap::new();
    for edge in &process.edges {
        if let NodeRef::Block(target) = edge.target {
            let slot = counts.entry(target).or_insert_with(|| vec![0; threads]);
            for (t, &c) in edge.counts.iter().enumerate() {
                slot[t] = slot[t].saturating_add(c);
            }
        }
    }
    counts
}

/// Executions of every block over all threads: its stated count, or else the sum of its
/// incoming edges.
pub fn block_totals(process: &Process) -> HashMap<BlockRef, u64> {
    let mut from_edges: HashMap<BlockRef, u64> = HashMap::new();
    for edge in &process.edges {
        if let NodeRef::Block(target) = edge.target {
            *from_edges.entry(target).or_default() += edge.total();
        }
    }
    process
        .blocks()
        .map(|(r, b)| (r, b.count.unwrap_or_else(|| from_edges.get(&r).copied().unwrap_or(0))))
        .collect()
}

/// Instructions executed in the process according to its blocks: sum of `num_instrs * count`.
pub fn executed_instructions(process: &Process) -> u64 {
    process.images.iter().flat_map(|i| &i.blocks).map(|b| b.executed_instrs()).sum()
}

/// Instructions executed in some blocks of an image (a routine's or a loop's nodes): the sum of
/// `num_instrs * count`. Indices outside the image count nothing.
pub fn executed_in(image: &Image, blocks: &[u32]) -> u64 {
    blocks
        .iter()
        .filter_map(|&b| image.blocks.get(b as usize))
        .fold(0u64, |sum, block| sum.saturating_add(block.executed_instrs()))
}
