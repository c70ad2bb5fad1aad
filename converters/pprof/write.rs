//! Writing the model as profile.proto.
//!
//! One `Function` per frame name (with its file and start line when the model knows them), one
//! `Location` per function with one `Line` (location and function ids are equal); a frame named
//! by its address (`0x42ef04`, a location the source left unsymbolized) stays a `Location` with
//! its mapping and address and no line, so it can still be symbolized. One `Sample`
//! per stack (locations leaf first, one value per event), one `Mapping` per image. Stacks
//! with a thread carry a numeric `thread` label; profiles of several processes (or of one
//! with a process id) carry a numeric `pid` label. Models without stacks get them from
//! [`crate::analysis::stacks`], with a warning.
//!
//! Samples are encoded as they are met and streamed out; the string table, which they do
//! not refer to, goes last, as Go writes it.

use std::collections::HashMap;
use std::io::Write;

use super::wire::put;
use super::{keys, PID_LABEL, THREAD_LABEL};
use crate::analysis::stacks as derived;
use crate::error::{Error, Findings, Result};
use crate::io::write_error;
use crate::ir::{Image, Profile};
use crate::registry::WriteOptions;

/// Interned strings of the output; index 0 is the empty string.
struct Strings<'a> {
    list: Vec<&'a str>,
    index: HashMap<&'a str, u64>,
}

impl<'a> Strings<'a> {
    fn new() -> Self {
        Strings { list: vec![""], index: HashMap::from([("", 0)]) }
    }

    fn id(&mut self, s: &'a str) -> u64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u64;
        self.list.push(s);
        self.index.insert(s, i);
        i
    }
}

fn header<'a>(profile: &'a Profile, key: &str) -> Option<&'a str> {
    profile.meta.headers.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn value_type(out: &mut Vec<u8>, field: u64, ty: u64, unit: u64, scratch: &mut Vec<u8>) {
    scratch.clear();
    put::uint(scratch, 1, ty);
    put::uint(scratch, 2, unit);
    put::bytes(out, field, scratch);
}

/// Writes the profile as raw profile.proto (compression, if any, is the output's).
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    _options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let derived = derived::stacks_for_output(profile, findings)?;
    let profile = derived.as_ref().unwrap_or(profile);
    if profile.events.is_empty() {
        return Err(Error::unsupported(
            "pprof samples need at least one sample type; the profile has no event",
        ));
    }
    let mut encoder = Encoder {
        profile,
        strings: Strings::new(),
        buf: Vec::with_capacity(1 << 20),
        scratch: Vec::new(),
        inner: Vec::new(),
        out,
    };
    encoder.sample_types();
    let frames = UsedFrames::of(profile);
    encoder.samples(&frames.function_of, findings)?;
    let mappings = encoder.mappings(&frames.used);
    encoder.locations_and_functions(&frames.used, &mappings)?;
    let tail = encoder.top_level_fields();
    encoder.finish(&tail)
}

/// The frames the stacks use, numbered in order of first appearance root first, as readers
/// of stacks intern frames, so that reading the output back gives the same frame table.
struct UsedFrames {
    /// Frame id -> function (= location) id, 0 for a frame no stack uses.
    function_of: Vec<u64>,
    /// The frames used, in the order of their ids.
    used: Vec<u32>,
}

impl UsedFrames {
    fn of(profile: &Profile) -> Self {
        let mut function_of: Vec<u64> = vec![0; profile.frames.len()];
        let mut used: Vec<u32> = Vec::new();
        for stack in profile.processes.iter().flat_map(|p| &p.stacks) {
            for &f in &stack.frames {
                let slot = &mut function_of[f as usize];
                if *slot == 0 {
                    used.push(f);
                    *slot = used.len() as u64;
                }
            }
        }
        UsedFrames { function_of, used }
    }
}

/// The mapping id of each image of the profile, by its index among all images: the image's
/// own id where those are non-zero and unique, else its index + 1.
struct Mappings<'a> {
    images: Vec<&'a Image>,
    ids: Vec<u64>,
}

impl Mappings<'_> {
    fn id(&self, n: usize) -> u64 {
        self.ids[n]
    }
}

/// The output on its way: the message's fields are encoded into `buf`, which goes out each
/// time it passes 1 MiB, and the strings they name are interned for the string table.
struct Encoder<'a, 'o> {
    profile: &'a Profile,
    strings: Strings<'a>,
    buf: Vec<u8>,
    /// Room for the message being encoded, and for the one inside it.
    scratch: Vec<u8>,
    inner: Vec<u8>,
    out: &'o mut dyn Write,
}

impl<'a> Encoder<'a, '_> {
    /// Writes out what `buf` holds once it passes 1 MiB.
    fn flush_if_full(&mut self) -> Result<()> {
        if self.buf.len() >= 1 << 20 {
            self.out.write_all(&self.buf).map_err(write_error("pprof output"))?;
            self.buf.clear();
        }
        Ok(())
    }

    /// `sample_type`: the events with their units ("count" when the model has none).
    fn sample_types(&mut self) {
        let profile = self.profile;
        for e in &profile.events {
            let ty = self.strings.id(&e.name);
            let unit = crate::ir::event_unit(&profile.meta, &e.name).unwrap_or("count");
            let unit = self.strings.id(unit);
            value_type(&mut self.buf, 1, ty, unit, &mut self.scratch);
        }
    }

    /// `sample`: one per stack, its locations leaf first (by `function_of`), one integer value
    /// per event, and its thread and process as labels. Fractional values are rounded and
    /// values beyond 64 bits written as 0, with warnings.
    fn samples(&mut self, function_of: &[u64], findings: &mut Findings) -> Result<()> {
        let profile = self.profile;
        let nevents = profile.events.len();
        let with_pid = profile.processes.len() > 1 || profile.processes.iter().any(|p| p.pid != 0);
        let thread_key = self.strings.id(THREAD_LABEL);
        let pid_key = self.strings.id(PID_LABEL);
        let (mut fractional, mut negative_or_huge) = (0usize, 0usize);
        let mut written = vec![0f64; nevents];
        for process in &profile.processes {
            for stack in &process.stacks {
                let (scratch, inner) = (&mut self.scratch, &mut self.inner);
                scratch.clear();
                inner.clear();
                for &f in stack.frames.iter().rev() {
                    put::varint(inner, function_of[f as usize]);
                }
                if !inner.is_empty() {
                    put::bytes(scratch, 1, inner);
                }
                inner.clear();
                for (e, sum) in written.iter_mut().enumerate() {
                    let v = stack.values.get(e).copied().unwrap_or(0.0);
                    let r = v.round();
                    if r != v {
                        fractional += 1;
                    }
                    let i = if r.is_finite() && r.abs() < 9.2e18 {
                        r as i64
                    } else {
                        negative_or_huge += 1;
                        0
                    };
                    *sum += i as f64;
                    put::varint(inner, i as u64);
                }
                put::bytes(scratch, 2, inner);
                for (key, v) in
                    [(thread_key, stack.thread.map(u64::from)), (pid_key, with_pid.then_some(process.pid))]
                {
                    if let Some(v) = v {
                        inner.clear();
                        put::uint(inner, 1, key);
                        put::key(inner, 3, super::wire::VARINT);
                        put::varint(inner, v);
                        put::bytes(scratch, 3, inner);
                    }
                }
                put::bytes(&mut self.buf, 2, scratch);
                self.flush_if_full()?;
            }
        }
        if fractional > 0 || negative_or_huge > 0 {
            let kept = profile.events.iter().zip(&written).map(|(e, &w)| (e.name.as_str(), w));
            let why = format!("{fractional} fractional stack value(s) rounded to integers");
            crate::analysis::totals::warn_kept(findings, "pprof", profile, kept, &why);
        }
        if negative_or_huge > 0 {
            findings.warn(
                None,
                format!("pprof: {negative_or_huge} stack value(s) beyond 64-bit integers written as 0"),
            );
        }
        Ok(())
    }

    /// `mapping`: the images (ids kept when they are non-zero and unique); an image with an
    /// unsymbolized frame of `used` does not claim to have functions.
    fn mappings(&mut self, used: &[u32]) -> Mappings<'a> {
        let profile = self.profile;
        let images: Vec<&Image> = profile.processes.iter().flat_map(|p| &p.images).collect();
        let mut ids: Vec<u64> = images.iter().map(|i| i.id).collect();
        ids.sort_unstable();
        ids.dedup();
        let keep_ids = ids.len() == images.len() && ids.first() != Some(&0);
        let ids = (0..images.len()).map(|n| if keep_ids { images[n].id } else { n as u64 + 1 }).collect();
        let mappings = Mappings { images, ids };
        let unsymbolized = unsymbolized_images(profile, used, mappings.images.len());
        for (n, image) in mappings.images.iter().enumerate() {
            let scratch = &mut self.scratch;
            scratch.clear();
            put::uint(scratch, 1, mappings.id(n));
            put::uint(scratch, 2, image.load_addr);
            put::uint(scratch, 3, image.size.map_or(0, |s| image.load_addr.saturating_add(s)));
            put::uint(scratch, 4, image.file_offset.unwrap_or(0));
            put::uint(scratch, 5, image.file.map_or(0, |f| self.strings.id(profile.file_name(f))));
            put::uint(scratch, 6, image.build_id.as_deref().map_or(0, |b| self.strings.id(b)));
            // Functions are named already: no symbolization wanted (unless some are not).
            put::flag(scratch, 7, !unsymbolized[n]);
            put::bytes(&mut self.buf, 3, scratch);
        }
        mappings
    }

    /// `location` and `function`: one each per frame used, same ids (no function for a frame
    /// named by its address, whose location has its mapping and address instead of a line).
    fn locations_and_functions(&mut self, used: &[u32], mappings: &Mappings<'_>) -> Result<()> {
        let profile = self.profile;
        for (n, &f) in used.iter().enumerate() {
            let id = n as u64 + 1;
            let (scratch, inner) = (&mut self.scratch, &mut self.inner);
            scratch.clear();
            inner.clear();
            put::uint(scratch, 1, id);
            if let Some(address) = address_of(profile, f) {
                let image = address.image.map(|i| i as usize).filter(|&i| i < mappings.images.len());
                put::uint(scratch, 2, image.map_or(0, |n| mappings.id(n)));
                put::uint(scratch, 3, address.address);
                put::bytes(&mut self.buf, 4, scratch);
                continue;
            }
            put::uint(inner, 1, id);
            let source = profile.frame_source(f);
            put::uint(inner, 2, source.and_then(|s| s.line).map_or(0, u64::from));
            put::bytes(scratch, 4, inner);
            put::bytes(&mut self.buf, 4, scratch);
        }
        for (n, &f) in used.iter().enumerate() {
            if address_of(profile, f).is_some() {
                continue;
            }
            let scratch = &mut self.scratch;
            scratch.clear();
            put::uint(scratch, 1, n as u64 + 1);
            let name = self.strings.id(profile.frames.get(f));
            put::uint(scratch, 2, name);
            let source = profile.frame_source(f);
            let system = source.and_then(|s| s.system_name.as_deref()).map_or(name, |s| self.strings.id(s));
            put::uint(scratch, 3, system);
            if let Some(file) = source.and_then(|s| s.file) {
                put::uint(scratch, 4, self.strings.id(profile.file_name(file)));
            }
            put::uint(scratch, 5, source.and_then(|s| s.line).map_or(0, u64::from));
            put::bytes(&mut self.buf, 5, scratch);
            self.flush_if_full()?;
        }
        Ok(())
    }

    /// The top-level fields the model keeps in its headers (frame filters, time, duration,
    /// period, comments, default sample type, doc URL), encoded apart: they go after the
    /// string table.
    fn top_level_fields(&mut self) -> Vec<u8> {
        let profile = self.profile;
        let strings = &mut self.strings;
        let mut tail = Vec::new();
        let mut index_of = |key: &str| header(profile, key).map(|v| strings.id(v));
        if let Some(i) = index_of(keys::DROP_FRAMES) {
            put::uint(&mut tail, 7, i);
        }
        if let Some(i) = index_of(keys::KEEP_FRAMES) {
            put::uint(&mut tail, 8, i);
        }
        for (field, key) in [(9, keys::TIME_NANOS), (10, keys::DURATION_NANOS)] {
            if let Some(v) = header(profile, key).and_then(|v| v.parse::<i64>().ok()) {
                put::uint(&mut tail, field, v as u64);
            }
        }
        if let Some((ty, unit)) = header(profile, keys::PERIOD_TYPE).and_then(|v| v.rsplit_once(' ')) {
            let (ty, unit) = (self.strings.id(ty), self.strings.id(unit));
            value_type(&mut tail, 11, ty, unit, &mut self.scratch);
        }
        if let Some(v) = header(profile, keys::PERIOD).and_then(|v| v.parse::<i64>().ok()) {
            put::uint(&mut tail, 12, v as u64);
        }
        let comments: Vec<u64> = profile
            .meta
            .headers
            .iter()
            .filter(|(k, _)| k == keys::COMMENT)
            .map(|(_, v)| self.strings.id(v))
            .collect();
        put::packed(&mut tail, 13, comments.iter().copied(), &mut self.scratch);
        if let Some(v) = header(profile, keys::DEFAULT_SAMPLE_TYPE) {
            put::uint(&mut tail, 14, self.strings.id(v));
        }
        if let Some(v) = header(profile, keys::DOC_URL) {
            put::uint(&mut tail, 15, self.strings.id(v));
        }
        tail
    }

    /// Writes the string table (last: everything before has named its strings), then `tail`.
    fn finish(mut self, tail: &[u8]) -> Result<()> {
        for i in 0..self.strings.list.len() {
            put::bytes(&mut self.buf, 6, self.strings.list[i].as_bytes());
            self.flush_if_full()?;
        }
        self.buf.extend_from_slice(tail);
        self.out.write_all(&self.buf).map_err(write_error("pprof output"))
    }
}

/// The address of a frame named by it (a location the source left unsymbolized): written as
/// such, a location with its mapping and address and no line, for `go tool pprof` or cfghub to
/// symbolize later.
fn address_of(profile: &Profile, f: u32) -> Option<crate::ir::FrameAddress> {
    profile
        .frame_source(f)
        .and_then(|s| s.address)
        .filter(|a| profile.frames.get(f) == format!("{:#x}", a.address))
}

/// Which of `images` (of the first process, by index) hold an unsymbolized frame of `used`:
/// their mappings do not claim to have functions.
fn unsymbolized_images(profile: &Profile, used: &[u32], images: usize) -> Vec<bool> {
    let mut unsymbolized = vec![false; images];
    for &f in used {
        if let Some(u) =
            address_of(profile, f).and_then(|a| a.image).and_then(|i| unsymbolized.get_mut(i as usize))
        {
            *u = true;
        }
    }
    unsymbolized
}
