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
//! An input may be a folder (Parquet tables); an expected output may be a folder too
//! (`to-tables/`: the files `cfghub convert <input> --to tables -o DIR` writes into `DIR`). A file
//! `args` in `<input>.expected/` holds arguments added to every command of the folder (such as
//! `--symbols fixtures/bolt/call_in_loop`, paths relative to the checkout); it is no output.
//!
//! The `memory:` line of `info` (how many bytes the model takes) is left out of the comparison:
//! it follows the model's layout, not the input, and has tests of its own. The folder may hold
//! expected outputs of other programs too ([`CHECKED_ELSEWHERE`]), which other tests check.
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
                    assert!(input.exists(), "{} has no input {}", expected.display(), input.display());
                    out.push((input, expected));
                }
            }
        }
    }
    out
}

/// The name of the file in an expected folder that holds the arguments added to its commands.
const ARGS: &str = "args";

/// Expected outputs of other programs, which the tests that run those programs check:
/// `callgrind_annotate.txt`, what `callgrind_annotate` prints for a Valgrind profile
/// (tests/real_clients/callgrind.rs), and `model.json`, what a reader must find in an input
/// its generator wrote (tests/dcpi_make_fixture.py; tests/roundtrip/dcpi.rs).
const CHECKED_ELSEWHERE: &[&str] = &["callgrind_annotate.txt", "model.json"];

/// The arguments of the command an expected file names; for a folder (`to-FORMAT/`), with
/// `@OUT@` where the output folder goes.
fn command(input: &str, expected: &str, is_folder: bool) -> Vec<String> {
    let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    if expected == "info.txt" {
        return owned(&["info", input]);
    }
    if let Some(format) = expected.strip_prefix("to-") {
        return owned(&["convert", input, "--to", format, "-o", if is_folder { "@OUT@" } else { "-" }]);
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
        let extra: Vec<String> = std::fs::read_to_string(folder.join(ARGS))
            .map(|text| text.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        let outputs = files
            .into_iter()
            .filter(|f| !f.ends_with(ARGS) && !CHECKED_ELSEWHERE.iter().any(|n| f.ends_with(n)));
        for file in outputs {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let mut args = command(&relative(input), &name, file.is_dir());
            args.extend(extra.iter().cloned());
            for threads in ["1", "2"] {
                let shown = format!("cfghub {} (threads: {threads})", args.join(" "));
                let result = if file.is_dir() {
                    golden_folder(&args, threads, &file, bless && threads == "1")
                } else {
                    golden_file(&args, threads, &file, bless && threads == "1")
                };
                if let Err(why) = result {
                    failures.push(format!("{shown}: {why}"));
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

/// Runs cfghub with `args` at `threads` worker threads from the checkout, `@OUT@` standing for
/// `out`; its standard output, or why it failed.
fn run_golden(args: &[String], threads: &str, out: Option<&Path>) -> Result<Vec<u8>, String> {
    let args: Vec<String> = match out {
        Some(dir) => args.iter().map(|a| a.replace("@OUT@", dir.to_str().unwrap())).collect(),
        None => args.to_vec(),
    };
    let o = common::cfghub()
        .args(&args)
        .arg("--quiet")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(format!("exit {:?}: {}", o.status.code(), common::stderr(&o)));
    }
    Ok(o.stdout)
}

/// Compares what a command prints with the expected `file` (blessing writes it first).
fn golden_file(args: &[String], threads: &str, file: &Path, bless: bool) -> Result<(), String> {
    let stdout = run_golden(args, threads, None)?;
    let stdout = if file.ends_with("info.txt") {
        common::without_memory_line(&String::from_utf8_lossy(&stdout)).into_bytes()
    } else {
        stdout
    };
    if bless {
        std::fs::write(file, &stdout).unwrap();
    }
    if stdout != std::fs::read(file).unwrap() {
        return Err(format!("output differs from {} (CFGHUB_BLESS=1 rewrites it)", relative(file)));
    }
    Ok(())
}

/// Compares the folder a command writes with the expected `folder`, file by file (blessing
/// replaces the folder's files first).
fn golden_folder(args: &[String], threads: &str, folder: &Path, bless: bool) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    run_golden(args, threads, Some(&out))?;
    let files = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .map(|e| e.unwrap().path())
                    .map(|p| {
                        (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap())
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let written = files(&out);
    if bless {
        std::fs::remove_dir_all(folder).unwrap();
        std::fs::create_dir(folder).unwrap();
        for (name, bytes) in &written {
            std::fs::write(folder.join(name), bytes).unwrap();
        }
    }
    let want = files(folder);
    if written != want {
        let names = |v: &[(String, Vec<u8>)]| v.iter().map(|f| f.0.clone()).collect::<Vec<_>>().join(", ");
        let differing: Vec<&str> = written
            .iter()
            .filter(|(name, bytes)| !want.iter().any(|(n, b)| n == name && b == bytes))
            .map(|(name, _)| name.as_str())
            .collect();
        return Err(format!(
            "the folder differs from {} (written: {}; differing: {}; CFGHUB_BLESS=1 rewrites it)",
            relative(folder),
            names(&written),
            differing.join(", ")
        ));
    }
    Ok(())
}
