//! LLVM sample profiles read by cfghub and compared by `cfghub overlap` as
//! `llvm-profdata-19 overlap --sample` compares them. Programs of fixtures/ are built with
//! clang-19 and run under Valgrind; cfghub writes their sample profiles, and perturbed copies,
//! other runs, profiles of other programs and files `llvm-profdata-19 merge --sample --text`
//! wrote make the pairs. Every figure `cfghub overlap --json` gives is the one llvm-profdata
//! prints, to the digits it prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, sh};

const TOOLS: [&str; 4] = ["clang-19", "clang++-19", "valgrind", "llvm-profdata-19"];

/// `source` built with `compiler` (`-O2 -g -gdwarf-4` and `flags`) and run under Callgrind
/// with `args`; returns Valgrind's profile.
fn profiled(dir: &Path, compiler: &str, source: &str, flags: &[&str], args: &[&str], name: &str) -> PathBuf {
    let binary = dir.join(name);
    sh(Command::new(compiler)
        .args(["-O2", "-g", "-gdwarf-4"])
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(common::fixture(source)));
    let callgrind = common::callgrind_of(&binary, args, &dir.join(format!("callgrind.out.{name}")));
    callgrind
}

/// cfghub's sample profile of a Valgrind profile.
fn sample_profile(callgrind: &Path, out: &Path) -> PathBuf {
    let o = common::run(&["convert", callgrind.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    out.to_path_buf()
}

/// A copy of a sample profile with every third body line's count tripled, every fifth line
/// left out and one function renamed: a profile close to the original, but not equal.
fn perturbed(path: &Path, out: &Path) -> PathBuf {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let body =
            line.starts_with(' ')
                && line.trim_start().split(": ").nth(1).is_some_and(|r| {
                    r.split(' ').next().is_some_and(|c| c.bytes().all(|b| b.is_ascii_digit()))
                });
        if body && i % 5 == 4 {
            continue;
        }
        if body && i % 3 == 0 {
            let (at, rest) = line.split_once(": ").unwrap();
            let (count, targets) = rest.split_once(' ').map_or((rest, ""), |(c, t)| (c, t));
            let tripled = count.parse::<u64>().unwrap() * 3;
            lines.push(format!("{at}: {tripled}{}{targets}", if targets.is_empty() { "" } else { " " }));
        } else if !line.starts_with(' ')
            && i > 0
            && lines.iter().filter(|l: &&String| !l.starts_with(' ')).count() == 1
        {
            lines.push(format!("renamed_{line}"));
        } else {
            lines.push(line.to_string());
        }
    }
    std::fs::write(out, lines.join("\n") + "\n").unwrap();
    out.to_path_buf()
}

/// What `llvm-profdata-19 overlap --sample` prints, by label (`Whole program profile
/// similarity` -> `45.667%`; a second block's labels prefixed with its heading).
fn llvm_figures(base: &Path, test: &Path) -> BTreeMap<String, String> {
    let o = sh(Command::new("llvm-profdata-19").args(["overlap", "--sample"]).arg(base).arg(test));
    let mut figures = BTreeMap::new();
    let mut section = String::new();
    for line in common::stdout(&o).lines().skip(2) {
        if line.starts_with("Function-level") {
            break;
        }
        let Some((label, value)) = line.trim().split_once(": ") else { continue };
        if !line.starts_with("    ") {
            section = label.to_string();
        }
        figures.insert(format!("{section}/{label}"), value.to_string());
    }
    figures
}

/// The same figures from `cfghub overlap --json` (with `extra` arguments), formatted as
/// llvm-profdata formats them.
fn our_figures(base: &Path, test: &Path, extra: &[&str]) -> BTreeMap<String, String> {
    let mut args = vec!["overlap", "--json", base.to_str().unwrap(), test.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = common::run(&args);
    assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    let pct = |key: &str| format!("{:.3}%", j[key].as_f64().unwrap() * 100.0);
    let n = |a: &str, b: &str| j[a][b].as_u64().unwrap().to_string();
    let mut f = BTreeMap::new();
    let mut put = |section: &str, label: &str, value: String| {
        f.insert(format!("{section}/{label}"), value);
    };
    let s = "Whole program profile similarity";
    put(s, s, pct("similarity"));
    let s = "Whole program sample overlap";
    put(s, s, pct("sample_overlap"));
    put(s, "percentage of samples unique in base profile", pct("base_unique"));
    put(s, "percentage of samples unique in test profile", pct("test_unique"));
    put(s, "total samples in base profile", j["base_samples"].to_string());
    put(s, "total samples in test profile", j["test_samples"].to_string());
    let s = "Function overlap";
    put(s, s, pct("function_overlap"));
    put(s, "overlap functions", n("functions", "overlap_count"));
    put(s, "functions unique in base profile", n("functions", "base_unique_count"));
    put(s, "functions unique in test profile", n("functions", "test_unique_count"));
    for (what, key, stats) in
        [("function", "hot_function_overlap", "hot_functions"), ("block", "hot_block_overlap", "hot_blocks")]
    {
        let s = format!("Hot-{what} overlap");
        put(&s, &s, pct(key));
        put(&s, &format!("overlap hot {what}s"), n(stats, "overlap_count"));
        put(&s, &format!("hot {what}s unique in base profile"), n(stats, "base_unique_count"));
        put(&s, &format!("hot {what}s unique in test profile"), n(stats, "test_unique_count"));
    }
    f
}

#[test]
fn overlap_gives_every_figure_llvm_profdata_gives() {
    if !common::clients(&TOOLS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sort = sample_profile(
        &profiled(d, "clang-19", "inference/sort.c", &[], &["200000"], "sort"),
        &d.join("sort.prof"),
    );
    let sort2 = sample_profile(
        &profiled(d, "clang-19", "inference/sort.c", &[], &["50000"], "sort2"),
        &d.join("sort2.prof"),
    );
    let hash = sample_profile(
        &profiled(d, "clang-19", "inference/hash.c", &[], &["40000"], "hash"),
        &d.join("hash.prof"),
    );
    let bytecode = sample_profile(
        &profiled(d, "clang-19", "inference/bytecode.c", &[], &["6000"], "bc"),
        &d.join("bc.prof"),
    );
    // Inlined call sites nested several deep, and lines with discriminators.
    let inl = sample_profile(
        &profiled(d, "clang++-19", "callgrind/inlined-calls.cc", &[], &[], "inl"),
        &d.join("inl.prof"),
    );
    let unrolled = sample_profile(
        &profiled(d, "clang-19", "bolt/unrolled.c", &["-fdebug-info-for-profiling"], &[], "unrolled"),
        &d.join("unrolled.prof"),
    );
    assert!(std::fs::read_to_string(&inl).unwrap().contains("\n  "), "nested call sites");
    assert!(std::fs::read_to_string(&unrolled).unwrap().contains(".1: "), "discriminators");
    // Files LLVM wrote: a merge of two runs, and its text of cfghub's file.
    let merged = d.join("merged.prof");
    sh(Command::new("llvm-profdata-19")
        .args(["merge", "--sample", "--text"])
        .arg(&sort)
        .arg(&sort2)
        .arg("-o")
        .arg(&merged));
    let inl_llvm = d.join("inl.llvm.prof");
    sh(Command::new("llvm-profdata-19")
        .args(["merge", "--sample", "--text"])
        .arg(&inl)
        .arg("-o")
        .arg(&inl_llvm));
    // What cfghub writes back from a sample profile it read: llvm-profdata reads it.
    let inl_back = d.join("inl.back.prof");
    let o = common::run(&["convert", inl_llvm.to_str().unwrap(), "-o", inl_back.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    sh(Command::new("llvm-profdata-19").args(["show", "--sample"]).arg(&inl_back));
    let both = d.join("sort-and-hash.prof");
    let text = std::fs::read_to_string(&sort).unwrap() + &std::fs::read_to_string(&hash).unwrap();
    std::fs::write(&both, text).unwrap();
    let pairs = [
        (&sort, &sort2),
        (&sort, &perturbed(&sort, &d.join("sort.p.prof"))),
        (&sort, &both),
        (&both, &hash),
        (&sort2, &merged),
        (&inl, &perturbed(&inl, &d.join("inl.p.prof"))),
        (&inl_llvm, &inl),
        (&inl, &inl_back),
        (&unrolled, &perturbed(&unrolled, &d.join("unrolled.p.prof"))),
        (&hash, &bytecode),
        (&bytecode, &both),
    ];
    for (base, test) in pairs {
        let (llvm, ours) = (llvm_figures(base, test), our_figures(base, test, &[]));
        assert_eq!(llvm.len(), 18, "{}", llvm.keys().cloned().collect::<Vec<_>>().join("\n"));
        assert_eq!(ours, llvm, "{} against {}", base.display(), test.display());
    }
    // A profile overlaps itself wholly; its hot threshold is the count of LLVM's summary at 99%.
    for p in [&sort, &hash, &bytecode, &inl, &unrolled, &merged, &both] {
        let o = common::run(&["overlap", "--json", p.to_str().unwrap(), p.to_str().unwrap()]);
        let j: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
        assert_eq!((j["similarity"].as_f64(), j["sample_overlap"].as_f64()), (Some(1.0), Some(1.0)));
        let summary =
            sh(Command::new("llvm-profdata-19").args(["show", "--sample", "--detailed-summary"]).arg(p));
        let summary = common::stdout(&summary);
        let line = summary.lines().find(|l| l.ends_with(" account for 99 percentage of the total counts."));
        let threshold = line.and_then(|l| l.split(">= ").nth(1)?.split(' ').next()?.parse::<u64>().ok());
        assert_eq!(j["hot_thresholds"][0].as_u64(), threshold, "{}: {summary}", p.display());
    }
    // `--sample` takes Valgrind's profiles themselves: their sample profiles, as written.
    let (cg_sort, cg_sort2) = (d.join("callgrind.out.sort"), d.join("callgrind.out.sort2"));
    assert_eq!(our_figures(&cg_sort, &cg_sort2, &["--sample"]), llvm_figures(&sort, &sort2));
    assert_eq!(our_figures(&cg_sort, &sort2, &["--sample"]), llvm_figures(&sort, &sort2));
}

/// Probe-based, context-sensitive and nested profiles (written by hand in the form
/// llvm-profgen writes): compared as llvm-profdata compares them, and refused against the
/// other kind.
#[test]
fn probe_based_and_context_sensitive_profiles_are_compared_as_llvm_profdata_compares_them() {
    if !common::clients(&["llvm-profdata-19"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let probe_a = write(
        "a.prof",
        "main:5000:10\n 1: 10\n 2: 400\n 3: 2000 foo:300\n 4: foo:800\n  1: 300\n  2: 500\n  !CFGChecksum: 42\n !CFGChecksum: 7\nfoo:900:300\n 1: 300\n 2: 600\n !CFGChecksum: 42\n",
    );
    let probe_b = write(
        "b.prof",
        "main:4000:12\n 1: 12\n 2: 300\n 3: 2500 foo:280\n 4: foo:500\n  1: 200\n  3: 300\n  !CFGChecksum: 42\n !CFGChecksum: 7\nfoo:700:280\n 1: 280\n 2: 420\n !CFGChecksum: 42\nbar:10:1\n 1: 10\n !CFGChecksum: 5\n",
    );
    assert_eq!(our_figures(&probe_a, &probe_b, &[]), llvm_figures(&probe_a, &probe_b));
    let cs_a = write(
        "cs-a.prof",
        "[main]:3000:0\n 1: 1000\n 2: 2000 foo:100\n[main:2 @ foo]:500:100\n 1: 400\n 2: 100\n[bar:1 @ foo]:50:5\n 1: 50\n",
    );
    let cs_b = write(
        "cs-b.prof",
        "[main]:3000:0\n 1: 900\n 2: 2100 foo:90\n[main:2 @ foo]:400:90\n 1: 300\n 3: 100\n[baz]:70:7\n 1: 70\n",
    );
    assert_eq!(our_figures(&cs_a, &cs_b, &[]), llvm_figures(&cs_a, &cs_b));
    // A callee whose samples its own profile holds too (`!Attributes: 4`, a nested
    // context-sensitive profile) is left out of the summary: the hot threshold is 40, not 2000.
    let nested = "main:5000:10\n 1: 10\n 2: 40\n 3: 2000\n 4: foo:800\n  1: 3000\n  2: 5000\n";
    let (whole, duplicated) =
        (write("n0.prof", nested), write("n1.prof", &format!("{nested}  !Attributes: 4\n")));
    assert_eq!(our_figures(&whole, &duplicated, &[]), llvm_figures(&whole, &duplicated));
    let o = common::run(&["overlap", "--json", duplicated.to_str().unwrap(), whole.to_str().unwrap()]);
    let j: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    assert_eq!(j["hot_thresholds"], serde_json::json!([40, 2000]));
    let plain = write("plain.prof", "main:10:1\n 1: 10\n");
    for other in [&probe_a, &cs_a] {
        let o = common::run(&["overlap", plain.to_str().unwrap(), other.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
        assert!(common::stderr(&o).contains("cannot compare"), "{}", common::stderr(&o));
    }
}

/// The binary forms llvm-profdata writes are named, with the command that makes the text form.
#[test]
fn binary_sample_profiles_llvm_profdata_writes_are_refused_with_the_command_to_convert_them() {
    if !common::clients(&["llvm-profdata-19"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("a.prof");
    std::fs::write(&text, "main:30:1\n 1: 10\n 2: 20 f:3\n").unwrap();
    for (flag, what) in [("--extbinary", "extbinary"), ("--binary", "a binary sample profile")] {
        let out = dir.path().join(format!("a{flag}"));
        sh(Command::new("llvm-profdata-19").args(["merge", "--sample", flag]).arg(&text).arg("-o").arg(&out));
        let o = common::run(&["overlap", out.to_str().unwrap(), text.to_str().unwrap()]);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(what) && err.contains("llvm-profdata-19 merge --sample --text"), "{err}");
    }
}
