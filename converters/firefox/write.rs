//! Writing the model as a processed profile, through `fxprof-processed-profile` (the crate
//! samply writes its profiles with).
//!
//! A process per model process; per model thread, one thread (a track in the profiler) per
//! event written (all events, or the one `--event` names), each sample a model stack with its
//! weight. A frame whose name is the name of a symbol of one of the process's images becomes an
//! address in that image's library (the library carries the image's symbols as its symbol
//! table, so the profiler shows the name and knows the address); a frame named
//! `IMAGE+0xOFFSET` (an address nothing named) becomes that address in the image's library;
//! any other frame is a label. Frames in a kernel image, or named with perf's `_[k]`, get the
//! `Kernel` category, the others `User`.
//!
//! The crate leaves some columns empty that the model can fill; they are set on the JSON it
//! serializes: each function's file and first line (`funcTable.fileName`, `lineNumber`), each
//! library's address range (`start`, `end`), and what cfghub needs to read its own file back
//! exactly (`meta.cfghub`, each thread's `cfghubEvent`, `cfghubThread` and `cfghubScale`),
//! which the profiler ignores.

use std::collections::HashMap;
use std::io::Write;

use fxprof_processed_profile::{
    debugid::DebugId, CategoryColor, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameHandle, FrameInfo,
    LibraryHandle, LibraryInfo, ReferenceTimestamp, SamplingInterval, StackHandle, StringHandle, Symbol,
    SymbolTable, Timestamp,
};
use serde_json::{json, Value};

use crate::error::{Error, Findings, Result};
use crate::io::write_error;
use crate::ir::{FrameId, Image, Process, Profile, Stack};
use crate::registry::WriteOptions;
use crate::stacks::for_writing;

use super::{is_kernel_image, KERNEL_SUFFIX};

/// The largest weight the format holds: the crate's sample weight is an `i32`.
const MAX_WEIGHT: u64 = i32::MAX as u64;
/// At most this many extra samples are made by splitting weights above [`MAX_WEIGHT`]; past
/// it, the track's weights are scaled down instead.
const MAX_SPLIT_SAMPLES: u64 = 1_000_000;

/// Writes the profile's stacks (or, with a warning, those derived as for folded stacks).
pub fn write(
    profile: &Profile,
    out: &mut dyn Write,
    options: &WriteOptions,
    findings: &mut Findings,
) -> Result<()> {
    let (profile, events) =
        for_writing(profile, options.event.as_deref(), findings, "Firefox Profiler profiles")?;
    let profile = &*profile;
    let product = profile.meta.command.clone().unwrap_or_else(|| "cfghub".to_string());
    let mut fx = fxprof_processed_profile::Profile::new(
        &product,
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        SamplingInterval::from_millis(1),
    );
    let user = CategoryPairHandle::from(fx.add_category("User", CategoryColor::Yellow));
    let kernel = CategoryPairHandle::from(fx.add_category("Kernel", CategoryColor::Orange));
    let mut w = Writer {
        fx,
        user,
        kernel,
        strings: HashMap::new(),
        tracks: Vec::new(),
        names: Default::default(),
        notes: Notes::default(),
    };
    for process in &profile.processes {
        w.process(profile, process, &events);
    }
    w.notes.report(profile, findings);
    let mut json = serde_json::to_value(&w.fx)
        .map_err(|e| Error::unsupported(format!("the profile could not be serialized: {e}")))?;
    complete(&mut json, profile, &w.tracks);
    let err = write_error("Firefox Profiler output");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    serde_json::to_writer(&mut out, &json).map_err(|e| err(e.into()))?;
    out.write_all(b"\n").map_err(&err)?;
    out.flush().map_err(&err)
}

/// One written track: whose thread and event it is, and how its weights were scaled.
struct Track {
    /// The thread's name, unique in the file.
    name: String,
    event: String,
    thread: Option<u32>,
    scale: u64,
}

/// What a writer could not express exactly, said once at the end.
#[derive(Default)]
struct Notes {
    rounded: usize,
    /// Per event index: the weights' sum before and after rounding, where any was rounded.
    rounding: std::collections::BTreeMap<usize, (f64, f64)>,
    dropped: usize,
    split: u64,
    split_into: u64,
    scaled: Vec<(String, u64)>,
}

impl Notes {
    fn report(&self, profile: &Profile, findings: &mut Findings) {
        if self.rounded > 0 {
            let name = |e: usize| profile.events.get(e).map_or_else(String::new, |ev| ev.name.clone());
            let source: Vec<(String, f64)> = self.rounding.iter().map(|(&e, &(s, _))| (name(e), s)).collect();
            let kept: Vec<(String, f64)> = self.rounding.iter().map(|(&e, &(_, k))| (name(e), k)).collect();
            let why = format!("{} fractional weight(s) rounded to integers", self.rounded);
            crate::analysis::totals::warn_left_out(findings, "Firefox Profiler", &source, &kept, &why);
        }
        if self.dropped > 0 {
            findings
                .warn(None, format!("Firefox Profiler: {} non-finite weight(s) not written", self.dropped));
        }
        if self.split > 0 {
            findings.warn(
                None,
                format!(
                    "Firefox Profiler: {} weight(s) above {MAX_WEIGHT} (the format's sample weights are 32-bit) \
                     split into {} samples of the same stack; totals are exact",
                    self.split, self.split_into
                ),
            );
        }
        for (track, factor) in &self.scaled {
            findings.warn(
                None,
                format!(
                    "Firefox Profiler: the weights of track '{track}' are too large for the format's 32-bit \
                     sample weights even when split: scaled down by {factor} (rounded), totals approximate; \
                     cfghub multiplies them back when it reads the file"
                ),
            );
        }
    }
}

struct Writer {
    fx: fxprof_processed_profile::Profile,
    user: CategoryPairHandle,
    kernel: CategoryPairHandle,
    strings: HashMap<FrameId, StringHandle>,
    tracks: Vec<Track>,
    /// The tracks' names so far.
    names: std::collections::HashSet<String>,
    notes: Notes,
}

impl Writer {
    /// `name`, or `name #2`, `name #3`, ... when a track has it already.
    fn unique(&mut self, name: String) -> String {
        let name = if self.names.contains(&name) {
            (2..)
                .map(|k| format!("{name} #{k}"))
                .find(|n| !self.names.contains(n))
                .expect("some suffix is free")
        } else {
            name
        };
        self.names.insert(name.clone());
        name
    }
}

/// Where a frame's function is, when it can be written as an address.
#[derive(Clone, Copy)]
struct AddressOf {
    image: usize,
    offset: u32,
}

impl Writer {
    fn process(&mut self, profile: &Profile, process: &Process, events: &[usize]) {
        let pid = u32::try_from(process.pid).unwrap_or(u32::MAX);
        let name = profile.meta.command.clone().unwrap_or_else(|| format!("pid {}", process.pid));
        let ph = self.fx.add_process(&name, pid, Timestamp::from_millis_since_reference(0.0));
        let (libs, kernel_images) = self.libraries(profile, process);
        let first = std::ptr::eq(process, &profile.processes[0]);
        let addresses = frame_addresses(profile, process, first);
        let mut by_thread: std::collections::BTreeMap<Option<u32>, Vec<&Stack>> = Default::default();
        for s in &process.stacks {
            by_thread.entry(s.thread).or_default().push(s);
        }
        for (thread, stacks) in &by_thread {
            for &e in events {
                let event = &profile.events[e].name;
                let tid = thread.map_or(pid, |t| pid.wrapping_add(t));
                // No track is the process's main thread: the crate would name it after the
                // process, and names tell the tracks apart in its output (it sorts them).
                let th = self.fx.add_thread(ph, tid, Timestamp::from_millis_since_reference(0.0), false);
                let mut track = match thread {
                    Some(t) => format!("thread {t}"),
                    None => name.clone(),
                };
                if events.len() > 1 || profile.events.len() > 1 {
                    track = format!("{track} ({event})");
                }
                let track = self.unique(track);
                self.fx.set_thread_name(th, &track);
                let weights = self.weights(stacks, e, &track);
                let scale = weights.1;
                let mut time = 0.0;
                // Each distinct stack and frame is interned once per track: profiles repeat
                // a few stacks many times.
                let mut stack_handles: HashMap<&[FrameId], Option<StackHandle>> = HashMap::new();
                let mut frame_handles: HashMap<FrameId, FrameHandle> = HashMap::new();
                for (stack, weight) in stacks.iter().zip(weights.0) {
                    if weight.is_empty() {
                        continue;
                    }
                    let handle = match stack_handles.get(&stack.frames[..]) {
                        Some(&h) => h,
                        None => {
                            let mut parent = None;
                            for &f in &stack.frames {
                                let frame = match frame_handles.get(&f) {
                                    Some(&h) => h,
                                    None => {
                                        let info =
                                            self.frame_info(profile, f, &addresses, &libs, &kernel_images);
                                        let h = self.fx.intern_frame(th, info);
                                        frame_handles.insert(f, h);
                                        h
                                    }
                                };
                                parent = Some(self.fx.intern_stack(th, parent, frame));
                            }
                            stack_handles.insert(&stack.frames[..], parent);
                            parent
                        }
                    };
                    for w in weight {
                        self.fx.add_sample(
                            th,
                            Timestamp::from_millis_since_reference(time),
                            handle,
                            CpuDelta::ZERO,
                            w,
                        );
                        time += 1.0;
                    }
                }
                self.tracks.push(Track { name: track, event: event.clone(), thread: *thread, scale });
            }
        }
    }

    /// A library per image with a file; the images that hold kernel code.
    fn libraries(&mut self, profile: &Profile, process: &Process) -> (Vec<Option<LibraryHandle>>, Vec<bool>) {
        let mut libs = Vec::with_capacity(process.images.len());
        let mut kernel = Vec::with_capacity(process.images.len());
        for image in &process.images {
            let path = profile.image_name(image);
            kernel.push(is_kernel_image(&path));
            libs.push(image.file.map(|_| self.library(&path, image)));
        }
        (libs, kernel)
    }

    fn library(&mut self, path: &str, image: &Image) -> LibraryHandle {
        let name = path.rsplit('/').next().unwrap_or(path).to_string();
        let build_id = image.build_id.as_deref().and_then(hex_bytes);
        let debug_id = build_id.as_deref().map_or(DebugId::nil(), |b| {
            let mut guid = [0u8; 16];
            let n = b.len().min(16);
            guid[..n].copy_from_slice(&b[..n]);
            DebugId::from_guid_age(&guid, 0).unwrap_or(DebugId::nil())
        });
        let symbols: Vec<Symbol> = image
            .symbols
            .iter()
            .filter_map(|s| {
                Some(Symbol {
                    address: u32::try_from(s.offset?).ok()?,
                    size: s.size.and_then(|z| u32::try_from(z).ok()),
                    name: s.name.clone(),
                })
            })
            .collect();
        let symbol_table = (!symbols.is_empty()).then(|| std::sync::Arc::new(SymbolTable::new(symbols)));
        self.fx.add_lib(LibraryInfo {
            name: name.clone(),
            debug_name: name,
            path: path.to_string(),
            debug_path: path.to_string(),
            debug_id,
            code_id: image.build_id.clone(),
            arch: None,
            symbol_table,
        })
    }

    fn frame_info(
        &mut self,
        profile: &Profile,
        f: FrameId,
        addresses: &HashMap<FrameId, AddressOf>,
        libs: &[Option<LibraryHandle>],
        kernel_images: &[bool],
    ) -> FrameInfo {
        let name = profile.frames.get(f);
        let at = addresses.get(&f).and_then(|a| Some((libs.get(a.image).copied()??, a)));
        let in_kernel = at.is_some_and(|(_, a)| kernel_images[a.image]) || name.ends_with(KERNEL_SUFFIX);
        // The category says it: the profiler shows the name without perf's suffix.
        let name = name.strip_suffix(KERNEL_SUFFIX).unwrap_or(name);
        let category_pair = if in_kernel { self.kernel } else { self.user };
        let frame = match at {
            Some((lib, a)) => Frame::RelativeAddressFromInstructionPointer(lib, a.offset),
            None => {
                let fx = &mut self.fx;
                Frame::Label(*self.strings.entry(f).or_insert_with(|| fx.intern_string(name)))
            }
        };
        FrameInfo { frame, category_pair, flags: FrameFlags::empty() }
    }

    /// The weights of `stacks` for event `e`: per stack, its samples' weights (empty when
    /// it is not written), and the factor they were divided by.
    fn weights(&mut self, stacks: &[&Stack], e: usize, track: &str) -> (Vec<Vec<i32>>, u64) {
        let mut whole: Vec<i64> = Vec::with_capacity(stacks.len());
        for s in stacks {
            let v = s.values.get(e).copied().unwrap_or(0.0);
            if !v.is_finite() {
                self.notes.dropped += 1;
                whole.push(0);
                continue;
            }
            let r = v.round();
            if r != v {
                self.notes.rounded += 1;
            }
            let sums = self.notes.rounding.entry(e).or_default();
            sums.0 += v;
            sums.1 += r;
            whole.push(r.clamp(i64::MIN as f64, i64::MAX as f64) as i64);
        }
        let extra: u64 = whole.iter().map(|w| w.unsigned_abs().div_ceil(MAX_WEIGHT).saturating_sub(1)).sum();
        let scale = if extra > MAX_SPLIT_SAMPLES {
            let most = whole.iter().map(|w| w.unsigned_abs()).max().unwrap_or(0);
            let factor = most.div_ceil(MAX_WEIGHT);
            self.notes.scaled.push((track.to_string(), factor));
            factor
        } else {
            1
        };
        let out = whole
            .into_iter()
            .map(|w| {
                let w = if scale > 1 { (w as f64 / scale as f64).round() as i64 } else { w };
                let (sign, mut left) = (w.signum(), w.unsigned_abs());
                let mut parts = Vec::with_capacity(1);
                while left > 0 {
                    let part = left.min(MAX_WEIGHT);
                    parts.push(sign as i32 * part as i32);
                    left -= part;
                }
                if parts.len() > 1 {
                    self.notes.split += 1;
                    self.notes.split_into += parts.len() as u64;
                }
                parts
            })
            .collect();
        (out, scale)
    }
}

/// The bytes of a hex build id.
fn hex_bytes(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || hex.is_empty() {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

/// Frames of the process's stacks that can be written as an address in an image: named like
/// exactly one symbol of the images (the symbol's start), named `IMAGE+0xOFFSET`, or named by
/// the runtime address the model keeps for it (an unsymbolized pprof location: its mapping is
/// an image of the first process), so that the profiler can symbolize them all later.
fn frame_addresses(profile: &Profile, process: &Process, first: bool) -> HashMap<FrameId, AddressOf> {
    let mut by_name: HashMap<&str, Option<AddressOf>> = HashMap::new();
    for (i, image) in process.images.iter().enumerate() {
        if image.file.is_none() {
            continue;
        }
        for s in &image.symbols {
            let Some(offset) = s.offset.and_then(|o| u32::try_from(o).ok()) else { continue };
            by_name
                .entry(s.name.as_str())
                .and_modify(|a| {
                    if a.is_some_and(|a| a.image != i || a.offset != offset) {
                        *a = None
                    }
                })
                .or_insert(Some(AddressOf { image: i, offset }));
        }
    }
    let base_names: Vec<Option<String>> = process
        .images
        .iter()
        .map(|im| im.file.map(|f| profile.file_name(f).rsplit('/').next().unwrap_or("").to_string()))
        .collect();
    let mut out = HashMap::new();
    // Each frame once, whether it has an address or not.
    let mut seen = vec![false; profile.frames.len()];
    for s in &process.stacks {
        for &f in &s.frames {
            if std::mem::replace(&mut seen[f as usize], true) {
                continue;
            }
            let name = profile.frames.get(f);
            let found = match by_name.get(name) {
                Some(a) => *a,
                None => name.rsplit_once("+0x").and_then(|(base, off)| {
                    let offset = u32::from_str_radix(off, 16).ok()?;
                    let image = base_names.iter().position(|b| b.as_deref() == Some(base))?;
                    Some(AddressOf { image, offset })
                }),
            };
            let found = found.or_else(|| first.then(|| recorded_address(profile, process, f)).flatten());
            if let Some(a) = found {
                out.insert(f, a);
            }
        }
    }
    out
}

/// The address the model keeps for frame `f` of the first process, relative to its image as
/// the format wants it: the runtime address less where the image was mapped, plus the file
/// offset it was mapped from (samply's relative addresses are so for the code of a PIE and of
/// a fixed-address executable alike).
fn recorded_address(profile: &Profile, process: &Process, f: FrameId) -> Option<AddressOf> {
    let recorded = profile.frame_source(f)?.address?;
    let image = recorded.image? as usize;
    let im = process.images.get(image).filter(|im| im.file.is_some())?;
    let relative = recorded.address.checked_sub(im.load_addr)?.checked_add(im.file_offset.unwrap_or(0))?;
    Some(AddressOf { image, offset: u32::try_from(relative).ok()? })
}

/// Sets what the crate leaves empty (see the module documentation).
fn complete(json: &mut Value, profile: &Profile, tracks: &[Track]) {
    json["meta"]["cfghub"] = json!({ "version": env!("CARGO_PKG_VERSION") });
    if let Some(libs) = json["libs"].as_array_mut() {
        let ranges: HashMap<String, (u64, Option<u64>)> = profile
            .processes
            .iter()
            .flat_map(|p| &p.images)
            .filter(|i| i.file.is_some())
            .map(|i| (profile.image_name(i), (i.load_addr, i.size)))
            .collect();
        for lib in libs {
            let Some(&(start, size)) = lib["path"].as_str().and_then(|p| ranges.get(p)) else { continue };
            lib["start"] = json!(start);
            lib["end"] = json!(start.saturating_add(size.unwrap_or(0)));
        }
    }
    let Some(threads) = json["threads"].as_array_mut() else { return };
    let by_name: HashMap<&str, &Track> = tracks.iter().map(|t| (t.name.as_str(), t)).collect();
    for thread in threads.iter_mut() {
        let Some(track) = thread["name"].as_str().and_then(|n| by_name.get(n)).copied() else { continue };
        thread["cfghubEvent"] = json!(track.event);
        thread["cfghubThread"] = json!(track.thread);
        if track.scale > 1 {
            thread["cfghubScale"] = json!(track.scale);
        }
        fill_sources(thread, profile);
    }
}

/// Each function's file and first line, from the model's frame sources, by its name.
fn fill_sources(thread: &mut Value, profile: &Profile) {
    if profile.frame_sources.is_empty() {
        return;
    }
    let Some(strings) = thread["stringArray"].as_array().cloned() else { return };
    let Some(names) = thread["funcTable"]["name"].as_array().cloned() else { return };
    let mut strings: Vec<Value> = strings;
    let mut index_of: HashMap<String, usize> =
        strings.iter().enumerate().filter_map(|(i, s)| Some((s.as_str()?.to_string(), i))).collect();
    let mut files = Vec::with_capacity(names.len());
    let mut lines = Vec::with_capacity(names.len());
    for n in &names {
        let name =
            n.as_u64().and_then(|i| strings.get(i as usize)).and_then(Value::as_str).map(str::to_string);
        let source = name
            .and_then(|name| profile.frames.lookup(&name))
            .and_then(|f| profile.frame_source(f))
            .cloned()
            .unwrap_or_default();
        let file = source.file.map(|f| {
            let file = profile.file_name(f).to_string();
            *index_of.entry(file.clone()).or_insert_with(|| {
                strings.push(Value::String(file));
                strings.len() - 1
            })
        });
        files.push(json!(file));
        lines.push(json!(source.line));
    }
    thread["stringArray"] = Value::Array(strings);
    thread["funcTable"]["fileName"] = Value::Array(files);
    thread["funcTable"]["lineNumber"] = Value::Array(lines);
}
