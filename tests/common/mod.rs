//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod csi;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
