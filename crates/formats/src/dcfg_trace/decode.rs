//! Streaming DCFG-trace decoder.
//!
//! The JSON is parsed typed, with serde visitors, in one pass: the top-level object
//! (`MAJOR_VERSION`, `MINOR_VERSION`, `PROCESSES`), then per process row its
//! `STRING_DICTIONARY` and `TRANSITION_TABLE` (kept: they are needed to decode what follows)
//! and its `THREAD_DATA`, whose `TRACE_DATA` chunk rows are handed one by one to a [`Job`]
//! and dropped. Nothing proportional to the trace's length is ever held: chunks are compiled
//! into bit programs (repeats and dictionary references stay references), decoded by
//! [`decode_chunk`] into a callback per edge, in batches of bounded size whose chunks decode in
//! parallel on the rayon pool. Each batch's results are merged back in file order, so jobs that
//! depend on order (call-stack replay, printing edges) see chunks in execution order.
//!
//! With a paired DCFG ([`Pairing`]), every decoded edge is checked to exist in it and to start
//! where its predecessor ended (checked once per transition-table entry and reported where a
//! chunk first uses it), and each chunk's `INSTR_COUNT` is checked against the instructions of
//! the source blocks of its edges.

use std::collections::HashMap;
use std::fmt;
use std::io::BufRead;
use std::sync::Mutex;

use rayon::prelude::*;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::seq::{BitReader, BitWindow, Dictionary, Program};
use super::table::{Kind, Row, Table, FAST};
use super::{CHUNK_HEADER, PROCESS_HEADER, TABLE_HEADER, THREAD_HEADER};
use cfghub_model::error::{Error, Result};
use cfghub_model::ir::{NodeRef, Process, Profile};

/// Most bytes of compiled chunks held in one batch.
const BATCH_BYTES: usize = 32 << 20;

/// Most edges a trace may declare (the sum of its chunks' `EDGE_COUNT`) before decoding stops,
/// unless the caller raises it (`--max-edges`). A few hundred bytes of nested repeats can claim
/// 10^15 edges; decoding runs at some 2x10^8 edges per second and core (a billion edges of one
/// chunk took 4.2 s of CPU), so this default ends a run within about half a minute of one core
/// however the trace was made.
pub(crate) const DEFAULT_MAX_EDGES: u64 = 5_000_000_000;

/// What is known about the paired DCFG's edges, per state of the transition table.
#[derive(Clone, Debug, Default)]
pub struct Pairing {
    /// Index of the process in the paired profile.
    pub process: usize,
    /// Index into the DCFG process's edges of each state's edge (`u32::MAX`: absent).
    pub edge: Vec<u32>,
    /// Instructions of each state's source node (0 for special nodes and absent edges).
    pub instrs: Vec<u64>,
    /// Edge index by edge id, for states added later.
    by_id: HashMap<u64, u32>,
    sources: Vec<NodeRef>,
    targets: Vec<NodeRef>,
    weights: Vec<u64>,
}

impl Pairing {
    fn new(profile_process: usize, process: &Process) -> Pairing {
        let mut by_id = HashMap::with_capacity(process.edges.len());
        let mut weights = Vec::with_capacity(process.edges.len());
        for (i, e) in process.edges.iter().enumerate() {
            by_id.insert(e.id, i as u32);
            weights.push(match e.source {
                NodeRef::Block(b) => u64::from(process.block(b).num_instrs),
                _ => 0,
            });
        }
        Pairing {
            process: profile_process,
            by_id,
            sources: process.edges.iter().map(|e| e.source).collect(),
            targets: process.edges.iter().map(|e| e.target).collect(),
            weights,
            ..Pairing::default()
        }
    }

    fn add_state(&mut self, id: u64) -> bool {
        match self.by_id.get(&id) {
            Some(&i) => {
                self.edge.push(i);
                self.instrs.push(self.weights[i as usize]);
                true
            }
            None => {
                self.edge.push(u32::MAX);
                self.instrs.push(0);
                false
            }
        }
    }
}

/// One process of a trace: its dictionary and transition table, compiled.
#[derive(Debug)]
pub struct TraceProcess {
    /// The row's `PROCESS_ID`.
    pub pid: u64,
    /// Row of the process in `PROCESSES` (1-based, the header being row 0).
    pub row: usize,
    /// The process's `STRING_DICTIONARY`, which chunk sequences reference.
    pub dict: Dictionary,
    /// The process's `TRANSITION_TABLE` as prefix codes, with the states of every edge id seen.
    pub table: Table,
    /// What the paired DCFG says of each state's edge; `None` when reading a trace alone.
    pub pairing: Option<Pairing>,
}

impl TraceProcess {
    /// Compiles a process from its parts; with a paired profile, checks every transition.
    pub fn new(
        pid: u64,
        row: usize,
        dict: Dictionary,
        table: Table,
        paired: Option<&Profile>,
    ) -> Result<TraceProcess> {
        let mut p = TraceProcess { pid, row, dict, table, pairing: None };
        if let Some(profile) = paired {
            let Some(index) = profile.processes.iter().position(|q| q.pid == pid) else {
                let pids: Vec<String> = profile.processes.iter().map(|q| q.pid.to_string()).collect();
                return Err(Error::input(format!(
                    "PROCESSES row {row}: PROCESS_ID {pid} is not a process of the paired DCFG (it has {})",
                    if pids.is_empty() { "none".to_string() } else { pids.join(", ") }
                )));
            };
            let mut pairing = Pairing::new(index, &profile.processes[index]);
            for s in 0..p.table.ids.len() {
                let id = p.table.ids[s];
                if !pairing.add_state(id) {
                    p.table.bad_state[s] = true;
                }
            }
            // A transition is bad when an edge does not start where the one before it ends.
            let edge = pairing.edge.clone();
            let (src, dst) = (&pairing.sources, &pairing.targets);
            let follows = |a: u32, b: u32| {
                let (ea, eb) = (edge[a as usize], edge[b as usize]);
                ea != u32::MAX && eb != u32::MAX && dst[ea as usize] == src[eb as usize]
            };
            let mut mark = |s: u32, e: &mut super::table::Entry, seqs: &[u32]| {
                let next: &[u32] = if e.count == 1 {
                    std::slice::from_ref(&e.next)
                } else {
                    &seqs[e.next as usize..][..e.count as usize]
                };
                let mut prev = s;
                for &n in next {
                    if !follows(prev, n) {
                        e.bad = true;
                    }
                    prev = n;
                }
            };
            p.table.for_each_entry_mut(&mut mark);
            p.pairing = Some(pairing);
        }
        p.table.build_fast();
        Ok(p)
    }

    /// The state of a chunk's first edge, adding it (as a state without transitions) when the
    /// table does not mention it.
    pub(crate) fn first_state(&mut self, id: u64) -> u32 {
        if let Some(&s) = self.table.states.get(&id) {
            return s;
        }
        let s = self.table.ids.len() as u32;
        self.table.ids.push(id);
        self.table.states.insert(id, s);
        self.table.kinds.push(Kind::None);
        self.table.fast.push(0);
        let known = match &mut self.pairing {
            Some(p) => p.add_state(id),
            None => true,
        };
        self.table.bad_state.push(!known);
        s
    }

    /// Number of states (distinct edge ids seen so far).
    pub fn states(&self) -> usize {
        self.table.ids.len()
    }
}

/// One `TRACE_DATA` row: a temporal chunk of one thread.
#[derive(Debug)]
pub struct Chunk {
    /// `THREAD_ID` of the thread the chunk belongs to.
    pub thread: u64,
    /// Index of the chunk in its thread's TRACE_DATA (0-based).
    pub index: usize,
    /// `PRECEDING_INSTR_COUNT`: instructions the thread executed before this chunk.
    pub preceding_instr_count: u64,
    /// `INSTR_COUNT`: instructions executed within the chunk.
    pub instr_count: u64,
    /// `EDGE_COUNT`: edges the chunk traverses, its first edge included.
    pub edge_count: u64,
    /// `FIRST_EDGE_ID` (0 when the row omits it, which only an empty chunk may).
    pub first_edge: u64,
    /// State of `first_edge` (meaningless when `edge_count` is 0).
    pub first_state: u32,
    /// `EDGE_ID_SEQUENCE` compiled into a bit program, from which the edges after the first
    /// are decoded.
    pub code: Program,
}

impl Chunk {
    /// Where the chunk is, for messages.
    pub fn place(&self, p: &TraceProcess) -> String {
        format!(
            "PROCESSES row {} (PROCESS_ID {}).THREAD_DATA thread {}.TRACE_DATA chunk {} (row {})",
            p.row,
            p.pid,
            self.thread,
            self.index,
            self.index + 1
        )
    }

    /// An input error at edge `edge` and bit `bit` of this chunk.
    pub(crate) fn error_at(
        &self,
        p: &TraceProcess,
        edge: u64,
        bit: u64,
        message: impl fmt::Display,
    ) -> Error {
        Error::input(message.to_string())
            .at_path(format!("{}: edge {edge}, bit {bit} of EDGE_ID_SEQUENCE", self.place(p)))
    }
}

/// Decodes the edges of one chunk in order, calling `f` with the state of each (use
/// `p.table.ids[state]` for its edge id). Stops after `EDGE_COUNT` edges: unused bits and
/// repeats are never looked at. With a pairing, checks that every edge exists in the DCFG and
/// follows its predecessor, and that the chunk's `INSTR_COUNT` is right.
///
/// The result is the number of whole characters the sequence holds beyond those its
/// `EDGE_COUNT` edges need (the padding bits of the last character aside), when there are any:
/// a finding for the caller to report (see [`surplus_message`]).
pub(crate) fn decode_chunk(p: &TraceProcess, c: &Chunk, mut f: impl FnMut(u32)) -> Result<Option<u64>> {
    let consumed = match &p.pairing {
        None => run(p, c, &mut f)?,
        Some(pairing) => {
            let mut instrs = 0u64;
            let consumed = run(p, c, &mut |s| {
                instrs = instrs.wrapping_add(pairing.instrs[s as usize]);
                f(s)
            })?;
            if instrs != c.instr_count {
                return Err(Error::input(format!(
                    "INSTR_COUNT is {} but the source blocks of the chunk's {} edges hold {} instructions in the paired DCFG",
                    c.instr_count, c.edge_count, instrs
                ))
                .at_path(c.place(p)));
            }
            consumed
        }
    };
    // Six bits a character: those the edges used round up to whole characters.
    let surplus = (c.code.bits / 6).saturating_sub(consumed.div_ceil(6));
    Ok((surplus > 0).then_some(surplus))
}

/// The finding for a chunk whose sequence holds `chars` characters more than its edges need.
pub(crate) fn surplus_message(p: &TraceProcess, c: &Chunk, chars: u64) -> String {
    // A sequence of more than 2^64 bits is measured as 2^64 - 1.
    let at_least = if c.code.bits == u64::MAX { "at least " } else { "" };
    format!(
        "{}: EDGE_ID_SEQUENCE holds {at_least}{chars} character(s) beyond the {} edge(s) of EDGE_COUNT \
         (and the padding bits of the last character used): EDGE_COUNT or the sequence is wrong",
        c.place(p),
        c.edge_count
    )
}

/// Decodes the chunk's edges; the bits of the sequence they used.
#[inline(always)]
fn run<F: FnMut(u32)>(p: &TraceProcess, c: &Chunk, f: &mut F) -> Result<u64> {
    if c.edge_count == 0 {
        return Ok(0);
    }
    let t = &p.table;
    let mut cur = c.first_state;
    if t.bad_state[cur as usize] {
        return Err(c.error_at(
            p,
            0,
            0,
            format!("FIRST_EDGE_ID {} is not an edge of the paired DCFG", c.first_edge),
        ));
    }
    f(cur);
    let mut left = c.edge_count - 1;
    let mut w = BitWindow::new(BitReader::new(&c.code, &p.dict));
    let fast = &t.fast[..];
    let flut = &t.flut[..];
    while left > 0 {
        // Blocks of about a million edges, counted in [`DECODED`] for the progress display.
        let block_end = left.saturating_sub(1 << 20);
        let block_start = left;
        run_block(p, c, &mut w, fast, flut, &mut cur, &mut left, block_end, f)?;
        DECODED.fetch_add(block_start - left, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(w.consumed())
}

/// Edges decoded so far in this process, by every decoder (only the progress display reads it).
static DECODED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Decodes edges until `left` reaches `block_end`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn run_block<F: FnMut(u32)>(
    p: &TraceProcess,
    c: &Chunk,
    w: &mut BitWindow,
    fast: &[u64],
    flut: &[u64],
    cur_out: &mut u32,
    left_out: &mut u64,
    block_end: u64,
    f: &mut F,
) -> Result<()> {
    let (mut cur, mut left) = (*cur_out, *left_out);
    while left > block_end {
        // The common case without branches on the kind of state: one lookup of the next
        // `peek` bits (0 bits for an edge with one successor) gives a single, checked edge.
        if w.have < 32 {
            w.refill();
        }
        let st = fast[cur as usize];
        let peek = (st & 0xff) as u32;
        let idx = ((w.acc >> (63 - peek)) >> 1) as usize;
        let e = flut[(st >> 8) as usize + idx];
        let len = ((e >> 32) & 0xff) as u32;
        if e & FAST != 0 && len <= w.have {
            w.acc <<= len;
            w.have -= len;
            let next = e as u32;
            f(next);
            cur = next;
            left -= 1;
            continue;
        }
        cur = slow_step(p, c, w, cur, &mut left, f)?;
    }
    (*cur_out, *left_out) = (cur, left);
    Ok(())
}

/// One transition the fast table does not serve: long codes, several next edges, and errors.
#[inline(never)]
fn slow_step<F: FnMut(u32)>(
    p: &TraceProcess,
    c: &Chunk,
    w: &mut BitWindow,
    cur: u32,
    left: &mut u64,
    f: &mut F,
) -> Result<u32> {
    let t = &p.table;
    let pos = c.edge_count - *left;
    let e = match t.kinds[cur as usize] {
        Kind::Direct(e) => e,
        Kind::Lut { peek, base } => {
            let bits = w.peek(peek as u32);
            let e = t.lut[base as usize + bits as usize];
            if e.count == 0 || e.len as u32 > w.available() {
                return Err(no_match(p, c, w, cur, peek as u32, pos));
            }
            w.consume(e.len as u32);
            e
        }
        Kind::Trie { root } => {
            let bits = w.peek(32);
            match t.trie_match(root, bits) {
                Some(e) if e.len as u32 <= w.available() => {
                    w.consume(e.len as u32);
                    e
                }
                _ => return Err(no_match(p, c, w, cur, 32, pos)),
            }
        }
        Kind::None => {
            return Err(c.error_at(
                p,
                pos,
                w.consumed(),
                format!(
                    "edge {} has no row in TRANSITION_TABLE, so no edge can follow it, but EDGE_COUNT is {}",
                    t.ids[cur as usize], c.edge_count
                ),
            ))
        }
    };
    if e.bad {
        return Err(bad_transition(p, c, cur, &e, pos, w.consumed()));
    }
    if e.count == 1 {
        f(e.next);
        *left -= 1;
        return Ok(e.next);
    }
    let seq = t.next_states(&e);
    let n = (seq.len() as u64).min(*left) as usize;
    for &s in &seq[..n] {
        f(s);
    }
    *left -= n as u64;
    Ok(seq[n - 1])
}

#[cold]
fn no_match(p: &TraceProcess, c: &Chunk, w: &BitWindow, cur: u32, peek: u32, edge: u64) -> Error {
    let avail = w.available();
    if avail < peek {
        c.error_at(
            p,
            edge,
            w.consumed(),
            format!(
                "too few bits: the sequence ends after {} bits with {} of EDGE_COUNT {} edges decoded",
                w.consumed() + avail as u64,
                edge,
                c.edge_count
            ),
        )
    } else {
        c.error_at(
            p,
            edge,
            w.consumed(),
            format!("no TRANSITION_CODE of edge {} matches the next bits", p.table.ids[cur as usize]),
        )
    }
}

#[cold]
fn bad_transition(
    p: &TraceProcess,
    c: &Chunk,
    cur: u32,
    e: &super::table::Entry,
    edge: u64,
    bit: u64,
) -> Error {
    let ids = &p.table.ids;
    let next = p.table.next_states(e);
    for &n in next {
        if p.table.bad_state[n as usize] {
            return c.error_at(
                p,
                edge,
                bit,
                format!("edge {} is not an edge of the paired DCFG", ids[n as usize]),
            );
        }
    }
    let seq: Vec<String> = next.iter().map(|&n| ids[n as usize].to_string()).collect();
    c.error_at(
        p,
        edge,
        bit,
        format!(
            "after edge {} comes [{}], but in the paired DCFG an edge in it does not start at the node where its predecessor ends",
            ids[cur as usize],
            seq.join(", ")
        ),
    )
}

/// An iterator over the edge ids of one chunk, for callers that want to pull; it decodes
/// lazily with the same checks as [`decode_chunk`] except `INSTR_COUNT`.
pub struct ChunkEdges<'a> {
    p: &'a TraceProcess,
    c: &'a Chunk,
    w: BitWindow<'a>,
    cur: u32,
    left: u64,
    pending: &'a [u32],
    started: bool,
    failed: bool,
}

impl<'a> ChunkEdges<'a> {
    /// Starts iterating chunk `c` of process `p`, at its first edge.
    pub fn new(p: &'a TraceProcess, c: &'a Chunk) -> Self {
        ChunkEdges {
            p,
            c,
            w: BitWindow::new(BitReader::new(&c.code, &p.dict)),
            cur: c.first_state,
            left: c.edge_count,
            pending: &[],
            started: false,
            failed: false,
        }
    }

    /// The next edge's state (see [`TraceProcess::table`]), `None` after `EDGE_COUNT` edges.
    pub(crate) fn next_state(&mut self) -> Result<Option<u32>> {
        if self.failed {
            return Ok(None);
        }
        let r = self.step();
        self.failed = r.is_err();
        r
    }

    fn step(&mut self) -> Result<Option<u32>> {
        if self.left == 0 {
            return Ok(None);
        }
        let (p, c, t) = (self.p, self.c, &self.p.table);
        let pos = c.edge_count - self.left;
        if !self.started {
            self.started = true;
            if t.bad_state[self.cur as usize] {
                return Err(c.error_at(
                    p,
                    0,
                    0,
                    format!("FIRST_EDGE_ID {} is not an edge of the paired DCFG", c.first_edge),
                ));
            }
            self.left -= 1;
            return Ok(Some(self.cur));
        }
        if let Some((&s, rest)) = self.pending.split_first() {
            self.pending = rest;
            self.left -= 1;
            self.cur = s;
            return Ok(Some(s));
        }
        let e = match t.kinds[self.cur as usize] {
            Kind::Direct(e) => e,
            Kind::Lut { peek, base } => {
                let bits = self.w.peek(peek as u32);
                let e = t.lut[base as usize + bits as usize];
                if e.count == 0 || e.len as u32 > self.w.available() {
                    return Err(no_match(p, c, &self.w, self.cur, peek as u32, pos));
                }
                self.w.consume(e.len as u32);
                e
            }
            Kind::Trie { root } => {
                let bits = self.w.peek(32);
                match t.trie_match(root, bits) {
                    Some(e) if e.len as u32 <= self.w.available() => {
                        self.w.consume(e.len as u32);
                        e
                    }
                    _ => return Err(no_match(p, c, &self.w, self.cur, 32, pos)),
                }
            }
            Kind::None => {
                return Err(c.error_at(
                    p,
                    pos,
                    self.w.consumed(),
                    format!(
                    "edge {} has no row in TRANSITION_TABLE, so no edge can follow it, but EDGE_COUNT is {}",
                    t.ids[self.cur as usize], c.edge_count
                ),
                ))
            }
        };
        if e.bad {
            return Err(bad_transition(p, c, self.cur, &e, pos, self.w.consumed()));
        }
        if e.count == 1 {
            self.cur = e.next;
            self.left -= 1;
            return Ok(Some(e.next));
        }
        let seq = &t.seqs[e.next as usize..e.next as usize + e.count as usize];
        self.pending = &seq[1..];
        self.cur = seq[0];
        self.left -= 1;
        Ok(Some(seq[0]))
    }
}

impl Iterator for ChunkEdges<'_> {
    type Item = Result<u64>;
    fn next(&mut self) -> Option<Result<u64>> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(Some(s)) => Some(Ok(self.p.table.ids[s as usize])),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Work done on a stream of chunks: `decode` runs on many chunks at once (on the rayon pool,
/// with one `Local` accumulator per worker), `merge` then sees each chunk's result in file
/// order.
pub trait Job: Sync {
    /// Per-worker accumulator for order-independent results (counts).
    type Local: Send;
    /// Per-chunk result that must be combined in order.
    type Part: Send;
    /// Called once a process's dictionary and transition table are read, before its threads.
    fn begin_process(&mut self, p: &TraceProcess) -> Result<()>;
    /// A fresh accumulator for one worker, made per process.
    fn local(&self, p: &TraceProcess) -> Self::Local;
    /// Decodes one chunk, possibly in parallel with others, into its part and `local`.
    fn decode(&self, p: &TraceProcess, c: &Chunk, local: &mut Self::Local) -> Result<Self::Part>;
    /// Takes one chunk's part, sequentially and in file order.
    fn merge(&mut self, p: &TraceProcess, c: &Chunk, part: Self::Part) -> Result<()>;
    /// Called after a process's last chunk is merged, with every worker's accumulator.
    fn end_process(&mut self, p: &TraceProcess, locals: Vec<Self::Local>) -> Result<()>;
    /// Whether the job decodes edges (a job that only sums what chunks declare is not held to
    /// the edge limit).
    fn decodes_edges(&self) -> bool {
        true
    }
}

/// Runs a job over a trace read from `input`. `paired`, when given, is the DCFG the trace
/// belongs to (its edges are checked and weigh the chunks' instruction counts).
pub fn stream<J: Job>(input: &mut dyn BufRead, paired: Option<&Profile>, job: J) -> Result<J> {
    stream_versioned(input, paired, job, None).map(|(j, _)| j)
}

/// [`stream`], also returning the trace's `(MAJOR_VERSION, MINOR_VERSION)` when it states them.
/// A trace that declares more than `max_edges` edges (default [`DEFAULT_MAX_EDGES`]) is refused
/// at the chunk that passes the limit, before that chunk is decoded.
pub fn stream_versioned<J: Job>(
    input: &mut dyn BufRead,
    paired: Option<&Profile>,
    job: J,
    max_edges: Option<u64>,
) -> Result<(J, Option<(u64, u64)>)> {
    let limited = job.decodes_edges();
    let mut ctx = Ctx {
        job,
        paired,
        error: None,
        batch: Vec::new(),
        batch_bytes: 0,
        locals: Vec::new(),
        version: None,
        processes: 0,
        max_edges: if limited { max_edges.unwrap_or(DEFAULT_MAX_EDGES) } else { u64::MAX },
        declared: 0,
        _progress: EdgeProgress::new(limited, max_edges.unwrap_or(DEFAULT_MAX_EDGES)),
    };
    let mut de = serde_json::Deserializer::from_reader(input);
    let result = TopSeed(&mut ctx).deserialize(&mut de).and_then(|()| de.end());
    if let Some(e) = ctx.error.take() {
        return Err(e);
    }
    result.map_err(json_error)?;
    if ctx.processes == 0 {
        return Err(Error::input("the trace has no PROCESSES table"));
    }
    Ok((ctx.job, ctx.version))
}

fn json_error(e: serde_json::Error) -> Error {
    let line = e.line() as u64;
    let column = e.column();
    let msg = e.to_string();
    // serde_json appends " at line L column C"; say it our way.
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    if line > 0 {
        Error::input(format!("{msg} (column {column})")).at_line(line)
    } else {
        Error::input(msg)
    }
}

struct Ctx<'p, J: Job> {
    job: J,
    paired: Option<&'p Profile>,
    error: Option<Error>,
    batch: Vec<Chunk>,
    batch_bytes: usize,
    locals: Vec<Mutex<J::Local>>,
    version: Option<(u64, u64)>,
    processes: usize,
    /// Most edges the chunks may declare in all, and how many they have declared so far.
    max_edges: u64,
    declared: u64,
    /// Shown while the stream lives.
    _progress: EdgeProgress,
}

/// A count of decoded edges on standard error, shown once decoding has taken more than a
/// second, on a terminal only (and not with `-q`): a thread reads [`DECODED`] four times a
/// second, so one long chunk shows its progress too.
struct EdgeProgress {
    watcher: Option<(std::sync::Arc<std::sync::atomic::AtomicBool>, std::thread::JoinHandle<()>)>,
}

impl EdgeProgress {
    fn new(wanted: bool, limit: u64) -> EdgeProgress {
        use std::io::IsTerminal;
        use std::sync::atomic::{AtomicBool, Ordering};
        if !(wanted && cfghub_model::io::progress_enabled() && std::io::stderr().is_terminal()) {
            return EdgeProgress { watcher: None };
        }
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let handle = std::thread::spawn(move || {
            let start = DECODED.load(Ordering::Relaxed);
            let began = std::time::Instant::now();
            let bar = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::hidden());
            let style =
                indicatif::ProgressStyle::with_template("decoding: {human_pos} edges in {elapsed} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
            bar.set_style(style);
            if limit != u64::MAX {
                bar.set_message(format!("(stops at --max-edges {limit})"));
            }
            let mut shown = false;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(250));
                bar.set_position(DECODED.load(Ordering::Relaxed).saturating_sub(start));
                if !shown && began.elapsed() > std::time::Duration::from_secs(1) {
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    shown = true;
                }
            }
            bar.finish_and_clear();
        });
        EdgeProgress { watcher: Some((done, handle)) }
    }
}

impl Drop for EdgeProgress {
    fn drop(&mut self) {
        if let Some((done, handle)) = self.watcher.take() {
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = handle.join();
        }
    }
}

impl<J: Job> Ctx<'_, J> {
    /// Records our error and hands serde a placeholder that stops the parse.
    fn fail<E: de::Error>(&mut self, e: Error) -> E {
        if self.error.is_none() {
            self.error = Some(e);
        }
        E::custom("stopped")
    }

    fn flush(&mut self, p: &TraceProcess) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        let job = &self.job;
        let locals = &self.locals;
        let spare = locals.len() - 1;
        let parts: Vec<Result<J::Part>> = batch
            .par_iter()
            .map(|c| {
                let slot = rayon::current_thread_index().unwrap_or(spare).min(spare);
                let mut local = locals[slot].lock().unwrap_or_else(|e| e.into_inner());
                job.decode(p, c, &mut local)
            })
            .collect();
        for (c, part) in batch.iter().zip(parts) {
            self.job.merge(p, c, part?)?;
        }
        Ok(())
    }

    fn push(&mut self, p: &TraceProcess, c: Chunk) -> Result<()> {
        self.declared = self.declared.saturating_add(c.edge_count);
        if self.declared > self.max_edges {
            let before = self.declared - c.edge_count.min(self.declared);
            return Err(Error::input(format!(
                "the trace declares more than {} edges by this chunk (its EDGE_COUNT is {}, the chunks before it declare {before}); decoding stops here",
                self.max_edges, c.edge_count
            ))
            .at_path(c.place(p))
            .with_hint(format!(
                "a trace this long takes a while to decode (some 2x10^8 edges per second and core); to go on, raise the limit with --max-edges {}",
                self.declared.saturating_add(self.declared / 4).max(self.max_edges.saturating_mul(2))
            )));
        }
        self.batch_bytes += c.code.heap_size() + 64;
        self.batch.push(c);
        let limit = 4 * rayon::current_num_threads().max(1);
        if self.batch.len() >= limit || self.batch_bytes >= BATCH_BYTES {
            self.flush(p)?;
        }
        Ok(())
    }
}

/// An integer: a JSON number, or a string holding a C-style hex or decimal number.
struct Int(u64);

impl<'de> de::Deserialize<'de> for Int {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Int, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Int;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a non-negative integer (number or \"0x...\" string)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Int, E> {
                Ok(Int(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Int, E> {
                u64::try_from(v)
                    .map(Int)
                    .map_err(|_| E::custom(format!("{v} is negative; expected a non-negative integer")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Int, E> {
                cfghub_model::json::parse_int(v)
                    .map(Int)
                    .ok_or_else(|| E::custom(format!("\"{v}\" is not an integer")))
            }
        }
        d.deserialize_any(V)
    }
}

/// Checks a table's header row.
fn check_header<'de, A: SeqAccess<'de>>(
    seq: &mut A,
    expected: &[&str],
    what: &str,
) -> std::result::Result<Result<()>, A::Error> {
    let header: Option<Vec<String>> = seq.next_element()?;
    Ok(match header {
        Some(h) if h.iter().map(String::as_str).eq(expected.iter().copied()) => Ok(()),
        Some(h) => Err(Error::input(format!(
            "{what}: the header row is {:?}; the spec asks for {:?} in this order (needed to stream)",
            h, expected
        ))),
        None => Err(Error::input(format!("{what}: the table is empty; expected a header row {expected:?}"))),
    })
}

struct TopSeed<'a, 'p, J: Job>(&'a mut Ctx<'p, J>);

impl<'de, J: Job> DeserializeSeed<'de> for TopSeed<'_, '_, J> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, J: Job> Visitor<'de> for TopSeed<'_, '_, J> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a DCFG-trace object with MAJOR_VERSION, MINOR_VERSION and PROCESSES")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut major = None;
        let mut minor = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "MAJOR_VERSION" => major = Some(map.next_value::<Int>()?.0),
                "MINOR_VERSION" => minor = Some(map.next_value::<Int>()?.0),
                "PROCESSES" => {
                    if let (Some(a), Some(b)) = (major, minor) {
                        self.0.version = Some((a, b));
                    }
                    map.next_value_seed(ProcessesSeed(&mut *self.0))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct ProcessesSeed<'a, 'p, J: Job>(&'a mut Ctx<'p, J>);

impl<'de, J: Job> DeserializeSeed<'de> for ProcessesSeed<'_, '_, J> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, J: Job> Visitor<'de> for ProcessesSeed<'_, '_, J> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the PROCESSES table")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let ctx = self.0;
        if let Err(e) = check_header(&mut seq, &PROCESS_HEADER, "PROCESSES")? {
            return Err(ctx.fail(e));
        }
        ctx.processes += 1;
        let mut row = 1;
        while seq.next_element_seed(ProcessRowSeed { ctx: &mut *ctx, row })?.is_some() {
            row += 1;
        }
        Ok(())
    }
}

struct ProcessRowSeed<'a, 'p, J: Job> {
    ctx: &'a mut Ctx<'p, J>,
    row: usize,
}

impl<'de, J: Job> DeserializeSeed<'de> for ProcessRowSeed<'_, '_, J> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

/// A `STRING_DICTIONARY` object, in file order.
struct DictEntries(Vec<(String, String)>);

impl<'de> de::Deserialize<'de> for DictEntries {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DictEntries;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a STRING_DICTIONARY object of key: sequence strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<DictEntries, A::Error> {
                let mut v = Vec::new();
                while let Some((k, s)) = map.next_entry::<String, String>()? {
                    v.push((k, s));
                }
                Ok(DictEntries(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// A `TRANSITION_TABLE`: rows checked as they come.
struct TableRows(std::result::Result<Vec<Row>, Error>);

impl<'de> de::Deserialize<'de> for TableRows {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TableRows;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a TRANSITION_TABLE table")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<TableRows, A::Error> {
                if let Err(e) = check_header(&mut seq, &TABLE_HEADER, "TRANSITION_TABLE")? {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    return Ok(TableRows(Err(e)));
                }
                let mut rows = Vec::new();
                let mut first_error = None;
                while let Some((cur, code, next)) = seq.next_element::<(Int, String, Vec<Int>)>()? {
                    if first_error.is_some() {
                        continue;
                    }
                    match Row::parse_code(&code) {
                        Ok((c, l)) => rows.push(Row {
                            current: cur.0,
                            code: c,
                            len: l,
                            next: next.into_iter().map(|i| i.0).collect(),
                        }),
                        Err(m) => {
                            first_error =
                                Some(Error::input(format!("TRANSITION_TABLE row {}: {m}", rows.len() + 1)))
                        }
                    }
                }
                Ok(TableRows(match first_error {
                    Some(e) => Err(e),
                    None => Ok(rows),
                }))
            }
        }
        d.deserialize_seq(V)
    }
}

impl<'de, J: Job> Visitor<'de> for ProcessRowSeed<'_, '_, J> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a PROCESSES row [PROCESS_ID, STRING_DICTIONARY, TRANSITION_TABLE, THREAD_DATA]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let ctx = self.ctx;
        let row = self.row;
        let missing = |what: &str| Error::input(format!("PROCESSES row {row}: the {what} column is missing"));
        let Some(pid) = seq.next_element::<Int>()? else { return Err(ctx.fail(missing("PROCESS_ID"))) };
        let pid = pid.0;
        let place = format!("PROCESSES row {row} (PROCESS_ID {pid})");
        let Some(entries) = seq.next_element::<DictEntries>()? else {
            return Err(ctx.fail(missing("STRING_DICTIONARY")));
        };
        let dict = match Dictionary::compile(&entries.0, &format!("{place}.STRING_DICTIONARY")) {
            Ok(d) => d,
            Err(e) => return Err(ctx.fail(e)),
        };
        drop(entries);
        let Some(rows) = seq.next_element::<TableRows>()? else {
            return Err(ctx.fail(missing("TRANSITION_TABLE")));
        };
        let rows = rows.0.map_err(|e| Error::input(format!("{place}.{}", e.message)));
        let table = match rows.and_then(|rows| Table::build(&rows, &format!("{place}.TRANSITION_TABLE"))) {
            Ok(t) => t,
            Err(e) => return Err(ctx.fail(e)),
        };
        let mut process = match TraceProcess::new(pid, row, dict, table, ctx.paired) {
            Ok(p) => p,
            Err(e) => return Err(ctx.fail(e)),
        };
        if let Err(e) = ctx.job.begin_process(&process) {
            return Err(ctx.fail(e));
        }
        let n = rayon::current_num_threads() + 1;
        ctx.locals = (0..n).map(|_| Mutex::new(ctx.job.local(&process))).collect();
        if seq.next_element_seed(ThreadsSeed { ctx: &mut *ctx, process: &mut process })?.is_none() {
            return Err(ctx.fail(missing("THREAD_DATA")));
        }
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(ctx.fail(Error::input(format!("{place}: more columns than the header's four"))));
        }
        if let Err(e) = ctx.flush(&process) {
            return Err(ctx.fail(e));
        }
        let locals = std::mem::take(&mut ctx.locals)
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
            .collect();
        if let Err(e) = ctx.job.end_process(&process, locals) {
            return Err(ctx.fail(e));
        }
        Ok(())
    }
}

struct ThreadsSeed<'a, 'b, 'p, J: Job> {
    ctx: &'a mut Ctx<'p, J>,
    process: &'b mut TraceProcess,
}

impl<'de, J: Job> DeserializeSeed<'de> for ThreadsSeed<'_, '_, '_, J> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, J: Job> Visitor<'de> for ThreadsSeed<'_, '_, '_, J> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a THREAD_DATA table")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let place =
            format!("PROCESSES row {} (PROCESS_ID {}).THREAD_DATA", self.process.row, self.process.pid);
        if let Err(e) = check_header(&mut seq, &THREAD_HEADER, &place)? {
            return Err(self.ctx.fail(e));
        }
        while seq
            .next_element_seed(ThreadRowSeed { ctx: &mut *self.ctx, process: &mut *self.process })?
            .is_some()
        {}
        Ok(())
    }
}

struct ThreadRowSeed<'a, 'b, 'p, J: Job> {
    ctx: &'a mut Ctx<'p, J>,
    process: &'b mut TraceProcess,
}

impl<'de, J: Job> DeserializeSeed<'de> for ThreadRowSeed<'_, '_, '_, J> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, J: Job> Visitor<'de> for ThreadRowSeed<'_, '_, '_, J> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a THREAD_DATA row [THREAD_ID, TRACE_DATA]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let Some(thread) = seq.next_element::<Int>()? else {
            let e = Error::input(format!("PROCESSES row {}: a THREAD_DATA row is empty", self.process.row));
            return Err(self.ctx.fail(e));
        };
        let found = seq.next_element_seed(ChunksSeed {
            ctx: &mut *self.ctx,
            process: &mut *self.process,
            thread: thread.0,
        })?;
        if found.is_none() {
            let e = Error::input(format!(
                "PROCESSES row {}: THREAD_DATA thread {} has no TRACE_DATA",
                self.process.row, thread.0
            ));
            return Err(self.ctx.fail(e));
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

struct ChunksSeed<'a, 'b, 'p, J: Job> {
    ctx: &'a mut Ctx<'p, J>,
    process: &'b mut TraceProcess,
    thread: u64,
}

impl<'de, J: Job> DeserializeSeed<'de> for ChunksSeed<'_, '_, '_, J> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, J: Job> Visitor<'de> for ChunksSeed<'_, '_, '_, J> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a TRACE_DATA table")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let place = format!(
            "PROCESSES row {} (PROCESS_ID {}).THREAD_DATA thread {}.TRACE_DATA",
            self.process.row, self.process.pid, self.thread
        );
        if let Err(e) = check_header(&mut seq, &CHUNK_HEADER, &place)? {
            return Err(self.ctx.fail(e));
        }
        let mut index = 0usize;
        loop {
            let seed = ChunkRowSeed { process: &*self.process, thread: self.thread, index };
            let Some(parsed) = seq.next_element_seed(seed)? else { break };
            let mut chunk = match parsed {
                Ok(c) => c,
                Err(e) => return Err(self.ctx.fail(e)),
            };
            if chunk.edge_count > 0 {
                chunk.first_state = self.process.first_state(chunk.first_edge);
            }
            if let Err(e) = self.ctx.push(self.process, chunk) {
                return Err(self.ctx.fail(e));
            }
            index += 1;
        }
        Ok(())
    }
}

struct ChunkRowSeed<'a> {
    process: &'a TraceProcess,
    thread: u64,
    index: usize,
}

impl<'de> DeserializeSeed<'de> for ChunkRowSeed<'_> {
    type Value = Result<Chunk>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<Result<Chunk>, D::Error> {
        d.deserialize_seq(self)
    }
}

/// Compiles an `EDGE_ID_SEQUENCE` string straight from the parser's buffer.
struct SequenceSeed<'a> {
    dict: &'a Dictionary,
    what: String,
}

impl<'de> DeserializeSeed<'de> for SequenceSeed<'_> {
    type Value = Result<Program>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<Result<Program>, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for SequenceSeed<'_> {
    type Value = Result<Program>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an EDGE_ID_SEQUENCE string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Result<Program>, E> {
        Ok(Program::compile(v, self.dict, &self.what))
    }
}

impl<'de> Visitor<'de> for ChunkRowSeed<'_> {
    type Value = Result<Chunk>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a TRACE_DATA row [PRECEDING_INSTR_COUNT, INSTR_COUNT, EDGE_COUNT, FIRST_EDGE_ID, EDGE_ID_SEQUENCE]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Result<Chunk>, A::Error> {
        let mut chunk = Chunk {
            thread: self.thread,
            index: self.index,
            preceding_instr_count: 0,
            instr_count: 0,
            edge_count: 0,
            first_edge: 0,
            first_state: 0,
            code: Program::default(),
        };
        let place = chunk.place(self.process);
        let missing = |what: &str| Ok(Err(Error::input(format!("{place}: the {what} column is missing"))));
        let Some(v) = seq.next_element::<Int>()? else { return missing("PRECEDING_INSTR_COUNT") };
        chunk.preceding_instr_count = v.0;
        let Some(v) = seq.next_element::<Int>()? else { return missing("INSTR_COUNT") };
        chunk.instr_count = v.0;
        let Some(v) = seq.next_element::<Int>()? else { return missing("EDGE_COUNT") };
        chunk.edge_count = v.0;
        match seq.next_element::<Int>()? {
            Some(v) => chunk.first_edge = v.0,
            None if chunk.edge_count == 0 => {}
            None => return missing("FIRST_EDGE_ID"),
        }
        let seed = SequenceSeed { dict: &self.process.dict, what: format!("{place}.EDGE_ID_SEQUENCE") };
        match seq.next_element_seed(seed)? {
            Some(Ok(code)) => chunk.code = code,
            Some(Err(e)) => {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(Err(e));
            }
            None if chunk.edge_count <= 1 => {
                chunk.code = Program::compile("", &self.process.dict, "").unwrap_or_default()
            }
            None => return missing("EDGE_ID_SEQUENCE"),
        }
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Ok(Err(Error::input(format!("{place}: more columns than the header's five"))));
        }
        Ok(Ok(chunk))
    }
}

/// Per-thread totals of a decoded trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadTotals {
    /// `TRACE_DATA` rows of the thread.
    pub chunks: u64,
    /// Sum of the chunks' `EDGE_COUNT`.
    pub edges: u64,
    /// Sum of the chunks' INSTR_COUNT.
    pub instrs: u64,
    /// Traversals per edge id.
    pub edge_counts: HashMap<u64, u64>,
}

/// What [`Totals`] found in one process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessTotals {
    /// `PROCESS_ID`.
    pub pid: u64,
    /// Entries of the process's `STRING_DICTIONARY`.
    pub dictionary_entries: usize,
    /// Rows of the process's `TRANSITION_TABLE`.
    pub table_rows: usize,
    /// Totals per `THREAD_ID`, in ascending order.
    pub threads: std::collections::BTreeMap<u64, ThreadTotals>,
}

/// The job behind `trace stats` and the format's reader: decodes every chunk (in parallel)
/// and counts edges per thread.
#[derive(Debug, Default)]
pub struct Totals {
    /// One entry per process row, in file order.
    pub processes: Vec<ProcessTotals>,
    /// Chunks whose sequence holds characters beyond what their edges need: how many, and the
    /// findings for the first few.
    pub surplus_chunks: u64,
    /// Messages describing the first few surplus chunks.
    pub surplus: Vec<String>,
    /// `(MAJOR_VERSION, MINOR_VERSION)` as the trace states them.
    pub version: Option<(u64, u64)>,
    /// Sum what the chunks declare (chunks, edges, instructions) without decoding any edge:
    /// `edge_counts` stay empty.
    pub declared_only: bool,
}

/// Per-worker counts: per thread, traversals per state.
#[derive(Default)]
pub struct LocalCounts {
    threads: HashMap<u64, (Vec<u64>, ThreadTotals)>,
    /// Chunks with surplus characters: (thread, chunk index, finding).
    surplus: Vec<(u64, usize, String)>,
}

/// How many surplus findings [`Totals`] keeps word for word.
const SURPLUS_LISTED: usize = 5;

impl Job for Totals {
    type Local = LocalCounts;
    type Part = ();

    fn begin_process(&mut self, p: &TraceProcess) -> Result<()> {
        self.processes.push(ProcessTotals {
            pid: p.pid,
            dictionary_entries: p.dict.entries.len(),
            table_rows: p.table.rows,
            ..ProcessTotals::default()
        });
        Ok(())
    }

    fn local(&self, _p: &TraceProcess) -> LocalCounts {
        LocalCounts::default()
    }

    fn decode(&self, p: &TraceProcess, c: &Chunk, local: &mut LocalCounts) -> Result<()> {
        let (counts, _) = local.threads.entry(c.thread).or_default();
        if !self.declared_only {
            if counts.len() < p.states() {
                counts.resize(p.states(), 0);
            }
            if let Some(chars) = decode_chunk(p, c, |s| counts[s as usize] += 1)? {
                local.surplus.push((c.thread, c.index, surplus_message(p, c, chars)));
            }
        }
        let (_, totals) = local.threads.entry(c.thread).or_default();
        totals.chunks += 1;
        totals.edges += c.edge_count;
        totals.instrs = totals.instrs.saturating_add(c.instr_count);
        Ok(())
    }

    fn merge(&mut self, _p: &TraceProcess, _c: &Chunk, _part: ()) -> Result<()> {
        Ok(())
    }

    fn decodes_edges(&self) -> bool {
        !self.declared_only
    }

    fn end_process(&mut self, p: &TraceProcess, locals: Vec<LocalCounts>) -> Result<()> {
        let mut surplus: Vec<(u64, usize, String)> =
            locals.iter().flat_map(|l| l.surplus.iter().cloned()).collect();
        surplus.sort();
        self.surplus_chunks += surplus.len() as u64;
        let room = SURPLUS_LISTED.saturating_sub(self.surplus.len());
        self.surplus.extend(surplus.into_iter().take(room).map(|s| s.2));
        let Some(out) = self.processes.last_mut() else { return Ok(()) };
        for local in locals {
            for (thread, (counts, t)) in local.threads {
                let slot = out.threads.entry(thread).or_default();
                slot.chunks += t.chunks;
                slot.edges += t.edges;
                slot.instrs = slot.instrs.saturating_add(t.instrs);
                for (s, &n) in counts.iter().enumerate() {
                    if n > 0 {
                        *slot.edge_counts.entry(p.table.ids[s]).or_default() += n;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Decodes every chunk of a trace, counting edges per thread; refuses a trace that declares
/// more than `max_edges` edges (default [`DEFAULT_MAX_EDGES`]).
pub fn totals(input: &mut dyn BufRead, paired: Option<&Profile>, max_edges: Option<u64>) -> Result<Totals> {
    let (mut t, version) = stream_versioned(input, paired, Totals::default(), max_edges)?;
    t.version = version;
    Ok(t)
}

/// What a trace's chunks declare (threads, chunks, edges, instructions), without decoding
/// an edge: fast however many edges the trace claims.
pub fn declared(input: &mut dyn BufRead) -> Result<Totals> {
    let job = Totals { declared_only: true, ..Totals::default() };
    let (mut t, version) = stream_versioned(input, None, job, None)?;
    t.version = version;
    Ok(t)
}

/// The job behind `trace edges`: calls `f(process id, thread, edge id)` for every edge, in
/// file order (decoding is sequential: the order is the point).
pub struct EachEdge<F> {
    /// The callback, given `(process id, thread id, edge id)`; an error stops decoding.
    pub f: F,

    /// Only this thread, when set.
    pub thread: Option<u64>,
}

impl<F: FnMut(u64, u64, u64) -> Result<()> + Sync> Job for EachEdge<F> {
    type Local = ();
    type Part = ();
    fn begin_process(&mut self, _p: &TraceProcess) -> Result<()> {
        Ok(())
    }
    fn local(&self, _p: &TraceProcess) {}
    fn decode(&self, _p: &TraceProcess, _c: &Chunk, _l: &mut ()) -> Result<()> {
        Ok(())
    }
    fn merge(&mut self, p: &TraceProcess, c: &Chunk, _part: ()) -> Result<()> {
        if self.thread.is_some_and(|t| t != c.thread) {
            return Ok(());
        }
        let mut edges = ChunkEdges::new(p, c);
        let mut instrs = 0u64;
        while let Some(s) = edges.next_state()? {
            if let Some(pairing) = &p.pairing {
                instrs = instrs.wrapping_add(pairing.instrs[s as usize]);
            }
            (self.f)(p.pid, c.thread, p.table.ids[s as usize])?;
        }
        if p.pairing.is_some() && instrs != c.instr_count {
            return Err(Error::input(format!(
                "INSTR_COUNT is {} but the source blocks of the chunk's {} edges hold {} instructions in the paired DCFG",
                c.instr_count, c.edge_count, instrs
            ))
            .at_path(c.place(p)));
        }
        Ok(())
    }
    fn end_process(&mut self, _p: &TraceProcess, _l: Vec<()>) -> Result<()> {
        Ok(())
    }
}

/// Every thread's decoded edges, materialised (for tests and small traces; the streaming jobs
/// above never hold a whole sequence). Threads in file order; a thread's chunks concatenated.
pub fn decode_all(
    input: &mut dyn BufRead,
    paired: Option<&Profile>,
) -> Result<Vec<super::encode::ThreadEdges>> {
    use std::sync::mpsc;
    let (tx, rx) = mpsc::channel::<(u64, u64)>();
    let job = EachEdge {
        f: move |_pid: u64, t: u64, id: u64| {
            let _ = tx.send((t, id));
            Ok(())
        },
        thread: None,
    };
    let job = stream(input, paired, job)?;
    drop(job);
    let mut out: Vec<super::encode::ThreadEdges> = Vec::new();
    for (t, id) in rx {
        match out.iter_mut().find(|x| x.thread == t) {
            Some(x) => x.edges.push(id),
            None => out.push(super::encode::ThreadEdges { thread: t, edges: vec![id] }),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_TABLE: &str = r#"[ [ "CURRENT_EDGE_ID", "TRANSITION_CODE", "NEXT_EDGE_IDS" ],
        [ 123, "0", [ 124 ] ], [ 123, "1", [ 125 ] ], [ 124, "", [ 456 ] ],
        [ 125, "0", [ 543 ] ], [ 125, "10", [ 542, 549 ] ], [ 125, "11", [ 540, 541 ] ] ]"#;

    fn trace(dict: &str, table: &str, chunks: &str) -> String {
        format!(
            r#"{{ "MAJOR_VERSION" : 1, "MINOR_VERSION" : 0, "PROCESSES" : [
              [ "PROCESS_ID", "STRING_DICTIONARY", "TRANSITION_TABLE", "THREAD_DATA" ],
              [ 7, {dict}, {table}, [ [ "THREAD_ID", "TRACE_DATA" ],
                [ 0, [ [ "PRECEDING_INSTR_COUNT", "INSTR_COUNT", "EDGE_COUNT", "FIRST_EDGE_ID", "EDGE_ID_SEQUENCE" ],
                  {chunks} ] ] ] ] ] }}"#
        )
    }

    fn edges(text: &str) -> Result<Vec<u64>> {
        let all = decode_all(&mut text.as_bytes(), None)?;
        Ok(all.into_iter().flat_map(|t| t.edges).collect())
    }

    #[test]
    fn transition_table_examples_decode_as_the_spec_says() {
        // Example 1: from 123 with bits "110", three more edges. "w" is 110000.
        let t = trace("{}", SPEC_TABLE, r#"[ 0, 0, 4, 123, "w" ]"#);
        assert_eq!(edges(&t).unwrap(), vec![123, 125, 542, 549]);
        // Example 2: from 123 with bits "0", two more edges. "A" is 000000.
        let t = trace("{}", SPEC_TABLE, r#"[ 0, 0, 3, 123, "A" ]"#);
        assert_eq!(edges(&t).unwrap(), vec![123, 124, 456]);
        // Hex strings are integers too, and the iterator stops mid-sequence at EDGE_COUNT.
        let t = trace("{}", SPEC_TABLE, r#"[ "0x0", 0, "0x3", "0x7b", "w" ]"#);
        assert_eq!(edges(&t).unwrap(), vec![123, 125, 542]);
    }

    #[test]
    fn huge_repeat_counts_decode_only_what_edge_count_needs() {
        let table = r#"[ [ "CURRENT_EDGE_ID", "TRANSITION_CODE", "NEXT_EDGE_IDS" ],
            [ 1, "0", [ 1 ] ], [ 1, "1", [ 2 ] ] ]"#;
        let t = trace("{}", table, r#"[ 0, 0, 10, 1, "(99999999999*A)" ]"#);
        assert_eq!(edges(&t).unwrap(), vec![1; 10]);
        let t = trace(r#"{ "x": "(1000000000000*A)" }"#, table, r#"[ 0, 0, 10, 1, "(1000000000000*<x>)" ]"#);
        let started = std::time::Instant::now();
        assert_eq!(totals(&mut t.as_bytes(), None, None).unwrap().processes[0].threads[&0].edges, 10);
        assert!(started.elapsed().as_secs() < 5);
    }

    #[test]
    fn bad_traces_say_which_chunk_and_where() {
        let table = r#"[ [ "CURRENT_EDGE_ID", "TRANSITION_CODE", "NEXT_EDGE_IDS" ],
            [ 1, "0", [ 1 ] ], [ 1, "1", [ 2 ] ], [ 2, "1", [ 1 ] ] ]"#;
        let cases = [
            (trace("{}", table, r#"[ 0, 0, 20, 1, "A" ]"#), "chunk 0 (row 1): edge 7, bit 6"),
            (trace("{}", table, r#"[ 0, 0, 3, 1, "g" ]"#), "no TRANSITION_CODE of edge 2"),
            (trace("{}", table, r#"[ 0, 0, 3, 9, "A" ]"#), "edge 9 has no row"),
            (trace(r#"{ "a": "<b>", "b": "<a>" }"#, table, r#"[ 0, 0, 3, 1, "A" ]"#), "cycle"),
            (trace("{}", table, r#"[ 0, 0, 3, 1, "A<q>" ]"#), "unknown dictionary key <q>"),
            (
                trace(
                    "{}",
                    &table.replace(r#"[ 2, "1", [ 1 ] ]"#, r#"[ 1, "01", [ 1 ] ]"#),
                    "[ 0, 0, 1, 1 ]",
                ),
                "ambiguous",
            ),
        ];
        for (text, needle) in cases {
            let e = edges(&text).unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
        let e = edges(&trace("{}", table, r#"[ 0, 0, 20, 1, "A" ], [ 0, 0, 20, 1, "AAAA" ]"#)).unwrap_err();
        assert!(
            e.to_string().contains("PROCESSES row 1 (PROCESS_ID 7).THREAD_DATA thread 0.TRACE_DATA chunk 0"),
            "{e}"
        );
        assert!(e.to_string().contains("too few bits"), "{e}");
    }
}
