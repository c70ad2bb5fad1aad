//! Writing the model as profile.proto.
//!
//! One `Function` per frame name (with its file and start line when the model knows them), one
//! `Location` per function with one `Line` (location and function ids are equal); a frame named
//! by its address (`0x42ef04`, a location the source left unsymbolized) stays a `Location` with
//! its mapping and address and no line, so it can still be symbolized. One `Sample`
//! per stack (locations leaf first, one value per event), one `Mapping` per image. Stacks
//! with a thread carry a numeric `thread` label; profiles of several processes (or of one
//! with a process id) carry a numeric `pid` label. Models without stacks get them from
//! [`cfghub_analysis::stacks`], with a warning.
//!
//! A profile of flat costs (DCPI) gives its stacks as they are written
//! ([`cfghub_analysis::stacks::stacks_to_write`]): code no symbol covers
//! ([`Frame::Address`]) is pprof's unsymbolized location, its mapping's id and its runtime
//! address (the image's load address + the offset) without a line or a function, which `go
//! tool pprof` shows as `[IMAGE]` and names from the binary, as `--symbols` does. Nothing is
//! kept per address: a location is numbered as its stack is met and the stacks are walked
//! again to write the locations. A function named `IMAGE+0xOFFSET` and a string per address
//! took 64x the input of a DCPI profile without symbols.
//!
//! Samples are encoded as they are met and streamed out; the string table, which they do
//! not refer to, goes last, as Go writes it.

use std::collections::HashMap;
use std::io::Write;

use super::wire::put;
use super::{keys, PID_LABEL, THREAD_LABEL};
use crate::format::WriteOptions;
use cfghub_analysis::stacks::{self as derived, Frame, WrittenStacks};
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::write_error;
use cfghub_model::ir::{
    power_of_ten, rounded, FrameAddress, FrameId, FrameSource, Image, LabelValue, Profile, StringTable,
};

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

    /// The id of a string given an id before.
    fn known(&self, s: &str) -> u64 {
        self.index[s]
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
    let stacks = derived::stacks_to_write(profile, findings)?;
    let profile = stacks.profile();
    if profile.events.is_empty() {
        return Err(Error::unsupported(
            "pprof samples need at least one sample type; the profile has no event",
        ));
    }
    let names = FrameNames::of(&stacks);
    let mut encoder = Encoder {
        profile,
        names,
        strings: Strings::new(),
        buf: Vec::with_capacity(1 << 20),
        scratch: Vec::new(),
        inner: Vec::new(),
        out,
    };
    encoder.sample_types();
    let mappings = Mappings::of(profile);
    let mut locations = Locations::new(names.frames.len(), mappings.images.len());
    encoder.samples(&stacks, &mappings, &mut locations, findings)?;
    // A flat profile's stacks name no image unless some frame is an address in one.
    if matches!(stacks, WrittenStacks::Model(_)) || locations.unsymbolized.contains(&true) {
        encoder.mappings(&mappings, &locations.unsymbolized);
    }
    encoder.locations(&stacks, &mappings, &locations)?;
    encoder.functions(&locations)?;
    let tail = encoder.top_level_fields();
    encoder.finish(&tail)
}

/// The names of the stacks' named frames, and what the model says of them (a flat profile's
/// frames are names alone).
#[derive(Clone, Copy)]
struct FrameNames<'a> {
    frames: &'a StringTable,
    model: Option<&'a Profile>,
}

impl<'a> FrameNames<'a> {
    fn of(stacks: &'a WrittenStacks<'_>) -> Self {
        match stacks {
            WrittenStacks::Model(profile) => FrameNames { frames: &profile.frames, model: Some(profile) },
            WrittenStacks::Flat(flat) => FrameNames { frames: &flat.frames, model: None },
        }
    }

    fn name(&self, f: FrameId) -> &'a str {
        self.frames.get(f)
    }

    fn source(&self, f: FrameId) -> Option<&'a FrameSource> {
        self.model.and_then(|p| p.frame_source(f))
    }

    /// The address of a frame named by it (a location the source left unsymbolized).
    fn address(&self, f: FrameId) -> Option<FrameAddress> {
        self.model.and_then(|p| address_of(p, f))
    }
}

/// The `location` ids of the frames, numbered in order of first appearance root first, as
/// readers of stacks intern frames, so that reading the output back gives the same frame
/// table. A named frame has one location (and one function of the same id); a frame that is
/// an address no symbol covers ([`Frame::Address`]) is a location of its own each time it is
/// met (a flat profile's address is one stack), so nothing is kept per address.
struct Locations {
    /// Named frame -> its location id, 0 for a frame no stack uses.
    of_frame: Vec<u64>,
    /// The named frames used, with their ids, in the order of their ids.
    named: Vec<(FrameId, u64)>,
    /// The locations numbered so far.
    count: u64,
    /// Per mapping (by index among all images): whether a location in it is unsymbolized.
    unsymbolized: Vec<bool>,
}

impl Locations {
    fn new(frames: usize, images: usize) -> Self {
        Locations {
            of_frame: vec![0; frames],
            named: Vec::new(),
            count: 0,
            unsymbolized: vec![false; images],
        }
    }

    /// The location of a named frame, numbered when first met.
    fn of_named(&mut self, f: FrameId) -> (u64, bool) {
        let slot = &mut self.of_frame[f as usize];
        if *slot != 0 {
            return (*slot, false);
        }
        self.count += 1;
        *slot = self.count;
        self.named.push((f, self.count));
        (self.count, true)
    }
}

/// The mapping id of each image of the profile, by its index among all images: the image's
/// own id where those are non-zero and unique, else its index + 1.
struct Mappings<'a> {
    images: Vec<&'a Image>,
    ids: Vec<u64>,
    /// The index among all images of each process's first image.
    first_of_process: Vec<usize>,
}

impl<'a> Mappings<'a> {
    fn of(profile: &'a Profile) -> Self {
        let images: Vec<&Image> = profile.processes.iter().flat_map(|p| &p.images).collect();
        let mut ids: Vec<u64> = images.iter().map(|i| i.id).collect();
        ids.sort_unstable();
        ids.dedup();
        let keep_ids = ids.len() == images.len() && ids.first() != Some(&0);
        let ids = (0..images.len()).map(|n| if keep_ids { images[n].id } else { n as u64 + 1 }).collect();
        let first_of_process = profile
            .processes
            .iter()
            .scan(0, |n, p| {
                *n += p.images.len();
                Some(*n - p.images.len())
            })
            .collect();
        Mappings { images, ids, first_of_process }
    }

    fn id(&self, n: usize) -> u64 {
        self.ids[n]
    }

    /// The image (by index among all) of a [`Frame::Address`] of process `p`.
    fn of_address(&self, stacks: &WrittenStacks<'_>, p: usize, image: FrameId) -> Option<usize> {
        let WrittenStacks::Flat(flat) = stacks else { return None };
        Some(self.first_of_process[p] + flat.address_image(p, image)?)
    }
}

/// The output on its way: the message's fields are encoded into `buf`, which goes out each
/// time it passes 1 MiB, and the strings they name are interned for the string table.
struct Encoder<'a, 'o> {
    profile: &'a Profile,
    names: FrameNames<'a>,
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
            let unit = cfghub_model::ir::event_unit(&profile.meta, &e.name).unwrap_or("count");
            let unit = self.strings.id(unit);
            value_type(&mut self.buf, 1, ty, unit, &mut self.scratch);
        }
    }

    /// `sample`: one per stack, its locations leaf first (numbered in `locations`), one
    /// integer value per event, and its thread and process as labels. Fractional values are
    /// rounded and values beyond 64 bits written as 0, with warnings.
    fn samples(
        &mut self,
        stacks: &WrittenStacks<'_>,
        mappings: &Mappings<'_>,
        locations: &mut Locations,
        findings: &mut Findings,
    ) -> Result<()> {
        let profile = self.profile;
        let names = self.names;
        let nevents = profile.events.len();
        let with_pid = profile.processes.len() > 1 || profile.processes.iter().any(|p| p.pid != 0);
        let thread_key = self.strings.id(THREAD_LABEL);
        let pid_key = self.strings.id(PID_LABEL);
        let (mut fractional, mut negative_or_huge) = (0usize, 0usize);
        let mut written = vec![0f64; nevents];
        let decimals: Vec<u8> = (0..nevents).map(|e| stacks.decimals(e)).collect();
        let mut ids: Vec<u64> = Vec::new();
        for set in profile.processes.iter().flat_map(|p| p.stacks.label_sets()) {
            for label in set.iter() {
                self.strings.id(&label.key);
                match &label.value {
                    LabelValue::Text(t) => self.strings.id(t),
                    LabelValue::Number(_, unit) => self.strings.id(unit.as_deref().unwrap_or("")),
                };
            }
        }
        stacks.try_for_each_labelled_sample(|p, thread, labels, frames, values| {
            ids.clear();
            for &frame in frames {
                let id = match frame {
                    Frame::Named(f) => {
                        let (id, first) = locations.of_named(f);
                        let image = first.then(|| names.address(f)).flatten().and_then(|a| a.image);
                        if let Some(u) = image.and_then(|i| locations.unsymbolized.get_mut(i as usize)) {
                            *u = true;
                        }
                        id
                    }
                    Frame::Address { image, .. } => {
                        if let Some(n) = mappings.of_address(stacks, p, image) {
                            locations.unsymbolized[n] = true;
                        }
                        locations.count += 1;
                        locations.count
                    }
                };
                ids.push(id);
            }
            let (scratch, inner) = (&mut self.scratch, &mut self.inner);
            scratch.clear();
            inner.clear();
            for &id in ids.iter().rev() {
                put::varint(inner, id);
            }
            if !inner.is_empty() {
                put::bytes(scratch, 1, inner);
            }
            inner.clear();
            for (e, sum) in written.iter_mut().enumerate() {
                let v = values.get(e).copied().unwrap_or(0);
                let r = rounded(v, decimals[e]);
                if decimals[e] > 0 && r * power_of_ten(decimals[e]) != v {
                    fractional += 1;
                }
                let i = i64::try_from(r).unwrap_or_else(|_| {
                    negative_or_huge += 1;
                    0
                });
                *sum += i as f64;
                put::varint(inner, i as u64);
            }
            put::bytes(scratch, 2, inner);
            let pid = profile.processes[p].pid;
            for (key, v) in [(thread_key, thread.map(u64::from)), (pid_key, with_pid.then_some(pid))] {
                if let Some(v) = v {
                    inner.clear();
                    put::uint(inner, 1, key);
                    put::key(inner, 3, super::wire::VARINT);
                    put::varint(inner, v);
                    put::bytes(scratch, 3, inner);
                }
            }
            for label in labels {
                inner.clear();
                put::uint(inner, 1, self.strings.known(&label.key));
                match &label.value {
                    LabelValue::Text(t) => put::uint(inner, 2, self.strings.known(t)),
                    LabelValue::Number(n, unit) => {
                        put::key(inner, 3, super::wire::VARINT);
                        put::varint(inner, *n as u64);
                        if let Some(unit) = unit {
                            put::uint(inner, 4, self.strings.known(unit));
                        }
                    }
                }
                put::bytes(scratch, 3, inner);
            }
            put::bytes(&mut self.buf, 2, scratch);
            self.flush_if_full()
        })?;
        if fractional > 0 || negative_or_huge > 0 {
            let kept = profile.events.iter().zip(&written).map(|(e, &w)| (e.name.as_str(), w));
            let why = format!("{fractional} fractional stack value(s) rounded to integers");
            cfghub_analysis::totals::warn_kept(findings, "pprof", profile, kept, &why);
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
    /// unsymbolized location does not claim to have functions. The program's binary (the
    /// image with `main`) goes first: pprof takes the first mapping for the main binary (its
    /// `File:`), and a recording's first image is often the kernel.
    fn mappings(&mut self, mappings: &Mappings<'a>, unsymbolized: &[bool]) {
        let profile = self.profile;
        let mut order: Vec<usize> = (0..mappings.images.len()).collect();
        if let Some((p, i)) = cfghub_analysis::names::image_with_main(&profile.processes) {
            let main = mappings.first_of_process[p] + i as usize;
            order[..=main].rotate_right(1);
        }
        for n in order {
            let image = mappings.images[n];
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
    }

    /// `location`: one per named frame used (one line, its function's id, which is the
    /// location's) and one per address frame met, in the order of their ids (the stacks are
    /// walked again, numbered as [`Encoder::samples`] numbered them). A frame named by its
    /// address, or an address no symbol covers, is a location with its mapping and address
    /// and no line, for `go tool pprof` or `--symbols` to name.
    fn locations(
        &mut self,
        stacks: &WrittenStacks<'_>,
        mappings: &Mappings<'_>,
        locations: &Locations,
    ) -> Result<()> {
        let names = self.names;
        let mut last = 0;
        stacks.try_for_each_sample(|p, _, frames, _| {
            for &frame in frames {
                let (scratch, inner) = (&mut self.scratch, &mut self.inner);
                scratch.clear();
                match frame {
                    Frame::Named(f) => {
                        let id = locations.of_frame[f as usize];
                        if id <= last {
                            continue;
                        }
                        last = id;
                        put::uint(scratch, 1, id);
                        if let Some(address) = names.address(f) {
                            let image =
                                address.image.map(|i| i as usize).filter(|&i| i < mappings.images.len());
                            put::uint(scratch, 2, image.map_or(0, |n| mappings.id(n)));
                            put::uint(scratch, 3, address.address);
                        } else {
                            inner.clear();
                            put::uint(inner, 1, id);
                            put::uint(inner, 2, names.source(f).and_then(|s| s.line).map_or(0, u64::from));
                            put::bytes(scratch, 4, inner);
                        }
                    }
                    Frame::Address { image, offset } => {
                        last += 1;
                        put::uint(scratch, 1, last);
                        let n = mappings.of_address(stacks, p, image);
                        put::uint(scratch, 2, n.map_or(0, |n| mappings.id(n)));
                        let load_addr = n.map_or(0, |n| mappings.images[n].load_addr);
                        put::uint(scratch, 3, load_addr.wrapping_add(offset));
                    }
                }
                put::bytes(&mut self.buf, 4, scratch);
            }
            self.flush_if_full()
        })
    }

    /// `function`: one per named frame used that is not an address, with its location's id.
    fn functions(&mut self, locations: &Locations) -> Result<()> {
        let names = self.names;
        for &(f, id) in &locations.named {
            if names.address(f).is_some() {
                continue;
            }
            let scratch = &mut self.scratch;
            scratch.clear();
            put::uint(scratch, 1, id);
            let name = self.strings.id(names.name(f));
            put::uint(scratch, 2, name);
            let source = names.source(f);
            let system = source.and_then(|s| s.system_name.as_deref()).map_or(name, |s| self.strings.id(s));
            put::uint(scratch, 3, system);
            if let Some(file) = source.and_then(|s| s.file) {
                put::uint(scratch, 4, self.strings.id(self.profile.file_name(file)));
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
        // The last sample type is the default when none is stated: stated only otherwise.
        let default = header(profile, keys::DEFAULT_SAMPLE_TYPE);
        if let Some(v) = default.filter(|v| profile.events.last().is_none_or(|e| e.name != *v)) {
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
fn address_of(profile: &Profile, f: FrameId) -> Option<FrameAddress> {
    profile
        .frame_source(f)
        .and_then(|s| s.address)
        .filter(|a| profile.frames.get(f) == format!("{:#x}", a.address))
}
