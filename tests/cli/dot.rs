//! `cfghub dot`: outputs by name, Graphviz rendering, clear refusals with exit status 2.

use crate::common;

fn hello() -> String {
    common::fixture("dcfg/hello-world.dcfg.json").to_str().unwrap().to_string()
}

#[test]
fn dot_writes_dot_svg_and_png_by_output_name() {
    common::require("dot");
    let dir = tempfile::tempdir().unwrap();
    let input = hello();
    for (name, magic) in [("main.dot", &b"digraph"[..]), ("main.svg", b"<?xml"), ("main.png", b"\x89PNG")] {
        let out = dir.path().join(name);
        let o = common::run(&["dot", &input, "--routine", "main", "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", common::stderr(&o));
        let bytes = std::fs::read(&out).unwrap();
        assert!(bytes.starts_with(magic), "{name}");
    }
    let o = common::run(&["dot", &input, "--callgraph", "--node-fraction", "0"]);
    assert!(o.status.success());
    assert!(common::stdout(&o).starts_with("digraph \"callgraph\""));
    let o = common::run(&["dot", &input]);
    assert!(common::stdout(&o).contains("subgraph cluster_p"));
}

#[test]
fn missing_graphviz_is_exit_2_with_install_instructions_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("main.svg");
    let o = common::cfghub()
        .env("GRAPHVIZ_DOT", "/nonexistent/dot")
        .args(["dot", &hello(), "--routine", "main", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = common::stderr(&o);
    assert!(err.contains("Graphviz") && err.contains("apt-get install graphviz"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no partial output");
}

#[test]
fn unknown_routines_and_loops_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.dot");
    let out = out.to_str().unwrap();
    let input = hello();
    for (args, expected) in [
        (vec!["--routine", "no_such_function"], "no routine matches 'no_such_function'"),
        (vec!["--routine", "0xdeadbeef"], "no routine matches"),
        (vec!["--routine", "0xZZ"], "not a hexadecimal address"),
        (vec!["--routine", "main", "--event", "cycles"], "no event 'cycles'"),
        (vec!["--callgraph", "--node-fraction", "2"], "not a fraction"),
    ] {
        let mut all = vec!["dot", input.as_str(), "-o", out];
        all.extend(args.iter().copied());
        let o = common::run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(common::stderr(&o).contains(expected), "{args:?}: {}", common::stderr(&o));
        assert!(!std::path::Path::new(out).exists());
    }
}

#[test]
fn a_loop_view_needs_a_block_in_a_loop() {
    let input = hello();
    let o = common::run(&["dot", &input, "--routine", "main", "--loop", "999999"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("--loop 999999"), "{}", common::stderr(&o));
}
