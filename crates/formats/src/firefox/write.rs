//! Writing the model as a processed profile, through `fxprof-processed-profile` (the crate
//! samply writes its profiles with) for all but each track's stack table and samples.
//!
//! A process per model process; per model thread, one thread (a track in the profiler) per
//! event written (all events, or the one `--event` names), each sample a model stack with its
//! weight. A frame whose name is the name of a symbol of one of the process's images becomes an
//! address in that image's library (the library carries the image's symbols as its symbol
//! table, so the profiler shows the name and knows the address); a frame named
//! `IMAGE+0xOFFSET` (an address nothing named), or one the model keeps a runtime address for,
//! becomes that address in the image's library; any other frame is a label. Frames in a kernel
//! image, or named with perf's `_[k]`, get the `Kernel` category, the others `User`.
//!
//! The crate makes the profile's meta, libraries, categories and each track's frame, function,
//! resource, native-symbol and string tables. The stack table and samples are cfghub's own
//! ([`StackTree`]): the crate interns every node of every stack through a hash table, once per
//! track, which took most of the writing time; the model's stacks are all known up front, so
//! sorting them once per model thread gives the prefix tree without a lookup, shared by the
//! thread's tracks. They are written in the crate's layout, the frames by the numbers the crate
//! gave them.
//!
//! The crate's JSON is serialized once, and completed as it is copied out (only the small parts
//! that change are parsed): each track's stack table and samples, each function's file and
//! first line (`funcTable.fileName`, `lineNumber`, which the crate leaves empty), each
//! library's address range (`start`, `end`), and what cfghub needs to read its own file back
//! exactly (`meta.cfghub`, each thread's `cfghubEvent`, `cfghubThread` and `cfghubScale`),
//! which the profiler ignores.
//!
//! A profile of flat costs of one process whose every stack is one frame is written by
//! [`super::flat`] instead, its tables column by column as its costs are walked, with the
//! crate's skeleton ([`Skeleton`]), this module's weighing ([`Notes`]) and the same bytes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;

use fxprof_processed_profile::{
    debugid::DebugId, CategoryColor, CategoryPairHandle, Frame, FrameFlags, FrameHandle, FrameInfo,
    LibraryHandle, LibraryInfo, ProcessHandle, ReferenceTimestamp, SamplingInterval, StringHandle, Symbol,
    SymbolTable, ThreadHandle, Timestamp,
};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::write_error;
use cfghub_model::ir::{rounded, to_f64, FrameId, Image, Process, Profile, StackValue, Stacks, NO_INDEX};

use super::{is_kernel_image, KERNEL_SUFFIX};

/// The largest weight the format holds: the crate's sample weight is an `i32`.
const MAX_WEIGHT: u64 = i32::MAX as u64;
/// At most this many extra samples are made by splitting weights above [`MAX_WEIGHT`]; past
/// it, the track's weights are scaled down instead.
const MAX_SPLIT_SAMPLES: u64 = 1_000_000;

/// Writes model stacks: the crate's tables completed with cfghub's stack tables and samples.
pub(super) fn write_model(
    profile: &Profile,
    events: &[usize],
    out: &mut dyn Write,
    findings: &mut Findings,
) -> Result<()> {
    let mut w = Writer {
        skeleton: Skeleton::new(profile),
        strings: HashMap::new(),
        tracks: Vec::new(),
        stack_tables: Vec::new(),
        notes: Notes::default(),
    };
    for process in &profile.processes {
        w.process(profile, process, events);
    }
    w.notes.report(profile, findings);
    let serialized = serde_json::to_vec(&w.skeleton.fx).map_err(unserializable)?;
    drop(w.skeleton);
    let by_name: HashMap<&str, &Track> = w.tracks.iter().map(|t| (t.name.as_str(), t)).collect();
    let err = write_error("Firefox Profiler output");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    complete(&serialized, profile, &mut out, |thread, out| {
        let entries = thread_completed(thread, &by_name, &w.stack_tables, profile)?;
        write_object(out, &entries).map_err(&err)
    })?;
    out.write_all(b"\n").map_err(&err)?;
    out.flush().map_err(&err)
}

/// The crate's profile before any frame is interned, with the categories frames take and the
/// names of the tracks made so far.
pub(super) struct Skeleton {
    pub(super) fx: fxprof_processed_profile::Profile,
    user: CategoryPairHandle,
    kernel: CategoryPairHandle,
    /// The category `user` as the frame table writes it.
    pub(super) user_index: String,
    names: std::collections::HashSet<String>,
}

impl Skeleton {
    pub(super) fn new(profile: &Profile) -> Skeleton {
        let product = profile.meta.command.clone().unwrap_or_else(|| "cfghub".to_string());
        let mut fx = fxprof_processed_profile::Profile::new(
            &product,
            ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
            SamplingInterval::from_millis(1),
        );
        let user_category = fx.add_category("User", CategoryColor::Yellow);
        let kernel = CategoryPairHandle::from(fx.add_category("Kernel", CategoryColor::Orange));
        let user_index = serde_json::to_string(&user_category).expect("a category is a number");
        Skeleton {
            fx,
            user: CategoryPairHandle::from(user_category),
            kernel,
            user_index,
            names: Default::default(),
        }
    }

    /// The crate's process of a model process: its handle, pid and name.
    pub(super) fn process(&mut self, profile: &Profile, process: &Process) -> (ProcessHandle, u32, String) {
        let pid = u32::try_from(process.pid).unwrap_or(u32::MAX);
        let mut name = profile.meta.command.clone().unwrap_or_else(|| format!("pid {}", process.pid));
        let p = profile.processes.iter().position(|q| std::ptr::eq(q, process)).unwrap_or(0);
        if let Some(labels) = cfghub_analysis::labels::process_label_text(profile, p) {
            name.push_str(&format!(" ({labels})"));
        }
        let handle = self.fx.add_process(&name, pid, Timestamp::from_millis_since_reference(0.0));
        (handle, pid, name)
    }

    /// A track of model thread `thread` of process `process` (named `process_name`) for event
    /// `e`, named uniquely in the file.
    pub(super) fn track(
        &mut self,
        (process, pid, process_name): &(ProcessHandle, u32, String),
        (thread, thread_name): (Option<u32>, Option<&str>),
        profile: &Profile,
        e: usize,
        events: &[usize],
    ) -> (ThreadHandle, String) {
        let tid = thread.map_or(*pid, |t| pid.wrapping_add(t));
        // No track is the process's main thread: the crate would name it after the process,
        // and names tell the tracks apart in its output (it sorts them).
        let handle = self.fx.add_thread(*process, tid, Timestamp::from_millis_since_reference(0.0), false);
        let mut name = match (thread_name, thread) {
            (Some(name), _) => name.to_string(),
            (None, Some(t)) => format!("thread {t}"),
            (None, None) => process_name.clone(),
        };
        if events.len() > 1 || profile.events.len() > 1 {
            name = format!("{name} ({})", profile.events[e].name);
        }
        let name = self.unique(name);
        self.fx.set_thread_name(handle, &name);
        (handle, name)
    }

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

/// One written track: whose thread and event it is, and how its weights were scaled.
struct Track {
    /// The thread's name, unique in the file.
    name: String,
    event: String,
    thread: Option<u32>,
    /// The name the samples' label gives their thread, kept for reading back.
    thread_name: Option<String>,
    scale: u64,
    /// The JSON of its `stackTable`: an index into [`Writer::stack_tables`] (the tracks of a
    /// model thread share one).
    stack_table: usize,
    /// The JSON of its `samples`.
    samples: String,
    /// How many frames its frame table has (the crate's: checked against what was interned).
    frames: usize,
}

/// What a writer could not express exactly, said once at the end.
#[derive(Default)]
pub(super) struct Notes {
    rounded: usize,
    /// Per event index: the weights' sum before and after rounding, where any was rounded.
    rounding: std::collections::BTreeMap<usize, (f64, f64)>,
    dropped: usize,
    split: u64,
    split_into: u64,
    scaled: Vec<(String, u64)>,
}

impl Notes {
    /// The whole weight written for a sample's value `v` of `decimals` places (0: not
    /// written): `v` rounded, where noted; beyond 64 bits, the nearest 64-bit weight. `sums`
    /// adds up the values and the weights.
    pub(super) fn whole(&mut self, v: StackValue, decimals: u8, sums: &mut (f64, f64)) -> i64 {
        let r = rounded(v, decimals);
        if decimals > 0 && r * cfghub_model::ir::power_of_ten(decimals) != v {
            self.rounded += 1;
        }
        sums.0 += to_f64(v, decimals);
        sums.1 += r as f64;
        clamped(r)
    }

    /// Adds the sums of a track of event `e` ([`Notes::whole`]).
    pub(super) fn add_sums(&mut self, e: usize, (source, kept): (f64, f64)) {
        let sums = self.rounding.entry(e).or_default();
        sums.0 += source;
        sums.1 += kept;
    }

    /// The factor the weights of track `track` are divided by: 1 unless splitting them into
    /// samples of at most [`MAX_WEIGHT`] makes more than [`MAX_SPLIT_SAMPLES`] extra samples
    /// (`extra`; `most` is the largest weight), where noted.
    pub(super) fn scale(&mut self, extra: u64, most: u64, track: &str) -> u64 {
        if extra <= MAX_SPLIT_SAMPLES {
            return 1;
        }
        let factor = most.div_ceil(MAX_WEIGHT);
        self.scaled.push((track.to_string(), factor));
        factor
    }

    /// Notes weight `w` where it is written as several samples.
    pub(super) fn split(&mut self, w: i64) {
        if w.unsigned_abs() > MAX_WEIGHT {
            self.split += 1;
            self.split_into += w.unsigned_abs().div_ceil(MAX_WEIGHT);
        }
    }

    pub(super) fn report(&self, profile: &Profile, findings: &mut Findings) {
        if self.rounded > 0 {
            let name = |e: usize| profile.events.get(e).map_or_else(String::new, |ev| ev.name.clone());
            let source: Vec<(String, f64)> = self.rounding.iter().map(|(&e, &(s, _))| (name(e), s)).collect();
            let kept: Vec<(String, f64)> = self.rounding.iter().map(|(&e, &(_, k))| (name(e), k)).collect();
            let why = format!("{} fractional weight(s) rounded to integers", self.rounded);
            cfghub_analysis::totals::warn_left_out(findings, "Firefox Profiler", &source, &kept, &why);
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
    skeleton: Skeleton,
    strings: HashMap<FrameId, StringHandle>,
    tracks: Vec<Track>,
    /// The JSON of the tracks' stack tables.
    stack_tables: Vec<String>,
    notes: Notes,
}

/// Where a frame's function is, when it can be written as an address.
#[derive(Clone, Copy)]
struct AddressOf {
    image: usize,
    offset: u32,
}

impl Writer {
    fn process(&mut self, profile: &Profile, process: &Process, events: &[usize]) {
        let opened = self.skeleton.process(profile, process);
        let (libs, kernel_images) = self.libraries(profile, process);
        let first = std::ptr::eq(process, &profile.processes[0]);
        let addresses = frame_addresses(profile, process, first);
        let mut by_thread: std::collections::BTreeMap<Option<u32>, Vec<usize>> = Default::default();
        for (i, s) in process.stacks.samples().enumerate() {
            by_thread.entry(s.thread).or_default().push(i);
        }
        for (thread, samples) in &by_thread {
            let stacks = &process.stacks;
            let tree = StackTree::of(stacks, samples);
            let thread_name = thread_name_of(stacks, samples);
            // The crate's frame indices of the tree's frames, and the stack table they make:
            // the same for every track of the thread (each interns the same frames in the same
            // order), so made once unless a track's differ.
            let mut shared: Option<(Vec<u32>, usize)> = None;
            for &e in events {
                let (th, track) =
                    self.skeleton.track(&opened, (*thread, thread_name.as_deref()), profile, e, events);
                let (frame_index, frames) =
                    self.intern_frames(th, profile, &tree, &addresses, &libs, &kernel_images);
                let stack_table = match &shared {
                    Some((index, table)) if *index == frame_index => *table,
                    _ => {
                        self.stack_tables.push(tree.table_json(&frame_index));
                        shared = Some((frame_index, self.stack_tables.len() - 1));
                        self.stack_tables.len() - 1
                    }
                };
                let (weights, scale) = self.weights(stacks, samples, e, &track);
                let samples = self.samples_json(&tree, &weights);
                self.tracks.push(Track {
                    name: track,
                    event: profile.events[e].name.clone(),
                    thread: *thread,
                    thread_name: thread_name.clone(),
                    scale,
                    stack_table,
                    samples,
                    frames,
                });
            }
        }
    }

    /// Interns the frames of `tree` in thread `th`, in the order of its nodes: the crate's
    /// frame index of each model frame the tree holds (by [`FrameId`]; others `u32::MAX`), and
    /// how many frames the thread has.
    /// The crate numbers a thread's frames 0, 1, ... as they are first interned, and a
    /// handle's order is its number's, so each frame's index is its handle's rank.
    fn intern_frames(
        &mut self,
        th: fxprof_processed_profile::ThreadHandle,
        profile: &Profile,
        tree: &StackTree,
        addresses: &HashMap<FrameId, AddressOf>,
        libs: &[Option<LibraryHandle>],
        kernel_images: &[bool],
    ) -> (Vec<u32>, usize) {
        let mut handle_of: Vec<Option<FrameHandle>> = vec![None; profile.frames.len()];
        for &f in &tree.frame {
            if handle_of[f as usize].is_none() {
                let info = self.frame_info(profile, f, addresses, libs, kernel_images);
                handle_of[f as usize] = Some(self.skeleton.fx.intern_frame(th, info));
            }
        }
        let mut ranked: Vec<FrameHandle> = handle_of.iter().flatten().copied().collect();
        ranked.sort_unstable();
        ranked.dedup();
        let index = handle_of
            .iter()
            .map(|h| h.and_then(|h| ranked.binary_search(&h).ok()).map_or(u32::MAX, |i| i as u32))
            .collect();
        (index, ranked.len())
    }

    /// The JSON of a track's `samples` (as the crate writes them): a sample per stack with a
    /// weight (several where it is split), 1 ms apart, in the order of `stacks`.
    fn samples_json(&mut self, tree: &StackTree, weights: &[i64]) -> String {
        let mut stack_column = String::with_capacity(weights.len() * 8);
        let mut weight_column = String::with_capacity(weights.len() * 4);
        let mut n = 0usize;
        let mut numbers = itoa::Buffer::new();
        for (leaf, &weight) in tree.leaf.iter().zip(weights) {
            if weight == 0 {
                continue;
            }
            self.notes.split(weight);
            for part in parts(weight) {
                if n > 0 {
                    stack_column.push(',');
                    weight_column.push(',');
                }
                match leaf {
                    Some(node) => stack_column.push_str(numbers.format(*node)),
                    None => stack_column.push_str("null"),
                }
                weight_column.push_str(numbers.format(part));
                n += 1;
            }
        }
        let mut out = String::with_capacity(stack_column.len() + weight_column.len() + 8 * n + 128);
        out.push_str("{\"length\":");
        out.push_str(numbers.format(n));
        out.push_str(",\"weightType\":\"samples\",\"stack\":[");
        out.push_str(&stack_column);
        out.push_str("],\"timeDeltas\":[");
        for i in 0..n {
            out.push_str(if i == 0 { "0.0" } else { ",1.0" });
        }
        out.push_str("],\"weight\":[");
        out.push_str(&weight_column);
        out.push_str("],\"threadCPUDelta\":[");
        for i in 0..n {
            out.push_str(if i == 0 { "0" } else { ",0" });
        }
        out.push_str("]}");
        out
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
        self.skeleton.fx.add_lib(LibraryInfo {
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
        let category_pair = if in_kernel { self.skeleton.kernel } else { self.skeleton.user };
        let frame = match at {
            Some((lib, a)) => Frame::RelativeAddressFromInstructionPointer(lib, a.offset),
            None => {
                let fx = &mut self.skeleton.fx;
                Frame::Label(*self.strings.entry(f).or_insert_with(|| fx.intern_string(name)))
            }
        };
        FrameInfo { frame, category_pair, flags: FrameFlags::empty() }
    }

    /// The weights of `stacks` for event `e`, rounded to whole numbers (0: not written) and
    /// divided by the factor returned ([`Notes::scale`]).
    fn weights(&mut self, stacks: &Stacks, samples: &[usize], e: usize, track: &str) -> (Vec<i64>, u64) {
        let mut sums = (0.0, 0.0);
        let decimals = stacks.decimals_of(e);
        let mut whole: Vec<i64> = samples
            .iter()
            .map(|&i| {
                self.notes.whole(stacks.sample(i).values.get(e).copied().unwrap_or(0), decimals, &mut sums)
            })
            .collect();
        if !samples.is_empty() {
            self.notes.add_sums(e, sums);
        }
        let extra = whole.iter().map(|&w| extra_samples(w)).sum();
        let most = whole.iter().map(|w| w.unsigned_abs()).max().unwrap_or(0);
        let factor = self.notes.scale(extra, most, track);
        if factor > 1 {
            for w in &mut whole {
                *w = scaled(*w, factor);
            }
        }
        (whole, factor)
    }
}

/// A whole value as a 64-bit weight: the nearest one beyond that range.
pub(super) fn clamped(v: StackValue) -> i64 {
    v.clamp(StackValue::from(i64::MIN), StackValue::from(i64::MAX)) as i64
}

/// How many samples beyond one weight `w` is split into.
pub(super) fn extra_samples(w: i64) -> u64 {
    w.unsigned_abs().div_ceil(MAX_WEIGHT).saturating_sub(1)
}

/// Weight `w` divided by `factor`, rounded (`w` itself for a factor of 1).
pub(super) fn scaled(w: i64, factor: u64) -> i64 {
    match factor {
        0 | 1 => w,
        _ => (w as f64 / factor as f64).round() as i64,
    }
}

/// A weight as the samples' weights the format holds: parts of at most [`MAX_WEIGHT`], of
/// the weight's sign (none for 0).
pub(super) fn parts(weight: i64) -> impl Iterator<Item = i32> {
    let (sign, mut left) = (weight.signum() as i32, weight.unsigned_abs());
    std::iter::from_fn(move || {
        (left > 0).then(|| {
            let part = left.min(MAX_WEIGHT);
            left -= part;
            sign * part as i32
        })
    })
}

/// The prefix tree of a model thread's stacks, the format's stack table: a node per distinct
/// stack prefix, its prefix's node before it.
///
/// The model's nodes on the thread's sampled paths, numbered in the order of a walk of the
/// tree with each node's children in frame order: the order of the sorted stacks, so that
/// stacks that share a prefix are neighbours and every prefix comes before what extends it.
/// The crate's own interning hashes every node of every stack, track by track.
struct StackTree {
    /// Per node, its prefix's node (`None` at a root) and its model frame.
    prefix: Vec<Option<u32>>,
    frame: Vec<FrameId>,
    /// Per sample (in the order given), the node of its leaf (`None`: a stack without frames).
    leaf: Vec<Option<u32>>,
}

impl StackTree {
    fn of(stacks: &Stacks, samples: &[usize]) -> StackTree {
        let nodes = stacks.nodes();
        // The model nodes on the samples' paths.
        let mut used = vec![false; nodes.len()];
        for &i in samples {
            let mut n = stacks.sample(i).node;
            while n != NO_INDEX && !used[n as usize] {
                used[n as usize] = true;
                n = nodes[n as usize].parent;
            }
        }
        let children = stacks.children();
        let mut number = vec![NO_INDEX; nodes.len()];
        let mut tree =
            StackTree { prefix: Vec::new(), frame: Vec::new(), leaf: Vec::with_capacity(samples.len()) };
        // Depth-first, each node's children on the samples' paths in frame order: `todo`
        // holds the nodes left to visit, the next on top.
        let mut todo: Vec<u32> = Vec::new();
        let push_children = |todo: &mut Vec<u32>, kids: &[u32]| {
            let start = todo.len();
            todo.extend(kids.iter().copied().filter(|&c| used[c as usize]));
            todo[start..].sort_unstable_by(|&a, &b| nodes[b as usize].frame.cmp(&nodes[a as usize].frame));
        };
        push_children(&mut todo, children.roots());
        while let Some(n) = todo.pop() {
            let node = nodes[n as usize];
            tree.prefix.push((node.parent != NO_INDEX).then(|| number[node.parent as usize]));
            tree.frame.push(node.frame);
            number[n as usize] = tree.frame.len() as u32 - 1;
            push_children(&mut todo, children.of(n));
        }
        for &i in samples {
            let n = stacks.sample(i).node;
            tree.leaf.push((n != NO_INDEX).then(|| number[n as usize]));
        }
        tree
    }

    /// The JSON of the stack table (as the crate writes it), frames by their index in the
    /// track's frame table (`frame_index`, by model frame).
    fn table_json(&self, frame_index: &[u32]) -> String {
        let mut out = String::with_capacity(self.frame.len() * 16 + 64);
        let mut numbers = itoa::Buffer::new();
        out.push_str("{\"length\":");
        out.push_str(numbers.format(self.frame.len()));
        out.push_str(",\"prefix\":[");
        for (i, p) in self.prefix.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match p {
                Some(p) => out.push_str(numbers.format(*p)),
                None => out.push_str("null"),
            }
        }
        out.push_str("],\"frame\":[");
        for (i, &f) in self.frame.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(numbers.format(frame_index[f as usize]));
        }
        out.push_str("]}");
        out
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
    {
        for f in process.stacks.nodes().iter().map(|n| n.frame) {
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

/// Writes the crate's JSON `serialized` to `out` with what the crate leaves empty set (see the
/// module documentation), each thread written by `write_thread`. Only the small parts that
/// change are parsed; the rest is copied as it is.
pub(super) fn complete(
    serialized: &[u8],
    profile: &Profile,
    out: &mut dyn Write,
    mut write_thread: impl FnMut(&RawValue, &mut dyn Write) -> Result<()>,
) -> Result<()> {
    let err = write_error("Firefox Profiler output");
    let top: Object = serde_json::from_slice(serialized).map_err(unserializable)?;
    out.write_all(b"{").map_err(&err)?;
    for (i, (key, value)) in top.0.iter().enumerate() {
        if i > 0 {
            out.write_all(b",").map_err(&err)?;
        }
        serde_json::to_writer(&mut *out, key).map_err(|e| err(e.into()))?;
        out.write_all(b":").map_err(&err)?;
        match *key {
            "meta" => {
                let mut meta = Object::parse(value.get())?.entries();
                let version = json!({ "version": env!("CARGO_PKG_VERSION") });
                meta.push(("cfghub", Cow::Owned(version.to_string())));
                write_object(out, &meta).map_err(&err)?;
            }
            "libs" => out.write_all(libs_with_ranges(value.get(), profile)?.as_bytes()).map_err(&err)?,
            "threads" => {
                let threads: Vec<&RawValue> = serde_json::from_str(value.get()).map_err(unserializable)?;
                out.write_all(b"[").map_err(&err)?;
                for (i, thread) in threads.into_iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",").map_err(&err)?;
                    }
                    write_thread(thread, out)?;
                }
                out.write_all(b"]").map_err(&err)?;
            }
            _ => out.write_all(value.get().as_bytes()).map_err(&err)?,
        }
    }
    out.write_all(b"}").map_err(&err)
}

pub(super) fn unserializable(e: serde_json::Error) -> Error {
    Error::unsupported(format!("the profile could not be serialized: {e}"))
}

/// A JSON object as its keys and their values' text, in the order written.
pub(super) struct Object<'a>(Vec<(&'a str, &'a RawValue)>);

impl<'a> Object<'a> {
    pub(super) fn parse(text: &'a str) -> Result<Object<'a>> {
        serde_json::from_str(text).map_err(unserializable)
    }

    pub(super) fn entries(self) -> Vec<(&'a str, Cow<'a, str>)> {
        self.0.into_iter().map(|(k, v)| (k, Cow::Borrowed(v.get()))).collect()
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Object<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Object<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> std::result::Result<Object<'de>, M::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<&'de str, &'de RawValue>()? {
                    out.push(entry);
                }
                Ok(Object(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The JSON text of an object of `entries` (keys and their values' JSON text).
fn object_text(entries: &[(&str, Cow<'_, str>)]) -> String {
    let mut out = Vec::with_capacity(entries.iter().map(|(k, v)| k.len() + v.len() + 4).sum::<usize>() + 2);
    write_object(&mut out, entries).expect("writing to memory");
    String::from_utf8(out).expect("JSON text is UTF-8")
}

pub(super) fn write_object(out: &mut dyn Write, entries: &[(&str, Cow<'_, str>)]) -> std::io::Result<()> {
    out.write_all(b"{")?;
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, key)?;
        out.write_all(b":")?;
        out.write_all(value.as_bytes())?;
    }
    out.write_all(b"}")
}

/// The libraries, each with the address range of its image.
fn libs_with_ranges(text: &str, profile: &Profile) -> Result<String> {
    let mut libs: Vec<Value> = serde_json::from_str(text).map_err(unserializable)?;
    let ranges: HashMap<String, (u64, Option<u64>)> = profile
        .processes
        .iter()
        .flat_map(|p| &p.images)
        .filter(|i| i.file.is_some())
        .map(|i| (profile.image_name(i), (i.load_addr, i.size)))
        .collect();
    for lib in &mut libs {
        let Some(&(start, size)) = lib["path"].as_str().and_then(|p| ranges.get(p)) else { continue };
        lib["start"] = json!(start);
        lib["end"] = json!(start.saturating_add(size.unwrap_or(0)));
    }
    Ok(Value::Array(libs).to_string())
}

/// A thread's JSON entries with the track's stack table and samples, its own keys, and its
/// functions' files and lines.
fn thread_completed<'a>(
    thread: &'a RawValue,
    tracks: &HashMap<&str, &'a Track>,
    stack_tables: &'a [String],
    profile: &Profile,
) -> Result<Vec<(&'a str, Cow<'a, str>)>> {
    let mut entries = Object::parse(thread.get())?.entries();
    let Some(track) = track_of(&entries, tracks) else { return Ok(entries) };
    // The stack table names frames by the numbers the crate gave them: it must have as many.
    let frame_table = entries.iter().find(|(k, _)| *k == "frameTable").map(|(_, v)| v.as_ref());
    let frames = frame_table.map(Object::parse).transpose()?.and_then(|t| {
        let length = t.0.iter().find(|(k, _)| *k == "length")?;
        serde_json::from_str::<usize>(length.1.get()).ok()
    });
    if frames != Some(track.frames) {
        return Err(Error::unsupported(format!(
            "track '{}': the frame table has {frames:?} frames where {} were interned",
            track.name, track.frames
        )));
    }
    for (key, value) in &mut entries {
        match *key {
            "stackTable" => *value = Cow::Borrowed(stack_tables[track.stack_table].as_str()),
            "samples" => *value = Cow::Borrowed(track.samples.as_str()),
            _ => {}
        }
    }
    if !profile.frame_sources.is_empty() {
        fill_sources(&mut entries, profile)?;
    }
    push_own_keys(&mut entries, &track.event, (track.thread, track.thread_name.as_deref()), track.scale);
    Ok(entries)
}

/// The thread name every one of `samples` has as its label (the reader's
/// [`super::THREAD_NAME_LABEL`]), which names their track.
fn thread_name_of(stacks: &cfghub_model::ir::Stacks, samples: &[usize]) -> Option<String> {
    let name_in = |i: usize| {
        stacks
            .sample(i)
            .labels
            .iter()
            .find(|l| &*l.key == super::THREAD_NAME_LABEL)
            .map(|l| l.value.to_string())
    };
    let first = name_in(*samples.first()?)?;
    samples.iter().all(|&i| name_in(i).as_deref() == Some(first.as_str())).then_some(first)
}

/// The track a thread's entries (the crate's) are of, found by its name.
pub(super) fn track_of<'a, T>(
    entries: &[(&str, Cow<'_, str>)],
    tracks: &HashMap<&str, &'a T>,
) -> Option<&'a T> {
    let name = entries.iter().find(|(k, _)| *k == "name").map(|(_, v)| serde_json::from_str::<String>(v));
    name.and_then(|n| n.ok()).and_then(|n| tracks.get(n.as_str()).copied())
}

/// What cfghub needs to read a track back exactly, which the profiler ignores: its event, its
/// model thread, and the factor its weights were divided by (where not 1).
pub(super) fn push_own_keys(
    entries: &mut Vec<(&str, Cow<'_, str>)>,
    event: &str,
    (thread, thread_name): (Option<u32>, Option<&str>),
    scale: u64,
) {
    entries.push(("cfghubEvent", Cow::Owned(json!(event).to_string())));
    entries.push(("cfghubThread", Cow::Owned(json!(thread).to_string())));
    if let Some(name) = thread_name {
        entries.push(("cfghubThreadName", Cow::Owned(json!(name).to_string())));
    }
    if scale > 1 {
        entries.push(("cfghubScale", Cow::Owned(scale.to_string())));
    }
}

/// Each function's file and first line (`funcTable.fileName`, `lineNumber`), from the model's
/// frame sources, by its name; file names are added to the thread's strings.
fn fill_sources(thread: &mut [(&str, Cow<'_, str>)], profile: &Profile) -> Result<()> {
    let at = |key: &str| thread.iter().position(|(k, _)| *k == key);
    let (Some(strings_at), Some(funcs_at)) = (at("stringArray"), at("funcTable")) else { return Ok(()) };
    let mut strings: Vec<String> = serde_json::from_str(&thread[strings_at].1).map_err(unserializable)?;
    let mut funcs = Object::parse(&thread[funcs_at].1)?.entries();
    let Some(names_at) = funcs.iter().position(|(k, _)| *k == "name") else { return Ok(()) };
    let names: Vec<Option<usize>> = serde_json::from_str(&funcs[names_at].1).map_err(unserializable)?;
    let mut index_of: HashMap<String, usize> =
        strings.iter().enumerate().map(|(i, s)| (s.clone(), i)).collect();
    let mut files = Vec::with_capacity(names.len());
    let mut lines = Vec::with_capacity(names.len());
    for n in names {
        let source = n
            .and_then(|i| strings.get(i))
            .and_then(|name| profile.frames.lookup(name))
            .and_then(|f| profile.frame_source(f))
            .cloned()
            .unwrap_or_default();
        let file = source.file.map(|f| {
            let file = profile.file_name(f).to_string();
            *index_of.entry(file.clone()).or_insert_with(|| {
                strings.push(file);
                strings.len() - 1
            })
        });
        files.push(file);
        lines.push(source.line);
    }
    for (key, value) in [("fileName", json!(files)), ("lineNumber", json!(lines))] {
        let text = Cow::Owned(value.to_string());
        match funcs.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = text,
            None => funcs.push((key, text)),
        }
    }
    let funcs = object_text(&funcs);
    thread[funcs_at].1 = Cow::Owned(funcs);
    thread[strings_at].1 = Cow::Owned(serde_json::to_string(&strings).map_err(unserializable)?);
    Ok(())
}
