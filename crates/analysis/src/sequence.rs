//! Edge sequences: the order in which each thread of a process traversed the edges of a
//! profile, as a trace format records it (a DCFG-trace gives it in temporal chunks per
//! thread).
//!
//! A trace reader provides the sequences; analyses that follow them edge by edge
//! ([`crate::replay`]: exact stacks, inclusive costs, the timeline) consume them
//! through [`SequenceJob`], so that they know the profile but not the trace format. Chunks may
//! be decoded on many threads at once: [`SequenceJob::decode`] sees one chunk at a time in any
//! order, [`SequenceJob::merge`] then sees every chunk in the order of the trace.

use cfghub_model::error::Result;

/// A process of the trace, paired with a process of the profile.
#[derive(Clone, Copy, Debug)]
pub struct SequenceProcess {
    /// The operating system's process id.
    pub pid: u64,
    /// Index of the paired process in `Profile::processes`.
    pub process: usize,
}

/// A temporal chunk of one thread's edge sequence.
#[derive(Clone, Copy, Debug)]
pub struct SequenceChunk {
    /// The thread whose sequence the chunk continues, numbered from 0 as in the profile's
    /// per-thread counts.
    pub thread: u64,
    /// Instructions the thread executed before the chunk's first edge.
    pub preceding_instr_count: u64,
    /// Instructions of the chunk: the source blocks of its edges.
    pub instr_count: u64,
    /// Edges in the chunk.
    pub edge_count: u64,
    /// The chunk's first edge (index into the paired process's edges), when it has one that
    /// the profile knows.
    pub first_edge: Option<u32>,
}

/// The edges of one chunk, in order.
pub trait ChunkEdges {
    /// Calls `f` with each edge of the chunk in order (an index into the paired process's
    /// edges). Fails where the trace is damaged or disagrees with the profile. Returns a
    /// finding, worded by the trace format, when the chunk holds more than its edges (data a
    /// reader of the sequence cannot place), for the job to report as a warning.
    fn for_each_edge(&self, f: &mut dyn FnMut(u32)) -> Result<Option<String>>;
}

/// Work done over the edge sequences of a trace, process after process.
pub trait SequenceJob: Sync {
    /// Per-worker accumulator for results that do not depend on order (counts).
    type Local: Send;
    /// Per-chunk result that must be combined in trace order.
    type Part: Send;
    /// Starts the work on `process`, before any of its chunks.
    fn begin_process(&mut self, process: &SequenceProcess) -> Result<()>;
    /// A fresh accumulator for one worker.
    fn local(&self) -> Self::Local;
    /// Runs on any worker, for chunks in any order.
    fn decode(
        &self,
        chunk: &SequenceChunk,
        edges: &dyn ChunkEdges,
        local: &mut Self::Local,
    ) -> Result<Self::Part>;
    /// Runs for every chunk in trace order, with what `decode` returned for it.
    fn merge(&mut self, chunk: &SequenceChunk, edges: &dyn ChunkEdges, part: Self::Part) -> Result<()>;
    /// Ends the work on the process, after every chunk was merged, with every worker's accumulator.
    fn end_process(&mut self, locals: Vec<Self::Local>) -> Result<()>;
}
