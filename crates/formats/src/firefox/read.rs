//! Reading the processed profile format into the model.
//!
//! Each thread (a track in the profiler) names its samples' stacks; a stack is a node of a
//! prefix tree (`stackTable.prefix`, the caller's stack, or `null` at a root) holding one
//! frame; a frame names a function (`funcTable`), an address relative to a library and an
//! inline depth; a function names its resource, and a resource (or, from version 70, the
//! frame) its library. The reader sums each thread's sample weights per stack first, then
//! walks the prefix chain once per stack that was sampled, so a profile of millions of
//! samples walks each distinct stack once. The JSON is parsed as it arrives, with
//! [`cfghub_model::json::JsonReader`] (from the file, or from the thread that inflates it): no copy
//! of the text is held, and parsing overlaps inflating.
//!
//! Model: a process per distinct `pid`, a thread per distinct `tid` in it (in order of first
//! appearance), one event per weight type (`samples`, `tracing-ms`, `bytes`; a file cfghub
//! wrote names its events itself), an image per library a frame is in. samply does not
//! symbolize: its functions are named by their address (`0x1139`), and such a frame becomes
//! `LIBRARY+0x1139`, which `cfghub_analysis::symbolize` names from the library's binary.

use std::collections::HashMap;
use std::io::Read;

use serde::de::DeserializeSeed;

use super::schema::{
    Column, File, FileSeed, FrameTable, FuncTable, Lib, ResourceTable, Seen, Sources, StackTable, Thread,
};
use super::{is_kernel_image, KERNEL_SUFFIX, NEWEST_VERSION, OLDEST_VERSION};
use crate::format::ReadOptions;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::io::Source;
use cfghub_model::ir::{
    power_of_ten, Event, FileId, FrameId, FrameSource, Image, Label, Meta, Process, Profile, StackValue,
    NO_INDEX,
};
use cfghub_model::json::JsonReader;

const HINT: &str = "expected the Firefox Profiler's processed profile format (JSON, gzip-compressed \
                    or plain), as `samply record --save-only` or the profiler's download writes it";

/// Reads a whole processed profile from its stream: the JSON is parsed as it arrives (from
/// the file, or from the thread that decompresses it), never held whole.
pub fn read(input: &mut Source<'_>, _options: &ReadOptions, findings: &mut Findings) -> Result<Profile> {
    read_from(input.stream(), findings)
}

/// Reads a processed profile from its JSON text.
pub fn read_bytes(bytes: &[u8], findings: &mut Findings) -> Result<Profile> {
    read_from(bytes, findings)
}

fn read_from(input: impl Read, findings: &mut Findings) -> Result<Profile> {
    let file = parse(input)?;
    let version = version_of(&file)?;
    Reader::new(&file, version).read(findings)
}

/// The file's tables. A file of a newer version, or a Gecko profile, that does not parse is
/// refused as such, by what its top level showed before parsing stopped.
fn parse(input: impl Read) -> Result<File> {
    let mut seen = Seen::default();
    let mut json = JsonReader::new(input);
    let parsed = FileSeed(&mut seen).deserialize(&mut json).and_then(|file| json.end().map(|()| file));
    let e = match parsed {
        Ok(file) => return Ok(file),
        Err(e) => json.place(e),
    };
    if let Some(meta) = seen.meta {
        let newer = meta.preprocessed_profile_version.as_ref().and_then(|v| v.as_u64());
        if seen.gecko || newer.is_some_and(|v| v > NEWEST_VERSION) {
            version_of(&File { meta, ..File::default() })?;
        }
    }
    if e.io {
        // The decompressor's own message, which says where the compressed data went wrong.
        return Err(Error::input(e.message.clone()));
    }
    let what = if e.eof { "the JSON ends too early (truncated file?)" } else { "not a processed profile" };
    Err(Error::input(format!("{what}: {e}")).at_line(e.line).with_hint(HINT))
}

/// The file's processed-profile version, refused unless cfghub reads it.
fn version_of(file: &File) -> Result<u64> {
    let refuse = |what: String| {
        Error::unsupported(format!(
            "{what}; cfghub reads processed profiles of versions {OLDEST_VERSION} to {NEWEST_VERSION}"
        ))
        .at_path("meta.preprocessedProfileVersion")
    };
    match &file.meta.preprocessed_profile_version {
        Some(v) => match v.as_u64() {
            Some(n) if n <= NEWEST_VERSION => Ok(n),
            Some(n) => Err(refuse(format!("processed profile version {n}"))
                .with_hint("open it in the Firefox Profiler, whose download of it cfghub may read once it supports the version")),
            None => Err(refuse(format!("processed profile version {v}, not a number"))),
        },
        None => {
            // Gecko profiles (what Firefox hands the profiler) describe their tables with a
            // `schema`; processed profiles from before versioning (version 0) do not.
            let gecko = file.threads.iter().any(|t| t.stack_table.as_ref().is_some_and(|s| s.schema.is_some()));
            let bare = file.threads.is_empty() && file.shared.stack_table.is_none();
            if gecko || bare && file.meta.version.is_some() {
                let v = file.meta.version.as_ref().map_or("none".to_string(), |v| v.to_string());
                Err(Error::unsupported(format!(
                    "a Gecko profile (meta.version {v}), not the processed profile format; cfghub reads \
                     processed profiles of versions {OLDEST_VERSION} to {NEWEST_VERSION}"
                ))
                .at_path("meta")
                .with_hint("load it in the Firefox Profiler and download it from there: that saves the processed format"))
            } else {
                Ok(0)
            }
        }
    }
}

/// The tables one thread's samples refer to, and the JSON paths they are at.
struct Tables<'a> {
    strings: &'a [String],
    strings_at: &'a str,
    stacks: &'a StackTable,
    frames: &'a FrameTable,
    funcs: &'a FuncTable,
    resources: Option<&'a ResourceTable>,
    sources: Option<&'a Sources>,
    libs: &'a [Lib],
    /// Where the tables are: `threads[3]` or `shared`.
    at: String,
}

/// An absent value (`null`, or a negative sentinel such as `-1`), or an index.
fn index(v: Option<&Option<i64>>) -> Option<usize> {
    v.copied().flatten().and_then(|v| usize::try_from(v).ok())
}

fn bad(path: String, message: String) -> Error {
    Error::input(message).at_path(path).with_hint(HINT)
}

impl<'a> Tables<'a> {
    fn string(&self, i: usize, path: impl Fn() -> String) -> Result<&'a str> {
        self.strings.get(i).map(String::as_str).ok_or_else(|| {
            bad(
                path(),
                format!(
                    "string index {i} is out of range: {} has {} strings",
                    self.strings_at,
                    self.strings.len()
                ),
            )
        })
    }

    /// The stack's caller, `None` at a root.
    fn prefix(&self, s: usize) -> Result<Option<usize>> {
        let n = self.stacks.frame.len();
        if let Some(offsets) = &self.stacks.prefix_offset {
            let off = offsets.get(s).copied().flatten().unwrap_or(0);
            return match usize::try_from(off) {
                Ok(0) => Ok(None),
                Ok(off) if off <= s => Ok(Some(s - off)),
                _ => Err(bad(
                    format!("{}.stackTable.prefixOffset[{s}]", self.at),
                    format!("prefix offset {off} points before the first stack"),
                )),
            };
        }
        let Some(prefix) = self.stacks.prefix.as_ref() else {
            return Err(bad(
                format!("{}.stackTable", self.at),
                "the stack table has no prefix column".into(),
            ));
        };
        match prefix.get(s) {
            None => Ok(None),
            Some(p) if p < n => Ok(Some(p)),
            Some(p) => Err(bad(
                format!("{}.stackTable.prefix[{s}]", self.at),
                format!("stack {p} does not exist: the stack table has {n} stacks"),
            )),
        }
    }
}

/// What reading has gathered so far.
struct Reader<'f> {
    file: &'f File,
    version: u64,
    profile: Profile,
    /// Process index by the `pid` text; thread index by (process, `tid` text).
    processes: HashMap<String, usize>,
    threads: HashMap<(usize, String), u32>,
    /// Image index by (process, library path, start).
    images: HashMap<(usize, String, u64), u32>,
    /// The samples at each sampled address, by (process, image) and address relative to the
    /// library, per event: the leaf frames' addresses, as a recording's sampled instructions
    /// (what BOLT's `no_lbr` profile and AutoFDO are made from).
    sampled: HashMap<(usize, u32), std::collections::BTreeMap<u64, Vec<u64>>>,
    scratch: Scratch,
}

impl<'f> Reader<'f> {
    fn new(file: &'f File, version: u64) -> Self {
        let meta = Meta {
            format_version: Some((version, 0)),
            creator: file.meta.product.clone(),
            headers: file
                .meta
                .interval
                .map(|i| ("firefox.interval".to_string(), format!("{i} ms")))
                .into_iter()
                .collect(),
            ..Meta::default()
        };
        Reader {
            file,
            version,
            profile: Profile { meta, ..Profile::default() },
            processes: HashMap::new(),
            threads: HashMap::new(),
            images: HashMap::new(),
            sampled: HashMap::new(),
            scratch: Scratch::default(),
        }
    }

    fn read(mut self, findings: &mut Findings) -> Result<Profile> {
        for (t, thread) in self.file.threads.iter().enumerate() {
            self.read_thread(t, thread)?;
        }
        let empty: usize = self
            .profile
            .processes
            .iter()
            .map(|p| p.stacks.samples().filter(|s| s.node == NO_INDEX).count())
            .sum();
        if empty > 0 {
            findings.warn(
                None,
                format!(
                    "version {} profile: samples without a stack kept as {empty} stack(s) without frames",
                    self.version
                ),
            );
        }
        let width = self.profile.events.len();
        let mut sampled: Vec<_> = std::mem::take(&mut self.sampled).into_iter().collect();
        sampled.sort_by_key(|(at, _)| *at);
        for ((p, image), addresses) in sampled {
            let costs = &mut self.profile.processes[p].images[image as usize].costs;
            for (address, mut values) in addresses {
                values.resize(width, 0);
                costs.push_parts(Some(address), None, None, None, &values);
            }
        }
        Ok(self.profile)
    }

    /// Counts the samples of stack `s` (weight `w`, whole units of `event`) at its leaf
    /// frame's address, where the frame has one in a library.
    fn count_at_leaf(
        &mut self,
        tables: &Tables<'f>,
        s: usize,
        p: usize,
        event: usize,
        w: StackValue,
    ) -> Result<()> {
        let Some(f) = tables.stacks.frame.get(s).filter(|&f| f < tables.frames.func.len()) else {
            return Ok(());
        };
        let Some(address) = index(tables.frames.address.get(f)) else { return Ok(()) };
        let Some(func) = index(tables.frames.func.get(f)).filter(|&func| func < tables.funcs.name.len())
        else {
            return Ok(());
        };
        let Some(lib) = self.lib_of(tables, f, func)? else { return Ok(()) };
        let (Ok(w), Ok(address)) = (u64::try_from(w), u64::try_from(address)) else { return Ok(()) };
        let image = self.image(tables, lib, p);
        let values = self.sampled.entry((p, image)).or_default().entry(address).or_default();
        if values.len() <= event {
            values.resize(event + 1, 0);
        }
        values[event] = values[event].saturating_add(w);
        Ok(())
    }

    fn tables(&self, t: usize, thread: &'f Thread) -> Result<Tables<'f>> {
        let shared = &self.file.shared;
        let at = format!("threads[{t}]");
        let missing =
            |what: &str| bad(format!("{at}.{what}"), format!("the thread has no {what} (nor has `shared`)"));
        let (strings, strings_at): (&'f [String], &'f str) =
            match (&thread.string_array, &shared.string_array) {
                (Some(s), _) => (s, "the thread's stringArray"),
                (None, Some(s)) => (s, "shared.stringArray"),
                (None, None) => (&[][..], "the string table"),
            };
        let on_thread = thread.stack_table.is_some();
        Ok(Tables {
            strings,
            strings_at,
            stacks: thread
                .stack_table
                .as_ref()
                .or(shared.stack_table.as_ref())
                .ok_or_else(|| missing("stackTable"))?,
            frames: thread
                .frame_table
                .as_ref()
                .or(shared.frame_table.as_ref())
                .ok_or_else(|| missing("frameTable"))?,
            funcs: thread
                .func_table
                .as_ref()
                .or(shared.func_table.as_ref())
                .ok_or_else(|| missing("funcTable"))?,
            resources: thread.resource_table.as_ref().or(shared.resource_table.as_ref()),
            sources: shared.sources.as_ref(),
            libs: thread.libs.as_deref().unwrap_or(&self.file.libs),
            at: if on_thread { at } else { "shared".to_string() },
        })
    }

    /// The model process and thread of a track.
    fn place(&mut self, thread: &Thread) -> (usize, Option<u32>) {
        let pid_text = thread.pid.as_ref().map_or_else(String::new, |p| p.text());
        let next = self.processes.len();
        let p = *self.processes.entry(pid_text).or_insert(next);
        if p == self.profile.processes.len() {
            let pid = thread.pid.as_ref().and_then(|p| p.number()).unwrap_or(p as u64);
            self.profile.processes.push(Process { pid, ..Process::default() });
        }
        if self.file.meta.cfghub.is_some() {
            return (p, thread.cfghub_thread);
        }
        let tid = thread.tid.as_ref().map_or_else(String::new, |t| t.text());
        let next = self.threads.keys().filter(|(q, _)| *q == p).count() as u32;
        (p, Some(*self.threads.entry((p, tid)).or_insert(next)))
    }

    /// The event a track's weights count.
    fn event(&mut self, thread: &Thread) -> usize {
        let name = match (&thread.cfghub_event, thread.samples.weight_type.as_deref()) {
            (Some(e), _) => e.clone(),
            (None, None) => "samples".to_string(),
            (None, Some(w)) => w.to_string(),
        };
        match self.profile.event_index(&name) {
            Some(e) => e,
            None => {
                self.profile.events.push(Event::new(name));
                self.profile.events.len() - 1
            }
        }
    }

    fn read_thread(&mut self, t: usize, thread: &'f Thread) -> Result<()> {
        let tables = self.tables(t, thread)?;
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.read_samples(&tables, t, thread, &mut scratch);
        scratch.clear();
        self.scratch = scratch;
        result
    }

    fn read_samples(
        &mut self,
        tables: &Tables<'f>,
        t: usize,
        thread: &'f Thread,
        scratch: &mut Scratch,
    ) -> Result<()> {
        sample_weights(tables, t, thread, scratch)?;
        if scratch.touched.iter().all(|&s| scratch.weights[s] == 0) {
            return Ok(());
        }
        let (p, model_thread) = self.place(thread);
        let event = self.event(thread);
        // The thread's name labels its samples: cfghub's own files state the name they had (a
        // track it named otherwise has none).
        let name = match self.file.meta.cfghub {
            Some(_) => thread.cfghub_thread_name.as_deref(),
            None => thread.name.as_deref(),
        };
        let label_set = match name.filter(|n| !n.is_empty()) {
            Some(n) => {
                self.profile.processes[p].stacks.label_set(vec![Label::text(super::THREAD_NAME_LABEL, n)])
            }
            None => NO_INDEX,
        };
        let stack_count = tables.stacks.frame.len();
        let frame_count = tables.frames.func.len();
        if scratch.frames.len() < frame_count {
            scratch.frames.resize(frame_count, NO_FRAME);
        }
        if scratch.nodes.len() < stack_count {
            scratch.nodes.resize(stack_count, NO_INDEX);
        }
        {
            let stacks = &mut self.profile.processes[p].stacks;
            stacks.widen(event + 1);
            stacks.set_decimals(event, scratch.decimals);
        }
        // The file's weights in the units of the model's column.
        let unit = power_of_ten(self.profile.processes[p].stacks.decimals_of(event) - scratch.decimals);
        let mut chain: Vec<(usize, FrameId)> = Vec::new();
        let mut values = vec![0; event + 1];
        for k in 0..scratch.touched.len() {
            let s = scratch.touched[k];
            let w = scratch.weights[s];
            if w == 0 {
                continue;
            }
            // The stacks from `s` up to the first one already a model node, leaf first, with
            // their frames (made leaf first, as the file's stacks are walked).
            chain.clear();
            let mut cur = (s < stack_count).then_some(s);
            while let Some(c) = cur {
                if scratch.nodes[c] != NO_INDEX {
                    break;
                }
                if chain.len() >= stack_count {
                    return Err(bad(
                        format!("{}.stackTable.prefix[{c}]", tables.at),
                        format!("the prefixes of stack {s} form a cycle"),
                    ));
                }
                let f = tables.stacks.frame.get(c).filter(|&f| f < frame_count).ok_or_else(|| {
                    bad(
                        format!("{}.stackTable.frame[{c}]", tables.at),
                        format!("the stack names no frame of the {frame_count} in the frame table"),
                    )
                })?;
                let mut frame = scratch.frames[f];
                if frame == NO_FRAME {
                    frame = self.frame(tables, f, p)?;
                    scratch.frames[f] = frame;
                    scratch.frames_touched.push(f);
                }
                chain.push((c, frame));
                cur = tables.prefix(c)?;
            }
            let mut node = cur.map_or(NO_INDEX, |c| scratch.nodes[c]);
            for &(c, frame) in chain.iter().rev() {
                node = self.profile.processes[p].stacks.node(node, frame);
                scratch.nodes[c] = node;
                scratch.nodes_touched.push(c);
            }
            values[event] = w * unit;
            // Whole samples (not traced milliseconds) counted at the leaf's address too.
            if scratch.decimals == 0 && self.profile.processes[p].stacks.decimals_of(event) == 0 {
                self.count_at_leaf(tables, s, p, event, w)?;
            }
            self.profile.processes[p].stacks.push_labelled_sample(node, model_thread, label_set, &values);
        }
        Ok(())
    }

    /// The model frame of frame `f`, its image made when its name is an address in a library.
    fn frame(&mut self, tables: &Tables<'f>, f: usize, p: usize) -> Result<FrameId> {
        let at = &tables.at;
        let func = index(tables.frames.func.get(f))
            .filter(|&func| func < tables.funcs.name.len())
            .ok_or_else(|| {
                bad(
                    format!("{at}.frameTable.func[{f}]"),
                    format!(
                        "the frame names no function of the {} in the function table",
                        tables.funcs.name.len()
                    ),
                )
            })?;
        let name_index = index(tables.funcs.name.get(func))
            .ok_or_else(|| bad(format!("{at}.funcTable.name[{func}]"), "function without a name".into()))?;
        let name = tables.string(name_index, || format!("{at}.funcTable.name[{func}]"))?;
        let address = index(tables.frames.address.get(f));
        let lib = self.lib_of(tables, f, func)?;
        let placeholder = name
            .strip_prefix("0x")
            .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()));
        let mut shown = match (placeholder, address, lib) {
            (true, Some(address), Some(l)) => {
                let image = self.image(tables, l, p);
                format!("{}+{address:#x}", image_base_name(&self.profile, image, p))
            }
            _ => name.to_string(),
        };
        if !placeholder && !shown.ends_with(KERNEL_SUFFIX) && self.in_kernel(tables, f, lib) {
            shown.push_str(KERNEL_SUFFIX);
        }
        let frame = self.profile.frames.intern(&shown);
        if frame as usize == self.profile.frame_sources.len() {
            let source = self.function_source(tables, func)?;
            self.profile.frame_sources.push(source);
        }
        Ok(frame)
    }

    /// Whether frame `f` is kernel code: its category is called `Kernel` (samply's), or its
    /// library is a kernel image.
    fn in_kernel(&self, tables: &Tables<'f>, f: usize, lib: Option<usize>) -> bool {
        let category = tables.frames.category.as_ref().and_then(|c| index(c.get(f)));
        let categories = self.file.meta.categories.as_deref().unwrap_or(&[]);
        category.and_then(|c| categories.get(c)).is_some_and(|c| c.name == "Kernel")
            || lib
                .and_then(|l| tables.libs.get(l))
                .is_some_and(|l| l.path.as_deref().or(l.name.as_deref()).is_some_and(is_kernel_image))
    }

    /// The library of frame `f` (of function `func`), checked.
    fn lib_of(&self, tables: &Tables<'f>, f: usize, func: usize) -> Result<Option<usize>> {
        let at = &tables.at;
        let (lib, path) = match &tables.frames.lib {
            Some(libs) => (index(libs.get(f)), format!("{at}.frameTable.lib[{f}]")),
            None => {
                let Some(resource) = index(tables.funcs.resource.get(func)) else { return Ok(None) };
                let Some(resources) = tables.resources else { return Ok(None) };
                if resource >= resources.name.len() {
                    return Err(bad(
                        format!("{at}.funcTable.resource[{func}]"),
                        format!(
                            "resource {resource} does not exist: the resource table has {}",
                            resources.name.len()
                        ),
                    ));
                }
                let lib = resources.lib.as_ref().and_then(|l| index(l.get(resource)));
                (lib, format!("{at}.resourceTable.lib[{resource}]"))
            }
        };
        match lib {
            Some(l) if l >= tables.libs.len() => Err(bad(
                path,
                format!("library {l} does not exist: the profile has {} libraries", tables.libs.len()),
            )),
            other => Ok(other),
        }
    }

    /// The model image of library `l` in process `p`.
    fn image(&mut self, tables: &Tables<'f>, l: usize, p: usize) -> u32 {
        let lib = &tables.libs[l];
        let path = lib.path.clone().or_else(|| lib.name.clone()).unwrap_or_else(|| format!("lib{l}"));
        let start = lib.start.as_ref().and_then(|n| n.as_u64()).unwrap_or(0);
        let end = lib.end.as_ref().and_then(|n| n.as_u64());
        let process = &mut self.profile.processes[p];
        let next = process.images.len() as u32;
        let key = (p, path.clone(), start);
        if let Some(&i) = self.images.get(&key) {
            return i;
        }
        self.images.insert(key, next);
        let file = self.profile.files.intern(&path);
        self.profile.processes[p].images.push(Image {
            id: l as u64,
            file: Some(file),
            load_addr: start,
            size: end.filter(|&e| e > start).map(|e| e - start),
            build_id: lib.code_id.clone().filter(|c| !c.is_empty()),
            ..Image::default()
        });
        next
    }

    /// Where function `func` is defined, as its columns say.
    fn function_source(&mut self, tables: &Tables<'f>, func: usize) -> Result<FrameSource> {
        let at = &tables.at;
        let file_string = match (&tables.funcs.file_name, &tables.funcs.source) {
            (Some(names), _) => index(names.get(func)),
            (None, Some(sources)) => match index(sources.get(func)) {
                Some(s) => {
                    let table = tables.sources.map_or(&[][..], |t| &t.filename[..]);
                    if s >= table.len() {
                        return Err(bad(
                            format!("{at}.funcTable.source[{func}]"),
                            format!("source {s} does not exist: shared.sources has {}", table.len()),
                        ));
                    }
                    index(table.get(s))
                }
                None => None,
            },
            (None, None) => None,
        };
        let file: Option<FileId> = match file_string {
            Some(i) => {
                let name = tables.string(i, || format!("{at}.funcTable.fileName[{func}]"))?;
                Some(self.profile.files.intern(name))
            }
            None => None,
        };
        let line = column_u32(tables.funcs.line_number.as_ref(), func);
        Ok(FrameSource { file, line, ..FrameSource::default() })
    }
}

fn column_u32(column: Option<&Column>, i: usize) -> Option<u32> {
    column.and_then(|c| index(c.get(i))).and_then(|v| u32::try_from(v).ok()).filter(|&v| v > 0)
}

/// The file name of image `i` of process `p`, without its folders.
fn image_base_name(profile: &Profile, i: u32, p: usize) -> String {
    let image = &profile.processes[p].images[i as usize];
    let name = profile.image_name(image);
    name.rsplit(['/', '\\']).next().unwrap_or(&name).to_string()
}

/// Each stack's summed sample weight (a weight column, else 1 per sample) into
/// `scratch.weights`, the stacks in order of first sample in `scratch.touched`; samples without
/// a stack are summed at the index one past the stack table.
fn sample_weights(tables: &Tables<'_>, t: usize, thread: &Thread, scratch: &mut Scratch) -> Result<()> {
    let samples = &thread.samples;
    let n = tables.stacks.frame.len();
    if scratch.weights.len() < n + 1 {
        scratch.weights.resize(n + 1, 0);
        scratch.seen.resize(n + 1, false);
    }
    if let Some(w) = &samples.weight {
        if w.len() < samples.stack.len() {
            return Err(bad(
                format!("threads[{t}].samples.weight"),
                format!("{} weights for {} samples", w.len(), samples.stack.len()),
            ));
        }
    }
    let scale = StackValue::from(thread.cfghub_scale.unwrap_or(1).max(1));
    for (i, s) in samples.stack.iter().enumerate() {
        let weight = samples.weight.as_ref().and_then(|w| w[i]);
        let w = match weight {
            None => scale * power_of_ten(scratch.decimals),
            Some(w) => {
                // The number as the file writes it (JSON text to the nearest f64 and back to
                // its shortest text), exactly.
                let (digits, places) = cfghub_model::ir::from_f64(w).ok_or_else(|| {
                    bad(
                        format!("threads[{t}].samples.weight[{i}]"),
                        "the weight is not a finite number below 1e38".into(),
                    )
                })?;
                if places > scratch.decimals && !scratch.refine(places) {
                    return Err(bad(
                        format!("threads[{t}].samples.weight[{i}]"),
                        format!("with its {places} decimal places, the weights add up past 2^127"),
                    ));
                }
                digits.checked_mul(power_of_ten(scratch.decimals - places) * scale).ok_or_else(|| {
                    bad(format!("threads[{t}].samples.weight[{i}]"), "the weight is past 2^127".into())
                })?
            }
        };
        let s = match s {
            None => n,
            Some(s) if s < n => s,
            Some(s) => {
                return Err(bad(
                    format!("threads[{t}].samples.stack[{i}]"),
                    format!("the sample names stack {s}, which does not exist: {} has {n} stacks", tables.at),
                ))
            }
        };
        if !scratch.seen[s] {
            scratch.seen[s] = true;
            scratch.touched.push(s);
        }
        scratch.weights[s] = scratch.weights[s].checked_add(w).ok_or_else(|| {
            bad(
                format!("threads[{t}].samples.weight[{i}]"),
                "the weights of one stack add up past 2^127".into(),
            )
        })?;
    }
    Ok(())
}

/// No model frame made yet for a frame of the file.
const NO_FRAME: FrameId = FrameId::MAX;

/// Per-thread working space, kept between threads (a profile's threads may share one large
/// table) and cleared by what each thread touched.
#[derive(Default)]
struct Scratch {
    /// Summed weights per stack, exact, in units of `10^-decimals`.
    weights: Vec<StackValue>,
    decimals: u8,
    seen: Vec<bool>,
    touched: Vec<usize>,
    frames: Vec<FrameId>,
    frames_touched: Vec<usize>,
    /// The model node of each stack of the file, once made.
    nodes: Vec<u32>,
    nodes_touched: Vec<usize>,
}

impl Scratch {
    /// Gives the weights summed so far `places` decimal places.
    /// Carries the sums with `places` decimal places; `false` when one no longer fits.
    fn refine(&mut self, places: u8) -> bool {
        let factor = power_of_ten(places - self.decimals);
        for &s in &self.touched {
            match self.weights[s].checked_mul(factor) {
                Some(w) => self.weights[s] = w,
                None => return false,
            }
        }
        self.decimals = places;
        true
    }

    fn clear(&mut self) {
        for &s in &self.touched {
            self.weights[s] = 0;
            self.seen[s] = false;
        }
        self.touched.clear();
        self.decimals = 0;
        for &f in &self.frames_touched {
            self.frames[f] = NO_FRAME;
        }
        self.frames_touched.clear();
        for &s in &self.nodes_touched {
            self.nodes[s] = NO_INDEX;
        }
        self.nodes_touched.clear();
    }
}
