//! Analyses on real files: dominators and loops recomputed from the edges equal the ones Pin
//! wrote; the call graph accounts for every executed instruction.

use crate::common;
use cfghub::analysis::{callgraph, cfg, routines};
use cfghub::convert::load;
use cfghub::format::ReadOptions;
use cfghub::ir::{Profile, Routine};

fn simple_loop() -> Option<Profile> {
    let path = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2")?;
    Some(load(path.to_str().unwrap(), None, &ReadOptions::default()).unwrap().profile)
}

fn normalized(r: &Routine) -> Routine {
    let mut r = r.clone();
    let mut pairs: Vec<(u32, u32)> = r.nodes.iter().copied().zip(r.idoms.iter().copied()).collect();
    pairs.sort_unstable();
    r.nodes = pairs.iter().map(|p| p.0).collect();
    r.idoms = pairs.iter().map(|p| p.1).collect();
    for l in &mut r.loops {
        l.nodes.sort_unstable();
        l.back_edge_sources.sort_unstable();
    }
    r.loops.sort_by_key(|l| l.head);
    r.exits.sort_unstable();
    r
}

#[test]
fn recomputed_dominators_and_loops_equal_pins_for_every_routine() {
    let Some(profile) = simple_loop() else { return };
    let process = &profile.processes[0];
    let graphs = cfg::build(process);
    let mut routines_checked = 0;
    let mut loops_checked = 0;
    for (i, image) in process.images.iter().enumerate() {
        let given = image.routines.as_ref().expect("Pin writes ROUTINES");
        let mut recomputed: Vec<Routine> =
            given.iter().map(|r| Routine { idoms: vec![], loops: vec![], ..r.clone() }).collect();
        routines::complete(&graphs[i], &mut recomputed);
        for (pin, ours) in given.iter().zip(&recomputed) {
            let (pin, ours) = (normalized(pin), normalized(ours));
            let entry = image.blocks[pin.entry as usize].id;
            assert_eq!(ours.idoms, pin.idoms, "immediate dominators of the routine at node {entry}");
            assert_eq!(ours.loops, pin.loops, "loops of the routine at node {entry}");
            routines_checked += 1;
            loops_checked += pin.loops.len();
        }
    }
    assert_eq!(routines_checked, 132);
    assert_eq!(loops_checked, 117);
}

#[test]
fn discovered_routines_agree_with_pins_where_pin_follows_the_edges() {
    let Some(profile) = simple_loop() else { return };
    let process = &profile.processes[0];
    let ours = routines::all_recomputed(process);
    let mut same = 0;
    let mut total = 0;
    for (i, image) in process.images.iter().enumerate() {
        for pin in image.routines.as_ref().unwrap() {
            total += 1;
            let pin = normalized(pin);
            if ours[i]
                .iter()
                .map(normalized)
                .any(|r| r.entry == pin.entry && r.nodes == pin.nodes && r.idoms == pin.idoms)
            {
                same += 1;
            }
        }
        // Every block is in exactly one discovered routine.
        let mut seen = vec![0u32; image.blocks.len()];
        for r in &ours[i] {
            for &b in &r.nodes {
                seen[b as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "image {i}");
    }
    // Pin splits routines by its symbol-based routine boundaries around a few jumps between
    // functions (PLT stubs, tail calls); everything else matches, dominators included.
    assert!(same >= 125, "{same} of {total} routines agree");
}

#[test]
fn the_call_graph_accounts_for_every_instruction_of_simple_loop() {
    let Some(profile) = simple_loop() else { return };
    let process = &profile.processes[0];
    let g = callgraph::build(&profile, process);
    assert_eq!(g.total_instrs(), cfghub::analysis::executions::executed_instructions(process));
    let main = g.nodes.iter().find(|n| n.name == "main").expect("main is a node");
    // main: blocks 29..33 with 7x1 + 7x10 + 3x11 + 5x1 + 2x1 instructions.
    assert_eq!(main.self_instrs, 7 + 70 + 33 + 5 + 2);
    assert!(main.inclusive_instrs >= main.self_instrs);
    let main_index = g.nodes.iter().position(|n| n.name == "main").unwrap() as u32;
    assert_eq!(g.calls_from(main_index).len(), 2, "main calls printf and exit through the PLT");
    for n in &g.nodes {
        assert!(n.inclusive_instrs >= n.self_instrs, "{}", n.name);
        assert!(n.inclusive_instrs <= g.total_instrs(), "{}", n.name);
    }
}
