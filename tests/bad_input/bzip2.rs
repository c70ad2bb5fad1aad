//! Damaged bzip2 input: a flipped bit is exit 2 with the byte offset of the block it is in, a
//! cut file is exit 2 saying it is truncated; no output file is left behind.

use crate::common;
use std::path::Path;

const BLOCK_MAGIC: u64 = 0x3141_5926_5359;

/// The bit offsets of every block magic in `bytes`.
fn block_starts(bytes: &[u8]) -> Vec<u64> {
    let bit = |i: u64| (bytes[(i / 8) as usize] >> (7 - i % 8)) & 1;
    let total = bytes.len() as u64 * 8;
    let mut window = 0u64;
    let mut starts = Vec::new();
    for i in 0..total {
        window = ((window << 1) | u64::from(bit(i))) & ((1 << 48) - 1);
        if i >= 47 && window == BLOCK_MAGIC {
            starts.push(i - 47);
        }
    }
    starts
}

/// A DCFG of about 1.1 MB compressed by `bzip2 -1`: a dozen blocks.
fn compressed_dcfg(dir: &Path) -> Vec<u8> {
    let plain = common::synth_dcfg(dir);
    common::require("bzip2");
    let out = std::process::Command::new("bzip2").args(["-1", "-c"]).arg(&plain).output().unwrap();
    assert!(out.status.success());
    std::fs::remove_file(&plain).unwrap();
    out.stdout
}

/// Converts `content` and returns the error message after checking exit 2 and no leftovers.
fn refused(dir: &Path, content: &[u8]) -> String {
    let input = dir.join("in.dcfg.json.bz2");
    std::fs::write(&input, content).unwrap();
    let output = dir.join("out.dcfg.json");
    let o = common::run(&["convert", "-q", input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 1, "only the input may remain: {left:?}");
    err
}

#[test]
fn a_flipped_bit_names_the_block_it_is_in() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = compressed_dcfg(dir.path());
    let starts = block_starts(&bytes);
    assert!(starts.len() >= 8, "{} blocks", starts.len());
    for block in [0, starts.len() / 2, starts.len() - 1] {
        // A bit in the middle of the block's coded data, well past its magic and CRC.
        let end = starts.get(block + 1).copied().unwrap_or(bytes.len() as u64 * 8 - 120);
        let at = (starts[block] + end) / 2;
        let mut bad = bytes.clone();
        bad[(at / 8) as usize] ^= 0x80 >> (at % 8);
        let err = refused(dir.path(), &bad);
        let byte = starts[block] / 8;
        assert!(
            err.contains(&format!("byte {byte}:")) && err.contains("corrupt"),
            "block {block} at byte {byte}: {err}"
        );
    }
}

#[test]
fn a_cut_file_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = compressed_dcfg(dir.path());
    for cut in [bytes.len() / 2, bytes.len() - 3] {
        let err = refused(dir.path(), &bytes[..cut]);
        assert!(err.contains("truncated"), "cut at {cut}: {err}");
    }
}
