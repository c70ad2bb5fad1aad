#![forbid(unsafe_code)]
//! bzip2 decompressed on every core, block by block, in the order of the file.
//!
//! A bzip2 stream is a 4-byte header (`BZh` and the block size level `1`..`9`), then blocks, then
//! an end-of-stream marker. Each block starts with the 48-bit magic `0x314159265359` and its CRC;
//! the marker is the 48-bit magic `0x177245385090` and the stream's CRC, which combines the
//! blocks' CRCs (rotate left by one, exclusive-or the next). Neither magic is byte-aligned: a
//! block ends wherever its Huffman-coded data ends. A file may hold several streams one after
//! another (pbzip2 writes one per block).
//!
//! Every block can be decoded without the others once it is found, which is what lbzip2 does:
//!
//! 1. A scanner thread reads the compressed input and looks for both magics at every bit
//!    offset. The bits from one block magic to the next candidate make a *piece*.
//! 2. Worker threads, one per core, decode each piece with the crate's own block decoder
//!    (`src/block.rs`, safe Rust), which checks the block's CRC and that the block's coded data ends
//!    exactly where the piece does.
//! 3. The reading thread takes the decoded blocks in file order, folds their CRCs into the
//!    stream CRC and compares it with the one stored after the end marker.
//!
//! The magics can also occur by chance inside compressed data. A candidate end marker counts
//! only when the end of the input or another stream header follows it; a false block magic
//! splits a block in two, so the piece before it does not decode. A piece that does not decode
//! is decoded again on the reading thread, joined with the pieces after it one at a time, until
//! it decodes (the magic between them was false) or it grows past the largest size a block of
//! its level can take (the block is corrupt: the error names its byte offset).
//!
//! Memory stays bounded whatever the input's size: the scanner holds at most one block's
//! compressed bytes plus one read, and the channels between the threads hold a few blocks per
//! worker.
//!
//! The block decoder takes 0.70-0.73 s of CPU for the 12 MB, 110-block `.bz2` of a 98 MB
//! Pin-style DCFG on one core, where C lbzip2 (`lbzip2 -dc -n1`) takes 0.79-0.81 s and the
//! libbz2-rs-sys port of libbz2, which it replaces, 0.98-1.01 s (`examples/bzcat.rs`, 5
//! interleaved rounds on a 2-core AMD EPYC). `cfghub info` of that file takes 19% less time
//! with it, on one core and on two, and is faster than `lbzip2 -dc -n N | cfghub info -`.
//!
//! Errors are [`io::Error`]s of kind [`io::ErrorKind::InvalidData`] that carry a
//! [`DecodeError`]: what is wrong, the byte of the compressed input where it is, and what to do.
//! Errors of the underlying reader pass through unchanged.

use std::fmt;
use std::io::{self, BufRead, Read};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

mod block;
mod crc;

use block::{BlockBits, BlockDecoder};

const BLOCK_MAGIC: u64 = 0x3141_5926_5359;
const EOS_MAGIC: u64 = 0x1772_4538_5090;
/// A damaged, truncated or non-bzip2 input: what is wrong and where, carried inside the
/// [`io::Error`] the reader returns (`err.get_ref()` and `downcast_ref::<DecodeError>()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// What is wrong, e.g. "the bzip2 block that starts here (...) is corrupt: ...".
    pub message: String,
    /// The byte of the compressed input it concerns, where there is one.
    pub offset: Option<u64>,
    /// What the user can do about it, e.g. "the file is truncated".
    pub hint: Option<String>,
}

impl DecodeError {
    fn new(message: impl Into<String>) -> Self {
        DecodeError { message: message.into(), offset: None, hint: None }
    }

    fn at_byte(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }

    fn with_hint(mut self, hint: &str) -> Self {
        self.hint = Some(hint.to_string());
        self
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(offset) = self.offset {
            write!(f, "byte {offset}: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " ({hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for DecodeError {}

/// Bytes read from the compressed input at a time.
const READ_LEN: usize = 1 << 20;

/// The largest number of compressed bytes a block of `level` can take: at most `level`·100 000
/// symbols of at most 20 bits each, plus the tables in front of them (symbol map, up to 18 002
/// selectors of up to 7 bits, six coding tables of 258 lengths).
fn max_block_bytes(level: u8) -> u64 {
    u64::from(level) * 250_000 + 64 * 1024
}

/// Decompresses `raw` (which starts with a bzip2 stream header) on `workers` threads and
/// returns a reader over the decompressed bytes in order.
pub fn decoder(raw: Box<dyn BufRead + Send>, workers: usize) -> Box<dyn BufRead + Send> {
    let workers = workers.max(1);
    let (item_tx, item_rx) = mpsc::sync_channel::<Item>(2 * workers);
    let (job_tx, job_rx) = mpsc::sync_channel::<Job>(workers);
    let job_rx = Arc::new(Mutex::new(job_rx));
    let spares = Spares::default();
    for _ in 0..workers {
        let job_rx = Arc::clone(&job_rx);
        let spares = spares.clone();
        spawn("bz2-decode", move || work(&job_rx, &spares));
    }
    spawn("bz2-scan", move || {
        let mut scanner = Scanner { raw, buf: Vec::new(), base: 0, eof: false, items: item_tx, jobs: job_tx };
        let last = match scanner.run() {
            Ok(()) => Item::End,
            Err(Stop::Failed(e)) => Item::Failed(e),
            Err(Stop::Hungup) => return,
        };
        let _ = scanner.items.send(last);
    });
    Box::new(Blocks {
        items: item_rx,
        spares,
        peeked: None,
        out: Vec::new(),
        pos: 0,
        combined_crc: 0,
        stream_start: 0,
        finished: false,
    })
}

/// Starts a named thread (the name shows in `top -H` and /proc/PID/task/*/comm). Like
/// `std::thread::spawn`, panics only when the system cannot make a thread.
fn spawn(name: &str, f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().name(name.into()).spawn(f).expect("the system refused to start a thread");
}

/// A block candidate's compressed bits: from `start` (a bit offset in the input) for `nbits`.
struct Piece {
    start: u64,
    nbits: u64,
    level: u8,
    /// The input's bytes from byte `start / 8` to the one holding the piece's last bit.
    raw: Vec<u8>,
}

impl Piece {
    /// The CRC stored after the block magic, when the piece is long enough to hold one.
    fn block_crc(&self) -> Option<u32> {
        (self.nbits >= 80).then(|| bits_at(&self.raw, self.start % 8 + 48, 32) as u32)
    }

    /// Appends the next piece, which starts where this one ends.
    fn join(&mut self, next: &Piece) {
        let end = self.start + self.nbits;
        debug_assert_eq!(end, next.start);
        self.raw.truncate((end / 8 - self.start / 8) as usize);
        self.raw.extend_from_slice(&next.raw);
        self.nbits += next.nbits;
    }
}

/// `n` (at most 57) bits of `bytes` from bit offset `bit`, most significant first; bits past
/// the end read as zero.
fn bits_at(bytes: &[u8], bit: u64, n: u32) -> u64 {
    let first = (bit / 8) as usize;
    let mut word = [0u8; 8];
    if first < bytes.len() {
        let avail = (bytes.len() - first).min(8);
        word[..avail].copy_from_slice(&bytes[first..first + avail]);
    }
    let w = u64::from_be_bytes(word);
    (w << (bit % 8)) >> (64 - n)
}

/// What the scanner hands the reading thread, in the order of the input.
enum Item {
    /// A block candidate, decoded (or not) by a worker.
    Block(Receiver<Decoded>),
    /// A stream's end marker at bit `bit`, with the stream CRC stored after it.
    StreamEnd {
        bit: u64,
        crc: u32,
    },
    /// A stream header at byte `at`.
    StreamStart {
        at: u64,
    },
    /// The input ended at byte `end`, inside the current stream (after the pieces sent before).
    Truncated {
        end: u64,
    },
    /// The input cannot be read or is not bzip2 where a stream must start.
    Failed(io::Error),
    End,
}

struct Job {
    piece: Piece,
    done: SyncSender<Decoded>,
}

struct Decoded {
    piece: Piece,
    result: Result<Vec<u8>, String>,
}

/// Buffers of decoded blocks the reading side is done with, for the workers to fill again:
/// like the block decoder's tables (see [`BlockDecoder`]), a block's output is then not fresh pages each
/// time. Holds at most [`Spares::MOST`].
#[derive(Clone, Default)]
struct Spares(Arc<Mutex<Vec<Vec<u8>>>>);

impl Spares {
    /// More buffers than blocks in flight are never needed back.
    const MOST: usize = 8;

    fn take(&self) -> Vec<u8> {
        self.0.lock().ok().and_then(|mut v| v.pop()).unwrap_or_default()
    }

    fn give(&self, mut buffer: Vec<u8>) {
        if let Ok(mut v) = self.0.lock() {
            if v.len() < Self::MOST && buffer.capacity() > 0 {
                buffer.clear();
                v.push(buffer);
            }
        }
    }
}

fn work(jobs: &Mutex<Receiver<Job>>, spares: &Spares) {
    let mut decoder = BlockDecoder::default();
    loop {
        let job = match jobs.lock() {
            Ok(rx) => match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
            Err(_) => return,
        };
        let result = decoder.decode_piece(&job.piece, spares.take());
        let _ = job.done.send(Decoded { piece: job.piece, result });
    }
}

/// Decodes one piece with a fresh [`BlockDecoder`].
fn decode_piece(piece: &Piece) -> Result<Vec<u8>, String> {
    BlockDecoder::default().decode_piece(piece, Vec::new())
}

impl BlockDecoder {
    /// Decodes one piece into `out` (empty, its capacity reused); checks the block's CRC.
    fn decode_piece(&mut self, piece: &Piece, out: Vec<u8>) -> Result<Vec<u8>, String> {
        if piece.nbits < 80 + 24 {
            return Err("too short to be a block".into());
        }
        let bits = BlockBits {
            raw: &piece.raw,
            first_bit: (piece.start % 8) as u32,
            nbits: piece.nbits,
            level: piece.level,
        };
        self.decode(&bits, out)
    }
}

enum Stop {
    Failed(io::Error),
    /// The reading side is gone: nobody wants the rest.
    Hungup,
}

struct Scanner {
    raw: Box<dyn BufRead + Send>,
    /// Input bytes from byte `base` on.
    buf: Vec<u8>,
    base: u64,
    eof: bool,
    items: SyncSender<Item>,
    jobs: SyncSender<Job>,
}

/// For every 16-bit value, whether it can be the first two whole bytes of a magic at some
/// bit offset: a cheap filter before the full 48-bit comparison.
static FILTER: [u64; 1024] = {
    let mut table = [0u64; 1024];
    let mut m = 0;
    while m < 2 {
        let magic = if m == 0 { BLOCK_MAGIC } else { EOS_MAGIC };
        let mut s = 0;
        while s < 8 {
            // A magic at bit 8i+s: for s = 0 its first whole bytes are i and i+1; otherwise
            // i+1 and i+2, holding its bits 8-s..24-s.
            let key = if s == 0 { (magic >> 32) & 0xffff } else { (magic >> (24 + s)) & 0xffff };
            table[(key >> 6) as usize] |= 1 << (key & 63);
            s += 1;
        }
        m += 1;
    }
    table
};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Magic {
    Block,
    End,
}

impl Scanner {
    fn send(&self, item: Item) -> Result<(), Stop> {
        self.items.send(item).map_err(|_| Stop::Hungup)
    }

    /// Reads more input; false at the end.
    fn fill(&mut self) -> Result<bool, Stop> {
        if self.eof {
            return Ok(false);
        }
        let mut got = 0;
        while got < READ_LEN {
            let chunk = match self.raw.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Stop::Failed(e)),
            };
            if chunk.is_empty() {
                self.eof = true;
                break;
            }
            let n = chunk.len();
            self.buf.extend_from_slice(chunk);
            self.raw.consume(n);
            got += n;
        }
        Ok(got > 0)
    }

    /// Makes sure bytes up to absolute offset `end` are in the buffer; false if the input ends
    /// before.
    fn have(&mut self, end: u64) -> Result<bool, Stop> {
        while self.base + (self.buf.len() as u64) < end {
            if !self.fill()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Drops buffered bytes before absolute byte `keep`.
    fn discard_before(&mut self, keep: u64) {
        let n = (keep.saturating_sub(self.base) as usize).min(self.buf.len());
        if n >= READ_LEN {
            self.buf.drain(..n);
            self.base += n as u64;
        }
    }

    /// `n` bits at absolute bit offset `bit`, which must be buffered.
    fn bits(&self, bit: u64, n: u32) -> u64 {
        bits_at(&self.buf, bit - self.base * 8, n)
    }

    fn magic_at(&mut self, bit: u64) -> Result<Option<Magic>, Stop> {
        if !self.have((bit + 48).div_ceil(8))? {
            return Ok(None);
        }
        Ok(match self.bits(bit, 48) {
            BLOCK_MAGIC => Some(Magic::Block),
            EOS_MAGIC => Some(Magic::End),
            _ => None,
        })
    }

    fn run(&mut self) -> Result<(), Stop> {
        let mut header = 0u64;
        loop {
            // A stream header at byte `header`, or the end of the input.
            if !self.have(header + 1)? && header > 0 {
                return Ok(());
            }
            let ok = self.have(header + 4)? && {
                let h = &self.buf[(header - self.base) as usize..][..4];
                h.starts_with(b"BZh") && (b'1'..=b'9').contains(&h[3])
            };
            if !ok {
                return Err(Stop::Failed(invalid(
                    DecodeError::new(
                        "expected a bzip2 stream header (BZh1 to BZh9) after the previous stream",
                    )
                    .at_byte(header)
                    .with_hint("the file has trailing data or is damaged; check it with `bzip2 -t`"),
                )));
            }
            let level = self.buf[(header - self.base) as usize + 3] - b'0';
            self.send(Item::StreamStart { at: header })?;
            header = self.stream(header, level)?;
        }
    }

    /// Scans one stream whose header is at byte `header`; returns where the next may start.
    fn stream(&mut self, header: u64, level: u8) -> Result<u64, Stop> {
        let first = header * 8 + 32;
        let mut start = match self.magic_at(first)? {
            Some(Magic::Block) => first,
            Some(Magic::End) => {
                if !self.have((first + 80).div_ceil(8))? {
                    self.send(Item::Truncated { end: self.base + self.buf.len() as u64 })?;
                    return Err(Stop::Hungup);
                }
                let crc = self.bits(first + 48, 32) as u32;
                self.send(Item::StreamEnd { bit: first, crc })?;
                return Ok((first + 80).div_ceil(8));
            }
            None => {
                let end = self.base + self.buf.len() as u64;
                if end < (first + 48).div_ceil(8) {
                    self.send(Item::Truncated { end })?;
                    return Err(Stop::Hungup);
                }
                return Err(Stop::Failed(invalid(
                    DecodeError::new(
                        "a bzip2 stream header not followed by a block or an end-of-stream marker",
                    )
                    .at_byte(header),
                )));
            }
        };
        let mut from = start + 48;
        let limit = max_block_bytes(level) * 8;
        loop {
            match self.next_magic(from, start + limit)? {
                Some((bit, Magic::Block)) => {
                    self.emit(start, bit, level)?;
                    start = bit;
                    from = bit + 48;
                }
                Some((bit, Magic::End)) => {
                    let next = (bit + 80).div_ceil(8);
                    if !self.genuine_end(next)? {
                        from = bit + 1;
                        continue;
                    }
                    self.emit(start, bit, level)?;
                    let crc = self.bits(bit + 48, 32) as u32;
                    self.send(Item::StreamEnd { bit, crc })?;
                    self.discard_before(next);
                    return Ok(next);
                }
                None => {
                    let end = self.base + self.buf.len() as u64;
                    if self.eof {
                        // The input ends inside this stream: hand over what there is, so a
                        // block cut short is named, then say the stream is unfinished.
                        self.emit(start, end * 8, level)?;
                        self.send(Item::Truncated { end })?;
                        return Err(Stop::Hungup);
                    }
                    return Err(Stop::Failed(invalid(
                        DecodeError::new(format!(
                            "no bzip2 block boundary within {} bytes of the block that starts here; \
                             a block of level {level} takes at most that",
                            limit / 8
                        ))
                        .at_byte(start / 8)
                        .with_hint("the file is damaged; `bzip2recover` can save its intact blocks"),
                    )));
                }
            }
        }
    }

    /// Whether an end marker whose stream would end at byte `next` is real: the input ends
    /// there or another stream starts there.
    fn genuine_end(&mut self, next: u64) -> Result<bool, Stop> {
        if !self.have(next + 1)? {
            return self.have(next);
        }
        if !self.have(next + 10)? {
            return Ok(false);
        }
        let h = &self.buf[(next - self.base) as usize..][..4];
        if !(h.starts_with(b"BZh") && (b'1'..=b'9').contains(&h[3])) {
            return Ok(false);
        }
        Ok(self.magic_at(next * 8 + 32)?.is_some())
    }

    /// Hands the piece from bit `start` to bit `end` to a worker and its result to the reader.
    fn emit(&mut self, start: u64, end: u64, level: u8) -> Result<(), Stop> {
        let from = (start / 8 - self.base) as usize;
        let to = ((end.div_ceil(8) - self.base) as usize).min(self.buf.len());
        let piece = Piece { start, nbits: end - start, level, raw: self.buf[from..to].to_vec() };
        let (done, result) = mpsc::sync_channel(1);
        self.jobs.send(Job { piece, done }).map_err(|_| Stop::Hungup)?;
        self.send(Item::Block(result))?;
        self.discard_before(end / 8);
        Ok(())
    }

    /// The first magic at a bit offset >= `from`, reading input as needed, but not past bit
    /// `limit`; `None` at the end of the input or at the limit.
    fn next_magic(&mut self, mut from: u64, limit: u64) -> Result<Option<(u64, Magic)>, Stop> {
        loop {
            // Byte j (relative) is the first whole byte of candidates at bits 8j-7 ..= 8j.
            let rel_from = from - self.base * 8;
            let len = self.buf.len();
            let mut j = (rel_from / 8) as usize;
            // Every candidate checked needs bytes up to j+6 (rel); at the end of the input the
            // last ones are checked one by one below.
            let stop = len.saturating_sub(6);
            while j < stop {
                let key = u16::from_be_bytes([self.buf[j], self.buf[j + 1]]);
                if FILTER[usize::from(key >> 6)] & (1 << (key & 63)) != 0 {
                    let lo = (j as u64 * 8).saturating_sub(7).max(rel_from);
                    for bit in lo..=j as u64 * 8 {
                        match bits_at(&self.buf, bit, 48) {
                            BLOCK_MAGIC => return Ok(Some((self.base * 8 + bit, Magic::Block))),
                            EOS_MAGIC => return Ok(Some((self.base * 8 + bit, Magic::End))),
                            _ => {}
                        }
                    }
                }
                j += 1;
            }
            let scanned = self.base * 8 + (stop as u64 * 8).saturating_sub(7).max(rel_from);
            if scanned >= limit {
                return Ok(None);
            }
            from = scanned.max(from);
            if !self.fill()? {
                // The last few bytes: candidates whose 48 bits still fit.
                let end = (self.base + self.buf.len() as u64) * 8;
                let mut bit = from;
                while bit + 48 <= end {
                    match self.bits(bit, 48) {
                        BLOCK_MAGIC => return Ok(Some((bit, Magic::Block))),
                        EOS_MAGIC => return Ok(Some((bit, Magic::End))),
                        _ => bit += 1,
                    }
                }
                return Ok(None);
            }
        }
    }
}

/// The reading side: decoded blocks in order, with the stream CRC checked.
struct Blocks {
    items: Receiver<Item>,
    spares: Spares,
    peeked: Option<Item>,
    out: Vec<u8>,
    pos: usize,
    combined_crc: u32,
    stream_start: u64,
    finished: bool,
}

fn invalid(e: DecodeError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// A block's result from the worker that decoded it.
fn receive(rx: &Receiver<Decoded>) -> io::Result<Decoded> {
    rx.recv().map_err(|_| {
        invalid(DecodeError::new("a bzip2 decompression thread stopped before its block was done"))
    })
}

impl Blocks {
    fn next_item(&mut self) -> Item {
        match self.peeked.take() {
            Some(item) => item,
            None => self.items.recv().unwrap_or_else(|_| {
                Item::Failed(invalid(DecodeError::new(
                    "bzip2 decompression stopped before the end of the input",
                )))
            }),
        }
    }

    /// Takes the next item; false at the end of the input.
    fn advance(&mut self) -> io::Result<bool> {
        match self.next_item() {
            Item::Block(rx) => {
                let decoded = receive(&rx)?;
                let Decoded { piece, result } = decoded;
                match result {
                    Ok(data) => self.accept(&piece, data),
                    Err(why) => self.retry(piece, why)?,
                }
                Ok(true)
            }
            Item::StreamStart { at } => {
                self.stream_start = at;
                self.combined_crc = 0;
                Ok(true)
            }
            Item::StreamEnd { bit, crc } => {
                if crc != self.combined_crc {
                    return Err(invalid(
                        DecodeError::new(format!(
                            "the bzip2 stream that starts at byte {} has CRC {:08x} but its blocks make {:08x}",
                            self.stream_start, crc, self.combined_crc
                        ))
                        .at_byte(bit / 8),
                    ));
                }
                Ok(true)
            }
            Item::Truncated { end } => Err(truncated(self.stream_start, end)),
            Item::Failed(e) => Err(e),
            Item::End => Ok(false),
        }
    }

    fn accept(&mut self, piece: &Piece, data: Vec<u8>) {
        let crc = piece.block_crc().unwrap_or(0);
        self.combined_crc = self.combined_crc.rotate_left(1) ^ crc;
        let done = std::mem::replace(&mut self.out, data);
        self.spares.give(done);
        self.pos = 0;
    }

    /// A piece that did not decode: join the pieces after it one at a time and decode the
    /// whole on this thread, until it decodes or cannot be one block any more.
    fn retry(&mut self, first: Piece, why: String) -> io::Result<()> {
        let at = first.start;
        let limit = max_block_bytes(first.level) * 8;
        let mut joined = first;
        loop {
            match self.next_item() {
                Item::Block(rx) => {
                    let next = receive(&rx)?;
                    joined.join(&next.piece);
                    if joined.nbits > limit {
                        break;
                    }
                    if let Ok(data) = decode_piece(&joined) {
                        self.accept(&joined, data);
                        return Ok(());
                    }
                }
                Item::Truncated { end } => {
                    return Err(invalid(
                        DecodeError::new(format!(
                            "the bzip2 block that starts here (at bit {} of this compressed byte) is cut \
                             short: the data ends at byte {end} ({why})",
                            at % 8
                        ))
                        .at_byte(at / 8)
                        .with_hint("the file is truncated"),
                    ))
                }
                other => {
                    self.peeked = Some(other);
                    break;
                }
            }
        }
        Err(invalid(
            DecodeError::new(format!(
                "the bzip2 block that starts here (at bit {} of this compressed byte) is corrupt: {why}",
                at % 8
            ))
            .at_byte(at / 8)
            .with_hint("the file is damaged; `bzip2recover` can save its intact blocks"),
        ))
    }
}

fn truncated(stream_start: u64, end: u64) -> io::Error {
    invalid(
        DecodeError::new(format!(
            "the bzip2 data ends here, before the end-of-stream marker of the stream that starts at \
             byte {stream_start}"
        ))
        .at_byte(end)
        .with_hint("the file is truncated"),
    )
}

impl Read for Blocks {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Blocks {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos >= self.out.len() && !self.finished {
            match self.advance() {
                Ok(true) => {}
                Ok(false) => self.finished = true,
                Err(e) => {
                    self.finished = true;
                    self.out.clear();
                    self.pos = 0;
                    return Err(e);
                }
            }
        }
        Ok(&self.out[self.pos.min(self.out.len())..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos += amt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};

    struct BitWriter {
        bytes: Vec<u8>,
        nbits: u64,
    }

    impl BitWriter {
        /// Appends the low `n` (at most 64) bits of `value`, most significant first.
        fn push(&mut self, value: u64, n: u32) {
            for i in (0..n).rev() {
                let bit = (value >> i) & 1;
                let used = (self.nbits % 8) as u32;
                if used == 0 {
                    self.bytes.push(0);
                }
                if bit == 1 {
                    if let Some(last) = self.bytes.last_mut() {
                        *last |= 0x80 >> used;
                    }
                }
                self.nbits += 1;
            }
        }
    }

    fn compress(data: &[u8], level: u32) -> Vec<u8> {
        let mut w = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
        w.write_all(data).unwrap();
        w.finish().unwrap()
    }

    fn decompress(bytes: Vec<u8>, workers: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        decoder(Box::new(Cursor::new(bytes)), workers).read_to_end(&mut out)?;
        Ok(out)
    }

    /// Text that compresses like a profile but differs from block to block.
    fn varied(len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 64);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        while out.len() < len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            writeln!(out, "[ {}, {}, {} ],", x % 1000, (x >> 20) % 77, x >> 44).unwrap();
        }
        out.truncate(len);
        out
    }

    #[test]
    fn single_and_multi_block_streams_decode_in_order() {
        let data = varied(1_500_000);
        for level in [1, 9] {
            for workers in [1, 3] {
                assert_eq!(decompress(compress(&data, level), workers).unwrap(), data, "level {level}");
            }
        }
    }

    #[test]
    fn concatenated_streams_and_empty_streams() {
        let a = varied(300_000);
        let mut bytes = compress(&a, 1);
        bytes.extend(compress(b"", 9));
        bytes.extend(compress(b"x", 5));
        let mut expected = a.clone();
        expected.push(b'x');
        assert_eq!(decompress(bytes, 2).unwrap(), expected);
        assert_eq!(decompress(compress(b"", 9), 2).unwrap(), b"");
    }

    #[test]
    fn filter_admits_every_shift_of_both_magics() {
        for magic in [BLOCK_MAGIC, EOS_MAGIC] {
            for shift in 0..8u64 {
                let mut bytes = vec![0u8; 16];
                let v = (magic << 16) >> shift; // magic at bit `shift` of a 64-bit word
                bytes[..8].copy_from_slice(&v.to_be_bytes());
                assert_eq!(bits_at(&bytes, shift, 48), magic);
                let j = if shift == 0 { 0 } else { 1 };
                let key = u16::from_be_bytes([bytes[j], bytes[j + 1]]);
                assert!(FILTER[usize::from(key >> 6)] & (1 << (key & 63)) != 0, "shift {shift}");
            }
        }
    }

    /// One decoder, as a worker keeps it, decodes blocks of any level one after another, also
    /// after blocks that failed, and keeps its symbol table from one block to the next.
    #[test]
    fn a_decoder_reuses_its_memory_across_blocks_and_failures() {
        let one_block = |data: &[u8], level: u8| {
            let bytes = compress(data, u32::from(level));
            let end = (0..bytes.len() as u64 * 8 - 47)
                .rev()
                .find(|&b| bits_at(&bytes, b, 48) == EOS_MAGIC)
                .unwrap();
            Piece { start: 32, nbits: end - 32, level, raw: bytes[4..end.div_ceil(8) as usize].to_vec() }
        };
        let (a, b) = (varied(90_000), varied(700_000));
        let (small, large) = (one_block(&a, 1), one_block(&b, 9));
        let mut broken = one_block(&b, 9);
        let middle = broken.raw.len() / 2;
        broken.raw[middle] ^= 0x10;
        let mut decoder = BlockDecoder::default();
        let mut buffer = Vec::new();
        decoder.decode_piece(&large, Vec::new()).unwrap();
        let table = decoder.table_entries().1;
        for round in 0..3 {
            for (piece, expected) in
                [(&large, Some(&b)), (&small, Some(&a)), (&broken, None), (&large, Some(&b))]
            {
                match (decoder.decode_piece(piece, std::mem::take(&mut buffer)), expected) {
                    (Ok(out), Some(expected)) => {
                        assert_eq!(&out, expected, "round {round}");
                        buffer = out;
                        buffer.clear();
                    }
                    (Err(why), None) => assert!(!why.is_empty()),
                    (got, _) => panic!("round {round}: unexpected {:?}", got.map(|v| v.len())),
                }
            }
            // The table of the largest level met, never shrunk nor grown again.
            assert_eq!(decoder.table_entries(), (900_000, table), "round {round}");
        }
    }

    /// A block cut in two where a false magic would cut it is joined again and decodes.
    #[test]
    fn a_block_split_by_a_false_magic_is_joined_and_decoded() {
        let data = varied(200_000);
        let bytes = compress(&data, 9);
        // One block: it starts at bit 32; the end marker is the last 80 bits before padding.
        let end =
            (0..bytes.len() as u64 * 8 - 47).rev().find(|&b| bits_at(&bytes, b, 48) == EOS_MAGIC).unwrap();
        let stored_crc = bits_at(&bytes, end + 48, 32) as u32;
        let piece = |start: u64, stop: u64| Piece {
            start,
            nbits: stop - start,
            level: 9,
            raw: bytes[(start / 8) as usize..stop.div_ceil(8) as usize].to_vec(),
        };
        let (tx, rx) = mpsc::sync_channel(8);
        tx.send(Item::StreamStart { at: 0 }).unwrap();
        for (a, b) in [(32, 5000), (5000, 12345), (12345, end)] {
            let p = piece(a, b);
            let result = decode_piece(&p);
            assert!(result.is_err());
            let (dtx, drx) = mpsc::sync_channel(1);
            dtx.send(Decoded { piece: p, result }).unwrap();
            tx.send(Item::Block(drx)).unwrap();
        }
        tx.send(Item::StreamEnd { bit: end, crc: stored_crc }).unwrap();
        tx.send(Item::End).unwrap();
        let mut blocks = Blocks {
            items: rx,
            spares: Spares::default(),
            peeked: None,
            out: Vec::new(),
            pos: 0,
            combined_crc: 0,
            stream_start: 0,
            finished: false,
        };
        let mut out = Vec::new();
        blocks.read_to_end(&mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn flipped_bits_and_cut_files_are_errors_naming_a_place() {
        let data = varied(2_000_000);
        let bytes = compress(&data, 1);
        for at in [100, bytes.len() / 2, bytes.len() - 5] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            let err = decompress(bad, 2).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
            assert!(err.to_string().contains("byte"), "{err}");
            let found = err.get_ref().and_then(|e| e.downcast_ref::<DecodeError>()).expect("a DecodeError");
            let offset = found.offset.expect("a byte offset");
            assert!(offset <= at as u64 + 1, "{offset} names a byte past the flipped one at {at}");
        }
        for cut in [10, bytes.len() / 3, bytes.len() - 1] {
            let err = decompress(bytes[..cut].to_vec(), 2).unwrap_err();
            assert!(
                err.to_string().contains("truncated") || err.to_string().contains("ends at byte"),
                "{err}"
            );
        }
    }

    /// An end-of-stream magic inside a block, not followed by the end of the input or another
    /// stream, is taken for coded data: the block's piece runs on to the real end marker.
    #[test]
    fn a_false_end_marker_inside_a_block_is_passed_over() {
        let mut w = BitWriter { bytes: b"BZh9".to_vec(), nbits: 32 };
        w.push(BLOCK_MAGIC, 48);
        w.push(0x1234_5678, 32);
        for _ in 0..4 {
            w.push(0, 50);
        }
        w.push(EOS_MAGIC, 48); // false: block data follows
        w.push(0xdead_beef, 32);
        w.push(u64::MAX, 60);
        let real_end = w.nbits;
        w.push(EOS_MAGIC, 48);
        w.push(0x1234_5678, 32);
        let (items_tx, items) = mpsc::sync_channel(16);
        let (jobs_tx, jobs) = mpsc::sync_channel(16);
        let mut scanner = Scanner {
            raw: Box::new(Cursor::new(w.bytes)),
            buf: Vec::new(),
            base: 0,
            eof: false,
            items: items_tx,
            jobs: jobs_tx,
        };
        assert!(scanner.run().is_ok());
        drop(scanner);
        let pieces: Vec<(u64, u64)> = jobs.iter().map(|j| (j.piece.start, j.piece.nbits)).collect();
        assert_eq!(pieces, [(32, real_end - 32)]);
        let kinds: Vec<&str> = items
            .iter()
            .map(|i| match i {
                Item::StreamStart { .. } => "start",
                Item::Block(_) => "block",
                Item::StreamEnd { bit, crc } => {
                    assert_eq!((bit, crc), (real_end, 0x1234_5678));
                    "end"
                }
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["start", "block", "end"]);
    }

    /// Bytes read through it, counted where the test can see them.
    struct Counted(Cursor<Vec<u8>>, Arc<std::sync::atomic::AtomicU64>);

    impl Read for Counted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.read(buf)?;
            self.1.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(n)
        }
    }

    /// A reader that takes nothing holds the scanner back: it reads a few blocks ahead of the
    /// reading thread, not the whole input.
    #[test]
    fn a_slow_reader_bounds_what_is_read_ahead() {
        let mut x = 7u64;
        let data: Vec<u8> = (0..6_000_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let bytes = compress(&data, 1); // 60 blocks of about 100 kB: random bytes do not shrink
        let total = bytes.len() as u64;
        let read = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let raw = io::BufReader::new(Counted(Cursor::new(bytes), Arc::clone(&read)));
        let mut reader = decoder(Box::new(raw), 1);
        let mut first = [0u8; 16];
        reader.read_exact(&mut first).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        // In flight: the queues' 2 + 1 blocks, one decoding, one held by each end, and up to two
        // reads of READ_LEN by the scanner.
        let ahead = read.load(std::sync::atomic::Ordering::Relaxed);
        assert!(ahead < 6 * 110_000 + 2 * READ_LEN as u64 + 64 * 1024, "{ahead} of {total} bytes read ahead");
        assert!(ahead < total);
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        assert_eq!([&first[..], &rest].concat(), data);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]

        /// Random bytes of random sizes, mostly small, sometimes several blocks of level 1
        /// (random bytes barely compress: 250 kB is three blocks), at any level and worker count.
        #[test]
        fn random_data_decodes_to_itself(
            seed: u64,
            len in proptest::prop_oneof![8 => 0usize..4000, 1 => 150_000usize..250_000],
            level in 1u32..=9,
            workers in 1usize..=3,
        ) {
            let mut x = seed | 1;
            let data: Vec<u8> = (0..len)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Runs now and then, so bzip2's run-length stage is exercised too.
                    if (i / 64) % 5 == 0 { b'r' } else { x as u8 }
                })
                .collect();
            proptest::prop_assert_eq!(decompress(compress(&data, level), workers).unwrap(), data);
        }
    }
}
