//! Callgrind: every real file reads, with what its producer meant.

use crate::common;
use cfghub::ir::{EdgeKind, NodeRef, Profile};

fn load(relative: &str) -> Option<Profile> {
    let path = common::shared_fixture(relative)?;
    let loaded = cfghub::convert::load(path.to_str().unwrap(), None, &Default::default()).unwrap();
    assert_eq!(loaded.format.name(), "callgrind", "{relative} is detected as Callgrind");
    Some(loaded.profile)
}

fn symbol_name(p: &Profile, node: NodeRef) -> String {
    match node {
        NodeRef::Symbol(s) => p.processes[0].images[s.image as usize].symbols[s.symbol as usize].name.clone(),
        other => panic!("not a symbol: {other:?}"),
    }
}

/// Self cost of a function: the sum of its cost lines for event 0.
fn self_cost(p: &Profile, name: &str) -> u64 {
    let mut sum = 0;
    for image in &p.processes[0].images {
        for c in &image.costs {
            if image.symbols[c.symbol.unwrap() as usize].name == name {
                sum += c.value(0);
            }
        }
    }
    sum
}

#[test]
fn every_shared_callgrind_file_reads() {
    let Some(dir) = common::shared_fixture("callgrind") else { return };
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let o = common::run(&["info", "--json", path.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", path.display(), common::stderr(&o));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(report["format"], "callgrind");
        n += 1;
    }
    assert!(n >= 5);
}

#[test]
fn recursive_inclusive_cost_is_kept_as_stated() {
    let Some(p) = load("callgrind/recursive-cost.callgrind") else { return };
    assert_eq!(p.events[0].name, "Ir");
    assert_eq!(self_cost(&p, "main"), 2);
    assert_eq!(self_cost(&p, "recur"), 7);
    let calls: Vec<(String, String, u64, Vec<u64>)> = p.processes[0]
        .edges
        .iter()
        .map(|e| (symbol_name(&p, e.source), symbol_name(&p, e.target), e.total(), e.inclusive().to_vec()))
        .collect();
    assert_eq!(
        calls,
        [("main".into(), "recur".into(), 1, vec![7]), ("recur".into(), "recur".into(), 2, vec![5])]
    );
    let site = p.processes[0].edges[1].site().unwrap();
    assert_eq!((site.source_line(), site.target_line(), site.source_offset()), (Some(10), Some(10), None));
}

#[test]
fn a_call_counted_zero_times_keeps_its_cost() {
    let Some(p) = load("callgrind/zero-call-count.callgrind") else { return };
    let e = &p.processes[0].edges[0];
    assert_eq!((e.kind, e.total(), e.inclusive().to_vec()), (EdgeKind::Call, 0, vec![7]));
}

#[test]
fn pprof_files_with_names_in_brackets_and_no_object() {
    let Some(p) = load("callgrind/internal_driver_testdata_pprof.cpu.call_tree.callgrind") else { return };
    assert_eq!(p.events[0].name, "cpu(ms)");
    let image = &p.processes[0].images[0];
    assert_eq!(p.image_name(image), "/path/to/testbinary");
    assert!(image.symbols.iter().any(|s| s.name == "line2000 [1/2]"), "{:?}", image.symbols);
    assert_eq!(self_cost(&p, "line1000"), 1100);
    // Relative targets are based on the last cost line, not on the previous target.
    let e = p.processes[0].edges.iter().find(|e| symbol_name(&p, e.target) == "line1000 [1/2]").unwrap();
    let site = e.site().unwrap();
    assert_eq!((site.source_offset(), site.target_offset()), (Some(0x2000), Some(0x1000)));
    assert_eq!(e.inclusive(), [1000]);
    // A function whose rows cost nothing at an address another function's costs hold (line2000
    // at line2001's 0x2000) gets no address: given one, a reader of addresses would hand it
    // line2001's costs.
    let f = image.symbols.iter().find(|s| s.name == "line2000").unwrap();
    assert_eq!(f.offset, None);
    let g = image.symbols.iter().find(|s| s.name == "line2001").unwrap();
    assert_eq!(g.offset, Some(0x2000));

    let Some(heap) = load("callgrind/internal_driver_testdata_pprof.heap.callgrind") else { return };
    // `ob=` with no name: an image without a file.
    assert_eq!(heap.processes[0].images.len(), 1);
    assert_eq!(heap.processes[0].images[0].file, None);
}

#[test]
fn valgrind_profile_becomes_a_control_flow_graph() {
    let path = common::fixture("callgrind/callgrind.out.recursion-loops");
    let p = cfghub::convert::load(path.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    assert_eq!(p.meta.creator.as_deref(), Some("callgrind-3.19.0"));
    assert_eq!(p.meta.command.as_deref(), Some("./recursion-loops"));
    let process = &p.processes[0];
    assert_eq!(process.pid, 25584);
    // The costs add up to the summary; the blocks to the same but for the PLT stubs Valgrind
    // skips and charges to the calling instructions (20 instructions in this run).
    let costs: u64 = process.images.iter().flat_map(|i| &i.costs).map(|c| c.value(0)).sum();
    assert_eq!(costs, 212_633);
    assert_eq!(cfghub::analysis::executions::executed_instructions(process), 212_613);
    // Recursion levels stay functions of their own, over the same code.
    let exe = process.images.iter().find(|i| p.image_name(i) == "./recursion-loops").unwrap();
    let fib = exe.symbols.iter().find(|s| s.name == "fib").unwrap();
    let fib2 = exe.symbols.iter().find(|s| s.name == "fib'2").unwrap();
    assert!(fib.offset.is_some());
    assert_eq!(fib2.offset, None);
    // fib's routine: its blocks run 10 + 4640 times at the entry (main's calls + recursion).
    let routines = exe.routines.as_ref().unwrap();
    let r = routines.iter().find(|r| Some(exe.blocks[r.entry as usize].offset) == fib.offset).unwrap();
    assert_eq!(exe.blocks[r.entry as usize].count, Some(4650));
    // Loops: the loop in main (inlined `loop`) has a back edge taken 9990 times.
    let back: u64 = process
        .edges
        .iter()
        .filter(|e| e.kind == EdgeKind::ConditionalBranch)
        .filter_map(|e| match (e.source, e.target) {
            (NodeRef::Block(s), NodeRef::Block(t))
                if s == t || exe.blocks.get(t.block as usize).is_some() =>
            {
                Some(e.total())
            }
            _ => None,
        })
        .max()
        .unwrap();
    assert!(back >= 9_980, "{back}");
    // Calls carry Valgrind's inclusive costs.
    let call = process.edges.iter().find(|e| e.kind == EdgeKind::Call && !e.inclusive().is_empty()).unwrap();
    assert!(call.inclusive()[0] > 0);
    // Flow into fib's entry: the calls from main and from the recursion, nothing else.
    let exe_index = process.images.iter().position(|i| std::ptr::eq(i, exe)).unwrap() as u32;
    let entry = cfghub::ir::BlockRef { image: exe_index, block: r.entry };
    let into: u64 =
        process.edges.iter().filter(|e| e.target == NodeRef::Block(entry)).map(|e| e.total()).sum();
    assert_eq!(into, 4650);
    let calls: u64 = process
        .edges
        .iter()
        .filter(|e| e.target == NodeRef::Block(entry) && e.kind == EdgeKind::Call)
        .map(|e| e.total())
        .sum();
    assert_eq!(calls, 4650);
}
