//! DCFG-trace: bad traces exit 2 naming the process, thread, chunk and position (edge and bit of
//! the chunk's sequence), leave no output behind, and huge repeat counts cost neither time nor
//! memory when EDGE_COUNT is small.

use crate::common;
use std::path::Path;
use std::time::{Duration, Instant};

fn trace(dict: &str, table: &str, chunks: &str) -> String {
    format!(
        r#"{{ "MAJOR_VERSION" : 1, "MINOR_VERSION" : 0, "PROCESSES" : [
          [ "PROCESS_ID", "STRING_DICTIONARY", "TRANSITION_TABLE", "THREAD_DATA" ],
          [ 4242, {dict}, [ [ "CURRENT_EDGE_ID", "TRANSITION_CODE", "NEXT_EDGE_IDS" ] {table} ],
            [ [ "THREAD_ID", "TRACE_DATA" ],
              [ 0, [ [ "PRECEDING_INSTR_COUNT", "INSTR_COUNT", "EDGE_COUNT", "FIRST_EDGE_ID", "EDGE_ID_SEQUENCE" ],
                     [ 0, 0, 1, 1, "" ] ] ],
              [ 1, [ [ "PRECEDING_INSTR_COUNT", "INSTR_COUNT", "EDGE_COUNT", "FIRST_EDGE_ID", "EDGE_ID_SEQUENCE" ],
                     {chunks} ] ] ] ] ] }}"#
    )
}

const LOOP: &str = r#", [ 1, "0", [ 1 ] ], [ 1, "1", [ 2 ] ], [ 2, "1", [ 1 ] ]"#;

/// Runs `trace edges` (with `--dcfg` when given) on `text`; checks exit 2, the message, and
/// that no output file was left.
fn refused(text: &str, dcfg: Option<&Path>, expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.trace.json");
    std::fs::write(&input, text).unwrap();
    let output = dir.path().join("out.edges");
    let mut args = vec!["trace", "edges", input.to_str().unwrap(), "-o", output.to_str().unwrap()];
    if let Some(d) = dcfg {
        args.extend(["--dcfg", d.to_str().unwrap()]);
    }
    let o = common::run(&args);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{expected:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for e in expected {
        assert!(err.contains(e), "expected {e:?} in: {err}");
    }
    assert!(!output.exists(), "a failed decode left {}", output.display());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "only the input may remain");
}

const CHUNK0: &str = "PROCESSES row 1 (PROCESS_ID 4242).THREAD_DATA thread 1.TRACE_DATA chunk 0 (row 1)";
const CHUNK1: &str = "PROCESSES row 1 (PROCESS_ID 4242).THREAD_DATA thread 1.TRACE_DATA chunk 1 (row 2)";

#[test]
fn sequence_and_table_errors_name_the_chunk_and_position() {
    let ok = r#"[ 0, 0, 3, 1, "A" ]"#;
    refused(
        &trace("{}", LOOP, &format!(r#"{ok}, [ 0, 0, 20, 1, "A" ]"#)),
        None,
        &[CHUNK1, "edge 7, bit 6", "too few bits"],
    );
    refused(
        &trace("{}", LOOP, &format!(r#"{ok}, [ 0, 0, 3, 1, "A<zz>" ]"#)),
        None,
        &[CHUNK1, "character 1", "unknown dictionary key <zz>"],
    );
    refused(
        &trace("{}", LOOP, &format!(r#"{ok}, [ 0, 0, 3, 1, "A(3B)" ]"#)),
        None,
        &[CHUNK1, "character 3", "expected '*'"],
    );
    refused(
        &trace("{}", LOOP, &format!(r#"{ok}, [ 0, 0, 3, 2, "A" ]"#)),
        None,
        &[CHUNK1, "edge 1, bit 0", "no TRANSITION_CODE of edge 2"],
    );
    refused(
        &trace(r#"{ "a": "A<b>", "b": "(2*<c>)", "c": "<a>" }"#, LOOP, ok),
        None,
        &["PROCESSES row 1 (PROCESS_ID 4242).STRING_DICTIONARY", "cycle: <a> -> <b> -> <c> -> <a>"],
    );
    refused(
        &trace("{}", r#", [ 1, "0", [ 1 ] ], [ 1, "01", [ 2 ] ]"#, ok),
        None,
        &["TRANSITION_TABLE", "\"0\" (row 1) and \"01\" (row 2)", "ambiguous"],
    );
    refused(
        &trace("{}", LOOP, r#"[ 0, 0, 3, 1 ]"#),
        None,
        &["chunk 0", "EDGE_ID_SEQUENCE column is missing"],
    );
    refused(
        &trace("{}", r#", [ 1, "2", [ 1 ] ]"#, ok),
        None,
        &["TRANSITION_TABLE row 1", "other than 0 and 1"],
    );
    refused("{ \"PROCESSES\" : [ [ \"PROCESS_ID\" ], [ 1 ] ] }", None, &["header row", "PROCESS_ID"]);
    refused("{ \"MAJOR_VERSION\" : 1, \"PROCESSES\" : [ ", None, &["bad.trace.json:1: EOF while parsing"]);
}

#[test]
fn edges_absent_from_the_paired_dcfg_are_refused_where_they_occur() {
    let dir = tempfile::tempdir().unwrap();
    let dcfg = dir.path().join("app.dcfg.json");
    let t = dir.path().join("app.trace.json");
    let o = common::run(&[
        "trace",
        "generate",
        "--edges",
        "200",
        "--threads",
        "1",
        "--dcfg-out",
        dcfg.to_str().unwrap(),
        "--trace-out",
        t.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    // Edge 1 is the synthetic program's ENTRY edge; 999999 is no edge of it.
    let table = r#", [ 1, "", [ 999999 ] ]"#;
    refused(
        &trace("{}", table, r#"[ 0, 0, 2, 1, "" ]"#),
        Some(&dcfg),
        &[CHUNK0, "edge 1, bit 0", "edge 999999 is not an edge of the paired DCFG"],
    );
    refused(
        &trace("{}", table, r#"[ 0, 0, 1, 777777, "" ]"#),
        Some(&dcfg),
        &[CHUNK0, "FIRST_EDGE_ID 777777"],
    );
    // A wrong INSTR_COUNT, and an edge that does not start where its predecessor ends.
    refused(&trace("{}", "", r#"[ 0, 12345, 1, 1, "" ]"#), Some(&dcfg), &[CHUNK0, "INSTR_COUNT is 12345"]);
    refused(
        &trace("{}", r#", [ 1, "", [ 1 ] ]"#, r#"[ 0, 0, 2, 1, "" ]"#),
        Some(&dcfg),
        &[CHUNK0, "edge 1", "does not start at the node"],
    );
    let other = std::fs::read_to_string(&t).unwrap().replace("[ 4242,", "[ 99,");
    refused(&other, Some(&dcfg), &["PROCESS_ID 99 is not a process of the paired DCFG"]);
}

#[test]
fn huge_repeat_counts_decode_only_what_edge_count_needs() {
    for seq in ["(99999999999*A)", "(1000000000000*(1000000000000*A))", "(1000000000000*<x>)"] {
        let text = trace(r#"{ "x": "(1000000000000*A)" }"#, LOOP, &format!(r#"[ 0, 0, 10, 1, "{seq}" ]"#));
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("big.trace.json");
        std::fs::write(&input, &text).unwrap();
        let started = Instant::now();
        let o = common::run(&["trace", "edges", input.to_str().unwrap(), "--thread", "1"]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        assert!(started.elapsed() < Duration::from_secs(10), "{seq} took {:?}", started.elapsed());
        let out = common::stdout(&o);
        let edges: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(edges.len(), 10, "{seq}");
    }
}

mod never_panics {
    use crate::common;
    use cfghub::formats::dcfg_trace::decode::{decode_all, totals};
    use proptest::prelude::*;

    fn small() -> (Vec<u8>, cfghub::Profile) {
        let trace = std::fs::read(common::fixture("dcfg-trace/small.trace.json")).unwrap();
        let dcfg = common::fixture("dcfg-trace/small.dcfg.json");
        let profile =
            cfghub::convert::load(dcfg.to_str().unwrap(), None, &Default::default()).unwrap().profile;
        (trace, profile)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Damaged traces decode or fail with an error; they never panic or hang.
        #[test]
        fn damaged_traces_are_errors_not_panics(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), prop::sample::select(
                b"()<>*0123456789AZaz+-/\"[]{},: x\xff".to_vec())), 1..6),
        ) {
            let (mut trace, profile) = small();
            for (at, byte) in edits {
                let i = at.index(trace.len());
                trace[i] = byte;
            }
            let _ = totals(&mut trace.as_slice(), None, None);
            let _ = totals(&mut trace.as_slice(), Some(&profile), None);
            let _ = decode_all(&mut trace.as_slice(), Some(&profile));
        }

        /// Arbitrary sequence text against a small table: an error or edges, never a panic.
        #[test]
        fn arbitrary_sequences_are_errors_not_panics(seq in "[A-Za-z0-9+(<>)*-]{0,40}", count in 0u64..50) {
            let text = format!(
                r#"{{ "PROCESSES" : [ [ "PROCESS_ID", "STRING_DICTIONARY", "TRANSITION_TABLE", "THREAD_DATA" ],
                  [ 1, {{ "a": "(3*B)", "b": "<a>A" }}, [ [ "CURRENT_EDGE_ID", "TRANSITION_CODE", "NEXT_EDGE_IDS" ],
                    [ 1, "0", [ 1 ] ], [ 1, "10", [ 2 ] ], [ 1, "11", [ 3, 1 ] ], [ 2, "", [ 1 ] ] ],
                  [ [ "THREAD_ID", "TRACE_DATA" ], [ 0, [ [ "PRECEDING_INSTR_COUNT", "INSTR_COUNT", "EDGE_COUNT",
                    "FIRST_EDGE_ID", "EDGE_ID_SEQUENCE" ], [ 0, 0, {count}, 1, "{seq}" ] ] ] ] ] ] }}"#
            );
            if let Ok(t) = decode_all(&mut text.as_bytes(), None) {
                let n: usize = t.iter().map(|x| x.edges.len()).sum();
                prop_assert_eq!(n as u64, count);
            }
        }
    }
}

/// A trace of one process and thread whose only chunk declares `edge_count` edges of `table`
/// (rows after the header) from edge 1, with `dict` and `sequence`.
fn bomb(dict: &str, table: &str, edge_count: &str, sequence: &str) -> String {
    format!(
        r#"{{ "MAJOR_VERSION" : 1, "MINOR_VERSION" : 0, "PROCESSES" : [
          [ "PROCESS_ID", "STRING_DICTIONARY", "TRANSITION_TABLE", "THREAD_DATA" ],
          [ 7, {dict}, [ [ "CURRENT_EDGE_ID", "TRANSITION_CODE", "NEXT_EDGE_IDS" ], {table} ],
            [ [ "THREAD_ID", "TRACE_DATA" ],
              [ 0, [ [ "PRECEDING_INSTR_COUNT", "INSTR_COUNT", "EDGE_COUNT", "FIRST_EDGE_ID", "EDGE_ID_SEQUENCE" ],
                     [ 0, 0, {edge_count}, 1, "{sequence}" ] ] ] ] ] ] }}"#
    )
}

/// Traces of a few hundred bytes that claim up to 2^64 edges: zero-bit transitions, nested
/// repeats, and a dictionary whose entries double 60 times.
fn bombs() -> Vec<(&'static str, String)> {
    let doubling: Vec<String> = std::iter::once(r#""a0": "AA""#.to_string())
        .chain((1..=60).map(|i| format!(r#""a{i}": "<a{}><a{}>""#, i - 1, i - 1)))
        .collect();
    vec![
        ("zero-bit codes", bomb("{}", r#"[ 1, "", [ 1 ] ]"#, "1000000000000000", "")),
        (
            "nested repeats",
            bomb("{}", r#"[ 1, "0", [ 1 ] ]"#, "18446744073709551615", "(1000000000*(1000000000*(1000*A)))"),
        ),
        (
            "doubling dictionary",
            bomb(
                &format!("{{ {} }}", doubling.join(", ")),
                r#"[ 1, "0", [ 1 ] ]"#,
                "18446744073709551615",
                "<a60>",
            ),
        ),
    ]
}

#[test]
fn trace_bombs_end_quickly_info_decodes_nothing_and_decoders_name_the_limit() {
    for (what, text) in bombs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bomb.trace.json"), &text).unwrap();
        let before = common::snapshot(dir.path());
        let o = common::run_limited(dir.path(), 60, &["info", "bomb.trace.json"]);
        common::assert_contained(&o, what);
        assert_eq!(o.status.code(), Some(0), "{what}: {}", common::stderr(&o));
        assert!(common::stdout(&o).contains("not decoded here"), "{what}: {}", common::stdout(&o));
        for args in [
            vec!["trace", "stats", "bomb.trace.json"],
            vec!["trace", "edges", "bomb.trace.json", "-o", "out.edges"],
            vec!["convert", "bomb.trace.json", "-o", "out.dcfg.json"],
            vec!["trace", "stats", "--max-edges", "1000", "bomb.trace.json"],
        ] {
            let o = common::run_limited(dir.path(), 60, &args);
            let err = common::assert_contained(&o, what);
            assert_eq!(o.status.code(), Some(2), "{what} {args:?}: {err}");
            assert!(err.contains("TRACE_DATA chunk 0 (row 1)"), "{what} {args:?}: {err}");
            assert!(err.contains("hint: ") && err.contains("--max-edges "), "{what} {args:?}: {err}");
            assert_eq!(common::snapshot(dir.path()), before, "{what} {args:?}: files changed");
        }
    }
}

#[test]
fn max_edges_bounds_replay_and_lets_honest_traces_through() {
    let dcfg = common::fixture("dcfg-trace/small.dcfg.json");
    let trace = common::fixture("dcfg-trace/small.trace.json");
    let dir = tempfile::tempdir().unwrap();
    let (dcfg, trace) = (dcfg.to_str().unwrap(), trace.to_str().unwrap());
    let o = common::run_limited(
        dir.path(),
        60,
        &["convert", dcfg, "--trace", trace, "--max-edges", "10", "-o", "out.folded"],
    );
    let err = common::assert_contained(&o, "replay");
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("more than 10 edges") && err.contains("--max-edges"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no output left");
    let o = common::run_limited(dir.path(), 60, &["convert", dcfg, "--trace", trace, "-o", "out.folded"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let o = common::run_limited(dir.path(), 60, &["trace", "stats", "--max-edges", "1000000", trace]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
}

#[test]
fn long_decoding_shows_its_progress_on_a_terminal() {
    // One chunk of 5 * 10^8 edges (zero bits each): about 5 s of decoding in a test build on
    // an idle 2-core machine, shown on a terminal (`script` provides one) as a count of edges
    // that grows once decoding has taken a second (10^8 took about 1 s there: too few to show).
    common::require("script");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("long.trace.json");
    std::fs::write(&trace, bomb("{}", r#"[ 1, "", [ 1 ] ]"#, "500000000", "")).unwrap();
    let command = format!("'{}' trace -j 1 stats '{}'", env!("CARGO_BIN_EXE_cfghub"), trace.display());
    let o = std::process::Command::new("script").args(["-qec", &command, "/dev/null"]).output().unwrap();
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{shown}");
    assert!(shown.contains("decoding: ") && shown.contains(" edges in "), "{shown}");
    assert!(shown.contains("500000000"), "the stats follow: {shown}");
}
