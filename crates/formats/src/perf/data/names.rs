//! Names for the addresses of a recording, found as `perf script` finds them: each image's
//! ELF file by its build id (the image's own file when its build id matches, perf's build-id
//! cache `~/.debug`, `/usr/lib/debug`), through [`cfghub_analysis::symbolize`], and its functions told
//! apart and named as perf does (module `symtab`); the kernel's functions from the
//! `kallsyms` copy perf keeps in its cache, else from `/proc/kallsyms`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::records::{ImageKey, Recording};
use super::{demangle, symtab};
use cfghub_analysis::symbolize::search::{self, Query};
use cfghub_analysis::symbolize::Symbolizer;
use cfghub_model::ir::AddressKind;

/// What is known at one offset of an image.
#[derive(Clone, Copy, Debug, Default)]
pub struct Place<'a> {
    /// Index into [`ImageNames::symbols`].
    pub function: Option<u32>,
    /// Source file at the offset; `None` when lines were not asked for or the debug info is silent.
    pub file: Option<&'a str>,
    /// Source line at the offset; `None` as for `file`.
    pub line: Option<u32>,
}

/// The names of one image.
#[derive(Clone, Debug, Default)]
pub struct ImageNames {
    /// Functions, as `(name, offset, size)` (offsets as the recording's: file offsets, or
    /// addresses for the kernel).
    pub symbols: Vec<(String, u64, u64)>,
    /// The name `perf script` prints for each function of `symbols`, where it differs
    /// (without parameters or return type; see `demangle::demangle`).
    pub printed: Vec<Option<String>>,
    /// The offsets looked up in the image's file, sorted (none when no file was read).
    pub(super) offsets: Vec<u64>,
    /// The function at each of `offsets`.
    pub(super) functions: Vec<Option<u32>>,
    /// The source file and line at each of `offsets`, where lines were asked for (else
    /// empty).
    pub(super) lines: Vec<(Option<String>, Option<u32>)>,
    /// Whether any of `offsets` lies in the file's code (was looked up in its symbols).
    pub(super) any_in_file: bool,
    /// The file that gave the names, when one did.
    pub source: Option<PathBuf>,
    /// The build id the recording states, in hex.
    pub build_id: Option<String>,
}

impl ImageNames {
    /// Function `f` of [`ImageNames::symbols`], named as `perf script` prints it.
    pub(crate) fn printed_name(&self, f: u32) -> &str {
        let f = f as usize;
        self.printed.get(f).and_then(|p| p.as_deref()).unwrap_or(self.symbols[f].0.as_str())
    }

    /// What is known at an offset that was looked up.
    pub fn at(&self, offset: u64) -> Option<Place<'_>> {
        let i = self.offsets.binary_search(&offset).ok()?;
        let (file, line) = self.lines.get(i).map_or((None, None), |(file, line)| (file.as_deref(), *line));
        Some(Place { function: self.functions[i], file, line })
    }

    /// Whether offsets were looked up in a file that named none of them.
    pub(crate) fn without_symbols(&self) -> bool {
        self.symbols.is_empty() && self.any_in_file
    }
}

/// The names of every image of a recording. Images of one file (the same library in many
/// processes) share one entry: the file is read once.
#[derive(Clone, Debug, Default)]
pub struct Names {
    files: Vec<ImageNames>,
    /// Index into `files` of each image of the recording.
    of_image: Vec<usize>,
    /// The function of each frame of the recording's call chains (index into its file's
    /// [`ImageNames::symbols`]).
    frame_functions: Vec<Option<u32>>,
    /// The inline chains of the frames unwound from user stacks, by frame (see
    /// [`Names::inline_chain`]).
    inline_chains: FxHashMap<u32, InlineChain>,
}

/// The functions `perf script` prints for one frame it unwound, innermost first, each with
/// whether it is printed `(inlined)`: every function of the DWARF inline chain at the
/// address, demangled as perf demangles, the outermost printed as the frame's own symbol
/// where the names are equal.
pub(crate) type InlineChain = Vec<(String, bool)>;

impl Names {
    /// Names of one file per image, in the images' order.
    #[cfg(test)]
    pub(crate) fn of_files(files: Vec<ImageNames>) -> Names {
        let of_image = (0..files.len()).collect();
        Names { files, of_image, frame_functions: Vec::new(), inline_chains: FxHashMap::default() }
    }

    /// The names of image `image` of the recording.
    pub fn get(&self, image: usize) -> Option<&ImageNames> {
        self.files.get(*self.of_image.get(image)?)
    }

    /// The file of image `image` (images of one file share it: index into the files).
    pub(crate) fn file_of(&self, image: usize) -> Option<usize> {
        self.of_image.get(image).copied()
    }

    /// The inline chain of frame `frame` of the recording, where it was unwound from a user
    /// stack and DWARF names the functions at its address.
    pub(crate) fn inline_chain(&self, frame: usize) -> Option<&InlineChain> {
        self.inline_chains.get(&(frame as u32))
    }

    /// The function of frame `frame` of the recording ([`Recording::frames`]): its index
    /// among its file's symbols and its name as `perf script` prints it.
    pub(crate) fn frame_function(&self, rec: &Recording, frame: usize) -> Option<(u32, &str)> {
        let f = (*self.frame_functions.get(frame)?)?;
        let names = self.get(rec.frames[frame].0 as usize)?;
        Some((f, names.printed_name(f)))
    }
}

/// Names every offset in `wanted` (per image of the recording) and every frame of the
/// recording's call chains: from the files named with `--symbols`, perf's build-id cache and
/// the system's debug files; source lines too when the options ask for them.
pub(crate) fn name_images(rec: &Recording, wanted: &[Vec<u64>], options: &super::Reading) -> Names {
    let cache = search::perf_build_id_cache();
    let caches: Vec<PathBuf> = cache.iter().cloned().collect();
    let system = vec![PathBuf::from(search::SYSTEM_DEBUG_DIR)];
    let places = Query {
        paths: &options.options.symbol_paths,
        system_dirs: &system,
        build_id_caches: &caches,
        ..Query::default()
    };
    let kallsyms: std::sync::OnceLock<Option<Kallsyms>> = std::sync::OnceLock::new();
    // One entry per file (path, kernel or not, build id), with the offsets of all its images
    // and its frames as (offset, frame).
    let mut file_index: HashMap<(&str, bool, Option<&Vec<u8>>), usize> = HashMap::new();
    let mut files: Vec<FileWanted> = Vec::new();
    let mut of_image = Vec::with_capacity(rec.images.len());
    for (image, offsets) in rec.images.iter().zip(wanted) {
        let key = (image.path.as_str(), image.kernel, rec.build_ids.get(&image.path));
        let i = *file_index.entry(key).or_insert_with(|| {
            files.push(FileWanted { image, offsets: Vec::new(), frames: Vec::new() });
            files.len() - 1
        });
        files[i].offsets.extend(offsets.iter().copied());
        of_image.push(i);
    }
    for (frame, &(image, offset)) in rec.frames.iter().enumerate() {
        if let Some(&i) = of_image.get(image as usize) {
            files[i].frames.push((offset, frame as u32));
        }
    }
    // Files are named side by side (a recording's code lies mostly in a few large
    // libraries and the kernel): naming the files of the 146 MiB recording of clang takes
    // 0.19 s on one core, 0.12-0.14 s on two (the conversion to folded stacks 0.90/1.02 s
    // -> 0.82/0.91, best/median of 10).
    // perf names the frames it unwinds with their inline chains (and only those).
    let inlines = rec.unwound.is_some();
    let named: Vec<FileNamed> = files
        .into_par_iter()
        .map(|FileWanted { image, mut offsets, mut frames }| {
            // The frames in the order of their offsets, so that each finds its function
            // by a walk along the sorted offsets rather than by a look-up of its own.
            frames.sort_unstable();
            offsets.extend(frames.iter().map(|&(offset, _)| offset));
            offsets.sort_unstable();
            offsets.dedup();
            let id = rec.build_ids.get(&image.path).map(|i| search::hex(i));
            if offsets.is_empty() {
                return (ImageNames { build_id: id, ..ImageNames::default() }, frames, Vec::new());
            }
            let (mut names, chains) = if image.kernel {
                let names = match kallsyms.get_or_init(|| Kallsyms::load(rec, cache.as_deref())) {
                    Some(k) => k.name(offsets),
                    None => ImageNames::default(),
                };
                (names, Vec::new())
            } else {
                let inline = inlines.then_some(frames.as_slice());
                name_from_elf(image, id.as_deref(), &places, offsets, options.source_lines, inline)
            };
            names.build_id = id;
            (names, frames, chains)
        })
        .collect();
    let mut inline_chains = FxHashMap::default();
    let mut frame_functions = vec![None; rec.frames.len()];
    let mut files = Vec::with_capacity(named.len());
    for (names, frames, chains) in named {
        inline_chains.extend(chains);
        let mut at = 0;
        for (offset, frame) in frames {
            while names.offsets.get(at).is_some_and(|&o| o < offset) {
                at += 1;
            }
            if names.offsets.get(at) == Some(&offset) {
                frame_functions[frame as usize] = names.functions[at];
            }
        }
        files.push(names);
    }
    Names { files, of_image, frame_functions, inline_chains }
}

/// One file named: its names, its frames `(offset, frame)` and the inline chains of those
/// frames that have one.
type FileNamed = (ImageNames, Vec<(u64, u32)>, Vec<(u32, InlineChain)>);

/// What one file is to name: the offsets its images want named, and the frames of the call
/// chains in it as `(offset, frame)`.
struct FileWanted<'a> {
    image: &'a ImageKey,
    offsets: Vec<u64>,
    frames: Vec<(u64, u32)>,
}

/// Names `offsets` (sorted, each once) of one image from its ELF file, searched in the
/// `places` of a query; with `inline`, the inline chains of those frames `(offset, frame)`.
fn name_from_elf(
    image: &ImageKey,
    build_id: Option<&str>,
    places: &Query,
    offsets: Vec<u64>,
    lines: bool,
    inline: Option<&[(u64, u32)]>,
) -> (ImageNames, Vec<(u32, InlineChain)>) {
    let mut names = ImageNames::default();
    let query = Query { image: Some(&image.path), build_id, ..places.clone() };
    let found = search::find(&query);
    if !found.any() {
        return (names, Vec::new());
    }
    let dwarf = lines || inline.is_some();
    let Ok(symbolizer) = Symbolizer::without_function_list(found, dwarf) else { return (names, Vec::new()) };
    names.source = symbolizer.found.binary.clone().or_else(|| symbolizer.found.debug.clone());
    let Some(relocation) = symbolizer.relocation(AddressKind::FileOffset, 0, None) else {
        return (names, Vec::new());
    };
    let lookup = dwarf.then(|| symbolizer.lookup());
    // Functions as perf tells them apart, from the symbol table the symbolizer reads.
    // perf's runtime file: the binary (a separate debug file has no `.dynsym` or PLT).
    let runtime = symbolizer.binary_file().or(symbolizer.symbol_file());
    let table = symbolizer.symbol_file().map(|f| symtab::Table::of(f, runtime));
    let mut index: FxHashMap<usize, u32> = FxHashMap::default();
    names.functions.reserve_exact(offsets.len());
    for &offset in &offsets {
        let stated = relocation.to_stated(offset);
        names.any_in_file |= stated.is_some();
        let found = stated.zip(table.as_ref()).and_then(|(stated, t)| Some((t, t.find(stated)?)));
        names.functions.push(found.map(|(table, i)| {
            let next = names.symbols.len() as u32;
            let f = *index.entry(i).or_insert(next);
            if f == next {
                // Named (demangled) once per function, not once per address.
                let function = table.get(i);
                let start = relocation.from_stated(function.start).unwrap_or(offset);
                let (mut name, mut printed) =
                    (cfghub_analysis::demangle::demangle(function.raw), demangle::demangle(function.raw));
                if function.plt {
                    name.push_str("@plt");
                    printed.push_str("@plt");
                }
                names.printed.push((printed != name).then_some(printed));
                names.symbols.push((name, start, function.end - function.start));
            }
            f
        }));
        if let Some(lookup) = lookup.as_ref().filter(|_| lines) {
            let found = stated.and_then(|stated| lookup.find_location(stated).ok().flatten());
            names.lines.push(found.map_or((None, None), |loc| (loc.file, loc.line)));
        }
    }
    names.offsets = offsets;
    let mut chains = Vec::new();
    if let (Some(frames), Some(lookup)) = (inline, &lookup) {
        for &(offset, frame) in frames {
            let Some(stated) = relocation.to_stated(offset) else { continue };
            let Ok(functions) = lookup.find_function_names(stated) else { continue };
            if functions.is_empty() {
                continue;
            }
            let at = names.offsets.binary_search(&offset).ok();
            let own = at.and_then(|i| names.functions[i]).map(|f| names.printed_name(f));
            let chain = functions
                .into_iter()
                .map(|raw| {
                    let name = raw.map_or_else(|| "??".to_string(), |r| demangle::demangle(&r));
                    let inlined = own != Some(name.as_str());
                    (name, inlined)
                })
                .collect();
            chains.push((frame, chain));
        }
    }
    (names, chains)
}

/// The kernel's function symbols: `(address, name)` sorted by address, each ending where
/// the next begins.
struct Kallsyms {
    symbols: Vec<(u64, String)>,
}

impl Kallsyms {
    /// The copy perf cached for the recorded kernel's build id, else the running kernel's.
    fn load(rec: &Recording, cache: Option<&Path>) -> Option<Kallsyms> {
        let cached = rec.build_ids.get("[kernel.kallsyms]").and_then(|id| {
            let p = cache?.join("[kernel.kallsyms]").join(search::hex(id)).join("kallsyms");
            std::fs::read_to_string(p).ok()
        });
        let text = cached.or_else(|| std::fs::read_to_string("/proc/kallsyms").ok())?;
        let mut symbols: Vec<(u64, u8, String)> = Vec::new();
        for line in text.lines() {
            let mut parts = line.split_ascii_whitespace();
            let (Some(a), Some(t), Some(name)) = (parts.next(), parts.next(), parts.next()) else { continue };
            let t = t.as_bytes().first().copied().unwrap_or(b'?');
            // Code and data symbols, as perf keeps them.
            if !matches!(t.to_ascii_uppercase(), b'T' | b'W' | b'D' | b'B') {
                continue;
            }
            let Ok(address) = u64::from_str_radix(a, 16) else { continue };
            if address == 0 {
                continue;
            }
            symbols.push((address, t, name.to_string()));
        }
        symbols.sort_by_key(|s| s.0);
        // One symbol per address, as perf ends up with among aliases: it ends each symbol
        // where the next begins (so of several at one address only the last in the file's
        // order has a size) and then prefers the one with a size.
        let mut kept: Vec<(u64, String)> = Vec::with_capacity(symbols.len());
        let mut best: Option<(u64, u8, String)> = None;
        for s in symbols {
            if let Some(b) = best.take().filter(|b| b.0 != s.0) {
                kept.push((b.0, b.2));
            }
            best = Some(s);
        }
        if let Some(b) = best {
            kept.push((b.0, b.2));
        }
        (!kept.is_empty()).then_some(Kallsyms { symbols: kept })
    }

    fn name(&self, offsets: Vec<u64>) -> ImageNames {
        let mut names = ImageNames::default();
        let mut index: FxHashMap<usize, u32> = FxHashMap::default();
        names.functions.reserve_exact(offsets.len());
        for &address in &offsets {
            let at = self.symbols.partition_point(|s| s.0 <= address).checked_sub(1);
            names.functions.push(at.map(|i| {
                let next = names.symbols.len() as u32;
                let f = *index.entry(i).or_insert(next);
                if f == next {
                    let (start, name) = &self.symbols[i];
                    let end = self.symbols.get(i + 1).map_or(start + 1, |s| s.0);
                    names.symbols.push((name.clone(), *start, end - start));
                }
                f
            }));
        }
        names.offsets = offsets;
        names
    }
}
