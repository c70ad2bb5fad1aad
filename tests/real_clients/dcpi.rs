//! DCPI samples merged into a DCFG, read by the real clients: `callgrind_annotate` shows the
//! same per-function sample totals as cfghub's own per-routine figures, and Graphviz renders
//! the control flow coloured by samples.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common;

/// simple-loop with cycles samples in every block of the executable and of ld.so: `7 + k % 5`
/// at the first instruction of block k.
fn merged(dir: &Path, output: &str) -> Option<std::path::PathBuf> {
    let dcfg = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2")?;
    let graph = cfghub::convert::load(dcfg.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    let mut files = Vec::new();
    for (n, image) in graph.processes[0].images.iter().take(2).enumerate() {
        let samples: BTreeMap<u64, u64> =
            image.blocks.iter().enumerate().map(|(k, b)| (b.offset, 7 + k as u64 % 5)).collect();
        let file = dir.join(format!("cycles{n}.dcpi"));
        std::fs::write(
            &file,
            common::dcpi_bytes(&graph.image_name(image), "cycles", image.load_addr, &samples),
        )
        .unwrap();
        files.push(file);
    }
    let out = dir.join(output);
    let mut args = vec!["-q", "merge", dcfg.to_str().unwrap()];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(["--address-step", "1", "-o", out.to_str().unwrap()]);
    let o = common::run(&args);
    assert!(o.status.success(), "{}", common::stderr(&o));
    Some(out)
}

/// `cfghub info --json` samples per routine name, summed over routines of the same name.
fn cfghub_per_routine(file: &Path) -> BTreeMap<String, u64> {
    let o = common::run(&["info", "--json", "--top", "100000", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut out = BTreeMap::new();
    for r in v["processes"][0]["top_routines"].as_array().unwrap() {
        let n = r["samples"]["cycles"].as_u64().unwrap_or(0);
        if n > 0 {
            *out.entry(r["name"].as_str().unwrap().to_string()).or_default() += n;
        }
    }
    out
}

#[test]
fn callgrind_annotate_shows_the_same_per_function_samples() {
    common::require("callgrind_annotate");
    let dir = tempfile::tempdir().unwrap();
    let Some(callgrind) = merged(dir.path(), "callgrind.out.simple-loop") else { return };
    let Some(dcfg) = merged(dir.path(), "merged.dcfg.json") else { return };
    let expected = cfghub_per_routine(&dcfg);
    assert!(expected.len() > 50, "samples in many routines: {expected:?}");

    let o = Command::new("callgrind_annotate")
        .args(["--show=cycles", "--sort=cycles", "--threshold=100", "--auto=no"])
        .arg(&callgrind)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut shown: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = None;
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(number) = fields.next().and_then(|n| n.replace(',', "").parse::<u64>().ok()) else {
            continue;
        };
        let rest: Vec<&str> = fields.collect();
        if rest.ends_with(&["PROGRAM", "TOTALS"]) {
            total = Some(number);
            continue;
        }
        // "N (P%)  FILE:FUNCTION [OBJECT]"
        if let Some(func) = rest.iter().find(|f| f.contains(':')) {
            let name = func.split_once(':').map(|(_, f)| f).unwrap_or(func);
            *shown.entry(name.to_string()).or_default() += number;
        }
    }
    let all: u64 = expected.values().sum();
    assert_eq!(total, Some(all), "{text}");
    assert_eq!(shown, expected, "{text}");
}

#[test]
fn graphviz_renders_the_main_routine_coloured_by_samples() {
    common::require("dot");
    let dir = tempfile::tempdir().unwrap();
    let Some(merged) = merged(dir.path(), "merged.dcfg.json") else { return };
    let dot_file = dir.path().join("main.dot");
    let o = common::run(&[
        "-q",
        "dot",
        merged.to_str().unwrap(),
        "--routine",
        "main",
        "--event",
        "cycles",
        "-o",
        dot_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&dot_file).unwrap();
    assert!(text.contains("cycles"), "the event is shown: {text}");
    let o = Command::new("dot")
        .args(["-Tsvg", "-o"])
        .arg(dir.path().join("main.svg"))
        .arg(&dot_file)
        .output()
        .unwrap();
    assert!(o.status.success() && o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Samples in main's blocks keep main's source file (`simple_loop.c:main`, beside its `Ir`),
/// and samples in no block stay in the Callgrind file and its totals under a function that
/// says where they are.
#[test]
fn merged_samples_keep_their_source_file_and_none_is_lost() {
    common::require("callgrind_annotate");
    let Some(dcfg) = common::shared_fixture("dcfg/simple-loop.dcfg.json.bz2") else { return };
    let graph = cfghub::convert::load(dcfg.to_str().unwrap(), None, &Default::default()).unwrap().profile;
    let exe = &graph.processes[0].images[0];
    let main = exe.symbols.iter().find(|s| s.name == "main").unwrap();
    let (start, size) = (main.offset.unwrap(), main.size.unwrap());
    let mut samples: BTreeMap<u64, u64> = (0..4).map(|k| (start + k * size / 4, 10 + k)).collect();
    // Past every block of the executable: three samples in no block.
    let end = exe.blocks.iter().map(|b| b.offset + u64::from(b.size)).max().unwrap();
    samples.insert(end + 0x40, 3);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cycles.dcpi");
    std::fs::write(&file, common::dcpi_bytes(&graph.image_name(exe), "cycles", exe.load_addr, &samples))
        .unwrap();
    let out = dir.path().join("callgrind.out.merged");
    let o = common::run(&[
        "merge",
        dcfg.to_str().unwrap(),
        file.to_str().unwrap(),
        "--address-step",
        "1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = Command::new("callgrind_annotate")
        .args(["--show=cycles", "--sort=cycles", "--threshold=100", "--auto=no"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let total: u64 = samples.values().sum();
    let row = |what: &str| {
        text.lines()
            .find(|l| l.contains(what))
            .and_then(|l| l.split_whitespace().next())
            .map(|n| n.replace(',', "").parse::<u64>().unwrap())
    };
    assert_eq!(row("PROGRAM TOTALS"), Some(total), "{text}");
    assert_eq!(row("simple_loop.c:main "), Some(total - 3), "{text}");
    assert_eq!(row("[samples in no executed block]"), Some(3), "{text}");
    assert!(!text.lines().any(|l| l.contains(" ???:main ") || l.contains(" :main ")), "{text}");
}
