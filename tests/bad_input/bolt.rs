//! BOLT profiles: a line of the wrong shape, a bad number, a function the binary lacks or an
//! offset past a function's end is exit 2 with the line and column, and no output file.

use crate::common;

/// Converts `text` (given the name `in.NAME`) to fdata, with `extra` arguments; returns the
/// run, its stderr and the folder.
fn convert(name: &str, text: &str, extra: &[&str]) -> (std::process::Output, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let input = format!("in.{name}");
    std::fs::write(dir.path().join(&input), text).unwrap();
    let mut args = vec!["convert", input.as_str(), "-o", "out.fdata"];
    args.extend_from_slice(extra);
    let o = common::run_limited(dir.path(), 60, &args);
    let err = common::assert_contained(&o, text);
    (o, err, dir)
}

fn refused(name: &str, text: &str, extra: &[&str], line: u64, column: usize, what: &str) {
    let (o, err, dir) = convert(name, text, extra);
    assert_eq!(o.status.code(), Some(2), "{text:?}: {err}");
    assert!(err.contains(&format!("in.{name}:{line}:")), "{text:?}: no line {line}: {err}");
    assert!(err.contains(&format!("column {column}:")), "{text:?}: no column {column}: {err}");
    assert!(err.contains(what), "{text:?}: {err}");
    assert!(!dir.path().join("out.fdata").exists(), "no partial output");
}

#[test]
fn lines_of_the_wrong_shape_are_refused_where_they_are() {
    let good = "1 main 10 1 main 20 0 5\n";
    refused("fdata", &format!("{good}1 main 10 1 main 20 0\n"), &[], 2, 21, "expected IS_SYM NAME OFFSET");
    refused("fdata", &format!("{good}1 main 1x 1 main 20 0 5\n"), &[], 2, 8, "hex offset");
    refused("fdata", &format!("{good}7 main 10 1 main 20 0 5\n"), &[], 2, 1, "IS_SYM");
    refused("fdata", &format!("{good}1 main 10 1 main 20 0 many\n"), &[], 2, 23, "a count");
    refused("fdata", "no_lbr cycles\n1 main 10\n", &[], 2, 8, "IS_SYM NAME OFFSET COUNT");
    refused("pa", "B 401000 401010 5 0\nF 401010 40x 2\n", &["--from", "bolt-pa"], 2, 10, "HEXADDR");
    refused("pa", "B 401000 401010 5 0\nX 1 2 3\n", &["--from", "bolt-pa"], 2, 1, "record type");
    refused("pa", "B 401000 401010 5\n", &["--from", "bolt-pa"], 1, 17, "B FROM TO COUNT MISPREDS");
}

#[test]
fn names_the_binary_lacks_and_offsets_past_a_functions_end_are_refused() {
    // cfghub's own test binary has symbols: `main` is in it, the other name is not.
    let binary = env!("CARGO_BIN_EXE_cfghub");
    let with = ["--symbols", binary];
    refused(
        "fdata",
        "1 main 0 1 no_such_function_here 4 0 1\n",
        &with,
        1,
        12,
        "unknown symbol 'no_such_function_here'",
    );
    refused(
        "fdata",
        "1 main 0 1 main 4 0 1\n1 main ffffff 1 main 0 0 1\n",
        &with,
        2,
        8,
        "past the end of 'main'",
    );
    // Without the binary the same file is read: nothing says where functions end.
    let (o, err, _) = convert("fdata", "1 main 0 1 main 4 0 1\n1 main ffffff 1 main 0 0 1\n", &[]);
    assert_eq!(o.status.code(), Some(0), "{err}");
}

#[test]
fn profiles_without_addresses_are_refused_with_a_hint_to_record_them() {
    let (o, err, dir) = convert("folded", "main;run;classify 10\nmain;run 5\n", &[]);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no code addresses") && err.contains("--dump-instr=yes --collect-jumps=yes"),
        "{err}"
    );
    assert!(!dir.path().join("out.fdata").exists());
    for to in ["bolt-pa", "llvm-sample", "llvm-unsymbolized"] {
        let o = common::run_limited(dir.path(), 60, &["convert", "in.folded", "--to", to, "-o", "out.x"]);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{to}: {err}");
        assert!(err.contains("no code addresses") && err.contains("hint:"), "{to}: {err}");
    }
}

/// Bytes that are not UTF-8 are refused with their line and column, in fdata and in the
/// pre-aggregated form alike.
#[test]
fn bytes_that_are_not_utf8_are_refused_where_they_are() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, from, column) in [
        ("in.fdata", &b"1 main 10 1 main 20 0 5\n1 main 10 1 main 20 \xff 5\n"[..], "fdata", 21),
        ("in.pa", b"B 401000 401010 5 0\nB 4\xc3 401010 5 0\n", "bolt-pa", 4),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
        let o = common::run_limited(dir.path(), 60, &["convert", "--from", from, name, "-o", "out.fdata"]);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("{name}:2: column {column}: not UTF-8")), "{err}");
        assert!(!dir.path().join("out.fdata").exists());
    }
}

/// Counts of 2^64-1 add up without wrapping around: the instructions executed in blocks
/// stay at 2^64-1 (saturated), never 2^64-2.
#[test]
fn counts_at_the_top_of_64_bits_add_up_without_wrapping() {
    let dir = tempfile::tempdir().unwrap();
    let max = u64::MAX;
    let text = format!("1 main 10 1 main 20 0 {max}\n1 main 10 1 main 20 0 {max}\n");
    std::fs::write(dir.path().join("in.fdata"), text).unwrap();
    let o = common::run_limited(dir.path(), 60, &["info", "in.fdata"]);
    let out = common::stdout(&o);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(out.contains(&format!("(NUM_INSTRS x COUNT): {max}\n")), "{out}");
}
