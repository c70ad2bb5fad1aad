//! The command line on DCFG inputs: formats, info (text and JSON), validate's exit codes,
//! standard input and output.

use crate::common;
use std::io::Write;
use std::process::Stdio;

#[test]
fn formats_lists_what_can_be_read_and_written() {
    let o = common::run(&["formats"]);
    assert!(o.status.success());
    let out = common::stdout(&o);
    let dcfg = out.lines().find(|l| l.starts_with("dcfg ")).expect("dcfg is listed");
    assert!(dcfg.contains("yes") && dcfg.contains(".dcfg.json"), "{dcfg}");
}

#[test]
fn info_json_follows_the_documented_schema() {
    let path = common::fixture("dcfg/hello-world.dcfg.json");
    let o = common::run(&["info", "--json", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "dcfg");
    assert_eq!(v["format_version"], "1.00");
    let p = &v["processes"][0];
    assert_eq!(p["pid"], 13723);
    assert_eq!(p["threads"], 1);
    assert_eq!(p["instr_count"], 40);
    assert_eq!(p["executed_instructions"], 40);
    assert_eq!(p["images"][0]["blocks"], 6);
    assert_eq!(p["images"][0]["loops"], 1);
    assert_eq!(p["images"][1]["load_address"], "0x7f0000000000");
    assert_eq!(p["edges_by_kind"]["DIRECT_CALL"]["count"], 4);
    assert_eq!(p["top_routines"][0]["name"], "main");
    assert_eq!(p["top_routines"][0]["instructions"], 20);
    assert_eq!(p["top_loops"][0]["head"], 7);
}

#[test]
fn validate_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let good = common::fixture("dcfg/hello-world.dcfg.json");
    assert_eq!(common::run(&["validate", good.to_str().unwrap()]).status.code(), Some(0));

    // A loop node outside its routine, a block count that disagrees with its edges, and an
    // INSTR_COUNT that is not the per-thread sum: three violations, each located.
    let text = std::fs::read_to_string(&good)
        .unwrap()
        .replace("[ 7, [ 8 ], [ 7, 8 ] ]", "[ 7, [ 8 ], [ 7, 8, 4 ] ]")
        .replace("[ 9, \"0x54b\", 2, 2, 1, 1 ]", "[ 9, \"0x54b\", 2, 2, 1, 5 ]")
        .replace("\"INSTR_COUNT\" : 40", "\"INSTR_COUNT\" : 41");
    let bad = dir.path().join("bad.dcfg.json");
    std::fs::write(&bad, text).unwrap();
    let o = common::run(&["validate", bad.to_str().unwrap()]);
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("PROCESSES[0].IMAGES[0].ROUTINES[1].LOOPS: loop 7 has node(s) 4 outside its routine"),
        "{out}"
    );
    assert!(out.contains("PROCESSES[0].IMAGES[0].BASIC_BLOCKS row 6: block 9 has COUNT 5"), "{out}");
    assert!(out.contains("INSTR_COUNT is 41 but INSTR_COUNT_PER_THREAD sums to 40"), "{out}");
    assert!(out.contains("INVALID (3 violation(s)"), "{out}");

    // The same as one JSON object, for scripts.
    let o = common::run(&["validate", "--json", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["valid"].as_bool(), v["violations"].as_u64(), v["format"].as_str()),
        (Some(false), Some(3), Some("dcfg"))
    );
    let findings = v["findings"].as_array().unwrap();
    let loop_finding =
        findings.iter().find(|f| f["message"].as_str().unwrap().contains("outside its routine")).unwrap();
    assert_eq!(loop_finding["severity"], "violation");
    assert_eq!(loop_finding["place"]["path"], "PROCESSES[0].IMAGES[0].ROUTINES[1].LOOPS");
    let o = common::run(&["validate", "--json", good.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((o.status.code(), v["valid"].as_bool()), (Some(0), Some(true)));

    // Unreadable input is exit 2.
    let junk = dir.path().join("junk.dcfg.json");
    std::fs::write(&junk, "{ \"PROCESSES\": [ ").unwrap();
    assert_eq!(common::run(&["validate", junk.to_str().unwrap()]).status.code(), Some(2));
}

#[test]
fn conversions_refuse_inputs_with_violations() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(common::fixture("dcfg/hello-world.dcfg.json"))
        .unwrap()
        .replace("[ 8, 8, 7, 13, [ 2 ] ]", "[ 8, 8, 7, 99, [ 2 ] ]");
    let bad = dir.path().join("bad.dcfg.json");
    std::fs::write(&bad, text).unwrap();
    let out = dir.path().join("out.dcfg.json");
    let o = common::run(&["convert", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = common::stderr(&o);
    assert!(err.contains("EDGES row 8") && err.contains("EDGE_TYPE_ID 99"), "{err}");
    assert!(err.contains("cfghub validate"), "the error should say how to see every problem: {err}");
    assert!(!out.exists());
}

#[test]
fn standard_input_and_output() {
    let text = std::fs::read(common::fixture("dcfg/hello-world.dcfg.json")).unwrap();
    let mut child = common::cfghub()
        .args(["convert", "-", "--from", "dcfg", "-o", "-", "--to", "dcfg"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(a["PROCESSES"][1][0], 13723);
}

#[test]
fn unknown_output_name_asks_for_to() {
    let path = common::fixture("dcfg/hello-world.dcfg.json");
    let o = common::run(&["convert", path.to_str().unwrap(), "-o", "/tmp/whatever.xyz"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(common::stderr(&o).contains("--to"), "{}", common::stderr(&o));
}

/// The README's set-up is two commands, and the first converts a bundled DCFG compressed as
/// users have theirs (`.dcfg.json.bz2`): it runs, and gives what the uncompressed file gives.
#[test]
fn the_readme_first_command_converts_the_bundled_compressed_dcfg() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let setup = readme.split("## Set up").nth(1).unwrap();
    let block = setup.split("```sh").nth(1).unwrap().split("```").next().unwrap();
    let commands: Vec<&str> =
        block.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    let args: Vec<&str> = commands[0]
        .strip_prefix("cargo run --release --features tables -- ")
        .expect(commands[0])
        .split_whitespace()
        .collect();
    assert_eq!((args[0], args[2]), ("convert", "-o"), "{args:?}");
    let input = root.join(args[1]);
    assert!(args[1].ends_with(".dcfg.json.bz2") && input.exists(), "{}", input.display());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(args[3]);
    let o = common::run(&["-q", "convert", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let plain = dir.path().join("callgrind.out.plain");
    let uncompressed = input.to_str().unwrap().trim_end_matches(".bz2").to_string();
    let o = common::run(&["-q", "convert", &uncompressed, "-o", plain.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("# callgrind format"), "{text}");
    assert_eq!(text, std::fs::read_to_string(&plain).unwrap());
}
