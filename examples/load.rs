//! Loads a profile and reports how long reading took: the read-only half of
//! `scripts/bench.sh`, measured without any command's own work on top.
//!
//! `cargo run --release --example load -- FILE [FILE...]`

use std::time::Instant;

fn main() {
    // As `cfghub` does, so that memory figures are the command's.
    cfghub::mem::map_large_allocations_apart();
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: load FILE...");
        std::process::exit(2);
    }
    let last = paths.len() - 1;
    for (k, path) in paths.into_iter().enumerate() {
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let start = Instant::now();
        match cfghub::convert::load(&path, None, &Default::default()) {
            Ok(loaded) => {
                let secs = start.elapsed().as_secs_f64();
                let blocks: usize =
                    loaded.profile.processes.iter().flat_map(|p| &p.images).map(|i| i.blocks.len()).sum();
                let edges: usize = loaded.profile.processes.iter().map(|p| p.edges.len()).sum();
                print!(
                    "{path}: {} bytes in {secs:.3} s = {:.0} MB/s ({blocks} blocks, {edges} edges)",
                    size,
                    size as f64 / secs / 1e6
                );
                let memory = loaded.profile.memory();
                let parts: Vec<String> = memory
                    .parts()
                    .iter()
                    .filter(|p| p.1 > 0)
                    .map(|(name, bytes)| format!("{name} {:.1}", *bytes as f64 / 1e6))
                    .collect();
                println!(
                    "; model {:.1} MB = {:.2}x the input ({} MB)",
                    memory.total() as f64 / 1e6,
                    memory.total() as f64 / size.max(1) as f64,
                    parts.join(", ")
                );
                if k == last {
                    // As `cfghub convert` does: the process's exit returns the memory at once.
                    std::mem::forget(loaded);
                }
            }
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(2);
            }
        }
    }
}
