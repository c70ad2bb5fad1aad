//! Java Flight Recorder: a truncated chunk, a declared size past the file, offsets outside
//! their chunk and a chain of constant pools that goes forward (round in a cycle) are refused
//! with the byte offset of the fault (exit 2), never a panic, and nothing is allocated from
//! what a header or count declares. References to constants no pool holds are read as null
//! with a warning, as the JDK's `jfr` reads them.

use cfghub::error::{Findings, Place};
use cfghub::formats::jfr;

use crate::common;

fn recording() -> Vec<u8> {
    std::fs::read(common::fixture("jfr/burn.jfr")).unwrap()
}

fn byte_offset(bytes: &[u8]) -> Option<u64> {
    match jfr::read_bytes(bytes, &mut Findings::default()) {
        Ok(_) => None,
        Err(e) => match e.place.clone() {
            Some(Place::Byte(at)) => Some(at),
            other => panic!("no byte offset in {e} ({other:?})"),
        },
    }
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// An unsigned LEB128 integer at `at` (nine bytes at most), and where the next value starts.
fn leb128(b: &[u8], mut at: usize) -> (u64, usize) {
    let mut v = 0u64;
    for i in 0..9 {
        let byte = b[at];
        at += 1;
        if i == 8 {
            return (v | (u64::from(byte) << 56), at);
        }
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            break;
        }
    }
    (v, at)
}

#[test]
fn the_fixture_reads_with_its_one_reference_to_an_ended_thread() {
    let mut findings = Findings::default();
    let profile = jfr::read_bytes(&recording(), &mut findings).unwrap();
    let events: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(events, ["cpu", "native", "allocation", "tlab", "lock"]);
    // The recording reads without a warning: what the JDK reads as null is told in a note.
    assert_eq!(findings.warnings().count(), 0);
    let notes: Vec<&str> = findings.details().map(|w| w.message.as_str()).collect();
    assert!(notes.contains(&"jfr: 1 reference(s) to constants no pool of their chunk holds (threads that ended, as a rule) read as null, as the JDK's jfr tool reads them"), "{notes:?}");
}

#[test]
fn a_truncated_chunk_is_refused_at_a_byte_it_holds_never_a_panic() {
    let bytes = recording();
    for cut in (1..bytes.len()).step_by(997).chain([3, 8, 20, 67, 68, bytes.len() - 1]) {
        let at = byte_offset(&bytes[..cut]);
        assert!(at.is_some_and(|a| a <= cut as u64), "cut at {cut}: {at:?}");
    }
    // The header's size names more than the file holds: the size field is the place.
    assert_eq!(byte_offset(&bytes[..bytes.len() / 2]), Some(8));
}

#[test]
fn a_huge_declared_size_or_offset_is_refused_at_its_field() {
    let mut bytes = recording();
    bytes[8..16].copy_from_slice(&i64::MAX.to_be_bytes());
    assert_eq!(byte_offset(&bytes), Some(8));
    let mut bytes = recording();
    bytes[16..24].copy_from_slice(&(1i64 << 40).to_be_bytes());
    assert_eq!(byte_offset(&bytes), Some(16));
    let mut bytes = recording();
    bytes[24..32].copy_from_slice(&(-5i64).to_be_bytes());
    assert_eq!(byte_offset(&bytes), Some(24));
}

#[test]
fn a_chain_of_constant_pools_that_goes_forward_is_refused_at_its_delta() {
    let mut bytes = recording();
    let last = i64_at(&bytes, 16) as usize;
    // size, type 1, start time, duration, then the delta to the checkpoint before.
    let (_, at) = leb128(&bytes, last);
    let (kind, at) = leb128(&bytes, at);
    assert_eq!(kind, 1);
    let (_, at) = leb128(&bytes, at);
    let (_, delta_at) = leb128(&bytes, at);
    let (delta, end) = leb128(&bytes, delta_at);
    assert!((delta as i64) < 0 && end - delta_at == 9, "{delta}");
    // The same nine bytes saying +1: the next checkpoint would be inside this one.
    bytes[delta_at..end].copy_from_slice(&[0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
    assert_eq!(byte_offset(&bytes), Some(delta_at as u64));
}

#[test]
fn the_command_line_exits_2_naming_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = recording();
    bytes[8..16].copy_from_slice(&i64::MAX.to_be_bytes());
    std::fs::write(dir.path().join("huge.jfr"), &bytes).unwrap();
    std::fs::write(dir.path().join("cut.jfr"), &recording()[..150_000]).unwrap();
    for name in ["huge.jfr", "cut.jfr"] {
        let o = common::run_limited(dir.path(), 20, &["convert", name, "-o", "out.folded"]);
        let err = common::assert_contained(&o, name);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains("byte 8") && err.contains("truncated"), "{name}: {err}");
        assert!(!dir.path().join("out.folded").exists());
    }
}
