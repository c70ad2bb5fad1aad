//! Exact replay of a DCFG-trace over its paired DCFG: call stacks weighted by executed
//! instructions, inclusive cost per call edge, per-edge counts, and a timeline of routine and
//! loop entries.
//!
//! Replay rules (each edge `e` from block `s` to block `t`, in trace order):
//! 1. `s`'s instructions are charged to the current stack (the instructions of the last edge's
//!    target are not: as in the spec's `INSTR_COUNT`, a chunk's cost is its source blocks).
//! 2. `ENTRY` and every call kind (`CALL`, `DIRECT_CALL`, `INDIRECT_CALL`, `SYSTEM_CALL`,
//!    `CONTEXT_CHANGE`, `INTERRUPT`) push the routine containing `t`; calls also open a call
//!    record. `EXIT` and every return kind pop; returns close the innermost call record, whose
//!    call edge gains the instructions executed since the call (its exact inclusive cost),
//!    unless the callee was already on the stack when it was called: recursion's inner
//!    activations are inside an outer one's cost already and are not counted twice, so no
//!    routine's inclusive cost exceeds the thread's instructions.
//! 3. After any edge, when `t` lies in another routine than the stack's top (a jump between
//!    routines, a return to an unexpected place), the top frame becomes `t`'s routine.
//!
//! Chunks replay in parallel: each is replayed against an unknown base stack (the state where
//! the previous chunk ended), recording stacks relative to it ("base minus k frames, top
//! replaced by R, then these frames"), returns that pop below it and calls still open at its
//! end. Merging the chunks in order then resolves them exactly against the real stacks. A chunk
//! that does not start where the previous one ended (`PRECEDING_INSTR_COUNT` skips ahead) starts
//! from an empty stack; its open calls are dropped.

use std::collections::{BTreeMap, HashMap};

use crate::sequence::{ChunkEdges, SequenceChunk, SequenceJob, SequenceProcess};
use crate::{names, routines};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::NO_INDEX;
use cfghub_model::ir::{EdgeKind, Event, NodeRef, Process, Profile, StackValue, Stacks};

/// What an edge does to the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    Push { call: bool },
    Pop { ret: bool },
    Stay,
}

/// Per DCFG edge: what replay needs.
#[derive(Clone, Copy, Debug)]
struct EdgeFacts {
    instrs: u64,
    act: Act,
    /// Routine containing the target (NO_INDEX for special nodes).
    target_routine: u32,
    /// Routine containing the source.
    source_routine: u32,
    /// Loop entered by this edge (index into `ProcessFacts::loops`), or NO_INDEX.
    enters_loop: u32,
}

/// A loop (index into `ProcessFacts::loops`) and its blocks.
type LoopNodes = (u32, Vec<u32>);

/// The routines, names and edge facts of one DCFG process.
struct ProcessFacts {
    names: Vec<String>,
    /// Per loop: (name of its head, routine).
    loops: Vec<(String, u32)>,
    edges: Vec<EdgeFacts>,
}

impl ProcessFacts {
    fn new(profile: &Profile, process: &Process) -> ProcessFacts {
        let all = routines::all(process);
        let mut names = Vec::new();
        let mut loops = Vec::new();
        // routine of each block, per image; and loops by head block.
        let mut routine_of: Vec<Vec<u32>> =
            process.images.iter().map(|i| vec![NO_INDEX; i.blocks.len()]).collect();
        let mut loop_heads: HashMap<(u32, u32), Vec<LoopNodes>> = HashMap::new();
        for (i, image) in process.images.iter().enumerate() {
            let index = names::SymbolIndex::new(image);
            for r in all[i].iter() {
                let g = names.len() as u32;
                let offset = image.blocks.get(r.entry as usize).map(|b| b.offset).unwrap_or(0);
                names.push(names::code_name(profile, image, &index, offset));
                for &b in &r.nodes {
                    if let Some(slot) = routine_of[i].get_mut(b as usize) {
                        *slot = g;
                    }
                }
                for l in &r.loops {
                    let head_offset = image.blocks.get(l.head as usize).map(|b| b.offset).unwrap_or(0);
                    let li = loops.len() as u32;
                    loops.push((names::code_name(profile, image, &index, head_offset), g));
                    loop_heads.entry((i as u32, l.head)).or_default().push((li, l.nodes.clone()));
                }
            }
        }
        let routine = |n: NodeRef| match n {
            NodeRef::Block(b) => routine_of
                .get(b.image as usize)
                .and_then(|v| v.get(b.block as usize))
                .copied()
                .unwrap_or(NO_INDEX),
            _ => NO_INDEX,
        };
        let edges = process
            .edges
            .iter()
            .map(|e| {
                let act = if e.kind == EdgeKind::Entry {
                    Act::Push { call: false }
                } else if e.kind.is_call() {
                    Act::Push { call: true }
                } else if e.kind == EdgeKind::Exit {
                    Act::Pop { ret: false }
                } else if e.kind.is_return() {
                    Act::Pop { ret: true }
                } else {
                    Act::Stay
                };
                let enters_loop = match (e.source, e.target) {
                    (s, NodeRef::Block(t)) => loop_heads
                        .get(&(t.image, t.block))
                        .and_then(|ls| {
                            ls.iter().find(|(_, nodes)| match s {
                                NodeRef::Block(sb) => sb.image != t.image || !nodes.contains(&sb.block),
                                _ => true,
                            })
                        })
                        .map(|(li, _)| *li)
                        .unwrap_or(NO_INDEX),
                    _ => NO_INDEX,
                };
                EdgeFacts {
                    instrs: match e.source {
                        NodeRef::Block(b) => u64::from(process.block(b).num_instrs),
                        _ => 0,
                    },
                    act,
                    target_routine: routine(e.target),
                    source_routine: routine(e.source),
                    enters_loop,
                }
            })
            .collect();
        ProcessFacts { names, loops, edges }
    }
}

/// A node of a chunk's relative stack tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum RelNode {
    /// The base stack without its top `k` frames, its top frame then replaced by `top`.
    Root {
        k: u64,
        top: u32,
    },
    Child {
        parent: u32,
        frame: u32,
    },
}

/// Whether a call's cost counts: its callee was not on the stack (`Yes`), was (`No`), or is
/// known only against the base stack (`Base`: the callee is on it when it is among the base's
/// first frames as the root `(k, top)` leaves them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Counted {
    Yes,
    No,
    Base { callee: u32, k: u64, top: u32 },
}

/// A chunk replayed against an unknown base stack.
#[derive(Debug, Default)]
pub struct ChunkReplay {
    nodes: Vec<RelNode>,
    costs: Vec<u64>,
    end: u32,
    instrs: u64,
    /// Instruction counter (chunk-local) at each return that closed a call of an earlier chunk.
    unmatched_returns: Vec<u64>,
    /// Calls still open at the chunk's end: (edge index, chunk-local counter at the call).
    open_calls: Vec<(u32, u64, Counted)>,
    /// Inclusive cost of calls opened and closed in the chunk, per edge index and whether it
    /// counts.
    inclusive: HashMap<(u32, Counted), u64>,
    /// The finding for characters beyond what the chunk's edges need, if any.
    surplus: Option<String>,
}

struct RelTree {
    nodes: Vec<RelNode>,
    index: HashMap<RelNode, u32>,
    costs: Vec<u64>,
}

impl RelTree {
    fn node(&mut self, n: RelNode) -> u32 {
        if let Some(&i) = self.index.get(&n) {
            return i;
        }
        let i = self.nodes.len() as u32;
        self.nodes.push(n);
        self.index.insert(n, i);
        self.costs.push(0);
        i
    }

    fn top(&self, n: u32) -> u32 {
        match self.nodes[n as usize] {
            RelNode::Root { top, .. } => top,
            RelNode::Child { frame, .. } => frame,
        }
    }

    fn replace_top(&mut self, n: u32, r: u32) -> u32 {
        match self.nodes[n as usize] {
            RelNode::Root { k, .. } => self.node(RelNode::Root { k, top: r }),
            RelNode::Child { parent, .. } => self.node(RelNode::Child { parent, frame: r }),
        }
    }

    /// Whether routine `r` is on the stack `n`, as far as the chunk knows.
    fn holds(&self, mut n: u32, r: u32) -> Counted {
        loop {
            match self.nodes[n as usize] {
                RelNode::Child { parent, frame } => {
                    if frame == r {
                        return Counted::No;
                    }
                    n = parent;
                }
                RelNode::Root { k, top } => {
                    return if top == r { Counted::No } else { Counted::Base { callee: r, k, top } };
                }
            }
        }
    }

    fn pop(&mut self, n: u32, r: u32) -> u32 {
        match self.nodes[n as usize] {
            RelNode::Root { k, .. } => self.node(RelNode::Root { k: k + 1, top: r }),
            RelNode::Child { parent, .. } => parent,
        }
    }
}

/// Per-thread replay state while merging chunks in order.
struct ThreadState {
    /// Global stack tree: (parent, frame); node 0 is the empty stack.
    nodes: Vec<(u32, u32)>,
    index: HashMap<(u32, u32), u32>,
    costs: Vec<u64>,
    /// Node of each prefix of the current stack (`path[d]` = the stack's first d+1 frames).
    path: Vec<u32>,
    pending_calls: Vec<(u32, u64, bool)>,
    counter: u64,
    next_preceding: Option<u64>,
    gaps: u64,
}

impl Default for ThreadState {
    fn default() -> Self {
        ThreadState {
            nodes: vec![(NO_INDEX, NO_INDEX)],
            index: HashMap::new(),
            costs: vec![0],
            path: Vec::new(),
            pending_calls: Vec::new(),
            counter: 0,
            next_preceding: None,
            gaps: 0,
        }
    }
}

impl ThreadState {
    fn child(&mut self, parent: u32, frame: u32) -> u32 {
        if let Some(&i) = self.index.get(&(parent, frame)) {
            return i;
        }
        let i = self.nodes.len() as u32;
        self.nodes.push((parent, frame));
        self.index.insert((parent, frame), i);
        self.costs.push(0);
        i
    }

    /// The global node of a relative root against the current stack.
    fn resolve_root(&mut self, k: u64, top: u32) -> u32 {
        let m = self.path.len() as u64;
        if m > k {
            let node = self.path[(m - k - 1) as usize];
            if top == NO_INDEX || self.nodes[node as usize].1 == top {
                node
            } else {
                let parent = self.nodes[node as usize].0;
                self.child(parent, top)
            }
        } else if top == NO_INDEX {
            0
        } else {
            self.child(0, top)
        }
    }

    /// Whether a call's cost counts, against the current (base) stack.
    fn counts(&mut self, c: Counted) -> bool {
        match c {
            Counted::Yes => true,
            Counted::No => false,
            Counted::Base { callee, k, top } => {
                let m = self.path.len() as u64;
                if m <= k {
                    return true;
                }
                let keep = if top == NO_INDEX { m - k } else { m - k - 1 };
                !(0..keep as usize).any(|d| self.nodes[self.path[d] as usize].1 == callee)
            }
        }
    }

    fn set_stack(&mut self, mut node: u32) {
        self.path.clear();
        while node != 0 {
            self.path.push(node);
            node = self.nodes[node as usize].0;
        }
        self.path.reverse();
    }
}

/// The result of replaying one process.
#[derive(Debug, Default)]
pub struct ProcessReplay {
    /// The operating system's process id, as the trace states it.
    pub pid: u64,
    /// Index of the process in the paired profile.
    pub process: usize,
    /// Routine names (frames), by routine index.
    pub routines: Vec<String>,
    /// Per thread: stacks (routine indices, root first) with their instructions.
    pub stacks: BTreeMap<u64, Vec<(Vec<u32>, u64)>>,
    /// Per thread: instructions replayed.
    pub instrs: BTreeMap<u64, u64>,
    /// Inclusive instructions of every call edge (index into the DCFG process's edges).
    pub inclusive: Vec<u64>,
    /// Per DCFG edge index, traversals per thread (index = thread).
    pub edge_counts: Vec<Vec<u64>>,
    /// Chunks that did not start where the previous chunk of their thread ended.
    pub gaps: u64,
    /// Chunks whose sequence holds characters beyond what their edges need, and the first
    /// one's finding.
    pub surplus_chunks: u64,
    /// The finding of the first such chunk, worded by the trace format; `None` when there is none.
    pub first_surplus: Option<String>,
}

/// Replays a trace over its paired DCFG.
pub struct Replayer<'a> {
    profile: &'a Profile,
    facts: Option<ProcessFacts>,
    threads: HashMap<u64, ThreadState>,
    /// The result of every process replayed so far, in trace order.
    pub processes: Vec<ProcessReplay>,
}

/// Per-worker edge counts: per thread, per DCFG edge index.
#[derive(Default)]
pub struct EdgeCountsByThread(HashMap<u64, Vec<u64>>);

impl<'a> Replayer<'a> {
    /// A replayer over `profile`, the DCFG the trace belongs to.
    pub fn new(profile: &'a Profile) -> Self {
        Replayer { profile, facts: None, threads: HashMap::new(), processes: Vec::new() }
    }
}

impl SequenceJob for Replayer<'_> {
    type Local = EdgeCountsByThread;
    type Part = ChunkReplay;

    fn begin_process(&mut self, p: &SequenceProcess) -> Result<()> {
        let index = p.process;
        let process = &self.profile.processes[index];
        let facts = ProcessFacts::new(self.profile, process);
        self.processes.push(ProcessReplay {
            pid: p.pid,
            process: index,
            routines: facts.names.clone(),
            inclusive: vec![0; process.edges.len()],
            ..ProcessReplay::default()
        });
        self.facts = Some(facts);
        self.threads.clear();
        Ok(())
    }

    fn local(&self) -> EdgeCountsByThread {
        EdgeCountsByThread::default()
    }

    fn decode(
        &self,
        c: &SequenceChunk,
        edges: &dyn ChunkEdges,
        local: &mut EdgeCountsByThread,
    ) -> Result<ChunkReplay> {
        let facts = self.facts.as_ref().ok_or_else(|| Error::usage("replay before a process"))?;
        let counts = local.0.entry(c.thread).or_default();
        if counts.len() < facts.edges.len() {
            counts.resize(facts.edges.len(), 0);
        }
        let mut tree = RelTree { nodes: Vec::new(), index: HashMap::new(), costs: Vec::new() };
        let first_top = c
            .first_edge
            .and_then(|e| facts.edges.get(e as usize))
            .map(|f| f.source_routine)
            .unwrap_or(NO_INDEX);
        let mut node = tree.node(RelNode::Root { k: 0, top: first_top });
        let mut instrs = 0u64;
        let mut calls: Vec<(u32, u64, Counted)> = Vec::new();
        let mut unmatched = Vec::new();
        let mut inclusive: HashMap<(u32, Counted), u64> = HashMap::new();
        let surplus = edges.for_each_edge(&mut |ei| {
            let f = facts.edges[ei as usize];
            counts[ei as usize] += 1;
            tree.costs[node as usize] += f.instrs;
            instrs += f.instrs;
            match f.act {
                Act::Push { call } => {
                    if call {
                        let counts = if f.target_routine == NO_INDEX {
                            Counted::Yes
                        } else {
                            tree.holds(node, f.target_routine)
                        };
                        calls.push((ei, instrs, counts));
                    }
                    node = tree.node(RelNode::Child { parent: node, frame: f.target_routine });
                }
                Act::Pop { ret } => {
                    if ret {
                        match calls.pop() {
                            Some((ce, at, counts)) => {
                                if counts != Counted::No {
                                    *inclusive.entry((ce, counts)).or_default() += instrs - at;
                                }
                            }
                            None => unmatched.push(instrs),
                        }
                    }
                    node = tree.pop(node, f.target_routine);
                    if f.target_routine != NO_INDEX && tree.top(node) != f.target_routine {
                        node = tree.replace_top(node, f.target_routine);
                    }
                }
                Act::Stay => {
                    if f.target_routine != NO_INDEX && tree.top(node) != f.target_routine {
                        node = tree.replace_top(node, f.target_routine);
                    }
                }
            }
        })?;
        Ok(ChunkReplay {
            nodes: tree.nodes,
            costs: tree.costs,
            end: node,
            instrs,
            unmatched_returns: unmatched,
            open_calls: calls,
            inclusive,
            surplus,
        })
    }

    fn merge(&mut self, c: &SequenceChunk, _edges: &dyn ChunkEdges, part: ChunkReplay) -> Result<()> {
        let Some(out) = self.processes.last_mut() else { return Ok(()) };
        if let Some(m) = &part.surplus {
            out.surplus_chunks += 1;
            out.first_surplus.get_or_insert_with(|| m.clone());
        }
        let t = self.threads.entry(c.thread).or_default();
        if c.edge_count == 0 {
            return Ok(());
        }
        if t.next_preceding.is_some_and(|n| n != c.preceding_instr_count) {
            t.gaps += 1;
            out.gaps += 1;
            t.path.clear();
            t.pending_calls.clear();
        }
        t.next_preceding = Some(c.preceding_instr_count.saturating_add(c.instr_count));
        let mut map: Vec<u32> = Vec::with_capacity(part.nodes.len());
        for n in &part.nodes {
            let g = match *n {
                RelNode::Root { k, top } => t.resolve_root(k, top),
                RelNode::Child { parent, frame } => t.child(map[parent as usize], frame),
            };
            map.push(g);
        }
        for (i, &cost) in part.costs.iter().enumerate() {
            t.costs[map[i] as usize] += cost;
        }
        // Whether calls count is decided against the stack as the chunk found it.
        for ((edge, counts), n) in part.inclusive {
            if t.counts(counts) {
                out.inclusive[edge as usize] += n;
            }
        }
        let open: Vec<(u32, u64, bool)> =
            part.open_calls.iter().map(|&(edge, at, c)| (edge, t.counter + at, t.counts(c))).collect();
        for ret in part.unmatched_returns {
            if let Some((edge, at, counts)) = t.pending_calls.pop() {
                if counts {
                    out.inclusive[edge as usize] += t.counter + ret - at;
                }
            }
        }
        t.pending_calls.extend(open);
        t.counter += part.instrs;
        t.set_stack(map[part.end as usize]);
        Ok(())
    }

    fn end_process(&mut self, locals: Vec<EdgeCountsByThread>) -> Result<()> {
        let Some(out) = self.processes.last_mut() else { return Ok(()) };
        let edges = out.inclusive.len();
        let threads = locals.iter().flat_map(|l| l.0.keys()).max().map(|&t| t as usize + 1).unwrap_or(0);
        if threads > 1 << 20 {
            return Err(Error::input(format!("thread index {} is implausibly large", threads - 1)));
        }
        out.edge_counts = vec![vec![0; threads]; edges];
        for l in locals {
            for (thread, counts) in l.0 {
                for (e, &n) in counts.iter().enumerate() {
                    out.edge_counts[e][thread as usize] += n;
                }
            }
        }
        for (&thread, t) in &self.threads {
            let mut stacks = Vec::new();
            for (n, &cost) in t.costs.iter().enumerate() {
                if cost == 0 || n == 0 {
                    continue;
                }
                let mut frames = Vec::new();
                let mut x = n as u32;
                while x != 0 {
                    frames.push(t.nodes[x as usize].1);
                    x = t.nodes[x as usize].0;
                }
                frames.reverse();
                stacks.push((frames, cost));
            }
            stacks.sort();
            out.stacks.insert(thread, stacks);
            out.instrs.insert(thread, t.counter);
        }
        self.threads.clear();
        Ok(())
    }
}

/// Puts replay results into the profile: each thread's stacks (frames interned in
/// `Profile::frames`, values in event `Ir`, added when missing) into `Process::stacks`, and the
/// exact inclusive `Ir` of every call edge into `Edge::inclusive`. Edges whose trace counts differ
/// from the DCFG's are named in a warning (expected when the trace covers part of the run).
pub fn apply(profile: &mut Profile, replays: &[ProcessReplay], findings: &mut Findings) {
    let ir = match profile.event_index("Ir") {
        Some(i) => i,
        None => {
            profile
                .events
                .push(Event { name: "Ir".into(), description: Some("Instructions executed".into()) });
            profile.events.len() - 1
        }
    };
    let events = profile.events.len();
    for r in replays {
        let frames: Vec<u32> = r.routines.iter().map(|n| profile.frames.intern(n)).collect();
        let process = &mut profile.processes[r.process];
        process.stacks = Stacks::with_width(events);
        let mut values = vec![0; events];
        let mut path_frames = Vec::new();
        for (&thread, stacks) in &r.stacks {
            for (path, cost) in stacks {
                values[ir] = StackValue::from(*cost);
                path_frames.clear();
                path_frames.extend(path.iter().map(|&g| frames[g as usize]));
                process.stacks.push(&path_frames, Some(thread as u32), &values);
            }
        }
        let mut differing = 0usize;
        let mut example = None;
        for (i, edge) in process.edges.iter_mut().enumerate() {
            if edge.kind.is_call() {
                let mut v = vec![0; events];
                v[ir] = r.inclusive[i];
                edge.set_inclusive(v);
            }
            let traced = &r.edge_counts[i];
            let n = edge.counts.len().max(traced.len());
            let differs = (0..n)
                .any(|t| edge.counts.get(t).copied().unwrap_or(0) != traced.get(t).copied().unwrap_or(0));
            if differs {
                differing += 1;
                example.get_or_insert((edge.id, edge.counts.clone(), traced.clone()));
            }
        }
        if let Some((id, dcfg, trace)) = example {
            findings.warn(
                None,
                format!(
                    "process {}: {differing} edge(s) were traversed a different number of times in the trace than the DCFG counts \
                     (e.g. edge {id}: DCFG {dcfg:?}, trace {trace:?}); the trace may cover part of the run",
                    r.pid
                ),
            );
        }
        if let Some(first) = &r.first_surplus {
            findings.warn(
                None,
                format!(
                    "process {}: {} chunk(s) of the trace hold characters beyond their EDGE_COUNT, ignored (first: {first})",
                    r.pid, r.surplus_chunks
                ),
            );
        }
        if r.gaps > 0 {
            findings.warn(
                None,
                format!("process {}: {} chunk(s) do not continue where the previous chunk ended; stacks restart there", r.pid, r.gaps),
            );
        }
    }
}

/// One entry of the timeline: a routine or loop entered at an instruction count.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TimelineEntry {
    /// The thread that made the entry, numbered from 0 as in the profile's per-thread counts.
    pub thread: u64,
    /// Instructions the thread executed before the entry (from the chunk's
    /// PRECEDING_INSTR_COUNT).
    pub instr: u64,
    /// `routine` or `loop`.
    pub kind: &'static str,
    /// The routine's name, or the loop head's.
    pub name: String,
    /// For loops: the routine holding the loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routine: Option<String>,
    /// Call depth after the entry (1 = the outermost routine).
    pub depth: usize,
}

/// The job behind `cfghub trace timeline`: replays chunks in order and reports every routine
/// entry (calls, `ENTRY`, jumps into another routine) and loop entry (an edge into a loop head
/// from outside the loop) to `f`.
pub struct Timeline<'a, F> {
    profile: &'a Profile,
    facts: Option<ProcessFacts>,
    stacks: HashMap<u64, Vec<u32>>,
    /// The only thread whose entries are reported; `None`: every thread's.
    pub thread: Option<u64>,
    /// Called with every entry, in trace order per thread; an error it returns stops the replay.
    pub f: F,
}

impl<'a, F> Timeline<'a, F> {
    /// A timeline over the DCFG `profile` that reports the entries of `thread` (or every thread's)
    /// to `f`.
    pub fn new(profile: &'a Profile, thread: Option<u64>, f: F) -> Self {
        Timeline { profile, facts: None, stacks: HashMap::new(), thread, f }
    }
}

impl<F: FnMut(TimelineEntry) -> Result<()> + Sync> SequenceJob for Timeline<'_, F> {
    type Local = ();
    type Part = ();
    fn begin_process(&mut self, p: &SequenceProcess) -> Result<()> {
        let index = p.process;
        self.facts = Some(ProcessFacts::new(self.profile, &self.profile.processes[index]));
        self.stacks.clear();
        Ok(())
    }
    fn local(&self) {}
    fn decode(&self, _c: &SequenceChunk, _edges: &dyn ChunkEdges, _l: &mut ()) -> Result<()> {
        Ok(())
    }
    fn merge(&mut self, c: &SequenceChunk, edges: &dyn ChunkEdges, _part: ()) -> Result<()> {
        if self.thread.is_some_and(|t| t != c.thread) {
            return Ok(());
        }
        let Some(facts) = self.facts.as_ref() else { return Ok(()) };
        let stack = self.stacks.entry(c.thread).or_default();
        let mut instr = c.preceding_instr_count;
        let mut events: Vec<TimelineEntry> = Vec::new();
        let mut failed = None;
        let f = &mut self.f;
        let mut emit = |e: TimelineEntry, events: &mut Vec<TimelineEntry>| {
            events.push(e);
            if events.len() >= 4096 && failed.is_none() {
                for e in events.drain(..) {
                    if let Err(err) = f(e) {
                        failed = Some(err);
                        break;
                    }
                }
                events.clear();
            }
        };
        let first = c.first_edge.and_then(|e| facts.edges.get(e as usize));
        if let Some(fe) = first {
            if fe.source_routine != NO_INDEX && stack.last() != Some(&fe.source_routine) {
                stack.pop();
                stack.push(fe.source_routine);
            }
        }
        edges.for_each_edge(&mut |ei| {
            let fx = facts.edges[ei as usize];
            instr += fx.instrs;
            let tr = fx.target_routine;
            let entered = match fx.act {
                Act::Push { .. } => {
                    stack.push(tr);
                    tr != NO_INDEX
                }
                Act::Pop { .. } => {
                    stack.pop();
                    if tr != NO_INDEX && stack.last() != Some(&tr) {
                        stack.pop();
                        stack.push(tr);
                        true
                    } else {
                        false
                    }
                }
                Act::Stay => {
                    if tr != NO_INDEX && stack.last() != Some(&tr) {
                        stack.pop();
                        stack.push(tr);
                        true
                    } else {
                        false
                    }
                }
            };
            if entered {
                let e = TimelineEntry {
                    thread: c.thread,
                    instr,
                    kind: "routine",
                    name: facts.names[tr as usize].clone(),
                    routine: None,
                    depth: stack.len(),
                };
                emit(e, &mut events);
            }
            if fx.enters_loop != NO_INDEX {
                let (name, routine) = &facts.loops[fx.enters_loop as usize];
                let e = TimelineEntry {
                    thread: c.thread,
                    instr,
                    kind: "loop",
                    name: name.clone(),
                    routine: Some(facts.names[*routine as usize].clone()),
                    depth: stack.len(),
                };
                emit(e, &mut events);
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        for e in events {
            (self.f)(e)?;
        }
        Ok(())
    }
    fn end_process(&mut self, _l: Vec<()>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{generate, Synth, SynthSpec};

    /// A chunk's edges held in memory.
    struct InMemory<'a>(&'a [u32]);

    impl ChunkEdges for InMemory<'_> {
        fn for_each_edge(&self, f: &mut dyn FnMut(u32)) -> Result<Option<String>> {
            self.0.iter().for_each(|&e| f(e));
            Ok(None)
        }
    }

    /// A synthetic DCFG and the edge ids each of its threads walked.
    fn walked(spec: SynthSpec) -> Synth {
        generate(&SynthSpec { keep_sequences: true, ..spec })
    }

    /// Runs `job` over every thread's walk cut into chunks of `chunk` edges, as a trace reader
    /// does: every chunk of a thread decoded first (in any order), then merged in order.
    fn drive<J: SequenceJob>(synth: &Synth, chunk: usize, mut job: J) -> J {
        let process = &synth.profile.processes[0];
        let index: HashMap<u64, u32> =
            process.edges.iter().enumerate().map(|(i, e)| (e.id, i as u32)).collect();
        let instrs = |e: u32| match process.edges[e as usize].source {
            NodeRef::Block(b) => u64::from(process.block(b).num_instrs),
            _ => 0,
        };
        job.begin_process(&SequenceProcess { pid: process.pid, process: 0 }).unwrap();
        let mut local = job.local();
        for (thread, walk) in synth.sequences.iter().enumerate() {
            let edges: Vec<u32> = walk.iter().map(|id| index[id]).collect();
            let mut preceding = 0;
            let chunks: Vec<(SequenceChunk, &[u32])> = edges
                .chunks(chunk)
                .map(|part| {
                    let instr_count = part.iter().map(|&e| instrs(e)).sum();
                    let c = SequenceChunk {
                        thread: thread as u64,
                        preceding_instr_count: preceding,
                        instr_count,
                        edge_count: part.len() as u64,
                        first_edge: part.first().copied(),
                    };
                    preceding += instr_count;
                    (c, part)
                })
                .collect();
            let parts: Vec<J::Part> =
                chunks.iter().rev().map(|(c, e)| job.decode(c, &InMemory(e), &mut local).unwrap()).collect();
            for ((c, e), part) in chunks.iter().zip(parts.into_iter().rev()) {
                job.merge(c, &InMemory(e), part).unwrap();
            }
        }
        job.end_process(vec![local]).unwrap();
        job
    }

    /// The replay rules applied edge by edge to a whole sequence, without chunks.
    fn reference(profile: &Profile, edges: &[u64]) -> (BTreeMap<Vec<u32>, u64>, Vec<u64>) {
        let process = &profile.processes[0];
        let facts = ProcessFacts::new(profile, process);
        let by_id: HashMap<u64, usize> = process.edges.iter().enumerate().map(|(i, e)| (e.id, i)).collect();
        let mut stack: Vec<u32> = Vec::new();
        let mut calls: Vec<(usize, u64, bool)> = Vec::new();
        let mut costs: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
        let mut inclusive = vec![0; process.edges.len()];
        let mut instrs = 0;
        if let Some(f) = edges.first().map(|e| facts.edges[by_id[e]]) {
            if f.source_routine != NO_INDEX {
                stack.push(f.source_routine);
            }
        }
        for e in edges {
            let i = by_id[e];
            let f = facts.edges[i];
            if f.instrs > 0 {
                *costs.entry(stack.clone()).or_default() += f.instrs;
            }
            instrs += f.instrs;
            match f.act {
                Act::Push { call } => {
                    if call {
                        calls.push((i, instrs, !stack.contains(&f.target_routine)));
                    }
                    stack.push(f.target_routine);
                }
                Act::Pop { ret } => {
                    if ret {
                        if let Some((c, at, counts)) = calls.pop() {
                            if counts {
                                inclusive[c] += instrs - at;
                            }
                        }
                    }
                    stack.pop();
                }
                Act::Stay => {}
            }
            if f.target_routine != NO_INDEX && stack.last() != Some(&f.target_routine) {
                stack.pop();
                stack.push(f.target_routine);
            }
        }
        (costs, inclusive)
    }

    #[test]
    fn chunked_parallel_replay_equals_edge_by_edge_replay() {
        for (seed, chunk) in [(1, 40), (2, 1_000), (3, 7), (4, 1_000_000)] {
            let spec = SynthSpec { seed, threads: 2, steps_per_thread: 3_000, ..SynthSpec::default() };
            let synth = walked(spec);
            let replays = drive(&synth, chunk, Replayer::new(&synth.profile)).processes;
            let r = &replays[0];
            let mut inclusive = vec![0; r.inclusive.len()];
            for (thread, walk) in synth.sequences.iter().enumerate() {
                let (costs, incl) = reference(&synth.profile, walk);
                let got: BTreeMap<Vec<u32>, u64> = r.stacks[&(thread as u64)].iter().cloned().collect();
                assert_eq!(got, costs, "seed {seed} chunk {chunk} thread {thread}");
                for (a, b) in inclusive.iter_mut().zip(incl) {
                    *a += b;
                }
                // Stacks sum to the thread's instructions.
                let sum: u64 = got.values().sum();
                assert_eq!(sum, synth.profile.processes[0].thread_instr_counts[thread]);
            }
            assert_eq!(r.inclusive, inclusive, "seed {seed} chunk {chunk}");
            // Counts recomputed from a whole-run trace are the DCFG's.
            for (i, e) in synth.profile.processes[0].edges.iter().enumerate() {
                assert_eq!(r.edge_counts[i], e.counts.to_vec(), "edge {}", e.id);
            }
        }
    }

    #[test]
    fn apply_fills_stacks_and_call_inclusive_costs() {
        let spec = SynthSpec { seed: 9, threads: 2, steps_per_thread: 2_000, ..SynthSpec::default() };
        let synth = walked(spec);
        let replays = drive(&synth, 1_000, Replayer::new(&synth.profile)).processes;
        let mut profile = synth.profile.clone();
        let mut findings = Findings::default();
        apply(&mut profile, &replays, &mut findings);
        assert!(findings.items.is_empty(), "{:?}", findings.items);
        let ir = profile.event_index("Ir").unwrap();
        let process = &profile.processes[0];
        let total: StackValue = process.stacks.samples().map(|s| s.values[ir]).sum();
        assert_eq!(total as u64, process.thread_instr_counts.iter().sum::<u64>());
        assert!(
            process.stacks.samples().all(|s| profile.frames.get(process.stacks.frames(s.node)[0]) == "main"),
            "every stack starts in main"
        );
        let calls: Vec<_> = process.edges.iter().filter(|e| e.kind.is_call() && e.total() > 0).collect();
        assert!(!calls.is_empty());
        assert!(calls.iter().all(|e| e.inclusive().len() == profile.events.len() && e.inclusive()[ir] > 0));
    }

    #[test]
    fn the_timeline_lists_routine_entries_in_order() {
        let spec = SynthSpec { seed: 5, threads: 1, steps_per_thread: 500, ..SynthSpec::default() };
        let synth = walked(spec);
        let (tx, rx) = std::sync::mpsc::channel();
        let job = Timeline::new(&synth.profile, None, move |e: TimelineEntry| {
            let _ = tx.send(e);
            Ok(())
        });
        drop(drive(&synth, 20, job));
        let entries: Vec<TimelineEntry> = rx.into_iter().collect();
        assert_eq!(entries[0].name, "main");
        assert_eq!((entries[0].instr, entries[0].depth), (0, 1));
        assert!(entries.windows(2).all(|w| w[0].instr <= w[1].instr));
        let calls: u64 =
            synth.profile.processes[0].edges.iter().filter(|e| e.kind.is_call()).map(|e| e.total()).sum();
        let routine_entries = entries.iter().filter(|e| e.kind == "routine").count() as u64;
        assert!(routine_entries > calls, "{routine_entries} entries for {calls} calls");
    }
}
