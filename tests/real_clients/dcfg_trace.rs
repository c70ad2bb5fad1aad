//! DCFG-trace replayed into Callgrind: callgrind_annotate reads the exact inclusive costs, and
//! the outermost routine's inclusive cost is the program total.

use crate::common;

#[test]
fn callgrind_annotate_sees_main_at_the_program_total() {
    common::require("callgrind_annotate");
    let dir = tempfile::tempdir().unwrap();
    let dcfg = dir.path().join("app.dcfg.json").to_str().unwrap().to_string();
    let trace = dir.path().join("app.trace.json").to_str().unwrap().to_string();
    let o = common::run(&[
        "trace",
        "generate",
        "--edges",
        "5000",
        "--threads",
        "1",
        "--dcfg-out",
        &dcfg,
        "--trace-out",
        &trace,
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let out = dir.path().join("callgrind.out.app");
    let o = common::run(&["-q", "convert", &dcfg, "--trace", &trace, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let a = std::process::Command::new("callgrind_annotate")
        .args(["--inclusive=yes", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let text = String::from_utf8_lossy(&a.stdout).into_owned();
    let total = text
        .lines()
        .find(|l| l.contains("PROGRAM TOTALS"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let main =
        text.lines().find(|l| l.ends_with(":main [/opt/synth/lib0.so]")).unwrap_or_else(|| panic!("{text}"));
    assert!(main.starts_with(&format!("{total} (100.0%)")), "main: {main}, total {total}\n{text}");
    // Every routine's inclusive cost is at most the total.
    for l in text.lines().filter(|l| l.contains("%)  ")) {
        let pct: f64 = l.split('(').nth(1).unwrap().split('%').next().unwrap().trim().parse().unwrap();
        assert!(pct <= 100.0, "{l}");
    }
}
