//! Stack values reach every writer exactly as the source states them: integers beyond 2^53 (a
//! `u64` count, pprof's largest `int64`) and decimal fractions, which floating point would
//! round.

use crate::common;

/// Runs `cfghub ARGS` in `dir`, expecting success.
fn run_in(dir: &std::path::Path, args: &[&str]) -> String {
    let o = common::cfghub().args(args).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
    common::stdout(&o)
}

#[test]
fn integers_beyond_53_bits_pass_through_pprof_and_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 2^53 + 1 and pprof's largest value, 2^63 - 1.
    std::fs::write(d.join("in.folded"), "main;f 9007199254740993\nmain;g 9223372036854775807\n").unwrap();
    run_in(d, &["-q", "convert", "in.folded", "-o", "out.pb"]);
    run_in(d, &["-q", "convert", "out.pb", "-o", "back.folded"]);
    let back = std::fs::read_to_string(d.join("back.folded")).unwrap();
    assert!(back.contains("main;f 9007199254740993\n"), "{back}");
    assert!(back.contains("main;g 9223372036854775807\n"), "{back}");
    // Speedscope's weights and the tables keep them too (as written text).
    run_in(d, &["-q", "convert", "in.folded", "-o", "out.speedscope.json"]);
    let speedscope = std::fs::read_to_string(d.join("out.speedscope.json")).unwrap();
    assert!(speedscope.contains("[9007199254740993,9223372036854775807]"), "{speedscope}");
}

#[test]
fn the_largest_unsigned_count_passes_through_folded_and_speedscope() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("in.folded"), "main;f 18446744073709551615\n").unwrap();
    run_in(d, &["-q", "convert", "in.folded", "-o", "out.folded"]);
    assert_eq!(std::fs::read_to_string(d.join("out.folded")).unwrap(), "main;f 18446744073709551615\n");
    run_in(d, &["-q", "convert", "in.folded", "-o", "out.speedscope.json"]);
    let speedscope = std::fs::read_to_string(d.join("out.speedscope.json")).unwrap();
    assert!(speedscope.contains("\"weights\":[18446744073709551615]"), "{speedscope}");
    // pprof's values are signed 64-bit: the count does not fit, and the warning says so.
    let o = common::cfghub().args(["convert", "in.folded", "-o", "out.pb"]).current_dir(d).output().unwrap();
    assert!(common::stderr(&o).contains("beyond 64-bit integers"), "{}", common::stderr(&o));
}

#[test]
fn a_tenth_ten_times_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("in.folded"), "main;f 0.1\n".repeat(10)).unwrap();
    let info: serde_json::Value = serde_json::from_str(&run_in(d, &["info", "--json", "in.folded"])).unwrap();
    let process = &info["processes"][0];
    assert_eq!(process["stack_totals"]["samples"], 1.0, "{process}");
    // Callgrind's costs are whole: f's ten tenths are one, exactly.
    run_in(d, &["-q", "convert", "in.folded", "-o", "callgrind.out.x"]);
    let callgrind = std::fs::read_to_string(d.join("callgrind.out.x")).unwrap();
    assert!(callgrind.contains("\nsummary: 1\n") || callgrind.contains("\ntotals: 1\n"), "{callgrind}");
    // Written back, each line keeps its tenth.
    run_in(d, &["-q", "convert", "in.folded", "-o", "out.folded"]);
    assert_eq!(std::fs::read_to_string(d.join("out.folded")).unwrap(), "main;f 0.1\n".repeat(10));
}
