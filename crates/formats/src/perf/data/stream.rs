//! The records as the parser is handed them: one at a time, in file order, as `perf report`
//! would take them, with what would make a hostile file costly taken out first.
//!
//! The parser (`linux-perf-data`) reads the file through a [`Read`] + [`Seek`] cursor. This
//! cursor serves it the file's own bytes everywhere but in the records, where it serves each
//! record whole, one after the other, and:
//!
//! - **unpacks `COMPRESSED` records itself** (`perf record -z`: one zstd stream across the
//!   records, each record a part of it), a megabyte at a time, and hands on the records inside
//!   them. One record unpacks to at most the recording's mmap size, as `perf report` sizes
//!   its own buffer from the `HEADER_COMPRESSED` feature ([`UNSTATED_MMAP`] when the feature
//!   is missing), and all of them to at most [`MOST_RATIO`] times the compressed bytes (perf
//!   reaches about 10 at its default level), so a few kilobytes of zstd never become
//!   gigabytes of records;
//! - **leaves out records of types perf does not define**, inside compressed records too
//!   (counted for the warning), before the parser would hold them for sorting;
//! - **ends a round** (`FINISHED_ROUND`) after [`ROUND_RECORDS`] records or [`ROUND_BYTES`]
//!   bytes without one: the parser holds every record of a round (about 110 bytes each beside
//!   the record) to sort them by time; perf writes a round at each pass over its buffers,
//!   far fewer records than these;
//! - says **where** the record being read lies ([`Seen::place`]), for errors.
//!
//! In the file layout the parser reads the data section's size from the header and the
//! feature table after the data; as unpacking makes the records longer than the section,
//! the header it is served states a data section of [`STREAMED_DATA`] bytes, and what lies
//! after the data (the feature table, the sections it points to) is served that much further
//! on. The records end where the file's do: two rounds end there, so that the parser hands
//! on every record it holds, and the end of the input it then meets ends the reading
//! ([`Seen::finished`]).

use std::cell::{Cell, RefCell};
use std::io::{Read, Seek, SeekFrom};
use std::rc::Rc;

use cfghub_model::error::{Error, Result};
use cfghub_model::mem::PageReleaser;
use zstd_safe::{DCtx, InBuffer, OutBuffer};

use super::layout::{self, Kind, Layout, Order};

/// `PERF_RECORD_FINISHED_ROUND`: the records before it may be sorted and handed on.
const FINISHED_ROUND: u32 = 68;
/// The record the cursor adds to end a round: the 8-byte header alone.
const ROUND_RECORD: [u8; 8] = [68, 0, 0, 0, 0, 0, 8, 0];
/// Records in a round past which the cursor ends it.
pub(crate) const ROUND_RECORDS: u64 = 1 << 18;
/// Bytes of records in a round past which the cursor ends it.
pub(crate) const ROUND_BYTES: u64 = 64 << 20;
/// The most one compressed record unpacks to when the recording states no mmap size.
pub(crate) const UNSTATED_MMAP: u64 = 64 << 20;
/// The most all compressed records unpack to, per compressed byte (beyond [`UNPACK_SLACK`]).
pub(crate) const MOST_RATIO: u64 = 1024;
/// What all compressed records may unpack to beside [`MOST_RATIO`] times their bytes.
const UNPACK_SLACK: u64 = 64 << 20;
/// The data section's size as the parser is told it in the file layout: more than any
/// records unpack to, with room for the file after it in 64 bits.
pub(crate) const STREAMED_DATA: u64 = 1 << 62;
/// Output made per call of the decompressor.
const UNPACK_STEP: usize = 1 << 20;
/// The most bytes of the file served as one chunk: the pages of a chunk are read in when it
/// is made, and handed back only after it.
const RUN_BYTES: usize = 1 << 20;
/// Pages behind the reader are handed back this many bytes at a time.
const RELEASE_STEP: usize = 8 << 20;

/// Where the record being read lies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Place {
    /// Before the records: the header, attributes or features, at this byte of the file.
    #[default]
    Start,
    /// At this byte of the file.
    Header(u64),
    /// The record at this byte of the file.
    Record(u64),
    /// Inside what the compressed record at byte `record` unpacks to, at byte `at` of the
    /// unpacked stream (which runs across the compressed records).
    Unpacked { record: u64, at: u64 },
}

/// What the cursor saw, for the reader's errors and warnings.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// The records being read (or the last ones).
    pub place: Rc<Cell<Place>>,
    /// Records of undefined types inside compressed records: `(type, count, offset of the
    /// compressed record that holds the first)`.
    pub unknown: Vec<(u32, u64, u64)>,
    /// Bytes unpacked from compressed records.
    pub unpacked: u64,
    /// Bytes at the end of the unpacked stream that make no whole record.
    pub cut_off: u64,
    /// Every record has been served: in the file layout, the end of input the parser meets
    /// next is the end of the records.
    pub finished: bool,
    /// Why the cursor stopped, where it was then: a fault of the file it found itself.
    pub fault: Option<(Place, String)>,
}

impl Seen {
    /// The error for a parser's failure `e`: the cursor's own fault if it stopped, else the
    /// parser's message, both at their place.
    pub fn error(&self, e: impl std::fmt::Display) -> Error {
        let (place, message) = match &self.fault {
            Some((place, message)) => (*place, message.clone()),
            None => {
                let place = self.place.get();
                let what = match place {
                    Place::Start | Place::Header(_) => "header, attributes or features",
                    Place::Record(_) | Place::Unpacked { .. } => "records",
                };
                (place, format!("the perf.data {what} cannot be read: {e}"))
            }
        };
        let error = match place {
            Place::Start => Error::input(message),
            Place::Header(at) | Place::Record(at) => Error::input(message).at_byte(at),
            Place::Unpacked { record, at } => Error::input(format!(
                "{message} (in the compressed record at this offset, at byte {at} of the records the compressed records hold)"
            ))
            .at_byte(record),
        };
        error.with_hint(
            "the file may be damaged; `perf report --header-only -i FILE` shows what perf makes of it",
        )
    }
}

/// The part of the records served next.
#[derive(Clone, Copy, Debug)]
enum Chunk {
    /// Bytes `[at, end)` of the file.
    File { at: usize, end: usize },
    /// Bytes `[at, end)` of the unpacked buffer.
    Unpacked { at: usize, end: usize },
    /// The round record, from byte `at`.
    Round { at: usize },
}

/// A compressed record being unpacked.
#[derive(Clone, Copy, Debug)]
struct Unpacking {
    /// The record's offset in the file.
    record: u64,
    /// Its zstd bytes: `[at, end)` of the file, `at` moving as they are read.
    at: usize,
    end: usize,
    /// Bytes it has unpacked to.
    produced: u64,
    /// The decompressor may still hold output: it filled its last output buffer.
    more: bool,
}

/// The cursor: see the module's documentation.
pub(crate) struct RecordStream<'a> {
    bytes: &'a [u8],
    order: Order,
    /// Served in place of the file's first bytes.
    header: Vec<u8>,
    /// Served in place of the feature table (file layout), at `after`.
    table: Vec<u8>,
    /// The records in the file: `[start, end)`.
    records: (u64, u64),
    /// Where the records start and what follows them starts, as the parser sees the file.
    start: u64,
    after: u64,
    /// What is added to a file offset after the records to give the parser's.
    shift: u64,
    /// The parser's position, and how far the records have been served.
    at: u64,
    streamed: u64,
    /// The next record in the file.
    next: u64,
    chunk: Option<Chunk>,
    /// Records and bytes since the last round.
    round: (u64, u64),
    rounds_due: u8,
    ended: bool,
    dctx: Option<DCtx<'static>>,
    unpacking: Option<Unpacking>,
    /// Unpacked bytes not yet served: from `out_at`; `out_base` is the unpacked stream's
    /// offset of `out[0]`.
    out: Vec<u8>,
    out_at: usize,
    out_base: u64,
    scratch: Vec<u8>,
    per_record: u64,
    total_limit: u64,
    released: usize,
    pages: PageReleaser<'a>,
    /// Where the records served last lie (shared with [`Seen::place`]).
    place: Rc<Cell<Place>>,
    seen: Rc<RefCell<Seen>>,
}

impl<'a> RecordStream<'a> {
    /// The cursor over the file `bytes` whose frame `frame` gives, handing pages behind the
    /// records read back through `pages`; what it sees is told in the returned [`Seen`].
    pub fn new(
        bytes: &'a [u8],
        frame: &Layout,
        pages: PageReleaser<'a>,
    ) -> Result<(Self, Rc<RefCell<Seen>>)> {
        let order = frame.order;
        let (data_start, data_end) = frame.records;
        let (start, after, shift, header, table) = match frame.kind {
            Kind::Pipe => (data_start, u64::MAX, 0, Vec::new(), Vec::new()),
            Kind::File => {
                let mut header =
                    frame.patched_header.clone().unwrap_or_else(|| bytes[..layout::HEADER_LEN].to_vec());
                let after = data_start + STREAMED_DATA;
                let shift = after - data_end;
                let put = |header: &mut Vec<u8>, at: usize, value: u64| {
                    header[at..at + 8].copy_from_slice(&match order {
                        Order::Little => value.to_le_bytes(),
                        Order::Big => value.to_be_bytes(),
                    });
                };
                // Sections after the records move with them; none may lie inside them.
                let moved = |offset: u64, size: u64, what: &str, at: u64| -> Result<u64> {
                    if size == 0 || offset.saturating_add(size) <= data_start {
                        Ok(offset)
                    } else if offset >= data_end {
                        Ok(offset + shift)
                    } else {
                        Err(Error::input(format!(
                            "the {what} (offset {offset}, size {size}) lies inside the records (bytes {data_start} to {data_end})"
                        ))
                        .at_byte(at))
                    }
                };
                for (at, what) in [(24usize, "attribute section"), (56, "event types section")] {
                    let offset = order.u64(&header[at..]);
                    let size = order.u64(&header[at + 8..]);
                    put(&mut header, at, moved(offset, size, what, at as u64)?);
                }
                put(&mut header, 48, STREAMED_DATA);
                let features: u32 = (0..4).map(|w| order.u64(&header[72 + w * 8..]).count_ones()).sum();
                let mut table = bytes[data_end as usize..data_end as usize + 16 * features as usize].to_vec();
                for entry in 0..features as usize {
                    let offset = order.u64(&table[entry * 16..]);
                    let size = order.u64(&table[entry * 16 + 8..]);
                    let at = data_end + entry as u64 * 16;
                    put(&mut table, entry * 16, moved(offset, size, "a feature section", at)?);
                }
                (data_start, after, shift, header, table)
            }
        };
        let per_record = frame.compressed_mmap_len.map_or(UNSTATED_MMAP, |n| n.max(1));
        let total_limit = frame.compressed_bytes.saturating_mul(MOST_RATIO).saturating_add(UNPACK_SLACK);
        let seen = Rc::new(RefCell::new(Seen::default()));
        let place = Rc::clone(&seen.borrow().place);
        let stream = RecordStream {
            bytes,
            order,
            header,
            table,
            records: frame.records,
            start,
            after,
            shift,
            at: 0,
            streamed: start,
            next: data_start,
            chunk: None,
            round: (0, 0),
            rounds_due: 0,
            ended: false,
            dctx: None,
            unpacking: None,
            out: Vec::new(),
            out_at: 0,
            out_base: 0,
            scratch: Vec::new(),
            per_record,
            total_limit,
            released: 0,
            pages,
            place,
            seen: Rc::clone(&seen),
        };
        Ok((stream, seen))
    }

    /// Stops with `message` at `place`: the parser is handed an error, the reader finds why
    /// in [`Seen::fault`].
    fn fault(&mut self, place: Place, message: String) -> std::io::Error {
        let error = std::io::Error::new(std::io::ErrorKind::InvalidData, message.clone());
        self.seen.borrow_mut().fault = Some((place, message));
        error
    }

    /// Copies what is left of the current chunk into `buf`.
    fn serve(&mut self, buf: &mut [u8]) -> usize {
        let Some(chunk) = self.chunk.as_mut() else { return 0 };
        let (source, at): (&[u8], &mut usize) = match chunk {
            Chunk::File { at, end } => (&self.bytes[..*end], at),
            Chunk::Unpacked { at, end } => (&self.out[..*end], at),
            Chunk::Round { at } => (&ROUND_RECORD[..], at),
        };
        let n = (source.len() - *at).min(buf.len());
        buf[..n].copy_from_slice(&source[*at..*at + n]);
        *at += n;
        if n == 0 {
            self.chunk = None;
        }
        n
    }

    /// Counts a record served into the round, and ends the round after it when it is full.
    fn count(&mut self, kind: u32, size: u64) {
        if kind == FINISHED_ROUND {
            self.round = (0, 0);
            return;
        }
        self.round = (self.round.0 + 1, self.round.1 + size);
        if self.round.0 >= ROUND_RECORDS || self.round.1 >= ROUND_BYTES {
            self.rounds_due = 1;
        }
    }

    /// Makes the next chunk; `false` at the end of the records.
    fn next_chunk(&mut self) -> std::io::Result<bool> {
        loop {
            if self.rounds_due > 0 {
                self.rounds_due -= 1;
                self.round = (0, 0);
                self.chunk = Some(Chunk::Round { at: 0 });
                return Ok(true);
            }
            if self.unpacking.is_some() {
                if let Some((at, end)) = self.take_unpacked()? {
                    self.chunk = Some(Chunk::Unpacked { at, end });
                    return Ok(true);
                }
                if !self.unpack_more()? {
                    self.unpacking = None;
                }
                continue;
            }
            if self.next >= self.records.1 {
                if !self.ended {
                    self.ended = true;
                    if self.after != u64::MAX {
                        self.rounds_due = 2;
                        continue;
                    }
                }
                let mut seen = self.seen.borrow_mut();
                seen.finished = true;
                seen.cut_off = (self.out.len() - self.out_at) as u64;
                return Ok(false);
            }
            // A run of records served as they are, up to one that is not or the end of a round.
            let mut run = self.next as usize;
            let mut run_end = run;
            while self.next < self.records.1 && self.rounds_due == 0 && run_end - run < RUN_BYTES {
                let at = self.next as usize;
                let kind = self.order.u32(&self.bytes[at..]);
                let size = u64::from(self.order.u16(&self.bytes[at + 6..]));
                let mut end = self.next + size;
                if kind == layout::AUXTRACE && size >= 16 {
                    // Checked by the layout walk: the trace lies inside the records.
                    end += self.order.u64(&self.bytes[at + 8..]);
                }
                let compressed = kind == layout::COMPRESSED || kind == layout::COMPRESSED2;
                if layout::is_known_type(kind) && !compressed {
                    self.next = end;
                    run_end = end as usize;
                    self.count(kind, end - at as u64);
                    continue;
                }
                if run_end > run {
                    break;
                }
                self.place.set(Place::Record(at as u64));
                self.next = end;
                if !compressed {
                    // Of an undefined type: left out (the layout walk counted it).
                    run = end as usize;
                    run_end = run;
                    continue;
                }
                self.release_before(at);
                let body = at + 8..end as usize;
                let zstd = if kind == layout::COMPRESSED2 {
                    // `u64 data_size`, then the zstd bytes, then padding to 8 bytes.
                    let stated =
                        if body.len() >= 8 { self.order.u64(&self.bytes[body.start..]) } else { u64::MAX };
                    if stated > body.len().saturating_sub(8) as u64 {
                        let place = Place::Record(at as u64);
                        return Err(self.fault(
                            place,
                            format!(
                                "a COMPRESSED2 record states {stated} bytes of compressed data in a body of {} bytes",
                                body.len()
                            ),
                        ));
                    }
                    body.start + 8..body.start + 8 + stated as usize
                } else {
                    body
                };
                self.unpacking = Some(Unpacking {
                    record: at as u64,
                    at: zstd.start,
                    end: zstd.end,
                    produced: 0,
                    more: false,
                });
                break;
            }
            if run_end > run {
                self.place.set(Place::Record(run as u64));
                self.release_before(run);
                self.chunk = Some(Chunk::File { at: run, end: run_end });
                return Ok(true);
            }
        }
    }

    /// The next whole records in the unpacked bytes, up to one of an undefined type or the end
    /// of a round; those of undefined types are left out.
    fn take_unpacked(&mut self) -> std::io::Result<Option<(usize, usize)>> {
        let record = self.unpacking.map_or(0, |u| u.record);
        let mut run = self.out_at;
        while self.rounds_due == 0 {
            let rest = &self.out[self.out_at..];
            if rest.len() < 8 {
                break;
            }
            let kind = self.order.u32(rest);
            let size = usize::from(self.order.u16(&rest[6..]));
            let place = Place::Unpacked { record, at: self.out_base + self.out_at as u64 };
            if size < 8 {
                self.place.set(place);
                return Err(self.fault(
                    place,
                    format!("a record of type {kind} states its size as {size}, less than its header"),
                ));
            }
            if rest.len() < size {
                break;
            }
            if layout::is_known_type(kind) {
                self.out_at += size;
                self.count(kind, size as u64);
                continue;
            }
            if self.out_at > run {
                break;
            }
            self.out_at += size;
            run = self.out_at;
            let mut seen = self.seen.borrow_mut();
            match seen.unknown.iter_mut().find(|u| u.0 == kind) {
                Some(u) => u.1 += 1,
                None => seen.unknown.push((kind, 1, record)),
            }
        }
        if self.out_at > run {
            self.place.set(Place::Unpacked { record, at: self.out_base + run as u64 });
            return Ok(Some((run, self.out_at)));
        }
        Ok(None)
    }

    /// Unpacks more of the current compressed record; `false` when it has no more.
    fn unpack_more(&mut self) -> std::io::Result<bool> {
        let Some(mut u) = self.unpacking else { return Ok(false) };
        if u.at >= u.end && !u.more {
            return Ok(false);
        }
        // What was served is dropped; a record cut off stays for the next part.
        self.out.drain(..self.out_at);
        self.out_base += self.out_at as u64;
        self.out_at = 0;
        if self.scratch.is_empty() {
            self.scratch = vec![0; UNPACK_STEP];
        }
        let dctx = self.dctx.get_or_insert_with(DCtx::create);
        let mut input = InBuffer::around(&self.bytes[u.at..u.end]);
        let mut output = OutBuffer::around(&mut self.scratch[..]);
        let result = dctx.decompress_stream(&mut output, &mut input);
        let (made, read) = (output.pos(), input.pos());
        let place = Place::Record(u.record);
        if let Err(code) = result {
            let name = zstd_safe::get_error_name(code);
            return Err(
                self.fault(place, format!("the compressed record's zstd data cannot be unpacked: {name}"))
            );
        }
        u.at += read;
        u.more = made == UNPACK_STEP;
        u.produced += made as u64;
        let total = {
            let mut seen = self.seen.borrow_mut();
            seen.unpacked += made as u64;
            seen.unpacked
        };
        if u.produced > self.per_record {
            let limit = self.per_record;
            return Err(self.fault(
                place,
                format!(
                    "the compressed record unpacks to more than {limit} bytes, the most one holds \
                     (the recording's mmap size, as perf reads it)"
                ),
            ));
        }
        if total > self.total_limit {
            let limit = self.total_limit;
            return Err(self.fault(
                place,
                format!(
                    "the compressed records unpack to more than {limit} bytes, over {MOST_RATIO} times their size: a zstd bomb?"
                ),
            ));
        }
        self.out.extend_from_slice(&self.scratch[..made]);
        self.unpacking = Some(u);
        Ok(made > 0 || read > 0)
    }

    /// Hands back the pages before byte `at` of the file, a few megabytes at a time.
    fn release_before(&mut self, at: usize) {
        if at >= self.released + RELEASE_STEP {
            let upto = at / RELEASE_STEP * RELEASE_STEP;
            self.pages.release(self.released..upto);
            self.released = upto;
        }
    }

    /// Reads outside the records: the file's bytes, or the patched header and feature table.
    fn read_outside(&mut self, buf: &mut [u8]) -> usize {
        let (real, overlay, limit): (u64, &[u8], u64) = if self.at < self.start {
            (self.at, self.header.get(self.at as usize..).unwrap_or_default(), self.start - self.at)
        } else {
            let real = self.at - self.shift;
            let table = (self.at - self.after) as usize;
            (real, self.table.get(table..).unwrap_or_default(), u64::MAX)
        };
        self.place.set(Place::Header(real));
        let source: &[u8] = if !overlay.is_empty() {
            overlay
        } else {
            usize::try_from(real).ok().and_then(|r| self.bytes.get(r..)).unwrap_or_default()
        };
        let n = source.len().min(buf.len()).min(usize::try_from(limit).unwrap_or(usize::MAX));
        buf[..n].copy_from_slice(&source[..n]);
        n
    }
}

impl Read for RecordStream<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // The parser reads each record's header a field at a time, then its body: most reads
        // are a few bytes of the chunk being served.
        if self.at == self.streamed {
            if let Some(chunk) = &mut self.chunk {
                let (source, at): (&[u8], &mut usize) = match chunk {
                    Chunk::File { at, end } => (&self.bytes[..*end], at),
                    Chunk::Unpacked { at, end } => (&self.out[..*end], at),
                    Chunk::Round { at } => (&ROUND_RECORD[..], at),
                };
                let n = (source.len() - *at).min(buf.len());
                if n > 0 {
                    buf[..n].copy_from_slice(&source[*at..*at + n]);
                    *at += n;
                    self.at += n as u64;
                    self.streamed += n as u64;
                    return Ok(n);
                }
            }
        }
        if buf.is_empty() {
            return Ok(0);
        }
        if self.at < self.start || self.at >= self.after {
            let n = self.read_outside(buf);
            self.at += n as u64;
            return Ok(n);
        }
        if self.at != self.streamed {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the records are read in order",
            ));
        }
        loop {
            let n = self.serve(buf);
            if n > 0 {
                self.at += n as u64;
                self.streamed += n as u64;
                return Ok(n);
            }
            if !self.next_chunk()? {
                return Ok(0);
            }
        }
    }
}

impl Seek for RecordStream<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let at = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.at.checked_add_signed(d),
            SeekFrom::End(d) => (self.bytes.len() as u64).checked_add_signed(d),
        };
        self.at =
            at.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.at)
    }
}
