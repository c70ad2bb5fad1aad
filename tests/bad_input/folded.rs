//! Folded stacks, DTrace and perf: bad input is an error that names the line, never a panic.

use cfghub::error::{Findings, Place};
use cfghub::format::ReadOptions;
use cfghub::formats::{dtrace, folded::FORMAT as Folded, perf};
use proptest::prelude::*;

fn read_folded(text: &[u8]) -> cfghub::Result<cfghub::Profile> {
    cfghub::convert::read_with(&Folded, &mut &text[..]).map(|r| r.0)
}

#[test]
fn folded_errors_name_the_line() {
    for (text, line) in [
        (&b"a 1\nb\n"[..], 2),
        (b"a 1\nb 1 2\nc\n", 3),
        (b"a 1.2.3\n", 1),
        (b" 4\n", 1),
        (b"a 1 2\nb 3\n", 2),
        (b"a 1\n# events: x\n", 2),
    ] {
        let err = read_folded(text).unwrap_err();
        assert_eq!(err.place, Some(Place::Line(line)), "{}: {err}", String::from_utf8_lossy(text));
    }
}

#[test]
fn non_utf8_frames_are_read_with_a_warning() {
    let (p, findings) = cfghub::convert::read_with(&Folded, &mut &b"a;\xff\xfe 1\n"[..]).unwrap();
    assert_eq!(p.processes[0].stacks.len(), 1);
    assert!(findings.warnings().count() == 1);
}

#[test]
fn truncated_dtrace_and_perf_are_errors() {
    let text = b"\n\n  app`main+0x1\n  app`start\n";
    let err = dtrace::read(&mut &text[..], &ReadOptions::default(), &mut Findings::default()).unwrap_err();
    assert!(err.to_string().contains("DTrace"), "{err}");
    let _ = perf::read(&mut &b"\xff\xfe garbage\n\tzz\n"[..], &mut Findings::default());
}

proptest! {
    #[test]
    fn folded_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = read_folded(&bytes);
    }

    #[test]
    fn folded_like_text_never_panics(text in "([a-z; .#:]{0,12}( [0-9.]{0,4}){0,3}\n){0,8}") {
        let _ = read_folded(text.as_bytes());
    }

    #[test]
    fn dtrace_and_perf_never_panic(text in "([ \t]{0,3}[a-z`+0-9x:;()\\[\\]]{0,12}\n){0,12}") {
        let _ = dtrace::read(&mut text.as_bytes(), &ReadOptions::default(), &mut Findings::default());
        let _ = perf::read(&mut text.as_bytes(), &mut Findings::default());
    }
}
