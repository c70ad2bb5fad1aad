//! DTrace: every aggregation in ../shared/fixtures/dtrace that has inferno's expected collapse
//! (`inferno__results__<name>`) reads into stacks whose folded form equals it line for line.

use std::io::{BufReader, Cursor};

use cfghub::error::Findings;
use cfghub::format::{ReadOptions, WriteOptions};
use cfghub::formats::{dtrace, folded};

use crate::common::shared_fixture;

/// (input, expected folded, whether offsets are kept), as in inferno's own tests.
const CASES: &[(&str, &str, bool)] = &[
    ("inferno__flamegraph-bug.txt", "inferno__results__flamegraph-bug.txt", true),
    ("inferno__hex-addresses.txt", "inferno__results__hex-addresses.txt", false),
    ("inferno__java.txt", "inferno__results__java.txt", false),
    ("inferno__rust-names.txt", "inferno__results__rust-names.txt", false),
    ("inferno__scope_with_no_argument_list.txt", "inferno__results__scope_with_no_argument_list.txt", false),
    ("inferno__stack-ustack.txt", "inferno__results__stack-ustack.txt", false),
    ("FlameGraph__example-dtrace-stacks.txt", "inferno__results__dtrace-example.txt", false),
    ("FlameGraph__example-dtrace-stacks.txt", "inferno__results__dtrace-example-offsets.txt", true),
];

fn sorted_lines(text: &str) -> Vec<String> {
    let mut v: Vec<String> =
        text.lines().map(|l| l.trim_end().to_string()).filter(|l| !l.is_empty()).collect();
    v.sort();
    v
}

pub fn folded_of(path: &std::path::Path, include_offsets: bool) -> String {
    let bytes = std::fs::read(path).unwrap();
    let options = ReadOptions::default().with(cfghub::formats::dtrace::Options { include_offsets });
    let mut findings = Findings::default();
    let profile = dtrace::read(&mut BufReader::new(Cursor::new(bytes)), &options, &mut findings)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (out, _) =
        cfghub::convert::write_to_vec(&folded::FORMAT, &profile, &WriteOptions::default()).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn collapses_equal_inferno_expectations() {
    let mut checked = 0;
    for &(input, expected, offsets) in CASES {
        let (Some(input), Some(expected)) =
            (shared_fixture(&format!("dtrace/{input}")), shared_fixture(&format!("dtrace/{expected}")))
        else {
            continue;
        };
        let ours = sorted_lines(&folded_of(&input, offsets));
        let theirs = sorted_lines(&std::fs::read_to_string(&expected).unwrap());
        assert_eq!(ours.len(), theirs.len(), "{}", expected.display());
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(a, b, "{}", expected.display());
        }
        checked += 1;
    }
    eprintln!("{checked} DTrace collapses compared");
}

#[test]
fn every_expected_result_has_a_case() {
    let Some(dir) = shared_fixture("dtrace") else { return };
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.starts_with("inferno__results__") && name.ends_with(".txt") {
            assert!(CASES.iter().any(|c| c.1 == name), "{name} has no test case");
        }
    }
}

#[test]
fn a_header_without_records_is_an_empty_profile() {
    let Some(path) = shared_fixture("dtrace/inferno__only-header-lines.txt") else { return };
    assert_eq!(folded_of(&path, false), "");
}

#[test]
fn aggregations_are_recognised_by_content() {
    let Some(dir) = shared_fixture("dtrace") else { return };
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name.contains("results") {
            continue;
        }
        let input = cfghub::io::Input::open(path.to_str().unwrap()).unwrap();
        assert_eq!(cfghub::registry::detect_input(&input, None).unwrap().name(), "dtrace", "{name}");
    }
}
