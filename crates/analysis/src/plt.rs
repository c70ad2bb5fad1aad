//! The procedure linkage table's stubs that Callgrind runs but counts as part of the calls
//! that go through them, rebuilt as blocks from the caller's binary.
//!
//! A call to a function of another object (or to one the dynamic loader may interpose) goes
//! through a stub of the caller's procedure linkage table (`.plt`, or `.plt.sec` in a binary
//! built with indirect-branch tracking): an indirect jump through the function's slot of the
//! global offset table, `jmp *SLOT(%rip)` (with `endbr64` before it in `.plt.sec`). Until
//! the loader binds the slot, which a lazily bound binary leaves for the first call, the slot
//! holds the address of the stub's second half in `.plt`: it pushes the slot's number and
//! jumps to the table's first entry, which pushes the loader's map and jumps through the
//! table's third slot to the loader's resolver (`_dl_runtime_resolve_xsave` and its kin); the
//! resolver binds the slot and jumps on to the function.
//!
//! Valgrind's Callgrind skips these stubs by default (`--skip-plt=yes`): it adds the
//! instructions they ran to the calling instruction's `Ir`, and it records a call from the
//! calling instruction to the function (and on a lazy first pass, one to the resolver). A
//! block-level profile such as a DCFG, whose blocks run all their instructions equally often,
//! can hold those instructions only in blocks of the stubs, which the profile does not have.
//! With the caller's binary they are rebuilt exactly: a call site whose `Ir` exceeds its
//! executions is decoded, the stub it calls is followed to the jump through its slot (the
//! bound way, run once per call through it), and from the slot's address before binding to
//! the jump into the resolver (the lazy way, run once per call to the resolver); the site's
//! excess must equal what those ways hold, or the site is left as it is.

use std::collections::HashMap;

use cfghub_model::ir::{
    Block, BlockRef, Counts, Edge, EdgeKind, Image, NodeRef, Process, Profile, Routine, Symbol,
};
use iced_x86::{Decoder, DecoderOptions, FlowControl};
use rustc_hash::FxHashMap;

use crate::machine_code::BinaryCode;
use crate::names::SymbolIndex;
use crate::symbolize::{find_image_files, Options as SymbolOptions};

/// The most instructions a way through a stub is followed for (a stub has two to five).
const MAX_WAY: usize = 12;

/// What the stubs add to a process: blocks, routines and symbols of images, and edges that
/// replace or join the process's own. The process itself is left as it is, so that a writer
/// lays these over it.
#[derive(Debug, Default)]
pub struct Stubs {
    /// The images that gained stubs, in image order.
    pub images: Vec<ImageStubs>,
    /// Edges of the process replaced (`Some`) or dropped (`None`), by index, in index order:
    /// a call that went through a stub now enters the stub.
    pub replaced: Vec<(usize, Option<Edge>)>,
    /// The edges through the stubs, numbered after the process's own.
    pub added: Vec<Edge>,
}

/// What one image gains: blocks (numbered after every block of the process), routines whose
/// block indices count on from the image's own blocks, and a symbol per routine that no
/// symbol of the image covered.
#[derive(Debug, Default)]
pub struct ImageStubs {
    /// Index of the image in its process.
    pub image: u32,
    /// The stubs' blocks.
    pub blocks: Vec<Block>,
    /// One routine per stub, and one for the table's first entry.
    pub routines: Vec<Routine>,
    /// Their symbols, named as objdump names them (`memcpy@plt`, `.plt`).
    pub symbols: Vec<Symbol>,
}

impl Stubs {
    /// The stubs of `image`, if it gained any.
    pub fn of_image(&self, image: u32) -> Option<&ImageStubs> {
        self.images.iter().find(|i| i.image == image)
    }
}

/// A straight run of a stub: from its first instruction through the jump that ends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    start: u64,
    last: u64,
    end: u64,
    instrs: u32,
}

/// A way through stub code: its runs in order, each ending in a jump to the next, the last in
/// a jump through a slot of the global offset table (`slot`, its address).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Way {
    runs: Vec<Run>,
    slot: u64,
}

impl Way {
    fn instrs(&self) -> u64 {
        self.runs.iter().map(|r| u64::from(r.instrs)).sum()
    }
}

/// A stub as the binary has it: its slot's name, the bound way, and the lazy way where the
/// slot starts out pointing back into the table.
#[derive(Clone, Debug)]
struct Stub {
    name: Option<String>,
    bound: Way,
    lazy: Option<Way>,
}

/// A binary's code and where its procedure linkage table is (`.plt`, `.plt.sec`).
struct Code {
    binary: BinaryCode,
    plt: Vec<std::ops::Range<u64>>,
}

impl Code {
    fn new(binary: BinaryCode) -> Self {
        let plt = binary.sections_named(&[".plt", ".plt.sec"]);
        Code { binary, plt }
    }

    fn is_plt(&self, address: u64) -> bool {
        self.plt.iter().any(|r| r.contains(&address))
    }
}

/// The way from `start` (an address of the table) through direct jumps to a jump through a
/// slot; `None` for code that does anything else.
fn way_from(code: &Code, start: u64) -> Option<Way> {
    let mut runs = Vec::new();
    let (mut at, mut run_start, mut instrs) = (start, start, 0u32);
    for _ in 0..MAX_WAY {
        if !code.is_plt(at) {
            return None;
        }
        let bytes = code.binary.bytes_from(at, 15)?;
        let i = Decoder::with_ip(64, bytes, at, DecoderOptions::NONE).decode();
        if i.is_invalid() {
            return None;
        }
        instrs += 1;
        let run = Run { start: run_start, last: at, end: i.next_ip(), instrs };
        match i.flow_control() {
            FlowControl::Next => at = i.next_ip(),
            FlowControl::UnconditionalBranch => {
                runs.push(run);
                (at, run_start, instrs) = (i.near_branch_target(), i.near_branch_target(), 0);
            }
            FlowControl::IndirectBranch if i.is_ip_rel_memory_operand() => {
                runs.push(run);
                return Some(Way { runs, slot: i.ip_rel_memory_address() });
            }
            _ => return None,
        }
    }
    None
}

/// The stub at `entry`, when it is one.
fn stub_at(code: &Code, entry: u64, slots: &HashMap<u64, String>) -> Option<Stub> {
    let bound = way_from(code, entry)?;
    let name = slots.get(&bound.slot).cloned();
    // Before binding, a lazily bound slot holds an address in the table; one bound at
    // startup (`-z now`, an IRELATIVE function) holds anything else.
    let initial = code.binary.bytes_at(bound.slot, 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    let lazy = initial.filter(|&a| a != 0 && code.is_plt(a)).and_then(|a| way_from(code, a));
    Some(Stub { name, bound, lazy })
}

/// Whether a function of the dynamic loader is its lazy-binding resolver.
pub fn is_lazy_binding_resolver(name: &str) -> bool {
    name.starts_with("_dl_runtime_resolve") || name.starts_with("_dl_runtime_profile")
}

/// The stubs the calls of `process` went through where its event `ir` (Valgrind's `Ir`)
/// counts them under the calling instruction, found from the binaries as `options` finds
/// them; `None` when no call site has such a surplus that its binary explains.
pub fn skipped_stubs(
    profile: &Profile,
    process: &Process,
    ir: usize,
    options: &SymbolOptions,
) -> Option<Stubs> {
    let sites = call_sites(process);
    if sites.is_empty() {
        return None;
    }
    let mut builder = Builder::new(process);
    for (i, image) in process.images.iter().enumerate() {
        let i = i as u32;
        let from = sites.partition_point(|s| s.0.image < i);
        let to = sites.partition_point(|s| s.0.image <= i);
        if from == to {
            continue;
        }
        let surplus = surpluses(image, ir, &sites[from..to]);
        if surplus.is_empty() {
            continue;
        }
        let found = find_image_files(profile, image, options, false);
        let Some(code) = found.binary.as_deref().and_then(BinaryCode::open).map(Code::new) else { continue };
        let slots = code.binary.jump_slots();
        let mut stubs: FxHashMap<u64, Option<Stub>> = FxHashMap::default();
        // A profile that has the stubs as blocks already (a DCFG written with them, which
        // keeps Valgrind's `Ir` in its cost table) needs none.
        let have: rustc_hash::FxHashSet<u64> = image.blocks.iter().map(|b| b.offset).collect();
        for (site, calls) in &sites[from..to] {
            let block = &image.blocks[site.block as usize];
            let Some(&excess) = surplus.get(&block.last_instr()) else { continue };
            let start = image.load_addr.wrapping_add(block.offset);
            let Some(entry) = called_stub(&code, start, block) else { continue };
            if have.contains(&entry.wrapping_sub(image.load_addr)) {
                continue;
            }
            let stub = stubs.entry(entry).or_insert_with(|| stub_at(&code, entry, &slots));
            if let Some(stub) = stub.as_ref() {
                builder.add_site(i, calls, stub, excess);
            }
        }
    }
    builder.finish()
}

/// Each block that ends in a call, with the indices of its call edges, by block.
fn call_sites(process: &Process) -> Vec<(BlockRef, Vec<usize>)> {
    let mut sites: Vec<(BlockRef, usize)> = process
        .edges
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind.is_call())
        .filter_map(|(k, e)| match e.source {
            NodeRef::Block(b) => Some((b, k)),
            _ => None,
        })
        .collect();
    sites.sort_unstable();
    let mut grouped: Vec<(BlockRef, Vec<usize>)> = Vec::new();
    for (b, k) in sites {
        match grouped.last_mut() {
            Some((last, edges)) if *last == b => edges.push(k),
            _ => grouped.push((b, vec![k])),
        }
    }
    grouped
}

/// For the call sites of an image: the `Ir` of each site's calling instruction beyond the
/// executions of its block, by the instruction's offset, where there is one.
fn surpluses(image: &Image, ir: usize, sites: &[(BlockRef, Vec<usize>)]) -> FxHashMap<u64, u64> {
    let mut counted: FxHashMap<u64, u64> = sites
        .iter()
        .filter_map(|(b, _)| image.blocks.get(b.block as usize))
        .filter(|b| b.count.is_some())
        .map(|b| (b.last_instr(), 0))
        .collect();
    let _ = image.costs.try_for_each_offset_and_value(ir, |offset, value| {
        if let Some(c) = counted.get_mut(&offset) {
            *c = c.saturating_add(value);
        }
        Ok::<(), ()>(())
    });
    for (b, _) in sites {
        if let Some(block) = image.blocks.get(b.block as usize) {
            if let (Some(c), Some(n)) = (counted.get_mut(&block.last_instr()), block.count) {
                *c = c.saturating_sub(n);
            }
        }
    }
    counted.retain(|_, excess| *excess > 0);
    counted
}

/// The stub the direct call (or tail call's jump) that ends `block` (at `start`) enters, when
/// it enters one and the binary's code is the block's: its instructions decode to the block's
/// number, the last at the block's last (a binary of another build than the profile's, found
/// at the path the profile names, does not).
fn called_stub(code: &Code, start: u64, block: &Block) -> Option<u64> {
    // A block rebuilt from a profile without instruction lengths may end at its last
    // instruction's first byte: decoded through the longest instruction after it.
    let last = start.wrapping_add(u64::from(block.last_instr_offset));
    let bytes = code.binary.bytes_from(start, block.last_instr_offset as usize + 15)?;
    let mut decoder = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE);
    let mut seen = 0u32;
    while decoder.can_decode() {
        let i = decoder.decode();
        seen += 1;
        if i.is_invalid() || i.ip() > last || seen > block.num_instrs {
            return None;
        }
        if i.ip() == last {
            let target = i.near_branch_target();
            let enters = matches!(i.flow_control(), FlowControl::Call | FlowControl::UnconditionalBranch);
            return (seen == block.num_instrs && enters && code.is_plt(target)).then_some(target);
        }
    }
    None
}

/// Gathers the stubs' blocks, routines and edges as sites are added.
struct Builder<'a> {
    process: &'a Process,
    next_block_id: u64,
    /// The blocks of each image, by address: (image, address) -> index among the image's
    /// new blocks.
    blocks: FxHashMap<(u32, u64), u32>,
    images: Vec<ImageStubs>,
    /// The routines made, by (image, entry address).
    routines: FxHashMap<(u32, u64), usize>,
    replaced: Vec<(usize, Option<Edge>)>,
    /// The new edges, by (source, target, kind): several sites through one stub share them.
    added: FxHashMap<(NodeRef, NodeRef, EdgeKind), Counts>,
    added_order: Vec<(NodeRef, NodeRef, EdgeKind)>,
    symbol_indices: FxHashMap<u32, SymbolIndex>,
    /// Each resolver's exit block, by the resolver's entry.
    resolver_exits: FxHashMap<NodeRef, Option<NodeRef>>,
}

impl<'a> Builder<'a> {
    fn new(process: &'a Process) -> Self {
        let max_id = process.images.iter().flat_map(|i| &i.blocks).map(|b| b.id).max().unwrap_or(0);
        Builder {
            process,
            next_block_id: max_id + 1,
            blocks: FxHashMap::default(),
            images: Vec::new(),
            routines: FxHashMap::default(),
            replaced: Vec::new(),
            added: FxHashMap::default(),
            added_order: Vec::new(),
            symbol_indices: FxHashMap::default(),
            resolver_exits: FxHashMap::default(),
        }
    }

    /// The name of the function a node's block lies in.
    fn function_of(&mut self, node: NodeRef) -> Option<String> {
        let NodeRef::Block(b) = node else { return None };
        let image = self.process.images.get(b.image as usize)?;
        let offset = image.blocks.get(b.block as usize)?.offset;
        let index = self.symbol_indices.entry(b.image).or_insert_with(|| SymbolIndex::new(image));
        let s = index.covering(offset)?;
        Some(image.symbols[s as usize].name.clone())
    }

    /// Adds a call site of image `image` (a block ending in a call through `stub`, whose call
    /// edges are `calls` and whose calling instruction counts `excess` instructions beyond its
    /// executions) when the stub's ways hold exactly that excess.
    fn add_site(&mut self, image: u32, calls: &[usize], stub: &Stub, excess: u64) {
        let threads = calls.iter().map(|&k| self.process.edges[k].counts.len()).max().unwrap_or(0);
        let (mut through, mut lazy) = (Vec::new(), Vec::new());
        for &k in calls {
            let e = &self.process.edges[k];
            if !matches!(e.target, NodeRef::Block(_)) {
                return;
            }
            if self.function_of(e.target).is_some_and(|n| is_lazy_binding_resolver(&n)) {
                lazy.push(k);
            } else {
                through.push(k);
            }
        }
        let sum = |edges: &[usize]| -> Counts {
            let mut total = Counts::from_elem(0, threads);
            for &k in edges {
                for (t, &n) in self.process.edges[k].counts.iter().enumerate() {
                    total[t] = total[t].saturating_add(n);
                }
            }
            total
        };
        let (passes, bindings) = (sum(&through), sum(&lazy));
        let (p, l): (u64, u64) = (passes.iter().sum(), bindings.iter().sum());
        let lazy_instrs = stub.lazy.as_ref().map_or(0, Way::instrs);
        let held =
            p.checked_mul(stub.bound.instrs()).and_then(|b| b.checked_add(l.checked_mul(lazy_instrs)?));
        if through.is_empty() || (l > 0 && stub.lazy.is_none()) || held != Some(excess) {
            return;
        }
        let bound = self.runs(image, &stub.bound, p, stub.name.as_deref(), None);
        for w in bound.windows(2) {
            self.edge(w[0], w[1], EdgeKind::DirectUnconditionalBranch, &passes);
        }
        let last = *bound.last().expect("a way has a run");
        // Calls through the stub enter it; the calls to the resolver were its lazy way's.
        let mut first = self.process.edges[through[0]].clone();
        first.target = bound[0];
        first.counts = passes;
        self.replaced.push((through[0], Some(first)));
        self.replaced.extend(through[1..].iter().chain(&lazy).map(|&k| (k, None)));
        // The first pass of a lazy binding goes on through the resolver, which jumps to the
        // function it bound (the one the site's calls go to most) from its exit block; where
        // that block is not found, the pass is left on the stub's jump to the function.
        let most = through.iter().copied().max_by_key(|&k| self.process.edges[k].counts.iter().sum::<u64>());
        let resolver = lazy.first().map(|&k| self.process.edges[k].target);
        let exit = resolver.filter(|_| stub.lazy.is_some()).and_then(|r| self.resolver_exit(r));
        for &k in &through {
            let e = &self.process.edges[k];
            let (target, mut counts) = (e.target, e.counts.clone());
            if Some(k) == most && exit.is_some() {
                for (t, c) in counts.iter_mut().enumerate() {
                    *c = c.saturating_sub(bindings.get(t).copied().unwrap_or(0));
                }
            }
            self.edge(last, target, EdgeKind::IndirectUnconditionalBranch, &counts);
        }
        if let (Some(way), false) = (&stub.lazy, lazy.is_empty()) {
            let runs = self.runs(image, way, l, None, Some(stub.bound.runs[0].start));
            self.edge(last, runs[0], EdgeKind::IndirectUnconditionalBranch, &bindings);
            for w in runs.windows(2) {
                self.edge(w[0], w[1], EdgeKind::DirectUnconditionalBranch, &bindings);
            }
            let end = *runs.last().expect("a way has a run");
            for &k in &lazy {
                let e = &self.process.edges[k];
                let (target, counts) = (e.target, e.counts.clone());
                self.edge(end, target, EdgeKind::IndirectUnconditionalBranch, &counts);
            }
            if let (Some(exit), Some(m)) = (exit, most) {
                let function = self.process.edges[m].target;
                self.edge(exit, function, EdgeKind::IndirectUnconditionalBranch, &bindings);
            }
        }
    }

    /// The block of the resolver entered at `entry` that jumps on to the functions it binds:
    /// the block of its function whose executions its outgoing edges leave most short
    /// (Valgrind records no edge for that jump: it counts the pass as a call from the calling
    /// instruction to the function).
    fn resolver_exit(&mut self, entry: NodeRef) -> Option<NodeRef> {
        let NodeRef::Block(b) = entry else { return None };
        if let Some(&exit) = self.resolver_exits.get(&entry) {
            return exit;
        }
        let image = &self.process.images[b.image as usize];
        let index = self.symbol_indices.entry(b.image).or_insert_with(|| SymbolIndex::new(image));
        let function = index.covering(image.blocks.get(b.block as usize)?.offset);
        let mine: Vec<bool> =
            image.blocks.iter().map(|k| function.is_some() && index.covering(k.offset) == function).collect();
        let mut short: Vec<u64> = image.blocks.iter().map(|k| k.count.unwrap_or(0)).collect();
        for e in &self.process.edges {
            if let NodeRef::Block(s) = e.source {
                if s.image == b.image && mine[s.block as usize] {
                    let out: u64 = e.counts.iter().sum();
                    short[s.block as usize] = short[s.block as usize].saturating_sub(out);
                }
            }
        }
        let exit = (0..short.len()).filter(|&k| mine[k] && short[k] > 0).max_by_key(|&k| short[k]);
        let exit = exit.map(|k| NodeRef::Block(BlockRef { image: b.image, block: k as u32 }));
        self.resolver_exits.insert(entry, exit);
        exit
    }

    /// The blocks of a way's runs, each executed `n` more times, as nodes. The bound way of a
    /// stub (`name`: its slot's) is a routine of its own; a lazy way's first run belongs to its
    /// stub's routine (`stub`: the stub's entry), the rest to a routine of the table's first
    /// entry, which every lazy way shares.
    fn runs(&mut self, image: u32, way: &Way, n: u64, name: Option<&str>, stub: Option<u64>) -> Vec<NodeRef> {
        let nodes: Vec<NodeRef> = way.runs.iter().map(|r| self.block(image, r, n)).collect();
        let block_index = |node: &NodeRef| match node {
            NodeRef::Block(b) => b.block,
            _ => unreachable!("runs are blocks"),
        };
        let indices: Vec<u32> = nodes.iter().map(block_index).collect();
        match stub {
            None => {
                let label =
                    name.map_or_else(|| format!("{:#x}@plt", way.runs[0].start), |n| format!("{n}@plt"));
                self.routine(image, way.runs[0].start, &indices, &label);
            }
            Some(entry) => {
                self.routine(image, entry, &indices[..1], "");
                if indices.len() > 1 {
                    self.routine(image, way.runs[1].start, &indices[1..], ".plt");
                }
            }
        }
        nodes
    }

    /// The block of a run, made on first sight, its count raised by `n`.
    fn block(&mut self, image: u32, run: &Run, n: u64) -> NodeRef {
        let own = self.process.images[image as usize].blocks.len() as u32;
        let load = self.process.images[image as usize].load_addr;
        let k = match self.images.iter().position(|i| i.image == image) {
            Some(k) => k,
            None => {
                self.images.push(ImageStubs { image, ..ImageStubs::default() });
                self.images.len() - 1
            }
        };
        let index = *self.blocks.entry((image, run.start)).or_insert_with(|| {
            let blocks = &mut self.images[k].blocks;
            blocks.push(Block {
                id: self.next_block_id,
                offset: run.start.wrapping_sub(load),
                size: (run.end - run.start) as u32,
                num_instrs: run.instrs,
                last_instr_offset: (run.last - run.start) as u32,
                count: Some(0),
            });
            self.next_block_id += 1;
            (blocks.len() - 1) as u32
        });
        let block = &mut self.images[k].blocks[index as usize];
        block.count = Some(block.count.unwrap_or(0).saturating_add(n));
        NodeRef::Block(BlockRef { image, block: own + index })
    }

    /// Adds `nodes` (block indices in the image's numbering) to the routine entered at
    /// `entry`, made on first sight with a symbol `name` where no symbol of the image covers
    /// the entry (an empty name: none).
    fn routine(&mut self, image: u32, entry: u64, nodes: &[u32], name: &str) {
        let k = self.images.iter().position(|i| i.image == image).expect("the blocks came first");
        let r = match self.routines.get(&(image, entry)) {
            Some(&r) => r,
            None => {
                let stubs = &mut self.images[k];
                stubs.routines.push(Routine { entry: nodes[0], ..Routine::default() });
                let img = &self.process.images[image as usize];
                let covered = self.symbol_indices.entry(image).or_insert_with(|| SymbolIndex::new(img));
                let offset = entry.wrapping_sub(img.load_addr);
                if !name.is_empty() && covered.covering(offset).is_none() {
                    stubs.symbols.push(Symbol {
                        name: name.to_string(),
                        offset: Some(offset),
                        size: None,
                        file: None,
                    });
                }
                self.routines.insert((image, entry), stubs.routines.len() - 1);
                stubs.routines.len() - 1
            }
        };
        let routine = &mut self.images[k].routines[r];
        for &n in nodes {
            if !routine.nodes.contains(&n) {
                routine.nodes.push(n);
            }
        }
    }

    /// Adds `counts` to the edge from `source` to `target` of `kind`.
    fn edge(&mut self, source: NodeRef, target: NodeRef, kind: EdgeKind, counts: &Counts) {
        let key = (source, target, kind);
        let total = self.added.entry(key).or_insert_with(|| {
            self.added_order.push(key);
            Counts::new()
        });
        if total.len() < counts.len() {
            total.resize(counts.len(), 0);
        }
        for (t, &n) in counts.iter().enumerate() {
            total[t] = total[t].saturating_add(n);
        }
    }

    fn finish(mut self) -> Option<Stubs> {
        if self.images.is_empty() {
            return None;
        }
        let mut next_id = self.process.edges.iter().map(|e| e.id).max().unwrap_or(0) + 1;
        let mut added = Vec::with_capacity(self.added_order.len());
        for key in &self.added_order {
            let counts = self.added.remove(key).unwrap_or_default();
            if counts.iter().all(|&n| n == 0) {
                continue;
            }
            added.push(Edge {
                id: next_id,
                source: key.0,
                target: key.1,
                kind: key.2,
                counts,
                details: None,
            });
            next_id += 1;
        }
        // A routine's exits: its blocks with an edge to a block of no other of its blocks.
        let mut routine_of: FxHashMap<(u32, u32), (usize, usize)> = FxHashMap::default();
        for (k, stubs) in self.images.iter().enumerate() {
            for (r, routine) in stubs.routines.iter().enumerate() {
                routine_of.extend(routine.nodes.iter().map(|&n| ((stubs.image, n), (k, r))));
            }
        }
        for e in &added {
            let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) else { continue };
            let Some(&(k, r)) = routine_of.get(&(s.image, s.block)) else { continue };
            if routine_of.get(&(t.image, t.block)) != Some(&(k, r)) {
                let exits = &mut self.images[k].routines[r].exits;
                if !exits.contains(&s.block) {
                    exits.push(s.block);
                }
            }
        }
        self.replaced.sort_unstable_by_key(|r| r.0);
        self.images.sort_by_key(|i| i.image);
        Some(Stubs { images: self.images, replaced: self.replaced, added })
    }
}
