//! GraphML: NetworkX reads what cfghub writes, with the model's node and edge counts and
//! typed attributes.

use std::process::Command;

use crate::common;

fn networkx_summary(path: &std::path::Path) -> serde_json::Value {
    common::require("python3");
    let script = r#"
import json, sys, networkx
g = networkx.read_graphml(sys.argv[1])
attrs = {n: d for n, d in g.nodes(data=True)}
print(json.dumps({
  "nodes": g.number_of_nodes(),
  "edges": g.number_of_edges(),
  "directed": g.is_directed(),
  "node": attrs.get(sys.argv[2]),
  "back": sorted([u, v] for u, v, d in g.edges(data=True) if d.get("back_edge") is True),
}))
"#;
    let out = Command::new("python3").arg("-c").arg(script).arg(path).arg("p29003_b30").output().unwrap();
    assert!(
        out.status.success(),
        "networkx failed (pip install networkx; CI installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn model_counts(path: &str) -> (usize, usize) {
    let p = cfghub::convert::load(path, None, &Default::default()).unwrap().profile;
    let mut nodes = 0;
    let mut edges = 0;
    for process in &p.processes {
        nodes += process.images.iter().map(|i| i.blocks.len()).sum::<usize>();
        let mut specials = std::collections::HashSet::new();
        for e in &process.edges {
            for r in [e.source, e.target] {
                if !matches!(r, cfghub::ir::NodeRef::Block(_)) {
                    specials.insert(r);
                }
            }
        }
        nodes += specials.len();
        edges += process.edges.len();
    }
    (nodes, edges)
}

#[test]
fn networkx_reads_the_graph_with_the_models_counts() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs =
        vec![common::fixture("dcfg/hello-world.dcfg.json"), common::fixture("dcfg/two-processes.dcfg.json")];
    inputs.extend(common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2"));
    for input in inputs {
        let input = input.to_str().unwrap().to_string();
        let out = dir.path().join("g.graphml");
        let o = common::run(&["convert", &input, "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let summary = networkx_summary(&out);
        let (nodes, edges) = model_counts(&input);
        assert_eq!(summary["nodes"], nodes, "{input}");
        assert_eq!(summary["edges"], edges, "{input}");
        assert_eq!(summary["directed"], true);
        if input.contains("simple-loop") {
            let b30 = &summary["node"];
            assert_eq!(b30["node_id"], 30);
            assert_eq!(b30["count"], 10);
            assert_eq!(b30["instrs"], 7);
            assert_eq!(b30["routine"], "main");
            assert_eq!(b30["loop_head"], 31);
            assert_eq!(b30["address"], "0x4005b5");
            assert_eq!(b30["source"], "simple_loop.c:5-6");
            assert_eq!(b30["is_loop_head"], false);
            let back = summary["back"].as_array().unwrap();
            assert!(back.contains(&serde_json::json!(["p29003_b30", "p29003_b31"])), "{back:?}");
        }
    }
}
