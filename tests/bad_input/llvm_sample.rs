//! LLVM sample profiles: a cut line, a count past 64 bits (or counts adding up past it),
//! call sites nested past the limit, lines before any function and the binary forms are exit 2
//! with the line (or byte) and what was expected, and no output file.

use crate::common;

/// Converts `bytes` (as `in.prof`) to folded stacks; returns the run's stderr after checking
/// it is exit 2 with no output left behind.
fn refused(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.prof"), bytes).unwrap();
    let o = common::run_limited(dir.path(), 60, &["convert", "in.prof", "-o", "out.folded"]);
    let what = String::from_utf8_lossy(&bytes[..bytes.len().min(80)]).into_owned();
    let err = common::assert_contained(&o, &what);
    assert_eq!(o.status.code(), Some(2), "{what}: {err}");
    assert!(!dir.path().join("out.folded").exists(), "no partial output");
    err
}

fn refused_at(text: &str, line: u64, what: &str) {
    let err = refused(text.as_bytes());
    assert!(err.contains(&format!("in.prof:{line}:")), "{text:?}: no line {line}: {err}");
    assert!(err.contains(what), "{text:?}: {err}");
}

#[test]
fn cut_and_malformed_lines_are_refused_where_they_are() {
    let good = "main:30:1\n 1: 10\n";
    refused_at(&format!("{good} 2:"), 3, "expected 'NUM[.NUM]: NUM");
    refused_at(&format!("{good} 2: 5 callee"), 3, "expected 'NUM[.NUM]: NUM");
    refused_at(&format!("{good} 2: 5 "), 3, "expected 'NUM[.NUM]: NUM");
    refused_at(&format!("{good}other:12\n"), 3, "expected 'NAME:TOTAL:HEAD'");
    refused_at(&format!("{good} 70000: 5\n"), 3, "expected 'NUM[.NUM]: NUM");
    refused_at(&format!("{good} !CFGChecksum: x\n"), 3, "'!CFGChecksum: NUM'");
    refused_at(&format!("{good} !CFGChecksum: 7\n 3: 1\n"), 4, "follows the function's metadata");
    refused_at(" 1: 10\nmain:1:1\n", 1, "before any 'NAME:TOTAL:HEAD'");
}

#[test]
fn counts_past_64_bits_are_refused() {
    refused_at("main:30:1\n 1: 18446744073709551616\n", 2, "expected 'NUM[.NUM]: NUM");
    refused_at("main:18446744073709551616:1\n", 1, "expected 'NAME:TOTAL:HEAD'");
    let max = u64::MAX;
    refused_at(&format!("main:1:1\n 1: {max}\n 1: 1\n"), 3, "add up past");
    refused_at(&format!("main:{max}:1\nmain:1:1\n"), 2, "add up past");
    refused_at(&format!("main:1:1\n 1: 1 f:{max}\n 1: 1 f:1\n"), 3, "add up past");
}

#[test]
fn call_sites_nested_past_the_limit_are_refused() {
    let mut text = String::from("main:1:1\n");
    for depth in 1..=5000 {
        text.push_str(&" ".repeat(depth));
        text.push_str("1: f:1\n");
    }
    refused_at(&text, 1001, "nest past 1000");
}

#[test]
fn binary_sample_profiles_are_named_with_the_command_that_makes_the_text_form() {
    // `SPROF42` and the format byte as one ULEB128 number: extbinary (4), binary (0xff).
    let uleb = |format: u8| {
        let mut v = u64::from_be_bytes(*b"SPROF42\0") | u64::from(format);
        let mut out = Vec::new();
        while v >= 0x80 {
            out.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out.extend_from_slice(&[0; 32]);
        out
    };
    for (bytes, what) in
        [(uleb(4), "extbinary"), (uleb(0xff), "a binary sample profile"), (b"adcg\0\0\0\0".to_vec(), "gcov")]
    {
        let err = refused(&bytes);
        assert!(err.contains(what), "{what}: {err}");
        assert!(err.contains("llvm-profdata-19 merge --sample --text"), "{err}");
    }
}

/// A call target's name may hold `:` and blanks, so its end is looked for colon by colon: a
/// line of four million colons and no count is refused in time (the limit is 60 s), and a
/// line of many targets named alike is read in time too.
#[test]
fn long_lines_of_colons_or_targets_cost_their_length() {
    let mut text = String::from("main:30:1\n 1: 5 ");
    text.push_str(&"a:".repeat(2_000_000));
    text.push('\n');
    refused_at(&text, 2, "expected 'NUM[.NUM]: NUM");
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("main:30:1\n 1: 5");
    for i in 0..200_000 {
        text.push_str(&format!(" t{}:{i}", i % 1000));
    }
    text.push('\n');
    std::fs::write(dir.path().join("in.prof"), &text).unwrap();
    let o = common::run_limited(dir.path(), 60, &["convert", "in.prof", "-o", "out.prof"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
}
