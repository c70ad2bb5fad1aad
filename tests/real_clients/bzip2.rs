//! bzip2 input: what cfghub decompresses is byte for byte what `bzip2 -dc` gives, for files
//! written by bzip2 at its smallest and largest block sizes, by lbzip2 and by pbzip2 (one
//! stream per block), for an empty file, a one-byte file and inputs of many blocks.

use crate::common;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

/// Text that compresses like a profile, different in every block: about 10:1 with bzip2.
fn varied(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(
            format!("[ {}, \"0x{:x}\", {}, {} ],\n", x % 5000, (x >> 8) % 65536, x >> 50, x % 7).as_bytes(),
        );
    }
    out.truncate(len);
    out
}

/// Runs `program args` with `input` on standard input; its standard output.
fn pipe(program: &str, args: &[&str], input: &Path) -> Vec<u8> {
    common::require(program);
    let o = Command::new(program)
        .args(args)
        .stdin(std::fs::File::open(input).unwrap())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(o.status.success(), "{program} {args:?} failed");
    o.stdout
}

/// What cfghub reads from `path`, decompressed.
fn cfghub_reads(path: &Path) -> Vec<u8> {
    let input = cfghub::io::Input::open(path.to_str().unwrap()).unwrap();
    let mut out = Vec::new();
    input.reader().read_to_end(&mut out).unwrap();
    out
}

/// Compresses `data` with each tool and compares cfghub's decompression with `bzip2 -dc`.
fn agree(data: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("data");
    std::fs::write(&plain, data).unwrap();
    let writers: [(&str, &[&str]); 6] = [
        ("bzip2", &["-1", "-c"]),
        ("bzip2", &["-9", "-c"]),
        ("lbzip2", &["-n", "2", "-c"]),
        ("lbzip2", &["-1", "-n", "2", "-c"]),
        ("pbzip2", &["-p2", "-c"]),
        ("pbzip2", &["-1", "-b1", "-p2", "-c"]),
    ];
    for (i, (program, args)) in writers.iter().enumerate() {
        let compressed = dir.path().join(format!("data{i}.bz2"));
        std::fs::write(&compressed, pipe(program, args, &plain)).unwrap();
        let reference = pipe("bzip2", &["-dc"], &compressed);
        assert_eq!(reference, data, "bzip2 -dc of {program} {args:?}");
        let ours = cfghub_reads(&compressed);
        assert!(
            ours == reference,
            "{program} {args:?}: {} bytes from cfghub, {} from bzip2 -dc",
            ours.len(),
            reference.len()
        );
    }
}

#[test]
fn an_empty_file() {
    agree(b"");
}

#[test]
fn a_one_byte_file() {
    agree(b"{");
}

#[test]
fn many_blocks_of_varied_data() {
    // 2.2 MB: 3 blocks at -9, 23 at -1; pbzip2 -b1 makes one stream of 100 kB per block.
    agree(&varied(2_200_000));
}

#[test]
fn long_runs_and_binary_bytes() {
    // Runs longer than bzip2's run-length limit, then bytes of every value.
    let mut data = vec![b'a'; 300_000];
    data.extend((0..1_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    data.extend(std::iter::repeat_n(0u8, 500_000));
    agree(&data);
}
