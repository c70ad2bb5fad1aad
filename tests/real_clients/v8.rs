//! V8 CPU profiles from real producers: Node 20's `--cpu-prof` (fixtures/cpuprofile) and
//! Chromium's tracing (fixtures/chrome-trace). The Firefox Profiler's own command-line client
//! (`profiler-cli`, the profiler's importer and call tree under node) loads the fixtures and
//! what cfghub writes of them in both formats, and counts per function the samples cfghub
//! reads, less those it leaves out: every sample less than 0.5 ms after the last one it kept
//! (its importer's fixed interval for Chrome profiles), and a sample at a `.cpuprofile`'s
//! `endTime` itself (outside the profile's range), which the test works out from the file's
//! own times as the profiler does, in milliseconds of floating point.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{self, fixture};
use crate::firefox::{profiler_cli, ProfilerSession};

/// The times of a file's samples as the Firefox Profiler's importer takes them: a
/// `.cpuprofile`'s `startTime`, `timeDeltas` and `endTime`, or a trace's `Profile` start and
/// its chunks' deltas in order (the file holds one V8 profile), without an end.
fn times(file: &Path) -> (f64, Vec<f64>, Option<f64>) {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let numbers =
        |v: &serde_json::Value| v.as_array().unwrap().iter().map(|d| d.as_f64().unwrap()).collect::<Vec<_>>();
    match v.get("traceEvents") {
        None => (v["startTime"].as_f64().unwrap(), numbers(&v["timeDeltas"]), v["endTime"].as_f64()),
        Some(events) => {
            let events = events.as_array().unwrap();
            let profile = events.iter().find(|e| e["name"] == "Profile").unwrap();
            let deltas = events
                .iter()
                .filter(|e| e["name"] == "ProfileChunk")
                .flat_map(|e| numbers(&e["args"]["data"]["timeDeltas"]))
                .collect();
            (profile["args"]["data"]["startTime"].as_f64().unwrap(), deltas, None)
        }
    }
}

/// Which samples the Firefox Profiler shows: its importer (profile-logic/import/chrome.js)
/// adds each delta to the time in milliseconds and keeps a sample when that time is at least
/// its interval, 0.5 ms, past the last sample kept (the first compared with 0); a
/// `.cpuprofile`'s range ends at its `endTime`, and a sample at the end itself (one that lasts
/// no time) is outside it.
fn shown_by_firefox(start: f64, deltas: &[f64], end: Option<f64>) -> Vec<bool> {
    let (mut seen, mut sampled) = (start / 1e3, 0.0);
    deltas
        .iter()
        .map(|d| {
            seen += d / 1e3;
            let keep = seen - sampled >= 0.5;
            if keep {
                sampled = seen;
            }
            keep && end.is_none_or(|e| seen < e / 1e3)
        })
        .collect()
}

/// cfghub's samples of `file`, each its leaf function, in order: its folded stacks of the
/// sample count, one line a sample.
fn leaves(file: &Path) -> Vec<String> {
    let o =
        common::run(&["convert", file.to_str().unwrap(), "--to", "folded", "--event", "samples", "-o", "-"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    common::stdout(&o)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap();
            assert_eq!(n, "1", "{l}");
            stack.rsplit(';').next().unwrap().to_string()
        })
        .collect()
}

/// profiler-cli's self samples per function name of the file's one thread, idle included.
fn firefox_self_samples(file: &Path) -> (BTreeMap<String, u64>, String) {
    let session = ProfilerSession::load(file);
    let threads = session.threads();
    assert_eq!(threads.len(), 1, "{}: {threads:?}", file.display());
    let o = session.run(&[
        "thread",
        "functions",
        "--thread",
        &threads[0],
        "--json",
        "--limit",
        "0",
        "--include-idle",
    ]);
    assert!(o.status.success(), "profiler-cli thread functions: {}{}", o.stdout, o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let mut out = BTreeMap::new();
    for f in v["functions"].as_array().unwrap() {
        let n = f["selfSamples"].as_f64().unwrap() as u64;
        if n > 0 {
            *out.entry(f["name"].as_str().unwrap().to_string()).or_insert(0) += n;
        }
    }
    let o = session.run(&["thread", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    (out, list["threads"][0]["name"].as_str().unwrap().to_string())
}

/// cfghub's samples per leaf function of `file`: all of them, and those the Firefox Profiler
/// keeps.
fn cfghub_counts(file: &Path) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let leaves = leaves(file);
    let (start, deltas, end) = times(file);
    assert_eq!(leaves.len(), deltas.len(), "{}", file.display());
    let kept = shown_by_firefox(start, &deltas, end);
    let (mut all, mut shown) = (BTreeMap::new(), BTreeMap::new());
    for (leaf, keep) in leaves.into_iter().zip(kept) {
        *all.entry(leaf.clone()).or_insert(0) += 1;
        if keep {
            *shown.entry(leaf).or_insert(0) += 1;
        }
    }
    (all, shown)
}

#[test]
fn the_firefox_profiler_counts_per_function_what_cfghub_reads_and_writes() {
    profiler_cli();
    let dir = tempfile::tempdir().unwrap();
    // (input, samples cfghub reads, of them the Firefox Profiler keeps, its thread's name)
    let cases = [
        ("cpuprofile/small.cpuprofile", 132, 126, "Chrome Thread"),
        ("chrome-trace/burn.chrome-trace.json", 3423, 1307, "CrRendererMain"),
    ];
    for (input, read, shown_total, thread) in cases {
        let original = fixture(input);
        let mut files = vec![original.clone()];
        for (name, to) in [("out.cpuprofile", "cpuprofile"), ("out-trace.json", "chrome-trace")] {
            let out = dir.path().join(format!("{}-{name}", original.file_name().unwrap().to_str().unwrap()));
            let o = common::run(&[
                "-q",
                "convert",
                original.to_str().unwrap(),
                "--to",
                to,
                "-o",
                out.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", common::stderr(&o));
            files.push(out);
        }
        let (all, _) = cfghub_counts(&original);
        assert_eq!(all.values().sum::<u64>(), read, "{input}");
        for file in &files {
            let (ours, shown) = cfghub_counts(file);
            // What cfghub writes it reads back: the same samples per function.
            assert_eq!(ours, all, "{}", file.display());
            let (theirs, name) = firefox_self_samples(file);
            assert_eq!(theirs, shown, "{}", file.display());
            if file == &original {
                assert_eq!(theirs.values().sum::<u64>(), shown_total, "{input}");
                assert_eq!(name, thread, "{input}");
            }
        }
    }
}
