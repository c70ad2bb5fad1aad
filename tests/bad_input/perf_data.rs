//! perf.data: a damaged file is refused with the byte offset of the fault (exit 2), a record
//! of a type perf does not define is skipped with a warning, and nothing panics.

use cfghub::error::{Findings, Place};
use cfghub::formats::perf::data;

use crate::common;

fn recording() -> Vec<u8> {
    std::fs::read(common::fixture("perf-data/hot-small.perf.data")).unwrap()
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn byte_offset(bytes: &[u8]) -> Option<u64> {
    match data::read(bytes, &mut Findings::default()) {
        Ok(_) => None,
        Err(e) => match e.place.clone() {
            Some(Place::Byte(at)) => Some(at),
            other => panic!("no byte offset in {e} ({other:?})"),
        },
    }
}

#[test]
fn the_fixture_reads() {
    let mut findings = Findings::default();
    let profile = data::read(&recording(), &mut findings).unwrap();
    assert_eq!(profile.events[0].name, "cpu-clock:u");
    assert!(!profile.processes[0].stacks.is_empty());
}

#[test]
fn a_truncated_file_is_refused_at_its_end_never_a_panic() {
    let bytes = recording();
    let data_start = u64_at(&bytes, 40) as usize;
    let data_end = data_start + u64_at(&bytes, 48) as usize;
    // Cut inside the header, the attributes, the records and the features.
    for cut in (0..bytes.len()).step_by(37).chain([8, 16, 103, data_start + 3, data_end - 1]) {
        let at = byte_offset(&bytes[..cut]);
        assert!(at.is_some_and(|a| a <= cut as u64 || a < 104), "cut at {cut}: {at:?}");
    }
}

/// A `perf record` killed before it finished: its data size 0, no features, a record cut off
/// at the end. perf 6.1 reads nothing of it; cfghub reads its records to the last whole one,
/// with a warning, and names the event from its attribute as perf would.
#[test]
fn a_recording_that_did_not_end_properly_is_read_to_its_last_whole_record() {
    let bytes = recording();
    let data_start = u64_at(&bytes, 40) as usize;
    let data_end = data_start + u64_at(&bytes, 48) as usize;
    let mut killed = bytes[..data_end].to_vec();
    killed[48..56].fill(0);
    killed.extend_from_slice(&bytes[data_start..data_start + 12]);
    let mut findings = Findings::default();
    let profile = data::read(&killed, &mut findings).unwrap();
    assert!(findings.warnings().any(|w| w.message.contains("did not end properly")), "{findings:?}");
    let whole = data::read(&bytes, &mut Findings::default()).unwrap();
    assert_eq!(profile.events[0].name, "cpu-clock:u");
    // The same samples on the same call chains; without the build-id table the program's
    // frames are named by its file alone (`[hot-small]`) unless the binary is still there.
    let stacks = |p: &cfghub::Profile| -> Vec<(String, usize, Vec<i128>)> {
        let process = &p.processes[0];
        let thread = |s: &cfghub::ir::ListedStack| p.frames.get(s.frames[0]).to_string();
        process.stacks.listed().iter().map(|s| (thread(s), s.frames.len(), s.values.to_vec())).collect()
    };
    assert_eq!(stacks(&profile), stacks(&whole));
}

#[test]
fn a_header_whose_sections_run_past_the_end_names_the_field() {
    let mut bytes = recording();
    bytes[48..56].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert_eq!(byte_offset(&bytes), Some(40));
    let mut bytes = recording();
    bytes[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(byte_offset(&bytes), Some(24));
}

/// A header whose attribute size is 0, with no attributes and no event descriptions: the
/// parser would divide the empty attribute section by it (a finding of the fuzzer).
#[test]
fn an_attribute_size_under_64_bytes_is_refused_at_its_field() {
    let bytes =
        std::fs::read(common::fixture("fuzz/perf-data/crash-1a3d2cce24e4106bf715a9c87c423909ae96869f"))
            .unwrap();
    assert_eq!(u64_at(&bytes, 16), 0);
    assert_eq!(byte_offset(&bytes), Some(16));
    let mut bytes = recording();
    bytes[16..24].copy_from_slice(&40u64.to_le_bytes());
    assert_eq!(byte_offset(&bytes), Some(16));
}

#[test]
fn a_record_of_unknown_type_is_skipped_with_a_warning() {
    let mut bytes = recording();
    let first = u64_at(&bytes, 40) as usize;
    bytes[first..first + 4].copy_from_slice(&48u32.to_le_bytes());
    let mut findings = Findings::default();
    let profile = data::read(&bytes, &mut findings).unwrap();
    assert!(!profile.processes.is_empty());
    let warned = findings.warnings().any(|w| w.message.contains("unknown type 48"));
    assert!(warned, "{findings:?}");
}

#[test]
fn a_file_of_the_other_byte_order_is_read_as_such_or_refused_with_an_offset() {
    // The magic of a big-endian file on little-endian contents: every size reads as nonsense.
    let mut bytes = recording();
    bytes[..8].copy_from_slice(b"2ELIFREP");
    assert!(byte_offset(&bytes).is_some());
}

#[test]
fn the_command_line_exits_2_with_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = recording();
    std::fs::write(dir.path().join("perf.data"), &bytes[..bytes.len() / 2]).unwrap();
    let o = common::run_limited(dir.path(), 60, &["convert", "perf.data", "-o", "out.folded"]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("perf.data") && err.contains("byte"), "{err}");
    assert!(!dir.path().join("out.folded").exists());
}

/// A copy of `bytes` with `flips` bytes in `range` set to values of the xorshift `state`.
fn flipped(bytes: &[u8], range: std::ops::Range<usize>, flips: usize, state: &mut u64) -> Vec<u8> {
    let mut b = bytes.to_vec();
    for _ in 0..flips {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let at = range.start + (*state % range.len() as u64) as usize;
        b[at] = (*state >> 32) as u8;
    }
    b
}

#[test]
fn flipped_bytes_never_panic() {
    let bytes = recording();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..40 {
        let b = flipped(&bytes, 0..bytes.len(), 4, &mut state);
        let _ = data::read(&b, &mut Findings::default());
    }
}

/// A `--call-graph dwarf` recording whose records are damaged (registers, stack copies, their
/// sizes): each read ends in a model or an error, never a panic, and a stack the damage cuts
/// short is counted in the one warning that says how many were.
#[test]
fn damaged_user_stacks_never_panic() {
    let bytes = std::fs::read(common::fixture("perf-data/interp-dwarf.perf.data")).unwrap();
    let mut findings = Findings::default();
    let profile = data::read(&bytes, &mut findings).unwrap();
    assert!(!profile.processes.is_empty());
    let data_start = u64_at(&bytes, 40) as usize;
    let data_size = u64_at(&bytes, 48) as usize;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    // Each read names the C library from its DWARF: a dozen reads keep the test near ten
    // seconds in a debug build.
    for _ in 0..12 {
        let b = flipped(&bytes, data_start..data_start + data_size, 16, &mut state);
        let mut findings = Findings::default();
        if data::read(&b, &mut findings).is_ok() {
            for w in findings.warnings().filter(|w| w.message.contains("user stack")) {
                assert!(w.message.contains("were unwound only in part"), "{}", w.message);
            }
        }
    }
}

/// The offset of feature section `feature` of the small recording (file layout).
fn feature_offset(bytes: &[u8], feature: usize) -> usize {
    let data_end = (u64_at(bytes, 40) + u64_at(bytes, 48)) as usize;
    let set: Vec<usize> = (0..256).filter(|&f| u64_at(bytes, 72 + f / 64 * 8) >> (f % 64) & 1 == 1).collect();
    let k = set.iter().position(|&f| f == feature).expect("the feature is set");
    u64_at(bytes, data_end + 16 * k) as usize
}

/// An event-description count read in the other byte order (16 M where the file says 1 the
/// other way) made the parser reserve 2.95 GB and abort: the count is checked in the file's
/// order against the section first. A header size of 2^64-1 is refused at its field.
#[test]
fn counts_and_sizes_of_the_header_are_refused_at_their_field() {
    let mut bytes = recording();
    let desc = feature_offset(&bytes, 12);
    bytes[desc..desc + 4].copy_from_slice(&[0, 0, 0, 1]);
    assert_eq!(byte_offset(&bytes), Some(desc as u64));
    let mut bytes = recording();
    bytes[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(byte_offset(&bytes), Some(8));
}
