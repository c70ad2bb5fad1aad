//! CSI helpers shared by the integration tests: the model of `.debug_PT` text up to order,
//! and the decoding check of every routine's path numbering.

use std::collections::HashSet;

use cfghub::analysis::ball_larus::ArcKind;
use cfghub::analysis::{path_graph, routines};
use cfghub::ir::{LineItem, NodeRef, Profile};

/// One function as `.debug_PT` states it, blocks and edges sorted: (name, blocks (id, role,
/// line items), edges (source id, target id, increment, weight, back)).
pub type Function = (String, Vec<(u64, u8, Vec<LineItem>)>, Vec<(u64, u64, i64, i64, bool)>);

/// The functions of a profile read from CSI metadata, sorted: equal for two texts that differ
/// only in the order of functions, blocks and edges.
pub fn canonical(profile: &Profile) -> Vec<Function> {
    let mut out = Vec::new();
    for p in &profile.processes {
        for (ii, image) in p.images.iter().enumerate() {
            for r in image.routines.as_deref().unwrap_or(&[]) {
                let name =
                    image.symbols[r.symbol.expect("CSI routines name their symbol") as usize].name.clone();
                let mut blocks: Vec<(u64, u8, Vec<LineItem>)> = r
                    .nodes
                    .iter()
                    .map(|&b| {
                        let role = if b == r.entry {
                            1
                        } else if r.exits.contains(&b) {
                            2
                        } else {
                            0
                        };
                        (
                            image.display_id(b),
                            role,
                            image.lines_of(b).map(|l| l.items.clone()).unwrap_or_default(),
                        )
                    })
                    .collect();
                blocks.sort();
                let inside: HashSet<u32> = r.nodes.iter().copied().collect();
                let mut edges: Vec<(u64, u64, i64, i64, bool)> = p
                    .edges
                    .iter()
                    .filter_map(|e| match (e.source, e.target) {
                        (NodeRef::Block(s), NodeRef::Block(t))
                            if s.image as usize == ii && inside.contains(&s.block) =>
                        {
                            let n = e.path().copied().unwrap_or_default();
                            Some((
                                image.display_id(s.block),
                                image.display_id(t.block),
                                n.increment,
                                n.weight,
                                n.back,
                            ))
                        }
                        _ => None,
                    })
                    .collect();
                edges.sort();
                out.push((name, blocks, edges));
            }
        }
    }
    out.sort();
    out
}

/// Checks every routine of `profile` with at most `max_paths` paths: the numbers `0..N` decode
/// to N distinct node sequences, each a path of the acyclic graph (from the entry, or from a
/// back edge's target; to the exit, or to a back edge's source) whose arc weights sum to its
/// number; when the numbers are stated and the path ends at the exit, the increments too.
/// Returns (routines checked, paths checked).
pub fn check_decoding(profile: &Profile, max_paths: u64) -> (usize, u64) {
    let (mut routines_checked, mut paths_checked) = (0, 0);
    for p in &profile.processes {
        let all = routines::all(p);
        for (ii, _) in p.images.iter().enumerate() {
            for (k, rp) in path_graph::routine_paths(p, ii, &all[ii]).iter().enumerate() {
                let dag = match rp.dag() {
                    Ok(d) => d,
                    Err(e) => panic!("routine {k} of image {ii}: {e}"),
                };
                let n = dag.paths();
                if n > max_paths {
                    continue;
                }
                routines_checked += 1;
                let mut seen = HashSet::new();
                for number in 0..n as i64 {
                    let d = dag.decode(number).unwrap();
                    assert!(!d.nodes.is_empty());
                    let mut weight = 0i64;
                    let mut increment = 0i64;
                    let first = d.nodes[0];
                    if d.after_back_edge {
                        let a = dag
                            .arcs(dag.entry)
                            .iter()
                            .find(|a| a.target == first && matches!(a.kind, ArcKind::Start(_)))
                            .unwrap_or_else(|| {
                                panic!("path {number} starts at {first}, no back edge enters it")
                            });
                        weight += a.weight;
                        increment += a.increment;
                    } else {
                        assert_eq!(first, dag.entry, "path {number} does not start at the entry");
                    }
                    for w in d.nodes.windows(2) {
                        let a = dag
                            .arcs(w[0])
                            .iter()
                            .find(|a| a.target == w[1] && matches!(a.kind, ArcKind::Edge(_)))
                            .unwrap_or_else(|| panic!("path {number}: no edge {} -> {}", w[0], w[1]));
                        weight += a.weight;
                        increment += a.increment;
                    }
                    let last = *d.nodes.last().unwrap();
                    if d.ends_at_back_edge {
                        let a =
                            dag.arcs(last).iter().find(|a| matches!(a.kind, ArcKind::End(_))).unwrap_or_else(
                                || panic!("path {number} ends at {last}, which has no back edge"),
                            );
                        weight += a.weight;
                    } else {
                        assert_eq!(last, dag.exit, "path {number} does not end at the exit");
                        assert_eq!(increment, number, "path {number}: increments sum to {increment}");
                    }
                    assert_eq!(weight, number, "path {number}: weights sum to {weight}");
                    assert!(
                        seen.insert((d.after_back_edge, d.ends_at_back_edge, d.nodes)),
                        "path {number} repeats"
                    );
                    paths_checked += 1;
                }
            }
        }
    }
    (routines_checked, paths_checked)
}
