//! Loads a profile, then writes it in the format its output name asks for, and reports how
//! long writing alone took: the write half of `scripts/bench-pprof.sh`.
//!
//! `cargo run --release --example write -- IN OUT`

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = &args[..] else {
        eprintln!("usage: write IN OUT");
        std::process::exit(2);
    };
    let loaded = cfghub::convert::load(input, None, &Default::default()).unwrap_or_else(|e| {
        eprintln!("{input}: {e}");
        std::process::exit(2);
    });
    let stacks: usize = loaded.profile.processes.iter().map(|p| p.stacks.len()).sum();
    let start = Instant::now();
    if let Err(e) = cfghub::convert::save(&loaded.profile, output, None, &[input], &Default::default()) {
        eprintln!("{output}: {e}");
        std::process::exit(2);
    }
    let secs = start.elapsed().as_secs_f64();
    let size = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    println!("{output}: {stacks} stacks written in {secs:.3} s ({size} bytes)");
    std::mem::forget(loaded);
}
