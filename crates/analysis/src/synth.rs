//! Synthetic, self-consistent DCFGs of any size, for tests and benchmarks.
//!
//! Routines are generated as structured code (sequences, if-then regions, nested loops, calls),
//! so their control flow is reducible like a compiler's. Then each thread *executes* the program:
//! a random walk from `START` through `main`, following branches, loop back edges, calls and
//! returns with a real call stack, until its step budget is spent and every frame has returned to
//! `END`. Counts therefore agree exactly: every block's `COUNT` equals its incoming edges, every
//! thread's instruction count equals the sum of `NUM_INSTRS` over the blocks it ran, and the
//! per-thread edge sequences can be kept to build a matching DCFG-trace.
//!
//! Calls are layered so the executed call tree stays bounded however large the program: routines
//! sit on levels 1 to 3 and plain calls go one level down; `main` loops over an indirect call
//! that dispatches to every level-1 routine in turn, so a long enough walk covers the whole
//! program. Recursion (direct and mutual) happens through *guarded* calls: a conditional branch
//! that skips the call, taken whenever the stack is deep or the budget is spent, so every walk
//! terminates.

use std::collections::HashMap;

use cfghub_model::ir::{
    Block, BlockRef, Edge, EdgeKind, Image, NodeRef, Process, Profile, Routine, SourceLine, Symbol,
};

/// What to generate.
#[derive(Clone, Debug)]
pub struct SynthSpec {
    /// Seed of the random choices: the same spec always generates the same profile.
    pub seed: u64,
    /// Images of the process (at least 1); the first holds `main`.
    pub images: usize,
    /// Routines of each image (at least 1), `main` included in the first.
    pub routines_per_image: usize,
    /// Average blocks per routine (at least 3).
    pub blocks_per_routine: usize,
    /// Threads that each walk the program from `START` (at least 1).
    pub threads: usize,
    /// Edges each thread traverses before it starts returning (the walk then unwinds).
    pub steps_per_thread: u64,
    /// Keep each thread's edge-id sequence (for DCFG-trace tests); costs memory per step.
    pub keep_sequences: bool,
    /// The process id the profile states.
    pub pid: u64,
}

impl Default for SynthSpec {
    fn default() -> Self {
        SynthSpec {
            seed: 1,
            images: 2,
            routines_per_image: 8,
            blocks_per_routine: 12,
            threads: 2,
            steps_per_thread: 10_000,
            keep_sequences: false,
            pid: 4242,
        }
    }
}

/// A generated profile, and each thread's edge-id sequence when asked for.
pub struct Synth {
    /// The generated DCFG: one process whose counts agree exactly.
    pub profile: Profile,
    /// `sequences[t]` lists the edge ids thread `t` traversed, `ENTRY` first and `EXIT` last.
    pub sequences: Vec<Vec<u64>>,
}

/// A small, fast, seedable generator (SplitMix64): reproducible across platforms.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Falls through to the next block.
    Fall,
    /// Conditional branch forward to `target`; `guard` ones skip a recursive call and are
    /// always taken when the walk is deep or unwinding.
    Cond { target: u32, guard: bool },
    /// Loop latch: conditional branch back to `head`.
    Latch { head: u32, percent: u8 },
    /// Calls routine `callee` (global index); execution resumes at the next block.
    Call { callee: u32 },
    /// Indirect call to the next level-1 routine in turn (`main`'s dispatch loop).
    Dispatch,
    /// Returns to the caller (the last block of every routine).
    Ret,
}

struct ProtoRoutine {
    image: usize,
    /// Blocks of the routine, in address order.
    kinds: Vec<Kind>,
    instrs: Vec<u8>,
}

/// Generates a profile by the spec (deterministic for a seed).
pub fn generate(spec: &SynthSpec) -> Synth {
    let mut rng = Rng(spec.seed ^ 0x5eed);
    let images = spec.images.max(1);
    let per_image = spec.routines_per_image.max(1);
    let total = images * per_image;
    let mut routines: Vec<ProtoRoutine> = Vec::with_capacity(total);
    let mut image_blocks = vec![0u32; images];
    for g in 0..total {
        let image = g / per_image;
        let target = (spec.blocks_per_routine.max(3) as u64 / 2
            + rng.below(spec.blocks_per_routine.max(3) as u64)) as usize;
        let mut kinds = Vec::with_capacity(target + 4);
        let shape = Shape { me: g as u32, total: total as u32 };
        if g == 0 {
            // main: an outer loop around the dispatch, run while the thread's budget lasts.
            kinds.push(Kind::Fall);
            let head = kinds.len() as u32;
            kinds.push(Kind::Dispatch);
            region(&mut rng, &mut kinds, target.saturating_sub(4).max(1), shape, 0);
            kinds.push(Kind::Latch { head, percent: 255 });
        } else {
            region(&mut rng, &mut kinds, target.saturating_sub(1).max(1), shape, 0);
        }
        kinds.push(Kind::Ret);
        let instrs = kinds.iter().map(|_| 1 + rng.below(10) as u8).collect();
        routines.push(ProtoRoutine { image, kinds, instrs });
        image_blocks[image] += routines[g].kinds.len() as u32;
    }

    // Execute.
    let threads = spec.threads.max(1);
    let mut walk = Walk::new(&routines, threads, spec.keep_sequences);
    for t in 0..threads {
        let mut trng = Rng(spec.seed.wrapping_mul(31).wrapping_add(t as u64 + 1));
        walk.run(t, spec.steps_per_thread, &mut trng);
    }
    walk.into_profile(spec, &routines, &image_blocks)
}

/// Where a routine sits in the program.
#[derive(Clone, Copy)]
struct Shape {
    me: u32,
    total: u32,
}

/// Call level of a routine: `main` is 0, the others 1, 2, 3 in turn.
fn level(g: u32) -> u32 {
    if g == 0 {
        0
    } else {
        1 + (g - 1) % 3
    }
}

/// Appends a structured region of about `budget` blocks.
fn region(rng: &mut Rng, kinds: &mut Vec<Kind>, budget: usize, shape: Shape, depth: u32) {
    let Shape { me, total } = shape;
    let end = kinds.len() + budget;
    while kinds.len() < end {
        let left = end - kinds.len();
        let pick = rng.below(100);
        if pick < 12 && left >= 3 && depth < 3 {
            // if-then: the branch skips the then-part.
            let at = kinds.len();
            kinds.push(Kind::Fall);
            let size = 1 + rng.below((left as u64 - 1).min(6)) as usize;
            region(rng, kinds, size, shape, depth + 1);
            kinds[at] = Kind::Cond { target: kinds.len() as u32, guard: false };
        } else if pick < 22 && left >= 2 && depth < 2 {
            // loop: body then latch.
            let head = kinds.len() as u32;
            let size = rng.below((left as u64 - 1).min(8)) as usize + 1;
            region(rng, kinds, size, shape, depth + 1);
            kinds.push(Kind::Latch { head, percent: 20 + rng.below(40) as u8 });
        } else if pick < 28 && level(me) < 3 {
            // a plain call one level down (to a routine of the next level, nearby).
            let first = if me == 0 { 1 } else { me + 1 };
            let callee = first + 3 * rng.below(4) as u32;
            if callee < total {
                kinds.push(Kind::Call { callee });
            } else {
                kinds.push(Kind::Fall);
            }
        } else if pick < 31 && left >= 2 && me > 0 && depth == 0 {
            // guarded recursive call (outside loops, so recursion stays subcritical): to itself,
            // or mutual recursion with an earlier routine.
            // Mutual recursion stays on one level, so a recursive call never re-enters a
            // higher level's larger subtree.
            let callee = if me > 3 && rng.chance(40) { me - 3 } else { me };
            let at = kinds.len();
            kinds.push(Kind::Cond { target: at as u32 + 2, guard: true });
            kinds.push(Kind::Call { callee });
        } else {
            kinds.push(Kind::Fall);
        }
    }
}

/// Global block id while walking: (routine, block in routine).
type Node = (u32, u32);
/// An edge while walking: source and target (`None` is START or END), kind, per-thread counts.
type WalkEdge = (Option<Node>, Option<Node>, EdgeKind, Vec<u64>);

struct Walk<'a> {
    routines: &'a [ProtoRoutine],
    threads: usize,
    /// Executions per block per thread.
    block_counts: HashMap<Node, Vec<u64>>,
    /// (source, target, kind) -> edge index; `None` stands for START/END.
    edge_index: HashMap<(Option<Node>, Option<Node>, EdgeKind), usize>,
    edges: Vec<WalkEdge>,
    instrs_per_thread: Vec<u64>,
    sequences: Vec<Vec<u64>>,
    keep: bool,
}

/// Guarded (recursive) calls are only taken below this stack depth.
const MAX_DEPTH: usize = 12;

impl<'a> Walk<'a> {
    fn new(routines: &'a [ProtoRoutine], threads: usize, keep: bool) -> Self {
        Walk {
            routines,
            threads,
            block_counts: HashMap::new(),
            edge_index: HashMap::new(),
            edges: Vec::new(),
            instrs_per_thread: vec![0; threads],
            sequences: vec![Vec::new(); threads],
            keep,
        }
    }

    fn edge(&mut self, t: usize, src: Option<Node>, dst: Option<Node>, kind: EdgeKind, traversed: bool) {
        let threads = self.threads;
        let idx = *self.edge_index.entry((src, dst, kind)).or_insert_with(|| {
            self.edges.push((src, dst, kind, vec![0; threads]));
            self.edges.len() - 1
        });
        if traversed {
            self.edges[idx].3[t] += 1;
            if self.keep {
                self.sequences[t].push(idx as u64 + 1);
            }
            if let Some(n) = dst {
                self.block_counts.entry(n).or_insert_with(|| vec![0; threads])[t] += 1;
            }
            if let Some((r, b)) = src {
                self.instrs_per_thread[t] += u64::from(self.routines[r as usize].instrs[b as usize]);
            }
        }
    }

    fn run(&mut self, t: usize, budget: u64, rng: &mut Rng) {
        let mut steps = 0u64;
        let mut stack: Vec<Node> = Vec::new();
        let mut at: Node = (0, 0);
        let level_one = (self.routines.len() as u32).saturating_sub(1).div_ceil(3);
        // Threads start their dispatch rotation at different points, so they cover the
        // program in parallel as real worker threads divide work.
        let mut dispatched = (t as u64 * u64::from(level_one) / self.threads as u64) as u32;
        self.edge(t, None, Some(at), EdgeKind::Entry, true);
        loop {
            let unwinding = steps >= budget;
            let (r, b) = at;
            let kind = self.routines[r as usize].kinds[b as usize];
            steps += 1;
            let next = (r, b + 1);
            match kind {
                Kind::Fall => {
                    self.edge(t, Some(at), Some(next), EdgeKind::FallThrough, true);
                    at = next;
                }
                Kind::Cond { target, guard } => {
                    let taken = if guard {
                        unwinding || stack.len() >= MAX_DEPTH || rng.chance(60)
                    } else {
                        rng.chance(50)
                    };
                    if taken {
                        self.edge(t, Some(at), Some((r, target)), EdgeKind::DirectConditionalBranch, true);
                        at = (r, target);
                    } else {
                        self.edge(t, Some(at), Some(next), EdgeKind::FallThrough, true);
                        at = next;
                    }
                }
                Kind::Latch { head, percent } => {
                    let taken = !unwinding && (percent == 255 || rng.chance(u64::from(percent)));
                    if taken {
                        self.edge(t, Some(at), Some((r, head)), EdgeKind::DirectConditionalBranch, true);
                        at = (r, head);
                    } else {
                        self.edge(t, Some(at), Some(next), EdgeKind::FallThrough, true);
                        at = next;
                    }
                }
                Kind::Call { callee } => {
                    // The bypass edge records the intra-routine flow; with the call traced its count is 0.
                    self.edge(t, Some(at), Some(next), EdgeKind::CallBypass, false);
                    let kind = if callee % 5 == 3 { EdgeKind::IndirectCall } else { EdgeKind::DirectCall };
                    self.edge(t, Some(at), Some((callee, 0)), kind, true);
                    stack.push(next);
                    at = (callee, 0);
                }
                Kind::Dispatch if level_one == 0 => {
                    self.edge(t, Some(at), Some(next), EdgeKind::FallThrough, true);
                    at = next;
                }
                Kind::Dispatch => {
                    // A prime stride visits every level-1 routine, spread over the images.
                    let callee = 1 + 3 * ((dispatched as u64 * 7919) % u64::from(level_one)) as u32;
                    dispatched += 1;
                    self.edge(t, Some(at), Some(next), EdgeKind::CallBypass, false);
                    self.edge(t, Some(at), Some((callee, 0)), EdgeKind::IndirectCall, true);
                    stack.push(next);
                    at = (callee, 0);
                }
                Kind::Ret => match stack.pop() {
                    Some(ret) => {
                        self.edge(t, Some(at), Some(ret), EdgeKind::Return, true);
                        at = ret;
                    }
                    None => {
                        self.edge(t, Some(at), None, EdgeKind::Exit, true);
                        return;
                    }
                },
            }
        }
    }

    fn into_profile(self, spec: &SynthSpec, routines: &[ProtoRoutine], image_blocks: &[u32]) -> Synth {
        let mut profile = Profile::default();
        profile.meta.format_version = Some((1, 0));
        let images = image_blocks.len();
        // Executed blocks only, as a dynamic CFG has; ids are assigned in address order.
        let mut block_ref: HashMap<Node, BlockRef> = HashMap::new();
        let mut process = Process { pid: spec.pid, ..Process::default() };
        let mut next_id = 4u64;
        for i in 0..images {
            let file = profile.files.intern(&format!("/opt/synth/lib{i}.so"));
            let source = profile.files.intern(&format!("/opt/synth/src/lib{i}.c"));
            let load = 0x40_0000 + (i as u64) * 0x1000_0000;
            let mut image = Image { id: i as u64 + 1, file: Some(file), load_addr: load, ..Image::default() };
            let mut image_routines = Vec::new();
            let mut offset = 0x1000u64;
            for (g, r) in routines.iter().enumerate().filter(|(_, r)| r.image == i) {
                let start = offset;
                let mut nodes = Vec::new();
                for (b, &n) in r.instrs.iter().enumerate() {
                    let size = u32::from(n) * 4;
                    let node = (g as u32, b as u32);
                    if let Some(counts) = self.block_counts.get(&node) {
                        let idx = image.blocks.len() as u32;
                        block_ref.insert(node, BlockRef { image: i as u32, block: idx });
                        image.blocks.push(Block {
                            id: next_id,
                            offset,
                            size,
                            num_instrs: u32::from(n),
                            last_instr_offset: size - 4,
                            count: Some(counts.iter().sum()),
                        });
                        image.source_lines.push(SourceLine {
                            file: Some(source),
                            line: 10 + (g as u32) * 100 + b as u32,
                            offset,
                            size,
                            num_instrs: u32::from(n),
                        });
                        next_id += 1;
                        nodes.push(idx);
                    }
                    offset += u64::from(size);
                }
                image.symbols.push(Symbol {
                    name: routine_name(g),
                    offset: Some(start),
                    size: Some(offset - start),
                    file: None,
                });
                if !nodes.is_empty() {
                    let exits = nodes
                        .iter()
                        .copied()
                        .filter(|&b| {
                            let last = (r.instrs.len() - 1) as u32;
                            block_ref.get(&(g as u32, last)).is_some_and(|x| x.block == b)
                        })
                        .collect();
                    image_routines.push(Routine { entry: nodes[0], exits, nodes, ..Routine::default() });
                }
                offset = (offset + 16) & !15;
            }
            image.size = Some(offset);
            image.routines = Some(image_routines);
            process.images.push(image);
        }
        let node = |n: Option<Node>, start: bool| match n {
            None if start => NodeRef::Start,
            None => NodeRef::End,
            Some(n) => NodeRef::Block(block_ref[&n]),
        };
        // Keep bypass edges only where their call ran (their block executed).
        for (k, (src, dst, kind, counts)) in self.edges.into_iter().enumerate() {
            if src.is_some_and(|s| !block_ref.contains_key(&s))
                || dst.is_some_and(|d| !block_ref.contains_key(&d))
            {
                continue;
            }
            process.edges.push(Edge {
                id: k as u64 + 1,
                source: node(src, true),
                target: node(dst, false),
                kind,
                counts: counts.into(),
                ..Edge::default()
            });
        }
        process.thread_instr_counts = self.instrs_per_thread;
        process.instr_count = Some(process.thread_instr_counts.iter().sum());
        // Dominators and loops, as Pin writes them into ROUTINES, from the shared analyses.
        let cfgs = crate::cfg::build(&process);
        for (image, g) in process.images.iter_mut().zip(&cfgs) {
            if let Some(routines) = &mut image.routines {
                crate::routines::complete(g, routines);
            }
        }
        profile.processes.push(process);
        Synth { profile, sequences: self.sequences }
    }
}

/// Names like a C and C++ program's, some with characters DOT and XML must escape.
fn routine_name(g: usize) -> String {
    match g {
        0 => "main".to_string(),
        _ if g % 7 == 3 => format!("std::vector<Item{g}, std::allocator<Item{g}> >::push_back(\"x\")"),
        _ if g % 11 == 5 => format!("ns{g}::Map<{{key}}>::operator[]"),
        _ => format!("fn_{g}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recursion_and_calls_occur() {
        let s =
            generate(&SynthSpec { routines_per_image: 20, steps_per_thread: 20_000, ..SynthSpec::default() });
        let p = &s.profile.processes[0];
        let calls = p.edges.iter().filter(|e| e.kind.is_call() && e.total() > 0).count();
        assert!(calls > 5);
        let self_calls = p
            .edges
            .iter()
            .filter(|e| e.kind.is_call() && e.total() > 0)
            .filter(|e| match (e.source, e.target) {
                (NodeRef::Block(a), NodeRef::Block(b)) => {
                    let rs = crate::routines::all(p);
                    let owner =
                        |r: BlockRef| rs[r.image as usize].iter().position(|x| x.nodes.contains(&r.block));
                    owner(a) == owner(b) && a.image == b.image
                }
                _ => false,
            })
            .count();
        assert!(self_calls > 0, "expected a recursive call");
    }
}
