//! The neutral model every format reads into and writes from.
//!
//! The nouns come from Intel's DCFG format, the richest of the formats cfghub speaks:
//!
//! ```text
//! Profile ── meta, events, files (interned), frame names (interned)
//!   └─ Process ── pid, per-thread instruction counts, edges, stacks
//!        └─ Image ── id, file, load address, size
//!             ├─ symbols       (name, offset, size)
//!             ├─ source lines  (offset range -> file:line, instruction count)
//!             ├─ blocks        (offset, size, instructions, execution count)
//!             ├─ routines      (entry, exits, blocks with immediate dominators, loops)
//!             ├─ costs         (values per event at an address, a line, or a function)
//!             ├─ block lines   (source lines of blocks that have no addresses)
//!             └─ coverage      (instrumented functions, blocks and call sites)
//! ```
//!
//! Rules that keep the model honest:
//! - A reader fills what its format says and nothing it would have to guess. Optional facts are
//!   `Option`s or empty collections, never made-up defaults.
//! - Derived facts (routines when a format has none, dominators, loops, call graph, inclusive
//!   costs, stacks replayed from a trace) live in the analysis crate (`cfghub_analysis`), never here and never in a writer.
//! - Ids that a format exposes to users (node ids, edge ids, image ids) are kept as `u64`;
//!   references inside the model are indices into `Vec`s ([`BlockRef`], [`SymbolRef`], `u32`).

use std::fmt;
use std::num::NonZeroU32;

mod costs;
mod counts;
mod edge_kind;
mod memory;
mod paths;
mod stacks;
mod strings;

pub use costs::{CostTable, Cursor, Rows};
pub use counts::{Counts, Numbers};
pub use edge_kind::{EdgeClass, EdgeKind};
pub use memory::ModelMemory;
pub use paths::{BlockLines, Coverage, CoverageKind, CoverageSite, LineItem, PathEdge};
pub use stacks::{
    decimal_text, from_f64, parse_decimal, power_of_ten, rounded, to_f64, Children, Label, LabelValue,
    ListedStack, Sample, SampleRef, StackNode, StackValue, Stacks, MAX_DECIMALS,
};
pub use strings::StringTable;

/// Index into [`Profile::files`].
pub type FileId = u32;
/// Index into [`Profile::frames`].
pub type FrameId = u32;
/// Index into [`Profile::events`].
pub type EventId = usize;

/// Values of a cost record, one per event. Inline for up to two events: profiles hold millions
/// of cost lines and samples, most with one or two events.
pub type Values = smallvec::SmallVec<[u64; 2]>;

/// One whole conversion: everything read from one or more inputs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// How the profile was made (format version, creator, command) and the header lines to keep.
    pub meta: Meta,
    /// What the numbers in [`Cost::values`], [`EdgeDetails::inclusive`] and [`Stack::values`] measure,
    /// in column order. Executed instructions of blocks are not an event column: they are
    /// `num_instrs * count` of each [`Block`] and every writer derives them from there.
    pub events: Vec<Event>,
    /// Interned file names: images and source files alike.
    pub files: StringTable,
    /// Interned stack-frame names (function names as a stack-sampling tool printed them).
    pub frames: StringTable,
    /// Where the function of each frame is defined, by [`FrameId`], when the format says
    /// (pprof `Function`): `frame_sources[f]` belongs to frame `f`; frames past its end have
    /// no known source.
    pub frame_sources: Vec<FrameSource>,
    /// The profiled processes, in input order (most formats have one).
    pub processes: Vec<Process>,
}

/// Where a frame's function is defined (pprof `Function.filename`, `start_line`,
/// `system_name`), or, for a frame no function names yet, where its code is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameSource {
    /// Source file the function is defined in, when known.
    pub file: Option<FileId>,
    /// First source line of the function.
    pub line: Option<u32>,
    /// The name as the system knows it (a mangled C++ name), when it differs from the frame's.
    pub system_name: Option<String>,
    /// The code address of a frame named by its address (`0x42ef04`: a pprof `Location` without
    /// lines), so that a writer can hand it on to be symbolized later.
    pub address: Option<FrameAddress>,
}

/// An unsymbolized frame's address: where the profiled program ran it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameAddress {
    /// The image (pprof `Mapping`) holding it, by index into the first process's images.
    pub image: Option<u32>,
    /// The runtime address.
    pub address: u64,
}

/// An index into one of the model's or an analysis's tables that names nothing (a `u32` slot
/// of "no block", "no routine", "no partner"): one sentinel for all of them.
pub const NO_INDEX: u32 = u32::MAX;

/// The [`Meta::headers`] key whose values say in what unit an event is counted, as
/// `"EVENT UNIT"` (`"cpu nanoseconds"`), one header per event with a known unit (pprof sample
/// types; speedscope profiles show it).
pub const EVENT_UNIT_KEY: &str = "event unit";

/// The [`Meta::headers`] key whose value names the event a viewer shows first when none is
/// chosen (pprof `default_sample_type`).
pub const DEFAULT_SAMPLE_TYPE_KEY: &str = "pprof.default_sample_type";

/// The unit `event` is counted in, from its [`EVENT_UNIT_KEY`] header.
pub fn event_unit<'a>(meta: &'a Meta, event: &str) -> Option<&'a str> {
    meta.headers.iter().filter(|(k, _)| k == EVENT_UNIT_KEY).find_map(|(_, v)| {
        let (n, unit) = v.rsplit_once(' ')?;
        (n == event).then_some(unit)
    })
}

/// Facts about how the profile was made, and header lines a format asks us to keep.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meta {
    /// Version of the input format as `(major, minor)`, when it has one.
    pub format_version: Option<(u64, u64)>,
    /// The program that wrote the profile (`creator:` in Callgrind).
    pub creator: Option<String>,
    /// The command line that was profiled.
    pub command: Option<String>,
    /// Other header lines, in input order, as `(key, value)`; the key carries the format's
    /// own spelling (e.g. `desc` for Callgrind, `event` for DCPI) so a writer of the same
    /// format can put them back.
    pub headers: Vec<(String, String)>,
    /// Bytes between consecutive sample slots, for formats that store one count per
    /// instruction slot rather than per address (DCPI: 4 on Alpha); `None` otherwise.
    pub address_step: Option<u64>,
}

/// One measured quantity, e.g. `Ir` (instructions executed) or DCPI `cycles` samples.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// Short name, as used in column headers (`Ir`, `cycles`).
    pub name: String,
    /// Long name for people (`Instruction Fetch`), when the format gives one.
    pub description: Option<String>,
}

impl Event {
    /// An event called `name` (`Ir`, `cycles`), without a long name.
    pub fn new(name: impl Into<String>) -> Self {
        Event { name: name.into(), description: None }
    }
}

/// One operating-system process.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Process {
    /// The operating system's process id.
    pub pid: u64,
    /// Total instructions executed over all threads, as the input stated it
    /// (DCFG `INSTR_COUNT`); `None` when the format does not say.
    pub instr_count: Option<u64>,
    /// Instructions executed per thread, thread 0 first (DCFG `INSTR_COUNT_PER_THREAD`).
    /// Its length is the number of threads.
    pub thread_instr_counts: Vec<u64>,
    /// The binaries and shared objects loaded into the process; [`BlockRef::image`] indexes it.
    pub images: Vec<Image>,
    /// Control-flow edges between blocks (or between functions, for function-level formats).
    pub edges: Vec<Edge>,
    /// Call stacks: a prefix tree of call paths and the samples on it, each with exact values
    /// per event ([`Stacks`]).
    pub stacks: Stacks,
}

impl Process {
    /// Number of threads: the longest per-thread array anywhere in the process, or the highest
    /// thread a stack was sampled on.
    pub fn thread_count(&self) -> usize {
        let edges = self.edges.iter().map(|e| e.counts.len()).max().unwrap_or(0);
        let stacks = self.stacks.max_thread().map_or(0, |t| t as usize + 1);
        self.thread_instr_counts.len().max(edges).max(stacks)
    }

    /// The block a [`BlockRef`] points at.
    pub fn block(&self, r: BlockRef) -> &Block {
        &self.images[r.image as usize].blocks[r.block as usize]
    }

    /// The symbol a [`SymbolRef`] points at.
    pub fn symbol(&self, r: SymbolRef) -> &Symbol {
        &self.images[r.image as usize].symbols[r.symbol as usize]
    }

    /// Iterates over every block with its reference.
    pub fn blocks(&self) -> impl Iterator<Item = (BlockRef, &Block)> {
        self.images.iter().enumerate().flat_map(|(i, image)| {
            image
                .blocks
                .iter()
                .enumerate()
                .map(move |(b, block)| (BlockRef { image: i as u32, block: b as u32 }, block))
        })
    }
}

/// A binary or shared object loaded into a process.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Image {
    /// The format's image id (DCFG `IMAGE_ID`; may be 0).
    pub id: u64,
    /// Path of the image file, when known.
    pub file: Option<FileId>,
    /// Address the image was loaded at; every `offset` in the image is relative to it.
    pub load_addr: u64,
    /// Size in bytes from `load_addr`, when known.
    pub size: Option<u64>,
    /// Offset in the file at which `load_addr` is mapped, when the format says (pprof).
    pub file_offset: Option<u64>,
    /// The build id of the image file, when the format says (pprof, ELF `.note.gnu.build-id`).
    pub build_id: Option<String>,
    /// Named code ranges (functions), as the format states them or the symbolizer adds them.
    pub symbols: Vec<Symbol>,
    /// Address ranges mapped to source lines (DCFG `SOURCE_DATA`, or DWARF through the symbolizer).
    pub source_lines: Vec<SourceLine>,
    /// Basic blocks of the image's code; [`BlockRef::block`] and routine and loop block indices index it.
    pub blocks: Vec<Block>,
    /// Routines as the input gave them; `None` when the format has no routines (the analysis
    /// derives them), `Some(vec![])` when it said there are none.
    pub routines: Option<Vec<Routine>>,
    /// Costs or samples attributed to places in this image, stored by column.
    pub costs: CostTable,
    /// The format gave no addresses for this image's code (CSI metadata): every block's
    /// `offset`, `size` and `last_instr_offset` are 0 and mean nothing, and source lines are in
    /// [`Image::block_lines`] instead of [`Image::source_lines`]. Writers whose format needs
    /// addresses say so in a warning.
    pub no_addresses: bool,
    /// Source lines of each block, parallel to [`Image::blocks`], for images without addresses;
    /// empty otherwise.
    pub block_lines: Vec<BlockLines>,
    /// Coverage arrays of instrumented functions (which functions, blocks and call sites the
    /// program records as run); empty when the format has none.
    pub coverage: Vec<Coverage>,
    /// Functions inlined at code addresses, as debug information states them: filled by
    /// the symbolizer (`cfghub_analysis::symbolize`) (no format states them), sorted by offset, one entry per address
    /// that has inlined frames.
    pub inlined: Vec<Inlined>,
    /// The names of the functions in [`Image::inlined`]'s frames, each once.
    pub inline_names: StringTable,
    /// The costs are the leaf samples of the process's stacks at their addresses (pprof: the
    /// same samples, seen by where the program ran rather than by call path). Writers that draw
    /// functions and calls from the stacks (Callgrind) leave them aside; writers made from
    /// addresses (BOLT, LLVM sample profiles, DCPI) take them.
    pub leaf_samples: bool,
}

impl Image {
    /// The source lines of block `b` when the image states them per block.
    pub fn lines_of(&self, b: u32) -> Option<&BlockLines> {
        self.block_lines.get(b as usize)
    }

    /// The id the format shows for block `b`: its own local id when it has one (CSI), else
    /// [`Block::id`].
    pub fn display_id(&self, b: u32) -> u64 {
        match self.lines_of(b).and_then(|l| l.local_id) {
            Some(id) => id,
            None => self.blocks.get(b as usize).map_or(u64::from(b), |blk| blk.id),
        }
    }
}

/// The calls inlined at one code address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inlined {
    /// The address, relative to the image's load address.
    pub offset: u64,
    /// Inlined functions, innermost first; the function they are all inlined into is the
    /// image's symbol covering the address. One copy of each chain, shared by every address
    /// that has it (a million addresses of a 45 MB Rust binary have 110,525 distinct chains).
    pub frames: std::sync::Arc<[InlineFrame]>,
}

/// One inlined function at an address: 16 bytes (a million addresses of a 45 MB Rust binary
/// have 692,635 frames in their distinct chains).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InlineFrame {
    /// Its name, demangled: an index into the image's [`Image::inline_names`], which holds
    /// each name once.
    pub name: u32,
    /// Its file ([`FileId`]), or [`NO_INDEX`].
    file: u32,
    line: Option<u32>,
}

impl InlineFrame {
    /// The frame of the function named `name` (an index into [`Image::inline_names`]), whose
    /// code at the address comes from `file` and `line`: its own file and line for the
    /// innermost frame, the call site inside it of the next inner frame otherwise.
    pub fn new(name: u32, file: Option<FileId>, line: Option<u32>) -> InlineFrame {
        // A file table of 2^32 - 1 names is beyond what the model can hold: no id is NO_INDEX.
        InlineFrame { name, file: file.unwrap_or(NO_INDEX), line }
    }

    /// Where its code at the address comes from (see [`InlineFrame::new`]).
    pub fn file(&self) -> Option<FileId> {
        (self.file != NO_INDEX).then_some(self.file)
    }

    /// The source line its code at the address comes from (see [`InlineFrame::new`]), when known.
    pub fn line(&self) -> Option<u32> {
        self.line
    }
}

/// How a format's code addresses relate to the addresses an ELF file states (its symbols,
/// its DWARF), which is what debug information answers for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AddressKind {
    /// `load_addr + offset` is a runtime address, and `load_addr` is where the image's lowest
    /// loadable segment was mapped (DCFG `LOAD_ADDR`, Pin's image low address), or, for an
    /// image with a non-zero `file_offset` (a pprof mapping of a PIE's text), where the
    /// file's byte at that offset was mapped.
    #[default]
    Runtime,
    /// `load_addr + offset` is a runtime address, and `load_addr` is where the image's
    /// executable segment (its text) starts (DCPI `tstart`, dcpicat `text_start`).
    TextRuntime,
    /// `load_addr + offset` is the address as the ELF file states it, whatever address the
    /// image ran at (Callgrind: valgrind writes object addresses, a PIE's too).
    Stated,
    /// `offset` is an offset in the ELF file, and `load_addr` is where the file's first byte
    /// would lie at runtime (a mapping's start less its file offset: perf's mmap records), so
    /// that `load_addr + offset` is the runtime address. The file's segments say which
    /// address an offset states.
    FileOffset,
    /// `offset` is relative to the image's base, the lowest address its loadable segments state
    /// (page-aligned), and `load_addr` is where that base was mapped (0 when unknown): samply's
    /// and the Firefox Profiler's library-relative addresses, for fixed-address executables too.
    ImageRelative,
}

/// A named code range, from a symbol table or a profile's function names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Symbol {
    /// The name as the input or the symbol table states it (mangled or not).
    pub name: String,
    /// Start, relative to the image's load address, when known.
    pub offset: Option<u64>,
    /// Size in bytes, when known.
    pub size: Option<u64>,
    /// Source file the symbol is defined in, when the format says (Callgrind `fl=`).
    pub file: Option<FileId>,
}

/// An address range mapped to a source line (DCFG `SOURCE_DATA`, DWARF line tables).
///
/// 32 bytes: a profile rebuilt from a Valgrind run has one per block, hundreds of thousands.
/// A range's size and instruction count fit 32 bits (as in Pin's DCFG interface); readers
/// reject larger ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceLine {
    /// The source file, when known.
    pub file: Option<FileId>,
    /// The 1-based line number; 0 when the producer knew none (valgrind's `???:0`).
    pub line: u32,
    /// Start of the range, relative to the image's load address.
    pub offset: u64,
    /// Size in bytes.
    pub size: u32,
    /// Instructions in the range, starting with the one at `offset`.
    pub num_instrs: u32,
}

/// A basic block: straight-line code with one entry and one exit.
///
/// 48 bytes: a block's size, instruction count and last-instruction offset fit 32 bits (as
/// in Pin's DCFG interface); readers reject larger ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    /// Node id, unique in the process and distinct from the special nodes' ids.
    pub id: u64,
    /// First instruction, relative to the image's load address.
    pub offset: u64,
    /// Size in bytes.
    pub size: u32,
    /// Instructions in the block.
    pub num_instrs: u32,
    /// Last instruction's offset from the block's first instruction.
    pub last_instr_offset: u32,
    /// Executions over all threads, as the input stated it (DCFG `COUNT`). Per-thread block
    /// counts are derived from the incoming edges by the analysis crate (`cfghub_analysis`).
    pub count: Option<u64>,
}

impl SourceLine {
    /// One past the range's last byte, a range taken to span at least one byte (so that it
    /// holds its own offset).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(u64::from(self.size.max(1)))
    }
}

impl Block {
    /// One past the block's last byte, a block taken to span at least one byte (so that it
    /// holds its own offset).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(u64::from(self.size.max(1)))
    }

    /// The offset of the block's last instruction.
    pub fn last_instr(&self) -> u64 {
        self.offset.wrapping_add(u64::from(self.last_instr_offset))
    }

    /// Instructions executed in this block: `num_instrs * count` (0 when the count is unknown).
    pub fn executed_instrs(&self) -> u64 {
        u64::from(self.num_instrs).saturating_mul(self.count.unwrap_or(0))
    }
}

/// A routine: blocks reachable from one entry without following inter-routine edges.
/// Block indices are into the owning [`Image::blocks`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routine {
    /// The routine's entry block.
    pub entry: u32,
    /// Blocks with edges that leave the routine (usually returns).
    pub exits: Vec<u32>,
    /// Every block of the routine, the entry and exits included.
    pub nodes: Vec<u32>,
    /// Immediate dominator of each entry of `nodes` (same order); the entry dominates itself.
    /// Empty when the input gave no dominators.
    pub idoms: Vec<u32>,
    /// Natural loops of the routine, as the input gave them or the analysis found them; empty when none.
    pub loops: Vec<Loop>,
    /// The routine's symbol (index into [`Image::symbols`]) when the format names routines
    /// directly rather than by address (CSI); `None`: found by its entry's address.
    pub symbol: Option<u32>,
}

/// A natural loop inside a routine. Block indices are into the owning [`Image::blocks`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loop {
    /// The loop's head block: the only way in, target of every back edge.
    pub head: u32,
    /// Blocks with a branch back to the head.
    pub back_edge_sources: Vec<u32>,
    /// Every block of the loop: head, back-edge sources and inner loops' blocks.
    pub nodes: Vec<u32>,
    /// Head block of the enclosing loop, `None` for an outermost loop.
    pub parent: Option<u32>,
}

/// A reference to a block: indices of the image in its process and of the block in the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockRef {
    /// Index into [`Process::images`].
    pub image: u32,
    /// Index into that image's [`Image::blocks`].
    pub block: u32,
}

/// A reference to a symbol: indices of the image in its process and of the symbol in the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymbolRef {
    /// Index into [`Process::images`].
    pub image: u32,
    /// Index into that image's [`Image::symbols`].
    pub symbol: u32,
}

/// One end of an edge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeRef {
    /// The DCFG `START` special node: source of the `ENTRY` edge.
    Start,
    /// The DCFG `END` special node: target of the `EXIT` edge.
    End,
    /// The DCFG `UNKNOWN` special node: a construction error in the producer.
    #[default]
    Unknown,
    /// A basic block of one of the process's images.
    Block(BlockRef),
    /// A whole function, for formats that know calls between functions but not blocks
    /// (a Callgrind profile without instruction positions).
    Symbol(SymbolRef),
}

/// A control-flow transfer with its execution counts.
///
/// Kept small (64 bytes): a DCFG has millions of edges, so what only function-level formats
/// state (inclusive costs, source positions) lives in [`Edge::details`], allocated only for the
/// edges that have it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Edge {
    /// The format's edge id (DCFG `EDGE_ID`; what a DCFG-trace refers to).
    pub id: u64,
    /// Where control comes from.
    pub source: NodeRef,
    /// Where control goes to.
    pub target: NodeRef,
    /// What kind of transfer it is (fall-through, branch, call, return, ...).
    pub kind: EdgeKind,
    /// Traversals per thread, thread 0 first.
    pub counts: Counts,
    /// Inclusive cost and source positions, when the format states them; `None` otherwise
    /// (never `Some` of an empty record: build it with [`EdgeDetails::boxed`]).
    pub details: Option<Box<EdgeDetails>>,
}

/// What function-level formats say about an edge beyond its counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeDetails {
    /// For calls: the callee's inclusive cost per event (Callgrind `calls=` cost lines).
    /// Empty when unknown. Inline for one event (a call graph holds a record per call site).
    pub inclusive: Numbers,
    /// For edges between functions: where in the source the transfer happens.
    pub site: Option<Site>,
    /// What few edges state (a path profile's numbering, the contexts of a call); boxed, so
    /// that the details of a call graph's edges stay 64 bytes.
    pub extra: Option<Box<EdgeExtra>>,
    /// Of the edge's traversals, the times its branch was mispredicted, as branch records
    /// state it (LBR, BOLT profiles); 0 when unknown or none.
    pub mispredicts: u64,
    /// What branch records count beside the edge's traversals; boxed, as only edges rebuilt
    /// from branch records have it and the details of a call graph's edges stay 64 bytes.
    pub runs: Option<Box<RecordedRuns>>,
}

/// What few edges state beside their counts, inclusive cost and site.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeExtra {
    /// Ball-Larus path numbering stated for an intra-routine edge (CSI).
    pub path: Option<PathEdge>,
    /// For a call between blocks: its traversals and inclusive cost split by the functions the
    /// input named at its two ends, where a name differs from the function that owns the
    /// block's code. Callgrind counts a recursive call per recursion level (`fib'2` calling
    /// `fib'2` runs `fib`'s code) and a call of code shared by two names per name; the blocks
    /// belong to one function. Empty when every traversal is the owners' own; else every
    /// traversal is in one entry, and the entries add up to the edge.
    pub contexts: Vec<CallContext>,
}

/// A share of a call edge's traversals made between two functions the input named.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallContext {
    /// The calling function, an index into the symbols of the source block's image.
    pub caller: u32,
    /// The called function, an index into the symbols of the target block's image.
    pub callee: u32,
    /// Traversals per thread, thread 0 first.
    pub counts: Counts,
    /// The callee's inclusive cost per event in this context; empty when unknown.
    pub inclusive: Numbers,
}

/// Runs that branch records count beside an edge's traversals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordedRuns {
    /// For a fall-through rebuilt from branch records: of its traversals, those the records
    /// do not state (0: all stated). Its count is the executions of the source block that
    /// did not branch; branch records see only the runs between two recorded branches (not
    /// the run after the newest record of a stack, nor the one before the oldest), so they
    /// may state fewer. perf2bolt writes the stated ones ([`Edge::stated`]).
    pub unstated: u64,
    /// For a call bypass rebuilt from branch records: the runs the records state from the
    /// call on at its return site, as perf2bolt counts them. A trace that starts at a block
    /// boundary just after a call, entered from another function (the callee's return), is
    /// to BOLT a fall-through from the call's block, whose calls do not end it. The bypass's
    /// count stays 0 (the returns carry the flow); only the fdata writer writes this.
    pub over_call: u64,
}

impl EdgeDetails {
    /// [`RecordedRuns::unstated`], 0 when the records said nothing.
    pub fn unstated(&self) -> u64 {
        self.runs.as_ref().map_or(0, |r| r.unstated)
    }

    /// [`RecordedRuns::over_call`], 0 when the records said nothing.
    pub fn over_call(&self) -> u64 {
        self.runs.as_ref().map_or(0, |r| r.over_call)
    }

    /// The runs branch records count beside the edge's traversals, made when missing.
    pub fn runs_mut(&mut self) -> &mut RecordedRuns {
        self.runs.get_or_insert_with(Box::default)
    }

    /// The boxed record for [`Edge::details`], or `None` when it would say nothing.
    pub fn boxed(inclusive: Vec<u64>, site: Option<Site>) -> Option<Box<EdgeDetails>> {
        (!inclusive.is_empty() || site.is_some()).then(|| {
            Box::new(EdgeDetails { inclusive: Numbers::from(inclusive), site, ..EdgeDetails::default() })
        })
    }

    /// The boxed record of an edge whose only stated detail is its path numbering.
    pub fn path(path: PathEdge) -> Option<Box<EdgeDetails>> {
        let mut details = EdgeDetails::default();
        details.extra_mut().path = Some(path);
        Some(Box::new(details))
    }

    /// [`EdgeExtra`], made when missing.
    pub fn extra_mut(&mut self) -> &mut EdgeExtra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// [`EdgeExtra::contexts`], empty when none is stated.
    pub fn contexts(&self) -> &[CallContext] {
        self.extra.as_ref().map_or(&[], |x| &x.contexts)
    }

    /// The boxed record of an edge whose only stated detail is its mispredictions (none when
    /// `mispredicts` is 0).
    pub fn mispredicted(mispredicts: u64) -> Option<Box<EdgeDetails>> {
        (mispredicts > 0).then(|| Box::new(EdgeDetails { mispredicts, ..EdgeDetails::default() }))
    }
}

impl Edge {
    /// Traversals over all threads.
    pub fn total(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }

    /// For calls: the callee's inclusive cost per event, as the input stated it; empty when unknown.
    pub fn inclusive(&self) -> &[u64] {
        self.details.as_ref().map_or(&[], |d| &d.inclusive)
    }

    /// Where in the source the transfer happens, when the input stated it.
    pub fn site(&self) -> Option<&Site> {
        self.details.as_ref().and_then(|d| d.site.as_ref())
    }

    /// Ball-Larus numbering stated for the edge, when the input gave it.
    pub fn path(&self) -> Option<&PathEdge> {
        self.details.as_ref().and_then(|d| d.extra.as_ref()).and_then(|x| x.path.as_ref())
    }

    /// For a call between blocks: its traversals by the functions the input named at its
    /// ends ([`EdgeExtra::contexts`]); empty when they are the blocks' owners.
    pub fn contexts(&self) -> &[CallContext] {
        self.details.as_ref().map_or(&[], |d| d.contexts())
    }

    /// Times the edge's branch was mispredicted, as the input stated it (0: unknown or none).
    pub fn mispredicts(&self) -> u64 {
        self.details.as_ref().map_or(0, |d| d.mispredicts)
    }

    /// Traversals as the input stated them: all of them, less those a rebuild from branch
    /// records inferred ([`RecordedRuns::unstated`]).
    pub fn stated(&self) -> u64 {
        self.total().saturating_sub(self.details.as_ref().map_or(0, |d| d.unstated()))
    }

    /// Replaces the inclusive cost (empty: unknown).
    pub fn set_inclusive(&mut self, inclusive: Vec<u64>) {
        let (site, extra, mispredicts, runs) = match self.details.take() {
            Some(d) => (d.site, d.extra, d.mispredicts, d.runs),
            None => (None, None, 0, None),
        };
        self.details = EdgeDetails::boxed(inclusive, site);
        if extra.is_some() {
            self.details.get_or_insert_with(Box::default).extra = extra;
        }
        if runs.is_some() {
            self.details.get_or_insert_with(Box::default).runs = runs;
        }
        if mispredicts > 0 {
            match &mut self.details {
                Some(d) => d.mispredicts = mispredicts,
                None => self.details = EdgeDetails::mispredicted(mispredicts),
            }
        }
    }
}

/// Source position of an edge's source and target, for function-level formats: each of the
/// two offsets and two lines is known or not.
///
/// Kept in 24 bytes, and `Option<Site>` too (a Callgrind call graph holds one per call site): an
/// unknown offset is stored as `u64::MAX`, a line as its successor with `u32::MAX` for unknown
/// (never 0, which leaves `Option` its niche). Offsets past [`Site::MAX_OFFSET`] and lines past
/// [`Site::MAX_LINE`] do not fit: readers reject them. Read it through its accessors, which
/// return `Option`s.
#[derive(Clone, PartialEq, Eq)]
pub struct Site {
    offsets: [u64; 2],
    lines: [NonZeroU32; 2],
}

impl Default for Site {
    fn default() -> Self {
        Site { offsets: [NO_OFFSET; 2], lines: [NO_LINE; 2] }
    }
}

const NO_OFFSET: u64 = u64::MAX;
const NO_LINE: NonZeroU32 = NonZeroU32::MAX;

impl Site {
    /// The largest offset a site holds: readers reject larger ones.
    pub const MAX_OFFSET: u64 = NO_OFFSET - 1;
    /// The largest line a site holds: readers reject larger ones.
    pub const MAX_LINE: u32 = u32::MAX - 2;

    /// A site from its source offset and line and its target offset and line. Offsets past
    /// [`Site::MAX_OFFSET`] and lines past [`Site::MAX_LINE`] are not representable: whoever
    /// reads them from an input rejects them first (a line past it is taken as unknown).
    pub fn new(
        source_offset: Option<u64>,
        source_line: Option<u32>,
        target_offset: Option<u64>,
        target_line: Option<u32>,
    ) -> Site {
        let offset = |o: Option<u64>| {
            debug_assert!(o.is_none_or(|o| o <= Site::MAX_OFFSET), "site offset {o:?} out of range");
            o.unwrap_or(NO_OFFSET)
        };
        Site {
            offsets: [offset(source_offset), offset(target_offset)],
            lines: [line(source_line), line(target_line)],
        }
    }

    /// A site with only a source line.
    pub fn at_line(line: u32) -> Site {
        Site::new(None, Some(line), None, None)
    }

    /// Offset of the transfer's source instruction, relative to its image's load address, when known.
    pub fn source_offset(&self) -> Option<u64> {
        (self.offsets[0] != NO_OFFSET).then_some(self.offsets[0])
    }
    /// Offset of the transfer's target instruction, relative to its image's load address, when known.
    pub fn target_offset(&self) -> Option<u64> {
        (self.offsets[1] != NO_OFFSET).then_some(self.offsets[1])
    }
    /// Source line the transfer happens at (Callgrind's call line), when known.
    pub fn source_line(&self) -> Option<u32> {
        (self.lines[0] != NO_LINE).then(|| self.lines[0].get() - 1)
    }
    /// Source line the transfer lands on (for a call, in the callee), when known.
    pub fn target_line(&self) -> Option<u32> {
        (self.lines[1] != NO_LINE).then(|| self.lines[1].get() - 1)
    }

    /// Sets the source line (`None`: unknown; a line past [`Site::MAX_LINE`] is unknown too).
    pub fn set_source_line(&mut self, line: Option<u32>) {
        self.lines[0] = self::line(line);
    }
    /// Sets the target line (`None`: unknown; a line past [`Site::MAX_LINE`] is unknown too).
    pub fn set_target_line(&mut self, line: Option<u32>) {
        self.lines[1] = self::line(line);
    }

    /// The same source position with no target position.
    pub fn without_target(&self) -> Site {
        Site { offsets: [self.offsets[0], NO_OFFSET], lines: [self.lines[0], NO_LINE] }
    }
}

/// A site's stored line: its successor, `NO_LINE` when unknown or past [`Site::MAX_LINE`].
fn line(l: Option<u32>) -> NonZeroU32 {
    l.filter(|&l| l <= Site::MAX_LINE).and_then(|l| NonZeroU32::new(l + 1)).unwrap_or(NO_LINE)
}

impl fmt::Debug for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Site")
            .field("source_offset", &self.source_offset())
            .field("source_line", &self.source_line())
            .field("target_offset", &self.target_offset())
            .field("target_line", &self.target_line())
            .finish()
    }
}

/// Values per event at a place in an image: a Callgrind cost line, a DCPI sample count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    /// The function the cost belongs to, when the format says (index into [`Image::symbols`]).
    pub symbol: Option<u32>,
    /// Instruction address relative to the image's load address, when known.
    pub offset: Option<u64>,
    /// Source file of the code the cost belongs to (Callgrind `fl=`/`fi=`/`fe=`), when known.
    pub file: Option<FileId>,
    /// Source line of the code the cost belongs to, when known.
    pub line: Option<u32>,
    /// One value per [`Profile::events`] entry (missing trailing values are 0).
    pub values: Values,
}

impl Cost {
    /// The value for one event (0 when absent).
    pub fn value(&self, event: EventId) -> u64 {
        self.values.get(event).copied().unwrap_or(0)
    }
}

impl Profile {
    /// Index of the event called `name`, if any.
    pub fn event_index(&self, name: &str) -> Option<EventId> {
        self.events.iter().position(|e| e.name == name)
    }

    /// Where frame `f`'s function is defined, when known.
    pub fn frame_source(&self, f: FrameId) -> Option<&FrameSource> {
        self.frame_sources.get(f as usize)
    }

    /// The file name behind an id.
    pub fn file_name(&self, id: FileId) -> &str {
        self.files.get(id)
    }

    /// The image's file name, or `"image<ID>"` when it has none.
    pub fn image_name(&self, image: &Image) -> String {
        match image.file {
            Some(f) => self.files.get(f).to_string(),
            None => format!("image{}", image.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading a large DCFG is bounded by memory traffic: an edge must stay this small.
    #[test]
    fn edges_stay_small() {
        assert!(std::mem::size_of::<Edge>() <= 64, "{}", std::mem::size_of::<Edge>());
        // Boxed, and only on edges that state more than their counts.
        assert!(std::mem::size_of::<EdgeDetails>() <= 64, "{}", std::mem::size_of::<EdgeDetails>());
    }

    /// A Valgrind profile of a large program rebuilds to hundreds of thousands of blocks, each
    /// with a source line.
    #[test]
    fn blocks_and_source_lines_stay_small() {
        assert_eq!((std::mem::size_of::<Block>(), std::mem::size_of::<SourceLine>()), (48, 32));
    }

    /// A million symbolized addresses hold hundreds of thousands of inline frames.
    #[test]
    fn inline_frames_take_16_bytes_and_keep_what_they_know() {
        assert_eq!(std::mem::size_of::<InlineFrame>(), 16);
        let f = InlineFrame::new(3, Some(0), None);
        assert_eq!((f.name, f.file(), f.line()), (3, Some(0), None));
        let g = InlineFrame::new(0, None, Some(0));
        assert_eq!((g.file(), g.line()), (None, Some(0)));
    }

    #[test]
    fn sites_keep_each_position_known_or_not() {
        assert_eq!((std::mem::size_of::<Site>(), std::mem::size_of::<Option<Site>>()), (24, 24));
        let s = Site::new(Some(0), None, Some(Site::MAX_OFFSET), Some(Site::MAX_LINE));
        assert_eq!(
            (s.source_offset(), s.source_line(), s.target_offset(), s.target_line()),
            (Some(0), None, Some(Site::MAX_OFFSET), Some(Site::MAX_LINE))
        );
        let t = s.without_target();
        assert_eq!((t.source_offset(), t.target_offset(), t.target_line()), (Some(0), None, None));
        assert_eq!(Site::default(), Site::new(None, None, None, None));
    }

    #[test]
    fn empty_details_are_none_and_setting_inclusive_keeps_the_site() {
        assert_eq!(EdgeDetails::boxed(Vec::new(), None), None);
        let site = Site::at_line(3);
        let mut e = Edge { details: EdgeDetails::boxed(Vec::new(), Some(site.clone())), ..Edge::default() };
        e.set_inclusive(vec![5]);
        assert_eq!((e.inclusive(), e.site()), (&[5][..], Some(&site)));
        e.set_inclusive(Vec::new());
        assert_eq!((e.inclusive(), e.site()), (&[][..], Some(&site)));
        let mut bare = Edge::default();
        bare.set_inclusive(Vec::new());
        assert_eq!(bare.details, None);
    }
}
