//! DOT: Graphviz's `dot` renders every view cfghub writes for the corpus, silently.

use crate::common;
use cfghub::analysis::routines;
use cfghub::convert::load;
use cfghub::error::Findings;
use cfghub::format::ReadOptions;
use cfghub::formats::dot::{self, Options, View};
use cfghub::ir::{Block, BlockRef, Edge, EdgeKind, Image, NodeRef, Process, Profile, Symbol};

fn view(profile: &Profile, v: View, options: &Options) -> String {
    let mut findings = Findings::default();
    dot::to_string(profile, &v, options, &mut findings).unwrap()
}

fn corpus() -> Vec<(String, Profile)> {
    let mut files = vec![
        common::fixture("dcfg/hello-world.dcfg.json"),
        common::fixture("dcfg/two-processes.dcfg.json"),
        common::fixture("callgrind/callgrind.out.recursion-loops"),
    ];
    files.extend(common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2"));
    files
        .into_iter()
        .map(|p| {
            let name = p.display().to_string();
            (name.clone(), load(&name, None, &ReadOptions::default()).unwrap().profile)
        })
        .collect()
}

#[test]
fn every_routine_loop_and_call_graph_of_the_corpus_renders_silently() {
    let mut rendered = 0;
    for (name, profile) in corpus() {
        let options = Options::default();
        for process in &profile.processes {
            let all = routines::all(process);
            for (ii, image) in process.images.iter().enumerate() {
                for r in all[ii].iter() {
                    let entry = image.blocks[r.entry as usize].id.to_string();
                    let options = Options { processes: vec![process.pid], ..Options::default() };
                    let text =
                        view(&profile, View::Routine { spec: entry.clone(), loop_node: None }, &options);
                    common::render_dot(&text, &format!("{name}: routine {entry}"));
                    rendered += 1;
                    for l in r.loops.iter() {
                        let head = image.blocks[l.head as usize].id;
                        let text = view(
                            &profile,
                            View::Routine { spec: entry.clone(), loop_node: Some(head) },
                            &options,
                        );
                        common::render_dot(&text, &format!("{name}: loop {head}"));
                        rendered += 1;
                    }
                }
            }
        }
        common::render_dot(&view(&profile, View::CallGraph, &options), &format!("{name}: call graph"));
        let all = Options { node_fraction: 0.0, edge_fraction: 0.0, ..Options::default() };
        common::render_dot(&view(&profile, View::CallGraph, &all), &format!("{name}: whole call graph"));
        rendered += 2;
    }
    assert!(rendered >= 8, "{rendered}");
}

#[test]
fn the_program_view_renders_and_matches_intels_dcfg_to_dot() {
    for (name, profile) in corpus() {
        common::render_dot(&view(&profile, View::Program, &Options::default()), &name);
    }
    let Some(path) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let Some(intel) = common::shared_fixture("dcfg/simple-loop.intel-dcfg-to-dot.dot") else { return };
    let profile = load(path.to_str().unwrap(), None, &ReadOptions::default()).unwrap().profile;
    let options = Options { images: vec!["simple_loop".into()], ..Options::default() };
    let ours = view(&profile, View::Program, &options);
    common::render_dot(&ours, "simple-loop program view of the executable");
    // Every edge Intel's tool drew (it drew main's) is in ours between the same blocks, with
    // the same edge id, kind and count.
    let intel = std::fs::read_to_string(intel).unwrap();
    let mut edges = 0;
    for line in intel.lines().filter(|l| l.contains(" -> ")) {
        let (ends, rest) = line.split_once(" [label=\"").unwrap();
        let (s, t) = ends.split_once(" -> ").unwrap();
        let label = rest.split('"').next().unwrap();
        let expected = format!(
            "p29003_b{} -> p29003_b{} [label=\"{label}\"",
            s.trim().trim_start_matches("node"),
            t.trim().trim_start_matches("node")
        );
        assert!(ours.contains(&expected), "missing {expected}");
        edges += 1;
    }
    assert_eq!(edges, 9);
    for cluster in [
        "cluster_p29003 ",
        "cluster_p29003_i0 ",
        "cluster_p29003_r29 ",
        "label=\"Routine 29\\nname='main'\\naddr=0x40059d\"",
    ] {
        assert!(ours.contains(cluster), "missing {cluster}");
    }
}

/// The whole program of a small C loop with ld.so and libc (1,736 blocks) is laid out in nested
/// clusters that took Graphviz more than five minutes: the largest routines are drawn as one
/// node each, and the picture says which and how to see them.
#[test]
fn the_whole_program_of_simple_loop_collapses_its_largest_routines_and_says_so() {
    let Some(path) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let profile = load(path.to_str().unwrap(), None, &ReadOptions::default()).unwrap().profile;
    let mut findings = Findings::default();
    let text = dot::to_string(&profile, &View::Program, &Options::default(), &mut findings).unwrap();
    let blocks = text
        .lines()
        .filter(|l| l.trim_start().starts_with("p29003_b") && l.contains("[label=") && !l.contains(" -> "))
        .count();
    let collapsed: Vec<&str> = text.lines().filter(|l| l.contains("shape=box3d")).collect();
    assert!(blocks <= dot::MAX_BLOCKS, "{blocks} blocks drawn one by one");
    assert!(!collapsed.is_empty() && collapsed.iter().all(|l| l.contains("blocks collapsed")));
    let note = text.lines().rev().find(|l| l.trim_start().starts_with("label=")).unwrap();
    assert!(
        note.contains(&format!("{} largest routine(s)", collapsed.len())) && note.contains("--max-blocks 0"),
        "{note}"
    );
    assert!(findings.warnings().any(|w| w.to_string().contains("drawn as one node each")));
    // main stays whole; the loader's biggest routine is one node.
    assert!(text.contains("cluster_p29003_r29 "));
    assert!(collapsed.iter().any(|l| l.contains("_dl_relocate_object")), "{collapsed:?}");
    // Edges inside a collapsed routine are inside its node: none joins such a node to itself.
    for line in text.lines().filter(|l| l.contains(" -> ")) {
        let (s, rest) = line.trim().split_once(" -> ").unwrap();
        assert!(!(s.starts_with("p29003_r") && Some(s) == rest.split(' ').next()), "{line}");
    }
    common::render_dot(&text, "simple-loop whole program");
    let all = Options { max_blocks: 0, ..Options::default() };
    let every = view(&profile, View::Program, &all);
    assert!(!every.contains("box3d"));
}

#[test]
fn main_of_simple_loop_shows_its_loop_as_a_cluster_with_the_back_edge_styled() {
    let Some(path) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let profile = load(path.to_str().unwrap(), None, &ReadOptions::default()).unwrap().profile;
    for recompute in [false, true] {
        let options = Options { recompute, ..Options::default() };
        let text = view(&profile, View::Routine { spec: "main".into(), loop_node: None }, &options);
        let cluster = text.split("subgraph cluster_loop_31 {").nth(1).expect("loop cluster");
        let cluster = cluster.split('}').next().unwrap();
        assert!(cluster.contains("b30 [") && cluster.contains("b31 ["), "{cluster}");
        assert!(!cluster.contains("b29 ["));
        let back = text.lines().find(|l| l.trim_start().starts_with("b30 -> b31")).expect("back edge");
        assert!(
            back.contains("label=\"back\\n10\"") && back.contains("#c00000") && back.contains("bold"),
            "{back}"
        );
        assert!(text.contains("b29 [") && text.contains("peripheries=2"), "entry marked");
        assert!(text.contains("simple_loop.c:5-6"), "source lines");
        let svg = common::render_dot(&text, "main");
        assert!(svg.contains("<title>cluster_loop_31</title>"));
        // The same view named by address and by node id.
        for spec in ["0x40059d", "29", "0x4005b5"] {
            let other = view(&profile, View::Routine { spec: spec.into(), loop_node: None }, &options);
            assert_eq!(other, text, "{spec}");
        }
    }
    // The loop alone.
    let text =
        view(&profile, View::Routine { spec: "0x40059d".into(), loop_node: Some(30) }, &Options::default());
    assert!(text.contains("subgraph cluster_loop_31") && !text.contains("b29 ["));
    assert!(text.contains("from main (BB 29)"), "{text}");
    common::render_dot(&text, "loop 30");
}

/// A model whose routine names are full of DOT-special characters.
fn awkward_names() -> Profile {
    let names = [
        "main",
        "std::map<int, std::string>::operator[](int const&)",
        "say \"hello\"",
        "{lambda(int)#1}::operator()",
        "back\\slash\\n",
        "a|b <c> {d}",
        "label=\"x\"]; evil -> node [",
    ];
    let mut image = Image { id: 1, load_addr: 0x1000, ..Image::default() };
    let mut edges = Vec::new();
    for (i, name) in names.iter().enumerate() {
        image.symbols.push(Symbol {
            name: name.to_string(),
            offset: Some(0x100 * i as u64),
            size: Some(0x100),
            file: None,
        });
        for k in 0..2u64 {
            image.blocks.push(Block {
                id: 10 + 2 * i as u64 + k,
                offset: 0x100 * i as u64 + 0x10 * k,
                size: 0x10,
                num_instrs: 3,
                last_instr_offset: 8,
                count: Some(1),
            });
        }
        let b = |k: u32| NodeRef::Block(BlockRef { image: 0, block: 2 * i as u32 + k });
        edges.push(Edge {
            source: b(0),
            target: b(1),
            kind: EdgeKind::FallThrough,
            counts: vec![1].into(),
            ..Edge::default()
        });
        if i > 0 {
            edges.push(Edge {
                source: NodeRef::Block(BlockRef { image: 0, block: 0 }),
                target: b(0),
                kind: EdgeKind::DirectCall,
                counts: vec![1].into(),
                ..Edge::default()
            });
            edges.push(Edge {
                source: b(1),
                target: NodeRef::Block(BlockRef { image: 0, block: 1 }),
                kind: EdgeKind::Return,
                counts: vec![1].into(),
                ..Edge::default()
            });
        }
    }
    let process = Process { pid: 7, images: vec![image], edges, ..Process::default() };
    Profile { processes: vec![process], ..Profile::default() }
}

#[test]
fn routine_names_with_dot_special_characters_render() {
    let profile = awkward_names();
    let svg = common::render_dot(
        &view(&profile, View::Routine { spec: "main".into(), loop_node: None }, &Options::default()),
        "main",
    );
    assert!(svg.contains("std::map&lt;int, std::string&gt;::operator[](int const&amp;)"), "{svg}");
    assert!(svg.contains("say &quot;hello&quot;") || svg.contains("say \"hello\""));
    assert!(svg.contains("back\\slash\\n"));
    let all = Options { node_fraction: 0.0, edge_fraction: 0.0, ..Options::default() };
    let svg = common::render_dot(&view(&profile, View::CallGraph, &all), "call graph");
    assert!(svg.contains("{lambda(int)#1}::operator()"));
    assert!(svg.contains("a|b &lt;c&gt; {d}"));
    for spec in ["a|b <c> {d}", "std::map<int, std::string>::operator[](int const&)"] {
        common::render_dot(
            &view(&profile, View::Routine { spec: spec.into(), loop_node: None }, &Options::default()),
            spec,
        );
    }
    common::render_dot(&view(&profile, View::Program, &Options::default()), "program");
}

#[test]
fn a_callgrind_profile_with_jumps_draws_like_a_dcfg() {
    let path = common::fixture("callgrind/callgrind.out.recursion-loops");
    let profile = load(path.to_str().unwrap(), None, &ReadOptions::default()).unwrap().profile;
    // main holds the (inlined) summing loop as nested clusters, with its back edges styled,
    // and calls to fib and is_even as stubs.
    let text = view(&profile, View::Routine { spec: "main".into(), loop_node: None }, &Options::default());
    assert!(text.contains("subgraph cluster_loop_"), "{text}");
    assert!(text.lines().any(|l| l.contains("label=\"back\\n") && l.contains("#c00000")), "{text}");
    assert!(text.contains("call fib (BB ") && text.contains("call is_even (BB "), "{text}");
    common::render_dot(&text, "callgrind main");
    // Heat by the profile's own event costs.
    let mut findings = Findings::default();
    let by_ir = Options { event: Some("Ir".into()), ..Options::default() };
    let text = dot::to_string(
        &profile,
        &View::Routine { spec: "main".into(), loop_node: None },
        &by_ir,
        &mut findings,
    )
    .unwrap();
    assert!(text.contains("\\nIr: "), "{text}");
    assert!(findings.items.is_empty(), "{findings:?}");
    common::render_dot(&text, "callgrind main by Ir");
    let options = Options { images: vec!["recursion-loops".into()], ..Options::default() };
    common::render_dot(&view(&profile, View::Program, &options), "callgrind program view");
    let text = view(&profile, View::CallGraph, &Options::default());
    assert!(text.contains("fib\\nrecursion-loops"), "{text}");
    common::render_dot(&text, "callgrind call graph");
}
