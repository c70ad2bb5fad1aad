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

use std::path::PathBuf;
use std::sync::Arc;

use hashbrown::HashTable;
use rustc_hash::FxHashMap;

use super::answers::Answers;
use super::search::{self, Query};
use super::{Relocation, Symbolizer};
use crate::names::SymbolIndex;
use cfghub_model::error::{Error, Findings, Result};
use cfghub_model::ir::{
    AddressKind, CostTable, FileId, FrameId, FrameSource, Image, InlineFrame, Inlined, Profile, Site,
    SourceLine, Stacks, StringTable, Symbol, NO_INDEX,
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
    /// The process id of the image's process.
    pub pid: u64,
    /// The image's file name, or `image<ID>` when it has none.
    pub image: String,
    /// The build id the image's own file states, in hex; `None` when no file was found or it
    /// states none.
    pub build_id: Option<String>,
    /// The file that gave DWARF, and the one that gave symbols and segments.
    pub debug_file: Option<String>,
    /// The file that gave the symbol table and segments; `None` when none was found.
    pub symbol_file: Option<String>,
    /// Distinct addresses looked up.
    pub addresses: usize,
    /// Distinct functions they fell in.
    pub functions: usize,
    /// Addresses with a source line.
    pub lines: usize,
    /// Addresses with inlined frames, and those frames in all.
    pub inlined_addresses: usize,
    /// Inlined frames at those addresses, in all.
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

/// Whether a file named with `--symbols` is, by its name, one of the images the reader named
/// already (perf.data names its images from perf's build-id cache): such a file is meant for
/// that image, not for the one image left without names (a kernel, say), and its being of no
/// use to the others is no error.
fn paths_name_a_named_image(profile: &Profile, todo: &[(usize, usize)], paths: &[PathBuf]) -> bool {
    let none = search::Found::default();
    profile.processes.iter().enumerate().any(|(p, process)| {
        process.images.iter().enumerate().any(|(i, image)| {
            let file = image.file.map(|f| profile.file_name(f));
            !todo.contains(&(p, i))
                && !image.symbols.is_empty()
                && search::meant_for(&none, &Query { image: file, paths, ..Query::default() })
        })
    })
}

/// Stack frames of process `p` that are addresses in image `i`, each with its offset: frames
/// named `IMAGE+0xOFFSET` with IMAGE the image's file name (its folders left out), and frames
/// named by a runtime address whose source says it lies in the image (a pprof location
/// without lines keeps its address and mapping beside its frame).
fn stack_frame_offsets(profile: &Profile, p: usize, i: usize) -> Vec<(FrameId, u64)> {
    let process = &profile.processes[p];
    let image = &process.images[i];
    let path = image.file.map(|f| profile.file_name(f));
    let base = path.map(|path| path.rsplit('/').next().unwrap_or(path));
    let mut frames: Vec<FrameId> = process.stacks.nodes().iter().map(|n| n.frame).collect();
    frames.sort_unstable();
    frames.dedup();
    frames
        .into_iter()
        .filter_map(|f| {
            let name = profile.frames.get(f);
            match placeholder_address(name) {
                Some((offset, true)) if base.is_some() && name.rsplit_once('+').map(|(b, _)| b) == base => {
                    Some((f, offset))
                }
                Some((_, false)) if p == 0 => {
                    let at = profile.frame_source(f)?.address.filter(|a| a.image == Some(i as u32))?;
                    Some((f, at.address.wrapping_sub(image.load_addr)))
                }
                _ => None,
            }
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
/// `kind` says what the profile's addresses are (`cfghub_formats::format::Format::address_kind`).
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
    let for_named_image = paths_name_a_named_image(profile, &todo, &options.paths);
    let mut reports = Vec::new();
    let mut refused_all = Vec::new();
    let mut notes = Notes { findings, others: Vec::new() };
    for &(p, i) in &todo {
        let sole = todo.len() == 1 && !for_named_image;
        reports.push(symbolize_image(profile, (p, i), kind, options, sole, &mut notes, &mut refused_all));
    }
    notes.finish();
    let helped = reports.iter().any(|r| r.addresses > r.unnamed);
    if !todo.is_empty() && !helped && !for_named_image {
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

/// Names what can be named in image `i` of process `p` from the debug information found for
/// it, and reports what was found and done. `sole`: the image is the only one that needs names
/// and no file named with `--symbols` is, by its name, an image the reader named already (see
/// [`Query::sole`]). Warnings go to `notes`; the files refused (as another build, or for any
/// other reason) are added to `refused_all`.
fn symbolize_image(
    profile: &mut Profile,
    (p, i): (usize, usize),
    kind: AddressKind,
    options: &Options,
    sole: bool,
    notes: &mut Notes,
    refused_all: &mut Vec<String>,
) -> ImageReport {
    let image = &profile.processes[p].images[i];
    let name = profile.image_name(image);
    let mut report =
        ImageReport { pid: profile.processes[p].pid, image: name.clone(), ..ImageReport::default() };
    let file = image.file.map(|f| profile.file_name(f).to_string());
    let query = super::query(file.as_deref(), image, options, sole);
    let found = search::find(&query);
    // An image `--symbols` was meant for gets every warning in full; the others (the
    // libraries of a program whose binary was named) one line between them at the end.
    let asked = query.sole || search::meant_for(&found, &query);
    report.build_id = found.build_id.clone();
    refused_all.extend(found.wrong_build.iter().chain(&found.refused).cloned());
    for w in &found.wrong_build {
        notes.findings.warn(
            None,
            format!(
                "symbols for {name}: {w}: another build than the one profiled, whose names would be wrong"
            ),
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
            tell_refused(notes);
            let full = format!("{note} (name the binary or its debug file with --symbols)");
            notes.say(asked, &name, &full, "no ELF file found");
        }
        report.note = Some(note);
        return report;
    }
    let symbolizer = match Symbolizer::new(found) {
        Ok(s) => s,
        Err(e) => {
            notes.say(true, &name, &e.to_string(), "");
            report.note = Some(e.to_string());
            return report;
        }
    };
    report.debug_file = symbolizer.found.debug.as_ref().map(|p| p.display().to_string());
    report.symbol_file = symbolizer.found.binary.as_ref().map(|p| p.display().to_string());
    if let Some(e) = &symbolizer.dwarf_error {
        notes.say(asked, &name, &format!("{e}; names from the symbol table only"), "unreadable DWARF");
        report.debug_file = None;
    } else if !symbolizer.has_dwarf() {
        tell_refused(notes);
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
        return report;
    }
    let Some(relocation) = symbolizer.relocation(kind, image.load_addr, image.file_offset) else {
        let note = "the ELF file has no loadable segment to place the addresses by".to_string();
        notes.say(asked, &name, &note, "no loadable segment");
        report.note = Some(note);
        return report;
    };
    fill_image(profile, p, i, &symbolizer, &relocation, options, &mut report);
    warn_unnamed(notes, asked, &name, &symbolizer, &report);
    report
}

/// Warns of what the debug information found leaves unnamed in image `name`: code whose
/// split DWARF `.dwo` files were not found, and every address, when none lies in a function
/// of the files found.
fn warn_unnamed(notes: &mut Notes, asked: bool, name: &str, symbolizer: &Symbolizer, report: &ImageReport) {
    let missing = symbolizer.missing_dwos();
    if let Some(first) = missing.first() {
        let full = format!(
            "split DWARF: {} .dwo file(s) not found (the first: {first}): their code has no source \
             lines or inlined frames; keep the .dwo files where the build wrote them or beside the \
             binary, or pack them with `dwp -e BINARY`",
            missing.len()
        );
        notes.say(asked, name, &full, "split DWARF .dwo files not found");
    }
    if report.unnamed > 0 && report.unnamed == report.addresses {
        let full = format!(
            "none of its {} addresses is in a function of {}; is it the same build, and are the \
             addresses where the profile says the image was loaded?",
            report.addresses,
            symbolizer.paths().join(", ")
        );
        let short = format!("none of its {} addresses in a function", report.addresses);
        notes.say(asked, name, &full, &short);
    }
}

/// Warnings of the pass: in full for the images `--symbols` was meant for, and for the others
/// (which `--symbols` only tried on the way) one note between them all.
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

    fn finish(mut self) {
        // A program or library whose file is nowhere to be found keeps bare addresses: that
        // stands out. The kernel's (`[kernel.kallsyms]`) and partial namings are a note.
        let (missing, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.others)
            .into_iter()
            .partition(|(image, why)| why.contains("no ELF file found") && !image.starts_with('['));
        self.others = others;
        if !missing.is_empty() {
            let names: Vec<&str> = missing.iter().map(|(image, _)| image.as_str()).collect();
            self.findings.warn(
                None,
                format!(
                    "symbols: no ELF file found for {}: its addresses stay unnamed; name them with --symbols BINARY",
                    names.join(", ")
                ),
            );
        }
        if !self.others.is_empty() {
            let each: Vec<String> =
                self.others.iter().map(|(image, why)| format!("{image}: {why}")).collect();
            // `--symbols` was not given for them: a note (`-v`).
            self.findings.detail(
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

/// Model offsets and the addresses the ELF file states, one into the other.
struct Addresses<'r> {
    reloc: &'r Relocation,
    load: u64,
}

impl Addresses<'_> {
    /// The stated address of a model offset.
    fn stated(&self, offset: u64) -> Option<u64> {
        self.reloc.to_stated(self.load.wrapping_add(offset))
    }

    /// The model offset of a stated address.
    fn model(&self, address: u64) -> Option<u64> {
        self.reloc.from_stated(address).map(|a| a.wrapping_sub(self.load))
    }
}

/// The answers for an image's addresses, with what puts them in the model's terms.
struct Looked<'a> {
    /// The model offsets looked up, sorted and distinct: answer `a` is of `offsets[a]`.
    offsets: &'a [u64],
    answers: &'a Answers,
    files: &'a AnswerFiles,
    addresses: &'a Addresses<'a>,
}

impl Looked<'_> {
    /// The answer of model offset `o`.
    fn at(&self, o: u64) -> Option<usize> {
        self.offsets.binary_search(&o).ok()
    }

    /// (line file, function file) of answer `a`, as the model's.
    fn ids(&self, a: usize) -> (Option<FileId>, Option<FileId>) {
        (self.files.get(self.answers.file_id(a)), self.files.get(self.answers.function_file_id(a)))
    }

    /// The model offset of the start of answer `a`'s function.
    fn start(&self, a: usize) -> Option<u64> {
        self.answers.start(a).and_then(|s| self.addresses.model(s))
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
    let addresses = Addresses { reloc, load: profile.processes[p].images[i].load_addr };
    let symbol_offset = symbol_offsets(&profile.processes[p].images[i], options.override_names);
    let frame_offsets = stack_frame_offsets(profile, p, i);
    let offsets = offsets_to_look_up(profile, p, i, &symbol_offset, &frame_offsets);
    let answers = Answers::look_up(sym, &offsets, &|o| addresses.stated(o), options.inline);
    if profile.processes[p].images[i].blocks.is_empty() {
        // Nothing more to ask of DWARF (only blocks want their line rows): the units the
        // look-ups parsed make room for the model's new symbols.
        sym.release_contexts();
    }
    let files = AnswerFiles::of(profile, &answers);
    tell(report, &answers);
    let looked = Looked { offsets: &offsets, answers: &answers, files: &files, addresses: &addresses };

    // 1-3. Symbols renamed and made; costs given their function, file and line.
    name_functions(profile, p, i, &symbol_offset, &frame_offsets, &looked, options.override_names);
    // 4. Source lines of blocks, from the line table, when the input has none.
    let image = &profile.processes[p].images[i];
    // Source lines that say nothing (valgrind's `???:0` of code without line tables).
    let lines_unknown = image.source_lines.iter().all(|l| l.line == 0 || unknown_file(profile, l.file));
    if !image.blocks.is_empty() && (lines_unknown || options.override_names) {
        let source_lines = block_source_lines(&mut profile.files, image, sym, &addresses);
        profile.processes[p].images[i].source_lines = source_lines;
    }
    // 5. Lines of the sites of edges between functions, where the input had none.
    site_lines(&mut profile.processes[p], i, &looked, options.override_names);
    // 6. Stack frames that were addresses: the function, then the functions inlined there.
    rename_stack_frames(profile, p, &frame_offsets, &looked, options.inline);
    // 7. The inline chain of every address that has one.
    let image = &mut profile.processes[p].images[i];
    if options.inline {
        inline_table(image, &looked);
    } else {
        image.inlined.clear();
        image.inline_names = StringTable::new();
    }
}

/// The address each symbol of `image` stands for, when it is to be (re)named: the one its
/// placeholder name carries, else its start, else the first cost row's of it.
fn symbol_offsets(image: &Image, override_names: bool) -> Vec<Option<u64>> {
    let mut first_row: FxHashMap<u32, u64> = FxHashMap::default();
    for r in 0..image.costs.len() {
        if let (Some(s), Some(o)) = (image.costs.symbol(r), image.costs.offset(r)) {
            first_row.entry(s).or_insert(o);
        }
    }
    image
        .symbols
        .iter()
        .enumerate()
        .map(|(k, s)| {
            if !is_placeholder(&s.name) && !override_names {
                return None;
            }
            match placeholder_address(&s.name) {
                Some((v, true)) => Some(v),
                Some((v, false)) => Some(v.wrapping_sub(image.load_addr)),
                None => s.offset.or_else(|| first_row.get(&(k as u32)).copied()),
            }
        })
        .collect()
}

/// Whether `n` is a symbol of image `i`.
fn in_image(n: cfghub_model::ir::NodeRef, i: usize) -> bool {
    matches!(n, cfghub_model::ir::NodeRef::Symbol(s) if s.image as usize == i)
}

/// Every distinct offset of image `i` of process `p` to look up, sorted: cost rows, symbols to
/// (re)name, blocks, stack frames that are addresses, and the call and target sites of edges
/// between functions.
fn offsets_to_look_up(
    profile: &Profile,
    p: usize,
    i: usize,
    symbol_offset: &[Option<u64>],
    frame_offsets: &[(FrameId, u64)],
) -> Vec<u64> {
    let process = &profile.processes[p];
    let image = &process.images[i];
    let mut offsets: Vec<u64> = Vec::with_capacity(image.costs.len() + image.blocks.len());
    offsets.extend((0..image.costs.len()).filter_map(|r| image.costs.offset(r)));
    offsets.extend(symbol_offset.iter().flatten());
    offsets.extend(image.blocks.iter().map(|b| b.offset));
    offsets.extend(frame_offsets.iter().map(|&(_, o)| o));
    for e in &process.edges {
        let Some(site) = e.site() else { continue };
        if in_image(e.source, i) {
            offsets.extend(site.source_offset());
        }
        if in_image(e.target, i) {
            offsets.extend(site.target_offset());
        }
    }
    offsets.sort_unstable();
    offsets.dedup();
    offsets
}

/// The symbols of an image's functions: those the model has, by (name, start), to reuse, and
/// those made for the answers' functions it lacks.
struct FunctionSymbols {
    /// The model's symbols before the pass (placeholders aside), by their (name, start) then:
    /// (name, start, symbol), the first of equal ones.
    had: HashTable<(Box<str>, Option<u64>, u32)>,
    /// The symbols made, by their (name, start): indices into the image's symbols (a million
    /// functions named: 4 bytes each, no copy of their names).
    made: HashTable<u32>,
    /// The symbol of each function of the answers ([`Answers::function_id`]), once found.
    of_function: Vec<Option<u32>>,
}

fn key_hash(name: &str, start: Option<u64>) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one((name, start))
}

impl FunctionSymbols {
    fn new(image: &Image, answers: &Answers) -> FunctionSymbols {
        let mut had: HashTable<(Box<str>, Option<u64>, u32)> = HashTable::new();
        for (k, s) in image.symbols.iter().enumerate() {
            let h = key_hash(&s.name, s.offset);
            if !is_placeholder(&s.name) && had.find(h, |e| *e.0 == *s.name && e.1 == s.offset).is_none() {
                had.insert_unique(h, (s.name.as_str().into(), s.offset, k as u32), |e| key_hash(&e.0, e.1));
            }
        }
        let functions = answers.function_count();
        FunctionSymbols { had, made: HashTable::with_capacity(functions), of_function: vec![None; functions] }
    }

    /// The symbol of answer `a`'s function, made when the model has none; `None` when the
    /// answer names no function.
    fn symbol_for(&mut self, image: &mut Image, looked: &Looked, a: usize) -> Option<u32> {
        let answers = looked.answers;
        let name: &str = answers.name(a)?;
        let function = answers.function_id(a) as usize;
        if let Some(s) = self.of_function[function] {
            return Some(s);
        }
        let start = looked.start(a);
        let h = key_hash(name, start);
        let symbols = &image.symbols;
        let known = self.had.find(h, |e| *e.0 == *name && e.1 == start).map(|e| e.2).or_else(|| {
            let s = self
                .made
                .find(h, |&k| symbols[k as usize].name == name && symbols[k as usize].offset == start);
            s.copied()
        });
        let s = match known {
            Some(s) => s,
            None => {
                let s = image.symbols.len() as u32;
                let (line_file, function_file) = looked.ids(a);
                image.symbols.push(Symbol {
                    name: name.to_string(),
                    offset: start,
                    size: answers.size(a),
                    file: function_file.or(line_file),
                });
                let symbols = &image.symbols;
                self.made.insert_unique(h, s, |&k| {
                    let symbol = &symbols[k as usize];
                    key_hash(&symbol.name, symbol.offset)
                });
                s
            }
        };
        self.of_function[function] = Some(s);
        Some(s)
    }
}

/// Steps 1 to 3 of the pass over image `i` of process `p`: placeholder symbols (every symbol
/// with `override_names`) renamed; costs given their function, file and line where missing
/// (everywhere with `override_names`); a symbol covering each block and each stack frame that
/// is an address.
fn name_functions(
    profile: &mut Profile,
    p: usize,
    i: usize,
    symbol_offset: &[Option<u64>],
    frame_offsets: &[(FrameId, u64)],
    looked: &Looked,
    override_names: bool,
) {
    let image = &profile.processes[p].images[i];
    let unknown_files: Vec<bool> =
        (0..image.costs.len()).map(|r| unknown_file(profile, image.costs.file(r))).collect();
    let unknown_symbol_files: Vec<bool> =
        image.symbols.iter().map(|s| unknown_file(profile, s.file)).collect();
    let image = &mut profile.processes[p].images[i];
    let mut symbols = FunctionSymbols::new(image, looked.answers);
    let answers = looked.answers;
    // 1. Placeholder symbols renamed.
    for (k, offset) in symbol_offset.iter().enumerate() {
        let Some(a) = offset.and_then(|o| looked.at(o)) else { continue };
        let Some(name) = answers.name(a) else { continue };
        let s = &mut image.symbols[k];
        let suffix = strip_recursion(&s.name).1.to_string();
        s.name = format!("{name}{suffix}");
        if unknown_symbol_files[k] || override_names {
            let (line_file, function_file) = looked.ids(a);
            s.file = function_file.or(line_file).or(s.file);
        }
        if s.offset.is_some() {
            s.offset = looked.start(a).or(s.offset);
            s.size = answers.size(a).or(s.size);
        }
    }
    // 2. Costs.
    if image.costs.has_offsets() {
        fill_costs(image, &unknown_files, looked, &mut symbols, override_names);
    }
    // 3. Blocks: a symbol covering each one.
    if !image.blocks.is_empty() {
        let index = SymbolIndex::new(image);
        let starts: Vec<u64> = image.blocks.iter().map(|b| b.offset).collect();
        for o in starts {
            if index.covering(o).is_none() || override_names {
                if let Some(a) = looked.at(o) {
                    symbols.symbol_for(image, looked, a);
                }
            }
        }
    }
    // Stack frames that are addresses: a symbol for the function of each.
    for &(_, o) in frame_offsets {
        if let Some(a) = looked.at(o) {
            symbols.symbol_for(image, looked, a);
        }
    }
}

/// Costs of `image` given their function, file and line where missing (everywhere with
/// `override_names`); `unknown_files` says of each row whether its file says nothing.
fn fill_costs(
    image: &mut Image,
    unknown_files: &[bool],
    looked: &Looked,
    symbols: &mut FunctionSymbols,
    override_names: bool,
) {
    let answers = looked.answers;
    let index = SymbolIndex::new(image);
    let old = std::mem::take(&mut image.costs);
    let mut costs = CostTable::new();
    costs.reserve(old.len());
    for (r, &unknown) in unknown_files.iter().enumerate() {
        let offset = old.offset(r);
        let a = offset.and_then(|o| looked.at(o));
        let mut symbol = old.symbol(r);
        let (mut file, mut line) = (old.file(r), old.line(r));
        if let Some(a) = a {
            let covered = offset.and_then(|o| index.covering(o)).is_some();
            if symbol.is_none() && !covered {
                symbol = symbols.symbol_for(image, looked, a);
            }
            let lacks = line.unwrap_or(0) == 0 || unknown;
            if (lacks || override_names) && answers.line(a).is_some() {
                file = looked.ids(a).0;
                line = answers.line(a);
            }
        }
        costs.push_parts(offset, symbol, file, line, &old.values(r));
    }
    costs.widen(old.width());
    image.costs = costs;
}

/// The source lines of `image`'s blocks, from the line table.
fn block_source_lines(
    files: &mut StringTable,
    image: &Image,
    sym: &Symbolizer,
    addresses: &Addresses,
) -> Vec<SourceLine> {
    let lookup = sym.lookup();
    let mut lines = Vec::new();
    for b in &image.blocks {
        let Some(start) = addresses.stated(b.offset) else { continue };
        let block_size = u64::from(b.size.max(1));
        let Ok(rows) = lookup.find_location_range(start, start.saturating_add(block_size)) else {
            continue;
        };
        for (address, size, loc) in rows {
            let (Some(offset), Some(line)) = (addresses.model(address), loc.line) else { continue };
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
        let file = file.map(|f| files.intern(&f));
        source_lines.push(SourceLine { file, line, offset, size, num_instrs });
    }
    source_lines.sort_by_key(|l| l.offset);
    source_lines.dedup();
    source_lines
}

/// Lines of the sites of `process`'s edges between functions of image `i`, where the input had
/// none (everywhere with `override_names`).
fn site_lines(process: &mut cfghub_model::ir::Process, i: usize, looked: &Looked, override_names: bool) {
    for e in &mut process.edges {
        let (from, to) = (in_image(e.source, i), in_image(e.target, i));
        let Some(site) = e.details.as_mut().and_then(|d| d.site.as_mut()) else { continue };
        // A line past what a site holds is taken as unknown.
        let line_of = |o: Option<u64>| {
            o.and_then(|o| looked.at(o)).and_then(|a| looked.answers.line(a)).filter(|&l| l <= Site::MAX_LINE)
        };
        if from && (site.source_line().unwrap_or(0) == 0 || override_names) {
            site.set_source_line(line_of(site.source_offset()).or(site.source_line()));
        }
        if to && (site.target_line().unwrap_or(0) == 0 || override_names) {
            site.set_target_line(line_of(site.target_offset()).or(site.target_line()));
        }
    }
}

/// `image`'s inline table: the inline chain of every address that has one, one copy of each
/// chain shared by its addresses, and one of each name in [`Image::inline_names`].
fn inline_table(image: &mut Image, looked: &Looked) {
    let answers = looked.answers;
    let mut names = StringTable::new();
    // The model's name of each function name of the answers, once met.
    let mut name_of: FxHashMap<u32, u32> = FxHashMap::default();
    let mut chains: FxHashMap<u32, Arc<[InlineFrame]>> = FxHashMap::default();
    let with_chain = (0..answers.len()).filter(|&a| !answers.chain(a).is_empty());
    // One entry per address with a chain (24 bytes each: three quarters of a million for a
    // million addresses of a Rust binary), no room to spare.
    let mut inlined = Vec::with_capacity(with_chain.clone().count());
    for a in with_chain {
        let frames = chains.entry(answers.chain_id(a)).or_insert_with(|| {
            answers
                .chain(a)
                .iter()
                .map(|f| {
                    let name = *name_of
                        .entry(f.function)
                        .or_insert_with(|| names.intern(answers.string(f.function).map_or("??", |n| n)));
                    InlineFrame::new(name, looked.files.get(f.file), f.line)
                })
                .collect()
        });
        inlined.push(Inlined { offset: looked.offsets[a], frames: frames.clone() });
    }
    image.inlined = inlined;
    image.inline_names = names;
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

/// The model's ids of the files the answers name.
struct AnswerFiles {
    /// By string id of the answers: the file's id once interned.
    by_string: Vec<Option<FileId>>,
}

impl AnswerFiles {
    /// The files the answers name, interned in the model in the order of the addresses: each
    /// address's line file and function file, then the files of the inlined frames.
    fn of(profile: &mut Profile, answers: &Answers) -> AnswerFiles {
        let mut files = AnswerFiles { by_string: vec![None; answers.string_count()] };
        for a in 0..answers.len() {
            files.intern(profile, answers, answers.file_id(a));
            files.intern(profile, answers, answers.function_file_id(a));
        }
        for a in 0..answers.len() {
            for f in answers.chain(a) {
                files.intern(profile, answers, f.file);
            }
        }
        files
    }

    /// The model's id of string `id` of the answers as a file, interned when new.
    fn intern(&mut self, profile: &mut Profile, answers: &Answers, id: u32) {
        if let Some(slot @ None) = self.by_string.get_mut(id as usize) {
            *slot = answers.string(id).map(|name| profile.files.intern(name));
        }
    }

    /// The model's id of string `id` of the answers, interned before.
    fn get(&self, id: u32) -> Option<FileId> {
        self.by_string.get(id as usize).copied().flatten()
    }
}

/// Replaces each address frame of process `p`'s stacks (`frame_offsets`) by its function and
/// the functions inlined at the address, outermost first; a frame whose address has no
/// function stays as it is.
fn rename_stack_frames(
    profile: &mut Profile,
    p: usize,
    frame_offsets: &[(FrameId, u64)],
    looked: &Looked,
    inline: bool,
) {
    if frame_offsets.is_empty() {
        return;
    }
    let answers = looked.answers;
    let mut named: FxHashMap<FrameId, Vec<FrameId>> =
        FxHashMap::with_capacity_and_hasher(frame_offsets.len(), Default::default());
    for &(f, offset) in frame_offsets {
        let Some(a) = looked.at(offset) else { continue };
        let Some(name) = answers.name(a) else { continue };
        let (line_file, function_file) = looked.ids(a);
        let mut chain = vec![intern_frame(profile, name, function_file.or(line_file))];
        if inline {
            for frame in answers.chain(a).iter().rev() {
                let name = answers.string(frame.function).map_or("??", |n| n);
                chain.push(intern_frame(profile, name, None));
            }
        }
        named.insert(f, chain);
    }
    let stacks = &mut profile.processes[p].stacks;
    *stacks = renamed_stacks(stacks, &named);
}

/// The stacks with each frame of `named` replaced by its chain of frames; samples made equal by
/// naming (two addresses of one function, each a stack of its own before) summed, each kept
/// where it first occurs, as the readers of stacks keep equal stacks once.
fn renamed_stacks(stacks: &Stacks, named: &FxHashMap<FrameId, Vec<FrameId>>) -> Stacks {
    let mut out = Stacks::with_width(stacks.width());
    for c in 0..stacks.width() {
        out.set_decimals(c, stacks.decimals_of(c));
    }
    // The new node of each old node on a sampled path, made when first needed.
    let mut new_node = vec![None::<u32>; stacks.nodes().len()];
    let mut first: FxHashMap<(Option<u32>, u32, u32), usize> = FxHashMap::default();
    let mut label_sets = vec![None::<u32>; stacks.label_sets().len()];
    let mut on_path = Vec::new();
    for sample in stacks.samples() {
        // The old path's nodes not yet renamed, leaf first.
        on_path.clear();
        let mut n = sample.node;
        while n != NO_INDEX && new_node[n as usize].is_none() {
            on_path.push(n);
            n = stacks.nodes()[n as usize].parent;
        }
        let mut parent = if n == NO_INDEX { NO_INDEX } else { new_node[n as usize].unwrap_or(NO_INDEX) };
        for &old in on_path.iter().rev() {
            let frame = stacks.nodes()[old as usize].frame;
            parent = match named.get(&frame) {
                Some(chain) => chain.iter().fold(parent, |p, &f| out.node(p, f)),
                None => out.node(parent, frame),
            };
            new_node[old as usize] = Some(parent);
        }
        let node = if sample.node == NO_INDEX { NO_INDEX } else { parent };
        let labels = match sample.label_set {
            NO_INDEX => NO_INDEX,
            l => *label_sets[l as usize].get_or_insert_with(|| out.label_set(sample.labels.to_vec())),
        };
        match first.get(&(sample.thread, node, labels)) {
            Some(&k) => {
                for (slot, v) in out.values_mut(k).iter_mut().zip(sample.values) {
                    *slot += v;
                }
            }
            None => {
                first.insert((sample.thread, node, labels), out.len());
                out.push_labelled_sample(node, sample.thread, labels, sample.values);
            }
        }
    }
    out
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

    /// perf.data names its program from perf's build-id cache as it is read; `--symbols` of
    /// that program then leaves only the kernel to name, which the program's file is not for.
    #[test]
    fn symbols_of_an_image_named_already_are_no_error_for_the_one_left() {
        use cfghub_model::ir::{Cost, Event, Process, Symbol};
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("hot");
        std::fs::copy(std::env::current_exe().unwrap(), &binary).unwrap();
        let mut profile = Profile { events: vec![Event::new("cpu-clock")], ..Profile::default() };
        let source = profile.files.intern("hot.c");
        let mut program = Image {
            file: Some(profile.files.intern("/tmp/hot")),
            symbols: vec![Symbol {
                name: "inner".into(),
                offset: Some(0x1130),
                size: Some(0x40),
                file: None,
            }],
            ..Image::default()
        };
        let at = |offset, symbol, file, line| Cost {
            offset: Some(offset),
            symbol,
            file,
            line,
            values: smallvec::smallvec![5],
        };
        program.costs.push(at(0x1140, Some(0), Some(source), Some(7)));
        let mut kernel = Image {
            file: Some(profile.files.intern("[kernel.kallsyms]")),
            build_id: Some("e4f18d9dc1d0e6fc2b17e93e885a647b3c0a6fc1".into()),
            ..Image::default()
        };
        kernel.costs.push(at(0xffff_ffff_8100_0000, None, None, None));
        profile.processes.push(Process { images: vec![program, kernel], ..Process::default() });
        let options = Options { paths: vec![binary], build_id_caches: Vec::new(), ..Options::default() };
        let mut findings = Findings::default();
        let reports = symbolize(&mut profile, AddressKind::FileOffset, &options, &mut findings).unwrap();
        assert_eq!(reports.len(), 1, "the kernel alone was looked up");
        assert!(findings.warnings().all(|w| !w.message.contains("refused")), "{findings:?}");
    }
}
