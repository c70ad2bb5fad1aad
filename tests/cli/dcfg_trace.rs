//! DCFG-trace on the command line: generate, stats, edges -> convert --trace-from -> edges is
//! the identity, timeline, and convert --trace to folded stacks and Callgrind.

use crate::common;

fn generated(dir: &std::path::Path, edges: &str, threads: &str) -> (String, String) {
    let dcfg = dir.join("app.dcfg.json.bz2").to_str().unwrap().to_string();
    let trace = dir.join("app.trace.json.bz2").to_str().unwrap().to_string();
    let o = common::run(&[
        "trace",
        "generate",
        "--edges",
        edges,
        "--threads",
        threads,
        "--chunk-instrs",
        "3000",
        "--dcfg-out",
        &dcfg,
        "--trace-out",
        &trace,
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    (dcfg, trace)
}

#[test]
fn edges_encode_back_to_the_same_edges() {
    let dir = tempfile::tempdir().unwrap();
    let (dcfg, trace) = generated(dir.path(), "4000", "3");
    let edges = dir.path().join("app.edges");
    let o = common::run(&["trace", "edges", &trace, "--dcfg", &dcfg, "-o", edges.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&edges).unwrap();
    assert!(
        text.contains("# thread 0\n1\n") && text.contains("# thread 2\n"),
        "{}",
        &text[..200.min(text.len())]
    );
    let again = dir.path().join("again.trace.json");
    let o = common::run(&[
        "convert",
        &dcfg,
        "--trace-from",
        edges.to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = common::run(&["trace", "edges", again.to_str().unwrap()]);
    assert_eq!(common::stdout(&o), text);
    // One thread only.
    let o = common::run(&["trace", "edges", &trace, "--thread", "1"]);
    let out = common::stdout(&o);
    assert!(out.starts_with("# process 4242\n# thread 1\n") && !out.contains("# thread 0"));
    // Encoding refuses an edge list that does not follow the DCFG.
    let bad = dir.path().join("bad.edges");
    std::fs::write(&bad, "1\n1\n").unwrap();
    let o = common::run(&["convert", &dcfg, "--trace-from", bad.to_str().unwrap(), "-o", "x.trace.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("thread 0, edge 1"), "{}", common::stderr(&o));
}

#[test]
fn stats_check_against_the_dcfg_and_agree_with_its_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (dcfg, trace) = generated(dir.path(), "3000", "2");
    let o = common::run(&["trace", "stats", &trace, "--dcfg", &dcfg]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(common::stdout(&o).contains("edge counts equal the DCFG's"), "{}", common::stdout(&o));
    let o = common::run(&["trace", "-j", "1", "stats", &trace, "--dcfg", &dcfg, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["processes"][0];
    assert_eq!(p["edges_differing_from_dcfg"], 0);
    for t in p["threads"].as_array().unwrap() {
        assert_eq!(t["instructions"], t["dcfg_instructions"]);
    }
    // `info` reads a trace alone.
    let o = common::run(&["info", &trace]);
    assert!(common::stdout(&o).contains("dcfg-trace"), "{}", common::stdout(&o));
}

#[test]
fn timeline_and_replayed_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let (dcfg, trace) = generated(dir.path(), "3000", "2");
    let o = common::run(&["trace", "timeline", &trace, "--dcfg", &dcfg, "--thread", "1"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let lines: Vec<serde_json::Value> =
        common::stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["name"], "main");
    assert!(lines.iter().all(|l| l["thread"] == 1));
    let folded = dir.path().join("app.folded");
    let o = common::run(&["-q", "convert", &dcfg, "--trace", &trace, "-o", folded.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let total: u64 = std::fs::read_to_string(&folded)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let v: serde_json::Value =
        serde_json::from_slice(&common::run(&["trace", "stats", &trace, "--json"]).stdout).unwrap();
    let instrs: u64 = v["processes"][0]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["instructions"].as_u64().unwrap())
        .sum();
    assert_eq!(total, instrs, "folded stacks sum to the instructions");
}

/// A chunk whose sequence holds characters its EDGE_COUNT does not need (beyond the padding
/// bits of its last character) is a finding: `validate` exits 1 naming the chunk, `convert
/// --trace` warns. The bundled trace itself is valid.
#[test]
fn surplus_characters_in_a_chunk_are_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let dcfg = common::fixture("dcfg-trace/small.dcfg.json");
    let good = common::fixture("dcfg-trace/small.trace.json");
    let o = common::run(&["validate", good.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stdout(&o));
    for (surplus, padded) in
        [("AAAA", "4 character(s)"), ("(9999999999999999999*A)", "at least 3074457345618258597 character(s)")]
    {
        let text =
            std::fs::read_to_string(&good).unwrap().replace("\"aAv-M\"", &format!("\"aAv-M{surplus}\""));
        let bad = dir.path().join("bad.trace.json");
        std::fs::write(&bad, text).unwrap();
        let o = common::run(&["validate", bad.to_str().unwrap()]);
        let out = common::stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{out}");
        assert!(out.contains("TRACE_DATA chunk 4 (row 5)") && out.contains(padded), "{out}");
        let o = common::run(&[
            "convert",
            dcfg.to_str().unwrap(),
            "--trace",
            bad.to_str().unwrap(),
            "-o",
            dir.path().join("x.folded").to_str().unwrap(),
        ]);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(err.contains("1 chunk(s) of the trace hold characters beyond their EDGE_COUNT"), "{err}");
    }
}
