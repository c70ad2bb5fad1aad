//! DOT, GraphML and the analyses on models whose references are broken (as a reader that let
//! them through, or a library user, might hand over): errors or warnings, never a panic.

use cfghub::analysis::{callgraph, routines};
use cfghub::error::Findings;
use cfghub::formats::dot::{self, Options, View};
use cfghub::formats::graphml;
use cfghub::ir::{Block, BlockRef, Edge, EdgeKind, Image, Loop, NodeRef, Process, Profile, Routine, Symbol};

fn broken() -> Profile {
    let block = |id: u64, offset: u64| Block {
        id,
        offset,
        size: 4,
        num_instrs: 1,
        count: Some(1),
        ..Block::default()
    };
    let image = Image {
        blocks: vec![block(4, 0), block(5, 4)],
        symbols: vec![Symbol { name: "f".into(), offset: Some(0), size: Some(8), file: None }],
        routines: Some(vec![
            // Entry and loop head beyond the image's two blocks; idoms missing.
            Routine {
                entry: 0,
                exits: vec![9],
                nodes: vec![0, 1, 7],
                idoms: vec![],
                loops: vec![Loop {
                    head: 42,
                    back_edge_sources: vec![1],
                    nodes: vec![1, 42],
                    parent: Some(42),
                }],
                symbol: None,
            },
            Routine { entry: 99, nodes: vec![99], ..Routine::default() },
        ]),
        ..Image::default()
    };
    let b = |block: u32| NodeRef::Block(BlockRef { image: 0, block });
    let edges = vec![
        Edge {
            source: b(0),
            target: b(1),
            kind: EdgeKind::FallThrough,
            counts: vec![1].into(),
            ..Edge::default()
        },
        Edge {
            source: b(1),
            target: b(0),
            kind: EdgeKind::DirectConditionalBranch,
            counts: vec![3].into(),
            ..Edge::default()
        },
        Edge {
            source: b(1),
            target: b(77),
            kind: EdgeKind::DirectCall,
            counts: vec![1].into(),
            ..Edge::default()
        },
        Edge {
            source: NodeRef::Block(BlockRef { image: 5, block: 0 }),
            target: b(0),
            kind: EdgeKind::Call,
            counts: vec![1].into(),
            ..Edge::default()
        },
    ];
    Profile {
        processes: vec![Process { pid: 1, images: vec![image], edges, ..Process::default() }],
        ..Profile::default()
    }
}

#[test]
fn analyses_survive_broken_references() {
    let p = broken();
    let process = &p.processes[0];
    let rs = routines::all(process);
    assert_eq!(rs[0].len(), 2);
    let recomputed = routines::all_recomputed(process);
    assert_eq!(recomputed[0].iter().map(|r| r.nodes.len()).sum::<usize>(), 2);
    let g = callgraph::build(&p, process);
    assert!(g.arcs.is_empty());
}

#[test]
fn writers_report_broken_references_without_panicking() {
    let p = broken();
    for v in [View::Program, View::CallGraph, View::Routine { spec: "f".into(), loop_node: None }] {
        let mut findings = Findings::default();
        // Either a clear error or a picture of what is valid.
        if let Err(e) = dot::to_string(&p, &v, &Options::default(), &mut findings) {
            assert!(e.to_string().contains("does not have"), "{v:?}: {e}");
        }
    }
    let mut out = Vec::new();
    graphml::write(&p, &mut out, &mut Findings::default()).unwrap();
    assert!(String::from_utf8(out).unwrap().contains("</graphml>"));
}
