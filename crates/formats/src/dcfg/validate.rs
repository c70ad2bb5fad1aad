//! The rules of the DCFG format (spec v1.00) that can be checked on the model, behind
//! `cfghub validate`. Readers already report what they catch while resolving ids (unknown
//! references, duplicate node ids); this adds the structural and arithmetic rules.
//!
//! Severity follows what real producers do: a broken rule that makes the graph wrong is a
//! violation; a count that real Pin output gets slightly off (instructions executed outside any
//! block, ids above 31 bits from 64-bit producers) is a warning.

use std::collections::{HashMap, HashSet, VecDeque};

use cfghub_analysis::executions;
use cfghub_model::error::{Findings, Place};
use cfghub_model::ir::{EdgeKind, Image, NodeRef, Process, Profile, Routine};

/// Largest id the spec allows (ids are 1..=0x7fffffff).
pub(crate) const MAX_SPEC_ID: u64 = 0x7fff_ffff;

/// Checks every process of `profile`.
pub fn check(profile: &Profile) -> Findings {
    let mut f = Findings::default();
    for (p, process) in profile.processes.iter().enumerate() {
        check_process(p, process, &mut f);
    }
    f
}

fn loc(s: String) -> Option<Place> {
    Some(Place::Path(s))
}

fn check_process(p: usize, process: &Process, f: &mut Findings) {
    let at = |rest: &str| loc(format!("PROCESSES[{p}]{rest}"));
    check_instr_counts(process, &at, f);
    check_ids(process, &at, f);
    check_blocks(p, process, &at, f);
}

/// Instruction counts: the process's total against its threads' and against its blocks'
/// instructions times their counts.
fn check_instr_counts(process: &Process, at: &dyn Fn(&str) -> Option<Place>, f: &mut Findings) {
    let threads = process.thread_instr_counts.len();
    if let Some(total) = process.instr_count {
        if threads > 0 {
            let sum: u64 = process.thread_instr_counts.iter().sum();
            if sum != total {
                f.violation(
                    at(".INSTR_COUNT"),
                    format!("INSTR_COUNT is {total} but INSTR_COUNT_PER_THREAD sums to {sum}"),
                );
            }
        }
        let in_blocks = executions::executed_instructions(process);
        let has_counts = process.images.iter().any(|i| i.blocks.iter().any(|b| b.count.is_some()));
        if has_counts && in_blocks != total {
            f.warn(
                at(".INSTR_COUNT"),
                format!(
                    "INSTR_COUNT is {total} but the blocks' NUM_INSTRS x COUNT sum to {in_blocks} ({} {}): \
                     producers count instructions run outside any recorded block (excluded code, \
                     instructions before the first block); see docs/formats/dcfg.md",
                    total.abs_diff(in_blocks),
                    if in_blocks < total { "short" } else { "over" }
                ),
            );
        }
    }
}

/// Ids: blocks' and edges' ids within the spec's range, edge ids used once; and each edge's
/// per-thread counts and its ENTRY or EXIT end.
fn check_ids(process: &Process, at: &dyn Fn(&str) -> Option<Place>, f: &mut Findings) {
    let threads = process.thread_instr_counts.len();
    for (i, image) in process.images.iter().enumerate() {
        for (b, block) in image.blocks.iter().enumerate() {
            if block.id == 0 || block.id > MAX_SPEC_ID {
                f.warn(
                    at(&format!(".IMAGES[{i}].BASIC_BLOCKS row {}", b + 1)),
                    format!("NODE_ID {} is outside 1..0x7fffffff (some 64-bit producers do this)", block.id),
                );
            }
        }
    }
    let mut edge_ids: HashMap<u64, usize> = HashMap::with_capacity(process.edges.len());
    for (row, e) in process.edges.iter().enumerate() {
        let here = || at(&format!(".EDGES row {}", row + 1));
        if e.id == 0 || e.id > MAX_SPEC_ID {
            f.warn(here(), format!("EDGE_ID {} is outside 1..0x7fffffff", e.id));
        }
        if let Some(first) = edge_ids.insert(e.id, row) {
            f.violation(here(), format!("EDGE_ID {} is used twice (also EDGES row {})", e.id, first + 1));
        }
        if threads > 0 && e.counts.len() > threads {
            f.violation(
                here(),
                format!(
                    "COUNT_PER_THREAD has {} entries but the process has {threads} thread(s)",
                    e.counts.len()
                ),
            );
        }
        match e.kind {
            EdgeKind::Entry if e.source != NodeRef::Start => {
                f.violation(here(), "an ENTRY edge must start at the START node")
            }
            EdgeKind::Exit if e.target != NodeRef::End => {
                f.violation(here(), "an EXIT edge must end at the END node")
            }
            _ => {}
        }
    }
}

/// Blocks inside their image, and block counts against their incoming edges; then the
/// routines of each image (process `p`).
fn check_blocks(p: usize, process: &Process, at: &dyn Fn(&str) -> Option<Place>, f: &mut Findings) {
    let incoming = incoming_totals(process);
    for (i, image) in process.images.iter().enumerate() {
        for (b, block) in image.blocks.iter().enumerate() {
            let here = || at(&format!(".IMAGES[{i}].BASIC_BLOCKS row {}", b + 1));
            if let Some(size) = image.size {
                if block.offset.saturating_add(u64::from(block.size)) > size {
                    f.violation(
                        here(),
                        format!(
                            "block {} at offset {:#x} (+{}) ends past the image's SIZE {size}",
                            block.id, block.offset, block.size
                        ),
                    );
                }
            }
            if block.size > 0 && block.last_instr_offset >= block.size {
                f.violation(
                    here(),
                    format!(
                        "LAST_INSTR_OFFSET {} is not inside the block's {} bytes",
                        block.last_instr_offset, block.size
                    ),
                );
            }
            if let (Some(count), Some(&inc)) = (block.count, incoming.get(&(i as u32, b as u32))) {
                if count != inc {
                    f.violation(
                        here(),
                        format!(
                            "block {} has COUNT {count} but its incoming edges were traversed {inc} times",
                            block.id
                        ),
                    );
                }
            }
        }
        if let Some(routines) = &image.routines {
            check_routines(p, i, process, image, routines, f);
        }
    }
}

fn incoming_totals(process: &Process) -> HashMap<(u32, u32), u64> {
    let mut m = HashMap::new();
    for e in &process.edges {
        if let NodeRef::Block(t) = e.target {
            *m.entry((t.image, t.block)).or_insert(0u64) += e.total();
        }
    }
    m
}

fn check_routines(
    p: usize,
    i: usize,
    process: &Process,
    image: &Image,
    routines: &[Routine],
    f: &mut Findings,
) {
    // Intra-routine successors within this image: the graph routines are defined over.
    let n = image.blocks.len();
    let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n];
    for e in &process.edges {
        if let (NodeRef::Block(s), NodeRef::Block(t)) = (e.source, e.target) {
            if s.image as usize == i && t.image as usize == i && e.kind.is_intra_routine() {
                succ[s.block as usize].push(t.block);
            }
        }
    }
    let id = |b: u32| image.blocks[b as usize].id;
    let mut owner: Vec<u32> = vec![0; n];
    for (r, routine) in routines.iter().enumerate() {
        let at = |what: &str| loc(format!("PROCESSES[{p}].IMAGES[{i}].ROUTINES[{r}]{what}"));
        let members: HashSet<u32> = routine.nodes.iter().copied().collect();
        for &b in &routine.nodes {
            owner[b as usize] += 1;
        }
        if !members.contains(&routine.entry) {
            f.violation(
                at(".NODES"),
                format!("the entry node {} is not among the routine's NODES", id(routine.entry)),
            );
        }
        for &x in &routine.exits {
            if !members.contains(&x) {
                f.violation(
                    at(".EXIT_NODE_IDS"),
                    format!("exit node {} is not among the routine's NODES", id(x)),
                );
            }
        }
        // Reachability from the entry over intra-routine edges (bypasses included).
        let mut seen: HashSet<u32> = HashSet::from([routine.entry]);
        let mut queue = VecDeque::from([routine.entry]);
        while let Some(b) = queue.pop_front() {
            for &s in &succ[b as usize] {
                if seen.insert(s) {
                    queue.push_back(s);
                }
            }
        }
        let unreachable: Vec<u64> =
            routine.nodes.iter().filter(|b| !seen.contains(b)).map(|&b| id(b)).collect();
        if !unreachable.is_empty() {
            f.violation(
                at(".NODES"),
                format!(
                    "node(s) {} cannot be reached from the entry {} without inter-routine edges",
                    list(&unreachable),
                    id(routine.entry)
                ),
            );
        }
        check_idoms(routine, &members, &id, &at, f);
        check_loops(routine, &members, &id, &at, f);
    }
    let outside: Vec<u64> = (0..n).filter(|&b| owner[b] == 0).map(|b| id(b as u32)).collect();
    let doubled: Vec<u64> = (0..n).filter(|&b| owner[b] > 1).map(|b| id(b as u32)).collect();
    let at = loc(format!("PROCESSES[{p}].IMAGES[{i}].ROUTINES"));
    if !outside.is_empty() && !routines.is_empty() {
        f.violation(at.clone(), format!("block(s) {} belong to no routine", list(&outside)));
    }
    if !doubled.is_empty() {
        f.violation(at, format!("block(s) {} belong to more than one routine", list(&doubled)));
    }
}

fn check_idoms(
    routine: &Routine,
    members: &HashSet<u32>,
    id: &dyn Fn(u32) -> u64,
    at: &dyn Fn(&str) -> Option<Place>,
    f: &mut Findings,
) {
    if routine.idoms.is_empty() {
        return;
    }
    let idom: HashMap<u32, u32> = routine.nodes.iter().copied().zip(routine.idoms.iter().copied()).collect();
    for (&node, &dom) in &idom {
        if !members.contains(&dom) {
            f.violation(
                at(".NODES"),
                format!("the immediate dominator {} of node {} is outside the routine", id(dom), id(node)),
            );
        } else if node == routine.entry && dom != node {
            f.violation(at(".NODES"), format!("the entry {} must be its own immediate dominator", id(node)));
        } else if node != routine.entry && dom == node {
            f.violation(
                at(".NODES"),
                format!("node {} names itself as immediate dominator but is not the entry", id(node)),
            );
        }
    }
    // Every dominator chain must reach the entry.
    for &start in idom.keys() {
        let mut x = start;
        let mut steps = 0;
        while x != routine.entry {
            match idom.get(&x) {
                Some(&d) if d != x && steps <= idom.len() => {
                    x = d;
                    steps += 1;
                }
                _ => {
                    f.violation(
                        at(".NODES"),
                        format!(
                            "the dominator chain of node {} does not reach the entry {}",
                            id(start),
                            id(routine.entry)
                        ),
                    );
                    break;
                }
            }
        }
    }
}

fn check_loops(
    routine: &Routine,
    members: &HashSet<u32>,
    id: &dyn Fn(u32) -> u64,
    at: &dyn Fn(&str) -> Option<Place>,
    f: &mut Findings,
) {
    let heads: HashMap<u32, &cfghub_model::ir::Loop> = routine.loops.iter().map(|l| (l.head, l)).collect();
    for l in &routine.loops {
        let outside: Vec<u64> = l.nodes.iter().filter(|b| !members.contains(b)).map(|&b| id(b)).collect();
        if !outside.is_empty() {
            f.violation(
                at(".LOOPS"),
                format!("loop {} has node(s) {} outside its routine", id(l.head), list(&outside)),
            );
        }
        if !l.nodes.contains(&l.head) {
            f.violation(at(".LOOPS"), format!("loop {} does not list its head among its nodes", id(l.head)));
        }
        for &s in &l.back_edge_sources {
            if !l.nodes.contains(&s) {
                f.violation(
                    at(".LOOPS"),
                    format!("back-edge source {} of loop {} is not in the loop", id(s), id(l.head)),
                );
            }
        }
        if let Some(parent) = l.parent {
            match heads.get(&parent) {
                None => f.violation(
                    at(".LOOPS"),
                    format!(
                        "loop {} names parent {}, which heads no loop of the routine",
                        id(l.head),
                        id(parent)
                    ),
                ),
                Some(outer) => {
                    if l.nodes.iter().any(|b| !outer.nodes.contains(b)) {
                        f.violation(
                            at(".LOOPS"),
                            format!("loop {} is not contained in its parent loop {}", id(l.head), id(parent)),
                        );
                    }
                }
            }
        }
    }
}

fn list(ids: &[u64]) -> String {
    let shown: Vec<String> = ids.iter().take(8).map(|i| i.to_string()).collect();
    if ids.len() > 8 {
        format!("{} and {} more", shown.join(", "), ids.len() - 8)
    } else {
        shown.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use cfghub_analysis::executions;
    use cfghub_analysis::synth::{generate, SynthSpec};
    use cfghub_model::ir::{Edge, EdgeKind};

    use super::check;

    #[test]
    fn generated_profiles_obey_every_rule_and_counts_agree() {
        for seed in 1..6 {
            let spec =
                SynthSpec { seed, steps_per_thread: 3_000, keep_sequences: true, ..SynthSpec::default() };
            let s = generate(&spec);
            let findings = check(&s.profile);
            assert!(findings.items.is_empty(), "seed {seed}: {:?}", findings.items);
            let p = &s.profile.processes[0];
            assert_eq!(p.instr_count, Some(executions::executed_instructions(p)));
            for (t, seq) in s.sequences.iter().enumerate() {
                let ids: HashMap<u64, &Edge> = p.edges.iter().map(|e| (e.id, e)).collect();
                assert_eq!(ids[&seq[0]].kind, EdgeKind::Entry);
                assert_eq!(ids[seq.last().unwrap()].kind, EdgeKind::Exit);
                for w in seq.windows(2) {
                    assert_eq!(ids[&w[0]].target, ids[&w[1]].source, "thread {t}: edges must chain");
                }
                let traversed: u64 = p.edges.iter().map(|e| e.counts[t]).sum();
                assert_eq!(traversed, seq.len() as u64);
            }
        }
    }
}
