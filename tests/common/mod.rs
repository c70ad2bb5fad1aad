//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod csi;
pub mod protobuf;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The folder of real-world inputs made by other tools, beside the project checkout
/// (`CFGHUB_SHARED` overrides). `None`, with a message on stderr, when it is absent: tests that
/// need it skip.
pub fn shared_fixture(relative: &str) -> Option<PathBuf> {
    let root = std::env::var_os("CFGHUB_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let path = root.join("fixtures").join(relative);
    if path.exists() {
        Some(path)
    } else {
        eprintln!("skipping: {} is absent (real-world fixtures live in ../shared/fixtures)", path.display());
        None
    }
}

/// A file in the project's own `fixtures/` folder.
pub fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(relative)
}

/// The cfghub binary built for these tests.
pub fn cfghub() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cfghub"))
}

/// `cfghub info`'s text without its `memory:` line (the model's size follows its layout, not
/// the input; `tests/memory.rs` checks it).
pub fn without_memory_line(info: &str) -> String {
    info.split_inclusive('\n').filter(|line| !line.starts_with("memory:")).collect()
}

/// A pretty-printed DCFG of about 1.1 MB made by `cfghub synth` in `dir` (a dozen blocks at
/// `bzip2 -1`): large enough that parallel bzip2 decoding has blocks to share out.
pub fn synth_dcfg(dir: &Path) -> PathBuf {
    let path = dir.join("app.dcfg.json");
    let o = run(&[
        "synth",
        "-q",
        "--pretty",
        "--images",
        "2",
        "--routines",
        "1200",
        "--blocks",
        "24",
        "--steps",
        "60000",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::metadata(&path).unwrap().len() > 1_000_000);
    path
}

/// Runs cfghub with `args`, returning its output.
pub fn run(args: &[&str]) -> Output {
    cfghub().args(args).output().expect("cfghub runs")
}

/// Whether an external program is installed (`which`).
pub fn have(program: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Panics with a clear message when a program the test needs is missing: CI installs them.
pub fn require(program: &str) {
    assert!(have(program), "{program} is not installed; .ci/run installs it (see README)");
}

/// Whether every client program a test runs is installed. A missing one fails the test
/// (`scripts/test.sh` installs them all) unless `CFGHUB_ALLOW_MISSING_CLIENTS=1`, which lets
/// the test say so and skip: then this is `false`.
pub fn clients(programs: &[&str]) -> bool {
    let missing: Vec<&str> = programs.iter().copied().filter(|p| !have(p)).collect();
    missing.is_empty() || unavailable(&format!("{} not installed", missing.join(", ")))
}

/// For a client a test cannot use (`why`): fails the test, unless
/// `CFGHUB_ALLOW_MISSING_CLIENTS=1`, when it says it skips and returns `false`.
pub fn unavailable(why: &str) -> bool {
    if std::env::var_os("CFGHUB_ALLOW_MISSING_CLIENTS").is_some_and(|v| v == "1") {
        eprintln!("skipped: {why}");
        return false;
    }
    panic!(
        "{why}: scripts/test.sh installs every client the tests run \
         (CFGHUB_ALLOW_MISSING_CLIENTS=1 skips the tests that need one)"
    );
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs cfghub as a hostile input would find it: at most 2 GB of address space
/// (`prlimit --as`) and `seconds` of wall time (`timeout`), in `dir`, reading standard input from
/// nothing. The tools come from util-linux and coreutils, present on any Linux machine.
pub fn run_limited(dir: &Path, seconds: u32, args: &[&str]) -> Output {
    Command::new("timeout")
        .args(["-s", "KILL", &seconds.to_string(), "prlimit", "--as=2000000000", "--"])
        .arg(env!("CARGO_BIN_EXE_cfghub"))
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("timeout, prlimit and cfghub run")
}

/// What every run on hostile input must give: exit 0 or 2 (never killed by the time or memory
/// limit, never a panic), and on exit 2 a message that names where. Returns stderr.
pub fn assert_contained(o: &Output, what: &str) -> String {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "{what}: a panic: {err}");
    match o.status.code() {
        Some(0) => {}
        Some(2) => {
            assert!(err.starts_with("cfghub: "), "{what}: no message: {err}");
            // An input error says where in the input; an error about a whole file (the output, or
            // an input lacking what the command needs) names that file.
            let first = err.lines().next().unwrap_or("");
            let rest = first.trim_start_matches("cfghub: ");
            let rest = rest.trim_start_matches("usage error: ").trim_start_matches("error: ");
            let names_file = rest.starts_with("in:") || rest.starts_with("in ") || rest.contains("out.");
            assert!(located(&err) || names_file, "{what}: the message names no place: {err}");
        }
        other => panic!("{what}: exit {other:?} (killed by the limits?): {err}"),
    }
    err
}

/// Every file under `dir` with its bytes, to check that a run changed nothing but its output.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("readable folder")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| (e.path(), std::fs::read(e.path()).expect("readable file")))
        .collect();
    out.sort();
    out
}

/// Whether a message names a place: `FILE:LINE:`, `byte N`, `line N` or a table row.
pub fn located(message: &str) -> bool {
    let first = message.lines().next().unwrap_or("");
    let file_line = first.split(':').any(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    file_line || ["line ", "byte ", "row ", "column "].iter().any(|w| first.contains(w))
}

/// A DCPI binary profile of one event, written by hand: one chunk per address, 1-byte slots.
pub fn dcpi_bytes(path: &str, event: &str, tstart: u64, samples: &BTreeMap<u64, u64>) -> Vec<u8> {
    let mut header = format!(
        "version pdb-0.07\nimage 20240101000000000000\npath {path}\nepoch 2401010000\nplatform x86_64\n\
         event {event}\nperiod 100000\ntstart {tstart:x}\ntsize 4096\ncpuspeed 3000\nsamples"
    );
    while (header.len() + 1) % 4 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut b = header.into_bytes();
    let (mut n, mut sum) = (0u32, 0u32);
    for (&o, &c) in samples {
        for v in [o as u32, 1, c as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        n += (c > 0) as u32;
        sum += c as u32;
    }
    b.extend_from_slice(&n.to_le_bytes());
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

/// Renders DOT text to SVG with Graphviz, asserting success and an empty standard error.
pub fn render_dot(dot_text: &str, what: &str) -> String {
    require("dot");
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dot runs");
    child.stdin.take().unwrap().write_all(dot_text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.trim().is_empty(), "{what}: dot said: {err}\n{dot_text}");
    String::from_utf8(out.stdout).unwrap()
}

/// The C++ program of the perf.data tests (fixtures/perf-data/hot-cpp.cc) built in `dir` with
/// frame pointers and DWARF, as `dir/hot`.
pub fn build_hot_cpp(dir: &Path) -> PathBuf {
    let binary = dir.join("hot");
    let cc = Command::new("g++")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&binary)
        .arg(fixture("perf-data/hot-cpp.cc"))
        .status()
        .unwrap();
    assert!(cc.success());
    binary
}

/// `perf record -g -e cpu-clock` (else `cpu-clock:u`) of `binary ARGUMENT` into
/// `dir/hot.perf.data`; `None`, with a note, where perf may not record.
pub fn perf_record_with_call_chains(dir: &Path, binary: &Path, argument: &str) -> Option<PathBuf> {
    perf_record(&dir.join("hot.perf.data"), &["-g"], binary, argument)
}

/// `perf record OPTIONS -e cpu-clock` (else `cpu-clock:u`) of `binary ARGUMENT` into `data`;
/// `None`, with a note, where perf may not record.
pub fn perf_record(data: &Path, options: &[&str], binary: &Path, argument: &str) -> Option<PathBuf> {
    for event in ["cpu-clock", "cpu-clock:u"] {
        let o = Command::new("perf")
            .args(["record", "-q"])
            .args(options)
            .args(["-e", event, "-o"])
            .arg(data)
            .arg(binary)
            .arg(argument)
            .output()
            .unwrap();
        if o.status.success() {
            return Some(data.to_path_buf());
        }
    }
    unavailable("`perf record -e cpu-clock` is not permitted here");
    None
}

/// Runs `cmd`, which must succeed; its output.
pub fn sh(cmd: &mut Command) -> Output {
    let o = cmd.output().expect("the tool runs");
    assert!(o.status.success(), "{cmd:?}: {}{}", stdout(&o), stderr(&o));
    o
}

/// `binary ARGS` run under Callgrind with the instructions and jumps BOLT and the sample
/// profiles need (`--dump-instr=yes --collect-jumps=yes`), into `out`.
pub fn callgrind_of(binary: &Path, args: &[&str], out: &Path) -> PathBuf {
    sh(Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(binary)
        .args(args));
    out.to_path_buf()
}
