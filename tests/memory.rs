//! The model's memory grows like the input: `cfghub info` reports what the model takes, part by
//! part, and on large generated profiles that is at most three times the input's size.
//!
//! The profiles are written here, shaped like what the tools write: a DCPI profile of chunks of
//! 64 slots (as the DCPI daemon stores an image's samples), and a Callgrind profile as Valgrind
//! writes it by default (line positions, calls with inclusive costs), as dense in calls as a
//! real one: a default profile of `cc1plus` has a call every 49 bytes, 1.2 cost lines of its
//! own per call, and names the callee's file for one call in twenty. Each call is an edge with
//! its inclusive cost and call site, about 110 bytes of model against 30 to 50 of text, which
//! makes calls the largest part of such a model (`scripts/bench-memory.sh`).

mod common;

use std::fmt::Write as _;
use std::path::Path;

/// What `cfghub info --json` says of the model's memory: (total bytes, input bytes, ratio).
fn reported_memory(path: &Path) -> (u64, u64, f64) {
    let o = common::run(&["info", "--json", "--quiet", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &v["memory"];
    let parts: u64 = m["parts"].as_object().unwrap().values().map(|p| p.as_u64().unwrap()).sum();
    assert_eq!(parts, m["total"].as_u64().unwrap(), "the parts add up to the total");
    (m["total"].as_u64().unwrap(), m["input"].as_u64().unwrap(), m["ratio"].as_f64().unwrap())
}

/// A DCPI profile of at least `bytes` bytes: chunks of 64 slots 4 bytes apart, 64-byte gaps
/// between chunks, counts from 0 to 1023.
fn dcpi_profile(bytes: usize) -> Vec<u8> {
    let mut head = String::from(
        "version pdb-0.07\nimage 19970328081403c0c18b\npath /usr/bin/app\nepoch 9805191724\n\
         platform walnut\nevent cycles\nperiod 63488\ntstart 120000000\ntsize 4294967295\n\
         cpuspeed 500\nsamples",
    );
    while !(head.len() + 1).is_multiple_of(4) {
        head.push(' ');
    }
    head.push('\n');
    let mut out = head.into_bytes();
    let counts: Vec<u32> = (0..64u64).map(|i| ((i * 2_654_435_761) >> 20 & 0x3ff) as u32).collect();
    let (mut offset, mut nonzero, mut sum) = (0u32, 0u32, 0u32);
    while out.len() < bytes {
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&64u32.to_le_bytes());
        for &c in &counts {
            out.extend_from_slice(&c.to_le_bytes());
            nonzero += (c != 0) as u32;
            sum = sum.wrapping_add(c);
        }
        offset += 64 * 4 + 64;
    }
    out.extend_from_slice(&nonzero.to_le_bytes());
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// A small deterministic generator, so that the profiles look irregular but are the same on
/// every run.
struct Noise(u64);

impl Noise {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// A Callgrind profile of at least `bytes` bytes as Valgrind writes it by default: functions
/// of 3 to 14 source lines in 300 files, with name compression, a cost per line, and a call
/// (with the callee's inclusive cost) after five cost lines in six, to a function of the same
/// file but for one call in twenty.
fn callgrind_lines(bytes: usize) -> String {
    let mut out = String::from(
        "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 4242\ncmd: ./app\npart: 1\n\n\
         positions: line\nevents: Ir\nsummary: 123456789\n\n",
    );
    let mut noise = Noise(7);
    let (mut f, files) = (0u64, 300u64);
    let mut calls = 0usize;
    while out.len() < bytes {
        let file = f % files;
        if f < files {
            writeln!(out, "ob=(1) /usr/bin/app\nfl=({file}) src/module{file}.c\nfn=({f}) function_{f}")
                .unwrap();
        } else {
            writeln!(out, "fl=({file})\nfn=({f}) function_{f}").unwrap();
        }
        writeln!(out, "{} {}", 10 + noise.below(4000), 1 + noise.below(500)).unwrap();
        for _ in 0..3 + noise.below(12) {
            writeln!(out, "+{} {}", noise.below(4), 1 + noise.below(1000)).unwrap();
            if noise.below(6) != 0 {
                let same_file = f >= files && noise.below(20) != 0;
                let callee =
                    if same_file { file + files * noise.below(f / files) } else { noise.below(f + 1) };
                // Valgrind names the callee's file when it is not the caller's.
                if callee % files != file {
                    writeln!(out, "cfi=({})", callee % files).unwrap();
                }
                if noise.below(10) != 0 {
                    writeln!(out, "cfn=({callee})").unwrap();
                } else {
                    writeln!(out, "cfn=({callee}) function_{callee}").unwrap();
                }
                writeln!(
                    out,
                    "calls={} +{}\n* {}",
                    1 + noise.below(100),
                    noise.below(100),
                    noise.below(1_000_000)
                )
                .unwrap();
                calls += 1;
            }
        }
        out.push('\n');
        f += 1;
    }
    assert!(out.len() / calls <= 50, "a call every {} bytes", out.len() / calls);
    out
}

#[test]
fn a_dcpi_profile_of_50_mb_takes_at_most_three_times_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.dcpi");
    std::fs::write(&path, dcpi_profile(50_000_000)).unwrap();
    let (total, input, ratio) = reported_memory(&path);
    assert!(input >= 50_000_000);
    assert!(total <= 3 * input && ratio <= 3.0, "{total} bytes for {input}: {ratio}x");
}

#[test]
fn a_line_level_callgrind_profile_of_50_mb_takes_at_most_three_times_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("callgrind.out.4242");
    std::fs::write(&path, callgrind_lines(50_000_000)).unwrap();
    let (total, input, ratio) = reported_memory(&path);
    println!("{total} bytes of model for {input} of input: {ratio:.2}x");
    assert!(input >= 50_000_000);
    assert!(total <= 3 * input && ratio <= 3.0, "{total} bytes for {input}: {ratio}x");
}

#[test]
fn info_prints_the_models_memory_by_part() {
    let input = common::fixture("dcpi/alpha-cycles.dcpi");
    let o = common::run(&["info", input.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    let line = text.lines().find(|l| l.starts_with("memory:")).expect("a memory line");
    assert!(
        line.contains("in the model") && line.contains("x the input") && line.contains("costs "),
        "{line}"
    );
}
