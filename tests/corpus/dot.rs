//! DOT: the pictures cfghub draws of real files beside the ones their producer's own tools draw.

use crate::common;

/// Intel's `dcfg-to-dot` draws every edge that enters or leaves a routine: so does
/// `cfghub dot --routine`, each in its own form (internal edges between blocks, a stub per
/// call and per return into the routine, the entry marker naming its callers).
#[test]
fn a_routine_shows_every_edge_intel_dcfg_to_dot_shows() {
    let Some(dcfg) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let Some(intel) = common::shared_fixture("dcfg/simple-loop.intel-dcfg-to-dot.dot") else { return };
    let intel = std::fs::read_to_string(intel).unwrap();
    // Intel draws routine 29 (main): its blocks are the nodes inside cluster_routine29.
    let cluster = intel.split("subgraph cluster_routine29").nth(1).unwrap();
    let cluster = &cluster[..cluster.find('}').unwrap()];
    let blocks: Vec<&str> =
        cluster.lines().filter_map(|l| l.trim().strip_prefix("node")?.split(' ').next()).collect();
    assert_eq!(blocks.len(), 5, "{cluster}");
    // "nodeA -> nodeB [label=\"EDGEn\nKIND\n...\"]" lines touching those blocks.
    let edges: Vec<(String, String, String)> = intel
        .lines()
        .filter_map(|l| {
            let (src, rest) = l.split_once(" -> ")?;
            let dst = rest.split(' ').next()?;
            let kind = rest.split("\\n").nth(1)?;
            Some((
                src.trim_start_matches("node").to_string(),
                dst.trim_start_matches("node").to_string(),
                kind.to_string(),
            ))
        })
        .filter(|(s, t, _)| blocks.contains(&s.as_str()) || blocks.contains(&t.as_str()))
        .collect();
    assert_eq!(edges.len(), 9, "{edges:?}");

    let o = common::run(&["dot", dcfg.to_str().unwrap(), "--routine", "main", "-o", "-"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let ours = common::stdout(&o);
    let drawn: Vec<&str> = ours.lines().filter(|l| l.contains(" -> ")).collect();
    for (s, t, kind) in &edges {
        let (inside_s, inside_t) = (blocks.contains(&s.as_str()), blocks.contains(&t.as_str()));
        let found = match (inside_s, inside_t) {
            (true, true) => drawn.iter().any(|l| l.trim().starts_with(&format!("b{s} -> b{t} "))),
            (true, false) => {
                // A call stub names the callee's block.
                let stubs: Vec<&str> = drawn
                    .iter()
                    .filter(|l| l.trim().starts_with(&format!("b{s} -> call")))
                    .filter_map(|l| l.split(" -> ").nth(1)?.split(' ').next())
                    .collect();
                stubs
                    .iter()
                    .any(|stub| ours.contains(&format!("{stub} [")) && ours.contains(&format!("(BB {t})")))
            }
            (false, true) if kind.contains("RETURN") => {
                drawn.iter().any(|l| l.trim().starts_with("ret") && l.contains(&format!("-> b{t} ")))
            }
            (false, true) => {
                let entry = ours.lines().find(|l| l.trim().starts_with("entry [")).unwrap_or("");
                drawn.iter().any(|l| l.trim().starts_with(&format!("entry -> b{t} ")))
                    && entry.contains("from __libc_start_main")
            }
            (false, false) => unreachable!(),
        };
        assert!(found, "edge {s} -> {t} ({kind}) of Intel's picture is missing:\n{ours}");
    }
    assert_eq!(drawn.len(), edges.len(), "one drawn edge per edge of Intel's picture:\n{ours}");
}
