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
    // `convert -o x.dot` writes the whole-program view, `-o x.graphml` the GraphML.
    let out = dir.path().join("app.dot");
    let o = common::run(&["convert", &input, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("digraph \"dcfg\"") && text.contains("subgraph cluster_p13723_i0 "), "{text}");
    let out = dir.path().join("app.graphml");
    let o = common::run(&["convert", &input, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(std::fs::read_to_string(&out).unwrap().contains("<graphml"));
}

/// Samples per address (DCPI) hold no control flow: the picture is empty, and a warning says
/// what was left out and what shows it. Stacks (folded) are drawn as their call graph, in
/// either view, silently.
#[test]
fn profiles_without_blocks_draw_nothing_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let folded = dir.path().join("app.folded");
    std::fs::write(&folded, "main;work 3\nmain 1\n").unwrap();
    let dcpi = common::fixture("dcpi/alpha-cycles.dcpi");
    for view in [&[][..], &["--callgraph"]] {
        let mut args = vec!["dot", dcpi.to_str().unwrap(), "-o", "-"];
        args.extend_from_slice(view);
        let o = common::run(&args);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let err = common::stderr(&o);
        assert!(
            err.contains("no basic blocks") && err.contains("0 call stack(s) and 12 cost"),
            "{view:?}: {err}"
        );
        let mut args = vec!["dot", folded.to_str().unwrap(), "-o", "-"];
        args.extend_from_slice(view);
        let o = common::run(&args);
        assert!(o.status.success(), "{}", common::stderr(&o));
        assert_eq!(common::stderr(&o), "", "{view:?}");
        let picture = common::stdout(&o);
        assert!(
            picture.contains("label=\"main\\n1 (25.00%)\\nof 4 (100.00%)\"")
                && picture.contains("main -> work (3)"),
            "{picture}"
        );
    }
    // A profile with blocks says nothing of the kind.
    let o = common::run(&["dot", &hello(), "-o", "-"]);
    assert!(!common::stderr(&o).contains("no basic blocks"), "{}", common::stderr(&o));
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

/// `--routine` takes names as users type them: a C++ method without its parameters and
/// qualifiers, a function template's bare name, part of a name, a regular expression; names
/// that match several routines are listed, a slip gets the nearest name; a profile of stacks
/// alone is told it has no basic blocks and how to record them.
#[test]
fn routines_are_found_by_the_names_users_type() {
    common::require("g++");
    common::require("valgrind");
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("classes");
    let cc = std::process::Command::new("g++")
        .args(["-O1", "-g", "-gdwarf-4", "-o"])
        .arg(&binary)
        .arg(common::fixture("callgrind/classes.cc"))
        .status()
        .unwrap();
    assert!(cc.success());
    let profile = dir.path().join("callgrind.out.classes");
    let vg = std::process::Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes"])
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(&binary)
        .arg("100")
        .output()
        .unwrap();
    assert!(vg.status.success(), "{}", String::from_utf8_lossy(&vg.stderr));
    let out = dir.path().join("x.dot");
    let dot = |routine: &str| {
        common::run(&["dot", profile.to_str().unwrap(), "--routine", routine, "-o", out.to_str().unwrap()])
    };
    for (typed, drawn) in [
        ("shapes::Sq::area", "shapes::Sq::area() const"),
        ("total", "total<shapes::Shape>"),
        ("Circle::ar", "shapes::Circle::area() const"),
        ("^shapes::S[q]::", "shapes::Sq::area() const"),
    ] {
        let o = dot(typed);
        assert!(o.status.success(), "{typed}: {}", common::stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains(drawn), "{typed}: {}", &text[..text.len().min(300)]);
    }
    let o = dot("area");
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'area' matches 2 routines: 'shapes::Circle::area() const', 'shapes::Sq::area() const'"),
        "{err}"
    );
    let o = dot("shapes::Sq::aera");
    assert!(
        common::stderr(&o).contains("did you mean 'shapes::Sq::area() const'?"),
        "{}",
        common::stderr(&o)
    );
    // Stacks alone: what is missing, and how to get it.
    let folded = common::fixture("folded/austin.folded");
    let o = common::run(&["dot", folded.to_str().unwrap(), "--routine", "main", "-o", out.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("has no basic blocks")
            && err.contains("perf record -b")
            && err.contains("--dump-instr=yes"),
        "{err}"
    );
}
