//! Symbols and source lines from ELF and DWARF: names for the bare addresses of a profile.
//!
//! Three parts:
//! - [`search`] finds an image's debug information: what the user named (`--symbols`), the
//!   image's own file, the build-id directory, `.gnu_debuglink`, `.gnu_debugaltlink` (dwz) and
//!   `<binary>.dwp`, refusing any file whose build id is not the image's.
//! - [`Symbolizer`] answers for one image, as addr2line does and in as few calls:
//!   [`Symbolizer::find_symbol`] (the symbol table), and per thread through a [`Lookup`],
//!   [`Lookup::find_location`] (file:line:column) and [`Lookup::find_frames`] (the inline
//!   chain, innermost first). The files are memory-mapped and DWARF units parsed when an
//!   address first falls in them (the `addr2line` crate's lazy context).
//! - [`apply`] runs it over a whole [`cfghub_model::ir::Profile`] from any reader: every distinct
//!   address once, on all cores, then names, source lines and inline frames written into the
//!   model where it lacks them.
//!
//! Addresses: DWARF and symbol tables speak of the addresses the ELF file states (its
//! `p_vaddr` space). A profile's addresses are runtime addresses, file offsets, or stated
//! addresses ([`cfghub_model::ir::AddressKind`], which each format names); [`Symbolizer::relocation`]
//! turns one into the other from the image's load address and its `PT_LOAD` segments.

mod answers;
pub mod apply;
pub mod elf;
pub mod search;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use addr2line::{LookupContinuation, LookupResult};
use rustc_hash::FxHashMap;

use cfghub_model::error::{Error, Result};
use cfghub_model::ir::AddressKind;

use crate::demangle::demangle;
use elf::{ElfFile, FunctionSymbol, Segment, Storage};

pub use apply::{symbolize, ImageReport, Options};
pub use search::Found;

/// What [`search::find`] finds for `image` of `profile`, searched as `options` say; `sole`:
/// the image is the only one that needs files (see [`search::Query::sole`]).
pub fn find_image_files(
    profile: &cfghub_model::ir::Profile,
    image: &cfghub_model::ir::Image,
    options: &Options,
    sole: bool,
) -> Found {
    let file = image.file.map(|f| profile.file_name(f).to_string());
    search::find(&query(file.as_deref(), image, options, sole))
}

/// The search for the files of `image`, whose path the profile names `file`, as `options`
/// ask it.
pub(crate) fn query<'a>(
    file: Option<&'a str>,
    image: &'a cfghub_model::ir::Image,
    options: &'a Options,
    sole: bool,
) -> search::Query<'a> {
    search::Query {
        image: file,
        paths: &options.paths,
        sole,
        system_dirs: &options.system_dirs,
        build_id: image.build_id.as_deref(),
        build_id_caches: &options.build_id_caches,
    }
}

/// How DWARF is read: slices of the mapped files, in the files' byte order.
pub type Reader = gimli::EndianSlice<'static, gimli::RunTimeEndian>;

/// A source position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourcePosition {
    /// The source file's path, as the debug information names it; `None` when unknown.
    pub file: Option<String>,
    /// The 1-based line; `None` when unknown.
    pub line: Option<u32>,
    /// The 1-based column; `None` when unknown (compilers often leave it out).
    pub column: Option<u32>,
}

/// One frame of an address's inline chain.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// The function, demangled.
    pub function: Option<String>,
    /// Where this frame is at the address: the address's own line for the innermost frame,
    /// the call site of the next inner frame for the others.
    pub position: SourcePosition,
}

/// A function symbol covering an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolHit {
    /// Index among the symbolizer's function symbols: equal for two addresses of one function.
    pub index: u32,
    /// Demangled name.
    pub name: String,
    /// Start (stated address) and size.
    pub address: u64,
    /// Size in bytes: the stated size, or up to the next symbol when the table states none.
    pub size: u64,
}

/// The debug information of one image: its symbol table, segments and DWARF.
///
/// Field order matters: the DWARF borrows from `storage` and `files`, which are dropped last.
pub struct Symbolizer {
    /// DWARF contexts not in use by a [`Lookup`]: the units they parsed are kept for the next.
    contexts: Mutex<Vec<addr2line::Context<Reader>>>,
    dwarf: Option<Arc<gimli::Dwarf<Reader>>>,
    dwp: Option<gimli::DwarfPackage<Reader>>,
    /// Split DWARF read from `.dwo` files (no `.dwp`), by DWO id: `None` for one not found.
    dwos: Mutex<HashMap<u64, Option<Arc<gimli::Dwarf<Reader>>>>>,
    /// The `.dwo` files read, and the paths of those not found, for a warning.
    dwo_files: Mutex<(Vec<ElfFile>, Storage, Vec<String>)>,
    symbols: Vec<FunctionSymbol>,
    /// Whether each symbol's name is a mangled C++ one (`_Z`), noted while the names are read:
    /// the name table is not touched again for the others.
    mangled: Vec<bool>,
    /// End of each symbol (its size, or the next symbol's start when it has none).
    ends: Vec<u64>,
    /// The file of `files` the symbols come from.
    symbol_file: Option<usize>,
    segments: Vec<Segment>,
    relocatable: bool,
    /// Why DWARF could not be used, when a file had it.
    pub dwarf_error: Option<String>,
    /// What was found, and where.
    pub found: Found,
    _storage: Storage,
    files: Vec<ElfFile>,
}

/// Turns a profile's addresses into the addresses the ELF file states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Relocation {
    /// Stated = address - base (wrapping).
    Shift(u64),
    /// `address - base` is a file offset, mapped through the segment that holds it (`base`
    /// is where the file's first byte would lie at runtime: a mapping's start less its file
    /// offset).
    FileOffsets {
        /// Where the file's first byte would lie at runtime.
        base: u64,
        /// The file's loadable segments, which map file offsets to stated addresses.
        segments: Vec<Segment>,
    },
}

impl Relocation {
    /// The stated address of a profile address; `None` for a file offset outside every segment.
    pub fn to_stated(&self, address: u64) -> Option<u64> {
        match self {
            Relocation::Shift(base) => Some(address.wrapping_sub(*base)),
            Relocation::FileOffsets { base, segments } => {
                let offset = address.wrapping_sub(*base);
                segments
                    .iter()
                    .find(|s| offset >= s.file_offset && offset - s.file_offset < s.file_size)
                    .map(|s| offset - s.file_offset + s.address)
            }
        }
    }

    /// The profile address of a stated address (the inverse of [`Relocation::to_stated`]).
    pub fn from_stated(&self, stated: u64) -> Option<u64> {
        match self {
            Relocation::Shift(base) => Some(stated.wrapping_add(*base)),
            Relocation::FileOffsets { base, segments } => segments
                .iter()
                .find(|s| stated >= s.address && stated - s.address < s.file_size)
                .map(|s| (stated - s.address + s.file_offset).wrapping_add(*base)),
        }
    }
}

impl Symbolizer {
    /// Builds the symbolizer of what [`search::find`] found: symbols and segments from the
    /// first file that has them (the binary, else the debug file), DWARF from the debug file
    /// with its supplementary file and package. DWARF that cannot be read leaves the symbol
    /// table to answer, with the reason in [`Symbolizer::dwarf_error`].
    pub fn new(found: Found) -> Result<Symbolizer> {
        Self::build(found, true, true)
    }

    /// The symbolizer of what [`search::find`] found without a list of its functions: for a
    /// caller that reads the file's symbol table its own way (perf.data names functions as
    /// perf tells them apart) and needs the files, the segments and, with `lines`, DWARF's
    /// source lines. Listing the functions of libLLVM took 74 ms of the 149 ms that naming a
    /// recording's addresses in it took (a recording of clang); without the list, under 1 ms.
    pub fn without_function_list(found: Found, lines: bool) -> Result<Symbolizer> {
        Self::build(found, lines, false)
    }

    /// The symbolizer of what [`search::find`] found with its function symbols and segments
    /// but no DWARF: for a caller that needs functions' extents, not source lines.
    pub fn with_symbols_only(found: Found) -> Result<Symbolizer> {
        Self::build(found, false, true)
    }

    fn build(found: Found, with_dwarf: bool, list_functions: bool) -> Result<Symbolizer> {
        let open = |p: &Option<std::path::PathBuf>| p.as_deref().map(ElfFile::open).transpose();
        let binary = open(&found.binary)?;
        let debug = open(&found.debug)?;
        let sup = open(&found.sup).ok().flatten();
        let dwp = open(&found.dwp).ok().flatten();
        let mut storage = Storage::default();
        // The fullest symbol table: a `.symtab` (the debug file's first), else the dynamic one.
        let with_symbols =
            [debug.as_ref(), binary.as_ref()].into_iter().flatten().find(|f| f.has_symtab()).or_else(|| {
                [binary.as_ref(), debug.as_ref()].into_iter().flatten().find(|f| f.has_symbols())
            });
        let symbols =
            with_symbols.filter(|_| list_functions).map(|f| f.function_symbols()).unwrap_or_default();
        // Its place among `files` below (the binary, then the debug file).
        let symbol_file =
            with_symbols.map(|f| usize::from(binary.as_ref().is_some_and(|b| !std::ptr::eq(b, f))));
        let layout = binary.as_ref().or(debug.as_ref());
        let segments = layout.map(|f| f.segments()).unwrap_or_default();
        let relocatable = layout.is_some_and(|f| f.is_relocatable());
        let ends = symbol_ends(&symbols, &segments);
        let mangled = symbols.iter().map(|s| s.name.starts_with("_Z")).collect();
        let mut dwarf_error = None;
        let mut dwarf = None;
        let mut contexts = Vec::new();
        let mut package = None;
        if let (true, Some(d)) = (with_dwarf, debug.as_ref()) {
            match load_dwarf(d, sup.as_ref(), &mut storage) {
                Ok(dw) => {
                    // Parse the units' address ranges now: an unreadable .debug_info shows here.
                    let dw = Arc::new(dw);
                    match addr2line::Context::from_arc_dwarf(dw.clone()) {
                        Ok(context) => {
                            contexts.push(context);
                            dwarf = Some(dw);
                        }
                        Err(e) => dwarf_error = Some(format!("{}: DWARF: {e}", d.path.display())),
                    }
                }
                Err(e) => dwarf_error = Some(e.to_string()),
            }
            if let Some(p) = dwp.as_ref() {
                package = load_package(p, &mut storage).ok();
            }
        }
        let files = [binary, debug, sup, dwp].into_iter().flatten().collect();
        Ok(Symbolizer {
            contexts: Mutex::new(contexts),
            dwarf,
            dwp: package,
            dwos: Mutex::new(HashMap::new()),
            dwo_files: Mutex::new((Vec::new(), Storage::default(), Vec::new())),
            symbols,
            mangled,
            ends,
            symbol_file,
            segments,
            relocatable,
            dwarf_error,
            found,
            _storage: storage,
            files,
        })
    }

    /// Whether DWARF (lines, inline frames) is at hand, beyond the symbol table.
    pub fn has_dwarf(&self) -> bool {
        self.dwarf.is_some()
    }

    /// The file whose symbol table names the image (the debug file's `.symtab` first).
    pub fn symbol_file(&self) -> Option<&ElfFile> {
        self.files.get(self.symbol_file?)
    }

    /// The binary itself (the image's file or its copy in a build-id cache), when found.
    pub fn binary_file(&self) -> Option<&ElfFile> {
        self.found.binary.as_ref().and_then(|_| self.files.first())
    }

    /// Number of function symbols.
    pub(crate) fn symbol_count(&self) -> usize {
        self.symbols.len()
    }

    /// How a profile's addresses of `kind`, for an image the profile says was loaded at
    /// `load_addr`, become stated addresses. `None` when the file has no loadable segment to
    /// relocate by. A runtime image that maps the file from `file_offset` (a pprof mapping
    /// of a PIE's text, from its page 0x1000) is placed by the segment holding that offset,
    /// as pprof places it: `load_addr` is where the file's byte at `file_offset` runs.
    pub fn relocation(
        &self,
        kind: AddressKind,
        load_addr: u64,
        file_offset: Option<u64>,
    ) -> Option<Relocation> {
        if kind == AddressKind::FileOffset {
            let segments = self.segments.clone();
            return (!segments.is_empty()).then_some(Relocation::FileOffsets { base: load_addr, segments });
        }
        if kind == AddressKind::Stated || !self.relocatable && kind != AddressKind::ImageRelative {
            // A fixed-address executable runs where it says; stated addresses are as they are.
            return Some(Relocation::Shift(0));
        }
        let mapped_from = file_offset.filter(|&f| f != 0 && kind == AddressKind::Runtime);
        let reference = match kind {
            _ if mapped_from.is_some() => {
                let f = mapped_from?;
                let holds = |s: &&Segment| f >= s.file_offset && f - s.file_offset < s.file_size.max(1);
                let segment = self.segments.iter().filter(holds).max_by_key(|s| s.executable)?;
                f - segment.file_offset + segment.address
            }
            AddressKind::TextRuntime => self.segments.iter().find(|s| s.executable)?.address,
            _ => self.segments.iter().map(|s| s.address).min()? & !0xfff,
        };
        Some(Relocation::Shift(load_addr.wrapping_sub(reference)))
    }

    /// The start and size of the symbol of an index [`Symbolizer::symbol_at`] gave.
    pub(crate) fn symbol_range(&self, index: u32) -> (u64, u64) {
        let i = index as usize;
        (self.symbols[i].address, self.ends[i] - self.symbols[i].address)
    }

    /// The function symbol covering a stated address.
    pub fn find_symbol(&self, address: u64) -> Option<SymbolHit> {
        self.symbol_at(address).map(|i| self.symbol_hit(i))
    }

    /// The index of the function symbol covering a stated address (its
    /// [`SymbolHit::index`]), without naming it: for callers that name each function once
    /// through [`Symbolizer::symbol_hit`] however many of its addresses they look up.
    pub(crate) fn symbol_at(&self, address: u64) -> Option<u32> {
        self.symbol_index(address).map(|i| i as u32)
    }

    /// The symbol of an index [`Symbolizer::symbol_at`] gave, named (demangled).
    pub(crate) fn symbol_hit(&self, index: u32) -> SymbolHit {
        let i = index as usize;
        let s = &self.symbols[i];
        SymbolHit { index, name: demangle(s.name), address: s.address, size: self.ends[i] - s.address }
    }

    fn symbol_index(&self, address: u64) -> Option<usize> {
        let upto = self.symbols.partition_point(|s| s.address <= address);
        // Nested or aliased symbols: the latest-starting one that covers the address.
        (upto.saturating_sub(8)..upto).rev().find(|&i| address < self.ends[i])
    }

    /// A handle for DWARF look-ups on one thread (DWARF units parsed through it are kept
    /// until it is dropped). Give each thread its own, for a run of nearby addresses.
    pub fn lookup(&self) -> Lookup<'_> {
        let pooled = self.contexts.lock().ok().and_then(|mut c| c.pop());
        let context = pooled
            .or_else(|| self.dwarf.as_ref().and_then(|d| addr2line::Context::from_arc_dwarf(d.clone()).ok()));
        Lookup {
            symbolizer: self,
            context,
            names: RefCell::new(FxHashMap::default()),
            symbol_names: RefCell::new(FxHashMap::default()),
        }
    }

    /// The address ranges of the DWARF compilation units, sorted: (start, end, unit), where
    /// `unit` is equal for the ranges of one unit. From `.debug_aranges` when the file has it
    /// (no unit is parsed), else from each unit's first entry. Empty without DWARF.
    ///
    /// A DWARF context parses a unit's functions and line table whole when an address first
    /// falls in it: look-ups side by side split their addresses where a unit ends, so that no
    /// unit is parsed twice (a file of one unit of a million functions is then looked up in
    /// one run, once, instead of once per core).
    pub(crate) fn unit_ranges(&self) -> Vec<(u64, u64, usize)> {
        let Some(dwarf) = self.dwarf.as_deref() else { return Vec::new() };
        let mut out = Vec::new();
        let mut headers = dwarf.debug_aranges.headers();
        while let Ok(Some(header)) = headers.next() {
            let unit = header.debug_info_offset().0;
            let mut entries = header.entries();
            while let Ok(Some(entry)) = entries.next() {
                let range = entry.range();
                if range.begin < range.end {
                    out.push((range.begin, range.end, unit));
                }
            }
        }
        if out.is_empty() {
            let mut units = dwarf.units();
            while let Ok(Some(header)) = units.next() {
                let Some(unit) = header.debug_info_offset().map(|o| o.0) else { continue };
                let Ok(parsed) = dwarf.unit(header) else { continue };
                let Ok(mut ranges) = dwarf.unit_ranges(&parsed) else { continue };
                while let Ok(Some(range)) = ranges.next() {
                    if range.begin < range.end {
                        out.push((range.begin, range.end, unit));
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Drops the DWARF units parsed by look-ups so far (a later [`Symbolizer::lookup`] parses
    /// again what it needs).
    pub(crate) fn release_contexts(&self) {
        if let Ok(mut pool) = self.contexts.lock() {
            pool.clear();
        }
    }

    /// The split DWARF unit a skeleton unit names, from its `.dwo` file (`DW_AT_dwo_name`,
    /// relative to `DW_AT_comp_dir`, else beside the binary or the debug file), read once.
    fn dwo(&self, load: &addr2line::SplitDwarfLoad<Reader>) -> Option<Arc<gimli::Dwarf<Reader>>> {
        let mut cache = self.dwos.lock().ok()?;
        if let Some(known) = cache.get(&load.dwo_id.0) {
            return known.clone();
        }
        let text = |r: &Option<Reader>| r.map(|r| String::from_utf8_lossy(r.slice()).into_owned());
        let name = text(&load.path)?;
        let name = std::path::Path::new(&name);
        let mut candidates = Vec::new();
        match text(&load.comp_dir) {
            Some(dir) if name.is_relative() => candidates.push(std::path::Path::new(&dir).join(name)),
            _ => candidates.push(name.to_path_buf()),
        }
        for beside in [&self.found.binary, &self.found.debug].into_iter().flatten() {
            if let (Some(dir), Some(file)) = (beside.parent(), name.file_name()) {
                candidates.push(dir.join(file));
            }
        }
        let mut files = self.dwo_files.lock().ok()?;
        let (opened, storage, missing) = &mut *files;
        let unit = candidates.iter().filter(|c| c.is_file()).find_map(|c| {
            let file = ElfFile::open(c).ok()?;
            let dwarf = load_dwo(&file, load, storage)?;
            opened.push(file);
            Some(Arc::new(dwarf))
        });
        if unit.is_none() {
            missing.push(candidates[0].display().to_string());
        }
        cache.insert(load.dwo_id.0, unit.clone());
        unit
    }

    /// The `.dwo` files split DWARF names that were not found (or not the build's).
    pub(crate) fn missing_dwos(&self) -> Vec<String> {
        self.dwo_files.lock().map(|f| f.2.clone()).unwrap_or_default()
    }

    /// Paths of every file in use.
    pub fn paths(&self) -> Vec<String> {
        self.files.iter().map(|f| f.path.display().to_string()).collect()
    }
}

/// DWARF look-ups on one thread: [`Lookup::find_location`] and [`Lookup::find_frames`].
pub struct Lookup<'a> {
    symbolizer: &'a Symbolizer,
    context: Option<addr2line::Context<Reader>>,
    /// Demangled DWARF names by where their raw name lies: a function is named at every
    /// address inside it, and demangling costs more than the look-up.
    names: RefCell<FxHashMap<(usize, usize), String>>,
    /// Demangled symbol-table names, by symbol.
    symbol_names: RefCell<FxHashMap<usize, String>>,
}

impl Drop for Lookup<'_> {
    fn drop(&mut self) {
        if let (Some(c), Ok(mut pool)) = (self.context.take(), self.symbolizer.contexts.lock()) {
            pool.push(c);
        }
    }
}

/// Whether DWARF can say anything of `address`: not of the last address of all, which no
/// range can hold (a range ends one past its last address). addr2line looks an address up as
/// the range `[address, address + 1)`, which overflows there (a symbol or sample at
/// `0xffffffffffffffff` in a damaged file).
fn addressable(address: u64) -> bool {
    address != u64::MAX
}

impl Lookup<'_> {
    /// The source position of a stated address (the line table's row), if DWARF says.
    pub fn find_location(&self, address: u64) -> Result<Option<SourcePosition>> {
        let Some(ctx) = self.context.as_ref().filter(|_| addressable(address)) else { return Ok(None) };
        let loc = ctx.find_location(address).map_err(dwarf_error)?;
        Ok(loc.map(|l| SourcePosition { file: l.file.map(str::to_string), line: l.line, column: l.column }))
    }

    /// The line table's rows over `[start, end)`: (address, size, position) each.
    pub fn find_location_range(&self, start: u64, end: u64) -> Result<Vec<(u64, u64, SourcePosition)>> {
        let Some(ctx) = &self.context else { return Ok(Vec::new()) };
        let rows = ctx.find_location_range(start, end).map_err(dwarf_error)?;
        Ok(rows
            .map(|(a, n, l)| {
                (a, n, SourcePosition { file: l.file.map(str::to_string), line: l.line, column: l.column })
            })
            .collect())
    }

    /// The inline chain at a stated address, innermost first; the last frame is the function
    /// the code belongs to. Empty when DWARF says nothing of the address.
    pub fn find_frames(&self, address: u64) -> Result<Vec<Frame>> {
        let Some(ctx) = self.context.as_ref().filter(|_| addressable(address)) else { return Ok(Vec::new()) };
        let mut iter = self.resolve(ctx.find_frames(address)).map_err(dwarf_error)?;
        let mut frames = Vec::new();
        while let Some(f) = iter.next().map_err(dwarf_error)? {
            let function = match f.function {
                // A name no demangler takes (C, assembly) is itself: no demangling to save,
                // nothing to keep (a million functions would be a million names kept).
                Some(name) if !maybe_mangled(name.name.slice(), name.language) => {
                    Some(String::from_utf8_lossy(name.name.slice()).into_owned())
                }
                Some(name) => {
                    let raw = name.name.slice();
                    let key = (raw.as_ptr() as usize, raw.len());
                    let mut names = self.names.borrow_mut();
                    Some(match names.get(&key) {
                        Some(n) => n.clone(),
                        None => {
                            // The one demangler of every path (c++filt's words for C++).
                            let n = demangle(&String::from_utf8_lossy(raw));
                            names.insert(key, n.clone());
                            n
                        }
                    })
                }
                None => None,
            };
            let position = f
                .location
                .map(|l| SourcePosition { file: l.file.map(str::to_string), line: l.line, column: l.column })
                .unwrap_or_default();
            frames.push(Frame { function, position });
            if frames.len() > 4096 {
                break;
            }
        }
        Ok(frames)
    }

    /// The functions of the inline chain at a stated address, innermost first, by their raw
    /// (mangled) DWARF names: for a caller that names them as another tool demangles them.
    /// Empty when DWARF says nothing of the address.
    pub fn find_function_names(&self, address: u64) -> Result<Vec<Option<String>>> {
        let Some(ctx) = self.context.as_ref().filter(|_| addressable(address)) else { return Ok(Vec::new()) };
        let mut iter = self.resolve(ctx.find_frames(address)).map_err(dwarf_error)?;
        let mut names = Vec::new();
        while let Some(f) = iter.next().map_err(dwarf_error)? {
            names.push(f.function.map(|n| String::from_utf8_lossy(n.name.slice()).into_owned()));
            if names.len() > 4096 {
                break;
            }
        }
        Ok(names)
    }

    /// The symbol table's (demangled) name of the function of `symbol` (an index
    /// [`Symbolizer::symbol_at`] gave for an address), where DWARF names it `bare`
    /// (`_M_invoke`: a member's DW_AT_name without its class, so that two `std::function`
    /// handlers would be one function): only a mangled symbol whose name holds the bare one,
    /// as addr2line and llvm-symbolizer give it.
    pub(crate) fn qualified_name(&self, symbol: u32, bare: &str) -> Option<String> {
        let i = symbol as usize;
        if !self.symbolizer.mangled.get(i).copied().unwrap_or(false) {
            return None;
        }
        let raw = self.symbolizer.symbols[i].name;
        let mut cache = self.symbol_names.borrow_mut();
        let name = cache.entry(i).or_insert_with(|| demangle(raw));
        name.contains(bare).then(|| name.clone())
    }

    /// Runs a look-up to its end, loading split units from the package when it asks.
    fn resolve<L>(&self, mut r: LookupResult<L>) -> L::Output
    where
        L: LookupContinuation<Buf = Reader>,
    {
        loop {
            match r {
                LookupResult::Output(out) => return out,
                LookupResult::Load { load, continuation } => {
                    let unit = self
                        .symbolizer
                        .dwp
                        .as_ref()
                        .and_then(|p| p.find_cu(load.dwo_id, &load.parent).ok().flatten())
                        .map(Arc::new)
                        .or_else(|| self.symbolizer.dwo(&load));
                    r = continuation.resume(unit);
                }
            }
        }
    }
}

/// Whether a demangler might take `raw`, the name of a function of a unit in `language`:
/// Rust's (legacy `_ZN`/`ZN`/`__ZN`, v0 `_R`/`R`/`__R`) and C++'s (`_Z`) for names that begin so;
/// for C++ units and units that state no language any name, the C++ demangler reading a bare
/// type (`i`: `int`).
fn maybe_mangled(raw: &[u8], language: Option<gimli::DwLang>) -> bool {
    let cpp = [
        gimli::DW_LANG_C_plus_plus,
        gimli::DW_LANG_C_plus_plus_03,
        gimli::DW_LANG_C_plus_plus_11,
        gimli::DW_LANG_C_plus_plus_14,
        gimli::DW_LANG_C_plus_plus_17,
        gimli::DW_LANG_C_plus_plus_20,
    ];
    language.is_none_or(|l| cpp.contains(&l)) || matches!(raw.first(), Some(b'_' | b'Z' | b'R'))
}

fn dwarf_error(e: gimli::Error) -> Error {
    Error::input(format!("DWARF: {e}")).with_hint("the debug file may be truncated or damaged")
}

/// Ends of the symbols: start + size, or for a symbol without size the next symbol's start
/// (at most the end of the segment holding it).
fn symbol_ends(symbols: &[FunctionSymbol], segments: &[Segment]) -> Vec<u64> {
    symbols
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if s.size > 0 {
                return s.address.saturating_add(s.size);
            }
            let next = symbols[i + 1..].iter().map(|n| n.address).find(|&a| a > s.address);
            let segment_end = segments
                .iter()
                .find(|g| s.address >= g.address && s.address - g.address < g.size)
                // A damaged file's segment may run past the last address.
                .map(|g| g.address.saturating_add(g.size));
            match (next, segment_end) {
                (Some(n), Some(e)) => n.min(e),
                (Some(n), None) => n,
                (None, Some(e)) => e,
                (None, None) => s.address.saturating_add(1),
            }
        })
        .collect()
}

fn endian(file: &ElfFile) -> gimli::RunTimeEndian {
    use object::Object;
    if file.object.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    }
}

fn load_dwarf(file: &ElfFile, sup: Option<&ElfFile>, storage: &mut Storage) -> Result<gimli::Dwarf<Reader>> {
    let e = endian(file);
    let mut dwarf = gimli::Dwarf::load(|id| -> Result<Reader> {
        Ok(gimli::EndianSlice::new(file.section(id.name(), storage)?, e))
    })?;
    if let Some(sup) = sup {
        let e = endian(sup);
        dwarf.load_sup(|id| -> Result<Reader> {
            Ok(gimli::EndianSlice::new(sup.section(id.name(), storage)?, e))
        })?;
    }
    Ok(dwarf)
}

/// The split unit of a `.dwo` file, when it is the one `load` asks for (its DWO id).
fn load_dwo(
    file: &ElfFile,
    load: &addr2line::SplitDwarfLoad<Reader>,
    storage: &mut Storage,
) -> Option<gimli::Dwarf<Reader>> {
    let e = endian(file);
    let mut dwarf = gimli::Dwarf::load(|id| -> Result<Reader> {
        let data = match id.dwo_name() {
            Some(name) => file.section(name, storage)?,
            None => &[],
        };
        Ok(gimli::EndianSlice::new(data, e))
    })
    .ok()?;
    dwarf.make_dwo(&load.parent);
    // A stale .dwo (another build) must not answer: its unit states the id the skeleton names
    // (DWARF 5 in its header, GNU DWARF 4 as DW_AT_GNU_dwo_id).
    let header = dwarf.units().next().ok()??;
    let id = match header.type_() {
        gimli::UnitType::SplitCompilation(id) => Some(id),
        _ => {
            let unit = dwarf.unit(header).ok()?;
            let mut entries = unit.entries();
            let root = entries.next_dfs().ok()??;
            match root.attr_value(gimli::DW_AT_GNU_dwo_id) {
                Some(gimli::AttributeValue::DwoId(id)) => Some(id),
                _ => None,
            }
        }
    };
    (id.is_none_or(|id| id == load.dwo_id)).then_some(dwarf)
}

fn load_package(file: &ElfFile, storage: &mut Storage) -> Result<gimli::DwarfPackage<Reader>> {
    let e = endian(file);
    let empty = gimli::EndianSlice::new(&[][..], e);
    gimli::DwarfPackage::load(
        |id| -> Result<Reader, gimli::Error> {
            let data = match id.dwo_name() {
                Some(name) => file.section(name, storage).map_err(|_| gimli::Error::Io)?,
                None => &[],
            };
            Ok(gimli::EndianSlice::new(data, e))
        },
        empty,
    )
    .map_err(|e| Error::input(format!("{}: DWARF package: {e}", file.path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damaged file's symbols and segments near the last address (found by fuzzing): the
    /// ends stop at the last address instead of overflowing.
    #[test]
    fn symbol_ends_stop_at_the_last_address() {
        use elf::{FunctionSymbol, Segment};
        let symbol = |address, size| FunctionSymbol { address, size, name: "f" };
        let segment =
            Segment { address: u64::MAX - 16, size: 64, file_offset: 0, file_size: 0, executable: true };
        let symbols = [symbol(u64::MAX - 8, 0), symbol(u64::MAX - 4, 100), symbol(u64::MAX, 0)];
        assert_eq!(symbol_ends(&symbols, &[segment]), vec![u64::MAX - 4, u64::MAX, u64::MAX]);
        assert_eq!(symbol_ends(&[symbol(u64::MAX, 0)], &[]), vec![u64::MAX]);
        assert_eq!(symbol_ends(&[symbol(8, 0), symbol(16, 0)], &[]), vec![16, 17]);
    }

    #[test]
    fn names_are_demangled_by_their_scheme() {
        assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Zbad"), "_Zbad");
        // g++'s std::swap<double>, whose enable_if return type cpp_demangle cannot parse: in
        // libiberty's words (c++filt's) where libstdc++ is there, else the fallback's best.
        let swap = "_ZSt4swapIdENSt9enable_ifIXsrSt6__and_IJSt6__not_ISt15__is_tuple_likeIT_EESt21\
                    is_move_constructibleIS4_ESt18is_move_assignableIS4_EEE5valueEvE4typeERS4_SE_";
        let expected = if crate::demangle::cpp_in_full("_Z1fv").is_some() {
            "std::enable_if<std::__and_<std::__not_<std::__is_tuple_like<double> >, \
             std::is_move_constructible<double>, std::is_move_assignable<double> >::value, void>::type \
             std::swap<double>(double&, double&)"
        } else {
            "std::swap<double>"
        };
        assert_eq!(demangle(swap), expected);
    }

    #[test]
    fn relocation_by_shift_and_by_segments() {
        let seg = Segment {
            address: 0x401000,
            size: 0x2000,
            file_offset: 0x1000,
            file_size: 0x2000,
            executable: true,
        };
        let r = Relocation::FileOffsets { base: 0, segments: vec![seg] };
        assert_eq!(r.to_stated(0x1010), Some(0x401010));
        assert_eq!(r.from_stated(0x401010), Some(0x1010));
        assert_eq!(r.to_stated(0x10), None);
        // A mapping's runtime addresses: its start less its file offset is the base.
        let mapped = Relocation::FileOffsets { base: 0x5629_ec74_1000, segments: vec![seg] };
        assert_eq!(mapped.to_stated(0x5629_ec74_2010), Some(0x401010));
        assert_eq!(mapped.from_stated(0x401010), Some(0x5629_ec74_2010));
        let s = Relocation::Shift(0x5555_5555_4000);
        assert_eq!(s.to_stated(0x5555_5555_5139), Some(0x1139));
        assert_eq!(s.from_stated(0x1139), Some(0x5555_5555_5139));
    }

    #[test]
    fn symbols_without_size_end_at_the_next() {
        let syms = vec![
            FunctionSymbol { address: 0x10, size: 0, name: "a" },
            FunctionSymbol { address: 0x20, size: 4, name: "b" },
        ];
        assert_eq!(symbol_ends(&syms, &[]), vec![0x20, 0x24]);
    }

    /// Without its list of functions a symbolizer still finds the files and relocates as one
    /// with the list does.
    #[test]
    fn a_symbolizer_without_its_function_list_relocates_alike() {
        let binary =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/bolt/call_in_loop");
        let found = || Found { binary: Some(binary.clone()), ..Found::default() };
        let listed = Symbolizer::build(found(), false, true).unwrap();
        let unlisted = Symbolizer::without_function_list(found(), false).unwrap();
        assert!(listed.symbol_count() > 0);
        assert_eq!(unlisted.symbol_count(), 0);
        let relocate = |s: &Symbolizer| s.relocation(AddressKind::FileOffset, 0, None);
        assert!(relocate(&listed).is_some());
        assert_eq!(relocate(&unlisted), relocate(&listed));
        let path = |s: &Symbolizer| s.symbol_file().map(|f| f.path.clone());
        assert_eq!(path(&unlisted), path(&listed));
    }
}
