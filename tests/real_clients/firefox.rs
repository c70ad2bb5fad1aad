//! The Firefox Profiler's processed format from a real producer: samply's import of a perf
//! recording of fixtures/firefox/burn.c (scripts/record-firefox-fixture.sh re-records it).
//! samply saves addresses; cfghub names them from the binary, and its counts per function
//! equal those scripts/firefox-counts.py computes with binutils' addr2line. Converted to
//! Callgrind (checked by callgrind_annotate) and folded stacks, every sample is kept; what
//! cfghub writes in the format, it reads back, and the Firefox Profiler's own command-line
//! client (`profiler-cli`, the profiler's processing code under node) loads it and counts the
//! same samples per function.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, fixture, have};

const SAMPLES_IN_FIXTURE: u64 = 1230;

fn profile() -> PathBuf {
    fixture("firefox/burn.samply.json.gz")
}

fn binary() -> PathBuf {
    fixture("firefox/burn")
}

fn convert(args: &[&str]) -> std::process::Output {
    let o = common::run(args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o
}

/// Samples per leaf function of folded stacks (kernel addresses by their image's name), past
/// the `# events:` line.
fn leaf_counts(folded: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in folded.lines().filter(|l| !l.starts_with('#')) {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let leaf = stack.rsplit(';').next().unwrap();
        *out.entry(leaf.to_string()).or_insert(0) += n.parse::<u64>().unwrap();
    }
    out
}

fn folded_of(input: &Path, extra: &[&str]) -> (String, String) {
    let mut args = vec!["convert", input.to_str().unwrap(), "--to", "folded", "-o", "-"];
    args.extend_from_slice(extra);
    let o = convert(&args);
    (String::from_utf8(o.stdout).unwrap(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn counts_per_function_equal_addr2line_s() {
    if !common::clients(&["python3", "addr2line", "readelf"]) {
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/firefox-counts.py");
    let o = Command::new("python3").arg(script).arg(profile()).arg(binary()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs: BTreeMap<String, u64> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (n, name) = l.split_once(' ').unwrap();
            (name.to_string(), n.parse().unwrap())
        })
        .collect();
    let bin = binary();
    let (folded, _) = folded_of(&profile(), &["--symbols", bin.to_str().unwrap()]);
    let ours = leaf_counts(&folded);
    // The program's own functions, by name (the inlined `mix` among them).
    let program = ["mix", "hash_loop", "sum_loop", "work", "light", "main", "note"];
    for f in program {
        assert_eq!(ours.get(f), theirs.get(f), "{f}: ours {ours:?}, addr2line's {theirs:?}");
    }
    assert!(theirs.get("mix").is_some_and(|&n| n > 100), "{theirs:?}");
    // Every sample: the rest are in the kernel and libc.
    let total: u64 = ours.values().sum();
    assert_eq!(total, theirs.values().sum::<u64>());
    assert_eq!(total, SAMPLES_IN_FIXTURE);
}

#[test]
fn names_without_symbols_when_the_binary_is_where_the_profile_says() {
    // The profile names the binary where it was recorded; put that path where it is now.
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(profile()).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let here = std::fs::canonicalize(binary()).unwrap();
    for lib in v["libs"].as_array_mut().unwrap() {
        if lib["name"] == "burn" {
            lib["path"] = here.to_str().unwrap().into();
            lib["debugPath"] = here.to_str().unwrap().into();
        }
    }
    let moved = dir.path().join("prof.json");
    std::fs::write(&moved, serde_json::to_vec(&v).unwrap()).unwrap();
    let (folded, _) = folded_of(&moved, &[]);
    assert!(folded.contains(";main;work;hash_loop;mix "), "{folded}");
    assert_eq!(leaf_counts(&folded).values().sum::<u64>(), SAMPLES_IN_FIXTURE);

    // Elsewhere, without --symbols: addresses, and a warning that says what to do.
    v["libs"].as_array_mut().unwrap().iter_mut().filter(|l| l["name"] == "burn").for_each(|l| {
        l["path"] = "/nonexistent/burn".into();
        l["debugPath"] = "/nonexistent/burn".into();
    });
    std::fs::write(&moved, serde_json::to_vec(&v).unwrap()).unwrap();
    // perf's build-id cache (where `perf record` copies what it sampled) would find the binary
    // by its code id: an empty one stands in for a machine that never recorded it.
    let empty_cache = tempfile::tempdir().unwrap();
    let o = common::cfghub()
        .args(["convert", moved.to_str().unwrap(), "--to", "folded", "-o", "-"])
        .env("PERF_BUILDID_DIR", empty_cache.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (folded, stderr) =
        (String::from_utf8(o.stdout).unwrap(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(folded.contains(";burn+0x"), "{folded}");
    assert!(stderr.contains("--symbols"), "{stderr}");
}

#[test]
fn callgrind_keeps_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("callgrind.out.burn");
    let bin = binary();
    convert(&[
        "convert",
        profile().to_str().unwrap(),
        "--symbols",
        bin.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&out).unwrap();
    let totals =
        text.lines().find_map(|l| l.strip_prefix("totals: ").or_else(|| l.strip_prefix("summary: ")));
    assert_eq!(totals.map(str::trim), Some(SAMPLES_IN_FIXTURE.to_string().as_str()), "{text}");
    if !common::clients(&["callgrind_annotate"]) {
        return;
    }
    let o = Command::new("callgrind_annotate").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = String::from_utf8_lossy(&o.stdout);
    let total_line = report.lines().find(|l| l.contains("PROGRAM TOTALS")).unwrap_or("");
    assert!(total_line.trim_start().starts_with("1,230"), "{report}");
    // Samples at addresses: inlined code (`mix`) counts in the function it is inlined into,
    // as valgrind counts it.
    assert!(report.contains("burn.c:hash_loop") && report.contains("burn.c:sum_loop"), "{report}");
}

/// samply's profile of burn, named with `--symbols bin`, written in `dir` in the Firefox
/// Profiler's format.
fn convert_burn_profile(dir: &std::path::Path, bin: &std::path::Path) -> std::path::PathBuf {
    let written = dir.join("burn.fxprof.json.gz");
    convert(&[
        "convert",
        profile().to_str().unwrap(),
        "--symbols",
        bin.to_str().unwrap(),
        "-o",
        written.to_str().unwrap(),
    ]);
    written
}

#[test]
fn what_cfghub_writes_it_reads_back_with_the_same_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let bin = binary();
    let written = convert_burn_profile(dir.path(), &bin);
    let (direct, _) = folded_of(&profile(), &["--symbols", bin.to_str().unwrap()]);
    let (again, _) = folded_of(&written, &[]);
    let sum = |folded: &str| {
        let mut out: BTreeMap<String, u64> = BTreeMap::new();
        for line in folded.lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            *out.entry(stack.to_string()).or_insert(0) += n.parse::<u64>().unwrap();
        }
        out
    };
    assert_eq!(sum(&again), sum(&direct));
    // The libraries keep their path and build id, the functions their files.
    let bytes = std::fs::read(&written).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["meta"]["preprocessedProfileVersion"], 55);
    let burn = v["libs"].as_array().unwrap().iter().find(|l| l["name"] == "burn").expect("burn's library");
    assert_eq!(burn["codeId"], "523d30703045ef7ec39bf6efc59c1d7da82840c9");
    assert!(text.contains("burn.c"));
    let categories: Vec<&str> =
        v["meta"]["categories"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    // Kernel functions (samply's Kernel category, `_[k]` in folded stacks) keep their category.
    assert!(direct.contains("irqentry_exit_to_user_mode_[k]"), "{direct}");
    let t = &v["threads"][0];
    let category_of = |name: &str| {
        let strings = t["stringArray"].as_array().unwrap();
        let frames = &t["frameTable"];
        (0..frames["func"].as_array().unwrap().len())
            .find(|&i| {
                let func = frames["func"][i].as_u64().unwrap() as usize;
                strings[t["funcTable"]["name"][func].as_u64().unwrap() as usize] == name
            })
            .map(|i| categories[frames["category"][i].as_u64().unwrap() as usize])
    };
    assert_eq!(category_of("irqentry_exit_to_user_mode"), Some("Kernel"));
    assert_eq!(category_of("hash_loop"), Some("User"));
}

#[test]
fn one_track_per_event_or_the_one_event_asked_for() {
    let go = fixture("pprof/burn.cpu.pb.gz");
    let tracks = |extra: &[&str]| -> Vec<(String, String)> {
        let mut args = vec!["convert", go.to_str().unwrap(), "--to", "firefox", "-o", "-"];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_slice(&convert(&args).stdout).unwrap();
        v["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (t["name"].as_str().unwrap().to_string(), t["cfghubEvent"].as_str().unwrap().to_string())
            })
            .collect()
    };
    let all = tracks(&[]);
    let mut events: Vec<&str> = all.iter().map(|t| t.1.as_str()).collect();
    events.sort();
    assert_eq!(events, ["cpu", "samples"], "{all:?}");
    let one = tracks(&["--event", "cpu"]);
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].1, "cpu");
}

/// The Firefox Profiler's command-line client: the profiler's own loading, upgrading and
/// call-tree code under node (npm `@firefox-devtools/profiler-cli`, which scripts/test.sh
/// installs under target/firefox-profiler, or the program `CFGHUB_PROFILER_CLI` names).
pub(crate) fn profiler_cli() -> PathBuf {
    let path = std::env::var_os("CFGHUB_PROFILER_CLI").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/firefox-profiler/node_modules/.bin/profiler-cli")
    });
    assert!(
        path.exists() && have("node"),
        "the Firefox Profiler's profiler-cli (npm) or node is not installed at {}; scripts/test.sh installs it",
        path.display()
    );
    path
}

/// A profiler-cli session with a profile loaded (its daemon is stopped when dropped); its
/// state lives in a folder of its own.
pub(crate) struct ProfilerSession {
    cli: PathBuf,
    home: tempfile::TempDir,
}

impl ProfilerSession {
    pub(crate) fn load(file: &Path) -> ProfilerSession {
        let session = ProfilerSession { cli: profiler_cli(), home: tempfile::tempdir().unwrap() };
        let o = session.run(&["load", file.to_str().unwrap()]);
        // The client gives its daemon half a second to start, which a busy machine can take:
        // the daemon goes on loading the file, and answers once it has.
        if !o.status.success() && o.stderr.contains("did not become ready") {
            let ready = (0..120).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(500));
                session.run(&["status"]).status.success()
            });
            assert!(ready, "profiler-cli's daemon never answered: {}{}", o.stdout, o.stderr);
        } else {
            assert!(o.status.success(), "profiler-cli load: {}{}", o.stdout, o.stderr);
        }
        session
    }

    /// A session of `input` converted by cfghub (into `dir`), and its threads.
    fn of_converted(input: &Path, dir: &Path) -> (ProfilerSession, Vec<String>) {
        let name = input.file_name().unwrap().to_str().unwrap();
        let written = dir.join(format!("{name}.fxprof.json"));
        convert(&["convert", input.to_str().unwrap(), "-o", written.to_str().unwrap()]);
        let session = ProfilerSession::load(&written);
        let threads = session.threads();
        (session, threads)
    }

    pub(crate) fn run(&self, args: &[&str]) -> CliOutput {
        let o = Command::new(&self.cli)
            .args(args)
            .args(["--session", "cfghub"])
            .env("HOME", self.home.path())
            .output()
            .unwrap();
        CliOutput {
            status: o.status,
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// `thread functions --json` of a thread: each function's name and self samples.
    pub(crate) fn self_samples(&self, thread: &str) -> BTreeMap<String, u64> {
        let o = self.run(&["thread", "functions", "--thread", thread, "--json"]);
        assert!(o.status.success(), "profiler-cli thread functions: {}{}", o.stdout, o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        let mut out = BTreeMap::new();
        for f in v["functions"].as_array().unwrap() {
            let n = f["selfSamples"].as_f64().unwrap() as u64;
            if n > 0 {
                *out.entry(f["name"].as_str().unwrap().to_string()).or_insert(0) += n;
            }
        }
        out
    }

    pub(crate) fn threads(&self) -> Vec<String> {
        let o = self.run(&["thread", "list", "--json"]);
        assert!(o.status.success(), "profiler-cli thread list: {}{}", o.stdout, o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        v["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["threadHandle"].as_str().unwrap().to_string())
            .collect()
    }
}

impl Drop for ProfilerSession {
    fn drop(&mut self) {
        let _ = self.run(&["stop"]);
    }
}

pub(crate) struct CliOutput {
    pub(crate) status: std::process::ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

#[test]
fn the_firefox_profilers_own_client_counts_what_cfghub_writes_as_cfghub_does() {
    let cli = profiler_cli();
    let dir = tempfile::tempdir().unwrap();
    let bin = binary();
    let written = convert_burn_profile(dir.path(), &bin);
    let (folded, _) = folded_of(&profile(), &["--symbols", bin.to_str().unwrap()]);
    // The profiler shows kernel functions without perf's suffix (their category says it).
    let ours: BTreeMap<String, u64> = leaf_counts(&folded)
        .into_iter()
        .map(|(name, n)| (name.strip_suffix("_[k]").unwrap_or(&name).to_string(), n))
        .fold(BTreeMap::new(), |mut m, (k, n)| {
            *m.entry(k).or_insert(0) += n;
            m
        });
    let session = ProfilerSession::load(&written);
    assert_eq!(session.cli, cli);
    let threads = session.threads();
    assert_eq!(threads.len(), 1, "{threads:?}");
    let theirs = session.self_samples(&threads[0]);
    assert_eq!(theirs, ours);
    assert_eq!(theirs.values().sum::<u64>(), SAMPLES_IN_FIXTURE);
    assert!(theirs.get("mix").is_some_and(|&n| n > 100), "{theirs:?}");

    // A Go profile (two events: a track each) loads too, with the weights of each event.
    let go = fixture("pprof/burn.cpu.pb.gz");
    let (session, threads) = ProfilerSession::of_converted(&go, dir.path());
    assert_eq!(threads.len(), 2, "{threads:?}");
    let (folded, _) = folded_of(&go, &["--event", "samples"]);
    let samples: u64 = leaf_counts(&folded).values().sum();
    let totals: Vec<u64> = threads.iter().map(|t| session.self_samples(t).values().sum()).collect();
    assert!(totals.contains(&samples), "{totals:?} vs {samples} samples");

    // A DCPI profile (flat costs, addresses no symbol names, written as its stacks are walked;
    // one count is above the format's 32-bit weights and is split): every address's count.
    let dcpi = fixture("dcpi/alpha-cycles.dcpi");
    let (session, threads) = ProfilerSession::of_converted(&dcpi, dir.path());
    assert_eq!(threads.len(), 1, "{threads:?}");
    let (folded, _) = folded_of(&dcpi, &[]);
    assert_eq!(session.self_samples(&threads[0]), leaf_counts(&folded));
    assert!(folded.contains("xemacs+0x70004 4000000000"), "{folded}");
}

/// samply records the address of every sample: with the binary, its samples feed BOLT's
/// `no_lbr` profile and an AutoFDO profile (they were refused as "no code addresses"). Every
/// sample in the binary is counted once: the fdata's counts, and the function totals
/// `llvm-profdata show` reads from the sample profile, add up to the binary's samples.
#[test]
fn samply_samples_feed_bolt_and_autofdo() {
    common::require("llvm-profdata-19");
    let dir = tempfile::tempdir().unwrap();
    let (fdata, prof) = (dir.path().join("burn.fdata"), dir.path().join("burn.prof"));
    for out in [&fdata, &prof] {
        let o = convert(&[
            "convert",
            profile().to_str().unwrap(),
            "--symbols",
            binary().to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(common::stderr(&o), "", "{}", out.display());
    }
    let fdata = std::fs::read_to_string(&fdata).unwrap();
    assert!(fdata.starts_with("no_lbr samples\n"), "{fdata}");
    let counted: u64 =
        fdata.lines().skip(1).map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum();
    assert!(fdata.lines().skip(1).all(|l| l.starts_with("1 ") && !l.contains("0x")), "{fdata}");
    // The binary's samples: all but those in the kernel.
    let (folded, _) = folded_of(&profile(), &["--symbols", binary().to_str().unwrap()]);
    let kernel: u64 = leaf_counts(&folded)
        .iter()
        .filter(|(f, _)| f.ends_with("_[k]") || f.contains("kernel"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(counted, SAMPLES_IN_FIXTURE - kernel, "{fdata}");
    let shown = Command::new("llvm-profdata-19").args(["show", "--sample"]).arg(&prof).output().unwrap();
    assert!(shown.status.success(), "{}", common::stderr(&shown));
    let totals: u64 = common::stdout(&shown)
        .lines()
        .filter_map(|l| l.strip_prefix("Function: "))
        .map(|l| l.split(": ").nth(1).unwrap().split(',').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(totals, counted, "{}", common::stdout(&shown));
}
