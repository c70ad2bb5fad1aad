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
