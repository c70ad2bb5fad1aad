//! Graphviz DOT: control-flow graphs and call graphs as pictures (docs/formats/dot.md).
//!
//! Three views, all computed from the model and the shared analyses (routines, dominators,
//! loops, call graph), never from the input format:
//! - **routine** ([`routine`]): one routine's blocks with loops as nested clusters, edges styled
//!   by kind (fall-through, taken branch, back edge, bypass), calls as stubs naming the callee,
//!   entry and exit marked, heat by execution count or by an event's cost. `cfghub dot --routine`.
//! - **program** ([`program`]): every block in process > image > routine > loop clusters, the
//!   layout of Intel's `dcfg-to-dot`, with `--image`, `--process` and `--min-count` filters.
//!   What `cfghub convert -o x.dot` writes.
//! - **call graph** ([`callgraph`]): routines with self and inclusive cost, calls with counts,
//!   pruned like gprof2dot. `cfghub dot --callgraph`. A profile of stacks without blocks
//!   (perf, pprof, folded) is drawn as the call graph of its stacks, pruned like pprof, in
//!   either view.
//!
//! DOT is write-only: a picture is not a profile (layouts, colours and rounded labels do not
//! carry the model back).

mod callgraph;
pub mod common;
mod program;
pub mod render;
pub mod routine;
mod typed_names;

use std::io::Write;

use crate::format::{Format, WriteOptions};
use cfghub_model::error::{Findings, Result};
use cfghub_model::ir::Profile;
use common::DotText;

/// The DOT format (write-only).
pub static FORMAT: Format = Format {
    name: "dot",
    description:
        "Graphviz DOT control-flow graph (write only; `cfghub dot` for routine and call-graph views)",
    extensions: &[".dot", ".gv"],
    writer: Some(write_profile),
    ..Format::NONE
};

/// What to draw.
#[derive(Clone, Debug, PartialEq)]
pub enum View {
    /// Every block of the selected processes and images.
    Program,
    /// One routine named by symbol, address or node id; with `loop_node`, only the innermost
    /// loop containing that block.
    Routine {
        /// The routine: a symbol name, an address or a node id.
        spec: String,
        /// A block's node id, to draw only the innermost loop containing it; `None` draws the
        /// whole routine.
        loop_node: Option<u64>,
    },

    /// Routines and the calls between them.
    CallGraph,
}

/// Options of the DOT views.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Heat by this event's costs ([`cfghub_model::ir::Image::costs`]) instead of execution counts.
    pub event: Option<String>,
    /// Derive routines, dominators and loops from the edges even when the input gives them.
    pub recompute: bool,
    /// Program view: only images whose id equals, or whose path contains, one of these.
    pub images: Vec<String>,
    /// Only these process ids (all when empty).
    pub processes: Vec<u64>,
    /// Program view: leave out blocks and edges executed fewer times.
    pub min_count: u64,
    /// Call graph: leave out routines whose inclusive cost is below this fraction of the total.
    pub node_fraction: f64,
    /// Call graph: leave out calls whose inclusive cost is below this fraction of the total.
    pub edge_fraction: f64,
    /// Routine view: Ball-Larus increments on edges (stated by CSI input, else computed).
    pub increments: bool,
    /// Program view: at most this many blocks drawn one by one; the largest routines beyond it
    /// are drawn as one node each (0: every block).
    pub max_blocks: usize,
}

/// The blocks the program view draws one by one unless told otherwise: Graphviz lays out a few
/// hundred blocks in nested clusters in seconds, a few thousand in many minutes.
pub const MAX_BLOCKS: usize = 200;

impl Default for Options {
    fn default() -> Self {
        Options {
            event: None,
            recompute: false,
            images: Vec::new(),
            processes: Vec::new(),
            min_count: 0,
            node_fraction: 0.005,
            edge_fraction: 0.001,
            increments: false,
            max_blocks: MAX_BLOCKS,
        }
    }
}

/// The DOT text of a view.
pub fn to_string(
    profile: &Profile,
    view: &View,
    options: &Options,
    findings: &mut Findings,
) -> Result<String> {
    let mut out = DotText::whole();
    write_view(profile, view, options, &mut out, findings)?;
    out.finish().map_err(|e| cfghub_model::error::Error::io("output", e))
}

/// Writes the DOT text of a view to `sink` as it is made.
pub(crate) fn write_to(
    profile: &Profile,
    view: &View,
    options: &Options,
    sink: &mut dyn Write,
    findings: &mut Findings,
) -> Result<()> {
    let mut out = DotText::to(sink);
    write_view(profile, view, options, &mut out, findings)?;
    out.finish().map(drop).map_err(|e| cfghub_model::error::Error::io("output", e))
}

fn write_view(
    profile: &Profile,
    view: &View,
    options: &Options,
    out: &mut DotText<'_>,
    findings: &mut Findings,
) -> Result<()> {
    // A profile of stacks alone has no control flow: its picture is the call graph of its
    // stacks, as `go tool pprof -dot` draws one.
    let stacks_alone = profile.processes.iter().all(|p| p.images.iter().all(|i| i.blocks.is_empty()))
        && profile.processes.iter().any(|p| !p.stacks.is_empty());
    match view {
        View::Program if stacks_alone => callgraph::write(profile, options, out, findings),
        View::Program => program::write(profile, options, out, findings),
        View::Routine { spec, loop_node } => {
            routine::write(profile, spec, *loop_node, options, out, findings)
        }
        View::CallGraph => callgraph::write(profile, options, out, findings),
    }
}

/// The whole-program view.
fn write_profile(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let opts = Options { event: options.event.clone(), ..Options::default() };
    write_to(profile, &View::Program, &opts, out, findings)
}
