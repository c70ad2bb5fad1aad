//! Loads a profile, then writes it in the format its output name asks for, and reports how
//! long writing alone took, wall and CPU (user + system, all threads): the write half of
//! `scripts/bench-pprof.sh` and `scripts/bench-firefox.sh`.
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
    let (start, cpu_start) = (Instant::now(), cpu_seconds());
    if let Err(e) = cfghub::convert::save(&loaded.profile, output, None, &[input], &Default::default()) {
        eprintln!("{output}: {e}");
        std::process::exit(2);
    }
    let (secs, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu_start);
    let size = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    println!("{output}: {stacks} stacks written in {secs:.3} s, CPU {cpu:.3} s ({size} bytes)");
    std::mem::forget(loaded);
}

/// CPU seconds this process has used so far, user and system.
fn cpu_seconds() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}
