//! Reading a DCPI binary profile: the ASCII header, then the chunks and the footer.
//!
//! The reader works on the whole (decompressed) file in memory. [`parse_header`] and
//! [`parse_body`] check every rule of dcpiformat(4) and give a view of the chunks that borrows
//! the input (no copy of the counts); [`read`] turns that view into the model. Every length in
//! the body is checked against the bytes actually left before anything is allocated from it.

use std::io::BufRead;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::format::ReadOptions;
use cfghub_model::error::{Error, Findings, Place, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{CostTable, Event, Image, Meta, Process, Profile};
use cfghub_model::mem::PageReleaser;

/// Bytes per sample slot when the user does not say: every Alpha instruction is 4 bytes.
pub(crate) const DEFAULT_STEP: u64 = 4;

/// Keys that must appear exactly once in the header.
pub(crate) const REQUIRED: [&str; 9] =
    ["version", "image", "epoch", "platform", "event", "period", "tstart", "tsize", "cpuspeed"];

/// The parsed ASCII header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Every header line before `samples`, in order, as `(key, value)`; the value is the rest
    /// of the line after the whitespace that follows the key, verbatim.
    pub lines: Vec<(String, String)>,
    /// `version pdb-MAJOR.MINOR`.
    pub version: (u64, u64),
    /// `event`: what was sampled.
    pub event: String,
    /// `period`: events per sample.
    pub period: u64,
    /// `tstart`: address of the image's text; chunk offsets are relative to it.
    pub tstart: u64,
    /// `tsize`: bytes of text.
    pub tsize: u64,
    /// The first `path` line: the image's file.
    pub path: Option<String>,
    /// Byte offset of the binary body: right after the `samples` line's newline.
    pub body_start: usize,
}

/// One chunk of the body: counts for `number` consecutive slots from `tstart + offset`.
#[derive(Clone, Copy, Debug)]
pub struct Chunk<'a> {
    /// Byte offset of the first slot from the header's `tstart`.
    pub offset: u32,
    /// The counts as stored: `4 * number` little-endian bytes.
    pub raw: &'a [u8],
    /// Byte offset of the chunk in the file.
    pub at: usize,
}

impl<'a> Chunk<'a> {
    /// Number of slots.
    pub fn len(&self) -> usize {
        self.raw.len() / 4
    }

    /// Whether the chunk has no slots.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The counts, in slot order.
    pub fn counts(&self) -> impl Iterator<Item = u32> + 'a {
        self.raw.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// The checked body.
#[derive(Clone, Debug)]
pub struct Body<'a> {
    /// The chunks, in increasing offset order, not overlapping.
    pub chunks: Vec<Chunk<'a>>,

    /// Footer: addresses with at least one sample.
    pub total_offsets: u32,
    /// Footer: sum of all counts (modulo 2^32, as the field is 32 bits).
    pub total_samples: u32,
    /// Total number of slots over all chunks.
    pub slots: usize,
    /// The true sum of all counts.
    pub sum: u64,
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn bad(at: usize, message: impl Into<String>) -> Error {
    Error::input(message).at_byte(at as u64)
}

fn hex(value: &str) -> Option<u64> {
    if value.is_empty() || value.len() > 16 || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(value, 16).ok()
}

fn dec(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// Parses `pdb-MAJOR.MINOR`.
pub(crate) fn parse_version(value: &str) -> Option<(u64, u64)> {
    let (major, minor) = value.strip_prefix("pdb-")?.split_once('.')?;
    Some((dec(major)?, dec(minor)?))
}

/// Parses the ASCII header up to and including the `samples` line.
///
/// Errors name the byte offset of the offending line: a line that is not `KEY VALUE`, a
/// malformed value, a required key missing or repeated, no `samples` line, or a major version
/// whose body is undocumented.
pub fn parse_header(data: &[u8], findings: &mut Findings) -> Result<Header> {
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut seen: [Option<usize>; 9] = [None; 9];
    let mut pos = 0usize;
    let mut version = None;
    let mut event = None;
    let mut period = None;
    let mut tstart = None;
    let mut tsize = None;
    let mut path = None;
    loop {
        if pos >= data.len() {
            return Err(bad(
                pos,
                "the header has no `samples` line: the file ends before the binary body starts",
            )
            .with_hint("a DCPI profile's header ends with a line `samples`"));
        }
        let Some(len) = memchr::memchr(b'\n', &data[pos..]) else {
            return Err(bad(pos, "the header has no `samples` line: the last line has no newline")
                .with_hint("a DCPI profile's header ends with a line `samples`"));
        };
        let line = &data[pos..pos + len];
        let next = pos + len + 1;
        let key_len = line.iter().position(|&b| is_space(b)).unwrap_or(line.len());
        let key = &line[..key_len];
        if key == b"samples" && line[key_len..].iter().all(|&b| is_space(b)) {
            let header = finish(lines, seen, version, event, period, tstart, tsize, path, next)?;
            if header.body_start % 4 != 0 {
                findings.warn(
                    Some(Place::Byte(header.body_start as u64)),
                    "the binary body does not start at a multiple of 4 bytes (dcpiformat(4) asks writers to pad the header)",
                );
            }
            return Ok(header);
        }
        let text = std::str::from_utf8(line).map_err(|_| {
            bad(pos, "expected a header line `KEY VALUE` or the `samples` line, found non-text bytes")
                .with_hint("the header must end with a line `samples` before the binary body")
        })?;
        let value_start = key_len + line[key_len..].iter().take_while(|&&b| is_space(b)).count();
        if key.is_empty() || key_len == line.len() || value_start == line.len() {
            return Err(bad(pos, format!("expected a header line `KEY VALUE` or `samples`, found {text:?}"))
                .with_hint("the header must end with a line `samples` before the binary body"));
        }
        let key = &text[..key_len];
        let value = &text[value_start..];
        if let Some(i) = REQUIRED.iter().position(|&r| r == key) {
            if let Some(first) = seen[i] {
                return Err(bad(pos, format!("`{key}` appears twice in the header (first at byte {first})"))
                    .with_hint("each of version, image, epoch, platform, event, period, tstart, tsize and cpuspeed appears exactly once"));
            }
            seen[i] = Some(pos);
        }
        let expect = |what: &str| bad(pos + value_start, format!("`{key}` expects {what}, found {value:?}"));
        match key {
            "version" => {
                let v = parse_version(value).ok_or_else(|| expect("pdb-MAJOR.MINOR"))?;
                if v.0 >= 1 {
                    return Err(bad(
                        pos + value_start,
                        format!(
                            "DCPI profile version {value}: the binary body of major version {} was never documented, so cfghub does not guess it",
                            v.0
                        ),
                    )
                    .with_hint("dump the profile with DCPI's own `dcpicat FILE > FILE.dcpicat.txt` and read the text dump"));
                }
                if v != (0, 6) && v != (0, 7) {
                    findings.warn(
                        Some(Place::Byte((pos + value_start) as u64)),
                        format!(
                            "version {value}: only 0.06 and 0.07 are documented; reading the body as theirs"
                        ),
                    );
                }
                version = Some(v);
            }
            "image" | "cpuamask" if !value.bytes().all(|b| b.is_ascii_hexdigit()) => {
                return Err(expect("hexadecimal digits"));
            }
            // dcpiformat(4) names YYMMDDHHMM and YYYYMMDDHHMMSS; real dumps show YYYYMMDDHHMM.
            "epoch" if !(10..=14).contains(&value.len()) || !value.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(expect("a time YYMMDDHHMM, YYYYMMDDHHMM or YYYYMMDDHHMMSS"));
            }
            "tstart" => tstart = Some(hex(value).ok_or_else(|| expect("a hexadecimal address"))?),
            "tsize" => tsize = Some(dec(value).ok_or_else(|| expect("a decimal size"))?),
            "period" => period = Some(dec(value).ok_or_else(|| expect("a decimal number"))?),
            "cpuspeed" | "cpuimplv" | "cpucount" => {
                dec(value).ok_or_else(|| expect("a decimal number"))?;
            }
            ADDRESS_STEP_KEY => {
                dec(value).filter(|&s| s > 0).ok_or_else(|| expect("a decimal step of at least 1 byte"))?;
            }
            "event" => event = Some(value.to_string()),
            "path" if path.is_none() => path = Some(value.to_string()),
            _ => {}
        }
        lines.push((key.to_string(), value.to_string()));
        pos = next;
    }
}

#[allow(clippy::too_many_arguments)]
fn finish(
    lines: Vec<(String, String)>,
    seen: [Option<usize>; 9],
    version: Option<(u64, u64)>,
    event: Option<String>,
    period: Option<u64>,
    tstart: Option<u64>,
    tsize: Option<u64>,
    path: Option<String>,
    body_start: usize,
) -> Result<Header> {
    let missing: Vec<&str> =
        REQUIRED.iter().zip(seen).filter(|(_, s)| s.is_none()).map(|(k, _)| *k).collect();
    if !missing.is_empty() {
        return Err(bad(
            body_start.saturating_sub(1),
            format!("the header ends without the required line(s): {}", missing.join(", ")),
        )
        .with_hint("each of version, image, epoch, platform, event, period, tstart, tsize and cpuspeed appears exactly once"));
    }
    // Every required key was seen, so every value below is present.
    let missing_value = || bad(body_start, "internal: a required header value was not recorded");
    Ok(Header {
        lines,
        version: version.ok_or_else(missing_value)?,
        event: event.ok_or_else(missing_value)?,
        period: period.ok_or_else(missing_value)?,
        tstart: tstart.ok_or_else(missing_value)?,
        tsize: tsize.ok_or_else(missing_value)?,
        path,
        body_start,
    })
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

/// The chunks of a body, their structure checked (counts not yet looked at).
struct Layout<'a> {
    chunks: Vec<Chunk<'a>>,
    slots: usize,
    /// Byte offset of the footer.
    footer: usize,
}

/// Walks the chunk headers of the body starting at `start`, checking every structural rule
/// (sizes, order, overlap) without reading the counts themselves.
fn layout(data: &[u8], start: usize, step: u64) -> Result<Layout<'_>> {
    let end = data.len();
    if end < start || end - start < 8 {
        return Err(bad(
            start,
            format!(
            "the body has {} byte(s); it needs at least the 8-byte footer (total addresses, total samples)",
            end.saturating_sub(start)
        ),
        ));
    }
    let footer = end - 8;
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut pos = start;
    let mut prev: Option<(u32, u64)> = None; // (offset, end offset)
    let mut slots = 0usize;
    while pos < footer {
        if footer - pos < 8 {
            return Err(bad(pos, format!(
                "{} byte(s) before the footer: too few for a chunk (offset, number, counts) and too many to be nothing",
                footer - pos
            )));
        }
        let offset = u32_at(data, pos);
        let number = u32_at(data, pos + 4) as usize;
        let left = footer - pos - 8;
        if number == 0 {
            return Err(bad(pos, "chunk with 0 counts (a chunk holds at least one count)"));
        }
        if number > left / 4 {
            return Err(bad(
                pos,
                format!(
                "chunk claims {number} counts ({} bytes) but only {left} bytes are left before the footer",
                number as u64 * 4
            ),
            )
            .with_hint("the file is truncated or not a DCPI profile"));
        }
        let chunk_end = (number as u64)
            .checked_mul(step)
            .and_then(|n| n.checked_add(offset as u64))
            .ok_or_else(|| {
                bad(
                    pos,
                    format!("chunk at offset {offset:#x}: {number} slots of {step} bytes reach past 2^64"),
                )
                .with_hint("give the right --address-step")
            })?;
        if let Some((prev_offset, prev_end)) = prev {
            if offset <= prev_offset {
                return Err(bad(pos, format!(
                    "chunk offset {offset:#x} does not come after the previous chunk's {prev_offset:#x} (chunks are in increasing offset order)"
                )));
            }
            if (offset as u64) < prev_end {
                return Err(bad(pos, format!(
                    "chunk at offset {offset:#x} overlaps the previous chunk, which covers up to {prev_end:#x} (with {step} bytes per count)"
                ))
                .with_hint("if the slots are not 4 bytes apart, give the right --address-step"));
            }
        }
        let raw = &data[pos + 8..pos + 8 + number * 4];
        chunks.push(Chunk { offset, raw, at: pos });
        slots += number;
        prev = Some((offset, chunk_end));
        pos += 8 + number * 4;
    }
    Ok(Layout { chunks, slots, footer })
}

/// Checks the footer against the number of non-zero counts and their sum, and makes the body.
fn check_footer<'a>(data: &[u8], layout: Layout<'a>, nonzero: u64, sum: u64) -> Result<Body<'a>> {
    let footer = layout.footer;
    let total_offsets = u32_at(data, footer);
    let total_samples = u32_at(data, footer + 4);
    if nonzero != total_offsets as u64 {
        return Err(bad(
            footer,
            format!("footer says {total_offsets} addresses have samples, the chunks have {nonzero}"),
        ));
    }
    if sum as u32 != total_samples {
        return Err(bad(
            footer + 4,
            format!("footer says {total_samples} samples in all, the chunks sum to {sum}"),
        ));
    }
    Ok(Body { chunks: layout.chunks, total_offsets, total_samples, slots: layout.slots, sum })
}

/// Parses and checks the body of a major-version-0 profile starting at `start`.
///
/// `step` is the number of bytes between consecutive slots, used to check that chunks do not
/// overlap. Errors give the byte offset of the chunk or footer concerned.
pub fn parse_body(data: &[u8], start: usize, step: u64) -> Result<Body<'_>> {
    let layout = layout(data, start, step)?;
    let (mut nonzero, mut sum) = (0u64, 0u64);
    for chunk in &layout.chunks {
        for c in chunk.counts() {
            nonzero += (c != 0) as u64;
            sum += c as u64;
        }
    }
    check_footer(data, layout, nonzero, sum)
}

/// The header line in which cfghub records a slot step other than Alpha's 4 bytes (the file
/// format has no field for it; dcpiformat(4) asks every tool to keep lines it does not know).
pub const ADDRESS_STEP_KEY: &str = "addressstep";

/// The slot step the options ask for, if any.
pub(crate) fn step_of(options: &ReadOptions) -> Result<Option<u64>> {
    match options.formats.get::<super::Options>().address_step {
        Some(0) => Err(Error::usage("the address step must be at least 1 byte")),
        asked => Ok(asked),
    }
}

/// Reads a DCPI binary profile (major version 0) into the model: one process (pid 0; DCPI
/// aggregates every process that ran the image), one image at `tstart` of `tsize` bytes, one
/// event, and one cost per slot (zero counts inside a chunk included, so that writing back is
/// exact).
pub fn read(input: &mut Source<'_>, options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    let step = step_of(options)?;
    // The header is text: a stream is read under the line limit.
    let (data, pages) = input.limit_lines().bytes_releasable()?;
    read_releasing(data, step, findings, pages)
}

/// The whole input, reserved at once when its size is known; a failure names no file, so that
/// the caller's file name is used.
pub fn read_all(input: &mut dyn BufRead, size_hint: Option<u64>) -> Result<Vec<u8>> {
    cfghub_model::io::read_whole(input, size_hint)
}

/// Writes the offsets and counts of slots `first..first + offsets.len()`, which lie in
/// `chunks` (`starts` holds the first slot of each chunk).
fn fill_slots(
    chunks: &[Chunk],
    starts: &[usize],
    first: usize,
    offsets: &mut [u64],
    counts: &mut [u64],
    step: u64,
) {
    if offsets.is_empty() {
        return;
    }
    let mut k = starts.partition_point(|&s| s <= first) - 1;
    let mut skip = first - starts[k];
    let mut at = 0;
    while at < offsets.len() {
        let chunk = &chunks[k];
        let n = (chunk.len() - skip).min(offsets.len() - at);
        for (slot, count) in counts[at..at + n].iter_mut().zip(chunk.counts().skip(skip)) {
            *slot = u64::from(count);
        }
        let base = chunk.offset as u64 + skip as u64 * step;
        for (i, slot) in offsets[at..at + n].iter_mut().enumerate() {
            *slot = base + i as u64 * step;
        }
        at += n;
        k += 1;
        skip = 0;
    }
}

/// [`read`] over bytes in memory.
pub fn from_bytes(data: &[u8], step: u64, findings: &mut Findings) -> Result<Profile> {
    read_releasing(data, Some(step), findings, PageReleaser::none())
}

/// [`from_bytes`], handing the pages of a mapped file's counts back to the system (`pages`)
/// as they are packed: the model's columns then take the place of the file's bytes instead of
/// adding to them (a 10 MB profile without symbols, 2.5 million slots, peaked at 30.3 MiB
/// read, 3.0x the file, with every page of the file held to the end).
fn read_releasing(
    data: &[u8],
    asked: Option<u64>,
    findings: &mut Findings,
    pages: PageReleaser,
) -> Result<Profile> {
    let header = parse_header(data, findings)?;
    // `--address-step`, else the step the file records (checked by the header's parse), else
    // Alpha's.
    let recorded =
        header.lines.iter().find(|(k, _)| k == ADDRESS_STEP_KEY).and_then(|(_, v)| v.trim().parse().ok());
    let step = asked.or(recorded).unwrap_or(DEFAULT_STEP);
    let layout = layout(data, header.body_start, step)?;
    if let Some(last) = layout.chunks.last() {
        // Offsets are relative to tstart: the last slot's address must be a 64-bit address.
        let last_offset = last.offset as u64 + (last.len() as u64 - 1) * step;
        if header.tstart.checked_add(last_offset).is_none() {
            return Err(bad(
                last.at,
                format!(
                    "chunk at offset {:#x}: its last slot, tstart {:#x} + {last_offset:#x}, lies past the 64-bit address space",
                    last.offset, header.tstart
                ),
            )
            .with_hint("tstart or the chunk offsets are damaged"));
        }
    }
    // The model's sample columns (offsets and counts), packed on every core, and the footer's
    // totals.
    let starts: Vec<usize> = layout
        .chunks
        .iter()
        .scan(0, |at, c| {
            let first = *at;
            *at += c.len();
            Some(first)
        })
        .collect();
    let (nonzero, sum) = (AtomicU64::new(0), AtomicU64::new(0));
    // Where slot `slot`'s count is in the file (the end of the last chunk for the slot past
    // the last).
    let byte_of = |slot: usize| match starts.partition_point(|&s| s <= slot).checked_sub(1) {
        Some(k) if slot - starts[k] < layout.chunks[k].len() => {
            layout.chunks[k].at + 8 + 4 * (slot - starts[k])
        }
        _ => layout.chunks.last().map_or(0, |c| c.at + 8 + c.raw.len()),
    };
    let costs = CostTable::from_samples_with(layout.slots, |first, offsets, counts| {
        fill_slots(&layout.chunks, &starts, first, offsets, counts, step);
        // Parts (at most a kilobyte of counts) are packed in order on each thread: where a
        // part crosses a mebibyte of the file, the two mebibytes before are done with (a
        // release per part cost more system time than the reading).
        let (start, end) = (byte_of(first) >> 20, byte_of(first + offsets.len()) >> 20);
        if start != end {
            pages.release((end << 20).saturating_sub(2 << 20)..end << 20);
        }
        let (n, s) = counts.iter().fold((0, 0), |(n, s), &c| (n + (c != 0) as u64, s + c));
        nonzero.fetch_add(n, Ordering::Relaxed);
        sum.fetch_add(s, Ordering::Relaxed);
    });
    let (nonzero, sum) = (nonzero.into_inner(), sum.into_inner());
    let body = check_footer(data, layout, nonzero, sum)?;
    if body.total_samples as u64 != body.sum {
        findings.warn(
            Some(Place::Byte((data.len() - 4) as u64)),
            "the samples add up to more than 2^32; the footer holds their sum modulo 2^32",
        );
    }
    let mut profile = Profile {
        meta: Meta {
            format_version: Some(header.version),
            headers: header.lines,
            address_step: Some(step),
            ..Meta::default()
        },
        events: vec![Event::new(header.event)],
        ..Profile::default()
    };
    let file = header.path.as_deref().map(|p| profile.files.intern(p));
    let image = Image { file, load_addr: header.tstart, size: Some(header.tsize), costs, ..Image::default() };
    profile.processes.push(Process { images: vec![image], ..Process::default() });
    Ok(profile)
}
