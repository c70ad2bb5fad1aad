//! DCFG-trace fixtures made by cfghub (fixtures/dcfg-trace/): encoding the expected edges again
//! decodes to the same edges. (Decoding, the timeline, the statistics and the replayed folded
//! stacks are checked against `<input>.expected/` by tests/golden.rs.)

use crate::common;

fn fixture(name: &str) -> String {
    common::fixture(&format!("dcfg-trace/{name}")).to_str().unwrap().to_string()
}

#[test]
fn expected_edges_encode_back_to_the_same_edges() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("again.trace.json.gz");
    let o = common::run(&[
        "convert",
        &fixture("small.dcfg.json"),
        "--trace-from",
        &fixture("small.trace.json.expected/trace-edges"),
        "--chunk-instrs",
        "2000",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = common::run(&["trace", "edges", out.to_str().unwrap(), "--dcfg", &fixture("small.dcfg.json")]);
    assert_eq!(
        common::stdout(&o),
        std::fs::read_to_string(fixture("small.trace.json.expected/trace-edges")).unwrap()
    );
}
