//! `cfghub overlap` as a user meets it without the real programs: its usage errors, the
//! profiles it cannot lay on a binary, and the output it never writes over an input.

use crate::common::{run, stderr};

#[test]
fn a_hot_fraction_outside_zero_to_one_is_a_usage_error() {
    let dcfg = crate::common::fixture("dcfg/hello-world.dcfg.json");
    let path = dcfg.to_str().unwrap();
    for hot in ["0", "1.5", "-0.2"] {
        let o = run(&["overlap", path, path, &format!("--hot={hot}")]);
        assert_eq!(o.status.code(), Some(2), "--hot {hot}: {}", stderr(&o));
        assert!(stderr(&o).contains("--hot"), "{}", stderr(&o));
    }
}

#[test]
fn profiles_without_a_binary_to_lay_them_on_are_an_error_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let folded = dir.path().join("a.folded");
    std::fs::write(&folded, "main;work 5\n").unwrap();
    let path = folded.to_str().unwrap();
    let o = run(&["overlap", path, path]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no function of either profile could be laid on its binary's blocks"),
        "{}",
        stderr(&o)
    );
    // The output is never one of the inputs.
    let o = run(&["overlap", path, path, "-o", path]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&folded).unwrap(), "main;work 5\n");
}

/// Two sample profiles are compared as `llvm-profdata overlap --sample` compares them, printed
/// as it prints them; a profile overlaps itself wholly.
#[test]
fn two_sample_profiles_are_compared_as_llvm_profdata_compares_them() {
    let a = crate::common::fixture("llvm-sample/unrolled.prof");
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("b.prof");
    let text =
        std::fs::read_to_string(&a).unwrap().replace(" 4: 20000", " 4: 10000").replace("main:", "main2:");
    std::fs::write(&b, text).unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let o = run(&["overlap", a, a, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((j["similarity"].as_f64(), j["sample_overlap"].as_f64()), (Some(1.0), Some(1.0)));
    assert_eq!(j["functions"]["overlap_count"], 3);
    let o = run(&["overlap", a, b, "--value-cutoff=0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = crate::common::stdout(&o);
    for line in [
        "Program level:",
        "  Whole program profile similarity: ",
        "    functions unique in test profile: 1",
        "  Hot-block overlap: ",
        "Function-level details:",
    ] {
        assert!(out.contains(line), "{line:?} in:\n{out}");
    }
    assert!(out.lines().any(|l| l.starts_with("0.00% ") && l.ends_with(" main2")), "{out}");
}

/// `--sample` takes a profile that is no sample profile as the llvm-sample writer would
/// write it, and says so when it cannot.
#[test]
fn sample_overlap_of_a_profile_without_addresses_or_lines_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let folded = dir.path().join("a.folded");
    std::fs::write(&folded, "main;work 5\n").unwrap();
    let a = crate::common::fixture("llvm-sample/unrolled.prof");
    let o = run(&["overlap", "--sample", a.to_str().unwrap(), folded.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no code addresses"), "{}", stderr(&o));
}
