//! What path-tracing and coverage instrumentation states about code whose addresses are not
//! known: source lines per block, Ball-Larus numbers on edges, and coverage sites.
//!
//! CSI (csi-cc) describes each instrumented function by its control-flow graph with source
//! lines but without a single address, so these facts cannot hang off address ranges the way
//! [`crate::ir::SourceLine`] and [`crate::ir::Cost`] do. They are kept beside the blocks and
//! edges they describe instead.

/// One item of a block's source-line list, in the order the format lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LineItem {
    /// The source line of one instruction.
    Line(u32),
    /// The point where the block completes an acyclic path and records its number (CSI `-1`).
    PathEnd,
}

/// Source lines of a block of an image without addresses, one per instruction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockLines {
    /// The block's id as the format numbers it, when that differs from [`crate::ir::Block::id`]
    /// (CSI ids are unique within a function only; the model's ids are unique in the process).
    pub local_id: Option<u64>,
    /// Lines and path-end markers in order; empty when the block has no line information
    /// (CSI `NULL`, or an `EXIT` block).
    pub items: Vec<LineItem>,
}

impl BlockLines {
    /// The source lines alone, path-end markers left out.
    pub fn lines(&self) -> impl Iterator<Item = u32> + '_ {
        self.items.iter().filter_map(|i| match i {
            LineItem::Line(l) => Some(*l),
            LineItem::PathEnd => None,
        })
    }

    /// Whether the block records a completed path.
    pub fn ends_path(&self) -> bool {
        self.items.contains(&LineItem::PathEnd)
    }

    /// Smallest and largest line, when the block has any.
    pub fn line_range(&self) -> Option<(u32, u32)> {
        let mut it = self.lines();
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), l| (lo.min(l), hi.max(l))))
    }
}

/// Ball-Larus path numbering stated on an intra-routine edge (CSI `src->dst|increment$weight`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PathEdge {
    /// What the running path sum adds when the edge is taken. For a back edge: the value the
    /// sum restarts from (the increment of the phony edge from the entry to the edge's target).
    pub increment: i64,
    /// The edge's Ball-Larus weight, from which complete path numbers are decoded. For a back
    /// edge: the weight of the phony edge from the entry to its target.
    pub weight: i64,
    /// The edge is cut from the acyclic graph (CSI `~>`): a loop's back edge, or an edge cut to
    /// keep path counts small. The path ends at its source and a new one starts at its target.
    pub back: bool,
}

/// What a coverage array records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoverageKind {
    /// Whether the function ran at all (CSI `.debug_FC`).
    Function,
    /// Which basic blocks ran (CSI `.debug_BBC`).
    Block,
    /// Which call sites ran (CSI `.debug_CC`).
    Call,
}

/// One instrumented function's coverage array and the sites it records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// Whether the array records the function, its blocks or its call sites.
    pub kind: CoverageKind,
    /// The function, as an index into [`crate::ir::Image::symbols`].
    pub symbol: u32,
    /// The name of the array in the instrumented program (`__BBC_arr_...`).
    pub array: String,
    /// The sites the array records, those the optimiser removed (negative `index`) included.
    pub sites: Vec<CoverageSite>,
}

/// One slot of a coverage array.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoverageSite {
    /// Slot in the array; negative for a site the optimiser removed (it has no slot).
    pub index: i64,
    /// The site's label (`BBC3`, `CC0`); empty for a removed site.
    pub label: String,
    /// Source lines of the site's instructions (a block's lines, a call's single line); empty
    /// when the format says it has none (`NULL`).
    pub lines: Vec<u32>,
    /// For call sites: the callee's name, `None` for an indirect call (CSI `?`).
    pub callee: Option<String>,
}
