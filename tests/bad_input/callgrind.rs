//! Callgrind: bad input exits 2 with `file:line` and what was expected, and leaves no output
//! file behind.

use crate::common;

const HEAD: &str = "# callgrind format\nversion: 1\npositions: instr line\nevents: Ir\n";

/// Converts `content` (written to `name`) to DCFG and checks the failure.
fn refused(name: &str, content: &str, line: usize, expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join(name);
    std::fs::write(&input, content).unwrap();
    let output = dir.path().join("out.dcfg.json");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{name}: {err}");
    let place = format!("{}:{line}: ", input.display());
    assert!(err.contains(&place), "{name}: expected {place:?} in: {err}");
    for e in expected {
        assert!(err.contains(e), "{name}: expected {e:?} in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(!output.exists(), "{name}: a failed conversion left {}", output.display());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "only the input may remain: {leftovers:?}");
    // `info` refuses it the same way.
    let o = common::run(&["info", input.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "info {name}: {}", common::stderr(&o));
}

/// A compressed name never defined is no reason to refuse the file (callgrind_annotate and
/// KCachegrind read on): it is kept under its id, with a warning at the line that used it.
#[test]
fn undefined_compressed_name() {
    let text = format!(
        "{HEAD}ob=(1) /bin/app\nfl=(1) app.c\nfn=(1) main\n0x10 3 5\ncfn=(7)\ncalls=1 0x40 9\n* * 20\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("callgrind.out.undefined");
    std::fs::write(&input, text).unwrap();
    let o = common::run(&["info", input.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("line 9") && err.contains("(7)") && err.contains("fn=, cfn=, jfn="), "{err}");
}

#[test]
fn calls_without_its_cost_line() {
    let text = format!(
        "{HEAD}fl=(1) app.c\nfn=(1) main\n0x10 3 5\ncfn=(2) work\ncalls=1 0x40 9\nfn=(2)\n0x40 9 20\n"
    );
    refused(
        "app.callgrind",
        &text,
        10,
        &["expected the source position line of the calls= at line 9", "inclusive cost", "fn=(2)"],
    );
    // Or the file ends right after it.
    let text = format!("{HEAD}fl=(1) app.c\nfn=(1) main\ncfn=(2) work\ncalls=1 0x40 9\n");
    refused("cut.callgrind", &text, 8, &["ends after the calls= line", "source position"]);
}

#[test]
fn cost_line_before_any_function() {
    let text = format!("{HEAD}fl=(1) app.c\n0x10 3 5\nfn=(1) main\n0x11 3 5\n");
    refused("callgrind.out.nofn", &text, 6, &["cost line before any fn= line", "expected fn=NAME"]);
}

#[test]
fn malformed_numbers() {
    let text = format!("{HEAD}fl=(1) app.c\nfn=(1) main\n0x10 3 5\n+4 * 12x\n");
    refused("callgrind.out.num", &text, 8, &["cost of Ir", "expected a number", "'12x'"]);
    let text = format!("{HEAD}fl=(1) app.c\nfn=(1) main\n0x1g 3 5\n");
    refused("callgrind.out.pos", &text, 7, &["expected a position", "'0x1g'"]);
    let text = format!("{HEAD}fl=(1) app.c\nfn=(1) main\n0x10 3 5\ncfn=(2) f\ncalls=x 0x40 9\n* * 1\n");
    refused("callgrind.out.count", &text, 9, &["calls= count", "expected a number"]);
    let text = format!("{HEAD}fl=(1) app.c\nfn=(1) main\n0x10 3 99999999999999999999\n");
    refused("callgrind.out.big", &text, 7, &["does not fit in 64 bits"]);
}

#[test]
fn other_breakage_is_located_too() {
    // A relative position below zero, too many costs, a cost line before events:, garbage.
    let text = format!("{HEAD}fl=(1) app.c\nfn=(1) main\n0x10 3 5\n-17 * 1\n");
    refused("callgrind.out.neg", &text, 8, &["'-17' is below zero"]);
    let text = format!("{HEAD}fl=(1) app.c\nfn=(1) main\n0x10 3 5 6\n");
    refused("callgrind.out.many", &text, 7, &["more than 1 cost", "(Ir)"]);
    refused(
        "callgrind.out.noevents",
        "# callgrind format\nfn=main\n3 5\n",
        3,
        &["before the events: header"],
    );
    let text = format!("{HEAD}fl=(1) app.c\nfn=(1) main\n%%% what\n");
    refused("callgrind.out.junk", &text, 7, &["expected a header line"]);
    let text = format!("{HEAD}thread: 99999999\n");
    refused("callgrind.out.threads", &text, 5, &["thread: 99999999 is too large"]);
}

/// The largest address and line number mean "unknown" in the model's call sites: a call or
/// jump that states them is refused, not taken as unknown.
#[test]
fn call_positions_past_what_a_site_holds() {
    let call = |target: &str, source: &str| {
        format!("{HEAD}fl=(1) app.c\nfn=(1) main\n0x10 3 5\ncfn=(2) f\ncalls=1 {target}\n{source} 7\n")
    };
    let text = call("0xffffffffffffffff 9", "0x10 3");
    refused(
        "callgrind.out.addr",
        &text,
        10,
        &["address 0xffffffffffffffff of a call", "at most 0xfffffffffffffffe"],
    );
    let text = call("0x40 4294967295", "0x10 3");
    refused("callgrind.out.line", &text, 10, &["line number 4294967295 of a call", "at most 4294967293"]);
    let text = call("0x40 9", "0x10 4294967295");
    refused("callgrind.out.srcline", &text, 10, &["line number 4294967295 of a call"]);
    // The same line as a cost line is no call site: it is read as it always was.
    let text = format!("{HEAD}fl=(1) app.c\nfn=(1) main\n0x10 4294967295 5\n");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("callgrind.out.costline");
    std::fs::write(&input, text).unwrap();
    let o = common::run(&["info", input.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
}
