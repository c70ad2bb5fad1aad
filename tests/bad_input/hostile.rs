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
