//! perf: `perf script` text from ../shared/fixtures/perf reads into stacks of perf's events; the
//! Go profile's collapse equals inferno's expected result.

use std::io::{BufReader, Cursor};

use cfghub::error::Findings;
use cfghub::format::WriteOptions;
use cfghub::formats::{folded, perf};

use crate::common::shared_fixture;

fn read(path: &std::path::Path) -> cfghub::Profile {
    let bytes = std::fs::read(path).unwrap();
    perf::read(&mut BufReader::new(Cursor::new(bytes)), &mut Findings::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn go_stacks_collapse_like_inferno() {
    let (Some(input), Some(expected)) = (
        shared_fixture("perf/tests_data_collapse-perf_go-stacks.txt"),
        shared_fixture("folded/tests_data_collapse-perf_results_go-stacks-collapsed.txt"),
    ) else {
        return;
    };
    let profile = read(&input);
    let (out, _) =
        cfghub::convert::write_to_vec(&folded::FORMAT, &profile, &WriteOptions::default()).unwrap();
    let out = String::from_utf8(out).unwrap();
    // The event as perf names it, then the stacks.
    assert!(out.starts_with("# events: cpu-clock:uhH\n"), "{out}");
    let mut ours: Vec<String> = out.lines().skip(1).map(String::from).collect();
    let mut theirs: Vec<String> = std::fs::read_to_string(expected)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs);
}

#[test]
fn every_perf_fixture_reads_into_stacks() {
    let Some(dir) = shared_fixture("perf") else { return };
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let profile = read(&path);
        let stacks = &profile.processes[0].stacks;
        assert!(!stacks.is_empty(), "{}", path.display());
        // Every fixture's samples carry cpu-clock periods.
        assert!(profile.events[0].name.starts_with("cpu-clock"), "{}", path.display());
        assert!(stacks.samples().all(|s| s.node != cfghub::ir::NO_INDEX && s.values[0] > 0));
    }
}

#[test]
fn perf_script_is_recognised_by_content() {
    let Some(dir) = shared_fixture("perf") else { return };
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let input = cfghub::io::Input::open(path.to_str().unwrap()).unwrap();
        assert_eq!(
            cfghub::registry::detect_input(&input, None).unwrap().name(),
            "perf",
            "{}",
            path.display()
        );
    }
}
