//! Look-up tables the Callgrind writer builds once per part, so that writing a cost line or an
//! edge is array indexing: source lines by address, blocks by address, the function of every
//! symbol and block, the source line of every block's first and last instruction, and which
//! fall-through completes which conditional branch.

use crate::analysis::{callgraph, names};
use crate::ir::{Block, BlockRef, EdgeKind, FileId, Image, NodeRef, Process, SourceLine};

use super::write_names::NameTable;

/// Marks "none" in the index vectors.
pub(super) const NONE: u32 = u32::MAX;

/// A function as written: its object (image index), its name (a key of the function names)
/// and its `fl=` file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Func {
    pub image: u32,
    pub name: u32,
    pub file: Option<FileId>,
}

/// The function every edge end and cost belongs to: a symbol, or the routine of a block.
pub(super) struct FuncIndex<'g> {
    /// Per image, the function of every symbol.
    symbols: Vec<Vec<Func>>,
    /// The function of every call graph node.
    nodes: Vec<Func>,
    graph: Option<&'g callgraph::CallGraph>,
}

impl<'g> FuncIndex<'g> {
    pub(super) fn new(
        functions: &mut NameTable,
        lines: &[LineIndex],
        process: &Process,
        graph: Option<&'g callgraph::CallGraph>,
    ) -> FuncIndex<'g> {
        let symbols = process
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
        let mut nodes = Vec::new();
        if let Some(g) = graph {
            let indexes: Vec<names::SymbolIndex> =
                process.images.iter().map(names::SymbolIndex::new).collect();
            nodes.reserve(g.nodes.len());
            for n in &g.nodes {
                let image = &process.images[n.image as usize];
                let entry = image.blocks.get(n.entry.block as usize);
                let index = &indexes[n.image as usize];
                // The file of the symbol at the entry, else of the entry's source line.
                let file = entry
                    .and_then(|b| index.covering(b.offset))
                    .and_then(|s| image.symbols[s as usize].file)
                    .or_else(|| {
                        entry.and_then(|b| lines[n.image as usize].at(image, b.offset)).and_then(|l| l.file)
                    });
                nodes.push(Func { image: n.image, name: functions.key(&n.name), file });
            }
        }
        FuncIndex { symbols, nodes, graph }
    }

    /// The function of symbol `symbol` of image `image`.
    pub(super) fn symbol(&self, image: usize, symbol: u32) -> Option<Func> {
        self.symbols.get(image)?.get(symbol as usize).copied()
    }

    /// The function of call graph node `n`.
    pub(super) fn node(&self, n: u32) -> Func {
        self.nodes[n as usize]
    }

    /// The function of an edge end.
    pub(super) fn of(&self, node: NodeRef) -> Option<Func> {
        match node {
            NodeRef::Symbol(s) => self.symbol(s.image as usize, s.symbol),
            NodeRef::Block(b) => {
                let n = self.graph?.node_of(b)?;
                self.nodes.get(n as usize).copied()
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

    pub(super) fn containing(&self, process: &Process, image: u32, addr: u64) -> Option<BlockRef> {
        let starts = self.starts.get(image as usize)?;
        let p = starts.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let b = starts[p].1;
        let bl = &process.images[image as usize].blocks[b as usize];
        (addr < bl.offset.saturating_add(bl.size.max(1))).then_some(BlockRef { image, block: b })
    }
}

/// Source lines of an image sorted by address, for look-ups and for spreading block counts.
pub(super) struct LineIndex {
    /// Indices into `Image::source_lines`, sorted by offset.
    order: Vec<u32>,
    max_size: u64,
}

impl LineIndex {
    pub(super) fn new(image: &Image) -> LineIndex {
        let lines = &image.source_lines;
        let mut order: Vec<u32> = (0..lines.len() as u32).collect();
        // Readers usually give the lines in address order: then there is nothing to sort.
        if !lines.windows(2).all(|w| w[0].offset <= w[1].offset) {
            order.sort_by_key(|&i| lines[i as usize].offset);
        }
        let max_size = lines.iter().map(|l| l.size).max().unwrap_or(0);
        LineIndex { order, max_size }
    }

    /// The source line covering `addr` (the latest-starting one when entries overlap).
    pub(super) fn at<'i>(&self, image: &'i Image, addr: u64) -> Option<&'i SourceLine> {
        let mut hint = 0;
        self.at_from(image, addr, &mut hint)
    }

    /// [`LineIndex::at`] for addresses that mostly come in increasing order: the search starts
    /// from `hint` (left where the previous look-up ended), so a run of increasing addresses
    /// walks the lines once instead of searching each time.
    pub(super) fn at_from<'i>(
        &self,
        image: &'i Image,
        addr: u64,
        hint: &mut usize,
    ) -> Option<&'i SourceLine> {
        let lines = &image.source_lines;
        let order = &self.order;
        let offset = |k: usize| lines[order[k] as usize].offset;
        // k: the number of lines starting at or before addr.
        let mut k = (*hint).min(order.len());
        if k > 0 && offset(k - 1) > addr {
            k = order.partition_point(|&i| lines[i as usize].offset <= addr);
        } else {
            // Gallop forward from the hint, then search the last step.
            let mut step = 1;
            let mut lo = k;
            while lo + step <= order.len() && offset(lo + step - 1) <= addr {
                lo += step;
                step *= 2;
            }
            let hi = (lo + step).min(order.len());
            k = lo + order[lo..hi].partition_point(|&i| lines[i as usize].offset <= addr);
        }
        *hint = k;
        while k > 0 {
            let l = &lines[order[k - 1] as usize];
            if l.offset.saturating_add(self.max_size) <= addr {
                break;
            }
            if addr < l.offset.saturating_add(l.size.max(1)) {
                return Some(l);
            }
            k -= 1;
        }
        None
    }

    /// The source line number (0 for none) of every block's first and last instruction.
    pub(super) fn block_lines(&self, image: &Image) -> Vec<[u32; 2]> {
        let (mut first, mut last) = (0usize, 0usize);
        image
            .blocks
            .iter()
            .map(|b| {
                let at_first = self.at_from(image, b.offset, &mut first).map_or(0, |l| l.line);
                let at_last =
                    self.at_from(image, b.offset + b.last_instr_offset, &mut last).map_or(0, |l| l.line);
                [at_first, at_last]
            })
            .collect()
    }

    /// Spreads `num_instrs x count` of a block over its source lines:
    /// `(address, file, line, instructions executed)`, in address order. `parts` is scratch
    /// space.
    pub(super) fn spread(
        &self,
        image: &Image,
        block: &Block,
        count: u64,
        parts: &mut Vec<Part>,
        out: &mut Vec<(u64, Option<FileId>, u32, u64)>,
    ) {
        let lo = block.offset;
        let hi = block.offset.saturating_add(block.size.max(1));
        let lines = &image.source_lines;
        let end = self.order.partition_point(|&i| lines[i as usize].offset < hi);
        let mut first = end;
        while first > 0 && lines[self.order[first - 1] as usize].offset.saturating_add(self.max_size) > lo {
            first -= 1;
        }
        parts.clear();
        for &i in &self.order[first..end] {
            let l = &lines[i as usize];
            let l_end = l.offset.saturating_add(l.size.max(1));
            if l_end <= lo || l.offset >= hi {
                continue;
            }
            let start = l.offset.max(lo);
            let bytes = l_end.min(hi) - start;
            let full = l.offset >= lo && l_end <= hi;
            parts.push((start, l.file, l.line, full.then_some(l.num_instrs), bytes));
        }
        let full_sum: u64 = parts.iter().filter_map(|p| p.3).sum();
        if parts.is_empty() || full_sum > block.num_instrs {
            let (file, line) = parts.first().map_or((None, 0), |p| (p.1, p.2));
            out.push((lo, file, line, block.num_instrs.saturating_mul(count)));
            return;
        }
        let mut rest = block.num_instrs - full_sum;
        let partial_bytes: u64 = parts.iter().filter(|p| p.3.is_none()).map(|p| p.4).sum();
        let npartial = parts.iter().filter(|p| p.3.is_none()).count();
        if npartial == 0 && rest > 0 {
            parts.insert(0, (lo, None, 0, Some(rest), 0));
            rest = 0;
        }
        let total_rest = rest;
        let mut seen = 0;
        for p in parts.iter() {
            let n = match p.3 {
                Some(n) => n,
                None => {
                    seen += 1;
                    if seen == npartial {
                        rest
                    } else {
                        let n = ((total_rest as u128 * p.4 as u128) / partial_bytes.max(1) as u128) as u64;
                        let n = n.min(rest);
                        rest -= n;
                        n
                    }
                }
            };
            if n > 0 {
                out.push((p.0, p.1, p.2, n.saturating_mul(count)));
            }
        }
    }
}

/// A source line's share of a block: (start, file, line, its instructions when the line lies
/// wholly inside the block or `None` for a partial overlap, overlapping bytes).
pub(super) type Part = (u64, Option<FileId>, u32, Option<u64>, u64);

/// Which fall-through completes which conditional branch (`jcnd=followed/executed`): each
/// conditional takes the first fall-through, in edge order, of the same source and source site
/// not taken by an earlier conditional.
pub(super) struct Pairs {
    /// Per edge: for a conditional, the index of its fall-through ([`NONE`] for none).
    partner: Vec<u32>,
    /// Per edge: a fall-through taken by a conditional.
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

impl Pairs {
    /// Pairs the edges of a process in one pass over them. Fall-throughs and conditionals are
    /// grouped by source: in place when the edges come sorted by source (as a Callgrind or DCFG
    /// reader gives them), else by a counting sort over every block and symbol (no hashing);
    /// inside a source's group, usually of two edges, by site.
    pub(super) fn new(process: &Process) -> Pairs {
        let edges = &process.edges;
        // Dense slot of every block and symbol; one more slot for every other source.
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
        let other = slots;
        let slot = |n: NodeRef| -> usize {
            match n {
                NodeRef::Block(b) => match process.images.get(b.image as usize) {
                    Some(i) if (b.block as usize) < i.blocks.len() => {
                        block_base[b.image as usize] + b.block as usize
                    }
                    _ => other,
                },
                NodeRef::Symbol(s) => match process.images.get(s.image as usize) {
                    Some(i) if (s.symbol as usize) < i.symbols.len() => {
                        symbol_base[s.image as usize] + s.symbol as usize
                    }
                    _ => other,
                },
                _ => other,
            }
        };
        // Every fall-through and conditional, in edge order; the one pass over the edges.
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut conditionals = false;
        for (k, e) in edges.iter().enumerate() {
            let conditional = e.kind.is_conditional();
            if conditional || e.kind == EdgeKind::FallThrough {
                conditionals |= conditional;
                candidates.push(Candidate {
                    slot: slot(e.source) as u32,
                    edge: k as u32,
                    conditional,
                    details: e.details.is_some(),
                });
            }
        }
        let mut pairs = Pairs { partner: Vec::new(), paired: Vec::new() };
        if !conditionals {
            return pairs;
        }
        pairs.partner = vec![NONE; edges.len()];
        pairs.paired = vec![false; edges.len()];
        if !candidates.windows(2).all(|w| w[0].slot <= w[1].slot) {
            // A stable counting sort by slot.
            let mut start = vec![0u32; slots + 2];
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
        type Entry = (NodeRef, Option<u64>, Option<u32>, bool, u32);
        let entry = |k: u32| -> Entry {
            let e = &edges[k as usize];
            let site = e.site();
            let (offset, line) = (site.and_then(|s| s.source_offset), site.and_then(|s| s.source_line));
            (e.source, offset, line, e.kind.is_conditional(), k)
        };
        let mut run: Vec<Entry> = Vec::new();
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
            run.clear();
            run.extend(group.iter().map(|c| entry(c.edge)));
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
                    pairs.partner[c.4 as usize] = f.4;
                    pairs.paired[f.4 as usize] = true;
                }
                i = j;
            }
        }
        pairs
    }

    /// The fall-through of conditional edge `k`.
    pub(super) fn partner(&self, k: usize) -> Option<usize> {
        self.partner.get(k).filter(|&&f| f != NONE).map(|&f| f as usize)
    }

    /// Whether fall-through edge `k` completes a conditional.
    pub(super) fn paired(&self, k: usize) -> bool {
        self.paired.get(k).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Edge, EdgeDetails, Site, SymbolRef};

    fn line(offset: u64, size: u64, line: u32) -> SourceLine {
        SourceLine { file: None, line, offset, size, num_instrs: 1 }
    }

    #[test]
    fn look_ups_from_a_hint_agree_with_a_search() {
        let image = Image {
            source_lines: vec![line(0x10, 4, 1), line(0x14, 8, 2), line(0x30, 2, 3), line(0x31, 1, 4)],
            ..Image::default()
        };
        let index = LineIndex::new(&image);
        let addrs = [0x0, 0x10, 0x13, 0x14, 0x1b, 0x1c, 0x30, 0x31, 0x32, 0x40, 0x12, 0x31, 0x0];
        let mut hint = 0;
        for a in addrs {
            let searched = index.at(&image, a).map(|l| l.line);
            assert_eq!(index.at_from(&image, a, &mut hint).map(|l| l.line), searched, "{a:#x}");
        }
        assert_eq!(index.at(&image, 0x31).map(|l| l.line), Some(4));
        assert_eq!(index.at(&image, 0x1c), None);
    }

    #[test]
    fn conditionals_take_the_fall_throughs_of_their_source_and_site_in_order() {
        let sym = |s| NodeRef::Symbol(SymbolRef { image: 0, symbol: s });
        let at =
            |line| EdgeDetails::boxed(Vec::new(), Some(Site { source_line: Some(line), ..Site::default() }));
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
        let p = Pairs::new(&process);
        let partners: Vec<Option<usize>> = (0..7).map(|k| p.partner(k)).collect();
        assert_eq!(partners, [None, None, Some(0), Some(5), None, None, None]);
        let paired: Vec<bool> = (0..7).map(|k| p.paired(k)).collect();
        assert_eq!(paired, [true, false, false, false, false, true, false]);
    }
}
