//! Folded stacks, DTrace, perf and flame graphs on the command line, and `cfghub diff`.

use crate::common::{self, run, shared_fixture, stderr, stdout};

fn temp_file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn dtrace_to_svg_and_folded() {
    let Some(input) = shared_fixture("dtrace/FlameGraph__example-dtrace-stacks.txt") else { return };
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("app.svg");
    let o = run(&[
        "convert",
        input.to_str().unwrap(),
        "--from",
        "dtrace",
        "-o",
        svg.to_str().unwrap(),
        "--title",
        "app",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<?xml") && text.contains(">app<"));
    let folded = dir.path().join("app.folded");
    let o = run(&["convert", input.to_str().unwrap(), "--from", "dtrace", "-o", folded.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let expected = shared_fixture("dtrace/inferno__results__dtrace-example.txt").unwrap();
    let expected = std::fs::read_to_string(expected).unwrap();
    let count = |t: &str| t.lines().filter(|l| !l.is_empty()).count();
    assert_eq!(count(&std::fs::read_to_string(&folded).unwrap()), count(&expected));
}

#[test]
fn perf_script_to_folded_on_stdout() {
    let Some(input) = shared_fixture("perf/test_perf-dd-stacks-01.txt") else { return };
    let o = run(&["convert", input.to_str().unwrap(), "--from", "perf", "--to", "folded", "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // The event as perf names it, its values the samples' periods (10,101,010 ns each).
    assert!(out.starts_with("# events: cpu-clock\n"), "{out}");
    assert!(out.lines().skip(1).all(|l| l.starts_with("dd;")), "{out}");
    assert!(out.contains("vfs_read"));
    assert!(out.contains(";__srcu_read_unlock_[k] 20202020\n"), "{out}");
}

#[test]
fn dcfg_to_folded_says_the_stacks_are_estimated() {
    let Some(input) = shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let o = run(&["convert", input.to_str().unwrap(), "--to", "folded", "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("estimated from the call graph"), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("# events: instructions\n"));
}

#[test]
fn bad_folded_input_fails_with_its_line_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = temp_file(&dir, "bad.folded", "a;b 1\na;c 2\nno count here\n");
    let out = dir.path().join("out.svg");
    let o = run(&["convert", &input, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.folded:3:"), "{}", stderr(&o));
    assert!(!out.exists());
}

#[test]
fn diff_of_stacks_gives_a_differential_flame_graph_or_two_columns() {
    let dir = tempfile::tempdir().unwrap();
    let a = temp_file(&dir, "before.folded", "main;a;b 3\nmain;a 2\nmain;c 1.5\n");
    let b = temp_file(&dir, "after.folded", "main;a;b 5\nmain;c 1\nmain;d 2\n");
    let o = run(&["diff", &a, &b]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "main;a 2 0\nmain;a;b 3 5\nmain;c 1.5 1\nmain;d 0 2\n");
    let svg = dir.path().join("diff.svg");
    let o = run(&["diff", &a, &b, "-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    // inferno's differential titles carry the change in percent.
    assert!(text.contains("d (20 \u{d7} 0.1 samples, 25.00%; +25.00%)"), "{text}");
    assert!(text.contains("Differential Flame Graph"));
}

#[test]
fn diff_of_block_profiles_is_a_routine_table() {
    let Some(input) = shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let i = input.to_str().unwrap();
    let o = run(&["diff", i, i, "--top", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert!(lines[0].starts_with("costs in instructions"), "{out}");
    assert!(lines[1].starts_with("routine") && lines[1].contains("incl change"));
    assert!(lines[2..].iter().all(|l| l.trim_end().ends_with(" 0")), "{out}");
}

#[test]
fn diff_of_different_kinds_is_a_usage_error() {
    let Some(input) = shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = temp_file(&dir, "a.folded", "main 1\n");
    let o = run(&["diff", &a, input.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("same kind"), "{}", stderr(&o));
}

#[test]
fn diff_of_callgrind_profiles_compares_functions() {
    let (Some(a), Some(b)) = (
        shared_fixture("callgrind/recursive-cost.callgrind"),
        shared_fixture("callgrind/zero-call-count.callgrind"),
    ) else {
        return;
    };
    let o = run(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let row = |name: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} in {out}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    assert_eq!(row("recur")[1..], ["7", "0", "-7", "7", "0", "-7"]);
    assert_eq!(row("main")[1..], ["2", "2", "0", "9", "9", "0"]);
}

/// Folded stacks are recognised by their content, on standard input too, as every format with a
/// distinctive start is: a comment header (austin's), fractional and two-column counts.
#[test]
fn folded_stacks_are_recognised_by_content_also_on_standard_input() {
    use std::io::Write;
    for text in [
        "a;b 1\n",
        "# austin: 3.3.0\n# mode: wall\n\nP1;T1;main.py:main:3;main.py:work:9 105\nP1;T1;main.py:main:3 7\n",
        "main;parse 0.5\nmain;compute 2.25\n",
        "main;a 10 12\nmain;b 3 0\n",
    ] {
        let mut child = common::cfghub()
            .args(["info", "-", "--json"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{text:?}: {}", common::stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["format"], "folded", "{text:?}");
        // By content whatever the name.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("profile.txt");
        std::fs::write(&file, text).unwrap();
        let o = common::run(&["info", file.to_str().unwrap(), "--json"]);
        assert!(o.status.success(), "{text:?}: {}", common::stderr(&o));
    }
    // Text that is something else is not taken for folded stacks.
    for other in ["version: 1\nevents: Ir\nfl=a.c\nfn=main\n3 10\n", "hello world\n", "3 10\n4 5\n"] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.txt");
        std::fs::write(&file, other).unwrap();
        let o = common::run(&["info", file.to_str().unwrap(), "--json"]);
        let format = serde_json::from_slice::<serde_json::Value>(&o.stdout).map(|v| v["format"].clone());
        assert!(!matches!(format, Ok(ref f) if f == "folded"), "{other:?} read as folded");
    }
}

/// `perf script` samples keep their process and thread: each pid becomes a process, each tid
/// a thread of it (numbered in tid order), and the command stays the root frame.
#[test]
fn perf_samples_keep_their_processes_and_threads() {
    let input = common::fixture("perf/two-processes.perf.txt");
    let o = run(&["info", input.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let processes: Vec<(u64, u64, u64)> = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["pid"].as_u64().unwrap(), p["threads"].as_u64().unwrap(), p["stacks"].as_u64().unwrap()))
        .collect();
    assert_eq!(processes, [(4211, 2, 3), (4302, 1, 1)], "{v}");
    let o = run(&["-q", "convert", input.to_str().unwrap(), "--to", "folded", "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let folded = stdout(&o);
    assert!(folded.contains("compress;start_thread;worker;crc32_update 250000\n"), "{folded}");
    assert!(folded.contains("gzip-helper;main;copy_out;__memmove_avx_unaligned_erms 250000\n"), "{folded}");
    assert!(!folded.contains("4211"), "{folded}");
}
