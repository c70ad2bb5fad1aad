//! Hostile shapes made from a real file of every reader, so that a new reader is born checked:
//! every format the registry can read must have a sample here (the test fails until it does),
//! and each sample is cut, flipped, inflated from a bomb, fed through a FIFO and named as its
//! own output. Each run ends with exit 0 or 2 (never a panic, never killed by the limits), a
//! refused one says where, a failed one leaves nothing behind, and no input changes.
//!
//! Format-specific shapes (lying counts, quadratic orders, bombs inside the format's own
//! compression) stay with each format's tests in this folder; these are the ones every reader
//! shares.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use crate::hostile::{run_measured, LIMIT_S};

/// A real file of each reader (plain: a gzip-compressed one is unpacked first). A reader
/// missing here fails [`every_reader_has_a_sample`].
fn sample_of(format: &str) -> Option<&'static str> {
    Some(match format {
        "dcfg" => "dcfg/hello-world.dcfg.json",
        "dcfg-trace" => "dcfg-trace/small.trace.json",
        "callgrind" => "callgrind/callgrind.out.recursion-loops",
        "csi" => "csi/recursion-loops.debug_PT",
        "dcpi" => "dcpi/alpha-cycles.dcpi",
        "dcpicat" => "dcpi/alpha-cycles.dcpicat",
        "dtrace" => "dtrace/ustack.stacks",
        "firefox" => "firefox/burn.samply.json.gz",
        "perf" => "perf/two-processes.perf.txt",
        "perf-data" => "perf-data/hot-small.perf.data",
        "pprof" => "pprof/burn.cpu.pb.gz",
        "fdata" => "bolt/call_in_loop.fdata",
        "bolt-pa" => "bolt/call_in_loop.pa",
        "folded" => "folded/austin.folded",
        "cpuprofile" => "cpuprofile/small.cpuprofile",
        "chrome-trace" => "chrome-trace/nested.json",
        "jfr" => "jfr/burn.jfr",
        "llvm-sample" => "llvm-sample/inlined-calls.prof",
        _ => return None,
    })
}

/// Every format the registry reads from a file (folders, the tables, have their own tests).
fn file_readers() -> Vec<&'static str> {
    cfghub::formats::registry::formats()
        .iter()
        .filter(|f| f.reader.is_some() && f.folder.is_none())
        .map(|f| f.name)
        .collect()
}

/// The sample's bytes, unpacked when it is gzip-compressed.
fn sample_bytes(format: &str) -> Vec<u8> {
    let path = common::fixture(sample_of(format).expect("a sample"));
    let bytes = std::fs::read(&path).unwrap();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut plain).unwrap();
        plain
    } else {
        bytes
    }
}

/// Converts `in` (read as `format`) to folded stacks in `dir`: contained, and on failure
/// nothing left behind and the folder as it was.
fn convert_contained(dir: &Path, format: &str, what: &str) -> Output {
    let before = common::snapshot(dir);
    let o = common::run_limited(dir, LIMIT_S, &["convert", "-q", "--from", format, "in", "-o", "out.folded"]);
    let label = format!("{format}: {what}");
    common::assert_contained(&o, &label);
    let out = dir.join("out.folded");
    if o.status.code() == Some(0) {
        let _ = std::fs::remove_file(&out);
    }
    assert_eq!(common::snapshot(dir), before, "{label}: a run left files or changed its input");
    o
}

/// A deterministic stream of bytes.
fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

#[test]
fn every_reader_has_a_sample() {
    for format in file_readers() {
        assert!(
            sample_of(format).is_some(),
            "reader {format} has no sample in tests/bad_input/shapes.rs: add a real file of it"
        );
    }
}

/// Cut at 12 places, and 24 bytes changed one at a time.
#[test]
fn every_reader_contains_cut_and_flipped_files() {
    let dir = tempfile::tempdir().unwrap();
    for format in file_readers() {
        let bytes = sample_bytes(format);
        let mut next = xorshift(bytes.len() as u64);
        for k in 0..12 {
            let cut = bytes.len() * k / 12 + (next() as usize % 7).min(bytes.len() / 12);
            std::fs::write(dir.path().join("in"), &bytes[..cut.min(bytes.len())]).unwrap();
            convert_contained(dir.path(), format, &format!("cut at byte {cut}"));
        }
        for _ in 0..24 {
            let mut flipped = bytes.clone();
            let at = next() as usize % flipped.len().max(1);
            if let Some(b) = flipped.get_mut(at) {
                *b ^= 1 << (next() % 8);
            }
            std::fs::write(dir.path().join("in"), &flipped).unwrap();
            convert_contained(dir.path(), format, &format!("a bit of byte {at} flipped"));
        }
    }
}

/// The sample followed by 64 MB of zeros, gzip-compressed (about 64 KB): inflated as it is
/// read, in bounded memory.
#[test]
fn every_reader_contains_a_gzip_bomb() {
    let dir = tempfile::tempdir().unwrap();
    for format in file_readers() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&sample_bytes(format)).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..64 {
            gz.write_all(&zeros).unwrap();
        }
        std::fs::write(dir.path().join("in"), gz.finish().unwrap()).unwrap();
        let (o, kib) =
            run_measured(dir.path(), &["convert", "-q", "--from", format, "in", "-o", "out.folded"]);
        common::assert_contained(&o, &format!("{format}: a gzip bomb"));
        assert!(kib < 1_000_000, "{format}: a gzip bomb took {kib} KiB");
        let _ = std::fs::remove_file(dir.path().join("out.folded"));
    }
}

/// A FIFO fed the sample reads as the file does (a pipe, a process substitution).
#[test]
fn every_reader_reads_a_fifo_as_the_file() {
    let dir = tempfile::tempdir().unwrap();
    for format in file_readers() {
        let bytes = sample_bytes(format);
        std::fs::write(dir.path().join("file"), &bytes).unwrap();
        let from_file = common::run_limited(
            dir.path(),
            LIMIT_S,
            &["convert", "-q", "--from", format, "file", "-o", "out.file.folded"],
        );
        let fifo: PathBuf = dir.path().join("fifo");
        let _ = std::fs::remove_file(&fifo);
        assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let feeder = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                // The reader may refuse before reading it all: a closed pipe is not an error here.
                if let Ok(mut w) = std::fs::OpenOptions::new().write(true).open(&fifo) {
                    let _ = w.write_all(&bytes);
                }
            })
        };
        let from_fifo = common::run_limited(
            dir.path(),
            LIMIT_S,
            &["convert", "-q", "--from", format, "fifo", "-o", "out.fifo.folded"],
        );
        // Unblock the feeder if the reader never opened the FIFO.
        let _ = std::fs::OpenOptions::new().read(true).custom_flags_nonblocking(&fifo);
        feeder.join().unwrap();
        common::assert_contained(&from_fifo, &format!("{format}: a FIFO"));
        assert_eq!(
            from_fifo.status.code(),
            from_file.status.code(),
            "{format}: {}",
            common::stderr(&from_fifo)
        );
        if from_file.status.success() {
            assert_eq!(
                std::fs::read(dir.path().join("out.fifo.folded")).unwrap(),
                std::fs::read(dir.path().join("out.file.folded")).unwrap(),
                "{format}: the FIFO and the file differ"
            );
        }
        for f in ["out.file.folded", "out.fifo.folded"] {
            let _ = std::fs::remove_file(dir.path().join(f));
        }
    }
}

/// An output that names the input, by its path or through a link, is refused before anything
/// is written.
#[test]
fn every_reader_refuses_to_write_over_its_input() {
    let dir = tempfile::tempdir().unwrap();
    for format in file_readers() {
        std::fs::write(dir.path().join("in"), sample_bytes(format)).unwrap();
        let _ = std::fs::remove_file(dir.path().join("link"));
        std::os::unix::fs::symlink("in", dir.path().join("link")).unwrap();
        let before = common::snapshot(dir.path());
        for output in ["in", "link"] {
            let o = common::run_limited(
                dir.path(),
                LIMIT_S,
                &["convert", "-q", "--from", format, "in", "--to", "folded", "-o", output],
            );
            let err = common::stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{format} -o {output}: {err}");
            assert!(err.contains("is also an input"), "{format} -o {output}: {err}");
            assert_eq!(common::snapshot(dir.path()), before, "{format} -o {output}: an input changed");
        }
    }
}

/// Opens a FIFO for reading without blocking, which lets a writer blocked on it go on.
trait NonBlocking {
    fn custom_flags_nonblocking(&mut self, path: &Path) -> std::io::Result<std::fs::File>;
}

impl NonBlocking for std::fs::OpenOptions {
    fn custom_flags_nonblocking(&mut self, path: &Path) -> std::io::Result<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc_nonblock()).open(path)
    }
}

/// `O_NONBLOCK` on Linux.
fn libc_nonblock() -> i32 {
    0o4000
}
