//! A profile of flat costs of one process whose every stack is one frame (DCPI and dcpicat
//! samples, Callgrind without calls, no inlined functions), written as its stacks are walked.
//!
//! Such a profile has one stack per sampled address when no symbol names its code: 2.5 million
//! in a 10 MB DCPI file. Through the crate, every address became a string, a function, a frame
//! and a stack node held in its tables (with a hash entry each) and the whole file was
//! serialized in memory before it was written: 1.7 GiB, 176x the input. Here every table is
//! written column by column from [`FlatStacks::try_for_each`], and nothing is kept per stack.
//!
//! Each stack's one frame is a label (the flat profile has no images for the crate to place
//! an address in), its name distinct from every other stack's, so the crate would give stack
//! `i` (in order of first appearance) string `i`, function `i`, frame `i` and stack node `i`,
//! a root: the columns follow from the count alone but for the strings and the samples. The
//! crate still makes the rest of the file (meta, categories, each track's empty tables), and
//! the tracks are named and weighed as [`super::write`] does for model stacks: the bytes are
//! the same as that path's (a test compares them).

use std::borrow::Cow;
use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write;

use serde_json::value::RawValue;

use cfghub_analysis::stacks::{FlatStacks, Frame};
use cfghub_model::error::{Findings, Result};
use cfghub_model::io::write_error;
use cfghub_model::ir::{EventId, StackValue};

use super::write::{
    clamped, complete, extra_samples, parts, push_own_keys, scaled, track_of, write_object, Notes, Object,
    Skeleton,
};
use super::KERNEL_SUFFIX;

/// How many stacks the profile has, where they are written here: every stack is one frame,
/// and none is named with perf's kernel suffix (the writer takes it off, so two names could
/// make one string). `None` where they are not.
pub(super) fn one_frame_stacks(flat: &FlatStacks) -> Option<usize> {
    let mut stacks = 0;
    let written = flat.try_for_each(|_, frames, _| match frames {
        [Frame::Named(f)] if flat.frames.get(*f).ends_with(KERNEL_SUFFIX) => Err(()),
        [_] => {
            stacks += 1;
            Ok(())
        }
        _ => Err(()),
    });
    written.ok().map(|()| stacks)
}

/// A track: an event's samples.
struct Track {
    event: EventId,
    /// What its weights are divided by.
    factor: u64,
    /// How many samples it has (weights above the format's largest are split).
    samples: usize,
}

/// Writes the stacks of `flat`'s one process, `stacks` of them ([`one_frame_stacks`]), a track
/// per event of `events`.
pub(super) fn write(
    flat: &FlatStacks,
    stacks: usize,
    events: &[EventId],
    out: &mut dyn Write,
    findings: &mut Findings,
) -> Result<()> {
    let profile = flat.profile();
    let mut skeleton = Skeleton::new(profile);
    let process = skeleton.process(profile, &profile.processes[0]);
    let mut notes = Notes::default();
    let mut tracks: Vec<(String, Track)> = Vec::new();
    for &e in events {
        let (_, name) = skeleton.track(&process, (None, None), profile, e, events);
        let track = weigh(flat, e, &name, &mut notes);
        tracks.push((name, track));
    }
    notes.report(profile, findings);
    let serialized = serde_json::to_vec(&skeleton.fx).map_err(super::write::unserializable)?;
    let by_name: HashMap<&str, &Track> = tracks.iter().map(|(name, t)| (name.as_str(), t)).collect();
    let err = write_error("Firefox Profiler output");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    complete(&serialized, profile, &mut out, |thread, out| {
        write_thread(thread, &by_name, flat, stacks, &skeleton.user_index, out).map_err(&err)
    })?;
    out.write_all(b"\n").map_err(&err)?;
    out.flush().map_err(&err)
}

/// The track of event `e`: its weights' factor and its samples' count, noting what is rounded,
/// dropped, split or scaled as [`super::write`] notes it.
fn weigh(flat: &FlatStacks, e: EventId, name: &str, notes: &mut Notes) -> Track {
    let value = |values: &[StackValue]| values.get(e).copied().unwrap_or(0);
    let (mut sums, mut extra, mut most) = ((0.0, 0.0), 0, 0);
    let Ok(()) = flat.try_for_each(|_, _, values| -> std::result::Result<(), Infallible> {
        let w = notes.whole(value(values), 0, &mut sums);
        extra += extra_samples(w);
        most = most.max(w.unsigned_abs());
        Ok(())
    });
    notes.add_sums(e, sums);
    let factor = notes.scale(extra, most, name);
    let mut samples = 0;
    let Ok(()) = flat.try_for_each(|_, _, values| -> std::result::Result<(), Infallible> {
        let w = scaled(clamped(value(values)), factor);
        notes.split(w);
        samples += parts(w).count();
        Ok(())
    });
    Track { event: e, factor, samples }
}

/// Writes a thread of the crate's JSON, with the tables of its track (if it is one) written
/// from the stacks.
fn write_thread(
    thread: &RawValue,
    tracks: &HashMap<&str, &Track>,
    flat: &FlatStacks,
    stacks: usize,
    user: &str,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let entries = Object::parse(thread.get()).map_err(std::io::Error::other)?.entries();
    let Some(track) = track_of(&entries, tracks) else { return write_object(out, &entries) };
    let mut entries: Vec<(&str, Cow<str>)> = entries;
    push_own_keys(&mut entries, &flat.profile().events[track.event].name, (None, None), track.factor);
    let mut out = Spill { buf: Vec::with_capacity(1 << 16), out };
    out.push(b"{");
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b",");
        }
        serde_json::to_writer(&mut out.buf, key)?;
        out.push(b":");
        match *key {
            "frameTable" => {
                out.length(stacks);
                out.column(",\"address\":", stacks, |_| "-1")?;
                out.column(",\"inlineDepth\":", stacks, |_| "0")?;
                out.column(",\"category\":", stacks, |_| user)?;
                out.column(",\"subcategory\":", stacks, |_| "0")?;
                out.counting(",\"func\":", stacks)?;
                for column in ["nativeSymbol", "innerWindowID", "line", "column"] {
                    let item = if column == "innerWindowID" { "0" } else { "null" };
                    out.column(&format!(",\"{column}\":"), stacks, |_| item)?;
                }
                out.push(b"}");
            }
            "funcTable" => {
                out.length(stacks);
                out.counting(",\"name\":", stacks)?;
                out.column(",\"isJS\":", stacks, |_| "false")?;
                out.column(",\"relevantForJS\":", stacks, |_| "false")?;
                out.column(",\"resource\":", stacks, |_| "-1")?;
                for column in ["fileName", "lineNumber", "columnNumber"] {
                    out.column(&format!(",\"{column}\":"), stacks, |_| "null")?;
                }
                out.push(b"}");
            }
            "stackTable" => {
                out.length(stacks);
                out.column(",\"prefix\":", stacks, |_| "null")?;
                out.counting(",\"frame\":", stacks)?;
                out.push(b"}");
            }
            "samples" => samples(flat, track, &mut out)?,
            "stringArray" => strings(flat, &mut out)?,
            _ => out.push(value.as_bytes()),
        }
        out.spill()?;
    }
    out.push(b"}");
    out.finish()
}

/// A track's `samples`: per stack with a weight, in order, its node and its weight (or the
/// parts of a weight above the format's largest), 1 ms apart.
fn samples(flat: &FlatStacks, track: &Track, out: &mut Spill) -> std::io::Result<()> {
    let n = track.samples;
    out.length(n);
    out.push(b",\"weightType\":\"samples\",\"stack\":[");
    let mut numbers = itoa::Buffer::new();
    let (mut node, mut first) = (0usize, true);
    let weight =
        |values: &[StackValue]| scaled(clamped(values.get(track.event).copied().unwrap_or(0)), track.factor);
    flat.try_for_each(|_, _, values| -> std::io::Result<()> {
        for _ in parts(weight(values)) {
            if !std::mem::take(&mut first) {
                out.push(b",");
            }
            out.push(numbers.format(node).as_bytes());
        }
        node += 1;
        out.spill()
    })?;
    out.push(b"]");
    out.column(",\"timeDeltas\":", n, |i| if i == 0 { "0.0" } else { "1.0" })?;
    out.push(b",\"weight\":[");
    let mut first = true;
    flat.try_for_each(|_, _, values| -> std::io::Result<()> {
        for part in parts(weight(values)) {
            if !std::mem::take(&mut first) {
                out.push(b",");
            }
            out.push(numbers.format(part).as_bytes());
        }
        out.spill()
    })?;
    out.push(b"]");
    out.column(",\"threadCPUDelta\":", n, |_| "0")?;
    out.push(b"}");
    Ok(())
}

/// The strings: each stack's frame's name, in order.
fn strings(flat: &FlatStacks, out: &mut Spill) -> std::io::Result<()> {
    out.push(b"[");
    let mut name = Vec::new();
    let mut first = true;
    flat.try_for_each(|_, frames, _| -> std::io::Result<()> {
        if !std::mem::take(&mut first) {
            out.push(b",");
        }
        name.clear();
        flat.push_name(frames[0], &mut name);
        serde_json::to_writer(&mut out.buf, &String::from_utf8_lossy(&name))?;
        out.spill()
    })?;
    out.push(b"]");
    Ok(())
}

/// Bytes gathered and written out a buffer at a time.
struct Spill<'o> {
    buf: Vec<u8>,
    out: &'o mut dyn Write,
}

impl Spill<'_> {
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Writes the buffer out once it holds 64 KiB.
    fn spill(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= 1 << 16 {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn finish(self) -> std::io::Result<()> {
        self.out.write_all(&self.buf)
    }

    /// Opens a table of `n` rows: `{"length":n`.
    fn length(&mut self, n: usize) {
        self.push(b"{\"length\":");
        self.push(itoa::Buffer::new().format(n).as_bytes());
    }

    /// `key`, then a column of `n` items, item `i` being `item(i)`.
    fn column<'a>(&mut self, key: &str, n: usize, item: impl Fn(usize) -> &'a str) -> std::io::Result<()> {
        self.push(key.as_bytes());
        self.push(b"[");
        for i in 0..n {
            if i > 0 {
                self.push(b",");
            }
            self.push(item(i).as_bytes());
            self.spill()?;
        }
        self.push(b"]");
        Ok(())
    }

    /// `key`, then the column 0, 1, ..., `n - 1`.
    fn counting(&mut self, key: &str, n: usize) -> std::io::Result<()> {
        let mut numbers = itoa::Buffer::new();
        self.push(key.as_bytes());
        self.push(b"[");
        for i in 0..n {
            if i > 0 {
                self.push(b",");
            }
            self.buf.extend_from_slice(numbers.format(i).as_bytes());
            self.spill()?;
        }
        self.push(b"]");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfghub_model::ir::{Cost, Event, Image, Process, Profile, Symbol};
    use proptest::prelude::*;

    /// An image of `path` with `symbols` (name, offset, size) and cost rows (symbol, offset,
    /// a value per event).
    fn image(
        profile: &mut Profile,
        path: &str,
        symbols: &[(&str, u64, u64)],
        rows: &[(Option<u32>, Option<u64>, Vec<u64>)],
    ) -> Image {
        let mut image = Image { file: Some(profile.files.intern(path)), ..Image::default() };
        for &(name, offset, size) in symbols {
            image.symbols.push(Symbol {
                name: name.into(),
                offset: Some(offset),
                size: Some(size),
                file: None,
            });
        }
        for (symbol, offset, values) in rows {
            let values = values.iter().copied().collect();
            image.costs.push(Cost { symbol: *symbol, offset: *offset, values, ..Cost::default() });
        }
        image
    }

    /// The file and warnings written here, and those written through model stacks.
    fn both_ways(profile: &Profile, events: &[EventId]) -> [(String, Vec<String>); 2] {
        let flat = FlatStacks::new(profile, true);
        let stacks = one_frame_stacks(&flat).expect("one frame per stack");
        let messages = |findings: Findings| findings.items.into_iter().map(|f| f.message).collect();
        let (mut here, mut found_here) = (Vec::new(), Findings::default());
        write(&flat, stacks, events, &mut here, &mut found_here).unwrap();
        let model = FlatStacks::new(profile, false).into_profile();
        let (mut through_model, mut found_through_model) = (Vec::new(), Findings::default());
        super::super::write::write_model(&model, events, &mut through_model, &mut found_through_model)
            .unwrap();
        [
            (String::from_utf8(here).unwrap(), messages(found_here)),
            (String::from_utf8(through_model).unwrap(), messages(found_through_model)),
        ]
    }

    /// Addresses no symbol covers (named as written), a function, a row without an address,
    /// an address met twice, names JSON escapes; weights split (above 2^31 - 1), scaled (so
    /// many parts), and 0 in one event.
    #[test]
    fn a_flat_profile_is_written_as_through_model_stacks() {
        let mut p = Profile { events: vec![Event::new("cycles"), Event::new("imiss")], ..Profile::default() };
        p.meta.command = Some("app \"x\"".into());
        let app = image(
            &mut p,
            "/bin/app",
            &[("f\"α", 0x100, 0x10)],
            &[
                (None, Some(0x4), vec![1, 0]),
                (None, Some(0x8), vec![0, 0]),
                (None, Some(0x20), vec![3_000_000_000, 2]),
                (None, None, vec![4, 1 << 62]),
                (None, Some(0x104), vec![5, 1]),
                (None, Some(0x200), vec![0, 9]),
            ],
        );
        let lib = image(
            &mut p,
            "/lib/lib.so",
            &[],
            &[(None, Some(0x10), vec![1, 1]), (None, Some(0x10), vec![2, 0])],
        );
        p.processes.push(Process { pid: 42, images: vec![app, lib], ..Process::default() });
        for events in [&[0, 1][..], &[1], &[0]] {
            let [here, through_model] = both_ways(&p, events);
            assert_eq!(here, through_model, "events {events:?}");
            assert!(here
                .0
                .contains("\"stringArray\":[\"app+0x4\",\"app+0x20\",\"app\",\"f\\\"α\",\"app+0x200\""));
        }
        let [(_, warnings), _] = both_ways(&p, &[0, 1]);
        assert!(warnings.iter().any(|w| w.contains("split into")), "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("scaled down by")), "{warnings:?}");
    }

    /// Stacks of several frames (inlined functions) and names with perf's kernel suffix go
    /// through model stacks.
    #[test]
    fn inlined_frames_and_kernel_names_are_not_written_here() {
        let mut p = Profile { events: vec![Event::new("cycles")], ..Profile::default() };
        let mut app = image(&mut p, "/bin/app", &[("g_[k]", 0x100, 4)], &[(None, Some(0x100), vec![1])]);
        p.processes.push(Process { images: vec![app.clone()], ..Process::default() });
        assert_eq!(one_frame_stacks(&FlatStacks::new(&p, true)), None);
        app.symbols[0].name = "g".into();
        let h = app.inline_names.intern("h");
        app.inlined.push(cfghub_model::ir::Inlined {
            offset: 0x100,
            frames: vec![cfghub_model::ir::InlineFrame::new(h, None, None)].into(),
        });
        p.processes[0].images = vec![app];
        assert_eq!(one_frame_stacks(&FlatStacks::new(&p, true)), None);
    }

    fn rows(events: usize) -> impl Strategy<Value = Vec<(Option<u32>, Option<u64>, Vec<u64>)>> {
        let value = prop::sample::select(vec![0u64, 1, 2, 7, 3_000_000_000, 1 << 40]);
        prop::collection::vec(
            (
                prop::option::weighted(0.2, 0u32..2),
                prop::option::weighted(0.9, (0u64..48).prop_map(|a| a * 4)),
                prop::collection::vec(value, events),
            ),
            0..30,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Any flat profile this path writes gives the bytes and warnings of model stacks:
        /// images sharing a base name, symbols covering some addresses (or named like one),
        /// rows naming a symbol or without an address, weights split or scaled.
        #[test]
        fn any_flat_profile_is_written_as_through_model_stacks(
            events in 1usize..=2,
            first in rows(2),
            second in rows(2),
            second_path in prop::sample::select(vec!["/lib/lib.so", "/other/app"]),
            names in prop::collection::vec(prop::sample::select(vec!["main", "f\"q", "α", "app+0x10", "g h"]), 2),
            command in prop::option::of(Just("app")),
            pid in 0u64..3,
        ) {
            let mut p = Profile {
                events: (0..events).map(|e| Event::new(format!("event{e}"))).collect(),
                ..Profile::default()
            };
            p.meta.command = command.map(String::from);
            let symbols = [(names[0], 0x10, 8), (names[1], 0x40, 0x10)];
            // Rows of the image without symbols name none.
            let trim = |rows: Vec<(Option<u32>, Option<u64>, Vec<u64>)>, symbols: bool| -> Vec<_> {
                rows.into_iter().map(|(s, o, v)| (s.filter(|_| symbols), o, v[..events].to_vec())).collect()
            };
            let app = image(&mut p, "/bin/app", &symbols, &trim(first, true));
            let other = image(&mut p, second_path, &[], &trim(second, false));
            p.processes.push(Process { pid, images: vec![app, other], ..Process::default() });
            let flat = FlatStacks::new(&p, true);
            if flat.has_values() && one_frame_stacks(&flat).is_some() {
                let all: Vec<EventId> = (0..events).collect();
                let [here, through_model] = both_ways(&p, &all);
                prop_assert_eq!(here, through_model);
            }
        }
    }
}
