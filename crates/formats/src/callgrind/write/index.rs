//! Look-up tables the Callgrind writer builds once per part, so that writing a cost line or an
//! edge is array indexing: source lines by address, blocks by address, the function of every
//! symbol and block with its name compressed (the facts behind them are
//! [`crate::callgrind::functions`]), and which edges write something (the pairing of
//! conditionals with their fall-throughs is [`crate::callgrind::branch_pairs`]).

use std::borrow::Cow;

use crate::callgrind::branch_pairs::BranchPairs;
use crate::callgrind::functions::{self, BlockEnds, FunctionName};
use cfghub_analysis::source::SourceIndex;
use cfghub_model::ir::NO_INDEX;
use cfghub_model::ir::{BlockRef, EdgeKind, FileId, NodeRef, Process, Profile, Routine};

use super::name_keys::NameTable;

/// A function as written: its object (image index), its name (a key of the function names)
/// and its `fl=` file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Func {
    pub image: u32,
    pub name: u32,
    pub file: Option<FileId>,
}

/// An edge end as written: its function, address and line.
pub(super) type Place = (Func, u64, u32);

/// The function every edge end and cost belongs to: a symbol, or the routine of a block (see
/// [`functions::of_blocks`]), with its name as a key of the writer's compressed names.
pub(super) struct FuncIndex<'p> {
    process: &'p Process,
    /// Per image, the function of every symbol.
    symbols: Vec<Vec<Func>>,
    /// The function of every call graph node.
    nodes: Vec<Func>,
    /// Per image, every block's ends.
    blocks: Vec<Vec<BlockEnds>>,
}

impl<'p> FuncIndex<'p> {
    /// The functions of `process`: its symbols and, when given, its routines (numbered as
    /// the call graph numbers its nodes: images in order, routines in order).
    pub(super) fn new(
        profile: &Profile,
        functions: &mut NameTable,
        lines: &[SourceIndex],
        process: &'p Process,
        routines: Option<&[Cow<'_, [Routine]>]>,
    ) -> FuncIndex<'p> {
        let symbols: Vec<Vec<Func>> = process
            .images
            .iter()
            .enumerate()
            .map(|(i, image)| {
                image
                    .symbols
                    .iter()
                    .map(|s| Func { image: i as u32, name: functions.key(&s.name), file: s.file })
                    .collect()
            })
            .collect();
        let of_blocks = functions::of_blocks(profile, lines, process, routines);
        let nodes = of_blocks
            .routines
            .iter()
            .map(|r| {
                let name = match &r.name {
                    // The symbol starting at the entry: its name's key is known.
                    FunctionName::Symbol(s) => symbols[r.image as usize][*s as usize].name,
                    FunctionName::Code(name) => functions.key(name),
                };
                Func { image: r.image, name, file: r.file }
            })
            .collect();
        FuncIndex { process, symbols, nodes, blocks: of_blocks.blocks }
    }

    /// The call graph node of the routine holding block `b`.
    pub(super) fn node_of(&self, b: BlockRef) -> Option<u32> {
        self.block(b).map(|e| e.routine).filter(|&n| n != NO_INDEX)
    }

    /// The function of symbol `symbol` of image `image`.
    pub(super) fn symbol(&self, image: usize, symbol: u32) -> Option<Func> {
        self.symbols.get(image)?.get(symbol as usize).copied()
    }

    /// The function of call graph node `n`.
    pub(super) fn node(&self, n: u32) -> Func {
        self.nodes[n as usize]
    }

    /// The ends of block `b`.
    pub(super) fn block(&self, b: BlockRef) -> Option<&BlockEnds> {
        self.blocks.get(b.image as usize)?.get(b.block as usize)
    }

    /// The function of an edge end and its position (address, line): the given `offset` and
    /// `line` (an edge's site) where stated, else the block's last instruction (the `source`
    /// of an edge) or first instruction (its target).
    #[inline]
    pub(super) fn place(
        &self,
        node: NodeRef,
        offset: Option<u64>,
        line: Option<u32>,
        source: bool,
    ) -> Option<Place> {
        match node {
            NodeRef::Block(b) => {
                let end = self.block(b)?;
                let f = *self.nodes.get(end.routine as usize)?;
                let block = &self.process.images[b.image as usize].blocks[b.block as usize];
                let (addr, l) =
                    if source { (block.last_instr(), end.last_line) } else { (block.offset, end.first_line) };
                Some((f, offset.unwrap_or(addr), line.unwrap_or(l)))
            }
            NodeRef::Symbol(s) => {
                Some((self.symbol(s.image as usize, s.symbol)?, offset.unwrap_or(0), line.unwrap_or(0)))
            }
            _ => None,
        }
    }
}

/// Blocks of every image sorted by address, to find the block holding an address.
pub(super) struct BlockIndex {
    starts: Vec<Vec<(u64, u32)>>,
}

impl BlockIndex {
    pub(super) fn new(process: &Process) -> BlockIndex {
        let starts = process
            .images
            .iter()
            .map(|image| {
                let mut v: Vec<(u64, u32)> =
                    image.blocks.iter().enumerate().map(|(b, bl)| (bl.offset, b as u32)).collect();
                v.sort_unstable();
                v
            })
            .collect();
        BlockIndex { starts }
    }

    /// The block holding `addr`. Addresses mostly fall in the block of the previous look-up or
    /// the next one (costs listed by address): `hint` is where that one was, and those two are
    /// tried before a search.
    pub(super) fn containing_from(
        &self,
        process: &Process,
        image: u32,
        addr: u64,
        hint: &mut usize,
    ) -> Option<BlockRef> {
        let starts = self.starts.get(image as usize)?;
        // The last block starting at or before addr: the hinted one or the next when they are.
        let at = |p: usize| starts.get(p).is_some_and(|s| s.0 <= addr);
        let p = if at(*hint) && !at(*hint + 1) {
            *hint
        } else if at(*hint + 1) && !at(*hint + 2) {
            *hint + 1
        } else {
            starts.partition_point(|s| s.0 <= addr).checked_sub(1)?
        };
        *hint = p;
        let b = starts[p].1;
        let bl = &process.images[image as usize].blocks[b as usize];
        (addr < bl.end()).then_some(BlockRef { image, block: b })
    }
}

/// What the writer does with each edge: which fall-through completes which conditional
/// ([`BranchPairs`]), and the edges that may write something.
pub(super) struct Pairs {
    branches: BranchPairs,
    /// The edges that may write something, in order: all but the fall-throughs that complete a
    /// conditional or leave a block, and the returns and bypasses of blocks (which the calls
    /// imply). Writing the whole process goes through these without touching the others.
    pub todo: Vec<u32>,
    /// The longest per-thread count array of an edge.
    pub threads: usize,
}

impl Pairs {
    pub(super) fn new(process: &Process) -> Pairs {
        let branches = BranchPairs::new(process);
        let mut threads = 0;
        let mut todo = Vec::new();
        for (k, e) in process.edges.iter().enumerate() {
            threads = threads.max(e.counts.len());
            let from_block = matches!(e.source, NodeRef::Block(_));
            let writes = match (e.kind == EdgeKind::FallThrough, from_block) {
                (true, true) => false,
                (true, false) => !branches.paired(k),
                _ => !(from_block && (e.kind.is_return() || e.kind.is_bypass())),
            };
            if writes {
                todo.push(k as u32);
            }
        }
        Pairs { branches, todo, threads }
    }

    /// The fall-through of conditional edge `k`.
    pub(super) fn partner(&self, k: usize) -> Option<usize> {
        self.branches.partner(k)
    }

    /// Whether fall-through edge `k` completes a conditional.
    pub(super) fn paired(&self, k: usize) -> bool {
        self.branches.paired(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Block, Edge, Image, SymbolRef};

    #[test]
    fn block_look_ups_from_a_hint_agree_with_a_scan() {
        let block = |offset, size| Block { offset, size, ..Block::default() };
        let image = Image {
            blocks: vec![block(0x40, 8), block(0x10, 4), block(0x20, 16), block(0x14, 2), block(0x60, 0)],
            ..Image::default()
        };
        let process = Process { images: vec![image], ..Process::default() };
        let index = BlockIndex::new(&process);
        let scan = |a: u64| {
            let blocks = &process.images[0].blocks;
            // The latest-starting block at or before a, if it holds a.
            let b = (0..blocks.len()).filter(|&b| blocks[b].offset <= a).max_by_key(|&b| blocks[b].offset)?;
            (a < blocks[b].end()).then_some(BlockRef { image: 0, block: b as u32 })
        };
        let mut hint = 0;
        for a in
            [0x0, 0x10, 0x13, 0x14, 0x15, 0x16, 0x20, 0x2f, 0x30, 0x44, 0x60, 0x61, 0x12, 0x41, 0x11, 0x99]
        {
            assert_eq!(index.containing_from(&process, 0, a, &mut hint), scan(a), "{a:#x}");
        }
        assert_eq!(index.containing_from(&process, 1, 0x10, &mut hint), None);
    }

    #[test]
    fn edges_the_calls_and_conditionals_imply_write_nothing_of_their_own() {
        let block = |b| NodeRef::Block(BlockRef { image: 0, block: b });
        let sym = |s| NodeRef::Symbol(SymbolRef { image: 0, symbol: s });
        let edge = |source, target, kind| Edge { source, target, kind, ..Edge::default() };
        let image = Image {
            blocks: vec![Block::default(); 3],
            symbols: vec![Default::default(), Default::default()],
            ..Image::default()
        };
        let process = Process {
            images: vec![image],
            edges: vec![
                edge(block(0), block(1), EdgeKind::FallThrough), // 0: a block's way on
                edge(block(1), block(2), EdgeKind::Call),        // 1
                edge(block(1), block(2), EdgeKind::CallBypass),  // 2: implied by the call
                edge(block(2), block(1), EdgeKind::Return),      // 3: likewise
                edge(sym(0), sym(1), EdgeKind::ConditionalBranch), // 4
                edge(sym(0), sym(0), EdgeKind::FallThrough),     // 5: completes 4
                edge(sym(1), sym(1), EdgeKind::FallThrough),     // 6: stands alone
            ],
            ..Process::default()
        };
        let p = Pairs::new(&process);
        assert_eq!((p.partner(4), p.paired(5)), (Some(5), true));
        assert_eq!(p.todo, [1, 4, 6]);
    }
}
