//! Profile inference (`--infer`) and `cfghub overlap` against the real programs: three
//! programs of fixtures/inference compiled with clang-19 -O2, sampled with `perf record -e
//! cpu-clock` (no branch records) and run under Valgrind for the exact counts. The inferred
//! counts must come no further from Valgrind's than the plain samples do on any program, and
//! much closer over the three, on the binary's own blocks, and conserve flow in every block of every function inferred; `llvm-bolt` must take
//! the inferred fdata as a branch profile of every sampled function; `overlap` of a profile
//! with itself, or with its DCFG conversion, is 1.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{self, run, stderr, stdout};

/// The programs, the argument sampled (about half a second) and the smaller one Valgrind runs
/// (the same code, a few seconds under Valgrind), and the block and edge overlap with
/// Valgrind's counts the inference reaches at least (measured: docs/inference.md).
const PROGRAMS: [(&str, &str, &str, f64, f64); 3] = [
    ("bytecode", "400000", "100000", 0.65, 0.50),
    ("sort", "8000000", "1000000", 0.65, 0.50),
    ("hash", "400000", "100000", 0.55, 0.45),
];

fn clients() -> bool {
    common::clients(&["clang-19", "valgrind", "perf", "llvm-bolt-19"])
}

/// `fixtures/inference/NAME.c` compiled as the optimizers want it (relocations kept for BOLT).
fn build(dir: &Path, name: &str) -> PathBuf {
    let binary = dir.join(name);
    let cc = Command::new("clang-19")
        .args(["-O2", "-gdwarf-4", "-Wl,--emit-relocs", "-o"])
        .arg(&binary)
        .arg(common::fixture(&format!("inference/{name}.c")))
        .status()
        .unwrap();
    assert!(cc.success());
    binary
}

/// Valgrind's exact counts of `binary ARGUMENT`.
fn truth(dir: &Path, binary: &Path, argument: &str) -> PathBuf {
    let out = dir.join(format!("{}.callgrind", binary.file_name().unwrap().to_str().unwrap()));
    let o = Command::new("valgrind")
        .args(["-q", "--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(binary)
        .arg(argument)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// `perf record -e cpu-clock -F 20000` of `binary ARGUMENT`: plain samples.
fn sampled(dir: &Path, binary: &Path, argument: &str) -> Option<PathBuf> {
    let data = dir.join(format!("{}.perf.data", binary.file_name().unwrap().to_str().unwrap()));
    common::perf_record(&data, &["-F", "20000"], binary, argument)
}

/// `cfghub overlap FIRST SECOND --symbols BINARY --json EXTRA...`.
fn overlap(first: &Path, second: &Path, binary: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["overlap", first.to_str().unwrap(), second.to_str().unwrap()];
    args.extend(["--symbols", binary.to_str().unwrap(), "--json"]);
    args.extend(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn inferred_counts_come_close_to_valgrinds_and_conserve_flow() {
    if !clients() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut gained = 0.0;
    for (name, sampled_argument, exact_argument, blocks, edges) in PROGRAMS {
        let binary = build(dir.path(), name);
        let Some(data) = sampled(dir.path(), &binary, sampled_argument) else { return };
        let exact = truth(dir.path(), &binary, exact_argument);
        let plain = overlap(&exact, &data, &binary, &[]);
        let inferred = overlap(&exact, &data, &binary, &["--infer"]);
        let block_overlap = inferred["blocks"].as_f64().unwrap();
        let edge_overlap = inferred["edges"].as_f64().unwrap();
        assert!(block_overlap >= blocks, "{name}: block overlap {block_overlap} < {blocks}");
        assert!(edge_overlap >= edges, "{name}: edge overlap {edge_overlap} < {edges}");
        // No program's inference is further from the truth than its plain samples per block
        // (on an AMD core `sort`'s samples alone come within 0.01 of it), and together they
        // are much closer.
        let plain_blocks = plain["blocks"].as_f64().unwrap();
        assert!(
            block_overlap >= plain_blocks - 0.02,
            "{name}: the inference ({block_overlap}) is further off than the samples per block ({plain_blocks})"
        );
        gained += block_overlap - plain_blocks;
        assert!(plain["edges"].is_null(), "{name}: plain samples have no edges");
        // Every block with a count conserves flow, in Valgrind's counts and in the inferred,
        // and is reached from its function's entry through jumps with a count: no CFG
        // discontinuity (BOLT's measure), in any hot function.
        for side in 0..2 {
            let balanced = &inferred["balanced"][side];
            assert_eq!(balanced[0], balanced[1], "{name}: side {side}: {balanced} blocks conserve flow");
            assert_eq!(inferred["discontinuity"][side].as_f64(), Some(0.0), "{name}: side {side}");
            for f in inferred["per_function"].as_array().unwrap() {
                assert_eq!(f["discontinuity"][side].as_f64(), Some(0.0), "{name}: {f}");
            }
        }
        // Plain samples have no edges, so no discontinuity to measure; their hot blocks are
        // measured all the same.
        assert!(plain["discontinuity"][1].is_null(), "{name}: {plain}");
        let hot = inferred["hot_blocks"]["overlap"].as_f64().unwrap();
        assert!(
            (0.0..=1.0).contains(&hot) && inferred["hot_blocks"]["common"].as_u64() > Some(0),
            "{name}: {hot}"
        );
        assert!(inferred["per_function"].as_array().unwrap().iter().any(|f| f["blocks"].as_u64() > Some(2)));
    }
    assert!(
        gained > 0.3,
        "the inference gains {gained} block overlap over the samples, summed over the programs"
    );
}

#[test]
fn llvm_bolt_takes_the_inferred_counts_as_a_branch_profile() {
    if !clients() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = build(dir.path(), "sort");
    let Some(data) = sampled(dir.path(), &binary, "3000000") else { return };
    let fdata = dir.path().join("sort.fdata");
    let o = run(&[
        "convert",
        data.to_str().unwrap(),
        "--symbols",
        binary.to_str().unwrap(),
        "--infer",
        "-o",
        fdata.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&fdata).unwrap();
    // The branch form: no `no_lbr` header, and branches inside quick_sort.
    assert!(!text.starts_with("no_lbr"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("1 quick_sort") && l.contains(" 1 quick_sort")), "{text}");
    let o = Command::new("llvm-bolt-19")
        .arg(&binary)
        .args(["-o"])
        .arg(dir.path().join("sort.bolt"))
        .arg("-data")
        .arg(&fdata)
        .args(["-reorder-blocks=ext-tsp", "-dyno-stats"])
        .output()
        .unwrap();
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "{said}");
    assert!(!said.contains("stale"), "{said}");
    assert!(!said.contains("no_lbr") && !said.contains("basic samples"), "{said}");
    // The sampled functions of the program (main, quick_sort, insertion_sort, next_random,
    // unsorted: five, though a short run may miss one) are profiled.
    let profiled = said
        .lines()
        .find_map(|l| l.strip_prefix("BOLT-INFO: ")?.split(" out of ").next()?.parse::<u32>().ok())
        .unwrap_or(0);
    assert!(profiled >= 4, "{said}");
}

#[test]
fn a_profile_overlaps_itself_and_its_dcfg_conversion_wholly() {
    if !common::clients(&["clang-19", "valgrind"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = build(dir.path(), "hash");
    let exact = truth(dir.path(), &binary, "20000");
    let same = overlap(&exact, &exact, &binary, &[]);
    let dcfg = dir.path().join("hash.dcfg.json");
    let o = run(&["convert", exact.to_str().unwrap(), "-o", dcfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let converted = overlap(&exact, &dcfg, &binary, &[]);
    for o in [same, converted] {
        for key in ["functions", "blocks", "edges"] {
            let v = o[key].as_f64().unwrap();
            assert!((v - 1.0).abs() < 1e-9, "{key} overlap {v}: {o}");
        }
        // The same blocks are hot on both sides, and some are.
        let hot = &o["hot_blocks"];
        assert_eq!(hot["overlap"].as_f64(), Some(1.0), "{hot}");
        assert!(hot["common"].as_u64() > Some(0) && hot["unique"] == serde_json::json!([0, 0]), "{hot}");
        assert_eq!(hot["threshold"][0], hot["threshold"][1], "{hot}");
    }
}

#[test]
fn inference_without_the_profiled_binary_says_which_is_missing() {
    if !common::clients(&["clang-19", "perf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = build(dir.path(), "sort");
    let Some(data) = sampled(dir.path(), &binary, "1000000") else { return };
    // The binary is gone and another one is named: no block counts, exit 2, and why.
    std::fs::remove_file(&binary).unwrap();
    let other = build(dir.path(), "hash");
    let out = dir.path().join("out.fdata");
    let o = run(&[
        "convert",
        data.to_str().unwrap(),
        "--symbols",
        other.to_str().unwrap(),
        "--infer",
        "-o",
        out.to_str().unwrap(),
    ]);
    // The program's samples get no counts, and the message names its binary as missing. (The
    // C library and the loader, found where the recording says, may still have a sample or
    // two inferred: then the conversion goes on, else it stops with exit 2.)
    let err = stderr(&o);
    let named = |err: &str| err.contains("no binary") && err.contains(&binary.display().to_string());
    match o.status.code() {
        Some(2) => {
            assert!(err.contains("no sampled function could be given block counts") && named(&err), "{err}");
            assert!(!out.exists());
        }
        Some(0) => assert!(err.contains("of the samples fall on code") && named(&err), "{err}"),
        code => panic!("exit {code:?}: {err}"),
    }
    // A profile without sampled addresses (folded stacks) has nothing to infer from.
    let folded = dir.path().join("s.folded");
    std::fs::write(&folded, "main;work 5\n").unwrap();
    let o = run(&["info", folded.to_str().unwrap(), "--infer"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no sampled addresses"), "{}", stderr(&o));
}

#[test]
fn samples_outside_every_function_of_the_binary_are_named_by_address() {
    if !common::clients(&["clang-19", "nm"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = build(dir.path(), "sort");
    let nm = stdout(&Command::new("nm").args(["-S", "--defined-only"]).arg(&binary).output().unwrap());
    let quick_sort = nm
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4 && f[3] == "quick_sort")
                .then(|| (u64::from_str_radix(f[0], 16).unwrap(), u64::from_str_radix(f[1], 16).unwrap()))
        })
        .expect("quick_sort in the symbol table");
    // DCPI samples by address, the text (from 0x1000, where clang's PIE places it) run
    // where the file states it: one in quick_sort's loop, one in the padding after it.
    let text = 0x1000;
    let (inside, padding) = (quick_sort.0 + 0x50 - text, quick_sort.0 + quick_sort.1 + 1 - text);
    let write = |samples: &BTreeMap<u64, u64>| {
        let dcpi = dir.path().join("sort.dcpi");
        std::fs::write(&dcpi, common::dcpi_bytes(binary.to_str().unwrap(), "cycles", text, samples)).unwrap();
        dcpi
    };
    let dcpi = write(&BTreeMap::from([(inside, 90), (padding, 10)]));
    let o = run(&["info", dcpi.to_str().unwrap(), "--address-step", "1", "--infer"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let gap = format!("{:#x}", padding + text);
    assert!(stderr(&o).contains("10.0% of the samples") && stderr(&o).contains(&gap), "{}", stderr(&o));
    // Nothing in any function: exit 2, the addresses named.
    let dcpi = write(&BTreeMap::from([(padding, 10)]));
    let o = run(&["info", dcpi.to_str().unwrap(), "--address-step", "1", "--infer"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("holds the sampled addresses {gap}")), "{}", stderr(&o));
}

#[test]
fn a_go_cpu_profile_gets_block_counts_for_its_sampled_functions() {
    if !common::clients(&["go"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let profile = crate::pprof::go_cpu_profile(dir.path());
    let binary = dir.path().join("burn");
    let o =
        run(&["info", profile.to_str().unwrap(), "--symbols", binary.to_str().unwrap(), "--infer", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // `hash`'s loop header takes no sample, all of its samples fall in the loop's body: the
    // function still gets its counts rather than being dropped. (The runtime's own functions
    // may take a sample or two that get none: assembly without sizes, the vDSO.)
    let info: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let routines: Vec<&str> = info["processes"][0]["top_routines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for f in ["main.spin", "main.hash"] {
        assert!(routines.contains(&f), "{f} has no blocks: {routines:?}");
    }
}

/// `perf script`'s text of a recording infers as the recording itself does: its leaf frames
/// (`ADDRESS FUNCTION+0xOFFSET (FILE)`) are placed in the binary by symbol and offset, both
/// as perf prints a call chain (addresses relative to the file) and a lone ip (as the process
/// ran it, a PIE's at a random base).
#[test]
fn perf_script_text_infers_as_its_perf_data_does() {
    if !common::clients(&["clang-19", "perf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = build(dir.path(), "sort");
    for (form, options) in [("lone-ip", &[][..]), ("call-chain", &["-g"][..])] {
        let data = dir.path().join(format!("{form}.perf.data"));
        let mut record = vec!["-F", "20000"];
        record.extend(options);
        let Some(data) = common::perf_record(&data, &record, &binary, "3000000") else { return };
        let text = dir.path().join(format!("{form}.perf.txt"));
        let o = Command::new("perf").arg("script").arg("-i").arg(&data).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::write(&text, &o.stdout).unwrap();
        let inferred = |input: &Path| -> String {
            let out = dir.path().join(format!("{}.fdata", input.file_name().unwrap().to_str().unwrap()));
            let o = run(&[
                "convert",
                input.to_str().unwrap(),
                "--symbols",
                binary.to_str().unwrap(),
                "--infer",
                "-o",
                out.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{form}: {}", stderr(&o));
            std::fs::read_to_string(out).unwrap()
        };
        let (from_text, from_data) = (inferred(&text), inferred(&data));
        assert!(from_text.lines().any(|l| l.starts_with("1 quick_sort")), "{form}: {from_text}");
        // The program's functions (a rare sample in the C library's own functions, which
        // perf names from debug information found by build id, is placed from the
        // recording alone).
        let program = |fdata: &str| -> Vec<String> {
            let ours = ["quick_sort", "insertion_sort", "main", "next_random", "unsorted"];
            fdata
                .lines()
                .filter(|l| {
                    l.split(' ').nth(1).is_some_and(|f| ours.contains(&f.split('/').next().unwrap_or(f)))
                })
                .map(str::to_string)
                .collect()
        };
        assert_eq!(
            program(&from_text),
            program(&from_data),
            "{form}: the text's inferred counts differ from the recording's\n{from_text}\n{from_data}"
        );
        // Every sample keeps its cost at an address (kernel code and leaves no table names
        // too), as the recording's: a writer of costs (DCFG) keeps the whole total.
        let costs = |input: &Path| -> u64 {
            let o = run(&["info", "--json", input.to_str().unwrap(), "--symbols", binary.to_str().unwrap()]);
            let info: Value = serde_json::from_str(&stdout(&o)).unwrap();
            info["processes"][0]["costs_by_image"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|i| i["costs"].as_object().unwrap().values().filter_map(Value::as_u64))
                .sum()
        };
        let dcfg = dir.path().join(format!("{form}.dcfg.json"));
        let o = run(&[
            "convert",
            text.to_str().unwrap(),
            "--symbols",
            binary.to_str().unwrap(),
            "-o",
            dcfg.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let total = costs(&data);
        assert!(total > 0);
        assert_eq!((costs(&text), costs(&dcfg)), (total, total), "{form}");
    }
}

/// samply's profile (the Firefox Profiler's format, addresses relative to each library) of a
/// binary recorded on another machine, whose path is not here: the binary named with
/// `--symbols` (unstripped, DWARF and code in one file) is the code inferred on, and the two
/// loops' inferred counts come within 5% of Valgrind's.
#[test]
fn a_samply_profile_infers_on_the_binary_named_where_its_path_is_not_here() {
    if !common::clients(&["valgrind"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = common::fixture("firefox/burn");
    let exact = truth(dir.path(), &binary, "1000000");
    let profile = common::fixture("firefox/burn.samply.json.gz");
    let inferred = overlap(&exact, &profile, &binary, &["--infer"]);
    let functions = inferred["per_function"].as_array().unwrap();
    for name in ["hash_loop", "sum_loop"] {
        let f = functions.iter().find(|f| f["name"] == name).unwrap_or_else(|| panic!("{name}: {inferred}"));
        for key in ["block_overlap", "edge_overlap"] {
            assert!(f[key].as_f64() > Some(0.95), "{name}: {key}: {f}");
        }
        assert_eq!(f["balanced"][1][0], f["balanced"][1][1], "{name}: {f}");
    }
}

/// The programs as scripts/inference-speedup.sh measures what their sample profiles do to
/// clang's optimization: the three above, a configuration parser (a `switch` on each character,
/// its cases far from equally common) and an order processor (checks that almost never fail,
/// cold code for each failure); the argument sampled, the one Valgrind runs, and the least
/// program similarity (`llvm-profdata-19 overlap --sample`) of the inferred sample profile to
/// the exact one. Measured on a 2-core AMD EPYC VM (docs/inference.md; recordings of four
/// runs of scripts/inference-speedup.sh and this test): bytecode 0.83-0.87, sort 0.83-0.87,
/// hash 0.74-0.78, parse 0.64-0.67, orders 0.81-0.83; the samples alone 0.60-0.62, 0.55-0.56,
/// 0.27-0.29, 0.60-0.61, 0.58.
const SAMPLE_PROFILES: [(&str, &str, &str, f64); 5] = [
    ("bytecode", "400000", "100000", 0.75),
    ("sort", "8000000", "1000000", 0.75),
    ("hash", "1000000", "100000", 0.65),
    ("parse", "6000000", "1000000", 0.55),
    ("orders", "1000000", "100000", 0.70),
];

/// How a program is built for a sample profile: clang's discriminators and line table for
/// profiling (`-fdebug-info-for-profiling`), DWARF 4 for Valgrind 3.19.
const PROFILING: [&str; 3] = ["-O2", "-gdwarf-4", "-fdebug-info-for-profiling"];

/// `fixtures/inference/NAME.c` built with `flags` into `dir/OUT`; clang's warnings.
fn compile(dir: &Path, name: &str, out: &str, flags: &[&str]) -> (PathBuf, String) {
    let binary = dir.join(out);
    let o = Command::new("clang-19")
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(common::fixture(&format!("inference/{name}.c")))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    (binary, stderr(&o))
}

/// `cfghub convert PROFILE --symbols BINARY EXTRA... -o OUT`: a text sample profile.
fn sample_profile(profile: &Path, binary: &Path, out: PathBuf, extra: &[&str]) -> PathBuf {
    let mut args = vec!["convert", profile.to_str().unwrap(), "--symbols", binary.to_str().unwrap()];
    args.extend(extra);
    args.extend(["-o", out.to_str().unwrap()]);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// `llvm-profdata-19 overlap --sample`'s whole program similarity of `other` to `base`, 0 to 1.
fn similarity(base: &Path, other: &Path) -> f64 {
    let o =
        Command::new("llvm-profdata-19").args(["overlap", "--sample"]).arg(base).arg(other).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    out.lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Whole program profile similarity:")?
                .trim()
                .strip_suffix('%')?
                .parse::<f64>()
                .ok()
        })
        .unwrap_or_else(|| panic!("no similarity in {out}"))
        / 100.0
}

/// Each function's head samples (the calls into it) in a text sample profile.
fn heads(profile: &Path) -> BTreeMap<String, u64> {
    std::fs::read_to_string(profile)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| {
            let mut f = l.rsplitn(3, ':');
            let head = f.next()?.parse().ok()?;
            f.next()?;
            Some((f.next()?.to_string(), head))
        })
        .collect()
}

#[test]
fn clang_takes_the_inferred_sample_profile_which_comes_closer_to_the_exact_one_than_the_samples() {
    if !common::clients(&["clang-19", "valgrind", "perf", "llvm-profdata-19"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, sampled_argument, exact_argument, floor) in SAMPLE_PROFILES {
        let (binary, _) = compile(d, name, name, &PROFILING);
        let Some(data) = sampled(d, &binary, sampled_argument) else { return };
        let callgrind = truth(d, &binary, exact_argument);
        let exact = sample_profile(&callgrind, &binary, d.join(format!("{name}.exact.prof")), &[]);
        let inferred = sample_profile(&data, &binary, d.join(format!("{name}.inferred.prof")), &["--infer"]);
        let plain = sample_profile(&data, &binary, d.join(format!("{name}.plain.prof")), &[]);
        // clang optimizes with it, and says nothing: no function left out, no line mismatched.
        let use_it = format!("-fprofile-sample-use={}", inferred.display());
        let (_, said) =
            compile(d, name, &format!("{name}.pgo"), &[&PROFILING[..], &["-Wall", use_it.as_str()]].concat());
        assert!(said.is_empty(), "{name}: clang warns: {said}");
        let (inferred_similarity, plain_similarity) =
            (similarity(&exact, &inferred), similarity(&exact, &plain));
        assert!(inferred_similarity >= floor, "{name}: similarity {inferred_similarity} < {floor}");
        assert!(
            inferred_similarity > plain_similarity,
            "{name}: the inferred profile ({inferred_similarity}) is no closer than the samples ({plain_similarity})"
        );
        // A function called often in the exact profile is called in the inferred one (a tail
        // call too, as `sort`'s quick_sort calls insertion_sort): else clang takes it for
        // cold. (One called once, as `bytecode`'s run by main, may be called from code no
        // sample fell on.)
        let (exact_heads, inferred_heads) = (heads(&exact), heads(&inferred));
        for (function, &head) in &inferred_heads {
            if exact_heads.get(function).is_some_and(|&h| h >= 1000) {
                assert!(head > 0, "{name}: {function} is never called in the inferred profile");
            }
        }
    }
}
