//! pprof: real producers and real clients. A Go program (fixtures/pprof/burn.go) compiled and
//! run here writes a CPU profile with runtime/pprof; cfghub reads it and `go tool pprof` reads
//! every pprof file cfghub writes: `-raw` totals per sample type equal the source's, `-top`
//! shows its functions. pprof -> Callgrind gives `callgrind_annotate` pprof's total.
//!
//! Go runs with its caches in a temporary folder and without network (`GOPROXY=off`,
//! `GOTOOLCHAIN=local`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// A `go` command that keeps everything it writes under `home` and never goes to the network.
fn go(home: &Path) -> Command {
    let mut c = Command::new("go");
    c.env("HOME", home)
        .env("GOPATH", home.join("gopath"))
        .env("GOCACHE", home.join("gocache"))
        .env("GOFLAGS", "")
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env("GO111MODULE", "off")
        .env("PPROF_TMPDIR", home.join("pprof"))
        .env("PPROF_BINARY_PATH", home.join("no-binaries"));
    c
}

/// `go tool pprof ARGS FILE`'s standard output; fails the test on an error or a warning.
fn pprof(home: &Path, args: &[&str], file: &Path) -> String {
    let o =
        go(home).args(["tool", "pprof", "-symbolize=none"]).args(args).arg(file).output().expect("go runs");
    assert!(o.status.success(), "go tool pprof {args:?} {}: {}", file.display(), common::stderr(&o));
    common::stdout(&o)
}

/// Totals per sample type from `go tool pprof -raw`: (type/unit names, sums).
pub(crate) fn raw_totals(home: &Path, file: &Path) -> (Vec<String>, Vec<i128>) {
    let text = pprof(home, &["-raw"], file);
    let mut lines = text.lines().skip_while(|l| l.trim() != "Samples:").skip(1);
    let types: Vec<String> =
        lines.next().expect("a sample type line").split_whitespace().map(String::from).collect();
    let mut sums = vec![0i128; types.len()];
    for line in lines {
        let Some((values, _)) = line.split_once(':') else { break };
        let values: Vec<&str> = values.split_whitespace().collect();
        if values.len() != types.len() || !values.iter().all(|v| v.parse::<i64>().is_ok()) {
            if line.trim_start().starts_with(|c: char| c.is_ascii_alphabetic()) && !line.starts_with(' ') {
                break;
            }
            continue;
        }
        for (s, v) in sums.iter_mut().zip(&values) {
            *s += v.parse::<i128>().unwrap();
        }
    }
    (types, sums)
}

/// Sums of every count column of a folded file cfghub wrote, with its event names.
fn folded_totals(file: &Path) -> (Vec<String>, Vec<i128>) {
    let text = std::fs::read_to_string(file).unwrap();
    let mut names = vec!["samples".to_string()];
    let mut sums: Vec<i128> = Vec::new();
    for line in text.lines() {
        if let Some(events) = line.strip_prefix("# events: ") {
            names = events.split_whitespace().map(String::from).collect();
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.rsplitn(names.len() + 1, ' ').collect();
        sums.resize(names.len(), 0);
        for (i, v) in fields[..names.len()].iter().rev().enumerate() {
            sums[i] += v.parse::<f64>().unwrap_or_else(|_| panic!("count in {line}")).round() as i128;
        }
    }
    sums.resize(names.len(), 0);
    (names, sums)
}

fn convert(args: &[&str]) {
    let o = common::run(&[&["convert", "-q"], args].concat());
    assert!(o.status.success(), "convert {args:?}: {}", common::stderr(&o));
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Compiles and runs fixtures/pprof/burn.go: a CPU profile of about a second.
pub(crate) fn go_cpu_profile(dir: &Path) -> PathBuf {
    std::fs::copy(common::fixture("pprof/burn.go"), dir.join("burn.go")).unwrap();
    let o = go(dir).args(["build", "-o", "burn", "burn.go"]).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "go build: {}", common::stderr(&o));
    let profile = dir.join("cpu.pb.gz");
    let o = Command::new(dir.join("burn")).arg(&profile).output().unwrap();
    assert!(o.status.success(), "burn: {}", common::stderr(&o));
    profile
}

#[test]
fn a_go_cpu_profile_keeps_its_totals_through_folded_pprof_and_callgrind() {
    for tool in ["go", "callgrind_annotate"] {
        common::require(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let profile = go_cpu_profile(d);
    let (types, totals) = raw_totals(d, &profile);
    assert_eq!(types, ["samples/count", "cpu/nanoseconds"]);
    assert!(totals[0] > 10, "the program ran long enough to be sampled: {totals:?}");

    // pprof -> folded: one sample type (two count columns are a before/after pair to
    // flame-graph tools), the first unless --event names another, with a warning naming the
    // others; its total is pprof's. Inlined functions are frames of their own.
    let folded = d.join("cpu.folded");
    let o = common::run(&["convert", s(&profile), "-o", s(&folded)]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let said = common::stderr(&o);
    assert!(said.contains("folded: left out") && said.contains(" cpu (wrote 'samples' alone"), "{said}");
    let (names, sums) = folded_totals(&folded);
    assert_eq!((names, sums), (vec!["samples".to_string()], vec![totals[0]]));
    let cpu = d.join("cpu-ns.folded");
    convert(&[s(&profile), "--event", "cpu", "-o", s(&cpu)]);
    assert_eq!(folded_totals(&cpu), (vec!["cpu".to_string()], vec![totals[1]]));
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(text.contains("main.main;main.spin;main.step"), "step inlined into spin is a frame:\n{text}");
    assert!(text.contains("main.main;main.hash"), "{text}");

    // pprof -> pprof (gzip and raw): every total kept, the functions listed by -top.
    for name in ["again.pb.gz", "again.pprof"] {
        let again = d.join(name);
        convert(&[s(&profile), "-o", s(&again)]);
        assert_eq!(raw_totals(d, &again), (types.clone(), totals.clone()), "{name}");
        let top = pprof(d, &["-top", "-nodecount=100"], &again);
        for f in ["main.spin", "main.hash", "main.main"] {
            assert!(top.contains(f), "{name}: {f} in\n{top}");
        }
    }

    // pprof -> Callgrind: callgrind_annotate's program totals are pprof's.
    let cg = d.join("callgrind.out.go");
    convert(&[s(&profile), "-o", s(&cg)]);
    let o = Command::new("callgrind_annotate").arg(&cg).output().unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let out = common::stdout(&o);
    let line = out.lines().find(|l| l.contains("PROGRAM TOTALS")).expect("a totals line");
    let numbers: Vec<i128> = line
        .split_whitespace()
        .filter(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .map(|w| w.replace(',', "").parse().unwrap())
        .collect();
    assert_eq!(numbers, totals, "{line}");
}

#[test]
fn go_tool_pprof_reads_what_cfghub_writes_from_every_kind_of_profile() {
    common::require("go");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let inputs = [
        common::fixture("callgrind/callgrind.out.recursion-loops"),
        common::fixture("dcfg/hello-world.dcfg.json"),
        common::fixture("dcfg/two-processes.dcfg.json"),
        common::fixture("dcpi/alpha-cycles.dcpi"),
        common::fixture("dcfg-trace/small.folded"),
    ];
    for input in inputs {
        let stem = input.file_name().unwrap().to_str().unwrap().replace('.', "_");
        // The totals of the source: what cfghub writes as folded stacks, estimated the same way.
        let folded = d.join(format!("{stem}.folded"));
        convert(&[s(&input), "-o", s(&folded)]);
        let (names, sums) = folded_totals(&folded);
        let out = d.join(format!("{stem}.pb.gz"));
        convert(&[s(&input), "-o", s(&out)]);
        let (types, totals) = raw_totals(d, &out);
        let type_names: Vec<&str> = types.iter().map(|t| t.split('/').next().unwrap()).collect();
        assert_eq!(type_names, names, "{stem}");
        assert_eq!(totals, sums, "{stem}");
        assert!(totals.iter().any(|&t| t > 0), "{stem}: {totals:?}");
        let top = pprof(d, &["-top", "-nodecount=100000", "-nodefraction=0"], &out);
        let first_frame = std::fs::read_to_string(&folded)
            .unwrap()
            .lines()
            .find(|l| !l.starts_with('#'))
            .and_then(|l| l.split(';').next().map(|f| f.split(' ').next().unwrap().to_string()))
            .unwrap();
        assert!(top.contains(&first_frame), "{stem}: {first_frame} in\n{top}");
    }
}

/// A sampler's profile (tests/common/protobuf.rs) written raw under a `.pb.gz` name, as
/// py-spy and .NET's tools name theirs.
fn sampler_profile(dir: &Path) -> PathBuf {
    let path = dir.join("sampler.pb.gz");
    std::fs::write(&path, common::protobuf::sampler_profile()).unwrap();
    path
}

#[test]
fn raw_protobuf_named_pb_gz_is_read_as_go_tool_pprof_reads_it() {
    common::require("go");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let profile = sampler_profile(d);
    let (types, totals) = raw_totals(d, &profile);
    assert_eq!((types.len(), totals.clone()), (2, vec![5, 50]));
    let again = d.join("again.pprof");
    convert(&[s(&profile), "-o", s(&again)]);
    assert_eq!(raw_totals(d, &again).1, totals);
}

#[test]
fn unsymbolized_locations_keep_their_address_and_mapping_through_pprof() {
    common::require("go");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let profile = sampler_profile(d);
    for name in ["again.pb.gz", "again.pprof"] {
        let again = d.join(name);
        convert(&[s(&profile), "-o", s(&again)]);
        // -raw lists each location as `ID: ADDRESS M=MAPPING FUNCTION ...`: the unsymbolized
        // one keeps its address in mapping 1 and names no function.
        let raw = pprof(d, &["-raw"], &again);
        let locations: Vec<&str> = raw
            .lines()
            .skip_while(|l| l.trim() != "Locations")
            .skip(1)
            .take_while(|l| !l.starts_with("Mappings"))
            .collect();
        let unsymbolized: Vec<&str> = locations.iter().copied().filter(|l| l.contains("0x42ef04")).collect();
        assert_eq!(unsymbolized.len(), 1, "{name}: {raw}");
        let fields: Vec<&str> = unsymbolized[0].split_whitespace().collect();
        assert_eq!(&fields[1..], ["0x42ef04", "M=1"], "{name}: address and mapping, no function: {raw}");
        let mappings = raw.split("Mappings").nth(1).unwrap_or_default();
        assert!(mappings.contains("/bin/prog") && mappings.contains("b1d"), "{name}: {raw}");
        // pprof shows unsymbolized code by its mapping's file, as for the source profile.
        let top = pprof(d, &["-top", "-nodecount=100"], &again);
        assert!(top.contains("main") && top.contains("[prog]"), "{name}: {top}");
    }
}

#[test]
fn pprof_to_callgrind_names_the_files_and_keeps_a_name_with_a_line_break_on_one_line() {
    common::require("callgrind_annotate");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cg = d.join("callgrind.out.sampler");
    convert(&[s(&sampler_profile(d)), "-o", s(&cg)]);
    let o = Command::new("callgrind_annotate").arg("--inclusive=yes").arg(&cg).output().unwrap();
    assert!(o.status.success() && o.stderr.is_empty(), "{}", common::stderr(&o));
    let out = common::stdout(&o);
    assert!(out.contains("/src/main.go:main"), "the function's file, not ???:\n{out}");
    assert!(out.contains("/src/main.go:weird name"), "{out}");

    // The Go program's profile: every function of burn.go in its file.
    let go = d.join("callgrind.out.go");
    convert(&[s(&common::fixture("pprof/burn.cpu.pb.gz")), "-o", s(&go)]);
    let o = Command::new("callgrind_annotate").arg(&go).output().unwrap();
    // (Functions without a start line cost at line 0 of their file: callgrind_annotate, which
    // finds Go's own sources on this machine, annotates them with a Perl warning or two.)
    assert!(o.status.success() && !common::stderr(&o).contains("malformed"), "{}", common::stderr(&o));
    let out = common::stdout(&o);
    for f in ["main.step", "main.hash", "main.mix"] {
        assert!(out.contains(&format!("/tmp/gotest/burn.go:{f}")), "{f}:\n{out}");
    }
    assert!(!out.contains("???:main."), "{out}");
}
