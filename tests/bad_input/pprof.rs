//! pprof profile.proto: bad input is an error that names the byte and the message path,
//! never a panic; the command line exits 2 and writes nothing.

use cfghub::converters::pprof::FORMAT as Pprof;
use cfghub::error::Location;
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
    assert_eq!(p.processes[0].stacks[0].values, [5.0]);
    assert_eq!(p.frames.get(p.processes[0].stacks[0].frames[0]), "main");
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
        assert!(matches!(err.location, Some(Location::Byte(_))), "{what}: {err}");
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
