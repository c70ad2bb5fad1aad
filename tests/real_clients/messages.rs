//! What a conversion says on standard error, tried as a new user would: a C++ program compiled
//! here and recorded by valgrind (`--dump-instr=yes --collect-jumps=yes`) and by `perf record
//! -g`, and a Go CPU profile, each converted to every writer. A run says at most one line (a
//! loss the user did not ask for: stacks estimated from a call graph, code without DWARF
//! functions); what the chosen format cannot hold by its nature is a note, shown with `-v`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// Every output a conversion can be asked for, by file name.
fn outputs() -> Vec<&'static str> {
    let mut all = vec![
        "out.folded",
        "out.svg",
        "out.pb",
        "out.speedscope.json",
        "out.fxprof.json",
        "out.cpuprofile",
        "callgrind.out.x",
        "out.dcfg.json",
        "out.fdata",
        "out.pa",
        "out.prof",
        "out.rawprof",
        "out.dot",
        "out.graphml",
        "out.dcpi",
        "out.dcpicat",
    ];
    if cfg!(feature = "tables") {
        all.push("out.tables");
    }
    all
}

fn valgrind_profile(dir: &Path, binary: &Path) -> PathBuf {
    let out = dir.join("callgrind.out.hot");
    let o = Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(binary)
        .arg("200000")
        .output()
        .unwrap();
    assert!(o.status.success(), "valgrind: {}", common::stderr(&o));
    out
}

/// Converts `input` to `output` in `dir` with `extra` options; (exit code, stderr lines).
fn convert(dir: &Path, input: &Path, output: &str, extra: &[&str]) -> (i32, Vec<String>) {
    let target = dir.join(output);
    if target.is_dir() {
        std::fs::remove_dir_all(&target).unwrap();
    }
    let o = common::cfghub()
        .args(extra)
        .arg("convert")
        .arg(input)
        .arg("-o")
        .arg(&target)
        .current_dir(dir)
        .output()
        .unwrap();
    (o.status.code().unwrap_or(-1), common::stderr(&o).lines().map(str::to_string).collect())
}

#[test]
fn a_conversion_says_at_most_one_line_and_notes_wait_for_verbose() {
    if !common::clients(&["g++", "valgrind", "perf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = common::build_hot_cpp(d);
    let mut inputs = vec![valgrind_profile(d, &binary), common::fixture("pprof/burn.cpu.pb.gz")];
    inputs.extend(common::perf_record_with_call_chains(d, &binary, "3000000"));
    let (mut said, mut chatty) = (Vec::new(), Vec::new());
    for input in &inputs {
        for output in outputs() {
            let (code, lines) = convert(d, input, output, &[]);
            let name = input.file_name().unwrap().to_string_lossy();
            if code == 0 {
                if lines.len() > 1 {
                    chatty.push(format!(
                        "{name} -> {output} said {} lines:\n{}",
                        lines.len(),
                        lines.join("\n")
                    ));
                }
            } else {
                // A refusal is one error line and its hint.
                assert_eq!(code, 2, "{name} -> {output}: {lines:?}");
                assert!(
                    lines.len() <= 2 && lines[0].starts_with("cfghub: error"),
                    "{name} -> {output}: {lines:?}"
                );
            }
            said.extend(lines.into_iter().map(|l| format!("{name} -> {output}: {l}")));
        }
    }
    assert!(chatty.is_empty(), "{}", chatty.join("\n"));
    // What the formats cannot hold by their nature is never said unasked.
    for nature in [
        "threads of stacks are not written",
        "have no place in DCFG",
        "images other than",
        "not part of the graph",
        "holds branch and fall-through counts",
        "holds executions or samples per function",
        "recursion level",
    ] {
        assert!(!said.iter().any(|l| l.contains(nature)), "{nature}:\n{}", said.join("\n"));
    }
    // A valgrind profile has instruction addresses: no edge of it "joins functions".
    assert!(!said.iter().any(|l| l.contains("join functions")), "{}", said.join("\n"));
    // Under -v the notes are told.
    if let Some(perf) = inputs.get(2) {
        let (code, lines) = convert(d, perf, "v.folded", &["-v"]);
        assert_eq!(code, 0, "{lines:?}");
        assert!(
            lines.iter().any(|l| l.contains("note: folded: threads of stacks are not written")),
            "{lines:?}"
        );
        let (_, quiet) = convert(d, perf, "q.folded", &[]);
        assert!(quiet.is_empty(), "{quiet:?}");
    }
}
