//! Reading profile.proto into the model.
//!
//! The fields of `Profile` may come in any order (Go writes the string table last), so the
//! reader takes two passes over the top-level message: the first decodes everything but the
//! samples and notes where each sample lies, the second turns samples into stacks once
//! functions and locations are known. Nothing is allocated from a count in the input: every
//! length is checked against the bytes left ([`super::wire`]).

use std::collections::HashMap;

use super::wire::{Cursor, FIXED32, FIXED64, LEN, VARINT};
use super::{keys, PID_LABEL, THREAD_LABEL};
use crate::error::{Error, Findings, Result};
use crate::io::Source;
use crate::ir::{Event, FrameAddress, FrameId, FrameSource, Image, Process, Profile, Stack};
use crate::registry::ReadOptions;

const HINT: &str = "expected a pprof profile.proto (gzip-compressed or raw), as written by \
                    runtime/pprof, `go tool pprof -proto` or `perf_to_profile`";

/// Reads a whole pprof input (decompressed already by [`crate::io`]).
pub fn read(input: &mut Source<'_>, _options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    if input.is_file() {
        return read_bytes(input.bytes()?, findings);
    }
    // A stream (decompressed on its own thread): samples are decoded as their bytes arrive,
    // side by side with the decompression; the rest is read once the input is complete.
    let size = input.size_hint();
    let input = input.stream();
    let mut bytes = Vec::with_capacity(size.unwrap_or(0).min(1 << 32) as usize);
    let mut early = Vec::new();
    let mut scanned = 0usize;
    let mut pending: Vec<(usize, usize)> = Vec::new();
    let mut scanning = true;
    loop {
        let chunk = input.fill_buf().map_err(|e| Error::io("-", e))?;
        if chunk.is_empty() {
            break;
        }
        let n = chunk.len();
        bytes.extend_from_slice(chunk);
        input.consume(n);
        if scanning {
            scanning = scan_samples(&bytes, &mut scanned, &mut pending);
            if pending.len() >= RUN {
                let ranges: Vec<(&[u8], u64)> =
                    pending.iter().map(|&(a, b)| (&bytes[a..b], a as u64)).collect();
                early.push(decode_raw(early.len() * RUN, &ranges)?);
                pending.clear();
            }
        }
    }
    read_with_early(&bytes, early, findings)
}

/// Samples decoded in runs of this many.
const RUN: usize = 32 * 1024;

/// Walks the complete top-level fields from `*pos`, noting the byte ranges of samples in
/// `pending` (in runs of [`RUN`]). Returns false at anything unexpected: the full reader will
/// report it.
fn scan_samples(bytes: &[u8], pos: &mut usize, pending: &mut Vec<(usize, usize)>) -> bool {
    while *pos < bytes.len() && pending.len() < RUN {
        let mut c = Cursor::new(&bytes[*pos..], *pos as u64);
        let Ok((field, wire)) = c.key() else { return bytes.len() - *pos < 16 };
        let ok = match wire {
            LEN => match c.bytes() {
                Ok((b, at)) => {
                    if field == 2 {
                        pending.push((at as usize, at as usize + b.len()));
                    }
                    true
                }
                Err(_) => return true,
            },
            _ => c.skip(wire).is_ok(),
        };
        if !ok {
            return true;
        }
        *pos = c.offset() as usize;
    }
    true
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
struct Top<'a> {
    sample_types: Vec<(u64, u64, u64)>,
    /// (bytes, offset) of each sample.
    samples: Vec<(&'a [u8], u64)>,
    mappings: Vec<Mapping>,
    locations: Vec<Location>,
    functions: Vec<Function>,
    strings: Vec<(&'a [u8], u64)>,
    drop_frames: Option<u64>,
    keep_frames: Option<u64>,
    time_nanos: Option<u64>,
    duration_nanos: Option<u64>,
    period_type: Option<(u64, u64, u64)>,
    period: Option<u64>,
    comments: Vec<u64>,
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
                let mut function_id = 0;
                while !line.is_empty() {
                    match line.key().map_err(within(|| format!("line[{n}]")))? {
                        (1, w) => function_id = line.uint(w, "function_id")?,
                        (_, w) => line.skip(w).map_err(within(|| format!("line[{n}]")))?,
                    }
                }
                l.lines.push(function_id);
            }
            (_, w) => c.skip(w)?,
        }
    }
    Ok(l)
}

fn top(bytes: &[u8]) -> Result<Top<'_>> {
    let mut t = Top::default();
    let mut c = Cursor::new(bytes, 0);
    while !c.is_empty() {
        let at = c.offset();
        let (field, wire) = c.key().map_err(within(|| "Profile".to_string()))?;
        match field {
            1 => {
                let i = t.sample_types.len();
                let m = c.message(wire, "sample_type").map_err(within(|| format!("sample_type[{i}]")))?;
                t.sample_types.push(value_type(m).map_err(within(|| format!("sample_type[{i}]")))?);
            }
            2 => {
                let i = t.samples.len();
                let (b, o) = c.message(wire, "sample").map_err(within(|| format!("sample[{i}]")))?.rest();
                t.samples.push((b, o));
            }
            3 => {
                let i = t.mappings.len();
                let m = c.message(wire, "mapping").map_err(within(|| format!("mapping[{i}]")))?;
                t.mappings.push(mapping(m).map_err(within(|| format!("mapping[{i}]")))?);
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
                let m = c.message(wire, "string_table").map_err(within(|| format!("string_table[{i}]")))?;
                t.strings.push(m.rest());
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
                let comments = &mut t.comments;
                c.repeated(wire, "comment", |v| comments.push(v)).map_err(within(|| "Profile".into()))?
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
    Ok(t)
}

/// The string table, checked: index lookups with the path of the field that refers.
struct Strings<'a> {
    table: Vec<std::borrow::Cow<'a, str>>,
}

impl Strings<'_> {
    fn get(&self, i: u64, at: u64, path: impl FnOnce() -> String) -> Result<&str> {
        self.table.get(i as usize).map(|s| s.as_ref()).ok_or_else(|| {
            bad(
                at,
                format!("{}: string index {i} past the string table ({} strings)", path(), self.table.len()),
            )
        })
    }

    /// `None` for the empty string.
    fn opt(&self, i: u64, at: u64, path: impl FnOnce() -> String) -> Result<Option<&str>> {
        self.get(i, at, path).map(|s| (!s.is_empty()).then_some(s))
    }
}

/// Reads a whole decompressed profile.proto.
pub fn read_bytes(bytes: &[u8], findings: &mut Findings) -> Result<Profile> {
    read_with_early(bytes, Vec::new(), findings)
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

/// Reads a whole profile whose first samples were decoded already (`early`, runs of [`RUN`]).
fn read_with_early(bytes: &[u8], early: Vec<RawRun>, findings: &mut Findings) -> Result<Profile> {
    refuse_legacy(bytes)?;
    let t = top(bytes)?;
    let strings = Strings { table: t.strings.iter().map(|(b, _)| String::from_utf8_lossy(b)).collect() };
    match t.strings.first() {
        None => {
            return Err(bad(0, "Profile: no string table (string_table[0] must be the empty string)".into()))
        }
        Some((b, at)) if !b.is_empty() => {
            return Err(bad(*at, "string_table[0]: not the empty string".into()));
        }
        _ => {}
    }
    let mut profile = Profile::default();
    let headers = &mut profile.meta.headers;
    for (i, &(ty, unit, at)) in t.sample_types.iter().enumerate() {
        let name = strings.get(ty, at, || format!("sample_type[{i}].type"))?;
        let unit = strings.get(unit, at, || format!("sample_type[{i}].unit"))?;
        profile.events.push(Event::new(name));
        if !unit.is_empty() {
            headers.push((keys::UNIT.into(), format!("{name} {unit}")));
        }
    }
    let top_string = |i: u64, what: &str| strings.get(i, 0, || what.to_string()).map(str::to_string);
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
    for (i, &c) in t.comments.iter().enumerate() {
        headers.push((keys::COMMENT.into(), top_string(c, &format!("comment[{i}]"))?));
    }

    // Mappings become images.
    let mapping_ids = IdMap::new(t.mappings.iter().map(|m| (m.id, m.at)), "mapping")?;
    let mut images = Vec::with_capacity(t.mappings.len());
    for (i, m) in t.mappings.iter().enumerate() {
        let file = strings.opt(m.filename, m.at, || format!("mapping[{i}].filename"))?;
        let build_id = strings.opt(m.build_id, m.at, || format!("mapping[{i}].build_id"))?;
        images.push(Image {
            id: m.id,
            file: file.map(|f| profile.files.intern(f)),
            load_addr: m.memory_start,
            size: (m.memory_limit > m.memory_start).then(|| m.memory_limit - m.memory_start),
            file_offset: (m.file_offset != 0).then_some(m.file_offset),
            build_id: build_id.map(str::to_string),
            ..Image::default()
        });
    }

    // Functions become frames (by name) with their sources.
    let function_ids = IdMap::new(t.functions.iter().map(|f| (f.id, f.at)), "function")?;
    let mut function_frame: Vec<FrameId> = Vec::with_capacity(t.functions.len());
    for (i, f) in t.functions.iter().enumerate() {
        let name = strings.get(f.name, f.at, || format!("function[{i}].name"))?;
        let system = strings.get(f.system_name, f.at, || format!("function[{i}].system_name"))?;
        let file = strings.opt(f.filename, f.at, || format!("function[{i}].filename"))?;
        let shown = if name.is_empty() { system } else { name };
        let frame = profile.frames.intern(shown);
        if frame as usize == profile.frame_sources.len() {
            profile.frame_sources.push(FrameSource {
                file: file.map(|f| profile.files.intern(f)),
                line: u32::try_from(f.start_line).ok().filter(|&l| l > 0),
                system_name: (!system.is_empty() && system != shown).then(|| system.to_string()),
                address: None,
            });
        }
        function_frame.push(frame);
    }

    // Locations become runs of frames, root first (a Location's last line is the caller).
    let location_ids = IdMap::new(t.locations.iter().map(|l| (l.id, l.at)), "location")?;
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
            location_frames.push(address_frame(&mut profile, l, &mapping_ids));
        }
        for (j, &fid) in l.lines.iter().enumerate().rev() {
            let f = function_ids.get(fid).ok_or_else(|| {
                bad(l.at, format!("location[{i}].line[{j}]: function id {fid} names no function"))
            })?;
            location_frames.push(function_frame[f as usize]);
        }
        location_run.push((start, location_frames.len() as u32 - start));
    }
    // Sources not known for any frame say nothing: leave the table empty.
    while profile.frame_sources.last().is_some_and(|s| *s == FrameSource::default()) {
        profile.frame_sources.pop();
    }

    // Samples become stacks: runs of samples decoded side by side (those not decoded while
    // the input arrived), then their location ids resolved into frames.
    use rayon::prelude::*;
    let done = early.len() * RUN;
    let mut runs = early;
    let rest: Vec<Result<RawRun>> = t.samples[done.min(t.samples.len())..]
        .par_chunks(RUN)
        .enumerate()
        .map(|(k, samples)| decode_raw(done + k * RUN, samples))
        .collect();
    for run in rest {
        runs.push(run?);
    }
    let ctx = SampleContext {
        nvalues: t.sample_types.len(),
        thread_key: strings.table.iter().position(|s| s == THREAD_LABEL).map(|i| i as u64),
        pid_key: strings.table.iter().position(|s| s == PID_LABEL).map(|i| i as u64),
        location_ids: &location_ids,
        location_run: &location_run,
        location_frames: &location_frames,
    };
    let resolved: Vec<Result<Decoded>> =
        runs.into_par_iter().enumerate().map(|(k, run)| ctx.resolve(k * RUN, run)).collect();
    let mut processes: Vec<Process> = Vec::new();
    let mut other_labels = 0usize;
    for run in resolved {
        let run = run?;
        other_labels += run.other_labels;
        for (pid, stack) in run.stacks {
            let p = match processes.iter().position(|p| p.pid == pid.unwrap_or(0)) {
                Some(p) => p,
                None => {
                    processes.push(Process { pid: pid.unwrap_or(0), ..Process::default() });
                    processes.len() - 1
                }
            };
            processes[p].stacks.push(stack);
        }
    }
    if other_labels > 0 {
        findings.warn(
            None,
            format!(
                "pprof: {other_labels} sample label(s) other than numeric '{THREAD_LABEL}' and '{PID_LABEL}' \
                 not kept (the model has no labels)"
            ),
        );
    }
    if processes.is_empty() {
        processes.push(Process::default());
    }
    processes[0].images = images;
    profile.processes = processes;
    Ok(profile)
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

/// What decoding a sample needs to know.
struct SampleContext<'a> {
    nvalues: usize,
    thread_key: Option<u64>,
    pid_key: Option<u64>,
    location_ids: &'a IdMap,
    location_run: &'a [(u32, u32)],
    location_frames: &'a [FrameId],
}

/// Stacks of a run of samples, with their `pid` labels.
struct Decoded {
    stacks: Vec<(Option<u64>, Stack)>,
    other_labels: usize,
}

/// A run of samples as the wire says them: stacks whose frames are still location ids, leaf
/// first (ids beyond `u32` in `wide`), their offsets, and their labels.
struct RawRun {
    stacks: Vec<Stack>,
    at: Vec<u64>,
    /// (sample in the run, location ids) of samples with an id beyond `u32`.
    wide: Vec<(u32, Vec<u64>)>,
    /// (sample in the run, key, num, has a string) of every label.
    labels: Vec<(u32, u64, Option<u64>, bool)>,
}

/// Decodes the fields of `samples` (the first is sample number `first`); ids are resolved by
/// [`SampleContext::resolve`] once the tables are known.
fn decode_raw(first: usize, samples: &[(&[u8], u64)]) -> Result<RawRun> {
    let mut run = RawRun {
        stacks: Vec::with_capacity(samples.len()),
        at: Vec::with_capacity(samples.len()),
        wide: Vec::new(),
        labels: Vec::new(),
    };
    let mut locs: Vec<u64> = Vec::new();
    let mut values: Vec<f64> = Vec::new();
    for (n, &(bytes, at)) in samples.iter().enumerate() {
        let i = first + n;
        let mut c = Cursor::new(bytes, at);
        locs.clear();
        values.clear();
        while !c.is_empty() {
            match c.key().map_err(within(|| format!("sample[{i}]")))? {
                (1, w) => c
                    .repeated(w, "location_id", |v| locs.push(v))
                    .map_err(within(|| format!("sample[{i}]")))?,
                (2, w) => c
                    .repeated(w, "value", |v| values.push(v as i64 as f64))
                    .map_err(within(|| format!("sample[{i}]")))?,
                (3, w) => {
                    let path = || format!("sample[{i}].label");
                    let mut label = c.message(w, "label").map_err(within(path))?;
                    let (mut key, mut num, mut has_str) = (0, None, false);
                    while !label.is_empty() {
                        match label.key().map_err(within(path))? {
                            (1, w) => key = label.uint(w, "key").map_err(within(path))?,
                            (2, w) => has_str = label.uint(w, "str").map_err(within(path))? != 0,
                            (3, w) => num = Some(label.uint(w, "num").map_err(within(path))?),
                            (_, w) => label.skip(w).map_err(within(path))?,
                        }
                    }
                    run.labels.push((n as u32, key, num, has_str));
                }
                (_, w) => c.skip(w).map_err(within(|| format!("sample[{i}]")))?,
            }
        }
        let frames: Vec<FrameId> = if locs.iter().all(|&l| l < u32::MAX as u64) {
            locs.iter().map(|&l| l as u32).collect()
        } else {
            run.wide.push((n as u32, locs.clone()));
            Vec::new()
        };
        run.stacks.push(Stack { frames, values: values.clone(), thread: None });
        run.at.push(at);
    }
    Ok(run)
}

impl SampleContext<'_> {
    /// Resolves a run's location ids into frames (root first) and its labels into threads and
    /// processes; checks the number of values.
    fn resolve(&self, first: usize, mut run: RawRun) -> Result<Decoded> {
        let mut out = Decoded { stacks: Vec::with_capacity(run.stacks.len()), other_labels: 0 };
        let mut pids: Vec<Option<u64>> = vec![None; run.stacks.len()];
        for &(n, key, num, has_str) in &run.labels {
            match num {
                Some(v) if !has_str && Some(key) == self.thread_key => {
                    run.stacks[n as usize].thread = u32::try_from(v).ok()
                }
                Some(v) if !has_str && Some(key) == self.pid_key => pids[n as usize] = Some(v),
                _ => out.other_labels += 1,
            }
        }
        let mut wide = run.wide.into_iter().peekable();
        let mut ids: Vec<u64> = Vec::new();
        for (n, (mut stack, at)) in run.stacks.into_iter().zip(run.at).enumerate() {
            let i = first + n;
            if stack.values.len() != self.nvalues {
                return Err(bad(
                    at,
                    format!(
                        "sample[{i}]: {} value(s) where sample_type names {} (one value per sample type)",
                        stack.values.len(),
                        self.nvalues
                    ),
                ));
            }
            ids.clear();
            match wide.peek() {
                Some((w, _)) if *w as usize == n => ids.extend(wide.next().map(|w| w.1).unwrap_or_default()),
                _ => ids.extend(stack.frames.iter().map(|&f| f as u64)),
            }
            let mut simple = true;
            for (k, &id) in ids.iter().enumerate() {
                let l = self.location_ids.get(id).ok_or_else(|| {
                    bad(at, format!("sample[{i}].location_id: location id {id} names no location"))
                })?;
                let (start, len) = self.location_run[l as usize];
                if len == 1 && simple && k < stack.frames.len() {
                    stack.frames[k] = self.location_frames[start as usize];
                } else {
                    simple = false;
                }
            }
            if simple && stack.frames.len() == ids.len() {
                stack.frames.reverse();
            } else {
                let mut frames = Vec::with_capacity(ids.len() + 4);
                for &id in ids.iter().rev() {
                    let l = self.location_ids.get(id).unwrap_or(0);
                    let (start, len) = self.location_run[l as usize];
                    frames.extend_from_slice(&self.location_frames[start as usize..(start + len) as usize]);
                }
                stack.frames = frames;
            }
            out.stacks.push((pids[n], stack));
        }
        Ok(out)
    }
}
