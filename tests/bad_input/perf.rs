//! `perf script` output: input inferno's collapser cannot take is read or refused with a
//! located message; inferno's assertions and panics never reach the user.

use crate::common;

fn convert(text: &[u8]) -> (std::process::Output, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.perf.txt"), text).unwrap();
    let o = common::run_limited(
        dir.path(),
        60,
        &["convert", "--from", "perf", "in.perf.txt", "-o", "out.folded"],
    );
    let err = common::assert_contained(&o, &String::from_utf8_lossy(text));
    (o, err, dir)
}

#[test]
fn a_first_record_without_a_sample_header_is_refused_where_it_starts() {
    // Two lines: a comment-looking line inferno takes for a header, then a blank line. inferno's
    // collapser asserted that it had found the event name.
    for (text, line) in [(&b"  #x\n\n"[..], 1), (b"\n\n  #x\n\nprog 1 1.0: 1 cycles:\n\t1 f (m)\n\n", 3)] {
        let (o, err, _) = convert(text);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("in.perf.txt:{line}:")), "{err}");
    }
}

#[test]
fn bytes_beyond_ascii_in_symbols_are_read_not_a_panic() {
    for sym in [&b"a::x\xffabcdefghijklmnop"[..], b"a::x\xc3\xa9abcdefghijklmnop"] {
        let text = [&b"prog 1 1.0: 1 cycles:\n\t1 "[..], sym, b" (m)\n\t2 main (m)\n\n"].concat();
        let (o, err, dir) = convert(&text);
        assert_eq!(o.status.code(), Some(0), "{err}");
        let out = std::fs::read(dir.path().join("out.folded")).unwrap();
        assert!(out.starts_with(b"# events: cycles\nprog;main;"), "{}", String::from_utf8_lossy(&out));
    }
}
