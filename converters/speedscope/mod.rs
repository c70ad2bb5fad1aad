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

use crate::error::{Findings, Result};
use crate::folded_stacks::for_writing;
use crate::io::write_error;
use crate::ir::Profile;
use crate::registry::{Format, WriteOptions};

/// The `$schema` value speedscope detects its format by.
pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

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
    let (profile, events) = for_writing(profile, options.event.as_deref(), findings, "speedscope profiles")?;
    let profile = &*profile;
    let err = write_error("speedscope output");
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);

    // Frames used by some stack, in order of first use.
    let mut index_of: Vec<u32> = vec![u32::MAX; profile.frames.len()];
    let mut used: Vec<u32> = Vec::new();
    for stack in profile.processes.iter().flat_map(|p| &p.stacks) {
        for &f in &stack.frames {
            if index_of[f as usize] == u32::MAX {
                index_of[f as usize] = used.len() as u32;
                used.push(f);
            }
        }
    }

    let name = options
        .formats
        .get::<Options>()
        .title
        .or_else(|| profile.meta.command.clone())
        .unwrap_or_else(|| "cfghub".into());
    buf.extend_from_slice(b"{\"$schema\":");
    json_string(&mut buf, SCHEMA);
    buf.extend_from_slice(b",\"name\":");
    json_string(&mut buf, &name);
    buf.extend_from_slice(b",\"activeProfileIndex\":0,\"exporter\":");
    json_string(&mut buf, concat!("cfghub ", env!("CARGO_PKG_VERSION")));
    buf.extend_from_slice(b",\"shared\":{\"frames\":[");
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
        if buf.len() >= 1 << 20 {
            out.write_all(&buf).map_err(&err)?;
            buf.clear();
        }
    }
    buf.extend_from_slice(b"]},\"profiles\":[");

    let several_processes = profile.processes.len() > 1;
    let (mut rounded, mut dropped, mut empty) = (0usize, 0usize, 0usize);
    let mut written = vec![0f64; profile.events.len()];
    let mut first = true;
    let mut weights: Vec<u64> = Vec::new();
    let mut int = itoa::Buffer::new();
    for process in &profile.processes {
        // Stacks by thread, threads in order (no thread first).
        let mut threads: BTreeMap<Option<u32>, Vec<usize>> = BTreeMap::new();
        for (i, s) in process.stacks.iter().enumerate() {
            threads.entry(s.thread).or_default().push(i);
        }
        for (thread, stacks) in &threads {
            for &e in &events {
                let event = &profile.events[e].name;
                weights.clear();
                let mut kept: Vec<usize> = Vec::new();
                for &i in stacks {
                    let s = &process.stacks[i];
                    let v = s.values.get(e).copied().unwrap_or(0.0);
                    if s.frames.is_empty() {
                        empty += usize::from(v != 0.0);
                        continue;
                    }
                    let r = v.round();
                    if !(r.is_finite() && r >= 0.0) {
                        dropped += 1;
                        continue;
                    }
                    if r != v {
                        rounded += 1;
                    }
                    if r == 0.0 {
                        continue;
                    }
                    written[e] += r;
                    kept.push(i);
                    weights.push(r as u64);
                }
                let total: u64 = weights.iter().fold(0u64, |a, &w| a.saturating_add(w));
                if !first {
                    buf.push(b',');
                }
                first = false;
                let mut title = event.clone();
                if several_processes {
                    title.push_str(&format!(" pid {}", process.pid));
                }
                if let Some(t) = thread {
                    title.push_str(&format!(" thread {t}"));
                }
                let unit = crate::ir::event_unit(&profile.meta, event)
                    .filter(|u| UNITS.contains(u))
                    .unwrap_or("none");
                buf.extend_from_slice(b"{\"type\":\"sampled\",\"name\":");
                json_string(&mut buf, &title);
                buf.extend_from_slice(b",\"unit\":\"");
                buf.extend_from_slice(unit.as_bytes());
                buf.extend_from_slice(b"\",\"startValue\":0,\"endValue\":");
                buf.extend_from_slice(int.format(total).as_bytes());
                buf.extend_from_slice(b",\"samples\":[");
                for (n, &i) in kept.iter().enumerate() {
                    if n > 0 {
                        buf.push(b',');
                    }
                    buf.push(b'[');
                    for (k, &f) in process.stacks[i].frames.iter().enumerate() {
                        if k > 0 {
                            buf.push(b',');
                        }
                        buf.extend_from_slice(int.format(index_of[f as usize]).as_bytes());
                    }
                    buf.push(b']');
                    if buf.len() >= 1 << 20 {
                        out.write_all(&buf).map_err(&err)?;
                        buf.clear();
                    }
                }
                buf.extend_from_slice(b"],\"weights\":[");
                for (n, &w) in weights.iter().enumerate() {
                    if n > 0 {
                        buf.push(b',');
                    }
                    buf.extend_from_slice(int.format(w).as_bytes());
                    if buf.len() >= 1 << 20 {
                        out.write_all(&buf).map_err(&err)?;
                        buf.clear();
                    }
                }
                buf.extend_from_slice(b"]}");
            }
        }
    }
    buf.extend_from_slice(b"]}\n");
    out.write_all(&buf).map_err(&err)?;
    if rounded > 0 || dropped > 0 || empty > 0 {
        let kept: Vec<(String, f64)> =
            events.iter().map(|&e| (profile.events[e].name.clone(), written[e])).collect();
        let chosen: Vec<(String, f64)> = crate::analysis::totals::event_totals(profile)
            .into_iter()
            .filter(|t| kept.iter().any(|k| k.0 == t.0))
            .collect();
        let why = format!("{rounded} fractional weight(s) rounded to integers");
        crate::analysis::totals::warn_left_out(findings, "speedscope", &chosen, &kept, &why);
    }
    if dropped > 0 {
        findings.warn(None, format!("speedscope: {dropped} negative or non-finite weight(s) not written"));
    }
    if empty > 0 {
        findings.warn(None, format!("speedscope: {empty} sample(s) without frames not written"));
    }
    Ok(())
}
