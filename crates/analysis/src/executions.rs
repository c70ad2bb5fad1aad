//! Execution counts that follow from the edges.

use cfghub_model::ir::{BlockRef, Image, NodeRef, Process};

/// One value for every block of a process, by image and block index: a dense table, since
/// a model numbers the blocks of each image from 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerBlock<T> {
    images: Vec<Vec<T>>,
}

impl<T> PerBlock<T> {
    /// The value of block `r`; `None` for a block the process does not have.
    pub fn get(&self, r: BlockRef) -> Option<&T> {
        self.images.get(r.image as usize)?.get(r.block as usize)
    }

    fn get_mut(&mut self, r: BlockRef) -> Option<&mut T> {
        self.images.get_mut(r.image as usize)?.get_mut(r.block as usize)
    }
}

/// Per-thread execution counts of every block: the sum of its incoming edges' counts.
/// (DCFG `COUNT` is the all-thread total and is optional; edges carry the per-thread split.)
pub fn block_thread_counts(process: &Process) -> ThreadCounts {
    let threads = process.thread_count();
    let mut counts = ThreadCounts {
        threads,
        images: process
            .images
            .iter()
            .map(|i| (i.blocks.len(), vec![0u64; i.blocks.len() * threads]))
            .collect(),
    };
    for edge in &process.edges {
        if let NodeRef::Block(target) = edge.target {
            let Some(slot) = counts.get_mut(target) else { continue };
            for (s, &c) in slot.iter_mut().zip(edge.counts.iter()) {
                *s = s.saturating_add(c);
            }
        }
    }
    counts
}

/// Per-thread counts of every block of a process, each image's in one list (`threads` numbers
/// per block) rather than a list per block: a DCFG has millions of blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadCounts {
    threads: usize,
    /// Per image: its number of blocks, and their counts.
    images: Vec<(usize, Vec<u64>)>,
}

impl ThreadCounts {
    /// The counts of block `r`, thread 0 first; `None` for a block the process does not have.
    pub fn get(&self, r: BlockRef) -> Option<&[u64]> {
        let (blocks, counts) = self.images.get(r.image as usize)?;
        let start = (r.block as usize) * self.threads;
        counts.get(start..start + self.threads).filter(|_| (r.block as usize) < *blocks)
    }

    fn get_mut(&mut self, r: BlockRef) -> Option<&mut [u64]> {
        let (blocks, counts) = self.images.get_mut(r.image as usize)?;
        let start = (r.block as usize) * self.threads;
        counts.get_mut(start..start + self.threads).filter(|_| (r.block as usize) < *blocks)
    }
}

/// Executions of every block over all threads: its stated count, or else the sum of its
/// incoming edges.
pub fn block_totals(process: &Process) -> PerBlock<u64> {
    let mut totals = PerBlock {
        images: process
            .images
            .iter()
            .map(|i| i.blocks.iter().map(|b| b.count.unwrap_or(0)).collect())
            .collect(),
    };
    let stated = |r: BlockRef| {
        process
            .images
            .get(r.image as usize)
            .and_then(|i| i.blocks.get(r.block as usize))
            .is_some_and(|b| b.count.is_some())
    };
    if process.images.iter().flat_map(|i| &i.blocks).any(|b| b.count.is_none()) {
        for edge in &process.edges {
            if let NodeRef::Block(target) = edge.target {
                if !stated(target) {
                    if let Some(t) = totals.get_mut(target) {
                        *t = t.saturating_add(edge.total());
                    }
                }
            }
        }
    }
    totals
}

/// Instructions executed in the process according to its blocks: sum of `num_instrs * count`
/// (saturating at 2^64-1, never wrapping).
pub fn executed_instructions(process: &Process) -> u64 {
    process.images.iter().flat_map(|i| &i.blocks).fold(0u64, |sum, b| sum.saturating_add(b.executed_instrs()))
}

/// Instructions executed in some blocks of an image (a routine's or a loop's nodes): the sum of
/// `num_instrs * count`. Indices outside the image count nothing.
pub fn executed_in(image: &Image, blocks: &[u32]) -> u64 {
    blocks
        .iter()
        .filter_map(|&b| image.blocks.get(b as usize))
        .fold(0u64, |sum, block| sum.saturating_add(block.executed_instrs()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Block, Edge, EdgeKind};

    fn edge(source: NodeRef, target: (u32, u32), counts: &[u64]) -> Edge {
        Edge {
            id: 0,
            source,
            target: NodeRef::Block(BlockRef { image: target.0, block: target.1 }),
            kind: EdgeKind::FallThrough,
            counts: counts.iter().copied().collect(),
            details: None,
        }
    }

    /// Two images; block (0, 0) states its count, the others have theirs from their edges.
    fn process() -> Process {
        let block = |count| Block { num_instrs: 1, count, ..Block::default() };
        let mut p = Process { thread_instr_counts: vec![0, 0], ..Process::default() };
        p.images = vec![
            Image { blocks: vec![block(Some(7)), block(None)], ..Image::default() },
            Image { blocks: vec![block(None)], ..Image::default() },
        ];
        p.edges = vec![
            edge(NodeRef::Start, (0, 0), &[3, 1]),
            edge(NodeRef::Block(BlockRef { image: 0, block: 0 }), (0, 1), &[2, 2]),
            edge(NodeRef::Block(BlockRef { image: 0, block: 1 }), (1, 0), &[1, 0]),
            edge(NodeRef::Block(BlockRef { image: 0, block: 1 }), (1, 0), &[0, 5]),
            // An edge into a block the process does not have counts nothing.
            edge(NodeRef::Start, (1, 9), &[4, 4]),
        ];
        p
    }

    #[test]
    fn totals_are_stated_counts_or_else_incoming_edges() {
        let totals = block_totals(&process());
        let at = |image, block| totals.get(BlockRef { image, block }).copied();
        assert_eq!((at(0, 0), at(0, 1), at(1, 0)), (Some(7), Some(4), Some(6)));
        assert_eq!(at(1, 9), None);
        assert_eq!(at(2, 0), None);
    }

    #[test]
    fn thread_counts_sum_incoming_edges_per_thread() {
        let counts = block_thread_counts(&process());
        let at = |image, block| counts.get(BlockRef { image, block }).map(<[u64]>::to_vec);
        assert_eq!(at(0, 0), Some(vec![3, 1]));
        assert_eq!(at(0, 1), Some(vec![2, 2]));
        assert_eq!(at(1, 0), Some(vec![1, 5]));
        assert_eq!(at(1, 9), None);
    }
}
