//! Callgrind: read -> write -> read gives an equal model on every real file; a generated model
//! written and read back equals itself; a generated DCFG written as Callgrind keeps every
//! instruction count.

use std::collections::HashMap;

use crate::common;
use cfghub::analysis::{callgraph, executions};
use cfghub::convert::{read_with, write_to_vec};
use cfghub::format::WriteOptions;
use cfghub::formats::callgrind::FORMAT as Callgrind;
use cfghub::ir::{
    Cost, Edge, EdgeDetails, EdgeKind, Event, Image, NodeRef, Process, Profile, Site, Symbol, SymbolRef,
};
use cfghub::synth::{generate, SynthSpec};
use proptest::prelude::*;

fn write(profile: &Profile, options: &WriteOptions) -> Vec<u8> {
    write_to_vec(&Callgrind, profile, options).unwrap().0
}

fn read(bytes: &[u8]) -> Profile {
    let (p, findings) = read_with(&Callgrind, &mut &bytes[..]).unwrap();
    assert!(!findings.has_violations(), "{:?}", findings.items);
    p
}

fn load(path: &std::path::Path) -> Profile {
    cfghub::convert::load(path.to_str().unwrap(), Some("callgrind"), &Default::default()).unwrap().profile
}

/// Asserts two models are equal, naming the first difference briefly (the models are large).
fn assert_same(a: &Profile, b: &Profile, what: &str) {
    fn first<T: PartialEq + std::fmt::Debug>(x: &[T], y: &[T], what: &str) {
        if let Some(i) = (0..x.len().min(y.len())).find(|&i| x[i] != y[i]) {
            panic!("{what}[{i}]: {:?}\n  != {:?}", x[i], y[i]);
        }
        assert_eq!(x.len(), y.len(), "{what}: lengths");
    }
    assert_eq!(a.meta, b.meta, "{what}: meta");
    assert_eq!(a.events, b.events, "{what}: events");
    first(
        &a.files.iter().collect::<Vec<_>>(),
        &b.files.iter().collect::<Vec<_>>(),
        &format!("{what}: files"),
    );
    assert_eq!(a.processes.len(), b.processes.len(), "{what}: processes");
    for (p, (x, y)) in a.processes.iter().zip(&b.processes).enumerate() {
        assert_eq!(x.pid, y.pid);
        assert_eq!(x.images.len(), y.images.len(), "{what}: process {p} images");
        for (i, (u, v)) in x.images.iter().zip(&y.images).enumerate() {
            let w = format!("{what}: process {p} image {i}");
            assert_eq!((u.id, u.file, u.load_addr, u.size), (v.id, v.file, v.load_addr, v.size), "{w}");
            first(&u.symbols, &v.symbols, &format!("{w} symbols"));
            first(&u.source_lines, &v.source_lines, &format!("{w} source_lines"));
            first(&u.blocks, &v.blocks, &format!("{w} blocks"));
            first(
                u.routines.as_deref().unwrap_or(&[]),
                v.routines.as_deref().unwrap_or(&[]),
                &format!("{w} routines"),
            );
            assert_eq!(u.routines.is_some(), v.routines.is_some(), "{w} routines");
            first(
                &u.costs.iter().collect::<Vec<_>>(),
                &v.costs.iter().collect::<Vec<_>>(),
                &format!("{w} costs"),
            );
        }
        first(&x.edges, &y.edges, &format!("{what}: process {p} edges"));
        assert_eq!(x, y, "{what}: process {p}");
    }
    assert!(a == b, "{what}");
}

fn callgrind_files() -> Vec<std::path::PathBuf> {
    let mut paths = vec![common::fixture("callgrind/callgrind.out.recursion-loops")];
    if let Some(dir) = common::shared_fixture("callgrind") {
        let mut shared: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        shared.sort();
        paths.extend(shared);
    }
    paths
}

#[test]
fn every_callgrind_fixture_survives_write_and_read() {
    for path in callgrind_files() {
        let first = load(&path);
        let bytes = write(&first, &WriteOptions::default());
        let second = read(&bytes);
        assert_same(&second, &first, &path.display().to_string());
        // And the written file is a fixed point.
        assert_eq!(write(&second, &WriteOptions::default()), bytes, "{}", path.display());
    }
}

#[test]
fn valgrind_blocks_survive_write_and_read() {
    // The file with jumps becomes blocks, routines and a control-flow graph; all of it is
    // rebuilt identically from the written file.
    let first = load(&common::fixture("callgrind/callgrind.out.recursion-loops"));
    let p = &first.processes[0];
    assert!(p.images.iter().any(|i| !i.blocks.is_empty()));
    assert!(p.edges.iter().any(|e| e.kind == EdgeKind::ConditionalBranch));
    assert!(p.edges.iter().any(|e| e.kind == EdgeKind::Return));
    let second = read(&write(&first, &WriteOptions::default()));
    assert_same(&second, &first, "recursion-loops");
}

/// A function-level model (no blocks), the shape Callgrind expresses exactly.
fn function_model(
    names: Vec<String>,
    costs: Vec<(usize, u64, u32, u64, u64)>,
    calls: Vec<(usize, usize, u64, u64)>,
    jumps: Vec<(usize, usize, u64, u64)>,
    with_instr: bool,
) -> Profile {
    let mut profile = Profile::default();
    profile.meta.format_version = Some((1, 0));
    profile.meta.creator = Some("proptest".into());
    profile.meta.command = Some("./app --flag".into());
    profile.events =
        vec![Event { name: "Ir".into(), description: Some("Instruction Fetch".into()) }, Event::new("Dr")];
    let src = profile.files.intern("app.c");
    let obj = profile.files.intern("/bin/app");
    let mut image = Image { id: 0, file: Some(obj), ..Image::default() };
    for n in &names {
        image.symbols.push(Symbol { name: n.clone(), file: Some(src), ..Symbol::default() });
    }
    for (s, offset, line, ir, dr) in costs {
        image.costs.push(Cost {
            symbol: Some(s as u32),
            offset: with_instr.then_some(0x1000 + offset),
            file: Some(src),
            line: Some(line),
            values: smallvec::smallvec![ir, dr],
        });
    }
    let node = |s: usize| NodeRef::Symbol(SymbolRef { image: 0, symbol: s as u32 });
    let mut edges = Vec::new();
    for (from, to, count, incl) in calls {
        edges.push(Edge {
            id: edges.len() as u64 + 1,
            source: node(from),
            target: node(to),
            kind: EdgeKind::Call,
            counts: vec![count].into(),
            details: EdgeDetails::boxed(
                vec![incl, incl / 2],
                Some(Site::new(
                    with_instr.then_some(0x1000 + count % 64),
                    Some(7),
                    with_instr.then_some(0x1000 + 2 * to as u64),
                    Some(3),
                )),
            ),
        });
    }
    for (from, to, taken, not_taken) in jumps {
        let site = Site::new(
            with_instr.then_some(0x1100 + taken % 32),
            Some(9),
            with_instr.then_some(0x1200),
            Some(11),
        );
        edges.push(Edge {
            id: edges.len() as u64 + 1,
            source: node(from),
            target: node(to),
            kind: if not_taken > 0 { EdgeKind::ConditionalBranch } else { EdgeKind::UnconditionalBranch },
            counts: vec![taken].into(),
            details: EdgeDetails::boxed(Vec::new(), Some(site.clone())),
        });
        if not_taken > 0 {
            edges.push(Edge {
                id: edges.len() as u64 + 1,
                source: node(from),
                target: node(from),
                kind: EdgeKind::FallThrough,
                counts: vec![not_taken].into(),
                details: EdgeDetails::boxed(Vec::new(), Some(site.without_target())),
            });
        }
    }
    profile.processes.push(Process { pid: 77, images: vec![image], edges, ..Process::default() });
    profile
}

/// What the reader derives from the file and the model above leaves open: the symbols' address
/// ranges (from call targets and costs).
fn without_extents(mut p: Profile) -> Profile {
    for process in &mut p.processes {
        for image in &mut process.images {
            for s in &mut image.symbols {
                s.offset = None;
                s.size = None;
            }
        }
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn generated_function_level_models_round_trip(
        nfun in 1usize..6,
        names in proptest::collection::vec("[a-z_][a-z0-9_:<>]{0,12}( \\[[0-9]/[0-9]\\])?", 6),
        costs in proptest::collection::vec((0usize..6, 0u64..5000, 1u32..400, 0u64..1u64 << 40, 0u64..100), 0..40),
        calls in proptest::collection::vec((0usize..6, 0usize..6, 0u64..1000, 0u64..1u64 << 40), 0..12),
        jumps in proptest::collection::vec((0usize..6, 0usize..6, 1u64..1000, 0u64..1000), 0..12),
        with_instr in any::<bool>(),
    ) {
        // Distinct names; a trailing "'N" would read as a recursion level, so none is generated.
        let mut uniq: Vec<String> = Vec::new();
        for (i, n) in names.into_iter().take(nfun).enumerate() {
            uniq.push(format!("{n}{i}"));
        }
        let k = uniq.len();
        let costs = costs.into_iter().map(|(s, o, l, a, b)| (s % k, o, l, a, b)).collect();
        let calls = calls.into_iter().map(|(a, b, c, i)| (a % k, b % k, c, i)).collect();
        // Jumps with instruction addresses make the reader rebuild blocks (tested on real files).
        let jumps = if with_instr { Vec::new() } else { jumps.into_iter().map(|(a, b, c, n)| (a % k, b % k, c, n)).collect() };
        let model = function_model(uniq, costs, calls, jumps, with_instr);
        let back = read(&write(&model, &WriteOptions::default()));
        prop_assert_eq!(without_extents(back), model);
    }
}

/// Instructions per routine name in a Callgrind model read back: the sum of its `Ir` costs.
fn ir_by_function(p: &Profile) -> HashMap<String, u64> {
    let ir = p.event_index("Ir").unwrap();
    let mut m = HashMap::new();
    for image in &p.processes[0].images {
        for c in &image.costs {
            let name = image.symbols[c.symbol.unwrap() as usize].name.clone();
            *m.entry(name).or_default() += c.value(ir);
        }
    }
    m
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn generated_dcfgs_keep_every_instruction(seed in 0u64..1000, threads in 1usize..4) {
        let synth = generate(&SynthSpec {
            seed, threads, images: 2, routines_per_image: 5, steps_per_thread: 3000, ..SynthSpec::default()
        });
        let model = synth.profile;
        let process = &model.processes[0];
        let graph = callgraph::build(&model, process);
        let (bytes, findings) = write_to_vec(&Callgrind, &model, &WriteOptions::default()).unwrap();
        if threads > 1 {
            prop_assert!(findings.items.iter().any(|f| f.message.contains("--per-thread")));
        }
        let back = read(&bytes);
        let by_fn = ir_by_function(&back);
        prop_assert_eq!(by_fn.values().sum::<u64>(), executions::executed_instructions(process));
        let mut expected: HashMap<String, u64> = HashMap::new();
        for n in &graph.nodes {
            if n.self_instrs > 0 {
                *expected.entry(n.name.clone()).or_default() += n.self_instrs;
            }
        }
        let got: HashMap<String, u64> = by_fn.into_iter().filter(|(_, v)| *v > 0).collect();
        prop_assert_eq!(got, expected);
        // Calls: as many as the call edges say, to the same callees.
        let calls: u64 = process.edges.iter().filter(|e| e.kind.is_call() && matches!(e.source, NodeRef::Block(_))).map(Edge::total).sum();
        let back_calls: u64 = back.processes[0].edges.iter().filter(|e| e.kind == EdgeKind::Call).map(Edge::total).sum();
        prop_assert_eq!(back_calls, calls);

        // One part per thread: the parts add up to the whole, and each carries its thread's calls.
        let per_thread = write(&model, &WriteOptions::default().with(cfghub::formats::callgrind::Options { per_thread: true }));
        let text = String::from_utf8(per_thread.clone()).unwrap();
        prop_assert_eq!(text.matches("\nthread: ").count(), if threads > 1 { threads } else { 0 });
        let back = read(&per_thread);
        prop_assert_eq!(ir_by_function(&back).values().sum::<u64>(), executions::executed_instructions(process));
        for t in 0..threads {
            let want: u64 = process.edges.iter().filter(|e| e.kind.is_call() && matches!(e.source, NodeRef::Block(_))).map(|e| e.counts.get(t).copied().unwrap_or(0)).sum();
            let got: u64 = back.processes[0].edges.iter().filter(|e| e.kind == EdgeKind::Call).map(|e| if threads > 1 { e.counts.get(t).copied().unwrap_or(0) } else { e.total() }).sum();
            prop_assert_eq!(got, want, "thread {}", t);
        }
    }
}

#[test]
fn lines_split_across_buffer_fills_read_the_same() {
    for path in callgrind_files() {
        let bytes = std::fs::read(&path).unwrap();
        let whole = read(&bytes);
        for capacity in [1, 7, 64] {
            let mut reader = std::io::BufReader::with_capacity(capacity, bytes.as_slice());
            let (split, _) = read_with(&Callgrind, &mut reader).unwrap();
            assert_same(&split, &whole, &format!("{} with a {capacity}-byte buffer", path.display()));
        }
        // Windows line ends and a missing final line end change nothing.
        let crlf = String::from_utf8(bytes.clone()).unwrap().replace('\n', "\r\n");
        assert_same(&read(crlf.trim_end().as_bytes()), &whole, &format!("{} with CRLF", path.display()));
    }
}

#[test]
fn costs_of_other_events_become_further_columns() {
    // A DCFG with DCPI samples merged in: Ir from the blocks, cycles from the costs.
    let mut model =
        generate(&SynthSpec { threads: 1, steps_per_thread: 2000, ..SynthSpec::default() }).profile;
    model.events = vec![Event { name: "cycles".into(), description: Some("CPU cycles".into()) }];
    let image = &mut model.processes[0].images[0];
    let offsets: Vec<u64> = image.blocks.iter().map(|b| b.offset).take(6).collect();
    for (i, offset) in offsets.iter().enumerate() {
        image.costs.push(Cost {
            offset: Some(*offset),
            values: vec![100 + i as u64].into(),
            ..Cost::default()
        });
    }
    let bytes = write(&model, &WriteOptions::default());
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("\nevents: Ir cycles\n"), "{}", &text[..400.min(text.len())]);
    assert!(text.contains("event: cycles : CPU cycles\n"));
    let back = read(&bytes);
    let cycles = back.event_index("cycles").unwrap();
    let ir = back.event_index("Ir").unwrap();
    let sum = |e: usize| -> u64 {
        back.processes[0].images.iter().flat_map(|i| &i.costs).map(|c| c.value(e)).sum()
    };
    assert_eq!(sum(cycles), (0..6).map(|i| 100 + i).sum::<u64>());
    assert_eq!(sum(ir), executions::executed_instructions(&model.processes[0]));
}
