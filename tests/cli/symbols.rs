//! `--symbols` on the commands: flat samples become stacks, `info` reports what was found,
//! `dot --routine` finds a routine by the name symbolization gave it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// Compiles the inlining fixture (`-g -O2`, fixed addresses) into `dir/prog`.
fn build(dir: &Path) -> PathBuf {
    std::fs::copy(common::fixture("symbols/inlined.c"), dir.join("inlined.c")).unwrap();
    let o = Command::new("gcc")
        .args(["-g", "-O2", "-no-pie", "-o", "prog", "inlined.c"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "gcc: {}", common::stderr(&o));
    dir.join("prog")
}

/// The address of a function symbol, from `nm`.
fn address_of(binary: &Path, name: &str) -> u64 {
    let o = Command::new("nm").arg(binary).output().unwrap();
    let text = common::stdout(&o);
    let line = text.lines().find(|l| l.ends_with(&format!(" {name}"))).expect("the symbol");
    u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
}

/// A dcpicat dump naming `image` with samples at `addresses` (stated: a fixed-address build).
fn dcpicat(dir: &Path, image: &str, addresses: &[u64]) -> PathBuf {
    let mut text = format!(
        "name                 prog\nimage                1\npath                 {image}\nepoch                202611230000\n\
         platform             x86_64\ntext_start           0x000000400000\ntext_size            0x000000100000\n\
         event                {} cycles:63488:10000\n",
        addresses.len() * 5
    );
    for a in addresses {
        text.push_str(&format!("{a:#014x}      5\n"));
    }
    let path = dir.join("samples.dcpicat");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn flat_samples_become_stacks_once_named_and_info_says_what_was_found() {
    common::require("gcc");
    common::require("nm");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = build(dir);
    let work = address_of(&prog, "work");
    let fib = address_of(&prog, "fib");
    let input = dcpicat(dir, prog.to_str().unwrap(), &[work + 0x20, work + 0x24, fib + 4]);
    let (input, prog) = (input.to_str().unwrap(), prog.to_str().unwrap());
    let out = dir.join("x.folded");

    // Without names each address is its own frame, and the warning says how to name them.
    let o = common::run(&["convert", input, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("--symbols"), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().filter(|l| l.contains("+0x")).count(), 3, "{text}");

    let o = common::run(&["convert", input, "--symbols", prog, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let stacks: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(stacks.iter().any(|l| l.starts_with("work;poly")), "{text}");
    assert!(stacks.contains(&"fib 5"), "{text}");
    let total: u64 = stacks.iter().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    assert_eq!(total, 15);

    let o = common::run(&["convert", input, "--symbols", prog, "--no-inline", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("work 10\n") && text.contains("fib 5\n"), "{text}");

    let o = common::run(&["info", input, "--symbols", prog]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = common::stdout(&o);
    assert!(text.contains(&format!("debug file: {prog}")), "{text}");
    assert!(text.contains("3 address(es): 2 function(s), 3 with a source line"), "{text}");
    let o = common::run(&["info", input, "--symbols", prog, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["symbols"][0];
    assert_eq!(
        (s["addresses"].as_u64(), s["functions"].as_u64(), s["unnamed"].as_u64()),
        (Some(3), Some(2), Some(0))
    );
    assert!(s["inline_frames"].as_u64().unwrap() >= 1, "{s}");
}

#[test]
fn dot_finds_a_routine_by_the_name_symbols_give_it() {
    for tool in ["gcc", "valgrind", "strip"] {
        common::require(tool);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = build(dir);
    let o = Command::new("strip").args(["-o", "prog.stripped", "prog"]).current_dir(dir).output().unwrap();
    assert!(o.status.success());
    let profile = dir.join("callgrind.out.1");
    let o = Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes"])
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg("./prog.stripped")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "valgrind: {}", common::stderr(&o));
    let (profile, prog) = (profile.to_str().unwrap(), prog.to_str().unwrap());
    let out = dir.join("work.dot");
    let o = common::run(&["dot", profile, "--routine", "work", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "a stripped build has no routine called work");
    let o =
        common::run(&["dot", profile, "--symbols", prog, "--routine", "work", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("digraph \"work (prog.stripped)\""), "{text}");
    assert!(text.contains("inlined.c:"), "blocks carry their source lines: {text}");
}

#[test]
fn same_named_static_functions_stay_two_functions() {
    common::require("gcc");
    common::require("nm");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (file, k) in [("a.c", 3), ("b.c", 5)] {
        let body = format!(
            "__attribute__((noinline)) static int helper(int x) {{ return x * {k} + 1; }}\n\
             int call_{}(int x) {{ return helper(x); }}\n",
            &file[..1]
        );
        std::fs::write(dir.join(file), body).unwrap();
    }
    std::fs::write(
        dir.join("main.c"),
        "int call_a(int); int call_b(int);\nint main(int c, char **v) { return call_a(c) + call_b(c); }\n",
    )
    .unwrap();
    let o = Command::new("gcc")
        .args(["-g", "-O2", "-no-pie", "-o", "prog", "a.c", "b.c", "main.c"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "gcc: {}", common::stderr(&o));
    let prog = dir.join("prog");
    let o = Command::new("nm").arg(&prog).output().unwrap();
    let helpers: Vec<u64> = common::stdout(&o)
        .lines()
        .filter(|l| l.ends_with(" helper"))
        .map(|l| u64::from_str_radix(l.split_whitespace().next().unwrap(), 16).unwrap())
        .collect();
    assert_eq!(helpers.len(), 2, "two static helpers");
    let input = dcpicat(dir, prog.to_str().unwrap(), &helpers);
    let out = dir.join("out.callgrind");
    let o = common::run(&[
        "convert",
        input.to_str().unwrap(),
        "--symbols",
        prog.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    // Each helper is a function of its own, in its own file, as callgrind_annotate reads it.
    common::require("callgrind_annotate");
    let o =
        Command::new("callgrind_annotate").args(["--threshold=100", "--auto=no"]).arg(&out).output().unwrap();
    let text = common::stdout(&o);
    for f in ["a.c:helper", "b.c:helper"] {
        assert!(text.lines().any(|l| l.trim_start().starts_with("5 ") && l.contains(f)), "{f} in {text}");
    }
}

#[test]
fn symbols_override_replaces_the_names_a_profile_has() {
    for tool in ["gcc", "valgrind"] {
        common::require(tool);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = build(dir);
    let profile = dir.join("callgrind.out.1");
    let o = Command::new("valgrind")
        .args(["--tool=callgrind", "--dump-instr=yes"])
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg("./prog")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "valgrind: {}", common::stderr(&o));
    // Names as the file defines them: a compressed name is defined where it is first used, on
    // an `fn=` or a `cfn=` line (which comes first depends on the order valgrind dumps in).
    let names = |path: &Path| -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .filter(|l| l.starts_with("fn=") || l.starts_with("cfn="))
            .map(|l| l.to_string())
            .collect()
    };
    // Valgrind calls the program's entry `(below main)`; the symbol table calls it `_start`.
    assert!(names(&profile).iter().any(|l| l.ends_with(" (below main)")));
    let (p, prog) = (profile.to_str().unwrap(), prog.to_str().unwrap());
    let kept = dir.join("kept.callgrind");
    let o = common::run(&["convert", "-q", p, "--symbols", prog, "-o", kept.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(names(&kept).iter().any(|l| l.ends_with(" (below main)")), "names the profile has are kept");
    let replaced = dir.join("replaced.callgrind");
    let o = common::run(&[
        "convert",
        "-q",
        p,
        "--symbols",
        prog,
        "--symbols-override",
        "-o",
        replaced.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let names = names(&replaced);
    assert!(names.iter().any(|l| l.ends_with(" _start")), "{names:?}");
    assert!(!names.iter().any(|l| l.ends_with(" (below main)")), "{names:?}");
    assert!(names.iter().any(|l| l.ends_with(" work")), "{names:?}");
}
