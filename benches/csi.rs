//! Ball-Larus numbering and decoding on a routine of ten thousand blocks, and the whole
//! `.debug_PT` writer on a synthetic DCFG routine of that size.
//!
//! The graph: a ladder of 3,333 rungs (a diamond: two arms and a join) with a back edge from
//! every join to its rung's head and a cut link every 30 rungs (as csi-cc cuts edges to keep
//! path numbers in 64 bits): 10,001 nodes, 16,664 edges.
//!
//! Run: `cargo bench --bench csi` (figures in the criterion report; `scripts/bench-csi.sh`).

use std::hint::black_box;

use cfghub::analysis::ball_larus::{mark_back_edges, number, Dag, GraphEdge, PathGraph};
use cfghub::convert::write_to_vec;
use cfghub::formats::csi;
use cfghub::synth::{generate, SynthSpec};
use criterion::{criterion_group, criterion_main, Criterion};

fn ladder(rungs: u32) -> PathGraph {
    let node = |r: u32, k: u32| 2 + 3 * r + k;
    let mut edges = vec![GraphEdge { source: 0, target: node(0, 0), back: false }];
    for r in 0..rungs {
        let (a, b, j) = (node(r, 0), node(r, 1), node(r, 2));
        edges.push(GraphEdge { source: a, target: b, back: false });
        edges.push(GraphEdge { source: a, target: j, back: false });
        edges.push(GraphEdge { source: b, target: j, back: false });
        let next = if r + 1 < rungs { node(r + 1, 0) } else { 1 };
        edges.push(GraphEdge { source: j, target: next, back: r % 30 == 29 });
        edges.push(GraphEdge { source: j, target: a, back: true });
    }
    PathGraph { nodes: 2 + 3 * rungs, entry: 0, exit: 1, edges }
}

/// `loops` loops one after the other, each a head and a latch with a back edge between them.
fn loops_in_a_row(loops: u32) -> PathGraph {
    let node = |r: u32, k: u32| 2 + 2 * r + k;
    let mut edges = vec![GraphEdge { source: 0, target: node(0, 0), back: false }];
    for r in 0..loops {
        let (h, l) = (node(r, 0), node(r, 1));
        edges.push(GraphEdge { source: h, target: l, back: false });
        edges.push(GraphEdge { source: l, target: h, back: false });
        let next = if r + 1 < loops { node(r + 1, 0) } else { 1 };
        edges.push(GraphEdge { source: l, target: next, back: false });
    }
    PathGraph { nodes: 2 + 2 * loops, entry: 0, exit: 1, edges }
}

fn bench(c: &mut Criterion) {
    let g = ladder(3_333);
    assert!(g.nodes >= 10_000);
    c.bench_function("ball_larus/number 10k blocks", |b| b.iter(|| number(black_box(&g)).unwrap()));
    // Loops in a row with nothing marked: the back edges found by depth-first search.
    let mut unmarked = loops_in_a_row(5_000);
    assert!(unmarked.nodes >= 10_000);
    c.bench_function("ball_larus/mark back edges + number 10k blocks", |b| {
        b.iter(|| {
            for e in &mut unmarked.edges {
                e.back = false;
            }
            mark_back_edges(&mut unmarked).unwrap();
            number(black_box(&unmarked)).unwrap()
        })
    });
    let n = number(&g).unwrap();
    c.bench_function("ball_larus/acyclic graph with stated numbers 10k blocks", |b| {
        b.iter(|| Dag::new(black_box(&g), &n.edges).unwrap())
    });
    let dag = Dag::new(&g, &n.edges).unwrap();
    let last = n.paths as i64 - 1;
    c.bench_function("ball_larus/decode the longest-numbered path", |b| {
        b.iter(|| dag.decode(black_box(last)).unwrap())
    });
    let spec = SynthSpec {
        images: 1,
        routines_per_image: 1,
        blocks_per_routine: 10_000,
        threads: 1,
        steps_per_thread: 300_000,
        ..SynthSpec::default()
    };
    let profile = generate(&spec).profile;
    c.bench_function("csi/write .debug_PT of a 10k-block DCFG routine", |b| {
        b.iter(|| write_to_vec(&csi::FORMAT, black_box(&profile), &Default::default()).unwrap())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
