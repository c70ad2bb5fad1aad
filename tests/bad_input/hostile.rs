//! Hostile inputs against every command, under the limits a careful user would set:
//! `prlimit --as=2000000000` and `timeout`. Each run ends with exit 0 or 2 (never killed, never a
//! panic), an exit-2 message names where, no output file is left behind by a failed run, and the
//! inputs are untouched.

use crate::common;

#[test]
fn a_stack_of_300000_frames_converts_to_callgrind_in_linear_time() {
    // Quadratic work in the depth (a distinct-pair check per frame against all the stack's
    // pairs) took minutes here; linear work takes a second or two.
    let dir = tempfile::tempdir().unwrap();
    let frames: Vec<String> = (0..300_000).map(|i| format!("f{i}")).collect();
    std::fs::write(dir.path().join("deep.folded"), format!("{} 7\n", frames.join(";"))).unwrap();
    let o = common::run_limited(dir.path(), 120, &["-q", "convert", "deep.folded", "-o", "deep.callgrind"]);
    common::assert_contained(&o, "deep stack");
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let out = std::fs::read_to_string(dir.path().join("deep.callgrind")).unwrap();
    assert_eq!(out.matches("calls=").count(), 299_999, "one call per caller-callee pair");
}

/// Every reader, by name.
const READERS: &[&str] = &["dcfg", "dcfg-trace", "callgrind", "dcpi", "dcpicat", "folded", "dtrace", "perf"];

/// Inputs no reader should accept as they are, or should read without harm.
fn hostile_inputs() -> Vec<(&'static str, Vec<u8>)> {
    let hello = std::fs::read(common::fixture("dcfg/hello-world.dcfg.json")).unwrap();
    let trace = std::fs::read(common::fixture("dcfg-trace/small.trace.json")).unwrap();
    let dcpi = std::fs::read(common::fixture("dcpi/alpha-cycles.dcpi")).unwrap();
    let callgrind = std::fs::read(common::fixture("callgrind/callgrind.out.recursion-loops")).unwrap();
    let mut random = Vec::with_capacity(1 << 16);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..(1 << 16) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        random.push(x as u8);
    }
    vec![
        ("empty", Vec::new()),
        ("nul bytes", vec![0; 4096]),
        ("control bytes", b"a\x1b[31m;b\x07 1\r\n\x00\x01\x02 x\n".to_vec()),
        ("prose", b"This is not a profile.\nIt has words, and 2 numbers: 3 4\n".to_vec()),
        ("random bytes", random),
        ("half a DCFG", hello[..hello.len() / 2].to_vec()),
        ("half a trace", trace[..trace.len() / 2].to_vec()),
        ("half a DCPI profile", dcpi[..dcpi.len() / 2].to_vec()),
        ("half a Callgrind profile", callgrind[..callgrind.len() / 2].to_vec()),
        ("deep JSON", [&b"{\"PROCESSES\":"[..], &b"[".repeat(100_000)].concat()),
        ("a 16 MB line", [&b"a;b "[..], &b"9".repeat(16 << 20)].concat()),
    ]
}

#[test]
fn every_command_on_every_reader_contains_hostile_input() {
    let dir = tempfile::tempdir().unwrap();
    let hello = common::fixture("dcfg/hello-world.dcfg.json");
    std::fs::copy(&hello, dir.path().join("good.dcfg.json")).unwrap();
    for (what, bytes) in hostile_inputs() {
        std::fs::write(dir.path().join("in"), &bytes).unwrap();
        let before = common::snapshot(dir.path());
        for format in READERS {
            let runs: Vec<Vec<&str>> = vec![
                vec!["info", "--from", format, "in"],
                vec!["validate", "--from", format, "in"],
                vec!["convert", "--from", format, "in", "-o", "out.dcfg.json"],
                vec!["convert", "--from", format, "in", "-o", "out.callgrind"],
                vec!["convert", "--from", format, "in", "-o", "out.folded"],
                vec!["dot", "--from", format, "in", "-o", "out.dot"],
                vec!["diff", "--from", format, "in", "in", "-o", "out.txt"],
            ];
            for args in runs {
                let label = format!("{what}: {}", args.join(" "));
                let o = common::run_limited(dir.path(), 120, &args);
                // validate exits 1 on rule violations: findings, not a failure.
                if args[0] == "validate" && o.status.code() == Some(1) {
                    assert!(!common::stderr(&o).contains("panicked"), "{label}");
                    continue;
                }
                common::assert_contained(&o, &label);
                let mut after = common::snapshot(dir.path());
                if o.status.code() == Some(0) {
                    // A success may leave its output; nothing else changes.
                    after.retain(|(p, _)| {
                        !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("out."))
                    });
                    for (p, _) in common::snapshot(dir.path()) {
                        if p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("out.")) {
                            std::fs::remove_file(p).unwrap();
                        }
                    }
                }
                assert_eq!(after, before, "{label}: a failed run left files or changed an input");
            }
        }
        let o =
            common::run_limited(dir.path(), 120, &["merge", "good.dcfg.json", "in", "-o", "out.dcfg.json"]);
        common::assert_contained(&o, &format!("{what}: merge"));
        for args in [vec!["trace", "stats", "in"], vec!["trace", "edges", "in", "-o", "out.edges"]] {
            let o = common::run_limited(dir.path(), 120, &args);
            common::assert_contained(&o, &format!("{what}: {}", args.join(" ")));
        }
        for (p, _) in common::snapshot(dir.path()) {
            if p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("out.")) {
                std::fs::remove_file(p).unwrap();
            }
        }
        assert_eq!(common::snapshot(dir.path()), before, "{what}: inputs changed");
    }
}

#[test]
fn control_bytes_quoted_from_the_input_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("ctl.folded", &b"a\0b\x1b[31m x1\n"[..]),
        ("ctl.callgrind", &b"# callgrind format\nevents: Ir\nfn=a\n\0\x1b[2J zz\n"[..]),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
        let o = common::run_limited(dir.path(), 60, &["convert", name, "-o", "out.dcfg.json"]);
        let err = common::assert_contained(&o, name);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(!o.stderr.iter().any(|&b| b == 0 || b == 0x1b), "{name}: raw control bytes: {err:?}");
        assert!(err.contains("\\0") && err.contains("\\x1b["), "{name}: {err}");
    }
}

/// The reader each fuzz target drives (fuzz/src/bin/<target>.rs).
fn reader_of_fuzz_target(target: &str) -> &str {
    match target {
        "dcfg-trace-edges" => "dcfg-trace",
        "compressed" => "dcfg",
        other => other,
    }
}

#[test]
fn every_fuzz_finding_stays_contained() {
    // What the fuzzers found (fixtures/fuzz/<target>/<finding>), replayed through every
    // command that reads the target's format, under the hostile-input limits.
    let root = common::fixture("fuzz");
    let mut replayed = 0;
    for target in std::fs::read_dir(&root).unwrap() {
        let target = target.unwrap().path();
        if !target.is_dir() {
            continue;
        }
        let format = reader_of_fuzz_target(target.file_name().unwrap().to_str().unwrap()).to_string();
        for finding in std::fs::read_dir(&target).unwrap() {
            let finding = finding.unwrap().path();
            let dir = tempfile::tempdir().unwrap();
            std::fs::copy(&finding, dir.path().join("in")).unwrap();
            let before = common::snapshot(dir.path());
            for args in [
                vec!["info", "--from", &format, "in"],
                vec!["convert", "--from", &format, "in", "-o", "out.folded"],
                vec!["trace", "stats", "in"],
            ] {
                if args[0] == "trace" && format != "dcfg-trace" {
                    continue;
                }
                let label = format!("{}: {}", finding.display(), args.join(" "));
                let o = common::run_limited(dir.path(), 120, &args);
                common::assert_contained(&o, &label);
                if o.status.code() == Some(2) {
                    assert_eq!(common::snapshot(dir.path()), before, "{label}: files left or changed");
                }
            }
            replayed += 1;
        }
    }
    assert!(replayed > 0, "fixtures/fuzz holds the fuzzers' findings");
}

// The readers of pprof, CSI and ELF/DWARF (`--symbols`) under the same limits: 2 GB of
// address space and 10 seconds. Large inputs are generated here; where a defect was memory
// out of proportion to the input, the peak resident size is checked as well.

use crate::common::protobuf::{field, uint, varint};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Seconds every run below may take: 10 for an optimised build; an unoptimised (debug) build
/// of cfghub runs some ten times slower, and tests of it run beside each other.
pub(crate) const LIMIT_S: u32 = if cfg!(debug_assertions) { 90 } else { 10 };

/// Runs cfghub in `dir` under the limits, measuring its peak resident size (KiB).
pub(crate) fn run_measured(dir: &Path, args: &[&str]) -> (Output, u64) {
    run_measured_in(dir, 2_000_000_000, args)
}

/// [`run_measured`] with `bytes` of address space.
fn run_measured_in(dir: &Path, bytes: u64, args: &[&str]) -> (Output, u64) {
    let rss = dir.join(".rss");
    let o = Command::new("timeout")
        .args(["-s", "KILL", &LIMIT_S.to_string(), "/usr/bin/time", "-f", "%M", "-o"])
        .arg(&rss)
        .args(["prlimit", &format!("--as={bytes}"), "--"])
        .arg(env!("CARGO_BIN_EXE_cfghub"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("timeout, time, prlimit and cfghub run");
    let text = std::fs::read_to_string(&rss).unwrap_or_default();
    let kib = text.lines().filter_map(|l| l.trim().parse().ok()).next_back().unwrap_or(u64::MAX);
    let _ = std::fs::remove_file(&rss);
    (o, kib)
}

/// A pprof profile: sample type `samples/count`, functions `f1..=functions` at locations of
/// the same ids, the strings, then `body` (samples and anything else).
fn pprof(functions: u64, strings: &[&str], body: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    let mut vt = Vec::new();
    uint(&mut vt, 1, 1);
    uint(&mut vt, 2, 2);
    field(&mut p, 1, &vt);
    for id in 1..=functions {
        let mut f = Vec::new();
        uint(&mut f, 1, id);
        uint(&mut f, 2, 3);
        field(&mut p, 5, &f);
        let mut line = Vec::new();
        uint(&mut line, 1, id);
        let mut loc = Vec::new();
        uint(&mut loc, 1, id);
        field(&mut loc, 4, &line);
        field(&mut p, 4, &loc);
    }
    for s in ["", "samples", "count", "f"].iter().chain(strings) {
        field(&mut p, 6, s.as_bytes());
    }
    p.extend_from_slice(body);
    p
}

/// One sample: location ids (leaf first) and one value.
fn sample(locations: &[u64], value: u64) -> Vec<u8> {
    let mut ids = Vec::new();
    locations.iter().for_each(|&l| varint(&mut ids, l));
    let mut s = Vec::new();
    field(&mut s, 1, &ids);
    field(&mut s, 2, &[value as u8]);
    let mut out = Vec::new();
    field(&mut out, 2, &s);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn pprof_inline_chains_named_many_times_are_refused_not_multiplied() {
    // Location 1 has 100,000 inline lines; one sample names it 50,000 times: 5x10^9 frames.
    let dir = tempfile::tempdir().unwrap();
    let mut loc = Vec::new();
    uint(&mut loc, 1, 1);
    let mut line = Vec::new();
    uint(&mut line, 1, 1);
    for _ in 0..100_000 {
        field(&mut loc, 4, &line);
    }
    let mut body = Vec::new();
    field(&mut body, 4, &loc);
    body.extend(sample(&vec![1; 50_000], 1));
    let mut p = pprof(0, &[], &[]);
    let mut f = Vec::new();
    uint(&mut f, 1, 1);
    uint(&mut f, 2, 3);
    field(&mut p, 5, &f);
    p.extend(body);
    std::fs::write(dir.path().join("in.pb"), &p).unwrap();
    std::fs::write(dir.path().join("in.pb.gz"), gzip(&p)).unwrap();
    for input in ["in.pb", "in.pb.gz"] {
        for args in [vec!["info", input], vec!["convert", input, "-o", "out.folded"]] {
            let o = common::run_limited(dir.path(), LIMIT_S, &args);
            let err = common::assert_contained(&o, &args.join(" "));
            assert_eq!(o.status.code(), Some(2), "{err}");
            assert!(err.contains("sample[0]") && err.contains("frames"), "{err}");
            assert!(!dir.path().join("out.folded").exists());
        }
    }
}

#[test]
fn pprof_dense_samples_cost_their_distinct_stacks() {
    // 600,000 samples of 9 bytes (one location, one value): 5.4 MB. Each sample used to cost
    // some 166 bytes; equal samples are one stack now, at most 3x the input in all.
    let dir = tempfile::tempdir().unwrap();
    let mut body = Vec::new();
    let n = 600_000u64;
    for i in 0..n {
        body.extend(sample(&[1 + i % 3], 1 + (i % 2)));
    }
    let p = pprof(3, &[], &body);
    std::fs::write(dir.path().join("in.pb"), &p).unwrap();
    let (o, kib) = run_measured(dir.path(), &["convert", "in.pb", "-o", "out.folded"]);
    let err = common::assert_contained(&o, "dense samples");
    assert_eq!(o.status.code(), Some(0), "{err}");
    let out = std::fs::read_to_string(dir.path().join("out.folded")).unwrap();
    let total: u64 = out.lines().map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(total, n / 2 + 2 * (n / 2), "every sample's value is counted");
    assert_eq!(out.lines().count(), 1, "the three functions are all called f: {out}");
    let bound = 3 * p.len() as u64 / 1024 + 32 * 1024;
    assert!(kib < bound, "peak {kib} KiB for a {} KiB input (bound {bound} KiB)", p.len() / 1024);
}

#[test]
fn pprof_gzip_bombs_are_refused_at_the_first_byte_that_is_not_a_profile() {
    // 3 GB of zeros as 3,000 gzip members of 1 MB (3 MB on disk): refused at byte 0, at once,
    // instead of held whole (which aborted).
    let dir = tempfile::tempdir().unwrap();
    let member = gzip(&vec![0u8; 1 << 20]);
    let mut bomb = Vec::with_capacity(member.len() * 3000);
    for _ in 0..3000 {
        bomb.extend_from_slice(&member);
    }
    std::fs::write(dir.path().join("bomb.pb.gz"), &bomb).unwrap();
    for args in [vec!["info", "bomb.pb.gz"], vec!["convert", "bomb.pb.gz", "-o", "out.folded"]] {
        let start = std::time::Instant::now();
        let o = common::run_limited(dir.path(), LIMIT_S, &args);
        let err = common::assert_contained(&o, &args.join(" "));
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("bomb.pb.gz: byte 0"), "{err}");
        assert!(start.elapsed().as_secs() < 5, "refused after {:?}", start.elapsed());
    }
    // A truncated stream says where it ends, short (cut in the first bytes read) or long.
    let short = gzip(&pprof(1, &[], &sample(&[1], 1)));
    let mut body = Vec::new();
    for i in 0..200_000u64 {
        body.extend(sample(&[1], i % 100));
    }
    let long = gzip(&pprof(1, &[], &body));
    for cut in [&short[..short.len() - 12], &long[..long.len() / 2]] {
        std::fs::write(dir.path().join("cut.pb.gz"), cut).unwrap();
        let o = common::run_limited(dir.path(), LIMIT_S, &["info", "cut.pb.gz"]);
        let err = common::assert_contained(&o, "truncated gzip");
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.starts_with("cfghub: error: cut.pb.gz: ") && err.contains("byte "), "{err}");
    }
}

#[test]
fn pprof_small_repeated_records_cost_nothing_each() {
    let dir = tempfile::tempdir().unwrap();
    // 25,000,000 empty comments (one packed field of zeros).
    let mut comments = Vec::new();
    field(&mut comments, 13, &vec![0u8; 25_000_000]);
    // 500,000 mappings with nothing but an id.
    let mut mappings = Vec::new();
    for id in 1..=500_000u64 {
        let mut m = Vec::new();
        uint(&mut m, 1, id);
        field(&mut mappings, 3, &m);
    }
    // One sample with 5,000,000 empty labels.
    let mut labels = Vec::new();
    let mut s = Vec::new();
    field(&mut s, 1, &[1]);
    field(&mut s, 2, &[1]);
    for _ in 0..5_000_000 {
        s.extend_from_slice(&[0x1a, 0x00]);
    }
    field(&mut labels, 2, &s);
    for (name, body) in [("comments", comments), ("mappings", mappings), ("labels", labels)] {
        let p = pprof(1, &[], &body);
        let input = format!("{name}.pb");
        std::fs::write(dir.path().join(&input), &p).unwrap();
        let (o, kib) = run_measured(dir.path(), &["info", &input]);
        let err = common::assert_contained(&o, name);
        assert_eq!(o.status.code(), Some(0), "{name}: {err}");
        let bound = 2 * p.len() as u64 / 1024 + 64 * 1024;
        assert!(kib < bound, "{name}: peak {kib} KiB for a {} KiB input", p.len() / 1024);
    }
}

/// A CSI function that is a chain of `n` blocks (1 ENTRY .. n EXIT), one path, each edge's
/// increment given by `increment(i)` for the edge out of block `i`.
fn csi_chain(n: u64, increment: impl Fn(u64) -> i64) -> String {
    let mut t = String::from("#\nmain\n1|ENTRY|1\n");
    for i in 2..n {
        t.push_str(&format!("{i}|{i}\n"));
    }
    t.push_str(&format!("{n}|EXIT\n$\n"));
    for i in 1..n {
        t.push_str(&format!("{i}->{}|{}$0\n", i + 1, increment(i)));
    }
    t
}

#[test]
fn csi_blank_lines_and_inflating_sections_are_not_reserved_for() {
    let dir = tempfile::tempdir().unwrap();
    // 8 MB of blank lines: blocks, lines and edges were reserved for each (1.3 GB), which a
    // 1 GB address space refuses.
    std::fs::write(dir.path().join("blank.debug_PT"), vec![b'\n'; 8 << 20]).unwrap();
    let (o, kib) = run_measured_in(dir.path(), 1_000_000_000, &["info", "--from", "csi", "blank.debug_PT"]);
    common::assert_contained(&o, "8 MB of blank lines");
    assert!(kib < 128 * 1024, "peak {kib} KiB");
    // An object file whose compressed .debug_PT inflates to 64 MB of newlines (1,000 times
    // its size): refused by the rule for compressed sections, before inflating.
    if !common::clients(&["objcopy", "cc"]) {
        return;
    }
    std::fs::write(dir.path().join("e.c"), "int f(void) { return 1; }\n").unwrap();
    std::fs::write(dir.path().join("nl.txt"), vec![b'\n'; 64 << 20]).unwrap();
    let ok = |c: &mut Command| assert!(c.current_dir(dir.path()).status().unwrap().success());
    ok(Command::new("cc").args(["-c", "-o", "e.o", "e.c"]));
    ok(Command::new("objcopy").args(["--add-section", ".debug_PT=nl.txt", "e.o", "plain.o"]));
    ok(Command::new("objcopy").args(["--compress-debug-sections=zlib", "plain.o", "csi.o"]));
    std::fs::remove_file(dir.path().join("plain.o")).unwrap();
    std::fs::remove_file(dir.path().join("nl.txt")).unwrap();
    let o = common::run_limited(dir.path(), LIMIT_S, &["info", "--from", "csi", "csi.o"]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("section .debug_PT") && err.contains("objcopy --decompress-debug-sections"),
        "{err}"
    );
}

#[test]
fn csi_crash_on_a_long_chain_is_linear() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chain.debug_PT"), csi_chain(100_000, |_| 0)).unwrap();
    let o = common::run_limited(
        dir.path(),
        LIMIT_S,
        &["csi", "crash", "chain.debug_PT", "--function", "main", "--array", "0,0,0,0,0,0,0,0,0,-1"]
            .iter()
            .chain(&["--index", "0", "--current", "0", "--block", "99999"])
            .copied()
            .collect::<Vec<_>>(),
    );
    let err = common::assert_contained(&o, "crash on a chain");
    assert_eq!(o.status.code(), Some(0), "{err}");
    let out = common::stdout(&o);
    assert_eq!(out.lines().count(), 1, "one candidate");
    assert!(out.starts_with("partial: 1 2 3 ") && out.trim_end().ends_with(" 99998 99999"), "{}", &out[..80]);
}

/// `n` diamonds (2^n paths) then a chain of `tail` blocks, numbered as csi-cc numbers them.
fn csi_diamonds(n: u64, tail: u64) -> String {
    // Blocks: 1 ENTRY; diamond k: top 10+3k, left 11+3k, right 12+3k, joining at the next top.
    let mut blocks = String::from("#\nmain\n1|ENTRY|1\n2|EXIT\n");
    let mut edges = String::new();
    let top = |k: u64| 10 + 3 * k;
    edges.push_str(&format!("1->{}|0$0\n", top(0)));
    for k in 0..n {
        let (t, l, r) = (top(k), top(k) + 1, top(k) + 2);
        blocks.push_str(&format!("{t}|{t}\n{l}|{l}\n{r}|{r}\n"));
        // Paths from the right branch come after those of the left one.
        let later = 1u64 << (n - 1 - k);
        edges.push_str(&format!(
            "{t}->{l}|0$0\n{t}->{r}|{later}${later}\n{l}->{}|0$0\n{r}->{}|0$0\n",
            top(k + 1),
            top(k + 1)
        ));
    }
    let first_tail = top(n);
    for i in 0..tail {
        let b = first_tail + i;
        blocks.push_str(&format!("{b}|{b}\n"));
        let next = if i + 1 == tail { 2 } else { b + 1 };
        edges.push_str(&format!("{b}->{next}|0$0\n"));
    }
    format!("{blocks}$\n{edges}")
}

#[test]
fn csi_paths_are_streamed_whatever_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d.debug_PT"), csi_diamonds(17, 300)).unwrap();
    // The first 20,000 paths of 334 blocks: each printed as decoded, none kept (they took
    // 80 MB kept).
    let rss = dir.path().join(".rss");
    let o = Command::new("timeout")
        .args(["-s", "KILL", &LIMIT_S.to_string(), "/usr/bin/time", "-f", "%M", "-o"])
        .arg(&rss)
        .args(["prlimit", "--as=2000000000", "--"])
        .arg(env!("CARGO_BIN_EXE_cfghub"))
        .args(["-q", "csi", "paths", "d.debug_PT", "--function", "main", "--limit", "20000"])
        .current_dir(dir.path())
        .stdout(Stdio::from(std::fs::File::create(dir.path().join("paths.txt")).unwrap()))
        .output()
        .unwrap();
    common::assert_contained(&o, "csi paths");
    let kib: u64 = std::fs::read_to_string(&rss).unwrap().trim().lines().last().unwrap().parse().unwrap();
    let printed = std::fs::metadata(dir.path().join("paths.txt")).unwrap().len();
    assert!(printed > 20_000 * 300 * 4, "{printed} bytes printed");
    assert!(kib < 40 * 1024, "peak {kib} KiB while printing {} MB", printed >> 20);
    // A limit of 10^11 paths asks for nothing up front; a reader that stops reading ends it.
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; timeout -s KILL {LIMIT_S} prlimit --as=2000000000 -- '{}' csi paths d.debug_PT \
             --function main --limit 100000000000 | head -c 100000 > /dev/null",
            env!("CARGO_BIN_EXE_cfghub")
        ))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 141)), "{:?}: {}", o.status, common::stderr(&o));
    assert!(!common::stderr(&o).contains("panicked"));
}

#[test]
fn csi_coverage_of_many_same_named_functions_attaches_in_linear_time() {
    // 2,000 static functions called `f` (one per object file), each with a block coverage
    // array whose site is on its own line.
    let dir = tempfile::tempdir().unwrap();
    let mut t = String::new();
    for k in 0..2000u64 {
        t.push_str(&format!("#\nf\n1|ENTRY|{k}\n2|EXIT\n3|{}\n$\n1->3|0$0\n3->2|0$0\n", 10_000 + k));
    }
    for k in 0..2000u64 {
        t.push_str(&format!("#f|__BBC_arr_o{k}_f\n0|L|{}\n", 10_000 + k));
    }
    std::fs::write(dir.path().join("many.debug_PT"), t).unwrap();
    let o = common::run_limited(dir.path(), LIMIT_S, &["info", "--from", "csi", "many.debug_PT"]);
    let err = common::assert_contained(&o, "2,000 functions called f");
    assert_eq!(o.status.code(), Some(0), "{err}");
}

#[test]
fn csi_numbering_errors_name_the_block_and_its_line() {
    let dir = tempfile::tempdir().unwrap();
    // Block 4's edges should be numbered 0 and 1: 5 leaves a gap.
    let text =
        "#\nmain\n3|EXIT\n2|ENTRY|9\n4|10\n5|11\n6|12\n$\n2->4|0$0\n4->5|0$0\n4->6|5$5\n5->3|0$0\n6->3|0$0\n";
    std::fs::write(dir.path().join("bad.debug_PT"), text).unwrap();
    let o = common::run_limited(dir.path(), LIMIT_S, &["csi", "paths", "bad.debug_PT", "--function", "main"]);
    let err = common::assert_contained(&o, "bad weights");
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.debug_PT:5:") && err.contains("block 4"), "{err}");
    assert!(!err.contains("node "), "{err}");
}

#[test]
fn csi_crash_sums_wrap_as_the_programs_counter_does() {
    // Two increments of 2^63 - 1: the counter holds 2^64 - 2, which is -2 as a signed value.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.debug_PT"), csi_chain(4, |i| if i < 3 { i64::MAX } else { 0 }))
        .unwrap();
    let crash = |current: &str| {
        let args = ["csi", "crash", "w.debug_PT", "--function", "main", "--array", "0,0,0,0,0,0,0,0,0,-1"];
        let mut args: Vec<&str> = args.to_vec();
        args.extend(["--index", "0", "--current", current, "--block", "3"]);
        let o = common::run_limited(dir.path(), LIMIT_S, &args);
        common::assert_contained(&o, current);
        common::stdout(&o)
    };
    assert_eq!(crash("-2"), "partial: 1 2 3\n");
    assert_eq!(crash(&i64::MAX.to_string()), "", "no prefix sums to 2^63 - 1");
}

/// A dcpicat dump of samples at `addresses` of the image `path` (loaded where it says).
fn dcpicat(path: &str, addresses: &[u64]) -> String {
    let mut t = format!(
        "name                 prog\nimage                1\npath                 {path}\n\
         epoch                202611230000\nplatform             x86_64\n\
         text_start           0x000000400000\ntext_size            0x000000100000\n\
         event                {} cycles:63488:10000\n",
        addresses.len()
    );
    for a in addresses {
        t.push_str(&format!("{a:#014x}      1\n"));
    }
    t
}

#[test]
fn a_fifo_named_by_symbols_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.dcpicat"), dcpicat("prog", &[0x401000])).unwrap();
    assert!(Command::new("mkfifo").arg(dir.path().join("fifo")).status().unwrap().success());
    let o = common::run_limited(dir.path(), LIMIT_S, &["info", "in.dcpicat", "--symbols", "fifo"]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--symbols fifo: not a regular file"), "{err}");
}

#[test]
fn compressed_debug_sections_that_claim_too_much_are_refused_before_inflating() {
    if !common::clients(&["objcopy", "cc"]) {
        return;
    }
    use object::{Object, ObjectSection};
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::fixture("symbols/inlined.c"), dir.path().join("p.c")).unwrap();
    let ok = |c: &mut Command| assert!(c.current_dir(dir.path()).status().unwrap().success());
    ok(Command::new("cc").args(["-g", "-O2", "-no-pie", "-o", "p", "p.c"]));
    ok(Command::new("objcopy").args(["--compress-debug-sections=zlib", "p", "pz"]));
    // .debug_info's compression header (Elf64_Chdr) now claims 3 GB once inflated.
    let mut bytes = std::fs::read(dir.path().join("pz")).unwrap();
    let offset = {
        let file = object::File::parse(&*bytes).unwrap();
        let info = file.section_by_name(".debug_info").unwrap();
        info.compressed_file_range().unwrap().offset as usize - 24
    };
    bytes[offset + 8..offset + 16].copy_from_slice(&3_000_000_000u64.to_le_bytes());
    std::fs::write(dir.path().join("pz"), &bytes).unwrap();
    let nm = common::stdout(&Command::new("nm").arg(dir.path().join("p")).output().unwrap());
    let main = nm.lines().find(|l| l.ends_with(" main")).unwrap().split(' ').next().unwrap();
    let main = u64::from_str_radix(main, 16).unwrap();
    std::fs::write(dir.path().join("in.dcpicat"), dcpicat("p", &[main, main + 4])).unwrap();
    let o = common::run_limited(
        dir.path(),
        LIMIT_S,
        &["convert", "in.dcpicat", "--symbols", "pz", "-o", "out.folded"],
    );
    let err = common::assert_contained(&o, "3 GB .debug_info");
    assert!(err.contains(".debug_info") && err.contains("3000000000"), "{err}");
}

#[test]
fn names_from_the_input_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Vec::new();
    uint(&mut m, 1, 1);
    uint(&mut m, 5, 4);
    let mut body = Vec::new();
    field(&mut body, 3, &m);
    body.extend(sample(&[1], 1));
    std::fs::write(dir.path().join("ctl.pb"), pprof(1, &["lib\u{1b}[2J\0.so"], &body)).unwrap();
    let o = common::run_limited(dir.path(), LIMIT_S, &["info", "ctl.pb"]);
    let out = common::stdout(&o);
    common::assert_contained(&o, "info ctl.pb");
    assert!(!o.stdout.iter().any(|&b| b == 0 || b == 0x1b), "raw control bytes: {out:?}");
    assert!(out.contains("lib\\x1b[2J\\0.so"), "{out}");
}

#[test]
fn write_errors_name_the_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.folded"), "main;a 1\n".repeat(20_000)).unwrap();
    for to in ["pprof", "folded", "callgrind"] {
        let o = common::run_limited(
            dir.path(),
            LIMIT_S,
            &["convert", "in.folded", "--to", to, "-o", "/dev/full"],
        );
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{to}: {err}");
        assert!(err.starts_with("cfghub: error: /dev/full: "), "{to}: {err}");
    }
}

#[test]
fn outputs_that_are_inputs_by_hard_link_or_as_symbols_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.folded"), "main;a 1\n").unwrap();
    std::fs::hard_link(dir.path().join("in.folded"), dir.path().join("out.folded")).unwrap();
    std::fs::write(dir.path().join("out.elf"), b"\x7fELF not really").unwrap();
    let before = common::snapshot(dir.path());
    for args in [
        vec!["convert", "in.folded", "-o", "out.folded"],
        vec!["convert", "in.folded", "--symbols", "out.elf", "-o", "out.elf"],
        vec!["dot", "in.folded", "--symbols", "out.elf", "-o", "out.elf"],
    ] {
        let o = common::run_limited(dir.path(), LIMIT_S, &args);
        let err = common::assert_contained(&o, &args.join(" "));
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("is also an input"), "{err}");
        assert_eq!(common::snapshot(dir.path()), before, "{}: an input changed", args.join(" "));
    }
}

/// perf.data: the small recording with `records` put first in its data section (the data
/// size and the feature sections after the data moved to suit).
fn perf_data_with_records_first(records: &[u8]) -> Vec<u8> {
    let bytes = std::fs::read(common::fixture("perf-data/hot-small.perf.data")).unwrap();
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (start, size) = (u64_at(&bytes, 40) as usize, u64_at(&bytes, 48));
    let end = start + size as usize;
    let delta = records.len() as u64;
    let mut out = [&bytes[..start], records, &bytes[start..]].concat();
    out[48..56].copy_from_slice(&(size + delta).to_le_bytes());
    let features: u32 = (0..4).map(|w| u64_at(&bytes, 72 + w * 8).count_ones()).sum();
    for entry in 0..features as usize {
        let at = end + delta as usize + entry * 16;
        let offset = u64_at(&out, at);
        if offset >= end as u64 {
            out[at..at + 8].copy_from_slice(&(offset + delta).to_le_bytes());
        }
    }
    out
}

/// A perf.data record: type, misc 0, and the body.
fn perf_record(kind: u32, body: &[u8]) -> Vec<u8> {
    let size = u16::try_from(8 + body.len()).unwrap();
    [&kind.to_le_bytes()[..], &0u16.to_le_bytes(), &size.to_le_bytes(), body].concat()
}

/// A zstd frame of `blocks` RLE blocks, each 128 KiB of `byte`: 4 bytes of input per 128 KiB
/// of output.
fn zstd_rle_bomb(blocks: usize, byte: u8) -> Vec<u8> {
    // Magic; no content size, no checksum; a 128 KiB window (exponent 7).
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3];
    for b in 0..blocks {
        let last = u32::from(b + 1 == blocks);
        let header = (128 * 1024) << 3 | 1 << 1 | last;
        z.extend_from_slice(&header.to_le_bytes()[..3]);
        z.push(byte);
    }
    z
}

/// A `COMPRESSED` record of 60 KB that unpacks to 1.9 GB (records of an undefined type) is
/// refused at that record, in well under a gigabyte: the unpacking is bounded and streamed.
#[test]
fn perf_data_zstd_bombs_are_refused_at_their_record() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = perf_record(81, &zstd_rle_bomb(15_000, 8));
    let bytes = perf_data_with_records_first(&bomb);
    let start = u64::from_le_bytes(bytes[40..48].try_into().unwrap());
    std::fs::write(dir.path().join("bomb.perf.data"), &bytes).unwrap();
    let (o, kib) = run_measured(dir.path(), &["convert", "bomb.perf.data", "-o", "out.folded"]);
    let err = common::assert_contained(&o, "a zstd bomb");
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("byte {start}:")) && err.contains("unpacks to more than"), "{err}");
    assert!(kib < 300_000, "peak {kib} KiB");
    assert!(!dir.path().join("out.folded").exists());
}

/// Records of a type perf does not define, 4 million of them (32 MB), cost nothing each: they
/// are left out before the parser would hold them for sorting (it held about 110 bytes
/// each, until the end of the file). So do 4 million tiny records of a defined type in one
/// round: the reading ends a round every so many records.
#[test]
fn perf_data_millions_of_tiny_records_are_read_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, what) in [(200u32, "of unknown type 200"), (9, "SAMPLE")] {
        let records = perf_record(kind, &[]).repeat(4_000_000);
        std::fs::write(dir.path().join("many.perf.data"), perf_data_with_records_first(&records)).unwrap();
        let (o, kib) = run_measured(dir.path(), &["convert", "many.perf.data", "-o", "out.folded"]);
        let err = common::assert_contained(&o, what);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(err.contains("4000000 "), "{what}: the records left out are counted: {err}");
        assert!(kib < 250_000, "{what}: peak {kib} KiB");
    }
}

/// Inside compressed records too, records of undefined types are left out and counted, and
/// bytes that end the unpacked records without making a whole one are told, not read.
#[test]
fn perf_data_compressed_records_are_checked_as_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let inner = [perf_record(201, &[1, 2, 3, 4, 5, 6, 7, 8]).repeat(3), vec![9, 0, 0, 0]].concat();
    // A zstd frame of one raw (stored) block, the last.
    let mut zstd = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3];
    zstd.extend_from_slice(&((inner.len() as u32) << 3 | 1).to_le_bytes()[..3]);
    zstd.extend_from_slice(&inner);
    let bytes = perf_data_with_records_first(&perf_record(81, &zstd));
    let start = u64::from_le_bytes(bytes[40..48].try_into().unwrap());
    std::fs::write(dir.path().join("z.perf.data"), &bytes).unwrap();
    let o = common::run_limited(dir.path(), LIMIT_S, &["info", "z.perf.data"]);
    let err = common::assert_contained(&o, "compressed records");
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("warning: byte {start}: 3 record(s) of unknown type 201")), "{err}");
    assert!(err.contains("end 4 byte(s) into a record"), "{err}");
}

/// An `MMAP` record of pid 1: `len` bytes at `addr` of the file `/a`.
fn perf_mmap(addr: u64, len: u64) -> Vec<u8> {
    let body = [
        &1u32.to_le_bytes()[..],
        &1u32.to_le_bytes(),
        &addr.to_le_bytes(),
        &len.to_le_bytes(),
        &0u64.to_le_bytes(),
        b"/a\0\0\0\0\0\0",
    ]
    .concat();
    perf_record(1, &body)
}

/// 200,000 mappings in descending address order (insertion into a sorted list took 12-17 s),
/// and 30,000 mappings forked 3,000 times (each fork copied them: 1.9 GB and an abort): read
/// in bounded time and memory.
#[test]
fn perf_data_many_mappings_in_any_order_and_forks_of_them_are_cheap() {
    let dir = tempfile::tempdir().unwrap();
    let descending: Vec<u8> =
        (0..200_000u64).rev().flat_map(|i| perf_mmap(0x1000_0000 + i * 0x2000, 0x1000)).collect();
    let mut forks: Vec<u8> =
        (0..30_000u64).flat_map(|i| perf_mmap(0x1000_0000 + i * 0x2000, 0x1000)).collect();
    for child in 2..3_002u32 {
        let body = [
            &child.to_le_bytes()[..],
            &1u32.to_le_bytes(),
            &child.to_le_bytes(),
            &1u32.to_le_bytes(),
            &0u64.to_le_bytes(),
        ]
        .concat();
        forks.extend(perf_record(7, &body));
    }
    for (records, what) in [(descending, "descending mappings"), (forks, "forked mappings")] {
        std::fs::write(dir.path().join("maps.perf.data"), perf_data_with_records_first(&records)).unwrap();
        let (o, kib) = run_measured(dir.path(), &["info", "maps.perf.data"]);
        let err = common::assert_contained(&o, what);
        assert_eq!(o.status.code(), Some(0), "{what}: {err}");
        assert!(kib < 400_000, "{what}: peak {kib} KiB");
    }
}
