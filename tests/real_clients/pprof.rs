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
pub(crate) fn go(home: &Path) -> Command {
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
    // flame-graph tools), pprof's default (the last, `cpu`, where the profile states none)
    // unless --event names another, with a note (-v) naming the others; its total is pprof's.
    // Inlined functions are frames of their own.
    let folded = d.join("cpu.folded");
    let o = common::run(&["-v", "convert", s(&profile), "-o", s(&folded)]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let said = common::stderr(&o);
    assert!(said.contains("folded: left out") && said.contains(" samples (wrote 'cpu' alone"), "{said}");
    let (names, sums) = folded_totals(&folded);
    assert_eq!((names, sums), (vec!["cpu".to_string()], vec![totals[1]]));
    let counts = d.join("cpu-samples.folded");
    convert(&[s(&profile), "--event", "samples", "-o", s(&counts)]);
    assert_eq!(folded_totals(&counts), (vec!["samples".to_string()], vec![totals[0]]));
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
        common::fixture("dcfg-trace/small.trace.json.expected/replayed-to-folded"),
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
        // Code no symbol covers (IMAGE+0xOFFSET in folded stacks) is an unsymbolized location,
        // which pprof shows by its mapping's file.
        let shown = match first_frame.split_once("+0x") {
            Some((image, _)) => format!("[{image}]"),
            None => first_frame,
        };
        assert!(top.contains(&shown), "{stem}: {shown} in\n{top}");
    }
}

#[test]
fn code_no_symbol_covers_is_an_unsymbolized_location_that_pprof_and_cfghub_read() {
    common::require("go");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // DCPI samples of xemacs without symbols: 9 addresses with samples, 4000000055 cycles.
    let input = common::fixture("dcpi/alpha-cycles.dcpi");
    let out = d.join("xemacs.pb.gz");
    convert(&[s(&input), "-o", s(&out)]);
    assert_eq!(raw_totals(d, &out).1, [4_000_000_055]);
    // -raw lists each location as `ID: ADDRESS M=MAPPING` and nothing else: no function.
    let raw = pprof(d, &["-raw"], &out);
    let locations: Vec<Vec<&str>> = raw
        .lines()
        .skip_while(|l| l.trim() != "Locations")
        .skip(1)
        .take_while(|l| !l.starts_with("Mappings"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(locations.len(), 9, "{raw}");
    for (n, fields) in locations.iter().enumerate() {
        assert_eq!(fields.len(), 3, "{raw}");
        assert_eq!((fields[0], fields[2]), (format!("{}:", n + 1).as_str(), "M=1"), "{raw}");
    }
    // The runtime address: the image's tstart 0x120000000 + the offset.
    assert_eq!(locations[6][1], "0x120070004", "{raw}");
    let mappings = raw.split("Mappings").nth(1).unwrap_or_default();
    assert!(mappings.contains("0x120000000/0x120800000/0x0 /usr/local/bin/xemacs"), "{raw}");
    let top = pprof(d, &["-top", "-addresses", "-nodefraction=0"], &out);
    let line = top.lines().find(|l| l.contains("0000000120070004")).unwrap_or_else(|| panic!("{top}"));
    assert!(line.starts_with("4000000000 ") && line.ends_with(" [xemacs]"), "{top}");
    // Read back, each address is a frame named by it, with its own count.
    let back = d.join("back.folded");
    convert(&[s(&out), "-o", s(&back)]);
    let back = std::fs::read_to_string(&back).unwrap();
    assert!(back.lines().any(|l| l == "0x120070004 4000000000"), "{back}");
    assert_eq!(folded_totals(&d.join("back.folded")).1, [4_000_000_055]);
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

/// Self cost per function: `name -> value`, names as pprof shows them (an inlined function's
/// ` (inline)` mark left out), equal names summed.
pub(crate) type Flat = std::collections::BTreeMap<String, i128>;

/// `go tool pprof -top` flat values of sample type `index`, in the type's own unit: every
/// node, none dropped for being small.
pub(crate) fn top_flat(home: &Path, file: &Path, index: usize, unit: &str) -> Flat {
    let sample_index = format!("-sample_index={index}");
    let unit = format!("-unit={unit}");
    let text = pprof(
        home,
        &["-top", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0", &sample_index, &unit],
        file,
    );
    let mut flat = Flat::new();
    let mut last = String::new();
    for line in text.lines().skip_while(|l| !l.trim_start().starts_with("flat ")).skip(1) {
        // A name with a line break goes on over the next line: cfghub's outputs, which cannot
        // hold a line break in a name, write it as a space.
        if line.split_whitespace().count() < 6 {
            let value = flat.remove(&last).expect("a name before its continuation");
            last = format!("{last} {line}");
            flat.insert(last.clone(), value);
            continue;
        }
        // `FLAT FLAT% SUM% CUM CUM% NAME`, NAME perhaps with spaces of its own.
        let mut rest = line.trim_start();
        let mut fields = Vec::new();
        for _ in 0..5 {
            let end = rest.find(' ').unwrap_or_else(|| panic!("a -top line: {line}"));
            fields.push(&rest[..end]);
            rest = rest[end..].trim_start();
        }
        let name = rest.strip_suffix(" (inline)").unwrap_or(rest);
        let value = fields[0].trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let value: i128 = value.parse().unwrap_or_else(|_| panic!("a whole flat value: {line}"));
        *flat.entry(name.to_string()).or_default() += value;
        last = name.to_string();
    }
    flat
}

/// Self costs of a folded file: each line's count is its last frame's.
fn folded_flat(file: &Path) -> Flat {
    let mut flat = Flat::new();
    for line in
        std::fs::read_to_string(file).unwrap().lines().filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        let leaf = stack.rsplit(';').next().unwrap();
        *flat.entry(leaf.to_string()).or_default() += count.parse::<i128>().unwrap();
    }
    flat
}

/// Self costs of event `event` in a speedscope file: each sample's weight is its last
/// frame's, over every profile (one per thread and event) named after the event.
fn speedscope_flat(file: &Path, event: &str, events: &[String]) -> Flat {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let frames: Vec<&str> =
        doc["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    let mut flat = Flat::new();
    for p in doc["profiles"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        let of = events.iter().filter(|e| name.contains(e.as_str())).max_by_key(|e| e.len());
        if of.map(String::as_str) != Some(event) && events.len() > 1 {
            continue;
        }
        for (sample, weight) in p["samples"].as_array().unwrap().iter().zip(p["weights"].as_array().unwrap())
        {
            let leaf = sample.as_array().unwrap().last().unwrap().as_u64().unwrap() as usize;
            // (A line break in a name counted as a space, as in the other outputs.)
            let name = frames[leaf].replace('\n', " ");
            *flat.entry(name).or_default() += weight.as_f64().unwrap().round() as i128;
        }
    }
    flat
}

/// Self costs of event `event` as `callgrind_annotate --inclusive=no` gives them for a
/// Callgrind file: `COST (PERCENT)  FILE:FUNCTION`, `.` for none.
fn callgrind_flat(file: &Path, event: &str) -> Flat {
    let o = Command::new("callgrind_annotate")
        .args(["--inclusive=no", "--threshold=100", &format!("--show={event}")])
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "callgrind_annotate: {}", common::stderr(&o));
    let out = common::stdout(&o);
    let mut flat = Flat::new();
    let body = out.split("file:function").nth(1).unwrap_or_else(|| panic!("a function table:\n{out}"));
    for line in body.lines().skip(1) {
        let line = line.trim();
        if line.is_empty() || line.starts_with("--") {
            if flat.is_empty() {
                continue;
            }
            break;
        }
        let (value, rest) = line.split_once(' ').unwrap();
        let rest = rest.trim_start();
        let rest =
            if rest.starts_with('(') { rest[rest.find(')').unwrap() + 1..].trim_start() } else { rest };
        let function = rest.split_once(':').map_or(rest, |(_, f)| f);
        let function =
            function.strip_suffix(']').and_then(|f| f.rsplit_once(" [")).map_or(function, |(f, _)| f);
        // (`.` is a zero.)
        let value = if value == "." { 0 } else { value.replace(',', "").parse::<i128>().unwrap() };
        *flat.entry(function.to_string()).or_default() += value;
    }
    flat
}

/// The sample types of a pprof file as `-raw` lists them: (type, unit).
fn sample_types(home: &Path, file: &Path) -> Vec<(String, String)> {
    raw_totals(home, file)
        .0
        .iter()
        .map(|t| {
            let (ty, unit) = t.split_once('/').unwrap();
            (ty.to_string(), unit.to_string())
        })
        .collect()
}

/// pprof's name of each unsymbolized location of a profile, by its address as cfghub names
/// it (`0x42ef04`): `[prog]`, its mapping's file name, under which `-top` sums every
/// unsymbolized address of the mapping. cfghub keeps them apart, by address, so that
/// `--symbols` can still name each.
fn unsymbolized_names(home: &Path, file: &Path) -> std::collections::BTreeMap<String, String> {
    let raw = pprof(home, &["-raw"], file);
    let mut mappings = std::collections::BTreeMap::new();
    for line in raw.split("Mappings").nth(1).unwrap_or_default().lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [id, _range, path, ..] = fields[..] {
            let base = path.rsplit('/').next().unwrap_or(path);
            mappings.insert(format!("M={}", id.trim_end_matches(':')), format!("[{base}]"));
        }
    }
    let mut out = std::collections::BTreeMap::new();
    let locations = raw.lines().skip_while(|l| l.trim() != "Locations").skip(1);
    for line in locations.take_while(|l| !l.starts_with("Mappings")) {
        if let [_, address, mapping] = line.split_whitespace().collect::<Vec<_>>()[..] {
            if let Some(name) = mappings.get(mapping) {
                out.insert(address.to_string(), name.clone());
            }
        }
    }
    out
}

/// A view's self costs under pprof's names for unsymbolized locations.
fn as_pprof_names(flat: Flat, unsymbolized: &std::collections::BTreeMap<String, String>) -> Flat {
    let mut out = Flat::new();
    for (name, value) in flat {
        *out.entry(unsymbolized.get(&name).cloned().unwrap_or(name)).or_default() += value;
    }
    out
}

/// Functions whose values differ between two views (zeros and missing names alike).
fn differences(want: &Flat, got: &Flat) -> Vec<String> {
    let mut out = Vec::new();
    for name in want.keys().chain(got.keys().filter(|n| !want.contains_key(*n))) {
        let (w, g) = (want.get(name).copied().unwrap_or(0), got.get(name).copied().unwrap_or(0));
        if w != g {
            out.push(format!("{name}: {g}, pprof -top {w}"));
        }
    }
    out
}

/// pprof inputs: the project's, a sampler's, and the real profile.proto files of
/// ../shared/fixtures when it has any.
fn pprof_inputs(dir: &Path) -> Vec<PathBuf> {
    let mut inputs = vec![
        common::fixture("pprof/burn.cpu.pb.gz"),
        common::fixture("pprof/allocs.heap.pb.gz"),
        sampler_profile(dir),
    ];
    let mut shared = Vec::new();
    if let Some(root) = common::shared_fixture("") {
        let mut todo = vec![root];
        while let Some(d) = todo.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() {
                    todo.push(path);
                } else if name.ends_with(".pb.gz") || name.ends_with(".pprof") || name.ends_with(".pb") {
                    shared.push(path);
                }
            }
        }
    }
    if shared.is_empty() {
        eprintln!("no profile.proto files under ../shared/fixtures: the project's pprof fixtures only");
    }
    shared.sort();
    inputs.extend(shared);
    inputs
}

#[test]
fn every_functions_self_cost_in_every_output_is_go_tool_pprofs_flat_value() {
    for tool in ["go", "callgrind_annotate"] {
        common::require(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut problems = Vec::new();
    for (n, input) in pprof_inputs(d).iter().enumerate() {
        let types = sample_types(d, input);
        let unsymbolized = unsymbolized_names(d, input);
        let events: Vec<String> = types.iter().map(|t| t.0.clone()).collect();
        let out = |name: &str| d.join(format!("{n}-{name}"));
        let (speedscope, callgrind, again) =
            (out("out.speedscope.json"), d.join(format!("callgrind.out.{n}")), out("again.pb.gz"));
        for o in [&speedscope, &callgrind, &again] {
            convert(&[s(input), "-o", s(o)]);
        }
        for (index, (event, unit)) in types.iter().enumerate() {
            let want = top_flat(d, input, index, unit);
            assert!(want.values().any(|&v| v != 0), "{}: {event}: {want:?}", input.display());
            let folded = out(&format!("{event}.folded"));
            convert(&[s(input), "--event", event, "-o", s(&folded)]);
            let views = [
                ("folded", folded_flat(&folded)),
                ("speedscope", speedscope_flat(&speedscope, event, &events)),
                ("Callgrind", callgrind_flat(&callgrind, event)),
                ("pprof", top_flat(d, &again, index, unit)),
            ];
            for (writer, got) in views {
                for diff in differences(&want, &as_pprof_names(got, &unsymbolized)) {
                    problems.push(format!("{} -> {writer}, {event}: {diff}", input.display()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "self costs that are not pprof's:\n{}", problems.join("\n"));
}

/// A Go CPU profile states no default sample type: `go tool pprof` shows the last (`cpu`, in
/// nanoseconds), and so do the one-measure views (folded stacks, the flame graph), not
/// `samples`; the default is not written back where it is the last.
#[test]
fn one_measure_views_of_a_go_profile_show_what_go_tool_pprof_shows() {
    common::require("go");
    let dir = tempfile::tempdir().unwrap();
    let input = common::fixture("pprof/burn.cpu.pb.gz");
    let top = pprof(dir.path(), &["-top", "-unit=ns", "-nodecount=1"], &input);
    assert!(top.contains("Type: cpu"), "{top}");
    let total: i128 = top
        .split("Total samples = ")
        .nth(1)
        .and_then(|t| t.split("ns").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{top}"));
    let folded = dir.path().join("burn.folded");
    convert(&[s(&input), "-o", s(&folded)]);
    assert_eq!(folded_totals(&folded), (vec!["cpu".to_string()], vec![total]));
    let svg = dir.path().join("burn.svg");
    convert(&[s(&input), "-o", s(&svg)]);
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.contains(&total.to_string().chars().take(3).collect::<String>()),
        "no cpu total in the svg"
    );
    let written = dir.path().join("burn.pb.gz");
    convert(&[s(&input), "-o", s(&written)]);
    let top_again = pprof(dir.path(), &["-top", "-unit=ns", "-nodecount=1"], &written);
    assert!(top_again.contains("Type: cpu"), "{top_again}");
}

/// The node and edge tooltips of a call graph in DOT (`main.step (550ms)`, `main.spin ->
/// main.step (550ms)`), as pprof writes them and cfghub writes them for a profile of stacks;
/// pprof's legend and its per-edge label tooltips left out.
fn call_graph_tooltips(dot: &str) -> std::collections::BTreeSet<String> {
    dot.split("tooltip=\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(t, _)| t.to_string()))
        .filter(|t| t.ends_with(')'))
        .collect()
}

/// Draws `input` with `cfghub dot --callgraph` and `profile` (the same stacks as pprof) with
/// `go tool pprof -dot`, requires the same functions, totals and calls, and returns cfghub's
/// picture (which Graphviz renders silently, and which `convert -o x.dot` writes too).
fn same_call_graph_as_pprof(d: &Path, input: &Path, profile: &Path) -> String {
    let ours = d.join("ours.dot");
    let o = common::run(&["-q", "dot", "--callgraph", input.to_str().unwrap(), "-o", ours.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let ours = std::fs::read_to_string(&ours).unwrap();
    let theirs = pprof(d, &["-dot", "-nodecount=100000"], profile);
    assert_eq!(
        call_graph_tooltips(&ours),
        call_graph_tooltips(&theirs),
        "{}:\n{ours}\n{theirs}",
        input.display()
    );
    common::render_dot(&ours, "call graph of stacks");
    let program = d.join("program.dot");
    let o = common::run(&["-q", "convert", input.to_str().unwrap(), "-o", program.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(std::fs::read_to_string(&program).unwrap(), ours);
    ours
}

/// `cfghub dot` of a profile of stacks (no blocks) draws the call graph `go tool pprof -dot`
/// draws: the same functions with the same totals, the same calls with the same values, in
/// the same unit, for Go's CPU and heap profiles and a committed perf recording (whose pprof
/// cfghub writes).
#[test]
fn a_profile_of_stacks_is_drawn_as_pprofs_call_graph() {
    if !common::clients(&["go"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let recording = common::fixture("perf-data/hot-small.perf.data");
    let pb = d.join("hot.pb");
    let o = common::run(&["convert", recording.to_str().unwrap(), "-o", pb.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    for (input, profile) in [
        (common::fixture("pprof/burn.cpu.pb.gz"), common::fixture("pprof/burn.cpu.pb.gz")),
        (common::fixture("pprof/allocs.heap.pb.gz"), common::fixture("pprof/allocs.heap.pb.gz")),
        (recording, pb),
    ] {
        same_call_graph_as_pprof(d, &input, &profile);
    }
}

/// A recording of a C++ program with its kernel stacks has many functions below pprof's
/// -nodefraction: they are left out as pprof leaves them out, calls through them join the
/// functions on either side (pprof's dotted residual edges), and those a path drawn already
/// covers are left out too.
#[test]
fn functions_below_the_node_fraction_are_left_out_as_pprof_leaves_them_out() {
    if !common::clients(&["go", "perf", "g++"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = common::build_hot_cpp(d);
    let Some(data) = common::perf_record_with_call_chains(d, &binary, "30000000") else { return };
    let pb = d.join("hot.pb");
    let o = common::run(&["convert", data.to_str().unwrap(), "-o", pb.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let ours = same_call_graph_as_pprof(d, &data, &pb);
    assert!(ours.contains("Dropped "), "{ours}");
}

/// `cfghub merge` of pprof profiles reads in `go tool pprof` as its own merge (`-proto A B`)
/// does: every function's flat value and the totals of every sample type; and profiles of
/// different sample types, a CPU and a heap profile (which `go tool pprof` refuses to merge:
/// "incompatible types"), keep each type: each type's functions are its own input's.
#[test]
fn merged_profiles_read_in_go_tool_pprof_as_its_own_merge_and_keep_each_sample_type() {
    common::require("go");
    let dir = tempfile::tempdir().unwrap();
    let cpu = common::fixture("pprof/burn.cpu.pb.gz");
    let heap = common::fixture("pprof/allocs.heap.pb.gz");
    let go_merged = dir.path().join("go.pb");
    let o = go(dir.path()).args(["tool", "pprof", "-proto", s(&cpu), s(&cpu)]).output().expect("go runs");
    assert!(o.status.success(), "{}", common::stderr(&o));
    std::fs::write(&go_merged, &o.stdout).unwrap();
    let merged = dir.path().join("twice.pb.gz");
    let o = common::run(&["-q", "merge", s(&cpu), s(&cpu), "-o", s(&merged)]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(raw_totals(dir.path(), &merged), raw_totals(dir.path(), &go_merged));
    assert_eq!(top_flat(dir.path(), &merged, 1, "ns"), top_flat(dir.path(), &go_merged, 1, "ns"));

    let both = dir.path().join("cpu-and-heap.pb.gz");
    let o = common::run(&["-q", "merge", s(&cpu), s(&heap), "-o", s(&both)]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (types, _) = raw_totals(dir.path(), &both);
    let names: Vec<&str> = types.iter().map(|t| t.split('/').next().unwrap()).collect();
    assert_eq!(names, ["samples", "cpu", "alloc_objects", "alloc_space", "inuse_objects", "inuse_space"]);
    assert_eq!(top_flat(dir.path(), &both, 1, "ns"), top_flat(dir.path(), &cpu, 1, "ns"));
    for (index, unit) in [(0, "count"), (1, "bytes"), (3, "bytes")] {
        let heap_only = top_flat(dir.path(), &heap, index, unit);
        let merged = top_flat(dir.path(), &both, index + 2, unit);
        let nonzero: Flat = merged.into_iter().filter(|(_, v)| *v != 0).collect();
        assert_eq!(nonzero, heap_only.into_iter().filter(|(_, v)| *v != 0).collect::<Flat>(), "type {index}");
    }
}

/// `go tool pprof -tags` of a profile: the label keys, each with its values' totals.
pub(crate) fn tags(home: &Path, file: &Path, index: usize) -> String {
    pprof(home, &["-tags", &format!("-sample_index={index}")], file)
}

/// Labels in and out: a Go heap profile's numeric `bytes` labels (with their unit) come out of
/// cfghub's pprof as `go tool pprof -tags` read them in the input, and `merge
/// --label-from-path` and `--label` give each input's samples labels that `-tags` totals per
/// value, each value's total its input's.
#[test]
fn sample_labels_of_go_and_of_the_command_line_read_in_go_tool_pprof() {
    common::require("go");
    let dir = tempfile::tempdir().unwrap();
    let heap = common::fixture("pprof/allocs.heap.pb.gz");
    let converted = dir.path().join("heap.pb.gz");
    let o = common::run(&["-q", "convert", s(&heap), "-o", s(&converted)]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    for index in 0..4 {
        let want = tags(dir.path(), &heap, index);
        assert!(want.contains("bytes:"), "{want}");
        assert_eq!(tags(dir.path(), &converted, index), want, "sample type {index}");
    }

    let cpu = common::fixture("pprof/burn.cpu.pb.gz");
    for service in ["web", "db"] {
        std::fs::create_dir_all(dir.path().join("hosts").join(service)).unwrap();
        std::fs::copy(&cpu, dir.path().join("hosts").join(service).join("cpu.pb.gz")).unwrap();
    }
    let merged = dir.path().join("fleet.pb.gz");
    let inputs = ["web", "db"].map(|d| dir.path().join("hosts").join(d).join("cpu.pb.gz"));
    let o = common::run(&[
        "-q",
        "merge",
        s(&inputs[0]),
        s(&inputs[1]),
        "--label-from-path",
        "hosts/{service}/cpu.pb.gz",
        "--label",
        "day=2026-12-07",
        "-o",
        s(&merged),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (_, one) = raw_totals(dir.path(), &cpu);
    let text = tags(dir.path(), &merged, 0);
    let service = text.split("service:").nth(1).expect("a service label");
    let values: Vec<(&str, f64)> = service
        .lines()
        .skip(1)
        .take(2)
        .map(|l| {
            let (count, rest) = l.trim().split_once(' ').unwrap();
            (rest.rsplit(": ").next().unwrap(), count.parse::<f64>().unwrap())
        })
        .collect();
    let mut names: Vec<&str> = values.iter().map(|v| v.0).collect();
    names.sort();
    assert_eq!(names, ["db", "web"], "{text}");
    for (_, count) in &values {
        assert_eq!(*count as i128, one[0], "{text}");
    }
    assert!(text.contains("day:") && text.contains("2026-12-07"), "{text}");
}

/// A perf.data recording's machine and command line label its samples: `go tool pprof -tags`
/// of its pprof totals every sample under the recording's host name and `perf record` command.
#[test]
fn a_perf_recordings_host_and_command_are_labels_of_its_samples() {
    common::require("go");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hot.pb.gz");
    let input = common::fixture("perf-data/hot-small.perf.data");
    let o = common::run(&["-q", "convert", s(&input), "-o", s(&out)]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = tags(dir.path(), &out, 0);
    let total = |key: &str| {
        let part = text.split(&format!("{key}: Total ")).nth(1).unwrap_or_else(|| panic!("no {key}: {text}"));
        part.split_whitespace().next().unwrap().to_string()
    };
    assert_eq!(total("host"), total("command"), "{text}");
    // One host and one command, each holding every sample.
    for key in ["host:", "command:"] {
        let block = text.split(key).nth(1).unwrap().split("\n\n").next().unwrap();
        assert_eq!(block.lines().count(), 2, "{text}");
        assert!(block.contains("(  100%)"), "{text}");
    }
    assert!(text.contains("perf record"), "{text}");
}
