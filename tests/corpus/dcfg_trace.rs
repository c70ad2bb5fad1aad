//! DCFG-trace fixtures made by cfghub (fixtures/dcfg-trace/): decoding, the timeline, the
//! statistics and the replayed folded stacks match the expected outputs byte for byte; encoding
//! the expected edges again decodes to the same edges.

use crate::common;

fn fixture(name: &str) -> String {
    common::fixture(&format!("dcfg-trace/{name}")).to_str().unwrap().to_string()
}

fn expect(args: &[&str], expected: &str) {
    let o = common::cfghub().args(args).current_dir(common::fixture("dcfg-trace")).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
    let want = std::fs::read_to_string(fixture(expected)).unwrap();
    assert_eq!(common::stdout(&o), want, "{args:?} differs from {expected}");
}

#[test]
fn the_spec_example_decodes_as_the_spec_says() {
    expect(&["trace", "edges", "spec-example.trace.json"], "spec-example.edges");
}

#[test]
fn the_generated_pair_gives_its_expected_outputs() {
    expect(&["trace", "edges", "small.trace.json", "--dcfg", "small.dcfg.json"], "small.edges");
    expect(&["trace", "timeline", "small.trace.json", "--dcfg", "small.dcfg.json"], "small.timeline.jsonl");
    let stats = std::fs::read_to_string(fixture("small.stats.json")).unwrap();
    let o = common::cfghub()
        .args(["trace", "stats", "small.trace.json", "--dcfg", "small.dcfg.json", "--json"])
        .current_dir(common::fixture("dcfg-trace"))
        .output()
        .unwrap();
    assert_eq!(common::stdout(&o), stats);
    expect(
        &["-q", "convert", "small.dcfg.json", "--trace", "small.trace.json", "-o", "-", "--to", "folded"],
        "small.folded",
    );
}

#[test]
fn expected_edges_encode_back_to_the_same_edges() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("again.trace.json.gz");
    let o = common::run(&[
        "convert",
        &fixture("small.dcfg.json"),
        "--trace-from",
        &fixture("small.edges"),
        "--chunk-instrs",
        "2000",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = common::run(&["trace", "edges", out.to_str().unwrap(), "--dcfg", &fixture("small.dcfg.json")]);
    assert_eq!(common::stdout(&o), std::fs::read_to_string(fixture("small.edges")).unwrap());
}
