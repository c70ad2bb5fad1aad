//! Stack profiles in KCachegrind's format: folded (from DTrace and perf) -> Callgrind ->
//! `callgrind_annotate`. The program total is the sum of the folded counts, each function's
//! self cost the sum of the stacks where it is the leaf, and the inclusive cost of a function
//! that never recurses the sum of the stacks it is on. (`callgrind_annotate --inclusive` takes a
//! called function's inclusive cost from its incoming calls, and an uncalled one's from its self
//! cost and outgoing calls, so functions that are the root of some stacks but not of others are
//! not compared.)

use std::collections::HashMap;
use std::process::Command;

use crate::common::{require, run, shared_fixture, stderr};

/// `callgrind_annotate` output: the program total and the cost per function (stack profiles
/// have no source files: `???:function`, as Valgrind names a function of unknown file).
fn annotate(file: &std::path::Path, inclusive: bool) -> (u64, HashMap<String, u64>) {
    require("callgrind_annotate");
    let o = Command::new("callgrind_annotate")
        .args([
            "--threshold=100",
            "--auto=no",
            &format!("--inclusive={}", if inclusive { "yes" } else { "no" }),
        ])
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut total = None;
    let mut costs = HashMap::new();
    for line in text.lines() {
        let Some((count, rest)) = line.split_once(" (") else { continue };
        let Ok(count) = count.trim().replace(',', "").parse::<u64>() else { continue };
        let Some((_, name)) = rest.split_once(")  ") else { continue };
        if name.trim() == "PROGRAM TOTALS" {
            total = Some(count);
        } else if let Some(function) = name.strip_prefix("???:") {
            costs.insert(function.to_string(), count);
        }
    }
    (total.expect("a PROGRAM TOTALS line"), costs)
}

/// (frames, count) of every line of a folded file.
fn stacks(folded: &str) -> Vec<(Vec<String>, u64)> {
    folded
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (stack, count) = l.rsplit_once(' ').unwrap();
            (stack.split(';').map(String::from).collect(), count.parse().unwrap())
        })
        .collect()
}

fn check(input: &std::path::Path, from: &str) {
    let dir = tempfile::tempdir().unwrap();
    let folded = dir.path().join("app.folded");
    let out = dir.path().join("callgrind.out.app");
    let o = run(&[
        "-q",
        "convert",
        input.to_str().unwrap(),
        "--from",
        from,
        "--to",
        "folded",
        "-o",
        folded.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["convert", folded.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stacks = stacks(&std::fs::read_to_string(&folded).unwrap());
    let (total, selfs) = annotate(&out, false);
    assert_eq!(total, stacks.iter().map(|s| s.1).sum::<u64>(), "{}", input.display());
    let mut leaf: HashMap<String, u64> = HashMap::new();
    let mut on: HashMap<String, u64> = HashMap::new();
    let mut recursive: Vec<String> = Vec::new();
    let mut root: HashMap<String, (bool, bool)> = HashMap::new();
    for (frames, count) in &stacks {
        for (i, f) in frames.iter().enumerate() {
            let r = root.entry(f.clone()).or_default();
            if i == 0 {
                r.0 = true;
            } else {
                r.1 = true;
            }
        }
        *leaf.entry(frames.last().unwrap().clone()).or_default() += count;
        let mut seen: Vec<&String> = Vec::new();
        for f in frames {
            if seen.contains(&f) {
                recursive.push(f.clone());
            } else {
                seen.push(f);
                *on.entry(f.clone()).or_default() += count;
            }
        }
    }
    for (f, v) in &leaf {
        assert_eq!(selfs.get(f), Some(v), "{}: self cost of {f}", input.display());
    }
    assert_eq!(selfs.values().filter(|&&v| v > 0).count(), leaf.len(), "{}", input.display());
    let (_, inclusive) = annotate(&out, true);
    let mut checked = 0;
    for (f, v) in &on {
        let (at_root, below_root) = root[f];
        let mixed = at_root && below_root;
        if !recursive.contains(f) && !mixed {
            assert_eq!(inclusive.get(f), Some(v), "{}: inclusive cost of {f}", input.display());
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[test]
fn dtrace_profiles_open_in_callgrind_tools_with_exact_costs() {
    for name in
        ["FlameGraph__example-dtrace-stacks.txt", "inferno__stack-ustack.txt", "inferno__rust-names.txt"]
    {
        let Some(input) = shared_fixture(&format!("dtrace/{name}")) else { return };
        check(&input, "dtrace");
    }
}

#[test]
fn perf_profiles_open_in_callgrind_tools_with_exact_costs() {
    let Some(dir) = shared_fixture("perf") else { return };
    for entry in std::fs::read_dir(dir).unwrap() {
        check(&entry.unwrap().path(), "perf");
    }
}

#[test]
fn folded_files_open_in_callgrind_tools_with_exact_costs() {
    for name in [
        "tests_data_collapse-perf_results_go-stacks-collapsed.txt",
        "tests_data_flamegraph_austin_flames.txt",
    ] {
        let Some(input) = shared_fixture(&format!("folded/{name}")) else { return };
        check(&input, "folded");
    }
}
