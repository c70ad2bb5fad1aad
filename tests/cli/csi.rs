//! CSI on the command line: `csi paths` and `csi crash` (text and JSON), `info` on CSI
//! metadata, and every writer given blocks without addresses: it warns or refuses, never
//! panics or writes made-up addresses.

use crate::common;

const LOOP: &str = "#\nrand\n1|EXIT\n0|ENTRY|5|5|-1|5\n$\n0->1|0$0\n#\nmain\n3|EXIT\n2|ENTRY|9|9\n4|10|10\n\
5|11|12|13\n6|-1|20|21\n7|14\n8|17\n9|18|-1\n$\n2->4|0$0\n4->5|0$0\n4->6|2$2\n5->7|0$0\n5->8|1$1\n6->3|0$0\n\
7->9|0$0\n8->9|0$0\n9~>4|3$3\n";

const COVERAGE: &str = "#main|__BBC_arr_tests_loop_loop_c_main\n0|BBC0|9|9\n1|BBC1|10\n\
#main|__CC_arr_tests_loop_loop_c_main\n0|CC0|9|rand\n1|CC1|11|?\n-1||12|printf\n#rand|__FC_arr_tests_loop_loop_c_rand\n";

fn with_file(content: &str, f: impl FnOnce(&str, &std::path::Path)) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("loop.debug_PT");
    std::fs::write(&input, content).unwrap();
    f(input.to_str().unwrap(), dir.path());
}

fn ok(args: &[&str]) -> String {
    let o = common::run(args);
    assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
    common::stdout(&o)
}

#[test]
fn paths_all_some_and_as_json() {
    with_file(LOOP, |input, _| {
        assert_eq!(
            ok(&["csi", "paths", input, "--function", "main"]),
            "0: 2 4 5 7 9 ~>\n1: 2 4 5 8 9 ~>\n2: 2 4 6 3\n3: ~> 4 5 7 9 ~>\n4: ~> 4 5 8 9 ~>\n5: ~> 4 6 3\n"
        );
        assert_eq!(ok(&["csi", "paths", input, "--function", "main", "5", "2"]), "5: ~> 4 6 3\n2: 2 4 6 3\n");
        assert_eq!(ok(&["csi", "paths", input, "--function", "rand"]), "0: 0 1\n");
        let json: serde_json::Value =
            serde_json::from_str(&ok(&["csi", "paths", input, "--function", "main", "3", "--json"])).unwrap();
        assert_eq!(json["function"], "main");
        assert_eq!(json["paths"], 6);
        let p = &json["decoded"][0];
        assert_eq!(p["number"], 3);
        assert_eq!(p["blocks"], serde_json::json!(["4", "5", "7", "9"]));
        assert_eq!(p["lines"], serde_json::json!([[10, 10], [11, 12, 13], [14], [18]]));
        assert_eq!(
            (p["after_back_edge"].as_bool(), p["ends_at_back_edge"].as_bool()),
            (Some(true), Some(true))
        );
    });
}

#[test]
fn crash_state_as_text_and_json() {
    with_file(LOOP, |input, _| {
        let args = [
            "csi",
            "crash",
            input,
            "--function",
            "main",
            "--array",
            "1,3,6,3,2,4,8,9,2,-1",
            "--index",
            "2",
            "--current",
            "4",
            "--block",
            "9",
        ];
        assert_eq!(ok(&args), "1: 2 4 5 8 9 ~>\n3: ~> 4 5 7 9 ~>\npartial: ~> 4 5 8 9\n");
        // A wrapped buffer starts at the index; a crash in block 5 after a restart (sum 3).
        let wrapped = [
            "csi",
            "crash",
            input,
            "--function",
            "main",
            "--array",
            "0,1,2,3,4,5,0,1,2,3",
            "--index",
            "8",
            "--current",
            "3",
            "--block",
            "5",
        ];
        let text = ok(&wrapped);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 11, "{text}");
        assert_eq!(lines[0], "2: 2 4 6 3");
        assert_eq!(lines[10], "partial: ~> 4 5");
        let json: serde_json::Value = serde_json::from_str(&ok(&[&args[..], &["--json"]].concat())).unwrap();
        assert_eq!(json["completed"].as_array().unwrap().len(), 2);
        assert_eq!(json["partial"][0]["blocks"], serde_json::json!(["4", "5", "8", "9"]));
        assert_eq!(json["partial"][0]["lines"][1], serde_json::json!([11, 12, 13]));
        assert_eq!(json["truncated"], false);
    });
}

#[test]
fn info_lists_functions_paths_and_coverage() {
    with_file(&format!("{LOOP}{COVERAGE}"), |input, _| {
        let text = ok(&["info", input]);
        assert!(text.contains("functions (path tracing)"), "{text}");
        let main = text.lines().find(|l| l.trim_start().starts_with("main ")).expect("a row for main");
        let cells: Vec<&str> = main.split_whitespace().collect();
        assert_eq!(&cells[..5], ["main", "8", "9", "1", "6"], "{main}");
        assert!(main.contains("BBC __BBC_arr_tests_loop_loop_c_main (2 sites)"), "{main}");
        assert!(main.contains("CC __CC_arr_tests_loop_loop_c_main (3 sites)"), "{main}");
        let json: serde_json::Value = serde_json::from_str(&ok(&["info", input, "--json"])).unwrap();
        let fs = json["processes"][0]["path_functions"].as_array().unwrap();
        let main = fs.iter().find(|f| f["name"] == "main").unwrap();
        assert_eq!(
            (main["blocks"].as_u64(), main["back_edges"].as_u64(), main["paths"].as_u64()),
            (Some(8), Some(1), Some(6))
        );
        let rand = fs.iter().find(|f| f["name"] == "rand").unwrap();
        assert_eq!(rand["coverage"][0]["kind"], "FC");
    });
}

/// Every writer, given CSI metadata: no panic, no address made up; what it cannot place it
/// names (or it refuses with exit 2 and a reason).
#[test]
fn every_writer_copes_with_blocks_without_addresses() {
    with_file(LOOP, |input, dir| {
        for (to, name) in [
            ("dcfg", "out.dcfg.json"),
            ("callgrind", "callgrind.out.x"),
            ("dcpi", "out.dcpi"),
            ("dcpicat", "out.dcpicat"),
            ("folded", "out.folded"),
            ("svg", "out.svg"),
            ("dot", "out.dot"),
            ("graphml", "out.graphml"),
            ("csi", "out.debug_PT"),
        ] {
            let out = dir.join(name);
            let o = common::run(&["convert", input, "--to", to, "-o", out.to_str().unwrap()]);
            let err = common::stderr(&o);
            assert!(!err.contains("panicked"), "{to}: {err}");
            match o.status.code() {
                Some(0) => {
                    let text = std::fs::read_to_string(&out).unwrap();
                    match to {
                        "dot" | "graphml" => {
                            assert!(!text.contains("0x0"), "{to} shows an address:\n{text}");
                            assert!(
                                text.contains("lines 11-13") || text.contains("11 12 13"),
                                "{to}:\n{text}"
                            );
                        }
                        "csi" => assert_eq!(text, LOOP),
                        _ => assert!(err.contains("block(s) have no address"), "{to}: {err}"),
                    }
                    if to == "dcfg" {
                        // What it wrote reads back.
                        let o = common::run(&["info", out.to_str().unwrap()]);
                        assert!(o.status.success(), "{}", common::stderr(&o));
                    }
                }
                Some(2) => assert!(err.contains("no events") || err.contains("no stacks"), "{to}: {err}"),
                other => panic!("{to}: exit {other:?}: {err}"),
            }
        }
    });
}

#[test]
fn dot_draws_a_routine_by_name_with_increments() {
    with_file(LOOP, |input, _| {
        let text = ok(&["dot", input, "--routine", "main", "--increments"]);
        assert!(text.contains("label=\"BB 5\\nlines 11-13\""), "{text}");
        assert!(text.contains("label=\"back\\nrestart 3\""), "{text}");
        assert!(text.contains("label=\"+2\""), "{text}");
        assert!(text.contains("records a path"), "{text}");
        assert!(text.contains("\\nEXIT"), "{text}");
        let plain = ok(&["dot", input, "--routine", "main"]);
        assert!(!plain.contains("restart"), "increments only on request");
    });
}
