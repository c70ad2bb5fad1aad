//! Reading profile.proto into the model.
//!
//! The fields of `Profile` may come in any order (Go writes the string table last), so the
//! reader takes two passes over the top-level message: the first decodes everything but the
//! samples and notes where runs of samples lie, the second turns samples into stacks once
//! functions and locations are known. Nothing is allocated from a count in the input: every
//! length is checked against the bytes left ([`super::wire`]).
//!
//! What the reader keeps is bounded by what the input really holds, not by what it repeats:
//! - samples with the same locations and labels are one stack whose values are summed, as
//!   pprof itself merges them (dense profiles of tiny samples cost their distinct stacks);
//! - a location's inline chain is expanded into every stack that names it, up to
//!   [`FRAMES_PER_BYTE`] frames a byte of input in all (at least [`MIN_FRAME_BUDGET`]): a
//!   profile that claims more is refused, naming the sample that passed the limit;
//! - the string table is kept as offsets into the input; labels other than numeric `thread`
//!   and `pid` ones are counted, not kept; at most [`MAX_COMMENTS`] comments and
//!   [`MAX_IMAGES`] mappings become headers and images (the rest are counted, with a warning);
//! - a stream (a `.pb.gz`) is checked field by field as it is inflated, so that bytes that
//!   cannot be profile.proto are refused at the first of them, not after holding them all.

use std::collections::HashMap;

use super::wire::{Cursor, FIXED32, FIXED64, LEN, VARINT};
use super::{keys, PID_LABEL, THREAD_LABEL};
use crate::format::ReadOptions;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{
    Event, FrameAddress, FrameId, FrameSource, Image, Label, LabelValue, Process, Profile, StackValue,
    Stacks, NO_INDEX,
};

const HINT: &str = "expected a pprof profile.proto (gzip-compressed or raw), as written by \
                    runtime/pprof, `go tool pprof -proto` or `perf_to_profile`";

/// Frames that stacks may hold in all, per byte of input: inline chains multiply a location's
/// lines by the samples naming it, which no sampler makes thousands of times over.
pub(crate) const FRAMES_PER_BYTE: u64 = 16;
/// Frames that stacks may hold in all whatever the input's size (64 MiB of frame ids).
pub(crate) const MIN_FRAME_BUDGET: u64 = 1 << 24;
/// Comments kept as headers; more are counted and dropped with a warning.
pub(crate) const MAX_COMMENTS: usize = 4096;
/// Mappings kept as images; more are counted (their ids still checked) and dropped with a
/// warning. A process maps a few thousand files at most.
pub(crate) const MAX_IMAGES: usize = 8192;

/// Reads a whole pprof input (decompressed already by [`cfghub_model::io`]).
pub fn read(input: &mut Source<'_>, _options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    if input.is_file() {
        return read_bytes(input.bytes()?, findings);
    }
    // A stream (decompressed on its own thread): its top-level fields are checked as they
    // arrive, and runs of samples decoded side by side with the decompression; the rest is
    // read once the input is complete.
    let size = input.size_hint();
    let input = input.stream();
    let mut bytes: Vec<u8> = Vec::new();
    reserve(&mut bytes, size.unwrap_or(0).min(1 << 32) as usize)?;
    let mut early = Vec::new();
    let mut samples = SampleSet::new();
    let mut scan = Scan::default();
    loop {
        // An error names no file: the caller's name for the input is used.
        let chunk = input.fill_buf().map_err(|e| Error { file: None, ..Error::io("-", e) })?;
        if chunk.is_empty() {
            break;
        }
        let n = chunk.len();
        reserve(&mut bytes, n)?;
        bytes.extend_from_slice(chunk);
        input.consume(n);
        // A legacy profile fails the scan at once: say what it is rather than what the scan saw.
        scan.advance(&bytes).map_err(|e| refuse_legacy(&bytes).err().unwrap_or(e))?;
        for run in scan.complete.drain(..) {
            samples.absorb(&[decode_run(&bytes, run)?]);
            early.push(run);
        }
    }
    read_with_early(&bytes, early, samples, findings)
}

/// Makes room for `more` bytes of a stream held whole, or says that it does not fit.
fn reserve(bytes: &mut Vec<u8>, more: usize) -> Result<()> {
    bytes.try_reserve(more).map_err(|_| {
        bad(
            bytes.len() as u64,
            format!(
                "the decompressed profile does not fit in memory: {} MiB read so far, {} MiB more asked for",
                bytes.len() >> 20,
                more.div_ceil(1 << 20)
            ),
        )
    })
}

/// Samples decoded in runs of this many.
const RUN: usize = 32 * 1024;

/// A run of up to [`RUN`] samples: the top-level bytes from the first one's key to the end of
/// the last one (other fields may lie between them), and the index of the first sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SampleRun {
    start: usize,
    end: usize,
    first: usize,
    count: usize,
}

/// Groups samples into runs, the same way for a stream and for whole bytes.
#[derive(Default)]
struct Runs {
    current: Option<SampleRun>,
    samples: usize,
}

impl Runs {
    /// Notes a sample whose field spans `[start, end)`; returns the run it completes.
    fn add(&mut self, start: usize, end: usize) -> Option<SampleRun> {
        let first = self.samples;
        let run = self.current.get_or_insert(SampleRun { start, end, first, count: 0 });
        run.end = end;
        run.count += 1;
        self.samples += 1;
        if run.count == RUN {
            self.current.take()
        } else {
            None
        }
    }
}

/// The wire types profile.proto gives its top-level fields (`None`: a field it does not name,
/// which a reader skips).
fn top_field(field: u64) -> Option<(&'static str, &'static [u8])> {
    Some(match field {
        1 => ("sample_type", &[LEN]),
        2 => ("sample", &[LEN]),
        3 => ("mapping", &[LEN]),
        4 => ("location", &[LEN]),
        5 => ("function", &[LEN]),
        6 => ("string_table", &[LEN]),
        7 => ("drop_frames", &[VARINT]),
        8 => ("keep_frames", &[VARINT]),
        9 => ("time_nanos", &[VARINT]),
        10 => ("duration_nanos", &[VARINT]),
        11 => ("period_type", &[LEN]),
        12 => ("period", &[VARINT]),
        13 => ("comment", &[VARINT, LEN]),
        14 => ("default_sample_type", &[VARINT]),
        15 => ("doc_url", &[VARINT]),
        _ => return None,
    })
}

/// Checks a top-level key's wire type against profile.proto.
fn check_top_key(field: u64, wire: u8, at: u64) -> Result<()> {
    match top_field(field) {
        Some((name, wires)) if !wires.contains(&wire) => Err(bad(
            at,
            format!("Profile.{name} (field {field}): wire type {wire}, which profile.proto does not give it"),
        )),
        _ => Ok(()),
    }
}

/// Whether `rest` may be the start of a varint whose end has not arrived yet.
fn unfinished_varint(rest: &[u8]) -> bool {
    rest.len() < 10 && rest.iter().all(|&b| b >= 0x80)
}

/// The top-level fields of a stream, walked as its bytes arrive: a key that cannot be
/// profile.proto's is an error at once; complete runs of samples are handed out in `complete`.
#[derive(Default)]
struct Scan {
    pos: usize,
    runs: Runs,
    complete: Vec<SampleRun>,
}

impl Scan {
    fn advance(&mut self, bytes: &[u8]) -> Result<()> {
        while self.pos < bytes.len() {
            let at = self.pos as u64;
            let mut c = Cursor::new(&bytes[self.pos..], at);
            let (field, wire) = match c.key() {
                Ok(k) => k,
                Err(_) if unfinished_varint(&bytes[self.pos..]) => return Ok(()),
                Err(e) => return Err(within(|| "Profile".to_string())(e)),
            };
            check_top_key(field, wire, at)?;
            let value = c.offset() as usize;
            let done = match wire {
                LEN => match c.bytes() {
                    Ok((_, _)) => true,
                    Err(_) if unfinished_varint(&bytes[value..]) => false,
                    Err(e) => {
                        // The length is complete: the field's bytes have not all arrived.
                        if Cursor::new(&bytes[value..], value as u64).varint().is_ok() {
                            false
                        } else {
                            return Err(within(|| "Profile".to_string())(e));
                        }
                    }
                },
                _ => c.skip(wire).is_ok(),
            };
            if !done {
                return Ok(());
            }
            let end = c.offset() as usize;
            if field == 2 {
                if let Some(run) = self.runs.add(self.pos, end) {
                    self.complete.push(run);
                }
            }
            self.pos = end;
        }
        Ok(())
    }
}

/// Prefixes an error's message with the message path it happened in (`location[3].line[0]`).
fn within(path: impl FnOnce() -> String) -> impl FnOnce(Error) -> Error {
    move |mut e| {
        e.message = format!("{}: {}", path(), e.message);
        if e.hint.is_none() {
            e.hint = Some(HINT.to_string());
        }
        e
    }
}

fn bad(at: u64, message: String) -> Error {
    Error::input(message).at_byte(at).with_hint(HINT)
}

#[derive(Default)]
struct Mapping {
    id: u64,
    at: u64,
    memory_start: u64,
    memory_limit: u64,
    file_offset: u64,
    filename: u64,
    build_id: u64,
}

#[derive(Default)]
struct Function {
    id: u64,
    at: u64,
    name: u64,
    system_name: u64,
    filename: u64,
    start_line: i64,
}

#[derive(Default)]
struct Location {
    id: u64,
    at: u64,
    mapping_id: u64,
    address: u64,
    /// Function ids of `Line`s, innermost (inlined) first.
    lines: Vec<u64>,
    /// The source line of the innermost `Line` (0: none stated).
    leaf_line: i64,
}

/// Ids to indices: dense when the ids are small (Go numbers them 1..n), a hash map otherwise.
enum IdMap {
    Dense(Vec<u32>),
    Sparse(HashMap<u64, u32>),
}

impl IdMap {
    /// Maps the ids of `what` (non-zero, unique; errors name `what[i]` and its byte).
    fn new(ids: impl Iterator<Item = (u64, u64)> + Clone, what: &str) -> Result<IdMap> {
        let n = ids.clone().count();
        let max = ids.clone().map(|(id, _)| id).max().unwrap_or(0);
        let mut map = if max <= 4 * n as u64 + 64 {
            IdMap::Dense(vec![u32::MAX; max as usize + 1])
        } else {
            IdMap::Sparse(HashMap::with_capacity(n))
        };
        for (i, (id, at)) in ids.enumerate() {
            if id == 0 {
                return Err(bad(at, format!("{what}[{i}]: id 0 (ids must be non-zero)")));
            }
            let fresh = match &mut map {
                IdMap::Dense(v) => std::mem::replace(&mut v[id as usize], i as u32) == u32::MAX,
                IdMap::Sparse(m) => m.insert(id, i as u32).is_none(),
            };
            if !fresh {
                return Err(bad(at, format!("{what}[{i}]: id {id} used twice (ids must be unique)")));
            }
        }
        Ok(map)
    }

    #[inline]
    fn get(&self, id: u64) -> Option<u32> {
        match self {
            IdMap::Dense(v) => v.get(id as usize).copied().filter(|&i| i != u32::MAX),
            IdMap::Sparse(m) => m.get(&id).copied(),
        }
    }
}

/// Everything of the top-level message but the samples' contents.
#[derive(Default)]
struct Top {
    sample_types: Vec<(u64, u64, u64)>,
    /// Runs of samples, in order.
    sample_runs: Vec<SampleRun>,
    /// Mappings kept as images (the first [`MAX_IMAGES`]).
    mappings: Vec<Mapping>,
    /// (id, offset) of every mapping, kept or not: locations refer to them.
    mapping_ids: Vec<(u64, u64)>,
    locations: Vec<Location>,
    functions: Vec<Function>,
    /// Offset of each string's length (the string follows it).
    strings: Vec<u64>,
    drop_frames: Option<u64>,
    keep_frames: Option<u64>,
    time_nanos: Option<u64>,
    duration_nanos: Option<u64>,
    period_type: Option<(u64, u64, u64)>,
    period: Option<u64>,
    /// The first [`MAX_COMMENTS`] comments, and how many more there were.
    comments: Vec<u64>,
    comments_dropped: u64,
    default_sample_type: Option<u64>,
    doc_url: Option<u64>,
}

fn value_type(mut c: Cursor) -> Result<(u64, u64, u64)> {
    let at = c.offset();
    let (mut ty, mut unit) = (0, 0);
    while !c.is_empty() {
        match c.key()? {
            (1, w) => ty = c.uint(w, "type")?,
            (2, w) => unit = c.uint(w, "unit")?,
            (_, w) => c.skip(w)?,
        }
    }
    Ok((ty, unit, at))
}

fn mapping(mut c: Cursor) -> Result<Mapping> {
    let mut m = Mapping { at: c.offset(), ..Mapping::default() };
    while !c.is_empty() {
        match c.key()? {
            (1, w) => m.id = c.uint(w, "id")?,
            (2, w) => m.memory_start = c.uint(w, "memory_start")?,
            (3, w) => m.memory_limit = c.uint(w, "memory_limit")?,
            (4, w) => m.file_offset = c.uint(w, "file_offset")?,
            (5, w) => m.filename = c.uint(w, "filename")?,
            (6, w) => m.build_id = c.uint(w, "build_id")?,
            (_, w) => c.skip(w)?,
        }
    }
    Ok(m)
}

fn function(mut c: Cursor) -> Result<Function> {
    let mut f = Function { at: c.offset(), ..Function::default() };
    while !c.is_empty() {
        match c.key()? {
            (1, w) => f.id = c.uint(w, "id")?,
            (2, w) => f.name = c.uint(w, "name")?,
            (3, w) => f.system_name = c.uint(w, "system_name")?,
            (4, w) => f.filename = c.uint(w, "filename")?,
            (5, w) => f.start_line = c.uint(w, "start_line")? as i64,
            (_, w) => c.skip(w)?,
        }
    }
    Ok(f)
}

fn location(mut c: Cursor) -> Result<Location> {
    let mut l = Location { at: c.offset(), ..Location::default() };
    while !c.is_empty() {
        match c.key()? {
            (1, w) => l.id = c.uint(w, "id")?,
            (2, w) => l.mapping_id = c.uint(w, "mapping_id")?,
            (3, w) => l.address = c.uint(w, "address")?,
            (4, w) => {
                let n = l.lines.len();
                let mut line = c.message(w, "line").map_err(within(|| format!("line[{n}]")))?;
                let (mut function_id, mut number) = (0, 0);
                while !line.is_empty() {
                    match line.key().map_err(within(|| format!("line[{n}]")))? {
                        (1, w) => function_id = line.uint(w, "function_id")?,
                        (2, w) => number = line.uint(w, "line")? as i64,
                        (_, w) => line.skip(w).map_err(within(|| format!("line[{n}]")))?,
                    }
                }
                if l.lines.is_empty() {
                    l.leaf_line = number;
                }
                l.lines.push(function_id);
            }
            (_, w) => c.skip(w)?,
        }
    }
    Ok(l)
}

fn top(bytes: &[u8]) -> Result<Top> {
    let mut t = Top::default();
    let mut runs = Runs::default();
    let mut c = Cursor::new(bytes, 0);
    while !c.is_empty() {
        let at = c.offset();
        let (field, wire) = c.key().map_err(within(|| "Profile".to_string()))?;
        check_top_key(field, wire, at)?;
        match field {
            1 => {
                let i = t.sample_types.len();
                let m = c.message(wire, "sample_type").map_err(within(|| format!("sample_type[{i}]")))?;
                t.sample_types.push(value_type(m).map_err(within(|| format!("sample_type[{i}]")))?);
            }
            2 => {
                let i = runs.samples;
                c.message(wire, "sample").map_err(within(|| format!("sample[{i}]")))?;
                if let Some(run) = runs.add(at as usize, c.offset() as usize) {
                    t.sample_runs.push(run);
                }
            }
            3 => {
                let i = t.mapping_ids.len();
                let m = c.message(wire, "mapping").map_err(within(|| format!("mapping[{i}]")))?;
                let m = mapping(m).map_err(within(|| format!("mapping[{i}]")))?;
                t.mapping_ids.push((m.id, m.at));
                if t.mappings.len() < MAX_IMAGES {
                    t.mappings.push(m);
                }
            }
            4 => {
                let i = t.locations.len();
                let m = c.message(wire, "location").map_err(within(|| format!("location[{i}]")))?;
                t.locations.push(location(m).map_err(within(|| format!("location[{i}]")))?);
            }
            5 => {
                let i = t.functions.len();
                let m = c.message(wire, "function").map_err(within(|| format!("function[{i}]")))?;
                t.functions.push(function(m).map_err(within(|| format!("function[{i}]")))?);
            }
            6 => {
                let i = t.strings.len();
                t.strings.push(c.offset());
                c.message(wire, "string_table").map_err(within(|| format!("string_table[{i}]")))?;
            }
            7 => t.drop_frames = Some(c.uint(wire, "drop_frames").map_err(within(|| "Profile".into()))?),
            8 => t.keep_frames = Some(c.uint(wire, "keep_frames").map_err(within(|| "Profile".into()))?),
            9 => t.time_nanos = Some(c.uint(wire, "time_nanos").map_err(within(|| "Profile".into()))?),
            10 => {
                t.duration_nanos = Some(c.uint(wire, "duration_nanos").map_err(within(|| "Profile".into()))?)
            }
            11 => {
                let m = c.message(wire, "period_type").map_err(within(|| "Profile".into()))?;
                t.period_type = Some(value_type(m).map_err(within(|| "period_type".into()))?);
            }
            12 => t.period = Some(c.uint(wire, "period").map_err(within(|| "Profile".into()))?),
            13 => {
                let (comments, dropped) = (&mut t.comments, &mut t.comments_dropped);
                c.repeated(wire, "comment", |v| {
                    if comments.len() < MAX_COMMENTS {
                        comments.push(v)
                    } else {
                        *dropped += 1
                    }
                })
                .map_err(within(|| "Profile".into()))?
            }
            14 => {
                t.default_sample_type =
                    Some(c.uint(wire, "default_sample_type").map_err(within(|| "Profile".into()))?)
            }
            15 => t.doc_url = Some(c.uint(wire, "doc_url").map_err(within(|| "Profile".into()))?),
            _ => {
                if !matches!(wire, VARINT | FIXED64 | LEN | FIXED32) {
                    return Err(bad(at, "Profile: unknown wire type".into()));
                }
                c.skip(wire).map_err(within(|| format!("Profile field {field}")))?
            }
        }
    }
    t.sample_runs.extend(runs.current.take());
    Ok(t)
}

/// The string table, checked: index lookups with the path of the field that refers. The
/// strings stay in the input's bytes (an index each), turned into text when asked for.
struct Strings<'a> {
    bytes: &'a [u8],
    offsets: Vec<u64>,
}

impl<'a> Strings<'a> {
    fn len(&self) -> usize {
        self.offsets.len()
    }

    /// String `i`'s bytes; `None` past the table.
    fn raw(&self, i: u64) -> Option<&'a [u8]> {
        let at = *self.offsets.get(usize::try_from(i).ok()?)?;
        let mut c = Cursor::new(&self.bytes[at as usize..], at);
        // Checked by `top` already.
        c.bytes().ok().map(|(b, _)| b)
    }

    fn get(&self, i: u64, at: u64, path: impl FnOnce() -> String) -> Result<std::borrow::Cow<'a, str>> {
        self.raw(i).map(String::from_utf8_lossy).ok_or_else(|| {
            bad(at, format!("{}: string index {i} past the string table ({} strings)", path(), self.len()))
        })
    }

    /// `None` for the empty string.
    fn opt(
        &self,
        i: u64,
        at: u64,
        path: impl FnOnce() -> String,
    ) -> Result<Option<std::borrow::Cow<'a, str>>> {
        self.get(i, at, path).map(|s| (!s.is_empty()).then_some(s))
    }

    /// The index of the first string equal to `s`.
    fn find(&self, s: &str) -> Option<u64> {
        (0..self.len() as u64).find(|&i| self.raw(i) == Some(s.as_bytes()))
    }
}

/// Reads a whole decompressed profile.proto.
pub fn read_bytes(bytes: &[u8], findings: &mut Findings) -> Result<Profile> {
    read_with_early(bytes, Vec::new(), SampleSet::new(), findings)
}

/// What a legacy pprof profile (the formats before profile.proto) starts with, when `bytes` is
/// one: the text profiles of Go's runtime and gperftools (`heap profile: ...`,
/// `goroutine profile: total 4`, `--- mutex:`, `--- contention:`, `heap_v2/524288`), and the
/// binary CPU profile of gperftools and old Go (a header of machine words 0, 3, 0, period, 0).
fn legacy_kind(bytes: &[u8]) -> Option<&'static str> {
    let line = bytes.split(|&b| b == b'\n').next().unwrap_or(bytes);
    let line = line.get(..200).unwrap_or(line);
    let text = std::str::from_utf8(line).ok().map(str::trim_end);
    if let Some(t) = text {
        let words: Vec<&str> = t.split_whitespace().collect();
        let profile_header =
            words.iter().position(|w| *w == "profile:").is_some_and(|i| (1..=2).contains(&i))
                && words[0].bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        if profile_header || t.starts_with("heap_v2/") || t.starts_with("--- ") && t.ends_with(':') {
            return Some("a legacy text profile");
        }
    }
    for word in [8usize, 4] {
        let Some(head) = bytes.get(..5 * word) else { continue };
        let w = |i: usize| {
            let b = &head[i * word..(i + 1) * word];
            let le = b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64);
            let be = b.iter().fold(0u64, |v, &x| v << 8 | x as u64);
            (le, be)
        };
        let (h0, h1, h2, h4) = (w(0), w(1), w(2), w(4));
        let native = |f: fn((u64, u64)) -> u64| f(h0) == 0 && f(h1) == 3 && f(h2) == 0 && f(h4) == 0;
        if native(|p| p.0) || native(|p| p.1) {
            return Some("a legacy binary CPU profile");
        }
    }
    None
}

/// Refuses a legacy pprof profile with what it is and the command that converts it.
fn refuse_legacy(bytes: &[u8]) -> Result<()> {
    if let Some(kind) = legacy_kind(bytes) {
        Err(Error::input(format!(
            "{kind} (the pprof format before profile.proto), not a profile.proto; cfghub reads \
             profile.proto only"
        ))
        .at_byte(0)
        .with_hint(
            "convert it first: `go tool pprof -proto PROGRAM FILE > FILE.pb.gz` (the program's \
             binary names its functions; `go tool pprof -proto FILE` without it), then read FILE.pb.gz",
        ))
    } else {
        Ok(())
    }
}

/// Reads a whole profile whose first runs of samples (`early`) were decoded into `samples`
/// already.
fn read_with_early(
    bytes: &[u8],
    early: Vec<SampleRun>,
    mut samples: SampleSet,
    findings: &mut Findings,
) -> Result<Profile> {
    refuse_legacy(bytes)?;
    let t = top(bytes)?;
    let strings = Strings { bytes, offsets: t.strings.clone() };
    check_empty_first_string(&strings, &t)?;
    let mut profile = Profile::default();
    read_headers(&mut profile, &t, &strings, findings)?;

    let mapping_ids = IdMap::new(t.mapping_ids.iter().copied(), "mapping")?;
    let mut images = images_of(&mut profile, &t, &strings, findings)?;

    // Functions become frames (by name) with their sources.
    let function_ids = IdMap::new(t.functions.iter().map(|f| (f.id, f.at)), "function")?;
    let function_frame = function_frames(&mut profile, &t, &strings)?;

    // Locations become runs of frames, root first (a Location's last line is the caller).
    let location_ids = IdMap::new(t.locations.iter().map(|l| (l.id, l.at)), "location")?;
    let LocationFrames { frames: location_frames, runs: location_run } =
        location_frames(&mut profile, &t, &mapping_ids, &function_ids, &function_frame)?;
    // Sources not known for any frame say nothing: leave the table empty.
    while profile.frame_sources.last().is_some_and(|s| *s == FrameSource::default()) {
        profile.frame_sources.pop();
    }

    // Samples become stacks: the runs not decoded while the input arrived are decoded side by
    // side; equal samples are merged by their location ids and labels as runs are decoded, and
    // only the distinct ones are expanded into frames.
    use rayon::prelude::*;
    let ctx = SampleContext {
        nvalues: t.sample_types.len(),
        thread_key: strings.find(THREAD_LABEL),
        pid_key: strings.find(PID_LABEL),
        location_ids: &location_ids,
        location_run: &location_run,
        location_frames: &location_frames,
        frame_budget: (bytes.len() as u64).saturating_mul(FRAMES_PER_BYTE).max(MIN_FRAME_BUDGET),
        bytes: bytes.len() as u64,
        strings: &strings,
    };
    let done = if t.sample_runs.starts_with(&early) {
        early.len()
    } else {
        samples = SampleSet::new();
        0
    };
    // A few runs per thread at a time: decoded side by side, then merged shard by shard.
    for runs in t.sample_runs[done..].chunks(2 * rayon::current_num_threads()) {
        let runs: Vec<Result<RawRun>> = runs.par_iter().map(|&run| decode_run(bytes, run)).collect();
        samples.absorb(&runs.into_iter().collect::<Result<Vec<_>>>()?);
    }
    let mut processes: Vec<Process> = Vec::new();
    let mut leaves = LeafSamples::new(&t, &mapping_ids, images.len());
    let other_labels = ctx.resolve(samples, &mut processes, &mut leaves)?;
    if other_labels > 0 {
        findings.warn(None, format!("pprof: {other_labels} sample label(s) without a key left out"));
    }
    if processes.is_empty() {
        processes.push(Process::default());
    }
    leaves.into_costs(&mut images, &t, &function_ids, &function_frame, &profile, findings);
    processes[0].images = images;
    profile.processes = processes;
    Ok(profile)
}

/// Refuses a string table whose first string is missing or not the empty string.
fn check_empty_first_string(strings: &Strings, t: &Top) -> Result<()> {
    match strings.raw(0) {
        None => Err(bad(0, "Profile: no string table (string_table[0] must be the empty string)".into())),
        Some(b) if !b.is_empty() => Err(bad(t.strings[0], "string_table[0]: not the empty string".into())),
        _ => Ok(()),
    }
}

/// The frame of each function (by its name, else its system name), in the order of the
/// functions; a new frame gets the function's source file, start line and system name.
fn function_frames(profile: &mut Profile, t: &Top, strings: &Strings) -> Result<Vec<FrameId>> {
    let mut function_frame: Vec<FrameId> = Vec::with_capacity(t.functions.len());
    for (i, f) in t.functions.iter().enumerate() {
        let name = strings.get(f.name, f.at, || format!("function[{i}].name"))?;
        let system = strings.get(f.system_name, f.at, || format!("function[{i}].system_name"))?;
        let file = strings.opt(f.filename, f.at, || format!("function[{i}].filename"))?;
        let shown = if name.is_empty() { &system } else { &name };
        let frame = profile.frames.intern(shown);
        if frame as usize == profile.frame_sources.len() {
            profile.frame_sources.push(FrameSource {
                file: file.map(|f| profile.files.intern(&f)),
                line: u32::try_from(f.start_line).ok().filter(|&l| l > 0),
                system_name: (!system.is_empty() && system != *shown).then(|| system.to_string()),
                address: None,
            });
        }
        function_frame.push(frame);
    }
    Ok(function_frame)
}

/// The frames of every location, root first (a location's last line is the caller).
struct LocationFrames {
    /// The frames of all locations one after another.
    frames: Vec<FrameId>,
    /// Each location's run of frames: (start, length) in `frames`.
    runs: Vec<(u32, u32)>,
}

/// The frames of each location (see [`LocationFrames`]): a frame per line, from the frame of
/// its function (`function_frame`, by the positions `function_ids` gives); a location without
/// lines is one frame for its address.
fn location_frames(
    profile: &mut Profile,
    t: &Top,
    mapping_ids: &IdMap,
    function_ids: &IdMap,
    function_frame: &[FrameId],
) -> Result<LocationFrames> {
    let mut location_frames: Vec<FrameId> = Vec::new();
    let mut location_run: Vec<(u32, u32)> = Vec::with_capacity(t.locations.len());
    for (i, l) in t.locations.iter().enumerate() {
        let start = location_frames.len() as u32;
        if l.mapping_id != 0 && mapping_ids.get(l.mapping_id).is_none() {
            return Err(bad(
                l.at,
                format!("location[{i}].mapping_id: mapping id {} names no mapping", l.mapping_id),
            ));
        }
        if l.lines.is_empty() {
            location_frames.push(address_frame(profile, l, mapping_ids));
        }
        for (j, &fid) in l.lines.iter().enumerate().rev() {
            let f = function_ids.get(fid).ok_or_else(|| {
                bad(l.at, format!("location[{i}].line[{j}]: function id {fid} names no function"))
            })?;
            location_frames.push(function_frame[f as usize]);
        }
        location_run.push((start, location_frames.len() as u32 - start));
    }
    Ok(LocationFrames { frames: location_frames, runs: location_run })
}

/// The samples of the first process by their leaf location: what the program was running when
/// each sample was taken, which becomes a cost at that address of its mapping's image (as a
/// sampler of instruction addresses, perf or DCPI, states it).
struct LeafSamples {
    /// Per location: its image and offset there, when its address lies in a kept mapping.
    places: Vec<Option<(u32, u64)>>,
    /// Values by location (index as in `places`), summed; empty where no sample ends.
    values: Vec<Vec<StackValue>>,
}

impl LeafSamples {
    fn new(t: &Top, mapping_ids: &IdMap, images: usize) -> LeafSamples {
        let places = t
            .locations
            .iter()
            .map(|l| {
                let m = mapping_ids.get(l.mapping_id).filter(|&m| (m as usize) < images)?;
                let mapping = &t.mappings[m as usize];
                let inside = l.address >= mapping.memory_start
                    && (mapping.memory_limit <= mapping.memory_start || l.address < mapping.memory_limit);
                (l.address != 0 && inside).then(|| (m, l.address - mapping.memory_start))
            })
            .collect();
        let values = vec![Vec::new(); t.locations.len()];
        LeafSamples { places, values }
    }

    fn add(&mut self, leaf: u32, values: &[StackValue]) {
        if self.places.get(leaf as usize).is_some_and(Option::is_some) {
            let sum = &mut self.values[leaf as usize];
            if sum.is_empty() {
                sum.resize(values.len(), 0);
            }
            for (s, v) in sum.iter_mut().zip(values) {
                *s += v;
            }
        }
    }

    /// The summed samples as costs of the images, each with the function its location names
    /// first (the innermost, as the stacks' leaf frame) and that line; a location without
    /// lines leaves them to a symbolizer. Sums below zero (a difference of profiles) are no
    /// samples and are left out.
    fn into_costs(
        self,
        images: &mut [Image],
        t: &Top,
        function_ids: &IdMap,
        function_frame: &[FrameId],
        profile: &Profile,
        findings: &mut Findings,
    ) {
        // (image, offset, function frame, line) -> values.
        type Key = (u32, u64, Option<FrameId>, Option<u32>);
        let mut rows: std::collections::BTreeMap<Key, Vec<u64>> = std::collections::BTreeMap::new();
        let mut negative = 0usize;
        for (loc, values) in self.values.into_iter().enumerate().filter(|(_, v)| !v.is_empty()) {
            let Some((image, offset)) = self.places[loc] else { continue };
            if values.iter().any(|&v| v < 0) {
                negative += 1;
                continue;
            }
            let l = &t.locations[loc];
            let frame =
                l.lines.first().and_then(|&f| function_ids.get(f)).map(|f| function_frame[f as usize]);
            let line = u32::try_from(l.leaf_line).ok().filter(|&n| n > 0 && frame.is_some());
            let row = rows.entry((image, offset, frame, line)).or_insert_with(|| vec![0; values.len()]);
            for (r, v) in row.iter_mut().zip(&values) {
                *r = r.saturating_add(u64::try_from(*v).unwrap_or(u64::MAX));
            }
        }
        if negative > 0 {
            findings.warn(
                None,
                format!(
                    "pprof: {negative} location(s) whose samples sum below zero are no costs at addresses"
                ),
            );
        }
        // Each image's functions as symbols, in order of first use.
        let mut symbol_of: HashMap<(u32, FrameId), u32> = HashMap::new();
        for ((image, offset, frame, line), values) in rows {
            let img = &mut images[image as usize];
            let symbol = frame.map(|f| {
                *symbol_of.entry((image, f)).or_insert_with(|| {
                    img.symbols.push(cfghub_model::ir::Symbol {
                        name: profile.frames.get(f).to_string(),
                        offset: None,
                        size: None,
                        file: profile.frame_source(f).and_then(|s| s.file),
                    });
                    img.symbols.len() as u32 - 1
                })
            });
            let file = frame.and_then(|f| profile.frame_source(f)).and_then(|s| s.file);
            img.leaf_samples = true;
            img.costs.push(cfghub_model::ir::Cost {
                symbol,
                offset: Some(offset),
                file,
                line,
                values: values.into_iter().collect(),
            });
        }
    }
}

/// Mappings become images (the first [`MAX_IMAGES`] of them).
fn images_of(
    profile: &mut Profile,
    t: &Top,
    strings: &Strings,
    findings: &mut Findings,
) -> Result<Vec<Image>> {
    let mut images = Vec::with_capacity(t.mappings.len());
    for (i, m) in t.mappings.iter().enumerate() {
        let file = strings.opt(m.filename, m.at, || format!("mapping[{i}].filename"))?;
        let build_id = strings.opt(m.build_id, m.at, || format!("mapping[{i}].build_id"))?;
        images.push(Image {
            id: m.id,
            file: file.map(|f| profile.files.intern(&f)),
            load_addr: m.memory_start,
            size: (m.memory_limit > m.memory_start).then(|| m.memory_limit - m.memory_start),
            file_offset: (m.file_offset != 0).then_some(m.file_offset),
            build_id: build_id.map(|b| b.into_owned()),
            ..Image::default()
        });
    }
    if t.mapping_ids.len() > t.mappings.len() {
        findings.warn(
            None,
            format!(
                "pprof: {} mapping(s) past the first {MAX_IMAGES} not kept as images",
                t.mapping_ids.len() - t.mappings.len()
            ),
        );
    }
    Ok(images)
}

/// The frame of a location without lines (not symbolized): named by its address, with the
/// address and its mapping kept for a later symbolizer (`go tool pprof`, or pprof -> pprof).
fn address_frame(profile: &mut Profile, l: &Location, mapping_ids: &IdMap) -> FrameId {
    let frame = profile.frames.intern(&format!("{:#x}", l.address));
    let address = FrameAddress { image: mapping_ids.get(l.mapping_id), address: l.address };
    let n = frame as usize;
    if n >= profile.frame_sources.len() {
        profile.frame_sources.resize(n + 1, FrameSource::default());
    }
    profile.frame_sources[n].address.get_or_insert(address);
    frame
}

/// Events, their units and the top-level fields, into the profile's headers.
fn read_headers(profile: &mut Profile, t: &Top, strings: &Strings, findings: &mut Findings) -> Result<()> {
    let headers = &mut profile.meta.headers;
    for (i, &(ty, unit, at)) in t.sample_types.iter().enumerate() {
        let name = strings.get(ty, at, || format!("sample_type[{i}].type"))?;
        let unit = strings.get(unit, at, || format!("sample_type[{i}].unit"))?;
        profile.events.push(Event::new(name.as_ref()));
        if !unit.is_empty() {
            headers.push((keys::UNIT.into(), format!("{name} {unit}")));
        }
    }
    let top_string = |i: u64, what: &str| strings.get(i, 0, || what.to_string()).map(|s| s.into_owned());
    if let Some((ty, unit, at)) = t.period_type {
        let ty = strings.get(ty, at, || "period_type.type".into())?;
        let unit = strings.get(unit, at, || "period_type.unit".into())?;
        headers.push((keys::PERIOD_TYPE.into(), format!("{ty} {unit}")));
    }
    for (key, v) in
        [(keys::PERIOD, t.period), (keys::TIME_NANOS, t.time_nanos), (keys::DURATION_NANOS, t.duration_nanos)]
    {
        if let Some(v) = v {
            headers.push((key.into(), (v as i64).to_string()));
        }
    }
    for (key, v) in [
        (keys::DROP_FRAMES, t.drop_frames),
        (keys::KEEP_FRAMES, t.keep_frames),
        (keys::DEFAULT_SAMPLE_TYPE, t.default_sample_type),
        (keys::DOC_URL, t.doc_url),
    ] {
        if let Some(v) = v {
            let s = top_string(v, key)?;
            if !s.is_empty() {
                headers.push((key.into(), s));
            }
        }
    }
    // "If unset, clients should default to the last sample value" (profile.proto): the
    // default is stated either way, so that every view shows what `go tool pprof` shows
    // (`cpu`, not `samples`, of a Go CPU profile).
    if t.sample_types.len() > 1 && !headers.iter().any(|(k, _)| k == keys::DEFAULT_SAMPLE_TYPE) {
        if let Some(last) = profile.events.last() {
            headers.push((keys::DEFAULT_SAMPLE_TYPE.into(), last.name.clone()));
        }
    }
    for (i, &c) in t.comments.iter().enumerate() {
        headers.push((keys::COMMENT.into(), top_string(c, &format!("comment[{i}]"))?));
    }
    if t.comments_dropped > 0 {
        findings.warn(
            None,
            format!("pprof: {} comment(s) past the first {MAX_COMMENTS} not kept", t.comments_dropped),
        );
    }
    Ok(())
}

/// First entry of each hash's chain (FxHash of a hash: one multiply).
type Heads = rustc_hash::FxHashMap<u64, u32>;

/// Mixes `v` into the hash `h` (the multiply-rotate of FxHash).
#[inline]
fn mix(h: u64, v: u64) -> u64 {
    (h.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// The samples of one process, merged when their call path, thread and labels are equal
/// (values summed), each kept where it first occurs.
#[derive(Default)]
struct SampleMerger {
    first: rustc_hash::FxHashMap<(u32, u32, u32), usize>,
}

impl SampleMerger {
    fn add(
        &mut self,
        stacks: &mut Stacks,
        node: u32,
        thread: Option<u32>,
        labels: u32,
        values: &[StackValue],
    ) {
        match self.first.entry((thread.unwrap_or(NO_INDEX), node, labels)) {
            std::collections::hash_map::Entry::Occupied(k) => {
                for (a, b) in stacks.values_mut(*k.get()).iter_mut().zip(values) {
                    *a += b;
                }
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(stacks.len());
                stacks.push_labelled_sample(node, thread, labels, values);
            }
        }
    }
}

/// A distinct sample resolved: its process (index), thread, frames (a range of the frames
/// resolved, root first), values (a range of its run's) and leaf location.
struct Resolved<'a> {
    process: usize,
    thread: Option<u32>,
    label_set: u32,
    frames: (usize, usize),
    run: &'a SampleList,
    values: (usize, usize),
    leaf: Option<u32>,
}

/// What resolving a sample needs to know.
struct SampleContext<'a> {
    nvalues: usize,
    thread_key: Option<u64>,
    pid_key: Option<u64>,
    location_ids: &'a IdMap,
    location_run: &'a [(u32, u32)],
    location_frames: &'a [FrameId],
    /// Frames the profile's stacks may hold in all.
    frame_budget: u64,
    /// The input's size, for messages.
    bytes: u64,
    strings: &'a Strings<'a>,
}

/// Samples are spread over this many shards by their hash: equal samples land in the same
/// shard, so shards merge side by side, each with a table small enough to stay in cache.
const SHARDS: usize = 64;

/// The shard of a sample's hash (its top bits, the best mixed).
fn shard_of(hash: u64) -> usize {
    (hash >> (64 - SHARDS.trailing_zeros())) as usize
}

/// A sample, or equal samples merged: its location ids, numeric labels and values, as ranges
/// of its list's arenas; its hash; where it first occurs; how many samples it stands for.
struct RawStack {
    hash: u64,
    locs: (usize, usize),
    /// The location ids are in `wide` (some is beyond `u32`), else in `locs`.
    wide: bool,
    labels: (usize, usize),
    values: (usize, usize),
    sample: usize,
    at: u64,
    occurrences: u64,
    /// The next stack of a merged list with the same hash (`u32::MAX`: none).
    next: u32,
}

/// Samples as the wire says them, location ids not resolved yet, labels whose keys are not
/// known to be `thread` or `pid` yet.
#[derive(Default)]
struct SampleList {
    stacks: Vec<RawStack>,
    locs: Vec<u32>,
    wide: Vec<u64>,
    /// Labels as [`RawLabel`]s, in order of key.
    labels: Vec<RawLabel>,
    values: Vec<StackValue>,
}

/// A sample label as the wire says it, its strings not resolved yet: `(key, value, kind)`,
/// where kind [`TEXT_LABEL`] makes `value` the index of a string, and any other kind makes it a
/// number whose unit is the string `kind - 1` (`kind` 1: no unit).
type RawLabel = (u64, u64, u64);

/// The kind of a [`RawLabel`] whose value is a string.
const TEXT_LABEL: u64 = 0;

impl SampleList {
    fn same_locs(&self, r: &RawStack, other: &SampleList, o: &RawStack) -> bool {
        r.wide == o.wide
            && if r.wide {
                self.wide[r.locs.0..r.locs.1] == other.wide[o.locs.0..o.locs.1]
            } else {
                self.locs[r.locs.0..r.locs.1] == other.locs[o.locs.0..o.locs.1]
            }
    }

    /// Appends the sample in `s` (number `sample`, at byte `at`, labels by key).
    fn push(&mut self, s: &Scratch, hash: u64, sample: usize, at: u64) {
        let wide = s.locs.iter().any(|&l| l >= u32::MAX as u64);
        let locs = if wide {
            self.wide.extend_from_slice(&s.locs);
            (self.wide.len() - s.locs.len(), self.wide.len())
        } else {
            self.locs.extend(s.locs.iter().map(|&l| l as u32));
            (self.locs.len() - s.locs.len(), self.locs.len())
        };
        self.labels.extend_from_slice(&s.labels);
        self.values.extend_from_slice(&s.values);
        self.stacks.push(RawStack {
            hash,
            locs,
            wide,
            labels: (self.labels.len() - s.labels.len(), self.labels.len()),
            values: (self.values.len() - s.values.len(), self.values.len()),
            sample,
            at,
            occurrences: 1,
            next: u32::MAX,
        });
    }

    /// Appends a copy of `o` of list `from`, as the first of its hash's chain after `next`.
    fn push_copy(&mut self, from: &SampleList, o: &RawStack, next: u32) {
        let locs = if o.wide {
            self.wide.extend_from_slice(&from.wide[o.locs.0..o.locs.1]);
            (self.wide.len() - (o.locs.1 - o.locs.0), self.wide.len())
        } else {
            self.locs.extend_from_slice(&from.locs[o.locs.0..o.locs.1]);
            (self.locs.len() - (o.locs.1 - o.locs.0), self.locs.len())
        };
        self.labels.extend_from_slice(&from.labels[o.labels.0..o.labels.1]);
        self.values.extend_from_slice(&from.values[o.values.0..o.values.1]);
        self.stacks.push(RawStack {
            locs,
            labels: (self.labels.len() - (o.labels.1 - o.labels.0), self.labels.len()),
            values: (self.values.len() - (o.values.1 - o.values.0), self.values.len()),
            next,
            ..*o
        });
    }
}

/// A run of samples as decoded, spread over the shards by hash, not merged yet.
struct RawRun {
    shards: Vec<SampleList>,
    /// Labels with no key, dropped.
    other_labels: u64,
}

/// One shard of the profile's distinct samples, equal ones merged, with its hash table.
#[derive(Default)]
struct MergedShard {
    list: SampleList,
    heads: Heads,
}

impl MergedShard {
    /// Adds the samples of `from` (of this shard), merged with equal ones; each keeps the
    /// number and place of its first occurrence.
    fn absorb(&mut self, from: &SampleList) {
        'samples: for o in &from.stacks {
            let first = self.heads.get(&o.hash).copied().unwrap_or(u32::MAX);
            let mut k = first;
            while k != u32::MAX {
                let r = &self.list.stacks[k as usize];
                if self.list.same_locs(r, from, o)
                    && self.list.labels[r.labels.0..r.labels.1] == from.labels[o.labels.0..o.labels.1]
                    && r.values.1 - r.values.0 == o.values.1 - o.values.0
                {
                    let r = &mut self.list.stacks[k as usize];
                    r.occurrences += o.occurrences;
                    let (values, summed) = (&from.values[o.values.0..o.values.1], r.values);
                    for (a, b) in self.list.values[summed.0..summed.1].iter_mut().zip(values) {
                        *a += b;
                    }
                    continue 'samples;
                }
                k = r.next;
            }
            self.heads.insert(o.hash, self.list.stacks.len() as u32);
            self.list.push_copy(from, o, first);
        }
    }
}

/// The profile's distinct samples, equal ones (same locations, labels and number of values)
/// merged as runs are decoded, values summed.
struct SampleSet {
    shards: Vec<MergedShard>,
    other_labels: u64,
}

impl SampleSet {
    fn new() -> SampleSet {
        SampleSet { shards: (0..SHARDS).map(|_| MergedShard::default()).collect(), other_labels: 0 }
    }

    /// Merges decoded runs, in their order, shard by shard side by side.
    fn absorb(&mut self, runs: &[RawRun]) {
        use rayon::prelude::*;
        self.shards.par_iter_mut().enumerate().for_each(|(s, shard)| {
            for run in runs {
                shard.absorb(&run.shards[s]);
            }
        });
        self.other_labels += runs.iter().map(|r| r.other_labels).sum::<u64>();
    }

    /// The distinct samples in the order they first occur, as (shard, index).
    fn in_order(&self) -> Vec<(u32, u32)> {
        let mut order: Vec<(usize, u32, u32)> = Vec::new();
        for (s, shard) in self.shards.iter().enumerate() {
            order.extend(shard.list.stacks.iter().enumerate().map(|(i, r)| (r.sample, s as u32, i as u32)));
        }
        order.sort_unstable();
        order.into_iter().map(|(_, s, i)| (s, i)).collect()
    }
}

/// One sample's fields, before it is merged into its run.
#[derive(Default)]
struct Scratch {
    locs: Vec<u64>,
    labels: Vec<RawLabel>,
    values: Vec<StackValue>,
}

impl Scratch {
    /// Puts labels in order of key (of one key, the last read first: the one a `thread` or
    /// `pid` label takes), equal ones once, and gives the hash that equal samples share.
    fn normalize_and_hash(&mut self) -> u64 {
        self.labels.reverse();
        self.labels.sort_by_key(|&(k, _, _)| k);
        let mut seen = 0;
        for i in 0..self.labels.len() {
            if !self.labels[..seen].contains(&self.labels[i]) {
                self.labels[seen] = self.labels[i];
                seen += 1;
            }
        }
        self.labels.truncate(seen);
        let mut h = mix(self.values.len() as u64, self.locs.len() as u64);
        for &l in &self.locs {
            h = mix(h, l);
        }
        for &(k, v, kind) in &self.labels {
            h = mix(mix(mix(h, k), v), kind);
        }
        h
    }
}

/// Decodes the samples of `run` (top-level fields of `bytes`); ids are resolved by
/// [`SampleContext::resolve`] once the tables are known.
fn decode_run(bytes: &[u8], run: SampleRun) -> Result<RawRun> {
    let mut out = RawRun { shards: (0..SHARDS).map(|_| SampleList::default()).collect(), other_labels: 0 };
    let mut s = Scratch::default();
    let mut top = Cursor::new(&bytes[run.start..run.end], run.start as u64);
    let mut i = run.first;
    while !top.is_empty() {
        // The fields between a run's samples were checked by `top` or the scan.
        let Ok((field, wire)) = top.key() else { break };
        if field != 2 {
            top.skip(wire).map_err(within(|| "Profile".to_string()))?;
            continue;
        }
        let mut c = top.message(wire, "sample").map_err(within(|| format!("sample[{i}]")))?;
        let at = c.offset();
        s.locs.clear();
        s.values.clear();
        s.labels.clear();
        while !c.is_empty() {
            match c.key().map_err(within(|| format!("sample[{i}]")))? {
                (1, w) => c
                    .repeated(w, "location_id", |v| s.locs.push(v))
                    .map_err(within(|| format!("sample[{i}]")))?,
                (2, w) => c
                    .repeated(w, "value", |v| s.values.push(StackValue::from(v as i64)))
                    .map_err(within(|| format!("sample[{i}]")))?,
                (3, w) => {
                    let path = || format!("sample[{i}].label");
                    let mut label = c.message(w, "label").map_err(within(path))?;
                    let (mut key, mut str, mut num, mut unit) = (0, 0, None, 0);
                    while !label.is_empty() {
                        match label.key().map_err(within(path))? {
                            (1, w) => key = label.uint(w, "key").map_err(within(path))?,
                            (2, w) => str = label.uint(w, "str").map_err(within(path))?,
                            (3, w) => num = Some(label.uint(w, "num").map_err(within(path))?),
                            (4, w) => unit = label.uint(w, "num_unit").map_err(within(path))?,
                            (_, w) => label.skip(w).map_err(within(path))?,
                        }
                    }
                    // As pprof's own reader: a string value first, else a number (with its
                    // unit; a `num` of 0 stated is kept, as a thread 0 is); a label with
                    // neither, or without a key, says nothing.
                    if key == 0 {
                        out.other_labels += 1;
                    } else if str != 0 {
                        s.labels.push((key, str, TEXT_LABEL));
                    } else if num.is_some() || unit != 0 {
                        s.labels.push((key, num.unwrap_or(0), unit.saturating_add(1)));
                    }
                }
                (_, w) => c.skip(w).map_err(within(|| format!("sample[{i}]")))?,
            }
        }
        let hash = s.normalize_and_hash();
        out.shards[shard_of(hash)].push(&s, hash, i, at);
        i += 1;
    }
    Ok(out)
}

impl SampleContext<'_> {
    /// A label of sample `sample` (at byte `at`) with its strings.
    fn label(&self, key: u64, value: u64, kind: u64, at: u64, sample: usize) -> Result<Label> {
        let path = || format!("sample[{sample}].label");
        let key = self.strings.get(key, at, path)?;
        let value = if kind == TEXT_LABEL {
            LabelValue::Text(self.strings.get(value, at, path)?.into())
        } else {
            let unit = self.strings.opt(kind - 1, at, path)?;
            LabelValue::Number(value as i64, unit.map(|u| u.into()))
        };
        Ok(Label { key: key.into(), value })
    }

    /// Resolves the samples' location ids into call paths of their process's stacks (root
    /// first) and their labels into threads and processes, the samples of the first process
    /// into `leaves` by their leaf location; checks the number of values and the frames stacks
    /// may hold. Returns how many labels were not kept.
    fn resolve(&self, set: SampleSet, processes: &mut Vec<Process>, leaves: &mut LeafSamples) -> Result<u64> {
        let order = set.in_order();
        let other_labels = set.other_labels;
        let mut merged: Vec<SampleMerger> = Vec::new();
        // Every distinct sample resolved, its frames in `arena`.
        let mut resolved: Vec<Resolved> = Vec::with_capacity(order.len());
        let mut arena: Vec<FrameId> = Vec::new();
        let stacks = || {
            order.iter().map(|&(s, i)| {
                let list = &set.shards[s as usize].list;
                (list, &list.stacks[i as usize])
            })
        };
        // The first sample with the wrong number of values is the one reported.
        if let Some((_, r)) = stacks().find(|(_, r)| r.values.1 - r.values.0 != self.nvalues) {
            return Err(bad(
                r.at,
                format!(
                    "sample[{}]: {} value(s) where sample_type names {} (one value per sample type)",
                    r.sample,
                    r.values.1 - r.values.0,
                    self.nvalues
                ),
            ));
        }
        let mut ids: Vec<u64> = Vec::new();
        let mut labels: Vec<Label> = Vec::new();
        let mut frames_used = 0u64;
        for (run, r) in stacks() {
            let i = r.sample;
            ids.clear();
            if r.wide {
                ids.extend_from_slice(&run.wide[r.locs.0..r.locs.1]);
            } else {
                ids.extend(run.locs[r.locs.0..r.locs.1].iter().map(|&l| l as u64));
            }
            let mut total = 0u64;
            for &id in &ids {
                let l = self.location_ids.get(id).ok_or_else(|| {
                    bad(r.at, format!("sample[{i}].location_id: location id {id} names no location"))
                })?;
                total += self.location_run[l as usize].1 as u64;
            }
            frames_used = frames_used.saturating_add(total);
            if frames_used > self.frame_budget {
                return Err(bad(
                    r.at,
                    format!(
                        "sample[{i}]: its {} location(s) expand to {total} frames with their inline lines, \
                         past the {} frames a profile of {} bytes may expand to ({FRAMES_PER_BYTE} a byte, \
                         at least {MIN_FRAME_BUDGET}); no sampler writes such inline chains",
                        ids.len(),
                        self.frame_budget,
                        self.bytes
                    ),
                ));
            }
            let (mut thread, mut pid) = (None, None);
            labels.clear();
            for &(key, v, kind) in &run.labels[r.labels.0..r.labels.1] {
                if kind != TEXT_LABEL && Some(key) == self.thread_key {
                    thread = thread.or(u32::try_from(v).ok());
                } else if kind != TEXT_LABEL && Some(key) == self.pid_key {
                    pid = pid.or(Some(v));
                } else {
                    labels.push(self.label(key, v, kind, r.at, i)?);
                }
            }
            let p = match processes.iter().position(|p| p.pid == pid.unwrap_or(0)) {
                Some(p) => p,
                None => {
                    processes.push(Process {
                        pid: pid.unwrap_or(0),
                        stacks: Stacks::with_width(self.nvalues),
                        ..Process::default()
                    });
                    merged.push(SampleMerger::default());
                    processes.len() - 1
                }
            };
            // The frames, root first: a Location's last line is the caller.
            let start = arena.len();
            for &id in ids.iter().rev() {
                let l = self.location_ids.get(id).unwrap_or(0);
                let (first, len) = self.location_run[l as usize];
                arena.extend_from_slice(&self.location_frames[first as usize..(first + len) as usize]);
            }
            let leaf = ids.first().and_then(|&id| self.location_ids.get(id));
            let label_set = processes[p].stacks.label_set(std::mem::take(&mut labels));
            resolved.push(Resolved {
                process: p,
                thread,
                label_set,
                frames: (start, arena.len()),
                run,
                values: r.values,
                leaf,
            });
        }
        // Each process's call paths become its tree: the paths sorted, each node made where a
        // path first leaves the one before it (no lookup: sorted paths that share a prefix are
        // neighbours), then the samples in their own order, equal ones merged.
        let path = |k: usize| &arena[resolved[k].frames.0..resolved[k].frames.1];
        let mut node_of = vec![NO_INDEX; resolved.len()];
        use rayon::prelude::*;
        let mut by_path: Vec<usize> = (0..resolved.len()).collect();
        by_path.par_sort_by(|&a, &b| {
            resolved[a].process.cmp(&resolved[b].process).then_with(|| path(a).cmp(path(b)))
        });
        let mut made: Vec<u32> = Vec::new();
        let mut before: Option<usize> = None;
        for &k in &by_path {
            let (p, frames) = (resolved[k].process, path(k));
            let shared = match before {
                Some(b) if resolved[b].process == p => {
                    frames.iter().zip(path(b)).take_while(|(x, y)| x == y).count()
                }
                _ => 0,
            };
            made.truncate(shared);
            let stacks = &mut processes[p].stacks;
            for &f in &frames[shared..] {
                made.push(stacks.push_node_unindexed(made.last().copied().unwrap_or(NO_INDEX), f));
            }
            node_of[k] = made.last().copied().unwrap_or(NO_INDEX);
            before = Some(k);
        }
        drop(arena);
        for (k, r) in resolved.iter().enumerate() {
            let values = &r.run.values[r.values.0..r.values.1];
            if let (0, Some(leaf)) = (r.process, r.leaf) {
                leaves.add(leaf, values);
            }
            merged[r.process].add(
                &mut processes[r.process].stacks,
                node_of[k],
                r.thread,
                r.label_set,
                values,
            );
        }
        Ok(other_labels)
    }
}
