//! Prints, for each mangled symbol name read from standard input (one a line), the name perf
//! prints for it, as cfghub names perf.data frames: the input of
//! `scripts/perf-names-vs-cxxfilt.sh`.
//!
//! `cargo run --release --example perf_names < names.txt`

use std::io::{BufRead, BufWriter, Write};

fn main() {
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        if writeln!(out, "{}", cfghub::formats::perf::data::perf_name(&line)).is_err() {
            break;
        }
    }
    let _ = out.flush();
}
