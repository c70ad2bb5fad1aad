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
