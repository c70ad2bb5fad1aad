//! Analyses and DOT on synthetic models: routines, dominators and loops of a process of a
//! million blocks (built here), and the DOT of one routine of about ten thousand blocks (a
//! `cfghub::synth` DCFG, executed by its random walk).
//!
//! Run: `cargo bench --bench analysis` (figures in the criterion report).

use std::hint::black_box;

use cfghub::analysis::{callgraph, routines};
use cfghub::error::Findings;
use cfghub::formats::dot::{self, Options, View};
use cfghub::ir::{Block, BlockRef, Edge, EdgeKind, Image, NodeRef, Process, Profile};
use cfghub::synth::{generate, SynthSpec};
use criterion::{criterion_group, criterion_main, Criterion};

fn blocks(p: &Profile) -> usize {
    p.processes.iter().flat_map(|p| &p.images).map(|i| i.blocks.len()).sum()
}

fn big_routine() -> Profile {
    let spec = SynthSpec {
        images: 1,
        routines_per_image: 1,
        blocks_per_routine: 11_000,
        threads: 1,
        steps_per_thread: 3_000_000,
        ..SynthSpec::default()
    };
    generate(&spec).profile
}

/// A process of `routines` routines of 100 blocks each, built directly (a random walk over a
/// million blocks takes `cfghub::synth` minutes): every routine falls through its blocks, with
/// an inner loop every 10 blocks nested in an outer loop every 50, a forward branch skipping two
/// blocks in every tenth, and a call (with its bypass and return) to the next routine.
fn million_blocks(routines: usize) -> Profile {
    const PER: u32 = 100;
    let mut image = Image { id: 1, load_addr: 0x400000, ..Image::default() };
    let mut edges = Vec::new();
    let b = |r: usize, i: u32| NodeRef::Block(BlockRef { image: 0, block: r as u32 * PER + i });
    let mut edge = |s: NodeRef, t: NodeRef, kind: EdgeKind| {
        let id = edges.len() as u64 + 1;
        edges.push(Edge { id, source: s, target: t, kind, counts: vec![1].into(), ..Edge::default() });
    };
    for r in 0..routines {
        for i in 0..PER {
            let id = (r as u64) * u64::from(PER) + u64::from(i) + 4;
            image.blocks.push(Block {
                id,
                offset: id * 16,
                size: 16,
                num_instrs: 4,
                last_instr_offset: 12,
                count: Some(1),
            });
            if i + 1 < PER {
                if i % 10 == 5 && routines > 1 {
                    let callee = (r + 1) % routines;
                    edge(b(r, i), b(callee, 0), EdgeKind::DirectCall);
                    edge(b(r, i), b(r, i + 1), EdgeKind::CallBypass);
                    edge(b(callee, PER - 1), b(r, i + 1), EdgeKind::Return);
                } else {
                    edge(b(r, i), b(r, i + 1), EdgeKind::FallThrough);
                }
            }
            if i % 10 == 9 {
                edge(b(r, i), b(r, i - 9), EdgeKind::DirectConditionalBranch);
            }
            if i % 50 == 49 {
                edge(b(r, i), b(r, i - 49), EdgeKind::DirectConditionalBranch);
            }
            if i % 10 == 2 {
                edge(b(r, i), b(r, i + 3), EdgeKind::DirectConditionalBranch);
            }
        }
    }
    edge(NodeRef::Start, b(0, 0), EdgeKind::Entry);
    let process = Process { pid: 1, images: vec![image], edges, ..Process::default() };
    Profile { processes: vec![process], ..Profile::default() }
}

fn dot_of_one_big_routine(c: &mut Criterion) {
    let profile = big_routine();
    let n = blocks(&profile);
    eprintln!("routine of {n} blocks");
    let view = View::Routine { spec: "main".into(), loop_node: None };
    let mut group = c.benchmark_group("dot");
    group.sample_size(20);
    group.bench_function(format!("routine view, {n} blocks (with dominators and loops)"), |b| {
        b.iter(|| {
            let mut findings = Findings::default();
            black_box(dot::to_string(&profile, &view, &Options::default(), &mut findings).unwrap())
        })
    });
    group.finish();
}

fn analyses_of_a_million_blocks(c: &mut Criterion) {
    let profile = million_blocks(10_000);
    let process = &profile.processes[0];
    let n = blocks(&profile);
    let loops: usize = routines::all(process).iter().flat_map(|rs| rs.iter()).map(|r| r.loops.len()).sum();
    eprintln!("process of {n} blocks, {} edges, {loops} loops", process.edges.len());
    let mut group = c.benchmark_group("analysis");
    group.sample_size(10);
    group.bench_function(format!("routines + dominators + loops recomputed, {n} blocks"), |b| {
        b.iter(|| black_box(routines::all_recomputed(process)))
    });
    // The same process with routines given (as a DCFG's ROUTINES table without NODES' idoms):
    // only dominators and loops are computed.
    let mut given = process.clone();
    for (image, rs) in given.images.iter_mut().zip(routines::discover(process)) {
        image.routines = Some(rs);
    }
    group.bench_function(format!("dominators + loops of given routines, {n} blocks"), |b| {
        b.iter(|| black_box(routines::all(&given)))
    });
    let rs = routines::all(process);
    group.bench_function(format!("call graph, {n} blocks"), |b| {
        b.iter(|| black_box(callgraph::build_with(&profile, process, &rs)))
    });
    group.finish();
}

criterion_group!(benches, dot_of_one_big_routine, analyses_of_a_million_blocks);
criterion_main!(benches);
