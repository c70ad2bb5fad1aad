//! The symbolization pass over a whole profile: what any reader gave, named from ELF/DWARF.
//!
//! Per image that has something to name (symbols called `0x401190`, `prog+0x1234`, `???`;
//! costs without a function, a file or a line; blocks that no symbol covers or without
//! source lines):
//! 1. its debug information is searched ([`super::search`]);
//! 2. every distinct address (costs, blocks, the addresses placeholder names carry) is looked
//!    up once, in sorted runs side by side on all cores, each run with its own DWARF context;
//! 3. the model is filled where it lacks something: placeholder symbols renamed (a Callgrind
//!    recursion suffix `'2` kept), costs given their function, file and line, blocks covered by
//!    a symbol with its range, source lines per block from the line table, and the inline chain
//!    of each address in [`Image::inlined`]. `--symbols-override` replaces names and lines the
//!    input had.
//!
//! Two static functions of one name stay two symbols: symbols are told apart by their start
//! address, not their name.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::answers::Answers;
use super::search::{self, Query};
use super::{Relocation, Symbolizer};
use crate::analysis::names::SymbolIndex;
use crate::error::{Error, Findings, Result};
use crate::ir::{
    AddressKind, CostTable, FileId, FrameId, FrameSource, Image, InlineFrame, Inlined, Profile, Site,
    SourceLine, Symbol,
};

/// What the pass is asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--symbols` paths: binaries, debug files, folders.
    pub paths: Vec<PathBuf>,
    /// Replace the names and source lines the input has, not only placeholders.
    pub override_names: bool,
    /// Record inlined frames (`--no-inline` turns this off: one frame per function).
    pub inline: bool,
    /// Folders of system debug files.
    pub system_dirs: Vec<PathBuf>,
    /// Build-id caches laid out as perf's (`~/.debug`).
    pub build_id_caches: Vec<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            paths: Vec::new(),
            override_names: false,
            inline: true,
            system_dirs: vec![PathBuf::from(search::SYSTEM_DEBUG_DIR)],
            build_id_caches: search::perf_build_id_cache().into_iter().collect(),
        }
    }
}

/// What the pass found and did for one image (`cfghub info` prints it, `--json` as it is).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImageReport {
    pub pid: u64,
    pub image: String,
    pub build_id: Option<String>,
    /// The file that gave DWARF, and the one that gave symbols and segments.
    pub debug_file: Option<String>,
    pub symbol_file: Option<String>,
    /// Distinct addresses looked up.
    pub addresses: usize,
    /// Distinct functions they fell in.
    pub functions: usize,
    /// Addresses with a source line.
    pub lines: usize,
    /// Addresses with inlined frames, and those frames in all.
    pub inlined_addresses: usize,
    pub inline_frames: usize,
    /// Addresses left without a function name.
    pub unnamed: usize,
    /// Why nothing (or less) was done, when so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Whether a function name is a stand-in for a missing one: `0x401190`, `prog+0x1234`, `???`,
/// `[unknown]`, empty; a Callgrind recursion suffix (`'2`) aside.
pub fn is_placeholder(name: &str) -> bool {
    placeholder_address(name).is_some() || {
        let base = strip_recursion(name).0;
        base.is_empty() || base == "???" || base == "[unknown]"
    }
}

/// The name without its Callgrind recursion suffix, and the suffix.
fn strip_recursion(name: &str) -> (&str, &str) {
    match name.rfind('\'') {
        Some(i) if i + 1 < name.len() && name[i + 1..].bytes().all(|b| b.is_ascii_digit()) => {
            name.split_at(i)
        }
        _ => (name, ""),
    }
}

/// The address a placeholder name carries: `0xADDR` (absolute) or `NAME+0xOFFSET` (relative to
/// the image), as `(value, relative)`.
fn placeholder_address(name: &str) -> Option<(u64, bool)> {
    let base = strip_recursion(name).0;
    let hex = |s: &str| {
        let d = s.strip_prefix("0x")?;
        (!d.is_empty() && d.len() <= 16).then(|| u64::from_str_radix(d, 16).ok()).flatten()
    };
    if let Some(v) = hex(base) {
        return Some((v, false));
    }
    let (_, off) = base.rsplit_once('+')?;
    hex(off).map(|v| (v, true))
}

/// Images of the profile that have something to name, as (process, image) indices.
fn wanted(profile: &Profile, override_names: bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (p, process) in profile.processes.iter().enumerate() {
        for (i, image) in process.images.iter().enumerate() {
            if needs_names(profile, image, override_names) || !stack_frame_offsets(profile, p, i).is_empty() {
                out.push((p, i));
            }
        }
    }
    out
}

/// Stack frames of process `p` that are addresses in image `i`, named `IMAGE+0xOFFSET` with
/// IMAGE the image's file name (its folders left out): each frame with its offset.
fn stack_frame_offsets(profile: &Profile, p: usize, i: usize) -> Vec<(FrameId, u64)> {
    let process = &profile.processes[p];
    let Some(file) = process.images[i].file else { return Vec::new() };
    let path = profile.file_name(file);
    let base = path.rsplit('/').next().unwrap_or(path);
    let mut frames: Vec<FrameId> = process.stacks.iter().flat_map(|s| s.frames.iter().copied()).collect();
    frames.sort_unstable();
    frames.dedup();
    frames
        .into_iter()
        .filter_map(|f| match placeholder_address(profile.frames.get(f)) {
            Some((offset, true))
                if profile.frames.get(f).rsplit_once('+').is_some_and(|(b, _)| b == base) =>
            {
                Some((f, offset))
            }
            _ => None,
        })
        .collect()
}

fn unknown_file(profile: &Profile, f: Option<FileId>) -> bool {
    f.is_none_or(|f| matches!(profile.file_name(f), "???" | ""))
}

fn needs_names(profile: &Profile, image: &Image, override_names: bool) -> bool {
    if image.symbols.iter().any(|s| is_placeholder(&s.name)) {
        return true;
    }
    if override_names && (!image.symbols.is_empty() || !image.costs.is_empty() || !image.blocks.is_empty()) {
        return true;
    }
    if image.costs.has_offsets() {
        let index = SymbolIndex::new(image);
        for r in 0..image.costs.len() {
            let Some(o) = image.costs.offset(r) else { continue };
            let unnamed = image.costs.symbol(r).is_none() && index.covering(o).is_none();
            if unnamed || image.costs.line(r).unwrap_or(0) == 0 || unknown_file(profile, image.costs.file(r))
            {
                return true;
            }
        }
    }
    if !image.blocks.is_empty() {
        if image.source_lines.iter().all(|l| l.line == 0 || unknown_file(profile, l.file)) {
            return true;
        }
        let index = SymbolIndex::new(image);
        return image.blocks.iter().any(|b| index.covering(b.offset).is_none());
    }
    false
}

/// Names what can be named in `profile` from ELF/DWARF (see the module documentation).
/// `kind` says what the profile's addresses are ([`crate::registry::Format::address_kind`]).
///
/// Warnings go to `findings` (files refused, images without debug information). An error
/// when some image needed names and none could be given any.
pub fn symbolize(
    profile: &mut Profile,
    kind: AddressKind,
    options: &Options,
    findings: &mut Findings,
) -> Result<Vec<ImageReport>> {
    let todo = wanted(profile, options.override_names);
    let mut reports = Vec::new();
    let mut refused_all = Vec::new();
    let mut notes = Notes { findings, others: Vec::new() };
    for &(p, i) in &todo {
        let image = &profile.processes[p].images[i];
        let name = profile.image_name(image);
        let mut report =
            ImageReport { pid: profile.processes[p].pid, image: name.clone(), ..ImageReport::default() };
        let file = image.file.map(|f| profile.file_name(f).to_string());
        let query = Query {
            image: file.as_deref(),
            paths: &options.paths,
            sole: todo.len() == 1,
            system_dirs: &options.system_dirs,
            build_id: image.build_id.as_deref(),
            build_id_caches: &options.build_id_caches,
        };
        let found = search::find(&query);
        // An image `--symbols` was meant for gets every warning in full; the others (the
        // libraries of a program whose binary was named) one line between them at the end.
        let asked = query.sole || search::meant_for(&found, &query);
        report.build_id = found.build_id.clone();
        refused_all.extend(found.wrong_build.iter().chain(&found.refused).cloned());
        for w in &found.wrong_build {
            notes.findings.warn(
                None,
                format!("symbols for {name}: {w}: another build than the one profiled, whose names would be wrong"),
            );
        }
        for m in &found.missing {
            notes.say(asked, &name, m, "a dwz file it names is missing");
        }
        // Files refused for this image are worth a word only when it ends without DWARF: a
        // file named for one image is refused by every other.
        let refused = if asked { found.refused.clone() } else { Vec::new() };
        let tell_refused = |notes: &mut Notes| {
            for r in &refused {
                notes.findings.warn(None, format!("symbols for {name}: {r}"));
            }
        };
        if !found.any() {
            let note = "no ELF file with symbols or DWARF found; addresses left as they are".to_string();
            if file.as_deref().is_some_and(|f| f != "???") {
                tell_refused(&mut notes);
                let full = format!("{note} (name the binary or its debug file with --symbols)");
                notes.say(asked, &name, &full, "no ELF file found");
            }
            report.note = Some(note);
            reports.push(report);
            continue;
        }
        let symbolizer = match Symbolizer::new(found) {
            Ok(s) => s,
            Err(e) => {
                notes.say(true, &name, &e.to_string(), "");
                report.note = Some(e.to_string());
                reports.push(report);
                continue;
            }
        };
        report.debug_file = symbolizer.found.debug.as_ref().map(|p| p.display().to_string());
        report.symbol_file = symbolizer.found.binary.as_ref().map(|p| p.display().to_string());
        if let Some(e) = &symbolizer.dwarf_error {
            notes.say(asked, &name, &format!("{e}; names from the symbol table only"), "unreadable DWARF");
            report.debug_file = None;
        } else if !symbolizer.has_dwarf() {
            tell_refused(&mut notes);
            let full = format!(
                "no DWARF (.debug_info) in {}: names from the symbol table only, no source lines or inlined frames",
                symbolizer.paths().join(", ")
            );
            notes.say(asked, &name, &full, "no DWARF");
        }
        if symbolizer.symbol_count() == 0 && !symbolizer.has_dwarf() {
            let note = "neither a symbol table nor DWARF in the files found".to_string();
            notes.say(asked, &name, &note, "neither symbols nor DWARF");
            report.note = Some(note);
            reports.push(report);
            continue;
        }
        let Some(relocation) = symbolizer.relocation(kind, image.load_addr) else {
            let note = "the ELF file has no loadable segment to place the addresses by".to_string();
            notes.say(asked, &name, &note, "no loadable segment");
            report.note = Some(note);
            reports.push(report);
            continue;
        };
        fill_image(profile, p, i, &symbolizer, &relocation, options, &mut report);
        let missing = symbolizer.missing_dwos();
        if let Some(first) = missing.first() {
            let full = format!(
                "split DWARF: {} .dwo file(s) not found (the first: {first}): their code has no source \
                 lines or inlined frames; keep the .dwo files where the build wrote them or beside the \
                 binary, or pack them with `dwp -e BINARY`",
                missing.len()
            );
            notes.say(asked, &name, &full, "split DWARF .dwo files not found");
        }
        if report.unnamed > 0 && report.unnamed == report.addresses {
            let full = format!(
                "none of its {} addresses is in a function of {}; is it the same build, and are the \
                 addresses where the profile says the image was loaded?",
                report.addresses,
                symbolizer.paths().join(", ")
            );
            let short = format!("none of its {} addresses in a function", report.addresses);
            notes.say(asked, &name, &full, &short);
        }
        reports.push(report);
    }
    notes.finish();
    let helped = reports.iter().any(|r| r.addresses > r.unnamed);
    if !todo.is_empty() && !helped {
        let mut err = Error::input("no debug information could be used for any image of the profile");
        err = match refused_all.first() {
            Some(first) => err.with_hint(format!("{first}; see docs/symbols.md for where cfghub looks")),
            None => err.with_hint(
                "name the very binary that was profiled, or its debug file, with --symbols; see docs/symbols.md",
            ),
        };
        return Err(err);
    }
    Ok(reports)
}

/// Warnings of the pass: in full for the images `--symbols` was meant for, and for the others
/// (which `--symbols` only tried on the way) one line between them all.
struct Notes<'f> {
    findings: &'f mut Findings,
    /// (image, reason) of the images not asked about.
    others: Vec<(String, String)>,
}

impl Notes<'_> {
    fn say(&mut self, asked: bool, image: &str, full: &str, short: &str) {
        if asked {
            self.findings.warn(None, format!("symbols for {image}: {full}"));
        } else {
            let base = image.rsplit('/').next().unwrap_or(image).to_string();
            match self.others.last_mut() {
                Some((last, reasons)) if *last == base => *reasons = format!("{reasons}, {short}"),
                _ => self.others.push((base, short.to_string())),
            }
        }
    }

    fn finish(self) {
        if !self.others.is_empty() {
            let each: Vec<String> =
                self.others.iter().map(|(image, why)| format!("{image}: {why}")).collect();
            self.findings.warn(
                None,
                format!(
                    "symbols: {} other image(s) named only in part ({}); `cfghub info PROFILE --symbols` \
                     tells what was found for each",
                    self.others.len(),
                    each.join("; ")
                ),
            );
        }
    }
}

/// Looks up every distinct address of image `i` of process `p` and fills the model.
fn fill_image(
    profile: &mut Profile,
    p: usize,
    i: usize,
    sym: &Symbolizer,
    reloc: &Relocation,
    options: &Options,
    report: &mut ImageReport,
) {
    let image = &profile.processes[p].images[i];
    let load = image.load_addr;
    // Model offsets -> stated addresses.
    let stated = |offset: u64| reloc.to_stated(load.wrapping_add(offset));
    let model = |address: u64| reloc.from_stated(address).map(|a| a.wrapping_sub(load));

    // The address each symbol stands for, when it is to be (re)named.
    let mut first_row: HashMap<u32, u64> = HashMap::new();
    for r in 0..image.costs.len() {
        if let (Some(s), Some(o)) = (image.costs.symbol(r), image.costs.offset(r)) {
            first_row.entry(s).or_insert(o);
        }
    }
    let symbol_offset: Vec<Option<u64>> = image
        .symbols
        .iter()
        .enumerate()
        .map(|(k, s)| {
            if !is_placeholder(&s.name) && !options.override_names {
                return None;
            }
            match placeholder_address(&s.name) {
                Some((v, true)) => Some(v),
                Some((v, false)) => Some(v.wrapping_sub(load)),
                None => s.offset.or_else(|| first_row.get(&(k as u32)).copied()),
            }
        })
        .collect();

    let mut offsets: Vec<u64> = Vec::with_capacity(image.costs.len() + image.blocks.len());
    offsets.extend((0..image.costs.len()).filter_map(|r| image.costs.offset(r)));
    offsets.extend(symbol_offset.iter().flatten());
    offsets.extend(image.blocks.iter().map(|b| b.offset));
    let frame_offsets = stack_frame_offsets(profile, p, i);
    offsets.extend(frame_offsets.iter().map(|&(_, o)| o));
    // Edges between functions: their call and target sites in this image.
    let process = &profile.processes[p];
    let in_image =
        |n: crate::ir::NodeRef| matches!(n, crate::ir::NodeRef::Symbol(s) if s.image as usize == i);
    for e in &process.edges {
        let Some(site) = e.site() else { continue };
        if in_image(e.source) {
            offsets.extend(site.source_offset());
        }
        if in_image(e.target) {
            offsets.extend(site.target_offset());
        }
    }
    offsets.sort_unstable();
    offsets.dedup();

    let answers = Answers::look_up(sym, &offsets, &stated, options.inline);

    // The files the answers name, as the model's, in the order of the addresses: each
    // address's line file and function file, then the files of the inlined frames.
    let mut files = AnswerFiles::default();
    for a in 0..answers.len() {
        files.intern(profile, &answers, answers.file_id(a));
        files.intern(profile, &answers, answers.function_file_id(a));
    }
    for a in 0..answers.len() {
        for f in answers.chain(a) {
            files.intern(profile, &answers, f.file);
        }
    }
    // (line file, function file) of address `a`.
    let ids = |a: usize| (files.get(answers.file_id(a)), files.get(answers.function_file_id(a)));
    let at = |o: u64| offsets.binary_search(&o).ok();

    tell(report, &answers);

    let unknown_files: Vec<bool> = {
        let image = &profile.processes[p].images[i];
        (0..image.costs.len()).map(|r| unknown_file(profile, image.costs.file(r))).collect()
    };
    // Source lines that say nothing (valgrind's `???:0` of code without line tables).
    let lines_unknown = profile.processes[p].images[i]
        .source_lines
        .iter()
        .all(|l| l.line == 0 || unknown_file(profile, l.file));
    let unknown_symbol_files: Vec<bool> =
        profile.processes[p].images[i].symbols.iter().map(|s| unknown_file(profile, s.file)).collect();
    let image = &mut profile.processes[p].images[i];

    // Symbols the model has, by (name, start), to reuse; new ones appended.
    let mut by_key: HashMap<(String, Option<u64>), u32> = HashMap::new();
    for (k, s) in image.symbols.iter().enumerate() {
        if !is_placeholder(&s.name) {
            by_key.entry((s.name.clone(), s.offset)).or_insert(k as u32);
        }
    }
    // 1. Placeholder symbols (every symbol with --symbols-override) renamed.
    for (k, offset) in symbol_offset.iter().enumerate() {
        let Some(a) = offset.and_then(at) else { continue };
        let Some(name) = answers.name(a) else { continue };
        let s = &mut image.symbols[k];
        let suffix = strip_recursion(&s.name).1.to_string();
        s.name = format!("{name}{suffix}");
        if unknown_symbol_files[k] || options.override_names {
            s.file = ids(a).1.or(ids(a).0).or(s.file);
        }
        if s.offset.is_some() {
            s.offset = answers.start(a).and_then(model).or(s.offset);
            s.size = answers.size(a).or(s.size);
        }
    }
    // A symbol for an answer's function, made when the model has none; the symbol of each
    // function of the answers once found, for its other addresses.
    let mut symbol_of_function: HashMap<u32, u32> = HashMap::new();
    let mut symbol_for = |image: &mut Image, a: usize| -> Option<u32> {
        let name = answers.name(a)?;
        if let Some(&s) = symbol_of_function.get(&answers.function_id(a)) {
            return Some(s);
        }
        let start = answers.start(a).and_then(model);
        let key = (name.to_string(), start);
        let s = match by_key.get(&key) {
            Some(&s) => s,
            None => {
                let s = image.symbols.len() as u32;
                image.symbols.push(Symbol {
                    name: key.0.clone(),
                    offset: start,
                    size: answers.size(a),
                    file: ids(a).1.or(ids(a).0),
                });
                by_key.insert(key, s);
                s
            }
        };
        symbol_of_function.insert(answers.function_id(a), s);
        Some(s)
    };

    // 2. Costs: function, file and line where missing (everywhere with --symbols-override).
    if image.costs.has_offsets() {
        let index = SymbolIndex::new(image);
        let old = std::mem::take(&mut image.costs);
        let mut costs = CostTable::new();
        costs.reserve(old.len());
        for (r, &unknown) in unknown_files.iter().enumerate() {
            let offset = old.offset(r);
            let a = offset.and_then(at);
            let mut symbol = old.symbol(r);
            let (mut file, mut line) = (old.file(r), old.line(r));
            if let Some(a) = a {
                let covered = offset.and_then(|o| index.covering(o)).is_some();
                if symbol.is_none() && !covered {
                    symbol = symbol_for(image, a);
                }
                let lacks = line.unwrap_or(0) == 0 || unknown;
                if (lacks || options.override_names) && answers.line(a).is_some() {
                    file = ids(a).0;
                    line = answers.line(a);
                }
            }
            costs.push_parts(offset, symbol, file, line, &old.values(r));
        }
        costs.widen(old.width());
        image.costs = costs;
    }

    // 3. Blocks: a symbol covering each one.
    if !image.blocks.is_empty() {
        let index = SymbolIndex::new(image);
        let starts: Vec<u64> = image.blocks.iter().map(|b| b.offset).collect();
        for o in starts {
            if index.covering(o).is_none() || options.override_names {
                if let Some(a) = at(o) {
                    symbol_for(image, a);
                }
            }
        }
    }

    // 3b. Stack frames that are addresses: a symbol for the function of each.
    for &(_, o) in &frame_offsets {
        if let Some(a) = at(o) {
            symbol_for(image, a);
        }
    }

    // 4. Source lines of blocks, from the line table, when the input has none.
    if !image.blocks.is_empty() && (lines_unknown || options.override_names) {
        let lookup = sym.lookup();
        let mut lines = Vec::new();
        for b in &image.blocks {
            let Some(start) = stated(b.offset) else { continue };
            let block_size = u64::from(b.size.max(1));
            let Ok(rows) = lookup.find_location_range(start, start.saturating_add(block_size)) else {
                continue;
            };
            for (address, size, loc) in rows {
                let (Some(offset), Some(line)) = (model(address), loc.line) else { continue };
                let whole = offset == b.offset && size >= u64::from(b.size);
                lines.push((
                    offset,
                    // No larger than the block: 32 bits.
                    size.min(block_size) as u32,
                    loc.file,
                    line,
                    if whole { b.num_instrs } else { 0 },
                ));
            }
        }
        let mut source_lines = Vec::with_capacity(lines.len());
        for (offset, size, file, line, num_instrs) in lines {
            let file = file.map(|f| profile.files.intern(&f));
            source_lines.push(SourceLine { file, line, offset, size, num_instrs });
        }
        source_lines.sort_by_key(|l| l.offset);
        source_lines.dedup();
        profile.processes[p].images[i].source_lines = source_lines;
    }

    // 5. Lines of the sites of edges between functions, where the input had none.
    let process = &mut profile.processes[p];
    for e in &mut process.edges {
        let (from, to) = (in_image(e.source), in_image(e.target));
        let Some(site) = e.details.as_mut().and_then(|d| d.site.as_mut()) else { continue };
        // A line past what a site holds is taken as unknown.
        let line_of =
            |o: Option<u64>| o.and_then(at).and_then(|a| answers.line(a)).filter(|&l| l <= Site::MAX_LINE);
        if from && (site.source_line().unwrap_or(0) == 0 || options.override_names) {
            site.set_source_line(line_of(site.source_offset()).or(site.source_line()));
        }
        if to && (site.target_line().unwrap_or(0) == 0 || options.override_names) {
            site.set_target_line(line_of(site.target_offset()).or(site.target_line()));
        }
    }

    // 6. Stack frames that were addresses: the function, then the functions inlined there.
    rename_stack_frames(profile, p, &frame_offsets, &offsets, &answers, &ids, options.inline);

    // 7. The inline chain of every address that has one.
    let process = &mut profile.processes[p];
    let image = &mut process.images[i];
    if options.inline {
        // One copy of each chain, shared by its addresses; one of each name.
        let unknown: Arc<str> = Arc::from("??");
        let mut chains: HashMap<u32, Arc<[InlineFrame]>> = HashMap::new();
        image.inlined = (0..answers.len())
            .filter(|&a| !answers.chain(a).is_empty())
            .map(|a| Inlined {
                offset: offsets[a],
                frames: chains
                    .entry(answers.chain_id(a))
                    .or_insert_with(|| {
                        answers
                            .chain(a)
                            .iter()
                            .map(|f| InlineFrame {
                                name: answers.string(f.function).cloned().unwrap_or_else(|| unknown.clone()),
                                file: files.get(f.file),
                                line: f.line,
                            })
                            .collect()
                    })
                    .clone(),
            })
            .collect();
    } else {
        image.inlined.clear();
    }
}

/// What the answers say, counted for the image's report.
fn tell(report: &mut ImageReport, answers: &Answers) {
    let every = || 0..answers.len();
    report.addresses = answers.len();
    report.lines = every().filter(|&a| answers.line(a).is_some_and(|l| l > 0)).count();
    report.unnamed = every().filter(|&a| answers.name(a).is_none()).count();
    report.inlined_addresses = every().filter(|&a| !answers.chain(a).is_empty()).count();
    report.inline_frames = every().map(|a| answers.chain(a).len()).sum();
    report.functions = answers.distinct_functions();
    let failed = every().filter(|&a| answers.failed(a)).count();
    if failed > 0 {
        report.note =
            Some(format!("DWARF could not be read at {failed} address(es): symbol table used there"));
    }
}

/// The model's ids of the files the answers name, interned as first asked for.
#[derive(Default)]
struct AnswerFiles {
    /// By string id of the answers: the file's id once interned.
    by_string: HashMap<u32, FileId>,
}

impl AnswerFiles {
    /// The model's id of string `id` of the answers as a file, interned when new.
    fn intern(&mut self, profile: &mut Profile, answers: &Answers, id: u32) -> Option<FileId> {
        if let Some(&f) = self.by_string.get(&id) {
            return Some(f);
        }
        let f = profile.files.intern(answers.string(id)?);
        self.by_string.insert(id, f);
        Some(f)
    }

    /// The model's id of string `id` of the answers, interned before.
    fn get(&self, id: u32) -> Option<FileId> {
        self.by_string.get(&id).copied()
    }
}

/// Replaces each address frame of process `p`'s stacks (`frame_offsets`) by its function and
/// the functions inlined at the address, outermost first; a frame whose address has no
/// function stays as it is. `answers` are those of `offsets`, `ids` their (line, function) files.
fn rename_stack_frames(
    profile: &mut Profile,
    p: usize,
    frame_offsets: &[(FrameId, u64)],
    offsets: &[u64],
    answers: &Answers,
    ids: &dyn Fn(usize) -> (Option<FileId>, Option<FileId>),
    inline: bool,
) {
    if frame_offsets.is_empty() {
        return;
    }
    let mut named: HashMap<FrameId, Vec<FrameId>> = HashMap::with_capacity(frame_offsets.len());
    for &(f, offset) in frame_offsets {
        let Ok(a) = offsets.binary_search(&offset) else { continue };
        let Some(name) = answers.name(a) else { continue };
        let mut chain = vec![intern_frame(profile, name, ids(a).1.or(ids(a).0))];
        if inline {
            for frame in answers.chain(a).iter().rev() {
                let name = answers.string(frame.function).map_or("??", |n| n);
                chain.push(intern_frame(profile, name, None));
            }
        }
        named.insert(f, chain);
    }
    for stack in &mut profile.processes[p].stacks {
        if !stack.frames.iter().any(|f| named.contains_key(f)) {
            continue;
        }
        let mut frames = Vec::with_capacity(stack.frames.len() + 4);
        for f in &stack.frames {
            match named.get(f) {
                Some(chain) => frames.extend_from_slice(chain),
                None => frames.push(*f),
            }
        }
        stack.frames = frames;
    }
}

/// The frame called `name`, its function's file recorded when the frame is new.
fn intern_frame(profile: &mut Profile, name: &str, file: Option<FileId>) -> FrameId {
    let known = profile.frames.len();
    let f = profile.frames.intern(name);
    if f as usize == known && file.is_some() {
        profile.frame_sources.resize(f as usize, FrameSource::default());
        profile.frame_sources.push(FrameSource { file, ..FrameSource::default() });
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_their_addresses() {
        assert!(is_placeholder("0x0000000000401190"));
        assert!(is_placeholder("0x00000000004011f0'2"));
        assert!(is_placeholder("prog+0x1234"));
        assert!(is_placeholder("???"));
        assert!(!is_placeholder("fib'2"));
        assert!(!is_placeholder("main"));
        assert_eq!(placeholder_address("0x00000000004011f0'2"), Some((0x4011f0, false)));
        assert_eq!(placeholder_address("prog+0x10"), Some((0x10, true)));
        assert_eq!(strip_recursion("fib'12"), ("fib", "'12"));
        assert_eq!(strip_recursion("a'b"), ("a'b", ""));
    }
}
