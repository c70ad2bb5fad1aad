//! The block decoder against files written by the `bzip2` crate (libbz2's encoder): data of many
//! kinds and sizes at every block size level, several streams in one file, a randomised block
//! as bzip2 0.9 wrote them, and hand-built and damaged blocks that must be errors naming a byte.

use bzip2_parallel::{decoder, DecodeError};
use std::io::{self, Cursor, Read, Write};

fn compress(data: &[u8], level: u32) -> Vec<u8> {
    let mut w = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

fn decompress(bytes: &[u8], workers: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    decoder(Box::new(Cursor::new(bytes.to_vec())), workers).read_to_end(&mut out)?;
    Ok(out)
}

/// What libbz2 makes of `bytes`, for comparison.
fn libbz2(bytes: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    bzip2::read::MultiBzDecoder::new(bytes).read_to_end(&mut out)?;
    Ok(out)
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Random bytes, text-like lines, bytes from a small alphabet and runs: inputs that give long
/// and short Huffman codes, large and small move-to-front places and every zero-run length.
fn kinds(len: usize, seed: u64) -> Vec<(&'static str, Vec<u8>)> {
    let mut rng = Rng(seed | 1);
    let random = rng.bytes(len);
    let mut text = Vec::with_capacity(len + 40);
    while text.len() < len {
        let x = rng.next();
        writeln!(text, "{{\"addr\": \"0x{:x}\", \"count\": {}}},", x % 4096, (x >> 32) % 100).unwrap();
    }
    text.truncate(len);
    let small: Vec<u8> = (0..len).map(|_| b"ab"[(rng.next() % 2) as usize]).collect();
    let mut runs = Vec::with_capacity(len + 600);
    while runs.len() < len {
        let byte = rng.next() as u8;
        let n = [1, 3, 4, 5, 8, 255, 256, 259, 260, 300, 1000][(rng.next() % 11) as usize];
        runs.extend(std::iter::repeat_n(byte, n));
    }
    runs.truncate(len);
    vec![("random", random), ("text", text), ("two letters", small), ("runs", runs)]
}

#[test]
fn many_kinds_and_sizes_decode_to_themselves() {
    for len in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 50, 255, 256, 617, 618, 1000, 4099, 65_536] {
        for (kind, data) in kinds(len, len as u64) {
            let bytes = compress(&data, 9);
            assert_eq!(decompress(&bytes, 1).unwrap(), data, "{kind} of {len} bytes");
        }
    }
}

/// Each level's block size, crossed: a block full to the level's limit and the next one.
#[test]
fn every_block_size_level_decodes() {
    for level in 1..=9u32 {
        let len = level as usize * 100_000 + 12_345;
        // Random bytes fill a block with the most symbols; text, with the most runs undone.
        for (kind, data) in kinds(len, u64::from(level)).into_iter().take(2) {
            let bytes = compress(&data, level);
            assert_eq!(decompress(&bytes, 2).unwrap(), data, "{kind} at level {level}");
        }
    }
}

/// The initial run-length stage writes 4 equal bytes and a count of up to 251 more: runs of
/// every length near those edges, alone, between other bytes and repeated.
#[test]
fn runs_of_one_byte_at_the_run_length_edges() {
    let mut data = Vec::new();
    for n in (1..=12).chain(250..=262).chain([510, 511, 512, 1020, 5000, 70_000]) {
        data.extend(std::iter::repeat_n(b'x', n));
        data.push(b'y');
        data.extend(std::iter::repeat_n(b'z', n));
    }
    for level in [1, 9] {
        assert_eq!(decompress(&compress(&data, level), 1).unwrap(), data, "level {level}");
    }
    for n in [4, 5, 255, 256, 259, 260, 1_000_000, 2_000_000] {
        let run = vec![0u8; n];
        assert_eq!(decompress(&compress(&run, 1), 2).unwrap(), run, "a run of {n}");
    }
}

#[test]
fn several_streams_in_one_file() {
    let mut bytes = Vec::new();
    let mut expected = Vec::new();
    for (i, level) in [1u32, 9, 3, 5, 2].into_iter().enumerate() {
        let data = kinds(50_000 * i, i as u64).swap_remove(i % 4).1;
        bytes.extend(compress(&data, level));
        expected.extend(data);
        bytes.extend(compress(b"", level));
    }
    for workers in [1, 2, 4] {
        assert_eq!(decompress(&bytes, workers).unwrap(), expected);
    }
}

/// The bits of `bytes` from `bit` on, `n` of them.
fn bits_at(bytes: &[u8], bit: u64, n: u32) -> u64 {
    (0..u64::from(n)).fold(0, |v, i| {
        let b = bit + i;
        (v << 1) | u64::from((bytes[(b / 8) as usize] >> (7 - b % 8)) & 1)
    })
}

fn set_bits(bytes: &mut [u8], bit: u64, n: u32, value: u64) {
    for i in 0..u64::from(n) {
        let b = bit + i;
        let mask = 0x80 >> (b % 8);
        if (value >> (u64::from(n) - 1 - i)) & 1 == 1 {
            bytes[(b / 8) as usize] |= mask;
        } else {
            bytes[(b / 8) as usize] &= !mask;
        }
    }
}

/// The CRC of bzip2, bit by bit.
fn crc(bytes: &[u8]) -> u32 {
    let mut crc = u32::MAX;
    for &b in bytes {
        crc ^= u32::from(b) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 { (crc << 1) ^ 0x04C1_1DB7 } else { crc << 1 };
        }
    }
    !crc
}

/// bzip2 0.9 flipped the lowest bit of bytes 617, 617 + 720, ... (the gaps of its table) of a
/// block it found slow to sort, and set the block's randomised bit. Such a block is made here
/// from a file of the flipped bytes: its randomised bit set, its CRCs those of the bytes before
/// flipping. The bytes have no run of four, so the initial run-length stage leaves them be.
#[test]
fn a_randomised_block_is_derandomised() {
    const GAPS: [usize; 4] = [619, 720, 127, 481];
    let mut rng = Rng(99);
    let mut data = Vec::new();
    while data.len() < 2000 {
        let b = b'a' + (rng.next() % 20) as u8;
        if !data.ends_with(&[b, b, b]) && !data.ends_with(&[b ^ 1, b ^ 1, b ^ 1]) {
            data.push(b);
        }
    }
    let mut flipped = data.clone();
    let mut at = 0;
    for gap in GAPS {
        at += gap;
        if at - 2 < flipped.len() {
            flipped[at - 2] ^= 1;
        }
    }
    assert!((0..flipped.len() - 3).all(|i| flipped[i..i + 4].iter().any(|&b| b != flipped[i])));
    let mut bytes = compress(&flipped, 9);
    let end =
        (0..bytes.len() as u64 * 8 - 47).rev().find(|&b| bits_at(&bytes, b, 48) == 0x1772_4538_5090).unwrap();
    set_bits(&mut bytes, 80, 32, u64::from(crc(&data)));
    set_bits(&mut bytes, 112, 1, 1);
    set_bits(&mut bytes, end + 48, 32, u64::from(crc(&data)));
    assert_eq!(libbz2(&bytes).unwrap(), data, "libbz2 agrees on the positions");
    assert_eq!(decompress(&bytes, 1).unwrap(), data);
}

/// Writes a stream bit by bit.
#[derive(Default)]
struct Bits {
    bytes: Vec<u8>,
    n: u64,
}

impl Bits {
    fn put(&mut self, value: u64, n: u32) -> &mut Self {
        for i in (0..n).rev() {
            if self.n.is_multiple_of(8) {
                self.bytes.push(0);
            }
            if (value >> i) & 1 == 1 {
                *self.bytes.last_mut().unwrap() |= 0x80 >> (self.n % 8);
            }
            self.n += 1;
        }
        self
    }
}

/// The parts of a hand-built one-block stream of level 1.
#[derive(Clone)]
struct Block {
    crc: u32,
    orig_ptr: u64,
    /// Bytes in use (a symbol map).
    in_use: Vec<u8>,
    tables: u64,
    /// Selectors as move-to-front places.
    selectors: Vec<u32>,
    /// Each table's code lengths, as written (first length, then one step per symbol).
    lengths: Vec<Vec<u32>>,
    /// The coded symbols, as (code, length) pairs.
    symbols: Vec<(u64, u32)>,
}

impl Block {
    /// "ab": the transform's last column is "ba" (rotations "ab", "ba"), the original at row
    /// 0. Move-to-front over [a, b]: b is place 1 (symbol 2), then a is place 1 (symbol 2);
    /// the end of block is symbol 3. Codes of lengths 2, 2, 2, 2: RUNA 00, RUNB 01, 2 10, EOB 11.
    fn ab() -> Block {
        Block {
            crc: crc(b"ab"),
            orig_ptr: 0,
            in_use: b"ab".to_vec(),
            tables: 2,
            selectors: vec![0],
            lengths: vec![vec![2, 2, 2, 2]; 2],
            symbols: vec![(0b10, 2), (0b10, 2), (0b11, 2)],
        }
    }

    fn stream(&self) -> Vec<u8> {
        let mut w = Bits::default();
        w.put(u64::from_be_bytes(*b"\0\0\0\0BZh1"), 32);
        w.put(0x3141_5926_5359, 48).put(u64::from(self.crc), 32).put(0, 1).put(self.orig_ptr, 24);
        let ranges =
            (0..16).filter(|r| self.in_use.iter().any(|b| b / 16 == *r)).fold(0, |m, r| m | 0x8000 >> r);
        w.put(ranges, 16);
        for r in 0..16u8 {
            if ranges & (0x8000 >> r) != 0 {
                let values =
                    self.in_use.iter().filter(|b| *b / 16 == r).fold(0u64, |m, b| m | 0x8000 >> (b % 16));
                w.put(values, 16);
            }
        }
        w.put(self.tables, 3).put(self.selectors.len() as u64, 15);
        for &s in &self.selectors {
            w.put((1 << (s + 1)) - 2, s + 1);
        }
        for lengths in &self.lengths {
            w.put(u64::from(lengths[0]), 5);
            let mut current = lengths[0];
            for &l in lengths {
                while current < l {
                    w.put(0b10, 2);
                    current += 1;
                }
                while current > l {
                    w.put(0b11, 2);
                    current -= 1;
                }
                w.put(0, 1);
            }
        }
        for &(code, len) in &self.symbols {
            w.put(code, len);
        }
        w.put(0x1772_4538_5090, 48).put(u64::from(self.crc), 32);
        w.bytes
    }
}

/// An error that names a byte and says what went wrong.
fn refused(bytes: &[u8]) -> DecodeError {
    for workers in [1, 2] {
        let err = decompress(bytes, workers).expect_err("damaged input decoded");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        let found =
            err.get_ref().and_then(|e| e.downcast_ref::<DecodeError>()).expect("a DecodeError").clone();
        assert!(found.offset.is_some(), "{found}");
        if workers == 2 {
            return found;
        }
    }
    unreachable!()
}

#[test]
fn a_hand_built_block_decodes() {
    let block = Block::ab();
    assert_eq!(libbz2(&block.stream()).unwrap(), b"ab");
    assert_eq!(decompress(&block.stream(), 1).unwrap(), b"ab");
}

#[test]
fn damaged_tables_are_errors_naming_the_block() {
    let cases: Vec<(&str, Block, &str)> = vec![
        ("bad CRC", Block { crc: crc(b"ba"), ..Block::ab() }, "CRC"),
        ("selector past the tables", Block { selectors: vec![2], ..Block::ab() }, "selector"),
        ("one table", Block { tables: 1, lengths: vec![vec![2, 2, 2, 2]], ..Block::ab() }, "tables"),
        ("seven tables", Block { tables: 7, lengths: vec![vec![2, 2, 2, 2]; 7], ..Block::ab() }, "tables"),
        ("no selectors", Block { selectors: vec![], ..Block::ab() }, "selectors"),
        ("code length 0", Block { lengths: vec![vec![0, 2, 2, 2], vec![2; 4]], ..Block::ab() }, "length"),
        ("code length 21", Block { lengths: vec![vec![2, 21, 2, 2], vec![2; 4]], ..Block::ab() }, "length"),
        (
            "empty symbol map",
            Block { in_use: vec![], lengths: vec![vec![1, 2, 2]; 2], ..Block::ab() },
            "symbol map",
        ),
        ("start row past the end", Block { orig_ptr: 2, ..Block::ab() }, "start row"),
        ("no end of block", Block { symbols: vec![(0b10, 2); 50], ..Block::ab() }, "selector"),
        (
            "a zero run past the block size",
            Block { symbols: vec![(0b01, 2); 40], ..Block::ab() },
            "more than",
        ),
        (
            "a code the tables lack",
            // Lengths 2, 2, 3, 3 leave the codes 111x unused.
            Block {
                lengths: vec![vec![2, 2, 3, 3]; 2],
                symbols: vec![(0b100, 3), (0b111, 3)],
                ..Block::ab()
            },
            "does not code",
        ),
    ];
    for (what, block, says) in cases {
        let bytes = block.stream();
        assert!(libbz2(&bytes).is_err(), "{what}: libbz2 takes it");
        let err = refused(&bytes);
        assert!(err.message.contains("corrupt") || err.message.contains("cut short"), "{what}: {err}");
        assert!(err.message.contains(says), "{what}: {err}");
        assert_eq!(err.offset, Some(4), "{what}: {err}");
    }
}

/// Flipped bits anywhere, cut files and stray bytes give errors or, where a flip misses every
/// checked bit (the padding after the stream CRC), the data itself; never a panic.
#[test]
fn damaged_files_never_panic() {
    let mut rng = Rng(5);
    for (kind, data) in kinds(30_000, 3) {
        let bytes = compress(&data, 1);
        for _ in 0..150 {
            let mut bad = bytes.clone();
            for _ in 0..1 + rng.next() % 3 {
                let bit = rng.next() % (bad.len() as u64 * 8);
                bad[(bit / 8) as usize] ^= 0x80 >> (bit % 8);
            }
            if let Ok(out) = decompress(&bad, 2) {
                assert_eq!(out, data, "{kind}: a damaged file decoded to other data");
            }
        }
        for cut in (0..bytes.len()).step_by(97) {
            assert!(decompress(&bytes[..cut], 1).is_err() || cut == 0, "{kind} cut at {cut}");
        }
        let mut trailing = bytes.clone();
        trailing.extend(rng.bytes(40));
        assert!(decompress(&trailing, 1).is_err());
    }
}
