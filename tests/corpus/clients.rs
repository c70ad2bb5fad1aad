//! Every file of ../shared/fixtures that a peer tool reads, read by cfghub, and every output
//! cfghub makes of it checked with the real program that reads that output: callgrind_annotate
//! (no warning, no empty file name), Graphviz `dot` (empty standard error), NetworkX (reads the
//! GraphML) and inferno (draws the folded stacks). The counts are printed (`--nocapture`).
//!
//! Left out: the CSI sections (read by csi-cc's tools; cfghub has no CSI reader here) and
//! Intel's own DOT picture (read by Graphviz; cfghub writes DOT, it does not read it).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// The inputs a peer tool reads, with the format cfghub must recognise them as (without
/// `--from`: by content, else by name).
fn inputs(root: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut out = Vec::new();
    let mut add = |dir: &str, from: &'static str, keep: &dyn Fn(&str) -> bool| {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { return };
        let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        files.sort();
        for f in files {
            if keep(f.file_name().unwrap().to_str().unwrap()) {
                out.push((f, from));
            }
        }
    };
    add("callgrind", "callgrind", &|_| true);
    add("dcfg", "dcfg", &|n| n.ends_with(".dcfg.json.bz2"));
    add("dcpi", "dcpicat", &|_| true);
    // DTrace aggregations, and inferno's expected collapses of them (folded stacks that
    // inferno's flamegraph reads).
    add("dtrace", "dtrace", &|n| !n.contains("__results__"));
    add("dtrace", "folded", &|n| n.contains("__results__"));
    add("folded", "folded", &|_| true);
    add("perf", "perf", &|_| true);
    out
}

/// What callgrind_annotate complained of in reading `file`.
fn annotate_complaints(file: &Path) -> Vec<String> {
    let o = Command::new("callgrind_annotate")
        .args(["--threshold=100", "--auto=yes"])
        .arg(file)
        .current_dir(file.parent().unwrap())
        .output()
        .expect("callgrind_annotate runs");
    let mut complaints: Vec<String> = common::stderr(&o).lines().map(str::to_string).collect();
    if !o.status.success() {
        complaints.push(format!("exit status {:?}", o.status.code()));
    }
    let text = common::stdout(&o);
    let mut not_found = false;
    for line in text.lines() {
        if line.contains("could not be found") {
            not_found = true;
        } else if not_found && line.starts_with("  ") && line.trim().is_empty() {
            complaints.push("an empty file name is listed as not found".into());
        } else if !line.starts_with("---") && !line.starts_with("  ") {
            not_found = false;
        }
        if line.contains("WARNING") {
            complaints.push(line.to_string());
        }
    }
    complaints
}

/// What Graphviz said on standard error in drawing `file`.
fn graphviz_complaints(file: &Path) -> Vec<String> {
    let o = Command::new("dot").arg("-Tsvg").arg(file).output().expect("dot runs");
    let mut complaints: Vec<String> = common::stderr(&o).lines().map(str::to_string).collect();
    if !o.status.success() {
        complaints.push(format!("exit status {:?}", o.status.code()));
    }
    complaints
}

/// What inferno said of the folded stacks in `file`: an error, or no picture of its stacks.
/// `None` for a file without stacks (inferno refuses to draw nothing, as for its own empty
/// collapse of a DTrace file of header lines only).
fn inferno_complaints(file: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return None;
    }
    let mut svg = Vec::new();
    let mut options = inferno::flamegraph::Options::default();
    Some(match inferno::flamegraph::from_lines(&mut options, lines.iter().copied(), &mut svg) {
        Err(e) => vec![format!("inferno: {e}")],
        Ok(()) if !String::from_utf8_lossy(&svg).contains("<title>all (") => {
            vec!["inferno drew no stack".into()]
        }
        Ok(()) => Vec::new(),
    })
}

/// NetworkX reads each GraphML file: the ones it could not read, with its message.
fn networkx_failures(files: &[PathBuf]) -> Vec<(PathBuf, String)> {
    if files.is_empty() {
        return Vec::new();
    }
    let script = r#"
import sys, networkx
for path in sys.argv[1:]:
    try:
        networkx.read_graphml(path)
        print("ok")
    except Exception as e:
        print("failed: " + str(e).replace("\n", " "))
"#;
    let o = Command::new("python3").arg("-c").arg(script).args(files).output().expect("python3 runs");
    assert!(o.status.success(), "networkx (pip install networkx): {}", common::stderr(&o));
    let out = common::stdout(&o);
    files
        .iter()
        .zip(out.lines())
        .filter(|(_, l)| *l != "ok")
        .map(|(f, l)| (f.clone(), l.to_string()))
        .collect()
}

#[test]
fn every_peer_file_reads_and_every_output_satisfies_its_client() {
    let Some(root) = common::shared_fixture("") else { return };
    for program in ["callgrind_annotate", "dot", "python3"] {
        common::require(program);
    }
    let inputs = inputs(&root);
    assert!(inputs.len() >= 30, "{} inputs", inputs.len());
    let dir = tempfile::tempdir().unwrap();
    let (mut read, mut checks, mut passed) = (0usize, 0usize, 0usize);
    // Outputs a format cannot hold, refused with a reason (folded stacks of a profile that
    // has neither stacks nor blocks to estimate them from), or that hold nothing to check.
    let mut not_applicable: Vec<String> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let mut graphml: Vec<(PathBuf, String)> = Vec::new();
    for (k, (input, from)) in inputs.iter().enumerate() {
        let name = input.strip_prefix(&root).unwrap().display().to_string();
        let path = input.to_str().unwrap();
        // Recognised as a user would have it recognised: by content, or by name.
        let o = common::run(&["-q", "info", path, "--json"]);
        let format = serde_json::from_slice::<serde_json::Value>(&o.stdout).map(|v| v["format"].clone());
        if !o.status.success() || !matches!(&format, Ok(f) if f == from) {
            failures.push(format!("{name}: not read as {from}: {format:?} {}", common::stderr(&o).trim()));
            checks += 4;
            continue;
        }
        read += 1;
        for (ext, to) in
            [("callgrind", "callgrind"), ("dot", "dot"), ("graphml", "graphml"), ("folded", "folded")]
        {
            let out = dir.path().join(format!("{k}.{ext}"));
            let o = common::run(&["-q", "convert", path, "--to", to, "-o", out.to_str().unwrap()]);
            let refused = common::stderr(&o);
            if to == "folded" && o.status.code() == Some(2) && refused.contains("the profile has no stacks") {
                not_applicable
                    .push(format!("{name} -> {to}: refused: {}", refused.lines().next().unwrap_or("")));
                continue;
            }
            if ext == "folded" && o.status.success() && inferno_complaints(&out).is_none() {
                not_applicable.push(format!("{name} -> {to}: no stacks to draw"));
                continue;
            }
            if ext != "graphml" {
                checks += 1;
            }
            if !o.status.success() {
                if ext == "graphml" {
                    checks += 1;
                }
                failures.push(format!("{name} -> {to}: {}", common::stderr(&o).trim()));
                continue;
            }
            let complaints = match ext {
                "callgrind" => annotate_complaints(&out),
                "dot" => graphviz_complaints(&out),
                "folded" => inferno_complaints(&out).unwrap_or_default(),
                _ => {
                    graphml.push((out, name.clone()));
                    continue;
                }
            };
            if complaints.is_empty() {
                passed += 1;
            } else {
                failures.push(format!("{name} -> {to}: {}", complaints.join(" | ")));
            }
        }
    }
    let files: Vec<PathBuf> = graphml.iter().map(|g| g.0.clone()).collect();
    let failed = networkx_failures(&files);
    checks += graphml.len();
    passed += graphml.len() - failed.len();
    for (f, why) in failed {
        let name = &graphml.iter().find(|g| g.0 == f).unwrap().1;
        failures.push(format!("{name} -> graphml: networkx {why}"));
    }
    println!(
        "corpus: {read} of {} peer inputs read; {passed} of {checks} client checks pass; \
         {} output(s) not applicable:\n  {}",
        inputs.len(),
        not_applicable.len(),
        not_applicable.join("\n  ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
