//! speedscope's JSON file format (jlfwong/speedscope, src/lib/file-format-spec.ts), written
//! only: the interactive flame-graph viewer at speedscope.app and in the `speedscope` npm
//! package opens it.
//!
//! ```text
//! {"$schema": "https://www.speedscope.app/file-format-schema.json",
//!  "shared": {"frames": [{"name": "main", "file": "main.go", "line": 12}, ...]},
//!  "profiles": [{"type": "sampled", "name": "cpu", "unit": "nanoseconds",
//!                "startValue": 0, "endValue": 1230,
//!                "samples": [[0, 4, 7], ...], "weights": [10, ...]}, ...]}
//! ```
//!
//! speedscope recognises the file by the exact `$schema` string. Frames are shared by every
//! profile; a sample is a list of frame indices, root first, and its weight is the value of
//! the profile's event. cfghub writes one sampled profile per event, per process and per
//! thread, skipping samples whose value is 0, with integer weights. See
//! docs/formats/speedscope.md for the mapping.

use std::collections::BTreeMap;
use std::io::Write;

use crate::folded_stacks::stacks_for_writing;
use crate::format::{Format, Needs, WriteOptions};
use cfghub_analysis::stacks::{FlatStacks, Frame, WrittenStacks};
use cfghub_model::error::{Findings, Result};
use cfghub_model::io::write_error;
use cfghub_model::ir::{rounded, EventId, Profile, StackValue, NO_INDEX};

/// The `$schema` value speedscope detects its format by.
pub(crate) const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// Units speedscope knows; anything else is written as `none`.
const UNITS: &[&str] = &["nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"];

/// Options of the speedscope writer.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The file's name, shown as the page title (`--title`); else the profiled command.
    pub title: Option<String>,
}

/// The speedscope format.
pub static FORMAT: Format = Format {
    name: "speedscope",
    description: "speedscope JSON (sampled profiles for the speedscope viewer; write only)",
    extensions: &[".speedscope.json"],
    writer: Some(write),
    needs: Needs::STACKS,
    ..Format::NONE
};

fn json_string(out: &mut Vec<u8>, s: &str) {
    // serde_json escapes exactly as JSON wants; writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Writes the profile's stacks (or stacks derived from its call graph, with a warning).
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let (stacks, events) =
        stacks_for_writing(profile, options.event.as_deref(), findings, "speedscope profiles")?;
    let model = match stacks {
        // A profile of flat costs of one process is written as its stacks are walked (a stack
        // per address of code no symbol covers, named as it is written): as model stacks with
        // a name each, 2.5 million addresses took 47x the input.
        WrittenStacks::Flat(flat) if profile.processes.len() == 1 => {
            return write_flat(&flat, &events, out, options, findings)
        }
        stacks => stacks.into_model(),
    };
    write_model(&model, &events, out, options, findings)
}

/// The weights written, and what was not.
struct Weighing {
    /// Per event, the sum of the weights written.
    written: Vec<f64>,
    rounded: usize,
    dropped: usize,
    empty: usize,
}

impl Weighing {
    fn new(events: usize) -> Self {
        Weighing { written: vec![0.0; events], rounded: 0, dropped: 0, empty: 0 }
    }

    /// The weight of a sample of value `v` of event `e`, `None` when it is not written (no
    /// frames, not a finite non-negative number, or 0 once rounded); `count` says whether to
    /// count what is left out (each sample once).
    fn weight(
        &mut self,
        has_frames: bool,
        v: StackValue,
        decimals: u8,
        e: EventId,
        count: bool,
    ) -> Option<u64> {
        if !has_frames {
            self.empty += usize::from(count && v != 0);
            return None;
        }
        let r = rounded(v, decimals);
        if r < 0 {
            self.dropped += usize::from(count);
            return None;
        }
        if decimals > 0 && r * cfghub_model::ir::power_of_ten(decimals) != v {
            self.rounded += usize::from(count);
        }
        if r == 0 {
            return None;
        }
        if count {
            self.written[e] += r as f64;
        }
        Some(u64::try_from(r).unwrap_or(u64::MAX))
    }

    fn warn(&self, profile: &Profile, events: &[EventId], findings: &mut Findings) {
        let Weighing { written, rounded, dropped, empty } = self;
        if *rounded > 0 || *dropped > 0 || *empty > 0 {
            let kept: Vec<(String, f64)> =
                events.iter().map(|&e| (profile.events[e].name.clone(), written[e])).collect();
            let chosen: Vec<(String, f64)> = cfghub_analysis::totals::event_totals(profile)
                .into_iter()
                .filter(|t| kept.iter().any(|k| k.0 == t.0))
                .collect();
            let why = format!("{rounded} fractional weight(s) rounded to integers");
            cfghub_analysis::totals::warn_left_out(findings, "speedscope", &chosen, &kept, &why);
        }
        if *dropped > 0 {
            findings
                .warn(None, format!("speedscope: {dropped} negative or non-finite weight(s) not written"));
        }
        if *empty > 0 {
            findings.warn(None, format!("speedscope: {empty} sample(s) without frames not written"));
        }
    }
}

/// The file up to its list of frames: `{"$schema": …, "shared":{"frames":[`.
fn start_file(buf: &mut Vec<u8>, profile: &Profile, options: &WriteOptions) {
    let name = options
        .formats
        .get::<Options>()
        .title
        .or_else(|| profile.meta.command.clone())
        .unwrap_or_else(|| "cfghub".into());
    buf.extend_from_slice(b"{\"$schema\":");
    json_string(buf, SCHEMA);
    buf.extend_from_slice(b",\"name\":");
    json_string(buf, &name);
    buf.extend_from_slice(b",\"activeProfileIndex\":0,\"exporter\":");
    json_string(buf, concat!("cfghub ", env!("CARGO_PKG_VERSION")));
    buf.extend_from_slice(b",\"shared\":{\"frames\":[");
}

/// A sampled profile up to its samples: `{"type":"sampled", …, "samples":[`.
fn start_profile(buf: &mut Vec<u8>, profile: &Profile, e: EventId, title: String, total: u64) {
    let event = &profile.events[e].name;
    let unit =
        cfghub_model::ir::event_unit(&profile.meta, event).filter(|u| UNITS.contains(u)).unwrap_or("none");
    buf.extend_from_slice(b"{\"type\":\"sampled\",\"name\":");
    json_string(buf, &title);
    buf.extend_from_slice(b",\"unit\":\"");
    buf.extend_from_slice(unit.as_bytes());
    buf.extend_from_slice(b"\",\"startValue\":0,\"endValue\":");
    buf.extend_from_slice(itoa::Buffer::new().format(total).as_bytes());
    buf.extend_from_slice(b",\"samples\":[");
}

/// Appends a list of numbers, `[1,2,3]` without the brackets.
fn push_numbers(buf: &mut Vec<u8>, numbers: impl Iterator<Item = u64>) {
    let mut int = itoa::Buffer::new();
    for (k, n) in numbers.enumerate() {
        if k > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(int.format(n).as_bytes());
    }
}

/// Hands `buf` to `out` once it holds a MiB.
fn spill(buf: &mut Vec<u8>, out: &mut dyn Write) -> Result<()> {
    if buf.len() >= 1 << 20 {
        out.write_all(buf).map_err(write_error("speedscope output"))?;
        buf.clear();
    }
    Ok(())
}

/// The model's stacks (or the stacks estimated from its call graph): one sampled profile per
/// process, thread and event.
fn write_model(
    profile: &Profile,
    events: &[EventId],
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
    let mut index_of: Vec<u32> = vec![u32::MAX; profile.frames.len()];
    let mut used: Vec<u32> = Vec::new();
    // Frames numbered in order of first appearance, stack by stack, root first.
    for stacks in profile.processes.iter().map(|p| &p.stacks) {
        for n in stacks.nodes_in_order_met() {
            let f = stacks.nodes()[n as usize].frame;
            if index_of[f as usize] == u32::MAX {
                index_of[f as usize] = used.len() as u32;
                used.push(f);
            }
        }
    }
    let mut path: Vec<u32> = Vec::new();
    start_file(&mut buf, profile, options);
    for (i, &f) in used.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(b"{\"name\":");
        json_string(&mut buf, profile.frames.get(f));
        if let Some(source) = profile.frame_source(f) {
            if let Some(file) = source.file {
                buf.extend_from_slice(b",\"file\":");
                json_string(&mut buf, profile.file_name(file));
            }
            if let Some(line) = source.line {
                buf.extend_from_slice(b",\"line\":");
                buf.extend_from_slice(itoa::Buffer::new().format(line).as_bytes());
            }
        }
        buf.push(b'}');
        spill(&mut buf, out)?;
    }
    buf.extend_from_slice(b"]},\"profiles\":[");

    let several_processes = profile.processes.len() > 1;
    let mut weighing = Weighing::new(profile.events.len());
    let mut first = true;
    let mut weights: Vec<u64> = Vec::new();
    for (p, process) in profile.processes.iter().enumerate() {
        let mut threads: BTreeMap<Option<u32>, Vec<usize>> = BTreeMap::new();
        let stacks = &process.stacks;
        for (i, s) in stacks.samples().enumerate() {
            threads.entry(s.thread).or_default().push(i);
        }
        for (thread, samples) in &threads {
            for &e in events {
                weights.clear();
                let mut kept: Vec<usize> = Vec::new();
                let decimals = process.stacks.decimals_of(e);
                for &i in samples {
                    let s = process.stacks.sample(i);
                    let v = s.values.get(e).copied().unwrap_or(0);
                    if let Some(w) = weighing.weight(s.node != NO_INDEX, v, decimals, e, true) {
                        kept.push(i);
                        weights.push(w);
                    }
                }
                let total: u64 = weights.iter().fold(0u64, |a, &w| a.saturating_add(w));
                if !first {
                    buf.push(b',');
                }
                first = false;
                let mut title = profile.events[e].name.clone();
                if several_processes {
                    title.push_str(&format!(" pid {}", process.pid));
                    if let Some(labels) = cfghub_analysis::labels::process_label_text(profile, p) {
                        title.push_str(&format!(" {labels}"));
                    }
                }
                if let Some(t) = thread {
                    title.push_str(&format!(" thread {t}"));
                }
                start_profile(&mut buf, profile, e, title, total);
                for (n, &i) in kept.iter().enumerate() {
                    if n > 0 {
                        buf.push(b',');
                    }
                    buf.push(b'[');
                    stacks.path(stacks.sample(i).node, &mut path);
                    push_numbers(&mut buf, path.iter().map(|&f| u64::from(index_of[f as usize])));
                    buf.push(b']');
                    spill(&mut buf, out)?;
                }
                buf.extend_from_slice(b"],\"weights\":[");
                let mut int = itoa::Buffer::new();
                for (n, &w) in weights.iter().enumerate() {
                    if n > 0 {
                        buf.push(b',');
                    }
                    buf.extend_from_slice(int.format(w).as_bytes());
                    spill(&mut buf, out)?;
                }
                buf.extend_from_slice(b"]}");
            }
        }
    }
    buf.extend_from_slice(b"]}\n");
    out.write_all(&buf).map_err(write_error("speedscope output"))?;
    weighing.warn(profile, events, findings);
    Ok(())
}

/// A profile of flat costs of one process ([`FlatStacks`]): its stacks walked once for the
/// frames (a frame of an address written as it is met, a named frame at its first
/// appearance, numbered in that order as [`write_model`] numbers them), then per event once
/// for the total, once for the samples and once for the weights: nothing is kept per address.
fn write_flat(
    flat: &FlatStacks,
    events: &[EventId],
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let profile = flat.profile();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
    start_file(&mut buf, profile, options);
    // The number of each named frame; an address frame's is the count of numbers given before.
    let mut named: Vec<u32> = vec![u32::MAX; flat.frames.len()];
    let mut next = 0u32;
    let mut name = Vec::new();
    flat.try_for_each(|_, frames, _| -> Result<()> {
        for &frame in frames {
            if let Frame::Named(f) = frame {
                if named[f as usize] != u32::MAX {
                    continue;
                }
                named[f as usize] = next;
            }
            if next > 0 {
                buf.push(b',');
            }
            next += 1;
            name.clear();
            flat.push_name(frame, &mut name);
            buf.extend_from_slice(b"{\"name\":");
            json_string(&mut buf, std::str::from_utf8(&name).unwrap_or_default());
            buf.push(b'}');
            spill(&mut buf, out)?;
        }
        Ok(())
    })?;
    buf.extend_from_slice(b"]},\"profiles\":[");
    let mut weighing = Weighing::new(profile.events.len());
    let value = |values: &[StackValue], e: EventId| values.get(e).copied().unwrap_or(0);
    for (k, &e) in events.iter().enumerate() {
        let mut total = 0u64;
        flat.try_for_each(|_, frames, values| -> Result<()> {
            if let Some(w) = weighing.weight(!frames.is_empty(), value(values, e), 0, e, false) {
                total = total.saturating_add(w);
            }
            Ok(())
        })?;
        if k > 0 {
            buf.push(b',');
        }
        start_profile(&mut buf, profile, e, profile.events[e].name.clone(), total);
        let (mut numbered, mut first) = (0u32, true);
        let mut indices: Vec<u64> = Vec::new();
        flat.try_for_each(|_, frames, values| -> Result<()> {
            indices.clear();
            for &frame in frames {
                let index = match frame {
                    Frame::Named(f) => named[f as usize],
                    Frame::Address { .. } => numbered,
                };
                numbered += u32::from(index == numbered);
                indices.push(u64::from(index));
            }
            if weighing.weight(!frames.is_empty(), value(values, e), 0, e, false).is_some() {
                if !first {
                    buf.push(b',');
                }
                first = false;
                buf.push(b'[');
                push_numbers(&mut buf, indices.iter().copied());
                buf.push(b']');
                spill(&mut buf, out)?;
            }
            Ok(())
        })?;
        buf.extend_from_slice(b"],\"weights\":[");
        let mut first = true;
        flat.try_for_each(|_, frames, values| -> Result<()> {
            if let Some(w) = weighing.weight(!frames.is_empty(), value(values, e), 0, e, true) {
                if !first {
                    buf.push(b',');
                }
                first = false;
                buf.extend_from_slice(itoa::Buffer::new().format(w).as_bytes());
                spill(&mut buf, out)?;
            }
            Ok(())
        })?;
        buf.extend_from_slice(b"]}");
    }
    buf.extend_from_slice(b"]}\n");
    out.write_all(&buf).map_err(write_error("speedscope output"))?;
    weighing.warn(profile, events, findings);
    Ok(())
}
