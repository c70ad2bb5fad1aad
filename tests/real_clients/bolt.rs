//! BOLT and LLVM sample profiles, checked by the tools that consume them (Debian bolt-19,
//! llvm-19, clang-19). A branchy C program (fixtures/bolt/branchy.c) is built as BOLT wants
//! it and run under Valgrind with instructions and jumps; cfghub turns the profile into
//! `.fdata`, the pre-aggregated form, a text sample profile and llvm-profgen's unsymbolized
//! form, and each consumer must accept it and agree with Valgrind's counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, sh};

const TOOLS: [&str; 6] =
    ["clang-19", "valgrind", "llvm-bolt-19", "perf2bolt-19", "llvm-profgen-19", "llvm-profdata-19"];

/// The program built and profiled once per test, in its own folder.
struct Worked {
    dir: tempfile::TempDir,
    binary: PathBuf,
    callgrind: PathBuf,
}

fn tools_present() -> bool {
    common::clients(&TOOLS)
}

/// `perf2bolt-19 -pa -aggregate-only`: BOLT's fdata of a pre-aggregated profile of `binary`.
fn perf2bolt_preaggregated(pa: &Path, binary: &Path, out: &Path) {
    sh(Command::new("perf2bolt-19")
        .args(["-pa", "-aggregate-only", "-p"])
        .arg(pa)
        .arg("-o")
        .arg(out)
        .arg(binary));
}

fn worked() -> Worked {
    let dir = tempfile::tempdir().unwrap();
    // BOLT wants relocations, and a function with a jump table it cannot analyse gets no
    // profile.
    let flags = ["-O2", "-fno-jump-tables", "-no-pie", "-Wl,--emit-relocs"];
    let (binary, callgrind) = built_and_profiled(dir.path(), "bolt/branchy.c", &flags, &["100000"]);
    Worked { dir, binary, callgrind }
}

/// The fixture `source` built with clang-19 in `dir` (`flags` beside `-g -gdwarf-4`: valgrind
/// 3.19 reads DWARF 4, not clang-19's default 5) and run under valgrind's Callgrind with `args`
/// (instructions and jumps): the binary and the profile.
fn built_and_profiled(dir: &Path, source: &str, flags: &[&str], args: &[&str]) -> (PathBuf, PathBuf) {
    let name = Path::new(source).file_stem().unwrap().to_string_lossy().into_owned();
    let binary = dir.join(&name);
    sh(Command::new("clang-19")
        .args(["-g", "-gdwarf-4"])
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(common::fixture(source)));
    let callgrind = common::callgrind_of(&binary, args, &dir.join(format!("callgrind.out.{name}")));
    (binary, callgrind)
}

/// The address of function `name` in `binary`'s symbol table (`nm`).
fn function_address(binary: &Path, name: &str) -> u64 {
    let symbols = common::stdout(&sh(Command::new("nm").arg(binary)));
    let line = symbols.lines().find(|l| l.ends_with(&format!(" {name}"))).expect("nm lists it");
    u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
}

fn convert(input: &Path, output: &Path, extra: &[&str]) {
    let mut args = vec!["convert", input.to_str().unwrap(), "-o", output.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = common::run(&args);
    assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
}

fn sorted_lines(path: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string(path).unwrap().lines().map(String::from).collect();
    v.sort();
    v
}

/// `1 FROM OFF 1 TO OFF MISPREDS COUNT` lines of `function`, as (from offset, to offset) ->
/// count.
fn records_of(fdata: &[String], function: &str) -> BTreeMap<(u64, u64), u64> {
    let mut out = BTreeMap::new();
    for l in fdata {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 8 && f[1] == function && f[4] == function {
            let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
            out.insert((hex(f[2]), hex(f[5])), f[7].parse().unwrap());
        }
    }
    out
}

/// What `llvm-bolt-19 -print-cfg` prints of `function` with the profile `fdata`, from its
/// header to the end of the function.
fn printed_cfg(binary: &Path, fdata: &Path, function: &str) -> String {
    let o = sh(Command::new("llvm-bolt-19")
        .arg(binary)
        .args(["-o", "/dev/null", "-print-cfg"])
        .arg(format!("-print-only={function}"))
        .arg(format!("-data={}", fdata.display())));
    let text = common::stdout(&o);
    let start =
        text.find(&format!("Binary Function \"{function}\" after building cfg")).expect("the CFG is printed");
    let end = text[start..].find("End of Function").map_or(text.len(), |e| start + e);
    text[start..end].to_string()
}

/// BOLT's CFG of `function` (`-print-cfg`): for each block, the offsets of its last two
/// instructions (BOLT ends a block with `jcc; jmp` pairs) with its successors' first offsets
/// and their counts.
fn bolt_cfg(binary: &Path, fdata: &Path, function: &str) -> BTreeMap<(u64, u64), u64> {
    let text = printed_cfg(binary, fdata, function);
    let text = text.as_str();
    // Block label -> its first offset; per block its last instruction and successors.
    let mut first: BTreeMap<String, u64> = BTreeMap::new();
    // Per block: its instructions' offsets, and its successors' labels with their counts.
    type Printed = (Vec<u64>, Vec<(String, u64)>);
    let mut blocks: Vec<Printed> = Vec::new();
    let mut label: Option<String> = None;
    for line in text.lines() {
        if let Some(l) = line.strip_suffix(')').and_then(|l| l.split_once(" (")).map(|(l, _)| l) {
            if l.starts_with('.') && !l.contains(' ') {
                label = Some(l.to_string());
                blocks.push((Vec::new(), Vec::new()));
                continue;
            }
        }
        let t = line.trim_start();
        if let Some((off, _)) = t.split_once(':').filter(|(o, _)| o.len() == 8) {
            if let Ok(o) = u64::from_str_radix(off, 16) {
                if let Some(l) = label.take() {
                    first.insert(l, o);
                }
                if !t.contains("!CFI") {
                    blocks.last_mut().unwrap().0.push(o);
                }
            }
        }
        if let Some(rest) = t.strip_prefix("Successors: ") {
            for succ in rest.split("), ") {
                let (name, info) = succ.split_once(" (").unwrap();
                let count = info.rsplit("count: ").next().unwrap().trim_end_matches(')').trim();
                blocks.last_mut().unwrap().1.push((name.to_string(), count.parse().unwrap_or(0)));
            }
        }
    }
    let mut out = BTreeMap::new();
    for (instrs, succs) in blocks {
        for (name, count) in succs.into_iter().filter(|s| s.1 > 0) {
            for &last in instrs.iter().rev().take(2) {
                out.insert((last, first[&name]), count);
            }
        }
    }
    out
}

#[test]
fn llvm_bolt_takes_the_fdata_with_valgrinds_counts_and_the_program_still_works() {
    if !tools_present() {
        return;
    }
    let w = worked();
    let fdata = w.dir.path().join("branchy.fdata");
    convert(&w.callgrind, &fdata, &[]);
    let bolted = w.dir.path().join("branchy.bolt");
    let o = sh(Command::new("llvm-bolt-19")
        .arg(&w.binary)
        .arg("-o")
        .arg(&bolted)
        .arg(format!("-data={}", fdata.display()))
        .args(["-reorder-blocks=ext-tsp", "-reorder-functions=hfsort", "-split-functions", "-dyno-stats"]));
    let log = common::stdout(&o) + &common::stderr(&o);
    // run, classify, main and the start-up code Valgrind saw run.
    let profiled = log
        .lines()
        .find(|l| l.contains("have non-empty execution profile"))
        .and_then(|l| l.trim_start_matches("BOLT-INFO: ").split(' ').next()?.parse::<u32>().ok());
    assert!(profiled.is_some_and(|n| n >= 3), "{log}");
    assert!(!log.contains("stale"), "{log}");
    // BOLT's CFG of each hot function carries every taken and fall-through count of the fdata,
    // which are Valgrind's (the Callgrind reader's own tests check those).
    let lines = sorted_lines(&fdata);
    for function in ["run", "classify"] {
        let ours = records_of(&lines, function);
        assert!(ours.len() >= 4, "{function}: {ours:?}");
        let cfg = bolt_cfg(&w.binary, &fdata, function);
        for (edge, count) in &ours {
            assert_eq!(cfg.get(edge), Some(count), "{function}: edge {edge:x?} in BOLT's CFG {cfg:x?}");
        }
    }
    // What BOLT was told, drawn on the routine's CFG: the fdata read back with the binary.
    let dot = w.dir.path().join("run.dot");
    let o = common::run(&[
        "dot",
        fdata.to_str().unwrap(),
        "--symbols",
        w.binary.to_str().unwrap(),
        "--routine",
        "run",
        "-o",
        dot.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let picture = std::fs::read_to_string(&dot).unwrap();
    assert!(picture.contains("run+0x27") && picture.contains("× 68,170"), "{picture}");
    common::render_dot(&picture, "run's CFG from the fdata");
    let run = |b: &Path| common::stdout(&sh(Command::new(b).arg("100000")));
    assert_eq!(run(&bolted), run(&w.binary), "the optimized program prints what the original prints");
    // The loop's conditional at run+0x4b (taken to the call, falling through otherwise) ran
    // once per iteration: 100000 executions, as Valgrind counted.
    let run_records = records_of(&lines, "run");
    let from_loop_head: u64 =
        run_records.iter().filter(|((from, _), _)| *from == 0x4b).map(|(_, c)| *c).sum();
    assert_eq!(from_loop_head, 100_000, "{run_records:x?}");
}

#[test]
fn perf2bolt_on_the_pre_aggregated_form_and_the_dcfg_path_give_the_same_fdata() {
    if !tools_present() {
        return;
    }
    let w = worked();
    let d = w.dir.path();
    let fdata = d.join("branchy.fdata");
    convert(&w.callgrind, &fdata, &[]);
    let pa = d.join("branchy.pa");
    convert(&w.callgrind, &pa, &["--to", "bolt-pa"]);
    let from_perf2bolt = d.join("perf2bolt.fdata");
    perf2bolt_preaggregated(&pa, &w.binary, &from_perf2bolt);
    assert_eq!(sorted_lines(&from_perf2bolt), sorted_lines(&fdata), "perf2bolt -pa and cfghub agree");
    // valgrind -> DCFG -> fdata.
    let dcfg = d.join("branchy.dcfg.json");
    convert(&w.callgrind, &dcfg, &[]);
    let via_dcfg = d.join("via-dcfg.fdata");
    convert(&dcfg, &via_dcfg, &[]);
    // The DCFG holds the PLT stubs Valgrind charges to the calls through them, rebuilt from
    // the binary (docs/formats/dcfg.md): its fdata has, besides the same records, the calls
    // into the stubs and the stubs' lazy way to the table's first entry, each run once.
    let (via, direct) = (sorted_lines(&via_dcfg), sorted_lines(&fdata));
    let (stubs, rest): (Vec<String>, Vec<String>) = via.into_iter().partition(|l| l.contains("@PLT"));
    assert_eq!(rest, direct, "the DCFG path gives the same fdata");
    assert!(stubs.iter().any(|l| l.starts_with("1 main ") && l.contains(" 1 printf@PLT 0 0 1")), "{stubs:?}");
    assert!(stubs.iter().all(|l| l.ends_with(" 0 1")), "each stub record once: {stubs:?}");
    // And cfghub reads both of its own forms back to the same records.
    for (input, extra) in [(&fdata, vec![]), (&pa, vec!["--symbols", w.binary.to_str().unwrap()])] {
        let back = d.join("back.fdata");
        convert(input, &back, &extra);
        assert_eq!(sorted_lines(&back), sorted_lines(&fdata), "{} read back", input.display());
    }
}

/// A loop whose body skips a call (fixtures/bolt/call_in_loop.c, built there): the call
/// returns to a block of its own, and perf2bolt reads a trace entered there from the callee
/// (`f`: from another function) as a fall-through from the call (`run 20 -> run 25`), which
/// cfghub must write too; a trace from the same place entered from inside the function
/// (`F`) is no such fall-through.
#[test]
fn a_trace_entered_after_a_call_is_a_fall_through_from_the_call_for_perf2bolt_and_cfghub() {
    if !common::clients(&["perf2bolt-19"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let binary = common::fixture("bolt/call_in_loop");
    let pa = common::fixture("bolt/call_in_loop.pa");
    let from_perf2bolt = d.path().join("perf2bolt.fdata");
    perf2bolt_preaggregated(&pa, &binary, &from_perf2bolt);
    let ours = d.path().join("cfghub.fdata");
    convert(&pa, &ours, &["--symbols", binary.to_str().unwrap()]);
    let lines = sorted_lines(&ours);
    assert!(lines.contains(&"1 run 20 1 run 25 0 10".to_string()), "{lines:?}");
    assert_eq!(sorted_lines(&from_perf2bolt), lines, "perf2bolt -pa and cfghub agree");
    // Entered from inside the function: no fall-through from the call, for either.
    let inside = d.path().join("inside.pa");
    std::fs::write(&inside, std::fs::read_to_string(&pa).unwrap().replace("\nf ", "\nF ")).unwrap();
    perf2bolt_preaggregated(&inside, &binary, &from_perf2bolt);
    convert(&inside, &ours, &["--symbols", binary.to_str().unwrap()]);
    let lines = sorted_lines(&ours);
    assert!(!lines.iter().any(|l| l.starts_with("1 run 20 1 run 25 ")), "{lines:?}");
    assert_eq!(sorted_lines(&from_perf2bolt), lines, "perf2bolt -pa and cfghub agree");
}

/// `NAME:TOTAL:HEAD` lines of a text sample profile.
fn heads(path: &Path) -> BTreeMap<String, (u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| {
            let f: Vec<&str> = l.rsplitn(3, ':').collect();
            (f[2].to_string(), (f[1].parse().unwrap(), f[0].parse().unwrap()))
        })
        .collect()
}

#[test]
fn llvm_profgen_agrees_with_the_sample_profile_and_clang_uses_it() {
    if !tools_present() {
        return;
    }
    let w = worked();
    let d = w.dir.path();
    let ours = d.join("branchy.prof");
    convert(&w.callgrind, &ours, &[]);
    let raw = d.join("branchy.rawprof");
    convert(&w.callgrind, &raw, &[]);
    let profgen = d.join("profgen.prof");
    sh(Command::new("llvm-profgen-19")
        .arg(format!("--binary={}", w.binary.display()))
        .arg(format!("--unsymbolized-profile={}", raw.display()))
        .args(["--use-offset=0", "--format=text"])
        .arg(format!("--output={}", profgen.display())));
    let (a, b) = (heads(&ours), heads(&profgen));
    assert!(a.contains_key("run") && a.contains_key("classify"), "{a:?}");
    assert_eq!(a, b, "every function's total and head samples");
    let o = sh(Command::new("llvm-profdata-19").args(["show", "--sample"]).arg(&ours));
    assert!(common::stdout(&o).contains("Function: run: "), "{}", common::stdout(&o));
    let o = sh(Command::new("clang-19")
        .args(["-O2", "-g", "-Wall"])
        .arg(format!("-fprofile-sample-use={}", ours.display()))
        .arg(common::fixture("bolt/branchy.c"))
        .arg("-o")
        .arg(d.join("branchy.pgo")));
    assert!(common::stderr(&o).is_empty(), "clang warns: {}", common::stderr(&o));
    // The same program's profile through a DCFG gives the same sample profile.
    let dcfg = d.join("branchy.dcfg.json");
    convert(&w.callgrind, &dcfg, &[]);
    let via_dcfg = d.join("via-dcfg.prof");
    convert(&dcfg, &via_dcfg, &[]);
    assert_eq!(std::fs::read(&via_dcfg).unwrap(), std::fs::read(&ours).unwrap());
}

#[test]
fn samples_at_addresses_give_no_lbr_fdata_and_sample_counts() {
    if !tools_present() || !common::clients(&["nm"]) {
        return;
    }
    let w = worked();
    let d = w.dir.path();
    let nm = common::stdout(&sh(Command::new("nm").arg(&w.binary)));
    let run = nm
        .lines()
        .find_map(|l| l.strip_suffix(" T run").map(|a| u64::from_str_radix(a, 16).unwrap()))
        .expect("run in the symbol table");
    // DCPI samples taken at run+0x2e and run+0x4b, the binary's text starting at `run`.
    let samples = BTreeMap::from([(0x2e, 100), (0x4b, 50)]);
    let dcpi = d.join("run.dcpi");
    std::fs::write(&dcpi, common::dcpi_bytes(w.binary.to_str().unwrap(), "cycles", run, &samples)).unwrap();
    let fdata = d.join("samples.fdata");
    convert(&dcpi, &fdata, &["--address-step", "1"]);
    assert_eq!(std::fs::read_to_string(&fdata).unwrap(), "no_lbr cycles\n1 run 2e 100\n1 run 4b 50\n");
    let o = sh(Command::new("llvm-bolt-19")
        .arg(&w.binary)
        .args(["-o", "/dev/null"])
        .arg(format!("-data={}", fdata.display())));
    let log = common::stdout(&o) + &common::stderr(&o);
    assert!(log.contains("1 out of") && log.contains("non-empty execution profile"), "{log}");
    let prof = d.join("samples.prof");
    convert(&dcpi, &prof, &["--address-step", "1"]);
    assert_eq!(heads(&prof).get("run"), Some(&(150, 0)), "{}", std::fs::read_to_string(&prof).unwrap());
}

/// `1 NAME OFF COUNT` lines of a no_lbr fdata: counts by function.
fn no_lbr_counts(fdata: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for l in fdata.lines().skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!((f.len(), f[0]), (4, "1"), "a no_lbr line: {l}");
        *out.entry(f[1].to_string()).or_default() += f[3].parse::<u64>().unwrap();
    }
    out
}

/// pprof as a sample source: a Go program's CPU profile (runtime/pprof, fixtures/pprof/burn.go)
/// gives no_lbr fdata of its leaf addresses that llvm-bolt takes for the very binary, and a
/// sample profile llvm-profdata reads; with the binary gone, the sample profile still names
/// the profile's own functions.
#[test]
fn a_go_cpu_profile_gives_no_lbr_fdata_and_a_sample_profile() {
    if !tools_present() || !common::clients(&["go"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let profile = super::pprof::go_cpu_profile(d);
    let binary = d.join("burn");
    let (_, totals) = super::pprof::raw_totals(d, &profile);
    // The profile's mapping names the binary's path: its symbol table names the addresses.
    let fdata = d.join("burn.fdata");
    let o = common::run(&["convert", profile.to_str().unwrap(), "-o", fdata.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&fdata).unwrap();
    assert!(text.starts_with("no_lbr samples\n"), "{text}");
    let counts = no_lbr_counts(&text);
    let written: u64 = counts.values().sum();
    // Every sample is written, or said to be left out (a sample in no function of the binary).
    // (`left out 2 samples, 980000000 cpu (...)`; the cpu column is never written.)
    let stderr = common::stderr(&o);
    let said = stderr.split("left out ").nth(1).and_then(|r| r.split(" (").next()).unwrap_or("");
    let left =
        said.split(", ").find_map(|p| p.strip_suffix(" samples")).map_or(0, |n| n.parse::<u64>().unwrap());
    assert_eq!(written + left, totals[0] as u64, "{text}{}", common::stderr(&o));
    assert!(counts.get("main.spin").is_some_and(|&n| n > 0), "{text}");
    assert!(counts.get("main.hash").is_some_and(|&n| n > 0), "{text}");
    let bolt = sh(Command::new("llvm-bolt-19")
        .arg(&binary)
        .args(["-o", "/dev/null"])
        .arg(format!("-data={}", fdata.display())));
    let log = common::stdout(&bolt) + &common::stderr(&bolt);
    assert!(log.contains("operating with basic samples profiling data (no LBR)"), "{log}");
    let profiled = log
        .lines()
        .find_map(|l| l.strip_prefix("BOLT-INFO: ")?.split(" out of ").next()?.parse::<usize>().ok())
        .expect("BOLT counts the functions with a profile");
    assert_eq!(profiled, counts.len(), "{log}");

    // The sample profile from the binary's DWARF: each sample once, in its outermost function.
    let prof = d.join("burn.prof");
    convert(&profile, &prof, &["--symbols", binary.to_str().unwrap()]);
    sh(Command::new("llvm-profdata-19").args(["show", "--sample"]).arg(&prof));
    let from_dwarf = heads(&prof);
    let total: u64 = from_dwarf.values().map(|h| h.0).sum();
    assert_eq!(total, written, "{}", std::fs::read_to_string(&prof).unwrap());
    assert!(from_dwarf.contains_key("main.spin") && from_dwarf.contains_key("main.hash"), "{from_dwarf:?}");
    // Go's inlined calls name their function through a .debug_info reference.
    let text = std::fs::read_to_string(&prof).unwrap();
    assert!(text.contains(": main.step:") && !text.contains(": :"), "every inlined call named: {text}");

    // Without the binary: the profile's own function names (the leaf frames, inlined ones
    // included), each with its samples.
    std::fs::rename(&binary, d.join("burn.moved")).unwrap();
    let own = d.join("own.prof");
    convert(&profile, &own, &[]);
    sh(Command::new("llvm-profdata-19").args(["show", "--sample"]).arg(&own));
    let own = heads(&own);
    let total: u64 = own.values().map(|h| h.0).sum();
    assert_eq!(total, totals[0] as u64, "{own:?}");
    assert!(own.contains_key("main.step") && own.contains_key("main.mix"), "inlined leaves: {own:?}");
}

/// perf.data as a sample source: a `perf record -e cpu-clock` (no branch records) of a program
/// built for BOLT gives, line for line, the no_lbr fdata `perf2bolt -nl` gives: samples counted
/// at each address, not their periods added up.
#[test]
fn perf_data_samples_give_the_fdata_perf2bolt_gives() {
    // A recording in which perf2bolt finds no sample of the program either (perf lost them on
    // a loaded machine) says nothing of cfghub: it is made again, at most twice.
    let hot = |fdata: &[String]| fdata.iter().any(|l| l.starts_with("1 inner/1 "));
    let mut tries = 0;
    let (ours, theirs) = loop {
        let Some((ours, theirs)) = fdata_of_a_perf_recording("perf-data/hot.c", &[], "100000000") else {
            return;
        };
        tries += 1;
        if hot(&theirs) || tries == 3 {
            break (ours, theirs);
        }
        eprintln!(
            "perf2bolt found no sample of the program in recording {tries}: {theirs:?}; recording again"
        );
    };
    assert!(hot(&ours), "the hot loop's samples: {ours:?} (perf2bolt's: {theirs:?})");
    assert_eq!(ours, theirs, "cfghub and perf2bolt -nl agree");
}

/// A recording of a command opens with the samples perf took in its child before the `exec`
/// (`perf-exec`, the kernel's alone): the binary written is still the program's, the one
/// perf2bolt is given, not the kernel the first process ran in.
#[test]
fn samples_before_the_exec_do_not_choose_the_binary() {
    let mut tries = 0;
    let (ours, theirs) = loop {
        // One sample each 2 µs of CPU catches the few before the exec.
        let Some((ours, theirs, commands)) =
            fdata_of_a_perf_recording_with("perf-data/hot.c", &[], &["-c", "2000"], "10000000")
        else {
            return;
        };
        tries += 1;
        if commands.iter().any(|c| c == "perf-exec") {
            break (ours, theirs);
        }
        assert!(tries < 5, "no sample before the exec in 5 recordings: {commands:?}");
    };
    assert!(ours.iter().any(|l| l.starts_with("1 inner/1 ")), "the hot loop's samples: {ours:?}");
    assert_eq!(ours, theirs, "cfghub and perf2bolt -nl agree");
}

/// Samples in PLT stubs: BOLT (and so perf2bolt) makes a function of each entry, `memcpy@PLT`;
/// cfghub names them alike rather than after the sizeless `_init` before the PLT.
#[test]
fn samples_in_plt_stubs_are_named_as_perf2bolt_names_them() {
    let Some((ours, theirs)) =
        fdata_of_a_perf_recording("perf-data/hot-plt.c", &["-fno-builtin"], "30000000")
    else {
        return;
    };
    assert!(ours.iter().any(|l| l.starts_with("1 memcpy@PLT ")), "samples in the memcpy stub: {ours:?}");
    assert!(!ours.iter().any(|l| l.starts_with("1 _init ")), "no stub named after _init: {ours:?}");
    assert_eq!(ours, theirs, "cfghub and perf2bolt -nl agree");
}

/// Samples in the stubs of `.plt.sec` (calls linked with `-z ibtplt`) and `.plt.got` (a
/// function whose address is also taken): BOLT makes a function of each stub, named after the
/// GOT slot's relocation (`memmove@PLT`, `memcpy@PLT`), and none of `.plt`'s lazy-binding
/// stubs; without CET, `.plt.got`'s 8-byte stubs alike.
#[test]
fn samples_in_plt_sec_and_plt_got_stubs_are_named_as_perf2bolt_names_them() {
    let cet: &[&str] = &["-fno-builtin", "-fcf-protection=full", "-Wl,-z,ibtplt"];
    for flags in [cet, &["-fno-builtin"][..]] {
        let Some((ours, theirs)) =
            fdata_of_a_perf_recording("perf-data/hot-plt-sections.c", flags, "30000000")
        else {
            return;
        };
        let memcpy_in_plt_got = ours.iter().any(|l| l.starts_with("1 memcpy@PLT "));
        assert!(memcpy_in_plt_got, "{flags:?}: samples in memcpy's .plt.got stub: {ours:?}");
        if flags == cet {
            let in_plt_sec =
                ours.iter().any(|l| l.starts_with("1 memmove@PLT ") || l.starts_with("1 abs@PLT "));
            assert!(in_plt_sec, "samples in .plt.sec stubs: {ours:?}");
        }
        assert!(
            !ours.iter().any(|l| l.starts_with("1 _init ")),
            "{flags:?}: no stub named after _init: {ours:?}"
        );
        assert_eq!(ours, theirs, "{flags:?}: cfghub and perf2bolt -nl agree");
    }
}

/// Compiles `source` (with `-Wl,--emit-relocs`, as BOLT wants), records it with `perf record -e
/// cpu-clock` given `argument`, and returns the sorted lines of cfghub's fdata of the recording
/// and of `perf2bolt-19 -nl`'s; `None` (skipped, said why) where the tools or perf are missing.
fn fdata_of_a_perf_recording(
    source: &str,
    flags: &[&str],
    argument: &str,
) -> Option<(Vec<String>, Vec<String>)> {
    fdata_of_a_perf_recording_with(source, flags, &[], argument).map(|(ours, theirs, _)| (ours, theirs))
}

/// [`fdata_of_a_perf_recording`] with more `perf record` options; also gives the commands the
/// samples were taken in, as `perf script` names them.
fn fdata_of_a_perf_recording_with(
    source: &str,
    flags: &[&str],
    record: &[&str],
    argument: &str,
) -> Option<(Vec<String>, Vec<String>, Vec<String>)> {
    if !tools_present() || !common::clients(&["perf"]) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = d.join("program");
    sh(Command::new("clang-19")
        .args(["-O2", "-g", "-Wl,--emit-relocs"])
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(common::fixture(source)));
    let data = d.join("program.perf.data");
    let recorded = ["cpu-clock", "cpu-clock:u"].iter().any(|event| {
        let mut perf = Command::new("perf");
        perf.args(["record", "-q", "-e", event]).args(record).arg("-o").arg(&data).arg(&binary).arg(argument);
        perf.output().unwrap().status.success()
    });
    if !recorded {
        common::unavailable(
            "`perf record -e cpu-clock` is not permitted here (see /proc/sys/kernel/perf_event_paranoid)",
        );
        return None;
    }
    let ours = d.join("cfghub.fdata");
    convert(&data, &ours, &[]);
    let theirs = d.join("perf2bolt.fdata");
    sh(Command::new("perf2bolt-19")
        .args(["-nl", "-aggregate-only", "-p"])
        .arg(&data)
        .arg("-o")
        .arg(&theirs)
        .arg(&binary));
    let script = sh(Command::new("perf").args(["script", "-F", "comm", "-i"]).arg(&data));
    let mut commands: Vec<String> = common::stdout(&script).lines().map(|l| l.trim().to_string()).collect();
    commands.sort();
    commands.dedup();
    Some((sorted_lines(&ours), sorted_lines(&theirs), commands))
}

/// A pprof profile of a position-independent binary maps its text from file offset 0x1000, as
/// samplers of C and C++ programs write it: samples at `run+0x2e` there give `1 run 2e N`, which
/// llvm-bolt takes.
#[test]
fn pprof_samples_of_a_pie_are_placed_through_the_mappings_file_offset() {
    use common::protobuf::{field, uint};
    if !tools_present() || !common::clients(&["nm"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let binary = d.join("branchy-pie");
    sh(Command::new("clang-19")
        .args(["-O2", "-g", "-fPIE", "-pie", "-fno-jump-tables", "-Wl,--emit-relocs", "-o"])
        .arg(&binary)
        .arg(common::fixture("bolt/branchy.c")));
    let nm = common::stdout(&sh(Command::new("nm").arg(&binary)));
    let run = nm
        .lines()
        .find_map(|l| l.strip_suffix(" T run").map(|a| u64::from_str_radix(a, 16).unwrap()))
        .expect("run in the symbol table");
    assert!(run >= 0x1000, "run at {run:#x}, in the text mapped from 0x1000");
    // The text mapping: 0x1000 of the file mapped at 0x555555555000.
    let (start, offset) = (0x5555_5555_5000u64, 0x1000u64);
    let path = binary.to_str().unwrap();
    let strings = ["", "samples", "count", path, "run"];
    let message = |fields: &[(u64, u64)]| {
        let mut m = Vec::new();
        for &(n, v) in fields {
            uint(&mut m, n, v);
        }
        m
    };
    let mut pb = Vec::new();
    field(&mut pb, 1, &message(&[(1, 1), (2, 2)]));
    let mut sample = Vec::new();
    field(&mut sample, 1, &[1]);
    field(&mut sample, 2, &[7]);
    field(&mut pb, 2, &sample);
    field(&mut pb, 3, &message(&[(1, 1), (2, start), (3, start + 0x10000), (4, offset), (5, 3)]));
    let mut location = message(&[(1, 1), (2, 1), (3, start + run + 0x2e - offset)]);
    field(&mut location, 4, &message(&[(1, 1), (2, 20)]));
    field(&mut pb, 4, &location);
    field(&mut pb, 5, &message(&[(1, 1), (2, 4), (3, 4)]));
    for s in strings {
        field(&mut pb, 6, s.as_bytes());
    }
    let input = d.join("pie.pb");
    std::fs::write(&input, pb).unwrap();
    let fdata = d.join("pie.fdata");
    convert(&input, &fdata, &[]);
    assert_eq!(std::fs::read_to_string(&fdata).unwrap(), "no_lbr samples\n1 run 2e 7\n");
    let o = sh(Command::new("llvm-bolt-19")
        .arg(&binary)
        .args(["-o", "/dev/null"])
        .arg(format!("-data={}", fdata.display())));
    let log = common::stdout(&o) + &common::stderr(&o);
    assert!(log.contains("1 out of") && log.contains("non-empty execution profile"), "{log}");
    let raw = d.join("pie.rawprof");
    convert(&input, &raw, &[]);
    let at = run + 0x2e;
    assert_eq!(std::fs::read_to_string(&raw).unwrap(), format!("1\n{at:x}-{at:x}:7\n0\n"));
}

/// Branch stacks of a real recording (fixtures/perf-data/propeller_sample_1.perf.data, 60
/// samples of LBR records, with its binary) give, line for line, the fdata `perf2bolt-19`
/// gives: taken branches and calls as recorded, returns left out, fall-throughs from the last
/// instruction of each of BOLT's blocks a trace runs through (the conditional branches' not
/// taken ones included) counted as the traces state them, interrupts left out and the traces
/// joined across them, and traces over a jump rejected.
#[test]
fn perf_data_branch_stacks_give_the_fdata_perf2bolt_gives() {
    if !common::clients(&["perf2bolt-19", "perf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = common::fixture("perf-data/propeller_sample_1.perf.data");
    let binary = common::fixture("perf-data/propeller_sample_1.bin");
    // BOLT 19 places a position-independent binary's mapping by the first loadable segment
    // whose file offset matches the mapping's (`getBaseAddressForMapping`): for this
    // lld-linked file that is the read-only segment at address 0, not the text (address
    // 0x1740, file offset 0x740), and every trace falls out of range. A copy without that
    // segment (its type made PT_NULL) is placed by its text; its code and symbols are the same.
    let placed = d.join("propeller_sample_1.bin");
    std::fs::write(&placed, without_first_read_only_segment(&std::fs::read(&binary).unwrap())).unwrap();
    let theirs = d.join("perf2bolt.fdata");
    sh(Command::new("perf2bolt-19")
        .current_dir(d)
        .args(["-aggregate-only", "-p"])
        .arg(&data)
        .arg("-o")
        .arg(&theirs)
        .arg(&placed));
    let ours = d.join("cfghub.fdata");
    convert(&data, &ours, &["--symbols", binary.to_str().unwrap()]);
    let (ours, theirs) = (sorted_lines(&ours), sorted_lines(&theirs));
    assert!(
        ours.iter().any(|l| l.starts_with("1 compute_flag 13 1 compute_flag 19 0 ")),
        "the fall-through of the conditional branch at compute_flag+0x13: {ours:?}"
    );
    assert_eq!(ours, theirs, "cfghub and perf2bolt agree");
}

/// An ELF64 little-endian file with its first loadable segment at file offset 0 that is not
/// executable turned into a PT_NULL entry.
fn without_first_read_only_segment(elf: &[u8]) -> Vec<u8> {
    const PT_LOAD: u32 = 1;
    const PF_X: u32 = 1;
    let u16_at = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().unwrap()) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
    let mut out = elf.to_vec();
    let header = (0..phnum)
        .map(|k| phoff + k * phentsize)
        .find(|&h| u32_at(h) == PT_LOAD && u64_at(h + 8) == 0 && u32_at(h + 4) & PF_X == 0)
        .expect("a read-only first segment");
    out[header..header + 4].copy_from_slice(&0u32.to_le_bytes());
    out
}

/// A signal handler placed right after `main` is entered by the kernel, not by `main`'s `ret`
/// before it: the fdata from valgrind's profile states no transfer from `main` into it (it
/// stated a call `main -> handler` that never happened), and llvm-bolt takes the file.
#[test]
fn a_signal_delivery_is_not_a_transfer_from_the_code_before_the_handler() {
    if !tools_present() || !common::clients(&["nm"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let flags = ["-O1", "-no-pie", "-Wl,--emit-relocs"];
    let (binary, callgrind) = built_and_profiled(dir.path(), "callgrind/signal-after-main.c", &flags, &[]);
    assert!(
        function_address(&binary, "handler") > function_address(&binary, "main"),
        "the handler follows main"
    );
    let fdata = dir.path().join("signal.fdata");
    convert(&callgrind, &fdata, &[]);
    let into_handler: Vec<String> = sorted_lines(&fdata)
        .into_iter()
        .filter(|l| {
            l.split_whitespace().nth(4) == Some("handler") && l.split_whitespace().nth(1) != Some("handler")
        })
        .collect();
    assert!(into_handler.is_empty(), "{into_handler:?}");
    sh(Command::new("llvm-bolt-19")
        .arg(&binary)
        .args(["-o", "/dev/null"])
        .arg(format!("-data={}", fdata.display())));
}

/// A loop unrolled 20 times and one vectorised, built with `-fdebug-info-for-profiling`:
/// their lines' discriminators carry the duplication factor, by which llvm-profgen multiplies
/// a line's count (the largest of its instructions'). The sample profile from valgrind's
/// profile is llvm-profgen's, line for line (the unrolled line counted 1,000 where
/// llvm-profgen counts 20,000).
#[test]
fn line_counts_of_unrolled_code_are_multiplied_by_the_duplication_factor_as_llvm_profgen_does() {
    if !tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let flags = ["-O2", "-fdebug-info-for-profiling", "-no-pie"];
    let (binary, callgrind) = built_and_profiled(d, "bolt/unrolled.c", &flags, &[]);
    let (ours, raw, profgen) = (d.join("unrolled.prof"), d.join("unrolled.rawprof"), d.join("profgen.prof"));
    convert(&callgrind, &ours, &[]);
    convert(&callgrind, &raw, &[]);
    sh(Command::new("llvm-profgen-19")
        .arg(format!("--binary={}", binary.display()))
        .arg(format!("--unsymbolized-profile={}", raw.display()))
        .args(["--use-offset=0", "--format=text"])
        .arg(format!("--output={}", profgen.display())));
    let (ours, profgen) =
        (std::fs::read_to_string(&ours).unwrap(), std::fs::read_to_string(&profgen).unwrap());
    assert!(profgen.contains(" 4: 20000"), "the unrolled line, 1,000 runs of 20 copies:\n{profgen}");
    assert_eq!(ours, profgen);
}

/// BOLT's blocks of `function` (`-print-cfg`) by their first instruction's offset into it,
/// with the execution count BOLT gives each.
fn bolt_block_counts(binary: &Path, fdata: &Path, function: &str) -> BTreeMap<u64, u64> {
    let mut out = BTreeMap::new();
    let mut pending: Option<u64> = None;
    for line in printed_cfg(binary, fdata, function).lines() {
        let t = line.trim_start();
        if let Some(n) = t.strip_prefix("Exec Count : ") {
            pending = n.trim().parse().ok();
        } else if let (Some(count), Some((off, _))) = (pending, t.split_once(':')) {
            if let Ok(off) = u64::from_str_radix(off, 16) {
                out.insert(off, count);
                pending = None;
            }
        }
    }
    out
}

/// Valgrind's executions of each instruction address of `program` (its `Ir`), read from the
/// profile's tables with DuckDB.
fn valgrind_executions(callgrind: &Path, program: &str, dir: &Path) -> BTreeMap<u64, u64> {
    let tables = dir.join("valgrind.tables");
    convert(callgrind, &tables, &[]);
    let script = format!(
        "import duckdb\nfor a, v in duckdb.sql(\"select c.address, sum(c.value) from '{t}/costs.parquet' c join \
         '{t}/images.parquet' i using (process, image) where c.event = 'Ir' and i.path like '%/{program}' \
         group by 1\").fetchall(): print(a, v)",
        t = tables.display()
    );
    let o = sh(Command::new("python3").args(["-c", &script]));
    common::stdout(&o)
        .lines()
        .map(|l| {
            let (a, v) = l.split_once(' ').unwrap();
            (a.parse().unwrap(), v.parse().unwrap())
        })
        .collect()
}

/// Guards that never fire: the conditional jump of each never runs taken, so Valgrind states
/// no jump to its target, which runs only by falling into it, where BOLT starts a block. The
/// fdata states those fall-throughs (from the binary's code), so every block of the hot
/// function gets, in llvm-bolt's CFG, the count Valgrind gives its first instruction (they got
/// `Exec Count 0`, cold-split candidates, though they ran 50,000 times).
#[test]
fn every_bolt_block_of_a_valgrind_profile_gets_the_count_valgrind_gives_its_first_instruction() {
    if !tools_present() || !common::clients(&["nm"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let flags = ["-O2", "-fno-jump-tables", "-no-pie", "-Wl,--emit-relocs"];
    let (binary, callgrind) = built_and_profiled(d, "bolt/guarded.c", &flags, &[]);
    let fdata = d.join("guarded.fdata");
    convert(&callgrind, &fdata, &[]);
    let executions = valgrind_executions(&callgrind, "guarded", d);
    let at = function_address(&binary, "step");
    let bolt = bolt_block_counts(&binary, &fdata, "step");
    assert!(bolt.len() >= 3, "BOLT cuts step where the guards jump: {bolt:?}");
    let valgrind: BTreeMap<u64, u64> =
        bolt.keys().map(|&off| (off, executions.get(&(at + off)).copied().unwrap_or(0))).collect();
    assert!(valgrind.values().all(|&n| n == 50_000), "{valgrind:?}");
    assert_eq!(bolt, valgrind);
}
