//! pprof profile.proto: bad input is an error that names the byte and the message path,
//! never a panic; the command line exits 2 and writes nothing.

use cfghub::error::Place;
use cfghub::formats::pprof::FORMAT as Pprof;
use proptest::prelude::*;

use crate::common;
use crate::common::protobuf::{field, uint, varint};

/// A valid profile: one sample type `samples/count`, a function `main` at location 1, and
/// samples given as (location ids, values); `extra` is appended to the top-level message.
fn profile(samples: &[(&[u64], &[u64])], strings: &[&str], extra: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    let mut vt = Vec::new();
    uint(&mut vt, 1, 1);
    uint(&mut vt, 2, 2);
    field(&mut p, 1, &vt);
    for (locs, values) in samples {
        let mut s = Vec::new();
        let mut packed = Vec::new();
        locs.iter().for_each(|&l| varint(&mut packed, l));
        field(&mut s, 1, &packed);
        packed.clear();
        values.iter().for_each(|&v| varint(&mut packed, v));
        field(&mut s, 2, &packed);
        field(&mut p, 2, &s);
    }
    let mut line = Vec::new();
    uint(&mut line, 1, 1);
    let mut loc = Vec::new();
    uint(&mut loc, 1, 1);
    field(&mut loc, 4, &line);
    field(&mut p, 4, &loc);
    let mut f = Vec::new();
    uint(&mut f, 1, 1);
    uint(&mut f, 2, 3);
    field(&mut p, 5, &f);
    for s in strings {
        field(&mut p, 6, s.as_bytes());
    }
    p.extend_from_slice(extra);
    p
}

const STRINGS: &[&str] = &["", "samples", "count", "main"];

fn read(bytes: &[u8]) -> cfghub::Result<cfghub::Profile> {
    cfghub::convert::read_with(&Pprof, &mut &bytes[..]).map(|r| r.0)
}

#[test]
fn the_fixture_of_these_tests_is_valid() {
    let p = read(&profile(&[(&[1], &[5])], STRINGS, &[])).unwrap();
    let stacks = p.processes[0].stacks.listed();
    assert_eq!(stacks[0].values, [5]);
    assert_eq!(p.frames.get(stacks[0].frames[0]), "main");
}

#[test]
fn errors_say_what_and_where() {
    let good = profile(&[(&[1], &[5])], STRINGS, &[]);
    let mut bad_location = Vec::new();
    let mut loc = Vec::new();
    uint(&mut loc, 1, 2);
    let mut line = Vec::new();
    uint(&mut line, 1, 9);
    field(&mut loc, 4, &line);
    field(&mut bad_location, 4, &loc);
    let mut zero_id = Vec::new();
    let mut f = Vec::new();
    uint(&mut f, 2, 3);
    field(&mut zero_id, 5, &f);
    let mut duplicate = Vec::new();
    let mut f = Vec::new();
    uint(&mut f, 1, 1);
    field(&mut duplicate, 5, &f);
    let mut bad_string = Vec::new();
    let mut f = Vec::new();
    uint(&mut f, 1, 7);
    uint(&mut f, 2, 99);
    field(&mut bad_string, 5, &f);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("text", b"this is not a protocol buffer\n".to_vec(), "Profile: not a protocol-buffer field key"),
        ("truncated", good[..good.len() - 3].to_vec(), "truncated"),
        (
            "dangling location",
            profile(&[(&[1, 4], &[5])], STRINGS, &[]),
            "sample[0].location_id: location id 4",
        ),
        ("too few values", profile(&[(&[1], &[5]), (&[1], &[])], STRINGS, &[]), "sample[1]: 0 value(s)"),
        ("dangling function", profile(&[], STRINGS, &bad_location), "location[1].line[0]: function id 9"),
        ("id 0", profile(&[], STRINGS, &zero_id), "function[1]: id 0"),
        ("duplicate id", profile(&[], STRINGS, &duplicate), "function[1]: id 1 used twice"),
        ("string index", profile(&[], STRINGS, &bad_string), "function[1].name: string index 99"),
        ("string_table[0]", profile(&[], &["x", "samples", "count", "main"], &[]), "string_table[0]"),
        ("no strings", profile(&[], &[], &[]), "no string table"),
    ];
    for (what, bytes, expected) in cases {
        let err = read(&bytes).unwrap_err();
        assert!(err.message.contains(expected), "{what}: {err}");
        assert!(matches!(err.place, Some(Place::Byte(_))), "{what}: {err}");
    }
}

#[test]
fn the_command_line_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.pb.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &profile(&[(&[1, 4], &[5])], STRINGS, &[])).unwrap();
    std::fs::write(&input, gz.finish().unwrap()).unwrap();
    let output = dir.path().join("out.folded");
    let o = common::run(&["convert", input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(err.contains("bad.pb.gz") && err.contains("byte ") && err.contains("location id 4"), "{err}");
    assert!(!output.exists());
}

proptest! {
    /// Any damage (a cut, a flipped byte) is an error or a profile, never a panic.
    #[test]
    fn damaged_input_never_panics(cut in 0usize..200, at in 0usize..200, byte in any::<u8>()) {
        let mut bytes = profile(&[(&[1], &[5]), (&[1, 1], &[7])], STRINGS, &[]);
        let at = at % bytes.len();
        bytes[at] = byte;
        bytes.truncate(cut.min(bytes.len()));
        let _ = read(&bytes);
    }
}

#[test]
fn legacy_profiles_are_named_as_such_with_the_command_that_converts_them() {
    let dir = tempfile::tempdir().unwrap();
    // Go's and gperftools' text profiles, and the binary CPU profile (words 0, 3, 0, period, 0).
    let mut binary = Vec::new();
    for w in [0u64, 3, 0, 10000, 0, 1, 1, 0x401000] {
        binary.extend_from_slice(&w.to_le_bytes());
    }
    let inputs: [(&str, Vec<u8>); 4] = [
        (
            "heap.pb.gz",
            b"heap profile: 1: 2048 [3: 6144] @ heap/1048576\n1: 2048 [3: 6144] @ 0x401000\n".to_vec(),
        ),
        ("goroutine.pprof", b"goroutine profile: total 4\n4 @ 0x43a1c5 0x40a6e2\n".to_vec()),
        ("mutex.pb", b"--- mutex:\ncycles/second=2000000000\nsampling period=1\n".to_vec()),
        ("cpu.pb", binary),
    ];
    for (name, bytes) in inputs {
        let input = dir.path().join(name);
        std::fs::write(&input, &bytes).unwrap();
        let output = dir.path().join("out.folded");
        let o = common::run(&["convert", input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", common::stderr(&o));
        let e = common::stderr(&o);
        assert!(e.contains("legacy") && e.contains("go tool pprof -proto"), "{name}: {e}");
        assert!(!output.exists(), "{name}");
    }
    let e = read(b"heap profile: 1: 2048 [3: 6144] @ heap/1048576\n").unwrap_err();
    assert_eq!(e.place, Some(Place::Byte(0)), "{e}");
}
