//! Golden files: every input in `fixtures/<format>/` that has a folder `<input>.expected/`
//! beside it is run through each command that folder names, and the output must equal the
//! file byte for byte, with one worker thread and with two (readers and decoders that work in
//! parallel must give what one thread gives).
//!
//! In `<input>.expected/`:
//! - `info.txt` is what `cfghub info <input>` prints;
//! - `to-<format>` is what `cfghub convert <input> --to <format> -o -` writes;
//! - for a DCFG-trace `<name>.trace.json`, whose DCFG is `<name>.dcfg.json` beside it when there
//!   is one: `trace-edges`, `trace-timeline` and `trace-stats.json` are what `cfghub trace edges`,
//!   `trace timeline` and `trace stats --json` print for it (with `--dcfg <name>.dcfg.json`), and
//!   `replayed-to-<format>` what `cfghub convert <name>.dcfg.json --trace <input> --to <format>
//!   -o -` writes.
//!
//! The `memory:` line of `info` (how many bytes the model takes) is left out of the comparison:
//! it follows the model's layout, not the input, and has tests of its own.
//!
//! Run with `CFGHUB_BLESS=1` to write the expected files from what cfghub does now (then read
//! the diff before committing it).

mod common;

use std::path::{Path, PathBuf};

/// Every `(input, expected folder)` pair below `fixtures/`.
fn cases() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let root = common::fixture("");
    let mut formats: Vec<PathBuf> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    formats.sort();
    for dir in formats {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for expected in entries {
            let name = expected.file_name().unwrap().to_string_lossy().into_owned();
            if let Some(input) = name.strip_suffix(".expected") {
                if expected.is_dir() {
                    let input = dir.join(input);
                    assert!(input.is_file(), "{} has no input {}", expected.display(), input.display());
                    out.push((input, expected));
                }
            }
        }
    }
    out
}

/// The arguments of the command an expected file names.
fn command(input: &str, expected: &str) -> Vec<String> {
    let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    if expected == "info.txt" {
        return owned(&["info", input]);
    }
    if let Some(format) = expected.strip_prefix("to-") {
        return owned(&["convert", input, "--to", format, "-o", "-"]);
    }
    let dcfg = input.strip_suffix(".trace.json").map(|stem| format!("{stem}.dcfg.json"));
    let dcfg = dcfg.filter(|d| Path::new(env!("CARGO_MANIFEST_DIR")).join(d).is_file());
    let with_dcfg = |mut args: Vec<String>| {
        if let Some(d) = &dcfg {
            args.extend(["--dcfg".to_string(), d.clone()]);
        }
        args
    };
    match expected {
        "trace-edges" => with_dcfg(owned(&["trace", "edges", input])),
        "trace-timeline" => with_dcfg(owned(&["trace", "timeline", input])),
        "trace-stats.json" => with_dcfg(owned(&["trace", "stats", input, "--json"])),
        _ => {
            let format = expected.strip_prefix("replayed-to-");
            match (format, &dcfg) {
                (Some(format), Some(d)) => {
                    owned(&["convert", d, "--trace", input, "--to", format, "-o", "-"])
                }
                _ => panic!("unknown golden file {expected} for {input}"),
            }
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap().to_string_lossy().into_owned()
}

#[test]
fn every_fixture_gives_its_expected_outputs_at_one_and_two_threads() {
    let bless = std::env::var_os("CFGHUB_BLESS").is_some();
    let cases = cases();
    assert!(cases.len() >= 8, "golden cases found: {}", cases.len());
    let mut failures = Vec::new();
    let mut checked = 0;
    for (input, folder) in &cases {
        let mut files: Vec<PathBuf> = std::fs::read_dir(folder).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        assert!(!files.is_empty(), "{} is empty", folder.display());
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let args = command(&relative(input), &name);
            for threads in ["1", "2"] {
                let out = common::cfghub()
                    .args(&args)
                    .arg("--quiet")
                    .current_dir(env!("CARGO_MANIFEST_DIR"))
                    .env("RAYON_NUM_THREADS", threads)
                    .output()
                    .unwrap();
                let shown = format!("cfghub {} (threads: {threads})", args.join(" "));
                if !out.status.success() {
                    failures.push(format!("{shown}: exit {:?}: {}", out.status.code(), common::stderr(&out)));
                    continue;
                }
                let stdout = if name == "info.txt" {
                    common::without_memory_line(&String::from_utf8_lossy(&out.stdout)).into_bytes()
                } else {
                    out.stdout
                };
                if bless && threads == "1" {
                    std::fs::write(&file, &stdout).unwrap();
                }
                let want = std::fs::read(&file).unwrap();
                if stdout != want {
                    failures.push(format!(
                        "{shown}: output differs from {} (CFGHUB_BLESS=1 rewrites it)",
                        relative(&file)
                    ));
                }
                checked += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} golden runs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
