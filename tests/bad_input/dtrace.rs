//! DTrace aggregations: input inferno's collapser cannot take (bytes that are not UTF-8 or
//! several bytes long near a Rust hash, text without a stack record, a record cut short) is
//! read or refused with a located message; inferno's panics never reach the user.

use crate::common;

/// Runs `convert --from dtrace` on `text` under the hostile-input limits.
fn convert(text: &[u8]) -> (std::process::Output, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.stacks"), text).unwrap();
    let o = common::run_limited(
        dir.path(),
        60,
        &["convert", "--from", "dtrace", "in.stacks", "-o", "out.folded"],
    );
    let err = common::assert_contained(&o, &String::from_utf8_lossy(text));
    (o, err, dir)
}

#[test]
fn bytes_beyond_ascii_next_to_a_rust_hash_are_read_not_a_panic() {
    // inferno slices the last 17 bytes of a `::` symbol to look for a Rust hash; a character of
    // several bytes (or an invalid byte, shown as U+FFFD) across that cut made it panic.
    for (frame, leaf) in [
        (&b"app`a::x\xc3\xa9abcdefghijklmnop"[..], &b"app`a::x\xc3\xa9abcdefghijklmnop"[..]),
        // A byte that is not UTF-8: read as U+FFFD, with a warning, as in folded stacks.
        (b"app`a::x\xffabcdefghijklmnop", b"app`a::x\xef\xbf\xbdabcdefghijklmnop"),
        // A Rust hash after a character of three bytes: removed, as from any Rust symbol.
        (b"app`\xe6\x97\xa5::h0123456789abcdef", b"app`\xe6\x97\xa5"),
    ] {
        let text = [&b"\n  "[..], frame, b"\n  app`main\n  3\n"].concat();
        let (o, err, dir) = convert(&text);
        assert_eq!(o.status.code(), Some(0), "{err}");
        let out = std::fs::read(dir.path().join("out.folded")).unwrap();
        let expected = [&b"app`main;"[..], leaf, b" 3\n"].concat();
        assert!(out.ends_with(&expected), "{}", String::from_utf8_lossy(&out));
    }
}

#[test]
fn input_without_a_stack_record_is_an_error_but_a_header_alone_is_an_empty_aggregation() {
    for text in [&b"This is not a profile.\nIt has words.\n"[..], b"\0\0\0\0\n\0\n", b"   \n\n"] {
        let (o, err, dir) = convert(text);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("no stack record"), "{err}");
        assert!(!dir.path().join("out.folded").exists());
    }
    let header =
        b"CPU     ID                    FUNCTION:NAME\n  8  35077                        :tick-60s\n";
    let (o, err, _) = convert(header);
    assert_eq!(o.status.code(), Some(0), "DTrace prints the header alone for an empty aggregation: {err}");
}

#[test]
fn a_record_cut_short_names_the_line_where_it_starts() {
    let text = b"\n  app`f\n  app`main\n  12\n\n  app`g\n  app`main\n";
    let (o, err, _) = convert(text);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("in.stacks:6:"), "the cut record starts on line 6: {err}");
    assert!(err.contains("ends in the middle of a stack"), "{err}");
}

#[test]
fn a_count_with_no_frames_before_it_is_refused_at_its_line() {
    // What the fuzzer found first: inferno's collapser subtracted 1 from an empty stack's length.
    for (text, line) in [(&b"\n4\n"[..], 2), (b"\n  app`f\n  3\n\n\n17\n", 6), (b"\r\n1\n006\n", 2)] {
        let (o, err, _) = convert(text);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("in.stacks:{line}:")) && err.contains("with no frames before it"),
            "{err}"
        );
    }
}
