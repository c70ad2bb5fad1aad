//! A DCFG-trace as the edge sequences of its paired DCFG: runs any
//! [`SequenceJob`](cfghub_analysis::sequence::SequenceJob) (replay, the timeline) over a trace,
//! with the chunks decoded in parallel by [`decode::stream`] and every edge given as an index
//! into the paired DCFG process's edges.

use std::io::BufRead;

use super::decode::{self, decode_chunk, surplus_message, Chunk, Job, TraceProcess};
use cfghub_analysis::sequence::{ChunkEdges, SequenceChunk, SequenceJob, SequenceProcess};
use cfghub_model::error::{Error, Result};
use cfghub_model::ir::Profile;

/// Runs `job` over the trace read from `input`, whose edges are those of `paired`; refuses a
/// trace that declares more than `max_edges` edges (default [`decode::DEFAULT_MAX_EDGES`]).
pub fn run<J: SequenceJob>(
    input: &mut dyn BufRead,
    paired: &Profile,
    job: J,
    max_edges: Option<u64>,
) -> Result<J> {
    Ok(decode::stream_versioned(input, Some(paired), Paired(job), max_edges)?.0 .0)
}

/// A sequence job seen as a trace job.
struct Paired<J>(J);

/// One chunk of a paired process, its edges as DCFG edge indices.
struct Edges<'a> {
    process: &'a TraceProcess,
    chunk: &'a Chunk,
}

impl ChunkEdges for Edges<'_> {
    fn for_each_edge(&self, f: &mut dyn FnMut(u32)) -> Result<Option<String>> {
        // Every state of a paired chunk has a DCFG edge: `decode_chunk` fails on the first
        // that has none, before `f` sees it.
        let Some(pairing) = &self.process.pairing else { return Err(unpaired()) };
        let surplus = decode_chunk(self.process, self.chunk, |state| f(pairing.edge[state as usize]))?;
        Ok(surplus.map(|chars| surplus_message(self.process, self.chunk, chars)))
    }
}

fn unpaired() -> Error {
    Error::usage("following a trace's edges needs its paired DCFG")
}

fn chunk_of(p: &TraceProcess, c: &Chunk) -> SequenceChunk {
    let first_edge = match (&p.pairing, c.edge_count) {
        (Some(pairing), 1..) => pairing.edge.get(c.first_state as usize).copied().filter(|&e| e != u32::MAX),
        _ => None,
    };
    SequenceChunk {
        thread: c.thread,
        preceding_instr_count: c.preceding_instr_count,
        instr_count: c.instr_count,
        edge_count: c.edge_count,
        first_edge,
    }
}

impl<J: SequenceJob> Job for Paired<J> {
    type Local = J::Local;
    type Part = J::Part;

    fn begin_process(&mut self, p: &TraceProcess) -> Result<()> {
        let process = p.pairing.as_ref().map(|x| x.process).ok_or_else(unpaired)?;
        self.0.begin_process(&SequenceProcess { pid: p.pid, process })
    }

    fn local(&self, _p: &TraceProcess) -> J::Local {
        self.0.local()
    }

    fn decode(&self, p: &TraceProcess, c: &Chunk, local: &mut J::Local) -> Result<J::Part> {
        self.0.decode(&chunk_of(p, c), &Edges { process: p, chunk: c }, local)
    }

    fn merge(&mut self, p: &TraceProcess, c: &Chunk, part: J::Part) -> Result<()> {
        self.0.merge(&chunk_of(p, c), &Edges { process: p, chunk: c }, part)
    }

    fn end_process(&mut self, _p: &TraceProcess, locals: Vec<J::Local>) -> Result<()> {
        self.0.end_process(locals)
    }
}
