//! Basic blocks rebuilt from executed addresses and the control transfers between them.
//!
//! Some profiles state which instruction addresses ran, how often, and which jumps and calls
//! went from where to where, but no blocks: Callgrind with `--dump-instr=yes
//! --collect-jumps=yes`, and equally a branch trace or symbolized samples with their branch
//! records. This analysis turns those two lists into blocks, source lines, routines and a
//! control-flow graph. Its input is format-neutral:
//! - an image's executed instructions are the rows of its [`cfghub_model::ir::CostTable`] with an address and a
//!   function (`offset`, `symbol`, `file`, `line`, and one event that counts executions);
//! - the transfers ([`Transfer`]) name a source and a target position (image, function,
//!   address, line), an [`EdgeKind`] (a call, a conditional or an unconditional branch), a
//!   count, for a conditional branch how often it was executed, and for a call the callee's
//!   inclusive cost, kept aside in one store ([`InclusiveCosts`]).
//!
//! The caller says which function's code each function runs (its `owners`, e.g. a recursion
//! level `fib'2` runs `fib`'s): blocks belong to owners.
//!
//! The rebuild is a handful of sorted walks rather than hash look-ups: the executed addresses
//! of an image, the sources and the targets of its transfers are each sorted once by address
//! (a radix sort, see [`radix`]) and then merged in one pass; edges are gathered as a list
//! of contributions and merged after a counting sort by source block. Blocks are numbered
//! process-wide ("global" indices: the blocks of image 0, then image 1, ...), which orders them
//! as [`BlockRef`]s are ordered.

mod radix;

use cfghub_model::ir::NO_INDEX;
use cfghub_model::ir::{
    Block, BlockRef, CallContext, Counts, Edge, EdgeDetails, EdgeKind, Image, NodeRef, Numbers, Process,
    Routine, Site, SourceLine, SymbolRef,
};
use cfghub_model::ir::{CostTable, Cursor};

/// Longest x86 instruction: the most a block's last instruction is taken to span (the input
/// gives no instruction lengths).
const MAX_INSTR_LEN: u64 = 15;
/// Farthest a block's last instruction may lie from its first: a block's size is 32 bits
/// (only an input with a gap of gigabytes between two instructions of one function meets it).
const MAX_BLOCK_SPAN: u64 = u32::MAX as u64 - MAX_INSTR_LEN;

/// A control transfer as a profile states it, before it becomes an edge: a call, a
/// conditional or an unconditional branch between two code positions. Compact (64 bytes, a
/// call's inclusive cost kept aside in [`InclusiveCosts`]): a large profile has hundreds
/// of thousands, and they are the largest list a Callgrind file is read into.
#[derive(Clone, Copy, Debug)]
pub struct Transfer {
    /// A call kind ([`EdgeKind::is_call`]), a conditional branch
    /// ([`EdgeKind::is_conditional`]), or any other kind, taken as a branch that never falls
    /// through.
    pub kind: EdgeKind,
    /// Whether both ends have an address (`src_addr`, `tgt_addr`).
    pub has_addr: bool,
    /// Whether both ends have a source line (`src_line`, `tgt_line`).
    pub has_line: bool,
    /// Threads are numbered below 2^16.
    pub thread: u16,
    /// For calls: how many values of the callee's inclusive cost [`InclusiveCosts`]
    /// holds from [`Transfer::detail`] on (one per event: a profile names fewer than 2^16).
    pub incl_len: u16,
    /// The image the transfer leaves, as an index into the process's images.
    pub src_image: u32,
    /// The function the transfer leaves, as an index into its image's symbols.
    pub src_symbol: u32,
    /// Source line the transfer leaves from; meaningful only when `has_line`.
    pub src_line: u32,
    /// The image the transfer enters, as an index into the process's images.
    pub tgt_image: u32,
    /// The function the transfer enters, as an index into its image's symbols.
    pub tgt_symbol: u32,
    /// Source line the transfer lands on; meaningful only when `has_line`.
    pub tgt_line: u32,
    /// Address of the transferring instruction, relative to its image's load address; meaningful
    /// only when `has_addr`.
    pub src_addr: u64,
    /// Address the transfer lands on, relative to its image's load address; meaningful only when
    /// `has_addr`.
    pub tgt_addr: u64,
    /// Times the transfer was taken.
    pub count: u64,
    /// For a conditional branch: times it was executed, taken or not (the rest fell through;
    /// see [`Transfer::executed`]). For a call: where the callee's inclusive cost starts in
    /// [`InclusiveCosts`]. No transfer is both: one field keeps a transfer in 64 bytes.
    pub detail: u64,
}

const _: () = assert!(std::mem::size_of::<Transfer>() == 64);

impl Transfer {
    /// The `src_addr` field, when both ends have an address; `None` otherwise.
    pub fn src_addr(&self) -> Option<u64> {
        self.has_addr.then_some(self.src_addr)
    }
    /// The `tgt_addr` field, when both ends have an address; `None` otherwise.
    pub fn tgt_addr(&self) -> Option<u64> {
        self.has_addr.then_some(self.tgt_addr)
    }
    /// The `src_line` field, when both ends have a source line; `None` otherwise.
    pub fn src_line(&self) -> Option<u32> {
        self.has_line.then_some(self.src_line)
    }
    /// The `tgt_line` field, when both ends have a source line; `None` otherwise.
    pub fn tgt_line(&self) -> Option<u32> {
        self.has_line.then_some(self.tgt_line)
    }
    /// For a conditional branch, times it was executed, taken or not; 0 for anything else.
    pub fn executed(&self) -> u64 {
        if self.kind.is_conditional() {
            self.detail
        } else {
            0
        }
    }
    /// Times a conditional branch fell through: executed and not taken (0 for anything else).
    fn fell_through(&self) -> u64 {
        self.executed().saturating_sub(self.count)
    }
    fn is_call(&self) -> bool {
        self.kind.is_call()
    }
}

/// The store of the calls' inclusive costs of one process: each call's values one after the
/// other (a call names its place with [`Transfer::detail`] and [`Transfer::incl_len`]).
pub struct InclusiveCosts<'a> {
    /// The calls' inclusive costs, one value per event, each call's after the one before.
    pub values: &'a [u64],
    /// The length every call's inclusive cost is padded to with zeros (events named after the
    /// call was read), or 0.
    pub pad_to: usize,
}

impl InclusiveCosts<'_> {
    /// The callee's inclusive cost of a call, padded; empty for jumps.
    fn of(&self, a: &Transfer) -> Vec<u64> {
        if !a.is_call() {
            return Vec::new();
        }
        let start = a.detail as usize;
        let mut v = self.values[start..start + usize::from(a.incl_len)].to_vec();
        if v.len() < self.pad_to {
            v.resize(self.pad_to, 0);
        }
        v
    }
}

/// Symbol addresses: a function spans its own costed addresses, lowest to highest, and starts
/// lower only where a call enters it below them at an address no other function's costs
/// hold; a function without cost lines starts where calls enter it. Recursion levels (`fib'2`) run the code of their base function and get no range of
/// their own.
pub fn symbol_extents(process: &mut Process, transfers: &[Transfer], owners: &[Vec<u32>]) {
    let entries = call_entries(process, transfers);
    for (i, image) in process.images.iter_mut().enumerate() {
        // Rows with a cost, and rows whose costs are all zero (pprof writes one at every call
        // site), which place a function only where nothing else is.
        let mut extents = vec![None; image.symbols.len()];
        let mut zero_extents = vec![None; image.symbols.len()];
        for cost in &image.costs {
            if let (Some(s), Some(o)) = (cost.symbol, cost.offset) {
                let slot = if cost.values.iter().any(|&v| v != 0) { &mut extents } else { &mut zero_extents };
                widen(&mut slot[s as usize], o);
            }
        }
        apply_extents(image, &owners[i], &entries[i], &extents, &zero_extents);
    }
}

/// For every symbol of every image: the lowest address a call enters it at.
fn call_entries(process: &Process, transfers: &[Transfer]) -> Vec<Vec<Option<u64>>> {
    let mut entries: Vec<Vec<Option<u64>>> =
        process.images.iter().map(|i| vec![None; i.symbols.len()]).collect();
    for a in transfers {
        if let (true, Some(t)) = (a.is_call(), a.tgt_addr()) {
            let e = &mut entries[a.tgt_image as usize][a.tgt_symbol as usize];
            *e = Some(e.map_or(t, |e| e.min(t)));
        }
    }
    entries
}

/// Widens a symbol's lowest and highest costed address to take in `addr`.
#[inline]
fn widen(extent: &mut Option<(u64, u64)>, addr: u64) {
    *extent = Some(extent.map_or((addr, addr), |(lo, hi)| (lo.min(addr), hi.max(addr))));
}

/// Sets the offset and size of an image's symbols from their costed extents and call entries
/// (see [`symbol_extents`]).
///
/// A function's own cost lines decide its range. A call target below them moves its start down
/// only when no other function's cost lines hold that address: some producers (pprof) write the
/// caller's own position as the target of every call, which must not pull the callee's range
/// over its caller's code.
///
/// A function with no cost but zero-cost rows (`weak`, empty when there are none) or a call
/// target takes an address only where no other function's costs are: two functions at one
/// address would leave a reader of addresses to guess whose the costs there are.
fn apply_extents(
    image: &mut Image,
    base: &[u32],
    entries: &[Option<u64>],
    extents: &[Option<(u64, u64)>],
    weak: &[Option<(u64, u64)>],
) {
    let mut ranges: Vec<(u64, u64, usize)> =
        extents.iter().enumerate().filter_map(|(s, e)| e.map(|(lo, hi)| (lo, hi, s))).collect();
    ranges.sort_unstable();
    let held_by_other = |addr: u64, own: usize| {
        // Ranges may nest or overlap: any range starting at or below `addr` may hold it.
        let end = ranges.partition_point(|r| r.0 <= addr);
        ranges[..end].iter().rev().any(|&(_, hi, s)| hi >= addr && s != own && base[s] == s as u32)
    };
    for (s, sym) in image.symbols.iter_mut().enumerate() {
        if base[s] != s as u32 {
            continue;
        }
        let weak_extent = weak.get(s).copied().flatten();
        let start = match (entries[s], extents[s]) {
            (Some(e), Some((lo, _))) if e < lo && !held_by_other(e, s) => Some(e),
            (_, Some((lo, _))) => Some(lo),
            (e, None) => e.or(weak_extent.map(|w| w.0)).filter(|&a| !held_by_other(a, s)),
        };
        sym.offset = start;
        if let (Some(start), Some((_, hi))) = (start, extents[s].or(weak_extent)) {
            if hi >= start {
                sym.size = Some(hi - start + 1);
            }
        }
    }
}

fn thread_counts(thread: u32, count: u64) -> Counts {
    let mut v = Counts::from_elem(0, thread as usize + 1);
    v[thread as usize] = count;
    v
}

fn site(a: &Transfer) -> Site {
    Site::new(a.src_addr(), a.src_line(), a.tgt_addr(), a.tgt_line())
}

/// Edges between functions, one per transfer, in the order of `list` (a conditional branch
/// executed more often than taken adds a fall-through from the function to itself), for
/// transfers without addresses or profiles without executed addresses.
pub fn function_edges<'a>(
    process: &mut Process,
    inclusive: &InclusiveCosts,
    list: impl IntoIterator<Item = &'a Transfer>,
    first_id: u64,
) {
    let mut id = first_id;
    for a in list {
        let source = NodeRef::Symbol(SymbolRef { image: a.src_image, symbol: a.src_symbol });
        let target = NodeRef::Symbol(SymbolRef { image: a.tgt_image, symbol: a.tgt_symbol });
        let kind = a.kind;
        let site = site(a);
        let fall_through = a.fell_through() > 0;
        // The fall-through of a conditional jump stays in the function: no target position.
        let ft_site = fall_through.then(|| site.without_target());
        process.edges.push(Edge {
            id,
            source,
            target,
            kind,
            counts: thread_counts(a.thread.into(), a.count),
            details: EdgeDetails::boxed(inclusive.of(a), Some(site)),
        });
        if let Some(ft_site) = ft_site {
            id += 1;
            process.edges.push(Edge {
                id,
                source,
                target: source,
                kind: EdgeKind::FallThrough,
                counts: thread_counts(a.thread.into(), a.fell_through()),
                details: EdgeDetails::boxed(Vec::new(), Some(ft_site)),
            });
        }
        id += 1;
    }
}

/// One executed instruction address of an image, gathered from the cost lines.
#[derive(Clone, Copy, Default)]
struct Instr {
    addr: u64,
    /// Executions (`Ir` summed over every function context at this address).
    ir: u64,
    /// The function the address belongs to (a recursion level's base function).
    owner: u32,
    /// Source file, `NO_INDEX` when unknown.
    file: u32,
    line: u32,
    /// [`LEAD`], [`END`], [`CALL`].
    flags: u8,
}

/// A block must start at this instruction (a jump or call target, a function entry).
const LEAD: u8 = 1;
/// A block must end at this instruction (the source of a transfer).
const END: u8 = 2;
/// A call instruction (the source of a call transfer).
const CALL: u8 = 4;

/// One end of a transfer: its address, the transfer, whether it is a call (whose count the
/// call instruction's executions may take), and whether a block must start there. 16 bytes:
/// there are two per transfer, sorted by address.
#[derive(Clone, Copy, Default)]
struct ArcEnd {
    addr: u64,
    arc: u32,
    call: bool,
    lead: bool,
    /// A call into the dynamic loader's lazy-binding resolver ([`transfer_ends`]).
    binds: bool,
}

const _: () = assert!(std::mem::size_of::<ArcEnd>() == 16);

/// An image's transfer sources and targets, each in address order, and the transfers they
/// name.
#[derive(Clone, Copy)]
struct Ends<'a> {
    list: &'a [Transfer],
    srcs: &'a [ArcEnd],
    tgts: &'a [ArcEnd],
}

/// One transfer's share of an edge, before equal edges are merged (24 bytes: a large
/// profile has millions).
#[derive(Clone, Copy)]
struct Contribution {
    count: u64,
    source: u32,
    target: u32,
    /// The call transfer (inclusive cost and site), `NO_INDEX` for other contributions.
    arc: u32,
    /// Threads are numbered below 2^16 (the reader checks `thread:` lines).
    thread: u16,
    kind: EdgeKind,
}

const _: () = assert!(std::mem::size_of::<Contribution>() == 24);

/// Edges being gathered: parallel transfers (several function contexts at one address,
/// several parts) are merged at the end. Tracks what the later steps ask of the edges so far:
/// whether a block has an outgoing edge and the traversals into each block.
struct EdgeSet {
    items: Vec<Contribution>,
    has_out: Vec<bool>,
    incoming: Vec<u64>,
}

impl EdgeSet {
    /// An empty edge set for `transfers` transfers between `nblocks` blocks. Each call gives
    /// a call, a bypass and usually one return, a few returns when its callee has several
    /// exits; a jump one edge, a conditional one or two; a block at most one fall-through.
    /// Reserved generously: the untouched rest costs address space only, where growing would
    /// copy the largest list of the rebuild.
    fn for_transfers(transfers: usize, nblocks: usize) -> EdgeSet {
        EdgeSet {
            items: Vec::with_capacity(transfers.saturating_mul(4).saturating_add(nblocks)),
            has_out: vec![false; nblocks],
            incoming: vec![0; nblocks],
        }
    }

    fn add(&mut self, source: u32, target: u32, kind: EdgeKind, thread: u16, count: u64, arc: u32) {
        self.items.push(Contribution { count, source, target, arc, thread, kind });
        self.has_out[source as usize] = true;
        let t = &mut self.incoming[target as usize];
        *t = t.saturating_add(count);
    }
}

fn add_counts(into: &mut Counts, thread: u32, n: u64) {
    let thread = thread as usize;
    if let Some(c) = into.get_mut(thread) {
        *c = c.saturating_add(n);
    } else {
        if into.len() < thread {
            into.resize(thread, 0);
        }
        into.push(n);
    }
}

/// Blocks of the process in global numbering.
struct Blocks {
    /// Global index of each image's first block; one more entry holds the total.
    base: Vec<u32>,
    /// Image of each block.
    image: Vec<u32>,
    /// Owning function of each block (index into its image's symbols).
    owner: Vec<u32>,
    /// Whether the next block starts where this one ends (where a call returns to and a
    /// jump falls through to), whichever function each belongs to: code shared by two names
    /// runs on into the next address as any other code does (one name's entry falling into
    /// the other's body; rows of two names at one address, which cut blocks where the first
    /// row's name changes). Emptied before the edges are made, with it [`Blocks::next`].
    has_next: Vec<bool>,
}

impl Blocks {
    /// Executions of block `g` (0 when unknown), read from the block itself.
    fn count(&self, process: &Process, g: u32) -> u64 {
        let r = self.block_ref(g);
        process.images[r.image as usize].blocks[r.block as usize].count.unwrap_or(0)
    }

    fn block_ref(&self, g: u32) -> BlockRef {
        let image = self.image[g as usize];
        BlockRef { image, block: g - self.base[image as usize] }
    }

    fn next(&self, g: u32) -> Option<u32> {
        self.has_next[g as usize].then_some(g + 1)
    }

    /// Whether block `n`, which follows block `r`, is the entry of a named function other than
    /// `r`'s. Then `r`, ending without a stated transfer, ends in a return (or a jump the
    /// profile does not state), not in a fall-through: code that runs on into another function
    /// runs into its body (`mempcpy`'s entry into `memcpy`'s) or ends in a conditional jump,
    /// whose fall-through the profile states (`__memmove_chk` into `memmove`). A signal
    /// handler placed after `main`, entered by the kernel, is not entered from `main`'s `ret`.
    /// Valgrind names code without symbols by its address, function by block: those run on.
    fn enters_another_function(&self, process: &Process, r: u32, n: u32) -> bool {
        let owner = self.owner[n as usize];
        if owner == self.owner[r as usize] {
            return false;
        }
        let at = self.block_ref(n);
        let image = &process.images[at.image as usize];
        let Some(symbol) = image.symbols.get(owner as usize) else { return false };
        symbol.offset == Some(image.blocks[at.block as usize].offset) && !is_address_name(&symbol.name)
    }

    /// Where a call that ends block `g` returns to: the next block, in the same function. A
    /// call that ends its function's code is a tail call (a jump Valgrind counts as a call),
    /// or never returns.
    fn return_site(&self, g: u32) -> Option<u32> {
        self.next(g).filter(|&n| self.owner[n as usize] == self.owner[g as usize])
    }
}

/// Rebuilds basic blocks from executed addresses and transfers between them, and turns the
/// transfers into a control-flow graph. `ir` is the event that counts an instruction's
/// executions (Callgrind's `Ir`; `None`: counts unknown); `owners[image][symbol]` the function
/// whose code a function runs (itself, or a recursion level's base function).
///
/// Per image, the executed addresses (cost rows) are sorted; a block starts at a jump or call
/// target, at a function entry, after a jump or call source, where the owning function changes
/// and where the executed count changes (so every instruction of a block ran equally often).
/// An instruction's executions are its `Ir` (summed over recursion levels and other contexts).
/// A call instruction runs as often as the block it ends; a call that starts a block runs the
/// smaller of its `Ir` and the sum of its calls (Valgrind charges skipped PLT code to the call's
/// `Ir`, and a lazily bound call shows as two calls). A block's `count` is the executions of
/// its first instruction. Its last instruction's length is the distance to the next executed
/// address when at most 15 bytes (the longest x86 instruction), else 1 (the input gives no
/// instruction lengths).
///
/// Edges: a branch -> an edge of its kind (`UNCONDITIONAL_BRANCH` for Callgrind's `jump=`); a
/// conditional -> `CONDITIONAL_BRANCH` (taken) plus `FALL_THROUGH` (executed - taken); a call
/// -> an edge of its kind (with the inclusive cost) plus a
/// `CALL_BYPASS` (count 0, as Pin writes it) from the call site to its return site, and
/// `RETURN` edges from the callee's exits to the return site; a block that ends without a jump
/// or call falls through to the next one as often as the next block's count exceeds its other
/// incoming edges. Transfers at addresses without costs stay edges between functions.
/// Routines are the functions of the profile: every block belongs to the function of its first
/// instruction (a recursion level's base function).
///
/// `every_execution`: the counts are every execution of an instrumented run (Valgrind's), not
/// samples: the rebuild then makes each block entered exactly as often as it ran, through the
/// `UNKNOWN` node where the profile does not say how ([`balance`]), and splits off the parts
/// of a function its entry does not reach as routines of their own ([`set_routines`]), so
/// that the DCFG made of it keeps the format's rules.
///
/// The transfers are taken by value: once the edges between blocks are gathered, only calls'
/// details and the transfers left between functions are kept, and the list goes before the
/// edges are made (it is the largest table left by then).
pub fn rebuild(
    process: &mut Process,
    list: Vec<Transfer>,
    inclusive: &[u64],
    pad_to: usize,
    ir: Option<usize>,
    owners: &[Vec<u32>],
    every_execution: bool,
) {
    let call_costs = &InclusiveCosts { values: inclusive, pad_to };
    let rows: usize = process.images.iter().map(|i| i.costs.len()).sum();
    if list.len() >= NO_INDEX as usize || rows >= NO_INDEX as usize {
        // Transfers, cost rows and blocks are numbered in 32 bits here; past that (a file
        // of hundreds of gigabytes), edges join functions.
        symbol_extents(process, &list, owners);
        return function_edges(process, call_costs, &list, 1);
    }
    let nimages = process.images.len();
    // The block each transfer leaves from (ends at) and goes to (starts at).
    let mut arc_source = vec![NO_INDEX; list.len()];
    let mut arc_target = vec![NO_INDEX; list.len()];
    let mut blocks_of = Blocks {
        base: Vec::with_capacity(nimages + 1),
        image: Vec::new(),
        owner: Vec::new(),
        has_next: Vec::new(),
    };
    // Each image's executed addresses, and the ends of the transfers by address, do not
    // depend on each other: sorted side by side.
    let (executed, ((sources, targets), entries)) = rayon::join(
        || process.images.iter().map(executed_rows).collect::<Vec<_>>(),
        || (transfer_ends(&list, nimages, &lazy_binding_resolvers(process)), call_entries(process, &list)),
    );
    for ((i, image), (rows, extents)) in process.images.iter_mut().enumerate().zip(executed) {
        let global = blocks_of.owner.len() as u32;
        blocks_of.base.push(global);
        apply_extents(image, &owners[i], &entries[i], &extents, &[]);
        let srcs = &sources[i];
        let tgts = &targets[i];
        let mut walked = walk_image(image, &rows, ir, &owners[i], Ends { list: &list, srcs, tgts });
        // Blocks are numbered process-wide from 4 (ids 1 to 3 are the special nodes).
        for (k, block) in walked.blocks.iter_mut().enumerate() {
            block.id = 4 + u64::from(global) + k as u64;
        }
        attach_transfers(&walked.blocks, global, srcs, tgts, &mut arc_source, &mut arc_target);
        blocks_of.image.extend(std::iter::repeat_n(i as u32, walked.blocks.len()));
        blocks_of.owner.append(&mut walked.owner);
        blocks_of.has_next.append(&mut walked.has_next);
        image.blocks = walked.blocks;
        image.source_lines = walked.lines;
    }
    drop(sources);
    drop(targets);
    let nblocks = blocks_of.owner.len();
    blocks_of.base.push(nblocks as u32);
    let b = &blocks_of;

    let mut set = EdgeSet::for_transfers(list.len(), nblocks);
    let Placed { ends_in_jump, unplaced, call_sites, branches } =
        place_transfers(&list, &arc_source, &arc_target, &mut set, b);
    drop(arc_source);
    drop(arc_target);
    if ir.is_some() {
        branches.complete_fall_throughs(process, &mut set, b);
    }
    if ir.is_some() {
        fall_throughs(process, &mut set, b, &ends_in_jump);
    }
    returns(process, &mut set, b, &ends_in_jump, call_sites);
    let unplaced: Vec<Transfer> = unplaced.iter().map(|&k| list[k]).collect();
    // Making the edges is the peak of the rebuild: what only the steps before it asked for
    // goes first.
    let (mut details, contexts) = call_details(&mut set.items, list, call_costs, &blocks_of.owner);
    drop(ends_in_jump);
    let EdgeSet { items, has_out, incoming } = set;
    drop((has_out, incoming));
    blocks_of.has_next = Vec::new();
    let mut edges = merge_edges(items, &blocks_of, &mut details, &contexts);
    drop((details, contexts));
    if ir.is_some() && every_execution {
        balance(process, &mut edges, &blocks_of);
    }
    // Each block's image was for the edges: it goes before the routines.
    blocks_of.image = Vec::new();
    set_routines(process, &edges, &blocks_of, every_execution);
    process.edges = edges;
    if !unplaced.is_empty() {
        let first_id = process.edges.len() as u64 + 1;
        function_edges(process, call_costs, &unplaced, first_id);
    }
}

/// Cuts an image's executed instructions (`rows`, in address order) into blocks, with the
/// image's transfer ends (`ends`) and its function entries marking where blocks must start;
/// `owners` as for [`rebuild`]. A large image is walked in two halves side by side, cut where
/// a block must start. Block ids are left 0 for the caller.
fn walk_image(image: &Image, rows: &[u32], ir: Option<usize>, owners: &[u32], ends: Ends) -> Walked {
    let mut entries: Vec<u64> = image.symbols.iter().filter_map(|s| s.offset).collect();
    entries.sort_unstable();

    let walk = |rows: &[u32], after: Option<u64>| {
        let executed = Executed::new(&image.costs, rows, ir, owners, ends, &entries);
        walk_blocks(executed, ir.is_some(), after, rows.len())
    };
    match split_point(&image.costs, rows, owners) {
        Some(m) => {
            let (one, two) = rows.split_at(m);
            let after = image.costs.offset(two[0] as usize);
            let (mut one, two) = rayon::join(|| walk(one, after), || walk(two, None));
            one.append(two);
            one
        }
        None => walk(rows, None),
    }
}

/// Fall-throughs of blocks that end without a jump or call (a jump target follows them): as
/// often as the next block ran beyond its incoming edges so far, at most as often as the block
/// itself. Each block is looked at once, and only its own fall-through changes what the next
/// one sees, so the edge set can grow during the walk.
fn fall_throughs(process: &Process, set: &mut EdgeSet, b: &Blocks, ends_in_jump: &[bool]) {
    for r in 0..b.owner.len() as u32 {
        if set.has_out[r as usize] || ends_in_jump[r as usize] {
            continue;
        }
        let Some(n) = b.next(r) else { continue };
        if b.enters_another_function(process, r, n) {
            continue;
        }
        let ft = b.count(process, n).saturating_sub(set.incoming[n as usize]).min(b.count(process, r));
        if ft > 0 {
            set.add(r, n, EdgeKind::FallThrough, 0, ft, NO_INDEX);
        }
    }
}

/// What placing the transfers between blocks leaves for the later steps.
struct Placed {
    /// Blocks that end in a jump (no fall-through).
    ends_in_jump: Vec<bool>,
    /// Transfers at addresses without costs: they stay edges between functions.
    unplaced: Vec<usize>,
    /// (call site, callee entry, thread, calls).
    call_sites: Vec<(u32, u32, u16, u64)>,
    branches: ConditionalEnds,
}

/// Adds the edges the transfers state between blocks (`arc_source`, `arc_target`: the block
/// each leaves and enters): calls with their bypass, jumps, conditionals taken and their
/// stated fall-throughs.
fn place_transfers(
    list: &[Transfer],
    arc_source: &[u32],
    arc_target: &[u32],
    set: &mut EdgeSet,
    b: &Blocks,
) -> Placed {
    let mut ends_in_jump = vec![false; b.owner.len()];
    // Transfers at addresses without costs stay edges between functions.
    let mut unplaced: Vec<usize> = Vec::new();
    // (call site, callee entry, thread, calls)
    let mut call_sites: Vec<(u32, u32, u16, u64)> = Vec::new();
    let mut branches = ConditionalEnds::default();
    for (k, a) in list.iter().enumerate() {
        let (src, tgt) = (arc_source[k], arc_target[k]);
        if src == NO_INDEX || a.tgt_addr().is_none() {
            unplaced.push(k);
            continue;
        }
        if a.is_call() {
            if tgt == NO_INDEX {
                unplaced.push(k);
                continue;
            }
            set.add(src, tgt, a.kind, a.thread, a.count, k as u32);
            if let Some(ret) = b.return_site(src) {
                // As Pin writes them: the bypass links call site and return site for the
                // routine's shape; the returns carry the counts.
                set.add(src, ret, EdgeKind::CallBypass, a.thread, 0, NO_INDEX);
            }
            call_sites.push((src, tgt, a.thread, a.count));
            continue;
        }
        let conditional = a.kind.is_conditional();
        if !conditional {
            ends_in_jump[src as usize] = true;
        }
        if a.count > 0 {
            if tgt == NO_INDEX {
                unplaced.push(k);
                continue;
            }
            set.add(src, tgt, a.kind, a.thread, a.count, NO_INDEX);
        }
        if conditional {
            branches.note(src, a);
        }
        if a.fell_through() > 0 {
            if let Some(ft) = b.next(src) {
                set.add(src, ft, EdgeKind::FallThrough, a.thread, a.fell_through(), NO_INDEX);
            }
        }
    }
    Placed { ends_in_jump, unplaced, call_sites, branches }
}

/// What the conditional branches that end each block say, gathered to complete their
/// fall-throughs from the block's own count.
///
/// A producer may state a branch's executions in parts that do not add up to the
/// instruction's: Valgrind runs the code after a branch in every superblock that contains it
/// (two plain `if`s in a row start a second superblock at the second `if`), counts the
/// branch's executions per superblock, and writes no `jcnd=` line for a superblock in which
/// the branch never jumped. The block's count, from every execution of its instructions, is
/// whole: what it ran and did not jump fell through.
#[derive(Default)]
struct ConditionalEnds {
    /// (block, thread of its first branch line, times taken, times stated as fallen through).
    ends: Vec<(u32, u16, u64, u64)>,
}

impl ConditionalEnds {
    fn note(&mut self, block: u32, a: &Transfer) {
        match self.ends.last_mut() {
            Some(last) if last.0 == block => {
                last.2 = last.2.saturating_add(a.count);
                last.3 = last.3.saturating_add(a.fell_through());
            }
            _ => self.ends.push((block, a.thread, a.count, a.fell_through())),
        }
    }

    /// Adds, for every block ending in a conditional branch, the fall-through its count
    /// asks for beyond what the lines stated: executions neither taken nor stated as fallen
    /// through.
    fn complete_fall_throughs(mut self, process: &Process, set: &mut EdgeSet, b: &Blocks) {
        // Lines of one branch come apart when several function contexts or parts name it.
        self.ends.sort_unstable_by_key(|e| e.0);
        let mut k = 0;
        while k < self.ends.len() {
            let (block, thread, mut taken, mut stated) = self.ends[k];
            k += 1;
            while self.ends.get(k).is_some_and(|e| e.0 == block) {
                taken = taken.saturating_add(self.ends[k].2);
                stated = stated.saturating_add(self.ends[k].3);
                k += 1;
            }
            let missing = b.count(process, block).saturating_sub(taken).saturating_sub(stated);
            if let (true, Some(next)) = (missing > 0, b.next(block)) {
                set.add(block, next, EdgeKind::FallThrough, thread, missing, NO_INDEX);
            }
        }
    }
}

/// The details of the call transfers that edge contributions name (inclusive cost, padded,
/// and site), which the contributions then index: all that making the edges still asks of
/// the transfers. Made here as the boxes the edges will keep (one per call; calls merged
/// into one edge add up into the first one's), so that nothing else of the calls is held
/// while the edges are made, the rebuild's peak. The transfer list goes meanwhile: calls are
/// named in the order of the list, so they are taken last first and the list's tail let go
/// of a megabyte at a time. Beside them, by detail, the functions a call names where they are
/// not the owners of its blocks' code (`owner`, by global block): its context.
fn call_details(
    items: &mut [Contribution],
    mut list: Vec<Transfer>,
    inclusive: &InclusiveCosts,
    owner: &[u32],
) -> (Vec<Option<Box<EdgeDetails>>>, StatedContexts) {
    const RELEASE: usize = (1 << 20) / std::mem::size_of::<Transfer>();
    let mut details: Vec<Option<Box<EdgeDetails>>> =
        (0..items.iter().filter(|c| c.arc != NO_INDEX).count()).map(|_| None).collect();
    let mut contexts = StatedContexts::default();
    let mut slot = details.len();
    let mut kept = list.len();
    for c in items.iter_mut().rev().filter(|c| c.arc != NO_INDEX) {
        let k = c.arc as usize;
        let a = &list[k];
        slot -= 1;
        details[slot] = EdgeDetails::boxed(inclusive.of(a), Some(site(a)));
        if (a.src_symbol, a.tgt_symbol) != (owner[c.source as usize], owner[c.target as usize]) {
            contexts.insert(slot as u32, (a.src_symbol, a.tgt_symbol));
        }
        c.arc = slot as u32;
        if kept - k >= RELEASE {
            list.truncate(k);
            list.shrink_to_fit();
            kept = k;
        }
    }
    (details, contexts)
}

/// The caller and callee a call transfer names, by its detail's slot, where they are not the
/// owners of its blocks' code (few calls: recursion levels, names sharing code).
type StatedContexts = rustc_hash::FxHashMap<u32, (u32, u32)>;

/// Each image's transfer sources and targets (transfers with both addresses), sorted by
/// address, with what the walks ask of the transfer (so that they need not look it up).
///
/// A call into the dynamic loader's lazy-binding resolver (`resolvers`: those functions, by
/// image and symbol) is no execution of its calling instruction: Valgrind records it beside
/// the call to the function the resolver binds, which the same execution made (see
/// [`crate::plt`]).
fn transfer_ends(
    list: &[Transfer],
    nimages: usize,
    resolvers: &[(u32, u32)],
) -> (Vec<Vec<ArcEnd>>, Vec<Vec<ArcEnd>>) {
    // Counted first and reserved at their length: grown by doubling, these lists of a few
    // hundred thousand ends were a tenth of the rebuild.
    let (mut nsources, mut ntargets) = (vec![0usize; nimages], vec![0usize; nimages]);
    for a in list.iter().filter(|a| a.has_addr) {
        nsources[a.src_image as usize] += 1;
        ntargets[a.tgt_image as usize] += 1;
    }
    let mut sources: Vec<Vec<ArcEnd>> = nsources.into_iter().map(Vec::with_capacity).collect();
    let mut targets: Vec<Vec<ArcEnd>> = ntargets.into_iter().map(Vec::with_capacity).collect();
    for (k, a) in list.iter().enumerate() {
        if let (Some(s), Some(t)) = (a.src_addr(), a.tgt_addr()) {
            let call = a.is_call();
            let arc = k as u32;
            let binds = call && resolvers.contains(&(a.tgt_image, a.tgt_symbol));
            sources[a.src_image as usize].push(ArcEnd { addr: s, arc, call, lead: false, binds });
            let lead = call || a.count > 0;
            targets[a.tgt_image as usize].push(ArcEnd { addr: t, arc, call, lead, binds: false });
        }
    }
    for ends in sources.iter_mut().chain(targets.iter_mut()) {
        radix::sort_by_key(ends, |e| e.addr);
    }
    (sources, targets)
}

/// The dynamic loader's lazy-binding resolvers among a process's functions, by image and
/// symbol.
fn lazy_binding_resolvers(process: &Process) -> Vec<(u32, u32)> {
    let mut found = Vec::new();
    for (i, image) in process.images.iter().enumerate() {
        for (s, symbol) in image.symbols.iter().enumerate() {
            if crate::plt::is_lazy_binding_resolver(&symbol.name) {
                found.push((i as u32, s as u32));
            }
        }
    }
    found
}

/// Blocks and source lines of a run of an image's executed instructions, with what the rebuild
/// keeps of each block beside it.
struct Walked {
    blocks: Vec<Block>,
    lines: Vec<SourceLine>,
    /// Owning function of each block.
    owner: Vec<u32>,
    /// Whether the next block directly follows this one (see [`Blocks::has_next`]).
    has_next: Vec<bool>,
}

impl Walked {
    /// Appends the blocks of the instructions that follow (a cut where a block must start);
    /// the last block here runs on into the first one there when it ends where that starts.
    fn append(&mut self, mut after: Walked) {
        if let (Some(last), Some(first), Some(next)) =
            (self.blocks.last(), after.blocks.first(), self.has_next.last_mut())
        {
            *next = last.offset + u64::from(last.size) == first.offset;
        }
        self.blocks.append(&mut after.blocks);
        self.lines.append(&mut after.lines);
        self.owner.append(&mut after.owner);
        self.has_next.append(&mut after.has_next);
    }
}

/// Cuts executed instructions into blocks: a block starts at a leader and after a block end,
/// where the owning function changes, and where the executed count changes (so every
/// instruction of a block ran equally often; `counted`: the counts are known). `after` is the
/// address of the instruction that follows the last one given, if any; `rows` bounds the
/// number of instructions. Block ids are left 0 for the caller.
fn walk_blocks(mut executed: Executed, counted: bool, after: Option<u64>, rows: usize) -> Walked {
    // At most one block and one source line per executed row: reserved at once, the untouched
    // rest costs address space only.
    let mut out = Walked {
        blocks: Vec::with_capacity(rows),
        lines: Vec::with_capacity(rows),
        owner: Vec::new(),
        has_next: Vec::new(),
    };
    // The instructions of the block being gathered, and the one after them.
    let mut block: Vec<Instr> = Vec::new();
    let mut next = executed.next();
    while let Some(first) = next {
        block.clear();
        block.push(first);
        next = executed.next();
        while let Some(x) = next {
            let prev = block[block.len() - 1];
            // A call inside a block runs as often as the block: its own Ir may carry
            // skipped code and its calls may count a lazy binding twice.
            if x.flags & LEAD != 0
                || prev.flags & END != 0
                || x.owner != first.owner
                || (counted && x.ir != first.ir && x.flags & CALL == 0)
                || x.addr - first.addr > MAX_BLOCK_SPAN
            {
                break;
            }
            block.push(x);
            next = executed.next();
        }
        let last = block[block.len() - 1];
        let last_len = match next.map(|n| n.addr).or(after) {
            Some(n) if n - last.addr <= MAX_INSTR_LEN => n - last.addr,
            _ => 1,
        };
        // At most `MAX_BLOCK_SPAN + MAX_INSTR_LEN`: the walk cut the block short of more.
        let size = (last.addr - first.addr + last_len) as u32;
        // Source lines: runs of instructions on the same file and line.
        let mut r = 0;
        while r < block.len() {
            let mut q = r + 1;
            while q < block.len() && block[q].file == block[r].file && block[q].line == block[r].line {
                q += 1;
            }
            let end_addr = if q < block.len() { block[q].addr } else { first.addr + u64::from(size) };
            out.lines.push(SourceLine {
                file: (block[r].file != NO_INDEX).then_some(block[r].file),
                line: block[r].line,
                offset: block[r].addr,
                size: (end_addr - block[r].addr) as u32,
                num_instrs: (q - r) as u32,
            });
            r = q;
        }
        let count = counted.then_some(first.ir);
        if let Some(prev) = out.blocks.last() {
            out.has_next.push(prev.offset + u64::from(prev.size) == first.addr);
        }
        out.blocks.push(Block {
            id: 0,
            offset: first.addr,
            size,
            // Rows, and so a block's instructions, are fewer than 2^32 (see `rebuild`).
            num_instrs: block.len() as u32,
            last_instr_offset: (last.addr - first.addr) as u32,
            count,
        });
        out.owner.push(first.owner);
    }
    if !out.blocks.is_empty() {
        out.has_next.push(false);
    }
    out
}

/// Where to cut an image's executed rows (sorted by address) in two, to walk the halves side
/// by side: near the middle, at an address whose function differs from the one before it, so
/// that a block starts there whichever way the walk goes. `None` for a small image, or when
/// one function holds the middle quarter.
fn split_point(costs: &CostTable, rows: &[u32], owners: &[u32]) -> Option<usize> {
    /// Below this many rows, a second thread costs more than it saves.
    const WORTH_SPLITTING: usize = 1 << 16;
    if rows.len() < WORTH_SPLITTING {
        return None;
    }
    let mut cursor = costs.cursor();
    let mut at = |k: usize| {
        let row = rows[k] as usize;
        cursor.offset(row).zip(cursor.symbol(row))
    };
    let mid = rows.len() / 2;
    // The instruction before the middle belongs to the function of the first row at its address.
    let (prev_addr, _) = at(mid - 1)?;
    let mut k = mid - 1;
    while k > 0 && at(k - 1)?.0 == prev_addr {
        k -= 1;
    }
    let mut prev = (prev_addr, owners[at(k)?.1 as usize]);
    for m in mid..mid + rows.len() / 4 {
        let (addr, symbol) = at(m)?;
        if addr == prev.0 {
            continue;
        }
        let owner = owners[symbol as usize];
        if owner != prev.1 {
            return Some(m);
        }
        prev = (addr, owner);
    }
    None
}

/// Sets the block each transfer leaves from (the one whose last instruction is its source)
/// and goes to (the one that starts at its target), in process-wide numbering from `global`;
/// `blocks` and both lists of ends are in address order.
fn attach_transfers(
    blocks: &[Block],
    global: u32,
    srcs: &[ArcEnd],
    tgts: &[ArcEnd],
    arc_source: &mut [u32],
    arc_target: &mut [u32],
) {
    let mut k = 0;
    for t in tgts {
        while blocks.get(k).is_some_and(|b| b.offset < t.addr) {
            k += 1;
        }
        if blocks.get(k).is_some_and(|b| b.offset == t.addr) {
            arc_target[t.arc as usize] = global + k as u32;
        }
    }
    let mut k = 0;
    for e in srcs {
        while blocks.get(k).is_some_and(|b| b.last_instr() < e.addr) {
            k += 1;
        }
        if blocks.get(k).is_some_and(|b| b.last_instr() == e.addr) {
            arc_source[e.arc as usize] = global + k as u32;
        }
    }
}

/// The rows of an image's costs that are executed instructions (rows with an address and a
/// function) in address order, rows at one address in table order; and each function's lowest
/// and highest costed address.
#[inline(never)]
fn executed_rows(image: &Image) -> (Vec<u32>, Vec<Option<(u64, u64)>>) {
    let mut extents = vec![None; image.symbols.len()];
    // Each row's address, read once in table order: the sort reads most rows twice, and the
    // addresses of a few neighbouring rows at a time (a function's basic blocks) in any order.
    let n = image.costs.len();
    let mut addrs = vec![0u64; n];
    let mut executed = vec![0u64; n.div_ceil(64)];
    image.costs.for_each_offset_and_symbol(|row, addr, symbol| {
        widen(&mut extents[symbol as usize], addr);
        executed[row / 64] |= 1 << (row % 64);
        addrs[row] = addr;
    });
    let rows = radix::sort_by_runs(n, |row| (executed[row / 64] >> (row % 64) & 1 != 0).then(|| addrs[row]));
    (rows, extents)
}

/// An image's executed instructions in address order, one [`Instr`] per address, made from
/// its rows sorted by address as the walk asks for them, so that the instructions of a large
/// image are never all held at once. The first row at an address decides its owner, file and
/// line; its executions are the `Ir` of all its rows.
///
/// Marked on the way: a block leader (a transfer target that ran, a function entry), a block
/// end (a transfer source), a call instruction. A call's executions are the sum of its calls
/// when smaller than its `Ir` (Valgrind charges code it skips, such as PLT stubs with
/// `--skip-plt=yes`, to the calling instruction's `Ir`).
struct Executed<'a> {
    cursor: Cursor<'a>,
    rows: std::iter::Copied<std::slice::Iter<'a, u32>>,
    /// The first row of the next address, read while looking for the end of this one.
    pending: Option<(u64, u32, usize)>,
    ir: Option<usize>,
    owners: &'a [u32],
    /// Transfer sources, transfer targets and function entries by address, and how far the
    /// walk has come in each.
    ends: Ends<'a>,
    entries: &'a [u64],
    s: usize,
    t: usize,
    e: usize,
}

impl<'a> Executed<'a> {
    fn new(
        costs: &'a CostTable,
        rows: &'a [u32],
        ir: Option<usize>,
        owners: &'a [u32],
        ends: Ends<'a>,
        entries: &'a [u64],
    ) -> Self {
        Executed {
            cursor: costs.cursor(),
            rows: rows.iter().copied(),
            pending: None,
            ir: ir.filter(|&e| e < costs.width()),
            owners,
            ends,
            entries,
            s: 0,
            t: 0,
            e: 0,
        }
    }

    /// The next row with an address and a function: (address, function, row).
    fn next_row(&mut self) -> Option<(u64, u32, usize)> {
        for row in self.rows.by_ref() {
            let row = row as usize;
            if let Some((addr, symbol)) = self.cursor.offset(row).zip(self.cursor.symbol(row)) {
                return Some((addr, symbol, row));
            }
        }
        None
    }

    fn executions(&mut self, row: usize) -> u64 {
        self.ir.map_or(0, |e| self.cursor.value(row, e))
    }

    /// Sets what the transfers and function entries at the instruction's address say of it.
    fn mark(&mut self, m: &mut Instr) {
        let addr = m.addr;
        let srcs = self.ends.srcs;
        while srcs.get(self.s).is_some_and(|e| e.addr < addr) {
            self.s += 1;
        }
        // Calls from the instruction, and its other transfers: a PLT stub's jump through its
        // slot that Valgrind counts as calls (`--skip-plt=no`) also jumps on, once, to the
        // lazy binding.
        let (mut calls, mut others): (Option<u64>, u64) = (None, 0);
        while let Some(e) = srcs.get(self.s).filter(|e| e.addr == addr) {
            m.flags |= END;
            let count = self.ends.list.get(e.arc as usize).map_or(0, |t| t.count);
            if e.call {
                calls = Some(calls.unwrap_or(0).saturating_add(if e.binds { 0 } else { count }));
            } else {
                others = others.saturating_add(count);
            }
            self.s += 1;
        }
        if let Some(n) = calls {
            m.flags |= CALL;
            let n = n.saturating_add(others);
            if n > 0 {
                m.ir = m.ir.min(n);
            }
        }
        let tgts = self.ends.tgts;
        while tgts.get(self.t).is_some_and(|e| e.addr < addr) {
            self.t += 1;
        }
        while let Some(e) = tgts.get(self.t).filter(|e| e.addr == addr) {
            if e.lead {
                m.flags |= LEAD;
            }
            self.t += 1;
        }
        while self.entries.get(self.e).is_some_and(|&e| e < addr) {
            self.e += 1;
        }
        if self.entries.get(self.e) == Some(&addr) {
            m.flags |= LEAD;
        }
    }
}

impl Iterator for Executed<'_> {
    type Item = Instr;

    fn next(&mut self) -> Option<Instr> {
        let (addr, symbol, row) = match self.pending.take() {
            Some(first) => first,
            None => self.next_row()?,
        };
        let mut m = Instr {
            addr,
            ir: self.executions(row),
            owner: self.owners[symbol as usize],
            file: self.cursor.file(row).unwrap_or(NO_INDEX),
            line: self.cursor.line(row).unwrap_or(0),
            flags: 0,
        };
        while let Some((a, symbol, row)) = self.next_row() {
            if a != addr {
                self.pending = Some((a, symbol, row));
                break;
            }
            m.ir = m.ir.saturating_add(self.executions(row));
        }
        self.mark(&mut m);
        Some(m)
    }
}

/// Returns: from the callee's exit blocks (those with no way on inside the routine) to the
/// return sites of its calls. With one exit, each call site gets its calls back from it; with
/// several, the exits' executions are handed out to the return sites in address order (the
/// file does not say which return went where; the counts still add up).
#[inline(never)]
fn returns(
    process: &Process,
    set: &mut EdgeSet,
    b: &Blocks,
    ends_in_jump: &[bool],
    call_sites: Vec<(u32, u32, u16, u64)>,
) {
    // Functions numbered process-wide, as blocks are.
    let mut symbol_base = Vec::with_capacity(process.images.len());
    let mut nsymbols = 0usize;
    for image in &process.images {
        symbol_base.push(nsymbols as u32);
        nsymbols += image.symbols.len();
    }
    let owner_of = |g: u32| symbol_base[b.image[g as usize] as usize] + b.owner[g as usize];
    // Returns each return site can take: its executions less the jumps into it. A call site
    // whose calls are more than that is (at least partly) a jump Valgrind counted as a call
    // (`jmp *ptr` ending a function, its next address another block of the function).
    let mut room = vec![0u64; b.owner.len()];
    let mut called = vec![0u64; b.owner.len()];
    for c in &call_sites {
        if let Some(ret) = b.return_site(c.0) {
            let r = b.block_ref(ret);
            let ran = process.images[r.image as usize].blocks[r.block as usize].count.unwrap_or(u64::MAX);
            room[ret as usize] = ran.saturating_sub(set.incoming[ret as usize]);
            called[ret as usize] = called[ret as usize].saturating_add(c.3);
        }
    }
    let tails = tail_calls(set, b, &call_sites, &room, &called, owner_of);
    let demands = return_demands(call_sites, b, owner_of);
    let mut exits = Exits::new(process, set, b, ends_in_jump, nsymbols, owner_of);
    // A call instruction returns as often as it ran: a lazily bound call is two calls from
    // one site (to the resolver, then to the function) and one return.
    let mut returned = vec![0u64; b.owner.len()];
    for (key, thread, count) in demands {
        let (callee, ret) = ((key >> 32) as usize, key as u32);
        let so_far = &mut returned[ret as usize];
        let r = b.block_ref(ret - 1);
        let ran = process.images[r.image as usize].blocks[r.block as usize].count.unwrap_or(u64::MAX);
        let left = &mut room[ret as usize];
        let count = count.min(ran.saturating_sub(*so_far)).min(*left);
        *so_far += count;
        *left -= count;
        if count == 0 {
            continue;
        }
        if let [(x, _)] = exits.of(callee)[..] {
            set.add(x, ret, EdgeKind::Return, thread, count, NO_INDEX);
            continue;
        }
        return_through_tail_calls(set, &mut exits, &tails, callee, ret, thread, count);
    }
}

/// Tail calls (a call with no return site, or more calls than its return site can take:
/// the caller ends there, its callee returns to the caller's callers), by calling
/// function; and jumps and fall-throughs into another function's code (one name's entry
/// running on into code of another name, as `mempcpy` jumps into `memcpy`): what the first
/// was called for returns from the second's exits. (caller, callee) pairs of process-wide
/// function numbers (`owner_of` a block), sorted and distinct.
fn tail_calls(
    set: &EdgeSet,
    b: &Blocks,
    call_sites: &[(u32, u32, u16, u64)],
    room: &[u64],
    called: &[u64],
    owner_of: impl Fn(u32) -> u32 + Copy,
) -> Vec<(u32, u32)> {
    let mut tails: Vec<(u32, u32)> = call_sites
        .iter()
        .filter(|c| b.return_site(c.0).is_none_or(|ret| called[ret as usize] > room[ret as usize]))
        .map(|&(src, callee, _, _)| (owner_of(src), owner_of(callee)))
        .chain(
            set.items
                .iter()
                .filter(|c| {
                    let (s, t) = (c.source as usize, c.target as usize);
                    (b.owner[s] != b.owner[t] || b.image[s] != b.image[t])
                        && !(c.kind.is_call() || c.kind.is_bypass() || c.kind.is_return())
                })
                .map(|c| (owner_of(c.source), owner_of(c.target))),
        )
        .filter(|(caller, callee)| caller != callee)
        .collect();
    tails.sort_unstable();
    tails.dedup();
    tails
}

/// Calls back to each return site, aggregated and sorted by (callee, return site, thread),
/// so that the hand-out does not depend on the order of the lines: (callee's process-wide
/// function number << 32 | return site, thread, calls).
fn return_demands(
    call_sites: Vec<(u32, u32, u16, u64)>,
    b: &Blocks,
    owner_of: impl Fn(u32) -> u32,
) -> Vec<(u64, u16, u64)> {
    let mut demands: Vec<(u64, u16, u64)> = call_sites
        .into_iter()
        .filter_map(|(src, callee, thread, count)| {
            let ret = b.return_site(src)?;
            Some((u64::from(owner_of(callee)) << 32 | u64::from(ret), thread, count))
        })
        .collect();
    if demands.iter().any(|d| d.1 != 0) {
        radix::sort_by_key(&mut demands, |d| u64::from(d.1));
    }
    radix::sort_by_key(&mut demands, |d| d.0);
    crate::repeats::add_up_runs(&mut demands, |d| (d.0, d.1), |kept, d| kept.2 = kept.2.saturating_add(d.2));
    demands
}

/// Exit blocks of every function in block order, with the executions each has left to hand
/// out to return sites.
struct Exits {
    /// Where each process-wide function's exits start in `supply`; one more entry holds the
    /// total.
    start: Vec<usize>,
    /// (exit block, executions left to hand out).
    supply: Vec<(u32, u64)>,
}

impl Exits {
    /// The exits of the `nsymbols` functions (`owner_of` a block): blocks with no outgoing
    /// edge that do not end in a jump, gathered by a counting sort by function.
    fn new(
        process: &Process,
        set: &EdgeSet,
        b: &Blocks,
        ends_in_jump: &[bool],
        nsymbols: usize,
        owner_of: impl Fn(u32) -> u32,
    ) -> Exits {
        let is_exit = |g: usize| !set.has_out[g] && !ends_in_jump[g];
        let mut start = vec![0usize; nsymbols + 1];
        for g in (0..b.owner.len()).filter(|&g| is_exit(g)) {
            start[owner_of(g as u32) as usize + 1] += 1;
        }
        for s in 1..start.len() {
            start[s] += start[s - 1];
        }
        let mut fill = start.clone();
        let mut supply: Vec<(u32, u64)> = vec![(0, 0); start[nsymbols]];
        for g in (0..b.owner.len()).filter(|&g| is_exit(g)) {
            let s = owner_of(g as u32) as usize;
            supply[fill[s]] = (g as u32, b.count(process, g as u32));
            fill[s] += 1;
        }
        Exits { start, supply }
    }

    /// The exits of function `f`, with what each has left.
    fn of(&mut self, f: usize) -> &mut [(u32, u64)] {
        &mut self.supply[self.start[f]..self.start[f + 1]]
    }
}

/// Hands `count` returns to return site `ret` out of the exits of `callee` (a function with
/// several exits) first, then those of the functions it tail-calls, nearest first, as far as
/// their executions left go (16 functions at most).
fn return_through_tail_calls(
    set: &mut EdgeSet,
    exits: &mut Exits,
    tails: &[(u32, u32)],
    callee: usize,
    ret: u32,
    thread: u16,
    count: u64,
) {
    let mut need = count;
    let mut functions = vec![callee as u32];
    let mut next = 0;
    while need > 0 && next < functions.len() && next < 16 {
        let f = functions[next] as usize;
        next += 1;
        for (x, left) in exits.of(f).iter_mut() {
            if need == 0 {
                break;
            }
            let take = need.min(*left);
            if take > 0 {
                set.add(*x, ret, EdgeKind::Return, thread, take, NO_INDEX);
                *left -= take;
                need -= take;
            }
        }
        let lo = tails.partition_point(|t| t.0 < f as u32);
        for &(_, t) in tails[lo..].iter().take_while(|t| t.0 == f as u32) {
            if !functions.contains(&t) {
                functions.push(t);
            }
        }
    }
}

/// Merges the contributions into edges sorted by (source, target, kind), numbered from 1: a
/// counting sort by source block, then each source's few contributions by target and kind.
/// Contributions to one edge add up; a call edge keeps the site of its first call transfer.
///
/// This is the peak of the rebuild: edges (64 bytes each) are made from contributions (24).
/// So the contributions, once sorted by source, are let go of from the end as the edges of
/// the last sources are made, a megabyte at a time, and the edges, made last source first,
/// are turned round at the end.
#[inline(never)]
fn merge_edges(
    items: Vec<Contribution>,
    b: &Blocks,
    details: &mut [Option<Box<EdgeDetails>>],
    contexts: &StatedContexts,
) -> Vec<Edge> {
    let nblocks = b.owner.len();
    let mut start = vec![0u32; nblocks + 1];
    for c in &items {
        start[c.source as usize + 1] += 1;
    }
    for s in 1..start.len() {
        start[s] += start[s - 1];
    }
    // Stable: equal edges keep the order in which they were added. (Made as a copy, then
    // each contribution put in its place: every slot is written once either way.)
    let mut sorted = items.clone();
    let mut fill = start.clone();
    for c in &items {
        let f = &mut fill[c.source as usize];
        sorted[*f as usize] = *c;
        *f += 1;
    }
    drop((items, fill));
    /// Contributions let go of at a time (a megabyte).
    const RELEASE: usize = (1 << 20) / std::mem::size_of::<Contribution>();
    let mut released = sorted.len();
    let mut edges: Vec<Edge> = Vec::with_capacity(sorted.len());
    for s in (0..nblocks).rev() {
        let from = start[s] as usize;
        let group = &mut sorted[from..start[s + 1] as usize];
        if group.is_empty() {
            continue;
        }
        group.sort_by_key(|c| (c.target, c.kind));
        // Edges of this source, last first.
        let mut y = group.len();
        while y > 0 {
            let last = &group[y - 1];
            let mut x = y - 1;
            while x > 0 && (group[x - 1].target, group[x - 1].kind) == (last.target, last.kind) {
                x -= 1;
            }
            edges.push(merged(&group[x..y], b, details, contexts));
            y = x;
        }
        if released - from >= RELEASE {
            sorted.truncate(from);
            sorted.shrink_to_fit();
            released = from;
        }
    }
    drop(sorted);
    edges.reverse();
    for (k, edge) in edges.iter_mut().enumerate() {
        edge.id = k as u64 + 1;
    }
    edges
}

/// The edge that contributions with one source, target and kind make, in the order they were
/// added (its id is left for the caller): counts by thread, and for calls the details of the
/// first call with the inclusive costs of the others added (see [`call_details`]).
fn merged(
    group: &[Contribution],
    b: &Blocks,
    details: &mut [Option<Box<EdgeDetails>>],
    stated: &StatedContexts,
) -> Edge {
    let first = &group[0];
    let mut counts = Counts::new();
    let mut edge_details: Option<Box<EdgeDetails>> = None;
    let contexts = merged_contexts(group, b, details, stated);
    for c in group {
        add_counts(&mut counts, u32::from(c.thread), c.count);
        if c.arc == NO_INDEX {
            continue;
        }
        let add = details[c.arc as usize].take();
        match (&mut edge_details, add) {
            (Some(sum), Some(add)) => {
                let sum = &mut sum.inclusive;
                if sum.len() < add.inclusive.len() {
                    sum.resize(add.inclusive.len(), 0);
                }
                for (v, &w) in sum.iter_mut().zip(add.inclusive.iter()) {
                    *v = v.saturating_add(w);
                }
            }
            (None, add) => edge_details = add,
            (Some(_), None) => {}
        }
    }
    if let (Some(d), Some(contexts)) = (&mut edge_details, contexts) {
        d.extra_mut().contexts = contexts;
    }
    Edge {
        id: 0,
        source: NodeRef::Block(b.block_ref(first.source)),
        target: NodeRef::Block(b.block_ref(first.target)),
        kind: first.kind,
        counts,
        details: edge_details,
    }
}

/// The contexts of a merged call edge ([`CallContext`]): `None` when every call of `group`
/// was made between the owners of its blocks, else every call's traversals and inclusive cost
/// under the functions it named, in the order first met.
fn merged_contexts(
    group: &[Contribution],
    b: &Blocks,
    details: &[Option<Box<EdgeDetails>>],
    stated: &StatedContexts,
) -> Option<Vec<CallContext>> {
    if stated.is_empty() || !group.iter().any(|c| stated.contains_key(&c.arc)) {
        return None;
    }
    let owners = (b.owner[group[0].source as usize], b.owner[group[0].target as usize]);
    let mut contexts: Vec<CallContext> = Vec::new();
    for c in group {
        let ends = stated.get(&c.arc).copied().unwrap_or(owners);
        let inclusive =
            details.get(c.arc as usize).and_then(|d| d.as_deref()).map_or(&[][..], |d| &d.inclusive[..]);
        let k = match contexts.iter().position(|x| (x.caller, x.callee) == ends) {
            Some(k) => k,
            None => {
                let (caller, callee) = ends;
                contexts.push(CallContext {
                    caller,
                    callee,
                    counts: Counts::new(),
                    inclusive: Numbers::new(),
                });
                contexts.len() - 1
            }
        };
        let x = &mut contexts[k];
        add_counts(&mut x.counts, u32::from(c.thread), c.count);
        if x.inclusive.len() < inclusive.len() {
            x.inclusive.resize(inclusive.len(), 0);
        }
        for (v, &w) in x.inclusive.iter_mut().zip(inclusive) {
            *v = v.saturating_add(w);
        }
    }
    contexts.shrink_to_fit();
    Some(contexts)
}

/// Whether a function's name is an address, as Valgrind names code without symbols
/// (`0x0000000004a63000`).
fn is_address_name(name: &str) -> bool {
    name.strip_prefix("0x").is_some_and(|hex| !hex.is_empty() && hex.bytes().all(|c| c.is_ascii_hexdigit()))
}

/// Whether the rebuild derived an edge's count rather than read it: a fall-through (what a
/// block ran and did not jump) and a return (handed out from the callee's exits). Every other
/// edge carries a count the profile states (a jump, a conditional taken, a call).
fn is_derived(kind: EdgeKind) -> bool {
    kind == EdgeKind::FallThrough || kind.is_return()
}

/// Takes the traversals `taken` off a call edge's contexts as they were taken off its
/// counts, last context first, so that the contexts still add up to the edge.
fn take_from_contexts(e: &mut Edge, taken: &Counts) {
    let Some(extra) = e.details.as_mut().and_then(|d| d.extra.as_mut()) else { return };
    for (t, &n) in taken.iter().enumerate() {
        let mut n = n;
        for x in extra.contexts.iter_mut().rev() {
            let Some(c) = x.counts.get_mut(t) else { continue };
            let take = n.min(*c);
            *c -= take;
            n -= take;
        }
    }
    extra.contexts.retain(|x| x.counts.iter().any(|&c| c > 0));
}

/// Takes `n` traversals (at most its total) off an edge's counts, last thread first, and
/// returns them by thread.
fn take_traversals(counts: &mut Counts, mut n: u64) -> Counts {
    let mut taken = Counts::from_elem(0, counts.len());
    for t in (0..counts.len()).rev() {
        let take = n.min(counts[t]);
        counts[t] -= take;
        taken[t] = take;
        n -= take;
    }
    let len = taken.iter().rposition(|&v| v > 0).map_or(1, |p| p + 1);
    taken.resize(len, 0);
    taken
}

/// Makes every block of known count entered exactly as often as it ran (the DCFG rule that a
/// block's `COUNT` is the sum of its incoming edges), keeping every count the profile states.
/// The block's count is its first instruction's executions, exact; where the edges into it
/// say otherwise the profile cannot explain the difference, and the difference goes through
/// the process's `UNKNOWN` node rather than vanish or be made up:
/// - entered less often than it ran: an `UNKNOWN` edge from the `UNKNOWN` node brings the
///   rest (a way in the profile does not record: a jump Valgrind did not count, control
///   entering code from a signal or `longjmp`, a block's other entries where the profile
///   contradicts itself);
/// - entered more often than it ran: the derived edges into it (fall-throughs, returns) are
///   cut first, as they are estimates; what stated counts still bring in beyond the block's
///   count leaves its source for the `UNKNOWN` node instead, as an edge of the same kind
///   (the source still sends as many as the profile says, so the stated count is the sum of
///   the two edges). Valgrind writes such counts, e.g. `calls=81` to a function whose first
///   instruction ran once, `jcnd=58/1`.
#[inline(never)]
fn balance(process: &Process, edges: &mut Vec<Edge>, b: &Blocks) {
    let nblocks = b.owner.len();
    let global = |r: BlockRef| (b.base[r.image as usize] + r.block) as usize;
    let mut entered = vec![0u64; nblocks];
    for e in edges.iter() {
        if let NodeRef::Block(t) = e.target {
            let g = global(t);
            entered[g] = entered[g].saturating_add(e.total());
        }
    }
    let ran = |g: usize| {
        let r = b.block_ref(g as u32);
        process.images[r.image as usize].blocks[r.block as usize].count
    };
    // Entered beyond what ran, by block; what was entered too few times.
    let mut excess = entered;
    let mut short: Vec<(u32, u64)> = Vec::new();
    let mut any_excess = false;
    for (g, x) in excess.iter_mut().enumerate() {
        match ran(g) {
            Some(c) if *x > c => {
                *x -= c;
                any_excess = true;
            }
            Some(c) => {
                if *x < c {
                    short.push((g as u32, c - *x));
                }
                *x = 0;
            }
            None => *x = 0,
        }
    }
    let before = edges.len();
    let mut emptied_return = false;
    if any_excess {
        // The edges into blocks entered too often: a few among all.
        let into_excess: Vec<usize> = (0..before)
            .filter(|&k| matches!(edges[k].target, NodeRef::Block(t) if excess[global(t)] > 0))
            .collect();
        for derived in [true, false] {
            for &k in &into_excess {
                let e = &mut edges[k];
                let NodeRef::Block(t) = e.target else { continue };
                let x = &mut excess[global(t)];
                if *x == 0 || is_derived(e.kind) != derived {
                    continue;
                }
                let take = (*x).min(e.total());
                if take == 0 {
                    continue;
                }
                *x -= take;
                let taken = take_traversals(&mut e.counts, take);
                take_from_contexts(e, &taken);
                emptied_return |= e.kind.is_return() && e.total() == 0;
                if !derived {
                    let (source, kind) = (e.source, e.kind);
                    edges.push(Edge {
                        id: 0,
                        source,
                        target: NodeRef::Unknown,
                        kind,
                        counts: taken,
                        details: None,
                    });
                }
            }
        }
    }
    if emptied_return {
        // A return cut to nothing is no way back.
        edges.retain(|e| !(e.kind.is_return() && e.total() == 0));
    }
    for (g, n) in short {
        edges.push(Edge {
            id: 0,
            source: NodeRef::Unknown,
            target: NodeRef::Block(b.block_ref(g)),
            kind: EdgeKind::Unknown,
            counts: Counts::from_elem(n, 1),
            details: None,
        });
    }
    // Ids go on from the merged edges' (all renumbered when a return went).
    let from = if emptied_return { 0 } else { before };
    for (k, edge) in edges.iter_mut().enumerate().skip(from) {
        edge.id = k as u64 + 1;
    }
}

/// A stated transfer's part that [`rebuild`] sent to the `UNKNOWN` node (its target ran fewer
/// times than the profile says it was entered): a call or branch from a block to `UNKNOWN`.
fn is_unknown_part(e: &Edge) -> bool {
    matches!((e.source, e.target), (NodeRef::Block(_), NodeRef::Unknown))
        && (e.kind.is_call() || e.kind.is_branch())
}

/// The process with every transfer's count as the profile stated it, for writers of formats
/// that have no `UNKNOWN` node (Callgrind): each part [`rebuild`] sent to the `UNKNOWN` node
/// joins the edge of the same source and kind that it left (the first such edge when a
/// source has several targets of one kind). `None` when the process has no such part.
pub fn with_unknown_parts_rejoined(process: &Process) -> Option<Process> {
    if !process.edges.iter().any(is_unknown_part) {
        return None;
    }
    let mut parts: std::collections::HashMap<(NodeRef, EdgeKind), Counts> = std::collections::HashMap::new();
    for e in process.edges.iter().filter(|e| is_unknown_part(e)) {
        let sum = parts.entry((e.source, e.kind)).or_default();
        for (t, &n) in e.counts.iter().enumerate() {
            add_counts(sum, t as u32, n);
        }
    }
    let mut out = process.clone();
    out.edges.retain(|e| !is_unknown_part(e));
    for e in &mut out.edges {
        if !matches!(e.target, NodeRef::Block(_)) {
            continue;
        }
        if let Some(add) = parts.remove(&(e.source, e.kind)) {
            for (t, &n) in add.iter().enumerate() {
                add_counts(&mut e.counts, t as u32, n);
            }
        }
    }
    Some(out)
}

/// Routines: the functions of the file, in the order their first block appears. A routine's
/// entry is the block at its function's address (else its first block); its exits are the
/// blocks that return or have no edge on inside the routine.
///
/// With `split` (counts of every execution, whose edges explain every block), a DCFG routine's every node is reached from its entry without calls or returns. A
/// function's blocks that its entry does not reach that way (code entered only from another
/// name's code, a return site whose call never returned, a block entered only through the
/// `UNKNOWN` node) make routines of their own, as the DCFG rules allow for code with several
/// entries: each headed by a block that no other such block leads to (else the first in
/// address order), and named after the function all the same ([`Routine::symbol`]).
#[inline(never)]
fn set_routines(process: &mut Process, edges: &[Edge], b: &Blocks, split: bool) {
    let graph = IntraEdges::new(edges, b);
    for (i, image) in process.images.iter_mut().enumerate() {
        if image.blocks.is_empty() {
            continue;
        }
        let global = b.base[i] as usize;
        let owners = &b.owner[global..global + image.blocks.len()];
        image.routines = Some(image_routines(image, &graph, owners, global, split));
    }
}

/// The edges a routine may be walked by, as each block's successors inside its image (a
/// counting sort by source), and which blocks leave by such an edge or by a return; blocks in
/// process-wide numbering.
struct IntraEdges {
    /// Where each block's successors start in `successors`; one more entry holds the total.
    start: Vec<u32>,
    successors: Vec<u32>,
    /// Blocks with an edge out that a routine may be walked by.
    out_intra: Vec<bool>,
    /// Blocks a return leaves.
    returns: Vec<bool>,
}

impl IntraEdges {
    fn new(edges: &[Edge], b: &Blocks) -> IntraEdges {
        let nblocks = b.owner.len();
        let global = |r: BlockRef| (b.base[r.image as usize] + r.block) as usize;
        let mut out_intra = vec![false; nblocks];
        let mut returns = vec![false; nblocks];
        let intra = |e: &Edge| match (e.source, e.target) {
            (NodeRef::Block(s), NodeRef::Block(t)) if s.image == t.image && e.kind.is_intra_routine() => {
                Some((global(s), global(t) as u32))
            }
            _ => None,
        };
        let mut start = vec![0u32; nblocks + 1];
        for e in edges {
            if let NodeRef::Block(s) = e.source {
                let g = global(s);
                if e.kind.is_intra_routine() {
                    out_intra[g] = true;
                }
                if e.kind.is_return() {
                    returns[g] = true;
                }
            }
            if let Some((s, _)) = intra(e) {
                start[s + 1] += 1;
            }
        }
        for s in 1..start.len() {
            start[s] += start[s - 1];
        }
        let mut successors = vec![0u32; start[nblocks] as usize];
        let mut fill = start.clone();
        for e in edges {
            if let Some((s, t)) = intra(e) {
                successors[fill[s] as usize] = t;
                fill[s] += 1;
            }
        }
        drop(fill);
        IntraEdges { start, successors, out_intra, returns }
    }

    /// The successors of block `g`.
    fn of(&self, g: usize) -> &[u32] {
        &self.successors[self.start[g] as usize..self.start[g + 1] as usize]
    }
}

/// Each function's blocks of an image in block order (`owners`: each block's function among
/// the image's `nsymbols`), the functions in the order their first block appears.
fn blocks_by_owner(owners: &[u32], nsymbols: usize) -> Vec<(u32, Vec<u32>)> {
    let mut slot = vec![NO_INDEX; nsymbols];
    let mut by_owner: Vec<(u32, Vec<u32>)> = Vec::new();
    for (k, &o) in owners.iter().enumerate() {
        let s = &mut slot[o as usize];
        if *s == NO_INDEX {
            *s = by_owner.len() as u32;
            by_owner.push((o, Vec::new()));
        }
        by_owner[*s as usize].1.push(k as u32);
    }
    by_owner
}

/// The routines of one image (see [`set_routines`]), whose blocks start at `global` in
/// process-wide numbering and belong to `owners`.
fn image_routines(
    image: &Image,
    graph: &IntraEdges,
    owners: &[u32],
    global: usize,
    split: bool,
) -> Vec<Routine> {
    let by_owner = blocks_by_owner(owners, image.symbols.len());
    // Blocks already in a routine; blocks another unplaced block of their function leads to.
    let mut placed = vec![false; image.blocks.len()];
    let mut led_to = vec![false; image.blocks.len()];
    let mut queue: Vec<u32> = Vec::new();
    // Places the blocks of function `owner` that `entry` reaches, the entry first.
    let mut reach = |entry: u32, owner: u32, placed: &mut [bool]| -> Vec<u32> {
        placed[entry as usize] = true;
        queue.clear();
        queue.push(entry);
        let mut k = 0;
        while k < queue.len() {
            let x = queue[k] as usize;
            k += 1;
            for &t in graph.of(global + x) {
                let Some(t) = (t as usize).checked_sub(global) else { continue };
                if t < placed.len() && !placed[t] && owners[t] == owner {
                    placed[t] = true;
                    queue.push(t as u32);
                }
            }
        }
        let mut members = queue.clone();
        members.sort_unstable();
        members
    };
    let exits_of = |nodes: &[u32]| -> Vec<u32> {
        nodes
            .iter()
            .copied()
            .filter(|&k| graph.returns[global + k as usize] || !graph.out_intra[global + k as usize])
            .collect()
    };
    let mut routines = Vec::with_capacity(by_owner.len());
    for (owner, nodes) in by_owner {
        let entry_addr = image.symbols[owner as usize].offset;
        let entry = nodes
            .iter()
            .copied()
            .find(|&k| Some(image.blocks[k as usize].offset) == entry_addr)
            .unwrap_or(nodes[0]);
        let members = if split { reach(entry, owner, &mut placed) } else { nodes.clone() };
        if members.len() == nodes.len() {
            routines.push(Routine { entry, exits: exits_of(&nodes), nodes, ..Routine::default() });
            continue;
        }
        routines.push(Routine { entry, exits: exits_of(&members), nodes: members, ..Routine::default() });
        for &x in nodes.iter().filter(|&&x| !placed[x as usize]) {
            for &t in graph.of(global + x as usize) {
                if let Some(t) =
                    (t as usize).checked_sub(global).filter(|&t| t < placed.len() && t != x as usize)
                {
                    if owners[t] == owner && !placed[t] {
                        led_to[t] = true;
                    }
                }
            }
        }
        let heads = nodes.iter().filter(|&&x| !led_to[x as usize]).chain(nodes.iter());
        for &head in heads {
            if placed[head as usize] {
                continue;
            }
            let members = reach(head, owner, &mut placed);
            routines.push(Routine {
                entry: head,
                exits: exits_of(&members),
                nodes: members,
                symbol: Some(owner),
                ..Routine::default()
            });
        }
    }
    routines
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{CostTable, Symbol};

    /// A transfer between two addresses of function 0 of image 0, as a branch record states it.
    fn branch(kind: EdgeKind, from: u64, to: u64, count: u64, executed: u64) -> Transfer {
        Transfer {
            kind,
            has_addr: true,
            has_line: false,
            thread: 0,
            src_image: 0,
            src_symbol: 0,
            src_line: 0,
            tgt_image: 0,
            tgt_symbol: 0,
            tgt_line: 0,
            src_addr: from,
            tgt_addr: to,
            count,
            detail: executed,
            incl_len: 0,
        }
    }

    /// One function: 0x10-0x14 run 10 times and end in a conditional to 0x20 taken 4 times;
    /// 0x16-0x18 run the other 6 and jump to 0x20, which runs 10 times.
    fn process() -> Process {
        let mut costs = CostTable::new();
        for (addr, n, line) in
            [(0x10, 10, 1), (0x12, 10, 1), (0x14, 10, 2), (0x16, 6, 3), (0x18, 6, 3), (0x20, 10, 4)]
        {
            costs.push_parts(Some(addr), Some(0), Some(0), Some(line), &[n]);
        }
        let image = Image {
            symbols: vec![Symbol { name: "f".into(), ..Symbol::default() }],
            costs,
            ..Image::default()
        };
        Process { images: vec![image], ..Process::default() }
    }

    /// Functions laid end to end, as a large image's are: the cut between the halves falls
    /// between two of them, and the last block before it spans to the first instruction after.
    #[test]
    fn a_large_image_walked_in_two_halves_gives_the_blocks_of_one_walk() {
        let (functions, per) = (3000u32, 30u64);
        let mut costs = CostTable::new();
        for f in 0..functions {
            for k in 0..per {
                let addr = 0x1000 + (u64::from(f) * per + k) * 2;
                costs.push_parts(Some(addr), Some(f), Some(0), Some(k as u32 / 3), &[k / 7 + 1]);
            }
        }
        let image = Image {
            symbols: (0..functions).map(|f| Symbol { name: format!("f{f}"), ..Symbol::default() }).collect(),
            costs,
            ..Image::default()
        };
        let owners: Vec<u32> = (0..functions).collect();
        let start = |f: u64| 0x1000 + f * per * 2;
        // In each function, a jump from its 10th instruction to its 20th.
        let srcs: Vec<ArcEnd> = (0..u64::from(functions))
            .map(|f| ArcEnd { addr: start(f) + 20, arc: f as u32, call: false, lead: false, binds: false })
            .collect();
        let tgts: Vec<ArcEnd> = srcs.iter().map(|e| ArcEnd { addr: e.addr + 20, lead: true, ..*e }).collect();
        let entries: Vec<u64> = (0..u64::from(functions)).map(start).collect();
        let (rows, _) = executed_rows(&image);
        let walk = |rows: &[u32], after: Option<u64>| {
            let ends = Ends { list: &[], srcs: &srcs, tgts: &tgts };
            let executed = Executed::new(&image.costs, rows, Some(0), &owners, ends, &entries);
            walk_blocks(executed, true, after, rows.len())
        };
        let whole = walk(&rows, None);
        let m = split_point(&image.costs, &rows, &owners).expect("a cut near the middle");
        let (one, two) = rows.split_at(m);
        let mut halves = walk(one, image.costs.offset(two[0] as usize));
        halves.append(walk(two, None));
        assert!(whole.blocks.len() > 5 * functions as usize);
        assert_eq!(halves.blocks, whole.blocks);
        assert_eq!(halves.lines, whole.lines);
        assert_eq!((halves.owner, halves.has_next), (whole.owner, whole.has_next));
    }

    /// A block's size is 32 bits: instructions of one function that ran equally often but lie
    /// gigabytes apart (only a made-up input has them) are two blocks, the gap in neither; a
    /// block may span up to `MAX_BLOCK_SPAN` and its last instruction.
    #[test]
    fn instructions_gigabytes_apart_are_two_blocks() {
        let blocks_of = |addrs: &[u64]| {
            let mut costs = CostTable::new();
            for &addr in addrs {
                costs.push_parts(Some(addr), Some(0), Some(0), Some(1), &[5]);
            }
            let image = Image { symbols: vec![Symbol::default()], costs, ..Image::default() };
            let mut p = Process { images: vec![image], ..Process::default() };
            let list = [branch(EdgeKind::UnconditionalBranch, addrs[addrs.len() - 1], 0x10, 4, 0)];
            rebuild(&mut p, list.to_vec(), &[], 0, Some(0), &[vec![0]], true);
            let image = &p.images[0];
            assert!(image
                .blocks
                .iter()
                .zip(&image.source_lines)
                .all(|(b, l)| (b.offset, b.size) == (l.offset, l.size)));
            image.blocks.iter().map(|b| (b.offset, b.size, b.num_instrs)).collect::<Vec<_>>()
        };
        let far = 0x10 + u64::from(u32::MAX);
        assert_eq!(blocks_of(&[0x10, 0x12, far - 2, far]), [(0x10, 3, 2), (far - 2, 3, 2)]);
        let edge = 0x10 + MAX_BLOCK_SPAN;
        assert_eq!(blocks_of(&[0x10, 0x12, edge]), [(0x10, u32::MAX - 14, 3)]);
        assert_eq!(blocks_of(&[0x10, 0x12, edge + 1]), [(0x10, 3, 2), (edge + 1, 1, 1)]);
    }

    #[test]
    fn blocks_edges_and_routines_follow_from_addresses_and_branches() {
        let mut p = process();
        let list = [
            branch(EdgeKind::ConditionalBranch, 0x14, 0x20, 4, 10),
            branch(EdgeKind::UnconditionalBranch, 0x18, 0x20, 6, 0),
        ];
        rebuild(&mut p, list.to_vec(), &[], 0, Some(0), &[vec![0]], true);
        let image = &p.images[0];
        let blocks: Vec<(u64, u32, u32, Option<u64>)> =
            image.blocks.iter().map(|b| (b.offset, b.size, b.num_instrs, b.count)).collect();
        // The last instruction spans to the next executed address (at most 15 bytes), else 1.
        assert_eq!(blocks, [(0x10, 6, 3, Some(10)), (0x16, 10, 2, Some(6)), (0x20, 1, 1, Some(10))]);
        let lines: Vec<(u32, u64, u32)> =
            image.source_lines.iter().map(|l| (l.line, l.offset, l.size)).collect();
        assert_eq!(lines, [(1, 0x10, 4), (2, 0x14, 2), (3, 0x16, 10), (4, 0x20, 1)]);
        let block = |b| NodeRef::Block(BlockRef { image: 0, block: b });
        let edges: Vec<(NodeRef, NodeRef, EdgeKind, u64)> =
            p.edges.iter().map(|e| (e.source, e.target, e.kind, e.total())).collect();
        assert_eq!(
            edges,
            [
                (block(0), block(1), EdgeKind::FallThrough, 6),
                (block(0), block(2), EdgeKind::ConditionalBranch, 4),
                (block(1), block(2), EdgeKind::UnconditionalBranch, 6),
                // Nothing in the input says how the first block was entered.
                (NodeRef::Unknown, block(0), EdgeKind::Unknown, 10),
            ]
        );
        let routines = image.routines.as_ref().expect("routines");
        assert_eq!(routines.len(), 1);
        assert_eq!(
            (routines[0].entry, &routines[0].exits, &routines[0].nodes),
            (0, &vec![2], &vec![0, 1, 2])
        );
        assert_eq!((image.symbols[0].offset, image.symbols[0].size), (Some(0x10), Some(0x11)));
    }

    /// Two plain `if`s in a row, as Valgrind records them: the second `if` (0x20-0x22) runs in
    /// the superblock of the first (6 times, never jumping: no `jcnd=` line) and in its own (4
    /// times, jumping 3): the branch at 0x22 ran 10 times, jumped 3, fell through 7.
    #[test]
    fn a_branch_counted_in_overlapping_superblocks_falls_through_what_its_block_did_not_jump() {
        let mut costs = CostTable::new();
        for (addr, n) in [(0x10, 10), (0x12, 10), (0x16, 6), (0x20, 6), (0x22, 6), (0x20, 4), (0x22, 4)] {
            costs.push_parts(Some(addr), Some(0), Some(0), Some(1), &[n]);
        }
        for (addr, n) in [(0x24, 7), (0x30, 10)] {
            costs.push_parts(Some(addr), Some(0), Some(0), Some(1), &[n]);
        }
        let image = Image {
            symbols: vec![Symbol { name: "f".into(), ..Symbol::default() }],
            costs,
            ..Image::default()
        };
        let mut p = Process { images: vec![image], ..Process::default() };
        let list = [
            branch(EdgeKind::ConditionalBranch, 0x12, 0x20, 4, 10),
            branch(EdgeKind::ConditionalBranch, 0x22, 0x30, 3, 4),
        ];
        rebuild(&mut p, list.to_vec(), &[], 0, Some(0), &[vec![0]], true);
        let image = &p.images[0];
        let blocks: Vec<(u64, Option<u64>)> = image.blocks.iter().map(|b| (b.offset, b.count)).collect();
        assert_eq!(
            blocks,
            [(0x10, Some(10)), (0x16, Some(6)), (0x20, Some(10)), (0x24, Some(7)), (0x30, Some(10))]
        );
        let block = |b| NodeRef::Block(BlockRef { image: 0, block: b });
        let edges: Vec<(NodeRef, NodeRef, EdgeKind, u64)> =
            p.edges.iter().map(|e| (e.source, e.target, e.kind, e.total())).collect();
        assert_eq!(
            edges,
            [
                (block(0), block(1), EdgeKind::FallThrough, 6),
                (block(0), block(2), EdgeKind::ConditionalBranch, 4),
                (block(1), block(2), EdgeKind::FallThrough, 6),
                (block(2), block(3), EdgeKind::FallThrough, 7),
                (block(2), block(4), EdgeKind::ConditionalBranch, 3),
                (block(3), block(4), EdgeKind::FallThrough, 7),
                (NodeRef::Unknown, block(0), EdgeKind::Unknown, 10),
            ]
        );
        // Every block's count is what flows into it.
        for (b, block) in image.blocks.iter().enumerate().skip(1) {
            let into: u64 = p
                .edges
                .iter()
                .filter(|e| e.target == NodeRef::Block(BlockRef { image: 0, block: b as u32 }))
                .map(|e| e.total())
                .sum();
            assert_eq!(Some(into), block.count, "block at {:#x}", block.offset);
        }
    }

    /// f calls g at 0x10, twice; g (0x40) only tail-calls h (0x80), which returns to f's
    /// 0x15. The same site also shows two calls straight to h, as a lazily bound call shows a
    /// call to the resolver and one to the function: the call instruction ran twice, so two
    /// returns reach 0x15, from h's exit.
    #[test]
    fn returns_come_from_tail_called_exits_and_as_often_as_the_call_ran() {
        let mut costs = CostTable::new();
        for (addr, symbol) in [(0x10, 0), (0x15, 0), (0x17, 0), (0x40, 1), (0x80, 2)] {
            costs.push_parts(Some(addr), Some(symbol), Some(0), Some(1), &[2]);
        }
        let symbols = ["f", "g", "h"].map(|n| Symbol { name: n.into(), ..Symbol::default() }).to_vec();
        let image = Image { symbols, costs, ..Image::default() };
        let mut p = Process { images: vec![image], ..Process::default() };
        let call = |from: u64, to: u64, src_symbol: u32, tgt_symbol: u32| Transfer {
            src_symbol,
            tgt_symbol,
            ..branch(EdgeKind::Call, from, to, 2, 0)
        };
        let list = [call(0x10, 0x40, 0, 1), call(0x40, 0x80, 1, 2), call(0x10, 0x80, 0, 2)];
        rebuild(&mut p, list.to_vec(), &[], 0, Some(0), &[vec![0, 1, 2]], true);
        let offset = |n: NodeRef| match n {
            NodeRef::Block(b) => p.images[0].blocks[b.block as usize].offset,
            _ => 0,
        };
        let returns: Vec<(u64, u64, u64)> = p
            .edges
            .iter()
            .filter(|e| e.kind == EdgeKind::Return)
            .map(|e| (offset(e.source), offset(e.target), e.total()))
            .collect();
        assert_eq!(returns, [(0x80, 0x15, 2)]);
    }

    #[test]
    fn transfers_without_executed_addresses_join_functions() {
        let mut p = process();
        // A call from an address that never ran: an edge between functions, with its site.
        let mut call = branch(EdgeKind::Call, 0x99, 0x10, 2, 0);
        call.incl_len = 1;
        let list = [branch(EdgeKind::UnconditionalBranch, 0x18, 0x20, 6, 0), call];
        rebuild(&mut p, list.to_vec(), &[7], 0, Some(0), &[vec![0]], true);
        let last = p.edges.last().expect("edges");
        assert_eq!(last.kind, EdgeKind::Call);
        assert!(matches!(last.source, NodeRef::Symbol(_)));
        assert_eq!(last.site().and_then(|s| s.source_offset()), Some(0x99));
        assert_eq!(last.inclusive(), &[7]);
    }

    /// Calls from one site to one entry in several threads (or function contexts) make one
    /// edge: counts by thread, inclusive costs added (padded to the events named later), the
    /// site of the first; other calls keep their own.
    #[test]
    fn calls_of_one_site_add_up_into_one_edge() {
        let mut p = process();
        let call = |thread: u16, count: u64, start: u64, len: u16| Transfer {
            thread,
            detail: start,
            incl_len: len,
            ..branch(EdgeKind::Call, 0x12, 0x20, count, 0)
        };
        let list = [
            call(0, 2, 0, 1),
            branch(EdgeKind::UnconditionalBranch, 0x18, 0x20, 6, 0),
            call(1, 3, 1, 2),
            Transfer { src_line: 9, has_line: true, ..call(1, 1, 3, 1) },
            call(0, 5, 4, 1),
        ];
        rebuild(&mut p, list.to_vec(), &[7, 4, 5, 100, 1], 2, Some(0), &[vec![0]], true);
        let calls: Vec<(&[u64], &[u64], Option<u32>)> = p
            .edges
            .iter()
            .filter(|e| e.kind == EdgeKind::Call)
            .map(|e| (&e.counts[..], e.inclusive(), e.site().and_then(|s| s.source_line())))
            .collect();
        // The callee's entry ran 10 times but is entered by 6 jumps and 11 calls: the calls
        // beyond what it ran go to the UNKNOWN node, the site's count staying 11.
        assert_eq!(calls, [(&[4, 0][..], &[7 + 4 + 100 + 1, 5][..], None), (&[3, 4][..], &[][..], None)]);
        let unknown: Vec<NodeRef> =
            p.edges.iter().filter(|e| e.kind == EdgeKind::Call).map(|e| e.target).collect();
        assert_eq!(unknown[1], NodeRef::Unknown);
        let site = p.edges.iter().find(|e| e.kind == EdgeKind::Call).and_then(|e| e.site()).cloned();
        assert_eq!(site.and_then(|s| s.source_offset()), Some(0x12));
    }
}
