//! One bzip2 block decoded, in safe Rust.
//!
//! A block, after its 48-bit magic, holds (all fields most significant bit first):
//!
//! | bits | field |
//! |---|---|
//! | 32 | CRC of the block's decoded bytes ([`crate::crc`]) |
//! | 1 | randomised: bzip2 0.9 flipped bits of some blocks before sorting (see [`Derandomise`]) |
//! | 24 | `origPtr`: the row of the sorted rotations that holds the original text |
//! | 16 + 16·k | the symbol map: which ranges of 16 byte values occur, then which values of each |
//! | 3 | the number of Huffman tables, 2 to 6 |
//! | 15 | the number of selectors, one per group of 50 symbols |
//! | ... | the selectors: each table's place in a move-to-front list, in unary (`1`·j `0`) |
//! | ... | each table's code lengths: 5 bits, then per symbol steps `10` (up), `11` (down), `0` |
//! | ... | the symbols, Huffman-coded, 50 a table, up to the end-of-block symbol |
//!
//! The symbols are the block's bytes after four stages, which decoding undoes in reverse:
//! 1. *Initial run-length coding*: 4 to 255 equal bytes become 4 bytes and a count of the rest.
//! 2. *Burrows-Wheeler transform*: the last column of the sorted rotations of the block.
//! 3. *Move-to-front*: each byte becomes its place in a list of the bytes in use, and moves to
//!    the front.
//! 4. *Zero runs*: runs of place 0 are written in bijective base 2 with the symbols RUNA (1)
//!    and RUNB (2), lowest digit first; place `k` > 0 is symbol `k + 1`; the last symbol, one
//!    past the largest place, ends the block.
//!
//! Where the time goes and what is done about it (one core, the 110 blocks of a 98 MB DCFG):
//! the inverse transform's walk, one load from wherever the last one pointed in a 3.6 MB
//! table per byte, is half of it, and is as libbz2's fast path does it (the byte packed into
//! the low 8 bits of each link, the initial runs undone during the walk). Symbols are a
//! quarter: libbz2 finds each Huffman code by walking its lengths one bit at a time, here the
//! next 10 bits index a table (as in lbzip2) and only longer codes walk; move-to-front places
//! under 16, nearly all of them, move as one 128-bit shift. The CRC takes eight bytes a step.
//! A second walk, backwards from the original's row at the same time as the forward one, was
//! tried and measured no faster (a 2-core AMD EPYC).

use crate::crc::crc32;

/// Symbols coded with one table: a selector is read for every group of this many.
const GROUP: usize = 50;
/// The longest Huffman code bzip2 allows.
const MAX_CODE_LEN: u32 = 20;
/// Codes up to this long are found with one lookup.
const FAST_BITS: u32 = 10;
/// The most selectors a block stores; bzip2 1.0.8 reads more and ignores the rest, as here.
const MAX_SELECTORS: usize = 18_002;
/// RUNA, RUNB, up to 255 move-to-front places and the end-of-block symbol.
const MAX_ALPHA: usize = 258;
/// Zero bytes after the block's bytes: the symbol loop checks the input's end once a group,
/// and a group of 50 codes of up to 20 bits, plus the 8-byte read, stays within them.
const SLACK: usize = 256;

const ENDS_EARLY: &str = "its data ends before the block does";

/// Decodes blocks one after another, keeping its memory (the 3.6 MB table of a level-9 block
/// above all) from one to the next: fresh pages each block would be zeroed by the kernel on
/// first touch, about a tenth of the decoding time.
#[derive(Default)]
pub(crate) struct BlockDecoder {
    /// The block's bytes, then [`SLACK`] zero bytes.
    input: Vec<u8>,
    /// One entry per symbol position: the byte in the low 8 bits and, once the inverse
    /// transform's links are made, the next position in the upper 24.
    tt: Vec<u32>,
    /// The table number of each group of 50 symbols.
    selectors: Vec<u8>,
    tables: Vec<HuffmanTable>,
}

/// Where a block is: the input's bytes from the one holding its first bit, the bit offset of
/// its magic within the first byte, and its length in bits up to the next magic.
pub(crate) struct BlockBits<'a> {
    pub raw: &'a [u8],
    pub first_bit: u32,
    pub nbits: u64,
    /// The stream's block size level, 1 to 9: a block holds at most `level`·100 000 symbols.
    pub level: u8,
}

impl BlockDecoder {
    /// Decodes the block into `out` (its capacity reused) and checks its CRC. The bits must
    /// end exactly where the block's end-of-block code does.
    pub(crate) fn decode(&mut self, block: &BlockBits, mut out: Vec<u8>) -> Result<Vec<u8>, String> {
        self.input.clear();
        self.input.extend_from_slice(block.raw);
        self.input.resize(block.raw.len() + SLACK, 0);
        let end = (u64::from(block.first_bit) + block.nbits).min(block.raw.len() as u64 * 8);
        let mut bits = Bits { bytes: &self.input, pos: u64::from(block.first_bit), end };
        if bits.take(24)? != 0x31_4159 || bits.take(24)? != 0x26_5359 {
            return Err("it does not start with a block magic".into());
        }
        let stored_crc = bits.take(32)?;
        let randomised = bits.take(1)? == 1;
        let orig_ptr = bits.take(24)? as usize;
        let in_use = read_symbol_map(&mut bits)?;
        let alpha = in_use.len() + 2;
        let n_tables = read_selectors(&mut bits, &mut self.selectors)?;
        self.tables.resize_with(n_tables, HuffmanTable::default);
        let mut lengths = [0u8; MAX_ALPHA];
        for table in &mut self.tables {
            read_code_lengths(&mut bits, &mut lengths[..alpha])?;
            table.build(&lengths[..alpha]);
        }
        let max_symbols = usize::from(block.level) * 100_000;
        if self.tt.len() < max_symbols {
            self.tt.resize(max_symbols, 0);
        }
        let mut counts = [0u32; 256];
        let coding = Coding { selectors: &self.selectors, tables: &self.tables };
        let n = coding.read_symbols(&mut bits, &in_use, &mut self.tt[..max_symbols], &mut counts)?;
        if bits.pos != bits.end {
            return Err("bits follow its end-of-block code: it holds more than one block".into());
        }
        if orig_ptr >= n {
            return Err(format!("its start row {orig_ptr} is past its {n} symbols"));
        }
        let tt = &mut self.tt[..n];
        link_rows(tt, &counts);
        out.clear();
        out.reserve(n + n / 4);
        let walk = Walk { tt, row: (tt[orig_ptr] >> 8) as usize, left: n };
        if randomised {
            undo_initial_runs(Derandomise { bytes: walk, countdown: 0, next: 0 }, &mut out);
        } else {
            undo_initial_runs(walk, &mut out);
        }
        let crc = crc32(&out);
        if crc != stored_crc {
            return Err(format!(
                "its CRC does not match its data (stored {stored_crc:08x}, decoded {crc:08x})"
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
impl BlockDecoder {
    /// The length of the symbol table and where it is.
    pub(crate) fn table_entries(&self) -> (usize, *const u32) {
        (self.tt.len(), self.tt.as_ptr())
    }
}

/// How a block's symbols are coded: a table per group of 50.
struct Coding<'a> {
    selectors: &'a [u8],
    tables: &'a [HuffmanTable],
}

impl Coding<'_> {
    /// Decodes the Huffman-coded symbols into `tt` (one byte per entry), undoing the zero runs
    /// and move-to-front, and counts each byte value. Returns the number of bytes.
    fn read_symbols(
        &self,
        input: &mut Bits,
        in_use: &[u8],
        tt: &mut [u32],
        counts: &mut [u32; 256],
    ) -> Result<usize, String> {
        let most = tt.len();
        let too_many = || format!("it holds more than {most} symbols, the most a block of its level can");
        let end_of_block = in_use.len() as u16 + 1;
        let mut mtf = [0u8; 256];
        mtf[..in_use.len()].copy_from_slice(in_use);
        let mut n = 0usize;
        // A zero run being read: its length so far and the weight of its next digit.
        let (mut run, mut weight) = (0usize, 1usize);
        // A copy, whose position stays in a register.
        let mut bits = *input;
        for &selector in self.selectors {
            if bits.pos > bits.end {
                return Err(ENDS_EARLY.into());
            }
            let table = &self.tables[usize::from(selector)];
            for _ in 0..GROUP {
                let (symbol, len) = table.decode(bits.peek(MAX_CODE_LEN))?;
                bits.pos += u64::from(len);
                if symbol <= 1 {
                    run += weight << symbol;
                    weight <<= 1;
                    if run > tt.len() {
                        return Err(too_many());
                    }
                    continue;
                }
                if run > 0 {
                    let byte = mtf[0];
                    let to = n + run;
                    tt.get_mut(n..to).ok_or_else(too_many)?.fill(u32::from(byte));
                    counts[usize::from(byte)] += run as u32;
                    n = to;
                    (run, weight) = (0, 1);
                }
                if symbol == end_of_block {
                    if bits.pos > bits.end {
                        return Err(ENDS_EARLY.into());
                    }
                    input.pos = bits.pos;
                    return Ok(n);
                }
                let byte = move_to_front(&mut mtf, usize::from(symbol - 1));
                *tt.get_mut(n).ok_or_else(too_many)? = u32::from(byte);
                counts[usize::from(byte)] += 1;
                n += 1;
            }
        }
        if bits.pos > bits.end {
            return Err(ENDS_EARLY.into());
        }
        Err("its symbols run past its last selector without an end-of-block code".into())
    }
}

/// Moves the byte at `place` of the list to its front and returns it. Most places are small
/// (the data's recent bytes): the list's first 16 bytes move as one 128-bit number then,
/// instead of through a call to `memmove`, which took a tenth of the decoding time.
#[inline(always)]
fn move_to_front(list: &mut [u8; 256], place: usize) -> u8 {
    if let (true, Some((head, _))) = (place < 16, list.split_first_chunk_mut::<16>()) {
        let old = u128::from_le_bytes(*head);
        let byte = (old >> (8 * place)) as u8;
        let moved = u128::MAX >> (8 * (15 - place));
        *head = ((((old << 8) | u128::from(byte)) & moved) | (old & !moved)).to_le_bytes();
        return byte;
    }
    let byte = list[place];
    list.copy_within(..place, 1);
    list[0] = byte;
    byte
}

/// The input's bits, read most significant first, from bit `pos` up to bit `end`.
#[derive(Clone, Copy)]
struct Bits<'a> {
    /// At least [`SLACK`] bytes past the one holding bit `end`.
    bytes: &'a [u8],
    pos: u64,
    end: u64,
}

impl Bits<'_> {
    /// The next `n` (1 to 32) bits, without moving past them. Bits past `end` read as
    /// whatever follows (zeros): callers check `pos` against `end`.
    #[inline(always)]
    fn peek(&self, n: u32) -> u32 {
        let at = (self.pos / 8) as usize;
        let mut word = [0u8; 8];
        word.copy_from_slice(&self.bytes[at..at + 8]);
        ((u64::from_be_bytes(word) << (self.pos % 8)) >> (64 - n)) as u32
    }

    /// The next `n` (1 to 32) bits, or an error where the block's bits end first.
    fn take(&mut self, n: u32) -> Result<u32, String> {
        if self.pos + u64::from(n) > self.end {
            return Err(ENDS_EARLY.into());
        }
        let v = self.peek(n);
        self.pos += u64::from(n);
        Ok(v)
    }
}

/// The byte values in use, in order: 16 bits say which ranges of 16 occur, then 16 bits for
/// each range that does.
fn read_symbol_map(bits: &mut Bits) -> Result<Vec<u8>, String> {
    let ranges = bits.take(16)?;
    let mut in_use = Vec::with_capacity(256);
    for range in 0..16u8 {
        if ranges & (0x8000 >> range) != 0 {
            let values = bits.take(16)?;
            in_use.extend((0..16u8).filter(|v| values & (0x8000 >> v) != 0).map(|v| range * 16 + v));
        }
    }
    if in_use.is_empty() {
        return Err("its symbol map holds no byte value".into());
    }
    Ok(in_use)
}

/// Reads the number of tables and the selectors (move-to-front places in unary) into
/// `selectors` as table numbers; returns the number of tables.
fn read_selectors(bits: &mut Bits, selectors: &mut Vec<u8>) -> Result<usize, String> {
    let n_tables = bits.take(3)? as usize;
    if !(2..=6).contains(&n_tables) {
        return Err(format!("it has {n_tables} Huffman tables where bzip2 has 2 to 6"));
    }
    let n_selectors = bits.take(15)? as usize;
    if n_selectors == 0 {
        return Err("it has no selectors".into());
    }
    let mut order = [0u8, 1, 2, 3, 4, 5];
    selectors.clear();
    for _ in 0..n_selectors {
        let mut place = 0;
        while bits.take(1)? == 1 {
            place += 1;
            if place >= n_tables {
                return Err(format!("a selector names table {} of {n_tables}", place + 1));
            }
        }
        let table = order[place];
        order.copy_within(..place, 1);
        order[0] = table;
        if selectors.len() < MAX_SELECTORS {
            selectors.push(table);
        }
    }
    Ok(n_tables)
}

/// Reads one table's code lengths, delta-coded: 5 bits for the first, then for each symbol
/// steps of `10` (one longer) or `11` (one shorter) ended by `0`.
fn read_code_lengths(bits: &mut Bits, lengths: &mut [u8]) -> Result<(), String> {
    let mut len = bits.take(5)?;
    for slot in lengths {
        loop {
            if !(1..=MAX_CODE_LEN).contains(&len) {
                return Err(format!("a Huffman code length of {len} where bzip2 allows 1 to 20"));
            }
            if bits.take(1)? == 0 {
                break;
            }
            if bits.take(1)? == 0 {
                len += 1;
            } else {
                len -= 1;
            }
        }
        *slot = len as u8;
    }
    Ok(())
}

/// A canonical Huffman code: codes of one length are consecutive numbers, in the order of
/// their symbols, and each length's first code follows on from the shorter ones' last.
///
/// `limit`, `base` and `perm` are libbz2's decoding tables, built the same way, so that any
/// code libbz2 accepts, incomplete or oversubscribed sets of lengths included, decodes to the
/// same symbol: the first `k` bits of the input are a code of length `k` when they are at
/// most `limit[k]`, and then the symbol is `perm[code - base[k]]`. `fast` holds that answer
/// for every 10-bit prefix whose code is at most 10 bits long, as `symbol << 5 | length`
/// (0: longer, or no symbol).
struct HuffmanTable {
    fast: [u16; 1 << FAST_BITS],
    limit: [i32; MAX_CODE_LEN as usize + 1],
    base: [i32; MAX_CODE_LEN as usize + 2],
    perm: [u16; MAX_ALPHA],
    min_len: u32,
    max_len: u32,
    alpha: usize,
}

impl Default for HuffmanTable {
    fn default() -> Self {
        HuffmanTable {
            fast: [0; 1 << FAST_BITS],
            limit: [0; MAX_CODE_LEN as usize + 1],
            base: [0; MAX_CODE_LEN as usize + 2],
            perm: [0; MAX_ALPHA],
            min_len: 1,
            max_len: 0,
            alpha: 0,
        }
    }
}

impl HuffmanTable {
    /// Builds the table from code lengths of 1 to 20, one per symbol.
    fn build(&mut self, lengths: &[u8]) {
        let min_len = lengths.iter().copied().min().map_or(1, u32::from);
        let max_len = lengths.iter().copied().max().map_or(0, u32::from);
        (self.min_len, self.max_len, self.alpha) = (min_len, max_len, lengths.len());
        let mut placed = 0;
        for len in min_len..=max_len {
            for (symbol, &l) in lengths.iter().enumerate() {
                if u32::from(l) == len {
                    self.perm[placed] = symbol as u16;
                    placed += 1;
                }
            }
        }
        // base[k + 1]: how many codes are shorter than k + 1 bits.
        self.base = [0; MAX_CODE_LEN as usize + 2];
        for &l in lengths {
            self.base[usize::from(l) + 1] += 1;
        }
        for k in 1..self.base.len() {
            self.base[k] += self.base[k - 1];
        }
        self.limit = [0; MAX_CODE_LEN as usize + 1];
        let mut next_code = 0i32;
        for k in min_len as usize..=max_len as usize {
            next_code += self.base[k + 1] - self.base[k];
            self.limit[k] = next_code - 1;
            next_code <<= 1;
        }
        for k in min_len as usize + 1..=max_len as usize {
            self.base[k] = ((self.limit[k - 1] + 1) << 1) - self.base[k];
        }
        for prefix in 0..1u32 << FAST_BITS {
            let found = self.walk(prefix << (MAX_CODE_LEN - FAST_BITS), max_len.min(FAST_BITS));
            self.fast[prefix as usize] = found.map_or(0, |(symbol, len)| symbol << 5 | len as u16);
        }
    }

    /// The symbol whose code starts the 20 bits `next`, and the code's length.
    #[inline(always)]
    fn decode(&self, next: u32) -> Result<(u16, u32), String> {
        let entry = self.fast[(next >> (MAX_CODE_LEN - FAST_BITS)) as usize];
        if entry != 0 {
            return Ok((entry >> 5, u32::from(entry & 31)));
        }
        self.walk(next, self.max_len)
            .ok_or_else(|| "a bit sequence that its Huffman table does not code".into())
    }

    /// libbz2's search: lengths from the shortest up to `longest`, the first whose code
    /// is in range.
    fn walk(&self, next: u32, longest: u32) -> Option<(u16, u32)> {
        for len in self.min_len..=longest {
            let code = (next >> (MAX_CODE_LEN - len)) as i32;
            if code <= self.limit[len as usize] {
                let at = usize::try_from(code - self.base[len as usize]).ok().filter(|&i| i < self.alpha)?;
                return Some((self.perm[at], len));
            }
        }
        None
    }
}

/// Makes the inverse transform's links: the rows sorted by byte are the rotations one step on,
/// so the `i`-th occurrence of byte `b` in the last column (`tt`) is row `first[b] + i`,
/// whose entry gets `i`'s position as the next row. Keeps the byte in the low 8 bits.
fn link_rows(tt: &mut [u32], counts: &[u32; 256]) {
    let mut first = [0u32; 256];
    let mut sum = 0;
    for (f, &c) in first.iter_mut().zip(counts) {
        *f = sum;
        sum += c;
    }
    for i in 0..tt.len() {
        let byte = (tt[i] & 0xff) as usize;
        let row = first[byte] as usize;
        tt[row] |= (i as u32) << 8;
        first[byte] += 1;
    }
}

/// The block's bytes before the transform, in order: from the start row, each entry gives
/// the byte and the next row.
struct Walk<'a> {
    tt: &'a [u32],
    row: usize,
    left: usize,
}

impl Iterator for Walk<'_> {
    type Item = u8;

    #[inline(always)]
    fn next(&mut self) -> Option<u8> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let entry = self.tt[self.row];
        self.row = (entry >> 8) as usize;
        Some(entry as u8)
    }
}

/// bzip2 0.9's randomisation undone: the encoder flipped the lowest bit of the bytes at the
/// positions given by [`RANDOM_GAPS`] (617, then each gap further, cycling through the 512
/// gaps), so that sorting never met long repeats.
struct Derandomise<I> {
    bytes: I,
    countdown: u16,
    next: usize,
}

impl<I: Iterator<Item = u8>> Iterator for Derandomise<I> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        let byte = self.bytes.next()?;
        if self.countdown == 0 {
            self.countdown = RANDOM_GAPS[self.next];
            self.next = (self.next + 1) % RANDOM_GAPS.len();
        }
        self.countdown -= 1;
        Some(if self.countdown == 1 { byte ^ 1 } else { byte })
    }
}

/// Undoes the initial run-length coding into `out`: after four equal bytes, the next byte
/// is how many more of them follow. A block that ends right after four equal bytes has no
/// count (libbz2 accepts it as none).
fn undo_initial_runs(mut bytes: impl Iterator<Item = u8>, out: &mut Vec<u8>) {
    let mut last = 256u32;
    let mut same = 0u32;
    while let Some(byte) = bytes.next() {
        out.push(byte);
        if u32::from(byte) != last {
            (last, same) = (u32::from(byte), 1);
            continue;
        }
        same += 1;
        if same == 4 {
            let Some(count) = bytes.next() else { break };
            out.resize(out.len() + usize::from(count), byte);
            (last, same) = (256, 0);
        }
    }
}

/// The gaps between the positions whose bytes a randomised block flipped (part of the format,
/// as published with bzip2 0.9).
static RANDOM_GAPS: [u16; 512] = [
    619, 720, 127, 481, 931, 816, 813, 233, 566, 247, 985, 724, 205, 454, 863, 491, 741, 242, 949, 214, 733,
    859, 335, 708, 621, 574, 73, 654, 730, 472, 419, 436, 278, 496, 867, 210, 399, 680, 480, 51, 878, 465,
    811, 169, 869, 675, 611, 697, 867, 561, 862, 687, 507, 283, 482, 129, 807, 591, 733, 623, 150, 238, 59,
    379, 684, 877, 625, 169, 643, 105, 170, 607, 520, 932, 727, 476, 693, 425, 174, 647, 73, 122, 335, 530,
    442, 853, 695, 249, 445, 515, 909, 545, 703, 919, 874, 474, 882, 500, 594, 612, 641, 801, 220, 162, 819,
    984, 589, 513, 495, 799, 161, 604, 958, 533, 221, 400, 386, 867, 600, 782, 382, 596, 414, 171, 516, 375,
    682, 485, 911, 276, 98, 553, 163, 354, 666, 933, 424, 341, 533, 870, 227, 730, 475, 186, 263, 647, 537,
    686, 600, 224, 469, 68, 770, 919, 190, 373, 294, 822, 808, 206, 184, 943, 795, 384, 383, 461, 404, 758,
    839, 887, 715, 67, 618, 276, 204, 918, 873, 777, 604, 560, 951, 160, 578, 722, 79, 804, 96, 409, 713,
    940, 652, 934, 970, 447, 318, 353, 859, 672, 112, 785, 645, 863, 803, 350, 139, 93, 354, 99, 820, 908,
    609, 772, 154, 274, 580, 184, 79, 626, 630, 742, 653, 282, 762, 623, 680, 81, 927, 626, 789, 125, 411,
    521, 938, 300, 821, 78, 343, 175, 128, 250, 170, 774, 972, 275, 999, 639, 495, 78, 352, 126, 857, 956,
    358, 619, 580, 124, 737, 594, 701, 612, 669, 112, 134, 694, 363, 992, 809, 743, 168, 974, 944, 375, 748,
    52, 600, 747, 642, 182, 862, 81, 344, 805, 988, 739, 511, 655, 814, 334, 249, 515, 897, 955, 664, 981,
    649, 113, 974, 459, 893, 228, 433, 837, 553, 268, 926, 240, 102, 654, 459, 51, 686, 754, 806, 760, 493,
    403, 415, 394, 687, 700, 946, 670, 656, 610, 738, 392, 760, 799, 887, 653, 978, 321, 576, 617, 626, 502,
    894, 679, 243, 440, 680, 879, 194, 572, 640, 724, 926, 56, 204, 700, 707, 151, 457, 449, 797, 195, 791,
    558, 945, 679, 297, 59, 87, 824, 713, 663, 412, 693, 342, 606, 134, 108, 571, 364, 631, 212, 174, 643,
    304, 329, 343, 97, 430, 751, 497, 314, 983, 374, 822, 928, 140, 206, 73, 263, 980, 736, 876, 478, 430,
    305, 170, 514, 364, 692, 829, 82, 855, 953, 676, 246, 369, 970, 294, 750, 807, 827, 150, 790, 288, 923,
    804, 378, 215, 828, 592, 281, 565, 555, 710, 82, 896, 831, 547, 261, 524, 462, 293, 465, 502, 56, 661,
    821, 976, 991, 658, 869, 905, 758, 745, 193, 768, 550, 608, 933, 378, 286, 215, 979, 792, 961, 61, 688,
    793, 644, 986, 403, 106, 366, 905, 644, 372, 567, 466, 434, 645, 210, 389, 550, 919, 135, 780, 773, 635,
    389, 707, 100, 626, 958, 165, 504, 920, 176, 193, 713, 857, 265, 203, 50, 668, 108, 645, 990, 626, 197,
    510, 357, 358, 850, 858, 364, 936, 638,
];
