//! `cfghub merge` of any number of profiles: exact sums, refusals that name what failed, and
//! inputs listed in a file or on standard input.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Stdio;

use crate::common;

/// A folded file's stacks and values.
fn folded(text: &str) -> BTreeMap<String, u128> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (stack, value) = l.rsplit_once(' ').unwrap();
            (stack.to_string(), value.parse().unwrap())
        })
        .collect()
}

/// `cfghub merge a.folded b.folded -o ab.folded` in `dir` of the two texts: its run, and the
/// output's path.
fn merge_two(dir: &std::path::Path, a: &str, b: &str) -> (std::process::Output, std::path::PathBuf) {
    let (pa, pb, out) = (dir.join("a.folded"), dir.join("b.folded"), dir.join("ab.folded"));
    std::fs::write(&pa, a).unwrap();
    std::fs::write(&pb, b).unwrap();
    let o = common::run(&["merge", pa.to_str().unwrap(), pb.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    (o, out)
}

#[test]
fn folded_profiles_add_up_to_the_unit_past_53_bits() {
    let dir = tempfile::tempdir().unwrap();
    let (o, out) = merge_two(dir.path(), "main;f 9007199254740993\nmain 1\n", "main;f 1\nmain;g 3\n");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let want: BTreeMap<String, u128> =
        [("main;f", 9007199254740994), ("main", 1), ("main;g", 3)].map(|(k, v)| (k.to_string(), v)).into();
    assert_eq!(folded(&std::fs::read_to_string(&out).unwrap()), want);
}

#[test]
fn a_merged_total_of_2_to_the_64_is_refused_naming_the_event_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (o, out) = merge_two(dir.path(), "main;f 18446744073709551615\n", "main;g 1\n");
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let e = common::stderr(&o);
    assert!(e.contains("b.folded") && e.contains("2^64") && e.contains("event samples"), "{e}");
    assert!(!out.exists());
}

/// 300 inputs named on standard input (`--inputs-from -`), each a share of one program's
/// stacks: the sum is exact and holds each distinct stack once.
#[test]
fn hundreds_of_inputs_listed_on_standard_input_sum_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut list = String::new();
    for n in 0..300u64 {
        let path = dir.path().join(format!("host{n}.folded"));
        std::fs::write(
            &path,
            format!("main;serve;parse {}\nmain;serve;reply {}\nmain;idle 7\n", n + 1, 2 * n),
        )
        .unwrap();
        list.push_str(&format!("{}\n", path.display()));
    }
    let out = dir.path().join("fleet.folded");
    let mut child = common::cfghub()
        .args(["merge", "--inputs-from", "-", "-o"])
        .arg(&out)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(list.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let want: BTreeMap<String, u128> =
        [("main;serve;parse", 45150), ("main;serve;reply", 89700), ("main;idle", 2100)]
            .map(|(k, v)| (k.to_string(), v))
            .into();
    assert_eq!(folded(&std::fs::read_to_string(&out).unwrap()), want);
}

#[test]
fn merge_without_inputs_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("empty.list");
    std::fs::write(&list, "\n").unwrap();
    let o = common::run(&["merge", "--inputs-from", list.to_str().unwrap(), "-o", "out.folded"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("no inputs"), "{}", common::stderr(&o));
}

/// Round trip: the merge of A and B written as tables and read back is the merge of A and B.
#[cfg(feature = "tables")]
#[test]
fn a_merge_through_tables_and_back_is_the_merge() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = common::fixture("pprof/burn.cpu.pb.gz");
    let heap = common::fixture("pprof/allocs.heap.pb.gz");
    let p = |name: &str| dir.path().join(name);
    let o = common::run(&[
        "-q",
        "merge",
        cpu.to_str().unwrap(),
        heap.to_str().unwrap(),
        "-o",
        p("m.pb.gz").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    for (from, to) in [("m.pb.gz", "m.tables"), ("m.tables", "back.pb.gz")] {
        let o = common::run(&["-q", "convert", p(from).to_str().unwrap(), "-o", p(to).to_str().unwrap()]);
        assert!(o.status.success(), "{}", common::stderr(&o));
    }
    for event in ["cpu", "alloc_space", "inuse_objects"] {
        let text = |name: &str| {
            let out = p(&format!("{name}.{event}.folded"));
            let o = common::run(&[
                "-q",
                "convert",
                p(name).to_str().unwrap(),
                "--event",
                event,
                "-o",
                out.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", common::stderr(&o));
            folded(&std::fs::read_to_string(out).unwrap())
        };
        let (merged, back) = (text("m.pb.gz"), text("back.pb.gz"));
        assert!(!merged.is_empty(), "{event}");
        assert_eq!(merged, back, "{event}");
    }
}

/// `--label-from-path` takes labels from each input's path, and an input whose path the pattern
/// does not match is refused with both named (exit 2, no output); `--split-by` then shows each
/// value apart, as a speedscope profile of its own named by its labels.
#[test]
fn labels_from_paths_split_the_merge_and_a_path_that_does_not_match_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (service, text) in [("web", "main;a 5\nmain;b 1\n"), ("db", "main;a 2\n")] {
        std::fs::create_dir_all(dir.path().join(service)).unwrap();
        std::fs::write(dir.path().join(service).join("cpu.folded"), text).unwrap();
    }
    let input = |s: &str| dir.path().join(s).join("cpu.folded").to_str().unwrap().to_string();
    let out = dir.path().join("split.speedscope.json");
    let o = common::run(&[
        "merge",
        &input("web"),
        &input("db"),
        "--label-from-path",
        "{service}/cpu.folded",
        "--split-by",
        "service",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let profiles: Vec<(String, u64)> = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let total = p["weights"].as_array().unwrap().iter().map(|w| w.as_u64().unwrap()).sum();
            (p["name"].as_str().unwrap().to_string(), total)
        })
        .collect();
    assert_eq!(profiles.len(), 2, "{profiles:?}");
    assert!(profiles[0].0.ends_with("service=web") && profiles[0].1 == 6, "{profiles:?}");
    assert!(profiles[1].0.ends_with("service=db") && profiles[1].1 == 2, "{profiles:?}");

    let refused = dir.path().join("refused.pb.gz");
    let o = common::run(&[
        "merge",
        &input("web"),
        &input("db"),
        "--label-from-path",
        "hosts/{host}.folded",
        "-o",
        refused.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = common::stderr(&o);
    assert!(err.contains("cpu.folded") && err.contains("hosts/{host}.folded"), "{err}");
    assert!(!refused.exists());
}
